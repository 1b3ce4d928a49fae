"""Feature specs: per label, how each node property becomes model input (standard library only).

A :class:`LabelSpec` names a label and, per property, a :class:`PropertySpec` -- its *kind* and
the parameters of its encoding:

========================  =========================================================================
kind                      parameters
========================  =========================================================================
``required``              none: a number or a fixed-length list of numbers on every node, packed
                          as it is (``tf_features.pack`` as it stands)
``numeric``               ``default`` (for a missing value), ``standardize`` with ``mean`` and
                          ``std``, ``length`` (None: a scalar; n: a list of n numbers),
                          ``structural`` (None, or the ``tf_features.structural_write`` options
                          that wrote the property, so a refresh recomputes it alike)
``categorical``           ``vocabulary`` (strings, integers or booleans, most frequent first) and
                          ``oov_buckets`` for values outside it; or ``hash_buckets`` (no vocabulary)
``multi_categorical``     as ``categorical``, for lists of values (a bag)
``temporal``              ``type`` (``Date``, ``LocalDateTime``, ``Duration`` or ``timestamp``:
                          an integer with ``unit`` ``s``/``ms``/``us``), ``standardize`` with
                          ``mean`` and ``std`` and ``default`` in the type's unit (days since
                          1970-01-01 for Date, microseconds for LocalDateTime and Duration)
``boolean``               ``default``
========================  =========================================================================

Every kind but ``required`` takes ``missing_indicator``: add a 0/1 column saying the value was
absent or null. :meth:`LabelSpec.to_json` writes a file a user can read and edit;
:meth:`LabelSpec.from_json` reads it back, validated: an error names the label, the property, the
kind and the bad value (:class:`FeatureSpecError`).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from memgraph_tf.errors import MemgraphTfError

__all__ = [
    "FORMAT",
    "KINDS",
    "TEMPORAL_TYPES",
    "TIMESTAMP_UNITS",
    "BooleanSpec",
    "CategoricalSpec",
    "FeatureSpecError",
    "LabelSpec",
    "MultiCategoricalSpec",
    "NumericSpec",
    "PropertySpec",
    "RequiredSpec",
    "TemporalSpec",
    "category_text",
    "is_category",
]

FORMAT = "memgraph-tf feature spec"
VERSION = 1
TEMPORAL_TYPES = ("Date", "LocalDateTime", "Duration", "timestamp")
TIMESTAMP_UNITS = ("s", "ms", "us")


class FeatureSpecError(MemgraphTfError, ValueError):
    """A feature spec that is malformed or holds a bad value (the message names the label, the
    property, the kind and the value)."""


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def is_category(v: Any) -> bool:
    """Whether ``v`` can be a category: a string, an integer or a boolean (what a vocabulary holds
    and what ``categorical`` / ``multi_categorical`` properties may store)."""
    return isinstance(v, (str, int))  # bool is an int


def category_text(value: Any) -> str:
    """The text a category travels as in a blob and is looked up by in a vocabulary: a string is
    itself, a boolean ``"true"`` / ``"false"``, an integer its decimal digits (``"-3"``).

    Guarantees: one text per value, equal for equal values of one type; ``True`` and ``1`` differ
    (``"true"``, ``"1"``); anything else (a float, a list, null...) raises :class:`TypeError`
    naming its type."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    raise TypeError(
        f"category: expected a string, an integer or a boolean, got {type(value).__name__} "
        f"{value!r}"[:200]
    )


def _count(minimum: int) -> tuple[Any, str]:
    return (
        lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= minimum,
        f"an integer >= {minimum}",
    )


_CHECKS: dict[str, tuple[Any, str]] = {
    "missing_indicator": (lambda v: isinstance(v, bool), "true or false"),
    "standardize": (lambda v: isinstance(v, bool), "true or false"),
    "default": (_is_number, "a number"),
    "mean": (_is_number, "a number"),
    "std": (lambda v: _is_number(v) and v > 0, "a number > 0"),
    "length": (lambda v: v is None or _count(1)[0](v), "null or an integer >= 1"),
    "vocabulary": (
        lambda v: isinstance(v, list) and all(is_category(x) for x in v),
        "a list of strings, integers or booleans",
    ),
    "oov_buckets": _count(0),
    "hash_buckets": (lambda v: v is None or _count(1)[0](v), "null or an integer >= 1"),
    "type": (lambda v: v in TEMPORAL_TYPES, f"one of {', '.join(map(repr, TEMPORAL_TYPES))}"),
    "unit": (lambda v: v is None or v in TIMESTAMP_UNITS, "null or 's', 'ms' or 'us'"),
    "structural": (
        lambda v: v is None or (isinstance(v, Mapping) and all(isinstance(k, str) for k in v)),
        "null or a map of tf_features.structural_write options",
    ),
}
"""Per parameter: (check, what it expects)."""


@dataclasses.dataclass
class PropertySpec:
    """One property's encoding (a subclass per kind; :data:`KINDS`)."""

    name: str
    kind: ClassVar[str] = ""
    checks: ClassVar[dict[str, tuple[Any, str]]] = {}
    """Per parameter whose check differs from the shared one: (check, what it expects)."""

    def where(self, label: str) -> str:
        """``label 'P' property 'age'``: the start of an error message about this property."""
        return f"label {label!r} property {self.name!r}"

    def validate(self, label: str) -> None:
        """Raises :class:`FeatureSpecError` naming ``label``, the property, the kind and the first
        bad parameter value; returns when every parameter is valid."""
        if not isinstance(self.name, str) or not self.name:
            raise FeatureSpecError(
                f"label {label!r}: expected a non-empty property name, got {self.name!r}"
            )
        for field in dataclasses.fields(self):
            if field.name == "name":
                continue
            value = getattr(self, field.name)
            check, expected = self.checks.get(field.name) or _CHECKS[field.name]
            if not check(value):
                raise FeatureSpecError(
                    f"{self.where(label)}: kind {self.kind!r} takes a {field.name!r} that is "
                    f"{expected}, got {value!r}"
                )
        self._check_more(label)

    def _check_more(self, label: str) -> None:
        """Checks across parameters (per kind)."""

    def to_dict(self) -> dict[str, Any]:
        """``{"name", "kind", parameters...}``: plain JSON values."""
        out: dict[str, Any] = {"name": self.name, "kind": self.kind}
        out.update((f.name, getattr(self, f.name)) for f in dataclasses.fields(self)[1:])
        return out


@dataclasses.dataclass
class RequiredSpec(PropertySpec):
    """A number or fixed-length list of numbers present on every node, packed unchanged."""

    kind: ClassVar[str] = "required"


@dataclasses.dataclass
class NumericSpec(PropertySpec):
    """A number (``length`` None) or a list of ``length`` numbers; ``default`` for a missing one;
    with ``standardize``: ``(x - mean) / std``.

    ``structural``: for a property that ``tf_features.structural_write`` computes (a FastRP
    embedding), the options of that call -- ``seed``, ``dimension``, ``iteration_weights``,
    ``normalization_strength``... and ``write_property`` (this property) -- so that
    ``memgraph-tf refresh`` recomputes changed nodes' values with them; None: not recorded. It
    changes nothing in the encoding, and :meth:`to_dict` leaves it out when None."""

    kind: ClassVar[str] = "numeric"
    default: float = 0.0
    standardize: bool = True
    mean: float = 0.0
    std: float = 1.0
    length: int | None = None
    missing_indicator: bool = False
    structural: dict[str, Any] | None = None

    def _check_more(self, label: str) -> None:
        written = (self.structural or {}).get("write_property", self.name)
        if written != self.name:
            raise FeatureSpecError(
                f"{self.where(label)}: kind 'numeric' takes 'structural' options whose "
                f"'write_property' is the property itself, got {written!r}"
            )
        if "changed_nodes" in (self.structural or {}):
            raise FeatureSpecError(
                f"{self.where(label)}: kind 'numeric' takes 'structural' options of a call over "
                "the whole label, got one with 'changed_nodes'"
            )

    def to_dict(self) -> dict[str, Any]:
        """As :meth:`PropertySpec.to_dict`; ``structural`` only when recorded (a spec without it
        reads as it always has)."""
        out = super().to_dict()
        if self.structural is None:
            del out["structural"]
        else:
            out["structural"] = {
                k: list(v) if isinstance(v, (list, tuple)) else v
                for k, v in self.structural.items()
            }
        return out


@dataclasses.dataclass
class _Vocabulary(PropertySpec):
    vocabulary: list[Any] = dataclasses.field(default_factory=list)
    oov_buckets: int = 1
    hash_buckets: int | None = None
    missing_indicator: bool = False

    def _check_more(self, label: str) -> None:
        if self.hash_buckets is not None and self.vocabulary:
            raise FeatureSpecError(
                f"{self.where(label)}: kind {self.kind!r} takes a 'vocabulary' or "
                f"'hash_buckets', not both, got {len(self.vocabulary)} values and "
                f"{self.hash_buckets} buckets"
            )
        if self.hash_buckets is None and not self.vocabulary and not self.oov_buckets:
            raise FeatureSpecError(
                f"{self.where(label)}: kind {self.kind!r} takes a non-empty 'vocabulary', "
                "'oov_buckets' >= 1 or 'hash_buckets', got none"
            )
        seen: set[tuple[type, Any]] = set()
        for value in self.vocabulary:
            if (type(value), value) in seen:
                raise FeatureSpecError(
                    f"{self.where(label)}: kind {self.kind!r} takes a 'vocabulary' of distinct "
                    f"values, got {value!r} twice"
                )
            seen.add((type(value), value))


@dataclasses.dataclass
class CategoricalSpec(_Vocabulary):
    """One string, integer or boolean: its index in ``vocabulary``, one of ``oov_buckets``
    after it for other values; or, with ``hash_buckets``, a hash bucket."""

    kind: ClassVar[str] = "categorical"


@dataclasses.dataclass
class MultiCategoricalSpec(_Vocabulary):
    """A list of strings, integers or booleans: a bag (multi-hot) over the vocabulary (or hash
    buckets)."""

    kind: ClassVar[str] = "multi_categorical"


@dataclasses.dataclass
class TemporalSpec(PropertySpec):
    """A ``Date``, ``LocalDateTime``, ``Duration`` or integer ``timestamp`` (in ``unit``) as a
    number in its unit, ``default`` for a missing one, standardised with ``mean`` and ``std``."""

    kind: ClassVar[str] = "temporal"
    type: str = "Date"
    unit: str | None = None
    default: float = 0.0
    standardize: bool = True
    mean: float = 0.0
    std: float = 1.0
    missing_indicator: bool = False

    def _check_more(self, label: str) -> None:
        if (self.type == "timestamp") != (self.unit is not None):
            raise FeatureSpecError(
                f"{self.where(label)}: kind 'temporal' takes a 'unit' ('s', 'ms' or 'us') with "
                f"type 'timestamp' only, got type {self.type!r} and unit {self.unit!r}"
            )


@dataclasses.dataclass
class BooleanSpec(PropertySpec):
    """A boolean as 0/1, ``default`` for a missing one."""

    kind: ClassVar[str] = "boolean"
    checks: ClassVar[dict[str, tuple[Any, str]]] = {
        "default": (lambda v: isinstance(v, bool), "true or false")
    }
    default: bool = False
    missing_indicator: bool = False


_KIND_CLASSES: dict[str, type[PropertySpec]] = {
    c.kind: c
    for c in (
        RequiredSpec,
        NumericSpec,
        CategoricalSpec,
        MultiCategoricalSpec,
        TemporalSpec,
        BooleanSpec,
    )
}
KINDS = tuple(_KIND_CLASSES)
"""The kinds, in the order docs list them."""


def _property_from_dict(label: str, i: int, raw: Any) -> PropertySpec:
    if not isinstance(raw, Mapping):
        raise FeatureSpecError(f"label {label!r} properties[{i}]: expected a map, got {raw!r}")
    name = raw.get("name")
    where = f"label {label!r} property {name!r}"
    if not isinstance(name, str) or not name:
        raise FeatureSpecError(
            f"label {label!r} properties[{i}]: expected a non-empty 'name', got {name!r}"
        )
    kind = raw.get("kind")
    cls = _KIND_CLASSES.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise FeatureSpecError(
            f"{where}: expected a 'kind' among {', '.join(map(repr, KINDS))}, got {kind!r}"
        )
    fields = [f.name for f in dataclasses.fields(cls)]
    unknown = sorted(set(raw) - {"kind", *fields})
    if unknown:
        raise FeatureSpecError(
            f"{where}: kind {kind!r} has no parameter {unknown[0]!r} (it takes "
            f"{', '.join(map(repr, fields[1:])) or 'none'})"
        )
    spec = cls(**{k: v for k, v in raw.items() if k != "kind"})
    spec.validate(label)
    return spec


@dataclasses.dataclass
class LabelSpec:
    """The feature spec of one label: its properties' encodings, in column order."""

    label: str
    properties: list[PropertySpec] = dataclasses.field(default_factory=list)

    def validate(self) -> None:
        """Raises :class:`FeatureSpecError` at the first bad label, property or parameter."""
        if not isinstance(self.label, str) or not self.label:
            raise FeatureSpecError(f"expected a non-empty label name, got {self.label!r}")
        seen: set[str] = set()
        for spec in self.properties:
            if not isinstance(spec, PropertySpec) or type(spec) not in _KIND_CLASSES.values():
                raise FeatureSpecError(
                    f"label {self.label!r}: expected a property spec of a kind among "
                    f"{', '.join(map(repr, KINDS))}, got {spec!r}"
                )
            spec.validate(self.label)
            if spec.name in seen:
                raise FeatureSpecError(
                    f"label {self.label!r} property {spec.name!r}: expected each property once, "
                    "got it twice"
                )
            seen.add(spec.name)

    def property(self, name: str) -> PropertySpec:
        """The spec of property ``name`` (KeyError naming the label and the properties if none)."""
        for spec in self.properties:
            if spec.name == name:
                return spec
        known = ", ".join(repr(s.name) for s in self.properties) or "none"
        raise KeyError(f"label {self.label!r} has no property {name!r} (it has {known})")

    def to_dict(self) -> dict[str, Any]:
        """The spec as plain JSON values, validated first."""
        self.validate()
        return {
            "format": FORMAT,
            "version": VERSION,
            "label": self.label,
            "properties": [s.to_dict() for s in self.properties],
        }

    def to_json(self, *, indent: int | None = 2) -> str:
        """The spec as JSON text (validated): :meth:`from_json` reads it back equal."""
        return json.dumps(self.to_dict(), indent=indent, allow_nan=False) + "\n"

    @classmethod
    def from_dict(cls, raw: Any) -> LabelSpec:
        """A validated spec from :meth:`to_dict`'s form; a bad one raises
        :class:`FeatureSpecError`."""
        if not isinstance(raw, Mapping):
            raise FeatureSpecError(f"expected a feature spec map, got {type(raw).__name__}")
        if raw.get("format", FORMAT) != FORMAT or raw.get("version", VERSION) != VERSION:
            raise FeatureSpecError(
                f"expected format {FORMAT!r} version {VERSION}, got {raw.get('format')!r} "
                f"version {raw.get('version')!r}"
            )
        label = raw.get("label")
        if not isinstance(label, str) or not label:
            raise FeatureSpecError(f"expected a non-empty 'label', got {label!r}")
        props = raw.get("properties")
        if not isinstance(props, Sequence) or isinstance(props, str):
            raise FeatureSpecError(f"label {label!r}: expected a 'properties' list, got {props!r}")
        spec = cls(label, [_property_from_dict(label, i, p) for i, p in enumerate(props)])
        spec.validate()
        return spec

    @classmethod
    def from_json(cls, text: str) -> LabelSpec:
        """A validated spec from :meth:`to_json`'s text."""
        try:
            raw = json.loads(text)
        except json.JSONDecodeError as exc:
            raise FeatureSpecError(f"expected feature spec JSON, got invalid JSON: {exc}") from None
        return cls.from_dict(raw)

    def save(self, path: str | os.PathLike[str]) -> None:
        """Writes :meth:`to_json` to ``path``."""
        with open(path, "w", encoding="utf-8") as f:
            f.write(self.to_json())

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> LabelSpec:
        """The validated spec in the file ``path`` (:meth:`from_json`)."""
        with open(path, encoding="utf-8") as f:
            return cls.from_json(f.read())
