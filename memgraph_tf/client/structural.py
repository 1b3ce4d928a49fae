"""Structural node features through any source: ``tf_features.structural`` (degrees per
relationship type and direction, and a seeded, inductive FastRP embedding; docs/query-modules.md)
as numpy arrays, and ``tf_features.structural_write`` to store them as a numeric property that
the ordinary feature path (``pack``, ``sample*``, feature specs) reads.

Both run the procedure on a server with the query module and the procedure's own code over plain
Cypher on one without it, with bit-identical vectors (:mod:`memgraph_tf.procedures.structural`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np

from memgraph_tf.client.sources import procedure_table as table

__all__ = ["StructuralFeatures", "structural_features", "write_structural_features"]


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
