"""What the batch subcommands' ``run_cli`` functions share: the one line and exit code of a
failure, and closing what the command opened.

Standard library and :mod:`memgraph_tf.errors` only.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

from memgraph_tf.errors import command_failure


def report_failure(
    command: str,
    exc: BaseException,
    *,
    log: logging.Logger,
    interrupted: str | None = None,
    written: str | None = None,
) -> int:
    """Prints ``memgraph-tf COMMAND: MESSAGE`` on stderr, MESSAGE being
    :func:`~memgraph_tf.errors.command_failure`'s one line for ``exc`` (``interrupted`` and
    ``written``: what the command had done), and returns the exit code -- never a traceback."""
    code, message = command_failure(exc, interrupted=interrupted, written=written, log=log)
    print(f"memgraph-tf {command}: {message}", file=sys.stderr)
    return code


def close_all(*closables: Any) -> None:
    """Closes each of ``closables`` that is not None, in the order given."""
    for closable in closables:
        if closable is not None:
            closable.close()


__all__ = ["close_all", "report_failure"]
