"""Typed GraphSAGE (the R-GraphSAGE / HinSAGE family) in Keras 3, over typed slot tables.

The inputs are the slot tables of a :class:`~memgraph_tf.typed_sampling.TypedSamplingSpec`
(:meth:`~memgraph_tf.typed_sampling.TypedSamplingSpec.layout`): per table ``(h, label)`` of a label
with features, ``features_h{h}_{label}`` ``[B, slots, width(label)]``, and for hops ``h >= 1``
``mask_h{h}_{label}`` ``[B, slots]`` (bool, true where a node was sampled). Widths differ by label;
a label without features (width 0) gets no features input and starts from a learned vector.

Layer ``k`` (of ``K`` hops) updates every table of hop ``h <= K - k``::

    x <- act([x W_self[label] || sum over steps s from label: mean_mask(children_s) W_neigh[s]] + b)

where ``children_s`` are the slots step ``s`` added below ``x``'s slots (the group of the
layout, reshaped to ``[B, parents, fanout, D]``) and the mean counts only filled slots (none ->
zero). Weights are per layer and per label (self) or per edge step (neighbours), shared across
hops, so the model is inductive: nothing is per node, and new nodes are scored from their
neighbourhood. Only the weights some hop uses exist. With one label and one step it is the
mean-aggregator GraphSAGE of :mod:`memgraph_tf.client.graphsage`. The classifier is a dense layer
on the seed's representation; the output is logits ``[B, classes]``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import keras
import numpy as np

from memgraph_tf.client.errors import ConfigurationError
from memgraph_tf.typed_sampling import (
    TypedSamplingSpec,
    features_name,
    mask_name,
    table_name,
)

__all__ = ["TypedGraphSAGE", "typed_model_inputs"]


def _key(name: str) -> str:
    """A Keras-safe layer-name part for a label or a step."""
    return "".join(c if c.isalnum() else "_" for c in name).strip("_")


@keras.saving.register_keras_serializable(package="memgraph_tf")
class TypedGraphSAGE(keras.Model):
    """Typed GraphSAGE node classifier (see the module docstring).

    ``seed_label`` and ``num_neighbors`` define the spec
    (:meth:`TypedSamplingSpec.from_num_neighbors`); ``feature_dims``: width per label (0 or absent:
    no features); ``hidden_units``: per-layer width of the self and the neighbour transforms (an int
    or one per layer); ``dropout`` on every layer's inputs; ``l2`` on all kernels;
    ``normalize_hidden``: L2-normalise each layer's output.

    Guarantees: ``model(inputs)`` returns logits ``[B, num_classes]`` from a dict holding every
    ``features_*`` input of a label with features (masks optional: absent = all filled); extra
    keys are ignored; the config rebuilds the same architecture.
    """

    def __init__(
        self,
        seed_label: str,
        num_neighbors: Mapping[str, Sequence[int]],
        feature_dims: Mapping[str, int],
        num_classes: int,
        *,
        hidden_units: int | Sequence[int] = 64,
        dropout: float = 0.5,
        l2: float = 5e-4,
        normalize_hidden: bool = False,
        class_names: Sequence[str] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        try:
            self.spec = TypedSamplingSpec.from_num_neighbors(seed_label, num_neighbors)
        except ValueError as exc:
            raise ConfigurationError(str(exc)) from None
        self.layout = self.spec.layout()
        labels = self.spec.labels()
        dims = {}
        for label in labels:
            width = feature_dims.get(label, 0)
            if isinstance(width, bool) or not isinstance(width, (int, np.integer)) or width < 0:
                raise ConfigurationError(
                    f"feature_dims[{label!r}]: expected an integer >= 0, got {width!r}"
                )
            dims[label] = int(width)
        extra = sorted(set(feature_dims) - set(labels))
        if extra:
            raise ConfigurationError(
                f"feature_dims: {', '.join(map(repr, extra))}: no such label in the sampled "
                f"neighbourhood (labels: {', '.join(labels)})"
            )
        self.feature_dims = dims
        if isinstance(num_classes, bool) or not isinstance(num_classes, int) or num_classes < 2:
            raise ConfigurationError(f"num_classes: expected an integer >= 2, got {num_classes!r}")
        self.num_classes = num_classes
        hops = self.spec.num_hops
        units = [hidden_units] * hops if isinstance(hidden_units, int) else list(hidden_units)
        if len(units) != hops or any(not isinstance(u, int) or u < 1 for u in units):
            raise ConfigurationError(
                f"hidden_units: expected an integer >= 1 or one per layer ({hops}), got "
                f"{hidden_units!r}"
            )
        self.hidden_units = units
        if not isinstance(dropout, (int, float)) or not 0.0 <= dropout < 1.0:
            raise ConfigurationError(f"dropout: expected a number in [0, 1), got {dropout!r}")
        self.dropout_rate = float(dropout)
        self.l2 = float(l2)
        self.normalize_hidden = bool(normalize_hidden)
        self.class_names = None if class_names is None else [str(c) for c in class_names]
        reg = keras.regularizers.L2(self.l2) if self.l2 else None
        self.self_dense: dict[str, keras.layers.Dense] = {}
        self.neigh_dense: dict[str, keras.layers.Dense] = {}
        self.biases: dict[str, Any] = {}
        for k, u in enumerate(units, start=1):
            for label in self._updated_labels(k):
                name = f"self_{k}_{_key(label)}"
                self.self_dense[name] = keras.layers.Dense(
                    u, use_bias=False, kernel_regularizer=reg, name=name
                )
            for step in self._used_steps(k):
                name = f"neigh_{k}_{_key(str(step))}"
                self.neigh_dense[name] = keras.layers.Dense(
                    u, use_bias=False, kernel_regularizer=reg, name=name
                )
        self.drop = keras.layers.Dropout(self.dropout_rate)
        self.classifier = keras.layers.Dense(num_classes, kernel_regularizer=reg, name="classifier")

    def _updated_labels(self, k: int) -> list[str]:
        """The labels whose tables layer ``k`` updates (tables of hops ``0..K-k``)."""
        seen: dict[str, None] = {}
        for table in self.layout.tables[: self.spec.num_hops - k + 1]:
            seen.update(dict.fromkeys(table))
        return list(seen)

    def _used_steps(self, k: int) -> list[Any]:
        """The steps whose groups layer ``k`` aggregates (groups of hops ``1..K-k+1``)."""
        hops = self.spec.num_hops - k + 1
        return [
            s
            for s in self.spec.steps
            if any(g.step == s and g.hop <= hops for g in self.layout.groups)
        ]

    def get_config(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "trainable": self.trainable,
            "seed_label": self.spec.seed_label,
            "num_neighbors": self.spec.num_neighbors(),
            "feature_dims": dict(self.feature_dims),
            "num_classes": self.num_classes,
            "hidden_units": list(self.hidden_units),
            "dropout": self.dropout_rate,
            "l2": self.l2,
            "normalize_hidden": self.normalize_hidden,
            "class_names": self.class_names,
        }

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> TypedGraphSAGE:
        return cls(**config)

    def input_names(self, masks: bool = True) -> list[str]:
        """Every ``features_*`` input (labels with features), then (``masks``) every ``mask_*``."""
        tables = self.layout.tables
        names = [
            features_name(h, label)
            for h, table in enumerate(tables)
            for label in table
            if self.feature_dims[label]
        ]
        if masks:
            names += [mask_name(h, label) for h, t in enumerate(tables) if h for label in t]
        return names

    def input_shapes(self, batch_size: int | None = None) -> dict[str, tuple[int | None, ...]]:
        """Shape per input (``batch_size`` None: any batch)."""
        shapes: dict[str, tuple[int | None, ...]] = {}
        for h, table in enumerate(self.layout.tables):
            for label, slots in table.items():
                if self.feature_dims[label]:
                    shapes[features_name(h, label)] = (batch_size, slots, self.feature_dims[label])
                if h:
                    shapes[mask_name(h, label)] = (batch_size, slots)
        return shapes

    def build(self, input_shape: Any = None) -> None:
        """Creates every weight from the config alone."""
        width = dict(self.feature_dims)
        for k, u in enumerate(self.hidden_units, start=1):
            for label in self._updated_labels(k):
                self.self_dense[f"self_{k}_{_key(label)}"].build((None, width[label] or 1))
                name = f"bias_{k}_{_key(label)}"
                if name not in self.biases:
                    self.biases[name] = self.add_weight(
                        name=name, shape=(2 * u,), initializer="zeros"
                    )
            for step in self._used_steps(k):
                dense = self.neigh_dense[f"neigh_{k}_{_key(str(step))}"]
                dense.build((None, width[step.right] or 1))
            width = dict.fromkeys(width, 2 * u)
        self.classifier.build((None, 2 * self.hidden_units[-1]))
        self.built = True

    def call(self, inputs: Mapping[str, Any], training: bool | None = None) -> Any:
        return self.classifier(self.drop(self.encode(inputs, training=training), training=training))

    def encode(self, inputs: Mapping[str, Any], training: bool | None = None) -> Any:
        """The seed's representation before the classifier, ``[B, 2 * hidden_units[-1]]``."""
        if not self.built:
            self.build()
        missing = [n for n in self.input_names(masks=False) if n not in inputs]
        if missing:
            raise ConfigurationError(f"inputs: missing {', '.join(missing)}")
        tables = self.layout.tables
        batch = None
        for name in self.input_names(masks=False):
            batch = keras.ops.shape(inputs[name])[0]
            break
        if batch is None:
            present = [n for n in self.input_names() if n in inputs]
            if not present:
                raise ConfigurationError("inputs: expected at least one features or mask input")
            batch = keras.ops.shape(inputs[present[0]])[0]
        reps: dict[tuple[int, str], Any] = {}
        masks: dict[tuple[int, str], Any] = {}
        for h, table in enumerate(tables):
            for label, slots in table.items():
                if self.feature_dims[label]:
                    reps[(h, label)] = keras.ops.cast(inputs[features_name(h, label)], "float32")
                else:
                    reps[(h, label)] = keras.ops.ones((batch, slots, 1), "float32")
                if h:
                    m = inputs.get(mask_name(h, label))
                    masks[(h, label)] = (
                        keras.ops.ones((batch, slots), "float32")
                        if m is None
                        else keras.ops.cast(m, "float32")
                    )
        hops = len(tables) - 1
        for k in range(1, len(self.hidden_units) + 1):
            updated: dict[tuple[int, str], Any] = {}
            for h in range(0, hops - k + 1):
                for label in tables[h]:
                    x = self.drop(reps[(h, label)], training=training)
                    own = self.self_dense[f"self_{k}_{_key(label)}"](x)
                    neigh = keras.ops.zeros_like(own)
                    for group in self.layout.children(h, label):
                        key = (h + 1, group.step.right)
                        child = reps[key][:, group.offset : group.offset + group.size, :]
                        child = keras.ops.reshape(
                            child, (batch, group.parents, group.fanout, child.shape[-1])
                        )
                        m = masks[key][:, group.offset : group.offset + group.size]
                        m = keras.ops.reshape(m, (batch, group.parents, group.fanout, 1))
                        total = keras.ops.sum(child * m, axis=2)
                        mean = total / keras.ops.maximum(keras.ops.sum(m, axis=2), 1.0)
                        mean = self.drop(mean, training=training)
                        neigh = neigh + self.neigh_dense[f"neigh_{k}_{_key(str(group.step))}"](mean)
                    out = keras.ops.concatenate([own, neigh], axis=-1)
                    out = keras.ops.relu(out + self.biases[f"bias_{k}_{_key(label)}"])
                    if self.normalize_hidden:
                        norm = keras.ops.norm(out, axis=-1, keepdims=True)
                        out = out / keras.ops.maximum(norm, 1e-12)
                    updated[(h, label)] = out
            reps = updated
        return reps[(0, self.spec.seed_label)][:, 0, :]


def typed_model_inputs(
    spec: TypedSamplingSpec,
    tables: Mapping[str, np.ndarray],
    features: Mapping[str, np.ndarray | None],
) -> dict[str, np.ndarray]:
    """Model inputs from sampled slot tables of node numbers (``tables[table_name(h, label)]``
    ``[B, slots]``, -1 padded) and per-label feature matrices (None: a label without features).
    Padded slots get zero features and a false mask."""
    out: dict[str, np.ndarray] = {}
    for h, table in enumerate(spec.layout().tables):
        for label in table:
            ids = tables[table_name(h, label)]
            filled = ids >= 0
            matrix = features.get(label)
            if matrix is not None:
                rows = matrix[np.where(filled, ids, 0)]
                rows[~filled] = 0.0
                out[features_name(h, label)] = rows
            if h:
                out[mask_name(h, label)] = filled
    return out
