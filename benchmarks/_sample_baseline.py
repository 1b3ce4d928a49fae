"""The sampling path as it was before issue 11 (memgraph_tf 0.x at commit 93e52a3), frozen as a query module
``_sample_baseline.sample`` so that ``benchmarks/query_modules.py`` can time it against today's
``tf_features.sample`` in the same run, on the same graph, and check that both write the same bytes.

A verbatim copy of that commit's ``MgpGraphAccess`` (neighbours and properties through mgp.py's public
``Vertex``/``Edge`` objects) and of ``procedures/core.py``'s sampling functions (dense layout);
``describe`` and ``pack`` are left out. Not part of the package; do not change it except to follow
renames of what it imports.
"""

# No `from __future__ import annotations` here: mgp.py reads the annotations as real types.
import array
import dataclasses
import math
import os
import random
import sys
from typing import Any, NamedTuple, Sequence

import mgp

from memgraph_tf import blob, layout
from memgraph_tf.layout import PAD_ID
from memgraph_tf.procedures.errors import (
    NodeNotFoundError,
    OptionError,
    ProcedureInputError,
    PropertyValueError,
    describe_value,
)
from memgraph_tf.procedures.options import Options, check_size, parse_fanouts, parse_options

try:
    import numpy as _np
except ImportError:  # pragma: no cover
    _np = None

ABORT_CHECK_EVERY = 256


def node_name(key, id_property):
    return f"node {key}" if id_property is None else f"node with {id_property} = {key}"


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def check_names(names, param="properties"):
    return list(names)


class MgpGraphAccess:
    """:class:`GraphAccess` over an ``mgp.ProcCtx`` (inside Memgraph or the embedded runtime).

    Keys are internal vertex ids, or the integer values of ``options.id_property`` (looked up among
    the vertices with ``options.label`` when given, else among all vertices).
    """

    def __init__(self, ctx: Any, options: Options) -> None:
        self._ctx = ctx
        self._graph = ctx.graph
        self._id_property = options.id_property
        self._label = options.label
        self._vertices: dict[int, Any] = {}
        self._index: dict[int, Any] | None = None
        self._calls = 0

    # -- protocol -------------------------------------------------------------------------------
    def node_name(self, key: int) -> str:
        return node_name(key, self._id_property)

    def check_abort(self) -> None:
        self._ctx.check_must_abort()

    def _tick(self) -> None:
        self._calls += 1
        if self._calls % ABORT_CHECK_EVERY == 0:
            self._ctx.check_must_abort()

    def properties(self, keys: Sequence[int], names: Sequence[str]) -> list[list[Any]]:
        out = []
        for key in keys:
            self._tick()
            props = self._vertices[key].properties
            out.append([props.get(name) for name in names])
        return out

    def neighbours(
        self, keys: Sequence[int], edge_types: Sequence[str] | None, direction: str
    ) -> list[list[int]]:
        types = None if edge_types is None else frozenset(edge_types)
        out = []
        for key in keys:
            vertex = self._vertices[key]
            found: list[int] = []
            if direction in ("out", "both"):
                for edge in vertex.out_edges:
                    self._tick()
                    if types is None or edge.type.name in types:
                        found.append(self._register(edge.to_vertex))
            if direction in ("in", "both"):
                for edge in vertex.in_edges:
                    self._tick()
                    if types is None or edge.type.name in types:
                        found.append(self._register(edge.from_vertex))
            out.append(found)
        return out

    # -- resolution -----------------------------------------------------------------------------
    def _key_of(self, vertex: Any) -> int:
        if self._id_property is None:
            return vertex.id
        value = vertex.properties.get(self._id_property)
        if not _is_int(value):
            what = "no value" if value is None else describe_value(value)
            raise PropertyValueError(
                f"node {vertex.id} property {self._id_property!r} (options.id_property): expected an "
                f"integer id, got {what}"
            )
        return value

    def _register(self, vertex: Any) -> int:
        key = self._key_of(vertex)
        seen = self._vertices.get(key)
        if seen is None:
            self._vertices[key] = vertex
        elif self._id_property is not None and seen.id != vertex.id:
            raise ProcedureInputError(
                f"options.id_property: expected unique ids, got {self._id_property} = {key} on the "
                f"nodes with internal ids {seen.id} and {vertex.id}"
            )
        return key

    def _build_index(self) -> dict[int, Any]:
        index: dict[int, Any] = {}
        for i, vertex in enumerate(self._graph.vertices):
            if i % ABORT_CHECK_EVERY == 0:
                self._ctx.check_must_abort()
            if self._label is not None and not any(l.name == self._label for l in vertex.labels):
                continue
            value = vertex.properties.get(self._id_property)
            if value is None:
                continue
            if not _is_int(value):
                raise PropertyValueError(
                    f"node {vertex.id} property {self._id_property!r} (options.id_property): expected "
                    f"an integer id, got {describe_value(value)}"
                )
            if value in index:
                raise ProcedureInputError(
                    f"options.id_property: expected unique ids, got {self._id_property} = {value} on "
                    f"the nodes with internal ids {index[value].id} and {vertex.id}"
                )
            index[value] = vertex
        return index

    def resolve(self, nodes: Any, param: str) -> list[int]:
        """Turns a list of vertices or integer ids into keys; raises naming ``param[i]`` at fault.

        Guarantees: the keys are in input order (duplicates kept) and every key can be passed to
        :meth:`properties` and :meth:`neighbours`.
        """
        if not isinstance(nodes, (list, tuple)):
            raise ProcedureInputError(f"{param}: expected a list of nodes or integer ids, got {describe_value(nodes)}")
        if not nodes:
            raise ProcedureInputError(f"{param}: expected at least one node or id, got an empty list")
        keys = []
        for i, node in enumerate(nodes):
            if i % ABORT_CHECK_EVERY == 0:
                self._ctx.check_must_abort()
            if _is_int(node):
                keys.append(self._resolve_id(node, f"{param}[{i}]"))
            elif hasattr(node, "properties") and hasattr(node, "out_edges"):
                keys.append(self._register(node))
            else:
                raise ProcedureInputError(
                    f"{param}[{i}]: expected a node or an integer id, got {describe_value(node)}"
                )
        return keys

    def _resolve_id(self, node_id: int, where: str) -> int:
        if self._id_property is None:
            if node_id not in self._vertices:
                try:
                    self._vertices[node_id] = self._graph.get_vertex_by_id(node_id)
                except IndexError:
                    raise NodeNotFoundError(
                        f"{where}: unknown node id {node_id} (no node has that internal id)"
                    ) from None
            return node_id
        if self._index is None:
            self._index = self._build_index()
        vertex = self._index.get(node_id)
        if vertex is None:
            scope = f":{self._label} node" if self._label else "node"
            raise NodeNotFoundError(
                f"{where}: unknown node id {node_id} (no {scope} has {self._id_property} = {node_id})"
            )
        return self._register(vertex)


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


def refuse_strings(columns: Sequence[Column]) -> None:
    """Raises :class:`OptionError` naming the first string property (sampling packs numbers only)."""
    for col in columns:
        if col.kind == "string":
            raise OptionError(
                f"properties: expected numeric properties for sampling, got string property {col.name!r} "
                f"(string properties get their own section only in tf_features.pack)"
            )


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
    access,
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
    if not allow_strings:
        refuse_strings(columns)
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


def _gather(table: FeatureTable, keys: Sequence[int], dtype: str, mask: Sequence[bool] | None = None) -> array.array:
    """Rows of ``keys`` in order; zeros for a key not in the table (``PAD_ID``) and, with ``mask``,
    wherever the mask is false (a padded slot, whatever its id)."""
    d = table.width
    out = array.array(_TYPECODE[dtype])
    if d == 0:
        return out
    src = table.flat
    zero = array.array(_TYPECODE[dtype], bytes(d * src.itemsize))
    row_of = table.row_of
    if mask is None and len(row_of) == len(keys) and all(row_of.get(k) == i for i, k in enumerate(keys)):
        return src  # keys are the distinct keys in table order: no copy
    for i, k in enumerate(keys):
        r = row_of.get(k) if mask is None or mask[i] else None
        if r is None:
            out.extend(zero)
        else:
            out.extend(src[r * d : (r + 1) * d])
    return out


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


def sample_ids(access, seeds: Sequence[int], fanouts: Sequence[int], options: Options) -> tuple[list[list[int]], list[list[bool]]]:
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


def sample_nodes(access, seeds: Sequence[int], fanouts: Sequence[int], names: Sequence[str], options: Options) -> Sample:
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
    """Blob sections of a sample, exactly :func:`memgraph_tf.layout.sample_sections` (names, order,
    dtypes, shapes with n = the number of seed rows): for h = 0..K ``ids_h`` int64 [n, f1..fh],
    ``features_h`` [n, f1..fh, d], ``mask_h`` bool [n, f1..fh] (h >= 1, when padding); then
    ``labels`` int64 [n] when ``options.label_property``. ``rows`` restricts to some seed rows."""
    n_all = len(result.ids[0])
    start, stop, _ = (rows or slice(0, n_all)).indices(n_all)
    n = stop - start
    per_hop = [1]  # nodes per seed row at hop h
    for f in fanouts:
        per_hop.append(per_hop[-1] * f)
    sections: dict[str, Any] = {}
    for sec in layout.sample_sections(fanouts, result.table.width, options.dtype, pad=options.pad,
                                      labels=bool(options.label_property), batch=n):
        if sec.role == "labels":
            data = _le(array.array("q", [result.table.labels[k] for k in result.ids[0][start:stop]]))
        else:
            lo, hi = start * per_hop[sec.hop], stop * per_hop[sec.hop]
            hop_ids = result.ids[sec.hop][lo:hi]
            if sec.role == "ids":
                data = _le(array.array("q", hop_ids))
            elif sec.role == "mask":
                data = bytes(result.masks[sec.hop][lo:hi])
            else:  # features
                data = _le(_gather(result.table, hop_ids, options.dtype, result.masks[sec.hop][lo:hi]))
        sections[sec.name] = blob.Dense(data, list(sec.shape), sec.dtype)
    return sections


@mgp.read_proc
def sample(
    ctx: mgp.ProcCtx,
    seeds: mgp.List[mgp.Any],
    fanouts: mgp.List[int],
    properties: mgp.List[str],
    options: mgp.Nullable[mgp.Map] = None,
) -> mgp.Record(blob=str):
    """The pre-issue-11 ``tf_features.sample`` (dense layout)."""
    opts = parse_options("sample", options)
    fan = parse_fanouts(fanouts)
    access = MgpGraphAccess(ctx, opts)
    keys = access.resolve(seeds, "seeds")
    result = sample_nodes(access, keys, fan, properties, opts)
    return mgp.Record(blob=blob.b64encode(blob.pack(sample_sections(result, fan, opts))))
