"""Weighted edge steps (``(:Account)-[:TRANSFER {weight: amount}]->(:Account)``, without
replacement, and ``{weight: amount, replace: true}``, with replacement) against uniform ones over
the same relationships, in the same run, through the embedded runtime (the real mgp.py).

The graph: ``--accounts`` accounts, each with a random number (0 to ``2 * --degree``) of
``TRANSFER`` relationships to random accounts, each with a float ``amount`` (a tenth of them 0).
Rows (``tf_features.sample_typed``, fanouts (10, 5)):

1. **ids only**: the draw's cost alone (reading each relationship's property, summing, one
   ``rng.random()`` per neighbour instead of ``rng.sample``; with replacement, the running sums
   and one ``rng.random()`` and one bisection per slot);
2. **features**: with every sampled account's 16-float features, what a training batch pays.

Each weighted step is timed against the uniform one in its own pairing. Rounds alternate weighted
and uniform calls so that load on the machine hits both alike; seeds/s
is the median over rounds. The embedded runtime's per-call costs are not Memgraph's: compare the
ratios, not the absolute figures.

    .venv/bin/python benchmarks/weighted_sampling.py [--accounts N] [--degree N] [--seeds N]
        [--rounds N]
"""

from __future__ import annotations

import argparse
import os
import random
import sys

from _timing import paired_rates  # beside this file (the script's directory is on sys.path)

UNIFORM = "(:Account)-[:TRANSFER]->(:Account)"
WEIGHTED = "(:Account)-[:TRANSFER {weight: amount}]->(:Account)"
REPLACE = "(:Account)-[:TRANSFER {weight: amount, replace: true}]->(:Account)"


def build(accounts: int, degree: int):
    from memgraph_tf.embedded import EmbeddedGraph

    rng = random.Random(20261129)
    g = EmbeddedGraph()
    ids = [
        g.add_node(["Account"], {"id": i, "features": [rng.random() for _ in range(16)]})
        for i in range(accounts)
    ]
    for a in ids:
        for _ in range(rng.randint(0, 2 * degree)):
            amount = 0.0 if rng.random() < 0.1 else rng.uniform(1, 1000)
            g.add_edge(a, ids[rng.randrange(accounts)], "TRANSFER", {"amount": amount})
    return g, ids


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--accounts", type=int, default=20_000)
    parser.add_argument("--degree", type=int, default=15, help="mean relationships per account")
    parser.add_argument("--seeds", type=int, default=500, help="seeds per call")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()

    g, ids = build(args.accounts, args.degree)
    seeds = ids[: args.seeds]
    print(
        f"transfer graph: {g.node_count} nodes, {g.edge_count} relationships; {len(seeds)} seeds "
        f"per call, {args.rounds} rounds; load average {os.getloadavg()[0]:.1f}"
    )

    def call(step, props):
        options = {"label": "Account", "seed": 7}
        return lambda: g.call("tf_features.sample_typed", seeds, {step: [10, 5]}, props, options)

    for name, props in (("ids only", {}), ("features", {"Account": ["features"]})):
        for kind, step in (("weighted", WEIGHTED), ("replace", REPLACE)):
            weighted, uniform = call(step, props), call(UNIFORM, props)
            w_rate, u_rate = paired_rates(len(seeds), weighted, uniform, args.rounds)
            print(
                f"{name:10s} {kind:8s} {w_rate:8.0f} seeds/s   uniform {u_rate:8.0f} seeds/s   "
                f"{kind}/uniform {w_rate / u_rate:.2f}x",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
