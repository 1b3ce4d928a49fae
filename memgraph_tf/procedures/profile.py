"""``tf_features.profile``: what one label's node properties hold (standard library only).

One pass over the label's nodes (:class:`LabelProfiler`, fed a node's properties at a time) gives,
per property, the value types seen with counts, the coverage, numeric and temporal statistics,
list lengths and element types, the cardinality and the most frequent categories. The query
module feeds it from ``ctx.graph.vertices`` (:func:`run_profile`); the client-side fallback feeds
it rows of plain Cypher, so both give the same map for the same graph.

The figures do not depend on the order the nodes are met in while the distinct values stay within
``options.max_distinct``: sums are exact (integers, and floats as exact binary fractions), so the
mean and the (population) standard deviation are the correctly rounded values of the exact ones.
Beyond the cap a property's cardinality is a lower bound (``cardinality_exact`` false) and its
``top`` counts only the first ``max_distinct`` distinct values met.
"""

from __future__ import annotations

import dataclasses
import datetime
import math
from collections.abc import Iterable, Mapping, Sequence
from fractions import Fraction
from typing import Any

from memgraph_tf.procedures.errors import OptionError, describe_value, quoted

__all__ = [
    "ABORT_CHECK_EVERY",
    "DEFAULT_MAX_DISTINCT",
    "DEFAULT_TOP_K",
    "TEMPORAL_UNITS",
    "LabelProfiler",
    "ProfileOptions",
    "no_such_label",
    "parse_profile_call",
    "run_profile",
    "value_type",
]

DEFAULT_MAX_DISTINCT = 10_000
"""``options.max_distinct`` by default: distinct values counted exactly per property."""
DEFAULT_TOP_K = 100
"""``options.top_k`` by default: the most frequent values reported per property."""
ABORT_CHECK_EVERY = 256
"""Nodes between two ``ctx.check_must_abort()`` calls."""
OPTION_NAMES = ("max_distinct", "top_k")

TEMPORAL_UNITS = {
    "Date": "days since 1970-01-01",
    "LocalDateTime": "microseconds since 1970-01-01T00:00:00",
    "DateTime": "microseconds since 1970-01-01T00:00:00Z",
    "LocalTime": "microseconds since midnight",
    "Duration": "microseconds",
}
"""The temporal types and the unit their statistics are given in."""

_EPOCH_DAY = datetime.date(1970, 1, 1)
_EPOCH = datetime.datetime(1970, 1, 1)
_EPOCH_UTC = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
_MICROSECOND = datetime.timedelta(microseconds=1)
_SCALE = 1074
"""Floats are summed as integers scaled by 2**1074 (the smallest subnormal is 2**-1074): exact."""
_CATEGORICAL = ("string", "int", "bool")
_SCALAR_KINDS = {int: "int", float: "float", str: "string", bool: "bool"}


@dataclasses.dataclass(frozen=True)
class ProfileOptions:
    """Validated ``tf_features.profile`` options (docs/query-modules.md)."""

    max_distinct: int = DEFAULT_MAX_DISTINCT
    top_k: int = DEFAULT_TOP_K


def _count_option(name: str, value: Any, minimum: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise OptionError(
            f"options.{name}: expected an integer >= {minimum}, got {describe_value(value)}"
        )
    return value


def parse_profile_call(
    label: Any, properties: Any, options: Any
) -> tuple[str, list[str] | None, ProfileOptions]:
    """``tf_features.profile``'s arguments checked: the label, the property names (None: every
    property found on the label's nodes) and the options. A bad one raises :class:`OptionError`
    naming the parameter, the value and what is allowed."""
    if not isinstance(label, str) or not label:
        raise OptionError(f"label: expected a non-empty label name, got {describe_value(label)}")
    names: list[str] | None = None
    if properties is not None:
        if not isinstance(properties, (list, tuple)):
            raise OptionError(
                "properties: expected a list of property names or null (every property), got "
                f"{describe_value(properties)}"
            )
        names = []
        for i, name in enumerate(properties):
            if not isinstance(name, str) or not name:
                raise OptionError(
                    f"properties[{i}]: expected a non-empty property name, got "
                    f"{describe_value(name)}"
                )
            if name in names:
                raise OptionError(f"properties[{i}]: {name!r} is named twice")
            names.append(name)
    if options is None:
        return label, names, ProfileOptions()
    if not isinstance(options, Mapping):
        raise OptionError(f"options: expected a map, got {describe_value(options)}")
    values: dict[str, int] = {}
    for key in sorted(options):
        if key not in OPTION_NAMES:
            raise OptionError(
                f"options: unknown option {key!r} for tf_features.profile (allowed: "
                f"{quoted(OPTION_NAMES)})"
            )
        if options[key] is not None:
            values[key] = _count_option(key, options[key], 1 if key == "max_distinct" else 0)
    return label, names, ProfileOptions(**values)


def value_type(value: Any) -> str:
    """The type name a profile reports for a property value: ``null``, ``bool``, ``int``,
    ``float``, ``string``, ``Date``, ``LocalDateTime``, ``DateTime`` (with a UTC offset),
    ``LocalTime``, ``Duration``, ``map``, ``list of T`` (``T`` the elements' type; ``number`` for
    ints and floats; ``mixed`` for others), ``empty list``, else the Python type's name."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        kinds = {value_type(v) for v in value}
        if not kinds:
            return "empty list"
        if len(kinds) == 1:
            return f"list of {kinds.pop()}"
        return "list of number" if kinds == {"int", "float"} else "list of mixed"
    return _scalar_type(value)


def _scalar_type(value: Any) -> str:
    if isinstance(value, datetime.datetime):
        return "LocalDateTime" if value.tzinfo is None else "DateTime"
    if isinstance(value, datetime.date):
        return "Date"
    if isinstance(value, datetime.time):
        return "LocalTime"
    if isinstance(value, datetime.timedelta):
        return "Duration"
    if isinstance(value, dict):
        return "map"
    return type(value).__name__


def _temporal_number(kind: str, value: Any) -> int:
    """A temporal value as an integer in :data:`TEMPORAL_UNITS` ``[kind]``."""
    if kind == "Date":
        return (value - _EPOCH_DAY).days
    if kind == "LocalDateTime":
        return (value - _EPOCH) // _MICROSECOND
    if kind == "DateTime":
        return (value - _EPOCH_UTC) // _MICROSECOND
    if kind == "LocalTime":
        return (
            (value.hour * 60 + value.minute) * 60 + value.second
        ) * 1_000_000 + value.microsecond
    return value // _MICROSECOND  # Duration


class _Stats:
    """count, min, max, mean and population std of numbers, from exact sums (order-free)."""

    __slots__ = ("bad", "count", "float_squares", "floats", "high", "int_squares", "ints", "low")

    def __init__(self) -> None:
        self.count = 0
        self.low: Any = None
        self.high: Any = None
        self.ints = self.int_squares = self.floats = self.float_squares = 0
        self.bad = 0

    def add(self, value: int | float) -> None:
        if isinstance(value, float):
            if not math.isfinite(value):
                self.bad += 1
                return
            num, den = value.as_integer_ratio()
            shift = den.bit_length() - 1
            self.floats += num << (_SCALE - shift)
            self.float_squares += (num * num) << (2 * (_SCALE - shift))
        else:
            self.ints += value
            self.int_squares += value * value
        self.count += 1
        if self.low is None or value < self.low:
            self.low = value
        if self.high is None or value > self.high:
            self.high = value

    def as_map(self) -> dict[str, Any] | None:
        if not self.count and not self.bad:
            return None
        out: dict[str, Any] = {
            "count": self.count,
            "min": self.low,
            "max": self.high,
            "mean": None,
            "std": None,
            "non_finite": self.bad,
        }
        if self.count:
            n = self.count
            total = (self.ints << _SCALE) + self.floats
            squares = (self.int_squares << (2 * _SCALE)) + self.float_squares
            out["mean"] = float(Fraction(total, n << _SCALE))
            variance = Fraction(n * squares - total * total, (n * n) << (2 * _SCALE))
            out["std"] = math.sqrt(float(variance))
        return out


class _Categories:
    """Counts of distinct string / int / bool values, exact up to ``cap`` distinct ones."""

    __slots__ = ("cap", "counts", "exact")

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.counts: dict[tuple[str, Any], int] = {}
        self.exact = True

    def add(self, kind: str, value: Any) -> None:
        key = (kind, value)  # the kind keeps True apart from 1
        counts = self.counts
        if key in counts:
            counts[key] += 1
        elif len(counts) < self.cap:
            counts[key] = 1
        else:
            self.exact = False

    def fields(self, prefix: str, top_k: int) -> dict[str, Any]:
        if not self.counts:
            return {
                f"{prefix}cardinality": None,
                f"{prefix}cardinality_exact": None,
                f"{prefix}top": [],
            }
        ranked = sorted(self.counts.items(), key=lambda kv: (-kv[1], kv[0][0], kv[0][1]))
        return {
            f"{prefix}cardinality": len(self.counts),
            f"{prefix}cardinality_exact": self.exact,
            f"{prefix}top": [{"value": k[1], "count": c} for k, c in ranked[:top_k]],
        }


def _counted(counts: Mapping[str, int]) -> list[dict[str, Any]]:
    return [
        {"type": t, "count": c} for t, c in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    ]


class _PropertyProfile:
    """Everything one property's values add up to."""

    def __init__(self, name: str, opts: ProfileOptions) -> None:
        self.name = name
        self.types: dict[str, int] = {}
        self.numeric = _Stats()
        self.temporal: dict[str, _Stats] = {}
        self.categories = _Categories(opts.max_distinct)
        self.lengths = _Stats()
        self.element_types: dict[str, int] = {}
        self.element_numeric = _Stats()
        self.element_categories = _Categories(opts.max_distinct)

    def add(self, value: Any) -> None:
        cls = type(value)  # the common scalar types first: no value_type() call
        kind = _SCALAR_KINDS.get(cls) or value_type(value)
        types = self.types
        types[kind] = types.get(kind, 0) + 1
        if cls is int or cls is float:
            self.numeric.add(value)
            if cls is int:
                self.categories.add(kind, value)
        elif cls is str or cls is bool:
            self.categories.add(kind, value)
        elif kind in TEMPORAL_UNITS:
            stats = self.temporal.get(kind)
            if stats is None:
                stats = self.temporal[kind] = _Stats()
            stats.add(_temporal_number(kind, value))
        elif isinstance(value, (list, tuple)):
            self.lengths.add(len(value))
            for element in value:
                self._add_element(element)
        elif kind in ("int", "float", *_CATEGORICAL):  # subclasses of the scalar types
            self._add_scalar(kind, value)

    def _add_scalar(self, kind: str, value: Any) -> None:
        if kind in ("int", "float"):
            self.numeric.add(value)
        if kind in _CATEGORICAL:
            self.categories.add(kind, value)

    def _add_element(self, element: Any) -> None:
        kind = value_type(element)
        self.element_types[kind] = self.element_types.get(kind, 0) + 1
        if kind in ("int", "float"):
            self.element_numeric.add(element)
        if kind in _CATEGORICAL:
            self.element_categories.add(kind, element)

    def as_map(self, nodes: int, top_k: int) -> dict[str, Any]:
        count = sum(self.types.values())
        types = dict(self.types)
        if nodes > count:
            types["missing"] = nodes - count
        lengths = self.lengths.as_map()
        if lengths is not None:
            del lengths["non_finite"]
        return {
            "name": self.name,
            "count": count,
            "missing": nodes - count,
            "coverage": count / nodes if nodes else 0.0,
            "types": _counted(types),
            "numeric": self.numeric.as_map(),
            "temporal": [
                {"type": kind, "unit": TEMPORAL_UNITS[kind], **stats.as_map()}
                for kind, stats in sorted(self.temporal.items())
            ],
            **self.categories.fields("", top_k),
            "lengths": lengths,
            "element_types": _counted(self.element_types),
            "element_numeric": self.element_numeric.as_map(),
            **self.element_categories.fields("element_", top_k),
        }


class LabelProfiler:
    """One label's profile, a node at a time: :meth:`add_named` (the values of the names asked
    for, in order) or :meth:`add_all` (a node's whole property map), then :meth:`result`. A null
    value is a missing one (Memgraph stores no nulls: setting one removes the property)."""

    def __init__(self, label: str, names: Sequence[str] | None, opts: ProfileOptions) -> None:
        self.label = label
        self.opts = opts
        self.nodes = 0
        self._named = names is not None
        self._profiles: dict[str, _PropertyProfile] = {
            name: _PropertyProfile(name, opts) for name in names or ()
        }
        self._order = list(self._profiles.values())

    def add_named(self, values: Sequence[Any]) -> None:
        """One node: its values of the names given, in order (None: absent)."""
        self.nodes += 1
        for profile, value in zip(self._order, values):
            if value is not None:
                profile.add(value)

    def add_all(self, properties: Iterable[tuple[str, Any]]) -> None:
        """One node: its ``(name, value)`` pairs (names given at construction only, if any)."""
        self.nodes += 1
        profiles = self._profiles
        for name, value in properties:
            if value is None:
                continue
            profile = profiles.get(name)
            if profile is None:
                if self._named:
                    continue
                profile = profiles[name] = _PropertyProfile(name, self.opts)
            profile.add(value)

    def result(self) -> dict[str, Any]:
        """``{"label", "count", "properties"}``: per property (in the order asked for; every
        property found, sorted by name, when none were named) its profile map
        (docs/query-modules.md, ``tf_features.profile``). Plain Python values only."""
        profiles = (
            self._order if self._named else sorted(self._profiles.values(), key=lambda p: p.name)
        )
        return {
            "label": self.label,
            "count": self.nodes,
            "properties": [p.as_map(self.nodes, self.opts.top_k) for p in profiles],
        }


def no_such_label(label: str, labels: Iterable[str]) -> OptionError:
    """The error for a label no node has, listing the labels the graph has."""
    known = ", ".join(map(repr, sorted(set(labels)))) or "no labels"
    return OptionError(f"label: no node has label {label!r} (the graph has {known})")


def run_profile(ctx: Any, label: Any, properties: Any, options: Any) -> dict[str, Any]:
    """``tf_features.profile`` over an ``mgp.ProcCtx``: one scan of ``ctx.graph.vertices`` through
    the public ``mgp`` API, ``ctx.check_must_abort()`` every :data:`ABORT_CHECK_EVERY` nodes."""
    label, names, opts = parse_profile_call(label, properties, options)
    profiler = LabelProfiler(label, names, opts)
    seen: set[str] = set()
    for i, vertex in enumerate(ctx.graph.vertices):
        if i % ABORT_CHECK_EVERY == 0:
            ctx.check_must_abort()
        labels = [lb.name for lb in vertex.labels]
        if label not in labels:
            seen.update(labels)
            continue
        props = vertex.properties
        if names is None:
            profiler.add_all((p.name, p.value) for p in props.items())
        else:
            profiler.add_named([props.get(name) for name in names])
    if not profiler.nodes:
        raise no_such_label(label, seen)
    return profiler.result()
