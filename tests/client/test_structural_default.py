"""A label without features trains with no extra step: ``train_link_predictor`` and
``train_typed_graphsage`` write its FastRP embedding (on the training graph: held-out splits left
out) into ``memgraph_tf_fastrp`` and read it through a numeric feature spec whose missing value is
zeros, so a node added after training is still answered; ``structural_default=False`` keeps the
shared learned vector."""

from __future__ import annotations

import functools

import numpy as np
import pytest

from memgraph_tf.client import EmbeddedSource
from memgraph_tf.client.link_prediction import evaluate_links, predict_links, train_link_predictor
from memgraph_tf.client.structural import (
    STRUCTURAL_OPTIONS,
    STRUCTURAL_PROPERTY,
    featureless_labels,
    structural_call,
    structural_features,
    write_structural_features,
)
from memgraph_tf.client.typed_graphsage import predict_typed_proba, train_typed_graphsage
from memgraph_tf.embedded import EmbeddedGraph
from tests.client.communities_kit import (
    BASE,
    NN,
    OPTIONS,
    N,
    cross_group_pairs,
    item_graph,
    train_items,
)
from tests.graphs import short_run


def communities(held_out: float = 0.2):
    """``(graph, train pairs, val pairs, val labels)``: items (``id`` and, for the classifier,
    ``label``: the group -- no feature) in 4 groups linked only inside their group; a share
    ``held_out`` of the links carries ``split: "val"``, the rest ``"train"``; the validation
    negatives join items of different groups."""
    g, rng, groups, edges = item_graph(lambda rng, group: {"label": group})
    pairs = {"train": [], "val": []}
    for a, b in edges:
        split = "val" if rng.random() < held_out else "train"
        g.add_edge(a, b, "LINK", {"split": split})
        pairs[split].append((BASE + a, BASE + b))
    neg = cross_group_pairs(rng, groups, len(pairs["val"]))
    val = np.array(pairs["val"] + neg, dtype=np.int64)
    val_y = np.r_[np.ones(len(pairs["val"])), np.zeros(len(neg))]
    return g, np.array(pairs["train"], dtype=np.int64), val, val_y


RUN = short_run(steps=30, eval_every=10, learning_rate=0.02)


@functools.cache
def linked():
    """``(graph, source, val, val_y, LinkTrainResult)``: the link predictor trained on the
    featureless items with no structural call of ours."""
    g, train, val, val_y = communities()
    source = EmbeddedSource(g)
    result = train_link_predictor(source, "Item", NN, [], train, val, val_y, options=OPTIONS, **RUN)
    return g, source, val, val_y, result


def written(g: EmbeddedGraph) -> np.ndarray:
    return np.array([g.get_property(i, STRUCTURAL_PROPERTY) for i in range(N)])


def test_featureless_labels_are_those_without_properties_or_spec():
    props = {"A": ["x"], "B": []}
    assert featureless_labels(["A", "B", "C", "B"], props, {"C": object()}) == ["B"]
    assert featureless_labels(["A", "B"], [], None) == ["A", "B"]
    assert featureless_labels(["A", "B"], ["x"], None) == []


def test_link_training_writes_fastrp_of_the_training_graph_and_reads_it():
    g, source, val, val_y, result = linked()
    vectors = written(g)
    assert vectors.shape == (N, 256)
    base = {**STRUCTURAL_OPTIONS, **OPTIONS, "seed": RUN["seed"]}
    train_only = structural_features(source, "Item", {**base, "exclude_splits": ["val", "test"]})
    everything = structural_features(source, "Item", base)
    np.testing.assert_array_equal(vectors, train_only.features)
    assert not np.array_equal(vectors, everything.features)  # the val links stayed out
    model = result.model
    assert set(model.label_encoders) == {"Item"} and model.properties == {}
    spec = model.get_config()["feature_spec"]["Item"]
    assert spec["properties"] == [
        {
            "name": STRUCTURAL_PROPERTY,
            "kind": "numeric",
            "default": 0.0,
            "standardize": False,
            "mean": 0.0,
            "std": 1.0,
            "length": 256,
            "missing_indicator": False,
            "structural": {  # the call that wrote it, for refresh (its options, spelled out)
                "features": ["fastrp"],
                "dimension": 256,
                "iteration_weights": [0.0, 0.0, 1.0, 1.0, 1.0, 1.0],
                "self_weight": 0.0,
                "normalization_strength": 0.0,
                "write_property": STRUCTURAL_PROPERTY,
                "id_property": "id",
                "seed": RUN["seed"],
                "exclude_splits": ["val", "test"],
                "relationship_types": ["LINK"],  # the types at the label when trained
            },
        }
    ]
    auc = evaluate_links(model, source, val, val_y, options=OPTIONS, seed=1)["auc"]
    assert auc >= 0.75  # chance: 0.5; the groups are visible in the structure alone


def test_the_default_is_the_run_on_the_written_property():
    """The feature spec reads the vectors unchanged: training on the property by name (the
    cached, per-distinct-row path) gives the same validation figures, step by step."""
    _, source, val, val_y, result = linked()
    _, train, _, _ = communities()
    plain = train_link_predictor(
        source, "Item", NN, [STRUCTURAL_PROPERTY], train, val, val_y, options=OPTIONS, **RUN
    )
    assert plain.model.label_encoders == {}
    assert plain.best_step == result.best_step
    assert len(plain.history["val_auc"]) == len(result.history["val_auc"]) == 3
    np.testing.assert_allclose(plain.history["val_auc"], result.history["val_auc"], atol=1e-6)
    np.testing.assert_allclose(plain.history["loss"], result.history["loss"], rtol=1e-4)


def test_a_node_added_after_training_is_scored_from_its_neighbours():
    g, _, _, _, result = linked()
    later, *_ = communities()  # the same graph, the trained vectors on it, then a new item
    for i, vector in enumerate(written(g)):
        later.set_property(i, STRUCTURAL_PROPERTY, vector.tolist())
    new = later.add_node(["Item"], {"id": BASE + N})
    for friend in (0, 4, 8):  # group 0
        later.add_edge(new, friend, "LINK", {"split": "train"})
    assert later.get_property(new, STRUCTURAL_PROPERTY) is None
    pairs = [[BASE + N, BASE + 12], [BASE + N, BASE + 13]]  # group 0, group 1
    probs = predict_links(result.model, EmbeddedSource(later), pairs, options=OPTIONS, seed=0)
    assert probs.shape == (2,) and np.isfinite(probs).all()
    assert probs[0] > probs[1]  # its neighbours' vectors place it in group 0
    # the trainer's own call gives it its vector, nothing retrained
    call = structural_call(OPTIONS, seed=RUN["seed"], exclude_splits=["val", "test"])
    write_structural_features(EmbeddedSource(later), "Item", call)
    own = np.array(later.get_property(new, STRUCTURAL_PROPERTY))
    assert own.shape == (256,) and np.linalg.norm(own) > 0
    again = predict_links(result.model, EmbeddedSource(later), pairs, options=OPTIONS, seed=0)
    assert again[0] > again[1]


@pytest.mark.parametrize(
    "opt_out",
    [{"structural_default": False}, {"node_embedding_dim": 4}],
    ids=["default-off", "learned-embeddings"],
)
def test_an_opt_out_writes_nothing_and_keeps_learned_vectors(opt_out):
    """Off, the label's nodes share one learned vector; with learned per-node embeddings those
    take the default's place. Either way nothing is written and no encoder is built."""
    g, train, val, val_y = communities()
    result = train_items(
        (EmbeddedSource(g), train, val, val_y),
        [],
        **opt_out,
        **short_run(steps=2, eval_every=2),
    )
    assert result.model.label_encoders == {}
    assert g.get_property(0, STRUCTURAL_PROPERTY) is None


def train_classifier(g: EmbeddedGraph, **kwargs):
    """The typed classifier of the items' group on ``g`` (even items train, odd validate)."""
    return train_typed_graphsage(
        EmbeddedSource(g),
        "Item",
        NN,
        {},
        train_ids=np.arange(BASE, BASE + N, 2),
        val_ids=np.arange(BASE + 1, BASE + N, 2),
        options=OPTIONS,
        **kwargs,
    )


@pytest.mark.parametrize("default", [True, False])
def test_node_classification_on_a_featureless_label(default):
    g, *_ = communities(held_out=0.0)
    source = EmbeddedSource(g)
    result = train_classifier(
        g, structural_default=default, **short_run(steps=2, eval_every=2, seed=3)
    )
    model = result.model
    if default:
        opts = {**STRUCTURAL_OPTIONS, **OPTIONS, "seed": 3}
        expected = structural_features(source, "Item", opts)
        np.testing.assert_array_equal(written(g), expected.features)
        assert set(model.label_encoders) == {"Item"}
        # in-process prediction samples the label through the same spec
        ids = np.arange(BASE, BASE + 6)
        proba = predict_typed_proba(model, source, ids, options=OPTIONS, seed=3)
        assert proba.shape == (6, model.num_classes)
        np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-5)
    else:
        assert g.get_property(0, STRUCTURAL_PROPERTY) is None
        assert model.label_encoders == {}
