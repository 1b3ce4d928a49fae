"""Link prediction on Cora and Citeseer under the GAE protocol (Kipf and Welling 2016), trained and
evaluated through the database path: the embedded graph running the unchanged query
module, ``tf_features.split_edges`` for the split, ``tf_features.sample_pairs`` for every batch.

Per dataset and seed:

1. the undirected citation edges (self-loops dropped, as GAE does) are split 85/5/10 by
   ``tf_features.split_edges`` with that seed, written on the relationships;
2. validation and test get as many non-edges as they have edges: pairs drawn uniformly, neither
   an edge of the whole graph nor a self-pair, none in both sets;
3. :func:`~memgraph_tf.client.link_prediction.train_link_predictor` trains on the train edges
   (one database-drawn negative per positive, ``exclude_splits: ["val", "test"]``, each pair's own
   relationship removed by the procedure), early stopping on validation AUC;
4. test AUC and AP (:func:`~memgraph_tf.client.link_prediction.evaluate_links`, held-out edges
   absent from every neighbourhood, ``--test-draws`` neighbourhood draws averaged).

Features are row-normalised (each node's bag of words divided by its word count) before they are
written into the graph. The same-run baseline is the untrained encoder (step 0) on the same test
pairs. Prints each run, then mean and spread beside the published GAE / VGAE figures.

``--leak``: the check that removing the pair's own edge matters: the same training with
``keep_pair_edges`` (each endpoint's neighbourhood from ``sample_typed``, so a training pair's own
relationship is visible) against the normal model, each scored on 500 training edges + 500
non-edges as it was trained, and on the test pairs.

    .venv/bin/python benchmarks/link_accuracy.py --datasets cora --seeds 0 1 2 3 4 [--leak]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
import time

# beside this file (the script's directory is on sys.path)
from _links import add_training_arguments, announce, link_metrics, parse_args, training, write_runs

PATTERN = "(:Paper)-[:CITES]-(:Paper)"
PUBLISHED = {  # (AUC, AP), Kipf and Welling, "Variational Graph Auto-Encoders", 2016, table 1
    "cora": {"GAE": (0.910, 0.920), "VGAE": (0.914, 0.926)},
    "citeseer": {"GAE": (0.895, 0.899), "VGAE": (0.908, 0.920)},
}
OPTIONS = {"id_property": "id"}


def load(name: str):
    """(EmbeddedGraph, EmbeddedSource, Planetoid without self-loops, features row-normalised)."""
    import numpy as np

    from memgraph_tf.client import EmbeddedSource
    from memgraph_tf.datasets import load_dataset, planetoid_graph

    data = load_dataset(name)
    feats = data.features.astype(np.float32)
    feats = feats / np.maximum(feats.sum(axis=1, keepdims=True), 1e-12)
    edges = [(a, b) for a, b in data.edges if a != b]
    data = dataclasses.replace(data, features=feats, edges=edges)
    g = planetoid_graph(data)
    return g, EmbeddedSource(g), data


def read_splits(g) -> dict:
    """split -> ``[n, 2]`` (source id, target id) of the relationships carrying it (read from the
    embedded store: node ``i`` has ``id`` i)."""
    import numpy as np

    store = g._store  # the embedded graph has no public reader of relationship properties
    out: dict[str, list] = {"train": [], "val": [], "test": []}
    for a, b, props in zip(store.esrc, store.edst, store.eprops):
        out[props["split"]].append((a, b))
    return {k: np.array(v, dtype=np.int64).reshape(-1, 2) for k, v in out.items()}


def non_edges(data, counts, rng):
    """One ``[k, 2]`` array of uniform non-edges per count, disjoint."""
    import numpy as np

    known = {(min(a, b), max(a, b)) for a, b in data.edges}
    out = []
    for k in counts:
        drawn = []
        while len(drawn) < k:
            a, b = (int(x) for x in rng.integers(0, data.num_nodes, 2))
            pair = (min(a, b), max(a, b))
            if a == b or pair in known:
                continue
            known.add(pair)
            drawn.append(pair)
        out.append(np.array(drawn, dtype=np.int64))
    return out


def sd(values):
    return statistics.stdev(values) if len(values) > 1 else 0.0


def auc_ap(rows) -> tuple[float, float, float, float]:
    """The mean test AUC of ``rows``, its standard deviation (0 for one row), the mean test AP
    and its standard deviation."""
    aucs = [r["test_auc"] for r in rows]
    aps = [r["test_ap"] for r in rows]
    return statistics.mean(aucs), sd(aucs), statistics.mean(aps), sd(aps)


def labelled(pos, neg):
    import numpy as np

    return np.concatenate([pos, neg]), np.r_[np.ones(len(pos)), np.zeros(len(neg))]


def gae_split(source, g, data, seed):
    """Splits the citation edges with ``seed`` (the split written into the graph ``g``) and
    labels each held-out part with as many non-edges: ``(splits, rng, (val, val_y), (test,
    test_y))``, ``rng`` seeded with ``seed`` and past the negatives' draws."""
    import numpy as np

    source.split_edges(PATTERN, {"seed": seed, **OPTIONS})
    splits = read_splits(g)
    rng = np.random.default_rng(seed)
    val_neg, test_neg = non_edges(data, (len(splits["val"]), len(splits["test"])), rng)
    return splits, rng, labelled(splits["val"], val_neg), labelled(splits["test"], test_neg)


def run(name, g, source, data, seed, args, keep_pair_edges=False):
    from memgraph_tf.client.link_prediction import train_link_predictor

    splits, rng, (val, val_y), (test, test_y) = gae_split(source, g, data, seed)
    nn = {PATTERN: list(args.fanouts)}
    started = time.monotonic()
    result = train_link_predictor(
        source,
        "Paper",
        nn,
        ["features"],
        splits["train"],
        val,
        val_y,
        options=OPTIONS,
        keep_pair_edges=keep_pair_edges,
        seed=seed,
        scorer=args.scorer,
        **training(args),
    )
    train_s = time.monotonic() - started
    metrics = link_metrics(result, source, test, test_y, seed=seed, draws=args.test_draws)
    out = {
        "dataset": name,
        "seed": seed,
        "test_auc": metrics["auc"],
        "test_ap": metrics["ap"],
        "best_val_auc": result.best_val_auc,
        "best_step": result.best_step,
        "steps": len(result.history["step"]),
        "train_s": train_s,
        "splits": {k: len(v) for k, v in splits.items()},
    }
    if args.leak:
        pick = rng.choice(len(splits["train"]), 500, replace=False)
        [train_neg] = non_edges(data, (500,), rng)
        pairs, y = labelled(splits["train"][pick], train_neg)
        seen = link_metrics(result, source, pairs, y, seed=seed, keep_pair_edges=keep_pair_edges)
        out["train_pairs_auc"], out["train_pairs_ap"] = seen["auc"], seen["ap"]
    return result, test, test_y, out


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--datasets", nargs="+", default=["cora"], choices=sorted(PUBLISHED))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
    add_training_arguments(parser, steps=400, patience=100, hidden=128, test_draws=3)
    parser.add_argument("--scorer", default="dot", choices=["dot", "mlp"])
    parser.add_argument("--leak", action="store_true", help="also the keep-pair-edges ablation")
    args = parse_args(parser)

    from memgraph_tf.client.link_prediction import (
        LinkPredictor,
        evaluate_links,
    )

    announce(
        f"link prediction, GAE protocol, through tf_features.sample_pairs (embedded); "
        f"fanouts {args.fanouts}, {args.hidden} units, scorer {args.scorer}, up to "
        f"{args.steps} steps"
    )
    runs = []
    for name in args.datasets:
        t0 = time.monotonic()
        g, source, data = load(name)
        print(
            f"{name}: {data.num_nodes} nodes, {len(data.edges)} edges, loaded in "
            f"{time.monotonic() - t0:.0f} s",
            flush=True,
        )
        rows = []
        for seed in args.seeds:
            result, test, test_y, row = run(name, g, source, data, seed, args)
            if seed == args.seeds[0]:  # the same-run baseline: the untrained encoder
                import keras

                keras.utils.set_random_seed(seed)
                fresh = LinkPredictor.from_config(result.model.get_config())
                fresh.ensure_built()
                base = evaluate_links(
                    fresh,
                    source,
                    test,
                    test_y,
                    options=OPTIONS,
                    seed=seed,
                    feature_caches=result.feature_caches,
                    draws=args.test_draws,
                    properties=result.model.properties,
                )
                row["untrained_test_auc"], row["untrained_test_ap"] = base["auc"], base["ap"]
            rows.append(row)
            print(json.dumps(row), flush=True)
        auc, auc_sd, ap, ap_sd = auc_ap(rows)
        print(
            f"\n{name}: test AUC {auc:.3f} +- {auc_sd:.3f}, AP {ap:.3f} +- {ap_sd:.3f} "
            f"({len(rows)} seeds; untrained encoder, seed {args.seeds[0]}: AUC "
            f"{rows[0]['untrained_test_auc']:.3f}, AP {rows[0]['untrained_test_ap']:.3f})"
        )
        for model, (p_auc, p_ap) in PUBLISHED[name].items():
            print(
                f"  published {model:5s} AUC {p_auc:.3f} AP {p_ap:.3f}   ours/published: AUC "
                f"{auc / p_auc:.3f}x AP {ap / p_ap:.3f}x"
            )
        if args.leak:
            seed = args.seeds[0]
            _, _, _, leaky = run(name, g, source, data, seed, args, keep_pair_edges=True)
            leaky["keep_pair_edges"] = True
            print(json.dumps(leaky), flush=True)
            normal = rows[0]
            print(
                f"  pair's own edge removed (seed {seed}): training pairs AUC "
                f"{normal['train_pairs_auc']:.3f}, test AUC {normal['test_auc']:.3f}"
            )
            print(
                f"  pair's own edge visible (seed {seed}): training pairs AUC "
                f"{leaky['train_pairs_auc']:.3f}, test AUC {leaky['test_auc']:.3f}"
            )
            rows.append(leaky)
        runs += rows
        print(flush=True)
    return write_runs(args.json, runs)


if __name__ == "__main__":
    sys.exit(main())
