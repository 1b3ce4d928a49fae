"""Fixtures for the serving tests: small SavedModels exported here, and local servers over HTTP."""

from __future__ import annotations

import contextlib
import pathlib
import signal
import subprocess
import sys
import time
import types
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

from tests.processes import interruptible

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
            return {
                "classes": tf.tile(self.labels[None, :], [n, 1]),
                "scores": tf.nn.softmax(logits),
            }

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="inputs")])
        def regress(self, inputs):
            return {"outputs": tf.reduce_sum(self._logits(self._parse(inputs)), axis=1)}

    m = Toy()
    tf.saved_model.save(
        m,
        str(path),
        signatures={"serving_default": m.predict, "classify": m.classify, "regress": m.regress},
    )


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
    from memgraph_tf.serving.model_server import ModelServer
    from memgraph_tf.serving.server import start_server

    ms = ModelServer(toy_base, "toy", labels={"stable": 1}, max_request_bytes=64 * 1024)
    with start_server(ms) as running:
        running.model_server = ms
        yield running


@contextlib.contextmanager
def _recorded_calls(obj: Any, name: str, measure: Callable[..., Any]) -> Iterator[list[Any]]:
    original = getattr(obj, name)
    own = name in vars(obj)
    seen: list[Any] = []

    def recording(*args: Any, **kwargs: Any) -> Any:
        seen.append(measure(*args, **kwargs))
        return original(*args, **kwargs)

    setattr(obj, name, recording)
    try:
        yield seen
    finally:
        if own:
            setattr(obj, name, original)
        else:
            delattr(obj, name)


@pytest.fixture
def recorded_calls():
    """``with recorded_calls(obj, "method", measure) as seen:`` -- inside the block each call of
    ``obj.method(*args)`` also appends ``measure(*args)`` to ``seen``; the method is restored
    after."""
    return _recorded_calls


@pytest.fixture
def cli_server(repo_root):
    """``with cli_server(args, model) as run:`` -- ``memgraph-tf serve ARGS --port P`` in its own
    process, ready (it answers ``GET /v1/models/MODEL``) when the block starts: ``run.url``,
    ``run.port``. When the block ends the process gets ``stop`` (SIGTERM unless given) and ``run``
    gains ``returncode`` and ``output`` (stdout and stderr). A server that exits or does not answer
    within ``start_timeout_s`` fails the test with its output."""
    import os

    import requests

    from memgraph_tf.testing.arcadedb import free_port

    @contextlib.contextmanager
    def serve(
        args: list[str], model: str, *, stop: int = signal.SIGTERM, start_timeout_s: float = 120
    ) -> Iterator[types.SimpleNamespace]:
        port = free_port()
        proc = subprocess.Popen(
            interruptible(
                [sys.executable, "-m", "memgraph_tf.cli", "serve", *args, "--port", str(port)]
            ),
            cwd=repo_root,
            env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "PYTHONFAULTHANDLER": "1"},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        run = types.SimpleNamespace(
            url=f"http://127.0.0.1:{port}", port=port, returncode=None, output=""
        )
        try:
            deadline = time.monotonic() + start_timeout_s
            while True:
                try:
                    requests.get(f"{run.url}/v1/models/{model}", timeout=2)
                    break
                except requests.ConnectionError:
                    if proc.poll() is not None or time.monotonic() > deadline:
                        pytest.fail(f"server did not start: {proc.stdout.read()[-3000:]}")
                    time.sleep(0.5)
            yield run
        finally:
            proc.send_signal(stop)
            try:  # communicate drains the pipe while waiting: a chatty server cannot block on it
                run.output, _ = proc.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                proc.send_signal(signal.SIGABRT)  # PYTHONFAULTHANDLER: every thread's stack
                try:
                    output, _ = proc.communicate(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    output, _ = proc.communicate()
                pytest.fail(
                    f"server did not exit within 30 s of signal {stop}; its output:\n"
                    f"{output[-5000:]}"
                )
            run.returncode = proc.returncode

    return serve


@pytest.fixture(scope="session")
def toy():
    """Helpers for the toy model: ``toy.labels``, ``toy.in_process(version, x)``."""
    return types.SimpleNamespace(labels=TOY_LABELS, in_process=toy_in_process)


# ------------------------------------------------------------------ a GraphSAGE-shaped model
SAGE_FANOUTS = (3, 2)
SAGE_DIM = 4
SAGE_CLASSES = ["alpha", "beta", "gamma"]


def make_sage_like(seed: int = 0):
    """A small Keras model with GraphSAGE's input contract ({features_h, mask_h} -> [B, k]
    probabilities) and attributes (fanouts, feature_dim, num_classes, class_names)."""
    import keras
    from keras import ops

    keras.utils.set_random_seed(seed)
    f1, f2 = SAGE_FANOUTS
    d = SAGE_DIM
    inp = {
        "features_0": keras.Input((d,), name="features_0"),
        "features_1": keras.Input((f1, d), name="features_1"),
        "features_2": keras.Input((f1, f2, d), name="features_2"),
        "mask_1": keras.Input((f1,), dtype="bool", name="mask_1"),
        "mask_2": keras.Input((f1, f2), dtype="bool", name="mask_2"),
    }
    m2 = ops.expand_dims(ops.cast(inp["mask_2"], "float32"), -1)
    h2 = ops.sum(inp["features_2"] * m2, axis=2) / ops.maximum(ops.sum(m2, axis=2), 1.0)
    h1 = keras.layers.Dense(8, activation="relu")(ops.concatenate([inp["features_1"], h2], -1))
    m1 = ops.expand_dims(ops.cast(inp["mask_1"], "float32"), -1)
    agg = ops.sum(h1 * m1, axis=1) / ops.maximum(ops.sum(m1, axis=1), 1.0)
    out = keras.layers.Dense(len(SAGE_CLASSES), activation="softmax")(
        ops.concatenate([inp["features_0"], agg], -1)
    )
    model = keras.Model(inp, out)
    model.fanouts = list(SAGE_FANOUTS)
    model.feature_dim = d
    model.num_classes = len(SAGE_CLASSES)
    model.class_names = list(SAGE_CLASSES)
    return model


def sage_node_blobs(n: int, seed: int = 1):
    """``n`` per-node blobs in the sample layout (n = 1 per blob), plus the batched model inputs."""
    from memgraph_tf import blob

    rng = np.random.default_rng(seed)
    f1, f2 = SAGE_FANOUTS
    feats = {
        "features_0": rng.normal(size=(n, SAGE_DIM)).astype(np.float32),
        "features_1": rng.normal(size=(n, f1, SAGE_DIM)).astype(np.float32),
        "features_2": rng.normal(size=(n, f1, f2, SAGE_DIM)).astype(np.float32),
        "mask_1": rng.random((n, f1)) > 0.2,
        "mask_2": rng.random((n, f1, f2)) > 0.3,
    }
    blobs = []
    for i in range(n):
        sections = {
            "ids_0": np.array([100 + i], np.int64),
            "features_0": feats["features_0"][i : i + 1],
            "ids_1": np.arange(f1, dtype=np.int64)[None],
            "features_1": feats["features_1"][i : i + 1],
            "mask_1": feats["mask_1"][i : i + 1],
            "ids_2": np.arange(f1 * f2, dtype=np.int64).reshape(1, f1, f2),
            "features_2": feats["features_2"][i : i + 1],
            "mask_2": feats["mask_2"][i : i + 1],
        }
        blobs.append(blob.pack(sections))
    return blobs, feats


@pytest.fixture(scope="session")
def sage():
    import types

    return types.SimpleNamespace(
        make=make_sage_like,
        blobs=sage_node_blobs,
        classes=SAGE_CLASSES,
        fanouts=SAGE_FANOUTS,
        dim=SAGE_DIM,
    )


SAGE_BUNDLE_OPTIONS = {"seed": 7, "low_degree": "pad"}


def _export_sage(tmp_path_factory, sage, *, use_op: bool) -> types.SimpleNamespace:
    """``sage.make(seed=5)`` exported as ``sage`` version 1 with :data:`SAGE_BUNDLE_OPTIONS`,
    decoded by the op or the portable decoder: the model, the bundle's base path, the options and
    the export info."""
    from memgraph_tf.serving.export import export_bundle

    base = tmp_path_factory.mktemp("sage_op_bundle" if use_op else "sage_bundle")
    model = sage.make(seed=5)
    info = export_bundle(
        model, base, "sage", 1, use_op=use_op, sample_options=dict(SAGE_BUNDLE_OPTIONS)
    )
    return types.SimpleNamespace(
        model=model, path=base / "sage", options=dict(SAGE_BUNDLE_OPTIONS), info=info
    )


@pytest.fixture(scope="session")
def sage_bundle(tmp_path_factory, sage):
    """One op-free bundle of ``sage.make(seed=5)`` (sampling options ``SAGE_BUNDLE_OPTIONS``, with
    its warmup record), shared by the modules that serve a GraphSAGE-shaped bundle but do not test
    the export itself: ``.model`` (the Keras model), ``.path`` (BASE/sage, a ModelServer's model
    dir), ``.options``, ``.info`` (export_bundle's answer). Servers that do not test warmup load it
    with ``warmup=False``."""
    return _export_sage(tmp_path_factory, sage, use_op=False)


@pytest.fixture(scope="session")
def sage_op_bundle(tmp_path_factory, sage):
    """The C++-op twin of :func:`sage_bundle`: the same model (``sage.make(seed=5)``, seeded, so
    the same weights), the same sampling options, decoded by ``MemgraphTf>UnpackBlob`` instead of
    the portable decoder. For
    servers whose tests are about the protocol, limits or routing rather than the decoder: it
    exports in well under a second and loads without building the portable decoder's graph."""
    return _export_sage(tmp_path_factory, sage, use_op=True)


# ------------------------------------------------------------------ a signature of unknown rank
def export_any_rank(path: pathlib.Path) -> None:
    """A SavedModel whose ``serving_default`` takes inputs of any rank: ``s`` (DT_STRING, echoed
    as ``s_out``) and ``f`` (DT_FLOAT, summed into ``f_sum``) -- the inputs only the server's own
    rank limits bound."""
    import tensorflow as tf

    class AnyRank(tf.Module):
        @tf.function(
            input_signature=[
                tf.TensorSpec(None, tf.string, name="s"),
                tf.TensorSpec(None, tf.float32, name="f"),
            ]
        )
        def predict(self, s, f):
            return {"s_out": tf.identity(s), "f_sum": tf.reduce_sum(f)}

    m = AnyRank()
    tf.saved_model.save(m, str(path), signatures={"serving_default": m.predict})


@pytest.fixture(scope="session")
def any_rank_base(tmp_path_factory) -> pathlib.Path:
    """BASE/anyrank with version 1 of :func:`export_any_rank`."""
    base = tmp_path_factory.mktemp("models") / "anyrank"
    export_any_rank(base / "1")
    return base
