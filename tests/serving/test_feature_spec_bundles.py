"""A typed model trained with an inferred feature spec keeps its encoders (vocabularies,
statistics, embedding tables) in the bundle: the bundle samples the raw property columns by
node_id (``options.feature_spec`` in its config) and answers exactly as the in-process model,
an unseen category included (an OOV bucket, never an error), over REST, gRPC and batch inference."""

from __future__ import annotations

import datetime
import functools

import numpy as np
import pytest
import requests
import tensorflow as tf

from memgraph_tf import blob
from memgraph_tf.serving import bundle
from tests.serving.bundle_kit import (
    assert_batch_writes_classes,
    classified_over_rest,
    model_inputs,
    predicted_by_node_id,
)
from tests.serving.grpc_kit import node_id_request

NN = {"(:Person)-[:KNOWS]->(:Person)": [3]}
OPTIONS = {"id_property": "id"}
PEOPLE = 300
UNSEEN = PEOPLE  # the id of a person added after training, with values no vocabulary holds
IDS = [0, 7, 42, 299, UNSEEN]


@functools.cache
def trained():
    """``(graph, source, spec, TrainResult)``: the planted property graph (300 persons), the
    spec inferred from it, a short training run, then one person with unseen values added."""
    from memgraph_tf.client.feature_specs import infer_feature_spec
    from memgraph_tf.client.sources import EmbeddedSource
    from memgraph_tf.client.typed_graphsage import train_typed_graphsage
    from memgraph_tf.property_datasets import planted_property_graph, property_embedded_graph

    graph = planted_property_graph(PEOPLE, seed=4)
    embedded, ids = property_embedded_graph(graph)
    source = EmbeddedSource(embedded)
    spec = infer_feature_spec(
        source, "Person", properties=["city", "tags", "joined", "plan", "score", "visits"]
    )
    result = train_typed_graphsage(
        source,
        "Person",
        NN,
        {},
        options=OPTIONS,
        feature_spec={"Person": spec},
        steps=8,
        batch_size=64,
        eval_every=4,
        hidden_units=8,
        embedding_dim=4,
        class_names=["north", "south", "west"],
        seed=0,
    )
    new = embedded.add_node(
        ["Person"],
        {
            "id": UNSEEN,
            "city": "Atlantis",
            "tags": ["unheard", "music"],
            "plan": "enterprise",
            "joined": datetime.date(2031, 5, 1),
            "score": 0.5,
            "visits": 2,
        },
    )
    embedded.add_edge(new, ids[0], "KNOWS")
    return graph, source, spec, result


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    from memgraph_tf.serving.export import export_bundle

    base = tmp_path_factory.mktemp("spec-bundles")
    return export_bundle(trained()[3].model, base, "people", 1, use_op=True, sample_options=OPTIONS)


def in_process(ids: list[int], source=None) -> np.ndarray:
    """The trained model's probabilities on one sample_typed blob of ``ids`` (inference seed)
    sampled from ``source`` (default: the graph it was trained on)."""
    _, trained_source, spec, result = trained()
    source = trained_source if source is None else source
    model = result.model
    opts = {
        **OPTIONS,
        "label": "Person",
        "seed": bundle.DEFAULT_SEED,
        "feature_spec": {"Person": spec.to_dict()},
    }
    sections = blob.unpack(source.sample_typed(ids, NN, {}, opts))
    inputs = model_inputs(sections, model.input_names())
    return tf.nn.softmax(model(inputs, training=False)).numpy()


def test_the_bundle_holds_the_encoders_and_answers_as_in_process(exported):
    from memgraph_tf import ops
    from memgraph_tf.serving.export import decode_with_bags

    _, source, spec, result = trained()
    config = bundle.read_bundle_config(exported.path)
    assert config.options["feature_spec"] == {"Person": spec.to_dict()}
    assert config.typed["properties"] == {}
    assert "cat_h0_Person" in config.sections and "bag_h1_Person.row_splits" in config.sections
    assert not any(name.startswith("features_") for name in config.sections)
    # each node's blob (cut out of one call) is what sample_typed writes for it alone
    blobs, scores = predicted_by_node_id(exported.path, source, IDS, check=2)
    expected = in_process(IDS)
    np.testing.assert_allclose(scores, expected, rtol=1e-5, atol=1e-6)
    # the unseen person is scored (OOV buckets), not refused
    assert np.isfinite(expected[-1]).all() and abs(expected[-1].sum() - 1) < 1e-5
    # the op-free decoder through the bundle's decoding step: the same model inputs, scores
    inputs = decode_with_bags(tf.constant(blobs), ops.unpack_blob_portable, config.sections)
    portable = tf.nn.softmax(result.model(inputs, training=False)).numpy()
    np.testing.assert_allclose(portable, expected, rtol=1e-5, atol=1e-6)


def test_served_by_node_id_equals_in_process(exported):
    import grpc
    from tensorflow_serving.apis import prediction_service_pb2_grpc

    from memgraph_tf.serving.grpc_server import start_grpc_server
    from memgraph_tf.serving.model_server import ModelServer
    from memgraph_tf.serving.server import start_server

    _, source, _, _ = trained()
    names = bundle.read_bundle_config(exported.path).class_names
    expected = in_process(IDS)
    ms = ModelServer(exported.path.parent, graph_source=source, warmup=True)
    try:
        with start_server(ms) as rest, start_grpc_server(ms) as rpc:
            r = requests.post(
                f"{rest.url}/v1/models/people:classify",
                json={"examples": [{"node_id": i} for i in IDS]},
                timeout=60,
            )
            req = node_id_request("people", IDS)
            with grpc.insecure_channel(rpc.target) as channel:
                stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
                rows = stub.Classify(req, timeout=60).result.classifications
    finally:
        ms.close()
    assert r.status_code == 200, r.text
    got = np.array([[dict(row)[n] for n in names] for row in r.json()["results"]])
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    got = np.array([[{c.label: c.score for c in row.classes}[n] for n in names] for row in rows])
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def test_batch_inference_writes_the_in_process_classes(exported):
    _, source, _, result = trained()
    assert_batch_writes_classes(
        source,
        exported.path,
        "spec_class",
        label="Person",
        nodes=PEOPLE + 1,
        ids=IDS,
        probs=in_process(IDS),
        class_names=result.model.class_names,
    )


def test_a_compact_bundle_reads_raw_tables_and_answers_as_in_process(tmp_path):
    """The bundle samples each node's raw columns once per distinct node (raw tables,
    docs/blob-format.md section 11, rule 7), expands them in the graph and answers by node id
    over REST exactly as the in-process model, the unseen person included. (A sparse bundle of
    this model reads the same bytes: no feature table to put in CSR.)"""
    layout_name = "compact"
    from memgraph_tf.serving.export import export_bundle

    _, source, _, result = trained()
    info = export_bundle(
        result.model, tmp_path, "people", 1, use_op=True, sample_options=OPTIONS, layout=layout_name
    )
    config = bundle.read_bundle_config(info.path)
    assert config.options["layout"] == layout_name
    assert "table_cat_Person" in config.sections and "cat_h0_Person" not in config.sections
    got = classified_over_rest(info.path, source, "people", IDS)
    np.testing.assert_allclose(got, in_process(IDS), rtol=1e-5, atol=1e-6)
