"""Served ``node_id`` answers say which model version and which moment of the graph they reflect
(memgraph_tf.serving.freshness): REST response headers, gRPC trailing metadata; TF Serving's
bodies and protos are unchanged, and answers that read no graph (blob examples) carry neither."""

from __future__ import annotations

import base64
import datetime
import time

import grpc
import pytest
import requests
from tensorflow_serving.apis import classification_pb2, prediction_service_pb2_grpc

from memgraph_tf.serving import freshness
from memgraph_tf.serving.grpc_server import start_grpc_server


class TableSource:
    """A graph source answering blobs by node id from a table."""

    def __init__(self, table):
        self.table = table

    def sample_blobs_per_node(self, ids, fanouts, properties, options):
        return [self.table[i] for i in ids]


@pytest.fixture(scope="module")
def servers(sage_op_bundle, sage):
    from memgraph_tf.serving.model_server import ModelServer
    from memgraph_tf.serving.server import start_server

    blobs, _ = sage.blobs(3, seed=4)
    ms = ModelServer(
        sage_op_bundle.path, graph_source=TableSource(dict(enumerate(blobs, 100))), warmup=False
    )
    with start_server(ms) as rest, start_grpc_server(ms) as rpc:
        rpc.rest, rpc.blobs = rest, blobs
        yield rpc


def _moment(text: str) -> float:
    assert text.endswith("Z") and len(text) == len("2026-11-28T23:45:01.123456Z"), text
    parsed = datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ")
    return parsed.replace(tzinfo=datetime.UTC).timestamp()


def test_rest_node_id_answers_carry_the_version_and_the_graphs_moment(servers):
    before = time.time()
    r = requests.post(
        f"{servers.rest.url}/v1/models/sage:classify",
        json={"examples": [{"node_id": 100}, {"node_id": 102}]},
        timeout=60,
    )
    after = time.time()
    assert r.status_code == 200, r.text
    assert list(r.json()) == ["results"]  # TF Serving's body, nothing added
    assert r.headers[freshness.MODEL_VERSION_HEADER] == "1"
    assert before - 1e-6 <= _moment(r.headers[freshness.GRAPH_TIME_HEADER]) <= after
    # blobs read no graph: no moment to report
    blob = {"blob": {"b64": base64.b64encode(servers.blobs[0]).decode()}}
    r = requests.post(
        f"{servers.rest.url}/v1/models/sage:classify", json={"examples": [blob]}, timeout=60
    )
    assert r.status_code == 200, r.text
    assert freshness.GRAPH_TIME_HEADER not in r.headers
    assert freshness.MODEL_VERSION_HEADER not in r.headers


def test_grpc_node_id_answers_carry_them_as_trailing_metadata(servers):
    req = classification_pb2.ClassificationRequest()
    req.model_spec.name = "sage"
    req.input.example_list.examples.add().features.feature["node_id"].int64_list.value.append(101)
    with grpc.insecure_channel(servers.target) as channel:
        stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
        before = time.time()
        response, call = stub.Classify.with_call(req, timeout=60)
        after = time.time()
    assert response.model_spec.version.value == 1
    assert len(response.result.classifications) == 1
    trailing = dict(call.trailing_metadata())
    assert trailing[freshness.MODEL_VERSION_KEY] == "1"
    assert before - 1e-6 <= _moment(trailing[freshness.GRAPH_TIME_KEY]) <= after


def test_the_moment_is_rfc3339_utc_with_microseconds():
    assert freshness.graph_time_text(0.25) == "1970-01-01T00:00:00.250000Z"
    record = freshness.Freshness()
    assert record.headers() == [] and record.metadata() == ()
