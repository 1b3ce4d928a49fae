"""The transfer graph and command line the valued-step sampling benchmarks (weighted_sampling.py,
timed_sampling.py) share: accounts with 16-float features, random ``TRANSFER`` relationships with
a float ``amount`` and an integer time ``ts``, in the embedded runtime (the real mgp.py), and
``tf_features.sample_typed`` calls over it. Imported from beside them (the script's directory is
on sys.path)."""

from __future__ import annotations

import argparse
import os
import random
from collections.abc import Callable
from typing import Any

#: The untimed, unweighted step over every TRANSFER: the baseline of every row.
UNIFORM = "(:Account)-[:TRANSFER]->(:Account)"
#: The rows' properties: the draw's cost alone, and with what a training batch reads.
PROPERTIES = {"ids only": {}, "features": {"Account": ["features"]}}
#: Relationship and seed times are drawn uniformly from [0, HORIZON).
HORIZON = 1_000_000


def parser(doc: str | None, *, rounds: int = 5) -> argparse.ArgumentParser:
    """``--accounts`` (20,000), ``--degree`` (15), ``--seeds`` (500) and ``--rounds``
    (``rounds``); ``--help`` shows ``doc`` (the script's docstring) as written."""
    out = argparse.ArgumentParser(
        description=doc, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    out.add_argument("--accounts", type=int, default=20_000)
    out.add_argument("--degree", type=int, default=15, help="mean relationships per account")
    out.add_argument("--seeds", type=int, default=500, help="seeds per call")
    out.add_argument("--rounds", type=int, default=rounds)
    return out


def build(accounts: int, degree: int) -> tuple[Any, list[int]]:
    """``(graph, account node ids)``: ``accounts`` accounts (``id``, 16-float ``features``, an
    integer time ``ts``), each with 0 to ``2 * degree`` ``TRANSFER`` relationships to random
    accounts, each with a float ``amount`` (a tenth of them 0) and an integer ``ts``. The same
    arguments give the same graph; the times come from a generator of their own, so the
    structure and amounts do not depend on them."""
    from memgraph_tf.embedded import EmbeddedGraph

    rng, clock = random.Random(20261129), random.Random(20261130)
    g = EmbeddedGraph()
    ids = [
        g.add_node(
            ["Account"],
            {
                "id": i,
                "features": [rng.random() for _ in range(16)],
                "ts": clock.randrange(HORIZON),
            },
        )
        for i in range(accounts)
    ]
    for a in ids:
        for _ in range(rng.randint(0, 2 * degree)):
            amount = 0.0 if rng.random() < 0.1 else rng.uniform(1, 1000)
            props = {"amount": amount, "ts": clock.randrange(HORIZON)}
            g.add_edge(a, ids[rng.randrange(accounts)], "TRANSFER", props)
    return g, ids


def prepare(args: argparse.Namespace) -> tuple[int, Callable[..., Callable[[], Any]]]:
    """``(seeds per call, call)`` for the :func:`parser`'s ``args``: builds :func:`build`'s
    graph, prints its size, the seeds per call, the rounds and the load average, and gives
    :func:`sampler`'s ``call`` over the first ``args.seeds`` accounts."""
    g, ids = build(args.accounts, args.degree)
    seeds = ids[: args.seeds]
    print(
        f"transfer graph: {g.node_count} nodes, {g.edge_count} relationships; {len(seeds)} seeds "
        f"per call, {args.rounds} rounds; load average {os.getloadavg()[0]:.1f}",
        flush=True,
    )
    return len(seeds), sampler(g, seeds)


def filled_slots(call: Callable[[], Any], seeds: int) -> float:
    """The mean number of filled (valid) neighbour slots per seed of the blob ``call`` returns,
    all hops together."""
    from memgraph_tf import blob

    sections = blob.unpack(blob.b64decode(call()[0]["blob"]))
    return sum(int(v.sum()) for k, v in sections.items() if k.startswith("mask_h")) / seeds


def print_row(what: str, rates: tuple[float, float], name: str, ratio: float, slots: tuple) -> None:
    """Prints one row: ``what``, its rate and the uniform step's (``rates``, seeds/s), ``ratio``
    (named ``name``) and the filled slots per seed of each (``slots``)."""
    print(
        f"{what:32s} {rates[0]:6.0f} seeds/s  uniform {rates[1]:6.0f} seeds/s  {name} "
        f"{ratio:.2f}x  slots/seed {slots[0]:.1f} (uniform {slots[1]:.1f})",
        flush=True,
    )


def sampler(g: Any, seeds: list[int]) -> Callable[..., Callable[[], Any]]:
    """``call(step, properties, **options)``: a function that calls ``tf_features.sample_typed``
    on ``g`` for ``seeds`` over ``step`` with fanouts (10, 5), ``properties`` and the options
    (label ``Account``, seed 7, then ``options``)."""

    def call(step: str, properties: dict, **options: Any) -> Callable[[], Any]:
        opts = {"label": "Account", "seed": 7, **options}
        return lambda: g.call("tf_features.sample_typed", seeds, {step: [10, 5]}, properties, opts)

    return call
