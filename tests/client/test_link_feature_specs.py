"""Link prediction with feature specs: ``train_link_predictor(..., feature_spec=...)`` samples the
raw property columns through ``tf_features.sample_pairs`` (``options.feature_spec``, both halves),
encodes them with the encoders' :class:`LabelEncoder` and beats chance on a graph whose links are
decided by a categorical property alone; a spec of ``required`` properties is exactly the
``properties`` run (same seed, same figures)."""

from __future__ import annotations

import numpy as np
import pytest

from memgraph_tf.client import EmbeddedSource
from memgraph_tf.client.link_prediction import (
    LinkPredictor,
    evaluate_links,
    predict_links,
    train_link_predictor,
)
from memgraph_tf.errors import ConfigurationError
from memgraph_tf.feature_spec import (
    CategoricalSpec,
    LabelSpec,
    MultiCategoricalSpec,
    RequiredSpec,
)
from tests.client import communities_kit as kit
from tests.client.communities_kit import NN, OPTIONS
from tests.graphs import short_run

NAMES = [f"g{k}" for k in range(kit.GROUPS)]
TAGS = ["red", "green", "blue"]
SPEC = {
    "Item": LabelSpec(
        "Item",
        [CategoricalSpec("group", vocabulary=NAMES), MultiCategoricalSpec("tags", vocabulary=TAGS)],
    )
}


def graph_source():
    """``(source, positive pairs, negative pairs)``: items in 4 groups (``group``: the group's
    name) linked only inside their group, with ``tags`` (a possibly empty list of :data:`TAGS`)
    and ``noise`` (2 random numbers), neither carrying signal: links follow from ``group``
    alone; the negatives join items of different groups."""
    g, rng, groups, edges = kit.item_graph(
        lambda rng, group: {
            "group": NAMES[group],
            "tags": [t for t in TAGS if rng.random() < 0.4],
            "noise": rng.standard_normal(2).tolist(),
        }
    )
    for a, b in edges:
        g.add_edge(a, b, "LINK")
    pos = np.array(edges, dtype=np.int64) + kit.BASE
    neg = kit.cross_group_pairs(rng, groups, len(pos))
    return EmbeddedSource(g), pos, np.array(neg, dtype=np.int64)


@pytest.fixture(scope="module")
def graph():
    return kit.split_pairs(*graph_source())


def train_with_spec(graph, **overrides):
    """A short run of 30 steps with :data:`SPEC` on the split ``graph``; ``overrides`` go to
    :func:`tests.graphs.short_run`."""
    return kit.train_items(
        graph,
        [],
        exclude_splits=None,
        feature_spec=SPEC,
        embedding_dim=4,
        **short_run(steps=30, learning_rate=0.02, **overrides),
    )


@pytest.fixture(scope="module")
def trained(graph):
    return train_with_spec(graph)


def test_a_categorical_spec_trains_and_beats_chance(graph, trained):
    source, _, val, val_y = graph
    model = trained.model
    assert set(model.label_encoders) == {"Item"}
    assert model.properties == {}
    assert model.feature_dims == {"Item": 8}  # two embeddings' columns
    assert "src.bag_h1_Item.row_splits" in model.input_names()
    assert "src.cat_h0_Item" in model.input_names() and "dst.cat_h1_Item" in model.input_names()
    metrics = evaluate_links(model, source, val, val_y, options=OPTIONS, seed=1)
    assert metrics["auc"] >= 0.8  # chance: 0.5; group alone decides a link
    probs = predict_links(model, source, val, options=OPTIONS, seed=1)
    assert probs.shape == (len(val),)
    assert probs[val_y == 1].mean() > probs[val_y == 0].mean() + 0.2


def test_the_config_rebuilds_the_encoders(trained):
    model = trained.model
    config = model.get_config()
    assert config["feature_spec"] == {"Item": SPEC["Item"].to_dict()}
    clone = LinkPredictor.from_config(config).ensure_built()
    assert clone.feature_dims == model.feature_dims
    assert clone.input_names() == model.input_names()


def test_a_spec_of_required_properties_is_the_properties_run(graph):
    source, train, val, val_y = graph
    run = {
        "options": OPTIONS,
        "exclude_splits": None,
        **short_run(steps=10, eval_every=5, batch_size=32),
    }
    plain = train_link_predictor(source, "Item", NN, ["noise"], train, val, val_y, **run)
    spec = {"Item": LabelSpec("Item", [RequiredSpec("noise")])}
    req = train_link_predictor(source, "Item", NN, [], train, val, val_y, feature_spec=spec, **run)
    assert req.model.label_encoders == {}
    assert req.model.properties == plain.model.properties == {"Item": ["noise"]}
    assert req.history["loss"] == plain.history["loss"]
    assert req.history["val_auc"] == plain.history["val_auc"]


def test_a_spec_outside_the_neighbourhoods_is_named(graph):
    source, train, _, _ = graph
    spec = {"User": LabelSpec("User", [CategoricalSpec("group", vocabulary=NAMES)])}
    with pytest.raises(ConfigurationError, match=r"feature_spec: label 'User' has no slots"):
        train_link_predictor(
            source, "Item", NN, [], train, options=OPTIONS, feature_spec=spec, steps=1
        )


@pytest.fixture(scope="module")
def learned(graph):
    """A short run with the spec and learned node embeddings on the same label."""
    return train_with_spec(graph, node_embedding_dim=3)


def test_a_spec_label_with_learned_embeddings_reads_both(graph, learned):
    """Encoded properties (8 columns), then the learned vector (3): the encoders' first layer
    reads 11 columns; the model reads the raw sections and the ids; it learns the links; a
    node's learned vector changes its score, an unseen node gets the shared one."""
    import tensorflow as tf

    source, train, val, val_y = graph
    model = learned.model
    assert set(model.label_encoders) == set(model.node_embeddings) == {"Item"}
    assert model.feature_dims == {"Item": 8}
    assert model.source_encoder.feature_dims == {"Item": 11}
    names = model.input_names()
    assert {"src.cat_h0_Item", "src.ids_h0_Item", "dst.ids_h1_Item"} <= set(names)
    np.testing.assert_array_equal(model.node_embeddings["Item"].keys.numpy(), np.unique(train))
    metrics = evaluate_links(model, source, val, val_y, options=OPTIONS, seed=1)
    assert metrics["auc"] >= 0.8  # chance: 0.5
    before = predict_links(model, source, val[:4], options=OPTIONS, seed=1)
    layer = model.node_embeddings["Item"]
    saved = layer.table.numpy()
    try:
        layer.table.assign(saved + 1.0)
        after = predict_links(model, source, val[:4], options=OPTIONS, seed=1)
    finally:
        layer.table.assign(saved)
    assert np.abs(after - before).max() > 1e-3
    unseen = int(kit.BASE + kit.N + 7)
    rows = layer.rows(tf.constant([int(train[0, 0]), unseen], dtype=tf.int64)).numpy()
    assert rows[0] > 0 and rows[1] == 0
    clone = LinkPredictor.from_config(model.get_config()).ensure_built()
    assert clone.input_names() == names
    assert clone.source_encoder.get_config()["appended_dims"] == {"Item": 3}


def test_a_spec_label_without_its_learned_vectors_is_named(graph, learned):
    from memgraph_tf import blob
    from memgraph_tf.batch.link_scoring import ModelLinkBackend

    source = graph[0]
    model = learned.model
    enc = model.source_encoder
    nn, props, opts = ModelLinkBackend(model, options=OPTIONS).sampling("src")
    inputs = {}
    for name, value in blob.unpack(source.sample_typed([kit.BASE], nn, props, opts)).items():
        if isinstance(value, blob.Ragged):
            inputs[name], inputs[name + ".row_splits"] = value.values, value.row_splits
        else:
            inputs[name] = value
    with pytest.raises(
        ConfigurationError, match=r"inputs: missing appended_h0_Item \(the 3 columns appended"
    ):
        enc.encode(inputs)
    with pytest.raises(
        ConfigurationError, match=r"appended_dims\['User'\]: expected a label with a feature spec"
    ):
        type(enc)("Item", NN, {}, 2, feature_spec=SPEC, appended_dims={"User": 2})
