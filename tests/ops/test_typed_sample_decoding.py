"""Compact and sparse typed sample blobs (tf_features.sample_typed / sample_pairs with
options.layout) decoded by the C++ op and the op-free decoder and expanded in the graph by
memgraph_tf.ops.sample_decoding.decode_typed_sample give exactly the dense blob's tensors for the
same
seed; a malformed table is rejected naming the blob and the typed section; a blob of n seeds cut
per seed is what each seed sampled alone gives."""

from __future__ import annotations

import numpy as np
import pytest

from memgraph_tf import blob, layout
from memgraph_tf.client import EmbeddedSource
from memgraph_tf.ops import sample_decoding
from memgraph_tf.typed_datasets import shop_graph, typed_embedded_graph
from memgraph_tf.typed_sampling import TypedSamplingSpec

tf = pytest.importorskip("tensorflow")

NN = {
    "(:User)-[:BOUGHT]->(:Product)": [4, 0],
    "(:User)-[:FOLLOWS]->(:User)": [2, 2],
    "(:Product)-[:IN]->(:Category)": [0, 1],
}
# Category without features: its table is its ids alone
PROPS = {"User": ["features"], "Product": ["features"]}
OPTS = {"label": "User", "id_property": "id", "seed": 5, "label_property": "label"}
SEEDS = ([0, 1, 2], [3, 4, 1])


@pytest.fixture(scope="module")
def shop():
    graph = shop_graph(120, num_products=40, num_categories=4, num_classes=2, follows_per_user=2)
    embedded, _ = typed_embedded_graph(graph)
    spec = TypedSamplingSpec.from_num_neighbors("User", NN)
    widths = {label: graph.node_sets[label].width for label in PROPS}
    return EmbeddedSource(embedded), spec, widths


def _blobs(source, layout_name: str, opts: dict = OPTS) -> list[bytes]:
    return [source.sample_typed(s, NN, PROPS, {**opts, "layout": layout_name}) for s in SEEDS]


@pytest.mark.parametrize("decoder", ["op", "portable"])
def test_compact_and_sparse_decode_to_the_dense_tensors(ops, shop, decoder):
    source, spec, widths = shop
    unpack = ops.unpack_blob if decoder == "op" else ops.unpack_blob_portable
    dense = [blob.unpack(b) for b in _blobs(source, "dense")]
    for layout_name in ("compact", "sparse"):
        raw = _blobs(source, layout_name)
        assert raw[0] != _blobs(source, "dense")[0]
        got = sample_decoding.decode_typed_sample(
            tf.constant(raw), spec, widths, layout_name=layout_name, ids=True, labels=True,
            unpack=unpack,
        )  # fmt: skip
        assert sorted(got) == sorted(dense[0])  # ids, features, masks, labels
        for name, value in got.items():
            want = np.stack([d[name] for d in dense])
            assert value.dtype == tf.as_dtype(want.dtype), name
            assert value.numpy().tobytes() == want.tobytes(), (layout_name, name)  # bitwise
        # one blob (a scalar), base64 as it leaves Memgraph, the model's inputs only
        text = blob.b64encode(raw[1])
        one = sample_decoding.decode_typed_sample(
            text, spec, widths, layout_name=layout_name, unpack=unpack, encoding="base64"
        )
        assert not any(name.startswith("ids_") for name in one) and "labels" not in one
        for name, value in one.items():
            np.testing.assert_array_equal(value.numpy(), dense[1][name], err_msg=name)
            if name.startswith("features_"):
                assert value.shape[-1] == widths[name.split("_", 2)[2]]  # static width


def test_pair_blob_halves_decode_to_the_dense_halves(ops, shop):
    source, _, widths = shop
    pair_nn = {"(:User)-[:BOUGHT]->(:Product)": [3, 2], "(:Product)<-[:BOUGHT]-(:User)": [2, 2]}
    opts = {"source_label": "User", "target_label": "Product", "id_property": "id", "seed": 2}
    users, products = [0, 1, 7], [3, 9, 9]
    dense = blob.unpack(source.sample_pairs(users, products, pair_nn, PROPS, opts))
    raw = source.sample_pairs(users, products, pair_nn, PROPS, {**opts, "layout": "sparse"})
    sections = blob.unpack(raw)
    assert "src.table_columns_Product" in sections and "dst.table_ids_User" in sections
    assert sections[layout.PAIR_LABELS].tolist() == dense[layout.PAIR_LABELS].tolist()
    for prefix, label in (
        (layout.PAIR_SOURCE_PREFIX, "User"),
        (layout.PAIR_TARGET_PREFIX, "Product"),
    ):
        spec = TypedSamplingSpec.from_num_neighbors(label, pair_nn)
        got = sample_decoding.decode_typed_sample(
            raw, spec, widths, layout_name="sparse", ids=True, prefix=prefix,
            unpack=ops.unpack_blob,
        )  # fmt: skip
        assert sorted(prefix + n for n in got) == sorted(n for n in dense if n.startswith(prefix))
        for name, value in got.items():
            assert value.numpy().tobytes() == dense[prefix + name].tobytes(), prefix + name


def test_a_row_outside_the_table_is_rejected_naming_blob_and_section(ops, shop):
    source, spec, widths = shop
    raw = _blobs(source, "compact")
    sections = blob.unpack(raw[1])
    index = sections["index_h1_Product"].copy()
    u = len(sections["table_ids_Product"].values)
    index[0, 1] = u
    bad = blob.pack({**sections, "index_h1_Product": index})
    with pytest.raises(
        tf.errors.InvalidArgumentError,
        match=rf"memgraph_tf layout: blob 1 section index_h1_Product: expected table rows "
        rf"-1..u-1 \(u = {u}\), got {u}",
    ):
        sample_decoding.decode_typed_sample(
            tf.constant([raw[0], bad]), spec, widths, layout_name="compact", unpack=ops.unpack_blob
        )


def test_a_blob_of_many_seeds_cut_per_seed_is_each_seed_sampled_alone(shop):
    source, spec, _ = shop
    seeds = [0, 1, 2, 7, 1]
    opts = {k: v for k, v in OPTS.items() if k != "label_property"}
    for layout_name in layout.LAYOUTS:
        o = {**opts, "layout": layout_name}
        cut = sample_decoding.split_typed_blob(
            source.sample_typed(seeds, NN, PROPS, o), len(seeds), spec, layout_name
        )
        assert cut == [source.sample_typed([s], NN, PROPS, o) for s in seeds], layout_name
    with pytest.raises(ValueError, match=r"section 'index_h0_User' has \(5,\) rows, expected 4"):
        sample_decoding.split_typed_blob(
            source.sample_typed(seeds, NN, PROPS, o), 4, spec, "sparse"
        )
