"""The Keras 3 GraphSAGE model: the mean aggregator's arithmetic, masks, config and saving,
arguments."""

from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf

from memgraph_tf.client import GraphSAGE
from memgraph_tf.errors import ConfigurationError


def _inputs(rng, batch, fanouts, dim, masks=True):
    x, shape = {}, [batch]
    for h in range(len(fanouts) + 1):
        if h:
            shape = shape + [fanouts[h - 1]]
        x[f"features_{h}"] = rng.standard_normal(shape + [dim]).astype(np.float32)
        if h and masks:
            x[f"mask_{h}"] = rng.random(shape) < 0.7
    return x


def test_one_layer_matches_the_mean_aggregator_formula():
    rng = np.random.default_rng(1)
    model = GraphSAGE([4], feature_dim=5, num_classes=3, hidden_units=6, dropout=0.0, l2=0.0)
    x = _inputs(rng, 7, [4], 5)
    x["mask_1"][0] = False  # a node with no valid neighbour: zero mean
    logits = model(x).numpy()
    layer = model.sage_layers[0]
    w_self, w_neigh = layer.self_dense.kernel.numpy(), layer.neigh_dense.kernel.numpy()
    bias = layer.bias.numpy()
    m = x["mask_1"].astype(np.float32)[..., None]
    mean = (x["features_1"] * m).sum(axis=1) / np.maximum(m.sum(axis=1), 1.0)
    hidden = np.maximum(
        np.concatenate([x["features_0"] @ w_self, mean @ w_neigh], axis=1) + bias, 0.0
    )
    expected = hidden @ model.classifier.kernel.numpy() + model.classifier.bias.numpy()
    np.testing.assert_allclose(logits, expected, rtol=1e-5, atol=1e-5)
    assert logits.shape == (7, 3)


def test_padded_slots_do_not_change_the_output():
    rng = np.random.default_rng(2)
    model = GraphSAGE([3, 2], feature_dim=4, num_classes=2, hidden_units=[5, 3])
    x = _inputs(rng, 6, [3, 2], 4)
    before = model(x, training=False).numpy()
    noisy = {k: v.copy() for k, v in x.items()}
    noisy["features_1"][~x["mask_1"]] = 100.0
    noisy["features_2"][~x["mask_2"]] = -50.0
    np.testing.assert_allclose(model(noisy, training=False).numpy(), before, rtol=1e-5, atol=1e-5)
    # and a valid slot does change it
    valid = np.argwhere(x["mask_1"])[0]
    noisy["features_1"][tuple(valid)] += 10.0
    assert not np.allclose(model(noisy, training=False).numpy(), before, atol=1e-4)


def test_without_masks_every_slot_counts():
    rng = np.random.default_rng(3)
    model = GraphSAGE([2], feature_dim=3, num_classes=2, dropout=0.0)
    x = _inputs(rng, 4, [2], 3, masks=False)
    all_true = dict(x, mask_1=np.ones((4, 2), dtype=bool))
    np.testing.assert_allclose(model(x).numpy(), model(all_true).numpy(), rtol=1e-6)


def test_config_round_trip_and_keras_file(tmp_path):
    model = GraphSAGE(
        [3, 2],
        feature_dim=4,
        num_classes=3,
        hidden_units=8,
        dropout=0.3,
        l2=1e-4,
        normalize_features=True,
        class_names=["a", "b", "c"],
    )
    model.ensure_built()
    config = model.get_config()
    assert config["fanouts"] == [3, 2] and config["feature_dim"] == 4 and config["num_classes"] == 3
    assert config["class_names"] == ["a", "b", "c"] and config["hidden_units"] == [8, 8]
    clone = GraphSAGE.from_config(config).ensure_built()
    clone.set_weights(model.get_weights())
    x = model.example_inputs(5)
    x["features_1"] = np.random.default_rng(4).random(x["features_1"].shape).astype(np.float32)
    np.testing.assert_allclose(clone(x).numpy(), model(x).numpy(), rtol=1e-6)
    path = tmp_path / "model.keras"
    model.save(path)
    loaded = keras.models.load_model(path)
    assert (
        isinstance(loaded, GraphSAGE)
        and loaded.fanouts == (3, 2)
        and loaded.class_names == ["a", "b", "c"]
    )
    np.testing.assert_allclose(loaded(x).numpy(), model(x).numpy(), rtol=1e-6)


def test_traces_with_its_input_signature():
    model = GraphSAGE([2, 2], feature_dim=3, num_classes=2).ensure_built()
    fn = tf.function(lambda x: model(x, training=False), input_signature=[model.input_signature()])
    out = fn(model.example_inputs(3))
    assert out.shape == (3, 2)


def test_argument_errors():
    with pytest.raises(
        ConfigurationError, match=r"fanouts: expected a non-empty list of integers >= 1, got \[\]"
    ):
        GraphSAGE([], feature_dim=3, num_classes=2)
    with pytest.raises(ConfigurationError, match=r"fanouts\[1\]: expected an integer >= 1, got 0"):
        GraphSAGE([2, 0], feature_dim=3, num_classes=2)
    with pytest.raises(ConfigurationError, match=r"num_classes: expected >= 2, got 1"):
        GraphSAGE([2], feature_dim=3, num_classes=1)
    with pytest.raises(
        ConfigurationError,
        match=r"hidden_units: expected an int or one width per layer \(2\), got \[4\]",
    ):
        GraphSAGE([2, 2], feature_dim=3, num_classes=2, hidden_units=[4])
    with pytest.raises(
        ConfigurationError, match=r"dropout: expected a number in \[0, 1.0\), got 1.5"
    ):
        GraphSAGE([2], feature_dim=3, num_classes=2, dropout=1.5)
    with pytest.raises(
        ConfigurationError, match=r"class_names: expected 2 names \(one per class\), got 3"
    ):
        GraphSAGE([2], feature_dim=3, num_classes=2, class_names=["a", "b", "c"])
    model = GraphSAGE([2, 2], feature_dim=3, num_classes=2)
    with pytest.raises(
        ConfigurationError,
        match=r"inputs: expected features_0..features_2 \(fanouts \[2, 2\]\), missing "
        r"\['features_2'\]",
    ):
        model(
            {
                "features_0": np.zeros((1, 3), np.float32),
                "features_1": np.zeros((1, 2, 3), np.float32),
            }
        )


@pytest.mark.parametrize(
    "masks,sparse", [(True, False), (False, False), (True, True), (False, True)]
)
def test_call_rows_and_call_table_are_the_same_function_as_call(masks, sparse):
    """call_rows over distinct rows + indices == call over the features those indices gather,
    padded slots included (their mask is false, their id the zero row); rows given as a
    tf.SparseTensor (bag-of-words) compute the same function, also on the dropout path (rate
    1e-9: every entry is kept and scaled by 1 + 1e-9, with overwhelming probability); so is
    call_table (the serving bundles' inference), over the rows as a dense tensor and as a
    SparseTensor."""
    rng = np.random.default_rng(5)
    fanouts, dim, batch = (3, 2), 6, 5
    if sparse:
        dim = 40
    model = GraphSAGE(
        fanouts,
        dim,
        4,
        hidden_units=[7, 5],
        normalize_features=True,
        normalize_hidden=True,
        dropout=1e-9 if sparse else 0.5,
    )
    model.ensure_built()
    rows = np.abs(rng.standard_normal((9, dim))).astype(np.float32)
    if sparse:
        rows *= rng.random(rows.shape) < 0.15  # some entries per row, some columns shared
    rows[0] = 0.0  # the padding row
    rows[rows < 0.5] = 0.0  # (sparse rows)
    x, shape = {"rows": rows}, [batch]
    for h in range(len(fanouts) + 1):
        if h:
            shape = shape + [fanouts[h - 1]]
        index = rng.integers(1, len(rows), size=shape).astype(np.int32)
        if h and masks:
            mask = rng.random(shape) < 0.6
            if h == 2:
                mask &= x["mask_1"][..., None]  # a padded slot's own neighbours are padding
            mask[0] = False  # a node without a valid neighbour
            index[~mask] = 0
            x[f"mask_{h}"] = mask
        x[f"index_{h}"] = index
    dense = {f"features_{h}": rows[x[f"index_{h}"]] for h in range(3)}
    dense.update({k: v for k, v in x.items() if k.startswith("mask_")})
    expected = model(dense, training=False).numpy()
    inputs = {k: tf.constant(v) for k, v in x.items()}
    if sparse:
        inputs["rows"] = tf.sparse.from_dense(rows)
    got = model.call_rows(inputs, training=False).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    for table in (tf.constant(rows), tf.sparse.from_dense(rows)):
        inputs = {**{k: tf.constant(v) for k, v in x.items()}, "rows": table}
        np.testing.assert_allclose(model.call_table(inputs).numpy(), expected, rtol=1e-5, atol=1e-6)
    assert not np.allclose(expected[0], expected[1], atol=1e-3)  # the inputs do matter
    if sparse:  # the per-slot path (dropout on each sparse row and masked mean), its gradient
        upstream = tf.constant(rng.standard_normal(expected.shape), tf.float32)
        first = model.sage_layers[0]
        kernels = [first.self_dense.kernel, first.neigh_dense.kernel]
        with tf.GradientTape() as tape:
            got = model.call_rows(inputs, training=True)
            loss = tf.reduce_sum(got * upstream)
        with tf.GradientTape() as tape_dense:
            ref_loss = tf.reduce_sum(model(dense, training=False) * upstream)
        np.testing.assert_allclose(got.numpy(), expected, rtol=1e-5, atol=1e-6)
        for grad, ref in zip(tape.gradient(loss, kernels), tape_dense.gradient(ref_loss, kernels)):
            assert np.abs(ref.numpy()).max() > 1e-3
            np.testing.assert_allclose(grad.numpy(), ref.numpy(), rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("masks", [True, False])
def test_is_the_one_label_typed_model(masks):
    """GraphSAGE runs the typed model's layers: the typed call on its hop tensors as the one
    label's slot tables gives the same logits, bit for bit."""
    from memgraph_tf.client.graphsage import ONE_LABEL
    from memgraph_tf.client.typed_graphsage import TypedGraphSAGE
    from memgraph_tf.typed_sampling import typed_features_name, typed_mask_name

    rng = np.random.default_rng(5)
    model = GraphSAGE([3, 2], feature_dim=4, num_classes=3, hidden_units=[5, 6])
    assert isinstance(model, TypedGraphSAGE) and model.spec.labels() == [ONE_LABEL]
    assert [dict(t) for t in model.layout.tables] == [{ONE_LABEL: n} for n in (1, 3, 6)]
    x = _inputs(rng, 4, [3, 2], 4, masks=masks)
    typed = {}
    for h, slots in enumerate((1, 3, 6)):
        typed[typed_features_name(h, ONE_LABEL)] = x[f"features_{h}"].reshape(4, slots, 4)
        if h and masks:
            typed[typed_mask_name(h, ONE_LABEL)] = x[f"mask_{h}"].reshape(4, slots)
    expected = model(x, training=False).numpy()
    assert np.array_equal(TypedGraphSAGE.call(model, typed, training=False).numpy(), expected)
    assert sorted(model.table_input_names(masks)) == sorted(typed)
    assert sorted(model.input_shapes()) == sorted(model.input_names())


def test_weights_are_drawn_in_the_layer_order():
    """A seeded GraphSAGE's initial weights are those of its layers made one after the other:
    per layer the self and neighbour kernels and the layer's own dropout, then the classifier's
    dropout and the classifier -- the order a seeded run's figures depend on."""
    from memgraph_tf.client.graphsage import MeanAggregator

    keras.utils.set_random_seed(11)
    model = GraphSAGE([3, 2], feature_dim=4, num_classes=3, hidden_units=[5, 6], dropout=0.3)
    model.ensure_built()
    keras.utils.set_random_seed(11)
    layers = [MeanAggregator(u, dropout=0.3) for u in (5, 6)]
    keras.layers.Dropout(0.3)
    classifier = keras.layers.Dense(3)
    for layer, width in zip(layers, (4, 10)):
        layer.build((None, width))
    classifier.build((None, 12))
    for k, layer in enumerate(layers, start=1):
        assert model.dropout(k) is model.sage_layers[k - 1].drop
        for ours, theirs in (
            (model.self_transform(k, "Node"), layer.self_dense),
            (model.neigh_transform(k, "any"), layer.neigh_dense),
        ):
            assert np.array_equal(ours.kernel.numpy(), theirs.kernel.numpy())
    assert model.output_dropout() is model.out_dropout
    assert np.array_equal(model.classifier.kernel.numpy(), classifier.kernel.numpy())
