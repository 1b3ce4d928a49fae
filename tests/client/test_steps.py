"""The step loop of the client's one trainer (memgraph_tf.client.steps.fit_steps): history,
evaluation schedule, early stopping and the best weights restored -- with a scripted model, no
TensorFlow."""

from __future__ import annotations

import threading

import pytest

from memgraph_tf.client.steps import EVAL_KEYS, STEP_KEYS, fit_steps


class Scripted:
    """Weights are the number of steps taken; evaluations read a scripted score per step."""

    def __init__(self, scores):
        self.weights, self.scores, self.checked = 0, scores, []

    def get_weights(self):
        return self.weights

    def set_weights(self, weights):
        self.weights = weights

    def step(self, batch):
        self.weights += 1
        return 1.0 / self.weights, 0.5

    def evaluate(self):
        return {"val_auc": self.scores[self.weights], "val_ap": 0.1 * self.weights}


def fit_scripted(model, batches, steps, **options):
    """fit_steps on a Scripted model: its step and evaluation, val_auc as the metric, an
    evaluation every 2 steps, patience 4, no progress bar -- each overridable by options."""
    defaults = {
        "train_step": model.step,
        "evaluate": model.evaluate,
        "metric": "val_auc",
        "metric_keys": ("val_auc", "val_ap"),
        "eval_every": 2,
        "patience": 4,
        "progress": False,
    }
    return fit_steps(model, batches, steps=steps, **{**defaults, **options})


def test_early_stopping_restores_the_best_evaluation():
    # evaluations every 2 steps: scores 0.5, 0.7 (best, step 4), 0.6, 0.65 -> patience 4 stops at 8
    model = Scripted({2: 0.5, 4: 0.7, 6: 0.6, 8: 0.65, 10: 0.9})
    history, best_step, best = fit_scripted(model, range(100), 20, check_batch=model.checked.append)
    assert (best_step, best) == (4, 0.7)
    assert model.weights == 4  # the best evaluation's weights, not the last step's
    assert history["step"] == list(range(1, 9)) and model.checked == list(range(8))
    assert history["eval_step"] == [2, 4, 6, 8]
    assert history["val_auc"] == [0.5, 0.7, 0.6, 0.65]
    assert history["val_ap"] == pytest.approx([0.2, 0.4, 0.6, 0.8])
    assert set(history) == {*STEP_KEYS, *EVAL_KEYS, "val_auc", "val_ap"}
    assert len(history["wait_s"]) == len(history["step_s"]) == 8
    assert len(history["eval_s"]) == len(history["elapsed_s"]) == 4


def test_without_evaluation_every_step_runs_and_the_last_weights_stay():
    model = Scripted({})
    history, best_step, best = fit_scripted(
        model,
        range(5),  # fewer batches than steps: training ends with the data
        9,
        evaluate=None,
        metric_keys=(),
        eval_every=1,
        patience=1,
    )
    assert (best_step, best, model.weights) == (5, None, 5)
    assert history["loss"] == pytest.approx([1.0, 0.5, 1 / 3, 0.25, 0.2])
    assert history["eval_step"] == []


def test_the_last_step_is_always_evaluated():
    model = Scripted({3: 0.4, 5: 0.8})
    history, best_step, _ = fit_scripted(
        model, range(10), 5, metric_keys=("val_auc",), eval_every=3, patience=100
    )
    assert history["eval_step"] == [3, 5] and best_step == 5


class Batches:
    """An iterable whose iterator records the thread it is finalised in (a ``tf.data`` iterator
    cancels its in-flight sampling when finalised)."""

    def __init__(self):
        self.finalised_in = []

    def __iter__(self):
        outer = self

        class It:
            def __init__(self):
                self.i = 0

            def __next__(self):
                self.i += 1
                return self.i

            def __del__(self):
                outer.finalised_in.append(threading.current_thread().name)

        return It()


def test_an_early_stop_finalises_the_batch_iterator_off_the_training_thread_before_returning():
    model = Scripted({2: 0.9, 4: 0.1, 6: 0.1})
    batches = Batches()
    _, best_step, _ = fit_scripted(model, batches, 100)
    assert best_step == 2 and model.weights == 2
    # finalised once, already on return, and not by the calling thread (which would hold the GIL
    # while the iterator's cancelled Python work waits for it)
    assert batches.finalised_in == ["mgtf-close-iterator"]
