"""Shared test configuration. Area-specific fixtures live in each tests/<area>/conftest.py; test
helpers that several test modules import live in plain modules (``tests.graphs``,
``tests.client.classify_kit``, ``tests.beam.helpers``), imported by name."""

from __future__ import annotations

import os
import pathlib
import sys

import pytest

REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent
GOLDEN_DIR = REPO_ROOT / "tests" / "golden"

# ``python -m pytest`` from the repository root puts the root on sys.path; the pytest script, or a
# start from another directory, does not, and with --import-mode=importlib pytest adds nothing. The
# helper modules are imported as ``tests.<module>``, so the root goes on the path here (at the end:
# it shadows no installed module).
if str(REPO_ROOT) not in sys.path:
    sys.path.append(str(REPO_ROOT))


@pytest.fixture(scope="session")
def repo_root() -> pathlib.Path:
    return REPO_ROOT


@pytest.fixture(scope="session")
def golden_dir() -> pathlib.Path:
    return GOLDEN_DIR


@pytest.fixture(scope="session")
def planetoid_dir() -> pathlib.Path:
    """The Planetoid files (see memgraph_tf.datasets); the test skips, saying where it looked, if
    absent."""
    from memgraph_tf.datasets import planetoid_root

    try:
        return planetoid_root("cora")
    except FileNotFoundError as exc:
        pytest.skip(str(exc))


@pytest.fixture(scope="session")
def small_sage():
    """``model(fanouts, dim, classes)`` -> an untrained GraphSAGE (8 hidden units, no dropout,
    weights from Keras seed 3), one per architecture for the session: every call with the same
    architecture returns the same model."""
    models: dict = {}

    def model(fanouts, dim: int, classes):
        key = (tuple(fanouts), dim, tuple(classes))
        if key not in models:
            import keras

            from memgraph_tf.client import GraphSAGE

            keras.utils.set_random_seed(3)
            models[key] = GraphSAGE(
                list(fanouts),
                dim,
                len(classes),
                hidden_units=8,
                dropout=0.0,
                class_names=list(classes),
            ).ensure_built()
        return models[key]

    return model


@pytest.fixture(scope="session")
def small_sage_bundle(tmp_path_factory, small_sage):
    """``export(name, version, options, *, use_op, fanouts, dim, classes)`` -> ``BASE/NAME``: the
    ``small_sage`` model of that architecture (so bundles of the same architecture hold the same
    weights) exported with sampling options ``options``, property ``features``, no warmup
    file."""

    def export(name: str, version: int, options: dict, *, use_op: bool, fanouts, dim: int, classes):
        from memgraph_tf.serving import export_bundle

        base = tmp_path_factory.mktemp(f"{name}_bundles")
        export_bundle(
            small_sage(fanouts, dim, classes),
            base,
            name,
            version,
            use_op=use_op,
            properties=["features"],
            sample_options=options,
            warmup=False,
        )
        return base / name

    return export


@pytest.fixture(scope="session")
def arcadedb_server():
    """A real ArcadeDB server (own process, Bolt on 127.0.0.1, random ports, database ``g``) shared
    by the session; skips when arcadedb-embedded is not installed."""
    if not os.environ.get("CI"):  # in CI the Bolt suite must run: a missing package fails there
        pytest.importorskip(
            "arcadedb_embedded", reason="arcadedb-embedded (a real Bolt server) is not installed"
        )
    from memgraph_tf.testing.arcadedb import ArcadeDBServerProcess

    with ArcadeDBServerProcess() as server:
        yield server


@pytest.fixture(scope="session")
def bolt_source(arcadedb_server):
    """A BoltSource connected to the session's ArcadeDB server."""
    from memgraph_tf.client import connect

    source = connect(
        arcadedb_server.uri, auth=arcadedb_server.auth, database=arcadedb_server.database
    )
    try:
        yield source
    finally:
        source.close()
