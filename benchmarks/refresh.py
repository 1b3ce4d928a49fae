"""Refresh benchmark: ``memgraph-tf refresh`` (``memgraph_tf.batch.refresh``) after random
relationship changes on a synthetic graph, against a full re-score measured in the same run.

An embedded graph of ``--nodes`` nodes (``--dim`` float features, ``--degree`` random edges per
node on average, label ``Node``, internal ids) and an untrained GraphSAGE op bundle (fanouts
``--fanouts``, sampling ``direction`` both). In one process, in this order:

1. **full score**: ``classify_graph`` over every node (the baseline);
2. ``--inserts`` random relationship insertions and ``--deletes`` deletions, recorded in the
   change log by the application (``ChangeLog.record``, as on a server without triggers);
3. **refresh**: one ``Refresher.once()`` pass -- the affected set (its size, and its ratio to the
   graph), the time of the walk and of the re-scoring; the **lag**: from the moment the last
   change was logged to the moment the pass's last prediction was written;
4. **full re-score**: ``classify_graph(overwrite=True)`` of the changed graph; every node's
   prediction after the refresh is compared with it, node for node (class equal; score difference);
5. **follow**: ``Refresher.follow`` in a thread with ``--poll-interval-s``, and ``--follow-changes``
   single insertions, one at a time: the lag from each change's log write to its pass's end.

    .venv/bin/python benchmarks/refresh.py                 # 100k nodes, 100 inserts, 10 deletes
    .venv/bin/python benchmarks/refresh.py --nodes 10000 --fanouts 10,10
"""

from __future__ import annotations

import argparse
import pathlib
import random
import statistics
import sys
import tempfile
import threading
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from batch import build_graph, export  # noqa: E402 -- beside this file: importable once HERE is on sys.path


def predictions(graph) -> dict[int, tuple]:
    return {
        i: (
            graph.get_property(i, "predicted_class"),
            graph.get_property(i, "predicted_class_score"),
        )
        for i in graph.nodes("Node")
    }


def change(source, rng: random.Random, inserts: int, deletes: int) -> list:
    """The random changes, applied and logged; returns them."""
    from memgraph_tf.client.change_log import Change, ChangeLog

    graph = source.graph
    n = len(graph.nodes("Node"))  # ids 0..n-1; the change log's own nodes come after them
    changes = []
    with source.lock:
        existing = graph.edge_count  # no edge deleted yet: ids 0..existing-1, in edges() order
        edges = graph.edges()
        for eid in rng.sample(range(existing), deletes):
            a, b, _ = edges[eid]
            graph.delete_edge(eid)
            changes.append(
                Change("deleted", "relationship", eid, rel_type="EDGE", start_id=a, end_id=b)
            )
        for _ in range(inserts):
            a, b = rng.randrange(n), rng.randrange(n)
            eid = graph.add_edge(a, b, "EDGE")
            changes.append(
                Change("created", "relationship", eid, rel_type="EDGE", start_id=a, end_id=b)
            )
    ChangeLog(source).record(changes)
    return changes


def follow_lags(source, model, args: argparse.Namespace, rng: random.Random) -> list[float]:
    from memgraph_tf.batch.refresh import Refresher

    refresher = Refresher(source, model, label="Node", batch_size=args.batch_size)
    passes: list[float] = []
    done = threading.Event()

    def on_pass(_summary) -> None:
        passes.append(time.perf_counter())
        done.set()

    thread = threading.Thread(target=refresher.follow, args=(args.poll_interval_s, on_pass))
    thread.start()
    lags = []
    try:
        for _ in range(args.follow_changes):
            done.clear()
            change(source, rng, 1, 0)
            logged = time.perf_counter()
            if not done.wait(60):
                raise RuntimeError("follow: no pass within 60 s of a change")
            lags.append(passes[-1] - logged)
            time.sleep(rng.random() * args.poll_interval_s)  # changes at any point of the poll
    finally:
        refresher.stop()
        thread.join()
    return lags


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--nodes", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=16)
    parser.add_argument("--degree", type=float, default=4.0, help="average degree")
    parser.add_argument("--fanouts", default="5,5")
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--inserts", type=int, default=100)
    parser.add_argument("--deletes", type=int, default=10)
    parser.add_argument("--poll-interval-s", type=float, default=0.5)
    parser.add_argument("--follow-changes", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    import os

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    from memgraph_tf.batch import BundleBackend, classify_graph
    from memgraph_tf.batch.refresh import Refresher
    from memgraph_tf.client import EmbeddedSource

    fanouts = [int(f) for f in args.fanouts.split(",")]
    rng = random.Random(args.seed)
    t = time.perf_counter()
    source = EmbeddedSource(build_graph(args.nodes, args.dim, args.degree))
    print(f"graph: {args.nodes:,} nodes, {source.graph.edge_count:,} edges "
          f"({time.perf_counter() - t:.1f} s)")  # fmt: skip
    with (
        tempfile.TemporaryDirectory() as tmp,
        BundleBackend(export(pathlib.Path(tmp), fanouts, args.dim, True, "RefreshSage")) as model,
    ):
        full = classify_graph(
            source, model, label="Node", batch_size=args.batch_size, progress=False
        )
        print(f"full score: {full.classified:,} nodes in {full.elapsed_s:.1f} s")
        before = predictions(source.graph)
        change(source, rng, args.inserts, args.deletes)
        logged = time.perf_counter()
        refresher = Refresher(source, model, label="Node", batch_size=args.batch_size)
        summary = refresher.once()
        lag = time.perf_counter() - logged
        refreshed = predictions(source.graph)
        rescore = classify_graph(
            source, model, label="Node", batch_size=args.batch_size, overwrite=True, progress=False
        )
        truth = predictions(source.graph)
        ids = sorted(truth)
        mismatched = sum(refreshed[i][0] != truth[i][0] for i in ids)
        diff = max(abs(refreshed[i][1] - truth[i][1]) for i in ids)
        moved = sum(before[i] != truth[i] for i in ids)
        print(summary.text())
        print(
            f"affected set: {summary.affected:,} of {summary.graph_nodes:,} nodes "
            f"({summary.ratio:.2%}); re-scored {summary.classified:,}; predictions the changes "
            f"actually moved: {moved:,}"
        )
        print(
            f"refresh pass {summary.elapsed_s:.2f} s vs full re-score {rescore.elapsed_s:.1f} s "
            f"({summary.elapsed_s / rescore.elapsed_s:.3f}x); lag from the last change logged "
            f"to its fresh prediction written: {lag:.2f} s"
        )
        print(
            f"equal to the full re-score node for node: {len(ids) - mismatched:,}/{len(ids):,} "
            f"classes equal, largest score difference {diff:.2g}"
        )
        lags = follow_lags(source, model, args, rng)
        print(
            f"--follow (poll {args.poll_interval_s} s), {len(lags)} single changes: lag median "
            f"{statistics.median(lags):.2f} s, max {max(lags):.2f} s"
        )
        if mismatched or diff > 1e-5:
            raise SystemExit("refresh differs from the full re-score")


if __name__ == "__main__":
    main()
