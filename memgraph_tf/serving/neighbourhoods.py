"""Node id -> neighbourhood blob: the one component that asks a graph source for the per-node blobs
a bundle's model reads. Used by :func:`memgraph_tf.serving.client.classify_nodes` (client side)
and by the local server's ``{"node_id": ...}`` examples (``memgraph-tf serve --graph``).

A graph source is any object with ``sample_blobs_per_node(ids, fanouts, properties, options) ->
list[bytes]`` (the :mod:`memgraph_tf.client` sources have it; this module does not import them).
Failures come back as :class:`memgraph_tf.errors.NeighbourhoodError` subclasses, the
source's own error attached as ``__cause__``, sorted by what the caller can do::

    NodeIdError             a node id is not an int64 integer            (server: 400)
    NeighbourhoodDataError  the source raised a ValueError / LookupError (server: 400)
                            -- a node it lacks, a property it cannot pack
    GraphUnavailableError   the source raised a ConnectionError / OSError (server: 503)
    GraphSourceError        the source raised another MemgraphTfError (a failed query), or
                            answered with the wrong number of blobs       (server: 500)

Any other exception from the source (a programming error) propagates unchanged.

Typed bundles (:attr:`~memgraph_tf.serving.bundle.SamplingSpec.typed`) are fetched with the
source's ``sample_typed(ids, num_neighbors, properties, options)``: one call for all the ids, its
blob cut into one blob per node (:func:`split_typed_blob`; the typed sampler keys each seed's
draws by ``(options.seed, seed)``, so a node's blob does not depend on the other ids of the call).
A node without the seed label is the source's ValueError, hence a :class:`NeighbourhoodDataError`
(400) whose message names the node and the label.

Link bundles (:attr:`~memgraph_tf.serving.bundle.SamplingSpec.link`) are fetched per
pair with :meth:`NeighbourhoodFetcher.fetch_pairs`: one ``sample_pairs(sources, targets,
num_neighbors, properties, options)`` call for all the pairs (each pair's own relationships removed
from both neighbourhoods, each endpoint's draws keyed by ``(options.seed, its key)``, so a pair's
blob does not depend on the other pairs of the call), cut into one blob per pair; a bundle with a
timed step gives every pair of the call one time (``options.at``, else "now":
:meth:`~memgraph_tf.serving.bundle.SamplingSpec.pair_arguments`). The source's
``sources[i]`` / ``targets[i]`` in a refusal (an unknown id, a node of the wrong label) is renamed
to the caller's name for that id (``examples[j].source_id``).
"""

from __future__ import annotations

import json
import logging
import numbers
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from memgraph_tf.errors import (
    GraphSourceError,
    GraphUnavailableError,
    MemgraphTfError,
    NeighbourhoodDataError,
    NeighbourhoodError,
    NodeIdError,
)
from memgraph_tf.serving.bundle import INT64_MAX, SamplingSpec

logger = logging.getLogger(__name__)

_SHOWN_IDS = 10


def _show(value: Any) -> str:
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 100 else text[:100] + "..."


def _ids_text(ids: Sequence[int]) -> str:
    if len(ids) <= _SHOWN_IDS:
        return str(list(ids))
    return "[" + ", ".join(map(str, ids[:_SHOWN_IDS])) + f", ...] ({len(ids)} ids)"


def check_node_ids(node_ids: Sequence[Any], names: Sequence[str] | None = None) -> list[int]:
    """``node_ids`` as Python ints. Guarantees each is an integer (``numbers.Integral``, not a
    bool) in the int64 range, else raises :class:`NodeIdError` naming it by ``names[i]``
    (default ``node_ids[i]``)."""
    out = []
    for i, nid in enumerate(node_ids):
        name = names[i] if names is not None else f"node_ids[{i}]"
        if isinstance(nid, bool) or not isinstance(nid, numbers.Integral):
            raise NodeIdError(f"{name}: expected an integer, got {_show(nid)}")
        value = int(nid)
        if not -INT64_MAX - 1 <= value <= INT64_MAX:
            raise NodeIdError(f"{name}: expected an integer in the int64 range, got {value}")
        out.append(value)
    return out


class NeighbourhoodFetcher:
    """Fetches per-node neighbourhood blobs from one graph source.

    ``serialize`` (default True) makes calls into the source one at a time (a lock), for sources
    that are not safe to call from many threads at once, as the server's request threads do.
    """

    def __init__(self, source: Any, *, serialize: bool = True):
        if not callable(getattr(source, "sample_blobs_per_node", None)) and not callable(
            getattr(source, "sample_typed", None)
        ):
            raise TypeError(
                f"source: expected an object with sample_blobs_per_node(ids, fanouts, "
                f"properties, options), got {type(source).__name__}"
            )
        self.source = source
        self._lock = threading.Lock() if serialize else None

    def fetch(
        self, node_ids: Sequence[Any], sampling: SamplingSpec, *, names: Sequence[str] | None = None
    ) -> list[bytes]:
        """One blob per id, in order, sampled with ``sampling`` (the bundle's fanouts, properties
        and options). Guarantees: ids are checked first (:func:`check_node_ids`, named by
        ``names``); the result has exactly one ``bytes`` blob per id; an empty id list returns
        ``[]`` without calling the source; failures raise the :class:`NeighbourhoodError`
        subclass the module docstring lists."""
        if names is not None and len(names) != len(node_ids):
            raise ValueError(f"names: expected one per node id ({len(node_ids)}), got {len(names)}")
        ids = check_node_ids(node_ids, names)
        if not ids:
            return []
        if sampling.typed is not None:
            call = self._typed_call(sampling)
        else:
            fanouts, properties, options = sampling.arguments()

            def call(ids: list[int]) -> Any:
                return self.source.sample_blobs_per_node(ids, fanouts, properties, options)

        what = f"fetching node ids {_ids_text(ids)} from the graph"
        rename = None if names is None else position_renamer({"seeds": list(names)})
        blobs = self._guarded(call, ids, what, rename)
        if len(blobs) != len(ids):
            raise GraphSourceError(
                f"{what}: the source returned {len(blobs)} blobs for {len(ids)} node ids"
            )
        for i, b in enumerate(blobs):
            if not isinstance(b, (bytes, bytearray, memoryview)):
                raise GraphSourceError(
                    f"{what}: the source returned a {type(b).__name__} for "
                    f"node {ids[i]}, expected bytes"
                )
        logger.debug(
            "fetched %d neighbourhood blobs (%d bytes)", len(blobs), sum(len(b) for b in blobs)
        )
        return [bytes(b) for b in blobs]

    def _guarded(self, call: Any, args: Any, what: str, rename: Any = None) -> list:
        """``call(args)`` (under the lock when serialized), the source's failures sorted into
        the :class:`NeighbourhoodError` subclasses; ``rename`` rewrites a data error's text."""
        try:
            if self._lock is None:
                return list(call(args))
            with self._lock:
                return list(call(args))
        except NeighbourhoodError:
            raise
        except (ConnectionError, OSError) as exc:
            raise GraphUnavailableError(f"the graph is unavailable: {exc}") from exc
        except (ValueError, LookupError) as exc:
            text = rename(str(exc)) if rename is not None else str(exc)
            raise NeighbourhoodDataError(f"{what}: {text}") from exc
        except MemgraphTfError as exc:
            raise GraphSourceError(f"{what}: {exc}") from exc

    def fetch_pairs(
        self,
        sources: Sequence[Any],
        targets: Sequence[Any],
        sampling: SamplingSpec,
        *,
        source_names: Sequence[str] | None = None,
        target_names: Sequence[str] | None = None,
    ) -> list[bytes]:
        """One pair blob (``tf_features.sample_pairs`` with ``n = 1``, the dense layout) per
        ``(sources[i], targets[i])``, in order, sampled with a link bundle's ``sampling``
        (:meth:`~memgraph_tf.serving.bundle.SamplingSpec.pair_arguments`). Guarantees: those of
        :meth:`fetch_pair_sample`, whose blobs these are."""
        pairs = self.fetch_pair_sample(
            sources, targets, sampling, source_names=source_names, target_names=target_names
        )
        return pairs.blobs(0, len(pairs)) if pairs is not None else []

    def fetch_pair_sample(
        self,
        sources: Sequence[Any],
        targets: Sequence[Any],
        sampling: SamplingSpec,
        *,
        source_names: Sequence[str] | None = None,
        target_names: Sequence[str] | None = None,
    ) -> Any:
        """The pairs ``(sources[i], targets[i])`` sampled with a link bundle's ``sampling`` in one
        ``sample_pairs`` call in the compact layout (each sampled node's features once), as a
        :class:`~memgraph_tf.ops.sample_decoding.DensePairBlobs` that builds pair ``i``'s dense blob
        on demand; None for no pairs. Guarantees: ids are checked first (:func:`check_node_ids`,
        named by ``source_names`` / ``target_names``); one source call for all the pairs; blob ``i``
        is, byte for byte, what ``sample_pairs`` writes in the dense layout for pair ``i`` alone; an
        id the graph lacks or a node without the pair's label is a :class:`NeighbourhoodDataError`
        naming it by its name; other failures as :meth:`fetch`."""
        if len(sources) != len(targets):
            raise ValueError(
                f"sources, targets: expected one target per source, got {len(sources)} and "
                f"{len(targets)}"
            )
        src = check_node_ids(sources, source_names)
        dst = check_node_ids(targets, target_names)
        if not src:
            return None
        if not callable(getattr(self.source, "sample_pairs", None)):
            raise GraphSourceError(
                f"the graph source ({type(self.source).__name__}) has no sample_pairs, which a "
                f"link bundle needs"
            )
        num_neighbors, properties, options = sampling.pair_arguments(len(src))
        # DensePairBlobs expands feature tables, not raw ones: a bundle with feature specs
        # (options.feature_spec) or edge features (options.edge_feature_spec, written in the
        # dense layout only) samples the dense layout and cuts its blob per pair
        options["layout"] = "dense" if samples_dense_pairs(options) else "compact"
        rename = position_renamer(
            {
                "sources": list(source_names or (f"sources[{i}]" for i in range(len(src)))),
                "targets": list(target_names or (f"targets[{i}]" for i in range(len(dst)))),
            }
        )

        def call(_: Any) -> list:
            raw = self.source.sample_pairs(src, dst, num_neighbors, properties, options)
            return [raw]

        shown = _ids_text([f"({s}, {t})" for s, t in zip(src, dst)]).replace("'", "")
        what = f"fetching pairs (source_id, target_id) {shown} from the graph"
        [raw] = self._guarded(call, None, what, rename)
        pairs = dense_pair_blobs(raw, len(src), sampling)
        logger.debug("fetched %d pairs (%d bytes, compact)", len(src), len(raw))
        return pairs

    def _typed_call(self, sampling: SamplingSpec) -> Any:
        num_neighbors, properties, options = sampling.typed_arguments()
        if not callable(getattr(self.source, "sample_typed", None)):
            raise GraphSourceError(
                f"the graph source ({type(self.source).__name__}) has no sample_typed, which a "
                f"typed bundle (seed label {sampling.typed.seed_label!r}) needs"
            )

        from memgraph_tf.typed_sampling import TypedSamplingSpec

        spec = TypedSamplingSpec.from_num_neighbors(sampling.typed.seed_label, num_neighbors)
        layout_name = options.get("layout") or "dense"

        def call(ids: list[int]) -> list[bytes]:
            raw = self.source.sample_typed(ids, num_neighbors, properties, options)
            return split_typed_blob(raw, len(ids), spec, layout_name)

        return call


#: How the query module names a position of its id lists in an error (``seeds[3]: unknown
#: node id 999``, ``targets[0]: ...``).
_ROLE_INDEX = re.compile(r"\b(seeds|sources|targets)\[(\d+)\]")


def position_renamer(names: dict[str, list[str]]) -> Callable[[str], str]:
    """A function that rewrites, in an error text, each position the query module names
    (``seeds[i]``, ``sources[i]``, ``targets[i]``) as ``names[role][i]`` -- the caller's name
    for it, such as ``examples[i].node_id`` -- leaving a role or position ``names`` lacks as
    it is."""

    def rename(text: str) -> str:
        def one(m: re.Match) -> str:
            role = names.get(m[1])
            i = int(m[2])
            return role[i] if role is not None and i < len(role) else m[0]

        return _ROLE_INDEX.sub(one, text)

    return rename


def split_typed_blob(
    raw: bytes, count: int, spec: Any = None, layout_name: str = "dense"
) -> list[bytes]:
    """A ``tf_features.sample_typed`` blob of ``count`` seeds (or a dense ``sample_pairs`` blob of
    ``count`` pairs) cut into ``count`` one-row blobs
    (:func:`memgraph_tf.ops.sample_decoding.split_typed_blob`; ``spec``, the sampling spec, is
    needed for
    the compact and sparse layouts, whose per-label tables are rebuilt per seed). Guarantees:
    blob ``i`` is what the procedure writes for that seed alone with the same options; a blob that
    does not fit (a section without one row per id) raises :class:`GraphSourceError` naming the
    section."""
    from memgraph_tf.ops import sample_decoding

    try:
        return sample_decoding.split_typed_blob(raw, count, spec, layout_name)
    except ValueError as exc:
        raise GraphSourceError(str(exc)) from None


def samples_dense_pairs(options: Mapping[str, Any]) -> bool:
    """Whether a link bundle with these sampling ``options`` fetches its pairs in the dense
    layout: with raw property columns (``feature_spec``) or relationship properties
    (``edge_feature_spec``, written in the dense layout only); else the compact one."""
    return bool(options.get("feature_spec") or options.get("edge_feature_spec"))


def dense_pair_blobs(raw: bytes, count: int, sampling: SamplingSpec) -> Any:
    """A compact ``sample_pairs`` blob of ``count`` pairs sampled with a link bundle's
    ``sampling``, as a :class:`~memgraph_tf.ops.sample_decoding.DensePairBlobs` (the dense one-pair
    blobs, built on demand); a blob that does not fit raises :class:`GraphSourceError` naming the
    section. A bundle with feature specs or edge features samples in the dense layout
    (:func:`samples_dense_pairs`): its blob is cut into the one-pair blobs at once
    (:class:`PairBlobList`)."""
    from memgraph_tf.ops import sample_decoding
    from memgraph_tf.typed_sampling import TypedSamplingSpec

    if samples_dense_pairs(sampling.options):
        return PairBlobList(split_typed_blob(raw, count))
    link = sampling.link
    specs = [
        TypedSamplingSpec.from_num_neighbors(label, nn)
        for label, nn, _ in (link.role(role) for role in ("source", "target"))
    ]
    try:
        return sample_decoding.DensePairBlobs(raw, count, specs[0], specs[1])
    except ValueError as exc:
        raise GraphSourceError(str(exc)) from None


class PairBlobList:
    """One-pair blobs already built, handed as
    :class:`~memgraph_tf.ops.sample_decoding.DensePairBlobs` hands them (``len``, ``blobs``,
    ``blob_bytes``)."""

    def __init__(self, blobs: list[bytes]):
        self._blobs = list(blobs)
        self.blob_bytes = max(map(len, self._blobs), default=0)

    def __len__(self) -> int:
        return len(self._blobs)

    def blobs(self, start: int, stop: int) -> list[bytes]:
        """The blobs of pairs ``start..stop-1``."""
        return self._blobs[start:stop]


def fetch_blobs(
    source: Any,
    node_ids: Sequence[Any],
    sampling: SamplingSpec,
    *,
    names: Sequence[str] | None = None,
) -> list[bytes]:
    """:meth:`NeighbourhoodFetcher.fetch` with a one-off fetcher (no lock)."""
    return NeighbourhoodFetcher(source, serialize=False).fetch(node_ids, sampling, names=names)


__all__ = [
    "NeighbourhoodFetcher",
    "PairBlobList",
    "check_node_ids",
    "dense_pair_blobs",
    "fetch_blobs",
    "position_renamer",
    "split_typed_blob",
]
