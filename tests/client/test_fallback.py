"""Client-side packing over plain Cypher (ArcadeDB) gives the embedded query module's exact
bytes."""

from __future__ import annotations

import random

import pytest

from memgraph_tf import blob
from memgraph_tf.client import EmbeddedSource
from memgraph_tf.embedded import EmbeddedGraph
from memgraph_tf.errors import GraphDataError

pytestmark = pytest.mark.arcadedb

LABEL = "FbNode"
N = 30
ID_OFFSET = 1000  # ids differ from embedded internal ids: the id_property is what both sides share


def _graph_data():
    rng = random.Random(20240601)
    nodes = []
    for i in range(N):
        nodes.append(
            {
                "id": ID_OFFSET + i,
                "feat": [rng.uniform(-1, 1) for _ in range(4)],
                "w": rng.randint(-5, 5),
                "cls": i % 3,
                "name": f"n{i}",
            }
        )
    edges = []
    for i in range(N - 2):  # node N-1 stays isolated
        for j in rng.sample(range(N - 1), rng.randint(0, 5)):
            edges.append((i, j, "CITES" if rng.random() < 0.7 else "LINKS"))
    edges += [(3, 3, "CITES"), (4, 5, "CITES"), (4, 5, "CITES")]  # a self-loop and a duplicate edge
    return nodes, edges


@pytest.fixture(scope="module")
def twin_graphs(bolt_source):
    nodes, edges = _graph_data()
    embedded = EmbeddedGraph()
    for props in nodes:
        embedded.add_node([LABEL], props)
    for a, b, t in edges:
        embedded.add_edge(a, b, t)
    bolt_source.write(f"MATCH (n:{LABEL}) DETACH DELETE n")
    bolt_source.write(
        f"UNWIND $rows AS r CREATE (:{LABEL} "
        f"{{id: r.id, feat: r.feat, w: r.w, cls: r.cls, name: r.name}})",
        {"rows": nodes},
    )
    for t in ("CITES", "LINKS"):
        pairs = [{"a": ID_OFFSET + a, "b": ID_OFFSET + b} for a, b, et in edges if et == t]
        bolt_source.write(
            f"UNWIND $pairs AS p MATCH (x:{LABEL} {{id: p.a}}), (y:{LABEL} {{id: p.b}}) CREATE "
            f"(x)-[:{t}]->(y)",
            {"pairs": pairs},
        )
    return EmbeddedSource(embedded), bolt_source


OPTIONS = {"id_property": "id", "label": LABEL}


def test_pack_same_bytes(twin_graphs):
    embedded, bolt = twin_graphs
    ids = [ID_OFFSET + i for i in (7, 0, 29, 7, 12)]
    for props, opts in (
        (["feat", "w"], OPTIONS),
        (["feat", "name"], {**OPTIONS, "label_property": "cls"}),
        (["w"], {**OPTIONS, "dtype": "float64"}),
    ):
        expected = embedded.pack_blob(ids, props, opts)
        assert bolt.pack_blob(ids, props, opts) == expected
    unpacked = blob.unpack(bolt.pack_blob(ids, ["feat", "name"], OPTIONS))
    assert unpacked["ids"].tolist() == ids
    assert [v.decode() for v in unpacked["name"]] == [f"n{i - ID_OFFSET}" for i in ids]


@pytest.mark.parametrize(
    "extra",
    [
        {"seed": 7},
        {"seed": 11, "direction": "out", "edge_types": ["CITES"]},
        {"seed": 3, "direction": "in", "low_degree": "resample", "label_property": "cls"},
        {"seed": 5, "replace": True},
    ],
)
def test_sample_same_bytes(twin_graphs, extra):
    embedded, bolt = twin_graphs
    seeds = [ID_OFFSET + i for i in (0, 3, 4, 29, 17)]
    opts = {**OPTIONS, **extra}
    expected = embedded.sample_blob(seeds, [3, 2], ["feat", "w"], opts)
    assert bolt.sample_blob(seeds, [3, 2], ["feat", "w"], opts) == expected
    per_node = bolt.sample_blobs_per_node(seeds, [3, 2], ["feat", "w"], opts)
    assert per_node == embedded.sample_blobs_per_node(seeds, [3, 2], ["feat", "w"], opts)
    assert len(per_node) == len(seeds)
    sections = blob.unpack(expected)
    assert sections["features_2"].shape == (len(seeds), 3, 2, 5)


def test_fallback_errors_match_the_procedures(twin_graphs):
    embedded, bolt = twin_graphs
    for source in (embedded, bolt):
        with pytest.raises(
            GraphDataError, match=r"nodes\[1\]: unknown node id 5 \(no :FbNode node has id = 5\)"
        ):
            source.pack_blob([ID_OFFSET, 5], ["feat"], OPTIONS)
        with pytest.raises(
            GraphDataError,
            match=r"options\.direction: expected one of 'out', 'in', 'both', got str 'up'",
        ):
            source.sample_blob([ID_OFFSET], [2], ["feat"], {**OPTIONS, "direction": "up"})


def test_describe_over_cypher_matches_the_procedure(twin_graphs):
    embedded, bolt = twin_graphs
    for props, opts in (
        (["feat", "w"], OPTIONS),
        (["feat", "name"], {**OPTIONS, "label_property": "cls", "dtype": "float64"}),
        (
            ["feat"],
            {**OPTIONS, "label_property": "cls", "fanouts": [3, 2], "low_degree": "resample"},
        ),
        ([], {"label_property": "w"}),
    ):
        expected = embedded.describe(props, opts)
        assert bolt.describe(props, opts) == expected
    info = bolt.describe(["feat", "w"], {**OPTIONS, "label_property": "cls", "fanouts": [2]})
    assert (
        info["num_classes"] == 3 and info["feature_width"] == 5
    )  # cls = i % 3; feat has 4 values, w 1
    assert [s["name"] for s in info["sections"]] == [
        "ids_0",
        "features_0",
        "ids_1",
        "features_1",
        "mask_1",
        "labels",
    ]
    top_w = max(node["w"] for node in _graph_data()[0])  # w in -5..5; negative values are no class
    assert bolt.describe([], {"label_property": "w"})["num_classes"] == (
        top_w + 1 if top_w >= 0 else None
    )


def test_describe_errors_over_cypher_match_the_procedure(twin_graphs):
    embedded, bolt = twin_graphs
    for source in (embedded, bolt):
        with pytest.raises(
            GraphDataError,
            match=r"properties: expected a node having all of \['feat', 'nope'\] and "
            r"options.id_property 'id', got no :FbNode node with all of them",
        ):
            source.describe(["feat", "nope"], OPTIONS)
        with pytest.raises(
            GraphDataError,
            match=r"property 'name' \(options.label_property\): expected an integer "
            r"class, got str 'n\d+'",
        ):
            source.describe(["feat"], {**OPTIONS, "label_property": "name"})
        with pytest.raises(
            GraphDataError, match=r"options.fanouts\[0\]: expected an integer >= 1, got int 0"
        ):
            source.describe(["feat"], {**OPTIONS, "fanouts": [0]})


def test_pipeline_and_inference_over_bolt_match_embedded(twin_graphs):
    import numpy as np

    from memgraph_tf.client import GraphSAGE, predict_and_write, sample_dataset
    from memgraph_tf.client.inference import predict

    embedded, bolt = twin_graphs
    ids = [ID_OFFSET + i for i in range(N)]
    a = list(
        sample_dataset(embedded, ids, [3, 2], ["feat", "w"], options=OPTIONS, batch_size=8, seed=4)
    )
    b = list(
        sample_dataset(bolt, ids, [3, 2], ["feat", "w"], options=OPTIONS, batch_size=8, seed=4)
    )
    assert len(a) == len(b) == 4
    for x, y in zip(a, b):
        for key in x:
            np.testing.assert_array_equal(x[key].numpy(), y[key].numpy())

    model = GraphSAGE([3, 2], feature_dim=5, num_classes=3, hidden_units=4).ensure_built()
    expected = predict(
        model, embedded, ids, properties=["feat", "w"], options=OPTIONS, seed=0, batch_size=8
    )
    written = predict_and_write(
        model,
        bolt,
        ids,
        properties=["feat", "w"],
        options=OPTIONS,
        seed=0,
        batch_size=8,
        chunk_size=12,
        property_name="pred",
        progress=False,
    )
    assert written == N
    rows = bolt.read(
        f"MATCH (n:{LABEL}) RETURN n.id AS id, n.pred AS pred, n.pred_score AS score, "
        f"n.pred_version AS version ORDER BY id"
    )
    assert [r["pred"] for r in rows] != [None] * N
    by_id = {r["id"]: r for r in rows}
    # samples are keyed by (seed, node), not by chunk: the chunked writes equal one call over all
    # ids
    assert [by_id[i]["pred"] for i in ids] == expected.classes.tolist()
    np.testing.assert_allclose([by_id[i]["score"] for i in ids], expected.scores, rtol=1e-6)
    assert {by_id[i]["version"] for i in ids} == {0}


def test_missing_procedures_detected_once(arcadedb_server, twin_graphs, caplog):
    import logging

    from memgraph_tf.client import connect

    with connect(arcadedb_server.uri, auth=arcadedb_server.auth, database="g") as source:
        with caplog.at_level(logging.INFO, logger="memgraph_tf.client.sources"):
            first = source.pack_blob([ID_OFFSET], ["feat"], OPTIONS)
            second = source.sample_blob([ID_OFFSET], [2], ["feat"], {**OPTIONS, "seed": 1})
        assert first == twin_graphs[0].pack_blob([ID_OFFSET], ["feat"], OPTIONS)
        assert second == twin_graphs[0].sample_blob(
            [ID_OFFSET], [2], ["feat"], {**OPTIONS, "seed": 1}
        )
        notes = [
            r.getMessage() for r in caplog.records if "procedures are missing" in r.getMessage()
        ]
        assert len(notes) == 1 and "packing blobs on the client from plain Cypher" in notes[0]


@pytest.fixture(scope="module")
def mixed_label_graphs(bolt_source):
    """Seeds are :FbPaper nodes; some of their neighbours are :FbAuthor nodes (outside
    options.label). A second component has an author whose id equals a paper's id (5 -> author 6,
    paper 6)."""
    papers = [{"id": i, "f": [float(i), -float(i)]} for i in (1, 2, 3, 4, 5, 6)]
    authors = [{"id": i, "f": [0.5 * i, 1.0]} for i in (100, 101, 6)]
    edges = [
        (("P", 1), ("P", 2)),
        (("P", 1), ("A", 100)),
        (("P", 2), ("A", 100)),
        (("A", 100), ("P", 3)),
        (("A", 101), ("P", 4)),
        (("P", 3), ("A", 101)),
        (("P", 5), ("A", 6)),
    ]
    embedded = EmbeddedGraph()
    internal = {}
    for kind, label, rows in (("P", "FbPaper", papers), ("A", "FbAuthor", authors)):
        for props in rows:
            internal[(kind, props["id"])] = embedded.add_node([label], props)
    for a, b in edges:
        embedded.add_edge(internal[a], internal[b], "WROTE")
    bolt_source.write("MATCH (n:FbPaper) DETACH DELETE n")
    bolt_source.write("MATCH (n:FbAuthor) DETACH DELETE n")
    bolt_source.write("UNWIND $rows AS r CREATE (:FbPaper {id: r.id, f: r.f})", {"rows": papers})
    bolt_source.write("UNWIND $rows AS r CREATE (:FbAuthor {id: r.id, f: r.f})", {"rows": authors})
    label = {"P": "FbPaper", "A": "FbAuthor"}
    for (ka, a), (kb, b) in edges:
        bolt_source.write(
            f"MATCH (x:{label[ka]} {{id: $a}}), (y:{label[kb]} {{id: $b}}) CREATE "
            "(x)-[:WROTE]->(y)",
            {"a": a, "b": b},
        )
    return EmbeddedSource(embedded), bolt_source


def test_neighbours_outside_the_label_same_bytes(mixed_label_graphs):
    embedded, bolt = mixed_label_graphs
    opts = {"id_property": "id", "label": "FbPaper", "seed": 2}
    for direction in ("out", "both"):
        o = {**opts, "direction": direction}
        expected = embedded.sample_blob([1, 2, 4], [2, 2], ["f"], o)
        assert bolt.sample_blob([1, 2, 4], [2, 2], ["f"], o) == expected
    # two hops out of paper 1 go through author 100 (no :FbPaper label) to paper 3
    sections = blob.unpack(
        embedded.sample_blob([1], [3, 3], ["f"], {**opts, "direction": "out", "replace": True})
    )
    assert 100 in sections["ids_1"] and 3 in sections["ids_2"]
    assert bolt.sample_blob(
        [1], [3, 3], ["f"], {**opts, "direction": "out", "replace": True}
    ) == embedded.sample_blob([1], [3, 3], ["f"], {**opts, "direction": "out", "replace": True})


def test_one_id_on_two_met_nodes_is_an_error_on_both(mixed_label_graphs):
    embedded, bolt = mixed_label_graphs
    opts = {"id_property": "id", "label": "FbPaper", "seed": 2, "direction": "out"}
    for source in (embedded, bolt):
        with pytest.raises(
            GraphDataError,
            match=r"options\.id_property: expected unique ids, got id = 6 on the nodes with "
            r"internal ids",
        ):
            source.sample_blob([6, 5], [2], ["f"], opts)


def test_internal_ids_without_id_property(twin_graphs):
    import numpy as np

    _, bolt = twin_graphs
    rows = bolt.read(
        f"MATCH (n:{LABEL}) RETURN id(n) AS internal, n.feat AS feat, n.id AS id ORDER BY n.id"
    )
    internal = [r["internal"] for r in rows]
    ids = [internal[7], internal[0], internal[7]]
    packed = blob.unpack(bolt.pack_blob(ids, ["feat"]))
    assert packed["ids"].tolist() == ids
    np.testing.assert_allclose(
        packed["features"], [rows[7]["feat"], rows[0]["feat"], rows[7]["feat"]], rtol=1e-6
    )
    edges = bolt.read(
        f"MATCH (a:{LABEL})-[:CITES|LINKS]->(b:{LABEL}) RETURN id(a) AS a, id(b) AS b"
    )
    out = {i: {e["b"] for e in edges if e["a"] == i} for i in internal}
    seeds = [internal[4], internal[N - 1]]  # node 4 has out-edges; node N-1 has none
    sampled = blob.unpack(bolt.sample_blob(seeds, [3], ["feat"], {"seed": 1, "direction": "out"}))
    first = [int(i) for i in sampled["ids_1"][0] if i >= 0]
    assert first and set(first) <= out[internal[4]]
    assert sampled["ids_1"][1].tolist() == [-1, -1, -1] and not out[internal[N - 1]]
    with pytest.raises(
        GraphDataError, match=r"nodes\[0\]: unknown node id -5 \(no node has that internal id\)"
    ):
        bolt.pack_blob([-5], ["feat"])
