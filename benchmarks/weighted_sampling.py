"""Weighted edge steps (``(:Account)-[:TRANSFER {weight: amount}]->(:Account)``, without
replacement, and ``{weight: amount, replace: true}``, with replacement) against uniform ones over
the same relationships, in the same run, through the embedded runtime (the real mgp.py).

The graph (_transfers.build): ``--accounts`` accounts, each with a random number (0 to
``2 * --degree``) of ``TRANSFER`` relationships to random accounts, each with a float ``amount``
(a tenth of them 0).
Rows (``tf_features.sample_typed``, fanouts (10, 5)):

1. **ids only**: the draw's cost alone (reading each relationship's property, summing, one
   ``rng.random()`` per neighbour instead of ``rng.sample``; with replacement, the running sums
   and one ``rng.random()`` and one bisection per slot);
2. **features**: with every sampled account's 16-float features, what a training batch pays.

Each weighted step is timed against the uniform one in its own pairing. Rounds alternate weighted
and uniform calls so that load on the machine hits both alike; seeds/s
is the median over rounds. The embedded runtime's per-call costs are not Memgraph's: compare the
ratios, not the absolute figures.

    .venv/bin/python benchmarks/weighted_sampling.py [--accounts N] [--degree N] [--seeds N]
        [--rounds N]
"""

from __future__ import annotations

import sys

# beside this file (the script's directory is on sys.path)
from _timing import paired_rates
from _transfers import PROPERTIES, UNIFORM, filled_slots, parser, prepare, print_row

WEIGHTED = "(:Account)-[:TRANSFER {weight: amount}]->(:Account)"
REPLACE = "(:Account)-[:TRANSFER {weight: amount, replace: true}]->(:Account)"


def main() -> int:
    args = parser(__doc__).parse_args()
    seeds, call = prepare(args)
    for name, props in PROPERTIES.items():
        uniform = call(UNIFORM, props)
        for kind, step in (("weighted", WEIGHTED), ("replace", REPLACE)):
            weighted = call(step, props)
            rates = paired_rates(seeds, weighted, uniform, args.rounds)
            slots = filled_slots(weighted, seeds), filled_slots(uniform, seeds)
            print_row(f"{name} {kind}", rates, f"{kind}/uniform", rates[0] / rates[1], slots)
    return 0


if __name__ == "__main__":
    sys.exit(main())
