"""``memgraph-tf serve`` and ``install-modules`` as a user runs them (subprocesses): a user error
is one line on stderr and exit code 2, never a traceback."""

from __future__ import annotations

import os
import pathlib
import re
import socket
import subprocess
import sys

import pytest

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
#: TensorFlow's own C++ log lines and our INFO logs are not the error message.
_NOISE = re.compile(r"^([IWEF]\d{4} |WARNING: All log messages|INFO |To enable the following)")


def run(*args: str, timeout_s: float = 120) -> subprocess.CompletedProcess:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    return subprocess.run(
        [sys.executable, "-m", "memgraph_tf.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout_s,
        cwd=REPO_ROOT,
        env=env,
    )


def error_lines(proc: subprocess.CompletedProcess) -> list[str]:
    return [line for line in proc.stderr.splitlines() if line and not _NOISE.match(line)]


def assert_user_error(proc: subprocess.CompletedProcess, message: str) -> None:
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert error_lines(proc) == [message], proc.stderr


# ----------------------------------------------------------------------------------- serve
def test_serve_a_missing_directory(tmp_path):
    proc = run("serve", str(tmp_path / "nope"))
    assert_user_error(
        proc, f"memgraph-tf serve: model_base_path: expected a directory, got '{tmp_path / 'nope'}'"
    )
    assert proc.stderr.count("\n") == 1  # nothing else: TensorFlow was never imported


def test_serve_a_directory_without_versions(tmp_path):
    (tmp_path / "notaversion").mkdir()
    proc = run("serve", str(tmp_path))
    assert_user_error(
        proc,
        f"memgraph-tf serve: model_base_path: expected numbered version "
        f"directories holding saved_model.pb under '{tmp_path}', found none",
    )


@pytest.mark.parametrize(
    "flag, value, message",
    [
        ("--version-label", "stable", "--version-label: expected LABEL=VERSION, got 'stable'"),
        ("--max-examples", "0", "max_examples: expected an int >= 1, got 0"),
        ("--max-json-depth", "1", "max_json_depth: expected an int from 2 to 500, got 1"),
        (
            "--request-body-timeout-s",
            "0",
            "--request-body-timeout-s: expected a number of seconds > 0, got 0.0",
        ),
        (
            "--tensorflow-inter-op-parallelism",
            "-1",
            "--tensorflow-inter-op-parallelism: expected an int >= 0 "
            "(0: TensorFlow's choice), got -1",
        ),
        ("--max-num-load-retries", "-1", "--max-num-load-retries: expected an int >= 0, got -1"),
        (
            "--load-retry-interval-micros",
            "-5",
            "--load-retry-interval-micros: expected an int >= 0, got -5",
        ),
    ],
)
def test_serve_bad_settings(tmp_path, flag, value, message):
    (tmp_path / "1").mkdir()
    (tmp_path / "1" / "saved_model.pb").write_bytes(b"")
    proc = run("serve", str(tmp_path), flag, value)
    assert_user_error(proc, f"memgraph-tf serve: {message}")


def test_tensorflow_threads_cannot_change_once_tensorflow_runs():
    """In a process where TensorFlow already ran, a different thread count is a ValueError
    naming the option (TensorFlow would ignore it); the current count is accepted."""
    import tensorflow as tf

    from memgraph_tf.serving.server import set_tensorflow_threads

    assert int(tf.reduce_sum(tf.constant([1, 2]))) == 3  # TensorFlow is running now
    current = tf.config.threading.get_inter_op_parallelism_threads()
    set_tensorflow_threads(inter_op=current)  # unchanged (0 or the count): no error
    with pytest.raises(
        ValueError,
        match=rf"--tensorflow-inter-op-parallelism {current + 3}: "
        r"TensorFlow is already running in this process",
    ):
        set_tensorflow_threads(inter_op=current + 3)
    with pytest.raises(
        ValueError,
        match=r"--tensorflow-intra-op-parallelism: expected an int "
        r">= 0 \(0: TensorFlow's choice\), got '2'",
    ):
        set_tensorflow_threads(intra_op="2")


def test_serve_a_corrupt_saved_model(tmp_path):
    (tmp_path / "1").mkdir()
    (tmp_path / "1" / "saved_model.pb").write_bytes(b"\xff\xfe not a proto")
    proc = run("serve", str(tmp_path))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    lines = error_lines(proc)
    assert len(lines) == 1 and lines[0].startswith(
        f"memgraph-tf serve: {tmp_path / '1'}: cannot load the SavedModel: "
    ), proc.stderr


def test_serve_on_a_busy_port(toy_base):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        proc = run("serve", str(toy_base), "--port", str(port))
    assert_user_error(
        proc, f"memgraph-tf serve: cannot listen on 127.0.0.1:{port}: Address already in use"
    )


def test_serve_with_a_graph_that_cannot_be_opened(toy_base, tmp_path):
    proc = run("serve", str(toy_base), "--graph", f"embedded:{tmp_path}/cora")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    lines = error_lines(proc)
    assert len(lines) == 1, proc.stderr
    assert lines[0] == (
        f"memgraph-tf serve: --graph: Planetoid 'cora': expected {tmp_path}/ind.cora.x, got no "
        f"such file"
    )


# -------------------------------------------------------------------------- install-modules
def test_install_modules_over_existing_files_with_no_overwrite(tmp_path):
    assert run("install-modules", str(tmp_path)).returncode == 0
    proc = run("install-modules", "--no-overwrite", str(tmp_path))
    assert_user_error(
        proc,
        f"memgraph-tf install-modules: FileExistsError: "
        f"{tmp_path / 'tf_features.py'}: expected no existing file "
        f"(overwrite=False), got one",
    )


def test_install_modules_into_a_file(tmp_path):
    target = tmp_path / "afile"
    target.write_text("x")
    proc = run("install-modules", str(target / "sub"))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    lines = error_lines(proc)
    assert len(lines) == 1 and lines[0].startswith(
        "memgraph-tf install-modules: NotADirectoryError: "
    ), proc.stderr


def test_install_modules_into_a_new_directory_succeeds(tmp_path):
    proc = run("install-modules", str(tmp_path / "new" / "dir"))
    assert proc.returncode == 0, proc.stderr
    assert str(tmp_path / "new" / "dir" / "tf_features.py") in proc.stdout.splitlines()


def test_load_retry_flags_reach_the_model_server(toy_base):
    """TF Serving's ``--max_num_load_retries`` and ``--load_retry_interval_micros``
    (``model_servers/main.cc``), in either spelling, set the model server's retries; the defaults
    are TF Serving's (``model_servers/server.h``: 5 retries, one minute apart)."""
    from memgraph_tf import cli
    from memgraph_tf.serving import server
    from memgraph_tf.serving.model_server import (
        DEFAULT_LOAD_RETRY_INTERVAL_S,
        DEFAULT_MAX_NUM_LOAD_RETRIES,
    )

    parser = cli.build_parser()
    args = parser.parse_args(
        [
            "serve",
            str(toy_base),
            "--max_num_load_retries",
            "2",
            "--load-retry-interval-micros",
            "1500000",
        ]
    )
    assert server.load_retries(args) == {"max_num_load_retries": 2, "load_retry_interval_s": 1.5}
    ms = server.model_server_from_args(args)
    try:
        assert (ms.max_num_load_retries, ms.load_retry_interval_s) == (2, 1.5)
    finally:
        ms.close()
    defaults = server.load_retries(parser.parse_args(["serve", str(toy_base)]))
    assert defaults == {
        "max_num_load_retries": DEFAULT_MAX_NUM_LOAD_RETRIES,
        "load_retry_interval_s": DEFAULT_LOAD_RETRY_INTERVAL_S,
    }
