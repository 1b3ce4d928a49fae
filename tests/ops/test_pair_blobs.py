"""A pair blob (tf_features.sample_pairs) decodes, unchanged, through the C++ op and the op-free
decoder: memgraph_tf.layout.pair_sample_sections gives the names, dtypes and shapes, and each
endpoint's sections, with their prefix stripped, are the typed model's inputs."""

from __future__ import annotations

import base64

import numpy as np
import pytest

from memgraph_tf import blob, layout
from memgraph_tf.client import EmbeddedSource
from memgraph_tf.typed_datasets import shop_graph, typed_embedded_graph
from memgraph_tf.typed_sampling import TypedSamplingSpec

tf = pytest.importorskip("tensorflow")

NN = {"(:User)-[:BOUGHT]->(:Product)": [3, 2], "(:Product)<-[:BOUGHT]-(:User)": [2, 2]}
PROPS = {"User": ["features"], "Product": ["features"]}


@pytest.fixture(scope="module")
def pair_blobs():
    graph = shop_graph(100, num_products=40, num_categories=4, num_classes=2, follows_per_user=1)
    embedded, _ = typed_embedded_graph(graph)
    source = EmbeddedSource(embedded)
    opts = {"source_label": "User", "target_label": "Product", "id_property": "id", "seed": 2}
    bought = graph.edge_sets[("User", "BOUGHT", "Product")]
    users, products = bought.source.tolist(), bought.target.tolist()
    blobs = [
        source.sample_pairs(
            users[i : i + 2], products[i : i + 2], NN, PROPS, {**opts, "negatives": 1}
        )
        for i in (0, 10)
    ]
    specs = [TypedSamplingSpec.from_num_neighbors(label, NN) for label in ("User", "Product")]
    widths = {label: graph.node_sets[label].width for label in PROPS}
    return specs, widths, blobs


@pytest.mark.parametrize("decoder", ["op", "portable"])
def test_both_decoders_give_the_pair_sections(pair_blobs, decoder):
    from memgraph_tf.client.typed_graphsage import TypedGraphSAGE
    from memgraph_tf.ops import unpack_blob
    from memgraph_tf.ops.portable import unpack_blob_portable

    specs, widths, blobs = pair_blobs
    sections = layout.pair_sample_sections(*specs, widths, batch=None)
    names, dtypes = [s.name for s in sections], [s.dtype for s in sections]
    decode = unpack_blob if decoder == "op" else unpack_blob_portable
    raw = blobs[0]
    expected = blob.unpack(raw)
    assert list(expected) == names
    assert expected[layout.PAIR_LABELS].tolist() == [1, 1, 0, 0]
    text = base64.urlsafe_b64encode(raw).decode().rstrip("=")
    forms = ((raw, "raw"), (text, "base64")) if decoder == "op" else ((text, "base64"),)
    for data, encoding in forms:
        outs = decode(data, names, dtypes, shapes=[s.shape for s in sections], encoding=encoding)
        decoded = dict(zip(names, outs))
        for name in names:
            np.testing.assert_array_equal(decoded[name].numpy(), expected[name], err_msg=name)
    for spec, prefix in zip(specs, (layout.PAIR_SOURCE_PREFIX, layout.PAIR_TARGET_PREFIX)):
        model = TypedGraphSAGE(spec.seed_label, NN, widths, 2, hidden_units=4, dropout=0.0)
        inputs = {k: decoded[prefix + k] for k in model.input_names()}
        assert tuple(model(inputs).shape) == (4, 2)
    outs = decode(tf.constant(blobs), names, dtypes)  # a vector of blobs, blob by blob
    for name, value in zip(names, outs):
        stacked = np.stack([blob.unpack(b)[name] for b in blobs])
        np.testing.assert_array_equal(value.numpy(), stacked, err_msg=name)
