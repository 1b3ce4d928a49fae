"""Planted leakage in node classification: validation accuracy against test accuracy on future
accounts, with point-in-time sampling and without it, in the same run, through the database path
(the embedded graph running the unchanged query module: ``tf_features.sample_typed``).

The graph is :func:`memgraph_tf.ledger_datasets.ledger_graph` without payees: ``--accounts``
customers, each with a class, a time ``t`` and ``TRANSFER {amount, ts}`` relationships to
counterparty accounts whose features are the one-hot of their class: ``--past`` transfers in the
100 before ``t``, each to a counterparty of the customer's class with probability
``--past-quality`` (a weak signal), and ``--leaks`` transfers 100-300 after ``t``, each to one of
its class with probability ``--leak-quality`` (the planted leakage: what happens after the moment
the label refers to). The snapshot is taken at 1000: the early customers (``t`` < 700: train and,
held out, validation) have all their later transfers in it; the test customers (``t`` >= 900, the
future) have none yet, as when a deployed model meets them.

The same typed GraphSAGE (one hop, ``--fanout`` neighbours) is trained twice on the train
customers, early stopping on the validation ones:

* **point in time**: ``(:Account)-[:TRANSFER {time: ts}]->(:Account)`` with ``options.seed_time =
  't'``: every customer's neighbourhood holds only the transfers not after its own time, in
  training, validation and test alike;
* **snapshot**: ``(:Account)-[:TRANSFER]->(:Account)``: every transfer in the graph.

Each is then scored with the same protocol (``evaluate_typed``, ``--draws`` draws) on the
validation and the test customers; the gap is validation - test. Prints each run, the mean gaps
and the exact best accuracy available at a customer's time (the Bayes rule on its past).

    .venv/bin/python benchmarks/temporal_leakage.py --seeds 0 1 2
"""

from __future__ import annotations

import argparse
import sys
import time

import _typed_runs  # beside this file (the script's directory is on sys.path)

OPTIONS = {"id_property": "id"}
MODES = {
    "point in time": ("(:Account)-[:TRANSFER {time: ts}]->(:Account)", {"seed_time": "t"}),
    "snapshot": ("(:Account)-[:TRANSFER]->(:Account)", {}),
}
#: ledger_graph's keyword arguments given by the flags of the same names, with their defaults.
GRAPH = {"past": 6, "past_quality": 0.3, "leaks": 6, "leak_quality": 0.9}


def run(seed: int, args: argparse.Namespace) -> list[dict]:
    from memgraph_tf.client.typed_graphsage import evaluate_typed

    graph, source, train, val, test = _typed_runs.ledger(args, seed, GRAPH, regular=0, occasional=0)
    rows = []
    for mode, (step, extra) in MODES.items():
        options = {**OPTIONS, **extra}
        started = time.perf_counter()
        result = _typed_runs.train_ledger(
            source, graph, step, args.fanout, train, val, args=args, seed=seed, options=options
        )

        def accuracy(ids, model=result.model, options=options):
            return evaluate_typed(model, source, ids, options=options, draws=args.draws, seed=seed)[
                "accuracy"
            ]

        row = {
            "seed": seed,
            "mode": mode,
            "val": accuracy(val),
            "test": accuracy(test),
            "best_val_during_training": result.best_val_accuracy,
            "best_as_of_t": graph.best_accuracy,
            "nodes": {"train": len(train), "val": len(val), "test": len(test)},
            "seconds": time.perf_counter() - started,
        }
        row["gap"] = row["val"] - row["test"]
        rows.append(row)
        print(
            f"seed {seed} {mode:13s}: val {row['val']:.4f}, test {row['test']:.4f}, gap "
            f"{row['gap']:+.4f} (best val during training {row['best_val_during_training']:.4f}; "
            f"{row['seconds']:.0f} s)",
            flush=True,
        )
    return rows


def main() -> int:
    parser = _typed_runs.ledger_parser(__doc__, GRAPH, accounts=12_000, fanout=10)
    args = parser.parse_args()
    print(
        f"planted leakage: {args.accounts} customers, {args.past} past transfers (quality "
        f"{args.past_quality}), {args.leaks} after the customer's time (quality "
        f"{args.leak_quality}); fanout {args.fanout}, {args.steps} steps",
        flush=True,
    )
    rows = [row for seed in args.seeds for row in run(seed, args)]
    spread = _typed_runs.spread
    for mode in MODES:
        mine = [r for r in rows if r["mode"] == mode]
        print(
            f"{mode:13s}: val {spread([r['val'] for r in mine])}, test "
            f"{spread([r['test'] for r in mine])}, gap (val - test) "
            f"{spread([r['gap'] for r in mine])}, worst |gap| "
            f"{max(abs(r['gap']) for r in mine):.4f}"
        )
    best = [r["best_as_of_t"] for r in rows if r["mode"] == "point in time"]
    print(f"best accuracy as of the customer's time (exact): {spread(best)}")
    return _typed_runs.print_json(args, rows)


if __name__ == "__main__":
    sys.exit(main())
