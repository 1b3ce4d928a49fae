"""``memgraph-tf classify``: exit codes and one-line errors, the summary, and a real subprocess
interrupted by SIGINT and killed by SIGKILL midway over real Bolt (ArcadeDB), then rerun to the end.

The graph, bundle and reference run are those of test_batch.py (the fixtures in conftest.py, the
graph in ``tests.client.classify_kit`` and ``tests.graphs``)."""

from __future__ import annotations

import re
import signal
import subprocess

import pytest

from memgraph_tf.batch import BundleBackend, ModelBackend
from memgraph_tf.client.node_tables import property_names
from tests.client import classify_kit as kit
from tests.client.classify_kit import LABEL, bolt_predictions, embedded_source
from tests.graphs import (
    CLASSES,
    N,
    assert_same,
    node_id,
    predictions,
    use_credentials,
)
from tests.processes import signal_when


# ------------------------------------------------------------------------------------ the CLI
def _cli(monkeypatch, capsys, source, *args):
    from memgraph_tf import cli
    from memgraph_tf.client import sources

    monkeypatch.setattr(sources, "open_graph", lambda uri, **options: source)
    code = cli.main(["classify", "--graph", "embedded:test", "--no-progress", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_cli_classifies_and_prints_a_summary(monkeypatch, capsys, op_bundle_base, reference):
    """The op twin of the op-free bundle ``reference`` was classified with: the command's run and
    summary do not depend on the decoder, and its scores equal the op-free bundle's."""
    source = embedded_source()
    code, out, err = _cli(
        monkeypatch,
        capsys,
        source,
        "--model",
        str(op_bundle_base),
        "--batch-size",
        "16",
        "--write-property",
        "cli",
    )
    assert code == 0, err
    assert out.startswith(
        f"classified {N} nodes, skipped 0 invalid, failed 0, already up to date 0 (shard 0/1)"
    )
    assert "model BatchSageOp version 1 -> cli, cli_score, cli_version" in out
    assert_same(predictions(source, "cli"), reference)


def test_cli_over_rest_and_grpc(monkeypatch, capsys, op_bundle_base, reference):
    """Through a local server of the op twin (the transports do not depend on the decoder)."""
    from memgraph_tf.serving.grpc_server import start_grpc_server
    from memgraph_tf.serving.model_server import ModelServer
    from memgraph_tf.serving.server import start_server

    source = embedded_source()
    server = ModelServer(op_bundle_base, "BatchSageOp")
    with start_server(server) as rest, start_grpc_server(server) as grpc:
        for prop, args in (
            ("rest", ["--serving", rest.url]),
            ("grpc", ["--serving-grpc", grpc.target]),
        ):
            code, out, err = _cli(
                monkeypatch,
                capsys,
                source,
                *args,
                "--model-name",
                "BatchSageOp",
                "--write-property",
                prop,
            )
            assert code == 0, err
            assert f"model BatchSageOp version 1 -> {prop}, {prop}_score, {prop}_version" in out
            assert_same(predictions(source, prop), reference)
        code, out, err = _cli(
            monkeypatch, capsys, source, "--serving", rest.url, "--model-name", "Nope"
        )
        assert code == 2 and re.search(
            r"^memgraph-tf classify: error: .*Nope", err.splitlines()[-1]
        ), err


class _Shared(ModelBackend):
    """The module's loaded bundle for CLI runs that test something else than loading (the CLI
    closes its model; this one stays open)."""

    def __init__(self, inner: BundleBackend):
        self.inner, self.config, self.version = inner, inner.config, inner.version

    def classify(self, blobs):
        return self.inner.classify(blobs)


def test_cli_errors_are_one_line_with_exit_codes(
    monkeypatch, capsys, bundle_base, backend, tmp_path
):
    from memgraph_tf import cli

    real = cli._classify_backend
    monkeypatch.setattr(
        cli,
        "_classify_backend",
        lambda args: _Shared(backend) if args.model == str(bundle_base) else real(args),
    )
    source = embedded_source(bad=(20,))
    cases = [
        (
            ["--model", str(tmp_path / "none")],
            2,
            r"^memgraph-tf classify: error: model: expected a bundle directory",
        ),
        (
            ["--model", str(bundle_base), "--where", "n.id > 0"],
            2,
            r"^memgraph-tf classify: error: where: the embedded graph runs no Cypher",
        ),
        (
            ["--model", str(bundle_base), "--shard", "3/3"],
            2,
            r"^memgraph-tf classify: error: shard: expected i/N",
        ),
        (
            ["--serving", "http://127.0.0.1:9"],
            2,
            r"^memgraph-tf classify: error: --model-name: required",
        ),
        (
            ["--model", str(bundle_base), "--batch-size", "8"],
            1,
            rf"^memgraph-tf classify: stopped at node {node_id(20)}: .*features.*Nothing of its "
            r"batch was written; 16 node\(s\) classified before it \(rerun with --skip-invalid",
        ),
    ]
    for args, want_code, message in cases:
        code, out, err = _cli(monkeypatch, capsys, source, *args)
        lines = [line for line in err.splitlines() if line.startswith("memgraph-tf classify:")]
        assert code == want_code, err
        assert len(lines) == 1 and re.search(message, lines[0]), err
        assert "Traceback" not in err and out == ""
    code, out, err = _cli(
        monkeypatch, capsys, source, "--model", str(bundle_base), "--skip-invalid"
    )
    assert code == 0 and f"skipped node {node_id(20)}: " in out


@pytest.mark.arcadedb
def test_sigkill_midway_then_rerun_completes_with_the_uninterrupted_predictions(
    monkeypatch, capsys, arcadedb_server, bolt_graph, op_bundle_base, reference
):
    from memgraph_tf import cli

    prop = "killed"
    cls, _, version = property_names(prop)
    command, env = kit.killable_run("classify", arcadedb_server, op_bundle_base, prop)

    def done() -> int:
        return bolt_graph.read(f"MATCH (n:{LABEL}) WHERE n.`{version}` = 1 RETURN count(n) AS c")[
            0
        ]["c"]

    def interrupt(sig: int, after: int) -> subprocess.CompletedProcess:
        """Starts the command, sends ``sig`` once ``after`` nodes carry version 1, waits for the
        end."""
        return signal_when(command, env, lambda: done() >= after, sig, "batch")

    # Ctrl-C: the batch being written is finished, one line says how to resume, exit code 130
    stopped = interrupt(signal.SIGINT, 2)
    assert stopped.returncode == 130, stopped.stderr
    assert (
        stopped.stderr.strip()
        .splitlines()[-1]
        .startswith("memgraph-tf classify: interrupted after classifying ")
    )
    assert "Traceback" not in stopped.stderr
    at_int = done()
    assert at_int % 2 == 0 and at_int < N

    killed = interrupt(signal.SIGKILL, at_int + 6)
    assert killed.returncode == -signal.SIGKILL
    at_kill = done()
    assert at_int + 6 <= at_kill < N, f"killed too late to test a resume: {at_kill} of {N} written"
    assert at_kill % 2 == 0  # whole batches only
    partial = bolt_predictions(bolt_graph, prop)
    assert len(partial) == at_kill  # no node half-written
    assert all(c in CLASSES and isinstance(s, float) and v == 1 for c, s, v in partial.values())

    # the rerun in this process (a new process adds only start-up time): it resumes from what
    # the graph holds
    use_credentials(monkeypatch, arcadedb_server)
    capsys.readouterr()
    code = cli.main(command[3:])
    rerun = capsys.readouterr()
    assert code == 0, rerun.err
    assert (
        f"classified {N - at_kill} nodes, skipped 0 invalid, failed 0, already up to date {at_kill}"
        in rerun.out
    )
    rows = bolt_graph.read(
        f"MATCH (n:{LABEL}) RETURN n.id AS id, n.`{cls}` AS c, n.`{version}` AS v"
    )
    assert len(rows) == N and len({r["id"] for r in rows}) == N
    assert all(r["v"] == 1 for r in rows)
    assert_same(bolt_predictions(bolt_graph, prop), reference)


@pytest.mark.arcadedb
def test_a_gap_in_the_keyset_pages_exits_1_naming_it_and_a_rerun_completes(
    monkeypatch, capsys, arcadedb_server, bolt_source, paging_graph, backend
):
    from memgraph_tf import cli
    from memgraph_tf.client.node_tables import NodeTable

    monkeypatch.setattr(cli, "_classify_backend", lambda args: kit.Unlabelled(backend))
    use_credentials(monkeypatch, arcadedb_server)
    args = ["classify", "--graph", arcadedb_server.uri, "--model", "unused", "--no-progress"]
    args += ["--where", kit.PAGING_WHERE, "--batch-size", "32", "--write-property", "cli"]
    with monkeypatch.context() as patch:
        patch.setattr(NodeTable, "page", kit.stops_after_one_page)
        code = cli.main(args)  # before: exit 0 after the first page
    out = capsys.readouterr()
    lines = [line for line in out.err.splitlines() if line.startswith("memgraph-tf classify:")]
    assert code == 1 and out.out == "" and "Traceback" not in out.err, out.err
    assert len(lines) == 1 and lines[0] == (
        f"memgraph-tf classify: failed: selected {N} node(s) but classified 32, 0 already up to "
        f"date, 0 invalid: {N - 32} node(s) were never read (the server's keyset paging stopped "
        f"early after key {paging_graph[31]}: {N - 32} selected node(s) have a greater key) (32 "
        f"node(s) classified and written before; run the same command again to resume)"
    ), out.err
    assert cli.main(args) == 0, capsys.readouterr().err  # the rerun reads on to the end
    assert capsys.readouterr().out.startswith(
        f"classified {N - 32} nodes, skipped 0 invalid, failed 0, already up to date 32"
    )
    assert kit.paging_written(bolt_source, "cli") == N
