"""Graph access for Beam workers: a picklable :class:`GraphSpec` that each worker opens itself, and
the process's open graphs (:class:`GraphHandle`, :func:`acquire` / :func:`release`). No Beam
import here; node selection, keyset paging and write-back are the client's
(:class:`~memgraph_tf.client.node_tables.NodeTable`, the same as ``memgraph-tf classify``'s).

A live graph source cannot travel inside a pipeline (``BoltSource`` refuses to be pickled, and its
credentials must not end up in a job graph), so transforms carry a :class:`GraphSpec` -- a URI and
a database name, never a password -- and open it on the worker:

* ``bolt://`` / ``neo4j://`` (``+s``, ``+ssc``) and ``embedded:NAME`` / ``embedded:DIR/NAME``:
  :func:`memgraph_tf.client.open_graph`. Bolt: the user name and password come from
  ``MEMGRAPH_TF_USER`` / ``MEMGRAPH_TF_PASSWORD`` **on the worker**; Memgraph with the
  ``tf_features`` modules, or any Bolt server through the client-side fallback; one driver per
  worker process, shared by its threads. Embedded: the dataset loaded into an in-process graph,
  once per process; each worker process has its own copy, so writes to it are only visible to a
  launcher that shares the worker's process (the DirectRunner's ``in_memory`` and
  ``multi_threading`` modes).
* ``inprocess:KEY``: a graph or source registered by :func:`register_graph` in this process (tests,
  notebooks); only for runners that run workers in the launcher's process.

Embedded graphs are not safe for concurrent use: every read, sample and write a pipeline makes on
one holds the source's lock (:attr:`GraphHandle.lock`, which is
:attr:`memgraph_tf.client.GraphSource.lock`).
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import threading
from typing import Any

from memgraph_tf.client.node_tables import NodeSelection, NodeTable, key_index
from memgraph_tf.client.sources import EMBEDDED_SCHEME, EmbeddedSource, GraphSource, open_graph
from memgraph_tf.errors import ConfigurationError

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
    :class:`~memgraph_tf.client.GraphSource`), its :attr:`lock`, and :meth:`table`, the client's
    :class:`~memgraph_tf.client.node_tables.NodeTable` over it with the embedded key index read once
    per process."""

    def __init__(self, key: str, source: GraphSource, *, owned: bool) -> None:
        self.key = key
        self.source = source
        self.embedded = isinstance(source, EmbeddedSource)
        self.refs = 0
        self._owned = owned
        self._key_index: dict[tuple, tuple[list[int], dict[int, int]]] = {}

    @property
    def lock(self) -> Any:
        """The source's lock (:attr:`memgraph_tf.client.GraphSource.lock`): an ``RLock`` for an
        embedded graph, which every read, sample and write holds; a no-op for Bolt."""
        return self.source.lock

    def key_index(
        self, label: str | None, id_property: str | None
    ) -> tuple[list[int], dict[int, int]]:
        """Embedded graphs: :func:`memgraph_tf.client.node_tables.key_index` of ``(label,
        id_property)``, read once per process and cached."""
        cache_key = (label, id_property)
        with self.lock:
            found = self._key_index.get(cache_key)
            if found is None:
                found = self._key_index[cache_key] = key_index(self.source, label, id_property)
            return found

    def table(self, selection: NodeSelection) -> NodeTable:
        """The :class:`~memgraph_tf.client.node_tables.NodeTable` of ``selection`` over this
        graph."""
        index = self.key_index(selection.label, selection.id_property) if self.embedded else None
        return NodeTable(self.source, selection, index=index)

    def close(self) -> None:
        if self._owned:
            self.source.close()


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
    if spec.uri.startswith("inprocess:"):
        raise ConfigurationError(
            f"graph: {spec.uri} is not registered in this process (pid-local graphs only work on "
            f"runners that run workers in the launcher's process: the DirectRunner's in_memory or "
            f"multi_threading mode)"
        )
    if spec.uri.startswith(EMBEDDED_SCHEME):
        logger.info("loading %s into this worker process", spec.uri)
        # kept for the life of the process: it is the process's data
        return GraphHandle(spec.uri, open_graph(spec.uri), owned=False)
    return GraphHandle(
        f"{spec.uri}|{spec.database}", open_graph(spec.uri, database=spec.database), owned=True
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
