"""A typed model trained with edge features (``edge_feature_spec``: the relationship properties
beside each sampled slot, docs/blob-format.md section 12) keeps its edge encoder in the bundle:
the bundle samples the relationship properties by node_id (``options.edge_feature_spec`` in its
config) and answers over REST and in batch inference exactly as the in-process model; its
signature reads the edge sections."""

from __future__ import annotations

import functools

import numpy as np
import pytest
import requests
import tensorflow as tf

from memgraph_tf import blob
from memgraph_tf.feature_spec import LabelSpec
from memgraph_tf.serving import bundle
from memgraph_tf.serving.neighbourhoods import fetch_blobs
from memgraph_tf.typed_datasets import TRANSFER_STEP, transfer_graph, transfer_spec

NN = {TRANSFER_STEP: [4]}
OPTIONS = {"id_property": "id"}
IDS = [0, 5, 17, 199]


@functools.cache
def trained():
    """``(source, TrainResult)``: a short training run on a small transfer graph."""
    from memgraph_tf.client.sources import EmbeddedSource
    from memgraph_tf.client.typed_graphsage import train_typed_graphsage

    source = EmbeddedSource(transfer_graph(200, seed=3))
    result = train_typed_graphsage(
        source,
        "Account",
        NN,
        {"Account": ["features"]},
        options=OPTIONS,
        edge_feature_spec={TRANSFER_STEP: transfer_spec()},
        steps=6,
        batch_size=64,
        eval_every=3,
        hidden_units=8,
        embedding_dim=4,
        class_names=["honest", "fraud"],
        seed=0,
    )
    return source, result


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    from memgraph_tf.serving.export import export_bundle

    base = tmp_path_factory.mktemp("edge-bundles")
    return export_bundle(
        trained()[1].model, base, "accounts", 1, use_op=True, sample_options=OPTIONS
    )


def in_process(ids: list[int]) -> np.ndarray:
    """The trained model's probabilities on one sample_typed blob of ``ids`` (inference seed)."""
    source, result = trained()
    model = result.model
    opts = {
        **OPTIONS,
        "label": "Account",
        "seed": bundle.DEFAULT_SEED,
        "edge_feature_spec": {TRANSFER_STEP: transfer_spec()},
    }
    sections = blob.unpack(source.sample_typed(ids, NN, {"Account": ["features"]}, opts))
    inputs = {
        name: tf.constant(value.tolist(), tf.string) if value.dtype == object else value
        for name, value in sections.items()
    }
    inputs = {k: inputs[k] for k in model.input_names()}
    assert "edge_cat_h1_s0" in inputs and "edge_has_h1_s0" in inputs
    return tf.nn.softmax(model(inputs, training=False)).numpy()


def test_the_bundle_samples_the_relationship_properties_and_answers_as_in_process(exported):
    from memgraph_tf import ops

    source, result = trained()
    config = bundle.read_bundle_config(exported.path)
    spec = LabelSpec.from_dict(transfer_spec()).to_dict()
    assert config.options["edge_feature_spec"] == {TRANSFER_STEP: spec}
    assert {"edge_num_h1_s0", "edge_cat_h1_s0", "edge_has_h1_s0"} <= set(config.sections)
    sampling = bundle.inference_sampling(config)
    blobs = fetch_blobs(source, IDS, sampling)
    nn, props, opts = sampling.typed_arguments()
    assert blobs[1] == source.sample_typed([IDS[1]], nn, props, opts)
    ops.load_library()
    loaded = tf.saved_model.load(str(exported.path))
    scores = loaded.signatures[bundle.PREDICT_SIGNATURE](blobs=tf.constant(blobs))["scores"]
    np.testing.assert_allclose(scores.numpy(), in_process(IDS), rtol=1e-5, atol=1e-6)
    rebuilt = type(result.model).from_config(result.model.get_config())
    assert rebuilt.edge_encoders.keys() == result.model.edge_encoders.keys()


def test_served_by_node_id_over_rest_equals_in_process(exported):
    from memgraph_tf.serving.model_server import ModelServer
    from memgraph_tf.serving.server import start_server

    source, _ = trained()
    names = bundle.read_bundle_config(exported.path).class_names
    ms = ModelServer(exported.path.parent, graph_source=source, warmup=True)
    try:
        with start_server(ms) as rest:
            r = requests.post(
                f"{rest.url}/v1/models/accounts:classify",
                json={"examples": [{"node_id": i} for i in IDS]},
                timeout=60,
            )
    finally:
        ms.close()
    assert r.status_code == 200, r.text
    got = np.array([[dict(row)[n] for n in names] for row in r.json()["results"]])
    np.testing.assert_allclose(got, in_process(IDS), rtol=1e-5, atol=1e-6)


def test_batch_inference_writes_the_in_process_classes(exported):
    from memgraph_tf.batch import BundleBackend, classify_graph
    from memgraph_tf.client.node_tables import property_names

    source, result = trained()
    prop = "edge_class"
    cls, score, _ = property_names(prop)
    with BundleBackend(exported.path) as backend:
        run = classify_graph(source, backend, write_property=prop, batch_size=64, progress=False)
    assert (run.classified, run.failed) == (200, 0)
    probs = in_process(IDS)
    graph = source.graph
    by_key = {graph.get_property(n, "id"): n for n in graph.nodes("Account")}
    for row, key in zip(probs, IDS):
        node = by_key[key]
        assert graph.get_property(node, cls) == result.model.class_names[int(row.argmax())]
        np.testing.assert_allclose(graph.get_property(node, score), row.max(), rtol=1e-5)


def test_a_model_whose_steps_the_config_would_reorder_is_refused(tmp_path):
    """The bundle config keeps num_neighbors sorted by pattern (its JSON) and the edge sections
    are named by step index: a model listing its steps otherwise would read another step's
    sections, so the export refuses it."""
    from memgraph_tf.client.typed_graphsage import TypedGraphSAGE
    from memgraph_tf.errors import BundleError
    from memgraph_tf.serving.export import export_bundle

    back = "(:Account)<-[:TRANSFER]-(:Account)"
    assert back > TRANSFER_STEP  # so {back, TRANSFER_STEP} is out of sorted order
    model = TypedGraphSAGE(
        "Account",
        {back: [2], TRANSFER_STEP: [2]},
        {"Account": 2},
        2,
        hidden_units=4,
        class_names=["honest", "fraud"],
        edge_feature_spec={TRANSFER_STEP: transfer_spec()},
    ).ensure_built()
    model.properties = {"Account": ["features"]}
    with pytest.raises(BundleError, match=r"model: the steps .* are not in sorted order"):
        export_bundle(model, tmp_path, "accounts", 1, use_op=True, sample_options=OPTIONS)
