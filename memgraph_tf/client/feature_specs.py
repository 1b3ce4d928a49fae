"""A label's feature spec inferred from the database's own profile of it (docs/client.md,
"Feature specs").

:func:`profile_label` runs ``tf_features.profile`` through any
:class:`~memgraph_tf.client.sources.GraphSource` (the procedure over Bolt or embedded, or its
client-side fallback on a server without it); :func:`infer_feature_spec` turns the profile into a
:class:`~memgraph_tf.feature_spec.LabelSpec` by these rules, per property:

* numbers (ints and floats) -> ``numeric``: ``mean``/``std`` from the profile (std 1 when all
  values are equal), ``default`` = the mean;
* a fixed-length list of numbers -> ``numeric`` with that ``length``, the elements' mean/std;
* strings, and booleans mixed with nothing else, -> ``categorical`` / ``boolean``: a
  vocabulary of every distinct value, most frequent first (ties by value), when there are at most
  ``max_vocabulary`` of them, plus ``oov_buckets``; more -> ``hash_buckets`` (the smallest power
  of two >= 2 x the distinct values counted, at most 2**20); a boolean's ``default`` is its most
  frequent value;
* lists of strings (empty lists among them) -> ``multi_categorical`` over their elements, the same
  vocabulary rule;
* ``Date``, ``LocalDateTime``, ``Duration`` -> ``temporal`` (mean/std in days or microseconds);
  an integer property named in ``timestamps`` (name -> unit ``s``/``ms``/``us``) -> ``temporal``
  of type ``timestamp``;
* ``missing_indicator`` whenever some node of the label lacks the property (coverage < 1).

A property whose values are of several of those kinds (say strings on some nodes, numbers on
others) raises :class:`~memgraph_tf.feature_spec.FeatureSpecError` naming it and the types seen,
unless ``mixed="majority"``: then the kind of most nodes wins and the other values count as
missing (their nodes get the default and, through the missing indicator, are marked). Values of a
type no kind encodes (maps, points, times of day, lists of mixed values) raise the same error
naming the type -- with ``mixed="majority"`` only when no encodable value is the majority; leave
such a property out with ``properties``. Numeric lists of varying length raise it too.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from memgraph_tf import feature_spec
from memgraph_tf.client.sources import procedure_table as table
from memgraph_tf.errors import ConfigurationError

logger = logging.getLogger(__name__)

__all__ = ["MAX_HASH_BUCKETS", "infer_feature_spec", "profile_label"]

MAX_HASH_BUCKETS = 2**20
"""The most hash buckets :func:`infer_feature_spec` gives a property."""

_GROUPS = {
    "int": "number",
    "float": "number",
    "string": "string",
    "bool": "bool",
    "list of int": "number list",
    "list of float": "number list",
    "list of number": "number list",
    "list of string": "string list",
    "empty list": "string list",
    "Date": "Date",
    "LocalDateTime": "LocalDateTime",
    "Duration": "Duration",
}
"""A profile's value type -> the kind of encoding it belongs to."""


def profile_label(
    source: Any,
    label: str,
    properties: Sequence[str] | None = None,
    options: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """``tf_features.profile`` of ``label`` through ``source`` (docs/query-modules.md): ``{"label",
    "count", "properties": [per property its profile]}``; the same map from the procedure and from
    the client-side fallback for the same graph. A bad argument raises
    :class:`~memgraph_tf.errors.GraphDataError` with the procedure's message."""
    return source.call_procedure(table.PROFILE, table.PROFILE.plain(label, properties, options))


def _hash_buckets(distinct: int) -> int:
    buckets = 1
    while buckets < 2 * distinct and buckets < MAX_HASH_BUCKETS:
        buckets *= 2
    return buckets


def _vocabulary_fields(
    cardinality: int, exact: bool, top: list[dict[str, Any]], max_vocabulary: int, oov: int
) -> dict[str, Any]:
    if exact and cardinality <= max_vocabulary:
        return {"vocabulary": [t["value"] for t in top], "oov_buckets": oov}
    return {"hash_buckets": _hash_buckets(cardinality), "oov_buckets": 0}


def _standardisation(stats: Mapping[str, Any]) -> dict[str, Any]:
    std = stats["std"] if stats["std"] else 1.0
    return {"default": stats["mean"], "mean": stats["mean"], "std": std}


def _group(label: str, prop: Mapping[str, Any], mixed: str) -> str:
    """The kind group of ``prop``'s values (see the module docstring for ``mixed``)."""
    where = f"label {label!r} property {prop['name']!r}"
    counts: dict[str, int] = {}
    unencodable: Mapping[str, Any] | None = None
    for entry in prop["types"]:
        if entry["type"] == "missing":
            continue
        group = _GROUPS.get(entry["type"])
        if group is None:
            unencodable = unencodable or entry
            continue
        counts[group] = counts.get(group, 0) + entry["count"]
    if unencodable and (mixed != "majority" or not counts):
        raise feature_spec.FeatureSpecError(
            f"{where}: no kind encodes values of type {unencodable['type']!r} "
            f"({unencodable['count']} nodes); leave the property out or convert it"
        )
    if not counts:
        raise feature_spec.FeatureSpecError(f"{where}: no node of the label has a value")
    if len(counts) > 1 and mixed != "majority":
        seen = ", ".join(f"{e['type']} ({e['count']})" for e in prop["types"])
        raise feature_spec.FeatureSpecError(
            f"{where}: expected values of one kind, got {seen}; pass mixed='majority' to keep "
            "the most common kind and count the others as missing"
        )
    return max(counts.items(), key=lambda kv: (kv[1], kv[0]))[0]


def _property_spec(
    label: str,
    prop: Mapping[str, Any],
    *,
    mixed: str,
    max_vocabulary: int,
    oov_buckets: int,
    timestamps: Mapping[str, str],
) -> feature_spec.PropertySpec:
    name = prop["name"]
    group = _group(label, prop, mixed)
    missing = prop["coverage"] < 1.0 or any(_GROUPS.get(t["type"]) != group for t in prop["types"])
    if name in timestamps:
        if (
            group != "number"
            or prop["numeric"]["non_finite"]
            or any(t["type"] == "float" for t in prop["types"])
        ):
            raise feature_spec.FeatureSpecError(
                f"label {label!r} property {name!r}: a timestamp must hold integers, got "
                + ", ".join(t["type"] for t in prop["types"])
            )
        return feature_spec.TemporalSpec(
            name,
            type="timestamp",
            unit=timestamps[name],
            **_standardisation(prop["numeric"]),
            missing_indicator=missing,
        )
    if group == "number":
        return feature_spec.NumericSpec(
            name, **_standardisation(prop["numeric"]), missing_indicator=missing
        )
    if group == "number list":
        lengths = prop["lengths"]
        if lengths["min"] != lengths["max"]:
            raise feature_spec.FeatureSpecError(
                f"label {label!r} property {name!r}: a numeric list must have one length, got "
                f"lengths {lengths['min']} to {lengths['max']}"
            )
        return feature_spec.NumericSpec(
            name,
            **_standardisation(prop["element_numeric"]),
            length=lengths["max"],
            missing_indicator=missing,
        )
    if group in ("Date", "LocalDateTime", "Duration"):
        (stats,) = [t for t in prop["temporal"] if t["type"] == group]
        return feature_spec.TemporalSpec(
            name, type=group, **_standardisation(stats), missing_indicator=missing
        )
    if group == "bool":
        flags = [t["value"] for t in prop["top"] if isinstance(t["value"], bool)]
        return feature_spec.BooleanSpec(
            name, default=bool(flags and flags[0]), missing_indicator=missing
        )
    if group == "string":
        fields = _vocabulary_fields(
            prop["cardinality"],
            prop["cardinality_exact"],
            [t for t in prop["top"] if isinstance(t["value"], str)],
            max_vocabulary,
            oov_buckets,
        )
        return feature_spec.CategoricalSpec(name, **fields, missing_indicator=missing)
    top = [t for t in prop["element_top"] if isinstance(t["value"], str)]
    fields = _vocabulary_fields(
        prop["element_cardinality"] or 0,
        prop["element_cardinality_exact"] is not False,
        top,
        max_vocabulary,
        oov_buckets,
    )
    return feature_spec.MultiCategoricalSpec(name, **fields, missing_indicator=missing)


def infer_feature_spec(
    source: Any,
    label: str,
    properties: Sequence[str] | None = None,
    *,
    max_vocabulary: int = 1000,
    oov_buckets: int = 1,
    mixed: str = "error",
    timestamps: Mapping[str, str] | None = None,
) -> feature_spec.LabelSpec:
    """The :class:`~memgraph_tf.feature_spec.LabelSpec` of ``label`` (``properties``: those, in
    order; None: every property its nodes have, by name) from one ``tf_features.profile`` scan
    through ``source``, by the rules of the module docstring. Guarantees: a validated spec; a
    property no rule fits raises :class:`~memgraph_tf.feature_spec.FeatureSpecError` naming the
    label, the property and the types seen; a bad argument raises
    :class:`~memgraph_tf.errors.ConfigurationError`."""
    if (
        not isinstance(max_vocabulary, int)
        or isinstance(max_vocabulary, bool)
        or max_vocabulary < 1
    ):
        raise ConfigurationError(
            f"max_vocabulary: expected an integer >= 1, got {max_vocabulary!r}"
        )
    if not isinstance(oov_buckets, int) or isinstance(oov_buckets, bool) or oov_buckets < 0:
        raise ConfigurationError(f"oov_buckets: expected an integer >= 0, got {oov_buckets!r}")
    if mixed not in ("error", "majority"):
        raise ConfigurationError(f"mixed: expected 'error' or 'majority', got {mixed!r}")
    timestamps = dict(timestamps or {})
    for name, unit in timestamps.items():
        if unit not in feature_spec.TIMESTAMP_UNITS:
            raise ConfigurationError(
                f"timestamps[{name!r}]: expected a unit among "
                f"{', '.join(map(repr, feature_spec.TIMESTAMP_UNITS))}, got {unit!r}"
            )
    options = {"top_k": max_vocabulary, "max_distinct": max(10_000, max_vocabulary + 1)}
    profile = profile_label(source, label, properties, options)
    unknown = sorted(set(timestamps) - {p["name"] for p in profile["properties"]})
    if unknown:
        raise ConfigurationError(
            f"timestamps: expected properties of label {label!r}, got {unknown[0]!r} (it has "
            f"{', '.join(repr(p['name']) for p in profile['properties']) or 'none'})"
        )
    specs = [
        _property_spec(
            label,
            prop,
            mixed=mixed,
            max_vocabulary=max_vocabulary,
            oov_buckets=oov_buckets,
            timestamps=timestamps,
        )
        for prop in profile["properties"]
    ]
    spec = feature_spec.LabelSpec(label, specs)
    spec.validate()
    logger.info(
        "%s: feature spec of %d properties inferred from %d nodes",
        label,
        len(specs),
        profile["count"],
    )
    return spec
