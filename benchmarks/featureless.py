"""Link prediction on Cora *without node features*, the GAE protocol (Kipf and Welling 2016:
GAE without features, test AUC 0.843 / AP 0.881), every option for a featureless label in one run.

The graph holds only the citations: nodes carry an ``id`` and nothing else. Per seed:

1. ``tf_features.split_edges`` splits the undirected edges 85/5/10 (self-loops dropped, as GAE
   does); validation and test get as many uniform non-edges as they have edges
   (benchmarks/link_accuracy.py's protocol and helpers);
2. ``tf_features.structural_write`` computes, on the training graph only
   (``exclude_splits: ["val", "test"]``), the degree features (``degree``: log(1 + degree) per
   type and direction) and the FastRP embedding (``fastrp``) of every node;
3. the options, each scored on the same test pairs:

   * ``popularity``: score = deg(a) * deg(b) on the training graph (no model);
   * ``fastrp-cosine``: the cosine of the two FastRP vectors (no model);
   * ``degree``: the link predictor (typed GraphSAGE, dot scorer) on the degree features;
   * ``fastrp``: the same link predictor on the FastRP features;
   * ``default`` (with ``--options``): the link predictor given no feature at all, as a user
     would call it: the trainer writes the FastRP embedding itself (the procedure's defaults, the
     run's seed, val and test left out) and reads it through a feature spec (the per-slot path,
     slower); with the default ``--dimension``, ``--weights``, ``--self-weight`` and ``--beta``
     the same computation as ``fastrp`` (tests/client/test_structural_default.py);
   * ``fastrp+degree`` (with ``--options``): the same on both;
   * ``learned`` (with ``--options``): the same link predictor on learned per-node embeddings
     alone (transductive: ``node_embedding_dim``; a test node without a training edge gets the
     shared out-of-vocabulary vector);
   * ``learned+fastrp`` (with ``--options``): learned embeddings beside the FastRP features.

``--compare-cache`` trains each trained option twice, with the feature cache (the default: one
``tf_features.pack`` per label, or the raw columns of a feature-spec label read once) and without
it (the features in every blob), and prints the median seconds per training step of both.

The training settings default to the link trainer's own (128 units, up to 300 steps, patience
100). Prints each run, then per option the mean and spread over the seeds beside the published
figure.

    .venv/bin/python benchmarks/featureless.py --seeds 0 1 2 3 4
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _links import add_training_arguments, announce, link_metrics, parse_args, training, write_runs
from link_accuracy import auc_ap, gae_split

PATTERN = "(:Paper)-[:CITES]-(:Paper)"
PUBLISHED = (0.843, 0.881)  # Kipf and Welling 2016, GAE without features on Cora (AUC, AP)
OPTIONS = {"id_property": "id"}
HELD_OUT = ["val", "test"]
TRAINED = {  # option -> (feature properties, learned node embedding width)
    "degree": (["degree"], 0),
    "fastrp": (["fastrp"], 0),
    "default": ([], 0),
    "fastrp+degree": (["fastrp", "degree"], 0),
    "learned": ([], 64),
    "learned+fastrp": (["fastrp"], 64),
}
ALL = ("popularity", "fastrp-cosine", *TRAINED)
DEFAULT = ("popularity", "fastrp-cosine", "degree", "fastrp")


def load():
    """(EmbeddedGraph of Cora's citations with ``id`` only, EmbeddedSource, Planetoid)."""
    from memgraph_tf.client import EmbeddedSource
    from memgraph_tf.datasets import load_dataset
    from memgraph_tf.embedded import EmbeddedGraph

    data = load_dataset("cora")
    data = dataclasses.replace(data, edges=[(a, b) for a, b in data.edges if a != b])
    g = EmbeddedGraph.from_edge_list(
        data.edges,
        num_nodes=data.num_nodes,
        label="Paper",
        edge_type="CITES",
        node_properties={"id": list(range(data.num_nodes))},
    )
    return g, EmbeddedSource(g), data


def structural(g, source, args, seed):
    """Writes ``degree`` and ``fastrp`` on every paper (training graph only); returns the
    numpy arrays ``(degree count, fastrp)`` read back from the graph (node ``i`` has id ``i``)."""
    import numpy as np

    from memgraph_tf.client.structural import write_structural_features

    common = {**OPTIONS, "exclude_splits": HELD_OUT, "seed": seed}
    fastrp = {
        **common,
        "features": ["fastrp"],
        "dimension": args.dimension,
        "iteration_weights": args.weights,
        "self_weight": args.self_weight,
        "normalization_strength": args.beta,
    }
    write_structural_features(source, "Paper", {**fastrp, "write_property": "fastrp"})
    degree = {**common, "features": ["degree"], "write_property": "degree"}
    write_structural_features(source, "Paper", degree)
    write_structural_features(source, "Paper", {**degree, "degree": "count", "write_property": "n"})
    nodes = range(g.node_count)
    count = np.array([sum(g.get_property(i, "n")) for i in nodes])
    return count, np.array([g.get_property(i, "fastrp") for i in nodes])


def scores_without_model(pairs, degree, fastrp):
    import numpy as np

    a, b = pairs[:, 0], pairs[:, 1]
    norm = np.linalg.norm(fastrp, axis=1) + 1e-12
    cosine = (fastrp[a] * fastrp[b]).sum(axis=1) / (norm[a] * norm[b])
    return {"popularity": degree[a] * degree[b], "fastrp-cosine": cosine}


def run(source, g, data, seed, args):
    import numpy as np

    from memgraph_tf.client.link_prediction import train_link_predictor
    from memgraph_tf.client.metrics import average_precision, roc_auc

    splits, _, (val, val_y), (test, test_y) = gae_split(source, g, data, seed)
    started = time.monotonic()
    degree, fastrp = structural(g, source, args, seed)
    rows = []
    structural_s = time.monotonic() - started
    for name, scores in scores_without_model(test, degree, fastrp).items():
        if name in args.options:
            auc, ap = roc_auc(test_y, scores), average_precision(test_y, scores)
            rows.append({"option": name, "seed": seed, "test_auc": auc, "test_ap": ap})
    modes = (True, False) if args.compare_cache else (True,)
    for name, (props, width), cached in (
        (n, t, c) for n, t in TRAINED.items() if n in args.options for c in modes
    ):
        started = time.monotonic()
        result = train_link_predictor(
            source,
            "Paper",
            {PATTERN: list(args.fanouts)},
            props,
            splits["train"],
            val,
            val_y,
            options=OPTIONS,
            seed=seed,
            node_embedding_dim=width,
            use_feature_cache=cached,
            **training(args),
        )
        train_s = time.monotonic() - started
        metrics = link_metrics(result, source, test, test_y, seed=seed, draws=args.test_draws)
        rows.append(
            {
                "option": name,
                "seed": seed,
                "test_auc": metrics["auc"],
                "test_ap": metrics["ap"],
                "best_val_auc": result.best_val_auc,
                "best_step": result.best_step,
                "train_s": round(train_s, 1),
                "feature_cache": cached,
                "step_s": float(
                    np.median(np.add(result.history["wait_s"], result.history["step_s"]))
                ),
            }
        )
    for row in rows:
        row["structural_s"] = round(structural_s, 2)
        print(json.dumps(row), flush=True)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
    parser.add_argument("--options", nargs="+", default=list(DEFAULT), choices=ALL)
    add_training_arguments(parser, steps=300, patience=100, hidden=128, test_draws=3)
    parser.add_argument("--dimension", type=int, default=256, help="FastRP dimension")
    parser.add_argument("--weights", nargs="+", type=float, default=[0.0, 0.0, 1.0, 1.0, 1.0, 1.0])
    parser.add_argument("--self-weight", type=float, default=0.0)
    parser.add_argument("--beta", type=float, default=0.0, help="FastRP normalization strength")
    parser.add_argument(
        "--compare-cache",
        action="store_true",
        help="train each trained option also with use_feature_cache=False and print the median "
        "seconds per training step of both",
    )
    args = parse_args(parser)
    announce(
        f"Cora without features, GAE protocol; fanouts {args.fanouts}, {args.hidden} units, up to "
        f"{args.steps} steps; FastRP d={args.dimension} weights {args.weights} self "
        f"{args.self_weight} beta {args.beta}"
    )
    g, source, data = load()
    runs = []
    for seed in args.seeds:
        runs += run(source, g, data, seed, args)
    print()
    for name in args.options:
        mine = [r for r in runs if r["option"] == name and r.get("feature_cache", True)]
        auc, auc_sd, ap, ap_sd = auc_ap(mine)
        print(
            f"{name:14s} test AUC {auc:.3f} +- {auc_sd:.3f}  AP {ap:.3f} +- {ap_sd:.3f}  "
            f"({len(mine)} seeds; AUC {auc / PUBLISHED[0]:.3f}x, AP {ap / PUBLISHED[1]:.3f}x "
            "the published GAE without features)"
        )
    if args.compare_cache:
        print_cache_figures(runs)
    return write_runs(args.json, runs)


def print_cache_figures(runs):
    """Per trained option: the median seconds per training step with the feature cache and
    without it (the features sampled in every blob), their ratio, and whether the test AUC and
    the loss curve's end agree (they should be the same: the cache gives the model the same
    inputs)."""
    import numpy as np

    for name in dict.fromkeys(r["option"] for r in runs if "feature_cache" in r):
        on = [r for r in runs if r["option"] == name and r["feature_cache"]]
        off = [r for r in runs if r["option"] == name and not r["feature_cache"]]
        cached, sampled = (
            np.median([r["step_s"] for r in on]),
            np.median([r["step_s"] for r in off]),
        )
        same = [a["test_auc"] == b["test_auc"] for a, b in zip(on, off)]
        print(
            f"{name:14s} step {cached * 1e3:.1f} ms with the cache, {sampled * 1e3:.1f} ms "
            f"without ({sampled / cached:.2f}x); same test AUC: {all(same)}"
        )


if __name__ == "__main__":
    sys.exit(main())
