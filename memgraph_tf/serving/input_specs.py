"""The one check of a request's input tensors against the signature, for REST and gRPC alike.

TF Serving hands a Predict request's tensors to the session as they are (``predict_util.cc``,
``PreProcessPrediction``: the inputs' names are checked, not their shapes), and TensorFlow runs
the graph on them or fails inside it: ``{"instances": [1.0, 2.0, 5.0]}`` (shape ``[3]``) to
``half_plus_two`` (input ``x`` of shape ``[?,1]``) answers ``[2.5, 3.0, 4.5]``. This server does
the same, through TensorFlow's Python API -- which crashes the process on a DT_STRING tensor of
more than 32 dimensions while it crosses between numpy and TensorFlow, and numpy holds at most
64 dimensions. So each input is checked here from its dtype and shape alone (before any array
is built) against the signature's ``TensorInfo``, for what TensorFlow itself would refuse or
what the Python conversion cannot carry:

- the dtype must be the signature's (the session refuses another);
- a DT_STRING tensor of more than :data:`STRING_CONVERSION_RANK` dimensions must have the
  signature's rank and fixed sizes (the inputs that crashed the process); below that, shapes are
  TensorFlow's to take or refuse, as in TF Serving;
- any tensor: at most :data:`MAX_RANK` dimensions (numpy's limit; TensorFlow's own is
  :data:`TF_MAX_RANK`, ``TensorShape``'s ``kMaxDims``).

A refusal is INVALID_ARGUMENT (400) naming the input, in the words of TensorFlow's own session
check (``session.py``: "Cannot feed value of shape (1, 33) for Tensor 'x:0', which has shape
'(?, 3)'"). REST (:func:`.json_tensors.predict_feeds`) runs it on the shape of the JSON value
once its elements are read, gRPC (:func:`.grpc_codec.tensor_to_array`) on the TensorProto's shape
before its values are read, and :meth:`.model_server.ModelServer.run_predict` once more on the
arrays of any caller. :func:`string_tensor` / :func:`output_array` move DT_STRING tensors of more
than :data:`STRING_CONVERSION_RANK` dimensions between numpy and TensorFlow flattened, so that a
signature of unknown rank can take them. :func:`flat_call` calls a signature function on its flat
inputs when the tensors fit its input specs (else the function's own call answers). Standard
library only (TensorFlow is imported by the functions that need it).
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping, Sequence
from typing import Any

from memgraph_tf.errors import ServingFailure

#: TensorFlow's largest rank (``TensorShape::MaxDimensions()``, ``kMaxDims`` in
#: ``tensorflow/core/framework/tensor_shape.h``).
TF_MAX_RANK = 254
#: The largest rank this server converts: numpy's (``NPY_MAXDIMS`` in numpy 2).
MAX_RANK = 64
#: Above this rank, TensorFlow's numpy conversion of DT_STRING tensors crashes (its C code keeps
#: 32 dimensions); such tensors cross flattened and are reshaped on the other side.
STRING_CONVERSION_RANK = 32
DT_STRING = 7
#: DataType numbers -> their names (``tensorflow/core/framework/types.proto``), for messages.
DTYPE_NAMES = {
    1: "DT_FLOAT",
    2: "DT_DOUBLE",
    3: "DT_INT32",
    4: "DT_UINT8",
    5: "DT_INT16",
    6: "DT_INT8",
    7: "DT_STRING",
    8: "DT_COMPLEX64",
    9: "DT_INT64",
    10: "DT_BOOL",
    11: "DT_QINT8",
    12: "DT_QUINT8",
    13: "DT_QINT32",
    14: "DT_BFLOAT16",
    15: "DT_QINT16",
    16: "DT_QUINT16",
    17: "DT_UINT16",
    18: "DT_COMPLEX128",
    19: "DT_HALF",
    20: "DT_RESOURCE",
    21: "DT_VARIANT",
    22: "DT_UINT32",
    23: "DT_UINT64",
}
_SHOWN_DIMS = 8


def dtype_name(enum: int) -> str:
    """``DT_FLOAT`` for 1, ...; ``DataType(<n>)`` for a number without a name here."""
    return DTYPE_NAMES.get(int(enum), f"DataType({int(enum)})")


def type_string(enum: int) -> str:
    """TensorFlow's ``DataTypeString``, the name its messages use: ``float`` for 1, ``int64`` for
    9, ...; ``DataType(<n>)`` for a number without a name here."""
    name = DTYPE_NAMES.get(int(enum))
    return name[3:].lower() if name is not None else f"DataType({int(enum)})"


def shape_text(dims: Sequence[int] | None) -> str:
    """``[2,3]``, ``?`` for an unknown dimension, ``<unknown>`` for an unknown rank; beyond eight
    dimensions the first eight, then ``...``."""
    if dims is None:
        return "<unknown>"
    shown = ["?" if d < 0 else str(d) for d in dims[:_SHOWN_DIMS]]
    if len(dims) > _SHOWN_DIMS:
        shown.append("...")
    return "[" + ",".join(shown) + "]"


def signature_dims(info: Any) -> list[int] | None:
    """The shape a signature input (a ``TensorInfo``) takes: its dimensions (``-1`` unknown), or
    None for an unknown rank."""
    shape = info.tensor_shape
    if shape.unknown_rank:
        return None
    return [int(d.size) for d in shape.dim]


def _bad(message: str) -> ServingFailure:
    return ServingFailure.for_code("INVALID_ARGUMENT", message)


def check_input(
    key: str,
    info: Any,
    dims: Sequence[int] | None = None,
    dtype: int | None = None,
    signature: str | None = None,
) -> None:
    """Refuse input ``key`` of shape ``dims`` and DataType ``dtype`` (each checked when given)
    unless the signature's input ``info`` (a ``TensorInfo``) takes it; see the module docstring.
    Raises INVALID_ARGUMENT naming ``key`` (and ``signature``, when given); allocates nothing.
    The signature's rank and fixed sizes bind only DT_STRING tensors above
    :data:`STRING_CONVERSION_RANK` dimensions (``dtype`` given, else the signature's)."""
    if dtype is not None and int(dtype) != int(info.dtype):
        raise _bad(
            f"Expects input '{key}' to be {type_string(info.dtype)} but {type_string(dtype)} is "
            "provided"
        )
    if dims is None:
        return
    rank = len(dims)
    want = signature_dims(info)
    where = f"input '{key}'" + (f" of signature '{signature}'" if signature else "")
    got = f"{shape_text(dims)} (rank {rank})"
    is_string = int(dtype if dtype is not None else info.dtype) == DT_STRING
    if want is not None and is_string and rank > STRING_CONVERSION_RANK:
        if rank != len(want):
            raise _bad(
                f"Cannot feed value of shape {got} for {where}, which has shape "
                f"{shape_text(want)} (rank {len(want)})"
            )
        for i, (d, w) in enumerate(zip(dims, want)):
            if w >= 0 and d != w:
                raise _bad(
                    f"Cannot feed value of shape {got} for {where}, which has shape "
                    f"{shape_text(want)} (dimension {i}: {d} != {w})"
                )
    if rank > TF_MAX_RANK:
        raise _bad(f"{where}: rank {rank} is above TensorFlow's limit of {TF_MAX_RANK} dimensions")
    if rank > MAX_RANK:
        raise _bad(
            f"{where}: rank {rank} is above the {MAX_RANK} dimensions this server converts "
            f"(TensorFlow's own limit is {TF_MAX_RANK})"
        )


def string_tensor(array: Any) -> Any:
    """A numpy ``object`` array of bytes as a DT_STRING ``tf.Tensor`` of its shape; beyond
    :data:`STRING_CONVERSION_RANK` dimensions built flat and reshaped (TensorFlow's own
    conversion crashes there)."""
    import tensorflow as tf

    if array.ndim <= STRING_CONVERSION_RANK:
        return tf.constant(array, dtype=tf.string)
    return tf.reshape(tf.constant(array.reshape(-1), dtype=tf.string), list(array.shape))


class FlatCall:
    """A loaded signature function called on its flat inputs: what the function's own call does
    once it has matched keyword arguments to its input specs (TensorFlow's
    ``ConcreteFunction._call_with_structured_signature``: bind, cast, flatten), done here from a
    plan made once per function, so a request pays for neither the binding nor the shape
    objects TensorFlow builds for it. Built by :func:`flat_call` for a function whose inputs are
    keyword-only tensors (every SavedModel signature function); a call whose tensors are not
    exactly those inputs, of their dtypes and of shapes they accept, is declined (None) and
    left to the function's own call, with its own errors."""

    def __init__(self, fn: Any, names: list[str], specs: list[tuple[Any, tuple | None]]):
        self.fn = fn
        self.names = names
        self.specs = specs
        self.inference = fn.inference_fn

    def __call__(self, tensors: Mapping[str, Any], shapes: Mapping[str, tuple]) -> Any:
        """The function's outputs (as its own call returns them) for ``tensors`` (input name ->
        ``tf.Tensor``) of ``shapes`` (input name -> shape tuple); None when they do not fit."""
        if len(tensors) != len(self.names):
            return None
        args = []
        for name, (dtype, dims) in zip(self.names, self.specs):
            tensor = tensors.get(name)
            if tensor is None or tensor.dtype != dtype:
                return None
            if dims is not None:
                shape = shapes[name]
                if len(shape) != len(dims):
                    return None
                for want, got in zip(dims, shape):
                    if want is not None and want != got:
                        return None
            args.append(tensor)
        return self.inference.call_preflattened(args + list(self.fn.captured_inputs))


_FLAT_CALLS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_NO_FLAT_CALL = "none"


def _plan(fn: Any) -> FlatCall | None:
    import tensorflow as tf

    try:
        ftype = fn.function_type
        captures = list(fn.captured_inputs)
        fn.inference_fn  # noqa: B018 -- present on every loaded concrete function
    except AttributeError:
        return None
    if ftype is None or not all(isinstance(c, tf.Tensor) for c in captures):
        return None  # (a distributed variable's handle is resolved per call by TensorFlow)
    params = list(ftype.parameters.values())
    flat = list(ftype.flat_inputs)
    if len(params) != len(flat) or not all(
        p.kind == p.KEYWORD_ONLY and isinstance(s, tf.TensorSpec) for p, s in zip(params, flat)
    ):
        return None
    specs = [(s.dtype, None if s.shape.rank is None else tuple(s.shape.as_list())) for s in flat]
    return FlatCall(fn, [p.name for p in params], specs)


def flat_call(fn: Any) -> FlatCall | None:
    """The :class:`FlatCall` of a loaded signature function (made once per function and kept
    while the function lives), or None when its inputs are not keyword-only tensors."""
    try:
        entry = _FLAT_CALLS.get(fn)
    except TypeError:  # not weakly referenceable: no plan
        return None
    if entry is None:
        entry = _plan(fn) or _NO_FLAT_CALL
        _FLAT_CALLS[fn] = entry
    return None if entry is _NO_FLAT_CALL else entry


def output_array(tensor: Any, name: str) -> Any:
    """A model output ``tf.Tensor`` as a numpy array (strings as an ``object`` array of bytes);
    a DT_STRING output beyond :data:`STRING_CONVERSION_RANK` dimensions is read flat and
    reshaped. An output above :data:`MAX_RANK` dimensions (numpy's limit) is refused with
    INVALID_ARGUMENT naming it: only an input can have made it so."""
    import numpy as np
    import tensorflow as tf

    rank = tensor.shape.rank
    if rank is not None and rank > MAX_RANK:
        raise _bad(
            f"output '{name}': rank {rank} is above the {MAX_RANK} dimensions this server converts"
        )
    if tensor.dtype == tf.string and rank is not None and rank > STRING_CONVERSION_RANK:
        flat = tf.reshape(tensor, [-1]).numpy()
        return np.asarray(flat, dtype=object).reshape(tuple(tensor.shape))
    val = tensor.numpy()
    if tensor.dtype == tf.string and not isinstance(val, np.ndarray):
        val = np.array(val, dtype=object)  # a scalar string comes back as bytes
    return np.asarray(val)


__all__ = [
    "DTYPE_NAMES",
    "MAX_RANK",
    "STRING_CONVERSION_RANK",
    "TF_MAX_RANK",
    "FlatCall",
    "check_input",
    "dtype_name",
    "flat_call",
    "output_array",
    "shape_text",
    "signature_dims",
    "string_tensor",
    "type_string",
]
