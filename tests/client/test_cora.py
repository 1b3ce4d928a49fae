"""GraphSAGE on Cora (Planetoid split), features and neighbourhoods only through the query modules.

The 5-seed figure (mean >= 0.80) is measured by benchmarks/accuracy.py; this single-seed run keeps a
margin below it so that it checks the whole path (modules -> blobs -> op -> model) without
flakiness.
"""

from __future__ import annotations

import pytest

from memgraph_tf.client import EmbeddedSource, evaluate, train_graphsage
from memgraph_tf.client.graphsage import PLANETOID_RECIPE, build_feature_cache

pytestmark = pytest.mark.slow

SINGLE_SEED_MIN_ACCURACY = 0.78


def test_cora_single_seed_accuracy(cora_graph):
    graph = cora_graph
    source = EmbeddedSource(graph)
    split = {
        name: [i for i in graph.nodes() if graph.get_property(i, "split") == name]
        for name in ("train", "val", "test")
    }
    assert [len(split[k]) for k in ("train", "val", "test")] == [140, 500, 1000]
    cache = build_feature_cache(source, ["features"], {})
    assert cache.width == 1433 and len(cache.ids) == graph.node_count
    result = train_graphsage(
        source, split["train"], split["val"], feature_cache=cache, seed=0, **PLANETOID_RECIPE
    )
    assert result.model.num_classes == 7
    test = evaluate(result.model, source, split["test"], feature_cache=cache, draws=5, seed=10_000)
    assert test["num_nodes"] == 1000
    assert test["accuracy"] >= SINGLE_SEED_MIN_ACCURACY, test
