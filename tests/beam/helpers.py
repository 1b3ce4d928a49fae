"""The keyed test graph (``tests.graphs``) as the Beam tests use it: label ``BeamItem`` (the
fixtures are in conftest.py). Imported by name: ``from tests.beam import helpers as h``."""

from __future__ import annotations

import os
from typing import NoReturn

import pytest

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


def beam_missing(exc: ImportError) -> NoReturn:
    """What a Beam test module does when ``import apache_beam`` (or dask's ``distributed``)
    raises ``exc``: fails it on CI, which installs the beam extra (scripts/bootstrap.sh:
    ``.[test,beam]``), so the Beam suite must run there; elsewhere skips the whole module,
    saying how to install the extra."""
    if os.environ.get("CI"):
        pytest.fail(
            f"the beam extra is not installed, but CI runs the Beam suite: {exc}", pytrace=False
        )
    pytest.skip(
        f"the beam extra is not installed here (pip install 'memgraph-tf[beam]'): {exc}",
        allow_module_level=True,
    )


def classify_on_two_threads(source, bundle, nodes: int, **options) -> None:
    """Registers ``source``, classifies it with ``bundle`` in a DirectRunner job (2 workers,
    multi-threading, batches of 32, 4 key ranges; ``options`` go to ``classify_with_beam``),
    unregisters it, and asserts that all ``nodes`` nodes were read, classified and written,
    none left unchanged."""
    from memgraph_tf.beam import classify_with_beam, register_graph, unregister_graph
    from memgraph_tf.beam.models import ModelSpec

    spec = register_graph(source)
    try:
        summary = classify_with_beam(
            spec,
            ModelSpec.resolve(bundle=bundle),
            runner="DirectRunner",
            num_workers=2,
            running_mode="multi_threading",
            batch_size=32,
            num_ranges=4,
            **options,
        )
    finally:
        unregister_graph(spec)
    counts = (summary.read, summary.classified, summary.written, summary.unchanged)
    assert counts == (nodes, nodes, nodes, 0)


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
    "classify_on_two_threads",
    "embedded_source",
    "graph_data",
    "node_id",
    "predictions",
    "writes_per_node",
]
