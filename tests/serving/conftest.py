"""Fixtures for the serving tests: small SavedModels exported here, and local servers over HTTP."""

from __future__ import annotations

import pathlib

import numpy as np
import pytest

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
DATASETS = REPO_ROOT.parent / "shared" / "datasets"

TOY_LABELS = ["cold", "hot"]


def toy_weights(version: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(version)
    return rng.normal(size=(3, 2)).astype(np.float32), rng.normal(size=(2,)).astype(np.float32)


def export_toy(path: pathlib.Path, version: int) -> None:
    """A non-memgraph-tf SavedModel: predict (float x [B,3]), classify and regress over
    serialized tf.Examples holding a float feature ``x`` of length 3."""
    import tensorflow as tf

    w, b = toy_weights(version)

    class Toy(tf.Module):
        def __init__(self):
            super().__init__()
            self.w = tf.Variable(w)
            self.b = tf.Variable(b)
            self.labels = tf.constant(TOY_LABELS)

        def _logits(self, x):
            return tf.matmul(x, self.w) + self.b

        @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32, name="x")])
        def predict(self, x):
            logits = self._logits(x)
            return {"logits": logits, "label_bytes": tf.gather(self.labels, tf.argmax(logits, 1))}

        def _parse(self, serialized):
            feats = tf.io.parse_example(serialized, {"x": tf.io.FixedLenFeature([3], tf.float32)})
            return feats["x"]

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="inputs")])
        def classify(self, inputs):
            logits = self._logits(self._parse(inputs))
            n = tf.shape(inputs)[0]
            return {"classes": tf.tile(self.labels[None, :], [n, 1]),
                    "scores": tf.nn.softmax(logits)}

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="inputs")])
        def regress(self, inputs):
            return {"outputs": tf.reduce_sum(self._logits(self._parse(inputs)), axis=1)}

    m = Toy()
    tf.saved_model.save(m, str(path), signatures={
        "serving_default": m.predict, "classify": m.classify, "regress": m.regress})


def toy_in_process(version: int, x: np.ndarray) -> np.ndarray:
    w, b = toy_weights(version)
    return x.astype(np.float32) @ w + b


@pytest.fixture(scope="session")
def toy_base(tmp_path_factory) -> pathlib.Path:
    base = tmp_path_factory.mktemp("models") / "toy"
    export_toy(base / "1", 1)
    export_toy(base / "2", 2)
    return base


@pytest.fixture(scope="session")
def toy_server(toy_base):
    from memgraph_tf.serving.server import ModelServer, start_server

    ms = ModelServer(toy_base, "toy", labels={"stable": 1}, max_request_bytes=64 * 1024)
    with start_server(ms) as running:
        running.model_server = ms
        yield running


@pytest.fixture(scope="session")
def toy():
    """Helpers for the toy model: ``toy.labels``, ``toy.in_process(version, x)``."""
    import types

    return types.SimpleNamespace(labels=TOY_LABELS, in_process=toy_in_process)
