"""LabelEncoder: each kind, missing values, OOV and hashing, empty bags, output width, config
round trip and a SavedModel that holds the encoders (string inputs traced)."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from memgraph_tf import feature_spec as fs
from memgraph_tf import layout
from memgraph_tf.client.feature_encoding import (
    LabelEncoder,
    bag_splits_name,
    label_features,
    raw_widths,
)
from memgraph_tf.errors import ConfigurationError
from memgraph_tf.layout import typed_raw_name


def bag(rows, cells: int, slots: int):
    """A ragged ``[n, slots, cells, None]`` from one list of strings per cell (row-major)."""
    flat = tf.RaggedTensor.from_row_lengths(
        tf.constant([x for r in rows for x in r], tf.string), [len(r) for r in rows]
    )
    return tf.RaggedTensor.from_uniform_row_length(
        tf.RaggedTensor.from_uniform_row_length(flat, cells), slots
    )


def test_numeric_boolean_required_standardised_with_defaults():
    spec = fs.LabelSpec(
        "P",
        [
            fs.NumericSpec("age", default=10.0, mean=30.0, std=10.0, missing_indicator=True),
            fs.NumericSpec("pos", length=2, standardize=False, default=-1.0),
            fs.BooleanSpec("vip", default=True),
            fs.RequiredSpec("w"),
        ],
    )
    enc = LabelEncoder(spec, required_widths={"w": 2})
    assert enc.groups == ["num", "has"]
    assert enc.group_widths["num"] == 1 + 2 + 1 + 2
    assert enc.output_width == 2 + 2 + 1 + 2
    # the widths the blob carries for this spec (the procedure's layout) are the encoder's
    assert raw_widths({"P": enc})["P"] == layout.raw_widths(spec, {"w": 2})
    num = np.array([[[50, 3, 4, 0, 7, 8], [0, 0, 0, 0, 5, 6]]], np.float32)
    has = np.array([[[True] * 4, [False, False, False, True]]])
    out = enc({"num": num, "has": has}).numpy()
    np.testing.assert_allclose(out[0, 0], [2.0, 0.0, 3, 4, 0, 7, 8])
    # missing: defaults (age 10 -> -2 standardised, indicator 1), pos -1, vip true
    np.testing.assert_allclose(out[0, 1], [-2.0, 1.0, -1, -1, 1, 5, 6])


def test_temporal_microseconds_keep_precision():
    mean = 1_700_000_000_000_000.0
    spec = fs.LabelSpec(
        "E",
        [fs.TemporalSpec("at", type="LocalDateTime", mean=mean, std=1.0, default=mean + 5)],
    )
    enc = LabelEncoder(spec)
    time = np.array([[[1_700_000_000_000_003], [0]]], np.int64)
    out = enc({"time": time, "has": np.array([[[True], [False]]])}).numpy()
    # float32 arithmetic on the raw count would lose these units; the encoder subtracts in float64
    np.testing.assert_array_equal(out[0, :, 0], [3.0, 5.0])
    assert out.dtype == np.float32


def test_categorical_vocabulary_oov_missing_and_hashing():
    spec = fs.LabelSpec(
        "P",
        [
            fs.CategoricalSpec("city", vocabulary=["a", 3, True], oov_buckets=2),
            fs.CategoricalSpec("code", hash_buckets=8),
            fs.CategoricalSpec("strict", vocabulary=["x"], oov_buckets=0),
        ],
    )
    enc = LabelEncoder(spec, embedding_dim=3)
    assert enc.output_width == 9
    enc.build()
    cat = np.array(
        [[["a", "k1", "x"], ["3", "k1", "never seen"], ["true", "k2", ""], ["unseen", "", ""]]]
    )
    has = np.ones((1, 4, 3), bool)
    has[0, 3] = [True, False, False]
    out = enc({"cat": cat, "has": has}).numpy()
    city, code, strict = (enc.embeddings[i].embeddings.numpy() for i in range(3))
    # StringLookup puts the OOV indices first: vocabulary index i -> row oov + i
    np.testing.assert_allclose(out[0, 0, :3], city[2])
    np.testing.assert_allclose(out[0, 1, :3], city[3])
    np.testing.assert_allclose(out[0, 2, :3], city[4])
    assert any(np.allclose(out[0, 3, :3], city[k]) for k in (0, 1))  # an OOV bucket
    assert enc.missing_ids == [5, 8, 2]
    # hashing: the same text the same row; missing -> the extra row
    np.testing.assert_allclose(out[0, 0, 3:6], out[0, 1, 3:6])
    np.testing.assert_allclose(out[0, 3, 3:6], code[8])
    # oov_buckets 0: an unseen value takes the missing row, as a missing one does
    np.testing.assert_allclose(out[0, 0, 6:], strict[1])
    np.testing.assert_allclose(out[0, 1, 6:], strict[2])
    np.testing.assert_allclose(out[0, 3, 6:], strict[2])


def test_multi_categorical_mean_and_empty_bags():
    spec = fs.LabelSpec(
        "P",
        [
            fs.MultiCategoricalSpec("tags", vocabulary=["x", "y"], oov_buckets=1),
            fs.MultiCategoricalSpec("more", hash_buckets=4, missing_indicator=True),
        ],
    )
    enc = LabelEncoder(spec, embedding_dim=2)
    assert enc.output_width == 5
    enc.build()
    # [n=1, s=3, Wb=2] cells, row-major: slot 0 (tags, more), slot 1 (tags, more), slot 2 ...
    rows = [["x", "y"], ["q"], [], ["a", "a"], ["y"], []]
    has = np.array([[[True, True], [True, True], [True, False]]])
    out = enc({"bag": bag(rows, 2, 3), "has": has}).numpy()
    tags = enc.embeddings[0].embeddings.numpy()
    more = enc.embeddings[1].embeddings.numpy()

    def hashed(text):
        return more[int(enc.lookups[1](tf.constant([text]))[0])]

    np.testing.assert_allclose(out[0, 0, :2], (tags[1] + tags[2]) / 2, rtol=1e-6)
    np.testing.assert_allclose(out[0, 0, 2:4], hashed("q"))
    np.testing.assert_array_equal(out[0, 1, :2], [0.0, 0.0])  # an empty bag: zeros
    np.testing.assert_allclose(out[0, 1, 2:4], hashed("a"))
    np.testing.assert_allclose(out[0, 2, :2], tags[2])
    np.testing.assert_array_equal(out[0, 2, 2:4], [0.0, 0.0])  # a missing bag: zeros
    np.testing.assert_array_equal(out[0, :, 4], [0.0, 0.0, 1.0])


def test_label_features_from_flat_bag_sections_and_missing_sections():
    spec = fs.LabelSpec(
        "P",
        [
            fs.CategoricalSpec("city", vocabulary=["a"]),
            fs.MultiCategoricalSpec("tags", vocabulary=["x"]),
        ],
    )
    enc = LabelEncoder(spec, embedding_dim=2)
    assert enc.section_names(1, "P") == [
        "cat_h1_P",
        "bag_h1_P",
        "bag_h1_P.row_splits",
        "has_h1_P",
    ]
    inputs = {
        typed_raw_name("cat", 1, "P"): np.array([[["a"], ["b"]]]),
        typed_raw_name("bag", 1, "P"): np.array(["x", "x", "z"]),
        bag_splits_name(1, "P"): np.array([0, 2, 3], np.int64),
        typed_raw_name("has", 1, "P"): np.ones((1, 2, 2), bool),
    }
    ragged = {
        **inputs,
        "bag_h1_P": bag([["x", "x"], ["z"]], 1, 2),
    }
    out = label_features(enc, inputs, 1, "P").numpy()
    assert out.shape == (1, 2, 4)
    np.testing.assert_allclose(out, label_features(enc, ragged, 1, "P").numpy())
    tags = enc.embeddings[1].embeddings.numpy()
    np.testing.assert_allclose(out[0, 0, 2:], tags[1])
    with pytest.raises(ConfigurationError, match="missing cat_h1_P"):
        label_features(enc, {k: v for k, v in inputs.items() if k != "cat_h1_P"}, 1, "P")
    with pytest.raises(ConfigurationError, match=r"missing bag_h1_P\.row_splits"):
        label_features(
            enc, {k: v for k, v in inputs.items() if not k.endswith("row_splits")}, 1, "P"
        )


def test_bad_embedding_dim_and_bad_spec():
    spec = fs.LabelSpec("P", [fs.NumericSpec("x")])
    with pytest.raises(ConfigurationError, match="embedding_dim: expected an integer >= 1, got 0"):
        LabelEncoder(spec, embedding_dim=0)
    with pytest.raises(fs.FeatureSpecError, match="label 'P' property 'x'"):
        LabelEncoder({"label": "P", "properties": [{"name": "x", "kind": "numeric", "std": 0}]})


MIXED = fs.LabelSpec(
    "Person",
    [
        fs.NumericSpec("age", mean=40.0, std=12.0, missing_indicator=True),
        fs.TemporalSpec("joined", type="Date", mean=19000.0, std=300.0),
        fs.CategoricalSpec("city", vocabulary=["Oslo", "Rome"], oov_buckets=1),
        fs.MultiCategoricalSpec("tags", hash_buckets=16),
    ],
)


def mixed_raw():
    return {
        "num": np.array([[[41.0], [0.0]]], np.float32),
        "time": np.array([[[19100], [18000]]], np.int64),
        "cat": np.array([[["Rome"], ["Paris"]]]),
        "bag": bag([["a", "b"], []], 1, 2),
        "has": np.array([[[True] * 4, [False, True, True, True]]]),
    }


def test_config_round_trip_gives_the_same_layer():
    enc = LabelEncoder(MIXED, embedding_dim=3, name="enc_person")
    enc.build()
    again = LabelEncoder.from_config(enc.get_config())
    again.build()
    again.set_weights(enc.get_weights())
    assert again.output_width == enc.output_width == 2 + 1 + 3 + 3
    assert again.spec == MIXED
    np.testing.assert_array_equal(enc(mixed_raw()).numpy(), again(mixed_raw()).numpy())


def test_saved_model_holds_the_encoder(tmp_path):
    enc = LabelEncoder(MIXED, embedding_dim=3)
    enc.build()
    want = enc(mixed_raw()).numpy()

    class Holder(tf.Module):
        def __init__(self, layer):
            super().__init__()
            self.layer = layer

        @tf.function(
            input_signature=[
                tf.TensorSpec([None, None, 1], tf.float32),
                tf.TensorSpec([None, None, 1], tf.int64),
                tf.TensorSpec([None, None, 1], tf.string),
                tf.TensorSpec([None], tf.string),
                tf.TensorSpec([None], tf.int64),
                tf.TensorSpec([None, None, 4], tf.bool),
            ]
        )
        def encode(self, num, time, cat, bag_values, bag_splits, has):
            inputs = {
                "num_h0_Person": num,
                "time_h0_Person": time,
                "cat_h0_Person": cat,
                "bag_h0_Person": bag_values,
                "bag_h0_Person.row_splits": bag_splits,
                "has_h0_Person": has,
            }
            return label_features(self.layer, inputs, 0, "Person")

    tf.saved_model.save(Holder(enc), str(tmp_path / "m"))
    del enc
    loaded = tf.saved_model.load(str(tmp_path / "m"))
    raw = mixed_raw()
    got = loaded.encode(
        raw["num"],
        raw["time"],
        raw["cat"],
        tf.constant(["a", "b"]),
        tf.constant([0, 2, 2], tf.int64),
        raw["has"],
    ).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-6)
