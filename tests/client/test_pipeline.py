"""Blob pipelines over the embedded query modules: node ids -> procedure -> base64 -> unpack op."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from memgraph_tf.client import FeatureCache, pack_dataset, sample_dataset
from memgraph_tf.errors import ConfigurationError

ID0 = 10_000
OPTS = {"id_property": "id", "label_property": "label"}


def _node_features(features, ids):
    """Expected features for ids (PAD_ID -> zeros)."""
    out = np.zeros(ids.shape + (features.shape[1],), dtype=np.float32)
    valid = ids >= 0
    out[valid] = features[ids[valid] - ID0]
    return out


def test_sample_batches_have_static_shapes_and_the_graph_s_values(community):
    source, labels, features = community
    ids = np.arange(ID0, ID0 + 50)
    ds = sample_dataset(source, ids, [4, 3], ["features"], options=OPTS, batch_size=16, seed=5)
    spec = ds.element_spec
    assert spec["features_2"].shape.as_list() == [None, 4, 3, 8]
    assert spec["mask_1"].shape.as_list() == [None, 4] and spec["mask_1"].dtype == tf.bool
    batches = list(ds)
    assert [int(b["ids_0"].shape[0]) for b in batches] == [16, 16, 16, 2]
    got_ids = np.concatenate([b["ids_0"].numpy() for b in batches])
    assert got_ids.tolist() == ids.tolist()
    for b in batches:
        for h in range(3):
            hop_ids = b[f"ids_{h}"].numpy()
            np.testing.assert_array_equal(
                b[f"features_{h}"].numpy(), _node_features(features, hop_ids)
            )
            if h:
                np.testing.assert_array_equal(b[f"mask_{h}"].numpy(), hop_ids >= 0)
        np.testing.assert_array_equal(b["labels"].numpy(), labels[b["ids_0"].numpy() - ID0])


def test_feature_cache_gives_the_same_tensors(community):
    source, _, features = community
    ids = np.arange(ID0, ID0 + 40)
    cache = FeatureCache.from_source(
        source, np.arange(ID0, ID0 + len(features)), ["features"], OPTS, chunk_size=64
    )
    assert cache.width == 8 and cache.labels is not None
    direct = list(
        sample_dataset(source, ids, [3, 2], ["features"], options=OPTS, batch_size=13, seed=9)
    )
    cached = list(
        sample_dataset(
            source,
            ids,
            [3, 2],
            ["features"],
            options=OPTS,
            batch_size=13,
            seed=9,
            feature_cache=cache,
        )
    )
    assert len(direct) == len(cached) == 4
    for a, b in zip(direct, cached):
        assert sorted(a) == sorted(b)
        for key in a:
            np.testing.assert_array_equal(a[key].numpy(), b[key].numpy())


def test_seed_reproduces_while_batches_draw_anew(community):
    source, _, _ = community
    ids = np.arange(ID0, ID0 + 30)

    def epochs(seed):
        ds = sample_dataset(
            source, ids, [2], ["features"], options=OPTS, batch_size=30, seed=seed, repeat=True
        )
        return [b["ids_1"].numpy() for b in ds.take(2)]

    first, again = epochs(1), epochs(1)
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(first[0], first[1]), "each batch should sample its own neighbourhoods"


def test_portable_decoder_matches_the_op(community):
    source, _, _ = community
    ids = np.arange(ID0 + 5, ID0 + 25)
    a = list(
        sample_dataset(
            source, ids, [3], ["features"], options=OPTS, batch_size=8, seed=2, decoder="op"
        )
    )
    b = list(
        sample_dataset(
            source, ids, [3], ["features"], options=OPTS, batch_size=8, seed=2, decoder="portable"
        )
    )
    for x, y in zip(a, b):
        for key in x:
            np.testing.assert_array_equal(x[key].numpy(), y[key].numpy())


def test_pack_dataset(community):
    source, labels, features = community
    ids = np.arange(ID0 + 100, ID0 + 150)[::-1]
    batches = list(
        pack_dataset(source, ids, ["features"], options={**OPTS, "seed": 3}, batch_size=20)
    )
    assert batches[0]["features"].shape.as_list() == [20, 8]
    got = np.concatenate([b["features"].numpy() for b in batches])
    np.testing.assert_array_equal(got, features[ids - ID0])
    np.testing.assert_array_equal(
        np.concatenate([b["labels"].numpy() for b in batches]), labels[ids - ID0]
    )
    np.testing.assert_array_equal(np.concatenate([b["ids"].numpy() for b in batches]), ids)


def _assert_iteration_fails(ds, message: str) -> None:
    """Iterating ``ds`` raises InvalidArgumentError matching ``message``."""
    with pytest.raises(tf.errors.InvalidArgumentError, match=message):
        list(ds)


def test_uncached_ids_fail_loudly(community):
    source, _, _ = community
    partial = FeatureCache.from_source(source, [ID0, ID0 + 1], ["features"], OPTS)
    ds = sample_dataset(
        source,
        np.arange(ID0, ID0 + 10),
        [3],
        ["features"],
        options=OPTS,
        batch_size=10,
        feature_cache=partial,
        seed=0,
    )
    _assert_iteration_fails(
        ds, r"feature cache: expected every sampled node id to be cached, got uncached id\(s\)"
    )


def test_procedure_errors_surface_with_their_message(community):
    source, _, _ = community
    ds = sample_dataset(
        source, [ID0, 77], [2], ["features"], options=OPTS, batch_size=2, feature_cache=None, seed=0
    )
    _assert_iteration_fails(ds, r"seeds\[1\]: unknown node id 77 \(no node has id = 77\)")


def test_argument_errors(community):
    source, _, _ = community
    with pytest.raises(ConfigurationError, match=r"batch_size: expected an integer >= 1, got 0"):
        sample_dataset(source, [ID0], [2], ["features"], options=OPTS, batch_size=0)
    with pytest.raises(
        ConfigurationError,
        match=r"fanouts: expected a non-empty list of integers >= 1 \(one per hop\), got \[\]",
    ):
        sample_dataset(source, [ID0], [], ["features"], options=OPTS)
    with pytest.raises(
        ConfigurationError,
        match=r"node_ids: expected a non-empty 1-D sequence of integer ids, got shape \[0\]",
    ):
        sample_dataset(source, [], [2], ["features"], options=OPTS)
    with pytest.raises(
        ConfigurationError, match=r"decoder: expected one of auto, op, portable, got 'fast'"
    ):
        sample_dataset(source, [ID0], [2], ["features"], options=OPTS, decoder="fast")


def test_embedded_source_runs_procedure_calls_as_queries(community):
    from memgraph_tf import blob, ops
    from memgraph_tf.client import OpenCypherDataset

    source, _, features = community
    params = {"ids": [ID0 + 3, ID0 + 4], "props": ["features"], "opts": {"id_property": "id"}}
    ds = OpenCypherDataset(
        source,
        "CALL tf_features.pack($ids, $props, $opts) YIELD blob, count RETURN blob, count",
        {"blob": tf.string, "count": tf.int64},
        params,
    )
    [row] = list(ds)
    assert int(row["count"]) == 2
    assert blob.b64decode(row["blob"].numpy().decode()) == source.pack_blob(
        params["ids"], ["features"], params["opts"]
    )
    [feats] = ops.unpack_blob(tf.io.decode_base64(row["blob"]), ["features"], [tf.float32])
    np.testing.assert_array_equal(feats.numpy(), features[[3, 4]])
    with pytest.raises(
        ConfigurationError,
        match=r"query: expected a procedure call 'CALL module.procedure\(\$a, ...\) \[YIELD ...\] "
        r"\[RETURN ...\]' \(the embedded runtime runs query modules, not Cypher\), got 'MATCH "
        r"\(n\) RETURN n'",
    ):
        list(source.run("MATCH (n) RETURN n"))
    with pytest.raises(
        ConfigurationError,
        match=r"query: argument 1 of tf_features.pack: expected a \$parameter present in "
        r"parameters \(ids\), got '\$props'",
    ):
        list(source.run("CALL tf_features.pack($ids, $props, $opts)", {"ids": [ID0]}))


class _CountingSource:
    """Delegates to a source and counts tf_features.sample calls (one per batch)."""

    def __init__(self, source):
        self._source = source
        self.sample_calls = 0

    def __getattr__(self, name):
        return getattr(self._source, name)

    def sample_blob_b64(self, *args, **kwargs):
        self.sample_calls += 1
        return self._source.sample_blob_b64(*args, **kwargs)


def _calls_while_one_batch_is_held(source, autotune=False, **pipeline_args) -> int:
    import time

    counting = _CountingSource(source)
    ds = sample_dataset(
        counting,
        np.arange(ID0, ID0 + 120),
        [3, 2],
        ["features"],
        options=OPTS,
        batch_size=8,
        seed=1,
        **pipeline_args,
    )
    if not autotune:  # measure what the pipeline itself asks for
        options = tf.data.Options()
        options.autotune.enabled = False
        options.experimental_optimization.inject_prefetch = False
        ds = ds.with_options(options)
    it = iter(ds)
    next(it)  # the "training step" holds this batch and asks for nothing more
    deadline = time.monotonic() + 10
    while counting.sample_calls < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)
    return counting.sample_calls


def test_database_calls_run_ahead_of_training(community):
    """While the consumer holds one batch, the pipeline already calls the procedure for the next
    ones (prefetch + parallel map): database round trips overlap training steps. The control, the
    same pipeline with prefetch and parallelism off, makes exactly one call for one batch."""
    source = community[0]
    assert _calls_while_one_batch_is_held(source, num_parallel_calls=None, prefetch=None) == 1
    assert _calls_while_one_batch_is_held(source, num_parallel_calls=2, prefetch=2) >= 3
    assert _calls_while_one_batch_is_held(source, autotune=True) >= 3  # the defaults (AUTOTUNE)


def test_unique_rows_hold_each_node_once_and_gather_back_to_the_features(community):
    from memgraph_tf.client.pipeline import unique_rows

    source, _, features = community
    ids = np.arange(ID0, ID0 + 30)
    cache = FeatureCache.from_source(
        source, np.arange(ID0, ID0 + len(features)), ["features"], OPTS
    )
    kw = dict(options=OPTS, batch_size=15, seed=4, feature_cache=cache)
    dense = list(sample_dataset(source, ids, [3, 2], ["features"], **kw))
    ids_only = list(sample_dataset(source, ids, [3, 2], ["features"], gather_features=False, **kw))
    assert sorted(ids_only[0]) == ["ids_0", "ids_1", "ids_2", "labels", "mask_1", "mask_2"]
    to_rows, to_sparse = unique_rows(cache, 2), unique_rows(cache, 2, sparse=True)
    for full, sampled in zip(dense, ids_only):
        batch = to_rows(sampled)
        sparse = to_sparse(sampled)["rows"]  # the same rows, their non-zero entries row-major
        np.testing.assert_array_equal(tf.sparse.to_dense(sparse).numpy(), batch["rows"].numpy())
        np.testing.assert_array_equal(
            sparse.indices.numpy(), np.argwhere(batch["rows"].numpy() != 0)
        )
        all_ids = np.concatenate([sampled[f"ids_{h}"].numpy().ravel() for h in range(3)])
        assert batch["rows"].shape[0] == len(np.unique(all_ids)) < len(all_ids)
        for h in range(3):
            assert batch[f"index_{h}"].dtype == tf.int32
            np.testing.assert_array_equal(
                tf.gather(batch["rows"], batch[f"index_{h}"]).numpy(), full[f"features_{h}"]
            )
        np.testing.assert_array_equal(batch["mask_2"].numpy(), full["mask_2"].numpy())
        np.testing.assert_array_equal(batch["labels"].numpy(), full["labels"].numpy())
    with pytest.raises(
        ConfigurationError, match=r"gather_features: expected True without a feature_cache"
    ):
        sample_dataset(source, ids, [3], ["features"], options=OPTS, gather_features=False)


def test_draws_pass_over_the_batches_each_with_new_neighbourhoods(community):
    source, _, _ = community
    ids = np.arange(ID0, ID0 + 20)
    batches = list(
        sample_dataset(source, ids, [4], ["features"], options=OPTS, batch_size=8, seed=2, draws=3)
    )
    assert [int(b["ids_0"].shape[0]) for b in batches] == [8, 8, 4] * 3  # no batch mixes draws
    seeds = np.concatenate([b["ids_0"].numpy() for b in batches]).reshape(3, -1)
    assert (seeds == ids).all()
    hop = np.concatenate([b["ids_1"].numpy() for b in batches]).reshape(3, len(ids), 4)
    assert not (hop[0] == hop[1]).all() and not (hop[1] == hop[2]).all()
    with pytest.raises(ConfigurationError, match=r"draws: expected an integer >= 1, got 0"):
        sample_dataset(source, ids, [4], ["features"], options=OPTS, draws=0)
