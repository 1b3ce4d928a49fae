"""The node-id gateway (``memgraph-tf serve --graph URI --upstream HOST:PORT``) answers the embed
signature by ``node_id`` as ``memgraph-tf serve --graph`` does -- the same body over REST, the
same response over gRPC -- and both say what a ``node_id`` answer reflects exactly as the model
server does (memgraph_tf.serving.freshness): the REST headers and the gRPC trailing metadata,
the model version being the upstream version the request was pinned to. The upstream is
``memgraph-tf serve``'s gRPC server (TF Serving's gRPC API over real sockets) on the session's
op bundle with an ``embed`` signature; it also answers node ids itself, to compare with."""

from __future__ import annotations

import contextlib
import datetime
import time

import grpc
import numpy as np
import pytest
import requests
from tensorflow_serving.apis import predict_pb2, prediction_service_pb2_grpc

from memgraph_tf.serving import freshness, grpc_codec
from tests.graphs import KeyedGraph, node_id

GRAPH = KeyedGraph("GatewayEmbed")
NODES = [node_id(i) for i in (0, 5, 17, 42)]


@pytest.fixture(scope="module")
def stack(small_sage_bundle):
    """The upstream (model server with the graph: REST for comparison, gRPC as the upstream) and
    the gateway (REST + gRPC) in front of it over the same graph."""
    from memgraph_tf.serving.gateway import UpstreamServer
    from memgraph_tf.serving.grpc_server import start_grpc_server
    from memgraph_tf.serving.model_server import ModelServer
    from memgraph_tf.serving.server import start_server

    path = GRAPH.bundle(small_sage_bundle, "sage", 1, use_op=True)
    source = GRAPH.embedded_source()
    running = []
    try:
        local = ModelServer(path, graph_source=source, warmup=False)
        running += [start_server(local), start_grpc_server(local)]
        gateway = UpstreamServer(running[1].target, source, timeout_s=20)
        running += [start_server(gateway), start_grpc_server(gateway)]
        yield type(
            "Stack",
            (),
            {
                "local_rest": running[0].url,
                "local_grpc": running[1].target,
                "gw_rest": running[2].url,
                "gw_grpc": running[3].target,
            },
        )
    finally:
        for r in running:
            r.close()
        source.close()


def _moment(text: str) -> float:
    assert text.endswith("Z") and len(text) == len("2026-11-28T23:45:01.123456Z"), text
    parsed = datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ")
    return parsed.replace(tzinfo=datetime.UTC).timestamp()


def _embed_rest(url: str, body: dict) -> requests.Response:
    return requests.post(f"{url}/v1/models/sage:predict", json=body, timeout=60)


def _embed_grpc(target: str, node_ids: list[int], signature: str = "embed"):
    req = predict_pb2.PredictRequest()
    req.model_spec.name = "sage"
    req.model_spec.signature_name = signature
    grpc_codec.array_to_tensor(np.asarray(node_ids, dtype=np.int64), req.inputs["node_id"])
    with grpc.insecure_channel(target) as channel:
        stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
        return stub.Predict.with_call(req, timeout=60)


@pytest.mark.parametrize(
    "body",
    [
        {"signature_name": "embed", "instances": [{"node_id": n} for n in NODES]},
        {"signature_name": "embed", "inputs": {"node_id": NODES}},
    ],
    ids=["rows", "columns"],
)
def test_rest_embed_by_node_id_answers_as_the_model_server(stack, body):
    local = _embed_rest(stack.local_rest, body)
    before = time.time()
    via = _embed_rest(stack.gw_rest, body)
    after = time.time()
    assert local.status_code == via.status_code == 200, (local.text, via.text)
    assert list(via.json()) == list(local.json())  # the same shape: predictions / outputs
    key = next(iter(local.json()))
    want = np.asarray(local.json()[key])
    assert want.shape[0] == len(NODES) and want.ndim == 2
    np.testing.assert_allclose(np.asarray(via.json()[key]), want, rtol=1e-5, atol=1e-6)
    assert via.headers[freshness.MODEL_VERSION_HEADER] == "1"
    assert local.headers[freshness.MODEL_VERSION_HEADER] == "1"
    assert before - 1e-6 <= _moment(via.headers[freshness.GRAPH_TIME_HEADER]) <= after


def test_grpc_embed_by_node_id_answers_as_the_model_server(stack):
    local, local_call = _embed_grpc(stack.local_grpc, NODES)
    before = time.time()
    via, call = _embed_grpc(stack.gw_grpc, NODES)
    after = time.time()
    assert set(via.outputs) == set(local.outputs) and via.model_spec == local.model_spec
    for key, tensor in local.outputs.items():
        want = grpc_codec.tensor_to_array(tensor, key, 1 << 30)
        got = grpc_codec.tensor_to_array(via.outputs[key], key, 1 << 30)
        assert got.shape == want.shape == (len(NODES), want.shape[1])
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    trailing = dict(call.trailing_metadata())
    assert trailing[freshness.MODEL_VERSION_KEY] == "1"
    assert dict(local_call.trailing_metadata())[freshness.MODEL_VERSION_KEY] == "1"
    assert before - 1e-6 <= _moment(trailing[freshness.GRAPH_TIME_KEY]) <= after


def test_classify_by_node_id_through_the_gateway_carries_the_version(stack):
    r = requests.post(
        f"{stack.gw_rest}/v1/models/sage:classify",
        json={"examples": [{"node_id": n} for n in NODES]},
        timeout=60,
    )
    assert r.status_code == 200, r.text
    assert r.headers[freshness.MODEL_VERSION_HEADER] == "1"
    assert freshness.GRAPH_TIME_HEADER in r.headers


def test_bad_node_ids_through_the_gateway_are_refused_as_by_the_model_server(stack):
    body = {"signature_name": "embed", "inputs": {"node_id": [NODES[0], 99999]}}
    local = _embed_rest(stack.local_rest, body)
    via = _embed_rest(stack.gw_rest, body)
    assert local.status_code == via.status_code == 400
    assert via.json() == local.json() and "99999" in via.json()["error"]
    assert freshness.MODEL_VERSION_HEADER not in via.headers
    with pytest.raises(grpc.RpcError) as caught:
        _embed_grpc(stack.gw_grpc, [NODES[0], 99999])
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "node_id[1]" in caught.value.details() and "99999" in caught.value.details()


def test_the_serving_clients_embed_through_the_gateway(stack):
    from memgraph_tf.serving.client import ServingClient
    from memgraph_tf.serving.grpc_client import GrpcServingClient

    want = ServingClient(stack.local_rest, "sage").embed(NODES)
    assert np.asarray(want).shape[0] == len(NODES)
    np.testing.assert_allclose(
        ServingClient(stack.gw_rest, "sage").embed(NODES), want, rtol=1e-5, atol=1e-6
    )
    np.testing.assert_allclose(
        GrpcServingClient(stack.gw_grpc, "sage").embed(NODES), want, rtol=1e-5, atol=1e-6
    )


def test_a_link_bundles_roles_embed_by_node_id_through_the_gateway(tmp_path):
    """``embed_source`` / ``embed_target`` of a link bundle (each role sampled with its own
    settings) by ``node_id`` through the gateway: the model server's vectors and headers."""
    from memgraph_tf.serving.client import ServingClient
    from memgraph_tf.serving.export_links import export_link_bundle
    from memgraph_tf.serving.gateway import UpstreamServer
    from memgraph_tf.serving.grpc_server import start_grpc_server
    from memgraph_tf.serving.model_server import ModelServer
    from memgraph_tf.serving.server import start_server
    from tests.client import links_kit as kit

    options = {**kit.OPTIONS, "seed": kit.SEED}
    export_link_bundle(
        kit.model(), tmp_path, "links", 2, decoder="op", sample_options=options, warmup=False
    )
    ids = [-200, -151, 297]
    source, _, _ = kit.embedded_graph()
    with (
        contextlib.closing(
            ModelServer(tmp_path / "links", graph_source=source, warmup=False)
        ) as local,
        start_server(local) as rest,
        start_grpc_server(local) as rpc,
        contextlib.closing(UpstreamServer(rpc.target, source, timeout_s=20)) as gateway,
        start_server(gateway) as gw_rest,
    ):
        for role in ("source", "target"):
            body = {"signature_name": f"embed_{role}", "inputs": {"node_id": ids}}
            want = requests.post(f"{rest.url}/v1/models/links:predict", json=body, timeout=60)
            via = requests.post(f"{gw_rest.url}/v1/models/links:predict", json=body, timeout=60)
            assert want.status_code == via.status_code == 200, (want.text, via.text)
            np.testing.assert_allclose(
                via.json()["outputs"], want.json()["outputs"], rtol=1e-5, atol=1e-6
            )
            assert via.headers[freshness.MODEL_VERSION_HEADER] == "2"
            got = ServingClient(gw_rest.url, "links").embed(ids, signature_name=f"embed_{role}")
            np.testing.assert_allclose(got, want.json()["outputs"], rtol=1e-5, atol=1e-6)
