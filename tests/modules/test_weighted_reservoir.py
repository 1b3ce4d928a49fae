"""The bounded mode of a weighted step (memgraph_tf/procedures/reservoir.py, "Weighted steps")
on the embedded runtime: the build (Efraimidis-Spirakis priorities, a threshold), the draw from
the reservoir (fresh priorities above the threshold, with and without replacement), the weight
errors, maintenance from the change log, and a chi-square test of the draw's frequencies over
reservoirs built and then maintained through inserts and deletes."""

from __future__ import annotations

import math
import random

import pytest

from memgraph_tf import blob
from memgraph_tf.client import EmbeddedSource
from memgraph_tf.client.change_log import Change, ChangeLog, apply_to_reservoirs
from memgraph_tf.embedded import EmbeddedGraph, ProcedureError
from memgraph_tf.errors import GraphDataError
from memgraph_tf.procedures.draw import rng_for
from memgraph_tf.procedures.reservoir import (
    LOWEST,
    BuildOptions,
    ReservoirDrawer,
    WeightedMembers,
    WeightedReservoir,
    build_weighted,
    priority,
    property_name,
)
from memgraph_tf.procedures.weighted import Weighted, WeightedDrawer

DEGREE = 200
CAPACITY = 24
STEP = {
    "edge_types": ["PAID"],
    "direction": "out",
    "id_property": "id",
    "label": "Acct",
    "neighbour_label": "Acct",
    "weight": "w",
}
NAME = property_name(("PAID",), "out", "id", "Acct", "w")
PATTERN = "(:Acct)-[:PAID {weight: w}]->(:Acct)"
REPLACE = "(:Acct)-[:PAID {weight: w, replace: true}]->(:Acct)"


def weight_of(key: int) -> float:
    """The weight of the relationship to the leaf ``key``: 0 for every 10th, else 1 .. 5."""
    return 0.0 if key % 10 == 0 else float(1 + key % 5)


def star(degree: int = DEGREE) -> tuple[EmbeddedGraph, int, dict[int, int]]:
    """An account (id 0) paying ``degree`` accounts (ids 1 ..), ``w`` by :func:`weight_of`,
    and account ``degree + 1`` paying 3 of them (below any capacity)."""
    g = EmbeddedGraph()
    hub = g.add_node(["Acct"], {"id": 0})
    node = {0: hub}
    for key in range(1, degree + 1):
        node[key] = g.add_node(["Acct"], {"id": key})
        g.add_edge(hub, node[key], "PAID", {"w": weight_of(key)})
    low = g.add_node(["Acct"], {"id": degree + 1})
    for key in (1, 2, 3):
        g.add_edge(low, node[key], "PAID", {"w": 1.0})
    return g, hub, node


def build(g: EmbeddedGraph, **extra) -> dict:
    [page] = g.call(
        "tf_features.build_reservoirs", {"capacity": CAPACITY, "seed": 3, **STEP, **extra}
    )
    return page


def stored(g: EmbeddedGraph, node: int) -> WeightedReservoir:
    return WeightedReservoir.decode(g.get_property(node, NAME), f"node {node}", NAME)


def slots(g: EmbeddedGraph, pattern: str = PATTERN, fanout: int = 5, **options) -> list[int]:
    opts = {"label": "Acct", "id_property": "id", "seed": 4, **options}
    [row] = g.call("tf_features.sample_typed", [0], {pattern: [fanout]}, {}, opts)
    [ids] = blob.unpack_b64(row["blob"])["ids_h1_Acct"].tolist()
    return ids


def failure(g: EmbeddedGraph, *args) -> str:
    with pytest.raises(ProcedureError) as info:
        g.call(*args)
    return str(info.value).rstrip().rsplit("\n", 1)[-1]


def members_of(res: WeightedReservoir) -> WeightedMembers:
    """What a parent with ``res`` draws from, in the key space of the reservoir's keys."""
    ids = sorted(set(res.keys))
    index = {k: i for i, k in enumerate(ids)}
    return WeightedMembers(ids, [index[k] for k in res.keys], list(res.weights), res.threshold)


# -- the build -----------------------------------------------------------------------------------
def test_build_keeps_the_relationships_of_largest_priority_and_the_next_as_threshold():
    g, hub, _ = star()
    page = build(g)
    assert (page["nodes"], page["reservoirs"], page["removed"]) == (DEGREE + 2, 1, 0)
    res = stored(g, hub)
    # one priority per relationship of positive weight, in key order, from the hub's generator
    rng = rng_for(3, "reservoir/0")
    ranked = [(priority(rng, weight_of(k)), k) for k in range(1, DEGREE + 1) if weight_of(k)]
    ranked.sort(key=lambda p: -p[0])
    assert (res.capacity, res.degree, len(res.keys)) == (CAPACITY, DEGREE, CAPACITY)
    assert sorted(res.keys) == sorted(k for _, k in ranked[:CAPACITY])
    assert res.threshold == ranked[CAPACITY][0]
    assert min(res.priorities) > res.threshold
    assert res.weights == [weight_of(k) for k in res.keys]  # (floats stored bit for bit)
    assert all(k % 10 for k in res.keys)  # a weight of 0 never joins
    assert g.get_property(g.node_count - 1, NAME) is None  # 3 relationships: the exact path's


def test_a_weighted_and_the_uniform_reservoir_of_the_same_relationships_are_two_properties():
    g, hub, _ = star()
    build(g)
    uniform = {k: v for k, v in STEP.items() if k != "weight"}
    g.call("tf_features.build_reservoirs", {"capacity": CAPACITY, "seed": 3, **uniform})
    name = property_name(("PAID",), "out", "id", "Acct")
    assert name != NAME and g.get_property(hub, name)[0] == 1 and stored(g, hub).degree == DEGREE
    # each step reads its own: the unweighted step draws uniformly from the uniform one
    plain = "(:Acct)-[:PAID]->(:Acct)"
    assert slots(g, plain, reservoir_threshold=0) != slots(g, plain)


def test_a_node_with_few_relationships_of_positive_weight_keeps_them_all():
    g = EmbeddedGraph()
    hub = g.add_node(["Acct"], {"id": 0})
    for key in range(1, 31):
        g.add_edge(hub, g.add_node(["Acct"], {"id": key}), "PAID", {"w": float(key <= 4)})
    build(g)
    res = stored(g, hub)
    assert sorted(res.keys) == [1, 2, 3, 4] and res.threshold == LOWEST and res.degree == 30


def test_a_complete_reservoir_pads_as_the_exact_path_and_is_not_short():
    """A reservoir holding every relationship of positive weight (threshold LOWEST) is the exact
    path's population: fewer distinct neighbours than the fanout pad, with or without the
    reservoir, and maintenance does not report it short."""
    g = EmbeddedGraph()
    hub = g.add_node(["Acct"], {"id": 0})
    for key in range(1, 31):
        g.add_edge(hub, g.add_node(["Acct"], {"id": key}), "PAID", {"w": float(key <= 4)})
    log = ChangeLog(EmbeddedSource(g))
    build(g)
    assert slots(g, reservoir_threshold=0) == slots(g) == [1, 2, 3, 4, -1]
    leaf = g.add_node(["Acct"], {"id": 31})
    log.record([change("created", g.add_edge(hub, leaf, "PAID", {"w": 0.0}), hub, leaf, 31)])
    totals, _ = apply_to_reservoirs(log, STEP)
    assert (totals["updated"], totals["short"]) == (1, 0) and stored(g, hub).degree == 31


# -- the draw ------------------------------------------------------------------------------------
@pytest.mark.parametrize("pattern", [PATTERN, REPLACE])
def test_a_weighted_hub_draws_from_its_reservoir_by_the_reservoir_rule(pattern):
    g, hub, _ = star()
    build(g)
    res = stored(g, hub)
    expected: list[int] = []
    ReservoirDrawer(5, pattern == REPLACE).draw_parent(rng_for(4, 0), members_of(res), expected, [])
    assert slots(g, pattern, reservoir_threshold=100) == expected
    assert set(expected) <= set(res.keys)
    # at or above the recorded degree, the exact path's bytes
    assert slots(g, pattern, reservoir_threshold=DEGREE) == slots(g, pattern)


def test_members_without_a_node_and_a_draw_with_fewer_neighbours_than_slots():
    res = WeightedReservoir(4, 9, 0, 0, -0.5, [3, 5, 5, 8], [1, 2, 3, 4], [3, 5, 5, 8],
                            [1.0, 2.0, 0.5, 4.0], [-0.1, -0.2, -0.3, -0.4])  # fmt: skip
    found = members_of(res)
    assert (found.ids, found.weights) == ([3, 5, 8], [1.0, 2.5, 4.0])
    fewer = found.without(5)
    assert (fewer.ids, fewer.owner, fewer.rel_weights) == ([3, 8], [0, 1], [1.0, 4.0])
    out: list[int] = []
    mask: list[bool] = []
    ReservoirDrawer(3).draw_parent(random.Random(1), fewer, out, mask)
    assert (out, mask) == ([3, 8, -1], [True, True, False])  # d <= f: all, then padding


def test_with_replacement_a_shrunk_reservoir_draws_while_it_holds_a_neighbour():
    """A draw with replacement needs one distinct neighbour, not the fanout: a reservoir shrunk
    below the fanout draws its slots from its members; without replacement it is refused."""
    g, hub, node = star(60)
    log = ChangeLog(EmbeddedSource(g))
    build(g)
    res = stored(g, hub)
    assert res.threshold > LOWEST
    log.record(change("deleted", r, hub, node[k], k) for r, k in list(zip(res.rels, res.keys))[2:])
    totals, _ = apply_to_reservoirs(log, STEP)
    kept = stored(g, hub)
    assert totals["short"] == 1 and len(kept.keys) == 2
    expected: list[int] = []
    ReservoirDrawer(5, True).draw_parent(rng_for(4, 0), members_of(kept), expected, [])
    assert slots(g, REPLACE, reservoir_threshold=0) == expected
    assert set(expected) <= set(kept.keys)
    text = failure(
        g,
        "tf_features.sample_typed",
        [0],
        {PATTERN: [5]},
        {},
        {"label": "Acct", "id_property": "id", "reservoir_threshold": 0},
    )
    assert text.endswith("holding 2 distinct neighbours (capacity 24, shrunk by deletions or "
                         "parallel relationships), below hop 1's fanout 5: rebuild it "
                         "(tf_features.build_reservoirs)")  # fmt: skip


def test_after_a_shrink_the_draw_favours_the_relationships_inserted_since():
    """The documented limit of the weighted draw (docs/hubs.md, "What the bounded mode changes
    statistically"): R = 1, relationships a and b of weight 1, a deleted, c inserted; among the
    reservoirs not left empty one draw gives c with probability 0.6, not the exact 0.5 (binomial
    standard error at 6,000 seeds: under 0.008)."""
    opts = BuildOptions(capacity=1, weight="w", seed=0, direction="out")
    drawn = {0: 0, 1: 0, 2: 0}
    for seed in range(6000):
        rels = [(0, 0, 1.0, True), (1, 1, 1.0, True)]
        res = build_weighted(opts, (9, 9, {0: 0, 1: 1, 2: 2}), rels, rng_for(seed, "b"))
        res.delete(0)
        res.insert(2, 2, 2, 1.0, rng_for(seed, "i"))
        if res.rels:
            out: list[int] = []
            ReservoirDrawer(1).draw_parent(rng_for(seed, "d"), members_of(res), out, [])
            drawn[out[0]] += 1
    assert drawn[0] == 0 and 0.57 < drawn[2] / (drawn[1] + drawn[2]) < 0.63


# -- bad input -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("value", "got"),
    [
        (-2.0, "expected a finite number >= 0, got float -2.0"),
        ("x", "expected a number (the step's weight), got str 'x'"),
    ],
)
def test_a_bad_weight_fails_the_build_as_it_fails_the_exact_draw(value, got):
    g, _, node = star(30)
    g.add_edge(node[0], node[7], "PAID", {"w": value})
    text = failure(g, "tf_features.build_reservoirs", {"capacity": 5, **STEP})
    assert text.endswith(
        f"relationship (:Acct {{id: 0}})-[:PAID]->(:Acct {{id: 7}}) property 'w': {got}"
    )
    opts = {"label": "Acct", "id_property": "id"}
    assert failure(g, "tf_features.sample_typed", [0], {PATTERN: [3]}, {}, opts) == text


def test_a_missing_weight_is_named_with_the_relationship():
    g, _, node = star(30)
    g.add_edge(node[0], node[9], "PAID")
    text = failure(g, "tf_features.build_reservoirs", {"capacity": 5, **STEP})
    assert text.endswith(
        "relationship (:Acct {id: 0})-[:PAID]->(:Acct {id: 9}) property 'w': expected a number "
        "(the step's weight), got no value"
    )


def test_a_timed_step_is_refused_saying_why():
    g, _, _ = star(30)
    text = failure(
        g,
        "tf_features.sample_typed",
        [0],
        {"(:Acct)-[:PAID {time: w}]->(:Acct)": [3]},
        {},
        {"label": "Acct", "id_property": "id", "seed_time": "id", "reservoir_threshold": 0},
    )
    assert text.endswith(
        "options.reservoir_threshold: step (:Acct)-[:PAID {time: w}]->(:Acct) has a time ('w'): "
        "a reservoir samples the relationships the graph holds now and cannot answer which were "
        "there as of a seed's time; sample this spec without options.reservoir_threshold "
        "(allowed: steps without a time)"
    )


# -- maintenance ---------------------------------------------------------------------------------
def change(kind: str, rel: int, hub: int, other: int, key: int, props=()) -> Change:
    return Change(
        kind,
        "relationship",
        rel,
        rel_type="PAID",
        start_id=hub,
        end_id=other,
        start_key=0,
        end_key=key,
        properties=props,
    )


def test_update_inserts_with_the_graphs_weight_deletes_and_reweights_once():
    g, hub, node = star()
    source = EmbeddedSource(g)
    log = ChangeLog(source)
    build(g)
    before = stored(g, hub)
    changes = []
    for i in range(40):  # 40 new payees, heavy
        key = 1000 + i
        node[key] = g.add_node(["Acct"], {"id": key})
        rel = g.add_edge(hub, node[key], "PAID", {"w": 50.0})
        changes.append(change("created", rel, hub, node[key], key))
    node[2000] = g.add_node(["Acct"], {"id": 2000})  # created, then deleted: never a member
    gone = g.add_edge(hub, node[2000], "PAID", {"w": 10.0**9})
    g.delete_edge(gone)
    changes.append(change("created", gone, hub, node[2000], 2000))
    member, member_key = before.rels[0], before.keys[0]
    changes.append(change("deleted", member, hub, node[member_key], member_key))
    changes.append(change("deleted", gone, hub, node[2000], 2000))
    log.record(changes)
    totals, cursor = apply_to_reservoirs(log, STEP)
    assert (totals["applied"], totals["skipped"], totals["updated"]) == (43, 0, 1)
    after = stored(g, hub)
    assert after.degree == DEGREE + 40 - 1 and member not in after.rels and gone not in after.rels
    assert after.threshold >= before.threshold and min(after.priorities) > after.threshold
    assert sum(k >= 1000 for k in after.keys) > CAPACITY // 2  # weight 50 against 1 .. 5
    # the same changes again: skipped
    again, _ = apply_to_reservoirs(log, STEP, after=0)
    assert again["applied"] == 0 and again["skipped"] == 43 and stored(g, hub) == after
    # a member's weight set to 0 (logged as an update of w): it leaves, and the degree stays
    key = after.keys[0]
    g.merge_edge(hub, node[key], "PAID", {"w": 0.0})
    other = change("updated", after.rels[0], hub, node[key], key, props=("note",))
    log.record([change("updated", after.rels[0], hub, node[key], key, props=("w",)), other])
    totals, _ = apply_to_reservoirs(log, STEP, after=cursor)
    reweighted = stored(g, hub)
    assert totals["applied"] == 1 and key not in reweighted.keys
    assert reweighted.degree == after.degree and len(reweighted.keys) == len(after.keys) - 1
    assert totals["short"] == 1


def test_update_reads_a_bad_weight_and_names_the_relationship():
    g, hub, node = star()
    log = ChangeLog(EmbeddedSource(g))
    build(g)
    node[500] = g.add_node(["Acct"], {"id": 500})
    rel = g.add_edge(hub, node[500], "PAID", {"w": -1})
    log.record([change("created", rel, hub, node[500], 500)])
    with pytest.raises(
        GraphDataError,
        match=r"relationship \(:Acct \{id: 0\}\)-\[:PAID\]->\(:Acct \{id: 500\}\) property "
        r"'w': expected a finite number >= 0, got int -1$",
    ):
        apply_to_reservoirs(log, STEP)


def test_a_deleted_relationship_leaves_whatever_its_neighbour_holds_now():
    """A deleted relationship is not filtered by ``neighbour_label``: a member whose neighbour
    lost the label leaves, and a non-member deleted with its node (Memgraph logs each
    relationship a ``DETACH DELETE`` removes: memgraph/memgraph src/query/plan/operator.cpp, the
    DeleteCursor's detach branch) lowers the degree when the node's deletion lists the label."""
    g, hub, node = star()
    node[900] = g.add_node(["Acct"], {"id": 900})
    zero = g.add_edge(hub, node[900], "PAID", {"w": 0.0})  # weight 0: never a member
    log = ChangeLog(EmbeddedSource(g))
    build(g)
    before = stored(g, hub)
    rel, key = before.rels[0], before.keys[0]
    g.remove_label(node[key], "Acct")
    g.delete_edge(rel)
    g.delete_edge(zero)
    g.remove_label(node[900], "Acct")
    gone = Change("deleted", "node", node[900], key=900, labels=("Acct",))
    log.record(
        [change("deleted", rel, hub, node[key], key), change("deleted", zero, hub, node[900], 900)]
        + [gone]
    )
    totals, _ = apply_to_reservoirs(log, STEP)
    after = stored(g, hub)
    assert (totals["applied"], totals["updated"], totals["short"]) == (2, 1, 1)
    assert rel not in after.rels and after.degree == before.degree - 2
    assert key not in slots(g, fanout=len(after.keys), reservoir_threshold=0)


# -- statistics ----------------------------------------------------------------------------------
def stat_weight(rel: int) -> float:
    return float(1 + rel % 5)


def churn(rng: random.Random, n: int, steps: int) -> tuple[list[tuple[str, int]], list[int]]:
    """``steps`` changes to a hub with relationships 0..n-1 (relationship i to neighbour i, of
    weight :func:`stat_weight`): a new relationship or the deletion of a uniformly chosen
    current one, at random while the hub keeps between n/2 and 2n; and the final ones."""
    current, out, rel = list(range(n)), [], n
    for _ in range(steps):
        if len(current) < n // 2 or (len(current) < 2 * n and rng.random() < 0.5):
            out.append(("created", rel))
            current.append(rel)
            rel += 1
        else:
            out.append(("deleted", current.pop(rng.randrange(len(current)))))
    return out, current


def maintained(seed: int, n: int, changes: list[tuple[str, int]], capacity: int):
    """A reservoir over relationships 0..n-1 built as ``build`` builds it (with ``seed``), then
    maintained through ``changes`` in batches of 100 as ``update`` applies them."""
    opts = BuildOptions(capacity=capacity, weight="w", seed=seed, direction="out")
    rels = [(i, i, stat_weight(i), True) for i in range(n)]
    res = build_weighted(opts, (0, 0, {i: i for i in range(n)}), rels, rng_for(seed, "reservoir/0"))
    for lo in range(0, len(changes), 100):
        rng = rng_for(seed, f"reservoir/0/{lo + 1}")
        for kind, rel in changes[lo : lo + 100]:
            if kind == "created":
                res.insert(rel, rel, rel, stat_weight(rel), rng)
            else:
                res.delete(rel)
    return res


def inclusion(weights: dict[int, float], f: int) -> dict[int, float]:
    """Each item's probability to be among ``f`` drawn one by one with probability
    proportional to weight, without replacement (the exact path's law)."""
    total = sum(weights.values())
    out = dict.fromkeys(weights, 0.0)

    def walk(prob: float, left: float, taken: tuple[int, ...]) -> None:
        for k, w in weights.items():
            if k in taken:
                continue
            p = prob * w / left
            out[k] += p
            if len(taken) + 1 < f:
                walk(p, left - w, (*taken, k))

    walk(1.0, total, ())
    return out


def chi_square_critical(df: int, z: float = 3.090) -> float:
    """The chi-square quantile at the normal quantile ``z`` (3.090: 0.999), Wilson-Hilferty."""
    return df * (1 - 2 / (9 * df) + z * math.sqrt(2 / (9 * df))) ** 3


def test_draws_from_maintained_weighted_reservoirs_follow_the_exact_law():
    """Over 2,500 reservoirs (capacity 10) of a hub of 40 relationships of weights 1 .. 5, built
    with seeds 0.. and each maintained through the same 400 inserts and deletes, the neighbours
    one draw of 2 per reservoir picks follow the exact path's inclusion probabilities (chi-square
    at 0.1%); the exact weighted rule applied to the members' weights (drawing heavy neighbours
    twice over: into the reservoir, then from it) fails the same test."""
    changes, final = churn(random.Random(5), 40, 400)
    trials, f = 2500, 2
    expected = inclusion({k: stat_weight(k) for k in final}, f)
    ours, naive = dict.fromkeys(final, 0), dict.fromkeys(final, 0)
    used = 0
    for seed in range(trials):
        found = members_of(maintained(seed, 40, changes, 10))
        if len(found.ids) < f:  # (the sampler refuses such a reservoir)
            continue
        used += 1
        for drawer, counts, source in (
            (ReservoirDrawer(f), ours, found),
            (WeightedDrawer(f), naive, Weighted(found.ids, found.weights)),
        ):
            out: list[int] = []
            drawer.draw_parent(rng_for(seed, "draw"), source, out, [])
            for k in out:
                counts[k] += 1
    assert used > trials * 0.99

    def statistic(counts: dict[int, int]) -> float:
        return sum((c - used * expected[k]) ** 2 / (used * expected[k]) for k, c in counts.items())

    critical = chi_square_critical(len(final) - 1)
    assert statistic(ours) < critical
    assert statistic(naive) > critical


def test_a_complete_reservoir_gives_the_exact_bytes_or_with_parallel_relationships_its_law():
    """A complete reservoir (every relationship of positive weight a member) drawn from: without
    parallel relationships the exact path's bytes, seed for seed; with parallel ones the same
    law (a neighbour's key is the largest of its relationships' priorities, distributed as one
    priority of their summed weight) but other bytes, one generator call per relationship rather
    than per neighbour (docs/hubs.md, "Weighted steps")."""
    for parallel in (False, True):
        g = EmbeddedGraph()
        hub = g.add_node(["Acct"], {"id": 0})
        for key in range(1, 13):
            leaf = g.add_node(["Acct"], {"id": key})
            g.add_edge(hub, leaf, "PAID", {"w": float(1 + key % 3) if key <= 8 else 0.0})
            if parallel and key <= 3:
                g.add_edge(hub, leaf, "PAID", {"w": 2.0})
        build(g, capacity=11)
        assert stored(g, hub).threshold == LOWEST
        same = [slots(g, fanout=3, seed=s, reservoir_threshold=5) == slots(g, fanout=3, seed=s)
                for s in range(20)]  # fmt: skip
        assert all(same) if not parallel else not all(same)
    # the law, with parallel relationships: the first slot's neighbour over 20,000 draws
    weights = {k: float(1 + k % 3) + (2.0 if k <= 3 else 0.0) for k in range(1, 9)}
    rel_keys = [k for k in range(1, 9) for _ in range(2 if k <= 3 else 1)]
    rel_weights = [float(1 + k % 3) if i == 0 else 2.0 for k in range(1, 9)
                   for i in range(2 if k <= 3 else 1)]  # fmt: skip
    ids = sorted(weights)
    found = WeightedMembers(ids, [ids.index(k) for k in rel_keys], rel_weights, LOWEST)
    trials = 20_000
    counts = dict.fromkeys(ids, 0)
    for seed in range(trials):
        out: list[int] = []
        ReservoirDrawer(3).draw_parent(rng_for(seed, "law"), found, out, [])
        counts[out[0]] += 1
    total = sum(weights.values())
    statistic = sum(
        (counts[k] - trials * w / total) ** 2 / (trials * w / total) for k, w in weights.items()
    )
    assert statistic < chi_square_critical(len(ids) - 1)
