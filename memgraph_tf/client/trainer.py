"""The one trainer of the client's models: a :class:`~memgraph_tf.client.tasks.Task` (what is
learnt) and a model's :class:`Sampler` (how its batches are sampled) driven by one loop --
argument checks, the seed rule, the training pipeline, one traced step, validation over draws,
early stopping (:func:`memgraph_tf.client.steps.fit_steps`) -- and one prediction loop.

``train_graphsage``, ``train_typed_graphsage`` and ``train_link_predictor`` are this trainer with
their model, task and sampler; ``predict_proba``, ``predict_typed_proba`` and ``predict_links``
are :func:`predict_task`.

**The seed rule.** A training run with ``seed`` seeds Keras (weights, dropout) with ``seed`` and
samples its training batches with ``seed``; validation inside it, and prediction and ranking
called with ``seed``, sample with :func:`stream_seed` of ``seed`` and their stream
(:data:`VALIDATION_STREAM`, :data:`PREDICTION_STREAM`, :data:`RANKING_STREAM`): three distinct
seeds, so validation, prediction and ranking with one ``seed`` never draw each other's batches.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple, Protocol, Self

import keras
import numpy as np
import tensorflow as tf

from memgraph_tf.client.checks import positive_int, positive_number
from memgraph_tf.client.pipeline import without_autotune
from memgraph_tf.client.steps import fit_steps
from memgraph_tf.client.tasks import NodeClassification, Task
from memgraph_tf.errors import ConfigurationError

PREDICTION_STREAM = 0
"""The :func:`stream_seed` stream of prediction and evaluation pipelines."""
VALIDATION_STREAM = 1
"""The :func:`stream_seed` stream of the validation pipeline inside training."""
RANKING_STREAM = 2
"""The :func:`stream_seed` stream of the ranking negatives of link evaluation."""
EVAL_BATCH_SIZE = 512
"""Seeds (or pairs) per sampled batch of the validation passes inside training."""


def stream_seed(seed: int | None, stream: int) -> int | None:
    """The sampling seed of pipeline ``stream`` of a run seeded ``seed`` (None: unseeded)."""
    return None if seed is None else seed * 7919 + stream


def seed_run(seed: int | None) -> None:
    """Seeds Keras, NumPy, Python and TensorFlow with ``seed`` (nothing when None): weights and
    dropout of a run then repeat."""
    if seed is not None:
        keras.utils.set_random_seed(seed)


class Schedule(NamedTuple):
    """A training run's schedule (:func:`check_schedule` makes a checked one): up to ``steps``
    steps, an evaluation every ``eval_every`` steps averaged over ``eval_draws`` draws, early
    stopping after ``patience`` steps without a gain, Adam with ``learning_rate``."""

    steps: int
    eval_every: int
    patience: int
    eval_draws: int
    learning_rate: float


def check_schedule(
    steps: Any, eval_every: Any, patience: Any, eval_draws: Any, learning_rate: Any
) -> Schedule:
    """The :class:`Schedule` of these values checked: integers >= 1 and a number > 0
    (:class:`ConfigurationError` naming the first bad one)."""
    return Schedule(
        positive_int("steps", steps),
        positive_int("eval_every", eval_every),
        positive_int("patience", patience),
        positive_int("eval_draws", eval_draws),
        positive_number("learning_rate", learning_rate),
    )


def training_options(options: Mapping[str, Any] | None, label_property: str) -> dict[str, Any]:
    """A copy of the sampling ``options`` of a training run, ``label_property`` set;
    :class:`ConfigurationError` for a fixed ``options.seed`` (every step must draw new
    neighbourhoods)."""
    opts = dict(options or {})
    if "seed" in opts:
        raise ConfigurationError(
            "options.seed: expected no fixed sampling seed for training (every step must draw new "
            f"neighbourhoods; pass seed= instead), got {opts['seed']!r}"
        )
    opts["label_property"] = label_property
    return opts


class BatchPlan(NamedTuple):
    """How a :class:`Sampler` batches its items: ``batch_size`` items a batch; sampling keyed by
    ``seed`` and each batch's index; ``training``: shuffled (by ``seed``) and repeated for good,
    else ``draws`` passes in order; ``keep``: the sampled neighbourhoods kept after the first
    pass (replayed, not sampled again) where the sampler can keep them."""

    batch_size: int
    seed: int | None
    training: bool = False
    draws: int = 1
    keep: bool = False

    def tail(self) -> dict[str, Any]:
        """The plan as :func:`~memgraph_tf.client.pipeline.call_batches`' (and the samplers'
        dataset functions') keyword arguments ``batch_size``, ``seed``, ``shuffle``, ``repeat``,
        ``draws``."""
        return {
            "batch_size": self.batch_size,
            "seed": self.seed,
            "shuffle": self.training,
            "repeat": self.training,
            "draws": self.draws,
        }


class Sampler(Protocol):
    """A model's batches of ``items`` (seed ids or pairs) under a :class:`BatchPlan`, as a
    ``tf.data.Dataset`` of dicts the model's ``batch_logits`` reads."""

    def __call__(self, items: np.ndarray, plan: BatchPlan) -> tf.data.Dataset: ...


def keep_seeded_batches(dataset: Callable[[np.ndarray, BatchPlan], tf.data.Dataset]) -> Sampler:
    """The :class:`Sampler` of ``dataset`` (items and plan -> their batches) that caches the
    batches of a seeded pipeline whose plan has ``keep`` (the same neighbourhoods every pass);
    other plans get ``dataset``'s batches as they are."""

    def sample(items: np.ndarray, plan: BatchPlan) -> tf.data.Dataset:
        ds = dataset(items, plan)
        return ds.cache() if plan.keep and plan.seed is not None else ds

    return sample


class SampledModel:
    """The methods the client's subclassed Keras models share (a base listed before
    ``keras.Model``): their weights follow from their config alone (``build()`` takes no input
    shape), and a trained one carries the sampling settings a bundle export reads."""

    def ensure_built(self) -> Self:
        """Creates the weights if needed; returns self."""
        if not self.built:
            self.build()
        return self

    def trained_on(self, properties: dict[str, list[str]], schema: dict[str, Any]) -> Self:
        """Sets ``properties`` (label -> the feature property names the blobs are sampled with)
        and ``schema`` (the part of ``tf_features.schema`` the model was trained on), which
        :func:`~memgraph_tf.serving.export.export_bundle` reads; returns :meth:`ensure_built`."""
        self.properties = properties
        self.schema = schema
        return self.ensure_built()


def average_draws(parts: list[np.ndarray], draws: int, n: int) -> np.ndarray:
    """``[draws * n, ...]`` predictions (draw after draw, in batches ``parts``) -> their float64
    mean per item ``[n, ...]``."""
    stacked = np.concatenate(parts).astype(np.float64)
    return stacked.reshape((draws, n) + stacked.shape[1:]).mean(axis=0)


_PREDICT_FNS: weakref.WeakKeyDictionary[Any, dict[str, Any]] = weakref.WeakKeyDictionary()


def prediction_fn(model: Any, task: Task) -> Any:
    """One traced ``task.predictions(model.batch_logits(batch))`` per model and task name (traced
    once per batch structure, reused across calls; it does not keep the model alive)."""
    fns = _PREDICT_FNS.setdefault(model, {})
    fn = fns.get(task.name)
    if fn is None:
        ref = weakref.ref(model)

        @tf.function(reduce_retracing=True, autograph=False)
        def fn(batch: Mapping[str, tf.Tensor]) -> tf.Tensor:
            return task.predictions(task.outputs(ref(), batch, training=False))

        fns[task.name] = fn
    return fn


def predict_task(
    model: Any,
    task: Task,
    sampler: Sampler,
    items: np.ndarray,
    *,
    draws: int,
    batch_size: int,
    seed: int | None,
    with_truth: bool = False,
) -> Any:
    """The one prediction loop: ``task``'s predictions for ``items`` in order, averaged over
    ``draws`` sampled neighbourhoods (float64 ``[n, ...]``; sampling seeded by the prediction
    stream of ``seed``); with ``with_truth`` also the truth the first draw's batches carry
    (``task.labels_key``). All draws run through one pipeline and one traced call."""
    draws = positive_int("draws", draws)
    ds = sampler(items, BatchPlan(batch_size, stream_seed(seed, PREDICTION_STREAM), draws=draws))
    infer = prediction_fn(model, task)
    parts, truth = [], []
    for batch in ds:
        parts.append(infer(batch).numpy())
        if with_truth:
            truth.append(batch[task.labels_key].numpy())
    mean = average_draws(parts, draws, len(items))
    if not with_truth:
        return mean
    return mean, np.concatenate(truth)[: len(items)]


def predict_class_probabilities(
    model: Any,
    sampler: Sampler,
    items: Any,
    *,
    draws: int,
    batch_size: int,
    seed: int | None,
    with_labels: bool,
) -> Any:
    """A node classifier's class probabilities (float32 ``[n, num_classes]``) for ``items`` by
    :func:`predict_task`, and with ``with_labels`` the labels the batches carry."""
    out = predict_task(
        model,
        NodeClassification(model.num_classes),
        sampler,
        np.asarray(items, dtype=np.int64),
        draws=draws,
        batch_size=batch_size,
        seed=seed,
        with_truth=with_labels,
    )
    if not with_labels:
        return out.astype(np.float32)
    return out[0].astype(np.float32), out[1]


def fit_task(
    model: Any,
    task: Task,
    sampler: Sampler,
    train_items: np.ndarray,
    val_items: np.ndarray | None = None,
    val_truth: np.ndarray | None = None,
    *,
    schedule: Schedule,
    batch_size: int,
    seed: int | None,
    progress: bool,
) -> tuple[dict[str, list[float]], int, float | None]:
    """Trains the built ``model`` for ``task`` on the ``schedule`` (:func:`check_schedule`):
    Adam with its ``learning_rate`` over ``task.variables(model)``, ``task.loss`` plus the model's
    regularisation losses, up to its ``steps`` steps of ``batch_size`` training items (``sampler``
    training plan, seeded by ``seed``), each batch checked by ``task.check_batch``. With
    ``val_items``, every ``eval_every`` steps ``task.figures`` of the predictions averaged over
    ``eval_draws`` draws against ``val_truth`` (None: the truth the batches carry); the validation
    pipeline is sampled with the validation stream of ``seed`` and kept (the same
    neighbourhoods at every evaluation where the sampler keeps them), and its first pass starts
    before the first step, so that its sampling overlaps training. Early stopping on
    ``task.metric`` after ``patience`` steps without a gain, best weights restored.

    Guarantees: one traced training step and one traced validation step (nothing is traced after
    the first evaluation); returns :func:`~memgraph_tf.client.steps.fit_steps`' ``(history,
    best_step, best)``."""
    steps, eval_every, patience, eval_draws, learning_rate = schedule
    variables = task.variables(model)
    optimizer = keras.optimizers.Adam(learning_rate=learning_rate)
    optimizer.build(variables)  # its slots now: the step is traced once
    train_ds = sampler(train_items, BatchPlan(batch_size, seed, training=True))
    train_ds = without_autotune(train_ds)  # abandoned in flight by early stopping

    # traced once each: the batch specs fix every shape but the batch's
    @tf.function(input_signature=[train_ds.element_spec], autograph=False)
    def train_step(batch: Mapping[str, tf.Tensor]) -> tuple[tf.Tensor, tf.Tensor]:
        with tf.GradientTape() as tape:
            outputs = task.outputs(model, batch, training=True)
            loss = task.loss(batch, outputs)
            if model.losses:
                loss = loss + tf.add_n(model.losses)
        grads = tape.gradient(loss, variables)
        optimizer.apply_gradients(zip(grads, variables))
        return loss, task.train_metric(batch, outputs)

    evaluate = None
    if val_items is not None:
        evaluate = _validation(model, task, sampler, val_items, val_truth, eval_draws, seed)
    return fit_steps(
        model,
        train_ds.take(steps),
        steps=steps,
        train_step=train_step,
        evaluate=evaluate,
        metric=task.metric,
        metric_keys=task.metric_keys,
        eval_every=eval_every,
        patience=patience,
        progress=progress,
        check_batch=task.check_batch,
    )


def _validation(
    model: Any,
    task: Task,
    sampler: Sampler,
    items: np.ndarray,
    truth: np.ndarray | None,
    draws: int,
    seed: int | None,
) -> Any:
    """:func:`fit_task`'s evaluation: a function returning the validation figures."""
    plan = BatchPlan(EVAL_BATCH_SIZE, stream_seed(seed, VALIDATION_STREAM), draws=draws, keep=True)
    val_ds = sampler(items, plan)
    with_truth = truth is None

    @tf.function(input_signature=[val_ds.element_spec], autograph=False)
    def val_step(batch: Mapping[str, tf.Tensor]) -> Any:
        predictions = task.predictions(task.outputs(model, batch, training=False))
        return (predictions, batch[task.labels_key]) if with_truth else (predictions,)

    # the first validation pass starts now: its sampling runs in tf.data's threads behind the
    # first steps rather than inside the first evaluation
    pending = [iter(val_ds)]

    def evaluate() -> dict[str, float]:
        parts, labels = [], []
        for batch in pending.pop() if pending else val_ds:
            out = val_step(batch)
            parts.append(out[0].numpy())
            if with_truth:
                labels.append(out[1].numpy())
        mean = average_draws(parts, draws, len(items))
        return task.figures(mean, np.concatenate(labels)[: len(items)] if with_truth else truth)

    return evaluate


class TrainResult(NamedTuple):
    """What ``train_graphsage`` and ``train_typed_graphsage`` return. ``history``: lists keyed
    ``step``, ``loss``, ``train_accuracy``, ``wait_s`` (seconds the step waited for its sampled
    batch), ``step_s`` (seconds of the optimisation step) per step, and ``eval_step``,
    ``val_accuracy``, ``eval_s`` (seconds of the evaluation), ``elapsed_s`` (seconds since
    training started, at the end of the evaluation) per evaluation; ``feature_cache``: the
    :class:`~memgraph_tf.client.pipeline.FeatureCache` the features came from (None: from the
    blobs)."""

    model: Any
    history: dict[str, list[float]]
    best_step: int
    best_val_accuracy: float | None
    feature_cache: Any
