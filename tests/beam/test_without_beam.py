"""What users without the ``beam`` extra get: the command-line hooks load without Apache Beam and
say how to install it; the transforms raise ImportError naming the extra. Runs in any venv (Beam is
hidden from the import system where it is installed)."""

from __future__ import annotations

import argparse
import sys

import pytest


@pytest.fixture
def no_beam(monkeypatch):
    """``import apache_beam`` raises ImportError, as in a venv without the extra."""
    for name in list(sys.modules):
        if name == "apache_beam" or name.startswith("apache_beam."):
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "apache_beam", None)


def test_runner_arguments_load_without_beam_and_classify_says_how_to_install_it(no_beam, capsys):
    from memgraph_tf.beam import add_runner_arguments, run_classify_pipeline

    parser = argparse.ArgumentParser()
    parser.add_argument("--graph")
    add_runner_arguments(parser)
    args = parser.parse_args(
        [
            "--graph",
            "bolt://db:7687",
            "--runner",
            "FlinkRunner",
            "--",
            "--flink_master=localhost:8081",
        ]
    )
    assert (args.runner, args.num_workers, args.pipeline_args) == (
        "FlinkRunner",
        1,
        ["--flink_master=localhost:8081"],
    )
    assert run_classify_pipeline(args) == 2
    err = capsys.readouterr().err
    assert err == (
        "memgraph-tf classify: error: Apache Beam is not installed: pip install "
        "'memgraph-tf[beam]' "
        "(the extra pins a Beam release that installs beside this TensorFlow)\n"
    )


def test_transforms_need_beam(no_beam):
    import memgraph_tf.beam as mgbeam

    with pytest.raises(ImportError, match=r"pip install 'memgraph-tf\[beam\]'"):
        mgbeam.ClassifyNodes  # noqa: B018 -- the attribute access is what raises
    with pytest.raises(
        AttributeError, match=r"module 'memgraph_tf.beam' has no attribute 'Nothing'"
    ):
        mgbeam.Nothing  # noqa: B018 -- the attribute access is what raises


def test_the_classify_command_hands_runner_to_beam_and_refuses_stray_arguments(no_beam, capsys):
    from memgraph_tf import cli

    base = [
        "classify",
        "--graph",
        "bolt://127.0.0.1:1",
        "--model",
        "no-such-bundle",
        "--no-progress",
    ]
    assert cli.main(base + ["--runner", "DirectRunner"]) == 2
    assert capsys.readouterr().err == (
        "memgraph-tf classify: error: Apache Beam is not installed: pip install "
        "'memgraph-tf[beam]' "
        "(the extra pins a Beam release that installs beside this TensorFlow)\n"
    )
    assert cli.main(base + ["stray"]) == 2
    assert capsys.readouterr().err == (
        "memgraph-tf classify: error: unexpected arguments ['stray'] (Beam pipeline options after "
        "-- need "
        "--runner)\n"
    )
