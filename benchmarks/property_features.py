"""Feature specs on the planted property graph: a typed GraphSAGE with the inferred spec against
the exact best accuracy, and the same model on the numeric properties alone against chance.

The graph is :func:`memgraph_tf.property_datasets.planted_property_graph` (``--people`` persons,
``KNOWS`` relationships drawn at random): a person's class depends only on ``city`` (a string),
``tags`` (a list of strings), ``joined`` (a Date) and ``plan`` (absent on 40% of the persons), with
its Bayes-best accuracy exact; ``score`` and ``visits`` are pure noise. Both models go through the
database path: ``infer_feature_spec`` profiles the :Person nodes in the embedded runtime,
``train_typed_graphsage(feature_spec=...)`` samples the raw property columns with
``tf_features.sample_typed`` (``options.feature_spec``) and the model's encoders (vocabularies,
statistics, embeddings) turn them into features. What differs is the spec:

* **inferred**: the spec ``infer_feature_spec`` gives for all six properties;
* **numeric**: the same spec cut to ``score`` and ``visits``.

Prints, from one run: the best accuracy (exact) and the Bayes rule on the test split, each model's
test accuracy, inferred / best (goal >= 0.97), inferred / the Bayes rule on the same test nodes
(the test split's own luck taken out) and numeric - chance (goal within 0.05).

    .venv/bin/python benchmarks/property_features.py --seeds 0 1 2
"""

from __future__ import annotations

import argparse
import sys
import time

import _typed_runs  # beside this file (the script's directory is on sys.path)

NN = {"(:Person)-[:KNOWS]->(:Person)": [3]}
OPTIONS = {"id_property": "id"}
PROPERTIES = ["city", "tags", "joined", "plan", "score", "visits"]


def run(seed: int, args: argparse.Namespace) -> dict[str, float]:
    import numpy as np

    from memgraph_tf.client.feature_specs import infer_feature_spec
    from memgraph_tf.client.sources import EmbeddedSource
    from memgraph_tf.client.typed_graphsage import evaluate_typed
    from memgraph_tf.feature_spec import LabelSpec
    from memgraph_tf.property_datasets import (
        LABEL,
        NOISE_PROPERTIES,
        planted_property_graph,
        property_embedded_graph,
    )

    graph = planted_property_graph(args.people, seed=seed)
    embedded, _ = property_embedded_graph(graph)
    source = EmbeddedSource(embedded)
    spec = infer_feature_spec(source, LABEL, properties=PROPERTIES)
    numeric = LabelSpec(LABEL, [p for p in spec.properties if p.name in NOISE_PROPERTIES])
    test = graph.ids("test")
    out = {
        "best": graph.best_accuracy,
        "chance": graph.chance,
        "bayes_test": float(np.mean(graph.bayes[test] == graph.labels[test])),
    }
    for name, s in (("inferred", spec), ("numeric", numeric)):
        start = time.perf_counter()
        result = _typed_runs.train(
            source,
            LABEL,
            NN,
            {},
            args=args,
            seed=seed,
            l2=args.l2,
            options=OPTIONS,
            feature_spec={LABEL: s},
        )
        acc = evaluate_typed(result.model, source, test, options=OPTIONS, seed=seed)["accuracy"]
        out[name] = acc
        seconds = time.perf_counter() - start
        print(f"seed {seed} {name:8s} test accuracy {acc:.4f} ({seconds:.1f} s)", flush=True)
    print(
        f"seed {seed} best {out['best']:.4f} (Bayes rule on the test split {out['bayes_test']:.4f})"
        f", chance {out['chance']:.4f}",
        flush=True,
    )
    return out


def main() -> int:
    parser = _typed_runs.parser(__doc__, steps=400, json_what="the summary", people=10_000, l2=1e-4)
    args = parser.parse_args()
    runs = [run(seed, args) for seed in args.seeds]
    ratio = [r["inferred"] / r["best"] for r in runs]
    gap = [r["numeric"] - r["chance"] for r in runs]
    spread = _typed_runs.spread
    _typed_runs.print_spreads(
        runs,
        {
            "best possible": "best",
            "inferred spec": "inferred",
            "numeric only": "numeric",
            "chance": "chance",
        },
    )
    print(f"inferred / best: {spread(ratio)} (goal >= 0.97; worst {min(ratio):.4f})")
    on_test = [r["inferred"] / r["bayes_test"] for r in runs]
    print(f"inferred / Bayes rule on the same test nodes: {spread(on_test)}")
    print(f"numeric - chance: {spread(gap)} (goal within 0.05; worst {max(map(abs, gap)):.4f})")
    return _typed_runs.print_json(args, {"runs": runs, "ratio": ratio, "numeric_minus_chance": gap})


if __name__ == "__main__":
    sys.exit(main())
