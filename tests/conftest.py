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
