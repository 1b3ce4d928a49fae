"""GraphSAGE (mean aggregator) in Keras 3, over the tensors the ``tf_features.sample`` procedure
returns, and its training and evaluation over a graph source.

The model's inputs are the sample blob's sections (:func:`memgraph_tf.layout.model_input_sections`):
``features_0`` ``[B, d]``, ``features_h`` ``[B, f1..fh, d]`` in the feature dtype (``float32`` or
``float64``, ``options.dtype``) and, when low-degree nodes are padded, ``mask_h`` ``[B, f1..fh]``
(bool). It computes in float32 and outputs class logits ``[B, num_classes]``. The call is a pure
function of those tensors (no database access, no Python side effects), so it exports cleanly into a
SavedModel.

Layer ``k`` (of ``K = len(fanouts)``) updates every hop ``i <= K - k``:
``h_i <- act([h_i W_self || mean_mask(h_{i+1}) W_neigh] + b)``, where the mean runs over the
neighbour axis and counts only slots whose mask is true (zero valid neighbours -> a zero mean). The
classifier is a dense layer on ``h_0``. Because the mean is linear, the first layer averages raw
neighbour features before multiplying by ``W_neigh`` -- the same function, far fewer FLOPs.
"""

from __future__ import annotations

import logging
import time
import weakref
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import keras
import numpy as np
import tensorflow as tf
from tqdm.auto import tqdm

from memgraph_tf import layout
from memgraph_tf.client.errors import ConfigurationError
from memgraph_tf.client.pipeline import (
    FeatureCache,
    describe_options,
    feature_layout,
    model_inputs,
    sample_dataset,
)
from memgraph_tf.client.sources import GraphSource

logger = logging.getLogger(__name__)


def _positive_int(name: str, value: Any) -> int:
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 1:
        raise ConfigurationError(f"{name}: expected an integer >= 1, got {value!r}")
    return int(value)


def _rate(name: str, value: Any, upper: float = 1.0) -> float:
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not 0.0 <= value < upper:
        raise ConfigurationError(f"{name}: expected a number in [0, {upper}), got {value!r}")
    return float(value)


@keras.saving.register_keras_serializable(package="memgraph_tf")
class MeanAggregator(keras.layers.Layer):
    """One GraphSAGE layer with the mean aggregator (self and neighbour transforms concatenated).

    Output width is ``2 * units``. ``call(x [..., d], neighbours [..., f, d], mask [..., f] |
    None)``.
    """

    def __init__(
        self,
        units: int,
        activation: str | None = "relu",
        dropout: float = 0.0,
        l2: float = 0.0,
        normalize: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.units = units
        self.activation = keras.activations.get(activation)
        self.dropout_rate = dropout
        self.l2 = l2
        self.normalize = normalize
        reg = keras.regularizers.L2(l2) if l2 else None
        self.self_dense = keras.layers.Dense(
            units, use_bias=False, kernel_regularizer=reg, name="self"
        )
        self.neigh_dense = keras.layers.Dense(
            units, use_bias=False, kernel_regularizer=reg, name="neigh"
        )
        self.drop = keras.layers.Dropout(dropout)

    def build(self, x_shape: Any, neighbours_shape: Any = None, mask_shape: Any = None) -> None:
        d = x_shape[-1]
        self.self_dense.build((None, d))
        self.neigh_dense.build((None, d))
        self.bias = self.add_weight(name="bias", shape=(2 * self.units,), initializer="zeros")
        self.built = True

    def call(self, x: Any, neighbours: Any, mask: Any = None, training: bool | None = None) -> Any:
        if mask is None:
            agg = keras.ops.mean(neighbours, axis=-2)
        else:
            m = keras.ops.expand_dims(keras.ops.cast(mask, neighbours.dtype), -1)
            total = keras.ops.sum(neighbours * m, axis=-2)
            count = keras.ops.maximum(keras.ops.sum(m, axis=-2), 1.0)
            agg = total / count
        x = self.drop(x, training=training)
        agg = self.drop(agg, training=training)
        out = (
            keras.ops.concatenate([self.self_dense(x), self.neigh_dense(agg)], axis=-1) + self.bias
        )
        if self.activation is not None:
            out = self.activation(out)
        if self.normalize:
            out = out / keras.ops.maximum(keras.ops.norm(out, axis=-1, keepdims=True), 1e-12)
        return out

    def get_config(self) -> dict[str, Any]:
        config = super().get_config()
        config.update(
            {
                "units": self.units,
                "activation": keras.activations.serialize(self.activation),
                "dropout": self.dropout_rate,
                "l2": self.l2,
                "normalize": self.normalize,
            }
        )
        return config


@keras.saving.register_keras_serializable(package="memgraph_tf")
class GraphSAGE(keras.Model):
    """GraphSAGE node classifier over sampled ``K``-hop neighbourhoods (see the module docstring).

    ``fanouts``: neighbours per hop (``K = len(fanouts)`` layers); ``feature_dim``: ``d``;
    ``num_classes``; ``hidden_units``: width of each layer's self and neighbour transforms (an int,
    or one per layer); ``dropout`` on every layer's inputs; ``l2`` weight decay on all kernels;
    ``normalize_features``: divide each feature row by its sum (bag-of-words inputs);
    ``class_names``: optional label text per class index (kept in the config, used by serving);
    ``feature_dtype``: the dtype of the ``features_h`` inputs, as the blobs carry them
    (``options.dtype``: ``float32`` or ``float64``; the model computes in float32).

    Guarantees: ``model(inputs)`` returns logits ``[B, num_classes]`` for a dict holding
    ``features_0..K`` (and optionally ``mask_1..K``); extra keys are ignored; the same config
    rebuilds the same architecture (``get_config`` / ``from_config``); :meth:`input_signature`
    is the sample layout's model inputs in ``feature_dtype``.
    """

    def __init__(
        self,
        fanouts: Sequence[int],
        feature_dim: int,
        num_classes: int,
        *,
        hidden_units: int | Sequence[int] = 64,
        dropout: float = 0.5,
        l2: float = 5e-4,
        normalize_features: bool = False,
        normalize_hidden: bool = False,
        class_names: Sequence[str] | None = None,
        feature_dtype: str = "float32",
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if not isinstance(fanouts, (list, tuple)) or not fanouts:
            raise ConfigurationError(
                f"fanouts: expected a non-empty list of integers >= 1, got {fanouts!r}"
            )
        self.fanouts = tuple(_positive_int(f"fanouts[{i}]", f) for i, f in enumerate(fanouts))
        self.feature_dim = _positive_int("feature_dim", feature_dim)
        self.num_classes = _positive_int("num_classes", num_classes)
        if num_classes < 2:
            raise ConfigurationError(f"num_classes: expected >= 2, got {num_classes}")
        units = (
            [hidden_units] * len(self.fanouts)
            if isinstance(hidden_units, (int, np.integer))
            else list(hidden_units)
        )
        if len(units) != len(self.fanouts):
            raise ConfigurationError(
                f"hidden_units: expected an int or one width per layer ({len(self.fanouts)}), got "
                f"{hidden_units!r}"
            )
        self.hidden_units = [_positive_int(f"hidden_units[{i}]", u) for i, u in enumerate(units)]
        self.dropout_rate = _rate("dropout", dropout)
        self.l2 = _rate("l2", l2, upper=float("inf"))
        self.normalize_features = bool(normalize_features)
        self.normalize_hidden = bool(normalize_hidden)
        if class_names is not None:
            class_names = [str(c) for c in class_names]
            if len(class_names) != self.num_classes:
                raise ConfigurationError(
                    f"class_names: expected {self.num_classes} names (one per class), got "
                    f"{len(class_names)}"
                )
        self.class_names = class_names
        if feature_dtype not in layout.FEATURE_DTYPES:
            raise ConfigurationError(
                f"feature_dtype: expected one of {', '.join(layout.FEATURE_DTYPES)}, got "
                f"{feature_dtype!r}"
            )
        self.feature_dtype = feature_dtype
        self.sage_layers = [
            MeanAggregator(
                u,
                activation="relu",
                dropout=self.dropout_rate,
                l2=self.l2,
                normalize=self.normalize_hidden,
                name=f"sage_{k + 1}",
            )
            for k, u in enumerate(self.hidden_units)
        ]
        self.out_dropout = keras.layers.Dropout(self.dropout_rate)
        self.classifier = keras.layers.Dense(
            self.num_classes,
            kernel_regularizer=keras.regularizers.L2(self.l2) if self.l2 else None,
            name="classifier",
        )

    @property
    def hops(self) -> int:
        return len(self.fanouts)

    def input_names(self, masks: bool = True) -> list[str]:
        """``features_0..K`` then (``masks``) ``mask_1..K``."""
        return layout.model_input_names(self.hops, masks)

    def input_signature(
        self, masks: bool = True, batch_size: int | None = None
    ) -> dict[str, tf.TensorSpec]:
        """``tf.TensorSpec`` per input (for ``tf.function``/SavedModel export), in blob order:
        ``features_h`` in ``feature_dtype`` and, with ``masks``, ``mask_h`` bool."""
        sections = layout.model_input_sections(
            self.fanouts, self.feature_dim, self.feature_dtype, masks=masks, batch=batch_size
        )
        return {s.name: tf.TensorSpec(list(s.shape), s.dtype, name=s.name) for s in sections}

    def example_inputs(self, batch_size: int = 1, masks: bool = True) -> dict[str, np.ndarray]:
        """All-zero inputs of the right shapes and dtypes (``masks`` all true); calling on them
        builds the model."""
        out = {}
        for name, spec in self.input_signature(masks, batch_size).items():
            out[name] = (
                np.ones(spec.shape, dtype=bool)
                if spec.dtype == tf.bool
                else np.zeros(spec.shape, spec.dtype.as_numpy_dtype)
            )
        return out

    def build(self, input_shape: Any = None) -> None:
        """Creates every weight from the config alone (the input shapes follow from it)."""
        width = self.feature_dim
        for layer, units in zip(self.sage_layers, self.hidden_units):
            if not layer.built:
                layer.build((None, width))
            width = 2 * units
        if not self.classifier.built:
            self.classifier.build((None, width))
        self.built = True

    def ensure_built(self) -> GraphSAGE:
        """Creates the weights if needed; returns self."""
        if not self.built:
            self.build()
        return self

    def call(self, inputs: Mapping[str, Any], training: bool | None = None) -> Any:
        hops = self.hops
        names = [layout.features_name(i) for i in range(hops + 1)]
        missing = [name for name in names if name not in inputs]
        if missing:
            raise ConfigurationError(
                f"inputs: expected {names[0]}..{names[-1]} (fanouts {list(self.fanouts)}), missing "
                f"{missing}"
            )
        h = [keras.ops.cast(inputs[name], "float32") for name in names]
        masks = [None] + [inputs.get(layout.mask_name(i)) for i in range(1, hops + 1)]
        if self.normalize_features:
            h = [x / keras.ops.maximum(keras.ops.sum(x, axis=-1, keepdims=True), 1e-12) for x in h]
        for layer in self.sage_layers:
            h = [layer(h[i], h[i + 1], masks[i + 1], training=training) for i in range(len(h) - 1)]
        return self.classifier(self.out_dropout(h[0], training=training))

    def get_config(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "trainable": self.trainable,
            "fanouts": list(self.fanouts),
            "feature_dim": self.feature_dim,
            "num_classes": self.num_classes,
            "hidden_units": list(self.hidden_units),
            "dropout": self.dropout_rate,
            "l2": self.l2,
            "normalize_features": self.normalize_features,
            "normalize_hidden": self.normalize_hidden,
            "class_names": None if self.class_names is None else list(self.class_names),
            "feature_dtype": self.feature_dtype,
        }

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> GraphSAGE:
        return cls(**config)


# ------------------------------------------------------------------------------------------------
# training and evaluation
# ------------------------------------------------------------------------------------------------

PLANETOID_RECIPE: dict[str, Any] = {
    "fanouts": (10, 10),
    "hidden_units": 128,
    "dropout": 0.6,
    "l2": 5e-4,
    "normalize_features": True,
    "normalize_hidden": True,
    "learning_rate": 0.005,
    "batch_size": 140,
    "steps": 200,
    "eval_every": 10,
    "eval_draws": 4,
    "patience": 80,
}
"""``train_graphsage`` settings for Cora/Citeseer (Planetoid split), chosen on Cora's validation
set: 2 layers, fanouts (10, 10), 128 units, dropout 0.6, L2 5e-4, row-normalised bag-of-words
inputs, L2-normalised hidden layers, Adam 0.005, full-batch steps over the 140 training nodes, early
stopping on validation accuracy. ``benchmarks/accuracy.py`` reports what it reaches."""


class TrainResult(NamedTuple):
    """What :func:`train_graphsage` returns. ``history``: lists keyed ``step``, ``loss``,
    ``train_accuracy`` (per step) and ``eval_step``, ``val_accuracy`` (per evaluation)."""

    model: GraphSAGE
    history: dict[str, list[float]]
    best_step: int
    best_val_accuracy: float | None
    feature_cache: FeatureCache | None


def _labels_options(options: Mapping[str, Any] | None, label_property: str) -> dict[str, Any]:
    opts = dict(options or {})
    if "seed" in opts:
        raise ConfigurationError(
            "options.seed: expected no fixed sampling seed for training (every step must draw new "
            f"neighbourhoods; pass seed= instead), got {opts['seed']!r}"
        )
    opts["label_property"] = label_property
    return opts


def build_feature_cache(
    source: GraphSource,
    properties: Sequence[str],
    options: Mapping[str, Any] | None = None,
    node_ids: Any = None,
) -> FeatureCache:
    """A :class:`FeatureCache` of ``node_ids`` (default: every node, with ``options.label`` if
    set)."""
    opts = dict(options or {})
    if node_ids is None:
        node_ids = source.node_ids(label=opts.get("label"), id_property=opts.get("id_property"))
    return FeatureCache.from_source(
        source, node_ids, properties, {k: v for k, v in opts.items() if k != "label_property"}
    )


_INFER_FNS: weakref.WeakKeyDictionary[GraphSAGE, Any] = weakref.WeakKeyDictionary()


def _softmax_fn(model: GraphSAGE) -> Any:
    """One traced ``softmax(model(x))`` per model (traced once, reused across calls)."""
    fn = _INFER_FNS.get(model)
    if fn is None:
        ref = weakref.ref(model)  # the cached function must not keep the model alive

        @tf.function(reduce_retracing=True, autograph=False)
        def fn(x: Mapping[str, tf.Tensor]) -> tf.Tensor:
            return tf.nn.softmax(ref()(x, training=False))

        _INFER_FNS[model] = fn
    return fn


def predict_proba(
    model: GraphSAGE,
    source: GraphSource,
    node_ids: Any,
    *,
    properties: Sequence[str] = ("features",),
    options: Mapping[str, Any] | None = None,
    draws: int = 1,
    batch_size: int = 256,
    feature_cache: FeatureCache | None = None,
    seed: int | None = None,
    decoder: str = "auto",
    with_labels: bool = False,
) -> Any:
    """Class probabilities ``[n, num_classes]`` for ``node_ids`` in order, averaged over ``draws``
    independent neighbourhood samples; with ``with_labels`` also the labels the blobs carry
    (``options["label_property"]`` must be set)."""
    draws = _positive_int("draws", draws)
    ids = np.asarray(node_ids, dtype=np.int64)
    total = np.zeros((len(ids), model.num_classes), dtype=np.float64)
    labels = None

    infer = _softmax_fn(model)
    for draw in range(draws):
        ds = sample_dataset(
            source,
            ids,
            model.fanouts,
            properties,
            options=options,
            batch_size=batch_size,
            seed=None if seed is None else seed * 7919 + draw,
            feature_cache=feature_cache,
            include_ids=False,
            decoder=decoder,
        )
        parts, label_parts = [], []
        for batch in ds:
            parts.append(infer(model_inputs(batch, model.hops)).numpy())
            if with_labels:
                label_parts.append(batch["labels"].numpy())
        total += np.concatenate(parts)
        if with_labels and labels is None:
            labels = np.concatenate(label_parts)
    probs = (total / draws).astype(np.float32)
    return (probs, labels) if with_labels else probs


def evaluate(
    model: GraphSAGE,
    source: GraphSource,
    node_ids: Any,
    *,
    properties: Sequence[str] = ("features",),
    label_property: str = "label",
    options: Mapping[str, Any] | None = None,
    draws: int = 3,
    batch_size: int = 256,
    feature_cache: FeatureCache | None = None,
    seed: int | None = None,
    decoder: str = "auto",
) -> dict[str, float]:
    """Accuracy of ``model`` on ``node_ids`` (labels from ``label_property``), predictions averaged
    over ``draws`` neighbourhood samples. Returns ``{"accuracy", "num_nodes"}``."""
    opts = dict(options or {})
    opts["label_property"] = label_property
    probs, labels = predict_proba(
        model,
        source,
        node_ids,
        properties=properties,
        options=opts,
        draws=draws,
        batch_size=batch_size,
        feature_cache=feature_cache,
        seed=seed,
        decoder=decoder,
        with_labels=True,
    )
    accuracy = float(np.mean(np.argmax(probs, axis=1) == labels))
    return {"accuracy": accuracy, "num_nodes": float(len(labels))}


def train_graphsage(
    source: GraphSource,
    train_ids: Any,
    val_ids: Any = None,
    *,
    properties: Sequence[str] = ("features",),
    label_property: str = "label",
    options: Mapping[str, Any] | None = None,
    fanouts: Sequence[int] = (10, 10),
    hidden_units: int | Sequence[int] = 64,
    dropout: float = 0.5,
    l2: float = 5e-4,
    normalize_features: bool = False,
    normalize_hidden: bool = False,
    learning_rate: float = 0.01,
    batch_size: int = 256,
    steps: int = 200,
    eval_every: int = 10,
    eval_draws: int = 2,
    patience: int = 100,
    num_classes: int | None = None,
    class_names: Sequence[str] | None = None,
    use_feature_cache: bool = True,
    feature_cache: FeatureCache | None = None,
    seed: int | None = None,
    decoder: str = "auto",
    progress: bool = False,
) -> TrainResult:
    """Trains a :class:`GraphSAGE` on ``train_ids`` with neighbourhoods sampled by the source's
    ``tf_features.sample`` procedure (features through ``tf_features.pack`` into a
    :class:`FeatureCache` when ``use_feature_cache``, else inside every sample blob).

    Adam with ``learning_rate``, softmax cross-entropy plus ``l2``; ``steps`` optimisation steps of
    ``batch_size`` shuffled training nodes. With ``val_ids``, every ``eval_every`` steps the
    validation accuracy (averaged over ``eval_draws`` samples) is measured; the weights of the best
    evaluation are restored at the end, and training stops after ``patience`` steps without a gain.
    ``seed`` makes weights, shuffling and sampling reproducible. ``progress`` shows a tqdm bar
    (steps, with the latest loss and accuracies).

    Guarantees: returns the model (built, best weights, ``feature_dtype`` the blobs' feature dtype)
    and its history; labels must be integers in ``0..num_classes-1`` (``num_classes`` default:
    ``tf_features.describe``'s ``num_classes``, 1 + the largest label among the nodes with
    ``options["label"]``, at least 2).
    """
    steps = _positive_int("steps", steps)
    eval_every = _positive_int("eval_every", eval_every)
    patience = _positive_int("patience", patience)
    eval_draws = _positive_int("eval_draws", eval_draws)
    if (
        not isinstance(learning_rate, (int, float))
        or isinstance(learning_rate, bool)
        or learning_rate <= 0
    ):
        raise ConfigurationError(f"learning_rate: expected a number > 0, got {learning_rate!r}")
    opts = _labels_options(options, label_property)
    train_ids = np.asarray(train_ids, dtype=np.int64)
    val_ids = None if val_ids is None else np.asarray(val_ids, dtype=np.int64)
    if seed is not None:
        keras.utils.set_random_seed(seed)
    props = list(properties)
    if feature_cache is None and use_feature_cache:
        feature_cache = build_feature_cache(source, props, opts)
    if feature_cache is not None:
        feature_dim, feature_dtype = feature_cache.width, feature_cache.dtype.name
    else:
        feature_dim, feature_dtype = feature_layout(source, props, opts)
    if num_classes is None:
        num_classes = _infer_num_classes(source, label_property, opts)
    model = GraphSAGE(
        fanouts,
        feature_dim,
        num_classes,
        hidden_units=hidden_units,
        dropout=dropout,
        l2=l2,
        normalize_features=normalize_features,
        normalize_hidden=normalize_hidden,
        class_names=class_names,
        feature_dtype=feature_dtype,
    )
    model.ensure_built()
    optimizer = keras.optimizers.Adam(learning_rate=learning_rate)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    train_ds = sample_dataset(
        source,
        train_ids,
        model.fanouts,
        props,
        options=opts,
        batch_size=batch_size,
        shuffle=True,
        seed=seed,
        repeat=True,
        feature_cache=feature_cache,
        include_ids=False,
        decoder=decoder,
    )

    @tf.function(reduce_retracing=True, autograph=False)
    def train_step(x: Mapping[str, tf.Tensor], y: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        with tf.GradientTape() as tape:
            logits = model(x, training=True)
            loss = loss_fn(y, logits)
            if model.losses:
                loss = loss + tf.add_n(model.losses)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, axis=1), y), tf.float32))
        return loss, accuracy

    history: dict[str, list[float]] = {
        "step": [],
        "loss": [],
        "train_accuracy": [],
        "eval_step": [],
        "val_accuracy": [],
    }
    best_acc, best_step, best_weights = None, 0, None
    started = time.monotonic()
    bar = tqdm(total=steps, unit="step", desc="train", disable=not progress)
    for step, batch in enumerate(train_ds.take(steps), start=1):
        y = batch["labels"]
        _check_labels(y.numpy(), num_classes)
        loss, acc = train_step(model_inputs(batch, model.hops), y)
        history["step"].append(step)
        history["loss"].append(float(loss))
        history["train_accuracy"].append(float(acc))
        bar.update(1)
        bar.set_postfix(
            loss=f"{float(loss):.3f}",
            train=f"{float(acc):.2f}",
            val="-" if not history["val_accuracy"] else f"{history['val_accuracy'][-1]:.3f}",
            refresh=False,
        )
        if val_ids is not None and (step % eval_every == 0 or step == steps):
            val = evaluate(
                model,
                source,
                val_ids,
                properties=props,
                label_property=label_property,
                options=opts,
                draws=eval_draws,
                feature_cache=feature_cache,
                seed=None if seed is None else seed + step,
                decoder=decoder,
            )["accuracy"]
            history["eval_step"].append(step)
            history["val_accuracy"].append(val)
            logger.info(
                "step %d: loss %.4f train acc %.3f val acc %.3f", step, float(loss), float(acc), val
            )
            if best_acc is None or val > best_acc:
                best_acc, best_step, best_weights = val, step, model.get_weights()
            elif step - best_step >= patience:
                logger.info(
                    "early stop at step %d (best val acc %.3f at step %d)",
                    step,
                    best_acc,
                    best_step,
                )
                break
    bar.close()
    if best_weights is not None:
        model.set_weights(best_weights)
    else:
        best_step = len(history["step"])
    logger.info("trained %d steps in %.1f s", len(history["step"]), time.monotonic() - started)
    return TrainResult(model, history, best_step, best_acc, feature_cache)


def _check_labels(labels: np.ndarray, num_classes: int) -> None:
    bad = labels[(labels < 0) | (labels >= num_classes)]
    if bad.size:
        raise ConfigurationError(
            f"labels: expected class indices in 0..{num_classes - 1} for every training node, got "
            f"{int(bad[0])} "
            "(unlabelled nodes must not be in train_ids)"
        )


def _infer_num_classes(source: GraphSource, label_property: str, options: Mapping[str, Any]) -> int:
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
