"""The local server answers as TF Serving's own tests expect.

Every expectation below is TF Serving's, with the file that defines it (paths relative to
tensorflow/serving's ``tensorflow_serving/``):

- ``util/json_tensor.cc`` / ``util/json_tensor_test.cc``: JSON <-> tensors and tf.Examples, float
  printing (``WriteDecimal``), row/columnar errors;
- ``model_servers/http_rest_api_handler.cc`` / ``http_rest_api_handler_test.cc`` and
  ``model_servers/http_rest_api_util.cc``: URLs, version parsing, status and metadata JSON;
- ``model_servers/http_server.cc`` (``ToHTTPStatusCode``): INVALID_ARGUMENT -> 400, NOT_FOUND ->
  404, UNIMPLEMENTED -> 501;
- ``servables/tensorflow/testdata/saved_model_half_plus_two_2_versions_metadata.json``: the
  metadata document;
- ``model_servers/tensorflow_model_server_test.py``: the REST answers of a real server.

Deliberate differences are listed in docs/serving.md ("Differences from TF Serving").
"""

from __future__ import annotations

import json
import pathlib

import grpc
import numpy as np
import pytest
import requests
from tensorflow_serving.apis import prediction_service_pb2_grpc

from memgraph_tf.errors import ServingFailure
from memgraph_tf.serving import json_examples, json_parse, json_tensors, json_values
from tests.serving.http_kit import assert_error

DT_FLOAT, DT_DOUBLE, DT_INT32, DT_STRING, DT_INT64, DT_UINT64, DT_HALF = 1, 2, 3, 7, 9, 23, 19


def save_signatures(module, path: pathlib.Path) -> None:
    """Saves the ``tf.Module`` ``module`` as a SavedModel at ``path`` whose signatures are its
    class's ``tf.function`` methods, each under the method's name."""
    import tensorflow as tf

    functions = tf.types.experimental.PolymorphicFunction
    names = [name for name, attr in vars(type(module)).items() if isinstance(attr, functions)]
    tf.saved_model.save(
        module, str(path), signatures={name: getattr(module, name) for name in names}
    )


# ------------------------------------------------------------------------------ a quirky model
def export_quirks(path: pathlib.Path) -> None:
    """A SavedModel whose signatures produce the outputs TF Serving's JSON writer refuses or
    formats specially: float echo, complex64, a scalar beside a vector, two batch sizes, and
    classify / regress signatures whose scores are the example's own floats."""
    import tensorflow as tf

    vec = tf.TensorSpec([None], tf.float32, name="x")
    ser = tf.TensorSpec([None], tf.string, name="inputs")

    class Quirks(tf.Module):
        @tf.function(input_signature=[vec])
        def serving_default(self, x):  # the float echo
            return {"y": tf.identity(x)}

        @tf.function(input_signature=[vec])
        def complex(self, x):
            return {"c": tf.complex(x, x)}

        @tf.function(input_signature=[vec])
        def scalar(self, x):
            return {"total": tf.reduce_sum(x), "y": tf.identity(x)}

        @tf.function(input_signature=[vec])
        def mismatch(self, x):
            return {"a": tf.identity(x), "b": tf.concat([x, x], 0)}

        @tf.function(input_signature=[ser])
        def classify(self, inputs):
            s = tf.io.parse_example(inputs, {"s": tf.io.FixedLenFeature([3], tf.float32)})["s"]
            n = tf.shape(inputs)[0]
            return {"classes": tf.tile(tf.constant([["car", "bike", "bus"]]), [n, 1]), "scores": s}

        @tf.function(input_signature=[ser])
        def regress(self, inputs):
            v = tf.io.parse_example(inputs, {"v": tf.io.FixedLenFeature([1], tf.float32)})["v"]
            return {"outputs": v[:, 0]}

    save_signatures(Quirks(), path)


@pytest.fixture(scope="module")
def quirks(tmp_path_factory):
    """The quirks model served from ``BASE/00000123/`` (TF Serving's own test layout)."""
    from memgraph_tf.serving.model_server import ModelServer
    from memgraph_tf.serving.server import start_server

    base = tmp_path_factory.mktemp("quirks") / "quirks"
    export_quirks(base / "00000123")
    ms = ModelServer(base, "quirks")
    with start_server(ms) as srv:
        srv.model_server = ms
        yield srv


def post(srv, suffix: str, body: bytes | str | dict, session=None):
    data = json.dumps(body) if isinstance(body, dict) else body
    return (session or requests).post(f"{srv.url}/v1/models/quirks{suffix}", data=data, timeout=60)


# --------------------------------------------------------------------------- version directories
def test_version_directory_00000123_is_version_123(quirks):
    """http_rest_api_handler_test.cc serves half_plus_two from BASE/00000123 as version 123
    (GetStatus expects "version": "123"); sources/storage_path/file_system_storage_path_source.cc
    reads a version directory's name as its integer value."""
    r = requests.get(f"{quirks.url}/v1/models/quirks", timeout=30)
    assert (r.status_code, r.json()) == (
        200,
        {
            "model_version_status": [
                {
                    "version": "123",
                    "state": "AVAILABLE",
                    "status": {"error_code": "OK", "error_message": ""},
                }
            ]
        },
    )
    for suffix in ("/versions/123:predict", "/versions/00000123:predict", ":predict"):
        r = post(quirks, suffix, {"instances": [1.5]})
        assert (r.status_code, r.json()) == (200, {"predictions": [1.5]}), suffix
    r = requests.get(f"{quirks.url}/v1/models/quirks/versions/123/metadata", timeout=30)
    assert r.json()["model_spec"]["version"] == "123"


# --------------------------------------------------------------------------------------- metadata
def test_metadata_is_printed_as_tf_serving_prints_it(quirks):
    """http_rest_api_util.cc ToJsonString(GetModelMetadataResponse): MessageToJsonString with
    always_print_primitive_fields and preserve_proto_field_names, of the model spec and of the
    unpacked SignatureDefMap (no "@type"); expected document:
    servables/tensorflow/testdata/saved_model_half_plus_two_2_versions_metadata.json."""
    r = requests.get(f"{quirks.url}/v1/models/quirks/metadata", timeout=30)
    assert r.status_code == 200
    doc = r.json()
    assert list(doc) == ["model_spec", "metadata"]
    assert doc["model_spec"] == {"name": "quirks", "signature_name": "", "version": "123"}
    assert "@type" not in r.text
    sigs = doc["metadata"]["signature_def"]["signature_def"]
    assert sorted(sigs) == [
        "classify",
        "complex",
        "mismatch",
        "regress",
        "scalar",
        "serving_default",
    ]
    echo = sigs["serving_default"]
    assert echo["method_name"] == "tensorflow/serving/predict"
    assert echo["defaults"] == {}
    x = echo["inputs"]["x"]
    assert x["dtype"] == "DT_FLOAT"
    assert x["tensor_shape"] == {"dim": [{"size": "-1", "name": ""}], "unknown_rank": False}
    assert x["name"].startswith("serving_default_x")
    assert echo["outputs"]["y"]["tensor_shape"] == {
        "dim": [{"size": "-1", "name": ""}],
        "unknown_rank": False,
    }


def test_metadata_of_a_label_and_a_missing_version(quirks):
    """http_rest_api_handler.cc: metadata resolves versions like predict does (ServerCore:
    "Servable not found for request: Specific(NAME, N)", NOT_FOUND -> 404)."""
    r = requests.get(f"{quirks.url}/v1/models/quirks/versions/7/metadata", timeout=30)
    assert_error(r, 404, "Servable not found for request: Specific(quirks, 7)")


# ---------------------------------------------------------------------------- float formatting
@pytest.mark.parametrize(
    "value, bits, text",
    [
        # util/json_tensor_test.cc FromJsonSingleFloatTensorSixDigitPrecision
        (9000000.0, 32, "9e+06"),
        (999999.0, 32, "999999.0"),
        (0.5, 32, "0.5"),
        (0.0003, 32, "0.0003"),
        (0.00003, 32, "3e-05"),
        (555557.5, 32, "555557.5"),
        # FromJsonSingleFloatTensorNonFinite
        (float("nan"), 32, "NaN"),
        (float("inf"), 32, "Infinity"),
        (3.0, 32, "3.0"),
        (float("-inf"), 32, "-Infinity"),
        # WriteDecimal's comment: a float 0.2 is 0.2, not 0.2000000012322; no round trip -> %.9g
        (0.2, 32, "0.2"),
        (1 / 3, 32, "0.333333343"),
        (1 / 3, 64, "0.33333333333333331"),
        (0.1, 64, "0.1"),
        (100000.0, 32, "100000.0"),
    ],
)
def test_format_decimal_follows_write_decimal(value, bits, text):
    """util/json_tensor.cc WriteDecimal: StrCat (printf %g, six digits) when it round-trips, else
    %.9g (float) / %.17g (double); ".0" when neither '.' nor 'e'; NaN / Infinity."""
    assert json_values.format_decimal(value, bits) == text


def test_float_outputs_print_six_digits(quirks):
    """json_tensor_test.cc FromJsonSingleFloatTensorSixDigitPrecision and ...NonFinite, through
    the server: the answer's number tokens are the ones TF Serving writes."""
    r = post(
        quirks,
        ":predict",
        '{"instances": [9000000.0, 999999.0, 0.5, 0.0003, 0.00003, '
        "555557.5, 0.2, NaN, Infinity, -Infinity, 3]}",
    )
    assert r.status_code == 200
    assert r.text == (
        '{"predictions":[9e+06,999999.0,0.5,0.0003,3e-05,555557.5,0.2,NaN,Infinity,-Infinity,3.0]}'
    )
    r = post(quirks, ":predict", {"inputs": [0.2, 0.7]})
    assert r.text == '{"outputs":[0.2,0.7]}'


def test_classify_and_regress_scores_print_six_digits(quirks):
    """json_tensor_test.cc JsonFromClassificationResult ([["car", 0.2], ["bike", 0.7], ["bus",
    0.1]]) and JsonFromRegressionResult ([0.2, 0.9, 1.0]): scores are floats written by
    WriteDecimal (ClassificationResult / RegressionResult hold float)."""
    r = post(
        quirks,
        ":classify",
        {
            "signature_name": "classify",
            "examples": [{"s": [0.2, 0.7, 0.1]}, {"s": [0.7, 0.1, 0.2]}],
        },
    )
    assert r.status_code == 200
    assert r.text == (
        '{"results":[[["car",0.2],["bike",0.7],["bus",0.1]],'
        '[["car",0.7],["bike",0.1],["bus",0.2]]]}'
    )
    r = post(
        quirks,
        ":regress",
        {"signature_name": "regress", "examples": [{"v": 0.2}, {"v": 0.9}, {"v": 1.0}]},
    )
    assert r.text == '{"results":[0.2,0.9,1.0]}'


# ---------------------------------------------------------------------- outputs TF Serving refuses
def test_complex64_output_is_a_400_and_the_connection_lives_on(quirks):
    """json_tensor_test.cc FromJsonSingleTensorErrors: a DT_COMPLEX64 tensor gives
    INVALID_ARGUMENT "Failed to write JSON value for tensor type: complex64" (json_tensor.cc
    AddSingleValueAndAdvance), which http_server.cc answers with 400."""
    with requests.Session() as s:
        r = post(quirks, ":predict", {"signature_name": "complex", "instances": [1.0]}, s)
        assert_error(r, 400, "Failed to write JSON value for tensor type: complex64")
        r = post(quirks, ":predict", {"signature_name": "complex", "inputs": [1.0]}, s)
        assert r.status_code == 400
        r = post(quirks, ":predict", {"instances": [2.5]}, s)  # same keep-alive connection
        assert (r.status_code, r.json()) == (200, {"predictions": [2.5]})


def test_row_format_output_without_shape_is_a_400(quirks):
    """json_tensor.cc MakeRowFormatJsonFromTensors: "Tensor name: NAME has no shape information "
    (INVALID_ARGUMENT -> 400; json_tensor_test.cc FromJsonSingleTensorErrors); the columnar
    format writes the scalar."""
    r = post(quirks, ":predict", {"signature_name": "scalar", "instances": [1.0, 2.0]})
    assert_error(r, 400, "Tensor name: total has no shape information ")
    r = post(quirks, ":predict", {"signature_name": "scalar", "inputs": [1.0, 2.0]})
    assert (r.status_code, r.text) == (200, '{"outputs":{"total":3.0,"y":[1.0,2.0]}}')


def test_inconsistent_batch_sizes_are_a_400(quirks):
    """json_tensor.cc MakeRowFormatJsonFromTensors: "Tensor name: b has inconsistent batch size:
    4 expecting: 2" (json_tensor_test.cc FromJsonMultipleNamedTensorsErrors)."""
    r = post(quirks, ":predict", {"signature_name": "mismatch", "instances": [1.0, 2.0]})
    assert_error(r, 400, "Tensor name: b has inconsistent batch size: 4 expecting: 2")


# ------------------------------------------------------------------------------------- versions
@pytest.mark.parametrize("version", [str(2**64 - 1), str(2**63), "99999999999999999999999"])
@pytest.mark.parametrize(
    "method, suffix", [("POST", ":predict"), ("GET", ""), ("GET", "/metadata")]
)
def test_a_version_beyond_int64_is_a_400(quirks, version, method, suffix):
    """http_rest_api_util.cc ParseModelInfo: absl::SimpleAtoi into int64 fails -> INVALID_ARGUMENT
    "Failed to convert version: N to numeric." (http_rest_api_handler_test.cc UnsupportedApiCalls
    sends uint64 max)."""
    url = f"{quirks.url}/v1/models/quirks/versions/{version}{suffix}"
    r = requests.request(method, url, data=b'{"instances": [1.0]}', timeout=30)
    assert_error(r, 400, f"Failed to convert version: {version} to numeric.")


@pytest.mark.parametrize(
    "method, path",
    [
        ("GET", "/v1/foo"),
        ("POST", "/v1/foo"),
        ("GET", "/v1/models/debug/model_name"),
        ("POST", "/v1/models"),
        ("GET", "/v1/models/foo:predict"),
        ("GET", "/v1/models/foo/version/50:predict"),
        ("POST", "/v1/models/foo/version/50:regress"),
        ("POST", "/v1/models/foo/versions/HELLO:regress"),
        ("POST", "/v1/models/foo/metadata"),
        ("POST", "/v1/models/foo/label/some_label:regress"),
        ("POST", "/v1/models/foo/versions/50/labels/some_label:regress"),
        ("POST", "/v1/models/foo/versions/some_label:regress"),
    ],
)
def test_unsupported_api_calls(quirks, method, path):
    """http_rest_api_handler_test.cc UnsupportedApiCalls: INVALID_ARGUMENT "Malformed request:
    METHOD PATH" (http_rest_api_handler.cc's initial status)."""
    r = requests.request(method, quirks.url + path, data=b"", timeout=30)
    assert_error(r, 400, f"Malformed request: {method} {path}")


def test_missing_model_name_and_unknown_models(quirks):
    """http_rest_api_handler_test.cc: GET /v1/models -> "Missing model name"; PredictModelName
    VersionErrors: unknown model or version -> NOT_FOUND (404)."""
    r = requests.get(f"{quirks.url}/v1/models", timeout=30)
    assert_error(r, 400, "Missing model name in request.")
    r = requests.post(f"{quirks.url}/v1/models/foo:predict", data='{"instances": [1]}', timeout=30)
    assert_error(r, 404, "Servable not found for request: Latest(foo)")
    r = requests.post(
        f"{quirks.url}/v1/models/foo/versions/50:predict", data='{"instances": [1]}', timeout=30
    )
    assert r.status_code == 404


def test_predict_request_errors(quirks):
    """http_rest_api_handler_test.cc PredictRequestErrors."""
    cases = [
        (b"", "JSON Parse error: The document is empty"),
        (b"instances = [1, 2]", "JSON Parse error: Invalid value. at offset: 0"),
        (
            b'{ "instances": ["x", "y"] }',
            "Failed to process element: 0 of 'instances' list. "
            'Error: INVALID_ARGUMENT: JSON Value: "x" Type: String is not of expected type: float',
        ),
        (
            b'{ "signature_name": 100 }',
            'JSON Value: {\n    "signature_name": 100\n} not '
            "formatted correctly. 'signature_name' key must be a string value.",
        ),
    ]
    for body, message in cases:
        r = post(quirks, ":predict", body)
        assert_error(r, 400, message, body)
    r = requests.post(
        f"{quirks.url}/v1/models/quirks/labels/Version_Nonexistent:predict",
        data=b'{ "instances": ["x", "y"] }',
        timeout=30,
    )
    assert_error(r, 400, "Unrecognized servable version label: Version_Nonexistent")


# ---------------------------------------------------------------- classify / regress bodies
@pytest.mark.parametrize("verb", [":classify", ":regress"])
def test_context_only_bodies(quirks, verb):
    """json_tensor_test.cc ClassifyRegressRequestTest.JsonErrors: a body whose context is a list
    -> "Example must be JSON object" (the context is read before the examples,
    json_tensor.cc FillClassifyRegressRequestFromJson); a good context without examples -> "When
    method is classify, key 'examples' is expected and was not found" (for :regress too)."""
    r = post(quirks, verb, {"context": [{"names": ["foo", "bar"]}]})
    assert_error(r, 400, "Example must be JSON object but got JSON Array")
    r = post(quirks, verb, {"context": {"q": "pizza"}})
    assert (r.status_code, r.json()) == (
        400,
        {
            "error": (
                'JSON Value: {\n    "context": {\n        "q": "pizza"\n    }\n} When method is '
                "classify, key 'examples' is expected and was not found"
            )
        },
    )


@pytest.mark.parametrize(
    "examples, message",
    [
        ({"names": ["foo", "bar"]}, "list/array"),
        ([[{"names": ["foo", "bar"]}]], "Example must be JSON object but got JSON Array"),
        ([{"names": [10, None]}], "Feature: names has element with unexpected JSON type: Null"),
        (
            [{"names": [10, 10.0]}],
            "Unexpected element type in feature: names expecting type: int64",
        ),
        (
            [{"names": [10, {"test": 10}]}],
            "Feature: names has element with unexpected JSON type: Object",
        ),
        ([{"names": [[10], 20]}], "Feature: names has element with unexpected JSON type: Array"),
    ],
)
def test_example_errors(quirks, examples, message):
    """json_tensor_test.cc ClassifyRegressRequestTest.JsonErrors, through the server."""
    r = post(quirks, ":classify", {"signature_name": "classify", "examples": examples})
    assert r.status_code == 400
    assert message in r.json()["error"]


def test_uint64_feature_value(quirks):
    """json_tensor.cc AddValueToFeature: an integer above int64 but within uint64 ->
    "Feature: NAME has uint64_t element. Only int64_t is supported." (json_tensor_test.cc
    JsonErrors sends 18446744073709551603). A larger integer is a double to rapidjson, so a float
    feature; a double beyond float32 is an infinity (GetFloat())."""
    r = post(
        quirks,
        ":classify",
        '{"signature_name": "classify", "examples": [{"names": [20, 18446744073709551603]}]}',
    )
    assert_error(r, 400, "Feature: names has uint64_t element. Only int64_t is supported.")
    ex = json_examples.json_to_example(
        json_parse.parse_request_body(b'{"x": 99999999999999999999999}')
    ).features.feature["x"]
    assert list(ex.float_list.value) == [pytest.approx(1e23, rel=1e-6)]
    ex = json_examples.json_to_example({"names": 1.7976931348623157e308}).features.feature["names"]
    assert list(ex.float_list.value) == [float("inf")]


# ------------------------------------------------------------- JSON -> tensors (unit level)
def feeds(body: str, infos: dict[str, int]):
    return json_tensors.predict_feeds(json_parse.parse_request_body(body.encode()), infos, "")


@pytest.mark.parametrize(
    "body, message",
    [
        # json_tensor_test.cc SingleUnnamedTensorErrors (DT_INT32)
        (
            '{"instances": [[1,2],[3,4],[5,6,7]]}',
            "Failed to process element: 2 of 'instances' list. "
            "Error: INVALID_ARGUMENT: Expecting tensor size: 2 but got: 3",
        ),
        (
            '{"instances": [[1,2],[3,4],[[5,6]]]}',
            "Failed to process element: 2 of 'instances' list. "
            "Error: INVALID_ARGUMENT: Expecting shape [2] but got: [1,2]",
        ),
        (
            '{"instances": [1, [1]]}',
            "Failed to process element: 1 of 'instances' list. Error: "
            "INVALID_ARGUMENT: Expecting shape [] but got: [1]",
        ),
        (
            '{"instances": [[1,2],["a", "b"]]}',
            "Failed to process element: 1 of 'instances' list. "
            'Error: INVALID_ARGUMENT: JSON Value: "a" Type: String is not of expected type: int32',
        ),
        (
            '{"instances": [[1,2],[3,4],[5,6,7]], "inputs": [[1,2],[3,4],[5,6,7]]}',
            "Not formatted correctly expecting only one of 'inputs' or 'instances' keys to exist ",
        ),
        ('{"instances": [3000000000]}', "is not of expected type: int32"),
    ],
)
def test_single_unnamed_tensor_errors(body, message):
    """util/json_tensor_test.cc SingleUnnamedTensorErrors."""
    import re

    with pytest.raises(ServingFailure, match=re.escape(message) + "$") as info:
        feeds(body, {"default": DT_INT32})
    assert info.value.status == 400


@pytest.mark.parametrize(
    "body, dtype, want",
    [
        # FloatTensorWithPrecisionLoss: 1435774380 and 1435774380.0 alike, rounded
        ('{"instances": [1435774380]}', DT_FLOAT, [1435774336.0]),
        ('{"instances": [1435774380.0]}', DT_FLOAT, [1435774336.0]),
        # FloatTensorThatExceedsMaxReturnsInf: +-DBL_MAX as absl::Substitute prints it
        ('{"instances": [1.79769e+308]}', DT_FLOAT, [float("inf")]),
        ('{"instances": [-1.79769e+308]}', DT_FLOAT, [float("-inf")]),
        # FloatTensorThatExceedsMinReturnsZero: +-DBL_MIN
        ('{"instances": [2.22507e-308]}', DT_FLOAT, [0.0]),
        ('{"instances": [-2.22507e-308]}', DT_FLOAT, [-0.0]),
        # MixedInputForFloatTensor / MixedInputForDoubleTensor
        (
            '{"instances": [1, 2.0, 3, 4, 5.003, 0.007, 0.0]}',
            DT_FLOAT,
            [1, 2, 3, 4, 5.003, 0.007, 0],
        ),
        ('{"instances": [1.0, 2, 3, 4, 0.662, 0, 0.0]}', DT_DOUBLE, [1, 2, 3, 4, 0.662, 0, 0]),
        # the cases SingleUnnamedTensorErrors refused before 2021 (2^24 + 1, 2^53 + 1): rounded
        ('{"instances": [16777217]}', DT_FLOAT, [16777216.0]),
        ('{"instances": [9007199254740993]}', DT_DOUBLE, [9007199254740992.0]),
        ('{"instances": [18446744073709551615]}', DT_FLOAT, [1.8446744073709552e19]),
    ],
)
def test_numbers_beyond_float_precision_or_range_are_rounded(body, dtype, want):
    """util/json_tensor_test.cc (current): AddValueToTensor takes any number for DT_FLOAT /
    DT_DOUBLE (``IsNumber()``) and stores ``GetFloat()`` / ``GetDouble()`` -- rounded, an
    infinity beyond float's range, 0 below its smallest; the test names are beside the cases."""
    (out, _) = feeds(body, {"default": dtype})
    arr = out["default"]
    assert arr.dtype == (np.float32 if dtype == DT_FLOAT else np.float64)
    np_want = np.array(want, dtype=arr.dtype)
    assert arr.tobytes() == np_want.tobytes()  # bitwise: -0.0 and infinities count


def test_multiple_named_tensor_errors():
    """util/json_tensor_test.cc MultipleNamedTensorErrors."""
    infos = {"int_tensor": DT_INT32, "str_tensor": DT_STRING}
    cases = [
        (
            '{"instances": [{"int_tensor": [[1,2],[3,4],[5,6]], "str_tensor": ["foo", "bar"]},'
            '{"int_tensor": [[[7,8],[9,0],[1,2]]], "str_tensor": ["baz", "bat"]}]}',
            "Failed to process element: 1 key: int_tensor of 'instances' list. Error: "
            "INVALID_ARGUMENT: Expecting shape [3,2] but got: [1,3,2]",
        ),
        (
            '{"instances": [{"int_tensor": [[1,2],[3,4],[5,6],[7,8]], '
            '"str_tensor": ["foo", "bar"]},'
            '{"int_tensor": [[7,8],[9,0],[1,2]], "str_tensor": ["baz", "bat"]}]}',
            "Failed to process element: 1 key: int_tensor of 'instances' list. Error: "
            "INVALID_ARGUMENT: Expecting tensor size: 8 but got: 6",
        ),
        (
            '{"instances": [{"int_tensor": [[1,2],[3,4],[5,6]], "str_tensor": ["foo", "bar"]},'
            "[1, 20, 30]]}",
            "Expecting object but got list at item 1 of input list",
        ),
    ]
    for body, message in cases:
        with pytest.raises(ServingFailure, match="Expecting") as info:
            feeds(body, infos)
        assert info.value.message == message
    with pytest.raises(ServingFailure, match="Expecting value/list") as info:
        feeds(
            '{"instances": [["baz", "bar"], {"str_tensor": ["baz", "bat"]}]}',
            {"str_tensor": DT_STRING},
        )
    assert info.value.message == "Expecting value/list but got object at item 1 of input list"


def test_named_and_columnar_tensors_convert():
    """util/json_tensor_test.cc MultipleNamedTensor / MultipleNamedTensorColumnarFormat."""
    out, columnar = feeds(
        '{"instances": [{"int_tensor": [[1,2],[3,4],[5,6]], "str_tensor": ["foo", "bar"],'
        ' "float_tensor": [1.0, NaN], "dbl_tensor": [NaN]}, {"int_tensor": [[7,8],[9,0],[1,2]],'
        ' "str_tensor": ["baz", "bat"], "float_tensor": [2.0, Infinity], "dbl_tensor": [2.0]}]}',
        {
            "int_tensor": DT_INT32,
            "str_tensor": DT_STRING,
            "float_tensor": DT_FLOAT,
            "dbl_tensor": DT_DOUBLE,
        },
    )
    assert not columnar
    assert out["int_tensor"].dtype == np.int32 and out["int_tensor"].shape == (2, 3, 2)
    assert out["str_tensor"].tolist() == [[b"foo", b"bar"], [b"baz", b"bat"]]
    assert out["float_tensor"].dtype == np.float32 and np.isinf(out["float_tensor"][1, 1])
    assert out["dbl_tensor"].dtype == np.float64 and out["dbl_tensor"].shape == (2, 1)
    out, columnar = feeds(
        '{"inputs": {"int_tensor": [[[1,2],[3,4],[5,6]]], "str_tensor": '
        '["foo", "bar"], "bin_tensor": {"b64": "aGVsbG8="}}}',
        {"int_tensor": DT_INT32, "str_tensor": DT_STRING, "bin_tensor": DT_STRING},
    )
    assert columnar and out["int_tensor"].shape == (1, 3, 2)
    assert out["bin_tensor"].shape == () and out["bin_tensor"].item() == b"hello"


def test_int64_and_uint64_inputs():
    """json_tensor.cc AddValueToTensor: DT_INT64 takes IsInt64() only; DT_UINT64 IsUint64()."""
    with pytest.raises(
        ServingFailure,
        match=r"JSON Value: 9223372036854775808 Type: Number is not "
        r"of expected type: int64",
    ):
        feeds('{"inputs": [9223372036854775808]}', {"i": DT_INT64})
    out, _ = feeds('{"inputs": [18446744073709551615]}', {"u": DT_UINT64})
    assert out["u"].dtype == np.uint64 and int(out["u"][0]) == 2**64 - 1


def test_unconvertible_input_dtype_is_a_501():
    """json_tensor.cc AddValueToTensor default: UNIMPLEMENTED "Conversion of JSON Value: V to
    type: T" (http_server.cc: UNIMPLEMENTED -> 501)."""
    with pytest.raises(
        ServingFailure, match=r"Conversion of JSON Value: 1\.5 to type: half$"
    ) as info:
        feeds('{"inputs": [1.5]}', {"h": DT_HALF})
    assert info.value.status == 501


def test_json_parse_errors_use_rapidjsons_words():
    """TF Serving parses with rapidjson (json_tensor.cc ParseJson); the messages are
    rapidjson's GetParseError_En texts."""
    cases = [
        (b"[1, 2", "JSON Parse error: Missing a comma or ']' after an array element."),
        (b'{"a": 1 "b": 2}', "JSON Parse error: Missing a comma or '}' after an object member."),
        (b'{"a" 1}', "JSON Parse error: Missing a colon after a name of object member."),
        (b"{1: 2}", "JSON Parse error: Missing a name for object member."),
        (b"[1]", "JSON Value: [1] Is not object"),
        (b" \n ", "JSON Parse error: The document is empty. at offset: 3"),
    ]
    for body, prefix in cases:
        with pytest.raises(ServingFailure, match="JSON ") as info:
            json_parse.parse_request_body(body)
        assert info.value.message.startswith(prefix), info.value.message


# ------------------------------------------------- the current json_tensor.cc (since Aug 2024)
DEEP = 500_000  # json_tensor_test.cc DeeplyNested*: 500,000 brackets each way


def test_deep_nesting_under_an_unused_key_is_skipped(quirks):
    """json_tensor_test.cc DeeplyNestedWellFormed: ``{"instances":[1], "nested": [[[...]]]}``
    (500,000 levels) is answered; rapidjson parses iteratively (``kParseIterativeFlag``) and
    nothing reads ``nested``. Here the value is skipped unread, in time and memory linear in the
    body; under a key the request uses the server's ``--max-json-depth`` still answers 400."""
    import time

    body = b'{"instances": [1.5], "nested": ' + b"[" * DEEP + b"]" * DEEP + b"}"
    t0 = time.monotonic()
    r = post(quirks, ":predict", body)
    assert (r.status_code, r.json()) == (200, {"predictions": [1.5]})
    assert time.monotonic() - t0 < 10
    doc = json_parse.parse_request_body(body)
    assert isinstance(doc["nested"], json_values.SkippedValue)
    assert json_values.json_type(doc["nested"]) == "Array"
    r = post(quirks, ":predict", b'{"instances": ' + b"[" * DEEP + b"]" * DEEP + b"}")
    assert r.status_code == 400
    assert r.json()["error"].startswith("JSON Parse error: nesting deeper than 64 levels")


def test_deep_signature_name_is_key_must_be_a_string_value(quirks):
    """json_tensor_test.cc DeeplyNestedMalformed: ``{"signature_name": [[[...]]]}`` ->
    INVALID_ARGUMENT "... 'signature_name' key must be a string value." (FillSignature); the
    document is quoted as JsonValueToDebugString writes it, cut at 256 bytes."""
    body = b'{"signature_name": ' + b"[" * DEEP + b"]" * DEEP + b"}"
    r = post(quirks, ":predict", body)
    assert r.status_code == 400
    message = r.json()["error"]
    assert message.endswith(
        " not formatted correctly. 'signature_name' key must be a string value."
    )
    quoted = message[
        len("JSON Value: ") : -len(
            " not formatted correctly. 'signature_name' key must be a string value."
        )
    ]
    assert quoted == '{\n    "signature_name": ' + "[" * (256 - 24)
    assert len(quoted.encode()) == json_values.DEBUG_STRING_BYTES


def test_the_document_ends_with_its_root_value(quirks):
    """json_tensor.cc ParseJson: ``kParseStopWhenDoneFlag`` -- what follows the root object is
    never read (not even bytes that are not UTF-8)."""
    for tail in (b" x", b"}}}", b" \xff\xfe", b"[" * 100):
        r = post(quirks, ":predict", b'{"instances": [2.5]}' + tail)
        assert (r.status_code, r.json()) == (200, {"predictions": [2.5]}), tail


def test_classify_floats_beyond_float32_are_infinite_scores(quirks):
    """json_tensor.cc AddValueToFeature: a float feature value beyond float32's range is stored
    as ``GetFloat()``, an infinity (the "loss of precision" refusal is gone since 2021); the
    classify answer writes it as TF Serving's WriteDecimal does."""
    r = post(
        quirks,
        ":classify",
        '{"signature_name": "classify", "examples": [{"s": [1e39, -1e39, 1435774380]}]}',
    )
    assert r.status_code == 400  # 1435774380 is an int64 after two floats: kinds may not mix
    assert r.json() == {"error": "Unexpected element type in feature: s expecting type: float"}
    r = post(
        quirks,
        ":classify",
        '{"signature_name": "classify", "examples": [{"s": [1e39, -1e39, 1435774380.0]}]}',
    )
    assert r.status_code == 200, r.text
    assert r.text.replace(" ", "") == (
        '{"results":[[["car",Infinity],["bike",-Infinity],["bus",1.43577434e+09]]]}'
    )


@pytest.mark.parametrize(
    "value, text",
    [
        ([1, 2.5, "a"], '[1, 2.5, "a"]'),  # kFormatSingleLineArray
        ({"a": [1e-7, 1e21, 100.0]}, '{\n    "a": [1e-7, 1e21, 100.0]\n}'),  # rapidjson dtoa
        ([{"b": None}], '[{\n        "b": null\n    }]'),  # indent by nesting level
        ([1.0, float("nan"), 2.0], "[1.0, "),  # Writer::Double refuses NaN: the text stops
        (["\x01"], '["\\u0001"]'),
    ],
)
def test_json_values_in_messages_are_json_value_to_debug_string(value, text):
    """json_tensor.cc JsonValueToDebugString (since Aug 2024): PrettyWriter with single-line
    arrays behind JsonWriterWithLimit(256): an event is written only while the text is shorter
    than 256 bytes."""
    assert json_values.json_value_str(value) == text


def test_json_values_in_messages_stop_after_256_bytes():
    """JsonWriterWithLimit::InLimit: ``[0, 1, ..., 199]`` is written element by element until
    the text holds 256 bytes; the element that crosses the limit is the last one written."""
    events = ["[", "0"] + [f", {i}" for i in range(1, 200)]
    text = ""
    for event in events:
        if len(text) >= json_values.DEBUG_STRING_BYTES:
            break
        text += event
    assert json_values.json_value_str(list(range(200))) == text
    assert 256 <= len(text) < 262


# ------------------------------------------------------------------------------ half_plus_two
HALF_PLUS_TWO = "saved_model_half_plus_two_2_versions"
VERSION_LABEL = "Version_Label"


def export_half_plus_two(path: pathlib.Path) -> None:
    """TF Serving's test model (``servables/tensorflow/testdata/saved_model_half_plus_two.py``):
    ``y = 0.5 * x + 2`` on input ``x`` of shape ``[?, 1]`` (``serving_default``), and the
    ``regress_x_to_y`` / ``classify_x_to_y`` signatures on serialized tf.Examples whose feature
    ``x`` is a float of length 1."""
    import tensorflow as tf

    features = {"x": tf.io.FixedLenFeature([1], tf.float32)}

    class HalfPlusTwo(tf.Module):
        def __init__(self):
            super().__init__()
            self.a = tf.Variable(0.5)
            self.b = tf.Variable(2.0)

        @tf.function(input_signature=[tf.TensorSpec([None, 1], tf.float32, name="x")])
        def serving_default(self, x):
            return {"y": self.a * x + self.b}

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="inputs")])
        def regress_x_to_y(self, inputs):
            x = tf.io.parse_example(inputs, features)["x"]
            return {"outputs": self.a * x + self.b}

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="inputs")])
        def classify_x_to_y(self, inputs):
            x = tf.io.parse_example(inputs, features)["x"]
            return {"scores": self.a * x + self.b}

    save_signatures(HalfPlusTwo(), path)


@pytest.fixture(scope="module")
def half_plus_two(tmp_path_factory):
    """half_plus_two as http_rest_api_handler_test.cc serves it: version 123 (``BASE/00000123``)
    with the label ``Version_Label``, over REST and gRPC (one ModelServer)."""
    from memgraph_tf.serving.grpc_server import start_grpc_server
    from memgraph_tf.serving.model_server import ModelServer
    from memgraph_tf.serving.server import start_server

    base = tmp_path_factory.mktemp("hp2") / HALF_PLUS_TWO
    export_half_plus_two(base / "00000123")
    ms = ModelServer(base, HALF_PLUS_TWO, labels={VERSION_LABEL: 123})
    with start_server(ms) as srv, start_grpc_server(ms) as rpc:
        with grpc.insecure_channel(rpc.target) as channel:
            srv.stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
            yield srv
    ms.close()


def hp2(srv, suffix: str, body: dict | bytes) -> tuple[int, dict]:
    data = json.dumps(body) if isinstance(body, dict) else body
    r = requests.post(f"{srv.url}/v1/models/{HALF_PLUS_TWO}{suffix}", data=data, timeout=60)
    return r.status_code, r.json()


@pytest.mark.parametrize(
    "suffix, body, want",
    [
        # the task's example: shape [3] fed to x of shape [?,1], as TF Serving's session takes it
        (":predict", {"instances": [1.0, 2.0, 5.0]}, {"predictions": [2.5, 3.0, 4.5]}),
        # tensorflow_model_server_test.py testPredictREST
        (":predict", {"instances": [2.0, 3.0, 4.0]}, {"predictions": [3.0, 3.5, 4.0]}),
        # tensorflow_model_server_test.py testPredictColumnarREST
        (":predict", {"inputs": [2.0, 3.0, 4.0]}, {"outputs": [3.0, 3.5, 4.0]}),
        # http_rest_api_handler_test.cc Predict: the latest version, a [2,2] tensor
        (
            ":predict",
            {"instances": [[1.0, 2.0], [3.0, 4.0]]},
            {"predictions": [[2.5, 3.0], [3.5, 4.0]]},
        ),
        # ... a specific version, a version label, an explicit signature_name, columnar inputs
        ("/versions/123:predict", {"instances": [1.0, 2.0]}, {"predictions": [2.5, 3.0]}),
        (
            f"/labels/{VERSION_LABEL}:predict",
            {"instances": [1.0, 2.0]},
            {"predictions": [2.5, 3.0]},
        ),
        (
            "/versions/123:predict",
            {"signature_name": "serving_default", "instances": [3.0, 4.0]},
            {"predictions": [3.5, 4.0]},
        ),
        (
            "/versions/123:predict",
            {"signature_name": "serving_default", "inputs": [3.0, 4.0]},
            {"outputs": [3.5, 4.0]},
        ),
        # tensorflow_model_server_test.py testClassifyREST, testRegressREST
        (
            ":classify",
            {"signature_name": "classify_x_to_y", "examples": [{"x": 2.0}]},
            {"results": [[["", 3.0]]]},
        ),
        (
            ":regress",
            {"signature_name": "regress_x_to_y", "examples": [{"x": 2.0}]},
            {"results": [3.0]},
        ),
        # http_rest_api_handler_test.cc Regress (latest, version, label) and Classify
        (
            ":regress",
            {"signature_name": "regress_x_to_y", "examples": [{"x": 80.0}]},
            {"results": [42]},
        ),
        (
            "/versions/123:regress",
            {"signature_name": "regress_x_to_y", "examples": [{"x": 80.0}]},
            {"results": [42]},
        ),
        (
            f"/labels/{VERSION_LABEL}:regress",
            {"signature_name": "regress_x_to_y", "examples": [{"x": 80.0}]},
            {"results": [42]},
        ),
        (
            ":classify",
            {"signature_name": "classify_x_to_y", "examples": [{"x": 20.0}]},
            {"results": [[["", 12]]]},
        ),
        (
            f"/labels/{VERSION_LABEL}:classify",
            {"signature_name": "classify_x_to_y", "examples": [{"x": 10.0}]},
            {"results": [[["", 7]]]},
        ),
    ],
)
def test_half_plus_two_rest_answers(half_plus_two, suffix, body, want):
    """TF Serving's own REST expectations for half_plus_two (each case names its test): a
    tensor's shape is the session's to take, not the server's (predict_util.cc)."""
    assert hp2(half_plus_two, suffix, body) == (200, want)


@pytest.mark.parametrize(
    "suffix, body, status, message",
    [
        # http_rest_api_handler_test.cc PredictRequestErrors
        (":predict", b"", 400, "JSON Parse error: The document is empty"),
        (":predict", b"instances = [1, 2]", 400, "JSON Parse error: Invalid value"),
        (":predict", {"instances": ["x", "y"]}, 400, "not of expected type: float"),
        (
            "/labels/Version_Nonexistent:predict",
            {"instances": ["x", "y"]},
            400,
            "Unrecognized servable version label",
        ),
        (":predict", {"signature_name": 100}, 400, "'signature_name' key must be a string value."),
        # http_rest_api_handler_test.cc PredictModelNameVersionErrors: NOT_FOUND
        (
            "/versions/99:predict",
            {"instances": [1]},
            404,
            f"Servable not found for request: Specific({HALF_PLUS_TWO}, 99)",
        ),
    ],
)
def test_half_plus_two_rest_errors(half_plus_two, suffix, body, status, message):
    got_status, doc = hp2(half_plus_two, suffix, body)
    assert got_status == status and message in doc["error"], doc


def test_half_plus_two_unknown_model_is_404(half_plus_two):
    """http_rest_api_handler_test.cc PredictModelNameVersionErrors: 'foo' is NOT_FOUND, with or
    without a version."""
    for suffix in (":predict", "/versions/50:predict"):
        r = requests.post(
            f"{half_plus_two.url}/v1/models/foo{suffix}", data=b'{"instances": [1]}', timeout=30
        )
        assert r.status_code == 404 and "foo" in r.json()["error"], r.text


def _x(values, dims, dtype: int = DT_FLOAT):
    from tensorflow_serving.apis import predict_pb2

    req = predict_pb2.PredictRequest()
    req.model_spec.name = HALF_PLUS_TWO
    t = req.inputs["x"]
    t.dtype = dtype
    for d in dims:
        t.tensor_shape.dim.add().size = d
    field = {DT_FLOAT: "float_val", DT_STRING: "string_val", 10: "bool_val"}[dtype]
    getattr(t, field).extend(values)
    return req


@pytest.mark.parametrize(
    "dims, output_filter, want_dims",
    [
        # tensorflow_model_server_test_base.py VerifyPredictRequest: x = [2.0] of shape [1],
        # output_filter y (tensorflow_model_server_test.py testPredictSavedModel)
        ([1], ["y"], [1]),
        # ... batch_input: shape [1, 1] (test_sequential_keras_saved_model_save)
        ([1, 1], [], [1, 1]),
        # predict_util_test.cc PredictionSuccess: a tensor without a shape, answered as one
        ([], [], []),
    ],
)
def test_half_plus_two_grpc_predict(half_plus_two, dims, output_filter, want_dims):
    req = _x([2.0], dims)
    req.output_filter.extend(output_filter)
    resp = half_plus_two.stub.Predict(req, timeout=30)
    y = resp.outputs["y"]
    assert (y.dtype, list(y.float_val), [d.size for d in y.tensor_shape.dim]) == (
        DT_FLOAT,
        [3.0],
        want_dims,
    )
    assert resp.model_spec.version.value == 123


@pytest.mark.parametrize(
    "values, dtype, words",
    [
        # predict_util_test.cc InputTensorsHaveWrongType
        ([b"any_value"], DT_STRING, "to be float but string is provided"),
        # predict_util_test.cc PredictionInvalidTensor
        ([True], 10, "to be float but bool is provided"),
    ],
)
def test_half_plus_two_grpc_wrong_dtype(half_plus_two, values, dtype, words):
    with pytest.raises(grpc.RpcError) as info:
        half_plus_two.stub.Predict(_x(values, [1], dtype), timeout=30)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert info.value.details() == f"Expects input 'x' {words}"


def test_half_plus_two_grpc_classify_and_regress(half_plus_two):
    """tensorflow_model_server_test.py testClassify / testRegress: one example x = 2.0 scores
    and regresses to 3.0 (classify_x_to_y, regress_x_to_y)."""
    from tensorflow_serving.apis import classification_pb2, regression_pb2

    for request_class, signature in (
        (classification_pb2.ClassificationRequest, "classify_x_to_y"),
        (regression_pb2.RegressionRequest, "regress_x_to_y"),
    ):
        req = request_class()
        req.model_spec.name = HALF_PLUS_TWO
        req.model_spec.signature_name = signature
        req.input.example_list.examples.add().features.feature["x"].float_list.value.append(2.0)
        if request_class is classification_pb2.ClassificationRequest:
            result = half_plus_two.stub.Classify(req, timeout=30).result
            assert [c.score for c in result.classifications[0].classes] == [3.0]
        else:
            result = half_plus_two.stub.Regress(req, timeout=30).result
            assert [r.value for r in result.regressions] == [3.0]
