"""Raw property columns of typed blobs (``options.feature_spec``; stdlib only).

A label given a feature spec (:class:`memgraph_tf.feature_spec.LabelSpec`) carries its properties'
*raw* values, grouped by kind (:data:`memgraph_tf.layout.RAW_GROUPS`), in place of a feature
matrix: ``num`` float32 (``required``: its numbers as ``properties`` packs them; ``numeric``: the
number or the list of ``length`` numbers; ``boolean``: 0/1), ``time`` int64 (``temporal``, in the
spec's unit), ``cat`` string (``categorical``: the value's
:func:`~memgraph_tf.feature_spec.category_text`), ``bag`` ragged string (``multi_categorical``: each
element's category text, in stored order), ``has`` bool (the property is present and not null).
Columns follow the spec's property order within each group. A missing (null) value is zero, ``""``
or an empty bag, never an error -- but for ``required``, refused as ``properties`` refuses it; a
value of the wrong type for its kind is a :class:`PropertyValueError` naming the node, its label,
the property, the kind and the value's type. The layout and its sections are
:func:`memgraph_tf.layout.typed_sample_sections` (``raw``); docs/blob-format.md section 11.
"""

from __future__ import annotations

import array
import datetime
import functools
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple, NoReturn

from memgraph_tf import blob, layout
from memgraph_tf.feature_spec import (
    FeatureSpecError,
    LabelSpec,
    PropertySpec,
    category_text,
    is_category,
)
from memgraph_tf.layout import PAD_ID, RawWidths
from memgraph_tf.procedures.errors import OptionError, PropertyValueError, describe_value, quoted
from memgraph_tf.procedures.tables import Column, le

__all__ = [
    "RawLayout",
    "RawTable",
    "build_raw_table",
    "parse_feature_specs",
    "parse_label_spec",
    "raw_sections",
    "split_feature_specs",
    "temporal_number",
]

_EPOCH_DAY = datetime.date(1970, 1, 1)
_EPOCH = datetime.datetime(1970, 1, 1)
_MICROSECOND = datetime.timedelta(microseconds=1)
_INT64 = (-(2**63), 2**63 - 1)
_CHUNK = 512


def _plain(value: Any) -> Any:
    """``value`` with every tuple as a list, maps included (Memgraph hands a procedure every
    list as a tuple)."""
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    return value


def parse_feature_specs(value: Any) -> dict[str, LabelSpec]:
    """``options.feature_spec``: a map label -> that label's spec in
    :meth:`LabelSpec.to_dict`'s form (``label`` equal to the key); null: none. A bad one raises
    :class:`OptionError` naming ``options.feature_spec[label]`` and the spec's own error (the
    property, the kind, the value)."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise OptionError(
            "options.feature_spec: expected a map of label -> feature spec (LabelSpec.to_dict()), "
            f"got {describe_value(value)}"
        )
    out: dict[str, LabelSpec] = {}
    for label, raw in value.items():
        where = f"options.feature_spec[{label!r}]"
        if not isinstance(label, str) or not label:
            raise OptionError(f"options.feature_spec: expected label names as keys, got {label!r}")
        spec = parse_label_spec(raw, where)
        if spec.label != label:
            raise OptionError(
                f"{where}: expected the spec's 'label' to be {label!r} (its key), got "
                f"{spec.label!r}"
            )
        out[label] = spec
    return out


def parse_label_spec(raw: Any, where: str) -> LabelSpec:
    """A feature spec in :meth:`LabelSpec.to_dict`'s form (lists may come as tuples, as Memgraph
    hands them over); a bad one raises :class:`OptionError` naming ``where`` and the spec's own
    error (the property, the kind, the value)."""
    try:
        return LabelSpec.from_dict(_plain(raw))
    except FeatureSpecError as exc:
        raise OptionError(f"{where}: {exc}") from None


def split_feature_specs(
    specs: Mapping[str, LabelSpec],
    properties: Any,
    names_of: dict[str, list[str]],
    labels: Sequence[str],
) -> dict[str, LabelSpec]:
    """The labels whose spec has raw columns (a kind other than ``required``); a spec of
    ``required`` properties only joins ``names_of`` as ``properties[label] = [names]`` (the same
    bytes). Raises :class:`OptionError` for a label without slots in the sampling spec
    (``labels``) or also in the ``properties`` argument."""
    given = set(properties) if isinstance(properties, Mapping) else set()
    raw_of: dict[str, LabelSpec] = {}
    for label, spec in specs.items():
        if label not in labels:
            raise OptionError(
                f"options.feature_spec: label {label!r} has no slots in this sampling spec "
                f"(labels with slots: {quoted(labels)})"
            )
        if label in given:
            raise OptionError(
                f"options.feature_spec and properties: expected label {label!r} in one of them, "
                "got it in both (a feature spec gives the label's columns)"
            )
        if all(p.kind == "required" for p in spec.properties):
            if spec.properties:
                names_of[label] = [p.name for p in spec.properties]
        else:
            raw_of[label] = spec
    return raw_of


def required_names(spec: LabelSpec) -> list[str]:
    """The spec's ``required`` properties, in order (their widths come from the first node)."""
    return [p.name for p in spec.properties if p.kind == "required"]


class RawColumn(NamedTuple):
    """One spec property's columns: its ``group``, first column ``offset`` in it and ``width``
    (``has`` column: ``index``); ``vector``: the value is a list of ``width`` numbers."""

    spec: PropertySpec
    group: str
    offset: int
    width: int
    index: int
    vector: bool


class RawLayout:
    """The raw columns of one label: per spec property its group, offset and width
    (``required`` widths from ``required``: the columns the first node fixed), and the
    :class:`~memgraph_tf.layout.RawWidths`."""

    def __init__(self, label: str, spec: LabelSpec, required: Sequence[Column]) -> None:
        self.label, self.spec = label, spec
        fixed = {c.name: c for c in required}
        counts = dict.fromkeys(layout.RAW_GROUPS[:-1], 0)
        self.columns: list[RawColumn] = []
        for index, prop in enumerate(spec.properties):
            group = layout.RAW_GROUP_OF_KIND[prop.kind]
            width, vector = 1, False
            if prop.kind == "required":
                width, vector = fixed[prop.name].width, fixed[prop.name].kind == "vector"
            elif prop.kind == "numeric" and prop.length is not None:
                width, vector = prop.length, True
            self.columns.append(RawColumn(prop, group, counts[group], width, index, vector))
            counts[group] += width
        self.widths = layout.raw_widths(spec, {c.name: c.width for c in required})
        assert self.widths == RawWidths(**counts, has=len(spec.properties))


def temporal_number(kind_type: str, value: Any) -> int | None:
    """A temporal value as an integer in its type's unit (``Date``: days since 1970-01-01;
    ``LocalDateTime``: microseconds since 1970-01-01T00:00:00; ``Duration``: microseconds;
    ``timestamp``: the integer as stored); None when ``value`` is not of ``kind_type``."""
    if kind_type == "Date":
        if isinstance(value, datetime.date) and not isinstance(value, datetime.datetime):
            return (value - _EPOCH_DAY).days
    elif kind_type == "LocalDateTime":
        if isinstance(value, datetime.datetime) and value.tzinfo is None:
            return (value - _EPOCH) // _MICROSECOND
    elif kind_type == "Duration":
        if isinstance(value, datetime.timedelta):
            return value // _MICROSECOND
    elif isinstance(value, int) and not isinstance(value, bool) and _INT64[0] <= value <= _INT64[1]:
        return value  # timestamp
    return None


def _expected(col: RawColumn) -> str:
    prop = col.spec
    if prop.kind in ("required", "numeric"):
        return f"a list of {col.width} numbers" if col.vector else "a number"
    if prop.kind == "boolean":
        return "true or false"
    if prop.kind == "temporal":
        if prop.type == "timestamp":
            return f"an integer timestamp (unit {prop.unit!r})"
        return f"a {prop.type}"
    if prop.kind == "categorical":
        return "a string, an integer or a boolean"
    return "a list of strings, integers or booleans"


def _is_number(v: Any, allow_bool: bool) -> bool:
    return isinstance(v, (int, float)) and (allow_bool or not isinstance(v, bool))


class RawTable:
    """The raw rows of distinct nodes of one label: row ``row_of[key]``; per group its flat
    row-major values (``num`` float32, ``time`` int64, ``cat`` texts, ``bag`` one list of texts
    per (row, column), ``has`` 0/1 bytes)."""

    def __init__(self, raw_layout: RawLayout) -> None:
        self.layout = raw_layout
        self.row_of: dict[int, int] = {}
        self.num = array.array("f")
        self.time = array.array("q")
        self.cat: list[str] = []
        self.bag: list[list[str]] = []
        self.has = bytearray()

    def add(self, node: str, values: Sequence[Any], allow_non_finite: bool) -> None:
        """Appends one node's row (``values`` in spec order); ``node`` names it in errors."""
        w = self.layout.widths
        num = [0.0] * w.num
        time = [0] * w.time
        cat = [""] * w.cat
        bag: list[list[str]] = [[] for _ in range(w.bag)]
        for col, value in zip(self.layout.columns, values):
            self.has.append(value is not None)
            if value is None:
                if col.spec.kind == "required":
                    _bad(node, col, value, "", "a value", "none (missing)")
                continue
            if col.group == "num":
                num[col.offset : col.offset + col.width] = self._numbers(node, col, value)
            elif col.group == "time":
                got = temporal_number(col.spec.type, value)
                if got is None:
                    _bad(node, col, value)
                time[col.offset] = got
            elif col.group == "cat":
                if not is_category(value):
                    _bad(node, col, value)
                cat[col.offset] = category_text(value)
            else:
                if not isinstance(value, (list, tuple)):
                    _bad(node, col, value)
                for j, v in enumerate(value):
                    if not is_category(v):
                        _bad(node, col, v, f"[{j}]", "a string, an integer or a boolean")
                bag[col.offset] = [category_text(v) for v in value]
        row = array.array("f")
        try:
            row.extend(num)
        except OverflowError:
            bad = next(c for c in self.layout.columns if c.group == "num" and _overflows(c, values))
            _bad(node, bad, values[bad.index], "", "a number in float range")
        if not allow_non_finite and not all(map(math.isfinite, row)):
            at = next(i for i, v in enumerate(row) if not math.isfinite(v))
            col = next(
                c
                for c in self.layout.columns
                if c.group == "num" and c.offset <= at < c.offset + c.width
            )
            got = (
                f"{describe_value(values[col.index])} ({row[at]!r} as float32); set "
                "options.allow_non_finite to accept NaN/inf"
            )
            _bad(node, col, values[col.index], "", "a finite number", got)
        self.num.extend(row)
        self.time.extend(time)
        self.cat.extend(cat)
        self.bag.extend(bag)

    @staticmethod
    def _numbers(node: str, col: RawColumn, value: Any) -> list[float]:
        prop = col.spec
        if prop.kind == "boolean":
            if not isinstance(value, bool):
                _bad(node, col, value)
            return [1.0 if value else 0.0]
        allow_bool = prop.kind == "required"  # (bool packs as 1/0 there, as in properties)
        if not col.vector:
            if not _is_number(value, allow_bool):
                _bad(node, col, value)
            return [value]
        if not isinstance(value, (list, tuple)):
            _bad(node, col, value)
        if len(value) != col.width:
            _bad(node, col, value, got=f"a list of {len(value)}")
        for j, v in enumerate(value):
            if not _is_number(v, allow_bool):
                _bad(node, col, v, f"[{j}]", "a number")
        return list(value)


def _raw_name(group: str, hop: int, label: str) -> str:
    return layout.typed_raw_name(group, hop, label)


def _overflows(col: RawColumn, values: Sequence[Any]) -> bool:
    value = values[col.index]
    items = value if isinstance(value, (list, tuple)) else [value]
    try:
        array.array("f", [v for v in items if isinstance(v, (int, float))])
    except OverflowError:
        return True
    return False


def _bad(
    node: str,
    col: RawColumn,
    value: Any,
    element: str = "",
    expected: str | None = None,
    got: str | None = None,
) -> NoReturn:
    """Raises the one message of a bad raw value: the node (with its label), the property (and
    ``element``, e.g. ``[2]``), its kind, what it ``expected`` (by default what the kind takes)
    and what it ``got`` (by default the value with its type)."""
    raise PropertyValueError(
        f"{node} property {col.spec.name!r}{element} (kind {col.spec.kind!r}): expected "
        f"{expected or _expected(col)}, got {got or describe_value(value)}"
    )


def build_raw_table(
    access: Any, keys: Sequence[int], raw_layout: RawLayout, allow_non_finite: bool
) -> RawTable:
    """The raw rows of the distinct ``keys`` (``access``: a
    :class:`~memgraph_tf.procedures.slot_blobs.LabelView`, which names each node with its label).

    Guarantees: every value is checked against its kind (see the module docstring); the rows do
    not depend on the order or the chunks the access reads them in."""
    table = RawTable(raw_layout)
    names = [p.name for p in raw_layout.spec.properties]
    distinct = list(dict.fromkeys(keys))
    for start in range(0, len(distinct), _CHUNK):
        access.check_abort()
        part = distinct[start : start + _CHUNK]
        for key, values in zip(part, access.properties(part, names)):
            table.row_of[key] = len(table.row_of)
            table.add(access.node_name(key), values, allow_non_finite)
    return table


def _gathered(table: RawTable, flat: Sequence[Any], shape: list[int]) -> dict[str, Any]:
    """Per raw group with columns, the rows of the nodes ``flat`` (internal ids,
    :data:`~memgraph_tf.layout.PAD_ID` where padded: zero, ``""``, empty bags, ``has`` false) as
    a section value of leading shape ``shape`` (``bag``: a ragged pair, one row per cell)."""
    w = table.layout.widths
    rows = [None if k == PAD_ID else table.row_of[k] for k in flat]
    out: dict[str, Any] = {}
    for kind, width, column, dtype in (
        ("num", w.num, table.num, "float32"),
        ("time", w.time, table.time, "int64"),
    ):
        if width:
            gathered = array.array(column.typecode)
            zero = array.array(column.typecode, bytes(column.itemsize * width))
            for r in rows:
                gathered.extend(zero if r is None else column[r * width : (r + 1) * width])
            out[kind] = blob.Dense(le(gathered), shape + [width], dtype)
    if w.cat:
        cat: list[str] = []
        for r in rows:
            cat.extend([""] * w.cat if r is None else table.cat[r * w.cat : (r + 1) * w.cat])
        out["cat"] = blob.Dense(cat, shape + [w.cat], "string")
    if w.bag:
        values: list[str] = []
        splits = array.array("q", [0])
        for r in rows:
            for j in range(w.bag):
                if r is not None:
                    values.extend(table.bag[r * w.bag + j])
                splits.append(len(values))
        out["bag"] = blob.Ragged(blob.Dense(values, [len(values)], "string"), splits)
    has = bytearray()
    for r in rows:
        has.extend(bytes(w.has) if r is None else table.has[r * w.has : (r + 1) * w.has])
    out["has"] = blob.Dense(bytes(has), shape + [w.has], "bool")
    return out


def raw_sections(
    table: RawTable,
    flat: Sequence[Any],
    hop: int,
    batch: int,
    slots: int,
    name_of: Callable[[str], str] | None = None,
) -> dict[str, Any]:
    """The raw sections of slot table ``(hop, table.layout.label)`` whose slots hold ``flat``
    (keys of ``table.row_of``: internal ids for a label's table; :data:`~memgraph_tf.layout.PAD_ID`
    where padded), as :func:`memgraph_tf.layout.typed_sample_sections` lays them out in the dense
    layout: a padded slot is zero, ``""``, empty bags and ``has`` false. ``name_of(group)`` names
    the sections (default :func:`memgraph_tf.layout.typed_raw_name` of the table; the edge
    columns' :func:`memgraph_tf.layout.typed_edge_name`)."""
    label = table.layout.label
    if name_of is None:
        name_of = functools.partial(_raw_name, hop=hop, label=label)
    return {
        name_of(group): value for group, value in _gathered(table, flat, [batch, slots]).items()
    }


def raw_table_sections(table: RawTable, order: Sequence[int]) -> dict[str, Any]:
    """The compact/sparse raw tables of ``table.layout.label`` whose rows are the nodes
    ``order`` (internal ids, the label's table rows), as
    :func:`memgraph_tf.layout.typed_sample_sections` lays them out: ``table_{group}_{label}``,
    each a ragged pair of one row (``bag``: one row per (table row, column))."""
    label = table.layout.label
    one_row = array.array("q", [0, len(order)])
    out: dict[str, Any] = {}
    for group, value in _gathered(table, order, [len(order)]).items():
        name = layout.typed_raw_table_name(group, label)
        out[name] = value if group == "bag" else blob.Ragged(value, one_row)
    return out
