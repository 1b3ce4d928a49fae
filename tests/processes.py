"""Child processes that a test stops with SIGINT, as Ctrl-C in a terminal would.

A shell that is not interactive starts a background job with SIGINT ignored, its children inherit
that, and Python leaves an ignored SIGINT ignored: a test run started that way (``bash
scripts/test.sh &``) would send its servers a SIGINT they never see. :func:`interruptible` starts
the command the way a terminal does, with SIGINT's default disposition, whatever the test run's own.
Imported as ``tests.processes``.
"""

from __future__ import annotations

import sys

_EXEC_WITH_DEFAULT_SIGINT = (
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
    "os.execv(sys.argv[1], sys.argv[1:])"
)


def interruptible(argv: list[str]) -> list[str]:
    """``argv`` (a program and its arguments) wrapped so that it runs with SIGINT's default
    disposition: a Python process resets it and ``exec``s the program (same pid, same
    environment, no ``preexec_fn``, which is unsafe in a process with threads)."""
    return [sys.executable, "-c", _EXEC_WITH_DEFAULT_SIGINT, *argv]
