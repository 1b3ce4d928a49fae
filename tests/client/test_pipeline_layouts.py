"""sample_dataset over the compact and sparse sample layouts: the same batches as
dense."""

from __future__ import annotations

import numpy as np
import pytest

from memgraph_tf.client import FeatureCache, sample_dataset
from memgraph_tf.client.errors import ConfigurationError

ID0 = 10_000
OPTS = {"id_property": "id", "label_property": "label"}


@pytest.mark.parametrize("layout_name", ["compact", "sparse"])
@pytest.mark.parametrize("cached", [False, True], ids=["features-in-blob", "feature-cache"])
def test_every_layout_gives_the_dense_batches(community, layout_name, cached):
    source, _, features = community
    ids = np.arange(ID0, ID0 + 30)
    cache = None
    if cached:
        cache = FeatureCache.from_source(
            source, np.arange(ID0, ID0 + len(features)), ["features"], OPTS
        )
    kw = dict(batch_size=11, seed=3, feature_cache=cache, num_parallel_calls=None)
    dense = list(sample_dataset(source, ids, [3, 2], ["features"], options=OPTS, **kw))
    ds = sample_dataset(
        source, ids, [3, 2], ["features"], options={**OPTS, "layout": layout_name}, **kw
    )
    assert ds.element_spec["features_2"].shape.as_list() == [None, 3, 2, 8]
    got = list(ds)
    assert len(got) == len(dense) == 3
    for a, b in zip(dense, got):
        assert sorted(a) == sorted(b)
        for key in a:
            assert a[key].dtype == b[key].dtype, key
            np.testing.assert_array_equal(a[key].numpy(), b[key].numpy(), err_msg=key)


def test_an_unknown_layout_is_a_configuration_error(community):
    source, _, _ = community
    with pytest.raises(
        ConfigurationError,
        match=r"options.layout: expected one of dense, compact, sparse, got 'csr'",
    ):
        sample_dataset(source, [ID0], [2], ["features"], options={**OPTS, "layout": "csr"})
