"""A typed sample blob (tf_features.sample_typed) decodes, unchanged, through the C++ op and the
op-free decoder into exactly the typed model's inputs (memgraph_tf.layout.typed_sample_sections
gives the names, dtypes and shapes; the model, TypedGraphSAGE, reads them)."""

from __future__ import annotations

import base64

import numpy as np
import pytest

from memgraph_tf import blob, layout
from memgraph_tf.client import EmbeddedSource
from memgraph_tf.typed_datasets import shop_graph, typed_embedded_graph
from memgraph_tf.typed_sampling import TypedSamplingSpec

tf = pytest.importorskip("tensorflow")

NN = {
    "(:User)-[:BOUGHT]->(:Product)": [4, 0],
    "(:User)-[:FOLLOWS]->(:User)": [2, 2],
    "(:Product)-[:IN]->(:Category)": [0, 1],
}
PROPS = {"User": ["features"], "Product": ["features"], "Category": ["features"]}


@pytest.fixture(scope="module")
def typed_blobs():
    graph = shop_graph(120, num_products=40, num_categories=4, num_classes=2, follows_per_user=2)
    embedded, _ = typed_embedded_graph(graph)
    source = EmbeddedSource(embedded)
    opts = {"label": "User", "id_property": "id", "seed": 5, "label_property": "label"}
    blobs = [source.sample_typed(seeds, NN, PROPS, opts) for seeds in ([0, 1, 2], [3, 4, 5])]
    spec = TypedSamplingSpec.from_num_neighbors("User", NN)
    widths = {label: ns.width for label, ns in graph.node_sets.items()}
    return graph, spec, widths, blobs


@pytest.mark.parametrize("decoder", ["op", "portable"])
def test_both_decoders_give_the_model_inputs(typed_blobs, decoder):
    from memgraph_tf.client.typed_graphsage import TypedGraphSAGE
    from memgraph_tf.ops import unpack_blob
    from memgraph_tf.ops.portable import unpack_blob_portable

    graph, spec, widths, blobs = typed_blobs
    sections = layout.typed_sample_sections(spec, widths, labels=True, batch=None)
    names = [s.name for s in sections]
    dtypes = [s.dtype for s in sections]
    decode = unpack_blob if decoder == "op" else unpack_blob_portable
    model = TypedGraphSAGE("User", NN, widths, graph.num_classes, hidden_units=4, dropout=0.0)
    assert set(model.input_names()) <= set(names)  # every model input is a section
    for raw in blobs[:1]:
        expected = blob.unpack(raw)
        assert list(expected) == names
        text = base64.urlsafe_b64encode(raw).decode().rstrip("=")
        # the op-free decoder's encodings are covered section-generically in
        # test_sample_decoding.py; here
        # the typed sections once (base64, the form blobs leave Memgraph in) keep the test short
        forms = ((raw, "raw"), (text, "base64")) if decoder == "op" else ((text, "base64"),)
        for data, encoding in forms:
            outs = decode(
                data, names, dtypes, shapes=[s.shape for s in sections], encoding=encoding
            )
            decoded = dict(zip(names, outs))
            for name in names:
                np.testing.assert_array_equal(decoded[name].numpy(), expected[name], err_msg=name)
            inputs = {k: decoded[k] for k in model.input_names()}
            logits = model(inputs)
            assert tuple(logits.shape) == (3, graph.num_classes)
    # a vector of blobs: one more leading dimension, blob by blob
    outs = decode(tf.constant(blobs), names, dtypes)
    for name, value in zip(names, outs):
        stacked = np.stack([blob.unpack(raw)[name] for raw in blobs])
        np.testing.assert_array_equal(value.numpy(), stacked, err_msg=name)
