"""The leakage gap of a random edge split on a graph that grows: test AUC of the same link
predictor trained and tested on a random split vs on a split by time, through the database path
(the embedded graph running the unchanged query module: ``tf_features.split_edges``,
``tf_features.sample_pairs``).

The generated graph (``--accounts``, ``--transfers``, seeded): accounts open one after another
(account ``i`` opens at a time spread uniformly over ``[0, 1000)``) and belong to one of
``--communities`` communities; an account's ``features`` are its community's one-hot plus
Gaussian noise (``--noise``), so one account's own features say little and its neighbourhood
says more. Each transfer happens at a uniform time ``ts`` in ``[0, 1000)`` from an account open
by then to another open account, of the same community with probability ``--affinity``, else
any. Undirected edges ``(:Account)-[:SENT]-(:Account)`` are the links.

Per seed, both splits of the same graph:

* **random**: ``split_edges`` with the seed and ``--val-fraction`` / ``--test-fraction``;
* **time**: ``split_edges`` with ``time_property: 'ts'`` and ``cutoffs = --cutoffs`` (train
  before t1, val before t2, test from t2; an edge's time is its first transfer's).

Each trains :func:`~memgraph_tf.client.link_prediction.train_link_predictor` on its train edges
(``exclude_splits: ["val", "test"]``), early stopping on its validation edges + as many
negatives, and is scored on its test edges + as many negatives with only the test split excluded
(``evaluate_links``). The random split lets training see the future (later transfers and the
accounts they involve); the time split tests on edges, and accounts, the model could not have
seen. Prints each run (with the share of test edges that touch an account no training edge
touches) and the mean gap (random AUC - time AUC).

**With and without point-in-time sampling, same run** (``--no-as-of`` leaves it out): on the split
by time, ``time`` samples as before (the step ``(:Account)-[:SENT]-(:Account)``: a training
pair's neighbourhoods hold every training-period transfer, later ones included, and its drawn
negatives are uniform over every account, the not-yet-opened ones included); ``time, as of``
walks ``(:Account)-[:SENT {time: ts}]-(:Account)`` as of each pair's time (training positives:
``options.pair_time: 'ts'``; validation and test pairs carry their time as a third column) and
the database draws each training negative among the accounts active by then. Both are scored on
the same pairs: the split's edges, each with one time-matched negative (the same source and an
account that had transferred by the edge's time and never with it), at the edge's time. The
random split keeps uniform non-edges. As of each pair's time no split needs holding out
(``exclude_splits`` none, in training and scoring alike): the time bound keeps every pair's
future out, and a test pair sees its whole past -- the earlier test-period transfers included --
as the deployed model would. ``time, as of, held out`` separates the two parts of the effect: as
of each pair's time, but with ``time``'s held-out splits (``["val", "test"]`` in training,
``["test"]`` in scoring), so that it sees exactly the relationships ``time`` sees, bounded by
each pair's time.

    .venv/bin/python benchmarks/temporal_links.py --seeds 0 1 2
"""

from __future__ import annotations

import argparse
import statistics
import time

# beside this file (the script's directory is on sys.path)
from _links import add_training_arguments, announce, link_metrics, parse_args, training, write_runs

PATTERN = "(:Account)-[:SENT]-(:Account)"
TIMED = "(:Account)-[:SENT {time: ts}]-(:Account)"
AS_OF_HELD_OUT = "time, as of, held out"
OPTIONS = {"id_property": "id"}
HORIZON = 1000


def labelled(positives, negatives):
    """The pairs ``positives`` then ``negatives``, with labels 1 and 0."""
    import numpy as np

    labels = np.r_[np.ones(len(positives)), np.zeros(len(negatives))]
    return np.concatenate([positives, negatives]), labels


def temporal_accounts(args, seed):
    """(EmbeddedGraph, number of accounts): accounts ``id = i`` with ``features``, transfers with
    an integer ``ts`` (module docstring)."""
    import numpy as np

    from memgraph_tf.embedded import EmbeddedGraph

    rng = np.random.default_rng(seed)
    n, k = args.accounts, args.communities
    opens = np.sort(rng.uniform(0, HORIZON * 0.95, n))
    opens[: max(2, n // 20)] = 0.0  # a first few accounts exist from the start
    community = rng.integers(0, k, n)
    feats = np.eye(k, dtype=np.float32)[community] + rng.normal(0, args.noise, (n, k))
    g = EmbeddedGraph()
    nodes = [
        g.add_node(["Account"], {"id": i, "features": [float(x) for x in feats[i]]})
        for i in range(n)
    ]
    for t in np.sort(rng.integers(0, HORIZON, args.transfers)):
        open_now = int(np.searchsorted(opens, t, side="right"))
        if open_now < 2:
            continue
        a = int(rng.integers(0, open_now))
        pool = np.flatnonzero(community[:open_now] == community[a])
        if rng.random() >= args.affinity or len(pool) < 2:
            pool = np.arange(open_now)
        b = int(rng.choice(pool))
        if a != b:
            g.add_edge(nodes[a], nodes[b], "SENT", {"ts": int(t)})
    return g, n


def split_pairs(g) -> dict:
    """split -> ``[m, 2]`` distinct undirected pairs (smaller id first) carrying it."""
    import numpy as np

    out: dict[str, set] = {"train": set(), "val": set(), "test": set()}
    for a, b, props in g.edges("SENT"):  # node i has internal id i and id i
        out[props["split"]].add((min(a, b), max(a, b)))
    return {s: np.array(sorted(v), dtype=np.int64).reshape(-1, 2) for s, v in out.items()}


def non_edges(g, n, counts, rng):
    """One ``[c, 2]`` array of uniform non-edges (no transfer either way) per count, disjoint."""
    import numpy as np

    known = {(min(a, b), max(a, b)) for a, b, _ in g.edges("SENT")}
    out = []
    for c in counts:
        drawn = []
        while len(drawn) < c:
            a, b = (int(x) for x in rng.integers(0, n, 2))
            pair = (min(a, b), max(a, b))
            if a != b and pair not in known:
                known.add(pair)
                drawn.append(pair)
        out.append(np.array(drawn, dtype=np.int64).reshape(-1, 2))
    return out


def edge_times(g) -> dict:
    """(smaller id, larger id) -> the first transfer's time, per undirected edge."""
    out: dict = {}
    for a, b, props in g.edges("SENT"):
        key = (min(a, b), max(a, b))
        out[key] = min(props["ts"], out.get(key, props["ts"]))
    return out


def timed_negatives(g, positives, rng):
    """``[m, 3]``: per positive ``(a, b)`` of ``positives``, ``(a, c, t)`` -- ``t`` the edge's
    time, ``c`` uniform among the accounts that had transferred by ``t``, never ``a`` nor an
    account ``a`` ever transferred with."""
    import numpy as np

    times = edge_times(g)
    first: dict = {}
    known: dict = {}
    for (a, b), t in times.items():
        for x, y in ((a, b), (b, a)):
            first[x] = min(t, first.get(x, t))
            known.setdefault(x, {x}).add(y)
    order = sorted(first, key=first.get)
    firsts = [first[n] for n in order]
    out = []
    for a, b in positives.tolist():
        t = times[(min(a, b), max(a, b))]
        active = int(np.searchsorted(firsts, t, side="right"))
        while True:
            c = order[int(rng.integers(0, active))]
            if c not in known[a]:
                break
        out.append((a, c, t))
    return np.array(out, dtype=np.int64).reshape(-1, 3)


def with_times(g, pairs):
    """``pairs`` ``[m, 2]`` with each edge's time as a third column."""
    import numpy as np

    times = edge_times(g)
    column = [times[(min(a, b), max(a, b))] for a, b in pairs.tolist()]
    return np.c_[pairs, np.array(column, dtype=np.int64)]


def run(args, seed, split):
    import numpy as np

    from memgraph_tf.client import EmbeddedSource
    from memgraph_tf.client.link_prediction import train_link_predictor

    g, n = temporal_accounts(args, seed)
    source = EmbeddedSource(g)
    if split.startswith("time"):
        opts = {"time_property": "ts", "cutoffs": list(args.cutoffs), **OPTIONS}
    else:
        fractions = {"val_fraction": args.val_fraction, "test_fraction": args.test_fraction}
        opts = {"seed": seed, **fractions, **OPTIONS}
    counts = source.split_edges(PATTERN, opts)
    pairs = split_pairs(g)
    rng = np.random.default_rng(seed)
    if split == "random":
        val_neg, test_neg = non_edges(g, n, (len(pairs["val"]), len(pairs["test"])), rng)
        val, val_y = labelled(pairs["val"], val_neg)
        test, test_y = labelled(pairs["test"], test_neg)
    else:  # time-matched negatives, the same for both time runs of a seed
        val, val_y = labelled(with_times(g, pairs["val"]), timed_negatives(g, pairs["val"], rng))
        test, test_y = labelled(
            with_times(g, pairs["test"]), timed_negatives(g, pairs["test"], rng)
        )
    as_of = split.startswith("time, as of")
    held_out = not as_of or split.endswith("held out")
    if not as_of:  # the pairs alone: no time column
        val, test = val[:, :2], test[:, :2]
    started = time.monotonic()
    result = train_link_predictor(
        source,
        "Account",
        {(TIMED if as_of else PATTERN): list(args.fanouts)},
        ["features"],
        pairs["train"],
        val,
        val_y,
        options={**OPTIONS, "pair_time": "ts"} if as_of else OPTIONS,
        exclude_splits=["val", "test"] if held_out else None,
        seed=seed,
        **training(args),
    )
    train_s = time.monotonic() - started
    seen = set(pairs["train"].ravel().tolist())
    cold = sum(a not in seen or b not in seen for a, b in pairs["test"].tolist())
    # The test period's relationships stay out of the neighbourhoods it is scored on (as of each
    # pair's time: those before it are its past, those after it never walked).
    excluded = ["test"] if held_out else None
    metrics = link_metrics(
        result, source, test, test_y, seed=seed, exclude_splits=excluded, draws=args.test_draws
    )
    return {
        "seed": seed,
        "split": split,
        "edges": {s: counts[s] for s in ("train", "val", "test")},
        "cold_test_edges": cold / max(1, len(pairs["test"])),
        "test_auc": metrics["auc"],
        "test_ap": metrics["ap"],
        "best_val_auc": result.best_val_auc,
        "train_s": train_s,
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--accounts", type=int, default=600)
    parser.add_argument("--transfers", type=int, default=4000)
    parser.add_argument("--communities", type=int, default=8)
    parser.add_argument("--noise", type=float, default=1.0)
    parser.add_argument("--affinity", type=float, default=0.85)
    parser.add_argument("--cutoffs", nargs=2, type=int, default=[750, 850])
    parser.add_argument("--val-fraction", type=float, default=0.10)
    parser.add_argument("--test-fraction", type=float, default=0.15)
    add_training_arguments(parser, steps=150, patience=75, hidden=32, test_draws=2)
    parser.add_argument(
        "--no-as-of", action="store_true", help="leave out the point-in-time runs (time, as of)"
    )
    args = parse_args(parser)
    announce(
        f"temporal links: {args.accounts} accounts, {args.transfers} transfers, cutoffs "
        f"{args.cutoffs}, random split {args.val_fraction}/{args.test_fraction}; "
        f"{args.steps} steps, fanouts {args.fanouts}"
    )
    rows = []
    splits = ("random", "time") + (() if args.no_as_of else ("time, as of", AS_OF_HELD_OUT))
    for seed in args.seeds:
        for split in splits:
            row = run(args, seed, split)
            rows.append(row)
            print(
                f"seed {seed} {split:21s}: edges {row['edges']}, test AUC {row['test_auc']:.3f} "
                f"AP {row['test_ap']:.3f} (best val AUC {row['best_val_auc']:.3f}, "
                f"{row['train_s']:.0f} s); test edges with an account no train edge has: "
                f"{row['cold_test_edges']:.0%}",
                flush=True,
            )
    auc = {s: [r["test_auc"] for r in rows if r["split"] == s] for s in splits}
    gaps = [a - b for a, b in zip(auc["random"], auc["time"])]
    print(
        f"test AUC: random split {statistics.mean(auc['random']):.3f}, time split "
        f"{statistics.mean(auc['time']):.3f}; leakage gap (random - time) {spread(gaps)} over "
        f"{len(gaps)} seeds"
    )
    for s in splits:
        val_gap = [r["best_val_auc"] - r["test_auc"] for r in rows if r["split"] == s]
        print(f"{s:21s}: best validation AUC - test AUC {spread(val_gap)}")
    for s in splits[2:]:
        effect = [a - b for a, b in zip(auc[s], auc["time"])]
        print(
            f"point in time on the time split ({s}): test AUC {statistics.mean(auc[s]):.3f} vs "
            f"{statistics.mean(auc['time']):.3f} without; effect {spread(effect)}"
        )
    return write_runs(args.json, rows)


def spread(values) -> str:
    """``mean +- standard deviation`` of ``values`` (0 for one value)."""
    deviation = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{statistics.mean(values):+.3f} +- {deviation:.3f}"


if __name__ == "__main__":
    raise SystemExit(main())
