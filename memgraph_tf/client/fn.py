"""``opencypher_fn``: the design notes' generic op -- run a Cypher query with a tensor bound as a
parameter.

Example (the design notes' GraphSAGE feature fetch)::

    fetch = opencypher_fn(
        source,
        "UNWIND $node_ids AS nid MATCH (n:Train {id: nid}) RETURN n.features",
        "node_ids",
        tf.float32,
    )
    features = fetch(tf.constant([1, 2, 3]))          # [3, d] float32
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import tensorflow as tf

from memgraph_tf.client.dataset import DTYPES, Column, Converter, dtype_name
from memgraph_tf.client.errors import ConfigurationError, ValueLengthError, ValueTypeError
from memgraph_tf.client.sources import GraphSource


def _infer_shape(value: Any) -> tuple[int, ...]:
    shape = []
    while isinstance(value, list):
        shape.append(len(value))
        value = value[0] if value else None
    return tuple(shape)


def _to_parameter(array: np.ndarray) -> Any:
    if array.dtype == object:  # tf.string -> bytes; Cypher parameters want text
        return [
            v.decode("utf-8") if isinstance(v, bytes) else v for v in array.reshape(-1).tolist()
        ]
    return array.tolist()


def opencypher_fn(
    source: GraphSource,
    query: str,
    parameter_name: str,
    dtype: Any,
    *,
    shape: Sequence[int] | None = None,
    name: str = "opencypher_fn",
) -> Callable[[Any], tf.Tensor]:
    """Returns ``f(tensor) -> tensor``: runs ``query`` with ``$parameter_name`` bound to the
    tensor's values (as a list; a scalar as itself) and stacks the single returned column, row by
    row, into a ``dtype`` tensor of shape ``[rows] + shape`` (``shape``: each row's value, inferred
    from the first row when None).

    Works eagerly, inside ``tf.function`` and in ``tf.data`` (``dataset.map(f)``). Row ``i`` of the
    result is the query's ``i``-th row, so write queries whose rows follow the parameter's order
    (``UNWIND $ids AS id MATCH ... RETURN ...`` does when every id matches one node). Errors (a
    null, a wrong type or length, more than one column) name the row and the value; inside a graph
    they surface as ``tf.errors.InvalidArgumentError`` with that text.

    **Why it cannot go into a SavedModel.** The query runs in Python through ``tf.py_function``,
    which TensorFlow does not serialise: a SavedModel holding it fails to load in another process
    and in TF Serving. And it must not be made to work: a graph that talks to the database would
    have to carry the database URI and credentials inside the model (the design notes' own open
    problem), so anyone with the model file would hold the password. Export models that take the
    features (or the blobs) as inputs instead, and fetch them outside the model
    (``memgraph_tf.serving``).
    """
    if not isinstance(source, GraphSource):
        raise ConfigurationError(f"source: expected a graph source, got {type(source).__name__}")
    if not isinstance(query, str) or not query.strip():
        raise ConfigurationError(f"query: expected a non-empty Cypher query, got {query!r}")
    if not isinstance(parameter_name, str) or not parameter_name or parameter_name.startswith("$"):
        raise ConfigurationError(
            "parameter_name: expected the parameter's name without '$' (e.g. 'node_ids'), got "
            f"{parameter_name!r}"
        )
    if f"${parameter_name}" not in query:
        raise ConfigurationError(
            f"parameter_name: expected ${parameter_name} to appear in the query, got {query!r}"
        )
    dtype_key = dtype_name(dtype, "dtype")
    tf_dtype = DTYPES[dtype_key]
    fixed_shape = None if shape is None else tuple(int(d) for d in shape)
    if fixed_shape is not None and any(d < 0 for d in fixed_shape):
        raise ConfigurationError(f"shape: expected dimensions >= 0, got {list(fixed_shape)}")

    def fetch(values: tf.Tensor) -> np.ndarray:
        array = values.numpy()
        param = _to_parameter(array) if array.ndim else array.item()
        if isinstance(param, bytes):
            param = param.decode("utf-8")
        rows = []
        for r, record in enumerate(source.run(query, {parameter_name: param})):
            items = list(record.values())
            if len(items) != 1:
                raise ValueTypeError(
                    f"row {r}: expected exactly one column, got {len(items)}: {list(record.keys())}"
                )
            rows.append(items[0])
        row_shape = (
            fixed_shape if fixed_shape is not None else (_infer_shape(rows[0]) if rows else ())
        )
        column = Column("value", dtype_key, row_shape, name="value")
        if not rows:
            return np.zeros(
                (0,) + row_shape,
                dtype=np.dtype(object if dtype_key == "string" else tf_dtype.as_numpy_dtype),
            )
        converter = Converter([column])
        try:
            return converter.convert(column, rows, 0)
        except ValueLengthError as exc:
            raise ValueLengthError(
                f"{exc} (shape {list(row_shape)} was "
                f"{'given' if shape is not None else 'taken from row 0'})"
            ) from exc

    static = (
        tf.TensorShape([None] + list(fixed_shape))
        if fixed_shape is not None
        else tf.TensorShape(None)
    )

    def apply(values: Any) -> tf.Tensor:
        values = tf.convert_to_tensor(values)
        out = tf.py_function(fetch, [values], Tout=tf_dtype, name=name)
        out.set_shape(static)
        return out

    apply.__doc__ = (
        f"Runs the query with ${parameter_name} bound to the input; returns {dtype_key} rows."
    )
    return apply
