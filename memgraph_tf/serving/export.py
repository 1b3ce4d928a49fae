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
TensorFlow ops (``use_op=False``: runs on the stock ``tensorflow/serving`` image).

Credentials rule: nothing in a bundle comes from the graph connection. The exporter never takes a
source object; ``sample_options`` is checked for credential-like keys and values must be plain JSON.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import pathlib
import re
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)

BUNDLE_FORMAT = "memgraph-tf-bundle"
BUNDLE_FORMAT_VERSION = 1
CONFIG_ASSET = "memgraph_tf_bundle.json"
LABELS_ASSET = "class_labels.txt"
OP_LIBRARY_INFO = "op_library.json"
CLASSIFY_SIGNATURE = "classify"
PREDICT_SIGNATURE = "serving_default"
CONFIG_SIGNATURE = "memgraph_tf_config"
OP_NAMES = ("MemgraphTf>UnpackBlob",)
CLASSIFY_METHOD_NAME = "tensorflow/serving/classify"
WARMUP_FILE = "tf_serving_warmup_requests"  # TF Serving's name, under assets.extra/

_CREDENTIAL_KEY = re.compile(r"(uri|url|host|auth|user|passw|secret|token|credential|key)", re.I)


@dataclass(frozen=True)
class BundleInfo:
    """What :func:`export_bundle` wrote."""

    path: pathlib.Path  # BASE/NAME/VERSION
    models_config: pathlib.Path  # BASE/models.config
    name: str
    version: int
    use_op: bool
    signatures: tuple[str, ...]
    config: dict


def default_sections(fanouts: Sequence[int], feature_dim: int, *, masks: bool = True,
                     dtype: str = "float32") -> dict[str, tuple[str, tuple[int, ...]]]:
    """The per-node blob sections a GraphSAGE model with these ``fanouts`` reads, as
    ``{name: (dtype, per-node shape)}``: ``features_h`` (``dtype``) ``[1, f1..fh, d]`` for
    h = 0..H and, with ``masks``, ``mask_h`` bool ``[1, f1..fh]`` for h = 1..H (the sample layout
    with n = 1; the query modules write masks when ``options.low_degree`` is ``"pad"``), built from
    :func:`memgraph_tf.layout.model_input_sections`."""
    from memgraph_tf import layout

    sections = layout.model_input_sections([int(f) for f in fanouts], int(feature_dim), dtype, masks=masks, batch=1)
    return {s.name: (s.dtype, tuple(s.shape)) for s in sections}


def _check_json(value: Any, where: str) -> None:
    if isinstance(value, Mapping):
        for k, v in value.items():
            if not isinstance(k, str):
                raise ValueError(f"{where}: expected string keys, got {k!r}")
            if _CREDENTIAL_KEY.search(k):
                raise ValueError(
                    f"{where}: key {k!r} looks like a connection setting or credential; a bundle "
                    f"must never hold the graph URI, user name or password"
                )
            _check_json(v, f"{where}.{k}")
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            _check_json(v, f"{where}[{i}]")
    elif not (value is None or isinstance(value, (str, int, float, bool))):
        raise ValueError(f"{where}: expected JSON values (str, int, float, bool, None, lists, "
                         f"dicts), got {type(value).__name__}")


def _model_attr(model: Any, name: str, given: Any) -> Any:
    if given is not None:
        return given
    value = getattr(model, name, None)
    if value is None:
        raise ValueError(f"{name}: not given and the model has no {name!r} attribute")
    return value


def _write_models_config(base: pathlib.Path, name: str, versions: list[int],
                         labels: Mapping[str, int], serving_base_path: str) -> pathlib.Path:
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
        wanted = sorted(set(merged.values()) | set(entry.model_version_policy.specific.versions)
                        | {max(versions)})
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
    blob_feature_key: str = "blob",
    fanouts: Sequence[int] | None = None,
    feature_dim: int | None = None,
    properties: Sequence[str] = ("features",),
    sample_options: Mapping[str, Any] | None = None,
    sections: Mapping[str, tuple[str, Sequence[int]]] | None = None,
    scores: str = "auto",
    labels: Mapping[str, int] | None = None,
    serving_base_path: str = "/models",
    overwrite: bool = False,
    warmup: bool = True,
) -> BundleInfo:
    """Export ``model`` (a Keras model called with ``{section name: tensor [batch, ...]}`` and
    returning ``[batch, k]`` scores) to ``base_dir/name/version/`` and update
    ``base_dir/models.config``.

    Guarantees: the version directory appears whole or not at all (written beside it, then
    renamed); the ``classify`` signature meets TF Serving's classifier contract; with
    ``use_op=False`` the graph holds stock TensorFlow ops only; nothing from a graph connection is
    written (``sample_options`` with a credential-like key raises ValueError). ``fanouts``,
    ``feature_dim`` and ``class_names`` default to the model's attributes of those names.
    ``scores``: ``"probabilities"`` (the model's output used as is), ``"logits"`` (softmax
    applied) or ``"auto"`` (logits when the model has a true ``output_is_logits`` attribute, else
    probabilities; :class:`memgraph_tf.client.GraphSAGE` is known to return logits). ``labels`` maps
    version labels
    to versions in models.config. Raises FileExistsError if the version exists and not
    ``overwrite``; ValueError naming the parameter for bad arguments.
    """
    import tensorflow as tf

    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9_.\-]+", name):
        raise ValueError(f"name: expected letters, digits, '_', '.', '-', got {name!r}")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise ValueError(f"version: expected an int >= 1 (TF Serving version directory), got "
                         f"{version!r}")
    if not isinstance(use_op, bool):
        raise ValueError(f"use_op: expected True or False, got {use_op!r}")
    if scores not in ("auto", "probabilities", "logits"):
        raise ValueError(f"scores: expected 'auto', 'probabilities' or 'logits', got {scores!r}")
    if not blob_feature_key or not isinstance(blob_feature_key, str):
        raise ValueError(f"blob_feature_key: expected a non-empty str, got {blob_feature_key!r}")
    if class_names is None and getattr(model, "class_names", None) is None:
        raise ValueError("class_names: not given and the model has none; pass class_names=[...] "
                         "(one label per score column)")
    class_names = [str(c) for c in _model_attr(model, "class_names", class_names)]
    if not class_names or len(set(class_names)) != len(class_names):
        raise ValueError(f"class_names: expected unique labels, got {class_names!r}")
    if any("\n" in c for c in class_names):
        raise ValueError(f"class_names: expected labels without newlines, got {class_names!r}")
    fanouts = [int(f) for f in _model_attr(model, "fanouts", fanouts)]
    feature_dim = int(_model_attr(model, "feature_dim", feature_dim))
    options = dict(sample_options or {})
    _check_json(options, "sample_options")
    if sections is None:
        sections = default_sections(
            fanouts, feature_dim, masks=options.get("low_degree", "pad") == "pad",
            dtype=options.get("dtype") or "float32")
    sections = {k: (str(dt), tuple(int(d) for d in shape)) for k, (dt, shape) in sections.items()}
    _check_json(list(properties), "properties")
    if labels:
        for lbl, v in labels.items():
            if not re.fullmatch(r"[A-Za-z0-9_\-]+", str(lbl)) or not isinstance(v, int):
                raise ValueError(f"labels: expected {{label: version int}}, got {lbl!r}: {v!r}")
    if scores == "auto":
        # memgraph_tf.client.GraphSAGE returns logits; other models say so with output_is_logits.
        is_sage = type(model).__name__ == "GraphSAGE" and \
            type(model).__module__ == "memgraph_tf.client.graphsage"
        scores = "logits" if getattr(model, "output_is_logits", is_sage) else "probabilities"
    if hasattr(model, "ensure_built"):
        model.ensure_built()  # create a subclassed model's weights outside the traced functions

    base = pathlib.Path(base_dir)
    model_dir = base / name
    final = model_dir / str(version)
    if final.exists() and not overwrite:
        raise FileExistsError(f"{final}: version {version} of model {name!r} exists "
                              f"(pass overwrite=True to replace it)")
    model_dir.mkdir(parents=True, exist_ok=True)

    config = {
        "format": BUNDLE_FORMAT,
        "format_version": BUNDLE_FORMAT_VERSION,
        "model_name": name,
        "version": version,
        "use_op": use_op,
        "blob_feature_key": blob_feature_key,
        "class_names": class_names,
        "fanouts": fanouts,
        "feature_dim": feature_dim,
        "properties": list(properties),
        "options": options,
        "sections": {k: {"dtype": dt, "shape": list(shape)} for k, (dt, shape) in sections.items()},
        "scores": scores,
        "tensorflow_version": tf.__version__,
    }
    config_text = json.dumps(config, indent=2, sort_keys=True)

    if use_op:
        from memgraph_tf import ops

        ops.load_library()  # build (cached) and register the op before tracing
    with tempfile.TemporaryDirectory(prefix=f".{name}-{version}-", dir=model_dir) as tmp:
        tmp_path = pathlib.Path(tmp)
        src = tmp_path / "src"
        src.mkdir()
        (src / LABELS_ASSET).write_text("\n".join(class_names) + "\n")
        (src / CONFIG_ASSET).write_text(config_text)
        module = _BundleModule(model, sections, class_names, blob_feature_key, use_op,
                               scores == "logits", config_text,
                               tf.saved_model.Asset(str(src / LABELS_ASSET)),
                               tf.saved_model.Asset(str(src / CONFIG_ASSET)))
        out = tmp_path / "out"
        signatures = {
            CLASSIFY_SIGNATURE: module.classify.get_concrete_function(),
            PREDICT_SIGNATURE: module.predict.get_concrete_function(),
            CONFIG_SIGNATURE: module.config.get_concrete_function(),
        }
        tf.saved_model.save(module, str(out), signatures=signatures)
        _set_classify_method_name(out)
        if use_op:
            _bundle_op_library(out)
        if warmup:
            _write_warmup(out, sections, blob_feature_key, name)
        if final.exists():
            shutil.rmtree(final)
        os.replace(out, final)
    models_config = _write_models_config(base, name, [version], dict(labels or {}),
                                         serving_base_path)
    log.info("exported %s version %d (%s) to %s", name, version,
             "C++ op" if use_op else "op-free", final)
    return BundleInfo(final, models_config, name, version, use_op, tuple(signatures), config)


def _set_classify_method_name(saved_dir: pathlib.Path) -> None:
    """Mark the classify signature with TF Serving's classify method name, so the bundle also
    passes ``tensorflow_model_server --enable_signature_method_name_check``."""
    from tensorflow.core.protobuf import saved_model_pb2

    pb = saved_dir / "saved_model.pb"
    sm = saved_model_pb2.SavedModel()
    sm.ParseFromString(pb.read_bytes())
    for mg in sm.meta_graphs:
        if CLASSIFY_SIGNATURE in mg.signature_def:
            mg.signature_def[CLASSIFY_SIGNATURE].method_name = CLASSIFY_METHOD_NAME
    pb.write_bytes(sm.SerializeToString(deterministic=True))


def warmup_blob(sections: Mapping[str, tuple[str, Sequence[int]]]) -> bytes:
    """A blob holding every section of ``sections`` filled with zeros (false for bool): a node
    with no features, used for warmup requests."""
    import numpy as np

    from memgraph_tf import blob

    return blob.pack({k: np.zeros(tuple(shape), dtype=np.bool_ if dt == "bool" else dt)
                      for k, (dt, shape) in sections.items()})


def _write_warmup(version_dir: pathlib.Path, sections, blob_feature_key: str, name: str) -> None:
    import tensorflow as tf
    from tensorflow.core.example import example_pb2
    from tensorflow_serving.apis import prediction_log_pb2

    ex = example_pb2.Example()
    ex.features.feature[blob_feature_key].bytes_list.value.append(warmup_blob(sections))
    log_entry = prediction_log_pb2.PredictionLog()
    req = log_entry.classify_log.request
    req.model_spec.name = name
    req.model_spec.signature_name = CLASSIFY_SIGNATURE
    req.input.example_list.examples.append(ex)
    dest = version_dir / "assets.extra"
    dest.mkdir(parents=True, exist_ok=True)
    with tf.io.TFRecordWriter(str(dest / WARMUP_FILE)) as writer:
        writer.write(log_entry.SerializeToString())


def _bundle_op_library(version_dir: pathlib.Path) -> None:
    import tensorflow as tf

    from memgraph_tf import ops

    so = pathlib.Path(ops.build_library())
    dest = version_dir.joinpath("assets.extra", "memgraph_tf")
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copy2(so, dest / so.name)
    info = {
        "library": so.name,
        "ops": list(OP_NAMES),
        "tf_version": tf.__version__,
        "tf_git_version": tf.version.GIT_VERSION,
        "cxx11_abi_flag": [f for f in tf.sysconfig.get_compile_flags() if f.startswith("-D")],
        "sha256": hashlib.sha256(so.read_bytes()).hexdigest(),
        "note": "load with tf.load_op_library before tf.saved_model.load; only valid for this "
                "TensorFlow version. TF Serving needs the op linked into tensorflow_model_server "
                "(docker/tf-serving-custom-op).",
    }
    (dest / OP_LIBRARY_INFO).write_text(json.dumps(info, indent=2, sort_keys=True))


def _make_module_class():
    import tensorflow as tf

    class BundleModule(tf.Module):
        """The exported object: the Keras model plus decoding and the three signatures."""

        def __init__(self, model, sections, class_names, blob_feature_key, use_op, logits,
                     config_text, labels_asset, config_asset):
            super().__init__(name="memgraph_tf_bundle")
            self.model = model
            # Track the tf.Variables under Keras 3's keras.Variable wrappers too. Without this the
            # SavedModel loads through tf.saved_model.load but not the TF1 way TF Serving (and
            # saved_model_cli) load it -- session + restore op: the restore op fills other
            # handles than the ones the signatures read, and every request fails with "Could not
            # find variable dense/bias" (keras-team/keras#20095, tensorflow/serving#2250).
            self.model_tf_variables = [
                v if isinstance(v, tf.Variable) else v.value
                for v in getattr(model, "variables", ())]
            self.labels_asset = labels_asset
            self.config_asset = config_asset
            self._sections = dict(sections)
            self._class_names = list(class_names)
            self._blob_key = blob_feature_key
            self._use_op = use_op
            self._logits = logits
            self._config_text = config_text

        def _decode(self, blobs):
            from memgraph_tf import ops

            names = list(self._sections)
            dtypes = [self._sections[n][0] for n in names]
            shapes = [list(self._sections[n][1]) for n in names]
            fn = ops.unpack_blob if self._use_op else ops.unpack_blob_portable
            tensors = fn(blobs, names, dtypes, shapes=shapes)
            # Per-node blobs have n = 1: [batch, 1, ...] -> [batch, ...]
            return {n: t[:, 0] for n, t in zip(names, tensors)}

        def _scores(self, blobs):
            out = self.model(self._decode(blobs), training=False)
            out = tf.cast(out, tf.float32)
            return tf.nn.softmax(out, axis=-1) if self._logits else out

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="inputs")], autograph=False)
        def classify(self, inputs):
            parsed = tf.io.parse_example(
                inputs, {self._blob_key: tf.io.FixedLenFeature([], tf.string)})
            scores = self._scores(parsed[self._blob_key])
            labels = tf.constant(self._class_names, dtype=tf.string)
            classes = tf.tile(labels[None, :], [tf.shape(scores)[0], 1])
            return {"classes": classes, "scores": scores}

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="blobs")], autograph=False)
        def predict(self, blobs):
            scores = self._scores(blobs)
            ids = tf.argmax(scores, axis=-1, output_type=tf.int64)
            labels = tf.constant(self._class_names, dtype=tf.string)
            return {"scores": scores, "class_ids": ids, "classes": tf.gather(labels, ids)}

        @tf.function(input_signature=[tf.TensorSpec(None, tf.int64, name="unused")], autograph=False)
        def config(self, unused):
            del unused
            return {"config_json": tf.constant(self._config_text, dtype=tf.string)}

    return BundleModule


_module_class = None


def _BundleModule(*args: Any) -> Any:  # noqa: N802 (a factory standing in for the class)
    global _module_class
    if _module_class is None:
        _module_class = _make_module_class()
    return _module_class(*args)
