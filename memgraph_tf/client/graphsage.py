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

:class:`GraphSAGE` is the one-label, one-step case of the typed model
(:class:`~memgraph_tf.client.typed_graphsage.TypedGraphSAGE`): ``h_i`` is the one label's slot
table of hop ``i``, and :meth:`GraphSAGE.call` runs the typed layer loop
(:meth:`~memgraph_tf.client.typed_graphsage.TypedGraphSAGE.layers_from`) over them. What it adds is
the homogeneous layout's interface (``features_h`` / ``mask_h`` inputs, ``fanouts``,
``feature_dim``, ``normalize_features``), a weight layout of its own (one :class:`MeanAggregator`
per layer, each with its own dropout, then the classifier's dropout: the order that fixes a seeded
run's initial weights and dropout draws) and first layers over each distinct feature row
(:meth:`GraphSAGE.call_rows`, its sparse form, :meth:`GraphSAGE.call_table`), whose later layers
are again the typed loop. Those first layers stay specialisations of the one-label case: they
take the neighbour mean of raw rows before the product, where the typed
:meth:`~memgraph_tf.client.typed_graphsage.TypedGraphSAGE.encode_rows` projects each row first
(the same function with another float rounding, and other dropout draws).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from memgraph_tf import layout
from memgraph_tf.client.checks import positive_int, rate
from memgraph_tf.client.encoder import (
    csr_table,
    layer_output,
    masked_mean,
    rows_mean,
    sparse_matmul,
    sparse_rows,
    sparse_rows_mean,
)
from memgraph_tf.client.pipeline import (
    ROWS,
    FeatureCache,
    feature_layout,
    index_name,
    model_inputs,
    sample_dataset,
    unique_rows,
)
from memgraph_tf.client.sources import GraphSource
from memgraph_tf.client.tasks import NodeClassification, accuracy_figures, infer_num_classes
from memgraph_tf.client.trainer import (
    BatchPlan,
    Sampler,
    TrainResult,
    check_schedule,
    fit_task,
    predict_class_probabilities,
    seed_run,
    training_options,
)
from memgraph_tf.client.typed_graphsage import TypedGraphSAGE
from memgraph_tf.errors import ConfigurationError

logger = logging.getLogger(__name__)

ONE_LABEL = "Node"
"""The one label of the typed spec a :class:`GraphSAGE` is: a name in the model's layout only (the
homogeneous sample procedures sample whatever nodes ``options.label`` selects)."""

ONE_STEP = f"(:{ONE_LABEL})-[:EDGE]-(:{ONE_LABEL})"
"""The one edge step of that spec (likewise a name only: the homogeneous procedures follow the
relationships their options select)."""


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
        return self.combine(x, masked_mean(neighbours, mask), training=training)

    def combine(self, x: Any, agg: Any, training: bool | None = None) -> Any:
        """The layer's output from ``x [..., d]`` and the already aggregated (masked mean)
        neighbours ``agg [..., d]``: what :meth:`call` does after its mean."""
        x = self.drop(x, training=training)
        agg = self.drop(agg, training=training)
        return self.finish(keras.ops.concatenate([self.self_dense(x), self.neigh_dense(agg)], -1))

    def finish(self, out: Any) -> Any:
        """The layer's output from the concatenated self and neighbour transforms ``[..., 2 *
        units]``: bias, activation and (``normalize``) L2 normalisation -- what :meth:`combine`
        does after its products."""
        return layer_output(out, self.bias, self.activation, self.normalize)

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
class GraphSAGE(TypedGraphSAGE):
    """GraphSAGE node classifier over sampled ``K``-hop neighbourhoods (see the module docstring):
    the :class:`~memgraph_tf.client.typed_graphsage.TypedGraphSAGE` of one label
    (:data:`ONE_LABEL`) and one edge step (:data:`ONE_STEP`, fanouts ``fanouts``) over the sample
    layout's hop tensors -- ``features_h`` ``[B, f1..fh, d]`` is the typed table
    ``[B, f1 * .. * fh, d]`` of that label -- so every layer runs the typed model's layer loop.

    ``fanouts``: neighbours per hop (``K = len(fanouts)`` layers); ``feature_dim``: ``d``;
    ``num_classes``; ``hidden_units``: width of each layer's self and neighbour transforms (an int,
    or one per layer); ``dropout`` on every layer's inputs; ``l2`` weight decay on all kernels;
    ``normalize_features``: divide each feature row by its sum (bag-of-words inputs);
    ``class_names``: optional label text per class index (kept in the config, used by serving);
    ``feature_dtype``: the dtype of the ``features_h`` inputs, as the blobs carry them
    (``options.dtype``: ``float32`` or ``float64``; the model computes in float32).

    The typed interface (:meth:`~memgraph_tf.client.typed_graphsage.TypedGraphSAGE.encode`,
    :meth:`~memgraph_tf.client.typed_graphsage.TypedGraphSAGE.table_input_names`) reads the one
    label's slot tables (``features_h{h}_Node``, ``mask_h{h}_Node``) without feature
    normalisation.

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
        if not isinstance(fanouts, (list, tuple)) or not fanouts:
            raise ConfigurationError(
                f"fanouts: expected a non-empty list of integers >= 1, got {fanouts!r}"
            )
        fanouts = tuple(positive_int(f"fanouts[{i}]", f) for i, f in enumerate(fanouts))
        feature_dim = positive_int("feature_dim", feature_dim)
        num_classes = positive_int("num_classes", num_classes)
        if num_classes < 2:
            raise ConfigurationError(f"num_classes: expected >= 2, got {num_classes}")
        units = (
            [hidden_units] * len(fanouts)
            if isinstance(hidden_units, (int, np.integer))
            else list(hidden_units)
        )
        if len(units) != len(fanouts):
            raise ConfigurationError(
                f"hidden_units: expected an int or one width per layer ({len(fanouts)}), got "
                f"{hidden_units!r}"
            )
        units = [positive_int(f"hidden_units[{i}]", u) for i, u in enumerate(units)]
        dropout = rate("dropout", dropout)
        l2 = rate("l2", l2, upper=float("inf"))
        if class_names is not None:
            class_names = [str(c) for c in class_names]
            if len(class_names) != num_classes:
                raise ConfigurationError(
                    f"class_names: expected {num_classes} names (one per class), got "
                    f"{len(class_names)}"
                )
        if feature_dtype not in layout.FEATURE_DTYPES:
            raise ConfigurationError(
                f"feature_dtype: expected one of {', '.join(layout.FEATURE_DTYPES)}, got "
                f"{feature_dtype!r}"
            )
        if kwargs.get("edge_feature_spec"):
            raise ConfigurationError(
                "edge_feature_spec: the homogeneous sample layout (tf_features.sample) carries no "
                "relationship properties; use TypedGraphSAGE with a typed step such as "
                f"{ONE_STEP!r} and edge_feature_spec"
            )
        super().__init__(
            ONE_LABEL,
            {ONE_STEP: list(fanouts)},
            {ONE_LABEL: feature_dim},
            num_classes,
            hidden_units=units,
            dropout=dropout,
            l2=l2,
            normalize_hidden=normalize_hidden,
            class_names=class_names,
            feature_dtype=feature_dtype,
            **kwargs,
        )
        self.fanouts = fanouts
        self.feature_dim = feature_dim
        self.normalize_features = bool(normalize_features)

    typed_inputs = False
    """The model reads the homogeneous sample layout (``features_h``, ``mask_h``), not typed slot
    tables: its bundles are node bundles of that layout."""

    def make_transforms(self) -> None:
        """Per layer a :class:`MeanAggregator` (self transform, neighbour transform, bias, its
        own dropout), then the classifier's dropout and the classifier: the layer order that fixes
        the initial weights and the dropout draws of a seeded run."""
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

    def self_transform(self, k: int, label: str) -> keras.layers.Dense:
        return self.sage_layers[k - 1].self_dense

    def neigh_transform(self, k: int, step: Any) -> keras.layers.Dense:
        return self.sage_layers[k - 1].neigh_dense

    def dropout(self, k: int) -> keras.layers.Dropout:
        return self.sage_layers[k - 1].drop

    def output_dropout(self) -> keras.layers.Dropout:
        return self.out_dropout

    def layer_out(self, k: int, label: str, own: Any, neigh: Any) -> Any:
        return self.sage_layers[k - 1].finish(keras.ops.concatenate([own, neigh], -1))

    def hop_layers(
        self, h: Sequence[Any], masks: Sequence[Any], start: int, training: bool | None
    ) -> Any:
        """Layers ``start..K`` of the typed layer loop over the hop tensors ``h[0..K-start+1]``
        (``[B, f1..fi, D]``) and ``masks`` (``masks[i]`` of hop ``i``, None: every slot filled),
        reshaped into the one label's slot tables; the seed's ``[B, D]``."""
        batch = keras.ops.shape(h[0])[0]
        reps, table_masks = {}, {}
        for i, x in enumerate(h):
            slots = int(np.prod(self.fanouts[:i], dtype=np.int64))
            reps[(i, ONE_LABEL)] = keras.ops.reshape(x, (batch, slots, x.shape[-1]))
            if i and masks[i] is not None:
                table_masks[(i, ONE_LABEL)] = keras.ops.reshape(masks[i], (batch, slots))
        return self.layers_from(reps, table_masks, batch, start, training)

    @property
    def hops(self) -> int:
        return len(self.fanouts)

    def input_names(self, masks: bool = True) -> list[str]:
        """``features_0..K`` then (``masks``) ``mask_1..K``."""
        return layout.model_input_names(self.hops, masks)

    def input_shapes(self, batch_size: int | None = None) -> dict[str, tuple[int | None, ...]]:
        """Shape per input of :meth:`input_names` (``batch_size`` None: any batch)."""
        return {n: tuple(s.shape) for n, s in self.input_signature(True, batch_size).items()}

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

    def call(self, inputs: Mapping[str, Any], training: bool | None = None) -> Any:
        return self.classifier(self.out_dropout(self.encode(inputs, training), training=training))

    def encode(self, inputs: Mapping[str, Any], training: bool | None = None) -> Any:
        """The seed's last hidden layer, ``[B, 2 * hidden_units[-1]]``: what the classifier reads
        (node embeddings; the same inputs as :meth:`call`)."""
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
        return self.hop_layers(h, masks, 1, training)

    def call_rows(self, inputs: Mapping[str, Any], training: bool | None = None) -> Any:
        """The same function as :meth:`call`, over a :func:`~memgraph_tf.client.pipeline.
        unique_rows` batch: ``rows`` (the distinct nodes' features ``[u, d]``), ``index_h`` (each
        slot's row, the shape of ``ids_h``) and ``mask_h``.

        ``tf.gather(rows, index_h)`` would be ``features_h``; instead the first layer reads each
        node's row once and works on valid slots only: feature normalisation runs once per
        distinct node, each masked mean is a sparse ``[slots, u] x [u, d]`` product over the
        valid neighbour slots, and padded slots (mask false) are left at zero, as every later
        layer masks them out. Dropout falls on the same tensors as in :meth:`call` (for the valid
        slots). ``rows`` may also be a ``tf.SparseTensor`` with its entries in row-major order
        (:func:`~memgraph_tf.client.pipeline.unique_rows` with ``sparse``): the first layer then
        costs per non-zero entry (:meth:`_sparse_first_layer`). Guarantees: the logits equal
        ``call(features)``'s up to float rounding (``training=False``).
        """
        index = [inputs[index_name(i)] for i in range(self.hops + 1)]
        masks = [None] + [inputs.get(layout.mask_name(i)) for i in range(1, self.hops + 1)]
        if isinstance(inputs[ROWS], tf.SparseTensor):
            h = self._sparse_first_layer(inputs[ROWS], index, masks, training)
            seed = self.hop_layers(h, masks, 2, training)
            return self.classifier(self.out_dropout(seed, training=training))
        rows = tf.cast(inputs[ROWS], tf.float32)
        if self.normalize_features:
            rows = rows / tf.maximum(tf.reduce_sum(rows, axis=-1, keepdims=True), 1e-12)
        first = self.sage_layers[0]
        h = []
        for i in range(self.hops):
            if masks[i] is None:  # every slot is a node: the whole hop at once
                h.append(
                    first.combine(
                        tf.gather(rows, index[i]),
                        rows_mean(rows, index[i + 1], masks[i + 1]),
                        training=training,
                    )
                )
                continue
            # only the valid slots: a padded slot's output is masked out by every later layer
            where = tf.where(masks[i])
            child_mask = None if masks[i + 1] is None else tf.gather_nd(masks[i + 1], where)
            out = first.combine(
                tf.gather(rows, tf.gather_nd(index[i], where)),
                rows_mean(rows, tf.gather_nd(index[i + 1], where), child_mask),
                training=training,
            )
            dense = tf.scatter_nd(
                where,
                out,
                tf.concat([tf.shape(index[i], out_type=tf.int64), tf.shape(out, tf.int64)[-1:]], 0),
            )
            dense.set_shape(index[i].shape.concatenate(out.shape[-1:]))
            h.append(dense)
        seed = self.hop_layers(h, masks, 2, training)
        return self.classifier(self.out_dropout(seed, training=training))

    def batch_logits(self, batch: Mapping[str, Any], training: bool | None = None) -> Any:
        """The logits for a batch of :func:`node_sampler`: :meth:`call_rows` on a
        :func:`~memgraph_tf.client.pipeline.unique_rows` batch (one holding ``rows``), else the
        model on the batch's features."""
        if ROWS in batch:
            names = [ROWS] + [index_name(i) for i in range(self.hops + 1)]
            names += [layout.mask_name(i) for i in range(1, self.hops + 1)]
            return self.call_rows({k: batch[k] for k in names if k in batch}, training=training)
        return self(model_inputs(batch, self.hops), training=training)

    @staticmethod
    def table_inputs(rows: Any, index: Sequence[Any], masks: Sequence[Any]) -> dict[str, Any]:
        """:meth:`call_table`'s inputs by name from the table ``rows``, each hop's slot rows
        ``index[h]`` and masks ``masks[h]`` (None: no mask for that hop)."""
        inputs = {ROWS: rows}
        for h, (slot_rows, mask) in enumerate(zip(index, masks)):
            inputs[index_name(h)] = slot_rows
            if mask is not None:
                inputs[layout.mask_name(h)] = mask
        return inputs

    def call_table(self, inputs: Mapping[str, Any]) -> Any:
        """:meth:`encode_table` then the classifier: the logits of :meth:`call` for inference."""
        return self.classifier(self.encode_table(inputs), training=False)

    def encode_table(self, inputs: Mapping[str, Any]) -> Any:
        """The same function as :meth:`encode` for inference (``training=False``), over a table of
        feature rows and the row of every slot: ``rows`` (``[r, d]``, a dense tensor or a
        ``tf.SparseTensor``: the decoded tables of compact or sparse sample blobs,
        :func:`memgraph_tf.ops.sample_decoding.decode_sample_rows`), ``index_h`` (each slot's row,
        the
        shape of ``ids_h``; a padded slot may point at any row, e.g. a zero row) and ``mask_h``.

        The first layer is linear up to its bias, so its two transforms are applied to each table
        row once, before any slot is read: ``rows @ [W_self | W_neigh]`` (a sparse product for a
        ``tf.SparseTensor``: the cost follows the non-zero values, and the ``[slots, d]`` features
        are never made), feature normalisation dividing each row by its sum first; each slot then
        reads its row's ``2 * units`` projections, and each masked mean is a sparse product over
        the valid slots (as in :meth:`call_rows`). Guarantees: the embeddings equal
        ``encode(features, training=False)``'s, where ``features_h = rows[index_h]``, up to float
        rounding (the mean and the product are taken in the other order)."""
        rows = inputs[ROWS]
        sparse = isinstance(rows, tf.SparseTensor)
        rows = tf.cast(rows, tf.float32)
        if self.normalize_features:
            if sparse:
                sums = tf.sparse.reduce_sum(rows, axis=1)
                scale = 1.0 / tf.maximum(tf.gather(sums, rows.indices[:, 0]), 1e-12)
                rows = rows.with_values(rows.values * scale)
            else:
                rows = rows / tf.maximum(tf.reduce_sum(rows, axis=-1, keepdims=True), 1e-12)
        first = self.sage_layers[0]
        kernel = tf.concat(
            [tf.convert_to_tensor(first.self_dense.kernel), first.neigh_dense.kernel], axis=1
        )
        projected = sparse_matmul(rows, kernel, csr=False) if sparse else tf.matmul(rows, kernel)
        own, theirs = tf.split(projected, [first.units, first.units], axis=1)
        index = [inputs[index_name(i)] for i in range(self.hops + 1)]
        masks = [None] + [inputs.get(layout.mask_name(i)) for i in range(1, self.hops + 1)]
        h = [
            first.finish(
                tf.concat(
                    [
                        tf.gather(own, index[i]),
                        rows_mean(theirs, index[i + 1], masks[i + 1], False),
                    ],
                    -1,
                )
            )
            for i in range(self.hops)
        ]
        return self.hop_layers(h, masks, 2, False)

    def _sparse_first_layer(
        self,
        rows: tf.SparseTensor,
        index: list[tf.Tensor],
        masks: list[tf.Tensor | None],
        training: bool | None,
    ) -> list[tf.Tensor]:
        """:meth:`call_rows`' first layer over ``rows`` as a ``tf.SparseTensor`` (non-zero
        entries in row-major order): every product costs per non-zero entry.

        Without dropout the layer is linear up to its bias, so each distinct row is multiplied by
        both kernels once and the slots gather and average the products. With dropout each valid
        slot's input row, and each masked mean of its neighbours' rows (their entries summed per
        column), are sparse rows whose non-zero entries are dropped out -- the entries dense
        dropout could change, as a zero stays zero -- before the products. Returns ``h_0..h_{K-1}``
        as :meth:`call_rows` computes them (padded slots zero)."""
        first = self.sage_layers[0]
        units = first.units
        width = self.feature_dim
        values = tf.cast(rows.values, tf.float32)
        row_of = rows.indices[:, 0]
        count = rows.dense_shape[0]
        if self.normalize_features:
            sums = tf.math.unsorted_segment_sum(values, row_of, count)
            values = values / tf.maximum(tf.gather(sums, row_of), 1e-12)
        kernels = [first.self_dense.kernel, first.neigh_dense.kernel]
        drop = bool(training) and first.dropout_rate > 0
        if drop:  # the rows in CSR form: row_of is sorted
            table = csr_table(rows.indices, values, count, width)
        else:
            both = sparse_matmul(
                tf.SparseTensor(rows.indices, values, rows.dense_shape), tf.concat(kernels, 1)
            )
            own, neigh = both[:, :units], both[:, units:]
        h = []
        for i in range(self.hops):
            fanout = int(index[i + 1].shape[-1])
            if masks[i] is None:  # every slot is a node: the whole hop
                where = None
                slots = tf.reshape(index[i], [-1])
                children = tf.reshape(index[i + 1], [-1, fanout])
                child_mask = (
                    None if masks[i + 1] is None else tf.reshape(masks[i + 1], [-1, fanout])
                )
            else:  # the valid slots only: a padded slot is masked out by every later layer
                where = tf.where(masks[i])
                slots = tf.gather_nd(index[i], where)
                children = tf.gather_nd(index[i + 1], where)
                child_mask = None if masks[i + 1] is None else tf.gather_nd(masks[i + 1], where)
            if drop:
                parts = []
                for part, kernel in zip(
                    (sparse_rows(*table, slots), sparse_rows_mean(*table, children, child_mask)),
                    kernels,
                ):
                    part = tf.SparseTensor(
                        part.indices, first.drop(part.values, training=True), part.dense_shape
                    )
                    parts.append(sparse_matmul(part, kernel))
                out = first.finish(tf.concat(parts, axis=-1))
            else:
                out = first.finish(
                    tf.concat([tf.gather(own, slots), rows_mean(neigh, children, child_mask)], -1)
                )
            shape = tf.concat([tf.shape(index[i], out_type=tf.int64), [2 * units]], 0)
            out = tf.reshape(out, shape) if where is None else tf.scatter_nd(where, out, shape)
            out.set_shape(index[i].shape.concatenate([2 * units]))
            h.append(out)
        return h

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


_EVAL_PREFETCH_MAX = 16
"""At most this many kept validation batches (sparse rows) are made ahead of their evaluation."""


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


def node_sampler(
    model: GraphSAGE,
    source: GraphSource,
    properties: Sequence[str],
    options: Mapping[str, Any] | None,
    *,
    feature_cache: FeatureCache | None,
    decoder: str,
) -> Sampler:
    """The :class:`~memgraph_tf.client.trainer.Sampler` of a :class:`GraphSAGE`: batches of
    :func:`~memgraph_tf.client.pipeline.sample_dataset` over seed ids -- with a
    ``feature_cache``, :func:`~memgraph_tf.client.pipeline.unique_rows` batches (sparse rows when
    the cache is :attr:`~memgraph_tf.client.pipeline.FeatureCache.sparse`), which
    :meth:`GraphSAGE.batch_logits` reads through :meth:`GraphSAGE.call_rows`; else the batches of
    features from the blobs. ``keep`` (with a cache) keeps the sampled ids -- the whole batches
    when sparse -- after the first pass, so later passes replay the same neighbourhoods without
    calling the source."""
    props = list(properties)

    def sample(ids: np.ndarray, plan: BatchPlan) -> tf.data.Dataset:
        rows = feature_cache is not None
        ds = sample_dataset(
            source,
            ids,
            model.fanouts,
            props,
            options=options,
            feature_cache=feature_cache,
            include_ids=False,
            decoder=decoder,
            gather_features=not rows,
            prefetch=None if rows else tf.data.AUTOTUNE,
            **plan.tail(),
        )
        if not rows:
            return ds
        sparse = feature_cache.sparse
        if plan.keep and not sparse:
            ds = ds.cache()
        ds = ds.map(
            unique_rows(feature_cache, model.hops, sparse=sparse),
            num_parallel_calls=tf.data.AUTOTUNE,
            deterministic=True,
        )
        if plan.keep and sparse:  # sparse rows are small: keep them too, not only the ids
            # ... and a whole pass may be made ahead of the first evaluation
            batches = plan.draws * -(-len(ids) // plan.batch_size)
            return ds.cache().prefetch(min(batches, _EVAL_PREFETCH_MAX))
        return ds.prefetch(tf.data.AUTOTUNE)

    return sample


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
    (``options["label_property"]`` must be set).

    All draws run through one pipeline and one traced model call
    (:func:`~memgraph_tf.client.trainer.predict_task`); with a ``feature_cache`` the model reads
    each batch's distinct nodes once (:meth:`GraphSAGE.call_rows`)."""
    sampler = node_sampler(
        model, source, properties, options, feature_cache=feature_cache, decoder=decoder
    )
    return predict_class_probabilities(
        model,
        sampler,
        node_ids,
        draws=draws,
        batch_size=batch_size,
        seed=seed,
        with_labels=with_labels,
    )


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
    return accuracy_figures(probs, labels)


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

    The run is :func:`~memgraph_tf.client.trainer.fit_task` with a
    :class:`~memgraph_tf.client.tasks.NodeClassification` task and :func:`node_sampler`: one
    training pipeline, whose sampling runs ahead of the steps in ``tf.data`` threads; one traced
    step; one validation pipeline and one traced evaluation. With a feature cache the validation
    neighbourhoods are sampled once (``eval_draws`` draws) and the same ones are scored at every
    evaluation, and the model reads each batch's distinct nodes once (:meth:`GraphSAGE.call_rows`;
    as sparse rows when the cache is mostly zeros,
    :attr:`~memgraph_tf.client.pipeline.FeatureCache.sparse`); without one they are sampled at
    every evaluation (from the same seeds when ``seed`` is given).

    Guarantees: returns the model (built, best weights, ``feature_dtype`` the blobs' feature dtype)
    and its history; labels must be integers in ``0..num_classes-1`` (``num_classes`` default:
    ``tf_features.describe``'s ``num_classes``, 1 + the largest label among the nodes with
    ``options["label"]``, at least 2).
    """
    schedule = check_schedule(steps, eval_every, patience, eval_draws, learning_rate)
    opts = training_options(options, label_property)
    train_ids = np.asarray(train_ids, dtype=np.int64)
    val_ids = None if val_ids is None else np.asarray(val_ids, dtype=np.int64)
    seed_run(seed)
    props = list(properties)
    if feature_cache is None and use_feature_cache:
        feature_cache = build_feature_cache(source, props, opts)
    if feature_cache is not None:
        feature_dim, feature_dtype = feature_cache.width, feature_cache.dtype.name
    else:
        feature_dim, feature_dtype = feature_layout(source, props, opts)
    if num_classes is None:
        num_classes = infer_num_classes(source, label_property, opts)
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
    history, best_step, best_acc = fit_task(
        model,
        NodeClassification(num_classes),
        node_sampler(model, source, props, opts, feature_cache=feature_cache, decoder=decoder),
        train_ids,
        val_ids,
        batch_size=batch_size,
        schedule=schedule,
        seed=seed,
        progress=progress,
    )
    return TrainResult(model, history, best_step, best_acc, feature_cache)
