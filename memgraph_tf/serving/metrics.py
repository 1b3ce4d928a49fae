"""Prometheus metrics of ``memgraph-tf serve`` (``/monitoring/prometheus/metrics``), with the
``prometheus_client`` library, and the per-request record that feeds them and the access log.

Names follow TF Serving where it has the metric (``servables/tensorflow/util.cc``,
``tensorflow/cc/saved_model/loader.cc``), written as its exporter writes them
(``util/prometheus_exporter.cc``: every character outside ``[a-zA-Z0-9_]`` of the name becomes
``:``, so ``/tensorflow/serving/request_count`` is ``:tensorflow:serving:request_count``; a counter
is written ``# TYPE NAME counter`` with samples named NAME, no ``_total``; latencies are in
microseconds, buckets ``10 * 1.8**i``, i < 33):

- ``:tensorflow:serving:request_count{model_name, status}`` -- requests by status code name;
- ``:tensorflow:serving:request_latency{model_name, API, entrypoint}`` -- whole request, usec
  (``API``: Classify, Regress, Predict, GetModelMetadata, GetModelStatus; ``entrypoint``: REST,
  GRPC);
- ``:tensorflow:serving:runtime_latency{model_name, API, runtime}`` -- the model call, usec
  (``runtime``: TF2, the eager signature function this server calls);
- ``:tensorflow:serving:request_example_counts{model}`` (histogram, buckets 1, 2, 4, ...,
  16384) and ``:tensorflow:serving:request_example_count_total{model}``;
- ``:tensorflow:cc:saved_model:load_attempt_count{model_path, status}`` (``success`` / ``fail``)
  and ``:tensorflow:cc:saved_model:load_latency{model_path}`` (usec, successful loads).

Ours, in Prometheus's own conventions (seconds, ``_total`` counters):
``memgraph_tf_requests_total{model_name, version, API, entrypoint, code}`` (requests and errors),
``memgraph_tf_graph_fetch_latency_seconds{model_name}`` (``node_id`` -> blobs),
``memgraph_tf_batch_size{model_name}`` (rows per model call under ``--enable-batching``),
``memgraph_tf_loaded_versions{model_name}``.

The ``model_name`` / ``model`` label of a request's metrics is the name it asked for only when
the server knows that model (it has loaded versions of it, or answered a request for it OK);
every other name is counted under the one value :data:`UNKNOWN_MODEL`, so requests to made-up
names cannot grow the page. TF Serving labels each request with the name it asked for
(``RecordModelRequestCount(request->model_spec().name(), status)``,
``model_servers/prediction_service_impl.cc`` and ``http_server.cc``), whatever it is: the label
names and the known models' values are TF Serving's, the bound is this server's.

Each :class:`ServerMetrics` has its own registry, so several servers in one process do not mix.
"""

from __future__ import annotations

import contextvars
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.metrics_core import Metric

#: TF Serving's path for the page (``PrometheusExporter::kPrometheusPath``).
METRICS_PATH = "/monitoring/prometheus/metrics"
#: The Content-Type of the page (Prometheus text format 0.0.4).
CONTENT_TYPE = CONTENT_TYPE_LATEST
#: TF Serving's latency buckets: ``monitoring::Buckets::Exponential(10, 1.8, 33)`` (usec).
LATENCY_BUCKETS_US = tuple(10.0 * 1.8**i for i in range(33))
#: TF Serving's example-count buckets: ``Exponential(1, 2, 15)``.
EXAMPLE_BUCKETS = tuple(float(2**i) for i in range(15))
#: The model label of a request naming a model the server does not know.
UNKNOWN_MODEL = "(unknown)"
_TF_PREFIX = ":tensorflow:"
#: TF Serving's counter names that end in "_total", by the family name prometheus_client gives.
_TF_COUNTER_NAMES = {
    ":tensorflow:serving:request_example_count": ":tensorflow:serving:request_example_count_total"
}


@dataclass
class RequestRecord:
    """What one request did, filled in as it runs (see :func:`current`): the front end sets
    ``entrypoint``, ``api`` and ``method``; the model core the ``model``, ``version``,
    ``examples`` and the time spent fetching blobs and running the model."""

    entrypoint: str
    api: str
    method: str
    model: str | None = None
    version: int | None = None
    examples: int | None = None
    graph_fetch_s: float = 0.0
    model_s: float = 0.0
    start: float = field(default_factory=time.perf_counter)


_CURRENT: contextvars.ContextVar[RequestRecord | None] = contextvars.ContextVar(
    "memgraph_tf_request", default=None
)


def begin(entrypoint: str, api: str, method: str) -> tuple[RequestRecord, contextvars.Token]:
    """Start recording a request on this thread: ``(record, token)``; pass the token to
    :func:`end`."""
    record = RequestRecord(entrypoint, api, method)
    return record, _CURRENT.set(record)


def end(token: contextvars.Token) -> None:
    """Stop recording the request :func:`begin` started."""
    _CURRENT.reset(token)


def current() -> RequestRecord | None:
    """The record of the request this thread is answering, or None."""
    return _CURRENT.get()


_GRPC_CONTEXT: contextvars.ContextVar[Any] = contextvars.ContextVar(
    "memgraph_tf_grpc_context", default=None
)


def set_grpc_context(context: Any) -> contextvars.Token:
    """Make ``context`` (a ``grpc.ServicerContext``) the one of the call this thread answers,
    so that calls made on its behalf inherit its deadline and cancellation; pass the token to
    :func:`reset_grpc_context` when the call ends."""
    return _GRPC_CONTEXT.set(context)


def reset_grpc_context(token: contextvars.Token) -> None:
    """Undo :func:`set_grpc_context`."""
    _GRPC_CONTEXT.reset(token)


def current_grpc_context() -> Any:
    """The ``grpc.ServicerContext`` of the gRPC call this thread answers, or None."""
    return _GRPC_CONTEXT.get()


class ServerMetrics:
    """The metrics of one server (see the module docstring), in a registry of its own."""

    def __init__(self) -> None:
        self._known: set[str] = set()
        self._known_lock = threading.Lock()
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.request_count = Counter(
            ":tensorflow:serving:request_count",
            "The total number of requests.",
            ["model_name", "status"],
            registry=r,
        )
        self.request_latency = Histogram(
            ":tensorflow:serving:request_latency",
            "Distribution of wall time (in microseconds) for Tensorflow Serving request.",
            ["model_name", "API", "entrypoint"],
            buckets=LATENCY_BUCKETS_US,
            registry=r,
        )
        self.runtime_latency = Histogram(
            ":tensorflow:serving:runtime_latency",
            "Distribution of wall time (in microseconds) for Tensorflow runtime.",
            ["model_name", "API", "runtime"],
            buckets=LATENCY_BUCKETS_US,
            registry=r,
        )
        self.example_counts = Histogram(
            ":tensorflow:serving:request_example_counts",
            "The number of tensorflow.Examples per request.",
            ["model"],
            buckets=EXAMPLE_BUCKETS,
            registry=r,
        )
        self.example_count_total = Counter(
            ":tensorflow:serving:request_example_count_total",
            "The total number of tensorflow.Examples.",
            ["model"],
            registry=r,
        )
        self.load_attempt_count = Counter(
            ":tensorflow:cc:saved_model:load_attempt_count",
            "The number of times a SavedModel was successfully loaded.",
            ["model_path", "status"],
            registry=r,
        )
        self.load_latency = Counter(
            ":tensorflow:cc:saved_model:load_latency",
            "Latency in microseconds for SavedModels that were successfully loaded.",
            ["model_path"],
            registry=r,
        )
        self.requests = Counter(
            "memgraph_tf_requests",
            "Requests by model, version, API, entrypoint and status code (OK or the error).",
            ["model_name", "version", "API", "entrypoint", "code"],
            registry=r,
        )
        self.graph_fetch_latency = Histogram(
            "memgraph_tf_graph_fetch_latency_seconds",
            "Time to turn a request's node_id examples into neighbourhood blobs.",
            ["model_name"],
            registry=r,
        )
        self.batch_size = Histogram(
            "memgraph_tf_batch_size",
            "Rows per model call made by the batch scheduler (--enable-batching).",
            ["model_name"],
            buckets=EXAMPLE_BUCKETS,
            registry=r,
        )
        self.loaded_versions = Gauge(
            "memgraph_tf_loaded_versions",
            "Versions of a model loaded and taking requests.",
            ["model_name"],
            registry=r,
        )

    # -- recording
    def model_label(self, name: str | None, code: str) -> str:
        """The model label of a request that asked for model ``name`` (None or "": none; ``code``
        its outcome): ``name`` when the server knows that model -- it has loaded versions of
        it (:attr:`loaded_versions`), or this or an earlier request for it was answered OK --
        else :data:`UNKNOWN_MODEL`. The set of label values is thus bounded by the models."""
        if not name:
            return ""
        with self._known_lock:
            if name in self._known:
                return name
        loaded = {
            s.labels.get("model_name")
            for family in self.loaded_versions.collect()
            for s in family.samples
            if s.value > 0
        }
        if code != "OK" and name not in loaded:
            return UNKNOWN_MODEL
        with self._known_lock:
            self._known.add(name)
        return name

    def finish(self, record: RequestRecord, code: str) -> float:
        """Count a finished request (``code``: OK or the status code's name), labelled by
        :meth:`model_label`; returns its latency in seconds."""
        elapsed_s = time.perf_counter() - record.start
        model = self.model_label(record.model, code)
        self.request_count.labels(model, code).inc()
        self.request_latency.labels(model, record.api, record.entrypoint).observe(elapsed_s * 1e6)
        version = "" if record.version is None else str(record.version)
        self.requests.labels(model, version, record.api, record.entrypoint, code).inc()
        if record.examples is not None and record.api in ("Classify", "Regress"):
            self.example_counts.labels(model).observe(record.examples)
            self.example_count_total.labels(model).inc(record.examples)
        return elapsed_s

    def model_call(self, record: RequestRecord | None, model: str, elapsed_s: float) -> None:
        """A model call of ``elapsed_s`` seconds made for ``record``'s request."""
        if record is not None:
            record.model_s += elapsed_s
            self.runtime_latency.labels(model, record.api, "TF2").observe(elapsed_s * 1e6)

    def graph_fetch(self, record: RequestRecord | None, model: str, elapsed_s: float) -> None:
        """A graph fetch (node ids -> blobs) of ``elapsed_s`` seconds."""
        if record is not None:
            record.graph_fetch_s += elapsed_s
        self.graph_fetch_latency.labels(model).observe(elapsed_s)

    def load_attempt(self, path: str, ok: bool, elapsed_s: float) -> None:
        """One SavedModel load of ``path``."""
        self.load_attempt_count.labels(path, "success" if ok else "fail").inc()
        if ok:
            self.load_latency.labels(path).inc(elapsed_s * 1e6)

    # -- the page
    def exposition(self) -> bytes:
        """The metrics page: Prometheus text format 0.0.4 as ``generate_latest`` writes it,
        except that TF Serving's counters are written as its exporter writes them (no
        ``_total`` suffix) and no ``_created`` samples are written."""
        out: list[bytes] = []
        for family in self.registry.collect():
            samples = [s for s in family.samples if not s.name.endswith("_created")]
            tf_counter = family.type == "counter" and family.name.startswith(_TF_PREFIX)
            if tf_counter:
                # prometheus_client strips a "_total" the name ends with (the family name) and
                # adds one to every sample: TF Serving's name is the one it was created with
                name = _TF_COUNTER_NAMES.get(family.name, family.name)
                copy = Metric(name, family.documentation, "gauge")
                for s in samples:
                    copy.add_sample(name, s.labels, s.value)
            else:
                copy = Metric(family.name, family.documentation, family.type)
                copy.samples = samples
            text = generate_latest(_One(copy))
            if tf_counter:
                gauge, counter = f"# TYPE {copy.name} gauge\n", f"# TYPE {copy.name} counter\n"
                text = text.replace(gauge.encode(), counter.encode())
            out.append(text)
        return b"".join(out)


class _One:
    """A collector of one metric family (what ``generate_latest`` reads)."""

    def __init__(self, metric: Metric):
        self.metric = metric

    def collect(self):
        return [self.metric]


def _monitoring_config_class():
    """TF Serving's ``MonitoringConfig`` message (``tensorflow_serving/config/
    monitoring_config.proto``: ``prometheus_config { bool enable = 1; string path = 2; }``),
    built from its description: tensorflow-serving-api does not ship that module."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    pool = descriptor_pool.DescriptorPool()
    fdp = descriptor_pb2.FileDescriptorProto(
        name="memgraph_tf/monitoring_config.proto", package="tensorflow.serving", syntax="proto3"
    )
    prom = fdp.message_type.add(name="PrometheusConfig")
    prom.field.add(name="enable", number=1, type=8, label=1)  # TYPE_BOOL, LABEL_OPTIONAL
    prom.field.add(name="path", number=2, type=9, label=1)  # TYPE_STRING
    mon = fdp.message_type.add(name="MonitoringConfig")
    mon.field.add(
        name="prometheus_config",
        number=1,
        type=11,  # TYPE_MESSAGE
        label=1,
        type_name=".tensorflow.serving.PrometheusConfig",
    )
    pool.Add(fdp)
    return message_factory.GetMessageClass(
        pool.FindMessageTypeByName("tensorflow.serving.MonitoringConfig")
    )


def read_monitoring_config(path: str) -> str | None:
    """The metrics path a TF Serving ``--monitoring_config_file`` (text proto) turns on, or
    None when its ``prometheus_config.enable`` is false: TF Serving serves the page only then
    (``model_servers/server.cc``), at ``prometheus_config.path`` or, when empty,
    :data:`METRICS_PATH`. Raises ValueError naming the file when it cannot be read or parsed."""
    import pathlib

    from google.protobuf import text_format

    where = f"--monitoring_config_file {path}"
    try:
        text = pathlib.Path(path).read_text()
    except OSError as exc:
        raise ValueError(f"{where}: {exc.strerror or exc}") from None
    cfg = _monitoring_config_class()()
    try:
        text_format.Parse(text, cfg)
    except text_format.ParseError as exc:
        raise ValueError(f"{where}: not a MonitoringConfig text proto: {exc}") from None
    if not cfg.prometheus_config.enable:
        return None
    page = cfg.prometheus_config.path or METRICS_PATH
    if not page.startswith("/"):
        raise ValueError(f"{where}: prometheus_config.path must start with '/', got {page!r}")
    return page


__all__ = [
    "CONTENT_TYPE",
    "EXAMPLE_BUCKETS",
    "LATENCY_BUCKETS_US",
    "METRICS_PATH",
    "UNKNOWN_MODEL",
    "RequestRecord",
    "ServerMetrics",
    "begin",
    "current",
    "current_grpc_context",
    "end",
    "read_monitoring_config",
    "reset_grpc_context",
    "set_grpc_context",
]
