"""Weighted and timed edge steps over real Bolt (ArcadeDB, which has no tf_features procedures:
the client samples over plain Cypher with the procedure's own code) give the embedded query
module's exact bytes for a fixed seed, and the same errors for a bad weight."""

from __future__ import annotations

import random

import pytest

from memgraph_tf.client import EmbeddedSource
from memgraph_tf.embedded import EmbeddedGraph
from memgraph_tf.errors import GraphDataError

pytestmark = pytest.mark.arcadedb

N = 40
ID_OFFSET = 500  # ids differ from embedded internal ids: the id_property is what both sides share
NN = {
    "(:WAccount)-[:WPAYS {weight: amount}]->(:WAccount)": [3, 2],
    "(:WAccount)-[:WPAYS {weight: amount}]-(:WAccount)": [2, 1],
    "(:WAccount)<-[:WPAYS]-(:WAccount)": [1, 1],
    "(:WAccount)-[:WOWNS {weight: share}]->(:WShop)": [2, 0],
}
PROPS = {"WAccount": ["features"], "WShop": ["features"]}
OPTS = {"label": "WAccount", "id_property": "id", "seed": 5}


def graph_data():
    rng = random.Random(20261129)
    accounts = [
        {"id": ID_OFFSET + i, "features": [rng.uniform(-1, 1)], "born": rng.randint(0, 100)}
        for i in range(N)
    ]
    shops = [{"id": ID_OFFSET + i, "features": [float(i)]} for i in range(6)]
    pays = []
    for i in range(N - 1):  # the last account is isolated
        for j in rng.sample(range(N), rng.randint(0, 6)):
            amount = rng.choice([rng.uniform(0, 100), rng.randint(0, 50), 0.0])
            pays.append(
                {"a": ID_OFFSET + i, "b": ID_OFFSET + j, "w": amount, "ts": rng.randint(0, 100)}
            )
    pays += [  # a self-loop, parallel relationships, and both ways between two accounts
        {"a": ID_OFFSET + 3, "b": ID_OFFSET + 3, "w": 2.5, "ts": 10},
        {"a": ID_OFFSET + 4, "b": ID_OFFSET + 5, "w": 1, "ts": 90},
        {"a": ID_OFFSET + 4, "b": ID_OFFSET + 5, "w": 0.25, "ts": 20},
        {"a": ID_OFFSET + 5, "b": ID_OFFSET + 4, "w": 7, "ts": 50},
    ]
    owns = [
        {"a": ID_OFFSET + i, "b": ID_OFFSET + j, "w": rng.uniform(0.1, 1), "ts": 0}
        for i in range(N)
        for j in rng.sample(range(6), rng.randint(0, 4))
    ]
    return accounts, shops, pays, owns


@pytest.fixture(scope="module")
def twins(bolt_source):
    accounts, shops, pays, owns = graph_data()
    g = EmbeddedGraph()
    ids = {("WAccount", p["id"]): g.add_node(["WAccount"], p) for p in accounts}
    ids.update({("WShop", p["id"]): g.add_node(["WShop"], p) for p in shops})
    for rows, rel, right, prop in (
        (pays, "WPAYS", "WAccount", "amount"),
        (owns, "WOWNS", "WShop", "share"),
    ):
        for r in rows:
            g.add_edge(
                ids[("WAccount", r["a"])], ids[(right, r["b"])], rel, {prop: r["w"], "ts": r["ts"]}
            )
    bolt_source.write("MATCH (n:WAccount) DETACH DELETE n")
    bolt_source.write("MATCH (n:WShop) DETACH DELETE n")
    for label, rows in (("WAccount", accounts), ("WShop", shops)):
        bolt_source.write(
            f"UNWIND $rows AS r CREATE (:{label} {{id: r.id, features: r.features, born: r.born}})",
            {"rows": rows},
        )
    for rows, rel, right, prop in (
        (pays, "WPAYS", "WAccount", "amount"),
        (owns, "WOWNS", "WShop", "share"),
    ):
        bolt_source.write(
            f"UNWIND $rows AS r MATCH (a:WAccount {{id: r.a}}), (b:{right} {{id: r.b}}) "
            f"CREATE (a)-[:{rel} {{{prop}: r.w, ts: r.ts}}]->(b)",
            {"rows": rows},
        )
    yield g, EmbeddedSource(g), bolt_source
    for label in ("WAccount", "WShop"):  # the server is shared by modules
        bolt_source.write(f"MATCH (n:{label}) DETACH DELETE n")


def test_the_same_weighted_blobs_byte_for_byte(twins):
    _, embedded, bolt = twins
    seeds = [ID_OFFSET + i for i in (0, 3, 4, 5, 17, N - 1, 4)]
    for opts in (OPTS, {**OPTS, "seed": 6, "layout": "compact"}):
        expected = embedded.sample_typed(seeds, NN, PROPS, opts)
        assert bolt.sample_typed(seeds, NN, PROPS, opts) == expected
    assert bolt.sample_typed(seeds, NN, PROPS, {**OPTS, "seed": 9}) != bolt.sample_typed(
        seeds, NN, PROPS, OPTS
    )


TIMED = {
    "(:WAccount)-[:WPAYS {time: ts}]-(:WAccount)": [3, 2],
    "(:WAccount)<-[:WPAYS {time: ts}]-(:WAccount)": [2, 2],
    "(:WAccount)-[:WOWNS {time: ts}]->(:WShop)": [1, 0],
}


def test_the_same_timed_blobs_byte_for_byte(twins):
    _, embedded, bolt = twins
    seeds = [ID_OFFSET + i for i in (0, 3, 4, 5, 17, N - 1, 4)]
    for order in ("uniform", "most_recent"):
        opts = {**OPTS, "seed_time": "born", "time_order": order}
        expected = embedded.sample_typed(seeds, TIMED, PROPS, opts)
        assert bolt.sample_typed(seeds, TIMED, PROPS, opts) == expected
    uniform = {**OPTS, "seed_time": "born"}
    recent = {**uniform, "time_order": "most_recent"}
    assert bolt.sample_typed(seeds, TIMED, PROPS, uniform) != bolt.sample_typed(
        seeds, TIMED, PROPS, recent
    )


def test_the_same_error_for_a_bad_weight(twins):
    g, embedded, bolt = twins
    bolt.write(
        f"MATCH (a:WAccount {{id: {ID_OFFSET + 1}}}), (b:WAccount {{id: {ID_OFFSET + 2}}}) "
        "CREATE (a)-[:WBAD {amount: 'ten'}]->(b)"
    )
    [a] = g.find_nodes("WAccount", "id", ID_OFFSET + 1)
    [b] = g.find_nodes("WAccount", "id", ID_OFFSET + 2)
    g.add_edge(a, b, "WBAD", {"amount": "ten"})
    message = (
        rf"relationship \(:WAccount \{{id: {ID_OFFSET + 1}\}}\)-\[:WBAD\]->"
        rf"\(:WAccount \{{id: {ID_OFFSET + 2}\}}\) property 'amount': expected a number "
        r"\(the step's weight\), got str 'ten'"
    )
    step = {"(:WAccount)-[:WBAD {weight: amount}]-(:WAccount)": [2]}
    for source in (embedded, bolt):
        with pytest.raises(GraphDataError, match=message):
            source.sample_typed([ID_OFFSET + 2], step, None, OPTS)


REPLACED = {
    "(:WAccount)-[:WPAYS {weight: amount, replace: true}]->(:WAccount)": [3, 2],
    "(:WAccount)-[:WPAYS {weight: amount}]-(:WAccount)": [2, 1],
    "(:WAccount)-[:WOWNS {weight: share, replace: true}]->(:WShop)": [2, 0],
}


def test_the_same_blobs_with_replacement_byte_for_byte(twins):
    _, embedded, bolt = twins
    seeds = [ID_OFFSET + i for i in (0, 3, 4, 5, 17, N - 1, 4)]
    for opts in (OPTS, {**OPTS, "seed": 6, "layout": "compact"}):
        expected = embedded.sample_typed(seeds, REPLACED, PROPS, opts)
        assert bolt.sample_typed(seeds, REPLACED, PROPS, opts) == expected
    without = {k.replace(", replace: true", ""): v for k, v in REPLACED.items()}
    assert bolt.sample_typed(seeds, REPLACED, PROPS, OPTS) != bolt.sample_typed(
        seeds, without, PROPS, OPTS
    )


TIMED_PAIRS = {"(:WAccount)-[:WPAYS {time: ts}]-(:WAccount)": [3, 2]}
PAIR_PROPS = {"WAccount": ["features"]}
PAIR_OPTS = {"source_label": "WAccount", "id_property": "id", "seed": 8, "negatives": 2}


def test_the_same_point_in_time_pairs_byte_for_byte(twins):
    """Neighbourhoods as of each pair's time and negatives among the accounts active by then,
    over Bolt as on the embedded graph; the time read from the pair's relationships or given."""
    _, embedded, bolt = twins
    pays = graph_data()[2]
    late = [(r["a"], r["b"]) for r in pays if r["a"] != r["b"] and r["ts"] >= 60][:10]
    sources, targets = [a for a, _ in late], [b for _, b in late]
    times = [
        min(r["ts"] for r in pays if {r["a"], r["b"]} == {a, b}) for a, b in zip(sources, targets)
    ]
    for opts in (
        {**PAIR_OPTS, "pair_time": "ts"},
        {**PAIR_OPTS, "pair_times": times, "time_order": "most_recent"},
    ):
        expected = embedded.sample_pairs(sources, targets, TIMED_PAIRS, PAIR_PROPS, opts)
        assert bolt.sample_pairs(sources, targets, TIMED_PAIRS, PAIR_PROPS, opts) == expected
    by_prop = bolt.sample_pairs(
        sources, targets, TIMED_PAIRS, PAIR_PROPS, {**PAIR_OPTS, "pair_time": "ts"}
    )
    given = {**PAIR_OPTS, "pair_times": times}
    assert bolt.sample_pairs(sources, targets, TIMED_PAIRS, PAIR_PROPS, given) == by_prop
