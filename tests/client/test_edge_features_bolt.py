"""Edge feature columns (``options.edge_feature_spec``, docs/blob-format.md section 12) over real
Bolt (ArcadeDB, which has no tf_features procedures: the client samples over plain Cypher with the
procedure's own code) give the embedded query module's exact bytes for a fixed seed -- parallel
relationships, a self-loop, both directions, a weighted step, a point-in-time step, a Date as the
driver hands it and a pair blob included -- and the
same error for a value of the wrong type."""

from __future__ import annotations

import datetime
import random

import pytest

from memgraph_tf.client import EmbeddedSource
from memgraph_tf.embedded import EmbeddedGraph
from memgraph_tf.errors import GraphDataError
from tests.client.twins_kit import add_bad_amount
from tests.golden.generate import payment_spec

pytestmark = pytest.mark.arcadedb

N = 30
ID_OFFSET = 700
SPEC = payment_spec("EPAYS", "ts", 10.0, 5.0, {"name": "on", "kind": "temporal", "type": "Date"})
OUT = "(:EAccount)-[:EPAYS]->(:EAccount)"
BOTH = "(:EAccount)-[:EPAYS]-(:EAccount)"
WEIGHTED = "(:EAccount)-[:EPAYS {weight: ts}]->(:EAccount)"
NN = {OUT: [3, 2], BOTH: [2, 1], WEIGHTED: [1, 1]}
EDGES = {OUT: SPEC, BOTH: SPEC, WEIGHTED: SPEC}
OPTS = {"label": "EAccount", "id_property": "id", "seed": 3, "edge_feature_spec": EDGES}


def graph_data():
    rng = random.Random(20261130)
    accounts = [{"id": ID_OFFSET + i} for i in range(N)]
    pays = []
    for i in range(N - 1):  # the last account is isolated
        for j in rng.sample(range(N), rng.randint(0, 5)):
            props = {
                "amount": rng.choice([rng.uniform(0, 100), rng.randint(0, 50), None]),
                "channel": rng.choice(["web", "atm", "card", 7, True, None]),
                "flagged": rng.choice([True, False, None]),
                "ts": rng.randint(0, 100),
                "on": rng.choice([datetime.date(2026, 1, 1 + rng.randint(0, 27)), None]),
            }
            pays.append({"a": ID_OFFSET + i, "b": ID_OFFSET + j, "p": props})
    pays += [  # a self-loop, parallel relationships, and both ways between two accounts
        {"a": ID_OFFSET + 3, "b": ID_OFFSET + 3, "p": {"amount": 2.5, "ts": 10}},
        {"a": ID_OFFSET + 4, "b": ID_OFFSET + 5, "p": {"amount": 1, "channel": "web", "ts": 9}},
        {"a": ID_OFFSET + 4, "b": ID_OFFSET + 5, "p": {"amount": 0.25, "ts": 20}},
        {"a": ID_OFFSET + 5, "b": ID_OFFSET + 4, "p": {"amount": 7, "flagged": True, "ts": 50}},
    ]
    for row in pays:  # (a null property is an absent one: ArcadeDB stores no null)
        row["p"] = {k: v for k, v in row["p"].items() if v is not None}
    return accounts, pays


@pytest.fixture(scope="module")
def twins(bolt_source):
    accounts, pays = graph_data()
    g = EmbeddedGraph()
    ids = {p["id"]: g.add_node(["EAccount"], p) for p in accounts}
    for r in pays:
        g.add_edge(ids[r["a"]], ids[r["b"]], "EPAYS", r["p"])
    bolt_source.write("MATCH (n:EAccount) DETACH DELETE n")
    bolt_source.write("UNWIND $rows AS r CREATE (:EAccount {id: r.id})", {"rows": accounts})
    bolt_source.write(
        "UNWIND $rows AS r MATCH (a:EAccount {id: r.a}), (b:EAccount {id: r.b}) "
        "CREATE (a)-[e:EPAYS]->(b) SET e += r.p",
        {"rows": pays},
    )
    yield g, EmbeddedSource(g), bolt_source
    bolt_source.write("MATCH (n:EAccount) DETACH DELETE n")  # the server is shared by modules


def test_the_same_edge_feature_blobs_byte_for_byte(twins):
    _, embedded, bolt = twins
    seeds = [ID_OFFSET + i for i in (0, 3, 4, 5, 17, N - 1, 4)]
    expected = embedded.sample_typed(seeds, NN, None, OPTS)
    assert bolt.sample_typed(seeds, NN, None, OPTS) == expected
    without = embedded.sample_typed(seeds, NN, None, {**OPTS, "edge_feature_spec": None})
    assert len(without) < len(expected)  # (the same draws, without the edge sections)
    timed = "(:EAccount)-[:EPAYS {time: ts}]-(:EAccount)"  # point in time: at 50
    for order in ("uniform", "most_recent"):
        opts = {**OPTS, "at": 50, "time_order": order, "edge_feature_spec": {timed: SPEC}}
        expected = embedded.sample_typed(seeds, {timed: [3, 2]}, None, opts)
        assert bolt.sample_typed(seeds, {timed: [3, 2]}, None, opts) == expected
    pair_opts = {"source_label": "EAccount", "id_property": "id", "seed": 4, "negatives": 1}
    pair_opts["edge_feature_spec"] = {OUT: SPEC}
    nn = {"source": {OUT: [2]}, "target": {BOTH: [2]}}
    sources, targets = [ID_OFFSET + 4, ID_OFFSET + 1], [ID_OFFSET + 5, ID_OFFSET + 3]
    expected = embedded.sample_pairs(sources, targets, nn, None, pair_opts)
    assert bolt.sample_pairs(sources, targets, nn, None, pair_opts) == expected


def test_the_same_error_for_a_value_of_the_wrong_type(twins):
    _, embedded, bolt = twins
    message = add_bad_amount(twins, "EAccount", "EBAD", ID_OFFSET + 1, ID_OFFSET + 2) + (
        r" \(kind 'numeric'\): expected a number, got str 'ten'"
    )
    step = "(:EAccount)-[:EBAD]-(:EAccount)"
    spec = {"label": "EBAD", "properties": [{"name": "amount", "kind": "numeric"}]}
    opts = {**OPTS, "edge_feature_spec": {step: spec}}
    for source in (embedded, bolt):
        with pytest.raises(GraphDataError, match=message):
            source.sample_typed([ID_OFFSET + 2], {step: [2]}, None, opts)
