"""The embedded runtime loads, names, copies, types and rolls back as Memgraph does. Each test names
the Memgraph source file (memgraph/memgraph, read at commit
df0f63683b6fb5e543ef4ec31b0affffde7c1109; Business Source License: read to compare, nothing
copied) whose behaviour it pins."""

from __future__ import annotations

import logging
import sys
import textwrap
import uuid

import pytest

from memgraph_tf.embedded import ArgumentTypeError, EmbeddedGraph, ProcedureError, _runtime


def _unique(prefix: str) -> str:
    """A module name no other test (or earlier run in this process) uses."""
    return f"{prefix}_{uuid.uuid4().hex[:12]}"


def _module(tmp_path, name: str, body: str):
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(body))
    return path


def _graph_with(tmp_path, prefix: str, body: str) -> tuple[str, EmbeddedGraph]:
    """(a unique module name from ``prefix``, an embedded graph with ``body`` loaded as that
    module)."""
    name = _unique(prefix)
    return name, EmbeddedGraph(modules=[_module(tmp_path, name, body)])


# -- the module's directory is on sys.path ------------------------------------------------------


def test_a_module_imports_a_file_beside_it(tmp_path):
    # src/query/procedure/module.cpp PythonModule::Load: py::AppendToSysPath(the file's
    # directory) (src/py/py.hpp: appended, unless already on sys.path) before importing the module
    helper, name = _unique("helper"), _unique("uses_helper")
    _module(tmp_path, helper, "SCALE = 3\n")
    path = _module(
        tmp_path,
        name,
        f"""
        import mgp
        import {helper}

        @mgp.read_proc
        def scaled(x: int) -> mgp.Record(n=int):
            return mgp.Record(n={helper}.SCALE * x)
        """,
    )
    g = EmbeddedGraph(modules=[path])
    assert g.call(f"{name}.scaled", 2) == [{"n": 6}]
    assert sys.path.count(str(tmp_path)) == 1
    EmbeddedGraph(modules=[path])  # loaded again: the directory is not appended twice
    assert sys.path.count(str(tmp_path)) == 1


def test_an_installed_module_wins_over_a_file_beside_the_module(tmp_path):
    # src/py/py.hpp AppendToSysPath appends: the server's own modules come first on sys.path
    _module(tmp_path, "colorsys", "BESIDE = True\n")
    name = _unique("imports_colorsys")
    path = _module(
        tmp_path,
        name,
        """
        import colorsys
        import mgp

        @mgp.read_proc
        def which() -> mgp.Record(beside=bool):
            return mgp.Record(beside=hasattr(colorsys, "BESIDE"))
        """,
    )
    assert EmbeddedGraph(modules=[path]).call(f"{name}.which") == [{"beside": False}]


# -- the module is imported under its file stem --------------------------------------------------

NAMED = """
import pickle
import sys

import mgp


class Point:
    def __init__(self, x):
        self.x = x


class Oops(Exception):
    pass


@mgp.read_proc
def roundtrip(x: int) -> mgp.Record(name=str, registered=bool, x=int):
    copy = pickle.loads(pickle.dumps(Point(x)))
    return mgp.Record(name=__name__, registered=sys.modules[__name__].Point is Point, x=copy.x)


@mgp.read_proc
def fail() -> mgp.Record(x=int):
    raise Oops("no")
"""


def test_a_module_is_named_after_its_file_and_is_in_sys_modules(tmp_path):
    # src/query/procedure/module.cpp PythonModule::Load -> py_module.cpp ImportPyModule:
    # PyImport_ImportModule(file_path.stem()), so __name__ is the stem and sys.modules holds it:
    # a class the module defines pickles
    name, g = _graph_with(tmp_path, "named", NAMED)
    assert g.call(f"{name}.roundtrip", 4) == [{"name": name, "registered": True, "x": 4}]
    assert sys.modules[name].__file__ == str(tmp_path / f"{name}.py")
    # src/py/py.hpp FormatException: the last line names the class by its module's __name__
    with pytest.raises(ProcedureError, match=rf"\n{name}\.Oops: no\n\Z"):
        g.call(f"{name}.fail")


def test_a_module_that_fails_to_import_leaves_no_entry_in_sys_modules(tmp_path):
    # PyImport_ImportModule (py_module.cpp ImportPyModule) removes a module whose code raised
    name = _unique("broken")
    path = _module(tmp_path, name, "import mgp\nraise RuntimeError('broken on purpose')\n")
    with pytest.raises(RuntimeError, match="broken on purpose"):
        EmbeddedGraph(modules=[path])
    assert name not in sys.modules


def test_a_module_named_like_an_installed_one_loads_that_one(tmp_path, caplog):
    # py_module.cpp ImportPyModule imports by name: a module of the same name found first (the
    # standard library's colorsys, before the appended directory) is the one Memgraph binds; the
    # file's procedures never register
    path = _module(
        tmp_path,
        "colorsys",
        """
        import mgp

        @mgp.read_proc
        def hidden() -> mgp.Record(x=int):
            return mgp.Record(x=1)
        """,
    )
    g = EmbeddedGraph(modules=[])
    with caplog.at_level(logging.WARNING, logger="memgraph_tf.embedded._runtime"):
        assert g.load_module(path) == []
    assert "'import colorsys' finds" in caplog.text
    assert not hasattr(sys.modules["colorsys"], "hidden")


# -- raw _mgp objects cannot be pickled or copied ------------------------------------------------

COPIES = """
import copy
import pickle

import mgp


@mgp.read_proc
def copies(ctx: mgp.ProcCtx, v: mgp.Vertex) -> mgp.Record(outcomes=mgp.List[str]):
    edge = next(iter(v.out_edges))
    path = mgp.Path(v)
    path.expand(edge)
    outcomes = []
    for raw in (v._vertex, edge._edge, path._path, ctx.graph._graph):
        for how in (pickle.dumps, copy.copy, copy.deepcopy):
            try:
                how(raw)
                outcomes.append("copied")
            except TypeError as exc:
                outcomes.append(str(exc))
    return mgp.Record(outcomes=outcomes)
"""


def test_raw_vertices_edges_paths_and_graphs_refuse_pickle_and_copy(tmp_path):
    # tests/unit/query_procedure_py_module.cpp AssertPickleAndCopyAreNotSupported (pickle.dumps,
    # copy.copy and copy.deepcopy of _vertex, _edge, _path fail); the TypeError text is
    # src/query/procedure/py_module.cpp DisallowPickleAndCopy's, the __reduce__ of those types
    name, g = _graph_with(tmp_path, "copies", COPIES)
    a, b = g.add_node(["A"]), g.add_node(["B"])
    g.add_edge(a, b, "R")
    [row] = g.call(f"{name}.copies", g.node(a))
    expected = [
        f"cannot pickle nor copy '{kind}' object"
        for kind in ("Vertex", "Edge", "Path", "Graph")
        for _ in range(3)
    ]
    assert row["outcomes"] == expected


# -- type names ----------------------------------------------------------------------------------

TYPED = """
import typing

import mgp


@mgp.read_proc
def typed(
    a: mgp.Nullable[mgp.List[mgp.Any]],
    b: mgp.Nullable[typing.Any],
    c: list,
    d: mgp.Nullable[list],
    e: mgp.List[mgp.Nullable[str]],
    f: mgp.Nullable[mgp.List[mgp.Nullable[int]]],
) -> mgp.Record(out=mgp.Nullable[mgp.List[int]]):
    return mgp.Record(out=None)
"""


def test_type_names_are_memgraphs(tmp_path):
    # src/query/procedure/cypher_types.hpp NullableType: a nullable list is named "LIST? OF x",
    # and NullableType::Create returns a nullable type as it is (typing.Any is already nullable
    # in mgp.py, so Nullable[typing.Any] stays "ANY?")
    name, g = _graph_with(tmp_path, "typed", TYPED)
    assert g.procedures()[f"{name}.typed"] == (
        f"{name}.typed(a :: LIST? OF ANY, b :: ANY?, c :: LIST OF ANY?, d :: LIST? OF ANY?, "
        "e :: LIST OF STRING?, f :: LIST? OF INTEGER?) :: (out :: LIST? OF INTEGER)"
    )
    assert g.call(f"{name}.typed", None, None, [None], None, ["x", None], None) == [{"out": None}]
    # src/query/procedure/module.hpp ValidateArguments: the type's presentable name in the error
    with pytest.raises(
        ArgumentTypeError,
        match=rf"\A'{name}\.typed' argument named 'a' at position 0 must be of type "
        r"LIST\? OF ANY\.\Z",
    ):
        g.call(f"{name}.typed", [None], None, [], None, [], None)


# -- a failed write procedure leaves no writes --------------------------------------------------

WRITES = """
import mgp


@mgp.write_proc
def write(ctx: mgp.ProcCtx, v: mgp.Vertex, fail: str) -> mgp.Record(out=mgp.Nullable[mgp.Any]):
    v.properties.set("p", 2)
    v.properties.set("gone", None)
    v.add_label("Added")
    v.remove_label("A")
    created = ctx.graph.create_vertex()
    created.properties.set("q", [1, 2])
    edge = ctx.graph.create_edge(v, created, mgp.EdgeType("NEW"))
    edge.properties.set("w", 1.5)
    old = next(e for e in v.out_edges if e.type.name == "OLD")
    old.properties.set("w", 9.0)
    if fail == "raise":
        raise RuntimeError("after writing")
    return mgp.Record(out=b"bytes" if fail == "result" else created.id)
"""


def _snapshot(g: EmbeddedGraph):
    return (
        g.node_count,
        [(g.labels(n), g.get_property(n, "p"), g.get_property(n, "gone")) for n in g.nodes()],
        g.edges(),
    )


@pytest.mark.parametrize("fail", ["raise", "result"])
def test_a_failed_write_procedure_leaves_the_graph_unchanged(tmp_path, fail):
    # src/query/plan/operator.cpp CallProcedureCursor::Pull throws on the procedure's error (and
    # on a result it cannot convert); src/query/interpreter.cpp Interpreter::AbortCommand then
    # aborts the query's transaction: none of the procedure's writes stay
    name, g = _graph_with(tmp_path, "writes", WRITES)
    v = g.add_node(["A"], {"p": 1, "gone": "here"})
    w = g.add_node(["B"])
    g.add_edge(v, w, "OLD")
    before = _snapshot(g)
    assert g.find_nodes("A", "p", 1) == [v]  # an index built before the call
    with pytest.raises(ProcedureError, match="after writing" if fail == "raise" else "bytes"):
        g.call(f"{name}.write", g.node(v), fail)
    assert _snapshot(g) == before
    assert g.edges() == [(v, w, {})]
    assert g.find_nodes("A", "p", 1) == [v]
    assert g.find_nodes("Added", "p", 2) == []


def test_a_write_procedure_that_succeeds_keeps_its_writes(tmp_path):
    name, g = _graph_with(tmp_path, "writes", WRITES)
    v = g.add_node(["A"], {"p": 1, "gone": "here"})
    w = g.add_node(["B"])
    g.add_edge(v, w, "OLD")
    [row] = g.call(f"{name}.write", g.node(v), "no")
    assert row == {"out": 2}
    assert g.labels(v) == ["Added"]
    assert (g.get_property(v, "p"), g.get_property(v, "gone")) == (2, None)
    assert g.get_property(2, "q") == [1, 2]
    assert g.edges() == [(v, w, {"w": 9.0}), (v, 2, {"w": 1.5})]
    # the next failing call undoes only its own writes
    with pytest.raises(ProcedureError, match="after writing"):
        g.call(f"{name}.write", g.node(v), "raise")
    assert g.node_count == 3 and g.labels(v) == ["Added"] and len(g.edges()) == 2


# -- what a procedure may set as a property ------------------------------------------------------

SETS = """
import mgp


@mgp.write_proc
def put(ctx: mgp.ProcCtx, v: mgp.Vertex, what: str) -> mgp.Record(ok=bool):
    values = {
        "vertex": v,
        "edge_in_list": [1, next(iter(v.out_edges))],
        "path_in_map": {"p": mgp.Path(v)},
        "bytes": b"raw",
        "huge": 2**63,
        "nul": "ab\\x00cd",
    }
    v.properties.set("x", values[what])
    return mgp.Record(ok=True)
"""


@pytest.mark.parametrize(
    "what, last_line",
    [
        ("vertex", "mgp.ValueConversionError: A vertex is not a valid property value!"),
        ("edge_in_list", "mgp.ValueConversionError: An edge is not a valid property value!"),
        ("path_in_map", "mgp.ValueConversionError: A path is not a valid property value!"),
        ("bytes", "ValueError: Unsupported PyObject conversion .*builtins.bytes\\)"),
        ("huge", "OverflowError: Python integer is out of range .*"),
    ],
)
def test_a_property_value_is_converted_as_memgraph_converts_it(tmp_path, what, last_line):
    # src/query/procedure/py_module.cpp PyVertexSetProperty:
    # PyObjectToMgpValueWithPythonExceptions (ValueError, OverflowError), then
    # mg_procedure_impl.cpp mgp_vertex_set_property -> ToPropertyValue: a vertex, edge or path is
    # a ValueConversionException (_mgp.ValueConversionError, re-raised by mgp.py as its own)
    name, g = _graph_with(tmp_path, "sets", SETS)
    a, b = g.add_node(["A"]), g.add_node(["B"])
    g.add_edge(a, b, "R")
    with pytest.raises(ProcedureError, match=rf"\n{last_line}\n\Z"):
        g.call(f"{name}.put", g.node(a), what)
    assert g.get_property(a, "x") is None


def test_a_string_property_is_cut_at_its_first_nul(tmp_path):
    # py_module.cpp PyObjectToMgpValue hands a str over as a C string (mgp_value_make_string)
    name, g = _graph_with(tmp_path, "sets", SETS)
    a, b = g.add_node(["A"]), g.add_node(["B"])
    g.add_edge(a, b, "R")
    g.call(f"{name}.put", g.node(a), "nul")
    assert g.get_property(a, "x") == "ab"


def test_composite_type_names_and_what_satisfies_them():
    # tests/unit/query_procedure_mgp_type.cpp PresentableNameCompositeTypes and
    # {Bool,Int,Double,String}SatisfiesType (src/query/procedure/cypher_types.hpp)
    t = _runtime
    nullable, listof = t.type_nullable, t.type_list
    names = {
        nullable(t.type_any()): "ANY?",
        nullable(nullable(nullable(t.type_any()))): "ANY?",
        nullable(listof(t.type_any())): "LIST? OF ANY",
        listof(t.type_int()): "LIST OF INTEGER",
        listof(nullable(t.type_path())): "LIST OF PATH?",
        listof(listof(t.type_map())): "LIST OF LIST OF MAP",
        nullable(listof(nullable(listof(nullable(t.type_string()))))): "LIST? OF LIST? OF STRING?",
    }
    assert {str(k): v for k, v in names.items()} == {v: v for v in names.values()}
    kinds = ["any", "bool", "string", "int", "float", "number", "map", "node", "relationship"]
    satisfied = [
        (True, {"any", "bool"}),
        (42, {"any", "int", "number"}),
        (42.0, {"any", "float", "number"}),
        ("text", {"any", "string"}),
    ]
    for value, fits in satisfied:
        for kind in kinds:
            cypher_type = getattr(t, f"type_{kind}")()
            assert cypher_type.satisfied_by(value) == (kind in fits), (value, kind)
            assert nullable(cypher_type).satisfied_by(value) == (kind in fits), (value, kind)
            assert nullable(cypher_type).satisfied_by(None)
            assert not listof(cypher_type).satisfied_by(value)


SIGNED = """
import mgp


@mgp.read_proc
def signed(
    n: int,
    text: str = 'say "hi"\\n',
    ratio: float = 0.05,
    flags: mgp.List[bool] = [True, False],
    options: mgp.Map = {"z": None, "a": 1.0},
) -> mgp.Record(zeta=int, alpha=mgp.Deprecated(str), mid=mgp.Nullable[mgp.List[int]]):
    return mgp.Record(zeta=n, alpha=text, mid=None)
"""


def test_a_signature_is_printed_as_mg_procedures_prints_it(tmp_path):
    # src/query/procedure/mg_procedure_impl.cpp PrintProcSignature (called by module.cpp for
    # mg.procedures()): defaults through PrintValue (Null, true/false, C++ stream numbers,
    # utils::Escape'd strings, maps with sorted keys), result fields in std::map (name) order,
    # deprecated ones marked DEPRECATED
    name, g = _graph_with(tmp_path, "signed", SIGNED)
    assert g.procedures()[f"{name}.signed"] == (
        f'{name}.signed(n :: INTEGER, text = "say \\"hi\\"\\n" :: STRING, ratio = 0.05 :: FLOAT, '
        "flags = [true, false] :: LIST OF BOOLEAN, options = {a: 1, z: Null} :: MAP) :: "
        "(DEPRECATED alpha :: STRING, mid :: LIST? OF INTEGER, zeta :: INTEGER)"
    )
    assert g.call(f"{name}.signed", 3) == [{"zeta": 3, "alpha": 'say "hi"\n', "mid": None}]
