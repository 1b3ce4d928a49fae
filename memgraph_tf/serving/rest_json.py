"""The REST JSON layer's public names in one place, for callers that import them from here.

The layer itself is four modules, one job each:

- :mod:`.json_values` -- the JSON value model, TF Serving's value texts and number printing;
- :mod:`.json_parse` -- request bodies -> JSON documents, rapidjson's rules and words;
- :mod:`.json_examples` -- ``:classify`` / ``:regress``: JSON <-> tf.Example and the answers;
- :mod:`.json_tensors` -- ``:predict``: row / columnar JSON <-> numpy arrays and the answers.
"""

from __future__ import annotations

from memgraph_tf.serving.errors import ServingFailure
from memgraph_tf.serving.json_examples import (
    NO_CONTEXT,
    classify_response,
    json_to_example,
    regress_response,
    request_context,
    request_examples,
    serialize_examples,
)
from memgraph_tf.serving.json_parse import (
    DEFAULT_MAX_JSON_DEPTH,
    REQUEST_KEYS,
    SURROGATE_INVALID,
    check_json_depth,
    deep_members,
    parse_request_body,
    surrogate_error_offset,
)
from memgraph_tf.serving.json_tensors import (
    DATA_TYPE_NAMES,
    json_to_array,
    numpy_dtype,
    predict_feeds,
    predict_response,
    request_batch_size,
    tensor_to_json,
    tensor_tokens,
)
from memgraph_tf.serving.json_values import (
    DEBUG_STRING_BYTES,
    INT64_MAX,
    INT64_MIN,
    JsonBigNumber,
    RawJson,
    SkippedValue,
    as_json_number,
    b64_value,
    bad_request,
    dumps,
    float_tokens,
    format_decimal,
    format_error,
    is_b64,
    json_type,
    json_value_str,
    rapidjson_double,
)

__all__ = [
    "DATA_TYPE_NAMES",
    "DEBUG_STRING_BYTES",
    "DEFAULT_MAX_JSON_DEPTH",
    "INT64_MAX",
    "INT64_MIN",
    "NO_CONTEXT",
    "REQUEST_KEYS",
    "SURROGATE_INVALID",
    "JsonBigNumber",
    "RawJson",
    "ServingFailure",
    "SkippedValue",
    "as_json_number",
    "b64_value",
    "bad_request",
    "check_json_depth",
    "classify_response",
    "deep_members",
    "dumps",
    "float_tokens",
    "format_decimal",
    "format_error",
    "is_b64",
    "json_to_array",
    "json_to_example",
    "json_type",
    "json_value_str",
    "numpy_dtype",
    "parse_request_body",
    "predict_feeds",
    "predict_response",
    "rapidjson_double",
    "regress_response",
    "request_batch_size",
    "request_context",
    "request_examples",
    "serialize_examples",
    "surrogate_error_offset",
    "tensor_to_json",
    "tensor_tokens",
]
