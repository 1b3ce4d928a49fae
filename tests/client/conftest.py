"""Fixtures for the client tests: one real ArcadeDB Bolt server per session, graph sources, datasets."""

from __future__ import annotations

import pathlib

import pytest

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
PLANETOID_DIR = REPO_ROOT.parent / "shared" / "datasets" / "planetoid"


@pytest.fixture(scope="session")
def arcadedb_server():
    """A real ArcadeDB server (Bolt on 127.0.0.1, random port, database ``g``) for the session."""
    pytest.importorskip("arcadedb_embedded", reason="arcadedb-embedded (a real Bolt server) is not installed")
    from memgraph_tf.testing.arcadedb import ArcadeDBServerProcess

    server = ArcadeDBServerProcess()
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def bolt_source(arcadedb_server):
    """A BoltSource connected to the session's ArcadeDB server."""
    from memgraph_tf.client import connect

    source = connect(arcadedb_server.uri, auth=arcadedb_server.auth, database=arcadedb_server.database)
    try:
        yield source
    finally:
        source.close()


@pytest.fixture(scope="session")
def planetoid_dir() -> pathlib.Path:
    if not (PLANETOID_DIR / "ind.cora.x").exists():
        pytest.skip(f"Planetoid datasets not found beside the repository ({PLANETOID_DIR})")
    return PLANETOID_DIR


@pytest.fixture(scope="session")
def cora_graph(planetoid_dir):
    """Cora as an EmbeddedGraph (built once per session: ~10 s)."""
    from memgraph_tf.embedded import EmbeddedGraph

    return EmbeddedGraph.from_planetoid("cora", planetoid_dir)
