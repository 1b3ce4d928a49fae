"""Structured access logs of ``memgraph-tf serve``: one line per request, off by default (as TF
Serving logs no request unless its config asks for it).

Turned on with ``memgraph-tf serve --access-log`` or the environment variable
``MEMGRAPH_TF_ACCESS_LOG`` (``1``, ``true``, ``yes`` or ``on``). Each line goes through
``logging`` at INFO on this module's logger, ``memgraph_tf.serving.access_log``, as one JSON
object::

    {"method": "POST /v1/models/GraphSage:classify", "entrypoint": "REST", "api": "Classify",
     "model": "GraphSage", "version": 3, "examples": 64, "status": 200, "code": "OK",
     "latency_ms": 41.2, "graph_fetch_ms": 30.1, "model_ms": 8.7}

``status`` is the HTTP status (REST) or the gRPC code's name (gRPC); ``code`` the status code's
name for both; ``model`` / ``version`` / ``examples`` are null when the request never got as
far as naming them (a malformed path, an unknown model).
"""

from __future__ import annotations

import json
import logging
import os
import time
from typing import Any

from memgraph_tf.serving.metrics import RequestRecord

#: The logger access lines go to: this module's own (``memgraph_tf.serving.access_log``), as
#: every module of the library logs under its name.
LOGGER_NAME = __name__
#: The environment variable that turns access logs on.
ENV_VAR = "MEMGRAPH_TF_ACCESS_LOG"
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("", "0", "false", "no", "off")

logger = logging.getLogger(__name__)


def enabled_from_env(environ: dict | None = None) -> bool:
    """Whether ``MEMGRAPH_TF_ACCESS_LOG`` turns access logs on. Raises ValueError naming the
    variable for a value that is neither true nor false."""
    value = (environ if environ is not None else os.environ).get(ENV_VAR, "").strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ValueError(f"{ENV_VAR}: expected one of {_TRUE + _FALSE[1:]}, got {value!r}")


def line(record: RequestRecord, status: int | str, code: str, latency_s: float) -> str:
    """The JSON text of one access-log line (keys in a fixed order)."""
    return json.dumps(
        {
            "method": record.method,
            "entrypoint": record.entrypoint,
            "api": record.api,
            "model": record.model,
            "version": record.version,
            "examples": record.examples,
            "status": status,
            "code": code,
            "latency_ms": round(latency_s * 1e3, 3),
            "graph_fetch_ms": round(record.graph_fetch_s * 1e3, 3),
            "model_ms": round(record.model_s * 1e3, 3),
        },
        ensure_ascii=True,
    )


def write(record: RequestRecord, status: int | str, code: str, latency_s: float) -> None:
    """Log one access line for ``record`` at INFO on :data:`LOGGER_NAME`."""
    logger.info("%s", line(record, status, code, latency_s))


def finish(model_server: Any, record: RequestRecord, status: int | str, code: str) -> None:
    """Count ``record``'s request in ``model_server``'s metrics (when on) and write its access
    line (when on); ``status`` is what the client saw (HTTP status or gRPC code name), ``code``
    the status code's name (OK for a success)."""
    metrics = getattr(model_server, "metrics", None)
    if metrics is not None:
        elapsed_s = metrics.finish(record, code)
    else:
        elapsed_s = time.perf_counter() - record.start
    if getattr(model_server, "access_log", False):
        write(record, status, code, elapsed_s)


__all__ = ["ENV_VAR", "LOGGER_NAME", "enabled_from_env", "finish", "line", "write"]
