"""What the batch subcommands' ``run_cli`` functions share: the one line and exit code of a
failure, closing what the command opened, the run between (:func:`run_batch`), and the options
passed on to a run's constructor under their own names (:func:`options_from`).

Standard library and :mod:`memgraph_tf.errors` only.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Iterable
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


def options_from(args: Any, names: Iterable[str]) -> dict[str, Any]:
    """``{name: args.name}`` for each of ``names``: the command-line options a run's constructor
    takes as keyword arguments of the same names."""
    return {name: getattr(args, name) for name in names}


def close_all(*closables: Any) -> None:
    """Closes each of ``closables`` that is not None, in the order given."""
    for closable in closables:
        if closable is not None:
            closable.close()


def run_batch(
    command: str,
    start: Callable[[list[Any]], Any],
    report: Callable[[Any, Any], None],
    *,
    log: logging.Logger,
    done: Callable[[Any], int],
    interrupted: str,
    written: str,
) -> int:
    """Runs a batch command: ``start(opened)`` opens what the run needs (appending each to
    ``opened``) and returns the run; its ``run()`` gives the summary that ``report(run,
    summary)`` prints once everything opened is closed (last opened first). A failure is
    :func:`report_failure`'s one line, ``interrupted`` and ``written`` formatted with
    ``done(run.summary)`` (0 before the run exists). Returns the exit code."""
    opened: list[Any] = []
    run = None
    try:
        run = start(opened)
        summary = run.run()
    except (Exception, KeyboardInterrupt) as exc:  # noqa: BLE001 -- errors.command_failure: one line, an exit code
        count = done(run.summary) if run is not None else 0
        return report_failure(
            command,
            exc,
            log=log,
            interrupted=interrupted.format(count),
            written=written.format(count),
        )
    finally:
        close_all(*reversed(opened))
    report(run, summary)
    return 0


__all__ = ["close_all", "options_from", "report_failure", "run_batch"]
