"""Seconds per link-training step on Cora: the first SAGE layer per distinct row (the default,
``pair_sample_dataset(rows=True)`` -> :meth:`TypedGraphSAGE.encode_rows`) against the per-slot
features path (``rows=False``, every slot's features densified) in the same run.

The GAE split of ``benchmarks/link_accuracy.py`` (seed 0), the model ``train_link_predictor``
builds (fanouts 10, 5, 128 units, dot scorer, dropout 0.3, batch 128 positives + 128 negatives),
the Cora feature cache. Per path, ``--batches`` pair batches are sampled first (the same pairs and
seeds for both paths) and held in memory, then one traced training step (Adam, binary
cross-entropy; forward and backward) is timed over them ``--rounds`` times: TensorFlow execution
only, sampling excluded. Prints the median seconds per step and the ratio, with the load average.

    .venv/bin/python benchmarks/link_rows.py [--batches 10 --rounds 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from link_accuracy import OPTIONS, PATTERN, load, read_splits


def time_steps(model, batches, rounds):
    """Seconds of each traced training step over ``batches``, ``rounds`` times (trace excluded)."""
    import keras
    import tensorflow as tf

    from memgraph_tf import layout
    from memgraph_tf.client.link_prediction import link_inputs

    variables = model.trainable_link_variables()
    optimizer = keras.optimizers.Adam(0.01)
    optimizer.build(variables)

    @tf.function(autograph=False, reduce_retracing=True)
    def step(batch):
        y = tf.cast(batch[layout.PAIR_LABELS], tf.float32)
        with tf.GradientTape() as tape:
            logits = model(link_inputs(model, batch), training=True)
            loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(y, logits))
        optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))
        return loss

    float(step(batches[0]))  # trace
    per_step = []
    for _ in range(rounds):
        for batch in batches:
            t0 = time.perf_counter()
            float(step(batch))
            per_step.append(time.perf_counter() - t0)
    return per_step


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--batches", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    from memgraph_tf.client.link_prediction import pair_sample_dataset, train_link_predictor

    g, source, _ = load("cora")
    source.split_edges(PATTERN, {"seed": 0, **OPTIONS})
    train = read_splits(g)["train"]
    nn = {PATTERN: [10, 5]}
    # one step builds the model and the feature cache as the benchmark's training does
    result = train_link_predictor(
        source, "Paper", nn, ["features"], train, options=OPTIONS, steps=1, seed=0
    )
    model, caches = result.model, result.feature_caches
    props = {"Paper": ["features"]}
    opts = {**OPTIONS, "source_label": "Paper", "exclude_splits": ["val", "test"]}
    print(
        f"Cora link training step, {len(train)} train edges, batch 128 + 128 negatives, "
        f"fanouts [10, 5], cache sparse: {caches['Paper'].sparse}; load average "
        f"{os.getloadavg()[0]:.2f}",
        flush=True,
    )
    figures = {}
    for rows in (False, True):
        ds = pair_sample_dataset(
            source,
            model,
            train[: 128 * args.batches],
            props,
            options=opts,
            negatives=1,
            batch_size=128,
            seed=0,
            feature_caches=caches,
            rows=rows,
        )
        per_step = time_steps(model, list(ds), args.rounds)
        name = "distinct rows" if rows else "per-slot features (before)"
        figures[rows] = statistics.median(per_step)
        print(
            f"{name:28s} median {figures[rows]:.4f} s/step over {len(per_step)} steps; load "
            f"average {os.getloadavg()[0]:.2f}",
            flush=True,
        )
    print(f"per-slot / distinct rows: {figures[False] / figures[True]:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
