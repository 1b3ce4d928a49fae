"""TypedGraphSAGE with feature specs: a label with a spec reads its raw sections through its
LabelEncoder; the rest of the model is the one over ``features_*`` inputs."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from memgraph_tf.client.typed_graphsage import TypedGraphSAGE
from memgraph_tf.errors import ConfigurationError
from memgraph_tf.feature_spec import (
    BooleanSpec,
    CategoricalSpec,
    LabelSpec,
    MultiCategoricalSpec,
    NumericSpec,
    TemporalSpec,
)

NN = {"(:User)-[:BOUGHT]->(:Product)": [3], "(:User)-[:FOLLOWS]->(:User)": [2]}
USER = LabelSpec(
    "User",
    [
        NumericSpec("age", mean=40.0, std=10.0, missing_indicator=True),
        BooleanSpec("vip"),
        TemporalSpec("joined", type="Date", mean=19000.0, std=400.0),
        CategoricalSpec("city", vocabulary=["Oslo", "Rome", 7], oov_buckets=1),
        MultiCategoricalSpec("tags", hash_buckets=8),
    ],
)


def user_raw(h: int, n: int, slots: int, rng) -> dict:
    """Hand-built raw sections of the User table of hop ``h`` (the contract's dense layout)."""
    cells = n * slots
    lengths = rng.integers(0, 4, cells)
    words = np.array(["a", "b", "c", "d", "e"])
    return {
        f"num_h{h}_User": rng.normal(40, 10, (n, slots, 2)).astype(np.float32),
        f"time_h{h}_User": rng.integers(18000, 20000, (n, slots, 1)),
        f"cat_h{h}_User": rng.choice(["Oslo", "Rome", "7", "Paris"], (n, slots, 1)),
        f"bag_h{h}_User": rng.choice(words, int(lengths.sum())),
        f"bag_h{h}_User.row_splits": np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64),
        f"has_h{h}_User": rng.random((n, slots, 5)) < 0.8,
    }


def model(**kw) -> TypedGraphSAGE:
    return TypedGraphSAGE(
        "User",
        NN,
        {"Product": 4},
        3,
        hidden_units=8,
        dropout=0.0,
        feature_spec={"User": USER},
        embedding_dim=4,
        **kw,
    )


def inputs_for(m: TypedGraphSAGE, n: int, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    out = {}
    for h, table in enumerate(m.layout.tables):
        for label, slots in table.items():
            if label == "User":
                out.update(user_raw(h, n, slots, rng))
            else:
                out[f"features_h{h}_{label}"] = rng.normal(size=(n, slots, 4)).astype(np.float32)
            if h:
                out[f"mask_h{h}_{label}"] = rng.random((n, slots)) < 0.7
    return out


def test_inputs_are_the_raw_sections_and_the_width_is_the_encoders():
    m = model()
    assert m.feature_dims["User"] == 2 + 1 + 1 + 4 + 4
    names = m.input_names(masks=False)
    assert "features_h0_User" not in names
    assert names[:6] == [
        "num_h0_User",
        "time_h0_User",
        "cat_h0_User",
        "bag_h0_User",
        "bag_h0_User.row_splits",
        "has_h0_User",
    ]
    assert "features_h1_Product" in names
    shapes = m.input_shapes(batch_size=2)
    assert shapes["cat_h1_User"] == (2, 2, 1)
    assert shapes["has_h0_User"] == (2, 1, 5)
    logits = m(inputs_for(m, 5))
    assert logits.shape == (5, 3)


def test_the_hook_feeds_the_encoder_output_to_the_same_layers():
    """The model on raw sections equals a model without specs on the encoder's output."""
    m = model()
    m.ensure_built()
    raw = inputs_for(m, 4, seed=1)
    plain = TypedGraphSAGE(
        "User", NN, dict(m.feature_dims), 3, hidden_units=8, dropout=0.0
    ).ensure_built()
    for mine, theirs in ((m.self_dense, plain.self_dense), (m.neigh_dense, plain.neigh_dense)):
        for name, dense in mine.items():
            theirs[name].set_weights(dense.get_weights())
    for name, bias in m.biases.items():
        plain.biases[name].assign(bias)
    plain.classifier.set_weights(m.classifier.get_weights())
    enc = m.label_encoders["User"]
    fed = {k: v for k, v in raw.items() if k.startswith(("features_", "mask_"))}
    for h in range(len(m.layout.tables)):
        fed[f"features_h{h}_User"] = m.label_encoders["User"](
            {
                "num": raw[f"num_h{h}_User"],
                "time": raw[f"time_h{h}_User"],
                "cat": raw[f"cat_h{h}_User"],
                "bag": tf.RaggedTensor.from_uniform_row_length(
                    tf.RaggedTensor.from_uniform_row_length(
                        tf.RaggedTensor.from_row_splits(
                            raw[f"bag_h{h}_User"], raw[f"bag_h{h}_User.row_splits"]
                        ),
                        enc.group_widths["bag"],
                    ),
                    m.layout.tables[h]["User"],
                ),
                "has": raw[f"has_h{h}_User"],
            }
        )
    np.testing.assert_allclose(m(raw).numpy(), plain(fed).numpy(), rtol=1e-5, atol=1e-6)


def test_config_round_trip_and_training_reaches_the_embeddings():
    m = model()
    m.ensure_built()
    again = TypedGraphSAGE.from_config(m.get_config())
    again.ensure_built()
    again.set_weights(m.get_weights())
    raw = inputs_for(m, 3, seed=2)
    np.testing.assert_array_equal(m(raw).numpy(), again(raw).numpy())
    assert again.label_encoders["User"].spec == USER
    table = m.label_encoders["User"].embeddings[0].embeddings
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(m(raw, training=True))
    grad = tape.gradient(loss, table)
    assert grad is not None and float(tf.reduce_sum(tf.abs(tf.convert_to_tensor(grad)))) > 0


@pytest.mark.parametrize(
    "spec, message",
    [
        ({"Shop": LabelSpec("Shop", [NumericSpec("x")])}, "label 'Shop' has no slots"),
        ({"Product": USER}, r"feature_spec\['Product'\]: expected the spec of label 'Product'"),
    ],
)
def test_bad_feature_specs_name_the_label(spec, message):
    with pytest.raises(ConfigurationError, match=message):
        TypedGraphSAGE("User", NN, {}, 2, feature_spec=spec)


def test_missing_raw_sections_and_encode_rows_are_named():
    m = model()
    raw = inputs_for(m, 2)
    del raw["has_h1_User"]
    with pytest.raises(ConfigurationError, match="missing has_h1_User"):
        m(raw)
    with pytest.raises(ConfigurationError, match="expected a model without feature encoders"):
        m.encode_rows({}, {})


def test_properties_and_specs_split_and_the_spec_option():
    from memgraph_tf.client import feature_encoding as fe
    from memgraph_tf.feature_spec import RequiredSpec

    only_required = LabelSpec("Product", [RequiredSpec("features")])
    specs = fe.as_label_specs({"User": USER.to_dict(), "Product": only_required})
    encoded, props = fe.split_properties(
        specs, {"User": ["features"], "Product": ["features"]}, explicit=False
    )
    # one list for every label: the spec wins; a required-only spec is plain properties
    assert list(encoded) == ["User"] and props == {"Product": ["features"]}
    with pytest.raises(ConfigurationError, match="label 'User' is in both properties and"):
        fe.split_properties(specs, {"User": ["age"]}, explicit=True)
    m = model()
    opts = fe.with_spec_option({"id_property": "id"}, m.label_encoders)
    assert opts == {"id_property": "id", "feature_spec": {"User": USER.to_dict()}}
    assert fe.with_spec_option(opts, m.label_encoders) == opts
    other = {"feature_spec": {"User": LabelSpec("User", [NumericSpec("x")]).to_dict()}}
    with pytest.raises(ConfigurationError, match=r"options\.feature_spec: expected the model's"):
        fe.with_spec_option(other, m.label_encoders)
    assert fe.raw_widths(m.label_encoders)["User"] == (2, 1, 1, 1, 5)


@pytest.mark.parametrize("layout_name", ["compact", "sparse"])
def test_compact_and_sparse_batches_are_the_dense_batches_and_encode_alike(layout_name):
    """``typed_sample_dataset`` over blobs with raw tables (docs/blob-format.md section 11, rule
    7) expands them to exactly the dense layout's raw sections, so a spec model reads either."""
    from memgraph_tf import layout
    from memgraph_tf.client.typed_graphsage import typed_sample_dataset
    from tests.client.test_link_feature_specs import SPEC, graph_source

    source = graph_source()[0]
    nn = {"(:Item)-[:LINK]-(:Item)": [3, 2]}
    model = TypedGraphSAGE("Item", nn, {}, 2, hidden_units=4, feature_spec=SPEC, embedding_dim=2)
    raw = {"Item": layout.raw_widths(SPEC["Item"])}
    spec_option = {"Item": SPEC["Item"].to_dict()}
    ids = list(range(100, 112))
    batches = {}
    for name in ("dense", layout_name):
        opts = {"id_property": "id", "seed": 3, "feature_spec": spec_option, "layout": name}
        ds = typed_sample_dataset(source, model.spec, ids, {}, {}, options=opts, raw=raw)
        batches[name] = next(iter(ds))
    dense, other = batches["dense"], batches[layout_name]
    for name in model.input_names() + ["ids_h1_Item", "bag_h2_Item.row_splits"]:
        np.testing.assert_array_equal(other[name].numpy(), dense[name].numpy(), err_msg=name)
    np.testing.assert_allclose(
        model.encode(other).numpy(), model.encode(dense).numpy(), rtol=1e-6, atol=1e-6
    )
