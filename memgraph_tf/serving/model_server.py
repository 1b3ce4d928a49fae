"""The model core of ``memgraph-tf serve``: one model's loaded versions, running its signatures,
and its status and metadata -- TF Serving's semantics for any front end, without HTTP.

The layers, one module each:

- :mod:`.loading` -- :func:`~.loading.load_version`: one ``BASE/<version>/`` SavedModel, ours or
  not, with the ops it needs registered first;
- :mod:`.batching` -- :class:`~.batching.BatchScheduler`, :class:`~.batching.BatchingOptions`:
  server-side batching (``--enable-batching``);
- this module -- :class:`ModelServer`: versions and labels, running classify / regress / predict
  signatures (safe to call from many threads), status and metadata, warmup;
- :mod:`.json_parse`, :mod:`.json_examples`, :mod:`.json_tensors` -- request documents <->
  tf.Examples / tensors (no HTTP); :mod:`.node_examples` -- ``{"node_id": ...}`` examples and the
  ``max_examples`` limit, for both transports;
- front ends over this core, which it never imports: :mod:`.rest_api` (REST routing: URL
  patterns, HTTP statuses; ``rest_api.handle(server, method, path, body)``) and
  :mod:`.grpc_server` (the gRPC servicers).

Names that moved keep working from here: ``ModelVersion``, ``load_version``, ``op_names``,
``BatchingOptions``, ``BatchScheduler``, ``DEFAULT_SIGNATURE``, ``DEFAULT_MAX_EXAMPLES``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import pathlib
import re
import threading
import time
import weakref
from collections.abc import Iterator, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from memgraph_tf import errors
from memgraph_tf.errors import ServingFailure
from memgraph_tf.serving import (
    bundle,
    freshness,
    input_specs,
    json_examples,
    json_parse,
    json_tensors,
    node_examples,
)
from memgraph_tf.serving import metrics as metrics_mod
from memgraph_tf.serving import model_config as model_config_mod
from memgraph_tf.serving.batching import BatchingOptions, BatchScheduler
from memgraph_tf.serving.bundle import DEFAULT_SIGNATURE
from memgraph_tf.serving.json_values import bad_request
from memgraph_tf.serving.link_pairs import PairExamples, PairRunner
from memgraph_tf.serving.loading import (
    IncompleteVersion,
    ModelVersion,
    VersionLoadError,
    load_version,
    op_names,
)
from memgraph_tf.serving.metrics import ServerMetrics
from memgraph_tf.serving.model_config import ModelEntry, VersionPolicy
from memgraph_tf.serving.neighbourhoods import NeighbourhoodFetcher
from memgraph_tf.serving.node_examples import DEFAULT_MAX_EXAMPLES
from memgraph_tf.serving.node_rows import NodeExamples, complete_rows

logger = logging.getLogger(__name__)

DEFAULT_MAX_REQUEST_BYTES = 64 * 1024 * 1024
#: TF Serving's ``--file_system_poll_wait_seconds`` default (``model_servers/main.cc``): poll the
#: base paths every second.
DEFAULT_POLL_WAIT_S = 1.0


#: TF Serving's ``--max_num_load_retries`` default (``model_servers/server.h``): a version that
#: fails to load is tried this many more times before it ends in state END with its error.
DEFAULT_MAX_NUM_LOAD_RETRIES = 5
#: TF Serving's ``--load_retry_interval_micros`` default, in seconds: one minute between tries.
DEFAULT_LOAD_RETRY_INTERVAL_S = 60.0


@dataclass(frozen=True)
class VersionState:
    """One version's entry in a model's status, as TF Serving's ``ServableStateMonitor`` keeps
    it: ``state`` (``START``, ``LOADING``, ``AVAILABLE``, ``END``) and its status (``error_code``
    a TensorFlow status code name, ``OK`` unless the version ended with a load error)."""

    state: str
    error_code: str = "OK"
    error_message: str = ""


@dataclass
class PendingLoad:
    """A version the policy selects that is not loaded yet: where it is, the load tries made,
    when the next may start (``time.monotonic()``), and whether it ended (failed every try:
    not tried again while it stays selected)."""

    path: pathlib.Path
    tries: int = 0
    retry_at: float = 0.0
    ended: bool = False
    #: the status (code name, message) of the last failed try
    last_error: tuple[str, str] | None = None


@dataclass
class ServedModel:
    """One served model: where its versions are, which it serves, its labels, and the versions
    loaded now (``versions``: replaced as a whole on every change, never modified in place).
    ``states`` is every version's last state (TF Serving never forgets one: an unloaded version
    stays in the status as END); ``pending`` the selected versions not loaded yet."""

    name: str
    base_path: pathlib.Path
    policy: VersionPolicy
    labels: dict[str, int] = field(default_factory=dict)
    versions: dict[int, ModelVersion] = field(default_factory=dict)
    states: dict[int, VersionState] = field(default_factory=dict)
    pending: dict[int, PendingLoad] = field(default_factory=dict)


def load_error_status(exc: BaseException) -> tuple[str, str]:
    """The status (code name, message) a version that failed to load with ``exc`` ends with:
    TensorFlow's own code for a TensorFlow error, the loader's for
    :class:`~.loading.VersionLoadError` (NOT_FOUND for ops this TensorFlow lacks, DATA_LOSS
    for a ``saved_model.pb`` that does not parse), OUT_OF_RANGE for a file cut short (TensorFlow's
    bindings raise that code as IndexError), INVALID_ARGUMENT for a bundle that breaks the
    contract, UNKNOWN otherwise."""
    cause = exc.__cause__ or exc
    if isinstance(cause, VersionLoadError):
        return cause.code, cause.message
    error_code = getattr(cause, "error_code", None)
    if isinstance(error_code, int) and hasattr(cause, "message"):
        return errors.code_name(error_code), str(cause.message)
    if isinstance(cause, IndexError):  # TensorFlow's bindings raise OUT_OF_RANGE as IndexError
        return "OUT_OF_RANGE", str(cause)  # e.g. variables cut short: "Read less bytes than ..."
    text = str(exc)
    if isinstance(exc, errors.BundleError):
        return "INVALID_ARGUMENT", text
    return "UNKNOWN", text


class _SamplingView(MutableMapping):
    """``ModelServer.sampling``: version -> its ``ModelVersion.sampling``, for the first model."""

    def __init__(self, server: ModelServer):
        self.server = server

    def _sampled(self) -> dict[int, ModelVersion]:
        return {v: mv for v, mv in self.server.versions.items() if mv.sampling is not None}

    def __getitem__(self, version: int) -> Any:
        return self._sampled()[version].sampling

    def __setitem__(self, version: int, spec: Any) -> None:
        self.server.versions[version].sampling = spec

    def __delitem__(self, version: int) -> None:
        self._sampled()[version].sampling = None

    def __iter__(self) -> Iterator[int]:
        return iter(self._sampled())

    def __len__(self) -> int:
        return len(self._sampled())


class TimedFetcher:
    """The graph source's fetcher, timed: each fetch is added to the request's record and to
    the graph-fetch latency metric. With server-side batching on, concurrent node-id fetches
    of the same sampling settings are merged into one source call by the server's batch
    scheduler (:meth:`fetch`: embedding requests); ``:classify`` / ``:regress`` requests read
    their nodes in their model call's batch instead (:meth:`ModelServer._run_node_examples`,
    through :attr:`inner`, timed with :meth:`observe`)."""

    def __init__(self, inner: NeighbourhoodFetcher, server: ModelServer):
        self.inner = inner
        self.server = server
        self._last_key: tuple[Any, tuple] = (None, ())  # (sampling, its batch key)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def fetch(
        self, node_ids: Sequence[Any], sampling: Any, *, names: Sequence[str] | None = None
    ) -> Any:
        """:meth:`NeighbourhoodFetcher.fetch`, timed. With batching on, through the batch
        scheduler: blobs are keyed per seed, so a merged call gives each id the bytes a call of
        its own gives; a merged call that fails is run again request by request, so each error
        names its own request's examples."""
        freshness.note_graph_read()
        start = time.perf_counter()
        try:
            batcher = self.server.batcher
            if batcher is None or not node_ids or getattr(self.server._local, "warming", False):
                return self.inner.fetch(node_ids, sampling, names=names)
            return self._batched(batcher, node_ids, sampling, names)
        finally:
            self.observe(time.perf_counter() - start)

    def observe(self, elapsed_s: float) -> None:
        """A graph fetch of ``elapsed_s`` seconds for the request this thread answers: added to
        its record and to the graph-fetch latency metric."""
        record = metrics_mod.current()
        if self.server.metrics is not None:
            model = record.model if record is not None and record.model else ""
            self.server.metrics.graph_fetch(record, model, elapsed_s)
        elif record is not None:
            record.graph_fetch_s += elapsed_s

    def _batched(
        self, batcher: BatchScheduler, node_ids: Sequence[Any], sampling: Any, names: Any
    ) -> list[bytes]:
        import numpy as np

        own = {"node_ids": np.empty(len(node_ids), dtype=object)}
        own["node_ids"][:] = list(node_ids)

        def run(feeds: Mapping[str, Any]) -> dict:
            mine = feeds is own  # a merged call names no request's examples
            blobs = self.inner.fetch(
                list(feeds["node_ids"]), sampling, names=names if mine else None
            )
            out = np.empty(len(blobs), dtype=object)
            out[:] = blobs
            return {"blobs": out}

        return list(batcher.submit(self.batch_key(sampling), own, len(node_ids), run)["blobs"])

    def batch_key(self, sampling: Any) -> tuple:
        """The batch key of a fetch with ``sampling``: fetches merge only when their settings
        are equal (their ``repr``, written once per settings object: a version's own settings
        are one object, read by every request)."""
        last, key = self._last_key
        if last is not sampling:
            key = ("neighbourhoods", repr(sampling))
            self._last_key = (sampling, key)
        return key


class ModelServer:
    """Serves the versions of one model (``BASE/<version>/``, any all-digit version directory
    name) or of several (``model_config``) with TF Serving's semantics, for any front end:

    - parsed JSON bodies (REST's routing, :mod:`.rest_api`, calls these): :meth:`classify`,
      :meth:`regress`, :meth:`predict`, :meth:`status`, :meth:`metadata`;
    - any transport (REST, gRPC): :meth:`resolve`, :meth:`run_classify` / :meth:`run_regress`
      on serialized tf.Examples, :meth:`run_predict` on a dict of numpy arrays,
      :meth:`status_response` and :meth:`metadata_response` (TF Serving's protos); these raise
      :class:`~memgraph_tf.errors.ServingFailure` carrying TF Serving's status code
      (``grpc_code``) and that code's HTTP status, from the status table (:mod:`.errors`); a
      model that fails answers with its TensorFlow error's own code.

    The models: ``base_path`` (with ``model_name``, default the directory's name, and
    ``labels``, a version label -> version number) serves every version found under it;
    ``model_config`` instead -- a TF Serving ``--model_config_file`` path (the ``models.config``
    ``export_bundle`` writes) or a sequence of :class:`~.model_config.ModelEntry` -- serves
    several models, each with its version policy (``latest`` / ``all`` / ``specific``) and labels
    (:mod:`.model_config`); giving both is a ValueError. The first model is the one
    :attr:`model_name`, :attr:`versions`, :attr:`labels` and :attr:`sampling` describe; every
    model is served by its name. At start-up every selected version is loaded (and warmed up,
    ``warmup``: the bundle's ``tf_serving_warmup_requests`` replayed); one that fails to load, or
    a model with no version, is a ValueError naming the directory.
    ``poll_wait_s`` (TF Serving's ``--file_system_poll_wait_seconds``; None or 0: never) polls
    every base path that often from a daemon thread, with TF Serving's version lifecycle
    (:meth:`_sync`): new versions are loaded and warmed up before they take requests, a version
    still being written waits until it is complete, a version the policy drops is unloaded only
    once a successor has loaded, and the set of versions is switched at once (a request never
    sees a half-loaded version; requests holding an unloaded version finish on it). A version
    that fails to load is tried ``max_num_load_retries`` more times, ``load_retry_interval_s``
    apart (TF Serving's ``--max_num_load_retries``, default 5, and
    ``--load_retry_interval_micros``, default one minute), then shows in the status as END with
    its error. :meth:`poll_once` is one such poll.
    ``metrics_path`` (e.g. ``/monitoring/prometheus/metrics``; None, the default: no metrics)
    has the HTTP server answer the Prometheus page there (:class:`~.metrics.ServerMetrics`:
    requests and errors by model, version, API, entrypoint and code, request / graph-fetch /
    model latencies, batch sizes, loaded versions, TF Serving's names where it has one);
    ``access_log`` (off by default) writes one JSON line per request (:mod:`.access_log`).
    ``graph_source`` (optional) is an object
    with ``sample_blobs_per_node(seeds, fanouts, properties, options) -> list[bytes]`` used for
    ``{"node_id": ...}`` examples; its settings come from each bundle's own config asset.
    ``sampling_seed`` sets the ``options.seed`` of that sampling
    (:func:`.bundle.inference_sampling`): None (default) the bundle's seed, else
    :data:`.bundle.DEFAULT_SEED` -- one neighbourhood, so one answer, per node, the one
    ``memgraph-tf classify`` computes; an int that seed;
    ``"random"`` (:data:`.bundle.RANDOM_SAMPLING`) new neighbourhoods on every request.
    ``max_request_bytes`` is enforced by the HTTP layer; ``max_examples`` caps the examples /
    instances of one request (413); ``max_json_depth`` the nesting of a request body (400).
    ``batching`` (TF Serving's ``--enable_batching``) merges concurrent calls of one version and
    signature into one model call (:class:`BatchScheduler`), for REST and gRPC alike.
    ``model_calls`` counts the signature function calls made (not warmup's). Call
    :meth:`close` when done: it stops the polling and batch threads.
    """

    def __init__(
        self,
        base_path: str | os.PathLike | None = None,
        model_name: str | None = None,
        *,
        labels: Mapping[str, int] | None = None,
        graph_source: Any = None,
        max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES,
        max_examples: int = DEFAULT_MAX_EXAMPLES,
        max_json_depth: int = json_parse.DEFAULT_MAX_JSON_DEPTH,
        batching: BatchingOptions | None = None,
        warmup: bool = True,
        sampling_seed: int | str | None = None,
        model_config: Sequence[ModelEntry] | str | os.PathLike | None = None,
        poll_wait_s: float | None = None,
        metrics_path: str | None = None,
        access_log: bool = False,
        max_num_load_retries: int = DEFAULT_MAX_NUM_LOAD_RETRIES,
        load_retry_interval_s: float = DEFAULT_LOAD_RETRY_INTERVAL_S,
    ):
        self._init_settings(
            max_request_bytes, max_examples, max_json_depth, sampling_seed, metrics_path
        )
        self._init_retries(max_num_load_retries, load_retry_interval_s)
        if poll_wait_s is not None and (
            isinstance(poll_wait_s, bool)
            or not isinstance(poll_wait_s, (int, float))
            or not 0 <= poll_wait_s < float("inf")
        ):
            raise ValueError(
                f"file_system_poll_wait_seconds: expected a number of seconds >= 0 (0: load "
                f"once; TF Serving reserves negative values for its tests), got {poll_wait_s!r}"
            )
        self.access_log = bool(access_log)
        self.graph_source = graph_source
        self.neighbourhoods = (
            TimedFetcher(NeighbourhoodFetcher(graph_source), self)
            if graph_source is not None
            else None
        )
        self._sync_lock = threading.Lock()
        self.warmup = warmup
        self.warmup_requests = 0
        self.batcher: BatchScheduler | None = None  # warmup calls run unbatched
        #: the served models by name (the first is the one ``model_name`` names)
        self.models: dict[str, ServedModel] = {}
        for entry in self._entries(base_path, model_name, labels, model_config):
            model = ServedModel(entry.name, entry.base_path, entry.policy, dict(entry.labels))
            self.models[entry.name] = model
            self._sync(model, initial=True)
            for lbl, v in model.labels.items():
                if v not in model.versions:
                    raise ValueError(
                        f"labels: label {lbl!r} of model {model.name!r} points at version {v}, "
                        f"expected one of {sorted(model.versions)}"
                    )
        first = next(iter(self.models.values()))
        self.model_name = first.name
        self.base_path = first.base_path
        self.batching = batching
        self.batcher = BatchScheduler(batching) if batching is not None else None
        #: link requests naming pairs: their model runs, in shared chunks of bounded size
        self.pair_runner = PairRunner()
        self.poll_wait_s = poll_wait_s
        self._stop = threading.Event()
        self._poller: threading.Thread | None = None
        if poll_wait_s:  # 0 (or None): the versions found at start-up, once (TF Serving's 0)
            self._poller = threading.Thread(
                target=self._poll_loop, name="memgraph-tf-version-poll", daemon=True
            )
            self._poller.start()

    def _init_settings(
        self,
        max_request_bytes: int,
        max_examples: int,
        max_json_depth: int,
        sampling_seed: int | str | None,
        metrics_path: str | None,
    ) -> None:
        """Check and set the limits, the sampling seed and the metrics (ValueError naming the
        setting at fault)."""
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
        if metrics_path is not None and not (
            isinstance(metrics_path, str) and metrics_path.startswith("/")
        ):
            raise ValueError(
                f"metrics_path: expected a path starting with '/', got {metrics_path!r}"
            )
        self.max_request_bytes = max_request_bytes
        self.max_examples = max_examples
        self.max_json_depth = max_json_depth
        if sampling_seed is not None and (
            sampling_seed != bundle.RANDOM_SAMPLING
            and (not isinstance(sampling_seed, int) or isinstance(sampling_seed, bool))
        ):
            raise ValueError(
                f"sampling_seed: expected an int, None (the bundle's seed, else "
                f"{bundle.DEFAULT_SEED}) or {bundle.RANDOM_SAMPLING!r}, got {sampling_seed!r}"
            )
        self.sampling_seed = sampling_seed
        self.metrics_path = metrics_path
        #: the Prometheus metrics (None unless ``metrics_path`` is set)
        self.metrics: ServerMetrics | None = ServerMetrics() if metrics_path else None
        self.model_calls = 0
        self._calls_lock = threading.Lock()
        self._local = threading.local()  # .warming: the calls of a warm-up, run unbatched

    def _init_retries(self, max_num_load_retries: int, load_retry_interval_s: float) -> None:
        """Check and set TF Serving's load retry settings (ValueError naming the one at fault)."""
        if (
            not isinstance(max_num_load_retries, int)
            or isinstance(max_num_load_retries, bool)
            or max_num_load_retries < 0
        ):
            raise ValueError(
                f"max_num_load_retries: expected an int >= 0, got {max_num_load_retries!r}"
            )
        if (
            isinstance(load_retry_interval_s, bool)
            or not isinstance(load_retry_interval_s, (int, float))
            or not 0 <= load_retry_interval_s < float("inf")
        ):
            raise ValueError(
                f"load_retry_interval_s: expected a number of seconds >= 0, got "
                f"{load_retry_interval_s!r}"
            )
        self.max_num_load_retries = max_num_load_retries
        self.load_retry_interval_s = float(load_retry_interval_s)

    @staticmethod
    def _entries(base_path, model_name, labels, model_config) -> list[ModelEntry]:
        """The models to serve: those of ``model_config`` (entries, or a config file's path),
        else the one under ``base_path`` (every version found, as ``memgraph-tf serve BASE``
        always served)."""
        if model_config is not None:
            if base_path is not None or labels:
                raise ValueError(
                    "model_config: give either a model config or a model_base_path (with its "
                    "labels), not both (TF Serving ignores --model_base_path then; this refuses)"
                )
            if isinstance(model_config, (str, os.PathLike)):
                return model_config_mod.read_model_config(model_config)
            return list(model_config)
        if base_path is None:
            raise ValueError("model_base_path: expected a directory or a model_config")
        path = pathlib.Path(base_path).resolve()
        if not path.is_dir():
            raise ValueError(f"model_base_path: expected a directory, got {str(base_path)!r}")
        policy = model_config_mod.VersionPolicy("all")
        return [ModelEntry(model_name or path.name, path, policy, dict(labels or {}))]

    # -- versions: loading, polling, switching
    @property
    def versions(self) -> dict[int, ModelVersion]:
        """The loaded versions of the first model (``model_name``), by number."""
        return self.models[self.model_name].versions

    @property
    def labels(self) -> dict[str, int]:
        """The version labels of the first model."""
        return self.models[self.model_name].labels

    @property
    def sampling(self) -> MutableMapping[int, Any]:
        """Per loaded version of the first model that is a memgraph-tf bundle: how its
        ``node_id`` examples are sampled -- a live view of each version's ``sampling`` (setting
        an entry sets that version's)."""
        return _SamplingView(self)

    def _load(self, model: ServedModel, v: int, path: pathlib.Path) -> ModelVersion:
        """Load and warm up version ``v`` of ``model``: only then may it take requests."""
        start = time.perf_counter()
        try:
            mv = load_version(path, v)
        except IncompleteVersion:
            raise  # not a load attempt: the version is not there yet
        except VersionLoadError as exc:  # a corrupt or unreadable SavedModel: name the directory
            self._load_attempt(path, False, start)
            if exc.message.startswith(f"{path}: "):
                raise
            raise ValueError(f"{path}: cannot load the SavedModel: {exc.message}") from exc
        except (errors.BundleError, ValueError):
            self._load_attempt(path, False, start)
            raise
        except Exception as exc:  # a corrupt or unreadable SavedModel: name the directory
            self._load_attempt(path, False, start)
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise ValueError(f"{path}: cannot load the SavedModel: {first}") from exc
        self._load_attempt(path, True, start)
        mv.model_name = model.name
        if mv.bundle_config is not None:
            mv.sampling = bundle.inference_sampling(mv.bundle_config, self.sampling_seed)
        logger.info(
            "loaded %s version %d from %s (signatures: %s)",
            model.name,
            v,
            path,
            sorted(mv.functions),
        )
        if self.warmup:
            calls = self._warm_up(mv)
            self.warmup_requests += calls
            with self._calls_lock:
                self.model_calls -= calls  # count the calls of requests only
        weakref.finalize(mv, logger.info, "released %s version %d", model.name, v)
        return mv

    def _load_attempt(self, path: pathlib.Path, ok: bool, start: float) -> None:
        if self.metrics is not None:
            self.metrics.load_attempt(str(path), ok, time.perf_counter() - start)

    def _sync(self, model: ServedModel, *, initial: bool = False) -> None:
        """Bring ``model``'s loaded versions in line with its base path and version policy, as
        TF Serving's ``AspiredVersionsManager`` with its ``AvailabilityPreservingPolicy`` does:

        - the versions the policy selects (the aspired ones) that are not loaded are loaded and
          warmed up, newest first; one still being written (:func:`.loading.missing_files`)
          waits, in state START, until it is complete; one that fails to load is tried again
          every ``load_retry_interval_s`` (state LOADING), up to ``max_num_load_retries`` more
          times, then ends in state END with its error and is not tried again while it stays
          selected (remove its directory, or publish a new version);
        - a loaded version the policy no longer selects is unloaded only once a selected version
          is loaded, or when none is selected; until then the newest of them keeps serving, so a
          bad newer version never leaves the model without one;
        - every change is published at once (one assignment of a new dict: a request sees the
          old set or the new one, never a half-loaded version); an unloaded version stops
          taking new requests, the requests holding it finish on it, and its state becomes END.

        A base path that is gone changes nothing (TF Serving emits no versions for a base path
        it cannot find). At start-up (``initial``) a version that fails to load is an error."""
        with self._sync_lock:
            base = model.base_path
            if not initial and not base.is_dir():
                logger.warning("%s: the base path %s is gone: serving on", model.name, base)
                return
            found = bundle.discover_versions(base) if base.is_dir() else {}
            wanted = model.policy.select(found)
            for v in [v for v, p in model.pending.items() if wanted.get(v) != p.path]:
                self._cancel_load(model, v)
            current = model.versions
            new = dict(current)
            for v, path in sorted(wanted.items(), reverse=True):
                if v in current and current[v].path == path:
                    continue
                mv = self._try_load(model, v, path, initial=initial)
                if mv is not None:
                    new[v] = mv
            if initial and not new:
                raise ValueError(
                    f"model_base_path: expected numbered version directories holding "
                    f"saved_model.pb under {str(base)!r}"
                    + (f" ({model.policy.describe()})" if model.policy.kind != "all" else "")
                    + ", found none"
                )
            for v in self._to_unload(new, wanted):
                del new[v]
            for v in new:
                model.states[v] = VersionState("AVAILABLE")
            if new.keys() == current.keys() and all(new[v] is current[v] for v in new):
                return
            model.versions = new  # the switch
            for v in sorted(set(current) - set(new)):
                model.states[v] = VersionState("END")
                logger.info(
                    "unloaded %s version %d (requests holding it finish on it)", model.name, v
                )
            if not initial:
                logger.info("%s: serving versions %s", model.name, sorted(new))
            if self.metrics is not None:
                self.metrics.loaded_versions.labels(model.name).set(len(new))

    @staticmethod
    def _to_unload(loaded: Mapping[int, ModelVersion], wanted: Mapping[int, pathlib.Path]):
        """The loaded versions to unload (TF Serving's ``availability_preserving_policy.cc``):
        those not selected, once a selected version is loaded or none is selected; else all of
        them but the newest, which serves until a selected version is loaded."""
        unselected = sorted(v for v, mv in loaded.items() if wanted.get(v) != mv.path)
        selected_ready = any(wanted.get(v) == mv.path for v, mv in loaded.items())
        if not wanted or selected_ready:
            return unselected
        return unselected[:-1]

    def _cancel_load(self, model: ServedModel, v: int) -> None:
        """Forget a pending load of a version the policy no longer selects (TF Serving cancels
        its retries, ``CancelLoadServableRetry``, and the load ends with its last error): a
        version between tries ends (END) with its last load error, one still being written with
        CANCELLED "Loading of servable cancelled"; one that ended keeps its status."""
        pending = model.pending.pop(v)
        state = model.states.get(v)
        if state is not None and state.state == "LOADING" and pending.last_error is not None:
            model.states[v] = VersionState("END", *pending.last_error)
        elif state is not None and state.state == "START":
            model.states[v] = VersionState("END", "CANCELLED", "Loading of servable cancelled")
        logger.info("%s version %d at %s: no longer selected", model.name, v, pending.path)

    def _try_load(
        self, model: ServedModel, v: int, path: pathlib.Path, *, initial: bool
    ) -> ModelVersion | None:
        """Load version ``v`` now if it is due (complete, not ended, its retry time reached):
        the loaded version, or None with its state recorded (START: incomplete; LOADING: a try
        failed and another is due; END: every try failed). At start-up a failure raises."""
        pending = model.pending.setdefault(v, PendingLoad(path))
        if pending.ended or time.monotonic() < pending.retry_at:
            return None
        try:
            mv = self._load(model, v, path)
        except IncompleteVersion as exc:
            if initial:
                raise
            if model.states.get(v) != VersionState("START"):
                logger.info("%s version %d: waiting until it is complete: %s", model.name, v, exc)
            model.states[v] = VersionState("START")
            return None
        except Exception as exc:
            if initial:
                raise
            pending.tries += 1
            code, message = pending.last_error = load_error_status(exc)
            if pending.tries <= self.max_num_load_retries:
                pending.retry_at = time.monotonic() + self.load_retry_interval_s
                model.states[v] = VersionState("LOADING")
                logger.error(
                    "%s version %d: load try %d of %d failed, retrying in %g s: %s",
                    model.name,
                    v,
                    pending.tries,
                    self.max_num_load_retries + 1,
                    self.load_retry_interval_s,
                    message,
                )
            else:
                pending.ended = True
                model.states[v] = VersionState("END", code, message)
                logger.error("%s version %d: not loaded: %s: %s", model.name, v, code, message)
            return None
        del model.pending[v]
        return mv

    def poll_once(self) -> None:
        """One poll of every model's base path (what the polling thread does every
        ``poll_wait_s``); failures are logged, never raised."""
        for model in list(self.models.values()):
            try:
                self._sync(model)
            except Exception:  # a poll must never stop the server
                logger.exception("polling %s failed", model.base_path)

    def _poll_loop(self) -> None:
        while not self._stop.wait(self.poll_wait_s):
            self.poll_once()

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

        self._local.warming = True
        try:
            return self._replay_warmup(mv, path, tf, prediction_log_pb2)
        finally:
            self._local.warming = False

    def _replay_warmup(self, mv: ModelVersion, path: pathlib.Path, tf, prediction_log_pb2) -> int:
        calls = 0
        try:
            records = list(tf.data.TFRecordDataset(str(path)).as_numpy_iterator())
        except Exception as exc:  # noqa: BLE001 -- an unreadable file: serve unwarmed
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
            except Exception as exc:  # noqa: BLE001 -- logged; the version is served unwarmed
                message = exc.message if isinstance(exc, ServingFailure) else exc
                logger.warning("%s: warmup record %d failed: %s", path, i, message)
        logger.info("version %d: %d warmup model calls", mv.version, calls)
        return calls

    def close(self) -> None:
        """Stop polling and the batch threads (if any). The server answers on, unbatched, from
        the versions loaded now."""
        self._stop.set()
        if self._poller is not None and self._poller is not threading.current_thread():
            self._poller.join(timeout=30)
        if self.batcher is not None:
            self.batcher.close()

    # -- resolution
    def resolve(self, name: str, version: str | int | None, label: str | None) -> ModelVersion:
        """The version a request names (by number, label, or the newest), from the versions
        loaded at this moment. 404 "Servable not found for request: Latest(NAME)" /
        "Specific(NAME, N)", 400 "Unrecognized servable version label: L", as TF Serving's
        ServerCore answers; a label whose version is not loaded (unloaded by the poller) is 404
        Specific(NAME, N), as TF Serving resolves a label to its version first."""
        record = metrics_mod.current()
        if record is not None:
            record.model = name
        model = self.models.get(name)
        if label is not None:
            if model is None or label not in model.labels:
                raise bad_request(f"Unrecognized servable version label: {label}")
            version = model.labels[label]
        if version is not None:
            version = int(version)
        if model is None:
            req = f"Specific({name}, {version})" if version is not None else f"Latest({name})"
            raise ServingFailure.for_code("NOT_FOUND", f"Servable not found for request: {req}")
        versions = model.versions  # one snapshot: the poller may publish a new set meanwhile
        if version is None:
            if not versions:
                raise ServingFailure.for_code(
                    "NOT_FOUND", f"Servable not found for request: Latest({name})"
                )
            mv = versions[max(versions)]
        elif version not in versions:
            raise ServingFailure.for_code(
                "NOT_FOUND", f"Servable not found for request: Specific({name}, {version})"
            )
        else:
            mv = versions[version]
        if record is not None:
            record.version = mv.version
        freshness.note_model_version(mv.version)  # the version that answers
        return mv

    @staticmethod
    def example_signature(mv: ModelVersion, requested: str | None, method: str) -> str:
        """The signature a classify / regress request (``method``) runs when it names
        ``requested`` (any transport): the one named; else, for classify on a memgraph-tf bundle,
        its ``classify`` signature (a node bundle's ``serving_default`` is its predict one; a
        link bundle's is its classify one), for regress on a link bundle its ``regress``
        signature; else TF Serving's default, ``serving_default``. Does not check that it
        exists. A regress request naming no signature on a node bundle (which has no regress
        signature) is a 400 saying what the bundle answers."""
        if requested:
            return requested
        config = mv.bundle_config
        if (
            method == "classify"
            and config is not None
            and bundle.CLASSIFY_SIGNATURE in (mv.signature_defs)
        ):
            return bundle.CLASSIFY_SIGNATURE
        if method == "regress" and config is not None:
            if config.link is not None:
                return bundle.REGRESS_SIGNATURE
            raise bad_request(
                f"Model {mv.model_name!r} is a node classification bundle: it answers :classify "
                f"(node_id or blob examples), not :regress; :regress needs a link bundle "
                f"(memgraph_tf.serving.export_links)"
            )
        return DEFAULT_SIGNATURE

    @staticmethod
    def _signature(mv: ModelVersion, signature_name: str | None):
        name = signature_name or DEFAULT_SIGNATURE
        if name not in mv.signature_defs:
            raise bad_request(f'Serving signature name: "{name}" not found in signature def')
        return name, mv.signature_defs[name], mv.functions[name]

    # -- request bodies
    def parse_json(self, body: bytes) -> dict:
        """See :func:`memgraph_tf.serving.json_parse.parse_request_body` (with this server's
        ``max_json_depth``)."""
        return json_parse.parse_request_body(body, max_depth=self.max_json_depth)

    def _examples(self, doc: dict, method: str, mv: ModelVersion) -> Sequence[bytes]:
        context = json_examples.request_context(doc)
        examples = json_examples.request_examples(doc, method)
        record = metrics_mod.current()
        if record is not None:
            record.examples = len(examples)
        sampling = node_examples.sampling_at(mv.bundle_config, mv.sampling, context)
        protos = node_examples.json_examples(
            examples, mv.bundle_config, self.neighbourhoods, sampling, self.later_fetcher()
        )
        return node_examples.examples_with_context(protos, context)

    def later_fetcher(self) -> NeighbourhoodFetcher | None:
        """With batching on (outside a warm-up) and a graph: the fetcher that reads the blobs of
        ``node_id`` examples in the batch their model call runs in (:mod:`.node_rows`), else
        None (blobs read right away)."""
        if self.batcher is None or self.neighbourhoods is None:
            return None
        if getattr(self._local, "warming", False):
            return None
        return self.neighbourhoods.inner

    # -- running signatures
    @staticmethod
    def _tf_message(exc) -> str:
        # Drop TF's eager wrapper ("Graph execution error: Detected at node ... <stack traces
        # unavailable>") and keep the op's own message, as TF Serving reports it.
        msg = exc.message
        marker = "<stack traces unavailable>\n"
        if marker in msg:
            msg = msg.split(marker, 1)[1]
        msg = msg.removeprefix("Graph execution error:")
        # and the eager function's name ("[Op:__inference_signature_wrapper_classify_912]"),
        # which TF Serving's session run does not add and which differs between loads
        return re.sub(r"\s*\[Op:[^\]]*\]\s*$", "", msg.strip())

    def _execute(self, fn, tensors: dict, shapes: Mapping[str, tuple] | None = None) -> dict:
        """Call a signature function on TF tensors (of ``shapes``, when known: then through
        :func:`.input_specs.flat_call` where they fit); returns ``{output: numpy array}``. A TF
        error is a ServingFailure with its own status code (gRPC answers it; REST the code's
        HTTP status from the status table, TF Serving's ``http_server.cc``); inputs that do not
        fit the function are 400."""
        import tensorflow as tf

        with self._calls_lock:
            self.model_calls += 1
        try:
            flat = input_specs.flat_call(fn) if shapes is not None else None
            out = flat(tensors, shapes) if flat is not None else None
            if out is None:
                out = fn(**tensors)
        except tf.errors.OpError as exc:  # answered with its own code (the status table)
            code = errors.code_name(exc.error_code)
            raise ServingFailure.for_code(code, self._tf_message(exc)) from None
        except (TypeError, ValueError) as exc:  # the inputs do not fit the concrete function
            raise bad_request(str(exc)) from None
        return {k: input_specs.output_array(v, k) for k, v in out.items()}

    def _call(self, mv: ModelVersion, name: str, fn, feeds: Mapping[str, Any]) -> dict:
        """Run signature ``name`` of ``mv`` on numpy ``feeds`` (already of the signature's
        dtypes): ``{output: numpy array}``; through the batch scheduler when batching is on and
        every input has the same first dimension."""
        sig = mv.signature_defs[name]

        def run(arrays: Mapping[str, Any]) -> dict:
            return self._run_arrays(sig, fn, arrays)

        start = time.perf_counter()
        try:
            if self.batcher is None or not feeds or getattr(self._local, "warming", False):
                return run(feeds)
            rows = {v.shape[0] if getattr(v, "ndim", 0) >= 1 else None for v in feeds.values()}
            if len(rows) != 1 or None in rows:
                return run(feeds)
            key = (
                mv.model_name,
                mv.version,
                name,
                tuple((k, str(v.dtype), v.shape[1:]) for k, v in sorted(feeds.items())),
            )
            metrics = self.metrics

            def run_batch(arrays: Mapping[str, Any]) -> dict:
                if metrics is not None:
                    size = next(iter(arrays.values())).shape[0]
                    metrics.batch_size.labels(mv.model_name).observe(size)
                return run(arrays)

            return self.batcher.submit(key, dict(feeds), rows.pop(), run_batch)
        finally:
            self._observe_model_call(mv, time.perf_counter() - start)

    def _run_arrays(self, sig: Any, fn, arrays: Mapping[str, Any]) -> dict:
        """Run ``fn`` (of signature ``sig``) now, on numpy ``arrays`` of its input dtypes."""
        import tensorflow as tf

        tensors = {
            k: (
                input_specs.string_tensor(v)
                if sig.inputs[k].dtype == input_specs.DT_STRING
                else tf.constant(v, dtype=tf.as_dtype(sig.inputs[k].dtype))
            )
            for k, v in arrays.items()
        }
        return self._execute(fn, tensors, {k: v.shape for k, v in arrays.items()})

    def _observe_model_call(self, mv: ModelVersion, elapsed_s: float) -> None:
        record = metrics_mod.current()
        if self.metrics is not None:
            self.metrics.model_call(record, mv.model_name, elapsed_s)
        elif record is not None:
            record.model_s += elapsed_s

    def run_predict(
        self, mv: ModelVersion, feeds: Mapping[str, Any], signature_name: str | None = None
    ) -> dict:
        """Run a predict signature on ``{input name: numpy array}`` (any transport): the
        ``{output name: numpy array}`` it returns. 400 when the inputs are not exactly the
        signature's, or :func:`.input_specs.check_input` refuses one (before TensorFlow sees
        it); other shapes are the signature function's to take or refuse."""
        import numpy as np

        name, sig, fn = self._signature(mv, signature_name)
        record = metrics_mod.current()
        if record is not None and record.examples is None:
            rows = {getattr(v, "shape", (None,))[:1] for v in feeds.values()}
            if len(rows) == 1 and (first := rows.pop()):
                record.examples = first[0]
        if set(feeds) != set(sig.inputs):
            extra = sorted(set(feeds) - set(sig.inputs))
            missing = sorted(set(sig.inputs) - set(feeds))
            raise bad_request(
                f"Request inputs do not match required inputs for model "
                f"`{mv.model_name}`. Send extra: {extra}. Missing but required: "
                f"{missing}."
            )
        arrays = {}
        for k, v in feeds.items():
            shape = getattr(v, "shape", None)
            if shape is not None:  # before numpy (which holds 64 dimensions at most)
                input_specs.check_input(k, sig.inputs[k], shape, signature=name)
            np_dt = json_tensors.numpy_dtype(sig.inputs[k].dtype)
            arrays[k] = np.asarray(v, dtype=np_dt) if np_dt is not None else np.asarray(v)
            if shape is None:
                input_specs.check_input(k, sig.inputs[k], arrays[k].shape, signature=name)
        return self._call(mv, name, fn, arrays)

    def _run_examples(self, mv: ModelVersion, name: str, fn, in_key: str, serialized) -> dict:
        """Run signature ``name`` on serialized tf.Examples fed as ``in_key``; examples naming
        pairs (:class:`.link_pairs.PairExamples`) run through :attr:`pair_runner`: in chunks of
        bounded size, shared with concurrent requests of the same version and signature;
        examples naming nodes whose blobs are read later (:class:`.node_rows.NodeExamples`,
        batching on) as one batch task with their read (:meth:`_run_node_examples`)."""
        import numpy as np

        def run(rows: Sequence[bytes]) -> dict:
            feed = np.empty(len(rows), dtype=object)
            feed[:] = list(rows)
            return self._call(mv, name, fn, {in_key: feed})

        if isinstance(serialized, PairExamples):
            key = (mv.model_name, mv.version, name)
            return self.pair_runner.run(key, serialized, run)
        if isinstance(serialized, NodeExamples) and self.batcher is not None:
            return self._run_node_examples(mv, name, fn, in_key, serialized)
        return run(serialized)

    def _run_node_examples(
        self, mv: ModelVersion, name: str, fn, in_key: str, examples: NodeExamples
    ) -> dict:
        """Run signature ``name`` on ``examples`` as one task of the batch scheduler: the graph
        read of their nodes and the model call (:mod:`.node_rows`), merged with concurrent
        requests of the same version and signature (one read per sampling setting, then one
        model call). A merged task that fails runs again request by request, so each error
        names its own examples; rows a merged read completed are not read again. The request's
        record gets its batch's read and model call times (the wait for the batch is in
        neither), whether it succeeds or fails."""
        freshness.note_graph_read()
        task = _NodeTask(examples, self.neighbourhoods.batch_key(examples.sampling))
        sig, metrics = mv.signature_defs[name], self.metrics

        def run(feeds: Mapping[str, Any]) -> dict:
            tasks = list(dict.fromkeys(feeds["task"]))  # in the order of their rows
            if metrics is not None:
                metrics.batch_size.labels(mv.model_name).observe(len(feeds["task"]))
            _read_rows([t for t in tasks if t.rows is None])
            read = time.perf_counter()
            rows = [row for t in tasks for row in t.rows]
            try:
                return self._run_arrays(sig, fn, {in_key: _objects(rows)})
            finally:
                for t in tasks:
                    t.model_s = time.perf_counter() - read

        try:
            key = (mv.model_name, mv.version, name, _NodeTask)
            return self.batcher.submit(
                key, {"task": _objects([task] * len(examples))}, len(examples), run
            )
        finally:
            if task.fetch_s is not None:
                self.neighbourhoods.observe(task.fetch_s)
            if task.model_s is not None:
                self._observe_model_call(mv, task.model_s)

    def _read_now(self, examples: NodeExamples) -> None:
        """Read the blobs of ``examples`` now, timed and noted as the request's graph read, for
        their errors only (the rows are dropped)."""
        freshness.note_graph_read()
        start = time.perf_counter()
        try:
            examples.rows(0, len(examples))
        finally:
            self.neighbourhoods.observe(time.perf_counter() - start)

    @contextlib.contextmanager
    def _graph_errors_first(self, serialized: Any) -> Iterator[None]:
        """Around a signature's checks: a request whose node blobs are read in the model's batch
        (:class:`~.node_rows.NodeExamples`) and whose signature is refused reads its nodes first,
        so that a graph error is answered before the signature's, as where blobs are read
        before the signature is looked at (unbatched)."""
        try:
            yield
        except ServingFailure:
            if isinstance(serialized, NodeExamples):
                self._read_now(serialized)
            raise

    def _classify_signature(self, mv: ModelVersion, signature_name: str | None) -> tuple:
        """``(name, function, input key)`` of the classify signature
        ``signature_name`` of ``mv`` (:meth:`run_classify`), after TF Serving's classifier
        checks (400 naming what does not fit)."""
        import tensorflow as tf

        name, sig, fn = self._signature(mv, self.example_signature(mv, signature_name, "classify"))
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
        return name, fn, in_key

    def run_classify(
        self, mv: ModelVersion, serialized: Sequence[bytes], signature_name: str | None
    ):
        """Run a classify signature (TF Serving's classifier contract) on serialized
        tf.Examples (any transport): ``(classes, scores)``, each ``[n, k]`` or None when the
        signature lacks it. Without a signature name, our bundles use their ``classify``
        signature (their ``serving_default`` is the predict one), other SavedModels
        ``serving_default``."""
        with self._graph_errors_first(serialized):
            name, fn, in_key = self._classify_signature(mv, signature_name)
        out = self._run_examples(mv, name, fn, in_key, serialized)
        n = len(serialized)
        classes_key, scores_key = bundle.CLASSES_OUTPUT, bundle.SCORES_OUTPUT
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

    def run_regress(
        self, mv: ModelVersion, serialized: Sequence[bytes], signature_name: str | None
    ):
        """Run a regress signature on serialized tf.Examples (any transport): a ``[n]`` array.
        Without a signature name, a link bundle runs its ``regress`` signature
        (:meth:`example_signature`)."""
        import tensorflow as tf

        with self._graph_errors_first(serialized):
            name, sig, fn = self._signature(
                mv, self.example_signature(mv, signature_name, "regress")
            )
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
        out = self._run_examples(mv, name, fn, next(iter(sig.inputs)), serialized)
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
        it with :func:`~memgraph_tf.serving.json_values.dumps`)."""
        serialized = self._examples(doc, "classify", mv)
        classes, scores = self.run_classify(mv, serialized, doc.get("signature_name"))
        return json_examples.classify_response(classes, scores)

    def regress(self, mv: ModelVersion, doc: dict) -> dict:
        """``:regress`` for a parsed body: ``{"results": [v, ...]}``."""
        # the body's own errors first, as TF Serving parses the body before it looks up the
        # signature; then the signature, before any graph work for node_id / pair examples
        json_examples.request_context(doc)
        json_examples.request_examples(doc, "regress")
        name = self.example_signature(mv, doc.get("signature_name"), "regress")
        serialized = self._examples(doc, "regress", mv)
        return json_examples.regress_response(self.run_regress(mv, serialized, name))

    def predict(self, mv: ModelVersion, doc: dict) -> dict:
        """``:predict`` for a parsed body, row (``instances``) or columnar (``inputs``). On a
        signature that embeds nodes (:func:`.node_examples.embed_role`), ``node_id`` may stand for
        the ``blobs`` input (``{"instances": [{"node_id": 1}, ...]}`` or ``{"inputs":
        {"node_id": [1, ...]}}``): :meth:`node_id_feeds`."""
        name, sig, _ = self._signature(mv, doc.get("signature_name"))
        role = node_examples.embed_role(mv.bundle_config, name)
        if role is not None and _names_node_ids(doc):
            at, doc = _pop_at(doc)
            feeds, columnar = json_tensors.predict_feeds(
                doc, {node_examples.NODE_ID_FEATURE: DT_INT64}, name
            )
            feeds = self.node_id_feeds(mv, name, feeds[node_examples.NODE_ID_FEATURE], at)
            return json_tensors.predict_response(self.run_predict(mv, feeds, name), columnar)

        def check(key: str, shape: list[int]) -> None:
            input_specs.check_input(key, sig.inputs[key], shape, signature=name)

        feeds, columnar = json_tensors.predict_feeds(
            doc,
            {k: info.dtype for k, info in sig.inputs.items()},
            doc.get("signature_name", ""),
            check=check,
        )
        return json_tensors.predict_response(self.run_predict(mv, feeds, name), columnar)

    def node_id_feeds(self, mv: ModelVersion, name: str, node_ids: Any, at: Any = None) -> dict:
        """The feeds of embed signature ``name`` for the nodes ``node_ids`` (any transport): their
        blobs, sampled with the version's settings (:func:`.node_examples.embed_feeds`); with
        ``at`` (the request's ``at`` input) every node at that time
        (:func:`.node_examples.sampling_with_at`, 400 naming ``at``)."""
        role = node_examples.embed_role(mv.bundle_config, name)
        if role is None:
            raise bad_request(
                f"{node_examples.NODE_ID_FEATURE}: signature {name!r} does not embed nodes"
            )
        record = metrics_mod.current()
        if record is not None:
            record.examples = len(node_ids)
        node_examples.check_example_count(len(node_ids), self.max_examples, "node ids")
        sampling = mv.sampling
        if at is not None:
            when = node_examples.read_at(at, node_examples.AT_FEATURE)
            sampling = node_examples.sampling_with_at(
                mv.bundle_config, sampling, when, node_examples.AT_FEATURE
            )
        return node_examples.embed_feeds(
            mv.bundle_config, sampling, role, self.neighbourhoods, node_ids
        )

    # -- status and metadata
    def status_response(
        self, name: str, version: str | int | None = None, label: str | None = None
    ):
        """TF Serving's ``GetModelStatusResponse`` (``model_servers/get_model_status_impl.cc``):
        every version the server has managed, newest first, or the one named, each with its last
        state (:class:`VersionState`: AVAILABLE, START while being written, LOADING between
        load tries, END once unloaded or, with its error, once every load try failed). 404
        "Could not find any versions of model NAME" / "Could not find version N of model NAME",
        400 for an unknown label."""
        from tensorflow_serving.apis import get_model_status_pb2

        record = metrics_mod.current()
        if record is not None:
            record.model = name
        model = self.models.get(name)
        states = dict(model.states) if model is not None else {}
        if not states:
            raise ServingFailure.for_code(
                "NOT_FOUND", f"Could not find any versions of model {name}"
            )
        if label is not None:
            if label not in model.labels:
                raise bad_request(f"Unrecognized servable version label: {label}")
            version = model.labels[label]
        if version is not None:
            if int(version) not in states:
                raise ServingFailure.for_code(
                    "NOT_FOUND", f"Could not find version {version} of model {name}"
                )
            versions = [int(version)]
        else:
            versions = sorted(states, reverse=True)
        resp = get_model_status_pb2.GetModelStatusResponse()
        for v in versions:
            st = resp.model_version_status.add()
            st.version = v
            st.state = get_model_status_pb2.ModelVersionStatus.State.Value(states[v].state)
            st.status.SetInParent()  # error_code OK, error_message "" (printed, as TF Serving)
            codes = st.status.DESCRIPTOR.fields_by_name["error_code"].enum_type
            st.status.error_code = codes.values_by_name[states[v].error_code].number
            st.status.error_message = states[v].error_message
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
        resp.model_spec.name = mv.model_name
        resp.model_spec.version.value = mv.version
        sdm = get_model_metadata_pb2.SignatureDefMap()
        for k, v in mv.signature_defs.items():
            sdm.signature_def[k].CopyFrom(v)
        resp.metadata[bundle.SIGNATURE_DEF_FIELD].Pack(sdm)
        return resp

    def metadata(self, mv: ModelVersion) -> dict:
        """The metadata answer as TF Serving's REST API prints it (``http_rest_api_util.cc``,
        ``ToJsonString``): ``model_spec`` and the unpacked ``SignatureDefMap``, proto field
        names, default-valued fields included (``"dim": []``, ``"name": ""``), no ``"@type"``."""
        from google.protobuf import json_format
        from tensorflow_serving.apis import get_model_metadata_pb2

        resp = self.metadata_response(mv)

        sig_map = get_model_metadata_pb2.SignatureDefMap()
        resp.metadata[bundle.SIGNATURE_DEF_FIELD].Unpack(sig_map)
        opts = {"preserving_proto_field_name": True, "always_print_fields_with_no_presence": True}
        return {
            "model_spec": json_format.MessageToDict(resp.model_spec, **opts),
            "metadata": {bundle.SIGNATURE_DEF_FIELD: json_format.MessageToDict(sig_map, **opts)},
        }


#: TensorFlow's DT_INT64 enum value (``types.proto``), the dtype of ``node_id`` inputs.
DT_INT64 = 9


class _NodeTask:
    """A request's :class:`~.node_rows.NodeExamples` in the batch scheduler (every row of the
    task's feed): ``key`` (its sampling setting: tasks of one key share a read), ``rows`` (its
    serialized examples once read), and the seconds of its setting's read that completed its
    rows (or failed) and of the last model call run on them."""

    __slots__ = ("examples", "fetch_s", "key", "model_s", "rows")

    def __init__(self, examples: NodeExamples, key: Any):
        self.examples, self.key = examples, key
        self.rows: list[bytes] | None = None
        self.fetch_s: float | None = None
        self.model_s: float | None = None


def _read_rows(tasks: Sequence[_NodeTask]) -> None:
    """Complete the rows of ``tasks``: one read per sampling setting (a read of one task names
    its examples, a merged one names none), timed per setting (``fetch_s`` of its tasks); a
    read that fails raises and completes nothing of its setting."""
    groups: dict[Any, list[_NodeTask]] = {}
    for t in tasks:
        groups.setdefault(t.key, []).append(t)
    for group in groups.values():
        start = time.perf_counter()
        try:
            _read_group(group)
        finally:
            for t in group:
                t.fetch_s = time.perf_counter() - start


def _read_group(group: Sequence[_NodeTask]) -> None:
    """Complete the rows of ``group`` (tasks of one sampling setting) with one read."""
    heads: list[bytes] = []
    ids: list[Any] = []
    names: list[Any] = []
    for t in group:
        h, i, n = t.examples.parts()
        heads += h
        ids += i
        names += n
    first = group[0].examples
    rows = complete_rows(heads, ids, names if len(group) == 1 else None, first.fetch, first.key)
    start = 0
    for t in group:
        t.rows, start = rows[start : start + len(t.examples)], start + len(t.examples)


def _objects(values: Sequence[Any]) -> Any:
    """A 1-D numpy object array of ``values``."""
    import numpy as np

    out = np.empty(len(values), dtype=object)
    out[:] = list(values)
    return out


def _pop_at(doc: dict) -> tuple[Any, dict]:
    """A columnar ``:predict`` body's ``inputs.at`` (our extension: one time for every
    ``node_id``) and the body without it; ``(None, doc)`` when it has none."""
    inputs = doc.get("inputs")
    if not isinstance(inputs, dict) or node_examples.AT_FEATURE not in inputs:
        return None, doc
    rest = {k: v for k, v in inputs.items() if k != node_examples.AT_FEATURE}
    return inputs[node_examples.AT_FEATURE], {**doc, "inputs": rest}


def _names_node_ids(doc: Any) -> bool:
    """Whether a ``:predict`` body names nodes: its first instance, or its columnar inputs, an
    object with the key ``node_id``."""
    key = node_examples.NODE_ID_FEATURE
    inst = doc.get("instances") if isinstance(doc, dict) else None
    if isinstance(inst, list) and inst and isinstance(inst[0], dict):
        return key in inst[0]
    inputs = doc.get("inputs") if isinstance(doc, dict) else None
    return isinstance(inputs, dict) and key in inputs


__all__ = [
    "DEFAULT_LOAD_RETRY_INTERVAL_S",
    "DEFAULT_MAX_EXAMPLES",
    "DEFAULT_MAX_NUM_LOAD_RETRIES",
    "DEFAULT_MAX_REQUEST_BYTES",
    "DEFAULT_POLL_WAIT_S",
    "DEFAULT_SIGNATURE",
    "BatchScheduler",
    "BatchingOptions",
    "ModelServer",
    "ModelVersion",
    "PendingLoad",
    "ServedModel",
    "TimedFetcher",
    "VersionState",
    "load_error_status",
    "load_version",
    "op_names",
]
