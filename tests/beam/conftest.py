"""Fixtures for the Beam tests: a small keyed graph (embedded, or written to ArcadeDB over Bolt), an
exported op-free bundle, and the batch module's predictions as the reference.

Nothing here imports apache_beam: test modules that need it skip on their own
(``pytest.importorskip``), so the main venv (no Beam) reports why."""

from __future__ import annotations

import numpy as np
import pytest

LABEL = "BeamItem"
CLASSES = ["red", "green", "blue"]
FANOUTS = [3, 2]
DIM = 4
SEED = 11
OPTIONS = {"id_property": "id", "label": LABEL, "seed": SEED}
N = 90


def node_id(i: int) -> int:
    """Sparse ids, negative and positive, so key ranges and pages are not trivial."""
    return 7 * i - 200


def graph_data(n: int = N, bad: tuple[int, ...] = (), seed: int = 0):
    """``(nodes, edges)``: nodes ``{"id", "features", "label"}``, edges ``(i, j)`` by index; the ``bad``
    indices get features one value too long and no edges (only they are invalid)."""
    rng = np.random.default_rng(seed)
    feats = rng.normal(size=(n, DIM + 1)).astype(np.float32) * 2.0
    nodes = [
        {
            "id": node_id(i),
            "features": feats[i, : DIM + (1 if i in bad else 0)].tolist(),
            "label": i % 3,
        }
        for i in range(n)
    ]
    edges = []
    for i in range(n):
        for j in rng.choice(n, size=3, replace=False).tolist():
            if j != i and i not in bad and j not in bad:
                edges.append((i, j))
    return nodes, edges


def embedded_source(n: int = N, bad: tuple[int, ...] = ()):
    """An EmbeddedSource over :func:`graph_data` plus one node of another label (never classified);
    its graph counts writes: ``source.graph.writes[(internal id, property)]``."""
    import collections

    from memgraph_tf.client import EmbeddedSource
    from memgraph_tf.embedded import EmbeddedGraph

    class Counting(EmbeddedGraph):
        def __init__(self):
            super().__init__()
            self.writes = collections.Counter()

        def set_property(self, node_id, key, value):
            self.writes[(node_id, key)] += 1
            return super().set_property(node_id, key, value)

    nodes, edges = graph_data(n, bad)
    graph = Counting()
    for props in nodes:
        graph.add_node([LABEL], props)
    graph.add_node(["Other"], {"id": 10**6, "features": [0.0] * DIM})
    for a, b in edges:
        graph.add_edge(a, b, "LINK")
    graph.writes.clear()
    return EmbeddedSource(graph)


def predictions(source, prop: str = "predicted_class") -> dict[int, tuple]:
    """``{id: (class, score, version)}`` of the embedded nodes that carry ``prop``."""
    from memgraph_tf.client.batch import property_names

    cls, score, version = property_names(prop)
    graph = source.graph
    out = {}
    for internal in graph.nodes():
        value = graph.get_property(internal, cls)
        if value is not None:
            out[graph.get_property(internal, "id")] = (
                value,
                graph.get_property(internal, score),
                graph.get_property(internal, version),
            )
    return out


def writes_per_node(source, prop: str = "predicted_class") -> dict[int, int]:
    """``{id: times P_version was set}`` over the embedded graph's counted writes."""
    from memgraph_tf.client.batch import property_names

    version = property_names(prop)[2]
    graph = source.graph
    return {
        graph.get_property(internal, "id"): count
        for (internal, key), count in graph.writes.items()
        if key == version
    }


def assert_same(got: dict, want: dict) -> None:
    assert sorted(got) == sorted(want)
    assert [got[k][0] for k in sorted(got)] == [want[k][0] for k in sorted(want)]
    np.testing.assert_allclose(
        [got[k][1] for k in sorted(got)], [want[k][1] for k in sorted(want)], rtol=1e-6
    )
    assert {v[2] for v in got.values()} == {v[2] for v in want.values()}


@pytest.fixture(scope="session")
def h():
    """This module: the helpers above (test modules cannot import a conftest by name)."""
    import sys

    return sys.modules[__name__]


@pytest.fixture(scope="session")
def bundle_base(small_sage_bundle):
    """BASE/BeamSage with version 1, op-free, sampling options OPTIONS."""
    return small_sage_bundle(
        "BeamSage", 1, OPTIONS, use_op=False, fanouts=FANOUTS, dim=DIM, classes=CLASSES
    )


@pytest.fixture(scope="session")
def op_bundle_base(small_sage_bundle):
    """BASE/BeamSageOp with version 2: the same model decoding blobs with the C++ op."""
    return small_sage_bundle(
        "BeamSageOp", 2, OPTIONS, use_op=True, fanouts=FANOUTS, dim=DIM, classes=CLASSES
    )


@pytest.fixture(scope="session")
def backend(bundle_base):
    """The op-free bundle loaded in-process once for the session (loading a SavedModel costs seconds)."""
    from memgraph_tf.client.batch import BundleBackend

    with BundleBackend(bundle_base) as model:
        yield model


@pytest.fixture(scope="session")
def reference(backend):
    """``memgraph_tf.client.batch``'s uninterrupted full run over the embedded graph: ``{id: (class,
    score, version)}``."""
    from memgraph_tf.client.batch import classify_graph

    source = embedded_source()
    summary = classify_graph(source, backend, batch_size=32, progress=False)
    assert summary.classified == N
    return predictions(source)


@pytest.fixture
def bolt_graph(bolt_source):
    """The test graph written afresh to ArcadeDB (no tf_features procedures: the client-side
    fallback samples)."""
    nodes, edges = graph_data()
    bolt_source.write(f"MATCH (n:{LABEL}) DETACH DELETE n")
    bolt_source.write(
        f"UNWIND $rows AS r CREATE (:{LABEL} {{id: r.id, features: r.features, label: r.label}})",
        {"rows": nodes},
    )
    bolt_source.write(
        f"UNWIND $pairs AS p MATCH (a:{LABEL} {{id: p.a}}), (b:{LABEL} {{id: p.b}}) "
        f"CREATE (a)-[:LINK]->(b)",
        {"pairs": [{"a": node_id(a), "b": node_id(b)} for a, b in edges]},
    )
    assert not bolt_source.has_procedures()
    return bolt_source


@pytest.fixture
def bolt_env(arcadedb_server, monkeypatch):
    """Worker credentials the way a deployment gives them: environment variables (inherited by
    DirectRunner worker processes), never inside the pipeline."""
    monkeypatch.setenv("MEMGRAPH_TF_USER", arcadedb_server.user)
    monkeypatch.setenv("MEMGRAPH_TF_PASSWORD", arcadedb_server.password)
    monkeypatch.setenv("MEMGRAPH_TF_DATABASE", arcadedb_server.database)
    return arcadedb_server


def bolt_predictions(source, prop: str = "predicted_class") -> dict[int, tuple]:
    from memgraph_tf.client.batch import property_names

    cls, score, version = property_names(prop)
    rows = source.read(
        f"MATCH (n:{LABEL}) WHERE n.`{cls}` IS NOT NULL "
        f"RETURN n.id AS id, n.`{cls}` AS c, n.`{score}` AS s, n.`{version}` AS v"
    )
    return {r["id"]: (r["c"], r["s"], r["v"]) for r in rows}
