"""REST routing of ``memgraph-tf serve``: TF Serving's URL patterns, and one request (method,
path, body) dispatched to the model core (:class:`~.model_server.ModelServer`), answered as
``(HTTP status, JSON)``. No HTTP server here (that is :mod:`.server`), no TensorFlow.

- ``POST /v1/models/NAME[/versions/N | /labels/L]:classify|:regress|:predict``;
- ``GET /v1/models/NAME[/versions/N | /labels/L]`` (status) and ``.../metadata``;
- another path under ``/v1/`` is 400 "Malformed request", any other path 404, as TF Serving's
  ``HttpRestApiHandler`` and its HTTP server answer; a version beyond int64 is 400 (TF Serving's
  ``ParseModelInfo``, ``http_rest_api_util.cc``).

Every failure is answered with the HTTP status of its code in the status table
(:mod:`.errors`) and ``{"error": message}``; :func:`answer` never raises.
"""

from __future__ import annotations

import json
import logging
import re
import urllib.parse
from typing import Any

from memgraph_tf.serving import bundle, json_examples, json_tensors, json_values, node_examples
from memgraph_tf.serving.errors import INTERNAL_ERROR_MESSAGE, ServingFailure
from memgraph_tf.serving.json_values import bad_request

logger = logging.getLogger(__name__)

PREDICT_RE = re.compile(
    r"/v1/models/([^/:]+)(?:/versions/(\d+)|/labels/([^/:]+))?:(classify|regress|predict)",
    re.IGNORECASE,
)
STATUS_RE = re.compile(
    r"/v1/models(?:/([^/:]+))?(?:/versions/(\d+)|/labels/([^/:]+))?(?:/(metadata))?",
    re.IGNORECASE,
)
#: The paths TF Serving's REST handler takes (others get 404 from its HTTP server).
API_RE = re.compile(r"/v1/.*", re.IGNORECASE | re.DOTALL)
#: What a REST request's example limit counts.
_COUNTED = "examples/instances"


def int64_version(text: str | None) -> int | None:
    """A URL's version number; 400 "Failed to convert version: N to numeric." beyond int64, as
    TF Serving's ``ParseModelInfo`` (``http_rest_api_util.cc``) answers."""
    if text is None:
        return None
    value = int(text)
    if value > bundle.INT64_MAX:
        raise bad_request(f"Failed to convert version: {text} to numeric.")
    return value


def dispatch(method: str, path: str) -> tuple[str, tuple]:
    """``(kind, args)`` for a request path (no query): ``("post", (name, version, label,
    verb))``, ``("status", (name, version, label))`` or ``("metadata", (name, version,
    label))``, names and labels percent-decoded. Raises the 400 / 404 ServingFailure TF Serving
    answers for a path it does not take."""
    m = PREDICT_RE.fullmatch(path)
    if method == "POST" and m:
        name, version, label, verb = m.groups()
        name = urllib.parse.unquote(name)
        label = urllib.parse.unquote(label) if label is not None else None
        version = int64_version(version)
        if verb not in ("classify", "regress", "predict"):  # TF Serving compares exactly
            raise bad_request(f"Malformed request: {method} {path}")
        return "post", (name, version, label, verb)
    m = STATUS_RE.fullmatch(path)
    if method == "GET" and m:
        name, version, label, sub = m.groups()
        name = urllib.parse.unquote(name) if name else ""
        label = urllib.parse.unquote(label) if label is not None else None
        version = int64_version(version)
        if not name:
            raise bad_request("Missing model name in request.")
        return ("metadata" if sub == "metadata" else "status"), (name, version, label)
    if not API_RE.fullmatch(path):
        raise ServingFailure.for_code("NOT_FOUND", f"Not found: {method} {path}")
    raise bad_request(f"Malformed request: {method} {path}")


def check_size(model_server: Any, doc: dict) -> None:
    """Refuse a body holding more examples / instances than the server's ``max_examples``
    (:func:`.node_examples.check_example_count`: 413)."""
    node_examples.check_example_count(
        json_tensors.request_batch_size(doc), model_server.max_examples, _COUNTED
    )


def post(
    model_server: Any, name: str, version: int | None, label: str | None, verb: str, body: bytes
) -> dict:
    """``:classify`` / ``:regress`` / ``:predict``: the answer for a POST body, checked in TF
    Serving's order (the JSON, then for classify/regress the context and the examples, then the
    size limit, then the model and version)."""
    doc = model_server.parse_json(body)
    if verb == "predict":
        check_size(model_server, doc)
        mv = model_server.resolve(name, version, label)
        return model_server.predict(mv, doc)
    json_examples.request_context(doc)  # TF Serving checks the context before the examples
    json_examples.request_examples(doc, verb)
    check_size(model_server, doc)
    mv = model_server.resolve(name, version, label)
    return model_server.classify(mv, doc) if verb == "classify" else model_server.regress(mv, doc)


def answer(model_server: Any, method: str, path: str, body: bytes) -> tuple[int, Any]:
    """One REST request -> ``(http_status, answer)`` where the answer is the JSON value to
    write with :func:`~memgraph_tf.serving.json_values.dumps`. Never raises: a failure is its
    status and ``{"error": message}``; a bug is 500 with
    :data:`~memgraph_tf.serving.errors.INTERNAL_ERROR_MESSAGE` (no exception type or text: they
    go to the server's log with the traceback)."""
    path = path.split("?", 1)[0].split("#", 1)[0]
    try:
        kind, args = dispatch(method, path)
        if kind == "post":
            return 200, post(model_server, *args, body)
        name, version, label = args
        if kind == "metadata":
            return 200, model_server.metadata(model_server.resolve(name, version, label))
        return 200, model_server.status(name, version, label)
    except ServingFailure as exc:
        return exc.status, {"error": exc.message}
    except Exception:  # a bug: TF Serving's error format, the cause only in the server's log
        logger.exception("internal error on %s %s", method, path)
        return 500, {"error": INTERNAL_ERROR_MESSAGE}


def handle_bytes(model_server: Any, method: str, path: str, body: bytes) -> tuple[int, bytes]:
    """One REST request -> ``(http_status, UTF-8 JSON body)``, the body written as TF Serving
    writes it (float32 with six significant digits where they round-trip). Never raises for
    any input."""
    status, payload = answer(model_server, method, path, body)
    try:
        text = json_values.dumps(payload)
    except Exception:  # pragma: no cover  (answers are built from known types)
        logger.exception("cannot write the answer to %s %s", method, path)
        return 500, json_values.dumps({"error": INTERNAL_ERROR_MESSAGE}).encode()
    try:
        return status, text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate (the parser refuses them): escaped, \udXXX
        return status, text.encode("utf-8", "backslashreplace")


def handle(model_server: Any, method: str, path: str, body: bytes) -> tuple[int, dict]:
    """:func:`handle_bytes` with the JSON body parsed back (``NaN`` / ``Infinity`` become
    floats). Never raises for bad input."""
    status, data = handle_bytes(model_server, method, path, body)
    return status, json.loads(data)


__all__ = [
    "API_RE",
    "PREDICT_RE",
    "STATUS_RE",
    "answer",
    "check_size",
    "dispatch",
    "handle",
    "handle_bytes",
    "int64_version",
    "post",
]
