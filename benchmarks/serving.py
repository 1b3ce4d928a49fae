"""Serving benchmark: the local TF-Serving-compatible server under load, and blob vs float-list JSON.

What it measures, all in one run against ``memgraph-tf serve`` subprocesses on 127.0.0.1:

1. Payload: for 1-node and 64-node ``:classify`` requests, the request body size and the latency
   (single client, sequential) of (a) each node's blob in ``{"b64": ...}`` against (b) the same
   features as JSON float lists in tf.Examples (a second SavedModel whose classify signature parses
   float features). Ratios float/blob are printed; both give the same scores (checked).
2. Load: ``--clients`` concurrent clients (threads, one client each) for ``--duration-s`` seconds
   per row: 1 and 64 nodes per request, with server-side batching off and on (``serve
   --enable-batching``, default settings): requests/s, nodes/s, p50 / p99 latency, and the error
   count, which must be zero (exit status 1 otherwise). One function per transport runs a load
   phase (:func:`rest_load_phase`); each row names its transport.

Usage::

    .venv/bin/python benchmarks/serving.py                   # 60 s per load phase
    .venv/bin/python benchmarks/serving.py --duration-s 10   # a quick look
"""

from __future__ import annotations

import argparse
import logging
import math
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np

log = logging.getLogger("benchmarks.serving")


def build_model(fanouts: list[int], dim: int, classes: list[str], seed: int = 0):
    """A GraphSAGE-shaped Keras model (mean aggregation over masked neighbours, hop by hop)."""
    import keras
    from keras import ops

    keras.utils.set_random_seed(seed)
    inputs = {}
    shape: list[int] = []
    for h in range(len(fanouts) + 1):
        if h:
            shape.append(fanouts[h - 1])
            inputs[f"mask_{h}"] = keras.Input(tuple(shape), dtype="bool", name=f"mask_{h}")
        inputs[f"features_{h}"] = keras.Input(tuple(shape) + (dim,), name=f"features_{h}")
    hidden = inputs[f"features_{len(fanouts)}"]
    for h in range(len(fanouts), 0, -1):
        m = ops.expand_dims(ops.cast(inputs[f"mask_{h}"], "float32"), -1)
        agg = ops.sum(hidden * m, axis=h) / ops.maximum(ops.sum(m, axis=h), 1.0)
        hidden = keras.layers.Dense(32, activation="relu")(
            ops.concatenate([inputs[f"features_{h - 1}"], agg], -1))
    out = keras.layers.Dense(len(classes), activation="softmax")(hidden)
    model = keras.Model(inputs, out)
    model.fanouts, model.feature_dim, model.class_names = list(fanouts), dim, list(classes)
    return model


def node_data(n: int, fanouts: list[int], dim: int, seed: int = 1):
    """``n`` per-node blobs (sample layout, n = 1 each) and the same data as arrays."""
    from memgraph_tf import blob

    rng = np.random.default_rng(seed)
    feats: dict[str, np.ndarray] = {}
    shape: list[int] = []
    for h in range(len(fanouts) + 1):
        if h:
            shape.append(fanouts[h - 1])
            feats[f"mask_{h}"] = rng.random([n] + shape) > 0.1
        feats[f"features_{h}"] = rng.normal(size=[n] + shape + [dim]).astype(np.float32)
    blobs = []
    for i in range(n):
        sections = {}
        for h in range(len(fanouts) + 1):
            size = math.prod(fanouts[:h])
            sections[f"ids_{h}"] = np.arange(size, dtype=np.int64).reshape([1] + list(fanouts[:h]))
            sections[f"features_{h}"] = feats[f"features_{h}"][i : i + 1]
            if h:
                sections[f"mask_{h}"] = feats[f"mask_{h}"][i : i + 1]
        blobs.append(blob.pack(sections))
    return blobs, feats


def float_examples(feats: dict[str, np.ndarray]) -> list[dict]:
    """The same node data as tf.Example feature dicts of flat float (and bool) lists."""
    n = len(feats["features_0"])
    return [{k: v[i].reshape(-1) for k, v in feats.items()} for i in range(n)]


def export_float_model(model, path: pathlib.Path, fanouts: list[int], dim: int,
                       classes: list[str]) -> None:
    """A SavedModel whose classify signature takes the features as float lists in tf.Examples."""
    import tensorflow as tf

    class FloatBundle(tf.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="inputs")],
                     autograph=False)
        def classify(self, inputs):
            spec = {}
            for h in range(len(fanouts) + 1):
                size = math.prod(fanouts[:h])
                spec[f"features_{h}"] = tf.io.FixedLenFeature([size * dim], tf.float32)
                if h:
                    spec[f"mask_{h}"] = tf.io.FixedLenFeature([size], tf.int64)
            parsed = tf.io.parse_example(inputs, spec)
            x = {}
            for h in range(len(fanouts) + 1):
                x[f"features_{h}"] = tf.reshape(parsed[f"features_{h}"], [-1] + fanouts[:h] + [dim])
                if h:
                    x[f"mask_{h}"] = tf.reshape(parsed[f"mask_{h}"] > 0, [-1] + fanouts[:h])
            scores = self.model(x, training=False)
            labels = tf.constant(classes)
            return {"classes": tf.tile(labels[None], [tf.shape(scores)[0], 1]), "scores": scores}

    m = FloatBundle()
    tf.saved_model.save(m, str(path), signatures={"classify": m.classify,
                                                   "serving_default": m.classify})


class Server:
    """``memgraph-tf serve BASE --port P`` in a subprocess."""

    def __init__(self, base: pathlib.Path, name: str, extra_args: tuple[str, ...] = ()):
        from memgraph_tf.testing.arcadedb import free_port

        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
        self.log_file = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "memgraph_tf.cli", "serve", str(base), "--model-name", name,
             "--port", str(self.port), *extra_args], env=env, stdout=self.log_file,
            stderr=subprocess.STDOUT)
        import requests

        deadline = time.monotonic() + 180
        while True:
            try:
                requests.get(f"{self.url}/v1/models/{name}", timeout=2)
                return
            except requests.ConnectionError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.log_file.seek(0)
                    raise RuntimeError(f"server for {base} did not start: "
                                       f"{self.log_file.read()[-2000:].decode(errors='replace')}")
                time.sleep(0.5)

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=30)
        self.log_file.close()


def body_bytes(client, examples) -> int:
    from memgraph_tf.serving.client import encode_example

    items = [encode_example(e, client.blob_feature_key) for e in examples]
    bodies = client._parts(client._head(client.classify_signature, None) + '"examples":[', items,
                           "]}")
    return sum(len(b.encode()) for b in bodies)


def timed(fn, reps: int) -> list[float]:
    out = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q)) if values else float("nan")


def rest_load_phase(url: str, model: str, examples: list, clients: int,
                    duration_s: float) -> dict:
    """``clients`` threads, each with its own REST ServingClient, classifying ``examples`` in a
    loop for ``duration_s``: requests, errors, req/s, nodes/s, p50 / p99 latency."""
    from memgraph_tf.serving.client import ServingClient

    return load_phase(lambda: ServingClient(url, model, timeout_s=60, retries=0), examples,
                      clients, duration_s)


def load_phase(make_client, examples: list, clients: int, duration_s: float) -> dict:
    """``clients`` threads, each with its own client from ``make_client()`` (a context manager
    with ``classify``), classifying ``examples`` in a loop for ``duration_s``: requests, errors,
    req/s, nodes/s, p50 / p99 latency."""
    latencies: list[list[float]] = [[] for _ in range(clients)]
    errors: list[str] = []
    stop = time.monotonic() + duration_s

    def worker(i: int) -> None:
        with make_client() as c:
            while time.monotonic() < stop:
                t0 = time.perf_counter()
                try:
                    res = c.classify(examples)
                    if len(res) != len(examples):
                        errors.append(f"client {i}: {len(res)} results for {len(examples)}")
                except Exception as exc:  # counted and reported: the run must have none
                    errors.append(f"client {i}: {type(exc).__name__}: {exc}")
                latencies[i].append(time.perf_counter() - t0)

    t0 = time.perf_counter()
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    flat = [x for lst in latencies for x in lst]
    return {"requests": len(flat), "errors": errors, "rps": len(flat) / wall,
            "nodes_per_s": len(flat) * len(examples) / wall,
            "p50_ms": pct(flat, 50) * 1e3, "p99_ms": pct(flat, 99) * 1e3}


def parse_args(argv: list[str] | None, description: str, duration_help: str) -> argparse.Namespace:
    """The command line this benchmark and ``serving_grpc.py`` share."""
    p = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--duration-s", type=float, default=60.0, help=duration_help)
    p.add_argument("--clients", type=int, default=8)
    p.add_argument("--fanouts", default="10,5")
    p.add_argument("--feature-dim", type=int, default=64)
    p.add_argument("--reps", type=int, default=30, help="sequential requests per payload case")
    p.add_argument("--decoder", choices=["auto", "op", "portable"], default="auto",
                   help="blob decoder in the bundle (auto: op-free when available)")
    return p.parse_args(argv)


def model_settings(args: argparse.Namespace) -> tuple[list[int], int, list[str], str]:
    """(fanouts, feature dim, class names, decoder with ``auto`` resolved) from :func:`parse_args`."""
    import importlib.util

    fanouts = [int(f) for f in args.fanouts.split(",")]
    classes = [f"class_{i}" for i in range(7)]
    decoder = args.decoder
    if decoder == "auto":
        decoder = "portable" if importlib.util.find_spec("memgraph_tf.ops.portable") else "op"
    return fanouts, args.feature_dim, classes, decoder


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv, __doc__, "seconds per load phase")
    logging.basicConfig(level=logging.WARNING)

    from memgraph_tf.serving.client import ServingClient
    from memgraph_tf.serving.export import export_bundle

    fanouts, dim, classes, decoder = model_settings(args)
    model = build_model(fanouts, dim, classes)
    blobs, feats = node_data(64, fanouts, dim)
    want = model(feats).numpy()
    floats = float_examples(feats)

    with tempfile.TemporaryDirectory(prefix="memgraph-tf-bench-") as tmp:
        tmp = pathlib.Path(tmp)
        export_bundle(model, tmp / "blob", "GraphSage", 1, use_op=decoder == "op")
        export_float_model(model, tmp / "float" / "1", fanouts, dim, classes)
        servers = {"blob": Server(tmp / "blob" / "GraphSage", "GraphSage"),
                   "float": Server(tmp / "float", "GraphSageFloat")}
        try:
            cb = ServingClient(servers["blob"].url, "GraphSage", timeout_s=60)
            cf = ServingClient(servers["float"].url, "GraphSageFloat", timeout_s=60)
            got_b = np.array([[s for _, s in r] for r in cb.classify(blobs)])
            got_f = np.array([[s for _, s in r] for r in cf.classify(floats)])
            np.testing.assert_allclose(got_b, want, atol=1e-5)
            np.testing.assert_allclose(got_f, want, atol=1e-5)

            print(f"# serving benchmark: fanouts={fanouts} feature_dim={dim} classes={len(classes)}"
                  f" decoder={decoder}; blob per node = {len(blobs[0])} bytes")
            print("\n## payload: blob {b64} vs the same features as JSON float lists "
                  f"(sequential, {args.reps} requests each)")
            print(f"{'nodes':>5} {'blob bytes':>11} {'float bytes':>12} {'bytes x':>8} "
                  f"{'blob p50 ms':>12} {'float p50 ms':>13} {'latency x':>10}")
            for n in (1, 64):
                bb, fb = body_bytes(cb, blobs[:n]), body_bytes(cf, floats[:n])
                cb.classify(blobs[:n]), cf.classify(floats[:n])  # warm
                tb = timed(lambda: cb.classify(blobs[:n]), args.reps)
                tf_ = timed(lambda: cf.classify(floats[:n]), args.reps)
                mb, mf = statistics.median(tb) * 1e3, statistics.median(tf_) * 1e3
                print(f"{n:>5} {bb:>11} {fb:>12} {fb / bb:>8.2f} {mb:>12.2f} {mf:>13.2f} "
                      f"{mf / mb:>10.2f}")
            cb.close(), cf.close()

            total_errors = 0
            rows = {}
            print(f"\n## load: {args.clients} concurrent clients, {args.duration_s:g} s per row, "
                  f"blob {{b64}} classify")
            print(f"{'transport':>9} {'batching':>8} {'nodes/req':>9} {'requests':>9} "
                  f"{'req/s':>8} {'nodes/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'errors':>7}")
            for batching in ("off", "on"):
                if batching == "on":
                    servers["blob"].close()
                    servers["blob"] = Server(tmp / "blob" / "GraphSage", "GraphSage",
                                             ("--enable-batching",))
                for n in (1, 64):
                    r = rest_load_phase(servers["blob"].url, "GraphSage", blobs[:n],
                                        args.clients, args.duration_s)
                    rows["rest", batching, n] = r
                    total_errors += len(r["errors"])
                    print(f"{'rest':>9} {batching:>8} {n:>9} {r['requests']:>9} {r['rps']:>8.1f} "
                          f"{r['nodes_per_s']:>9.1f} {r['p50_ms']:>8.2f} {r['p99_ms']:>8.2f} "
                          f"{len(r['errors']):>7}")
                    for e in r["errors"][:5]:
                        print("   error:", e)
            for batching in ("off", "on"):
                print(f"\n64-node vs 1-node requests, nodes/s, batching {batching}: "
                      f"{rows['rest', batching, 64]['nodes_per_s'] / rows['rest', batching, 1]['nodes_per_s']:.1f}x")
            for n in (1, 64):
                on, off = rows["rest", "on", n], rows["rest", "off", n]
                print(f"server-side batching on vs off, {n}-node requests: req/s "
                      f"{on['rps'] / off['rps']:.2f}x, p99 {on['p99_ms'] / off['p99_ms']:.2f}x")
        finally:
            for s in servers.values():
                s.close()
    print(f"errors: {total_errors}")
    return 1 if total_errors else 0


if __name__ == "__main__":
    sys.exit(main())
