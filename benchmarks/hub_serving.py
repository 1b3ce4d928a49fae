"""Served ``{"node_id": N}`` classify requests whose neighbourhood reaches a hub, in the bounded
mode (memgraph_tf/procedures/reservoir.py): p50 / p99 latency at ``--clients`` concurrent clients.

The graph (embedded, in process): a hub with ``--degree`` leaves (``hub -[:E]-> leaf``, all
``:N`` with an 8-float ``features`` property) and a star of 10 leaves (the baseline). The
reservoirs (R = ``--capacity``) are built by ``tf_features.build_reservoirs`` before the server
starts. The model: an untrained seeded GraphSAGE (fanouts 10, 10; 8 features; 4 classes) exported
with the op decoder and ``sample_options`` ``{"seed": 1, "reservoir_threshold": R}``, served by an
in-process ``ModelServer`` over that graph (REST). The requests: node ids of leaves of the hub
(their 2-hop neighbourhood draws from the hub at hop 2) and the hub itself, in turn; the baseline
rows ask the same of the degree-10 star in the same run. Each row: requests, p50 / p99 ms,
errors (must be zero). Then, for reference, one request from the hub in the exact mode (a bundle
without ``reservoir_threshold``): what the bounded mode avoids.

    .venv/bin/python benchmarks/hub_serving.py [--degree 1000000] [--clients 8] [--duration-s 10]
"""

from __future__ import annotations

import argparse
import os
import pathlib
import random
import sys
import tempfile
import threading
import time
from typing import Any

import requests

BASE_DEGREE = 10
FEATURES = 8


def build_graph(degree: int) -> tuple[Any, dict[int, int], dict[int, list[int]]]:
    """(graph, degree -> hub id, degree -> some of its leaves' ids)."""
    from memgraph_tf.embedded import EmbeddedGraph

    rng = random.Random(0)
    g = EmbeddedGraph(default_memory_limit_bytes=None, count_api_calls=False)
    hubs, leaves = {}, {}
    for d in (BASE_DEGREE, degree):
        hub = g.add_node(["N"], {"features": [rng.random() for _ in range(FEATURES)]})
        hubs[d] = hub
        found = []
        for i in range(d):
            leaf = g.add_node(["N"], {"features": [rng.random() for _ in range(FEATURES)]})
            g.add_edge(hub, leaf, "E")
            if i < 64:
                found.append(leaf)
        leaves[d] = found
    return g, hubs, leaves


def export(base: pathlib.Path, name: str, options: dict[str, Any]) -> pathlib.Path:
    import tensorflow as tf

    from memgraph_tf.client.graphsage import GraphSAGE
    from memgraph_tf.serving.export import export_bundle

    tf.keras.utils.set_random_seed(0)
    model = GraphSAGE([10, 10], FEATURES, 4, hidden_units=16, class_names=list("abcd"))
    info = export_bundle(model, base, name, 1, use_op=True, sample_options=options)
    return info.path.parent


def load(url: str, model: str, ids: list[int], clients: int, duration_s: float) -> dict:
    """``clients`` threads posting one node id each per request, in turn, for ``duration_s``."""
    latencies: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()
    stop = time.perf_counter() + duration_s

    def client(k: int) -> None:
        session = requests.Session()
        i = k
        mine, bad = [], []
        while time.perf_counter() < stop:
            body = {"examples": [{"node_id": ids[i % len(ids)]}]}
            t0 = time.perf_counter()
            r = session.post(f"{url}/v1/models/{model}:classify", json=body, timeout=60)
            mine.append(time.perf_counter() - t0)
            if r.status_code != 200:
                bad.append(r.text[:200])
            i += clients
        with lock:
            latencies.extend(mine)
            errors.extend(bad)

    threads = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    latencies.sort()

    def pct(q: float) -> float:
        return latencies[min(len(latencies) - 1, int(q * len(latencies)))] * 1e3

    return {"requests": len(latencies), "p50": pct(0.50), "p99": pct(0.99), "errors": errors}


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--degree", type=int, default=1_000_000)
    parser.add_argument("--capacity", type=int, default=100)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--duration-s", type=float, default=10.0)
    args = parser.parse_args()

    from memgraph_tf.client import EmbeddedSource
    from memgraph_tf.serving.model_server import ModelServer
    from memgraph_tf.serving.server import start_server

    print(f"load average {os.getloadavg()[0]:.1f} ({os.cpu_count()} CPUs)")
    t0 = time.perf_counter()
    g, hubs, leaves = build_graph(args.degree)
    t1 = time.perf_counter()
    [page] = g.call(
        "tf_features.build_reservoirs",
        {"capacity": args.capacity, "seed": 1, "batch_nodes": g.node_count + 1},
    )
    print(
        f"graph: {g.node_count:,} nodes in {t1 - t0:.1f} s; {page['reservoirs']} reservoirs of "
        f"{args.capacity} in {time.perf_counter() - t1:.1f} s"
    )
    source = EmbeddedSource(g)
    errors = 0
    with tempfile.TemporaryDirectory(prefix="memgraph-tf-hub-serving-") as tmp:
        bounded = {"seed": 1, "reservoir_threshold": args.capacity}
        base = export(pathlib.Path(tmp) / "bounded", "hub", bounded)
        with start_server(ModelServer(base, graph_source=source, warmup=False)) as srv:
            print(f"{args.clients} clients, {args.duration_s:g} s per row, one node id per request")
            for d in (BASE_DEGREE, args.degree):  # warm-up: the model's first calls trace it
                load(srv.url, "hub", [hubs[d], *leaves[d]], args.clients, 1.0)
            for d in (BASE_DEGREE, args.degree, BASE_DEGREE, args.degree):
                ids = [hubs[d], *leaves[d]]
                r = load(srv.url, "hub", ids, args.clients, args.duration_s)
                errors += len(r["errors"])
                print(
                    f"  bounded, hub degree {d:>9,}: {r['requests']:6,} requests  "
                    f"p50 {r['p50']:6.1f} ms  p99 {r['p99']:6.1f} ms  errors {len(r['errors'])} "
                    f"(load {os.getloadavg()[0]:.1f})"
                )
        exact = export(pathlib.Path(tmp) / "exact", "hub", {"seed": 1})
        with start_server(ModelServer(exact, graph_source=source, warmup=False)) as srv:
            body = {"examples": [{"node_id": leaves[args.degree][0]}]}
            t0 = time.perf_counter()
            got = requests.post(f"{srv.url}/v1/models/hub:classify", json=body, timeout=600)
            print(
                f"  exact, one request through the hub of {args.degree:,}: "
                f"{(time.perf_counter() - t0) * 1e3:,.0f} ms (status {got.status_code})"
            )
    print(f"errors: {errors}; load average {os.getloadavg()[0]:.1f}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
