"""Assertions the REST tests share. Imported by name: ``from tests.serving.http_kit import
assert_error``."""

from __future__ import annotations

import requests


def assert_error(r: requests.Response, status: int, error: str, context: str = "") -> None:
    """``r`` answered ``status`` with exactly the body ``{"error": error}`` (``context`` names
    the case in a failure)."""
    assert (r.status_code, r.json()) == (status, {"error": error}), context
