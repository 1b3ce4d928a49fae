"""A working ``_mgp`` over an in-memory graph, so Memgraph's real ``mgp.py`` runs query modules.

PyPI's ``mgp`` package ships Memgraph's real Python API layer ``mgp.py`` but only an empty stub of
the C extension ``_mgp`` it is built on. This module is that extension, written from what ``mgp.py``
uses, over a plain in-memory property graph (:class:`Store`). It is **stdlib-only** and needs no
other module of the library than ``memgraph_tf.errors`` (stdlib-only too, and shipped with the
helper package ``install-modules`` writes), so it may be copied as ``_mgp.py`` next to ``mgp.py``
wherever that helper package is importable: :func:`activate` makes it the ``_mgp`` that
``import mgp`` binds to, :class:`Runtime` loads query-module files the way Memgraph does (the module
is named after the file; its ``@mgp.read_proc`` functions register on ``_MODULE`` while it loads)
and calls procedures converting values the way Memgraph does:

* arguments must be Cypher values (null, bool, int64, float, str, list, map with str keys, nodes,
  relationships, paths, temporal values) satisfying the declared types, else
  :class:`ArgumentTypeError`;
* results must be ``mgp.Record`` objects with exactly the declared fields whose values convert
  (Memgraph's ``PyObjectToMgpValue``: ``bytes``, numpy scalars and arrays fail with "Unsupported
  PyObject conversion") and satisfy the declared types, else :class:`ResultConversionError`;
* an exception raised by the procedure becomes :class:`ProcedureError` naming the procedure;
* graph objects handed to a call are invalid after it; read procedures see an immutable graph.
"""

from __future__ import annotations

import datetime
import functools
import importlib
import importlib.util
import itertools
import logging
import pathlib
import sys
import traceback
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


class ResultConversionError(EmbeddedError, TypeError):
    """A procedure returned something Memgraph cannot convert or did not declare."""


class ProcedureError(EmbeddedError, RuntimeError):
    """The procedure raised: the message is the text Memgraph sends a Bolt client, ``"<module.proc>:
    "`` followed by :func:`traceback.format_exception` of the exception without the ``mgp.py``
    wrapper frame (chained exceptions included), so its last line is ``module.Class: message``.
    The procedure's own exception is the ``__cause__``; ``procedure`` is the qualified name."""

    def __init__(self, message: str, procedure: str = "") -> None:
        super().__init__(message)
        self.procedure = procedure


_THIS_FILE = __file__


def memgraph_error_text(procedure: str, exc: BaseException) -> str:
    """The message Memgraph sends when ``procedure`` raised ``exc`` (``src/py/py.hpp``
    ``FormatException(exc_info, skip_first_line=true)``, prefixed with ``"<procedure>: "`` by
    ``plan/operator.cpp`` ``CallProcedureCursor``).

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
    return f"{procedure}: " + "".join(te.format())


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
        self.out_edges.append([])
        self.in_edges.append([])
        return vid

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
        return eid

    def set_property(self, props: dict[str, Any], key: str, value: Any) -> None:
        if value is None:
            props.pop(key, None)
        else:
            props[key] = store_value(value, f"property {key!r}")


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
        if all(type(v) in _SCALARS for v in items):
            return _ScalarList(items)
        return tuple(items)
    if isinstance(value, dict):
        return _map_of(
            value,
            lambda k, v: store_value(v, where),
            ValueConversionError,
            lambda k: f"{where}: expected map keys of type str, got {type(k).__name__}",
        )
    if isinstance(value, (datetime.date, datetime.time, datetime.timedelta)):
        return value
    raise ValueConversionError(
        f"{where}: Unsupported PyObject conversion of {type(value).__name__} to a property value"
    )


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
    """``{k: convert(k, v)}``; raises ``error(message(k))`` for the first key that is not a str."""
    out = {}
    for k, v in value.items():
        if not isinstance(k, str):
            raise error(message(k))
        out[k] = convert(k, v)
    return out


class _ScalarList(tuple):
    """A stored list whose elements are all scalars (copied out with one ``list()``)."""


def load_value(value: Any) -> Any:
    """A stored value as a procedure sees it: fresh lists and dicts."""
    if type(value) is _ScalarList:
        return list(value)
    if isinstance(value, tuple):
        return [load_value(v) for v in value]
    if isinstance(value, dict):
        return {k: load_value(v) for k, v in value.items()}
    return value


# ------------------------------------------------------------------------------------------------
# The _mgp object API used by mgp.py
# ------------------------------------------------------------------------------------------------


class CallContext:
    """Validity, mutability and abort flag of one procedure call."""

    def __init__(self, store: Store, mutable: bool, must_abort: Callable[[], bool]) -> None:
        self.store = store
        # this call's handle classes: vertex(id) and edge(id) make handles in C
        self.vertex = type(
            "Vertex", (Vertex,), {"__slots__": (), "_ctx": self, "__new__": int.__new__}
        )
        self.edge = type("Edge", (Edge,), {"__slots__": (), "_ctx": self, "__new__": int.__new__})
        self.esrc = store.esrc  # the edges' ends, read once per edge by Edge.from_vertex/to_vertex
        self.edst = store.edst
        self.valid = True
        self.mutable = mutable
        self.must_abort = must_abort


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
    (``_id``). Equal when they are the same kind of handle to the same id of the same store; always
    true as a condition (a vertex 0 too)."""

    __slots__ = ()
    _kind = ""

    def is_valid(self) -> bool:
        return self._ctx.valid

    def underlying_graph_is_mutable(self) -> bool:
        return self._ctx.mutable

    def __eq__(self, other: Any) -> bool:
        return (
            isinstance(other, _HandleApi)
            and other._kind == self._kind
            and other._id == self._id
            and other._ctx.store is self._ctx.store
        )

    def __ne__(self, other: Any) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash((self._kind, self._id))

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
        if name not in self._ctx.store.labels[self._id]:
            self._ctx.store.labels[self._id].append(name)

    def remove_label(self, label: Any) -> None:
        _check_mutable(self._ctx)
        name = getattr(label, "name", label)
        if name in self._ctx.store.labels[self._id]:
            self._ctx.store.labels[self._id].remove(name)

    def iter_properties(self) -> MgpIterable:
        return MgpIterable(
            [(k, load_value(v)) for k, v in self._ctx.store.vprops[self._id].items()]
        )

    def get_property(self, name: str) -> Any:
        value = self._ctx.store.vprops[self].get(name)
        return (
            list(value) if type(value) is _ScalarList else load_value(value)
        )  # the common case inline

    def set_property(self, name: str, value: Any) -> None:
        _check_mutable(self._ctx)
        self._ctx.store.set_property(self._ctx.store.vprops[self._id], name, value)

    def iter_in_edges(self) -> MgpIterable:
        return MgpIterable(list(self._ctx.store.in_edges[self]), self._ctx.edge)

    def iter_out_edges(self) -> MgpIterable:
        return MgpIterable(list(self._ctx.store.out_edges[self]), self._ctx.edge)


class Edge(_Handle):
    __slots__ = ()
    _kind = "e"

    def get_type_name(self) -> str:
        return self._ctx.store.etype[self._id]

    def from_vertex(self) -> Vertex:
        ctx = self._ctx
        return ctx.vertex(ctx.esrc[self])

    def to_vertex(self) -> Vertex:
        ctx = self._ctx
        return ctx.vertex(ctx.edst[self])

    def iter_properties(self) -> MgpIterable:
        props = self._ctx.store.eprops[self._id] or {}
        return MgpIterable([(k, load_value(v)) for k, v in props.items()])

    def get_property(self, name: str) -> Any:
        return load_value((self._ctx.store.eprops[self._id] or {}).get(name))

    def set_property(self, name: str, value: Any) -> None:
        _check_mutable(self._ctx)
        store = self._ctx.store
        if store.eprops[self._id] is None:
            store.eprops[self._id] = {}
        store.set_property(store.eprops[self._id], name, value)


class Path:
    __slots__ = ("_edges", "_vertices")

    def __init__(self, vertices: list[Vertex], edges: list[Edge]) -> None:
        self._vertices = vertices
        self._edges = edges

    @staticmethod
    def make_with_start(vertex: Vertex) -> Path:
        return Path([vertex], [])

    def is_valid(self) -> bool:
        return all(v.is_valid() for v in self._vertices)

    def expand(self, edge: Edge) -> None:
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

    def size(self) -> int:
        return len(self._edges)

    def vertex_at(self, index: int) -> Vertex:
        return self._vertices[index]

    def edge_at(self, index: int) -> Edge:
        return self._edges[index]


class Graph:
    __slots__ = ("_ctx",)

    def __init__(self, ctx: CallContext) -> None:
        self._ctx = ctx

    def is_valid(self) -> bool:
        return self._ctx.valid

    def is_mutable(self) -> bool:
        return self._ctx.mutable

    def must_abort(self) -> bool:
        return bool(self._ctx.must_abort())

    def get_vertex_by_id(self, vertex_id: int) -> Vertex:
        if not isinstance(vertex_id, int) or not 0 <= vertex_id < len(self._ctx.store.labels):
            raise IndexError(f"Unable to find vertex with ID {vertex_id}.")
        return self._ctx.vertex(vertex_id)

    def iter_vertices(self) -> MgpIterable:
        return MgpIterable(list(range(len(self._ctx.store.labels))), self._ctx.vertex)

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
    pass


class Messages:
    pass


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
    """A declared argument or result type; ``str()`` is its Cypher name (``LIST OF STRING``)."""

    def __init__(self, name: str, check: Callable[[Any], bool]) -> None:
        self._name = name
        self._check = check

    def satisfied_by(self, value: Any) -> bool:
        """Whether a converted (Python) value satisfies this type; null only for nullable types."""
        return value is not None and self._check(value)

    def __str__(self) -> str:
        return self._name

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
    return CypherType("LOCAL_DATE_TIME", lambda v: isinstance(v, datetime.datetime))


def type_duration() -> CypherType:
    return CypherType("DURATION", lambda v: isinstance(v, datetime.timedelta))


def type_list(element: CypherType) -> CypherType:
    return CypherType(
        f"LIST OF {element}",
        lambda v: isinstance(v, list) and all(element.satisfied_by(x) for x in v),
    )


def type_nullable(inner: CypherType) -> CypherType:
    nullable = CypherType(f"{inner}?", inner._check)
    nullable.satisfied_by = (  # type: ignore[method-assign]  # -- an own check: null passes too
        lambda v: v is None or inner.satisfied_by(v)
    )
    return nullable


# ------------------------------------------------------------------------------------------------
# Modules and procedures
# ------------------------------------------------------------------------------------------------


class Proc:
    """A registered procedure: its Python wrapper, arguments and result fields."""

    def __init__(self, module: Module, func: Callable[..., Any], is_write: bool) -> None:
        self.module = module
        self.func = func
        self.name = func.__name__
        self.is_write = is_write
        self.args: list[tuple[str, CypherType]] = []
        self.opt_args: list[tuple[str, CypherType, Any]] = []
        self.results: dict[str, CypherType] = {}

    @property
    def qualified_name(self) -> str:
        return f"{self.module.name}.{self.name}"

    def add_arg(self, name: str, cypher_type: CypherType) -> None:
        if self.opt_args:
            raise LogicErrorError(
                f"{self.qualified_name}: required argument {name!r} after optional ones"
            )
        self.args.append((name, cypher_type))

    def add_opt_arg(self, name: str, cypher_type: CypherType, default: Any) -> None:
        converted = to_cypher(default, f"default of argument {name!r}")
        if not cypher_type.satisfied_by(converted):
            raise ValueConversionError(
                f"{self.qualified_name}: default of {name!r} does not satisfy {cypher_type}"
            )
        self.opt_args.append((name, cypher_type, converted))

    def add_result(self, name: str, cypher_type: CypherType) -> None:
        if name in self.results:
            raise KeyAlreadyExistsError(
                f"{self.qualified_name}: result field {name!r} declared twice"
            )
        self.results[name] = cypher_type

    add_deprecated_result = add_result

    def signature(self) -> str:
        args = [f"{n} :: {t}" for n, t in self.args] + [
            f"{n} = {d!r} :: {t}" for n, t, d in self.opt_args
        ]
        res = [f"{n} :: {t}" for n, t in self.results.items()]
        return f"{self.qualified_name}({', '.join(args)}) :: ({', '.join(res)})"


class Module:
    """What a query-module file registers while it is being loaded (``_mgp._MODULE``)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.procedures: dict[str, Proc] = {}
        self.functions: dict[str, Callable[..., Any]] = {}

    @staticmethod
    def add_read_procedure(module: Module, func: Callable[..., Any]) -> Proc:
        return module._add(func, False)

    @staticmethod
    def add_write_procedure(module: Module, func: Callable[..., Any]) -> Proc:
        return module._add(func, True)

    @staticmethod
    def add_function(module: Module, func: Callable[..., Any]) -> Proc:
        proc = Proc(module, func, False)
        module.functions[proc.name] = func
        return proc

    def add_transformation(self, func: Callable[..., Any]) -> None:
        raise UnknownError("stream transformations are not supported by the embedded runtime")

    def _add(self, func: Callable[..., Any], is_write: bool) -> Proc:
        proc = Proc(self, func, is_write)
        if proc.name in self.procedures:
            raise KeyAlreadyExistsError(f"procedure {proc.qualified_name} registered twice")
        self.procedures[proc.name] = proc
        return proc


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
    raise ArgumentTypeError(
        f"{where}: expected a Cypher value (null, boolean, integer, float, string, list, map, "
        f"node), got {type(value).__module__}.{type(value).__name__}"
    )


def _to_python(value: Any, ctx: CallContext, mgp: Any) -> Any:
    """A checked Cypher argument as the procedure receives it (nodes as ``mgp.Vertex``)."""
    if isinstance(value, list):
        return [_to_python(v, ctx, mgp) for v in value]
    if isinstance(value, dict):
        return {k: _to_python(v, ctx, mgp) for k, v in value.items()}
    if isinstance(value, EdgeRef):
        return mgp.Edge(Edge(ctx, value.id))
    if isinstance(value, NodeRef):
        return mgp.Vertex(Vertex(ctx, value.id))
    return value


def from_python(value: Any, where: str, store: Store) -> Any:
    """Memgraph's conversion of a procedure's result value; refuses what Memgraph refuses."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):  # a subclass (numpy.str_) arrives as a plain string
        # Memgraph hands strings over as C strings: everything after a NUL is lost.
        return str(value).split("\x00", 1)[0]
    if isinstance(value, int) and not isinstance(value, _Handle):  # a handle is no integer
        return _int64(
            value,
            where,
            ResultConversionError,
            "{where}: int {value} does not fit in int64 (overflow)",
        )
    if isinstance(value, float):  # includes numpy.float64, a float subclass, as in Memgraph
        return float(value)
    if isinstance(value, (list, tuple)):
        return [from_python(v, f"{where}[{i}]", store) for i, v in enumerate(value)]
    if isinstance(value, dict):
        return _map_of(
            value,
            lambda k, v: from_python(v, f"{where}.{k}", store),
            ResultConversionError,
            lambda k: f"{where}: map keys must be str, got {type(k).__name__}",
        )
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
    raise ResultConversionError(
        f"{where}: Unsupported PyObject conversion of "
        f"{type(value).__module__}.{type(value).__name__}"
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
    """Loads a query-module file as Memgraph does and returns what it registered."""
    global _MODULE
    activate()
    path = pathlib.Path(path)
    module = Module(path.stem)
    spec = importlib.util.spec_from_file_location(f"_memgraph_tf_query_module_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"query module {str(path)!r}: cannot be loaded (not a Python file?)")
    py_module = importlib.util.module_from_spec(spec)
    previous, _MODULE = _MODULE, module
    try:
        spec.loader.exec_module(py_module)
    finally:
        _MODULE = previous
    logger.debug("loaded query module %s from %s: %s", module.name, path, sorted(module.procedures))
    return module


class Runtime:
    """Query modules loaded over one :class:`Store`, callable as ``module.procedure``."""

    def __init__(self, store: Store | None = None) -> None:
        self.store = store if store is not None else Store()
        self.modules: dict[str, Module] = {}
        self.abort_requested = False

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

    def call(self, name: str, *args: Any) -> list[dict[str, Any]]:
        """Calls a procedure like ``CALL name(args...) YIELD *``; returns one dict per record."""
        proc = self.procedure(name)
        lo, hi = len(proc.args), len(proc.args) + len(proc.opt_args)
        if not lo <= len(args) <= hi:
            expected = f"{lo}" if lo == hi else f"{lo} to {hi}"
            raise ArgumentTypeError(
                f"{name}: expected {expected} arguments, got {len(args)} ({proc.signature()})"
            )
        mgp = activate()
        ctx = CallContext(self.store, proc.is_write, lambda: self.abort_requested)
        try:
            values = []
            declared = [(n, t) for n, t in proc.args] + [(n, t) for n, t, _ in proc.opt_args]
            for i, (arg_name, cypher_type) in enumerate(declared):
                if i < len(args):
                    cypher = to_cypher(args[i], f"{name}: argument {arg_name!r}")
                    self._check_refs(cypher, f"{name}: argument {arg_name!r}")
                else:
                    cypher = proc.opt_args[i - lo][2]
                value = _to_python(cypher, ctx, mgp)
                if not cypher_type.satisfied_by(value):
                    raise ArgumentTypeError(
                        f"{name}: argument {arg_name!r} at position {i + 1} expects {cypher_type}, "
                        f"got {_cypher_type_name(value)}"
                    )
                values.append(value)
            try:
                result = proc.func(Graph(ctx), tuple(values))
            except Exception as exc:  # what Memgraph reports as the query's error
                raise ProcedureError(memgraph_error_text(name, exc), name) from exc
            return self._records(proc, result, mgp)
        finally:
            ctx.valid = False

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

    def _records(self, proc: Proc, result: Any, mgp: Any) -> list[dict[str, Any]]:
        name = proc.qualified_name
        if result is None:
            return []
        items = [result] if isinstance(result, mgp.Record) else result
        try:
            items = list(items)
        except TypeError:
            raise ResultConversionError(
                f"{name}: expected an mgp.Record, an iterable of them or None, got "
                f"{type(result).__name__}"
            ) from None
        rows = []
        for i, record in enumerate(items):
            if not isinstance(record, mgp.Record):
                raise ResultConversionError(
                    f"{name}: record {i}: expected an mgp.Record, got {type(record).__name__}"
                )
            row = {}
            for field, value in record.fields.items():
                if field not in proc.results:
                    raise ResultConversionError(
                        f"{name}: record {i}: unexpected result field {field!r} (declared: "
                        f"{', '.join(proc.results)})"
                    )
                converted = from_python(value, f"{name}: record {i} field {field!r}", self.store)
                if not proc.results[field].satisfied_by(converted):
                    raise ResultConversionError(
                        f"{name}: record {i} field {field!r}: expected {proc.results[field]}, got "
                        f"{_cypher_type_name(value)}"
                    )
                row[field] = converted
            missing = [f for f in proc.results if f not in row]
            if missing:
                raise ResultConversionError(
                    f"{name}: record {i}: did not yield all fields required by its signature "
                    f"(missing: {', '.join(missing)})"
                )
            rows.append(row)
        return rows


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
