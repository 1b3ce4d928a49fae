"""New versions without a restart: the server polls its base paths
(``file_system_poll_wait_seconds``, TF Serving's ``--file_system_poll_wait_seconds``:
``model_servers/main.cc``, default 1, 0 = load once), loads and warms up a new version before it
takes requests, switches at once, and unloads a removed version while the requests holding it
finish on it; ``--model_config_file`` as TF Serving reads it (``server_core.cc``
``ValidateModelConfigList``; policies from ``file_system_storage_path_source.proto``). Versions
that are corrupt or still being written: test_version_lifecycle.py."""

from __future__ import annotations

import os
import shutil
import threading
import time

import numpy as np
import pytest
import requests

from memgraph_tf.serving import rest_api
from tests.serving.conftest import export_toy, toy_in_process

POLL_S = 0.2
X = [[0.5, -1.0, 2.0]]


def _add_version(base, version: int) -> None:
    """Write a version beside the base path and rename it in, as export_bundle does."""
    tmp = base.parent / f".{base.name}-{version}.tmp"
    export_toy(tmp, version)
    os.rename(tmp, base / str(version))


def _version_answering(url: str) -> int | None:
    r = requests.post(f"{url}/v1/models/toy:predict", json={"instances": X}, timeout=30)
    assert r.status_code == 200, r.text
    got = np.array(r.json()["predictions"][0]["logits"], dtype=np.float32)
    for v in (1, 2, 3):
        if np.allclose(got, toy_in_process(v, np.array(X))[0], atol=1e-5):
            return v
    return None


def test_a_new_version_is_served_within_two_polls_with_no_failed_request(tmp_path, toy_base):
    from memgraph_tf.serving.metrics import METRICS_PATH
    from memgraph_tf.serving.model_server import ModelServer
    from memgraph_tf.serving.server import start_server

    base = tmp_path / "toy"
    base.mkdir()
    shutil.copytree(toy_base / "1", base / "1")
    ms = ModelServer(base, "toy", poll_wait_s=POLL_S, metrics_path=METRICS_PATH)
    statuses: list[int] = []
    stop = threading.Event()

    def client(url: str) -> None:
        with requests.Session() as s:
            while not stop.is_set():
                r = s.post(f"{url}/v1/models/toy:predict", json={"instances": X}, timeout=30)
                statuses.append(r.status_code)

    with start_server(ms) as srv:
        assert _version_answering(srv.url) == 1
        threads = [threading.Thread(target=client, args=(srv.url,)) for _ in range(8)]
        for t in threads:
            t.start()
        try:
            _add_version(base, 2)
            added = time.monotonic()  # the version is complete (renamed in) from here
            while _version_answering(srv.url) != 2:
                assert time.monotonic() - added < 60, "version 2 never served"
                time.sleep(0.02)
            switched_s = time.monotonic() - added
        finally:
            stop.set()
            for t in threads:
                t.join()
        # served within two poll intervals of the version being complete, plus its own load and
        # warm-up (measured by the server: :tensorflow:cc:saved_model:load_latency, usec)
        load_s = ms.metrics.load_latency.labels(str((base / "2").resolve()))._value.get() / 1e6
        assert switched_s <= 2 * POLL_S + load_s + 1.0, (switched_s, load_s)
        assert len(statuses) > 8 and set(statuses) == {200}, sorted(set(statuses))
        status = requests.get(f"{srv.url}/v1/models/toy", timeout=30).json()
        assert [s["version"] for s in status["model_version_status"]] == ["2", "1"]

        # removing a version unloads it; its status stays, as END (TF Serving's
        # core/servable_state_monitor.cc keeps the last state of every version it managed)
        shutil.rmtree(base / "1")
        deadline = time.monotonic() + 30
        while requests.get(f"{srv.url}/v1/models/toy/versions/1", timeout=30).json() != {
            "model_version_status": [
                {
                    "version": "1",
                    "state": "END",
                    "status": {"error_code": "OK", "error_message": ""},
                }
            ]
        }:
            assert time.monotonic() < deadline, "version 1 never unloaded"
            time.sleep(0.05)
        r = requests.post(f"{srv.url}/v1/models/toy/versions/1:predict", json={"instances": X})
        assert r.status_code == 404
        assert r.json() == {"error": "Servable not found for request: Specific(toy, 1)"}
        assert ms.metrics.loaded_versions.labels("toy")._value.get() == 1
    ms.close()


def test_a_request_holding_an_unloaded_version_finishes_on_it(tmp_path, toy_base):
    from memgraph_tf.serving.model_server import ModelServer

    base = tmp_path / "toy"
    base.mkdir()
    for v in (1, 2):
        shutil.copytree(toy_base / str(v), base / str(v))
    ms = ModelServer(base, "toy", warmup=False)
    held = ms.resolve("toy", 1, None)  # a request in flight holds its version
    shutil.rmtree(base / "1")
    ms.poll_once()
    assert sorted(ms.versions) == [2]
    out = ms.run_predict(held, {"x": np.array(X, dtype=np.float32)})
    np.testing.assert_allclose(out["logits"], toy_in_process(1, np.array(X)), atol=1e-5)
    assert held.model_name == "toy" and held.version == 1


def _config(text: str, tmp_path):
    path = tmp_path / "models.config"
    path.write_text(text)
    return path


def test_model_config_file_several_models_policies_and_labels(tmp_path, toy_base, toy):
    from memgraph_tf.serving.model_server import ModelServer

    config = _config(
        f"""model_config_list {{
          config {{ name: "newest" base_path: "{toy_base}" model_platform: "tensorflow" }}
          config {{
            name: "both" base_path: "{toy_base}" model_platform: "tensorflow"
            model_version_policy {{ specific {{ versions: 1 versions: 2 }} }}
            version_labels {{ key: "stable" value: 1 }}
            version_labels {{ key: "canary" value: 2 }}
          }}
        }}""",
        tmp_path,
    )
    ms = ModelServer(model_config=config, warmup=False)
    assert sorted(ms.models) == ["both", "newest"]
    assert sorted(ms.models["newest"].versions) == [2]  # TF Serving's default: latest 1
    assert sorted(ms.models["both"].versions) == [1, 2]
    body = b'{"instances": [[0.5, -1.0, 2.0]]}'
    for path, version in (
        ("/v1/models/newest:predict", 2),
        ("/v1/models/both/labels/stable:predict", 1),
        ("/v1/models/both/labels/canary:predict", 2),
    ):
        status, doc = rest_api.handle(ms, "POST", path, body)
        assert status == 200, doc
        np.testing.assert_allclose(
            doc["predictions"][0]["logits"], toy.in_process(version, np.array(X))[0], atol=1e-5
        )
    status, doc = rest_api.handle(ms, "POST", "/v1/models/newest/versions/1:predict", body)
    assert (status, doc) == (404, {"error": "Servable not found for request: Specific(newest, 1)"})
    status, doc = rest_api.handle(ms, "GET", "/v1/models/both/metadata", b"")
    assert doc["model_spec"] == {"name": "both", "signature_name": "", "version": "2"}


def test_model_config_file_reads_what_export_bundle_writes(tmp_path):
    """The models.config export_bundle writes (its writer, without exporting a model: labels ->
    version_labels and a specific policy holding the labelled versions and the newest), with its
    base_path pointed here, parses to that model, policy and labels."""
    from memgraph_tf.serving.export import _write_models_config  # export_bundle's own writer
    from memgraph_tf.serving.model_config import read_model_config

    _write_models_config(tmp_path, "sage", [3], {"stable": 2}, str(tmp_path))
    (entry,) = read_model_config(tmp_path / "models.config")
    assert (entry.name, entry.base_path, entry.labels) == ("sage", tmp_path / "sage", {"stable": 2})
    assert (entry.policy.kind, sorted(entry.policy.versions)) == ("specific", [2, 3])


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            'model_config_list { config { name: "a" base_path: "/x" } '
            'config { name: "a" base_path: "/y" } }',
            "config\\[1\\]: Illegal to list model a multiple times in config list",
        ),
        (
            'model_config_list { config { name: "a" base_path: "models/a" } }',
            r"Expected model a to have an absolute path or URI; got base_path\(\)=models/a",
        ),
        (
            'model_config_list { config { name: "a" base_path: "/x" model_platform: "onnx" } }',
            "serves model_platform 'tensorflow' only, got 'onnx'",
        ),
        ('model_config_list { config { name: "a" base_path: "/x"', "not a ModelServerConfig"),
    ],
)
def test_model_config_file_refusals_name_the_entry(tmp_path, text, message):
    from memgraph_tf.serving.model_server import ModelServer

    with pytest.raises(ValueError, match=message):
        ModelServer(model_config=_config(text, tmp_path))


def test_poll_wait_refuses_negative_seconds(toy_base):
    from memgraph_tf.serving.model_server import ModelServer

    with pytest.raises(ValueError, match="file_system_poll_wait_seconds: expected a number"):
        ModelServer(toy_base, poll_wait_s=-1)
