"""Point-in-time edge steps (``(:Account)-[:TRANSFER {time: ts}]->(:Account)``) against the
untimed uniform step over the same relationships, in the same run, through the embedded runtime
(the real mgp.py).

The graph (_transfers.build): ``--accounts`` accounts, each with an integer time ``ts`` and a
random number (0 to ``2 * --degree``) of ``TRANSFER`` relationships to random accounts, each with
an integer ``ts``; times uniform in [0, 1,000,000). Each row times ``tf_features.sample_typed``
(fanouts (10, 5)) over the timed step with the seeds' times from

* ``options.seed_time: 'ts'``: each seed's own property (about half of the relationships are not
  after a seed's time), or
* ``options.at``: one time for every seed (``--at``, default 1,000,000: every relationship
  qualifies, the present, as a served request without an older ``at`` sees it),

and ``options.time_order`` ``'uniform'`` (the untimed draw among the qualifying neighbours) or
``'most_recent'`` (the latest first, no random draw); ids only (the draw's cost: reading each
relationship's time, filtering per seed row and hop) and with every sampled account's 16-float
features (what a training batch pays).

Every round calls the untimed uniform step and the four timed ones in turn, so that load on the
machine hits all alike; seeds/s is the median over rounds, and timed/uniform the median over rounds
of the uniform call's time over the timed call's in the same round (load that drifts between rounds
cancels). The embedded runtime's per-call costs are not Memgraph's: compare
the ratios, not the absolute figures.

    .venv/bin/python benchmarks/timed_sampling.py [--accounts N] [--degree N] [--seeds N]
        [--rounds N] [--at T]
"""

from __future__ import annotations

import statistics
import sys

# beside this file (the script's directory is on sys.path)
from _timing import alternating_times, round_ratio
from _transfers import HORIZON, PROPERTIES, UNIFORM, filled_slots, parser, prepare, print_row

TIMED = "(:Account)-[:TRANSFER {time: ts}]->(:Account)"
ORDERS = ("uniform", "most_recent")


def main() -> int:
    cli = parser(__doc__, rounds=9)
    cli.add_argument("--at", type=int, default=HORIZON, help="options.at's time")
    args = cli.parse_args()
    seeds, call = prepare(args)
    timings = {"seed_time": {"seed_time": "ts"}, f"at {args.at}": {"at": args.at}}
    for name, props in PROPERTIES.items():
        rows = {
            f"{name} {timing} {order}": call(TIMED, props, **opts, time_order=order)
            for timing, opts in timings.items()
            for order in ORDERS
        }
        baseline = call(UNIFORM, props)
        uniform, *times = alternating_times([baseline, *rows.values()], args.rounds)
        u_rate, u_slots = seeds / statistics.median(uniform), filled_slots(baseline, seeds)
        for (what, timed), spent in zip(rows.items(), times):
            rates = seeds / statistics.median(spent), u_rate
            slots = filled_slots(timed, seeds), u_slots
            print_row(what, rates, "timed/uniform", round_ratio(spent, uniform), slots)
    return 0


if __name__ == "__main__":
    sys.exit(main())
