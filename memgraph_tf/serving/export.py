"""Export a trained node classifier as a TF Serving bundle.

:func:`export_bundle` writes::

    BASE/
      models.config                      TF Serving model config (text proto), merged per model
      NAME/VERSION/
        saved_model.pb, variables/       the model, with the blob decoder inside the graph
        assets/class_labels.txt          one class label per line, in score order
        assets/memgraph_tf_bundle.json   how to build the model's input: fanouts, properties,
                                         sampling options, sections, blob feature key, labels
        assets.extra/tf_serving_warmup_requests  one :classify request (an all-zero node), which
                                         TF Serving replays at load time (warmup=True)
        assets.extra/memgraph_tf/        op bundles only: the op library (.so) and
                                         op_library.json (the TF version it was built for)

Signatures:

- ``classify`` -- TF Serving's classifier contract (``servables/tensorflow/classifier.cc``): one
  input ``inputs`` (DT_STRING, serialized ``tf.Example`` s, each holding one node's blob as the
  single value of the bytes feature ``blob_feature_key``); outputs ``classes`` (DT_STRING
  ``[batch, k]``, every class label) and ``scores`` (DT_FLOAT ``[batch, k]``, probabilities).
- ``serving_default`` -- predict, input ``blobs`` (DT_STRING ``[batch]``, raw blobs); outputs
  ``scores`` (DT_FLOAT ``[batch, k]``), ``class_ids`` (DT_INT64 ``[batch]``) and ``classes``
  (DT_STRING ``[batch]``, the top label).
- ``memgraph_tf_config`` -- predict, input ``unused`` (DT_INT64, any shape); output
  ``config_json`` (DT_STRING scalar): the bundle config, so a client can read the sampling
  settings through stock TF Serving too.

The blob is decoded in the graph either by the C++ op ``MemgraphTf>UnpackBlob`` (``use_op=True``:
serve with ``memgraph-tf serve`` or a ``tensorflow_model_server`` built with the op) or by stock
TensorFlow ops (``use_op=False``: runs on the stock ``tensorflow/serving`` image). Blobs in the
compact or sparse sample layout (``layout=``) are then gathered/densified to the dense model inputs
by :func:`memgraph_tf.ops.sample_decoding.decode_sample` (stock ops only) -- except for the
project's
:class:`~memgraph_tf.client.graphsage.GraphSAGE`, which reads the blobs' tables as they are
(:func:`~memgraph_tf.ops.sample_decoding.decode_sample_rows`, each row once per call) with
``GraphSAGE.call_table``: the same scores up to float rounding, without the ``[slots, d]`` inputs.

The names of every file, folder, signature and tensor key above, and the config itself
(:class:`memgraph_tf.serving.bundle.BundleConfig`), are defined in
:mod:`memgraph_tf.serving.bundle`.
Bad arguments raise :class:`memgraph_tf.errors.BundleError` (also a ValueError) naming the
parameter; an existing version raises :class:`~memgraph_tf.errors.BundleExistsError` (also
a FileExistsError).

Credentials rule: nothing in a bundle comes from the graph connection. The exporter never takes a
source object; ``sample_options`` is checked for credential-like keys and values must be plain JSON.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import pathlib
import re
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from memgraph_tf.errors import BundleError, BundleExistsError
from memgraph_tf.layout import ROW_SPLITS_SUFFIX
from memgraph_tf.serving import bundle
from memgraph_tf.serving.bundle import (
    CLASSIFY_SIGNATURE,
    CONFIG_SIGNATURE,
    DEFAULT_BLOB_FEATURE_KEY,
    PREDICT_SIGNATURE,
    BundleConfig,
)

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class BundleInfo:
    """What :func:`export_bundle` wrote."""

    path: pathlib.Path  # BASE/NAME/VERSION
    models_config: pathlib.Path  # BASE/models.config
    name: str
    version: int
    use_op: bool
    signatures: tuple[str, ...]
    config: dict  # BundleConfig.to_dict(): the JSON written to the config asset


def default_sections(
    fanouts: Sequence[int],
    feature_dim: int,
    *,
    masks: bool = True,
    dtype: str = "float32",
    layout: str = "dense",
) -> dict[str, tuple[str, tuple[int, ...]]]:
    """The per-node blob sections a GraphSAGE model with these ``fanouts`` reads, as
    ``{name: (dtype, per-node shape)}``: in the dense layout ``features_h`` (``dtype``)
    ``[1, f1..fh, d]`` for h = 0..H and, with ``masks``, ``mask_h`` bool ``[1, f1..fh]`` for
    h = 1..H (the sample layout with n = 1; the query modules write masks when
    ``options.low_degree`` is ``"pad"``); in the compact and sparse layouts ``index_h`` and the
    table's sections, ``-1`` for a length that varies from blob to blob. Built from
    :func:`memgraph_tf.layout.model_input_sections`."""
    from memgraph_tf import layout as blob_layout

    sections = blob_layout.model_input_sections(
        [int(f) for f in fanouts], int(feature_dim), dtype, masks=masks, batch=1, layout=layout
    )
    return {s.name: (s.dtype, tuple(s.shape)) for s in sections}


def _model_attr(model: Any, name: str, given: Any) -> Any:
    if given is not None:
        return given
    value = getattr(model, name, None)
    if value is None:
        raise BundleError(f"{name}: not given and the model has no {name!r} attribute", key=name)
    return value


def _write_models_config(
    base: pathlib.Path,
    name: str,
    versions: list[int],
    labels: Mapping[str, int],
    serving_base_path: str,
) -> pathlib.Path:
    from google.protobuf import text_format
    from tensorflow_serving.config import model_server_config_pb2

    path = base / "models.config"
    cfg = model_server_config_pb2.ModelServerConfig()
    if path.exists():
        text_format.Parse(path.read_text(), cfg)
    entries = cfg.model_config_list.config
    entry = next((c for c in entries if c.name == name), None)
    if entry is None:
        entry = entries.add()
    entry.name = name
    entry.base_path = serving_base_path.rstrip("/") + "/" + name
    entry.model_platform = "tensorflow"
    merged = dict(entry.version_labels)
    merged.update(labels)
    entry.ClearField("version_labels")
    for k, v in sorted(merged.items()):
        entry.version_labels[k] = int(v)
    if merged:
        # Labels may only point at loaded versions: serve every labelled one plus the newest.
        wanted = sorted(
            set(merged.values())
            | set(entry.model_version_policy.specific.versions)
            | {max(versions)}
        )
        entry.model_version_policy.specific.ClearField("versions")
        entry.model_version_policy.specific.versions.extend(wanted)
    tmp = path.with_suffix(".config.tmp")
    tmp.write_text(text_format.MessageToString(cfg))
    os.replace(tmp, path)
    return path


def export_bundle(
    model: Any,
    base_dir: str | os.PathLike,
    name: str,
    version: int,
    *,
    use_op: bool,
    class_names: Sequence[str] | None = None,
    blob_feature_key: str = DEFAULT_BLOB_FEATURE_KEY,
    fanouts: Sequence[int] | None = None,
    feature_dim: int | None = None,
    properties: Sequence[str] = ("features",),
    sample_options: Mapping[str, Any] | None = None,
    sections: Mapping[str, tuple[str, Sequence[int]]] | None = None,
    layout: str | None = None,
    scores: str = "auto",
    labels: Mapping[str, int] | None = None,
    serving_base_path: str = "/models",
    overwrite: bool = False,
    warmup: bool = True,
    schema: Mapping[str, Any] | None = None,
) -> BundleInfo:
    """Export ``model`` (a Keras model called with ``{section name: tensor [batch, ...]}`` and
    returning ``[batch, k]`` scores) to ``base_dir/name/version/`` and update
    ``base_dir/models.config``.

    Guarantees: the version directory appears whole or not at all (written beside it, then
    renamed); the ``classify`` signature meets TF Serving's classifier contract; with
    ``use_op=False`` the graph holds stock TensorFlow ops only; nothing from a graph connection is
    written (``sample_options`` with a credential-like key raises BundleError); the config asset
    and the ``memgraph_tf_config`` signature hold one validated :class:`BundleConfig`. ``fanouts``,
    ``feature_dim`` and ``class_names`` default to the model's attributes of those names.
    ``scores``: ``"probabilities"`` (the model's output used as is), ``"logits"`` (softmax
    applied) or ``"auto"`` (logits when the model has a true ``output_is_logits`` attribute, else
    probabilities; :class:`memgraph_tf.client.GraphSAGE` is known to return logits). ``labels`` maps
    version labels
    to versions in models.config. ``layout`` (``"dense"``, ``"compact"``, ``"sparse"``; default
    ``sample_options["layout"]``, else dense) is the sample layout of the blobs the bundle reads:
    it is stored as ``options.layout`` in the config, so servers and clients ask
    ``tf_features.sample_per_node`` for that layout, and the model gathers/densifies it in the
    graph (:func:`memgraph_tf.ops.sample_decoding.decode_sample`) to the same inputs, hence the same
    scores, as the dense layout. Raises BundleExistsError (a FileExistsError) if the version
    exists and not ``overwrite``; BundleError (a ValueError) naming the parameter for bad
    arguments, before anything is written.

    A typed model (:class:`memgraph_tf.client.typed_graphsage.TypedGraphSAGE`) gives a
    typed bundle: it reads one ``tf_features.sample_typed`` blob per node (in ``layout``: dense,
    the sections its ``features_*``/``mask_*`` inputs, ``[1, slots, ...]``; compact or sparse,
    expanded in the graph by :func:`memgraph_tf.ops.sample_decoding.decode_typed_sample`), and its
    config's
    ``typed`` key holds the seed label, ``num_neighbors`` and ``properties`` (label -> names;
    default the model's own ``properties`` from training, else ``properties`` for every label
    with features) and ``schema`` (default the model's ``schema``: the part of
    ``tf_features.schema`` it was trained on); ``sample_options["dtype"]`` is the model's
    ``feature_dtype`` and ``sample_options["label"]`` its seed label (the nodes batch inference
    selects). Its ``fanouts``, ``feature_dim`` and ``properties`` are empty.
    """
    import tensorflow as tf

    _check_node_arguments(name, version, use_op, scores, blob_feature_key)
    class_names = _class_names(model, class_names)
    options = dict(sample_options or {})
    bundle.check_plain_json(options, "sample_options")
    typed = _typed_settings(model, properties, options, schema, sections, layout)
    if typed is not None:
        fanouts, feature_dim, properties = [], 0, []
    else:
        fanouts, feature_dim = _node_shape(model, fanouts, feature_dim)
    sample_layout = _sample_layout(layout, options, sections)
    sections = _node_sections(model, typed, sections, fanouts, feature_dim, options, sample_layout)
    properties = list(properties)
    bundle.check_plain_json(properties, "properties")
    check_version_labels(labels)
    config = BundleConfig(
        model_name=name,
        version=version,
        use_op=use_op,
        blob_feature_key=blob_feature_key,
        class_names=class_names,
        fanouts=fanouts,
        feature_dim=feature_dim,
        properties=properties,
        options=options,
        sections=sections,
        scores=_scores_kind(model, scores),
        tensorflow_version=tf.__version__,
        typed=typed,
    )
    if hasattr(model, "ensure_built"):
        model.ensure_built()  # create a subclassed model's weights outside the traced functions
    gathered = _gathered_arguments(model, config, sample_layout)

    def make_module(labels_asset: Any, config_asset: Any) -> Any:
        logits = config.scores == "logits"
        return _BundleModule(model, config, logits, labels_asset, config_asset, gathered)

    info = save_bundle(
        base_dir,
        config,
        make_module,
        methods={CLASSIFY_SIGNATURE: bundle.CLASSIFY_METHOD_NAME},
        warmup=(lambda: _node_warmup_blob(model, config, sample_layout)) if warmup else None,
        warmup_requests=(("classify_log", CLASSIFY_SIGNATURE),),
        labels=labels,
        serving_base_path=serving_base_path,
        overwrite=overwrite,
    )
    logger.info(
        "exported %s version %d (%s) to %s",
        name,
        version,
        "C++ op" if use_op else "op-free",
        info.path,
    )
    return info


def _check_node_arguments(
    name: Any, version: Any, use_op: Any, scores: Any, blob_feature_key: Any
) -> None:
    """:func:`export_bundle`'s checks of its plain arguments (BundleError naming the one at
    fault)."""
    check_name_and_version(name, version)
    if not isinstance(use_op, bool):
        raise BundleError(f"use_op: expected True or False, got {use_op!r}", key="use_op")
    if scores not in ("auto",) + bundle.SCORES_KINDS:
        raise BundleError(
            f"scores: expected 'auto', 'probabilities' or 'logits', got {scores!r}", key="scores"
        )
    check_blob_feature_key(blob_feature_key)


def _class_names(model: Any, class_names: Sequence[str] | None) -> list[str]:
    """The bundle's class labels: ``class_names``, else the model's; BundleError (key
    ``class_names``) for none, duplicates or a label holding a newline."""
    if class_names is None and getattr(model, "class_names", None) is None:
        raise BundleError(
            "class_names: not given and the model has none; pass class_names=[...] "
            "(one label per score column)",
            key="class_names",
        )
    names = [str(c) for c in _model_attr(model, "class_names", class_names)]
    if not names or len(set(names)) != len(names):
        raise BundleError(f"class_names: expected unique labels, got {names!r}", key="class_names")
    if any("\n" in c for c in names):
        raise BundleError(
            f"class_names: expected labels without newlines, got {names!r}", key="class_names"
        )
    return names


def _node_shape(model: Any, fanouts: Any, feature_dim: Any) -> tuple[list[int], int]:
    """A homogeneous model's ``(fanouts, feature_dim)``: the given ones, else the model's;
    BundleError naming the one that is bad."""
    fanouts = [int(f) for f in _model_attr(model, "fanouts", fanouts)]
    fanouts = list(bundle.check_fanouts(fanouts))
    feature_dim = int(_model_attr(model, "feature_dim", feature_dim))
    if feature_dim < 1:
        raise BundleError(
            f"feature_dim: expected an int >= 1, got {feature_dim}", key="feature_dim"
        )
    return fanouts, feature_dim


def _node_sections(
    model: Any,
    typed: Any,
    sections: Any,
    fanouts: list[int],
    feature_dim: int,
    options: Mapping[str, Any],
    sample_layout: str,
) -> dict[str, tuple[str, tuple[int, ...]]]:
    """The sections a node bundle reads: a typed model's, else the given ``sections``, else
    :func:`default_sections` of the sampling settings; as ``{name: (dtype, shape)}``."""
    if typed is not None:
        sections = _typed_sections(model, sample_layout)
    if sections is None:
        sections = default_sections(
            fanouts,
            feature_dim,
            masks=options.get("low_degree", "pad") == "pad",
            dtype=options.get("dtype") or "float32",
            layout=sample_layout,
        )
    return {k: (str(dt), tuple(int(d) for d in shape)) for k, (dt, shape) in sections.items()}


def _scores_kind(model: Any, scores: str) -> str:
    """``scores``, with ``"auto"`` resolved: ``"logits"`` when the model says
    ``output_is_logits`` (:class:`memgraph_tf.client.GraphSAGE` is known to), else
    ``"probabilities"``."""
    if scores != "auto":
        return scores
    # memgraph_tf.client.GraphSAGE returns logits; other models (TypedGraphSAGE among them) say
    # so with output_is_logits.
    is_sage = (
        type(model).__name__ == "GraphSAGE"
        and type(model).__module__ == "memgraph_tf.client.graphsage"
    )
    return "logits" if getattr(model, "output_is_logits", is_sage) else "probabilities"


def _gathered_arguments(model: Any, config: BundleConfig, sample_layout: str) -> Any:
    """A compact/sparse node bundle's decoding arguments (:func:`_decode_gathered`); None for
    the dense layout."""
    if sample_layout == "dense":
        return None
    if config.typed is not None:
        return _typed_gathered(model, sample_layout)
    return dict(
        fanouts=list(config.fanouts),
        width=config.feature_dim,
        dtype=config.options.get("dtype") or "float32",
        layout_name=sample_layout,
        pad=config.options.get("low_degree", "pad") == "pad",
    )


def _node_warmup_blob(model: Any, config: BundleConfig, sample_layout: str) -> bytes:
    """The blob of a node bundle's warmup request: a node with no features in the bundle's
    layout."""
    if sample_layout == "dense":
        return warmup_blob(config.sections)
    from memgraph_tf.ops import sample_decoding

    if config.typed is not None:
        return sample_decoding.zero_typed_node_blob(
            model.spec, model.feature_dims, model.feature_dtype, layout_name=sample_layout
        )
    return sample_decoding.zero_node_blob(
        list(config.fanouts),
        config.feature_dim,
        config.options.get("dtype") or "float32",
        layout_name=sample_layout,
        pad=config.options.get("low_degree", "pad") == "pad",
    )


def check_name_and_version(name: Any, version: Any) -> None:
    """Raises BundleError (key ``name`` or ``version``) unless ``name`` is a model name TF Serving
    and the bundle layout accept (letters, digits, ``_``, ``.``, ``-``) and ``version`` an int
    >= 1 (a version directory); the one check of both exports."""
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9_.\-]+", name):
        raise BundleError(
            f"name: expected letters, digits, '_', '.', '-', got {name!r}", key="name"
        )
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise BundleError(
            f"version: expected an int >= 1 (TF Serving version directory), got {version!r}",
            key="version",
        )


def check_blob_feature_key(blob_feature_key: Any) -> None:
    """Raises BundleError (key ``blob_feature_key``) unless it is a non-empty str."""
    if not blob_feature_key or not isinstance(blob_feature_key, str):
        raise BundleError(
            f"blob_feature_key: expected a non-empty str, got {blob_feature_key!r}",
            key="blob_feature_key",
        )


def set_model_dtype(options: dict[str, Any], dtype: str) -> None:
    """Sets the sampling ``options``' ``dtype`` to the model's feature ``dtype``; BundleError (key
    ``sample_options``) where the options ask for another one."""
    if options.get("dtype") not in (None, dtype):
        raise BundleError(
            f"sample_options: dtype: expected the model's feature dtype {dtype!r}, got "
            f"{options['dtype']!r}",
            key="sample_options",
        )
    options["dtype"] = dtype


def check_version_labels(labels: Mapping[str, int] | None) -> None:
    """Raises BundleError (key ``labels``) unless every entry of ``labels`` (None: none) maps a
    version label of letters, digits, ``_`` and ``-`` to an int version."""
    for lbl, v in (labels or {}).items():
        if not re.fullmatch(r"[A-Za-z0-9_\-]+", str(lbl)) or not isinstance(v, int):
            raise BundleError(
                f"labels: expected {{label: version int}}, got {lbl!r}: {v!r}", key="labels"
            )


def save_bundle(
    base_dir: str | os.PathLike,
    config: BundleConfig,
    make_module: Callable[[Any, Any], Any],
    *,
    methods: Mapping[str, str],
    warmup: Callable[[], bytes] | None,
    warmup_requests: Sequence[tuple[str, str]],
    labels: Mapping[str, int] | None,
    serving_base_path: str,
    overwrite: bool,
) -> BundleInfo:
    """Writes version ``config.version`` of model ``config.model_name`` under ``base_dir``, the
    one writer of node and link bundles: the SavedModel of ``make_module(labels asset, config
    asset)`` (a tf.Module whose ``signature_functions()`` gives ``{name: concrete function}``)
    with :func:`save_options`, the assets of ``config``, TF Serving's method name on each
    signature of ``methods``, the op library where ``config.use_op``, and (``warmup`` given) one
    warmup record per ``(PredictionLog field, signature)`` of ``warmup_requests`` holding the blob
    ``warmup()`` returns; then merges the version and ``labels`` into ``base_dir/models.config``.

    Guarantees: the version directory appears whole or not at all (written beside it, then
    renamed over any old one); an existing version raises BundleExistsError unless
    ``overwrite``, before anything is written."""
    import tensorflow as tf

    name, version, use_op = config.model_name, config.version, config.use_op
    base = pathlib.Path(base_dir)
    model_dir = base / name
    final = model_dir / bundle.version_dir_name(version)
    if final.exists() and not overwrite:
        raise BundleExistsError(
            f"{final}: version {version} of model {name!r} exists "
            f"(pass overwrite=True to replace it)"
        )
    model_dir.mkdir(parents=True, exist_ok=True)

    if use_op:
        from memgraph_tf import ops

        ops.load_library()  # build (cached) and register the op before tracing
    with tempfile.TemporaryDirectory(prefix=f".{name}-{version}-", dir=model_dir) as tmp:
        tmp_path = pathlib.Path(tmp)
        src = tmp_path / "src"
        src.mkdir()
        labels_path, config_path = bundle.write_assets(src, config)
        module = make_module(
            tf.saved_model.Asset(str(labels_path)), tf.saved_model.Asset(str(config_path))
        )
        out = tmp_path / "out"
        # Each signature is traced once, here. The functions are not attributes of the module:
        # tf.saved_model.save traces a module's tf.function attributes again to serialize them,
        # and the bundle is served through its signatures only.
        signatures = module.signature_functions()
        tf.saved_model.save(module, str(out), signatures=signatures, options=save_options())
        _set_method_names(out, methods)
        if use_op:
            _bundle_op_library(out)
        if warmup is not None:
            _write_warmup(out, warmup(), config.blob_feature_key, name, warmup_requests)
        if final.exists():
            shutil.rmtree(final)
        os.replace(out, final)
    models_config = _write_models_config(
        base, name, [version], dict(labels or {}), serving_base_path
    )
    return BundleInfo(
        final, models_config, name, version, use_op, tuple(signatures), config.to_dict()
    )


def save_options() -> Any:
    """The ``tf.saved_model.SaveOptions`` of every bundle: no custom gradients are saved (a bundle
    answers inference requests only; a training gradient captured in a traced function, such as
    the CSR product's in :mod:`memgraph_tf.client.graphsage`, need not be serializable)."""
    import tensorflow as tf

    return tf.saved_model.SaveOptions(experimental_custom_gradients=False)


def _set_method_names(saved_dir: pathlib.Path, methods: Mapping[str, str]) -> None:
    """Give each signature of ``methods`` TF Serving's method name (regress checks it always,
    classify under ``tensorflow_model_server --enable_signature_method_name_check``)."""
    from tensorflow.core.protobuf import saved_model_pb2

    pb = saved_dir / "saved_model.pb"
    sm = saved_model_pb2.SavedModel()
    sm.ParseFromString(pb.read_bytes())
    for mg in sm.meta_graphs:
        for sig, method in methods.items():
            if sig in mg.signature_def:
                mg.signature_def[sig].method_name = method
    pb.write_bytes(sm.SerializeToString(deterministic=True))


def warmup_blob(sections: Mapping[str, tuple[str, Sequence[int]]]) -> bytes:
    """A blob holding every section of ``sections`` filled with zeros (false for bool, empty
    strings, empty rows for a ragged pair ``name`` + ``.row_splits``): a node with no features,
    used for warmup requests."""
    import numpy as np

    from memgraph_tf import blob

    out: dict[str, Any] = {}
    for k, (dt, shape) in sections.items():
        if k.endswith(ROW_SPLITS):
            continue
        if k + ROW_SPLITS in sections:
            rows = sections[k + ROW_SPLITS][1][0]
            out[k] = blob.Ragged(np.array([], dtype=object), np.zeros(rows, np.int64))
        elif dt == "string":
            out[k] = np.full(tuple(shape), "", dtype=object)
        else:
            out[k] = np.zeros(tuple(shape), dtype=np.bool_ if dt == "bool" else dt)
    return blob.pack(out)


def _write_warmup(
    version_dir: pathlib.Path,
    warm: bytes,
    blob_feature_key: str,
    name: str,
    requests: Sequence[tuple[str, str]],
) -> None:
    """TF Serving's warmup file: for each ``(PredictionLog field, signature)`` of ``requests``
    (e.g. ``("classify_log", "classify")``) one request of model ``name`` with one tf.Example
    holding ``warm`` as its ``blob_feature_key``."""
    import tensorflow as tf
    from tensorflow.core.example import example_pb2
    from tensorflow_serving.apis import prediction_log_pb2

    ex = example_pb2.Example()
    ex.features.feature[blob_feature_key].bytes_list.value.append(warm)
    records = []
    for kind, signature in requests:
        entry = prediction_log_pb2.PredictionLog()
        req = getattr(entry, kind).request
        req.model_spec.name = name
        req.model_spec.signature_name = signature
        req.input.example_list.examples.append(ex)
        records.append(entry.SerializeToString())
    path = bundle.warmup_path(version_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    with tf.io.TFRecordWriter(str(path)) as writer:
        for record in records:
            writer.write(record)


def _typed_settings(
    model: Any,
    properties: Any,
    options: dict[str, Any],
    schema: Mapping[str, Any] | None,
    sections: Any,
    layout: str | None,
) -> dict[str, Any] | None:
    """A typed model's ``typed`` config entry (and ``options`` completed with its dtype), None for
    any other model; BundleError naming the parameter for settings that do not fit it."""
    import json

    from memgraph_tf.typed_sampling import TypedSamplingSpec

    spec = getattr(model, "spec", None)
    if not isinstance(spec, TypedSamplingSpec) or not getattr(model, "typed_inputs", True):
        return None
    if sections is not None:
        raise BundleError(
            "sections: expected none for a typed model (its typed sections are fixed)",
            key="sections",
        )
    set_model_dtype(options, getattr(model, "feature_dtype", "float32"))
    if options.get("label") not in (None, spec.seed_label):
        raise BundleError(
            f"sample_options: label: expected the typed model's seed label {spec.seed_label!r}, "
            f"got {options['label']!r}",
            key="sample_options",
        )
    # options.label is the seed label, as in the sample_typed call: batch inference selects the
    # nodes of that label by default (memgraph_tf.client.node_tables.bundle_selection)
    options["label"] = spec.seed_label
    encoders = getattr(model, "label_encoders", None) or {}
    if encoders:  # the raw property columns of these labels: the bundle's sample_typed calls
        options["feature_spec"] = {label: enc.spec.to_dict() for label, enc in encoders.items()}
    edge_encoders = getattr(model, "edge_encoders", None) or {}
    if edge_encoders:  # the relationship properties of these steps, beside their slots
        options["edge_feature_spec"] = {p: enc.spec.to_dict() for p, enc in edge_encoders.items()}
    widths = {label: w for label, w in model.feature_dims.items() if label not in encoders}
    if isinstance(properties, Mapping):
        props = {str(k): [str(n) for n in v] for k, v in properties.items()}
    elif getattr(model, "properties", None) and list(properties) == ["features"]:
        props = json.loads(json.dumps(model.properties))
    else:
        props = {label: [str(n) for n in properties] for label, w in widths.items() if w}
    featured = sorted(label for label, w in widths.items() if w)
    if sorted(props) != featured:
        raise BundleError(
            f"properties: expected feature properties for exactly the labels the model has "
            f"features for ({', '.join(featured) or 'none'}), got {sorted(props)}",
            key="properties",
        )
    # (label names are the keys here: TypedSampling checks them as labels, not as option keys)
    if schema is None:
        schema = getattr(model, "schema", None)
    try:
        entry = bundle.TypedSampling(spec.seed_label, spec.num_neighbors(), props).to_dict()
    except BundleError as exc:
        raise BundleError(f"properties: {exc}", key="properties") from None
    if schema is not None:
        bundle.check_plain_json(json.loads(json.dumps(schema)), "schema")
        entry["schema"] = json.loads(json.dumps(schema))
    return entry


def _typed_sections(model: Any, layout: str = "dense") -> dict[str, tuple[str, tuple[int, ...]]]:
    """The per-node typed blob sections a typed model reads (n = 1): in the dense layout its
    inputs, ``[1, slots, ...]``; in the compact and sparse layouts every section but ``labels``
    (the index and table sections, ``-1`` for a length that varies from blob to blob). From
    :func:`memgraph_tf.layout.typed_sample_sections`."""
    from memgraph_tf import layout as blob_layout
    from memgraph_tf.typed_sampling import EdgeStep

    wanted = set(model.input_names())
    encoders = getattr(model, "label_encoders", None) or {}
    raw = {label: blob_layout.RawWidths(**enc.group_widths) for label, enc in encoders.items()}
    edge_encoders = getattr(model, "edge_encoders", None) or {}
    edges = {
        EdgeStep.parse(p): blob_layout.RawWidths(**enc.group_widths)
        for p, enc in edge_encoders.items()
    }
    widths = {label: w for label, w in model.feature_dims.items() if label not in encoders}
    return {
        s.name: (s.dtype, tuple(s.shape))
        for s in blob_layout.typed_sample_sections(
            model.spec,
            widths,
            model.feature_dtype,
            batch=1,
            layout=layout,
            raw=raw or None,
            edges=edges or None,
        )
        if (s.name in wanted if layout == "dense" else s.role != "labels")
    }


def _typed_gathered(model: Any, layout: str) -> dict[str, Any]:
    """A typed compact/sparse bundle's decoding arguments (:func:`_decode_gathered`): a label
    with an encoder reads raw tables (``raw``), no feature table."""
    from memgraph_tf import layout as blob_layout

    encoders = getattr(model, "label_encoders", None) or {}
    raw = {label: blob_layout.RawWidths(**enc.group_widths) for label, enc in encoders.items()}
    return dict(
        spec=model.spec,
        widths={label: w for label, w in model.feature_dims.items() if label not in encoders},
        dtype=model.feature_dtype,
        layout_name=layout,
        raw=raw or None,
        inputs=list(model.input_names()),
    )


def _decode_gathered(blobs: Any, unpack: Any, gathered: dict[str, Any]) -> dict[str, Any]:
    """Per-node compact/sparse blobs to the model's dense inputs, ``[batch, ...]``:
    :func:`memgraph_tf.ops.sample_decoding.decode_sample`, or for a typed bundle (``gathered`` from
    :func:`_typed_gathered`) :func:`~memgraph_tf.ops.sample_decoding.decode_typed_sample` with only
    the
    model's inputs kept."""
    from memgraph_tf.ops import sample_decoding

    args = dict(gathered)
    inputs = args.pop("inputs", None)
    decode = (
        sample_decoding.decode_sample if inputs is None else sample_decoding.decode_typed_sample
    )
    tensors = decode(blobs, unpack=unpack, **args)
    return {  # (a raw bag's flat values and splits run over the whole batch already)
        n: t if n.startswith("bag_h") else t[:, 0]
        for n, t in tensors.items()
        if inputs is None or n in inputs
    }


ROW_SPLITS = ROW_SPLITS_SUFFIX
"""The suffix of a ragged section's row splits (a typed blob's ``bag_*`` sections)."""


def decode_with_bags(
    blobs: Any, unpack: Any, sections: Mapping[str, tuple[str, Sequence[int]]]
) -> dict[str, Any]:
    """``{name: [batch, ...]}`` of a vector of one-row typed blobs whose ``sections`` include
    ragged pairs (raw ``bag_*`` sections and their ``.row_splits``): dense sections as
    :meth:`decode_sections` gives them; each ragged pair as its flat values and row splits over
    the whole batch (rows row-major over ``[batch, slots, columns]``), the form a
    :class:`~memgraph_tf.client.feature_encoding.LabelEncoder` reads."""
    names = [n for n in sections if not n.endswith(ROW_SPLITS)]
    ragged = [n for n in names if n + ROW_SPLITS in sections]
    dtypes = [sections[n][0] for n in names]
    shapes = [[None] if n in ragged else list(sections[n][1]) for n in names]
    tensors = unpack(blobs, names, dtypes, ragged=ragged, shapes=shapes)
    out: dict[str, Any] = {}
    for name, t in zip(names, tensors):
        if name in ragged:  # [batch, (rows), (values)]: the rows of every blob, in order
            out[name] = t.flat_values
            out[name + ROW_SPLITS] = t.values.row_splits
        else:
            out[name] = t[:, 0]
    return out


def _sample_layout(layout: str | None, options: dict[str, Any], sections: Any) -> str:
    """The bundle's sample layout from ``layout`` and ``options["layout"]`` (which it is written
    back to when given); BundleError naming the parameter for an unknown or conflicting one, or for
    custom ``sections`` with a layout other than dense."""
    from memgraph_tf import layout as blob_layout

    given = options.get("layout")
    if layout is not None and given is not None and layout != given:
        raise BundleError(
            f"layout: expected the same layout as sample_options['layout'] ({given!r}), got "
            f"{layout!r}",
            key="layout",
        )
    chosen = layout if layout is not None else (given if given is not None else "dense")
    if chosen not in blob_layout.LAYOUTS:
        raise BundleError(
            f"layout: expected one of {list(blob_layout.LAYOUTS)}, got {chosen!r}", key="layout"
        )
    if layout is not None:
        options["layout"] = layout
    if sections is not None and chosen != "dense":
        raise BundleError(
            f"sections: expected none (the {chosen} layout's sections are fixed), got custom "
            f"sections",
            key="sections",
        )
    return chosen


def _bundle_op_library(version_dir: pathlib.Path) -> None:
    import tensorflow as tf

    from memgraph_tf import ops

    so = pathlib.Path(ops.build_library())
    dest = bundle.op_library_dir(version_dir)
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copy2(so, dest / so.name)
    bundle.write_op_library_info(
        version_dir,
        bundle.OpLibraryInfo(
            library=so.name,
            ops=bundle.OP_NAMES,
            tf_version=tf.__version__,
            tf_git_version=tf.version.GIT_VERSION,
            cxx11_abi_flag=[f for f in tf.sysconfig.get_compile_flags() if f.startswith("-D")],
            sha256=hashlib.sha256(so.read_bytes()).hexdigest(),
        ),
    )


def tf_variables(model: Any) -> list[Any]:
    """The tf.Variables of ``model``, unwrapped from Keras 3's keras.Variable wrappers, for a
    bundle's module to track. Without them the SavedModel loads through tf.saved_model.load but
    not the TF1 way TF Serving (and saved_model_cli) load it -- session + restore op: the restore
    op fills other handles than the ones the signatures read, and every request fails with "Could
    not find variable dense/bias" (keras-team/keras#20095, tensorflow/serving#2250)."""
    import tensorflow as tf

    return [v if isinstance(v, tf.Variable) else v.value for v in getattr(model, "variables", ())]


@functools.cache
def module_base_class() -> type:
    """The ``tf.Module`` base class of every bundle's exported object (node and link bundles),
    made on the first call (importing this module needs no TensorFlow). An instance
    ``(name, model, config, labels asset, config asset)`` tracks the model, its variables
    (:func:`tf_variables`, for TF Serving's session load) and the two assets, and gives what both
    bundles' signatures share: :meth:`unpack` (the C++ op or the op-free decoder, as
    ``config.use_op``), :meth:`decode_sections`, :meth:`parse_blobs` (the blob feature of
    serialized tf.Examples), :meth:`class_outputs`, the ``config`` signature's function and
    :meth:`trace`."""
    import tensorflow as tf

    class BundleModuleBase(tf.Module):
        """What every bundle's exported object holds, and the signature parts they share."""

        def __init__(self, name, model, config, labels_asset, config_asset):
            super().__init__(name=name)
            self.model = model
            self.model_tf_variables = tf_variables(model)
            self.labels_asset = labels_asset
            self.config_asset = config_asset
            self._blob_key = config.blob_feature_key
            self._use_op = config.use_op
            self._config_text = config.to_json()

        def unpack(self):
            """The blob decoder: :func:`memgraph_tf.ops.unpack_blob` (the C++ op) or
            :func:`~memgraph_tf.ops.unpack_blob_portable` (stock ops only)."""
            from memgraph_tf import ops

            return ops.unpack_blob if self._use_op else ops.unpack_blob_portable

        def decode_sections(self, blobs, sections):
            """``{name: [batch, ...]}``: the ``sections`` (``{name: (dtype, [1, ...])}``) of a
            vector of one-row blobs (``n = 1``: ``[batch, 1, ...]`` -> ``[batch, ...]``)."""
            names = list(sections)
            dtypes = [sections[n][0] for n in names]
            shapes = [list(sections[n][1]) for n in names]
            tensors = self.unpack()(blobs, names, dtypes, shapes=shapes)
            return {n: t[:, 0] for n, t in zip(names, tensors)}

        def parse_blobs(self, inputs):
            """The blob of each serialized tf.Example of ``inputs`` (the single value of the
            bytes feature ``blob_feature_key``)."""
            parsed = tf.io.parse_example(
                inputs, {self._blob_key: tf.io.FixedLenFeature([], tf.string)}
            )
            return parsed[self._blob_key]

        @staticmethod
        def class_outputs(scores, class_names):
            """TF Serving's classify outputs: ``classes`` (every label, per row) and ``scores``."""
            labels = tf.constant(list(class_names), dtype=tf.string)
            classes = tf.tile(labels[None, :], [tf.shape(scores)[0], 1])
            return {bundle.CLASSES_OUTPUT: classes, bundle.SCORES_OUTPUT: scores}

        def config(self, unused):
            del unused
            return {bundle.CONFIG_OUTPUT: tf.constant(self._config_text, dtype=tf.string)}

        @staticmethod
        def trace(fn, *specs):
            """``fn`` as a ``tf.function`` of the input signature ``specs`` (no autograph)."""
            return tf.function(fn, input_signature=list(specs), autograph=False)

    return BundleModuleBase


def _make_module_class():
    import tensorflow as tf

    class BundleModule(module_base_class()):
        """The exported object of a node bundle: the Keras model plus decoding and the three
        signatures, and the ``embed`` signature for a model with ``encode``."""

        def __init__(self, model, config, logits, labels_asset, config_asset, gathered=None):
            super().__init__("memgraph_tf_bundle", model, config, labels_asset, config_asset)
            self._sections = dict(config.sections)
            self._class_names = list(config.class_names)
            self._logits = logits
            self._gathered = gathered  # compact/sparse: decode_sample's layout arguments

        def _decode(self, blobs):
            if self._gathered is not None:  # gathered/densified back to the dense model inputs
                return _decode_gathered(blobs, self.unpack(), self._gathered)
            if any(n.endswith(ROW_SPLITS) for n in self._sections):
                return decode_with_bags(blobs, self.unpack(), self._sections)
            return self.decode_sections(blobs, self._sections)

        def _table_logits(self, blobs, encode=False):
            """A GraphSAGE's logits (``encode``: its last hidden layer) over compact/sparse
            blobs, each table row read once (``GraphSAGE.call_table`` / ``encode_table``); None
            for another model or the dense layout."""
            model = self.model
            if (
                self._gathered is None
                # the project's GraphSAGE itself, by name (serving never imports the client
                # package); a subclass may compute otherwise
                or type(model).__module__ != "memgraph_tf.client.graphsage"
                or type(model).__name__ != "GraphSAGE"
            ):
                return None
            from memgraph_tf.ops import sample_decoding

            table = sample_decoding.decode_sample_rows(
                blobs, unpack=self.unpack(), **self._gathered
            )
            # per-node blobs have n = 1: [batch, 1, ...] -> [batch, ...]
            inputs = model.table_inputs(
                table.rows,
                [index[:, 0] for index in table.index],
                [None if mask is None else mask[:, 0] for mask in table.masks],
            )
            return model.encode_table(inputs) if encode else model.call_table(inputs)

        def _scores(self, blobs):
            out = self._table_logits(blobs)
            if out is None:
                out = self.model(self._decode(blobs), training=False)
            out = tf.cast(out, tf.float32)
            return tf.nn.softmax(out, axis=-1) if self._logits else out

        def signature_functions(self):
            """``{signature name: concrete function}``, each traced once. The argument names are
            the signatures' input keys (bundle.CLASSIFY_INPUT, PREDICT_INPUT, CONFIG_INPUT); the
            TensorSpec names repeat them for the graph."""
            specs = {
                CLASSIFY_SIGNATURE: (
                    self.classify,
                    tf.TensorSpec([None], tf.string, name=bundle.CLASSIFY_INPUT),
                ),
                PREDICT_SIGNATURE: (
                    self.predict,
                    tf.TensorSpec([None], tf.string, name=bundle.PREDICT_INPUT),
                ),
                CONFIG_SIGNATURE: (
                    self.config,
                    tf.TensorSpec(None, tf.int64, name=bundle.CONFIG_INPUT),
                ),
            }
            if callable(getattr(self.model, "encode", None)):
                specs[bundle.EMBED_SIGNATURE] = (
                    self.embed,
                    tf.TensorSpec([None], tf.string, name=bundle.EMBED_INPUT),
                )
            return {
                name: self.trace(fn, spec).get_concrete_function()
                for name, (fn, spec) in specs.items()
            }

        def classify(self, inputs):
            return self.class_outputs(self._scores(self.parse_blobs(inputs)), self._class_names)

        def embed(self, blobs):
            """The model's last hidden layer (``encode``) for each blob, float32 ``[batch, D]``."""
            out = self._table_logits(blobs, encode=True)
            if out is None:
                out = self.model.encode(self._decode(blobs), training=False)
            return {bundle.EMBEDDINGS_OUTPUT: tf.cast(out, tf.float32)}

        def predict(self, blobs):
            scores = self._scores(blobs)
            ids = tf.argmax(scores, axis=-1, output_type=tf.int64)
            labels = tf.constant(self._class_names, dtype=tf.string)
            return {
                bundle.SCORES_OUTPUT: scores,
                bundle.CLASS_IDS_OUTPUT: ids,
                bundle.CLASSES_OUTPUT: tf.gather(labels, ids),
            }

    return BundleModule


def lazy_class(make: Callable[[], type]) -> Callable[..., Any]:
    """A factory standing in for the class ``make()`` returns: the class is made on the first call
    (so importing the module needs no TensorFlow) and reused after; each call returns an
    instance built with the call's arguments."""
    made: list[type] = []

    def instance(*args: Any) -> Any:
        if not made:
            made.append(make())
        return made[0](*args)

    return instance


_BundleModule = lazy_class(_make_module_class)
