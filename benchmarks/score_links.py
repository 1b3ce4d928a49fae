"""Batch link scoring throughput: ``score_links`` top-k on a medium graph (Cora in the
embedded runtime: 2,708 papers, every paper a source and a candidate target: 7.3 M pairs), with
an in-memory :class:`~memgraph_tf.client.link_prediction.LinkPredictor` (weights untrained: speed
does not depend on them).

Baseline, same run, same model and seed: :func:`~memgraph_tf.client.link_prediction.predict_links`
on ``--baseline-pairs`` candidate pairs -- one ``tf_features.sample_pairs`` blob per pair, the
pair model run on it, what scoring pairs one by one through the pair signature costs. Prints pairs/s
of both and the ratio, with the load average beside.

    .venv/bin/python benchmarks/score_links.py [--k 10] [--hidden 64] [--baseline-pairs 2000]
"""

from __future__ import annotations

import argparse
import os
import time

PATTERN = "(:Paper)-[:CITES]-(:Paper)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--fanouts", type=int, nargs="+", default=[10, 5])
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--baseline-pairs", type=int, default=2000)
    parser.add_argument(
        "--bundle",
        action="store_true",
        help="also export the model as an op-free link bundle and score with it (the CLI's path: "
        "embed_source / embed_target per node blob, score_embeddings on pair rows)",
    )
    args = parser.parse_args()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

    import keras
    import numpy as np

    from memgraph_tf import datasets
    from memgraph_tf.batch.links import ModelLinkBackend, score_links
    from memgraph_tf.client import EmbeddedSource
    from memgraph_tf.client.link_prediction import LinkPredictor, predict_links

    graph = datasets.planetoid_graph("cora")
    source = EmbeddedSource(graph)
    width = len(graph.get_property(0, "features"))
    keras.utils.set_random_seed(0)
    model = LinkPredictor(
        "Paper", {PATTERN: args.fanouts}, {"Paper": width}, hidden_units=args.hidden
    ).ensure_built()
    model.properties = {"Paper": ["features"]}
    backend = ModelLinkBackend(model, 1, seed=0)
    n = len(graph.nodes("Paper"))
    print(f"Cora: {n} nodes, k = {args.k}, hidden {args.hidden}, fanouts {args.fanouts}")
    print(f"load average before: {os.getloadavg()}")

    summary = score_links(
        source, backend, k=args.k, relationship_type="CITES", batch_size=args.batch_size
    )
    print(summary.text())

    if args.bundle:
        import tempfile

        from memgraph_tf.batch.links import BundleLinkBackend
        from memgraph_tf.serving.export_links import export_link_bundle

        with tempfile.TemporaryDirectory() as base:
            export_link_bundle(model, base, "links", 2, sample_options={"seed": 0}, warmup=False)
            bundle = BundleLinkBackend(f"{base}/links")
            bundle.embed("src", source.sample_typed([0], *bundle.sampling("src")))  # first call
            bundle.embed("dst", source.sample_typed([0], *bundle.sampling("dst")))  # not timed
            fresh = EmbeddedSource(datasets.planetoid_graph("cora"))
            served = score_links(
                fresh, bundle, k=args.k, relationship_type="CITES", batch_size=args.batch_size
            )
            print(f"op-free bundle: {served.text()}")

    rng = np.random.default_rng(0)
    pairs = rng.integers(0, n, (args.baseline_pairs, 2))
    predict_links(model, source, pairs[:64], options={"seed": 0})  # trace once, not timed
    start = time.perf_counter()
    predict_links(model, source, pairs, options={"seed": 0}, batch_size=args.batch_size)
    base_s = time.perf_counter() - start
    base = len(pairs) / base_s
    print(
        f"baseline predict_links (one sample_pairs blob per pair): {len(pairs)} pairs in "
        f"{base_s:.1f} s = {base:,.0f} pairs/s"
    )
    print(
        f"score_links top-k: {summary.pairs_per_s:,.0f} pairs/s = "
        f"{summary.pairs_per_s / base:.1f}x the baseline"
    )
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
