"""The bounded mode (memgraph_tf/procedures/reservoir.py) on the embedded runtime: the build
procedure, the draw from a reservoir, the bad inputs, and maintenance from the change log (with a
chi-square test of uniformity after 10,000 inserts and deletes)."""

from __future__ import annotations

import math
import random

import pytest

from memgraph_tf import blob
from memgraph_tf.client import EmbeddedSource
from memgraph_tf.client.change_log import (
    Change,
    ChangeLog,
    apply_to_reservoirs,
    build_reservoirs,
)
from memgraph_tf.embedded import EmbeddedGraph, ProcedureError
from memgraph_tf.procedures.draw import rng_for
from memgraph_tf.procedures.reservoir import FORMAT, Reservoir, property_name

DEGREE = 300
CAPACITY = 40
STEP = {"edge_types": ["E"], "direction": "out"}
NAME = property_name(("E",), "out", None)


def star(degree: int = DEGREE, small: int = 5) -> tuple[EmbeddedGraph, int, int]:
    """A hub with ``degree`` leaves and a node with ``small`` leaves (``:E`` out of each), plus
    an ``:F`` relationship from the hub (another edge step)."""
    g = EmbeddedGraph()
    hub = g.add_node(["N"], {"id": 10_000})
    leaves = [g.add_node(["N"], {"id": i}) for i in range(degree)]
    for leaf in leaves:
        g.add_edge(hub, leaf, "E")
    low = g.add_node(["N"], {"id": 20_000})
    for leaf in leaves[:small]:
        g.add_edge(low, leaf, "E")
    g.add_edge(hub, low, "F")
    return g, hub, low


def stored(g: EmbeddedGraph, node: int, name: str = NAME) -> Reservoir:
    return Reservoir.decode(g.get_property(node, name), f"node {node}", name)


def ids(g: EmbeddedGraph, seed_node: int, fanouts: list[int], **options) -> list:
    [row] = g.call("tf_features.sample", [seed_node], fanouts, [], {"seed": 7, **STEP, **options})
    return [v.tolist() for k, v in sorted(blob.unpack_b64(row["blob"]).items()) if "ids" in k]


# -- the build and the draw ----------------------------------------------------------------------
def test_build_stores_a_uniform_subset_on_nodes_above_the_capacity_only():
    g, hub, low = star()
    [page] = g.call("tf_features.build_reservoirs", {"capacity": CAPACITY, "seed": 3, **STEP})
    assert page == {"nodes": g.node_count, "reservoirs": 1, "removed": 0, "next": None}
    res = stored(g, hub)
    leaves = sorted(g.neighbours(hub, ["E"], "out"))
    assert (res.capacity, res.degree, len(res.keys)) == (CAPACITY, DEGREE, CAPACITY)
    assert set(res.keys) <= set(leaves) and len(set(res.keys)) == CAPACITY
    assert g.get_property(low, NAME) is None  # 5 relationships: the exact path's
    # the positions rng.sample(range(n), R) picks, of the relationships sorted by key
    picked = rng_for(3, f"reservoir/{hub}").sample(range(DEGREE), CAPACITY)
    assert sorted(res.keys) == sorted(leaves[i] for i in picked)


def test_build_pages_resume_from_the_cursor_and_give_the_same_reservoirs():
    one, hub, _ = star()
    one.call("tf_features.build_reservoirs", {"capacity": CAPACITY, "seed": 3, **STEP})
    paged, hub2, _ = star()
    totals = build_reservoirs(
        EmbeddedSource(paged), {"capacity": CAPACITY, "seed": 3, "batch_nodes": 7, **STEP}
    )
    assert totals == {"nodes": paged.node_count, "reservoirs": 1, "removed": 0}
    assert paged.get_property(hub2, NAME) == one.get_property(hub, NAME)


def test_a_hub_draws_from_its_reservoir_by_the_exact_draw_rule():
    g, hub, low = star()
    g.call("tf_features.build_reservoirs", {"capacity": CAPACITY, "seed": 3, **STEP})
    members = sorted(stored(g, hub).keys)
    [_, hop1] = ids(g, hub, [10], reservoir_threshold=100)
    assert hop1 == [rng_for(7, hub).sample(members, 10)]  # Drawer's rule over the reservoir
    assert hop1 != ids(g, hub, [10])[1]  # (the exact path draws from all 300)
    # below the threshold, and for a node without a reservoir, the exact path's bytes
    assert ids(g, hub, [10], reservoir_threshold=DEGREE) == ids(g, hub, [10])
    assert ids(g, low, [3], reservoir_threshold=0) == ids(g, low, [3])


def test_the_reservoir_of_another_step_is_not_read():
    g, hub, _ = star()
    g.call("tf_features.build_reservoirs", {"capacity": CAPACITY, "seed": 3, **STEP})
    both = {"edge_types": ["E"], "direction": "both"}
    [row_b] = g.call("tf_features.sample", [hub], [10], [], {"seed": 7, **both})
    [row_r] = g.call(
        "tf_features.sample", [hub], [10], [], {"seed": 7, "reservoir_threshold": 0, **both}
    )
    assert row_b["blob"] == row_r["blob"]


def test_a_removed_relationships_node_loses_its_old_reservoir_on_rebuild():
    g, hub, _ = star()
    g.call("tf_features.build_reservoirs", {"capacity": CAPACITY, "seed": 3, **STEP})
    [page] = g.call("tf_features.build_reservoirs", {"capacity": DEGREE, "seed": 3, **STEP})
    assert (page["reservoirs"], page["removed"]) == (0, 1)
    assert g.get_property(hub, NAME) is None


# -- bad input -----------------------------------------------------------------------------------
def failure(g: EmbeddedGraph, *args) -> str:
    with pytest.raises(ProcedureError) as info:
        g.call(*args)
    return str(info.value).rstrip().rsplit("\n", 1)[-1]


def test_a_negative_threshold_is_refused_naming_the_option():
    g, hub, _ = star()
    text = failure(g, "tf_features.sample", [hub], [10], [], {"reservoir_threshold": -1})
    assert "options.reservoir_threshold: expected an integer >= 0" in text
    assert "got int -1" in text


def test_a_capacity_below_the_fanout_is_refused_naming_the_option_and_the_node():
    g, hub, _ = star()
    g.call("tf_features.build_reservoirs", {"capacity": 8, "seed": 3, **STEP})
    args = ("tf_features.sample", [hub], [10], [], {"reservoir_threshold": 100, **STEP})
    assert failure(g, *args).endswith(
        f"options.reservoir_threshold: node {hub} has a reservoir ({NAME!r}) of capacity 8, "
        "below hop 1's fanout 10: rebuild it with options.capacity >= 10 "
        "(tf_features.build_reservoirs)"
    )
    # a hub met again at a later hop with a larger fanout is checked there too
    both = {"edge_types": ["E"], "direction": "both"}
    g.call("tf_features.build_reservoirs", {"capacity": 12, "seed": 3, **both})
    args = ("tf_features.sample", [hub], [12, 1, 13], [], {"reservoir_threshold": 100, **both})
    text = failure(g, *args)
    assert "below hop 3's fanout 13" in text


def test_a_reservoir_of_another_format_is_refused_naming_the_node():
    g, hub, _ = star()
    g.call("tf_features.build_reservoirs", {"capacity": CAPACITY, "seed": 3, **STEP})
    old = list(g.get_property(hub, NAME))
    g.set_property(hub, NAME, [FORMAT - 1, *old[1:]])
    text = failure(g, "tf_features.sample", [hub], [10], [], {"reservoir_threshold": 100, **STEP})
    assert text.endswith(
        f"options.reservoir_threshold: node {hub} has a reservoir ({NAME!r}) of format "
        f"{FORMAT - 1}, this sampler reads format {FORMAT}: rebuild it with "
        "tf_features.build_reservoirs"
    )
    g.set_property(hub, NAME, old[:-1])  # a truncated one
    text = failure(g, "tf_features.sample", [hub], [10], [], {"reservoir_threshold": 100, **STEP})
    assert f"node {hub} property {NAME!r}: a malformed reservoir (40 members" in text


def test_build_options_are_checked_by_name():
    g, _, _ = star(10)
    assert "options.capacity: expected the reservoir size R" in failure(
        g, "tf_features.build_reservoirs", {}
    )
    assert "options.capacity: expected an integer >= 1, got int 0" in failure(
        g, "tf_features.build_reservoirs", {"capacity": 0}
    )
    assert "options: unknown option 'fanout'" in failure(
        g, "tf_features.build_reservoirs", {"capacity": 3, "fanout": 2}
    )


# -- maintenance ---------------------------------------------------------------------------------
def churn(rng: random.Random, n: int, steps: int) -> list[tuple]:
    """``steps`` changes to a hub with relationships 0..n-1 (relationship i to neighbour key i):
    ``("created", rel, key)`` of a new relationship or ``("deleted", rel, None)`` of a
    uniformly chosen current one, at random while the hub keeps between n/2 and 2n."""
    current = list(range(n))
    out = []
    rel = n
    for _ in range(steps):
        create = len(current) < n // 2 or (len(current) < 2 * n and rng.random() < 0.5)
        if create:
            out.append(("created", rel, rel))
            current.append(rel)
            rel += 1
        else:
            out.append(("deleted", current.pop(rng.randrange(len(current))), None))
    return out


def maintained(
    seed: int, n: int, changes: list[tuple], capacity: int, pairing: bool = True
) -> Reservoir:
    """A reservoir over relationships 0..n-1 (relationship i to neighbour key i) built with
    ``seed`` as ``build`` builds it, then maintained through ``changes`` in batches of 100 as
    ``update`` applies them (one generator per batch); without ``pairing`` deletions are
    forgotten (a short reservoir then takes every insert: the naive refill)."""
    picked = sorted(rng_for(seed, "reservoir/0").sample(range(n), capacity))
    res = Reservoir(capacity, n, 0, 0, seed, 0, list(picked), list(picked), list(picked))
    for lo in range(0, len(changes), 100):
        rng = rng_for(seed, f"reservoir/0/{lo + 1}")
        for kind, rel, key in changes[lo : lo + 100]:
            if kind == "created":
                res.insert(rel, key, key, rng)
            else:
                res.delete(rel)
                if not pairing:
                    res.c1 = res.c2 = 0
    return res


def chi_square_critical(df: int, z: float = 3.090) -> float:
    """The chi-square quantile at the normal quantile ``z`` (3.090: 0.999) by the
    Wilson-Hilferty approximation."""
    return df * (1 - 2 / (9 * df) + z * math.sqrt(2 / (9 * df))) ** 3


def frequencies(trials: int, n: int, changes: list[tuple], pairing: bool) -> dict[int, int]:
    """How often each final neighbour is among 10 drawn from each of ``trials`` reservoirs
    (capacity 30, built with seeds 0..trials-1) maintained through ``changes``."""
    final = set(range(n))
    for kind, rel, _ in changes:
        if kind == "created":
            final.add(rel)
        else:
            final.discard(rel)
    counts = dict.fromkeys(final, 0)
    for seed in range(trials):
        res = maintained(seed, n, changes, 30, pairing)
        assert res.degree == len(final) and set(res.rels) <= final
        for key in rng_for(seed, "draw").sample(sorted(res.keys), min(10, len(res.keys))):
            counts[key] += 1
    return counts


def chi_square(counts: dict[int, int]) -> float:
    """Pearson's statistic of ``counts`` against the uniform distribution over its keys."""
    expected = sum(counts.values()) / len(counts)
    return sum((c - expected) ** 2 / expected for c in counts.values())


def test_maintained_reservoirs_draw_each_neighbour_uniformly():
    """Over reservoirs built with 120 seeds and each maintained through the same 10,000
    inserts and deletes, the neighbours 10 draws per reservoir pick are uniform over the hub's
    final relationships (chi-square at 0.1%, ~12 expected per neighbour)."""
    changes = churn(random.Random(5), 100, 10_000)
    counts = frequencies(120, 100, changes, pairing=True)
    assert chi_square(counts) < chi_square_critical(len(counts) - 1)
    # the test has power: the naive refill (a short reservoir takes every insert) fails it
    naive = frequencies(60, 100, changes, pairing=False)
    assert chi_square(naive) > chi_square_critical(len(naive) - 1)


def test_update_reservoirs_applies_the_change_log_once():
    g, hub, _ = star()
    source = EmbeddedSource(g)
    log = ChangeLog(source)
    build_reservoirs(source, {"capacity": CAPACITY, "seed": 3, **STEP}, log=log)
    before = stored(g, hub)
    changes = []
    for i in range(60):  # 60 new leaves, and a deletion of every member but the first 10
        leaf = g.add_node(["N"], {"id": 50_000 + i})
        rel = g.add_edge(hub, leaf, "E")
        changes.append(
            Change("created", "relationship", rel, rel_type="E", start_id=hub, end_id=leaf)
        )
    for rel, key in list(zip(before.rels, before.keys))[10:]:
        changes.append(
            Change("deleted", "relationship", rel, rel_type="E", start_id=hub, end_id=key)
        )
    changes.append(Change("created", "relationship", 10**6, rel_type="F", start_id=hub, end_id=hub))
    log.record(changes)
    totals, cursor = apply_to_reservoirs(log, STEP, limit=25)
    assert cursor == len(changes)
    assert totals["applied"] == 60 + 30 and totals["skipped"] == 0
    after = stored(g, hub)
    assert after.degree == DEGREE + 60 - 30  # (the :F change is not of the step)
    assert after.applied_seq == len(changes) - 1
    assert after.c1 + after.c2 + len(after.keys) >= 10
    # the same stream applied again changes nothing
    again, _ = apply_to_reservoirs(log, STEP, after=0, limit=1000)
    assert again["applied"] == 0 and again["skipped"] == 60 + 30
    assert stored(g, hub) == after


def test_a_reservoir_shrunk_below_the_fanout_is_refused_naming_the_node():
    g, hub, _ = star()
    source = EmbeddedSource(g)
    log = ChangeLog(source)
    build_reservoirs(source, {"capacity": 12, "seed": 3, **STEP}, log=log)
    res = stored(g, hub)
    log.record(
        Change("deleted", "relationship", rel, rel_type="E", start_id=hub, end_id=key)
        for rel, key in list(zip(res.rels, res.keys))[:5]
    )
    totals, _ = apply_to_reservoirs(log, STEP)
    assert totals["short"] == 1
    text = failure(g, "tf_features.sample", [hub], [10], [], {"reservoir_threshold": 0, **STEP})
    assert text.endswith(
        f"options.reservoir_threshold: node {hub} has a reservoir ({NAME!r}) holding 7 distinct "
        "neighbours (capacity 12, shrunk by deletions or parallel relationships), below hop 1's "
        "fanout 10: rebuild it (tf_features.build_reservoirs)"
    )


def test_with_replacement_a_reservoir_shrunk_below_the_fanout_draws_from_its_members():
    """With replacement a reservoir needs one distinct neighbour, not the fanout (the exact
    path's draw with replacement fills f slots from d >= 1 neighbours)."""
    g, hub, _ = star()
    source = EmbeddedSource(g)
    log = ChangeLog(source)
    build_reservoirs(source, {"capacity": 12, "seed": 3, **STEP}, log=log)
    res = stored(g, hub)
    members = list(zip(res.rels, res.keys))

    def delete(part: list) -> None:
        log.record(
            Change("deleted", "relationship", rel, rel_type="E", start_id=hub, end_id=key)
            for rel, key in part
        )
        apply_to_reservoirs(log, STEP)  # (re-applying the earlier changes: skipped)

    delete(members[:11])
    [left] = stored(g, hub).keys
    assert ids(g, hub, [10], reservoir_threshold=0, replace=True) == [[hub], [[left] * 10]]
    delete(members[11:])
    assert stored(g, hub).keys == []
    options = {"reservoir_threshold": 0, **STEP, "replace": True}
    text = failure(g, "tf_features.sample", [hub], [10], [], options)
    assert text.endswith(
        f"options.reservoir_threshold: node {hub} has a reservoir ({NAME!r}) holding 0 distinct "
        "neighbours (capacity 12, shrunk by deletions or parallel relationships), below the one "
        "neighbour hop 1's draw with replacement needs: rebuild it (tf_features.build_reservoirs)"
    )


# -- typed steps (tf_features.sample_typed) -------------------------------------------------------
def shop(buyers: int = 120) -> tuple[EmbeddedGraph, int]:
    """One product bought by ``buyers`` users (ids 1000 + i) and a category; the product's id is
    7."""
    g = EmbeddedGraph()
    product = g.add_node(["Product"], {"id": 7})
    for i in range(buyers):
        g.add_edge(g.add_node(["User"], {"id": 1000 + i}), product, "BOUGHT")
    g.add_edge(product, g.add_node(["Category"], {"id": 3}), "IN")
    return g, product


TYPED_STEP = {
    "edge_types": ["BOUGHT"],
    "direction": "in",
    "id_property": "id",
    "label": "Product",
    "neighbour_label": "User",
}


def typed_ids(g: EmbeddedGraph, **options) -> list[int]:
    [row] = g.call(
        "tf_features.sample_typed",
        [7],
        {"(:Product)<-[:BOUGHT]-(:User)": [5]},
        {},
        {"label": "Product", "id_property": "id", "seed": 4, **options},
    )
    return blob.unpack_b64(row["blob"])["ids_h1_User"].tolist()


def test_a_typed_step_draws_from_its_reservoir_by_the_exact_draw_rule():
    g, product = shop()
    g.call("tf_features.build_reservoirs", {"capacity": 20, "seed": 2, **TYPED_STEP})
    name = property_name(("BOUGHT",), "in", "id", "User")
    members = sorted(stored(g, product, name).keys)
    assert len(members) == 20 and all(1000 <= k < 1120 for k in members)
    assert typed_ids(g, reservoir_threshold=50) == [rng_for(4, 7).sample(members, 5)]
    assert typed_ids(g, reservoir_threshold=120) == typed_ids(g)  # at the threshold: exact
    text = failure(
        g,
        "tf_features.sample_typed",
        [7],
        {"(:Product)<-[:BOUGHT]-(:User)": [5]},
        {},
        {"label": "Product", "reservoir_threshold": 0, "exclude_splits": ["test"]},
    )
    assert "options.reservoir_threshold: expected without options.exclude_splits" in text


def shop_with_typed_reservoirs():
    """The shop graph with reservoirs of :data:`TYPED_STEP` (R = 20) built, a change log, and
    the product hub: ``(graph, product, log, reservoir property)``."""
    g, product = shop()
    source = EmbeddedSource(g)
    log = ChangeLog(source)
    build_reservoirs(source, {"capacity": 20, "seed": 2, **TYPED_STEP}, log=log)
    return g, product, log, property_name(("BOUGHT",), "in", "id", "User")


def test_a_typed_steps_reservoir_is_maintained_from_changes_to_its_neighbour_label_only():
    g, product, log, name = shop_with_typed_reservoirs()
    before = stored(g, product, name)
    changes = []
    for labels, key in ((["User"], 5000), (["Bot"], 6000)):
        buyer = g.add_node(labels, {"id": key})
        rel = g.add_edge(buyer, product, "BOUGHT")
        changes.append(Change("created", "relationship", rel, rel_type="BOUGHT", start_id=buyer,
                              end_id=product, start_key=key, end_key=7))  # fmt: skip
    log.record(changes)
    step = {k: TYPED_STEP[k] for k in ("edge_types", "direction", "id_property", "neighbour_label")}
    totals, _ = apply_to_reservoirs(log, step)
    assert (totals["applied"], totals["updated"]) == (
        1,
        1,
    )  # the :Bot's relationship: not of the step
    assert stored(g, product, name).degree == before.degree + 1


def test_a_deleted_relationship_leaves_whatever_its_neighbour_holds_now():
    """A deleted relationship of a typed step is not filtered by ``neighbour_label`` (its other
    end may be gone, or have lost the label): a member leaves, a non-member counts when its other
    end has the label or the same changes delete it listing the label, and one to a node that
    never had the label changes nothing. Memgraph logs each relationship a ``DETACH DELETE``
    removes (memgraph/memgraph src/query/plan/operator.cpp, the DeleteCursor's detach branch;
    tests/e2e/triggers/on_delete_triggers.cpp), alongside the node's own deletion."""
    g = EmbeddedGraph()
    product = g.add_node(["Product"], {"id": 7})
    buyer, rel = {}, {}
    for key in [*range(1000, 1120), 6000]:
        buyer[key] = g.add_node(["Bot"] if key == 6000 else ["User"], {"id": key})
        rel[key] = g.add_edge(buyer[key], product, "BOUGHT")
    source = EmbeddedSource(g)
    log = ChangeLog(source)
    build_reservoirs(source, {"capacity": 20, "seed": 2, **TYPED_STEP}, log=log)
    name = property_name(("BOUGHT",), "in", "id", "User")
    before = stored(g, product, name)
    member = before.keys[0]  # loses the label, then its relationship
    outside = min(k for k in range(1000, 1120) if k not in before.keys)  # deleted with its node

    def deleted(key: int) -> Change:
        return Change("deleted", "relationship", rel[key], rel_type="BOUGHT",
                      start_id=buyer[key], end_id=product, start_key=key, end_key=7)  # fmt: skip

    for key in (member, outside, 6000):
        g.delete_edge(rel[key])
        g.remove_label(buyer[key], "Bot" if key == 6000 else "User")
    gone = Change("deleted", "node", buyer[outside], key=outside, labels=("User",))
    log.record([deleted(member), deleted(outside), gone, deleted(6000)])
    step = {k: TYPED_STEP[k] for k in ("edge_types", "direction", "id_property", "neighbour_label")}
    totals, _ = apply_to_reservoirs(log, step)
    after = stored(g, product, name)
    assert totals["updated"] == 1 and rel[member] not in after.rels
    assert (after.degree, after.c1, after.c2) == (before.degree - 2, 1, 1)
    assert sorted(after.keys) == sorted(k for k in before.keys if k != member)


def test_a_deletion_whose_other_end_is_gone_updates_the_hub_and_skips_the_gone_node():
    """Both endpoints of a deleted relationship get its change (``direction: both``); one
    deleted since (internal id no longer in the graph: ``get_vertex_by_id`` raises IndexError,
    as Memgraph's mgp does) holds no reservoir and is skipped, and the hub's degree falls."""
    g, hub, _ = star()
    step = {"edge_types": ["E"], "direction": "both"}
    name = property_name(("E",), "both", None)
    source = EmbeddedSource(g)
    log = ChangeLog(source)
    build_reservoirs(source, {"capacity": 12, "seed": 3, **step}, log=log)
    before = stored(g, hub, name)
    gone = 10**6
    log.record([Change("deleted", "relationship", 5 * 10**6, rel_type="E", start_id=hub,
                       end_id=gone), Change("deleted", "node", gone)])  # fmt: skip
    totals, _ = apply_to_reservoirs(log, step)
    after = stored(g, hub, name)
    assert (totals["applied"], totals["updated"]) == (1, 1)
    assert (after.degree, after.c2, after.keys) == (before.degree - 1, 1, before.keys)


# -- a reservoir behind the graph: each drawn member is checked ----------------------------------
TYPED_SPEC = {"(:Product)<-[:BOUGHT]-(:User)": [20]}
TYPED_OPTIONS = {"label": "Product", "id_property": "id", "seed": 4, "reservoir_threshold": 50}
UNTYPED_OPTIONS = {**TYPED_OPTIONS, "edge_types": ["BOUGHT"], "direction": "in"}
LAGS = (
    "the reservoir lags the graph (apply the change log with tf_features.update_reservoirs, or "
    "rebuild it with tf_features.build_reservoirs)"
)


def lagging_shop() -> tuple[EmbeddedGraph, int, Reservoir, Reservoir]:
    """:func:`shop` with the typed step's reservoir (20 members, all drawn by
    :data:`TYPED_SPEC`) and the untyped step's: (graph, product, typed, untyped reservoir)."""
    g, product = shop()
    g.call("tf_features.build_reservoirs", {"capacity": 20, "seed": 2, **TYPED_STEP})
    untyped = {k: v for k, v in TYPED_STEP.items() if k != "neighbour_label"}
    g.call("tf_features.build_reservoirs", {"capacity": 20, "seed": 2, **untyped})
    typed_res = stored(g, product, property_name(("BOUGHT",), "in", "id", "User"))
    untyped_res = stored(g, product, property_name(("BOUGHT",), "in", "id"))
    assert len(set(typed_res.keys)) == len(set(untyped_res.keys)) == 20
    return g, product, typed_res, untyped_res


def typed_failure(g: EmbeddedGraph, spec: dict | None = None, **options) -> str:
    args = ([7], spec or TYPED_SPEC, {}, {**TYPED_OPTIONS, **options})
    return failure(g, "tf_features.sample_typed", *args)


def untyped_failure(g: EmbeddedGraph) -> str:
    return failure(g, "tf_features.sample", [7], [20], [], UNTYPED_OPTIONS)


def internal_of(res: Reservoir, key: int) -> int:
    return res.internals[res.keys.index(key)]


def test_a_typed_member_whose_key_changed_is_refused_as_the_untyped_one_is():
    """A member whose ``id_property`` value changed since the build: the typed draw reads its
    key and refuses it (it does not stay under its stored key), naming the node by label and
    stored key, its internal id and the option, as the untyped draw does. The slots hold the 20
    members in key order (fanout 20: all of them), so the smallest key is checked first."""
    g, _, typed_res, untyped_res = lagging_shop()
    before = typed_ids(g, reservoir_threshold=50)
    for internal in typed_res.internals:
        g.set_property(internal, "id", g.get_property(internal, "id") + 5000)
    first = min(typed_res.keys)
    assert typed_failure(g).endswith(
        f"(:User {{id: {first}}}) (internal id {internal_of(typed_res, first)}): in a reservoir "
        f"(options.reservoir_threshold) but no longer in the graph under that key: {LAGS}"
    )
    first = min(untyped_res.keys)
    assert untyped_failure(g).endswith(
        f"node with id = {first} (internal id {internal_of(untyped_res, first)}): in a "
        f"reservoir (options.reservoir_threshold) but no longer in the graph under that key: "
        f"{LAGS}"
    )
    for internal in typed_res.internals:  # the keys back: the draw is the one before
        g.set_property(internal, "id", g.get_property(internal, "id") - 5000)
    assert typed_ids(g, reservoir_threshold=50) == before


def test_a_member_that_is_a_hub_is_checked_among_all_its_relationships():
    """A drawn member with many relationships of its own (a hub drawn by a hub): its member
    relationship is looked for among all of them, on either side (``both``: the member's
    outgoing, then its incoming ones), of the step's types only; the draw goes through while
    it is there and is refused naming it once deleted, though a relationship of another type
    still joins the same two nodes."""
    g = EmbeddedGraph()
    hub, other = g.add_node(["N"]), g.add_node(["N"])
    leaves = [g.add_node(["N"]) for _ in range(30)]
    rels = [g.add_edge(hub, leaf, "E") for leaf in leaves[:9]]
    for leaf in leaves:  # the other hub's own: 30 outgoing, 30 incoming, then the hub's
        g.add_edge(other, leaf, "E")
        g.add_edge(leaf, other, "E")
    g.add_edge(hub, other, "F")
    link = g.add_edge(hub, other, "E")  # (the last of the other hub's incoming relationships)
    members = sorted([*leaves[:9], other])
    rel_of = dict(zip([*leaves[:9], other], [*rels, link]))
    step = {"edge_types": ["E"], "direction": "both"}
    name = property_name(("E",), "both", None)
    res = Reservoir(10, 500, 0, 0, 0, 0, members, [rel_of[m] for m in members], members)
    g.set_property(hub, name, res.encode())
    [_, hop1] = ids(g, hub, [10], reservoir_threshold=100, **step)
    assert sorted(hop1[0]) == members  # (all ten drawn, the other hub among them)
    g.delete_edge(link)
    text = failure(g, "tf_features.sample", [hub], [10], [], {"reservoir_threshold": 100, **step})
    assert text.endswith(
        f"relationship {link} of ()-[:E]-() between node {hub} and node {other}: in node "
        f"{hub}'s reservoir (options.reservoir_threshold) but no longer in the graph: {LAGS}"
    )


PUBLIC_SAMPLE = """
import mgp
from memgraph_tf import blob, procedures
from memgraph_tf.procedures.mgp_access import MgpGraphAccess


@mgp.read_proc
def sample(ctx: mgp.ProcCtx, seeds: mgp.List[mgp.Any], fanouts: mgp.List[mgp.Any],
           properties: mgp.List[mgp.Any], options: mgp.Nullable[mgp.Map] = None
           ) -> mgp.Record(blob=str):
    runner = procedures.ProcedureRunner(lambda opts: MgpGraphAccess(ctx, opts, handles=False))
    return mgp.Record(blob=blob.b64encode(runner.sample(seeds, fanouts, properties, options)))
"""
WALKED = 12  # the member's incoming relationships (the side verify walks for an outgoing step)
PROCEDURES = ["tf_features.sample", "public_walk.sample"]  # the _mgp handles, the public mgp API


def member_among_many(tmp_path, link_at: int, wrong_at: int = 0) -> tuple[EmbeddedGraph, dict]:
    """A hub whose reservoir (written here, :data:`STEP`) holds ten members: nine leaves and a
    node with :data:`WALKED` incoming relationships, the hub's ``:E`` one the ``link_at``-th of
    them (from 1, in the order the graph gives them) and, with ``wrong_at``, an ``:F`` one from
    the hub the ``wrong_at``-th, the others ``:E`` from nodes outside the reservoir. The
    reservoir stores the member's ``:E`` relationship, or with ``wrong_at`` its ``:F`` one (a
    corrupted reservoir: another type). Loads :data:`PUBLIC_SAMPLE` as ``public_walk``.
    Returns the graph and ``hub``, ``member``, ``stored`` (its relationship in the reservoir),
    ``link`` and ``members`` (sorted)."""
    g = EmbeddedGraph()
    path = tmp_path / "public_walk.py"
    path.write_text(PUBLIC_SAMPLE)
    g.load_module(path)
    hub, member = g.add_node(["N"]), g.add_node(["N"])
    leaves = [g.add_node(["N"]) for _ in range(9)]
    rels = [g.add_edge(hub, leaf, "E") for leaf in leaves]
    link = wrong = -1
    for position in range(1, WALKED + 1):
        if position == link_at:
            link = g.add_edge(hub, member, "E")
        elif position == wrong_at:
            wrong = g.add_edge(hub, member, "F")
        else:
            g.add_edge(g.add_node(["N"]), member, "E")
    stored_rel = wrong if wrong_at else link
    assert link >= 0 and (wrong >= 0) == bool(wrong_at)
    rel_of = dict(zip([*leaves, member], [*rels, stored_rel]))
    members = sorted(rel_of)
    res = Reservoir(10, 500, 0, 0, 0, 0, members, [rel_of[m] for m in members], members)
    g.set_property(hub, NAME, res.encode())
    return g, {"hub": hub, "member": member, "stored": stored_rel, "link": link, "members": members}


def stale_relationship_text(rel: int, hub: int, member: int) -> str:
    return (
        f"relationship {rel} of ()-[:E]->() between node {hub} and node {member}: in node "
        f"{hub}'s reservoir (options.reservoir_threshold) but no longer in the graph: {LAGS}"
    )


@pytest.mark.parametrize("procedure", PROCEDURES)
@pytest.mark.parametrize("link_at", [1, 8, 9, WALKED])
def test_a_member_relationship_is_found_wherever_it_is_among_the_members_ones(
    tmp_path, link_at, procedure
):
    """The member's relationship is found whether it is among the first relationships the
    check walks one by one (8 in the handle path) or among those read after them (the 9th: the
    first of those; the last), on both paths: the draw goes through, and is refused naming it
    once it is deleted."""
    g, m = member_among_many(tmp_path, link_at)
    opts = {"seed": 7, **STEP, "reservoir_threshold": 100}
    [row] = g.call(procedure, [m["hub"]], [10], [], opts)
    hop1 = blob.unpack_b64(row["blob"])["ids_1"]
    assert sorted(hop1[0].tolist()) == m["members"]  # (all ten drawn, so all ten checked)
    g.delete_edge(m["link"])
    assert failure(g, procedure, [m["hub"]], [10], [], opts).endswith(
        stale_relationship_text(m["link"], m["hub"], m["member"])
    )


@pytest.mark.parametrize("procedure", PROCEDURES)
@pytest.mark.parametrize("wrong_at", [1, 8, 9, WALKED])
def test_a_stored_relationship_of_another_type_between_the_same_nodes_is_refused(
    tmp_path, wrong_at, procedure
):
    """A corrupted reservoir whose member relationship is an ``:F`` one (not the step's type)
    joining the hub and the member, among the first relationships walked one by one or among
    those read after them, an ``:E`` one joining them too: refused as a relationship no longer
    in the graph, on both paths."""
    g, m = member_among_many(tmp_path, 1 if wrong_at == WALKED else WALKED, wrong_at)
    opts = {"seed": 7, **STEP, "reservoir_threshold": 100}
    assert failure(g, procedure, [m["hub"]], [10], [], opts).endswith(
        stale_relationship_text(m["stored"], m["hub"], m["member"])
    )


def test_a_member_relationship_deleted_since_is_refused_with_or_without_edge_columns():
    """A member relationship the graph no longer holds (its neighbour still there): the draw
    refuses it naming the relationship, the hub and the member, typed (with or without
    ``options.edge_feature_spec``: the same message) and untyped alike -- before, only edge
    columns read it and the sample held a node no longer a neighbour."""
    g, _, typed_res, untyped_res = lagging_shop()
    first = min(typed_res.keys)
    rel = typed_res.rels[typed_res.keys.index(first)]
    g.delete_edge(rel)
    expected = (
        f"relationship {rel} of (:Product)<-[:BOUGHT]-(:User) between (:Product {{id: 7}}) and "
        f"(:User {{id: {first}}}): in (:Product {{id: 7}})'s reservoir "
        f"(options.reservoir_threshold) but no longer in the graph: {LAGS}"
    )
    assert typed_failure(g).endswith(expected)
    spec = {"label": "BOUGHT", "properties": [{"name": "at", "kind": "numeric"}]}
    edge_spec = {"edge_feature_spec": {"(:Product)<-[:BOUGHT]-(:User)": spec}}
    assert typed_failure(g, **edge_spec).endswith(expected)
    assert untyped_res.rels[untyped_res.keys.index(first)] == rel  # (the same 20 members)
    assert untyped_failure(g).endswith(
        f"relationship {rel} of ()<-[:BOUGHT]-() between node with id = 7 and node with id = "
        f"{first}: in node with id = 7's reservoir (options.reservoir_threshold) but no longer in "
        f"the graph: {LAGS}"
    )


def test_a_typed_member_without_the_steps_label_is_refused():
    """A member that lost the step's right label since the build (its relationship still
    there): refused naming it, its internal id and the label."""
    g, _, typed_res, _ = lagging_shop()
    first = min(typed_res.keys)
    g.remove_label(internal_of(typed_res, first), "User")
    assert typed_failure(g).endswith(
        f"(:User {{id: {first}}}) (internal id {internal_of(typed_res, first)}): in a reservoir "
        f"(options.reservoir_threshold) but no longer a :User node: {LAGS}"
    )


def test_typed_reservoir_errors_name_the_hub_by_label_and_key():
    """A typed call's reservoir errors name the hub as its other errors do: ``(:Product {id:
    7})``, not by internal id (which differs from the key here)."""
    g, product, _, _ = lagging_shop()
    name = property_name(("BOUGHT",), "in", "id", "User")
    assert product != 7
    assert typed_failure(g, {"(:Product)<-[:BOUGHT]-(:User)": [21]}).endswith(
        f"options.reservoir_threshold: (:Product {{id: 7}}) has a reservoir ({name!r}) of "
        "capacity 20, below hop 1's fanout 21: rebuild it with options.capacity >= 21 "
        "(tf_features.build_reservoirs)"
    )
    g.set_property(product, name, "no reservoir")
    assert typed_failure(g).endswith(
        f"options.reservoir_threshold: (:Product {{id: 7}}) property {name!r}: expected a "
        f"reservoir (a list of integers, format {FORMAT}), got str 'no reservoir'; rebuild it "
        "with tf_features.build_reservoirs"
    )


def test_update_reservoirs_needs_a_key_only_for_a_creation_it_applies():
    """A change's ``start_key`` / ``end_key`` is checked only where a held reservoir takes the
    relationship in: a relationship of the step's type between nodes that hold no reservoir (of
    another label, keyed by another property) and a deletion pass without keys; a creation at
    the hub without its other end's key is refused naming the change and the node."""
    g, product, log, name = shop_with_typed_reservoirs()
    before = stored(g, product, name)
    x, y = (g.add_node(["Bot"], {"sku": s}) for s in "ab")
    unrelated = g.add_edge(x, y, "BOUGHT")
    member, start = before.rels[0], before.internals[0]
    g.delete_edge(member)
    log.record([
        Change("created", "relationship", unrelated, rel_type="BOUGHT", start_id=x, end_id=y),
        Change("deleted", "relationship", member, rel_type="BOUGHT", start_id=start,
               end_id=product),
    ])  # fmt: skip
    step = {k: TYPED_STEP[k] for k in ("edge_types", "direction", "id_property", "neighbour_label")}
    totals, _ = apply_to_reservoirs(log, step)
    assert (totals["applied"], totals["updated"]) == (1, 1)
    after = stored(g, product, name)
    assert member not in after.rels and (after.degree, after.c1) == (before.degree - 1, 1)
    buyer = g.add_node(["User"], {"id": 9000})
    rel = g.add_edge(buyer, product, "BOUGHT")
    change = {"entity": "relationship", "kind": "created", "element_id": rel, "seq": 99,
              "rel_type": "BOUGHT", "start_id": buyer, "end_id": product, "end_key": 7}  # fmt: skip
    assert failure(g, "tf_features.update_reservoirs", [change], step).endswith(
        f"changes[0]: expected the integer id of node {buyer} (options.id_property: the "
        "change's start_key / end_key), got null"
    )
