"""Typed sampling (``tf_features.sample_typed``) against homogeneous sampling
(``tf_features.sample``) over the same relationships, in the same run, through the embedded
runtime (the real mgp.py).

The graph is the generated shop graph (:func:`memgraph_tf.typed_datasets.shop_graph`). Rows:

1. **same edges**: ``(:User)-[:FOLLOWS]->(:User)`` with fanouts (10, 5), features of every sampled
   user, typed (``sample_typed``) vs homogeneous (``sample`` with ``edge_types: [FOLLOWS]``,
   ``direction: out``, padded): the same neighbourhoods drawn over the same edges; the ratio is what
   the typed bookkeeping (the label of every neighbour checked, per-label tables) costs;
2. **ids only**: the same without features;
3. **the shop spec** (BOUGHT 5 and FOLLOWS 10 at hop 1, IN 1 at hop 2; three labels, three widths):
   typed only, for scale.

Rounds alternate typed and homogeneous calls so that load on the machine hits both alike; seeds/s
is the median over rounds. The embedded runtime's per-call costs are not Memgraph's: compare the
ratios, not the absolute figures.

    .venv/bin/python benchmarks/typed_sampling.py [--users N] [--seeds N] [--rounds N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

from _timing import paired_rates, timed  # beside this file (the script's directory is on sys.path)

FOLLOWS = "(:User)-[:FOLLOWS]->(:User)"
SHOP = {
    "(:User)-[:BOUGHT]->(:Product)": [5, 0],
    FOLLOWS: [10, 0],
    "(:Product)-[:IN]->(:Category)": [0, 1],
}


def main() -> int:
    from memgraph_tf.typed_datasets import FEATURES, shop_graph, typed_embedded_graph

    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--users", type=int, default=12_000)
    parser.add_argument("--seeds", type=int, default=500, help="seeds per call")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()

    graph = shop_graph(args.users)
    g, ids = typed_embedded_graph(graph)
    seeds = ids["User"][: args.seeds]
    print(
        f"shop graph: {g.node_count} nodes, {g.edge_count} relationships; {len(seeds)} seeds per "
        f"call, {args.rounds} rounds; load average {os.getloadavg()[0]:.1f}"
    )

    def typed(num_neighbors, props):
        options = {"label": "User", "seed": 7}
        return lambda: g.call("tf_features.sample_typed", seeds, num_neighbors, props, options)

    def homogeneous(props):
        options = {"seed": 7, "edge_types": ["FOLLOWS"], "direction": "out", "low_degree": "pad"}
        return lambda: g.call("tf_features.sample", seeds, [10, 5], props, options)

    rows = [
        (
            "same edges, features",
            typed({FOLLOWS: [10, 5]}, {"User": [FEATURES]}),
            homogeneous([FEATURES]),
        ),
        ("same edges, ids only", typed({FOLLOWS: [10, 5]}, {}), homogeneous([])),
    ]
    for name, typed_call, homogeneous_call in rows:
        typed_rate, homo_rate = paired_rates(len(seeds), typed_call, homogeneous_call, args.rounds)
        print(
            f"{name:22s} typed {typed_rate:8.0f} seeds/s   homogeneous {homo_rate:8.0f} seeds/s   "
            f"typed/homogeneous {typed_rate / homo_rate:.2f}x"
        )
    shop = typed(SHOP, {label: [FEATURES] for label in ("User", "Product", "Category")})
    shop()
    rate = len(seeds) / statistics.median(timed(shop) for _ in range(args.rounds))
    print(f"{'shop spec, features':22s} typed {rate:8.0f} seeds/s (3 labels, 3 types; no twin)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
