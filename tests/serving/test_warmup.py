"""ModelServer replays a version's warmup records at load (TF Serving's --enable_model_warmup):
the calls are made, answers are unchanged, and a bad record is logged and skipped.

The bundle here decodes with the C++ op: replaying warmup does not depend on the decoder, and an
op-free bundle's first call of each signature instantiates the portable decoder's large graph
(seconds per signature and server; the op-free bundles' warmup records are replayed by the
servers of tests/serving/test_bundles.py and tests/serving/test_layout_bundles.py)."""

from __future__ import annotations

import base64
import json
import logging

import pytest

from memgraph_tf.serving import rest_api


@pytest.fixture(scope="module")
def warm_base(tmp_path_factory, sage):
    """BASE/sage: ``sage.make(seed=5)`` exported with the op and its warmup record."""
    from memgraph_tf.serving import bundle
    from memgraph_tf.serving.export import export_bundle

    base = tmp_path_factory.mktemp("warm")
    info = export_bundle(sage.make(seed=5), base, "sage", 1, use_op=True)
    assert bundle.warmup_path(info.path).is_file()
    return info.path.parent


def _bodies(sage) -> tuple[bytes, bytes]:
    blobs, _ = sage.blobs(3, seed=4)
    b64 = [base64.b64encode(b).decode() for b in blobs]
    classify = json.dumps({"examples": [{"blob": {"b64": b}} for b in b64]}).encode()
    predict = json.dumps({"instances": [{"b64": b} for b in b64]}).encode()
    return classify, predict


def test_warmup_replays_the_classify_record_and_warms_predict(warm_base, sage):
    from memgraph_tf.serving.model_server import ModelServer

    warm = ModelServer(warm_base)
    cold = ModelServer(warm_base, warmup=False)
    try:
        # the classify record, and the predict signature on the record's blob
        assert warm.warmup_requests == 2
        assert cold.warmup_requests == 0
        assert warm.model_calls == 0  # model_calls counts requests only
        classify, predict = _bodies(sage)
        for verb, body in (("classify", classify), ("predict", predict)):
            a = rest_api.handle_bytes(warm, "POST", f"/v1/models/sage:{verb}", body)
            b = rest_api.handle_bytes(cold, "POST", f"/v1/models/sage:{verb}", body)
            assert a[0] == 200, a
            assert a == b
        assert warm.model_calls == 2
    finally:
        warm.close()
        cold.close()


def test_a_bundle_without_warmup_records_loads_unwarmed(tmp_path, sage):
    from memgraph_tf.serving import bundle
    from memgraph_tf.serving.export import export_bundle
    from memgraph_tf.serving.model_server import ModelServer

    info = export_bundle(sage.make(seed=3), tmp_path, "sage", 1, use_op=True, warmup=False)
    assert not bundle.warmup_path(info.path).exists()
    ms = ModelServer(tmp_path / "sage")
    assert ms.warmup_requests == 0


def _write_records(path, records: list[bytes]) -> None:
    import tensorflow as tf

    with tf.io.TFRecordWriter(str(path)) as writer:
        for r in records:
            writer.write(r)


def test_bad_warmup_records_are_logged_and_skipped(tmp_path, warm_base, sage, caplog):
    import shutil

    from tensorflow_serving.apis import prediction_log_pb2

    from memgraph_tf.serving import bundle
    from memgraph_tf.serving.model_server import ModelServer

    shutil.copytree(warm_base, tmp_path / "sage")  # a copy of the bundle: its records are rewritten
    path = bundle.warmup_path(tmp_path / "sage" / "1")
    good = path.read_bytes()
    wrong_signature = prediction_log_pb2.PredictionLog()
    wrong_signature.classify_log.request.model_spec.signature_name = "nope"
    wrong_signature.classify_log.request.input.example_list.examples.add()
    _write_records(path, [b"\xff not a PredictionLog", wrong_signature.SerializeToString()])
    with caplog.at_level(logging.WARNING, logger="memgraph_tf.serving.model_server"):
        ms = ModelServer(tmp_path / "sage")
    assert ms.warmup_requests == 0
    text = caplog.text
    assert "warmup record 0 failed" in text
    assert 'warmup record 1 failed: Serving signature name: "nope" not found' in text
    classify, _ = _bodies(sage)
    status, _ = rest_api.handle_bytes(ms, "POST", "/v1/models/sage:classify", classify)
    assert status == 200

    path.write_bytes(good[:-3])  # a truncated TFRecord file
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="memgraph_tf.serving.model_server"):
        ms = ModelServer(tmp_path / "sage")
    assert ms.warmup_requests == 0
    assert "cannot read the warmup records" in caplog.text
