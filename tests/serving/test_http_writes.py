"""How the REST server writes its answers (server.py ``_WsgiTask``, ``_Channel``): the head and
the body of an answer leave in one send; the event loop leaves an answer to the request thread
that sends it; an answer larger than the socket's buffers, to a client that reads late, arrives
whole and without a stall; pipelined requests on one connection, the first with an answer above
waitress's 16 MiB high watermark, are each answered in order."""

from __future__ import annotations

import json
import socket
import threading
import time

import pytest


@pytest.fixture(scope="module")
def echo_server(any_rank_base):
    """``serving_default`` of :func:`export_any_rank`: ``s`` echoed as ``s_out``, so an answer
    is as large as its request."""
    from memgraph_tf.serving.model_server import ModelServer
    from memgraph_tf.serving.server import start_server

    with start_server(ModelServer(any_rank_base, "anyrank")) as srv:
        yield srv


def _request(path: str, body: bytes) -> bytes:
    head = f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n\r\n"
    return head.encode("ascii") + body


def _read_answer(sock: socket.socket, buffered: bytes = b"") -> tuple[bytes, bytes, bytes]:
    """One answer from ``sock`` (``buffered``: bytes already read): ``(head, body, rest)``."""
    data = buffered
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(1 << 20)
        assert chunk, f"connection closed before the head ended: {data[:200]!r}"
        data += chunk
    head, _, data = data.partition(b"\r\n\r\n")
    lengths = [
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    ]
    assert len(lengths) == 1, head
    while len(data) < lengths[0]:
        chunk = sock.recv(1 << 20)
        assert chunk, f"connection closed {lengths[0] - len(data)} bytes before the body ended"
        data += chunk
    return head, data[: lengths[0]], data[lengths[0] :]


def test_head_and_body_leave_in_one_send(toy_server):
    # waitress sends the head and the body one by one (two segments with TCP_NODELAY); a
    # client blocked in recv then wakes for the head alone. One send: the first recv has both.
    body = json.dumps({"instances": [[1.0, 2.0, 3.0]]}).encode()
    host, port = toy_server.server.server_address
    with socket.create_connection((host, port), timeout=30) as sock:
        for _ in range(5):
            sock.sendall(_request("/v1/models/toy:predict", body))
            first = sock.recv(1 << 20)
            head, answer, rest = _read_answer(sock, first)
            assert head.startswith(b"HTTP/1.1 200 OK"), (head, answer)
            assert json.loads(answer)["predictions"], answer
            assert rest == b""
            assert len(first) == len(head) + 4 + len(answer), first


def test_a_large_answer_read_late_arrives_whole_and_at_once(echo_server):
    strings = [f"{i:07d}" + "x" * 7993 for i in range(1000)]  # an 8 MB answer
    body = json.dumps({"inputs": {"s": strings, "f": [1.0]}}).encode()
    host, port = echo_server.server.server_address
    with socket.create_connection((host, port), timeout=60) as sock:
        sock.sendall(_request("/v1/models/anyrank:predict", body))
        time.sleep(1.0)  # the server fills the socket's buffers and waits for the client
        start = time.monotonic()
        head, answer, rest = _read_answer(sock)
        took_s = time.monotonic() - start
    assert head.startswith(b"HTTP/1.1 200 OK"), (head, answer)
    assert json.loads(answer)["outputs"]["s_out"] == strings
    assert rest == b""
    # what the socket's buffers could not take is the event loop's to send as the client
    # reads, at once: not after the loop's 1 s poll timeout
    assert took_s < 0.9, took_s


def test_pipelined_requests_after_an_answer_above_the_high_watermark(echo_server):
    strings = ["y" * 17_000] * 1000  # a 17 MB answer: above waitress's 16 MiB high watermark
    big = json.dumps({"inputs": {"s": strings, "f": [1.0]}}).encode()
    small = json.dumps({"inputs": {"s": ["z"], "f": [2.0, 3.0]}}).encode()
    host, port = echo_server.server.server_address
    with socket.create_connection((host, port), timeout=60) as sock:
        # sent from a thread: the server reads the next request only once an answer has left
        payload = _request("/v1/models/anyrank:predict", big) * 2
        sender = threading.Thread(
            target=sock.sendall,
            args=(payload + _request("/v1/models/anyrank:predict", small),),
            daemon=True,
        )
        sender.start()
        time.sleep(1.0)
        rest = b""
        for expected, f_sum in ((strings, 1.0), (strings, 1.0), (["z"], 5.0)):
            head, answer, rest = _read_answer(sock, rest)
            assert head.startswith(b"HTTP/1.1 200 OK"), (head, answer)
            outputs = json.loads(answer)["outputs"]
            assert outputs["s_out"] == expected
            assert outputs["f_sum"] == f_sum
        assert rest == b""
        sender.join(timeout=60)


def test_the_event_loop_leaves_an_answer_its_request_thread_sends(toy_server, recorded_calls):
    # waitress's loop polled a connection writable while the request thread was sending its
    # answer under the outbuf lock, and spun on it (the lock held, nothing to do) until the
    # send ended -- under concurrent requests, a dozen times an answer, each time taking the
    # GIL from the request thread; not writable while the request thread sends, it writes
    # for no such answer
    from waitress.channel import HTTPChannel  # the server's connections' base class

    body = json.dumps({"instances": [[1.0, 2.0, 3.0]] * 50}).encode()
    host, port = toy_server.server.server_address
    failures: list[str] = []

    def client() -> None:
        with socket.create_connection((host, port), timeout=30) as sock:
            for _ in range(100):
                sock.sendall(_request("/v1/models/toy:predict", body))
                head, answer, _ = _read_answer(sock)
                if not head.startswith(b"HTTP/1.1 200 OK"):
                    failures.append(repr((head, answer)))

    with recorded_calls(HTTPChannel, "handle_write", lambda ch: bool(ch.requests)) as seen:
        threads = [threading.Thread(target=client) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
    assert not failures, failures[:3]
    assert not any(seen), f"{sum(seen)} writes by the event loop during a request"
