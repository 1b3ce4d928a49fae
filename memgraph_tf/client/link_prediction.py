"""Link prediction (issue 25) in Keras 3: a typed GraphSAGE encoder and a pair scorer over the
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
(``tf_features.pack`` once per label) joined to the blob's ``ids_*`` sections, as
:func:`~memgraph_tf.client.graphsage.train_graphsage` does, or from the blobs themselves
(``use_feature_cache=False``).

**Metrics** (numpy, no dependency): :func:`roc_auc`, :func:`average_precision`,
:func:`hits_at_k`, :func:`mean_reciprocal_rank`.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import keras
import numpy as np

from memgraph_tf import layout
from memgraph_tf.client.errors import ConfigurationError
from memgraph_tf.client.typed_graphsage import TypedGraphSAGE
from memgraph_tf.typed_sampling import TypedSamplingSpec, features_name, mask_name

__all__ = [
    "SCORERS",
    "LinkPredictor",
    "LinkTrainResult",
    "average_precision",
    "evaluate_links",
    "hits_at_k",
    "link_feature_caches",
    "mean_reciprocal_rank",
    "pair_sample_dataset",
    "predict_links",
    "ranks",
    "roc_auc",
    "train_link_predictor",
]

logger = logging.getLogger(__name__)

SCORERS = ("dot", "mlp")
"""The pair scorers of :class:`LinkPredictor`."""
DEFAULT_EXCLUDE_SPLITS = ("val", "test")
"""The held-out splits training and evaluation leave out of every neighbourhood by default."""


# ------------------------------------------------------------------------------------------------
# metrics
# ------------------------------------------------------------------------------------------------


def _binary(labels: Any, scores: Any) -> tuple[np.ndarray, np.ndarray]:
    y = np.asarray(labels)
    s = np.asarray(scores, dtype=np.float64)
    if y.ndim != 1 or s.shape != y.shape:
        raise ValueError(
            f"labels, scores: expected two 1-D arrays of one length, got shapes {list(y.shape)} "
            f"and {list(s.shape)}"
        )
    if not np.isin(y, (0, 1)).all():
        raise ValueError(f"labels: expected 0 or 1, got {sorted(set(y.tolist()) - {0, 1})[:5]}")
    if not np.isfinite(s).all():
        raise ValueError(f"scores: expected finite numbers, got {s[~np.isfinite(s)][:5].tolist()}")
    y = y.astype(bool)
    if y.all() or not y.any():
        raise ValueError(
            f"labels: expected at least one positive and one negative, got {int(y.sum())} "
            f"positive(s) of {len(y)}"
        )
    return y, s


def _average_ranks(s: np.ndarray) -> np.ndarray:
    """1-based ranks of ``s`` in ascending order, tied values sharing their mean rank."""
    order = np.argsort(s, kind="stable")
    sorted_s = s[order]
    starts = np.flatnonzero(np.r_[True, sorted_s[1:] != sorted_s[:-1]])
    ends = np.r_[starts[1:], len(s)]
    ranks = np.empty(len(s))
    ranks[order] = np.repeat((starts + ends + 1) / 2.0, ends - starts)
    return ranks


def roc_auc(labels: Any, scores: Any) -> float:
    """Area under the ROC curve: the probability that a random positive scores above a random
    negative, a tie counting one half (the Mann-Whitney U statistic over ``P * N``).

    ``labels``: 0/1 ``[n]``; ``scores``: finite ``[n]`` (any monotone scale: logits or
    probabilities give the same value). ValueError without a positive or a negative."""
    y, s = _binary(labels, scores)
    ranks = _average_ranks(s)
    pos, neg = int(y.sum()), int((~y).sum())
    return float((ranks[y].sum() - pos * (pos + 1) / 2.0) / (pos * neg))


def average_precision(labels: Any, scores: Any) -> float:
    """Average precision: ``sum over thresholds t (R(t) - R(t_prev)) * P(t)``, the thresholds
    being the distinct scores in descending order, ``P(t)`` / ``R(t)`` the precision / recall of
    predicting positive every row scoring ``>= t`` (tied rows enter together, so the value does
    not depend on their order; the step-wise definition, without interpolation).

    ValueError without a positive or a negative."""
    y, s = _binary(labels, scores)
    order = np.argsort(-s, kind="stable")
    s, y = s[order], y[order]
    last = np.r_[s[1:] != s[:-1], True]  # the last row of each group of tied scores
    tp = np.cumsum(y)[last]
    predicted = np.flatnonzero(last) + 1
    precision = tp / predicted
    recall = tp / tp[-1]
    return float(np.sum(np.diff(np.r_[0.0, recall]) * precision))


def ranks(positive_scores: Any, negative_scores: Any) -> np.ndarray:
    """The rank of each positive among its negatives, ``[n]`` floats >= 1.

    ``negative_scores``: ``[n, m]`` (row ``i``: the candidates positive ``i`` is ranked against),
    or ``[m]`` (one set shared by every positive). The rank is the mean of the optimistic rank
    (``1 + #negatives scoring above``) and the pessimistic one (``1 + #negatives scoring above or
    equal``): a tie costs half a place."""
    pos = np.asarray(positive_scores, dtype=np.float64)
    neg = np.asarray(negative_scores, dtype=np.float64)
    if pos.ndim != 1:
        raise ValueError(f"positive_scores: expected a 1-D array, got shape {list(pos.shape)}")
    if neg.ndim == 1:
        neg = np.broadcast_to(neg, (len(pos), len(neg)))
    if neg.ndim != 2 or neg.shape[0] != len(pos) or neg.shape[1] == 0:
        raise ValueError(
            f"negative_scores: expected [m] or [{len(pos)}, m] with m >= 1, got shape "
            f"{list(np.shape(negative_scores))}"
        )
    if not (np.isfinite(pos).all() and np.isfinite(neg).all()):
        raise ValueError("scores: expected finite numbers, got a NaN or an infinity")
    above = (neg > pos[:, None]).sum(axis=1)
    ties = (neg == pos[:, None]).sum(axis=1)
    return 1.0 + above + ties / 2.0


def hits_at_k(positive_scores: Any, negative_scores: Any, k: int) -> float:
    """Hits@K: the fraction of positives whose :func:`ranks` rank is at most ``k``."""
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"k: expected an integer >= 1, got {k!r}")
    return float(np.mean(ranks(positive_scores, negative_scores) <= k))


def mean_reciprocal_rank(positive_scores: Any, negative_scores: Any) -> float:
    """MRR: the mean over positives of ``1 / rank`` (:func:`ranks`)."""
    return float(np.mean(1.0 / ranks(positive_scores, negative_scores)))


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


@keras.saving.register_keras_serializable(package="memgraph_tf")
class LinkPredictor(keras.Model):
    """A link predictor over pair blobs (module docstring).

    ``source_label`` / ``target_label`` (default the source label): the pairs' labels;
    ``num_neighbors``: one pattern map for both endpoints, or ``{"source": map, "target": map}``
    (as ``tf_features.sample_pairs`` takes it); ``feature_dims``: width per label;
    ``hidden_units``, ``dropout``, ``l2``, ``normalize_hidden``, ``feature_dtype``: the encoders'
    (:class:`TypedGraphSAGE`); ``scorer``: ``dot`` or ``mlp`` (``mlp_units`` its hidden widths).

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
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
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
            dims = {lb: int(feature_dims.get(lb, 0)) for lb in spec.labels()}
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
                name=name,
            )

        self.source_encoder = encoder(self.source_label, src_nn, "source_encoder")
        if self.target_label == self.source_label and src_nn == dst_nn:
            self.target_encoder = self.source_encoder
        else:
            self.target_encoder = encoder(self.target_label, dst_nn, "target_encoder")
        labels = set(self.source_encoder.spec.labels()) | set(self.target_encoder.spec.labels())
        extra = sorted(set(feature_dims) - labels)
        if extra:
            raise ConfigurationError(
                f"feature_dims: {', '.join(map(repr, extra))}: no such label in the sampled "
                f"neighbourhoods (labels: {', '.join(sorted(labels))})"
            )
        self.feature_dims = {lb: int(feature_dims.get(lb, 0)) for lb in sorted(labels)}
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
        }

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> LinkPredictor:
        return cls(**config)

    def input_names(self, masks: bool = True) -> list[str]:
        """The pair blob's section names the model reads: the source encoder's inputs prefixed
        ``src.``, then the target encoder's prefixed ``dst.``."""
        return [layout.PAIR_SOURCE_PREFIX + n for n in self.source_encoder.input_names(masks)] + [
            layout.PAIR_TARGET_PREFIX + n for n in self.target_encoder.input_names(masks)
        ]

    def input_shapes(self, batch_size: int | None = None) -> dict[str, tuple[int | None, ...]]:
        """Shape per input (``batch_size`` None: any batch)."""
        out: dict[str, tuple[int | None, ...]] = {}
        for prefix, enc in (
            (layout.PAIR_SOURCE_PREFIX, self.source_encoder),
            (layout.PAIR_TARGET_PREFIX, self.target_encoder),
        ):
            out.update({prefix + k: v for k, v in enc.input_shapes(batch_size).items()})
        return out

    def ensure_built(self) -> LinkPredictor:
        """Creates the weights if needed; returns self."""
        if not self.built:
            self.build()
        return self

    def build(self, input_shape: Any = None) -> None:
        """Creates every weight from the config alone."""
        self.source_encoder.ensure_built()
        self.target_encoder.ensure_built()
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
                name = prefix + mask_name(h, label)
                if h and name in inputs:
                    masks[(h, label)] = inputs[name]
        return enc.encode_rows(rows, index, masks, training=training)

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
    ``feature_caches``: label -> :class:`~memgraph_tf.client.pipeline.FeatureCache` (None when
    the features travelled in the blobs)."""

    model: LinkPredictor
    history: dict[str, list[float]]
    best_step: int
    best_val_auc: float | None
    feature_caches: dict[str, Any] | None


def _pairs(pairs: Any, name: str) -> np.ndarray:
    arr = np.asarray(pairs)
    if arr.ndim != 2 or arr.shape[1] != 2 or arr.shape[0] == 0 or arr.dtype.kind not in "iu":
        raise ConfigurationError(
            f"{name}: expected a non-empty [n, 2] array of integer (source, target) keys, got "
            f"shape {list(arr.shape)} of {arr.dtype}"
        )
    return arr.astype(np.int64)


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
) -> dict[str, Any]:
    """A :class:`~memgraph_tf.client.pipeline.FeatureCache` per label of ``properties`` (every node
    of the label, keyed as the pair blobs' ``ids_*`` sections are: ``options["id_property"]``
    values, else internal ids), packed once through ``tf_features.pack``."""
    from memgraph_tf.client.pipeline import FeatureCache

    opts = options or {}
    id_property = opts.get("id_property")
    pack = {k: opts[k] for k in ("id_property", "dtype", "allow_non_finite") if k in opts}
    caches = {}
    for label, names in properties.items():
        if not names:
            continue
        ids = source.node_ids(label=label, id_property=id_property)
        caches[label] = FeatureCache.from_source(source, ids, list(names), {**pack, "label": label})
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
    """Pair batches: per batch of ``pairs`` (``[n, 2]`` source and target keys) one
    ``tf_features.sample_pairs`` call (``source.sample_pairs_b64``) with ``negatives`` keyed
    negatives per pair, decoded by the unpack op into a dict of the pair sections
    (:func:`memgraph_tf.layout.pair_sample_sections`) -- the model's inputs by name -- with
    ``pair_labels``. With ``feature_caches`` (label -> FeatureCache) the call asks for no
    properties and each ``*.features_h{h}_{label}`` section is gathered from the cache by the
    blob's ``*.ids_h{h}_{label}`` keys (zeros where padded): the same tensors, far smaller blobs.

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
    import tensorflow as tf

    from memgraph_tf.client.pipeline import _batch_seed, _check_positive, _ordered, unpacker

    pairs = _pairs(pairs, "pairs")
    batch_size = _check_positive("batch_size", batch_size)
    draws = _check_positive("draws", draws)
    opts = dict(options or {})
    fixed_seed = opts.get("seed") is not None
    if isinstance(negatives, bool) or not isinstance(negatives, (int, np.integer)) or negatives < 0:
        raise ConfigurationError(f"negatives: expected an integer >= 0, got {negatives!r}")
    if negatives:
        opts["negatives"] = int(negatives)
    dtype = model.feature_dtype
    opts["dtype"] = dtype
    caches = dict(feature_caches or {})
    props = {lb: list(n) for lb, n in properties.items() if lb not in caches}
    blob_widths = {lb: model.feature_dims[lb] for lb in props if model.feature_dims.get(lb)}
    nn = model.num_neighbors_config
    sections = layout.pair_sample_sections(
        model.source_spec, model.target_spec, blob_widths, dtype, batch=None
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
    distinct = bool(rows and caches) and all(
        caches.get(lb) is not None for lb, width in model.feature_dims.items() if width
    )

    def call(batch: Any, index: Any) -> Any:
        call_opts = dict(opts)
        if not fixed_seed:
            call_opts["seed"] = _batch_seed(seed, index.numpy())
        rows = batch.numpy()
        text = source.sample_pairs_b64(
            rows[:, 0].tolist(), rows[:, 1].tolist(), nn, props, call_opts
        )
        if not keep_pair_edges:
            return text
        return _keep_pair_edges(source, model, text, names, props, call_opts, typed_names)

    @tf.autograph.experimental.do_not_convert  # plain graph code: converting it costs seconds
    def fetch(batch: Any, index: Any) -> Any:
        text = tf.py_function(call, [batch, index], Tout=tf.string, name="sample_pairs")
        text.set_shape([])
        return text

    @tf.autograph.experimental.do_not_convert
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
            if cache is not None and model.feature_dims.get(label):
                hop = sec.hop
                out[prefix + features_name(hop, label)] = cache.gather(out[sec.name])
        return out

    ds = tf.data.Dataset.from_tensor_slices(pairs)
    if shuffle:
        ds = ds.shuffle(len(pairs), seed=seed, reshuffle_each_iteration=True)
    if repeat:
        ds = ds.repeat()
    ds = ds.batch(batch_size)
    if draws > 1:
        ds = ds.repeat(draws)
    ds = tf.data.Dataset.zip((ds, tf.data.Dataset.counter()))
    ds = ds.map(fetch, num_parallel_calls=num_parallel_calls, **_ordered(num_parallel_calls))
    ds = ds.map(decode, num_parallel_calls=num_parallel_calls, **_ordered(num_parallel_calls))
    return ds.prefetch(tf.data.AUTOTUNE)


def _distinct_rows(
    out: dict[str, Any], sections: Sequence[Any], caches: Mapping[str, Any], model: LinkPredictor
) -> dict[str, Any]:
    """:func:`pair_sample_dataset`'s ``rows`` batch from the decoded sections ``out``."""
    import tensorflow as tf

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
        flat = [tf.reshape(out[name], [-1]) for name, _ in ids_names]
        unique, where = tf.unique(tf.concat(flat, axis=0), out_idx=tf.int32)
        out[ROWS_PREFIX + label] = (
            cache.gather_sparse(unique) if getattr(cache, "sparse", False) else cache.gather(unique)
        )
        start = 0
        for (name, hop), f in zip(ids_names, flat):
            size = tf.size(f, out_type=tf.int32)
            idx = tf.reshape(where[start : start + size], tf.shape(out[name], out_type=tf.int32))
            idx.set_shape(out[name].shape)
            prefix = name[: name.index(".") + 1]
            out[prefix + layout.typed_index_name(hop, label)] = idx
            start = start + size
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
        typed = blob.unpack(
            source.sample_typed(seeds, spec.num_neighbors(), own, {**typed_opts, "label": label})
        )
        for name in typed_names[prefix]:
            out[name] = typed[name[len(prefix) :]]
    out[layout.PAIR_LABELS] = sections[layout.PAIR_LABELS]
    return blob.pack_b64({n: out[n] for n in names})


def _link_inputs(model: LinkPredictor, batch: Mapping[str, Any]) -> dict[str, Any]:
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


_INFER_FNS: weakref.WeakKeyDictionary[LinkPredictor, Any] = weakref.WeakKeyDictionary()


def _infer_fn(model: LinkPredictor) -> Any:
    """One traced ``sigmoid(logits)`` per model (traced once, reused across calls)."""
    import tensorflow as tf

    fn = _INFER_FNS.get(model)
    if fn is None:
        ref = weakref.ref(model)  # the cached function must not keep the model alive

        @tf.function(reduce_retracing=True, autograph=False)
        def fn(batch: Mapping[str, Any]) -> Any:
            return tf.sigmoid(ref()(_link_inputs(ref(), batch), training=False))

        _INFER_FNS[model] = fn
    return fn


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
    the same probabilities up to float rounding); false: per slot, as before."""
    from memgraph_tf.client.graphsage import _positive_int

    pairs = _pairs(pairs, "pairs")
    draws = _positive_int("draws", draws)
    props = dict(properties or model.properties or {})
    opts = _pair_options(options, model.source_label, model.target_label, exclude_splits)
    ds = pair_sample_dataset(
        source,
        model,
        pairs,
        props,
        options=opts,
        batch_size=batch_size,
        seed=None if seed is None else seed * 7919,
        draws=draws,
        feature_caches=feature_caches,
        keep_pair_edges=keep_pair_edges,
        decoder=decoder,
        rows=use_rows,
    )
    infer = _infer_fn(model)
    parts = [infer(batch).numpy() for batch in ds]
    return np.concatenate(parts).astype(np.float64).reshape(draws, len(pairs)).mean(axis=0)


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
        seed=None if seed is None else seed * 7919 + 2,
        feature_caches=feature_caches,
        decoder=decoder,
        rows=use_rows,
    )
    infer = _infer_fn(model)
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
) -> LinkTrainResult:
    """Trains a :class:`LinkPredictor` on ``train_pairs`` (``[n, 2]`` source and target keys:
    ``options["id_property"]`` values, else internal ids -- the positive relationships of the
    training split) with pairs sampled by the source's ``tf_features.sample_pairs``:
    ``batch_size`` positive pairs per step, each with ``negatives`` keyed negatives drawn in the
    database (rows: ``batch_size * (1 + negatives)``), ``exclude_splits`` (default val and test)
    left out of every neighbourhood, each row's own relationships removed by the procedure
    (unless ``keep_pair_edges``, the ablation of :func:`pair_sample_dataset`).

    The sibling of :func:`~memgraph_tf.client.typed_graphsage.train_typed_graphsage`, with its
    conventions: ``num_neighbors`` (pattern -> fanouts, or ``{"source", "target"}`` maps),
    ``properties`` (label -> names, or one list for every label), ``options`` (no ``seed``:
    pass ``seed=``), ``steps``, ``eval_every``, ``eval_draws``, ``patience`` (in steps),
    ``seed``, ``decoder``, ``progress``; Adam with binary cross-entropy (plus ``l2``), early
    stopping on the validation AUC of ``val_pairs`` / ``val_labels`` (0/1; the same validation
    neighbourhoods at every evaluation when ``seed`` is given), best weights restored. Widths
    from ``tf_features.schema``; with ``use_feature_cache`` the features come from one
    ``tf_features.pack`` per label (:func:`link_feature_caches`) rather than inside every blob,
    and with ``use_rows`` (default) the batches carry each label's distinct rows and the first
    layer works per distinct row (per non-zero entry for sparse features;
    :meth:`TypedGraphSAGE.encode_rows`: the same model function, dropout on the same tensors);
    false: the per-slot features path.

    Guarantees: returns a :class:`LinkTrainResult` whose model is built, holds the best weights
    and carries ``properties`` and ``schema`` (both endpoints' part)."""
    import tensorflow as tf

    from memgraph_tf.client.graphsage import _labels_options, _positive_int
    from memgraph_tf.client.steps import fit_steps
    from memgraph_tf.client.typed_graphsage import _spec, _typed_properties, typed_feature_widths

    steps = _positive_int("steps", steps)
    eval_every = _positive_int("eval_every", eval_every)
    patience = _positive_int("patience", patience)
    eval_draws = _positive_int("eval_draws", eval_draws)
    negatives = _positive_int("negatives", negatives)
    if (
        not isinstance(learning_rate, (int, float))
        or isinstance(learning_rate, bool)
        or learning_rate <= 0
    ):
        raise ConfigurationError(f"learning_rate: expected a number > 0, got {learning_rate!r}")
    target_label = target_label or source_label
    opts = _labels_options(options, "label")
    opts.pop("label_property")  # (no labels: the pairs are the supervision)
    opts = _pair_options(opts, source_label, target_label, exclude_splits)
    train_pairs = _pairs(train_pairs, "train_pairs")
    if (val_pairs is None) != (val_labels is None):
        raise ConfigurationError("val_pairs, val_labels: expected both or neither")
    if val_pairs is not None:
        val_pairs = _pairs(val_pairs, "val_pairs")
        val_labels = np.asarray(val_labels)
        if val_labels.shape != (len(val_pairs),):
            raise ConfigurationError(
                f"val_labels: expected one 0/1 label per pair ({len(val_pairs)}), got shape "
                f"{list(val_labels.shape)}"
            )
    src_nn, dst_nn = _role_specs(source_label, target_label, num_neighbors)
    specs = [_spec(source_label, src_nn), _spec(target_label, dst_nn)]
    labels = list(dict.fromkeys(specs[0].labels() + specs[1].labels()))
    if isinstance(properties, Mapping):
        props = _typed_properties(specs[0], properties)
    else:
        props = {
            label: list(_typed_properties(specs[0], properties)[source_label]) for label in labels
        }
    if seed is not None:
        keras.utils.set_random_seed(seed)
    widths: dict[str, int] = {}
    schema: dict[str, Any] = {"labels": [], "relationships": []}
    for spec in specs:
        own = {lb: names for lb, names in props.items() if lb in spec.labels()}
        w, dtype, part = typed_feature_widths(source, spec, own, opts)
        widths.update(w)
        for key in ("labels", "relationships"):
            schema[key] += [e for e in part[key] if e not in schema[key]]
    model = LinkPredictor(
        source_label,
        num_neighbors,
        widths,
        target_label=target_label,
        hidden_units=hidden_units,
        dropout=dropout,
        l2=l2,
        normalize_hidden=normalize_hidden,
        scorer=scorer,
        mlp_units=mlp_units,
        feature_dtype=dtype,
    )
    model.properties = props
    model.schema = schema
    model.ensure_built()
    if feature_caches is None and use_feature_cache:
        feature_caches = link_feature_caches(source, props, opts)
    if feature_caches:
        for label, cache in feature_caches.items():
            if cache.width != widths.get(label, 0):
                raise ConfigurationError(
                    f"feature_caches[{label!r}]: expected width {widths.get(label, 0)} (the "
                    f"schema's), got {cache.width}"
                )
    variables = model.trainable_link_variables()
    optimizer = keras.optimizers.Adam(learning_rate=learning_rate)
    optimizer.build(variables)
    from memgraph_tf.client.pipeline import without_autotune

    train_ds = pair_sample_dataset(
        source,
        model,
        train_pairs,
        props,
        options=opts,
        negatives=negatives,
        batch_size=batch_size,
        shuffle=True,
        seed=seed,
        repeat=True,
        feature_caches=feature_caches,
        keep_pair_edges=keep_pair_edges,
        decoder=decoder,
        num_parallel_calls=tf.data.AUTOTUNE,
        rows=use_rows,
    )
    train_ds = without_autotune(train_ds)  # abandoned in flight by early stopping

    @tf.function(input_signature=[train_ds.element_spec], autograph=False)
    def train_step(batch: Mapping[str, Any]) -> tuple[Any, Any]:
        y = tf.cast(batch[layout.PAIR_LABELS], tf.float32)
        with tf.GradientTape() as tape:
            logits = model(_link_inputs(model, batch), training=True)
            loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(y, logits))
            if model.losses:
                loss = loss + tf.add_n(model.losses)
        grads = tape.gradient(loss, variables)
        optimizer.apply_gradients(zip(grads, variables))
        accuracy = tf.reduce_mean(tf.cast(tf.equal(logits > 0, y > 0.5), tf.float32))
        return loss, accuracy

    val_ds, infer = None, _infer_fn(model)
    if val_pairs is not None:
        val_ds = pair_sample_dataset(
            source,
            model,
            val_pairs,
            props,
            options=opts,
            batch_size=512,
            seed=None if seed is None else seed * 7919 + 1,
            draws=eval_draws,
            feature_caches=feature_caches,
            decoder=decoder,
            rows=use_rows,
        )
        if seed is not None:
            val_ds = val_ds.cache()  # the same validation neighbourhoods at every evaluation

    def val_figures() -> dict[str, float]:
        parts = [infer(b).numpy() for b in val_ds]
        probs = np.concatenate(parts).astype(np.float64)
        probs = probs.reshape(eval_draws, len(val_pairs)).mean(axis=0)
        return {
            "val_auc": roc_auc(val_labels, probs),
            "val_ap": average_precision(val_labels, probs),
        }

    history, best_step, best_auc = fit_steps(
        model,
        train_ds.take(steps),
        steps=steps,
        train_step=train_step,
        evaluate=val_figures if val_ds is not None else None,
        metric="val_auc",
        metric_keys=("val_auc", "val_ap"),
        eval_every=eval_every,
        patience=patience,
        progress=progress,
    )
    return LinkTrainResult(
        model, history, best_step, best_auc, dict(feature_caches) if feature_caches else None
    )
