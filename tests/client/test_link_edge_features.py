"""Link prediction with edge features: ``train_link_predictor(..., edge_feature_spec=...)``
samples each step's relationship properties beside its slots (``options.edge_feature_spec`` of
``tf_features.sample_pairs``, both halves) and each endpoint's encoder (a
:class:`~memgraph_tf.client.typed_graphsage.TypedGraphSAGE`) joins them to its neighbours'
messages. On a graph whose links are decided by relationship properties alone the model beats
chance, while the same run without them cannot; the scores follow the property values; the
config rebuilds the encoders; a pattern of neither endpoint is named."""

from __future__ import annotations

import numpy as np
import pytest

from memgraph_tf import blob
from memgraph_tf.client import EmbeddedSource
from memgraph_tf.client.link_prediction import (
    LinkPredictor,
    evaluate_links,
    predict_links,
    role_edge_spec,
)
from memgraph_tf.embedded import EmbeddedGraph
from memgraph_tf.errors import ConfigurationError
from memgraph_tf.feature_spec import LabelSpec
from memgraph_tf.typed_sampling import TypedSamplingSpec
from tests.client.communities_kit import split_pairs, train_items
from tests.graphs import short_run

TAGGED = "(:Item)-[:TAGGED]->(:Hub)"
NN = {TAGGED: [3]}
OPTIONS = {"id_property": "id"}
N, GROUPS, HUBS, BASE = 96, 4, 5, 100
NAMES = [f"g{k}" for k in range(GROUPS)]
EDGE_SPEC = {
    TAGGED: {
        "label": "TAGGED",
        "properties": [{"name": "kind", "kind": "categorical", "vocabulary": NAMES}],
    }
}


def graph_source():
    """``(source, positive pairs, negative pairs)``: items in 4 groups, each with 3 ``TAGGED``
    relationships to hubs drawn uniformly (5 hubs, no group), every one with ``kind``: the item's
    group name. ``LINK`` relationships join items of the same group (the model never walks them:
    they are the pairs). Nodes carry no property: a link follows from the ``kind`` of the
    endpoints' relationships alone; the negatives join items of different groups."""
    rng = np.random.default_rng(0)
    groups = np.arange(N) % GROUPS
    g = EmbeddedGraph()
    items = [g.add_node(["Item"], {"id": BASE + i}) for i in range(N)]
    hubs = [g.add_node(["Hub"], {"id": i}) for i in range(HUBS)]
    for i in range(N):
        for h in rng.choice(HUBS, size=3, replace=False).tolist():
            g.add_edge(items[i], hubs[h], "TAGGED", {"kind": NAMES[groups[i]]})
    edges: set[tuple[int, int]] = set()
    while len(edges) < 2 * N:
        a, b = (int(x) for x in rng.integers(0, N, 2))
        if a != b and groups[a] == groups[b] and (b, a) not in edges:
            edges.add((a, b))
    for a, b in sorted(edges):
        g.add_edge(items[a], items[b], "LINK")
    pos = np.array(sorted(edges), dtype=np.int64) + BASE
    neg = []
    while len(neg) < len(pos):
        a, b = (int(x) for x in rng.integers(0, N, 2))
        if groups[a] != groups[b]:
            neg.append((BASE + a, BASE + b))
    return EmbeddedSource(g), pos, np.array(neg, dtype=np.int64)


@pytest.fixture(scope="module")
def graph():
    return split_pairs(*graph_source())


def train(graph, **kwargs):
    return train_items(
        graph,
        {},
        NN,
        exclude_splits=None,
        embedding_dim=4,
        structural_default=False,  # (FastRP over the LINK relationships would carry the groups)
        **short_run(steps=30, learning_rate=0.02, hidden_units=8),
        **kwargs,
    )


@pytest.fixture(scope="module")
def trained(graph):
    return train(graph, edge_feature_spec=EDGE_SPEC)


def test_edge_features_train_and_beat_chance_where_the_nodes_alone_cannot(graph, trained):
    source, _, val, val_y = graph
    model = trained.model
    assert list(model.edge_encoders) == [TAGGED]
    assert model.source_encoder is model.target_encoder
    names = model.input_names()
    assert {"src.edge_cat_h1_s0", "dst.edge_cat_h1_s0", "src.edge_has_h1_s0"} <= set(names)
    with_edges = evaluate_links(model, source, val, val_y, options=OPTIONS, seed=1)
    assert with_edges["auc"] >= 0.8  # chance: 0.5; the relationships' kind decides a link
    without = train(graph).model
    assert not any(".edge_" in n for n in without.input_names())
    baseline = evaluate_links(without, source, val, val_y, options=OPTIONS, seed=1)
    assert baseline["auc"] < with_edges["auc"] - 0.2


def test_the_scores_follow_the_relationship_properties(graph, trained):
    """One pair blob scored as sampled, then with the source's relationships' ``kind`` changed:
    another score; the same through a fresh graph whose source item's relationships say another
    group (``predict_links`` samples the edge sections)."""
    source, _, val, _ = graph
    model = trained.model
    opts = {
        **OPTIONS,
        "seed": 3,
        "source_label": "Item",
        "edge_feature_spec": {TAGGED: LabelSpec.from_dict(EDGE_SPEC[TAGGED]).to_dict()},
    }
    nn = {"source": NN, "target": NN}
    text = source.sample_pairs(val[:1, 0].tolist(), val[:1, 1].tolist(), nn, {}, opts)
    sections = blob.unpack(text)
    inputs = {
        k: (v.astype(str) if v.dtype == object else v)
        for k, v in sections.items()
        if k in model.input_names()
    }
    assert set(inputs) == set(model.input_names())
    base = float(model(inputs, training=False)[0])
    cats = np.array(inputs["src.edge_cat_h1_s0"])
    other = NAMES[(NAMES.index(cats[0, 0, 0]) + 1) % GROUPS]
    changed = float(model(dict(inputs, **{"src.edge_cat_h1_s0": np.full_like(cats, other)}))[0])
    assert abs(changed - base) > 1e-3
    probs = predict_links(model, source, val[:4], options=OPTIONS, seed=1)
    assert probs.shape == (4,) and np.all((probs > 0) & (probs < 1))


def test_the_config_rebuilds_the_edge_encoders(trained):
    model = trained.model
    config = model.get_config()
    assert config["edge_feature_spec"] == {TAGGED: LabelSpec.from_dict(EDGE_SPEC[TAGGED]).to_dict()}
    clone = LinkPredictor.from_config(config).ensure_built()
    assert clone.input_names() == model.input_names()
    assert list(clone.edge_encoders) == [TAGGED]
    assert clone.get_config() == config


def test_each_endpoint_reads_its_own_steps():
    """Different neighbourhoods per role: the spec of a step of the source's alone gives the
    source encoder an edge encoder and the target's none; a pattern of neither is named."""
    link = "(:Item)-[:LINK]-(:Item)"
    nn = {"source": NN, "target": {link: [2]}}
    model = LinkPredictor("Item", nn, {}, hidden_units=4, edge_feature_spec=EDGE_SPEC)
    assert list(model.source_encoder.edge_encoders) == [TAGGED]
    assert model.target_encoder.edge_encoders == {}
    edge_inputs = [n for n in model.input_names() if ".edge_" in n]
    assert edge_inputs and all(n.startswith("src.") for n in edge_inputs)
    target = TypedSamplingSpec.from_num_neighbors("Item", {link: [2]})
    assert role_edge_spec(EDGE_SPEC, target) == {}
    other = "(:Item)-[:OWNS]->(:Hub)"
    with pytest.raises(
        ConfigurationError,
        match=r"edge_feature_spec\['\(:Item\)-\[:OWNS\]->\(:Hub\)'\]: expected one of the steps "
        r"of either endpoint",
    ):
        LinkPredictor(
            "Item", nn, {}, edge_feature_spec={other: {**EDGE_SPEC[TAGGED], "label": "OWNS"}}
        )


def test_the_keep_pair_edges_ablation_samples_each_role_with_its_own_steps(graph):
    """The ablation re-samples each endpoint with ``sample_typed``, which refuses a step outside
    its spec: the target (LINK alone) gets no edge spec. On non-edges (nothing to remove) it
    gives the pair blob's scores."""
    import keras

    source, _, val, val_y = graph
    keras.utils.set_random_seed(0)
    nn = {"source": NN, "target": {"(:Item)-[:LINK]-(:Item)": [2]}}
    model = LinkPredictor("Item", nn, {}, hidden_units=4, edge_feature_spec=EDGE_SPEC)
    model.properties = {}
    model.ensure_built()
    negatives = val[val_y == 0][:4]
    kept = predict_links(model, source, negatives, options=OPTIONS, seed=1, keep_pair_edges=True)
    plain = predict_links(model, source, negatives, options=OPTIONS, seed=1)
    np.testing.assert_allclose(kept, plain, rtol=1e-5, atol=1e-6)
