"""The planted property graph (memgraph_tf.property_datasets): exact best accuracy against the
Bayes rule on a large draw, the property kinds infer_feature_spec finds in it through the embedded
runtime, reproducibility and argument errors."""

from __future__ import annotations

import datetime

import numpy as np
import pytest

from memgraph_tf.client.feature_specs import infer_feature_spec
from memgraph_tf.client.sources import EmbeddedSource
from memgraph_tf.property_datasets import (
    CITIES,
    PLANS,
    TAGS,
    planted_property_graph,
    property_embedded_graph,
)


def test_best_accuracy_is_the_bayes_rules_and_chance_the_largest_prior():
    graph = planted_property_graph(40_000, seed=3, knows_per_person=0)
    hits = graph.bayes == graph.labels
    # 40 000 draws: the Bayes rule's accuracy lies within 4 standard errors of the exact figure
    assert abs(hits.mean() - graph.best_accuracy) < 4 * np.sqrt(0.25 / 40_000)
    prior = np.bincount(graph.labels, minlength=graph.num_classes) / 40_000
    assert abs(prior.max() - graph.chance) < 4 * np.sqrt(0.25 / 40_000)
    assert graph.best_accuracy > graph.chance + 0.2
    # the numeric properties carry nothing: their correlation with the class is noise
    score = np.array([n["score"] for n in graph.nodes])
    means = [score[graph.labels == k].mean() for k in range(graph.num_classes)]
    assert max(means) - min(means) < 0.05


def test_nodes_carry_the_property_kinds_and_the_split():
    graph = planted_property_graph(500, seed=1)
    assert graph.nodes == planted_property_graph(500, seed=1).nodes
    assert graph.nodes != planted_property_graph(500, seed=2).nodes
    for props in graph.nodes:
        assert props["city"] in CITIES
        assert set(props["tags"]) <= set(TAGS)
        assert isinstance(props["joined"], datetime.date)
        assert props.get("plan", "free") in PLANS
        assert isinstance(props["score"], float) and isinstance(props["visits"], int)
    assert sum("plan" not in p for p in graph.nodes) > 100
    assert any(p["tags"] == [] for p in graph.nodes)
    assert sorted(graph.ids("train") + graph.ids("val") + graph.ids("test")) == list(range(500))
    assert all(a != b for a, b in graph.edges) and len(graph.edges) == 3 * 500


def test_the_inferred_spec_has_every_kind():
    graph = planted_property_graph(300, seed=0)
    embedded, ids = property_embedded_graph(graph)
    assert len(ids) == 300
    spec = infer_feature_spec(
        EmbeddedSource(embedded),
        "Person",
        properties=["city", "tags", "joined", "plan", "score", "visits"],
    )
    kinds = {p.name: p.kind for p in spec.properties}
    assert kinds == {
        "city": "categorical",
        "tags": "multi_categorical",
        "joined": "temporal",
        "plan": "categorical",
        "score": "numeric",
        "visits": "numeric",
    }
    assert spec.property("plan").missing_indicator
    assert spec.property("joined").type == "Date"
    assert set(spec.property("city").vocabulary) <= set(CITIES)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"num_people": 5}, "num_people: expected an integer >= 10, got 5"),
        ({"num_classes": 1}, "num_classes: expected an integer >= 2, got 1"),
        ({"strength": 0}, "strength: expected a number > 0, got 0"),
    ],
)
def test_bad_arguments_are_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        planted_property_graph(**{"num_people": 100, **kwargs})


def test_open_graph_names_it():
    from memgraph_tf.client import open_graph
    from memgraph_tf.property_datasets import planted_property_graph

    source = open_graph("embedded:people")
    try:
        ids = source.node_ids(label="Person", id_property="id", where={"split": "test"})
    finally:
        source.close()
    assert ids == planted_property_graph().ids("test")
