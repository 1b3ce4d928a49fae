"""The HTTP layer of ``memgraph-tf serve``: a local server that speaks TensorFlow Serving's REST API.

``memgraph-tf serve MODEL_BASE_PATH`` serves every SavedModel found as ``MODEL_BASE_PATH/<version>/``
(any all-digit directory name; ``00000123`` is version 123), ours or not, with or without the
``MemgraphTf>UnpackBlob`` op. The layers, one module each:

- this module: HTTP/1.1 over :class:`http.server.ThreadingHTTPServer` -- request bodies
  (``Content-Length`` or chunked), the ``max_request_bytes`` limit (413, as TF Serving's libevent
  front end answers when a body limit is set), keep-alive, ``TCP_NODELAY``; it binds 127.0.0.1
  unless told otherwise;
- :mod:`.model_server` -- :class:`~.model_server.ModelServer`: versions, signatures, TF execution,
  and the REST API's URLs, bodies and status codes (``g3doc/api_rest.md``,
  ``model_servers/http_rest_api_handler.cc``): ``POST /v1/models/NAME[/versions/N|/labels/L]
  :classify|:regress|:predict``, ``GET`` status and ``.../metadata``, errors as
  ``{"error": "message"}``;
- :mod:`.rest_json` -- JSON <-> tf.Example / tensors (``util/json_tensor.cc``);
- :mod:`.neighbourhoods` -- ``{"node_id": ...}`` examples -> blobs, with a graph source the caller
  passes in (the CLI opens it for ``--graph``; this package never imports ``memgraph_tf.client``).

Concurrency: each request runs on its own thread; the model runs through the loaded SavedModel's
concrete signature functions, which are safe to call from many threads.
"""

from __future__ import annotations

import argparse
import json
import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from memgraph_tf.serving.model_server import DEFAULT_MAX_REQUEST_BYTES, ModelServer

logger = logging.getLogger(__name__)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "memgraph-tf-serve"
    # Headers and body go out in two writes: without TCP_NODELAY, Nagle + delayed ACK add ~40 ms.
    disable_nagle_algorithm = True
    model_server: ModelServer  # set on the subclass made per server

    def log_message(self, fmt: str, *args: Any) -> None:  # route http.server's log to logging
        logger.debug("%s " + fmt, self.address_string(), *args)

    def _reply(self, status: int, payload: dict | bytes, close: bool = False) -> None:
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if close:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        self.wfile.write(data)

    def _read_body(self) -> bytes | None:
        """The body, or None after answering 413 when it exceeds max_request_bytes."""
        limit = self.model_server.max_request_bytes
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            chunks, total = [], 0
            while True:
                line = self.rfile.readline(1024)
                try:
                    size = int(line.split(b";")[0].strip() or b"0", 16)
                    if size < 0:
                        raise ValueError
                except ValueError:
                    self._reply(400, {"error": f"Transfer-Encoding: chunked: expected a hex chunk "
                                               f"size at body offset {total}, got {line[:40]!r}"},
                                close=True)
                    return None
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    break
                total += size
                if total > limit:
                    self._too_large(total, limit, drain=0, close=True)
                    return None
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            return b"".join(chunks)
        try:
            length = int(self.headers.get("Content-Length") or 0)
            if length < 0:
                raise ValueError
        except ValueError:
            self._reply(400, {"error": f"Content-Length: expected a non-negative integer, got "
                                       f"{self.headers.get('Content-Length')!r}"}, close=True)
            return None
        if length > limit:
            self._too_large(length, limit, drain=length)
            return None
        return self.rfile.read(length) if length else b""

    def _too_large(self, size: int, limit: int, drain: int, close: bool = False) -> None:
        # Read (and drop) a body up to 16x the limit so the client sees the answer instead of a
        # reset connection; anything bigger is cut off.
        if drain and drain <= 16 * max(limit, 1 << 20):
            left = drain
            while left > 0:
                chunk = self.rfile.read(min(left, 1 << 20))
                if not chunk:
                    break
                left -= len(chunk)
        else:
            close = True
        self._reply(413, {"error": f"Request body of {size} bytes exceeds the server's "
                                   f"max_request_bytes={limit}"}, close=close)

    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        body = self._read_body()
        if body is None:
            return
        self._reply(*self.model_server.handle_bytes("POST", self.path, body))

    def do_GET(self) -> None:  # noqa: N802
        self._reply(*self.model_server.handle_bytes("GET", self.path, b""))


class RunningServer:
    """A started HTTP server (see :func:`start_server`): ``url``, ``port``, ``close()``."""

    def __init__(self, httpd: ThreadingHTTPServer, thread: threading.Thread):
        self.httpd = httpd
        self.thread = thread
        host, port = httpd.server_address[:2]
        self.port = port
        self.url = f"http://{host}:{port}"

    def close(self) -> None:
        """Stop serving and release the port."""
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=10)

    def __enter__(self) -> RunningServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def make_http_server(model_server: ModelServer, host: str = "127.0.0.1",
                     port: int = 8501) -> ThreadingHTTPServer:
    """A ThreadingHTTPServer (daemon threads) answering with ``model_server``; port 0 picks one."""
    handler = type("Handler", (_Handler,), {"model_server": model_server})
    httpd = ThreadingHTTPServer((host, port), handler)
    httpd.daemon_threads = True
    return httpd


def start_server(model_server: ModelServer, host: str = "127.0.0.1", port: int = 0) -> RunningServer:
    """Serve ``model_server`` from a background thread; returns once the socket is listening."""
    httpd = make_http_server(model_server, host, port)
    thread = threading.Thread(target=httpd.serve_forever, name="memgraph-tf-serve", daemon=True)
    thread.start()
    return RunningServer(httpd, thread)


def _parse_labels(items: list[str] | None) -> dict[str, int]:
    labels = {}
    for item in items or []:
        lbl, sep, ver = item.partition("=")
        if not sep or not lbl or not ver.isdigit():
            raise ValueError(f"--version-label: expected LABEL=VERSION, got {item!r}")
        labels[lbl] = int(ver)
    return labels


def main(args: argparse.Namespace, graph_source: Any = None) -> int:
    """``memgraph-tf serve``: load the model, then serve until interrupted. Returns 0.
    ``graph_source`` (opened for ``--graph`` by the caller, which also closes it) feeds
    ``node_id`` examples."""
    ms = ModelServer(
        args.model_base_path,
        args.model_name,
        labels=_parse_labels(getattr(args, "version_label", None)),
        graph_source=graph_source,
        max_request_bytes=args.max_request_bytes,
    )
    httpd = make_http_server(ms, args.host, args.port)
    host, port = httpd.server_address[:2]
    logger.info("serving model %r versions %s at http://%s:%d/v1/models/%s", ms.model_name,
             sorted(ms.versions), host, port, ms.model_name)
    try:
        httpd.serve_forever()
    except KeyboardInterrupt:
        logger.info("interrupted, shutting down")
    finally:
        httpd.server_close()
    return 0


__all__ = ["DEFAULT_MAX_REQUEST_BYTES", "ModelServer", "RunningServer", "main", "make_http_server",
           "start_server"]
