"""Serving: SavedModel bundles for TF Serving, a REST client, and a local TF-Serving-compatible server.

- :func:`export_bundle` (``export.py``) writes ``BASE/NAME/VERSION/`` with ``classify`` and
  ``serving_default`` signatures, class labels, a ``models.config``, and (op bundles) the op library.
- :class:`ServingClient`, :func:`classify_nodes` (``client.py``) talk TF Serving's REST API.
- ``errors.py`` is the typed error tree the client raises.
- ``server.py`` is ``memgraph-tf serve``: TF Serving's REST API for any SavedModel, in Python.

Attributes are imported lazily so that ``from memgraph_tf.serving import ServingClient`` does not
import TensorFlow.
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "ServingClient": "client",
    "classify_nodes": "client",
    "export_bundle": "export",
    "BundleInfo": "export",
    "ModelServer": "server",
    "start_server": "server",
}

__all__ = sorted(_LAZY) + ["errors"]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        module = importlib.import_module(f"{__name__}.{_LAZY[name]}")
        return getattr(module, name)
    if name == "errors":
        return importlib.import_module(f"{__name__}.errors")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
