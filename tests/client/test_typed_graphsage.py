"""The typed GraphSAGE model (memgraph_tf.client.typed_graphsage)."""

from __future__ import annotations

import keras
import numpy as np
import pytest

from memgraph_tf.client.typed_graphsage import TypedGraphSAGE, typed_model_inputs
from memgraph_tf.errors import ConfigurationError
from memgraph_tf.typed_datasets import sample_neighbourhoods, shop_graph
from memgraph_tf.typed_sampling import TypedSamplingSpec

SHOP = {
    "(:User)-[:BOUGHT]->(:Product)": [5, 0],
    "(:User)-[:FOLLOWS]->(:User)": [3, 0],
    "(:Product)-[:IN]->(:Category)": [0, 1],
}


@pytest.fixture(scope="module")
def shop():
    return shop_graph(400, num_products=120, seed=2)


def _inputs(graph, seeds):
    spec = TypedSamplingSpec.from_num_neighbors("User", SHOP)
    tables = sample_neighbourhoods(graph, spec, seeds, np.random.default_rng(1))
    features = {label: s.features for label, s in graph.node_sets.items()}
    return typed_model_inputs(spec, tables, features)


def test_inputs_and_outputs_follow_the_layout(shop):
    dims = {"User": 16, "Product": 12, "Category": 8}
    model = TypedGraphSAGE("User", SHOP, dims, 4, hidden_units=8)
    x = _inputs(shop, list(range(6)))
    assert sorted(x) == sorted(model.input_names())
    for name, shape in model.input_shapes(6).items():
        assert x[name].shape == shape, name
    assert model(x).shape == (6, 4)
    # a category feature deep in the neighbourhood changes the output: the typed path is wired
    changed = dict(x)
    changed["features_h2_Category"] = x["features_h2_Category"] + 5.0
    assert not np.allclose(model(x).numpy(), model(changed).numpy())


def test_padded_slots_do_not_count(shop):
    dims = {"User": 16, "Product": 12, "Category": 8}
    model = TypedGraphSAGE("User", SHOP, dims, 4, hidden_units=8)
    x = _inputs(shop, [0, 1])
    noisy = dict(x)
    for name in [n for n in x if n.startswith("features_h1_User")]:
        mask = x["mask_h1_User"]
        noise = np.random.default_rng(0).normal(size=x[name].shape).astype(np.float32)
        noisy[name] = np.where(mask[..., None], x[name], noise)
    np.testing.assert_allclose(model(x).numpy(), model(noisy).numpy(), rtol=1e-5, atol=1e-6)


def test_a_label_without_features_and_the_config_round_trip(shop):
    dims = {"User": 16, "Product": 12}  # categories carry no features: a learned vector
    model = TypedGraphSAGE("User", SHOP, dims, 4, hidden_units=[8, 8], class_names=list("abcd"))
    x = _inputs(shop, [3])
    assert "features_h2_Category" not in model.input_names()
    x.pop("features_h2_Category")
    out = model(x).numpy()
    clone = TypedGraphSAGE.from_config(model.get_config())
    clone.build()
    clone.set_weights(model.get_weights())
    np.testing.assert_allclose(clone(x).numpy(), out, rtol=1e-6)
    assert len(model.trainable_weights) == len(clone.trainable_weights)


def test_it_learns_what_only_the_typed_structure_reveals():
    graph = shop_graph(2_000, num_products=300, signal=0.8, follows_per_user=2, seed=0)
    spec = TypedSamplingSpec.from_num_neighbors("User", SHOP)
    dims = {label: s.width for label, s in graph.node_sets.items()}
    features = {label: s.features for label, s in graph.node_sets.items()}
    keras.utils.set_random_seed(0)
    model = TypedGraphSAGE("User", SHOP, dims, 4, hidden_units=32, dropout=0.0, l2=0.0)
    model.compile(
        optimizer=keras.optimizers.Adam(0.01),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    train, test = np.array(graph.ids("train")), np.array(graph.ids("test"))
    rng = np.random.default_rng(0)
    x = typed_model_inputs(spec, sample_neighbourhoods(graph, spec, train, rng), features)
    model.fit(x, graph.labels[train], batch_size=128, epochs=8, verbose=0)
    xt = typed_model_inputs(spec, sample_neighbourhoods(graph, spec, test, rng), features)
    accuracy = float(np.mean(model.predict(xt, verbose=0).argmax(-1) == graph.labels[test]))
    assert accuracy >= 0.9 * graph.best_accuracy, (accuracy, graph.best_accuracy)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"feature_dims": {"User": 16, "Shop": 3}}, r"'Shop': no such label in the sampled"),
        ({"feature_dims": {"User": -2}}, r"feature_dims\['User'\]: expected an integer >= 0"),
        ({"num_classes": 1}, r"num_classes: expected an integer >= 2, got 1"),
        ({"hidden_units": [8, 8]}, r"hidden_units: expected an integer >= 1 or one per layer"),
        ({"num_neighbors": {"(:User)-[:BOUGHT]->(:Product)": [-1]}}, r"expected an integer >= 0"),
    ],
)
def test_bad_configs_name_the_setting(change, message):
    kwargs = {
        "seed_label": "User",
        "num_neighbors": {"(:User)-[:BOUGHT]->(:Product)": [5]},
        "feature_dims": {"User": 16},
        "num_classes": 4,
    }
    kwargs.update(change)
    with pytest.raises(ConfigurationError, match=message):
        TypedGraphSAGE(**kwargs)
