"""The keyed test graph (``tests.graphs``) as the Beam tests use it: label ``BeamItem`` (the
fixtures are in conftest.py). Imported by name: ``from tests.beam import helpers as h``."""

from __future__ import annotations

from tests.graphs import (
    CLASSES,
    DIM,
    FANOUTS,
    SEED,
    KeyedGraph,
    N,
    assert_same,
    graph_data,
    node_id,
    predictions,
    writes_per_node,
)

LABEL = "BeamItem"
GRAPH = KeyedGraph(LABEL)
OPTIONS = GRAPH.options
embedded_source = GRAPH.embedded_source
bolt_predictions = GRAPH.bolt_predictions

__all__ = [
    "CLASSES",
    "DIM",
    "FANOUTS",
    "GRAPH",
    "LABEL",
    "OPTIONS",
    "SEED",
    "N",
    "assert_same",
    "bolt_predictions",
    "embedded_source",
    "graph_data",
    "node_id",
    "predictions",
    "writes_per_node",
]
