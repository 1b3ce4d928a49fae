"""Batch link scoring: ``score_links`` / ``memgraph-tf score-links`` write
exactly the expected ``PREDICTED_LINK`` relationships -- the top k per source of an independent
all-pairs computation, or the given pairs -- with the scores ``predict_links`` gives over the
``sample_pairs`` blobs; a rerun writes none twice; shards partition the sources; bad input is
refused by name before anything is written; over real Bolt (ArcadeDB) a subprocess of the CLI
killed with SIGKILL midway and rerun writes exactly the relationships of an uninterrupted run.

The graph and model: ``tests.client.links_kit`` (90 nodes with sparse ids, an untrained model
with fixed weights)."""

from __future__ import annotations

import collections
import os
import signal
import sys

import numpy as np
import pytest

from memgraph_tf import blob
from memgraph_tf.batch.link_scoring import LinkScorer, score_links
from memgraph_tf.client.link_prediction import predict_links
from memgraph_tf.client.link_tables import LinkSelection, LinkTable, check_candidates
from memgraph_tf.errors import ConfigurationError
from tests.client import links_kit as kit
from tests.graphs import credentials_env, use_credentials
from tests.processes import signal_when

K = 3


@pytest.fixture(scope="module")
def model():
    return kit.model()


@pytest.fixture(scope="module")
def expected(model):
    """The all-pairs probability matrix computed directly (one ``sample_typed`` call for every
    node, the model's encoder and a numpy dot product), the sorted keys, and each key's
    neighbours."""
    source, nodes, edges = kit.embedded_graph()
    keys = sorted(n["id"] for n in nodes)
    nn, props, opts = kit.backend(model).sampling("src")
    sections = blob.unpack(source.sample_typed(keys, nn, props, opts))
    z = np.asarray(model.source_encoder.encode(sections, training=False), np.float64)
    logits = float(model.scale.numpy()) * z @ z.T + float(model.bias.numpy())
    probs = 1.0 / (1.0 + np.exp(-logits))
    neighbours = collections.defaultdict(set)
    for a, b in edges:
        neighbours[nodes[a]["id"]].add(nodes[b]["id"])
        neighbours[nodes[b]["id"]].add(nodes[a]["id"])
    return probs, keys, neighbours


def _top_k(expected, sources=None):
    probs, keys, neighbours = expected
    out = {}
    for i, s in enumerate(keys):
        if sources is not None and s not in sources:
            continue
        ranked = sorted(
            (-probs[i, j], t) for j, t in enumerate(keys) if t != s and t not in neighbours[s]
        )
        out[s] = {t for _, t in ranked[:K]}
    return out


def _table(source, **kw):
    return LinkTable(source, LinkSelection(kit.LABEL, kit.LABEL, 1, id_property="id", **kw))


def _by_source(links):
    out = collections.defaultdict(set)
    for s, t, _, _ in links:
        out[s].add(t)
    return dict(out)


def _once_each(links):
    counts = collections.Counter((s, t) for s, t, _, _ in links)
    return max(counts.values()) == 1


@pytest.fixture(scope="module")
def full_run(model):
    """One uninterrupted top-k run on a fresh embedded graph: (source, summary, links)."""
    source, _, _ = kit.embedded_graph()
    summary = score_links(source, kit.backend(model), k=K, relationship_type=kit.REL, batch_size=16)
    return source, summary, _table(source).read_links()


def test_top_k_writes_the_k_best_non_neighbours_with_the_pair_models_scores(
    model, expected, full_run
):
    source, summary, links = full_run
    assert summary.sources == 90 and summary.links == 90 * K and summary.pairs == 90 * 90
    assert len(links) == 90 * K and _once_each(links)
    assert _by_source(links) == _top_k(expected)
    assert {v for *_, v in links} == {1}
    probs, keys, _ = expected
    at = {k: i for i, k in enumerate(keys)}
    got = np.array([p for _, _, p, _ in links])
    assert got == pytest.approx([probs[at[s], at[t]] for s, t, _, _ in links], abs=1e-5)
    # the served / in-process pair score over sample_pairs blobs (the pair's own relationships
    # removed: none here, the candidates are non-neighbours) with the same seed
    pairs = np.array([(s, t) for s, t, _, _ in links[::7]])
    served = predict_links(model, source, pairs, options={**kit.OPTIONS, "seed": kit.SEED})
    assert got[::7] == pytest.approx(served, abs=1e-5)
    # every source carries the marker; a rerun scores nothing and writes nothing
    marker = _table(source).marker
    assert all(source.graph.get_property(i, marker) == 1 for i in source.graph.nodes(kit.LABEL))
    again = score_links(source, kit.backend(model), k=K, relationship_type=kit.REL)
    assert (again.sources, again.links, again.up_to_date) == (0, 0, 90)
    assert _table(source).read_links() == links


def test_overwrite_and_a_repeated_batch_write_no_relationship_twice(model, full_run):
    source, _, links = full_run
    again = score_links(source, kit.backend(model), k=K, relationship_type=kit.REL, overwrite=True)
    assert again.sources == 90 and again.links == 90 * K
    table = _table(source)
    table.write([(s, t, 0.5) for s, t, _, _ in links[:5]])  # a retried batch
    after = table.read_links()
    assert len(after) == len(links) and _once_each(after)
    assert [p for *_, p, _ in after[:5]] == [0.5] * 5


def test_given_pairs_are_scored_once_each_with_the_pair_models_scores(model):
    source, nodes, _ = kit.embedded_graph()
    keys = [n["id"] for n in nodes]
    pairs = np.array(
        [(keys[0], keys[5]), (keys[0], keys[9]), (keys[3], keys[5]), (keys[0], keys[5])]
    )
    summary = score_links(source, kit.backend(model), pairs=pairs)
    links = _table(source).read_links()
    assert summary.sources == 2 and summary.links == 3 and len(links) == 3 and _once_each(links)
    want = predict_links(model, source, pairs[:3], options={**kit.OPTIONS, "seed": kit.SEED})
    got = {(s, t): p for s, t, p, _ in links}
    assert [got[tuple(p)] for p in pairs[:3].tolist()] == pytest.approx(want, abs=1e-5)


def test_shards_partition_the_sources_and_together_write_the_full_run(model, full_run):
    source, _, _ = kit.embedded_graph()
    seen = []
    for i in range(3):
        s = score_links(source, kit.backend(model), k=K, relationship_type=kit.REL, shard=f"{i}/3")
        now = _by_source(_table(source).read_links())
        fresh = set(now) - set().union(*seen) if seen else set(now)
        assert fresh and all(key % 3 == i for key in fresh) and s.sources == len(fresh)
        seen.append(fresh)
    assert sum(map(len, seen)) == 90
    links = _table(source).read_links()
    assert [(a, b) for a, b, _, _ in links] == [(a, b) for a, b, _, _ in full_run[2]]


def test_bad_input_is_refused_by_name_before_anything_is_written(model):
    source, nodes, _ = kit.embedded_graph()
    backend = kit.backend(model)
    with pytest.raises(
        ConfigurationError, match=r"source_label: the model embeds :Doc nodes .* got 'Paper'"
    ):
        LinkScorer(source, backend, k=K, source_label="Paper")
    with pytest.raises(ConfigurationError, match=r"source_label: the graph has no :Nope nodes"):
        _table(source).__class__(source, LinkSelection("Nope", kit.LABEL, 1)).check()
    with pytest.raises(
        ConfigurationError,
        match=r"relationship_type: the graph has no :CITES relationship between :Doc and :Doc",
    ):
        score_links(source, backend, k=K, relationship_type="CITES")
    with pytest.raises(
        ConfigurationError, match=r"candidates: target_id 1: no :Doc node with id 1"
    ):
        score_links(source, backend, pairs=[[nodes[0]["id"], 1]])
    with pytest.raises(ConfigurationError, match=r"query: the embedded graph runs no Cypher"):
        score_links(source, backend, query="MATCH (a) RETURN a")
    with pytest.raises(ConfigurationError, match=r"candidates: expected exactly one of k, pairs"):
        LinkScorer(source, backend, k=K, pairs=[[1, 2]])
    assert _table(source).read_links() == []
    with pytest.raises(
        ConfigurationError,
        match=r"candidates query: expected the columns source_id, target_id, got s, t",
    ):
        check_candidates([{"s": 1, "t": 2}])
    with pytest.raises(
        ConfigurationError,
        match=r"candidates query: row 1: target_id: expected an integer node id, got str '7'",
    ):
        check_candidates([{"source_id": 1, "target_id": 2}, {"source_id": 1, "target_id": "7"}])


# ---------------------------------------------------------------------- the CLI with a bundle
@pytest.fixture(scope="module")
def bundle(tmp_path_factory, model):
    """The model exported as a link bundle decoding with the C++ op, version 3, with the kit's
    sampling options. The CLI's use of a bundle does not depend on the decoder, and an op-free
    export and its first calls cost tens of seconds on a loaded machine (the op-free link bundle's
    signatures are checked against the in-process scores in tests/serving/test_link_bundles.py)."""
    from memgraph_tf.serving.export_links import export_link_bundle

    base = tmp_path_factory.mktemp("link-bundles")
    options = {**kit.OPTIONS, "seed": kit.SEED}
    export_link_bundle(model, base, "links", 3, decoder="op", sample_options=options, warmup=False)
    return base / "links"


def test_the_cli_scores_with_a_link_bundle_as_with_the_model_in_memory(
    monkeypatch, capsys, bundle, full_run
):
    from memgraph_tf import cli
    from memgraph_tf.client import sources

    source, _, _ = kit.embedded_graph()
    monkeypatch.setattr(sources, "open_graph", lambda uri, **options: source)
    args = ["score-links", "--graph", "embedded:test", "--top-k", str(K)]
    args += ["--relationship-type", kit.REL, "--batch-size", "32"]
    code = cli.main([*args, "--model", str(bundle)])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert out.out.startswith(
        f"scored 8100 pair(s) of 90 source node(s), wrote {90 * K} :PREDICTED_LINK link(s), "
        f"already up to date 0 source(s) (links version 3; "
    )
    links = LinkTable(source, LinkSelection(kit.LABEL, kit.LABEL, 3, "id")).read_links()
    want = full_run[2]
    assert [(s, t) for s, t, _, _ in links] == [(s, t) for s, t, _, _ in want]
    assert [p for *_, p, _ in links] == pytest.approx([p for *_, p, _ in want], abs=1e-5)
    assert {v for *_, v in links} == {3}
    code = cli.main([*args, "--model", str(bundle / "missing")])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith(
        "memgraph-tf score-links: error: model: expected a bundle directory"
    )


# ------------------------------------------------------------------------------- over real Bolt
@pytest.fixture(scope="module")
def bolt_docs(bolt_source):
    kit.write_bolt_graph(bolt_source)
    yield bolt_source
    bolt_source.write(f"MATCH (n:{kit.LABEL}) DETACH DELETE n")  # the session's database is shared


def _cli_env(server):
    return {
        **os.environ,
        **credentials_env(server),
        "TF_CPP_MIN_LOG_LEVEL": "3",
    }


@pytest.mark.arcadedb
def test_a_candidates_query_over_bolt_writes_its_pairs_and_bad_queries_exit_2_by_name(
    monkeypatch, capsys, arcadedb_server, bolt_docs, model, full_run
):
    from memgraph_tf import cli
    from memgraph_tf.batch import link_scoring

    monkeypatch.setattr(link_scoring, "backend_from_args", lambda args: kit.backend(model))
    use_credentials(monkeypatch, arcadedb_server)
    base = ["score-links", "--graph", arcadedb_server.uri, "--model", "unused"]
    query = (
        f"MATCH (s:{kit.LABEL})-[:{kit.REL}]->(m:{kit.LABEL})-[:{kit.REL}]->(t:{kit.LABEL}) "
        f"WHERE s.id < $below AND s <> t RETURN DISTINCT s.id AS source_id, t.id AS target_id"
    )
    code = cli.main([*base, "--candidates", query, "--param", "below=-150", "--link-type", "MAYBE"])
    out = capsys.readouterr()
    assert code == 0, out.err
    want = {(r["source_id"], r["target_id"]) for r in bolt_docs.read(query, {"below": -150})}
    table = LinkTable(bolt_docs, LinkSelection(kit.LABEL, kit.LABEL, 1, "id", link_type="MAYBE"))
    links = table.read_links()
    assert {(s, t) for s, t, _, _ in links} == want and len(links) == len(want) > 0
    assert out.out.startswith(f"scored {len(want)} pair(s) of ")
    # the embedded graph's scores for the same pairs
    embedded, _, _ = kit.embedded_graph()
    score_links(embedded, kit.backend(model), pairs=sorted(want), link_type="MAYBE")
    mirror = {(s, t): p for s, t, p, _ in LinkTable(embedded, table.selection).read_links()}
    assert [p for *_, p, _ in links] == pytest.approx(
        [mirror[s, t] for s, t, _, _ in links], abs=1e-5
    )
    for candidates, message in (
        (
            f"MATCH (s:{kit.LABEL}) RETURN s.id AS a, s.id AS b LIMIT 2",
            "expected the columns source_id, target_id, got a, b (RETURN s.id AS source_id, "
            "t.id AS target_id)",
        ),
        (
            f"MATCH (s:{kit.LABEL}) RETURN s.id AS source_id, 'x' AS target_id LIMIT 1",
            "row 0: target_id: expected an integer node id, got str 'x'",
        ),
    ):
        code = cli.main([*base, "--candidates", candidates])
        err = capsys.readouterr().err
        assert (
            code == 2
            and err.strip() == f"memgraph-tf score-links: error: candidates query: {message}"
        )
    code = cli.main([*base, "--top-k", "2", "--relationship-type", "NOPE"])
    err = capsys.readouterr().err
    assert code == 2 and "relationship_type: the graph has no :NOPE relationship" in err


@pytest.mark.arcadedb
def test_sigkill_midway_then_rerun_writes_exactly_the_uninterrupted_links_none_twice(
    monkeypatch, capsys, tmp_path, arcadedb_server, bolt_docs, model, full_run
):
    from memgraph_tf import cli
    from memgraph_tf.batch import link_scoring as batch_links

    weights = tmp_path / "link.weights.h5"
    model.save_weights(weights)
    command = [sys.executable, "-m", "tests.client.links_kit", str(weights), "--", "score-links"]
    command += ["--graph", arcadedb_server.uri, "--model", "unused", "--top-k", str(K)]
    command += ["--relationship-type", kit.REL]
    table = LinkTable(bolt_docs, LinkSelection(kit.LABEL, kit.LABEL, 1, "id"))
    bolt_docs.write(f"MATCH (:{kit.LABEL})-[l:PREDICTED_LINK]->() DELETE l")
    bolt_docs.write(f"MATCH (n:{kit.LABEL}) REMOVE n.{table.marker}")

    def done() -> int:
        rows = bolt_docs.read(
            f"MATCH (n:{kit.LABEL}) WHERE n.{table.marker} = 1 RETURN count(n) AS c"
        )
        return rows[0]["c"]

    env = _cli_env(arcadedb_server)
    killed = signal_when(
        [*command, "--batch-size", "6"], env, lambda: done() >= 12, signal.SIGKILL, "page"
    )
    assert killed.returncode == -signal.SIGKILL
    at_kill = done()
    assert 12 <= at_kill < 90 and at_kill % 6 == 0, (
        f"killed too late to test a resume: {at_kill} of 90 done"
    )
    # the rerun in this process (a new process adds only start-up time), with the same model:
    # it resumes from what the graph holds
    monkeypatch.setattr(batch_links, "backend_from_args", lambda args: kit.backend(model))
    use_credentials(monkeypatch, arcadedb_server)
    capsys.readouterr()
    code = cli.main([*command[command.index("--") + 1 :], "--batch-size", "30"])
    rerun = capsys.readouterr()
    assert code == 0, rerun.err
    assert f"already up to date {at_kill} source(s)" in rerun.out
    links = table.read_links()
    assert _once_each(links) and len(links) == 90 * K
    want = full_run[2]
    assert [(s, t) for s, t, _, _ in links] == [(s, t) for s, t, _, _ in want]
    assert [p for *_, p, _ in links] == pytest.approx([p for *_, p, _ in want], abs=1e-5)
