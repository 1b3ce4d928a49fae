"""The REST server's protective limits: idle connections, examples per request, JSON
nesting and integer range checked before parsing, conflicting keys. None of them may cost a 500
or a dropped connection."""

from __future__ import annotations

import json
import socket
import time

import numpy as np
import pytest
import requests

from memgraph_tf.errors import ServingFailure
from memgraph_tf.serving import json_parse
from tests.serving.http_kit import assert_error


@pytest.fixture(scope="module")
def limited(toy_base):
    """The toy model behind a server with small limits: 1 s idle timeout, 5 examples per request,
    JSON nesting 8."""
    from memgraph_tf.serving.model_server import ModelServer
    from memgraph_tf.serving.server import start_server

    ms = ModelServer(toy_base, "toy", max_examples=5, max_json_depth=8, max_request_bytes=4 << 20)
    with start_server(ms, idle_timeout_s=1) as srv:
        yield srv


def post(srv, suffix: str, body: bytes | str | dict, model: str = "toy"):
    data = json.dumps(body) if isinstance(body, dict) else body
    return requests.post(f"{srv.url}/v1/models/{model}{suffix}", data=data, timeout=60)


# -------------------------------------------------------------------------------- idle timeout
def _closed_within(sock: socket.socket, limit_s: float) -> float:
    """Seconds until the server closes ``sock`` (reads and drops any answer); fails after
    ``limit_s``."""
    start = time.monotonic()
    sock.settimeout(limit_s)
    while True:
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            return time.monotonic() - start
        if not chunk:
            return time.monotonic() - start
        assert time.monotonic() - start < limit_s


@pytest.mark.parametrize(
    "opening",
    [
        b"",
        b"POST /v1/models/toy:predict HTTP/1.1\r\nHost: x\r\n",
        b"POST /v1/models/toy:predict HTTP/1.1\r\nHost: x\r\n"
        b'Content-Length: 100\r\n\r\n{"instances"',
    ],
)
def test_stalled_connections_are_closed_after_the_idle_timeout(limited, opening):
    """Nothing sent, half the headers, half the body: each connection is closed within the
    idle timeout (1 s) plus the once-a-second check, and the server still answers."""
    with socket.create_connection(("127.0.0.1", limited.port), timeout=10) as sock:
        sock.sendall(opening)
        waited = _closed_within(sock, 8.0)
    assert 0.5 <= waited < 5.0
    r = requests.get(f"{limited.url}/v1/models/toy", timeout=10)
    assert r.status_code == 200


def test_an_idle_keep_alive_connection_is_closed_too(limited):
    with socket.create_connection(("127.0.0.1", limited.port), timeout=10) as sock:
        sock.sendall(b"GET /v1/models/toy HTTP/1.1\r\nHost: x\r\n\r\n")
        data = b""
        while b"AVAILABLE" not in data:
            data += sock.recv(65536)
        assert data.startswith(b"HTTP/1.1 200 ")
        assert 0.5 <= _closed_within(sock, 8.0) < 5.0


# ------------------------------------------------------------------------ examples per request
@pytest.mark.parametrize(
    "suffix, body",
    [
        (":classify", {"signature_name": "classify", "examples": [{"x": [1.0, 2.0, 3.0]}] * 6}),
        (":regress", {"signature_name": "regress", "examples": [{"x": [1.0, 2.0, 3.0]}] * 6}),
        (":predict", {"instances": [[1.0, 2.0, 3.0]] * 6}),
        (":predict", {"inputs": {"x": [[1.0, 2.0, 3.0]] * 6}}),
    ],
)
def test_more_examples_than_max_examples_is_a_413_naming_it(limited, suffix, body):
    r = post(limited, suffix, body)
    assert_error(
        r,
        413,
        (
            "Request holds 6 examples/instances, above this server's limit of 5 per request "
            "(max_examples, memgraph-tf serve --max-examples)"
        ),
    )
    body5 = json.loads(json.dumps(body).replace("6", "5"))
    for key in ("examples", "instances"):
        if key in body5:
            body5[key] = body5[key][:5]
    if "inputs" in body5:
        body5["inputs"]["x"] = body5["inputs"]["x"][:5]
    assert post(limited, suffix, body5).status_code == 200


# ----------------------------------------------------------------------------- JSON nesting
@pytest.mark.parametrize("suffix", [":classify", ":predict", ":regress"])
@pytest.mark.parametrize("depth", [9, 1000, 1_000_000])
def test_deep_nesting_is_a_400_naming_the_key(limited, suffix, depth):
    key = "examples" if suffix != ":predict" else "instances"
    body = f'{{"{key}": {"[" * depth}1{"]" * depth}}}'
    r = post(limited, suffix, body)
    offset = len(key) + 5 + 7  # {"key": [ puts the first [ (level 2) at len(key) + 5
    assert_error(
        r,
        400,
        (
            f"JSON Parse error: nesting deeper than 8 levels at offset: {offset} under key "
            f"'{key}' (this server's limit, --max-json-depth)"
        ),
    )


def test_brackets_inside_strings_do_not_count():
    deep_text = "[" * 5000 + '\\" {{{ \\\\' + "]" * 10
    body = json.dumps({"examples": [{"s": deep_text}], "t": '\\"[[[['}).encode()
    json_parse.check_json_depth(body, 8)  # no failure: the brackets are inside strings
    assert json_parse.parse_request_body(body, max_depth=8)["examples"][0]["s"] == deep_text
    with pytest.raises(
        ServingFailure,
        match=r"nesting deeper than 3 levels at offset: 15 under "
        r"key 'examples'",
    ):
        json_parse.check_json_depth(b'{"examples": [[[[1]]]]}', 3)


# ---------------------------------------------------------------------------- integer range
def test_huge_integers_never_reach_pythons_int(limited):
    """A 5,000-digit integer (beyond Python's int-from-text limit) and one of 10**6 digits: 400
    as rapidjson words it, never a 500."""
    for digits in (5000, 1_000_000):
        body = '{"signature_name": "classify", "examples": [{"x": [1.0, 2.0, %s]}]}' % (
            "9" * digits
        )
        r = post(limited, ":classify", body)
        assert_error(
            r,
            400,
            (
                f"JSON Parse error: Number too big to be stored in double. at offset: "
                f"{body.index('999')}"
            ),
        )


@pytest.mark.parametrize("literal", ["1e999", "-2.5E+400", "1" * 400 + ".5"])
def test_floats_beyond_double_range_are_refused_not_read_as_infinity(limited, literal):
    body = f'{{"instances": [[1.0, 2.0, {literal}]]}}'
    r = post(limited, ":predict", body)
    assert_error(
        r,
        400,
        (
            "JSON Parse error: Number too big to be stored in double. at offset: "
            f"{body.index(literal)}"
        ),
    )


def test_floats_near_the_double_limits_still_parse():
    doc = json_parse.parse_request_body(b'{"instances": [1.5e308, -1e308, 1e-999, 2E+2, "e999"]}')
    assert doc["instances"] == [
        1.5e308,
        -1e308,
        0.0,
        200.0,
        "e999",
    ]  # underflow is 0, as in rapidjson


def test_integers_beyond_int64_name_the_field(limited):
    # a float input takes any number, rounded (json_tensor_test.cc FloatTensorWithPrecisionLoss)
    r = post(limited, ":predict", '{"instances": [[1.0, 2.0, 9223372036854775808]]}')
    assert r.status_code == 200, r.text
    r = post(limited, ":classify", '{"examples": [{"x": [1, 18446744073709551615]}]}')
    assert_error(r, 400, "Feature: x has uint64_t element. Only int64_t is supported.")


# --------------------------------------------------------------------------- conflicting keys
def test_duplicate_keys_are_a_400_naming_the_key(limited):
    for body, key in [
        ('{"instances": [[1.0, 2.0, 3.0]], "instances": []}', "instances"),
        ('{"examples": [{"x": [1.0, 2.0, 3.0], "x": 1}]}', "x"),
        ('{"inputs": {"x": {"b64": "AA==", "b64": "AQ=="}}}', "b64"),
    ]:
        r = post(limited, ":predict", body)
        assert_error(
            r,
            400,
            (
                f'JSON Parse error: duplicate key "{key}" in one object (this server refuses '
                f"duplicate keys)"
            ),
            body,
        )


# ----------------------------------------------------- node ids: conflicts, range, cap first
class CountingSource:
    """A graph source answering every node id with one fixed blob, counting calls."""

    def __init__(self, blob: bytes):
        self.blob = blob
        self.calls = 0

    def sample_blobs_per_node(self, ids, fanouts, properties, options):
        self.calls += 1
        return [self.blob for _ in ids]


@pytest.fixture(scope="module")
def sage_server(sage_op_bundle, sage):
    from memgraph_tf.serving.model_server import ModelServer
    from memgraph_tf.serving.server import start_server

    blobs, _ = sage.blobs(1, seed=5)
    source = CountingSource(blobs[0])
    ms = ModelServer(sage_op_bundle.path, graph_source=source, max_examples=16, warmup=False)
    with start_server(ms) as srv:
        srv.source = source
        yield srv


def test_node_id_with_a_blob_is_a_400(sage_server):
    import base64

    blob = base64.b64encode(sage_server.source.blob).decode()
    r = post(
        sage_server,
        ":classify",
        {"examples": [{"node_id": 1}, {"node_id": 2, "blob": {"b64": blob}}]},
        model="sage",
    )
    assert_error(r, 400, "examples[1]: 'node_id' and 'blob' are both given; send one of them")
    ok = post(
        sage_server,
        ":classify",
        {"examples": [{"node_id": 1}, {"blob": {"b64": blob}}]},
        model="sage",
    )
    assert ok.status_code == 200, ok.text
    rows = [[s for _, s in row] for row in ok.json()["results"]]
    np.testing.assert_allclose(rows[0], rows[1], atol=1e-6)  # the same blob both ways


@pytest.mark.parametrize(
    "value", ["99999999999999999999999", "9223372036854775808", "-9223372036854775809", "1" * 5000]
)
def test_node_id_beyond_int64_is_a_400_naming_the_field(sage_server, value):
    calls = sage_server.source.calls
    r = post(
        sage_server,
        ":classify",
        f'{{"examples": [{{"node_id": 5}}, {{"node_id": {value}}}]}}',
        model="sage",
    )
    assert r.status_code == 400
    if len(value) > 30:
        assert r.json()["error"].startswith(
            "JSON Parse error: Number too big to be stored in double."
        )
    else:
        assert r.json() == {
            "error": f"examples[1].node_id: expected an integer in the int64 range, got {value}"
        }
    assert sage_server.source.calls == calls  # refused before touching the graph


def test_too_many_node_ids_never_reach_the_graph(sage_server):
    calls = sage_server.source.calls
    r = post(
        sage_server, ":classify", {"examples": [{"node_id": i} for i in range(3000)]}, model="sage"
    )
    assert r.status_code == 413 and "limit of 16 per request" in r.json()["error"]
    assert sage_server.source.calls == calls
