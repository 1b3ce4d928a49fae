"""tf_features.structural over real Bolt (ArcadeDB, which has no tf_features procedures: the
client-side fallback runs the procedure's own code over plain Cypher): bit-identical vectors to
the embedded query module, the same values written by structural_write (in write transactions),
held-out relationships left out the same way, and the same errors."""

from __future__ import annotations

import numpy as np
import pytest

from memgraph_tf.client import EmbeddedSource
from memgraph_tf.client.structural import structural_features, write_structural_features
from memgraph_tf.embedded import EmbeddedGraph
from memgraph_tf.errors import GraphDataError

pytestmark = pytest.mark.arcadedb

N = 60
CITES = "(:Paper)-[:CITES]-(:Paper)"


@pytest.fixture(scope="module")
def twin_graphs(bolt_source):
    rng = np.random.default_rng(4)
    edges = sorted({(int(a), int(b)) for a, b in rng.integers(0, N, (3 * N, 2)).tolist() if a != b})
    embedded = EmbeddedGraph()
    nodes = [embedded.add_node(["Paper"], {"id": 700 + i}) for i in range(N)]
    venue = embedded.add_node(["Venue"], {"id": 1})
    for a, b in edges:
        embedded.add_edge(nodes[a], nodes[b], "CITES")
    for i in range(0, N, 3):
        embedded.add_edge(nodes[i], venue, "IN")
    bolt_source.write("MATCH (n) WHERE n:Paper OR n:Venue DETACH DELETE n")
    bolt_source.write(
        "UNWIND $rows AS r CREATE (n:Paper) SET n = r",
        {"rows": [{"id": 700 + i} for i in range(N)]},
    )
    bolt_source.write("CREATE (:Venue {id: 1})")
    bolt_source.write(
        "UNWIND $p AS p MATCH (x:Paper) WHERE x.id = p.a MATCH (y:Paper) WHERE y.id = p.b "
        "CREATE (x)-[:CITES]->(y)",
        {"p": [{"a": 700 + a, "b": 700 + b} for a, b in edges]},
    )
    bolt_source.write(
        "UNWIND $p AS p MATCH (x:Paper) WHERE x.id = p MATCH (v:Venue) CREATE (x)-[:IN]->(v)",
        {"p": [700 + i for i in range(0, N, 3)]},
    )
    yield EmbeddedSource(embedded), bolt_source
    bolt_source.write("MATCH (n) WHERE n:Paper OR n:Venue DETACH DELETE n")


def test_the_same_vectors_bit_for_bit_and_the_same_writes(twin_graphs):
    embedded, bolt = twin_graphs
    for opts in (
        {"id_property": "id", "seed": 3},
        {"id_property": "id", "seed": 8, "dimension": 16, "iteration_weights": [0.5, 2.0]},
        {"id_property": "id", "normalization_strength": -0.5, "self_weight": 1.0},
        {"id_property": "id", "features": ["degree"], "degree": "count"},
    ):
        ours = structural_features(embedded, "Paper", opts)
        theirs = structural_features(bolt, "Paper", opts)
        assert theirs.columns == ours.columns
        np.testing.assert_array_equal(theirs.node_ids, ours.node_ids)
        assert theirs.features.tobytes() == ours.features.tobytes()
    assert ours.columns == ["degree:CITES:out", "degree:CITES:in", "degree:IN:out", "degree:IN:in"]
    split = {"seed": 1, "id_property": "id", "test_fraction": 0.3}
    assert bolt.split_edges(CITES, split) == embedded.split_edges(CITES, split)
    held = {"id_property": "id", "seed": 5, "dimension": 16, "exclude_splits": ["test"]}
    ours = structural_features(embedded, "Paper", held)
    theirs = structural_features(bolt, "Paper", held)
    assert theirs.features.tobytes() == ours.features.tobytes()
    full = structural_features(embedded, "Paper", {**held, "exclude_splits": None})
    assert full.features.tobytes() != ours.features.tobytes()
    opts = {"id_property": "id", "seed": 2, "dimension": 8, "write_property": "s"}
    assert write_structural_features(bolt, "Paper", opts) == write_structural_features(
        embedded, "Paper", opts
    )
    rows = bolt.read("MATCH (n:Paper) RETURN n.id AS id, n.s AS s ORDER BY id")
    store = embedded.graph
    written = {store.get_property(i, "id"): store.get_property(i, "s") for i in range(N)}
    assert {r["id"]: r["s"] for r in rows} == written


def test_the_same_errors(twin_graphs):
    embedded, bolt = twin_graphs
    for source in (embedded, bolt):
        with pytest.raises(GraphDataError, match=r"options\.dimension: expected an integer from 1"):
            structural_features(source, "Paper", {"dimension": 0})
        with pytest.raises(GraphDataError, match=r"label: no node has the label 'Nope'"):
            structural_features(source, "Nope", {})
