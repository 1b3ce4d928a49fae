"""``OpenCypherDataset``: a ``tf.data.Dataset`` over the rows of a Cypher query.

The design notes' ``OpenCypherDataset(host, auth, query, output_types)``, with the connection taken
out of the dataset: it reads from a graph source (:func:`memgraph_tf.client.connect`), so the URI
and credentials stay with the source and out of any graph or model.

Rows are streamed: a generator pulls records from the driver ``fetch_size`` at a time, converts one
chunk to arrays, and ``unbatch`` turns the chunk back into rows, so no more than about one chunk of
rows is held at once, whatever the result's size.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
import tensorflow as tf

from memgraph_tf.client.sources import GraphSource, to_python
from memgraph_tf.errors import (
    ConfigurationError,
    NullValueError,
    ResultError,
    ValueLengthError,
    ValueTypeError,
)
from memgraph_tf.ops.portable import TF_DTYPES

logger = logging.getLogger(__name__)

DTYPES: dict[str, tf.DType] = dict(TF_DTYPES)
"""The column dtypes a query result can be cast to."""

_NUMPY = {
    "bool": np.bool_,
    "int32": np.int32,
    "int64": np.int64,
    "float32": np.float32,
    "float64": np.float64,
    "string": object,
}
_ACCEPTED = {
    "bool": (bool,),
    "int32": (int,),
    "int64": (int,),
    "float32": (float, int),
    "float64": (float, int),
    "string": (str, bytes),
}
_EXPECTED_TEXT = {
    "bool": "a boolean",
    "int32": "an integer",
    "int64": "an integer",
    "float32": "a number",
    "float64": "a number",
    "string": "a string",
}
_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1


class Column(NamedTuple):
    """One declared output column: ``key`` is a column name (str) or position (int)."""

    key: str | int
    dtype: str
    shape: tuple[int | None, ...]
    name: str | None = None

    @property
    def ragged(self) -> bool:
        return bool(self.shape) and self.shape[0] is None

    def spec(self, rows: int | None = None) -> tf.TypeSpec:
        """The spec of a chunk of ``rows`` values (leading dimension)."""
        shape = [rows] + list(self.shape)
        if self.ragged:
            return tf.RaggedTensorSpec(
                shape, DTYPES[self.dtype], ragged_rank=1, row_splits_dtype=tf.int64
            )
        return tf.TensorSpec(shape, DTYPES[self.dtype])

    def label(self) -> str:
        if self.name is not None:
            return f"column {self.name!r}"
        return f"column {self.key!r}" if isinstance(self.key, str) else f"column {self.key}"


def dtype_name(dtype: Any, where: str) -> str:
    """The :data:`DTYPES` name of ``dtype`` (a name, a ``tf.DType`` or a numpy dtype);
    :class:`ConfigurationError` naming ``where`` for any other."""
    if isinstance(dtype, str) and dtype in DTYPES:
        return dtype
    for name, tf_dtype in DTYPES.items():
        try:
            if tf.as_dtype(dtype) == tf_dtype:
                return name
        except TypeError:
            break
    raise ConfigurationError(f"{where}: expected a dtype among {', '.join(DTYPES)}, got {dtype!r}")


def _parse_spec(key: str | int, spec: Any) -> Column:
    where = f"output_types[{key!r}]"
    if isinstance(spec, (tf.RaggedTensorSpec, tf.TensorSpec)):
        shape = tuple(spec.shape.as_list())
        name = dtype_name(spec.dtype, where)
    elif isinstance(spec, tuple) and len(spec) == 2 and not isinstance(spec[1], (str, tf.DType)):
        name = dtype_name(spec[0], where)
        try:
            shape = tuple(tf.TensorShape(spec[1]).as_list())
        except (TypeError, ValueError) as exc:
            raise ConfigurationError(
                f"{where}: expected (dtype, shape), got shape {spec[1]!r}"
            ) from exc
    else:
        name = dtype_name(spec, where)
        shape = ()
    if any(d is None for d in shape[1:]):
        raise ConfigurationError(
            f"{where}: expected a shape whose only unknown dimension is the first (variable-length "
            f"lists -> ragged), got {list(shape)}"
        )
    if any(d is not None and d < 0 for d in shape):
        raise ConfigurationError(f"{where}: expected dimensions >= 0, got {list(shape)}")
    return Column(key, name, shape)


def parse_output_types(output_types: Any) -> tuple[list[Column], str]:
    """Declared columns and the element structure: ``"dict"``, ``"tuple"`` or ``"single"``.

    A column type is a dtype (``tf.float32`` or ``"float32"``; a scalar), ``(dtype, shape)``
    (``("float32", [128])`` a fixed-length vector, ``("int64", [None])`` a variable-length list,
    which batches into a ``tf.RaggedTensor``), a ``tf.TensorSpec`` or a ``tf.RaggedTensorSpec``.
    """
    if isinstance(output_types, Mapping):
        if not output_types:
            raise ConfigurationError("output_types: expected at least one column, got an empty map")
        for key in output_types:
            if not isinstance(key, str):
                raise ConfigurationError(
                    f"output_types: expected column names (strings) as keys, got {key!r}"
                )
        return [_parse_spec(k, v) for k, v in output_types.items()], "dict"
    if isinstance(output_types, list) or (
        isinstance(output_types, tuple)
        and not (len(output_types) == 2 and _looks_like_shape(output_types[1]))
    ):
        if not output_types:
            raise ConfigurationError(
                "output_types: expected at least one column, got an empty sequence"
            )
        return [_parse_spec(i, v) for i, v in enumerate(output_types)], "tuple"
    return [_parse_spec(0, output_types)], "single"


def _looks_like_shape(value: Any) -> bool:
    return isinstance(value, (list, tf.TensorShape)) or (
        isinstance(value, tuple) and all(v is None or isinstance(v, int) for v in value)
    )


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    text = repr(value)
    if len(text) > 80:
        text = text[:77] + "..."
    return f"{type(value).__name__} {text}"


class Converter:
    """Turns chunks of records into arrays, validating every value (errors name column, row,
    value)."""

    def __init__(self, columns: list[Column]) -> None:
        self.columns = columns

    def where(self, column: Column, row: int, index: tuple[int, ...] = ()) -> str:
        at = "".join(f"[{i}]" for i in index)
        return f"{column.label()}{at} row {row}"

    def check_value(
        self,
        column: Column,
        row: int,
        value: Any,
        shape: tuple[int | None, ...],
        index: tuple[int, ...] = (),
    ) -> None:
        """Raises the precise error for a value that does not fit (slow path, for messages)."""
        where = self.where(column, row, index)
        if value is None:
            raise NullValueError(f"{where}: expected {self._expected(column, shape)}, got null")
        if shape:
            if not isinstance(value, (list, tuple)):
                raise ValueTypeError(
                    f"{where}: expected {self._expected(column, shape)}, got {_describe(value)}"
                )
            if shape[0] is not None and len(value) != shape[0]:
                raise ValueLengthError(
                    f"{where}: expected a list of {shape[0]} values, got a list of {len(value)}: "
                    f"{_describe(value)}"
                )
            for i, item in enumerate(value):
                self.check_value(column, row, item, shape[1:], index + (i,))
            return
        accepted = _ACCEPTED[column.dtype]
        if type(value) not in accepted:
            raise ValueTypeError(
                f"{where}: expected {_EXPECTED_TEXT[column.dtype]} for {column.dtype}, "
                f"got {_describe(value)}"
            )
        if column.dtype == "int32" and not _INT32_MIN <= value <= _INT32_MAX:
            raise ValueTypeError(
                f"{where}: expected an integer in int32 range [{_INT32_MIN}, {_INT32_MAX}], "
                f"got {value}"
            )

    def _expected(self, column: Column, shape: tuple[int | None, ...]) -> str:
        if not shape:
            return f"{_EXPECTED_TEXT[column.dtype]} for {column.dtype}"
        length = "a list" if shape[0] is None else f"a list of {shape[0]}"
        return f"{length} of {column.dtype} values"

    def _fast_ok(self, column: Column, values: list[Any]) -> bool:
        """Cheap check that every value has an accepted type and shape (C-speed set/map)."""
        accepted = set(_ACCEPTED[column.dtype])
        shape = column.shape
        if not shape:
            return set(map(type, values)) <= accepted
        if len(shape) == 1:
            fixed = shape[0]
            for value in values:
                if type(value) is not list or (fixed is not None and len(value) != fixed):
                    return False
                if not set(map(type, value)) <= accepted:
                    return False
            return True
        return False  # nested lists: validated value by value

    def convert(self, column: Column, values: list[Any], first_row: int) -> Any:
        if column.dtype == "int32" or not self._fast_ok(column, values):  # int32: range checks too
            for offset, value in enumerate(values):
                self.check_value(column, first_row + offset, value, column.shape)
        np_dtype = _NUMPY[column.dtype]
        if column.dtype == "string":
            values = [self._bytes(v) for v in values]
        if column.ragged:
            lengths = np.fromiter((len(v) for v in values), dtype=np.int64, count=len(values))
            flat = [item for value in values for item in value]
            if column.dtype == "string":
                flat = [self._bytes(v) for v in flat]
            inner = list(column.shape[1:])
            arr = self._array(column, flat, np_dtype, [len(flat)] + inner, first_row)
            return tf.RaggedTensor.from_row_lengths(arr, lengths, validate=False)
        return self._array(column, values, np_dtype, [len(values)] + list(column.shape), first_row)

    def _array(
        self, column: Column, values: list[Any], np_dtype: Any, shape: list[int], first_row: int
    ) -> np.ndarray:
        if column.dtype == "string":
            arr = np.empty(len(values), dtype=object)
            arr[:] = _flatten(values, len(shape) - 1)
            return arr.reshape(shape)
        return np.asarray(values, dtype=np_dtype).reshape(shape)

    @staticmethod
    def _bytes(value: Any) -> Any:
        if isinstance(value, str):
            return value.encode("utf-8")
        if isinstance(value, list):
            return [Converter._bytes(v) for v in value]
        return value


def _flatten(values: list[Any], depth: int) -> list[Any]:
    for _ in range(depth):
        values = [item for value in values for item in value]
    return values


class OpenCypherDataset(tf.data.Dataset):
    """A ``tf.data.Dataset`` of the rows of ``query`` run on ``source`` with ``parameters``.

    ``output_types`` declares the columns (see :func:`parse_output_types`): a map column name ->
    type gives dict elements; a list gives tuple elements matched by position; a single type gives
    the only column as the element. Each iteration runs the query again.

    Guarantees: values are cast to the declared dtype (bool, int32, int64, float32, float64,
    string); fixed-length lists become vectors, variable-length ones ``[None]`` rows that ``batch``
    turns into a ``tf.RaggedTensor``; a null, a value of the wrong type, a list of the wrong length
    or an int32 overflow stops iteration with an error naming the column, the row (0-based) and the
    value -- raised as :class:`~memgraph_tf.errors.ResultError` by :meth:`rows`, and inside
    ``tf.data`` as ``tf.errors.InvalidArgumentError`` whose message contains that text. At most
    about ``fetch_size`` rows are held in memory.
    """

    def __init__(
        self,
        source: GraphSource,
        query: str,
        output_types: Any,
        parameters: Mapping[str, Any] | None = None,
        *,
        fetch_size: int = 1000,
    ) -> None:
        if not isinstance(source, GraphSource):
            raise ConfigurationError(
                "source: expected a graph source from memgraph_tf.client.connect() or "
                "EmbeddedSource, "
                f"got {type(source).__name__}"
            )
        if not isinstance(query, str) or not query.strip():
            raise ConfigurationError(f"query: expected a non-empty Cypher query, got {query!r}")
        if parameters is not None and not isinstance(parameters, Mapping):
            raise ConfigurationError(
                f"parameters: expected a map or None, got {type(parameters).__name__}"
            )
        if not isinstance(fetch_size, int) or isinstance(fetch_size, bool) or fetch_size < 1:
            raise ConfigurationError(f"fetch_size: expected an integer >= 1, got {fetch_size!r}")
        self._source = source
        self._query = query
        self._parameters = {k: to_python(v) for k, v in (parameters or {}).items()}
        self._fetch_size = fetch_size
        self._columns, self._structure = parse_output_types(output_types)
        self._converter = Converter(self._columns)
        chunk_spec = self._structure_of([c.spec(None) for c in self._columns])
        chunks = tf.data.Dataset.from_generator(self._chunks, output_signature=chunk_spec)
        self._dataset = chunks.unbatch()
        super().__init__(self._dataset._variant_tensor)

    # -- tf.data.Dataset interface ----------------------------------------------------------------
    def _inputs(self) -> list[tf.data.Dataset]:
        return []

    @property
    def element_spec(self) -> Any:
        return self._dataset.element_spec

    # -- rows ------------------------------------------------------------------------------------
    def _structure_of(self, items: Sequence[Any]) -> Any:
        if self._structure == "dict":
            return {c.key: item for c, item in zip(self._columns, items)}
        if self._structure == "tuple":
            return tuple(items)
        return items[0]

    def _resolve_keys(self, keys: list[str]) -> list[int]:
        """Positions of the declared columns among the record's keys."""
        if self._structure == "dict":
            missing = [c.key for c in self._columns if c.key not in keys]
            if missing:
                raise ConfigurationError(
                    f"output_types: expected the query to return column(s) {missing}, got columns "
                    f"{keys}"
                )
            return [keys.index(c.key) for c in self._columns]
        if len(keys) != len(self._columns):
            raise ConfigurationError(
                f"output_types: expected {len(self._columns)} column(s) by position, got a query "
                "returning "
                f"{len(keys)}: {keys}"
            )
        return list(range(len(keys)))

    def _chunks(self) -> Iterator[Any]:
        positions: list[int] | None = None
        pending: list[list[Any]] = []
        row = 0
        records = self._source.run(self._query, self._parameters, fetch_size=self._fetch_size)
        try:
            for record in records:
                values = list(record.values())
                if positions is None:
                    keys = list(record.keys())
                    positions = self._resolve_keys(keys)
                    self._converter.columns = [
                        c._replace(name=str(keys[p])) for c, p in zip(self._columns, positions)
                    ]
                pending.append([values[p] for p in positions])
                if len(pending) == self._fetch_size:
                    yield self._convert(pending, row)
                    row += len(pending)
                    pending = []
            if pending:
                yield self._convert(pending, row)
        finally:
            close = getattr(records, "close", None)
            if close is not None:
                close()

    def _convert(self, rows: list[list[Any]], first_row: int) -> Any:
        columns = list(zip(*rows))
        return self._structure_of(
            [
                self._converter.convert(c, list(values), first_row)
                for c, values in zip(self._converter.columns, columns)
            ]
        )

    def rows(self) -> Iterator[Any]:
        """The same rows as the dataset, as numpy values, outside TensorFlow (errors keep their
        :class:`ResultError` types). Mainly for debugging a query."""
        for chunk in self._chunks():
            items = (
                chunk.values()
                if isinstance(chunk, dict)
                else (chunk if isinstance(chunk, tuple) else [chunk])
            )
            items = [i.to_list() if isinstance(i, tf.RaggedTensor) else i for i in items]
            for r in range(len(items[0])):
                yield self._structure_of([i[r] for i in items])


__all__ = ["DTYPES", "OpenCypherDataset", "ResultError", "parse_output_types"]
