"""Parsing and validation of the ``options`` map of the ``tf_features`` procedures (stdlib only)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from memgraph_tf import layout
from memgraph_tf.procedures.errors import OptionError, describe_value, quoted
from memgraph_tf.typed_sampling import TypedSamplingSpec

FEATURE_DTYPES = layout.FEATURE_DTYPES
DIRECTIONS = ("out", "in", "both")
LOW_DEGREE = ("pad", "resample")
TIME_ORDERS = ("uniform", "most_recent")
"""``options.time_order`` of ``sample_typed``: how a timed step draws among the relationships not
after the seed's time (:mod:`memgraph_tf.procedures.timed`)."""
LAYOUTS = layout.LAYOUTS
MAX_HOPS = 6
"""``features_K`` has rank K + 2 and the blob format allows rank <= 8."""
DEFAULT_MAX_BLOB_BYTES = 256 * 2**20
"""``options.max_blob_bytes`` by default: 268,435,456 bytes (256 MiB); see
:mod:`memgraph_tf.procedures.limits` and docs/query-modules.md for why."""
MAX_BLOB_BYTES = 2**31 - 1
"""The largest blob the format allows (docs/blob-format.md, ``total_length``): the largest
``options.max_blob_bytes``."""

ALLOWED_OPTIONS = layout.OPTION_NAMES
"""The option names per procedure (defined in :mod:`memgraph_tf.layout`)."""


@dataclasses.dataclass(frozen=True)
class Options:
    """Validated options; the defaults are the documented ones (docs/query-modules.md)."""

    dtype: str = "float32"
    id_property: str | None = None
    label: str | None = None
    label_property: str | None = None
    allow_non_finite: bool = False
    edge_types: tuple[str, ...] | None = None
    direction: str = "both"
    replace: bool = False
    low_degree: str = "pad"
    seed: int | None = None
    fanouts: tuple[int, ...] | None = None
    layout: str = "dense"
    max_blob_bytes: int = DEFAULT_MAX_BLOB_BYTES
    seed_time: str | None = None
    time_order: str = "uniform"
    at: int | None = None
    reservoir_threshold: int | None = None
    edge_feature_spec: Any = None

    @property
    def pad(self) -> bool:
        """True when low-degree nodes are padded (and ``mask_h`` sections are written)."""
        return self.low_degree == "pad"


def _expect(name: str, value: Any, ok: bool, what: str) -> None:
    if not ok:
        raise OptionError(f"options.{name}: expected {what}, got {describe_value(value)}")


def _choice(name: str, value: Any, allowed: Sequence[str]) -> str:
    if not isinstance(value, str) or value not in allowed:
        raise OptionError(
            f"options.{name}: expected one of {quoted(allowed)}, got {describe_value(value)}"
        )
    return value


def parse_time_order(raw: dict[str, Any]) -> str:
    """Pops ``time_order`` from the options ``raw``: one of :data:`TIME_ORDERS` (default
    ``uniform``); an :class:`OptionError` naming the option and the value otherwise."""
    value = raw.pop("time_order", None)
    return "uniform" if value is None else _choice("time_order", value, TIME_ORDERS)


def _name(name: str, value: Any) -> str:
    _expect(name, value, isinstance(value, str) and value != "", "a non-empty string")
    return value


def options_map(options: Any, procedure: str, allowed: Sequence[str]) -> dict[str, Any]:
    """The ``options`` argument of ``tf_features.<procedure>`` as a new dict (None: empty); an
    OptionError for anything but a map, or naming the first key in sorted order that is not in
    ``allowed``, before any value is looked at."""
    if options is not None and not isinstance(options, Mapping):
        raise OptionError(f"options: expected a map, got {describe_value(options)}")
    raw = dict(options or {})
    for key in sorted(raw):
        if key not in allowed:
            raise OptionError(
                f"options: unknown option {key!r} for tf_features.{procedure} (allowed: "
                f"{quoted(allowed)})"
            )
    return raw


def parse_options(procedure: str, options: Mapping[str, Any] | None) -> Options:
    """Validates ``options`` for ``procedure`` (``pack``, ``sample``, ``sample_per_node``,
    ``describe``).

    Guarantees: the result holds only valid values; a ``None`` option value means the default; an
    unknown key or bad value raises :class:`OptionError` naming the option, the value and the
    allowed ones.
    """
    allowed = ALLOWED_OPTIONS[procedure]
    if options is None:
        return Options()
    if not isinstance(options, Mapping):
        raise OptionError(f"options: expected a map, got {describe_value(options)}")
    values: dict[str, Any] = {}
    for key in sorted(options):
        value = options[key]
        if key not in allowed:
            raise OptionError(
                f"options: unknown option {key!r} for tf_features.{procedure} (allowed: "
                f"{quoted(allowed)})"
            )
        if value is None:
            continue
        if key == "dtype":
            values[key] = _choice(key, value, FEATURE_DTYPES)
        elif key in ("id_property", "label", "label_property"):
            values[key] = _name(key, value)
        elif key in ("allow_non_finite", "replace"):
            _expect(key, value, isinstance(value, bool), "true or false")
            values[key] = value
        elif key == "direction":
            values[key] = _choice(key, value, DIRECTIONS)
        elif key == "low_degree":
            values[key] = _choice(key, value, LOW_DEGREE)
        elif key == "layout":
            values[key] = _choice(key, value, LAYOUTS)
        elif key == "edge_types":
            ok = isinstance(value, (list, tuple)) and all(isinstance(t, str) and t for t in value)
            _expect(key, value, ok, "a list of edge type names (strings)")
            values[key] = tuple(sorted(set(value)))
        elif key == "seed":
            ok = isinstance(value, int) and not isinstance(value, bool)
            _expect(key, value, ok, "an integer or null")
            values[key] = value
        elif key == "reservoir_threshold":
            ok = isinstance(value, int) and not isinstance(value, bool) and value >= 0
            _expect(
                key,
                value,
                ok,
                "an integer >= 0 (the degree above which a node's reservoir is drawn from) or null",
            )
            values[key] = value
        elif key == "fanouts":
            values[key] = parse_fanouts(value, "options.fanouts")
        elif key == "max_blob_bytes":
            ok = (
                isinstance(value, int)
                and not isinstance(value, bool)
                and 1 <= value <= MAX_BLOB_BYTES
            )
            _expect(
                key,
                value,
                ok,
                f"a number of bytes from 1 to {MAX_BLOB_BYTES} (the blob format's limit) or null",
            )
            values[key] = value
    if "label" in values and "id_property" not in values and procedure != "describe":
        raise OptionError(
            "options.label: expected together with options.id_property (it selects the nodes "
            f"whose id property is looked up), got label {values['label']!r} alone"
        )
    return Options(**values)


def parse_fanouts(fanouts: Any, param: str = "fanouts") -> tuple[int, ...]:
    """Validates a fanout list: 1..MAX_HOPS integers, each >= 1."""
    if not isinstance(fanouts, (list, tuple)) or not 1 <= len(fanouts) <= MAX_HOPS:
        raise OptionError(
            f"{param}: expected a list of 1 to {MAX_HOPS} positive integers (one per hop), "
            f"got {describe_value(fanouts)}"
        )
    for i, f in enumerate(fanouts):
        if not isinstance(f, int) or isinstance(f, bool) or f < 1:
            raise OptionError(f"{param}[{i}]: expected an integer >= 1, got {describe_value(f)}")
    return tuple(fanouts)


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


@dataclasses.dataclass(frozen=True)
class SplitFilter:
    """Held-out relationships (the GAE protocol): those whose ``property`` holds one of
    ``values``. A sampler given one never walks such a relationship, at any hop; a relationship
    without the property is kept."""

    property: str
    values: frozenset[str]


def parse_split_filter(raw: dict[str, Any]) -> SplitFilter | None:
    """Pops ``exclude_splits`` (a list of split names, e.g. ``["val", "test"]``; null or empty:
    none held out) and ``split_property`` (default :data:`memgraph_tf.layout.SPLIT_PROPERTY`) from
    the options map ``raw``; an OptionError names a bad one."""
    values = raw.pop("exclude_splits", None)
    name = raw.pop("split_property", None)
    if name is None:
        name = layout.SPLIT_PROPERTY
    elif not isinstance(name, str) or not name:
        raise OptionError(
            f"options.split_property: expected a property name (a non-empty string), got "
            f"{describe_value(name)}"
        )
    if values is None:
        return None
    if not isinstance(values, (list, tuple)) or not all(isinstance(v, str) and v for v in values):
        raise OptionError(
            "options.exclude_splits: expected a list of split names (non-empty strings, e.g. "
            f"['val', 'test']), got {describe_value(values)}"
        )
    return SplitFilter(name, frozenset(values)) if values else None


def parse_typed_call(options: Any) -> tuple[Options, SplitFilter | None, Any]:
    """The options of ``sample_typed`` (with ``seed_time``: the seeds' time property, ``at``: one
    integer time for every seed instead, and ``time_order``, one of :data:`TIME_ORDERS`, for
    steps with a time), its held-out
    relationships (:func:`parse_split_filter`) and the value of ``options.feature_spec`` as given
    (parsed by :func:`memgraph_tf.procedures.raw.parse_feature_specs`);
    ``options.edge_feature_spec`` is kept as given in the options (parsed by
    :func:`memgraph_tf.procedures.edge_columns.parse_edge_feature_specs`)."""
    if options is not None and not isinstance(options, Mapping):
        raise OptionError(f"options: expected a map, got {describe_value(options)}")
    raw = dict(options or {})
    label = raw.pop("label", None)
    if not isinstance(label, str) or not label:
        raise OptionError(
            "options.label: expected the seed label (a non-empty string: the label of the seeds, "
            f"the left label of the first hop's steps), got {describe_value(label)}"
        )
    split = parse_split_filter(raw)
    feature_spec = raw.pop("feature_spec", None)
    edge_feature_spec = raw.pop("edge_feature_spec", None)
    seed_time = raw.pop("seed_time", None)
    if seed_time is not None:
        seed_time = _name("seed_time", seed_time)
    time_order = parse_time_order(raw)
    at = raw.pop("at", None)
    if at is not None:
        _expect("at", at, isinstance(at, int) and not isinstance(at, bool), "an integer time")
    opts = parse_options("sample_typed", raw)
    opts = dataclasses.replace(
        opts,
        label=label,
        seed_time=seed_time,
        time_order=time_order,
        at=at,
        edge_feature_spec=edge_feature_spec,
    )
    return opts, split, feature_spec


def parse_spec(seed_label: str, num_neighbors: Any) -> TypedSamplingSpec:
    """The spec; its ValueError (naming the step, hop and value) as :class:`OptionError`."""
    try:
        return TypedSamplingSpec.from_num_neighbors(seed_label, num_neighbors)
    except ValueError as exc:
        raise OptionError(str(exc)) from None


def parse_properties(properties: Any, labels: Sequence[str] | None = None) -> dict[str, list[str]]:
    """``properties``: a map label -> list of feature property names (null: no features for any
    label; an empty list: none for that label). With ``labels``, every key must be one of them
    (the labels with slots). Returns the labels with at least one property."""
    if properties is None:
        return {}
    if not isinstance(properties, Mapping):
        raise OptionError(
            "properties: expected a map of label -> list of feature property names, got "
            f"{describe_value(properties)}"
        )
    out: dict[str, list[str]] = {}
    for label, names in properties.items():
        if not isinstance(label, str) or not label:
            raise OptionError(f"properties: expected label names as keys, got {label!r}")
        if labels is not None and label not in labels:
            raise OptionError(
                f"properties: label {label!r} has no slots in this sampling spec (labels with "
                f"slots: {', '.join(map(repr, labels))})"
            )
        checked = check_names(names, f"properties[{label!r}]")
        if checked:
            out[label] = checked
    return out
