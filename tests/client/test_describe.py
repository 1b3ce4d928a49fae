"""The client asks tf_features.describe (not a packed node) for widths, dtypes and class counts; the
pipelines and GraphSAGE build their tensors from memgraph_tf.layout, float64 features included."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from memgraph_tf import layout
from memgraph_tf.client import (
    EmbeddedSource,
    FeatureCache,
    GraphSAGE,
    sample_dataset,
    train_graphsage,
)
from memgraph_tf.client.pipeline import feature_width, model_inputs
from memgraph_tf.client.tasks import infer_num_classes
from memgraph_tf.embedded import EmbeddedGraph
from memgraph_tf.errors import ConfigurationError, GraphDataError
from tests.graphs import short_run

ID0 = 10_000
OPTS = {"id_property": "id"}


class NoPacking(EmbeddedSource):
    """An embedded source whose blob procedures fail: only describe may be asked."""

    def pack_blob_b64(self, *args, **kwargs):
        raise AssertionError("pack was called; describe should have been asked")

    def sample_blob_b64(self, *args, **kwargs):
        raise AssertionError("sample was called; describe should have been asked")


def test_embedded_describe_is_the_procedure_s_answer(community):
    source, labels, features = community
    opts = {**OPTS, "label_property": "label", "fanouts": [3], "dtype": "float64"}
    info = source.describe(["features"], opts)
    assert info == source.graph.call("tf_features.describe", ["features"], opts)[0]
    assert info["feature_width"] == features.shape[1] and info["dtype"] == "float64"
    assert info["num_classes"] == int(labels.max()) + 1 == 3
    assert info["sections"] == [
        s.to_map() for s in layout.sample_sections([3], features.shape[1], "float64", labels=True)
    ]


def test_width_and_class_count_come_from_describe_without_packing(make_community):
    graph, labels, _ = make_community(num_nodes=30, num_classes=4, dim=5)
    source = NoPacking(graph)
    assert feature_width(source, ["features"], OPTS) == 5
    assert feature_width(source, ["features", "label"], {**OPTS, "low_degree": "resample"}) == 6
    assert infer_num_classes(source, "label", OPTS) == int(labels.max()) + 1 == 4
    graph.set_property(
        3, "label", 9
    )  # a node outside any training set still counts: all nodes are classes
    assert infer_num_classes(source, "label", OPTS) == 10
    graph.set_property(3, "label", "nine")
    with pytest.raises(
        GraphDataError,
        match=r"node 3 property 'label' \(options.label_property\): expected an "
        r"integer class, got str 'nine'",
    ):
        infer_num_classes(source, "label", OPTS)
    with pytest.raises(
        ConfigurationError,
        match=r"label_property: expected a class \(an integer >= 0\) in 'nope' on "
        r"some :Item node, got none \(pass num_classes= to set the class count\)",
    ):
        infer_num_classes(source, "nope", {**OPTS, "label": "Item"})


@pytest.mark.parametrize(
    "options",
    [
        {"dtype": "float64", "label_property": "label"},
        {"low_degree": "resample"},
        {"dtype": "float64", "low_degree": "pad"},
    ],
)
def test_sample_dataset_tensors_follow_the_layout(community, options):
    source, _, features = community
    opts = {**OPTS, **options}
    ds = sample_dataset(
        source, np.arange(ID0, ID0 + 6), [3, 2], ["features"], options=opts, batch_size=4, seed=1
    )
    expected = layout.sample_sections(
        [3, 2],
        features.shape[1],
        opts.get("dtype", "float32"),
        pad=opts.get("low_degree", "pad") == "pad",
        labels="label_property" in opts,
        batch=None,
    )
    spec = ds.element_spec
    assert sorted(spec) == sorted(s.name for s in expected)
    for s in expected:
        assert spec[s.name].dtype == tf.as_dtype(s.dtype), s.name
        assert tuple(spec[s.name].shape.as_list()) == s.shape, s.name
    batch = next(iter(ds))
    for s in expected:
        assert batch[s.name].dtype == tf.as_dtype(s.dtype)


def test_graphsage_feature_dtype_sets_its_input_signature():
    model = GraphSAGE([3, 2], feature_dim=4, num_classes=2, feature_dtype="float64")
    signature = model.input_signature()
    assert {k: v.dtype for k, v in signature.items()} == {
        "features_0": tf.float64,
        "features_1": tf.float64,
        "mask_1": tf.bool,
        "features_2": tf.float64,
        "mask_2": tf.bool,
    }
    assert signature["features_2"].shape.as_list() == [None, 3, 2, 4]
    assert model.example_inputs(2)["features_1"].dtype == np.float64
    again = GraphSAGE.from_config(model.get_config())
    assert again.feature_dtype == "float64" and again.input_signature() == signature
    assert (
        GraphSAGE([2], feature_dim=3, num_classes=2).input_signature()["features_0"].dtype
        == tf.float32
    )
    with pytest.raises(
        ConfigurationError, match=r"feature_dtype: expected one of float32, float64, got 'float16'"
    ):
        GraphSAGE([2], feature_dim=3, num_classes=2, feature_dtype="float16")


@pytest.mark.parametrize("use_feature_cache", [False, True])
def test_graphsage_trains_on_float64_features(make_community, use_feature_cache):
    graph, _, _ = make_community(num_nodes=24, num_classes=3, dim=4, seed=2)
    source = EmbeddedSource(graph)
    ids = np.arange(ID0, ID0 + 24)
    opts = {**OPTS, "dtype": "float64"}
    result = train_graphsage(
        source,
        ids[:16],
        ids[16:],
        options=opts,
        use_feature_cache=use_feature_cache,
        **short_run(
            fanouts=(3, 2), hidden_units=4, steps=1, eval_every=1, eval_draws=1, batch_size=8
        ),
    )
    model = result.model
    assert model.feature_dtype == "float64" and model.num_classes == 3 and model.feature_dim == 4
    assert len(result.history["loss"]) == 1 and np.isfinite(result.history["loss"][0])
    if use_feature_cache:
        assert result.feature_cache.dtype == tf.float64
    # the model's own signature accepts the float64 batches the pipeline makes...
    fn = tf.function(lambda x: model(x, training=False), input_signature=[model.input_signature()])
    batch = next(
        iter(
            sample_dataset(
                source,
                ids[16:],
                model.fanouts,
                ["features"],
                options=opts,
                batch_size=8,
                seed=3,
                include_ids=False,
            )
        )
    )
    assert batch["features_0"].dtype == tf.float64
    logits = fn(model_inputs(batch, model.hops))
    assert logits.shape == (8, 3) and bool(tf.reduce_all(tf.math.is_finite(logits)))
    # ...and float32 ones are not what it was declared for
    as_float32 = {
        k: tf.cast(v, tf.float32) if v.dtype == tf.float64 else v
        for k, v in model_inputs(batch, model.hops).items()
    }
    with pytest.raises((TypeError, ValueError), match=r"float32|float64"):
        fn(as_float32)


def test_feature_cache_keeps_the_blob_dtype(community):
    source, _, features = community
    cache = FeatureCache.from_source(
        source, [ID0, ID0 + 1], ["features"], {**OPTS, "dtype": "float64"}
    )
    assert cache.dtype == tf.float64 and cache.width == features.shape[1]


def test_empty_graph_has_no_width_to_describe():
    source = EmbeddedSource(EmbeddedGraph())
    with pytest.raises(
        GraphDataError,
        match=r"properties: expected a node having all of \['features'\], got no node "
        r"with all of them",
    ):
        feature_width(source, ["features"])
