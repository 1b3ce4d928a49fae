"""Batch inference benchmark: ``memgraph_tf.batch`` end to end on a synthetic graph.

An embedded graph of ``--nodes`` nodes (``--dim`` float features, ``--degree`` random edges per node
on average, label ``Node``, internal ids) and an untrained GraphSAGE bundle (fanouts ``--fanouts``)
run in-process (the op bundle; ``--op-free`` for the stock-ops one). Each size runs in its own
subprocess, which measures, in this order and in the same run:

* **ids + features**: the same keyset-paged ids, and each batch's features read through
  ``tf_features.pack`` -- reading the ids and features alone (the baseline the ratio is against);
* **ids + neighbourhoods**: the same ids, and each batch's per-node neighbourhood blobs through
  ``tf_features.sample_per_node`` -- sampling alone, no model, no writes (what the pipeline's fetch
  stage does: its floor);
* **end to end**: ``classify_graph`` -- ids, neighbourhoods, the bundle's model (its
  ``serving_default`` signature on the raw blobs), and the three properties written per node,
  pipelined, in one process (``fetch_workers=1``);
* **end to end, forked**: the same with ``fetch_workers=--fetch-workers`` (sampling in that many
  forked processes; the predictions are checked equal to the one-process run's).

It prints nodes/s for each, the ratios end-to-end / baseline and end-to-end / sampling, the CPU
time per node of the end-to-end runs (this process, and the fetch workers: the figure that does not
depend on how busy the machine is), and the peak RSS (``ru_maxrss``) of the process for ``--nodes``
and for ``--small`` nodes (target: within 1.5x), with the growth during the end-to-end runs (peak
minus the RSS just before them) and the largest fetch worker's peak RSS (pages it shares with this
process counted too).

With ``--baseline REV`` every measurement is made twice in the same run, alternating, with the
``memgraph_tf`` package of commit ``REV`` (``git archive`` into a temporary directory, first on
the children's ``PYTHONPATH``: its export, sampling, serving function and pipeline) and with this
checkout's, and the ratios now / baseline are printed.

    .venv/bin/python benchmarks/batch.py                     # 100k and 10k nodes
    .venv/bin/python benchmarks/batch.py --baseline cfc88cd    # the same, against that commit
    .venv/bin/python benchmarks/batch.py --nodes 20000 --small 2000 --fanouts 10
    .venv/bin/python benchmarks/batch.py --fetch-workers 4     # on a machine with 4 free cores
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import resource
import subprocess
import sys
import tarfile
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
NOW = "now"


def materialise(rev: str, dest: pathlib.Path) -> tuple[pathlib.Path, str]:
    """The ``memgraph_tf`` package and the query module of commit ``rev`` extracted under ``dest``
    (git archive): (the
    directory to put first on ``PYTHONPATH``, the commit's short hash)."""
    git = ["git", "-C", str(HERE.parent)]
    proc = subprocess.run(
        [*git, "rev-parse", "--short", f"{rev}^{{commit}}"], capture_output=True, text=True
    )
    if proc.returncode != 0:
        raise SystemExit(f"--baseline: {proc.stderr.strip()}")
    sha = proc.stdout.strip()
    archive = subprocess.run(
        [*git, "archive", "--format=tar", sha, "memgraph_tf", "query_modules"], capture_output=True
    )
    if archive.returncode != 0:
        raise SystemExit(f"--baseline: git archive failed: {archive.stderr.decode().strip()}")
    import io

    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(dest, filter="data")
    return dest, sha


def child_env(package_dir: pathlib.Path | None) -> dict[str, str]:
    """The environment of a child: ``package_dir`` (a baseline's package) first on the path."""
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    if package_dir is not None:
        env["PYTHONPATH"] = os.pathsep.join(
            [str(package_dir)] + [p for p in [os.environ.get("PYTHONPATH")] if p]
        )
    return env


def package_dir() -> str:
    """The directory the ``memgraph_tf`` this process imported lies in."""
    import memgraph_tf

    return str(pathlib.Path(memgraph_tf.__file__).resolve().parent.parent)


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def _peak_mb(who: int = resource.RUSAGE_SELF) -> float:
    return resource.getrusage(who).ru_maxrss / 1024  # KiB on Linux


def _cpu_s(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def build_graph(n: int, dim: int, degree: float, seed: int = 0):
    """An embedded graph of ``n`` :Node nodes with ``dim`` random ``features`` each and about
    ``degree`` random relationships per node (``seed``: the same graph each time)."""
    import numpy as np

    from memgraph_tf.embedded import EmbeddedGraph

    rng = np.random.default_rng(seed)
    features = rng.standard_normal((n, dim)).astype(np.float32).tolist()
    m = int(n * degree / 2)
    src = rng.integers(0, n, size=m).tolist()
    dst = rng.integers(0, n, size=m).tolist()
    return EmbeddedGraph.from_edge_list(
        zip(src, dst), num_nodes=n, label="Node", node_properties={"features": features}
    )


def export(
    directory: pathlib.Path, fanouts: list[int], dim: int, use_op: bool, name: str = "BenchSage"
) -> pathlib.Path:
    """A 4-class GraphSAGE node bundle ``name`` version 1 over the ``features`` property (random
    weights, seed 0) under ``directory``; returns its version directory."""
    import keras

    from memgraph_tf.client import GraphSAGE
    from memgraph_tf.serving import export_bundle

    keras.utils.set_random_seed(0)
    model = GraphSAGE(
        fanouts, dim, 4, hidden_units=16, dropout=0.0, class_names=["a", "b", "c", "d"]
    ).ensure_built()
    info = export_bundle(
        model, directory, name, 1, use_op=use_op, properties=["features"], warmup=False
    )
    return info.path


def child(args: argparse.Namespace) -> dict:
    """One size, in this process: the three measurements and the RSS figures, as a dict."""
    from memgraph_tf.batch import BatchClassifier, BundleBackend
    from memgraph_tf.client import EmbeddedSource

    t0 = time.perf_counter()
    source = EmbeddedSource(build_graph(args.child, args.dim, args.degree))
    build_s = time.perf_counter() - t0
    model = BundleBackend(args.bundle)
    cfg = model.config
    fanouts, props, opts = list(cfg.fanouts), list(cfg.properties), {**cfg.options, "seed": 0}

    def paged(run: BatchClassifier):  # the ids the classify run would page through
        after = None
        while True:
            ids = run._table.page(after, args.batch_size, True)
            if not ids:
                return
            yield ids
            after = ids[-1]

    probe = BatchClassifier(
        source, model, batch_size=args.batch_size, write_property="probe", progress=False
    )
    model.classify(
        source.sample_blobs_per_node([0, 1], fanouts, props, opts)
    )  # trace the signature once

    t0 = time.perf_counter()
    count = sum(len(source.pack_blob(ids, props)) and len(ids) for ids in paged(probe))
    read_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    sampled = sum(
        len(source.sample_blobs_per_node(ids, fanouts, props, opts)) for ids in paged(probe)
    )
    sample_s = time.perf_counter() - t0

    rss_before = _rss_mb()
    runs = {}
    for workers, prop in ((1, "predicted_class"), (args.fetch_workers, "forked")):
        cpu0, children0 = _cpu_s(resource.RUSAGE_SELF), _cpu_s(resource.RUSAGE_CHILDREN)
        summary = BatchClassifier(
            source,
            model,
            batch_size=args.batch_size,
            write_property=prop,
            fetch_workers=workers,
            progress=False,
        ).run()
        assert summary.classified == count == sampled == args.child, (summary, count, sampled)
        runs[workers] = {
            "e2e_s": summary.elapsed_s,
            "cpu_s": _cpu_s(resource.RUSAGE_SELF) - cpu0,
            "workers_cpu_s": _cpu_s(resource.RUSAGE_CHILDREN) - children0,
        }
    graph = source.graph
    differ = sum(
        graph.get_property(i, "predicted_class") != graph.get_property(i, "forked")
        or graph.get_property(i, "predicted_class_score") != graph.get_property(i, "forked_score")
        for i in range(args.child)
    )
    assert differ == 0, (
        f"{differ} nodes got other predictions with {args.fetch_workers} fetch workers"
    )
    return {
        "package": package_dir(),
        "nodes": args.child,
        "build_s": build_s,
        "read_s": read_s,
        "sample_s": sample_s,
        "runs": runs,
        "workers": args.fetch_workers,
        "rss_before_mb": rss_before,
        "peak_mb": _peak_mb(),
        "worker_peak_mb": _peak_mb(resource.RUSAGE_CHILDREN),
    }


def cora_child() -> dict:
    """Cora (2,708 nodes, 1,433 bag-of-words features) as the demo classifies it: an op-free
    GraphSAGE bundle (fanouts (10, 10), 128 units, the sparse layout the demo picks for Cora)
    in-process, ``memgraph_tf.batch`` end to end in one process, against reading the ids and
    features alone and sampling alone, in this run; CPU seconds per node of each stage."""
    import keras

    from memgraph_tf import datasets
    from memgraph_tf.batch import BatchClassifier, BundleBackend
    from memgraph_tf.client import EmbeddedSource, GraphSAGE
    from memgraph_tf.serving import export_bundle

    data = datasets.load_dataset("cora")
    source = EmbeddedSource(datasets.planetoid_graph(data))
    keras.utils.set_random_seed(0)
    model = GraphSAGE(
        [10, 10],
        data.features.shape[1],
        len(data.class_names),
        hidden_units=128,
        dropout=0.0,
        class_names=list(data.class_names),
    ).ensure_built()
    with tempfile.TemporaryDirectory(prefix="mgtf-bench-cora-") as tmp:
        info = export_bundle(
            model,
            pathlib.Path(tmp),
            "CoraSage",
            1,
            use_op=False,
            layout="sparse",
            properties=["features"],
            warmup=False,
        )
        backend = BundleBackend(info.path)
        cfg = backend.config
        fanouts, props, opts = list(cfg.fanouts), list(cfg.properties), {**cfg.options, "seed": 0}
        ids = list(range(data.num_nodes))
        backend.classify(source.sample_blobs_per_node(ids[:2], fanouts, props, opts))
        t0 = time.perf_counter()
        for lo in range(0, len(ids), 1024):
            source.pack_blob(ids[lo : lo + 1024], props)
        read_s = time.perf_counter() - t0
        t0, c0 = time.perf_counter(), time.thread_time()
        blobs = []
        for lo in range(0, len(ids), 1024):
            blobs += source.sample_blobs_per_node(ids[lo : lo + 1024], fanouts, props, opts)
        sample_s, sample_cpu_s = time.perf_counter() - t0, time.thread_time() - c0
        t0, c0 = time.perf_counter(), time.process_time()
        for lo in range(0, len(ids), 1024):
            backend.classify(blobs[lo : lo + 1024])
        model_s, model_cpu_s = time.perf_counter() - t0, time.process_time() - c0
        cpu0 = _cpu_s(resource.RUSAGE_SELF)
        summary = BatchClassifier(
            source, backend, overwrite=True, progress=False, fetch_workers=1
        ).run()
        assert summary.classified == len(ids), summary
        e2e_cpu_s = _cpu_s(resource.RUSAGE_SELF) - cpu0
        forked = BatchClassifier(
            source, backend, write_property="forked", progress=False, fetch_workers=2
        ).run()
        assert forked.classified == len(ids), forked
        graph = source.graph
        assert all(
            graph.get_property(i, "predicted_class") == graph.get_property(i, "forked") for i in ids
        ), "the forked run predicted other classes"
        return {
            "package": package_dir(),
            "nodes": len(ids),
            "read_s": read_s,
            "sample_s": sample_s,
            "sample_cpu_s": sample_cpu_s,
            "model_s": model_s,
            "model_cpu_s": model_cpu_s,
            "e2e_s": summary.elapsed_s,
            "e2e_cpu_s": e2e_cpu_s,
            "forked_s": forked.elapsed_s,
        }


def print_cora(r: dict, label: str = NOW) -> None:
    n = r["nodes"]
    e2e = n / r["e2e_s"]
    print(
        f"Cora ({n} nodes, op-free bundle, fanouts (10, 10), sparse layout, batches of 1024), "
        f"one process, {label}:"
    )
    print(
        f"  end to end {e2e:7.0f} nodes/s (goal 2,000: {'met' if e2e >= 2000 else 'NOT met'}) = "
        f"{e2e * r['read_s'] / n:.3f}x ids + features ({n / r['read_s']:.0f} nodes/s), "
        f"{e2e * r['sample_s'] / n:.2f}x sampling alone ({n / r['sample_s']:.0f} nodes/s); CPU "
        f"per node: sampling {r['sample_cpu_s'] / n * 1e6:.0f} us (this thread), model "
        f"{r['model_cpu_s'] / n * 1e6:.0f} us (all threads, {n / r['model_s']:.0f} nodes/s "
        f"alone), end to end {r['e2e_cpu_s'] / n * 1e6:.0f} us"
    )
    forked = n / r["forked_s"]
    print(
        f"  end to end with 2 forked fetch workers {forked:7.0f} nodes/s (goal 2,000: "
        f"{'met' if forked >= 2000 else 'NOT met'}), same classes"
    )


def run_self(what: str, flags: list[str], env: dict[str, str]) -> str:
    """This script run again in a subprocess with ``flags`` and ``env``; its standard output
    (exits naming ``what`` with the end of its standard error when it fails)."""
    command = [sys.executable, str(pathlib.Path(__file__).resolve()), *flags]
    out = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    if out.returncode != 0:
        raise SystemExit(f"{what} failed:\n{out.stderr[-4000:]}")
    return out.stdout


def run_export(directory: pathlib.Path, args: argparse.Namespace, env: dict[str, str]) -> None:
    """The benchmark's bundle exported under ``directory`` in a subprocess with ``env`` (so a
    baseline exports with its own code)."""
    flags = ["--export-child", str(directory), "--fanouts", args.fanouts, "--dim", str(args.dim)]
    run_self("the export", flags + (["--op-free"] if args.op_free else []), env)


def run_child(
    n: int | None,
    bundle: pathlib.Path | None,
    args: argparse.Namespace,
    env: dict[str, str] | None = None,
    expect: str | None = None,
) -> dict:
    """One size in a subprocess (``n`` None: the Cora run) with ``env``; its result dict (the run
    checked to have imported ``memgraph_tf`` from ``expect`` when given)."""
    env = env or child_env(None)
    if n is None:
        stdout = run_self("the Cora run", ["--cora-child"], env)
    else:
        flags = {
            "--child": n,
            "--bundle": bundle,
            "--dim": args.dim,
            "--degree": args.degree,
            "--batch-size": args.batch_size,
            "--fetch-workers": args.fetch_workers,
        }
        stdout = run_self(
            f"the {n}-node run", [str(x) for item in flags.items() for x in item], env
        )
    return _checked(json.loads(stdout.strip().splitlines()[-1]), expect)


def _checked(result: dict, expect: str | None) -> dict:
    if expect is not None and result["package"] != expect:
        raise SystemExit(
            f"a child imported memgraph_tf from {result['package']}, expected {expect}"
        )
    return result


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--nodes", type=int, default=100_000)
    parser.add_argument(
        "--small", type=int, default=10_000, help="the size the peak RSS is compared with"
    )
    parser.add_argument("--dim", type=int, default=16)
    parser.add_argument("--degree", type=float, default=4.0, help="average degree")
    parser.add_argument("--fanouts", default="5,5")
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument(
        "--fetch-workers",
        type=int,
        default=2,
        help="forked sampling processes of the second end-to-end run (default 2)",
    )
    parser.add_argument(
        "--op-free", action="store_true", help="the stock-ops bundle instead of the op one"
    )
    parser.add_argument(
        "--cora", choices=("yes", "no", "only"), default="yes", help="the Cora run (default yes)"
    )
    parser.add_argument(
        "--baseline",
        default=None,
        metavar="REV",
        help="measure the package of commit REV too, alternating, in the same run",
    )
    parser.add_argument("--cora-child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--bundle", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--export-child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.fetch_workers < 2:
        parser.error(
            f"--fetch-workers: expected 2 or more (the one-process run is always measured), "
            f"got {args.fetch_workers}"
        )
    if args.export_child:
        fanouts = [int(f) for f in args.fanouts.split(",")]
        export(pathlib.Path(args.export_child), fanouts, args.dim, use_op=not args.op_free)
        return
    if args.cora_child:
        print(json.dumps(cora_child()))
        return
    if args.child is not None:
        print(json.dumps(child(args)))
        return
    load_before = " ".join(f"{x:.2f}" for x in os.getloadavg())
    with tempfile.TemporaryDirectory(prefix="mgtf-bench-batch-") as tmp:
        labels = [NOW]
        envs = {NOW: child_env(None)}
        packages = {NOW: package_dir()}
        if args.baseline:
            where, sha = materialise(args.baseline, pathlib.Path(tmp) / "baseline")
            label = f"baseline {sha}"
            labels = [label, NOW]  # alternating, the baseline first
            envs[label] = child_env(where)
            packages[label] = str(where.resolve())
        results: dict[str, dict] = {label: {} for label in labels}
        if args.cora != "only":
            sizes = (args.nodes, args.small)
            for label in labels:
                directory = pathlib.Path(tmp) / f"bundle-{labels.index(label)}"
                run_export(directory, args, envs[label])
                results[label]["bundle"] = directory / "BenchSage" / "1"
            for n in sizes:
                for label in labels:
                    results[label][n] = run_child(
                        n, results[label]["bundle"], args, envs[label], packages[label]
                    )
        if args.cora != "no":
            for label in labels:
                results[label]["cora"] = run_child(None, None, args, envs[label], packages[label])
    load_after = " ".join(f"{x:.2f}" for x in os.getloadavg())
    if args.cora != "only":
        for label in labels:
            print_sizes(results[label], args, label)
    if args.cora != "no":
        for label in labels:
            print_cora(results[label]["cora"], label)
    if len(labels) == 2:
        print_ratios(results[labels[0]], results[NOW], labels[0], args)
    print(f"  load average before / after: {load_before} / {load_after} ({os.cpu_count()} CPUs)")
    if args.cora != "only":
        big = results[NOW][args.nodes]
        one = args.nodes / big["runs"]["1"]["e2e_s"]
        best = max(args.nodes / big["runs"][str(w)]["e2e_s"] for w in (1, args.fetch_workers))
        print(
            f"  goal >= 5000 nodes/s end to end at {args.nodes} nodes: "
            f"{'met' if best >= 5000 else 'NOT met'} ({best:.0f}, the faster of 1 process and "
            f"{args.fetch_workers} fetch workers; 1 process: {one:.0f})"
        )


def print_sizes(results: dict, args: argparse.Namespace, label: str) -> None:
    """The synthetic graph's figures of one package."""
    fanouts = [int(f) for f in args.fanouts.split(",")]
    print(
        f"batch inference, embedded graph, in-process {'op-free' if args.op_free else 'op'} "
        f"bundle, {label}: fanouts {fanouts}, {args.dim} float32 features, average degree "
        f"{args.degree}, batches of {args.batch_size}"
    )
    k = args.fetch_workers
    for n in (args.nodes, args.small):
        r = results[n]
        read, sample = n / r["read_s"], n / r["sample_s"]
        one, forked = (r["runs"][str(w)] for w in (1, k))
        print(
            f"  {n:>7} nodes: ids + features {read:9.0f} nodes/s | ids + neighbourhoods "
            f"{sample:7.0f} nodes/s"
        )
        for name, run in (("1 process", one), (f"{k} fetch workers", forked)):
            e2e = n / run["e2e_s"]
            print(
                f"           end to end, {name}: {e2e:7.0f} nodes/s = {e2e / read:.3f}x ids + "
                f"features, {e2e / sample:.2f}x sampling alone; CPU "
                f"{run['cpu_s'] / n * 1e6:.0f} us/node in this process + "
                f"{run['workers_cpu_s'] / n * 1e6:.0f} us/node in fetch workers"
            )
        print(
            f"           {k} fetch workers vs 1 process: {one['e2e_s'] / forked['e2e_s']:.2f}x "
            "nodes/s, same predictions"
        )
        print(
            f"           peak RSS {r['peak_mb']:.0f} MB (before the end-to-end runs "
            f"{r['rss_before_mb']:.0f} MB; graph built in {r['build_s']:.1f} s); largest fetch "
            f"worker {r['worker_peak_mb']:.0f} MB"
        )
    big, small = results[args.nodes], results[args.small]
    print(
        f"  peak RSS {args.nodes} vs {args.small} nodes: {big['peak_mb'] / small['peak_mb']:.2f}x "
        f"(whole process, graph included); growth during the runs "
        f"{big['peak_mb'] - big['rss_before_mb']:.0f} MB vs "
        f"{small['peak_mb'] - small['rss_before_mb']:.0f} MB; "
        f"largest fetch worker {big['worker_peak_mb'] / small['worker_peak_mb']:.2f}x"
    )


def print_ratios(base: dict, now: dict, label: str, args: argparse.Namespace) -> None:
    """now / baseline for each end-to-end figure and each stage (nodes/s; CPU per node)."""
    print(
        f"now / {label} (same run; nodes/s ratio, > 1 is faster; CPU per node ratio, < 1 is less):"
    )
    k = args.fetch_workers
    for n in (args.nodes, args.small):
        if n not in now:
            continue
        b, c = base[n], now[n]
        parts = [f"sampling alone {b['sample_s'] / c['sample_s']:.2f}x"]
        for w, name in ((1, "1 process"), (k, f"{k} fetch workers")):
            rb, rc = b["runs"][str(w)], c["runs"][str(w)]
            parts.append(
                f"end to end, {name}: {rb['e2e_s'] / rc['e2e_s']:.2f}x (CPU per node "
                f"{(rc['cpu_s'] + rc['workers_cpu_s']) / (rb['cpu_s'] + rb['workers_cpu_s']):.2f}x)"
            )
        print(f"  {n:>7} nodes: " + "; ".join(parts))
    if "cora" in now:
        b, c = base["cora"], now["cora"]
        print(
            f"  Cora: end to end, 1 process {b['e2e_s'] / c['e2e_s']:.2f}x (CPU per node "
            f"{c['e2e_cpu_s'] / b['e2e_cpu_s']:.2f}x); {k} fetch workers "
            f"{b['forked_s'] / c['forked_s']:.2f}x; sampling alone "
            f"{b['sample_s'] / c['sample_s']:.2f}x (CPU "
            f"{c['sample_cpu_s'] / b['sample_cpu_s']:.2f}x)"
            f"; the model alone {b['model_s'] / c['model_s']:.2f}x (CPU "
            f"{c['model_cpu_s'] / b['model_cpu_s']:.2f}x)"
        )


if __name__ == "__main__":
    main()
