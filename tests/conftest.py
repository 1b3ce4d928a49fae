"""Shared test configuration. Area-specific fixtures live in each tests/<area>/conftest.py."""

from __future__ import annotations

import os
import pathlib

import pytest

REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent
GOLDEN_DIR = REPO_ROOT / "tests" / "golden"


@pytest.fixture(scope="session")
def repo_root() -> pathlib.Path:
    return REPO_ROOT


@pytest.fixture(scope="session")
def golden_dir() -> pathlib.Path:
    return GOLDEN_DIR


@pytest.fixture(scope="session")
def planetoid_dir() -> pathlib.Path:
    """The Planetoid files (see memgraph_tf.datasets); the test skips, saying where it looked, if absent."""
    from memgraph_tf.datasets import planetoid_root

    try:
        return planetoid_root("cora")
    except FileNotFoundError as exc:
        pytest.skip(str(exc))



@pytest.fixture(scope="session")
def arcadedb_server():
    """A real ArcadeDB server (own process, Bolt on 127.0.0.1, random ports, database ``g``) shared
    by the session; skips when arcadedb-embedded is not installed."""
    if not os.environ.get("CI"):  # in CI the Bolt suite must run: a missing package fails there
        pytest.importorskip("arcadedb_embedded", reason="arcadedb-embedded (a real Bolt server) is not installed")
    from memgraph_tf.testing.arcadedb import ArcadeDBServerProcess

    with ArcadeDBServerProcess() as server:
        yield server


@pytest.fixture(scope="session")
def bolt_source(arcadedb_server):
    """A BoltSource connected to the session's ArcadeDB server."""
    from memgraph_tf.client import connect

    source = connect(arcadedb_server.uri, auth=arcadedb_server.auth, database=arcadedb_server.database)
    try:
        yield source
    finally:
        source.close()
