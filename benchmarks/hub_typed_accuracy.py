"""Typed GraphSAGE on the generated shop graph through ``tf_features.sample_typed`` (embedded
runtime), exact against the bounded mode (memgraph_tf/procedures/reservoir.py), same seeds.

The spec adds to ``benchmarks/typed_accuracy.py``'s typed one a hop-2 step from each product to
its buyers, ``(:Product)<-[:BOUGHT]-(:User)`` 5 (a product has ~20 buyers): with ``--reservoir R``
(default 10: above the users' 10 follows and 5 purchases) the reservoirs of every step are built
first and each product of more than R buyers draws from its reservoir of R. Trained with
:func:`memgraph_tf.client.typed_graphsage.train_typed_graphsage` on the graph's split, test
accuracy per seed, mean and spread per mode.

    .venv/bin/python benchmarks/hub_typed_accuracy.py --seeds 0 1 2 [--reservoir 10]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

SPEC = {
    "(:User)-[:BOUGHT]->(:Product)": [5, 0],
    "(:User)-[:FOLLOWS]->(:User)": [10, 0],
    "(:Product)-[:IN]->(:Category)": [0, 1],
    "(:Product)<-[:BOUGHT]-(:User)": [0, 5],
}
PROPS = {"User": ["features"], "Product": ["features"], "Category": ["features"]}


def main() -> int:
    from memgraph_tf.client import EmbeddedSource
    from memgraph_tf.client.change_log import build_reservoirs
    from memgraph_tf.client.typed_graphsage import evaluate_typed, train_typed_graphsage
    from memgraph_tf.typed_datasets import shop_graph, typed_embedded_graph
    from memgraph_tf.typed_sampling import EdgeStep

    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--users", type=int, default=12_000)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--reservoir", type=int, default=10)
    args = parser.parse_args()
    typed = shop_graph(args.users)
    graph, _ = typed_embedded_graph(typed)
    source = EmbeddedSource(graph)
    test = [graph.get_property(i, "id") for i in graph.nodes("User")]
    test = [
        k for i, k in zip(graph.nodes("User"), test) if graph.get_property(i, "split") == "test"
    ]
    built = 0
    for step in map(EdgeStep.parse, SPEC):
        built += build_reservoirs(
            source,
            {
                "capacity": args.reservoir,
                "edge_types": [step.rel_type],
                "direction": step.direction,
                "id_property": "id",
                "label": step.left,
                "neighbour_label": step.right,
            },
        )["reservoirs"]
    print(f"shop graph: {graph.node_count:,} nodes; {built:,} reservoirs of {args.reservoir}")
    results: dict[str, list[float]] = {}
    for mode, threshold in (("exact", None), ("bounded", args.reservoir)):
        options = {"id_property": "id", "reservoir_threshold": threshold}
        for seed in args.seeds:
            t0 = time.perf_counter()
            result = train_typed_graphsage(
                source, "User", SPEC, PROPS, options=options, steps=args.steps, seed=seed
            )
            acc = evaluate_typed(result.model, source, test, options=options, seed=10_000 + seed)
            results.setdefault(mode, []).append(acc["accuracy"])
            print(
                f"{mode:8s} seed {seed}: test accuracy {acc['accuracy']:.4f} "
                f"({time.perf_counter() - t0:.0f} s)",
                flush=True,
            )
    for mode, accs in results.items():
        spread = statistics.stdev(accs) if len(accs) > 1 else 0.0
        print(f"{mode:8s} mean {statistics.fmean(accs):.4f}, std {spread:.4f} over {len(accs)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
