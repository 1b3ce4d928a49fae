"""A link predictor with feature specs keeps its encoders in its link bundle: the bundle samples
the raw property columns of both halves of each pair (``options.feature_spec`` in its config,
the dense layout) and answers ``{"source_id", "target_id"}`` examples over REST exactly as the
in-process ``predict_links``; its ``embed_*`` and ``score_embeddings`` signatures give the same
probability. The model is initialised, not trained: the contract is the plumbing."""

from __future__ import annotations

import numpy as np
import pytest
import requests
import tensorflow as tf

from memgraph_tf.serving import bundle
from memgraph_tf.serving.neighbourhoods import NeighbourhoodFetcher
from tests.client.test_link_feature_specs import NN, OPTIONS, SPEC, graph_source
from tests.serving.bundle_kit import regressed_over_rest, scores_by_embeddings


@pytest.fixture(scope="module")
def link_kit(tmp_path_factory):
    """The graph source, an initialised LinkPredictor with the spec's encoders, its op bundle,
    and pairs: three relationships (their own edge removed when sampled) and three non-edges."""
    import keras

    from memgraph_tf.client.link_prediction import LinkPredictor
    from memgraph_tf.serving.export_links import export_link_bundle

    source, pos, neg = graph_source()
    keras.utils.set_random_seed(0)
    model = LinkPredictor("Item", NN, {}, hidden_units=8, feature_spec=SPEC, embedding_dim=4)
    model.properties = {}
    model.ensure_built()
    info = export_link_bundle(
        model,
        tmp_path_factory.mktemp("link-spec"),
        "links",
        1,
        decoder="op",
        sample_options=OPTIONS,
    )
    pairs = np.concatenate([pos[:3], neg[:3]])
    return source, model, info, pairs


def _in_process(source, model, pairs) -> np.ndarray:
    from memgraph_tf.client.link_prediction import predict_links

    return predict_links(model, source, pairs, options={**OPTIONS, "seed": bundle.DEFAULT_SEED})


def _written(source, pairs) -> list:
    """The probabilities a batch scoring run wrote into ``source`` for ``pairs``, in order."""
    from memgraph_tf.client.link_tables import LinkSelection, LinkTable

    links = LinkTable(source, LinkSelection("Item", "Item", 1, id_property="id")).read_links()
    got = {(s, t): p for s, t, p, _ in links}
    return [got[tuple(p)] for p in pairs.tolist()]


def test_the_bundle_holds_the_spec_and_its_signatures_agree(link_kit):
    source, model, info, pairs = link_kit
    config = bundle.read_bundle_config(info.path)
    assert config.options["feature_spec"] == {"Item": SPEC["Item"].to_dict()}
    assert config.link["properties"] == {}
    assert "src.bag_h1_Item.row_splits" in config.sections
    assert bundle.BundleConfig.from_json(config.to_json()) == config
    sampling = bundle.inference_sampling(config)
    blobs = NeighbourhoodFetcher(source, serialize=False).fetch_pairs(
        pairs[:, 0].tolist(), pairs[:, 1].tolist(), sampling
    )
    nn, props, opts = sampling.pair_arguments()
    assert blobs[1] == source.sample_pairs([int(pairs[1, 0])], [int(pairs[1, 1])], nn, props, opts)
    expected = _in_process(source, model, pairs)
    loaded = tf.saved_model.load(str(info.path))
    from tensorflow.core.example import example_pb2

    examples = []
    for b in blobs:
        ex = example_pb2.Example()
        ex.features.feature["blob"].bytes_list.value.append(b)
        examples.append(ex.SerializeToString())
    p = loaded.signatures[bundle.REGRESS_SIGNATURE](inputs=tf.constant(examples))
    np.testing.assert_allclose(p[bundle.REGRESS_OUTPUT].numpy(), expected, rtol=1e-5, atol=1e-6)
    by_z = scores_by_embeddings(loaded, sampling, source, pairs)
    # the non-edges: no own relationship to remove, so the nodes' own blobs are the pair's halves
    np.testing.assert_allclose(by_z[3:], expected[3:], rtol=1e-5, atol=1e-6)


def test_served_by_pair_ids_over_rest_equals_in_process(link_kit):
    from memgraph_tf.serving.model_config import ModelEntry
    from memgraph_tf.serving.model_server import ModelServer
    from memgraph_tf.serving.server import start_server

    source, model, info, pairs = link_kit
    expected = _in_process(source, model, pairs)
    ms = ModelServer(model_config=[ModelEntry("links", info.path.parent)], graph_source=source)
    server = start_server(ms)
    try:
        examples = [{"source_id": int(s), "target_id": int(t)} for s, t in pairs]
        url = f"{server.url}/v1/models/links"
        r = requests.post(f"{url}:regress", json={"examples": examples}, timeout=60)
        assert r.status_code == 200, r.text
        np.testing.assert_allclose(r.json()["results"], expected, rtol=1e-5, atol=1e-6)
        r = requests.post(f"{url}:classify", json={"examples": examples}, timeout=60)
        assert r.status_code == 200, r.text
        got = [row[0][1] for row in r.json()["results"]]
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
        bad = [{"source_id": 99999, "target_id": int(pairs[0, 1])}]
        r = requests.post(f"{url}:regress", json={"examples": bad}, timeout=60)
        assert r.status_code == 400 and "examples[0].source_id" in r.json()["error"], r.text
    finally:
        server.close()
        ms.close()


def test_batch_scoring_with_the_bundle_writes_the_in_process_scores(link_kit):
    """``score_links`` over the bundle (``BundleLinkBackend``: each node's own ``sample_typed``
    blob with the bundle's raw columns) on non-edges, whose pair blobs remove nothing: the
    in-process scores. A fresh graph: the run writes relationships."""
    from memgraph_tf.batch.link_scoring import BundleLinkBackend, score_links

    _, model, info, pairs = link_kit
    source, _, _ = graph_source()
    non_edges = pairs[3:]
    summary = score_links(source, BundleLinkBackend(info.path), pairs=non_edges)
    assert summary.links == len(non_edges)
    want = _in_process(source, model, non_edges)
    np.testing.assert_allclose(_written(source, non_edges), want, atol=1e-5)


def test_in_process_batch_scoring_samples_the_specs_and_equals_rest(link_kit):
    """``score_links`` over the in-memory model (``ModelLinkBackend``, no ``properties``: the
    model reads its one label through its spec) samples each node with the model's
    ``options.feature_spec`` and writes, for non-edges, the scores the bundle serves over REST."""
    from memgraph_tf.batch.link_scoring import ModelLinkBackend, score_links

    served_source, model, info, pairs = link_kit
    non_edges = pairs[3:]
    served = regressed_over_rest(served_source, info.path, non_edges)
    backend = ModelLinkBackend(model, options=OPTIONS)
    _, props, opts = backend.sampling("src")
    assert props == {} and opts["feature_spec"] == {"Item": SPEC["Item"].to_dict()}
    source, _, _ = graph_source()  # a fresh graph: the run writes relationships
    summary = score_links(source, backend, pairs=non_edges)
    assert summary.links == len(non_edges)
    np.testing.assert_allclose(_written(source, non_edges), served, atol=1e-5)


def test_in_process_batch_scoring_refuses_properties_for_a_spec_label(link_kit):
    from memgraph_tf.batch.link_scoring import ModelLinkBackend
    from memgraph_tf.errors import ConfigurationError

    _, model, _, _ = link_kit
    with pytest.raises(ConfigurationError, match=r"properties\['Item'\]: expected none.*'Item'"):
        ModelLinkBackend(model, properties={"Item": ["noise"]}, options=OPTIONS)


def test_a_bundle_with_a_spec_and_learned_embeddings_serves_the_in_process_scores(tmp_path):
    """A spec label with learned node embeddings too: its link bundle reads the raw sections
    and the ids, and answers pair ids over REST as ``predict_links`` (the table's keys: half
    the items, so the pairs mix nodes with their own vector and nodes with the shared one)."""
    import keras

    from memgraph_tf.client.link_prediction import LinkPredictor
    from memgraph_tf.serving.export_links import export_link_bundle
    from tests.client.communities_kit import BASE, N

    source, pos, neg = graph_source()
    keras.utils.set_random_seed(0)
    keys = np.arange(BASE, BASE + N, 2)
    model = LinkPredictor(
        "Item",
        NN,
        {},
        hidden_units=8,
        feature_spec=SPEC,
        embedding_dim=4,
        node_embeddings={"Item": {"size": len(keys), "dimension": 3}},
    )
    model.set_node_keys("Item", keys)
    model.properties = {}
    model.ensure_built()
    model.node_embeddings["Item"].table.assign(
        np.random.default_rng(1).standard_normal(model.node_embeddings["Item"].table.shape)
    )
    info = export_link_bundle(model, tmp_path, "links", 1, decoder="op", sample_options=OPTIONS)
    assert "src.ids_h0_Item" in bundle.read_bundle_config(info.path).sections
    pairs = np.concatenate([pos[:3], neg[:3]])
    expected = _in_process(source, model, pairs)
    np.testing.assert_allclose(
        regressed_over_rest(source, info.path, pairs), expected, rtol=1e-5, atol=1e-6
    )
