"""Fixtures for the Beam tests: the keyed test graph (``tests.beam.helpers``) written to ArcadeDB
over Bolt, an exported op-free bundle, the batch package's predictions as the reference, and a
real Dask cluster (scheduler and 2 worker processes) for Beam's DaskRunner.

Nothing here imports apache_beam: test modules that need it skip on their own
(``helpers.beam_missing``), so a venv without Beam reports why."""

from __future__ import annotations

import os

import pytest

from tests.beam import helpers as h
from tests.graphs import backend, reference  # noqa: F401 -- fixtures, shared with tests/client


@pytest.fixture(scope="session")
def bundle_base(small_sage_bundle):
    """BASE/BeamSage with version 1, op-free, sampling options ``h.OPTIONS``."""
    return h.GRAPH.bundle(small_sage_bundle, "BeamSage", 1, use_op=False)


@pytest.fixture(scope="session")
def op_bundle_base(small_sage_bundle):
    """BASE/BeamSageOp with version 2: the same model decoding blobs with the C++ op."""
    return h.GRAPH.bundle(small_sage_bundle, "BeamSageOp", 2, use_op=True)


@pytest.fixture(scope="session")
def keyed_graph():
    """The Beam suite's keyed graph, for the shared ``backend`` / ``reference`` fixtures."""
    return h.GRAPH


@pytest.fixture
def bolt_graph(bolt_source):
    """The test graph written afresh to ArcadeDB (no tf_features procedures: the client-side
    fallback samples)."""
    h.GRAPH.write_bolt(bolt_source)
    assert not bolt_source.has_procedures()
    return bolt_source


@pytest.fixture
def bolt_env(arcadedb_server, monkeypatch):
    """Worker credentials the way a deployment gives them: environment variables (inherited by
    DirectRunner worker processes), never inside the pipeline."""
    monkeypatch.setenv("MEMGRAPH_TF_USER", arcadedb_server.user)
    monkeypatch.setenv("MEMGRAPH_TF_PASSWORD", arcadedb_server.password)
    monkeypatch.setenv("MEMGRAPH_TF_DATABASE", arcadedb_server.database)
    return arcadedb_server


@pytest.fixture(scope="session")
def dask_cluster(arcadedb_server):
    """A real ``dask.distributed`` cluster for the session: a scheduler and 2 worker processes
    (one thread each) on 127.0.0.1, started here and stopped at the end. The workers get the
    graph's credentials the way a deployment gives them: in their environment (the Nanny's
    ``env``), never in the pipeline."""
    if not os.environ.get("CI"):  # CI installs the beam extra, dask[distributed] included
        pytest.importorskip("distributed", reason="dask[distributed] (the beam extra) is missing")
    from distributed import LocalCluster

    cluster = LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        dashboard_address=None,
        env={
            "MEMGRAPH_TF_USER": arcadedb_server.user,
            "MEMGRAPH_TF_PASSWORD": arcadedb_server.password,
            "MEMGRAPH_TF_DATABASE": arcadedb_server.database,
        },
    )
    try:
        yield cluster
    finally:
        cluster.close()
