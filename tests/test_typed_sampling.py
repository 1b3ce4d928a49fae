"""The typed sampling contract (memgraph_tf.typed_sampling) and its numpy reference sampler
(memgraph_tf.typed_datasets.sample_neighbourhoods)."""

from __future__ import annotations

import numpy as np
import pytest

from memgraph_tf.typed_datasets import sample_neighbourhoods, shop_graph
from memgraph_tf.typed_sampling import EdgeStep, TypedSamplingSpec, slot_table_name

SHOP = {
    "(:User)-[:BOUGHT]->(:Product)": [5, 2],
    "(:User)-[:FOLLOWS]->(:User)": [3, 4],
    "(:Product)-[:IN]->(:Category)": [0, 1],
}


def test_patterns_parse_both_directions_and_round_trip():
    out = EdgeStep.parse("(:User)-[:BOUGHT]->(:Product)")
    assert out == EdgeStep("User", "BOUGHT", "Product", "out")
    back = EdgeStep.parse("(:Product) <-[:BOUGHT]- (:User)")
    assert back == EdgeStep("Product", "BOUGHT", "User", "in")
    assert EdgeStep.parse(str(back)) == back
    either = EdgeStep.parse("(:Paper)-[:CITES]-(:Paper)")
    assert either.direction == "both" and str(either) == "(:Paper)-[:CITES]-(:Paper)"
    spec = TypedSamplingSpec.from_num_neighbors("User", SHOP)
    assert TypedSamplingSpec.from_num_neighbors("User", spec.num_neighbors()) == spec


def test_the_layout_places_every_group_parent_major_in_step_order():
    layout = TypedSamplingSpec.from_num_neighbors("User", SHOP).layout()
    assert [dict(t) for t in layout.tables] == [
        {"User": 1},
        {"Product": 5, "User": 3},
        # hop 2: users' purchases (3 x 2), users' follows (3 x 4), products' categories (5 x 1)
        {"Product": 6, "User": 12, "Category": 5},
    ]
    hop2 = [(str(g.step), g.parents, g.fanout, g.offset) for g in layout.groups if g.hop == 2]
    assert hop2 == [  # the steps' sorted order, not SHOP's
        ("(:Product)-[:IN]->(:Category)", 5, 1, 0),
        ("(:User)-[:BOUGHT]->(:Product)", 3, 2, 0),
        ("(:User)-[:FOLLOWS]->(:User)", 3, 4, 0),
    ]
    assert [str(g.step) for g in layout.children(1, "User")] == [
        "(:User)-[:BOUGHT]->(:Product)",
        "(:User)-[:FOLLOWS]->(:User)",
    ]
    assert layout.slots == 1 + 8 + 23


def test_the_steps_are_numbered_in_the_patterns_sorted_order_whatever_the_mapping_order():
    """Memgraph hands a procedure the ``num_neighbors`` map with its keys sorted
    (``src/query/procedure/mg_procedure_impl.hpp`` ``mgp_map::map_type``, a sorted map), so the
    spec numbers its steps in that order, given in any order: every permutation (and a pattern
    spelt with spaces, sorted by its canonical text) gives the same spec."""
    import itertools

    canonical = TypedSamplingSpec.from_num_neighbors("User", SHOP)
    assert list(canonical.num_neighbors()) == sorted(SHOP) != list(SHOP)
    assert [list(f) for f in canonical.fanouts] == [SHOP[k] for k in sorted(SHOP)]
    for order in itertools.permutations(SHOP):
        spec = TypedSamplingSpec.from_num_neighbors("User", {k: SHOP[k] for k in order})
        assert spec == canonical and spec.layout() == canonical.layout()
    spaced = {"(:User) - [:FOLLOWS] -> (:User)": [3, 4], "(:User)-[:BOUGHT]->(:Product)": [5, 2]}
    spec = TypedSamplingSpec.from_num_neighbors("User", spaced)
    assert [str(s) for s in spec.steps] == [
        "(:User)-[:BOUGHT]->(:Product)",
        "(:User)-[:FOLLOWS]->(:User)",
    ]
    direct = TypedSamplingSpec("User", tuple(reversed(spec.steps)), ((3, 4), (5, 2)))
    assert direct == spec


@pytest.mark.parametrize(
    ("seed_label", "num_neighbors", "message"),
    [
        ("User", {"(:User)-[BOUGHT]->(:Product)": [5]}, r"expected a pattern like"),
        ("User", {"(:User)<-[:BOUGHT]->(:Product)": [5]}, r"expected a pattern like"),
        ("User", {"(:User)-[:BOUGHT]->(:Product)": [5, 1], "(:Product)-[:IN]->(:C)": [1]}, "same"),
        ("User", {"(:User)-[:BOUGHT]->(:Product)": [-1]}, r"\[0\]: expected an integer >= 0"),
        ("User", {"(:User)-[:BOUGHT]->(:Product)": [True]}, r"expected an integer >= 0, got True"),
        ("User", {"(:User)-[:BOUGHT]->(:Product)": "5"}, r"expected a list of fanouts per hop"),
        ("User", {"(:Product)-[:IN]->(:Category)": [1]}, r"never reached from seeds of 'User'"),
        ("Us er", {"(:User)-[:BOUGHT]->(:Product)": [1]}, r"seed_label: expected a plain label"),
        ("User", {}, r"expected at least one edge step"),
    ],
)
def test_bad_specs_name_the_step_and_the_value(seed_label, num_neighbors, message):
    with pytest.raises(ValueError, match=message):
        TypedSamplingSpec.from_num_neighbors(seed_label, num_neighbors)


@pytest.fixture(scope="module")
def small_shop():
    return shop_graph(300, num_products=120, follows_per_user=2, seed=5)


def test_the_reference_sampler_follows_the_typed_edges(small_shop):
    spec = TypedSamplingSpec.from_num_neighbors("User", SHOP)
    seeds = list(range(40))
    tables = sample_neighbourhoods(small_shop, spec, seeds, np.random.default_rng(0))
    bought = small_shop.edge_sets[("User", "BOUGHT", "Product")]
    follows = small_shop.edge_sets[("User", "FOLLOWS", "User")]
    product_in = small_shop.edge_sets[("Product", "IN", "Category")]
    for b, seed in enumerate(seeds):
        products = tables[slot_table_name(1, "Product")][b]
        own = set(bought.target[bought.source == seed].tolist())
        drawn = [p for p in products.tolist() if p >= 0]
        assert set(drawn) <= own and len(drawn) == len(set(drawn)) == min(5, len(own))
        followed = [u for u in tables[slot_table_name(1, "User")][b].tolist() if u >= 0]
        assert sorted(followed) == sorted(set(follows.target[follows.source == seed].tolist()))
        # every product at hop 1 has its one category below it at hop 2
        categories = tables[slot_table_name(2, "Category")][b]
        for j, p in enumerate(products.tolist()):
            expected = int(product_in.target[p]) if p >= 0 else -1
            assert categories[j] == expected
        # children of a padded hop-1 user are padded
        users = tables[slot_table_name(1, "User")][b]
        below = tables[slot_table_name(2, "User")][b].reshape(3, 4)
        assert (below[users < 0] == -1).all()


def test_a_step_over_relationships_the_graph_lacks_names_them(small_shop):
    spec = TypedSamplingSpec.from_num_neighbors("User", {"(:User)-[:RATED]->(:Product)": [2]})
    with pytest.raises(ValueError, match=r"\(:User\)-\[:RATED\]->\(:Product\): the graph has no"):
        sample_neighbourhoods(small_shop, spec, [0], np.random.default_rng(0))


def test_both_directions_and_an_excluded_pair(small_shop):
    spec = TypedSamplingSpec.from_num_neighbors("User", {"(:User)-[:FOLLOWS]-(:User)": [50, 50]})
    follows = small_shop.edge_sets[("User", "FOLLOWS", "User")]
    u, v = int(follows.source[0]), int(follows.target[0])
    around_u = set(follows.target[follows.source == u].tolist())
    around_u |= set(follows.source[follows.target == u].tolist())
    tables = sample_neighbourhoods(small_shop, spec, [u], np.random.default_rng(0))
    assert set(tables[slot_table_name(1, "User")][0].tolist()) - {-1} == around_u
    # the pair (u, v) left out: v never appears below u, nor u below v, at any hop
    pairs = np.array([[u, v]])
    tables = sample_neighbourhoods(
        small_shop, spec, [u], np.random.default_rng(0), exclude=("User", "User", pairs)
    )
    hop1 = tables[slot_table_name(1, "User")][0]
    assert set(hop1.tolist()) - {-1} == around_u - {v}
    hop2 = tables[slot_table_name(2, "User")][0].reshape(50, 50)
    for parent, children in zip(hop1.tolist(), hop2):
        if parent == v:
            assert u not in children.tolist()
        if parent == u:
            assert v not in children.tolist()
