"""Conversions shared by the gRPC server (:mod:`.grpc_server`) and client (:mod:`.grpc_client`):
numpy arrays <-> ``tensorflow.TensorProto`` and Python feature values -> ``tensorflow.Example``.

- :func:`tensor_to_array` reads a TensorProto the way TensorFlow's ``Tensor::FromProto`` does
  (``tensor_content`` bytes, or the typed repeated field, a short field filled with its last
  value, an empty one with zeros), but checks everything first: the dtype, the shape (no unknown
  rank, no negative dimension), the element count against ``max_elements`` (a shape of 2**40 in a
  few bytes must not allocate anything) and the content length. Failures raise
  :class:`~memgraph_tf.errors.ServingFailure` with 400 (bad proto) or 501 (a dtype this
  server does not convert).
- :func:`array_to_tensor` writes numeric arrays as ``tensor_content`` (one copy) -- or, with
  ``as_proto_field=True``, in the typed repeated field (``float_val``, ``int_val``, ...) as
  TensorFlow's ``Tensor::AsProtoField`` does, which is how TF Serving answers Predict by default
  (:data:`PREDICT_OUTPUTS_AS_PROTO_FIELD`) -- and strings as ``string_val``;
  :func:`tensor_to_array` reads both forms.
- :func:`example_from_features` builds a ``tf.Example`` from a mapping of feature name to value by
  the same rules the REST client writes JSON with (bytes and str -> bytes_list, bool and int ->
  int64_list, float -> float_list, a list holding any float -> all floats).
- Wire framing for the hot paths (no TensorFlow needed): :func:`blob_example_prefix` /
  :func:`serialize_blob_example` give a blob's one-feature ``tf.Example`` and
  :func:`example_request` a whole Classify/Regress request around serialized examples, each byte
  for byte what protobuf's own serializer writes for the same message (tests compare them), in one
  copy of the blobs. Building a 64-blob, 1.1 MB request as protobuf messages and serializing it
  costs this machine 0.8-3 ms (upb's encoder doubles its buffer, and each fresh buffer page
  faults); joining the framed bytes once costs about 0.1 ms.

The protobuf modules come from TensorFlow's package (importing them imports TensorFlow).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from memgraph_tf.errors import ServingFailure
from memgraph_tf.serving import input_specs

#: TensorFlow's largest rank (``TensorShape::MaxDimensions``).
MAX_RANK = input_specs.TF_MAX_RANK

# DataType enum -> (numpy dtype, TensorProto field holding the values). types.proto numbering.
_DTYPES: dict[int, tuple[Any, str]] = {
    1: (np.dtype(np.float32), "float_val"),  # DT_FLOAT
    2: (np.dtype(np.float64), "double_val"),  # DT_DOUBLE
    3: (np.dtype(np.int32), "int_val"),  # DT_INT32
    4: (np.dtype(np.uint8), "int_val"),  # DT_UINT8
    5: (np.dtype(np.int16), "int_val"),  # DT_INT16
    6: (np.dtype(np.int8), "int_val"),  # DT_INT8
    7: (np.dtype(object), "string_val"),  # DT_STRING
    9: (np.dtype(np.int64), "int64_val"),  # DT_INT64
    10: (np.dtype(np.bool_), "bool_val"),  # DT_BOOL
    17: (np.dtype(np.uint16), "int_val"),  # DT_UINT16
    19: (np.dtype(np.float16), "half_val"),  # DT_HALF (bits in an int32 field)
    22: (np.dtype(np.uint32), "uint32_val"),  # DT_UINT32
    23: (np.dtype(np.uint64), "uint64_val"),  # DT_UINT64
}
DT_STRING = 7
DT_HALF = 19

#: How a Predict answer writes its output tensors. TF Serving's ``RunPredict``
#: (``servables/tensorflow/predict_util.cc``) serializes them with
#: ``PredictResponseTensorSerializationOption::kAsProtoField`` -- ``Tensor::AsProtoField``, every
#: element in the dtype's typed field -- unless the server was built or configured for
#: ``kAsProtoContent`` (``ServerCore::Options::predict_response_tensor_serialization_option``,
#: ``model_servers/server_core.h``, whose default is ``kAsProtoField`` "for backward
#: compatibility"; ``TfrtSavedModelConfig`` ``AS_PROTO_CONTENT``). A client must read both forms.
PREDICT_OUTPUTS_AS_PROTO_FIELD = True
_ENUM_FOR_NUMPY = {np_dt: enum for enum, (np_dt, _) in _DTYPES.items() if enum != DT_STRING}


def dtype_name(enum: int) -> str:
    """``DT_FLOAT`` for 1, ...; ``DataType(<n>)`` for a number the enum does not name."""
    from tensorflow.core.framework import types_pb2

    try:
        return types_pb2.DataType.Name(enum)
    except ValueError:
        return f"DataType({enum})"


def supported_dtype(enum: int) -> bool:
    """True when :func:`tensor_to_array` / :func:`array_to_tensor` convert this DataType."""
    return enum in _DTYPES


# ------------------------------------------------------------------------ TensorProto -> numpy
def tensor_to_array(
    tensor: Any,
    what: str,
    max_elements: int,
    check: Callable[[list[int]], None] | None = None,
) -> np.ndarray:
    """A ``TensorProto`` -> numpy array (``object`` array of ``bytes`` for DT_STRING).

    Guarantees: never allocates more than ``max_elements`` elements; raises
    :class:`ServingFailure` 400 naming ``what`` for DT_INVALID, an unknown rank, a rank above
    254, a negative dimension, more elements than ``max_elements``, ``tensor_content`` whose
    length is not elements x item size (or any ``tensor_content`` for DT_STRING), or more
    values than the shape holds; 501 for a dtype it does not convert (complex, bfloat16,
    quantized, resource, variant). ``check(dims)`` (optional: the signature check,
    :func:`.input_specs.check_input`) runs on the shape once it is known to be a valid one, before
    anything is allocated; after it, a rank above the 64 dimensions numpy holds
    (:data:`.input_specs.MAX_RANK`) is a 400 naming ``what``. Integers narrower than their proto
    field wrap as in C++."""
    enum = int(tensor.dtype)
    if enum == 0:
        raise ServingFailure(400, f"{what}: the TensorProto has no dtype (DT_INVALID)")
    if enum not in _DTYPES:
        raise ServingFailure(
            501, f"{what}: dtype {dtype_name(enum)} is not supported by this server"
        )
    np_dt, field = _DTYPES[enum]
    shape = tensor.tensor_shape
    if shape.unknown_rank:
        raise ServingFailure(
            400, f"{what}: Unable to parse tensor proto: the shape has an unknown rank"
        )
    dims = [int(d.size) for d in shape.dim]
    if len(dims) > MAX_RANK:
        raise ServingFailure(
            400,
            f"{what}: Unable to parse tensor proto: rank {len(dims)} is "
            f"above TensorFlow's {MAX_RANK}",
        )
    if any(d < 0 for d in dims):
        raise ServingFailure(
            400,
            f"{what}: Unable to parse tensor proto: negative dimension in shape {dims}",
        )
    if check is not None:
        check(dims)
    if len(dims) > input_specs.MAX_RANK:
        raise ServingFailure(
            400,
            f"{what}: rank {len(dims)} is above the {input_specs.MAX_RANK} dimensions this "
            f"server converts (TensorFlow's own limit is {MAX_RANK})",
        )
    n = math.prod(dims)
    if n > max_elements:
        raise ServingFailure(
            400,
            f"{what}: a tensor of shape {dims} holds {n} elements, "
            f"above the server's max_tensor_elements={max_elements}",
        )
    content = tensor.tensor_content
    if content:
        if enum == DT_STRING:
            raise ServingFailure(
                400,
                f"{what}: Unable to parse tensor proto: DT_STRING values "
                f"must be in string_val, not tensor_content",
            )
        if len(content) != n * np_dt.itemsize:
            raise ServingFailure(
                400,
                f"{what}: Unable to parse tensor proto: tensor_content "
                f"holds {len(content)} bytes, shape {dims} of "
                f"{dtype_name(enum)} needs {n * np_dt.itemsize}",
            )
        return (
            np.frombuffer(content, dtype=np_dt.newbyteorder("<"))
            .astype(np_dt, copy=False)
            .reshape(dims)
        )
    values = getattr(tensor, field)
    m = len(values)
    if m > n:
        raise ServingFailure(
            400,
            f"{what}: Unable to parse tensor proto: {m} values in {field} "
            f"for shape {dims} ({n} elements)",
        )
    if m == 0:
        flat = np.full(n, b"", dtype=object) if enum == DT_STRING else np.zeros(n, np_dt)
        return flat.reshape(dims)
    if enum == DT_STRING:
        flat = np.empty(m, dtype=object)
        flat[:] = list(values)
    elif enum == DT_HALF:
        flat = np.array(values, dtype=np.int64).astype(np.uint16).view(np.float16)
    elif field == "int_val":
        flat = np.fromiter(values, np.int32, count=m).astype(np_dt)  # wraps like static_cast
    else:
        flat = np.fromiter(values, np_dt, count=m)
    if m < n:
        fill = np.empty(n - m, dtype=np_dt)
        fill[:] = flat[-1]
        flat = np.concatenate([flat, fill])
    return flat.reshape(dims)


# ------------------------------------------------------------------------ numpy -> TensorProto
def as_array(value: Any, dtype_enum: int | None = None) -> np.ndarray:
    """A value (numpy array, scalar, bytes / str, or rectangular nested lists of one kind) ->
    numpy array; bytes and str become an ``object`` array. With ``dtype_enum`` (a DataType),
    numbers and bools are cast to it when that keeps their kind (int -> float, narrower ->
    wider); otherwise they keep their own dtype, so the server reports the mismatch. Raises
    TypeError for ragged lists and values of other types."""
    arr = _as_array(value)
    if (
        dtype_enum is not None
        and dtype_enum in _DTYPES
        and dtype_enum != DT_STRING
        and arr.dtype.kind in "biuf"
    ):
        target = _DTYPES[dtype_enum][0]
        if arr.dtype != target and (
            np.can_cast(arr.dtype, target, "same_kind")
            or (arr.dtype.kind in "bi" and target.kind == "f")
        ):
            arr = arr.astype(target)
    return arr


def array_to_tensor(
    value: Any,
    out: Any = None,
    dtype_enum: int | None = None,
    *,
    as_proto_field: bool = False,
) -> Any:
    """A numpy array (or any value :func:`as_array` takes, cast to ``dtype_enum`` as it
    describes) -> ``TensorProto`` (written into ``out`` when given). Strings (bytes, or str as
    UTF-8) go into ``string_val``. Numbers and bools go into ``tensor_content`` (little-endian,
    one copy), or with ``as_proto_field`` into the dtype's typed field, every element in row-major
    order, as TensorFlow's ``Tensor::AsProtoField`` writes them (``float_val``, ``double_val``,
    ``int_val`` for int32/int16/int8/uint8/uint16, ``int64_val``, ``bool_val``, ``half_val`` holding
    a half's bits, ``uint32_val``, ``uint64_val``). Raises TypeError for arrays it cannot write
    (objects that are not bytes or str, complex numbers)."""
    from tensorflow.core.framework import tensor_pb2

    arr = as_array(value, dtype_enum)
    t = out if out is not None else tensor_pb2.TensorProto()
    for d in arr.shape:
        t.tensor_shape.dim.add().size = int(d)
    if arr.dtype.kind in "OSU":
        t.dtype = DT_STRING
        vals = []
        for v in arr.reshape(-1):
            if isinstance(v, (bytes, bytearray, memoryview, np.bytes_)):
                vals.append(bytes(v))
            elif isinstance(v, str):
                vals.append(v.encode("utf-8"))
            else:
                raise TypeError(
                    f"a string tensor holds a {type(v).__name__}, expected bytes or str"
                )
        t.string_val.extend(vals)
        return t
    enum = _ENUM_FOR_NUMPY.get(arr.dtype)
    if enum is None:
        raise TypeError(f"cannot send a numpy array of dtype {arr.dtype} as a TensorProto")
    t.dtype = enum
    if not as_proto_field:
        t.tensor_content = np.ascontiguousarray(arr, dtype=arr.dtype.newbyteorder("<")).tobytes()
        return t
    _fill_proto_field(t, enum, arr.reshape(-1))
    return t


#: TensorProto's field numbers of the packed fixed-width fields (tensor.proto): their packed
#: payload is the little-endian values themselves, so a message holding them is parsed from the
#: array's bytes in one step (about 25 times faster than extending the field from a list).
_FIXED_WIDTH_FIELDS = {"float_val": 5, "double_val": 6}


def _fill_proto_field(t: Any, enum: int, flat: np.ndarray) -> None:
    field = _DTYPES[enum][1]
    if flat.size == 0:
        return
    number = _FIXED_WIDTH_FIELDS.get(field)
    if number is not None:
        le = np.ascontiguousarray(flat, dtype=flat.dtype.newbyteorder("<"))
        t.MergeFromString(proto_field(number, le.tobytes()))
    elif enum == DT_HALF:
        t.half_val.extend(flat.view(np.uint16).astype(np.int32).tolist())
    elif field == "int_val":
        t.int_val.extend(flat.astype(np.int32).tolist())
    else:
        getattr(t, field).extend(flat.tolist())


def _as_array(value: Any) -> np.ndarray:
    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, (bytes, bytearray, memoryview, str)):
        out = np.empty((), dtype=object)
        out[()] = bytes(value) if not isinstance(value, str) else value
        return out
    if isinstance(value, (list, tuple)) and _has_strings(value):
        arr = np.empty(_nested_shape(value), dtype=object)
        _fill(arr, value)
        return arr
    arr = np.asarray(value)
    if arr.dtype == object:
        raise TypeError(
            f"expected a rectangular nested list of numbers, bools, bytes or str, got "
            f"{str(value)[:200]}"
        )
    return arr


def _has_strings(value: Any) -> bool:
    while isinstance(value, (list, tuple)) and value:
        value = value[0]
    return isinstance(value, (bytes, bytearray, memoryview, str))


def _nested_shape(value: Any) -> tuple[int, ...]:
    shape = []
    while isinstance(value, (list, tuple)):
        shape.append(len(value))
        if not value:
            break
        value = value[0]
    return tuple(shape)


def _fill(arr: np.ndarray, value: Any) -> None:
    if arr.ndim == 0:
        if isinstance(value, (list, tuple)):
            raise TypeError("expected a rectangular nested list, got ragged lists")
        arr[()] = value
        return
    if not isinstance(value, (list, tuple)) or len(value) != arr.shape[0]:
        raise TypeError("expected a rectangular nested list, got ragged lists")
    for i, v in enumerate(value):
        if arr.ndim > 1:
            _fill(arr[i], v)
        elif isinstance(v, (list, tuple)):
            raise TypeError("expected a rectangular nested list, got ragged lists")
        else:
            arr[i] = v


# ---------------------------------------------------------------------------- tf.Example
def _is_bytes(v: Any) -> bool:
    return isinstance(v, (bytes, bytearray, memoryview, np.bytes_))


def _is_bool(v: Any) -> bool:
    return isinstance(v, (bool, np.bool_))


def fill_feature(feature: Any, value: Any, name: str) -> None:
    """Set one ``tf.train.Feature`` from a Python or numpy value, by the REST client's JSON
    rules: bytes / str -> bytes_list (str as UTF-8); bool and integers -> int64_list; floats ->
    float_list; a flat list (or 0-/1-d array) of those, where any float makes every number a
    float. Raises TypeError naming ``name`` for mappings, nested lists, mixed bytes and numbers,
    and other types, and ValueError for integers outside int64."""
    if isinstance(value, np.ndarray):
        if value.ndim > 1:
            raise TypeError(
                f"feature {name!r}: expected a flat list, got an array of shape "
                f"{list(value.shape)} (a tf.Example feature is one flat list)"
            )
        if value.dtype.kind == "f":
            feature.float_list.value.extend(value.astype(np.float32).reshape(-1).tolist())
            return
        items = value.reshape(-1).tolist()
    elif isinstance(value, Mapping):
        raise TypeError(
            f"feature {name!r}: expected bytes, str, bool, int, float or a flat list "
            f"of them, got a mapping"
        )
    elif _is_bytes(value) or isinstance(value, str) or not isinstance(value, Iterable):
        items = [value]
    else:
        items = list(value)
    if not items:
        return
    if all(_is_bytes(v) or isinstance(v, str) for v in items):
        feature.bytes_list.value.extend(
            bytes(v) if _is_bytes(v) else v.encode("utf-8") for v in items
        )
        return
    if not all(isinstance(v, numbers.Real) or _is_bool(v) for v in items):
        bad = next(v for v in items if not (isinstance(v, numbers.Real) or _is_bool(v)))
        raise TypeError(
            f"feature {name!r}: expected bytes, str, bool, int, float or a flat list "
            f"of one kind of them, got {type(bad).__name__} "
            f"{'in a list' if len(items) > 1 else ''}".rstrip()
        )
    if any(not (_is_bool(v) or isinstance(v, numbers.Integral)) for v in items):
        feature.float_list.value.extend(float(v) for v in items)
        return
    ints = [int(v) for v in items]
    for v in ints:
        if not -(2**63) <= v < 2**63:
            raise ValueError(f"feature {name!r}: {v} is outside the int64 range")
    feature.int64_list.value.extend(ints)


def example_from_features(features: Mapping[str, Any]) -> Any:
    """A ``tf.train.Example`` (proto) with one feature per mapping entry (see
    :func:`fill_feature`)."""
    from tensorflow.core.example import example_pb2

    ex = example_pb2.Example()
    for name, value in features.items():
        fill_feature(ex.features.feature[str(name)], value, str(name))
    return ex


# ------------------------------------------------------------------------ protobuf wire framing
def proto_varint(value: int) -> bytes:
    """``value`` as a protobuf varint; a negative value as its int64 two's complement (ten bytes),
    as protobuf writes negative int64s."""
    value &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def proto_header(number: int, length: int) -> bytes:
    """The tag and length that precede a length-delimited field ``number`` of ``length`` bytes."""
    return proto_varint(number << 3 | 2) + proto_varint(length)


def proto_field(number: int, payload: bytes) -> bytes:
    """Field ``number`` holding ``payload`` with protobuf's length-delimited wire type (a message,
    bytes, a string or a packed repeated field)."""
    return proto_header(number, len(payload)) + payload


_PREFIXES: dict[tuple[str, int], bytes] = {}


def blob_example_prefix(blob_bytes: int, feature_key: str) -> bytes:
    """The bytes that, followed by a blob of ``blob_bytes`` bytes, make the serialized
    ``tf.Example`` holding that blob as the single value of the bytes feature ``feature_key``
    (Example.features(1).feature(1){key(1), value(2): Feature.bytes_list(1).value(1)}). Cached per
    (key, length): the blobs of one layout and fanout often share a length."""
    cached = _PREFIXES.get((feature_key, blob_bytes))
    if cached is not None:
        return cached
    value = proto_header(1, blob_bytes)  # BytesList.value
    feature = proto_header(1, len(value) + blob_bytes)  # Feature.bytes_list
    key = proto_field(1, feature_key.encode("utf-8"))  # map entry key
    entry_value = proto_header(2, len(feature) + len(value) + blob_bytes)  # map entry value
    entry_bytes = len(key) + len(entry_value) + len(feature) + len(value) + blob_bytes
    entry = proto_header(1, entry_bytes)  # Features.feature (one map entry)
    features = proto_header(1, len(entry) + entry_bytes)  # Example.features
    prefix = features + entry + key + entry_value + feature + value
    if len(_PREFIXES) < 4096:
        _PREFIXES[(feature_key, blob_bytes)] = prefix
    return prefix


def serialize_blob_example(blob: bytes, feature_key: str) -> bytes:
    """A serialized ``tf.Example`` holding ``blob`` as the single value of the bytes feature
    ``feature_key`` -- byte for byte what ``tf.train.Example(...).SerializeToString()`` gives,
    without TensorFlow (docs/blob-format.md, section 6)."""
    return blob_example_prefix(len(blob), feature_key) + blob


def example_request(
    model_spec: bytes, examples: Sequence[tuple[Any, Any]], context: bytes | None = None
) -> bytes:
    """A serialized ClassificationRequest / RegressionRequest (both are ``model_spec = 1,
    input = 2``): ``model_spec`` is the serialized ModelSpec, each example a pair of bytes-like
    parts whose concatenation is one serialized ``tf.Example`` (``(prefix, blob)`` from
    :func:`blob_example_prefix`, or ``(serialized, b"")``), ``context`` a serialized
    ``tf.Example`` that makes the input an ExampleListWithContext. The parts are copied once, into
    the result."""
    parts: list[Any] = []
    total = 0
    for head, body in examples:
        n = len(head) + len(body)
        tag = proto_header(1, n)  # ExampleList(WithContext).examples
        parts += (tag, head, body)
        total += len(tag) + n
    if context is not None:
        tag = proto_header(2, len(context))  # ExampleListWithContext.context
        parts += (tag, context)
        total += len(tag) + len(context)
    # Input.example_list (1) or Input.example_list_with_context (2)
    holder = proto_header(2 if context is not None else 1, total)
    head = proto_field(1, model_spec) + proto_header(2, len(holder) + total) + holder
    return b"".join([head, *parts])


__all__ = [
    "MAX_RANK",
    "PREDICT_OUTPUTS_AS_PROTO_FIELD",
    "array_to_tensor",
    "as_array",
    "blob_example_prefix",
    "dtype_name",
    "example_from_features",
    "example_request",
    "fill_feature",
    "proto_field",
    "proto_header",
    "proto_varint",
    "serialize_blob_example",
    "supported_dtype",
    "tensor_to_array",
]
