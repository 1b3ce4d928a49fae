"""The embedded runtime is as strict as Memgraph, read against Memgraph's source (tags v2.0.0 to
v3.9.0; BSL: read to compare, nothing copied). Each test names the file and function whose
behaviour it pins."""

from __future__ import annotations

import textwrap

import _memgraph_tf_modules_cases as cases  # registered by conftest.py
import pytest

from memgraph_tf.embedded import (
    MEMGRAPH_2_PROCEDURE_MEMORY_LIMIT_BYTES,
    EmbeddedGraph,
    HandleUseAfterCallError,
    ProcedureError,
    ResultConversionError,
    parse_procedure_memory_clause,
    procedure_memory_clause,
)
from memgraph_tf.procedures.errors import NodeNotFoundError

STRICT = textwrap.dedent(
    """
    import mgp

    def _inner(n):
        try:
            return {}[n]
        except KeyError as exc:
            raise ValueError(f"no entry {n}") from exc

    @mgp.read_proc
    def chained(ctx: mgp.ProcCtx, n: int) -> mgp.Record(x=int):
        return mgp.Record(x=_inner(n))

    @mgp.read_proc
    def api_error(ctx: mgp.ProcCtx) -> mgp.Record(x=int):
        return mgp.Record(x=ctx.graph.get_vertex_by_id(99).id)

    @mgp.read_proc
    def generator(ctx: mgp.ProcCtx) -> mgp.Record(x=int):
        return (mgp.Record(x=i) for i in range(2))

    class _Rows:
        def __len__(self):
            return 2

        def __getitem__(self, i):
            if i == 1:
                raise KeyError("row 1 is gone")
            return mgp.Record(x=i)

    @mgp.read_proc
    def bad_sequence(ctx: mgp.ProcCtx) -> mgp.Record(x=int):
        return _Rows()

    RETURNED = []

    @mgp.read_proc
    def rows(ctx: mgp.ProcCtx, n: int) -> mgp.Record(x=int):
        RETURNED.append([mgp.Record(x=i) for i in range(n)])
        return RETURNED[-1]

    @mgp.read_proc
    def returned_sizes(ctx: mgp.ProcCtx) -> mgp.Record(sizes=mgp.List[int]):
        return mgp.Record(sizes=[len(r) for r in RETURNED])

    def _kinds(value):
        if isinstance(value, dict):
            return {k: _kinds(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [type(value).__name__] + [_kinds(v) for v in value]
        return type(value).__name__

    @mgp.read_proc
    def kinds(
        ctx: mgp.ProcCtx, a: mgp.List[mgp.Any], m: mgp.Map, v: mgp.Vertex
    ) -> mgp.Record(a=mgp.Any, m=mgp.Any, p=mgp.Any, props=mgp.Any, s=str):
        return mgp.Record(
            a=_kinds(a),
            m=_kinds(m),
            p=_kinds(v.properties.get("l")),
            props=_kinds(dict(v.properties.items())),
            s=v.properties.get("s"),
        )

    @mgp.read_proc
    def echo(ctx: mgp.ProcCtx, s: str) -> mgp.Record(s=str, n=int):
        return mgp.Record(s=s, n=len(s))

    RAW = []

    @mgp.read_proc
    def keep_raw(ctx: mgp.ProcCtx, v: mgp.Vertex) -> mgp.Record(eq=bool, ne=bool, same_ne=bool):
        raw = v._vertex
        again = ctx.graph.get_vertex_by_id(v.id)._vertex
        RAW.append(raw)
        RAW.append(raw.iter_out_edges())
        RAW.append(ctx.graph._graph)
        return mgp.Record(eq=raw == again, ne=raw != again, same_ne=raw != raw)

    @mgp.read_proc
    def use_raw(ctx: mgp.ProcCtx, which: int) -> mgp.Record(x=mgp.Any):
        kept = RAW[which]
        if which == 0:
            return mgp.Record(x=kept.get_property("p"))
        if which == 1:
            return mgp.Record(x=kept.next())
        return mgp.Record(x=kept.get_vertex_by_id(0).get_id())

    @mgp.read_proc
    def hash_raw(ctx: mgp.ProcCtx, v: mgp.Vertex) -> mgp.Record(x=int):
        return mgp.Record(x=hash(v._vertex))

    @mgp.read_proc
    def read(ctx: mgp.ProcCtx, v: mgp.Vertex, name: str) -> mgp.Record(n=int):
        return mgp.Record(n=len(v.properties.get(name)))

    @mgp.read_proc
    def spin(ctx: mgp.ProcCtx) -> mgp.Record(checks=int):
        checks = 0
        while checks < 10_000_000:
            checks += 1
            ctx.check_must_abort()
        return mgp.Record(checks=checks)
    """
)


@pytest.fixture
def strict(tmp_path):
    path = tmp_path / "strict.py"
    path.write_text(STRICT)
    g = EmbeddedGraph(modules=[path])
    g.add_node(["A"], {"p": 0, "l": [1, [2, "x"]], "s": "ab\x00cd", "ls": ["a\x00b", "c"]})
    g.add_node(["A"], {"p": 1})
    g.add_edge(0, 1, "E")
    g.add_edge(0, 1, "F")  # an out-edge iterator of node 0 has an item left after its first
    return g


def test_a_raising_procedure_gives_memgraphs_text(strict):
    # src/py/py.hpp FormatException(exc_info, skip_first_line=true) as called by
    # src/query/procedure/py_module.cpp CallPythonProcedure (the mgp.py wrapper frame dropped),
    # prefixed "<procedure>: " by src/query/plan/operator.cpp CallProcedureCursor::Pull
    with pytest.raises(ProcedureError) as info:
        strict.call("strict.chained", 7)
    text = str(info.value)
    assert isinstance(info.value.__cause__, ValueError)
    assert info.value.procedure == "strict.chained"
    assert text.startswith("strict.chained: Traceback (most recent call last):\n")
    assert text.endswith("\nValueError: no entry 7\n")
    # the chained KeyError and its own traceback come first, as format_exception prints them
    assert "\nKeyError: 7\n\nThe above exception was the direct cause" in text
    assert ", in chained\n" in text and ", in _inner\n" in text
    assert ", in wrapper\n" not in text  # mgp.py's wrapper frame is dropped
    assert "_runtime.py" not in text  # Memgraph's _mgp is C: no frames of its own


def test_an_error_of_the_graph_api_names_mgp_classes(strict):
    # mgp.py turns _mgp's errors into its own; Memgraph's _mgp (C) adds no frames
    with pytest.raises(
        ProcedureError,
        match=cases.procedure_error("strict.api_error", r"IndexError: Unable to find vertex .*99."),
    ):
        strict.call("strict.api_error")


def test_a_procedure_error_names_the_module_qualified_class():
    g = EmbeddedGraph()
    g.add_node(["P"], {"f": [1.0]})
    with pytest.raises(
        ProcedureError,
        match=cases.procedure_error(
            "tf_features.sample",
            r"memgraph_tf.procedures.errors.NodeNotFoundError: seeds\[0\]: unknown node id 999 "
            r"\(no node has that internal id\)",
        ),
    ) as info:
        g.call("tf_features.sample", [999], [2], ["f"], {})
    assert isinstance(info.value.__cause__, NodeNotFoundError)


# -- what the runtime does with a returned value ---------------------------------------------------


def test_a_generator_is_refused_with_memgraphs_message(strict):
    # py_module.cpp CallPythonProcedure: PySequence_Check fails for a generator, so
    # AddRecordFromPython refuses it as one record: "Value '...' is not an instance of 'mgp.Record'"
    with pytest.raises(
        ResultConversionError,
        match=r"\Astrict.generator: TypeError: Value '<generator object .*>' is not an instance "
        r"of 'mgp.Record'",
    ):
        strict.call("strict.generator")


def test_an_error_while_reading_a_returned_sequence_is_translated(strict):
    # py_module.cpp AddMultipleRecordsFromPython: PySequence_GetItem fails -> FetchError, formatted
    # like the procedure's own error (never a bare TypeError/KeyError escaping the runtime); the
    # traceback's first entry (here __getitem__, the only one) is skipped, so no traceback is left
    with pytest.raises(
        ResultConversionError, match=r"\Astrict.bad_sequence: KeyError: 'row 1 is gone'\n\Z"
    ) as info:
        strict.call("strict.bad_sequence")
    assert isinstance(info.value.__cause__, KeyError)


def test_a_returned_list_is_emptied_after_the_call(strict):
    # py_module.cpp AddMultipleRecordsFromPython: PySequence_DelSlice(py_seq, 0, len) at the end
    assert strict.call("strict.rows", 3) == [{"x": 0}, {"x": 1}, {"x": 2}]
    assert strict.call("strict.returned_sizes") == [{"sizes": [0]}]


# -- lists are tuples ------------------------------------------------------------------------------


def test_lists_reach_procedures_as_tuples(strict):
    # py_module.cpp MgpListToPyTuple: every Cypher list (argument, nested, in a map, a list
    # property) is a Python tuple in the procedure
    [row] = strict.call(
        "strict.kinds", [1, [2, 3]], {"k": [1.5], "m": {"n": ["x"]}}, strict.node(0)
    )
    assert row["a"] == ["tuple", "int", ["tuple", "int", "int"]]
    assert row["m"] == {"k": ["tuple", "float"], "m": {"n": ["tuple", "str"]}}
    assert row["p"] == ["tuple", "int", ["tuple", "int", "str"]]
    assert row["props"]["l"] == ["tuple", "int", ["tuple", "int", "str"]]
    assert row["props"]["ls"] == ["tuple", "str", "str"]


# -- raw _mgp objects ------------------------------------------------------------------------------


def test_raw_handles_compare_and_hash_as_memgraphs(strict):
    # py_module.cpp PyVertexRichCompare: Py_EQ only (so != falls back to identity), no tp_hash
    assert strict.call("strict.keep_raw", strict.node(0)) == [
        {"eq": True, "ne": True, "same_ne": False}
    ]
    with pytest.raises(
        ProcedureError, match=cases.procedure_error("strict.hash_raw", r"TypeError: unhashable .*")
    ):
        strict.call("strict.hash_raw", strict.node(0))


@pytest.mark.parametrize("which, what", [(0, "Vertex.get_property"), (1, "Edge")])
def test_raw_objects_used_after_their_call_raise(strict, which, what):
    # py_module.cpp: a Py* method on an object of an ended call trips MG_ASSERT (the server
    # aborts); here the use raises HandleUseAfterCallError
    strict.call("strict.keep_raw", strict.node(0))
    with pytest.raises(
        ProcedureError,
        match=cases.procedure_error(
            "strict.use_raw",
            rf".*HandleUseAfterCallError: _mgp.{what}: a raw _mgp object used "
            r"after its procedure call ended .*",
        ),
    ) as info:
        strict.call("strict.use_raw", which)
    assert isinstance(info.value.__cause__, HandleUseAfterCallError)


def test_a_raw_graph_used_after_its_call_raises(strict):
    strict.call("strict.keep_raw", strict.node(0))
    with pytest.raises(ProcedureError, match=r"_mgp.Graph.get_vertex_by_id: a raw _mgp object"):
        strict.call("strict.use_raw", 2)


# -- C strings -------------------------------------------------------------------------------------


def test_strings_are_cut_at_the_first_nul(strict):
    # py_module.cpp MgpValueToPyObject: PyUnicode_FromString of the C string
    assert strict.call("strict.echo", "ab\x00cd") == [{"s": "ab", "n": 2}]
    [row] = strict.call("strict.kinds", [], {}, strict.node(0))
    assert row["s"] == "ab"


def test_string_list_elements_are_cut_at_the_first_nul(tmp_path):
    path = tmp_path / "nul.py"
    path.write_text(
        "import mgp\n\n@mgp.read_proc\ndef ls(ctx: mgp.ProcCtx, v: mgp.Vertex) -> "
        "mgp.Record(ls=mgp.Any):\n    return mgp.Record(ls=list(v.properties.get('ls')))\n"
    )
    g = EmbeddedGraph(modules=[path])
    g.add_node([], {"ls": ["a\x00b", "c"]})
    assert g.call("nul.ls", g.node(0)) == [{"ls": ["a", "c"]}]


# -- memory limit and query timeout ----------------------------------------------------------------


def test_the_memory_clause_is_read_as_memgraph_reads_it():
    # cypher_main_visitor.cpp VisitMemoryLimit (KB = 1024, MB = 1024 * 1024); eval.cpp
    # EvaluateMemoryLimit (an integer > 0); Cypher.g4 memoryLimit
    assert parse_procedure_memory_clause("PROCEDURE MEMORY LIMIT 100 MB") == 100 * 1024 * 1024
    assert parse_procedure_memory_clause("procedure memory limit 3 kb") == 3 * 1024
    assert parse_procedure_memory_clause(" PROCEDURE  MEMORY UNLIMITED ") is None
    assert procedure_memory_clause(None) == "PROCEDURE MEMORY UNLIMITED"
    assert procedure_memory_clause(5 * 1024 * 1024) == "PROCEDURE MEMORY LIMIT 5 MB"
    assert procedure_memory_clause(1500) == "PROCEDURE MEMORY LIMIT 2 KB"
    with pytest.raises(ValueError, match=r"Memory limit must be a non-negative integer"):
        parse_procedure_memory_clause("PROCEDURE MEMORY LIMIT 0 MB")
    with pytest.raises(ValueError, match=r"expected 'PROCEDURE MEMORY UNLIMITED' or"):
        parse_procedure_memory_clause("PROCEDURE MEMORY LIMIT 1 GB")
    # Memgraph 2.0.0-2.12.0: "Default to 100 MB" (cypher_main_visitor.cpp visitCallProcedure)
    assert MEMGRAPH_2_PROCEDURE_MEMORY_LIMIT_BYTES == 100 * 1024 * 1024
    assert EmbeddedGraph(modules=[]).default_memory_limit_bytes == 100 * 1024 * 1024


def test_a_bad_memory_limit_is_refused(strict):
    with pytest.raises(ValueError, match=r"memory_limit_bytes: expected None .* got 0"):
        strict.call("strict.echo", "a", memory_limit_bytes=0)
    assert strict.call("strict.echo", "a", memory_limit_bytes=1024) == [{"s": "a", "n": 1}]


@pytest.fixture(scope="module")
def wide_graph():
    # 300 nodes x 1,000 float64 values: a pack blob of about 1.6 MB of base64
    g = EmbeddedGraph(default_memory_limit_bytes=1024 * 1024)
    for i in range(300):
        g.add_node(["W"], {"f": [float(i)] * 1000})
    return g


def test_a_blob_over_the_memory_limit_fails_naming_the_limit(wide_graph):
    # v2.12.0 plan/operator.cpp CallCustomProcedure: the procedure runs on a LimitedMemoryResource;
    # py_module.cpp AddRecordFromPython converts each result value through it, a bad_alloc becomes
    # MemoryError (PyObjectToMgpValueWithPythonExceptions)
    args = (list(range(300)), ["f"], {"dtype": "float64"})
    with pytest.raises(
        ResultConversionError,
        match=r"\Atf_features.pack: MemoryError: std::bad_alloc \(embedded runtime: the record, "
        r"field 'blob': about 3,2\d\d,\d\d\d bytes, over the procedure memory limit of "
        r"2,097,152 bytes \(PROCEDURE MEMORY LIMIT 2 MB\); set a larger",
    ):
        wide_graph.call("tf_features.pack", *args, memory_limit_bytes=2 * 1024 * 1024)
    with pytest.raises(
        ResultConversionError,
        match=r"over the procedure memory limit of 1,048,576 bytes \(the default PROCEDURE "
        r"MEMORY LIMIT 1 MB\)",
    ):
        wide_graph.call("tf_features.pack", *args)
    [row] = wide_graph.call("tf_features.pack", *args, memory_limit_bytes=None)
    assert row["count"] == 300 and len(row["blob"]) > 3_200_000
    [row] = wide_graph.call("tf_features.pack", *args, memory_limit_bytes=4 * 1024 * 1024)
    assert row["count"] == 300


def test_a_property_over_the_memory_limit_fails_where_it_is_read(wide_graph):
    # mgp_vertex_get_property allocates the value on the procedure's memory: over the limit the
    # C API reports MGP_ERROR_UNABLE_TO_ALLOCATE, raised as _mgp.UnableToAllocateError
    with pytest.raises(
        ProcedureError,
        match=r"UnableToAllocateError: Unable to allocate memory. \(embedded runtime: property 'f' "
        r"needs about 32,032 bytes, over the procedure memory limit of 16,384 bytes "
        r"\(PROCEDURE MEMORY LIMIT 16 KB\)\)",
    ):
        wide_graph.call("tf_features.pack", [0], ["f"], {}, memory_limit_bytes=16 * 1024)


def test_the_query_timeout_makes_must_abort_true():
    # Memgraph's --query-execution-timeout-sec: past it mgp_must_abort is true, and mgp.py's
    # check_must_abort raises mgp.AbortError (include/mgp.py ProcCtx.check_must_abort)
    g = EmbeddedGraph(query_timeout_s=0.05)
    assert g.query_timeout_s == 0.05
    spec = cases.star_graph(3000)
    for labels, props in spec.nodes:
        g.add_node(labels, props)
    for a, b, t in spec.edges:
        g.add_edge(a, b, t)
    assert EmbeddedGraph(modules=[]).query_timeout_s == 600.0  # Memgraph's default
    g._runtime.query_timeout_s = 1e-9  # over before the first check
    with pytest.raises(
        ProcedureError, match=cases.procedure_error("tf_features.sample", "mgp.AbortError")
    ):
        g.call("tf_features.sample", [0], [2000], ["f"], {"seed": 1})
    g._runtime.query_timeout_s = None
    assert g.call("tf_features.sample", [0], [2000], ["f"], {"seed": 1})


def test_a_procedure_that_checks_stops_at_the_timeout(tmp_path):
    path = tmp_path / "strict.py"
    path.write_text(STRICT)
    g = EmbeddedGraph(modules=[path], query_timeout_s=0.05)
    with pytest.raises(
        ProcedureError, match=cases.procedure_error("strict.spin", "mgp.AbortError")
    ):
        g.call("strict.spin")


# -- _mgp calls per sampled edge and per node read -------------------------------------------------

# Measured on the star graph (tests/modules/_cases.py star_graph): 3.01 _mgp calls per edge walked
# (next, to_vertex, get_id: the least the API allows -- an edge's other end is only reachable as a
# vertex handle, and its id only through that handle), 2.01 per node whose features a sample reads
# (get_vertex_by_id, get_property) and 2.02 per node pack reads (the _mgp graph's get_vertex_by_id
# when the node is resolved, its handle kept for get_property); the bounds keep 10 % headroom, so a
# change that makes one more database call per edge or node fails.
PER_EDGE, PER_SAMPLED_NODE, PER_PACKED_NODE = 3.3, 2.2, 2.2


def _star(n):
    g = EmbeddedGraph(count_api_calls=True)
    spec = cases.star_graph(n)
    for labels, props in spec.nodes:
        g.add_node(labels, props)
    for a, b, t in spec.edges:
        g.add_edge(a, b, t)
    return g


def _calls(g, *call):
    g.call(*call)
    return sum(g.api_calls.values())


def test_mgp_calls_per_sampled_edge_and_per_node_read():
    small, big = _star(300), _star(900)
    n = {small: 300, big: 900}
    ids = {g: _calls(g, "tf_features.sample", [0], [n[g]], [], {"seed": 1}) for g in n}
    feats = {g: _calls(g, "tf_features.sample", [0], [n[g]], ["f"], {"seed": 1}) for g in n}
    packs = {g: _calls(g, "tf_features.pack", list(range(n[g])), ["f"]) for g in n}
    per_edge = (ids[big] - ids[small]) / 600  # the hub's 600 more edges walked
    per_node = ((feats[big] - ids[big]) - (feats[small] - ids[small])) / 600
    per_packed = (packs[big] - packs[small]) / 600
    assert 2.5 < per_edge <= PER_EDGE, per_edge
    assert 1.5 < per_node <= PER_SAMPLED_NODE, per_node
    assert 1.5 < per_packed <= PER_PACKED_NODE, per_packed
