"""Structural node features through any source: ``tf_features.structural`` (degrees per
relationship type and direction, and a seeded, inductive FastRP embedding; docs/query-modules.md)
as numpy arrays, and ``tf_features.structural_write`` to store them as a numeric property that
the ordinary feature path (``pack``, ``sample*``, feature specs) reads.

Both run the procedure on a server with the query module and the procedure's own code over plain
Cypher on one without it, with bit-identical vectors (:mod:`memgraph_tf.procedures.structural`).

:func:`default_structural_spec` is the default the trainers give a label without features
(docs/client.md, "Labels without features"): its FastRP embedding, written into
:data:`STRUCTURAL_PROPERTY` and read as a numeric feature whose missing value is zeros.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from memgraph_tf.client.sources import procedure_table as table
from memgraph_tf.feature_spec import LabelSpec, NumericSpec
from memgraph_tf.procedures.structural import StructuralOptions

__all__ = [
    "STRUCTURAL_OPTIONS",
    "STRUCTURAL_PROPERTY",
    "StructuralFeatures",
    "default_structural_spec",
    "featureless_labels",
    "structural_call",
    "structural_features",
    "touching_types",
    "write_structural_features",
]

logger = logging.getLogger(__name__)

STRUCTURAL_PROPERTY = "memgraph_tf_fastrp"
"""The property the trainers write a featureless label's default structural features into."""
STRUCTURAL_OPTIONS: dict[str, Any] = {
    "features": ["fastrp"],
    "dimension": StructuralOptions.dimension,
    "iteration_weights": list(StructuralOptions.iteration_weights),
    "self_weight": StructuralOptions.self_weight,
    "normalization_strength": StructuralOptions.normalization_strength,
}
"""The ``tf_features.structural_write`` options of that default beside those
:func:`structural_call` adds: FastRP alone, the procedure's defaults spelled out (so the record a
feature spec keeps of the call does not depend on them)."""


class StructuralFeatures(NamedTuple):
    """``node_ids`` ``[n]`` int64 (sorted keys: ``options.id_property`` or internal ids),
    ``features`` ``[n, width]`` float64 (the procedure's Python floats, exactly) and ``columns``
    (a name per feature)."""

    node_ids: np.ndarray
    features: np.ndarray
    columns: list[str]


def structural_features(
    source: Any, label: str, options: Mapping[str, Any] | None = None
) -> StructuralFeatures:
    """``tf_features.structural`` of ``label`` through ``source`` (any
    :class:`~memgraph_tf.client.sources.GraphSource`); a bad argument raises
    :class:`~memgraph_tf.errors.GraphDataError` with the procedure's message (parameter, value,
    allowed ones)."""
    rows = source.call_procedure(table.STRUCTURAL, table.STRUCTURAL.plain(label, options))
    columns = list(rows[0]["columns"]) if rows else []
    ids = np.array([r["node_id"] for r in rows], dtype=np.int64)
    feats = np.array([r["features"] for r in rows], dtype=np.float64).reshape(len(rows), -1)
    return StructuralFeatures(ids, feats, columns)


def write_structural_features(
    source: Any, label: str, options: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """``tf_features.structural_write``: each node's vector written into
    ``options["write_property"]`` (a list of floats); returns ``{"nodes", "width", "columns"}``."""
    return source.call_procedure(
        table.STRUCTURAL_WRITE, table.STRUCTURAL_WRITE.plain(label, options)
    )


def featureless_labels(
    labels: Sequence[str],
    properties: Mapping[str, Sequence[str]] | Sequence[str],
    feature_spec: Mapping[str, Any] | None,
) -> list[str]:
    """The labels among ``labels`` that have no feature: no property named for them
    (``properties``: label -> names, or one list of names for every label) and no entry in
    ``feature_spec``; in the order of ``labels``, each once."""
    specs = feature_spec or {}
    out = []
    for label in dict.fromkeys(labels):
        names = properties.get(label) if isinstance(properties, Mapping) else properties
        if not names and label not in specs:
            out.append(label)
    return out


def structural_call(
    options: Mapping[str, Any],
    *,
    seed: int | None = None,
    exclude_splits: Sequence[str] | None = None,
    relationship_types: Sequence[str] | None = None,
) -> dict[str, Any]:
    """The ``tf_features.structural_write`` options of the trainers' default for a featureless
    label: :data:`STRUCTURAL_OPTIONS` into :data:`STRUCTURAL_PROPERTY`, ``options``'
    ``id_property`` and ``split_property``, the training ``seed`` (None: 0),
    ``exclude_splits`` and ``relationship_types`` (None or empty: none named, so the call walks
    every type touching the label when it runs). The same call gives a node added after training
    its own vector; the trainers record it in the feature spec (``NumericSpec.structural``)."""
    call: dict[str, Any] = dict(STRUCTURAL_OPTIONS, write_property=STRUCTURAL_PROPERTY)
    call["iteration_weights"] = list(STRUCTURAL_OPTIONS["iteration_weights"])
    call.update((k, options[k]) for k in ("id_property", "split_property") if options.get(k))
    call["seed"] = 0 if seed is None else int(seed)
    if exclude_splits:
        call["exclude_splits"] = list(exclude_splits)
    if relationship_types:
        call["relationship_types"] = list(relationship_types)
    return call


def touching_types(source: Any, labels: Sequence[str]) -> dict[str, list[str]]:
    """Per label of ``labels``, the relationship types with an endpoint of it now
    (``tf_features.schema``: one scan of the graph), sorted: the types a call naming none walks."""
    found: dict[str, set[str]] = {label: set() for label in labels}
    for r in source.schema()["relationships"]:
        for label in {r["source"], r["target"]} & found.keys():
            found[label].add(r["type"])
    return {label: sorted(types) for label, types in found.items()}


def default_structural_spec(
    source: Any,
    labels: Sequence[str],
    properties: Mapping[str, Sequence[str]] | Sequence[str],
    feature_spec: Mapping[str, Any] | None,
    options: Mapping[str, Any],
    *,
    seed: int | None = None,
    exclude_splits: Sequence[str] | None = None,
) -> Mapping[str, Any] | None:
    """The trainers' default for a label without features (:func:`featureless_labels` of
    ``labels``): per such label, ``tf_features.structural_write`` of its FastRP embedding
    (:func:`structural_call`: relationships of ``exclude_splits`` left out -- the training graph
    of a link split -- and the projection drawn from the training ``seed``) into
    :data:`STRUCTURAL_PROPERTY` on every node of the label, and a
    :class:`~memgraph_tf.feature_spec.LabelSpec` reading it as a ``numeric`` list (not
    standardised) whose missing value is zeros -- the vector FastRP gives a node without
    relationships -- so a node added after training is answered from its neighbours' vectors
    until the same call gives it its own. The spec records the call (``structural``: its
    options), so the model and its bundles carry them to ``memgraph-tf refresh``. The call names
    the relationship types touching the label at training time (:func:`touching_types`, sorted),
    so every later call -- ``memgraph-tf refresh``'s among them -- walks the types the model was
    trained on, a type that first touches the label afterwards is not walked, and a refresh pass
    needs no schema scan; a label with no relationship at training time names none (each call
    walks the types touching it when it runs).

    Guarantees: returns ``feature_spec`` itself when no label is featureless, else a new mapping
    with those labels' specs added; nothing is written for a label that has features."""
    todo = featureless_labels(labels, properties, feature_spec)
    if not todo:
        return feature_spec
    types = touching_types(source, todo)
    out = dict(feature_spec or {})
    for label in todo:
        call = structural_call(
            options, seed=seed, exclude_splits=exclude_splits, relationship_types=types[label]
        )
        written = write_structural_features(source, label, call)
        logger.info(
            "label %r has no features: wrote its FastRP embedding (%d wide) into %r on %d nodes",
            label,
            written["width"],
            STRUCTURAL_PROPERTY,
            written["nodes"],
        )
        prop = NumericSpec(
            STRUCTURAL_PROPERTY, standardize=False, length=written["width"], structural=dict(call)
        )
        out[label] = LabelSpec(label, [prop])
    return out
