"""A ``neo4j`` driver that answers procedure calls as Memgraph does, for the procedure-error tests.

What Memgraph sends when a Python procedure raises (read in Memgraph's source): the code
``Memgraph.ClientError.MemgraphError.MemgraphError`` (``src/communication/bolt/v1/states/
handlers.hpp``, ``ExceptionToErrorMessage``: a ``QueryException``) and the message
``"<procedure>: "`` (``src/query/plan/operator.cpp``, ``CallProcedureCursor``: ``"{}: {}"``) +
``traceback.format_exception`` of the exception, its first traceback entry -- the ``mgp.py``
wrapper -- dropped (``src/py/py.hpp`` ``FormatException(exc_info, skip_first_line=true)``, called
by ``src/query/procedure/py_module.cpp`` ``CallPythonProcedure``). The driver turns the FAILURE
into an exception with ``Neo4jError._hydrate_neo4j`` (``neo4j/_sync/io/_bolt/_common.py``,
``Response.on_failure``; Memgraph speaks Bolt <= 5.2, below the driver's GQL-aware protocol).
"""

from __future__ import annotations

import pathlib
import re
import traceback
from typing import Any

import neo4j.exceptions

from memgraph_tf.client import EmbeddedSource
from memgraph_tf.client.errors import GraphDataError, QueryError
from memgraph_tf.client.procedure_errors import MEMGRAPH_ERROR_CODE
from memgraph_tf.embedded import EmbeddedGraph, ProcedureError


def memgraph_text(procedure: str, exc: BaseException) -> str:
    """The message Memgraph sends for ``exc`` raised by ``procedure``: the traceback from the
    frame after ``mgp.py``'s wrapper, as Memgraph starts it there and drops that first entry."""
    tb = exc.__traceback__
    while tb is not None and pathlib.Path(tb.tb_frame.f_code.co_filename).name != "mgp.py":
        tb = tb.tb_next
    assert tb is not None, "the procedure was not called through mgp.py"
    return f"{procedure}: " + "".join(traceback.format_exception(type(exc), exc, tb.tb_next))


def hydrated(message: str) -> neo4j.exceptions.Neo4jError:
    """The exception the real driver raises for Memgraph's FAILURE ``{code, message}``."""
    return neo4j.exceptions.Neo4jError._hydrate_neo4j(code=MEMGRAPH_ERROR_CODE, message=message)


class _Record(dict):
    def data(self) -> dict[str, Any]:
        return dict(self)


_PROCEDURE_CALL = re.compile(r"^\s*CALL\s+(tf_features\.\w+|mg\.procedures)\s*\(", re.IGNORECASE)
# a call whose key lists the query resolves first (memgraph_tf.client.sources.keyed_call_query)
_KEYED_CALL = re.compile(
    r"^UNWIND range\(0, size\(\$\w+\) - 1\) AS mgtf_i .* (CALL tf_features\..*)$"
)
_KEY_LOOKUP = re.compile(
    r"OPTIONAL MATCH \(mgtf_n\d+(?::`(?P<label>[^`]+)`)?\) WHERE mgtf_n\d+\.`(?P<prop>[^`]+)` = "
    r"\$(?P<name>\w+)\[mgtf_i\]"
)


def _is_call(query: str) -> bool:
    return bool(_PROCEDURE_CALL.match(query) or _KEYED_CALL.match(query))


class MemgraphLikeDriver:
    """A ``neo4j`` driver whose ``CALL tf_features.*`` and ``CALL mg.procedures()`` run on an
    in-process graph the way Memgraph runs them -- the unchanged query module through ``mgp.py``;
    an exception it raises comes back as Memgraph's FAILURE, through the driver's own hydration --
    and whose other queries go to ``inner``, a real driver to a real Bolt server (ArcadeDB), when
    given. A call whose key lists the query resolves first (``UNWIND ... OPTIONAL MATCH (n:Label)
    WHERE n.id = $seeds[i] ... CALL tf_features...``, the client's keyed calls) is read as Memgraph
    reads it -- per key, the one node of the label holding it, else the key -- from the graph's
    index (``SHOW INDEX INFO``, auto-commit only, lists ``indexes``); that the Cypher means this is
    checked on a real engine (tests/client/test_keyed_calls.py, ArcadeDB). ``calls`` keeps the text
    of every procedure call, ``modes`` how each was run (``execute_read``, ``execute_write``, or
    ``run``: auto-commit)."""

    def __init__(
        self,
        graph: EmbeddedGraph,
        inner: Any = None,
        database: str | None = None,
        indexes: Any = (),
    ):
        self.graph, self.inner, self.database = graph, inner, database
        self.indexes = list(
            indexes
        )  # (label, property): what CREATE INDEX ON :label(property) made
        self.procedures = EmbeddedSource(graph)
        self.calls: list[str] = []
        self.modes: list[str] = []

    def answer(self, query: str, parameters: dict[str, Any], mode: str = "run") -> list[_Record]:
        self.calls.append(query)
        self.modes.append(mode)
        if "mg.procedures" in query:
            return [_Record(name=name) for name in self.graph.procedures()]
        keyed = _KEYED_CALL.match(query)
        if keyed:  # Memgraph's reading of the lookup part, then the CALL with its lists
            parameters = dict(parameters)
            for found in _KEY_LOOKUP.finditer(query):
                label, prop, name = found["label"], found["prop"], found["name"]
                nodes = []
                for key in parameters[name]:  # OPTIONAL MATCH (n:label) WHERE n.prop = key
                    matches = self.graph.find_nodes(label, prop, key)
                    nodes.append(self.graph.node(matches[0]) if len(matches) == 1 else key)
                parameters[f"mgtf_{name}"] = nodes
            query = re.sub(r"\bmgtf_(\w+)(?=[,)])", r"$mgtf_\1", keyed[1])
        try:
            return [_Record(row) for row in self.procedures.run(query, parameters)]
        except (GraphDataError, QueryError) as exc:
            failure = exc.__cause__  # what the embedded runtime raised
            if isinstance(failure, ProcedureError):  # its cause: what the procedure raised
                raise hydrated(memgraph_text(failure.procedure, failure.__cause__)) from None
            raise hydrated(str(failure)) from None  # the runtime's refusal, in Memgraph's words

    def index_info(self) -> list[list[Any]]:
        """``SHOW INDEX INFO``'s rows, ``[index type, label, property, count]``, ``property`` a list
        as Memgraph 3.x gives it (its own tests read them so: the text-index feature's columns,
        an e2e durability test's ``row[1] == label and row[2] == [prop]``)."""
        return [
            ["label+property", label, [name], len(self.graph.nodes(label))]
            for label, name in self.indexes
        ]

    def session(self, **kwargs: Any) -> _Session:
        inner = None
        if self.inner is not None:
            inner = self.inner.session(**{"database": self.database, **kwargs})
        return _Session(self, inner)

    def verify_connectivity(self) -> None:
        if self.inner is not None:
            self.inner.verify_connectivity()

    def close(self) -> None:
        """Nothing: each BoltSource made over this driver closes it; :meth:`shutdown` ends it."""

    def shutdown(self) -> None:
        if self.inner is not None:
            self.inner.close()


class _Tx:
    def __init__(self, driver: MemgraphLikeDriver, inner: Any, mode: str) -> None:
        self.driver, self.inner, self.mode = driver, inner, mode

    def run(self, query: str, parameters: dict[str, Any] | None = None) -> Any:
        if query.strip().upper().startswith("SHOW INDEX INFO"):  # src/query/exceptions.hpp
            raise hydrated("Info reporting not allowed in multicommand transactions.")
        if _is_call(query):
            return self.driver.answer(query, dict(parameters or {}), self.mode)
        return self.inner.run(query, parameters)


class _Session:
    def __init__(self, driver: MemgraphLikeDriver, inner: Any) -> None:
        self.driver, self.inner = driver, inner

    def __enter__(self) -> _Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _execute(self, how: str, work: Any) -> Any:
        if self.inner is None:
            return work(_Tx(self.driver, None, how))
        return getattr(self.inner, how)(lambda tx: work(_Tx(self.driver, tx, how)))

    def execute_read(self, work: Any) -> Any:
        return self._execute("execute_read", work)

    def execute_write(self, work: Any) -> Any:
        return self._execute("execute_write", work)

    def run(self, query: str, parameters: dict[str, Any] | None = None) -> Any:
        if query.strip().upper().startswith("SHOW INDEX INFO"):
            return iter(self.driver.index_info())
        if _is_call(query):
            return iter(self.driver.answer(query, dict(parameters or {})))
        return self.inner.run(query, parameters)

    def close(self) -> None:
        if self.inner is not None:
            self.inner.close()
