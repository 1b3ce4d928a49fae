"""Fixtures for the C++ reader, the UnpackBlob op and the portable decoder tests."""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
GOLDEN = REPO_ROOT / "tests" / "golden"
CC_DIR = REPO_ROOT / "memgraph_tf" / "cc"

NP_DTYPES = {
    "bool": np.bool_,
    "int32": np.int32,
    "int64": np.int64,
    "float32": np.float32,
    "float64": np.float64,
}


def _load(kind: str) -> list[tuple[str, bytes, dict[str, Any]]]:
    folder = GOLDEN / kind
    if not folder.is_dir():
        return []
    out = []
    for bin_path in sorted(folder.glob("*.bin")):
        doc = json.loads(bin_path.with_suffix(".json").read_text())
        out.append((bin_path.stem, bin_path.read_bytes(), doc))
    return out


VALID = _load("valid")
INVALID = _load("invalid")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrizes ``valid_vector`` / ``invalid_vector`` over tests/golden (name, bytes, json
    doc)."""
    for fixture, items, kind in (
        ("valid_vector", VALID, "valid"),
        ("invalid_vector", INVALID, "invalid"),
    ):
        if fixture in metafunc.fixturenames:
            if items:
                metafunc.parametrize(fixture, items, ids=[item[0] for item in items])
            else:
                metafunc.parametrize(
                    fixture,
                    [
                        pytest.param(
                            None,
                            marks=pytest.mark.skip(
                                reason=f"no golden vectors in tests/golden/{kind}"
                            ),
                        )
                    ],
                )


def expected_array(section: dict[str, Any]) -> np.ndarray:
    """The golden JSON section as a numpy array (strings as bytes objects)."""
    shape = tuple(section["shape"])
    if section["dtype"] == "string":
        flat = np.empty(len(section["values"]), dtype=object)
        for i, v in enumerate(section["values"]):
            flat[i] = v.encode("utf-8")
        return flat.reshape(shape)
    return np.asarray(section["values"], dtype=NP_DTYPES[section["dtype"]]).reshape(shape)


def assert_same_array(got: Any, want: np.ndarray, what: str) -> None:
    got = np.asarray(got)
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    if want.dtype == object:
        assert [bytes(x) for x in got.reshape(-1)] == list(want.reshape(-1)), what
    else:
        assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} != {want.dtype}"
        # Bitwise, so -0.0 vs 0.0 and NaN payloads count.
        assert got.tobytes() == want.tobytes(), f"{what}: {got!r} != {want!r}"


@pytest.fixture(scope="session")
def reader_cli(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    """The plain C++ reader harness, compiled with g++ (with ASan + UBSan when they link here)."""
    gxx = shutil.which("g++")
    if gxx is None:
        pytest.skip("g++ not found: the C++ reader harness cannot be built (apt-get install g++)")
    out = tmp_path_factory.mktemp("reader_cli") / "blob_reader_cli"
    sources = [
        str(CC_DIR / "blob_reader.cc"),
        str(CC_DIR / "base64url.cc"),
        str(CC_DIR / "tests" / "blob_reader_cli.cc"),
    ]
    base = [gxx, "-std=c++17", "-O1", "-g", "-Wall", "-Wextra"]
    sanitized = base + [
        "-fsanitize=address,undefined",
        "-fno-sanitize-recover=all",
        "-fno-omit-frame-pointer",
    ]
    proc = subprocess.run(sanitized + sources + ["-o", str(out)], capture_output=True, text=True)
    if proc.returncode == 0:
        # Some sandboxes cannot run sanitizer runtimes: fall back to a plain build if a smoke run
        # fails.
        smoke = subprocess.run(
            [str(out), "--frames"], input=b"", capture_output=True, env=_cli_env()
        )
        if smoke.returncode != 0:
            proc = subprocess.run(base + sources + ["-o", str(out)], capture_output=True, text=True)
    else:
        proc = subprocess.run(base + sources + ["-o", str(out)], capture_output=True, text=True)
    assert proc.returncode == 0, f"compiling the reader harness failed:\n{proc.stderr}"
    return out


def _cli_env() -> dict[str, str]:
    # Leak checking needs ptrace, which containers often forbid; memory errors stay fatal.
    return {**os.environ, "ASAN_OPTIONS": "detect_leaks=0:abort_on_error=0"}


def run_cli(
    cli: pathlib.Path,
    *args: str,
    frames: list[bytes] | None = None,
    base64_frames: list[bytes] | None = None,
) -> list[dict[str, Any]]:
    """Runs the harness (``frames``: blobs sent with ``--frames``; ``base64_frames``: texts sent
    with ``--base64-frames``); one parsed JSON object per line.

    Fails the test if the harness crashes or a sanitizer reports (non-zero exit)."""
    stdin = None
    if base64_frames is not None:
        args, frames = ("--base64-frames", *args), None
        stdin = b"".join(len(f).to_bytes(4, "little") + f for f in base64_frames)
    if frames is not None:
        args = ("--frames", *args)
        stdin = b"".join(len(f).to_bytes(4, "little") + f for f in frames)
    proc = subprocess.run(
        [str(cli), *args], input=stdin, capture_output=True, timeout=300, env=_cli_env()
    )
    assert proc.returncode == 0, (
        f"reader harness exited {proc.returncode}:\n{proc.stderr[-4000:].decode()}"
    )
    return [json.loads(line) for line in proc.stdout.decode().splitlines()]


def python_result(data: bytes) -> tuple[bool, Any]:
    """(True, sections) or (False, message) from the Python reader memgraph_tf.blob."""
    from memgraph_tf import blob

    try:
        return True, blob.unpack(data)
    except blob.BlobFormatError as exc:
        return False, str(exc)


def mutations(data: bytes, values: tuple[int, ...] = (0x00, 0x01, 0x07, 0x80, 0xFF)) -> list[bytes]:
    """Every single-byte replacement of ``data`` by each of ``values`` (where it changes the
    byte)."""
    out = []
    for pos in range(len(data)):
        for v in values:
            if data[pos] != v:
                out.append(data[:pos] + bytes([v]) + data[pos + 1 :])
    return out


@pytest.fixture(scope="session")
def helpers() -> SimpleNamespace:
    """The helper functions of this conftest (test modules cannot import it under importlib
    mode)."""
    return SimpleNamespace(
        expected_array=expected_array,
        assert_same_array=assert_same_array,
        run_cli=run_cli,
        python_result=python_result,
        mutations=mutations,
        valid=VALID,
        invalid=INVALID,
        np_dtypes=NP_DTYPES,
    )


@pytest.fixture(scope="session")
def ops():
    """memgraph_tf.ops with the op library loaded (built into the cache on first use)."""
    from memgraph_tf import ops as ops_module

    ops_module.load_library()
    return ops_module
