"""Feature-spec labels served from a cache: ``train_link_predictor`` reads a spec label's raw
property columns once (:class:`~memgraph_tf.client.pipeline.RawFeatureCache`, through
``tf_features.sample_typed`` with fanout 0) and gathers them by the pair blobs' ids, so the blobs
carry ids only. The model's inputs are exactly the sampled ones, so a training with the cache is
the training without it (same seed, TF threads pinned to 1): on a numeric, boolean, temporal and
categorical spec and on the featureless default (FastRP read through a numeric spec). A
``multi_categorical`` property (ragged bags) keeps its label on the sampled path."""

from __future__ import annotations

import datetime

import numpy as np
import pytest
import tensorflow as tf

from memgraph_tf.client import EmbeddedSource
from memgraph_tf.client.link_prediction import (
    pair_sample_dataset,
    predict_links,
    train_link_predictor,
)
from memgraph_tf.client.pipeline import RawFeatureCache, raw_cacheable
from memgraph_tf.client.structural import STRUCTURAL_PROPERTY
from memgraph_tf.errors import ConfigurationError, GraphDataError
from memgraph_tf.feature_spec import (
    BooleanSpec,
    CategoricalSpec,
    LabelSpec,
    MultiCategoricalSpec,
    NumericSpec,
    TemporalSpec,
)
from tests.client import communities_kit as kit
from tests.client.communities_kit import NN, OPTIONS
from tests.graphs import short_run

NAMES = [f"g{k}" for k in range(kit.GROUPS)]
SPEC = {
    "Item": LabelSpec(
        "Item",
        [
            CategoricalSpec("group", vocabulary=NAMES[:3], oov_buckets=1),
            NumericSpec("noise", length=2, standardize=True, mean=0.1, std=0.9),
            BooleanSpec("flag", missing_indicator=True),
            TemporalSpec("born", type="Date", mean=11500.0, std=300.0),
        ],
    )
}
RUN = short_run(steps=12, eval_every=6, batch_size=32, learning_rate=0.02)


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """TF threads pinned to 1 when this module is the first to run TF (the setting is fixed
    once TF has run an op), so the equalities below do not rest on the op scheduler."""
    try:
        tf.config.threading.set_intra_op_parallelism_threads(1)
        tf.config.threading.set_inter_op_parallelism_threads(1)
    except RuntimeError:  # (TF already initialised by an earlier module)
        pass


def spec_graph():
    """``(source, train, val, val_y)``: items with a categorical ``group`` (the link signal; some
    missing), noisy numbers, a flag (some missing) and a date-time; links inside groups."""
    g, rng, groups, edges = kit.item_graph(
        lambda rng, group: {
            "group": NAMES[group] if rng.random() < 0.9 else None,
            "noise": rng.standard_normal(2).tolist(),
            "flag": bool(rng.random() < 0.5) if rng.random() < 0.8 else None,
            "born": datetime.date(2001, 1, 1) + datetime.timedelta(days=int(rng.integers(0, 900))),
        }
    )
    for a, b in edges:
        g.add_edge(a, b, "LINK")
    pos = np.array(edges, dtype=np.int64) + kit.BASE
    neg = np.array(kit.cross_group_pairs(rng, groups, len(pos)), dtype=np.int64)
    return kit.split_pairs(EmbeddedSource(g), pos, neg)


@pytest.fixture(scope="module")
def graph():
    return spec_graph()


def train(graph, feature_spec=SPEC, use_feature_cache=True, *, nn=NN, **extra):
    """``train_link_predictor`` on ``graph`` (the tuple of :func:`spec_graph`) with this file's
    short run; ``extra``: further keyword arguments."""
    source, tr, val, val_y = graph
    return train_link_predictor(
        source,
        "Item",
        nn,
        [],
        tr,
        val,
        val_y,
        options=OPTIONS,
        exclude_splits=None,
        feature_spec=feature_spec,
        embedding_dim=4,
        use_feature_cache=use_feature_cache,
        **RUN,
        **extra,
    )


def assert_same_training(a, b):
    assert a.history["loss"] == b.history["loss"]
    assert a.history["val_auc"] == b.history["val_auc"]
    for x, y in zip(a.model.get_weights(), b.model.get_weights(), strict=True):
        np.testing.assert_array_equal(x, y)


def test_a_spec_label_trains_the_same_with_the_raw_cache(graph):
    cached = train(graph, SPEC, True)
    sampled = train(graph, SPEC, False)
    assert isinstance(cached.feature_caches["Item"], RawFeatureCache)
    assert sampled.feature_caches is None
    assert_same_training(cached, sampled)
    source, _, val, _ = graph
    with_cache = predict_links(
        cached.model, source, val, options=OPTIONS, seed=1, feature_caches=cached.feature_caches
    )
    without = predict_links(cached.model, source, val, options=OPTIONS, seed=1)
    np.testing.assert_array_equal(with_cache, without)


def test_cached_batches_are_the_sampled_batches(graph):
    """Every model input of a cached batch equals the sampled one, pads included, and the
    cached call asks the procedure for no raw columns."""
    cached = train(graph, SPEC, True)
    source, tr, _, _ = graph
    model, caches = cached.model, cached.feature_caches
    labels = {"source_label": "Item", "target_label": "Item"}
    common = dict(options={**OPTIONS, **labels}, negatives=1, batch_size=48, seed=3)
    a = next(iter(pair_sample_dataset(source, model, tr, {}, feature_caches=caches, **common)))
    b = next(iter(pair_sample_dataset(source, model, tr, {}, **common)))
    names = model.input_names()
    assert any(".cat_h1_Item" in n for n in names) and any(".time_h0_" in n for n in names)
    assert any(bool(tf.reduce_any(~v)) for k, v in b.items() if ".mask_h" in k)  # pads present
    for name in names:
        np.testing.assert_array_equal(a[name].numpy(), b[name].numpy(), err_msg=name)


def test_the_featureless_default_trains_the_same_with_the_cache(graph):
    cached = train(graph, None, True)
    sampled = train(graph, None, False)
    enc = cached.model.label_encoders["Item"]
    assert [p.name for p in enc.spec.properties] == [STRUCTURAL_PROPERTY]
    assert cached.feature_caches["Item"].widths == {"num": enc.group_widths["num"], "has": 1}
    assert_same_training(cached, sampled)


def test_a_multi_categorical_label_keeps_the_sampled_path(graph):
    source = graph[0]
    bag = LabelSpec("Item", [MultiCategoricalSpec("tags", vocabulary=["a"])])
    assert not raw_cacheable(bag) and raw_cacheable(SPEC["Item"])
    with pytest.raises(ConfigurationError, match=r"label 'Item': a multi_categorical property"):
        RawFeatureCache.from_source(source, "Item", bag, "LINK", OPTIONS)


def test_an_uncached_id_is_named():
    """A cache without a reader (built from its columns) names an id it lacks."""
    cache = RawFeatureCache([5, 9], {"num": [[1.0], [2.0]], "has": [[True], [True]]})
    rows = cache.gather(tf.constant([[9, -1]], tf.int64))
    np.testing.assert_array_equal(rows["num"].numpy(), [[[2.0], [0.0]]])
    np.testing.assert_array_equal(rows["has"].numpy(), [[[True], [False]]])
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"uncached id"):
        cache.gather(tf.constant([7], tf.int64))


def test_a_plain_cache_for_a_spec_label_is_refused(graph):
    from memgraph_tf.client.pipeline import FeatureCache

    wrong = {"Item": FeatureCache(np.arange(kit.BASE, kit.BASE + kit.N), np.zeros((kit.N, 3)))}
    with pytest.raises(ConfigurationError, match=r"feature_caches\['Item'\]: expected the raw"):
        train(graph, feature_caches=wrong)


def test_a_node_created_after_the_fill_is_read_by_the_batch_meeting_it():
    """A live graph: a node created after the cache was filled is read by the first batch that
    meets it (the fill's procedure call, for the uncached ids only) and kept, so the batches
    equal the sampled ones as before."""
    graph = spec_graph()
    cached = train(graph, SPEC, True)
    source, tr, _, _ = graph
    model, cache = cached.model, cached.feature_caches["Item"]
    new_id = kit.BASE + kit.N
    new = source.graph.add_node(["Item"], {"id": new_id, "group": "g1", "noise": [0.5, -0.5]})
    for i in range(0, kit.N, 3):
        source.graph.add_edge(new, i, "LINK")
    assert new_id not in cache.ids
    labels = {"source_label": "Item", "target_label": "Item"}
    common = dict(
        options={**OPTIONS, **labels}, negatives=1, batch_size=48, seed=3, num_parallel_calls=4
    )
    with_cache = pair_sample_dataset(
        source, model, tr, {}, feature_caches={"Item": cache}, **common
    )
    sampled = pair_sample_dataset(source, model, tr, {}, **common)
    met = False
    for a, b in zip(with_cache, sampled, strict=True):
        met = met or any(bool(tf.reduce_any(v == new_id)) for k, v in b.items() if ".ids_h" in k)
        for name in model.input_names():
            np.testing.assert_array_equal(a[name].numpy(), b[name].numpy(), err_msg=name)
    assert met  # (the new node is in some neighbourhood)
    row = cache.gather(tf.constant([new_id], tf.int64))
    np.testing.assert_array_equal(row["num"].numpy()[0, :2], [0.5, -0.5])


def test_the_rows_read_for_uncached_ids_are_kept_up_to_the_bound():
    calls = []

    def reader(ids):
        calls.append(list(ids))
        return {"num": [[float(i)] for i in ids], "has": [[True] for _ in ids]}

    cache = RawFeatureCache([5], {"num": [[1.0]], "has": [[True]]}, reader=reader, max_extra_rows=1)
    rows = cache.gather(tf.constant([[7, 8, 7, -1], [5, 8, -1, -1]], tf.int64))
    np.testing.assert_array_equal(rows["num"].numpy()[..., 0], [[7, 8, 7, 0], [1, 8, 0, 0]])
    np.testing.assert_array_equal(rows["has"].numpy()[..., 0], [[1, 1, 1, 0], [1, 1, 0, 0]])
    again = cache.gather(tf.constant([8, 7, 5], tf.int64))
    np.testing.assert_array_equal(again["num"].numpy()[:, 0], [8, 7, 1])
    assert calls == [[7, 8], [8]]  # 7 kept (one extra row at most), 8 read again


def test_a_bad_value_on_a_node_never_sampled_trains_as_without_the_cache():
    """A node of a spec label that no batch gathers (a tag no item is tagged with; negatives are
    items), with a value the spec refuses (two numbers for one): the fill leaves it out (with
    the nodes of its failing call), so the training is the one without the cache; a batch
    gathering it fails with the procedure's error naming the node, the property and the value,
    as a sampled batch does."""
    source, tr, val, val_y = spec_graph()
    g = source.graph
    tags = [g.add_node(["Tag"], {"id": 1000 + t, "w": float(t)}) for t in range(8)]
    for i in range(kit.N):
        g.add_edge(i, tags[i % 8], "TAGGED")
    g.add_node(["Tag"], {"id": 1100, "w": [1.0, 2.0]})
    spec = {**SPEC, "Tag": LabelSpec("Tag", [NumericSpec("w")])}
    nn = {**NN, "(:Item)-[:TAGGED]->(:Tag)": [2]}
    runs = [train((source, tr, val, val_y), spec, use, nn=nn) for use in (True, False)]
    assert_same_training(*runs)
    cache = runs[0].feature_caches["Tag"]
    assert len(cache.ids) == 0 and cache.widths == {"num": 1, "has": 1}  # (one failing call)
    with pytest.raises(
        GraphDataError,
        match=r"node with id = 1100 \(:Tag\) property 'w' \(kind 'numeric'\): expected a number, "
        r"got list \[1.0, 2.0\]",
    ):
        cache.gather(tf.constant([1000, 1100], tf.int64))
    np.testing.assert_array_equal(cache.gather(tf.constant([1003]))["num"].numpy(), [[3.0]])


def test_a_spec_label_without_nodes_fails_as_without_the_cache():
    """A spec label of the steps that has no node: no rows to cache, so the cache of it is empty
    (its widths the encoder's) and the training fails where the sampled one does, with the
    procedure's error naming the step; a cache of it read without widths is refused naming
    the label."""
    source, tr, val, val_y = spec_graph()
    spec = {**SPEC, "Tag": LabelSpec("Tag", [NumericSpec("w")])}
    nn = {**NN, "(:Item)-[:TAGGED]->(:Tag)": [2]}
    for use in (True, False):
        with pytest.raises(
            tf.errors.InvalidArgumentError,
            match=r"num_neighbors: \(:Item\)-\[:TAGGED\]->\(:Tag\): the graph has no such "
            r"relationships",
        ):
            train((source, tr, val, val_y), spec, use, nn=nn)
    with pytest.raises(
        ConfigurationError,
        match=r"label 'Tag': no node's raw columns were read \(the label has no nodes\); pass "
        r"widths= for an empty cache",
    ):
        RawFeatureCache.from_source(source, "Tag", spec["Tag"], "TAGGED", OPTIONS)


def test_a_cache_read_with_another_spec_is_refused(graph):
    """A raw cache of the same widths read with another vocabulary: its category texts are the
    other spec's columns, so the training refuses it, naming the property."""
    other = LabelSpec(
        "Item",
        [
            CategoricalSpec("group", vocabulary=NAMES[1:4], oov_buckets=1),
            *SPEC["Item"].properties[1:],
        ],
    )
    cache = RawFeatureCache.from_source(graph[0], "Item", other, "LINK", OPTIONS)
    same = RawFeatureCache.from_source(graph[0], "Item", SPEC["Item"], "LINK", OPTIONS)
    assert cache.widths == same.widths
    with pytest.raises(
        ConfigurationError,
        match=r"feature_caches\['Item'\]: expected a cache read with the label's feature spec, "
        r"got one read with another \(property 'group': ",
    ):
        train(graph, feature_caches={"Item": cache})


def test_a_none_cache_is_named_as_none(graph):
    with pytest.raises(
        ConfigurationError,
        match=r"feature_caches\['Item'\]: expected a cache, got None \(leave the label out of "
        r"feature_caches: its features are then sampled\)",
    ):
        train(graph, feature_caches={"Item": None})


def test_the_fill_leaves_out_only_the_failing_calls_nodes():
    """A failing fill call is split in halves: of 121 items one bad, the half holding it (61,
    at most RAW_CACHE_MIN_CHUNK) is left out, the other half cached."""
    from memgraph_tf.client.pipeline import RAW_CACHE_MIN_CHUNK

    source = spec_graph()[0]
    bad = kit.BASE + kit.N
    source.graph.add_node(["Item"], {"id": bad, "group": "g0", "noise": [1.0, 2.0, 3.0]})
    cache = RawFeatureCache.from_source(source, "Item", SPEC["Item"], "LINK", OPTIONS)
    assert bad not in cache.ids
    assert kit.N + 1 - RAW_CACHE_MIN_CHUNK <= len(cache.ids) < kit.N
