"""The interface every graph source offers (:class:`GraphSource`): its procedure operations go
through the procedure table (:mod:`.procedure_table`) to one method each source implements,
:meth:`GraphSource.call_procedure`."""

from __future__ import annotations

import dataclasses
import inspect
import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from memgraph_tf import blob
from memgraph_tf.client.sources import procedure_table as table
from memgraph_tf.client.sources.config import quote_name
from memgraph_tf.client.sources.procedure_table import Procedure, to_python
from memgraph_tf.errors import ConfigurationError

logger = logging.getLogger(__name__)


def decoded(b64_method: Callable[..., Any], doc: str) -> Callable[..., Any]:
    """The raw-bytes twin of a ``*_b64`` method of :class:`GraphSource` (``pack_blob`` of
    ``pack_blob_b64``...): the same parameters, and it returns ``blob.b64decode`` of what the
    instance's own ``*_b64`` method returns (of each item, when that is a list of blobs), so a
    source overriding the ``*_b64`` method changes both. ``doc`` is its docstring."""
    b64_name = b64_method.__name__
    signature = inspect.signature(b64_method)
    returns_list = str(signature.return_annotation).startswith("list")

    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        text = getattr(self, b64_name)(*args, **kwargs)
        if returns_list:
            return [blob.b64decode(t) for t in text]
        return blob.b64decode(text)

    method.__name__ = b64_name.removesuffix("_b64")
    method.__qualname__ = b64_method.__qualname__.removesuffix("_b64")
    method.__doc__ = doc
    method.__signature__ = signature.replace(  # type: ignore[attr-defined] -- inspect reads it
        return_annotation="list[bytes]" if returns_list else "bytes"
    )
    return method


@dataclasses.dataclass(frozen=True)
class CheckedWrite:
    """A write :meth:`GraphSource.write_columns` has checked: ``node_ids`` are ints, each of
    ``columns`` holds one plain Python value per id under a valid property name, and
    ``batch_size`` >= 1. Nodes are found by ``id_property`` (among ``label`` nodes) or by
    internal id."""

    node_ids: list[int]
    columns: dict[str, list[Any]]
    id_property: str | None
    label: str | None
    batch_size: int


class GraphSource:
    """The operations every source offers. Node ids are integers: internal ids, or the values of
    ``options["id_property"]`` when given.

    Blob operations return raw blob bytes (``*_b64`` variants: the base64url text the procedures
    return, for ``unpack_blob(..., encoding="base64")`` in a graph). Subclasses implement
    :meth:`call_procedure` (every procedure operation goes through it), :meth:`_run`
    (:meth:`run` with its parameters as a dict), :meth:`_node_ids` (:meth:`node_ids` with
    ``where`` as a dict) and :meth:`_write_checked` (the write after :meth:`write_columns`'
    checks).
    """

    kind = "graph"

    @property
    def lock(self) -> Any:
        """The source's concurrency contract: a reentrant context manager. While a thread holds it,
        no other thread of this process uses the source, so a sequence of calls and direct reads
        of an embedded graph (``source.graph``) is atomic with respect to the source's other users
        (the fetch threads of batch inference, Beam's DoFns). Every call of the source takes it
        itself, so holding it is only needed around several calls. An :class:`EmbeddedSource`'s
        is a ``threading.RLock`` (its in-memory graph is not safe for concurrent use); a
        :class:`BoltSource`'s does nothing (the driver is thread-safe). A fork made while holding
        it copies no thread in the middle of a graph call."""
        return _NO_LOCK

    # -- procedures -------------------------------------------------------------------------------
    def call_procedure(self, procedure: Procedure, args: tuple) -> Any:
        """The answer (:meth:`Procedure.answer_of`) of one call of ``procedure`` with ``args``,
        plain Python values in ``procedure.params`` order (``procedure.plain``). Every procedure
        operation below comes here; a bad input raises :class:`GraphDataError` with the
        procedure's message."""
        raise NotImplementedError

    # -- blobs ------------------------------------------------------------------------------------
    def pack_blob_b64(
        self,
        node_ids: Sequence[int],
        properties: Sequence[str],
        options: Mapping[str, Any] | None = None,
    ) -> str:
        """``tf_features.pack``'s base64url blob (see :meth:`pack_blob`)."""
        return self.call_procedure(table.PACK, table.PACK.plain(node_ids, properties, options))

    def sample_blob_b64(
        self,
        seeds: Sequence[int],
        fanouts: Sequence[int],
        properties: Sequence[str],
        options: Mapping[str, Any] | None = None,
    ) -> str:
        """``tf_features.sample``'s base64url blob (see :meth:`sample_blob`)."""
        return self.call_procedure(
            table.SAMPLE, table.SAMPLE.plain(seeds, fanouts, properties, options)
        )

    def sample_blobs_per_node_b64(
        self,
        seeds: Sequence[int],
        fanouts: Sequence[int],
        properties: Sequence[str],
        options: Mapping[str, Any] | None = None,
    ) -> list[str]:
        """One base64url blob per seed (see :meth:`sample_blobs_per_node`)."""
        return self.call_procedure(
            table.SAMPLE_PER_NODE, table.SAMPLE_PER_NODE.plain(seeds, fanouts, properties, options)
        )

    pack_blob = decoded(
        pack_blob_b64,
        """The ``tf_features.pack`` blob (``ids``, ``features``, ``labels``...) of ``node_ids``.""",
    )
    sample_blob = decoded(
        sample_blob_b64,
        """The ``tf_features.sample`` blob (``ids_h``, ``features_h``, ``mask_h``, ``labels``).""",
    )
    sample_blobs_per_node = decoded(
        sample_blobs_per_node_b64,
        """One blob per seed (n = 1), in seed order; each equals ``sample_blob([seed], ...)``.""",
    )

    def describe(
        self, properties: Sequence[str], options: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """What ``tf_features.describe`` reports for ``properties`` (docs/query-modules.md):
        ``feature_width``, ``dtype``, ``columns``, ``sections`` (the pack layout, or the sample
        layout with ``options["fanouts"]``) and ``num_classes`` (with ``options["label_property"]``:
        1 + the largest class among the nodes with ``options["label"]``; else None).

        Guarantees: the map the procedure returns, without packing or fetching any features; a
        bad input raises :class:`GraphDataError` with the procedure's message."""
        return self.call_procedure(table.DESCRIBE, table.DESCRIBE.plain(properties, options))

    # -- typed (heterogeneous) graphs: tf_features.sample_typed / schema -------------------------
    def sample_typed_b64(
        self,
        seeds: Sequence[int],
        num_neighbors: Mapping[str, Sequence[int]],
        properties: Mapping[str, Sequence[str]] | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> str:
        """``tf_features.sample_typed``'s base64url blob (see :meth:`sample_typed`)."""
        return self.call_procedure(
            table.SAMPLE_TYPED, table.SAMPLE_TYPED.plain(seeds, num_neighbors, properties, options)
        )

    sample_typed = decoded(
        sample_typed_b64,
        """The typed sample blob of ``seeds`` (nodes of the seed label ``options["label"]``):
        ``num_neighbors`` maps edge patterns (``"(:User)-[:BOUGHT]->(:Product)"``) to a fanout per
        hop, ``properties`` maps labels to feature property names (memgraph_tf.layout,
        ``typed_sample_sections``; docs/query-modules.md). Guarantees: the same bytes from the
        procedure and from the client-side sampler for the same graph, ids and ``options["seed"]``;
        a bad input raises :class:`GraphDataError` with the procedure's message.""",
    )

    def schema(
        self,
        properties: Mapping[str, Sequence[str]] | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """What ``tf_features.schema`` reports: ``labels`` (per label its count and the kind and
        width of the feature properties asked for it in ``properties``, checked on every node)
        and ``relationships`` (per (source label, type, target label) the count)."""
        return self.call_procedure(table.SCHEMA, table.SCHEMA.plain(properties, options))

    def node_ids(
        self,
        *,
        label: str | None = None,
        id_property: str | None = None,
        where: Mapping[str, Any] | None = None,
    ) -> list[int]:
        """Ids of all nodes (with ``label``, and with each property of ``where`` equal to its
        value: e.g. ``{"split": "train"}``): values of ``id_property`` (nodes without it
        skipped), or internal ids; ascending."""
        return self._node_ids(label, id_property, dict(where or {}))

    def _node_ids(
        self, label: str | None, id_property: str | None, where: dict[str, Any]
    ) -> list[int]:
        """:meth:`node_ids` with ``where`` as a dict."""
        raise NotImplementedError

    # -- link prediction: tf_features.sample_pairs / split_edges ----------------------------------
    def sample_pairs_b64(
        self,
        sources: Sequence[int],
        targets: Sequence[int],
        num_neighbors: Mapping[str, Any],
        properties: Mapping[str, Sequence[str]] | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> str:
        """``tf_features.sample_pairs``' base64url blob (see :meth:`sample_pairs`)."""
        args = table.SAMPLE_PAIRS.plain(sources, targets, num_neighbors, properties, options)
        return self.call_procedure(table.SAMPLE_PAIRS, args)

    sample_pairs = decoded(
        sample_pairs_b64,
        """The pair blob of ``(sources[i], targets[i])`` (nodes of ``options["source_label"]`` and
        ``options["target_label"]``): both endpoints' typed neighbourhoods with the pair's own
        relationships removed at every hop, ``options["negatives"]`` drawn negatives per pair and
        ``pair_labels`` (memgraph_tf.layout, ``pair_sample_sections``; docs/query-modules.md).
        Guarantees: the same bytes from the procedure and from the client-side sampler for the
        same graph, ids and ``options["seed"]``; a bad input raises :class:`GraphDataError` with
        the procedure's message.""",
    )

    def split_edges(self, pattern: str, options: Mapping[str, Any] | None = None) -> dict[str, int]:
        """``tf_features.split_edges``: writes ``train``/``val``/``test`` into
        ``options["split_property"]`` (default ``split``) of every relationship ``pattern``
        matches, drawn from ``options["seed"]`` (or by time: ``options["time_property"]`` and
        ``options["cutoffs"]``, docs/query-modules.md); returns ``{"train", "val", "test",
        "relationships"}``. Guarantees: idempotent for a seed, the same split from the procedure
        and the client-side fallback (with ``options["id_property"]``), run in a write
        transaction; a bad input raises :class:`GraphDataError` and writes nothing."""
        return self.call_procedure(table.SPLIT_EDGES, table.SPLIT_EDGES.plain(pattern, options))

    # -- queries and writes -----------------------------------------------------------------------
    def run(
        self,
        query: str,
        parameters: Mapping[str, Any] | None = None,
        *,
        fetch_size: int | None = None,
    ) -> Iterator[Mapping[str, Any]]:
        """Runs ``query`` and yields its records lazily (mapping column -> value)."""
        return self._run(query, dict(parameters or {}), fetch_size)

    def _run(
        self, query: str, params: dict[str, Any], fetch_size: int | None
    ) -> Iterator[Mapping[str, Any]]:
        """:meth:`run` with ``parameters`` as a dict."""
        raise NotImplementedError

    def write_properties(
        self,
        node_ids: Sequence[int],
        name: str,
        values: Sequence[Any],
        *,
        id_property: str | None = None,
        label: str | None = None,
        batch_size: int = 1000,
    ) -> int:
        """Sets property ``name`` of each node to its value, in batches of ``batch_size`` (one
        managed write transaction each); nodes are found by ``id_property`` (among ``label`` nodes,
        which lets the server use a label-property index) or by internal id. Returns the number of
        nodes written (ids that match no node are not counted).

        Idempotent: writing the same values again leaves the graph as it was."""
        node_ids = [to_python(i) for i in node_ids]
        values = to_python(list(values))
        _check_write_args(node_ids, values, batch_size)
        quote_name(name, "name")
        return self._write_checked(
            CheckedWrite(node_ids, {name: values}, id_property, label, batch_size)
        )

    def write_columns(
        self,
        node_ids: Sequence[int],
        columns: Mapping[str, Sequence[Any]],
        *,
        id_property: str | None = None,
        label: str | None = None,
        batch_size: int = 1000,
    ) -> int:
        """Sets several properties per node: ``columns`` maps a property name to one value per
        node id. Guarantees: a node's properties are set together, in one statement of one
        managed write transaction per batch of ``batch_size`` nodes (over Bolt), under the
        source's lock (embedded), so no node is left with some of them written; nodes are found
        as in :meth:`write_properties`. Returns the number of nodes written. Idempotent."""
        node_ids = [to_python(i) for i in node_ids]
        if not isinstance(columns, Mapping) or not columns:
            raise ConfigurationError(
                f"columns: expected a non-empty mapping of property name -> values, got {columns!r}"
            )
        checked: dict[str, list[Any]] = {}
        for name, values in columns.items():
            quote_name(name, "columns")
            checked[name] = to_python(list(values))
            _check_write_args(
                node_ids,
                checked[name],
                batch_size,
                f"columns[{name!r}]",
                length_only=len(checked) > 1,
            )
        return self._write_checked(CheckedWrite(node_ids, checked, id_property, label, batch_size))

    def _write_checked(self, write: CheckedWrite) -> int:
        """:meth:`write_columns` after its checks (:class:`CheckedWrite`); returns the number of
        nodes written."""
        raise NotImplementedError

    def write_property(
        self,
        node_id: int,
        name: str,
        value: Any,
        *,
        id_property: str | None = None,
        label: str | None = None,
    ) -> int:
        """Sets one node's property (see :meth:`write_properties`)."""
        return self.write_properties([node_id], name, [value], id_property=id_property, label=label)

    def close(self) -> None:
        """Releases the source's resources; idempotent."""

    def __enter__(self) -> GraphSource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- no capture --------------------------------------------------------------------------------
    def __reduce__(self) -> Any:
        raise TypeError(
            f"{type(self).__name__} cannot be pickled or copied: it holds a live connection, and "
            "its "
            f"credentials must never be serialised (pass a source to each process instead)"
        )

    def __deepcopy__(self, memo: Any) -> Any:
        self.__reduce__()

    def __copy__(self) -> Any:
        self.__reduce__()


class _NoLock:
    """The :attr:`GraphSource.lock` of a thread-safe source: a reentrant no-op."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


_NO_LOCK = _NoLock()


def _check_write_args(
    node_ids: Sequence[int],
    values: Sequence[Any],
    batch_size: int,
    param: str = "values",
    *,
    length_only: bool = False,
) -> None:
    """One value per node id in ``values`` (named ``param``), then, unless ``length_only`` (the ids
    and batch size were checked with an earlier column), ``batch_size`` >= 1 and integer ids."""
    if len(node_ids) != len(values):
        raise ConfigurationError(
            f"{param}: expected one value per node id ({len(node_ids)}), got {len(values)}"
        )
    if length_only:
        return
    if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1:
        raise ConfigurationError(f"batch_size: expected an integer >= 1, got {batch_size!r}")
    for i, node_id in enumerate(node_ids):
        if not isinstance(node_id, int) or isinstance(node_id, bool):
            raise ConfigurationError(f"node_ids[{i}]: expected an integer id, got {node_id!r}")
