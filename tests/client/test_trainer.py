"""The one trainer (memgraph_tf.client.trainer), its tasks (memgraph_tf.client.tasks), the shared
tf.data tail (memgraph_tf.client.pipeline.call_batches) and the argument checks
(memgraph_tf.client.checks)."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

import memgraph_tf.client as client
from memgraph_tf.client.checks import positive_int, positive_number, rate
from memgraph_tf.client.errors import ConfigurationError
from memgraph_tf.client.graphsage import GraphSAGE, node_sampler
from memgraph_tf.client.pipeline import batch_seed, call_batches
from memgraph_tf.client.tasks import LinkPrediction, NodeClassification, Task
from memgraph_tf.client.trainer import (
    PREDICTION_STREAM,
    RANKING_STREAM,
    VALIDATION_STREAM,
    check_schedule,
    fit_task,
    prediction_fn,
    seed_run,
    stream_seed,
)

ID0 = 10_000
OPTS = {"id_property": "id"}


def test_checks_name_the_argument_and_keep_the_plain_type():
    assert positive_int("n", np.int32(3)) == 3 and type(positive_int("n", np.int32(3))) is int
    with pytest.raises(ConfigurationError, match=r"n: expected an integer >= 1, got True"):
        positive_int("n", True)
    with pytest.raises(ConfigurationError, match=r"n: expected an integer >= 1, got 0"):
        positive_int("n", 0)
    with pytest.raises(ConfigurationError, match=r"lr: expected a number > 0, got 0"):
        positive_number("lr", 0)
    with pytest.raises(ConfigurationError, match=r"p: expected a number in \[0, 1.0\), got 1"):
        rate("p", 1)
    with pytest.raises(ConfigurationError, match=r"eval_every: expected an integer >= 1, got 0"):
        check_schedule(10, 0, 5, 1, 0.01)
    schedule = check_schedule(10, 2, 5, np.int64(1), 1)
    assert schedule == (10, 2, 5, 1, 1.0) and schedule.learning_rate == 1.0


def test_the_seed_rule_gives_each_pipeline_of_a_run_its_own_stream():
    streams = (PREDICTION_STREAM, VALIDATION_STREAM, RANKING_STREAM)
    assert len({stream_seed(3, s) for s in streams}) == 3
    assert all(stream_seed(None, s) is None for s in streams)
    # two runs' streams never meet for small seeds: the multiplier exceeds every stream
    assert len({stream_seed(seed, s) for seed in range(50) for s in streams}) == 150


def test_call_batches_seeds_every_call_by_batch_index_unless_the_options_fix_it():
    seen = []

    def call(batch, options):
        seen.append((batch.tolist(), options.get("seed"), options["k"]))
        return "x"

    def decode(text):
        return {"text": text}

    items = np.arange(5, dtype=np.int64)
    ds = call_batches(items, call, decode, options={"k": 1}, seed=7, batch_size=2, draws=2)
    assert len(list(ds)) == 6  # 3 batches a pass, 2 passes, in order
    assert [b for b, _, _ in seen] == [[0, 1], [2, 3], [4]] * 2
    assert [s for _, s, _ in seen] == [batch_seed(7, i) for i in range(6)]
    assert len({s for _, s, _ in seen}) == 6
    seen.clear()
    fixed = call_batches(items, call, decode, options={"k": 2, "seed": 11}, seed=7, batch_size=5)
    list(fixed)
    assert seen == [([0, 1, 2, 3, 4], 11, 2)]


def test_call_batches_shuffles_by_the_seed_and_every_pass_anew():
    def run(seed):
        order = []

        def call(batch, options):
            order.append(batch.tolist())
            return "x"

        ds = call_batches(
            np.arange(8, dtype=np.int64),
            call,
            lambda t: {"t": t},
            options={},
            seed=seed,
            batch_size=8,
            shuffle=True,
            repeat=True,
        )
        list(ds.take(2))
        return order[:2]  # (sampling may run ahead of the consumer)

    first, again = run(3), run(3)
    assert first == again and first[0] != first[1]
    assert sorted(first[0]) == list(range(8))


def test_the_task_interface_leaves_loss_and_figures_to_the_task():
    task = Task()
    with pytest.raises(NotImplementedError, match=r"Task.loss: expected a Task subclass"):
        task.loss({}, None)
    with pytest.raises(NotImplementedError, match=r"Task.figures: expected a Task subclass"):
        task.figures(np.zeros(1), np.zeros(1))
    assert task.predictions(1.5) == 1.5
    classify = NodeClassification(3)
    bad = r"labels: expected class indices in 0..2 .* got 3"
    with pytest.raises(ConfigurationError, match=bad):
        classify.check_batch({"labels": tf.constant([0, 3], tf.int64)})
    assert classify.figures(np.array([[0.9, 0.1, 0], [0.2, 0.7, 0.1]]), np.array([0, 2])) == {
        "val_accuracy": 0.5
    }
    link = LinkPrediction()
    assert link.figures(np.array([0.9, 0.8, 0.3, 0.1]), np.array([1, 0, 1, 0]))["val_auc"] == 0.75


class NodeRegression(Task):
    """A regression task written against the interface alone: the model's first output
    regresses the node's label value."""

    name = "node_regression"
    metric = "val_neg_mse"
    metric_keys = ("val_neg_mse",)
    labels_key = "labels"

    def loss(self, batch, outputs):
        y = tf.cast(batch["labels"], tf.float32)
        return tf.reduce_mean(tf.square(outputs[:, 0] - y))

    def train_metric(self, batch, outputs):
        return -self.loss(batch, outputs)

    def figures(self, predictions, truth):
        return {"val_neg_mse": -float(np.mean((predictions[:, 0] - truth) ** 2))}


def test_a_regression_task_trains_through_the_one_loop(community):
    source, labels, _ = community
    ids = np.arange(ID0, ID0 + len(labels))
    opts = {**OPTS, "label_property": "label"}
    seed_run(0)
    model = GraphSAGE([4, 3], 8, 2, hidden_units=8, dropout=0.0, l2=0.0).ensure_built()
    sampler = node_sampler(model, source, ["features"], opts, feature_cache=None, decoder="auto")
    history, best_step, best = fit_task(
        model,
        NodeRegression(),
        sampler,
        ids[:100],
        ids[100:],
        schedule=check_schedule(40, 20, 40, 1, 0.05),
        batch_size=50,
        seed=0,
        progress=False,
    )
    assert history["eval_step"] == [20, 40]
    assert best == max(history["val_neg_mse"]) and best_step in (20, 40)
    # the labels are 0..2 (mean squared value ~1.7 from a zero start): the error falls
    assert np.mean(history["loss"][-5:]) < 0.5 * np.mean(history["loss"][:5])


def test_prediction_fn_is_traced_once_per_model_and_task():
    model = GraphSAGE([2], 4, 2, hidden_units=4).ensure_built()
    task = NodeClassification(2)
    assert prediction_fn(model, task) is prediction_fn(model, NodeClassification(2))
    assert prediction_fn(model, LinkPrediction()) is not prediction_fn(model, task)


def test_the_package_exports_the_models_trainers_and_tasks_not_internal_helpers():
    for name in (
        "TypedGraphSAGE",
        "train_typed_graphsage",
        "LinkPredictor",
        "train_link_predictor",
        "NodeClassification",
        "LinkPrediction",
        "Task",
        "fit_task",
    ):
        assert name in client.__all__ and getattr(client, name) is not None
    assert "CypherGraphAccess" not in client.__all__
