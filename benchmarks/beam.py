"""Beam benchmark: ``memgraph_tf.beam``'s ClassifyNodes on Beam's DirectRunner against the batch
module's ``classify_graph`` (``memgraph-tf classify``), in one run, on the same graph and bundle.

**Bolt** (the shape of a real deployment: one database, workers in their own processes): a random
graph of ``--nodes`` nodes (``--dim`` float features, ``--degree`` edges per node on average) is
written to a real Bolt server (ArcadeDB from PyPI, in its own process; the client-side fallback
samples, as for any Bolt server without the query modules), and an untrained GraphSAGE bundle
(``--fanouts``; op-free, ``--op`` for the op bundle) classifies every node:

* **batch**: ``classify_graph`` in this process (bundle loaded before the clock starts);
* **beam W**: ClassifyNodes on the DirectRunner in ``multi_processing`` mode with W worker
  processes (``--workers``, default 1 and 2), each run writing its own property. ``whole run`` is
  the wall time of ``classify_with_beam`` (worker start-up, imports and model loading included);
  ``steady`` subtracts the wall time of the same pipeline over one node (the fixed cost).
  Both bundles are warmed up on two nodes before the batch run's clock starts.

**Dask** (``--runners direct,dask`` or ``dask``): the same graph and baseline, ClassifyNodes on
Beam's DaskRunner over a real ``dask.distributed`` cluster started here on 127.0.0.1 (a scheduler
and W worker processes, one thread each, ``--dask-workers``, default 1 and 2; the credentials in
the workers' environment). Each cluster runs the job twice: ``whole run`` is the first (the
workers import TensorFlow and load the bundle), ``steady`` the second, on warm workers, writing
another property. The load average (1 min) is printed beside each run: on a shared machine it
says how many cores the run really had.

**Embedded** (``--embedded``; no database, workers are threads of this process): the same graph in
the in-process runtime, batch against Beam ``in_memory`` (1 worker) and ``multi_threading``
(2 workers); the model is loaded and warm before every clock starts, so these are steady rates.

Every Beam run's predicted classes are compared with the batch run's (they must be equal: sampling
is keyed by node). The database, the workers and this process share the machine's cores: on 2
cores, expect the cores, not Beam, to bound the speed-up.

    .venv/bin/python benchmarks/beam.py --runners dask     # Beam's DaskRunner, 1 vs 2 workers
    .venv/bin/python benchmarks/beam.py                    # 2,000 nodes over Bolt (.venv:
    scripts/bootstrap.sh) .venv/bin/python benchmarks/beam.py --nodes 5000 --workers 1,2,4
    --embedded
"""

from __future__ import annotations

import argparse
import logging
import os
import pathlib
import sys
import tempfile
import time

LABEL = "BenchNode"
OPTIONS = {"id_property": "id", "label": LABEL, "seed": 0}
QUIET = ["--default_sdk_harness_log_level=WARNING"]


def graph_rows(n: int, dim: int, degree: float, seed: int = 0):
    import numpy as np

    rng = np.random.default_rng(seed)
    features = rng.standard_normal((n, dim)).astype(np.float32)
    nodes = [{"id": i, "features": features[i].tolist()} for i in range(n)]
    m = int(n * degree / 2)
    edges = [
        (int(a), int(b))
        for a, b in zip(rng.integers(0, n, size=m), rng.integers(0, n, size=m))
        if a != b
    ]
    return nodes, edges


def export(directory: pathlib.Path, fanouts: list[int], dim: int, use_op: bool) -> pathlib.Path:
    import keras

    from memgraph_tf.client import GraphSAGE
    from memgraph_tf.serving import export_bundle

    keras.utils.set_random_seed(0)
    model = GraphSAGE(
        fanouts, dim, 4, hidden_units=16, dropout=0.0, class_names=["a", "b", "c", "d"]
    ).ensure_built()
    export_bundle(
        model,
        directory,
        "BeamBench",
        1,
        use_op=use_op,
        properties=["features"],
        sample_options=OPTIONS,
        warmup=False,
    )
    return directory / "BeamBench"


def classes_bolt(source, prop: str) -> dict[int, str]:
    rows = source.read(
        f"MATCH (n:{LABEL}) WHERE n.`{prop}` IS NOT NULL RETURN n.id AS id, n.`{prop}` AS c"
    )
    return {r["id"]: r["c"] for r in rows}


def classes_embedded(source, prop: str) -> dict[int, str]:
    graph = source.graph
    return {
        graph.get_property(i, "id"): graph.get_property(i, prop)
        for i in graph.nodes(LABEL)
        if graph.get_property(i, prop) is not None
    }


def report(rows: list[tuple[str, int, float, float | None, int]], baseline: float) -> None:
    print(
        f"  {'run':<34} {'nodes':>6} {'whole run':>16} {'steady':>16} {'vs batch':>9} {'differ':>6}"
    )
    for name, nodes, whole, steady, differ in rows:
        rate = nodes / whole
        steady_text = f"{nodes / steady:8.0f} nodes/s" if steady else " " * 16
        ratio = (nodes / steady if steady else rate) / baseline
        print(
            f"  {name:<34} {nodes:>6} {rate:8.0f} nodes/s {steady_text} {ratio:8.2f}x {differ:>6}"
        )


def bolt_section(args, bundle: pathlib.Path) -> None:
    from memgraph_tf.batch import BundleBackend, classify_graph
    from memgraph_tf.beam import GraphSpec, ModelSpec, classify_with_beam
    from memgraph_tf.client import connect
    from memgraph_tf.testing.arcadedb import ArcadeDBServerProcess

    nodes, edges = graph_rows(args.nodes, args.dim, args.degree)
    with ArcadeDBServerProcess(heap_size="1g") as server:
        os.environ.update(
            MEMGRAPH_TF_USER=server.user,
            MEMGRAPH_TF_PASSWORD=server.password,
            MEMGRAPH_TF_DATABASE=server.database,
        )  # what the worker processes log in with
        source = connect(server.uri)
        t0 = time.perf_counter()
        for start in range(0, len(nodes), 1000):
            source.write(
                f"UNWIND $rows AS r CREATE (:{LABEL} {{id: r.id, features: r.features}})",
                {"rows": nodes[start : start + 1000]},
            )
        try:
            source.write(f"CREATE INDEX ON :{LABEL}(id)")
        except Exception:  # noqa: BLE001 -- ArcadeDB's own syntax differs; only slower without it
            logging.getLogger(__name__).info("no index on :%s(id)", LABEL)
        for start in range(0, len(edges), 2000):
            source.write(
                f"UNWIND $pairs AS p MATCH (a:{LABEL} {{id: p[0]}}), (b:{LABEL} {{id: p[1]}}) "
                f"CREATE (a)-[:LINK]->(b)",
                {"pairs": [list(e) for e in edges[start : start + 2000]]},
            )
        print(
            f"Bolt (ArcadeDB {server.uri}, client-side fallback): {args.nodes} nodes, {len(edges)} "
            "edges "
            f"loaded in {time.perf_counter() - t0:.1f} s; batch size {args.batch_size}"
        )
        cfg = ModelSpec.resolve(bundle=bundle).config
        sample = source.sample_blobs_per_node(
            list(range(min(100, args.nodes))), list(cfg.fanouts), list(cfg.properties), OPTIONS
        )
        per_node = sum(len(b) for b in sample) / len(sample)
        print(f"  blob per node: {per_node:.0f} bytes ({per_node * 4 / 3:.0f} as base64 text)")
        with BundleBackend(bundle) as backend:
            classify_graph(
                source, backend, node_ids=[0, 1], write_property="bench_warmup", progress=False
            )
            batch = classify_graph(
                source,
                backend,
                batch_size=args.batch_size,
                write_property="bench_batch",
                progress=False,
            )
        want = classes_bolt(source, "bench_batch")
        assert len(want) == args.nodes, len(want)
        rows = [("batch (classify_graph, 1 process)", batch.classified, batch.elapsed_s, None, 0)]
        print(f"  (batch: load average {os.getloadavg()[0]:.1f})")
        spec, model = GraphSpec(server.uri), ModelSpec.resolve(bundle=bundle)
        if "dask" in args.runners:
            rows += dask_rows(args, server, source, spec, model, want)
        for workers in args.workers if "direct" in args.runners else []:
            common = dict(
                runner="DirectRunner",
                num_workers=workers,
                running_mode="multi_processing",
                batch_size=args.batch_size,
                num_ranges=max(8, 4 * workers),
                pipeline_args=QUIET,
            )
            fixed = classify_with_beam(
                spec,
                model,
                where="n.id < $k",
                where_params={"k": 1},
                write_property=f"bench_fixed{workers}",
                **common,
            )
            full = classify_with_beam(spec, model, write_property=f"bench_beam{workers}", **common)
            got = classes_bolt(source, f"bench_beam{workers}")
            differ = sum(got.get(k) != v for k, v in want.items()) + len(set(got) - set(want))
            rows.append(
                (
                    f"beam multi_processing, {workers} worker(s)",
                    full.written,
                    full.elapsed_s,
                    max(full.elapsed_s - fixed.elapsed_s, 1e-9),
                    differ,
                )
            )
            print(
                f"  (beam {workers}: fixed cost {fixed.elapsed_s:.1f} s for {fixed.written} node)"
            )
        report(rows, batch.classified / batch.elapsed_s)
        source.close()


def dask_rows(args, server, source, spec, model, want) -> list:
    """ClassifyNodes on Beam's DaskRunner with each of ``args.dask_workers`` worker processes:
    a whole (cold) run and a steady (warm) one per cluster; rows for :func:`report`."""
    from distributed import LocalCluster

    from memgraph_tf.beam import classify_with_beam

    rows = []
    env = {
        "MEMGRAPH_TF_USER": server.user,
        "MEMGRAPH_TF_PASSWORD": server.password,
        "MEMGRAPH_TF_DATABASE": server.database,
        "TF_CPP_MIN_LOG_LEVEL": "2",
    }
    for workers in args.dask_workers:
        with LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address=None,
            env=env,
        ) as cluster:
            runs = []
            for phase in ("cold", "warm"):
                prop = f"bench_dask{workers}_{phase}"
                summary = classify_with_beam(
                    spec,
                    model,
                    runner="DaskRunner",
                    dask_address=cluster.scheduler_address,
                    batch_size=args.batch_size,
                    num_ranges=max(8, 4 * workers),
                    write_property=prop,
                )
                got = classes_bolt(source, prop)
                differ = sum(got.get(k) != v for k, v in want.items()) + len(set(got) - set(want))
                runs.append((summary, differ))
                print(
                    f"  (dask {workers} worker(s), {phase}: {summary.elapsed_s:.1f} s, "
                    f"{summary.written} written, {differ} differ from batch, load average "
                    f"{os.getloadavg()[0]:.1f})"
                )
        (cold, differ_cold), (warm, differ_warm) = runs
        rows.append(
            (
                f"beam DaskRunner, {workers} worker(s)",
                cold.written,
                cold.elapsed_s,
                warm.elapsed_s,
                max(differ_cold, differ_warm),
            )
        )
    if len(rows) > 1:
        first, last = rows[0], rows[-1]
        print(
            f"  (dask wall time, {last[0].split(', ')[-1]} vs {first[0].split(', ')[-1]}: whole "
            f"run {last[2] / first[2]:.2f}x, steady {last[3] / first[3]:.2f}x)"
        )
    return rows


def embedded_section(args, bundle: pathlib.Path) -> None:
    from memgraph_tf.batch import BundleBackend, classify_graph
    from memgraph_tf.beam import ModelSpec, classify_with_beam, register_graph
    from memgraph_tf.client import EmbeddedSource
    from memgraph_tf.embedded import EmbeddedGraph

    nodes, edges = graph_rows(args.nodes, args.dim, args.degree)

    def fresh() -> EmbeddedSource:
        graph = EmbeddedGraph()
        for props in nodes:
            graph.add_node([LABEL], props)
        for a, b in edges:
            graph.add_edge(a, b, "LINK")
        return EmbeddedSource(graph)

    print(f"Embedded (in-process runtime, workers are threads): {args.nodes} nodes")
    source = fresh()
    with BundleBackend(bundle) as backend:
        classify_graph(source, backend, node_ids=[0, 1], write_property="warmup", progress=False)
        batch = classify_graph(
            source, backend, batch_size=args.batch_size, write_property="p", progress=False
        )
    want = classes_embedded(source, "p")
    rows = [("batch (classify_graph)", batch.classified, batch.elapsed_s, None, 0)]
    model = ModelSpec.resolve(bundle=bundle)
    [blob] = source.sample_blobs_per_node(
        [0], model.config.fanouts, model.config.properties, OPTIONS
    )
    model.open(shared=True).classify(
        [blob]
    )  # the workers' shared bundle, loaded and warm before the clock
    for workers, mode in ((1, "in_memory"), (2, "multi_threading")):
        source = fresh()
        spec = register_graph(source)
        full = classify_with_beam(
            spec,
            model,
            num_workers=workers,
            running_mode=mode,
            batch_size=args.batch_size,
            num_ranges=8,
            write_property="p",
            pipeline_args=QUIET,
        )
        got = classes_embedded(source, "p")
        rows.append(
            (
                f"beam {mode}, {workers} worker(s)",
                full.written,
                full.elapsed_s,
                None,
                sum(got.get(k) != v for k, v in want.items()),
            )
        )
    report(rows, batch.classified / batch.elapsed_s)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=2000)
    parser.add_argument("--dim", type=int, default=32)
    parser.add_argument("--degree", type=float, default=6.0)
    parser.add_argument("--fanouts", default="5,5")
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument(
        "--workers", default="1,2", help="Beam worker processes to try, comma-separated"
    )
    parser.add_argument(
        "--runners",
        default="direct",
        help="Bolt section: direct (DirectRunner, multi_processing), dask (Beam's DaskRunner on "
        "a local dask.distributed cluster), or both, comma-separated",
    )
    parser.add_argument(
        "--dask-workers", default="1,2", help="Dask worker processes to try, comma-separated"
    )
    parser.add_argument("--op", action="store_true", help="the op bundle (default: op-free)")
    parser.add_argument("--embedded", action="store_true", help="also the in-process comparison")
    parser.add_argument("--no-bolt", action="store_true", help="skip the Bolt section")
    args = parser.parse_args(argv)
    args.workers = [int(w) for w in args.workers.split(",")]
    args.dask_workers = [int(w) for w in args.dask_workers.split(",")]
    args.runners = args.runners.split(",")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    logging.basicConfig(level=logging.WARNING)
    fanouts = [int(f) for f in args.fanouts.split(",")]
    print(
        f"memgraph_tf.beam benchmark: fanouts {fanouts}, dim {args.dim}, "
        f"{'op' if args.op else 'op-free'} "
        f"bundle, {os.cpu_count()} cores (python {sys.version.split()[0]}), load average "
        f"{' / '.join(f'{x:.1f}' for x in os.getloadavg())} (1/5/15 min)"
    )
    with tempfile.TemporaryDirectory() as tmp:
        bundle = export(pathlib.Path(tmp), fanouts, args.dim, args.op)
        if not args.no_bolt:
            bolt_section(args, bundle)
        if args.embedded:
            embedded_section(args, bundle)
    return 0


if __name__ == "__main__":
    sys.exit(main())
