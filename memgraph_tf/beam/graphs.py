"""Graph access for Beam workers: a picklable :class:`GraphSpec` that each worker opens itself, and
:class:`NodeTable`, the node-key reads and prediction writes a pipeline needs (no Beam import here).

A live graph source cannot travel inside a pipeline (``BoltSource`` refuses to be pickled, and its
credentials must not end up in a job graph), so transforms carry a :class:`GraphSpec` -- a URI and
a database name, never a password -- and open it on the worker:

* ``bolt://`` / ``neo4j://`` (``+s``, ``+ssc``): :func:`memgraph_tf.client.connect`; the user name
  and password come from ``MEMGRAPH_TF_USER`` / ``MEMGRAPH_TF_PASSWORD`` **on the worker**.
  Memgraph with the ``tf_features`` modules, or any Bolt server through the client-side fallback.
  One driver per worker process, shared by its threads (:func:`acquire` / :func:`release`).
* ``embedded:NAME`` / ``embedded:DIR/NAME``: a dataset loaded into an in-process graph, once per
  process (``memgraph_tf.cli.open_graph_source``). Each worker process has its own copy, so writes
  to it are only visible to a launcher that shares the worker's process (the DirectRunner's
  ``in_memory`` and ``multi_threading`` modes).
* ``inprocess:KEY``: a graph or source registered by :func:`register_graph` in this process (tests,
  notebooks); only for runners that run workers in the launcher's process.

Embedded graphs are not safe for concurrent use: every read, sample and write a pipeline makes on
one goes through the handle's lock (:attr:`GraphHandle.lock`).
"""

from __future__ import annotations

import bisect
import dataclasses
import itertools
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from memgraph_tf.client.batch import PARAM_PREFIX, check_key_ids, check_where, property_names
from memgraph_tf.client.errors import ConfigurationError, GraphDataError
from memgraph_tf.client.sources import BoltSource, EmbeddedSource, GraphSource

logger = logging.getLogger(__name__)

#: URI prefixes of graphs that live inside one process.
IN_PROCESS_SCHEMES = ("embedded:", "inprocess:")

_REGISTRY_LOCK = threading.Lock()
_HANDLES: dict[str, GraphHandle] = {}
_KEYS = itertools.count(1)


@dataclasses.dataclass(frozen=True)
class GraphSpec:
    """Where a worker finds the graph: ``uri`` (see the module docstring) and, for Bolt, the
    ``database`` (default ``MEMGRAPH_TF_DATABASE`` on the worker, else the server's default).

    Guarantees: holds no credential (a URI with a user or password in it is refused), so a
    pipeline that carries it can be shown, logged and shipped to a runner."""

    uri: str
    database: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.uri, str) or not self.uri.strip():
            raise ConfigurationError(
                f"graph: expected a URI (bolt://HOST:PORT, embedded:NAME, "
                f"inprocess:KEY), got {self.uri!r}"
            )
        if not self.in_process and "@" in self.uri.split("://", 1)[-1].split("/", 1)[0]:
            raise ConfigurationError(
                "graph: expected a URI without user or password (workers take "
                "them from MEMGRAPH_TF_USER / MEMGRAPH_TF_PASSWORD)"
            )

    @property
    def in_process(self) -> bool:
        """Whether the graph lives in one process (``embedded:`` or ``inprocess:``): writes to it
        are seen only by that process."""
        return self.uri.startswith(IN_PROCESS_SCHEMES)

    def __str__(self) -> str:
        return self.uri if self.database is None else f"{self.uri} (database {self.database})"


class GraphHandle:
    """An open graph shared by the DoFns of one process: :attr:`source` (a
    :class:`~memgraph_tf.client.GraphSource`) and :attr:`lock` (an ``RLock`` for embedded graphs,
    which every read, sample and write holds; a no-op for Bolt, whose driver is thread-safe)."""

    def __init__(self, key: str, source: GraphSource, *, owned: bool) -> None:
        self.key = key
        self.source = source
        self.embedded = isinstance(source, EmbeddedSource)
        self.lock: Any = threading.RLock() if self.embedded else _NoLock()
        self.refs = 0
        self._owned = owned
        self._key_index: dict[tuple, tuple[list[int], dict[int, int]]] = {}

    def key_index(
        self, label: str | None, id_property: str | None
    ) -> tuple[list[int], dict[int, int]]:
        """Embedded graphs: ``(sorted keys, key -> internal id)`` of the nodes with ``label`` whose
        key (``id_property``, else the internal id) is an integer; read once per process and
        cached. Raises :class:`GraphDataError` for a key that two nodes share."""
        cache_key = (label, id_property)
        with self.lock:
            found = self._key_index.get(cache_key)
            if found is not None:
                return found
            graph = self.source.graph
            internal_of: dict[int, int] = {}
            for internal in graph.nodes(label):
                key = internal if id_property is None else graph.get_property(internal, id_property)
                if key is None or isinstance(key, bool) or not isinstance(key, int):
                    continue  # the procedures cannot sample such a node by id either
                if internal_of.setdefault(key, internal) != internal:
                    raise GraphDataError(
                        f"{id_property}: expected unique ids, got {key} on the nodes "
                        f"with internal ids {internal_of[key]} and {internal}"
                    )
            found = (sorted(internal_of), internal_of)
            self._key_index[cache_key] = found
            return found

    def close(self) -> None:
        if self._owned:
            self.source.close()


class _NoLock:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def register_graph(graph: Any, key: str | None = None) -> GraphSpec:
    """Registers an in-process graph (an ``EmbeddedGraph`` or an ``EmbeddedSource``) under ``key``
    (default: a fresh one) and returns the ``inprocess:KEY`` spec that finds it in this process.
    The caller keeps ownership (:func:`unregister_graph` forgets it; nothing is closed)."""
    source = graph if isinstance(graph, GraphSource) else EmbeddedSource(graph)
    if not isinstance(source, EmbeddedSource):
        raise ConfigurationError(
            f"graph: expected an EmbeddedGraph or EmbeddedSource to register, got "
            f"{type(graph).__name__} (give a Bolt graph by its URI)"
        )
    key = key or f"graph-{next(_KEYS)}"
    spec = GraphSpec(f"inprocess:{key}")
    with _REGISTRY_LOCK:
        if spec.uri in _HANDLES and _HANDLES[spec.uri].source is not source:
            raise ConfigurationError(f"graph: {spec.uri} is already registered for another graph")
        _HANDLES.setdefault(spec.uri, GraphHandle(spec.uri, source, owned=False))
    return spec


def unregister_graph(spec: GraphSpec) -> None:
    """Forgets a graph registered by :func:`register_graph` (idempotent)."""
    with _REGISTRY_LOCK:
        _HANDLES.pop(spec.uri, None)


def _open(spec: GraphSpec) -> GraphHandle:
    from memgraph_tf import client

    if spec.uri.startswith("inprocess:"):
        raise ConfigurationError(
            f"graph: {spec.uri} is not registered in this process (pid-local graphs only work on "
            f"runners that run workers in the launcher's process: the DirectRunner's in_memory or "
            f"multi_threading mode)"
        )
    if spec.uri.startswith("embedded:"):
        from memgraph_tf.cli import open_graph_source

        logger.info("loading %s into this worker process", spec.uri)
        return GraphHandle(
            spec.uri, open_graph_source(spec.uri), owned=False
        )  # kept for the process
    return GraphHandle(
        f"{spec.uri}|{spec.database}", client.connect(spec.uri, database=spec.database), owned=True
    )


def acquire(spec: GraphSpec) -> GraphHandle:
    """The process's handle for ``spec``, opened on first use (Bolt: one driver per process;
    ``embedded:``: one copy of the dataset per process). Pair with :func:`release`."""
    key = spec.uri if spec.in_process else f"{spec.uri}|{spec.database}"
    with _REGISTRY_LOCK:
        handle = _HANDLES.get(key)
        if handle is None:
            handle = _open(spec)
            _HANDLES[key] = handle
        handle.refs += 1
        return handle


def release(handle: GraphHandle) -> None:
    """Drops one reference; a Bolt driver is closed when its last user releases it. In-process
    graphs stay (they are the process's data)."""
    with _REGISTRY_LOCK:
        handle.refs -= 1
        if handle.refs <= 0 and handle._owned:
            _HANDLES.pop(handle.key, None)
            handle.close()


# ---------------------------------------------------------------------------------------- node table
Prediction = tuple[int, str, float]  # (node key, class label, score)


@dataclasses.dataclass(frozen=True)
class NodeSelection:
    """Which nodes a pipeline reads and writes: ``label`` (None: all), ``id_property`` (the node key;
    None: the internal id), ``where`` (Bolt: a parameterised Cypher predicate over ``n`` with
    ``where_params``, checked by :func:`memgraph_tf.client.batch.check_where`; embedded: a callable
    key -> bool), and the prediction properties: ``write_property`` P (P, P_score, P_version) and
    the model ``version``. ``version`` None reads every selected node (an export)."""

    label: str | None = None
    id_property: str | None = None
    where: str | Callable[[int], bool] | None = None
    where_params: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    write_property: str = "predicted_class"
    version: int | None = None

    def __post_init__(self) -> None:
        for name in property_names(self.write_property):
            _check_name(name, "write_property")
        for name, value in (("label", self.label), ("id_property", self.id_property)):
            if value is not None:
                _check_name(value, name)
        if isinstance(self.where, str):
            object.__setattr__(self, "where", check_where(self.where, self.where_params))
        elif self.where is not None and not callable(self.where):
            raise ConfigurationError(
                f"where: expected a Cypher predicate over n or a callable key -> "
                f"bool, got {type(self.where).__name__}"
            )
        elif self.where_params:
            raise ConfigurationError("where parameters: only with a Cypher where predicate")
        if self.version is not None and (
            not isinstance(self.version, int) or isinstance(self.version, bool)
        ):
            raise ConfigurationError(
                f"version: expected an integer model version, got {self.version!r}"
            )


def _check_name(name: Any, param: str) -> str:
    if not isinstance(name, str) or not name or "`" in name or "\x00" in name:
        raise ConfigurationError(
            f"{param}: expected a non-empty name without backquotes or NUL, got {name!r}"
        )
    return f"`{name}`"


class NodeTable:
    """Keys, key ranges and prediction writes over one open graph, for one :class:`NodeSelection`.

    Guarantees, for both Bolt and embedded graphs:

    * :meth:`bounds` and :meth:`page` see the same node set: the selected nodes whose key is an
      integer, and with ``todo`` only those whose ``P_version`` is not the selection's version;
    * :meth:`page` returns keys in ascending order, ``lo <= key < hi`` and ``key > after``, at most
      ``limit`` of them (keyset pagination: no SKIP);
    * :meth:`write` sets ``P``, ``P_score`` and ``P_version`` of each node in one statement and one
      transaction (Bolt) or under the graph's lock (embedded); with ``only_todo`` a node that
      already carries this version is left untouched, so writing a batch twice writes each node
      once. Returns the number of nodes written.
    """

    def __init__(self, handle: GraphHandle, selection: NodeSelection) -> None:
        self.handle = handle
        self.selection = selection
        self._props = property_names(selection.write_property)
        if handle.embedded:
            if isinstance(selection.where, str):
                raise ConfigurationError(
                    "where: the embedded graph runs no Cypher; expected a callable "
                    "node key -> bool (a Cypher predicate needs a Bolt graph)"
                )
        else:
            if not isinstance(handle.source, BoltSource):
                raise ConfigurationError(
                    f"graph: expected a Bolt or embedded source, got {type(handle.source).__name__}"
                )
            if selection.where is not None and not isinstance(selection.where, str):
                raise ConfigurationError(
                    "where: expected a Cypher predicate string over n for a Bolt "
                    "graph, got a callable"
                )
            s = selection
            self._node = f"(n:{_check_name(s.label, 'label')})" if s.label else "(n)"
            self._key = (
                f"n.{_check_name(s.id_property, 'id_property')}" if s.id_property else "id(n)"
            )
            cls, score, ver = (_check_name(p, "write_property") for p in self._props)
            self._ver = ver
            self._set = f"n.{cls} = r.c, n.{score} = r.s, n.{ver} = ${PARAM_PREFIX}version"
            self._conditions = [f"{self._key} IS NOT NULL"]
            if s.where is not None:
                self._conditions.append(f"({s.where})")
            self._params = {**s.where_params, f"{PARAM_PREFIX}version": s.version}

    # -- Bolt ------------------------------------------------------------------------------------
    def _cypher_where(self, todo: bool, extra: Sequence[str] = ()) -> str:
        conditions = list(self._conditions)
        if todo:
            conditions.append(f"(n.{self._ver} IS NULL OR n.{self._ver} <> ${PARAM_PREFIX}version)")
        return " AND ".join(conditions + list(extra))

    # -- embedded ----------------------------------------------------------------------------------
    def _wanted(self, key: int, internal: int, todo: bool) -> bool:
        where = self.selection.where
        if where is not None and not where(key):
            return False
        if todo:
            return (
                self.handle.source.graph.get_property(internal, self._props[2])
                != self.selection.version
            )
        return True

    def _check_todo(self, todo: bool) -> None:
        if todo and self.selection.version is None:
            raise ConfigurationError("todo: the selection has no model version to compare with")

    # -- operations --------------------------------------------------------------------------------
    def bounds(self, todo: bool) -> tuple[int, int] | None:
        """``(smallest key, largest key)`` of the selected nodes (with ``todo``: those without this
        version's prediction), or None when there are none."""
        self._check_todo(todo)
        if self.handle.embedded:
            s = self.selection
            keys, internal_of = self.handle.key_index(s.label, s.id_property)
            with self.handle.lock:
                wanted = [k for k in keys if self._wanted(k, internal_of[k], todo)]
            return (wanted[0], wanted[-1]) if wanted else None
        rows = self.handle.source.read(
            f"MATCH {self._node} WHERE {self._cypher_where(todo)} RETURN min({self._key}) AS lo, "
            f"max({self._key}) AS hi",
            self._params,
        )
        if not rows or rows[0]["lo"] is None:
            return None
        lo, hi = check_key_ids([rows[0]["lo"], rows[0]["hi"]], self._key)
        return lo, hi

    def page(self, lo: int, hi: int, after: int | None, limit: int, todo: bool) -> list[int]:
        """Up to ``limit`` keys with ``lo <= key < hi`` and ``key > after``, ascending."""
        self._check_todo(todo)
        if after is not None:
            lo = max(lo, after + 1)
        if lo >= hi:
            return []
        if self.handle.embedded:
            s = self.selection
            keys, internal_of = self.handle.key_index(s.label, s.id_property)
            out: list[int] = []
            with self.handle.lock:
                for i in range(bisect.bisect_left(keys, lo), len(keys)):
                    key = keys[i]
                    if key >= hi:
                        break
                    if self._wanted(key, internal_of[key], todo):
                        out.append(key)
                        if len(out) == limit:
                            break
            return out
        p = PARAM_PREFIX
        query = (
            f"MATCH {self._node} WHERE "
            f"{self._cypher_where(todo, [f'{self._key} >= ${p}lo', f'{self._key} < ${p}hi'])} "
            f"RETURN {self._key} AS id ORDER BY id LIMIT {int(limit)}"
        )
        rows = self.handle.source.read(query, {**self._params, f"{p}lo": lo, f"{p}hi": hi})
        return check_key_ids([row["id"] for row in rows], self._key)

    def write(self, predictions: Sequence[Prediction], *, only_todo: bool) -> int:
        """Writes ``(key, class, score)`` predictions with the selection's version (see the class
        docstring); returns the number of nodes written."""
        if self.selection.version is None:
            raise ConfigurationError("write: the selection has no model version to write")
        if not predictions:
            return 0
        if self.handle.embedded:
            return self._write_embedded(predictions, only_todo)
        rows = [{"id": nid, "c": label, "s": float(score)} for nid, label, score in predictions]
        guard = (
            f" AND (n.{self._ver} IS NULL OR n.{self._ver} <> ${PARAM_PREFIX}version)"
            if only_todo
            else ""
        )
        query = (
            f"UNWIND $rows AS r MATCH {self._node} WHERE {self._key} = r.id{guard} "
            f"SET {self._set} RETURN count(n) AS written"
        )
        result = self.handle.source.write(
            query, {"rows": rows, f"{PARAM_PREFIX}version": self.selection.version}
        )
        return int(result[0]["written"]) if result else 0

    def _write_embedded(self, predictions: Sequence[Prediction], only_todo: bool) -> int:
        s = self.selection
        _, internal_of = self.handle.key_index(s.label, s.id_property)
        graph = self.handle.source.graph
        cls, score, ver = self._props
        written = 0
        with self.handle.lock:
            for nid, label, value in predictions:
                internal = internal_of.get(nid)
                if internal is None:
                    continue
                if only_todo and graph.get_property(internal, ver) == s.version:
                    continue
                graph.set_property(internal, cls, label)
                graph.set_property(internal, score, float(value))
                graph.set_property(internal, ver, s.version)
                written += 1
        return written


__all__ = [
    "GraphHandle",
    "GraphSpec",
    "NodeSelection",
    "NodeTable",
    "acquire",
    "register_graph",
    "release",
    "unregister_graph",
]
