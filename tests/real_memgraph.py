"""Where the tests against a real Memgraph find it: ``MEMGRAPH_TF_TEST_MEMGRAPH_URI`` (e.g.
``bolt://localhost:7687``) with the optional ``MEMGRAPH_TF_TEST_MEMGRAPH_USER`` /
``MEMGRAPH_TF_TEST_MEMGRAPH_PASSWORD``, and the marks that skip them when it is not set
(Memgraph cannot run on the development machine: FACTS.md). Imported as
``tests.real_memgraph``."""

from __future__ import annotations

import os

import pytest

URI = os.environ.get("MEMGRAPH_TF_TEST_MEMGRAPH_URI")
#: a real-Memgraph test module's ``pytestmark``
MARKS = [
    pytest.mark.memgraph,
    pytest.mark.skipif(
        not URI,
        reason="MEMGRAPH_TF_TEST_MEMGRAPH_URI is not set (no real Memgraph to test against)",
    ),
]
#: (user, password) from the environment, None without a user
_USER = os.environ.get("MEMGRAPH_TF_TEST_MEMGRAPH_USER", "")
AUTH = (_USER, os.environ.get("MEMGRAPH_TF_TEST_MEMGRAPH_PASSWORD", "")) if _USER else None
