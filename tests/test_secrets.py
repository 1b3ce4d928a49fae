"""A password never appears in what a command writes, logs or answers: one is planted in every
place a user can give one -- a URI's userinfo (``--graph``, ``--serving``, ``--serving-grpc``,
``--upstream``), ``MEMGRAPH_TF_PASSWORD`` -- and every command is run into its failure paths
(``serve``, the gateway ``serve --upstream``, ``classify``, ``score-links``, ``demo``,
``install-triggers``, ``refresh``), with ``-v`` so that debug logs and tracebacks are searched
too. Over real Bolt (ArcadeDB) the server refuses a wrong password, and that refusal is searched
as well."""

from __future__ import annotations

import logging
import pathlib
import secrets

import pytest

from memgraph_tf import cli
from memgraph_tf.testing.arcadedb import free_port

PASSWORD = f"pw-{secrets.token_hex(8)}"
USER = "someone"


COMMANDS = ["serve", "classify", "score-links", "demo", "install-triggers", "refresh"]


def _commands(tmp_path, graph: str) -> dict[str, list[str]]:
    """Each command run against ``graph`` (a URI that cannot be used), into its failure path."""
    missing = str(tmp_path / "missing")
    return {
        "serve": ["serve", missing, "--graph", graph],
        "classify": ["classify", "--graph", graph, "--model", missing, "--no-progress"],
        "score-links": ["score-links", "--graph", graph, "--model", missing, "--top-k", "1"],
        "demo": ["demo", "--graph", graph, "--out", str(tmp_path / "demo"), "--no-progress"],
        "install-triggers": ["install-triggers", "--graph", graph],
        "refresh": ["refresh", "--graph", graph, "--model", missing, "--no-progress"],
    }


def _run(argv, capsys, caplog) -> str:
    """Everything ``memgraph-tf -v ARGV`` shows: its exit, stdout, stderr and every log record
    (message and traceback)."""
    formatter = logging.Formatter("%(levelname)s %(name)s: %(message)s")
    with caplog.at_level(logging.DEBUG):
        try:
            code = cli.main(["-v", *argv])
        except SystemExit as exc:  # argparse's own errors
            code = exc.code
    out = capsys.readouterr()
    logged = "\n".join(formatter.format(r) for r in caplog.records)
    caplog.clear()
    return f"exit {code}\n{out.out}\n{out.err}\n{logged}"


def _assert_no_password(text: str, what: str) -> None:
    assert PASSWORD not in text, f"{what}: the password is shown:\n{text}"


@pytest.mark.parametrize("command", COMMANDS)
def test_a_password_in_the_graph_uri_is_never_shown(command, tmp_path, capsys, caplog):
    graph = f"bolt://{USER}:{PASSWORD}@127.0.0.1:{free_port()}"
    text = _run(_commands(tmp_path, graph)[command], capsys, caplog)
    assert "exit 0" not in text.splitlines()[0], text
    _assert_no_password(text, command)
    assert "***@127.0.0.1" in text, text  # the URI is named, its credentials masked


@pytest.mark.parametrize("command", COMMANDS)
def test_the_password_from_the_environment_is_never_shown(
    command, tmp_path, capsys, caplog, monkeypatch
):
    monkeypatch.setenv("MEMGRAPH_TF_USER", USER)
    monkeypatch.setenv("MEMGRAPH_TF_PASSWORD", PASSWORD)
    graph = f"bolt://127.0.0.1:{free_port()}"  # nothing listens: the connection fails
    text = _run(_commands(tmp_path, graph)[command], capsys, caplog)
    assert "exit 0" not in text.splitlines()[0], text
    _assert_no_password(text, command)


@pytest.mark.parametrize(
    "argv",
    [
        [
            "classify",
            "--graph",
            "embedded:synthetic",
            "--serving",
            f"http://{USER}:{PASSWORD}@127.0.0.1:{{port}}",
            "--model-name",
            "M",
            "--no-progress",
        ],
        [
            "classify",
            "--graph",
            "embedded:synthetic",
            "--serving-grpc",
            f"{USER}:{PASSWORD}@127.0.0.1:{{port}}",
            "--model-name",
            "M",
            "--no-progress",
        ],
    ],
    ids=["classify --serving", "classify --serving-grpc"],
)
def test_a_password_in_a_model_server_address_is_never_shown(argv, capsys, caplog):
    port = free_port()
    text = _run([a.format(port=port) for a in argv], capsys, caplog)
    assert "exit 2" in text.splitlines()[0], text  # refused: TF Serving's APIs take none
    _assert_no_password(text, argv[0])
    assert f"***@127.0.0.1:{port}'" in text, text  # the address is named, credentials masked


@pytest.mark.arcadedb
@pytest.mark.parametrize("command", COMMANDS)
def test_a_wrong_password_refused_by_the_server_is_never_shown(
    command, tmp_path, capsys, caplog, monkeypatch, arcadedb_server
):
    monkeypatch.setenv("MEMGRAPH_TF_USER", arcadedb_server.user)
    monkeypatch.setenv("MEMGRAPH_TF_PASSWORD", PASSWORD)
    monkeypatch.setenv("MEMGRAPH_TF_DATABASE", arcadedb_server.database)
    text = _run(_commands(tmp_path, arcadedb_server.uri)[command], capsys, caplog)
    assert "exit 2" in text.splitlines()[0], text  # AuthenticationError: a usage error
    _assert_no_password(text, command)


def test_a_password_in_the_gateway_upstream_is_never_shown(tmp_path):
    """``serve --upstream USER:PASSWORD@HOST:PORT`` in a subprocess (were it to start serving,
    the timeout ends it): refused with exit 2, the password nowhere in its output."""
    import os
    import subprocess
    import sys

    upstream = f"{USER}:{PASSWORD}@127.0.0.1:{free_port()}"
    proc = subprocess.run(
        [sys.executable, "-m", "memgraph_tf.cli", "-v", "serve", "--upstream", upstream],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=pathlib.Path(__file__).resolve().parents[1],
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"),
    )
    text = proc.stdout + proc.stderr
    assert proc.returncode == 2, text
    assert "--upstream: expected HOST:PORT without user or password" in text
    _assert_no_password(text, "serve --upstream")
