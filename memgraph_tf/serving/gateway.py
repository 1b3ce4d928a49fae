"""The node-id gateway: ``memgraph-tf serve --graph URI --upstream HOST:PORT``.

A front for a real TF Serving (or anything speaking its gRPC API, ``memgraph-tf serve
--grpc-port`` included) that answers TF Serving's REST and gRPC APIs, turns each ``node_id``
example into its neighbourhood blob -- the code path of ``memgraph-tf serve --graph``
(:mod:`.node_examples`) -- and forwards the request to the upstream over gRPC with the
generated ``tensorflow-serving-api`` stubs (``PredictionServiceStub``, ``ModelServiceStub``).
It holds no model: :class:`UpstreamServer` stands in for the
:class:`~.model_server.ModelServer` under both front ends (:mod:`.rest_api`, :mod:`.server`,
:mod:`.grpc_server`), and runs every model call on the upstream.

- **Sampling settings** per model version: from the bundle config in the upstream's own
  answer -- ``GetModelMetadata`` says which version the request resolves to and whether it has
  the ``memgraph_tf_config`` signature; a ``Predict`` on that signature, pinned to that version,
  returns the config (cached for the life of the gateway: a version's files never change) --
  or from ``bundle_path`` (``BASE`` or ``BASE/<version>``) when given. The resolved version is
  cached ``metadata_ttl_s`` (default 1 s) per (model, version or label), and the forwarded
  request is pinned to it, so blobs are always sampled with the settings of the version that
  runs them, even while the upstream switches versions.
- **Blobs pass through unchanged**; examples without ``node_id`` are forwarded as sent.
- **Embeddings by node id**: ``:predict`` / ``Predict`` on a signature that embeds nodes
  (``embed``, ``embed_source``, ``embed_target``: :func:`.node_examples.embed_role`) may name
  ``node_id`` for the ``blobs`` input, as on the model server: the gateway samples the blobs and
  forwards a ``Predict`` of blobs; the answer has the model server's shape.
- **Freshness**: a ``node_id`` answer carries the model server's REST headers and gRPC trailing
  metadata (:mod:`.freshness`): the upstream version the forwarded request was pinned to, and
  the moment the gateway began reading the graph.
- **Errors**: a status the upstream answers keeps its gRPC code and message (REST: that code's
  HTTP status from the status table, :mod:`.errors`). An upstream that refuses connections is
  UNAVAILABLE (503) at once; the channel retries connecting after 0.1-2 s, not TF's default of
  up to 120 s, so a restarted upstream is picked up quickly. A reply that is not a valid answer
  -- bytes that are not HTTP/2 gRPC, a message above ``max_message_bytes`` (the gRPC library
  stops reading it there), bytes that are not the response message, or a response that lacks
  what the request needs (no signature map, fewer results than examples) -- is 502 over REST
  and UNAVAILABLE over gRPC (the gRPC project's mapping of HTTP 502, doc/http-grpc-status-
  mapping.md), naming the upstream and the fault.
- **Deadlines and cancellation**: every upstream call carries a deadline -- the incoming gRPC
  call's remaining time when it has one, at most ``timeout_s`` (default 30 s) -- and a gRPC
  call the client cancels cancels its upstream call. An upstream that never answers is
  DEADLINE_EXCEEDED (504) after that deadline, never a hang.
- **Credentials**: only the graph's, from the environment (``MEMGRAPH_TF_*``, as ``--graph``
  reads them); the upstream channel is plain gRPC (TF Serving's own gRPC port has no TLS
  unless configured with ``--ssl_config_file``, which this gateway does not speak), so an
  upstream address with credentials (``USER:PASSWORD@HOST:PORT``) is refused, its credentials
  left out of the message.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import grpc

from memgraph_tf.errors import ServingFailure
from memgraph_tf.serving import bundle, freshness, grpc_codec, metrics
from memgraph_tf.serving.bundle import BundleConfig
from memgraph_tf.serving.json_parse import DEFAULT_MAX_JSON_DEPTH
from memgraph_tf.serving.model_server import DEFAULT_MAX_REQUEST_BYTES, ModelServer
from memgraph_tf.serving.neighbourhoods import NeighbourhoodFetcher
from memgraph_tf.serving.node_examples import DEFAULT_MAX_EXAMPLES

logger = logging.getLogger(__name__)

#: Seconds an upstream call may take when the request brings no earlier deadline.
DEFAULT_UPSTREAM_TIMEOUT_S = 30.0
#: Seconds a resolved version (model, version or label -> version and signatures) is reused.
DEFAULT_METADATA_TTL_S = 1.0
#: gRPC message limit both ways on the upstream channel (TF Serving's own limit is INT_MAX).
DEFAULT_UPSTREAM_MESSAGE_BYTES = 64 * 1024 * 1024


@dataclass
class RemoteVersion:
    """One upstream model version as the front ends see it (the fields of
    :class:`~.loading.ModelVersion` they read): its number, signatures and bundle config."""

    version: int
    model_name: str
    signature_defs: dict[str, Any]
    bundle_config: BundleConfig | None = None
    sampling: Any = None
    metadata: Any = None  # the upstream's GetModelMetadataResponse
    functions: dict[str, Any] = field(default_factory=dict)
    path: str = ""


#: The HTTP status of an upstream reply that is not a valid answer ("Bad Gateway").
BAD_GATEWAY_STATUS = 502
#: The gRPC code of such a reply: the gRPC project's mapping of HTTP 502 (grpc/grpc,
#: doc/http-grpc-status-mapping.md).
BAD_GATEWAY_CODE = "UNAVAILABLE"
#: Parts of the status details the gRPC library itself gives when the reply was no valid gRPC
#: answer (no status the upstream sent): bytes that are not HTTP/2, a message above the channel's
#: receive limit (``CLIENT:``: the limit on this side), bytes that do not parse as the response.
INVALID_REPLY_DETAILS = (
    "Failed parsing HTTP/2",
    "CLIENT: Received message larger than max",
    "Exception deserializing response",
)


def invalid_reply(target: str, what: str) -> ServingFailure:
    """The failure of a request whose upstream reply is not a valid answer: HTTP 502 and gRPC
    UNAVAILABLE, the message naming the upstream and ``what`` is wrong."""
    return ServingFailure(
        BAD_GATEWAY_STATUS, f"upstream {target}: invalid reply: {what}", grpc_code=BAD_GATEWAY_CODE
    )


def _failure(exc: grpc.RpcError, target: str) -> ServingFailure:
    """The upstream's status as a ServingFailure of the same code and message; a reply the gRPC
    library could not read (:data:`INVALID_REPLY_DETAILS`) is :func:`invalid_reply`."""
    code = exc.code() if callable(getattr(exc, "code", None)) else None
    name = code.name if code is not None else "UNKNOWN"
    details = exc.details() or name
    if any(marker in details for marker in INVALID_REPLY_DETAILS):
        return invalid_reply(target, details)
    return ServingFailure.for_code(name, details)


@contextlib.contextmanager
def _reading_reply(target: str, what: str) -> Iterator[None]:
    """Inside, any error reading the upstream's ``what`` reply (a tensor that does not decode, a
    config that does not parse, a missing field) is :func:`invalid_reply`."""
    try:
        yield
    except ServingFailure as exc:  # the codec's verdict on a tensor of the reply
        raise invalid_reply(target, f"{what}: {exc.message}") from exc
    except Exception as exc:  # whatever the reply breaks, it is the upstream's fault
        logger.debug("upstream %s: invalid %s reply", target, what, exc_info=True)
        raise invalid_reply(target, f"{what}: {type(exc).__name__}: {exc}") from exc


class UpstreamServer(ModelServer):
    """What the REST and gRPC front ends call, answered by an upstream TF Serving (see the
    module docstring). ``target``: the upstream's gRPC ``host:port``; ``graph_source``: as
    :class:`~.model_server.ModelServer`'s (None: ``node_id`` examples are refused as there);
    ``bundle_path``: read the bundle configs from here instead of asking the upstream."""

    def __init__(
        self,
        target: str,
        graph_source: Any = None,
        *,
        bundle_path: str | None = None,
        timeout_s: float = DEFAULT_UPSTREAM_TIMEOUT_S,
        metadata_ttl_s: float = DEFAULT_METADATA_TTL_S,
        max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES,
        max_examples: int = DEFAULT_MAX_EXAMPLES,
        max_json_depth: int = DEFAULT_MAX_JSON_DEPTH,
        max_message_bytes: int = DEFAULT_UPSTREAM_MESSAGE_BYTES,
        sampling_seed: int | str | None = None,
        metrics_path: str | None = None,
        access_log: bool = False,
    ):
        from tensorflow_serving.apis import model_service_pb2_grpc, prediction_service_pb2_grpc

        for key, value in (("timeout_s", timeout_s), ("metadata_ttl_s", metadata_ttl_s)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise ValueError(f"{key}: expected a number of seconds >= 0, got {value!r}")
        if not timeout_s:
            raise ValueError("timeout_s: expected a number of seconds > 0, got 0")
        if not isinstance(target, str) or ":" not in target:
            raise ValueError(f"--upstream: expected HOST:PORT, got {target!r}")
        if "@" in target:  # refused, and never shown (nor the address with them)
            raise ValueError(
                "--upstream: expected HOST:PORT without user or password (the upstream's gRPC "
                "API takes none), got an address with credentials"
            )
        # the checks and settings a ModelServer makes, without loading anything
        self._init_settings(
            max_request_bytes, max_examples, max_json_depth, sampling_seed, metrics_path
        )
        self.access_log = bool(access_log)
        self.graph_source = graph_source
        self.neighbourhoods = (
            _timed_fetcher(NeighbourhoodFetcher(graph_source), self)
            if graph_source is not None
            else None
        )
        self.target = target
        self.model_name = f"upstream {target}"
        self.models = {}
        self.batching = self.batcher = None
        self.poll_wait_s = None
        self.timeout_s = float(timeout_s)
        self.metadata_ttl_s = float(metadata_ttl_s)
        self.bundle_path = bundle_path
        self.channel = grpc.insecure_channel(
            target,
            options=[
                ("grpc.max_receive_message_length", int(max_message_bytes)),
                ("grpc.max_send_message_length", int(max_message_bytes)),
                ("grpc.initial_reconnect_backoff_ms", 100),
                ("grpc.max_reconnect_backoff_ms", 2000),
                # no grpc.min_reconnect_backoff_ms: gRPC core takes it as the least time a
                # connection attempt is given (default 20 s); 100 ms failed slow links at once
            ],
        )
        self.prediction = prediction_service_pb2_grpc.PredictionServiceStub(self.channel)
        self.model_service = model_service_pb2_grpc.ModelServiceStub(self.channel)
        self._resolved: dict[tuple, tuple[float, RemoteVersion]] = {}
        self._configs: dict[tuple[str, int], BundleConfig | None] = {}
        self._lock = threading.Lock()
        self.upstream_calls = 0

    @property
    def versions(self) -> dict:
        """Empty: the gateway holds no version (for the front ends' start-up log lines)."""
        return {}

    def close(self) -> None:
        """Close the upstream channel."""
        self.channel.close()

    # -- upstream calls
    def _upstream(self, method: Any, request: Any) -> Any:
        """One upstream call with the request's deadline (the incoming gRPC call's remaining
        time, at most ``timeout_s``), cancelled when the incoming call is; an upstream failure
        becomes the ServingFailure of its code and message."""
        timeout = self.timeout_s
        ctx = metrics.current_grpc_context()
        if ctx is not None:
            remaining = ctx.time_remaining()
            if remaining is not None:
                timeout = max(0.0, min(timeout, remaining))
        self.upstream_calls += 1
        future = method.future(request, timeout=timeout)
        if ctx is not None:
            ctx.add_callback(future.cancel)  # runs when the incoming call ends or is cancelled
        try:
            return future.result()
        except grpc.RpcError as exc:
            raise _failure(exc, self.target) from None
        except grpc.FutureCancelledError:
            raise ServingFailure.for_code("CANCELLED", "the request was cancelled") from None

    # -- resolution
    def resolve(self, name: str, version: str | int | None, label: str | None) -> RemoteVersion:
        """The upstream version a request names, through ``GetModelMetadata`` (cached
        ``metadata_ttl_s``), with its bundle config and sampling settings; noted as the version
        that answers (:func:`.freshness.note_model_version`)."""
        from tensorflow_serving.apis import get_model_metadata_pb2

        record = metrics.current()
        if record is not None:
            record.model = name
        key = (name, None if version is None else int(version), label)
        now = time.monotonic()
        with self._lock:
            hit = self._resolved.get(key)
        if hit is not None and hit[0] > now:
            mv = hit[1]
        else:
            req = get_model_metadata_pb2.GetModelMetadataRequest()
            req.model_spec.name = name
            if label is not None:
                req.model_spec.version_label = label
            elif version is not None:
                req.model_spec.version.value = int(version)
            req.metadata_field.append(bundle.SIGNATURE_DEF_FIELD)
            resp = self._upstream(self.prediction.GetModelMetadata, req)
            sig_map = get_model_metadata_pb2.SignatureDefMap()
            key = bundle.SIGNATURE_DEF_FIELD
            if key not in resp.metadata or not resp.metadata[key].Unpack(sig_map):
                raise invalid_reply(self.target, f"GetModelMetadata: no {key} SignatureDefMap")
            if not resp.model_spec.HasField("version"):
                raise invalid_reply(self.target, "GetModelMetadata: no model_spec.version")
            sigs = dict(sig_map.signature_def)
            v = int(resp.model_spec.version.value)
            config = self._bundle_config(name, v, sigs)
            mv = RemoteVersion(
                version=v,
                model_name=name,
                signature_defs=sigs,
                bundle_config=config,
                sampling=(
                    bundle.inference_sampling(config, self.sampling_seed)
                    if config is not None
                    else None
                ),
                metadata=resp,
                functions=dict.fromkeys(sigs),
            )
            with self._lock:
                self._resolved[key] = (now + self.metadata_ttl_s, mv)
        if record is not None:
            record.version = mv.version
        freshness.note_model_version(mv.version)  # the version the forwarded request is pinned to
        return mv

    def _bundle_config(self, name: str, version: int, sigs: dict) -> BundleConfig | None:
        """Version ``version``'s bundle config: from ``bundle_path`` when given, else through
        the upstream's ``memgraph_tf_config`` signature (None when it has none: not a
        memgraph-tf bundle). Cached per version."""
        key = (name, version)
        with self._lock:
            if key in self._configs:
                return self._configs[key]
        if self.bundle_path is not None:
            import pathlib

            base = pathlib.Path(self.bundle_path)
            versioned = base / bundle.version_dir_name(version)
            config = bundle.read_bundle_config(versioned if versioned.is_dir() else base)
        elif bundle.CONFIG_SIGNATURE in sigs:
            from tensorflow_serving.apis import predict_pb2

            req = predict_pb2.PredictRequest()
            req.model_spec.name = name
            req.model_spec.version.value = version
            req.model_spec.signature_name = bundle.CONFIG_SIGNATURE
            grpc_codec.array_to_tensor(_int64_scalar(), req.inputs[bundle.CONFIG_INPUT])
            resp = self._upstream(self.prediction.Predict, req)
            with _reading_reply(self.target, f"Predict {bundle.CONFIG_SIGNATURE}"):
                text = grpc_codec.tensor_to_array(
                    resp.outputs[bundle.CONFIG_OUTPUT], bundle.CONFIG_OUTPUT, 1 << 20
                )
                config = BundleConfig.from_json(text.reshape(-1)[0])
        else:
            config = None
        with self._lock:
            self._configs[key] = config
        return config

    # -- running signatures upstream
    @staticmethod
    def _spec(out: Any, mv: RemoteVersion, signature_name: str | None) -> None:
        out.name = mv.model_name
        out.version.value = mv.version
        if signature_name:
            out.signature_name = signature_name

    def _example_request(self, message: Any, mv: RemoteVersion, serialized, name) -> Any:
        req = message()
        self._spec(req.model_spec, mv, name)
        examples = req.input.example_list.examples
        for data in serialized:
            examples.add().ParseFromString(data)
        return req

    def run_classify(self, mv: RemoteVersion, serialized: list[bytes], signature_name: str | None):
        """Classify on the upstream, pinned to ``mv``'s version: ``(classes, scores)`` as
        :meth:`.ModelServer.run_classify` returns them."""
        import numpy as np
        from tensorflow_serving.apis import classification_pb2

        name = self.example_signature(mv, signature_name, "classify")
        req = self._example_request(classification_pb2.ClassificationRequest, mv, serialized, name)
        start = time.perf_counter()
        try:
            resp = self._upstream(self.prediction.Classify, req)
        finally:
            self._observe_model_call(mv, time.perf_counter() - start)
        rows = resp.result.classifications
        if len(rows) != len(serialized):
            raise invalid_reply(
                self.target, f"Classify: {len(rows)} result(s) for {len(serialized)} example(s)"
            )
        sig = mv.signature_defs.get(name)
        has_classes = sig is None or bundle.CLASSES_OUTPUT in sig.outputs
        has_scores = sig is None or bundle.SCORES_OUTPUT in sig.outputs
        k = len(rows[0].classes) if len(rows) else 0
        classes = np.empty((len(rows), k), dtype=object) if has_classes else None
        scores = np.zeros((len(rows), k), dtype=np.float32) if has_scores else None
        for i, row in enumerate(rows):
            if len(row.classes) != k:
                raise invalid_reply(self.target, "Classify: classifications of unequal length")
            for j, c in enumerate(row.classes):
                if classes is not None:
                    classes[i, j] = c.label.encode("utf-8")
                if scores is not None:
                    scores[i, j] = c.score
        return classes, scores

    def run_regress(self, mv: RemoteVersion, serialized: list[bytes], signature_name: str | None):
        """Regress on the upstream, pinned to ``mv``'s version: a ``[n]`` float32 array."""
        import numpy as np
        from tensorflow_serving.apis import regression_pb2

        name = self.example_signature(mv, signature_name, "regress")
        req = self._example_request(regression_pb2.RegressionRequest, mv, serialized, name)
        start = time.perf_counter()
        try:
            resp = self._upstream(self.prediction.Regress, req)
        finally:
            self._observe_model_call(mv, time.perf_counter() - start)
        values = [r.value for r in resp.result.regressions]
        if len(values) != len(serialized):
            raise invalid_reply(
                self.target, f"Regress: {len(values)} result(s) for {len(serialized)} example(s)"
            )
        return np.array(values, dtype=np.float32)

    def _call(self, mv: RemoteVersion, name: str, fn: Any, feeds: Any) -> dict:
        """A predict signature's call (:meth:`.ModelServer.run_predict` has checked the inputs
        against the signature): a ``Predict`` on the upstream, pinned to ``mv``'s version."""
        from tensorflow_serving.apis import predict_pb2

        req = predict_pb2.PredictRequest()
        self._spec(req.model_spec, mv, name)
        for k, v in feeds.items():
            grpc_codec.array_to_tensor(v, req.inputs[k])
        start = time.perf_counter()
        try:
            resp = self._upstream(self.prediction.Predict, req)
        finally:
            self._observe_model_call(mv, time.perf_counter() - start)
        with _reading_reply(self.target, "Predict"):
            return {
                k: grpc_codec.tensor_to_array(t, f"output '{k}'", 1 << 40)
                for k, t in resp.outputs.items()
            }

    # -- status and metadata
    def status_response(self, name: str, version: str | int | None = None, label=None):
        """The upstream's ``GetModelStatusResponse``."""
        from tensorflow_serving.apis import get_model_status_pb2

        record = metrics.current()
        if record is not None:
            record.model = name
        req = get_model_status_pb2.GetModelStatusRequest()
        req.model_spec.name = name
        if label is not None:
            req.model_spec.version_label = label
        elif version is not None:
            req.model_spec.version.value = int(version)
        return self._upstream(self.model_service.GetModelStatus, req)

    def metadata_response(self, mv: RemoteVersion):
        """The upstream's ``GetModelMetadataResponse`` for ``mv``."""
        return mv.metadata


def _int64_scalar():
    import numpy as np

    return np.asarray(0, dtype=np.int64)


def _timed_fetcher(inner: Any, server: Any) -> Any:
    from memgraph_tf.serving.model_server import TimedFetcher

    return TimedFetcher(inner, server)


__all__ = [
    "BAD_GATEWAY_CODE",
    "BAD_GATEWAY_STATUS",
    "DEFAULT_METADATA_TTL_S",
    "DEFAULT_UPSTREAM_MESSAGE_BYTES",
    "DEFAULT_UPSTREAM_TIMEOUT_S",
    "INVALID_REPLY_DETAILS",
    "RemoteVersion",
    "UpstreamServer",
    "invalid_reply",
]
