"""Batch inference with a feature-spec bundle (its encoders inside, ``options.feature_spec`` in
its config): ``memgraph-tf classify`` in one process and as a Beam pipeline on the DirectRunner
write, for every :Person node, the class (and score) of the in-process model on the node's own
``sample_typed`` blob -- the model and graph of tests/serving/test_feature_spec_bundles.py, each
run on a fresh copy of the graph."""

from __future__ import annotations

import numpy as np
import pytest

from tests.beam import helpers as h

try:
    import apache_beam  # noqa: F401 -- imported only to see whether Beam is installed
except ImportError as exc:
    h.beam_missing(exc)

from memgraph_tf.client import EmbeddedSource
from memgraph_tf.client.node_tables import property_names
from tests.serving.test_feature_spec_bundles import OPTIONS, PEOPLE, in_process, trained


def _fresh() -> EmbeddedSource:
    """A fresh in-process copy of the planted property graph the model was trained on."""
    from memgraph_tf.property_datasets import property_embedded_graph

    return EmbeddedSource(property_embedded_graph(trained()[0])[0])


@pytest.fixture(scope="module")
def bundle_path(tmp_path_factory):
    """The spec model exported with the op (model ``people``, version 1): the Beam paths do not
    depend on the decoder."""
    from memgraph_tf.serving.export import export_bundle

    base = tmp_path_factory.mktemp("beam-spec")
    model = trained()[3].model
    return export_bundle(model, base, "people", 1, use_op=True, sample_options=OPTIONS).path


@pytest.fixture(scope="module")
def expected():
    """``(classes, top scores)`` of the in-process model for persons 0..PEOPLE-1 of a fresh
    copy (one sample_typed blob, the bundle's inference seed)."""
    probs = in_process(list(range(PEOPLE)), _fresh())
    names = trained()[3].model.class_names
    return [names[int(k)] for k in probs.argmax(axis=1)], probs.max(axis=1)


def _written(source: EmbeddedSource, prop: str) -> tuple[list, np.ndarray]:
    cls, score, _ = property_names(prop)
    graph = source.graph
    by_key = {graph.get_property(n, "id"): n for n in graph.nodes("Person")}
    nodes = [by_key[k] for k in range(PEOPLE)]
    return (
        [graph.get_property(n, cls) for n in nodes],
        np.array([graph.get_property(n, score) for n in nodes], dtype=float),
    )


def test_classify_command_writes_the_in_process_classes(bundle_path, expected, monkeypatch, capsys):
    from memgraph_tf import cli
    from memgraph_tf.client import sources

    source = _fresh()
    monkeypatch.setattr(sources, "open_graph", lambda uri, **kw: source)
    args = ["classify", "--graph", "embedded:people", "--model", str(bundle_path)]
    code = cli.main([*args, "--write-property", "spec", "--no-progress"])
    assert code == 0, capsys.readouterr().err
    assert f"classified {PEOPLE}" in capsys.readouterr().out
    classes, scores = _written(source, "spec")
    assert classes == expected[0]
    np.testing.assert_allclose(scores, expected[1], rtol=1e-5, atol=1e-6)


def test_beam_direct_runner_writes_the_in_process_classes(bundle_path, expected):
    source = _fresh()
    h.classify_on_two_threads(source, bundle_path, PEOPLE, write_property="beam_spec")
    classes, scores = _written(source, "beam_spec")
    assert classes == expected[0]
    assert len(set(classes)) > 1  # not one class for all
    np.testing.assert_allclose(scores, expected[1], rtol=1e-5, atol=1e-6)
