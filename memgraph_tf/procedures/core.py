"""Packing and GraphSAGE sampling over a :class:`~memgraph_tf.procedures.access.GraphAccess`.

Stdlib only (numpy, when importable, only speeds up the NaN/inf check); the bytes produced do not
depend on whether numpy is present. Everything is deterministic given the graph, the arguments and
``options.seed``:

* a node's neighbours are the *distinct* nodes one allowed edge away, sorted by key, whatever order
  the graph hands them out in;
* each seed row gets its own ``random.Random`` seeded from ``(options.seed, seed key)``, so a seed's
  neighbourhood does not depend on the other seeds in the call (``sample`` of n seeds equals the n
  single-seed blobs of ``sample_per_node`` stacked);
* per seed, hops are drawn in order 1..K and, within a hop, slots in row-major order.
"""

from __future__ import annotations

import array
import dataclasses
import functools
import itertools
import math
import os
import random
import struct
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple

from memgraph_tf import blob, layout
from memgraph_tf.layout import PAD_ID
from memgraph_tf.procedures import limits
from memgraph_tf.procedures.access import GraphAccess
from memgraph_tf.procedures.errors import OptionError, PropertyValueError, describe_value
from memgraph_tf.procedures.options import Options

try:  # optional: only makes the finiteness check faster
    import numpy as _np
except ImportError:  # pragma: no cover - exercised by the stdlib-only subprocess test
    _np = None

_TYPECODE = {"float32": "f", "float64": "d"}
_NP_DTYPE = {"float32": "<f4", "float64": "<f8"}
_INT32 = "i" if array.array("i").itemsize == 4 else "l"  # a 4-byte array typecode
_DRAWS_PER_CHECK = 16384
"""Sampling: an abort check at least every this many drawn slots (a few milliseconds)."""
_ITEMS_PER_CHECK = 65536
"""Writing sections: an abort check at least every this many slots or table rows."""


def _no_check() -> None:
    """The abort check of a caller that gives none."""


class Column(NamedTuple):
    """One requested property: ``kind`` is ``number`` (width 1), ``vector`` or ``string`` (width 0,
    own section); ``offset`` is its first column in ``features``."""

    name: str
    kind: str
    width: int
    offset: int


def _le(arr: array.array) -> bytes:
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


def _string_sections(columns: Sequence[Column]) -> list[str]:
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


def check_names(names: Any, param: str = "properties") -> list[str]:
    """Validates the property-name list: strings, non-empty, no duplicates."""
    if not isinstance(names, (list, tuple)):
        raise OptionError(
            f"{param}: expected a list of property names, got {describe_value(names)}"
        )
    seen = set()
    for i, name in enumerate(names):
        if not isinstance(name, str) or not name:
            raise OptionError(
                f"{param}[{i}]: expected a non-empty property name, got {describe_value(name)}"
            )
        if name in seen:
            raise OptionError(f"{param}[{i}]: expected each property once, got {name!r} twice")
        seen.add(name)
    return list(names)


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
    flat = array.array(_TYPECODE[options.dtype])
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


def _gather(
    table: FeatureTable,
    keys: Sequence[int],
    dtype: str,
    mask: Sequence[bool] | None = None,
    check_abort: Callable[[], None] = _no_check,
) -> array.array:
    """Rows of ``keys`` in order; zeros for a key not in the table (``PAD_ID``) and, with ``mask``,
    wherever the mask is false (a padded slot, whatever its id). ``check_abort`` is called after
    every :data:`_ITEMS_PER_CHECK` keys."""
    d = table.width
    out = array.array(_TYPECODE[dtype])
    if d == 0:
        return out
    src = table.flat
    zero = array.array(_TYPECODE[dtype], bytes(d * src.itemsize))
    row_of = table.row_of
    if (
        mask is None
        and len(row_of) == len(keys)
        and all(row_of.get(k) == i for i, k in enumerate(keys))
    ):
        return src  # keys are the distinct keys in table order: no copy
    n = len(keys)
    for lo in range(0, n, _ITEMS_PER_CHECK):
        if lo:  # (a check costs microseconds: none for a short gather)
            check_abort()
        hi = min(n, lo + _ITEMS_PER_CHECK)
        for i, k in enumerate(keys if hi - lo == n else keys[lo:hi], lo):
            r = row_of.get(k) if mask is None or mask[i] else None
            if r is None:
                out.extend(zero)
            else:
                out.extend(src[r * d : (r + 1) * d])
    return out


def _row_bytes(table: FeatureTable) -> list[bytes]:
    """The little-endian bytes of each table row, in row order, then one row of zeros."""
    raw = _le(table.flat)
    size = table.width * table.flat.itemsize
    if not size:
        return [b""] * (len(table.row_of) + 1)
    rows = [raw[lo : lo + size] for lo in range(0, len(raw), size)]
    rows.append(bytes(size))
    return rows


def _gather_le(
    table: FeatureTable,
    keys: Sequence[int],
    mask: Sequence[bool],
    rows: list[bytes],
    check_abort: Callable[[], None] = _no_check,
) -> bytes:
    """``_le(_gather(table, keys, dtype, mask, check_abort))`` -- the same bytes -- joined from the
    rows' bytes (``rows``: :func:`_row_bytes` of ``table``) instead of copied value by value."""
    if table.width == 0:
        return b""
    zero = len(rows) - 1
    get = table.row_of.get
    parts: list[bytes] = []
    n = len(keys)
    for lo in range(0, n, _ITEMS_PER_CHECK):
        if lo:
            check_abort()
        hi = min(n, lo + _ITEMS_PER_CHECK)
        parts += [rows[get(k, zero) if m else zero] for k, m in zip(keys[lo:hi], mask[lo:hi])]
    return b"".join(parts)


def dense_row_blobs(
    sections: dict[str, Any], n: int, check_abort: Callable[[], None] = _no_check
) -> list[bytes]:
    """Row i's blob of the dense ``sections`` (each a :class:`blob.Dense` of little-endian bytes
    with ``n`` rows first), for i in 0..n-1: exactly ``blob.pack`` of the sections cut to row i
    (shapes ``[1, ...]``).

    Every row's blob has the same header and section table, and its payloads at the same offsets
    (the same shapes, so the same lengths): row 0 is packed by :func:`blob.pack` and read back with
    :func:`blob.read_table`, and each row is that template with its own payload bytes in place;
    padding stays zero, as ``blob.pack`` writes it. ``check_abort`` is called every 256 rows."""
    if n == 0:
        return []
    cut = [
        (name, memoryview(sec.flat), len(sec.flat) // n, [1, *sec.shape[1:]], sec.dtype)
        for name, sec in sections.items()
    ]
    first = blob.pack(
        {name: blob.Dense(data[:size], shape, dtype) for name, data, size, shape, dtype in cut}
    )
    spans = [(info.payload_offset, info.payload_length) for info in blob.read_table(first)]
    assert [length for _, length in spans] == [size for _, _, size, _, _ in cut]
    pieces: list[Any] = []  # the template's bytes between payloads, then a payload slot, ...
    at = 0
    for (offset, length), (_, data, size, _, _) in zip(spans, cut):
        pieces.append(first[at:offset])
        pieces.append((data, size))
        at = offset + length
    tail = first[at:]
    out = [first]
    for i in range(1, n):
        if i % 256 == 255:
            check_abort()
        parts = [
            piece if type(piece) is bytes else piece[0][i * piece[1] : (i + 1) * piece[1]]
            for piece in pieces
        ]
        parts.append(tail)
        out.append(b"".join(parts))
    return out


# ------------------------------------------------------------------------------------------------
# pack
# ------------------------------------------------------------------------------------------------


def pack(access: GraphAccess, keys: Sequence[int], names: Sequence[str], options: Options) -> bytes:
    """The ``tf_features.pack`` blob: ``ids`` int64 [n], ``features`` [n, d] in ``options.dtype``
    (the properties' values concatenated in the order of ``names``), one string section [n] per
    string property (named after it), and ``labels`` int64 [n] when ``options.label_property``."""
    names = check_names(names)
    columns = check_blob_size(access, keys[0], len(keys), names, options)
    strings = _string_sections(columns)
    width = sum(c.width for c in columns)
    table = build_table(access, keys, names, options, columns=columns)
    if strings:  # the text is known now: the exact size, before the blob is built
        text_bytes = {}
        for name in strings:
            lengths = [len(v.encode("utf-8")) for v in table.strings[name]]
            text_bytes[name] = sum(lengths[table.row_of[k]] for k in keys)
        limits.check_pack(len(keys), width, options, strings, text_bytes)
    return blob.pack(_pack_sections(table, keys, options))


def check_blob_size(
    access: GraphAccess,
    first: int,
    n: int,
    names: Sequence[str],
    options: Options,
    fanouts: Sequence[int] | None = None,
    *,
    per_row: bool = False,
) -> list[Column]:
    """Refuses, before anything but the first node's properties is read, a ``pack`` of ``n`` nodes
    (``fanouts`` None) or a ``sample`` of ``n`` seeds (``per_row``: each ``sample_per_node`` row)
    whose blob would exceed ``options.max_blob_bytes`` (:mod:`memgraph_tf.procedures.limits`,
    phase 1: compact and sparse are checked again after sampling; ``pack``'s string text is
    counted later, once read); returns the column layout the first node
    ``first`` fixes. Raises what :func:`infer_columns` / :func:`refuse_strings` raise for that
    node, then :class:`OptionError` naming the size and the limit."""
    columns = first_columns(access, first, names)
    width = sum(c.width for c in columns)
    if fanouts is None:
        limits.check_pack(n, width, options, _string_sections(columns))
    else:
        refuse_strings(columns)
        limits.check_sample(n, fanouts, width, options, per_row=per_row)
    return columns


def first_columns(access: GraphAccess, key: int, names: Sequence[str]) -> list[Column]:
    """The column layout the node ``key`` fixes (as :func:`build_table` infers it from its first
    node), from that node's values alone: what sizes a call before the rest is read."""
    if not names:
        return []
    [values] = access.properties([key], names)
    return infer_columns(access.node_name(key), names, values[: len(names)])


def _pack_sections(table: FeatureTable, keys: Sequence[int], options: Options) -> dict[str, Any]:
    """The pack blob's sections, in :func:`memgraph_tf.layout.pack_sections` order and shapes."""
    n = len(keys)
    strings = _string_sections(table.columns)
    sections: dict[str, Any] = {}
    for sec in layout.pack_sections(
        table.width, options.dtype, strings=strings, labels=bool(options.label_property), batch=n
    ):
        if sec.role == "ids":
            data = _le(array.array("q", keys))
        elif sec.role == "features":
            data = _le(_gather(table, keys, options.dtype))
        elif sec.role == "labels":
            data = _le(array.array("q", [table.labels[k] for k in keys]))
        else:  # a string property
            values = table.strings[sec.name]
            sections[sec.name] = [values[table.row_of[k]] for k in keys]
            continue
        sections[sec.name] = blob.Dense(data, list(sec.shape), sec.dtype)
    return sections


# ------------------------------------------------------------------------------------------------
# sample
# ------------------------------------------------------------------------------------------------


class Sample(NamedTuple):
    """``ids[h]`` flat row-major ids of hop h (length n*f1*...*fh); ``masks[h]`` (h >= 1) their
    validity; ``table`` the features of every sampled key."""

    ids: list[list[int]]
    masks: list[list[bool]]
    table: FeatureTable


def _rng(base_seed: int, key: int) -> random.Random:
    return random.Random(f"memgraph-tf/{base_seed}/{key}")


class _Drawer:
    """Draws hop slots for :func:`sample_ids`, appending to ``ids`` and ``mask``: per parent slot
    ``f`` slots -- padding (``PAD_ID``, false) under a padded or masked parent; else from the
    parent's sorted distinct neighbours ``nbrs`` (d of them): with ``replace``
    ``nbrs[rng.randrange(d)]`` f times; without, ``rng.sample(nbrs, f)`` when d > f, else all of
    them then (``pad``) f - d padded slots or (resample) ``nbrs[rng.randrange(d)]`` f - d times; a
    node without neighbours stands in for itself when resampling (a self-loop).

    The draws (which ``rng`` calls, in which order) are the sampler's contract: the same node and
    seed give the same slots."""

    __slots__ = ("_f", "_falses", "_ids", "_mask", "_pad", "_pads", "_replace", "_trues")

    def __init__(self, f: int, replace: bool, pad: bool, ids: list[int], mask: list[bool]) -> None:
        self._f, self._replace, self._pad = f, replace, pad
        self._ids, self._mask = ids, mask
        self._pads, self._falses, self._trues = [PAD_ID] * f, [False] * f, [True] * f

    def __call__(
        self,
        rng: random.Random,
        neighbours: dict[int, list[int]],
        parents: Sequence[int],
        valid: Sequence[bool],
    ) -> None:
        f, replace, pad = self._f, self._replace, self._pad
        ids, mask = self._ids, self._mask
        pads, falses, trues = self._pads, self._falses, self._trues
        sample, randrange = rng.sample, rng.randrange
        for key, ok in zip(parents, valid):
            if not ok:
                ids += pads
                mask += falses
                continue
            nbrs = neighbours[key]
            d = len(nbrs)
            if d > f and not replace:  # the common case first
                ids += sample(nbrs, f)
                mask += trues
            elif d == 0:
                if pad:
                    ids += pads
                    mask += falses
                else:  # resampling from nothing: the node stands in for its own neighbours
                    ids += [key] * f
                    mask += trues
            elif replace:
                ids += [nbrs[randrange(d)] for _ in range(f)]
                mask += trues
            else:
                ids += nbrs
                if pad:
                    ids += pads[d:]
                    mask += trues[:d]
                    mask += falses[d:]
                else:
                    ids += [nbrs[randrange(d)] for _ in range(f - d)]
                    mask += trues


def sample_ids(
    access: GraphAccess, seeds: Sequence[int], fanouts: Sequence[int], options: Options
) -> tuple[list[list[int]], list[list[bool]]]:
    """Samples the k-hop neighbourhoods of ``seeds`` (keys); see the module docstring for the
    rules."""
    base_seed = (
        options.seed if options.seed is not None else int.from_bytes(os.urandom(8), "little")
    )
    rngs = [_rng(base_seed, key) for key in seeds]
    ids: list[list[int]] = [list(seeds)]
    masks: list[list[bool]] = [[True] * len(seeds)]
    neighbour_cache: dict[int, list[int]] = {}
    per_row = 1
    for h, f in enumerate(fanouts, start=1):
        prev_ids, prev_mask = ids[h - 1], masks[h - 1]
        todo = [
            k
            for k in dict.fromkeys(k for k, m in zip(prev_ids, prev_mask) if m)
            if k not in neighbour_cache
        ]
        for start in range(0, len(todo), 512):
            access.check_abort()
            part = todo[start : start + 512]
            for key, found in zip(
                part, access.neighbours(part, options.edge_types, options.direction)
            ):
                neighbour_cache[key] = sorted(set(found))
        cur_ids: list[int] = []
        cur_mask: list[bool] = []
        draw = _Drawer(f, options.replace, options.pad, cur_ids, cur_mask)
        # an abort check every _DRAWS_PER_CHECK drawn slots: every few rows, or within a row as
        # wide as that (one seed with large fanouts)
        rows_per_check = max(1, _DRAWS_PER_CHECK // (per_row * f))
        slots_per_check = max(1, _DRAWS_PER_CHECK // f)
        for row, rng in enumerate(rngs):
            if row % rows_per_check == rows_per_check - 1:
                access.check_abort()
            first, stop = row * per_row, (row + 1) * per_row
            for lo in range(first, stop, slots_per_check):
                if lo != first:
                    access.check_abort()
                hi = min(stop, lo + slots_per_check)
                draw(rng, neighbour_cache, prev_ids[lo:hi], prev_mask[lo:hi])
        ids.append(cur_ids)
        masks.append(cur_mask)
        per_row *= f
    return ids, masks


def sample(
    access: GraphAccess,
    seeds: Sequence[int],
    fanouts: Sequence[int],
    names: Sequence[str],
    options: Options,
    *,
    per_row: bool = False,
) -> Sample:
    """Samples and reads the features of every sampled node (see :func:`sample_sections`).

    Guarantees: the blob (with ``per_row``, each single seed's blob: ``sample_per_node``) is
    checked against ``options.max_blob_bytes`` (:mod:`memgraph_tf.procedures.limits`) before what
    it sizes is allocated. Phase 1, before anything is sampled -- and, with several seeds, before
    any seed but the first is read (for the feature width): :func:`limits.check_sample`; the dense
    layout is then sized exactly and the seeds' own properties are read (and checked) before their
    neighbourhoods are sampled. Compact and sparse, phase 2, after sampling and before any feature
    is read: :func:`_check_sampled` (the distinct sampled nodes; for sparse, if needed, their
    non-zero values counted as they are read); the features are read after it."""
    names = check_names(names)
    columns = None  # the first seed fixes the layout
    if len(seeds) > 1 or options.layout != "dense":  # sized from the first seed alone
        columns = check_blob_size(
            access, seeds[0], len(seeds), names, options, fanouts, per_row=per_row
        )
    table = None
    if options.layout == "dense":  # sized exactly in phase 1: the seeds are read first
        table = build_table(access, seeds, names, options, allow_strings=False, columns=columns)
        limits.check_sample(len(seeds), fanouts, table.width, options, per_row=per_row)
    ids, masks = sample_ids(access, seeds, fanouts, options)
    every = [k for hop_ids, hop_mask in zip(ids, masks) for k, m in zip(hop_ids, hop_mask) if m]
    distinct = dict.fromkeys(every)
    if table is None:
        assert columns is not None  # (set above for every layout but dense)
        _check_sampled(
            access, ids, masks, list(distinct), fanouts, names, columns, options, per_row
        )
        table = build_table(access, seeds, names, options, allow_strings=False, columns=columns)
    extra = [k for k in distinct if k not in table.row_of]
    if extra:
        more = build_table(
            access, extra, names, _no_labels(options), allow_strings=False, columns=table.columns
        )
        base = len(table.row_of)
        table.flat.extend(more.flat)
        for k, r in more.row_of.items():
            table.row_of[k] = base + r
    return Sample(ids, masks, table)


def _check_sampled(
    access: GraphAccess,
    ids: list[list[int]],
    masks: list[list[bool]],
    distinct: list[int],
    fanouts: Sequence[int],
    names: Sequence[str],
    columns: list[Column],
    options: Options,
    per_row: bool,
) -> None:
    """Phase 2 of the size check (compact and sparse layouts), after sampling and before any
    feature is read: refuses the blob (``per_row``: any row's blob) whose table of distinct sampled
    nodes (``distinct``: those of the whole call, in order of first appearance) makes it exceed
    ``options.max_blob_bytes`` -- compact exactly; sparse first with the worst case over those
    nodes, then, where that exceeds the limit, with their non-zero values counted as they are read
    (:func:`_count_nonzero`: one chunk of rows at a time, no full copy of the table). Nothing is
    computed when the worst case for the fanouts (every slot a distinct node) fits."""
    n = len(ids[0])
    rows = 1 if per_row else n
    width = sum(c.width for c in columns)
    if limits.sample_bytes(rows, fanouts, width, options) <= options.max_blob_bytes:
        return  # the bound over every possible table fits: no need to look at this one
    if not per_row:
        if limits.check_sampled(n, fanouts, width, options, len(distinct)):
            return
        nnz = counted = 0  # sparse over its worst case: count, and stop as soon as it is too much
        for part, part_nnz in _count_nonzero(access, distinct, names, columns, options):
            nnz += sum(part_nnz)
            counted += len(part)
            limits.check_sampled(n, fanouts, width, options, len(distinct), nnz, counted=counted)
        return
    per_hop = [1]
    for f in fanouts:
        per_hop.append(per_hop[-1] * f)
    to_count: list[tuple[int, list[int]]] = []  # sparse rows over their worst case
    for i in range(n):
        if i % 256 == 255:
            access.check_abort()
        keys: dict[int, None] = {}
        for h, (hop_ids, hop_mask) in enumerate(zip(ids, masks)):
            lo, hi = i * per_hop[h], (i + 1) * per_hop[h]
            keys.update(dict.fromkeys(itertools.compress(hop_ids[lo:hi], hop_mask[lo:hi])))
        row = f"row {i} (seed: {access.node_name(ids[0][i])})"
        if not limits.check_sampled(1, fanouts, width, options, len(keys), row=row):
            to_count.append((i, list(keys)))
    if not to_count:
        return
    nnz_of: dict[int, int] = {}
    needed = list(dict.fromkeys(k for _, keys in to_count for k in keys))
    for part, part_nnz in _count_nonzero(access, needed, names, columns, options):
        nnz_of.update(zip(part, part_nnz))
    for i, keys in to_count:
        row = f"row {i} (seed: {access.node_name(ids[0][i])})"
        nnz = sum(nnz_of[k] for k in keys)
        limits.check_sampled(1, fanouts, width, options, len(keys), nnz, row=row)


def _count_nonzero(
    access: GraphAccess,
    keys: Sequence[int],
    names: Sequence[str],
    columns: list[Column],
    options: Options,
) -> Iterator[tuple[Sequence[int], list[int]]]:
    """``(keys, non-zero values of each)`` for ``keys``, a chunk at a time: each chunk's features
    are read and checked as :func:`build_table` reads and checks them (the same errors, the same
    conversion to ``options.dtype``: a value is non-zero exactly when the sparse table holds it),
    counted, and dropped before the next chunk is read."""
    width = sum(c.width for c in columns)
    chunk = max(16, min(512, 2**16 // max(1, width)))  # ~64k values a chunk
    plain = _no_labels(options)  # (the seeds' classes are read, and checked, with the table)
    for start in range(0, len(keys), chunk):
        part = keys[start : start + chunk]
        flat = build_table(access, part, names, plain, allow_strings=False, columns=columns).flat
        yield part, [width - flat[r * width : (r + 1) * width].count(0) for r in range(len(part))]


def _no_labels(options: Options) -> Options:
    return dataclasses.replace(options, label_property=None)


def sample_sections(
    result: Sample,
    fanouts: Sequence[int],
    options: Options,
    rows: slice | None = None,
    check_abort: Callable[[], None] = _no_check,
    shared: TableBytes | None = None,
) -> dict[str, Any]:
    """Blob sections of a sample, exactly :func:`memgraph_tf.layout.sample_sections` for
    ``options.layout`` (names, order, dtypes, shapes with n = the number of seed rows). Dense: for
    h = 0..K ``ids_h`` int64 [n, f1..fh], ``features_h`` [n, f1..fh, d], ``mask_h`` bool
    [n, f1..fh] (h >= 1, when padding); compact/sparse: ``index_h`` and the table (see
    :func:`_compact_sections`); then ``labels`` int64 [n] when ``options.label_property``.
    ``rows`` restricts to some seed rows; ``check_abort`` is called every
    :data:`_ITEMS_PER_CHECK` slots or table rows written (the access's ``check_abort``);
    ``shared`` (:func:`table_bytes` of ``result.table``) saves converting the table again when
    several row ranges of one sample are written."""
    n_all = len(result.ids[0])
    start, stop, _ = (rows or slice(0, n_all)).indices(n_all)
    n = stop - start
    per_hop = [1]  # nodes per seed row at hop h
    for f in fanouts:
        per_hop.append(per_hop[-1] * f)
    if options.layout != "dense":
        return _compact_sections(
            result, fanouts, options, start, stop, per_hop, check_abort, shared
        )
    sections: dict[str, Any] = {}
    rows_bytes = None if shared is None else shared.rows
    for sec in layout.sample_sections(
        fanouts,
        result.table.width,
        options.dtype,
        pad=options.pad,
        labels=bool(options.label_property),
        batch=n,
    ):
        if sec.role == "labels":
            data = _le(
                array.array("q", [result.table.labels[k] for k in result.ids[0][start:stop]])
            )
        else:
            lo, hi = start * per_hop[sec.hop], stop * per_hop[sec.hop]
            hop_ids = result.ids[sec.hop][lo:hi]
            if sec.role == "ids":
                data = _le(array.array("q", hop_ids))
            elif sec.role == "mask":
                data = bytes(result.masks[sec.hop][lo:hi])
            else:  # features
                if rows_bytes is None:
                    rows_bytes = _row_bytes(result.table)
                data = _gather_le(
                    result.table, hop_ids, result.masks[sec.hop][lo:hi], rows_bytes, check_abort
                )
        sections[sec.name] = blob.Dense(data, list(sec.shape), sec.dtype)
    return sections


def _compact_sections(
    result: Sample,
    fanouts: Sequence[int],
    options: Options,
    start: int,
    stop: int,
    per_hop: list[int],
    check_abort: Callable[[], None] = _no_check,
    shared: TableBytes | None = None,
) -> dict[str, Any]:
    """The compact/sparse sections of seed rows ``start:stop`` (memgraph_tf.layout,
    docs/blob-format.md section 8): ``index_h`` int32 (the table row of each slot, -1 where the mask
    is false); the table of the distinct keys of those rows in order of first appearance (hop by
    hop, row-major) as ``table_ids`` and ``table`` (compact) or ``table_columns``/``table_values``
    (sparse, CSR: the entries that are not zero, columns increasing); ``labels``.

    Guarantees: gathering the table rows by ``index_h`` (zeros for -1) gives exactly the dense
    layout's ``features_h`` of the same rows (values equal; an entry of -0.0 is not written in the
    sparse form and reads back as 0.0), and ``table_ids`` by ``index_h`` its ``ids_h``."""
    table = result.table
    d = table.width
    seen: dict[int, None] = {}
    sections: dict[str, Any] = {}
    specs = _sections_of(
        tuple(fanouts),
        d,
        options.dtype,
        options.pad,
        bool(options.label_property),
        stop - start,
        options.layout,
    )
    index_specs = [sec for sec in specs if sec.role == "index"]
    spans = [(start * per_hop[sec.hop], stop * per_hop[sec.hop]) for sec in index_specs]
    for sec, (lo, hi) in zip(index_specs, spans):  # the distinct keys, in order of first appearance
        if hi - lo > _ITEMS_PER_CHECK:
            check_abort()
        seen.update(
            dict.fromkeys(
                itertools.compress(result.ids[sec.hop][lo:hi], result.masks[sec.hop][lo:hi])
            )
        )
    order = list(seen)
    row_of = dict(zip(order, range(len(order))))
    for sec, (lo, hi) in zip(index_specs, spans):
        hop_mask = result.masks[sec.hop][lo:hi]
        rows = list(
            map(row_of.__getitem__, itertools.compress(result.ids[sec.hop][lo:hi], hop_mask))
        )
        if len(rows) != hi - lo:  # padded slots: -1
            at = iter(rows)
            rows = [next(at) if valid else -1 for valid in hop_mask]
        index = array.array(_INT32, rows)
        sections[sec.name] = blob.Dense(_le(index), list(sec.shape), sec.dtype)
    u = len(order)
    one_row = array.array("q", [0, u])
    sections[layout.TABLE_IDS] = blob.Ragged(
        blob.Dense(_le(array.array("q", order)), [u], "int64"), one_row
    )
    if shared is None:
        shared = table_bytes(table, options, check_abort)
    picked = list(map(table.row_of.__getitem__, order))  # (every valid slot's key has a row)
    if options.layout == "compact":
        data = b"".join([shared.rows[r] for r in picked])
        sections[layout.TABLE] = blob.Ragged(blob.Dense(data, [u, d], options.dtype), one_row)
    else:
        assert shared.csr is not None  # (made for the sparse layout)
        col_bytes, value_bytes, bounds = shared.csr
        size = array.array(_TYPECODE[options.dtype]).itemsize
        col_size = array.array(_INT32).itemsize
        spans = [(bounds[r], bounds[r + 1]) for r in picked]
        columns = b"".join([col_bytes[lo * col_size : hi * col_size] for lo, hi in spans])
        values = b"".join([value_bytes[lo * size : hi * size] for lo, hi in spans])
        splits = array.array("q", [0])
        splits.extend(itertools.accumulate(hi - lo for lo, hi in spans))
        nnz = splits[-1]
        sections[layout.TABLE_COLUMNS] = blob.Ragged(blob.Dense(columns, [nnz], "int32"), splits)
        sections[layout.TABLE_VALUES] = blob.Ragged(
            blob.Dense(values, [nnz], options.dtype), array.array("q", [0, nnz])
        )
    if options.label_property:
        labels = array.array("q", [table.labels[k] for k in result.ids[0][start:stop]])
        sections[layout.LABELS] = blob.Dense(_le(labels), [stop - start], "int64")
    return sections


@functools.lru_cache(maxsize=64)
def _sections_of(
    fanouts: tuple[int, ...], d: int, dtype: str, pad: bool, labels: bool, n: int, layout_name: str
) -> tuple[layout.Section, ...]:
    """:func:`memgraph_tf.layout.sample_sections` (immutable sections), made once for the rows of
    a call rather than per row."""
    return tuple(
        layout.sample_sections(
            fanouts, d, dtype, pad=pad, labels=labels, batch=n, layout=layout_name
        )
    )


def _csr(
    flat: array.array, u: int, d: int, dtype: str, check_abort: Callable[[], None] = _no_check
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
            array.array(_INT32, cols.astype(_np.int32).tobytes()),
            array.array(_TYPECODE[dtype], mat[rows, cols].tobytes()),
            array.array("q", splits.tobytes()),
        )
    columns = array.array(_INT32)
    values = array.array(_TYPECODE[dtype])
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


class TableBytes(NamedTuple):
    """A sample's feature table as the blob writes it: ``rows`` the little-endian bytes of each
    table row, then a row of zeros (:func:`_row_bytes`); ``csr`` (sparse layout only) the whole
    table's CSR form (:func:`_csr`): (column bytes int32, value bytes, row bounds), row r's
    entries being ``bounds[r]:bounds[r + 1]``."""

    rows: list[bytes]
    csr: tuple[bytes, bytes, list[int]] | None


def table_bytes(
    table: FeatureTable, options: Options, check_abort: Callable[[], None] = _no_check
) -> TableBytes:
    """The table converted once for any number of row ranges (see :class:`TableBytes`): gathering
    its rows (``rows``; the CSR rows for sparse) in a slot order gives exactly the bytes of
    gathering the values first and converting them then, row by row."""
    rows = _row_bytes(table)
    if options.layout != "sparse":
        return TableBytes(rows, None)
    columns, values, splits = _csr(
        table.flat, len(rows) - 1, table.width, options.dtype, check_abort
    )
    return TableBytes(rows, (_le(columns), _le(values), splits.tolist()))


def sample_row_blobs(
    result: Sample,
    fanouts: Sequence[int],
    options: Options,
    check_abort: Callable[[], None] = _no_check,
) -> list[bytes]:
    """The blob of each seed row alone: row i's is ``blob.pack(sample_sections(result, fanouts,
    options, slice(i, i + 1)))`` (``sample_per_node``), made with the table converted once
    (:func:`table_bytes`) and, in the dense layout, from one packed template
    (:func:`dense_row_blobs`). ``check_abort`` is called every 256 rows."""
    n = len(result.ids[0])
    shared = table_bytes(result.table, options, check_abort)
    if options.layout == "dense":  # every section is [n, ...]: build them once, cut row by row
        sections = sample_sections(result, fanouts, options, None, check_abort, shared)
        return dense_row_blobs(sections, n, check_abort)
    out = []
    for i in range(n):
        if i % 256 == 255:
            check_abort()
        out.append(
            blob.pack_bytes(
                sample_sections(result, fanouts, options, slice(i, i + 1), shared=shared)
            )
        )
    return out


# ------------------------------------------------------------------------------------------------
# describe
# ------------------------------------------------------------------------------------------------


def num_classes(access: Any, label_property: str) -> int | None:
    """1 + the largest class in ``label_property`` over the nodes (with ``options.label``) that have
    it, or None when none has a class >= 0. Negative values (such as -1 for "unlabelled") count as
    no class; nodes without the property are skipped.

    Guarantees: one pass over the values ``access.label_values`` hands out; a value that is not an
    integer raises :class:`PropertyValueError` naming the node (by internal id) and the value,
    as ``pack`` would for that node.
    """
    top = -1
    for value, internal_id in access.label_values(label_property):
        if not isinstance(value, int) or isinstance(value, bool):
            raise PropertyValueError(
                f"node {internal_id} property {label_property!r} (options.label_property): "
                f"expected an integer class, got {describe_value(value)}"
            )
        if value > top:
            top = value
    return None if top < 0 else top + 1


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


def describe(columns: list[Column], options: Options, classes: int | None = None) -> dict[str, Any]:
    """What pack/sample produce for these columns: ``feature_width``, ``dtype``, ``columns``
    (name, kind, width, offset), ``sections`` (name, dtype, shape with -1 for the batch dimension
    and for lengths that vary from blob to blob; the sample layout of
    :func:`memgraph_tf.layout.sample_sections` in ``options.layout`` when ``options.fanouts`` is
    set, else the pack layout of :func:`memgraph_tf.layout.pack_sections`) and ``num_classes``
    (``classes``: see :func:`num_classes`; None without ``options.label_property``).

    Guarantees: raises :class:`OptionError` exactly where pack (a string property named like a
    fixed section) or sample (any string property) would refuse these columns.
    """
    width = sum(c.width for c in columns)
    labels = bool(options.label_property)
    if options.fanouts is None:
        sections = layout.pack_sections(
            width, options.dtype, strings=_string_sections(columns), labels=labels
        )
    else:
        refuse_strings(columns)
        sections = layout.sample_sections(
            options.fanouts,
            width,
            options.dtype,
            pad=options.pad,
            labels=labels,
            layout=options.layout,
        )
    return {
        "feature_width": width,
        "dtype": options.dtype,
        "columns": [
            {"name": c.name, "kind": c.kind, "width": c.width, "offset": c.offset} for c in columns
        ],
        "sections": [s.to_map() for s in sections],
        "num_classes": classes if labels else None,
    }
