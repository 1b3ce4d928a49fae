"""``memgraph-tf refresh`` keeps a featureless label's FastRP property fresh: a classifier trained
on items without features (the trainer writes ``memgraph_tf_fastrp``), a node added with
relationships and logged, one pass -- the structural property is recomputed near the changes
before re-scoring, so every stored FastRP vector equals a full recompute on the changed graph and
every stored prediction (the new node's, its neighbours') equals a full re-score on that graph;
``structural=False`` leaves the property as it was."""

from __future__ import annotations

import functools

import numpy as np
import pytest

from memgraph_tf.batch import BundleBackend, classify_graph
from memgraph_tf.batch.refresh import Refresher
from memgraph_tf.batch.structural_refresh import fastrp_nodes, structural_labels, type_change
from memgraph_tf.client import EmbeddedSource
from memgraph_tf.client.change_log import Change, ChangeLog
from memgraph_tf.client.structural import (
    STRUCTURAL_OPTIONS,
    STRUCTURAL_PROPERTY,
    structural_call,
    structural_features,
    write_structural_features,
)
from memgraph_tf.errors import ConfigurationError
from tests.client.test_structural_default import BASE, OPTIONS, N, communities, train_classifier
from tests.graphs import predictions, short_run

NEW = BASE + N  # the key of the item added after training
FRIENDS = (0, 4, 8)  # the items it links to (internal ids = positions)
SEED = 0  # short_run's training seed


@functools.cache
def trained_model():
    """The featureless items' classifier (the trainer writes their FastRP property)."""
    g, *_ = communities(held_out=0.0)
    result = train_classifier(
        g, class_names=["g0", "g1", "g2", "g3"], **short_run(steps=10, eval_every=5)
    )
    return result.model


def trained_bundle(base: str) -> str:
    """:func:`trained_model` exported as an op bundle under ``base``; returns its path."""
    from memgraph_tf.serving.export import export_bundle

    exported = export_bundle(trained_model(), base, "items", 1, use_op=True, sample_options=OPTIONS)
    return str(exported.path)


@pytest.fixture(scope="module")
def backend(tmp_path_factory):
    with BundleBackend(trained_bundle(str(tmp_path_factory.mktemp("bundles")))) as model:
        yield model


def scored_graph(backend) -> EmbeddedSource:
    """The training graph as the trainer left it (its FastRP property), every item classified,
    then a new item linked to three items of group 0, the changes in the default log."""
    g, *_ = communities(held_out=0.0)
    source = EmbeddedSource(g)
    write_structural_features(source, "Item", structural_call(OPTIONS, seed=SEED))
    classify_graph(source, backend, progress=False)
    new = g.add_node(["Item"], {"id": NEW, "label": 0})
    changes = [
        Change("created", "node", new, key=NEW, labels=("Item",), properties=("id", "label"))
    ]
    for friend in FRIENDS:
        eid = g.add_edge(new, friend, "LINK", {"split": "train"})
        changes.append(
            Change("created", "relationship", eid, rel_type="LINK", start_id=new, end_id=friend)
        )
    ChangeLog(source).record(changes)
    return source


def stored_fastrp(source: EmbeddedSource) -> dict[int, list[float] | None]:
    g = source.graph
    return {
        g.get_property(i, "id"): g.get_property(i, STRUCTURAL_PROPERTY) for i in g.nodes("Item")
    }


def test_the_bundle_names_its_structural_label(backend):
    assert structural_labels(backend.config.options) == ["Item"]


def test_a_pass_recomputes_fastrp_and_rescores_as_a_full_run(backend):
    source = scored_graph(backend)
    summary = Refresher(source, backend, batch_size=32).once()
    assert summary.committed and summary.changes == 4
    assert summary.structural > len(FRIENDS) and "FastRP vector(s) recomputed" in summary.text()
    fastrp = stored_fastrp(source)
    full = structural_features(source, "Item", {**STRUCTURAL_OPTIONS, **OPTIONS, "seed": SEED})
    assert fastrp == dict(zip(full.node_ids.tolist(), full.features.tolist()))
    assert any(fastrp[NEW])  # no longer the zero vector the feature spec gives a missing one
    refreshed = predictions(source)
    assert NEW in refreshed
    classify_graph(source, backend, overwrite=True, progress=False)
    again = predictions(source)
    assert sorted(refreshed) == sorted(again) and len(again) == N + 1
    for key in [NEW, *(BASE + f for f in FRIENDS), *sorted(again)]:
        assert refreshed[key][0] == again[key][0], key
        np.testing.assert_allclose(refreshed[key][1], again[key][1], atol=1e-5, err_msg=str(key))


def test_opting_out_leaves_the_property_as_it_was(backend):
    source = scored_graph(backend)
    before = stored_fastrp(source)
    summary = Refresher(source, backend, structural=False).once()
    assert summary.committed and summary.structural == 0
    assert stored_fastrp(source) == before and before[NEW] is None


def test_a_bundle_reading_fastrp_at_another_width_is_refused():
    spec = {"Item": {"properties": [{"name": STRUCTURAL_PROPERTY, "length": 64}]}}
    with pytest.raises(
        ConfigurationError, match=r"label 'Item' reads 'memgraph_tf_fastrp' with length 64"
    ):
        structural_labels({"feature_spec": spec})


def test_a_new_relationship_type_at_the_label_recomputes_it_in_full(backend):
    """A type that first touches the label changes every node's FastRP (the default call walks
    every type touching it): the pass recomputes the label in full and re-scores every node."""
    source = scored_graph(backend)
    g = source.graph
    eid = g.add_edge(1, 2, "SIMILAR")
    ChangeLog(source).record(
        [Change("created", "relationship", eid, rel_type="SIMILAR", start_id=1, end_id=2)]
    )
    summary = Refresher(source, backend, batch_size=64).once()
    assert summary.committed and summary.structural == N + 1
    assert summary.affected == summary.classified == N + 1
    full = structural_features(source, "Item", {**STRUCTURAL_OPTIONS, **OPTIONS, "seed": SEED})
    assert full.columns == [f"fastrp:{j}" for j in range(256)]
    assert stored_fastrp(source) == dict(zip(full.node_ids.tolist(), full.features.tolist()))
    refreshed = predictions(source)
    classify_graph(source, backend, overwrite=True, progress=False)
    again = predictions(source)
    for key in sorted(again):
        assert refreshed[key][0] == again[key][0], key
        np.testing.assert_allclose(refreshed[key][1], again[key][1], atol=1e-5, err_msg=str(key))


def _rel(kind, eid, start, end, rel_type="LINK"):
    return Change(kind, "relationship", eid, rel_type=rel_type, start_id=start, end_id=end)


@pytest.mark.parametrize(
    ("changes", "labels", "reason"),
    [
        ([_rel("created", 9, 1, 2)], {1: ["Item"], 2: ["Item"]}, None),  # LINK: 5 there already
        ([_rel("created", 9, 1, 2, "NEW")], {1: ["Item"]}, "'NEW' may have started touching it"),
        ([_rel("deleted", 9, 1, 2, "OLD")], {1: ["Item"]}, "'OLD' may have stopped touching it"),
        ([_rel("deleted", 9, 1, 2, "OLD")], {1: ["Tag"], 2: ["Tag"]}, None),  # never touched it
        ([_rel("deleted", 9, 1, 2, "OLD")], {1: ["Tag"]}, "'OLD' may have stopped touching it"),
        (
            [_rel("deleted", 9, 1, 2, "OLD"), Change("deleted", "node", 2, labels=("Tag",))],
            {1: ["Tag"]},
            None,
        ),
        ([Change("updated", "node", 1)], {1: ["Item"]}, "node 1's labels changed"),
        ([Change("updated", "node", 1, properties=("x",))], {1: ["Item"]}, None),
        (
            [Change("updated", "node", 1, properties=("x",), changed_labels=("Item",))],
            {1: ["Item"]},
            "node 1's labels changed",
        ),
    ],
)
def test_type_change_says_when_the_types_at_the_label_may_have_changed(changes, labels, reason):
    got = type_change("Item", {"LINK": 5, "NEW": 1}, changes, labels)
    assert (got is None) if reason is None else (reason in got), got


@pytest.mark.parametrize(
    ("change", "call", "named"),
    [
        (Change("created", "node", 1), {}, {1}),
        (Change("deleted", "node", 1), {}, {1}),
        (_rel("created", 9, 1, 2), {}, {1, 2}),
        (_rel("deleted", 9, 1, 2), {}, {1, 2}),
        (Change("updated", "node", 1), {}, {1}),  # a label change
        (Change("updated", "node", 1, properties=("x",), changed_labels=("Item",)), {}, {1}),
        (Change("updated", "node", 1, properties=("x",), changed_labels=("Old",)),
         {"id_property": "id"}, {1}),
        (Change("updated", "node", 1, properties=("id",)), {"id_property": "id"}, {1}),
        (Change("updated", "node", 1, properties=("x",)), {"id_property": "id"}, set()),
        (Change("updated", "node", 1, properties=(STRUCTURAL_PROPERTY,)), {}, set()),
        (
            Change("updated", "relationship", 9, rel_type="L", start_id=1, end_id=2,
                   properties=("split",)),
            {"exclude_splits": ["val"]},
            {1, 2},
        ),
        (
            Change("updated", "relationship", 9, rel_type="L", start_id=1, end_id=2,
                   properties=("split",)),
            {},
            set(),
        ),
        (Change("created", "node", 1, labels=("MemgraphTfChange",)), {}, set()),
    ],
)  # fmt: skip
def test_fastrp_nodes_are_those_whose_fastrp_inputs_changed(change, call, named):
    assert fastrp_nodes([change], call) == named


def test_the_logged_writes_of_a_pass_recompute_nothing_more(backend):
    """A server's triggers log the pass's own writes of the property: the next pass re-scores
    the seeds that read them (the same values) and recomputes no vector."""
    source = scored_graph(backend)
    first = Refresher(source, backend, batch_size=64).once()
    g = source.graph
    logged = [
        Change("updated", "node", i, labels=("Item",), properties=(STRUCTURAL_PROPERTY,))
        for i in g.nodes("Item")
    ]
    ChangeLog(source).record(logged)
    before = predictions(source)
    second = Refresher(source, backend, batch_size=64).once()
    assert first.structural > 0 and second.structural == 0
    assert second.committed and second.classified == N + 1
    after = predictions(source)
    assert {k: v[:2] for k, v in after.items()} == {k: v[:2] for k, v in before.items()}
