"""The generated typed graph (memgraph_tf.typed_datasets): its shape, its determinism and the
exactness of its known best accuracy."""

from __future__ import annotations

import numpy as np
import pytest

from memgraph_tf.typed_datasets import (
    FEATURES,
    bayes_predictions,
    best_accuracy,
    shop_graph,
    typed_embedded_graph,
)


@pytest.fixture(scope="module")
def shop():
    return shop_graph()


def test_the_default_shop_meets_the_issue_sizes(shop):
    assert shop.node_sets["User"].size >= 10_000
    assert len(shop.node_sets) >= 3
    assert len({key[1] for key in shop.edge_sets}) >= 3
    widths = {label: s.width for label, s in shop.node_sets.items()}
    assert len(set(widths.values())) == len(widths), widths
    assert sorted(set(shop.split)) == ["test", "train", "val"]
    assert len(shop.ids("train")) + len(shop.ids("val")) + len(shop.ids("test")) == 12_000


def test_same_seed_same_graph_and_another_seed_another():
    a, b, c = (
        shop_graph(500, num_products=180, seed=3),
        shop_graph(500, num_products=180, seed=3),
        (shop_graph(500, num_products=180, seed=4)),
    )
    for key, edges in a.edge_sets.items():
        np.testing.assert_array_equal(edges.target, b.edge_sets[key].target)
    np.testing.assert_array_equal(a.labels, b.labels)
    assert not np.array_equal(a.labels, c.labels)


def test_best_accuracy_matches_a_direct_sum_for_two_classes():
    # two classes, 3 purchases, q = s + (1 - s) / 2: correct when 2 or 3 purchases are own
    s = 0.3
    q = s + (1 - s) / 2
    direct = q**3 + 3 * q**2 * (1 - q)
    assert best_accuracy(2, 3, s) == pytest.approx(direct, abs=1e-12)
    # with 2 purchases a 1-1 tie is broken by a coin
    assert best_accuracy(2, 2, s) == pytest.approx(q**2 + 2 * q * (1 - q) / 2, abs=1e-12)
    assert best_accuracy(4, 5, 0.0) == pytest.approx(0.25, abs=1e-12)  # no signal: chance
    assert best_accuracy(4, 5, 1.0) == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize("signal", [0.3, 0.55])
def test_the_bayes_rule_on_a_generated_graph_scores_the_exact_figure(signal):
    graph = shop_graph(30_000, signal=signal, follows_per_user=0, seed=11)
    accuracy = float(np.mean(bayes_predictions(graph) == graph.labels))
    # 30k users: the binomial standard error is under 0.003; four of them is the tolerance
    assert accuracy == pytest.approx(graph.best_accuracy, abs=0.012)


def test_own_features_and_follows_carry_no_signal(shop):
    # the class means of the users' own features are all close to the overall mean
    features = shop.node_sets["User"].features
    means = np.stack([features[shop.labels == c].mean(axis=0) for c in range(shop.num_classes)])
    assert np.abs(means).max() < 0.1
    # a followed user's class agrees with the follower's at chance
    follows = shop.edge_sets[("User", "FOLLOWS", "User")]
    agree = float(np.mean(shop.labels[follows.source] == shop.labels[follows.target]))
    assert agree == pytest.approx(1 / shop.num_classes, abs=0.01)
    assert not np.any(follows.source == follows.target)


def test_bad_arguments_name_the_argument():
    with pytest.raises(ValueError, match=r"num_products: expected a multiple of num_categories x"):
        shop_graph(num_products=3_030)
    with pytest.raises(ValueError, match=r"signal: expected 0 <= signal <= 1, got 1.5"):
        shop_graph(signal=1.5)
    with pytest.raises(ValueError, match=r"num_users: expected an integer >= 100, got 5"):
        shop_graph(5)


def test_the_embedded_graph_keeps_labels_types_and_properties():
    graph = shop_graph(200, num_products=60, seed=1)
    g, ids = typed_embedded_graph(graph)
    assert g.node_count == 200 + 60 + 12
    assert g.edge_count == sum(e.size for e in graph.edge_sets.values())
    user = ids["User"][7]
    assert g.labels(user) == ["User"]
    assert g.get_property(user, "label") == int(graph.labels[7])
    np.testing.assert_allclose(
        g.get_property(user, FEATURES), graph.node_sets["User"].features[7], rtol=1e-6
    )
    bought = graph.edge_sets[("User", "BOUGHT", "Product")]
    expected = sorted({ids["Product"][p] for p in bought.target[bought.source == 7].tolist()})
    assert g.neighbours(user, ["BOUGHT"], "out") == expected
