"""Benchmark ``tf_features.profile`` through the embedded runtime (the real mgp.py).

A 100k-node label (``--nodes``) with an int, a float (absent on a fifth of the nodes), a string,
a boolean, a list of strings and a Date per node. In alternating rounds of the same run:
``tf_features.pack`` of one numeric property of every node (the baseline: the cheapest full read
of the label the module offers), ``tf_features.profile`` of that one property, and of all six.
Prints the median nodes/s of each and the ratios to pack.

Usage: python benchmarks/profile.py [--nodes N] [--rounds R]
The embedded runtime adds Python overhead per graph access that Memgraph's C++ side does not have,
so absolute numbers are a floor; the ratios compare like with like.
"""

from __future__ import annotations

import argparse
import datetime
import random
import statistics
import time

from memgraph_tf.embedded import EmbeddedGraph

LABEL = "Person"


def build(n: int) -> EmbeddedGraph:
    rng = random.Random(0)
    graph = EmbeddedGraph()
    words = [f"c{i}" for i in range(200)]
    for i in range(n):
        props = {
            "age": rng.randrange(18, 90),
            "country": rng.choice(words),
            "vip": rng.random() < 0.1,
            "tags": rng.sample(words[:20], rng.randrange(4)),
            "born": datetime.date(1950, 1, 1) + datetime.timedelta(days=rng.randrange(20000)),
        }
        if i % 5:
            props["score"] = rng.random()
        graph.add_node([LABEL], props)
    return graph


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    graph = build(args.nodes)
    ids = graph.nodes(LABEL)
    runs = {
        "pack ['age']": lambda: graph.call("tf_features.pack", ids, ["age"]),
        "profile ['age']": lambda: graph.call("tf_features.profile", LABEL, ["age"]),
        "profile (all 6)": lambda: graph.call("tf_features.profile", LABEL, None),
    }
    (row,) = graph.call("tf_features.profile", LABEL, None)
    assert row["count"] == args.nodes and len(row["properties"]) == 6
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(args.rounds):
        for name, fn in runs.items():
            times[name].append(timed(fn))
    base = statistics.median(times["pack ['age']"])
    print(f"{args.nodes} nodes, median of {args.rounds} alternating rounds (embedded runtime)")
    for name, ts in times.items():
        t = statistics.median(ts)
        print(f"  {name:18s} {args.nodes / t:12,.0f} nodes/s   {t:7.3f} s   {t / base:5.2f}x pack")


if __name__ == "__main__":
    main()
