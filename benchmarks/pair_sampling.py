"""Pair sampling (``tf_features.sample_pairs``) against two single-node ``tf_features.sample_typed``
calls (the sources', the targets') for the same pairs, in the same run, through the embedded
runtime (the real mgp.py).

The graph is the generated shop graph (:func:`memgraph_tf.typed_datasets.shop_graph`); the pairs
are ``(user, product)`` purchases, the spec walks BOUGHT both ways. Rows:

1. **pairs**: ``sample_pairs`` of the pairs against ``sample_typed`` of their users plus
   ``sample_typed`` of their products (what a caller without the pair sampler would do -- and it
   would still see each pair's own relationship); the ratio is what one call, one blob and the
   pair's relationships removed cost or save;
2. **pairs + 1 negative**: ``sample_pairs`` with ``negatives: 1`` (twice the rows, the negatives
   drawn in the database) against the two calls over the same number of rows (the negatives'
   targets drawn by the benchmark) -- pairs/s counts every row;
3. **held-out splits**: row 1 with ``exclude_splits`` (the relationships' split property read).

Rounds alternate the calls so that load on the machine hits both alike; pairs/s is the median
over rounds. The embedded runtime's per-call costs are not Memgraph's: compare the ratios.

    .venv/bin/python benchmarks/pair_sampling.py [--users N] [--pairs N] [--rounds N]

``benchmarks/link_serving.py`` runs these rows and then serves pairs by id.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time

NN = {"(:User)-[:BOUGHT]->(:Product)": [5, 3], "(:Product)<-[:BOUGHT]-(:User)": [5, 3]}


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    from memgraph_tf.typed_datasets import FEATURES, shop_graph, typed_embedded_graph

    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--users", type=int, default=6_000)
    parser.add_argument("--pairs", type=int, default=500, help="pairs per call")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)

    graph = shop_graph(args.users)
    g, _ = typed_embedded_graph(graph)
    bought = graph.edge_sets[("User", "BOUGHT", "Product")]
    order = random.Random(0).sample(range(len(bought.source)), args.pairs)
    users = [int(bought.source[i]) for i in order]
    products = [int(bought.target[i]) for i in order]
    g.call(
        "tf_features.split_edges", "(:User)-[:BOUGHT]->(:Product)", {"seed": 0, "id_property": "id"}
    )
    props = {"User": [FEATURES], "Product": [FEATURES]}
    print(
        f"shop graph: {g.node_count} nodes, {g.edge_count} relationships; {len(users)} pairs per "
        f"call, {args.rounds} rounds; load average {os.getloadavg()[0]:.1f}"
    )

    def pairs(**extra):
        options = {"source_label": "User", "target_label": "Product", "id_property": "id"}
        options.update(seed=7, **extra)
        return lambda: g.call("tf_features.sample_pairs", users, products, NN, props, options)

    def two_calls(sources, targets, **extra):
        def run():
            for label, seeds in (("User", sources), ("Product", targets)):
                options = {"label": label, "id_property": "id", "seed": 7, **extra}
                g.call("tf_features.sample_typed", seeds, NN, props, options)

        return run

    negatives = random.Random(1).choices(range(graph.node_sets["Product"].size), k=len(users))
    held = {"exclude_splits": ["val", "test"]}
    rows = [
        ("pairs", len(users), pairs(), two_calls(users, products)),
        (
            "pairs + 1 negative",
            2 * len(users),
            pairs(negatives=1),
            two_calls(users + users, products + negatives),
        ),
        ("held-out splits", len(users), pairs(**held), two_calls(users, products, **held)),
    ]
    for name, count, pair_call, baseline in rows:
        pair_call(), baseline()  # warm-up
        t_pairs, t_base = [], []
        for _ in range(args.rounds):
            t_pairs.append(timed(pair_call))
            t_base.append(timed(baseline))
        pair_rate = count / statistics.median(t_pairs)
        base_rate = count / statistics.median(t_base)
        print(
            f"{name:20s} sample_pairs {pair_rate:8.0f} pairs/s   two sample_typed "
            f"{base_rate:8.0f} pairs/s   pairs/two calls {pair_rate / base_rate:.2f}x"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
