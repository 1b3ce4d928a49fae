"""memgraph_tf.ops.sample_decoding: compact and sparse sample blobs decoded (by the op and by the
op-free
decoder) and gathered/densified in the graph give exactly the dense layout's tensors; malformed
layouts are rejected naming the blob and section; the C++ reader reads the new layouts unchanged.

Time: the op-free decoder's graph has thousands of ops, and each ``tf.function`` of it costs
seconds to trace and as many again to instantiate on its first run (a function nested in another
is instantiated again by every caller, so sharing must be of whole graphs). So whole graphs are
shared: one vector-of-blobs graph per case, layout and decoder (:func:`traced_vector_decoder`)
serves the per-node and the one-blob blobs, and one graph per layout and decoder serves every
malformed-blob case.
"""

from __future__ import annotations

import functools
import random

import numpy as np
import pytest
import tensorflow as tf

from memgraph_tf import blob, layout
from memgraph_tf.embedded import EmbeddedGraph
from memgraph_tf.ops import sample_decoding

DECODERS = ["op", "portable"]


@pytest.fixture(scope="module")
def unpackers(ops):
    return {"op": ops.unpack_blob, "portable": ops.unpack_blob_portable}


def random_graph(seed: int, width: int) -> EmbeddedGraph:
    rng = random.Random(seed)
    g = EmbeddedGraph()
    n = rng.randint(2, 12)
    for _ in range(n):
        g.add_node(
            ["N"],
            {
                "f": [rng.choice([0.0, 0.0, 0.0, 1.0, -0.5, 3.25]) for _ in range(width)],
                "y": rng.randrange(3),
            },
        )
    for _ in range(rng.randint(0, 3 * n)):
        g.add_edge(rng.randrange(n), rng.randrange(n), "E")
    return g


def sample(
    g: EmbeddedGraph, seeds: list[int], fanouts: list[int], opts: dict, per_node: bool
) -> tf.Tensor:
    if per_node:
        rows = g.call("tf_features.sample_per_node", seeds, fanouts, ["f"], opts)
        return tf.constant([blob.b64decode(r["blob"]) for r in rows])
    [row] = g.call("tf_features.sample", seeds, fanouts, ["f"], opts)
    return tf.constant(blob.b64decode(row["blob"]))


def assert_same(got: dict, want: dict) -> None:
    assert sorted(got) == sorted(want)
    for name, value in want.items():
        g = np.asarray(got[name])
        w = np.asarray(value)
        assert g.dtype == w.dtype and g.shape == w.shape, (name, g.dtype, g.shape, w.dtype, w.shape)
        assert g.tobytes() == w.tobytes(), name  # bitwise


CASES = [
    # (graph seed, width, fanouts, options)
    (0, 4, [3, 2], {}),
    (1, 3, [2, 2, 2], {"low_degree": "resample", "dtype": "float64"}),
    (2, 5, [4], {"replace": True}),
    (3, 2, [1, 3], {"direction": "out"}),
    (4, 0, [2, 2], {}),  # zero-width features
]


@pytest.mark.parametrize("decoder", DECODERS)
@pytest.mark.parametrize("per_node", [False, True], ids=["one-blob", "per-node"])
@pytest.mark.parametrize("layout_name", ["compact", "sparse"])
@pytest.mark.parametrize("graph_seed, width, fanouts, options", CASES)
def test_every_layout_decodes_to_the_dense_tensors(
    unpackers, decoder, per_node, layout_name, graph_seed, width, fanouts, options
):
    ops_unpack = unpackers["op"]
    g = random_graph(graph_seed, width)
    seeds = list(range(min(4, g.node_count)))
    opts = {"seed": graph_seed, "label_property": "y", **options}
    pad = opts.get("low_degree", "pad") == "pad"
    dtype = opts.get("dtype", "float32")
    args = dict(pad=pad, labels=True, ids=True, unpack=unpackers[decoder])
    # the dense tensors of a case, decoded eagerly once and shared by its compact and sparse tests
    want = dense_want(
        unpackers[decoder], graph_seed, width, tuple(fanouts), tuple(options.items()), per_node
    )
    dense_names = [
        s.name for s in layout.sample_sections(fanouts, width, dtype, pad=pad, labels=True)
    ]
    assert list(want) == dense_names  # the dense layout decodes as itself
    blobs = sample(g, seeds, fanouts, {**opts, "layout": layout_name}, per_node)
    got = sample_decoding.decode_sample(
        blobs, fanouts, width, dtype, layout_name=layout_name, **args
    )
    assert_same(got, want)
    # In a graph, traced once for any number of blobs (as a bundle's signature is): one trace of the
    # decoder's graph (the op-free decoder's is large) serves the values and the static shapes.
    traced = traced_vector_decoder(
        unpackers[decoder], tuple(fanouts), width, dtype, layout_name, pad
    )
    if per_node:
        assert_same(traced(blobs), want)
    else:
        # decode_sample hands every decoder a vector of blobs (a scalar is reshaped to [1] and
        # the batch dimension dropped after), so the one-blob blob goes through the per-node
        # graph as a vector of one ...
        assert_same({k: v[0] for k, v in traced(tf.reshape(blobs, [1])).items()}, want)
        # ... and the scalar branch itself, decoder-independent, is traced with the op (cheap)
        scalar = tf.function(
            lambda b: sample_decoding.decode_sample(
                b, fanouts, width, dtype, layout_name=layout_name, **{**args, "unpack": ops_unpack}
            ),
            autograph=False,
        ).get_concrete_function(tf.TensorSpec([], tf.string))
        assert_same(scalar(blobs), want)
    if (
        per_node
    ):  # the same static shapes as the dense layout's: all but the batch and seed dimensions
        shapes = {k: v.shape.as_list() for k, v in traced.structured_outputs.items()}
        assert shapes == dense_graph_shapes(unpackers[decoder], tuple(fanouts), width, dtype, pad)
        assert shapes[layout.features_name(len(fanouts))] == [None, None, *fanouts, width]


@functools.cache
def dense_want(
    unpack, graph_seed: int, width: int, fanouts: tuple, options: tuple, per_node: bool
) -> dict:
    """The dense layout's tensors of one case (``options``: its options as ``(key, value)``
    pairs), decoded eagerly by ``unpack``."""
    g = random_graph(graph_seed, width)
    seeds = list(range(min(4, g.node_count)))
    opts = {"seed": graph_seed, "label_property": "y", **dict(options)}
    pad = opts.get("low_degree", "pad") == "pad"
    dtype = opts.get("dtype", "float32")
    args = dict(pad=pad, labels=True, ids=True, unpack=unpack)
    return sample_decoding.decode_sample(
        sample(g, seeds, list(fanouts), opts, per_node), list(fanouts), width, dtype, **args
    )


@functools.cache
def traced_vector_decoder(
    unpack, fanouts: tuple, width: int, dtype: str, layout_name: str, pad: bool
) -> tf.types.experimental.ConcreteFunction:
    """``decode_sample`` of a vector of blobs (``[None]``) in a graph: traced once per case,
    layout and decoder, and shared by that case's per-node and one-blob tests."""
    return tf.function(
        lambda b: sample_decoding.decode_sample(
            b,
            list(fanouts),
            width,
            dtype,
            layout_name=layout_name,
            pad=pad,
            labels=True,
            ids=True,
            unpack=unpack,
        ),
        autograph=False,
    ).get_concrete_function(tf.TensorSpec([None], tf.string))


@functools.cache
def dense_graph_shapes(unpack, fanouts: tuple, width: int, dtype: str, pad: bool) -> dict:
    """The static shapes of the dense layout's tensors decoded in a graph from ``[None]`` per-node
    blobs (traced once per case and decoder, shared by the compact and sparse cases)."""
    fn = tf.function(
        lambda b: sample_decoding.decode_sample(
            b, list(fanouts), width, dtype, pad=pad, labels=True, ids=True, unpack=unpack
        ),
        autograph=False,
    )
    outputs = fn.get_concrete_function(tf.TensorSpec([None], tf.string)).structured_outputs
    return {k: v.shape.as_list() for k, v in outputs.items()}


@pytest.mark.parametrize("decoder", DECODERS)
def test_base64_text_and_features_from_elsewhere(unpackers, decoder):
    """What sample_dataset asks for: base64url text, and ids without features (a feature cache)."""
    g = random_graph(7, 3)
    fanouts = [2, 2]
    [dense] = g.call("tf_features.sample", [0, 1], fanouts, [], {"seed": 1})
    [compact] = g.call("tf_features.sample", [0, 1], fanouts, [], {"seed": 1, "layout": "compact"})
    kw = dict(features=False, ids=True, unpack=unpackers[decoder], encoding="base64")
    want = sample_decoding.decode_sample(tf.constant(dense["blob"]), fanouts, 0, **kw)
    got = sample_decoding.decode_sample(
        tf.constant(compact["blob"]), fanouts, 0, layout_name="compact", **kw
    )
    assert_same(got, want)
    assert layout.features_name(0) not in got
    with pytest.raises(ValueError, match=r"features, ids: expected at least one of them true"):
        sample_decoding.decode_sample(
            tf.constant(compact["blob"]), fanouts, 0, layout_name="compact", features=False
        )


def _compact(index_1, table_rows=2) -> bytes:
    return blob.pack(
        {
            "index_0": np.array([0], np.int32),
            "index_1": np.array([index_1], np.int32),
            "table_ids": blob.Ragged(np.arange(table_rows, dtype=np.int64), [0, table_rows]),
            "table": blob.Ragged(
                np.arange(3 * table_rows, dtype=np.float32).reshape(table_rows, 3), [0, table_rows]
            ),
        }
    )


def _sparse(columns, splits, values) -> bytes:
    return blob.pack(
        {
            "index_0": np.array([0], np.int32),
            "index_1": np.array([[1, -1]], np.int32),
            "table_ids": blob.Ragged(
                np.arange(len(splits) - 1, dtype=np.int64), [0, len(splits) - 1]
            ),
            "table_columns": blob.Ragged(np.array(columns, np.int32), splits),
            "table_values": blob.Ragged(np.array(values, np.float32), [0, len(values)]),
        }
    )


BAD = [
    (
        "compact",
        _compact([2, -1]),
        r"blob 1 section index_1: expected table rows -1\.\.u-1 \(u = 2\), got 2",
    ),
    (
        "compact",
        _compact([1, -2]),
        r"blob 1 section index_1: expected table rows -1\.\.u-1 \(u = 2\), got -2",
    ),
    (
        "sparse",
        _sparse([0, 3], [0, 1, 2], [1.0, 2.0]),
        r"blob 1 section table_columns: expected columns in 0\.\.d-1 \(d = 3\), "
        r"got 3 in table row 1",
    ),
    (
        "sparse",
        _sparse([0, 2, 1], [0, 1, 3], [1.0, 2.0, 3.0]),
        r"blob 1 section table_columns: expected columns increasing within a row \(d = 3\), got 1 "
        r"in table row 1",
    ),
    (
        "sparse",
        _sparse([0, 2, 2], [0, 1, 3], [1.0, 2.0, 3.0]),
        r"blob 1 section table_columns: expected columns increasing within a row \(d = 3\), got 2 "
        r"in table row 1",
    ),
    (
        "sparse",
        _sparse([0, 1], [0, 1, 2], [1.0]),
        r"blob 1 section table_values: expected as many values as table_columns has columns, "
        r"2, got 1",
    ),
]


@functools.cache
def _malformed_decoder(layout_name: str, unpack, graph: bool):
    """The decoder of the malformed-blob cases: eager, or one ``tf.function`` per layout and
    decoder, traced on its first call and shared by every case of that layout."""

    def decode(b):
        return sample_decoding.decode_sample(b, [2], 3, layout_name=layout_name, unpack=unpack)

    return tf.function(decode, autograph=False) if graph else decode


@pytest.mark.parametrize("decoder", DECODERS)
@pytest.mark.parametrize("graph", [False, True], ids=["eager", "tf.function"])
@pytest.mark.parametrize("layout_name, bad, message", BAD)
def test_malformed_layouts_are_rejected_naming_blob_and_section(
    unpackers, decoder, graph, layout_name, bad, message
):
    good = (
        _compact([1, -1])
        if layout_name == "compact"
        else _sparse([0, 1, 2], [0, 1, 3], [1.0, 2.0, 3.0])
    )
    fn = _malformed_decoder(layout_name, unpackers[decoder], graph)
    out = fn(tf.constant([good, good]))  # the good blob decodes
    assert out[layout.features_name(1)].shape == (2, 1, 2, 3)
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"memgraph_tf layout: " + message):
        fn(tf.constant([good, bad]))


def _densified(rows) -> np.ndarray:
    return (tf.sparse.to_dense(rows) if isinstance(rows, tf.SparseTensor) else rows).numpy()


@pytest.mark.parametrize("layout_name", ["compact", "sparse"])
@pytest.mark.parametrize("graph_seed, width, fanouts, options", CASES)
def test_rows_and_indices_gather_to_the_dense_features(
    unpackers, layout_name, graph_seed, width, fanouts, options
):
    """decode_sample_rows (what a GraphSAGE bundle reads): its rows gathered by its indices are
    decode_sample's features bitwise; a row is shared only by blobs that agree about the node:
    blobs of another graph with the same node ids but other features keep their own rows."""
    ours, theirs = random_graph(graph_seed, width), random_graph(graph_seed + 100, width)
    seeds = list(range(min(4, ours.node_count, theirs.node_count)))
    opts = {"seed": graph_seed, **options, "layout": layout_name}
    pad = opts.get("low_degree", "pad") == "pad"
    dtype = opts.get("dtype", "float32")
    blobs = tf.concat(
        [sample(ours, seeds, fanouts, opts, True), sample(theirs, seeds, fanouts, opts, True)], 0
    )
    unpack = unpackers["op"]  # (the decoders' equality is tested above; the op traces cheaply)
    want = sample_decoding.decode_sample(
        blobs, fanouts, width, dtype, layout_name=layout_name, pad=pad, unpack=unpack
    )
    got = sample_decoding.decode_sample_rows(
        blobs, fanouts, width, dtype, layout_name=layout_name, pad=pad, unpack=unpack
    )
    rows = _densified(got.rows)
    assert rows.dtype == np.dtype(dtype) and not rows[-1].any()  # the zero row, last
    for h in range(len(fanouts) + 1):
        features = rows[got.index[h].numpy()]
        assert features.tobytes() == want[layout.features_name(h)].numpy().tobytes(), h
        if pad and h:
            assert got.masks[h].numpy().tobytes() == want[layout.mask_name(h)].numpy().tobytes()
        else:
            assert got.masks[h] is None
    # blobs that agree (one graph): one row per node; with the other graph's, whose rows differ,
    # more (the bitwise features above show that no row was merged into one that differs)
    n = len(seeds)
    ids = [blob.unpack(b)[layout.TABLE_IDS].values for b in blobs.numpy()]
    alone = sample_decoding.decode_sample_rows(
        blobs[:n], fanouts, width, dtype, layout_name=layout_name, pad=pad, unpack=unpack
    )
    assert len(_densified(alone.rows)) - 1 == len(set(np.concatenate(ids[:n]).tolist()))
    total = sum(len(i) for i in ids)
    assert len(set(np.concatenate(ids).tolist())) <= len(rows) - 1 <= total


@pytest.mark.parametrize("layout_name, bad, message", BAD)
def test_rows_are_refused_like_the_dense_features(unpackers, layout_name, bad, message):
    good = (
        _compact([1, -1])
        if layout_name == "compact"
        else _sparse([0, 1, 2], [0, 1, 3], [1.0, 2.0, 3.0])
    )
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"memgraph_tf layout: " + message):
        sample_decoding.decode_sample_rows(
            tf.constant([good, bad]), [2], 3, layout_name=layout_name, unpack=unpackers["op"]
        )
    with pytest.raises(ValueError, match=r"layout_name: expected 'compact' or 'sparse'"):
        sample_decoding.decode_sample_rows(tf.constant([good]), [2], 3, layout_name="dense")


@pytest.mark.parametrize("decoder", DECODERS)
def test_a_blob_of_another_layout_gets_the_decoder_s_message(unpackers, decoder):
    with pytest.raises(
        tf.errors.InvalidArgumentError,
        match=r"blob 0: section 'table_columns': expected a section named 'table_columns', "
        r"got none",
    ):
        sample_decoding.decode_sample(
            tf.constant([_compact([1, -1])]),
            [2],
            3,
            layout_name="sparse",
            unpack=unpackers[decoder],
        )


@pytest.mark.parametrize("layout_name", layout.LAYOUTS)
@pytest.mark.parametrize("pad", [True, False])
def test_zero_node_blob_is_a_valid_blob_of_zeros(unpackers, layout_name, pad):
    data = sample_decoding.zero_node_blob([3, 2], 4, "float64", layout_name=layout_name, pad=pad)
    sections = layout.sample_sections([3, 2], 4, "float64", pad=pad, batch=1, layout=layout_name)
    assert [s.name for s in blob.read_table(data)] == [s.name for s in sections]
    out = sample_decoding.decode_sample(
        tf.constant([data]),
        [3, 2],
        4,
        "float64",
        layout_name=layout_name,
        pad=pad,
        ids=True,
        unpack=unpackers["portable"],
    )
    for h in range(3):
        assert not np.any(out[layout.features_name(h)].numpy())
        assert out[layout.features_name(h)].dtype == tf.float64
    if pad:
        assert not np.any(out[layout.mask_name(1)].numpy()) and not np.any(
            out[layout.mask_name(2)].numpy()
        )
        assert set(out[layout.ids_name(2)].numpy().ravel().tolist()) == {layout.PAD_ID}
    else:
        assert set(out[layout.ids_name(2)].numpy().ravel().tolist()) == {0}  # resampled from itself


def test_the_cpp_reader_reads_the_new_layouts_unchanged(reader_cli, helpers):
    """The layouts are section layouts over byte format v1: the C++ reader (not changed for them)
    gives every section, ragged pairs included, as the Python reader does."""
    g = random_graph(3, 5)
    blobs = []
    for layout_name in ("compact", "sparse"):
        [row] = g.call(
            "tf_features.sample", [0, 1], [3, 2], ["f"], {"seed": 2, "layout": layout_name}
        )
        blobs.append(blob.b64decode(row["blob"]))
    lines = helpers.run_cli(reader_cli, frames=blobs)
    for line, data in zip(lines, blobs):
        assert line["ok"] is True, line.get("error")
        table = blob.read_table(data)
        assert [(s["name"], s["dtype"], s["shape"]) for s in line["sections"]] == [
            (s.name, s.dtype, list(s.shape)) for s in table
        ]
        unpacked = blob.unpack(data)
        for s in line["sections"]:
            name = s["name"]
            if name.endswith(layout.ROW_SPLITS_SUFFIX):
                want = unpacked[name[: -len(layout.ROW_SPLITS_SUFFIX)]].row_splits
            else:
                value = unpacked[name]
                want = value.values if isinstance(value, blob.Ragged) else value
            got = np.asarray(s["values"], dtype=helpers.np_dtypes[s["dtype"]]).reshape(s["shape"])
            np.testing.assert_array_equal(got, want, err_msg=name)
