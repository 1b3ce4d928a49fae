"""GraphSAGE accuracy on Cora / Citeseer (Planetoid split: 140/500/1000 on Cora, 120/500/1000 on
Citeseer).

Features and neighbourhoods come only through the ``tf_features`` query modules, run unchanged by
the embedded runtime (``EmbeddedSource``): features once through ``tf_features.pack`` (feature
cache), neighbour ids every step through ``tf_features.sample``. Prints test accuracy per seed, then
mean and standard deviation (target on Cora: mean >= 0.80; GCN's published figures: 0.815 Cora,
0.703 Citeseer).

    .venv/bin/python benchmarks/accuracy.py --dataset cora --seeds 0 1 2 3 4
    .venv/bin/python benchmarks/accuracy.py --dataset citeseer --seeds 0 1 2 3 4
"""

from __future__ import annotations

import argparse
import json
import logging
import pathlib
import statistics
import sys
import time


def main() -> int:
    from memgraph_tf.client import EmbeddedSource, evaluate, train_graphsage
    from memgraph_tf.client.graphsage import PLANETOID_RECIPE, build_feature_cache
    from memgraph_tf.datasets import planetoid_graph

    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dataset", default="cora", choices=["cora", "citeseer"])
    parser.add_argument(
        "--root",
        default=None,
        help="folder with the ind.<name>.* files (default: memgraph_tf.datasets.planetoid_root)",
    )
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--steps", type=int, default=PLANETOID_RECIPE["steps"])
    parser.add_argument(
        "--test-draws", type=int, default=5, help="neighbourhood samples averaged at test time"
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=JSON",
        help="override a recipe setting, e.g. --set eval_draws=8 --set fanouts=[25,10]",
    )
    parser.add_argument(
        "--reservoir",
        type=int,
        default=None,
        metavar="R",
        help="the bounded mode: build reservoirs of R relationships (direction both) first and "
        "sample with options.reservoir_threshold = R (training, validation and test)",
    )
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args()
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(asctime)s %(name)s: %(message)s",
    )

    if args.root is None:
        from memgraph_tf.datasets import planetoid_root

        try:
            args.root = str(planetoid_root(args.dataset))
        except FileNotFoundError as exc:
            print(exc, file=sys.stderr)
            return 2
    if not (pathlib.Path(args.root) / f"ind.{args.dataset}.x").exists():
        print(f"Planetoid files not found under {args.root}", file=sys.stderr)
        return 2
    started = time.perf_counter()
    graph = planetoid_graph(args.dataset, args.root)
    source = EmbeddedSource(graph)
    split = {
        name: [i for i in graph.nodes() if graph.get_property(i, "split") == name]
        for name in ("train", "val", "test")
    }
    cache = build_feature_cache(source, ["features"], {})
    print(
        f"{args.dataset}: {graph.node_count} nodes, {graph.edge_count} edges, split "
        f"{len(split['train'])}/{len(split['val'])}/{len(split['test'])}, loaded in "
        f"{time.perf_counter() - started:.1f} s"
    )
    recipe = dict(PLANETOID_RECIPE, steps=args.steps)
    for item in args.set:
        key, _, value = item.partition("=")
        if key not in recipe:
            parser.error(f"--set: expected one of {', '.join(recipe)}, got {key!r}")
        recipe[key] = json.loads(value)
    print("recipe:", ", ".join(f"{k}={v}" for k, v in recipe.items()))
    options = None
    if args.reservoir is not None:
        from memgraph_tf.client.change_log import build_reservoirs

        built = build_reservoirs(source, {"capacity": args.reservoir, "direction": "both"})
        options = {"reservoir_threshold": args.reservoir}
        print(
            f"bounded mode: {built['reservoirs']} nodes of more than {args.reservoir} "
            f"relationships draw from a reservoir of {args.reservoir}"
        )
    accuracies = []
    for seed in args.seeds:
        t0 = time.perf_counter()
        result = train_graphsage(
            source,
            split["train"],
            split["val"],
            feature_cache=cache,
            seed=seed,
            options=options,
            **recipe,
        )
        train_s = time.perf_counter() - t0
        test = evaluate(
            result.model,
            source,
            split["test"],
            feature_cache=cache,
            draws=args.test_draws,
            seed=10_000 + seed,
            options=options,
        )["accuracy"]
        accuracies.append(test)
        print(
            f"seed {seed}: test accuracy {test:.4f} (best val {result.best_val_accuracy:.4f} at "
            "step "
            f"{result.best_step}, {len(result.history['step'])} steps; training {train_s:.1f} s: "
            f"waiting for batches {sum(result.history['wait_s']):.1f} s, steps "
            f"{sum(result.history['step_s']):.1f} s, validation "
            f"{sum(result.history['eval_s']):.1f} s; "
            f"{time.perf_counter() - t0:.0f} s with the test)",
            flush=True,
        )
    mean = statistics.fmean(accuracies)
    spread = statistics.stdev(accuracies) if len(accuracies) > 1 else 0.0
    print(
        f"{args.dataset}: test accuracy mean {mean:.4f}, std {spread:.4f}, min "
        f"{min(accuracies):.4f}, "
        f"max {max(accuracies):.4f} over {len(accuracies)} seeds"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
