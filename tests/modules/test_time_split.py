"""tf_features.split_edges by time (options.time_property + options.cutoffs) through the
unchanged query module (embedded runtime, Memgraph's real mgp.py): train before t1, val from t1
to before t2, test from t2, an edge's time being its earliest relationship's; integer, Date and
LocalDateTime times; bad times and cutoffs rejected naming the relationship, property and value,
with nothing written; options.exclude_splits then keeps the future out of sampled neighbourhoods."""

from __future__ import annotations

import datetime

import pytest

from memgraph_tf import blob, layout
from memgraph_tf.client import EmbeddedSource
from memgraph_tf.embedded import EmbeddedGraph
from memgraph_tf.errors import GraphDataError

SENT = "(:Account)-[:SENT]->(:Account)"
N = 12
DAY0 = datetime.date(2024, 1, 1)


def _transfers(times):
    """Accounts ``id = 100 + i`` and one SENT relationship per ``(i, j, time)``."""
    g = EmbeddedGraph()
    nodes = [g.add_node(["Account"], {"id": 100 + i}) for i in range(N)]
    for i, j, t in times:
        g.add_edge(nodes[i], nodes[j], "SENT", None if t is None else {"ts": t})
    return g


TIMES = [(i, (i + 1) % N, 10 * i) for i in range(N)]  # times 0, 10, ..., 110


def _expected(times, t1, t2):
    return ["train" if t < t1 else "val" if t < t2 else "test" for _, _, t in times]


def _written(g, key="split"):
    return [props.get(key) for _, _, props in g.edges("SENT")]


@pytest.mark.parametrize(
    "as_time",
    [
        lambda t: t,
        lambda t: DAY0 + datetime.timedelta(days=t),
        lambda t: datetime.datetime(2024, 1, 1, 8, 30) + datetime.timedelta(seconds=t),
    ],
    ids=["integer", "Date", "LocalDateTime"],
)
def test_the_boundaries_put_t1_in_val_and_t2_in_test(as_time):
    times = [(i, j, as_time(t)) for i, j, t in TIMES]
    g = _transfers(times)
    cutoffs = [as_time(40), as_time(90)]  # exactly the times of edges 4 and 9
    opts = {"time_property": "ts", "cutoffs": cutoffs, "id_property": "id"}
    counts = EmbeddedSource(g).split_edges(SENT, opts)
    assert counts == {"train": 4, "val": 5, "test": 3, "relationships": N}
    assert _written(g) == _expected(TIMES, 40, 90)
    assert EmbeddedSource(g).split_edges(SENT, opts) == counts  # a rerun: the same split
    assert _written(g) == _expected(TIMES, 40, 90)


def test_an_edge_takes_the_split_of_its_first_relationship():
    # 0 -> 1 at 5 and again at 100; an undirected step joins 2 -> 3 at 95 and 3 -> 2 at 20
    times = [(0, 1, 5), (0, 1, 100), (2, 3, 95), (3, 2, 20), (4, 5, 60)]
    g = _transfers(times)
    opts = {"time_property": "ts", "cutoffs": [50, 90], "split_property": "when"}
    counts = EmbeddedSource(g).split_edges("(:Account)-[:SENT]-(:Account)", opts)
    assert counts == {"train": 2, "val": 1, "test": 0, "relationships": 5}
    assert _written(g, "when") == ["train", "train", "train", "train", "val"]
    assert _written(g, "split") == [None] * 5


def test_the_random_split_is_unchanged_without_the_option():
    g = _transfers(TIMES)
    counts = EmbeddedSource(g).split_edges(SENT, {"seed": 3, "val_fraction": 0.25})
    assert counts == {"train": 8, "val": 3, "test": 1, "relationships": N}
    assert sorted(_written(g)) == ["test"] + ["train"] * 8 + ["val"] * 3


@pytest.mark.parametrize(
    ("times", "cutoffs", "message"),
    [
        (
            [*TIMES[:3], (5, 7, None)],
            [10, 20],
            r"options.time_property: relationship \(node with id = 105\)-\[:SENT\]->\(node with "
            r"id = 107\): property 'ts': expected an integer \(the kind of options.cutoffs\), "
            r"got no such property",
        ),
        (
            [*TIMES[:3], (5, 7, 1.5)],
            [10, 20],
            r"relationship \(node with id = 105\)-\[:SENT\]->\(node with id = 107\): property "
            r"'ts': expected an integer .*got float 1.5",
        ),
        (
            [*TIMES[:3], (5, 7, DAY0)],
            [10, 20],
            r"\(node with id = 107\): property 'ts': expected an integer .*got date "
            r"datetime.date\(2024, 1, 1\)",
        ),
        (
            [(1, 2, datetime.datetime(2024, 1, 1, 0, 0))],
            [DAY0, DAY0 + datetime.timedelta(days=2)],
            r"property 'ts': expected a Date \(the kind of options.cutoffs\), got datetime",
        ),
        (TIMES, [20, 20], r"options.cutoffs: expected t1 < t2, got int 20 and int 20"),
        (TIMES, [30, 20], r"options.cutoffs: expected t1 < t2, got int 30 and int 20"),
        (TIMES, [10, DAY0], r"options.cutoffs: expected two values of one kind, got int 10 and"),
        (TIMES, [10, "2024"], r"options.cutoffs\[1\]: expected an integer, a Date or a Local"),
        (TIMES, [10], r"options.cutoffs: expected \[t1, t2\] .*got list \[10\]"),
        (TIMES, None, r"options.cutoffs: expected \[t1, t2\] .*got null"),
    ],
)
def test_bad_times_and_cutoffs_name_what_is_at_fault_and_write_nothing(times, cutoffs, message):
    g = _transfers(times)
    opts = {"time_property": "ts", "cutoffs": cutoffs, "id_property": "id"}
    with pytest.raises(GraphDataError, match=message):
        EmbeddedSource(g).split_edges(SENT, opts)
    assert _written(g) == [None] * len(times)


@pytest.mark.parametrize(
    ("opts", "message"),
    [
        ({"cutoffs": [1, 2]}, r"options.time_property: expected a relationship property name"),
        (
            {"time_property": "ts", "cutoffs": [1, 2], "val_fraction": 0.1},
            r"options.val_fraction: not used with options.time_property",
        ),
        (
            {"time_property": "ts", "cutoffs": [1, 2], "seed": "x"},
            r"options.seed: expected an integer",
        ),
    ],
)
def test_time_options_that_do_not_fit_are_rejected(opts, message):
    with pytest.raises(GraphDataError, match=message):
        EmbeddedSource(_transfers(TIMES)).split_edges(SENT, opts)


def test_training_neighbourhoods_hold_only_the_past():
    # account 0: one transfer before t1 (to 1), the rest from t1 on (to 2, 3, 4)
    times = [(0, 1, 5), (0, 2, 60), (3, 0, 95), (0, 4, 120), (5, 6, 1)]
    g = _transfers(times)
    source = EmbeddedSource(g)
    pattern = "(:Account)-[:SENT]-(:Account)"
    source.split_edges(pattern, {"time_property": "ts", "cutoffs": [50, 100], "id_property": "id"})
    nn = {pattern: [8]}  # more than any degree: every walkable neighbour is drawn
    opts = {"label": "Account", "id_property": "id", "seed": 1}

    def hop1(exclude):
        got = blob.unpack(source.sample_typed([100], nn, None, {**opts, "exclude_splits": exclude}))
        return {int(x) - 100 for x in got[layout.typed_ids_name(1, "Account")][0] if x >= 0}

    assert hop1(["val", "test"]) == {1}  # training: before t1 only
    assert hop1(["test"]) == {1, 2, 3}  # evaluating the test period: before t2
    assert hop1([]) == {1, 2, 3, 4}
