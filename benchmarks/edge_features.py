"""Edge features (``options.edge_feature_spec``): node classification on a generated graph whose
label signal lies only in relationship properties, with and without the relationship properties
in the model, in the same run.

The graph (:func:`memgraph_tf.typed_datasets.transfer_graph`): ``--accounts`` accounts, each with
``--transfers`` outgoing ``TRANSFER`` relationships to accounts drawn uniformly; an account's class
shows only in its transfers' ``channel`` (its class's channel with probability ``--signal``, else
one of four uniformly) and ``amount`` (normal around a class-dependent mean; a tenth missing). Node
features are noise and the structure is independent of the class. Per seed, the same typed
GraphSAGE recipe (step ``(:Account)-[:TRANSFER]->(:Account)``, fanout ``--transfers``: every
transfer) is trained twice through ``tf_features.sample_typed`` on the embedded runtime:

* **with**: ``edge_feature_spec`` gives the step the spec of ``amount`` (numeric) and ``channel``
  (categorical), encoded in the model and concatenated to each neighbour's message;
* **without**: the same model reading nodes and structure only.

Beside them, **Bayes**: the accuracy of the exact best rule on the same test accounts (the class
maximising the likelihood of the account's transfers under the generator's own distributions), the
ceiling any model can reach in expectation. Also the sampling cost: seeds/s of ``sample_typed``
with the edge columns against without, calls alternating in the same run.

    .venv/bin/python benchmarks/edge_features.py [--accounts N] [--seeds 0 1 2] [--steps N]
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _timing import paired_rates

OPTIONS = {"id_property": "id"}


def bayes_accuracy(graph, classes: int, signal: float, test_ids: list[int]) -> float:
    """The accuracy on ``test_ids`` (account ids) of the class that maximises the likelihood of
    the account's transfers (channel and amount) under :func:`transfer_graph`'s distributions."""
    from memgraph_tf.typed_datasets import TRANSFER_CHANNELS

    key_of = {n: graph.get_property(n, "id") for n in graph.nodes("Account")}
    loglik: dict[int, list[float]] = {k: [0.0] * classes for k in key_of.values()}
    centre = (classes - 1) / 2
    for src, _, props in graph.edges("TRANSFER"):
        row = loglik[key_of[src]]
        channel = TRANSFER_CHANNELS.index(props["channel"])
        for c in range(classes):
            p = signal * (channel == c) + (1 - signal) / len(TRANSFER_CHANNELS)
            row[c] += math.log(p)
            if "amount" in props:
                row[c] -= 0.5 * (props["amount"] - (c - centre)) ** 2
    by_key = {key_of[n]: graph.get_property(n, "label") for n in graph.nodes("Account")}
    right = sum(max(range(classes), key=loglik[k].__getitem__) == by_key[k] for k in test_ids)
    return right / len(test_ids)


def run(args, seed: int) -> dict[str, float]:
    from memgraph_tf.client import EmbeddedSource
    from memgraph_tf.client.typed_graphsage import (
        evaluate_typed,
        split_node_ids,
        train_typed_graphsage,
    )
    from memgraph_tf.typed_datasets import TRANSFER_STEP, transfer_graph, transfer_spec

    graph = transfer_graph(
        args.accounts, args.transfers, args.classes, signal=args.signal, seed=seed
    )
    source = EmbeddedSource(graph)
    test_ids = split_node_ids(source, "Account", "test", options=OPTIONS)
    out = {"bayes": bayes_accuracy(graph, args.classes, args.signal, test_ids)}
    for name, edge_spec in (("with", {TRANSFER_STEP: transfer_spec()}), ("without", None)):
        start = time.perf_counter()
        result = train_typed_graphsage(
            source,
            "Account",
            {TRANSFER_STEP: [args.transfers]},
            {"Account": ["features"]},
            options=OPTIONS,
            edge_feature_spec=edge_spec,
            steps=args.steps,
            eval_every=10,
            batch_size=128,
            hidden_units=32,
            embedding_dim=4,
            seed=seed,
        )
        got = evaluate_typed(result.model, source, test_ids, options=OPTIONS, seed=seed, draws=1)
        out[name] = got["accuracy"]
        out[f"{name}_s"] = time.perf_counter() - start
    seeds = list(range(min(500, args.accounts)))
    nn = {TRANSFER_STEP: [args.transfers]}
    props = {"Account": ["features"]}
    with_edges = {
        **OPTIONS,
        "label": "Account",
        "edge_feature_spec": {TRANSFER_STEP: transfer_spec()},
    }
    plain = {**OPTIONS, "label": "Account"}
    out["with_rate"], out["without_rate"] = paired_rates(
        len(seeds),
        lambda: source.sample_typed(seeds, nn, props, with_edges),
        lambda: source.sample_typed(seeds, nn, props, plain),
        5,
    )
    return out


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--accounts", type=int, default=3000)
    parser.add_argument("--transfers", type=int, default=5, help="outgoing transfers per account")
    parser.add_argument("--classes", type=int, default=3)
    parser.add_argument("--signal", type=float, default=0.3)
    parser.add_argument("--steps", type=int, default=150)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    args = parser.parse_args()
    print(
        f"transfer graph: {args.accounts} accounts x {args.transfers} transfers, {args.classes} "
        f"classes, signal {args.signal}; {args.steps} steps; load average "
        f"{os.getloadavg()[0]:.1f}"
    )
    runs = []
    for seed in args.seeds:
        got = run(args, seed)
        runs.append(got)
        print(
            f"seed {seed}: test accuracy with edge features {got['with']:.3f} "
            f"({got['with_s']:.0f} s), without {got['without']:.3f} ({got['without_s']:.0f} s), "
            f"Bayes {got['bayes']:.3f}; "
            f"sampling {got['with_rate']:.0f} vs {got['without_rate']:.0f} seeds/s"
        )

    def mean(key: str) -> float:
        return statistics.mean(r[key] for r in runs)

    spread = {k: statistics.pstdev(r[k] for r in runs) for k in ("with", "without")}
    print(
        f"mean over {len(runs)} seeds: with {mean('with'):.3f} (+-{spread['with']:.3f}), without "
        f"{mean('without'):.3f} (+-{spread['without']:.3f}), Bayes {mean('bayes'):.3f}; "
        f"with / Bayes {mean('with') / mean('bayes'):.3f}; sampling with / without "
        f"{mean('with_rate') / mean('without_rate'):.2f}x"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
