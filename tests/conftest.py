"""Shared test configuration. Area-specific fixtures live in each tests/<area>/conftest.py."""

from __future__ import annotations

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
