"""Batch link scoring of a model with a timed step (tests/serving/timed_links_kit.py):
``score_links`` / ``memgraph-tf score-links`` sample every node as of ``at`` (``--at``), else
"now" (``bundle.NOW_TIME``: every relationship), and write ``predict_links``'s scores on
``[n, 3]`` pairs whose time column is that time, with the link bundle and with the model in
memory; a bad ``at`` is refused by name before anything is written."""

from __future__ import annotations

import numpy as np
import pytest

from memgraph_tf.batch.link_scoring import (
    BundleLinkBackend,
    LinkScorer,
    ModelLinkBackend,
    score_links,
)
from memgraph_tf.client.link_tables import LinkSelection, LinkTable
from memgraph_tf.errors import ConfigurationError
from memgraph_tf.serving import bundle as bundle_mod
from tests.client import links_kit
from tests.serving import timed_links_kit as kit


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    """The kit's op link bundle (``BASE/timed_links``)."""
    return kit.export(tmp_path_factory.mktemp("timed-links")).path.parent


def _written(source) -> dict[tuple[int, int], float]:
    table = LinkTable(source, LinkSelection("User", "Product", 1, id_property="id"))
    return {(s, t): p for s, t, p, _ in table.read_links()}


def test_given_pairs_at_a_time_or_now_get_predict_links_scores(bundle):
    pairs = kit.non_edges(6)
    for at, backend in (
        (kit.AT, BundleLinkBackend(bundle)),
        (None, BundleLinkBackend(bundle)),
        (kit.AT, ModelLinkBackend(kit.model(), options=kit.OPTIONS)),
        (None, ModelLinkBackend(kit.model(), options=kit.OPTIONS)),
    ):
        source = kit.graph()
        want = kit.in_process(source, pairs, at)
        with backend:
            summary = score_links(source, backend, pairs=pairs, at=at)
        assert summary.links == len(pairs)
        got = _written(source)
        np.testing.assert_allclose([got[tuple(p)] for p in pairs.tolist()], want, atol=1e-5)
    assert np.abs(kit.in_process(source, pairs, kit.AT) - want).max() > 1e-3  # time matters


def test_the_cli_scores_the_top_k_at_a_time(monkeypatch, capsys, bundle):
    from memgraph_tf import cli
    from memgraph_tf.client import sources

    source = kit.graph()
    monkeypatch.setattr(sources, "open_graph", lambda uri, **options: source)
    args = ["score-links", "--graph", "embedded:test", "--model", str(bundle), "--top-k", "2"]
    code = cli.main([*args, "--relationship-type", "BOUGHT", "--at", str(kit.AT)])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert out.out.startswith("scored 8000 pair(s) of 200 source node(s), wrote 400 ")
    got = _written(source)
    pairs = np.array(sorted(got), dtype=np.int64)
    # top-k candidates are no :BOUGHT neighbours: the pair blob's score is the embeddings' one
    want = kit.in_process(source, pairs, kit.AT)
    np.testing.assert_allclose([got[tuple(p)] for p in pairs.tolist()], want, atol=1e-5)
    with pytest.raises(SystemExit) as stop:
        cli.main([*args, "--at", "soon"])
    assert stop.value.code == 2
    assert "argument --at: invalid int value: 'soon'" in capsys.readouterr().err


def test_a_bad_at_is_refused_by_name_before_anything_is_written(bundle):
    source = kit.graph()
    backend = BundleLinkBackend(bundle)
    with pytest.raises(ConfigurationError, match=r"^at: expected an integer time, got 1\.5$"):
        LinkScorer(source, backend, pairs=kit.non_edges(1), at=1.5)
    with pytest.raises(
        ConfigurationError,
        match=r"^retrieval: 'index' holds the targets' embeddings as of now, not at 40: with at, "
        r"use retrieval 'exact' \(or 'auto'\)$",
    ):
        LinkScorer(source, backend, k=2, at=kit.AT, retrieval="index").prepare()
    assert _written(source) == {}
    docs, _, _ = links_kit.embedded_graph()
    untimed = links_kit.backend(links_kit.model())
    with pytest.raises(
        ConfigurationError,
        match=r"^at: model 'LinkPredictor' has no timed step \(no \{time: \.\.\.\} in its "
        r"num_neighbors\): it samples every node with every relationship, at no time; leave at "
        r"out \(got 3\)$",
    ):
        LinkScorer(docs, untimed, k=2, at=3)
    _, _, opts = untimed.sampling("src")
    assert bundle_mod.AT_OPTION not in opts  # an untimed model samples no time


def test_options_at_is_refused_for_a_model_without_a_timed_step_and_dropped_per_untimed_role():
    """``options["at"]`` names a time only a timed step can use: a model none of whose roles has
    one refuses it by name (as ``LinkScorer(at=...)`` does), never samples "at no time" in
    silence; a timed model samples its timed role at it and leaves it out of the untimed role's
    options (``sample_typed`` refuses ``at`` without a timed step)."""
    with pytest.raises(
        ConfigurationError,
        match=r"^options\.at: model 'LinkPredictor' has no timed step \(no \{time: \.\.\.\} in "
        r"its num_neighbors\): it samples every node with every relationship, at no time; leave "
        r"options\.at out \(got 5\)$",
    ):
        ModelLinkBackend(
            links_kit.model(), properties=links_kit.PROPS, options={"id_property": "id", "at": 5}
        )
    timed = ModelLinkBackend(kit.model(), options={**kit.OPTIONS, "at": kit.AT})
    assert timed.sampling("src")[2][bundle_mod.AT_OPTION] == kit.AT
    assert bundle_mod.AT_OPTION not in timed.sampling("dst")[2]
