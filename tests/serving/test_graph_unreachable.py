"""A served ``node_id`` request while the graph cannot be reached answers 503 (REST) / UNAVAILABLE
(gRPC) within the source's connect timeout, for a closed port (the connection is refused) and for
a port that accepts TCP but never speaks Bolt.

The bound rests on the neo4j driver's settings (``neo4j/_conf.py``, ``WorkspaceConfig``):
``connection_timeout`` bounds the TCP connect, ``connection_acquisition_timeout`` the wait for a
connection -- the Bolt handshake included (``neo4j/_async_compat/network/_bolt_socket.py``: the
handshake reads until the acquisition deadline) -- and ``max_transaction_retry_time`` = 0 keeps
the managed transaction from being retried (``neo4j/_sync/work/session.py``,
``_run_transaction``: it retries only while less than that time has passed since the first
failure; a reachable server's transient failures are then retried by a second call,
tests/client/test_connect_timeout.py).
"""

from __future__ import annotations

import socket
import threading
import time

import grpc
import pytest
import requests
from tensorflow_serving.apis import classification_pb2, prediction_service_pb2_grpc

from memgraph_tf.client.sources import ENV_CONNECT_TIMEOUT, connect

SLACK_S = 3.0  # the acceptance bound: the connect timeout plus this


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def silent_port():
    """A port that accepts TCP connections and never sends a byte (a hung server, or a proxy
    whose backend is gone)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    accepted: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                accepted.append(listener.accept()[0])
            except OSError:  # the listener was closed
                return

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        listener.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept()
        listener.close()
        thread.join(timeout=5)
        for conn in accepted:
            conn.close()


def _served_node_id(sage_op_bundle, source) -> tuple[float, requests.Response, float, tuple]:
    """(seconds, response) of a REST ``node_id`` classify and (seconds, (code, details)) of the
    gRPC one, from one server over ``source``."""
    from memgraph_tf.serving.grpc_server import start_grpc_server
    from memgraph_tf.serving.model_server import ModelServer
    from memgraph_tf.serving.server import start_server

    ms = ModelServer(sage_op_bundle.path, graph_source=source, warmup=False)
    with start_server(ms) as rest, start_grpc_server(ms) as rpc:
        started = time.monotonic()
        response = requests.post(
            f"{rest.url}/v1/models/sage:classify",
            json={"examples": [{"node_id": 1}]},
            timeout=60,
        )
        rest_s = time.monotonic() - started
        request = classification_pb2.ClassificationRequest()
        request.model_spec.name = "sage"
        request.input.example_list.examples.add().features.feature["node_id"].int64_list.value[
            :
        ] = [1]
        with grpc.insecure_channel(rpc.target) as channel:
            stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
            started = time.monotonic()
            with pytest.raises(grpc.RpcError) as info:
                stub.Classify(request, timeout=60)
            grpc_s = time.monotonic() - started
    return rest_s, response, grpc_s, (info.value.code(), info.value.details())


def _unavailable_within(sage_op_bundle, port: int, connect_timeout_s: float) -> tuple[str, str]:
    """A node-id request served with the graph at ``bolt://127.0.0.1:PORT`` (its connect timeout
    checked to be ``connect_timeout_s``): REST answers 503 naming the URI and gRPC UNAVAILABLE,
    both within the connect timeout plus SLACK_S; (REST error, gRPC details)."""
    with connect(f"bolt://127.0.0.1:{port}", verify=False) as source:
        assert source.connect_timeout_s == connect_timeout_s
        rest_s, response, grpc_s, (code, details) = _served_node_id(sage_op_bundle, source)
    assert response.status_code == 503, response.text
    error = response.json()["error"]
    assert error.startswith(
        f"the graph is unavailable: bolt://127.0.0.1:{port}: server unavailable or connection lost"
    )
    assert code == grpc.StatusCode.UNAVAILABLE
    assert rest_s < connect_timeout_s + SLACK_S
    assert grpc_s < connect_timeout_s + SLACK_S
    return error, details


def test_a_refused_connection_is_503_at_once(sage_op_bundle, monkeypatch):
    monkeypatch.delenv(ENV_CONNECT_TIMEOUT, raising=False)
    # 5 s: the default
    error, details = _unavailable_within(sage_op_bundle, _closed_port(), 5.0)
    assert "Connection refused" in error
    assert details == error


def test_a_server_that_never_answers_is_503_within_the_connect_timeout(
    sage_op_bundle, silent_port, monkeypatch
):
    monkeypatch.setenv(ENV_CONNECT_TIMEOUT, "1.5")
    # 1.5 s: from MEMGRAPH_TF_CONNECT_TIMEOUT_S
    _, details = _unavailable_within(sage_op_bundle, silent_port, 1.5)
    assert details.startswith("the graph is unavailable: ")


def test_serve_passes_its_connect_timeout_to_the_opener(monkeypatch):
    """``serve --graph URI --graph-connect-timeout-s S``: the graph is opened with that timeout;
    without the flag, with None (the opener reads MEMGRAPH_TF_CONNECT_TIMEOUT_S, else 5 s)."""
    from memgraph_tf import cli
    from memgraph_tf.client import sources
    from memgraph_tf.serving import server

    opened = []
    monkeypatch.setattr(sources, "open_graph", lambda uri, **kw: opened.append((uri, kw)))
    monkeypatch.setattr(server, "main", lambda args, graph_source=None: 0)
    parser = cli.build_parser()
    args = parser.parse_args(["serve", "B", "--graph", "bolt://db:7687"])
    assert args.func(args) == 0
    args = parser.parse_args(
        ["serve", "B", "--graph", "bolt://db:7687", "--graph-connect-timeout-s", "2.5"]
    )
    assert args.func(args) == 0
    assert opened == [
        ("bolt://db:7687", {"connect_timeout_s": None}),
        ("bolt://db:7687", {"connect_timeout_s": 2.5}),
    ]
