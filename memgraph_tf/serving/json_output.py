"""TF Serving's rules for writing tensors as REST JSON, in one place: which dtypes can be written
and as what, when bytes become ``{"b64": ...}``, and how ``:predict`` outputs are laid out.

Written from TF Serving's ``tensorflow_serving/util/json_tensor.cc``:

- ``AddSingleValueAndAdvance`` writes DT_FLOAT, DT_DOUBLE, DT_HALF (as decimals), DT_INT8,
  DT_INT16, DT_INT32, DT_UINT8, DT_INT64, DT_UINT32, DT_UINT64 (as integers), DT_BOOL and
  DT_STRING; every other dtype -- DT_UINT16 among them (its ``switch`` has no case for it), the
  complex types, DT_BFLOAT16 -- fails with INVALID_ARGUMENT "Failed to write JSON value for tensor
  type: T" (400). :func:`value_kind` is that rule;
- ``IsNamedTensorBytes``: a string output whose name ends in ``_bytes`` is written as
  ``{"b64": ...}``; other strings as text (:func:`string_value`; we also write bytes that are
  not UTF-8 as ``{"b64": ...}``, where TF Serving writes the raw bytes into its JSON);
- ``MakeJsonFromTensors`` (``MakeRowFormatJsonFromTensors``,
  ``MakeColumnarFormatJsonFromTensors``): the layout of the ``outputs`` (columnar) and
  ``predictions`` (row format) values, with their 400 messages (:func:`arrange`).

The server (:mod:`.json_tensors`, which writes JSON text) and the gRPC client
(:mod:`.grpc_client`, whose ``predict`` returns what REST's JSON would hold, as Python values:
:func:`json_value`) both follow these rules. Standard library and numpy only.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping
from typing import Any

from memgraph_tf.serving.errors import ServingFailure

#: TF Serving's suffix for output names whose strings are bytes (``kBytesTensorNameSuffix``).
BYTES_SUFFIX = "_bytes"

# numpy dtype name -> TF's DataTypeString where the two differ (the name in the 400 message).
_TF_NAMES = {"float32": "float", "float64": "double", "float16": "half"}
# numpy dtype names -> the kind AddSingleValueAndAdvance writes them as.
_KINDS = {
    "float16": "float",
    "float32": "float",
    "float64": "float",
    "int8": "int",
    "int16": "int",
    "int32": "int",
    "int64": "int",
    "uint8": "int",
    "uint32": "int",
    "uint64": "int",
    "bool": "bool",
}


def dtype_name(arr: Any) -> str:
    """The TF name of an array's dtype, as TF Serving's messages print it (``float``,
    ``uint16``)."""
    name = str(arr.dtype)
    return _TF_NAMES.get(name, name)


def write_error(arr: Any) -> ServingFailure:
    """TF Serving's 400 for an output it cannot write (``AddSingleValueAndAdvance``)."""
    return ServingFailure(400, f"Failed to write JSON value for tensor type: {dtype_name(arr)}")


def value_kind(arr: Any) -> str:
    """How an output array's values are written: ``"float"``, ``"int"``, ``"bool"`` or
    ``"string"``. Raises the 400 :func:`write_error` for every dtype TF Serving's
    ``AddSingleValueAndAdvance`` has no case for (uint16, complex64/128, bfloat16, ...)."""
    if arr.dtype.kind in "OSU":
        return "string"
    kind = _KINDS.get(str(arr.dtype))
    if kind is None:
        raise write_error(arr)
    return kind


def is_bytes_output(name: str) -> bool:
    """Whether TF Serving writes a string output named ``name`` as ``{"b64": ...}``."""
    return name.endswith(BYTES_SUFFIX)


def string_value(value: Any, as_b64: bool, arr: Any) -> str | dict:
    """One string element of ``arr`` as the JSON value it is written as: its text, or ``{"b64":
    "<standard base64>"}`` when ``as_b64`` or when the bytes are not UTF-8. An element that is
    neither bytes nor str is the 400 :func:`write_error` for ``arr``."""
    if isinstance(value, str):
        value = value.encode("utf-8")
    if not isinstance(value, bytes):
        raise write_error(arr)
    if not as_b64:
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            pass
    return {"b64": base64.b64encode(value).decode("ascii")}


def json_value(name: str, arr: Any) -> Any:
    """An output array as the REST API's JSON value, read back into Python (nested lists):
    floats as their exact float16/32/64 values, ints, bools, strings as :func:`string_value`
    gives them. 400 for a dtype TF Serving cannot write (:func:`value_kind`)."""
    kind = value_kind(arr)
    values = arr.tolist()
    if kind != "string":
        return values
    as_b64 = is_bytes_output(name)

    def conv(v: Any) -> Any:
        if isinstance(v, list):
            return [conv(x) for x in v]
        return string_value(v, as_b64, arr)

    return conv(values)


def arrange(
    out: Mapping[str, Any],
    columnar: bool,
    convert: Callable[[str, Any], Any],
    row: Callable[[Any, int], Any] = lambda value, i: value[i],
) -> Any:
    """Predict outputs (``{name: numpy array}``) laid out as TF Serving's ``MakeJsonFromTensors``
    does, each array written by ``convert(name, array)``: columnar -- the one output's value, or
    ``{name: value}`` (names sorted); row format -- one item per batch row (``row(value, i)``),
    the bare value when there is one output, else ``{name: value}``. 400 with TF Serving's
    messages for no outputs, a row-format output without a first dimension, or first
    dimensions that differ (checked before any value is converted)."""
    names = sorted(out)
    if not names:
        raise ServingFailure(400, "Cannot convert empty tensor map to JSON")
    if columnar:
        if len(names) == 1:
            return convert(names[0], out[names[0]])
        return {k: convert(k, out[k]) for k in names}
    batch = None
    for k in names:
        if out[k].ndim == 0:
            raise ServingFailure(400, f"Tensor name: {k} has no shape information ")
        if batch is not None and out[k].shape[0] != batch:
            raise ServingFailure(
                400,
                f"Tensor name: {k} has inconsistent batch size: {out[k].shape[0]} "
                f"expecting: {batch}",
            )
        batch = out[k].shape[0]
    values = {k: convert(k, out[k]) for k in names}
    if len(names) == 1:
        return [row(values[names[0]], i) for i in range(batch)]
    return [{k: row(values[k], i) for k in names} for i in range(batch)]


__all__ = [
    "BYTES_SUFFIX",
    "arrange",
    "dtype_name",
    "is_bytes_output",
    "json_value",
    "string_value",
    "value_kind",
    "write_error",
]
