"""The node-id gateway (``memgraph-tf serve --graph URI --upstream HOST:PORT``) in
front of ``memgraph-tf serve``'s gRPC server as the upstream (TF Serving's gRPC API, real sockets),
which loads the models.config that ``export_bundle`` wrote and also answers node ids itself (the
bundle loaded locally): node ids over REST and gRPC give the local server's scores; errors keep
the upstream's codes and messages; an upstream that is down is 503 / UNAVAILABLE at once, one
that never answers is cut off at the deadline (504), and one whose reply is no valid answer
(garbage bytes, a message above the channel's limit, a response lacking what was asked) is 502 /
UNAVAILABLE, each within its bound (fake upstreams on real local sockets). With
``MEMGRAPH_TF_TEST_SERVING_URL`` (a real TF Serving's gRPC ``host:port`` serving
``MEMGRAPH_TF_TEST_SERVING_MODEL``, default ``GraphSage``, trained on Cora) node ids through the
gateway are checked against blobs sent to it."""

from __future__ import annotations

import os
import threading
import time

import grpc
import numpy as np
import pytest
import requests

from tests.serving.grpc_kit import node_id_request

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
    from tensorflow_serving.apis import prediction_service_pb2_grpc

    req = node_id_request(model, node_ids)
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


# ------------------------------------------------------------ bounded failure: fake upstreams
def _raw_upstream(reply: bytes | None):
    """A TCP server on a free local port that answers every connection with ``reply`` (then
    reads what comes until the peer closes), or, with None, accepts and never says anything.
    Returns (target, close)."""
    import socket

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    stop = threading.Event()
    held = []

    def serve():
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            held.append(conn)
            if reply is not None:
                try:
                    conn.sendall(reply)
                except OSError:
                    pass

    threading.Thread(target=serve, daemon=True).start()

    def close():
        stop.set()
        listener.close()
        for conn in held:
            conn.close()

    return f"127.0.0.1:{listener.getsockname()[1]}", close


def _grpc_upstream(answer):
    """A real gRPC server whose PredictionService methods all answer ``answer(request bytes)``
    (raw response bytes, not parsed): (target, server)."""
    from concurrent import futures

    handler = grpc.method_handlers_generic_handler(
        "tensorflow.serving.PredictionService",
        {
            m: grpc.unary_unary_rpc_method_handler(lambda req, ctx: answer(req))
            for m in ("GetModelMetadata", "Classify", "Regress", "Predict")
        },
    )
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=2), options=[("grpc.max_send_message_length", -1)]
    )
    server.add_generic_rpc_handlers((handler,))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    return f"127.0.0.1:{port}", server


def _metadata_of_bytes(size: int) -> bytes:
    """A valid GetModelMetadataResponse of about ``size`` bytes (a long model name)."""
    from tensorflow_serving.apis import get_model_metadata_pb2

    resp = get_model_metadata_pb2.GetModelMetadataResponse()
    resp.model_spec.name = "x" * size
    return resp.SerializeToString()


def _through_gateway(target: str, timeout_s: float = 20.0):
    """One REST :classify and one gRPC Classify through a gateway in front of ``target``: (REST
    response, the gRPC error, seconds the slower took)."""
    from memgraph_tf.serving.gateway import UpstreamServer
    from memgraph_tf.serving.grpc_server import start_grpc_server
    from memgraph_tf.serving.server import start_server

    gw = UpstreamServer(target, None, timeout_s=timeout_s)
    try:
        with start_server(gw) as rest, start_grpc_server(gw) as grpc_srv:
            start = time.monotonic()
            r = _classify_rest(rest.url, [{"x": 1}])
            rest_s = time.monotonic() - start
            start = time.monotonic()
            with pytest.raises(grpc.RpcError) as info:
                _classify_grpc(grpc_srv.target, [1])
            return r, info.value, max(rest_s, time.monotonic() - start)
    finally:
        gw.close()


@pytest.mark.parametrize(
    "reply",
    [
        b"garbage\r\n" * 64,
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
        b"\x00" * 3 + b"\xff" * 64,
    ],
    ids=["text", "an HTTP/1.1 server", "a broken HTTP/2 frame"],
)
def test_an_upstream_that_answers_garbage_is_502_at_once(reply):
    target, close = _raw_upstream(reply)
    try:
        r, err, seconds = _through_gateway(target)
    finally:
        close()
    assert r.status_code == 502, r.text
    assert r.json()["error"].startswith(f"upstream {target}: invalid reply: ")
    assert "HTTP/2" in r.json()["error"]
    assert err.code() == grpc.StatusCode.UNAVAILABLE
    assert err.details().startswith(f"upstream {target}: invalid reply: ")
    assert seconds < 5  # no wait for the 20 s timeout


@pytest.mark.parametrize(
    ("answer", "what"),
    [
        (lambda req: b"\xff\xfe not a protobuf", "Exception deserializing response!"),
        (lambda req: b"", "GetModelMetadata: no signature_def SignatureDefMap"),
    ],
    ids=["bytes that are no response", "a response without signatures"],
)
def test_an_upstream_reply_that_is_not_a_valid_answer_is_502(answer, what):
    target, server = _grpc_upstream(answer)
    try:
        r, err, seconds = _through_gateway(target)
    finally:
        server.stop(0)
    assert r.status_code == 502, r.text
    assert r.json() == {"error": f"upstream {target}: invalid reply: {what}"}
    assert err.code() == grpc.StatusCode.UNAVAILABLE and err.details() == r.json()["error"]
    assert seconds < 5


def test_an_80_mib_upstream_reply_is_502_within_its_bound():
    """The upstream channel's receive limit (64 MiB by default) stops the reply: 502, bounded by
    the transfer of the limit, never a 429 (the status of a client's over-large request)."""
    from memgraph_tf.serving.gateway import DEFAULT_UPSTREAM_MESSAGE_BYTES

    big = _metadata_of_bytes(80 << 20)
    assert len(big) > DEFAULT_UPSTREAM_MESSAGE_BYTES
    target, server = _grpc_upstream(lambda req: big)
    try:
        r, err, seconds = _through_gateway(target)
    finally:
        server.stop(0)
    assert r.status_code == 502, r.text[:300]
    assert "Received message larger than max" in r.json()["error"]
    assert err.code() == grpc.StatusCode.UNAVAILABLE
    assert seconds < 20  # the gateway's own timeout is 20 s: the limit, not the timeout, ends it


def test_an_upstream_that_accepts_and_never_speaks_is_504_at_the_timeout():
    """A TCP peer that never completes the HTTP/2 handshake: the request's deadline
    (``timeout_s``) ends the wait, 504 over REST; a closed port is 503 at once
    (test_an_upstream_that_is_down_is_503_at_once)."""
    from memgraph_tf.serving.gateway import UpstreamServer
    from memgraph_tf.serving.server import start_server

    target, close = _raw_upstream(None)
    gw = UpstreamServer(target, None, timeout_s=1.5)
    try:
        with start_server(gw) as rest:
            start = time.monotonic()
            r = _classify_rest(rest.url, [{"x": 1}])
            seconds = time.monotonic() - start
    finally:
        gw.close()
        close()
    assert r.status_code == 504, r.text
    assert 1.4 < seconds < 5
