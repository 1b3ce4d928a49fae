"""The node-id gateway (``memgraph-tf serve --graph URI --upstream HOST:PORT``, issue 27) in
front of ``memgraph-tf serve``'s gRPC server as the upstream (TF Serving's gRPC API, real sockets),
which loads the models.config that ``export_bundle`` wrote and also answers node ids itself (the
bundle loaded locally): node ids over REST and gRPC give the local server's scores; errors keep
the upstream's codes and messages; an upstream that is down is 503 / UNAVAILABLE at once, one
that never answers is cut off at the deadline. With ``MEMGRAPH_TF_TEST_SERVING_URL`` (a real TF
Serving's gRPC ``host:port`` serving ``MEMGRAPH_TF_TEST_SERVING_MODEL``, default ``GraphSage``,
trained on Cora) node ids through the gateway are checked against blobs sent to it."""

from __future__ import annotations

import os
import threading
import time

import grpc
import numpy as np
import pytest
import requests

NODES = [1, 5, 42, 399]


def _graph_source():
    """The packaged synthetic graph (400 nodes, running the unchanged query modules in process)
    with 4-wide features, the width of the session's ``sage_op_bundle``."""
    import dataclasses

    from memgraph_tf.client.sources import EmbeddedSource
    from memgraph_tf.datasets import planetoid_graph, synthetic

    data = synthetic()
    return EmbeddedSource(
        planetoid_graph(dataclasses.replace(data, features=data.features[:, :4].copy()))
    )


@pytest.fixture(scope="module")
def stack(tmp_path_factory, sage_op_bundle):
    """The session's op bundle behind a models.config as ``export_bundle`` wrote it (its
    base_path pointed at the bundle), the graph, the upstream and local server (REST + gRPC) and
    the gateway (REST + gRPC). The gateway forwards node ids and blobs and compares with the
    local server's answers from the same bundle: what it checks does not depend on the bundle's
    decoder, and an op-free bundle's first call of each signature costs seconds."""
    from memgraph_tf.serving.gateway import UpstreamServer
    from memgraph_tf.serving.grpc_server import start_grpc_server
    from memgraph_tf.serving.model_server import ModelServer
    from memgraph_tf.serving.server import start_server

    written = (sage_op_bundle.path.parent / "models.config").read_text()
    assert 'base_path: "/models/sage"' in written  # export_bundle's serving_base_path default
    config = tmp_path_factory.mktemp("gateway") / "models.config"
    config.write_text(written.replace('"/models/sage"', f'"{sage_op_bundle.path}"'))
    source = _graph_source()
    running = []
    try:
        # the upstream, and the local server to compare with: node_id examples need its graph
        local = ModelServer(model_config=config, graph_source=source, warmup=False)
        running += [start_server(local), start_grpc_server(local)]
        gateway = UpstreamServer(running[1].target, source, timeout_s=20)
        running += [start_server(gateway), start_grpc_server(gateway)]
        yield type(
            "Stack",
            (),
            {
                "bundle": sage_op_bundle.path,
                "source": source,
                "upstream_target": running[1].target,
                "local_rest": running[0].url,
                "local_grpc": running[1].target,
                "gw_rest": running[2].url,
                "gw_grpc": running[3].target,
                "gateway": gateway,
            },
        )
    finally:
        for r in running:
            r.close()
        source.close()


def _classify_rest(url: str, examples: list, model: str = "sage", **extra) -> requests.Response:
    return requests.post(
        f"{url}/v1/models/{model}:classify", json={"examples": examples, **extra}, timeout=60
    )


def _classify_grpc(target: str, node_ids: list[int], model: str = "sage", timeout_s=30):
    from tensorflow_serving.apis import classification_pb2, prediction_service_pb2_grpc

    req = classification_pb2.ClassificationRequest()
    req.model_spec.name = model
    for n in node_ids:
        ex = req.input.example_list.examples.add()
        ex.features.feature["node_id"].int64_list.value.append(n)
    with grpc.insecure_channel(target) as channel:
        stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
        return stub.Classify(req, timeout=timeout_s)


def _scores(results) -> np.ndarray:
    return np.array([[s for _, s in row] for row in results], dtype=np.float32)


def test_node_ids_over_rest_give_the_local_servers_scores(stack, sage):
    examples = [{"node_id": n} for n in NODES]
    local = _classify_rest(stack.local_rest, examples)
    via = _classify_rest(stack.gw_rest, examples)
    assert local.status_code == via.status_code == 200, (local.text, via.text)
    assert [[c for c, _ in row] for row in via.json()["results"]] == [sage.classes] * len(NODES)
    np.testing.assert_allclose(
        _scores(via.json()["results"]), _scores(local.json()["results"]), atol=1e-6, rtol=0
    )


def test_node_ids_over_grpc_give_the_local_servers_scores(stack):
    local = _classify_grpc(stack.local_grpc, NODES)
    via = _classify_grpc(stack.gw_grpc, NODES)
    assert via.model_spec.name == "sage" and via.model_spec.version.value == 1
    got = [[(c.label, c.score) for c in row.classes] for row in via.result.classifications]
    want = [[(c.label, c.score) for c in row.classes] for row in local.result.classifications]
    assert got == want  # float32 scores through gRPC both ways: bit for bit


def test_blobs_pass_through_unchanged(stack, sage_op_bundle):
    import base64

    blobs = stack.source.sample_blobs_per_node(
        NODES[:2], [3, 2], ["features"], sage_op_bundle.options
    )
    examples = [{"blob": {"b64": base64.b64encode(b).decode()}} for b in blobs]
    by_blob = _classify_rest(stack.gw_rest, examples, signature_name="classify")
    by_id = _classify_rest(stack.gw_rest, [{"node_id": n} for n in NODES[:2]])
    assert by_blob.status_code == 200, by_blob.text
    assert by_blob.json() == by_id.json()


def test_an_unknown_node_is_refused_naming_it(stack):
    local = _classify_rest(stack.local_rest, [{"node_id": 1}, {"node_id": 10**9}])
    via = _classify_rest(stack.gw_rest, [{"node_id": 1}, {"node_id": 10**9}])
    assert via.status_code == local.status_code == 400
    assert via.json() == local.json()
    assert "unknown node id 1000000000" in via.json()["error"]
    with pytest.raises(grpc.RpcError) as info:
        _classify_grpc(stack.gw_grpc, [10**9])
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "unknown node id 1000000000" in info.value.details()


def test_upstream_errors_keep_their_code_and_message(stack):
    local = _classify_rest(stack.local_rest, [{"node_id": 1}], model="nope")
    via = _classify_rest(stack.gw_rest, [{"node_id": 1}], model="nope")
    assert via.status_code == local.status_code == 404
    assert via.json() == local.json() == {"error": "Servable not found for request: Latest(nope)"}
    with pytest.raises(grpc.RpcError) as info:
        _classify_grpc(stack.gw_grpc, [1], model="nope")
    assert info.value.code() == grpc.StatusCode.NOT_FOUND
    assert info.value.details() == "Servable not found for request: Latest(nope)"
    for path in ("/v1/models/sage", "/v1/models/sage/metadata", "/v1/models/sage/versions/9"):
        a = requests.get(stack.local_rest + path, timeout=30)
        b = requests.get(stack.gw_rest + path, timeout=30)
        assert (a.status_code, a.json()) == (b.status_code, b.json()), path


def test_an_upstream_that_is_down_is_503_at_once(stack):
    from memgraph_tf.serving.gateway import UpstreamServer
    from memgraph_tf.serving.grpc_server import start_grpc_server
    from memgraph_tf.serving.server import start_server
    from memgraph_tf.testing.arcadedb import free_port

    down = UpstreamServer(f"127.0.0.1:{free_port()}", stack.source, timeout_s=20)
    with start_server(down) as rest, start_grpc_server(down) as grpc_srv:
        start = time.monotonic()
        r = _classify_rest(rest.url, [{"node_id": 1}])
        assert r.status_code == 503, r.text
        with pytest.raises(grpc.RpcError) as info:
            _classify_grpc(grpc_srv.target, [1])
        assert info.value.code() == grpc.StatusCode.UNAVAILABLE
        assert time.monotonic() - start < 5  # connection refused: no wait for the 20 s timeout
    down.close()


def test_an_upstream_that_never_answers_is_cut_off_at_the_deadline(stack):
    """An upstream (a real gRPC server with TF Serving's service) that holds every call: the
    incoming gRPC call's own deadline bounds the upstream call, whose end the upstream sees
    (deadline and cancellation propagate); REST is bounded by ``timeout_s``."""
    from concurrent import futures

    from tensorflow_serving.apis import prediction_service_pb2_grpc

    from memgraph_tf.serving.gateway import UpstreamServer
    from memgraph_tf.serving.grpc_server import start_grpc_server
    from memgraph_tf.serving.server import start_server

    ended: list[float] = []
    release = threading.Event()

    class Silent(prediction_service_pb2_grpc.PredictionServiceServicer):
        def GetModelMetadata(self, request, context):  # noqa: N802 -- the generated name
            done = threading.Event()
            context.add_callback(done.set)  # called when the call ends, however it ends
            done.wait(10) or release.wait(10)
            ended.append(time.monotonic())
            context.abort(grpc.StatusCode.INTERNAL, "held")

    upstream = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    prediction_service_pb2_grpc.add_PredictionServiceServicer_to_server(Silent(), upstream)
    port = upstream.add_insecure_port("127.0.0.1:0")
    upstream.start()
    gw = UpstreamServer(f"127.0.0.1:{port}", stack.source, timeout_s=1.5)
    try:
        with start_server(gw) as rest, start_grpc_server(gw) as grpc_srv:
            start = time.monotonic()
            with pytest.raises(grpc.RpcError) as info:
                _classify_grpc(grpc_srv.target, [1], timeout_s=0.8)
            assert info.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
            assert time.monotonic() - start < 1.4  # the client's 0.8 s, not the gateway's 1.5 s
            deadline = time.monotonic() + 5
            while not ended and time.monotonic() < deadline:
                time.sleep(0.05)
            assert ended and ended[0] - start < 1.4  # the upstream call ended with the client's
            start = time.monotonic()
            r = _classify_rest(rest.url, [{"node_id": 1}])
            assert r.status_code == 504, r.text
            assert r.json() == {"error": "Deadline Exceeded"}
            assert 1.4 < time.monotonic() - start < 4
    finally:
        release.set()
        gw.close()
        upstream.stop(0)


def test_bundle_path_gives_the_sampling_settings_without_asking_the_upstream(stack):
    from memgraph_tf.serving.gateway import UpstreamServer
    from memgraph_tf.serving.server import start_server

    gw = UpstreamServer(stack.upstream_target, stack.source, bundle_path=str(stack.bundle))
    with start_server(gw) as rest:
        r = _classify_rest(rest.url, [{"node_id": n} for n in NODES])
        calls = gw.upstream_calls
    gw.close()
    assert r.json() == _classify_rest(stack.gw_rest, [{"node_id": n} for n in NODES]).json()
    assert calls == 2  # GetModelMetadata and Classify; no memgraph_tf_config Predict


@pytest.mark.skipif(
    not os.environ.get("MEMGRAPH_TF_TEST_SERVING_URL"),
    reason="MEMGRAPH_TF_TEST_SERVING_URL (a real TF Serving's gRPC host:port, serving a Cora "
    "bundle as MEMGRAPH_TF_TEST_SERVING_MODEL) is not set",
)
def test_against_a_real_tf_serving(planetoid_dir):
    """Node ids through the gateway give what the blobs sent straight to TF Serving give."""
    import base64

    from memgraph_tf.client import open_graph
    from memgraph_tf.serving.gateway import UpstreamServer
    from memgraph_tf.serving.server import start_server

    target = os.environ["MEMGRAPH_TF_TEST_SERVING_URL"].removeprefix("grpc://")
    name = os.environ.get("MEMGRAPH_TF_TEST_SERVING_MODEL", "GraphSage")
    source = open_graph(f"embedded:{planetoid_dir / 'cora'}")
    gw = UpstreamServer(target, source)
    try:
        with start_server(gw) as rest:
            mv = gw.resolve(name, None, None)
            spec = mv.sampling
            fanouts, properties, options = spec.arguments()
            blobs = source.sample_blobs_per_node([0, 7], fanouts, properties, options)
            by_id = _classify_rest(rest.url, [{"node_id": 0}, {"node_id": 7}], model=name)
            by_blob = _classify_rest(
                rest.url,
                [
                    {mv.bundle_config.blob_feature_key: {"b64": base64.b64encode(b).decode()}}
                    for b in blobs
                ],
                model=name,
                signature_name="classify",
            )
            assert by_id.status_code == 200, by_id.text
            assert by_id.json() == by_blob.json()
            missing = _classify_rest(rest.url, [{"node_id": 10**9}], model=name)
            assert missing.status_code == 400 and "1000000000" in missing.json()["error"]
    finally:
        gw.close()
        source.close()
