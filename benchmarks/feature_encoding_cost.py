"""What feature specs cost per node against the numeric path, in the same run, on the planted
property graph (:func:`memgraph_tf.property_datasets.planted_property_graph`).

Two copies of the same graph (same persons, same KNOWS relationships):

* **spec**: the raw properties (``city`` a string, ``tags`` a list of strings, ``joined`` a Date,
  ``plan`` a string absent on 40%, ``score`` a float, ``visits`` an int) with the spec
  ``infer_feature_spec`` gives; ``tf_features.sample_typed`` packs the raw columns
  (``options.feature_spec``) and the model's encoders (vocabulary lookups, embeddings, the
  temporal and numeric standardisation) turn them into features;
* **numeric** (the baseline): the same six properties already encoded by hand as required numbers
  -- ``city`` and ``plan`` as vocabulary indices (absent: its own index), ``tags`` as a multi-hot
  list of 6 floats, ``joined`` as days since 1970 -- packed as one float row of width 11
  (``properties={"Person": [...]}``), the model reading it as is.

Rows:

1. **procedure**: ``sample_typed`` of ``--seeds`` seeds with KNOWS 3 (each seed's row and 3
   neighbours' rows packed), seeds/s and packed nodes/s, median over ``--rounds`` alternating
   rounds;
2. **model**: the traced forward pass (``tf.function``, as a bundle runs it) of a typed GraphSAGE
   built by ``train_typed_graphsage`` (2 steps: the cost does not depend on the weights) on the
   decoded inputs of one such batch (``--model-reps`` calls per round): the spec model's encoders
   + model against the numeric model, seeds/s.

The embedded runtime's per-call costs are not Memgraph's: compare the ratios, not the absolute
figures.

    .venv/bin/python benchmarks/feature_encoding_cost.py [--people N] [--seeds N] [--rounds N]
        [--model-reps N]
"""

from __future__ import annotations

import argparse
import datetime
import statistics
from typing import Any

from _timing import timed  # beside this file (the script's directory is on sys.path)

NN = {"(:Person)-[:KNOWS]->(:Person)": [3]}
OPTIONS = {"id_property": "id"}
PROPERTIES = ["city", "tags", "joined", "plan", "score", "visits"]
EPOCH = datetime.date(1970, 1, 1)


def numeric_twin(graph: Any) -> Any:
    """The persons of ``graph`` with the six properties encoded by hand as required numbers (the
    module docstring), ``id`` / ``label`` / ``split`` as they are; an in-process graph."""
    from memgraph_tf.embedded import EmbeddedGraph
    from memgraph_tf.property_datasets import CITIES, LABEL, PLANS, TAGS

    twin = EmbeddedGraph()
    ids = []
    for props in graph.nodes:
        row = {k: props[k] for k in ("id", "label", "split")}
        row["city"] = CITIES.index(props["city"])
        row["tags"] = [1.0 if t in props["tags"] else 0.0 for t in TAGS]
        row["joined"] = (props["joined"] - EPOCH).days
        row["plan"] = PLANS.index(props["plan"]) if "plan" in props else len(PLANS)
        row["score"], row["visits"] = props["score"], props["visits"]
        ids.append(twin.add_node([LABEL], row))
    for a, b in graph.edges:
        twin.add_edge(ids[a], ids[b], "KNOWS")
    return twin


def model_inputs(model: Any, sections: dict) -> dict:
    """The decoded blob's sections as ``model``'s inputs (a ragged section as its values and
    row splits, strings as tf.string)."""
    import numpy as np
    import tensorflow as tf

    from memgraph_tf import blob

    flat: dict[str, Any] = {}
    for name, value in sections.items():
        if isinstance(value, blob.Ragged):  # a bag of strings: its flat values and row splits
            flat[name + blob.ROW_SPLITS_SUFFIX] = np.asarray(value.row_splits, np.int64)
            value = np.asarray(list(value.values), dtype=object)
        flat[name] = value

    def tensor(value: Any) -> Any:
        if value.dtype == object:
            return tf.constant(value.tolist(), tf.string)
        return tf.constant(value)

    return {k: tensor(flat[k]) for k in model.input_names()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--people", type=int, default=5000)
    parser.add_argument("--seeds", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--model-reps", type=int, default=100)
    args = parser.parse_args()

    import tensorflow as tf

    from memgraph_tf import blob
    from memgraph_tf.client import EmbeddedSource
    from memgraph_tf.client.feature_specs import infer_feature_spec
    from memgraph_tf.client.typed_graphsage import train_typed_graphsage
    from memgraph_tf.property_datasets import (
        LABEL,
        planted_property_graph,
        property_embedded_graph,
    )

    graph = planted_property_graph(args.people, seed=0)
    spec_source = EmbeddedSource(property_embedded_graph(graph)[0])
    num_source = EmbeddedSource(numeric_twin(graph))
    spec = infer_feature_spec(spec_source, LABEL, properties=PROPERTIES)
    seeds = list(range(args.seeds))
    spec_opts = {**OPTIONS, "label": LABEL, "seed": 1, "feature_spec": {LABEL: spec.to_dict()}}
    num_opts = {**OPTIONS, "label": LABEL, "seed": 1}
    calls = {
        "spec": lambda: spec_source.sample_typed(seeds, NN, {}, spec_opts),
        "numeric": lambda: num_source.sample_typed(seeds, NN, {LABEL: PROPERTIES}, num_opts),
    }
    blobs = {name: call() for name, call in calls.items()}  # warm, and the model's inputs
    sections = blob.unpack(blobs["numeric"])
    packed = sum(int((v >= 0).sum()) for k, v in sections.items() if k.startswith("ids_"))
    times: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(args.rounds):
        for name, call in calls.items():
            times[name].append(timed(call))
    proc = {name: statistics.median(ts) for name, ts in times.items()}

    common = {"steps": 2, "batch_size": 64, "eval_every": 2, "hidden_units": 32, "seed": 0}
    models = {
        "spec": train_typed_graphsage(
            spec_source, LABEL, NN, {}, options=OPTIONS, feature_spec={LABEL: spec}, **common
        ).model,
        "numeric": train_typed_graphsage(
            num_source, LABEL, NN, {LABEL: PROPERTIES}, options=OPTIONS, **common
        ).model,
    }
    forward = {}
    for name, model in models.items():
        inputs = model_inputs(model, blob.unpack(blobs[name]))
        fn = tf.function(lambda x, model=model: model(x, training=False))
        fn(inputs)  # trace
        forward[name] = inputs, fn
    ftimes: dict[str, list[float]] = {name: [] for name in forward}
    reps = range(args.model_reps)
    for _ in range(args.rounds):
        for name, (inputs, fn) in forward.items():
            ftimes[name].append(timed(lambda fn=fn, inputs=inputs: [fn(inputs) for _ in reps]))
    fwd = {name: statistics.median(ts) / args.model_reps for name, ts in ftimes.items()}

    print(
        f"{args.people} persons, {args.seeds} seeds per call (KNOWS 3: {packed} packed rows), "
        f"median of {args.rounds} alternating rounds (embedded runtime, {tf.__version__})"
    )
    print(f"{'':10s} {'procedure seeds/s':>18s} {'packed rows/s':>14s} {'model seeds/s':>14s}")
    for name in ("numeric", "spec"):
        print(
            f"{name:10s} {args.seeds / proc[name]:18,.0f} {packed / proc[name]:14,.0f} "
            f"{args.seeds / fwd[name]:14,.0f}"
        )
    print(
        f"spec / numeric time: procedure {proc['spec'] / proc['numeric']:.2f}x, "
        f"model {fwd['spec'] / fwd['numeric']:.2f}x; the spec's extra time per seed: procedure "
        f"{(proc['spec'] - proc['numeric']) / args.seeds * 1e6:.1f} us, model "
        f"{(fwd['spec'] - fwd['numeric']) / args.seeds * 1e6:.2f} us"
    )


if __name__ == "__main__":
    main()
