"""A working ``_mgp`` over an in-memory graph, so Memgraph's real ``mgp.py`` runs query modules.

PyPI's ``mgp`` package ships Memgraph's real Python API layer ``mgp.py`` but only an empty stub of
the C extension ``_mgp`` it is built on. This module is that extension, written from what ``mgp.py``
uses, over a plain in-memory property graph (:class:`Store`). It is **stdlib-only** and needs no
other module of the library than ``memgraph_tf.errors`` (stdlib-only too, and shipped with the
helper package ``install-modules`` writes), so it may be copied as ``_mgp.py`` next to ``mgp.py``
wherever that helper package is importable: :func:`activate` makes it the ``_mgp`` that
``import mgp`` binds to, :class:`Runtime` loads query-module files the way Memgraph does (the file's
directory appended to ``sys.path``, the module imported under the file's stem; its
``@mgp.read_proc`` functions register on ``_MODULE`` while it loads) and calls procedures
converting values the way Memgraph does. It has every ``_mgp`` name Memgraph 3.x's ``mgp.py`` uses
(zoned date-time, point and enum types, ``Utils``, ``Graph.get_start_timestamp``, ``Path.pop``,
``set_properties``, batched procedures), so that ``mgp.py`` runs on it too:

* arguments must be Cypher values (null, bool, int64, float, str, list, map with str keys, nodes,
  relationships, paths, temporal values) satisfying the declared types, else
  :class:`ArgumentTypeError`;
* results must be ``mgp.Record`` objects with exactly the declared fields whose values convert
  (Memgraph's ``PyObjectToMgpValue``: ``bytes``, numpy scalars and arrays fail with "Unsupported
  PyObject conversion") and satisfy the declared types, else :class:`ResultConversionError`;
* an exception raised by the procedure becomes :class:`ProcedureError` naming the procedure;
* graph objects handed to a call are invalid after it, and refuse ``pickle`` and ``copy``; read
  procedures see an immutable graph; a write procedure's changes are undone when its call fails.
"""

from __future__ import annotations

import datetime
import functools
import importlib
import importlib.machinery
import importlib.util
import itertools
import logging
import operator
import os
import pathlib
import re
import sys
import time
import traceback
import types
from collections.abc import Callable, Iterable
from typing import Any, ClassVar

from memgraph_tf.errors import MemgraphTfError

logger = logging.getLogger(__name__)

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1

# ------------------------------------------------------------------------------------------------
# Errors of the C API (mgp.py subclasses each of them)
# ------------------------------------------------------------------------------------------------
# They stand in for the errors of Memgraph's C extension and derive from Exception as those do (not
# from MemgraphTfError): mgp.py subclasses and translates them, and a query module must see the same
# errors here as in Memgraph.


class UnknownError(Exception):
    pass


class UnableToAllocateError(Exception):
    pass


class InsufficientBufferError(Exception):
    pass


class OutOfRangeError(Exception):
    pass


class LogicErrorError(Exception):
    pass


class DeletedObjectError(Exception):
    pass


class InvalidArgumentError(Exception):
    pass


class KeyAlreadyExistsError(Exception):
    pass


class ImmutableObjectError(Exception):
    pass


class ValueConversionError(Exception):
    pass


class SerializationError(Exception):
    pass


class AuthorizationError(Exception):
    pass


# Memgraph's C extension defines them in the module ``_mgp``: a traceback names them ``_mgp.X``.
for _error in (
    UnknownError,
    UnableToAllocateError,
    InsufficientBufferError,
    OutOfRangeError,
    LogicErrorError,
    DeletedObjectError,
    InvalidArgumentError,
    KeyAlreadyExistsError,
    ImmutableObjectError,
    ValueConversionError,
    SerializationError,
    AuthorizationError,
):
    _error.__module__ = "_mgp"


# Errors of the runtime itself (what a Cypher client would see as a failed query).


class EmbeddedError(MemgraphTfError):
    """Base class of the errors :meth:`Runtime.call` raises."""


class ProcedureNotFoundError(EmbeddedError, LookupError):
    """No loaded module has a procedure of that name."""


class ArgumentTypeError(EmbeddedError, TypeError):
    """A call's arguments do not match the procedure's signature (count, Cypher value or type)."""


class ProcedureError(EmbeddedError, RuntimeError):
    """The procedure raised: the message is the text Memgraph sends a Bolt client, ``"<module.proc>:
    "`` followed by :func:`traceback.format_exception` of the exception without the ``mgp.py``
    wrapper frame (chained exceptions included), so its last line is ``module.Class: message``.
    The procedure's own exception is the ``__cause__``; ``procedure`` is the qualified name."""

    def __init__(self, message: str, procedure: str = "") -> None:
        super().__init__(message)
        self.procedure = procedure


class ResultConversionError(ProcedureError, TypeError):
    """A procedure returned something Memgraph cannot convert or did not declare; the message is
    the text Memgraph sends (``"<module.proc>: "`` + ``ExcType: text``), with where (record,
    field) in parentheses."""


_THIS_FILE = __file__


def traceback_text(exc: BaseException) -> str:
    """Memgraph's text of an exception a procedure raised (``src/py/py.hpp``
    ``FormatException(exc_info, skip_first_line=true)``).

    Memgraph calls the ``mgp.py`` wrapper from C, so the exception's traceback starts at that
    wrapper and its first entry is dropped. Here the call starts in this module: its frames are
    skipped first, and frames of this module (Memgraph's C ``_mgp`` has none) are left out of every
    traceback in the chain."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename == _THIS_FILE:
        tb = tb.tb_next
    if tb is not None:  # the mgp.py wrapper
        tb = tb.tb_next
    te = traceback.TracebackException(type(exc), exc, tb, compact=True)
    seen: set[int] = set()
    todo = [te]
    while todo:
        one = todo.pop()
        if id(one) in seen:
            continue
        seen.add(id(one))
        one.stack = traceback.StackSummary.from_list(
            [f for f in one.stack if f.filename != _THIS_FILE]
        )
        todo.extend(x for x in (one.__cause__, one.__context__) if x is not None)
    return "".join(te.format())


def memgraph_error_text(procedure: str, exc: BaseException) -> str:
    """The message Memgraph sends when ``procedure`` raised ``exc``: :func:`traceback_text`
    prefixed with ``"<procedure>: "`` by ``plan/operator.cpp`` ``CallProcedureCursor``."""
    return f"{procedure}: " + traceback_text(exc)


# ------------------------------------------------------------------------------------------------
# The in-memory graph
# ------------------------------------------------------------------------------------------------


class Store:
    """Vertices and edges with labels, types and properties. Ids are dense ints from 0."""

    def __init__(self) -> None:
        self.labels: list[list[str]] = []
        self.vprops: list[dict[str, Any]] = []
        self.out_edges: list[list[int]] = []
        self.in_edges: list[list[int]] = []
        self.etype: list[str] = []
        self.esrc: list[int] = []
        self.edst: list[int] = []
        self.eprops: list[dict[str, Any] | None] = []
        # (label, property) -> number value -> vertex ids: what lookup() reads; kept up to date by
        # add_vertex, dropped by changed() (a write to a label, or to that property)
        self._indexes: dict[tuple[str | None, str], dict[Any, list[int]]] = {}
        # while a write procedure runs: how to undo each change it made, in order
        self._undo: list[Callable[[], None]] | None = None
        # the vector indexes kept in step with the vertices (``vector_index.VectorIndexes``):
        # ``check_property(vid, key, value)`` and ``check_labels(vid, labels)`` raise for what
        # Memgraph refuses and return the update to run after the write; ``resync()``
        self.vector_indexes: Any = None

    def begin(self) -> None:
        """Starts journaling changes, as the transaction a write procedure runs in."""
        self._undo = []

    def commit(self) -> None:
        """Keeps the changes made since :meth:`begin`."""
        self._undo = None

    def rollback(self) -> None:
        """Undoes every change made since :meth:`begin` (Memgraph aborts the transaction of a
        query whose procedure failed), newest first; the lookup indexes are dropped."""
        undo, self._undo = self._undo, None
        for action in reversed(undo or ()):
            action()
        self.changed()
        if self.vector_indexes is not None:
            self.vector_indexes.resync()

    def _journal(self, action: Callable[[], None]) -> None:
        if self._undo is not None:
            self._undo.append(action)

    def changed(self, name: str | None = None) -> None:
        """Drops the lookup indexes on property ``name`` (None: all of them): called by every
        write to a property (a vertex's or an edge's: the latter drops one needlessly) and to a
        vertex's labels."""
        if name is None:
            self._indexes.clear()
        else:
            for key in [k for k in self._indexes if k[1] == name]:
                del self._indexes[key]

    def lookup(self, label: str | None, name: str, value: Any) -> list[int]:
        """The ids (ascending) of the vertices with ``label`` (any vertex when None) whose
        property ``name`` equals the number ``value`` as Cypher's ``=`` compares numbers (an
        integer equals the float of the same value; a bool is no number: Memgraph's
        ``operator==`` in ``src/query/typed_value.cpp``): ``MATCH (n:label) WHERE n.name =
        value``, through an index of ``(label, name)`` built on first use (Memgraph's
        label-property index, ``CREATE INDEX ON :label(name)``). Any other ``value``: none."""
        if not _is_number(value):
            return []
        index = self._indexes.get((label, name))
        if index is None:
            index = self._indexes[(label, name)] = {}
            for vid, props in enumerate(self.vprops):
                found = props.get(name)
                if _is_number(found) and (label is None or label in self.labels[vid]):
                    index.setdefault(found, []).append(vid)
        return list(index.get(value, ()))

    def add_vertex(
        self, labels: Iterable[str] = (), properties: dict[str, Any] | None = None
    ) -> int:
        vid = len(self.labels)
        self.labels.append(list(labels))
        self.vprops.append(
            {
                k: store_value(v, f"property {k!r}")
                for k, v in (properties or {}).items()
                if v is not None
            }
        )
        for (label, name), index in self._indexes.items():  # the new vertex joins them
            found = self.vprops[vid].get(name)
            if _is_number(found) and (label is None or label in self.labels[vid]):
                index.setdefault(found, []).append(vid)
        self.out_edges.append([])
        self.in_edges.append([])
        if self.vector_indexes is not None:  # all checked before any index changes
            try:
                updates = [
                    self.vector_indexes.check_property(vid, k, v)
                    for k, v in list(self.vprops[vid].items())
                ]
            except BaseException:
                self._drop_last_vertex()
                raise
            for update in updates:
                update()
        self._journal(self._drop_last_vertex)
        return vid

    def _drop_last_vertex(self) -> None:
        for column in (self.labels, self.vprops, self.out_edges, self.in_edges):
            column.pop()

    def add_edge(
        self, src: int, dst: int, edge_type: str, properties: dict[str, Any] | None = None
    ) -> int:
        for end, name in ((src, "src"), (dst, "dst")):
            if not isinstance(end, int) or not 0 <= end < len(self.labels):
                raise IndexError(
                    f"{name}: expected a vertex id in 0..{len(self.labels) - 1}, got {end!r}"
                )
        eid = len(self.etype)
        self.etype.append(edge_type)
        self.esrc.append(src)
        self.edst.append(dst)
        self.eprops.append(
            {k: store_value(v, f"property {k!r}") for k, v in properties.items() if v is not None}
            if properties
            else None
        )
        self.out_edges[src].append(eid)
        self.in_edges[dst].append(eid)
        self._journal(self._drop_last_edge)
        return eid

    def _drop_last_edge(self) -> None:
        src, dst = self.esrc.pop(), self.edst.pop()
        self.etype.pop()
        self.eprops.pop()
        self.out_edges[src].pop()
        self.in_edges[dst].pop()

    def set_property(
        self, props: dict[str, Any], key: str, value: Any, vertex: int | None = None
    ) -> None:
        """Sets ``props[key]`` (None: removes it) to ``value`` as stored; ``vertex``: the id of
        the vertex whose properties ``props`` are (the vector indexes follow its writes)."""
        stored = None if value is None else store_value(value, f"property {key!r}")
        update = None
        if vertex is not None and self.vector_indexes is not None:
            update = self.vector_indexes.check_property(vertex, key, stored)
        self.changed(key)
        if self._undo is not None:
            self._undo.append(functools.partial(_restore, props, key, props.get(key)))
        if stored is None:
            props.pop(key, None)
        else:
            props[key] = stored
        if update is not None:
            update()

    def edge_properties(self, eid: int) -> dict[str, Any]:
        """The property map of edge ``eid``, made when it has none."""
        props = self.eprops[eid]
        if props is None:
            props = self.eprops[eid] = {}
            self._journal(functools.partial(self.eprops.__setitem__, eid, None))
        return props

    def set_labels(self, vid: int, labels: list[str]) -> None:
        """Replaces the labels of vertex ``vid``."""
        if labels != self.labels[vid]:
            update = None
            if self.vector_indexes is not None:
                update = self.vector_indexes.check_labels(vid, labels)
            self.changed()
            self._journal(functools.partial(self.labels.__setitem__, vid, self.labels[vid]))
            self.labels[vid] = labels
            if update is not None:
                update()


def _restore(props: dict[str, Any], key: str, old: Any) -> None:
    if old is None:
        props.pop(key, None)
    else:
        props[key] = old


def _is_number(value: Any) -> bool:
    """An integer or a float, not a bool: what Cypher's ``=`` compares by value across types."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def store_value(value: Any, where: str) -> Any:
    """A property value as stored (lists become tuples); refuses what Memgraph cannot store.

    Subclasses of ``float``, ``str`` and ``int`` (``numpy.float64``, ``numpy.str_``) are stored as
    the plain type, as Memgraph stores a double, string or integer: procedures never see them.
    """
    if value is None or type(value) in _SCALARS:
        return _int64(value, where, ValueConversionError) if type(value) is int else value
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, int) and not isinstance(value, _Handle):  # a handle is no integer
        return _int64(value, where, ValueConversionError)
    if isinstance(value, (list, tuple)):
        items = [store_value(v, where) for v in value]
        if all(type(v) in _SCALARS for v in items) and not _has_nul(items):
            return _ScalarList(items)
        return tuple(items)  # read element by element (a string with a NUL is cut)
    if isinstance(value, dict):
        return _map_of(
            value,
            lambda k, v: store_value(v, where),
            ValueConversionError,
            lambda k: f"{where}: expected map keys of type str, got {type(k).__name__}",
        )
    if isinstance(value, (datetime.date, datetime.time, datetime.timedelta)):
        return value
    if _is_mgp(value, "Point2d") or _is_mgp(value, "Point3d"):
        return mgp_point(value)
    if _is_mgp(value, "Enum"):  # mg_procedure_impl.cpp ToPropertyValue
        raise ValueConversionError(
            "Cannot convert Enum mgp_value back to PropertyValue without EnumStore context!"
        )
    raise ValueConversionError(
        f"{where}: Unsupported PyObject conversion of {type(value).__name__} to a property value"
    )


def mgp_point(value: Any) -> Any:
    """A fresh ``mgp.Point2d`` / ``mgp.Point3d`` (Memgraph 3.x) of the coordinates and SRID of
    ``value``, checked as ``py_module.cpp`` ``PyObjectToMgpValue`` checks them (ValueError with
    Memgraph's text: a missing or non-numeric coordinate, an SRID outside 0..65535)."""
    kind = "Point3d" if _is_mgp(value, "Point3d") else "Point2d"
    axes = ("x", "y", "z") if kind == "Point3d" else ("x", "y")
    try:
        raw = [getattr(value, axis) for axis in axes] + [value.srid]
    except AttributeError:
        raise ValueError(f"'mgp.{kind}' is missing {', '.join(axes)}, or srid attribute") from None
    try:
        coordinates = [float(c) for c in raw[:-1]]
        srid = operator.index(raw[-1])
    except (TypeError, ValueError):
        raise ValueError(f"'mgp.{kind}' has invalid {', '.join(axes)}, or srid value") from None
    if not 0 <= srid <= 65535:
        raise ValueError(f"'mgp.{kind}' srid must be between 0 and 65535")
    return getattr(sys.modules["mgp"], kind)(*coordinates, srid)


_SCALARS = frozenset([bool, int, float, str, type(None)])


def _int64(
    value: int,
    where: str,
    error: type[Exception],
    template: str = "{where}: expected an int64, got {value!r} (out of range)",
) -> int:
    """``value`` as a plain int, or ``error`` (``template`` filled in) when it does not fit in
    int64."""
    if not INT64_MIN <= value <= INT64_MAX:
        raise error(template.format(where=where, value=value))
    return int(value)


def _map_of(
    value: dict[Any, Any],
    convert: Callable[[str, Any], Any],
    error: type[Exception],
    message: Callable[[Any], str],
) -> dict[str, Any]:
    """``{k: convert(k, v)}`` with its keys in Memgraph's order (:func:`memgraph_map_order`);
    raises ``error(message(k))`` for the first key that is not a str."""
    out = {}
    for k, v in value.items():
        if not isinstance(k, str):
            raise error(message(k))
        out[k] = convert(k, v)
    return memgraph_map_order(out)


def memgraph_map_order(value: dict[str, Any]) -> dict[str, Any]:
    """``value`` with its keys sorted, as every map reaches a procedure, is stored and comes back
    in Memgraph, whatever order the client wrote it in: a Bolt map is decoded into a ``std::map``
    (``src/communication/bolt/v1/value.hpp`` ``map_t``), a query's map is a ``std::pmr::map``
    (``src/query/typed_value.hpp`` ``TMap``), the ``mgp_map`` a procedure's argument or a stored
    map property is built into is one (``src/query/procedure/mg_procedure_impl.hpp``
    ``mgp_map::map_type``; ``mg_procedure_impl.cpp`` ``mgp_value`` from a ``TypedValue`` or a
    ``PropertyValue``), and ``py_module.cpp`` ``MgpValueToPyObject`` fills the ``dict`` in that
    order; a procedure's result map is made by ``mgp_map_make_empty``, sorted too. Those maps
    compare keys as ``std::string``s, byte by byte as unsigned chars; Python compares ``str``s
    by code point, and UTF-8 keeps code point order in its bytes, so ``sorted`` gives the same
    order."""
    return {k: value[k] for k in sorted(value)}


class _ScalarList(tuple):
    """A stored list whose elements are all scalars, no string holding a NUL (copied out with one
    ``tuple()``)."""


def load_value(value: Any) -> Any:
    """A stored value as a Bolt client sees it (:meth:`EmbeddedGraph.get_property`): fresh lists
    and dicts."""
    if type(value) is _ScalarList:
        return list(value)
    if isinstance(value, tuple):
        return [load_value(v) for v in value]
    if isinstance(value, dict):
        return {k: load_value(v) for k, v in value.items()}
    return value


def proc_value(value: Any) -> Any:
    """A stored or argument value as a Python procedure sees it in Memgraph: every list a
    ``tuple`` (nested, and inside maps), strings cut at the first NUL, maps fresh dicts with
    their keys sorted (:func:`memgraph_map_order`).

    Memgraph: ``src/query/procedure/py_module.cpp`` ``MgpListToPyTuple`` (lists become tuples) and
    ``MgpValueToPyObject`` (strings through ``PyUnicode_FromString`` of a C string)."""
    if type(value) is _ScalarList:
        return tuple(value)
    if type(value) is str:
        return _c_string(value)
    if isinstance(value, (tuple, list)):
        return tuple(map(proc_value, value))
    if isinstance(value, dict):
        return {k: proc_value(value[k]) for k in sorted(value)}  # (memgraph_map_order)
    return value


def _c_string(value: Any) -> Any:
    """A str as a C string hands it over: cut at the first NUL (other values unchanged)."""
    if type(value) is str and "\x00" in value:
        return value.split("\x00", 1)[0]
    return value


def _has_nul(values: list[Any]) -> bool:
    return any(type(v) is str and "\x00" in v for v in values)


# an estimate of what Memgraph allocates for one mgp_value (its tag and union, an allocator), per
# value and per list element; strings add their UTF-8 bytes
VALUE_BYTES = 32


def value_bytes(value: Any) -> int:
    """An estimate of the bytes Memgraph allocates to hand ``value`` over as an ``mgp_value``
    (:data:`VALUE_BYTES` per value, list element and map entry, plus the bytes of strings and map
    keys)."""
    if type(value) is str:
        return VALUE_BYTES + (len(value) if value.isascii() else len(value.encode()))
    if isinstance(value, (list, tuple)):
        return VALUE_BYTES + sum(map(value_bytes, value))
    if isinstance(value, dict):
        return VALUE_BYTES + sum(len(k) + value_bytes(v) for k, v in value.items())
    return VALUE_BYTES


# ------------------------------------------------------------------------------------------------
# The _mgp object API used by mgp.py
# ------------------------------------------------------------------------------------------------


def _no_pickle(obj: Any) -> Any:
    """Memgraph's ``DisallowPickleAndCopy`` (``py_module.cpp``), the ``__reduce__`` of its
    ``_mgp`` types: ``pickle``, ``copy.copy`` and ``copy.deepcopy`` fail with this TypeError."""
    raise TypeError(f"cannot pickle nor copy '{type(obj).__name__}' object")


class HandleUseAfterCallError(RuntimeError):
    """A raw ``_mgp`` object (vertex, edge, iterator, graph) was used after its procedure call
    ended. Memgraph's C objects then point at freed memory: its ``MG_ASSERT`` stops the server
    (``src/query/procedure/py_module.cpp``, the ``Py*`` methods). mgp.py's wrappers check
    ``is_valid()`` first and raise ``mgp.InvalidContextError`` instead."""


@functools.cache
def _method_names(cls: type) -> tuple[str, ...]:
    """The public methods of an ``_mgp`` class and its bases (what a procedure may call); of
    this module's classes, read once each (a call's own subclasses have the same: pass their
    base)."""
    names = set()
    for klass in cls.__mro__:
        if klass.__module__ != __name__:
            continue
        names.update(n for n, v in vars(klass).items() if not n.startswith("_") and callable(v))
    return tuple(sorted(names))


def _counted(method: Callable[..., Any], key: str, counts: dict[str, int]) -> Callable[..., Any]:
    def counted(*args: Any, **kwargs: Any) -> Any:
        counts[key] = counts.get(key, 0) + 1
        return method(*args, **kwargs)

    return counted


@functools.cache  # one per key (a class's method): every ended call's classes share them
def _dead(key: str) -> Callable[..., Any]:
    def dead(*_: Any, **__: Any) -> Any:
        raise HandleUseAfterCallError(
            f"{key}: a raw _mgp object used after its procedure call ended (Memgraph aborts the "
            "server here: MG_ASSERT in py_module.cpp; mgp.py's objects raise InvalidContextError)"
        )

    return dead


class CallContext:
    """Validity, mutability, abort flag, memory limit and ``_mgp`` call counts of one procedure
    call. Its handle, graph and iterator classes are its own subclasses: when the call ends
    (:meth:`invalidate`) their methods raise :class:`HandleUseAfterCallError` (``is_valid()``
    answers False), at no cost to the calls made while it runs."""

    def __init__(
        self,
        store: Store,
        mutable: bool,
        must_abort: Callable[[], bool],
        memory_limit_bytes: int | None = None,
        memory_clause: str = "",
        counts: dict[str, int] | None = None,
    ) -> None:
        self.store = store
        self.counts = counts
        # this call's classes: vertex(id) and edge(id) make handles in C
        base: dict[str, Any] = {"__slots__": (), "_ctx": self}
        self.vertex = self._own(Vertex, {**base, "__new__": int.__new__})
        self.edge = self._own(Edge, {**base, "__new__": int.__new__})
        self.graph = self._own(Graph, {"__slots__": ()})
        self.iterable = self._own(MgpIterable, {"__slots__": ()})
        self.esrc = store.esrc  # the edges' ends, read once per edge by Edge.from_vertex/to_vertex
        self.edst = store.edst
        self.valid = True
        self.mutable = mutable
        self.must_abort = must_abort
        self.memory_limit_bytes = memory_limit_bytes
        self.memory_clause = memory_clause
        self.start_timestamp = 0  # the transaction's (Graph.get_start_timestamp)
        # a list property of more items than this is over the limit (VALUE_BYTES per item)
        self.max_list_items = (
            _ENDLESS if memory_limit_bytes is None else memory_limit_bytes // VALUE_BYTES
        )
        self.max_string_chars = (
            _ENDLESS if memory_limit_bytes is None else memory_limit_bytes - VALUE_BYTES
        )

    def _own(self, cls: type, attrs: dict[str, Any]) -> Any:
        own = type(cls.__name__, (cls,), attrs)
        if self.counts is not None:
            for name in _method_names(cls):
                if name != "next":
                    setattr(
                        own,
                        name,
                        _counted(getattr(cls, name), f"{cls.__name__}.{name}", self.counts),
                    )
        return own

    def track(self, iterable: MgpIterable) -> MgpIterable:
        """An iterator made during the call, its ``next`` counted when counting. (Not kept: an
        iterator's ``next()`` makes its items with ``vertex`` / ``edge``, which die with the
        call, or checks :attr:`valid` itself.)"""
        if self.counts is not None:
            iterable.next = _counted(iterable.next, "MgpIterable.next", self.counts)
        return iterable

    def alive(self, item: Any) -> Any:
        """``item``, or :class:`HandleUseAfterCallError` once the call has ended."""
        if not self.valid:
            _dead("_mgp.MgpIterable.next")()
        return item

    def invalidate(self) -> None:
        """Ends the call: every ``_mgp`` object it made becomes unusable (its methods raise; an
        iterator's ``next()`` raises at its next vertex or edge)."""
        self.valid = False
        for own in (self.vertex, self.edge, self.graph, self.iterable):
            for name in _method_names(own.__bases__[0]):
                if name != "is_valid":
                    setattr(own, name, _dead(f"_mgp.{own.__name__}.{name}"))
        for own in (self.vertex, self.edge):
            own.__new__ = _dead(f"_mgp.{own.__name__}")

    def charge(self, value: Any, what: str) -> None:
        """Refuses ``value`` when handing it over as an ``mgp_value`` would allocate more than the
        call's memory limit (``_mgp.UnableToAllocateError``, as Memgraph's ``mgp_*`` functions
        report ``MGP_ERROR_UNABLE_TO_ALLOCATE`` from ``LimitedMemoryResource``)."""
        if self.memory_limit_bytes is None:
            return
        size = value_bytes(value)
        if size > self.memory_limit_bytes:
            raise UnableToAllocateError(
                f"Unable to allocate memory. (embedded runtime: {what} needs about {size:,} "
                f"bytes, over the procedure memory limit of {memory_limit_text(self)})"
            )


def memory_limit_text(ctx: CallContext) -> str:
    """``"104,857,600 bytes (PROCEDURE MEMORY LIMIT 100 MB ...)"`` for messages."""
    return f"{ctx.memory_limit_bytes:,} bytes ({ctx.memory_clause})"


_ENDLESS = 2**62  # the None-padding after an iterator's items: "forever" for any caller


class MgpIterable:
    """An ``_mgp`` iterator: ``get()`` is the current item, ``next()`` moves on and returns the new
    current item, None at the end and after it (mgp.py reads ``get()``, then ``next()`` until None).

    The items are ``keys`` themselves, or with ``make`` the handles ``make(key)`` made as ``next()``
    reaches them (an edge iterator holds edge ids, not handles; ``make`` is then a C-level
    callable). ``next`` is a C-level ``__next__`` (a chain over a map over the keys, then Nones), so
    walking the iterator costs no Python frame per item and keeps no handle alive; ``get`` finds
    the position from what is left of the keys and of the Nones."""

    __slots__ = ("_keys", "_left", "_make", "_nones", "next")
    __reduce__ = _no_pickle

    def __init__(self, keys: list[Any], make: Callable[[Any], Any] | None = None) -> None:
        self._keys = keys
        self._left = left = iter(keys)
        self._nones = nones = itertools.repeat(None, _ENDLESS)
        self._make = make
        self.next = itertools.chain(left if make is None else map(make, left), nones).__next__
        self.next()  # the keys' iterator now stands after the current item

    def get(self) -> Any:
        if self._nones.__length_hint__() < _ENDLESS or not self._keys:  # past the end
            return None
        key = self._keys[len(self._keys) - self._left.__length_hint__() - 1]
        return key if self._make is None else self._make(key)


def _check_mutable(ctx: CallContext) -> None:
    if not ctx.mutable:
        raise ImmutableObjectError(
            "Cannot modify an immutable object (the procedure is a read procedure)."
        )


class _HandleApi:
    """What the _mgp vertex and edge handles share: a call context (``_ctx``) and an id in its store
    (``_id``). As Memgraph's ``_mgp.Vertex`` / ``_mgp.Edge`` (``py_module.cpp``
    ``PyVertexRichCompare``, ``PyEdgeRichCompare``: ``Py_EQ`` only, no ``tp_hash``): ``==`` is true
    for the same kind of handle to the same id in the same call, ``!=`` compares identity, ordering
    is a TypeError, they are unhashable, and always true as a condition (a vertex 0 too)."""

    __slots__ = ()
    _kind = ""
    __hash__ = None  # type: ignore[assignment]  # -- unhashable, as Memgraph's _mgp objects
    __reduce__ = _no_pickle

    def is_valid(self) -> bool:
        return self._ctx.valid

    def underlying_graph_is_mutable(self) -> bool:
        return self._ctx.mutable

    def __eq__(self, other: Any) -> bool:
        return type(other) is type(self) and int(other) == int(self)

    def __ne__(self, other: Any) -> bool:
        return other is not self

    def _no_order(self, other: Any) -> bool:
        raise TypeError(
            f"'<' not supported between instances of '_mgp.{self._kind_name}' and others"
        )

    __lt__ = __le__ = __gt__ = __ge__ = _no_order

    def __bool__(self) -> bool:
        return True


class _Handle(_HandleApi, int):
    """A vertex or edge handle: the id itself (an int subclass), of the call's own subclass
    (``ctx.vertex``, ``ctx.edge``) that holds the call context as ``_ctx``, so a handle is made in C
    (``ctx.vertex(id)``) and ``get_id`` is ``int.__int__`` (a plain int, no Python frame). Never
    taken for an integer: the conversions test for handles first."""

    __slots__ = ()
    _ctx: CallContext
    _id = property(int.__int__)
    get_id = int.__int__

    def __new__(cls, ctx: CallContext, handle_id: int) -> _Handle:
        return (ctx.vertex if cls._kind == "v" else ctx.edge)(handle_id)


class Vertex(_Handle):
    __slots__ = ()
    _kind = "v"
    _kind_name = "Vertex"

    def labels_count(self) -> int:
        return len(self._ctx.store.labels[self._id])

    def label_at(self, index: int) -> str:
        labels = self._ctx.store.labels[self._id]
        if not 0 <= index < len(labels):
            raise OutOfRangeError(f"label index {index} out of range")
        return labels[index]

    def add_label(self, label: Any) -> None:
        _check_mutable(self._ctx)
        name = getattr(label, "name", label)
        labels = self._ctx.store.labels[self._id]
        if name not in labels:
            self._ctx.store.set_labels(self._id, [*labels, name])

    def remove_label(self, label: Any) -> None:
        _check_mutable(self._ctx)
        name = getattr(label, "name", label)
        labels = self._ctx.store.labels[self._id]
        if name in labels:
            self._ctx.store.set_labels(self._id, [n for n in labels if n != name])

    def iter_properties(self) -> MgpIterable:
        return _properties_iterable(self._ctx, self._ctx.store.vprops[self._id])

    def get_property(self, name: str) -> Any:
        ctx = self._ctx
        value = ctx.store.vprops[self].get(name)
        if type(value) is _ScalarList:  # the common case inline
            if len(value) >= ctx.max_list_items:
                return _read(ctx, value, name)
            return tuple(value)
        return _read(ctx, value, name)

    def set_property(self, name: str, value: Any) -> None:
        converted = property_value(self._ctx, value, name)
        store = self._ctx.store
        store.set_property(store.vprops[self._id], name, converted, vertex=self._id)

    def set_properties(self, properties: Any) -> None:
        """Memgraph 3.x (``py_module.cpp`` ``PyVertexSetProperties``)."""
        _set_properties(
            self._ctx, lambda: self._ctx.store.vprops[self._id], properties, vertex=self._id
        )

    def iter_in_edges(self) -> MgpIterable:
        ctx = self._ctx
        return ctx.track(ctx.iterable(list(ctx.store.in_edges[self]), ctx.edge))

    def iter_out_edges(self) -> MgpIterable:
        ctx = self._ctx
        return ctx.track(ctx.iterable(list(ctx.store.out_edges[self]), ctx.edge))


class Edge(_Handle):
    __slots__ = ()
    _kind = "e"
    _kind_name = "Edge"

    def get_type_name(self) -> str:
        return self._ctx.store.etype[self._id]

    def from_vertex(self) -> Vertex:
        ctx = self._ctx
        return ctx.vertex(ctx.esrc[self])

    def to_vertex(self) -> Vertex:
        ctx = self._ctx
        return ctx.vertex(ctx.edst[self])

    def iter_properties(self) -> MgpIterable:
        return _properties_iterable(self._ctx, self._ctx.store.eprops[self._id] or {})

    def get_property(self, name: str) -> Any:
        return _read(self._ctx, (self._ctx.store.eprops[self._id] or {}).get(name), name)

    def set_property(self, name: str, value: Any) -> None:
        converted = property_value(self._ctx, value, name)
        store = self._ctx.store
        store.set_property(store.edge_properties(self._id), name, converted)

    def set_properties(self, properties: Any) -> None:
        """Memgraph 3.x (``py_module.cpp`` ``PyEdgeSetProperties``)."""
        _set_properties(self._ctx, lambda: self._ctx.store.edge_properties(self._id), properties)


def _set_properties(
    ctx: CallContext,
    props: Callable[[], dict[str, Any]],
    given: Any,
    vertex: int | None = None,
) -> None:
    """Sets every item of the dict ``given`` (None removes), all or none: Memgraph converts the
    whole map first (a key that is no str: "Dictionary keys must be strings"), then
    ``UpdateProperties``. Anything but a dict is an empty map (``PyDict_Next`` reads nothing)."""
    items = dict(given) if isinstance(given, dict) else {}
    for key in items:
        if not isinstance(key, str):
            raise ValueError("Dictionary keys must be strings")
    converted = {k: property_value(ctx, v, k) for k, v in items.items()}
    _check_mutable(ctx)
    target = props()
    for key, value in converted.items():
        ctx.store.set_property(target, key, value, vertex=vertex)


_PY_ERRORS: dict[str, type[Exception]] = {"ValueError": ValueError, "OverflowError": OverflowError}


def property_value(ctx: CallContext, value: Any, name: str) -> Any:
    """``value`` as a procedure's ``set_property`` hands it to Memgraph: converted as
    ``py_module.cpp`` ``PyObjectToMgpValue`` converts it (ValueError / OverflowError with its
    text), then, the object being mutable (else ImmutableObjectError), refused by
    ``mg_procedure_impl.cpp`` ``ToPropertyValue`` when it holds a vertex, an edge, a path or an
    enum (ValueConversionError with its text)."""
    refusal = None
    try:
        converted = from_python(value, f"property {name!r}", ctx.store)
    except _Refusal as exc:
        if exc.kind:
            raise _PY_ERRORS[exc.kind](f"{exc.text} (embedded runtime: {exc.detail})") from None
        converted = None
        refusal = "Cannot convert Enum mgp_value back to PropertyValue without EnumStore context!"
    _check_mutable(ctx)
    todo = [converted]
    while todo and refusal is None:
        item = todo.pop()
        refusal = next((text for cls, text in _NOT_PROPERTIES if isinstance(item, cls)), None)
        if isinstance(item, list):
            todo.extend(item)
        elif isinstance(item, dict):
            todo.extend(item.values())
    if refusal is not None:
        raise ValueConversionError(refusal)
    return converted


def _read(ctx: CallContext, value: Any, name: str) -> Any:
    """A stored property value handed to the procedure (charged against the memory limit)."""
    if value is None:
        return None
    ctx.charge(value, f"property {name!r}")
    return proc_value(value)


def _properties_iterable(ctx: CallContext, props: dict[str, Any]) -> MgpIterable:
    items = []
    for k, v in props.items():
        ctx.charge(v, f"property {k!r}")
        items.append((_c_string(k), proc_value(v)))
    return ctx.track(ctx.iterable(items, ctx.alive))


class Path:
    __slots__ = ("_edges", "_vertices")
    __reduce__ = _no_pickle

    def __init__(self, vertices: list[Vertex], edges: list[Edge]) -> None:
        self._vertices = vertices
        self._edges = edges

    @staticmethod
    def make_with_start(vertex: Vertex) -> Path:
        return Path([vertex], [])

    def is_valid(self) -> bool:
        return all(v.is_valid() for v in self._vertices)

    def _alive(self) -> None:
        if not self._vertices[0]._ctx.valid:
            _dead("_mgp.Path")()

    def expand(self, edge: Edge) -> None:
        self._alive()
        last = self._vertices[-1]
        store = last._ctx.store
        src, dst = store.esrc[edge._id], store.edst[edge._id]
        if last._id == src:
            self._vertices.append(Vertex(edge._ctx, dst))
        elif last._id == dst:
            self._vertices.append(Vertex(edge._ctx, src))
        else:
            raise LogicErrorError("The last vertex of the path is not part of the given edge.")
        self._edges.append(edge)

    def pop(self) -> None:
        """Memgraph 3.x: drops the last edge and vertex (``mg_procedure_impl.cpp``
        ``mgp_path_pop``: OutOfRangeError when the path has no edge)."""
        self._alive()
        if not self._edges:
            raise OutOfRangeError("Path contains no relationships.")
        self._vertices.pop()
        self._edges.pop()

    def size(self) -> int:
        self._alive()
        return len(self._edges)

    def vertex_at(self, index: int) -> Vertex:
        self._alive()
        return self._vertices[index]

    def edge_at(self, index: int) -> Edge:
        self._alive()
        return self._edges[index]


class Graph:
    __slots__ = ("_ctx",)
    __reduce__ = _no_pickle

    def __init__(self, ctx: CallContext) -> None:
        self._ctx = ctx

    def is_valid(self) -> bool:
        return self._ctx.valid

    def is_mutable(self) -> bool:
        return self._ctx.mutable

    def must_abort(self) -> bool:
        return bool(self._ctx.must_abort())

    def get_start_timestamp(self) -> int:
        """Memgraph 3.x: the start timestamp of the query's transaction (``py_module.cpp``
        ``PyGraphGetStartTimestamp``): one int per CALL, the same for every call of a batched
        procedure in it, larger for a later CALL."""
        return self._ctx.start_timestamp

    def get_vertex_by_id(self, vertex_id: int) -> Vertex:
        if not isinstance(vertex_id, int) or not 0 <= vertex_id < len(self._ctx.store.labels):
            raise IndexError(f"Unable to find vertex with ID {vertex_id}.")
        return self._ctx.vertex(vertex_id)

    def iter_vertices(self) -> MgpIterable:
        ctx = self._ctx
        return ctx.track(ctx.iterable(list(range(len(ctx.store.labels))), ctx.vertex))

    def create_vertex(self) -> Vertex:
        _check_mutable(self._ctx)
        return Vertex(self._ctx, self._ctx.store.add_vertex())

    def create_edge(self, from_vertex: Vertex, to_vertex: Vertex, edge_type: str) -> Edge:
        _check_mutable(self._ctx)
        return Edge(self._ctx, self._ctx.store.add_edge(from_vertex._id, to_vertex._id, edge_type))

    def _no_delete(self, *_: Any) -> None:
        _check_mutable(self._ctx)
        raise UnknownError("deleting vertices or edges is not supported by the embedded runtime")

    delete_vertex = detach_delete_vertex = delete_edge = _no_delete


class Message:  # streams are not supported; mgp.py only needs the names to exist
    __reduce__ = _no_pickle


class Messages:
    __reduce__ = _no_pickle


class Utils:
    """Memgraph 3.x's ``_mgp.Utils`` (``py_module.cpp`` ``PyUtilsMethods``)."""

    @staticmethod
    def is_enterprise_valid() -> bool:
        """Whether an enterprise licence is active (``mgp_is_enterprise_valid``): never here,
        as on a Memgraph without a licence key."""
        return False


SOURCE_TYPE_KAFKA = 1
SOURCE_TYPE_PULSAR = 2


class _Logger:
    """``mgp.Logger``'s backend: what query modules log goes to ``memgraph_tf.embedded.module``, a
    channel of its own beside this module's ``logger``. One method per ``mgp.Logger`` level
    (``trace`` logs at DEBUG), each taking the message text."""

    _LEVELS: ClassVar[dict[str, int]] = {
        "info": logging.INFO,
        "warning": logging.WARNING,
        "critical": logging.CRITICAL,
        "error": logging.ERROR,
        "trace": logging.DEBUG,
        "debug": logging.DEBUG,
    }

    def __init__(self) -> None:
        self._log = logging.getLogger("memgraph_tf.embedded.module")
        for name, level in self._LEVELS.items():
            setattr(self, name, functools.partial(self._log.log, level))


_LOGGER = _Logger()

# ------------------------------------------------------------------------------------------------
# Cypher types
# ------------------------------------------------------------------------------------------------


class CypherType:
    """A declared argument or result type; ``str()`` is its Cypher name (``LIST OF STRING``), as
    Memgraph presents it (``src/query/procedure/cypher_types.hpp`` ``GetPresentableName``).
    ``element`` is a list type's element type, ``nullable`` whether null satisfies it."""

    def __init__(
        self,
        name: str,
        check: Callable[[Any], bool],
        element: CypherType | None = None,
        nullable: bool = False,
    ) -> None:
        self.name = name
        self.check = check
        self.element = element
        self.nullable = nullable

    def satisfied_by(self, value: Any) -> bool:
        """Whether a converted (Python) value satisfies this type; null only for nullable types."""
        if value is None:
            return self.nullable
        return self.check(value)

    def __str__(self) -> str:
        return self.name

    __repr__ = __str__


def _is_mgp(value: Any, name: str) -> bool:
    mgp = sys.modules.get("mgp")
    cls = getattr(mgp, name, None)
    return cls is not None and isinstance(value, cls)


def _is_node(v: Any) -> bool:
    return _is_mgp(v, "Vertex") or isinstance(v, Vertex) or type(v) is NodeRef


def _is_edge(v: Any) -> bool:
    return _is_mgp(v, "Edge") or isinstance(v, Edge) or type(v) is EdgeRef


def _is_path(v: Any) -> bool:
    return _is_mgp(v, "Path") or isinstance(v, (Path, PathRef))


def _is_zoned(v: Any) -> bool:
    """A ``datetime`` with a UTC offset: Memgraph 3.x converts it to a ZONED_DATE_TIME
    (``py_module.cpp`` ``PyObjectToMgpValue``: a ``tzinfo`` that is not None)."""
    return isinstance(v, datetime.datetime) and v.tzinfo is not None


def type_any() -> CypherType:
    return CypherType("ANY", lambda v: True)


def type_bool() -> CypherType:
    return CypherType("BOOLEAN", lambda v: isinstance(v, bool))


def type_string() -> CypherType:
    return CypherType("STRING", lambda v: isinstance(v, str))


def type_int() -> CypherType:
    return CypherType(
        "INTEGER", lambda v: isinstance(v, int) and not isinstance(v, (bool, _Handle))
    )


def type_float() -> CypherType:
    return CypherType("FLOAT", lambda v: isinstance(v, float))


def type_number() -> CypherType:
    return CypherType(
        "NUMBER", lambda v: isinstance(v, (int, float)) and not isinstance(v, (bool, _Handle))
    )


def type_map() -> CypherType:
    return CypherType("MAP", lambda v: isinstance(v, dict) or _is_node(v) or _is_edge(v))


def type_node() -> CypherType:
    return CypherType("NODE", _is_node)


def type_relationship() -> CypherType:
    return CypherType("RELATIONSHIP", _is_edge)


def type_path() -> CypherType:
    return CypherType("PATH", _is_path)


def type_date() -> CypherType:
    return CypherType(
        "DATE", lambda v: isinstance(v, datetime.date) and not isinstance(v, datetime.datetime)
    )


def type_local_time() -> CypherType:
    return CypherType("LOCAL_TIME", lambda v: isinstance(v, datetime.time))


def type_local_date_time() -> CypherType:
    return CypherType(
        "LOCAL_DATE_TIME", lambda v: isinstance(v, datetime.datetime) and not _is_zoned(v)
    )


def type_duration() -> CypherType:
    return CypherType("DURATION", lambda v: isinstance(v, datetime.timedelta))


def type_zoned_date_time() -> CypherType:
    """Memgraph 3.x: a ``datetime`` with ``tzinfo`` (``cypher_types.hpp`` ``ZonedDateTimeType``)."""
    return CypherType("ZONED_DATE_TIME", _is_zoned)


def type_point_2d() -> CypherType:
    """Memgraph 3.x: an ``mgp.Point2d`` (``cypher_types.hpp`` ``Point2dType``)."""
    return CypherType("POINT_2D", lambda v: _is_mgp(v, "Point2d"))


def type_point_3d() -> CypherType:
    """Memgraph 3.x: an ``mgp.Point3d`` (``cypher_types.hpp`` ``Point3dType``)."""
    return CypherType("POINT_3D", lambda v: _is_mgp(v, "Point3d"))


def type_enum() -> CypherType:
    """Memgraph 3.x: an ``mgp.Enum`` (``cypher_types.hpp`` ``EnumType``)."""
    return CypherType("ENUM", lambda v: _is_mgp(v, "Enum"))


def type_list(element: CypherType) -> CypherType:
    return CypherType(
        f"LIST OF {element}",
        lambda v: type(v) in _LISTS and all(element.satisfied_by(x) for x in v),
        element=element,
    )


_LISTS = (list, tuple)  # a procedure's lists are tuples, its results' lists become lists


def type_nullable(inner: CypherType) -> CypherType:
    """``inner`` or null. As ``cypher_types.hpp`` ``NullableType::Create``: a nullable type is
    returned as it is (no ``ANY??``), and a nullable list is named ``LIST? OF <element>``."""
    if inner.nullable:
        return inner
    name = f"LIST? OF {inner.element}" if inner.element is not None else f"{inner}?"
    return CypherType(name, inner.check, inner.element, nullable=True)


# ------------------------------------------------------------------------------------------------
# Modules and procedures
# ------------------------------------------------------------------------------------------------


class Proc:
    """A registered procedure: its Python wrapper, arguments and result fields; a batched one
    (``mgp.add_batch_read_proc``, Memgraph 3.x) has an ``initializer`` and a ``cleanup``."""

    def __init__(
        self,
        module: Module,
        func: Callable[..., Any],
        is_write: bool,
        batch: tuple[Callable[..., Any], Callable[[], Any]] | None = None,
    ) -> None:
        self.module = module
        self.func = func
        self.name = func.__name__
        self.is_write = is_write
        self.initializer, self.cleanup = batch if batch is not None else (None, None)
        self.args: list[tuple[str, CypherType]] = []
        self.opt_args: list[tuple[str, CypherType, Any]] = []
        self.results: dict[str, CypherType] = {}
        self.deprecated: set[str] = set()  # result fields declared with mgp.Deprecated

    __reduce__ = _no_pickle

    @property
    def is_batched(self) -> bool:
        return self.initializer is not None

    @property
    def qualified_name(self) -> str:
        return f"{self.module.name}.{self.name}"

    # As mg_procedure_impl.cpp MgpAddArg, MgpAddOptArg and AddResultToProp, whose errors reach
    # Python through py_module.cpp RaiseExceptionFromErrorCode with its fixed texts ("Invalid
    # argument.", "Logic error.", "Value conversion failed."); the runtime adds what was wrong.

    def _name_ok(self, name: str, what: str) -> None:
        if not _IDENTIFIER.fullmatch(name):
            raise InvalidArgumentError(
                f"Invalid argument. (embedded runtime: {self.qualified_name}: {what} name {name!r} "
                "is not an identifier)"
            )

    def add_arg(self, name: str, cypher_type: CypherType) -> None:
        self._name_ok(name, "argument")
        if self.opt_args:
            raise LogicErrorError(
                f"Logic error. (embedded runtime: {self.qualified_name}: required argument "
                f"{name!r} after optional ones)"
            )
        self.args.append((name, cypher_type))

    def add_opt_arg(self, name: str, cypher_type: CypherType, default: Any) -> None:
        try:  # py_module.cpp PyCallableAddOptArg: PyObjectToMgpValue first
            converted = from_python(default, f"default of argument {name!r}", None)
        except _Refusal as exc:
            if not exc.kind:  # an enum: a valid default
                converted = default
            else:
                raise _PY_ERRORS[exc.kind](f"{exc.text} (embedded runtime: {exc.detail})") from None
        self._name_ok(name, "argument")
        if isinstance(converted, NodeRef) or type(converted) is PathRef:
            raise ValueConversionError(
                f"Value conversion failed. (embedded runtime: {self.qualified_name}: the default "
                f"of {name!r} is a graph element)"
            )
        if not cypher_type.satisfied_by(converted):
            raise LogicErrorError(
                f"Logic error. (embedded runtime: {self.qualified_name}: the default of {name!r} "
                f"does not satisfy {cypher_type})"
            )
        self.opt_args.append((name, cypher_type, converted))

    def add_result(self, name: str, cypher_type: CypherType) -> None:
        self._name_ok(name, "result")
        if name in self.results:
            raise LogicErrorError(
                f"Logic error. (embedded runtime: {self.qualified_name}: result field {name!r} "
                "declared twice)"
            )
        self.results[name] = cypher_type

    def add_deprecated_result(self, name: str, cypher_type: CypherType) -> None:
        self.add_result(name, cypher_type)
        self.deprecated.add(name)

    def signature(self) -> str:
        """The signature as ``mg.procedures()`` shows it (``mg_procedure_impl.cpp``
        ``PrintProcSignature``): arguments in order, defaults printed by ``PrintValue``, result
        fields sorted by name (a ``std::map``), deprecated ones marked ``DEPRECATED``."""
        args = [f"{n} :: {t}" for n, t in self.args] + [
            f"{n} = {cypher_text(d)} :: {t}" for n, t, d in self.opt_args
        ]
        res = [
            f"{'DEPRECATED ' if n in self.deprecated else ''}{n} :: {self.results[n]}"
            for n in sorted(self.results)
        ]
        return f"{self.qualified_name}({', '.join(args)}) :: ({', '.join(res)})"


_ESCAPES = {
    "\\": "\\\\",
    "'": "\\'",
    '"': '\\"',
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
}


def cypher_text(value: Any) -> str:
    """A default value as Memgraph prints it in a signature (``mg_procedure_impl.cpp``
    ``PrintValue``: ``Null``, ``true``, numbers as C++ streams them, strings quoted and escaped by
    ``utils::Escape``, lists, maps with sorted unquoted keys; temporal values as ``str()``)."""
    if value is None:
        return "Null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, str):
        return '"' + "".join(_ESCAPES.get(c, c) for c in value) + '"'
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(map(cypher_text, value)) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {cypher_text(value[k])}" for k in sorted(value)) + "}"
    return str(value)


_IDENTIFIER = re.compile(r"[_A-Za-z][_A-Za-z0-9]*")


class Module:
    """What a query-module file registers while it is being loaded (``_mgp._MODULE``).

    The ``add_*`` methods check what Memgraph's do (``py_module.cpp``
    ``PyQueryModuleAddProcedure``, ``PyQueryModuleAddBatchProcedure``): a callable (else
    TypeError), named by an identifier (``mg_procedure_impl.cpp`` ``IsValidIdentifierName``; else
    ValueError) not registered before in the module (else ValueError)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.procedures: dict[str, Proc] = {}
        self.functions: dict[str, Callable[..., Any]] = {}

    __reduce__ = _no_pickle

    def add_read_procedure(self, func: Callable[..., Any]) -> Proc:
        return self._add(Proc(self, _callable(func), False), self.procedures)

    def add_write_procedure(self, func: Callable[..., Any]) -> Proc:
        return self._add(Proc(self, _callable(func), True), self.procedures)

    def add_batch_read_procedure(
        self, func: Callable[..., Any], initializer: Any, cleanup: Any
    ) -> Proc:
        """Memgraph 3.x: a read procedure called until it yields no record, after
        ``initializer`` (see :meth:`Runtime.call`)."""
        batch = (initializer, cleanup)
        return self._add(Proc(self, _callable(func), False, batch), self.procedures)

    def add_batch_write_procedure(
        self, func: Callable[..., Any], initializer: Any, cleanup: Any
    ) -> Proc:
        """Memgraph 3.x: a batched write procedure."""
        batch = (initializer, cleanup)
        return self._add(Proc(self, _callable(func), True, batch), self.procedures)

    def add_function(self, func: Callable[..., Any]) -> Proc:
        proc = self._add(Proc(self, _callable(func), False), self.functions, "function")
        self.functions[proc.name] = func
        return proc

    def add_transformation(self, func: Callable[..., Any]) -> None:
        raise UnknownError("stream transformations are not supported by the embedded runtime")

    def _add(self, proc: Proc, registry: dict[str, Any], kind: str = "procedure") -> Proc:
        if not _IDENTIFIER.fullmatch(proc.name):
            raise ValueError(f"{kind.capitalize()} name is not a valid identifier")
        if proc.name in registry:
            raise ValueError(f"Already registered a {kind} with the same name.")
        registry[proc.name] = proc
        return proc


def _callable(func: Any) -> Any:
    if not callable(func):
        raise TypeError("Expected a callable object.")
    return func


_MODULE: Module | None = None

# ------------------------------------------------------------------------------------------------
# Value conversion (Memgraph's PyObjectToMgpValue, and Cypher values from the caller)
# ------------------------------------------------------------------------------------------------


class NodeRef:
    """A node in a call's arguments or results (``Runtime.node(id)``); compares by graph and id."""

    __slots__ = ("id", "store")

    def __init__(self, store: Store, node_id: int) -> None:
        self.store = store
        self.id = node_id

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, NodeRef) and other.store is self.store and other.id == self.id

    def __hash__(self) -> int:
        return hash(("node", self.id))

    def __repr__(self) -> str:
        return f"NodeRef({self.id})"


class EdgeRef(NodeRef):
    """A relationship in a call's arguments or results."""

    def __repr__(self) -> str:
        return f"EdgeRef({self.id})"


class PathRef(tuple):
    """A path in a call's results: the tuple of its NodeRefs, start to end."""


# what mg_procedure_impl.cpp ToPropertyValue refuses, with its text (property_value)
_NOT_PROPERTIES = (
    (PathRef, "A path is not a valid property value!"),
    (EdgeRef, "An edge is not a valid property value!"),
    (NodeRef, "A vertex is not a valid property value!"),
)


def to_cypher(value: Any, where: str) -> Any:
    """Checks that ``value`` is a Cypher value (no bytes, no numpy); lists come back as lists."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, float):  # numpy.float64 subclasses float and converts, as over Bolt
        return float(value)
    if isinstance(value, int) and not isinstance(value, _Handle):  # a handle is no integer
        return _int64(value, where, ArgumentTypeError)
    if isinstance(value, (list, tuple)):
        return [to_cypher(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, dict):
        return _map_of(
            value,
            lambda k, v: to_cypher(v, f"{where}.{k}"),
            ArgumentTypeError,
            lambda k: f"{where}: expected map keys of type str, got {type(k).__name__} {k!r}",
        )
    if isinstance(value, (NodeRef, datetime.date, datetime.time, datetime.timedelta)):
        return value
    if _is_mgp(value, "Point2d") or _is_mgp(value, "Point3d") or _is_mgp(value, "Enum"):
        return value  # Memgraph 3.x's point and enum values
    raise ArgumentTypeError(
        f"{where}: expected a Cypher value (null, boolean, integer, float, string, list, map, "
        f"node), got {type(value).__module__}.{type(value).__name__}"
    )


def _to_python(value: Any, ctx: CallContext, mgp: Any) -> Any:
    """A checked Cypher argument as the procedure receives it: nodes as ``mgp.Vertex``, lists as
    tuples (nested and in maps), strings cut at the first NUL (``py_module.cpp``
    ``MgpListToPyTuple``, ``MgpValueToPyObject``)."""
    if isinstance(value, list):
        return tuple(_to_python(v, ctx, mgp) for v in value)
    if isinstance(value, dict):
        return {k: _to_python(v, ctx, mgp) for k, v in value.items()}
    if isinstance(value, EdgeRef):
        return mgp.Edge(ctx.edge(value.id))
    if isinstance(value, NodeRef):
        return mgp.Vertex(ctx.vertex(value.id))
    return _c_string(value)


class _Refusal(Exception):
    """What Memgraph's ``PyObjectToMgpValue`` (``py_module.cpp``) raises for a result value:
    ``kind`` is the Python exception it sets (``ValueError``, ``OverflowError``), ``text`` its
    message; ``detail`` says where (the embedded runtime's own addition)."""

    def __init__(self, kind: str, text: str, detail: str) -> None:
        super().__init__(f"{kind + ': ' if kind else ''}{text} (embedded runtime: {detail})")
        self.kind, self.text, self.detail = kind, text, detail


def from_python(value: Any, where: str, store: Store | None) -> Any:
    """Memgraph's conversion of a procedure's result value; refuses what Memgraph refuses (raises
    :class:`_Refusal` with Memgraph's exception type and text)."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):  # a subclass (numpy.str_) arrives as a plain string
        # Memgraph hands strings over as C strings: everything after a NUL is lost.
        return str(value).split("\x00", 1)[0]
    if isinstance(value, int) and not isinstance(value, _Handle):  # a handle is no integer
        if not INT64_MIN <= value <= INT64_MAX:
            raise _Refusal(
                "OverflowError",
                "Python integer is out of range",
                f"{where}: int {value} does not fit in int64",
            )
        return int(value)
    if isinstance(value, float):  # includes numpy.float64, a float subclass, as in Memgraph
        return float(value)
    if isinstance(value, (list, tuple)):
        return [from_python(v, f"{where}[{i}]", store) for i, v in enumerate(value)]
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise _Refusal(
                    "ValueError",
                    "Dictionary keys must be strings",
                    f"{where}: a map key of type {type(k).__name__}",
                )
            out[k] = from_python(v, f"{where}.{k}", store)
        return memgraph_map_order(out)
    if _is_mgp(value, "Vertex"):
        return NodeRef(store, value._vertex.get_id())
    if _is_mgp(value, "Edge"):
        return EdgeRef(store, value._edge.get_id())
    if isinstance(value, Vertex):
        return NodeRef(store, value.get_id())
    if isinstance(value, Edge):
        return EdgeRef(store, value.get_id())
    if _is_mgp(value, "Path"):
        path = value._path
        return PathRef(NodeRef(store, path.vertex_at(i).get_id()) for i in range(path.size() + 1))
    if isinstance(value, (datetime.date, datetime.time, datetime.timedelta)):
        return value
    if _is_mgp(value, "Point2d") or _is_mgp(value, "Point3d"):
        try:
            return mgp_point(value)
        except ValueError as exc:
            raise _Refusal("ValueError", str(exc), f"{where}: {value!r}") from None
    if _is_mgp(value, "Enum"):  # mg_procedure_impl.cpp ToTypedValue, reading the record
        raise _Refusal(
            "",
            "Enum values cannot be returned from procedures. Returning enum results requires "
            "EnumStore context which is not available in this path.",
            where,
        )
    raise _Refusal(
        "ValueError",
        "Unsupported PyObject conversion",
        f"{where}: {type(value).__module__}.{type(value).__name__}",
    )


# ------------------------------------------------------------------------------------------------
# Loading and calling
# ------------------------------------------------------------------------------------------------


def activate() -> Any:
    """Makes this module the ``_mgp`` that ``mgp`` binds to and returns the ``mgp`` module.

    Guarantees: afterwards ``import mgp`` gives Memgraph's ``mgp.py`` built on this ``_mgp`` (an
    ``mgp`` imported earlier over the stub is reloaded in place).
    """
    me = sys.modules[__name__]
    sys.modules["_mgp"] = me
    mgp = sys.modules.get("mgp")
    if mgp is None:
        mgp = importlib.import_module("mgp")
    elif getattr(mgp, "_mgp", None) is not me:
        mgp = importlib.reload(mgp)
    return mgp


def load_module_file(path: str | pathlib.Path) -> Module:
    """Loads a query-module file as Memgraph does and returns what it registered.

    As Memgraph's ``PythonModule::Load`` (``src/query/procedure/module.cpp``): the file's directory
    is appended to ``sys.path`` unless already on it (``src/py/py.hpp`` ``AppendToSysPath``), so
    the module can import files beside it; the module is imported under its file stem
    (``ImportPyModule``: ``PyImport_ImportModule(stem)``), so its ``__name__`` is the stem and it
    is in ``sys.modules`` (a class it defines pickles). Loading a file again runs it afresh, as
    Memgraph's ``mg.load_all()`` does after closing the module. When another module of that name
    wins the import (already imported from another file, or earlier on ``sys.path``), Memgraph
    imports that module instead of the file, and so does this function (with a warning)."""
    global _MODULE
    activate()
    path = pathlib.Path(path)
    directory = os.fspath(path.absolute().parent)
    if directory not in sys.path:
        sys.path.append(directory)
    _QUERY_MODULE_DIRS.add(directory)
    module = Module(path.stem)
    previous, _MODULE = _MODULE, module
    try:
        _import_module_file(path)
    finally:
        _MODULE = previous
    for proc in module.procedures.values():
        if proc.is_batched and not proc.results:  # module.cpp PythonModule::Load
            raise ImportError(
                f"Unable to load module {path}; void procedures cannot be batched (procedure "
                f"'{proc.name}' declares no result fields)."
            )
    logger.debug("loaded query module %s from %s: %s", module.name, path, sorted(module.procedures))
    return module


def _import_module_file(path: pathlib.Path) -> types.ModuleType:
    """``import <stem>`` resolving to ``path`` (run afresh), or to the module that shadows it."""
    name = path.stem
    importlib.invalidate_caches()  # a file written since its directory was last listed counts
    winner = _import_origin(name)
    if winner is not None and not _same_file(winner, path):
        logger.warning(
            "query module %s: 'import %s' finds %s first, so Memgraph loads that module, not %s",
            name,
            name,
            winner,
            path,
        )
        return importlib.import_module(name)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"query module {str(path)!r}: cannot be loaded (not a Python file?)")
    py_module = importlib.util.module_from_spec(spec)
    sys.modules[name] = py_module
    try:
        spec.loader.exec_module(py_module)
    except BaseException:
        if sys.modules.get(name) is py_module:  # a failed import leaves no module behind
            del sys.modules[name]
        raise
    _QUERY_MODULES[name] = py_module
    return py_module


# What this runtime loaded: each Runtime stands for a Memgraph server of its own, so a module
# another Runtime loaded (from the same file or another) is that server's, closed for this one.
_QUERY_MODULE_DIRS: set[str] = set()
_QUERY_MODULES: dict[str, types.ModuleType] = {}


def _import_origin(name: str) -> str | None:
    """What ``import name`` binds before the query-module directories are searched: a module
    already imported (not by this runtime), a built-in one, or a file on the rest of
    ``sys.path``; None when the import would reach a query-module directory."""
    found = sys.modules.get(name)
    if found is not None and found is not _QUERY_MODULES.get(name):
        return getattr(found, "__file__", None) or repr(found)
    try:
        spec = importlib.machinery.PathFinder.find_spec(
            name, [d for d in sys.path if d not in _QUERY_MODULE_DIRS]
        )
    except (ImportError, ValueError):
        return None
    if spec is None and name in sys.builtin_module_names:
        return f"<built-in module {name}>"
    return None if spec is None else (spec.origin or repr(spec))


def _same_file(origin: str, path: pathlib.Path) -> bool:
    try:
        return os.path.samefile(origin, path)
    except OSError:
        return False


# Memgraph 2.0.0 through 2.12.0 run a CALL without a PROCEDURE MEMORY clause with a 100 MB limit
# (src/query/frontend/ast/cypher_main_visitor.cpp visitCallProcedure: "Default to 100 MB"); from
# 2.13.0 such a CALL is unlimited. Every version honours the clause.
MEMGRAPH_2_PROCEDURE_MEMORY_LIMIT_BYTES = 100 * 1024 * 1024
# Memgraph's --query-execution-timeout-sec default (a query running longer is asked to abort)
MEMGRAPH_QUERY_TIMEOUT_S = 600.0

_MEMORY_CLAUSE_RE = re.compile(
    r"PROCEDURE\s+MEMORY\s+(?:(?P<unlimited>UNLIMITED)|LIMIT\s+(?P<n>\S+)\s+(?P<unit>KB|MB))",
    re.IGNORECASE,
)


def procedure_memory_clause(limit_bytes: int | None) -> str:
    """The ``PROCEDURE MEMORY ...`` clause of a CALL for ``limit_bytes`` (None: ``UNLIMITED``;
    whole MB as ``MB``, else rounded up to whole ``KB``)."""
    if limit_bytes is None:
        return "PROCEDURE MEMORY UNLIMITED"
    check_memory_limit(limit_bytes)
    if limit_bytes % (1024 * 1024) == 0:
        return f"PROCEDURE MEMORY LIMIT {limit_bytes // (1024 * 1024)} MB"
    return f"PROCEDURE MEMORY LIMIT {-(-limit_bytes // 1024)} KB"


def parse_procedure_memory_clause(text: str) -> int | None:
    """The limit in bytes a ``PROCEDURE MEMORY LIMIT n KB|MB`` clause sets (None for
    ``PROCEDURE MEMORY UNLIMITED``), as Memgraph evaluates it (``cypher_main_visitor.cpp``
    ``VisitMemoryLimit``: KB = 1024, MB = 1024 * 1024; ``interpret/eval.cpp``
    ``EvaluateMemoryLimit``: the literal must be an integer > 0). Raises ValueError otherwise."""
    match = _MEMORY_CLAUSE_RE.fullmatch(text.strip())
    if match is None:
        raise ValueError(
            f"expected 'PROCEDURE MEMORY UNLIMITED' or 'PROCEDURE MEMORY LIMIT n KB|MB', got "
            f"{text.strip()!r}"
        )
    if match["unlimited"]:
        return None
    if not re.fullmatch(r"[0-9]+", match["n"]) or int(match["n"]) <= 0:
        raise ValueError(
            f"{text.strip()!r}: Memory limit must be a non-negative integer. (Memgraph's text; "
            "it must be an integer >= 1)"
        )
    return int(match["n"]) * (1024 if match["unit"].upper() == "KB" else 1024 * 1024)


def check_memory_limit(limit_bytes: Any) -> None:
    """Refuses a limit that is not None or an int >= 1 (ValueError naming it)."""
    if limit_bytes is not None and (
        not isinstance(limit_bytes, int) or isinstance(limit_bytes, bool) or limit_bytes < 1
    ):
        raise ValueError(
            f"memory_limit_bytes: expected None (PROCEDURE MEMORY UNLIMITED) or an integer >= 1, "
            f"got {limit_bytes!r}"
        )


def _readable(n: int) -> str:
    for unit, size in (("MB", 1024 * 1024), ("KB", 1024)):
        if n % size == 0:
            return f"{n // size} {unit}"
    return f"{n} B"


def _cleanup(proc: Proc) -> None:
    """Calls a batched procedure's cleanup as ``py_module.cpp`` ``CallPythonCleanup`` does: what
    it returns or raises is ignored (logged here at DEBUG)."""
    try:
        proc.cleanup()  # type: ignore[misc]  # -- set for every batched procedure
    except Exception:
        logger.debug(
            "%s: cleanup raised (ignored, as Memgraph does)", proc.qualified_name, exc_info=True
        )


class Runtime:
    """Query modules loaded over one :class:`Store`, callable as ``module.procedure``.

    ``default_memory_limit_bytes``: the procedure memory limit of a call that gives none (None:
    unlimited, as Memgraph >= 2.13.0; :data:`MEMGRAPH_2_PROCEDURE_MEMORY_LIMIT_BYTES` models
    2.0.0-2.12.0). ``query_timeout_s``: after that many seconds from its start a call's
    ``must_abort()`` is true (Memgraph's ``--query-execution-timeout-sec``; None or 0: never).
    ``count_api_calls``: count every ``_mgp`` method call of each procedure call
    (:attr:`api_calls` holds the last call's counts).
    """

    def __init__(
        self,
        store: Store | None = None,
        *,
        default_memory_limit_bytes: int | None = MEMGRAPH_2_PROCEDURE_MEMORY_LIMIT_BYTES,
        query_timeout_s: float | None = MEMGRAPH_QUERY_TIMEOUT_S,
        count_api_calls: bool = False,
    ) -> None:
        check_memory_limit(default_memory_limit_bytes)
        if query_timeout_s is not None and not query_timeout_s >= 0:
            raise ValueError(
                f"query_timeout_s: expected None or a number >= 0, got {query_timeout_s!r}"
            )
        self.store = store if store is not None else Store()
        self.modules: dict[str, Module] = {}
        self.abort_requested: Any = False
        self.default_memory_limit_bytes = default_memory_limit_bytes
        self.query_timeout_s = query_timeout_s or None
        self.count_api_calls = count_api_calls
        self.api_calls: dict[str, int] = {}
        # the transaction start timestamp of the last call (Graph.get_start_timestamp)
        self.start_timestamp = 0

    def load(self, path: str | pathlib.Path) -> Module:
        """Loads (or reloads) a query-module file; returns the registered module."""
        module = load_module_file(path)
        self.modules[module.name] = module
        return module

    def procedure(self, name: str) -> Proc:
        module_name, _, proc_name = name.rpartition(".")
        module = self.modules.get(module_name)
        proc = module.procedures.get(proc_name) if module else None
        if proc is None:
            known = sorted(
                p.qualified_name for m in self.modules.values() for p in m.procedures.values()
            )
            raise ProcedureNotFoundError(
                f"There is no procedure named '{name}' (known: {', '.join(known)})"
            )
        return proc

    def _check_arguments(self, proc: Proc, args: tuple[Any, ...]) -> None:
        """Memgraph's ``ValidateArguments`` (``src/query/procedure/module.hpp``; in 2.x
        ``plan/operator.cpp``): the count, then each argument's type, positions from 0."""
        name = proc.qualified_name
        lo, hi = len(proc.args), len(proc.args) + len(proc.opt_args)
        if not lo <= len(args) <= hi:
            if hi == 0:
                text = f"'{name}' requires no arguments."
            elif lo == hi:
                text = f"'{name}' requires exactly {lo} argument{'' if lo == 1 else 's'}."
            else:
                text = f"'{name}' requires between {lo} and {hi} arguments."
            raise ArgumentTypeError(text)

    def call(
        self,
        name: str,
        *args: Any,
        memory_limit_bytes: int | types.EllipsisType | None = ...,
    ) -> list[dict[str, Any]]:
        """Calls a procedure like ``CALL name(args...) PROCEDURE MEMORY ... YIELD *``; returns one
        dict per record.

        ``memory_limit_bytes``: the ``PROCEDURE MEMORY LIMIT`` of this call in bytes, None for
        ``PROCEDURE MEMORY UNLIMITED``, ``...`` (no clause) for the runtime's default. A value
        read through the ``_mgp`` API or a result value over the limit fails the call. A write
        procedure's changes are undone when the call fails (Memgraph aborts the query's
        transaction). A batched procedure is called as Memgraph's ``CallProcedureCursor::Pull``
        (``src/query/plan/operator.cpp``) calls it for one input row: ``cleanup()``,
        ``initializer(graph, args)``, then the procedure until a call yields no record, then
        ``cleanup()`` and, as the query ends (``Shutdown``), ``cleanup()`` once more."""
        proc = self.procedure(name)
        limit, clause = self._memory_limit(memory_limit_bytes)
        self._check_arguments(proc, args)
        deadline = None if self.query_timeout_s is None else time.monotonic() + self.query_timeout_s

        def must_abort() -> bool:
            return bool(self.abort_requested) or (
                deadline is not None and time.monotonic() > deadline
            )

        counts: dict[str, int] | None = {} if self.count_api_calls else None
        self.start_timestamp += 1

        def context() -> CallContext:
            ctx = CallContext(self.store, proc.is_write, must_abort, limit, clause, counts)
            ctx.start_timestamp = self.start_timestamp
            return ctx

        if proc.is_write:  # the query's transaction: Memgraph aborts it when the CALL fails
            self.store.begin()
        try:
            if proc.initializer is None:
                rows = self._invoke(proc, proc.func, args, context())
            else:
                rows = self._call_batched(proc, args, context)
        except BaseException:
            if proc.is_write:
                self.store.rollback()
            raise
        finally:
            if counts is not None:
                self.api_calls = dict(sorted(counts.items()))
        if proc.is_write:
            self.store.commit()
        return rows

    def _call_batched(
        self, proc: Proc, args: tuple[Any, ...], context: Callable[[], CallContext]
    ) -> list[dict[str, Any]]:
        """The batched procedure's calls for one CALL (see :meth:`call`); each call gets a graph
        of its own, invalid after it."""
        assert proc.initializer is not None
        _cleanup(proc)
        ctx = context()
        try:
            values = self._arguments(proc, args, ctx, activate())
            proc.initializer(ctx.graph(ctx), values)
        except Exception as exc:  # Memgraph: QueryRuntimeException(message), no name prefix
            if isinstance(exc, EmbeddedError):
                raise
            raise ProcedureError(traceback_text(exc), proc.qualified_name) from exc
        finally:
            ctx.invalidate()
        rows: list[dict[str, Any]] = []
        while True:
            batch = self._invoke(proc, proc.func, args, context())
            if not batch:
                break
            rows.extend(batch)
        _cleanup(proc)  # the input is exhausted
        _cleanup(proc)  # the query's Shutdown
        return rows

    def _invoke(
        self, proc: Proc, func: Callable[..., Any], args: tuple[Any, ...], ctx: CallContext
    ) -> list[dict[str, Any]]:
        """One call of ``func`` (the procedure's wrapper) with a graph valid during the call;
        returns its records."""
        name = proc.qualified_name
        mgp = activate()
        try:
            values = self._arguments(proc, args, ctx, mgp)
            try:
                result = func(ctx.graph(ctx), values)
            except Exception as exc:  # what Memgraph reports as the query's error
                raise ProcedureError(memgraph_error_text(name, exc), name) from exc
            return self._records(proc, result, mgp, ctx)
        finally:
            ctx.invalidate()

    def _memory_limit(self, memory_limit_bytes: int | types.EllipsisType | None) -> tuple[Any, str]:
        """The call's limit in bytes (None: unlimited) and the clause that set it, for messages."""
        if memory_limit_bytes is ...:
            limit = self.default_memory_limit_bytes
            clause = (
                "no PROCEDURE MEMORY clause: Memgraph 2.0.0-2.12.0's default "
                f"PROCEDURE MEMORY LIMIT {_readable(limit)}"
                if limit == MEMGRAPH_2_PROCEDURE_MEMORY_LIMIT_BYTES
                else f"the default PROCEDURE MEMORY LIMIT {_readable(limit)}"
                if limit is not None
                else ""
            )
            return limit, clause
        check_memory_limit(memory_limit_bytes)
        limit = memory_limit_bytes
        return limit, f"PROCEDURE MEMORY LIMIT {_readable(limit)}" if limit is not None else ""

    def _arguments(
        self, proc: Proc, args: tuple[Any, ...], ctx: CallContext, mgp: Any
    ) -> tuple[Any, ...]:
        """The call's arguments (defaults filled in) as the procedure receives them; raises
        :class:`ArgumentTypeError` for one that does not satisfy its declared type."""
        name = proc.qualified_name
        values = []
        declared = [(n, t) for n, t in proc.args] + [(n, t) for n, t, _ in proc.opt_args]
        for i, (arg_name, cypher_type) in enumerate(declared):
            if i < len(args):
                cypher = to_cypher(args[i], f"{name}: argument {arg_name!r}")
                self._check_refs(cypher, f"{name}: argument {arg_name!r}")
            else:
                cypher = proc.opt_args[i - len(proc.args)][2]
            value = _to_python(cypher, ctx, mgp)
            if not cypher_type.satisfied_by(value):
                raise ArgumentTypeError(
                    f"'{name}' argument named '{arg_name}' at position {i} must be of type "
                    f"{cypher_type}."
                )
            values.append(value)
        return tuple(values)

    def _check_refs(self, value: Any, where: str) -> None:
        if isinstance(value, NodeRef):
            if value.store is not self.store:
                raise ArgumentTypeError(f"{where}: the node {value!r} belongs to another graph")
        elif isinstance(value, list):
            for v in value:
                self._check_refs(v, where)
        elif isinstance(value, dict):
            for v in value.values():
                self._check_refs(v, where)

    def _records(self, proc: Proc, result: Any, mgp: Any, ctx: CallContext) -> list[dict[str, Any]]:
        """What Memgraph makes of a procedure's return value (``py_module.cpp``
        ``CallPythonProcedure``, ``AddMultipleRecordsFromPython``, ``AddRecordFromPython``): None
        is refused when fields are declared; a sequence is read by index, one record per item,
        and emptied afterwards; anything else must be one ``mgp.Record``. A failure is reported as
        Memgraph reports it (:class:`ResultConversionError`, a :class:`ProcedureError`)."""
        name = proc.qualified_name
        if result is None:
            if not proc.results:
                return []
            raise ResultConversionError(
                f"{name}: Procedure implementation returned None, but its signature declares "
                "result fields. Did you forget a 'return mgp.Record(...)' statement?",
                name,
            )
        if isinstance(result, dict) or not hasattr(type(result), "__getitem__"):
            return [self._record(proc, result, mgp, ctx, None)]  # PySequence_Check fails
        try:
            count = len(result)
            items = [result[i] for i in range(count)]
        except Exception as exc:  # Memgraph: FetchError, formatted like the procedure's own
            raise ResultConversionError(memgraph_error_text(name, exc), name) from exc
        rows = [self._record(proc, record, mgp, ctx, i) for i, record in enumerate(items)]
        if isinstance(result, list):
            del result[:]  # PySequence_DelSlice: Memgraph empties the returned list
        return rows

    def _record(
        self, proc: Proc, record: Any, mgp: Any, ctx: CallContext, index: int | None
    ) -> dict[str, Any]:
        name = proc.qualified_name
        where = "the record" if index is None else f"record {index}"

        def refuse(kind: str, text: str, detail: str) -> ResultConversionError:
            # the error Memgraph sets from C has no traceback: format_exception prints one line
            what = f"{kind}: {text}" if kind else text
            return ResultConversionError(
                f"{name}: {what} (embedded runtime: {where}{detail})\n", name
            )

        if not isinstance(record, mgp.Record):
            raise refuse("TypeError", f"Value '{record}' is not an instance of 'mgp.Record'", "")
        fields = record.fields
        if not isinstance(fields, dict):
            raise refuse("TypeError", "Expected 'mgp.Record.fields' to be a 'dict'", "")
        row = {}
        for field, value in fields.items():
            if not isinstance(field, str):
                raise refuse("TypeError", f"Field name '{field}' is not an instance of 'str'", "")
            try:
                converted = from_python(value, f"field {field!r}", self.store)
                ctx.charge(converted, f"the value of field {field!r}")
            except _Refusal as exc:
                raise refuse(exc.kind, exc.text, f", {exc.detail}") from None
            except UnableToAllocateError as exc:
                # PyObjectToMgpValueWithPythonExceptions: std::bad_alloc -> MemoryError
                raise refuse(
                    "MemoryError",
                    "std::bad_alloc",
                    f", field {field!r}: about {value_bytes(converted):,} bytes, over the "
                    f"procedure memory limit of {memory_limit_text(ctx)}; set a larger "
                    "PROCEDURE MEMORY LIMIT or PROCEDURE MEMORY UNLIMITED on the CALL",
                ) from exc
            if field not in proc.results or not proc.results[field].satisfied_by(converted):
                declared = (
                    f"declared {proc.results[field]}, got {_cypher_type_name(value)}"
                    if field in proc.results
                    else f"not declared (declared: {', '.join(proc.results)})"
                )
                raise refuse(
                    "ValueError",
                    f"Unable to insert field '{field}' with value: '{value}'; did you set the "
                    "correct field type? Please check if the procedure signature matches the "
                    "return values.",
                    f", field {field!r}: {declared}",
                )
            row[field] = converted
        missing = [f for f in proc.results if f not in row]
        if missing:
            # Memgraph 2.x (plan/operator.cpp CallProcedureCursor::Pull); 3.x yields nulls
            raise ResultConversionError(
                f"Procedure '{name}' did not yield all fields as required by its signature. "
                f"(embedded runtime: {where}, missing: {', '.join(missing)})",
                name,
            )
        return row


_SCALAR_TYPE_NAMES = (
    (bool, "BOOLEAN"),
    (int, "INTEGER"),
    (float, "FLOAT"),
    (str, "STRING"),
    (dict, "MAP"),
)


def _cypher_type_name(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, _Handle):
        return "NODE" if value._kind == "v" else "RELATIONSHIP"
    for cls, name in _SCALAR_TYPE_NAMES:  # bool before int: a bool is an int
        if isinstance(value, cls):
            return name
    if isinstance(value, (list, tuple)):
        return "LIST"
    if _is_node(value):
        return "NODE"
    if _is_edge(value):
        return "RELATIONSHIP"
    if _is_path(value):
        return "PATH"
    return type(value).__name__
