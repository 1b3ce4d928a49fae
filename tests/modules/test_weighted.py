"""Weighted edge steps of ``tf_features.sample_typed`` on the embedded runtime: neighbours drawn in
proportion to a relationship property summed over parallel relationships, without replacement,
keyed like the uniform draws; a bad weight fails the call naming the relationship, property and
value (memgraph_tf.procedures.weighted)."""

from __future__ import annotations

import collections
import itertools
import math
import random

import numpy as np
import pytest

from memgraph_tf import blob
from memgraph_tf.client import EmbeddedSource
from memgraph_tf.embedded import EmbeddedGraph
from memgraph_tf.errors import GraphDataError
from memgraph_tf.procedures.weighted import Weighted, WeightedDrawer
from memgraph_tf.typed_sampling import EdgeStep, TypedSamplingSpec

# each hub's relationships to the five leaves: (leaf, amount) -- leaf 2 twice (total 3), leaf 3
# weighs nothing
HUB_EDGES = [(1, 1.0), (2, 1), (2, 2.0), (3, 0.0), (4, 6.0), (5, 2.0)]
TOTALS = {1: 1.0, 2: 3.0, 4: 6.0, 5: 2.0}
HUBS = 2000
WEIGHTED = "(:Hub)-[:PAYS {weight: amount}]->(:Leaf)"
OPTS = {"label": "Hub", "id_property": "id", "seed": 11}


@pytest.fixture(scope="module")
def hubs():
    g = EmbeddedGraph()
    leaves = {i: g.add_node(["Leaf"], {"id": i}) for i in range(1, 6)}
    for h in range(HUBS):
        hub = g.add_node(["Hub"], {"id": h})
        for leaf, amount in HUB_EDGES:
            g.add_edge(hub, leaves[leaf], "PAYS", {"amount": amount})
    return g, EmbeddedSource(g)


def leaf_ids(source, fanout, options=OPTS, step=WEIGHTED):
    got = blob.unpack(source.sample_typed(list(range(HUBS)), {step: [fanout]}, None, options))
    return got["ids_h1_Leaf"].tolist(), got["mask_h1_Leaf"].tolist()


def test_the_weight_is_part_of_the_step_pattern_and_round_trips():
    step = EdgeStep.parse("(:Account)-[:TRANSFER {weight: amount}]->(:Account)")
    assert step == EdgeStep("Account", "TRANSFER", "Account", "out", "amount")
    assert str(step) == "(:Account)-[:TRANSFER {weight: amount}]->(:Account)"
    back = EdgeStep.parse("(:A) <-[:T{weight:w}]- (:B)")
    assert (back.direction, back.weight) == ("in", "w") and EdgeStep.parse(str(back)) == back
    spec = TypedSamplingSpec.from_num_neighbors("A", {str(back): [2], "(:A)<-[:T]-(:B)": [1]})
    assert len(spec.steps) == 2  # the weighted and the uniform step are different steps
    with pytest.raises(ValueError, match=r"edge step: weight: expected a plain label or type name"):
        EdgeStep("A", "T", "B", "out", "a b")
    with pytest.raises(
        ValueError, match=r"edge step: expected a pattern like .*\{weight: amount\}"
    ):
        EdgeStep.parse("(:A)-[:T {weight: }]->(:B)")


def test_one_slot_draws_each_neighbour_in_proportion_to_its_total_weight(hubs):
    _, source = hubs
    ids, mask = leaf_ids(source, 1)
    assert all(m == [True] for m in mask)
    counts = collections.Counter(row[0] for row in ids)
    assert set(counts) == set(TOTALS)  # leaf 3 (weight 0) is never drawn
    total = sum(TOTALS.values())
    for leaf, weight in TOTALS.items():
        assert counts[leaf] / HUBS == pytest.approx(weight / total, abs=0.035), leaf


def test_draws_without_replacement_and_pad_when_the_weighted_neighbours_run_out(hubs):
    _, source = hubs
    ids, mask = leaf_ids(source, 2)
    assert all(len(set(row)) == 2 and 3 not in row for row in ids)
    firsts = collections.Counter(row[0] for row in ids)
    assert firsts.most_common(1)[0][0] == 4  # the heaviest is drawn first most often
    ids, mask = leaf_ids(source, 6)  # four neighbours of positive weight, six slots
    assert ids[0] == [1, 2, 4, 5, -1, -1] and mask[0] == [True] * 4 + [False] * 2
    assert all(row == ids[0] for row in ids)  # all of them in key order: no draw


def test_draws_are_keyed_and_the_uniform_step_is_untouched(hubs):
    _, source = hubs
    assert leaf_ids(source, 2) == leaf_ids(source, 2)
    assert leaf_ids(source, 2) != leaf_ids(source, 2, {**OPTS, "seed": 12})
    uniform, _ = leaf_ids(source, 1, step="(:Hub)-[:PAYS]->(:Leaf)")
    counts = collections.Counter(row[0] for row in uniform)
    assert set(counts) == {1, 2, 3, 4, 5}  # uniform over the distinct neighbours, 3 included


def reference_without_replacement(rng, nbrs, weights, f):
    """Efraimidis-Spirakis written as its paper states it: key u ** (1 / w), the f largest."""
    keys = [(1.0 - rng.random()) ** (1.0 / w) for w in weights]
    return [nbrs[i] for i in sorted(range(len(nbrs)), key=lambda i: (-keys[i], i))[:f]]


def test_the_drawer_is_efraimidis_spirakis_and_samples_with_replacement_by_running_sums():
    nbrs, weights = [10, 20, 30, 40], [0.5, 2.0, 1.0, 4.5]
    table = {7: Weighted(nbrs, weights)}
    for seed in range(50):
        ids: list[int] = []
        WeightedDrawer(2)(random.Random(seed), table, [7, -1], [True, False], ids, [])
        assert ids == reference_without_replacement(random.Random(seed), nbrs, weights, 2) + [
            -1,
            -1,
        ]
    ids, mask = [], []
    WeightedDrawer(20000, replace=True)(random.Random(3), table, [7], [True], ids, mask)
    counts = collections.Counter(ids)
    for nbr, weight in zip(nbrs, weights):
        assert counts[nbr] / 20000 == pytest.approx(weight / sum(weights), abs=0.015)
    assert all(mask)


def reference_with_replacement(rng, nbrs, weights, f):
    """The running-sums rule as the module states it: per slot ``rng.random() * total``, the
    first neighbour whose running sum exceeds it, the last where none does."""
    sums = list(itertools.accumulate(weights))
    out = []
    for _ in range(f):
        x = rng.random() * sums[-1]
        out.append(next((n for n, s in zip(nbrs, sums) if s > x), nbrs[-1]))
    return out


@pytest.mark.parametrize(
    "weights",
    [
        [0.5, 2.0, 1.0, 4.5],
        [1e-300, 3.0, 1e-300],
        [7.0],
    ],
)
def test_draws_with_replacement_follow_the_running_sums_rule_call_for_call(weights):
    """The same slots as the rule written out, and the generator left in the same state (one
    ``rng.random()`` per slot: the row's later draws see the same sequence)."""
    nbrs = [10 * (i + 1) for i in range(len(weights))]
    table = {7: Weighted(nbrs, weights)}
    for seed in range(40):
        rng, ref_rng = random.Random(seed), random.Random(seed)
        ids: list[int] = []
        WeightedDrawer(9, replace=True)(rng, table, [7, -1, 7], [True, False, True], ids, [])
        want = reference_with_replacement(ref_rng, nbrs, weights, 9)
        want += [-1] * 9 + reference_with_replacement(ref_rng, nbrs, weights, 9)
        assert ids == want
        assert rng.random() == ref_rng.random()


def test_draws_with_replacement_keep_the_ratios_of_weights_whose_sum_passes_the_largest_float():
    """Weights whose running sum passes the largest float (1e308 twice) draw, call for call, as
    the same weights scaled down by a power of two (the running-sums rule on a finite total):
    each heavy neighbour about half the slots, never the last neighbour every time."""
    nbrs, weights = [10, 20, 30], [1e308, 1e308, 5.0]
    scaled = [math.ldexp(w, -40) for w in weights]
    table = {7: Weighted(nbrs, weights)}
    for seed in range(40):
        rng, ref_rng = random.Random(seed), random.Random(seed)
        ids: list[int] = []
        WeightedDrawer(9, replace=True)(rng, table, [7], [True], ids, [])
        assert ids == reference_with_replacement(ref_rng, nbrs, scaled, 9)
        assert rng.random() == ref_rng.random()
    ids = []
    WeightedDrawer(4000, replace=True)(random.Random(5), table, [7], [True], ids, [])
    counts = collections.Counter(ids)
    assert counts[10] / 4000 == pytest.approx(0.5, abs=0.04)
    assert counts[20] / 4000 == pytest.approx(0.5, abs=0.04)


def huge_weights_graph(scale):
    """40 hubs, each with two relationships weighing ``scale * 1e308`` to leaf 1 (a total past the
    largest float when ``scale`` is 1), one to leaf 2 and one weighing ``scale * 3`` to leaf 3."""
    g = EmbeddedGraph()
    leaves = {i: g.add_node(["Leaf"], {"id": i}) for i in range(1, 4)}
    for h in range(40):
        hub = g.add_node(["Hub"], {"id": h})
        for leaf, amount in ((1, 1e308), (1, 1e308), (2, 1e308), (3, 3.0)):
            g.add_edge(hub, leaves[leaf], "PAYS", {"amount": math.ldexp(amount, scale)})
    return EmbeddedSource(g)


def test_weights_whose_totals_pass_the_largest_float_draw_as_the_same_weights_scaled_down():
    """A neighbour's total (2e308) or a node's sum of totals past the largest float neither fails
    the call nor skews the draw: the blobs are those of the graph whose weights are all scaled
    down by 2**-40 (the same ratios), with and without replacement; with replacement leaf 1
    takes about two thirds of the slots, leaf 2 one third."""
    huge, scaled = huge_weights_graph(0), huge_weights_graph(-40)
    hubs = list(range(40))
    for step in (WEIGHTED, REPLACE):
        for fanout in (1, 2, 30):
            got = huge.sample_typed(hubs, {step: [fanout]}, None, OPTS)
            assert got == scaled.sample_typed(hubs, {step: [fanout]}, None, OPTS), (step, fanout)
    ids = blob.unpack(huge.sample_typed(hubs, {REPLACE: [30]}, None, OPTS))["ids_h1_Leaf"]
    counts = collections.Counter(ids.ravel().tolist())
    assert counts[1] / ids.size == pytest.approx(2 / 3, abs=0.05)
    assert counts[2] / ids.size == pytest.approx(1 / 3, abs=0.05)


def weighted_graph(amount):
    g = EmbeddedGraph()
    a = g.add_node(["Hub"], {"id": 0})
    b = g.add_node(["Leaf"], {"id": 9})
    c = g.add_node(["Leaf"], {"id": 8})
    g.add_edge(a, c, "PAYS", {"amount": 1.0})
    g.add_edge(a, b, "PAYS", {} if amount is None else {"amount": amount})
    return EmbeddedSource(g)


@pytest.mark.parametrize(
    ("amount", "got"),
    [
        (None, "no value"),
        ("12.5", r"str '12\.5'"),
        (True, "bool True"),
        (-1.5, r"float -1\.5"),
        (math.nan, "float nan"),
        (math.inf, "float inf"),
    ],
)
def test_a_bad_weight_names_the_relationship_the_property_and_the_value(amount, got):
    source = weighted_graph(amount)
    what = (
        "a finite number >= 0" if isinstance(amount, float) else r"a number \(the step's weight\)"
    )
    message = (
        rf"relationship \(:Hub \{{id: 0\}}\)-\[:PAYS\]->\(:Leaf \{{id: 9\}}\) property 'amount': "
        rf"expected {what}, got {got}$"
    )
    with pytest.raises(GraphDataError, match=message):
        source.sample_typed([0], {WEIGHTED: [1]}, None, {**OPTS, "seed": 1})
    reverse = "(:Leaf)<-[:PAYS {weight: amount}]-(:Hub)"  # named the same from the other end
    with pytest.raises(GraphDataError, match=message):
        source.sample_typed([9], {reverse: [1]}, None, {**OPTS, "label": "Leaf"})


@pytest.fixture(scope="module")
def accounts():
    """Accounts 0..5: 0 pays 1..5 (amount 1..5), 1 pays 2 (amount 4); 0's payment to 3 is held
    out (split 'test')."""
    g = EmbeddedGraph()
    node = [g.add_node(["Acct"], {"id": i, "f": [float(i)]}) for i in range(6)]
    for b in range(1, 6):
        g.add_edge(node[0], node[b], "PAYS", {"amount": b, **({"split": "test"} if b == 3 else {})})
    g.add_edge(node[1], node[2], "PAYS", {"amount": 4.0})
    return EmbeddedSource(g)


ACCT = "(:Acct)-[:PAYS {weight: amount}]-(:Acct)"
ACCT_OPTS = {"label": "Acct", "id_property": "id"}


def test_a_held_out_relationship_is_never_walked_by_a_weighted_step(accounts):
    drawn = collections.Counter()
    for seed in range(200):
        opts = {**ACCT_OPTS, "seed": seed, "exclude_splits": ["test"]}
        got = blob.unpack(accounts.sample_typed([0], {ACCT: [2]}, None, opts))
        drawn.update(got["ids_h1_Acct"][0].tolist())
    assert set(drawn) == {1, 2, 4, 5}
    kept = blob.unpack(accounts.sample_typed([0], {ACCT: [5]}, None, {**ACCT_OPTS, "seed": 1}))
    assert kept["ids_h1_Acct"][0].tolist() == [1, 2, 3, 4, 5]  # not held out: all five


def test_a_pair_never_walks_its_own_relationship_over_a_weighted_step(accounts):
    opts = {"source_label": "Acct", "id_property": "id", "seed": 3}
    got = blob.unpack(accounts.sample_pairs([0], [4], {ACCT: [5]}, None, opts))
    assert got["src.ids_h1_Acct"][0].tolist() == [1, 2, 3, 5, -1]
    assert got["dst.ids_h1_Acct"][0].tolist() == [-1] * 5  # 4's only relationship is the pair's


def test_the_numpy_reference_sampler_refuses_a_weighted_step():
    from memgraph_tf.typed_datasets import sample_neighbourhoods, shop_graph

    graph = shop_graph(100, num_products=10, num_categories=2, num_classes=2)
    spec = TypedSamplingSpec.from_num_neighbors(
        "User", {"(:User)-[:BOUGHT {weight: amount}]->(:Product)": [2]}
    )
    with pytest.raises(ValueError, match=r"BOUGHT \{weight: amount\}\]->\(:Product\): a weighted"):
        sample_neighbourhoods(graph, spec, [0, 1], np.random.default_rng(0))


def test_without_an_id_property_the_endpoints_are_named_by_internal_id():
    source = weighted_graph(-2)
    [hub] = source.graph.find_nodes("Hub", "id", 0)
    [leaf] = source.graph.find_nodes("Leaf", "id", 9)
    message = (
        rf"relationship \(node {hub}:Hub\)-\[:PAYS\]->\(node {leaf}:Leaf\) property 'amount': "
        r"expected a finite number >= 0, got int -2$"
    )
    with pytest.raises(GraphDataError, match=message):
        source.sample_typed([hub], {WEIGHTED: [1]}, None, {"label": "Hub", "seed": 1})


REPLACE = "(:Hub)-[:PAYS {weight: amount, replace: true}]->(:Leaf)"


def test_replace_is_a_step_option_of_weighted_steps_and_round_trips():
    step = EdgeStep.parse("(:A)-[:T {weight: w, replace: true}]->(:B)")
    assert (step.weight, step.replace) == ("w", True)
    assert str(step) == "(:A)-[:T {weight: w, replace: true}]->(:B)"
    assert EdgeStep.parse("(:A)-[:T{weight:w,replace:false}]->(:B)") == EdgeStep.parse(
        "(:A)-[:T {weight: w}]->(:B)"
    )
    spec = TypedSamplingSpec.from_num_neighbors(
        "A", {str(step): [2], "(:A)-[:T {weight: w}]->(:B)": [1]}
    )
    assert len(spec.steps) == 2  # with and without replacement are different steps
    with pytest.raises(ValueError, match=r"replace: expected on a step with a weight only"):
        EdgeStep.parse("(:A)-[:T {time: ts, replace: true}]->(:B)")
    with pytest.raises(ValueError, match=r"edge step: expected a pattern like"):
        EdgeStep.parse("(:A)-[:T {replace: true}]->(:B)")


def test_draws_with_replacement_are_proportional_to_the_weights_chi_square(hubs):
    """Six independent draws per hub (12,000 in all) over the four leaves of positive weight:
    the counts fit the weights (Pearson's chi-square, 3 degrees of freedom, below its 0.999
    quantile 16.27), every slot is filled, and a leaf repeats within a row."""
    _, source = hubs
    ids, mask = leaf_ids(source, 6, step=REPLACE)
    assert all(m == [True] * 6 for m in mask)  # four neighbours, six slots: no padding
    assert any(len(set(row)) < len(row) for row in ids)
    counts = collections.Counter(leaf for row in ids for leaf in row)
    assert set(counts) == set(TOTALS)  # leaf 3 (weight 0) is never drawn
    draws, total = 6 * HUBS, sum(TOTALS.values())
    chi2 = sum(
        (counts[leaf] - draws * w / total) ** 2 / (draws * w / total) for leaf, w in TOTALS.items()
    )
    assert chi2 < 16.27, (chi2, counts)
    # and without replacement the same counts are far from proportional (distinct leaves per row)
    ids, _ = leaf_ids(source, 4)
    assert all(sorted(row) == sorted(TOTALS) for row in ids)


def test_draws_with_replacement_are_keyed(hubs):
    _, source = hubs
    assert leaf_ids(source, 3, step=REPLACE) == leaf_ids(source, 3, step=REPLACE)
    assert leaf_ids(source, 3, step=REPLACE) != leaf_ids(
        source, 3, {**OPTS, "seed": 12}, step=REPLACE
    )
    assert leaf_ids(source, 3, step=REPLACE) != leaf_ids(source, 3)
