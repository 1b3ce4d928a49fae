"""One home for each serving rule: the status table (memgraph_tf/errors.py), the JSON output rules
(serving/json_output.py), the node_id rule and the example limit (serving/node_examples.py), and
the signature names (serving/bundle.py) -- each checked against TF Serving's source and against
every caller that uses it."""

from __future__ import annotations

import ast
import json
import pathlib
import re
import threading
import types

import grpc
import numpy as np
import pytest

from memgraph_tf import errors
from memgraph_tf.errors import STATUS_TABLE, ServingFailure
from memgraph_tf.serving import (
    bundle,
    client,
    json_output,
    json_tensors,
    json_values,
    node_examples,
)

SERVING = pathlib.Path(__file__).resolve().parents[2] / "memgraph_tf" / "serving"

# tensorflow_serving/model_servers/http_server.cc, ToHTTPStatusCode: every status code (OK aside)
# and the HTTP status TF Serving's REST front end answers it with (CLIENT_CLOSED_REQUEST = 499,
# util/net_http/server/public/response_code_enum.h).
TF_SERVING_HTTP = {
    "CANCELLED": 499,
    "UNKNOWN": 500,
    "INVALID_ARGUMENT": 400,
    "DEADLINE_EXCEEDED": 504,
    "NOT_FOUND": 404,
    "ALREADY_EXISTS": 409,
    "PERMISSION_DENIED": 403,
    "RESOURCE_EXHAUSTED": 429,
    "FAILED_PRECONDITION": 400,
    "ABORTED": 409,
    "OUT_OF_RANGE": 400,
    "UNIMPLEMENTED": 501,
    "INTERNAL": 500,
    "UNAVAILABLE": 503,
    "DATA_LOSS": 500,
    "UNAUTHENTICATED": 401,
}


# ------------------------------------------------------------------------------ the status table
def test_each_code_answers_tf_serving_s_http_status():
    assert {c: errors.http_status_for(c) for c in TF_SERVING_HTTP} == TF_SERVING_HTTP
    assert errors.http_status_for("NOT_A_CODE") == 500  # ToHTTPStatusCode's default: ERROR


def test_the_table_has_every_grpc_code_with_grpc_s_number():
    codes = {row.code: row.number for row in STATUS_TABLE}
    expected = {c.name: c.value[0] for c in grpc.StatusCode if c is not grpc.StatusCode.OK}
    assert codes == expected


def test_only_the_size_limit_row_repeats_a_code():
    repeated = [row for row in STATUS_TABLE if errors.http_status_for(row.code) != row.http]
    assert [(r.code, r.http, r.error) for r in repeated] == [
        ("RESOURCE_EXHAUSTED", 413, errors.RequestTooLargeError)
    ]


def test_retries_follow_the_table_s_retryable_column():
    assert sorted(errors.RETRYABLE_CODES) == ["DEADLINE_EXCEEDED", "UNAVAILABLE"]
    assert sorted(errors.RETRYABLE_HTTP_STATUSES) == [503, 504]
    assert client._RETRY_STATUSES == errors.RETRYABLE_HTTP_STATUSES  # the REST client's
    assert [c for c in TF_SERVING_HTTP if errors.is_retryable(c)] == [
        "DEADLINE_EXCEEDED",
        "UNAVAILABLE",
    ]


@pytest.mark.parametrize("row", STATUS_TABLE, ids=lambda r: f"{r.code}-{r.http}")
def test_rest_errors_are_built_from_the_table(row):
    exc = errors.error_for_status(row.http, "m", "http://h", grpc_code=row.code)
    assert (type(exc), exc.status, exc.grpc_code, exc.message) == (
        row.error,
        row.http,
        row.code,
        "m",
    )


def test_a_failure_known_by_its_status_alone_gets_the_first_code_of_that_status():
    assert {s: errors.code_for_http(s) for s in (400, 409, 413, 429, 499, 500, 503)} == {
        400: "INVALID_ARGUMENT",
        409: "ABORTED",
        413: "RESOURCE_EXHAUSTED",
        429: "RESOURCE_EXHAUSTED",
        499: "CANCELLED",
        500: "INTERNAL",
        503: "UNAVAILABLE",
    }


def test_a_status_alone_names_the_first_code_of_its_row():
    found = errors.error_for_status(404, "gone")
    assert (type(found), found.grpc_code) == (errors.NotFoundError, "NOT_FOUND")
    bad = errors.error_for_status(400, "bad")
    assert (type(bad), bad.grpc_code) == (errors.BadRequestError, "INVALID_ARGUMENT")
    odd = errors.error_for_status(418, "teapot")
    assert (type(odd), odd.status, odd.grpc_code) == (errors.ServingHTTPError, 418, None)


def test_grpc_client_errors_are_built_from_the_table():
    grpc_client = pytest.importorskip("memgraph_tf.serving.grpc_client")
    for code in grpc.StatusCode:
        if code is grpc.StatusCode.OK:
            continue
        exc = grpc_client.error_from_rpc(code, "details", "h:1")
        row = next(r for r in STATUS_TABLE if r.code == code.name)
        assert (type(exc), exc.status, exc.grpc_code) == (row.error, row.http, code.name), code
        assert isinstance(exc.grpc_code, str)
        assert grpc.StatusCode[exc.grpc_code] is code
    too_big = grpc_client.error_from_rpc(grpc.StatusCode.RESOURCE_EXHAUSTED, "max_examples")
    assert (type(too_big), too_big.status, too_big.grpc_code) == (
        errors.RequestTooLargeError,
        413,
        "RESOURCE_EXHAUSTED",
    )


def test_server_failures_carry_their_code():
    assert ServingFailure(404, "x").grpc_code == "NOT_FOUND"
    assert ServingFailure(503, "x").grpc_code == "UNAVAILABLE"
    assert ServingFailure(418, "x").grpc_code == "INVALID_ARGUMENT"  # a 4xx the table lacks
    assert ServingFailure(599, "x").grpc_code == "INTERNAL"  # a 5xx the table lacks
    exc = ServingFailure.for_code("FAILED_PRECONDITION", "x")
    assert (exc.status, exc.grpc_code) == (400, "FAILED_PRECONDITION")
    big = ServingFailure.too_large("x")
    assert (big.status, big.grpc_code) == (413, "RESOURCE_EXHAUSTED")


def test_the_grpc_server_answers_a_failure_s_own_code():
    grpc_server = pytest.importorskip("memgraph_tf.serving.grpc_server")
    for row in STATUS_TABLE:
        exc = ServingFailure.for_code(row.code, "x")
        assert grpc_server.grpc_code_for(exc) is grpc.StatusCode[row.code]
    big = ServingFailure.too_large("x")
    assert grpc_server.grpc_code_for(big) is grpc.StatusCode.RESOURCE_EXHAUSTED


def test_a_tensorflow_error_is_answered_with_its_own_code():
    """TF Serving hands a failed session run's status through: gRPC gets its code, REST that
    code's HTTP status (FAILED_PRECONDITION stays FAILED_PRECONDITION over gRPC, 400 over REST)."""
    tf = pytest.importorskip("tensorflow")
    from memgraph_tf.serving.model_server import ModelServer

    fake = types.SimpleNamespace(
        _calls_lock=threading.Lock(), model_calls=0, _tf_message=ModelServer._tf_message
    )
    for cls, code in (
        (tf.errors.FailedPreconditionError, "FAILED_PRECONDITION"),
        (tf.errors.CancelledError, "CANCELLED"),
        (tf.errors.ResourceExhaustedError, "RESOURCE_EXHAUSTED"),
        (tf.errors.DataLossError, "DATA_LOSS"),
    ):

        def fail(cls=cls):
            raise cls(None, None, "model says no")

        with pytest.raises(ServingFailure, match=r"model says no$") as info:
            ModelServer._execute(fake, fail, {})
        assert (info.value.grpc_code, info.value.status) == (code, TF_SERVING_HTTP[code])


def test_neighbourhood_errors_name_the_code_a_server_answers():
    assert errors.NodeIdError.grpc_code == "INVALID_ARGUMENT"
    assert errors.NeighbourhoodDataError.grpc_code == "INVALID_ARGUMENT"
    assert errors.GraphUnavailableError.grpc_code == "UNAVAILABLE"
    assert errors.GraphSourceError.grpc_code == "INTERNAL"


def test_http_reasons():
    assert errors.http_reason(404) == "Not Found"
    assert errors.http_reason(499) == "Client Closed Request"
    assert errors.http_reason(599) == "Error"


def test_the_errors_module_imports_the_standard_library_and_the_lazy_helper_only():
    tree = ast.parse((SERVING.parent / "errors.py").read_text())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            imported.add(node.module)
    assert imported == {"__future__", "http", "logging", "typing", "memgraph_tf.lazy"}


def test_no_other_serving_module_keeps_a_status_table():
    """A dict literal keyed by HTTP statuses or status code names in a serving module is a
    second table (the one is memgraph_tf/errors.py's)."""
    pattern = re.compile(r"\{\s*\n?\s*(?:4\d\d|5\d\d|grpc\.StatusCode\.\w+)\s*:")
    offenders = [p.name for p in SERVING.glob("*.py") if pattern.search(p.read_text())]
    assert offenders == []


# --------------------------------------------------------------------------- JSON output rules
WRITABLE = ["float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8"]
WRITABLE += ["uint32", "uint64", "bool"]


@pytest.mark.parametrize("dtype", WRITABLE)
def test_the_dtypes_tf_serving_writes(dtype):
    arr = np.zeros((2,), dtype)
    assert json_output.value_kind(arr) in ("float", "int", "bool")
    assert json_output.json_value("y", arr) == arr.tolist()


@pytest.mark.parametrize("dtype, name", [("uint16", "uint16"), ("complex64", "complex64")])
def test_uint16_and_complex_are_refused_by_server_and_grpc_client_alike(dtype, name):
    """tensorflow_serving/util/json_tensor.cc, AddSingleValueAndAdvance: its switch has no case
    for DT_UINT16 (nor the complex types), so the default answers INVALID_ARGUMENT "Failed to
    write JSON value for tensor type: uint16" -- the REST server's answer, and what the gRPC
    client's REST-shaped predict outputs raise (they passed uint16 through before)."""
    arr = np.arange(4, dtype=dtype).reshape(2, 2)
    message = f"Failed to write JSON value for tensor type: {name}$"
    for columnar in (True, False):
        with pytest.raises(ServingFailure, match=message) as by_server:
            json_tensors.predict_response({"y": arr}, columnar)
        with pytest.raises(ServingFailure, match=message) as by_client:
            json_output.arrange({"y": arr}, columnar, json_output.json_value)
        assert by_server.value.status == by_client.value.status == 400


def test_server_and_grpc_client_lay_outputs_out_alike():
    out = {
        "a": np.array([[1.5, 2.0], [3.0, 4.0]], np.float32),
        "b_bytes": np.array([b"\x00", b"ok"], dtype=object),
        "c": np.array([b"text", b"\xff"], dtype=object),
    }
    for columnar in (True, False):
        server = json_tensors.predict_response(out, columnar)
        written = json.loads(json_values.dumps(server))
        key = "outputs" if columnar else "predictions"
        assert written[key] == json_output.arrange(out, columnar, json_output.json_value)
    assert written["predictions"][1] == {
        "a": [3.0, 4.0],
        "b_bytes": {"b64": "b2s="},
        "c": {"b64": "/w=="},
    }


@pytest.mark.parametrize(
    "out, message",
    [
        ({}, "Cannot convert empty tensor map to JSON$"),
        ({"s": np.float32(1)}, "Tensor name: s has no shape information $"),
        (
            {"a": np.zeros(2), "b": np.zeros(3)},
            "Tensor name: b has inconsistent batch size: 3 expecting: 2$",
        ),
    ],
)
def test_row_format_refusals_are_tf_serving_s(out, message):
    with pytest.raises(ServingFailure, match=message):
        json_output.arrange(out, False, json_output.json_value)
    with pytest.raises(ServingFailure, match=message):
        json_tensors.predict_response(out, False)


# ------------------------------------------------------------------- node_id rule, max_examples
def test_the_example_limit_is_413_over_rest_and_resource_exhausted_over_grpc():
    node_examples.check_example_count(4, 4)
    with pytest.raises(
        ServingFailure, match=r"Request holds 5 examples, above .* limit of 4 "
    ) as e:
        node_examples.check_example_count(5, 4)
    assert (e.value.status, e.value.grpc_code) == (413, "RESOURCE_EXHAUSTED")


class _Fetcher:
    def __init__(self, error=None):
        self.error = error
        self.asked = []

    def fetch(self, node_ids, sampling, names):
        self.asked.append((list(node_ids), list(names)))
        if self.error is not None:
            raise self.error
        return [b"blob-%d" % n for n in node_ids]


def _config():
    return bundle.BundleConfig.from_dict(
        {
            "format": bundle.BUNDLE_FORMAT,
            "format_version": bundle.BUNDLE_FORMAT_VERSION,
            "model_name": "GraphSage",
            "version": 1,
            "use_op": False,
            "blob_feature_key": "blob",
            "class_names": ["alpha", "beta"],
            "fanouts": [2],
            "feature_dim": 2,
            "properties": ["features"],
            "options": {},
            "sections": {"features_0": {"dtype": "float32", "shape": [1, 2]}},
            "scores": "logits",
            "tensorflow_version": "2.21.0",
        }
    )


def _proto(features):
    from memgraph_tf.serving.grpc_codec import example_from_features

    return example_from_features(features)


def test_rest_and_grpc_share_the_node_id_rule():
    pytest.importorskip("tensorflow")
    from tensorflow.core.example import example_pb2

    cfg = _config()
    key = cfg.blob_feature_key
    fetcher = _Fetcher()
    protos = node_examples.json_examples([{"node_id": 7, "x": 1}, {key: "raw"}], cfg, fetcher)
    serialized = node_examples.proto_examples(
        [_proto({"node_id": 7, "x": 1}), _proto({key: b"raw"})], cfg, fetcher
    )
    assert [p.SerializeToString() for p in protos] == serialized
    first = example_pb2.Example.FromString(serialized[0])
    assert sorted(first.features.feature) == [key, "x"]
    assert list(first.features.feature[key].bytes_list.value) == [b"blob-7"]
    assert fetcher.asked == [([7], ["examples[0].node_id"])] * 2
    # not a memgraph-tf bundle: node_id is a plain feature, the graph is not asked
    plain = node_examples.proto_examples([_proto({"node_id": 7})], None, fetcher)
    assert plain == [_proto({"node_id": 7}).SerializeToString()]
    assert len(fetcher.asked) == 2


@pytest.mark.parametrize(
    "json_example, proto_example, fetcher, message",
    [
        (
            {"node_id": 1, "blob": {"b64": "AA=="}},
            {"node_id": 1, "blob": b"\0"},
            _Fetcher(),
            r"examples\[0\]: 'node_id' and 'blob' are both given; send one of them$",
        ),
        (
            {"node_id": 1},
            {"node_id": 1},
            None,
            r"examples\[0\]: 'node_id' needs a server started with --graph; without one, send",
        ),
    ],
)
def test_both_transports_refuse_alike(json_example, proto_example, fetcher, message):
    pytest.importorskip("tensorflow")
    cfg = _config()
    with pytest.raises(ServingFailure, match=message) as by_rest:
        node_examples.json_examples([json_example], cfg, fetcher)
    with pytest.raises(ServingFailure, match=message) as by_grpc:
        node_examples.proto_examples([_proto(proto_example)], cfg, fetcher)
    for info in (by_rest, by_grpc):
        assert (info.value.status, info.value.grpc_code) == (400, "INVALID_ARGUMENT")


@pytest.mark.parametrize(
    "error, status, code",
    [
        (errors.NodeIdError("examples[0].node_id: bad"), 400, "INVALID_ARGUMENT"),
        (errors.NeighbourhoodDataError("no node 9"), 400, "INVALID_ARGUMENT"),
        (errors.GraphUnavailableError("graph down"), 503, "UNAVAILABLE"),
        (errors.GraphSourceError("query failed"), 500, "INTERNAL"),
    ],
)
def test_graph_failures_are_answered_with_their_class_s_code(error, status, code):
    pytest.importorskip("tensorflow")
    for convert, example in (
        (node_examples.json_examples, {"node_id": 9}),
        (node_examples.proto_examples, _proto({"node_id": 9})),
    ):
        with pytest.raises(ServingFailure, match=f"{re.escape(error.message)}$") as info:
            convert([example], _config(), _Fetcher(error))
        assert (info.value.status, info.value.grpc_code) == (status, code)


# ----------------------------------------------------------------------------- signature names
def _code_strings(path: pathlib.Path) -> set[str]:
    """The string constants of a module's code (docstrings left out)."""
    tree = ast.parse(path.read_text())
    docs = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            docs.add(id(body[0].value))
    return {
        n.value
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs
    }


def test_signature_names_live_in_the_bundle_contract():
    from memgraph_tf.serving import model_server

    assert bundle.DEFAULT_SIGNATURE == bundle.PREDICT_SIGNATURE == "serving_default"
    assert model_server.DEFAULT_SIGNATURE is bundle.DEFAULT_SIGNATURE
    for path in SERVING.glob("*.py"):
        if path.name != "bundle.py":
            names = _code_strings(path) & {"serving_default", "signature_def", "node_id"}
            allowed = {"node_id"} if path.name == "node_examples.py" else set()
            assert names <= allowed, path.name
