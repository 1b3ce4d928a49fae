"""A local server that speaks TensorFlow Serving's REST API.

``memgraph-tf serve MODEL_BASE_PATH`` serves every SavedModel found as ``MODEL_BASE_PATH/<version>/``
(``saved_model.pb``), ours or not, with or without the ``MemgraphTf>UnpackBlob`` op: when a version's
graph uses ops this TensorFlow does not know, the op library shipped in the bundle
(``<version>/assets.extra/memgraph_tf/``, if built for this TF version) or the project's own
(:func:`memgraph_tf.ops.load_library`) is loaded first. This is the one way to serve an op bundle
without rebuilding TF Serving.

What it implements, with TF Serving's URLs, bodies and status codes (``g3doc/api_rest.md``,
``util/json_tensor.cc``, ``model_servers/http_rest_api_handler.cc``):

- ``POST /v1/models/NAME[/versions/N|/labels/L]:classify|:regress|:predict``
- ``GET /v1/models/NAME[/versions/N|/labels/L]`` (status) and ``.../metadata``
- errors as ``{"error": "message"}`` with 400 / 404 / 500 / 501 / 503, and 413 for a body above
  ``max_request_bytes`` (TF Serving's libevent front end answers 413 when a body limit is set).
- With a graph source (``--graph``), ``:classify`` also accepts ``{"examples": [{"node_id": 1}]}``
  and fetches each node's blob itself, with the fanouts and properties stored in the bundle.

Concurrency: a :class:`http.server.ThreadingHTTPServer`; each request runs the model through the
loaded SavedModel's concrete signature functions, which are safe to call from many threads.
It binds 127.0.0.1 unless told otherwise.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import json
import logging
import math
import os
import pathlib
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

log = logging.getLogger(__name__)

DEFAULT_MAX_REQUEST_BYTES = 64 * 1024 * 1024
DEFAULT_SIGNATURE = "serving_default"
BUNDLE_CONFIG_ASSET = "memgraph_tf_bundle.json"
OP_LIBRARY_DIR = ("assets.extra", "memgraph_tf")

_PREDICT_RE = re.compile(
    r"/v1/models/([^/:]+)(?:/versions/(\d+)|/labels/([^/:]+))?:(classify|regress|predict)",
    re.IGNORECASE,
)
_STATUS_RE = re.compile(
    r"/v1/models(?:/([^/:]+))?(?:/versions/(\d+)|/labels/([^/:]+))?(/metadata)?", re.IGNORECASE
)


class ServingFailure(Exception):
    """A request failure with its HTTP status; the message goes into ``{"error": ...}``."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


def _bad(message: str) -> ServingFailure:
    return ServingFailure(400, message)


# -------------------------------------------------------------------------------- model loading
@dataclass
class ModelVersion:
    """One loaded SavedModel version."""

    version: int
    path: pathlib.Path
    signature_defs: dict[str, Any]  # name -> tensorflow.core.protobuf.meta_graph_pb2.SignatureDef
    functions: dict[str, Any]  # name -> concrete function
    bundle_config: dict | None = None
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


def _op_names(meta_graph) -> set[str]:
    ops = {n.op for n in meta_graph.graph_def.node}
    for fn in meta_graph.graph_def.library.function:
        ops.update(n.op for n in fn.node_def)
    return ops


def _missing_ops(meta_graph) -> list[str]:
    from tensorflow.python.framework import op_def_registry

    return sorted(op for op in _op_names(meta_graph) if op_def_registry.get(op) is None)


def _load_missing_ops(version_dir: pathlib.Path, missing: list[str]) -> None:
    """Register ops a SavedModel needs: the bundle's own op library when it was built for this
    TensorFlow version, else the project's (built and cached on demand)."""
    import tensorflow as tf

    lib_dir = version_dir.joinpath(*OP_LIBRARY_DIR)
    info_path = lib_dir / "op_library.json"
    if info_path.exists():
        info = json.loads(info_path.read_text())
        so = lib_dir / info.get("library", "")
        if info.get("tf_version") == tf.__version__ and so.is_file():
            log.info("loading the bundle's op library %s for %s", so, missing)
            tf.load_op_library(str(so))
            if not _missing_ops_names(missing):
                return
        else:
            log.info(
                "the bundle's op library was built for TF %s, this is TF %s: using the "
                "project's own build", info.get("tf_version"), tf.__version__,
            )
    if any(op.startswith("MemgraphTf") for op in missing):
        from memgraph_tf import ops as mgops

        mgops.load_library()


def _missing_ops_names(names: list[str]) -> list[str]:
    from tensorflow.python.framework import op_def_registry

    return [op for op in names if op_def_registry.get(op) is None]


def load_version(version_dir: pathlib.Path, version: int) -> ModelVersion:
    """Load one ``BASE/<version>`` SavedModel, registering any custom op it needs first.
    Raises ValueError naming the directory and the ops when some op cannot be found."""
    import tensorflow as tf

    sm = _read_saved_model_proto(version_dir)
    mg = _serving_meta_graph(sm)
    missing = _missing_ops(mg)
    if missing:
        _load_missing_ops(version_dir, missing)
        still = _missing_ops_names(missing)
        if still:
            raise ValueError(
                f"{version_dir}: the SavedModel uses ops {still} that this TensorFlow "
                f"{tf.__version__} does not register, and no matching op library was found"
            )
    loaded = tf.saved_model.load(str(version_dir))
    functions = {name: loaded.signatures[name] for name in loaded.signatures.keys()}
    sigdefs = {name: mg.signature_def[name] for name in mg.signature_def if name in functions}
    cfg_path = version_dir / "assets" / BUNDLE_CONFIG_ASSET
    cfg = json.loads(cfg_path.read_text()) if cfg_path.exists() else None
    return ModelVersion(version, version_dir, sigdefs, functions, cfg, loaded)


def discover_versions(base_path: pathlib.Path) -> list[int]:
    """The numeric sub-directories of ``base_path`` that hold a SavedModel, ascending."""
    out = []
    for child in base_path.iterdir():
        if child.is_dir() and child.name.isdigit() and (
            (child / "saved_model.pb").exists() or (child / "saved_model.pbtxt").exists()
        ):
            out.append(int(child.name))
    return sorted(out)


# ------------------------------------------------------------------------------ JSON -> protos
def _json_type(v: Any) -> str:
    if v is None:
        return "Null"
    if v is True:
        return "True"
    if v is False:
        return "False"
    if isinstance(v, dict):
        return "Object"
    if isinstance(v, list):
        return "Array"
    if isinstance(v, str):
        return "String"
    return "Number"


def _is_b64(v: Any) -> bool:
    return isinstance(v, dict) and len(v) == 1 and isinstance(v.get("b64"), str)


def _b64decode(v: dict) -> bytes:
    text = v["b64"]
    try:
        return base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise _bad("Unable to base64 decode") from None


_F32_MAX = 3.4028234663852886e38
_KIND_NAMES = {"bytes_list": "bytes", "float_list": "float", "int64_list": "int64"}


def _add_feature_value(feature, kind: list, name: str, v: Any) -> None:
    def want(k: str) -> None:
        if kind and kind[0] != k:
            raise _bad(
                f"Unexpected element type in feature: {name} expecting type: {_KIND_NAMES[kind[0]]}"
            )
        if not kind:
            kind.append(k)

    if v is None or isinstance(v, list) or (isinstance(v, dict) and not _is_b64(v)):
        raise _bad(f"Feature: {name} has element with unexpected JSON type: {_json_type(v)}")
    if isinstance(v, bool):
        want("int64_list")
        feature.int64_list.value.append(int(v))
    elif isinstance(v, dict):
        want("bytes_list")
        feature.bytes_list.value.append(_b64decode(v))
    elif isinstance(v, str):
        want("bytes_list")
        feature.bytes_list.value.append(v.encode("utf-8"))
    elif isinstance(v, float):
        want("float_list")
        if math.isfinite(v) and abs(v) > _F32_MAX:
            raise _bad(f"Cannot convert JSON value: {v!r} to float without loss of precision.")
        feature.float_list.value.append(v)
    else:
        want("int64_list")
        if v > 2**63 - 1 or v < -(2**63):
            raise _bad(f"Feature: {name} has uint64 element. Only int64 is supported.")
        feature.int64_list.value.append(v)


def json_to_example(obj: Any):
    """One JSON example object -> ``tf.train.Example`` by TF Serving's rules: string -> bytes,
    ``{"b64": ...}`` -> decoded bytes, number with a decimal point -> float, integer or bool ->
    int64; the first element of a list fixes the feature's kind."""
    from tensorflow.core.example import example_pb2

    if not isinstance(obj, dict):
        raise _bad(f"Example must be JSON object but got JSON {_json_type(obj)}")
    ex = example_pb2.Example()
    for name, content in obj.items():
        feature = ex.features.feature[name]
        if isinstance(content, list) and content and _fast_fill(feature, name, content):
            continue
        kind: list = []
        for v in content if isinstance(content, list) else [content]:
            _add_feature_value(feature, kind, name, v)
    return ex


def _fast_fill(feature, name: str, content: list) -> bool:
    """Fill a feature from a homogeneous list of floats or of ints in one call (the same result
    as the element-wise path); False when the list is mixed, so the slow path reports the error."""
    first = type(content[0])
    if first is float and all(type(v) is float for v in content):
        if any(abs(v) > _F32_MAX and math.isfinite(v) for v in content):
            return False
        feature.float_list.value.extend(content)
        return True
    if first is int and all(type(v) is int for v in content):
        if any(v > 2**63 - 1 or v < -(2**63) for v in content):
            return False
        feature.int64_list.value.extend(content)
        return True
    return False


_DT = {}


def _dtypes():
    if not _DT:
        import numpy as np
        import tensorflow as tf

        for dt in (tf.float32, tf.float64, tf.int32, tf.int64, tf.int16, tf.int8, tf.uint8,
                   tf.uint32, tf.uint64, tf.bool, tf.string, tf.float16):
            _DT[dt.as_datatype_enum] = (dt, np.dtype(dt.as_numpy_dtype) if dt != tf.string
                                        else np.dtype(object))
    return _DT


def _json_to_array(value: Any, dtype_enum: int, what: str):
    """A JSON value (nested lists) -> numpy array of the signature input's dtype."""
    import numpy as np

    table = _dtypes()
    if dtype_enum not in table:
        raise ServingFailure(501, f"Conversion of JSON Value to type enum {dtype_enum} ({what})")
    tf_dt, np_dt = table[dtype_enum]
    if tf_dt.name == "string":
        def conv(v):
            if isinstance(v, list):
                return [conv(x) for x in v]
            if isinstance(v, str):
                return v.encode("utf-8")
            if _is_b64(v):
                return _b64decode(v)
            raise _bad(f"JSON Value: {json.dumps(v)} Type: {_json_type(v)} is not of expected "
                       f"type: string ({what})")
        value = conv(value)
    try:
        arr = np.array(value, dtype=object if tf_dt.name == "string" else None)
    except ValueError as exc:
        raise _bad(f"{what}: expected a rectangular nested list, got ragged lists ({exc})") from None
    if arr.dtype == object and tf_dt.name != "string":
        raise _bad(f"{what}: expected a rectangular nested list of numbers for type "
                   f"{tf_dt.name}, got {json.dumps(value)[:200]}")
    kind = arr.dtype.kind
    ok = {
        "f": kind in "iuf", "i": kind in "iu", "u": kind in "iu", "b": kind == "b",
    }.get(np_dt.kind, True)
    if tf_dt.name == "string":
        ok = arr.size == 0 or all(isinstance(x, bytes) for x in arr.reshape(-1))
    if not ok:
        sample = arr.reshape(-1)[0].item() if arr.size else None
        raise _bad(f"JSON Value: {json.dumps(sample)} Type: {_json_type(sample)} is not of "
                   f"expected type: {tf_dt.name} ({what})")
    if tf_dt.name != "string":
        arr = arr.astype(np_dt)
    return tf_dt, arr


def _tensor_to_json(name: str, arr) -> Any:
    """numpy output -> JSON-ready Python values (``*_bytes`` string outputs as ``{"b64"}``)."""
    if arr.dtype == object or arr.dtype.kind == "S":
        as_b64 = name.endswith("_bytes")

        def conv(v):
            if isinstance(v, list):
                return [conv(x) for x in v]
            if as_b64:
                return {"b64": base64.b64encode(v).decode("ascii")}
            try:
                return v.decode("utf-8")
            except UnicodeDecodeError:
                return {"b64": base64.b64encode(v).decode("ascii")}
        return conv(arr.tolist())
    if arr.dtype.kind == "f":
        return arr.astype("float64").tolist()
    return arr.tolist()


# ------------------------------------------------------------------------------------ the model
class ModelServer:
    """Serves the versions of one model (``BASE/<version>/``) over TF Serving's REST semantics.

    ``labels`` maps a version label to a version number. ``graph_source`` (optional) is an object
    with ``sample_blobs_per_node(seeds, fanouts, properties, options) -> list[bytes]`` used for
    ``{"node_id": ...}`` examples; its settings come from each bundle's own config asset.
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
        self._graph_lock = threading.Lock()
        found = discover_versions(self.base_path)
        if not found:
            raise ValueError(
                f"model_base_path: expected numbered version directories holding saved_model.pb "
                f"under {str(base_path)!r}, found none"
            )
        self.versions: dict[int, ModelVersion] = {}
        for v in found:
            self.versions[v] = load_version(self.base_path / str(v), v)
            log.info("loaded %s version %d (signatures: %s)", self.model_name, v,
                     sorted(self.versions[v].functions))
        self.labels = dict(labels or {})
        for lbl, v in self.labels.items():
            if v not in self.versions:
                raise ValueError(
                    f"labels: label {lbl!r} points at version {v}, expected one of "
                    f"{sorted(self.versions)}")

    # -- resolution
    def resolve(self, name: str, version: str | None, label: str | None) -> ModelVersion:
        if label is not None:
            if label not in self.labels or name != self.model_name:
                raise _bad(f"Unrecognized servable version label: {label}")
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
            raise _bad(f'Serving signature name: "{name}" not found in signature def '
                       f"(available: {sorted(mv.signature_defs)})")
        return name, mv.signature_defs[name], mv.functions[name]

    # -- request bodies
    @staticmethod
    def parse_json(body: bytes) -> dict:
        if not body:
            raise _bad("JSON Parse error: The document is empty")
        try:
            doc = json.loads(body)
        except UnicodeDecodeError as exc:
            raise _bad(f"JSON Parse error: Invalid encoding in string. at offset: {exc.start}") \
                from None
        except json.JSONDecodeError as exc:
            raise _bad(f"JSON Parse error: {exc.msg} at offset: {exc.pos}") from None
        if not isinstance(doc, dict):
            raise _bad(f"JSON Value: {json.dumps(doc)[:200]} Is not object")
        sig = doc.get("signature_name")
        if sig is not None and not isinstance(sig, str):
            raise _bad("JSON Value: not formatted correctly. 'signature_name' key must be a "
                       "string value.")
        return doc

    def _examples(self, doc: dict, method: str, mv: ModelVersion) -> list[bytes]:
        if "examples" not in doc:
            raise _bad(f"JSON Value: {json.dumps(doc)[:200]} When method is {method}, key "
                       f"'examples' is expected and was not found")
        examples = doc["examples"]
        if not isinstance(examples, list):
            raise _bad(f"JSON Value: {json.dumps(doc)[:200]} Expecting 'examples' value to be "
                       f"an list/array")
        if not examples:
            raise _bad(f"JSON Value: {json.dumps(doc)[:200]} 'examples' value is an empty array")
        examples = self._resolve_node_ids(examples, mv)
        context = json_to_example(doc["context"]).SerializeToString() if "context" in doc else b""
        # Concatenated serialized protos merge: the example's features override the context's.
        return [context + json_to_example(e).SerializeToString() for e in examples]

    def _resolve_node_ids(self, examples: list, mv: ModelVersion) -> list:
        idx = [i for i, e in enumerate(examples) if isinstance(e, dict) and "node_id" in e]
        if not idx:
            return examples
        cfg = mv.bundle_config
        if cfg is None:
            return examples  # not our bundle: node_id is just an int64 feature
        if self.graph_source is None:
            raise _bad(f"examples[{idx[0]}]: 'node_id' needs a server started with --graph; "
                       f"without one, send the node's blob as "
                       f"{{\"{cfg['blob_feature_key']}\": {{\"b64\": ...}}}}")
        ids = []
        for i in idx:
            nid = examples[i]["node_id"]
            if isinstance(nid, bool) or not isinstance(nid, int):
                raise _bad(f"examples[{i}].node_id: expected an integer, got {json.dumps(nid)}")
            ids.append(nid)
        try:
            with self._graph_lock:
                blobs = self.graph_source.sample_blobs_per_node(
                    ids, list(cfg["fanouts"]), list(cfg["properties"]),
                    dict(cfg.get("options") or {}))
        except (ConnectionError, OSError) as exc:  # incl. client.GraphConnectionError
            raise ServingFailure(503, f"the graph is unavailable: {exc}") from None
        except (KeyError, ValueError, LookupError) as exc:  # incl. client.GraphDataError
            raise _bad(f"fetching node ids {ids} from the graph: {exc}") from None
        except Exception as exc:
            from memgraph_tf.client import errors as client_errors

            if isinstance(exc, client_errors.ClientError):
                raise ServingFailure(500, f"fetching node ids {ids} from the graph: {exc}") \
                    from None
            raise
        out = list(examples)
        key = cfg["blob_feature_key"]
        for i, blob in zip(idx, blobs):
            extra = {k: v for k, v in examples[i].items() if k != "node_id"}
            out[i] = {**extra, key: {"b64": base64.b64encode(blob).decode("ascii")}}
        return out

    # -- methods
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
        import tensorflow as tf

        try:
            out = fn(**feeds)
        except tf.errors.InvalidArgumentError as exc:
            raise _bad(self._tf_message(exc)) from None
        except (tf.errors.UnimplementedError,) as exc:
            raise ServingFailure(501, self._tf_message(exc)) from None
        except (tf.errors.NotFoundError, tf.errors.FailedPreconditionError,
                tf.errors.OutOfRangeError) as exc:
            raise _bad(self._tf_message(exc)) from None
        except tf.errors.OpError as exc:
            raise ServingFailure(500, self._tf_message(exc)) from None
        except (TypeError, ValueError) as exc:
            raise _bad(str(exc)) from None
        import numpy as np

        result = {}
        for k, v in out.items():
            val = v.numpy()
            if v.dtype == tf.string and not isinstance(val, np.ndarray):
                val = np.array(val, dtype=object)  # a scalar string comes back as bytes
            result[k] = np.asarray(val)
        return result

    def classify(self, mv: ModelVersion, doc: dict) -> dict:
        import tensorflow as tf

        serialized = self._examples(doc, "classify", mv)
        sig_name = doc.get("signature_name")
        if not sig_name and mv.bundle_config is not None and "classify" in mv.signature_defs:
            # Our bundles' serving_default is the predict signature; without a name, :classify
            # goes to their classify signature (so the design notes' bare request works).
            sig_name = "classify"
        name, sig, fn = self._signature(mv, sig_name)
        if len(sig.inputs) != 1:
            raise _bad(f"Expected one input Tensor in signature {name!r}, got {len(sig.inputs)}")
        (in_key, in_info), = sig.inputs.items()
        if in_info.dtype != tf.string.as_datatype_enum:
            raise _bad(f"Expected input {in_key!r} of signature {name!r} to be DT_STRING "
                       f"serialized tf.Examples")
        if "classes" not in sig.outputs and "scores" not in sig.outputs:
            raise _bad(f"Expected signature {name!r} to have a 'classes' or 'scores' output, got "
                       f"{sorted(sig.outputs)}")
        out = self._run(fn, {in_key: tf.constant(serialized, dtype=tf.string)})
        n = len(serialized)
        classes, scores = out.get("classes"), out.get("scores")
        for key, arr in (("classes", classes), ("scores", scores)):
            if arr is not None and (arr.ndim != 2 or arr.shape[0] != n):
                raise ServingFailure(500, f"Expected output Tensor {key!r} of shape "
                                     f"[{n}, k], got {list(arr.shape)}")
        if classes is not None and scores is not None and classes.shape != scores.shape:
            raise ServingFailure(500, f"Tensors 'classes' {list(classes.shape)} and 'scores' "
                                 f"{list(scores.shape)} do not have the same shape")
        k = (classes if classes is not None else scores).shape[1]
        results = []
        for r in range(n):
            row = []
            for j in range(k):
                label = classes[r, j].decode("utf-8", "replace") if classes is not None else ""
                score = float(scores[r, j]) if scores is not None else 0.0
                row.append([label, score])
            results.append(row)
        return {"results": results}

    def regress(self, mv: ModelVersion, doc: dict) -> dict:
        import tensorflow as tf

        serialized = self._examples(doc, "regress", mv)
        name, sig, fn = self._signature(mv, doc.get("signature_name"))
        if len(sig.inputs) != 1 or next(iter(sig.inputs.values())).dtype != \
                tf.string.as_datatype_enum:
            raise _bad(f"Expected one DT_STRING input Tensor in signature {name!r}")
        if "outputs" not in sig.outputs:
            raise _bad(f"Expected signature {name!r} to have an 'outputs' output, got "
                       f"{sorted(sig.outputs)}")
        out = self._run(fn, {next(iter(sig.inputs)): tf.constant(serialized, dtype=tf.string)})
        vals = out["outputs"]
        if vals.ndim == 2 and vals.shape[1] == 1:
            vals = vals[:, 0]
        if vals.ndim != 1 or vals.shape[0] != len(serialized):
            raise ServingFailure(500, f"Expected output Tensor 'outputs' of shape "
                                 f"[{len(serialized)}] or [{len(serialized)}, 1], got "
                                 f"{list(out['outputs'].shape)}")
        return {"results": vals.astype("float64").tolist()}

    def predict(self, mv: ModelVersion, doc: dict) -> dict:
        import tensorflow as tf

        name, sig, fn = self._signature(mv, doc.get("signature_name"))
        infos = dict(sig.inputs)
        if not infos:
            raise _bad(f"Failed to get input map for signature: {name}")
        has_inst, has_inputs = "instances" in doc, "inputs" in doc
        if has_inst == has_inputs:
            if has_inst:
                raise _bad("Not formatted correctly expecting only one of 'inputs' or "
                           "'instances' keys to exist")
            raise _bad("Missing 'inputs' or 'instances' key")
        feeds: dict[str, Any] = {}
        if has_inst:
            inst = doc["instances"]
            if not isinstance(inst, list):
                raise _bad("Excepting 'instances' to be an list/array")
            if not inst:
                raise _bad("No values in 'instances' array")
            named = isinstance(inst[0], dict) and not _is_b64(inst[0])
            if not named and len(infos) > 1:
                raise _bad("instances is a plain list, but expecting list of objects as multiple "
                           "input tensors required as per tensorinfo_map")
            cols: dict[str, list] = {k: [] for k in infos} if named else {next(iter(infos)): []}
            for i, item in enumerate(inst):
                if named:
                    if not isinstance(item, dict) or _is_b64(item):
                        raise _bad(f"Expecting object but got list at item {i} of input list")
                    if set(item) != set(infos):
                        raise _bad(f"Failed to process element: {i} of 'instances' list. JSON "
                                   f"object: keys must be equal to: {','.join(sorted(infos))}")
                    for k, v in item.items():
                        cols[k].append(v)
                else:
                    if isinstance(item, dict) and not _is_b64(item):
                        raise _bad(f"Expecting value/list but got object at item {i} of input "
                                   f"list")
                    cols[next(iter(cols))].append(item)
            for k, vals in cols.items():
                feeds[k] = _json_to_array(vals, infos[k].dtype, f"input {k!r}")
        else:
            val = doc["inputs"]
            if isinstance(val, dict) and not _is_b64(val):
                for k in infos:
                    if k not in val:
                        raise _bad(f"Missing named input: {k} in 'inputs' object.")
                    feeds[k] = _json_to_array(val[k], infos[k].dtype, f"input {k!r}")
            else:
                if len(infos) > 1:
                    raise _bad("inputs is a plain value/list, but expecting an object as "
                               "multiple input tensors required as per tensorinfo_map")
                k = next(iter(infos))
                feeds[k] = _json_to_array(val, infos[k].dtype, f"input {k!r}")
        tensors = {k: tf.constant(arr, dtype=dt) for k, (dt, arr) in feeds.items()}
        out = self._run(fn, tensors)
        names = sorted(out)
        if has_inputs:
            if len(names) == 1:
                return {"outputs": _tensor_to_json(names[0], out[names[0]])}
            return {"outputs": {k: _tensor_to_json(k, out[k]) for k in names}}
        batch = None
        for k in names:
            if out[k].ndim == 0:
                raise ServingFailure(500, f"Tensor name: {k} has no shape information ")
            if batch is not None and out[k].shape[0] != batch:
                raise ServingFailure(500, f"Tensor name: {k} has inconsistent batch size: "
                                     f"{out[k].shape[0]} expecting: {batch}")
            batch = out[k].shape[0]
        values = {k: _tensor_to_json(k, out[k]) for k in names}
        if len(names) == 1:
            return {"predictions": values[names[0]]}
        return {"predictions": [{k: values[k][i] for k in names} for i in range(batch)]}

    def status(self, name: str, version: str | None, label: str | None) -> dict:
        if name != self.model_name:
            raise ServingFailure(404, f"Could not find any versions of model {name}")
        if label is not None:
            if label not in self.labels:
                raise _bad(f"Unrecognized servable version label: {label}")
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
                    raise _bad("Missing model name in request.")
                if meta:
                    return 200, self.metadata(self.resolve(name, version, label))
                return 200, self.status(name, version, label)
            if not path.lower().startswith("/v1/"):
                raise ServingFailure(404, f"Not found: {method} {path}")
            raise _bad(f"Malformed request: {method} {path}")
        except ServingFailure as exc:
            return exc.status, {"error": exc.message}
        except Exception as exc:  # a server bug: still answer in TF Serving's error format
            log.exception("internal error on %s %s", method, path)
            return 500, {"error": f"{type(exc).__name__}: {exc}"}


# ----------------------------------------------------------------------------------------- HTTP
class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "memgraph-tf-serve"
    # Headers and body go out in two writes: without TCP_NODELAY, Nagle + delayed ACK add ~40 ms.
    disable_nagle_algorithm = True
    model_server: ModelServer  # set on the subclass made per server

    def log_message(self, fmt: str, *args: Any) -> None:  # route http.server's log to logging
        log.debug("%s " + fmt, self.address_string(), *args)

    def _reply(self, status: int, payload: dict, close: bool = False) -> None:
        data = json.dumps(payload).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if close:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        self.wfile.write(data)

    def _read_body(self) -> bytes | None:
        """The body, or None after answering 413 when it exceeds max_request_bytes."""
        limit = self.model_server.max_request_bytes
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            chunks, total = [], 0
            while True:
                line = self.rfile.readline(1024)
                try:
                    size = int(line.split(b";")[0].strip() or b"0", 16)
                    if size < 0:
                        raise ValueError
                except ValueError:
                    self._reply(400, {"error": f"Transfer-Encoding: chunked: expected a hex chunk "
                                               f"size at body offset {total}, got {line[:40]!r}"},
                                close=True)
                    return None
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    break
                total += size
                if total > limit:
                    self._too_large(total, limit, drain=0, close=True)
                    return None
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            return b"".join(chunks)
        try:
            length = int(self.headers.get("Content-Length") or 0)
            if length < 0:
                raise ValueError
        except ValueError:
            self._reply(400, {"error": f"Content-Length: expected a non-negative integer, got "
                                       f"{self.headers.get('Content-Length')!r}"}, close=True)
            return None
        if length > limit:
            self._too_large(length, limit, drain=length)
            return None
        return self.rfile.read(length) if length else b""

    def _too_large(self, size: int, limit: int, drain: int, close: bool = False) -> None:
        # Read (and drop) a body up to 16x the limit so the client sees the answer instead of a
        # reset connection; anything bigger is cut off.
        if drain and drain <= 16 * max(limit, 1 << 20):
            left = drain
            while left > 0:
                chunk = self.rfile.read(min(left, 1 << 20))
                if not chunk:
                    break
                left -= len(chunk)
        else:
            close = True
        self._reply(413, {"error": f"Request body of {size} bytes exceeds the server's "
                                   f"max_request_bytes={limit}"}, close=close)

    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        body = self._read_body()
        if body is None:
            return
        status, payload = self.model_server.handle("POST", self.path, body)
        self._reply(status, payload)

    def do_GET(self) -> None:  # noqa: N802
        status, payload = self.model_server.handle("GET", self.path, b"")
        self._reply(status, payload)


class RunningServer:
    """A started HTTP server (see :func:`start_server`): ``url``, ``port``, ``close()``."""

    def __init__(self, httpd: ThreadingHTTPServer, thread: threading.Thread):
        self.httpd = httpd
        self.thread = thread
        host, port = httpd.server_address[:2]
        self.port = port
        self.url = f"http://{host}:{port}"

    def close(self) -> None:
        """Stop serving and release the port."""
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=10)

    def __enter__(self) -> RunningServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def make_http_server(model_server: ModelServer, host: str = "127.0.0.1",
                     port: int = 8501) -> ThreadingHTTPServer:
    """A ThreadingHTTPServer (daemon threads) answering with ``model_server``; port 0 picks one."""
    handler = type("Handler", (_Handler,), {"model_server": model_server})
    httpd = ThreadingHTTPServer((host, port), handler)
    httpd.daemon_threads = True
    return httpd


def start_server(model_server: ModelServer, host: str = "127.0.0.1", port: int = 0) -> RunningServer:
    """Serve ``model_server`` from a background thread; returns once the socket is listening."""
    httpd = make_http_server(model_server, host, port)
    thread = threading.Thread(target=httpd.serve_forever, name="memgraph-tf-serve", daemon=True)
    thread.start()
    return RunningServer(httpd, thread)


def _parse_labels(items: list[str] | None) -> dict[str, int]:
    labels = {}
    for item in items or []:
        lbl, sep, ver = item.partition("=")
        if not sep or not lbl or not ver.isdigit():
            raise ValueError(f"--version-label: expected LABEL=VERSION, got {item!r}")
        labels[lbl] = int(ver)
    return labels


def open_graph_source(uri: str):
    """A graph source for ``--graph``. ``embedded:DIR/NAME`` loads the Planetoid dataset NAME from
    ``DIR/ind.NAME.*`` into an in-process graph that runs the unchanged query modules; anything
    else is a Bolt URI for :func:`memgraph_tf.client.connect`, which takes the user name and password
    from ``MEMGRAPH_TF_USER`` / ``MEMGRAPH_TF_PASSWORD`` (never a command line, never a bundle)."""
    from memgraph_tf import client

    if uri.startswith("embedded:"):
        from memgraph_tf.embedded import EmbeddedGraph

        path = pathlib.Path(uri[len("embedded:"):])
        return client.EmbeddedSource(EmbeddedGraph.from_planetoid(path.name, path.parent))
    return client.connect(uri)


def main(args: argparse.Namespace) -> int:
    """``memgraph-tf serve``: load the model, then serve until interrupted. Returns 0."""
    source = open_graph_source(args.graph) if getattr(args, "graph", None) else None
    ms = ModelServer(
        args.model_base_path,
        args.model_name,
        labels=_parse_labels(getattr(args, "version_label", None)),
        graph_source=source,
        max_request_bytes=args.max_request_bytes,
    )
    httpd = make_http_server(ms, args.host, args.port)
    host, port = httpd.server_address[:2]
    log.info("serving model %r versions %s at http://%s:%d/v1/models/%s", ms.model_name,
             sorted(ms.versions), host, port, ms.model_name)
    try:
        httpd.serve_forever()
    except KeyboardInterrupt:
        log.info("interrupted, shutting down")
    finally:
        httpd.server_close()
        if source is not None and hasattr(source, "close"):
            source.close()
    return 0
