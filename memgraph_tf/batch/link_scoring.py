"""Batch link scoring with write-back: ``memgraph-tf score-links`` and
:func:`score_links` score candidate pairs with a link model and write each scored pair back as a
relationship ``(s)-[:PREDICTED_LINK {score, model_version}]->(t)`` (names:
:mod:`memgraph_tf.client.link_tables`).

**Candidates** are either

* the **top k per source node** among the nodes of the target label (``k``): every target node is
  embedded once through the model's target encoder, then the sources page by page through the
  source encoder, and each page is scored against all targets in vectorised ``[sources, targets]``
  blocks by the model's pair scorer; the source itself and its existing neighbours through
  ``relationship_type`` (either direction) are no candidates; ties go to the smaller target key;
* or the ``(source_id, target_id)`` rows of a **Cypher query** (Bolt graphs), or given ``pairs``:
  every pair is scored (each distinct node embedded once).

Scores are ``sigmoid(score(embed(s), embed(t)))`` over each node's own typed neighbourhood
(``tf_features.sample_typed``, keyed by ``(seed, node)``: the same in any batch, shard or rerun).
For a pair not already joined by a relationship this equals the pair model's score over the
``tf_features.sample_pairs`` blob (:func:`~memgraph_tf.client.link_prediction.predict_links`, the
served ``:classify`` / ``:regress``) with the same seed -- that procedure only differs by removing
the pair's own relationships.

**Point in time.** A model with timed steps (``{time: ts}`` in its ``num_neighbors``) samples
every node as of one time: ``at`` (``--at``), else "now" (:data:`~memgraph_tf.serving.bundle.
NOW_TIME`: every relationship, whatever its time) -- ``sample_typed``'s ``options.at`` for each
role with a timed step -- so that a score equals ``predict_links`` on ``[n, 3]`` pairs whose time
column is that time (for a pair not joined by a relationship), and the served score of a request
whose context ``at`` is it. ``at`` is not part of the source markers: a run at another time
rescoring the same version needs ``overwrite``. Top-k candidates with ``at`` come from every
target (the vector index holds the targets' embeddings as of now).

**Idempotent, resumable, sharded.** Links are MERGEd on ``(s, TYPE, t)`` (a rerun or a retried
batch writes no relationship twice); sources are paged by key and each page's sources get the
marker ``predicted_link_version`` once their links are written, so a rerun skips them (a kill
between links and marker repeats that page, which MERGE keeps exact); ``shard`` ``i/N`` scores the
sources whose key modulo N is i.

**Backends** (:class:`LinkBackend`): what scoring needs from a model -- its labels, sampling
settings, ``embed(role, blob)`` and ``score_block``. :class:`ModelLinkBackend` runs an in-memory
:class:`~memgraph_tf.client.link_prediction.LinkPredictor`.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from memgraph_tf.batch.commands import options_from, run_batch
from memgraph_tf.batch.summary import ModelRun
from memgraph_tf.client.link_tables import (
    DEFAULT_LINK_TYPE,
    LinkSelection,
    LinkTable,
    check_candidates,
)
from memgraph_tf.client.node_tables import Shard
from memgraph_tf.errors import ConfigurationError, GraphDataError, QueryError

logger = logging.getLogger(__name__)

ROLES = ("src", "dst")
"""The two endpoint roles (the pair layout's prefixes without the dot)."""
DEFAULT_BATCH_SIZE = 256
"""Source nodes per page (one links write and one marker write each)."""
RETRIEVALS = ("auto", "index", "exact")
"""Where top-k candidates come from: ``index`` the vector index on the targets' embeddings,
``exact`` every target scored, ``auto`` the index when it holds this model version's
embeddings of every target (:meth:`LinkScorer.prepare`), else exact."""
BLOCK_FLOATS = 1 << 24
"""The largest ``[sources, targets, width]`` block :meth:`LinkBackend.score_block` materialises at
once (64 MB of float32); larger blocks are scored in target chunks."""


# ------------------------------------------------------------------------------------------------
# backends
# ------------------------------------------------------------------------------------------------


class LinkBackend:
    """What link scoring needs from a model: ``name``, ``version`` (written as
    ``model_version``), ``source_label`` / ``target_label``, :meth:`sampling` (how to sample one
    role's nodes), :meth:`embed` (a typed sample blob -> embeddings) and :meth:`score` (pairs of
    embeddings -> link probabilities).

    A new transport is one subclass implementing :meth:`sampling`, :meth:`embed` and
    :meth:`score`; :meth:`score_block` has a generic implementation over :meth:`score`."""

    name: str
    version: int
    source_label: str
    target_label: str
    id_property: str | None = None

    def sampling(self, role: str) -> tuple[dict[str, Any], dict[str, list[str]], dict[str, Any]]:
        """``(num_neighbors, properties, options)`` for ``tf_features.sample_typed`` of ``role``'s
        nodes (``options`` holds the seed label as ``label``, the ``seed`` and ``id_property``;
        for a role with a timed step its time ``at``, "now" by default)."""
        raise NotImplementedError

    def embed(self, role: str, data: bytes) -> np.ndarray:
        """Embeddings ``[n, D]`` (float32) of the ``n`` seeds of one ``sample_typed`` blob of
        ``role`` (``src`` or ``dst``), in order."""
        raise NotImplementedError

    def score(self, z_source: np.ndarray, z_target: np.ndarray) -> np.ndarray:
        """Link probabilities of embedding pairs: ``[..., D]`` x ``[..., D]`` -> ``[...]``
        (equal leading shapes)."""
        raise NotImplementedError

    def score_block(self, z_source: np.ndarray, z_target: np.ndarray) -> np.ndarray:
        """Every source against every target: ``[a, D]`` x ``[b, D]`` -> ``[a, b]`` probabilities,
        in target chunks of at most :data:`BLOCK_FLOATS` floats."""
        a, d = z_source.shape
        b = z_target.shape[0]
        chunk = max(1, BLOCK_FLOATS // max(1, a * d))
        parts = []
        for lo in range(0, b, chunk):
            zt = z_target[lo : lo + chunk]
            shape = (a, len(zt), d)
            parts.append(
                self.score(
                    np.broadcast_to(z_source[:, None, :], shape),
                    np.broadcast_to(zt[None, :, :], shape),
                )
            )
        return np.concatenate(parts, axis=1) if parts else np.zeros((a, 0), np.float32)

    def close(self) -> None:
        """Releases the backend's resources; idempotent."""

    def __enter__(self) -> LinkBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, version={self.version})"


class ModelLinkBackend(LinkBackend):
    """An in-memory :class:`~memgraph_tf.client.link_prediction.LinkPredictor`: ``embed`` runs its
    ``embed(inputs, role)`` on the blob's sections, ``score`` its ``score`` and a sigmoid
    (inference mode: no dropout).

    ``properties``: label -> feature names (default the model's, set by training); ``options``:
    sampling options (``id_property``, ``exclude_splits``, ``time_order``...; default none);
    ``seed``: the sampling seed (default :data:`memgraph_tf.batch.DEFAULT_SEED`). A role with a
    timed step samples "now" (:data:`~memgraph_tf.serving.bundle.NOW_TIME`) unless
    ``options["at"]`` or the scorer's ``at`` names a time.

    A model with feature specs (its ``label_encoders``) samples those labels' raw property
    columns (``options.feature_spec`` set to the model's specs, as its link bundle does), and one
    with edge features (its ``edge_encoders``) its steps' relationship properties
    (``options.edge_feature_spec``, each role's ``sample_typed`` call its own steps), so its
    scores are the served ones; such a label takes no ``properties``, and a model whose every
    featured label has a spec needs none."""

    def __init__(
        self,
        model: Any,
        version: int = 1,
        *,
        name: str = "LinkPredictor",
        properties: Mapping[str, Sequence[str]] | None = None,
        options: Mapping[str, Any] | None = None,
        seed: int | None = None,
    ) -> None:
        from memgraph_tf.client.feature_encoding import edge_spec_option, with_spec_option
        from memgraph_tf.serving.bundle import DEFAULT_SEED

        encoders = model.label_encoders
        props = properties if properties is not None else model.properties
        if props is None or (not props and not encoders and not model.edge_encoders):
            raise ConfigurationError(
                "properties: expected the feature names per label (the model carries none: "
                "pass properties=)"
            )
        both = sorted(lb for lb, names in props.items() if names and lb in encoders)
        if both:
            raise ConfigurationError(
                f"properties[{both[0]!r}]: expected none, the model reads label {both[0]!r} "
                "through its feature spec (raw property columns)"
            )
        opts = dict(options or {})
        for key in ("label", "seed", "negatives", "source_label", "target_label"):
            if key in opts:
                raise ConfigurationError(f"options.{key}: expected none (set by the backend)")
        opts = with_spec_option(opts, encoders)
        if model.edge_encoders:  # the relationship properties the encoders read, as its bundle
            opts["edge_feature_spec"] = edge_spec_option(model.edge_encoders)
        self.model = model.ensure_built()
        self.name, self.version = name, version
        self.source_label, self.target_label = model.source_label, model.target_label
        self.id_property = opts.get("id_property")
        self._props = {lb: list(names) for lb, names in props.items() if lb not in encoders}
        self._opts = {**opts, "dtype": model.feature_dtype}
        self.seed = DEFAULT_SEED if seed is None else seed
        self.timed = self._timed()
        if opts.get("at") is not None and not self.timed:
            raise ConfigurationError(
                f"options.at: model {name!r} has no timed step (no {{time: ...}} in its "
                f"num_neighbors): it samples every node with every relationship, at no time; "
                f"leave options.at out (got {opts['at']!r})"
            )

    def _timed(self) -> bool:
        from memgraph_tf.serving.bundle import has_timed_step

        return any(
            has_timed_step(label, self._encoder(role).spec.num_neighbors())
            for role, label in zip(ROLES, (self.source_label, self.target_label), strict=True)
        )

    def _encoder(self, role: str) -> Any:
        if role not in ROLES:
            raise ConfigurationError(f"role: expected src or dst, got {role!r}")
        return self.model.source_encoder if role == "src" else self.model.target_encoder

    def sampling(self, role: str) -> tuple[dict[str, Any], dict[str, list[str]], dict[str, Any]]:
        spec = self._encoder(role).spec
        label = self.source_label if role == "src" else self.target_label
        labels = spec.labels()
        props = {lb: names for lb, names in self._props.items() if lb in labels}
        opts = {**self._opts, "label": label, "seed": self.seed}
        own = {lb: s for lb, s in opts.pop("feature_spec", {}).items() if lb in labels}
        if own:  # the role's labels' specs (another label has no slots in this half)
            opts["feature_spec"] = own
        from memgraph_tf.client.link_prediction import role_edge_spec

        edge_spec = role_edge_spec(opts.pop("edge_feature_spec", None), spec)
        if edge_spec:  # the role's steps' specs (sample_typed rejects another step)
            opts["edge_feature_spec"] = edge_spec
        from memgraph_tf.serving.bundle import role_time_options

        nn = spec.num_neighbors()  # a timed role: "now", unless the options name a time
        return nn, props, role_time_options(label, nn, opts, link_timed=self.timed)

    def embed(self, role: str, data: bytes) -> np.ndarray:
        from memgraph_tf import blob, layout

        enc = self._encoder(role)
        sections = {}
        for name, value in blob.unpack(data).items():
            if isinstance(value, blob.Ragged):  # a raw bag: flat values and row splits
                sections[name] = value.values
                sections[name + blob.ROW_SPLITS_SUFFIX] = value.row_splits
            else:
                sections[name] = value
        prefix = layout.PAIR_SOURCE_PREFIX if role == "src" else layout.PAIR_TARGET_PREFIX
        inputs = {prefix + n: sections[n] for n in enc.input_names() if n in sections}
        return np.asarray(self.model.embed(inputs, role, training=False), dtype=np.float32)

    def score(self, z_source: np.ndarray, z_target: np.ndarray) -> np.ndarray:
        import keras

        logits = self.model.score(z_source, z_target, training=False)
        return np.asarray(keras.ops.sigmoid(logits), dtype=np.float32)

    def score_block(self, z_source: np.ndarray, z_target: np.ndarray) -> np.ndarray:
        """The dot scorer as one matrix product (``scale * Zs Zt^T + bias``, float32: what
        :meth:`score` computes pair by pair, up to rounding); other scorers: the generic blocks."""
        if self.model.scorer != "dot":
            return super().score_block(z_source, z_target)
        scale = np.float32(self.model.scale.numpy())
        bias = np.float32(self.model.bias.numpy())
        logits = scale * (z_source.astype(np.float32) @ z_target.astype(np.float32).T) + bias
        return (1.0 / (1.0 + np.exp(-logits))).astype(np.float32)


class BundleLinkBackend(LinkBackend):
    """A link bundle run in-process (op or op-free; ``memgraph_tf.serving.export_links``): its
    ``embed_source`` / ``embed_target`` signatures on one ``sample_typed`` blob per node (sampled
    with the bundle's ``role_arguments``) and ``score_embeddings`` on embedding pairs.

    ``path``: ``BASE/NAME`` (its highest version) or ``BASE/NAME/VERSION``
    (:func:`~memgraph_tf.batch.backends.resolve_version_dir`); ``seed``: the sampling seed (default
    the bundle's, else :data:`~memgraph_tf.serving.bundle.DEFAULT_SEED`). Guarantees: ``version``
    is the version directory's number (else the config's); a bundle without the link signatures
    raises :class:`ConfigurationError` naming what it has."""

    def __init__(self, path: Any, *, seed: int | None = None) -> None:
        from memgraph_tf.batch.backends import resolve_version_dir
        from memgraph_tf.serving import bundle, loading

        version_dir, version = resolve_version_dir(path)
        loaded = loading.load_version(version_dir, version or 0)
        config = loaded.bundle_config
        if config is None or config.link is None:
            raise ConfigurationError(
                f"model: {str(version_dir)!r} is no link bundle (no link settings in its "
                f"assets/{bundle.CONFIG_ASSET}; export one with export_link_bundle)"
            )
        names = (
            bundle.EMBED_SOURCE_SIGNATURE,
            bundle.EMBED_TARGET_SIGNATURE,
            bundle.SCORE_EMBEDDINGS_SIGNATURE,
        )
        missing = [n for n in names if n not in loaded.functions]
        if missing:
            raise ConfigurationError(
                f"model: {str(version_dir)!r} lacks the signature(s) {', '.join(missing)} (has "
                f"{', '.join(sorted(loaded.functions))})"
            )
        self._b = bundle
        self._loaded = loaded
        self._embed = {"src": loaded.functions[names[0]], "dst": loaded.functions[names[1]]}
        self._score = loaded.functions[names[2]]
        self.config = config
        self.name = config.model_name
        self.version = version if version is not None else config.version
        self.source_label = config.link_sampling.source_label
        self.target_label = config.link_sampling.target_label
        self._spec = bundle.inference_sampling(config, seed)
        self.id_property = self._spec.options.get("id_property")
        self.path = version_dir

    def sampling(self, role: str) -> tuple[dict[str, Any], dict[str, list[str]], dict[str, Any]]:
        if role not in ROLES:
            raise ConfigurationError(f"role: expected src or dst, got {role!r}")
        return self._spec.role_arguments("source" if role == "src" else "target")

    def embed(self, role: str, data: bytes) -> np.ndarray:
        import tensorflow as tf

        from memgraph_tf import blob
        from memgraph_tf.serving.neighbourhoods import split_typed_blob

        count = next(iter(blob.unpack(data).values())).shape[0]
        blobs = split_typed_blob(data, count)
        out = self._embed[role](**{self._b.EMBED_INPUT: tf.constant(blobs, dtype=tf.string)})
        return out[self._b.EMBEDDINGS_OUTPUT].numpy().astype(np.float32)

    def score(self, z_source: np.ndarray, z_target: np.ndarray) -> np.ndarray:
        import tensorflow as tf

        shape = np.shape(z_source)[:-1]
        d = np.shape(z_source)[-1]
        out = self._score(
            **{
                self._b.Z_SOURCE_INPUT: tf.constant(np.reshape(z_source, (-1, d)), tf.float32),
                self._b.Z_TARGET_INPUT: tf.constant(np.reshape(z_target, (-1, d)), tf.float32),
            }
        )
        return out[self._b.REGRESS_OUTPUT].numpy().astype(np.float32).reshape(shape)


# ------------------------------------------------------------------------------------------------
# the run
# ------------------------------------------------------------------------------------------------


@dataclasses.dataclass
class LinkSummary(ModelRun):
    """What a run did (:class:`~memgraph_tf.batch.summary.ModelRun`: the model, ``elapsed_s``):
    ``sources`` scored, ``up_to_date`` (sources skipped: their links carry this version already),
    ``pairs`` scored, ``links`` of ``link_type`` written, candidates from the vector ``index``
    (None: from the graph)."""

    link_type: str
    sources: int = 0
    up_to_date: int = 0
    pairs: int = 0
    links: int = 0
    index: str | None = None

    @property
    def pairs_per_s(self) -> float:
        return self.pairs / self.elapsed_s if self.elapsed_s > 0 else 0.0

    def text(self) -> str:
        return (
            f"scored {self.pairs} pair(s) of {self.sources} source node(s), wrote {self.links} "
            f":{self.link_type} link(s), already up to date {self.up_to_date} source(s) "
            f"({self.model_name} version {self.model_version}; {self.elapsed_s:.1f} s, "
            f"{self.pairs_per_s:,.0f} pairs/s)"
            + (f"; candidates from vector index {self.index}" if self.index else "")
        )


def _labels(backend: LinkBackend, source_label: str | None, target_label: str | None) -> None:
    for role, given, own in (
        ("source_label", source_label, backend.source_label),
        ("target_label", target_label, backend.target_label),
    ):
        if given is not None and given != own:
            raise ConfigurationError(
                f"{role}: the model embeds :{own} nodes as its {role.split('_')[0]}s, got "
                f"{given!r}; leave it out or give {own!r}"
            )


class LinkScorer:
    """One scoring run (module docstring): exactly one of ``k`` (top k per source), ``pairs``
    (``[n, 2]`` keys) or ``query`` (Cypher returning ``source_id, target_id``; Bolt graphs, with
    ``query_params``). :meth:`run` returns a :class:`LinkSummary`; :attr:`summary` counts as it
    goes (read it after an interruption).

    ``at``: the time a model with timed steps samples every node at (module docstring, "Point
    in time"; default "now"); :class:`ConfigurationError` for a time that is not an integer or a
    model without a timed step.

    Guarantees: with the same graph, model and seed, a run that is interrupted or killed at any
    point and rerun writes the same relationships as one uninterrupted run, each once; nothing is
    written before the labels, the relationship type and every candidate's ids are checked."""

    def __init__(
        self,
        source: Any,
        backend: LinkBackend,
        *,
        k: int | None = None,
        pairs: Any = None,
        query: str | None = None,
        query_params: Mapping[str, Any] | None = None,
        relationship_type: str | None = None,
        link_type: str = DEFAULT_LINK_TYPE,
        source_label: str | None = None,
        target_label: str | None = None,
        shard: Shard | str | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
        overwrite: bool = False,
        retrieval: str = "auto",
        embedding_property: str = "embedding",
        oversample: int = 2,
        at: int | None = None,
    ) -> None:
        given = [
            name for name, v in (("k", k), ("pairs", pairs), ("query", query)) if v is not None
        ]
        if len(given) != 1:
            raise ConfigurationError(
                f"candidates: expected exactly one of k, pairs, query, got {given or 'none'}"
            )
        if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
            raise ConfigurationError(f"k: expected an integer >= 1, got {k!r}")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ConfigurationError(f"batch_size: expected an integer >= 1, got {batch_size!r}")
        if query_params and query is None:
            raise ConfigurationError("query_params: only with a candidates query")
        _labels(backend, source_label, target_label)
        self.at = _check_at(at, backend)
        self.source, self.backend = source, backend
        self.k, self.query, self.query_params = k, query, dict(query_params or {})
        self.pairs = None if pairs is None else _pair_array(pairs)
        self.batch_size, self.overwrite = batch_size, overwrite
        if retrieval not in RETRIEVALS:
            raise ConfigurationError(
                f"retrieval: expected one of {', '.join(RETRIEVALS)}, got {retrieval!r}"
            )
        if isinstance(oversample, bool) or not isinstance(oversample, int) or oversample < 1:
            raise ConfigurationError(f"oversample: expected an integer >= 1, got {oversample!r}")
        self.retrieval, self.oversample = retrieval, oversample
        self.embedding_property = embedding_property
        self.index: Any = None  # the vector index top-k candidates come from (prepare)
        self.selection = LinkSelection(
            source_label=backend.source_label,
            target_label=backend.target_label,
            version=backend.version,
            id_property=backend.id_property,
            relationship_type=relationship_type,
            link_type=link_type,
            shard=Shard.parse(shard) if isinstance(shard, str) else (shard or Shard()),
        )
        self.table = LinkTable(source, self.selection)
        self.summary = LinkSummary(backend.name, backend.version, link_type)
        self._cache: dict[str, dict[int, np.ndarray]] = {"src": {}, "dst": {}}
        self._prepared = False
        self._by_source: dict[int, dict[int, None]] = {}

    # -- embeddings -----------------------------------------------------------------------------
    def embed(self, role: str, keys: Sequence[int]) -> np.ndarray:
        """Embeddings ``[len(keys), D]`` of ``role``'s nodes ``keys`` (sampled in pages of
        ``batch_size``; each node once per run, cached)."""
        cache = self._cache[role]
        missing = list(dict.fromkeys(k for k in keys if k not in cache))
        nn, props, opts = self.backend.sampling(role)
        if self.at is not None:
            from memgraph_tf.serving.bundle import role_time_options

            # (_check_at refused an at for a backend none of whose roles has a timed step)
            opts = role_time_options(opts["label"], nn, opts, self.at, link_timed=True)
        for lo in range(0, len(missing), self.batch_size):
            chunk = missing[lo : lo + self.batch_size]
            z = self.backend.embed(role, self.source.sample_typed(chunk, nn, props, opts))
            if z.shape[0] != len(chunk):
                raise GraphDataError(
                    f"embed: the model returned {z.shape[0]} embedding(s) for {len(chunk)} node(s)"
                )
            cache.update(zip(chunk, z))
        if not keys:
            return np.zeros((0, 0), np.float32)
        return np.stack([cache[k] for k in keys])

    # -- runs -----------------------------------------------------------------------------------
    def run(self) -> LinkSummary:
        """Scores every selected source not done yet (all with ``overwrite``), page by page."""
        start = time.monotonic()
        try:
            self.prepare()
            todo = not self.overwrite
            if todo:
                sources = self.table.sources
                self.summary.up_to_date = sources.count(False) - sources.count(True)
            for keys in self.table.sources.scan(self.batch_size, todo):
                self.commit(keys, *self.score_page(keys))
        finally:
            self.summary.elapsed_s = time.monotonic() - start
        return self.summary

    def prepare(self) -> None:
        """Checks the labels and relationship type, then embeds every target (top k) or reads and
        checks the candidates (a query or pairs); once. Nothing is written."""
        if self._prepared:
            return
        self.table.check()
        if self.k is not None:
            self.index = self._candidate_index()
            self.summary.index = None if self.index is None else self.index.name
        if self.index is not None:
            pass  # top k from the index: no target is embedded here
        elif self.k is not None:
            self._targets = np.asarray(self.table.target_keys(), dtype=np.int64)
            self._z_targets = self.embed("dst", self._targets.tolist())
            self._cache["dst"].clear()  # _z_targets holds them
            self._position = {int(t): i for i, t in enumerate(self._targets)}
        else:
            pairs = self.pairs
            if self.query is not None:
                if self.table.embedded:
                    raise ConfigurationError(
                        "query: the embedded graph runs no Cypher; a candidates query needs a "
                        "Bolt graph (--graph bolt://...), or pass pairs= (Python) or --top-k"
                    )
                try:
                    rows = self.source.read(self.query, self.query_params)
                except QueryError as exc:  # the user's query, refused before anything is written
                    raise ConfigurationError(
                        f"candidates query: the server refused the query: {exc}"
                    ) from exc
                pairs = np.asarray(check_candidates(rows), np.int64).reshape(-1, 2)
            self._check_ids(pairs)
            for s, t in pairs.tolist():
                self._by_source.setdefault(s, {})[t] = None  # a repeated pair is scored once
        self._prepared = True

    def score_page(self, keys: Sequence[int]) -> tuple[list[tuple[int, int, float]], int]:
        """The links of the sources ``keys`` (ascending) and the number of pairs scored."""
        self.prepare()
        if self.k is None:
            rows = [(s, t) for s in keys for t in self._by_source.get(s, ())]
            if not rows:
                return [], 0
            z_s = self.embed("src", [s for s, _ in rows])
            z_t = self.embed("dst", [t for _, t in rows])
            self._cache["src"].clear()
            probs = self.backend.score(z_s, z_t).astype(np.float64)
            return [(s, t, float(p)) for (s, t), p in zip(rows, probs)], len(rows)
        if self.index is not None:
            return self._score_page_from_index(keys)
        same = self.selection.source_label == self.selection.target_label
        targets, position, k = self._targets, self._position, self.k
        z_sources = self.embed("src", list(keys))
        self._cache["src"].clear()
        scores = self.backend.score_block(z_sources, self._z_targets).astype(np.float64)
        excluded = self.table.neighbours(list(keys))
        links: list[tuple[int, int, float]] = []
        for row, key in enumerate(keys):
            drop = {position[t] for t in excluded[key] if t in position}
            if same and key in position:
                drop.add(position[key])
            s = scores[row]
            s[list(drop)] = -np.inf
            take = min(k, len(s) - len(drop))
            if take <= 0:
                continue
            # the k largest; among equal scores the smaller target key (targets ascend)
            top = np.argpartition(-s, take - 1)[:take] if take < len(s) else np.arange(len(s))
            top = top[np.lexsort((top, -s[top]))]
            links.extend((key, int(targets[j]), float(s[j])) for j in top)
        return links, len(keys) * len(targets)

    def _candidate_index(self) -> Any:
        """The vector index top-k candidates come from (``retrieval``): the index on
        ``:TargetLabel(embedding_property)`` when every target carries this model version's
        embedding there (``embedding_property_version``, written by ``memgraph-tf embed --role
        target``); None for exact retrieval. ``auto`` falls back to exact where ``index``
        raises :class:`ConfigurationError` naming what is missing."""
        from memgraph_tf.batch.retrieval import resolve_index
        from memgraph_tf.client.node_tables import NodeSelection, NodeTable

        s = self.selection
        if self.at is not None:  # the index holds the targets' embeddings as of now
            if self.retrieval == "index":
                raise ConfigurationError(
                    f"retrieval: 'index' holds the targets' embeddings as of now, not at "
                    f"{self.at}: with at, use retrieval 'exact' (or 'auto')"
                )
            return None
        index = resolve_index(self.source, s.target_label, self.embedding_property, self.retrieval)
        if index is None:
            return None
        stale = NodeTable(
            self.source,
            NodeSelection(
                label=s.target_label,
                id_property=s.id_property,
                write_property=self.embedding_property,
                version=self.backend.version,
            ),
        ).count(True)
        if stale == 0:
            logger.info("top-k candidates from vector index %s", index.name)
            return index
        message = (
            f"retrieval: {stale} :{s.target_label} node(s) lack {self.embedding_property!r} of "
            f"{self.backend.name} version {self.backend.version} (memgraph-tf embed --role target "
            f"--write-property {self.embedding_property} writes them)"
        )
        if self.retrieval == "index":
            raise ConfigurationError(message)
        logger.warning("%s: exact retrieval instead", message)
        return None

    def _score_page_from_index(
        self, keys: Sequence[int]
    ) -> tuple[list[tuple[int, int, float]], int]:
        """:meth:`score_page` with candidates from the vector index: per source, the
        ``k * oversample`` nearest targets by the source's embedding (beyond those excluded),
        each scored with the model's scorer on its stored embedding; the ``k`` best."""
        from memgraph_tf.batch import vectors

        same = self.selection.source_label == self.selection.target_label
        z_sources = self.embed("src", list(keys))
        self._cache["src"].clear()
        excluded = self.table.neighbours(list(keys))
        drops = [set(excluded[key]) | ({key} if same else set()) for key in keys]
        want = self.k * self.oversample + max(len(d) for d in drops)
        hits = vectors.search_many(
            self.source,
            self.index.name,
            want,
            z_sources.tolist(),
            self.selection.id_property,
            self.embedding_property,
        )
        links: list[tuple[int, int, float]] = []
        pairs = 0
        for key, z, drop, found in zip(keys, z_sources, drops, hits):
            candidates = [(t, zt) for t, _, zt in found if t not in drop and zt is not None]
            if not candidates:
                continue
            z_t = np.asarray([zt for _, zt in candidates], np.float32)
            probs = self.backend.score(np.broadcast_to(z, z_t.shape), z_t).astype(np.float64)
            pairs += len(candidates)
            order = sorted(range(len(candidates)), key=lambda i: (-probs[i], candidates[i][0]))
            links.extend((key, candidates[i][0], float(probs[i])) for i in order[: self.k])
        return links, pairs

    def commit(
        self, keys: Sequence[int], links: Sequence[tuple[int, int, float]], pairs: int
    ) -> int:
        """Writes ``links`` (MERGE), then marks the sources ``keys`` done (with candidates: those
        among them that have some); counts them in
        :attr:`summary`; returns the links written."""
        if self.k is None:  # only sources with candidates are done (others stay to do)
            keys = [key for key in keys if key in self._by_source]
        written = self.table.write(links)
        self.table.mark_done(list(keys))
        self.summary.links += written
        self.summary.sources += len(keys)
        self.summary.pairs += pairs
        return written

    def _check_ids(self, pairs: np.ndarray) -> None:
        s = self.selection
        for column, keys, label in (
            (0, set(self.table.source_keys()), s.source_label),
            (1, set(self.table.target_keys()), s.target_label),
        ):
            for value in pairs[:, column].tolist():
                if value not in keys:
                    name = "source_id" if column == 0 else "target_id"
                    key = s.id_property or "internal id"
                    raise ConfigurationError(
                        f"candidates: {name} {value}: no :{label} node with {key} {value}"
                    )


def _check_at(at: Any, backend: LinkBackend) -> int | None:
    """``at`` as an int (None: "now"); :class:`ConfigurationError` naming ``at`` for anything but
    an integer, or for a model none of whose roles has a timed step."""
    if at is None:
        return None
    if isinstance(at, bool) or not isinstance(at, (int, np.integer)):
        raise ConfigurationError(f"at: expected an integer time, got {at!r}")
    from memgraph_tf.serving.bundle import has_timed_step

    timed = False
    for role in ROLES:
        nn, _, opts = backend.sampling(role)
        timed = timed or has_timed_step(opts["label"], nn)
    if not timed:
        raise ConfigurationError(
            f"at: model {backend.name!r} has no timed step (no {{time: ...}} in its "
            f"num_neighbors): it samples every node with every relationship, at no time; leave "
            f"at out (got {int(at)})"
        )
    return int(at)


def _pair_array(pairs: Any) -> np.ndarray:
    arr = np.asarray(pairs)
    if arr.ndim != 2 or arr.shape[1] != 2 or arr.dtype.kind not in "iu":
        raise ConfigurationError(
            f"pairs: expected an [n, 2] array of integer (source, target) keys, got shape "
            f"{list(arr.shape)} of {arr.dtype}"
        )
    return arr.astype(np.int64)


def score_links(source: Any, backend: LinkBackend, **options: Any) -> LinkSummary:
    """Runs :class:`LinkScorer` ``(source, backend, **options)``; returns its summary."""
    return LinkScorer(source, backend, **options).run()


# ------------------------------------------------------------------------------------------------
# the command
# ------------------------------------------------------------------------------------------------

BackendFactory = Callable[[argparse.Namespace], LinkBackend]


def backend_from_args(args: argparse.Namespace) -> LinkBackend:
    """The backend ``memgraph-tf score-links`` scores with: the link bundle ``--model``."""
    return BundleLinkBackend(args.model)


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options of ``memgraph-tf score-links``."""
    p.add_argument("--graph", required=True, help="bolt://HOST:PORT or embedded:NAME (as classify)")
    p.add_argument("--model", required=True, metavar="BUNDLE_DIR", help="a link bundle")
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument(
        "--top-k", type=int, metavar="K", help="write the K best targets per source node"
    )
    which.add_argument(
        "--candidates",
        metavar="QUERY",
        help="a Cypher query returning source_id, target_id rows: score those pairs (Bolt)",
    )
    p.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a --candidates parameter; VALUE is JSON if it parses, else a string (repeatable)",
    )
    p.add_argument(
        "--relationship-type",
        default=None,
        metavar="TYPE",
        help="the predicted relationship type: a source's TYPE neighbours are no top-k candidates",
    )
    p.add_argument("--source-label", default=None, help="default: the model's source label")
    p.add_argument("--target-label", default=None, help="default: the model's target label")
    p.add_argument(
        "--link-type",
        default=DEFAULT_LINK_TYPE,
        metavar="TYPE",
        help="write (s)-[:TYPE {score, model_version}]->(t) (default PREDICTED_LINK)",
    )
    p.add_argument(
        "--shard",
        default="0/1",
        metavar="I/N",
        help="score the sources whose key modulo N is I (default 0/1: all)",
    )
    p.add_argument(
        "--batch-size", type=int, default=DEFAULT_BATCH_SIZE, help="source nodes per write"
    )
    p.add_argument(
        "--overwrite", action="store_true", help="also rescore sources done with this version"
    )
    p.add_argument(
        "--retrieval",
        choices=RETRIEVALS,
        default="auto",
        help="top-k candidates from Memgraph's vector index on the targets' embeddings (index), "
        "every target (exact), or the index when it holds this model's embeddings (auto)",
    )
    p.add_argument(
        "--at",
        type=int,
        default=None,
        metavar="T",
        help="a model with timed steps samples every node as of integer time T (default: now, "
        "every relationship whatever its time)",
    )
    p.add_argument(
        "--embedding-property",
        default="embedding",
        metavar="P",
        help="the targets' embedding property the vector index is on (memgraph-tf embed --role "
        "target --write-property P --create-index --metric ip)",
    )


#: The ``memgraph-tf score-links`` options that :class:`LinkScorer` takes under the same names.
_SCORER_OPTIONS = (
    "relationship_type",
    "link_type",
    "source_label",
    "target_label",
    "batch_size",
    "overwrite",
    "retrieval",
    "embedding_property",
    "at",
)


def run_cli(
    args: argparse.Namespace,
    open_graph: Callable[[str], Any],
    parse_params: Callable[[Sequence[str]], dict[str, Any]],
) -> int:
    """``memgraph-tf score-links``: the summary on success, one line on failure; exit codes from
    :data:`memgraph_tf.errors.EXIT_CODES` (0 done, 1 failed: rerun to resume, 2 a bad command
    line, label, relationship type or candidate: nothing written, 130 interrupted). ``open_graph``
    opens ``--graph``; ``parse_params`` reads the ``--param NAME=VALUE`` list (``classify``'s)."""

    def start(opened: list[Any]) -> LinkScorer:
        shard = Shard.parse(args.shard)
        params = parse_params(args.param)
        if params and args.candidates is None:
            raise ConfigurationError("--param: only with --candidates")
        source = open_graph(args.graph)
        opened.append(source)
        backend = backend_from_args(args)
        opened.append(backend)
        return LinkScorer(
            source,
            backend,
            k=args.top_k,
            query=args.candidates,
            query_params=params,
            shard=shard,
            **options_from(args, _SCORER_OPTIONS),
        )

    return run_batch(
        "score-links",
        start,
        lambda run, summary: print(summary.text()),
        log=logger,
        done=lambda summary: summary.sources,
        interrupted="scoring {} source node(s)",
        written="{} source node(s) scored and written",
    )


__all__ = [
    "BLOCK_FLOATS",
    "DEFAULT_BATCH_SIZE",
    "RETRIEVALS",
    "BundleLinkBackend",
    "LinkBackend",
    "LinkScorer",
    "LinkSummary",
    "ModelLinkBackend",
    "add_arguments",
    "backend_from_args",
    "run_cli",
    "score_links",
]
