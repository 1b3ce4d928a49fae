"""A real Bolt + openCypher server for tests and benchmarks: ArcadeDB (``arcadedb-embedded`` on
PyPI).

ArcadeDB's JVM can take down the Python process that hosts it when it exits on an error, so the
server always runs in a **child process** (``python -m memgraph_tf.testing.arcadedb``) that this
module starts and stops. The child binds every listener to ``127.0.0.1`` on free ports, enables the
Bolt plugin, creates the database (``g`` by default), prints one ``READY`` line on stdout and then
serves until its stdin closes -- so it also goes away when the parent dies.

Typical use::

    with ArcadeDBServerProcess() as server:
        source = memgraph_tf.client.connect(server.uri, auth=server.auth, database=server.database)

The root password is random per server (``secrets.token_urlsafe``); it only lives in this object.
"""

from __future__ import annotations

import argparse
import logging
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from typing import IO

from memgraph_tf.errors import MemgraphTfError

logger = logging.getLogger(__name__)

READY_LINE = "READY"
BOLT_PLUGIN = "Bolt:com.arcadedb.bolt.BoltProtocolPlugin"


def free_port(host: str = "127.0.0.1") -> int:
    """Return a TCP port that was free on ``host`` a moment ago (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


class ArcadeDBStartError(MemgraphTfError, RuntimeError):
    """The ArcadeDB child process did not become ready; the message carries its last output."""


class ArcadeDBServerProcess:
    """An ArcadeDB server with the Bolt plugin, running in a child process on 127.0.0.1.

    Guarantees: after :meth:`start` returns, a Bolt client can log in at :attr:`uri` with
    :attr:`auth` and use database :attr:`database`; :meth:`stop` (or leaving the ``with`` block)
    ends the child and removes its temporary root directory. :meth:`kill` ends it with SIGKILL,
    without any clean shutdown, to simulate a crash.
    """

    def __init__(
        self,
        *,
        database: str = "g",
        user: str = "root",
        password: str | None = None,
        startup_timeout_s: float = 120.0,
        heap_size: str | None = "512m",
    ) -> None:
        self.database = database
        self.user = user
        self.password = password or secrets.token_urlsafe(12)
        self.startup_timeout_s = startup_timeout_s
        self.heap_size = heap_size
        self.host = "127.0.0.1"
        self.bolt_port: int | None = None
        self.http_port: int | None = None
        self._root: str | None = None
        self._proc: subprocess.Popen[str] | None = None
        self._output: list[str] = []
        self._reader: threading.Thread | None = None

    # -- public ------------------------------------------------------------------------------
    @property
    def uri(self) -> str:
        """``bolt://127.0.0.1:PORT`` of the running server."""
        if self.bolt_port is None:
            raise ArcadeDBStartError("ArcadeDB server: not started")
        return f"bolt://{self.host}:{self.bolt_port}"

    @property
    def auth(self) -> tuple[str, str]:
        """``(user, password)`` for the root user."""
        return (self.user, self.password)

    @property
    def pid(self) -> int | None:
        return None if self._proc is None else self._proc.pid

    def is_running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def start(self) -> ArcadeDBServerProcess:
        """Start the child and wait until it reports ready and its Bolt port accepts connections."""
        if self._proc is not None:
            raise ArcadeDBStartError("ArcadeDB server: already started")
        self._root = tempfile.mkdtemp(prefix="memgraph-tf-arcadedb-")
        self.bolt_port = free_port(self.host)
        self.http_port = free_port(self.host)
        https_port = free_port(self.host)
        cmd = [
            sys.executable,
            "-m",
            "memgraph_tf.testing.arcadedb",
            "--root",
            self._root,
            "--bolt-port",
            str(self.bolt_port),
            "--http-port",
            str(self.http_port),
            "--https-port",
            str(https_port),
            "--database",
            self.database,
        ]
        if self.heap_size:
            cmd += ["--heap-size", self.heap_size]
        env = dict(os.environ)
        # The password reaches the child through its environment, not its command line (ps).
        env["MEMGRAPH_TF_ARCADEDB_ROOT_PASSWORD"] = self.password
        self._proc = subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
            cwd=self._root,
        )
        ready = threading.Event()
        self._reader = threading.Thread(
            target=self._pump, args=(self._proc.stdout, ready), name="arcadedb-output", daemon=True
        )
        self._reader.start()
        deadline = time.monotonic() + self.startup_timeout_s
        while not ready.wait(0.1):
            if self._proc.poll() is not None or time.monotonic() > deadline:
                tail = "".join(self._output[-30:])
                self.stop()
                raise ArcadeDBStartError(
                    f"ArcadeDB server: expected {READY_LINE!r} within {self.startup_timeout_s} s, "
                    f"got exit code {self._proc.returncode if self._proc else None}; "
                    f"output:\n{tail}"
                )
        self._wait_for_bolt(deadline)
        logger.info("ArcadeDB Bolt server ready at %s (pid %s)", self.uri, self._proc.pid)
        return self

    def stop(self, timeout_s: float = 30.0) -> None:
        """Ask the child to shut down (closing its stdin), SIGKILL it after ``timeout_s``, clean
        up."""
        proc = self._proc
        if proc is not None and proc.poll() is None:
            try:
                if proc.stdin:
                    proc.stdin.close()
            except OSError:
                pass
            try:
                proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=timeout_s)
        self._cleanup()

    def kill(self) -> None:
        """SIGKILL the child at once (a crash: no clean shutdown) and wait for it to be gone."""
        proc = self._proc
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
        self._cleanup()

    def output(self) -> str:
        """Everything the child printed so far (ArcadeDB's log)."""
        return "".join(self._output)

    def __enter__(self) -> ArcadeDBServerProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- internals ---------------------------------------------------------------------------
    def _pump(self, stream: IO[str] | None, ready: threading.Event) -> None:
        if stream is None:
            return
        for line in stream:
            self._output.append(line)
            if len(self._output) > 2000:
                del self._output[:1000]
            if line.rstrip().endswith(READY_LINE):
                ready.set()

    def _wait_for_bolt(self, deadline: float) -> None:
        assert self.bolt_port is not None
        while True:
            try:
                with socket.create_connection((self.host, self.bolt_port), timeout=1.0):
                    return
            except OSError as exc:
                if time.monotonic() > deadline:
                    self.stop()
                    raise ArcadeDBStartError(
                        f"ArcadeDB server: expected Bolt on {self.host}:{self.bolt_port}, got {exc}"
                    ) from exc
                time.sleep(0.1)

    def _cleanup(self) -> None:
        if self._proc is not None and self._proc.stdout is not None:
            try:
                self._proc.stdout.close()
            except OSError:
                pass
        if self._root is not None:
            shutil.rmtree(self._root, ignore_errors=True)
            self._root = None


def _child_main(argv: list[str] | None = None) -> int:
    """Entry point of the child process: run the server until stdin reaches EOF."""
    parser = argparse.ArgumentParser(description="run an ArcadeDB Bolt server until stdin closes")
    parser.add_argument("--root", required=True)
    parser.add_argument("--bolt-port", type=int, required=True)
    parser.add_argument("--http-port", type=int, required=True)
    parser.add_argument("--https-port", type=int, required=True)
    parser.add_argument("--database", default="g")
    parser.add_argument("--heap-size", default=None)
    args = parser.parse_args(argv)
    password = os.environ.get("MEMGRAPH_TF_ARCADEDB_ROOT_PASSWORD")
    if not password:
        print("MEMGRAPH_TF_ARCADEDB_ROOT_PASSWORD is not set", file=sys.stderr)
        return 2

    import arcadedb_embedded  # heavy: starts a JVM

    jvm_kwargs = {"heap_size": args.heap_size} if args.heap_size else None
    server = arcadedb_embedded.ArcadeDBServer(
        root_path=args.root,
        root_password=password,
        config={
            "host": "127.0.0.1",
            "server_plugins": BOLT_PLUGIN,
            "bolt_port": args.bolt_port,
            "http_port": args.http_port,
            "server_httpsIncomingPort": args.https_port,
        },
        jvm_kwargs=jvm_kwargs,
    )
    server.start()
    try:
        server.create_database(args.database)
        print("\n" + READY_LINE, flush=True)
        for _ in sys.stdin:  # block until the parent closes our stdin (or dies)
            pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":  # pragma: no cover - runs in the child process
    sys.exit(_child_main())
