"""``/monitoring/prometheus/metrics`` and the access log: the page is scraped over HTTP
and read with ``prometheus_client``'s own text parser; its counters match the requests sent over
REST and gRPC. Names and format follow TF Serving's (``servables/tensorflow/util.cc``,
``util/prometheus_exporter.cc``: counters without ``_total``, latencies in microseconds); the
page is served only when a monitoring config enables it, as TF Serving's ``server.cc`` does."""

from __future__ import annotations

import json
import logging

import grpc
import numpy as np
import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

X = [[0.5, -1.0, 2.0]]


@pytest.fixture(scope="module")
def observed(toy_base):
    from memgraph_tf.serving.grpc_server import start_grpc_server
    from memgraph_tf.serving.metrics import METRICS_PATH
    from memgraph_tf.serving.model_server import ModelServer
    from memgraph_tf.serving.server import start_server

    ms = ModelServer(toy_base, "toy", metrics_path=METRICS_PATH, access_log=True, warmup=False)
    with start_server(ms) as rest, start_grpc_server(ms) as grpc_srv:
        yield type("Observed", (), {"ms": ms, "url": rest.url, "target": grpc_srv.target})


def _scrape(url: str) -> dict:
    r = requests.get(f"{url}/monitoring/prometheus/metrics", timeout=30)
    assert r.status_code == 200
    assert r.headers["Content-Type"].startswith("text/plain")
    samples = {}
    for family in text_string_to_metric_families(r.text):
        for s in family.samples:
            samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return {"text": r.text, "samples": samples}


def _value(page: dict, name: str, **labels) -> float:
    return page["samples"].get((name, tuple(sorted(labels.items()))), 0.0)


def test_counters_match_the_requests_sent(observed, caplog):
    from tensorflow_serving.apis import predict_pb2, prediction_service_pb2_grpc

    from memgraph_tf.serving import grpc_codec

    before = _scrape(observed.url)
    ok_rest, bad_rest, ok_grpc = 5, 3, 4
    with caplog.at_level(logging.INFO, logger="memgraph_tf.serving.access_log"):
        for _ in range(ok_rest):
            r = requests.post(f"{observed.url}/v1/models/toy:predict", json={"instances": X})
            assert r.status_code == 200
        for _ in range(bad_rest):
            r = requests.post(f"{observed.url}/v1/models/toy/versions/9:predict", json={})
            assert r.status_code == 404  # no version 9
        with grpc.insecure_channel(observed.target) as channel:
            stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
            for _ in range(ok_grpc):
                req = predict_pb2.PredictRequest()
                req.model_spec.name = "toy"
                req.model_spec.version.value = 1
                grpc_codec.array_to_tensor(np.array(X, dtype=np.float32), req.inputs["x"])
                stub.Predict(req, timeout=30)
    after = _scrape(observed.url)

    def delta(name: str, **labels) -> float:
        return _value(after, name, **labels) - _value(before, name, **labels)

    # TF Serving's counter, written as its exporter writes it (no _total)
    assert "# TYPE :tensorflow:serving:request_count counter" in after["text"]
    assert ':tensorflow:serving:request_count{model_name="toy",status="OK"} ' in after["text"]
    # prometheus_client's parser reads a counter's samples as NAME_total
    count = ":tensorflow:serving:request_count_total"
    assert delta(count, model_name="toy", status="OK") == ok_rest + ok_grpc
    assert delta(count, model_name="toy", status="NOT_FOUND") == bad_rest
    ours = "memgraph_tf_requests_total"
    common = {"model_name": "toy", "API": "Predict"}
    assert delta(ours, version="2", entrypoint="REST", code="OK", **common) == ok_rest
    assert delta(ours, version="1", entrypoint="GRPC", code="OK", **common) == ok_grpc
    assert delta(ours, version="", entrypoint="REST", code="NOT_FOUND", **common) == (bad_rest)
    latency = ":tensorflow:serving:request_latency_count"
    assert delta(latency, model_name="toy", API="Predict", entrypoint="REST") == ok_rest + bad_rest
    assert delta(latency, model_name="toy", API="Predict", entrypoint="GRPC") == ok_grpc
    runtime = ":tensorflow:serving:runtime_latency_count"
    assert delta(runtime, model_name="toy", API="Predict", runtime="TF2") == ok_rest + ok_grpc
    assert _value(after, "memgraph_tf_loaded_versions", model_name="toy") == 2
    # one access line per request
    # on the module's own logger, the name operators configure (tests/test_conventions.py)
    lines = [
        json.loads(r.getMessage())
        for r in caplog.records
        if r.name == "memgraph_tf.serving.access_log"
    ]
    assert len(lines) == ok_rest + bad_rest + ok_grpc
    assert lines[0] == {
        **lines[0],
        "method": "POST /v1/models/toy:predict",
        "entrypoint": "REST",
        "api": "Predict",
        "model": "toy",
        "version": 2,
        "examples": 1,
        "status": 200,
        "code": "OK",
    }
    assert lines[ok_rest]["status"] == 404 and lines[ok_rest]["version"] is None
    assert lines[-1]["status"] == "OK" and lines[-1]["version"] == 1
    assert all(line["latency_ms"] >= line["model_ms"] >= 0 for line in lines)


def test_the_page_is_off_unless_a_monitoring_config_enables_it(toy_server, tmp_path):
    from memgraph_tf.serving.metrics import read_monitoring_config

    r = requests.get(f"{toy_server.url}/monitoring/prometheus/metrics", timeout=30)
    assert r.status_code == 404
    assert r.json() == {"error": "Not found: GET /monitoring/prometheus/metrics"}
    on = tmp_path / "on.config"
    on.write_text('prometheus_config {\n  enable: true,\n  path: "/metrics"\n}\n')
    off = tmp_path / "off.config"
    off.write_text("prometheus_config { enable: false }")
    assert read_monitoring_config(str(on)) == "/metrics"
    assert read_monitoring_config(str(off)) is None
    bad = tmp_path / "bad.config"
    bad.write_text("prometheus_config { enabled: true }")
    with pytest.raises(ValueError, match="not a MonitoringConfig text proto"):
        read_monitoring_config(str(bad))


def test_access_log_switch_from_the_environment():
    from memgraph_tf.serving.access_log import enabled_from_env

    assert enabled_from_env({}) is False
    assert enabled_from_env({"MEMGRAPH_TF_ACCESS_LOG": "1"}) is True
    assert enabled_from_env({"MEMGRAPH_TF_ACCESS_LOG": "off"}) is False
    with pytest.raises(ValueError, match="MEMGRAPH_TF_ACCESS_LOG: expected one of"):
        enabled_from_env({"MEMGRAPH_TF_ACCESS_LOG": "maybe"})


def test_unknown_model_names_share_one_label(observed):
    """10,000 requests naming distinct models the server does not know, through the WSGI app the
    HTTP server runs (in process, for speed) and a few over gRPC: each is counted under the one
    label value UNKNOWN_MODEL, so the page grows by less than 100 KB (with a label value per
    name, 1,500 names make a 35 MB page). TF Serving labels requests with the name they
    ask for (model_servers/http_server.cc and prediction_service_impl.cc,
    RecordModelRequestCount); the known model keeps its own label."""
    from tensorflow_serving.apis import predict_pb2, prediction_service_pb2_grpc

    from memgraph_tf.serving.metrics import UNKNOWN_MODEL
    from memgraph_tf.serving.server import RestApp

    before = _scrape(observed.url)
    app = RestApp(observed.ms)
    statuses = set()
    for i in range(10_000):
        environ = {"REQUEST_METHOD": "GET", "REQUEST_URI": f"/v1/models/nope{i}"}
        app(environ, lambda status, headers: statuses.add(status))
    assert statuses == {"404 Not Found"}
    with grpc.insecure_channel(observed.target) as channel:
        stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
        for i in range(3):
            req = predict_pb2.PredictRequest()
            req.model_spec.name = f"grpc-nope{i}"
            with pytest.raises(grpc.RpcError) as info:
                stub.Predict(req, timeout=30)
            assert info.value.code() == grpc.StatusCode.NOT_FOUND
    after = _scrape(observed.url)
    growth = len(after["text"].encode()) - len(before["text"].encode())
    assert growth < 100_000, growth
    assert "nope" not in after["text"]
    count = ":tensorflow:serving:request_count_total"
    got = _value(after, count, model_name=UNKNOWN_MODEL, status="NOT_FOUND") - _value(
        before, count, model_name=UNKNOWN_MODEL, status="NOT_FOUND"
    )
    assert got == 10_003
    assert _value(after, "memgraph_tf_loaded_versions", model_name="toy") == 2
