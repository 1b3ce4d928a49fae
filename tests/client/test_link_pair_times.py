"""The link trainer on the split by time, as of each pair's time (client.link_prediction
over tf_features.sample_pairs' point-in-time pairs): training positives take their time from
their relationship (``options["pair_time"]``), validation pairs carry it as a third column, and
every call of the run samples as of those times."""

from __future__ import annotations

import numpy as np
import pytest

from memgraph_tf import blob
from memgraph_tf.client import EmbeddedSource
from memgraph_tf.client.link_prediction import (
    PAIR_TIME_COLUMN,
    evaluate_links,
    pair_sample_dataset,
    train_link_predictor,
)
from memgraph_tf.embedded import EmbeddedGraph
from memgraph_tf.errors import ConfigurationError
from tests.graphs import SHORT_RUN

TIMED = "(:Acct)-[:SENT {time: ts}]-(:Acct)"
NN = {TIMED: [4, 2]}
OPTIONS = {"id_property": "id"}
N = 80


class _Recording:
    """A graph source that records the options of every ``sample_pairs`` call."""

    def __init__(self, inner: EmbeddedSource) -> None:
        self.inner = inner
        self.calls: list[tuple[list[int], dict]] = []

    def __getattr__(self, name: str):
        return getattr(self.inner, name)

    def sample_pairs_b64(self, sources, targets, num_neighbors, properties, options):
        self.calls.append((list(sources), dict(options)))
        return self.inner.sample_pairs_b64(sources, targets, num_neighbors, properties, options)


@pytest.fixture(scope="module")
def ledger():
    """Accounts ``id = i`` opening one after another, two communities; transfers with ``ts``
    split by time (train before 600, val before 800, test from 800)."""
    rng = np.random.default_rng(3)
    g = EmbeddedGraph()
    side = np.arange(N) % 2
    for i in range(N):
        g.add_node(["Acct"], {"id": i, "f": [float(side[i]), float(rng.normal())]})
    times = {}
    for i in range(2, N):
        for _ in range(3):
            j = int(rng.integers(0, i))
            if side[j] == side[i] or rng.random() < 0.2:
                ts = 10 * i + int(rng.integers(0, 200))
                g.add_edge(i, j, "SENT", {"ts": ts})
                key = (min(i, j), max(i, j))
                times[key] = min(ts, times.get(key, ts))
    source = EmbeddedSource(g)
    source.split_edges("(:Acct)-[:SENT]-(:Acct)", {"time_property": "ts", "cutoffs": [600, 800]})
    split = {"train": [], "val": [], "test": []}
    for (a, b), t in sorted(times.items()):
        split["train" if t < 600 else "val" if t < 800 else "test"].append((a, b, t))
    return source, {k: np.array(v, dtype=np.int64) for k, v in split.items()}


def test_training_and_validation_sample_as_of_each_pairs_time(ledger):
    source, split = ledger
    val = split["val"]
    negatives = np.c_[val[:, 0], (val[:, 1] + 1) % N, val[:, 2]]
    pairs = np.concatenate([val, negatives])
    labels = np.r_[np.ones(len(val)), np.zeros(len(val))]
    spy = _Recording(source)
    result = train_link_predictor(
        spy,
        "Acct",
        NN,
        ["f"],
        split["train"][:, :2],
        pairs,
        labels,
        options={**OPTIONS, "pair_time": "ts"},
        **SHORT_RUN,
    )
    assert result.best_val_auc is not None
    training = [opts for _, opts in spy.calls if opts.get("negatives")]
    evaluation = [(s, opts) for s, opts in spy.calls if not opts.get("negatives")]
    assert training and evaluation
    assert all(o["pair_time"] == "ts" and "pair_times" not in o for o in training)
    for sources, opts in evaluation:  # each batch's times are its pairs' third column
        assert "pair_time" not in opts and len(opts["pair_times"]) == len(sources)
    first = evaluation[0][1]["pair_times"]
    assert first == pairs[: len(first), PAIR_TIME_COLUMN].tolist()
    # the test pairs, scored as of their times
    test = split["test"]
    scored = evaluate_links(
        result.model,
        source,
        np.concatenate([test, np.c_[test[:, 0], (test[:, 1] + 1) % N, test[:, 2]]]),
        np.r_[np.ones(len(test)), np.zeros(len(test))],
        options=OPTIONS,
        seed=0,
        feature_caches=result.feature_caches,
        exclude_splits=["test"],
    )
    assert 0.0 <= scored["auc"] <= 1.0


def test_a_time_column_is_the_calls_pair_times(ledger):
    source, split = ledger
    result = train_link_predictor(
        source,
        "Acct",
        NN,
        ["f"],
        split["train"][:, :2],
        options={**OPTIONS, "pair_time": "ts"},
        **{**SHORT_RUN, "steps": 1},
    )
    pairs = split["val"][:6]
    opts = {**OPTIONS, "source_label": "Acct", "seed": 4}
    ds = pair_sample_dataset(source, result.model, pairs, {"Acct": ["f"]}, options=opts)
    batch = {k: v.numpy() for k, v in next(iter(ds)).items()}
    direct = blob.unpack(
        source.sample_pairs(
            pairs[:, 0].tolist(),
            pairs[:, 1].tolist(),
            NN,
            {"Acct": ["f"]},
            {**opts, "pair_times": pairs[:, 2].tolist(), "dtype": "float32"},
        )
    )
    for name, value in direct.items():
        np.testing.assert_array_equal(batch[name], value, err_msg=name)
    with pytest.raises(ConfigurationError, match=r"or \[n, 3\] with each pair's integer time"):
        train_link_predictor(source, "Acct", NN, ["f"], np.zeros((4, 4), np.int64), steps=1)


def test_learned_embeddings_index_the_nodes_not_the_time_column(ledger):
    """With ``node_embedding_dim``, the vocabulary is the training pairs' endpoints: a third
    column of times adds no keys."""
    source, split = ledger
    configs = [
        train_link_predictor(
            source,
            "Acct",
            NN,
            ["f"],
            pairs,
            options=opts,
            node_embedding_dim=2,
            **{**SHORT_RUN, "steps": 1},
        ).model.embedding_config
        for pairs, opts in (
            (split["train"], OPTIONS),  # times from the third column
            (split["train"][:, :2], {**OPTIONS, "pair_time": "ts"}),  # from the relationships
        )
    ]
    assert configs[0] == configs[1]
