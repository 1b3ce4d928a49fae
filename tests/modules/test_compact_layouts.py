"""The compact and sparse sample layouts, without TensorFlow: the layout function against
``describe`` and real blobs, the gather/densify rule against the dense layout on random graphs, and
the sampling fast path (``_mgp`` handles) against mgp.py's public API and the sampler of commit
93e52a3 (before these layouts)."""

from __future__ import annotations

import array
import importlib.util
import math
import pathlib
import random

import _memgraph_tf_modules_cases as cases  # registered by conftest.py
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memgraph_tf import blob, layout
from memgraph_tf.procedures import tables
from memgraph_tf.procedures.errors import OptionError

REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent.parent

VARIANTS = [
    # (properties, fanouts, options)
    (["f"], [3], {}),
    (["f", "x"], [3, 2], {"dtype": "float64", "label_property": "y"}),
    (["f"], [2, 1, 2], {"low_degree": "resample"}),
    ([], [2], {"label_property": "y"}),  # ids only: a zero-width table
]


def _table(data: bytes) -> list[tuple[str, str, tuple[int, ...]]]:
    return [(s.name, s.dtype, tuple(s.shape)) for s in blob.read_table(data)]


def _matches(
    written: list[tuple[str, str, tuple[int, ...]]], sections: list[layout.Section]
) -> bool:
    """The blob's table has the layout's names, dtypes and shapes; a -1 in the layout is any
    length."""
    if [w[:2] for w in written] != [(s.name, s.dtype) for s in sections]:
        return False
    return all(
        len(w[2]) == len(s.shape) and all(d == -1 or d == g for d, g in zip(s.shape, w[2]))
        for w, s in zip(written, sections)
    )


def dense_from(sections: dict, fanouts: list[int], pad: bool, width: int) -> dict[str, np.ndarray]:
    """The dense layout's arrays rebuilt from a compact or sparse blob's (blob.unpack) sections, in
    numpy: the rule of docs/blob-format.md section 8, written independently of memgraph_tf.ops."""
    ids = sections[layout.TABLE_IDS].values
    if layout.TABLE in sections:
        table = sections[layout.TABLE].values
        assert table.shape[1] == width
    else:
        cols = sections[layout.TABLE_COLUMNS]
        vals = sections[layout.TABLE_VALUES].values
        table = np.zeros((len(cols.row_splits) - 1, width), vals.dtype)
        for r in range(len(cols.row_splits) - 1):
            lo, hi = cols.row_splits[r], cols.row_splits[r + 1]
            assert list(cols.values[lo:hi]) == sorted(
                set(cols.values[lo:hi].tolist())
            )  # increasing
            table[r, cols.values[lo:hi]] = vals[lo:hi]
    out = {}
    for h in range(len(fanouts) + 1):
        index = sections[layout.index_name(h)]
        assert (
            index.dtype == np.int32
            and index.min(initial=0) >= -1
            and index.max(initial=-1) < len(ids)
        )
        valid = index >= 0
        out[layout.ids_name(h)] = np.where(valid, ids[np.maximum(index, 0)], layout.PAD_ID)
        out[layout.features_name(h)] = np.where(
            valid[..., None], table[np.maximum(index, 0)], 0
        ).astype(table.dtype)
        if h and pad:
            out[layout.mask_name(h)] = valid
    if layout.LABELS in sections:
        out[layout.LABELS] = sections[layout.LABELS]
    return out


@pytest.mark.parametrize("layout_name", ["compact", "sparse"])
@pytest.mark.parametrize("properties, fanouts, options", VARIANTS)
def test_layout_is_what_describe_reports_and_sample_writes(
    embedded_runner, layout_name, properties, fanouts, options
):
    width, dtype, pad, labels = cases.sample_variant(embedded_runner, properties, options)
    opts = {**options, "layout": layout_name}
    [info] = embedded_runner.call("tf_features.describe", properties, {**opts, "fanouts": fanouts})
    expected = layout.sample_sections(
        fanouts, width, dtype, pad=pad, labels=labels, layout=layout_name
    )
    assert info["sections"] == [s.to_map() for s in expected]
    assert not any(s.role in ("features", "mask", "ids") for s in expected)
    seeds = [cases.I(0), cases.I(5), cases.I(2)]  # 5 is isolated: padded or resampled
    [row] = embedded_runner.call(
        "tf_features.sample", seeds, fanouts, properties, {**opts, "seed": 3}
    )
    data = blob.b64decode(row["blob"])
    written = layout.sample_sections(
        fanouts, width, dtype, pad=pad, labels=labels, batch=len(seeds), layout=layout_name
    )
    assert _matches(_table(data), written), (_table(data), written)
    one = layout.sample_sections(
        fanouts, width, dtype, pad=pad, labels=labels, batch=1, layout=layout_name
    )
    for per_node in embedded_runner.call(
        "tf_features.sample_per_node", seeds, fanouts, properties, opts
    ):
        assert _matches(_table(blob.b64decode(per_node["blob"])), one)
    # the dense layout's blob of the same sample, rebuilt from this one
    [dense] = embedded_runner.call(
        "tf_features.sample", seeds, fanouts, properties, {**options, "seed": 3, "layout": "dense"}
    )
    want = blob.unpack_b64(dense["blob"])
    got = dense_from(blob.unpack(data), fanouts, pad, width)
    assert sorted(got) == sorted(want)
    for name in want:
        assert got[name].dtype == want[name].dtype and got[name].shape == want[name].shape, name
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)


def test_compact_table_holds_each_node_once_in_order_of_first_appearance(embedded_runner):
    spec = cases.small_graph()
    embedded_runner.build(spec)
    opts = {"seed": 1, "layout": "compact", "direction": "both"}
    [row] = embedded_runner.call(
        "tf_features.sample", [cases.I(0), cases.I(1), cases.I(0)], [4, 3], ["f"], opts
    )
    out = blob.unpack_b64(row["blob"])
    [dense] = embedded_runner.call(
        "tf_features.sample",
        [cases.I(0), cases.I(1), cases.I(0)],
        [4, 3],
        ["f"],
        {**opts, "layout": "dense"},
    )
    ids = blob.unpack_b64(dense["blob"])
    order = [
        k for h in range(3) for k in ids[layout.ids_name(h)].ravel().tolist() if k != layout.PAD_ID
    ]
    assert out[layout.TABLE_IDS].values.tolist() == list(dict.fromkeys(order))
    assert out[layout.TABLE_IDS].row_splits.tolist() == [0, len(set(order))]
    assert out[layout.TABLE].row_splits.tolist() == [0, len(set(order))]
    assert out[layout.index_name(0)].tolist() == [0, 1, 0]  # the repeated seed points at one row


@pytest.mark.parametrize("layout_name", ["compact", "sparse"])
def test_sparse_and_compact_keep_what_dense_writes_on_a_graph_of_zeros_and_ones(
    embedded_runner, layout_name
):
    # bag-of-words rows: mostly zero, a NaN (allowed) is kept, -0.0 reads back as 0.0
    nodes = [
        (["N"], {"f": [0.0, 1.0, 0.0, 0.0, 1.0]}),
        (["N"], {"f": [0.0] * 5}),
        (["N"], {"f": [math.nan, 0.0, -0.0, 2.5, 0.0]}),
    ]
    spec = cases.GraphSpec(nodes, [(0, 1, "E"), (1, 2, "E"), (2, 0, "E")])
    embedded_runner.build(spec)
    opts = {"seed": 0, "allow_non_finite": True}
    [row] = embedded_runner.call(
        "tf_features.sample", [cases.I(0)], [2, 2], ["f"], {**opts, "layout": layout_name}
    )
    [dense] = embedded_runner.call("tf_features.sample", [cases.I(0)], [2, 2], ["f"], opts)
    want = blob.unpack_b64(dense["blob"])
    out = blob.unpack_b64(row["blob"])
    if layout_name == "sparse":
        cols = out[layout.TABLE_COLUMNS]
        assert out[layout.TABLE_IDS].values.tolist() == [
            0,
            1,
            2,
        ]  # the seed, then its neighbours by key
        assert cols.values.tolist() == [
            1,
            4,
            0,
            3,
        ]  # node 1 is all zeros: no entries; -0.0 is dropped
        assert cols.row_splits.tolist() == [0, 2, 2, 4]
        assert out[layout.TABLE_VALUES].row_splits.tolist() == [0, 4]
    got = dense_from(out, [2, 2], True, 5)
    for name in want:
        np.testing.assert_array_equal(
            got[name], want[name], err_msg=name
        )  # NaN == NaN here, 0.0 == -0.0


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_csr_is_the_same_with_and_without_numpy(monkeypatch, dtype):
    rng = random.Random(5)
    u, d = 7, 9
    values = [
        rng.choice([0.0, 0.0, 0.0, -0.0, 1.0, 0.25, -3.0, math.nan, 1e-30]) for _ in range(u * d)
    ]
    flat = array.array("f" if dtype == "float32" else "d", values)
    with_numpy = tables.csr(flat, u, d, dtype)
    monkeypatch.setattr(tables, "_np", None)
    without = tables.csr(flat, u, d, dtype)
    assert [a.tobytes() for a in with_numpy] == [a.tobytes() for a in without]
    columns, vals, splits = without
    assert len(columns) == sum(1 for v in flat if v) and splits[-1] == len(vals)


def test_layout_option_is_checked(embedded_runner):
    embedded_runner.build(cases.small_graph())
    with pytest.raises(
        embedded_runner.error_type,
        match=r"options.layout: expected one of 'dense', 'compact', 'sparse', got str 'csr'",
    ):
        embedded_runner.call("tf_features.sample", [cases.I(0)], [2], ["f"], {"layout": "csr"})
    with pytest.raises(OptionError, match=r"options: unknown option 'layout' for tf_features.pack"):
        from memgraph_tf.procedures import parse_options

        parse_options("pack", {"layout": "compact"})
    with pytest.raises(
        ValueError, match=r"layout: expected one of 'dense', 'compact', 'sparse', got 'coo'"
    ):
        layout.sample_sections([2], 3, layout="coo")


def test_model_input_sections_of_each_layout():
    assert [
        s.name for s in layout.model_input_sections([4, 2], 3, layout="compact", batch=None)
    ] == ["index_0", "index_1", "index_2", "table", "table.row_splits"]
    sparse = layout.model_input_sections([4, 2], 3, layout="sparse", batch=1)
    assert [(s.name, s.dtype, s.shape) for s in sparse] == [
        ("index_0", "int32", (1,)),
        ("index_1", "int32", (1, 4)),
        ("index_2", "int32", (1, 4, 2)),
        ("table_columns", "int32", (-1,)),
        ("table_columns.row_splits", "int64", (-1,)),
        ("table_values", "float32", (-1,)),
        ("table_values.row_splits", "int64", (2,)),
    ]
    assert layout.ragged_names(sparse) == ["table_columns", "table_values"]


# ------------------------------------------------------------------------------------------------
# Random graphs: every layout gives the dense layout's arrays
# ------------------------------------------------------------------------------------------------


@st.composite
def graphs(draw):
    n = draw(st.integers(1, 9))
    width = draw(st.integers(0, 4))
    nodes = [
        (
            ["N"],
            {
                "f": [float(draw(st.sampled_from([0, 0, 1, -2.5]))) for _ in range(width)],
                "y": i % 3,
            },
        )
        for i in range(n)
    ]
    edges = draw(
        st.lists(
            st.tuples(st.integers(0, n - 1), st.integers(0, n - 1), st.sampled_from(["A", "B"])),
            max_size=25,
        )
    )
    return cases.GraphSpec(nodes, edges), width


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    graph=graphs(),
    data=st.data(),
    fanouts=st.lists(st.integers(1, 3), min_size=1, max_size=3),
    low_degree=st.sampled_from(["pad", "resample"]),
    replace=st.booleans(),
    layout_name=st.sampled_from(["compact", "sparse"]),
    seed=st.integers(0, 2**31),
)
def test_random_graphs_every_layout_rebuilds_the_dense_blob(
    graph, data, fanouts, low_degree, replace, layout_name, seed
):
    spec, width = graph
    runner = cases.EmbeddedRunner()
    runner.build(spec)
    seeds = data.draw(st.lists(st.integers(0, len(spec.nodes) - 1), min_size=1, max_size=4))
    opts = {"seed": seed, "low_degree": low_degree, "replace": replace, "label_property": "y"}
    [dense] = runner.call("tf_features.sample", seeds, fanouts, ["f"], opts)
    [row] = runner.call(
        "tf_features.sample", seeds, fanouts, ["f"], {**opts, "layout": layout_name}
    )
    want = blob.unpack_b64(dense["blob"])
    got = dense_from(blob.unpack_b64(row["blob"]), fanouts, low_degree == "pad", width)
    assert sorted(got) == sorted(want)
    for name in want:
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)
    rows = runner.call(
        "tf_features.sample_per_node", seeds, fanouts, ["f"], {**opts, "layout": layout_name}
    )
    for i, r in enumerate(rows):
        part = dense_from(blob.unpack_b64(r["blob"]), fanouts, low_degree == "pad", width)
        for name in want:
            np.testing.assert_array_equal(part[name][0], want[name][i], err_msg=name)


# ------------------------------------------------------------------------------------------------
# The sampling fast path: the same bytes as mgp.py's public API and as commit 93e52a3's sampler
# ------------------------------------------------------------------------------------------------

PUBLIC_MODULE = """
import mgp
from memgraph_tf import blob, procedures
from memgraph_tf.procedures.mgp_access import MgpGraphAccess


def _runner(ctx):
    return procedures.ProcedureRunner(lambda opts: MgpGraphAccess(ctx, opts, handles=False))


@mgp.read_proc
def sample(ctx: mgp.ProcCtx, seeds: mgp.List[mgp.Any], fanouts: mgp.List[int],
           properties: mgp.List[str], options: mgp.Nullable[mgp.Map] = None
           ) -> mgp.Record(blob=str):
    return mgp.Record(blob=blob.b64encode(_runner(ctx).sample(seeds, fanouts, properties, options)))
"""


@pytest.fixture(scope="module")
def module_files(tmp_path_factory):
    path = tmp_path_factory.mktemp("modules") / "public_api.py"
    path.write_text(PUBLIC_MODULE)
    return [path]


@pytest.fixture(scope="module")
def baseline_module_file(tmp_path_factory):
    """The sampler of commit 93e52a3 (before the compact layouts) from git history, as
    benchmarks/query_modules.py loads it; skipped only where this checkout has no git history to
    read it from."""
    spec = importlib.util.spec_from_file_location(
        "_sample_baseline_loader", REPO_ROOT / "benchmarks" / "_sample_baseline.py"
    )
    loader = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(loader)
    try:
        return loader.materialise(tmp_path_factory.mktemp("baseline"))
    except loader.BaselineUnavailable as exc:
        pytest.skip(f"no git history for the baseline sampler: {exc}")


@st.composite
def keyed_graphs(draw):
    n = draw(st.integers(1, 9))
    nodes = [
        (
            ["N"] if i % 4 else ["M"],
            {"f": [float(i), float(draw(st.integers(-3, 3)))], "key": 100 + 7 * i},
        )
        for i in range(n)
    ]
    edges = draw(
        st.lists(
            st.tuples(st.integers(0, n - 1), st.integers(0, n - 1), st.sampled_from(["A", "B"])),
            max_size=30,
        )
    )
    return cases.GraphSpec(nodes, edges)


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    spec=keyed_graphs(),
    data=st.data(),
    fanouts=st.lists(st.integers(1, 3), min_size=1, max_size=3),
    direction=st.sampled_from(["out", "in", "both"]),
    edge_types=st.sampled_from([None, ["A"], ["A", "B"]]),
    by_key=st.booleans(),
    seed=st.integers(0, 2**31),
)
def test_handle_path_public_api_and_baseline_write_the_same_bytes(
    module_files, baseline_module_file, spec, data, fanouts, direction, edge_types, by_key, seed
):
    runner = cases.EmbeddedRunner()
    runner.build(spec)
    for path in [*module_files, baseline_module_file]:
        runner.graph.load_module(path)
    picks = data.draw(st.lists(st.integers(0, len(spec.nodes) - 1), min_size=1, max_size=4))
    opts = {"seed": seed, "direction": direction, "edge_types": edge_types}
    if by_key:
        opts["id_property"] = "key"
        seeds = [spec.nodes[i][1]["key"] for i in picks]
    else:
        seeds = [cases.V(i) if i % 2 else cases.I(i) for i in picks]
    [fast] = runner.call("tf_features.sample", seeds, fanouts, ["f"], opts)
    [public] = runner.call("public_api.sample", seeds, fanouts, ["f"], opts)
    [old] = runner.call(f"{baseline_module_file.stem}.sample", seeds, fanouts, ["f"], opts)
    assert fast["blob"] == public["blob"] == old["blob"]


def test_handle_path_and_public_api_raise_the_same_errors(module_files, embedded_runner):
    nodes = [
        (["N"], {"f": [1.0], "key": 5}),
        (["N"], {"f": [2.0], "key": 5}),
        (["N"], {"f": [3.0]}),
        (["N"], {"f": [4.0], "key": 9}),
    ]
    embedded_runner.build(cases.GraphSpec(nodes, [(3, 0, "E"), (3, 1, "E"), (2, 3, "E")]))
    for path in module_files[:1]:
        embedded_runner.graph.load_module(path)
    refused = {  # direction -> the error (out: the two key-5 nodes; in: node 2, without a key)
        "out": r"options.id_property: expected unique ids, got key = 5 on the nodes with "
        r"internal ids \d and \d",
        "in": r"node 2 property 'key' \(options.id_property\): expected an integer id, got no "
        r"value",
    }
    for proc in ("tf_features.sample", "public_api.sample"):
        for direction, message in refused.items():
            with pytest.raises(embedded_runner.error_type, match=message):
                embedded_runner.call(
                    proc, [cases.V(3)], [3], ["f"], {"id_property": "key", "direction": direction}
                )


def test_sampling_reads_edges_and_properties_through_the_handles(
    module_files, embedded_runner, monkeypatch
):
    """The fast path really is taken: with mgp.py's per-edge and per-property API disabled,
    tf_features.sample still works, while the public-API module (the check's control) fails."""
    import mgp

    embedded_runner.build(cases.small_graph())
    embedded_runner.graph.load_module(module_files[0])

    def refuse(self):
        raise AssertionError("mgp.py's public edge/property API was used")

    for name in ("in_edges", "out_edges", "properties"):
        monkeypatch.setattr(mgp.Vertex, name, property(refuse))
    [row] = embedded_runner.call(
        "tf_features.sample", [cases.I(0), cases.I(2)], [3, 2], ["f"], {"seed": 1}
    )
    assert blob.unpack_b64(row["blob"])["features_2"].shape == (2, 3, 2, 3)
    with pytest.raises(
        embedded_runner.error_type, match=r"mgp.py's public edge/property API was used"
    ):
        embedded_runner.call(
            "public_api.sample", [cases.I(0), cases.I(2)], [3, 2], ["f"], {"seed": 1}
        )
