"""Run the unchanged ``tf_features`` query module in-process, through Memgraph's real ``mgp.py``.

:class:`EmbeddedGraph` is an in-memory property graph plus a working ``_mgp`` (see
:mod:`memgraph_tf.embedded._runtime`), so ``query_modules/tf_features.py`` is loaded and called
exactly as Memgraph would load and call it::

    g = EmbeddedGraph()
    a = g.add_node(["Paper"], {"f": [1.0, 2.0]})
    b = g.add_node(["Paper"], {"f": [3.0, 4.0]})
    g.add_edge(a, b, "CITES")
    [row] = g.call("tf_features.pack", [a, b], ["f"], {})   # {"blob": "TUdURgEAAAA...", "count": 2}

Standard library only, but for Memgraph's vector index (:meth:`EmbeddedGraph.execute`,
``vector_search.search``: :mod:`memgraph_tf.embedded.vector_index`, on ``usearch``).
Datasets are read elsewhere and loaded with the generic loader
:meth:`EmbeddedGraph.from_edge_list` (the Planetoid graphs:
:func:`memgraph_tf.datasets.planetoid_graph`).
"""

from __future__ import annotations

import logging
import os
import pathlib
import types
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from memgraph_tf.embedded import _runtime
from memgraph_tf.embedded._runtime import (
    MEMGRAPH_2_PROCEDURE_MEMORY_LIMIT_BYTES,
    MEMGRAPH_QUERY_TIMEOUT_S,
    ArgumentTypeError,
    EdgeRef,
    EmbeddedError,
    HandleUseAfterCallError,
    NodeRef,
    ProcedureError,
    ProcedureNotFoundError,
    ResultConversionError,
    memgraph_map_order,
    parse_procedure_memory_clause,
    procedure_memory_clause,
)

logger = logging.getLogger(__name__)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


# name -> (argument name, Cypher type, check) per argument
_VECTOR_PROCEDURES: dict[str, tuple[tuple[str, Any], ...]] = {
    "vector_search.search": (
        ("index_name", "STRING", lambda v: isinstance(v, str)),
        ("result_set_size", "INTEGER", _is_int),
        ("query_vector", "LIST OF ANY", lambda v: isinstance(v, (list, tuple))),
    ),
    "vector_search.show_index_info": (),
}

__all__ = [
    "MEMGRAPH_2_PROCEDURE_MEMORY_LIMIT_BYTES",
    "MEMGRAPH_QUERY_TIMEOUT_S",
    "ArgumentTypeError",
    "EdgeRef",
    "EmbeddedError",
    "EmbeddedGraph",
    "HandleUseAfterCallError",
    "NodeRef",
    "ProcedureError",
    "ProcedureNotFoundError",
    "ResultConversionError",
    "default_module_paths",
    "memgraph_map_order",
    "parse_procedure_memory_clause",
    "procedure_memory_clause",
]


def default_module_paths() -> list[pathlib.Path]:
    """The query-module files an :class:`EmbeddedGraph` loads by default (``tf_features.py``)."""
    from memgraph_tf.deploy import find_module_file

    return [find_module_file()]


class EmbeddedGraph:
    """An in-memory graph whose query modules run through Memgraph's ``mgp.py``.

    Node ids are dense internal ids from 0, in creation order. ``call`` behaves like
    ``CALL name(args...) YIELD *`` on Memgraph, returning one dict per record; it raises
    :class:`ArgumentTypeError` / :class:`ResultConversionError` for what Memgraph refuses and
    :class:`ProcedureError` (Memgraph's text: ``name: `` + the traceback; the procedure's exception
    as the cause) when the procedure raises.

    Strict as Memgraph: ``default_memory_limit_bytes`` limits a call that names no
    ``memory_limit_bytes`` (default: Memgraph 2.0.0-2.12.0's 100 MB for a CALL without a
    ``PROCEDURE MEMORY`` clause; None: unlimited, as from 2.13.0); ``query_timeout_s`` makes
    ``ctx.must_abort()`` true that long after a call started (Memgraph's
    ``--query-execution-timeout-sec``, default 600; None: never); ``count_api_calls`` counts the
    ``_mgp`` calls of each procedure call (:attr:`api_calls`).
    """

    def __init__(
        self,
        modules: Iterable[str | os.PathLike[str]] | None = None,
        *,
        default_memory_limit_bytes: int | None = MEMGRAPH_2_PROCEDURE_MEMORY_LIMIT_BYTES,
        query_timeout_s: float | None = MEMGRAPH_QUERY_TIMEOUT_S,
        count_api_calls: bool = False,
    ) -> None:
        self._runtime = _runtime.Runtime(
            default_memory_limit_bytes=default_memory_limit_bytes,
            query_timeout_s=query_timeout_s,
            count_api_calls=count_api_calls,
        )
        self._store = self._runtime.store
        self._deleted_edges: set[int] = set()
        #: the notifications of the last :meth:`execute` (Memgraph's, e.g. "Created vector
        #: index idx." or "Vector index idx doesn't exist.")
        self.notifications: list[str] = []
        for path in default_module_paths() if modules is None else modules:
            self._runtime.load(path)

    # -- building -------------------------------------------------------------------------------
    def add_node(
        self, labels: Sequence[str] = (), properties: Mapping[str, Any] | None = None
    ) -> int:
        """Adds a vertex; returns its internal id. Property values must be Memgraph property
        values."""
        if isinstance(labels, str):
            labels = [labels]
        return self._store.add_vertex(labels, dict(properties or {}))

    def add_edge(
        self, src: int, dst: int, edge_type: str, properties: Mapping[str, Any] | None = None
    ) -> int:
        """Adds a directed edge ``src -[edge_type]-> dst``; returns its id."""
        return self._store.add_edge(src, dst, edge_type, dict(properties) if properties else None)

    def merge_edge(
        self, src: int, dst: int, edge_type: str, properties: Mapping[str, Any] | None = None
    ) -> int:
        """Cypher's ``MERGE (src)-[r:edge_type]->(dst) SET r.k = v, ...``: the first such edge
        gets ``properties`` set (None values remove), else a new one is added; returns its id."""
        s = self._store
        self._check_node(src)
        self._check_node(dst)
        for e in s.out_edges[src]:
            if s.etype[e] == edge_type and s.edst[e] == dst:
                props = s.edge_properties(e)
                for key, value in (properties or {}).items():
                    s.set_property(props, key, value)
                return e
        return self.add_edge(src, dst, edge_type, properties)

    def delete_edge(self, edge_id: int) -> None:
        """Cypher's ``DELETE r``: edge ``edge_id`` leaves its endpoints' adjacency (no procedure
        or scan sees it again; its id is not reused). An unknown or deleted edge: IndexError."""
        s = self._store
        if not isinstance(edge_id, int) or not 0 <= edge_id < len(s.etype):
            raise IndexError(f"edge_id: expected an id in 0..{len(s.etype) - 1}, got {edge_id!r}")
        if edge_id in self._deleted_edges:
            raise IndexError(f"edge_id: edge {edge_id} is already deleted")
        s.out_edges[s.esrc[edge_id]].remove(edge_id)
        s.in_edges[s.edst[edge_id]].remove(edge_id)
        self._deleted_edges.add(edge_id)

    def edges(self, edge_type: str | None = None) -> list[tuple[int, int, dict[str, Any]]]:
        """``(src, dst, properties)`` of every edge (of ``edge_type`` if given), in creation order
        (one row per edge: parallel edges show as many times)."""
        s = self._store
        return [
            (
                s.esrc[e],
                s.edst[e],
                {k: _runtime.load_value(v) for k, v in (s.eprops[e] or {}).items()},
            )
            for e in range(len(s.etype))
            if (edge_type is None or s.etype[e] == edge_type) and e not in self._deleted_edges
        ]

    def set_property(self, node_id: int, key: str, value: Any) -> None:
        """Sets (``None``: removes) a node property, e.g. a prediction written back."""
        self._check_node(node_id)
        self._store.set_property(self._store.vprops[node_id], key, value, vertex=node_id)

    def get_property(self, node_id: int, key: str, default: Any = None) -> Any:
        """A node property as a Bolt client would read it (lists as lists; a procedure gets
        tuples), or ``default``."""
        self._check_node(node_id)
        value = self._store.vprops[node_id].get(key)
        return default if value is None else _runtime.load_value(value)

    def add_label(self, node_id: int, label: str) -> None:
        """Cypher's ``SET n:label`` (vector indexes on ``label`` take the node in)."""
        self._check_node(node_id)
        labels = self._store.labels[node_id]
        if label not in labels:
            self._store.set_labels(node_id, [*labels, label])

    def remove_label(self, node_id: int, label: str) -> None:
        """Cypher's ``REMOVE n:label``."""
        self._check_node(node_id)
        labels = self._store.labels[node_id]
        if label in labels:
            self._store.set_labels(node_id, [n for n in labels if n != label])

    def labels(self, node_id: int) -> list[str]:
        self._check_node(node_id)
        return list(self._store.labels[node_id])

    def node(self, node_id: int) -> NodeRef:
        """A node reference to pass where a procedure takes vertices (Cypher ``MATCH (n) ...``)."""
        self._check_node(node_id)
        return NodeRef(self._store, node_id)

    def nodes(self, label: str | None = None) -> list[int]:
        """Internal ids of all nodes (with ``label`` if given), ascending."""
        return [i for i, ls in enumerate(self._store.labels) if label is None or label in ls]

    def find_nodes(self, label: str | None, name: str, value: Any) -> list[int]:
        """Internal ids (ascending) of the nodes with ``label`` (any node when None) whose property
        ``name`` equals the number ``value`` -- Cypher's ``MATCH (n:label) WHERE n.name = value``
        (an integer equals the float of the same value; a bool or a non-number matches nothing)
        -- through an index kept per ``(label, name)`` (nodes added join it; a write to that
        property or to a label drops it), as Memgraph's label-property index (``CREATE INDEX ON
        :label(name)``) answers it."""
        return self._store.lookup(label, name, value)

    def neighbours(
        self, node_id: int, edge_types: Sequence[str] | None = None, direction: str = "both"
    ) -> list[int]:
        """Distinct neighbour ids along ``edge_types`` (None: all) and ``direction``, ascending."""
        self._check_node(node_id)
        s = self._store
        found = set()
        if direction in ("out", "both"):
            found.update(
                s.edst[e]
                for e in s.out_edges[node_id]
                if edge_types is None or s.etype[e] in edge_types
            )
        if direction in ("in", "both"):
            found.update(
                s.esrc[e]
                for e in s.in_edges[node_id]
                if edge_types is None or s.etype[e] in edge_types
            )
        return sorted(found)

    @property
    def node_count(self) -> int:
        return len(self._store.labels)

    @property
    def edge_count(self) -> int:
        return len(self._store.etype) - len(self._deleted_edges)

    def _check_node(self, node_id: int) -> None:
        if not isinstance(node_id, int) or not 0 <= node_id < len(self._store.labels):
            raise IndexError(
                f"node_id: expected an id in 0..{len(self._store.labels) - 1}, got {node_id!r}"
            )

    # -- calling --------------------------------------------------------------------------------
    def call(
        self,
        procedure_name: str,
        *args: Any,
        memory_limit_bytes: int | types.EllipsisType | None = ...,
    ) -> list[dict[str, Any]]:
        """``CALL procedure_name(*args) [PROCEDURE MEMORY ...] YIELD *``: one dict per record
        (nodes as :class:`NodeRef`). Memgraph's ``vector_search.search`` and
        ``vector_search.show_index_info`` are built in (see :meth:`execute`).

        ``memory_limit_bytes``: the call's ``PROCEDURE MEMORY LIMIT`` in bytes; None is
        ``PROCEDURE MEMORY UNLIMITED``; left out, the graph's ``default_memory_limit_bytes``
        (:func:`parse_procedure_memory_clause` turns a clause's text into this value)."""
        if procedure_name in _VECTOR_PROCEDURES:
            return self._vector_call(procedure_name, args)
        return self._runtime.call(procedure_name, *args, memory_limit_bytes=memory_limit_bytes)

    # -- vector index ---------------------------------------------------------------------------
    def execute(
        self, query: str, parameters: Mapping[str, Any] | None = None
    ) -> list[dict[str, Any]]:
        """Runs one of Memgraph's vector index statements -- ``CREATE VECTOR INDEX name ON
        :Label(prop) WITH CONFIG {...}`` (also ``:A|B``, ``:A&B``, ``(prop)``), ``DROP VECTOR
        INDEX name``, ``SHOW VECTOR INDEX INFO`` -- with ``$parameters``; returns its rows (none
        for CREATE / DROP, whose notification is :attr:`notifications`, as Memgraph sends it).
        Raises :class:`VectorIndexError` for what Memgraph refuses (grammar, config, a node
        whose property cannot join the new index). No other Cypher is run."""
        from memgraph_tf.embedded import vector_cypher, vector_index

        statement = vector_cypher.parse_statement(query, parameters)
        indexes = self._vector_indexes()
        self.notifications = []
        if statement.action == "show":
            return indexes.info()
        if statement.action == "drop":
            self.notifications = [indexes.drop(statement.name)]
            return []
        assert statement.label_filter is not None
        spec = vector_index.VectorIndexSpec(
            name=statement.name,
            label_filter=statement.label_filter,
            property=statement.property,
            **vector_index.config_from_map(statement.config),
        )
        self.notifications = [indexes.create(spec)]
        if not self.notifications[0].startswith("Created"):
            logger.warning("%s", self.notifications[0])
        return []

    def _vector_indexes(self) -> Any:
        s = self._store
        if s.vector_indexes is None:
            from memgraph_tf.embedded.vector_index import VectorIndexes

            s.vector_indexes = VectorIndexes(
                lambda vid: s.labels[vid], lambda vid: s.vprops[vid], lambda: len(s.labels)
            )
        return s.vector_indexes

    def _vector_call(self, name: str, args: tuple[Any, ...]) -> list[dict[str, Any]]:
        """Memgraph's ``vector_search`` module (``query_modules/vector_search_module.cpp``):
        ``search(index_name :: STRING, limit :: INTEGER, search_query :: LIST OF ANY) ::
        (node, distance, similarity)`` and ``show_index_info() :: (index_name, label, property,
        metric, dimension, capacity, size, scalar_kind, index_type)``."""
        from memgraph_tf.embedded.vector_index import VectorIndexError

        signature = _VECTOR_PROCEDURES[name]
        if len(args) != len(signature):
            count = len(signature)
            raise ArgumentTypeError(
                f"'{name}' requires no arguments."
                if count == 0
                else f"'{name}' requires exactly {count} argument{'' if count == 1 else 's'}."
            )
        for position, (arg, (arg_name, kind, check)) in enumerate(zip(args, signature)):
            if not check(arg):  # the runtime's ValidateArguments text
                raise ArgumentTypeError(
                    f"'{name}' argument named '{arg_name}' at position {position} must be of "
                    f"type {kind}."
                )
        indexes = self._vector_indexes()
        if not args:
            return indexes.info()
        try:
            found = indexes.search(args[0], args[1], args[2])
        except VectorIndexError as exc:
            raise ProcedureError(f"{name}: {exc}", name) from exc
        return [
            {"node": NodeRef(self._store, vid), "distance": d, "similarity": sim}
            for vid, d, sim in found
        ]

    @property
    def api_calls(self) -> dict[str, int]:
        """``_mgp`` method -> calls made by the last procedure call (``count_api_calls=True``;
        the embedded runtime's counts: each stands for one call into Memgraph's C API)."""
        return dict(self._runtime.api_calls)

    @property
    def default_memory_limit_bytes(self) -> int | None:
        return self._runtime.default_memory_limit_bytes

    @property
    def query_timeout_s(self) -> float | None:
        return self._runtime.query_timeout_s

    def load_module(self, path: str | os.PathLike[str]) -> list[str]:
        """Loads another query-module file; returns its procedures' qualified names."""
        module = self._runtime.load(path)
        return sorted(p.qualified_name for p in module.procedures.values())

    def procedures(self) -> dict[str, str]:
        """Qualified name -> signature of every loaded procedure."""
        return {
            p.qualified_name: p.signature()
            for m in self._runtime.modules.values()
            for p in m.procedures.values()
        }

    def request_abort(self, abort: Any = True) -> None:
        """Makes ``ctx.must_abort()`` true (Memgraph: the query was terminated or timed out);
        ``abort`` is read with ``bool()`` at each check."""
        self._runtime.abort_requested = abort

    # -- loaders --------------------------------------------------------------------------------
    @classmethod
    def from_edge_list(
        cls,
        edges: str | os.PathLike[str] | Iterable[tuple[int, int]],
        *,
        num_nodes: int | None = None,
        label: str = "Node",
        edge_type: str = "EDGE",
        node_properties: Mapping[str, Sequence[Any]] | None = None,
        modules: Iterable[str | os.PathLike[str]] | None = None,
        **graph_options: Any,
    ) -> EmbeddedGraph:
        """A graph of nodes ``0..N-1`` (labelled ``label``) and one ``edge_type`` edge per pair.

        ``edges`` is an iterable of ``(src, dst)`` ints or a text file of ``src dst`` lines (``#``
        comments and blank lines skipped). ``N`` is ``num_nodes`` or 1 + the largest id.
        ``node_properties[name][i]`` becomes property ``name`` of node ``i``. Internal id = node
        number. ``graph_options`` go to the constructor (``default_memory_limit_bytes``,
        ``query_timeout_s``, ``count_api_calls``).
        """
        pairs: list[tuple[int, int]] = []
        if isinstance(edges, (str, os.PathLike)):
            with open(edges, encoding="utf-8") as f:
                for lineno, line in enumerate(f, start=1):
                    text = line.split("#", 1)[0].strip()
                    if not text:
                        continue
                    parts = text.split()
                    if len(parts) < 2:
                        raise ValueError(
                            f"{os.fspath(edges)}:{lineno}: expected 'src dst', got {line.strip()!r}"
                        )
                    try:
                        pair = (int(parts[0]), int(parts[1]))
                    except ValueError:
                        raise ValueError(
                            f"{os.fspath(edges)}:{lineno}: expected two integer node ids, got "
                            f"{line.strip()!r}"
                        ) from None
                    if min(pair) < 0:
                        raise ValueError(
                            f"{os.fspath(edges)}:{lineno}: expected node ids >= 0, got "
                            f"{line.strip()!r}"
                        )
                    pairs.append(pair)
        else:
            pairs = [(int(a), int(b)) for a, b in edges]
        biggest = max((max(a, b) for a, b in pairs), default=-1)
        n = biggest + 1 if num_nodes is None else num_nodes
        if n <= biggest:
            raise ValueError(
                f"num_nodes: expected > {biggest} (the largest id in edges), got {num_nodes}"
            )
        negative = next(((k, a, b) for k, (a, b) in enumerate(pairs) if a < 0 or b < 0), None)
        if negative is not None:
            k, a, b = negative
            raise ValueError(f"edges[{k}]: expected node ids >= 0, got ({a}, {b})")
        node_properties = node_properties or {}
        for name, values in node_properties.items():
            if len(values) != n:
                raise ValueError(
                    f"node_properties[{name!r}]: expected {n} values (one per node), got "
                    f"{len(values)}"
                )
        g = cls(modules, **graph_options)
        for i in range(n):
            g.add_node([label], {name: values[i] for name, values in node_properties.items()})
        for a, b in pairs:
            g.add_edge(a, b, edge_type)
        return g
