"""tf_features through the embedded runtime: the real module file, through the real mgp.py."""

from __future__ import annotations

import pathlib

import _memgraph_tf_modules_cases as cases  # registered by conftest.py
import pytest

HERE = pathlib.Path(__file__).resolve().parent


class TestEmbedded(cases.RunnerTests):
    @pytest.fixture
    def runner(self, embedded_runner):
        return embedded_runner


def test_module_is_the_file_memgraph_loads(embedded_runner):
    from memgraph_tf.deploy import find_module_file

    embedded_runner.build(cases.small_graph())
    procs = embedded_runner.graph.procedures()
    assert sorted(procs) == [
        "tf_features.build_reservoirs",
        "tf_features.describe",
        "tf_features.pack",
        "tf_features.profile",
        "tf_features.sample",
        "tf_features.sample_pairs",
        "tf_features.sample_per_node",
        "tf_features.sample_typed",
        "tf_features.schema",
        "tf_features.split_edges",
        "tf_features.structural",
        "tf_features.structural_write",
        "tf_features.update_reservoirs",
    ]
    assert find_module_file() == HERE.parent.parent / "query_modules" / "tf_features.py"
    # the list arguments are declared loosely (LIST OF ANY?): the procedures check each element
    assert procs["tf_features.pack"] == (
        "tf_features.pack(nodes :: LIST OF ANY?, properties :: LIST OF ANY?, options = Null :: "
        "MAP?) :: (blob :: STRING, count :: INTEGER)"
    )
    assert procs["tf_features.sample"] == (
        "tf_features.sample(seeds :: LIST OF ANY?, fanouts :: LIST OF ANY?, properties :: LIST OF "
        "ANY?, options = Null :: MAP?) :: (blob :: STRING)"
    )


def test_blob_is_base64url_with_padding(embedded_runner):
    import base64

    embedded_runner.build(cases.small_graph())
    [row] = embedded_runner.call("tf_features.pack", [0, 1, 2], ["f"], {})
    text = row["blob"]
    assert set(text) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_=")
    assert len(text) % 4 == 0
    raw = base64.urlsafe_b64decode(text)
    assert raw[:4] == b"MGTF"


def test_wrong_argument_type_is_refused_before_the_call(embedded_runner):
    from memgraph_tf.embedded import ArgumentTypeError

    embedded_runner.build(cases.small_graph())
    # a value that is not a list at all, or null, is still Memgraph's to refuse
    with pytest.raises(
        ArgumentTypeError,
        match=r"\A'tf_features.sample' argument named 'fanouts' at position 1 must be of type "
        r"LIST OF ANY\?.\Z",
    ):
        embedded_runner.call("tf_features.sample", [0], "2,2", ["f"])
    with pytest.raises(
        ArgumentTypeError,
        match=r"argument named 'seeds' at position 0 must be of type LIST OF ANY\?.",
    ):
        embedded_runner.call("tf_features.sample", None, [2], ["f"])
    # a bad element reaches the procedure, which names it (before: "expects LIST OF INTEGER, got
    # LIST" from the declared type)
    with pytest.raises(
        embedded_runner.error_type,
        match=cases.procedure_error(
            "tf_features.sample",
            r"memgraph_tf.procedures.errors.OptionError: fanouts\[0\]: expected an integer >= 1, "
            r"got float 2.0",
        ),
    ):
        embedded_runner.call("tf_features.sample", [0], [2.0], ["f"])
    with pytest.raises(
        ArgumentTypeError, match=r"argument named 'options' at position 2 must be of type MAP\?."
    ):
        embedded_runner.call("tf_features.pack", [0], ["f"], ["dtype"])
    with pytest.raises(
        ArgumentTypeError, match=r"\A'tf_features.pack' requires between 2 and 3 arguments.\Z"
    ):
        embedded_runner.call("tf_features.pack", [0])
    with pytest.raises(
        ArgumentTypeError,
        match=r"argument 'nodes'\[0\]: expected a Cypher value .* got builtins.bytes",
    ):
        embedded_runner.call("tf_features.pack", [b"\x00"], ["f"])


def test_abort_is_honoured(embedded_runner):
    embedded_runner.build(cases.star_graph())
    embedded_runner.graph.request_abort()
    with pytest.raises(
        embedded_runner.error_type,
        match=cases.procedure_error("tf_features.sample", "mgp.AbortError"),
    ):
        embedded_runner.call("tf_features.sample", [0], [3, 2], ["f"], {"seed": 1})
    embedded_runner.graph.request_abort(False)
    assert embedded_runner.call("tf_features.sample", [0], [3, 2], ["f"], {"seed": 1})


class _AbortFrom:
    """An abort flag for ``EmbeddedGraph.request_abort`` that counts how often the procedure checks
    it (each ``ctx.check_must_abort()`` reads it once) and reads true from check number ``at``
    on."""

    def __init__(self, at=None):
        self.at = at
        self.checks = 0

    def __bool__(self):
        self.checks += 1
        return self.at is not None and self.checks >= self.at


@pytest.mark.parametrize(
    "procedure, args, min_checks",
    [
        # one call over 3,001 nodes: resolving ids and reading properties check every 256 nodes
        ("tf_features.pack", (list(range(3001)), ["f"], {}), 2 * 3001 // 256),
        # one seed whose 3,000 neighbours are walked and read: the checks come from inside sampling
        ("tf_features.sample", ([0], [2000], ["f"], {"seed": 1}), 3000 // 256),
        ("tf_features.sample_per_node", ([0], [2000], ["f"], {"seed": 1}), 3000 // 256),
    ],
)
def test_long_loops_check_for_abort(embedded_runner, procedure, args, min_checks):
    embedded_runner.build(cases.star_graph(3000))
    counter = _AbortFrom()
    embedded_runner.graph.request_abort(counter)
    assert embedded_runner.call(procedure, *args)
    total = counter.checks
    assert total >= min_checks, f"{procedure} checked for abort only {total} times"
    # an abort that arrives at the last check, late in the work, still stops the procedure
    embedded_runner.graph.request_abort(_AbortFrom(at=total))
    with pytest.raises(
        embedded_runner.error_type, match=cases.procedure_error(procedure, "mgp.AbortError")
    ):
        embedded_runner.call(procedure, *args)


def test_one_wide_seed_checks_for_abort_inside_its_row(embedded_runner):
    # one seed, 500 x 400 = 200,000 slots drawn at hop 2 and gathered into features_2: the abort
    # checks must come from inside that one row, not only between rows
    embedded_runner.build(cases.star_graph(3))
    args = ([0], [500, 400], ["f"], {"seed": 1})
    counter = _AbortFrom()
    embedded_runner.graph.request_abort(counter)
    assert embedded_runner.call("tf_features.sample", *args)
    assert counter.checks >= 500 * 400 // 16384, counter.checks
    for at in (counter.checks // 2, counter.checks):
        embedded_runner.graph.request_abort(_AbortFrom(at=at))
        with pytest.raises(
            embedded_runner.error_type,
            match=cases.procedure_error("tf_features.sample", "mgp.AbortError"),
        ):
            embedded_runner.call("tf_features.sample", *args)


def test_module_file_is_thin_and_imports_only_what_memgraph_has():
    import ast

    path = HERE.parent.parent / "query_modules" / "tf_features.py"
    tree = ast.parse(path.read_text())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            imported.add(
                f"{node.module}.{node.names[0].name}"
                if node.module == "memgraph_tf"
                else node.module
            )
    assert imported == {"mgp", "memgraph_tf.procedures"}
    procs = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    assert [p.name for p in procs] == [
        "pack",
        "sample",
        "sample_per_node",
        "describe",
        "sample_typed",
        "schema",
        "sample_pairs",
        "split_edges",
        "build_reservoirs",
        "update_reservoirs",
        "profile",
        "structural",
        "structural_write",
    ]
    writers = ("split_edges", "build_reservoirs", "update_reservoirs", "structural_write")
    for proc in procs:
        kind = "mgp.write_proc" if proc.name in writers else "mgp.read_proc"
        assert [ast.unparse(d) for d in proc.decorator_list] == [kind]
        assert all(a.annotation is not None for a in proc.args.args), proc.name
        assert len(proc.body) <= 4, f"{proc.name} should delegate to memgraph_tf.procedures"
