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
zero). A step given an edge feature spec (``edge_feature_spec``) concatenates to each child's
representation the encoded properties of the relationship that reached it
(``edge_{group}_h{h}_s{i}`` sections, a :class:`~memgraph_tf.client.feature_encoding.LabelEncoder`
per step), so the message of a neighbour is ``[x_child || e_relationship]`` before the mean, at
every layer. Weights are per layer and per label (self) or per edge step (neighbours), shared across
hops, so the model is inductive: nothing is per node, and new nodes are scored from their
neighbourhood. Only the weights some hop uses exist. With one label and one step it is the
mean-aggregator GraphSAGE: :class:`memgraph_tf.client.graphsage.GraphSAGE` is that case, a subclass
that reads the homogeneous sample layout and lays its weights out per layer
(:meth:`TypedGraphSAGE.make_transforms`). The classifier is a dense layer on the seed's
representation; the output is logits ``[B, classes]``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from memgraph_tf import layout
from memgraph_tf.client import encoder, feature_encoding, trainer
from memgraph_tf.client.checks import positive_int
from memgraph_tf.client.pipeline import batching, call_batches, node_id_array, unpacker
from memgraph_tf.client.structural import default_structural_spec
from memgraph_tf.client.tasks import NodeClassification, accuracy_figures, infer_num_classes
from memgraph_tf.errors import ConfigurationError
from memgraph_tf.typed_sampling import (
    TypedSamplingSpec,
    slot_table_name,
    typed_features_name,
    typed_mask_name,
)

__all__ = [
    "TypedGraphSAGE",
    "appended_name",
    "evaluate_typed",
    "predict_typed_proba",
    "split_node_ids",
    "train_typed_graphsage",
    "typed_feature_widths",
    "typed_model_inputs",
    "typed_sample_dataset",
]

logger = logging.getLogger(__name__)


def appended_name(h: int, label: str) -> str:
    """The model input (not a blob section) holding the vectors appended after a feature-spec
    label's encoded properties in slot table ``(h, label)`` (:class:`TypedGraphSAGE`
    ``appended_dims``), ``[B, slots, width]``."""
    return f"appended_h{h}_{label}"


def _key(name: str) -> str:
    """A Keras-safe layer-name part for a label or a step."""
    return "".join(c if c.isalnum() else "_" for c in name).strip("_")


@keras.saving.register_keras_serializable(package="memgraph_tf")
class TypedGraphSAGE(trainer.SampledModel, keras.Model):
    """Typed GraphSAGE node classifier (see the module docstring).

    ``seed_label`` and ``num_neighbors`` define the spec
    (:meth:`TypedSamplingSpec.from_num_neighbors`); ``feature_dims``: width per label (0 or absent:
    no features); ``hidden_units``: per-layer width of the self and the neighbour transforms (an int
    or one per layer); ``dropout`` on every layer's inputs; ``l2`` on all kernels;
    ``normalize_hidden``: L2-normalise each layer's output; ``feature_dtype``: the dtype of the
    ``features_*`` inputs as the typed blobs carry them (``options.dtype``; the model computes in
    float32); ``feature_spec``: label -> :class:`~memgraph_tf.feature_spec.LabelSpec` (or its
    ``to_dict()`` form) for the labels whose features a
    :class:`~memgraph_tf.client.feature_encoding.LabelEncoder` makes from the raw property
    sections (``num_/time_/cat_/bag_/has_h{h}_{label}``) -- their width is the encoder's, and
    ``embedding_dim`` and ``required_widths`` (label -> property -> columns) go to the encoders;
    ``edge_feature_spec``: edge pattern -> the ``LabelSpec`` of the step's relationship
    properties (sampled with ``options.edge_feature_spec``; its encoded columns join each
    neighbour's message, module docstring).
    ``appended_dims``: label -> width of vectors appended after a feature-spec label's encoded
    properties (the input :func:`appended_name` per slot table, e.g. the learned node embeddings
    of :class:`~memgraph_tf.client.link_prediction.LinkPredictor`): that label's width is the
    encoder's plus this.

    Set by :func:`train_typed_graphsage` (not part of the config): ``properties`` (label ->
    feature property names the blobs were sampled with) and ``schema`` (the part of
    ``tf_features.schema`` the model was trained on: its labels and the relationship triples its
    steps walk); :func:`memgraph_tf.serving.export.export_bundle` stores both in the bundle.

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
        feature_dtype: str = "float32",
        feature_spec: Mapping[str, Any] | None = None,
        embedding_dim: int = 8,
        required_widths: Mapping[str, Mapping[str, int]] | None = None,
        edge_feature_spec: Mapping[str, Any] | None = None,
        appended_dims: Mapping[str, int] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if feature_dtype not in ("float32", "float64"):
            raise ConfigurationError(
                f"feature_dtype: expected float32 or float64, got {feature_dtype!r}"
            )
        self.feature_dtype = feature_dtype
        self.properties: dict[str, list[str]] | None = None
        self.schema: dict[str, Any] | None = None
        try:
            self.spec = TypedSamplingSpec.from_num_neighbors(seed_label, num_neighbors)
        except ValueError as exc:
            raise ConfigurationError(str(exc)) from None
        self.layout = self.spec.layout()
        labels = self.spec.labels()
        self.label_encoders = feature_encoding.label_encoders(
            feature_spec, labels, embedding_dim, required_widths
        )
        self.embedding_dim = embedding_dim
        self.edge_encoders = feature_encoding.edge_encoders(
            edge_feature_spec, self.spec, embedding_dim
        )
        self.appended_dims = self._appended(appended_dims)
        dims = {}
        for label in labels:
            width = feature_dims.get(label, 0)
            if label in self.label_encoders:
                width = self.label_encoders[label].output_width + self.appended_dims.get(label, 0)
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
        self.make_transforms()

    def _appended(self, appended_dims: Mapping[str, int] | None) -> dict[str, int]:
        """``appended_dims`` checked: feature-spec labels -> integers >= 1."""
        out: dict[str, int] = {}
        for label, width in (appended_dims or {}).items():
            if label not in self.label_encoders:
                raise ConfigurationError(
                    f"appended_dims[{label!r}]: expected a label with a feature spec (labels "
                    f"with one: {', '.join(map(repr, self.label_encoders)) or 'none'})"
                )
            out[label] = positive_int(f"appended_dims[{label!r}]", width)
        return out

    def make_transforms(self) -> None:
        """Creates the layers that hold the weights, in the order that fixes their initial values
        (each initialiser and each dropout draws its seed from Keras' seeded random state when it
        is made): per layer ``k`` the self transform of every label it updates, then the neighbour
        transform of every step it aggregates; one dropout for every layer's inputs and the
        classifier's; the classifier. A subclass that lays the same transforms out otherwise
        overrides this with :meth:`self_transform`, :meth:`neigh_transform`, :meth:`dropout`,
        :meth:`output_dropout`, :meth:`layer_out` and :meth:`build`."""
        reg = keras.regularizers.L2(self.l2) if self.l2 else None
        self.self_dense: dict[str, keras.layers.Dense] = {}
        self.neigh_dense: dict[str, keras.layers.Dense] = {}
        self.biases: dict[str, Any] = {}
        for k, u in enumerate(self.hidden_units, start=1):
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
        self.classifier = keras.layers.Dense(
            self.num_classes, kernel_regularizer=reg, name="classifier"
        )

    def self_transform(self, k: int, label: str) -> keras.layers.Dense:
        """Layer ``k``'s self transform of ``label`` (``k`` from 1)."""
        return self.self_dense[f"self_{k}_{_key(label)}"]

    def neigh_transform(self, k: int, step: Any) -> keras.layers.Dense:
        """Layer ``k``'s neighbour transform of the edge step ``step``."""
        return self.neigh_dense[f"neigh_{k}_{_key(str(step))}"]

    def dropout(self, k: int) -> keras.layers.Dropout:
        """The dropout on layer ``k``'s inputs (its tables and its neighbour means)."""
        return self.drop

    def output_dropout(self) -> keras.layers.Dropout:
        """The dropout on the classifier's input."""
        return self.drop

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
            "feature_dtype": self.feature_dtype,
            **feature_encoding.encoders_config(
                self.label_encoders, self.embedding_dim, self.edge_encoders
            ),
            **({"appended_dims": dict(self.appended_dims)} if self.appended_dims else {}),
        }

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> TypedGraphSAGE:
        return cls(**config)

    def input_names(self, masks: bool = True) -> list[str]:
        """Every ``features_*`` input (labels with features), then (``masks``) every ``mask_*``."""
        return self.table_input_names(masks)

    def table_input_names(self, masks: bool = True) -> list[str]:
        """The slot tables' input names :meth:`encode` reads: every ``features_*`` input (labels
        with features), then every edge section (steps with an edge encoder, groups in layout
        order), then (``masks``) every ``mask_*``."""
        tables = self.layout.tables
        names = [
            name
            for h, table in enumerate(tables)
            for label in table
            if self.feature_dims[label]
            for name in feature_encoding.raw_section_names(self.label_encoders, h, label)
            or [typed_features_name(h, label)]
        ]
        steps = list(self.spec.steps)
        for group in self.layout.groups:
            enc = self.edge_encoders.get(str(group.step))
            if enc is not None:
                index = steps.index(group.step)
                names += feature_encoding.edge_section_names(enc, group.hop, index)
        if masks:
            names += [typed_mask_name(h, label) for h, t in enumerate(tables) if h for label in t]
        return names

    def input_shapes(self, batch_size: int | None = None) -> dict[str, tuple[int | None, ...]]:
        """Shape per input (``batch_size`` None: any batch)."""
        shapes: dict[str, tuple[int | None, ...]] = {}
        for h, table in enumerate(self.layout.tables):
            for label, slots in table.items():
                if label in self.label_encoders:
                    shapes.update(
                        self.label_encoders[label].section_shapes(h, label, slots, batch_size)
                    )
                elif self.feature_dims[label]:
                    shapes[typed_features_name(h, label)] = (
                        batch_size,
                        slots,
                        self.feature_dims[label],
                    )
                if h:
                    shapes[typed_mask_name(h, label)] = (batch_size, slots)
        steps = list(self.spec.steps)
        for group in self.layout.groups:
            enc = self.edge_encoders.get(str(group.step))
            if enc is not None:
                for g in enc.groups:
                    if g != "bag":
                        name = layout.typed_edge_name(g, group.hop, steps.index(group.step))
                        shapes[name] = (batch_size, group.size, enc.group_widths[g])
        return shapes

    output_is_logits = True
    """The model returns logits (serving applies the softmax)."""

    typed_inputs = True
    """The model reads typed slot tables (its bundles are typed node bundles)."""

    def batch_logits(self, batch: Mapping[str, Any], training: bool | None = None) -> Any:
        """The logits for a batch of :func:`typed_sampler` (its features and masks)."""
        return self({k: batch[k] for k in self.input_names() if k in batch}, training=training)

    def build(self, input_shape: Any = None) -> None:
        """Creates every weight from the config alone."""
        for enc in (*self.label_encoders.values(), *self.edge_encoders.values()):
            enc.build()
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
                edge = self.edge_encoders.get(str(step))
                extra = edge.output_width if edge is not None else 0
                dense.build((None, (width[step.right] or 1) + extra))
            width = dict.fromkeys(width, 2 * u)
        self.classifier.build((None, 2 * self.hidden_units[-1]))
        self.built = True

    def call(self, inputs: Mapping[str, Any], training: bool | None = None) -> Any:
        seed = self.encode_tables(inputs, training=training)
        return self.classifier(self.output_dropout()(seed, training=training))

    def encode(self, inputs: Mapping[str, Any], training: bool | None = None) -> Any:
        """The seed's representation before the classifier, ``[B, 2 * hidden_units[-1]]``, from
        the inputs of :meth:`input_names` (node embeddings: what the classifier reads)."""
        return self.encode_tables(inputs, training=training)

    def encode_tables(self, inputs: Mapping[str, Any], training: bool | None = None) -> Any:
        """:meth:`encode` from the slot tables of :meth:`table_input_names` (the typed inputs of
        every model of this family, the one-label :class:`GraphSAGE` included)."""
        if not self.built:
            self.build()
        missing = [n for n in self.table_input_names(masks=False) if n not in inputs]
        if missing:
            raise ConfigurationError(f"inputs: missing {', '.join(missing)}")
        tables = self.layout.tables
        batch = None
        for name in self.table_input_names(masks=False):
            if not name.startswith(("bag_", "edge_bag_")):  # (a bag's flat values: no batch)
                batch = keras.ops.shape(inputs[name])[0]
                break
        if batch is None:
            present = [n for n in self.table_input_names() if n in inputs]
            if not present:
                raise ConfigurationError("inputs: expected at least one features or mask input")
            batch = keras.ops.shape(inputs[present[0]])[0]
        reps: dict[tuple[int, str], Any] = {}
        for h, table in enumerate(tables):
            for label, slots in table.items():
                if label in self.label_encoders:
                    reps[(h, label)] = self._encoded(inputs, h, label)
                elif self.feature_dims[label]:
                    reps[(h, label)] = keras.ops.cast(
                        inputs[typed_features_name(h, label)], "float32"
                    )
                else:
                    reps[(h, label)] = keras.ops.ones((batch, slots, 1), "float32")
        masks = self._float_masks(lambda h, label: inputs.get(typed_mask_name(h, label)), batch)
        steps = list(self.spec.steps)
        edges = {
            (g.hop, g.step): feature_encoding.edge_features(
                self.edge_encoders[str(g.step)], inputs, g.hop, steps.index(g.step)
            )
            for g in self.layout.groups
            if str(g.step) in self.edge_encoders
        }
        return self.layers_from(reps, masks, batch, 1, training, edges=edges)

    def _encoded(self, inputs: Mapping[str, Any], h: int, label: str) -> Any:
        """A feature-spec label's slot features: its encoded raw sections, then (with
        ``appended_dims``) the vectors of its :func:`appended_name` input."""
        rep = feature_encoding.label_features(self.label_encoders[label], inputs, h, label)
        if label not in self.appended_dims:
            return rep
        extra = inputs.get(appended_name(h, label))
        if extra is None:
            raise ConfigurationError(
                f"inputs: missing {appended_name(h, label)} (the {self.appended_dims[label]} "
                f"columns appended after label {label!r}'s encoded properties)"
            )
        return keras.ops.concatenate([rep, keras.ops.cast(extra, "float32")], axis=-1)

    def _float_masks(self, mask_of: Any, batch: Any) -> dict[tuple[int, str], Any]:
        """Every table ``(h, label)`` of a hop ``h >= 1`` -> its mask as float32 ``[B, slots]``
        (``mask_of(h, label)``; None: all filled)."""
        out: dict[tuple[int, str], Any] = {}
        for h, table in enumerate(self.layout.tables):
            for label, slots in table.items():
                if h:
                    m = mask_of(h, label)
                    out[(h, label)] = (
                        keras.ops.ones((batch, slots), "float32")
                        if m is None
                        else keras.ops.cast(m, "float32")
                    )
        return out

    def _rows_batch(
        self,
        rows: Mapping[str, Any],
        index: Mapping[tuple[int, str], Any],
        masks: Mapping[tuple[int, str], Any],
    ) -> Any:
        """:meth:`encode_rows`' batch size, after a check that every index and rows input of a
        label with features is present (:class:`ConfigurationError` naming the missing ones)."""
        tables = self.layout.tables
        missing = [
            f"index {typed_features_name(h, label)}"
            for h, table in enumerate(tables)
            for label in table
            if self.feature_dims[label] and (h, label) not in index
        ] + [
            f"rows {label}"
            for label in self.spec.labels()
            if self.feature_dims[label] and label not in rows
        ]
        if missing:
            raise ConfigurationError(f"inputs: missing {', '.join(missing)}")
        seed = (0, self.spec.seed_label)
        first = next(iter(index.values()), None) if seed not in index else index[seed]
        if first is None:
            present = list(masks.values())
            if not present:
                raise ConfigurationError("inputs: expected at least one index or mask input")
            first = present[0]
        return tf.shape(first)[0]

    def layer_out(self, k: int, label: str, own: Any, neigh: Any) -> Any:
        """Layer ``k``'s output for ``label`` from its self and neighbour transforms: bias,
        ReLU and (``normalize_hidden``) L2 normalisation."""
        out = keras.ops.concatenate([own, neigh], axis=-1)
        bias = self.biases[f"bias_{k}_{_key(label)}"]
        return encoder.layer_output(out, bias, keras.ops.relu, self.normalize_hidden)

    def layers_from(
        self,
        reps: dict[tuple[int, str], Any],
        masks: dict[tuple[int, str], Any],
        batch: Any,
        start: int,
        training: bool | None,
        edges: Mapping[tuple[int, Any], Any] | None = None,
    ) -> Any:
        """Layers ``start..K`` (from 1) over the tables' representations ``reps`` (``(h, label)``
        -> ``[B, slots, D]``) and ``masks`` (``(h, label)`` of a hop ``h >= 1`` -> ``[B, slots]``,
        bool or 0/1 floats; absent: every slot filled); the seed's ``[B, D]``. ``edges``: per
        ``(hop, step)`` of a group with edge features, their ``[B, parents * fanout, E]``,
        concatenated to the group's children before the mean. Per layer and table
        the order is fixed: dropout on the table, its self transform, then per child group the
        dropout on the masked mean and its neighbour transform, then :meth:`layer_out`."""
        tables = self.layout.tables
        hops = len(tables) - 1
        for k in range(start, len(self.hidden_units) + 1):
            drop = self.dropout(k)
            updated: dict[tuple[int, str], Any] = {}
            for h in range(0, hops - k + 1):
                for label in tables[h]:
                    x = drop(reps[(h, label)], training=training)
                    own = self.self_transform(k, label)(x)
                    neigh = None
                    for group in self.layout.children(h, label):
                        key = (h + 1, group.step.right)
                        child = reps[key][:, group.offset : group.offset + group.size, :]
                        edge = (edges or {}).get((group.hop, group.step))
                        if edge is not None:
                            child = keras.ops.concatenate([child, edge], axis=-1)
                        child = keras.ops.reshape(
                            child, (batch, group.parents, group.fanout, child.shape[-1])
                        )
                        m = masks.get(key)
                        if m is not None:
                            m = m[:, group.offset : group.offset + group.size]
                            m = keras.ops.reshape(m, (batch, group.parents, group.fanout))
                        mean = drop(encoder.masked_mean(child, m), training=training)
                        part = self.neigh_transform(k, group.step)(mean)
                        neigh = part if neigh is None else neigh + part
                    if neigh is None:  # no step leaves the label: no neighbour term
                        neigh = keras.ops.zeros_like(own)
                    updated[(h, label)] = self.layer_out(k, label, own, neigh)
            reps = updated
        return reps[(0, self.spec.seed_label)][:, 0, :]

    def encode_rows(
        self,
        rows: Mapping[str, Any],
        index: Mapping[tuple[int, str], Any],
        masks: Mapping[tuple[int, str], Any] | None = None,
        training: bool | None = None,
    ) -> Any:
        """The same function as :meth:`encode`, over each label's distinct feature rows: ``rows``
        (label with features -> ``[u, width]``, dense or a ``tf.SparseTensor`` with its entries in
        row-major order) and ``index`` (every table ``(h, label)`` of a label with features ->
        each slot's row ``[B, slots]``), ``masks`` as :meth:`encode`'s (``(h, label)`` -> bool
        ``[B, slots]``, absent: all filled). ``tf.gather(rows[label], index[(h, label)])`` would
        be ``features_h{h}_{label}``.

        The first layer reads each distinct row once. Without dropout (``training`` false or rate
        0) it is linear up to its bias, so each label's rows are multiplied by each first-layer
        kernel that reads them once (a sparse product for sparse rows: the cost follows the
        non-zero entries), and the slots gather and average the products. With dropout, the
        dropped tensors are those of :meth:`encode` -- each slot's input row and each masked mean
        of its children -- built per slot as sparse rows whose non-zero entries are dropped (the
        entries dense dropout could change, as a zero stays zero) before the sparse products;
        dense rows are gathered per slot and take :meth:`encode`'s dense path. Later layers are
        :meth:`encode`'s. Guarantees: equals ``encode(features)`` up to float rounding with
        ``training`` false; with dropout, the same distribution over the same tensors (not the
        same random draws)."""
        if not self.built:
            self.build()
        if self.label_encoders or self.edge_encoders:
            raise ConfigurationError(
                "encode_rows: expected a model without feature encoders (labels "
                f"{', '.join(self.label_encoders) or 'none'} and steps "
                f"{', '.join(self.edge_encoders) or 'none'} take raw sections: use "
                "encode)"
            )
        masks = masks or {}
        batch = self._rows_batch(rows, index, masks)
        float_masks = self._float_masks(lambda h, label: masks.get((h, label)), batch)
        reps = self._first_layer_rows(rows, index, float_masks, batch, training)
        return self.layers_from(reps, float_masks, batch, 2, training)

    def _first_layer_rows(
        self,
        rows: Mapping[str, Any],
        index: Mapping[tuple[int, str], Any],
        float_masks: Mapping[tuple[int, str], Any],
        batch: Any,
        training: bool | None,
    ) -> dict[tuple[int, str], Any]:
        """:meth:`encode_rows`' first layer, read from each label's distinct ``rows`` through each
        table's ``index``: ``(h, label)`` -> the layer's output, for every table below the last hop
        (``float_masks``: :meth:`_float_masks`'; ``batch``: the batch size)."""
        tables = self.layout.tables
        drop = bool(training) and self.dropout_rate > 0
        products: dict[tuple[str, str], Any] = {}
        csr: dict[str, Any] = {}

        def label_rows(label: str) -> Any:
            r = rows[label]
            return tf.SparseTensor(r.indices, tf.cast(r.values, tf.float32), r.dense_shape)

        def product(label: str, dense: Any) -> Any:  # rows @ kernel, once per (label, kernel)
            key = (label, dense.name)
            if key not in products:
                r = rows[label]
                if isinstance(r, tf.SparseTensor):
                    products[key] = encoder.sparse_matmul(label_rows(label), dense.kernel)
                else:
                    products[key] = tf.matmul(tf.cast(r, tf.float32), dense.kernel)
            return products[key]

        def table(label: str) -> Any:  # the sparse rows in CSR form (entries row-major)
            if label not in csr:
                r = label_rows(label)
                csr[label] = encoder.csr_table(
                    r.indices, r.values, r.dense_shape[0], self.feature_dims[label]
                )
            return csr[label]

        def slot_features(h: int, label: str, slots: int) -> Any:  # encode()'s dense input
            if not self.feature_dims[label]:
                return tf.ones((batch, slots, 1), tf.float32)
            return tf.gather(tf.cast(rows[label], tf.float32), index[(h, label)])

        def fast(label: str) -> bool:  # the distinct-row path applies
            return bool(self.feature_dims[label]) and (
                not drop or isinstance(rows[label], tf.SparseTensor)
            )

        def dropped(part: Any, dense: Any) -> Any:  # dropout on the entries, then the product
            part = tf.SparseTensor(
                part.indices, self.dropout(1)(part.values, training=True), part.dense_shape
            )
            return encoder.sparse_matmul(part, dense.kernel)

        k = 1
        reps: dict[tuple[int, str], Any] = {}
        hops = len(tables) - 1
        for h in range(0, hops):
            for label, slots in tables[h].items():
                dense = self.self_transform(k, label)
                if not fast(label):
                    x = self.dropout(k)(slot_features(h, label, slots), training=training)
                    own = dense(x)
                elif not drop:
                    own = tf.gather(product(label, dense), index[(h, label)])
                else:
                    flat = tf.reshape(index[(h, label)], [-1])
                    own = dropped(encoder.sparse_rows(*table(label), flat), dense)
                    own = tf.reshape(own, [batch, slots, dense.units])
                neigh = tf.zeros_like(own)
                for group in self.layout.children(h, label):
                    key = (h + 1, group.step.right)
                    right = group.step.right
                    dense = self.neigh_transform(k, group.step)
                    part = slice(group.offset, group.offset + group.size)
                    m = float_masks[key][:, part]
                    m = tf.reshape(m, (batch, group.parents, group.fanout))
                    if not fast(right):
                        child = slot_features(h + 1, right, self.layout.tables[h + 1][right])
                        child = tf.reshape(
                            child[:, part, :],
                            (batch, group.parents, group.fanout, child.shape[-1]),
                        )
                        mean = self.dropout(k)(encoder.masked_mean(child, m), training=training)
                        neigh = neigh + dense(mean)
                        continue
                    children = tf.reshape(index[key][:, part], (batch, group.parents, group.fanout))
                    valid = m > 0
                    if not drop:
                        neigh = neigh + encoder.rows_mean(product(right, dense), children, valid)
                    else:
                        flat = tf.reshape(children, [-1, group.fanout])
                        flat_valid = tf.reshape(valid, [-1, group.fanout])
                        mean = dropped(
                            encoder.sparse_rows_mean(*table(right), flat, flat_valid), dense
                        )
                        neigh = neigh + tf.reshape(mean, [batch, group.parents, dense.units])
                reps[(h, label)] = self.layer_out(k, label, own, neigh)
        return reps


def typed_model_inputs(
    spec: TypedSamplingSpec,
    tables: Mapping[str, np.ndarray],
    features: Mapping[str, np.ndarray | None],
) -> dict[str, np.ndarray]:
    """Model inputs from sampled slot tables of node numbers (``tables[slot_table_name(h, label)]``
    ``[B, slots]``, -1 padded) and per-label feature matrices (None: a label without features).
    Padded slots get zero features and a false mask."""
    out: dict[str, np.ndarray] = {}
    for h, table in enumerate(spec.layout().tables):
        for label in table:
            ids = tables[slot_table_name(h, label)]
            filled = ids >= 0
            matrix = features.get(label)
            if matrix is not None:
                rows = matrix[np.where(filled, ids, 0)]
                rows[~filled] = 0.0
                out[typed_features_name(h, label)] = rows
            if h:
                out[typed_mask_name(h, label)] = filled
    return out


# ------------------------------------------------------------------------------------------------
# training and evaluation through the database (tf_features.sample_typed / schema)
# ------------------------------------------------------------------------------------------------


def typed_spec(seed_label: str, num_neighbors: Any) -> TypedSamplingSpec:
    """The spec of ``seed_label`` and ``num_neighbors`` (a spec passes through);
    :class:`ConfigurationError` with the spec's message when it is malformed."""
    if isinstance(num_neighbors, TypedSamplingSpec):
        return num_neighbors
    try:
        return TypedSamplingSpec.from_num_neighbors(seed_label, num_neighbors)
    except ValueError as exc:
        raise ConfigurationError(str(exc)) from None


def typed_properties(
    spec: TypedSamplingSpec, properties: Mapping[str, Sequence[str]] | Sequence[str]
) -> dict[str, list[str]]:
    """``properties`` as a map label -> feature property names; a plain list of names applies to
    every label with slots."""
    if isinstance(properties, Mapping):
        return {str(label): [str(n) for n in names] for label, names in properties.items()}
    if isinstance(properties, (str, bytes)):
        raise ConfigurationError(
            f"properties: expected a map label -> property names or a list of names, got "
            f"{properties!r}"
        )
    names = [str(n) for n in properties]
    return {label: list(names) for label in spec.labels()}


def typed_feature_widths(
    source: Any,
    spec: TypedSamplingSpec,
    properties: Mapping[str, Sequence[str]],
    options: Mapping[str, Any] | None = None,
) -> tuple[dict[str, int], str, dict[str, Any]]:
    """The feature width per label (``tf_features.schema``, every node checked), the feature
    dtype (``options["dtype"]``, default float32) and the part of the schema the spec uses: its
    labels (count and feature properties) and the relationship triples its steps walk.

    Guarantees: a label of ``properties`` without slots in the spec, or a label the graph lacks,
    raises :class:`ConfigurationError` naming it (the schema procedure's own error for the
    latter)."""
    labels = spec.labels()
    extra = sorted(set(properties) - set(labels))
    if extra:
        raise ConfigurationError(
            f"properties: {', '.join(map(repr, extra))}: no such label in the sampled "
            f"neighbourhood (labels: {', '.join(labels)})"
        )
    dtype = (options or {}).get("dtype") or "float32"
    described = source.schema(dict(properties), {"dtype": dtype})
    by_label = {entry["label"]: entry for entry in described["labels"]}
    widths = {
        label: sum(int(p["width"]) for p in by_label[label]["properties"])
        for label in properties
        if label in by_label
    }
    used = set()
    for step in spec.steps:
        used.add((step.left, step.rel_type, step.right))
        if step.direction != "out":
            used.add((step.right, step.rel_type, step.left))
    part = {
        "labels": [by_label[label] for label in labels if label in by_label],
        "relationships": [
            r for r in described["relationships"] if (r["source"], r["type"], r["target"]) in used
        ],
    }
    return widths, dtype, part


def typed_sample_dataset(
    source: Any,
    spec: TypedSamplingSpec,
    node_ids: Any,
    properties: Mapping[str, Sequence[str]],
    widths: Mapping[str, int],
    *,
    options: Mapping[str, Any] | None = None,
    dtype: str = "float32",
    batch_size: int = 128,
    shuffle: bool = False,
    seed: int | None = None,
    repeat: bool = False,
    draws: int = 1,
    decoder: str = "auto",
    num_parallel_calls: int | None = None,
    raw: Mapping[str, Any] | None = None,
    edges: Mapping[Any, Any] | None = None,
) -> Any:
    """Typed GraphSAGE batches: per batch of seed keys one ``tf_features.sample_typed`` call
    (``source.sample_typed_b64``) decoded by the unpack op into a dict of the typed sections
    (:func:`memgraph_tf.layout.typed_sample_sections`: ``ids_*``, ``features_*``, ``mask_*`` and,
    with ``options["label_property"]``, ``labels``) -- the model's inputs by name. With
    ``options["layout"]`` compact or sparse the blobs are expanded in the graph
    (:func:`memgraph_tf.ops.sample_decoding.decode_typed_sample`) to the same dict.

    ``options["label"]`` is the seed label (set from ``spec``). ``seed`` makes a run reproducible
    while every batch draws its own neighbourhoods (the procedure's ``options.seed`` derived from
    ``seed`` and the batch index, as :func:`~memgraph_tf.client.pipeline.sample_dataset` does);
    an explicit ``options["seed"]`` fixes every seed's neighbourhood. ``draws`` passes over the
    batches (no batch mixes two). ``raw``: per label sampled with ``options["feature_spec"]``, its
    :class:`~memgraph_tf.layout.RawWidths` (the dense raw sections, ``bag_*`` as flat values and
    ``.row_splits``); ``edges``: per step sampled with ``options["edge_feature_spec"]``, its
    :class:`~memgraph_tf.layout.RawWidths` (the ``edge_*`` sections, dense layout). Guarantees:
    every section has its static shape but the batch dimension."""
    ids = node_id_array(node_ids)
    batches = batching(batch_size, draws, seed, shuffle, repeat, num_parallel_calls)
    opts = dict(options or {})
    given = opts.get("label")
    if given is not None and given != spec.seed_label:
        raise ConfigurationError(
            f"options.label: expected the seed label {spec.seed_label!r} (or none), got {given!r}"
        )
    opts["label"] = spec.seed_label
    opts["dtype"] = dtype
    nn = spec.num_neighbors()
    props = {label: list(names) for label, names in properties.items()}
    with_labels = bool(opts.get("label_property"))
    sections = layout.typed_sample_sections(
        spec, dict(widths), dtype, labels=with_labels, batch=None, raw=raw or None, edges=edges
    )
    names = [s.name for s in sections]
    dtypes = [s.dtype for s in sections]
    shapes = [list(s.shape) for s in sections]
    unpack = unpacker(decoder)
    layout_name = opts.get("layout") or "dense"

    def call(batch_ids: np.ndarray, call_opts: dict[str, Any]) -> str:
        return source.sample_typed_b64(batch_ids.tolist(), nn, props, call_opts)

    def decode(text: Any) -> dict[str, Any]:
        if layout_name != "dense":  # compact/sparse: expanded in the graph to the same tensors
            from memgraph_tf.ops import sample_decoding

            return sample_decoding.decode_typed_sample(
                text,
                spec,
                widths,
                dtype,
                layout_name=layout_name,
                ids=True,
                labels=with_labels,
                unpack=unpack,
                encoding="base64",
                raw=raw or None,
            )
        return dict(zip(names, unpack(text, names, dtypes, shapes=shapes, encoding="base64")))

    return call_batches(ids, call, decode, options=opts, name="sample_typed", **batches)


def typed_sampler(
    model: TypedGraphSAGE,
    source: Any,
    properties: Mapping[str, Sequence[str]],
    options: Mapping[str, Any] | None,
    *,
    decoder: str,
) -> trainer.Sampler:
    """The :class:`~memgraph_tf.client.trainer.Sampler` of a :class:`TypedGraphSAGE`:
    :func:`typed_sample_dataset` batches of ``properties`` (labels with features only) in the
    model's spec, widths and dtype; training batches sampled by parallel workers; ``keep`` caches
    the batches of a seeded pipeline (the same neighbourhoods every pass)."""
    encoders = model.label_encoders
    props = {
        label: names
        for label, names in properties.items()
        if model.feature_dims.get(label) and label not in encoders
    }
    widths = {label: model.feature_dims[label] for label in props}
    options = feature_encoding.with_spec_option(options, encoders)
    raw = feature_encoding.raw_widths(encoders)
    edges = feature_encoding.edge_raw_widths(model.edge_encoders)
    if edges:
        options = {
            **options,
            "edge_feature_spec": feature_encoding.edge_spec_option(model.edge_encoders),
        }

    def sample(ids: np.ndarray, plan: trainer.BatchPlan) -> tf.data.Dataset:
        return typed_sample_dataset(
            source,
            model.spec,
            ids,
            props,
            widths,
            options=options,
            dtype=model.feature_dtype,
            decoder=decoder,
            num_parallel_calls=tf.data.AUTOTUNE if plan.training else None,
            raw=raw,
            edges=edges or None,
            **plan.tail(),
        )

    return trainer.keep_seeded_batches(sample)


def predict_typed_proba(
    model: TypedGraphSAGE,
    source: Any,
    node_ids: Any,
    *,
    properties: Mapping[str, Sequence[str]] | Sequence[str] | None = None,
    options: Mapping[str, Any] | None = None,
    draws: int = 1,
    batch_size: int = 256,
    seed: int | None = None,
    decoder: str = "auto",
    with_labels: bool = False,
) -> Any:
    """Class probabilities ``[n, num_classes]`` for the seed keys ``node_ids`` in order, averaged
    over ``draws`` typed samples (``properties`` default: the model's); with ``with_labels`` also
    the labels the blobs carry (``options["label_property"]`` must be set). The prediction loop is
    :func:`~memgraph_tf.client.trainer.predict_task`'s."""
    chosen = properties if properties is not None else model.properties
    props = typed_properties(model.spec, chosen if chosen is not None else ["features"])
    return trainer.predict_class_probabilities(
        model,
        typed_sampler(model, source, props, options, decoder=decoder),
        node_ids,
        draws=draws,
        batch_size=batch_size,
        seed=seed,
        with_labels=with_labels,
    )


def evaluate_typed(
    model: TypedGraphSAGE,
    source: Any,
    node_ids: Any,
    *,
    label_property: str = "label",
    options: Mapping[str, Any] | None = None,
    **kwargs: Any,
) -> dict[str, float]:
    """Accuracy of ``model`` on the seed keys ``node_ids`` (labels from ``label_property``),
    as :func:`memgraph_tf.client.graphsage.evaluate`: ``{"accuracy", "num_nodes"}``."""
    opts = dict(options or {})
    opts["label_property"] = label_property
    probs, labels = predict_typed_proba(
        model, source, node_ids, options=opts, with_labels=True, **kwargs
    )
    return accuracy_figures(probs, labels)


def split_node_ids(
    source: Any,
    label: str,
    split: str,
    *,
    split_property: str = "split",
    options: Mapping[str, Any] | None = None,
) -> list[int]:
    """The seed keys (``options["id_property"]`` values, else internal ids; ascending) of the
    ``label`` nodes whose ``split_property`` equals ``split`` (``train``, ``val``, ``test``),
    read from the database in one query. Raises :class:`ConfigurationError` naming the label,
    the property and the value when ``split`` is ``train`` and no node has it (training needs
    nodes), or when ``split_property`` is no string."""
    if not isinstance(split_property, str) or not split_property:
        raise ConfigurationError(
            f"split_property: expected a property name, got {split_property!r}"
        )
    ids = source.node_ids(
        label=label,
        id_property=dict(options or {}).get("id_property"),
        where={split_property: split},
    )
    if not ids and split == "train":
        raise ConfigurationError(
            f"train_ids: none given, and no :{label} node has {split_property} = 'train' to "
            "train on (pass train_ids, or write the split into that property)"
        )
    return list(ids)


def _seed_options(
    options: Mapping[str, Any] | None, label_property: str, seed_label: str
) -> dict[str, Any]:
    """:func:`~memgraph_tf.client.trainer.training_options` with ``label`` the seed label
    (:class:`ConfigurationError` when ``options`` names another)."""
    opts = trainer.training_options(options, label_property)
    given = opts.get("label")
    if given is not None and given != seed_label:
        raise ConfigurationError(
            f"options.label: expected the seed label {seed_label!r} (or none), got {given!r}"
        )
    opts["label"] = seed_label
    return opts


def _training_split(
    source: Any,
    seed_label: str,
    train_ids: Any,
    val_ids: Any,
    split_property: str,
    options: Mapping[str, Any],
) -> tuple[np.ndarray, np.ndarray | None]:
    """:func:`train_typed_graphsage`'s training and validation seed keys as int64 arrays (None: no
    validation): the given ``train_ids`` / ``val_ids``, else those :func:`split_node_ids` reads
    (``val_ids`` only when ``train_ids`` is read too; no ``val`` node: no validation)."""
    if train_ids is None:
        train_ids = split_node_ids(
            source, seed_label, "train", split_property=split_property, options=options
        )
        if val_ids is None:
            val_ids = split_node_ids(
                source, seed_label, "val", split_property=split_property, options=options
            )
            val_ids = val_ids or None
    train_ids = np.asarray(train_ids, dtype=np.int64)
    val_ids = None if val_ids is None else np.asarray(val_ids, dtype=np.int64)
    return train_ids, val_ids


def _typed_model(
    source: Any,
    spec: TypedSamplingSpec,
    feature_spec: Mapping[str, Any],
    properties: dict[str, list[str]],
    options: Mapping[str, Any],
    seed: int | None,
    num_classes: int | None,
    label_property: str,
    **settings: Any,
) -> TypedGraphSAGE:
    """:func:`train_typed_graphsage`'s model, built (after
    :func:`~memgraph_tf.client.trainer.seed_run` of ``seed``), with its ``properties`` and
    ``schema`` set: widths and dtype from :func:`typed_feature_widths` of ``properties`` and the
    ``required`` properties of ``feature_spec`` (label -> ``LabelSpec``, split off
    ``properties``); ``num_classes`` None: read from ``label_property`` by
    :func:`~memgraph_tf.client.tasks.infer_num_classes`."""
    trainer.seed_run(seed)
    required = feature_encoding.required_names(feature_spec)
    widths, dtype, schema = typed_feature_widths(source, spec, {**properties, **required}, options)
    if num_classes is None:
        num_classes = infer_num_classes(source, label_property, options)
    model = TypedGraphSAGE(
        spec.seed_label,
        spec.num_neighbors(),
        widths,
        num_classes,
        feature_dtype=dtype,
        feature_spec=feature_spec,
        required_widths=feature_encoding.required_widths_of(schema, feature_spec),
        **settings,
    )
    return model.trained_on(properties, schema)


def train_typed_graphsage(
    source: Any,
    seed_label: str,
    num_neighbors: Mapping[str, Sequence[int]],
    properties: Mapping[str, Sequence[str]] | Sequence[str],
    train_ids: Any = None,
    val_ids: Any = None,
    *,
    label_property: str = "label",
    split_property: str = "split",
    options: Mapping[str, Any] | None = None,
    hidden_units: int | Sequence[int] = 64,
    dropout: float = 0.5,
    l2: float = 5e-4,
    normalize_hidden: bool = False,
    learning_rate: float = 0.01,
    batch_size: int = 256,
    steps: int = 200,
    eval_every: int = 10,
    eval_draws: int = 2,
    patience: int = 100,
    num_classes: int | None = None,
    class_names: Sequence[str] | None = None,
    seed: int | None = None,
    decoder: str = "auto",
    progress: bool = False,
    feature_spec: Mapping[str, Any] | None = None,
    embedding_dim: int = 8,
    edge_feature_spec: Mapping[str, Any] | None = None,
    structural_default: bool = True,
) -> Any:
    """Trains a :class:`TypedGraphSAGE` on the ``seed_label`` nodes ``train_ids`` (seed keys:
    ``options["id_property"]`` values, else internal ids) with typed neighbourhoods sampled by
    the source's ``tf_features.sample_typed`` (``num_neighbors``: edge pattern -> fanout per hop;
    ``properties``: label -> feature property names, or one list of names for every label; a
    label left out has no features) and decoded by the unpack op. ``feature_spec`` (label ->
    :class:`~memgraph_tf.feature_spec.LabelSpec`, e.g. from
    :func:`~memgraph_tf.client.feature_specs.infer_feature_spec`) samples those labels' raw
    property columns (``options.feature_spec``) and gives the model a
    :class:`~memgraph_tf.client.feature_encoding.LabelEncoder` per label (``embedding_dim``
    columns per categorical property); such a label takes no ``properties``.
    ``edge_feature_spec`` (edge pattern -> the ``LabelSpec`` of the step's relationship
    properties) samples them beside each slot (``options.edge_feature_spec``) and joins them,
    encoded, to each neighbour's message. With ``structural_default`` a ``seed_label`` without
    features (no ``properties``, no ``feature_spec``) gets its FastRP embedding (projection drawn
    from ``seed``) written on its nodes and read through a feature spec that gives a node
    without it zeros
    (:func:`~memgraph_tf.client.structural.default_structural_spec`); false: its nodes share one
    learned vector.

    Without ``train_ids`` the split is read from the database: the training nodes are the
    ``seed_label`` nodes whose ``split_property`` is ``train`` and, without ``val_ids``, the
    validation nodes those whose ``split_property`` is ``val`` (none: no validation), as
    :func:`split_node_ids` reads them -- the property the loaders write
    (:func:`memgraph_tf.client.loaders.load_typed_graph`,
    :func:`memgraph_tf.client.loaders.load_into_graph`). Given ``train_ids`` are used as they are,
    and the property is not read.

    The sibling of :func:`memgraph_tf.client.graphsage.train_graphsage`, with its conventions:
    the same option names and semantics (``label_property``, ``options``, ``steps``,
    ``eval_every``, ``eval_draws``, ``patience``, ``seed``, ``decoder``, ``progress``), Adam with
    softmax cross-entropy plus ``l2``, early stopping on the validation accuracy (averaged over
    ``eval_draws`` samples, the same validation neighbourhoods at every evaluation when ``seed``
    is given) with the best weights restored. Feature widths come from ``tf_features.schema``
    (every node of a label checked: one width per label), once.

    Guarantees: returns a :class:`~memgraph_tf.client.trainer.TrainResult` (``feature_cache``
    None) whose model is built, holds the best weights, ``feature_dtype`` the blobs' dtype, and
    carries ``properties`` and ``schema`` (the part of the schema it was trained on) for
    :func:`~memgraph_tf.serving.export.export_bundle`; labels must be integers in
    ``0..num_classes-1`` (``num_classes`` default: ``tf_features.describe``'s over the
    ``seed_label`` nodes, at least 2). A homogeneous graph is the one-label, one-step case."""
    schedule = trainer.check_schedule(steps, eval_every, patience, eval_draws, learning_rate)
    spec = typed_spec(seed_label, num_neighbors)
    opts = _seed_options(options, label_property, spec.seed_label)
    if structural_default:
        feature_spec = default_structural_spec(
            source, [spec.seed_label], properties, feature_spec, opts, seed=seed
        )
    specs, props = feature_encoding.split_properties(
        feature_encoding.as_label_specs(feature_spec),
        typed_properties(spec, properties),
        explicit=isinstance(properties, Mapping),
    )
    train_ids, val_ids = _training_split(
        source, spec.seed_label, train_ids, val_ids, split_property, opts
    )
    model = _typed_model(
        source,
        spec,
        specs,
        props,
        opts,
        seed,
        num_classes,
        label_property,
        hidden_units=hidden_units,
        dropout=dropout,
        l2=l2,
        normalize_hidden=normalize_hidden,
        class_names=class_names,
        embedding_dim=embedding_dim,
        edge_feature_spec=edge_feature_spec,
    )
    history, best_step, best_acc = trainer.fit_task(
        model,
        NodeClassification(model.num_classes),
        typed_sampler(model, source, props, opts, decoder=decoder),
        train_ids,
        val_ids,
        batch_size=batch_size,
        schedule=schedule,
        seed=seed,
        progress=progress,
    )
    return trainer.TrainResult(model, history, best_step, best_acc, None)
