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

import json
import logging
import os
import pathlib
import re
import threading
import time
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from memgraph_tf.serving import bundle, errors, rest_json
from memgraph_tf.serving.bundle import BundleConfig
from memgraph_tf.serving.errors import ServingFailure
from memgraph_tf.serving.neighbourhoods import NeighbourhoodFetcher
from memgraph_tf.serving.rest_json import bad_request

logger = logging.getLogger(__name__)

DEFAULT_MAX_REQUEST_BYTES = 64 * 1024 * 1024
#: Default cap on the examples / instances of one request (``--max-examples``).
DEFAULT_MAX_EXAMPLES = 1024
#: TF Serving's default signature name.
DEFAULT_SIGNATURE = "serving_default"

_PREDICT_RE = re.compile(
    r"/v1/models/([^/:]+)(?:/versions/(\d+)|/labels/([^/:]+))?:(classify|regress|predict)",
    re.IGNORECASE,
)
_STATUS_RE = re.compile(
    r"/v1/models(?:/([^/:]+))?(?:/versions/(\d+)|/labels/([^/:]+))?(?:/(metadata))?",
    re.IGNORECASE,
)
#: The paths TF Serving's REST handler takes (others get 404 from its HTTP server).
_API_RE = re.compile(r"/v1/.*", re.IGNORECASE | re.DOTALL)
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
                "project's own build",
                info.tf_version,
                tf.__version__,
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


# ------------------------------------------------------------------------- server-side batching
@dataclass(frozen=True)
class BatchingOptions:
    """Server-side batching, as TF Serving's ``--enable_batching`` with a batching parameters
    file (``max_batch_size``, ``batch_timeout_micros``, ``num_batch_threads``,
    ``max_enqueued_batches``). Sizes count examples / rows (the first dimension), as TF
    Serving's task sizes do."""

    max_batch_size: int = 128
    batch_timeout_micros: int = 0
    num_batch_threads: int = max(1, os.cpu_count() or 1)
    max_enqueued_batches: int = 100

    def __post_init__(self) -> None:
        for key, low in (
            ("max_batch_size", 1),
            ("batch_timeout_micros", 0),
            ("num_batch_threads", 1),
            ("max_enqueued_batches", 1),
        ):
            value = getattr(self, key)
            if not isinstance(value, int) or isinstance(value, bool) or value < low:
                raise ValueError(f"batching {key}: expected an int >= {low}, got {value!r}")


class _Task:
    __slots__ = ("done", "error", "feeds", "result", "runner", "size")

    def __init__(self, feeds: dict, size: int, runner):
        self.feeds, self.size, self.runner = feeds, size, runner
        self.done = threading.Event()
        self.result: dict | None = None
        self.error: BaseException | None = None


class _Batch:
    __slots__ = ("deadline", "key", "size", "tasks")

    def __init__(self, key: Any, deadline: float):
        self.key, self.tasks, self.size, self.deadline = key, [], 0, deadline


class BatchScheduler:
    """Merges concurrent model calls with the same key (version, signature, input dtypes and
    per-row shapes) into one call, as TF Serving's BasicBatchScheduler does: a batch is run when
    it holds ``max_batch_size`` rows or ``batch_timeout_micros`` after its first task, by one of
    ``num_batch_threads`` threads; with a timeout of 0 a batch runs as soon as a thread is free,
    so batches form while every thread is busy.

    Guarantees: every caller gets exactly the answer (or the error) an unbatched call would give:
    outputs are split by the rows each task brought; a batch whose outputs are not all batch-major
    (a scalar, another first dimension), or whose merged call fails, is run again task by task. A
    task larger than ``max_batch_size`` runs alone. More than ``max_enqueued_batches`` batches
    waiting is a 503 (TF Serving's UNAVAILABLE "queue ... is full"), which clients retry."""

    def __init__(self, options: BatchingOptions):
        self.options = options
        self._cond = threading.Condition()
        self._open: dict[Any, _Batch] = {}
        self._ready: list[_Batch] = []
        self._closed = False
        self.batches_run = 0
        self.tasks_run = 0
        self._threads = [
            threading.Thread(target=self._work, name=f"memgraph-tf-batch-{i}", daemon=True)
            for i in range(options.num_batch_threads)
        ]
        for t in self._threads:
            t.start()

    def submit(self, key: Any, feeds: dict, size: int, runner) -> dict:
        """Run ``runner(feeds)`` (``{name: array}`` -> ``{output: array}``), batched with other
        tasks of ``key``; returns this task's outputs or raises its error."""
        if size > self.options.max_batch_size or size < 1:
            return runner(feeds)
        task = _Task(feeds, size, runner)
        with self._cond:
            if self._closed:
                return runner(feeds)
            batch = self._open.get(key)
            if batch is not None and batch.size + size > self.options.max_batch_size:
                self._ready.append(self._open.pop(key))
                batch = None
            if batch is None:
                if len(self._ready) >= self.options.max_enqueued_batches:
                    raise ServingFailure(
                        503, "The batch scheduling queue to which this task was submitted is full"
                    )
                batch = _Batch(key, time.monotonic() + self.options.batch_timeout_micros / 1e6)
                self._open[key] = batch
            batch.tasks.append(task)
            batch.size += size
            if batch.size >= self.options.max_batch_size:
                self._ready.append(self._open.pop(key))
            self._cond.notify_all()
        task.done.wait()
        if task.error is not None:
            raise task.error
        return task.result

    def _next(self) -> _Batch | None:
        """The next batch to run (called with the lock held), waiting as long as needed."""
        while not self._closed:
            if self._ready:
                return self._ready.pop(0)
            now = time.monotonic()
            due = [b for b in self._open.values() if b.deadline <= now]
            if due:
                batch = min(due, key=lambda b: b.deadline)
                del self._open[batch.key]
                return batch
            wait = min((b.deadline - now for b in self._open.values()), default=None)
            self._cond.wait(timeout=wait)
        return None

    def _work(self) -> None:
        while True:
            with self._cond:
                batch = self._next()
            if batch is None:
                return
            self._run(batch)

    @staticmethod
    def _one(task: _Task) -> None:
        try:
            task.result = task.runner(task.feeds)
        except BaseException as exc:  # noqa: BLE001  (handed to the waiting caller)
            task.error = exc
        task.done.set()

    def _run(self, batch: _Batch) -> None:
        import numpy as np

        tasks = batch.tasks
        with self._cond:
            self.batches_run += 1
            self.tasks_run += len(tasks)
        if len(tasks) == 1:
            self._one(tasks[0])
            return
        try:
            merged = {k: np.concatenate([t.feeds[k] for t in tasks]) for k in tasks[0].feeds}
            out = tasks[0].runner(merged)
            total = batch.size
            if not all(
                isinstance(v, np.ndarray) and v.ndim >= 1 and v.shape[0] == total
                for v in out.values()
            ):
                raise _NotBatchMajor
        except BaseException:  # noqa: BLE001  (a failed or unsplittable batch: one by one)
            for t in tasks:
                self._one(t)
            return
        start = 0
        for t in tasks:
            t.result = {k: v[start : start + t.size] for k, v in out.items()}
            start += t.size
            t.done.set()

    def close(self) -> None:
        """Stop the batch threads once the queued batches are run; later calls run directly."""
        with self._cond:
            self._ready.extend(self._open.values())
            self._open.clear()
            pending = list(self._ready)
            self._ready.clear()
            self._closed = True
            self._cond.notify_all()
        for batch in pending:
            self._run(batch)
        for t in self._threads:
            t.join(timeout=5)


class _NotBatchMajor(Exception):
    pass


# ------------------------------------------------------------------------------------ the model
#: TF status code name -> the HTTP status TF Serving answers with (model_servers/http_server.cc,
#: ToHTTPStatusCode).
_TF_ERROR_STATUS = {
    "CancelledError": 499,
    "UnknownError": 500,
    "InvalidArgumentError": 400,
    "DeadlineExceededError": 504,
    "NotFoundError": 404,
    "AlreadyExistsError": 409,
    "PermissionDeniedError": 403,
    "ResourceExhaustedError": 429,
    "FailedPreconditionError": 400,
    "AbortedError": 409,
    "OutOfRangeError": 400,
    "UnimplementedError": 501,
    "InternalError": 500,
    "UnavailableError": 503,
    "DataLossError": 500,
    "UnauthenticatedError": 401,
}


def _int64_version(text: str | None) -> int | None:
    """A URL's version number; 400 "Failed to convert version: N to numeric." beyond int64, as
    TF Serving's ``ParseModelInfo`` (``http_rest_api_util.cc``) answers."""
    if text is None:
        return None
    value = int(text)
    if value > bundle.INT64_MAX:
        raise bad_request(f"Failed to convert version: {text} to numeric.")
    return value


class ModelServer:
    """Serves the versions of one model (``BASE/<version>/``, any all-digit version directory
    name) with TF Serving's semantics, for any front end:

    - REST: :meth:`handle_bytes` maps one HTTP request to ``(status, JSON bytes)`` and never
      raises (:meth:`handle` is the same with the JSON parsed);
    - any transport (REST, gRPC): :meth:`resolve`, :meth:`run_classify` / :meth:`run_regress`
      on serialized tf.Examples, :meth:`run_predict` on a dict of numpy arrays,
      :meth:`status_response` and :meth:`metadata_response` (TF Serving's protos); these raise
      :class:`~memgraph_tf.serving.errors.ServingFailure` with TF Serving's HTTP status.

    ``labels`` maps a version label to a version number. ``graph_source`` (optional) is an object
    with ``sample_blobs_per_node(seeds, fanouts, properties, options) -> list[bytes]`` used for
    ``{"node_id": ...}`` examples; its settings come from each bundle's own config asset.
    ``max_request_bytes`` is enforced by the HTTP layer; ``max_examples`` caps the examples /
    instances of one request (413); ``max_json_depth`` the nesting of a request body (400).
    ``batching`` (TF Serving's ``--enable_batching``) merges concurrent calls of one version and
    signature into one model call (:class:`BatchScheduler`), for REST and gRPC alike.
    ``model_calls`` counts the signature function calls made. Call :meth:`close` when done.
    """

    def __init__(
        self,
        base_path: str | os.PathLike,
        model_name: str | None = None,
        *,
        labels: Mapping[str, int] | None = None,
        graph_source: Any = None,
        max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES,
        max_examples: int = DEFAULT_MAX_EXAMPLES,
        max_json_depth: int = rest_json.DEFAULT_MAX_JSON_DEPTH,
        batching: BatchingOptions | None = None,
        warmup: bool = True,
    ):
        self.base_path = pathlib.Path(base_path).resolve()
        if not self.base_path.is_dir():
            raise ValueError(f"model_base_path: expected a directory, got {str(base_path)!r}")
        for key, value, low, high in (
            ("max_request_bytes", max_request_bytes, 1, None),
            ("max_examples", max_examples, 1, None),
            ("max_json_depth", max_json_depth, 2, 500),
        ):
            if (
                not isinstance(value, int)
                or isinstance(value, bool)
                or value < low
                or (high is not None and value > high)
            ):
                span = f">= {low}" if high is None else f"from {low} to {high}"
                raise ValueError(f"{key}: expected an int {span}, got {value!r}")
        self.model_name = model_name or self.base_path.name
        self.max_request_bytes = max_request_bytes
        self.max_examples = max_examples
        self.max_json_depth = max_json_depth
        self.graph_source = graph_source
        self.neighbourhoods = (
            NeighbourhoodFetcher(graph_source) if graph_source is not None else None
        )
        found = bundle.discover_versions(self.base_path)
        if not found:
            raise ValueError(
                f"model_base_path: expected numbered version directories holding saved_model.pb "
                f"under {str(base_path)!r}, found none"
            )
        self.versions: dict[int, ModelVersion] = {}
        for v, path in found.items():
            try:
                self.versions[v] = load_version(path, v)
            except (errors.BundleError, ValueError):
                raise
            except Exception as exc:  # a corrupt or unreadable SavedModel: name the directory
                first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
                raise ValueError(f"{path}: cannot load the SavedModel: {first}") from exc
            logger.info(
                "loaded %s version %d from %s (signatures: %s)",
                self.model_name,
                v,
                path.name,
                sorted(self.versions[v].functions),
            )
        self.labels = dict(labels or {})
        for lbl, v in self.labels.items():
            if v not in self.versions:
                raise ValueError(
                    f"labels: label {lbl!r} points at version {v}, expected one of "
                    f"{sorted(self.versions)}"
                )
        self.model_calls = 0
        self._calls_lock = threading.Lock()
        self.warmup_requests = 0
        self.batcher: BatchScheduler | None = None  # warmup calls run unbatched
        if warmup:
            for mv in self.versions.values():
                self.warmup_requests += self._warm_up(mv)
            self.model_calls = 0  # count the calls of requests only
        self.batching = batching
        self.batcher = BatchScheduler(batching) if batching is not None else None

    def _warm_up(self, mv: ModelVersion) -> int:
        """Replay ``mv``'s warmup records (``assets.extra/tf_serving_warmup_requests``, TFRecord of
        PredictionLog, as TF Serving's ``--enable_model_warmup`` does): the first call of a
        signature instantiates and optimizes its graph (seconds), which would otherwise fall on
        the first client's request. Classify, regress and predict logs are replayed; for our
        bundles the predict signature is also run on the classify record's blobs. A record that
        fails is logged and skipped (TF Serving would refuse the version). Returns the number of
        model calls made."""
        path = bundle.warmup_path(mv.path)
        if not path.is_file():
            return 0
        import tensorflow as tf
        from tensorflow_serving.apis import prediction_log_pb2

        calls = 0
        try:
            records = list(tf.data.TFRecordDataset(str(path)).as_numpy_iterator())
        except Exception as exc:  # noqa: BLE001  (an unreadable file: serve unwarmed)
            logger.warning("%s: cannot read the warmup records: %s", path, exc)
            return 0
        for i, raw in enumerate(records):
            try:
                entry = prediction_log_pb2.PredictionLog.FromString(raw)
                kind = entry.WhichOneof("log_type")
                if kind in ("classify_log", "regress_log"):
                    req = getattr(entry, kind).request
                    serialized = [ex.SerializeToString() for ex in req.input.example_list.examples]
                    run = self.run_classify if kind == "classify_log" else self.run_regress
                    run(mv, serialized, req.model_spec.signature_name or None)
                    calls += 1
                    key = mv.bundle_config.blob_feature_key if mv.bundle_config else None
                    blobs = (
                        [
                            b
                            for ex in req.input.example_list.examples
                            for b in ex.features.feature[key].bytes_list.value
                        ]
                        if key
                        else []
                    )
                    if (
                        blobs
                        and bundle.PREDICT_SIGNATURE in mv.signature_defs
                        and set(mv.signature_defs[bundle.PREDICT_SIGNATURE].inputs)
                        == {bundle.PREDICT_INPUT}
                    ):
                        self.run_predict(
                            mv, {bundle.PREDICT_INPUT: blobs}, bundle.PREDICT_SIGNATURE
                        )
                        calls += 1
                elif kind == "predict_log":
                    from memgraph_tf.serving import grpc_codec

                    req = entry.predict_log.request
                    feeds = {
                        k: grpc_codec.tensor_to_array(v, f"inputs[{k!r}]", self.max_examples << 20)
                        for k, v in req.inputs.items()
                    }
                    self.run_predict(mv, feeds, req.model_spec.signature_name or None)
                    calls += 1
            except Exception as exc:  # noqa: BLE001  (logged; the version is served unwarmed)
                message = exc.message if isinstance(exc, ServingFailure) else exc
                logger.warning("%s: warmup record %d failed: %s", path, i, message)
        logger.info("version %d: %d warmup model calls", mv.version, calls)
        return calls

    def close(self) -> None:
        """Stop the batch threads (if any). The server answers on, unbatched."""
        if self.batcher is not None:
            self.batcher.close()

    # -- resolution
    def resolve(self, name: str, version: str | int | None, label: str | None) -> ModelVersion:
        """The version a request names (by number, label, or the newest). 404 "Servable not
        found for request: Latest(NAME)" / "Specific(NAME, N)", 400 "Unrecognized servable
        version label: L", as TF Serving's ServerCore answers."""
        if label is not None:
            if label not in self.labels or name != self.model_name:
                raise bad_request(f"Unrecognized servable version label: {label}")
            return self.versions[self.labels[label]]
        if version is not None:
            version = int(version)
        if name != self.model_name:
            req = f"Specific({name}, {version})" if version is not None else f"Latest({name})"
            raise ServingFailure(404, f"Servable not found for request: {req}")
        if version is None:
            return self.versions[max(self.versions)]
        if version not in self.versions:
            raise ServingFailure(
                404, f"Servable not found for request: Specific({name}, {version})"
            )
        return self.versions[version]

    @staticmethod
    def _signature(mv: ModelVersion, signature_name: str | None):
        name = signature_name or DEFAULT_SIGNATURE
        if name not in mv.signature_defs:
            raise bad_request(f'Serving signature name: "{name}" not found in signature def')
        return name, mv.signature_defs[name], mv.functions[name]

    # -- request bodies
    def parse_json(self, body: bytes) -> dict:
        """See :func:`memgraph_tf.serving.rest_json.parse_request_body` (with this server's
        ``max_json_depth``)."""
        return rest_json.parse_request_body(body, max_depth=self.max_json_depth)

    def _check_size(self, doc: dict) -> None:
        n = rest_json.request_batch_size(doc)
        if n > self.max_examples:
            raise ServingFailure(
                413,
                f"Request holds {n} examples/instances, above this server's "
                f"limit of {self.max_examples} per request (max_examples, "
                f"memgraph-tf serve --max-examples)",
            )

    def _example_protos(self, examples: list, mv: ModelVersion) -> list:
        """JSON examples -> ``tf.train.Example`` s. For our bundles, an example ``{"node_id": N,
        ...}`` gets N's neighbourhood blob as its blob feature (400 when it also carries that
        feature, or the server has no graph); other models see ``node_id`` as a plain feature."""
        cfg = mv.bundle_config
        idx = (
            [i for i, e in enumerate(examples) if isinstance(e, dict) and "node_id" in e]
            if cfg is not None
            else []
        )
        if not idx:
            return [rest_json.json_to_example(e) for e in examples]
        key = cfg.blob_feature_key
        for i in idx:
            if key in examples[i]:
                raise bad_request(
                    f"examples[{i}]: 'node_id' and '{key}' are both given; send one of them"
                )
        if self.neighbourhoods is None:
            raise bad_request(
                f"examples[{idx[0]}]: 'node_id' needs a server started with "
                f"--graph; without one, send the node's blob as "
                f'{{"{key}": {{"b64": ...}}}}'
            )
        node_ids = []
        for i in idx:
            nid = examples[i]["node_id"]
            if isinstance(nid, rest_json.JsonBigNumber):
                shown = nid.text if len(nid.text) <= 40 else nid.text[:40] + "..."
                raise bad_request(
                    f"examples[{i}].node_id: expected an integer in the int64 range, got {shown}"
                )
            node_ids.append(nid)
        protos = [
            rest_json.json_to_example(
                {k: v for k, v in e.items() if k != "node_id"} if i in set(idx) else e
            )
            for i, e in enumerate(examples)
        ]
        try:
            blobs = self.neighbourhoods.fetch(
                node_ids, cfg.sampling, names=[f"examples[{i}].node_id" for i in idx]
            )
        except errors.NeighbourhoodError as exc:
            status = next(s for cls, s in NEIGHBOURHOOD_STATUS.items() if isinstance(exc, cls))
            raise ServingFailure(status, exc.message) from None
        for i, blob in zip(idx, blobs):
            protos[i].features.feature[key].bytes_list.value.append(blob)
        return protos

    def _examples(self, doc: dict, method: str, mv: ModelVersion) -> list[bytes]:
        context = rest_json.request_context(doc)
        examples = rest_json.request_examples(doc, method)
        return rest_json.serialize_examples(self._example_protos(examples, mv), context)

    # -- running signatures
    @staticmethod
    def _tf_message(exc) -> str:
        # Drop TF's eager wrapper ("Graph execution error: Detected at node ... <stack traces
        # unavailable>") and keep the op's own message, as TF Serving reports it.
        msg = exc.message
        marker = "<stack traces unavailable>\n"
        if marker in msg:
            msg = msg.split(marker, 1)[1]
        # and the eager function's name ("[Op:__inference_signature_wrapper_classify_912]"),
        # which TF Serving's session run does not add and which differs between loads
        return re.sub(r"\s*\[Op:[^\]]*\]\s*$", "", msg.strip())

    def _execute(self, fn, tensors: dict) -> dict:
        """Call a signature function on TF tensors; returns ``{output: numpy array}``. TF errors
        become the HTTP status TF Serving gives their code (``http_server.cc``)."""
        import numpy as np
        import tensorflow as tf

        with self._calls_lock:
            self.model_calls += 1
        try:
            out = fn(**tensors)
        except tf.errors.OpError as exc:
            status = _TF_ERROR_STATUS.get(type(exc).__name__, 500)
            raise ServingFailure(status, self._tf_message(exc)) from None
        except (TypeError, ValueError) as exc:  # the inputs do not fit the concrete function
            raise bad_request(str(exc)) from None
        result = {}
        for k, v in out.items():
            val = v.numpy()
            if v.dtype == tf.string and not isinstance(val, np.ndarray):
                val = np.array(val, dtype=object)  # a scalar string comes back as bytes
            result[k] = np.asarray(val)
        return result

    def _call(self, mv: ModelVersion, name: str, fn, feeds: Mapping[str, Any]) -> dict:
        """Run signature ``name`` of ``mv`` on numpy ``feeds`` (already of the signature's
        dtypes): ``{output: numpy array}``; through the batch scheduler when batching is on and
        every input has the same first dimension."""
        import tensorflow as tf

        sig = mv.signature_defs[name]

        def run(arrays: Mapping[str, Any]) -> dict:
            tensors = {
                k: tf.constant(v, dtype=tf.as_dtype(sig.inputs[k].dtype)) for k, v in arrays.items()
            }
            return self._execute(fn, tensors)

        if self.batcher is None or not feeds:
            return run(feeds)
        rows = {v.shape[0] if getattr(v, "ndim", 0) >= 1 else None for v in feeds.values()}
        if len(rows) != 1 or None in rows:
            return run(feeds)
        key = (
            mv.version,
            name,
            tuple((k, str(v.dtype), v.shape[1:]) for k, v in sorted(feeds.items())),
        )
        return self.batcher.submit(key, dict(feeds), rows.pop(), run)

    def run_predict(
        self, mv: ModelVersion, feeds: Mapping[str, Any], signature_name: str | None = None
    ) -> dict:
        """Run a predict signature on ``{input name: numpy array}`` (any transport): the
        ``{output name: numpy array}`` it returns. 400 when the inputs are not exactly the
        signature's."""
        import numpy as np

        name, sig, fn = self._signature(mv, signature_name)
        if set(feeds) != set(sig.inputs):
            extra = sorted(set(feeds) - set(sig.inputs))
            missing = sorted(set(sig.inputs) - set(feeds))
            raise bad_request(
                f"Request inputs do not match required inputs for model "
                f"`{self.model_name}`. Send extra: {extra}. Missing but required: "
                f"{missing}."
            )
        arrays = {}
        for k, v in feeds.items():
            np_dt = rest_json.numpy_dtype(sig.inputs[k].dtype)
            arrays[k] = np.asarray(v, dtype=np_dt) if np_dt is not None else np.asarray(v)
        return self._call(mv, name, fn, arrays)

    def run_classify(self, mv: ModelVersion, serialized: list[bytes], signature_name: str | None):
        """Run a classify signature (TF Serving's classifier contract) on serialized
        tf.Examples (any transport): ``(classes, scores)``, each ``[n, k]`` or None when the
        signature lacks it. Without a signature name, our bundles use their ``classify``
        signature (their ``serving_default`` is the predict one), other SavedModels
        ``serving_default``."""
        import numpy as np
        import tensorflow as tf

        if (
            not signature_name
            and mv.bundle_config is not None
            and bundle.CLASSIFY_SIGNATURE in mv.signature_defs
        ):
            signature_name = bundle.CLASSIFY_SIGNATURE
        name, sig, fn = self._signature(mv, signature_name)
        classes_key, scores_key = bundle.CLASSES_OUTPUT, bundle.SCORES_OUTPUT
        if len(sig.inputs) != 1:
            raise bad_request(
                f"Expected one input Tensor in signature {name!r}, got {len(sig.inputs)}"
            )
        ((in_key, in_info),) = sig.inputs.items()
        if in_info.dtype != tf.string.as_datatype_enum:
            raise bad_request(
                f"Expected input {in_key!r} of signature {name!r} to be DT_STRING "
                f"serialized tf.Examples"
            )
        if classes_key not in sig.outputs and scores_key not in sig.outputs:
            raise bad_request(
                f"Expected signature {name!r} to have a 'classes' or 'scores' "
                f"output, got {sorted(sig.outputs)}"
            )
        feed = np.empty(len(serialized), dtype=object)
        feed[:] = list(serialized)
        out = self._call(mv, name, fn, {in_key: feed})
        n = len(serialized)
        classes, scores = out.get(classes_key), out.get(scores_key)
        for key, arr in ((classes_key, classes), (scores_key, scores)):
            if arr is not None and (arr.ndim != 2 or arr.shape[0] != n):
                raise bad_request(
                    f"Expected output Tensor {key!r} of shape [{n}, k], got {list(arr.shape)}"
                )
        if classes is not None and scores is not None and classes.shape != scores.shape:
            raise bad_request(
                f"Tensors 'classes' {list(classes.shape)} and 'scores' "
                f"{list(scores.shape)} do not have the same shape"
            )
        if scores is not None and scores.dtype.kind != "f":
            raise bad_request(f"Expected scores Tensor of DT_FLOAT, got {scores.dtype}")
        if classes is not None and classes.dtype != object:
            raise bad_request(f"Expected classes Tensor of DT_STRING, got {classes.dtype}")
        return classes, scores

    def run_regress(self, mv: ModelVersion, serialized: list[bytes], signature_name: str | None):
        """Run a regress signature on serialized tf.Examples (any transport): a ``[n]`` array."""
        import numpy as np
        import tensorflow as tf

        name, sig, fn = self._signature(mv, signature_name)
        if (
            len(sig.inputs) != 1
            or next(iter(sig.inputs.values())).dtype != tf.string.as_datatype_enum
        ):
            raise bad_request(f"Expected one DT_STRING input Tensor in signature {name!r}")
        if "outputs" not in sig.outputs:
            raise bad_request(
                f"Expected signature {name!r} to have an 'outputs' output, got "
                f"{sorted(sig.outputs)}"
            )
        feed = np.empty(len(serialized), dtype=object)
        feed[:] = list(serialized)
        out = self._call(mv, name, fn, {next(iter(sig.inputs)): feed})
        vals = out["outputs"]
        if vals.ndim == 2 and vals.shape[1] == 1:
            vals = vals[:, 0]
        if vals.ndim != 1 or vals.shape[0] != len(serialized) or vals.dtype.kind != "f":
            raise bad_request(
                f"Expected output Tensor 'outputs' of DT_FLOAT and shape "
                f"[{len(serialized)}] or [{len(serialized)}, 1], got "
                f"{out['outputs'].dtype} {list(out['outputs'].shape)}"
            )
        return vals

    # -- REST methods on parsed bodies
    def classify(self, mv: ModelVersion, doc: dict) -> dict:
        """``:classify`` for a parsed body: ``{"results": [[[label, score], ...], ...]}`` (write
        it with :func:`~memgraph_tf.serving.rest_json.dumps`)."""
        serialized = self._examples(doc, "classify", mv)
        classes, scores = self.run_classify(mv, serialized, doc.get("signature_name"))
        return rest_json.classify_response(classes, scores)

    def regress(self, mv: ModelVersion, doc: dict) -> dict:
        """``:regress`` for a parsed body: ``{"results": [v, ...]}``."""
        serialized = self._examples(doc, "regress", mv)
        return rest_json.regress_response(
            self.run_regress(mv, serialized, doc.get("signature_name"))
        )

    def predict(self, mv: ModelVersion, doc: dict) -> dict:
        """``:predict`` for a parsed body, row (``instances``) or columnar (``inputs``)."""
        name, sig, _ = self._signature(mv, doc.get("signature_name"))
        feeds, columnar = rest_json.predict_feeds(
            doc, {k: info.dtype for k, info in sig.inputs.items()}, doc.get("signature_name", "")
        )
        return rest_json.predict_response(self.run_predict(mv, feeds, name), columnar)

    # -- status and metadata
    def status_response(
        self, name: str, version: str | int | None = None, label: str | None = None
    ):
        """TF Serving's ``GetModelStatusResponse`` (every version, newest first, or the one
        named). 404 "Could not find any versions of model NAME" / "Could not find version N of
        model NAME", 400 for an unknown label."""
        from tensorflow_serving.apis import get_model_status_pb2

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
        resp = get_model_status_pb2.GetModelStatusResponse()
        for v in versions:
            st = resp.model_version_status.add()
            st.version = v
            st.state = get_model_status_pb2.ModelVersionStatus.AVAILABLE
            st.status.SetInParent()  # error_code OK, error_message "" (printed, as TF Serving)
        return resp

    def status(self, name: str, version: str | int | None = None, label: str | None = None) -> dict:
        """The status answer as TF Serving prints it (``always_print_primitive_fields``)."""
        from google.protobuf import json_format

        return json_format.MessageToDict(
            self.status_response(name, version, label),
            preserving_proto_field_name=True,
            always_print_fields_with_no_presence=True,
        )

    def metadata_response(self, mv: ModelVersion):
        """TF Serving's ``GetModelMetadataResponse`` for ``mv``: its name and version, and the
        ``signature_def`` metadata (a ``SignatureDefMap`` packed in an ``Any``)."""
        from tensorflow_serving.apis import get_model_metadata_pb2

        resp = get_model_metadata_pb2.GetModelMetadataResponse()
        resp.model_spec.name = self.model_name
        resp.model_spec.version.value = mv.version
        sdm = get_model_metadata_pb2.SignatureDefMap()
        for k, v in mv.signature_defs.items():
            sdm.signature_def[k].CopyFrom(v)
        resp.metadata["signature_def"].Pack(sdm)
        return resp

    def metadata(self, mv: ModelVersion) -> dict:
        """The metadata answer as TF Serving's REST API prints it (``http_rest_api_util.cc``,
        ``ToJsonString``): ``model_spec`` and the unpacked ``SignatureDefMap``, proto field
        names, default-valued fields included (``"dim": []``, ``"name": ""``), no ``"@type"``."""
        from google.protobuf import json_format
        from tensorflow_serving.apis import get_model_metadata_pb2

        resp = self.metadata_response(mv)

        sig_map = get_model_metadata_pb2.SignatureDefMap()
        resp.metadata["signature_def"].Unpack(sig_map)
        opts = {"preserving_proto_field_name": True, "always_print_fields_with_no_presence": True}
        return {
            "model_spec": json_format.MessageToDict(resp.model_spec, **opts),
            "metadata": {"signature_def": json_format.MessageToDict(sig_map, **opts)},
        }

    # -- REST dispatch
    def _rest_post(
        self, name: str, version: int | None, label: str | None, verb: str, body: bytes
    ) -> dict:
        doc = self.parse_json(body)
        if verb == "predict":
            self._check_size(doc)
            mv = self.resolve(name, version, label)
            return self.predict(mv, doc)
        rest_json.request_context(doc)  # TF Serving checks the context before the examples
        rest_json.request_examples(doc, verb)
        self._check_size(doc)
        mv = self.resolve(name, version, label)
        return self.classify(mv, doc) if verb == "classify" else self.regress(mv, doc)

    def _dispatch(self, method: str, path: str) -> tuple[str, tuple]:
        m = _PREDICT_RE.fullmatch(path)
        if method == "POST" and m:
            name, version, label, verb = m.groups()
            name = urllib.parse.unquote(name)
            label = urllib.parse.unquote(label) if label is not None else None
            version = _int64_version(version)
            if verb not in ("classify", "regress", "predict"):  # TF Serving compares exactly
                raise bad_request(f"Malformed request: {method} {path}")
            return "post", (name, version, label, verb)
        m = _STATUS_RE.fullmatch(path)
        if method == "GET" and m:
            name, version, label, sub = m.groups()
            name = urllib.parse.unquote(name) if name else ""
            label = urllib.parse.unquote(label) if label is not None else None
            version = _int64_version(version)
            if not name:
                raise bad_request("Missing model name in request.")
            return ("metadata" if sub == "metadata" else "status"), (name, version, label)
        if not _API_RE.fullmatch(path):
            raise ServingFailure(404, f"Not found: {method} {path}")
        raise bad_request(f"Malformed request: {method} {path}")

    def answer(self, method: str, path: str, body: bytes) -> tuple[int, Any]:
        """One REST request -> ``(http_status, answer)`` where the answer is the JSON value to
        write with :func:`~memgraph_tf.serving.rest_json.dumps`. Never raises."""
        path = path.split("?", 1)[0].split("#", 1)[0]
        try:
            kind, args = self._dispatch(method, path)
            if kind == "post":
                name, version, label, verb = args
                return 200, self._rest_post(name, version, label, verb, body)
            name, version, label = args
            if kind == "metadata":
                return 200, self.metadata(self.resolve(name, version, label))
            return 200, self.status(name, version, label)
        except ServingFailure as exc:
            return exc.status, {"error": exc.message}
        except Exception as exc:  # a server bug: still answer in TF Serving's error format
            logger.exception("internal error on %s %s", method, path)
            return 500, {"error": f"{type(exc).__name__}: {exc}"}

    def handle_bytes(self, method: str, path: str, body: bytes) -> tuple[int, bytes]:
        """One REST request -> ``(http_status, UTF-8 JSON body)``, the body written as TF
        Serving writes it (float32 with six significant digits where they round-trip). Never
        raises for any input."""
        status, payload = self.answer(method, path, body)
        try:
            return status, rest_json.dumps(payload).encode("utf-8")
        except Exception as exc:  # pragma: no cover  (answers are built from known types)
            logger.exception("cannot write the answer to %s %s", method, path)
            return 500, rest_json.dumps({"error": f"{type(exc).__name__}: {exc}"}).encode()

    def handle(self, method: str, path: str, body: bytes) -> tuple[int, dict]:
        """:meth:`handle_bytes` with the JSON body parsed back (``NaN`` / ``Infinity`` become
        floats). Never raises for bad input."""
        status, data = self.handle_bytes(method, path, body)
        return status, json.loads(data)


__all__ = [
    "DEFAULT_MAX_EXAMPLES",
    "DEFAULT_MAX_REQUEST_BYTES",
    "BatchScheduler",
    "BatchingOptions",
    "ModelServer",
    "ModelVersion",
    "load_version",
    "op_names",
]
