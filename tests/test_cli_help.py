"""``memgraph-tf --help`` and every subcommand's ``--help`` exit 0 with their usage: the
subcommands are read from the parser itself, so one added later is covered too."""

from __future__ import annotations

import argparse

import pytest

from memgraph_tf import cli


def _subcommands() -> list[str]:
    parser = cli.build_parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return sorted(sub.choices)


def test_the_parser_has_the_documented_subcommands():
    # the discovery below must see real subcommands, or the parametrised test checks nothing
    assert {"build-ops", "install-modules", "serve", "classify", "score-links", "demo"} <= set(
        _subcommands()
    )


@pytest.mark.parametrize("command", [None, *_subcommands()])
def test_help_exits_0_with_the_usage(command, capsys):
    argv = ["--help"] if command is None else [command, "--help"]
    with pytest.raises(SystemExit) as info:
        cli.main(argv)
    assert info.value.code == 0
    out = capsys.readouterr().out
    prog = "memgraph-tf" if command is None else f"memgraph-tf {command}"
    assert out.startswith(f"usage: {prog}"), out[:200]
    assert "--help" in out
