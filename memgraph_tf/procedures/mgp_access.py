"""The :class:`~memgraph_tf.procedures.access.GraphAccess` protocol over Memgraph's ``mgp`` API:
what the query module (inside Memgraph) and the embedded runtime run the procedures over.
"""

from __future__ import annotations

import functools
import itertools
import operator
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from memgraph_tf.procedures.access import (
    ABORT_CHECK_EVERY,
    NeighbourRead,
    is_int,
    node_name,
    require_int_id,
    stale_member,
)
from memgraph_tf.procedures.errors import (
    NodeNotFoundError,
    ProcedureInputError,
    PropertyValueError,
    describe_value,
)
from memgraph_tf.procedures.options import Options, SplitFilter

__all__ = ["MgpGraphAccess"]


# The calls on mgp.py's underlying ``_mgp`` vertex/edge handles that the fast path makes. mgp.py
# itself is written over exactly these (``Vertex.in_edges`` is ``self._vertex.iter_in_edges()``,
# ``get()``/``next()``, ``Edge.from_vertex`` is ``Vertex(self._edge.from_vertex())``, ``Vertex.id``
# is ``self._vertex.get_id()``, ``Properties.get`` is ``get_property``), from Memgraph's first
# Python API to 3.x and in PyPI ``mgp``.
_HANDLE_CALLS = ("get_id", "get_property", "iter_in_edges", "iter_out_edges")
_FROM_VERTEX = operator.methodcaller("from_vertex")
_TO_VERTEX = operator.methodcaller("to_vertex")
_GET_ID = operator.methodcaller("get_id")
_NOT_NONE = functools.partial(operator.is_not, None)
_NO_ARGS = itertools.repeat(())
_FEW_EDGES = 8
"""Edges of a node read one by one before the C-level loops take over (:meth:`_read_keys`)."""
_SIDES = {"out": (True,), "in": (False,), "both": (True, False)}
"""Per direction, which edge lists of a node a read walks, in order (True: the outgoing ones)."""


def _held_out(split: Any, held_out: SplitFilter) -> bool:
    """Whether a relationship whose ``held_out.property`` is ``split`` (None: missing) is held
    out (a relationship without the property is kept)."""
    return isinstance(split, str) and split in held_out.values


def _handle_of(vertex: Any) -> Any:
    """The ``_mgp`` handle an ``mgp.Vertex`` wraps, or None when this mgp.py keeps it elsewhere."""
    handle = getattr(vertex, "_vertex", None)
    if handle is None or not all(callable(getattr(handle, name, None)) for name in _HANDLE_CALLS):
        return None
    return handle


class _Vertices(dict):
    """Key -> vertex (an ``_mgp`` handle or an ``mgp.Vertex``). With ``lookup`` set (the handle path
    with internal ids as keys), a key not registered is fetched by ``lookup(key)`` (the ``_mgp``
    graph's ``get_vertex_by_id``) whenever asked for and not kept (a node's handle is asked for
    about twice per call; keeping thousands of handles alive only feeds the garbage collector), so
    neighbours need not be registered."""

    lookup: Any = None
    adopted: dict[int, int] | None = None
    """Key -> internal id of the nodes :meth:`MgpGraphAccess.adopt` registered, not fetched yet."""
    fetch: Any = None
    """``fetch(key, internal id)``: the vertex of an adopted key (set with :attr:`adopted`)."""

    def __missing__(self, key: int) -> Any:
        if self.adopted and key in self.adopted:
            vertex = self[key] = self.fetch(key, self.adopted.pop(key))
            return vertex
        if self.lookup is None:
            raise KeyError(key)
        return self.lookup(key)


class _Resumed:
    """An ``_mgp`` iterator read from its current item ``first`` on (``get()``, then ``next``
    until None), for :meth:`MgpGraphAccess._collect` of what is left of one."""

    __slots__ = ("first", "next")

    def __init__(self, first: Any, step: Any) -> None:
        self.first, self.next = first, step

    def get(self) -> Any:
        return self.first


class MgpGraphAccess:
    """:class:`~memgraph_tf.procedures.access.GraphAccess` over an ``mgp.ProcCtx`` (inside
    Memgraph or the embedded runtime).

    Keys are internal vertex ids, or the integer values of ``options.id_property`` (looked up among
    the vertices with ``options.label`` when given, else among all vertices).

    Neighbours and properties are read through the ``_mgp`` handles under mgp.py's ``Vertex`` and
    ``Edge`` objects (the *handle* path): per edge one ``from_vertex()``/``to_vertex()`` and one
    ``get_id()`` call, without the wrapper objects, validity checks and exception translation
    mgp.py adds around each of them (about 3x the cost per edge). That is safe here because every
    handle is used only during the call that produced it, which is what those checks guard. When
    the mgp.py in use does not expose the handles, or with ``handles=False``, the public mgp API is
    used instead (the *public* path); both give the same keys in the same order, the same errors
    and an abort check at least every :data:`ABORT_CHECK_EVERY` edges or nodes read.
    """

    def __init__(self, ctx: Any, options: Options, *, handles: bool = True) -> None:
        self._ctx = ctx
        self._graph = ctx.graph
        self._id_property = options.id_property
        self._label = options.label
        self._vertices = _Vertices()  # key -> _mgp handle (handle path) or mgp.Vertex
        self._adopted_names: dict[int, str] = {}  # adopted key -> how errors name it (adopt)
        self._index: dict[int, Any] | None = None
        self._budget = ABORT_CHECK_EVERY  # reads left until the next abort check
        self._handles: bool | None = None if handles else False  # None: decided by the first vertex

    # -- protocol -------------------------------------------------------------------------------
    def node_name(self, key: int) -> str:
        return node_name(key, self._id_property)

    def check_abort(self) -> None:
        self._ctx.check_must_abort()

    def properties(self, keys: Sequence[int], names: Sequence[str]) -> list[list[Any]]:
        vertices = self._vertices
        if not self._handles:
            out = []
            for key in keys:
                self._spend(1)
                props = vertices[key].properties
                out.append([props.get(name) for name in names])
            return out
        columns: list[list[Any]] = [[] for _ in names]
        getters = [operator.methodcaller("get_property", name) for name in names]
        for start in range(0, len(keys), ABORT_CHECK_EVERY):
            handles = list(map(self._handle_getter(), keys[start : start + ABORT_CHECK_EVERY]))
            for column, get in zip(columns, getters):
                column.extend(map(get, handles))
            self._spend(len(handles))
        if not names:
            return [[] for _ in keys]
        return list(map(list, zip(*columns)))

    def _handle_getter(self) -> Any:
        """key -> handle: the registered handle (the resolved nodes: no ``_mgp`` call), else,
        where keys are internal ids, the _mgp graph's ``get_vertex_by_id`` (one call, the handle
        not kept)."""
        return self._vertices.__getitem__

    def _spend(self, reads: int) -> None:
        """Counts ``reads`` (at most :data:`ABORT_CHECK_EVERY`) against the abort budget."""
        self._budget -= reads
        if self._budget <= 0:
            self._budget += ABORT_CHECK_EVERY
            self._ctx.check_must_abort()

    def neighbours(self, keys: Sequence[int], read: NeighbourRead) -> list[list[int]]:
        types = None if read.edge_types is None else frozenset(read.edge_types)
        if not self._handles:
            return [self._public_neighbours(key, types, read) for key in keys]
        if read.held_out is not None:
            return self._kept_neighbours(keys, types, read)
        if read.label is not None:
            return self._labelled_neighbours(keys, types, read.direction, read.label)
        return self._any_neighbours(keys, types, read.direction)

    def _any_neighbours(
        self, keys: Sequence[int], types: frozenset[str] | None, direction: str
    ) -> list[list[int]]:
        """:meth:`neighbours` without a label or a held-out split (the handle path)."""
        handles = list(map(self._handle_getter(), keys))
        outgoing = direction in ("out", "both")
        incoming = direction in ("in", "both")
        if (
            types is None and self._id_property is None
        ):  # the common case: one C-level pass per edge list
            out = []
            for handle in handles:
                row: list[int] = []
                if outgoing:
                    self._read_keys(handle.iter_out_edges(), _TO_VERTEX, row)
                if incoming:
                    self._read_keys(handle.iter_in_edges(), _FROM_VERTEX, row)
                out.append(row)
            return out
        sides = []  # per direction: (the other ends' handles, where each key's edges start and end)
        if outgoing:
            sides.append(self._other_ends(handles, True, types))
        if incoming:
            sides.append(self._other_ends(handles, False, types))
        if self._id_property is None:
            vertices = self._vertices
            found = []
            for others, bounds in sides:
                side_keys = list(map(_GET_ID, others))
                if vertices.lookup is None:
                    vertices.update(zip(side_keys, others))  # any handle of a vertex will do
                found.append([side_keys[lo:hi] for lo, hi in itertools.pairwise(bounds)])
            return found[0] if len(found) == 1 else [a + b for a, b in zip(*found)]
        out = []  # keys from the id property: registered key by key, out before in, as read
        for i in range(len(keys)):
            row: list[int] = []
            for others, bounds in sides:
                part = others[bounds[i] : bounds[i + 1]]
                row.extend(map(self._register_handle, part))
            out.append(row)
        return out

    def _read_keys(self, edges: Any, other_end: Any, row: list[int]) -> None:
        """Appends the key (internal id) of ``other_end(edge)`` for each edge of the ``_mgp``
        iterator ``edges`` to ``row``: C-level loops over repeated ``next()`` calls, in steps of at
        most the abort budget (a check every :data:`ABORT_CHECK_EVERY` edges), keeping no handle
        alive unless the vertices must be registered (no ``get_vertex_by_id`` to fetch them
        later); the first :data:`_FEW_EDGES` in a plain loop (cheaper for the many nodes with few
        edges than setting up those loops)."""
        before = len(row)
        edge = edges.get()
        if edge is None:
            return
        vertices = self._vertices
        if vertices.lookup is not None:  # most nodes have few edges: those in a plain loop
            step = edges.next
            append = row.append
            for _ in range(_FEW_EDGES):
                append(other_end(edge).get_id())
                edge = step()
                if edge is None:
                    self._spend(len(row) - before)
                    return
            self._spend(_FEW_EDGES)
        stream = itertools.chain(
            (edge,), itertools.takewhile(_NOT_NONE, itertools.starmap(edges.next, _NO_ARGS))
        )
        while True:
            budget = self._budget
            before = len(row)
            part = itertools.islice(stream, budget)
            if vertices.lookup is None:
                others = list(map(other_end, part))
                found = list(map(_GET_ID, others))
                vertices.update(zip(found, others))  # any handle of a vertex will do
                row.extend(found)
            else:
                row.extend(map(_GET_ID, map(other_end, part)))
            got = len(row) - before
            self._spend(got)
            if got < budget:  # the iterator ran out before the budget did
                return

    def _other_ends(
        self, handles: list[Any], outgoing: bool, types: frozenset[str] | None
    ) -> tuple[list[Any], list[int]]:
        """The handles at the other end of the ``outgoing`` (else incoming) edges of each of
        ``handles`` whose type is in ``types`` (None: any), concatenated, and the bounds of each
        handle's part: handle i's are ``[bounds[i]:bounds[i + 1]]``."""
        edges: list[Any] = []
        bounds = [0]
        for handle in handles:
            self._collect(handle.iter_out_edges() if outgoing else handle.iter_in_edges(), edges)
            bounds.append(len(edges))
        if types is not None:
            kept: list[Any] = []
            kept_bounds = [0]
            for lo, hi in itertools.pairwise(bounds):
                kept.extend(e for e in edges[lo:hi] if e.get_type_name() in types)
                kept_bounds.append(len(kept))
            edges, bounds = kept, kept_bounds
        return list(map(_TO_VERTEX if outgoing else _FROM_VERTEX, edges)), bounds

    def _collect(self, edges: Any, into: list[Any]) -> None:
        """Appends the edges of the ``_mgp`` iterator ``edges`` to ``into``: the first
        :data:`_FEW_EDGES` in a plain loop (most nodes have few edges), the rest with C-level
        loops (``takewhile(is not None)`` over repeated ``next()`` calls) in steps of at most the
        abort budget; checks for abort every :data:`ABORT_CHECK_EVERY` edges."""
        edge = edges.get()
        if edge is None:
            return
        step = edges.next
        for n in range(1, _FEW_EDGES + 1):
            into.append(edge)
            edge = step()
            if edge is None:
                self._spend(n)
                return
        self._spend(_FEW_EDGES)
        rest = itertools.chain(
            (edge,), itertools.takewhile(_NOT_NONE, itertools.starmap(step, _NO_ARGS))
        )
        while True:
            before = len(into)
            budget = self._budget
            into.extend(itertools.islice(rest, budget))
            self._spend(len(into) - before)
            if len(into) - before < budget:  # the iterator ran out before the budget did
                return

    def _public_neighbours(
        self, key: int, types: frozenset[str] | None, read: NeighbourRead
    ) -> list[int]:
        """:meth:`neighbours` of one key through the public mgp API (the public path);
        ``types``: ``read.edge_types`` as a set."""
        direction, label, held_out = read.direction, read.label, read.held_out
        vertex = self._vertices[key]
        found: list[int] = []
        for outgoing in _SIDES[direction]:
            for edge in vertex.out_edges if outgoing else vertex.in_edges:
                self._spend(1)
                if types is not None and edge.type.name not in types:
                    continue
                if held_out is not None and _held_out(
                    edge.properties.get(held_out.property), held_out
                ):
                    continue
                other = edge.to_vertex if outgoing else edge.from_vertex
                if label is None or any(lb.name == label for lb in other.labels):
                    found.append(self._register_handle(other))
        return found

    def adopt(
        self, keys: Sequence[int], internals: Sequence[int], names: Sequence[str] | None = None
    ) -> None:
        """Registers nodes met by internal id rather than over an edge (a reservoir's members:
        ``keys[i]`` is the key of the node with internal id ``internals[i]``). A key is fetched
        when first read; a node no longer in the graph, or (with ``options.id_property``) no
        longer holding its key, then raises :class:`NodeNotFoundError` naming it (``names[i]``,
        default :meth:`node_name`): the reservoir lags the graph."""
        vertices = self._vertices
        if vertices.adopted is None:
            vertices.adopted, vertices.fetch = {}, self._fetch_adopted
        adopted = vertices.adopted
        if names is None and len(keys) == len(internals):  # (the loop below, in C-level steps)
            fresh = dict(zip(reversed(keys), reversed(internals)))  # a key's first internal id
            for key in (fresh.keys() & vertices.keys()) | (fresh.keys() & adopted.keys()):
                del fresh[key]
            adopted.update(fresh)
            return
        for i, (key, internal) in enumerate(zip(keys, internals)):
            if key not in vertices and key not in vertices.adopted:
                vertices.adopted[key] = internal
                if names is not None:
                    self._adopted_names[key] = names[i]

    def _fetch_adopted(self, key: int, internal: int) -> Any:
        graph = getattr(self._graph, "_graph", None) if self._handles else None
        try:
            vertex = (graph or self._graph).get_vertex_by_id(internal)
        except IndexError:
            vertex = None
        if vertex is None or (self._id_property is not None and self._key_of(vertex) != key):
            name = self._adopted_names.get(key) or self.node_name(key)
            raise NodeNotFoundError(stale_member(name, internal))
        return vertex

    def present_relationships(
        self,
        keys: Sequence[int],
        read: NeighbourRead,
        wanted: Sequence[set[tuple[Any, int]]],
    ) -> list[set[tuple[Any, int]]]:
        """Edge by edge, through the ``_mgp`` handles or the public API, with the same abort
        checks as :meth:`neighbours`. A node's walk stops once its wanted pairs are all found:
        its sides (``both``: its outgoing, then its incoming relationships; the side that found
        the last node's first) one after the other, each side's first :data:`_FEW_EDGES` edges
        one by one (most nodes have few), the rest read in C-level steps (:meth:`_collect`)."""
        types = None if read.edge_types is None else frozenset(read.edge_types)
        sides = list(_SIDES[read.direction])
        vertices = self._vertices
        out: list[set[tuple[Any, int]]] = []
        for key, want in zip(keys, wanted):
            found: set[tuple[Any, int]] = set()
            need = len(want)
            if not need:
                out.append(found)
                continue
            vertex = vertices[key]
            for n, outgoing in enumerate(sides):
                if self._handles:
                    self._wanted_edges(vertex, outgoing, types, want, found)
                else:
                    found.update(self._public_ends(vertex, outgoing, types, want))
                if len(found) == need:
                    if n:  # (this side first for the next node)
                        sides.reverse()
                    break
            out.append(found)
        return out

    def _wanted_edges(
        self,
        vertex: Any,
        outgoing: bool,
        types: frozenset[str] | None,
        want: set[tuple[Any, int]],
        found: set[tuple[Any, int]],
    ) -> None:
        """Adds to ``found`` those of the ``(relationship id, other end's internal id)`` pairs
        ``want`` among the ``_mgp`` handle ``vertex``'s outgoing (else incoming) relationships of
        ``types`` (None: any), until ``found`` holds as many as ``want``."""
        edges = vertex.iter_out_edges() if outgoing else vertex.iter_in_edges()
        end = _TO_VERTEX if outgoing else _FROM_VERTEX
        edge = edges.get()
        walked = 0
        while edge is not None and walked < _FEW_EDGES:
            walked += 1
            if types is None or edge.get_type_name() in types:
                pair = (edge.get_id(), end(edge).get_id())
                if pair in want:
                    found.add(pair)
                    if len(found) == len(want):
                        break
            edge = edges.next()
        self._spend(walked)
        if edge is None or len(found) == len(want):
            return
        rest: list[Any] = []  # (edge is the next one to read: collected from it on)
        self._collect(_Resumed(edge, edges.next), rest)
        if types is not None:
            rest = [e for e in rest if e.get_type_name() in types]
        found.update(want.intersection(zip(map(_GET_ID, rest), map(_GET_ID, map(end, rest)))))

    def _public_ends(
        self, vertex: Any, outgoing: bool, types: frozenset[str] | None, want: set
    ) -> set[tuple[Any, int]]:
        """Those of the ``(relationship id, other end's internal id)`` pairs ``want`` among the
        ``mgp.Vertex`` ``vertex``'s outgoing (else incoming) relationships of ``types`` (None:
        any)."""
        public = list(vertex.out_edges if outgoing else vertex.in_edges)
        self._spend(len(public))
        return want.intersection(
            (e.id, (e.to_vertex if outgoing else e.from_vertex).id)
            for e in public
            if types is None or e.type.name in types
        )

    # -- keys of vertices -----------------------------------------------------------------------
    def _key_of(self, vertex: Any) -> int:
        """The key of a handle (handle path) or an mgp.Vertex (public path)."""
        if self._handles:
            if self._id_property is None:
                return vertex.get_id()
            value = vertex.get_property(self._id_property)
        else:
            if self._id_property is None:
                return vertex.id
            value = vertex.properties.get(self._id_property)
        return require_int_id(value, f"node {self._internal_id(vertex)}", self._id_property)

    def _internal_id(self, vertex: Any) -> int:
        return vertex.get_id() if self._handles else vertex.id

    def _register(self, vertex: Any) -> int:
        """Registers an ``mgp.Vertex`` (from the arguments or the public API) and returns its
        key."""
        if self._handles is None:
            self._handles = _handle_of(vertex) is not None
            graph = getattr(self._graph, "_graph", None)  # the _mgp graph under mgp.Graph
            if (
                self._handles
                and self._id_property is None
                and callable(getattr(graph, "get_vertex_by_id", None))
            ):
                self._vertices.lookup = graph.get_vertex_by_id
        return self._register_handle(_handle_of(vertex) if self._handles else vertex)

    def _register_handle(self, vertex: Any) -> int:
        """Registers a vertex in the form the path in use keeps (see :meth:`_key_of`)."""
        key = self._key_of(vertex)
        seen = self._vertices.get(key)
        if seen is None:
            self._vertices[key] = vertex
        elif self._id_property is not None and self._internal_id(seen) != self._internal_id(vertex):
            raise ProcedureInputError(
                f"options.id_property: expected unique ids, got {self._id_property} = {key} on the "
                f"nodes with internal ids {self._internal_id(seen)} and {self._internal_id(vertex)}"
            )
        return key

    # -- resolution -----------------------------------------------------------------------------
    def _build_index(self) -> dict[int, Any]:
        """``options.id_property`` value -> vertex, over the vertices (with ``options.label``) that
        have one, in graph order; raises naming the node for a value that is not an integer or
        one held by two nodes.

        Built once per call: ``_mgp`` gives no sign that the graph changed between calls (a
        cache across calls could hand out a node whose id was changed or miss a duplicate), so
        the scan is made cheap instead: over the ``_mgp`` graph's vertex handles with C-level
        loops reading only the id property (labels only of the nodes that have one), the public
        mgp API where the handles are not there."""
        graph = getattr(self._graph, "_graph", None)  # the _mgp graph under mgp.Graph
        if self._handles is False or not callable(getattr(graph, "iter_vertices", None)):
            return self._index_entries(
                self._graph.vertices,
                lambda v: v.properties.get(self._id_property),
                lambda v: v.id,
                self._public_has_label,
            )
        vertices = graph.iter_vertices()
        first = vertices.get()
        if first is None:
            return {}
        stream = itertools.chain(
            (first,), itertools.takewhile(_NOT_NONE, itertools.starmap(vertices.next, _NO_ARGS))
        )
        get_id_value = operator.methodcaller("get_property", self._id_property)

        def with_ids() -> Iterator[
            tuple[Any, Any]
        ]:  # (handle, id value) of the handles with a value
            while True:
                chunk = list(itertools.islice(stream, ABORT_CHECK_EVERY))
                if not chunk:
                    return
                self._ctx.check_must_abort()
                values = list(map(get_id_value, chunk))
                yield from itertools.compress(
                    zip(chunk, values), map(operator.is_not, values, itertools.repeat(None))
                )

        self._handles = True
        return self._index_entries(with_ids(), None, _GET_ID, self._handle_has_label, checked=False)

    def _handle_has_label(self, handle: Any) -> bool:
        label = self._label
        return any(handle.label_at(i) == label for i in range(handle.labels_count()))

    def _public_has_label(self, vertex: Any) -> bool:
        return any(label.name == self._label for label in vertex.labels)

    def _index_entries(
        self,
        items: Iterable[Any],
        value_of: Any,
        internal_id: Any,
        has_label: Any,
        checked: bool = True,
    ) -> dict[int, Any]:
        """The index over ``items``: vertices (``value_of`` reads the id value; an abort check every
        :data:`ABORT_CHECK_EVERY`), or with ``checked=False`` (vertex, id value) pairs of the
        vertices that have one (the caller checks for abort)."""
        index: dict[int, Any] = {}
        for i, item in enumerate(items):
            if checked:
                if i % ABORT_CHECK_EVERY == 0:
                    self._ctx.check_must_abort()
                vertex, value = item, value_of(item)
                if value is None:
                    continue
            else:
                vertex, value = item
            if self._label is not None and not has_label(vertex):
                continue
            if not is_int(value):
                raise PropertyValueError(
                    f"node {internal_id(vertex)} property {self._id_property!r} "
                    f"(options.id_property): expected an integer id, got {describe_value(value)}"
                )
            if value in index:
                raise ProcedureInputError(
                    f"options.id_property: expected unique ids, got {self._id_property} = {value} "
                    f"on the nodes with internal ids {internal_id(index[value])} and "
                    f"{internal_id(vertex)}"
                )
            index[value] = vertex
        return index

    def resolve(self, nodes: Any, param: str) -> list[int]:
        """Turns a list of vertices or integer ids into keys; raises naming ``param[i]`` at fault.

        Guarantees: the keys are in input order (duplicates kept) and every key can be passed to
        :meth:`properties` and :meth:`neighbours`.
        """
        if not isinstance(nodes, (list, tuple)):
            raise ProcedureInputError(
                f"{param}: expected a list of nodes or integer ids, got {describe_value(nodes)}"
            )
        if not nodes:
            raise ProcedureInputError(
                f"{param}: expected at least one node or id, got an empty list"
            )
        keys = []
        for i, node in enumerate(nodes):
            if i % ABORT_CHECK_EVERY == 0:
                self._ctx.check_must_abort()
            if is_int(node):
                keys.append(self._resolve_id(node, f"{param}[{i}]"))
            elif hasattr(node, "properties") and hasattr(node, "out_edges"):
                keys.append(self._register(node))
            else:
                raise ProcedureInputError(
                    f"{param}[{i}]: expected a node or an integer id, got {describe_value(node)}"
                )
        return keys

    def _resolve_id(self, node_id: int, where: str) -> int:
        if self._id_property is None:
            if node_id not in self._vertices:
                lookup = self._vertices.lookup  # the _mgp graph's, once the handles are known
                try:
                    vertex = (lookup or self._graph.get_vertex_by_id)(node_id)
                except IndexError:
                    raise NodeNotFoundError(
                        f"{where}: unknown node id {node_id} (no node has that internal id)"
                    ) from None
                if lookup is None:
                    self._register(vertex)
                else:  # a handle found by its internal id: that id is its key
                    self._vertices[node_id] = vertex
            return node_id
        if self._index is None:
            self._index = self._build_index()
        vertex = self._index.get(node_id)
        if vertex is None:
            scope = f":{self._label} node" if self._label else "node"
            raise NodeNotFoundError(
                f"{where}: unknown node id {node_id} (no {scope} has {self._id_property} = "
                f"{node_id})"
            )
        return self._register_handle(vertex) if self._handles else self._register(vertex)

    # -- inspection (tf_features.describe) ------------------------------------------------------
    def _labelled(self) -> Iterator[Any]:
        """The vertices with ``options.label`` (all without it), in graph order, checking for
        abort."""
        for vertex in self._scan():
            if self._label is None or any(label.name == self._label for label in vertex.labels):
                yield vertex

    def first_node_with(self, names: Sequence[str]) -> int | None:
        """The key of the first vertex (in graph order, with ``options.label`` if set) having all
        ``names`` and, with ``options.id_property``, an id (a node pack/sample can be asked for by
        id); None when there is none."""
        required = list(names) + ([self._id_property] if self._id_property is not None else [])
        for vertex in self._labelled():
            props = vertex.properties
            if all(props.get(name) is not None for name in required):
                return self._register(vertex)
        return None

    def label_values(self, name: str) -> Iterator[tuple[Any, int]]:
        """``(value, internal id)`` of property ``name`` on every vertex (with ``options.label``)
        that has it, in graph order."""
        for vertex in self._labelled():
            value = vertex.properties.get(name)
            if value is not None:
                yield value, vertex.id

    # -- typed reads ----------------------------------------------------------------------------
    def internal_ids(self, keys: Sequence[int]) -> list[int]:
        """The internal id of the node each of ``keys`` (resolved or met in this call) stands
        for."""
        if self._id_property is None:
            return list(keys)
        return [self._internal_id(self._vertices[key]) for key in keys]

    def has_label(self, keys: Sequence[int], label: str) -> list[bool]:
        """Per key, whether its node has ``label``."""
        if not self._handles:
            return [any(lb.name == label for lb in self._vertices[k].labels) for k in keys]
        get = self._handle_getter()
        return [_handle_label_is(get(key), label) for key in keys]

    def _labelled_neighbours(
        self, keys: Sequence[int], types: frozenset[str] | None, direction: str, label: str
    ) -> list[list[int]]:
        """:meth:`neighbours` of the ``label`` nodes only (the typed samplers' steps; the handle
        path); the same abort checks."""
        handles = list(map(self._handle_getter(), keys))
        is_labelled: dict[int, bool] = {}  # internal id -> has the label (fixed during a call)
        out: list[list[int]] = [[] for _ in keys]
        for outgoing in _SIDES[direction]:
            others, bounds = self._other_ends(handles, outgoing, types)
            for i, (lo, hi) in enumerate(itertools.pairwise(bounds)):
                row = out[i]
                for other in others[lo:hi]:
                    key = self._labelled_key(other, label, is_labelled)
                    if key is not None:
                        row.append(key)
        return out

    def _labelled_key(self, other: Any, label: str, labelled: dict[int, bool]) -> int | None:
        """The key of the vertex handle ``other`` (registered, or remembered as its vertex's
        handle) when it has ``label``, else None; ``labelled`` (internal id -> has the label)
        caches the label checks of one call."""
        internal = other.get_id()
        ok = labelled.get(internal)
        if ok is None:
            ok = labelled[internal] = _handle_label_is(other, label)
        if not ok:
            return None
        if self._id_property is not None:
            return self._register_handle(other)
        if self._vertices.lookup is None:
            self._vertices[internal] = other  # any handle of a vertex will do
        return internal

    def _kept_neighbours(
        self, keys: Sequence[int], types: frozenset[str] | None, read: NeighbourRead
    ) -> list[list[int]]:
        """:meth:`neighbours` over only the relationships whose ``read.held_out.property`` is not
        one of ``read.held_out.values`` (a relationship without it is kept): the samplers'
        ``options.exclude_splits`` (the handle path); ``types``: ``read.edge_types`` as a set."""
        label, held_out = read.label, read.held_out
        out: list[list[int]] = []
        for key in keys:
            row: list[int] = []
            vertex = self._vertices[key]
            for outgoing in _SIDES[read.direction]:
                edges: list[Any] = []
                self._collect(
                    vertex.iter_out_edges() if outgoing else vertex.iter_in_edges(), edges
                )
                for edge in edges:
                    if types is not None and edge.get_type_name() not in types:
                        continue
                    if _held_out(edge.get_property(held_out.property), held_out):
                        continue
                    other = edge.to_vertex() if outgoing else edge.from_vertex()
                    if label is None or _handle_label_is(other, label):
                        row.append(self._register_handle(other))
            out.append(row)
        return out

    def valued_neighbours(
        self,
        keys: Sequence[int],
        step: Any,
        held_out: SplitFilter | None = None,
        names: Sequence[str] | None = None,
    ) -> list[list[tuple[int, Any, Any, bool]]]:
        """Edge by edge, through the ``_mgp`` handles or the public API (whichever path the
        call is on), with the same abort checks as :meth:`neighbours`."""
        out: list[list[tuple[int, Any, Any, bool]]] = []
        labelled: dict[int, bool] = {}
        names = None if names is None else tuple(names)
        for key in keys:
            row: list[tuple[int, Any, Any, bool]] = []
            vertex = self._vertices[key]
            for outgoing in _SIDES[step.direction]:
                if self._handles:
                    row += self._weighted_handles(vertex, outgoing, step, held_out, labelled, names)
                else:
                    row += self._weighted_public(vertex, outgoing, step, held_out, names)
            out.append(row)
        return out

    def _weighted_handles(
        self,
        handle: Any,
        outgoing: bool,
        step: Any,
        held_out: SplitFilter | None,
        labelled: dict[int, bool],
        names: tuple[str, ...] | None,
    ) -> list[tuple[int, Any, Any, bool]]:
        """The handle path's part of :meth:`valued_neighbours`: the entries of the ``outgoing``
        (else incoming) edges of the vertex ``handle`` (``labelled``: internal id -> has the
        step's right label, shared by the call's reads), each with the step's property or (with
        ``names``) the tuple of those properties' values."""
        edges: list[Any] = []
        self._collect(handle.iter_out_edges() if outgoing else handle.iter_in_edges(), edges)
        rel_type, weight, label = step.rel_type, step.relationship_property, step.right
        found = []
        for edge in edges:
            if edge.get_type_name() != rel_type:
                continue
            if held_out is not None and _held_out(edge.get_property(held_out.property), held_out):
                continue
            other = edge.to_vertex() if outgoing else edge.from_vertex()
            key = self._labelled_key(other, label, labelled)
            if key is not None:
                if names is None:
                    value = edge.get_property(weight)
                else:
                    value = tuple(edge.get_property(n) for n in names)
                found.append((key, value, edge.get_id(), outgoing))
        return found

    def _weighted_public(
        self,
        vertex: Any,
        outgoing: bool,
        step: Any,
        held_out: SplitFilter | None,
        names: tuple[str, ...] | None,
    ) -> list[tuple[int, Any, Any, bool]]:
        """The public path's part of :meth:`valued_neighbours` (see :meth:`_weighted_handles`)."""
        edges = list(vertex.out_edges if outgoing else vertex.in_edges)
        self._spend(len(edges))
        found = []
        for edge in edges:
            if edge.type.name != step.rel_type:
                continue
            props = edge.properties
            if held_out is not None and _held_out(props.get(held_out.property), held_out):
                continue
            other = edge.to_vertex if outgoing else edge.from_vertex
            if any(lb.name == step.right for lb in other.labels):
                if names is None:
                    value = props.get(step.relationship_property)
                else:
                    value = tuple(props.get(n) for n in names)
                found.append((self._register_handle(other), value, edge.id, outgoing))
        return found

    # -- metagraph scans (tf_features.schema, sample_typed, sample_pairs) -----------------------
    def _scan(self) -> Iterator[Any]:
        """Every vertex, in graph order, through the public mgp API, with an abort check every
        :data:`ABORT_CHECK_EVERY` vertices."""
        for i, vertex in enumerate(self._graph.vertices):
            if i % ABORT_CHECK_EVERY == 0:
                self._ctx.check_must_abort()
            yield vertex

    def label_nodes(self, label: str) -> list[int]:
        return [v.id for v in self._scan() if any(lb.name == label for lb in v.labels)]

    def label_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for vertex in self._scan():
            for lb in vertex.labels:
                counts[lb.name] = counts.get(lb.name, 0) + 1
        return counts

    def triples(self) -> dict[tuple[str, str, str], int]:
        counts: dict[tuple[str, str, str], int] = {}
        for vertex in self._scan():
            sources = [lb.name for lb in vertex.labels]
            for edge in vertex.out_edges:
                rel = edge.type.name
                for target in (lb.name for lb in edge.to_vertex.labels):
                    for source in sources:
                        key = (source, rel, target)
                        counts[key] = counts.get(key, 0) + 1
        return counts

    def has_triple(self, source: str, rel_type: str, target: str) -> bool:
        for vertex in self._scan():
            if not any(lb.name == source for lb in vertex.labels):
                continue
            for edge in vertex.out_edges:
                if edge.type.name == rel_type and any(
                    lb.name == target for lb in edge.to_vertex.labels
                ):
                    return True
        return False

    # -- the relationships of an edge step (tf_features.split_edges) ----------------------------
    def relationships(self, step: Any) -> list[tuple[Any, int, int]]:
        """Through the public ``mgp`` API: the handles are ``mgp.Edge`` objects (a write
        procedure's context can set their properties)."""
        seen: set[int] = set()
        out: list[tuple[Any, int, int]] = []
        outgoing = step.direction in ("out", "both")
        incoming = step.direction in ("in", "both")
        for vertex in self._scan():
            if not any(lb.name == step.left for lb in vertex.labels):
                continue
            sides = ([(vertex.out_edges, "to_vertex")] if outgoing else []) + (
                [(vertex.in_edges, "from_vertex")] if incoming else []
            )
            for edges, end in sides:
                for edge in edges:
                    if edge.type.name != step.rel_type or edge.id in seen:
                        continue
                    other = getattr(edge, end)
                    if any(lb.name == step.right for lb in other.labels):
                        seen.add(edge.id)
                        out.append((edge, vertex.id, other.id))
        return out

    def relationship_values(self, handles: Sequence[Any], name: str) -> list[Any]:
        out = []
        for i, edge in enumerate(handles):
            if i % ABORT_CHECK_EVERY == 0:
                self._ctx.check_must_abort()
            out.append(edge.properties.get(name))
        return out

    def write_splits(self, rows: Sequence[tuple[Any, str]], name: str) -> None:
        for i, (edge, value) in enumerate(rows):
            if i % ABORT_CHECK_EVERY == 0:
                self._ctx.check_must_abort()
            edge.properties.set(name, value)

    def write_node_values(self, rows: Sequence[tuple[int, Any]], name: str) -> None:
        """Through the public ``mgp`` API (``get_vertex_by_id``, a write procedure's context)."""
        for i, (internal, value) in enumerate(rows):
            if i % ABORT_CHECK_EVERY == 0:
                self._ctx.check_must_abort()
            self._graph.get_vertex_by_id(internal).properties.set(name, value)


def _handle_label_is(handle: Any, label: str) -> bool:
    """Whether the ``_mgp`` vertex handle has ``label``."""
    return any(handle.label_at(i) == label for i in range(handle.labels_count()))
