"""Parsing and validation of the ``options`` map of the ``tf_features`` procedures (stdlib only)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from memgraph_tf import layout
from memgraph_tf.procedures.errors import OptionError, describe_value, quoted

FEATURE_DTYPES = layout.FEATURE_DTYPES
DIRECTIONS = ("out", "in", "both")
LOW_DEGREE = ("pad", "resample")
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


def _name(name: str, value: Any) -> str:
    _expect(name, value, isinstance(value, str) and value != "", "a non-empty string")
    return value


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
