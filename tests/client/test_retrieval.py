"""Retrieval by embedding: ``score-links`` top-k candidates from the vector index on the targets'
embeddings (written by ``embed --role target``) against every target scored (recall@k), the
``similar`` query through the index and the exact search, and the exact search itself. The graph
and the untrained link model are ``links_kit``'s."""

from __future__ import annotations

import numpy as np
import pytest

from memgraph_tf.batch import retrieval, vectors
from memgraph_tf.batch.embedder import EmbedBackend, embed_nodes
from memgraph_tf.batch.link_scoring import BundleLinkBackend, score_links
from memgraph_tf.client.link_tables import LinkSelection, LinkTable
from memgraph_tf.errors import ConfigurationError
from tests.client import links_kit as kit

K = 5


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    from memgraph_tf.serving.export_links import export_link_bundle

    base = tmp_path_factory.mktemp("retrieval-bundles")
    options = {**kit.OPTIONS, "seed": kit.SEED}
    export_link_bundle(
        kit.model(), base, "links", 2, decoder="op", sample_options=options, warmup=False
    )
    return base / "links"


@pytest.fixture(scope="module")
def backend(bundle):
    with BundleLinkBackend(bundle) as b:
        yield b


def _indexed_graph(bundle):
    """The kit's graph with every node's target embedding written and indexed (metric ip: the dot
    scorer's order)."""
    source, _, _ = kit.embedded_graph()
    with EmbedBackend(bundle, role="target") as model:
        summary = embed_nodes(source, model, create_index=True, metric="ip", batch_size=32)
    assert summary.classified == 90
    return source


def _links(source, version=2):
    table = LinkTable(source, LinkSelection(kit.LABEL, kit.LABEL, version, "id"))
    by_source: dict[int, list[tuple[int, float]]] = {}
    for s, t, p, _ in table.read_links():
        by_source.setdefault(s, []).append((t, p))
    return by_source


def test_index_candidates_recall_the_exact_top_k(bundle, backend):
    exact_graph, _, _ = kit.embedded_graph()
    exact = score_links(exact_graph, backend, k=K, relationship_type=kit.REL, retrieval="exact")
    assert exact.index is None
    indexed = _indexed_graph(bundle)
    found = score_links(indexed, backend, k=K, relationship_type=kit.REL, retrieval="index")
    assert found.index == "embedding_Doc" and "from vector index embedding_Doc" in found.text()
    assert found.sources == exact.sources == 90 and found.pairs < exact.pairs
    want, got = _links(exact_graph), _links(indexed)
    assert set(got) == set(want)
    recall = retrieval.recall_at_k(
        [[t for t, _ in got[s]] for s in sorted(want)],
        [[t for t, _ in want[s]] for s in sorted(want)],
    )
    assert recall >= 0.95
    same = [(p, dict(want[s])[t]) for s in got for t, p in got[s] if t in dict(want[s])]
    np.testing.assert_allclose(*zip(*same), rtol=1e-4)


def test_index_retrieval_without_this_models_embeddings(bundle, backend):
    source, _, _ = kit.embedded_graph()
    with pytest.raises(ConfigurationError, match=r"no vector index on :Doc\(embedding\)"):
        score_links(source, backend, k=K, retrieval="index")
    source.graph.execute(
        'CREATE VECTOR INDEX z ON :Doc(embedding) WITH CONFIG {"dimension": 16, "capacity": 200, '
        '"metric": "ip"}'
    )
    with pytest.raises(
        ConfigurationError,
        match=r"retrieval: 90 :Doc node\(s\) lack 'embedding' of links version 2",
    ):
        score_links(source, backend, k=K, retrieval="index")
    summary = score_links(source, backend, k=K, retrieval="auto")  # falls back to exact
    assert summary.index is None and summary.sources == 90


def test_similar_nodes_by_index_and_exact_agree_and_rerank_orders_by_link_probability(
    bundle, backend
):
    source = _indexed_graph(bundle)
    keys = [-200, -151, 297]
    for key in keys:
        by_index = retrieval.similar_nodes(
            source, key, 6, label=kit.LABEL, id_property="id", retrieval="index"
        )
        exact = retrieval.similar_nodes(
            source, key, 6, label=kit.LABEL, id_property="id", retrieval="exact", metric="ip"
        )
        assert [k for k, _ in by_index] == [k for k, _ in exact] and key not in dict(exact)
        np.testing.assert_allclose([s for _, s in by_index], [s for _, s in exact], rtol=1e-4)
        reranked = retrieval.similar_nodes(
            source, key, 6, label=kit.LABEL, id_property="id", rerank=backend
        )
        assert {k for k, _ in reranked} == {k for k, _ in by_index}
        probs = [p for _, p in reranked]
        assert probs == sorted(probs, reverse=True) and all(0 < p < 1 for p in probs)
    with pytest.raises(ConfigurationError, match=r":Doc node 12345 has no embedding 'embedding'"):
        retrieval.similar_nodes(source, 12345, 3, label=kit.LABEL, id_property="id")


def test_exact_top_k_is_the_brute_force_order():
    rng = np.random.default_rng(0)
    stored = retrieval.Embeddings(
        np.arange(0, 200, 2), rng.normal(size=(100, 8)).astype(np.float32)
    )
    q = rng.normal(size=(3, 8)).astype(np.float32)
    for metric in ("cos", "ip", "l2sq"):
        top = retrieval.exact_top_k(q, stored, 4, metric, [{0}, set(), {10, 12}])
        sims = retrieval.similarities(q, stored.matrix, metric)
        for i, row in enumerate(top):
            drop = [{0}, set(), {10, 12}][i]
            order = [
                int(stored.keys[j]) for j in np.argsort(-sims[i]) if stored.keys[j] not in drop
            ]
            assert [k for k, _ in row] == order[:4]
    assert retrieval.recall_at_k([[1, 2], [3]], [[1, 5], [3]]) == 0.75
    assert vectors.index_for([], "Doc", "embedding") is None


def test_similar_cli_prints_the_neighbours_and_refuses_an_unknown_node(monkeypatch, capsys, bundle):
    from memgraph_tf import cli
    from memgraph_tf.client import sources

    source = _indexed_graph(bundle)
    monkeypatch.setattr(sources, "open_graph", lambda uri, **options: source)
    args = ["similar", "--graph", "embedded:test", "--label", kit.LABEL, "--id-property", "id"]
    assert cli.main([*args, "--node-id", "-200", "-k", "3", "--rerank-model", str(bundle)]) == 0
    lines = capsys.readouterr().out.splitlines()
    want = retrieval.similar_nodes(source, -200, 3, label=kit.LABEL, id_property="id")
    assert len(lines) == 3
    assert {int(line.split("\t")[0]) for line in lines} == {k for k, _ in want}
    assert cli.main([*args, "--node-id", "12345"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "memgraph-tf similar: error: node: :Doc node 12345 has no embedding 'embedding' (run "
        "memgraph-tf embed first, or check the id)"
    ]


def test_a_served_link_bundle_embeds_each_role_by_node_id(bundle):
    """``:predict`` of ``embed_source`` / ``embed_target`` by ``node_id`` answers what
    ``memgraph-tf embed --role`` writes."""
    from memgraph_tf.serving.client import ServingClient
    from memgraph_tf.serving.model_server import ModelServer
    from memgraph_tf.serving.server import start_server

    ids = [-200, -151, 297]
    source, _, _ = kit.embedded_graph()
    ms = ModelServer(bundle, graph_source=source, warmup=False)
    try:
        with start_server(ms) as rest:
            client = ServingClient(rest.url, "links")
            for role in ("source", "target"):
                written, _, _ = kit.embedded_graph()
                embed_nodes(written, str(bundle), node_ids=ids, role=role, write_property="z")
                graph = written.graph
                want = [
                    graph.get_property(graph.find_nodes(kit.LABEL, "id", i)[0], "z") for i in ids
                ]
                got = client.embed(ids, signature_name=f"embed_{role}")
                np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    finally:
        ms.close()
