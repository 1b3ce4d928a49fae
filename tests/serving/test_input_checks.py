"""Inputs the signature cannot take, invalid Unicode, and the 500s.

1. A DT_STRING tensor of more than 32 dimensions crashes TensorFlow's Python conversion (exit 139
   of ``memgraph-tf serve``; a 105-byte body does it). One function for REST and gRPC
   (``serving/input_specs.py``) checks every input from its dtype and shape before numpy or
   TensorFlow sees it: such a tensor of a rank the signature cannot take is 400 /
   INVALID_ARGUMENT naming the input in the words of TensorFlow's own session check; below 32
   dimensions shapes are TensorFlow's to take or refuse, as TF Serving hands them to the
   session (``servables/tensorflow/predict_util.cc``).
2. A lone UTF-16 surrogate escape (``"\\ud800"``) is rapidjson's parse error, and no 500 body
   carries a Python exception's name or text.
3. A gRPC ``tensor_shape`` of 100 dimensions is INVALID_ARGUMENT naming the input (numpy holds
   64 dimensions at most).
"""

from __future__ import annotations

import json
import logging
import signal
import socket

import grpc
import numpy as np
import pytest
import requests
from tensorflow.core.framework import tensor_pb2
from tensorflow_serving.apis import (
    get_model_status_pb2,
    model_service_pb2_grpc,
    predict_pb2,
    prediction_service_pb2_grpc,
)

from memgraph_tf import errors
from memgraph_tf.serving import grpc_codec, input_specs, json_parse, rest_api
from memgraph_tf.serving.grpc_server import start_grpc_server
from tests.serving.http_kit import assert_error

#: The crash reproducers: 33 levels of [ ] around a string for the predict input ``blobs``.
DEEP_COLUMNAR = b'{"inputs": {"blobs": ' + b"[" * 33 + b'"YQ=="' + b"]" * 33 + b"}}"
#: ... and the row form: 33 levels of [ ] (``instances`` itself the first) around a b64 object.
DEEP_ROWS = b'{"instances": ' + b"[" * 33 + b'{"b64": "YQ=="}' + b"]" * 33 + b"}"


def nested(levels: int, leaf):
    for _ in range(levels):
        leaf = [leaf]
    return leaf


def string_tensor_proto(rank: int, dtype: int = 7) -> tensor_pb2.TensorProto:
    """A TensorProto of shape [1] * rank holding one value (DT_STRING by default)."""
    t = tensor_pb2.TensorProto(dtype=dtype)
    for _ in range(rank):
        t.tensor_shape.dim.add().size = 1
    if dtype == 7:
        t.string_val.append(b"a")
    else:
        t.float_val.append(1.0)
    return t


def predict_request(model: str, **inputs) -> predict_pb2.PredictRequest:
    req = predict_pb2.PredictRequest()
    req.model_spec.name = model
    for k, v in inputs.items():
        req.inputs[k].CopyFrom(v)
    return req


def rpc_failure(fn, *args, **kwargs) -> tuple[grpc.StatusCode, str]:
    with pytest.raises(grpc.RpcError) as info:
        fn(*args, **kwargs)
    return info.value.code(), info.value.details()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def feed_error(key: str, dims: str, rank: int, want: str, want_rank: int, sig="serving_default"):
    return (
        f"Cannot feed value of shape {dims} (rank {rank}) for input '{key}' of signature "
        f"'{sig}', which has shape {want} (rank {want_rank})"
    )


ONES = "[1,1,1,1,1,1,1,1,...]"


# ---------------------------------------------------------------------------- the segfault
@pytest.fixture(scope="module")
def blobs_base(tmp_path_factory):
    """BASE/sage, version 1: a SavedModel whose ``serving_default`` takes what a bundle's does
    (``blobs``: DT_STRING [batch]) and answers each blob's length -- the crash's input path
    without a bundle's load and warmup time."""
    import tensorflow as tf

    class Blobs(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="blobs")])
        def predict(self, blobs):
            return {"length": tf.strings.length(blobs)}

    base = tmp_path_factory.mktemp("models") / "sage"
    m = Blobs()
    tf.saved_model.save(m, str(base / "1"), signatures={"serving_default": m.predict})
    return base


def test_crash_reproducers_get_400_from_memgraph_tf_serve(blobs_base, cli_server):
    """The crash inputs against `memgraph-tf serve --grpc-port` in its own process: the
    105-byte columnar body, the row form, and the same tensor over gRPC Predict each get 400 /
    INVALID_ARGUMENT naming the input; the server answers afterwards and exits 0 (not 139)."""
    grpc_port = free_port()
    with cli_server(
        [str(blobs_base), "--grpc-port", str(grpc_port)], "sage", stop=signal.SIGINT
    ) as run:
        url = f"{run.url}/v1/models/sage:predict"
        for body, rank in ((DEEP_COLUMNAR, 33), (DEEP_ROWS, 33)):
            r = requests.post(url, data=body, timeout=60)
            assert r.status_code == 400, r.text
            assert r.json() == {"error": feed_error("blobs", ONES, rank, "[?]", 1)}
        with grpc.insecure_channel(f"127.0.0.1:{grpc_port}") as channel:
            stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
            code, details = rpc_failure(
                stub.Predict, predict_request("sage", blobs=string_tensor_proto(33)), timeout=60
            )
            assert code == grpc.StatusCode.INVALID_ARGUMENT
            assert details == feed_error("blobs", ONES, 33, "[?]", 1)
            status = model_service_pb2_grpc.ModelServiceStub(channel).GetModelStatus(
                get_model_status_pb2.GetModelStatusRequest(
                    model_spec={"name": "sage"}  # the server still answers
                ),
                timeout=30,
            )
            assert status.model_version_status[0].state == (
                get_model_status_pb2.ModelVersionStatus.AVAILABLE
            )
        assert requests.get(f"{run.url}/v1/models/sage", timeout=30).status_code == 200
    assert run.returncode == 0, run.output[-3000:]


@pytest.fixture(scope="module")
def deep_servers(sage_op_bundle, toy_base, any_rank_base):
    """In-process REST models (bundle, toy, any-rank) with --max-json-depth 200, so bodies reach
    the tensor code however deep they nest, and gRPC over the bundle and the any-rank model. The
    bundle decodes with the op: inputs are checked against the signature's ``blobs`` input
    (DT_STRING [?]) before the decoder runs, and the signature is the same for either decoder."""
    from memgraph_tf.serving.model_server import ModelServer

    servers = {
        "sage": ModelServer(sage_op_bundle.path, warmup=False, max_json_depth=200),
        "toy": ModelServer(toy_base, "toy", max_json_depth=200),
        "anyrank": ModelServer(any_rank_base, max_json_depth=200),
    }
    with (
        start_grpc_server(servers["sage"]) as sage_rpc,
        start_grpc_server(servers["anyrank"]) as any_rpc,
    ):
        channels = {
            "sage": grpc.insecure_channel(sage_rpc.target),
            "anyrank": grpc.insecure_channel(any_rpc.target),
        }
        stubs = {
            k: prediction_service_pb2_grpc.PredictionServiceStub(c) for k, c in channels.items()
        }
        yield servers, stubs
        for c in channels.values():
            c.close()


@pytest.mark.parametrize("levels", [33, 40, 64, 65, 100, 190])
def test_rest_wrong_rank_is_400_naming_the_input(deep_servers, levels):
    """A DT_STRING tensor above 32 dimensions (TensorFlow's Python conversion crashed the process
    on them) of a rank the signature cannot take gets the same 400 naming the input, over
    columnar and row format, never a crash or a 500."""
    servers, _ = deep_servers
    ms = servers["sage"]
    shown = ONES if levels > 8 else "[" + ",".join(["1"] * levels) + "]"
    body = json.dumps({"inputs": {"blobs": nested(levels, "YQ==")}}).encode()
    assert rest_api.handle(ms, "POST", "/v1/models/sage:predict", body) == (
        400,
        {"error": feed_error("blobs", shown, levels, "[?]", 1)},
    )
    rows = json.dumps({"instances": nested(levels, {"b64": "YQ=="})}).encode()
    assert rest_api.handle(ms, "POST", "/v1/models/sage:predict", rows) == (
        400,
        {"error": feed_error("blobs", shown, levels, "[?]", 1)},
    )


@pytest.mark.parametrize("levels", [2, 32])
def test_rest_lower_ranks_are_tensorflows_to_refuse(deep_servers, levels):
    """Up to 32 dimensions the tensor goes to the signature as it is, as TF Serving hands it to
    the session unchecked (servables/tensorflow/predict_util.cc, PreProcessPrediction checks
    input names only): the bundle's decoder op refuses it with its own message, a 400."""
    servers, _ = deep_servers
    body = json.dumps({"inputs": {"blobs": nested(levels, "YQ==")}}).encode()
    status, doc = rest_api.handle(servers["sage"], "POST", "/v1/models/sage:predict", body)
    shape = ",".join(["1"] * levels)
    assert status == 400
    assert doc["error"].startswith(
        f"blobs: expected a scalar or a vector of blobs, got shape [{shape}]"
    ), doc


def test_rest_fixed_dimension_and_rank_of_another_model(deep_servers):
    """A float tensor of another size in a fixed dimension reaches TensorFlow, whose MatMul
    refuses it (the session's answer in TF Serving); beyond numpy's 64 dimensions this server's
    limit answers, naming the input."""
    servers, _ = deep_servers
    toy = servers["toy"]
    body = b'{"inputs": {"x": [[1, 2, 3, 4]]}}'
    status, doc = rest_api.handle(toy, "POST", "/v1/models/toy:predict", body)
    assert status == 400
    assert doc["error"].startswith("Matrix size-incompatible: In[0]: [1,4], In[1]: [3,"), doc
    body = json.dumps({"instances": nested(100, 1.0)}).encode()
    assert rest_api.handle(toy, "POST", "/v1/models/toy:predict", body) == (
        400,
        {
            "error": "input 'x' of signature 'serving_default': rank 100 is above the 64 "
            "dimensions this server converts (TensorFlow's own limit is 254)"
        },
    )


def test_unknown_rank_signature_takes_deep_strings_up_to_numpys_limit(deep_servers):
    """A signature of unknown rank takes a DT_STRING tensor of 40 dimensions (TensorFlow's numpy
    conversion of strings crashes beyond 32: it goes flat and is reshaped), answers it, and refuses
    65 dimensions and more with this server's limit."""
    servers, stubs = deep_servers
    ms = servers["anyrank"]
    deep40 = nested(40, "a")
    status, doc = rest_api.handle(
        ms,
        "POST",
        "/v1/models/anyrank:predict",
        json.dumps({"inputs": {"s": deep40, "f": nested(40, 2.5)}}).encode(),
    )
    assert (status, doc) == (200, {"outputs": {"s_out": deep40, "f_sum": 2.5}})
    resp = stubs["anyrank"].Predict(
        predict_request("anyrank", s=string_tensor_proto(40), f=string_tensor_proto(40, 1)),
        timeout=30,
    )
    assert grpc_codec.tensor_to_array(resp.outputs["s_out"], "s_out", 10).shape == (1,) * 40
    limit = (
        "input 's' of signature 'serving_default': rank {n} is above the 64 dimensions this "
        "server converts (TensorFlow's own limit is 254)"
    )
    body = json.dumps({"inputs": {"s": nested(65, "a"), "f": 1.0}}).encode()
    assert rest_api.handle(ms, "POST", "/v1/models/anyrank:predict", body) == (
        400,
        {"error": limit.format(n=65)},
    )
    code, details = rpc_failure(
        stubs["anyrank"].Predict,
        predict_request("anyrank", s=string_tensor_proto(100), f=string_tensor_proto(0, 1)),
        timeout=30,
    )
    assert (code, details) == (grpc.StatusCode.INVALID_ARGUMENT, limit.format(n=100))
    code, details = rpc_failure(
        stubs["anyrank"].Predict,
        predict_request("anyrank", s=string_tensor_proto(300), f=string_tensor_proto(0, 1)),
        timeout=30,
    )
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert details == "input 's': Unable to parse tensor proto: rank 300 is above TensorFlow's 254"


# ------------------------------------------------------------------ gRPC, 100 dimensions
@pytest.mark.parametrize("rank", [33, 64, 65, 100, 254])
def test_grpc_wrong_rank_is_invalid_argument_naming_the_input(deep_servers, rank):
    """Never INTERNAL (numpy's "maximum supported dimension for an ndarray is 64") nor a crash
    (a DT_STRING tensor of 33 dimensions in TensorFlow's conversion)."""
    _, stubs = deep_servers
    code, details = rpc_failure(
        stubs["sage"].Predict, predict_request("sage", blobs=string_tensor_proto(rank)), timeout=30
    )
    assert (code, details) == (
        grpc.StatusCode.INVALID_ARGUMENT,
        feed_error("blobs", ONES, rank, "[?]", 1),
    )


def test_grpc_dtype_is_checked_by_the_same_function(deep_servers):
    _, stubs = deep_servers
    code, details = rpc_failure(
        stubs["sage"].Predict, predict_request("sage", blobs=string_tensor_proto(1, 1)), timeout=30
    )
    assert (code, details) == (
        grpc.StatusCode.INVALID_ARGUMENT,
        "Expects input 'blobs' to be string but float is provided",
    )


def test_check_input_rules():
    from tensorflow.core.protobuf import meta_graph_pb2

    info = meta_graph_pb2.TensorInfo(dtype=1)
    info.tensor_shape.dim.add().size = -1
    info.tensor_shape.dim.add().size = 3
    # shapes are TensorFlow's to take or refuse, as in TF Serving: no exception
    for dims in ([5, 3], [5, 2], [5], [], [1] * 40):
        input_specs.check_input("x", info, dims, dtype=1)
    strings = meta_graph_pb2.TensorInfo(dtype=7)
    strings.tensor_shape.CopyFrom(info.tensor_shape)
    input_specs.check_input("s", strings, [1] * 32)  # up to 32 dimensions: TensorFlow's
    deep = meta_graph_pb2.TensorInfo(dtype=7)
    for size in [-1, 3] + [1] * 31:
        deep.tensor_shape.dim.add().size = size
    dim = r"for input 's', which has shape \[\?,3,1,1,1,1,1,1,...\] \(dimension 1: 2 != 3\)$"
    with pytest.raises(errors.ServingFailure, match=dim):
        input_specs.check_input("s", deep, [5, 2] + [1] * 31)
    rank = r"Cannot feed value of shape \[1,1,1,1,1,1,1,1,...\] \(rank 33\) for input 's', which"
    with pytest.raises(errors.ServingFailure, match=rank):
        input_specs.check_input("s", strings, [1] * 33)
    any_rank = meta_graph_pb2.TensorInfo(dtype=7)
    any_rank.tensor_shape.unknown_rank = True
    input_specs.check_input("s", any_rank, [1] * 64)
    with pytest.raises(errors.ServingFailure, match=r"rank 255 is above TensorFlow's limit of 254"):
        input_specs.check_input("s", any_rank, [1] * 255)
    failure = pytest.raises(errors.ServingFailure, match=r"to be string but int64 is provided$")
    with failure as info_exc:
        input_specs.check_input("s", any_rank, dtype=9)
    assert info_exc.value.grpc_code == "INVALID_ARGUMENT" and info_exc.value.status == 400


# ---------------------------------------------------------------------- lone surrogates
SURROGATE = "JSON Parse error: The surrogate pair in string is invalid. at offset: {}"


@pytest.mark.parametrize("verb", ["classify", "regress", "predict"])
@pytest.mark.parametrize(
    "body",
    [
        rb'{"signature_name": "classify", "examples": [{"x": "\ud800"}]}',
        rb'{"signature_name": "classify", "examples": [{"\ud800": [1.0, 2.0, 3.0]}]}',
        rb'{"signature_name": "\udfff", "examples": [{"x": [1.0, 2.0, 3.0]}]}',
        rb'{"instances": [{"x": "\ud800\u0041"}]}',
        rb'{"inputs": {"\udbff": [[1.0, 2.0, 3.0]]}}',
    ],
    ids=["value", "key", "signature-low", "high-then-not-low", "high-at-end"],
)
def test_lone_surrogates_are_rapidjsons_parse_error(toy_server, verb, body):
    """Never a 500 with a Python UnicodeEncodeError: rapidjson (TF Serving's parser) refuses an
    unpaired surrogate with kParseErrorStringUnicodeSurrogateInvalid at the offset of the
    escape's backslash."""
    offset = body.index(b"\\u")
    r = requests.post(f"{toy_server.url}/v1/models/toy:{verb}", data=body, timeout=30)
    assert_error(r, 400, SURROGATE.format(offset))


def test_surrogate_scan_follows_rapidjson():
    assert json_parse.surrogate_error_offset(rb'["\ud83d\ude00", "\\ud800"]') is None  # a pair
    assert json_parse.surrogate_error_offset(rb'["ok", "\ud83d\\ude00"]') == 8  # \\ is a backslash
    assert json_parse.surrogate_error_offset(rb'["\ud83d\ud83d"]') == 2
    assert json_parse.parse_request_body(rb'{"a": "\ud83d\ude00"}') == {"a": "\U0001f600"}
    # a syntax error before the surrogate is reported first, as rapidjson stops there
    with pytest.raises(errors.ServingFailure, match=r"Invalid value\. at offset: 6"):
        json_parse.parse_request_body(rb'{"a": x, "b": "\ud800"}')


# -------------------------------------------------------------------- 500s carry no Python text
def test_a_server_bug_is_500_without_the_exception_and_logged(toy_server, monkeypatch, caplog):
    ms = toy_server.model_server

    def broken(*args, **kwargs):
        raise RuntimeError("secret internal detail")

    monkeypatch.setattr(ms, "status", broken)
    monkeypatch.setattr(ms, "status_response", broken)
    with caplog.at_level(logging.ERROR):
        r = requests.get(f"{toy_server.url}/v1/models/toy", timeout=30)
        assert_error(r, 500, errors.INTERNAL_ERROR_MESSAGE)
        with start_grpc_server(ms) as rpc, grpc.insecure_channel(rpc.target) as channel:
            code, details = rpc_failure(
                model_service_pb2_grpc.ModelServiceStub(channel).GetModelStatus,
                get_model_status_pb2.GetModelStatusRequest(model_spec={"name": "toy"}),
                timeout=30,
            )
    assert (code, details) == (grpc.StatusCode.INTERNAL, errors.INTERNAL_ERROR_MESSAGE)
    assert "RuntimeError" not in r.text and "secret" not in details
    logged = {rec.name for rec in caplog.records if rec.exc_info and "secret" in rec.exc_text}
    assert logged >= {"memgraph_tf.serving.rest_api", "memgraph_tf.serving.grpc_server"}


def test_answers_holding_a_lone_surrogate_are_still_written():
    """Defence in depth: a message that quotes a string the parser should have refused is written
    with the surrogate escaped, never a 500."""

    class Echo:
        max_examples = 10

        def parse_json(self, body):
            raise errors.ServingFailure(400, "bad key '\ud800'")

    status, body = rest_api.handle_bytes(Echo(), "POST", "/v1/models/m:predict", b"{}")
    assert status == 400 and json.loads(body) == {"error": "bad key '\ud800'"}
    assert np.frombuffer(body, np.uint8).max() < 128
