"""Typed GraphSAGE trained through the database:
``train_typed_graphsage`` samples typed blobs with ``tf_features.sample_typed`` (the unchanged
query module, embedded), decodes them with the unpack op and reads the feature widths from
``tf_features.schema``; on the shop graph (a planted signal only the typed structure reveals) it
reaches well above chance in 20 steps."""

from __future__ import annotations

import pytest

from memgraph_tf.client.typed_graphsage import evaluate_typed, train_typed_graphsage
from memgraph_tf.errors import ConfigurationError
from tests.client import typed_kit as kit


def test_trains_well_above_chance_and_keeps_the_schema_it_was_trained_on():
    graph, _, _, source = kit.shop()
    result = kit.trained()
    model = result.model
    chance = 1.0 / graph.num_classes
    assert result.best_val_accuracy >= 0.9 > chance + 0.3
    assert result.best_val_accuracy == max(result.history["val_accuracy"])
    assert result.best_step in result.history["eval_step"]
    test = evaluate_typed(model, source, graph.ids("test"), options=kit.OPTIONS, seed=3)
    assert test["num_nodes"] == len(graph.ids("test"))
    assert test["accuracy"] >= 0.9
    # the widths came from tf_features.schema: each label's own width
    widths = {label: ns.width for label, ns in graph.node_sets.items()}
    assert model.feature_dims == widths
    assert dict(model.properties) == kit.PROPS
    schema = source.schema(kit.PROPS, {})
    assert [e["label"] for e in model.schema["labels"]] == ["User", "Product", "Category"]
    assert all(e in schema["labels"] for e in model.schema["labels"])
    triples = {(r["source"], r["type"], r["target"]) for r in model.schema["relationships"]}
    assert triples == set(graph.edge_sets)
    assert model.feature_dtype == "float32"
    assert model.class_names == ["even", "odd"]


def test_bad_arguments_name_what_is_wrong():
    graph, _, _, source = kit.shop()
    train = graph.ids("train")[:8]
    with pytest.raises(ConfigurationError, match=r"properties: 'Shop': no such label"):
        train_typed_graphsage(source, "User", kit.NN, {"Shop": ["features"]}, train, steps=1)
    with pytest.raises(ConfigurationError, match=r"options.label: expected the seed label 'User'"):
        train_typed_graphsage(
            source, "User", kit.NN, kit.PROPS, train, options={"label": "Product"}, steps=1
        )
    with pytest.raises(ConfigurationError, match=r"options.seed: expected no fixed sampling seed"):
        train_typed_graphsage(source, "User", kit.NN, kit.PROPS, train, options={"seed": 1})
    with pytest.raises(ConfigurationError, match=r"never reached from seeds of 'User'"):
        train_typed_graphsage(
            source, "User", {"(:Product)-[:IN]->(:Category)": [1]}, kit.PROPS, train, steps=1
        )


def test_sparse_blobs_give_the_dense_predictions():
    """The client path decodes any typed layout (options.layout) to the same inputs: the same
    keyed draws, so the same probabilities as the dense blobs (sparse: the CSR expansion; compact
    through the same code in tests/ops/test_typed_sample_decoding.py and tests/serving)."""
    import numpy as np

    from memgraph_tf.client.typed_graphsage import predict_typed_proba

    graph, _, _, source = kit.shop()
    ids = graph.ids("test")[:48]
    model = kit.trained().model
    dense = predict_typed_proba(model, source, ids, options=kit.OPTIONS, seed=3, batch_size=32)
    opts = {**kit.OPTIONS, "layout": "sparse"}
    got = predict_typed_proba(model, source, ids, options=opts, seed=3, batch_size=32)
    np.testing.assert_array_equal(got, dense)


def test_without_train_ids_the_split_property_is_read(monkeypatch):
    from memgraph_tf.client.typed_graphsage import split_node_ids

    graph, _, _, source = kit.shop()
    for split in ("train", "val", "test"):
        assert split_node_ids(source, "User", split, options=kit.OPTIONS) == graph.ids(split)
    assert split_node_ids(source, "Product", "val", options=kit.OPTIONS) == []
    # every sampled seed comes from the split read in the database: training batches from
    # 'train', the validation passes over all of 'val'; no test node is ever sampled
    seen = []
    sample = source.sample_typed_b64

    def spy(seeds, *args):
        seen.extend(seeds)
        return sample(seeds, *args)

    monkeypatch.setattr(source, "sample_typed_b64", spy)
    result = train_typed_graphsage(
        source, "User", kit.NN, kit.PROPS, options=kit.OPTIONS, steps=2, eval_every=1, seed=1
    )
    assert result.history["eval_step"] == [1, 2]
    train, val = set(graph.ids("train")), set(graph.ids("val"))
    assert set(seen) <= train | val and val <= set(seen) and set(seen) & train
    with pytest.raises(
        ConfigurationError, match=r"no :User node has fold = 'train' to train on \(pass train_ids"
    ):
        train_typed_graphsage(
            source, "User", kit.NN, kit.PROPS, options=kit.OPTIONS, split_property="fold"
        )
    with pytest.raises(ConfigurationError, match=r"where: expected a non-empty name without backq"):
        split_node_ids(source, "User", "train", split_property="a`b")


SAME_MODEL_SCRIPT = """
import numpy as np
import tensorflow as tf

tf.config.threading.set_intra_op_parallelism_threads(1)
tf.config.threading.set_inter_op_parallelism_threads(1)

from tests.client import typed_kit as kit

graph, _, _, source = kit.shop()
orders = {"unsorted": dict(reversed(kit.NN.items())), "sorted": dict(sorted(kit.NN.items()))}
runs = {}
for name, nn in orders.items():
    runs[name] = kit.train_users(
        graph, source, nn, kit.PROPS, kit.OPTIONS,
        hidden_units=8, batch_size=32, steps=4, eval_every=2, seed=0,
    )
a, b = runs["unsorted"], runs["sorted"]
assert list(a.model.spec.num_neighbors()) == sorted(kit.NN), a.model.spec.num_neighbors()
assert a.model.get_config()["num_neighbors"] == b.model.get_config()["num_neighbors"]
wa, wb = a.model.get_weights(), b.model.get_weights()
assert len(wa) == len(wb) > 0
assert all(x.shape == y.shape and np.array_equal(x, y) for x, y in zip(wa, wb)), "weights differ"
kept = ("step", "loss", "train_accuracy", "eval_step", "val_accuracy")  # (not the timings)
assert [a.history[k] for k in kept] == [b.history[k] for k in kept], (a.history, b.history)
import keras

from memgraph_tf.client.link_prediction import LinkPredictor

dims = {label: ns.width for label, ns in graph.node_sets.items()}
links = []
for nn in orders.values():
    keras.utils.set_random_seed(0)
    links.append(LinkPredictor("User", nn, dims, hidden_units=8, embedding_dim=4).ensure_built())
la, lb = (m.get_weights() for m in links)
assert len(la) == len(lb) > 0 and all(np.array_equal(x, y) for x, y in zip(la, lb))
print("bit-identical", len(wa), "and", len(la), "weight arrays")
"""


def test_unsorted_steps_train_the_model_of_the_sorted_steps_bit_for_bit():
    """The same ``num_neighbors`` listed out of the patterns' sorted order (FOLLOWS before
    BOUGHT: hop 1's User groups swap) trains the very model of the sorted listing: same step
    numbering, same blobs, same weights bit for bit and the same losses and accuracies (seed 0,
    TensorFlow pinned to one thread, in a fresh process since the pinning must precede
    TensorFlow's first op); a link model built from either listing has the same initial
    weights. Memgraph hands the procedures the map sorted (``src/query/procedure/
    mg_procedure_impl.hpp`` ``mgp_map::map_type``), so only this order can match it."""
    import os
    import pathlib
    import subprocess
    import sys

    assert list(reversed(kit.NN)) != sorted(kit.NN)
    root = pathlib.Path(__file__).resolve().parents[2]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]),
    }
    proc = subprocess.run(
        [sys.executable, "-c", SAME_MODEL_SCRIPT],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=root,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "bit-identical" in proc.stdout
