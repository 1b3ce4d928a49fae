"""TF Serving's REST JSON <-> tf.Example / tensor conversion, written from its rules
(``g3doc/api_rest.md``, ``util/json_tensor.cc``), with TF Serving's error messages.

- request bodies: :func:`parse_request_body` (a JSON object with an optional string
  ``signature_name``);
- ``:classify`` / ``:regress``: :func:`request_examples` and :func:`serialize_examples` (JSON
  examples, merged with ``context``, -> serialized ``tf.Example`` s via :func:`json_to_example`);
  answers from :func:`classify_response` and :func:`regress_response`;
- ``:predict``: :func:`predict_feeds` (row ``instances`` or columnar ``inputs`` -> numpy arrays of
  the signature's dtypes) and :func:`predict_response` (outputs -> ``predictions`` / ``outputs``).

Every rejection is a :class:`ServingFailure` carrying the HTTP status TF Serving answers with
(400 for bad input, 501 for an unsupported dtype, 500 for an output that breaks the API). No
HTTP and no model execution here; TensorFlow and numpy are imported on first use.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from memgraph_tf.serving.errors import ServingFailure


def bad_request(message: str) -> ServingFailure:
    """A 400 :class:`ServingFailure`."""
    return ServingFailure(400, message)


_bad = bad_request

_F32_MAX = 3.4028234663852886e38
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_KIND_NAMES = {"bytes_list": "bytes", "float_list": "float", "int64_list": "int64"}


# ------------------------------------------------------------------------------------ JSON values
def json_type(v: Any) -> str:
    """The JSON type name TF Serving's messages use for a parsed value."""
    if v is None:
        return "Null"
    if v is True:
        return "True"
    if v is False:
        return "False"
    if isinstance(v, dict):
        return "Object"
    if isinstance(v, list):
        return "Array"
    if isinstance(v, str):
        return "String"
    return "Number"


def is_b64(v: Any) -> bool:
    """True for ``{"b64": "<text>"}`` (the only key): TF Serving's encoding of binary values."""
    return isinstance(v, dict) and len(v) == 1 and isinstance(v.get("b64"), str)


def b64_value(v: dict) -> bytes:
    """The bytes of a ``{"b64": ...}`` value (standard base64, padding optional); 400 "Unable to
    base64 decode" otherwise."""
    text = v["b64"]
    try:
        return base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise _bad("Unable to base64 decode") from None


def parse_request_body(body: bytes) -> dict:
    """A POST body -> its JSON object. 400 for an empty body, text that is not UTF-8 JSON, a
    value that is not an object, or a ``signature_name`` that is not a string."""
    if not body:
        raise _bad("JSON Parse error: The document is empty")
    try:
        doc = json.loads(body)
    except UnicodeDecodeError as exc:
        raise _bad(f"JSON Parse error: Invalid encoding in string. at offset: {exc.start}") \
            from None
    except json.JSONDecodeError as exc:
        raise _bad(f"JSON Parse error: {exc.msg} at offset: {exc.pos}") from None
    if not isinstance(doc, dict):
        raise _bad(f"JSON Value: {json.dumps(doc)[:200]} Is not object")
    sig = doc.get("signature_name")
    if sig is not None and not isinstance(sig, str):
        raise _bad("JSON Value: not formatted correctly. 'signature_name' key must be a "
                   "string value.")
    return doc


# ---------------------------------------------------------------------------------- tf.Example
def _add_feature_value(feature, kind: list, name: str, v: Any) -> None:
    def want(k: str) -> None:
        if kind and kind[0] != k:
            raise _bad(
                f"Unexpected element type in feature: {name} expecting type: {_KIND_NAMES[kind[0]]}"
            )
        if not kind:
            kind.append(k)

    if v is None or isinstance(v, list) or (isinstance(v, dict) and not is_b64(v)):
        raise _bad(f"Feature: {name} has element with unexpected JSON type: {json_type(v)}")
    if isinstance(v, bool):
        want("int64_list")
        feature.int64_list.value.append(int(v))
    elif isinstance(v, dict):
        want("bytes_list")
        feature.bytes_list.value.append(b64_value(v))
    elif isinstance(v, str):
        want("bytes_list")
        feature.bytes_list.value.append(v.encode("utf-8"))
    elif isinstance(v, float):
        want("float_list")
        if math.isfinite(v) and abs(v) > _F32_MAX:
            raise _bad(f"Cannot convert JSON value: {v!r} to float without loss of precision.")
        feature.float_list.value.append(v)
    else:
        want("int64_list")
        if v > _INT64_MAX or v < _INT64_MIN:
            raise _bad(f"Feature: {name} has uint64 element. Only int64 is supported.")
        feature.int64_list.value.append(v)


def _fast_fill(feature, content: list) -> bool:
    """Fill a feature from a homogeneous list of floats or of ints in one call (the same result
    as the element-wise path); False when the list is mixed, so the slow path reports the error."""
    first = type(content[0])
    if first is float and all(type(v) is float for v in content):
        if any(abs(v) > _F32_MAX and math.isfinite(v) for v in content):
            return False
        feature.float_list.value.extend(content)
        return True
    if first is int and all(type(v) is int for v in content):
        if any(v > _INT64_MAX or v < _INT64_MIN for v in content):
            return False
        feature.int64_list.value.extend(content)
        return True
    return False


def json_to_example(obj: Any):
    """One JSON example object -> ``tf.train.Example`` by TF Serving's rules: string -> bytes,
    ``{"b64": ...}`` -> decoded bytes, number with a decimal point -> float, integer or bool ->
    int64; the first element of a list fixes the feature's kind. 400 for anything else."""
    from tensorflow.core.example import example_pb2

    if not isinstance(obj, dict):
        raise _bad(f"Example must be JSON object but got JSON {json_type(obj)}")
    ex = example_pb2.Example()
    for name, content in obj.items():
        feature = ex.features.feature[name]
        if isinstance(content, list) and content and _fast_fill(feature, content):
            continue
        kind: list = []
        for v in content if isinstance(content, list) else [content]:
            _add_feature_value(feature, kind, name, v)
    return ex


def request_examples(doc: dict, method: str) -> list:
    """The ``examples`` list of a ``:classify`` / ``:regress`` body (not yet converted); 400 when
    it is missing, not a list, or empty."""
    if "examples" not in doc:
        raise _bad(f"JSON Value: {json.dumps(doc)[:200]} When method is {method}, key "
                   f"'examples' is expected and was not found")
    examples = doc["examples"]
    if not isinstance(examples, list):
        raise _bad(f"JSON Value: {json.dumps(doc)[:200]} Expecting 'examples' value to be "
                   f"an list/array")
    if not examples:
        raise _bad(f"JSON Value: {json.dumps(doc)[:200]} 'examples' value is an empty array")
    return examples


NO_CONTEXT: Any = object()


def serialize_examples(examples: Sequence[Any], context: Any = NO_CONTEXT) -> list[bytes]:
    """Serialized ``tf.Example`` s, one per JSON example, each merged with ``context`` (unless it
    is :data:`NO_CONTEXT`; a JSON ``null`` context is a 400 like any non-object example):
    concatenated serialized protos merge, so the example's own features override the context's,
    as in TF Serving's ExampleListWithContext."""
    ctx = json_to_example(context).SerializeToString() if context is not NO_CONTEXT else b""
    return [ctx + json_to_example(e).SerializeToString() for e in examples]


def classify_response(classes, scores) -> dict:
    """``{"results": [[[label, score], ...], ...]}`` from ``[n, k]`` arrays of class labels
    (bytes) and/or scores (either may be None: labels "" / scores 0.0, as TF Serving writes)."""
    ref = classes if classes is not None else scores
    n, k = ref.shape
    results = []
    for r in range(n):
        row = []
        for j in range(k):
            label = classes[r, j].decode("utf-8", "replace") if classes is not None else ""
            score = float(scores[r, j]) if scores is not None else 0.0
            row.append([label, score])
        results.append(row)
    return {"results": results}


def regress_response(values) -> dict:
    """``{"results": [v, ...]}`` from a ``[n]`` array."""
    return {"results": values.astype("float64").tolist()}


# -------------------------------------------------------------------------------------- tensors
_DT: dict = {}


def _dtypes():
    if not _DT:
        import numpy as np
        import tensorflow as tf

        for dt in (tf.float32, tf.float64, tf.int32, tf.int64, tf.int16, tf.int8, tf.uint8,
                   tf.uint32, tf.uint64, tf.bool, tf.string, tf.float16):
            _DT[dt.as_datatype_enum] = (dt, np.dtype(dt.as_numpy_dtype) if dt != tf.string
                                        else np.dtype(object))
    return _DT


def json_to_array(value: Any, dtype_enum: int, what: str):
    """A JSON value (nested lists) -> ``(tf dtype, numpy array)`` of the signature input's dtype
    (``dtype_enum``, a ``DataType`` enum). 400 for ragged lists or values of another type; 501
    for a dtype the REST API does not convert."""
    import numpy as np

    table = _dtypes()
    if dtype_enum not in table:
        raise ServingFailure(501, f"Conversion of JSON Value to type enum {dtype_enum} ({what})")
    tf_dt, np_dt = table[dtype_enum]
    if tf_dt.name == "string":
        def conv(v):
            if isinstance(v, list):
                return [conv(x) for x in v]
            if isinstance(v, str):
                return v.encode("utf-8")
            if is_b64(v):
                return b64_value(v)
            raise _bad(f"JSON Value: {json.dumps(v)} Type: {json_type(v)} is not of expected "
                       f"type: string ({what})")
        value = conv(value)
    try:
        arr = np.array(value, dtype=object if tf_dt.name == "string" else None)
    except ValueError as exc:
        raise _bad(f"{what}: expected a rectangular nested list, got ragged lists ({exc})") from None
    if arr.dtype == object and tf_dt.name != "string":
        raise _bad(f"{what}: expected a rectangular nested list of numbers for type "
                   f"{tf_dt.name}, got {json.dumps(value)[:200]}")
    kind = arr.dtype.kind
    ok = {
        "f": kind in "iuf", "i": kind in "iu", "u": kind in "iu", "b": kind == "b",
    }.get(np_dt.kind, True)
    if tf_dt.name == "string":
        ok = arr.size == 0 or all(isinstance(x, bytes) for x in arr.reshape(-1))
    if not ok:
        sample = arr.reshape(-1)[0].item() if arr.size else None
        raise _bad(f"JSON Value: {json.dumps(sample)} Type: {json_type(sample)} is not of "
                   f"expected type: {tf_dt.name} ({what})")
    if tf_dt.name != "string":
        arr = arr.astype(np_dt)
    return tf_dt, arr


def tensor_to_json(name: str, arr) -> Any:
    """A numpy output -> JSON-ready Python values: floats as float64 lists; strings as text, or
    ``{"b64": ...}`` when the output's name ends in ``_bytes`` or the bytes are not UTF-8."""
    if arr.dtype == object or arr.dtype.kind == "S":
        as_b64 = name.endswith("_bytes")

        def conv(v):
            if isinstance(v, list):
                return [conv(x) for x in v]
            if as_b64:
                return {"b64": base64.b64encode(v).decode("ascii")}
            try:
                return v.decode("utf-8")
            except UnicodeDecodeError:
                return {"b64": base64.b64encode(v).decode("ascii")}
        return conv(arr.tolist())
    if arr.dtype.kind == "f":
        return arr.astype("float64").tolist()
    return arr.tolist()


def predict_feeds(doc: dict, inputs: Mapping[str, int], signature_name: str) -> tuple[dict, bool]:
    """A ``:predict`` body -> ``({input name: (tf dtype, numpy array)}, columnar)`` for a
    signature whose inputs are ``{name: DataType enum}``. Exactly one of row format
    (``instances``) and columnar format (``inputs``, ``columnar`` True); 400 otherwise, with
    TF Serving's messages."""
    infos = dict(inputs)
    if not infos:
        raise _bad(f"Failed to get input map for signature: {signature_name}")
    has_inst, has_inputs = "instances" in doc, "inputs" in doc
    if has_inst == has_inputs:
        if has_inst:
            raise _bad("Not formatted correctly expecting only one of 'inputs' or "
                       "'instances' keys to exist")
        raise _bad("Missing 'inputs' or 'instances' key")
    feeds: dict[str, Any] = {}
    if has_inst:
        inst = doc["instances"]
        if not isinstance(inst, list):
            raise _bad("Excepting 'instances' to be an list/array")
        if not inst:
            raise _bad("No values in 'instances' array")
        named = isinstance(inst[0], dict) and not is_b64(inst[0])
        if not named and len(infos) > 1:
            raise _bad("instances is a plain list, but expecting list of objects as multiple "
                       "input tensors required as per tensorinfo_map")
        cols: dict[str, list] = {k: [] for k in infos} if named else {next(iter(infos)): []}
        for i, item in enumerate(inst):
            if named:
                if not isinstance(item, dict) or is_b64(item):
                    raise _bad(f"Expecting object but got list at item {i} of input list")
                if set(item) != set(infos):
                    raise _bad(f"Failed to process element: {i} of 'instances' list. JSON "
                               f"object: keys must be equal to: {','.join(sorted(infos))}")
                for k, v in item.items():
                    cols[k].append(v)
            else:
                if isinstance(item, dict) and not is_b64(item):
                    raise _bad(f"Expecting value/list but got object at item {i} of input "
                               f"list")
                cols[next(iter(cols))].append(item)
        for k, vals in cols.items():
            feeds[k] = json_to_array(vals, infos[k], f"input {k!r}")
    else:
        val = doc["inputs"]
        if isinstance(val, dict) and not is_b64(val):
            for k in infos:
                if k not in val:
                    raise _bad(f"Missing named input: {k} in 'inputs' object.")
                feeds[k] = json_to_array(val[k], infos[k], f"input {k!r}")
        else:
            if len(infos) > 1:
                raise _bad("inputs is a plain value/list, but expecting an object as "
                           "multiple input tensors required as per tensorinfo_map")
            k = next(iter(infos))
            feeds[k] = json_to_array(val, infos[k], f"input {k!r}")
    return feeds, has_inputs


def predict_response(out: Mapping[str, Any], columnar: bool) -> dict:
    """Signature outputs (numpy arrays) -> ``{"outputs": ...}`` (columnar) or
    ``{"predictions": ...}`` (row format: one object per batch row, or the bare values when there
    is one output). 500 when a row-format output has no batch dimension or the batch sizes
    differ."""
    names = sorted(out)
    if columnar:
        if len(names) == 1:
            return {"outputs": tensor_to_json(names[0], out[names[0]])}
        return {"outputs": {k: tensor_to_json(k, out[k]) for k in names}}
    batch = None
    for k in names:
        if out[k].ndim == 0:
            raise ServingFailure(500, f"Tensor name: {k} has no shape information ")
        if batch is not None and out[k].shape[0] != batch:
            raise ServingFailure(500, f"Tensor name: {k} has inconsistent batch size: "
                                 f"{out[k].shape[0]} expecting: {batch}")
        batch = out[k].shape[0]
    values = {k: tensor_to_json(k, out[k]) for k in names}
    if len(names) == 1:
        return {"predictions": values[names[0]]}
    return {"predictions": [{k: values[k][i] for k in names} for i in range(batch)]}


__all__ = [
    "NO_CONTEXT",
    "ServingFailure",
    "b64_value",
    "bad_request",
    "classify_response",
    "is_b64",
    "json_to_array",
    "json_to_example",
    "json_type",
    "parse_request_body",
    "predict_feeds",
    "predict_response",
    "regress_response",
    "request_examples",
    "serialize_examples",
    "tensor_to_json",
]
