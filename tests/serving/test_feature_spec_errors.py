"""A node whose property holds a value of the wrong type for the bundle's feature spec (a string
where the spec declares a number) is the client's fault: served by node_id it is a 400 over REST
(TF Serving's ``{"error": "..."}`` body) and INVALID_ARGUMENT over gRPC, from ``memgraph-tf
serve`` and from the gateway in front of it, the message naming the node and the property --
never a 5xx. The other nodes of the graph keep being served."""

from __future__ import annotations

import datetime

import grpc
import pytest
import requests

from tests.serving.grpc_kit import node_id_request
from tests.serving.test_feature_spec_bundles import OPTIONS, trained

BAD_ID = 501  # a Person whose 'score' (numeric in the spec) holds a string


@pytest.fixture(scope="module")
def bad_node():
    """The shared property graph with one extra Person holding ``score: 'high'``; the node
    loses its label afterwards, so the other modules' runs over all persons never see it."""
    embedded = trained()[1].graph
    node = embedded.add_node(
        ["Person"],
        {
            "id": BAD_ID,
            "city": "Oslo",
            "tags": ["music"],
            "plan": "basic",
            "joined": datetime.date(2020, 1, 1),
            "score": "high",
            "visits": 2,
        },
    )
    try:
        yield node
    finally:
        embedded.remove_label(node, "Person")


@pytest.fixture(scope="module")
def servers(bad_node, tmp_path_factory):
    """``(local REST url, local gRPC target, gateway REST url, gateway gRPC target)``: one
    op bundle served by ``ModelServer`` and an ``UpstreamServer`` gateway in front of it."""
    from memgraph_tf.serving.export import export_bundle
    from memgraph_tf.serving.gateway import UpstreamServer
    from memgraph_tf.serving.grpc_server import start_grpc_server
    from memgraph_tf.serving.model_server import ModelServer
    from memgraph_tf.serving.server import start_server

    base = tmp_path_factory.mktemp("spec-errors")
    exported = export_bundle(
        trained()[3].model, base, "people", 1, use_op=True, sample_options=OPTIONS
    )
    source = trained()[1]
    ms = ModelServer(exported.path.parent, graph_source=source, warmup=False)
    try:
        with start_server(ms) as rest, start_grpc_server(ms) as rpc:
            gateway = UpstreamServer(rpc.target, source, timeout_s=30)
            try:
                with start_server(gateway) as gw_rest, start_grpc_server(gateway) as gw_rpc:
                    yield rest.url, rpc.target, gw_rest.url, gw_rpc.target
            finally:
                gateway.close()
    finally:
        ms.close()


def _rest(url: str, ids: list[int]) -> requests.Response:
    return requests.post(
        f"{url}/v1/models/people:classify",
        json={"examples": [{"node_id": i} for i in ids]},
        timeout=60,
    )


def _grpc(target: str, ids: list[int]):
    from tensorflow_serving.apis import prediction_service_pb2_grpc

    req = node_id_request("people", ids)
    with grpc.insecure_channel(target) as channel:
        stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
        return stub.Classify(req, timeout=60)


def _names_node_and_property(message: str) -> None:
    assert f"id = {BAD_ID}" in message, message
    assert "property 'score'" in message and "expected a number" in message, message
    assert "str 'high'" in message, message


@pytest.mark.parametrize("front", ["local", "gateway"])
def test_a_wrong_type_is_400_over_rest_naming_node_and_property(servers, front):
    url = servers[0] if front == "local" else servers[2]
    r = _rest(url, [0, BAD_ID])
    assert r.status_code == 400, r.text
    body = r.json()
    assert list(body) == ["error"]
    _names_node_and_property(body["error"])
    # the well-typed nodes are still served
    assert _rest(url, [0, 7]).status_code == 200


@pytest.mark.parametrize("front", ["local", "gateway"])
def test_a_wrong_type_is_invalid_argument_over_grpc_naming_node_and_property(servers, front):
    target = servers[1] if front == "local" else servers[3]
    with pytest.raises(grpc.RpcError) as info:
        _grpc(target, [BAD_ID, 0])
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT, info.value.details()
    _names_node_and_property(info.value.details())
    assert len(_grpc(target, [0, 7]).result.classifications) == 2
