"""The embedded runtime is as strict as Memgraph (issue 22, points 1-7), read against Memgraph's
source (tags v2.0.0 to v3.9.0; BSL: read to compare, nothing copied). Each test names the file and
function whose behaviour it pins."""

from __future__ import annotations

import textwrap

import _memgraph_tf_modules_cases as cases  # registered by conftest.py
import pytest

from memgraph_tf.embedded import EmbeddedGraph, ProcedureError
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
    """
)


@pytest.fixture
def strict(tmp_path):
    path = tmp_path / "strict.py"
    path.write_text(STRICT)
    g = EmbeddedGraph(modules=[path])
    g.add_node(["A"], {"p": 0})
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
