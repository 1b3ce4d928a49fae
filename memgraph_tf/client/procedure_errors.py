"""The one translation of a failed procedure call into a client error, shared by the Bolt and the
embedded source.

When a Python procedure raises, Memgraph fails the query with the Bolt code
:data:`MEMGRAPH_ERROR_CODE` and the message ``"<procedure>: "`` followed by the whole
``traceback.format_exception`` text of the exception, its first frame (the ``mgp.py`` wrapper)
dropped and chained exceptions included (Memgraph's ``src/py/py.hpp`` ``FormatException``,
``src/query/procedure/py_module.cpp`` ``CallPythonProcedure``, ``src/query/plan/operator.cpp``
``CallProcedureCursor``). The embedded runtime's ``ProcedureError`` carries the same text. A
procedure Memgraph cannot find fails with ``There is no procedure named '<name>'.`` (the same
files: ``CallProcedureCursor``, and ``cypher_main_visitor.cpp`` when the query is planned).

:func:`translate_procedure_failure` turns such a message into the error the caller gets:

* the procedures' own input errors (every subclass of
  :class:`memgraph_tf.procedures.errors.ProcedureInputError`: an unknown node, option or
  argument, a property that cannot be packed, a blob over ``options.max_blob_bytes``) ->
  :class:`~memgraph_tf.errors.GraphDataError` whose message is the exception's own message,
  exactly as the procedure wrote it (it names the node, argument and property);
* any other exception a procedure raised -> :class:`~memgraph_tf.errors.QueryError` naming
  the procedure and the traceback's last line (``module.Class: message``);
* Memgraph's "There is no procedure named ..." (and the other servers' own words for it:
  :func:`is_missing_procedure`) -> :class:`~memgraph_tf.errors.ProcedureUnavailable`.

No message made here carries a traceback or a path of the server's files (unless the exception's
own message holds one).
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Iterable

from memgraph_tf.errors import (
    ClientError,
    GraphDataError,
    ProcedureUnavailable,
    QueryError,
)

__all__ = [
    "MEMGRAPH_ERROR_CODE",
    "NEO4J_PROCEDURE_NOT_FOUND",
    "ProcedureFailure",
    "called_procedures",
    "is_data_error",
    "is_missing_procedure",
    "parse_procedure_failure",
    "translate_procedure_failure",
]

MEMGRAPH_ERROR_CODE = "Memgraph.ClientError.MemgraphError.MemgraphError"
"""The Bolt code of every query Memgraph fails with a ``QueryException`` -- a procedure that
raised among them (``src/communication/bolt/v1/states/handlers.hpp``,
``ExceptionToErrorMessage``)."""

_TRACEBACK_HEADER = "Traceback (most recent call last):"
# traceback.py's lines between the tracebacks of a chain (_cause_message, _context_message)
_CHAIN_LINES = (
    "The above exception was the direct cause of the following exception:",
    "During handling of the above exception, another exception occurred:",
)
_NAME = r"[A-Za-z_][A-Za-z_0-9]*"
_PROCEDURE_NAME = rf"{_NAME}(?:\.{_NAME})+"
_CALL_RE = re.compile(rf"\bCALL\s+({_PROCEDURE_NAME})\s*\(", re.IGNORECASE)
_EXCEPTION_LINE_RE = re.compile(
    rf"^(?P<cls>{_NAME}(?:\.{_NAME})*)(?:: (?P<message>.*))?$", re.DOTALL
)
# What a server says when a CALL names a procedure it does not have:
# Memgraph: "There is no procedure named '{}'." (the name as the query spelled it);
# ArcadeDB: "Unknown procedure/function: {}"; Neo4j: its status code below.
_MISSING_RES = (
    re.compile(r"^There is no procedure named '[^'\n]*'\.?$"),
    re.compile(rf"^Unknown procedure/function: {_PROCEDURE_NAME}$"),
)
NEO4J_PROCEDURE_NOT_FOUND = "Neo.ClientError.Procedure.ProcedureNotFound"


@dataclasses.dataclass(frozen=True)
class ProcedureFailure:
    """What a failed procedure's message says: ``procedure`` (as the query named it),
    ``error_class`` (as the traceback names it: ``module.Class``, a builtin without module) and
    ``message`` (the exception's own message; empty when it had none)."""

    procedure: str
    error_class: str
    message: str

    @property
    def last_line(self) -> str:
        """``error_class: message`` -- the traceback's last line (without a message: the class)."""
        return f"{self.error_class}: {self.message}" if self.message else self.error_class


def called_procedures(query: str | None) -> list[str]:
    """The procedure names a query CALLs (``CALL m.p(``), in order."""
    return _CALL_RE.findall(query or "")


def is_missing_procedure(message: str, code: str | None = None) -> bool:
    """Whether a server's failure says that a CALLed procedure does not exist: Memgraph's own
    "There is no procedure named '...'." -- and, for the other Bolt servers the client talks to,
    ArcadeDB's "Unknown procedure/function: m.p" and Neo4j's code
    :data:`NEO4J_PROCEDURE_NOT_FOUND`. Each is the whole message, so the text of a procedure that
    raised (``"<procedure>: Traceback ..."``) is never taken for a missing procedure."""
    text = message.strip()
    return code == NEO4J_PROCEDURE_NOT_FOUND or any(r.match(text) for r in _MISSING_RES)


def parse_procedure_failure(message: str, procedures: Iterable[str]) -> ProcedureFailure | None:
    """``message`` read as Memgraph's text for one of ``procedures`` that raised (see the module
    docstring), or None when it is not such a text. Reads the exception of the last traceback of
    the chain: the lines after the chain's last separator, after its ``Traceback`` header and the
    indented frame lines; a text without a traceback (an exception set with no frame) is the
    exception alone."""
    for procedure in sorted(set(procedures), key=len, reverse=True):
        prefix = f"{procedure}: "
        if message.startswith(prefix):
            break
    else:
        return None
    lines = message[len(prefix) :].rstrip("\n").split("\n")
    chained = [i for i, line in enumerate(lines) if line in _CHAIN_LINES]
    if chained:
        lines = lines[chained[-1] + 1 :]
    while lines and not lines[0].strip():
        lines = lines[1:]
    if lines and lines[0] == _TRACEBACK_HEADER:
        lines = lines[1:]
        while lines and lines[0].startswith(" "):
            lines = lines[1:]
    match = _EXCEPTION_LINE_RE.match("\n".join(lines))
    if match is None:
        return None
    return ProcedureFailure(procedure, match["cls"], match["message"] or "")


@functools.cache
def _data_error_classes() -> frozenset[str]:
    """``module.Class`` of :class:`~memgraph_tf.procedures.errors.ProcedureInputError` and every
    subclass of it the procedures define."""
    import memgraph_tf.procedures  # noqa: F401 -- loads every module that may subclass it
    from memgraph_tf.procedures.errors import ProcedureInputError

    found, todo = set(), [ProcedureInputError]
    while todo:
        cls = todo.pop()
        found.add(f"{cls.__module__}.{cls.__qualname__}")
        todo.extend(cls.__subclasses__())
    return frozenset(found)


def is_data_error(error_class: str) -> bool:
    """Whether a traceback's ``module.Class`` is one of the procedures' input errors."""
    return error_class in _data_error_classes()


def translate_procedure_failure(
    message: str, *, where: str, procedures: Iterable[str], code: str | None = None
) -> ClientError | None:
    """The client error for a server message about a procedure call (see the module docstring),
    or None when ``message`` is neither a failure of one of ``procedures`` nor Memgraph's "no
    procedure named" (the caller translates it as any failed query).

    Guarantees: a :class:`GraphDataError`'s message is the procedure's own message, unchanged, the
    same over Bolt and embedded; a :class:`QueryError`'s is ``"<where>: procedure <name> failed:
    <module.Class: message>"``, one line per line of the exception's message and never a
    traceback; :class:`ProcedureUnavailable` (``"<where>: query failed: <message>"``) only for a
    missing procedure (:func:`is_missing_procedure`; ``code``: the server's error code)."""
    if is_missing_procedure(message, code):
        return ProcedureUnavailable(f"{where}: query failed: {' '.join(message.split())}")
    failure = parse_procedure_failure(message, procedures)
    if failure is None:
        return None
    if is_data_error(failure.error_class):
        return GraphDataError(failure.message)
    return QueryError(f"{where}: procedure {failure.procedure} failed: {failure.last_line}")
