"""The embedded source (:class:`EmbeddedSource`): the unchanged ``tf_features`` query modules run
in-process over an :class:`memgraph_tf.embedded.EmbeddedGraph`."""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from memgraph_tf.client.procedure_errors import translate_procedure_failure
from memgraph_tf.client.sources.config import procedure_memory, quote_name, short_query
from memgraph_tf.client.sources.interface import CheckedWrite, GraphSource
from memgraph_tf.client.sources.keyed import keyed_lists, resolved_keys
from memgraph_tf.client.sources.procedure_table import Procedure, to_python
from memgraph_tf.errors import ConfigurationError, ProcedureUnavailable, QueryError

logger = logging.getLogger(__name__)


_CALL_RE = re.compile(
    r"^\s*CALL\s+(?P<proc>[A-Za-z_][\w.]*)\s*\((?P<args>[^)]*)\)\s*"
    r"(?P<memory>PROCEDURE\s+MEMORY\s+(?:UNLIMITED|LIMIT\s+[^\s]+\s+(?:MB|KB))\s*)?"
    r"(?:YIELD\s+(?P<yield>[\w\s,]+?))?\s*(?:RETURN\s+(?P<ret>[\w\s,]+?))?\s*;?\s*$",
    re.IGNORECASE | re.DOTALL,
)


def _memory_option(match: re.Match[str]) -> dict[str, Any]:
    """``{"memory_limit_bytes": ...}`` for the ``PROCEDURE MEMORY`` clause of a matched CALL (the
    embedded graph's ``call`` keyword; None: UNLIMITED); without a clause ``...``, the graph's
    default, as Memgraph's default without one. A bad limit raises :class:`ConfigurationError`
    with Memgraph's reason (``EvaluateMemoryLimit``: an integer >= 1)."""
    if match["memory"] is None:
        return {"memory_limit_bytes": ...}
    from memgraph_tf.embedded import parse_procedure_memory_clause

    try:
        return {"memory_limit_bytes": parse_procedure_memory_clause(match["memory"])}
    except ValueError as exc:
        raise ConfigurationError(f"query: {exc}") from None


class EmbeddedSource(GraphSource):
    """A :class:`GraphSource` over an in-process :class:`memgraph_tf.embedded.EmbeddedGraph`: the
    unchanged ``tf_features`` query modules run through Memgraph's real ``mgp.py``.

    :meth:`run` accepts procedure calls only (``CALL module.proc($a, $b) [PROCEDURE MEMORY
    UNLIMITED | PROCEDURE MEMORY LIMIT n MB|KB] [YIELD x, y] [RETURN x]``): the embedded runtime
    runs query modules, not a Cypher engine. ``procedure_memory_limit_mb`` is the memory limit of
    the ``tf_features`` calls, as for :func:`connect` (:func:`procedure_memory`).
    """

    kind = "embedded"

    def __init__(self, graph: Any, *, procedure_memory_limit_mb: int | str | None = None) -> None:
        self.graph = graph
        self.procedure_memory = procedure_memory(procedure_memory_limit_mb)
        # tf.data runs procedure calls from several threads; the in-memory graph is not meant for
        # concurrent use, and the calls are GIL-bound anyway, so they take turns
        self._lock = threading.RLock()

    @property
    def lock(self) -> threading.RLock:
        """The ``threading.RLock`` every call of this source holds (see
        :attr:`GraphSource.lock`)."""
        return self._lock

    def __repr__(self) -> str:
        return f"EmbeddedSource({type(self.graph).__name__})"

    def _call(self, procedure: str, *args: Any, **memory: Any) -> list[dict[str, Any]]:
        """``graph.call`` -- with ``memory_limit_bytes`` from ``memory``, else this source's
        :attr:`procedure_memory` -- its errors translated as over Bolt: a procedure that raised goes
        through :func:`~memgraph_tf.client.procedure_errors.translate_procedure_failure` (its
        message is Memgraph's text), a missing procedure is :class:`ProcedureUnavailable`, the
        runtime's other refusals (arguments, results) are :class:`QueryError`."""
        from memgraph_tf.embedded import EmbeddedError, ProcedureError, ProcedureNotFoundError

        where = "embedded graph"
        try:
            limit = memory.get("memory_limit_bytes", self.procedure_memory.limit_bytes)
            with self._lock:
                return self.graph.call(procedure, *args, memory_limit_bytes=limit)
        except ProcedureNotFoundError as exc:
            raise ProcedureUnavailable(f"{where}: query failed: {exc}") from exc
        except ProcedureError as exc:
            names = [getattr(exc, "procedure", "") or procedure, procedure]
            translated = translate_procedure_failure(str(exc), where=where, procedures=names)
            if translated is None:  # not Memgraph's text: name the procedure and the last line
                last = str(exc).rstrip("\n").rsplit("\n", 1)[-1]
                translated = QueryError(f"{where}: procedure {procedure} failed: {last}")
            raise translated from exc
        except EmbeddedError as exc:
            raise QueryError(f"{where}: query failed: {exc}") from exc

    def call_procedure(self, procedure: Procedure, args: tuple) -> Any:
        """One call of ``procedure`` through the embedded runtime, its lists of integer keys
        under ``options.id_property`` (:func:`keyed_lists`) first resolved to their nodes through
        the graph's index (:meth:`~memgraph_tf.embedded.EmbeddedGraph.find_nodes`), as
        :class:`~memgraph_tf.client.sources.BoltSource` has Memgraph resolve them: the procedure
        need not scan the label."""
        named = dict(zip(procedure.params, args))
        keyed = keyed_lists(procedure.name, named)
        if not keyed:
            return procedure.answer_of(self._call(procedure.name, *args))
        id_property = named["options"]["id_property"]
        graph = self.graph
        with self._lock:  # the nodes found and the call see the same graph
            for name, label in keyed.items():
                named[name] = resolved_keys(
                    named[name],
                    lambda key, label=label: [
                        graph.node(i) for i in graph.find_nodes(label, id_property, key)
                    ],
                )
            return procedure.answer_of(self._call(procedure.name, *named.values()))

    def _run(
        self, query: str, params: dict[str, Any], fetch_size: int | None
    ) -> Iterator[Mapping[str, Any]]:
        match = _CALL_RE.match(query)
        if match is None:
            raise ConfigurationError(
                "query: expected a procedure call 'CALL module.procedure($a, ...) [YIELD ...] "
                "[RETURN ...]' "
                f"(the embedded runtime runs query modules, not Cypher), got {short_query(query)!r}"
            )
        memory = _memory_option(match)
        args = []
        for i, arg in enumerate(a.strip() for a in match["args"].split(",") if a.strip()):
            if not arg.startswith("$") or arg[1:] not in params:
                raise ConfigurationError(
                    f"query: argument {i} of {match['proc']}: expected a $parameter present in "
                    f"parameters ({', '.join(sorted(params)) or 'none'}), got {arg!r}"
                )
            args.append(to_python(params[arg[1:]]))
        columns = None
        for clause in ("ret", "yield"):
            if match[clause]:
                columns = [c.strip() for c in match[clause].split(",") if c.strip()]
                break
        for row in self._call(match["proc"], *args, **memory):
            if columns is None:
                yield dict(row)
            else:
                missing = [c for c in columns if c not in row]
                if missing:
                    raise ConfigurationError(
                        f"query: expected {match['proc']} to yield {missing}, got fields "
                        f"{sorted(row)}"
                    )
                yield {c: row[c] for c in columns}

    def _internal_ids(
        self, node_ids: Sequence[int], id_property: str | None, label: str | None
    ) -> list[int]:
        """Internal ids of the nodes that exist (``-1`` for the others), in order."""
        if id_property is None:
            candidates = set(self.graph.nodes(label))
            return [i if i in candidates else -1 for i in node_ids]
        index = self._id_index(id_property, label)
        return [index.get(node_id, -1) for node_id in node_ids]

    def _id_index(self, id_property: str, label: str | None = None) -> dict[int, int]:
        index: dict[int, int] = {}
        for internal in self.graph.nodes(label):
            value = self.graph.get_property(internal, id_property)
            if value is not None:
                index[value] = internal
        return index

    def _node_ids(
        self, label: str | None, id_property: str | None, where: dict[str, Any]
    ) -> list[int]:
        internal = self.graph.nodes(label)
        for name, value in where.items():
            quote_name(name, "where")
            internal = [i for i in internal if self.graph.get_property(i, name) == value]
        if id_property is None:
            return internal
        values = (self.graph.get_property(i, id_property) for i in internal)
        return sorted(v for v in values if v is not None)

    def _write_checked(self, write: CheckedWrite) -> int:
        written = 0
        items = list(write.columns.items())
        with self._lock:
            found = self._internal_ids(write.node_ids, write.id_property, write.label)
            for row, internal in enumerate(found):
                if internal >= 0:
                    for name, values in items:
                        self.graph.set_property(internal, name, values[row])
                    written += 1
        return written
