"""A classifier trained on a label without features (no structural call of the user's: the
trainer writes the default FastRP property and reads it through a numeric feature spec) exports a
bundle that serves by ``node_id`` over REST exactly as in-process, a node added after training --
without the property -- included."""

from __future__ import annotations

import functools

import numpy as np
import requests
import tensorflow as tf

from memgraph_tf import blob
from memgraph_tf.client.structural import STRUCTURAL_PROPERTY
from memgraph_tf.serving import bundle
from tests.client.test_structural_default import BASE, NN, OPTIONS, N, communities
from tests.graphs import short_run

NEW = BASE + N  # the id of an item added after training
IDS = [BASE, BASE + 1, BASE + 57, NEW]


@functools.cache
def trained():
    """``(graph, source, TrainResult)``: the featureless items' classifier (their group), then a
    new item linked to three items of group 0."""
    from memgraph_tf.client import EmbeddedSource
    from memgraph_tf.client.typed_graphsage import train_typed_graphsage

    g, *_ = communities(held_out=0.0)
    source = EmbeddedSource(g)
    result = train_typed_graphsage(
        source,
        "Item",
        NN,
        {},
        train_ids=np.arange(BASE, BASE + N, 2),
        val_ids=np.arange(BASE + 1, BASE + N, 2),
        options=OPTIONS,
        class_names=["g0", "g1", "g2", "g3"],
        **short_run(steps=10, eval_every=5),
    )
    new = g.add_node(["Item"], {"id": NEW, "label": 0})
    for friend in (0, 4, 8):
        g.add_edge(new, friend, "LINK", {"split": "train"})
    return g, source, result


def in_process(ids: list[int]) -> np.ndarray:
    """The trained model's probabilities on one ``sample_typed`` blob of ``ids`` (the bundle's
    inference seed and feature spec)."""
    _, source, result = trained()
    model = result.model
    spec = model.get_config()["feature_spec"]
    opts = {**OPTIONS, "label": "Item", "seed": bundle.DEFAULT_SEED, "feature_spec": spec}
    sections = blob.unpack(source.sample_typed(ids, NN, {}, opts))
    inputs = {k: sections[k] for k in model.input_names()}
    return tf.nn.softmax(model(inputs, training=False)).numpy()


def test_a_featureless_label_serves_by_node_id_without_a_manual_call(tmp_path):
    from memgraph_tf.serving.export import export_bundle
    from memgraph_tf.serving.model_server import ModelServer
    from memgraph_tf.serving.server import start_server

    g, source, result = trained()
    assert g.get_property(NEW - BASE, STRUCTURAL_PROPERTY) is None
    exported = export_bundle(
        result.model, tmp_path, "items", 1, use_op=True, sample_options=OPTIONS
    )
    config = bundle.read_bundle_config(exported.path)
    assert config.options["feature_spec"]["Item"]["properties"][0]["name"] == STRUCTURAL_PROPERTY
    expected = in_process(IDS)
    assert np.isfinite(expected).all() and np.allclose(expected.sum(axis=1), 1, atol=1e-5)
    ms = ModelServer(exported.path.parent, graph_source=source, warmup=True)
    try:
        with start_server(ms) as rest:
            r = requests.post(
                f"{rest.url}/v1/models/items:classify",
                json={"examples": [{"node_id": i} for i in IDS]},
                timeout=60,
            )
    finally:
        ms.close()
    assert r.status_code == 200, r.text
    names = config.class_names
    got = np.array([[dict(row)[n] for n in names] for row in r.json()["results"]])
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
