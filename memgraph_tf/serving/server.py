"""The HTTP layer of ``memgraph-tf serve``: TF Serving's REST API on the waitress WSGI server.

``memgraph-tf serve MODEL_BASE_PATH`` serves every SavedModel found as
``MODEL_BASE_PATH/<version>/`` (any all-digit directory name; ``00000123`` is version 123), ours
or not, with or without the ``MemgraphTf>UnpackBlob`` op. The layers, one module each:

- this module: HTTP/1.1 through `waitress <https://docs.pylonsproject.org/projects/waitress/>`_
  (request parsing, ``Content-Length`` and chunked bodies, keep-alive, ``TCP_NODELAY``, a fixed
  pool of request threads). What it adds: idle connections are closed after ``idle_timeout_s``
  (waitress's ``channel_timeout``); a request's headers and body must arrive within total
  deadlines (``request_header_timeout_s``, ``request_body_timeout_s``), and at the connection
  limit the connection trickling an unfinished request longest is shed to take a new one in
  (slow clients: :class:`_TcpServer`); a body above ``max_request_bytes``
  gets 413; every answer, waitress's own protocol errors included (400 for a malformed request
  line or chunk, 413, 431, 501), is TF Serving's ``{"error": "..."}`` JSON; it binds 127.0.0.1
  unless told otherwise;
- :mod:`.rest_api` -- the REST API's URLs, dispatched to :class:`~.model_server.ModelServer`
  (:mod:`.model_server`: versions, signatures, TF execution; :mod:`.loading`, :mod:`.batching`);
  every status from the one status table (:mod:`.errors`);
- :mod:`.json_parse`, :mod:`.json_examples`, :mod:`.json_tensors` -- JSON <-> tf.Example /
  tensors (``util/json_tensor.cc``);
- :mod:`.node_examples`, :mod:`.neighbourhoods` -- ``{"node_id": ...}`` examples -> blobs, with a
  graph source the caller passes in (the CLI opens it for ``--graph``; this package never imports
  ``memgraph_tf.client``).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import threading
import time
from typing import Any

from waitress import wasyncore
from waitress.adjustments import Adjustments
from waitress.channel import HTTPChannel
from waitress.parser import HTTPRequestParser
from waitress.server import TcpWSGIServer
from waitress.task import ErrorTask, ThreadedTaskDispatcher, WSGITask
from waitress.utilities import RequestEntityTooLarge

from memgraph_tf.errors import (
    EXIT_OK,
    EXIT_USAGE,
    INTERNAL_ERROR_MESSAGE,
    REQUEST_TOO_LARGE_STATUS,
    code_for_http,
    http_reason,
)
from memgraph_tf.serving import access_log, freshness, metrics, rest_api
from memgraph_tf.serving.bundle import RANDOM_SAMPLING
from memgraph_tf.serving.json_parse import DEFAULT_MAX_JSON_DEPTH
from memgraph_tf.serving.model_server import (
    DEFAULT_LOAD_RETRY_INTERVAL_S,
    DEFAULT_MAX_EXAMPLES,
    DEFAULT_MAX_NUM_LOAD_RETRIES,
    DEFAULT_MAX_REQUEST_BYTES,
    BatchingOptions,
    ModelServer,
)

logger = logging.getLogger(__name__)

#: Seconds a connection may stay idle (no bytes in, no request running) before it is closed.
DEFAULT_IDLE_TIMEOUT_S = 60
#: Request threads: TF Serving's ``--rest_api_num_threads`` default is 4 per CPU.
DEFAULT_REST_THREADS = max(8, 4 * (os.cpu_count() or 1))
#: Open connections at most (waitress counts its listening sockets too). At the limit a new
#: connection is accepted by shedding the connection whose unfinished request started longest ago
#: (else the one idle longest); only when every connection has a request queued or running do
#: new ones wait in the listen backlog (see :class:`_TcpServer`).
DEFAULT_CONNECTION_LIMIT = 256
#: Seconds a request's request line and headers may take in total, counted from its first byte
#: (from the connection's opening for a connection's first request) and not reset by each byte
#: (nginx's ``client_header_timeout``, but a total): past it the connection is closed unanswered.
#: A real client sends its headers in one write; 10 s covers a slow link by a wide margin.
DEFAULT_REQUEST_HEADER_TIMEOUT_S = 10.0
#: Seconds a request's body may take in total once its headers are complete (nginx's
#: ``client_body_timeout``, but a total): past it the answer is 408 and the connection is closed.
#: 60 s reads the largest default body (64 MiB) at about 1.1 MB/s.
DEFAULT_REQUEST_BODY_TIMEOUT_S = 60.0


def _json_body(message: str) -> bytes:
    return json.dumps({"error": message}).encode("utf-8")


class _JsonErrorTask(ErrorTask):
    """waitress's answer to a request it could not read (malformed request line or headers,
    bad chunk, body or headers too large, unsupported transfer coding), as ``{"error": ...}``
    JSON instead of waitress's text page; the connection is closed afterwards."""

    def execute(self) -> None:
        e = self.request.error
        code, reason = e.code, e.reason
        if code == 413:
            limit = getattr(self.channel.server, "max_request_bytes", "?")
            message = f"Request body exceeds the server's max_request_bytes={limit}"
        else:
            message = f"{reason}: {e.body}"
        if code >= 500:  # waitress's 501 for a transfer coding it does not know: the request
            code, reason = 400, "Bad Request"  # is at fault, and no input may cost a 5xx
        body = _json_body(message)
        self.status = f"{code} {reason}"
        self.response_headers.append(("Content-Type", "application/json"))
        self.set_close_on_finish()
        self.content_length = len(body)
        self.write(body)


class _Parser(HTTPRequestParser):
    """waitress's request parser, refusing a chunked body as soon as a chunk *announces* more
    bytes than the limit (waitress itself counts only bytes received, so a client announcing a
    huge chunk and stalling would get no answer until the idle timeout)."""

    def received(self, data: bytes) -> int:
        consumed = super().received(data)
        rcv = self.body_rcv
        if self.chunked and rcv is not None and not self.completed and self.error is None:
            max_body = self.adj.max_request_body_size
            if self.body_bytes_received + getattr(rcv, "chunk_remainder", 0) >= max_body:
                self.error = RequestEntityTooLarge(f"exceeds max_body of {max_body}")
                self.completed = True
        return consumed


def _request_timeout_answer(timeout_s: float) -> bytes:
    """The 408 sent, from the event loop, for a body not received within its deadline."""
    body = _json_body(
        f"Request Timeout: the request body was not received within the server's "
        f"request_body_timeout_s={timeout_s:g}"
    )
    head = (
        "HTTP/1.1 408 Request Timeout\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    return head.encode("ascii") + body


class _WsgiTask(WSGITask):
    """waitress's WSGI task, sending the head and a body that fits its ``Content-Length`` in
    one write: waitress writes them one by one (task.py ``write``), and with ``send_bytes`` 1
    each write is a send of its own -- two segments (``TCP_NODELAY``), two wake-ups of the
    client, for every answer."""

    def write(self, data: bytes) -> None:
        if self.wrote_header or not data or not self.complete:
            super().write(data)
            return
        head = self.build_response_header()  # decides chunked_response, close_on_finish
        self.wrote_header = True
        cl = self.content_length
        if not self.has_body or self.chunked_response or cl is None or len(data) > cl:
            self.channel.write_soon(head)
            super().write(data)  # the head is written: waitress's own path for the body
            return
        self.content_bytes_written += len(data)
        self.channel.write_soon(head + data)


class _Channel(HTTPChannel):
    """waitress's connection, timing each request it receives. ``request_started``: when the
    request now being received began (its first byte; the connection's opening for the first
    request), None between requests; ``headers_done``: when that request's headers were complete
    (None before). waitress's own ``last_activity`` is reset by every byte received
    (channel.py ``handle_read``), so its idle timeout alone lets a client that trickles one byte
    at a time hold a connection for ever; these two times are never reset by bytes."""

    error_task_class = _JsonErrorTask
    task_class = _WsgiTask
    parser_class = _Parser
    request_started: float | None = None
    headers_done: float | None = None
    timed_out = False  # a 408 is queued: closed once it is flushed (or at the next check)
    task_sending = False  # a request thread is in write_soon, sending the answer itself

    def __init__(self, server, sock, addr, adj, map=None):
        super().__init__(server, sock, addr, adj, map=map)
        # waitress sets creation_time on opening (channel.py __init__)
        self.request_started = self.creation_time
        self._timed_request = None
        server.newest_channel = self

    def received(self, data: bytes) -> bool:
        # waitress keeps the request being received in self.request (None between requests),
        # and a completed one moves to self.requests (channel.py ``received``)
        if self.request is None and self.request_started is None and data:
            self.request_started = time.time()
        result = super().received(data)
        request = self.request
        if request is None:
            self.request_started = self.headers_done = None
            self._timed_request = None
            return result
        now = time.time()
        if request is not self._timed_request:  # pipelined: a new request began in this data
            if self._timed_request is not None:
                self.request_started = now
            self._timed_request = request
            self.headers_done = None
        if self.headers_done is None and request.headers_finished:
            self.headers_done = now
        return result

    def writable(self) -> bool:
        # waitress's writable is true while any answer is buffered, also while the request
        # thread that buffered it sends it itself (write_soon flushes under the outbuf lock,
        # channel.py): the event loop would poll POLLOUT, get it at once and find the lock
        # held (``_flush_some_if_lockable``), some ten times an answer under concurrent
        # requests, each time taking the GIL from the request thread finishing its send. Not
        # writable while a request thread sends; what it leaves unsent wakes the loop
        # (:meth:`write_soon`).
        if self.task_sending and self.requests:
            return False
        return bool(super().writable())

    def write_soon(self, data) -> int:
        self.task_sending = True
        try:
            return super().write_soon(data)
        finally:
            self.task_sending = False
            if self.total_outbufs_len and self.connected:
                self.server.pull_trigger()  # left unsent (a full socket): the loop's to send

    def _flush_outbufs_below_high_watermark(self) -> None:
        # the request thread waits here for the event loop to drain the buffers (waitress
        # pulls the trigger, then waits on the outbuf lock): the loop must see them writable
        sending, self.task_sending = self.task_sending, False
        try:
            super()._flush_outbufs_below_high_watermark()
        finally:
            self.task_sending = sending

    def sheddable(self) -> bool:
        """True when closing this connection loses no request a worker holds or will hold
        (waitress queues a complete request in ``requests`` and pops it when its answer is
        written, channel.py ``received`` / ``service``) and no answer waits to be sent."""
        return not (
            self.requests
            or self.will_close
            or self.close_when_flushed
            or self.total_outbufs_len
            or not self.connected
        )

    def check_deadlines(self, now: float) -> None:
        """Close this connection if its unfinished request is past a deadline: headers
        incomplete after ``request_header_timeout_s`` -> closed unanswered; body incomplete
        ``request_body_timeout_s`` after the headers -> 408 and closed. A connection with a
        request queued or running is never touched."""
        if self.timed_out:  # the 408 had a full check interval to leave: close regardless
            self.will_close = True
            return
        if self.request_started is None or not self.sheddable():
            return
        server = self.server
        if self.headers_done is None:
            if now - self.request_started >= server.request_header_timeout_s:
                self.will_close = True  # waitress closes it in handle_write (it is writable)
        elif now - self.headers_done >= server.request_body_timeout_s:
            self.timed_out = True
            answer = _request_timeout_answer(server.request_body_timeout_s)
            with self.outbuf_lock:  # as waitress's send_continue writes its 100 Continue
                self.outbufs[-1].append(answer)
                self.current_outbuf_count += len(answer)
                self.total_outbufs_len += len(answer)
            self.close_when_flushed = True  # handle_write flushes, then closes


def _shed_order(channel: _Channel) -> tuple[int, float]:
    """Connections receiving a request go first, the one that started longest ago first (under
    a trickle it would reach its deadline anyway); then idle keep-alive connections, the one
    idle longest first (HTTP lets a server close an idle connection, RFC 9112 section 9.5)."""
    if channel.request_started is not None:
        return (0, channel.request_started)
    return (1, channel.last_activity)


class _TcpServer(TcpWSGIServer):
    """waitress's listening socket, shedding load at the connection limit and enforcing the
    request deadlines.

    waitress stops accepting at ``connection_limit`` (server.py ``readable`` returns False while
    ``len(map) >= connection_limit``), so new clients wait in the kernel's backlog until some
    connection closes -- with hundreds of clients trickling bytes (each byte resets waitress's
    idle timer, channel.py ``handle_read``) a valid request waited 100 s and more. Here, at the
    limit, the listener stays readable while some connection is :meth:`_Channel.sheddable`;
    :meth:`handle_accept` then closes the first in :func:`_shed_order` to make room. Connections
    with a request queued or running are never shed; when all are, waitress's behaviour holds.
    ``max_connections_per_client`` (off by default) caps the connections of one client address:
    a new connection beyond it sheds that client's own first connection in :func:`_shed_order`,
    or is closed at once when all of that client's connections have a request in progress. It
    is off by default because clients behind one proxy or NAT share an address, and because a
    valid client that shares the address of trickling ones (every test client: 127.0.0.1) must
    still get in -- which shedding, not refusing, gives it."""

    channel_class = _Channel
    max_request_bytes: int | None = None  # for _JsonErrorTask's 413 message
    request_header_timeout_s: float = DEFAULT_REQUEST_HEADER_TIMEOUT_S
    request_body_timeout_s: float = DEFAULT_REQUEST_BODY_TIMEOUT_S
    newest_channel: _Channel | None = None
    max_connections_per_client: int | None = None
    shed_count = 0
    refused_count = 0

    def _channels(self):
        # the map is shared by every listener, channel and the trigger (wasyncore)
        return [ch for ch in self._map.values() if isinstance(ch, _Channel)]

    def _shed_candidate(self, exclude: _Channel | None = None) -> _Channel | None:
        candidates = [ch for ch in self._channels() if ch is not exclude and ch.sheddable()]
        return min(candidates, key=_shed_order) if candidates else None

    def _within_client_cap(self, new: _Channel, cap: int) -> bool:
        """Keep ``new`` within ``cap`` connections of its client address: shed that client's
        first connection in :func:`_shed_order` when it has more; close ``new`` (False) when
        none of them can be shed."""
        host = new.addr[0] if new.addr else None
        same = [ch for ch in self._channels() if ch is not new and ch.addr and ch.addr[0] == host]
        if len(same) < cap:
            return True
        candidates = [ch for ch in same if ch.sheddable()]
        if candidates:
            victim = min(candidates, key=_shed_order)
            logger.debug("per-client cap (%d) reached: shedding connection from %s", cap, host)
            self.shed_count += 1  # counted first: a peer may see the close before the next line
            victim.handle_close()
            return True
        logger.debug("per-client cap (%d) reached, every connection busy: refusing %s", cap, host)
        self.refused_count += 1
        new.handle_close()
        return False

    def maintenance(self, now: float) -> None:
        # waitress calls this every cleanup_interval from readable() (server.py); its own closes
        # connections idle for channel_timeout (no request queued or running)
        super().maintenance(now)
        for channel in self.active_channels.values():
            channel.check_deadlines(now)

    def readable(self) -> bool:
        # waitress's readable (server.py), the same maintenance schedule; at the limit the
        # listener stays readable while a connection can be shed (waitress: not readable)
        now = time.time()
        if now >= self.next_channel_cleanup:
            self.next_channel_cleanup = now + self.adj.cleanup_interval
            self.maintenance(now)
        if not self.accepting:
            return False
        if len(self._map) < self.adj.connection_limit or self._shed_candidate() is not None:
            self.in_connection_overflow = False
            return True
        if not self.in_connection_overflow:
            self.in_connection_overflow = True
            logger.warning(
                "connection limit (%d) reached and every connection has a request in progress: "
                "new connections wait in the listen backlog",
                self.adj.connection_limit,
            )
        return False

    def handle_accept(self) -> None:
        self.newest_channel = None
        super().handle_accept()  # accepts one connection and makes its channel (server.py)
        new = self.newest_channel
        if new is None:
            return
        cap = self.max_connections_per_client
        if cap is not None and not self._within_client_cap(new, cap):
            return
        if len(self._map) <= self.adj.connection_limit:
            return
        victim = self._shed_candidate(exclude=new)
        if victim is not None:
            # wasyncore's poll2 looks each ready fd up in the map again, so closing another
            # channel while events are being dispatched is safe (wasyncore.py poll2)
            logger.debug("connection limit reached: shedding connection from %s", victim.addr)
            self.shed_count += 1
            victim.handle_close()


_REST_APIS = {"classify": "Classify", "regress": "Regress", "predict": "Predict"}


def rest_api_name(method: str, path: str) -> str:
    """The ``API`` label of a REST request, as TF Serving's metrics name it: Classify, Regress,
    Predict (``POST ...:verb``), GetModelMetadata (``GET .../metadata``), GetModelStatus (any
    other ``GET``); ``Unknown`` for anything else."""
    m = rest_api.PREDICT_RE.fullmatch(path)
    if method == "POST" and m:
        return _REST_APIS.get(m.group(4).lower(), "Unknown")
    if method == "GET" and rest_api.STATUS_RE.fullmatch(path):
        return "GetModelMetadata" if path.lower().endswith("/metadata") else "GetModelStatus"
    return "Unknown"


class RestApp:
    """The WSGI application: one request -> :func:`.rest_api.handle_bytes`. Answers every
    request with JSON and never raises (a bug becomes a 500 ``{"error": ...}``). With the
    model server's ``metrics_path`` set, ``GET`` on that path answers the Prometheus page
    (:mod:`.metrics`); with its metrics or access log on, every other request is counted, timed
    and logged (:mod:`.access_log`)."""

    def __init__(self, model_server: ModelServer):
        self.model_server = model_server

    def _metrics_page(self, start_response) -> list[bytes]:
        data = self.model_server.metrics.exposition()
        start_response(
            "200 OK", [("Content-Type", metrics.CONTENT_TYPE), ("Content-Length", str(len(data)))]
        )
        return [data]

    @staticmethod
    def _path(environ: dict) -> str:
        # TF Serving matches its URL patterns on the path as sent (percent-encoded) and decodes
        # the model name and label afterwards; REQUEST_URI is that path (plus any query).
        uri = environ.get("REQUEST_URI") or ""
        if not uri.startswith("/"):
            from urllib.parse import quote

            uri = quote(environ.get("PATH_INFO", "/"), safe="/:@!$&'()*+,;=")
        return uri.split("?", 1)[0]

    def __call__(self, environ: dict, start_response) -> list[bytes]:
        ms = self.model_server
        method = environ.get("REQUEST_METHOD", "GET")
        path = self._path(environ)
        if ms.metrics is not None and method == "GET" and path == ms.metrics_path:
            return self._metrics_page(start_response)
        fresh, fresh_token = freshness.begin()
        try:
            if ms.metrics is None and not ms.access_log:
                status, data = self._answer(ms, method, path, environ)
            else:
                record, token = metrics.begin(
                    "REST", rest_api_name(method, path), f"{method} {path}"
                )
                status = 500
                try:
                    status, data = self._answer(ms, method, path, environ)
                finally:
                    metrics.end(token)
                    code = "OK" if 200 <= status < 300 else code_for_http(status)
                    access_log.finish(ms, record, status, code)
        finally:
            freshness.end(fresh_token)
        headers = [("Content-Type", "application/json"), ("Content-Length", str(len(data)))]
        if status == 200:  # a node_id answer: what it reflects (freshness.py)
            headers += fresh.headers()
        start_response(f"{status} {http_reason(status)}", headers)
        return [data]

    @staticmethod
    def _answer(ms, method: str, path: str, environ: dict) -> tuple[int, bytes]:
        """``(status, JSON body)`` for one API request; never raises."""
        try:
            length = int(environ.get("CONTENT_LENGTH") or 0)
            if length > ms.max_request_bytes:
                return REQUEST_TOO_LARGE_STATUS, _json_body(
                    f"Request body of {length} bytes exceeds the server's "
                    f"max_request_bytes={ms.max_request_bytes}"
                )
            body = environ["wsgi.input"].read(length) if length > 0 else b""
            return rest_api.handle_bytes(ms, method, path, body)
        except Exception:  # a bug: the cause goes to the log, never to the client
            logger.exception("internal error in the HTTP layer")
            return 500, _json_body(INTERNAL_ERROR_MESSAGE)


def _check_seconds(name: str, value: Any) -> None:
    """A deadline: a finite number of seconds > 0 (ValueError naming ``name`` otherwise)."""
    if (
        not isinstance(value, (int, float))
        or isinstance(value, bool)
        or not 0 < value < float("inf")
    ):
        raise ValueError(f"{name}: expected a number of seconds > 0, got {value!r}")


class RestServer:
    """A bound (not yet serving) REST server: :meth:`serve_forever` in one thread,
    :meth:`close` from any thread. ``server_address`` is ``(host, port)``, ``url`` its base URL.

    ``threads`` request threads run the model; ``idle_timeout_s`` (whole seconds >= 1) closes
    connections idle that long, checked every second; bodies up to ``max_request_bytes`` (the
    model server's) are read, larger ones get 413 (up to twice the limit the body is read first
    so the client sees the answer; beyond that the connection is closed after the answer).
    A request's headers must arrive within ``request_header_timeout_s`` of its first byte (of the
    connection's opening, for the first request) and its body within ``request_body_timeout_s``
    of its headers, however steadily the bytes come (checked every second); at
    ``connection_limit`` a new connection is taken in by shedding a connection that holds no
    request a worker has (see :class:`_TcpServer`)."""

    def __init__(
        self,
        model_server: ModelServer,
        host: str = "127.0.0.1",
        port: int = 8501,
        *,
        threads: int = DEFAULT_REST_THREADS,
        idle_timeout_s: int = DEFAULT_IDLE_TIMEOUT_S,
        connection_limit: int = DEFAULT_CONNECTION_LIMIT,
        request_header_timeout_s: float = DEFAULT_REQUEST_HEADER_TIMEOUT_S,
        request_body_timeout_s: float = DEFAULT_REQUEST_BODY_TIMEOUT_S,
        max_connections_per_client: int | None = None,
    ):
        if max_connections_per_client is not None and (
            not isinstance(max_connections_per_client, int)
            or isinstance(max_connections_per_client, bool)
            or max_connections_per_client < 1
        ):
            raise ValueError(
                f"max_connections_per_client: expected an int >= 1 or None, got "
                f"{max_connections_per_client!r}"
            )
        for key, value in (
            ("threads", threads),
            ("idle_timeout_s", idle_timeout_s),
            ("connection_limit", connection_limit),
        ):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{key}: expected an int >= 1, got {value!r}")
        _check_seconds("request_header_timeout_s", request_header_timeout_s)
        _check_seconds("request_body_timeout_s", request_body_timeout_s)
        self.app = RestApp(model_server)
        limit = model_server.max_request_bytes
        self.adj = Adjustments(
            host=host,
            port=port,
            threads=threads,
            channel_timeout=idle_timeout_s,
            cleanup_interval=1,
            asyncore_loop_timeout=1,
            asyncore_use_poll=True,
            connection_limit=connection_limit,
            # waitress refuses bodies >= this; the app answers 413 (JSON, connection kept) for
            # bodies between max_request_bytes and here.
            max_request_body_size=limit + max(limit, 1 << 20) + 1,
            ident="memgraph-tf-serve",
            expose_tracebacks=False,
            # keep bodies up to the request limit in memory (waitress spools larger ones to a
            # temporary file; its default of 512 KiB sent every 64-node blob request to disk),
            # and read the socket in 256 KiB pieces (fewer trips through the event loop for a
            # large body)
            inbuf_overflow=max(limit, 8 << 20) + 1,
            recv_bytes=1 << 18,
        )
        self._map: dict = {}
        self._dispatcher = ThreadedTaskDispatcher()
        self._dispatcher.set_thread_count(threads)
        self._servers = [
            _TcpServer(
                self.app, map=self._map, dispatcher=self._dispatcher, adj=self.adj, sockinfo=info
            )
            for info in self.adj.listen
        ]
        for s in self._servers:
            s.max_request_bytes = limit
            s.request_header_timeout_s = float(request_header_timeout_s)
            s.max_connections_per_client = max_connections_per_client
            s.request_body_timeout_s = float(request_body_timeout_s)
        first = self._servers[0]
        self.server_address = (first.effective_host, int(first.effective_port))
        host_text = first.effective_host
        if ":" in host_text:
            host_text = f"[{host_text}]"
        self.url = f"http://{host_text}:{self.server_address[1]}"
        self._stop = threading.Event()
        self._closed = False

    def serve_forever(self) -> None:
        """Serve until :meth:`close` (or KeyboardInterrupt); then release the sockets and stop
        the request threads."""
        try:
            while not self._stop.is_set() and self._map:
                wasyncore.loop(
                    timeout=self.adj.asyncore_loop_timeout, map=self._map, use_poll=True, count=1
                )
        finally:
            self._release()

    def _release(self) -> None:
        if not self._closed:
            self._closed = True
            wasyncore.close_all(self._map)
            self._dispatcher.shutdown(timeout=5)

    def close(self) -> None:
        """Stop serving (wakes the serving thread) and release the port. Safe to call twice."""
        self._stop.set()
        for s in self._servers:
            try:
                s.pull_trigger()
            except OSError:  # already closed
                pass

    def server_close(self) -> None:
        """Release the sockets of a server that never served (or has stopped)."""
        self._stop.set()
        self._release()


class RunningServer:
    """A started REST server (see :func:`start_server`): ``url``, ``port``, ``close()``."""

    def __init__(self, server: RestServer, thread: threading.Thread):
        self.server = server
        self.httpd = server  # older name
        self.thread = thread
        self.port = server.server_address[1]
        self.url = server.url

    def close(self) -> None:
        """Stop serving and release the port."""
        self.server.close()
        self.thread.join(timeout=15)

    def __enter__(self) -> RunningServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def make_http_server(
    model_server: ModelServer, host: str = "127.0.0.1", port: int = 8501, **options: Any
) -> RestServer:
    """A bound :class:`RestServer` answering with ``model_server``; port 0 picks one.
    ``options``: ``threads``, ``idle_timeout_s``, ``connection_limit``,
    ``request_header_timeout_s``, ``request_body_timeout_s``, ``max_connections_per_client``."""
    return RestServer(model_server, host, port, **options)


def start_server(
    model_server: ModelServer, host: str = "127.0.0.1", port: int = 0, **options: Any
) -> RunningServer:
    """Serve ``model_server`` from a background thread; returns once the socket is listening
    (connections made now wait in the backlog until the loop picks them up)."""
    server = make_http_server(model_server, host, port, **options)
    thread = threading.Thread(target=server.serve_forever, name="memgraph-tf-serve", daemon=True)
    thread.start()
    return RunningServer(server, thread)


def _parse_labels(items: list[str] | None) -> dict[str, int]:
    labels = {}
    for item in items or []:
        lbl, sep, ver = item.partition("=")
        if not sep or not lbl or not ver.isdigit():
            raise ValueError(f"--version-label: expected LABEL=VERSION, got {item!r}")
        labels[lbl] = int(ver)
    return labels


def batching_options(args: argparse.Namespace) -> BatchingOptions | None:
    """The ``--enable-batching`` settings of parsed ``serve`` arguments (None when off)."""
    if not getattr(args, "enable_batching", False):
        return None
    defaults = BatchingOptions()

    def pick(name: str) -> int:
        value = getattr(args, name, None)
        return getattr(defaults, name) if value is None else value

    return BatchingOptions(
        max_batch_size=pick("max_batch_size"),
        batch_timeout_micros=pick("batch_timeout_micros"),
        num_batch_threads=pick("num_batch_threads"),
        max_enqueued_batches=pick("max_enqueued_batches"),
    )


def parse_sampling_seed(text: Any) -> int | str | None:
    """``--sampling-seed``: None (not given: the bundle's seed, else
    :data:`~memgraph_tf.serving.bundle.DEFAULT_SEED`), an integer, or ``random``
    (:data:`~memgraph_tf.serving.bundle.RANDOM_SAMPLING`: new neighbourhoods on every request).
    Raises ValueError naming the option for anything else."""
    if text is None or (isinstance(text, int) and not isinstance(text, bool)):
        return text
    value = str(text).strip()
    if value == RANDOM_SAMPLING:
        return value
    try:
        return int(value)
    except ValueError:
        raise ValueError(
            f"--sampling-seed: expected an integer or {RANDOM_SAMPLING!r}, got {text!r}"
        ) from None


def load_retries(args: argparse.Namespace) -> dict[str, Any]:
    """The :class:`ModelServer` load-retry settings of ``--max-num-load-retries`` and
    ``--load-retry-interval-micros`` (TF Serving's flags and defaults); ValueError naming the flag
    for a negative value."""
    retries = getattr(args, "max_num_load_retries", DEFAULT_MAX_NUM_LOAD_RETRIES)
    micros = getattr(args, "load_retry_interval_micros", None)
    if retries < 0:
        raise ValueError(f"--max-num-load-retries: expected an int >= 0, got {retries}")
    if micros is not None and micros < 0:
        raise ValueError(f"--load-retry-interval-micros: expected an int >= 0, got {micros}")
    interval_s = DEFAULT_LOAD_RETRY_INTERVAL_S if micros is None else micros / 1e6
    return {"max_num_load_retries": retries, "load_retry_interval_s": interval_s}


def observability_from_args(args: argparse.Namespace) -> dict[str, Any]:
    """``metrics_path`` (from ``--monitoring-config-file``, as TF Serving: the page is served
    only when that file enables it) and ``access_log`` (``--access-log``, else
    ``MEMGRAPH_TF_ACCESS_LOG``) of parsed ``serve`` arguments."""
    config = getattr(args, "monitoring_config_file", None)
    flag = getattr(args, "access_log", False)
    return {
        "metrics_path": metrics.read_monitoring_config(config) if config else None,
        "access_log": bool(flag) or access_log.enabled_from_env(),
    }


def model_server_from_args(args: argparse.Namespace, graph_source: Any = None) -> ModelServer:
    """The :class:`ModelServer` that ``memgraph-tf serve`` arguments describe (``sampling_seed``,
    when the namespace has it, through :func:`parse_sampling_seed`): with ``--upstream``, the
    gateway (:class:`~.gateway.UpstreamServer`); with ``--model-config-file``, the models it
    lists; else the one model under ``model_base_path``. ``--file-system-poll-wait-seconds``
    (default 1, TF Serving's) polls their base paths."""
    common = {
        "graph_source": graph_source,
        "max_request_bytes": args.max_request_bytes,
        "max_examples": getattr(args, "max_examples", DEFAULT_MAX_EXAMPLES),
        "max_json_depth": getattr(args, "max_json_depth", DEFAULT_MAX_JSON_DEPTH),
        "sampling_seed": parse_sampling_seed(getattr(args, "sampling_seed", None)),
        **observability_from_args(args),
    }
    upstream = getattr(args, "upstream", None)
    config_file = getattr(args, "model_config_file", None)
    if upstream:
        from memgraph_tf.serving import gateway

        if args.model_base_path or config_file:
            raise ValueError(
                "--upstream: the gateway holds no model: give no model_base_path and no "
                "--model-config-file (--bundle PATH reads the sampling settings from a bundle)"
            )
        return gateway.UpstreamServer(
            upstream,
            bundle_path=getattr(args, "bundle", None),
            timeout_s=getattr(args, "upstream_timeout_s", None)
            or gateway.DEFAULT_UPSTREAM_TIMEOUT_S,
            **common,
        )
    if getattr(args, "bundle", None):
        raise ValueError("--bundle: only with --upstream (a local server reads its own bundles)")
    if config_file and args.model_base_path:
        raise ValueError(
            "--model-config-file: give either it or a model_base_path, not both (TF Serving "
            "ignores --model_base_path then; this refuses)"
        )
    if not config_file and not args.model_base_path:
        raise ValueError("expected a model_base_path, --model-config-file or --upstream")
    return ModelServer(
        None if config_file else args.model_base_path,
        None if config_file else args.model_name,
        labels=None if config_file else _parse_labels(getattr(args, "version_label", None)),
        model_config=config_file or None,
        poll_wait_s=getattr(args, "file_system_poll_wait_seconds", None),
        **load_retries(args),
        batching=batching_options(args),
        warmup=getattr(args, "enable_model_warmup", True),
        **common,
    )


def set_tensorflow_threads(intra_op: int = 0, inter_op: int = 0) -> None:
    """Size TensorFlow's thread pools for this process, as TF Serving's
    ``--tensorflow_intra_op_parallelism`` / ``--tensorflow_inter_op_parallelism`` do: ``intra_op``
    threads inside one op, ``inter_op`` threads that run independent ops (and so concurrent model
    calls); 0 leaves TensorFlow's choice. Guarantees: a value equal to the current setting is a
    no-op; otherwise it must run before TensorFlow has run anything in this process. Raises
    ValueError naming the option for a negative or non-int value, or when TensorFlow is already
    running with a different setting."""
    settings = (
        ("--tensorflow-intra-op-parallelism", "intra_op", intra_op),
        ("--tensorflow-inter-op-parallelism", "inter_op", inter_op),
    )
    for option, _, value in settings:
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(
                f"{option}: expected an int >= 0 (0: TensorFlow's choice), got {value!r}"
            )
    if not intra_op and not inter_op:
        return  # TensorFlow's choice: not even an import
    import tensorflow as tf

    config = tf.config.threading
    for option, kind, value in settings:
        get = getattr(config, f"get_{kind}_parallelism_threads")
        if value == 0 or get() == value:
            continue
        try:
            getattr(config, f"set_{kind}_parallelism_threads")(value)
        except RuntimeError as exc:
            raise ValueError(
                f"{option} {value}: TensorFlow is already running in this process "
                f"with {get() or 'its own choice of'} threads ({exc})"
            ) from None
    logger.info(
        "TensorFlow threads: intra-op %s, inter-op %s",
        config.get_intra_op_parallelism_threads() or "TensorFlow's choice",
        config.get_inter_op_parallelism_threads() or "TensorFlow's choice",
    )


class _Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread so that it ends :func:`serve` as Ctrl-C does."""


def _on_sigterm(signum: int, frame: Any) -> None:
    raise _Terminated


def serve(args: argparse.Namespace, graph_source: Any = None) -> int:
    """Load the model ``args`` describe and serve it until interrupted: Ctrl-C (SIGINT) or
    SIGTERM (``kill``, ``docker stop``, systemd) closes the sockets and the models and returns
    ``EXIT_OK`` (0). Errors while loading or binding propagate."""
    set_tensorflow_threads(
        getattr(args, "tensorflow_intra_op_parallelism", 0) or 0,
        getattr(args, "tensorflow_inter_op_parallelism", 0) or 0,
    )
    deadlines = {}
    for key, default in (
        ("request_header_timeout_s", DEFAULT_REQUEST_HEADER_TIMEOUT_S),
        ("request_body_timeout_s", DEFAULT_REQUEST_BODY_TIMEOUT_S),
    ):  # checked before the (slow) model load
        deadlines[key] = getattr(args, key, default)
        _check_seconds("--" + key.replace("_", "-"), deadlines[key])
    ms = model_server_from_args(args, graph_source)
    # waitress warns on every request that waits for a free thread: under load that is the
    # normal state, not news (the CLI's own log would be flooded)
    logging.getLogger("waitress.queue").setLevel(logging.ERROR)
    threads = getattr(args, "rest_api_num_threads", None) or DEFAULT_REST_THREADS
    server = make_http_server(
        ms,
        args.host,
        args.port,
        threads=threads,
        idle_timeout_s=getattr(args, "idle_timeout_s", DEFAULT_IDLE_TIMEOUT_S),
        max_connections_per_client=getattr(args, "max_connections_per_client", None) or None,
        **deadlines,
    )
    grpc_running = None
    if getattr(args, "grpc_port", None) is not None:  # --grpc-port: gRPC over the same ms
        from memgraph_tf.serving import grpc_server

        try:
            grpc_running = grpc_server.start_from_args(ms, args)
        except BaseException:
            server.server_close()
            ms.close()
            raise
    for name, model in getattr(ms, "models", {}).items():
        logger.info(
            "serving model %r versions %s at %s/v1/models/%s%s",
            name,
            sorted(model.versions),
            server.url,
            name,
            f" (batching: {ms.batching})" if ms.batching else "",
        )
    if getattr(ms, "target", None):
        logger.info("gateway at %s in front of the gRPC upstream %s", server.url, ms.target)
    if ms.metrics is not None:
        logger.info("metrics at %s%s", server.url, ms.metrics_path)
    on_main_thread = threading.current_thread() is threading.main_thread()  # signals: main only
    previous = signal.signal(signal.SIGTERM, _on_sigterm) if on_main_thread else None
    try:
        server.serve_forever()
    except KeyboardInterrupt as exc:
        how = "SIGTERM" if isinstance(exc, _Terminated) else "interrupted"
        logger.info("%s, shutting down", how)
    finally:
        if on_main_thread:
            signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)
        server.server_close()
        if grpc_running is not None:
            grpc_running.close()
        ms.close()
    return EXIT_OK


def main(args: argparse.Namespace, graph_source: Any = None) -> int:
    """``memgraph-tf serve`` with a graph source opened by the caller (which also closes it):
    see :func:`serve`."""
    return serve(args, graph_source)


def run_cli(args: argparse.Namespace, open_graph_source: Any) -> int:
    """``memgraph-tf serve`` as the command line runs it: opens ``--graph`` with
    ``open_graph_source(uri)``, serves, closes the source. Guarantees: ``EXIT_OK`` (0) after an
    interrupt; ``EXIT_USAGE`` (2) with one line on stderr (``memgraph-tf serve: ...``) and no
    traceback for any failure before serving starts (a missing or empty model directory, an
    unloadable model, a bad label or limit, a busy port, a graph that cannot be opened). ``-v``
    logs the traceback."""
    import sys

    def fail(message: str) -> int:
        logger.debug("memgraph-tf serve failed", exc_info=True)
        sys.stderr.write(f"memgraph-tf serve: {message}\n")
        return EXIT_USAGE

    source = None
    if getattr(args, "graph", None):
        try:
            source = open_graph_source(args.graph)
        except Exception as exc:  # noqa: BLE001 -- any failure to open is the user's to fix
            return fail(f"--graph: {exc}")  # names the graph, a URI's credentials masked
    try:
        return main(args, source)  # through main: the seam tests replace
    except OSError as exc:
        if getattr(exc, "filename", None) is None and exc.errno is not None:
            return fail(f"cannot listen on {args.host}:{args.port}: {exc.strerror}")
        return fail(str(exc))
    except Exception as exc:  # noqa: BLE001 -- loading errors: ValueError, BundleError, TF's
        return fail(str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__)
    finally:
        if source is not None and hasattr(source, "close"):
            source.close()


__all__ = [
    "DEFAULT_CONNECTION_LIMIT",
    "DEFAULT_IDLE_TIMEOUT_S",
    "DEFAULT_MAX_REQUEST_BYTES",
    "DEFAULT_REQUEST_BODY_TIMEOUT_S",
    "DEFAULT_REQUEST_HEADER_TIMEOUT_S",
    "DEFAULT_REST_THREADS",
    "BatchingOptions",
    "ModelServer",
    "RestApp",
    "RestServer",
    "RunningServer",
    "batching_options",
    "main",
    "make_http_server",
    "model_server_from_args",
    "parse_sampling_seed",
    "run_cli",
    "serve",
    "set_tensorflow_threads",
    "start_server",
]
