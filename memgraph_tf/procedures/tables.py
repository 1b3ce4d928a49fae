"""Feature tables: the property columns of a call and the rows of the nodes it reads, over a
:class:`~memgraph_tf.procedures.access.GraphAccess` (stdlib only; numpy, when importable, only
makes the finiteness check and the CSR conversion faster: the bytes do not depend on it).

Shared by every sampler (``tf_features.pack`` / ``sample`` / ``sample_per_node`` / ``describe``,
``sample_typed`` / ``schema``, ``sample_pairs``): a layout of columns is fixed by the first node
(:func:`infer_columns`, :func:`first_columns`), every other node must match it
(:func:`build_table` names the node, property and element at fault), and rows are gathered into the
blob's little-endian arrays (:func:`gather`, :func:`le`, :func:`csr`).
"""

from __future__ import annotations

import array
import dataclasses
import math
import struct
import sys
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from memgraph_tf import layout
from memgraph_tf.procedures.access import GraphAccess
from memgraph_tf.procedures.errors import OptionError, PropertyValueError, describe_value
from memgraph_tf.procedures.options import Options

try:  # optional: only makes the finiteness check and the CSR conversion faster
    import numpy as _np
except ImportError:  # pragma: no cover - exercised by the stdlib-only subprocess test
    _np = None

TYPECODE = {"float32": "f", "float64": "d"}
"""The ``array`` typecode of each feature dtype."""
_NP_DTYPE = {"float32": "<f4", "float64": "<f8"}
INT32 = "i" if array.array("i").itemsize == 4 else "l"
"""A 4-byte ``array`` typecode (the blob's int32 sections)."""
ITEMS_PER_CHECK = 65536
"""Writing sections: an abort check at least every this many slots or table rows."""


def no_check() -> None:
    """The abort check of a caller that gives none."""


class Column(NamedTuple):
    """One requested property: ``kind`` is ``number`` (width 1), ``vector`` or ``string`` (width 0,
    own section); ``offset`` is its first column in ``features``."""

    name: str
    kind: str
    width: int
    offset: int


def le(arr: array.array) -> bytes:
    """The little-endian bytes of an array (the blob's byte order, on any host)."""
    if sys.byteorder != "little":  # pragma: no cover - big-endian hosts
        arr = array.array(arr.typecode, arr)
        arr.byteswap()
    return arr.tobytes()


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float))  # bool is an int: true/false pack as 1/0


def _kind_text(column: Column) -> str:
    if column.kind == "vector":
        return f"a list of {column.width} numbers"
    return "a number" if column.kind == "number" else "a string"


def infer_columns(name_of_node: str, names: Sequence[str], values: Sequence[Any]) -> list[Column]:
    """Column layout from one node's values (the first node asked for)."""
    columns = []
    offset = 0
    for name, value in zip(names, values):
        if value is None:
            raise PropertyValueError(
                f"{name_of_node} property {name!r}: expected a value, got none (missing)"
            )
        if isinstance(value, str):
            columns.append(Column(name, "string", 0, offset))
            continue
        if _is_number(value):
            kind, width = "number", 1
        elif isinstance(value, (list, tuple)):
            for j, v in enumerate(value):
                if not _is_number(v):
                    raise PropertyValueError(
                        f"{name_of_node} property {name!r}[{j}]: expected a number, got "
                        f"{describe_value(v)}"
                    )
            kind, width = "vector", len(value)
        else:
            raise PropertyValueError(
                f"{name_of_node} property {name!r}: expected a number, a list of numbers or a "
                f"string, got {describe_value(value)}"
            )
        columns.append(Column(name, kind, width, offset))
        offset += width
    return columns


def refuse_strings(columns: Sequence[Column]) -> None:
    """Raises :class:`OptionError` naming the first string property (sampling packs numbers
    only)."""
    for col in columns:
        if col.kind == "string":
            raise OptionError(
                "properties: expected numeric properties for sampling, got string property "
                f"{col.name!r} (string properties get their own section only in tf_features.pack)"
            )


def string_sections(columns: Sequence[Column]) -> list[str]:
    """The string properties' section names for the pack layout; raises :class:`OptionError` for a
    string property named like a fixed section (``ids``, ``features``, ``labels``)."""
    names = [c.name for c in columns if c.kind == "string"]
    for name in names:
        if name in layout.PACK_SECTION_NAMES:
            raise OptionError(
                "properties: expected string property names other than 'ids', 'features' and "
                f"'labels' (section names of the blob), got {name!r}"
            )
    return names


class FeatureTable(NamedTuple):
    """Feature rows of distinct keys: row ``row_of[key]`` is ``flat[row*width:(row+1)*width]``."""

    columns: list[Column]
    width: int
    flat: array.array
    row_of: dict[int, int]
    strings: dict[str, list[str]]
    labels: dict[int, int]


def _first_non_finite(flat: array.array, dtype: str) -> int | None:
    if _np is not None:
        arr = _np.frombuffer(flat, dtype=_NP_DTYPE[dtype]) if len(flat) else _np.zeros(0)
        if bool(_np.isfinite(arr).all()):
            return None
        return int(_np.flatnonzero(~_np.isfinite(arr))[0])
    if all(map(math.isfinite, flat)):
        return None
    return next(i for i, v in enumerate(flat) if not math.isfinite(v))


def build_table(
    access: GraphAccess,
    keys: Sequence[int],
    names: Sequence[str],
    options: Options,
    *,
    allow_strings: bool = True,
    columns: list[Column] | None = None,
) -> FeatureTable:
    """Reads ``names`` (and ``options.label_property``) of the distinct ``keys`` and packs them.

    Guarantees: the layout (``columns``) follows the first key's values unless given; every other
    node matches it or an error names the node, property and element; values are finite unless
    ``options.allow_non_finite`` (checked after conversion to ``options.dtype``).
    """
    distinct = list(dict.fromkeys(keys))
    fetch = list(names) + ([options.label_property] if options.label_property else [])
    rows: list[list[Any]] = []
    chunk = 512
    for start in range(0, len(distinct), chunk):
        access.check_abort()
        part = distinct[start : start + chunk]
        rows.extend(
            access.properties(part, fetch) if fetch else [[] for _ in part]
        )  # no names: nothing to read
    if columns is None:
        columns = infer_columns(access.node_name(distinct[0]), names, rows[0][: len(names)])
    if not allow_strings:
        refuse_strings(columns)
    width = sum(c.width for c in columns)
    flat = array.array(TYPECODE[options.dtype])
    strings: dict[str, list[str]] = {c.name: [] for c in columns if c.kind == "string"}
    labels: dict[int, int] = {}
    filled = not options.label_property and _fill_at_once(flat, columns, rows)
    for r, (key, values) in enumerate([] if filled else zip(distinct, rows)):
        if r % 1024 == 1023:
            access.check_abort()
        for col, value in zip(columns, values):
            if col.kind == "number" and _is_number(value):
                flat.append(value)
            elif (
                col.kind == "vector"
                and isinstance(value, (list, tuple))
                and len(value) == col.width
            ):
                try:
                    flat.extend(value)
                except (TypeError, OverflowError):
                    _raise_bad_value(access.node_name(key), col, value)
            elif col.kind == "string" and isinstance(value, str):
                strings[col.name].append(value)
            else:
                _raise_bad_value(access.node_name(key), col, value)
        if options.label_property:
            label = values[len(names)]
            if not isinstance(label, int) or isinstance(label, bool):
                what = "none (missing)" if label is None else describe_value(label)
                raise PropertyValueError(
                    f"{access.node_name(key)} property {options.label_property!r} "
                    f"(options.label_property): expected an integer class, got {what}"
                )
            labels[key] = label
    if not options.allow_non_finite and width:
        bad = _first_non_finite(flat, options.dtype)
        if bad is not None:
            row, at = divmod(bad, width)
            col = next(c for c in columns if c.offset <= at < c.offset + c.width)
            value = rows[row][columns.index(col)]
            where = f"{col.name!r}" if col.kind == "number" else f"{col.name!r}[{at - col.offset}]"
            shown = value if col.kind == "number" else value[at - col.offset]
            raise PropertyValueError(
                f"{access.node_name(distinct[row])} property {where}: expected a finite number, "
                f"got {shown!r} ({flat[bad]!r} as {options.dtype}); "
                "set options.allow_non_finite to accept NaN/inf"
            )
    return FeatureTable(
        columns, width, flat, {k: i for i, k in enumerate(distinct)}, strings, labels
    )


_SEQUENCES = frozenset([list, tuple])


def _fill_at_once(
    flat: array.array, columns: Sequence[Column], rows: Sequence[Sequence[Any]]
) -> bool:
    """Extends ``flat`` with every row in C-level loops when there is at most one column, numeric,
    and every value has its form (a number; a list of ``width`` numbers); returns False with
    ``flat`` untouched otherwise, and the row-by-row loop (which names the node at fault) runs.
    The values written are the same either way."""
    if not columns:
        return True
    if len(columns) > 1 or columns[0].kind not in ("number", "vector"):
        return False
    [values] = zip(*rows)
    if columns[0].kind == "vector":
        if not set(map(type, values)) <= _SEQUENCES or set(map(len, values)) != {columns[0].width}:
            return False
        pack = _row_packer(flat.typecode, columns[0].width).pack
        try:
            flat.frombytes(b"".join([pack(*row) for row in values]))
        except (TypeError, OverflowError, struct.error):
            del flat[:]
            return False
        return True
    if not set(map(type, values)) <= _NUMBER_TYPES:
        return False
    try:
        flat.extend(values)
    except (TypeError, OverflowError):
        del flat[:]
        return False
    return True


_PACKERS: dict[tuple[str, int], struct.Struct] = {}


def _row_packer(typecode: str, width: int) -> struct.Struct:
    """A ``struct`` packer of ``width`` values of the array typecode ``typecode`` (``f``, ``d``)
    in native order, sizes and no padding: ``pack(*row)`` is the bytes ``array(typecode, row)``
    holds (each value converted as the array converts it: ``(float)`` of the double), several
    times faster for rows of Python floats; it raises ``struct.error`` where the array raises
    ``TypeError`` or ``OverflowError``."""
    key = (typecode, width)
    packer = _PACKERS.get(key)
    if packer is None:
        if len(_PACKERS) > 64:
            _PACKERS.clear()
        packer = _PACKERS[key] = struct.Struct(f"@{width}{typecode}")
    return packer


_NUMBER_TYPES = frozenset([int, float, bool])


def _raise_bad_value(node: str, col: Column, value: Any) -> None:
    if value is None:
        raise PropertyValueError(
            f"{node} property {col.name!r}: expected a value, got none (missing)"
        )
    if col.kind == "vector" and isinstance(value, (list, tuple)):
        if len(value) != col.width:
            raise PropertyValueError(
                f"{node} property {col.name!r}: expected a list of {col.width} numbers (the length "
                f"on the first node), got a list of {len(value)}"
            )
        for j, v in enumerate(value):
            if not _is_number(v):
                raise PropertyValueError(
                    f"{node} property {col.name!r}[{j}]: expected a number, got {describe_value(v)}"
                )
            if abs(v) > 1.7976931348623157e308:
                raise PropertyValueError(
                    f"{node} property {col.name!r}[{j}]: expected a number in float range, got "
                    f"{v!r}"
                )
    raise PropertyValueError(
        f"{node} property {col.name!r}: expected {_kind_text(col)} (as on the first node), got "
        f"{describe_value(value)}"
    )


def gather(
    table: FeatureTable,
    keys: Sequence[int],
    dtype: str,
    mask: Sequence[bool] | None = None,
    check_abort: Callable[[], None] = no_check,
) -> array.array:
    """Rows of ``keys`` in order; zeros for a key not in the table (``PAD_ID``) and, with ``mask``,
    wherever the mask is false (a padded slot, whatever its id). ``check_abort`` is called after
    every :data:`ITEMS_PER_CHECK` keys."""
    d = table.width
    out = array.array(TYPECODE[dtype])
    if d == 0:
        return out
    src = table.flat
    zero = array.array(TYPECODE[dtype], bytes(d * src.itemsize))
    row_of = table.row_of
    if (
        mask is None
        and len(row_of) == len(keys)
        and all(row_of.get(k) == i for i, k in enumerate(keys))
    ):
        return src  # keys are the distinct keys in table order: no copy
    n = len(keys)
    for lo in range(0, n, ITEMS_PER_CHECK):
        if lo:  # (a check costs microseconds: none for a short gather)
            check_abort()
        hi = min(n, lo + ITEMS_PER_CHECK)
        for i, k in enumerate(keys if hi - lo == n else keys[lo:hi], lo):
            r = row_of.get(k) if mask is None or mask[i] else None
            if r is None:
                out.extend(zero)
            else:
                out.extend(src[r * d : (r + 1) * d])
    return out


def first_columns(access: GraphAccess, key: int, names: Sequence[str]) -> list[Column]:
    """The column layout the node ``key`` fixes (as :func:`build_table` infers it from its first
    node), from that node's values alone: what sizes a call before the rest is read."""
    if not names:
        return []
    [values] = access.properties([key], names)
    return infer_columns(access.node_name(key), names, values[: len(names)])


def no_labels(options: Options) -> Options:
    """``options`` without ``label_property``: a table of features alone (no classes read)."""
    return dataclasses.replace(options, label_property=None)


def csr(
    flat: array.array, u: int, d: int, dtype: str, check_abort: Callable[[], None] = no_check
) -> tuple[array.array, array.array, array.array]:
    """(columns int32, values, row splits int64) of the entries of the ``[u, d]`` row-major
    ``flat`` that are not zero (NaN is not zero; -0.0 is), row by row, columns increasing. numpy,
    when present, only makes it faster: the arrays are the same."""
    if _np is not None and u and d:
        mat = _np.frombuffer(
            flat, dtype=_np.float32 if flat.typecode == "f" else _np.float64
        ).reshape(u, d)
        rows, cols = _np.nonzero(mat)
        splits = _np.zeros(u + 1, dtype=_np.int64)
        _np.cumsum(_np.bincount(rows, minlength=u), out=splits[1:])
        return (
            array.array(INT32, cols.astype(_np.int32).tobytes()),
            array.array(TYPECODE[dtype], mat[rows, cols].tobytes()),
            array.array("q", splits.tobytes()),
        )
    columns = array.array(INT32)
    values = array.array(TYPECODE[dtype])
    splits = array.array("q", [0])
    for r in range(u):
        if r % 1024 == 0:
            check_abort()
        for j, v in enumerate(flat[r * d : (r + 1) * d]):
            if v:
                columns.append(j)
                values.append(v)
        splits.append(len(columns))
    return columns, values, splits


def no_node_error(names: Sequence[str], options: Options) -> PropertyValueError:
    """The error ``describe`` raises when no node has all ``names`` (and, with
    ``options.id_property``, an id) among the nodes with ``options.label``."""
    scope = f"no :{options.label} node" if options.label else "no node"
    with_id = (
        "" if options.id_property is None else f" and options.id_property {options.id_property!r}"
    )
    return PropertyValueError(
        f"properties: expected a node having all of {list(names)!r}{with_id}, "
        f"got {scope} with all of them"
    )
