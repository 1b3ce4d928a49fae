"""ServingClient: JSON encoding rules, retries (503/504 and connection errors only), typed
errors."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from memgraph_tf import errors
from memgraph_tf.serving.client import ServingClient, encode_example, encode_value
from memgraph_tf.testing.arcadedb import free_port


class ScriptedServer:
    """A tiny real HTTP server answering POSTs from a script of (status, json body), counting
    them."""

    def __init__(self, script):
        self.script = list(script)
        self.requests = []
        self.times = []  # time.monotonic() of each request's arrival
        self.peers = []  # the client's (host, port) of each request: one per TCP connection
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _answer(self):
                outer.times.append(time.monotonic())
                outer.peers.append(self.client_address)
                n = int(self.headers.get("Content-Length") or 0)
                outer.requests.append((self.command, self.path, self.rfile.read(n)))
                status, payload = outer.script[min(len(outer.requests), len(outer.script)) - 1]
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_POST = _answer  # noqa: N815 -- http.server's handler method names
            do_GET = _answer  # noqa: N815 -- http.server's handler method names

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


OK = (200, {"results": [[["a", 0.25], ["b", 0.75]]]})


@pytest.mark.parametrize("status", [503, 504])
def test_retry_after_503_and_504(status):
    with ScriptedServer([(status, {"error": "busy"}), OK]) as srv:
        with ServingClient(srv.url, "m", retries=2, backoff_s=0.2) as c:
            assert c.classify([b"blob"]) == [[("a", 0.25), ("b", 0.75)]]
    assert len(srv.requests) == 2
    assert srv.requests[0][2] == srv.requests[1][2]  # the same body was sent again
    assert srv.times[1] - srv.times[0] >= 0.2  # after backoff_s, not at once


@pytest.mark.parametrize(
    "status, err_type",
    [(400, errors.BadRequestError), (404, errors.NotFoundError), (500, errors.InternalServerError)],
)
def test_no_retry_after_400_404_500(status, err_type):
    with ScriptedServer([(status, {"error": "Feature: blob bad"}), OK]) as srv:
        with ServingClient(srv.url, "m", retries=3, backoff_s=0.01) as c:
            with pytest.raises(err_type, match=f"HTTP {status}: Feature: blob bad") as info:
                c.classify([b"blob"])
    assert len(srv.requests) == 1
    assert (info.value.status, info.value.message) == (status, "Feature: blob bad")


def test_503_until_retries_run_out_is_unavailable_error():
    with ScriptedServer([(503, {"error": "still loading"})]) as srv:
        with ServingClient(srv.url, "m", retries=2, backoff_s=0.1) as c:
            with pytest.raises(errors.UnavailableError, match="still loading") as info:
                c.status()
    assert len(srv.requests) == 3 and info.value.status == 503
    gaps = [b - a for a, b in zip(srv.times, srv.times[1:])]
    assert gaps[0] >= 0.1 and gaps[1] >= 0.2, gaps  # backoff_s, then doubled


def test_connection_refused_is_retried_with_backoff_then_typed():
    port = free_port()
    with ServingClient(f"http://127.0.0.1:{port}", "m", retries=3, backoff_s=0.1) as c:
        t0 = time.monotonic()
        with pytest.raises(
            errors.ServingConnectionError, match="cannot reach the server after 3 retries"
        ):
            c.status()
        waited = time.monotonic() - t0
    assert waited >= 0.1 + 0.2 + 0.4  # three retries, each after its backoff


def test_one_pooled_connection_is_reused():
    with ScriptedServer([OK]) as srv:
        with ServingClient(srv.url, "m") as c:
            for _ in range(4):
                c.classify([b"blob"])
            c.status()
    assert len(srv.peers) == 5 and len(set(srv.peers)) == 1, srv.peers


def test_non_json_error_body_keeps_text():
    with ScriptedServer([(500, "boom")]) as srv:
        with ServingClient(srv.url, "m", retries=0) as c:
            with pytest.raises(errors.InternalServerError, match="boom") as info:
                c.status()
    assert info.value.status == 500


def test_request_layout():
    with ScriptedServer([OK]) as srv:
        with ServingClient(srv.url, "GraphSage", version=3) as c:
            c.classify([b"\x00\xffMGTF"], context={"k": 1})
    method, path, body = srv.requests[0]
    assert (method, path) == ("POST", "/v1/models/GraphSage/versions/3:classify")
    assert json.loads(body) == {
        "signature_name": "classify",
        "context": {"k": 1},
        "examples": [{"blob": {"b64": "AP9NR1RG"}}],
    }


def test_encoding_follows_tf_serving_json_rules():
    assert encode_value(b"\x00\x01") == '{"b64":"AAE="}'
    assert encode_value(1.0) == "1.0"  # a float keeps its decimal point
    assert encode_value(3) == "3" and encode_value(True) == "true"
    assert encode_value([1, 2.5]) == "[1.0,2.5]"  # a list with a float is all floats
    assert encode_value(np.array([1, 2], np.float32)) == "[1.0,2.0]"
    assert encode_value(np.array([[1, 2]], np.int64)) == "[[1,2]]"
    assert encode_value(float("nan")) == "NaN" and encode_value(float("-inf")) == "-Infinity"
    assert encode_value("é") == '"\\u00e9"'
    assert json.loads(encode_example({"x": np.float32(0.5), "s": "a"})) == {"x": 0.5, "s": "a"}
    with pytest.raises(TypeError, match="examples: expected each example to be a blob"):
        encode_example(42)
    with pytest.raises(TypeError, match="got a mapping with keys"):
        encode_value({"nested": 1})


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (
            {"base_url": "localhost:8501"},
            "base_url: expected an http:// or https:// URL, got 'localhost:8501'",
        ),
        ({"model": "a/b"}, "model: expected a model name without '/' or ':', got 'a/b'"),
        ({"version": 1, "label": "stable"}, "expected at most one of them"),
        ({"version": True}, "version: expected a non-negative int or None, got True"),
        (
            {"label": "a/b"},
            "label: expected a version label without '/', ':', '\\?' or '#', or None, got 'a/b'",
        ),
        ({"timeout_s": 0}, "timeout_s: expected a number > 0, got 0"),
        ({"timeout_s": "5"}, "timeout_s: expected a number > 0, got '5'"),
        ({"retries": -1}, "retries: expected an int >= 0, got -1"),
        ({"retries": True}, "retries: expected an int >= 0, got True"),
        ({"backoff_s": -0.5}, "backoff_s: expected a number >= 0, got -0.5"),
        ({"max_request_bytes": 10}, "max_request_bytes: expected an int >= 64, got 10"),
        ({"max_request_bytes": True}, "max_request_bytes: expected an int >= 64, got True"),
    ],
)
def test_argument_errors_name_the_parameter(kwargs, match):
    args = {"base_url": "http://127.0.0.1:1", "model": "m", **kwargs}
    with pytest.raises(ValueError, match=match):
        ServingClient(**args)


def test_predict_needs_exactly_one_format():
    with ServingClient("http://127.0.0.1:1", "m") as c:
        with pytest.raises(
            ValueError, match="instances / inputs: expected exactly one of them, got neither"
        ):
            c.predict()
