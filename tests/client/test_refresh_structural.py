"""``memgraph-tf refresh`` keeps a featureless label's FastRP property fresh: a classifier trained
on items without features (the trainer writes ``memgraph_tf_fastrp`` and records the call in the
feature spec), a node added with relationships and logged, one pass -- the structural property is
recomputed near the changes with the recorded options (the training seed among them) before
re-scoring, so every stored FastRP vector equals a full recompute on the changed graph and every
stored prediction (the new node's, its neighbours') equals a full re-score on that graph;
``structural=False`` leaves the property as it was; a bundle whose spec lacks the record is
refused unless a seed is given."""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import pathlib
import re
import shutil

import numpy as np
import pytest

from memgraph_tf.batch import BundleBackend, classify_graph
from memgraph_tf.batch.refresh import Refresher, add_arguments, run_cli
from memgraph_tf.batch.structural_refresh import (
    fastrp_nodes,
    structural_calls,
    structural_labels,
    type_change,
)
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
SEVEN = 7  # a training seed other than the default


@functools.cache
def trained_model(seed: int = SEED):
    """The featureless items' classifier trained with ``seed`` (the trainer writes their FastRP
    property, its projection drawn from that seed)."""
    g, *_ = communities(held_out=0.0)
    result = train_classifier(
        g, class_names=["g0", "g1", "g2", "g3"], **short_run(steps=10, eval_every=5, seed=seed)
    )
    return result.model


def trained_bundle(base: str, seed: int = SEED) -> str:
    """:func:`trained_model` exported as an op bundle under ``base``; returns its path."""
    from memgraph_tf.serving.export import export_bundle

    model = trained_model(seed)
    exported = export_bundle(model, base, "items", 1, use_op=True, sample_options=OPTIONS)
    return str(exported.path)


@pytest.fixture(scope="module")
def backend(tmp_path_factory):
    with BundleBackend(trained_bundle(str(tmp_path_factory.mktemp("bundles")))) as model:
        yield model


@pytest.fixture(scope="module")
def seven(tmp_path_factory):
    """The bundle of the classifier trained with seed 7: its path."""
    return trained_bundle(str(tmp_path_factory.mktemp("bundles7")), seed=SEVEN)


@pytest.fixture(scope="module")
def backend7(seven):
    with BundleBackend(seven) as model:
        yield model


def scored_graph(backend, seed: int = SEED) -> EmbeddedSource:
    """The training graph as the trainer (training ``seed``) left it (its FastRP property), every
    item classified, then a new item linked to three items of group 0, the changes in the
    default log."""
    g, *_ = communities(held_out=0.0)
    source = EmbeddedSource(g)
    write_structural_features(source, "Item", structural_call(OPTIONS, seed=seed))
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
    assert NEW in predictions(source)
    assert_rescored_as_a_full_run(source, backend)


def test_opting_out_leaves_the_property_as_it_was(backend):
    source = scored_graph(backend)
    before = stored_fastrp(source)
    summary = Refresher(source, backend, structural=False).once()
    assert summary.committed and summary.structural == 0
    assert stored_fastrp(source) == before and before[NEW] is None


def full_fastrp(source: EmbeddedSource, seed: int) -> dict[int, list[float]]:
    """Every item's FastRP vector by a call over the whole label with the trainers' options."""
    full = structural_features(source, "Item", {**STRUCTURAL_OPTIONS, **OPTIONS, "seed": seed})
    return dict(zip(full.node_ids.tolist(), full.features.tolist()))


def assert_same_predictions(refreshed: dict, again: dict) -> None:
    """The refreshed predictions (class, scores) equal a full run's, for every node."""
    assert sorted(refreshed) == sorted(again) and len(again) == N + 1
    for key in [NEW, *(BASE + f for f in FRIENDS), *sorted(again)]:
        assert refreshed[key][0] == again[key][0], key
        np.testing.assert_allclose(refreshed[key][1], again[key][1], atol=1e-5, err_msg=str(key))


def assert_rescored_as_a_full_run(source: EmbeddedSource, backend) -> None:
    refreshed = predictions(source)
    classify_graph(source, backend, overwrite=True, progress=False)
    assert_same_predictions(refreshed, predictions(source))


def test_the_bundle_records_the_training_call(backend7):
    [target] = structural_calls(backend7.config.options)
    assert (target.label, target.prop) == ("Item", STRUCTURAL_PROPERTY)
    assert target.call == structural_call(OPTIONS, seed=SEVEN, relationship_types=["LINK"])
    assert target.call["relationship_types"] == ["LINK"]  # the types at the label when trained
    assert target.call["seed"] == SEVEN and target.call["dimension"] == 256


def test_a_pass_recomputes_with_the_recorded_training_seed(backend7):
    """Trained with seed 7, refreshed with no seed given: the stored vectors equal a full
    recompute with seed 7 (and the new node's differs from seed 0's: the seed matters)."""
    source = scored_graph(backend7, seed=SEVEN)
    summary = Refresher(source, backend7, batch_size=32).once()
    assert summary.committed and summary.structural > len(FRIENDS)
    fastrp = stored_fastrp(source)
    assert fastrp == full_fastrp(source, SEVEN)
    assert fastrp[NEW] != full_fastrp(source, SEED)[NEW]
    assert_rescored_as_a_full_run(source, backend7)


def without_record(options: dict) -> dict:
    """``options`` as a bundle exported before the feature spec recorded the structural call."""
    options = json.loads(json.dumps(options))
    for prop in options["feature_spec"]["Item"]["properties"]:
        del prop["structural"]
    return options


MISSING = (
    r"model: label 'Item' reads 'memgraph_tf_fastrp', and its feature spec records no "
    r"'structural' options \(the seed and settings the vectors were written with\): pass "
    r"--structural-seed N \(the training seed; 0 when training set none\)"
)


def test_a_bundle_without_the_record_is_refused_without_a_seed(backend7, monkeypatch):
    old = dataclasses.replace(backend7.config, options=without_record(backend7.config.options))
    monkeypatch.setattr(backend7, "config", old)
    source = scored_graph(backend7, seed=SEVEN)
    with pytest.raises(ConfigurationError, match=MISSING):
        Refresher(source, backend7)
    summary = Refresher(source, backend7, structural_seed=SEVEN).once()  # the explicit override
    assert summary.committed and stored_fastrp(source) == full_fastrp(source, SEVEN)


def test_the_command_refuses_a_bundle_without_the_record(seven, tmp_path, capsys):
    """``memgraph-tf refresh`` on a bundle of the earlier format: exit 2, the message on
    stderr, nothing written, the cursor where it was."""
    old = pathlib.Path(shutil.copytree(pathlib.Path(seven).parent, tmp_path / "items")) / "1"
    config = old / "assets" / "memgraph_tf_bundle.json"
    raw = json.loads(config.read_text())
    raw["options"] = without_record(raw["options"])
    config.write_text(json.dumps(raw))
    with BundleBackend(str(old)) as model:
        source = scored_graph(model, seed=SEVEN)
    before = stored_fastrp(source)
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(["--graph", "g", "--model", str(old), "--no-progress"])
    assert run_cli(args, lambda _: source) == 2
    assert re.search("memgraph-tf refresh: error: " + MISSING, capsys.readouterr().err)
    assert stored_fastrp(source) == before and before[NEW] is None
    with BundleBackend(str(old)) as model:
        assert Refresher(source, model, structural=False).cursor() == 0


def test_a_seed_other_than_the_recorded_one_is_refused(backend7):
    source = EmbeddedSource(communities(held_out=0.0)[0])
    with pytest.raises(
        ConfigurationError,
        match=r"label 'Item' reads 'memgraph_tf_fastrp': --structural-seed 0 is not the seed 7 "
        r"its feature spec records for it",
    ):
        Refresher(source, backend7, structural_seed=0)
    assert Refresher(source, backend7, structural_seed=SEVEN).structural.labels == ["Item"]


def test_a_bundle_reading_fastrp_at_another_width_is_refused():
    spec = {"Item": {"properties": [{"name": STRUCTURAL_PROPERTY, "length": 64}]}}
    with pytest.raises(
        ConfigurationError, match=r"label 'Item' reads 'memgraph_tf_fastrp' with length 64"
    ):
        structural_calls({"feature_spec": spec}, seed=0)


def test_a_hand_written_record_is_the_call():
    """A spec written by hand for the user's own ``structural_write`` call (another property,
    fixed relationship types) records it the same way; recorded options the procedure refuses
    are named."""
    call = {"features": ["fastrp"], "dimension": 8, "seed": 3, "relationship_types": ["LINK"]}
    prop = {"name": "emb", "kind": "numeric", "length": 8, "structural": call}
    [target] = structural_calls({"feature_spec": {"Item": {"properties": [prop]}}})
    assert target.call == {**call, "write_property": "emb"}
    bad = {**prop, "structural": {**call, "dimension": 0}}
    with pytest.raises(
        ConfigurationError,
        match=r"label 'Item' reads 'emb': its recorded 'structural' options: options.dimension: "
        r"expected an integer from 1 to 4096, got int 0",
    ):
        structural_calls({"feature_spec": {"Item": {"properties": [bad]}}})


def counting_schema(source: EmbeddedSource, monkeypatch) -> list[str]:
    """Records ``source``'s schema reads (``source.schema()`` calls the ``tf_features.schema``
    procedure through ``call_procedure``): the returned list grows by one per read."""
    calls: list[str] = []
    call_procedure = source.call_procedure

    def counted(procedure, *args, **kwargs):
        if procedure.name == "tf_features.schema":
            calls.append(procedure.name)
        return call_procedure(procedure, *args, **kwargs)

    monkeypatch.setattr(source, "call_procedure", counted)
    return calls


def recorded_call(backend) -> dict:
    [target] = structural_calls(backend.config.options)
    return dict(target.call)


def test_a_pass_on_a_trained_model_reads_no_schema(backend, monkeypatch):
    """The trainer records the types it walked, so a pass with changes scans no schema and its
    vectors equal a full recompute with the recorded call."""
    source = scored_graph(backend)
    calls = counting_schema(source, monkeypatch)
    summary = Refresher(source, backend, batch_size=32).once()
    assert summary.committed and summary.structural > len(FRIENDS)
    assert calls == []
    assert stored_fastrp(source) == full_fastrp_of(source, recorded_call(backend))


def full_fastrp_of(source: EmbeddedSource, call: dict) -> dict[int, list[float]]:
    """Every item's vector by ``call`` (a ``structural_write`` call) over the whole label."""
    full = structural_features(
        source, "Item", {k: v for k, v in call.items() if k != "write_property"}
    )
    return dict(zip(full.node_ids.tolist(), full.features.tolist()))


def with_new_type(source: EmbeddedSource) -> None:
    """A relationship of a type that first touches the items after training, logged."""
    eid = source.graph.add_edge(1, 2, "SIMILAR")
    ChangeLog(source).record(
        [Change("created", "relationship", eid, rel_type="SIMILAR", start_id=1, end_id=2)]
    )


def test_a_new_relationship_type_after_training_is_not_walked(backend, monkeypatch):
    """The model was trained on vectors over the recorded types: a type that first touches the
    label afterwards changes no vector (no rewrite, no schema read), and every stored vector
    still equals a full call with the recorded options."""
    source = scored_graph(backend)
    with_new_type(source)
    calls = counting_schema(source, monkeypatch)
    summary = Refresher(source, backend, batch_size=64).once()
    assert summary.committed and calls == []
    assert len(FRIENDS) < summary.structural < N  # near the new item only
    assert stored_fastrp(source) == full_fastrp_of(source, recorded_call(backend))
    assert_rescored_as_a_full_run(source, backend)


def without_types_and_a_new_type(backend, monkeypatch) -> EmbeddedSource:
    """A scored graph whose bundle's FastRP record names no ``relationship_types`` (as a
    hand-written one), with a relationship type that first touches the label since."""
    options = json.loads(json.dumps(backend.config.options))
    for prop in options["feature_spec"]["Item"]["properties"]:
        del prop["structural"]["relationship_types"]
    monkeypatch.setattr(backend, "config", dataclasses.replace(backend.config, options=options))
    source = scored_graph(backend)
    with_new_type(source)
    return source


def test_a_record_without_types_reads_the_schema_and_recomputes_a_new_type_in_full(
    backend, monkeypatch
):
    """A record naming no ``relationship_types`` (hand-written) walks every type touching the
    label now: the pass reads the schema, and a type that first touches the label changes every
    node's FastRP, so the label is recomputed in full and every node re-scored."""
    source = without_types_and_a_new_type(backend, monkeypatch)
    calls = counting_schema(source, monkeypatch)
    summary = Refresher(source, backend, batch_size=64).once()
    assert calls == ["tf_features.schema"]
    assert summary.committed and summary.structural == N + 1
    assert summary.affected == summary.classified == N + 1
    full = structural_features(source, "Item", {**STRUCTURAL_OPTIONS, **OPTIONS, "seed": SEED})
    assert full.columns == [f"fastrp:{j}" for j in range(256)]
    assert stored_fastrp(source) == dict(zip(full.node_ids.tolist(), full.features.tolist()))
    link_only = {**STRUCTURAL_OPTIONS, **OPTIONS, "seed": SEED, "relationship_types": ["LINK"]}
    assert stored_fastrp(source) != full_fastrp_of(source, link_only)  # SIMILAR is walked
    monkeypatch.undo()
    assert_rescored_as_a_full_run(source, backend)


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
        (_rel("created", 9, 1, 2, "SIMILAR"), {"relationship_types": ["LINK"]}, set()),
        (_rel("deleted", 9, 1, 2), {"relationship_types": ["LINK"]}, {1, 2}),
    ],
)  # fmt: skip
def test_fastrp_nodes_are_those_whose_fastrp_inputs_changed(change, call, named):
    assert fastrp_nodes([change], call) == named


def logging_writes(source: EmbeddedSource, monkeypatch) -> None:
    """Emulates Memgraph's update trigger (memgraph_tf.client.change_log.trigger_statements) for
    ``tf_features.structural_write`` on ``source``: after each call, one logged node update per
    node it wrote, naming the property it set."""
    call_procedure = source.call_procedure

    def logged(procedure, args):
        answer = call_procedure(procedure, args)
        if procedure.name == "tf_features.structural_write":
            label, options = args
            ids = answer["updated"]
            if ids is None:
                ids = source.node_ids(label=label)
            prop = options["write_property"]
            ChangeLog(source).record(
                [Change("updated", "node", i, labels=(label,), properties=(prop,)) for i in ids]
            )
        return answer

    monkeypatch.setattr(source, "call_procedure", logged)


def test_the_logged_writes_of_a_pass_rescore_nothing(backend, monkeypatch):
    """A server's triggers log the pass's own writes of the property: the next pass recognises
    them (the values it wrote are still there) and neither recomputes nor re-scores anything."""
    source = scored_graph(backend)
    logging_writes(source, monkeypatch)
    refresher = Refresher(source, backend, batch_size=64)
    first = refresher.once()
    before = predictions(source)
    second = refresher.once()
    assert first.committed and first.structural > len(FRIENDS)
    assert second.committed and second.changes == first.structural
    assert (second.structural, second.affected, second.classified) == (0, 0, 0)
    assert refresher.once().changes == 0  # the cursor moved past them
    assert predictions(source) == before


def test_a_genuine_write_of_the_property_is_rescored(backend, monkeypatch):
    """Another writer's update of the property, logged among the pass's own writes -- on a node
    the pass rewrote -- is re-scored: every prediction then equals a full re-score."""
    source = scored_graph(backend)
    logging_writes(source, monkeypatch)
    refresher = Refresher(source, backend, batch_size=64)
    first = refresher.once()
    friend = FRIENDS[0]
    g = source.graph
    g.set_property(
        friend, STRUCTURAL_PROPERTY, [-x for x in g.get_property(friend, STRUCTURAL_PROPERTY)]
    )
    ChangeLog(source).record(
        [Change("updated", "node", friend, labels=("Item",), properties=(STRUCTURAL_PROPERTY,))]
    )
    second = refresher.once()
    assert second.changes == first.structural + 1 and second.structural == 0
    assert second.committed and 0 < second.classified < N + 1
    assert_rescored_as_a_full_run(source, backend)


def test_the_refreshers_value_written_back_after_a_foreign_write_is_rescored(backend, monkeypatch):
    """Another writer's value of the property, re-scored by a pass, then the value the refresher
    wrote put back by that writer: the predictions were last made with the foreign value, so the
    write back is re-scored too, and every prediction equals a full re-score."""
    source = scored_graph(backend)
    logging_writes(source, monkeypatch)
    refresher = Refresher(source, backend, batch_size=64)
    refresher.once()
    friend, g, log = FRIENDS[0], source.graph, ChangeLog(source)
    mine = list(g.get_property(friend, STRUCTURAL_PROPERTY))
    update = Change("updated", "node", friend, labels=("Item",), properties=(STRUCTURAL_PROPERTY,))
    g.set_property(friend, STRUCTURAL_PROPERTY, [-x for x in mine])
    log.record([update])
    assert refresher.once().classified > 0
    g.set_property(friend, STRUCTURAL_PROPERTY, mine)
    log.record([update])
    third = refresher.once()
    assert third.committed and third.changes == 1 and third.classified > 0
    assert_rescored_as_a_full_run(source, backend)


def test_a_relabel_logged_with_the_refreshers_value_is_walked(backend, monkeypatch):
    """Memgraph's update trigger folds a transaction's label and property changes of a node into
    one entry: one that sets the FastRP property to the value the refresher wrote and adds a
    label is no write of the refresher's own, so the pass walks it (it recomputes FastRP near
    the node, whose labels changed)."""
    source = scored_graph(backend)
    logging_writes(source, monkeypatch)
    refresher = Refresher(source, backend, batch_size=64)
    first = refresher.once()
    friend, g = FRIENDS[0], source.graph
    g.add_label(friend, "Extra")
    relabel = Change(
        "updated",
        "node",
        friend,
        labels=("Item", "Extra"),
        properties=(STRUCTURAL_PROPERTY,),
        changed_labels=("Extra",),
    )
    assert refresher.structural.own_writes(source, [relabel]) == set()
    ChangeLog(source).record([relabel])
    second = refresher.once()
    assert second.committed and second.changes == first.structural + 1 and second.structural > 0
    assert second.classified > 0


def test_a_logged_deletion_drops_the_digests_of_the_node(backend):
    """The refresher's digests of its writes: a node whose deletion is logged leaves them (the
    memory keeps no node the log says is gone), and so does a node update that may have set the
    property (one naming no property); an update of another property keeps them."""
    source = scored_graph(backend)
    refresher = Refresher(source, backend, batch_size=64)
    refresher.once()
    written = refresher.structural.written
    gone, unknown, other = FRIENDS
    assert {(STRUCTURAL_PROPERTY, i) for i in FRIENDS} <= written.keys()
    changes = [
        Change("deleted", "node", gone, labels=("Item",)),
        Change("updated", "node", unknown, labels=("Item",)),
        Change("updated", "node", other, labels=("Item",), properties=("name",)),
    ]
    before = len(written)
    assert refresher.structural.own_writes(source, changes) == set()
    assert {i for _, i in written}.isdisjoint({gone, unknown}) and len(written) == before - 2


def test_the_logged_writes_of_a_full_recompute_rescore_nothing(backend, monkeypatch):
    """After a full recompute (a record without types, a new type at the label) the triggers
    log a write on every node: the next pass re-scores none of them."""
    source = without_types_and_a_new_type(backend, monkeypatch)
    logging_writes(source, monkeypatch)
    refresher = Refresher(source, backend, batch_size=64)
    first = refresher.once()
    second = refresher.once()
    assert first.structural == N + 1 and second.changes == N + 1
    assert (second.structural, second.affected, second.classified) == (0, 0, 0)


def test_a_hand_written_record_with_fixed_types_recomputes_near_the_changes():
    """A property the user wrote with ``write_structural_features`` over fixed relationship
    types and recorded in the spec: a new type at the label changes none of its vectors, so the
    rewrite stays near the changes (no full recompute) and leaves every vector equal to a full
    call with the recorded options."""
    from memgraph_tf.batch.structural_refresh import StructuralRefresh

    call = {**STRUCTURAL_OPTIONS, **OPTIONS, "seed": 3, "relationship_types": ["LINK"]}
    spec = {"name": "emb", "kind": "numeric", "length": 256, "structural": call}
    refresh = StructuralRefresh({"feature_spec": {"Item": {"properties": [spec]}}})
    g, *_ = communities(held_out=0.0)
    source = EmbeddedSource(g)
    write_structural_features(source, "Item", {**call, "write_property": "emb"})
    new = g.add_node(["Item"], {"id": NEW, "label": 0})
    changes = [Change("created", "node", new, key=NEW, labels=("Item",), properties=("id",))]
    for friend in FRIENDS:
        changes.append(_rel("created", g.add_edge(new, friend, "LINK"), new, friend))
    changes.append(_rel("created", g.add_edge(1, 2, "SIMILAR"), 1, 2, "SIMILAR"))
    rewrite = refresh.rewrite(source, changes, {i: ["Item"] for i in (new, 1, 2, *FRIENDS)})
    assert not rewrite.everything and 0 < rewrite.count < N
    alone = refresh.rewrite(source, changes[-1:], {1: ["Item"], 2: ["Item"]})
    assert (alone.everything, alone.count) == (False, 0)  # SIMILAR is not walked
    assert {c.properties for c in rewrite.updates} == {("emb",)}
    full = structural_features(source, "Item", call)
    stored = {g.get_property(i, "id"): g.get_property(i, "emb") for i in g.nodes("Item")}
    assert stored == dict(zip(full.node_ids.tolist(), full.features.tolist()))
