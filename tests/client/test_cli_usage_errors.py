"""``memgraph-tf classify`` and ``score-links``: a bad command line, label, predicate or query is
a usage error -- exit 2 and one ``error:`` line naming what is at fault, nothing written -- on
every graph kind: the embedded graph and real Bolt (ArcadeDB). The graph and bundle of the batch
tests (``tests.client.classify_kit``); the link graph and model of ``tests.client.links_kit``."""

from __future__ import annotations

import re

import pytest

from memgraph_tf.errors import EXIT_USAGE
from tests.client import classify_kit
from tests.client import links_kit as lkit
from tests.graphs import predictions, use_credentials

PROP = "usage_check"  # the write property: no other test writes it

# (case, arguments, the error line's pattern, the graph kinds it applies to)
CLASSIFY_CASES = [
    (
        "unknown label",
        ["--label", "Nope"],
        r"error: label: the graph has no :Nope nodes \(its labels: .*:BatchItem",
        ("embedded", "bolt"),
    ),
    ("bad shard", ["--shard", "3/3"], r"error: shard: expected i/N", ("embedded", "bolt")),
    (
        "unparsable where",
        ["--where", "n.id >> 3"],
        r"error: where: the server refused the predicate 'n\.id >> 3'",
        ("bolt",),
    ),
    (
        "where without Cypher",
        ["--where", "n.id > 0"],
        r"error: where: the embedded graph runs no Cypher",
        ("embedded",),
    ),
]
LINK_CASES = [
    (
        "unknown source label",
        ["--top-k", "2", "--source-label", "Nope"],
        r"error: source_label: the model embeds :Doc nodes",
        ("embedded", "bolt"),
    ),
    (
        "unknown relationship type",
        ["--top-k", "2", "--relationship-type", "NOPE"],
        r"error: relationship_type: the graph has no :NOPE relationship",
        ("embedded", "bolt"),
    ),
    (
        "unparsable candidates query",
        ["--candidates", "MATCH (s:Doc RETURN s.id AS source_id"],
        r"error: candidates query: the server refused the query",
        ("bolt",),
    ),
]


def _run(monkeypatch, capsys, source, argv):
    """``argv`` run by the CLI over ``source``: an embedded source, or the ArcadeDB server whose
    URI the command opens with the credentials from the environment."""
    from memgraph_tf import cli
    from memgraph_tf.client import sources

    if isinstance(source, sources.EmbeddedSource):
        monkeypatch.setattr(sources, "open_graph", lambda uri, **options: source)
        graph = "embedded:test"
    else:
        use_credentials(monkeypatch, source)
        graph = source.uri
    code = cli.main([argv[0], "--graph", graph, *argv[1:]])
    out = capsys.readouterr()
    command = argv[0]
    lines = [line for line in out.err.splitlines() if line.startswith(f"memgraph-tf {command}:")]
    return code, lines, out


def _cases(cases, kind):
    return [
        pytest.param(args, pattern, id=case)
        for case, args, pattern, kinds in cases
        if kind in kinds
    ]


def _classify(monkeypatch, capsys, source, backend, args):
    from memgraph_tf import cli

    # a bundle without options.label selects every label: --label alone picks the nodes
    monkeypatch.setattr(cli, "_classify_backend", lambda parsed: classify_kit.Unlabelled(backend))
    argv = ["classify", "--model", "b", "--no-progress", "--write-property", PROP]
    return _run(monkeypatch, capsys, source, [*argv, *args])


def _score_links(monkeypatch, capsys, source, model, args):
    from memgraph_tf.batch import link_scoring

    monkeypatch.setattr(link_scoring, "backend_from_args", lambda parsed: lkit.backend(model))
    argv = ["score-links", "--model", "b", "--link-type", "USAGE_CHECK"]
    return _run(monkeypatch, capsys, source, [*argv, *args])


def _assert_usage_error(code, lines, out, pattern):
    assert code == EXIT_USAGE, out.err
    assert len(lines) == 1 and re.search(pattern, lines[0]), out.err
    assert "Traceback" not in out.err and out.out == ""


@pytest.fixture(scope="module")
def link_model():
    return lkit.model()


@pytest.mark.parametrize(("args", "pattern"), _cases(CLASSIFY_CASES, "embedded"))
def test_classify_usage_errors_embedded(monkeypatch, capsys, backend, args, pattern):
    source = classify_kit.embedded_source()
    _assert_usage_error(*_classify(monkeypatch, capsys, source, backend, args), pattern)
    assert predictions(source, PROP) == {}


@pytest.mark.arcadedb
@pytest.mark.parametrize(("args", "pattern"), _cases(CLASSIFY_CASES, "bolt"))
def test_classify_usage_errors_bolt(
    monkeypatch, capsys, arcadedb_server, bolt_graph, backend, args, pattern
):
    server = arcadedb_server
    _assert_usage_error(*_classify(monkeypatch, capsys, server, backend, args), pattern)
    assert classify_kit.bolt_predictions(bolt_graph, PROP) == {}


def _links_written(source) -> int:
    rows = source.read("MATCH ()-[r:USAGE_CHECK]->() RETURN count(r) AS c")
    return rows[0]["c"]


@pytest.mark.parametrize(("args", "pattern"), _cases(LINK_CASES, "embedded"))
def test_score_links_usage_errors_embedded(monkeypatch, capsys, link_model, args, pattern):
    source, _, _ = lkit.embedded_graph()
    _assert_usage_error(*_score_links(monkeypatch, capsys, source, link_model, args), pattern)


@pytest.mark.arcadedb
@pytest.mark.parametrize(("args", "pattern"), _cases(LINK_CASES, "bolt"))
def test_score_links_usage_errors_bolt(
    monkeypatch, capsys, arcadedb_server, bolt_source, link_model, args, pattern
):
    lkit.write_bolt_graph(bolt_source)
    try:
        _assert_usage_error(
            *_score_links(monkeypatch, capsys, arcadedb_server, link_model, args), pattern
        )
        assert _links_written(bolt_source) == 0
    finally:
        bolt_source.write(f"MATCH (n:{lkit.LABEL}) DETACH DELETE n")
