"""Child processes that a test stops with SIGINT, as Ctrl-C in a terminal would.

A shell that is not interactive starts a background job with SIGINT ignored, its children inherit
that, and Python leaves an ignored SIGINT ignored: a test run started that way (``bash
scripts/test.sh &``) would send its servers a SIGINT they never see. :func:`interruptible` starts
the command the way a terminal does, with SIGINT's default disposition, whatever the test run's own;
:func:`signal_when` stops such a command at a chosen point of its work. Imported as
``tests.processes``.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable, Mapping

_EXEC_WITH_DEFAULT_SIGINT = (
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
    "os.execv(sys.argv[1], sys.argv[1:])"
)


def interruptible(argv: list[str]) -> list[str]:
    """``argv`` (a program and its arguments) wrapped so that it runs with SIGINT's default
    disposition: a Python process resets it and ``exec``s the program (same pid, same
    environment, no ``preexec_fn``, which is unsafe in a process with threads)."""
    return [sys.executable, "-c", _EXEC_WITH_DEFAULT_SIGINT, *argv]


def signal_when(
    argv: list[str],
    env: Mapping[str, str],
    ready: Callable[[], bool],
    sig: int,
    what: str,
    timeout_s: float = 180,
) -> subprocess.CompletedProcess:
    """Runs ``argv`` (:func:`interruptible`, stdout and stderr captured as text), sends it
    ``sig`` once ``ready()`` holds (polled), waits for its end (60 s at most) and returns it.
    Fails the test if the command ends first, or if ``ready()`` does not hold within
    ``timeout_s`` (the message says no ``what`` was written); never leaves the process running."""
    proc = subprocess.Popen(
        interruptible(argv), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + timeout_s
        while not ready():
            assert proc.poll() is None, f"the run ended before the signal: {proc.communicate()}"
            assert time.monotonic() < deadline, f"no {what} written within {timeout_s} s"
            time.sleep(0.02)
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)
