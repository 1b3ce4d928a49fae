"""Learned per-node embeddings (the transductive option of the link predictor for a label without
features): the lookup (own row for a known key, the shared out-of-vocabulary row for any other),
training on a featureless graph through the database, the vocabulary (the training pairs'
endpoints), what an unseen node gets, the config round trip, the refusals, and the export: the
op link bundle's SavedModel scores pairs as the model in memory does."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from memgraph_tf.client import EmbeddedSource
from memgraph_tf.client.link_prediction import (
    LinkPredictor,
    evaluate_links,
    predict_links,
    train_link_predictor,
)
from memgraph_tf.client.node_embeddings import NodeEmbedding
from memgraph_tf.embedded import EmbeddedGraph
from memgraph_tf.errors import ConfigurationError
from memgraph_tf.serving import bundle
from memgraph_tf.serving.export_links import export_link_bundle
from memgraph_tf.serving.link_pairs import blob_example
from memgraph_tf.serving.neighbourhoods import NeighbourhoodFetcher
from tests.graphs import short_run

PATTERN = "(:Item)-[:LINK]-(:Item)"
NN = {PATTERN: [4, 2]}
OPTIONS = {"id_property": "id"}
N, BASE, GROUPS = 120, 100, 4


def test_known_keys_get_their_rows_and_every_other_key_the_shared_one():
    layer = NodeEmbedding(3, 4)
    layer.set_keys([30, 10, 20])
    table = layer.table.numpy()
    got = layer(tf.constant([[10, 20, 30], [-1, 25, 99]], dtype=tf.int64)).numpy()
    assert got.shape == (2, 3, 4)
    np.testing.assert_array_equal(got[0], table[[1, 2, 3]])
    np.testing.assert_array_equal(got[1], table[[0, 0, 0]])
    with pytest.raises(
        ConfigurationError, match=r"node_embeddings: expected 3 distinct keys, got 2"
    ):
        layer.set_keys([1, 1, 2])
    with pytest.raises(ConfigurationError, match=r"keys: expected a non-empty list of integer"):
        layer.set_keys([1.5, 2.5, 3.5])
    with pytest.raises(
        ConfigurationError, match=r"node_embeddings: dimension: expected an integer >= 1, got 0"
    ):
        NodeEmbedding(3, 0)


@pytest.fixture(scope="module")
def featureless():
    """Items in 4 groups (``id`` only, no features), links mostly inside a group; split in the
    database; the test pairs: held-out links and as many non-links."""
    rng = np.random.default_rng(0)
    group = np.arange(N) % GROUPS
    g = EmbeddedGraph()
    for i in range(N):
        g.add_node(["Item"], {"id": BASE + i})
    edges: set[tuple[int, int]] = set()
    while len(edges) < 4 * N:
        a, b = (int(x) for x in rng.integers(0, N, 2))
        if a != b and (group[a] == group[b] or rng.random() < 0.05) and (b, a) not in edges:
            edges.add((a, b))
    for a, b in sorted(edges):
        g.add_edge(a, b, "LINK")
    source = EmbeddedSource(g)
    source.split_edges(PATTERN, {"seed": 1, **OPTIONS})
    store = g._store  # the embedded graph has no public reader of relationship properties
    split = {"train": [], "val": [], "test": []}
    for a, b, props in zip(store.esrc, store.edst, store.eprops):
        split[props["split"]].append((BASE + a, BASE + b))
    known = {frozenset(e) for e in edges}
    neg = []
    while len(neg) < len(split["test"]) + len(split["val"]):
        a, b = (int(x) for x in rng.integers(0, N, 2))
        if a != b and frozenset((a, b)) not in known:
            known.add(frozenset((a, b)))
            neg.append((BASE + a, BASE + b))
    pairs = {k: np.array(v, dtype=np.int64) for k, v in split.items()}
    nv = len(pairs["val"])
    val = np.concatenate([pairs["val"], neg[:nv]])
    test = np.concatenate([pairs["test"], neg[nv:]])
    ys = [np.r_[np.ones(len(pairs[s])), np.zeros(len(pairs[s]))] for s in ("val", "test")]
    result = train_link_predictor(
        source,
        "Item",
        NN,
        [],
        pairs["train"],
        val,
        ys[0],
        options=OPTIONS,
        **short_run(steps=60, eval_every=20, node_embedding_dim=8),
    )
    return source, pairs, (test, ys[1]), result


def test_training_learns_links_of_a_featureless_label(featureless):
    source, pairs, (test, test_y), result = featureless
    model = result.model
    assert model.feature_dims == {"Item": 0}
    assert model.get_config()["node_embeddings"] == {
        "Item": {"size": len(np.unique(pairs["train"])), "dimension": 8}
    }
    np.testing.assert_array_equal(
        model.node_embeddings["Item"].keys.numpy(), np.unique(pairs["train"])
    )
    assert "src.ids_h0_Item" in model.input_names()
    assert not any(".features_" in n for n in model.input_names())
    metrics = evaluate_links(model, source, test, test_y, options=OPTIONS, seed=0)
    assert metrics["auc"] > 0.7  # chance is 0.5; the groups make links predictable


def test_an_unseen_node_gets_the_shared_vector(featureless):
    _, pairs, _, result = featureless
    layer = result.model.node_embeddings["Item"]
    seen = int(pairs["train"][0, 0])
    rows = layer.rows(tf.constant([seen, BASE + N + 5, -1], dtype=tf.int64)).numpy()
    assert rows[0] > 0 and rows[1] == 0 and rows[2] == 0
    vectors = layer(tf.constant([BASE + N + 5, BASE + N + 6], dtype=tf.int64)).numpy()
    np.testing.assert_array_equal(vectors[0], layer.table.numpy()[0])
    np.testing.assert_array_equal(vectors[1], vectors[0])


def test_the_config_rebuilds_the_model_and_bad_settings_are_named(featureless):
    _, _, _, result = featureless
    config = result.model.get_config()
    again = LinkPredictor.from_config(config).ensure_built()
    assert again.get_config() == config
    with pytest.raises(ConfigurationError, match=r"node_embeddings: 'User': no such label"):
        LinkPredictor("Item", NN, {}, node_embeddings={"User": {"size": 2, "dimension": 2}})
    with pytest.raises(ConfigurationError, match=r"node_embeddings\['Item'\]: expected \{'size'"):
        LinkPredictor("Item", NN, {}, node_embeddings={"Item": {"size": 2}})
    with pytest.raises(ConfigurationError, match=r"label: 'User' has no node embedding"):
        again.set_node_keys("User", [1])
    batch = {"src.mask_h1_Item": np.ones((1, 4), bool)}
    with pytest.raises(ConfigurationError, match=r"inputs: missing src.ids_h0_Item"):
        again(batch)


def test_the_op_bundle_scores_pairs_as_the_model_does(featureless, tmp_path):
    source, _, (test, _), result = featureless
    model = result.model
    model.properties = {"Item": []}
    info = export_link_bundle(model, tmp_path, "links", 1, decoder="op", sample_options=OPTIONS)
    config = bundle.read_bundle_config(info.path)
    chosen = np.concatenate([test[:3], test[-3:]])
    blobs = NeighbourhoodFetcher(source, serialize=False).fetch_pairs(
        chosen[:, 0].tolist(), chosen[:, 1].tolist(), bundle.inference_sampling(config)
    )
    examples = [blob_example("blob", data) for data in blobs]
    loaded = tf.saved_model.load(str(info.path))
    served = loaded.signatures[bundle.REGRESS_SIGNATURE](inputs=tf.constant(examples))
    expected = predict_links(
        model, source, chosen, options={**OPTIONS, "seed": bundle.DEFAULT_SEED}
    )
    np.testing.assert_allclose(
        served[bundle.REGRESS_OUTPUT].numpy(), expected, rtol=1e-5, atol=1e-6
    )
