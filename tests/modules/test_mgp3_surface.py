"""Our ``_mgp`` provides what Memgraph 3.x's ``mgp.py`` needs from it, with Memgraph's semantics.

Memgraph's ``include/mgp.py`` (memgraph/memgraph at commit
df0f63683b6fb5e543ef4ec31b0affffde7c1109, Business Source License: read, not copied, not
vendored) uses more of the C extension ``_mgp`` than PyPI ``mgp`` 1.1.1's ``mgp.py`` does: it calls
``type_zoned_date_time``, ``type_point_2d``, ``type_point_3d`` and ``type_enum`` each time it maps
an annotation (so without them no procedure registers), ``Utils``, ``Graph.get_start_timestamp``,
``Path.pop``, ``set_properties`` and the batched-procedure registration. The C side is
``src/query/procedure/py_module.cpp``. Since that ``mgp.py`` cannot ship here, the procedures
below call the raw ``_mgp`` API the way it does; the value classes it adds (``mgp.Point2d``,
``mgp.Point3d``, ``mgp.Enum``) are stood in by minimal classes of the same names set on ``mgp``.
"""

from __future__ import annotations

import datetime
import textwrap
import uuid

import pytest

from memgraph_tf.embedded import (
    ArgumentTypeError,
    EmbeddedGraph,
    ProcedureError,
    ResultConversionError,
)
from memgraph_tf.embedded import _runtime as our_mgp

# Every ``_mgp.<name>`` that include/mgp.py at the commit above references.
MGP3_NAMES = [
    "AuthorizationError",
    "CypherType",
    "DeletedObjectError",
    "Edge",
    "Graph",
    "ImmutableObjectError",
    "InsufficientBufferError",
    "InvalidArgumentError",
    "KeyAlreadyExistsError",
    "LogicErrorError",
    "Message",
    "Messages",
    "Module",
    "OutOfRangeError",
    "Path",
    "SOURCE_TYPE_KAFKA",
    "SOURCE_TYPE_PULSAR",
    "SerializationError",
    "UnableToAllocateError",
    "UnknownError",
    "Utils",
    "ValueConversionError",
    "Vertex",
    "_LOGGER",
    "_MODULE",
    "type_any",
    "type_bool",
    "type_date",
    "type_duration",
    "type_enum",
    "type_float",
    "type_int",
    "type_list",
    "type_local_date_time",
    "type_local_time",
    "type_map",
    "type_node",
    "type_nullable",
    "type_number",
    "type_path",
    "type_point_2d",
    "type_point_3d",
    "type_relationship",
    "type_string",
    "type_zoned_date_time",
]

# The methods include/mgp.py calls on the _mgp objects it wraps (self._graph.x(), ...), the
# registration methods it calls on _mgp.Module and on what they return, and the logger's.
MGP3_METHODS = {
    "Graph": "create_edge create_vertex delete_edge delete_vertex detach_delete_vertex "
    "get_start_timestamp get_vertex_by_id is_mutable is_valid iter_vertices must_abort",
    "Vertex": "add_label get_id get_property is_valid iter_in_edges iter_out_edges "
    "iter_properties label_at labels_count remove_label set_properties set_property "
    "underlying_graph_is_mutable",
    "Edge": "from_vertex get_id get_property get_type_name is_valid iter_properties "
    "set_properties set_property to_vertex underlying_graph_is_mutable",
    "Path": "edge_at expand is_valid make_with_start pop size vertex_at",
    "Module": "add_batch_read_procedure add_batch_write_procedure add_function "
    "add_read_procedure add_transformation add_write_procedure",
    "Proc": "add_arg add_deprecated_result add_opt_arg add_result",
    "Utils": "is_enterprise_valid",
}


def test_our_mgp_has_every_name_memgraph_3s_mgp_py_uses():
    missing = [name for name in MGP3_NAMES if not hasattr(our_mgp, name)]
    assert missing == []
    for cls, methods in MGP3_METHODS.items():
        lacking = [m for m in methods.split() if not callable(getattr(getattr(our_mgp, cls), m))]
        assert lacking == [], cls
    logger = our_mgp._LOGGER
    for level in ("critical", "debug", "error", "info", "trace", "warning"):
        assert callable(getattr(logger, level))


def test_the_3x_types_are_named_and_checked_as_memgraphs(monkeypatch):
    # src/query/procedure/cypher_types.hpp: ZonedDateTimeType "ZONED_DATE_TIME", Point2dType
    # "POINT_2D", Point3dType "POINT_3D", EnumType "ENUM"; py_module.cpp PyObjectToMgpValue: a
    # datetime with tzinfo is a zoned date-time, without one a local date-time
    point2d, point3d, enum = _mgp3_value_classes(monkeypatch)
    zoned = datetime.datetime(2024, 1, 2, 3, 4, tzinfo=datetime.UTC)
    local = datetime.datetime(2024, 1, 2, 3, 4)
    cases = [
        (our_mgp.type_zoned_date_time(), "ZONED_DATE_TIME", zoned, local),
        (our_mgp.type_local_date_time(), "LOCAL_DATE_TIME", local, zoned),
        (our_mgp.type_point_2d(), "POINT_2D", point2d(1, 2, 7203), point3d(1, 2, 3, 9757)),
        (our_mgp.type_point_3d(), "POINT_3D", point3d(1, 2, 3, 9757), point2d(1, 2, 7203)),
        (our_mgp.type_enum(), "ENUM", enum("Status", "Good"), "Status::Good"),
    ]
    for cypher_type, name, fits, does_not in cases:
        assert str(cypher_type) == name
        assert cypher_type.satisfied_by(fits)
        assert not cypher_type.satisfied_by(does_not)
        assert not cypher_type.satisfied_by(None)
        nullable_list = our_mgp.type_nullable(our_mgp.type_list(cypher_type))
        assert str(nullable_list) == f"LIST? OF {name}"
        assert nullable_list.satisfied_by(None) and nullable_list.satisfied_by((fits,))


def test_utils_says_no_enterprise_licence():
    # py_module.cpp PyUtilsMethods is_enterprise_valid -> mgp_is_enterprise_valid: False on a
    # Memgraph without a licence key, which the embedded runtime is
    assert our_mgp.Utils.is_enterprise_valid() is False


def _mgp3_value_classes(monkeypatch):
    """Minimal stand-ins of include/mgp.py's Point2d, Point3d and Enum (read-only attributes),
    set on the mgp module as that mgp.py defines them."""
    import mgp

    class Point2d:
        def __init__(self, x, y, srid):
            self.x, self.y, self.srid = float(x), float(y), srid

        def __eq__(self, other):
            return type(other) is type(self) and vars(other) == vars(self)

    class Point3d:
        def __init__(self, x, y, z, srid):
            self.x, self.y, self.z, self.srid = float(x), float(y), float(z), srid

    class Enum:
        def __init__(self, type_name, value_name):
            self.type_name, self.value_name = type_name, value_name

    for cls in (Point2d, Point3d, Enum):
        monkeypatch.setattr(mgp, cls.__name__, cls, raising=False)
    return Point2d, Point3d, Enum


# A module registering through the raw _mgp API as include/mgp.py does (_register_proc,
# _register_batch_proc: register_func(_mgp._MODULE, wrapper[, initializer, cleanup]), then
# add_arg / add_result with _typing_to_cypher_type's _mgp.type_* values).
RAW = """
import _mgp
import mgp

CALLS = []


def batched(graph, args):
    CALLS.append(("batched", graph.get_start_timestamp(), args))
    left = STATE["left"]
    STATE["left"] = left[1:]
    return [mgp.Record(n=n) for n in left[:1]]


def _check_count(count):
    if count < 0:
        raise ValueError("no negative counts")
    return count


def batched_init(graph, args):
    CALLS.append(("init", graph.get_start_timestamp(), args))
    STATE["left"] = list(range(_check_count(args[0])))


def batched_cleanup():
    CALLS.append(("cleanup",))


STATE = {}
proc = _mgp.Module.add_batch_read_procedure(_mgp._MODULE, batched, batched_init, batched_cleanup)
proc.add_arg("count", _mgp.type_int())
proc.add_result("n", _mgp.type_int())


# A read procedure registered as include/mgp.py's _register_proc does: register_func, then
# add_arg / add_result per (name, _mgp type).
def read_procedure(func, args, results):
    proc = _mgp.Module.add_read_procedure(_mgp._MODULE, func)
    for name, cypher_type in args:
        proc.add_arg(name, cypher_type)
    for name, cypher_type in results:
        proc.add_result(name, cypher_type)


def echo(graph, args):
    return mgp.Record(value=args[0])


ANY = _mgp.type_nullable(_mgp.type_any())
read_procedure(echo, [("value", ANY)], [("value", ANY)])


def zoned(graph, args):
    return mgp.Record(at=args[0], stamp=graph.get_start_timestamp())


ZONED = _mgp.type_zoned_date_time()
read_procedure(zoned, [("at", ZONED)], [("at", ZONED), ("stamp", _mgp.type_int())])


def point(graph, args):
    return mgp.Record(p=args[0])


read_procedure(point, [("p", ANY)], [("p", _mgp.type_point_2d())])


def popped(graph, args):
    v = graph.get_vertex_by_id(0)
    path = _mgp.Path.make_with_start(v)
    edge = v.iter_out_edges().get()
    path.expand(edge)
    path.pop()
    sizes = [path.size()]
    try:
        path.pop()
    except _mgp.OutOfRangeError as exc:
        sizes.append(str(exc))
    return mgp.Record(sizes=sizes, start=path.vertex_at(0).get_id())


read_procedure(popped, [], [("sizes", _mgp.type_list(_mgp.type_any())), ("start", _mgp.type_int())])


BAD = {"int_key": lambda: {"b": 2, 3: 4}, "set_value": lambda: {"b": 2, "c": {1}}}


def set_many(graph, args):
    v = graph.get_vertex_by_id(0)
    e = v.iter_out_edges().get()
    target = e if args[1] == "edge" else v
    given = args[0]
    target.set_properties(BAD[given]() if isinstance(given, str) and given in BAD else given)
    return mgp.Record(ok=True)


for register in (_mgp.Module.add_write_procedure, _mgp.Module.add_read_procedure):
    set_many.__name__ = "set_many" if register is _mgp.Module.add_write_procedure else "set_ro"
    proc = register(_mgp._MODULE, set_many)
    proc.add_arg("properties", _mgp.type_nullable(_mgp.type_any()))
    proc.add_arg("target", _mgp.type_string())
    proc.add_result("ok", _mgp.type_bool())
"""


@pytest.fixture
def raw(tmp_path):
    name = f"raw_{uuid.uuid4().hex[:12]}"
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(RAW))
    g = EmbeddedGraph(modules=[path])
    g.add_node(["A"], {"keep": 1})
    g.add_node(["B"])
    g.add_edge(0, 1, "R")
    return g, name


def test_a_batched_procedure_is_called_until_it_yields_nothing(raw):
    # src/query/plan/operator.cpp CallProcedureCursor::Pull: for an input row, cleanup() then the
    # initializer with the arguments, then the procedure until a call yields no record; cleanup()
    # when the input is exhausted and again at Shutdown (src/query/interpreter.cpp PullPlan::Pull)
    g, name = raw
    module = __import__(name)
    assert g.call(f"{name}.batched", 3) == [{"n": 0}, {"n": 1}, {"n": 2}]
    stamps = {call[1] for call in module.CALLS if len(call) > 1}
    assert len(stamps) == 1  # one transaction: Graph.get_start_timestamp is the same throughout
    assert [call[0] for call in module.CALLS] == ["cleanup", "init"] + ["batched"] * 4 + [
        "cleanup",
        "cleanup",
    ]
    assert module.CALLS[1][2] == (3,)
    # the next CALL runs in a later transaction
    [row] = g.call(f"{name}.zoned", datetime.datetime(2024, 1, 1, tzinfo=datetime.UTC))
    assert row["stamp"] > stamps.pop()


def test_an_initializer_error_is_memgraphs_text_without_the_procedure_name(raw):
    # py_module.cpp CallPythonInitializer: QueryRuntimeException(FormatException(...)), which
    # CallProcedureCursor does not prefix with the procedure's name
    g, name = raw
    with pytest.raises(ProcedureError) as info:
        g.call(f"{name}.batched", -1)
    text = str(info.value)
    assert text.startswith("Traceback (most recent call last):\n")
    assert ", in _check_count\n" in text and ", in batched_init\n" not in text  # first frame cut
    assert text.endswith("\nValueError: no negative counts\n")


def test_a_void_batched_procedure_fails_the_load(tmp_path):
    # src/query/procedure/module.cpp PythonModule::Load: a batched procedure without result fields
    # makes the module fail to load
    name = f"void_{uuid.uuid4().hex[:12]}"
    path = tmp_path / f"{name}.py"
    path.write_text(
        "import _mgp\n"
        "def f(graph, args):\n    return None\n"
        "_mgp.Module.add_batch_write_procedure(_mgp._MODULE, f, lambda g, a: None, lambda: None)\n"
    )
    with pytest.raises(
        ImportError,
        match=r"; void procedures cannot be batched \(procedure 'f' declares no result fields\)\.",
    ):
        EmbeddedGraph(modules=[path])


def test_registration_is_checked_as_memgraph_checks_it():
    # py_module.cpp PyQueryModuleAddProcedure / PyQueryModuleAddFunction and
    # mg_procedure_impl.cpp IsValidIdentifierName ([_[:alpha:]][_[:alnum:]]*)
    module = our_mgp.Module("m")

    def ok(graph, args):
        return None

    module.add_read_procedure(ok)
    with pytest.raises(
        ValueError, match=r"\AAlready registered a procedure with the same name\.\Z"
    ):
        module.add_write_procedure(ok)
    ok.__name__ = "not-an-identifier"
    with pytest.raises(ValueError, match=r"\AProcedure name is not a valid identifier\Z"):
        module.add_read_procedure(ok)
    with pytest.raises(ValueError, match=r"\AFunction name is not a valid identifier\Z"):
        module.add_function(ok)
    with pytest.raises(TypeError, match=r"\AExpected a callable object\.\Z"):
        module.add_batch_read_procedure(42, ok, ok)


def test_zoned_date_times_pass_and_local_ones_are_refused(raw):
    # cypher_types.hpp ZonedDateTimeType; module.hpp ValidateArguments names the type
    g, name = raw
    at = datetime.datetime(2024, 5, 6, 7, 8, tzinfo=datetime.timezone(datetime.timedelta(hours=2)))
    [row] = g.call(f"{name}.zoned", at)
    assert row["at"] == at and row["at"].utcoffset() == datetime.timedelta(hours=2)
    with pytest.raises(
        ArgumentTypeError,
        match=rf"\A'{name}\.zoned' argument named 'at' at position 0 must be of type "
        r"ZONED_DATE_TIME\.\Z",
    ):
        g.call(f"{name}.zoned", datetime.datetime(2024, 5, 6))


def test_points_convert_and_bad_ones_are_refused(raw, monkeypatch):
    # py_module.cpp PyObjectToMgpValue: an mgp.Point2d is read through x, y and srid; an SRID
    # outside 0..65535 is std::invalid_argument, i.e. ValueError with Memgraph's text
    g, name = raw
    point2d, point3d, _ = _mgp3_value_classes(monkeypatch)
    [row] = g.call(f"{name}.point", point2d(1, 2, 7203))
    assert row["p"] == point2d(1.0, 2.0, 7203)
    with pytest.raises(
        ResultConversionError,
        match=rf"\A{name}\.point: ValueError: 'mgp\.Point2d' srid must be between 0 and 65535 ",
    ):
        g.call(f"{name}.point", point2d(1, 2, 70000))
    # a point of the wrong kind for the declared POINT_2D field
    with pytest.raises(ResultConversionError, match=r"Unable to insert field 'p'"):
        g.call(f"{name}.point", point3d(1, 2, 3, 9757))


def test_enums_cannot_be_returned_or_stored(raw, monkeypatch):
    # src/query/procedure/mg_procedure_impl.cpp ToTypedValue (a record's enum value) and
    # ToPropertyValue (an enum property): both refuse without an EnumStore
    g, name = raw
    _, _, enum = _mgp3_value_classes(monkeypatch)
    with pytest.raises(
        ResultConversionError,
        match=rf"\A{name}\.echo: Enum values cannot be returned from procedures\. Returning enum "
        r"results requires EnumStore context which is not available in this path\.",
    ):
        g.call(f"{name}.echo", enum("Status", "Good"))
    with pytest.raises(
        ProcedureError,
        match=r"ValueConversionError: Cannot convert Enum mgp_value back to PropertyValue "
        r"without EnumStore context!",
    ):
        g.call(f"{name}.set_many", {"status": enum("Status", "Good")}, "vertex")


def test_path_pop_drops_the_last_edge_and_refuses_an_empty_path(raw):
    # py_module.cpp PyPathPop -> mg_procedure_impl.cpp mgp_path_pop: out_of_range "Path contains
    # no relationships." (OutOfRangeError) when the path has no edge
    g, name = raw
    assert g.call(f"{name}.popped") == [
        {"sizes": [0, "Path contains no relationships."], "start": 0}
    ]


def test_set_properties_sets_all_or_none(raw):
    # py_module.cpp PyVertexSetProperties / PyEdgeSetProperties: the whole dict is converted
    # first (a key that is no str: "Dictionary keys must be strings"), then
    # mg_procedure_impl.cpp mgp_vertex_set_properties (UpdateProperties: null removes)
    g, name = raw
    assert g.call(f"{name}.set_many", {"a": 1, "keep": None}, "vertex") == [{"ok": True}]
    assert (g.get_property(0, "a"), g.get_property(0, "keep")) == (1, None)
    assert g.call(f"{name}.set_many", {"w": [1.5]}, "edge") == [{"ok": True}]
    assert g.edges() == [(0, 1, {"w": [1.5]})]
    with pytest.raises(ProcedureError, match=r"ValueError: Dictionary keys must be strings\n\Z"):
        g.call(f"{name}.set_many", "int_key", "vertex")
    with pytest.raises(
        ProcedureError,
        match=r"set_many: ValueError: Unsupported PyObject conversion \(embedded runtime: "
        r"property 'c': "
        r"builtins\.set\)\n\Z",
    ):
        g.call(f"{name}.set_many", "set_value", "vertex")
    assert g.get_property(0, "b") is None  # nothing of a refused map was set
    with pytest.raises(ProcedureError, match=r"ImmutableObjectError"):
        g.call(f"{name}.set_ro", {"b": 2}, "vertex")
    assert g.call(f"{name}.set_many", "not a map", "vertex") == [{"ok": True}]  # PyDict_Next: {}


def test_arguments_and_results_are_checked_as_memgraph_checks_them():
    # src/query/procedure/mg_procedure_impl.cpp MgpAddArg, MgpAddOptArg, AddResultToProp; the
    # Python exception and its first words are py_module.cpp RaiseExceptionFromErrorCode's
    def proc(graph, args):
        return None

    p = our_mgp.Module("m").add_read_procedure(proc)
    with pytest.raises(our_mgp.InvalidArgumentError, match=r"\AInvalid argument\. "):
        p.add_arg("not an identifier", our_mgp.type_int())
    p.add_opt_arg("o", our_mgp.type_nullable(our_mgp.type_int()), None)
    with pytest.raises(our_mgp.LogicErrorError, match=r"\ALogic error\. .*'r' after optional"):
        p.add_arg("r", our_mgp.type_int())
    with pytest.raises(our_mgp.LogicErrorError, match=r"\ALogic error\. .*does not satisfy FLOAT"):
        p.add_opt_arg("f", our_mgp.type_float(), 1)
    with pytest.raises(ValueError, match=r"\AUnsupported PyObject conversion "):
        p.add_opt_arg("b", our_mgp.type_any(), b"bytes")  # PyCallableAddOptArg converts first
    p.add_result("x", our_mgp.type_int())
    with pytest.raises(our_mgp.LogicErrorError, match=r"\ALogic error\. .*'x' declared twice"):
        p.add_deprecated_result("x", our_mgp.type_int())
    with pytest.raises(our_mgp.InvalidArgumentError, match=r"\AInvalid argument\. "):
        p.add_result("1x", our_mgp.type_int())


def test_what_a_batched_cleanup_raises_is_ignored(tmp_path):
    # py_module.cpp CallPythonCleanup calls the cleanup and discards its result, raised or not
    name = f"cleanup_{uuid.uuid4().hex[:12]}"
    path = tmp_path / f"{name}.py"
    path.write_text(
        textwrap.dedent(
            """
            import _mgp
            import mgp

            LEFT = []

            def once(graph, args):
                rows = [mgp.Record(n=n) for n in LEFT]
                LEFT.clear()
                return rows

            def init(graph, args):
                LEFT.append(args[0])

            def cleanup():
                raise RuntimeError("cleanup failed")

            proc = _mgp.Module.add_batch_read_procedure(_mgp._MODULE, once, init, cleanup)
            proc.add_arg("n", _mgp.type_int())
            proc.add_result("n", _mgp.type_int())
            """
        )
    )
    assert EmbeddedGraph(modules=[path]).call(f"{name}.once", 5) == [{"n": 5}]
