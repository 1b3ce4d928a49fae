"""Fixtures for the client tests: graph sources, datasets (``bolt_source``, a BoltSource on the
session's ArcadeDB server, lives in tests/conftest.py)."""

from __future__ import annotations

import pytest

from tests.graphs import backend, reference  # noqa: F401 -- fixtures, shared with tests/beam


@pytest.fixture(scope="session")
def cora_graph():
    """Cora as an EmbeddedGraph (built once per session: ~10 s), from the copy shipped in the
    package, so that it runs in any clone (tests/test_datasets.py checks that copy equals the
    Planetoid files where those are beside the repository)."""
    from memgraph_tf.datasets import planetoid_graph

    return planetoid_graph("cora")


def build_community_graph(num_nodes: int = 150, num_classes: int = 3, dim: int = 8, seed: int = 0):
    """A homophilous graph: node ``i`` has class ``i % num_classes``, noisy features that hint at
    the class, and edges mostly (85 %) inside its class. Returns (EmbeddedGraph, labels,
    features)."""
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
    """(EmbeddedSource, labels, features) over :func:`build_community_graph`; node ids = 10000 +
    i."""
    from memgraph_tf.client import EmbeddedSource

    graph, labels, features = build_community_graph()
    return EmbeddedSource(graph), labels, features


@pytest.fixture(scope="session")
def make_community():
    """The :func:`build_community_graph` function, for tests that need a graph of their own."""
    return build_community_graph


# ------------------------------------------------- batch inference (test_batch*.py): BatchItem
# graph
@pytest.fixture(scope="session")
def sage_model(small_sage):
    """An untrained GraphSAGE over the keyed test graph (``small_sage``: Keras seed 3, the model
    of ``bundle_base`` and ``op_bundle_base``)."""
    from tests.graphs import CLASSES, DIM, FANOUTS

    return small_sage(FANOUTS, DIM, CLASSES)


@pytest.fixture(scope="session")
def bundle_base(small_sage_bundle):
    """BASE/BatchSage with version 1: ``sage_model`` op-free, sampling options
    ``classify_kit.OPTIONS`` (one per session: the batch tests only read it)."""
    from tests.client.classify_kit import GRAPH

    return GRAPH.bundle(small_sage_bundle, "BatchSage", 1, use_op=False)


@pytest.fixture(scope="session")
def op_bundle_base(small_sage_bundle):
    """``sage_model`` exported as BASE/BatchSageOp version 1 decoding with the C++ op (the other
    sampling settings those of ``bundle_base``), for the batch tests whose property does not
    depend on the decoder (a command's summary, the transports, interrupting and resuming):
    each process or server that loads an op-free bundle first instantiates the portable
    decoder's graph (seconds). Its scores equal the op-free bundle's (``reference``)."""
    from tests.client.classify_kit import GRAPH

    return GRAPH.bundle(small_sage_bundle, "BatchSageOp", 1, use_op=True)


@pytest.fixture(scope="session")
def keyed_graph():
    """The batch suite's keyed graph, for the shared ``backend`` / ``reference`` fixtures."""
    from tests.client.classify_kit import GRAPH

    return GRAPH


@pytest.fixture(scope="module")
def bolt_graph(bolt_source):
    """The test graph written to ArcadeDB (no tf_features procedures: client-side packing)."""
    from tests.client.classify_kit import GRAPH

    GRAPH.write_bolt(bolt_source)
    assert not bolt_source.has_procedures()
    return bolt_source


@pytest.fixture(scope="module")
def paging_graph(bolt_source):
    """``classify_kit.PAGING`` written to ArcadeDB, each node marked ``paging_run = true`` (so a
    selection without a label can keep to them); returns the sorted internal ids of its nodes."""
    from tests.client.classify_kit import PAGING, PAGING_WHERE
    from tests.graphs import N

    PAGING.write_bolt(bolt_source)
    bolt_source.write("MATCH (n:PagingItem) SET n.paging_run = true")
    rows = bolt_source.read(f"MATCH (n) WHERE {PAGING_WHERE} RETURN id(n) AS id")
    assert len(rows) == N
    return sorted(row["id"] for row in rows)
