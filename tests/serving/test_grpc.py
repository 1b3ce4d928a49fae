"""gRPC: TF Serving's PredictionService / ModelService served by memgraph_tf.serving.grpc_server
over the same ModelServer as the REST server, called through the stubs generated in
tensorflow-serving-api and through GrpcServingClient (the REST client's twin)."""

from __future__ import annotations

import logging
import math
import random
import re
import socket
import threading
import time
from concurrent import futures

import grpc
import numpy as np
import pytest
from tensorflow_serving.apis import (
    classification_pb2,
    get_model_metadata_pb2,
    get_model_status_pb2,
    inference_pb2,
    model_management_pb2,
    model_service_pb2_grpc,
    predict_pb2,
    prediction_service_pb2_grpc,
    regression_pb2,
)

from memgraph_tf import errors
from memgraph_tf.serving import grpc_codec
from memgraph_tf.serving.bundle import BundleConfig
from memgraph_tf.serving.client import ServingClient
from memgraph_tf.serving.grpc_client import GrpcServingClient
from memgraph_tf.serving.grpc_server import start_grpc_server

logger = logging.getLogger(__name__)

X = np.array([[1.0, 2.0, 3.0], [0.5, -1.0, 2.0], [0.0, 0.0, 0.25]], np.float32)
MAX_EXAMPLES = 16
MAX_MESSAGE_BYTES = 256 * 1024
MAX_ELEMENTS = 10_000
PS = "/tensorflow.serving.PredictionService/"
MS = "/tensorflow.serving.ModelService/"


def softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def assert_same_answer(by_rest, by_grpc, where: str = "answer") -> None:
    """Equal structure, keys, strings, ints and bools; floats equal up to REST's printing (TF
    Serving writes float32 with six significant digits when they read back the same, gRPC sends
    the float32 itself)."""
    if isinstance(by_rest, float) or isinstance(by_grpc, float):
        assert isinstance(by_grpc, (int, float)) and not isinstance(by_grpc, bool), where
        assert math.isclose(by_rest, by_grpc, rel_tol=1e-5, abs_tol=1e-30), (
            f"{where}: {by_rest} != {by_grpc}"
        )
    elif isinstance(by_rest, dict):
        assert isinstance(by_grpc, dict) and sorted(by_rest) == sorted(by_grpc), (
            f"{where}: keys {sorted(by_rest)} != {sorted(by_grpc)}"
        )
        for k in by_rest:
            assert_same_answer(by_rest[k], by_grpc[k], f"{where}[{k!r}]")
    elif isinstance(by_rest, (list, tuple)):
        assert type(by_grpc) is type(by_rest) and len(by_grpc) == len(by_rest), (
            f"{where}: {type(by_rest).__name__} of {len(by_rest)} != {by_grpc!r:.200}"
        )
        for i, (a, b) in enumerate(zip(by_rest, by_grpc)):
            assert_same_answer(a, b, f"{where}[{i}]")
    else:
        assert type(by_grpc) is type(by_rest) and by_grpc == by_rest, (
            f"{where}: {by_rest!r} != {by_grpc!r}"
        )


def test_the_comparison_sees_differences():
    assert_same_answer({"a": [("x", 0.123456)]}, {"a": [("x", 0.12345600128173828)]})
    for rest, rpc in [
        ({"a": 1}, {"b": 1}),
        ([1, 2], [1]),
        (0.5, 0.51),
        ("x", "y"),
        (1, True),
        ([("x", 1.0)], [["x", 1.0]]),
    ]:
        with pytest.raises(AssertionError):
            assert_same_answer(rest, rpc)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rpc_failure(fn, *args, **kwargs) -> tuple[grpc.StatusCode, str]:
    """(code, details) of a call that must fail."""
    with pytest.raises(grpc.RpcError) as info:
        fn(*args, **kwargs)
    return info.value.code(), info.value.details()


# ------------------------------------------------------------------------------------ fixtures
@pytest.fixture(scope="module")
def toy_grpc(toy_server):
    """gRPC over the very ModelServer the REST toy_server answers with (versions 1, 2; label
    stable=1), with small limits."""
    with start_grpc_server(
        toy_server.model_server,
        max_examples=MAX_EXAMPLES,
        max_receive_message_bytes=MAX_MESSAGE_BYTES,
        max_tensor_elements=MAX_ELEMENTS,
    ) as running:
        running.rest = toy_server
        channel = grpc.insecure_channel(running.target)
        running.stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
        running.model_stub = model_service_pb2_grpc.ModelServiceStub(channel)
        running.channel = channel
        yield running
        channel.close()


class FakeGraph:
    """A graph source: blobs by node id (a missing id is a ValueError), or a planned failure."""

    def __init__(self, table: dict[int, bytes]):
        self.table = table
        self.fail: BaseException | None = None

    def sample_blobs_per_node(self, ids, fanouts, properties, options):
        if self.fail is not None:
            raise self.fail
        missing = [i for i in ids if i not in self.table]
        if missing:
            raise ValueError(f"no node with id {missing[0]}")
        return [self.table[i] for i in ids]


@pytest.fixture(scope="module")
def sage_pair(sage_op_bundle, sage):
    """The session's C++-op sage bundle (REST/gRPC equivalence does not depend on the decoder)
    served over REST and gRPC from one ModelServer that has a graph source (the node_id path),
    plus the Keras model's own scores for its node blobs."""
    from memgraph_tf.serving.model_server import ModelServer
    from memgraph_tf.serving.server import start_server

    model = sage_op_bundle.model
    blobs, feats = sage.blobs(5, seed=11)
    graph = FakeGraph({100 + i: b for i, b in enumerate(blobs)})
    ms = ModelServer(sage_op_bundle.path, graph_source=graph, warmup=False)
    with start_server(ms) as rest, start_grpc_server(ms, max_examples=MAX_EXAMPLES) as rpc:
        rpc.rest, rpc.graph, rpc.blobs, rpc.model_server = rest, graph, blobs, ms
        rpc.keras_scores = model(feats).numpy()
        yield rpc


# ------------------------------------------------------------------ same answers, REST and gRPC
@pytest.mark.parametrize(
    "select", [{}, {"version": 1}, {"label": "stable"}], ids=["latest", "version", "label"]
)
def test_rest_and_grpc_give_the_same_answers(toy_grpc, toy, select):
    calls = {
        "classify": lambda c: c.classify([{"x": row} for row in X]),
        "classify with context": lambda c: c.classify(
            [{"x": row} for row in X], context={"unused": [1, 2]}
        ),
        "regress": lambda c: c.regress([{"x": row} for row in X], signature_name="regress"),
        "predict rows": lambda c: c.predict([row for row in X]),
        "predict columns": lambda c: c.predict(inputs={"x": X}),
        "predict one unnamed input": lambda c: c.predict(inputs=X.tolist()),
        "status": lambda c: c.status(),
        "metadata": lambda c: c.metadata(),
    }
    with (
        ServingClient(toy_grpc.rest.url, "toy", **select) as rest,
        GrpcServingClient(toy_grpc.target, "toy", **select) as rpc,
    ):
        answers = {name: (call(rest), call(rpc)) for name, call in calls.items()}
    for name, (by_rest, by_grpc) in answers.items():
        assert_same_answer(by_rest, by_grpc, name)
    # ... and the shared answers are the model's (not equal by both being empty or wrong)
    version = 2 if not select else 1
    by_rest, _ = answers["classify"]
    np.testing.assert_allclose(
        [[s for _, s in r] for r in by_rest], softmax(toy.in_process(version, X)), atol=1e-5
    )
    np.testing.assert_allclose(answers["regress"][0], toy.in_process(version, X).sum(1), atol=1e-5)
    np.testing.assert_allclose(
        answers["predict columns"][0]["logits"], toy.in_process(version, X), atol=1e-5
    )
    status = answers["status"][0]["model_version_status"]
    assert [s["version"] for s in status] == (["2", "1"] if not select else ["1"])
    assert answers["metadata"][0]["model_spec"]["version"] == str(version)


def test_rest_and_grpc_same_answers_on_an_exported_bundle(sage_pair, sage):
    blobs = sage_pair.blobs
    with (
        ServingClient(sage_pair.rest.url, "sage") as rest,
        GrpcServingClient(sage_pair.target, "sage") as rpc,
    ):
        pairs = {
            "classify blobs": (rest.classify(blobs), rpc.classify(blobs)),
            "classify node ids": (
                rest.classify([{"node_id": 100 + i} for i in range(5)]),
                rpc.classify([{"node_id": 100 + i} for i in range(5)]),
            ),
            "predict blobs": (rest.predict(blobs), rpc.predict(blobs)),
            "bundle config": (rest.bundle_config(), rpc.bundle_config()),
            "sampling config": (rest.sampling_config(), rpc.sampling_config()),
            "status": (rest.status(), rpc.status()),
            "metadata": (rest.metadata(), rpc.metadata()),
        }
    for name, (by_rest, by_grpc) in pairs.items():
        if isinstance(by_rest, BundleConfig):
            assert by_grpc == by_rest, name
        else:
            assert_same_answer(by_rest, by_grpc, name)
    by_blob = [[s for _, s in row] for row in pairs["classify blobs"][1]]
    np.testing.assert_allclose(by_blob, sage_pair.keras_scores, atol=1e-5)
    assert pairs["classify node ids"][1] == pairs["classify blobs"][1]  # node id -> same blob
    assert [[lbl for lbl, _ in row] for row in pairs["classify blobs"][1]] == [
        list(sage.classes)
    ] * 5
    assert [p["classes"] for p in pairs["predict blobs"][1]] == [
        sage.classes[i] for i in sage_pair.keras_scores.argmax(1)
    ]
    assert pairs["sampling config"][1]["fanouts"] == list(sage.fanouts)


def test_blob_examples_are_the_mapping_examples_and_split_like_them(sage_pair, recorded_calls):
    """Blobs are framed straight into their bytes feature: the server gets the very tf.Examples
    that the mapping form {blob_feature_key: blob} gives, in one request or split by
    max_request_bytes."""
    blobs = sage_pair.blobs
    limit = 2 * max(len(b) for b in blobs) + 1100  # at most 2 blobs per request
    with recorded_calls(
        sage_pair.model_server,
        "run_classify",
        lambda mv, serialized, signature_name: list(serialized),
    ) as seen:
        with GrpcServingClient(sage_pair.target, "sage") as rpc:
            whole = rpc.classify(blobs)
            key = rpc.blob_feature_key
            as_maps = rpc.classify([{key: b} for b in blobs])
        with GrpcServingClient(sage_pair.target, "sage", max_request_bytes=limit) as rpc:
            split = rpc.classify([memoryview(b) for b in blobs])
    assert len(seen) == 2 + -(-len(blobs) // 2)
    assert seen[0] == seen[1] and [x for part in seen[2:] for x in part] == seen[0]
    assert whole == as_maps == split


def test_classify_nodes_takes_the_grpc_client(sage_pair):
    from memgraph_tf.serving.client import classify_nodes

    ids = [104, 100, 102]
    with (
        ServingClient(sage_pair.rest.url, "sage") as rest,
        GrpcServingClient(sage_pair.target, "sage") as rpc,
    ):
        by_rest = classify_nodes(sage_pair.graph, rest, ids)
        by_grpc = classify_nodes(sage_pair.graph, rpc, ids)
    assert [(n, lbl) for n, lbl, _ in by_grpc] == [(n, lbl) for n, lbl, _ in by_rest]
    np.testing.assert_allclose(
        [s for *_, s in by_grpc], sage_pair.keras_scores[[4, 0, 2]].max(1), rtol=1e-6
    )


def test_concurrent_grpc_calls_share_one_channel(toy_grpc, toy):
    want = softmax(toy.in_process(2, X))
    with GrpcServingClient(toy_grpc.target, "toy") as c, futures.ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda i: c.classify([{"x": X[i % 3]}])[0], range(48)))
    for i, r in enumerate(results):
        np.testing.assert_allclose([s for _, s in r], want[i % 3], atol=1e-5)


# ------------------------------------------------------------------------- the raw stubs
def _classify_request(**spec) -> classification_pb2.ClassificationRequest:
    req = classification_pb2.ClassificationRequest()
    req.model_spec.name = spec.pop("name", "toy")
    for k, v in spec.items():
        if k == "version":
            req.model_spec.version.value = v
        else:
            setattr(req.model_spec, k, v)
    return req


def test_stub_classify_with_context_names_what_ran(toy_grpc, toy):
    req = _classify_request(version_label="stable", signature_name="classify")
    with_ctx = req.input.example_list_with_context
    with_ctx.context.features.feature["x"].float_list.value.extend([9.0, 9.0, 9.0])
    with_ctx.examples.add().features.feature["x"].float_list.value.extend(X[0].tolist())
    with_ctx.examples.add()  # no x of its own: the context's x
    resp = toy_grpc.stub.Classify(req, timeout=30)
    assert (
        resp.model_spec.name,
        resp.model_spec.version.value,
        resp.model_spec.signature_name,
    ) == ("toy", 1, "classify")
    got = [[(c.label, c.score) for c in row.classes] for row in resp.result.classifications]
    want = softmax(toy.in_process(1, np.array([X[0], [9.0, 9.0, 9.0]], np.float32)))
    assert [[lbl for lbl, _ in row] for row in got] == [toy.labels] * 2
    np.testing.assert_allclose([[s for _, s in row] for row in got], want, atol=1e-5)


def test_stub_regress_and_predict_with_output_filter(toy_grpc, toy):
    req = regression_pb2.RegressionRequest()
    req.model_spec.name, req.model_spec.signature_name = "toy", "regress"
    for row in X:
        req.input.example_list.examples.add().features.feature["x"].float_list.value.extend(row)
    resp = toy_grpc.stub.Regress(req, timeout=30)
    np.testing.assert_allclose(
        [r.value for r in resp.result.regressions], toy.in_process(2, X).sum(1), atol=1e-5
    )
    p = predict_pb2.PredictRequest()
    p.model_spec.name = "toy"
    p.model_spec.version.value = 1
    grpc_codec.array_to_tensor(X, p.inputs["x"])
    p.output_filter.append("logits")
    resp = toy_grpc.stub.Predict(p, timeout=30)
    assert list(resp.outputs) == ["logits"]
    assert resp.model_spec.signature_name == "serving_default"
    assert resp.outputs["logits"].dtype == 1  # DT_FLOAT
    np.testing.assert_allclose(
        grpc_codec.tensor_to_array(resp.outputs["logits"], "logits", 100),
        toy.in_process(1, X),
        atol=1e-5,
    )


def test_predict_answers_in_the_typed_fields_as_tf_serving_does(toy_grpc, toy):
    """TF Serving's ``RunPredict`` (servables/tensorflow/predict_util.cc) answers with
    ``PredictResponseTensorSerializationOption::kAsProtoField`` -- ``Tensor::AsProtoField``
    (tensorflow/core/framework/tensor.cc), every element in the dtype's typed field -- unless the
    server is set up with ``kAsProtoContent`` (model_servers/server_core.h: the default is
    ``kAsProtoField``). A client that reads ``outputs["logits"].float_val``, as TF Serving's own
    tests do, gets the values."""
    p = _predict({"x": _tensor(X)})
    p.model_spec.version.value = 1
    logits = toy_grpc.stub.Predict(p, timeout=30).outputs["logits"]
    want = toy.in_process(1, X)
    assert logits.tensor_content == b""
    assert [d.size for d in logits.tensor_shape.dim] == list(want.shape)
    np.testing.assert_allclose(np.array(logits.float_val).reshape(want.shape), want, atol=1e-5)


@pytest.mark.parametrize(
    "arr, field, values",
    [
        (np.array([[1.5, -2.0], [0.0, 3.25]], np.float32), "float_val", [1.5, -2.0, 0.0, 3.25]),
        (np.array([0.1, 1e300]), "double_val", [0.1, 1e300]),
        (np.array([7, -7], np.int32), "int_val", [7, -7]),
        (np.array([-128, 5], np.int8), "int_val", [-128, 5]),
        (np.array([255], np.uint8), "int_val", [255]),
        (np.array([65535], np.uint16), "int_val", [65535]),
        (np.array([2**62, -1], np.int64), "int64_val", [2**62, -1]),
        (np.array([True, False]), "bool_val", [True, False]),
        (np.array([1.5], np.float16), "half_val", [0x3E00]),  # the half's bits
        (np.array([2**32 - 1], np.uint32), "uint32_val", [2**32 - 1]),
        (np.array([2**64 - 1], np.uint64), "uint64_val", [2**64 - 1]),
        (np.array([b"a", b"\xff"], dtype=object), "string_val", [b"a", b"\xff"]),
        (np.zeros((0, 3), np.float32), "float_val", []),
        (np.ones((2, 2), np.float32)[:, ::-1].T, "float_val", [1.0] * 4),  # not contiguous
    ],
)
def test_as_proto_field_writes_each_dtype_as_tensorflows_as_proto_field(arr, field, values):
    """tensor.cc ``ToProtoField`` / ``ProtoHelper<T>``: int8/int16/uint8/uint16/int32 in
    ``int_val``, a half's bits in ``half_val``, all elements written (no trailing repeats dropped),
    nothing in ``tensor_content``; :func:`tensor_to_array` reads it back to the same array."""
    t = grpc_codec.array_to_tensor(arr, as_proto_field=True)
    assert t.tensor_content == b""
    assert list(getattr(t, field)) == values
    assert [d.size for d in t.tensor_shape.dim] == list(arr.shape)
    back = grpc_codec.tensor_to_array(t, "t", 100)
    assert back.dtype == arr.dtype and back.shape == arr.shape
    assert back.tolist() == arr.tolist()


class ContentForm(prediction_service_pb2_grpc.PredictionServiceServicer):
    """A TF Serving set up with ``kAsProtoContent``: forwards to a real server and rewrites each
    Predict output into ``tensor_content``."""

    def __init__(self, stub):
        self.stub = stub

    def GetModelMetadata(self, request, context):  # noqa: N802 -- the servicer's method name
        return self.stub.GetModelMetadata(request, timeout=30)

    def Predict(self, request, context):  # noqa: N802 -- the servicer's method name
        resp = self.stub.Predict(request, timeout=30)
        for key in list(resp.outputs):
            arr = grpc_codec.tensor_to_array(resp.outputs[key], key, 10**6)
            del resp.outputs[key]
            grpc_codec.array_to_tensor(arr, resp.outputs[key])
        return resp


def test_the_client_reads_typed_fields_and_tensor_content_alike(toy_grpc, toy, scripted):
    """GrpcServingClient reads a Predict answer in either form a real TF Serving may send."""
    proxy = ContentForm(toy_grpc.stub)
    with (
        GrpcServingClient(toy_grpc.target, "toy", version=1) as direct,
        GrpcServingClient(scripted(proxy), "toy", version=1) as content,
    ):
        want = direct.predict(inputs={"x": X})
        assert content.predict(inputs={"x": X}) == want
        assert content.predict([row for row in X]) == direct.predict([row for row in X])
    req = _predict({"x": _tensor(X)})
    req.model_spec.version.value = 1
    raw = proxy.Predict(req, None)
    # it did answer in the other form
    assert len(raw.outputs["logits"].tensor_content) == toy.in_process(1, X).size * 4
    assert len(raw.outputs["logits"].float_val) == 0
    np.testing.assert_allclose(want["logits"], toy.in_process(1, X), atol=1e-5)


def test_stub_metadata_and_status(toy_grpc):
    m = get_model_metadata_pb2.GetModelMetadataRequest()
    m.model_spec.name = "toy"
    m.metadata_field.append("signature_def")
    resp = toy_grpc.stub.GetModelMetadata(m, timeout=30)
    sdm = get_model_metadata_pb2.SignatureDefMap()
    assert resp.metadata["signature_def"].Unpack(sdm)
    assert sorted(sdm.signature_def) == ["classify", "regress", "serving_default"]
    assert resp.model_spec.version.value == 2
    s = get_model_status_pb2.GetModelStatusRequest()
    s.model_spec.name = "toy"
    s.model_spec.version.value = 1
    status = toy_grpc.model_stub.GetModelStatus(s, timeout=30)
    assert [(v.version, v.state, v.status.error_code) for v in status.model_version_status] == [
        (1, get_model_status_pb2.ModelVersionStatus.AVAILABLE, 0)
    ]


def _predict(inputs: dict, output_filter=(), **spec) -> predict_pb2.PredictRequest:
    p = predict_pb2.PredictRequest()
    p.model_spec.name = "toy"
    for k, v in spec.items():
        setattr(p.model_spec, k, v)
    for k, v in inputs.items():
        p.inputs[k].CopyFrom(v)
    p.output_filter.extend(output_filter)
    return p


def _tensor(arr) -> object:
    return grpc_codec.array_to_tensor(np.asarray(arr))


def _huge_shape():
    t = _tensor(np.zeros((1, 3), np.float32))
    t.tensor_content = b""
    t.tensor_shape.dim[0].size = 2**40
    return t


def _examples(
    n: int, signature_name="classify", **features
) -> classification_pb2.ClassificationRequest:
    req = _classify_request(signature_name=signature_name)
    for _ in range(n):
        ex = req.input.example_list.examples.add()
        for k, v in features.items():
            ex.features.feature[k].float_list.value.extend(v)
    return req


def _metadata(*fields, name="toy"):
    m = get_model_metadata_pb2.GetModelMetadataRequest()
    m.model_spec.name = name
    m.metadata_field.extend(fields)
    return m


def _status(**spec):
    s = get_model_status_pb2.GetModelStatusRequest()
    s.model_spec.name = spec.pop("name", "toy")
    if "version" in spec:
        s.model_spec.version.value = spec["version"]
    return s


INVALID, NOT_FOUND = grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.NOT_FOUND
STUB_ERRORS = [
    (
        "unknown model",
        "Classify",
        lambda: _classify_request(name="nope"),
        NOT_FOUND,
        "Servable not found for request: Latest(nope)",
    ),
    (
        "unknown version",
        "Classify",
        lambda: _classify_request(version=7),
        NOT_FOUND,
        "Servable not found for request: Specific(toy, 7)",
    ),
    (
        "unknown label",
        "Classify",
        lambda: _classify_request(version_label="beta"),
        INVALID,
        "Unrecognized servable version label: beta",
    ),
    (
        "no model spec",
        "Classify",
        classification_pb2.ClassificationRequest,
        INVALID,
        "Missing ModelSpec",
    ),
    (
        "no input",
        "Classify",
        lambda: _classify_request(signature_name="classify"),
        INVALID,
        "Input is empty.",
    ),
    (
        "classify signature missing",
        "Classify",
        lambda: _examples(1, signature_name="nope", x=[1.0, 2.0, 3.0]),
        INVALID,
        "No signature was found with the name: nope",
    ),
    (
        "too many examples",
        "Classify",
        lambda: _examples(MAX_EXAMPLES + 1, x=[1.0, 2.0, 3.0]),
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        f"Request holds {MAX_EXAMPLES + 1} examples, above this server's limit of {MAX_EXAMPLES} "
        f"per request (max_examples, memgraph-tf serve --max-examples)",
    ),
    (
        "feature of the wrong length",
        "Classify",
        lambda: _examples(1, x=[1.0, 2.0]),
        INVALID,
        "Key: x, Index: 0.  Number of float values != expected.  "
        "Values size: 2 but output shape: [3]",
    ),
    (
        "predict signature missing",
        "Predict",
        lambda: _predict({"x": _tensor(X)}, signature_name="nope"),
        grpc.StatusCode.FAILED_PRECONDITION,
        'Serving signature key "nope" not found.',
    ),
    (
        "predict input names",
        "Predict",
        lambda: _predict({"y": _tensor(X)}),
        INVALID,
        "input size does not match signature: 1!=1 len({y}) != len({x}). Sent extra: {y}. "
        "Missing but required: {x}.",
    ),
    (
        "predict dtype",
        "Predict",
        lambda: _predict({"x": _tensor([b"a"])}),
        INVALID,
        # the session's words (predict_util_test.cc InputTensorsHaveWrongType), naming the input
        "Expects input 'x' to be float but string is provided",
    ),
    (
        "predict shape",
        "Predict",
        lambda: _predict({"x": _tensor(np.zeros((2, 4), np.float32))}),
        INVALID,
        # handed to TensorFlow as TF Serving hands it to the session (predict_util.cc checks
        # input names only): the model's MatMul refuses it
        "Matrix size-incompatible: In[0]: [2,4], In[1]: [3,2]\n\t "
        "[[{{node StatefulPartitionedCall/add}}]]",
    ),
    (
        "predict huge shape",
        "Predict",
        lambda: _predict({"x": _huge_shape()}),
        INVALID,
        f"input 'x': a tensor of shape [1099511627776, 3] holds 3298534883328 elements, above the "
        f"server's max_tensor_elements={MAX_ELEMENTS}",
    ),
    (
        "predict unknown output",
        "Predict",
        lambda: _predict({"x": _tensor(X)}, output_filter=["logits", "nope"]),
        INVALID,
        "output tensor alias not found in signature: nope Outputs expected to be in the "
        "set {label_bytes,logits}.",
    ),
    (
        "predict repeated output",
        "Predict",
        lambda: _predict({"x": _tensor(X)}, output_filter=["logits", "logits"]),
        INVALID,
        "duplicate output tensor alias: logits",
    ),
    (
        "metadata without fields",
        "GetModelMetadata",
        _metadata,
        INVALID,
        "GetModelMetadataRequest must specify at least one metadata_field",
    ),
    (
        "metadata field",
        "GetModelMetadata",
        lambda: _metadata("signature_def", "weights"),
        INVALID,
        "Metadata field weights is not supported",
    ),
    (
        "metadata unknown model",
        "GetModelMetadata",
        lambda: _metadata("signature_def", name="m"),
        NOT_FOUND,
        "Servable not found for request: Latest(m)",
    ),
    (
        "status unknown model",
        "GetModelStatus",
        lambda: _status(name="nope"),
        NOT_FOUND,
        "Could not find any versions of model nope",
    ),
    (
        "status unknown version",
        "GetModelStatus",
        lambda: _status(version=9),
        NOT_FOUND,
        "Could not find version 9 of model toy",
    ),
    (
        "status without spec",
        "GetModelStatus",
        get_model_status_pb2.GetModelStatusRequest,
        INVALID,
        "Missing ModelSpec",
    ),
    (
        "multi inference",
        "MultiInference",
        inference_pb2.MultiInferenceRequest,
        grpc.StatusCode.UNIMPLEMENTED,
        "MultiInference is not implemented by memgraph-tf serve",
    ),
    (
        "reload config",
        "HandleReloadConfigRequest",
        model_management_pb2.ReloadConfigRequest,
        grpc.StatusCode.UNIMPLEMENTED,
        "HandleReloadConfigRequest is not implemented",
    ),
]


@pytest.mark.parametrize("case", STUB_ERRORS, ids=[c[0] for c in STUB_ERRORS])
def test_stub_errors_carry_tf_serving_codes_and_messages(toy_grpc, case):
    _, method, make, code, message = case
    stub = (
        toy_grpc.model_stub
        if method in ("GetModelStatus", "HandleReloadConfigRequest")
        else toy_grpc.stub
    )
    got_code, details = rpc_failure(getattr(stub, method), make(), timeout=30)
    assert got_code == code, details
    assert details.startswith(message) or message in details, details


def test_message_above_the_size_limit_is_resource_exhausted(toy_grpc):
    req = _examples(1, x=[1.0, 2.0, 3.0])
    req.input.example_list.examples[0].features.feature["pad"].bytes_list.value.append(
        b"\0" * MAX_MESSAGE_BYTES
    )
    code, details = rpc_failure(toy_grpc.stub.Classify, req, timeout=30)
    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "larger than max" in details
    with (
        GrpcServingClient(toy_grpc.target, "toy", retries=0) as c,
        pytest.raises(errors.RequestTooLargeError, match=r"larger than max") as info,
    ):
        c.classify([{"x": [1.0, 2.0, 3.0], "pad": b"\0" * MAX_MESSAGE_BYTES}])
    assert info.value.status == 413 and info.value.grpc_code == "RESOURCE_EXHAUSTED"


def test_undecodable_bytes_are_invalid_argument_not_internal(toy_grpc):
    raw = toy_grpc.channel.unary_unary(PS + "Classify")
    code, details = rpc_failure(raw, b"\xff\xff\xff\xff", timeout=30)
    assert code == INVALID
    assert details.startswith(
        "Could not parse the request as tensorflow.serving.ClassificationRequest: DecodeError"
    )


# ------------------------------------------------------------------------- node ids over gRPC
def _node_request(*features: dict) -> classification_pb2.ClassificationRequest:
    req = classification_pb2.ClassificationRequest()
    req.model_spec.name = "sage"
    for feats in features:
        ex = req.input.example_list.examples.add()
        for k, v in feats.items():
            f = ex.features.feature[k]
            if isinstance(v, bytes):
                f.bytes_list.value.append(v)
            elif isinstance(v, float):
                f.float_list.value.append(v)
            else:
                f.int64_list.value.extend(v if isinstance(v, list) else [v])
    return req


def test_node_id_examples_errors(sage_pair):
    stub = prediction_service_pb2_grpc.PredictionServiceStub(
        grpc.insecure_channel(sage_pair.target)
    )
    ok = stub.Classify(_node_request({"node_id": 101}, {"blob": sage_pair.blobs[2]}), timeout=30)
    np.testing.assert_allclose(
        [[c.score for c in r.classes] for r in ok.result.classifications],
        sage_pair.keras_scores[[1, 2]],
        atol=1e-5,
    )
    cases = [
        (
            {"node_id": 1.5},
            INVALID,
            "examples[0].node_id: expected one int64 value, got float_list [1.5]",
        ),
        (
            {"node_id": [1, 2]},
            INVALID,
            "examples[0].node_id: expected one int64 value, got int64_list [1, 2]",
        ),
        (
            {"node_id": 100, "blob": sage_pair.blobs[0]},
            INVALID,
            "examples[0]: 'node_id' and 'blob' are both given; send one of them",
        ),
        ({"node_id": 999}, INVALID, "fetching node ids [999] from the graph: no node with id 999"),
    ]
    for feats, code, message in cases:
        got_code, details = rpc_failure(stub.Classify, _node_request(feats), timeout=30)
        assert (got_code, details) == (code, message)
    sage_pair.graph.fail = ConnectionRefusedError("graph down")
    try:
        got = rpc_failure(stub.Classify, _node_request({"node_id": 100}), timeout=30)
        with (
            GrpcServingClient(sage_pair.target, "sage", retries=0) as c,
            pytest.raises(errors.UnavailableError, match="the graph is unavailable") as info,
        ):
            c.classify([{"node_id": 100}])
    finally:
        sage_pair.graph.fail = None
    assert got == (grpc.StatusCode.UNAVAILABLE, "the graph is unavailable: graph down")
    assert (info.value.status, info.value.grpc_code) == (503, "UNAVAILABLE")


# ---------------------------------------------------------------------- client: typed errors
def test_client_errors_are_the_rest_clients_classes_with_the_servers_message(toy_grpc):
    calls = [
        (
            "unknown model",
            "nope",
            {},
            lambda c: c.classify([{"x": X[0]}]),
            errors.NotFoundError,
            404,
            "NOT_FOUND",
            r"^Servable not found for request: Latest\(nope\)$",
        ),
        (
            "unknown version",
            "toy",
            {"version": 9},
            lambda c: c.status(),
            errors.NotFoundError,
            404,
            "NOT_FOUND",
            r"^Could not find version 9 of model toy$",
        ),
        (
            "bad input",
            "toy",
            {},
            lambda c: c.classify([{"x": [1, 2, 3]}]),
            errors.BadRequestError,
            400,
            "INVALID_ARGUMENT",
            r"Data types don't match. Data type: int64 but expected type: float",
        ),
        (
            "unknown label",
            "toy",
            {"label": "beta"},
            lambda c: c.predict([X[0]]),
            errors.BadRequestError,
            400,
            "INVALID_ARGUMENT",
            r"^Unrecognized servable version label: beta$",
        ),
    ]
    for name, model, select, call, err_type, status, code, pattern in calls:
        with (
            GrpcServingClient(toy_grpc.target, model, **select) as rpc,
            pytest.raises(err_type, match=pattern.strip("^$")) as by_grpc,
        ):
            call(rpc)
        assert re.search(pattern, by_grpc.value.message), by_grpc.value.message
        assert (by_grpc.value.status, by_grpc.value.grpc_code) == (status, code), name
        assert by_grpc.value.url == toy_grpc.target
        with (
            ServingClient(toy_grpc.rest.url, model, **select) as rest,
            pytest.raises(err_type) as by_rest,
        ):
            call(rest)
        assert by_rest.value.message == by_grpc.value.message, name


def test_client_splits_requests_above_max_request_bytes(toy_grpc, toy, recorded_calls):
    many = np.tile(X, (20, 1))
    with (
        recorded_calls(
            toy_grpc.rest.model_server,
            "run_classify",
            lambda mv, serialized, signature_name: len(serialized),
        ) as sizes,
        GrpcServingClient(toy_grpc.target, "toy", max_request_bytes=1200) as c,
    ):
        results = c.classify([{"x": row} for row in many])
        cols = c.predict(inputs={"x": many})
    assert len(sizes) >= 3 and sum(sizes) == len(many) and max(sizes) <= MAX_EXAMPLES
    np.testing.assert_allclose(
        [[s for _, s in r] for r in results], softmax(toy.in_process(2, many)), atol=1e-5
    )
    np.testing.assert_allclose(cols["logits"], toy.in_process(2, many), atol=1e-5)
    with (
        GrpcServingClient(toy_grpc.target, "toy", max_request_bytes=100) as c,
        pytest.raises(
            errors.RequestTooLargeError,
            match=r"item 0 alone makes a request of \d+ bytes, above "
            r"max_request_bytes=100",
        ),
    ):
        c.classify([{"x": [0.5] * 50}])


# ---------------------------------------------------------------- client: retries and deadlines
class Scripted(prediction_service_pb2_grpc.PredictionServiceServicer):
    """Classify answers each planned status code once, in order, then succeeds; or sleeps."""

    def __init__(self, plan=(), sleep_s: float = 0.0):
        self.plan = list(plan)
        self.sleep_s = sleep_s
        self.times: list[float] = []

    def Classify(self, request, context):  # noqa: N802 -- the generated servicer's method name
        self.times.append(time.monotonic())
        if self.sleep_s:
            time.sleep(self.sleep_s)
        if self.plan:
            code = self.plan.pop(0)
            context.abort(code, f"planned {code.name}")
        resp = classification_pb2.ClassificationResponse()
        for _ in request.input.example_list.examples:
            row = resp.result.classifications.add()
            row.classes.add(label="a", score=0.25)
            row.classes.add(label="b", score=0.75)
        return resp


@pytest.fixture()
def scripted():
    servers = []

    def serve(servicer):
        server = grpc.server(futures.ThreadPoolExecutor(2))
        prediction_service_pb2_grpc.add_PredictionServiceServicer_to_server(servicer, server)
        port = server.add_insecure_port("127.0.0.1:0")
        server.start()
        servers.append(server)
        return f"127.0.0.1:{port}"

    yield serve
    for s in servers:
        s.stop(0)


OK_ROW = [("a", 0.25), ("b", 0.75)]


@pytest.mark.parametrize("code", [grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED])
def test_unavailable_and_server_deadline_are_retried_after_backoff(scripted, code):
    servicer = Scripted([code])
    with GrpcServingClient(scripted(servicer), "m", retries=2, backoff_s=0.2) as c:
        assert c.classify([b"blob"]) == [OK_ROW]
    assert len(servicer.times) == 2  # failed once, retried once
    assert servicer.times[1] - servicer.times[0] >= 0.2  # after backoff_s


@pytest.mark.parametrize(
    "code, err_type, status",
    [
        (grpc.StatusCode.INVALID_ARGUMENT, errors.BadRequestError, 400),
        (grpc.StatusCode.FAILED_PRECONDITION, errors.BadRequestError, 400),
        (grpc.StatusCode.NOT_FOUND, errors.NotFoundError, 404),
        (grpc.StatusCode.INTERNAL, errors.InternalServerError, 500),
        (grpc.StatusCode.UNIMPLEMENTED, errors.NotImplementedByServerError, 501),
        (grpc.StatusCode.RESOURCE_EXHAUSTED, errors.TooManyRequestsError, 429),
    ],
)
def test_other_codes_are_not_retried(scripted, code, err_type, status):
    servicer = Scripted([code])
    with (
        GrpcServingClient(scripted(servicer), "m", retries=3, backoff_s=0.01) as c,
        pytest.raises(err_type, match=f"HTTP {status}: planned {code.name}") as info,
    ):
        c.classify([b"blob"])
    assert len(servicer.times) == 1
    assert (info.value.status, info.value.grpc_code, info.value.message) == (
        status,
        code.name,
        f"planned {code.name}",
    )


def test_unavailable_until_retries_run_out(scripted):
    servicer = Scripted([grpc.StatusCode.UNAVAILABLE] * 5)
    with (
        GrpcServingClient(scripted(servicer), "m", retries=2, backoff_s=0.1) as c,
        pytest.raises(errors.UnavailableError, match="planned UNAVAILABLE"),
    ):
        c.classify([b"blob"])
    assert len(servicer.times) == 3
    gaps = [b - a for a, b in zip(servicer.times, servicer.times[1:])]
    assert gaps[0] >= 0.1 and gaps[1] >= 0.2, gaps  # backoff_s, then doubled


def test_own_deadline_is_a_timeout_and_not_retried(scripted):
    servicer = Scripted(sleep_s=1.0)
    with GrpcServingClient(scripted(servicer), "m", retries=3, timeout_s=5) as c:
        t0 = time.monotonic()
        with pytest.raises(errors.ServingTimeoutError, match="no answer within the deadline"):
            c.classify([b"blob"], timeout_s=0.3)  # the per-call deadline wins
        waited = time.monotonic() - t0
    assert 0.3 <= waited < 0.9 and len(servicer.times) == 1


def test_connection_refused_is_retried_then_a_connection_error():
    with GrpcServingClient(f"127.0.0.1:{free_port()}", "m", retries=2, backoff_s=0.1) as c:
        t0 = time.monotonic()
        with pytest.raises(
            errors.ServingConnectionError, match="cannot reach the server after 2 retries"
        ) as info:
            c.status()
        waited = time.monotonic() - t0
    assert waited >= 0.1 + 0.2 and info.value.grpc_code == "UNAVAILABLE"


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"target": "http://h:8500"}, r"target: expected a gRPC target"),
        ({"version": 1, "label": "a"}, r"expected at most one of them"),
        ({"timeout_s": 0}, r"timeout_s: expected a number > 0, got 0"),
        ({"retries": -1}, r"retries: expected an int >= 0, got -1"),
        ({"backoff_s": -0.5}, r"backoff_s: expected a number >= 0, got -0.5"),
        ({"max_request_bytes": 10}, r"max_request_bytes: expected an int >= 64, got 10"),
        ({"max_response_bytes": 63}, r"max_response_bytes: expected an int >= 64, got 63"),
    ],
)
def test_client_argument_errors_name_the_parameter(kwargs, match):
    args = {"target": "127.0.0.1:1", "model": "m", **kwargs}
    with pytest.raises(ValueError, match=match):
        GrpcServingClient(**args)


# ------------------------------------------------------------------------------ the server
def test_server_binds_loopback_and_refuses_a_port_in_use(toy_grpc, toy_server):
    assert toy_grpc.target.startswith("127.0.0.1:")
    with pytest.raises(OSError, match=rf"cannot bind the gRPC port 127.0.0.1:{toy_grpc.port}"):
        start_grpc_server(toy_server.model_server, port=toy_grpc.port)
    with pytest.raises(ValueError, match=r"max_workers: expected an int > 0, got 0"):
        start_grpc_server(toy_server.model_server, max_workers=0)


def test_idle_connections_are_closed(toy_server):
    with start_grpc_server(toy_server.model_server, idle_timeout_s=0.5) as srv:
        channel = grpc.insecure_channel(srv.target)
        states: list[grpc.ChannelConnectivity] = []
        changed = threading.Event()

        def watch(state):
            states.append(state)
            changed.set()

        channel.subscribe(watch, try_to_connect=False)
        stub = model_service_pb2_grpc.ModelServiceStub(channel)
        stub.GetModelStatus(_status(), timeout=30)
        t0 = time.monotonic()

        def idle_after_ready() -> bool:
            seen = list(states)  # callbacks arrive on gRPC's own thread
            return (
                grpc.ChannelConnectivity.READY in seen and seen[-1] == grpc.ChannelConnectivity.IDLE
            )

        while time.monotonic() - t0 < 10 and not idle_after_ready():
            changed.wait(0.5)
            changed.clear()
        waited_s = time.monotonic() - t0
        channel.close()
    # the server closed the idle connection (the client's own idle timeout is 30 minutes)
    assert idle_after_ready(), states
    assert waited_s < 5


# -------------------------------------------------------------------------------------- fuzz
REQUESTS = {
    PS + "Classify": classification_pb2.ClassificationRequest,
    PS + "Regress": regression_pb2.RegressionRequest,
    PS + "Predict": predict_pb2.PredictRequest,
    PS + "GetModelMetadata": get_model_metadata_pb2.GetModelMetadataRequest,
    PS + "MultiInference": inference_pb2.MultiInferenceRequest,
    MS + "GetModelStatus": get_model_status_pb2.GetModelStatusRequest,
    MS + "HandleReloadConfigRequest": model_management_pb2.ReloadConfigRequest,
}
WORDS = [
    "toy",
    "sage",
    "classify",
    "regress",
    "serving_default",
    "memgraph_tf_config",
    "x",
    "blob",
    "node_id",
    "inputs",
    "blobs",
    "unused",
    "signature_def",
    "stable",
    "logits",
    "scores",
    "classes",
    "",
]
INTS = [0, 1, 2, 3, 7, -1, 100, 101, 2**31 - 1, -(2**31), 2**40, 2**63 - 1, -(2**63)]


def _random_text(rng: random.Random) -> str:
    if rng.random() < 0.7:
        return rng.choice(WORDS)
    return "".join(
        chr(rng.choice([rng.randint(32, 126), rng.randint(0xA0, 0xD7FF)]))
        for _ in range(rng.randint(0, 12))
    )


def _random_scalar(field, rng: random.Random, blobs: list[bytes]):
    from google.protobuf.descriptor import FieldDescriptor as F

    t = field.type
    if t == F.TYPE_STRING:
        return _random_text(rng)
    if t == F.TYPE_BYTES:
        r = rng.random()
        if r < 0.3 and blobs:
            return rng.choice(blobs)
        if r < 0.5 and blobs:
            b = bytearray(rng.choice(blobs))
            for _ in range(rng.randint(1, 8)):
                b[rng.randrange(len(b))] = rng.randrange(256)
            return bytes(b)
        return rng.randbytes(rng.choice([0, 1, 4, 12, 40, 300]))
    if t == F.TYPE_BOOL:
        return rng.random() < 0.5
    if t in (F.TYPE_FLOAT, F.TYPE_DOUBLE):
        return rng.choice([0.0, 1.5, -2.0, 1e30, float("inf"), float("nan"), rng.gauss(0, 3)])
    if t == F.TYPE_ENUM:
        values = [v.number for v in field.enum_type.values]
        return rng.choice(values + [rng.randint(-3, 300)])
    bits = (
        32
        if t in (F.TYPE_INT32, F.TYPE_SINT32, F.TYPE_SFIXED32, F.TYPE_UINT32, F.TYPE_FIXED32)
        else 64
    )
    unsigned = t in (F.TYPE_UINT32, F.TYPE_FIXED32, F.TYPE_UINT64, F.TYPE_FIXED64)
    v = rng.choice(INTS + [rng.randint(-5, 40)])
    if unsigned:
        return abs(v) % (2**bits)
    return max(-(2 ** (bits - 1)), min(2 ** (bits - 1) - 1, v))


def _fill_random(msg, rng: random.Random, blobs: list[bytes], depth: int = 0) -> None:
    """Set a random subset of ``msg``'s fields (any message type) to random values."""
    from google.protobuf.descriptor import FieldDescriptor as F

    for field in msg.DESCRIPTOR.fields:
        if rng.random() < 0.35 or (depth > 5 and field.type == F.TYPE_MESSAGE):
            continue
        repeated = field.is_repeated
        try:
            if field.type == F.TYPE_MESSAGE and field.message_type.GetOptions().map_entry:
                container = getattr(msg, field.name)
                value_field = field.message_type.fields_by_name["value"]
                for _ in range(rng.randint(0, 3)):
                    key = _random_scalar(field.message_type.fields_by_name["key"], rng, blobs)
                    if value_field.type == F.TYPE_MESSAGE:
                        _fill_random(container[key], rng, blobs, depth + 1)
                    else:
                        container[key] = _random_scalar(value_field, rng, blobs)
            elif field.type == F.TYPE_MESSAGE:
                if repeated:
                    for _ in range(rng.choice([0, 1, 2, 3, 20])):
                        _fill_random(getattr(msg, field.name).add(), rng, blobs, depth + 1)
                else:
                    _fill_random(getattr(msg, field.name), rng, blobs, depth + 1)
                    if not getattr(msg, field.name).ByteSize():
                        getattr(msg, field.name).SetInParent()
            elif repeated:
                getattr(msg, field.name).extend(
                    _random_scalar(field, rng, blobs) for _ in range(rng.choice([0, 1, 2, 3, 9]))
                )
            else:
                setattr(msg, field.name, _random_scalar(field, rng, blobs))
        except (ValueError, TypeError):
            pass  # a value this field refuses (a closed enum, say): leave it unset


def _valid_requests(blobs: list[bytes]) -> list[tuple[int, str, bytes]]:
    """(server: 0 toy / 1 sage, method path, serialized request) that each succeed."""
    reg = regression_pb2.RegressionRequest()
    reg.model_spec.name, reg.model_spec.signature_name = "toy", "regress"
    reg.input.example_list.examples.add().features.feature["x"].float_list.value.extend(X[0])
    sage_predict = predict_pb2.PredictRequest()
    sage_predict.model_spec.name = "sage"
    grpc_codec.array_to_tensor(np.array(blobs[:2], dtype=object), sage_predict.inputs["blobs"])
    return [
        (0, PS + "Classify", _examples(2, x=[1.0, 2.0, 3.0]).SerializeToString()),
        (0, PS + "Regress", reg.SerializeToString()),
        (0, PS + "Predict", _predict({"x": _tensor(X)}).SerializeToString()),
        (0, PS + "GetModelMetadata", _metadata("signature_def").SerializeToString()),
        (0, MS + "GetModelStatus", _status().SerializeToString()),
        (
            1,
            PS + "Classify",
            _node_request({"blob": blobs[0]}, {"node_id": 101}).SerializeToString(),
        ),
        (1, PS + "Predict", sage_predict.SerializeToString()),
        (1, MS + "GetModelStatus", _status(name="sage").SerializeToString()),
    ]


def _mutate(data: bytes, rng: random.Random) -> bytes:
    b = bytearray(data)
    op = rng.random()
    if op < 0.3 and b:
        del b[rng.randrange(len(b)) :]
    elif op < 0.7 and b:
        for _ in range(rng.randint(1, 6)):
            b[rng.randrange(len(b))] = rng.randrange(256)
    else:
        pos = rng.randrange(len(b) + 1)
        b[pos:pos] = rng.randbytes(rng.randint(1, 16))
    return bytes(b)


#: The answers a fuzz case must never get: a server error, a dropped or timed-out call.
BAD_CODES = (
    grpc.StatusCode.INTERNAL,
    grpc.StatusCode.UNKNOWN,
    grpc.StatusCode.UNAVAILABLE,
    grpc.StatusCode.DEADLINE_EXCEEDED,
    grpc.StatusCode.CANCELLED,
    grpc.StatusCode.DATA_LOSS,
)


def test_fuzz_random_and_malformed_messages_never_internal(toy_grpc, sage_pair):
    """1,000 messages (random bytes, mutated valid requests, random field values for every request
    type) to both servers: every answer is OK or a client-error code, never INTERNAL, UNKNOWN or
    a dropped call, and both servers answer status afterwards."""
    rng = random.Random(20261123)
    blobs = sage_pair.blobs
    channels = [grpc.insecure_channel(t) for t in (toy_grpc.target, sage_pair.target)]
    valid = _valid_requests(blobs)
    messages: list[tuple[int, str, bytes, str]] = []
    methods = sorted(REQUESTS)
    for i in range(350):
        messages.append(
            (
                i % 2,
                rng.choice(methods),
                rng.randbytes(rng.choice([0, 1, 3, 10, 64, 500, 4000])),
                "bytes",
            )
        )
    for _ in range(250):  # one in five left intact: the valid requests still succeed
        server, path, data = rng.choice(valid)
        messages.append(
            (server, path, data if rng.random() < 0.2 else _mutate(data, rng), "mutated")
        )
    for i in range(400):
        path = rng.choice(methods)
        msg = REQUESTS[path]()
        _fill_random(msg, rng, blobs)
        messages.append((i % 2, path, msg.SerializeToString(), "fields"))
    rng.shuffle(messages)
    assert len(messages) >= 1000  # >= 1,000 gRPC messages (REST: test_rest_fuzz.py)
    counts: dict[str, int] = {}
    bad = []
    for server, path, data, kind in messages:
        call = channels[server].unary_unary(path)
        try:
            call(data, timeout=60)
            code = grpc.StatusCode.OK
            details = ""
        except grpc.RpcError as exc:
            code, details = exc.code(), exc.details()
        counts[code.name] = counts.get(code.name, 0) + 1
        if code in BAD_CODES:
            bad.append((kind, path, code.name, details, data[:80]))
    logger.info("fuzz: %d messages, answers by code: %s", len(messages), counts)
    assert bad == []
    # the fuzz reached the models, not only the parser
    assert counts.get("OK", 0) >= 20 and counts.get("INVALID_ARGUMENT", 0) >= 200, counts
    for ch, name in zip(channels, ("toy", "sage")):
        resp = model_service_pb2_grpc.ModelServiceStub(ch).GetModelStatus(
            _status(name=name), timeout=30
        )
        assert [v.state for v in resp.model_version_status][:1] == [
            get_model_status_pb2.ModelVersionStatus.AVAILABLE
        ]
        ch.close()


# with the 1,000 messages of the test above: >= 3,000 gRPC fuzz cases
GRPC_GRAMMAR_CASES = 2000


def test_fuzz_grammar_tensors_never_internal(toy_grpc, sage_pair, any_rank_base):
    """2,000 Predict requests from the tensor grammar (tests/serving/fuzz_grammar.py): every dtype
    number, ranks up to 300 (above 32, 64 and 254 often), dims 0 / -1 / 2**40, values in
    tensor_content or the typed fields in every count, against a string signature, a float one
    and one of unknown rank. No INTERNAL, UNKNOWN or dropped call (a 100-dimension shape answered
    INTERNAL, a 33-dimension string killed the server); the servers answer afterwards."""
    from memgraph_tf.serving.model_server import ModelServer
    from tests.serving.fuzz_grammar import tensor_proto

    rng = random.Random(20261125)
    any_ms = ModelServer(any_rank_base)
    with start_grpc_server(any_ms, max_tensor_elements=MAX_ELEMENTS) as any_rpc:
        channels = [grpc.insecure_channel(t) for t in (toy_grpc.target, sage_pair.target)]
        channels.append(grpc.insecure_channel(any_rpc.target))
        stubs = [prediction_service_pb2_grpc.PredictionServiceStub(c) for c in channels]
        targets = [
            (0, "toy", {"x": 1}),
            (1, "sage", {"blobs": 7}),
            (2, "anyrank", {"s": 7, "f": 1}),
        ]
        counts: dict[str, int] = {}
        bad = []
        for i in range(GRPC_GRAMMAR_CASES):
            server, model, inputs = rng.choice(targets)
            req = predict_pb2.PredictRequest()
            req.model_spec.name = model
            good = rng.random() < 0.3  # a request the signature takes, deep strings included
            if rng.random() < 0.1 and not good:
                req.model_spec.signature_name = rng.choice(["serving_default", "nope", "ü"])
            for key, dtype in inputs.items():
                if good:
                    dims = [1] * rng.choice([0, 1, 8, 32, 33, 40, 64])
                    if key == "x":
                        value = np.ones((rng.randint(1, 3), 3), np.float32)
                    elif key == "blobs":
                        value = np.array(rng.sample(sage_pair.blobs, 2), dtype=object)
                    elif key == "s":
                        value = np.full(dims, b"a", dtype=object)
                    else:
                        value = np.ones(dims, np.float32)
                    grpc_codec.array_to_tensor(value, req.inputs[key])
                elif rng.random() < 0.95:
                    want = dtype if rng.random() < 0.6 else None
                    req.inputs[key].CopyFrom(tensor_proto(rng, want))
            if not good and rng.random() < 0.05:
                req.inputs[rng.choice(["y", "blob", "S"])].CopyFrom(tensor_proto(rng))
            try:
                stubs[server].Predict(req, timeout=60)
                code, details = grpc.StatusCode.OK, ""
            except grpc.RpcError as exc:
                code, details = exc.code(), exc.details()
            counts[code.name] = counts.get(code.name, 0) + 1
            if code in BAD_CODES:
                shapes = {k: len(v.tensor_shape.dim) for k, v in req.inputs.items()}
                bad.append((i, model, code.name, details, shapes))
        logger.info(
            "grammar fuzz: %d Predict calls, answers by code: %s", GRPC_GRAMMAR_CASES, counts
        )
        assert bad == []
        assert counts.get("OK", 0) >= 50 and counts.get("INVALID_ARGUMENT", 0) >= 200, counts
        for ch, name in zip(channels, ("toy", "sage", "anyrank")):
            resp = model_service_pb2_grpc.ModelServiceStub(ch).GetModelStatus(
                _status(name=name), timeout=30
            )
            assert resp.model_version_status[0].state == (
                get_model_status_pb2.ModelVersionStatus.AVAILABLE
            )
            ch.close()
    any_ms.close()


# ------------------------------------------------------------------------------------ codec
def test_tensor_to_array_follows_tensorflows_from_proto():
    from tensorflow.core.framework import tensor_pb2

    t = tensor_pb2.TensorProto(dtype=1)  # DT_FLOAT [2, 3] from two values: last one repeats
    t.tensor_shape.dim.add().size = 2
    t.tensor_shape.dim.add().size = 3
    t.float_val.extend([1.0, 2.0])
    np.testing.assert_array_equal(grpc_codec.tensor_to_array(t, "t", 100), [[1, 2, 2], [2, 2, 2]])
    del t.float_val[:]
    np.testing.assert_array_equal(grpc_codec.tensor_to_array(t, "t", 100), np.zeros((2, 3)))
    i8 = tensor_pb2.TensorProto(dtype=6, int_val=[300, -1])  # DT_INT8 wraps like static_cast
    i8.tensor_shape.dim.add().size = 2
    assert grpc_codec.tensor_to_array(i8, "t", 100).tolist() == [44, -1]
    half = grpc_codec.array_to_tensor(np.array([1.5, -2.0], np.float16))
    assert grpc_codec.tensor_to_array(half, "t", 100).tolist() == [1.5, -2.0]
    for arr in (
        np.arange(6, dtype=np.int64).reshape(2, 3),
        np.array([True, False]),
        np.array([[b"a", b"\xff"]], dtype=object),
        np.float64(2.5),
        np.uint8([7]),
    ):
        back = grpc_codec.tensor_to_array(grpc_codec.array_to_tensor(arr), "t", 100)
        assert back.shape == np.shape(arr) and back.tolist() == np.asarray(arr).tolist()


@pytest.mark.parametrize(
    "edit, status, match",
    [
        (lambda t: setattr(t.tensor_shape, "unknown_rank", True), 400, r"t: .*unknown rank"),
        (
            lambda t: setattr(t.tensor_shape.dim[0], "size", -2),
            400,
            r"negative dimension in shape \[-2, 3\]",
        ),
        (
            lambda t: setattr(t, "tensor_content", b"\0" * 5),
            400,
            r"tensor_content holds 5 bytes, shape \[2, 3\] of DT_FLOAT needs 24",
        ),
        (lambda t: setattr(t, "dtype", 0), 400, r"t: the TensorProto has no dtype \(DT_INVALID\)"),
        (lambda t: setattr(t, "dtype", 8), 501, r"t: dtype DT_COMPLEX64 is not supported"),
        (
            lambda t: (setattr(t, "tensor_content", b""), t.float_val.extend([1.0] * 7)),
            400,
            r"7 values in float_val for shape \[2, 3\] \(6 elements\)",
        ),
        (
            lambda t: setattr(t.tensor_shape.dim[0], "size", 2**62),
            400,
            r"holds 13835058055282163712 elements, above the server's max_tensor_elements=100",
        ),
    ],
)
def test_tensor_to_array_refuses_bad_protos(edit, status, match):
    t = grpc_codec.array_to_tensor(np.zeros((2, 3), np.float32))
    edit(t)
    with pytest.raises(errors.ServingFailure, match=match) as info:
        grpc_codec.tensor_to_array(t, "t", 100)
    assert info.value.status == status


def test_example_features_follow_the_rest_clients_json_rules():
    ex = grpc_codec.example_from_features(
        {
            "b": b"\x00\x01",
            "s": "é",
            "i": 3,
            "t": True,
            "f": 2.5,
            "mixed": [1, 2.5],
            "ints": np.array([1, 2], np.int32),
            "floats": np.array([0.5], np.float64),
            "empty": [],
        }
    )
    f = ex.features.feature
    assert f["b"].bytes_list.value == [b"\x00\x01"] and f["s"].bytes_list.value == ["é".encode()]
    assert f["i"].int64_list.value == [3] and f["t"].int64_list.value == [1]
    assert f["f"].float_list.value == [2.5] and f["mixed"].float_list.value == [1.0, 2.5]
    assert f["ints"].int64_list.value == [1, 2] and f["floats"].float_list.value == [0.5]
    assert f["empty"].WhichOneof("kind") is None
    with pytest.raises(
        TypeError,
        match=r"feature 'n': expected a flat list, got an array of "
        r"shape \[2, 2\]",
    ):
        grpc_codec.example_from_features({"n": np.zeros((2, 2))})
    with pytest.raises(
        TypeError,
        match=r"feature 'm': expected bytes, str, bool, int, float or "
        r"a flat list of one kind of them, got list",
    ):
        grpc_codec.example_from_features({"m": [1, [2]]})
    with pytest.raises(
        ValueError,
        match=r"feature 'big': 18446744073709551615 is outside the "
        r"int64 range",
    ):
        grpc_codec.example_from_features({"big": 2**64 - 1})


# Blob lengths where a length varint inside the request grows a byte (127/128, 16383/16384,
# 2**21 - 1 / 2**21, for the blob and for each message around it), and ordinary ones.
WIRE_LENGTHS = sorted(
    {0, 1, 17_232, 2**21 + 3} | {edge + d for edge in (128, 16_384, 2**21) for d in range(-14, 3)}
)


def _protobuf_request(request_type, spec_fields, examples, context=None):
    """The request built as protobuf messages (what the wire framing must equal)."""
    req = request_type()
    for name, value in spec_fields.items():
        if name == "version":
            req.model_spec.version.value = value
        else:
            setattr(req.model_spec, name, value)
    holder = req.input.example_list
    if context is not None:
        holder = req.input.example_list_with_context
        holder.context.CopyFrom(context)
    for ex in examples:
        holder.examples.add().CopyFrom(ex)
    return req


def test_wire_framing_is_protobufs_own_serialization():
    """example_request / blob_example_prefix give, byte for byte, what upb serializes for the
    same Classify and Regress requests: blobs of every length where a varint grows, mapping
    examples, a context, and each model spec form."""
    from tensorflow.core.example import example_pb2

    from memgraph_tf.serving.grpc_codec import blob_example_prefix, example_request

    rng = random.Random(7)
    blobs = [rng.randbytes(n) for n in WIRE_LENGTHS]
    mapping = grpc_codec.example_from_features({"x": [1.5, 2.0], "blob": b"\x01", "n": 3})
    context = grpc_codec.example_from_features({"ctx": "é"})
    keyed: dict[str, list] = {}  # each key's examples, built once
    for key in ("blob", "nödé"):
        keyed[key] = []
        for b in blobs:
            ex = example_pb2.Example()
            ex.features.feature[key].bytes_list.value.append(b)
            assert blob_example_prefix(len(b), key) + b == ex.SerializeToString(), len(b)
            keyed[key].append(ex)
    for request_type in (
        classification_pb2.ClassificationRequest,
        regression_pb2.RegressionRequest,
    ):
        for spec_fields in (
            {"name": "m"},
            {"name": "sage", "version": 3, "signature_name": "classify"},
            {"name": "m", "version_label": "stable"},
        ):
            spec = _protobuf_request(request_type, spec_fields, []).model_spec
            for key, examples in keyed.items():
                want = _protobuf_request(request_type, spec_fields, examples)
                got = example_request(
                    spec.SerializeToString(), [(blob_example_prefix(len(b), key), b) for b in blobs]
                )
                assert got == want.SerializeToString(), (request_type, spec_fields, key)
            with_ctx = _protobuf_request(request_type, spec_fields, [mapping, examples[3]], context)
            got = example_request(
                spec.SerializeToString(),
                [
                    (mapping.SerializeToString(), b""),
                    (blob_example_prefix(len(blobs[3]), key), blobs[3]),
                ],
                context.SerializeToString(),
            )
            assert got == with_ctx.SerializeToString()
            assert request_type.FromString(got) == with_ctx


def test_client_sends_the_request_protobuf_would(monkeypatch):
    """What GrpcServingClient puts on the wire for classify / regress is the serialization of the
    request message the REST-twin contract describes: spec (name, version or label, signature),
    examples (blobs of any bytes-like type in their bytes feature, mappings by the JSON rules)
    and the context."""
    from tensorflow.core.example import example_pb2

    sent: list[bytes] = []
    blobs = [b"\x00" * 130, bytearray(b"\x07" * 16_390), memoryview(np.arange(6, dtype=np.int32))]
    mapping = {"x": [0.5, 1.0], "tag": "a"}
    for kwargs, spec_fields in (
        ({}, {"name": "m"}),
        ({"version": 4}, {"name": "m", "version": 4}),
        ({"label": "canary"}, {"name": "m", "version_label": "canary"}),
    ):
        with GrpcServingClient("127.0.0.1:1", "m", **kwargs, retries=0) as c:

            def fake_call(call, req, timeout_s, c=c):  # an empty answer: too few results
                sent.append(req)
                return (
                    classification_pb2.ClassificationResponse()
                    if call is c._example_methods["Classify"]
                    else regression_pb2.RegressionResponse()
                )

            monkeypatch.setattr(c, "_call", fake_call)
            with pytest.raises(errors.InvalidResponseError, match=r"expected 4 classifications"):
                c.classify([*blobs, mapping], context={"ctx": 1})
            with pytest.raises(errors.InvalidResponseError, match=r"expected 3 regressions"):
                c.regress(blobs, signature_name="reg")
        examples = []
        for b in blobs:
            ex = example_pb2.Example()
            ex.features.feature["blob"].bytes_list.value.append(bytes(b))
            examples.append(ex)
        want_classify = _protobuf_request(
            classification_pb2.ClassificationRequest,
            {**spec_fields, "signature_name": "classify"},
            [*examples, grpc_codec.example_from_features(mapping)],
            grpc_codec.example_from_features({"ctx": 1}),
        )
        want_regress = _protobuf_request(
            regression_pb2.RegressionRequest, {**spec_fields, "signature_name": "reg"}, examples
        )
        # the mapping example's two features are a protobuf map, whose entries have no fixed order
        # on the wire (two equal messages may serialize them in either order): compared parsed
        got_classify = classification_pb2.ClassificationRequest.FromString(sent[-2])
        assert got_classify == want_classify, kwargs
        assert sent[-1] == want_regress.SerializeToString(), kwargs  # blobs only: byte for byte


# --------------------------------------------------------------------------------- the CLI
def test_cli_serve_with_grpc_port_answers_both_apis_from_one_process(toy_base, cli_server):
    """`memgraph-tf serve BASE --port P --grpc-port G`: one process, one ModelServer, both APIs;
    Ctrl-C (SIGINT) ends it with exit 0. The TensorFlow thread options reach TensorFlow (the log
    line reads them back from its config)."""
    import signal

    grpc_port = free_port()
    with cli_server(
        [
            str(toy_base),
            "--grpc-port",
            str(grpc_port),
            "--version-label",
            "stable=1",
            "--max-examples",
            "4",
            "--tensorflow-intra-op-parallelism",
            "1",
            "--tensorflow-inter-op-parallelism",
            "2",
        ],
        "toy",
        stop=signal.SIGINT,
    ) as run:
        with (
            ServingClient(run.url, "toy", label="stable") as rest,
            GrpcServingClient(f"127.0.0.1:{grpc_port}", "toy", label="stable") as rpc,
        ):
            assert rpc.status() == rest.status()
            assert_same_answer(rest.classify([{"x": X[0]}]), rpc.classify([{"x": X[0]}]))
            with pytest.raises(errors.RequestTooLargeError, match=r"limit of 4 per request"):
                rpc.classify([{"x": X[0]}] * 5)  # --max-examples reaches gRPC too
    assert run.returncode == 0, run.output[-3000:]
    assert f"gRPC: serving model 'toy' versions [1, 2] at 127.0.0.1:{grpc_port}" in run.output
    assert "TensorFlow threads: intra-op 1, inter-op 2" in run.output


def test_cli_serve_with_a_busy_grpc_port_is_one_line_and_exit_2(toy_base, repo_root):
    import os
    import subprocess
    import sys

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        grpc_port = busy.getsockname()[1]
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "memgraph_tf.cli",
                "serve",
                str(toy_base),
                "--port",
                str(free_port()),
                "--grpc-port",
                str(grpc_port),
            ],
            cwd=repo_root,
            env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"},
            capture_output=True,
            text=True,
            timeout=180,
        )
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert f"memgraph-tf serve: cannot bind the gRPC port 127.0.0.1:{grpc_port}" in proc.stderr
    assert "Traceback" not in proc.stderr
