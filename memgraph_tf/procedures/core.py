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
import math
import os
import random
import sys
from typing import Any, NamedTuple, Sequence

from memgraph_tf import blob
from memgraph_tf.procedures.access import GraphAccess
from memgraph_tf.procedures.errors import OptionError, PropertyValueError, describe_value
from memgraph_tf.procedures.options import Options, check_size

try:  # optional: only makes the finiteness check faster
    import numpy as _np
except ImportError:  # pragma: no cover - exercised by the stdlib-only subprocess test
    _np = None

PAD_ID = -1
"""The id written for a padded neighbour slot (its ``mask_h`` entry is false, its features zero)."""

_TYPECODE = {"float32": "f", "float64": "d"}
_NP_DTYPE = {"float32": "<f4", "float64": "<f8"}


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
            raise PropertyValueError(f"{name_of_node} property {name!r}: expected a value, got none (missing)")
        if isinstance(value, str):
            columns.append(Column(name, "string", 0, offset))
            continue
        if _is_number(value):
            kind, width = "number", 1
        elif isinstance(value, (list, tuple)):
            for j, v in enumerate(value):
                if not _is_number(v):
                    raise PropertyValueError(
                        f"{name_of_node} property {name!r}[{j}]: expected a number, got {describe_value(v)}"
                    )
            kind, width = "vector", len(value)
        else:
            raise PropertyValueError(
                f"{name_of_node} property {name!r}: expected a number, a list of numbers or a string, "
                f"got {describe_value(value)}"
            )
        columns.append(Column(name, kind, width, offset))
        offset += width
    return columns


def check_names(names: Any, param: str = "properties") -> list[str]:
    """Validates the property-name list: strings, non-empty, no duplicates."""
    if not isinstance(names, (list, tuple)):
        raise OptionError(f"{param}: expected a list of property names, got {describe_value(names)}")
    seen = set()
    for i, name in enumerate(names):
        if not isinstance(name, str) or not name:
            raise OptionError(f"{param}[{i}]: expected a non-empty property name, got {describe_value(name)}")
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
    rows = []
    chunk = 512
    for start in range(0, len(distinct), chunk):
        access.check_abort()
        rows.extend(access.properties(distinct[start : start + chunk], fetch))
    if columns is None:
        columns = infer_columns(access.node_name(distinct[0]), names, rows[0][: len(names)])
    for col in columns:
        if col.kind == "string" and not allow_strings:
            raise OptionError(
                f"properties: expected numeric properties for sampling, got string property {col.name!r} "
                f"(string properties get their own section only in tf_features.pack)"
            )
    width = sum(c.width for c in columns)
    flat = array.array(_TYPECODE[options.dtype])
    strings: dict[str, list[str]] = {c.name: [] for c in columns if c.kind == "string"}
    labels: dict[int, int] = {}
    for r, (key, values) in enumerate(zip(distinct, rows)):
        if r % 1024 == 1023:
            access.check_abort()
        for col, value in zip(columns, values):
            if col.kind == "number" and _is_number(value):
                flat.append(value)
            elif col.kind == "vector" and isinstance(value, (list, tuple)) and len(value) == col.width:
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
                    f"{access.node_name(key)} property {options.label_property!r} (options.label_property): "
                    f"expected an integer class, got {what}"
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
                f"{access.node_name(distinct[row])} property {where}: expected a finite number, got "
                f"{shown!r} ({flat[bad]!r} as {options.dtype}); set options.allow_non_finite to accept NaN/inf"
            )
    return FeatureTable(columns, width, flat, {k: i for i, k in enumerate(distinct)}, strings, labels)


def _raise_bad_value(node: str, col: Column, value: Any) -> None:
    if value is None:
        raise PropertyValueError(f"{node} property {col.name!r}: expected a value, got none (missing)")
    if col.kind == "vector" and isinstance(value, (list, tuple)):
        if len(value) != col.width:
            raise PropertyValueError(
                f"{node} property {col.name!r}: expected a list of {col.width} numbers (the length on the "
                f"first node), got a list of {len(value)}"
            )
        for j, v in enumerate(value):
            if not _is_number(v):
                raise PropertyValueError(f"{node} property {col.name!r}[{j}]: expected a number, got {describe_value(v)}")
            if abs(v) > 1.7976931348623157e308:
                raise PropertyValueError(f"{node} property {col.name!r}[{j}]: expected a number in float range, got {v!r}")
    raise PropertyValueError(
        f"{node} property {col.name!r}: expected {_kind_text(col)} (as on the first node), got {describe_value(value)}"
    )


def _gather(table: FeatureTable, keys: Sequence[int], dtype: str) -> array.array:
    """Rows of ``keys`` in order (``PAD_ID`` -> zeros)."""
    d = table.width
    out = array.array(_TYPECODE[dtype])
    if d == 0:
        return out
    src = table.flat
    zero = array.array(_TYPECODE[dtype], bytes(d * src.itemsize))
    row_of = table.row_of
    if len(row_of) == len(keys) and all(row_of.get(k) == i for i, k in enumerate(keys)):
        return src  # keys are the distinct keys in table order: no copy
    for k in keys:
        r = row_of.get(k)
        if r is None:
            out.extend(zero)
        else:
            out.extend(src[r * d : (r + 1) * d])
    return out


# ------------------------------------------------------------------------------------------------
# pack
# ------------------------------------------------------------------------------------------------


def pack(access: GraphAccess, keys: Sequence[int], names: Sequence[str], options: Options) -> bytes:
    """The ``tf_features.pack`` blob: ``ids`` int64 [n], ``features`` [n, d] in ``options.dtype``
    (the properties' values concatenated in the order of ``names``), one string section [n] per
    string property (named after it), and ``labels`` int64 [n] when ``options.label_property``."""
    names = check_names(names)
    table = build_table(access, keys, names, options)
    return blob.pack(_pack_sections(table, keys, options))


def _pack_sections(table: FeatureTable, keys: Sequence[int], options: Options) -> dict[str, Any]:
    n = len(keys)
    sections: dict[str, Any] = {
        "ids": blob.Dense(_le(array.array("q", keys)), [n], "int64"),
        "features": blob.Dense(_le(_gather(table, keys, options.dtype)), [n, table.width], options.dtype),
    }
    for col in table.columns:
        if col.kind == "string":
            if col.name in ("ids", "features", "labels"):
                raise OptionError(
                    f"properties: expected string property names other than 'ids', 'features' and 'labels' "
                    f"(section names of the blob), got {col.name!r}"
                )
            values = table.strings[col.name]
            sections[col.name] = [values[table.row_of[k]] for k in keys]
    if options.label_property:
        sections["labels"] = blob.Dense(_le(array.array("q", [table.labels[k] for k in keys])), [n], "int64")
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


def _draw(rng: random.Random, nbrs: list[int], self_key: int, f: int, replace: bool, pad: bool,
          ids: list[int], mask: list[bool]) -> None:
    d = len(nbrs)
    if d == 0:
        if pad:
            ids.extend([PAD_ID] * f)
            mask.extend([False] * f)
        else:  # resampling from nothing: the node stands in for its own neighbours (a self-loop)
            ids.extend([self_key] * f)
            mask.extend([True] * f)
        return
    if replace:
        ids.extend([nbrs[rng.randrange(d)] for _ in range(f)])
        mask.extend([True] * f)
    elif d > f:
        ids.extend(rng.sample(nbrs, f))
        mask.extend([True] * f)
    else:
        ids.extend(nbrs)
        if pad:
            ids.extend([PAD_ID] * (f - d))
            mask.extend([True] * d + [False] * (f - d))
        else:
            ids.extend([nbrs[rng.randrange(d)] for _ in range(f - d)])
            mask.extend([True] * f)


def sample_ids(access: GraphAccess, seeds: Sequence[int], fanouts: Sequence[int], options: Options) -> tuple[list[list[int]], list[list[bool]]]:
    """Samples the k-hop neighbourhoods of ``seeds`` (keys); see the module docstring for the rules."""
    base_seed = options.seed if options.seed is not None else int.from_bytes(os.urandom(8), "little")
    rngs = [_rng(base_seed, key) for key in seeds]
    ids: list[list[int]] = [list(seeds)]
    masks: list[list[bool]] = [[True] * len(seeds)]
    neighbour_cache: dict[int, list[int]] = {}
    per_row = 1
    for h, f in enumerate(fanouts, start=1):
        prev_ids, prev_mask = ids[h - 1], masks[h - 1]
        todo = [k for k in dict.fromkeys(k for k, m in zip(prev_ids, prev_mask) if m) if k not in neighbour_cache]
        for start in range(0, len(todo), 512):
            access.check_abort()
            part = todo[start : start + 512]
            for key, found in zip(part, access.neighbours(part, options.edge_types, options.direction)):
                neighbour_cache[key] = sorted(set(found))
        cur_ids: list[int] = []
        cur_mask: list[bool] = []
        for row, rng in enumerate(rngs):
            if row % 256 == 255:
                access.check_abort()
            for slot in range(row * per_row, (row + 1) * per_row):
                if prev_mask[slot]:
                    key = prev_ids[slot]
                    _draw(rng, neighbour_cache[key], key, f, options.replace, options.pad, cur_ids, cur_mask)
                else:
                    cur_ids.extend([PAD_ID] * f)
                    cur_mask.extend([False] * f)
        ids.append(cur_ids)
        masks.append(cur_mask)
        per_row *= f
    return ids, masks


def sample(access: GraphAccess, seeds: Sequence[int], fanouts: Sequence[int], names: Sequence[str], options: Options) -> Sample:
    """Samples and reads the features of every sampled node (see :func:`sample_sections`)."""
    names = check_names(names)
    check_size(len(seeds), fanouts, None)
    ids, masks = sample_ids(access, seeds, fanouts, options)
    every = [k for hop_ids, hop_mask in zip(ids, masks) for k, m in zip(hop_ids, hop_mask) if m]
    table = build_table(access, seeds, names, options, allow_strings=False)  # seeds fix the layout
    extra = [k for k in dict.fromkeys(every) if k not in table.row_of]
    if extra:
        more = build_table(access, extra, names, _no_labels(options), allow_strings=False, columns=table.columns)
        base = len(table.row_of)
        table.flat.extend(more.flat)
        for k, r in more.row_of.items():
            table.row_of[k] = base + r
    check_size(len(seeds), fanouts, table.width)
    return Sample(ids, masks, table)


def _no_labels(options: Options) -> Options:
    return dataclasses.replace(options, label_property=None)


def sample_sections(result: Sample, fanouts: Sequence[int], options: Options, rows: slice | None = None) -> dict[str, Any]:
    """Blob sections of a sample, in this order: for h = 0..K ``ids_h`` int64 [n, f1..fh],
    ``features_h`` [n, f1..fh, d], ``mask_h`` bool [n, f1..fh] (h >= 1, when padding); then
    ``labels`` int64 [n] when ``options.label_property``. ``rows`` restricts to some seed rows."""
    n_all = len(result.ids[0])
    start, stop, _ = (rows or slice(0, n_all)).indices(n_all)
    n = stop - start
    sections: dict[str, Any] = {}
    shape = [n]
    per_row = 1
    for h in range(len(fanouts) + 1):
        if h:
            shape = shape + [fanouts[h - 1]]
            per_row *= fanouts[h - 1]
        lo, hi = start * per_row, stop * per_row
        hop_ids = result.ids[h][lo:hi]
        hop_mask = result.masks[h][lo:hi]
        feats_keys = [k if m else PAD_ID for k, m in zip(hop_ids, hop_mask)]
        sections[f"ids_{h}"] = blob.Dense(_le(array.array("q", hop_ids)), list(shape), "int64")
        sections[f"features_{h}"] = blob.Dense(
            _le(_gather_masked(result.table, feats_keys, hop_mask, options.dtype)),
            shape + [result.table.width],
            options.dtype,
        )
        if h and options.pad:
            sections[f"mask_{h}"] = blob.Dense(bytes(hop_mask), list(shape), "bool")
    if options.label_property:
        labels = [result.table.labels[k] for k in result.ids[0][start:stop]]
        sections["labels"] = blob.Dense(_le(array.array("q", labels)), [n], "int64")
    return sections


def _gather_masked(table: FeatureTable, keys: list[int], mask: list[bool], dtype: str) -> array.array:
    d = table.width
    out = array.array(_TYPECODE[dtype])
    if d == 0:
        return out
    src = table.flat
    zero = array.array(_TYPECODE[dtype], bytes(d * src.itemsize))
    row_of = table.row_of
    for k, m in zip(keys, mask):
        if m:
            r = row_of[k]
            out.extend(src[r * d : (r + 1) * d])
        else:
            out.extend(zero)
    return out


# ------------------------------------------------------------------------------------------------
# describe
# ------------------------------------------------------------------------------------------------


def describe(columns: list[Column], options: Options) -> dict[str, Any]:
    """What pack/sample produce for these columns: ``feature_width``, ``dtype``, ``columns``
    (name, kind, width, offset) and ``sections`` (name, dtype, shape with -1 for the batch
    dimension; the sample layout when ``options.fanouts`` is set, else the pack layout)."""
    width = sum(c.width for c in columns)
    sections = []
    if options.fanouts is None:
        sections.append({"name": "ids", "dtype": "int64", "shape": [-1]})
        sections.append({"name": "features", "dtype": options.dtype, "shape": [-1, width]})
        for c in columns:
            if c.kind == "string":
                sections.append({"name": c.name, "dtype": "string", "shape": [-1]})
    else:
        for c in columns:
            if c.kind == "string":
                raise OptionError(
                    f"properties: expected numeric properties for sampling, got string property {c.name!r} "
                    f"(string properties get their own section only in tf_features.pack)"
                )
        shape = [-1]
        for h in range(len(options.fanouts) + 1):
            if h:
                shape = shape + [options.fanouts[h - 1]]
            sections.append({"name": f"ids_{h}", "dtype": "int64", "shape": list(shape)})
            sections.append({"name": f"features_{h}", "dtype": options.dtype, "shape": shape + [width]})
            if h and options.pad:
                sections.append({"name": f"mask_{h}", "dtype": "bool", "shape": list(shape)})
    if options.label_property:
        sections.append({"name": "labels", "dtype": "int64", "shape": [-1]})
    return {
        "feature_width": width,
        "dtype": options.dtype,
        "columns": [{"name": c.name, "kind": c.kind, "width": c.width, "offset": c.offset} for c in columns],
        "sections": sections,
    }
