"""Typed GraphSAGE on the generated shop graph: accuracy against the known best, an MLP
on the users' own features and a GraphSAGE that ignores types, five seeds each.

The graph is :func:`memgraph_tf.typed_datasets.shop_graph` (12,000 users, 3,000 products, 12
categories; BOUGHT, IN, FOLLOWS; a user's class shows only in the categories of what it bought).
All three models are :class:`~memgraph_tf.client.typed_graphsage.TypedGraphSAGE` with the same
training budget; what differs is what they may see:

* **typed**: ``(:User)-[:BOUGHT]->(:Product)`` 5 and ``(:User)-[:FOLLOWS]->(:User)`` 10 at hop 1,
  ``(:Product)-[:IN]->(:Category)`` 1 at hop 2;
* **mlp**: the user's own features only (every fanout 0);
* **untyped**: the same graph with one label and one relationship type, walked both ways
  (features zero-padded to one width), fanouts 15 and 10: GraphSAGE as if types did not exist.

Neighbourhoods come from the numpy reference sampler (``sample_neighbourhoods``), which draws as
``tf_features.sample`` does (distinct neighbours, padded). Prints each run, then mean and spread,
and the ratios typed / best and typed - untyped.

    .venv/bin/python benchmarks/typed_accuracy.py --seeds 0 1 2 3 4
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

TYPED = {
    "(:User)-[:BOUGHT]->(:Product)": [5, 0],
    "(:User)-[:FOLLOWS]->(:User)": [10, 0],
    "(:Product)-[:IN]->(:Category)": [0, 1],
}
MLP = {"(:User)-[:FOLLOWS]->(:User)": [0]}
UNTYPED = {"(:Node)-[:EDGE]->(:Node)": [15, 10]}


def untyped_view(graph):
    """``graph`` with one label (``Node``) and one type (``EDGE``, both directions)."""
    import numpy as np

    from memgraph_tf.typed_datasets import EdgeSet, NodeSet, TypedGraph

    offsets, total = {}, 0
    for label, node_set in graph.node_sets.items():
        offsets[label] = total
        total += node_set.size
    width = max(s.width for s in graph.node_sets.values())
    features = np.zeros((total, width), np.float32)
    for label, node_set in graph.node_sets.items():
        rows = slice(offsets[label], offsets[label] + node_set.size)
        features[rows, : node_set.width] = node_set.features
    src = np.concatenate([e.source + offsets[e.source_label] for e in graph.edge_sets.values()])
    dst = np.concatenate([e.target + offsets[e.target_label] for e in graph.edge_sets.values()])
    edges = EdgeSet("Node", "EDGE", "Node", np.concatenate([src, dst]), np.concatenate([dst, src]))
    return TypedGraph(
        name=f"{graph.name}-untyped",
        node_sets={"Node": NodeSet("Node", total, features)},
        edge_sets={edges.key: edges},
        target_label="Node",
        labels=graph.labels,  # users come first, so user i is node i
        split=graph.split,
        num_classes=graph.num_classes,
        best_accuracy=graph.best_accuracy,
        params=dict(graph.params),
    )


def train(graph, seed_label, num_neighbors, seed, *, steps, batch_size, eval_every):
    """Trains one model; returns (test accuracy at the best validation accuracy, seconds)."""
    import keras
    import numpy as np
    import tensorflow as tf

    from memgraph_tf.client.typed_graphsage import TypedGraphSAGE, typed_model_inputs
    from memgraph_tf.typed_datasets import sample_neighbourhoods
    from memgraph_tf.typed_sampling import TypedSamplingSpec

    spec = TypedSamplingSpec.from_num_neighbors(seed_label, num_neighbors)
    features = {label: s.features for label, s in graph.node_sets.items()}
    dims = {label: graph.node_sets[label].width for label in spec.labels()}
    keras.utils.set_random_seed(seed)
    model = TypedGraphSAGE(
        seed_label, num_neighbors, dims, graph.num_classes, hidden_units=64, dropout=0.2, l2=1e-5
    )
    optimizer = keras.optimizers.Adam(0.01)
    rng = np.random.default_rng(seed)
    train_ids, val_ids, test_ids = (np.array(graph.ids(s)) for s in ("train", "val", "test"))

    def inputs(ids, generator):
        return typed_model_inputs(
            spec, sample_neighbourhoods(graph, spec, ids, generator), features
        )

    @tf.function(reduce_retracing=True)
    def step(x, y):
        with tf.GradientTape() as tape:
            logits = model(x, training=True)
            loss = tf.reduce_mean(
                keras.losses.sparse_categorical_crossentropy(y, logits, from_logits=True)
            )
            loss += sum(model.losses)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    @tf.function(reduce_retracing=True)
    def predict(x):
        return tf.argmax(model(x, training=False), axis=-1)

    def accuracy(ids):
        x = inputs(ids, np.random.default_rng(10_000 + seed))
        return float(np.mean(predict(x).numpy() == graph.labels[ids]))

    start = time.perf_counter()
    best_val, best_test = -1.0, 0.0
    for s in range(1, steps + 1):
        batch = rng.choice(train_ids, batch_size, replace=False)
        step(inputs(batch, rng), graph.labels[batch])
        if s % eval_every == 0:
            val = accuracy(val_ids)
            if val > best_val:
                best_val, best_test = val, accuracy(test_ids)
    return best_test, time.perf_counter() - start


def main() -> int:
    from memgraph_tf.typed_datasets import shop_graph

    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--users", type=int, default=12_000)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--eval-every", type=int, default=50)
    parser.add_argument("--json", action="store_true", help="print the summary as JSON too")
    args = parser.parse_args()

    graph = shop_graph(args.users)
    untyped = untyped_view(graph)
    print(
        f"shop graph: {graph.node_sets['User'].size} users, "
        f"{sum(s.size for s in graph.node_sets.values())} nodes, "
        f"{sum(e.size for e in graph.edge_sets.values())} relationships; "
        f"best possible accuracy {graph.best_accuracy:.4f}, chance {1 / graph.num_classes:.2f}"
    )
    runs = {"typed": [], "mlp": [], "untyped": []}
    for seed in args.seeds:
        for name, (g, label, spec) in {
            "typed": (graph, "User", TYPED),
            "mlp": (graph, "User", MLP),
            "untyped": (untyped, "Node", UNTYPED),
        }.items():
            acc, seconds = train(
                g,
                label,
                spec,
                seed,
                steps=args.steps,
                batch_size=args.batch_size,
                eval_every=args.eval_every,
            )
            runs[name].append(acc)
            print(f"seed {seed} {name:8s} test accuracy {acc:.4f} ({seconds:.1f} s)", flush=True)

    def spread(values):
        return statistics.stdev(values) if len(values) > 1 else 0.0

    summary = {
        name: {"mean": statistics.mean(v), "std": spread(v), "runs": v} for name, v in runs.items()
    }
    for name, s in summary.items():
        print(f"{name:8s} {s['mean']:.4f} +- {s['std']:.4f}")
    typed_mean = summary["typed"]["mean"]
    print(f"typed / best possible: {typed_mean / graph.best_accuracy:.4f} (goal >= 0.97)")
    gap = typed_mean - summary["untyped"]["mean"]
    print(f"typed - untyped: {100 * gap:.1f} points (goal >= 10)")
    print(f"mlp - chance: {100 * (summary['mlp']['mean'] - 1 / graph.num_classes):.1f} points")
    if args.json:
        print(json.dumps({"best": graph.best_accuracy, **summary}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
