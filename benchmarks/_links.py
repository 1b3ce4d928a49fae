"""Helpers the link-prediction benchmarks (link_accuracy.py, featureless.py, temporal_links.py)
share: their training flags, the training keyword arguments those flags give, the start of a run
(:func:`parse_args`: ``--json``, logging; :func:`announce`) and the ``--json`` file of every
run's figures. Imported from beside them (the script's directory is on sys.path)."""

from __future__ import annotations

import argparse
import json
import logging
import os

#: train_link_predictor's keyword arguments and the flags (argparse destinations) that give them.
TRAINING_FLAGS = {
    "hidden_units": "hidden",
    "steps": "steps",
    "eval_every": "eval_every",
    "patience": "patience",
}


def add_training_arguments(
    parser: argparse.ArgumentParser, *, steps: int, patience: int, hidden: int, test_draws: int
) -> None:
    """Adds --steps, --eval-every (25), --patience, --fanouts (10 5), --hidden and --test-draws
    with these defaults; --hidden is stored as ``args.hidden``."""
    parser.add_argument("--steps", type=int, default=steps)
    parser.add_argument("--eval-every", type=int, default=25)
    parser.add_argument("--patience", type=int, default=patience)
    parser.add_argument("--fanouts", nargs="+", type=int, default=[10, 5])
    parser.add_argument("--hidden", type=int, default=hidden)
    parser.add_argument("--test-draws", type=int, default=test_draws)


def parse_args(parser: argparse.ArgumentParser) -> argparse.Namespace:
    """Adds ``--json`` (the file :func:`write_runs` writes), parses the command line and logs at
    WARNING level; returns the parsed arguments."""
    parser.add_argument("--json", help="write every run's figures here")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    return args


def announce(what: str) -> None:
    """Prints what the run measures, with the machine's load average, at once."""
    print(f"{what}; load average {os.getloadavg()[0]:.1f}", flush=True)


def training(args: argparse.Namespace) -> dict:
    """train_link_predictor's ``hidden_units``, ``steps``, ``eval_every`` and ``patience`` from
    the flags :func:`add_training_arguments` added."""
    return {name: getattr(args, flag) for name, flag in TRAINING_FLAGS.items()}


def link_metrics(result, source, pairs, y, *, seed: int, **kwargs) -> dict:
    """``evaluate_links`` of the trained ``result`` (its model and feature caches) on ``pairs``
    labelled ``y``, seed keys the ``id`` property, neighbourhoods drawn with ``seed``;
    ``kwargs`` (``draws``, ``exclude_splits``, ...) go to ``evaluate_links``."""
    from memgraph_tf.client.link_prediction import evaluate_links

    return evaluate_links(
        result.model,
        source,
        pairs,
        y,
        options={"id_property": "id"},
        seed=seed,
        feature_caches=result.feature_caches,
        **kwargs,
    )


def write_runs(path: str | None, runs: list) -> int:
    """Writes ``runs`` as JSON to ``path`` (nothing where ``path`` is None); returns 0, the
    benchmark's exit status."""
    if path:
        with open(path, "w") as f:
            json.dump(runs, f, indent=1)
    return 0
