"""Benchmark: one large link request to ``memgraph-tf serve`` (pairs by node id), and several at
once -- the server's latency and peak memory growth, against a baseline commit in the same run.

The model: an initialised (untrained: cost does not depend on the weights) LinkPredictor on Cora
(``(:Paper)-[:CITES]-(:Paper)``, fanouts ``--fanouts``, 64 hidden units, 1,433 bag-of-words
features per node), exported as an op bundle keyed by the ``id`` property, served by
``memgraph-tf serve --graph embedded:cora`` (REST and gRPC) in a child process pinned to
``--cpus`` (default the first two CPUs this process may use). For each version -- this checkout
(``now``) and, with ``--baseline REV``, the ``memgraph_tf`` package of commit ``REV`` (``git
archive``, first on the child's ``PYTHONPATH``) -- the server is started, warmed up with one
request of 16 pairs, then measured:

* **one request** of ``--pairs`` random pairs over REST, then over gRPC: wall time, and the
  server's peak RSS growth during it (``VmHWM`` after the request, reset before it by writing 5
  to ``/proc/PID/clear_refs``, less ``VmRSS`` before it; the REST request is the server's first
  large one, so its growth includes what the allocator keeps afterwards);
* **concurrent**: ``--clients`` REST requests of ``--pairs`` different pairs sent at once: the
  first and the last answer's time, and the peak RSS growth over all of them.

Every answer is checked to hold one result per pair; the first request's answers of both
versions are checked equal (rtol 1e-5). Printed: a table per version and the ratios now /
baseline, with the load average before and after.

    .venv/bin/python benchmarks/link_requests.py --baseline 56da544
    .venv/bin/python benchmarks/link_requests.py --pairs 256 --clients 4
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import random
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from batch import child_env, materialise  # noqa: E402 -- beside this file: importable once HERE is on sys.path

MODEL = "links"
PATTERN = "(:Paper)-[:CITES]-(:Paper)"
CORA_NODES = 2708
NOW = "now"


def export(base: pathlib.Path, fanouts: list[int]) -> None:
    """The benchmark's op link bundle under ``base/links/1``."""
    import keras

    from memgraph_tf.client.link_prediction import LinkPredictor
    from memgraph_tf.serving.export_links import export_link_bundle

    keras.utils.set_random_seed(0)
    model = LinkPredictor("Paper", {PATTERN: fanouts}, {"Paper": 1433}, hidden_units=64)
    model.properties = {"Paper": ["features"]}
    export_link_bundle(model, base, MODEL, 1, decoder="op", sample_options={"id_property": "id"})


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def status_kb(pid: int, field: str) -> int:
    """``field`` (``VmRSS``, ``VmHWM``) of ``/proc/PID/status``, in KiB."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"/proc/{pid}/status has no {field}")


class Server:
    """``memgraph-tf serve`` of the bundle in a child process (``package``: a baseline's
    ``memgraph_tf`` first on its path), pinned to ``cpus``."""

    def __init__(self, base: pathlib.Path, package: pathlib.Path | None, cpus: list[int]):
        self.port, self.grpc_port = free_port(), free_port()
        cmd = [
            sys.executable,
            "-c",
            "import sys; from memgraph_tf.cli import main; sys.exit(main())",
        ]
        cmd += ["serve", str(base / MODEL), "--graph", "embedded:cora", "--port", str(self.port)]
        cmd += ["--grpc-port", str(self.grpc_port), "--file-system-poll-wait-seconds", "0"]
        env = child_env(package)
        env["PYTHONPATH"] = os.pathsep.join(
            [p for p in [env.get("PYTHONPATH"), str(HERE.parent)] if p]
        )
        self.proc = subprocess.Popen(
            cmd,
            cwd=base,  # (python -c puts the working directory first on sys.path)
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            preexec_fn=lambda: os.sched_setaffinity(0, cpus),
        )
        self.url = f"http://127.0.0.1:{self.port}"
        self._wait_ready()

    def _wait_ready(self, timeout_s: float = 300.0) -> None:
        import requests

        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited: {self.proc.stderr.read().decode()[-2000:]}")
            try:
                if requests.get(f"{self.url}/v1/models/{MODEL}", timeout=2).status_code == 200:
                    return
            except requests.ConnectionError:
                pass
            time.sleep(0.5)  # (polling a child process's port: no event to wait on)
        raise RuntimeError("server did not start")

    def reset_peak(self) -> int:
        """Reset the child's peak RSS; its RSS now, in KiB."""
        with open(f"/proc/{self.proc.pid}/clear_refs", "w") as f:
            f.write("5")
        return status_kb(self.proc.pid, "VmRSS")

    def peak(self) -> int:
        return status_kb(self.proc.pid, "VmHWM")

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def pairs_of(seed: int, n: int) -> list[tuple[int, int]]:
    rng = random.Random(seed)
    return [(rng.randrange(CORA_NODES), rng.randrange(CORA_NODES)) for _ in range(n)]


def rest_scores(session, url: str, pairs) -> list[float]:
    examples = [{"source_id": s, "target_id": t} for s, t in pairs]
    r = session.post(f"{url}/v1/models/{MODEL}:classify", json={"examples": examples}, timeout=600)
    if r.status_code != 200:
        raise RuntimeError(f"HTTP {r.status_code}: {r.text[:300]}")
    results = r.json()["results"]
    if len(results) != len(pairs):
        raise RuntimeError(f"{len(results)} results for {len(pairs)} pairs")
    return [row[0][1] for row in results]


def grpc_scores(port: int, pairs) -> list[float]:
    import grpc
    from tensorflow_serving.apis import classification_pb2, prediction_service_pb2_grpc

    req = classification_pb2.ClassificationRequest()
    req.model_spec.name = MODEL
    for s, t in pairs:
        feature = req.input.example_list.examples.add().features.feature
        feature["source_id"].int64_list.value.append(s)
        feature["target_id"].int64_list.value.append(t)
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        rows = prediction_service_pb2_grpc.PredictionServiceStub(channel).Classify(req, timeout=600)
    out = [row.classes[0].score for row in rows.result.classifications]
    if len(out) != len(pairs):
        raise RuntimeError(f"{len(out)} results for {len(pairs)} pairs")
    return out


def measure(server: Server, args: argparse.Namespace) -> dict:
    """One version's figures: seconds and peak RSS growth (MB) per row."""
    import requests

    session = requests.Session()
    rest_scores(session, server.url, pairs_of(99, 16))  # warm-up: a small request
    out: dict = {}
    first = pairs_of(0, args.pairs)
    for transport in ("rest", "grpc"):
        before = server.reset_peak()
        t0 = time.perf_counter()
        if transport == "rest":
            out["scores"] = rest_scores(session, server.url, first)
        else:
            grpc_scores(server.grpc_port, first)
        out[transport] = (time.perf_counter() - t0, (server.peak() - before) / 1024)
    done: list[float] = []
    errors: list[str] = []

    def client(i: int) -> None:
        try:
            rest_scores(requests.Session(), server.url, pairs_of(100 + i, args.pairs))
            done.append(time.perf_counter() - t0)
        except Exception as exc:  # noqa: BLE001 -- reported: a run must have none
            errors.append(f"{type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=client, args=(i,)) for i in range(args.clients)]
    before = server.reset_peak()
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise RuntimeError(f"concurrent requests failed: {errors[:3]}")
    out["concurrent"] = (min(done), max(done), (server.peak() - before) / 1024)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--baseline", help="a git revision to compare against, in the same run")
    p.add_argument("--pairs", type=int, default=1024, help="pairs per request")
    p.add_argument("--clients", type=int, default=8, help="concurrent requests")
    p.add_argument("--fanouts", type=int, nargs="+", default=[5, 3])
    p.add_argument(
        "--cpus",
        type=int,
        nargs="+",
        default=sorted(os.sched_getaffinity(0))[:2],
        help="the CPUs the server may use (default: the first two)",
    )
    args = p.parse_args(argv)
    print(f"load average at start: {os.getloadavg()[0]:.1f}; server CPUs {args.cpus}")
    results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="link-requests-") as tmp:
        base = pathlib.Path(tmp, "models")
        export(base, args.fanouts)
        versions: dict[str, pathlib.Path | None] = {NOW: None}
        if args.baseline:
            base_dir, sha = materialise(args.baseline, pathlib.Path(tmp, "baseline"))
            versions = {f"baseline {sha}": base_dir, NOW: None}
        for name, package in versions.items():
            server = Server(base, package, args.cpus)
            try:
                results[name] = measure(server, args)
            finally:
                server.close()
    print(
        f"\n## one link request of {args.pairs} pairs by node id (Cora, fanouts "
        f"{args.fanouts}, op bundle); {args.clients} such requests at once (REST)"
    )
    print(
        f"{'version':18s} {'REST s':>7s} {'REST MB':>8s} {'gRPC s':>7s} {'gRPC MB':>8s} "
        f"{'conc. first s':>13s} {'conc. last s':>12s} {'conc. MB':>9s}"
    )
    for name, r in results.items():
        c = r["concurrent"]
        print(
            f"{name:18s} {r['rest'][0]:7.2f} {r['rest'][1]:8.0f} {r['grpc'][0]:7.2f} "
            f"{r['grpc'][1]:8.0f} {c[0]:13.2f} {c[1]:12.2f} {c[2]:9.0f}"
        )
    if len(results) == 2:
        import numpy as np

        (_, base), (_, now) = results.items()
        np.testing.assert_allclose(now["scores"], base["scores"], rtol=1e-5, atol=1e-6)
        ratios = [
            now[k][i] / base[k][i] if base[k][i] else float("nan")
            for k, i in (("rest", 0), ("rest", 1), ("grpc", 0), ("grpc", 1))
        ] + [now["concurrent"][i] / base["concurrent"][i] for i in range(3)]
        print(
            f"{'now / baseline':18s} "
            + " ".join(f"{x:{w}.2f}" for x, w in zip(ratios, (7, 8, 7, 8, 13, 12, 9)))
        )
        print("scores: now = baseline (rtol 1e-5)")
    print(f"load average at end: {os.getloadavg()[0]:.1f}")
    print(
        json.dumps({k: {n: v for n, v in r.items() if n != "scores"} for k, r in results.items()})
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
