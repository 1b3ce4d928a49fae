"""The model layer of ``memgraph-tf serve``: loading a model's SavedModel versions and answering
TF Serving's REST API for them, without any HTTP (that is :mod:`.server`).

- :func:`load_version` loads one ``BASE/<version>/`` SavedModel, ours or not, registering the
  ``MemgraphTf>UnpackBlob`` op first when its graph needs it: from the bundle's own op library
  (``assets.extra/memgraph_tf/``, when built for this TensorFlow) or the project's build.
- :class:`ModelServer` resolves ``NAME[/versions/N|/labels/L]``, runs ``:classify``,
  ``:regress`` and ``:predict`` through the loaded concrete signature functions (safe to call from
  many threads) and answers status and metadata; :meth:`ModelServer.handle` maps one request to
  ``(HTTP status, JSON body)`` and never raises for bad input. JSON conversion is
  :mod:`.rest_json`; ``{"node_id": ...}`` examples go through :mod:`.neighbourhoods`.
"""

from __future__ import annotations

import base64
import logging
import os
import pathlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from memgraph_tf.serving import bundle, errors, rest_json
from memgraph_tf.serving.bundle import BundleConfig
from memgraph_tf.serving.neighbourhoods import NeighbourhoodFetcher
from memgraph_tf.serving.errors import ServingFailure
from memgraph_tf.serving.rest_json import bad_request

logger = logging.getLogger(__name__)

DEFAULT_MAX_REQUEST_BYTES = 64 * 1024 * 1024
#: TF Serving's default signature name.
DEFAULT_SIGNATURE = "serving_default"

_PREDICT_RE = re.compile(
    r"/v1/models/([^/:]+)(?:/versions/(\d+)|/labels/([^/:]+))?:(classify|regress|predict)",
    re.IGNORECASE,
)
_STATUS_RE = re.compile(
    r"/v1/models(?:/([^/:]+))?(?:/versions/(\d+)|/labels/([^/:]+))?(/metadata)?", re.IGNORECASE
)
#: The HTTP status each neighbourhood failure is answered with.
NEIGHBOURHOOD_STATUS: dict[type[errors.NeighbourhoodError], int] = {
    errors.NodeIdError: 400,
    errors.NeighbourhoodDataError: 400,
    errors.GraphUnavailableError: 503,
    errors.GraphSourceError: 500,
}


# -------------------------------------------------------------------------------- model loading
@dataclass
class ModelVersion:
    """One loaded SavedModel version. ``bundle_config`` is None for SavedModels that are not
    memgraph-tf bundles."""

    version: int
    path: pathlib.Path
    signature_defs: dict[str, Any]  # name -> tensorflow.core.protobuf.meta_graph_pb2.SignatureDef
    functions: dict[str, Any]  # name -> concrete function
    bundle_config: BundleConfig | None = None
    loaded: Any = field(default=None, repr=False)


def _read_saved_model_proto(path: pathlib.Path):
    from tensorflow.core.protobuf import saved_model_pb2

    sm = saved_model_pb2.SavedModel()
    pb = path / "saved_model.pb"
    if pb.exists():
        sm.ParseFromString(pb.read_bytes())
    else:
        from google.protobuf import text_format

        text_format.Parse((path / "saved_model.pbtxt").read_text(), sm)
    return sm


def _serving_meta_graph(sm):
    for mg in sm.meta_graphs:
        if "serve" in mg.meta_info_def.tags:
            return mg
    if sm.meta_graphs:
        return sm.meta_graphs[0]
    raise ValueError("the SavedModel holds no meta graph")


def op_names(meta_graph) -> set[str]:
    """Every op a meta graph uses, in its graph and in its function library."""
    ops = {n.op for n in meta_graph.graph_def.node}
    for fn in meta_graph.graph_def.library.function:
        ops.update(n.op for n in fn.node_def)
    return ops


def _unregistered(names) -> list[str]:
    from tensorflow.python.framework import op_def_registry

    return sorted(op for op in names if op_def_registry.get(op) is None)


def _load_missing_ops(version_dir: pathlib.Path, missing: list[str]) -> None:
    """Register ops a SavedModel needs: the bundle's own op library when it was built for this
    TensorFlow version, else the project's (built and cached on demand)."""
    import tensorflow as tf

    try:
        info = bundle.read_op_library_info(version_dir)
    except ValueError as exc:  # a BundleError: fall back to the project's own build
        logger.warning("ignoring the bundle's op library: %s", exc)
        info = None
    if info is not None:
        so = bundle.op_library_dir(version_dir) / info.library
        if info.tf_version == tf.__version__ and so.is_file():
            logger.info("loading the bundle's op library %s for %s", so, missing)
            tf.load_op_library(str(so))
            if not _unregistered(missing):
                return
        else:
            logger.info(
                "the bundle's op library was built for TF %s, this is TF %s: using the "
                "project's own build", info.tf_version, tf.__version__,
            )
    if any(op.startswith("MemgraphTf") for op in missing):
        from memgraph_tf import ops as mgops

        mgops.load_library()


def load_version(version_dir: pathlib.Path, version: int) -> ModelVersion:
    """Load one ``BASE/<version>`` SavedModel, registering any custom op it needs first, with its
    bundle config when it is a memgraph-tf bundle. Raises ValueError naming the directory and the
    ops when some op cannot be found, and :class:`~memgraph_tf.serving.errors.BundleError` when
    its bundle config breaks the contract."""
    import tensorflow as tf

    sm = _read_saved_model_proto(version_dir)
    mg = _serving_meta_graph(sm)
    missing = _unregistered(op_names(mg))
    if missing:
        _load_missing_ops(version_dir, missing)
        still = _unregistered(missing)
        if still:
            raise ValueError(
                f"{version_dir}: the SavedModel uses ops {still} that this TensorFlow "
                f"{tf.__version__} does not register, and no matching op library was found"
            )
    cfg = bundle.read_bundle_config(version_dir)
    loaded = tf.saved_model.load(str(version_dir))
    functions = {name: loaded.signatures[name] for name in loaded.signatures.keys()}
    sigdefs = {name: mg.signature_def[name] for name in mg.signature_def if name in functions}
    return ModelVersion(version, version_dir, sigdefs, functions, cfg, loaded)


# ------------------------------------------------------------------------------------ the model
class ModelServer:
    """Serves the versions of one model (``BASE/<version>/``, any all-digit version directory
    name) over TF Serving's REST semantics.

    ``labels`` maps a version label to a version number. ``graph_source`` (optional) is an object
    with ``sample_blobs_per_node(seeds, fanouts, properties, options) -> list[bytes]`` used for
    ``{"node_id": ...}`` examples; its settings come from each bundle's own config asset.
    ``max_request_bytes`` is read by the HTTP layer.
    """

    def __init__(
        self,
        base_path: str | os.PathLike,
        model_name: str | None = None,
        *,
        labels: Mapping[str, int] | None = None,
        graph_source: Any = None,
        max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES,
    ):
        self.base_path = pathlib.Path(base_path).resolve()
        if not self.base_path.is_dir():
            raise ValueError(f"model_base_path: expected a directory, got {str(base_path)!r}")
        if not isinstance(max_request_bytes, int) or max_request_bytes < 1:
            raise ValueError(
                f"max_request_bytes: expected an int >= 1, got {max_request_bytes!r}")
        self.model_name = model_name or self.base_path.name
        self.max_request_bytes = max_request_bytes
        self.graph_source = graph_source
        self.neighbourhoods = NeighbourhoodFetcher(graph_source) if graph_source is not None \
            else None
        found = bundle.discover_versions(self.base_path)
        if not found:
            raise ValueError(
                f"model_base_path: expected numbered version directories holding saved_model.pb "
                f"under {str(base_path)!r}, found none"
            )
        self.versions: dict[int, ModelVersion] = {}
        for v, path in found.items():
            self.versions[v] = load_version(path, v)
            logger.info("loaded %s version %d from %s (signatures: %s)", self.model_name, v,
                     path.name, sorted(self.versions[v].functions))
        self.labels = dict(labels or {})
        for lbl, v in self.labels.items():
            if v not in self.versions:
                raise ValueError(
                    f"labels: label {lbl!r} points at version {v}, expected one of "
                    f"{sorted(self.versions)}")

    # -- resolution
    def resolve(self, name: str, version: str | None, label: str | None) -> ModelVersion:
        """The version a request names (by number, label, or the newest); 404 / 400 otherwise."""
        if label is not None:
            if label not in self.labels or name != self.model_name:
                raise bad_request(f"Unrecognized servable version label: {label}")
            return self.versions[self.labels[label]]
        if name != self.model_name:
            req = f"Specific({name}, {version})" if version else f"Latest({name})"
            raise ServingFailure(404, f"Servable not found for request: {req}")
        if version is None:
            return self.versions[max(self.versions)]
        if int(version) not in self.versions:
            raise ServingFailure(404, f"Servable not found for request: Specific({name}, {version})")
        return self.versions[int(version)]

    @staticmethod
    def _signature(mv: ModelVersion, signature_name: str | None):
        name = signature_name or DEFAULT_SIGNATURE
        if name not in mv.signature_defs:
            raise bad_request(f'Serving signature name: "{name}" not found in signature def '
                              f"(available: {sorted(mv.signature_defs)})")
        return name, mv.signature_defs[name], mv.functions[name]

    # -- request bodies
    @staticmethod
    def parse_json(body: bytes) -> dict:
        """See :func:`memgraph_tf.serving.rest_json.parse_request_body`."""
        return rest_json.parse_request_body(body)

    def _examples(self, doc: dict, method: str, mv: ModelVersion) -> list[bytes]:
        examples = self._resolve_node_ids(rest_json.request_examples(doc, method), mv)
        return rest_json.serialize_examples(examples, doc.get("context", rest_json.NO_CONTEXT))

    def _resolve_node_ids(self, examples: list, mv: ModelVersion) -> list:
        """For our bundles, replace each ``{"node_id": N, ...}`` example by ``{..., blob_key:
        {"b64": N's neighbourhood blob}}``; other models see ``node_id`` as a plain feature."""
        idx = [i for i, e in enumerate(examples) if isinstance(e, dict) and "node_id" in e]
        if not idx:
            return examples
        cfg = mv.bundle_config
        if cfg is None:
            return examples  # not our bundle: node_id is just an int64 feature
        if self.neighbourhoods is None:
            raise bad_request(f"examples[{idx[0]}]: 'node_id' needs a server started with "
                              f"--graph; without one, send the node's blob as "
                              f"{{\"{cfg.blob_feature_key}\": {{\"b64\": ...}}}}")
        try:
            blobs = self.neighbourhoods.fetch([examples[i]["node_id"] for i in idx], cfg.sampling,
                                              names=[f"examples[{i}].node_id" for i in idx])
        except errors.NeighbourhoodError as exc:
            status = next(s for cls, s in NEIGHBOURHOOD_STATUS.items() if isinstance(exc, cls))
            raise ServingFailure(status, exc.message) from None
        out = list(examples)
        key = cfg.blob_feature_key
        for i, blob in zip(idx, blobs):
            extra = {k: v for k, v in examples[i].items() if k != "node_id"}
            out[i] = {**extra, key: {"b64": base64.b64encode(blob).decode("ascii")}}
        return out

    # -- running signatures
    @staticmethod
    def _tf_message(exc) -> str:
        # Drop TF's eager wrapper ("Graph execution error: Detected at node ... <stack traces
        # unavailable>") and keep the op's own message, as TF Serving reports it.
        msg = exc.message
        marker = "<stack traces unavailable>\n"
        if marker in msg:
            msg = msg.split(marker, 1)[1]
        return msg.strip()

    def _run(self, fn, feeds: dict):
        """Call a signature function; TF errors become the status TF Serving gives them
        (InvalidArgument / NotFound / FailedPrecondition / OutOfRange 400, Unimplemented 501,
        other 500). Returns ``{output: numpy array}``."""
        import tensorflow as tf

        try:
            out = fn(**feeds)
        except tf.errors.InvalidArgumentError as exc:
            raise bad_request(self._tf_message(exc)) from None
        except (tf.errors.UnimplementedError,) as exc:
            raise ServingFailure(501, self._tf_message(exc)) from None
        except (tf.errors.NotFoundError, tf.errors.FailedPreconditionError,
                tf.errors.OutOfRangeError) as exc:
            raise bad_request(self._tf_message(exc)) from None
        except tf.errors.OpError as exc:
            raise ServingFailure(500, self._tf_message(exc)) from None
        except (TypeError, ValueError) as exc:
            raise bad_request(str(exc)) from None
        import numpy as np

        result = {}
        for k, v in out.items():
            val = v.numpy()
            if v.dtype == tf.string and not isinstance(val, np.ndarray):
                val = np.array(val, dtype=object)  # a scalar string comes back as bytes
            result[k] = np.asarray(val)
        return result

    def run_classify(self, mv: ModelVersion, serialized: list[bytes],
                     signature_name: str | None):
        """Run a classify signature (TF Serving's classifier contract) on serialized
        tf.Examples: ``(classes, scores)``, each ``[n, k]`` or None when the signature lacks
        it. Without a signature name, our bundles use their ``classify`` signature (their
        ``serving_default`` is the predict one), other SavedModels ``serving_default``."""
        import tensorflow as tf

        if not signature_name and mv.bundle_config is not None and \
                bundle.CLASSIFY_SIGNATURE in mv.signature_defs:
            signature_name = bundle.CLASSIFY_SIGNATURE
        name, sig, fn = self._signature(mv, signature_name)
        classes_key, scores_key = bundle.CLASSES_OUTPUT, bundle.SCORES_OUTPUT
        if len(sig.inputs) != 1:
            raise bad_request(f"Expected one input Tensor in signature {name!r}, got "
                              f"{len(sig.inputs)}")
        (in_key, in_info), = sig.inputs.items()
        if in_info.dtype != tf.string.as_datatype_enum:
            raise bad_request(f"Expected input {in_key!r} of signature {name!r} to be DT_STRING "
                              f"serialized tf.Examples")
        if classes_key not in sig.outputs and scores_key not in sig.outputs:
            raise bad_request(f"Expected signature {name!r} to have a 'classes' or 'scores' "
                              f"output, got {sorted(sig.outputs)}")
        out = self._run(fn, {in_key: tf.constant(serialized, dtype=tf.string)})
        n = len(serialized)
        classes, scores = out.get(classes_key), out.get(scores_key)
        for key, arr in ((classes_key, classes), (scores_key, scores)):
            if arr is not None and (arr.ndim != 2 or arr.shape[0] != n):
                raise ServingFailure(500, f"Expected output Tensor {key!r} of shape "
                                     f"[{n}, k], got {list(arr.shape)}")
        if classes is not None and scores is not None and classes.shape != scores.shape:
            raise ServingFailure(500, f"Tensors 'classes' {list(classes.shape)} and 'scores' "
                                 f"{list(scores.shape)} do not have the same shape")
        return classes, scores

    def run_regress(self, mv: ModelVersion, serialized: list[bytes],
                    signature_name: str | None):
        """Run a regress signature on serialized tf.Examples: a ``[n]`` array."""
        import tensorflow as tf

        name, sig, fn = self._signature(mv, signature_name)
        if len(sig.inputs) != 1 or next(iter(sig.inputs.values())).dtype != \
                tf.string.as_datatype_enum:
            raise bad_request(f"Expected one DT_STRING input Tensor in signature {name!r}")
        if "outputs" not in sig.outputs:
            raise bad_request(f"Expected signature {name!r} to have an 'outputs' output, got "
                              f"{sorted(sig.outputs)}")
        out = self._run(fn, {next(iter(sig.inputs)): tf.constant(serialized, dtype=tf.string)})
        vals = out["outputs"]
        if vals.ndim == 2 and vals.shape[1] == 1:
            vals = vals[:, 0]
        if vals.ndim != 1 or vals.shape[0] != len(serialized):
            raise ServingFailure(500, f"Expected output Tensor 'outputs' of shape "
                                 f"[{len(serialized)}] or [{len(serialized)}, 1], got "
                                 f"{list(out['outputs'].shape)}")
        return vals

    # -- REST methods
    def classify(self, mv: ModelVersion, doc: dict) -> dict:
        """``:classify`` for a parsed body: ``{"results": [[[label, score], ...], ...]}``."""
        serialized = self._examples(doc, "classify", mv)
        classes, scores = self.run_classify(mv, serialized, doc.get("signature_name"))
        return rest_json.classify_response(classes, scores)

    def regress(self, mv: ModelVersion, doc: dict) -> dict:
        """``:regress`` for a parsed body: ``{"results": [v, ...]}``."""
        serialized = self._examples(doc, "regress", mv)
        return rest_json.regress_response(
            self.run_regress(mv, serialized, doc.get("signature_name")))

    def predict(self, mv: ModelVersion, doc: dict) -> dict:
        """``:predict`` for a parsed body, row (``instances``) or columnar (``inputs``)."""
        import tensorflow as tf

        name, sig, fn = self._signature(mv, doc.get("signature_name"))
        feeds, columnar = rest_json.predict_feeds(
            doc, {k: info.dtype for k, info in sig.inputs.items()}, name)
        tensors = {k: tf.constant(arr, dtype=dt) for k, (dt, arr) in feeds.items()}
        return rest_json.predict_response(self._run(fn, tensors), columnar)

    def status(self, name: str, version: str | None, label: str | None) -> dict:
        """The model version status answer (every version, or the one named)."""
        if name != self.model_name:
            raise ServingFailure(404, f"Could not find any versions of model {name}")
        if label is not None:
            if label not in self.labels:
                raise bad_request(f"Unrecognized servable version label: {label}")
            versions = [self.labels[label]]
        elif version is not None:
            if int(version) not in self.versions:
                raise ServingFailure(404, f"Could not find version {version} of model {name}")
            versions = [int(version)]
        else:
            versions = sorted(self.versions, reverse=True)
        return {"model_version_status": [
            {"version": str(v), "state": "AVAILABLE",
             "status": {"error_code": "OK", "error_message": ""}} for v in versions]}

    def metadata(self, mv: ModelVersion) -> dict:
        """The GetModelMetadataResponse for ``mv`` as JSON (its signature defs)."""
        from google.protobuf import json_format
        from tensorflow_serving.apis import get_model_metadata_pb2

        resp = get_model_metadata_pb2.GetModelMetadataResponse()
        resp.model_spec.name = self.model_name
        resp.model_spec.version.value = mv.version
        sdm = get_model_metadata_pb2.SignatureDefMap()
        for k, v in mv.signature_defs.items():
            sdm.signature_def[k].CopyFrom(v)
        resp.metadata["signature_def"].Pack(sdm)
        out = json_format.MessageToDict(resp, preserving_proto_field_name=True)
        out["model_spec"]["signature_name"] = ""
        return out

    # -- dispatch
    def handle(self, method: str, path: str, body: bytes) -> tuple[int, dict]:
        """Answer one request: ``(http_status, json_body)``. Never raises for bad input."""
        path = path.split("?", 1)[0]
        try:
            m = _PREDICT_RE.fullmatch(path)
            if method == "POST" and m:
                name, version, label, verb = m.groups()
                mv = self.resolve(name, version, label)
                doc = self.parse_json(body)
                return 200, getattr(self, verb.lower())(mv, doc)
            m = _STATUS_RE.fullmatch(path)
            if method == "GET" and m:
                name, version, label, meta = m.groups()
                if not name:
                    raise bad_request("Missing model name in request.")
                if meta:
                    return 200, self.metadata(self.resolve(name, version, label))
                return 200, self.status(name, version, label)
            if not path.lower().startswith("/v1/"):
                raise ServingFailure(404, f"Not found: {method} {path}")
            raise bad_request(f"Malformed request: {method} {path}")
        except ServingFailure as exc:
            return exc.status, {"error": exc.message}
        except Exception as exc:  # a server bug: still answer in TF Serving's error format
            logger.exception("internal error on %s %s", method, path)
            return 500, {"error": f"{type(exc).__name__}: {exc}"}


__all__ = ["DEFAULT_MAX_REQUEST_BYTES", "ModelServer", "ModelVersion", "load_version", "op_names"]
