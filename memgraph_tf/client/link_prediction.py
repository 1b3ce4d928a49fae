"""Link prediction in Keras 3: a typed GraphSAGE encoder and a pair scorer over the
sections of a ``tf_features.sample_pairs`` blob, its training and evaluation through the database,
and the ranking metrics.

**Model.** :class:`LinkPredictor` encodes the source of each row with a
:class:`~memgraph_tf.client.typed_graphsage.TypedGraphSAGE` seeded at the source label and the
target with one seeded at the target label (the same encoder, weights shared, when both labels and
specs are equal), then scores the pair:

* ``scorer="dot"``: ``logit = scale * <z_s, z_t> + bias`` with a learned ``scale`` (initial 5)
  and ``bias`` (initial -2.5). The bias is needed: with ``normalize_hidden`` the embeddings are
  non-negative unit vectors (ReLU, then L2), so every dot product lies in ``[0, 1]``;
* ``scorer="mlp"``: dense ReLU layers (``mlp_units``) over ``[z_s * z_t, |z_s - z_t|]``, then one
  logit.

Its inputs are the pair blob's sections by name (:func:`memgraph_tf.layout.pair_sample_sections`):
``src.features_h{h}_{label}`` / ``src.mask_h{h}_{label}`` for the source's tables and ``dst.*``
for the target's; the output is one logit per row ``[B]``. The call is a pure function of those
tensors, so it exports into a SavedModel like the node models.

**Training** (:func:`train_link_predictor`): per step one ``tf_features.sample_pairs`` call
(``source.sample_pairs_b64``) for a batch of training pairs with ``options.negatives`` keyed
negatives per pair drawn in the database and ``options.exclude_splits`` (default ``["val",
"test"]``) keeping held-out relationships out of every neighbourhood; the procedure removes each
row's own relationships from both neighbourhoods. Binary cross-entropy on the rows'
``pair_labels``. Features come from a per-label :class:`~memgraph_tf.client.pipeline.FeatureCache`
(``tf_features.pack`` once per label; a feature-spec label's raw columns: a
:class:`~memgraph_tf.client.pipeline.RawFeatureCache`, read once) joined to the blob's ``ids_*``
sections, as :func:`~memgraph_tf.client.graphsage.train_graphsage` does, or from the blobs
themselves (``use_feature_cache=False``).

**Metrics** (numpy, no dependency; from :mod:`memgraph_tf.client.metrics`): :func:`roc_auc`,
:func:`average_precision`, :func:`hits_at_k`, :func:`mean_reciprocal_rank`.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import keras
import numpy as np
import tensorflow as tf

from memgraph_tf import layout
from memgraph_tf.client import feature_encoding
from memgraph_tf.client.checks import positive_int
from memgraph_tf.client.metrics import (
    average_precision,
    hits_at_k,
    mean_reciprocal_rank,
    ranks,
    roc_auc,
)
from memgraph_tf.client.node_embeddings import NodeEmbedding, embedding_keys
from memgraph_tf.client.pipeline import (
    FeatureCache,
    RawFeatureCache,
    batching,
    call_batches,
    distinct_rows,
    raw_cacheable,
    unpacker,
)
from memgraph_tf.client.structural import default_structural_spec
from memgraph_tf.client.tasks import LinkPrediction
from memgraph_tf.client.trainer import (
    RANKING_STREAM,
    BatchPlan,
    SampledModel,
    Sampler,
    check_schedule,
    fit_task,
    keep_seeded_batches,
    predict_task,
    prediction_fn,
    seed_run,
    stream_seed,
    training_options,
)
from memgraph_tf.client.typed_graphsage import (
    TypedGraphSAGE,
    appended_name,
    typed_feature_widths,
    typed_properties,
    typed_spec,
)
from memgraph_tf.errors import ConfigurationError
from memgraph_tf.typed_sampling import (
    EdgeStep,
    TypedSamplingSpec,
    typed_features_name,
    typed_mask_name,
)

__all__ = [
    "PAIR_TIME_COLUMN",
    "SCORERS",
    "LinkPredictor",
    "LinkTrainResult",
    "average_precision",
    "evaluate_links",
    "hits_at_k",
    "link_feature_caches",
    "link_inputs",
    "mean_reciprocal_rank",
    "pair_sample_dataset",
    "pair_sampler",
    "predict_links",
    "ranks",
    "roc_auc",
    "role_edge_spec",
    "train_link_predictor",
]

logger = logging.getLogger(__name__)

SCORERS = ("dot", "mlp")
"""The pair scorers of :class:`LinkPredictor`."""
DEFAULT_EXCLUDE_SPLITS = ("val", "test")
"""The held-out splits training and evaluation leave out of every neighbourhood by default."""


# ------------------------------------------------------------------------------------------------
# the model
# ------------------------------------------------------------------------------------------------


ROWS_PREFIX = "rows."
"""A distinct-rows pair batch's key prefix of a label's feature rows (``rows.{label}``)."""


def _role_specs(
    source_label: str, target_label: str, num_neighbors: Mapping[str, Any]
) -> tuple[dict[str, list[int]], dict[str, list[int]]]:
    """``num_neighbors`` as one pattern map per role (``sample_pairs``' two forms)."""
    if set(num_neighbors) == {"source", "target"}:
        return dict(num_neighbors["source"]), dict(num_neighbors["target"])
    return dict(num_neighbors), dict(num_neighbors)


def role_edge_spec(
    edge_feature_spec: Mapping[Any, Any] | None, spec: TypedSamplingSpec
) -> dict[str, Any]:
    """The entries of ``edge_feature_spec`` (edge pattern -> spec of the step's relationship
    properties, as ``options.edge_feature_spec`` of ``tf_features.sample_pairs`` takes it for
    both halves) whose step is one of ``spec``'s, keyed ``str(step)``: what one endpoint's encoder
    and its ``sample_typed`` call take (that procedure rejects a pattern outside its spec). A
    pattern that does not parse is kept (the encoder's check names it)."""
    out: dict[str, Any] = {}
    for pattern, raw in (edge_feature_spec or {}).items():
        try:
            step = pattern if isinstance(pattern, EdgeStep) else EdgeStep.parse(pattern)
        except ValueError:
            out[str(pattern)] = raw
            continue
        if step in spec.steps:
            out[str(step)] = raw
    return out


def _check_edge_patterns(
    edge_feature_spec: Mapping[Any, Any] | None, specs: Sequence[TypedSamplingSpec]
) -> None:
    """:class:`ConfigurationError` naming a pattern of ``edge_feature_spec`` that is a step of
    neither endpoint's spec."""
    steps = list(dict.fromkeys(s for spec in specs for s in spec.steps))
    for pattern in edge_feature_spec or {}:
        feature_encoding.edge_step(pattern, steps, " of either endpoint")


def _embedding_config(config: Any) -> dict[str, dict[str, int]]:
    """``node_embeddings`` checked: label -> ``{"size", "dimension"}`` (integers >= 1)."""
    if config is None:
        return {}
    if not isinstance(config, Mapping):
        raise ConfigurationError(
            f"node_embeddings: expected a map label -> {{'size', 'dimension'}}, got {config!r}"
        )
    out = {}
    for label, entry in config.items():
        if not isinstance(entry, Mapping) or set(entry) != {"size", "dimension"}:
            raise ConfigurationError(
                f"node_embeddings[{label!r}]: expected {{'size': n, 'dimension': d}}, got {entry!r}"
            )
        NodeEmbedding(entry["size"], entry["dimension"])  # checks both
        out[str(label)] = {"size": int(entry["size"]), "dimension": int(entry["dimension"])}
    return out


@keras.saving.register_keras_serializable(package="memgraph_tf")
class LinkPredictor(SampledModel, keras.Model):
    """A link predictor over pair blobs (module docstring).

    ``source_label`` / ``target_label`` (default the source label): the pairs' labels;
    ``num_neighbors``: one pattern map for both endpoints, or ``{"source": map, "target": map}``
    (as ``tf_features.sample_pairs`` takes it); ``feature_dims``: width per label;
    ``hidden_units``, ``dropout``, ``l2``, ``normalize_hidden``, ``feature_dtype``: the encoders'
    (:class:`TypedGraphSAGE`); ``scorer``: ``dot`` or ``mlp`` (``mlp_units`` its hidden widths).
    ``node_embeddings``: label -> ``{"size", "dimension"}``, a learned vector per node key of that
    label (:class:`~memgraph_tf.client.node_embeddings.NodeEmbedding`, keys set by
    :meth:`set_node_keys`; a node not among them gets the shared out-of-vocabulary vector),
    appended to the label's features (or its only input): the model then reads that label's
    ``ids_h{h}_{label}`` sections too, and always per slot (no distinct-rows batches).
    ``feature_spec`` (label -> :class:`~memgraph_tf.feature_spec.LabelSpec`), ``embedding_dim``,
    ``required_widths``: each encoder's
    :class:`~memgraph_tf.client.feature_encoding.LabelEncoder` of its labels (raw sections; a
    label with both a spec and a node embedding reads its encoded properties, then its learned
    vector).
    ``edge_feature_spec``: edge pattern -> the ``LabelSpec`` of the step's relationship
    properties (each a step of one endpoint's spec, or both): each encoder gets its steps'
    entries (:func:`role_edge_spec`) and reads their ``edge_*_h{h}_s{i}`` sections.

    Guarantees: ``model(inputs)`` returns logits ``[B]`` from a dict holding every
    :meth:`input_names` ``features`` input (masks optional: absent = all filled; extra keys such as
    ``src.ids_*`` or ``pair_labels`` are ignored); the config rebuilds the same architecture.
    ``properties`` and ``schema`` are set by :func:`train_link_predictor` (not config).
    """

    output_is_logits = True
    """The model returns logits (``sigmoid`` gives the link probability)."""

    def __init__(
        self,
        source_label: str,
        num_neighbors: Mapping[str, Any],
        feature_dims: Mapping[str, int],
        *,
        target_label: str | None = None,
        hidden_units: int | Sequence[int] = 128,
        dropout: float = 0.3,
        l2: float = 0.0,
        normalize_hidden: bool = True,
        scorer: str = "dot",
        mlp_units: Sequence[int] = (128,),
        feature_dtype: str = "float32",
        node_embeddings: Mapping[str, Mapping[str, int]] | None = None,
        feature_spec: Mapping[str, Any] | None = None,
        embedding_dim: int = 8,
        required_widths: Mapping[str, Mapping[str, int]] | None = None,
        edge_feature_spec: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.embedding_config = _embedding_config(node_embeddings)
        specs = feature_encoding.as_label_specs(feature_spec)
        if scorer not in SCORERS:
            raise ConfigurationError(
                f"scorer: expected one of {', '.join(SCORERS)}, got {scorer!r}"
            )
        self.source_label = source_label
        self.target_label = target_label or source_label
        self.num_neighbors_config = {
            k: (dict(v) if isinstance(v, Mapping) else list(v)) for k, v in num_neighbors.items()
        }
        src_nn, dst_nn = _role_specs(self.source_label, self.target_label, num_neighbors)
        self.properties: dict[str, list[str]] | None = None
        self.schema: dict[str, Any] | None = None

        def encoder(label: str, nn: Mapping[str, Any], name: str) -> TypedGraphSAGE:
            try:
                spec = TypedSamplingSpec.from_num_neighbors(label, nn)
            except ValueError as exc:
                raise ConfigurationError(str(exc)) from None
            dims = {
                lb: int(feature_dims.get(lb, 0))
                + self.embedding_config.get(lb, {}).get("dimension", 0)
                for lb in spec.labels()
            }
            own = {lb: s for lb, s in specs.items() if lb in spec.labels()}
            learned = {  # learned vectors after a spec label's encoded properties
                lb: c["dimension"] for lb, c in self.embedding_config.items() if lb in own
            }
            return TypedGraphSAGE(
                label,
                nn,
                dims,
                2,  # the encoder's classifier is unused: encode() is the representation
                hidden_units=hidden_units,
                dropout=dropout,
                l2=l2,
                normalize_hidden=normalize_hidden,
                feature_dtype=feature_dtype,
                feature_spec=own,
                embedding_dim=embedding_dim,
                required_widths={lb: w for lb, w in (required_widths or {}).items() if lb in own},
                appended_dims=learned,
                edge_feature_spec=role_edge_spec(edge_feature_spec, spec),
                name=name,
            )

        self.source_encoder = encoder(self.source_label, src_nn, "source_encoder")
        if self.target_label == self.source_label and src_nn == dst_nn:
            self.target_encoder = self.source_encoder
        else:
            self.target_encoder = encoder(self.target_label, dst_nn, "target_encoder")
        _check_edge_patterns(
            edge_feature_spec, [self.source_encoder.spec, self.target_encoder.spec]
        )
        labels = set(self.source_encoder.spec.labels()) | set(self.target_encoder.spec.labels())
        outside = sorted(set(specs) - labels)
        if outside:
            raise ConfigurationError(
                f"feature_spec: label {outside[0]!r} has no slots in the sampled neighbourhoods "
                f"(labels: {', '.join(sorted(labels))})"
            )
        extra = sorted(set(feature_dims) - labels)
        if extra:
            raise ConfigurationError(
                f"feature_dims: {', '.join(map(repr, extra))}: no such label in the sampled "
                f"neighbourhoods (labels: {', '.join(sorted(labels))})"
            )
        encoded = {lb: e.output_width for lb, e in self.label_encoders.items()}
        self.feature_dims = {
            lb: encoded[lb] if lb in specs else int(feature_dims.get(lb, 0))
            for lb in sorted(labels)
        }
        self.embedding_dim = embedding_dim
        unknown = sorted(set(self.embedding_config) - labels)
        if unknown:
            raise ConfigurationError(
                f"node_embeddings: {', '.join(map(repr, unknown))}: no such label in the sampled "
                f"neighbourhoods (labels: {', '.join(sorted(labels))})"
            )
        self.node_embeddings = {
            lb: NodeEmbedding(c["size"], c["dimension"], name=f"node_embedding_{i}")
            for i, (lb, c) in enumerate(sorted(self.embedding_config.items()))
        }
        self.hidden_units = list(self.source_encoder.hidden_units)
        self.dropout_rate = self.source_encoder.dropout_rate
        self.l2 = self.source_encoder.l2
        self.normalize_hidden = self.source_encoder.normalize_hidden
        self.feature_dtype = feature_dtype
        self.scorer = scorer
        self.mlp_units = [int(u) for u in mlp_units]
        if scorer == "mlp" and any(u < 1 for u in self.mlp_units):
            raise ConfigurationError(f"mlp_units: expected integers >= 1, got {list(mlp_units)!r}")
        self.mlp = [
            keras.layers.Dense(u, activation="relu", name=f"mlp_{i}")
            for i, u in enumerate(self.mlp_units if scorer == "mlp" else [])
        ]
        self.mlp_out = keras.layers.Dense(1, name="mlp_out") if scorer == "mlp" else None

    @property
    def label_encoders(self) -> dict[str, Any]:
        """label -> :class:`~memgraph_tf.client.feature_encoding.LabelEncoder` over both
        encoders (one per label and role; the source's where both have it)."""
        return {**self.target_encoder.label_encoders, **self.source_encoder.label_encoders}

    @property
    def edge_encoders(self) -> dict[str, Any]:
        """edge pattern -> :class:`~memgraph_tf.client.feature_encoding.LabelEncoder` of the
        step's relationship properties over both encoders (the source's where both have it)."""
        return {**self.target_encoder.edge_encoders, **self.source_encoder.edge_encoders}

    @property
    def source_spec(self) -> TypedSamplingSpec:
        return self.source_encoder.spec

    @property
    def target_spec(self) -> TypedSamplingSpec:
        return self.target_encoder.spec

    def get_config(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "trainable": self.trainable,
            "source_label": self.source_label,
            "target_label": self.target_label,
            "num_neighbors": self.num_neighbors_config,
            "feature_dims": dict(self.feature_dims),
            "hidden_units": list(self.hidden_units),
            "dropout": self.dropout_rate,
            "l2": self.l2,
            "normalize_hidden": self.normalize_hidden,
            "scorer": self.scorer,
            "mlp_units": list(self.mlp_units),
            "feature_dtype": self.feature_dtype,
            "node_embeddings": {lb: dict(c) for lb, c in self.embedding_config.items()} or None,
            **feature_encoding.encoders_config(
                self.label_encoders, self.embedding_dim, self.edge_encoders
            ),
        }

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> LinkPredictor:
        return cls(**config)

    def input_names(self, masks: bool = True) -> list[str]:
        """The pair blob's section names the model reads: the source encoder's inputs prefixed
        ``src.``, then the target encoder's prefixed ``dst.`` (with :attr:`node_embeddings`: a
        label's ``ids`` sections in place of features it lacks, beside those it has; with
        feature specs: a label's raw sections in place of its features)."""
        return list(self.input_shapes(masks=masks))

    def input_shapes(
        self, batch_size: int | None = None, masks: bool = True
    ) -> dict[str, tuple[int | None, ...]]:
        """Shape per input (``batch_size`` None: any batch), in :meth:`input_names` order."""
        out: dict[str, tuple[int | None, ...]] = {}
        for prefix, enc in (
            (layout.PAIR_SOURCE_PREFIX, self.source_encoder),
            (layout.PAIR_TARGET_PREFIX, self.target_encoder),
        ):
            shapes = enc.input_shapes(batch_size)
            for h, table in enumerate(enc.layout.tables):
                for label, slots in table.items():
                    raw = feature_encoding.raw_section_names(enc.label_encoders, h, label)
                    if raw:  # a feature spec's raw sections (ragged ones: flat values, splits)
                        out.update({prefix + n: shapes.get(n, (None,)) for n in raw})
                    elif self.feature_dims[label]:
                        name = typed_features_name(h, label)
                        out[prefix + name] = (batch_size, slots, self.feature_dims[label])
                    if label in self.node_embeddings:
                        out[prefix + layout.typed_ids_name(h, label)] = (batch_size, slots)
            edge_names = [n for n in enc.table_input_names(masks=False) if n.startswith("edge_")]
            out.update({prefix + n: shapes.get(n, (None,)) for n in edge_names})
            if masks:
                out.update({prefix + k: v for k, v in shapes.items() if k.startswith("mask_")})
        return out

    def set_node_keys(self, label: str, keys: Any) -> None:
        """The node keys of ``label`` that get their own learned vector (exactly the configured
        ``size`` distinct integers); every other key gets the shared out-of-vocabulary vector."""
        if label not in self.node_embeddings:
            raise ConfigurationError(
                f"label: {label!r} has no node embedding (configured: "
                f"{', '.join(sorted(self.node_embeddings)) or 'none'})"
            )
        self.node_embeddings[label].set_keys(keys)

    def _with_embeddings(self, own: dict[str, Any], enc: TypedGraphSAGE, prefix: str) -> None:
        """Puts each embedded label's learned vectors (looked up by its ``ids`` sections) into its
        ``features`` inputs of ``own``, after the features it has (a feature-spec label: into its
        :func:`~memgraph_tf.client.typed_graphsage.appended_name` inputs, which the encoder
        appends after the encoded properties)."""
        for h, table in enumerate(enc.layout.tables):
            for label in table:
                layer = self.node_embeddings.get(label)
                if layer is None:
                    continue
                ids = own.get(layout.typed_ids_name(h, label))
                if ids is None:
                    raise ConfigurationError(
                        f"inputs: missing {prefix}{layout.typed_ids_name(h, label)} (the keys of "
                        f"the learned node embeddings of {label!r})"
                    )
                name = typed_features_name(h, label)
                vectors = layer(ids)
                if label in enc.label_encoders:
                    own[appended_name(h, label)] = vectors
                    continue
                if self.feature_dims[label]:
                    base = keras.ops.cast(own[name], "float32")
                    vectors = keras.ops.concatenate([base, vectors], axis=-1)
                own[name] = vectors

    def build(self, input_shape: Any = None) -> None:
        """Creates every weight from the config alone."""
        self.source_encoder.ensure_built()
        self.target_encoder.ensure_built()
        for layer in self.node_embeddings.values():
            if not layer.built:
                layer.build()
        width = 2 * self.hidden_units[-1]
        if self.scorer == "dot":
            self.scale = self.add_weight(
                name="scale", shape=(), initializer=keras.initializers.Constant(5.0)
            )
            self.bias = self.add_weight(
                name="bias", shape=(), initializer=keras.initializers.Constant(-2.5)
            )
        else:
            size = 2 * width
            for dense in self.mlp:
                dense.build((None, size))
                size = dense.units
            self.mlp_out.build((None, size))
        self.built = True

    def trainable_link_variables(self) -> list[Any]:
        """The trainable weights the link logit depends on (the encoders' unused classifiers
        left out)."""
        unused = {
            id(v)
            for enc in (self.source_encoder, self.target_encoder)
            for v in enc.classifier.trainable_variables
        }
        return [v for v in self.trainable_variables if id(v) not in unused]

    def embed(self, inputs: Mapping[str, Any], role: str, training: bool | None = None) -> Any:
        """The ``role`` (``src`` or ``dst``) endpoint's representation ``[B, 2 * units]`` from the
        inputs of that role (prefixed names)."""
        prefix, enc = (
            (layout.PAIR_SOURCE_PREFIX, self.source_encoder)
            if role == "src"
            else (layout.PAIR_TARGET_PREFIX, self.target_encoder)
        )
        own = {k[len(prefix) :]: v for k, v in inputs.items() if k.startswith(prefix)}
        if self.node_embeddings:
            self._with_embeddings(own, enc, prefix)
        missing = [prefix + n for n in enc.input_names(masks=False) if n not in own]
        if missing:
            raise ConfigurationError(f"inputs: missing {', '.join(missing)}")
        return enc.encode(own, training=training)

    def score(self, z_source: Any, z_target: Any, training: bool | None = None) -> Any:
        """Logits ``[B]`` of two representations ``[B, D]``."""
        if self.scorer == "dot":
            return self.scale * keras.ops.sum(z_source * z_target, axis=-1) + self.bias
        x = keras.ops.concatenate([z_source * z_target, keras.ops.abs(z_source - z_target)], -1)
        for dense in self.mlp:
            x = dense(x)
        return keras.ops.squeeze(self.mlp_out(x), axis=-1)

    def embed_rows(self, inputs: Mapping[str, Any], role: str, training: bool | None = None) -> Any:
        """:meth:`embed` over a distinct-rows batch (:func:`pair_sample_dataset` with ``rows``):
        ``rows.{label}`` (shared by both roles), the role's ``index_h{h}_{label}`` and masks
        (prefixed names), through :meth:`TypedGraphSAGE.encode_rows` (its guarantees)."""
        if self.node_embeddings:
            raise ConfigurationError(
                "inputs: distinct-rows batches carry no node keys; a model with node_embeddings "
                "reads per-slot batches (pair_sample_dataset without rows)"
            )
        prefix, enc = (
            (layout.PAIR_SOURCE_PREFIX, self.source_encoder)
            if role == "src"
            else (layout.PAIR_TARGET_PREFIX, self.target_encoder)
        )
        rows = {k[len(ROWS_PREFIX) :]: v for k, v in inputs.items() if k.startswith(ROWS_PREFIX)}
        index, masks = {}, {}
        for h, table in enumerate(enc.layout.tables):
            for label in table:
                name = prefix + layout.typed_index_name(h, label)
                if name in inputs:
                    index[(h, label)] = inputs[name]
                name = prefix + typed_mask_name(h, label)
                if h and name in inputs:
                    masks[(h, label)] = inputs[name]
        return enc.encode_rows(rows, index, masks, training=training)

    def batch_logits(self, batch: Mapping[str, Any], training: bool | None = None) -> Any:
        """The logits for a batch of :func:`pair_sampler` (:func:`link_inputs`)."""
        return self(link_inputs(self, batch), training=training)

    def call(self, inputs: Mapping[str, Any], training: bool | None = None) -> Any:
        """Logits ``[B]`` (class docstring); a batch carrying ``rows.*``
        (:func:`pair_sample_dataset` with ``rows``) goes through :meth:`embed_rows`, the same
        function per distinct row."""
        if not self.built:
            self.build()
        if any(k.startswith(ROWS_PREFIX) for k in inputs):
            z_s = self.embed_rows(inputs, "src", training=training)
            z_t = self.embed_rows(inputs, "dst", training=training)
            return self.score(z_s, z_t, training=training)
        z_s = self.embed(inputs, "src", training=training)
        z_t = self.embed(inputs, "dst", training=training)
        return self.score(z_s, z_t, training=training)


# ------------------------------------------------------------------------------------------------
# sampling pairs through the database (tf_features.sample_pairs)
# ------------------------------------------------------------------------------------------------


class LinkTrainResult(NamedTuple):
    """What :func:`train_link_predictor` returns. ``history``: lists keyed ``step``, ``loss``,
    ``train_accuracy`` (rows whose logit has the sign of their label), ``wait_s``, ``step_s`` per
    step; ``eval_step``, ``val_auc``, ``val_ap``, ``eval_s``, ``elapsed_s`` per evaluation.
    ``feature_caches``: label -> :class:`~memgraph_tf.client.pipeline.FeatureCache`, or
    :class:`~memgraph_tf.client.pipeline.RawFeatureCache` for a feature-spec label (None when the
    features travelled in the blobs), for ``train_link_predictor(feature_caches=...)``: they belong
    to the training session that filled them (the values read then: a refresh or retraining that
    rewrites the FastRP property, or any write of a cached property, makes them stale)."""

    model: LinkPredictor
    history: dict[str, list[float]]
    best_step: int
    best_val_auc: float | None
    feature_caches: dict[str, Any] | None


def _pairs(pairs: Any, name: str) -> np.ndarray:
    """``pairs`` as int64 ``[n, 2]`` (source, target keys) or ``[n, 3]`` (and each pair's time:
    :data:`PAIR_TIME_COLUMN`)."""
    arr = np.asarray(pairs)
    if (
        arr.ndim != 2
        or arr.shape[1] not in (2, 3)
        or arr.shape[0] == 0
        or arr.dtype.kind not in "iu"
    ):
        raise ConfigurationError(
            f"{name}: expected a non-empty [n, 2] array of integer (source, target) keys, or "
            f"[n, 3] with each pair's integer time, got shape {list(arr.shape)} of {arr.dtype}"
        )
    return arr.astype(np.int64)


PAIR_TIME_COLUMN = 2
"""The column of a ``[n, 3]`` pairs array that holds each pair's time: the pair is sampled as of
it (``tf_features.sample_pairs``' ``options.pair_times``: steps with a time -- ``{time: ts}``,
e.g. after ``split_edges`` by time -- walk only the relationships not after it, and negatives are
drawn among the targets active by then), in place of ``options["pair_time"]`` (the property of
the pair's relationship, which the given negatives of validation pairs lack)."""


def _pair_options(
    options: Mapping[str, Any] | None,
    source_label: str,
    target_label: str,
    exclude_splits: Sequence[str] | None,
) -> dict[str, Any]:
    opts = dict(options or {})
    for key, label in (("source_label", source_label), ("target_label", target_label)):
        given = opts.get(key)
        if given is not None and given != label:
            raise ConfigurationError(f"options.{key}: expected {label!r} (or none), got {given!r}")
        opts[key] = label
    if "negatives" in opts:
        raise ConfigurationError(
            f"options.negatives: expected none (pass negatives= instead), got {opts['negatives']!r}"
        )
    if exclude_splits is not None and "exclude_splits" not in opts:
        opts["exclude_splits"] = list(exclude_splits)
    return opts


def link_feature_caches(
    source: Any,
    properties: Mapping[str, Sequence[str]],
    options: Mapping[str, Any] | None = None,
    model: LinkPredictor | None = None,
) -> dict[str, Any]:
    """A :class:`~memgraph_tf.client.pipeline.FeatureCache` per label of ``properties`` (every node
    of the label, keyed as the pair blobs' ``ids_*`` sections are: ``options["id_property"]``
    values, else internal ids), packed once through ``tf_features.pack``; with ``model``, also a
    :class:`~memgraph_tf.client.pipeline.RawFeatureCache` per feature-spec label of its encoders
    that :func:`~memgraph_tf.client.pipeline.raw_cacheable` accepts (the raw columns the pair
    blobs would carry, read once; a label with a ``multi_categorical`` property keeps the
    sampled path)."""
    opts = options or {}
    id_property = opts.get("id_property")
    pack = {k: opts[k] for k in ("id_property", "dtype", "allow_non_finite") if k in opts}
    caches: dict[str, Any] = {}
    for label, names in properties.items():
        if not names:
            continue
        ids = source.node_ids(label=label, id_property=id_property)
        caches[label] = FeatureCache.from_source(source, ids, list(names), {**pack, "label": label})
    if model is not None:
        rel_type = model.source_spec.steps[0].rel_type
        for label, enc in model.label_encoders.items():
            if raw_cacheable(enc.spec):
                caches[label] = RawFeatureCache.from_source(
                    source, label, enc.spec, rel_type, pack, widths=enc.group_widths
                )
    return caches


def pair_sample_dataset(
    source: Any,
    model: LinkPredictor,
    pairs: Any,
    properties: Mapping[str, Sequence[str]],
    *,
    options: Mapping[str, Any] | None = None,
    negatives: int = 0,
    batch_size: int = 128,
    shuffle: bool = False,
    seed: int | None = None,
    repeat: bool = False,
    draws: int = 1,
    feature_caches: Mapping[str, Any] | None = None,
    keep_pair_edges: bool = False,
    decoder: str = "auto",
    num_parallel_calls: int | None = None,
    rows: bool = False,
) -> Any:
    """Pair batches: per batch of ``pairs`` (``[n, 2]`` source and target keys, or ``[n, 3]``
    with each pair's time, :data:`PAIR_TIME_COLUMN`) one ``tf_features.sample_pairs`` call
    (``source.sample_pairs_b64``) with ``negatives`` keyed
    negatives per pair, decoded by the unpack op into a dict of the pair sections
    (:func:`memgraph_tf.layout.pair_sample_sections`) -- the model's inputs by name -- with
    ``pair_labels``. With ``feature_caches`` (label -> FeatureCache) the call asks for no
    properties and each ``*.features_h{h}_{label}`` section is gathered from the cache by the
    blob's ``*.ids_h{h}_{label}`` keys (zeros where padded): the same tensors, far smaller blobs;
    a feature-spec label with a :class:`~memgraph_tf.client.pipeline.RawFeatureCache` is left out
    of the call's ``options.feature_spec`` and its raw sections are gathered the same way.

    ``keep_pair_edges`` (an ablation, not for real training): after the pair call, each endpoint's
    neighbourhood is replaced by ``tf_features.sample_typed``'s for the same node and seed, which
    does not remove the pair's own relationships (held-out splits stay excluded). ``seed`` as in
    :func:`~memgraph_tf.client.typed_graphsage.typed_sample_dataset` (per batch
    ``options.seed``); ``draws`` passes over the batches. Guarantees: every section has its static
    shape but the batch dimension; rows are the batch's pairs, then their negatives pair-major.

    ``rows`` (with ``feature_caches``): instead of the cached labels' ``features`` sections, per
    such label ``rows.{label}`` -- the feature rows of the batch's distinct ids of that label over
    both roles and every hop (a ``tf.SparseTensor`` in row-major order where the cache is
    ``sparse``) -- and per table ``{role}.index_h{h}_{label}`` (int32, the shape of its ``ids``:
    each slot's row), so that ``tf.gather(rows.{label}, index)`` is the features section; the
    model reads them through :meth:`LinkPredictor.embed_rows`. Without a cache for every label
    with features, ``rows`` is ignored (the per-slot sections)."""
    pairs = _pairs(pairs, "pairs")
    batches = batching(batch_size, draws, seed, shuffle, repeat, num_parallel_calls)
    opts = dict(options or {})
    if isinstance(negatives, bool) or not isinstance(negatives, (int, np.integer)) or negatives < 0:
        raise ConfigurationError(f"negatives: expected an integer >= 0, got {negatives!r}")
    if negatives:
        opts["negatives"] = int(negatives)
    dtype = model.feature_dtype
    opts["dtype"] = dtype
    caches = dict(feature_caches or {})
    opts = feature_encoding.with_spec_option(opts, model.label_encoders)
    # a spec label with a raw cache: no raw columns in the blobs, gathered from the cache instead
    raw_cached = {lb for lb in model.label_encoders if isinstance(caches.get(lb), RawFeatureCache)}
    encoders = {lb: e for lb, e in model.label_encoders.items() if lb not in raw_cached}
    if raw_cached:
        opts.pop("feature_spec", None)
        opts = feature_encoding.with_spec_option(opts, encoders)
    edges = feature_encoding.edge_raw_widths(model.edge_encoders)
    if edges:  # the relationship properties of these steps, beside their slots (both halves)
        opts["edge_feature_spec"] = feature_encoding.edge_spec_option(model.edge_encoders)
    props = {lb: list(n) for lb, n in properties.items() if lb not in caches and lb not in encoders}
    blob_widths = {lb: model.feature_dims[lb] for lb in props if model.feature_dims.get(lb)}
    nn = model.num_neighbors_config
    sections = layout.pair_sample_sections(
        model.source_spec,
        model.target_spec,
        blob_widths,
        dtype,
        batch=None,
        raw=feature_encoding.raw_widths(encoders) or None,
        edges=edges or None,
    )
    names = [s.name for s in sections]
    dtypes = [s.dtype for s in sections]
    shapes = [list(s.shape) for s in sections]
    unpack = unpacker(decoder)
    typed_names = {
        prefix: [s.name for s in sections if s.name.startswith(prefix)]
        for prefix in (layout.PAIR_SOURCE_PREFIX, layout.PAIR_TARGET_PREFIX)
    }
    # distinct rows need every label with features cached (else the per-slot path)
    distinct = bool(
        rows and caches and not model.node_embeddings and not model.label_encoders and not edges
    ) and all(caches.get(lb) is not None for lb, width in model.feature_dims.items() if width)

    def call(batch: np.ndarray, call_opts: dict[str, Any]) -> str:
        if batch.shape[1] > PAIR_TIME_COLUMN:  # each pair's time, given with it
            call_opts.pop("pair_time", None)
            call_opts["pair_times"] = batch[:, PAIR_TIME_COLUMN].tolist()
        text = source.sample_pairs_b64(
            batch[:, 0].tolist(), batch[:, 1].tolist(), nn, props, call_opts
        )
        if not keep_pair_edges:
            return text
        return _keep_pair_edges(source, model, text, names, props, call_opts, typed_names)

    def decode(text: Any) -> dict[str, Any]:
        out = dict(zip(names, unpack(text, names, dtypes, shapes=shapes, encoding="base64")))
        if distinct:
            return _distinct_rows(out, sections, caches, model)
        for sec in sections:
            if sec.role != "ids":
                continue
            prefix = sec.name[: sec.name.index(".") + 1]
            label = _table_label(sec.name[len(prefix) :])
            cache = caches.get(label)
            if label in raw_cached:
                for group, value in cache.gather(out[sec.name]).items():
                    out[prefix + layout.typed_raw_name(group, sec.hop, label)] = value
            elif cache is not None and model.feature_dims.get(label):
                hop = sec.hop
                out[prefix + typed_features_name(hop, label)] = cache.gather(out[sec.name])
        return out

    return call_batches(pairs, call, decode, options=opts, name="sample_pairs", **batches)


def _distinct_rows(
    out: dict[str, Any], sections: Sequence[Any], caches: Mapping[str, Any], model: LinkPredictor
) -> dict[str, Any]:
    """:func:`pair_sample_dataset`'s ``rows`` batch from the decoded sections ``out``."""
    per_label: dict[str, list[tuple[str, int]]] = {}
    for sec in sections:
        if sec.role != "ids":
            continue
        prefix = sec.name[: sec.name.index(".") + 1]
        label = _table_label(sec.name[len(prefix) :])
        if caches.get(label) is not None and model.feature_dims.get(label):
            per_label.setdefault(label, []).append((sec.name, sec.hop))
    for label, ids_names in per_label.items():
        cache = caches[label]
        sparse = getattr(cache, "sparse", False)
        rows, index = distinct_rows(cache, [out[name] for name, _ in ids_names], sparse)
        out[ROWS_PREFIX + label] = rows
        for (name, hop), slot_rows in zip(ids_names, index):
            prefix = name[: name.index(".") + 1]
            out[prefix + layout.typed_index_name(hop, label)] = slot_rows
    return out


def _table_label(ids_section: str) -> str:
    """``ids_h{h}_{label}`` -> label."""
    return ids_section.split("_", 2)[2]


def _keep_pair_edges(
    source: Any,
    model: LinkPredictor,
    text: str,
    names: Sequence[str],
    props: Mapping[str, Sequence[str]],
    options: Mapping[str, Any],
    typed_names: Mapping[str, Sequence[str]],
) -> str:
    """The pair blob ``text`` with both endpoints' sections replaced by ``sample_typed``'s for the
    rows' nodes (same seed and splits; the pair's own relationships not removed)."""
    from memgraph_tf import blob

    sections = blob.unpack(blob.b64decode(text))
    typed_opts = {
        k: v for k, v in options.items() if k in layout.SAMPLE_TYPED_OPTIONS and k != "label"
    }
    out: dict[str, Any] = {}
    for prefix, spec, label in (
        (layout.PAIR_SOURCE_PREFIX, model.source_spec, model.source_label),
        (layout.PAIR_TARGET_PREFIX, model.target_spec, model.target_label),
    ):
        seeds = sections[prefix + layout.typed_ids_name(0, label)][:, 0].tolist()
        own = {lb: list(n) for lb, n in props.items() if lb in spec.labels()}
        role_opts = {**typed_opts, "label": label}
        if "edge_feature_spec" in role_opts:  # (sample_typed takes this role's steps only)
            role_opts["edge_feature_spec"] = role_edge_spec(role_opts["edge_feature_spec"], spec)
        typed = blob.unpack(source.sample_typed(seeds, spec.num_neighbors(), own, role_opts))
        for name in typed_names[prefix]:
            out[name] = typed[name[len(prefix) :]]
    out[layout.PAIR_LABELS] = sections[layout.PAIR_LABELS]
    return blob.pack_b64({n: out[n] for n in names})


def link_inputs(model: LinkPredictor, batch: Mapping[str, Any]) -> dict[str, Any]:
    """The model's inputs from a pair batch: its features and masks, or (a ``rows`` batch) its
    rows, indices and masks."""
    if any(k.startswith(ROWS_PREFIX) for k in batch):
        masks = set(model.input_names())
        return {
            k: v
            for k, v in batch.items()
            if k.startswith(ROWS_PREFIX) or ".index_h" in k or (k in masks and ".mask_" in k)
        }
    return {k: batch[k] for k in model.input_names() if k in batch}


def pair_sampler(
    model: LinkPredictor,
    source: Any,
    properties: Mapping[str, Sequence[str]],
    options: Mapping[str, Any],
    *,
    feature_caches: Mapping[str, Any] | None,
    decoder: str,
    rows: bool,
    negatives: int = 0,
    keep_pair_edges: bool = False,
    keep_pair_edges_eval: bool = False,
) -> Sampler:
    """The :class:`~memgraph_tf.client.trainer.Sampler` of a :class:`LinkPredictor`:
    :func:`pair_sample_dataset` batches of pairs. Training batches carry ``negatives`` drawn
    negatives per pair and are sampled by parallel workers (``keep_pair_edges``: the ablation, on
    them); the others carry the pairs alone (``keep_pair_edges_eval``: the ablation, on them);
    ``keep`` caches the batches of a seeded pipeline (the same neighbourhoods every pass)."""

    def sample(pairs: np.ndarray, plan: BatchPlan) -> tf.data.Dataset:
        return pair_sample_dataset(
            source,
            model,
            pairs,
            properties,
            options=options,
            negatives=negatives if plan.training else 0,
            feature_caches=feature_caches,
            keep_pair_edges=keep_pair_edges if plan.training else keep_pair_edges_eval,
            decoder=decoder,
            num_parallel_calls=tf.data.AUTOTUNE if plan.training else None,
            rows=rows,
            **plan.tail(),
        )

    return keep_seeded_batches(sample)


def predict_links(
    model: LinkPredictor,
    source: Any,
    pairs: Any,
    *,
    properties: Mapping[str, Sequence[str]] | None = None,
    options: Mapping[str, Any] | None = None,
    exclude_splits: Sequence[str] | None = None,
    draws: int = 1,
    batch_size: int = 256,
    seed: int | None = None,
    feature_caches: Mapping[str, Any] | None = None,
    keep_pair_edges: bool = False,
    decoder: str = "auto",
    use_rows: bool = True,
) -> np.ndarray:
    """Link probabilities ``[n]`` for ``pairs`` (``[n, 2]`` keys) in order, averaged over
    ``draws`` sampled neighbourhoods (each pair's own relationships removed by the procedure;
    ``exclude_splits``: held-out splits left out, default none; ``keep_pair_edges``: the
    ablation of :func:`pair_sample_dataset`). ``properties`` default: the model's. ``use_rows``
    (with ``feature_caches``): the first layer per distinct row (:meth:`LinkPredictor.embed_rows`,
    the same probabilities up to float rounding); false: per slot. The prediction loop is
    :func:`~memgraph_tf.client.trainer.predict_task`'s."""
    pairs = _pairs(pairs, "pairs")
    props = dict(properties or model.properties or {})
    opts = _pair_options(options, model.source_label, model.target_label, exclude_splits)
    sampler = pair_sampler(
        model,
        source,
        props,
        opts,
        feature_caches=feature_caches,
        decoder=decoder,
        rows=use_rows,
        keep_pair_edges_eval=keep_pair_edges,
    )
    return predict_task(
        model, LinkPrediction(), sampler, pairs, draws=draws, batch_size=batch_size, seed=seed
    )


def evaluate_links(
    model: LinkPredictor,
    source: Any,
    pairs: Any,
    labels: Any,
    *,
    properties: Mapping[str, Sequence[str]] | None = None,
    options: Mapping[str, Any] | None = None,
    exclude_splits: Sequence[str] | None = DEFAULT_EXCLUDE_SPLITS,
    draws: int = 1,
    ranking_negatives: int = 0,
    hits: Sequence[int] = (1, 10, 50),
    batch_size: int = 256,
    seed: int | None = None,
    feature_caches: Mapping[str, Any] | None = None,
    keep_pair_edges: bool = False,
    decoder: str = "auto",
    use_rows: bool = True,
) -> dict[str, float]:
    """The link metrics of ``model`` on ``pairs`` (``[n, 2]`` keys) with 0/1 ``labels``:
    ``{"auc", "ap", "num_pairs"}`` from :func:`predict_links` (held-out splits
    ``exclude_splits``, default val and test, left out of every neighbourhood: the GAE protocol).

    With ``ranking_negatives = k``, each positive pair is also ranked against ``k`` negatives the
    database draws for it (``options.negatives``: uniform over the target label, never a known
    neighbour of the source, keyed by ``seed``), one draw, pair relationships removed: adds
    ``"mrr"`` and ``"hits@K"`` per ``K`` of ``hits`` (:func:`ranks`)."""
    pairs = _pairs(pairs, "pairs")
    y = np.asarray(labels)
    if y.shape != (len(pairs),):
        raise ConfigurationError(
            f"labels: expected one 0/1 label per pair ({len(pairs)}), got shape {list(y.shape)}"
        )
    common = dict(
        properties=properties,
        options=options,
        exclude_splits=exclude_splits,
        batch_size=batch_size,
        seed=seed,
        feature_caches=feature_caches,
        decoder=decoder,
        use_rows=use_rows,
    )
    probs = predict_links(
        model, source, pairs, draws=draws, keep_pair_edges=keep_pair_edges, **common
    )
    out = {
        "auc": roc_auc(y, probs),
        "ap": average_precision(y, probs),
        "num_pairs": float(len(pairs)),
    }
    if ranking_negatives:
        positives = pairs[y.astype(bool)]
        pos, neg = _ranking_scores(model, source, positives, ranking_negatives, **common)
        out["mrr"] = mean_reciprocal_rank(pos, neg)
        for k in hits:
            out[f"hits@{k}"] = hits_at_k(pos, neg, k)
    return out


def _ranking_scores(
    model: LinkPredictor,
    source: Any,
    positives: np.ndarray,
    k: int,
    *,
    properties: Mapping[str, Sequence[str]] | None,
    options: Mapping[str, Any] | None,
    exclude_splits: Sequence[str] | None,
    batch_size: int,
    seed: int | None,
    feature_caches: Mapping[str, Any] | None,
    decoder: str,
    use_rows: bool = True,
) -> tuple[np.ndarray, np.ndarray]:
    """Each positive's probability ``[n]`` and its ``k`` database-drawn negatives' ``[n, k]``."""
    props = dict(properties or model.properties or {})
    opts = _pair_options(options, model.source_label, model.target_label, exclude_splits)
    per_batch = max(1, batch_size // (1 + k))
    ds = pair_sample_dataset(
        source,
        model,
        positives,
        props,
        options=opts,
        negatives=k,
        batch_size=per_batch,
        seed=stream_seed(seed, RANKING_STREAM),
        feature_caches=feature_caches,
        decoder=decoder,
        rows=use_rows,
    )
    infer = prediction_fn(model, LinkPrediction())
    pos_parts, neg_parts = [], []
    for batch in ds:
        probs = infer(batch).numpy().astype(np.float64)
        b = len(probs) // (1 + k)
        pos_parts.append(probs[:b])
        neg_parts.append(probs[b:].reshape(b, k))
    return np.concatenate(pos_parts), np.concatenate(neg_parts)


# ------------------------------------------------------------------------------------------------
# training
# ------------------------------------------------------------------------------------------------


def _labelled_pairs(pairs: Any, labels: Any) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Validation ``pairs`` and their 0/1 ``labels`` checked (both None: no validation)."""
    if (pairs is None) != (labels is None):
        raise ConfigurationError("val_pairs, val_labels: expected both or neither")
    if pairs is None:
        return None, None
    pairs = _pairs(pairs, "val_pairs")
    labels = np.asarray(labels)
    if labels.shape != (len(pairs),):
        raise ConfigurationError(
            f"val_labels: expected one 0/1 label per pair ({len(pairs)}), got shape "
            f"{list(labels.shape)}"
        )
    return pairs, labels


def _link_model(
    source: Any,
    source_label: str,
    target_label: str,
    num_neighbors: Mapping[str, Any],
    properties: Mapping[str, Sequence[str]] | Sequence[str],
    options: Mapping[str, Any],
    seed: int | None,
    feature_spec: Mapping[str, Any] | None = None,
    edge_feature_spec: Mapping[str, Any] | None = None,
    *,
    structural_default: bool = False,
    exclude_splits: Sequence[str] | None = None,
    node_keys: Mapping[str, np.ndarray] | None = None,
    node_embedding_dim: int = 0,
    **settings: Any,
) -> LinkPredictor:
    """:func:`train_link_predictor`'s model, built (after :func:`seed_run` of ``seed``), with its
    ``properties`` (label -> names; a plain list applies to every label of both endpoints) and
    ``schema`` set; widths and dtype from ``tf_features.schema``; ``feature_spec`` labels split
    off ``properties`` (:func:`~memgraph_tf.client.feature_encoding.split_properties`). With
    ``structural_default``, first :func:`default_structural_spec` of both endpoints' labels on
    the training graph (``exclude_splits`` left out; it writes); ``node_keys`` (label -> keys,
    :func:`_embedding_vocabulary`'s): a ``node_embedding_dim`` vector per key of those labels,
    the keys set."""
    if structural_default:
        feature_spec = default_structural_spec(
            source,
            [source_label, target_label],
            properties,
            feature_spec,
            options,
            seed=seed,
            exclude_splits=exclude_splits,
        )
    node_keys = node_keys or {}
    src_nn, dst_nn = _role_specs(source_label, target_label, num_neighbors)
    specs = [typed_spec(source_label, src_nn), typed_spec(target_label, dst_nn)]
    labels = list(dict.fromkeys(specs[0].labels() + specs[1].labels()))
    if isinstance(properties, Mapping):
        props = typed_properties(specs[0], properties)
    else:
        props = {
            label: list(typed_properties(specs[0], properties)[source_label]) for label in labels
        }
    encoded, props = feature_encoding.split_properties(
        feature_encoding.as_label_specs(feature_spec),
        props,
        explicit=isinstance(properties, Mapping),
    )
    seed_run(seed)
    required = feature_encoding.required_names(encoded)
    widths, dtype, schema = _link_widths(source, specs, {**props, **required}, options)
    model = LinkPredictor(
        source_label,
        num_neighbors,
        {lb: w for lb, w in widths.items() if lb not in encoded},
        target_label=target_label,
        feature_dtype=dtype,
        feature_spec=encoded,
        required_widths=feature_encoding.required_widths_of(schema, encoded),
        edge_feature_spec=edge_feature_spec,
        node_embeddings={
            lb: {"size": len(k), "dimension": node_embedding_dim} for lb, k in node_keys.items()
        }
        or None,
        **settings,
    )
    model.trained_on(props, schema)
    for label, keys in node_keys.items():
        model.set_node_keys(label, keys)
    return model


def _embedding_vocabulary(
    train_pairs: np.ndarray, source_label: str, target_label: str, dimension: Any
) -> dict[str, np.ndarray]:
    """Label -> the sorted distinct keys of the training pairs' endpoints of that label (none
    when ``dimension`` is 0); a third column of pair times is no key."""
    if isinstance(dimension, bool) or not isinstance(dimension, (int, np.integer)) or dimension < 0:
        raise ConfigurationError(
            f"node_embedding_dim: expected an integer >= 0 (0: none), got {dimension!r}"
        )
    if not dimension:
        return {}
    if source_label == target_label:
        return {source_label: embedding_keys(train_pairs[:, :2], "train_pairs")}
    return {
        source_label: embedding_keys(train_pairs[:, 0], "train_pairs[:, 0]"),
        target_label: embedding_keys(train_pairs[:, 1], "train_pairs[:, 1]"),
    }


def _training_pair_options(
    options: Mapping[str, Any] | None,
    source_label: str,
    target_label: str,
    exclude_splits: Sequence[str] | None,
) -> dict[str, Any]:
    """:func:`train_link_predictor`'s call options: :func:`training_options` without a label
    property (the pairs are the supervision), checked and completed by :func:`_pair_options`."""
    opts = training_options(options, "label")
    opts.pop("label_property")
    return _pair_options(opts, source_label, target_label, exclude_splits)


def _training_caches(
    source: Any,
    model: LinkPredictor,
    options: Mapping[str, Any],
    caches: Mapping[str, Any] | None,
    use_feature_cache: bool,
) -> Mapping[str, Any] | None:
    """The feature caches of a training: the given ``caches``, else (with
    ``use_feature_cache``) :func:`link_feature_caches` of the model's properties read now;
    checked against the model (:func:`_check_cache_widths`)."""
    if caches is None and use_feature_cache:
        caches = link_feature_caches(source, model.properties, options, model)
    _check_cache_widths(caches, model)
    return caches


def _fit_links(
    model: LinkPredictor,
    source: Any,
    options: Mapping[str, Any],
    feature_caches: Mapping[str, Any] | None,
    pairs: tuple[np.ndarray, np.ndarray | None, np.ndarray | None],
    *,
    decoder: str,
    rows: bool,
    negatives: int,
    keep_pair_edges: bool,
    **fit: Any,
) -> LinkTrainResult:
    """:func:`train_link_predictor`'s fit of the built ``model``: :func:`fit_task` of
    :class:`~memgraph_tf.client.tasks.LinkPrediction` (``fit``: its ``schedule``, ``batch_size``,
    ``seed``, ``progress``) on ``pairs`` -- the training pairs, the validation pairs and their
    labels -- sampled by :func:`pair_sampler` with ``feature_caches``; the result holds a copy of
    the caches (None: none)."""
    sampler = pair_sampler(
        model,
        source,
        model.properties,
        options,
        feature_caches=feature_caches,
        decoder=decoder,
        rows=rows,
        negatives=negatives,
        keep_pair_edges=keep_pair_edges,
    )
    history, best_step, best_auc = fit_task(model, LinkPrediction(), sampler, *pairs, **fit)
    caches = dict(feature_caches) if feature_caches else None
    return LinkTrainResult(model, history, best_step, best_auc, caches)


def _check_cache_widths(caches: Mapping[str, Any] | None, model: LinkPredictor) -> None:
    """:class:`ConfigurationError` naming the first label whose cache does not fit the model: a
    feature-spec label's must be a :class:`~memgraph_tf.client.pipeline.RawFeatureCache` read
    with the label's spec (its columns per group the encoder's), another label's a
    :class:`~memgraph_tf.client.pipeline.FeatureCache` of the schema's width; None is no cache."""
    widths = model.feature_dims
    for label, cache in (caches or {}).items():
        enc = model.label_encoders.get(label)
        where = f"feature_caches[{label!r}]"
        if cache is None:
            raise ConfigurationError(
                f"{where}: expected a cache, got None (leave the label out of feature_caches: "
                "its features are then sampled)"
            )
        if enc is not None:
            want = {g: w for g, w in enc.group_widths.items() if w}
            if not isinstance(cache, RawFeatureCache) or cache.widths != want:
                got = cache.widths if isinstance(cache, RawFeatureCache) else type(cache).__name__
                raise ConfigurationError(
                    f"{where}: expected the raw columns {want} of the label's feature spec (a "
                    f"RawFeatureCache), got {got}"
                )
            differs = _spec_difference(cache.spec, enc.spec)
            if differs:
                raise ConfigurationError(
                    f"{where}: expected a cache read with the label's feature spec, got one "
                    f"read with another ({differs})"
                )
            continue
        if isinstance(cache, RawFeatureCache):
            raise ConfigurationError(
                f"{where}: expected a FeatureCache (the label has no feature spec), got a "
                "RawFeatureCache"
            )
        if cache.width != widths.get(label, 0):
            raise ConfigurationError(
                f"{where}: expected width {widths.get(label, 0)} (the schema's), got {cache.width}"
            )


def _spec_difference(cached: Any, spec: Any) -> str:
    """What tells the feature spec a raw cache was read with (None: unknown, taken as ``spec``)
    from ``spec``: the first property that differs, or ""."""
    if cached is None:
        return ""
    if cached.label != spec.label:
        return f"label {cached.label!r}, not {spec.label!r}"
    mine = [p.to_dict() for p in cached.properties]
    want = [p.to_dict() for p in spec.properties]
    for a, b in itertools.zip_longest(mine, want):
        if a != b:
            name = (a or b)["name"]
            return f"property {name!r}: {a} where the model's spec has {b}"
    return ""


def _link_widths(
    source: Any,
    specs: Sequence[TypedSamplingSpec],
    properties: Mapping[str, Sequence[str]],
    options: Mapping[str, Any],
) -> tuple[dict[str, int], str, dict[str, Any]]:
    """The feature width per label, the dtype and the schema part of both endpoints' specs
    (:func:`~memgraph_tf.client.typed_graphsage.typed_feature_widths` of each, merged)."""
    widths: dict[str, int] = {}
    schema: dict[str, Any] = {"labels": [], "relationships": []}
    dtype = "float32"
    for spec in specs:
        own = {lb: names for lb, names in properties.items() if lb in spec.labels()}
        w, dtype, part = typed_feature_widths(source, spec, own, options)
        widths.update(w)
        for key in ("labels", "relationships"):
            schema[key] += [e for e in part[key] if e not in schema[key]]
    return widths, dtype, schema


def train_link_predictor(
    source: Any,
    source_label: str,
    num_neighbors: Mapping[str, Any],
    properties: Mapping[str, Sequence[str]] | Sequence[str],
    train_pairs: Any,
    val_pairs: Any = None,
    val_labels: Any = None,
    *,
    target_label: str | None = None,
    options: Mapping[str, Any] | None = None,
    negatives: int = 1,
    exclude_splits: Sequence[str] | None = DEFAULT_EXCLUDE_SPLITS,
    scorer: str = "dot",
    hidden_units: int | Sequence[int] = 128,
    dropout: float = 0.3,
    l2: float = 0.0,
    normalize_hidden: bool = True,
    mlp_units: Sequence[int] = (128,),
    learning_rate: float = 0.01,
    batch_size: int = 128,
    steps: int = 300,
    eval_every: int = 25,
    eval_draws: int = 1,
    patience: int = 100,
    use_feature_cache: bool = True,
    feature_caches: Mapping[str, Any] | None = None,
    keep_pair_edges: bool = False,
    seed: int | None = None,
    decoder: str = "auto",
    progress: bool = False,
    use_rows: bool = True,
    node_embedding_dim: int = 0,
    feature_spec: Mapping[str, Any] | None = None,
    embedding_dim: int = 8,
    structural_default: bool = True,
    edge_feature_spec: Mapping[str, Any] | None = None,
) -> LinkTrainResult:
    """Trains a :class:`LinkPredictor` on ``train_pairs`` (``[n, 2]`` source and target keys:
    ``options["id_property"]`` values, else internal ids -- the positive relationships of the
    training split) with pairs sampled by the source's ``tf_features.sample_pairs``:
    ``batch_size`` positive pairs per step, each with ``negatives`` keyed negatives drawn in the
    database (rows: ``batch_size * (1 + negatives)``), ``exclude_splits`` (default val and test)
    left out of every neighbourhood, each row's own relationships removed by the procedure
    (unless ``keep_pair_edges``, the ablation of :func:`pair_sample_dataset`). Each pair is
    sampled as of its time (training on the past, testing on the future), if it has one:
    ``options["pair_time"]`` (the property of the training positives' relationships) or a third
    column of ``train_pairs`` / ``val_pairs`` (:data:`PAIR_TIME_COLUMN`).

    The sibling of :func:`~memgraph_tf.client.typed_graphsage.train_typed_graphsage`, with its
    conventions: ``num_neighbors`` (pattern -> fanouts, or ``{"source", "target"}`` maps),
    ``properties`` (label -> names, or one list for every label), ``options`` (no ``seed``:
    pass ``seed=``), ``steps``, ``eval_every``, ``eval_draws``, ``patience`` (in steps),
    ``seed``, ``decoder``, ``progress``, ``feature_spec`` and ``embedding_dim`` (a spec of
    ``required`` properties alone is those ``properties``), ``structural_default`` (with
    ``node_embedding_dim`` 0, for either endpoint's label without features, FastRP on the
    training graph: ``exclude_splits`` left out), widths from ``tf_features.schema``; Adam with
    binary cross-entropy (plus ``l2``), early stopping on the validation AUC of ``val_pairs`` /
    ``val_labels`` (0/1; the same validation neighbourhoods at every evaluation when ``seed`` is
    given), best weights restored.
    ``edge_feature_spec``: relationship properties for the steps of either endpoint
    (:class:`LinkPredictor`'s). ``node_embedding_dim`` > 0: a learned vector of that width per
    endpoint of a training pair (:class:`LinkPredictor` ``node_embeddings`` of the pairs' labels).

    ``use_feature_cache``: the features come from :func:`link_feature_caches`, read once, rather
    than inside every blob (the same inputs, so the same training), and with ``use_rows``
    (default) each batch carries each label's distinct rows (:meth:`TypedGraphSAGE.encode_rows`);
    the batches are per slot without it, or when a label has a ``feature_spec`` or node
    embeddings, or with an ``edge_feature_spec``. ``feature_caches`` (label -> cache, as a
    :class:`LinkTrainResult` holds them): the caches to use instead of reading new ones; one that
    does not fit the model (a spec label's not read with its spec, a width not the schema's,
    None) is refused naming the label.

    Guarantees: returns a :class:`LinkTrainResult` whose model is built, holds the best weights
    and carries ``properties`` and ``schema`` (both endpoints' part)."""
    schedule = check_schedule(steps, eval_every, patience, eval_draws, learning_rate)
    negatives = positive_int("negatives", negatives)
    target_label = target_label or source_label
    opts = _training_pair_options(options, source_label, target_label, exclude_splits)
    train_pairs = _pairs(train_pairs, "train_pairs")
    val_pairs, val_labels = _labelled_pairs(val_pairs, val_labels)
    keys = _embedding_vocabulary(train_pairs, source_label, target_label, node_embedding_dim)
    model = _link_model(  # (after the checks: with structural_default, it writes)
        source,
        source_label,
        target_label,
        num_neighbors,
        properties,
        opts,
        seed,
        feature_spec,
        edge_feature_spec,
        structural_default=structural_default and not node_embedding_dim,
        exclude_splits=exclude_splits,
        node_keys=keys,
        node_embedding_dim=node_embedding_dim,
        hidden_units=hidden_units,
        dropout=dropout,
        l2=l2,
        normalize_hidden=normalize_hidden,
        scorer=scorer,
        mlp_units=mlp_units,
        embedding_dim=embedding_dim,
    )
    feature_caches = _training_caches(source, model, opts, feature_caches, use_feature_cache)
    return _fit_links(
        model,
        source,
        opts,
        feature_caches,
        (train_pairs, val_pairs, val_labels),
        decoder=decoder,
        rows=use_rows,
        negatives=negatives,
        keep_pair_edges=keep_pair_edges,
        batch_size=batch_size,
        schedule=schedule,
        seed=seed,
        progress=progress,
    )
