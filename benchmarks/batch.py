"""Batch inference benchmark: ``memgraph_tf.client.batch`` end to end on a synthetic graph.

An embedded graph of ``--nodes`` nodes (``--dim`` float features, ``--degree`` random edges per node
on average, label ``Node``, internal ids) and an untrained GraphSAGE bundle (fanouts ``--fanouts``)
run in-process (the op bundle; ``--op-free`` for the stock-ops one). Each size runs in its own
subprocess, which measures, in this order and in the same run:

* **ids + features**: the same keyset-paged ids, and each batch's features read through
  ``tf_features.pack`` -- reading the ids and features alone (the baseline the ratio is against);
* **ids + neighbourhoods**: the same ids, and each batch's per-node neighbourhood blobs through
  ``tf_features.sample_per_node`` -- sampling alone, no model, no writes (what the pipeline's fetch
  stage does: its floor);
* **end to end**: ``classify_graph`` -- ids, neighbourhoods, the bundle's ``classify`` signature,
  and the three properties written per node, pipelined.

It prints nodes/s for each, the ratios end-to-end / baseline and end-to-end / sampling, and the peak
RSS (``ru_maxrss``) of the process for ``--nodes`` and for ``--small`` nodes (target: within 1.5x),
with the growth during the end-to-end run (peak minus the RSS just before it).

    .venv/bin/python benchmarks/batch.py                     # 100k and 10k nodes
    .venv/bin/python benchmarks/batch.py --nodes 20000 --small 2000 --fanouts 10
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import resource
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def build_graph(n: int, dim: int, degree: float, seed: int = 0):
    import numpy as np

    from memgraph_tf.embedded import EmbeddedGraph

    rng = np.random.default_rng(seed)
    features = rng.standard_normal((n, dim)).astype(np.float32).tolist()
    m = int(n * degree / 2)
    src = rng.integers(0, n, size=m).tolist()
    dst = rng.integers(0, n, size=m).tolist()
    return EmbeddedGraph.from_edge_list(zip(src, dst), num_nodes=n, label="Node",
                                        node_properties={"features": features})


def export(directory: pathlib.Path, fanouts: list[int], dim: int, use_op: bool) -> pathlib.Path:
    import keras

    from memgraph_tf.client import GraphSAGE
    from memgraph_tf.serving import export_bundle

    keras.utils.set_random_seed(0)
    model = GraphSAGE(fanouts, dim, 4, hidden_units=16, dropout=0.0,
                      class_names=["a", "b", "c", "d"]).ensure_built()
    info = export_bundle(model, directory, "BenchSage", 1, use_op=use_op, properties=["features"],
                         warmup=False)
    return info.path


def child(args: argparse.Namespace) -> dict:
    """One size, in this process: the three measurements and the RSS figures, as a dict."""
    from memgraph_tf.client import EmbeddedSource
    from memgraph_tf.client.batch import BatchClassifier, BundleBackend

    t0 = time.perf_counter()
    source = EmbeddedSource(build_graph(args.child, args.dim, args.degree))
    build_s = time.perf_counter() - t0
    model = BundleBackend(args.bundle)
    cfg = model.config
    fanouts, props, opts = list(cfg.fanouts), list(cfg.properties), {**cfg.options, "seed": 0}

    def paged(run: BatchClassifier):  # the ids the classify run would page through
        after = None
        while True:
            ids = run._target.page(after, args.batch_size, True)
            if not ids:
                return
            yield ids
            after = ids[-1]

    probe = BatchClassifier(source, model, batch_size=args.batch_size, write_property="probe", progress=False)
    model.classify(source.sample_blobs_per_node([0, 1], fanouts, props, opts))  # trace the signature once

    t0 = time.perf_counter()
    count = sum(len(source.pack_blob(ids, props)) and len(ids) for ids in paged(probe))
    read_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    sampled = sum(len(source.sample_blobs_per_node(ids, fanouts, props, opts)) for ids in paged(probe))
    sample_s = time.perf_counter() - t0

    rss_before = _rss_mb()
    run = BatchClassifier(source, model, batch_size=args.batch_size, progress=False)
    summary = run.run()
    assert summary.classified == count == sampled == args.child, (summary, count, sampled)
    return {
        "nodes": args.child, "build_s": build_s, "read_s": read_s, "sample_s": sample_s,
        "e2e_s": summary.elapsed_s, "rss_before_mb": rss_before, "peak_mb": _peak_mb(),
    }


def run_child(n: int, bundle: pathlib.Path, args: argparse.Namespace) -> dict:
    command = [sys.executable, str(pathlib.Path(__file__).resolve()), "--child", str(n), "--bundle", str(bundle),
               "--dim", str(args.dim), "--degree", str(args.degree), "--batch-size", str(args.batch_size)]
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    out = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    if out.returncode != 0:
        raise SystemExit(f"the {n}-node run failed:\n{out.stderr[-4000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=100_000)
    parser.add_argument("--small", type=int, default=10_000, help="the size the peak RSS is compared with")
    parser.add_argument("--dim", type=int, default=16)
    parser.add_argument("--degree", type=float, default=4.0, help="average degree")
    parser.add_argument("--fanouts", default="5,5")
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--op-free", action="store_true", help="the stock-ops bundle instead of the op one")
    parser.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--bundle", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        print(json.dumps(child(args)))
        return

    fanouts = [int(f) for f in args.fanouts.split(",")]
    with tempfile.TemporaryDirectory(prefix="mgtf-bench-batch-") as tmp:
        bundle = export(pathlib.Path(tmp), fanouts, args.dim, use_op=not args.op_free)
        results = {n: run_child(n, bundle, args) for n in (args.nodes, args.small)}
    print(f"batch inference, embedded graph, in-process {'op-free' if args.op_free else 'op'} bundle: "
          f"fanouts {fanouts}, {args.dim} float32 features, average degree {args.degree}, "
          f"batches of {args.batch_size}")
    for n, r in results.items():
        read, sample, e2e = n / r["read_s"], n / r["sample_s"], n / r["e2e_s"]
        print(f"  {n:>7} nodes: ids + features {read:9.0f} nodes/s | ids + neighbourhoods {sample:7.0f} nodes/s | "
              f"end to end {e2e:7.0f} nodes/s = {e2e / read:.3f}x ids + features, {e2e / sample:.2f}x sampling alone")
        print(f"           peak RSS {r['peak_mb']:.0f} MB (before the end-to-end run {r['rss_before_mb']:.0f} MB; "
              f"graph built in {r['build_s']:.1f} s)")
    big, small = results[args.nodes], results[args.small]
    print(f"  peak RSS {args.nodes} vs {args.small} nodes: {big['peak_mb'] / small['peak_mb']:.2f}x "
          f"(whole process, graph included); growth during the run "
          f"{big['peak_mb'] - big['rss_before_mb']:.0f} MB vs {small['peak_mb'] - small['rss_before_mb']:.0f} MB")
    goal = args.nodes / big["e2e_s"]
    print(f"  goal >= 5000 nodes/s end to end at {args.nodes} nodes: {'met' if goal >= 5000 else 'NOT met'} ({goal:.0f})")


if __name__ == "__main__":
    main()
