"""The local TF-Serving-compatible server over real HTTP, with SavedModels that are not ours."""

from __future__ import annotations

import json

import numpy as np
import pytest
import requests

from memgraph_tf import errors
from memgraph_tf.serving import rest_api
from memgraph_tf.serving.client import ServingClient
from tests.serving.http_kit import assert_error

X = np.array([[1.0, 2.0, 3.0], [0.5, -1.0, 2.0], [0.0, 0.0, 0.25]], np.float32)


def softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


@pytest.fixture()
def client(toy_server):
    with ServingClient(toy_server.url, "toy") as c:
        yield c


def test_classify_matches_in_process_latest_version(client, toy):
    results = client.classify([{"x": row} for row in X])
    want = softmax(toy.in_process(2, X))
    assert [[lbl for lbl, _ in r] for r in results] == [toy.labels] * len(X)
    np.testing.assert_allclose([[s for _, s in r] for r in results], want, atol=1e-5)


@pytest.mark.parametrize("how", ["version", "label"])
def test_version_and_label_select_version_1(toy_server, how, toy):
    kw = {"version": 1} if how == "version" else {"label": "stable"}
    with ServingClient(toy_server.url, "toy", **kw) as c:
        got = c.predict([row for row in X])
        status = c.status()
    np.testing.assert_allclose([p["logits"] for p in got], toy.in_process(1, X), atol=1e-5)
    assert status == {
        "model_version_status": [
            {
                "version": "1",
                "state": "AVAILABLE",
                "status": {"error_code": "OK", "error_message": ""},
            }
        ]
    }


def test_predict_row_and_columnar(client, toy):
    want = toy.in_process(2, X)
    rows = client.predict([row for row in X])
    assert [sorted(r) for r in rows] == [["label_bytes", "logits"]] * len(X)
    np.testing.assert_allclose([r["logits"] for r in rows], want, atol=1e-5)
    labels = [toy.labels[i].encode() for i in want.argmax(1)]
    # outputs named *_bytes come back as {"b64": ...} (TF Serving's rule)
    import base64

    assert [base64.b64decode(r["label_bytes"]["b64"]) for r in rows] == labels
    cols = client.predict(inputs={"x": X})
    np.testing.assert_allclose(cols["logits"], want, atol=1e-5)
    assert len(cols["label_bytes"]) == len(X)


def test_regress(client, toy):
    got = client.regress([{"x": row} for row in X], signature_name="regress")
    np.testing.assert_allclose(got, toy.in_process(2, X).sum(1), atol=1e-5)


def test_status_all_versions_and_metadata(client):
    assert [s["version"] for s in client.status()["model_version_status"]] == ["2", "1"]
    meta = client.metadata()
    assert meta["model_spec"]["name"] == "toy" and meta["model_spec"]["version"] == "2"
    sigs = meta["metadata"]["signature_def"]["signature_def"]
    assert sorted(sigs) == ["classify", "regress", "serving_default"]
    assert sigs["classify"]["inputs"]["inputs"]["dtype"] == "DT_STRING"
    assert sigs["serving_default"]["inputs"]["x"]["tensor_shape"]["dim"][1]["size"] == "3"


def test_client_splits_large_requests_and_concatenates(toy_server, toy, recorded_calls):
    many = np.tile(X, (40, 1))
    with (
        recorded_calls(rest_api, "handle_bytes", lambda ms, method, path, body: len(body)) as calls,
        ServingClient(toy_server.url, "toy", max_request_bytes=1000) as c,
    ):
        results = c.classify([{"x": row} for row in many])
        rows = c.predict([row for row in many])
        n_before = len(calls)
        cols = c.predict(inputs={"x": many})
        assert len(calls) - n_before >= 2  # the columnar request was split too
    assert len(calls) > 4 and max(calls) <= 1000
    np.testing.assert_allclose(
        [[s for _, s in r] for r in results], softmax(toy.in_process(2, many)), atol=1e-5
    )
    np.testing.assert_allclose([r["logits"] for r in rows], toy.in_process(2, many), atol=1e-5)
    np.testing.assert_allclose(cols["logits"], toy.in_process(2, many), atol=1e-5)


def test_one_item_above_max_request_bytes_is_refused_locally(toy_server):
    with ServingClient(toy_server.url, "toy", max_request_bytes=100) as c:
        with pytest.raises(
            errors.RequestTooLargeError, match=r"item 0 alone .* max_request_bytes=100"
        ):
            c.classify([{"x": [0.5] * 50}])


def test_concurrent_requests(toy_server, toy):
    from concurrent.futures import ThreadPoolExecutor

    def one(i):
        with ServingClient(toy_server.url, "toy") as c:
            return c.classify([{"x": X[i % 3]}])[0]

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(one, range(48)))
    want = softmax(toy.in_process(2, X))
    for i, r in enumerate(results):
        np.testing.assert_allclose([s for _, s in r], want[i % 3], atol=1e-5)


# ------------------------------------------------------------------------------------- errors
CASES = [
    # name, path suffix, body, status, message fragment, client call, error type
    (
        "malformed JSON",
        ":classify",
        b'{"examples": [',
        400,
        "JSON Parse error: ",
        errors.BadRequestError,
    ),
    (
        "missing examples",
        ":classify",
        b'{"signature_name": "classify"}',
        400,
        "When method is classify, key 'examples' is expected and was not found",
        errors.BadRequestError,
    ),
    (
        "empty list",
        ":classify",
        b'{"signature_name": "classify", "examples": []}',
        400,
        "'examples' value is an empty array",
        errors.BadRequestError,
    ),
    (
        "wrong feature type",
        ":classify",
        b'{"signature_name": "classify", "examples": [{"x": [1, 2, 3]}]}',
        400,
        "Key: x, Index: 0.  Data types don't match. Data type: int64 but expected type: float",
        errors.BadRequestError,
    ),
    (
        "mixed kinds",
        ":classify",
        b'{"signature_name": "classify", "examples": [{"x": [1.5, "a", 3.0]}]}',
        400,
        "Unexpected element type in feature: x expecting type: float",
        errors.BadRequestError,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_bad_requests_get_tf_serving_errors(toy_server, case):
    _, suffix, body, status, fragment, err_type = case
    url = f"{toy_server.url}/v1/models/toy{suffix}"
    r = requests.post(url, data=body, timeout=30)
    assert r.status_code == status
    assert r.headers["Content-Type"] == "application/json"
    payload = r.json()
    assert list(payload) == ["error"] and fragment in payload["error"]
    # the client maps the same answer to its typed error carrying the server's message
    with ServingClient(toy_server.url, "toy") as c:
        with pytest.raises(err_type, match="HTTP 400: ") as info:
            c._request("POST", url, body.decode())
    assert info.value.status == status and info.value.message == payload["error"]


def test_client_typed_errors_through_its_own_calls(client):
    with pytest.raises(errors.BadRequestError, match="'examples' value is an empty array") as info:
        client.classify([])
    assert info.value.status == 400 and info.value.message.endswith(
        "'examples' value is an empty array"
    )
    with pytest.raises(
        errors.BadRequestError,
        match=r"Data types don't match\. Data type: int64 but expected type: float",
    ):
        client.classify([{"x": [1, 2, 3]}])  # ints make an int64 feature; the model wants float


def test_default_host_is_loopback(toy_server):
    from memgraph_tf.cli import build_parser
    from memgraph_tf.serving.server import make_http_server

    assert build_parser().parse_args(["serve", "BASE"]).host == "127.0.0.1"
    httpd = make_http_server(toy_server.model_server, port=0)
    try:
        assert httpd.server_address[0] == "127.0.0.1"
    finally:
        httpd.server_close()


def test_unknown_model(toy_server):
    r = requests.post(
        f"{toy_server.url}/v1/models/nope:classify", data=b'{"examples": [{}]}', timeout=30
    )
    assert_error(r, 404, "Servable not found for request: Latest(nope)")
    with ServingClient(toy_server.url, "nope") as c:
        with pytest.raises(errors.NotFoundError, match=r"Latest\(nope\)") as info:
            c.classify([{"x": X[0]}])
        assert info.value.status == 404
        with pytest.raises(errors.NotFoundError, match="Could not find any versions of model nope"):
            c.status()


def test_unknown_version_and_label(toy_server):
    r = requests.post(
        f"{toy_server.url}/v1/models/toy/versions/7:predict",
        data=b'{"instances": [[1.0, 2.0, 3.0]]}',
        timeout=30,
    )
    assert_error(r, 404, "Servable not found for request: Specific(toy, 7)")
    with ServingClient(toy_server.url, "toy", version=7) as c:
        with pytest.raises(errors.NotFoundError, match=r"Specific\(toy, 7\)"):
            c.predict([X[0]])
        with pytest.raises(errors.NotFoundError, match="Could not find version 7 of model toy"):
            c.status()
    with ServingClient(toy_server.url, "toy", label="canary") as c:
        with pytest.raises(
            errors.BadRequestError, match="Unrecognized servable version label: canary"
        ):
            c.predict([X[0]])


def test_oversized_body_gets_413(toy_server):
    body = json.dumps(
        {"signature_name": "classify", "examples": [{"x": [0.5, 0.5, 0.5]}] * 4000}
    ).encode()
    assert len(body) > 64 * 1024
    r = requests.post(f"{toy_server.url}/v1/models/toy:classify", data=body, timeout=30)
    assert r.status_code == 413
    assert r.json() == {
        "error": f"Request body of {len(body)} bytes exceeds the server's "
        f"max_request_bytes={64 * 1024}"
    }
    with ServingClient(toy_server.url, "toy") as c:  # client limit above the server's: no split
        with pytest.raises(errors.RequestTooLargeError, match="max_request_bytes=65536") as info:
            c.classify([{"x": [0.5, 0.5, 0.5]}] * 4000)
    assert info.value.status == 413


def test_predict_errors(toy_server):
    url = f"{toy_server.url}/v1/models/toy:predict"
    cases = [
        (
            b'{"instances": [[1.0, 2.0, 3.0]], "inputs": [[1.0, 2.0, 3.0]]}',
            "expecting only one of 'inputs' or 'instances' keys to exist",
        ),
        (b'{"nothing": 1}', "Missing 'inputs' or 'instances' key"),
        (b'{"instances": []}', "No values in 'instances' array"),
        (b'{"instances": [["a", "b", "c"]]}', "is not of expected type: float"),
        (
            b'{"instances": [[1.0, 2.0, 3.0], [1.0]]}',
            "Failed to process element: 1 of 'instances' list. Error: INVALID_ARGUMENT: Expecting "
            "tensor size: 3 but got: 1",
        ),
        (
            b'{"signature_name": "nope", "instances": [[1.0, 2.0, 3.0]]}',
            'Serving signature name: "nope" not found in signature def',
        ),
    ]
    for body, fragment in cases:
        r = requests.post(url, data=body, timeout=30)
        assert r.status_code == 400, body
        assert fragment in r.json()["error"], (body, r.json())


def test_malformed_path_and_method(toy_server):
    r = requests.post(f"{toy_server.url}/v1/models/toy:explain", data=b"{}", timeout=30)
    assert_error(r, 400, "Malformed request: POST /v1/models/toy:explain")
    r = requests.get(f"{toy_server.url}/v1/models", timeout=30)
    assert_error(r, 400, "Missing model name in request.")


def test_server_refuses_a_base_path_without_versions(tmp_path):
    from memgraph_tf.serving.model_server import ModelServer

    with pytest.raises(ValueError, match="expected numbered version directories"):
        ModelServer(tmp_path)


def test_bad_content_length_is_a_400(toy_server):
    import socket

    host, port = "127.0.0.1", toy_server.port
    with socket.create_connection((host, port), timeout=10) as sock:
        sock.sendall(
            b"POST /v1/models/toy:predict HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n"
        )
        chunks = []
        while chunk := sock.recv(65536):  # the server closes the connection after answering
            chunks.append(chunk)
        answer = b"".join(chunks).decode()
    assert answer.startswith("HTTP/1.1 400")
    head, body = answer.split("\r\n\r\n", 1)
    assert "Content-Type: application/json" in head
    assert json.loads(body) == {"error": "Bad Request: Content-Length is invalid"}


def test_classify_context_is_merged_into_each_example(client, toy):
    ctx = X[0]
    results = client.classify([{}, {"x": X[1]}], context={"x": ctx})
    want = softmax(toy.in_process(2, np.stack([ctx, X[1]])))  # the example's own x wins
    np.testing.assert_allclose([[s for _, s in r] for r in results], want, atol=1e-5)


def _raw_request(toy_server, head: bytes, body: bytes) -> tuple[int, dict]:
    """Send bytes over a socket; return the status and JSON body of the one answer."""
    import socket

    host, port = "127.0.0.1", toy_server.port
    with socket.create_connection((host, port), timeout=30) as sock:
        sock.sendall(head + body)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(65536)
            assert chunk, f"the server closed the connection without an answer: {data!r}"
            data += chunk
        headers, rest = data.split(b"\r\n\r\n", 1)
        length = int(
            next(
                line.split(b":")[1]
                for line in headers.split(b"\r\n")
                if line.lower().startswith(b"content-length:")
            )
        )
        while len(rest) < length:
            chunk = sock.recv(65536)
            assert chunk, "the server closed the connection in the middle of its answer"
            rest += chunk
    return int(headers.split(b" ")[1]), json.loads(rest[:length])


CHUNKED_HEAD = (
    b"POST /v1/models/toy:classify HTTP/1.1\r\nHost: x\r\n"
    b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
)


def test_chunked_body(toy_server, toy):
    doc = json.dumps(
        {"signature_name": "classify", "examples": [{"x": X[0].tolist()}, {"x": X[1].tolist()}]}
    ).encode()
    chunks = [doc[:10], doc[10:]]
    body = b"".join(b"%x\r\n%s\r\n" % (len(c), c) for c in chunks) + b"0\r\n\r\n"
    status, payload = _raw_request(toy_server, CHUNKED_HEAD, body)
    assert status == 200, payload
    np.testing.assert_allclose(
        [[s for _, s in r] for r in payload["results"]],
        softmax(toy.in_process(2, X[:2])),
        atol=1e-5,
    )


def test_chunked_body_with_a_bad_chunk_size_is_a_400(toy_server):
    status, payload = _raw_request(toy_server, CHUNKED_HEAD, b'5\r\n{"a":\r\nzz\r\n')
    assert (status, payload) == (400, {"error": "Bad Request: Invalid chunk size"})


def test_chunked_body_above_the_limit_is_a_413(toy_server):
    # up to twice the limit the body is read and the connection kept: a JSON 413 naming the size
    status, payload = _raw_request(
        toy_server, CHUNKED_HEAD, b"20000\r\n" + b" " * 0x20000 + b"\r\n0\r\n\r\n"
    )
    assert status == 413
    assert payload == {
        "error": f"Request body of {0x20000} bytes exceeds the server's "
        f"max_request_bytes={64 * 1024}"
    }


def test_a_body_far_above_the_limit_gets_413_before_the_connection_closes(toy_server):
    """Beyond twice the limit waitress stops reading: the 413 still comes back (as JSON)."""
    import socket
    import threading

    size = 8 << 20
    with socket.create_connection(("127.0.0.1", toy_server.port), timeout=30) as sock:
        sock.sendall(
            b"POST /v1/models/toy:predict HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % size
        )

        def send_body():
            try:
                sock.sendall(b" " * size)
            except OSError:  # the server closed after answering
                pass

        sender = threading.Thread(target=send_body, daemon=True)
        sender.start()
        data = b""
        while b"}" not in data:
            chunk = sock.recv(65536)
            assert chunk, f"closed without an answer: {data!r}"
            data += chunk
        sender.join(timeout=30)
    head, body = data.split(b"\r\n\r\n", 1)
    assert head.startswith(b"HTTP/1.1 413 ")
    assert json.loads(body) == {
        "error": f"Request body exceeds the server's max_request_bytes={64 * 1024}"
    }
