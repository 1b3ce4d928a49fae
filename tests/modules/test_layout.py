"""memgraph_tf.layout: the one home of the blob layout, checked against what
``tf_features.describe`` reports and against the blobs the procedures really write; and the one
procedure runner."""

from __future__ import annotations

import pathlib
import re
import subprocess
import sys

import _memgraph_tf_modules_cases as cases  # registered by conftest.py
import numpy as np
import pytest

from memgraph_tf import blob, layout, procedures
from memgraph_tf.procedures.errors import OptionError, PropertyValueError

REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent.parent

SAMPLE_VARIANTS = [
    # (properties, fanouts, options)
    (["f"], [3], {}),
    (["f", "x"], [3, 2], {"dtype": "float64", "label_property": "y"}),
    (["f"], [2, 1, 2], {"low_degree": "resample"}),
    (["x", "w"], [1, 4], {"dtype": "float64", "low_degree": "resample", "label_property": "y"}),
    ([], [2], {"label_property": "y"}),  # ids only (what a feature-cache pipeline asks for)
]
PACK_VARIANTS = [
    (["f"], {}),
    (["f", "name", "x"], {"dtype": "float64", "label_property": "y"}),
    (["name"], {"label_property": "y"}),
]


def _table(data: bytes) -> list[tuple[str, str, tuple[int, ...]]]:
    """(name, dtype, shape) per section, in blob order, from the section table."""
    return [(s.name, s.dtype, tuple(s.shape)) for s in blob.read_table(data)]


def _expected(sections: list[layout.Section]) -> list[tuple[str, str, tuple[int, ...]]]:
    return [(s.name, s.dtype, tuple(s.shape)) for s in sections]


def _check_arrays(data: bytes, sections: list[layout.Section]) -> None:
    """blob.unpack gives one array per layout section with the layout's dtype and shape."""
    arrays = blob.unpack(data)
    assert list(arrays) == [s.name for s in sections]
    for s in sections:
        value = arrays[s.name]
        assert value.shape == tuple(s.shape), s.name
        if s.dtype != "string":
            assert value.dtype == np.dtype(s.dtype), s.name


@pytest.mark.parametrize("properties, fanouts, options", SAMPLE_VARIANTS)
def test_sample_layout_is_what_describe_reports_and_sample_writes(
    embedded_runner, properties, fanouts, options
):
    width, dtype, pad, labels = cases.sample_variant(embedded_runner, properties, options)
    [info] = embedded_runner.call(
        "tf_features.describe", properties, {**options, "fanouts": fanouts}
    )
    assert info["feature_width"] == width and info["dtype"] == dtype
    assert info["sections"] == [
        s.to_map() for s in layout.sample_sections(fanouts, width, dtype, pad=pad, labels=labels)
    ]
    seeds = [cases.I(0), cases.I(5), cases.I(2)]  # 5 is isolated: padded or resampled
    [row] = embedded_runner.call(
        "tf_features.sample", seeds, fanouts, properties, {**options, "seed": 3}
    )
    data = blob.b64decode(row["blob"])
    written = layout.sample_sections(
        fanouts, width, dtype, pad=pad, labels=labels, batch=len(seeds)
    )
    assert _table(data) == _expected(written)
    _check_arrays(data, written)
    one = layout.sample_sections(fanouts, width, dtype, pad=pad, labels=labels, batch=1)
    for per_node in embedded_runner.call(
        "tf_features.sample_per_node", seeds, fanouts, properties, options
    ):
        assert _table(blob.b64decode(per_node["blob"])) == _expected(one)


@pytest.mark.parametrize("properties, options", PACK_VARIANTS)
def test_pack_layout_is_what_describe_reports_and_pack_writes(embedded_runner, properties, options):
    spec = cases.small_graph()
    embedded_runner.build(spec)
    numeric = [p for p in properties if not isinstance(spec.nodes[0][1][p], str)]
    strings = [p for p in properties if isinstance(spec.nodes[0][1][p], str)]
    width = len(cases.features_of(spec, 0, numeric))
    dtype = options.get("dtype", "float32")
    labels = "label_property" in options
    [info] = embedded_runner.call("tf_features.describe", properties, options)
    assert info["sections"] == [
        s.to_map() for s in layout.pack_sections(width, dtype, strings=strings, labels=labels)
    ]
    nodes = [cases.I(4), cases.I(0)]
    [row] = embedded_runner.call("tf_features.pack", nodes, properties, options)
    data = blob.b64decode(row["blob"])
    written = layout.pack_sections(width, dtype, strings=strings, labels=labels, batch=len(nodes))
    assert _table(data) == _expected(written)
    _check_arrays(data, written)


def test_section_names_and_model_inputs():
    assert [layout.ids_name(0), layout.features_name(2), layout.mask_name(1)] == [
        "ids_0",
        "features_2",
        "mask_1",
    ]
    assert layout.model_input_names(2) == [
        "features_0",
        "features_1",
        "features_2",
        "mask_1",
        "mask_2",
    ]
    assert layout.model_input_names(1, masks=False) == ["features_0", "features_1"]
    inputs = layout.model_input_sections([4, 2], 3, "float64", batch=None)
    assert _expected(inputs) == [
        ("features_0", "float64", (None, 3)),
        ("features_1", "float64", (None, 4, 3)),
        ("mask_1", "bool", (None, 4)),
        ("features_2", "float64", (None, 4, 2, 3)),
        ("mask_2", "bool", (None, 4, 2)),
    ]
    assert sorted(s.name for s in inputs) == sorted(layout.model_input_names(2))
    assert [s.hop for s in inputs] == [0, 1, 1, 2, 2]
    assert layout.PAD_ID == -1
    assert layout.OPTION_NAMES["describe"] == layout.SAMPLE_OPTIONS + ("fanouts",)
    assert set(layout.PACK_OPTIONS) < set(layout.SAMPLE_OPTIONS)


def test_layout_argument_errors():
    with pytest.raises(
        ValueError,
        match=r"h: expected a hop >= 1 for a mask section \(hop 0 holds the seeds\), got 0",
    ):
        layout.mask_name(0)
    with pytest.raises(ValueError, match=r"h: expected a hop index, an integer >= 0, got -1"):
        layout.ids_name(-1)
    with pytest.raises(
        ValueError, match=r"dtype: expected one of 'float32', 'float64', got 'float16'"
    ):
        layout.sample_sections([2], 3, "float16")
    with pytest.raises(
        ValueError,
        match=r"fanouts: expected a non-empty list of integers >= 1 \(one per hop\), got \[2, 0\]",
    ):
        layout.sample_sections([2, 0], 3)
    with pytest.raises(
        ValueError, match=r"width: expected the feature width, an integer >= 0, got -3"
    ):
        layout.pack_sections(-3)
    with pytest.raises(
        ValueError, match=r"batch: expected None, -1 \(unknown\) or a size >= 0, got -2"
    ):
        layout.pack_sections(3, batch=-2)
    with pytest.raises(
        ValueError,
        match=r"strings: expected string property names other than 'ids', 'features', 'labels' "
        r".*got 'ids'",
    ):
        layout.pack_sections(3, strings=["title", "ids"])
    with pytest.raises(
        ValueError, match=r"hops: expected the number of hops, an integer >= 1, got 0"
    ):
        layout.model_input_names(0)


def test_layout_imports_with_the_standard_library_alone():
    child = (
        "import sys, memgraph_tf.layout as l; "
        "print(l.PAD_ID, sorted(m for m in ('numpy', 'tensorflow') if m in sys.modules))"
    )
    proc = subprocess.run(
        [sys.executable, "-S", "-c", child],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO_ROOT,
        env={"PYTHONPATH": str(REPO_ROOT), "PATH": "/usr/bin:/bin"},
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["-1", "[]"]


def test_section_names_and_pad_id_are_defined_only_in_layout():
    pattern = re.compile(r"""f["'](ids|features|mask)_\{|["']features_\d|^\s*PAD_ID\s*=""", re.M)
    offenders = []
    for path in sorted((REPO_ROOT / "memgraph_tf").rglob("*.py")):
        if path.name == "layout.py" and path.parent.name == "memgraph_tf":
            continue
        for m in pattern.finditer(path.read_text()):
            offenders.append(f"{path.relative_to(REPO_ROOT)}: {m.group(0).strip()}")
    assert offenders == []


# --------------------------------------------------------------------------------------------
# The procedure runner over another graph access
# --------------------------------------------------------------------------------------------


class DictAccess:
    """A GraphAccess over a GraphSpec held in plain dicts (internal ids = spec indices), with
    neighbours handed out in reverse order: not mgp, not Cypher."""

    def __init__(self, spec: cases.GraphSpec, options) -> None:
        self.spec = spec
        self.label = options.label
        self.id_property = options.id_property
        self.made_with = options

    def _nodes(self):
        for i, (labels, props) in enumerate(self.spec.nodes):
            if self.label is None or self.label in labels:
                yield i, props

    def node_name(self, key):
        return procedures.node_name(key, self.id_property)

    def check_abort(self):
        pass

    def properties(self, keys, names):
        return [[self.spec.nodes[k][1].get(n) for n in names] for k in keys]

    def neighbours(self, keys, read):
        return [
            sorted(self.spec.neighbours(k, read.edge_types, read.direction), reverse=True)
            for k in keys
        ]

    def resolve(self, nodes, param):
        return list(nodes)

    def first_node_with(self, names):
        return next(
            (i for i, props in self._nodes() if all(props.get(n) is not None for n in names)), None
        )

    def label_values(self, name):
        return [(props[name], i) for i, props in self._nodes() if props.get(name) is not None]


def test_one_runner_over_any_graph_access(embedded_runner):
    spec = cases.small_graph()
    embedded_runner.build(spec)
    made = []

    def factory(options):
        made.append(DictAccess(spec, options))
        return made[-1]

    runner = procedures.ProcedureRunner(factory)
    opts = {"seed": 5, "label_property": "y", "dtype": "float64"}
    assert (
        runner.describe(["f", "x"], {**opts, "fanouts": [3, 2]})
        == embedded_runner.call("tf_features.describe", ["f", "x"], {**opts, "fanouts": [3, 2]})[0]
    )
    assert made[-1].made_with.fanouts == (3, 2)  # the factory gets the parsed options
    data = runner.sample([0, 3, 5], [3, 2], ["f", "x"], opts)
    assert (
        blob.b64encode(data)
        == embedded_runner.call("tf_features.sample", [0, 3, 5], [3, 2], ["f", "x"], opts)[0][
            "blob"
        ]
    )
    data, count = runner.pack([4, 1], ["f", "name"], {"label_property": "y"})
    assert count == 2
    assert (
        blob.b64encode(data)
        == embedded_runner.call("tf_features.pack", [4, 1], ["f", "name"], {"label_property": "y"})[
            0
        ]["blob"]
    )
    rows = runner.sample_per_node([2, 0], [2], ["f"], opts)
    assert [(k, blob.b64encode(b)) for k, b in rows] == [
        (r["node_id"], r["blob"])
        for r in embedded_runner.call("tf_features.sample_per_node", [2, 0], [2], ["f"], opts)
    ]


def test_runner_checks_arguments_before_touching_the_graph():
    def factory(options):
        raise AssertionError("the graph access must not be made for a bad argument")

    runner = procedures.ProcedureRunner(factory)
    with pytest.raises(
        OptionError, match=r"options: unknown option 'fanouts' for tf_features.sample \(allowed: "
    ):
        runner.sample([0], [2], ["f"], {"fanouts": [2]})
    with pytest.raises(OptionError, match=r"fanouts\[0\]: expected an integer >= 1, got int 0"):
        runner.sample_per_node([0], [0], ["f"])
    with pytest.raises(
        OptionError, match=r"properties\[1\]: expected each property once, got 'f' twice"
    ):
        runner.pack([0], ["f", "f"])
    with pytest.raises(
        OptionError, match=r"options.dtype: expected one of 'float32', 'float64', got str 'int8'"
    ):
        runner.describe(["f"], {"dtype": "int8"})


def test_runner_describe_errors_over_another_access():
    spec = cases.bad_values_graph()
    runner = procedures.ProcedureRunner(lambda options: DictAccess(spec, options))
    with pytest.raises(
        PropertyValueError,
        match=r"node 6 property 'label' \(options.label_property\): expected an integer class, "
        r"got str 'cat'",
    ):
        runner.describe(["s"], {"label_property": "label"})
    with pytest.raises(
        PropertyValueError,
        match=r"properties: expected a node having all of \['f', 'nope'\], "
        r"got no :B node with all of them",
    ):
        runner.describe(["f", "nope"], {"label": "B"})


def test_edge_sections_follow_the_slot_tables_per_group_and_are_prefixed_in_pair_blobs():
    from memgraph_tf.feature_spec import LabelSpec
    from memgraph_tf.typed_sampling import EdgeStep, TypedSamplingSpec

    bought = "(:User)-[:BOUGHT]->(:Product)"
    spec = TypedSamplingSpec.from_num_neighbors("User", {bought: [3]})
    edge_spec = LabelSpec.from_dict(
        {"label": "BOUGHT", "properties": [{"name": "qty", "kind": "numeric"}]}
    )
    edges = {EdgeStep.parse(bought): layout.raw_widths(edge_spec)}
    got = layout.typed_sample_sections(spec, {}, batch=4, labels=True, edges=edges)
    assert [(s.name, s.shape, s.role) for s in got[-3:]] == [
        ("edge_num_h1_s0", (4, 3, 1), "edge_num"),
        ("edge_has_h1_s0", (4, 3, 1), "edge_has"),
        ("labels", (4,), "labels"),
    ]
    target = TypedSamplingSpec.from_num_neighbors("Product", {"(:Product)<-[:BOUGHT]-(:User)": [2]})
    pair = layout.pair_sample_sections(spec, target, {}, batch=2, edges=edges)
    assert [s.name for s in pair if "edge_" in s.name] == [
        "src.edge_num_h1_s0",
        "src.edge_has_h1_s0",
    ]
    with pytest.raises(ValueError, match="written in the dense layout only"):
        layout.typed_sample_sections(spec, {}, layout="compact", edges=edges)
    with pytest.raises(ValueError, match=r"step \(:Product\)<-\[:BOUGHT\]-\(:User\) is not in"):
        layout.typed_edge_sections(spec, {target.steps[0]: layout.raw_widths(edge_spec)})
    with pytest.raises(ValueError, match="step: expected a step index, an integer >= 0, got -1"):
        layout.typed_edge_name("num", 1, -1)
