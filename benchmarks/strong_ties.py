"""Strong ties: a typed GraphSAGE whose signal lies in a few high-weight relationships amid many
weak noisy ones, sampled by weight and uniformly, against the exact best accuracy, in the same
run, through the database path (the embedded graph running the unchanged query module:
``tf_features.sample_typed``).

The graph is :func:`memgraph_tf.ledger_datasets.ledger_graph` without transfers: ``--accounts``
customers, each with a class and ``PAYEE {limit}`` relationships to counterparty accounts whose
features are the one-hot of their class: ``--regular`` payees with a high limit (2,000-10,000),
each of the customer's class with probability ``--regular-quality``, else of a uniform class, and
``--occasional`` payees with a low limit (1-10) of a uniform class. A customer's own features are
zeros: its class is in its strong ties only. The best accuracy is exact (the Bayes rule on the
regular payees' classes, summed over every outcome).

The same model (one hop, ``--fanout`` neighbours, default the number of regular payees) is
trained on the train customers, early stopping on the validation ones, and scored on the test
ones (``evaluate_typed``, ``--draws`` draws) twice:

* **weighted**: ``(:Account)-[:PAYEE {weight: limit}]->(:Account)``: neighbours drawn with
  probability proportional to the limit, without replacement;
* **uniform**: ``(:Account)-[:PAYEE]->(:Account)``: every payee alike.

Prints each run, weighted / best (goal >= 0.97), weighted / the Bayes rule on the same test
customers and uniform / best.

    .venv/bin/python benchmarks/strong_ties.py --seeds 0 1 2
"""

from __future__ import annotations

import argparse
import sys
import time

import _typed_runs  # beside this file (the script's directory is on sys.path)

OPTIONS = {"id_property": "id"}
MODES = {
    "weighted": "(:Account)-[:PAYEE {weight: limit}]->(:Account)",
    "uniform": "(:Account)-[:PAYEE]->(:Account)",
}
#: ledger_graph's keyword arguments given by the flags of the same names, with their defaults.
GRAPH = {"regular": 3, "regular_quality": 0.8, "occasional": 30}


def run(seed: int, args: argparse.Namespace) -> dict:
    import numpy as np

    from memgraph_tf.client.typed_graphsage import evaluate_typed

    graph, source, train, val, test = _typed_runs.ledger(args, seed, GRAPH, past=0, leaks=0)
    out = {
        "seed": seed,
        "best": graph.best_accuracy,
        "bayes_test": float(np.mean(graph.bayes[test] == graph.labels[test])),
        "chance": graph.chance,
    }
    for mode, step in MODES.items():
        started = time.perf_counter()
        fanout = args.fanout or args.regular
        result = _typed_runs.train_ledger(
            source, graph, step, fanout, train, val, args=args, seed=seed, options=OPTIONS
        )
        acc = evaluate_typed(
            result.model, source, test, options=OPTIONS, draws=args.draws, seed=seed
        )["accuracy"]
        out[mode] = acc
        seconds = time.perf_counter() - started
        print(f"seed {seed} {mode:8s} test accuracy {acc:.4f} ({seconds:.0f} s)", flush=True)
    print(
        f"seed {seed} best {out['best']:.4f} (Bayes rule on the test customers "
        f"{out['bayes_test']:.4f}), chance {out['chance']:.4f}; weighted / best "
        f"{out['weighted'] / out['best']:.4f}, uniform / best {out['uniform'] / out['best']:.4f}",
        flush=True,
    )
    return out


def main() -> int:
    parser = _typed_runs.ledger_parser(__doc__, GRAPH, accounts=4000)
    parser.add_argument("--fanout", type=int, default=None, help="default: --regular")
    args = parser.parse_args()
    print(
        f"strong ties: {args.accounts} customers, {args.regular} regular payees (quality "
        f"{args.regular_quality}) amid {args.occasional} occasional ones; fanout "
        f"{args.fanout or args.regular}, {args.steps} steps",
        flush=True,
    )
    runs = [run(seed, args) for seed in args.seeds]
    spread = _typed_runs.spread
    ratio = [r["weighted"] / r["best"] for r in runs]
    _typed_runs.print_spreads(
        runs,
        {"best possible": "best", "weighted": "weighted", "uniform": "uniform", "chance": "chance"},
    )
    print(f"weighted / best: {spread(ratio)} (goal >= 0.97; worst {min(ratio):.4f})")
    on_test = [r["weighted"] / r["bayes_test"] for r in runs]
    print(f"weighted / Bayes rule on the same test customers: {spread(on_test)}")
    print(f"uniform / best: {spread([r['uniform'] / r['best'] for r in runs])}")
    return _typed_runs.print_json(args, runs)


if __name__ == "__main__":
    sys.exit(main())
