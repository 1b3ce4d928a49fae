"""The generated ledger (memgraph_tf.ledger_datasets): its relationships, its snapshot in time
(every early customer's later transfers in it, none of a test customer's), the exact best
accuracy against the Bayes rule on generated customers, and bad arguments."""

from __future__ import annotations

import numpy as np
import pytest

from memgraph_tf import ledger_datasets as ledger

SMALL = {"num_accounts": 300, "counterparties_per_class": 20, "occasional": 5, "seed": 3}


def test_payees_and_transfers_run_from_customers_to_counterparties() -> None:
    g = ledger.ledger_graph(**SMALL)
    n, k = SMALL["num_accounts"], g.num_classes
    assert len(g.nodes) == n + k * SMALL["counterparties_per_class"]
    assert len(g.payees) == n * (3 + 5)
    for a, b, props in g.payees:
        assert a < n <= b and set(props) == {"limit"}
    for a, b, props in g.transfers:
        assert a < n <= b and set(props) == {"amount", "ts"} and isinstance(props["ts"], int)
    for node in g.nodes[n:]:
        assert node["split"] == ledger.COUNTERPARTY_SPLIT
        assert node["features"] == [float(j == node["label"]) for j in range(k)]
    assert all(node["features"] == [0.0] * k for node in g.nodes[:n])
    assert set(g.split) == {"train", "val", "test"}


def test_the_snapshot_holds_every_early_customers_later_transfers_and_no_test_customers() -> None:
    g = ledger.ledger_graph(**SMALL)
    horizon = SMALL.get("horizon", 1000)
    later = np.zeros(SMALL["num_accounts"], dtype=int)
    for a, _, props in g.transfers:
        t = g.nodes[a]["t"]
        assert props["ts"] < horizon
        assert t - ledger.HISTORY <= props["ts"] < t or t + 100 <= props["ts"] < t + 300
        later[a] += props["ts"] > t
    test = g.ids("test")
    early = g.ids("train") + g.ids("val")
    assert later[test].sum() == 0
    assert (later[early] == 6).all()
    assert min(g.nodes[i]["t"] for i in test) >= horizon - 100 > max(g.nodes[i]["t"] for i in early)


@pytest.mark.parametrize(
    ("kwargs", "best"),
    [
        # one regular payee of quality q: right with probability q + (1 - q) / 4
        ({"regular": 1, "regular_quality": 0.6, "past": 0}, 0.6 + 0.4 / 4),
        ({"regular": 0, "occasional": 0, "past": 0}, 0.25),  # nothing: chance
    ],
)
def test_best_accuracy_in_closed_form_cases(kwargs, best) -> None:
    g = ledger.ledger_graph(50, **kwargs)
    assert g.best_accuracy == pytest.approx(best, abs=1e-12)


def test_best_accuracy_matches_the_bayes_rule_on_many_customers() -> None:
    """The exact figure against the Bayes rule's hit rate on 5,000 generated customers (standard
    error ~0.003)."""
    g = ledger.ledger_graph(5_000, occasional=0, leaks=0, counterparties_per_class=500, seed=1)
    hits = float(np.mean(g.bayes == g.labels))
    # the rule breaks ties by the lowest class, which the exact figure splits evenly: same mean
    assert abs(hits - g.best_accuracy) < 0.015, (hits, g.best_accuracy)
    assert 0.9 < g.best_accuracy < 1.0


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"num_accounts": 5}, r"num_accounts: expected an integer >= 10, got 5"),
        ({"regular": True}, r"regular: expected an integer >= 0, got True"),
        ({"leak_quality": 1.5}, r"leak_quality: expected a number in \[0, 1\], got 1.5"),
        ({"test_fraction": 1}, r"test_fraction: expected a number in \(0, 1\), got 1"),
        ({"horizon": 500}, r"horizon: expected an integer >= 1000, got 500"),
    ],
)
def test_bad_arguments_are_named(kwargs, message) -> None:
    with pytest.raises(ValueError, match=message):
        ledger.ledger_graph(**kwargs)


def test_the_embedded_graph_holds_every_account_and_relationship() -> None:
    g = ledger.ledger_graph(**SMALL)
    embedded, ids = ledger.ledger_embedded_graph(g)
    assert embedded.node_count == len(g.nodes) == len(ids)
    assert embedded.edge_count == len(g.payees) + len(g.transfers)
    assert embedded.get_property(ids[7], "t") == g.nodes[7]["t"]
