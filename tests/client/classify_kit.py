"""The keyed test graph (``tests.graphs``) as the batch-inference tests use it: label
``BatchItem``; shared by test_batch.py and test_batch_cli.py (their fixtures are in conftest.py)."""

from __future__ import annotations

from tests.graphs import KeyedGraph

LABEL = "BatchItem"
GRAPH = KeyedGraph(LABEL)
OPTIONS = GRAPH.options
embedded_source = GRAPH.embedded_source
bolt_predictions = GRAPH.bolt_predictions
