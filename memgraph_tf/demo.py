"""The end-to-end demo (``memgraph-tf demo``): the whole path a user's data takes, on Cora.

1. Load the Planetoid graph into the in-process Memgraph runtime (``datasets.planetoid_graph``), where the
   unchanged ``query_modules/tf_features.py`` runs through Memgraph's real ``mgp.py``.
2. Train GraphSAGE with features and neighbourhoods coming only through ``tf_features.*`` blobs,
   unpacked by the C++ op; report validation and test accuracy.
3. Export two TF Serving bundles (op-free for the stock image, and with the op) and serve the op-free
   one with the local TF-Serving-compatible server on 127.0.0.1.
4. Classify test nodes over real HTTP (``:classify`` with per-node blobs as ``{"b64": ...}``), and
   with the design notes' ``{"examples": [{"node_id": 1}, ...]}`` request; compare with in-process
   predictions.
5. Batch inference: predict every node and write ``predicted_class`` back to the graph.

Nothing here needs a Memgraph server or TF Serving; the same calls work against them (see README).
"""

from __future__ import annotations

import argparse
import logging
import os
import pathlib
import tempfile
import time

from memgraph_tf.datasets import planetoid_graph

logger = logging.getLogger(__name__)


def _say(message: str) -> None:
    print(message, flush=True)


def run(dataset: str = "cora", workdir: str | os.PathLike | None = None, *, steps: int | None = None,
        seed: int = 0, classify_count: int = 64) -> dict:
    """Runs the demo and returns its figures (accuracies, agreement, timings)."""
    import numpy as np

    from memgraph_tf.client import EmbeddedSource, evaluate, predict, predict_and_write, train_graphsage
    from memgraph_tf.client.graphsage import PLANETOID_RECIPE
    from memgraph_tf.serving import ModelServer, ServingClient, classify_nodes, export_bundle, start_server

    figures: dict = {"dataset": dataset}
    t0 = time.perf_counter()
    graph = planetoid_graph(dataset)
    source = EmbeddedSource(graph)
    splits: dict[str, list[int]] = {"train": [], "val": [], "test": []}
    for node in graph.nodes():
        split = graph.get_property(node, "split")
        if split in splits:
            splits[split].append(node)
    _say(f"[1/5] loaded {dataset}: {len(graph.nodes())} nodes; train/val/test = "
         f"{len(splits['train'])}/{len(splits['val'])}/{len(splits['test'])} "
         f"({time.perf_counter() - t0:.1f} s)")

    t0 = time.perf_counter()
    num_classes = 1 + max(int(graph.get_property(n, "label")) for n in splits["train"] + splits["val"])
    class_names = [f"class_{i}" for i in range(num_classes)]
    recipe = dict(PLANETOID_RECIPE)
    if steps is not None:
        recipe["steps"] = steps
    result = train_graphsage(source, splits["train"], splits["val"], seed=seed, class_names=class_names, **recipe)
    model = result.model
    test = evaluate(model, source, splits["test"], feature_cache=result.feature_cache, seed=seed, draws=10)
    figures.update(val_accuracy=result.best_val_accuracy, test_accuracy=test["accuracy"])
    _say(f"[2/5] trained GraphSAGE (fanouts {recipe['fanouts']}) via tf_features blobs: best val acc "
         f"{result.best_val_accuracy:.3f}, test acc {test['accuracy']:.3f} "
         f"({time.perf_counter() - t0:.1f} s)")

    with tempfile.TemporaryDirectory(prefix="memgraph-tf-demo-") as tmp:
        base = pathlib.Path(workdir) if workdir else pathlib.Path(tmp)
        base.mkdir(parents=True, exist_ok=True)
        portable = export_bundle(model, base / "portable", "GraphSage", 1, use_op=False, overwrite=True)
        with_op = export_bundle(model, base / "with_op", "GraphSage", 1, use_op=True, overwrite=True)
        _say(f"[3/5] exported bundles: {portable.path} (stock ops only), {with_op.path} (op)")

        server = ModelServer(base / "portable" / "GraphSage", "GraphSage", graph_source=source)
        with start_server(server) as running:
            client = ServingClient(running.url, "GraphSage", timeout_s=30)
            ids = splits["test"][:classify_count]
            t0 = time.perf_counter()
            served = classify_nodes(source, client, ids)
            elapsed = time.perf_counter() - t0
            by_node_id = client.classify([{"node_id": int(i)} for i in ids[:4]])
            local = predict(model, source, ids, feature_cache=result.feature_cache, seed=seed)
            agree = float(np.mean([int(label.split("_")[1]) == int(c)
                                   for (_, label, _), c in zip(served, local.classes)]))
            truth = [int(graph.get_property(n, "label")) for n in ids]
            served_acc = float(np.mean([int(label.split("_")[1]) == t for (_, label, _), t in zip(served, truth)]))
            figures.update(served_accuracy=served_acc, served_agreement=agree,
                           classify_ms_per_node=1000 * elapsed / len(ids))
            status = client.status()
            _say(f"[4/5] {running.url} :classify of {len(ids)} test nodes (b64 blobs) in {elapsed * 1000:.0f} ms: "
                 f"accuracy {served_acc:.3f}, agreement with in-process predictions {agree:.3f} "
                 f"(each side samples its own neighbourhoods); status {status}")
            _say(f"      design-notes request {{\"examples\": [{{\"node_id\": {ids[0]}}}, ...]}} -> "
                 f"{[max(r, key=lambda p: p[1])[0] for r in by_node_id]}")

    t0 = time.perf_counter()
    written = predict_and_write(model, source, feature_cache=result.feature_cache, progress=False)
    sample = [(n, graph.get_property(n, "predicted_class")) for n in splits["test"][:3]]
    figures["written"] = written
    _say(f"[5/5] batch inference wrote predicted_class/predicted_score on {written} nodes "
         f"({time.perf_counter() - t0:.1f} s); e.g. {sample}")
    return figures


def main(args: argparse.Namespace) -> int:
    logging.getLogger("tensorflow").setLevel(logging.ERROR)
    figures = run(args.dataset, args.workdir)
    _say("demo figures: " + ", ".join(f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}"
                                      for k, v in figures.items()))
    return 0
