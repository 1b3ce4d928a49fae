"""The embedded runtime converts and refuses values the way Memgraph does (real mgp.py on top)."""

from __future__ import annotations

import textwrap

import _memgraph_tf_modules_cases as cases  # registered by conftest.py
import numpy as np
import pytest

from memgraph_tf.embedded import (
    ArgumentTypeError,
    EmbeddedGraph,
    NodeRef,
    ProcedureError,
    ProcedureNotFoundError,
    ResultConversionError,
)

PROBE = textwrap.dedent(
    """
    import mgp
    import numpy as np

    KEPT = []

    @mgp.read_proc
    def give(ctx: mgp.ProcCtx, what: str) -> mgp.Record(value=mgp.Nullable[mgp.Any]):
        values = {
            "bytes": b"abc",
            "np_int64": np.int64(3),
            "np_float32": np.float32(1.5),
            "np_float64": np.float64(2.5),
            "np_str": np.str_("s"),
            "np_array": np.arange(3),
            "np_bool": np.bool_(True),
            "overflow": 2**63,
            "int": 2**63 - 1,
            "tuple": (1, "a", [2.5]),
            "nested_bytes": {"k": [1, b"x"]},
            "set": {1, 2},
            "nul": "ab\\x00cd",
            "vertex": ctx.graph.get_vertex_by_id(1),
        }
        return mgp.Record(value=values[what])

    @mgp.read_proc
    def typed(ctx: mgp.ProcCtx) -> mgp.Record(n=int):
        return mgp.Record(n="not an int")

    @mgp.read_proc
    def extra_field(ctx: mgp.ProcCtx) -> mgp.Record(a=int):
        return mgp.Record(a=1, b=2)

    @mgp.read_proc
    def missing_field(ctx: mgp.ProcCtx) -> mgp.Record(a=int, b=int):
        return mgp.Record(a=1)

    @mgp.read_proc
    def not_a_record(ctx: mgp.ProcCtx) -> mgp.Record(a=int):
        return [{"a": 1}]

    @mgp.read_proc
    def many(ctx: mgp.ProcCtx, n: int) -> mgp.Record(i=int):
        return [mgp.Record(i=i) for i in range(n)]

    @mgp.read_proc
    def nothing(ctx: mgp.ProcCtx) -> mgp.Record(i=int):
        return None

    @mgp.read_proc
    def write_in_read(ctx: mgp.ProcCtx, v: mgp.Vertex) -> mgp.Record(ok=bool):
        v.properties.set("p", 1)
        return mgp.Record(ok=True)

    @mgp.write_proc
    def write(ctx: mgp.ProcCtx, v: mgp.Vertex, value: mgp.Any) -> mgp.Record(ok=bool):
        v.properties.set("p", value)
        return mgp.Record(ok=True)

    @mgp.read_proc
    def keep(ctx: mgp.ProcCtx, v: mgp.Vertex) -> mgp.Record(labels=mgp.List[str], deg=int):
        KEPT.append(v)
        return mgp.Record(labels=[l.name for l in v.labels], deg=len(list(v.out_edges)))

    @mgp.read_proc
    def use_kept(ctx: mgp.ProcCtx) -> mgp.Record(id=int):
        return mgp.Record(id=KEPT[-1].id)

    @mgp.read_proc
    def map_keys(ctx: mgp.ProcCtx, m: mgp.Map) -> mgp.Record(keys=list, inner=list):
        return mgp.Record(keys=list(m), inner=list(m["inner"]))

    @mgp.read_proc
    def stored_keys(ctx: mgp.ProcCtx, v: mgp.Vertex) -> mgp.Record(keys=list, inner=list):
        m = v.properties.get("m")
        return mgp.Record(keys=list(m), inner=list(m["inner"]))

    @mgp.read_proc
    def unsorted_map(ctx: mgp.ProcCtx) -> mgp.Record(m=mgp.Map):
        return mgp.Record(m={"b": 1, "inner": {"y": 1, "x": 2}, "a": 0})

    @mgp.read_proc
    def args(ctx: mgp.ProcCtx, x: mgp.Number, y: mgp.Nullable[float] = None,
             z: mgp.List[mgp.Nullable[int]] = [1]
             ) -> mgp.Record(x=mgp.Number, y=mgp.Nullable[float], z=list):
        return mgp.Record(x=x, y=y, z=z)
    """
)


@pytest.fixture
def graph(tmp_path):
    path = tmp_path / "probe.py"
    path.write_text(PROBE)
    g = EmbeddedGraph(modules=[path])
    g.add_node(["A"], {"p": 0})
    g.add_node(["B", "C"], {"q": [1.0, 2.0]})
    g.add_edge(1, 0, "R")
    return g


@pytest.mark.parametrize(
    "what, type_name",
    [
        ("bytes", "builtins.bytes"),
        ("np_int64", "numpy.int64"),
        ("np_float32", "numpy.float32"),
        ("np_array", "numpy.ndarray"),
        ("np_bool", "numpy.bool"),
        ("set", "builtins.set"),
        ("nested_bytes", "builtins.bytes"),
    ],
)
def test_unsupported_result_values_are_refused(graph, what, type_name):
    # py_module.cpp PyObjectToMgpValue: std::invalid_argument -> ValueError, set from C (no
    # traceback), so Memgraph's text is one line
    with pytest.raises(
        ResultConversionError,
        match=r"\Aprobe.give: ValueError: Unsupported PyObject conversion \(embedded runtime: "
        rf"the record, field 'value'.*: {type_name}\)\n\Z",
    ):
        graph.call("probe.give", what)


def test_convertible_result_values(graph):
    assert graph.call("probe.give", "np_float64") == [{"value": 2.5}]
    assert type(graph.call("probe.give", "np_float64")[0]["value"]) is float
    assert graph.call("probe.give", "np_str") == [{"value": "s"}]
    assert type(graph.call("probe.give", "np_str")[0]["value"]) is str
    assert graph.call("probe.give", "int") == [{"value": 2**63 - 1}]
    assert graph.call("probe.give", "tuple") == [{"value": [1, "a", [2.5]]}]
    assert graph.call("probe.give", "vertex") == [{"value": NodeRef(graph._store, 1)}]
    # Memgraph hands strings over as C strings: a NUL ends them (why blobs travel as base64)
    assert graph.call("probe.give", "nul") == [{"value": "ab"}]


def test_int_overflow_is_refused(graph):
    with pytest.raises(
        ResultConversionError,
        match=r"probe.give: OverflowError: Python integer is out of range \(embedded runtime: .*"
        r"int 9223372036854775808 does not fit in int64",
    ):
        graph.call("probe.give", "overflow")


@pytest.mark.parametrize(
    "procedure, message",
    [
        (
            "probe.typed",
            r"probe.typed: ValueError: Unable to insert field 'n' with value: 'not an int'; did "
            r"you set the correct field type\? .*field 'n': declared INTEGER, got STRING",
        ),
        (
            "probe.extra_field",
            r"probe.extra_field: ValueError: Unable to insert field 'b' with value: '2'.*field "
            r"'b': not declared \(declared: a\)",
        ),
        (
            "probe.missing_field",
            r"Procedure 'probe.missing_field' did not yield all fields as required by its "
            r"signature. \(embedded runtime: the record, missing: b\)",
        ),
        (
            "probe.not_a_record",
            r"probe.not_a_record: TypeError: Value '\{'a': 1\}' is not an instance of "
            r"'mgp.Record' \(embedded runtime: record 0\)",
        ),
        (
            # py_module.cpp CallPythonProcedure (3.x): None with declared fields is refused
            "probe.nothing",
            r"\Aprobe.nothing: Procedure implementation returned None, but its signature "
            r"declares result fields. Did you forget a 'return mgp.Record\(...\)' statement\?\Z",
        ),
    ],
)
def test_result_fields_must_match_the_declaration(graph, procedure, message):
    with pytest.raises(ResultConversionError, match=message):
        graph.call(procedure)


def test_records(graph):
    assert graph.call("probe.many", 3) == [{"i": 0}, {"i": 1}, {"i": 2}]


def test_read_procedures_see_an_immutable_graph(graph):
    with pytest.raises(
        ProcedureError,
        match=cases.procedure_error(
            "probe.write_in_read",
            r"mgp.ImmutableObjectError: Cannot modify an immutable object \(the procedure is a "
            r"read procedure\).",
        ),
    ):
        graph.call("probe.write_in_read", graph.node(0))
    assert graph.call("probe.write", graph.node(0), [1, 2]) == [{"ok": True}]
    assert graph.get_property(0, "p") == [1, 2]


def test_graph_objects_are_invalid_after_the_call(graph):
    assert graph.call("probe.keep", graph.node(1)) == [{"labels": ["B", "C"], "deg": 1}]
    with pytest.raises(
        ProcedureError, match=cases.procedure_error("probe.use_kept", "mgp.InvalidContextError")
    ):
        graph.call("probe.use_kept")


def test_argument_types_and_defaults(graph):
    assert graph.call("probe.args", 3) == [{"x": 3, "y": None, "z": [1]}]
    assert graph.call("probe.args", 2.5, 1.5, [None, 4]) == [{"x": 2.5, "y": 1.5, "z": [None, 4]}]
    with pytest.raises(
        ArgumentTypeError,
        match=r"\A'probe.args' argument named 'x' at position 0 must be of type NUMBER.\Z",
    ):
        graph.call("probe.args", True)
    with pytest.raises(
        ArgumentTypeError, match=r"argument named 'y' at position 1 must be of type FLOAT\?."
    ):
        graph.call("probe.args", 1, 2)
    with pytest.raises(
        ArgumentTypeError, match=r"argument named 'x' at position 0 must be of type NUMBER."
    ):
        graph.call("probe.args", None)
    with pytest.raises(
        ArgumentTypeError, match=r"argument 'x': expected an int64, got 9223372036854775808"
    ):
        graph.call("probe.args", 2**63)
    with pytest.raises(
        ArgumentTypeError, match=r"argument 'x': expected a Cypher value .* got numpy.int64"
    ):
        graph.call("probe.args", np.int64(3))
    with pytest.raises(
        ArgumentTypeError,
        match=r"'probe.keep' argument named 'v' at position 0 must be of type NODE.",
    ):
        graph.call("probe.keep", 1)
    other = EmbeddedGraph(modules=[])
    other.add_node()
    with pytest.raises(ArgumentTypeError, match=r"the node NodeRef\(0\) belongs to another graph"):
        graph.call("probe.keep", other.node(0))


# keys out of order, some beyond ASCII: "é" (UTF-8 C3 A9), U+FFFF (EF BF BF), "😀" (F0 9F 98 80)
UNSORTED_KEYS = ["z", "\U0001f600", "inner", "\uffff", "B", "\u00e9", "a"]


def test_maps_reach_procedures_and_clients_with_their_keys_sorted(graph):
    """Memgraph keeps every map sorted by key: a Bolt map is decoded into a ``std::map``
    (``src/communication/bolt/v1/value.hpp`` ``map_t``), a query's map is a ``std::pmr::map``
    (``src/query/typed_value.hpp`` ``TMap``), and the ``mgp_map`` built for a procedure from an
    argument or a stored map property is one (``src/query/procedure/mg_procedure_impl.hpp``
    ``mgp_map::map_type``, filled in ``mg_procedure_impl.cpp``'s ``mgp_value`` constructors),
    which ``py_module.cpp`` ``MgpValueToPyObject`` copies into the ``dict`` in order; a result
    map is made by ``mgp_map_make_empty``. Keys compare as ``std::string``s (bytes, unsigned),
    which for UTF-8 is Python's code point order."""
    by_bytes = sorted(UNSORTED_KEYS, key=lambda k: k.encode("utf-8"))
    assert by_bytes == sorted(UNSORTED_KEYS) != UNSORTED_KEYS
    inner = {"y": 1, "x": 2}
    given = {k: (inner if k == "inner" else 0) for k in UNSORTED_KEYS}
    expected = [{"keys": by_bytes, "inner": ["x", "y"]}]
    assert graph.call("probe.map_keys", given) == expected
    graph.set_property(0, "m", given)
    assert graph.call("probe.stored_keys", graph.node(0)) == expected
    stored = graph.get_property(0, "m")  # as a Bolt client reads it back
    assert list(stored) == by_bytes and list(stored["inner"]) == ["x", "y"]
    (row,) = graph.call("probe.unsorted_map")
    assert list(row["m"]) == ["a", "b", "inner"] and list(row["m"]["inner"]) == ["x", "y"]


def test_unknown_procedure(graph):
    with pytest.raises(
        ProcedureNotFoundError,
        match=r"There is no procedure named 'probe.nope' \(known: .*probe.args",
    ):
        graph.call("probe.nope")


def test_graph_api_errors():
    g = EmbeddedGraph(modules=[])
    a = g.add_node("L", {"x": 1})
    with pytest.raises(IndexError, match=r"dst: expected a vertex id in 0..0, got 5"):
        g.add_edge(a, 5, "T")
    with pytest.raises(IndexError, match=r"node_id: expected an id in 0..0, got 3"):
        g.set_property(3, "x", 1)
    from memgraph_tf.embedded._runtime import ValueConversionError

    with pytest.raises(
        ValueConversionError, match=r"property 'x': Unsupported PyObject conversion of bytes"
    ):
        g.set_property(a, "x", b"raw")
    with pytest.raises(
        ValueConversionError, match=r"property 'x': expected an int64, got 9223372036854775808"
    ):
        g.set_property(a, "x", [1, 2**63])
    g.set_property(a, "x", None)
    assert g.get_property(a, "x", "gone") == "gone"
    assert g.labels(a) == ["L"]


def test_mgp_imported_first_over_the_stub_is_rebound():
    import importlib
    import sys

    from memgraph_tf.embedded import _runtime

    # the PyPI stub, as a plain `import mgp` before the runtime would leave it
    sys.modules.pop("_mgp")
    try:
        stub = importlib.import_module("_mgp")
        assert stub is not _runtime
        mgp = importlib.reload(sys.modules["mgp"])
        assert mgp._mgp is stub
        with pytest.raises(AttributeError, match=r"has no attribute 'Module'"):
            mgp.read_proc(lambda: None)
    finally:
        assert _runtime.activate()._mgp is _runtime
    g = EmbeddedGraph()
    g.add_node([], {"f": 1.0})
    assert g.call("tf_features.pack", [0], ["f"])[0]["count"] == 1


def test_numpy_scalar_subclasses_are_stored_as_plain_values():
    # numpy.float64 / numpy.str_ subclass float / str: Memgraph stores a double / string, so a
    # procedure reading the property back gets the plain Python type (numpy.float32 is refused
    # above)
    g = EmbeddedGraph(modules=[])
    g.add_node([], {"x": np.float64(1.5), "v": [np.float64(2.5), 3], "s": np.str_("a")})
    assert type(g.get_property(0, "x")) is float and g.get_property(0, "x") == 1.5
    assert [type(v) for v in g.get_property(0, "v")] == [float, int]
    assert type(g.get_property(0, "s")) is str
