"""The server's JSON -> tf.Example conversion, written from TF Serving's rules
(util/json_tensor.cc)."""

from __future__ import annotations

import numpy as np
import pytest

from memgraph_tf.serving.errors import ServingFailure
from memgraph_tf.serving.json_examples import json_to_example


def kinds(ex):
    return {k: f.WhichOneof("kind") for k, f in ex.features.feature.items()}


def test_kinds_follow_the_json_tokens():
    ex = json_to_example(
        {"f": [1.0, 2.5], "i": [1, 2], "b": True, "s": "text", "raw": {"b64": "AP8="}, "one": 0.5}
    )
    assert kinds(ex) == {
        "f": "float_list",
        "i": "int64_list",
        "b": "int64_list",
        "s": "bytes_list",
        "raw": "bytes_list",
        "one": "float_list",
    }
    feat = ex.features.feature
    assert list(feat["f"].float_list.value) == [1.0, 2.5]
    assert list(feat["i"].int64_list.value) == [1, 2]
    assert list(feat["b"].int64_list.value) == [1]
    assert list(feat["raw"].bytes_list.value) == [b"\x00\xff"]
    assert list(feat["s"].bytes_list.value) == [b"text"]


@pytest.mark.parametrize(
    "obj, message",
    [
        ({"x": [1.0, 2]}, "Unexpected element type in feature: x expecting type: float"),
        ({"x": [1, 2.0]}, "Unexpected element type in feature: x expecting type: int64"),
        ({"x": ["a", 1]}, "Unexpected element type in feature: x expecting type: bytes"),
        ({"x": [[1.0]]}, "Feature: x has element with unexpected JSON type: Array"),
        ({"x": None}, "Feature: x has element with unexpected JSON type: Null"),
        (
            {"x": {"b64": "AA==", "y": 1}},
            "Feature: x has element with unexpected JSON type: Object",
        ),
        ({"x": {"b64": "!!"}}, "Unable to base64 decode"),
        ({"x": [2**63]}, "Feature: x has uint64_t element. Only int64_t is supported."),
        ([1], "Example must be JSON object but got JSON Array"),
    ],
)
def test_rejections(obj, message):
    with pytest.raises(
        ServingFailure, match=message.replace("(", r"\(").replace("+", r"\+")
    ) as info:
        json_to_example(obj)
    assert info.value.status == 400


def test_floats_beyond_float32_become_infinities_not_errors():
    """json_tensor.cc AddValueToFeature stores ``GetFloat()`` (the double cast to float) since
    TF Serving dropped its lossless check (json_tensor_test.cc ClassifyRegressRequestTest.JsonErrors
    lost its "loss of precision" case then): rounded to float32, an infinity beyond its range."""
    feat = json_to_example({"x": [1e39, -1e39, 3.4028235e38, 0.1], "y": 1e39}).features.feature
    assert list(feat["x"].float_list.value) == [
        float("inf"),
        float("-inf"),
        3.4028234663852886e38,  # rounds to FLT_MAX, as the C cast does
        0.10000000149011612,
    ]
    assert list(feat["y"].float_list.value) == [float("inf")]


def test_int64_min_is_an_int64_in_examples_and_tensors():
    """``-9223372036854775808`` is an int64: rapidjson's reader reads it as one (reader.h
    ParseNumber), json_tensor.cc takes it as an int64 feature value (MakeExampleFromJsonObject:
    ``IsInt64()`` / ``GetInt64()``) and as a DT_INT64 tensor element (AddValueToTensor); one
    below it is beyond int64 (a uint64 when positive, a double when negative)."""
    from memgraph_tf.serving import json_parse, json_tensors

    doc = json_parse.parse_request_body(
        b'{"examples": [{"n": -9223372036854775808, "m": [9223372036854775807]}]}'
    )
    ex = json_to_example(doc["examples"][0])
    assert kinds(ex) == {"n": "int64_list", "m": "int64_list"}
    assert list(ex.features.feature["n"].int64_list.value) == [-(2**63)]
    feeds, _ = json_tensors.predict_feeds(
        json_parse.parse_request_body(b'{"inputs": [-9223372036854775808, 1]}'), {"x": 9}, ""
    )
    assert feeds["x"].dtype == np.int64 and feeds["x"].tolist() == [-(2**63), 1]
    below = json_parse.parse_request_body(b'{"inputs": [-9223372036854775809]}')
    with pytest.raises(ServingFailure, match=r"Type: Number is not of expected type: int64$"):
        json_tensors.predict_feeds(below, {"x": 9}, "")
