"""Point-in-time pairs of ``tf_features.sample_pairs`` on the embedded runtime
(memgraph_tf/procedures/pair_times.py): each row walks both neighbourhoods as of its pair's time
(``options.pair_time`` or ``options.pair_times``), and negatives are drawn among the target nodes
active by then, never a known neighbour."""

from __future__ import annotations

import random

import pytest

from memgraph_tf import blob
from memgraph_tf.client import EmbeddedSource
from memgraph_tf.embedded import EmbeddedGraph
from memgraph_tf.errors import GraphDataError

TIMED = "(:Acct)-[:SENT {time: ts}]-(:Acct)"
N = 30
BASE = {"source_label": "Acct", "id_property": "id", "seed": 4}


@pytest.fixture(scope="module")
def ledger():
    """Accounts ``id = i`` (0..29); account ``i`` first transfers at about ``10 * i``, so the
    accounts appear one after another; 90 transfers with integer times ``ts``."""
    rng = random.Random(37)
    g = EmbeddedGraph()
    node = [g.add_node(["Acct"], {"id": i, "f": [float(i)]}) for i in range(N)]
    edges = []
    for i in range(1, N):  # each account joins an earlier one when it opens
        edges.append((i, rng.randrange(i), 10 * i))
    while len(edges) < 90:
        a, b = rng.sample(range(N), 2)
        edges.append((a, b, max(10 * a, 10 * b) + rng.randrange(100)))
    for a, b, ts in edges:
        g.add_edge(node[a], node[b], "SENT", {"ts": ts})
    return g, EmbeddedSource(g), edges


def timeline(edges):
    """(neighbours as of a time, first active time) per account, from the edge list."""
    first = {}
    for a, b, ts in edges:
        for n in (a, b):
            first[n] = min(ts, first.get(n, ts))

    def as_of(node, time):
        return {b if a == node else a for a, b, ts in edges if node in (a, b) and ts <= time}

    return as_of, first


def edge_time(edges, a, b):
    return min(ts for x, y, ts in edges if {x, y} == {a, b})


def positives(edges, count):
    pairs = sorted({(min(a, b), max(a, b)) for a, b, _ in edges})
    return random.Random(1).sample(pairs, count)


def test_every_row_walks_its_neighbourhood_as_of_its_pairs_time(ledger):
    _, source, edges = ledger
    as_of, first = timeline(edges)
    pairs = positives(edges, 12)
    src, dst = [a for a, _ in pairs], [b for _, b in pairs]
    opts = {**BASE, "pair_time": "ts", "negatives": 2}
    got = blob.unpack(source.sample_pairs(src, dst, {TIMED: [4, 3]}, None, opts))
    times = [edge_time(edges, a, b) for a, b in pairs]
    row_times = times + [t for t in times for _ in range(2)]
    rows_src = src + [s for s in src for _ in range(2)]
    rows_dst = dst + got["dst.ids_h0_Acct"][len(pairs) :, 0].tolist()
    assert got["pair_labels"].tolist() == [1] * 12 + [0] * 24
    for prefix in ("src.", "dst."):
        hop0 = got[prefix + "ids_h0_Acct"][:, 0].tolist()
        assert hop0 == (rows_src if prefix == "src." else rows_dst)
        hop1 = got[prefix + "ids_h1_Acct"].tolist()
        hop2 = got[prefix + "ids_h2_Acct"].tolist()
        for row, (seed, time) in enumerate(zip(hop0, row_times)):
            other = rows_dst[row] if prefix == "src." else rows_src[row]
            allowed = as_of(seed, time) - {other}  # as of the time, without the pair's own
            assert set(hop1[row]) - {-1} <= allowed, (prefix, row)
            assert len(set(hop1[row]) - {-1}) == min(4, len(allowed))
            for j, parent in enumerate(hop1[row]):
                kids = set(hop2[row][3 * j : 3 * j + 3]) - {-1}
                if parent == -1:
                    assert not kids
                    continue
                allowed = as_of(parent, time) - ({other} if parent == seed else set())
                assert kids <= allowed, (prefix, row, parent)
    # the negatives: active by the pair's time, never the source nor a neighbour at any time
    everyone = timeline(edges)[0]
    for i, t in enumerate(times):
        for j in range(2):
            neg = rows_dst[12 + 2 * i + j]
            assert first[neg] <= t and neg != src[i]
            assert neg not in everyone(src[i], 10**9)


def test_pair_times_given_with_the_pairs_are_the_relationships_times(ledger):
    _, source, edges = ledger
    pairs = positives(edges, 8)
    src, dst = [a for a, _ in pairs], [b for _, b in pairs]
    times = [edge_time(edges, a, b) for a, b in pairs]
    nn = {TIMED: [3, 2]}
    by_prop = source.sample_pairs(src, dst, nn, None, {**BASE, "pair_time": "ts", "negatives": 1})
    given = {**BASE, "pair_times": times, "negatives": 1}
    assert source.sample_pairs(src, dst, nn, None, given) == by_prop
    later = {**given, "pair_times": [t + 500 for t in times]}
    assert source.sample_pairs(src, dst, nn, None, later) != by_prop
    recent = {**given, "time_order": "most_recent"}
    assert source.sample_pairs(src, dst, nn, None, recent) != by_prop


def test_a_negative_is_drawn_uniformly_among_the_nodes_active_at_the_pairs_time(ledger):
    _, source, edges = ledger
    _, first = timeline(edges)
    known = timeline(edges)[0](0, 10**9) | {0}
    time = 155  # accounts 0..15 (some of them) have appeared
    active = {n for n, t in first.items() if t <= time} - known
    opts = {**BASE, "pair_times": [time], "negatives": 400}
    got = blob.unpack(source.sample_pairs([0], [known.pop()], {TIMED: [1]}, None, opts))
    drawn = got["dst.ids_h0_Acct"][1:, 0].tolist()
    assert set(drawn) == active  # each active free node is drawn, no other
    counts = [drawn.count(n) for n in sorted(active)]
    assert max(counts) < 3 * min(counts)  # uniform: 400 draws over a few nodes


def test_a_pair_without_a_time_and_a_bad_time_name_the_pair(ledger):
    _, source, edges = ledger
    joined = {(min(a, b), max(a, b)) for a, b, _ in edges}
    a, b = next((a, b) for a in range(N) for b in range(a + 1, N) if (a, b) not in joined)
    with pytest.raises(
        GraphDataError,
        match=rf"^options\.pair_time: sources\[1\], targets\[1\]: no relationship between "
        rf"\(:Acct \{{id: {a}\}}\) and \(:Acct \{{id: {b}\}}\) of a type the steps walk between "
        r":Acct and :Acct to read its time 'ts' from \(a pair without a time: give "
        r"options\.pair_times\)$",
    ):
        source.sample_pairs([1, a], [0, b], {TIMED: [1]}, None, {**BASE, "pair_time": "ts"})
    with pytest.raises(
        GraphDataError, match=r"^options\.pair_times\[1\]: expected an integer time, got str '7'$"
    ):
        source.sample_pairs([1, 2], [0, 0], {TIMED: [1]}, None, {**BASE, "pair_times": [5, "7"]})


def test_without_a_time_the_pairs_are_the_untimed_draws(ledger):
    """The untimed path is unchanged: a spec without a time refuses pair times, and the same
    call keeps its bytes whatever the time options of another call."""
    _, source, edges = ledger
    pairs = positives(edges, 5)
    src, dst = [a for a, _ in pairs], [b for _, b in pairs]
    plain = "(:Acct)-[:SENT]-(:Acct)"
    with pytest.raises(
        GraphDataError,
        match=r"^options\.pair_times: expected a step with a time in num_neighbors",
    ):
        source.sample_pairs(src, dst, {plain: [2]}, None, {**BASE, "pair_times": [1] * 5})
    # every relationship is at or before the last time: as of then, the timed step walks them all
    late = {**BASE, "pair_times": [10**9] * 5, "negatives": 0}
    timed = blob.unpack(source.sample_pairs(src, dst, {TIMED: [3]}, None, late))
    untimed = blob.unpack(source.sample_pairs(src, dst, {plain: [3]}, None, BASE))
    for name, value in untimed.items():
        assert timed[name].tolist() == value.tolist(), name


def test_the_earliest_pair_draws_from_the_next_nodes_to_become_active(ledger):
    """At the first transfer's time only its two accounts are active, both the pair's own: the
    pool extends, in activity order, to the first account not joined to the source."""
    _, source, edges = ledger
    as_of, first = timeline(edges)
    a, b, t = min(edges, key=lambda e: e[2])
    known = as_of(a, 10**9) | {a}
    order = sorted(first, key=lambda n: (first[n], n))
    assert all(n in known for n in order if first[n] <= t)  # nothing free at the pair's time
    expected = next(n for n in order if n not in known)
    opts = {**BASE, "pair_time": "ts", "negatives": 3}
    got = blob.unpack(source.sample_pairs([a], [b], {TIMED: [1]}, None, opts))
    assert got["dst.ids_h0_Acct"][1:, 0].tolist() == [expected] * 3


def test_a_relationship_time_that_is_no_integer_names_the_first_such_relationship():
    """With ``options.pair_time``, the pair's relationships are named in order (name, then value)
    and the first whose time is no integer fails the call: here the one without a value sorts
    before the reversed one holding a string."""
    g = EmbeddedGraph()
    a, b, c = (g.add_node(["Acct"], {"id": i, "f": [float(i)]}) for i in range(3))
    g.add_edge(a, b, "SENT", {"ts": 5})
    g.add_edge(b, a, "SENT", {"ts": "late"})
    g.add_edge(a, b, "SENT", {})
    g.add_edge(a, c, "SENT", {"ts": 3})
    source = EmbeddedSource(g)
    options = {**BASE, "pair_time": "ts"}
    with pytest.raises(
        GraphDataError,
        match=r"^options\.pair_time: relationship \(:Acct \{id: 0\}\)-\[:SENT\]->"
        r"\(:Acct \{id: 1\}\) property 'ts': expected an integer time, got no value$",
    ):
        source.sample_pairs([2, 0], [0, 1], {TIMED: [1]}, None, options)
