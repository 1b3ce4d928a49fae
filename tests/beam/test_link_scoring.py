"""Beam's ScoreLinks on the DirectRunner: the relationships ``memgraph-tf score-links``
writes (top k per source), each once, also when the BundleBasedDirectRunner retries a bundle whose
links were already written (a worker failing after its write committed)."""

from __future__ import annotations

import collections

import pytest

from tests.beam import helpers as h

try:
    import apache_beam  # noqa: F401 -- imported only to see whether Beam is installed
except ImportError as exc:
    h.beam_missing(exc)

from memgraph_tf.batch.link_scoring import score_links
from memgraph_tf.beam import ScoreLinks, create_pipeline, register_graph, unregister_graph
from memgraph_tf.beam.runner import run_pipeline
from memgraph_tf.client.link_tables import LinkSelection, LinkTable
from tests.client import links_kit as kit

K = 2


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """The kit's model: its weights on disk (the picklable factory loads them) and the reference
    links of one uninterrupted one-process run."""
    m = kit.model()
    weights = tmp_path_factory.mktemp("links") / "link.weights.h5"
    m.save_weights(weights)
    source, _, _ = kit.embedded_graph()
    score_links(source, kit.backend(m), k=K, relationship_type=kit.REL)
    return kit.SavedBackend(weights), _links(source)


def _links(source):
    return LinkTable(source, LinkSelection(kit.LABEL, kit.LABEL, 1, "id")).read_links()


class _CrashAfterWrite:
    """Wraps LinkTable.write: the ``crash_at``-th call writes its links, then raises once."""

    def __init__(self, monkeypatch, crash_at: int):
        self.calls = 0
        self.crashed = 0
        original = LinkTable.write

        def write(table, links):
            written = original(table, links)
            self.calls += 1
            if self.calls == crash_at and not self.crashed:
                self.crashed += 1
                raise RuntimeError("injected worker failure after the links were written")
            return written

        monkeypatch.setattr(LinkTable, "write", write)


def test_a_retried_bundle_writes_no_link_twice_and_the_links_equal_score_links(saved, monkeypatch):
    factory, reference = saved
    source, _, _ = kit.embedded_graph()
    spec = register_graph(source)
    fault = _CrashAfterWrite(monkeypatch, crash_at=2)
    try:
        pipeline = create_pipeline("BundleBasedDirectRunner")
        transform = ScoreLinks(
            spec, factory, k=K, relationship_type=kit.REL, batch_size=8, num_ranges=3
        )
        _ = pipeline | transform
        run_pipeline(pipeline)
    finally:
        unregister_graph(spec)
    assert fault.crashed == 1 and fault.calls > 90 // 8  # the failed bundle's pages came again
    links = _links(source)
    assert max(collections.Counter((s, t) for s, t, _, _ in links).values()) == 1
    assert [(s, t) for s, t, _, _ in links] == [(s, t) for s, t, _, _ in reference]
    assert [p for *_, p, _ in links] == pytest.approx([p for *_, p, _ in reference], abs=1e-5)
    assert transform.plan.selected == 90


def test_at_a_time_the_pipeline_writes_predict_links_scores(tmp_path):
    """``ScoreLinks(..., at=T)`` with a link bundle of a model with a timed step
    (tests/serving/timed_links_kit.py): each written link's score is ``predict_links``'s on the
    pair with the time column T (top-k candidates are no :BOUGHT neighbours: the pair blob and
    the two embeddings see the same neighbourhoods)."""
    import functools

    import numpy as np

    from memgraph_tf.batch.link_scoring import BundleLinkBackend
    from tests.serving import timed_links_kit as timed

    path = timed.export(tmp_path).path.parent
    source = timed.graph()
    spec = register_graph(source)
    try:
        pipeline = create_pipeline("BundleBasedDirectRunner")
        factory = functools.partial(BundleLinkBackend, str(path))
        _ = pipeline | ScoreLinks(
            spec,
            factory,
            k=1,
            relationship_type="BOUGHT",
            batch_size=100,
            num_ranges=1,
            at=timed.AT,
        )
        run_pipeline(pipeline)
    finally:
        unregister_graph(spec)
    links = LinkTable(source, LinkSelection("User", "Product", 1, "id")).read_links()
    assert len(links) == 200
    pairs = np.array([(s, t) for s, t, _, _ in links], dtype=np.int64)
    want = timed.in_process(source, pairs, timed.AT)
    np.testing.assert_allclose([p for _, _, p, _ in links], want, atol=1e-5)
    assert np.abs(timed.in_process(source, pairs, None) - want).max() > 1e-3  # the time matters
