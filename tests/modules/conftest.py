"""Fixtures for the tf_features query-module suites (embedded runtime and real Memgraph)."""

from __future__ import annotations

import importlib.util
import pathlib
import sys

import pytest

HERE = pathlib.Path(__file__).resolve().parent


CASES_MODULE = "_memgraph_tf_modules_cases"


def load_cases():
    """The shared case module (tests/modules/_cases.py), loaded once under a private name.

    pytest imports this conftest before the test modules beside it, so they can simply
    ``import _memgraph_tf_modules_cases as cases`` (it is registered below, at import time)."""
    name = CASES_MODULE
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, HERE / "_cases.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


load_cases()


@pytest.fixture
def embedded_runner():
    return load_cases().EmbeddedRunner()


@pytest.fixture(scope="session")
def planetoid_root(planetoid_dir) -> pathlib.Path:
    return planetoid_dir
