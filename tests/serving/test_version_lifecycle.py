"""The version lifecycle of ``memgraph-tf serve`` under load, as TF Serving's: a model keeps
serving until a successor has loaded, whatever lands in its base path.

Each case runs under a steady load of 8 clients (4 REST, 4 gRPC, ``node_id`` classify requests
for the newest version) against a model of two versions of the session's op bundle, served from
a positional base path (every version) and from a ``--model_config_file`` (TF Serving's default
policy, the newest version), and counts the failed requests. The TF Serving sources each case
mirrors are cited in it (tensorflow/serving, ``tensorflow_serving/``):

- ``core/aspired_versions_manager.cc`` + ``core/availability_preserving_policy.cc``: a version
  the policy no longer selects is unloaded only once a selected one is ready (or none is
  selected); a new version is loaded first;
- ``core/loader_harness.cc`` + ``util/retrier.cc``: a failed load is retried
  ``max_num_load_retries`` times, ``load_retry_interval_micros`` apart, then the version is in
  state END with its error, and ``AspiredVersionsManager`` does not try it again while it stays
  aspired (``enable_reload_servables_with_error`` is off in the model server);
- ``core/servable_state_monitor.cc`` + ``model_servers/get_model_status_impl.cc``: the status
  lists the last state of every version ever managed, END ones included, with its error.

Polls are driven with :meth:`ModelServer.poll_once` (what the polling thread runs every
``file_system_poll_wait_seconds``) so each step is one poll, not a wait; one case runs the
polling thread itself.
"""

from __future__ import annotations

import dataclasses
import shutil
import threading
import time

import grpc
import pytest
import requests

from tests.serving.grpc_kit import node_id_request

NODES = [1, 5, 42, 399]
CLIENTS = 8
#: the pause between two requests of one client: a steady load that leaves the 2 cores room
CLIENT_PAUSE_S = 0.01


def _graph_source():
    """The packaged synthetic graph with 4-wide features (the op bundle's width)."""
    from memgraph_tf.client.sources import EmbeddedSource
    from memgraph_tf.datasets import planetoid_graph, synthetic

    data = synthetic()
    return EmbeddedSource(
        planetoid_graph(dataclasses.replace(data, features=data.features[:, :4].copy()))
    )


@pytest.fixture(scope="module")
def graph_source():
    source = _graph_source()
    yield source
    source.close()


class Load:
    """8 clients sending ``node_id`` classify requests for the newest version until stopped:
    ``failures`` (what each failed request answered), ``versions`` (the versions the gRPC
    answers named, in order), ``count`` (requests made)."""

    def __init__(self, rest_url: str, grpc_target: str):
        self.rest_url, self.grpc_target = rest_url, grpc_target
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.failures: list[str] = []
        self.versions: list[int] = []
        self.count = 0
        self.threads = [
            threading.Thread(target=self._rest if i % 2 else self._grpc, daemon=True)
            for i in range(CLIENTS)
        ]

    def _record(self, failure: str | None, version: int | None = None) -> None:
        with self.lock:
            self.count += 1
            if failure is not None:
                self.failures.append(failure)
            if version is not None:
                self.versions.append(version)

    def _rest(self) -> None:
        body = {"examples": [{"node_id": n} for n in NODES]}
        with requests.Session() as s:
            while not self.stop.is_set():
                r = s.post(f"{self.rest_url}/v1/models/sage:classify", json=body, timeout=60)
                self._record(None if r.status_code == 200 else f"REST {r.status_code} {r.text}")
                self.stop.wait(CLIENT_PAUSE_S)

    def _grpc(self) -> None:
        from tensorflow_serving.apis import prediction_service_pb2_grpc

        req = node_id_request("sage", NODES)
        with grpc.insecure_channel(self.grpc_target) as channel:
            stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
            while not self.stop.is_set():
                try:
                    resp = stub.Classify(req, timeout=60)
                except grpc.RpcError as exc:
                    self._record(f"gRPC {exc.code().name} {exc.details()}")
                else:
                    self._record(None, resp.model_spec.version.value)
                self.stop.wait(CLIENT_PAUSE_S)

    def answered_after(self, mark: int, want: int = CLIENTS) -> None:
        """Wait (bounded) until ``want`` more requests than ``mark`` were answered."""
        deadline = time.monotonic() + 60
        while self.count < mark + want:
            assert time.monotonic() < deadline, "the clients stopped answering"
            self.stop.wait(0.01)

    def newest_version(self) -> int:
        """The version the next gRPC answer names."""
        mark = len(self.versions)
        self.answered_after(self.count)
        deadline = time.monotonic() + 60
        while len(self.versions) <= mark:
            assert time.monotonic() < deadline, "no gRPC answer"
            self.stop.wait(0.01)
        return self.versions[-1]


@dataclasses.dataclass
class Served:
    """A served model under load: ``ms`` the ModelServer, ``base`` its base path, ``load`` the
    clients, ``rest_url``, ``mode`` (``positional`` or ``config``)."""

    ms: object
    base: object
    load: Load
    rest_url: str
    mode: str
    source_version: object

    def status(self) -> dict[int, dict]:
        r = requests.get(f"{self.rest_url}/v1/models/sage", timeout=30)
        assert r.status_code == 200, r.text
        return {int(s["version"]): s for s in r.json()["model_version_status"]}

    def poll(self, times: int = 1) -> None:
        """``times`` polls, each with requests answered before and after it."""
        for _ in range(times):
            self.load.answered_after(self.load.count)
            self.ms.poll_once()
        self.load.answered_after(self.load.count)

    def copy_in(self, version: int, parts=None) -> None:
        """Copy the bundle's files (those under ``parts``, else all) into ``BASE/version``, as
        an operator writing a version in place does."""
        dest = self.base / str(version)
        dest.mkdir(exist_ok=True)
        for part in parts or [p.name for p in self.source_version.iterdir()]:
            src = self.source_version / part
            if src.is_dir():
                shutil.copytree(src, dest / part, dirs_exist_ok=True)
            else:
                shutil.copy2(src, dest / part)


def _serve(tmp_path, mode: str, source_version, graph_source, **kw):
    from memgraph_tf.serving.model_server import ModelServer

    base = tmp_path / "sage"
    base.mkdir()
    for v in (1, 2):
        shutil.copytree(source_version, base / str(v))
    settings = dict(
        graph_source=graph_source, warmup=False, max_num_load_retries=1, load_retry_interval_s=0
    )
    settings.update(kw)
    if mode == "config":  # TF Serving's default policy: the newest version
        config = tmp_path / "models.config"
        config.write_text(
            f'model_config_list {{ config {{ name: "sage" base_path: "{base}" '
            f'model_platform: "tensorflow" }} }}'
        )
        return ModelServer(model_config=config, **settings), base
    return ModelServer(base, "sage", **settings), base


@pytest.fixture(params=["positional", "config"])
def served(request, tmp_path, sage_op_bundle, graph_source):
    """Versions 1 and 2 of the op bundle served (REST + gRPC) under the 8-client load."""
    from memgraph_tf.serving.grpc_server import start_grpc_server
    from memgraph_tf.serving.server import start_server

    source_version = sage_op_bundle.path / "1"
    ms, base = _serve(tmp_path, request.param, source_version, graph_source)
    with start_server(ms) as rest, start_grpc_server(ms) as rpc:
        load = Load(rest.url, rpc.target)
        for t in load.threads:
            t.start()
        try:
            yield Served(ms, base, load, rest.url, request.param, source_version)
        finally:
            load.stop.set()
            for t in load.threads:
                t.join(timeout=60)
            ms.close()


def _served_versions(served: Served) -> list[int]:
    return [1, 2] if served.mode == "positional" else [2]


def test_a_corrupt_newer_version_ends_with_its_error_and_the_model_serves_on(served):
    """``availability_preserving_policy.cc``: the newest version stays loaded while the new
    aspired one is not ready; ``loader_harness.cc``: the failed load is retried
    (``max_num_load_retries``) and then ends (END) with the loader's status, which
    ``get_model_status_impl.cc`` prints; ``aspired_versions_manager.cc``: it is not tried again on
    later polls. TensorFlow's reader (``cc/saved_model/reader.cc``) answers a saved_model.pb that
    does not parse with DATA_LOSS "Can't parse PATH as binary proto"."""
    served.copy_in(3)
    (served.base / "3" / "saved_model.pb").write_bytes(b"\x0a\xff\xff not a SavedModel")
    served.poll()  # the first try fails: another is due (LOADING)
    assert served.status()[3] == {
        "version": "3",
        "state": "LOADING",
        "status": {"error_code": "OK", "error_message": ""},
    }
    served.poll(3)  # the retry fails: END, and later polls leave it there
    status = served.status()
    assert status[3] == {
        "version": "3",
        "state": "END",
        "status": {
            "error_code": "DATA_LOSS",
            "error_message": f"Can't parse {served.base / '3' / 'saved_model.pb'} as binary proto",
        },
    }
    assert sorted(v for v, s in status.items() if s["state"] == "AVAILABLE") == _served_versions(
        served
    )
    # one try and max_num_load_retries (1) retries in four polls: the later polls left it alone
    assert served.ms.models["sage"].pending[3].tries == 2
    assert served.load.newest_version() == 2
    assert served.load.failures == [], served.load.failures[:3]


def test_a_truncated_newer_version_causes_no_failed_request(served):
    """A version whose variables were cut short: TensorFlow's restore fails with OUT_OF_RANGE
    "Read less bytes than requested" (``tsl/platform/default/posix_file_system.cc``), the load
    is retried and ends with that status (``loader_harness.cc``);
    ``availability_preserving_policy.cc`` keeps version 2."""
    served.copy_in(3)
    (shard,) = (served.base / "3" / "variables").glob("variables.data-*")
    shard.write_bytes(shard.read_bytes()[: shard.stat().st_size // 2])
    served.poll(3)
    status = served.status()
    assert status[3] == {
        "version": "3",
        "state": "END",
        "status": {"error_code": "OUT_OF_RANGE", "error_message": "Read less bytes than requested"},
    }
    assert served.load.newest_version() == 2
    assert served.load.failures == [], served.load.failures[:3]


@pytest.mark.parametrize(
    ("first", "rest"),
    [
        # written in place: the graph and the weights first, the assets after
        (["saved_model.pb", "fingerprint.pb", "variables"], ["assets", "assets.extra"]),
        # half copied: everything but the weights' data shard
        (["saved_model.pb", "fingerprint.pb", "assets", "assets.extra"], ["variables"]),
    ],
    ids=["in_place", "half_copied"],
)
def test_a_version_still_being_written_waits_and_loads_once_complete(served, first, rest):
    """A version is complete when every file its saved_model.pb names is there
    (``loading.missing_files``: the variables' index and shards, the meta graph's assets, the
    bundle's config and labels): until then it is in state START (``servable_state_monitor.cc``
    publishes START for a managed version not loading yet) and the model serves on
    (``availability_preserving_policy.cc``); once complete it loads on the next poll and
    answers ``node_id`` requests."""
    served.copy_in(3, first)
    if "variables" not in first:
        served.copy_in(3, ["variables"])
        (shard,) = (served.base / "3" / "variables").glob("variables.data-*")
        shard.unlink()
    served.poll(2)
    assert served.status()[3] == {
        "version": "3",
        "state": "START",
        "status": {"error_code": "OK", "error_message": ""},
    }
    assert served.load.newest_version() == 2
    served.copy_in(3, rest)  # completed later
    served.poll()
    status = served.status()
    assert status[3]["state"] == "AVAILABLE", status
    if served.mode == "config":
        assert status[2]["state"] == "END"  # unloaded once its successor loaded
    assert served.load.newest_version() == 3
    assert served.ms.models["sage"].versions[3].bundle_config is not None
    assert served.load.failures == [], served.load.failures[:3]


def test_deleting_a_version_that_is_not_served_changes_nothing(served):
    """Deleting a version that failed (END) or, under the newest-version policy, an older one
    that is not loaded: ``file_system_storage_path_source.cc`` aspires what remains, the loaded
    version stays aspired and serving, and ``servable_state_monitor.cc`` keeps the failed
    version's END status."""
    served.copy_in(3)
    (served.base / "3" / "saved_model.pb").write_bytes(b"\x0a\xff\xff not a SavedModel")
    served.poll(2)
    ended = served.status()[3]
    assert ended["state"] == "END"
    shutil.rmtree(served.base / "3")
    if served.mode == "config":
        shutil.rmtree(served.base / "1")
    served.poll(2)
    status = served.status()
    assert status[3] == ended
    assert sorted(v for v, s in status.items() if s["state"] == "AVAILABLE") == _served_versions(
        served
    )
    assert served.load.newest_version() == 2
    assert served.load.failures == [], served.load.failures[:3]


def test_the_polling_thread_keeps_serving_through_a_corrupt_version(
    tmp_path, sage_op_bundle, graph_source
):
    """The same as the corrupt case, with the server's own polling thread
    (``file_system_poll_wait_seconds``) and a retry interval (``load_retry_interval_micros``):
    END once every try failed, no failed request, version 2 serving."""
    from memgraph_tf.serving.grpc_server import start_grpc_server
    from memgraph_tf.serving.server import start_server

    ms, base = _serve(
        tmp_path,
        "config",
        sage_op_bundle.path / "1",
        graph_source,
        poll_wait_s=0.05,
        load_retry_interval_s=0.1,
    )
    with start_server(ms) as rest, start_grpc_server(ms) as rpc:
        load = Load(rest.url, rpc.target)
        for t in load.threads:
            t.start()
        try:
            load.answered_after(0)
            shutil.copytree(sage_op_bundle.path / "1", tmp_path / "3.tmp")
            (tmp_path / "3.tmp" / "saved_model.pb").write_bytes(b"\x0a\xff\xff not a SavedModel")
            (tmp_path / "3.tmp").rename(base / "3")
            deadline = time.monotonic() + 60
            while (state := ms.models["sage"].states.get(3)) is None or state.state != "END":
                assert time.monotonic() < deadline, state
                load.stop.wait(0.02)
            assert state.error_code == "DATA_LOSS"
            load.answered_after(load.count)
            assert load.newest_version() == 2
        finally:
            load.stop.set()
            for t in load.threads:
                t.join(timeout=60)
            ms.close()
    assert load.failures == [], load.failures[:3]


def test_load_retry_settings_are_checked(toy_base):
    from memgraph_tf.serving.model_server import ModelServer

    with pytest.raises(ValueError, match=r"max_num_load_retries: expected an int >= 0, got -1"):
        ModelServer(toy_base, max_num_load_retries=-1)
    with pytest.raises(ValueError, match=r"load_retry_interval_s: expected a number of seconds"):
        ModelServer(toy_base, load_retry_interval_s=float("nan"))


def test_a_version_dropped_before_it_loaded_ends_and_a_lost_base_path_changes_nothing(
    tmp_path, toy_base
):
    """``aspired_versions_manager.cc``: a version no longer aspired has its load retries
    cancelled (``CancelLoadServableRetry``) and its load ends with the last error
    (``loader_harness.cc``, ``util/retrier.cc``); one still being written (START) ends
    CANCELLED. ``file_system_storage_path_source.cc``: a base path that cannot be found yields
    no aspired-versions list, so nothing is unloaded."""
    from memgraph_tf.serving.model_server import ModelServer, VersionState

    base = tmp_path / "toy"
    base.mkdir()
    for v in (1, 2):
        shutil.copytree(toy_base / str(v), base / str(v))
    ms = ModelServer(base, "toy", warmup=False, max_num_load_retries=3, load_retry_interval_s=0)
    (base / "3").mkdir()  # being written: the graph without its variables
    shutil.copy2(toy_base / "1" / "saved_model.pb", base / "3" / "saved_model.pb")
    (base / "4").mkdir()
    (base / "4" / "saved_model.pb").write_bytes(b"\x0a\xff\xff not a SavedModel")
    ms.poll_once()
    states = ms.models["toy"].states
    assert (states[3], states[4]) == (VersionState("START"), VersionState("LOADING"))
    shutil.rmtree(base / "3")
    shutil.rmtree(base / "4")
    ms.poll_once()
    assert states[3] == VersionState("END", "CANCELLED", "Loading of servable cancelled")
    assert states[4] == VersionState(
        "END", "DATA_LOSS", f"Can't parse {base / '4' / 'saved_model.pb'} as binary proto"
    )
    base.rename(tmp_path / "moved")
    ms.poll_once()
    assert sorted(ms.versions) == [1, 2]
    assert {v: s.state for v, s in states.items()} == {
        1: "AVAILABLE",
        2: "AVAILABLE",
        3: "END",
        4: "END",
    }
