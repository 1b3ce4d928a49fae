"""TF Serving's ``:classify`` / ``:regress`` JSON (``util/json_tensor.cc``,
``FillClassifyRegressRequestFromJson``, ``MakeJsonFromClassificationResult`` /
``...RegressionResult``): JSON example objects -> ``tf.train.Example`` (:func:`json_to_example`),
the body's ``context`` and ``examples`` (:func:`request_context`, :func:`request_examples`),
serialized examples merged with their context (:func:`serialize_examples`), and the answers
(:func:`classify_response`, :func:`regress_response`). No HTTP here; TensorFlow only for the
Example proto, numpy on first use.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

from memgraph_tf.errors import ServingFailure
from memgraph_tf.serving import json_values

_F32_MAX = 3.4028234663852886e38
_KIND_NAMES = {"bytes_list": "bytes", "float_list": "float", "int64_list": "int64"}


def _kind_error(name: str, kind: str) -> ServingFailure:
    return json_values.bad_request(
        f"Unexpected element type in feature: {name} expecting type: {_KIND_NAMES[kind]}"
    )


def _add_feature_value(feature, name: str, v: Any) -> None:
    """TF Serving's ``AddValueToFeature`` for one JSON value."""
    kind = feature.WhichOneof("kind")
    v = json_values.as_json_number(v)

    def want(k: str) -> None:
        if kind is not None and kind != k:
            raise _kind_error(name, kind)

    if v is None or isinstance(v, list) or (isinstance(v, dict) and not json_values.is_b64(v)):
        raise json_values.bad_request(
            f"Feature: {name} has element with unexpected JSON type: {json_values.json_type(v)}"
        )
    if isinstance(v, bool):
        want("int64_list")
        feature.int64_list.value.append(int(v))
    elif isinstance(v, dict):
        want("bytes_list")
        feature.bytes_list.value.append(json_values.b64_value(v))
    elif isinstance(v, str):
        want("bytes_list")
        feature.bytes_list.value.append(v.encode("utf-8"))
    elif isinstance(v, float) or (isinstance(v, json_values.JsonBigNumber) and v.kind == "double"):
        want("float_list")  # GetFloat(): rounded to float32, infinity beyond its range
        feature.float_list.value.append(
            _to_float32(v.value if isinstance(v, json_values.JsonBigNumber) else v)
        )
    elif isinstance(v, json_values.JsonBigNumber):  # uint64
        want("int64_list")
        raise json_values.bad_request(
            f"Feature: {name} has uint64_t element. Only int64_t is supported."
        )
    else:
        want("int64_list")
        feature.int64_list.value.append(v)


def _to_float32(x: float) -> float:
    """rapidjson's ``GetFloat()``, ``static_cast<float>`` of the double: rounded to nearest, a
    value beyond float32's range an infinity of its sign, as json_tensor.cc takes such values
    (json_tensor_test.cc FloatTensorThatExceedsMaxReturnsInf)."""
    import numpy as np

    with np.errstate(over="ignore"):
        return float(np.float32(x))


def _fast_fill(feature, content: list) -> bool:
    """Fill a feature from a homogeneous list of floats or of int64 ints in one call (the same
    result as the element-wise path); False when the list is anything else."""
    first = type(content[0])
    if first is float and all(type(v) is float for v in content):
        if any(abs(v) > _F32_MAX and math.isfinite(v) for v in content):
            content = [_to_float32(v) for v in content]
        feature.float_list.value.extend(content)
        return True
    if first is int and all(type(v) is int for v in content):
        if any(v > json_values.INT64_MAX or v < json_values.INT64_MIN for v in content):
            return False
        feature.int64_list.value.extend(content)
        return True
    return False


def json_to_example(obj: Any):
    """One JSON example object -> ``tf.train.Example`` by TF Serving's
    ``MakeExampleFromJsonObject``: string -> bytes, ``{"b64": ...}`` -> decoded bytes, number
    with a decimal point or exponent (or an integer beyond uint64) -> float, integer or bool ->
    int64; the first element of a list fixes the feature's kind; a float is rounded to float32
    (infinity beyond its range), as ``GetFloat()`` does. 400 with TF Serving's message for
    anything else."""
    from tensorflow.core.example import example_pb2

    if not isinstance(obj, dict):
        raise json_values.bad_request(
            f"Example must be JSON object but got JSON {json_values.json_type(obj)}"
        )
    ex = example_pb2.Example()
    for name, content in obj.items():
        feature = ex.features.feature[name]
        if isinstance(content, list):
            if content and _fast_fill(feature, content):
                continue
            for v in content:
                _add_feature_value(feature, name, v)
        else:
            _add_feature_value(feature, name, content)
    return ex


NO_CONTEXT: Any = object()


def request_context(doc: dict):
    """The ``context`` of a ``:classify`` / ``:regress`` body as a ``tf.train.Example``, or
    :data:`NO_CONTEXT` when there is none. Checked before ``examples``, as TF Serving does (a
    body holding only a context that is not an object gets "Example must be JSON object ...")."""
    if "context" not in doc:
        return NO_CONTEXT
    return json_to_example(doc["context"])


def request_examples(doc: dict, method: str = "classify") -> list:
    """The ``examples`` list of a ``:classify`` / ``:regress`` body (not yet converted); 400 when
    it is missing, not a list, or empty. TF Serving's message says "When method is classify"
    for ``:regress`` too, and so does this one; ``method`` is kept for callers."""
    del method
    if "examples" not in doc:
        raise json_values.format_error(
            doc, "When method is classify, key 'examples' is expected and was not found"
        )
    examples = doc["examples"]
    if not isinstance(examples, list):
        raise json_values.format_error(doc, "Expecting 'examples' value to be an list/array")
    if not examples:
        raise json_values.format_error(doc, "'examples' value is an empty array")
    return examples


def serialize_examples(examples: Sequence[Any], context: Any = NO_CONTEXT) -> list[bytes]:
    """Serialized ``tf.Example`` s, one per example (a JSON object or an ``Example``), each
    merged with ``context`` (an ``Example``, a JSON object, or :data:`NO_CONTEXT`): concatenated
    serialized protos merge, so the example's own features override the context's, as in TF
    Serving's ExampleListWithContext."""
    if context is NO_CONTEXT:
        ctx = b""
    else:
        ctx = (
            context if hasattr(context, "SerializeToString") else json_to_example(context)
        ).SerializeToString()
    out = []
    for e in examples:
        ex = e if hasattr(e, "SerializeToString") else json_to_example(e)
        out.append(ctx + ex.SerializeToString())
    return out


def classify_response(classes, scores) -> dict:
    """``{"results": [[[label, score], ...], ...]}`` from ``[n, k]`` arrays of class labels
    (bytes) and/or scores (either may be None: labels "" / scores 0.0, as TF Serving writes);
    scores printed as float32 (:func:`format_decimal`). The results are one
    :class:`~.json_values.RawJson` text; write the answer with :func:`dumps`."""
    import numpy as np

    ref = classes if classes is not None else scores
    n, k = ref.shape
    if scores is not None:
        tokens = json_values.float_tokens(np.asarray(scores, dtype=np.float32))
    else:
        tokens = ["0.0"] * (n * k)
    if classes is not None:
        labels = [
            json.dumps(
                c.decode("utf-8", "replace") if isinstance(c, bytes) else str(c), ensure_ascii=False
            )
            for c in classes.ravel().tolist()
        ]
    else:
        labels = ['""'] * (n * k)
    rows = []
    for r in range(n):
        base = r * k
        rows.append(
            "[" + ",".join(f"[{labels[base + j]},{tokens[base + j]}]" for j in range(k)) + "]"
        )
    return {"results": json_values.RawJson("[" + ",".join(rows) + "]")}


def regress_response(values) -> dict:
    """``{"results": [v, ...]}`` from a ``[n]`` array, printed as float32 (RegressionResult's
    value is a float). Write it with :func:`dumps`."""
    import numpy as np

    return {
        "results": [
            json_values.RawJson(t) for t in json_values.float_tokens(np.asarray(values, np.float32))
        ]
    }


__all__ = [
    "NO_CONTEXT",
    "classify_response",
    "json_to_example",
    "regress_response",
    "request_context",
    "request_examples",
    "serialize_examples",
]
