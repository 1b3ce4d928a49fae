"""Training GraphSAGE through the query modules, evaluation, and batch inference written back."""

from __future__ import annotations

import numpy as np
import pytest

from memgraph_tf.client import EmbeddedSource, evaluate, predict_and_write, train_graphsage
from memgraph_tf.client.inference import predict
from memgraph_tf.errors import ConfigurationError
from tests.graphs import short_run

ID0 = 10_000
OPTS = {"id_property": "id"}


@pytest.fixture(scope="module")
def trained(community):
    source, labels, _ = community
    ids = np.arange(ID0, ID0 + len(labels))
    train, val, test = ids[:60], ids[60:100], ids[100:]
    result = train_graphsage(
        source,
        train,
        val,
        options=OPTS,
        class_names=["a", "b", "c"],
        **short_run(fanouts=(5, 3), steps=60, batch_size=32, learning_rate=0.01),
    )
    return result, train, val, test


def test_training_learns_the_communities(trained, community):
    source, labels, _ = community
    result, _, _, test = trained
    assert (
        result.model.num_classes == 3
        and result.model.feature_dim == 8
        and result.model.fanouts == (5, 3)
    )
    history = result.history
    assert len(history["step"]) == 60 and history["eval_step"][:2] == [10, 20]
    assert np.mean(history["loss"][-10:]) < np.mean(history["loss"][:10])
    assert result.best_val_accuracy == max(history["val_accuracy"])
    test_acc = evaluate(result.model, source, test, options=OPTS, draws=3, seed=0)["accuracy"]
    majority = np.bincount(labels[test - ID0]).max() / len(test)
    assert test_acc >= 0.8 > majority + 0.2, (test_acc, majority)


def test_predict_and_write_is_batched_and_idempotent(trained, community):
    source, _, _ = community
    result, _, _, test = trained
    model = result.model
    expected = predict(model, source, test, options=OPTS, seed=0, batch_size=16)
    assert expected.probabilities.shape == (len(test), 3)
    np.testing.assert_allclose(expected.probabilities.sum(axis=1), 1.0, rtol=1e-5)
    for _ in range(2):  # running again writes the same values
        written = predict_and_write(
            model,
            source,
            test,
            options=OPTS,
            chunk_size=len(test),
            batch_size=16,
            progress=False,
            write_class_names=True,
        )
        assert written == len(test)
        graph = source.graph
        got = [graph.get_property(int(i) - ID0, "predicted_class") for i in test]
        assert got == [model.class_names[c] for c in expected.classes]
        scores = [graph.get_property(int(i) - ID0, "predicted_class_score") for i in test]
        np.testing.assert_allclose(scores, expected.scores, rtol=1e-6)
        versions = {graph.get_property(int(i) - ID0, "predicted_class_version") for i in test}
        assert versions == {0}  # an in-memory model: version 0 unless given
        assert graph.get_property(int(test[0]) - ID0, "predicted_score") is None  # the old name
    assert graph.get_property(0, "predicted_class") is None  # a training node was not written


def test_predict_and_write_every_node_by_default(trained, make_community):
    result = trained[0]
    graph, _, _ = make_community(num_nodes=40)
    source = EmbeddedSource(graph)
    written = predict_and_write(
        result.model,
        source,
        options=OPTS,
        property_name="cls",
        version=4,
        chunk_size=16,
        progress=False,
    )
    assert written == 40
    values = [graph.get_property(i, "cls") for i in range(40)]
    assert all(isinstance(v, int) and 0 <= v < 3 for v in values)
    assert graph.get_property(0, "cls_version") == 4 and graph.get_property(0, "cls_score") > 0
    with pytest.raises(
        ConfigurationError,
        match=r"property_name: expected a non-empty name without backquotes or NUL, got ''",
    ):
        predict_and_write(result.model, source, options=OPTS, property_name="", progress=False)


def test_predict_and_write_writes_class_score_and_version_together(
    trained, make_community, monkeypatch
):
    result = trained[0]
    graph, _, _ = make_community(num_nodes=20)
    source = EmbeddedSource(graph)
    calls = []
    real = source._write_checked
    monkeypatch.setattr(
        source,
        "_write_checked",
        lambda write: calls.append((list(write.node_ids), sorted(write.columns))) or real(write),
    )
    written = predict_and_write(result.model, source, options=OPTS, chunk_size=8, progress=False)
    assert written == 20
    three = ["predicted_class", "predicted_class_score", "predicted_class_version"]
    assert calls == [
        ([ID0 + i for i in range(a, b)], three) for a, b in ((0, 8), (8, 16), (16, 20))
    ]
    assert all(graph.get_property(i, "predicted_class_score") is not None for i in range(20))
    with pytest.raises(ConfigurationError, match=r"version: expected an integer model version"):
        predict_and_write(result.model, source, options=OPTS, version="1", progress=False)


def test_embedded_write_columns_sets_each_nodes_columns(make_community):
    graph, _, _ = make_community(num_nodes=6)
    source = EmbeddedSource(graph)
    assert (
        source.write_columns(
            [ID0 + 1, 77, ID0 + 4], {"a": [1, 2, 3], "b": ["x", "y", "z"]}, id_property="id"
        )
        == 2
    )
    assert [(graph.get_property(i, "a"), graph.get_property(i, "b")) for i in (1, 4, 0)] == [
        (1, "x"),
        (3, "z"),
        (None, None),
    ]
    with pytest.raises(
        ConfigurationError, match=r"columns\['b'\]: expected one value per node id \(1\), got 2"
    ):
        source.write_columns([1], {"a": [1], "b": [1, 2]})


def test_training_argument_errors(community):
    source, _, _ = community
    ids = np.arange(ID0, ID0 + 10)
    with pytest.raises(
        ConfigurationError, match=r"options.seed: expected no fixed sampling seed for training"
    ):
        train_graphsage(source, ids, options={**OPTS, "seed": 3}, steps=1)
    with pytest.raises(ConfigurationError, match=r"steps: expected an integer >= 1, got 0"):
        train_graphsage(source, ids, options=OPTS, steps=0)
    with pytest.raises(ConfigurationError, match=r"eval_draws: expected an integer >= 1, got 0"):
        train_graphsage(source, ids, ids, options=OPTS, eval_draws=0, steps=1)
    with pytest.raises(ConfigurationError, match=r"learning_rate: expected a number > 0, got -1"):
        train_graphsage(source, ids, options=OPTS, learning_rate=-1)
    with pytest.raises(
        ConfigurationError,
        match=r"labels: expected class indices in 0..1 for every training node, got 2",
    ):
        train_graphsage(source, ids, options=OPTS, num_classes=2, steps=1, fanouts=(2,))


def test_embedded_write_properties_counts_only_existing_nodes(make_community):
    graph, _, _ = make_community(num_nodes=12)
    source = EmbeddedSource(graph)
    assert (
        source.write_properties([ID0 + 1, 5, ID0 + 11], "x", [1.5, 2.5, 3.5], id_property="id") == 2
    )
    assert [graph.get_property(i, "x") for i in (1, 5, 11)] == [1.5, None, 3.5]
    assert source.write_properties([3, 99], "y", ["a", "b"]) == 1  # internal ids
    assert graph.get_property(3, "y") == "a"
    assert source.node_ids(id_property="id") == [ID0 + i for i in range(12)]
    assert source.node_ids(label="Missing") == []


@pytest.mark.parametrize(
    "use_feature_cache,sparse_rows", [(True, False), (True, True), (False, False)]
)
def test_training_traces_nothing_after_the_first_evaluation(
    community, monkeypatch, use_feature_cache, sparse_rows
):
    """Pipelines and traced functions are built once per run: every graph TensorFlow traces
    (tf.function and tf.data map functions alike go through func_graph_from_py_func) is traced by
    the end of the first evaluation, and later evaluations and steps trace none -- also with the
    feature cache's rows handed over sparse (the threshold raised so the dense features count as
    sparse)."""
    import logging

    from tensorflow.python.framework import func_graph

    from memgraph_tf.client import pipeline

    if sparse_rows:
        monkeypatch.setattr(pipeline, "SPARSE_ROWS_MAX_DENSITY", 1.0)

    source, _, _ = community
    ids = np.arange(ID0, ID0 + 150)
    traced = [0]
    real = func_graph.func_graph_from_py_func

    def counting(*args, **kwargs):
        traced[0] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(func_graph, "func_graph_from_py_func", counting)
    at_evaluation = []

    class Snapshot(logging.Handler):
        def emit(self, record):
            if record.getMessage().startswith("step "):
                at_evaluation.append(traced[0])

    logger = logging.getLogger("memgraph_tf.client.steps")  # the trainers' one loop logs here
    handler, level = Snapshot(logging.INFO), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    settings = short_run(
        fanouts=(4, 3), hidden_units=8, steps=15, eval_every=5, eval_draws=2, batch_size=25, seed=1
    )
    try:
        result = train_graphsage(
            source,
            ids[:60],
            ids[60:100],
            options=OPTS,
            use_feature_cache=use_feature_cache,
            **settings,
        )
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    assert result.history["eval_step"] == [5, 10, 15] and len(at_evaluation) == 3
    assert at_evaluation[0] > 0  # the counter sees the traces
    assert at_evaluation == [at_evaluation[0]] * 3 and traced[0] == at_evaluation[0]
    history = result.history
    assert len(history["wait_s"]) == len(history["step_s"]) == 15
    assert len(history["eval_s"]) == len(history["elapsed_s"]) == 3
    assert history["elapsed_s"] == sorted(history["elapsed_s"])
