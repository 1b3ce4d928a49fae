"""Fixtures for the client tests: graph sources, datasets (``bolt_source``, a BoltSource on the
session's ArcadeDB server, lives in tests/conftest.py)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def cora_graph():
    """Cora as an EmbeddedGraph (built once per session: ~10 s), from the copy shipped in the package,
    so that it runs in any clone (tests/test_datasets.py checks that copy equals the Planetoid files
    where those are beside the repository)."""
    from memgraph_tf.datasets import planetoid_graph

    return planetoid_graph("cora")


def build_community_graph(num_nodes: int = 150, num_classes: int = 3, dim: int = 8, seed: int = 0):
    """A homophilous graph: node ``i`` has class ``i % num_classes``, noisy features that hint at
    the class, and edges mostly (85 %) inside its class. Returns (EmbeddedGraph, labels, features)."""
    import numpy as np

    from memgraph_tf.embedded import EmbeddedGraph

    rng = np.random.default_rng(seed)
    labels = np.arange(num_nodes) % num_classes
    centers = rng.standard_normal((num_classes, dim))
    features = (centers[labels] * 0.6 + rng.standard_normal((num_nodes, dim))).astype(np.float32)
    graph = EmbeddedGraph()
    for i in range(num_nodes):
        graph.add_node(
            ["Item"], {"id": 10_000 + i, "features": features[i].tolist(), "label": int(labels[i])}
        )
    by_class = [np.flatnonzero(labels == c) for c in range(num_classes)]
    for i in range(num_nodes):
        for _ in range(int(rng.integers(1, 6))):
            pool = by_class[labels[i]] if rng.random() < 0.85 else np.arange(num_nodes)
            j = int(rng.choice(pool))
            if j != i:
                graph.add_edge(i, j, "LINK")
    return graph, labels, features


@pytest.fixture(scope="session")
def community():
    """(EmbeddedSource, labels, features) over :func:`build_community_graph`; node ids = 10000 + i."""
    from memgraph_tf.client import EmbeddedSource

    graph, labels, features = build_community_graph()
    return EmbeddedSource(graph), labels, features


@pytest.fixture(scope="session")
def make_community():
    """The :func:`build_community_graph` function, for tests that need a graph of their own."""
    return build_community_graph
