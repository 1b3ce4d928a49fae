"""Typed sampling over real Bolt (ArcadeDB, which has no tf_features procedures: the client-side
sampler over plain Cypher runs the procedure's own code) gives the embedded query module's exact
bytes for a fixed seed, the same schema and the same errors."""

from __future__ import annotations

import pytest

from memgraph_tf.client import EmbeddedSource
from memgraph_tf.client.loaders import load_typed_graph
from memgraph_tf.errors import GraphDataError
from memgraph_tf.typed_datasets import shop_graph, typed_embedded_graph

pytestmark = pytest.mark.arcadedb

NN = {
    "(:User)-[:BOUGHT]->(:Product)": [3, 2],
    "(:User)-[:FOLLOWS]-(:User)": [2, 2],
    "(:Product)-[:IN]->(:Category)": [0, 1],
    "(:Product)<-[:BOUGHT]-(:User)": [0, 2],
}
PROPS = {"User": ["features"], "Product": ["features"], "Category": ["features"]}
OPTS = {"label": "User", "id_property": "id", "seed": 3, "label_property": "label"}


@pytest.fixture(scope="module")
def twin_shops(bolt_source):
    graph = shop_graph(200, num_products=60, num_categories=4, num_classes=2, follows_per_user=3)
    embedded, _ = typed_embedded_graph(graph)
    counts = load_typed_graph(bolt_source, graph, batch_size=300, replace=True)
    assert counts == {
        "nodes": sum(ns.size for ns in graph.node_sets.values()),
        "edges": sum(es.size for es in graph.edge_sets.values()),
    }
    return EmbeddedSource(embedded), bolt_source


def test_the_loader_writes_the_properties_and_refuses_to_mix_graphs(twin_shops):
    _, bolt = twin_shops
    graph = shop_graph(200, num_products=60, num_categories=4, num_classes=2, follows_per_user=3)
    rows = bolt.read(
        "MATCH (u:User) WHERE u.id IN [0, 7, 199] "
        "RETURN u.id AS id, u.label AS label, u.split AS split, u.features AS features"
    )
    assert len(rows) == 3
    for row in rows:
        i = row["id"]
        assert (row["label"], row["split"]) == (int(graph.labels[i]), graph.split[i])
        assert row["features"] == graph.node_sets["User"].features[i].tolist()
    # the split property as training reads it (train_typed_graphsage without train_ids)
    from memgraph_tf.client.typed_graphsage import split_node_ids

    for split in ("train", "val"):
        assert split_node_ids(bolt, "User", split, options={"id_property": "id"}) == graph.ids(
            split
        )
    [product] = bolt.read("MATCH (p:Product {id: 5}) RETURN keys(p) AS k")
    assert sorted(product["k"]) == ["features", "id"]  # class and split only on the target label
    with pytest.raises(
        ValueError, match=r"label 'User': expected no existing :User nodes, got 200"
    ):
        load_typed_graph(bolt, graph)
    [row] = bolt.read("MATCH (n:User) RETURN count(n) AS c")
    assert row["c"] == 200  # refused before writing anything
    with pytest.raises(ValueError, match=r"batch_size: expected an integer >= 1, got 0"):
        load_typed_graph(bolt, graph, batch_size=0, replace=True)


def test_the_same_typed_blobs_byte_for_byte(twin_shops):
    embedded, bolt = twin_shops
    seeds = [0, 5, 7, 199, 5]
    for props, opts in (
        (PROPS, OPTS),
        ({"Product": ["features"]}, {**OPTS, "seed": 4, "dtype": "float64"}),
        (PROPS, {**OPTS, "layout": "compact"}),
        ({"User": ["features"], "Product": ["features"]}, {**OPTS, "layout": "sparse"}),
    ):
        expected = embedded.sample_typed(seeds, NN, props, opts)
        assert bolt.sample_typed(seeds, NN, props, opts) == expected
    assert bolt.sample_typed(seeds, NN, PROPS, {**OPTS, "seed": 9}) != bolt.sample_typed(
        seeds, NN, PROPS, OPTS
    )


def _reversed(mapping):
    return dict(reversed(mapping.items()))


def test_any_order_of_the_maps_gives_the_same_bytes_on_both(twin_shops):
    """Memgraph hands a procedure every argument map with its keys sorted
    (``src/communication/bolt/v1/value.hpp`` ``map_t``, ``src/query/procedure/
    mg_procedure_impl.hpp`` ``mgp_map::map_type``): the embedded runtime does too, the client-side
    procedures get their maps sorted, and the steps are numbered in the patterns' sorted order;
    so ``num_neighbors``, ``properties`` and ``options`` in any order give the bytes of the sorted
    maps, the same over Bolt and embedded (``sample_typed`` and ``sample_pairs``, per role)."""
    embedded, bolt = twin_shops
    seeds = [0, 5, 199]
    ordered = {k: NN[k] for k in sorted(NN)}
    assert list(NN) != list(ordered) != list(_reversed(NN))
    expected = embedded.sample_typed(seeds, ordered, PROPS, OPTS)
    for nn, props, opts in (
        (NN, PROPS, OPTS),
        (_reversed(NN), _reversed(PROPS), _reversed(OPTS)),
    ):
        assert embedded.sample_typed(seeds, nn, props, opts) == expected
        assert bolt.sample_typed(seeds, nn, props, opts) == expected
    bought = "(:User)-[:BOUGHT]->(:Product)"
    role_nn = {
        "source": {"(:User)-[:FOLLOWS]-(:User)": [2], bought: [3]},
        "target": {"(:Product)<-[:BOUGHT]-(:User)": [2], "(:Product)-[:IN]->(:Category)": [1]},
    }
    pair_opts = {"source_label": "User", "target_label": "Product", "id_property": "id", "seed": 3}
    sources, targets = [0, 5, 7], [1, 2, 3]
    want = embedded.sample_pairs(
        sources,
        targets,
        {r: dict(sorted(nn.items())) for r, nn in role_nn.items()},
        PROPS,
        pair_opts,
    )
    for nn in (role_nn, {r: _reversed(role_nn[r]) for r in ("target", "source")}):
        for source in (embedded, bolt):
            assert source.sample_pairs(sources, targets, nn, PROPS, _reversed(pair_opts)) == want


def test_the_same_schema(twin_shops):
    embedded, bolt = twin_shops
    # the ArcadeDB server is shared by the suite's modules: other modules' labels are there too
    shop = set(PROPS)
    full = bolt.schema(PROPS)
    report = {
        "labels": [e for e in full["labels"] if e["label"] in shop],
        "relationships": [
            r for r in full["relationships"] if r["source"] in shop and r["target"] in shop
        ],
    }
    assert report == embedded.schema(PROPS)
    assert {(r["source"], r["type"], r["target"]) for r in report["relationships"]} == {
        ("User", "BOUGHT", "Product"),
        ("Product", "IN", "Category"),
        ("User", "FOLLOWS", "User"),
    }


@pytest.mark.parametrize(
    ("num_neighbors", "properties", "message"),
    [
        (
            {"(:User)-[:RATED]->(:Product)": [2]},
            None,
            r"num_neighbors: \(:User\)-\[:RATED\]->\(:Product\): the graph has no such",
        ),
        (
            {"(:User)-[:BOUGHT]->(:Product)": [2]},
            {"Shop": ["features"]},
            r"properties: label 'Shop' has no slots in this sampling spec",
        ),
    ],
)
def test_the_same_errors(twin_shops, num_neighbors, properties, message):
    embedded, bolt = twin_shops
    for source in (embedded, bolt):
        with pytest.raises(GraphDataError, match=message):
            source.sample_typed([1, 2], num_neighbors, properties, OPTS)
