"""Served ``{"node_id": N}`` classify requests whose neighbourhood reaches a hub, in the bounded
mode (memgraph_tf/procedures/reservoir.py): p50 / p99 latency at ``--clients`` concurrent clients.

The graph (embedded, in the server's process): a hub with ``--degree`` leaves
(``hub -[:E]-> leaf``, all ``:N`` with an 8-float ``features`` property) and a star of 10 leaves
(the reference). The reservoirs (R = ``--capacity``) are built by ``tf_features.build_reservoirs``
before the server starts. The model: an untrained seeded GraphSAGE (fanouts 10, 10; 8 features;
4 classes) exported with the op decoder and ``sample_options``
``{"seed": 1, "reservoir_threshold": R}``, served over that graph (REST) by a ``ModelServer`` in a
child process, as a served model runs apart from its clients (the graph, which stands in for
the database, frozen out of Python's garbage collection once built); the clients are threads of this
process, one kept-alive connection each, with a light HTTP/1.1 client (each request's bytes
written before the row starts, sent with one ``sendall``, the answer read by its
``Content-Length``: ``http.client`` parses every answer's head with the email parser, CPU
taken from the cores the clients share with the server). Each row runs once without and once
with server-side batching
(``--enable-batching``: concurrent node-id fetches and model calls merged; a batch of at most
``--clients`` examples, timeout 0, ``--batch-threads`` batch threads: ``memgraph-tf serve
--enable-batching --max-batch-size 8 --batch-timeout-micros 0 --num-batch-threads 1``). The
requests: node ids of leaves of the hub (their 2-hop neighbourhood draws from the hub at hop 2)
and the hub itself, in turn; the reference rows ask the same of the degree-10 star in the same
run. Each row: requests, p50 / p99 ms, the CPU time per request of the server process (Linux)
and of the clients (this process), errors (must be zero), and on a batching row the tasks
(node-id fetches and model calls) per batch. With ``--baseline REV`` the ``memgraph_tf`` of
commit ``REV`` (``git archive``, first on its server's path) serves the same rows from a
server process of its own: each row runs for the baseline, then for this checkout, and the
ratios this checkout / baseline (mean of the rows) close the table. With ``--tf-threads N`` a
second server of this checkout runs TensorFlow with N inter-op and N intra-op threads (set
before its first op) and is compared with the default server the same way. Then, for reference, one
request from the hub in the exact mode (a bundle without ``reservoir_threshold``): what the
bounded mode avoids.

    .venv/bin/python benchmarks/hub_serving.py [--degree 1000000] [--clients 8] [--duration-s 10]
        [--batch-threads 1] [--cpus 0,1]  # pin the server and the clients to these CPUs
        [--baseline main]  # the same rows served by commit main's memgraph_tf, in the same run
        [--tf-threads 1]  # the same rows served with TensorFlow's thread pools of 1, same run
"""

from __future__ import annotations

import argparse
import gc
import http.client
import json
import multiprocessing
import os
import pathlib
import random
import socket
import sys
import tempfile
import threading
import time
import urllib.parse
from typing import Any

from _options import number_options  # beside this file (the script's directory is on sys.path)

BASE_DEGREE = 10
FEATURES = 8


def build_graph(degree: int) -> tuple[Any, dict[int, int], dict[int, list[int]]]:
    """(graph, degree -> hub id, degree -> some of its leaves' ids)."""
    from memgraph_tf.embedded import EmbeddedGraph

    rng = random.Random(0)
    g = EmbeddedGraph(default_memory_limit_bytes=None, count_api_calls=False)
    hubs, leaves = {}, {}
    for d in (BASE_DEGREE, degree):
        hub = g.add_node(["N"], {"features": [rng.random() for _ in range(FEATURES)]})
        hubs[d] = hub
        found = []
        for i in range(d):
            leaf = g.add_node(["N"], {"features": [rng.random() for _ in range(FEATURES)]})
            g.add_edge(hub, leaf, "E")
            if i < 64:
                found.append(leaf)
        leaves[d] = found
    return g, hubs, leaves


def export(base: pathlib.Path, name: str, options: dict[str, Any]) -> pathlib.Path:
    import tensorflow as tf

    from memgraph_tf.client.graphsage import GraphSAGE
    from memgraph_tf.serving.export import export_bundle

    tf.keras.utils.set_random_seed(0)
    model = GraphSAGE([10, 10], FEATURES, 4, hidden_units=16, class_names=list("abcd"))
    info = export_bundle(model, base, name, 1, use_op=True, sample_options=options)
    return info.path.parent


def pin(cpus: str | None) -> None:
    if cpus:
        os.sched_setaffinity(0, {int(c) for c in cpus.split(",")})


def open_graph(args: argparse.Namespace) -> tuple[Any, dict[str, Any]]:
    """The graph, its reservoirs, frozen out of Python's garbage collection (it stands in for
    the database, which keeps it outside the server's heap: its million objects are no longer
    walked on every collection): ``(EmbeddedSource, {hubs, leaves, text})``."""
    from memgraph_tf.client import EmbeddedSource

    t0 = time.perf_counter()
    g, hubs, leaves = build_graph(args.degree)
    t1 = time.perf_counter()
    [page] = g.call(
        "tf_features.build_reservoirs",
        {"capacity": args.capacity, "seed": 1, "batch_nodes": g.node_count + 1},
    )
    text = (
        f"graph: {g.node_count:,} nodes in {t1 - t0:.1f} s; {page['reservoirs']} reservoirs of "
        f"{args.capacity} in {time.perf_counter() - t1:.1f} s"
    )
    gc.collect()
    gc.freeze()
    return EmbeddedSource(g), {"hubs": hubs, "leaves": leaves, "text": text}


def database(conn: Any, args: argparse.Namespace) -> None:
    """The database process (``--graph-process``): the graph; sends ``{hubs, leaves, text}``,
    then answers ``(method, args)`` calls of its source with ``("ok", result)`` or
    ``("error", exception)`` until it receives None."""
    pin(args.cpus)
    source, info = open_graph(args)
    conn.send(info)
    while (call := conn.recv()) is not None:
        method, call_args = call
        try:
            conn.send(("ok", getattr(source, method)(*call_args)))
        except Exception as exc:  # noqa: BLE001 -- the caller's to raise
            conn.send(("error", exc))


class ProcessSource:
    """The graph source of a server whose graph runs in :func:`database`'s process, as a
    database runs apart from the server: each call is sent over ``conn`` (one at a time) and
    its answer, or its error, comes back."""

    def __init__(self, conn: Any):
        self.conn = conn
        self.lock = threading.Lock()

    def sample_blobs_per_node(self, ids, fanouts, properties, options) -> list[bytes]:
        """The database source's ``sample_blobs_per_node`` (its errors raised here)."""
        with self.lock:
            self.conn.send(("sample_blobs_per_node", (ids, fanouts, properties, options)))
            kind, value = self.conn.recv()
        if kind == "error":
            raise value
        return value


def serve(
    conn: Any, args: argparse.Namespace, package: str | None = None, tf_threads: int | None = None
) -> None:
    """The server process: the graph (or, with ``--graph-process``, a connection to the
    database process it starts) and three servers over it (bounded; bounded with batching;
    exact); sends ``{urls, hubs, leaves, text, database}`` (the database process's id, or None)
    and serves until ``conn`` says stop. ``package``: a directory put first on the path, whose
    ``memgraph_tf`` serves (a baseline's; None: this checkout's). ``tf_threads``: TensorFlow's
    inter-op and intra-op threads (None: its defaults), set before its first op."""
    if package is not None:
        sys.path.insert(0, package)
    if tf_threads is not None:
        import tensorflow as tf

        tf.config.threading.set_inter_op_parallelism_threads(tf_threads)
        tf.config.threading.set_intra_op_parallelism_threads(tf_threads)
    pin(args.cpus)
    from memgraph_tf.serving.batching import BatchingOptions
    from memgraph_tf.serving.model_server import ModelServer
    from memgraph_tf.serving.server import start_server

    db = None
    if args.graph_process:
        here, there = multiprocessing.Pipe()
        db = multiprocessing.get_context("spawn").Process(target=database, args=(there, args))
        db.start()
        info = here.recv()
        source: Any = ProcessSource(here)
    else:
        source, info = open_graph(args)
    batching = BatchingOptions(
        max_batch_size=args.clients,
        batch_timeout_micros=0,
        num_batch_threads=args.batch_threads,
    )
    with tempfile.TemporaryDirectory(prefix="memgraph-tf-hub-serving-") as tmp:
        bounded = export(
            pathlib.Path(tmp) / "bounded", "hub", {"seed": 1, "reservoir_threshold": args.capacity}
        )
        exact = export(pathlib.Path(tmp) / "exact", "hub", {"seed": 1})
        servers = {
            "bounded": ModelServer(bounded, graph_source=source, warmup=False),
            "bounded, batching": ModelServer(
                bounded, graph_source=source, warmup=False, batching=batching
            ),
            "exact": ModelServer(exact, graph_source=source, warmup=False),
        }
        running = {k: start_server(ms, threads=args.clients) for k, ms in servers.items()}
        conn.send(
            {"urls": {k: r.url for k, r in running.items()}, **info, "database": db and db.pid}
        )
        batcher = servers["bounded, batching"].batcher
        while conn.recv() == "batches":  # else: stop
            conn.send((batcher.batches_run, batcher.tasks_run))
        for r in running.values():
            r.close()
    if db is not None:
        here.send(None)
        db.join(timeout=60)


def _answer(sock: socket.socket, buf: bytearray) -> tuple[int, bytes, bool]:
    """One answer read from ``sock`` (``buf``: bytes received past the last answer, kept for
    the next): ``(status, body, whether the server closes the connection)``. The server's
    answers carry ``Content-Length``."""
    while (end := buf.find(b"\r\n\r\n")) < 0:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("the server closed the connection before an answer")
        buf += chunk
    head = bytes(buf[:end]).lower()
    del buf[: end + 4]
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip() == b"content-length":
            length = int(value)
    while len(buf) < length:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("the server closed the connection within an answer")
        buf += chunk
    body = bytes(buf[:length])
    del buf[:length]
    return int(head[9:12]), body, b"\r\nconnection: close" in head


def load(url: str, model: str, ids: list[int], clients: int, duration_s: float) -> dict:
    """``clients`` threads posting one node id each per request, in turn, for ``duration_s``,
    each over its own kept-alive connection. A light HTTP/1.1 client (the request's bytes
    written before the row starts, one ``sendall`` a request, the answer read by its
    ``Content-Length``): ``http.client`` parses each answer's head with the email parser, a
    CPU cost on the cores the server shares that is the clients', not the server's."""
    latencies: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()
    where = urllib.parse.urlsplit(url)
    address = (where.hostname, where.port)
    stop = time.perf_counter() + duration_s

    head = f"POST /v1/models/{model}:classify HTTP/1.1\r\nHost: {where.netloc}\r\n"
    head += "Content-Type: application/json\r\n"
    requests = []
    for i in ids:
        body = json.dumps({"examples": [{"node_id": i}]}).encode()
        requests.append(f"{head}Content-Length: {len(body)}\r\n\r\n".encode() + body)

    def client(k: int) -> None:
        sock = socket.create_connection(address, timeout=60)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        buf = bytearray()
        i = k
        mine, bad = [], []
        while time.perf_counter() < stop:
            t0 = time.perf_counter()
            sock.sendall(requests[i % len(requests)])
            status, text, closing = _answer(sock, buf)
            mine.append(time.perf_counter() - t0)
            if status != 200:
                bad.append(text[:200].decode(errors="replace"))
            if closing:
                sock.close()
                sock, buf = socket.create_connection(address, timeout=60), bytearray()
            i += clients
        sock.close()
        with lock:
            latencies.extend(mine)
            errors.extend(bad)

    threads = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    latencies.sort()

    def pct(q: float) -> float:
        return latencies[min(len(latencies) - 1, int(q * len(latencies)))] * 1e3

    return {"requests": len(latencies), "p50": pct(0.50), "p99": pct(0.99), "errors": errors}


def cpu_s(pid: int) -> float:
    """CPU seconds (user + system) process ``pid`` has used so far; NaN where /proc has none."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Child:
    """A server process of :func:`serve` (``package``: a baseline's ``memgraph_tf`` first on its
    path; None: this checkout's), once it has sent its ``{urls, hubs, leaves, text, database}``."""

    def __init__(
        self,
        label: str,
        args: argparse.Namespace,
        package: str | None,
        tf_threads: int | None = None,
    ):
        self.label = label
        self.conn, there = multiprocessing.Pipe()
        self.proc = multiprocessing.get_context("spawn").Process(
            target=serve, args=(there, args, package, tf_threads)
        )
        self.proc.start()

    def ready(self) -> None:
        info = self.conn.recv()
        self.text, self.urls, self.db = info["text"], info["urls"], info["database"]
        self.hubs = {int(k): v for k, v in info["hubs"].items()}
        self.leaves = {int(k): v for k, v in info["leaves"].items()}

    def batches(self) -> tuple[int, int]:
        """The batching server's (batches run, tasks run) so far."""
        self.conn.send("batches")
        return self.conn.recv()

    def close(self) -> None:
        if self.proc.is_alive():
            try:
                self.conn.send("stop")
            except OSError:
                pass
        self.proc.join(timeout=60)
        if self.proc.is_alive():
            self.proc.kill()


def row(args: argparse.Namespace, child: Child, name: str, d: int) -> dict:
    """One row: ``load`` of the server ``name`` of ``child`` around the hub of degree ``d``,
    printed with the CPU time per request of the server (and of its database process) and
    of the clients (this process), and the tasks per batch of a batching row."""
    batches, tasks = child.batches()
    cpu, db_cpu = cpu_s(child.proc.pid), cpu_s(child.db) if child.db else 0.0
    clients_cpu = time.process_time()
    r = load(
        child.urls[name], "hub", [child.hubs[d], *child.leaves[d]], args.clients, args.duration_s
    )
    n = max(1, r["requests"])
    clients_cpu = (time.process_time() - clients_cpu) / n * 1e3
    batches_after, tasks_after = child.batches()
    per_batch = (tasks_after - tasks) / max(1, batches_after - batches)
    batch_text = f"  {per_batch:3.1f} tasks/batch" if batches_after > batches else ""
    r["cpu"] = (cpu_s(child.proc.pid) - cpu) / n * 1e3
    db_text = f" + database {(cpu_s(child.db) - db_cpu) / n * 1e3:4.2f}" if child.db else ""
    who = f"{child.label}: " if args.baseline or args.tf_threads else ""
    print(
        f"  {who}{name + ',':18} hub degree {d:>9,}: {r['requests']:6,} requests "
        f"({r['requests'] / args.duration_s:5.0f}/s)  p50 {r['p50']:6.1f} ms  "
        f"p99 {r['p99']:6.1f} ms  CPU: server {r['cpu']:4.2f}{db_text}, clients "
        f"{clients_cpu:4.2f} ms/request  errors {len(r['errors'])}{batch_text} "
        f"(load {os.getloadavg()[0]:.1f})"
    )
    return r


def mean(rs: list[dict], key: str) -> float:
    return sum(r[key] for r in rs) / len(rs)


def rows(args: argparse.Namespace, children: list[Child]) -> int:
    """The bounded rows (star and hub, without and with batching, twice; with ``--baseline``
    each row for the baseline's server, then for this checkout's), then the ratios this
    checkout / baseline of the mean requests/s, p99 and server CPU; the error count."""
    for child in children:  # warm-up: the model's first calls trace it
        for name in ("bounded", "bounded, batching"):
            for d in (BASE_DEGREE, args.degree):
                load(child.urls[name], "hub", [child.hubs[d], *child.leaves[d]], args.clients, 1.0)
    print(
        f"{args.clients} clients, {args.duration_s:g} s per row, one node id per request; "
        f"batching: at most {args.clients} examples, timeout 0, {args.batch_threads} batch threads"
    )
    seen: dict[tuple[str, str, int], list[dict]] = {}
    for d in (BASE_DEGREE, args.degree, BASE_DEGREE, args.degree):
        for name in ("bounded", "bounded, batching"):
            for child in children:
                seen.setdefault((child.label, name, d), []).append(row(args, child, name, d))
    if len(children) == 2:
        base, now = (c.label for c in children)
        print(f"{now} / {base} (mean of the rows):")
        for name in ("bounded", "bounded, batching"):
            for d in (BASE_DEGREE, args.degree):
                ratio = {
                    key: mean(seen[now, name, d], key) / mean(seen[base, name, d], key)
                    for key in ("requests", "p50", "p99", "cpu")
                }
                print(
                    f"  {name + ',':18} hub degree {d:>9,}: requests/s {ratio['requests']:4.2f}, "
                    f"p50 {ratio['p50']:4.2f}, p99 {ratio['p99']:4.2f}, server CPU a request "
                    f"{ratio['cpu']:4.2f}"
                )
    return sum(len(r["errors"]) for rs in seen.values() for r in rs)


def exact_request(args: argparse.Namespace, child: Child) -> None:
    """One request through the hub in the exact mode, timed and printed."""
    where = urllib.parse.urlsplit(child.urls["exact"])
    conn = http.client.HTTPConnection(where.hostname, where.port, timeout=600)
    body = json.dumps({"examples": [{"node_id": child.leaves[args.degree][0]}]})
    t0 = time.perf_counter()
    conn.request("POST", "/v1/models/hub:classify", body)
    status = conn.getresponse().status
    conn.close()
    print(
        f"  exact, one request through the hub of {args.degree:,}: "
        f"{(time.perf_counter() - t0) * 1e3:,.0f} ms (status {status})"
    )


def main() -> int:
    parser = number_options(
        __doc__, degree=1_000_000, capacity=100, clients=8, duration_s=10.0, batch_threads=1
    )
    parser.add_argument("--cpus", default=None, help="comma-separated CPU ids to pin to")
    parser.add_argument(
        "--graph-process",
        action="store_true",
        help="run the graph in a process of its own, as a database runs apart from the server",
    )
    parser.add_argument(
        "--baseline",
        help="a git revision whose memgraph_tf serves the same rows in the same run, each row "
        "run for it, then for this checkout",
    )
    parser.add_argument(
        "--tf-threads",
        type=int,
        default=None,
        help="a second server of this checkout whose TensorFlow runs this many inter-op and "
        "intra-op threads; each row run for the default server, then for it",
    )
    args = parser.parse_args()

    pin(args.cpus)
    print(f"load average {os.getloadavg()[0]:.1f} ({len(os.sched_getaffinity(0))} CPUs used)")
    with tempfile.TemporaryDirectory(prefix="memgraph-tf-hub-baseline-") as tmp:
        versions: list[tuple[str, str | None, int | None]] = [("now", None, None)]
        if args.baseline:
            from batch import materialise  # beside this file

            package, sha = materialise(args.baseline, pathlib.Path(tmp))
            versions.insert(0, (f"baseline {sha}", str(package), None))
        if args.tf_threads:
            versions.append((f"TF threads {args.tf_threads}", None, args.tf_threads))
        children = []
        try:
            for label, package, threads in versions:  # one at a time: each builds its graph
                children.append(Child(label, args, package, threads))
                children[-1].ready()
                print(f"{label}: {children[-1].text}" if len(versions) > 1 else children[-1].text)
            errors = rows(args, children)
            exact_request(args, children[-1])
        finally:
            for child in children:
                child.close()
    print(f"errors: {errors}; load average {os.getloadavg()[0]:.1f}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
