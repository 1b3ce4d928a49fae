"""TF Serving's ``:predict`` JSON (``util/json_tensor.cc``, ``FillPredictRequestFromJson`` and
``MakeJsonFromTensors``): a body's row (``instances``) or columnar (``inputs``) tensors -> numpy
arrays of the signature's dtypes (:func:`predict_feeds`, :func:`json_to_array`), with TF Serving's
shape, size and type checks and messages; output arrays -> ``predictions`` / ``outputs``
(:func:`predict_response`). A rejection is a :class:`~.errors.ServingFailure`: 400 for bad input,
501 for an input dtype the REST API does not convert. No HTTP here; numpy on first use.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from memgraph_tf.serving import input_specs, json_output
from memgraph_tf.serving.errors import ServingFailure
from memgraph_tf.serving.json_values import (
    INT64_MAX,
    INT64_MIN,
    JsonBigNumber,
    RawJson,
    as_json_number,
    b64_value,
    bad_request,
    float_tokens,
    format_error,
    is_b64,
    json_type,
    json_value_str,
)

_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1
_UINT32_MAX = 2**32 - 1
#: DataType enum -> ``DataTypeString`` (the names TF Serving prints: ``float``, ``int64``, ...).
DATA_TYPE_NAMES = {enum: input_specs.type_string(enum) for enum in input_specs.DTYPE_NAMES}


_NP: dict = {}


def numpy_dtype(dtype_enum: int):
    """The numpy dtype that holds a DataType enum's values (object for strings); None for the
    types without one here (their values are refused by the conversion anyway)."""
    if not _NP:
        import numpy as np

        _NP.update(
            {
                k: np.dtype(v)
                for k, v in {
                    1: np.float32,
                    2: np.float64,
                    3: np.int32,
                    4: np.uint8,
                    5: np.int16,
                    6: np.int8,
                    7: object,
                    9: np.int64,
                    10: np.bool_,
                    19: np.float16,
                    22: np.uint32,
                    23: np.uint64,
                }.items()
            }
        )
    return _NP.get(dtype_enum)


def _type_error(v: Any, dtype_enum: int) -> ServingFailure:
    return bad_request(
        f"JSON Value: {json_value_str(v)} Type: {json_type(v)} is not of expected type: "
        f"{DATA_TYPE_NAMES.get(dtype_enum, str(dtype_enum))}"
    )


def _leaf(v: Any, dtype_enum: int) -> Any:
    """TF Serving's ``AddValueToTensor`` (plus the b64 objects of ``FillTensorProto``) for one
    JSON leaf: the Python value to store, or a 400 / 501 :class:`ServingFailure`."""
    v = as_json_number(v)
    if isinstance(v, dict):
        if dtype_enum != 7:
            raise _type_error(v, dtype_enum)
        if not is_b64(v):
            raise bad_request(
                f"JSON Value: {json_value_str(v)} not formatted correctly for base64 data"
            )
        return b64_value(v)
    is_num = not isinstance(v, bool) and isinstance(v, (int, float, JsonBigNumber))
    if dtype_enum in (1, 2):  # float, double
        # IsNumber(), then GetDouble() (an integer cast to double) / GetFloat() (that double cast
        # to float, by _array): every number is taken, rounded, an infinity beyond float's range
        # (json_tensor_test.cc FloatTensorWithPrecisionLoss, FloatTensorThatExceedsMaxReturnsInf)
        if not is_num:
            raise _type_error(v, dtype_enum)
        return float(v.value if isinstance(v, JsonBigNumber) else v)
    if dtype_enum in (3, 4, 5, 6):  # int32, uint8, int16, int8: rapidjson IsInt()
        if not (isinstance(v, int) and not isinstance(v, bool) and _INT32_MIN <= v <= _INT32_MAX):
            raise _type_error(v, dtype_enum)
        return v
    if dtype_enum == 7:
        if not isinstance(v, str):
            raise _type_error(v, dtype_enum)
        return v.encode("utf-8")
    if dtype_enum == 9:
        if not (isinstance(v, int) and not isinstance(v, bool)):
            raise _type_error(v, dtype_enum)
        return v
    if dtype_enum == 10:
        if not isinstance(v, bool):
            raise _type_error(v, dtype_enum)
        return v
    if dtype_enum == 22:
        if not (isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= _UINT32_MAX):
            raise _type_error(v, dtype_enum)
        return v
    if dtype_enum == 23:
        if isinstance(v, JsonBigNumber) and v.kind == "uint64":
            return v.value
        if not (isinstance(v, int) and not isinstance(v, bool) and v >= 0):
            raise _type_error(v, dtype_enum)
        return v
    raise ServingFailure(
        501,
        f"Conversion of JSON Value: {json_value_str(v)} to type: "
        f"{DATA_TYPE_NAMES.get(dtype_enum, str(dtype_enum))}",
    )


_FAST_TYPES = {1: (float, int), 2: (float, int), 9: (int,), 7: (str,), 10: (bool,)}


def _leaves(values: list, dtype_enum: int, rank: int, level: int) -> list:
    """Convert one innermost list (all of whose elements must be leaves) in order; a fast path
    for homogeneous lists of the common types, the exact element-wise rules otherwise."""
    types = set(map(type, values))
    fast = _FAST_TYPES.get(dtype_enum)
    if fast and types <= set(fast):
        if dtype_enum == 7:
            return [v.encode("utf-8") for v in values]
        if int in types and any(type(v) is int and not INT64_MIN <= v <= INT64_MAX for v in values):
            return [_leaf(v, dtype_enum) for v in values]
        if dtype_enum in (1, 2) and int in types:
            return [float(v) for v in values]  # the double first, as GetFloat() rounds twice
        return values
    out = []
    for v in values:
        if isinstance(v, list):
            raise bad_request(
                f"Encountered list at unexpected level: {level + 1} expected < {rank}"
            )
        out.append(_leaf(v, dtype_enum))
    return out


def _dense_shape(value: Any) -> list[int]:
    """TF Serving's ``GetDenseTensorShape``: the sizes of the first element at each level."""
    shape = []
    while isinstance(value, list):
        shape.append(len(value))
        if not value:
            break
        value = value[0]
    return shape


def _fill(value: Any, level: int, shape: list[int], dtype_enum: int, out: list) -> None:
    """TF Serving's ``FillTensorProto``: append the leaves of ``value`` to ``out`` in row-major
    order, checking that the nesting is the dense ``shape``."""
    rank = len(shape)
    if not isinstance(value, list):
        if level != rank:
            raise bad_request(
                f"JSON Value: {json_value_str(value)} found at incorrect level: "
                f"{level + 1} in the JSON DOM. Expected at level: {rank}"
            )
        out.append(_leaf(value, dtype_enum))
        return
    if level >= rank:
        raise bad_request(f"Encountered list at unexpected level: {level} expected < {rank}")
    if len(value) != shape[level]:
        raise bad_request(
            f"Encountered list at unexpected size: {len(value)} at level: {level} "
            f"expected size: {shape[level]}"
        )
    if level == rank - 1:
        out.extend(_leaves(value, dtype_enum, rank, level))
        return
    for v in value:
        _fill(v, level + 1, shape, dtype_enum, out)


def _tensor_values(value: Any, dtype_enum: int) -> tuple[list[int], list]:
    shape = _dense_shape(value)
    out: list = []
    _fill(value, 0, shape, dtype_enum, out)
    return shape, out


def _array(shape: list[int], values: list, dtype_enum: int):
    import numpy as np

    np_dt = numpy_dtype(dtype_enum)
    if np_dt is None:  # no values reached _leaf (an empty list): still not convertible
        raise ServingFailure(
            501,
            f"Conversion of JSON Value: [] to type: "
            f"{DATA_TYPE_NAMES.get(dtype_enum, str(dtype_enum))}",
        )
    if np_dt == np.dtype(object):
        arr = np.empty(len(values), dtype=object)
        arr[:] = values
        return arr.reshape(shape)
    if np_dt.kind in "iu" and np_dt.itemsize < 4:
        # TF Serving stores int8/int16/uint8 values in TensorProto.int_val (int32) and casts.
        return np.array(values, dtype=np.int64).astype(np_dt).reshape(shape)
    with np.errstate(over="ignore"):  # a double beyond float32's range is an infinity
        return np.array(values, dtype=np_dt).reshape(shape)


def json_to_array(
    value: Any, dtype_enum: int, what: str = "", check: Callable[[list[int]], None] | None = None
):
    """A JSON value (nested lists) -> numpy array of the signature input's dtype
    (``dtype_enum``, a ``DataType`` enum), by TF Serving's ``GetDenseTensorShape`` /
    ``FillTensorProto`` / ``AddValueToTensor``: 400 with its messages for ragged lists or values
    of another type, 501 for a dtype the REST API does not convert. ``check(shape)`` (optional)
    runs once the elements are read and before any array is built (the signature check,
    :func:`.input_specs.check_input`). ``what`` is unused (kept for callers)."""
    del what
    shape, values = _tensor_values(value, dtype_enum)
    if check is not None:
        check(shape)
    return _array(shape, values, dtype_enum)


#: A signature check: ``check(input name, shape)`` raises a ServingFailure for a shape the
#: signature cannot take.
_Check = Callable[[str, list[int]], None]


def _bound(check: _Check | None, name: str) -> Callable[[list[int]], None] | None:
    return None if check is None else (lambda shape: check(name, shape))


def _shape_str(shape: list[int]) -> str:
    return "[" + ",".join(str(d) for d in shape) + "]"


def _status_text(exc: ServingFailure) -> str:
    """absl::Status::ToString() of a failure, as TF Serving nests it in row-format errors."""
    return f"{exc.grpc_code or 'UNKNOWN'}: {exc.message}"


def _instances_feeds(doc: dict, infos: dict[str, int], check: _Check | None = None) -> dict:
    """TF Serving's ``FillTensorMapFromInstancesList``; ``check(name, shape)`` runs on each
    batched input's shape before its array is built."""
    inst = doc["instances"]
    if not isinstance(inst[0], dict) and len(infos) > 1:
        raise bad_request(
            "instances is a plain list, but expecting list of objects as multiple "
            "input tensors required as per tensorinfo_map"
        )

    def element_is_object(v: Any) -> bool:
        return isinstance(v, dict) and not is_b64(v)

    objects = element_is_object(inst[0])
    names = sorted(infos)
    sizes: dict[str, int] = {}
    shapes: dict[str, list[int]] = {}
    values: dict[str, list] = {}

    def add(item: Any, name: str) -> None:
        if name not in infos:
            raise bad_request(f"JSON object: does not have named input: {name}")
        shape, vals = _tensor_values(item, infos[name])
        if name not in sizes:
            sizes[name], shapes[name], values[name] = len(vals), shape, []
        elif sizes[name] != len(vals):
            raise bad_request(f"Expecting tensor size: {sizes[name]} but got: {len(vals)}")
        elif shapes[name] != shape:
            raise bad_request(
                f"Expecting shape {_shape_str(shapes[name])} but got: {_shape_str(shape)}"
            )
        values[name].extend(vals)

    for i, elem in enumerate(inst):
        if objects:
            if not element_is_object(elem):
                raise bad_request(f"Expecting object but got list at item {i} of input list")
            for name, item in elem.items():
                try:
                    add(item, name)
                except ServingFailure as exc:
                    raise bad_request(
                        f"Failed to process element: {i} key: {name} of 'instances' list. "
                        f"Error: {_status_text(exc)}"
                    ) from None
            if set(elem) != set(infos):
                raise bad_request(
                    f"Failed to process element: {i} of 'instances' list. JSON object: "
                    f"{json_value_str(elem)} keys must be equal to: {','.join(names)}"
                )
        else:
            if element_is_object(elem):
                raise bad_request(f"Expecting value/list but got object at item {i} of input list")
            try:
                add(elem, names[0])
            except ServingFailure as exc:
                raise bad_request(
                    f"Failed to process element: {i} of 'instances' list. Error: "
                    f"{_status_text(exc)}"
                ) from None
    n = len(inst)
    if check is not None:
        for name in values:
            check(name, [n] + shapes[name])
    return {name: _array([n] + shapes[name], values[name], infos[name]) for name in values}


def predict_feeds(
    doc: dict, inputs: Mapping[str, int], signature_name: str, check: _Check | None = None
) -> tuple[dict, bool]:
    """A ``:predict`` body -> ``({input name: numpy array}, columnar)`` for a signature whose
    inputs are ``{name: DataType enum}``, by TF Serving's ``FillPredictRequestFromJson``: exactly
    one of row format (``instances``) and columnar format (``inputs``, ``columnar`` True); every
    rejection with TF Serving's message. ``check(name, shape)`` (optional; the model server
    passes :func:`.input_specs.check_input` for the signature) runs on each input's shape once
    its JSON elements are read, before any array is built: a shape the signature cannot take
    never reaches numpy or TensorFlow."""
    infos = dict(inputs)
    if not infos:
        raise bad_request(f"Failed to get input map for signature: {signature_name or 'DEFAULT'}")
    has_inst, has_inputs = "instances" in doc, "inputs" in doc
    if has_inst:
        if has_inputs:
            raise format_error(
                doc,
                "Not formatted correctly expecting only one of 'inputs' or "
                "'instances' keys to exist ",
            )
        if not isinstance(doc["instances"], list):
            raise format_error(doc, "Excepting 'instances' to be an list/array")
        if not doc["instances"]:
            raise format_error(doc, "No values in 'instances' array")
        return _instances_feeds(doc, infos, check), False
    if not has_inputs:
        raise bad_request("Missing 'inputs' or 'instances' key")
    val = doc["inputs"]
    feeds: dict[str, Any] = {}
    if not isinstance(val, dict) or is_b64(val):
        if len(infos) > 1:
            raise bad_request(
                "inputs is a plain value/list, but expecting an object as multiple "
                "input tensors required as per tensorinfo_map"
            )
        name = next(iter(infos))
        feeds[name] = json_to_array(val, infos[name], check=_bound(check, name))
    else:
        for name in sorted(infos):
            if name not in val:
                raise bad_request(f"Missing named input: {name} in 'inputs' object.")
            feeds[name] = json_to_array(val[name], infos[name], check=_bound(check, name))
    return feeds, True


def request_batch_size(doc: dict) -> int:
    """How many examples / instances a request body holds (``examples`` or ``instances``
    length; for columnar ``inputs``, the largest first dimension), for a per-request cap; 0
    when the body has none of these lists."""
    for key in ("examples", "instances"):
        if isinstance(doc.get(key), list):
            return len(doc[key])
    val = doc.get("inputs")
    if isinstance(val, list):
        return len(val)
    if isinstance(val, dict):
        return max((len(v) for v in val.values() if isinstance(v, list)), default=0)
    return 0


# -- answers
def tensor_tokens(name: str, arr):
    """An output array -> numpy object array (same shape) of JSON texts, by the rules of
    :mod:`.json_output` (TF Serving's ``AddSingleValueAndAdvance``): float/half/double by
    :func:`format_decimal`, ints, bools, strings as text (``{"b64": ...}`` when the output's name
    ends in ``_bytes``, or -- unlike TF Serving, which writes the raw bytes -- when they are not
    UTF-8). 400 "Failed to write JSON value for tensor type: T" for any other dtype (complex64,
    uint16, bfloat16, ...)."""
    import numpy as np

    kind = json_output.value_kind(arr)
    flat = arr.ravel()
    if kind == "float":
        tokens = float_tokens(arr)
    elif kind == "int":
        tokens = [str(v) for v in flat.tolist()]
    elif kind == "bool":
        tokens = ["true" if v else "false" for v in flat.tolist()]
    else:
        as_b64 = json_output.is_bytes_output(name)
        tokens = []
        for v in flat.tolist():
            value = json_output.string_value(v, as_b64, arr)
            tokens.append(
                json.dumps(value, ensure_ascii=False)
                if isinstance(value, str)
                else '{"b64":"' + value["b64"] + '"}'
            )
    out = np.empty(len(tokens), dtype=object)
    out[:] = tokens
    return out.reshape(arr.shape)


def _nest(tokens) -> str:
    if isinstance(tokens, str):  # one element of a 1-D token array
        return tokens
    if tokens.ndim == 0:
        return tokens.item()
    if tokens.ndim == 1:
        return "[" + ",".join(tokens.tolist()) + "]"
    return "[" + ",".join(_nest(t) for t in tokens) + "]"


def tensor_to_json(name: str, arr) -> RawJson:
    """One output array as JSON text (see :func:`tensor_tokens`)."""
    import numpy as np

    return RawJson(_nest(tensor_tokens(name, np.asarray(arr))))


def predict_response(out: Mapping[str, Any], columnar: bool) -> dict:
    """Signature outputs (numpy arrays) -> ``{"outputs": ...}`` (columnar) or
    ``{"predictions": ...}`` (row format: one object per batch row, or the bare values when there
    is one output), laid out by :func:`.json_output.arrange` (TF Serving's
    ``MakeJsonFromTensors``). 400 when a row-format output has no shape information (a scalar),
    the batch sizes differ, or a dtype cannot be written. Write it with :func:`dumps`."""
    import numpy as np

    arrays = {k: np.asarray(v) for k, v in out.items()}
    if columnar:
        return {"outputs": json_output.arrange(arrays, True, tensor_to_json)}
    return {
        "predictions": json_output.arrange(
            arrays, False, tensor_tokens, row=lambda tokens, i: RawJson(_nest(tokens[i]))
        )
    }


__all__ = [
    "DATA_TYPE_NAMES",
    "json_to_array",
    "numpy_dtype",
    "predict_feeds",
    "predict_response",
    "request_batch_size",
    "tensor_to_json",
    "tensor_tokens",
]
