"""A link predictor with edge features keeps its edge encoders in its link bundle: the bundle
samples the relationship properties beside the slots of each pair (``options.edge_feature_spec``
in its config) and answers ``{"source_id", "target_id"}`` examples over REST exactly as the
in-process ``predict_links``; its ``embed_*`` signatures read each role's own ``sample_typed``
blob (that role's steps' relationship properties only), and in-process batch scoring
(``ModelLinkBackend``) samples them too. The roles walk different neighbourhoods (in one test,
only one role walks the step with edge features). The model is initialised, not trained: the
contract is the plumbing."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from memgraph_tf.feature_spec import LabelSpec
from memgraph_tf.serving import bundle
from tests.client.test_link_edge_features import EDGE_SPEC, OPTIONS, TAGGED, graph_source
from tests.serving.bundle_kit import regressed_over_rest, scores_by_embeddings

LINK = "(:Item)-[:LINK]-(:Item)"
NN = {"source": {TAGGED: [3]}, "target": {LINK: [2], TAGGED: [2]}}
TARGET_ONLY = {"source": {LINK: [2]}, "target": {TAGGED: [3]}}
SPEC_DICT = {TAGGED: LabelSpec.from_dict(EDGE_SPEC[TAGGED]).to_dict()}


def initialised(nn):
    import keras

    from memgraph_tf.client.link_prediction import LinkPredictor

    keras.utils.set_random_seed(0)
    model = LinkPredictor(
        "Item", nn, {}, hidden_units=8, embedding_dim=4, edge_feature_spec=EDGE_SPEC
    )
    model.properties = {}
    return model.ensure_built()


@pytest.fixture(scope="module")
def link_kit(tmp_path_factory):
    """The graph source, the initialised model, its op bundle, and pairs: three relationships
    (their own edge removed when sampled) and three non-edges."""
    from memgraph_tf.serving.export_links import export_link_bundle

    source, pos, neg = graph_source()
    model = initialised(NN)
    info = export_link_bundle(
        model,
        tmp_path_factory.mktemp("link-edges"),
        "links",
        1,
        decoder="op",
        sample_options=OPTIONS,
    )
    return source, model, info, np.concatenate([pos[:3], neg[:3]])


def _in_process(source, model, pairs) -> np.ndarray:
    from memgraph_tf.client.link_prediction import predict_links

    return predict_links(model, source, pairs, options={**OPTIONS, "seed": bundle.DEFAULT_SEED})


def test_the_bundle_holds_the_edge_spec_and_serves_pair_ids_as_in_process(link_kit):
    source, model, info, pairs = link_kit
    config = bundle.read_bundle_config(info.path)
    assert config.options["edge_feature_spec"] == SPEC_DICT
    edge_sections = sorted(n for n in config.sections if ".edge_" in n)
    assert edge_sections == [
        "dst.edge_cat_h1_s1",
        "dst.edge_has_h1_s1",
        "src.edge_cat_h1_s0",
        "src.edge_has_h1_s0",
    ]
    assert bundle.BundleConfig.from_json(config.to_json()) == config
    expected = _in_process(source, model, pairs)
    np.testing.assert_allclose(
        regressed_over_rest(source, info.path, pairs), expected, rtol=1e-5, atol=1e-6
    )


def test_the_role_signatures_read_each_roles_own_steps(link_kit):
    source, model, info, pairs = link_kit
    sampling = bundle.inference_sampling(bundle.read_bundle_config(info.path))
    assert sampling.role_arguments("source")[2]["edge_feature_spec"] == SPEC_DICT
    _, _, target_opts = sampling.role_arguments("target")
    assert target_opts["edge_feature_spec"] == SPEC_DICT  # (the target walks TAGGED too)
    loaded = tf.saved_model.load(str(info.path))
    by_z = scores_by_embeddings(loaded, sampling, source, pairs)
    # the non-edges: no own relationship to remove, so the nodes' own blobs are the pair's halves
    np.testing.assert_allclose(
        by_z[3:], _in_process(source, model, pairs)[3:], rtol=1e-5, atol=1e-6
    )


def test_a_role_without_the_step_samples_no_edge_spec(tmp_path):
    """The source walks LINK alone: its ``sample_typed`` options carry no edge spec (the
    procedure would refuse a step outside its spec), the target's carry it."""
    from memgraph_tf.batch.link_scoring import ModelLinkBackend
    from memgraph_tf.serving.export_links import export_link_bundle

    source, _, neg = graph_source()
    model = initialised(TARGET_ONLY)
    info = export_link_bundle(model, tmp_path, "links", 1, decoder="op", sample_options=OPTIONS)
    sampling = bundle.inference_sampling(bundle.read_bundle_config(info.path))
    assert "edge_feature_spec" not in sampling.role_arguments("source")[2]
    assert sampling.role_arguments("target")[2]["edge_feature_spec"] == SPEC_DICT
    backend = ModelLinkBackend(model, options=OPTIONS)
    assert "edge_feature_spec" not in backend.sampling("src")[2]
    assert backend.sampling("dst")[2]["edge_feature_spec"] == SPEC_DICT
    for role in ("source", "target"):
        nn, props, opts = sampling.role_arguments(role)
        assert source.sample_typed([int(neg[0, 0])], nn, props, opts)


def test_in_process_batch_scoring_samples_the_edge_spec_and_equals_rest(link_kit):
    """``score_links`` over the in-memory model (``ModelLinkBackend``) samples each node with the
    model's ``options.edge_feature_spec`` and writes, for non-edges, the scores the bundle serves
    over REST."""
    from memgraph_tf.batch.link_scoring import ModelLinkBackend, score_links
    from memgraph_tf.client.link_tables import LinkSelection, LinkTable

    served_source, model, info, pairs = link_kit
    non_edges = pairs[3:]
    served = regressed_over_rest(served_source, info.path, non_edges)
    backend = ModelLinkBackend(model, options=OPTIONS)
    _, props, opts = backend.sampling("src")
    assert props == {} and opts["edge_feature_spec"] == SPEC_DICT
    source, _, _ = graph_source()  # a fresh graph: the run writes relationships
    summary = score_links(source, backend, pairs=non_edges)
    assert summary.links == len(non_edges)
    links = LinkTable(source, LinkSelection("Item", "Item", 1, id_property="id")).read_links()
    got = {(s, t): p for s, t, p, _ in links}
    np.testing.assert_allclose([got[tuple(p)] for p in non_edges.tolist()], served, atol=1e-5)


def test_a_model_with_edge_features_on_unsorted_steps_serves_pair_ids_as_in_process(tmp_path):
    """Both roles list their two steps out of sorted order (TAGGED before LINK, different
    fanouts), each step with edge features (``LINK`` relationships have no ``weight``: all
    missing). The model numbers each role's steps in the patterns' sorted order and the link
    bundle keeps it, so the pair blob it samples has the edge sections
    ``{src,dst}.edge_*_h1_s{i}`` of the model's step indices: REST ``:regress`` answers as
    ``predict_links``."""
    import keras

    from memgraph_tf.client.link_prediction import LinkPredictor
    from memgraph_tf.serving.export_links import export_link_bundle

    nn = {"source": {TAGGED: [3], LINK: [1]}, "target": {TAGGED: [2], LINK: [3]}}
    assert all(list(steps) != sorted(steps) for steps in nn.values())
    weight = {"name": "weight", "kind": "numeric", "mean": 0.0, "std": 1.0}
    specs = {**EDGE_SPEC, LINK: {"label": "LINK", "properties": [weight]}}
    keras.utils.set_random_seed(0)
    model = LinkPredictor("Item", nn, {}, hidden_units=8, embedding_dim=4, edge_feature_spec=specs)
    model.properties = {}
    model.ensure_built()
    info = export_link_bundle(model, tmp_path, "links", 1, decoder="op", sample_options=OPTIONS)
    config = bundle.read_bundle_config(info.path)
    assert {r: list(s) for r, s in config.link["num_neighbors"].items()} == {
        r: sorted(s) for r, s in nn.items()
    }
    shapes = {n: config.sections[n][1][1] for n in config.sections if ".edge_has_h1_" in n}
    assert shapes == {  # (LINK sorts first)
        "src.edge_has_h1_s0": 1,
        "src.edge_has_h1_s1": 3,
        "dst.edge_has_h1_s0": 3,
        "dst.edge_has_h1_s1": 2,
    }
    source, pos, neg = graph_source()
    pairs = np.concatenate([pos[:3], neg[:3]])
    expected = _in_process(source, model, pairs)
    np.testing.assert_allclose(
        regressed_over_rest(source, info.path, pairs), expected, rtol=1e-5, atol=1e-5
    )
