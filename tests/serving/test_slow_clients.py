"""Slow clients: connections that trickle a request one byte at a time.

waitress resets a connection's idle timer on every byte received (channel.py ``handle_read``
sets ``last_activity``) and stops accepting at its connection limit (server.py ``readable``
returns False while ``len(map) >= connection_limit``), so 260 trickling connections would hold
every slot and a valid request would wait in the listen backlog. The server
closes a request whose headers (or body) are not complete within a total deadline, and at the
limit takes a new connection in by shedding the connection whose unfinished request started
longest ago -- never one with a request a worker holds (memgraph_tf/serving/server.py
``_TcpServer``)."""

from __future__ import annotations

import json
import resource
import socket
import threading
import time

import pytest
import requests

from memgraph_tf.serving.server import (
    DEFAULT_CONNECTION_LIMIT,
    DEFAULT_REQUEST_BODY_TIMEOUT_S,
    DEFAULT_REQUEST_HEADER_TIMEOUT_S,
    RestServer,
    start_server,
)

CLASSIFY = {"signature_name": "classify", "examples": [{"x": [1.0, 2.0, 3.0]}]}
REQUEST_LINE = b"POST /v1/models/toy:classify HTTP/1.1\r\n"


@pytest.fixture(scope="module")
def toy_model_server(toy_base):
    from memgraph_tf.serving.model_server import ModelServer

    ms = ModelServer(toy_base, "toy")
    yield ms
    ms.close()


@pytest.fixture
def enough_fds():
    """300 client sockets plus as many server ends, in this one process."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = 2048 if hard == resource.RLIM_INFINITY else min(hard, 2048)
    if soft != resource.RLIM_INFINITY and soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    if resource.getrlimit(resource.RLIMIT_NOFILE)[0] < 1024:
        pytest.skip("needs 1024 file descriptors")
    yield
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


class Tricklers:
    """``n`` raw connections, each sending ``opening`` and then one byte every ``every_s``
    seconds (a header line that never ends). Send errors (a shed connection) are ignored."""

    def __init__(self, port: int, n: int, every_s: float, opening: bytes = REQUEST_LINE):
        self.socks = []
        for _ in range(n):
            sock = socket.create_connection(("127.0.0.1", port), timeout=10)
            sock.sendall(opening)  # the kernel takes it even while the connection is queued
            self.socks.append(sock)
        self._stop = threading.Event()
        self._every_s = every_s
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self._every_s):
            for sock in self.socks:
                try:
                    sock.send(b"X")
                except OSError:
                    pass

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        for sock in self.socks:
            sock.close()


def _channels(srv) -> int:
    dispatchers = list(srv.server._map.values())  # one C-level copy: the loop thread mutates it
    return sum(1 for ch in dispatchers if hasattr(ch, "request_started"))


def _wait_for(condition, limit_s: float, what: str) -> None:
    end = time.monotonic() + limit_s
    while not condition():
        assert time.monotonic() < end, f"timed out waiting for {what}"
        time.sleep(0.05)


def _closed_after(sock: socket.socket, limit_s: float, keep_sending: bool) -> tuple[float, bytes]:
    """(seconds until the server closes ``sock``, what it sent before closing); one byte every
    0.2 s meanwhile when ``keep_sending``."""
    start = time.monotonic()
    received = b""
    sock.settimeout(0.2)
    while True:
        assert time.monotonic() - start < limit_s, f"still open after {limit_s} s"
        try:
            chunk = sock.recv(65536)
        except TimeoutError:
            if keep_sending:
                try:
                    sock.send(b"X")
                except OSError:  # closed between two reads
                    return time.monotonic() - start, received
            continue
        except ConnectionResetError:
            return time.monotonic() - start, received
        if not chunk:
            return time.monotonic() - start, received
        received += chunk


# ------------------------------------------------------------------------- the acceptance test
def test_a_valid_request_is_answered_while_300_connections_trickle(toy_model_server, enough_fds):
    """300 connections (the limit is 256) each send a request line and then a header byte every
    2 s; the header deadline is set far out (60 s), so only shedding can make room. A valid
    :classify on a new connection is answered in < 2 s, and the connections shed are the oldest
    tricklers, not the request."""
    with start_server(toy_model_server, request_header_timeout_s=60) as srv:
        assert srv.server.adj.connection_limit == DEFAULT_CONNECTION_LIMIT == 256
        tricklers = Tricklers(srv.port, 300, every_s=2.0)
        try:
            # the server is full of trickling connections: 254 (waitress counts its listener and
            # wake-up pipe in the limit), and it shed 46 to take in the rest of the 300
            listener = srv.server._servers[0]
            _wait_for(lambda: listener.shed_count >= 300 - 254, 30, "all 300 to be accepted")
            assert _channels(srv) == 254
            time.sleep(2.5)  # every trickler has sent another byte: none is idle
            shed_before = listener.shed_count
            start = time.monotonic()
            r = requests.post(f"{srv.url}/v1/models/toy:classify", json=CLASSIFY, timeout=30)
            took = time.monotonic() - start
            assert r.status_code == 200, r.text
            assert len(r.json()["results"]) == 1
            assert took < 2.0, f"classify took {took:.2f} s"
            assert listener.shed_count > shed_before  # room was made for it
            # the first trickler (oldest unfinished request) was among those shed
            first = tricklers.socks[0]
            first.settimeout(5)
            try:
                assert first.recv(1) == b""
            except ConnectionResetError:
                pass
        finally:
            tricklers.close()


class _BlockingModelServer:
    """Stands in for ModelServer behind the REST routing (:func:`_route_to_stand_in`): ``/block``
    waits for ``release``; anything else is 200."""

    max_request_bytes = 1 << 20
    metrics = None  # no metrics page and no access log, as ModelServer without either
    access_log = False

    def __init__(self):
        self.release = threading.Event()
        self.entered = threading.Event()

    def handle_bytes(self, method: str, path: str, body: bytes):
        if path == "/block":
            self.entered.set()
            self.release.wait(30)
            return 200, b'{"blocked": "done"}'
        return 200, b'{"ok": true}'


@pytest.fixture
def _route_to_stand_in(monkeypatch):
    """The HTTP server's REST routing (``rest_api.handle_bytes``) handed to the stand-in's."""
    from memgraph_tf.serving import rest_api

    monkeypatch.setattr(rest_api, "handle_bytes", lambda ms, *request: ms.handle_bytes(*request))


@pytest.mark.usefixtures("_route_to_stand_in")
def test_a_request_being_processed_is_never_shed():
    """With a limit of 10 (8 connections), a request a worker holds survives 20 trickling
    connections and a valid request arriving after them; it gets its answer when released."""
    ms = _BlockingModelServer()
    server = RestServer(ms, "127.0.0.1", 0, connection_limit=10, request_header_timeout_s=60)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = server.url
    try:
        with socket.create_connection(("127.0.0.1", server.server_address[1]), timeout=30) as held:
            held.sendall(b"GET /block HTTP/1.1\r\nHost: x\r\n\r\n")
            assert ms.entered.wait(10)
            tricklers = Tricklers(server.server_address[1], 20, every_s=0.5)
            try:
                r = requests.get(f"{url}/other", timeout=30)
                assert r.status_code == 200 and r.json() == {"ok": True}
                assert server._servers[0].shed_count > 0
                ms.release.set()
                data = b""
                while b'"done"' not in data:
                    chunk = held.recv(65536)
                    assert chunk, f"the held request's connection was closed: {data!r}"
                    data += chunk
                assert data.startswith(b"HTTP/1.1 200 ")
            finally:
                tricklers.close()
    finally:
        ms.release.set()
        server.close()
        thread.join(timeout=15)


@pytest.mark.usefixtures("_route_to_stand_in")
def test_the_per_client_cap_sheds_that_client_s_own_tricklers_then_refuses():
    """``max_connections_per_client=3`` (off by default): 6 trickling connections from one
    address leave 3 open (each new one sheds that client's oldest); a valid request from the
    same address still gets in by shedding one; with 3 requests a worker holds, a 4th connection
    is closed at once, unanswered, and the held ones get their answers."""
    ms = _BlockingModelServer()
    server = RestServer(
        ms, "127.0.0.1", 0, threads=4, request_header_timeout_s=60, max_connections_per_client=3
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    port = server.server_address[1]
    listener = server._servers[0]
    running = type("Running", (), {"server": server})  # what _channels reads
    try:
        tricklers = Tricklers(port, 6, every_s=0.5)
        try:
            _wait_for(lambda: listener.shed_count >= 3, 10, "6 connections to be accepted")
            _wait_for(lambda: _channels(running) == 3, 10, "3 open connections")
            r = requests.get(f"{server.url}/other", headers={"Connection": "close"}, timeout=10)
            assert r.status_code == 200 and r.json() == {"ok": True}
            assert listener.shed_count >= 4
        finally:
            tricklers.close()
        _wait_for(lambda: _channels(running) == 0, 10, "the tricklers' connections to close")
        held = [socket.create_connection(("127.0.0.1", port), timeout=30) for _ in range(3)]
        for sock in held:
            sock.sendall(b"GET /block HTTP/1.1\r\nHost: x\r\n\r\n")

        def held_by_workers() -> bool:  # each complete request queued or running (waitress)
            chans = [c for c in list(server._map.values()) if hasattr(c, "request_started")]
            return len(chans) == 3 and all(c.requests for c in chans)

        _wait_for(held_by_workers, 10, "3 held requests")
        with socket.create_connection(("127.0.0.1", port), timeout=10) as extra:
            _, sent = _closed_after(extra, 10, keep_sending=False)
        assert sent == b""
        _wait_for(lambda: listener.refused_count == 1, 5, "the refusal to be counted")
        ms.release.set()
        for sock in held:
            data = b""
            while b'"done"' not in data:
                chunk = sock.recv(65536)
                assert chunk, f"a held request's connection was closed: {data!r}"
                data += chunk
            sock.close()
    finally:
        ms.release.set()
        server.close()
        thread.join(timeout=15)
    with pytest.raises(ValueError, match=r"max_connections_per_client: expected an int >= 1"):
        RestServer(ms, "127.0.0.1", 0, max_connections_per_client=0)


# ------------------------------------------------------------------------------- the deadlines
@pytest.fixture(scope="module")
def short_deadlines(toy_model_server):
    """1 s deadlines for headers and body; the idle timeout (60 s) is far beyond them."""
    with start_server(
        toy_model_server, request_header_timeout_s=1, request_body_timeout_s=1, idle_timeout_s=60
    ) as srv:
        yield srv


@pytest.mark.parametrize("opening", [b"", REQUEST_LINE])
def test_trickled_headers_are_closed_at_the_deadline_unanswered(short_deadlines, opening):
    """A byte every 0.2 s resets the idle timer each time, yet the connection is closed once its
    headers are 1 s late (checked every second), without an answer (nothing worth answering
    arrived: nginx closes too, ngx_http_request.c
    ``ngx_http_process_request_line`` calls ``ngx_http_close_request(r, 408)``)."""
    with socket.create_connection(("127.0.0.1", short_deadlines.port), timeout=10) as sock:
        sock.sendall(opening)
        waited, answer = _closed_after(sock, 15.0, keep_sending=True)
    assert 0.9 <= waited < 10.0
    assert answer == b""


def test_a_trickled_body_gets_408_at_the_deadline(short_deadlines):
    with socket.create_connection(("127.0.0.1", short_deadlines.port), timeout=10) as sock:
        sock.sendall(REQUEST_LINE + b"Host: x\r\nContent-Length: 100\r\n\r\n{")
        waited, answer = _closed_after(sock, 15.0, keep_sending=True)
    assert 0.9 <= waited < 10.0
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 408 Request Timeout\r\n")
    assert b"Connection: close" in head
    assert json.loads(body) == {
        "error": "Request Timeout: the request body was not received within the server's "
        "request_body_timeout_s=1"
    }


def test_the_deadline_of_a_later_request_starts_at_its_first_byte(short_deadlines):
    """Between requests a keep-alive connection is idle (the idle timeout's business), not late:
    a request sent 1.5 s after the previous answer is answered."""
    with requests.Session() as session:
        url = f"{short_deadlines.url}/v1/models/toy:classify"
        assert session.post(url, json=CLASSIFY, timeout=10).status_code == 200
        time.sleep(1.5)
        r = session.post(url, json=CLASSIFY, timeout=10)
        assert r.status_code == 200, r.text


def test_a_request_sent_whole_is_answered_under_short_deadlines(short_deadlines):
    r = requests.post(f"{short_deadlines.url}/v1/models/toy:classify", json=CLASSIFY, timeout=10)
    assert r.status_code == 200 and len(r.json()["results"]) == 1


def test_the_defaults_and_their_checks(toy_model_server):
    assert (DEFAULT_REQUEST_HEADER_TIMEOUT_S, DEFAULT_REQUEST_BODY_TIMEOUT_S) == (10.0, 60.0)
    for bad in (0, -1, float("inf"), float("nan"), True, "5"):
        with pytest.raises(ValueError, match=r"^request_body_timeout_s: expected a number of "):
            RestServer(toy_model_server, "127.0.0.1", 0, request_body_timeout_s=bad)
    with pytest.raises(
        ValueError, match=r"^request_header_timeout_s: expected a number of seconds > 0, got 0$"
    ):
        RestServer(toy_model_server, "127.0.0.1", 0, request_header_timeout_s=0)


def test_the_serve_options_parse():
    from memgraph_tf.cli import build_parser

    args = build_parser().parse_args(["serve", "base"])
    assert (args.request_header_timeout_s, args.request_body_timeout_s) == (10.0, 60.0)
    args = build_parser().parse_args(
        ["serve", "base", "--request-header-timeout-s", "2.5", "--request-body-timeout-s", "30"]
    )
    assert (args.request_header_timeout_s, args.request_body_timeout_s) == (2.5, 30.0)
    assert args.max_connections_per_client == 0  # off
    args = build_parser().parse_args(["serve", "base", "--max-connections-per-client", "16"])
    assert args.max_connections_per_client == 16
