"""Helpers the typed GraphSAGE accuracy benchmarks on generated graphs (strong_ties.py,
temporal_leakage.py, property_features.py) share: their command line (``--seeds``, the
graph's numbers, the training flags, ``--json``), one model's training with those flags, the
figures' means and spreads over the seeds and their JSON. Imported from beside them (the script's
directory is on sys.path)."""

from __future__ import annotations

import argparse
import json
import statistics
from typing import Any

#: train_typed_graphsage's keyword arguments and the flags (argparse destinations) that give them.
TRAINING_FLAGS = {
    "steps": "steps",
    "eval_every": "eval_every",
    "batch_size": "batch_size",
    "hidden_units": "hidden",
}
#: The training flags' defaults but --steps' (argparse destinations).
TRAINING_DEFAULTS = {"eval_every": 25, "batch_size": 256, "hidden": 32}


def parser(
    doc: str | None, *, steps: int, json_what: str, **numbers: int | float
) -> argparse.ArgumentParser:
    """A parser with ``--seeds`` (0 1 2), one option ``--NAME`` per keyword of ``numbers`` (``_``
    written ``-``) of its default's type with that default, the training flags :func:`train`
    reads (--steps, default ``steps``; --eval-every 25; --batch-size 256; --hidden 32) and
    ``--json`` (a switch: print ``json_what`` as JSON too); ``--help`` shows ``doc`` (the
    script's docstring) as written."""
    out = argparse.ArgumentParser(
        description=doc, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    out.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    for name, default in {**numbers, "steps": steps, **TRAINING_DEFAULTS}.items():
        out.add_argument("--" + name.replace("_", "-"), type=type(default), default=default)
    out.add_argument("--json", action="store_true", help=f"print {json_what} as JSON too")
    return out


def train(
    source: Any,
    label: str,
    num_neighbors: dict,
    properties: dict,
    *split: Any,
    args: argparse.Namespace,
    seed: int,
    l2: float = 1e-4,
    **kwargs: Any,
) -> Any:
    """``train_typed_graphsage``'s result for ``label`` seeds of ``source`` (``split``: the train
    and validation seed keys, or none for the graph's ``split`` property) with the training flags
    of :func:`parser`, dropout 0.1, weight decay ``l2`` and ``seed``; ``kwargs``
    (``options``, ``num_classes``, ``feature_spec``, ...) go to ``train_typed_graphsage``."""
    from memgraph_tf.client.typed_graphsage import train_typed_graphsage

    return train_typed_graphsage(
        source,
        label,
        num_neighbors,
        properties,
        *split,
        **{name: getattr(args, flag) for name, flag in TRAINING_FLAGS.items()},
        dropout=0.1,
        l2=l2,
        seed=seed,
        **kwargs,
    )


def spread(xs: list[float]) -> str:
    """``xs``'s mean +- its sample standard deviation (0 for one value), four decimals."""
    sd = statistics.stdev(xs) if len(xs) > 1 else 0.0
    return f"{statistics.mean(xs):.4f} +- {sd:.4f}"


def print_spreads(runs: list[dict], figures: dict[str, str]) -> None:
    """Prints a line per entry of ``figures``: its title, padded to 14 characters, and the
    :func:`spread` of the figure it names over ``runs``."""
    for title, key in figures.items():
        print(f"{title:14s} {spread([r[key] for r in runs])}")


def print_json(args: argparse.Namespace, figures: Any) -> int:
    """Prints ``figures`` as JSON where the command line has :func:`parser`'s ``--json``;
    returns 0, the benchmark's exit status."""
    if args.json:
        print(json.dumps(figures))
    return 0


def ledger(args: argparse.Namespace, seed: int, flags: dict, **fixed: Any) -> tuple:
    """``(graph, source, train, val, test)``: ``ledger_graph`` of ``args.accounts`` customers
    with the ``flags`` (a script's ``GRAPH`` table) read from ``args``, ``fixed`` and ``seed``,
    in the embedded runtime, and its split's seed keys."""
    from memgraph_tf.client import EmbeddedSource
    from memgraph_tf.ledger_datasets import ledger_embedded_graph, ledger_graph

    graph = ledger_graph(args.accounts, **{k: getattr(args, k) for k in flags}, **fixed, seed=seed)
    source = EmbeddedSource(ledger_embedded_graph(graph)[0])
    return (graph, source, *(graph.ids(s) for s in ("train", "val", "test")))


def train_ledger(
    source: Any, graph: Any, step: str, fanout: int, *split: Any, **kwargs: Any
) -> Any:
    """:func:`train` on the ledger's customers (their ``features``) through ``step`` with
    ``fanout``; ``kwargs``: :func:`train`'s (``args``, ``seed``, ``options``)."""
    from memgraph_tf.ledger_datasets import LABEL

    return train(
        source,
        LABEL,
        {step: [fanout]},
        {LABEL: ["features"]},
        *split,
        num_classes=graph.num_classes,
        **kwargs,
    )


def ledger_parser(doc: str | None, flags: dict, **numbers: int | float) -> argparse.ArgumentParser:
    """:func:`parser` with the ledger benchmarks' shared defaults (200 steps, 2 evaluation
    draws, ``--json`` of every run), the graph ``flags`` (a script's ``GRAPH`` table) and
    ``numbers`` (e.g. ``accounts``)."""
    return parser(doc, steps=200, json_what="every run", **numbers, draws=2, **flags)
