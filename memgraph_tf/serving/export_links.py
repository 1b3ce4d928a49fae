"""Export a trained link predictor as a TF Serving bundle.

:func:`export_link_bundle` writes the layout of :func:`memgraph_tf.serving.export.export_bundle`
(``BASE/models.config``, ``BASE/NAME/VERSION/`` with the SavedModel, ``assets/class_labels.txt``,
``assets/memgraph_tf_bundle.json``, ``assets.extra/tf_serving_warmup_requests`` and, for
``decoder="op"``, the op library) for a :class:`memgraph_tf.client.link_prediction.LinkPredictor`.
A link bundle reads one ``tf_features.sample_pairs`` blob per pair (``n = 1``: the pair's two
neighbourhoods, its own relationships removed) -- in each tf.Example the single value of the bytes
feature ``blob_feature_key`` (``blob``), as the node bundles read a node's blob.

Signatures (names and keys: :mod:`memgraph_tf.serving.bundle`, the one home):

- ``serving_default`` (``LINK_CLASSIFY_SIGNATURE``, method ``tensorflow/serving/classify``):
  TF Serving's classifier contract (``servables/tensorflow/classifier.cc``): input ``inputs``
  (DT_STRING [batch] serialized tf.Examples); outputs ``classes`` (DT_STRING [batch, 2], always
  ``["link", "no link"]``, ``LINK_CLASS_NAMES``) and ``scores`` (DT_FLOAT [batch, 2]: P(link),
  1 - P(link)). As TF Serving's default signature, a :classify request naming none runs it.
- ``regress`` (method ``tensorflow/serving/regress``): TF Serving's regression contract
  (``servables/tensorflow/regressor.cc``, ``PreProcessRegression``: one input ``inputs``, one
  output ``outputs``): the same input -> ``outputs`` DT_FLOAT [batch] = P(link).
- ``embed_source`` / ``embed_target`` (predict): ``blobs`` (DT_STRING [batch], each the
  ``tf_features.sample_typed`` blob of one node of that role's label, sampled with the bundle's
  role settings, :meth:`~memgraph_tf.serving.bundle.SamplingSpec.role_arguments`) ->
  ``embeddings`` DT_FLOAT [batch, D], the node's representation z.
- ``score_embeddings`` (predict): ``z_source``, ``z_target`` (DT_FLOAT [batch, D]) ->
  ``outputs`` (P(link), DT_FLOAT [batch]) and ``logits`` (DT_FLOAT [batch]): the pair scorer
  alone, so batch scoring embeds each node once and scores many pairs.
- ``memgraph_tf_config`` (predict): the bundle config, as in node bundles.

The config asset's ``link`` key holds the pair sampling settings (``source_label``,
``target_label``, ``num_neighbors`` per role, ``properties`` per label) and ``schema`` (the part
of ``tf_features.schema`` the model was trained on); ``options`` the ``sample_pairs`` options
(``dtype``, ``seed``, ``exclude_splits``, ``id_property``, ``time_order`` ...); never a URI or
password. A model with timed steps (``{time: ts}`` in ``num_neighbors``) keeps them in
``link.num_neighbors`` and its ``time_order`` in ``options``: the serving and batch paths sample
every pair at one time, the request's ``at`` or else "now" (:data:`~memgraph_tf.serving.bundle.
NOW_TIME`: every relationship, whatever its time), as ``predict_links`` samples ``[n, 3]`` pairs
whose time column is that time (:meth:`~memgraph_tf.serving.bundle.SamplingSpec.pair_arguments`).
Guarantees: ``serving_default``'s P(link) = ``regress`` = ``score_embeddings`` of the two
``embed_*`` outputs = the in-process ``sigmoid(model(inputs))`` on the same blobs; the op and the
op-free (``decoder="portable"``: stock TensorFlow ops only) bundles give the same scores.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping, Sequence
from typing import Any

from memgraph_tf import layout
from memgraph_tf.errors import BundleError
from memgraph_tf.serving import bundle
from memgraph_tf.serving.bundle import DEFAULT_BLOB_FEATURE_KEY, BundleConfig
from memgraph_tf.serving.export import (
    ROW_SPLITS,
    BundleInfo,
    check_blob_feature_key,
    check_name_and_version,
    check_version_labels,
    decode_with_bags,
    lazy_class,
    module_base_class,
    save_bundle,
    set_model_dtype,
    warmup_blob,
)

logger = logging.getLogger(__name__)

#: ``decoder=`` values: the C++ op or stock TensorFlow ops only.
DECODERS = ("op", "portable")
#: The ``sample_pairs`` options a link bundle may store (the pair labels come from the model;
#: ``negatives`` are a training matter; a pair's time is the request's, never the bundle's:
#: ``pair_time`` / ``pair_times`` are not stored, ``time_order`` is).
LINK_OPTIONS = (
    "allow_non_finite",
    "dtype",
    "id_property",
    "seed",
    "time_order",
) + layout.SPLIT_OPTIONS


def _check_arguments(name: Any, version: Any, decoder: Any, blob_feature_key: Any) -> None:
    check_name_and_version(name, version)
    if decoder not in DECODERS:
        raise BundleError(
            f"decoder: expected one of {list(DECODERS)}, got {decoder!r}", key="decoder"
        )
    check_blob_feature_key(blob_feature_key)


def link_settings(
    model: Any,
    properties: Mapping[str, Sequence[str]] | None = None,
    sample_options: Mapping[str, Any] | None = None,
    exclude_splits: Sequence[str] | None = None,
    schema: Mapping[str, Any] | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(link, options)``: the config's ``link`` entry and sampling options for ``model``.
    ``properties`` default the model's (set by training); ``schema`` the model's. Raises
    :class:`BundleError` naming the parameter for settings that do not fit the model."""
    from memgraph_tf.typed_sampling import TypedSamplingSpec

    # (duck-typed: the serving package never imports the client package)
    if not all(
        isinstance(getattr(model, k, None), TypedSamplingSpec)
        for k in ("source_spec", "target_spec")
    ) or not all(callable(getattr(model, k, None)) for k in ("embed", "score")):
        raise BundleError(
            f"model: expected a memgraph_tf.client.link_prediction.LinkPredictor (source_spec, "
            f"target_spec, embed, score), got {type(model).__name__}",
            key="model",
        )
    options = dict(sample_options or {})
    bundle.check_plain_json(options, "sample_options")
    for key in sorted(options):
        if key not in LINK_OPTIONS:
            raise BundleError(
                f"sample_options: {key!r}: expected only {', '.join(LINK_OPTIONS)} (the pair "
                f"labels are the model's)",
                key="sample_options",
            )
    set_model_dtype(options, model.feature_dtype)
    encoders = encoders_of(model)
    if encoders:  # the raw property columns of these labels: the bundle's sample_pairs calls
        options["feature_spec"] = {label: enc.spec.to_dict() for label, enc in encoders.items()}
    edge_encoders = edge_encoders_of(model)
    if edge_encoders:  # the relationship properties of these steps, beside their slots
        options["edge_feature_spec"] = {p: e.spec.to_dict() for p, e in edge_encoders.items()}
    if exclude_splits is not None:
        splits = list(exclude_splits)
        if options.get("exclude_splits") not in (None, splits):
            raise BundleError(
                "exclude_splits: expected the same splits as sample_options['exclude_splits']",
                key="exclude_splits",
            )
        options["exclude_splits"] = splits
    props = properties if properties is not None else model.properties
    if props is None or (not props and not encoders and not edge_encoders):
        raise BundleError(
            "properties: not given and the model has none (train_link_predictor sets them); "
            "pass properties={label: [names]}",
            key="properties",
        )
    props = {str(k): [str(n) for n in v] for k, v in props.items() if v}
    featured = sorted(lb for lb, w in model.feature_dims.items() if w and lb not in encoders)
    if sorted(props) != featured:
        raise BundleError(
            f"properties: expected feature properties for exactly the labels the model has "
            f"features for ({', '.join(featured) or 'none'}), got {sorted(props)}",
            key="properties",
        )
    try:
        link = bundle.LinkSampling(
            model.source_label,
            model.target_label,
            {
                "source": model.source_spec.num_neighbors(),
                "target": model.target_spec.num_neighbors(),
            },
            props,
        ).to_dict()
    except BundleError as exc:
        raise BundleError(f"properties: {exc}", key="properties") from None
    if schema is None:
        schema = model.schema
    if schema is not None:
        schema = json.loads(json.dumps(schema))
        bundle.check_plain_json(schema, "schema")
        link["schema"] = schema
    return link, options


def encoders_of(model: Any) -> dict[str, Any]:
    """The model's label -> ``LabelEncoder`` (none for a model without feature specs)."""
    return dict(getattr(model, "label_encoders", None) or {})


def edge_encoders_of(model: Any) -> dict[str, Any]:
    """The model's edge pattern -> ``LabelEncoder`` (none for a model without edge features)."""
    return dict(getattr(model, "edge_encoders", None) or {})


def _edge_widths(model: Any, spec: Any = None) -> dict[Any, Any]:
    """Per step with an edge encoder (of ``spec`` alone, when given) its raw widths."""
    from memgraph_tf.typed_sampling import EdgeStep

    out = {
        EdgeStep.parse(p): layout.RawWidths(**enc.group_widths)
        for p, enc in edge_encoders_of(model).items()
    }
    return {s: w for s, w in out.items() if spec is None or s in spec.steps}


def _raw_and_widths(model: Any) -> tuple[dict[str, Any], dict[str, int]]:
    """Per encoded label its raw widths; per other label its feature width."""
    encoders = encoders_of(model)
    raw = {label: layout.RawWidths(**enc.group_widths) for label, enc in encoders.items()}
    widths = {lb: w for lb, w in model.feature_dims.items() if lb not in encoders}
    return raw, widths


def pair_sections(model: Any) -> dict[str, tuple[str, tuple[int, ...]]]:
    """The per-pair blob sections the model reads (``n = 1``): :func:`memgraph_tf.layout.
    pair_sample_sections` restricted to :meth:`LinkPredictor.input_names` (raw sections, with
    the ``.row_splits`` of ragged ones, for labels with feature specs)."""
    wanted = set(model.input_names())
    raw, widths = _raw_and_widths(model)
    return {
        s.name: (s.dtype, tuple(s.shape))
        for s in layout.pair_sample_sections(
            model.source_spec,
            model.target_spec,
            widths,
            model.feature_dtype,
            batch=1,
            raw=raw or None,
            edges=_edge_widths(model) or None,
        )
        if s.name in wanted
    }


def role_sections(model: Any, role: str) -> dict[str, tuple[str, tuple[int, ...]]]:
    """The sections of one node's ``sample_typed`` blob (``n = 1``) that role's encoder reads,
    by their typed names (no prefix)."""
    prefix, spec = (
        (layout.PAIR_SOURCE_PREFIX, model.source_spec)
        if role == "source"
        else (layout.PAIR_TARGET_PREFIX, model.target_spec)
    )
    wanted = {n[len(prefix) :] for n in model.input_names() if n.startswith(prefix)}
    labels = spec.labels()
    raw, widths = _raw_and_widths(model)
    widths = {lb: w for lb, w in widths.items() if lb in labels}
    raw = {lb: w for lb, w in raw.items() if lb in labels}
    return {
        s.name: (s.dtype, tuple(s.shape))
        for s in layout.typed_sample_sections(
            spec,
            widths,
            model.feature_dtype,
            batch=1,
            raw=raw or None,
            edges=_edge_widths(model, spec) or None,
        )
        if s.name in wanted
    }


def export_link_bundle(
    model: Any,
    base_dir: str | os.PathLike,
    name: str,
    version: int,
    *,
    decoder: str = "portable",
    properties: Mapping[str, Sequence[str]] | None = None,
    sample_options: Mapping[str, Any] | None = None,
    exclude_splits: Sequence[str] | None = None,
    schema: Mapping[str, Any] | None = None,
    blob_feature_key: str = DEFAULT_BLOB_FEATURE_KEY,
    labels: Mapping[str, int] | None = None,
    serving_base_path: str = "/models",
    overwrite: bool = False,
    warmup: bool = True,
) -> BundleInfo:
    """Export ``model`` (a :class:`~memgraph_tf.client.link_prediction.LinkPredictor`) to
    ``base_dir/name/version/`` and update ``base_dir/models.config`` (module docstring: layout and
    signatures).

    ``decoder``: ``"op"`` (the C++ op; serve with ``memgraph-tf serve`` or a TF Serving built
    with it) or ``"portable"`` (stock ops only: the stock ``tensorflow/serving`` image).
    ``sample_options``: the ``sample_pairs`` options servers sample with (:data:`LINK_OPTIONS`;
    ``seed`` default: :data:`~memgraph_tf.serving.bundle.DEFAULT_SEED` at inference; a model
    with timed steps: the ``time_order`` it was trained with, never a pair time);
    ``exclude_splits``: held-out splits left out of every served neighbourhood (default none:
    every relationship is known at serving time); ``properties`` / ``schema``: default the
    model's (set by :func:`~memgraph_tf.client.link_prediction.train_link_predictor`).

    Guarantees: the version directory appears whole or not at all; nothing from a graph
    connection is written (credential-like option keys raise BundleError); the config asset and
    ``memgraph_tf_config`` hold one validated :class:`BundleConfig` with ``link`` set; an
    existing version raises BundleExistsError unless ``overwrite``; bad arguments raise
    BundleError naming the parameter before anything is written."""
    import tensorflow as tf

    _check_arguments(name, version, decoder, blob_feature_key)
    link, options = link_settings(model, properties, sample_options, exclude_splits, schema)
    check_version_labels(labels)
    model.ensure_built()
    use_op = decoder == "op"
    config = BundleConfig(
        model_name=name,
        version=version,
        use_op=use_op,
        blob_feature_key=blob_feature_key,
        class_names=bundle.LINK_CLASS_NAMES,
        fanouts=[],
        feature_dim=0,
        properties=[],
        options=options,
        sections=pair_sections(model),
        scores="probabilities",
        tensorflow_version=tf.__version__,
        link=link,
    )
    info = save_bundle(
        base_dir,
        config,
        lambda labels_asset, config_asset: _LinkModule(model, config, labels_asset, config_asset),
        methods={
            bundle.LINK_CLASSIFY_SIGNATURE: bundle.CLASSIFY_METHOD_NAME,
            bundle.REGRESS_SIGNATURE: bundle.REGRESS_METHOD_NAME,
        },
        warmup=(lambda: warmup_blob(config.sections)) if warmup else None,
        warmup_requests=(
            ("classify_log", bundle.LINK_CLASSIFY_SIGNATURE),
            ("regress_log", bundle.REGRESS_SIGNATURE),
        ),
        labels=labels,
        serving_base_path=serving_base_path,
        overwrite=overwrite,
    )
    logger.info("exported link bundle %s version %d (%s) to %s", name, version, decoder, info.path)
    return info


def _make_module_class() -> Any:
    import tensorflow as tf

    class LinkModule(module_base_class()):
        """The exported object of a link bundle: the link predictor, the blob decoding and the
        signatures."""

        def __init__(self, model, config, labels_asset, config_asset):
            super().__init__("memgraph_tf_link_bundle", model, config, labels_asset, config_asset)
            self._pair = dict(config.sections)
            self._roles = {role: role_sections(model, role) for role in bundle.LINK_ROLES}
            # one function that classify and regress both call, traced once and held in a
            # closure, not as an attribute (tf.saved_model.save would trace an attribute again):
            # the op-free decoder's graph is large, so each copy costs seconds to trace and load
            probabilities = self.trace(self._pair_probabilities, tf.TensorSpec([None], tf.string))
            self._probabilities = lambda inputs: probabilities(inputs)

        def _decode(self, blobs, sections):
            if any(n.endswith(ROW_SPLITS) for n in sections):
                return decode_with_bags(blobs, self.unpack(), sections)
            return self.decode_sections(blobs, sections)

        def _pair_probabilities(self, inputs):
            pair = self._decode(self.parse_blobs(inputs), self._pair)
            logits = self.model(pair, training=False)
            return tf.sigmoid(tf.cast(logits, tf.float32))

        def classify(self, inputs):
            p = self._probabilities(inputs)
            return self.class_outputs(tf.stack([p, 1.0 - p], axis=1), bundle.LINK_CLASS_NAMES)

        def regress(self, inputs):
            return {bundle.REGRESS_OUTPUT: self._probabilities(inputs)}

        def _embed(self, blobs, role):
            prefix, short = (
                (layout.PAIR_SOURCE_PREFIX, "src")
                if role == "source"
                else (layout.PAIR_TARGET_PREFIX, "dst")
            )
            own = self._decode(blobs, self._roles[role])
            z = self.model.embed({prefix + k: v for k, v in own.items()}, short, training=False)
            return {bundle.EMBEDDINGS_OUTPUT: tf.cast(z, tf.float32)}

        def embed_source(self, blobs):
            return self._embed(blobs, "source")

        def embed_target(self, blobs):
            return self._embed(blobs, "target")

        def score_embeddings(self, z_source, z_target):
            logits = tf.cast(self.model.score(z_source, z_target, training=False), tf.float32)
            return {bundle.REGRESS_OUTPUT: tf.sigmoid(logits), bundle.LOGITS_OUTPUT: logits}

        def signature_functions(self):
            """``{signature name: concrete function}``, each traced once (argument names are the
            input keys)."""
            trace = self.trace
            examples = tf.TensorSpec([None], tf.string, name=bundle.CLASSIFY_INPUT)
            blobs = tf.TensorSpec([None], tf.string, name=bundle.EMBED_INPUT)
            out = {
                bundle.LINK_CLASSIFY_SIGNATURE: trace(self.classify, examples),
                bundle.REGRESS_SIGNATURE: trace(self.regress, examples),
                bundle.EMBED_SOURCE_SIGNATURE: trace(self.embed_source, blobs),
                bundle.EMBED_TARGET_SIGNATURE: trace(self.embed_target, blobs),
                bundle.CONFIG_SIGNATURE: trace(
                    self.config, tf.TensorSpec(None, tf.int64, name=bundle.CONFIG_INPUT)
                ),
            }
            out = {k: f.get_concrete_function() for k, f in out.items()}
            width = (
                out[bundle.EMBED_SOURCE_SIGNATURE]
                .structured_outputs[bundle.EMBEDDINGS_OUTPUT]
                .shape[-1]
            )
            z = [
                tf.TensorSpec([None, width], tf.float32, name=bundle.Z_SOURCE_INPUT),
                tf.TensorSpec([None, width], tf.float32, name=bundle.Z_TARGET_INPUT),
            ]
            out[bundle.SCORE_EMBEDDINGS_SIGNATURE] = trace(
                self.score_embeddings, *z
            ).get_concrete_function()
            return out

    return LinkModule


_LinkModule = lazy_class(_make_module_class)


__all__ = [
    "DECODERS",
    "LINK_OPTIONS",
    "edge_encoders_of",
    "encoders_of",
    "export_link_bundle",
    "link_settings",
    "pair_sections",
    "role_sections",
]
