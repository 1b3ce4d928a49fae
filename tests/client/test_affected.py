"""The affected set of a change-log page (memgraph_tf.batch.affected): hand-checked sets on
small graphs (hop 2, directions, typed steps), and the property the refresh rests on -- every node
whose sampled neighbourhood blob differs after the changes is in the set -- over the embedded
graph; the same set from the Cypher walk over a real Bolt server (ArcadeDB)."""

from __future__ import annotations

import random

import pytest

from memgraph_tf.batch.affected import (
    CypherWalker,
    EmbeddedWalker,
    WalkSpec,
    affected_nodes,
    start_positions,
)
from memgraph_tf.client import EmbeddedSource
from memgraph_tf.client.change_log import Change
from memgraph_tf.embedded import EmbeddedGraph
from memgraph_tf.serving.bundle import SamplingSpec
from memgraph_tf.serving.neighbourhoods import NeighbourhoodFetcher


def _affected(source, spec, changes, walker=None):
    walker = walker or EmbeddedWalker(source)
    ids = set()
    for c in changes:
        ids.update([c.element_id] if c.entity == "node" else [c.start_id, c.end_id])
    starts = start_positions(spec, changes, walker.labels(sorted(ids)))
    return affected_nodes(spec, starts, walker)


def _rel(kind, eid, a, b, rel_type="R"):
    return Change(kind, "relationship", eid, rel_type=rel_type, start_id=a, end_id=b)


def _chain(n=6):
    """0 -> 1 -> 2 -> ... -> n-1 (type R), a feature ``f`` on each node."""
    graph = EmbeddedGraph()
    for i in range(n):
        graph.add_node(["N"], {"f": [float(i)]})
    for i in range(n - 1):
        graph.add_edge(i, i + 1, "R")
    return EmbeddedSource(graph)


@pytest.mark.parametrize(
    ("direction", "want_rel", "want_feature"),
    [
        # a new edge 3 -> 5 changes 3's out-list (read at hops 0..1: seeds 2 and 3) and 5's
        # in-list; a feature change at 3 reaches seeds up to 2 hops before it
        ("out", {2, 3}, {1, 2, 3}),
        ("in", {5}, {3, 4, 5}),
        ("both", {2, 3, 4, 5}, {1, 2, 3, 4, 5}),
    ],
)
def test_hop_two_chain_walked_backwards(direction, want_rel, want_feature):
    source = _chain()
    spec = WalkSpec.from_sampling(SamplingSpec((1, 1), ("f",), {"direction": direction}))
    source.graph.add_edge(3, 5, "R")
    assert _affected(source, spec, [_rel("created", 9, 3, 5)]) == want_rel
    update = Change("updated", "node", 3, labels=("N",), properties=("f",))
    assert _affected(source, spec, [update]) == want_feature
    # properties the model does not read (its own predictions) affect nothing
    own = Change("updated", "node", 3, labels=("N",), properties=("predicted_class",))
    assert _affected(source, spec, [own]) == set()


def test_edge_types_outside_the_spec_affect_nothing():
    source = _chain()
    spec = WalkSpec.from_sampling(SamplingSpec((2, 2), ("f",), {"edge_types": ["R"]}))
    source.graph.add_edge(1, 4, "OTHER")
    assert _affected(source, spec, [_rel("created", 9, 1, 4, "OTHER")]) == set()
    assert _affected(source, spec, [_rel("created", 9, 1, 4, "R")]) == {0, 1, 2, 3, 4, 5}


def _shop():
    """Users 0-2, products 3-5, categories 6-7: u0 bought p3, p4; u1 bought p4; u2 bought p5;
    p3, p4 in c6; p5 in c7."""
    graph = EmbeddedGraph()
    for label in ["User"] * 3 + ["Product"] * 3 + ["Category"] * 2:
        graph.add_node([label], {"f": [1.0], "name": "x"})
    for a, b in [(0, 3), (0, 4), (1, 4), (2, 5)]:
        graph.add_edge(a, b, "BOUGHT")
    for a, b in [(3, 6), (4, 6), (5, 7)]:
        graph.add_edge(a, b, "IN")
    return EmbeddedSource(graph)


TYPED = {
    "seed_label": "User",
    "num_neighbors": {
        "(:User)-[:BOUGHT]->(:Product)": [2, 0],
        "(:Product)-[:IN]->(:Category)": [0, 1],
    },
    "properties": {"User": ["f"], "Product": ["f"], "Category": ["f"]},
}


def test_typed_steps_walked_backwards_through_their_labels():
    source = _shop()
    spec = WalkSpec.from_sampling(SamplingSpec((), (), {"seed": 1}, TYPED))
    # p5 -> c6: p5's IN list (read at hop 1) changed: the users who bought p5
    source.graph.add_edge(5, 6, "IN")
    assert _affected(source, spec, [_rel("created", 20, 5, 6, "IN")]) == {2}
    # c6's features: its products' buyers (hop 2), whatever the new edge
    feature = Change("updated", "node", 6, labels=("Category",), properties=("f",))
    assert _affected(source, spec, [feature]) == {0, 1, 2}
    # a property the model does not read on a category, and an edge type it never walks
    assert _affected(source, spec, [Change("updated", "node", 6, properties=("name",))]) == set()
    source.graph.add_edge(0, 1, "FOLLOWS")
    assert _affected(source, spec, [_rel("created", 21, 0, 1, "FOLLOWS")]) == set()
    # a label change (no property named) may move a node between tables: every table it could
    # sit in is a start
    label_change = Change("updated", "node", 4, labels=("Product",))
    assert _affected(source, spec, [label_change]) == {0, 1}
    # so is a label set beside a property the model does not read (one logged update names both)
    both = Change("updated", "node", 4, labels=("Product",), properties=("name",),
                  changed_labels=("Product",))  # fmt: skip
    assert _affected(source, spec, [both]) == {0, 1}


def _random_graph(rng, n=60, m=150, types=("R", "S")):
    graph = EmbeddedGraph()
    for _ in range(n):
        graph.add_node(["N"], {"f": [rng.random()]})
    edges = {}
    for _ in range(m):
        a, b, t = rng.randrange(n), rng.randrange(n), rng.choice(types)
        edges[graph.add_edge(a, b, t)] = (a, b, t)
    return EmbeddedSource(graph), edges


def _blobs(source, sampling, ids):
    return dict(zip(ids, NeighbourhoodFetcher(source, serialize=False).fetch(ids, sampling)))


@pytest.mark.parametrize(
    "options",
    [
        {"seed": 5, "direction": "out"},
        {"seed": 6, "direction": "both", "edge_types": ["R"]},
        {"seed": 7, "direction": "in", "replace": True},
    ],
)
def test_every_node_whose_neighbourhood_changed_is_affected(options):
    rng = random.Random(str(options))
    source, edges = _random_graph(rng)
    graph = source.graph
    sampling = SamplingSpec((3, 2), ("f",), options)
    spec = WalkSpec.from_sampling(sampling)
    ids = graph.nodes()
    before = _blobs(source, sampling, ids)
    changes = []
    for _ in range(4):
        a, b = rng.randrange(len(ids)), rng.randrange(len(ids))
        t = rng.choice(["R", "S"])
        changes.append(_rel("created", graph.add_edge(a, b, t), a, b, t))
    for eid in rng.sample(sorted(edges), 2):
        graph.delete_edge(eid)
        a, b, t = edges[eid]
        changes.append(_rel("deleted", eid, a, b, t))
    graph.set_property(7, "f", [9.0])
    changes.append(Change("updated", "node", 7, labels=("N",), properties=("f",)))
    after = _blobs(source, sampling, ids)
    changed = {i for i in ids if before[i] != after[i]}
    affected = _affected(source, spec, changes)
    assert changed, "the changes must change some neighbourhood, or the test checks nothing"
    assert changed <= affected
    assert len(affected) < len(ids)


@pytest.mark.arcadedb
def test_the_cypher_walk_over_bolt_finds_the_embedded_walks_set(bolt_source):
    """The shop graph under labels of its own on ArcadeDB: the same affected users (by key) as
    the walk over the embedded graph, for a relationship and a feature change."""
    labels = ["AfUser"] * 3 + ["AfProduct"] * 3 + ["AfCategory"] * 2
    bolt_source.write("MATCH (n) WHERE n:AfUser OR n:AfProduct OR n:AfCategory DETACH DELETE n")
    ids = {}
    for k, label in enumerate(labels):
        [row] = bolt_source.write(
            f"CREATE (n:{label} {{k: $k, f: [1.0]}}) RETURN id(n) AS i", {"k": k}
        )
        ids[k] = row["i"]
    link = (
        "MATCH (a), (b) WHERE id(a) = $a AND id(b) = $b CREATE (a)-[r:{t}]->(b) RETURN id(r) AS r"
    )
    for (a, b), t in [(p, "BOUGHT") for p in [(0, 3), (0, 4), (1, 4), (2, 5)]] + [
        (p, "IN") for p in [(3, 6), (4, 6), (5, 7)]
    ]:
        bolt_source.write(link.format(t=t), {"a": ids[a], "b": ids[b]})
    typed = {
        "seed_label": "AfUser",
        "num_neighbors": {
            "(:AfUser)-[:BOUGHT]->(:AfProduct)": [2, 0],
            "(:AfProduct)-[:IN]->(:AfCategory)": [0, 1],
        },
        "properties": {"AfUser": ["f"], "AfProduct": ["f"], "AfCategory": ["f"]},
    }
    spec = WalkSpec.from_sampling(SamplingSpec((), (), {"seed": 1}, typed))
    [row] = bolt_source.write(link.format(t="IN"), {"a": ids[5], "b": ids[6]})
    walker = CypherWalker(bolt_source)
    key_of = {v: k for k, v in ids.items()}
    created = _rel("created", row["r"], ids[5], ids[6], "IN")
    assert {key_of[i] for i in _affected(bolt_source, spec, [created], walker)} == {2}
    feature = Change("updated", "node", ids[6], labels=("AfCategory",), properties=("f",))
    assert {key_of[i] for i in _affected(bolt_source, spec, [feature], walker)} == {0, 1, 2}
    assert walker.keys([ids[2], ids[6]], "k") == {ids[2]: 2, ids[6]: 6}


def test_every_typed_seed_whose_neighbourhood_changed_is_affected():
    """The property on a random typed graph: users -BOUGHT-> products -IN-> categories, users
    -FOLLOWS-> users, with relationship insertions and deletions of each type and a product's
    feature update."""
    rng = random.Random(3)
    graph = EmbeddedGraph()
    users = [graph.add_node(["User"], {"f": [rng.random()]}) for _ in range(40)]
    products = [graph.add_node(["Product"], {"f": [rng.random()]}) for _ in range(30)]
    cats = [graph.add_node(["Category"], {"f": [rng.random()]}) for _ in range(6)]
    pools = {"BOUGHT": (users, products), "IN": (products, cats), "FOLLOWS": (users, users)}
    edges = {}
    for t, (left, right) in pools.items():
        for _ in range(60):
            a, b = rng.choice(left), rng.choice(right)
            edges[graph.add_edge(a, b, t)] = (a, b, t)
    source = EmbeddedSource(graph)
    typed = {
        "seed_label": "User",
        "num_neighbors": {
            "(:User)-[:BOUGHT]->(:Product)": [2, 0],
            "(:User)-[:FOLLOWS]-(:User)": [2, 2],
            "(:Product)-[:IN]->(:Category)": [0, 1],
        },
        "properties": {"User": ["f"], "Product": ["f"], "Category": ["f"]},
    }
    sampling = SamplingSpec((), (), {"seed": 2}, typed)
    spec = WalkSpec.from_sampling(sampling)
    before = _blobs(source, sampling, users)
    changes = []
    bought = sorted({b for _, b, t in edges.values() if t == "BOUGHT"})  # products at hop 1
    for t, (left, right) in pools.items():
        a, b = rng.choice(bought if t == "IN" else left), rng.choice(right)
        changes.append(_rel("created", graph.add_edge(a, b, t), a, b, t))
    for eid in rng.sample(sorted(edges), 4):
        graph.delete_edge(eid)
        changes.append(_rel("deleted", eid, *edges[eid]))
    graph.set_property(bought[3], "f", [5.0])
    changes.append(Change("updated", "node", bought[3], labels=("Product",), properties=("f",)))
    after = _blobs(source, sampling, users)
    changed = {u for u in users if before[u] != after[u]}
    affected = _affected(source, spec, changes)
    assert changed and changed <= affected <= set(users)
    assert len(affected) < len(users)
