"""Bundles from export_bundle, served over real HTTP by the local server: op and op-free."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
import requests

from memgraph_tf import errors
from memgraph_tf.serving.client import ServingClient

KINDS = [pytest.param(True, id="op"), pytest.param(False, id="op-free")]
N_NODES = 7


@pytest.fixture(scope="session")
def sage_model(sage):
    return sage.make()


@pytest.fixture(scope="session")
def node_data(sage, sage_model):
    blobs, feats = sage.blobs(N_NODES)
    return blobs, feats, sage_model(feats).numpy()


@pytest.fixture(scope="session")
def bundles(tmp_path_factory, sage_model):
    from memgraph_tf.serving.export import export_bundle

    base = tmp_path_factory.mktemp("bundles")
    infos = {}
    for use_op in (True, False):
        name = "sage_op" if use_op else "sage_portable"
        infos[use_op] = export_bundle(
            sage_model,
            base,
            name,
            1,
            use_op=use_op,
            sample_options={"seed": 7, "low_degree": "pad"},
            labels={"stable": 1},
        )
    return base, infos


@pytest.fixture(scope="session")
def servers(bundles):
    from memgraph_tf.serving.model_server import ModelServer
    from memgraph_tf.serving.server import start_server

    _base, infos = bundles
    running = {}
    for use_op, info in infos.items():
        running[use_op] = start_server(ModelServer(info.path.parent, info.name))
        running[use_op].info = info
    yield running
    for r in running.values():
        r.close()


@pytest.mark.parametrize("use_op", KINDS)
def test_classify_matches_keras_in_process(servers, node_data, sage, use_op):
    blobs, _, want = node_data
    srv = servers[use_op]
    with ServingClient(srv.url, srv.info.name) as c:
        results = c.classify(blobs)
    assert [[lbl for lbl, _ in row] for row in results] == [sage.classes] * N_NODES
    np.testing.assert_allclose([[s for _, s in row] for row in results], want, atol=1e-5, rtol=0)


@pytest.mark.parametrize("use_op", KINDS)
def test_predict_matches_keras_in_process(servers, node_data, sage, use_op):
    blobs, _, want = node_data
    srv = servers[use_op]
    with ServingClient(srv.url, srv.info.name) as c:
        rows = c.predict(list(blobs))
        cols = c.predict(inputs={"blobs": list(blobs)})
    np.testing.assert_allclose([r["scores"] for r in rows], want, atol=1e-5, rtol=0)
    assert [r["class_ids"] for r in rows] == want.argmax(1).tolist()
    assert [r["classes"] for r in rows] == [sage.classes[i] for i in want.argmax(1)]
    np.testing.assert_allclose(cols["scores"], want, atol=1e-5, rtol=0)


@pytest.mark.parametrize("use_op", KINDS)
def test_classify_by_curl_style_json(servers, node_data, use_op):
    """The raw REST body a user would write: base64 blob in {"b64": ...} under key "blob"."""
    import base64

    blobs, _, want = node_data
    srv = servers[use_op]
    body = {
        "signature_name": "classify",
        "examples": [{"blob": {"b64": base64.b64encode(b).decode()}} for b in blobs[:2]],
    }
    r = requests.post(
        f"{srv.url}/v1/models/{srv.info.name}/versions/1:classify", json=body, timeout=60
    )
    assert r.status_code == 200
    got = r.json()["results"]
    np.testing.assert_allclose([[p[1] for p in row] for row in got], want[:2], atol=1e-5, rtol=0)


@pytest.mark.parametrize("use_op", KINDS)
def test_malformed_blob_is_a_400_naming_the_field(servers, node_data, use_op):
    blobs, _, _ = node_data
    bad = bytearray(blobs[0])
    bad[4] = 9  # version
    srv = servers[use_op]
    with ServingClient(srv.url, srv.info.name) as c:
        with pytest.raises(errors.BadRequestError, match="version: expected 1, got 9 at offset 4"):
            c.classify([bytes(bad)])
        with pytest.raises(
            errors.BadRequestError,
            match=re.escape(
                "Key: blob, Index: 0.  Data types don't match. Data type: int64 but expected "
                "type: string"
            ),
        ):
            c.classify([{"blob": [1, 2]}])  # ints make an int64 feature, not the bytes blob


def test_classify_signature_meets_tf_serving_classifier_rules(bundles, sage):
    """Written from TF Serving's classifier contract (servables/tensorflow/classifier.cc, FACTS.md):
    exactly one input, keyed "inputs", DT_STRING (serialized tf.Examples); outputs "classes"
    (DT_STRING) and/or "scores" (DT_FLOAT), both [batch, k] with the same k; nothing else."""
    from tensorflow.core.framework import types_pb2
    from tensorflow.core.protobuf import saved_model_pb2

    for info in bundles[1].values():
        sm = saved_model_pb2.SavedModel()
        sm.ParseFromString((info.path / "saved_model.pb").read_bytes())
        (mg,) = [m for m in sm.meta_graphs if "serve" in m.meta_info_def.tags]
        sig = mg.signature_def["classify"]
        assert sig.method_name == "tensorflow/serving/classify"
        assert list(sig.inputs) == ["inputs"]
        assert sig.inputs["inputs"].dtype == types_pb2.DT_STRING
        assert [d.size for d in sig.inputs["inputs"].tensor_shape.dim] == [-1]
        assert set(sig.outputs) == {"classes", "scores"}
        assert sig.outputs["classes"].dtype == types_pb2.DT_STRING
        assert sig.outputs["scores"].dtype == types_pb2.DT_FLOAT
        k = len(sage.classes)
        for key in ("classes", "scores"):
            assert [d.size for d in sig.outputs[key].tensor_shape.dim] == [-1, k]
        predict = mg.signature_def["serving_default"]
        assert predict.method_name == "tensorflow/serving/predict"
        assert list(predict.inputs) == ["blobs"]
        assert predict.inputs["blobs"].dtype == types_pb2.DT_STRING


def test_bundle_layout_assets_and_models_config(bundles, sage):
    from google.protobuf import text_format
    from tensorflow_serving.config import model_server_config_pb2

    base, infos = bundles
    for use_op, info in infos.items():
        v = info.path
        assert (v / "saved_model.pb").is_file() and (v / "variables" / "variables.index").is_file()
        assert (v / "assets" / "class_labels.txt").read_text().splitlines() == sage.classes
        cfg = json.loads((v / "assets" / "memgraph_tf_bundle.json").read_text())
        assert cfg["fanouts"] == list(sage.fanouts) and cfg["use_op"] is use_op
        assert cfg["options"] == {"seed": 7, "low_degree": "pad"}
        lib = v / "assets.extra" / "memgraph_tf"
        if use_op:
            meta = json.loads((lib / "op_library.json").read_text())
            import tensorflow as tf

            assert meta["tf_version"] == tf.__version__
            assert (lib / meta["library"]).stat().st_size > 0
        else:
            assert not lib.exists()
    cfg = model_server_config_pb2.ModelServerConfig()
    text_format.Parse((base / "models.config").read_text(), cfg)
    entries = {c.name: c for c in cfg.model_config_list.config}
    assert set(entries) == {info.name for info in infos.values()}
    for name, entry in entries.items():
        assert entry.base_path == f"/models/{name}" and entry.model_platform == "tensorflow"
        assert dict(entry.version_labels) == {"stable": 1}
        assert list(entry.model_version_policy.specific.versions) == [1]


def test_op_free_bundle_has_only_stock_ops(bundles):
    from tensorflow.core.protobuf import saved_model_pb2

    from memgraph_tf.serving.model_server import op_names as _op_names

    sm = saved_model_pb2.SavedModel()
    sm.ParseFromString((bundles[1][False].path / "saved_model.pb").read_bytes())
    ops = set().union(*(_op_names(mg) for mg in sm.meta_graphs))
    assert not [op for op in ops if op.startswith("MemgraphTf")]
    sm.ParseFromString((bundles[1][True].path / "saved_model.pb").read_bytes())
    assert "MemgraphTf>UnpackBlob" in set().union(*(_op_names(mg) for mg in sm.meta_graphs))


def test_export_refuses_existing_version_and_bad_arguments(bundles, sage_model, tmp_path):
    from memgraph_tf.serving.export import export_bundle

    base, infos = bundles
    info = infos[True]
    with pytest.raises(FileExistsError, match="version 1 of model 'sage_op' exists"):
        export_bundle(sage_model, base, info.name, 1, use_op=True)
    with pytest.raises(ValueError, match="sample_options: key 'password' looks like a connection"):
        export_bundle(sage_model, tmp_path, "m", 1, use_op=False, sample_options={"password": "x"})
    with pytest.raises(ValueError, match=r"version: expected an int >= 1 .*got 0"):
        export_bundle(sage_model, tmp_path, "m", 0, use_op=False)
    with pytest.raises(ValueError, match=r"name: expected letters, digits.*got 'a/b'"):
        export_bundle(sage_model, tmp_path, "a/b", 1, use_op=False)
    assert not (tmp_path / "m").exists() or not any((tmp_path / "m").iterdir())


def test_sampling_config_through_the_config_signature(servers):
    srv = servers[True]
    with ServingClient(srv.url, srv.info.name) as c:
        cfg = c.sampling_config()
    assert cfg["fanouts"] == [3, 2] and cfg["properties"] == ["features"]
    assert cfg["blob_feature_key"] == "blob"


@pytest.mark.parametrize("library", ["bundled", "other-tf"])
def test_op_bundle_in_a_fresh_cli_server_process(bundles, node_data, cli_server, tmp_path, library):
    """`memgraph-tf serve` in its own process must register the op before loading the bundle:
    from the bundle's library when it was built for this TF, else by building the project's."""
    import shutil

    blobs, _, want = node_data
    info = bundles[1][True]
    base = info.path.parent
    if library == "other-tf":
        base = tmp_path / info.name
        shutil.copytree(info.path.parent, base)
        meta_path = base / "1" / "assets.extra" / "memgraph_tf" / "op_library.json"
        meta = json.loads(meta_path.read_text())
        meta["tf_version"] = "0.0.1"
        meta_path.write_text(json.dumps(meta))
    with cli_server([str(base), "--version-label", "stable=1"], info.name) as run:
        with ServingClient(run.url, info.name, label="stable") as c:
            results = c.classify(blobs)
            assert c.status()["model_version_status"][0]["state"] == "AVAILABLE"
        np.testing.assert_allclose([[s for _, s in r] for r in results], want, atol=1e-5, rtol=0)
    # no --host: bound to 127.0.0.1 only (the address main() logs is the socket's own)
    assert f"at http://127.0.0.1:{run.port}/v1/models/{info.name}" in run.output
    # cli_server stops it with SIGTERM (what kill, docker stop and systemd send): a clean exit
    assert "SIGTERM, shutting down" in run.output and run.returncode == 0, run.output[-3000:]
    if library == "bundled":
        assert "loading the bundle's op library" in run.output
    else:
        assert "the bundle's op library was built for TF 0.0.1" in run.output


def _graphsage_and_its_softmax(sage, feats):
    """The project's own (subclassed Keras) GraphSAGE shaped like ``sage``, and the softmax of its
    logits for ``feats``: the scores its bundle must answer."""
    import tensorflow as tf

    from memgraph_tf.client.graphsage import GraphSAGE

    model = GraphSAGE(
        list(sage.fanouts), sage.dim, len(sage.classes), hidden_units=8, class_names=sage.classes
    )
    model.ensure_built()
    return model, tf.nn.softmax(model(feats, training=False)).numpy()


@pytest.fixture(scope="module")
def graphsage_bundle(tmp_path_factory, node_data, sage):
    """The project's GraphSAGE exported op-free once (version 3), its op twin, and the scores
    both must answer: shared by the two tests below (one op-free export instead of two)."""
    from memgraph_tf.serving.export import export_bundle

    _, feats, _ = node_data
    model, want = _graphsage_and_its_softmax(sage, feats)
    info = export_bundle(model, tmp_path_factory.mktemp("graphsage"), "sage", 3, use_op=False)
    op_info = export_bundle(
        model, tmp_path_factory.mktemp("graphsage_op"), "sage", 3, use_op=True, warmup=False
    )
    return info, want, op_info


def test_graphsage_bundle_scores_are_softmax_of_its_logits(graphsage_bundle, node_data):
    """The project's GraphSAGE returns logits: the bundle's scores are their softmax. Served from
    the op twin: the softmax is the export's, after either decoder (the op-free bundle's scores
    are checked against the same softmax below, the way TF Serving loads it), and an op-free
    server's load and first call cost seconds."""
    from memgraph_tf.serving.model_server import ModelServer
    from memgraph_tf.serving.server import start_server

    blobs, _, _ = node_data
    info, want, op_info = graphsage_bundle
    assert info.config["scores"] == op_info.config["scores"] == "logits"
    assert op_info.config["use_op"] and not info.config["use_op"]
    info = op_info
    with (
        start_server(ModelServer(info.path.parent, warmup=False)) as srv,
        ServingClient(srv.url, "sage") as c,
    ):
        results = c.classify(blobs)
    np.testing.assert_allclose([[s for _, s in r] for r in results], want, atol=1e-5, rtol=0)


def test_warmup_file_is_a_classify_request_the_bundle_answers(bundles, servers, sage):
    """assets.extra/tf_serving_warmup_requests: TFRecord of PredictionLog (TF Serving's format)."""
    import tensorflow as tf
    from tensorflow_serving.apis import prediction_log_pb2

    for use_op, info in bundles[1].items():
        records = list(
            tf.data.TFRecordDataset(
                str(info.path / "assets.extra" / "tf_serving_warmup_requests")
            ).as_numpy_iterator()
        )
        assert len(records) == 1
        log_entry = prediction_log_pb2.PredictionLog.FromString(records[0])
        req = log_entry.classify_log.request
        assert (req.model_spec.name, req.model_spec.signature_name) == (info.name, "classify")
        (ex,) = req.input.example_list.examples
        blob_bytes = ex.features.feature["blob"].bytes_list.value[0]
        with ServingClient(servers[use_op].url, info.name) as c:
            (row,) = c.classify([blob_bytes])
        assert [lbl for lbl, _ in row] == sage.classes
        assert abs(sum(s for _, s in row) - 1.0) < 1e-5


def _run_like_tf_serving(version_dir, calls) -> list[dict]:
    """Run signatures the way tensorflow_model_server does (SavedModelBundle): one TF1 session
    for the version, the restore op fed with the variables path, then each signature's tensors by
    the names in its SignatureDef -- not the TF2 object graph that tf.saved_model.load (and the
    local server) use. ``calls``: ``[(signature name, its input's value), ...]``; returns one
    ``{output key: array}`` per call."""
    import tensorflow as tf

    graph = tf.Graph()
    out = []
    with tf.compat.v1.Session(graph=graph) as sess:
        meta = tf.compat.v1.saved_model.loader.load(sess, ["serve"], str(version_dir))
        for signature_name, value in calls:
            sig = meta.signature_def[signature_name]
            (in_info,) = sig.inputs.values()
            names = sorted(sig.outputs)
            fetched = sess.run([sig.outputs[k].name for k in names], {in_info.name: value})
            out.append(dict(zip(names, fetched)))
    return out


@pytest.mark.parametrize("use_op", KINDS)
def test_bundle_runs_the_way_tf_serving_loads_it(bundles, node_data, sage, use_op):
    """TF Serving's classifier.cc at run time: feed the serialized Examples to the "inputs"
    tensor, then classes (DT_STRING) and scores (DT_FLOAT) must both be [number of examples, k];
    the scores must be the Keras model's. The warmup record and predict run the same way."""
    import tensorflow as tf
    from tensorflow_serving.apis import prediction_log_pb2

    blobs, _, want = node_data
    info = bundles[1][use_op]
    serialized = []
    for b in blobs:
        ex = tf.train.Example()
        ex.features.feature["blob"].bytes_list.value.append(b)
        serialized.append(ex.SerializeToString())
    (record,) = tf.data.TFRecordDataset(
        str(info.path / "assets.extra" / "tf_serving_warmup_requests")
    ).as_numpy_iterator()
    req = prediction_log_pb2.PredictionLog.FromString(record).classify_log.request
    warm = [ex.SerializeToString() for ex in req.input.example_list.examples]
    out, predicted, warmed = _run_like_tf_serving(
        info.path,
        [
            ("classify", serialized),
            ("serving_default", blobs),
            (req.model_spec.signature_name, warm),
        ],
    )
    assert out["classes"].dtype == object and out["scores"].dtype == np.float32
    assert out["classes"].shape == out["scores"].shape == (N_NODES, len(sage.classes))
    assert out["classes"].tolist() == [[c.encode() for c in sage.classes]] * N_NODES
    np.testing.assert_allclose(out["scores"], want, atol=1e-5, rtol=0)

    np.testing.assert_allclose(predicted["scores"], want, atol=1e-5, rtol=0)
    assert predicted["class_ids"].tolist() == want.argmax(1).tolist()

    assert warmed["scores"].shape == (1, len(sage.classes))


def test_graphsage_bundle_runs_the_way_tf_serving_loads_it(graphsage_bundle, node_data):
    """The project's own (subclassed Keras) GraphSAGE, exported op-free for the stock image."""
    blobs, _, _ = node_data
    info, want, _ = graphsage_bundle
    (out,) = _run_like_tf_serving(info.path, [("serving_default", blobs)])
    np.testing.assert_allclose(out["scores"], want, atol=1e-5, rtol=0)
