"""Point-in-time steps of ``tf_features.sample_typed`` on the embedded runtime: a step with a time
walks, at every hop, only the relationships not after the seed's time (``options.seed_time``),
uniformly or most recent first (``options.time_order``); a time of the wrong type or a seed without
one fails the call naming it (memgraph_tf.procedures.timed)."""

from __future__ import annotations

import collections

import pytest

from memgraph_tf import blob
from memgraph_tf.client import EmbeddedSource
from memgraph_tf.embedded import EmbeddedGraph
from memgraph_tf.errors import GraphDataError

STEP = "(:Acct)-[:PAYS {time: ts}]->(:Acct)"
OPTS = {"label": "Acct", "id_property": "id", "seed_time": "t", "seed": 1}


@pytest.fixture(scope="module")
def ledger():
    """Accounts 0..6 (account i's time t = 10 * i); 0 pays 1 at 5, 2 at 15, 3 at 25 and 30, 4 at
    40; 2 pays 5 at 12 and 6 at 35 (reached at hop 2: the seed's time still rules)."""
    g = EmbeddedGraph()
    node = [g.add_node(["Acct"], {"id": i, "t": 10 * i}) for i in range(7)]
    for a, b, ts in [
        (0, 1, 5),
        (0, 2, 15),
        (0, 3, 25),
        (0, 3, 30),
        (0, 4, 40),
        (2, 5, 12),
        (2, 6, 35),
    ]:
        g.add_edge(node[a], node[b], "PAYS", {"ts": ts})
    seeder = [g.add_node(["Acct"], {"id": 100 + i, "t": t}) for i, t in enumerate((20, 28, 100))]
    for s in seeder:  # seeds whose only relationship leads to account 0
        g.add_edge(s, node[0], "PAYS", {"ts": 0})
    return g, EmbeddedSource(g)


def rows(source, seeds, nn, **options):
    got = blob.unpack(source.sample_typed(seeds, nn, None, {**OPTS, **options}))
    return [got[f"ids_h{h}_Acct"].tolist() for h in (1, 2)]


def test_only_relationships_not_after_the_seeds_time_are_walked_at_every_hop(ledger):
    _, source = ledger
    nn = {STEP: [1, 4]}  # hop 1: the seed's one relationship to 0; hop 2: 0's, as of the seed
    for seed, time in ((100, 20), (101, 28), (102, 100)):
        _, hop2 = rows(source, [seed], nn, time_order="most_recent")
        latest = {}  # 0's payments: neighbour -> its latest time not after the seed's
        for nbr, ts in ((1, 5), (2, 15), (3, 25), (3, 30), (4, 40)):
            if ts <= time:
                latest[nbr] = ts
        expected = sorted(latest, key=lambda n: -latest[n])
        assert hop2[0] == expected + [-1] * (4 - len(expected)), seed
    drawn = collections.Counter()
    for seed in range(40):
        _, hop2 = rows(source, [101], {STEP: [1, 2]}, seed=seed)
        drawn.update(hop2[0])
    assert set(drawn) == {1, 2, 3}  # uniform over 1, 2 and 3 (at 25, before 28), never 4


def test_a_uniform_timed_step_draws_as_the_untimed_step_where_every_relationship_qualifies(ledger):
    _, source = ledger
    late = rows(source, [0, 2], {STEP: [2, 2]}, seed_time="t")  # account 0's time is 0: nothing
    assert late[0] == [[-1, -1], [5, -1]]  # account 2 (time 20) sees only its payment at 12
    untimed = blob.unpack(
        source.sample_typed(
            [102],
            {"(:Acct)-[:PAYS]->(:Acct)": [1, 3]},
            None,
            {"label": "Acct", "id_property": "id", "seed": 1},
        )
    )
    timed = blob.unpack(source.sample_typed([102], {STEP: [1, 3]}, None, OPTS))  # time 100: all
    assert timed["ids_h2_Acct"].tolist() == untimed["ids_h2_Acct"].tolist()


@pytest.mark.parametrize(
    ("options", "nn", "message"),
    [
        (
            {"seed_time": None},
            {STEP: [2]},
            r"options\.seed_time: expected the seeds' time property",
        ),
        ({}, {"(:Acct)-[:PAYS]->(:Acct)": [2]}, r"options\.seed_time: expected a step with a time"),
        (
            {"time_order": "oldest"},
            {STEP: [2]},
            r"options\.time_order: expected one of 'uniform', 'most_recent', got str 'oldest'",
        ),
        (
            {"seed_time": "missing"},
            {STEP: [2]},
            r"seeds\[0\]: \(:Acct \{id: 0\}\) property 'missing': expected an integer time, "
            "got no value",
        ),
    ],
)
def test_bad_timing_options_and_seeds_are_named(ledger, options, nn, message):
    _, source = ledger
    with pytest.raises(GraphDataError, match=message):
        source.sample_typed([0, 2], nn, None, {**OPTS, **options})


def test_a_relationship_time_of_the_wrong_type_names_the_relationship():
    g = EmbeddedGraph()
    a, b = g.add_node(["Acct"], {"id": 0, "t": 5}), g.add_node(["Acct"], {"id": 1, "t": 5})
    g.add_edge(a, b, "PAYS", {"ts": 1.5})
    with pytest.raises(
        GraphDataError,
        match=r"relationship \(:Acct \{id: 0\}\)-\[:PAYS\]->\(:Acct \{id: 1\}\) property 'ts': "
        r"expected an integer time, got float 1\.5",
    ):
        EmbeddedSource(g).sample_typed([0], {STEP: [1]}, None, OPTS)
    g.set_property(a, "t", "yesterday")
    with pytest.raises(
        GraphDataError,
        match=r"seeds\[0\]: \(:Acct \{id: 0\}\) property 't': expected an integer time, got "
        "str 'yesterday'",
    ):
        EmbeddedSource(g).sample_typed([0], {STEP: [1]}, None, OPTS)


def test_sample_pairs_takes_a_step_with_a_time_with_the_pairs_times_only(ledger):
    _, source = ledger
    with pytest.raises(
        GraphDataError,
        match=r"^options\.pair_time: expected the pairs' times \(\(:Acct\)-\[:PAYS \{time: ts\}\]->"
        r"\(:Acct\) has a time\): options\.pair_time \(a relationship property\) or "
        r"options\.pair_times \(one per pair\), got neither$",
    ):
        source.sample_pairs(
            [0], [1], {STEP: [1]}, None, {"source_label": "Acct", "id_property": "id"}
        )
