"""Link prediction over real Bolt (ArcadeDB, which has no tf_features procedures: the client-side
split and pair sampler over plain Cypher run the procedures' own code): split_edges writes the
embedded query module's exact split (in write transactions), and sample_pairs gives its exact
bytes for a fixed seed -- held-out relationships excluded, negatives drawn -- with the same
errors."""

from __future__ import annotations

import numpy as np
import pytest

from memgraph_tf import blob
from memgraph_tf.client import EmbeddedSource
from memgraph_tf.embedded import EmbeddedGraph
from memgraph_tf.errors import GraphDataError

pytestmark = pytest.mark.arcadedb

CITES = "(:Paper)-[:CITES]-(:Paper)"
NN = {CITES: [4, 3]}
PROPS = {"Paper": ["f"]}
OPTS = {"source_label": "Paper", "id_property": "id", "seed": 5}
N = 80


@pytest.fixture(scope="module")
def twin_papers(bolt_source):
    rng = np.random.default_rng(2)
    edges = sorted({(int(a), int(b)) for a, b in rng.integers(0, N, (3 * N, 2)).tolist() if a != b})
    embedded = EmbeddedGraph()
    nodes = [embedded.add_node(["Paper"], {"id": 500 + i, "f": [i / 7.0, 1.0]}) for i in range(N)]
    for a, b in edges:
        embedded.add_edge(nodes[a], nodes[b], "CITES")
    bolt_source.write("MATCH (n:Paper) DETACH DELETE n")
    rows = [{"id": 500 + i, "f": [i / 7.0, 1.0]} for i in range(N)]
    bolt_source.write("UNWIND $rows AS r CREATE (n:Paper) SET n = r", {"rows": rows})
    bolt_source.write(
        "UNWIND $p AS p MATCH (x:Paper) WHERE x.id = p.a MATCH (y:Paper) WHERE y.id = p.b "
        "CREATE (x)-[:CITES]->(y)",
        {"p": [{"a": 500 + a, "b": 500 + b} for a, b in edges]},
    )
    yield EmbeddedSource(embedded), bolt_source, edges
    bolt_source.write("MATCH (n:Paper) DETACH DELETE n")  # the session's database is shared


def _bolt_splits(bolt):
    rows = bolt.read(
        "MATCH (a:Paper)-[r:CITES]->(b:Paper) RETURN a.id AS a, b.id AS b, r.split AS s"
    )
    return {(r["a"] - 500, r["b"] - 500): r["s"] for r in rows}


def test_the_same_split_and_pair_blobs_byte_for_byte(twin_papers):
    embedded, bolt, edges = twin_papers
    split = {"seed": 3, "id_property": "id", "val_fraction": 0.1, "test_fraction": 0.2}
    counts = embedded.split_edges(CITES, split)
    assert bolt.split_edges(CITES, split) == counts
    written = {e: embedded.graph._store.eprops[k]["split"] for k, e in enumerate(edges)}
    assert _bolt_splits(bolt) == written
    assert bolt.split_edges(CITES, split) == counts  # a rerun: the same split
    assert _bolt_splits(bolt) == written
    sources = [500 + a for a, _ in edges[:12]]
    targets = [500 + b for _, b in edges[:12]]
    for opts in (
        OPTS,
        {**OPTS, "negatives": 2, "exclude_splits": ["val", "test"]},
        {**OPTS, "seed": 9, "dtype": "float64", "negatives": 1},
        {**OPTS, "negatives": 1, "layout": "sparse"},
    ):
        expected = embedded.sample_pairs(sources, targets, NN, PROPS, opts)
        assert bolt.sample_pairs(sources, targets, NN, PROPS, opts) == expected
    held = {**OPTS, "exclude_splits": ["val", "test"]}
    assert bolt.sample_pairs(sources, targets, NN, PROPS, held) != bolt.sample_pairs(
        sources, targets, NN, PROPS, OPTS
    )
    typed = {"label": "Paper", "id_property": "id", "seed": 4, "exclude_splits": ["test"]}
    assert bolt.sample_typed(sources, NN, PROPS, typed) == embedded.sample_typed(
        sources, NN, PROPS, typed
    )
    got = blob.unpack(bolt.sample_pairs(sources, targets, NN, PROPS, {**OPTS, "negatives": 2}))
    assert got["pair_labels"].tolist() == [1] * 12 + [0] * 24


@pytest.mark.parametrize(
    ("sources", "targets", "nn", "message"),
    [
        ([500, 7], [501, 502], NN, r"sources\[1\]: unknown node id 7 \(no :Paper node has id"),
        ([500], [1.5], NN, r"targets\[0\]: expected (a node or )?an integer id, got float"),
        (
            [500],
            [501],
            {"(:Paper)-[:LIKES]-(:Paper)": [2]},
            r"num_neighbors: \(:Paper\)-\[:LIKES\]-\(:Paper\): the graph has no such",
        ),
    ],
)
def test_the_same_errors(twin_papers, sources, targets, nn, message):
    embedded, bolt, _ = twin_papers
    for source in (embedded, bolt):
        with pytest.raises(GraphDataError, match=message):
            source.sample_pairs(sources, targets, nn, PROPS, OPTS)
    for source in (embedded, bolt):
        with pytest.raises(GraphDataError, match=r"pattern: \(:Paper\)-\[:LIKES\]->\(:Paper\)"):
            source.split_edges("(:Paper)-[:LIKES]->(:Paper)", {"seed": 1})
