"""Training tasks: what a model is trained to predict, apart from the model and from the one
training loop (:func:`memgraph_tf.client.trainer.fit_task`).

A :class:`Task` owns the loss, the training-batch metric, the activation of the model's outputs
into predictions (its head's last step: softmax, sigmoid, none), the validation figures and the
truth a batch carries. The model owns the encoder and the layer that gives its raw outputs
(``model.batch_logits(batch, training)``, which every client model has).

- :class:`NodeClassification`: softmax cross-entropy on integer ``labels``; validation accuracy.
- :class:`LinkPrediction`: binary cross-entropy on ``pair_labels``; validation AUC and AP.
- Node regression fits the same interface: a task whose :meth:`Task.loss` is e.g. the mean squared
  error on float ``labels``, whose :meth:`Task.predictions` is the identity and whose
  :meth:`Task.figures` gives the negative error (the loop maximises :attr:`Task.metric`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from memgraph_tf import layout
from memgraph_tf.client.errors import ConfigurationError
from memgraph_tf.client.metrics import average_precision, roc_auc
from memgraph_tf.client.pipeline import describe_options


class Task:
    """What a model is trained for (module docstring). Subclasses set :attr:`name`,
    :attr:`metric`, :attr:`metric_keys`, :attr:`labels_key` and define :meth:`loss`,
    :meth:`train_metric` and :meth:`figures`."""

    name = "task"
    """Names the task's traced prediction function (one per model and task name)."""
    metric = "val_metric"
    """The validation figure early stopping maximises."""
    metric_keys: tuple[str, ...] = ("val_metric",)
    """Every validation figure :meth:`figures` returns (recorded in the history)."""
    labels_key: str | None = None
    """The batch key of the truth (None: batches carry none)."""

    def outputs(self, model: Any, batch: Mapping[str, Any], training: bool) -> Any:
        """The model's raw outputs (logits) for a batch of its pipelines."""
        return model.batch_logits(batch, training=training)

    def loss(self, batch: Mapping[str, Any], outputs: Any) -> Any:
        """The batch's mean loss (a scalar tensor), before the model's regularisation losses."""
        raise NotImplementedError(
            f"{type(self).__name__}.loss: expected a Task subclass to define it"
        )

    def train_metric(self, batch: Mapping[str, Any], outputs: Any) -> Any:
        """The training figure recorded per step (``train_accuracy``; a scalar tensor)."""
        raise NotImplementedError(
            f"{type(self).__name__}.train_metric: expected a Task subclass to define it"
        )

    def predictions(self, outputs: Any) -> Any:
        """The predictions from the raw outputs (default: the outputs themselves)."""
        return outputs

    def figures(self, predictions: np.ndarray, truth: np.ndarray) -> dict[str, float]:
        """The validation figures (:attr:`metric_keys`) of the predictions averaged over draws."""
        raise NotImplementedError(
            f"{type(self).__name__}.figures: expected a Task subclass to define it"
        )

    def check_batch(self, batch: Mapping[str, Any]) -> None:
        """Raises :class:`ConfigurationError` for a training batch the task cannot learn from."""

    def variables(self, model: Any) -> list[Any]:
        """The weights the loss trains (default: every trainable weight of the model)."""
        return list(model.trainable_variables)


class NodeClassification(Task):
    """Node classification into ``num_classes`` classes: softmax cross-entropy on the batches'
    ``labels`` (class indices), training accuracy per step, validation accuracy of the argmax of
    the averaged class probabilities. Every training batch's labels must be in
    ``0..num_classes-1``."""

    name = "node_classification"
    metric = "val_accuracy"
    metric_keys = ("val_accuracy",)
    labels_key = layout.LABELS

    def __init__(self, num_classes: int) -> None:
        self.num_classes = int(num_classes)
        self.loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def loss(self, batch: Mapping[str, Any], outputs: Any) -> Any:
        return self.loss_fn(batch[self.labels_key], outputs)

    def train_metric(self, batch: Mapping[str, Any], outputs: Any) -> Any:
        hits = tf.equal(tf.argmax(outputs, axis=1), batch[self.labels_key])
        return tf.reduce_mean(tf.cast(hits, tf.float32))

    def predictions(self, outputs: Any) -> Any:
        return tf.nn.softmax(outputs)

    def figures(self, predictions: np.ndarray, truth: np.ndarray) -> dict[str, float]:
        return {"val_accuracy": float(np.mean(np.argmax(predictions, axis=1) == truth))}

    def check_batch(self, batch: Mapping[str, Any]) -> None:
        labels = batch[self.labels_key].numpy()
        bad = labels[(labels < 0) | (labels >= self.num_classes)]
        if bad.size:
            raise ConfigurationError(
                f"labels: expected class indices in 0..{self.num_classes - 1} for every training "
                f"node, got {int(bad[0])} (unlabelled nodes must not be in train_ids)"
            )


class LinkPrediction(Task):
    """Link prediction: binary cross-entropy on the batches' ``pair_labels`` (1: a relationship,
    0: a drawn negative), training accuracy = rows whose logit has their label's sign, validation
    AUC (the metric) and AP of the averaged link probabilities against the given 0/1 labels. Only
    the weights the link logit depends on are trained (``model.trainable_link_variables()``)."""

    name = "link_prediction"
    metric = "val_auc"
    metric_keys = ("val_auc", "val_ap")
    labels_key = layout.PAIR_LABELS

    def loss(self, batch: Mapping[str, Any], outputs: Any) -> Any:
        y = tf.cast(batch[self.labels_key], tf.float32)
        return tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(y, outputs))

    def train_metric(self, batch: Mapping[str, Any], outputs: Any) -> Any:
        y = tf.cast(batch[self.labels_key], tf.float32)
        return tf.reduce_mean(tf.cast(tf.equal(outputs > 0, y > 0.5), tf.float32))

    def predictions(self, outputs: Any) -> Any:
        return tf.sigmoid(outputs)

    def figures(self, predictions: np.ndarray, truth: np.ndarray) -> dict[str, float]:
        return {
            "val_auc": roc_auc(truth, predictions),
            "val_ap": average_precision(truth, predictions),
        }

    def variables(self, model: Any) -> list[Any]:
        return model.trainable_link_variables()


def accuracy_figures(probs: np.ndarray, labels: np.ndarray) -> dict[str, float]:
    """``{"accuracy", "num_nodes"}`` of class probabilities ``[n, c]`` against ``labels``."""
    accuracy = float(np.mean(np.argmax(probs, axis=1) == labels))
    return {"accuracy": accuracy, "num_nodes": float(len(labels))}


def infer_num_classes(source: Any, label_property: str, options: Mapping[str, Any]) -> int:
    """``tf_features.describe``'s ``num_classes`` for ``label_property`` over the nodes (with
    ``options["label"]``), at least 2; raises :class:`ConfigurationError` when no node has a
    class."""
    opts = describe_options(options)
    opts["label_property"] = label_property
    classes = source.describe([], opts)["num_classes"]
    if classes is None:
        scope = f":{opts['label']} node" if opts.get("label") else "node"
        raise ConfigurationError(
            f"label_property: expected a class (an integer >= 0) in {label_property!r} on some "
            f"{scope}, "
            "got none (pass num_classes= to set the class count)"
        )
    return max(int(classes), 2)
