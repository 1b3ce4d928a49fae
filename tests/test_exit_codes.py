"""The one exit-code table (``memgraph_tf.errors.EXIT_CODES``): every class it names exists, and
``exit_code_for`` takes the most specific entry of an exception's class hierarchy."""

from __future__ import annotations

import builtins
import importlib
import re

import pytest

from memgraph_tf import errors
from memgraph_tf.errors import (
    EXIT_CODES,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    exit_code_for,
)


def _resolve(dotted: str) -> type:
    module, _, qualname = dotted.rpartition(".")
    owner = builtins if module == "builtins" else importlib.import_module(module)
    return getattr(owner, qualname)


@pytest.mark.parametrize("dotted", sorted(EXIT_CODES))
def test_every_class_the_table_names_exists(dotted: str) -> None:
    cls = _resolve(dotted)
    assert isinstance(cls, type) and issubclass(cls, BaseException)
    assert f"{cls.__module__}.{cls.__qualname__}" == dotted  # not an alias of a class elsewhere


def test_the_most_specific_entry_wins() -> None:
    from memgraph_tf.errors import (
        AuthenticationError,
        BundleError,
        ConfigurationError,
        GraphDataError,
        NotFoundError,
        ServerUnavailable,
    )

    # ConfigurationError and GraphDataError are both ValueErrors: only the first is a usage error
    assert exit_code_for(ConfigurationError("batch_size: expected >= 1")) == EXIT_USAGE
    assert exit_code_for(GraphDataError("node 7: no property 'features'")) == EXIT_FAILED
    assert exit_code_for(AuthenticationError("refused")) == EXIT_USAGE
    assert exit_code_for(ServerUnavailable("no answer")) == EXIT_FAILED  # a ConnectionError
    assert exit_code_for(NotFoundError("no model 'x'", status=404)) == EXIT_USAGE
    assert exit_code_for(BundleError("bad config")) == EXIT_USAGE
    assert exit_code_for(FileNotFoundError(2, "no such file")) == EXIT_USAGE
    assert exit_code_for(ConnectionRefusedError(111, "refused")) == EXIT_FAILED
    assert exit_code_for(ValueError("--shard: expected K/N")) == EXIT_USAGE
    assert exit_code_for(KeyboardInterrupt()) == EXIT_INTERRUPTED


def test_an_error_the_table_does_not_know_is_a_failed_run() -> None:
    assert exit_code_for(RuntimeError("a bug")) == EXIT_FAILED
    assert exit_code_for(errors.MemgraphTfError("anything of ours")) == EXIT_FAILED


# -- the CLI and Beam exit alike --------------------------------------------------------------


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize(
    ("case", "args", "code", "message"),
    [
        ("no bundle", ["--model", "{tmp}/missing"], EXIT_USAGE, r"missing"),
        (
            "model name with a bundle",
            ["--model", "{tmp}", "--model-name", "M"],
            EXIT_USAGE,
            r"--model-name / --model-version: only with --serving or --serving-grpc",
        ),
        (
            "no server",
            ["--serving", "http://127.0.0.1:{port}", "--model-name", "M"],
            EXIT_FAILED,
            r"127\.0\.0\.1",
        ),
    ],
)
def test_classify_exits_alike_in_one_process_and_on_beam(
    case, args, code, message, tmp_path, capsys
) -> None:
    """The same bad command gives the same exit code with and without ``--runner``: both take it
    from the one table."""
    pytest.importorskip("apache_beam")
    from memgraph_tf import cli

    port = _free_port()
    argv = [a.format(tmp=tmp_path, port=port) for a in args]
    common = ["classify", "--graph", "embedded:cora", "--no-progress", *argv]
    got = {}
    for mode, extra in (("one process", []), ("beam", ["--runner", "DirectRunner"])):
        got[mode] = cli.main([*common, *extra])
        err = capsys.readouterr().err
        assert err.startswith("memgraph-tf classify: "), (mode, err)
        assert len(err.strip().splitlines()) == 1, (mode, err)
        assert re.search(message, err), (mode, err)
    assert got == {"one process": code, "beam": code}, case
