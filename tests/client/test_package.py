"""Package-level properties of memgraph_tf.client."""

from __future__ import annotations

import subprocess
import sys

import pytest


def test_sources_import_without_tensorflow():
    code = (
        "import sys\n"
        "from memgraph_tf.client import connect, EmbeddedSource, BoltSource, ServerUnavailable\n"
        "heavy = sorted(m for m in ('tensorflow', 'keras') if m in sys.modules)\n"
        "print(','.join(heavy) or 'none')\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert out.stdout.strip() == "none"


def test_unknown_name_is_an_attribute_error():
    import memgraph_tf.client as client

    with pytest.raises(
        AttributeError, match=r"module 'memgraph_tf.client' has no attribute 'nope'"
    ):
        client.nope  # noqa: B018 -- the attribute access is what raises
    assert "OpenCypherDataset" in dir(client)


def test_error_tree():
    from memgraph_tf import errors

    assert issubclass(errors.ServerUnavailable, errors.GraphConnectionError)
    assert issubclass(errors.AuthenticationError, ConnectionError)
    assert issubclass(errors.NullValueError, errors.ResultError) and issubclass(
        errors.NullValueError, ValueError
    )
    assert issubclass(errors.ValueTypeError, TypeError)
    assert issubclass(errors.ProcedureUnavailable, errors.QueryError)
    for name in (
        "ConfigurationError",
        "GraphConnectionError",
        "QueryError",
        "ResultError",
        "GraphDataError",
    ):
        assert issubclass(getattr(errors, name), errors.ClientError)
        assert name in errors.__doc__
