"""The change log: which nodes and relationships were created, updated or deleted, in order.

A change is one ``(:MemgraphTfChange)`` node in the graph it describes (the contract is in
docs/batch-inference.md, "The change log"):

``log`` (the log's name), ``seq`` (an integer, 1, 2, ... per log: a reader pages by keyset on it),
``kind`` (``created``, ``updated``, ``deleted``), ``entity`` (``node``, ``relationship``),
``element_id`` (the element's internal id, ``id(x)``), ``key`` (its ``id_property`` value, where
it has one), ``labels`` (a node's labels), ``rel_type``, ``start_id`` / ``end_id`` and
``start_key`` / ``end_key`` (a relationship's type and endpoints), ``properties`` (the names of
the properties the change set or removed; all of a created element's), ``changed_labels`` (a node
update's labels that the transaction set or removed, whatever properties it set too),
``logged_at`` (when it was logged, microseconds since the epoch: the server's ``timestamp()`` in a
trigger, the writer's clock in :meth:`ChangeLog.record`). A node update is a label change
(:attr:`Change.relabelled`) when it names changed labels, or names neither labels nor properties
(what it changed is unknown: an entry without ``changed_labels``, e.g. from a trigger that does not
collect them).

The next ``seq`` of a log lives on its one ``(:MemgraphTfChangeCounter {log})`` node, raised in
the transaction that writes the changes, so two writers conflict on it (and one retries) rather
than share a number.

Two writers keep the same log:

* Memgraph's triggers (:func:`trigger_statements`; ``memgraph-tf install-triggers``), AFTER
  COMMIT, for every node and relationship change;
* :meth:`ChangeLog.record`, for a database without triggers (any Bolt server, the embedded
  graph): the application records what it changed.

:meth:`ChangeLog.read` returns the changes after a cursor in ``seq`` order, and the new cursor.
"""

from __future__ import annotations

import dataclasses
import re
import time
from collections.abc import Iterable, Sequence
from typing import Any

from memgraph_tf.client.sources import EmbeddedSource, GraphSource, quote_name
from memgraph_tf.errors import ConfigurationError

#: The label of a change node.
CHANGE_LABEL = "MemgraphTfChange"
#: The label of a log's counter node (its ``seq`` is the log's last sequence number).
COUNTER_LABEL = "MemgraphTfChangeCounter"
#: The label of a reader's cursor node (``memgraph-tf refresh``: the last ``seq`` it applied).
CURSOR_LABEL = "MemgraphTfRefreshCursor"
#: memgraph-tf's own bookkeeping labels: changes to such nodes are not logged by the triggers,
#: and a reader ignores them.
OWN_LABELS = frozenset({CHANGE_LABEL, COUNTER_LABEL, CURSOR_LABEL})
#: The log a change goes to when none is named.
DEFAULT_LOG = "default"
#: The kinds of change.
KINDS = ("created", "updated", "deleted")
#: The kinds of element a change is about.
ENTITIES = ("node", "relationship")

_LOG_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,47}")

#: The fields of a change node, in the order :meth:`ChangeLog.read` returns them.
FIELDS = (
    "seq",
    "kind",
    "entity",
    "element_id",
    "key",
    "labels",
    "rel_type",
    "start_id",
    "end_id",
    "start_key",
    "end_key",
    "properties",
    "changed_labels",
    "logged_at",
)


@dataclasses.dataclass(frozen=True)
class Change:
    """One change: ``kind`` (created, updated, deleted) of a node or a relationship
    (``entity``); ``seq`` is None until the change is in a log."""

    kind: str
    entity: str
    element_id: int
    key: Any = None
    labels: tuple[str, ...] = ()
    rel_type: str | None = None
    start_id: int | None = None
    end_id: int | None = None
    start_key: Any = None
    end_key: Any = None
    properties: tuple[str, ...] = ()
    seq: int | None = None
    #: The labels a node update set or removed (only a node update has them).
    changed_labels: tuple[str, ...] = ()
    #: When the change was logged (microseconds since the epoch); None until it is in a log. Not
    #: part of a change's equality.
    logged_at: int | None = dataclasses.field(default=None, compare=False)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ConfigurationError(f"kind: expected one of {KINDS}, got {self.kind!r}")
        if self.entity not in ENTITIES:
            raise ConfigurationError(f"entity: expected one of {ENTITIES}, got {self.entity!r}")
        if isinstance(self.element_id, bool) or not isinstance(self.element_id, int):
            raise ConfigurationError(
                f"element_id: expected the element's internal id (an int), got {self.element_id!r}"
            )
        if self.entity == "relationship" and (
            not self.rel_type or self.start_id is None or self.end_id is None
        ):
            raise ConfigurationError(
                f"relationship {self.element_id}: expected rel_type, start_id and end_id, got "
                f"{self.rel_type!r}, {self.start_id!r}, {self.end_id!r}"
            )
        object.__setattr__(self, "labels", tuple(self.labels))
        object.__setattr__(self, "properties", tuple(self.properties))
        object.__setattr__(self, "changed_labels", tuple(self.changed_labels))
        if self.changed_labels and (self.entity, self.kind) != ("node", "updated"):
            raise ConfigurationError(
                f"{self.entity} {self.element_id}: changed_labels: only a node update changes "
                f"labels, got {list(self.changed_labels)!r} on a {self.kind} {self.entity}"
            )

    @property
    def relabelled(self) -> bool:
        """Whether this is a node update that may have changed the node's labels: one naming
        the labels it set or removed, or one naming neither labels nor properties (what it
        changed is unknown)."""
        if (self.entity, self.kind) != ("node", "updated"):
            return False
        return bool(self.changed_labels) or not self.properties

    def row(self) -> dict[str, Any]:
        """The change's fields but ``seq``, as stored on its change node (lists for tuples)."""
        row = {name: getattr(self, name) for name in FIELDS if name not in ("seq", "logged_at")}
        row["labels"] = list(self.labels)
        row["properties"] = list(self.properties)
        row["changed_labels"] = list(self.changed_labels)
        return row


def check_log_name(log: str) -> str:
    """``log`` when it is a valid log name (a letter, then letters, digits or ``_``; at most 48:
    it is part of the trigger names); else ``ConfigurationError`` naming it."""
    if not isinstance(log, str) or not _LOG_NAME.fullmatch(log):
        raise ConfigurationError(
            f"log: expected a letter then letters, digits or '_' (at most 48), got {log!r}"
        )
    return log


def _record_query() -> str:
    """Raises the counter by the number of rows and creates one change node per row, numbered
    from the counter's old value + 1, in one transaction."""
    return (
        f"MERGE (c:{COUNTER_LABEL} {{log: $log}}) "
        "WITH c, coalesce(c.seq, 0) AS base "
        "SET c.seq = base + size($rows) "
        "WITH base UNWIND range(0, size($rows) - 1) AS i "
        "WITH base + i + 1 AS seq, $rows[i] AS row "
        f"CREATE (x:{CHANGE_LABEL} {{log: $log, seq: seq, logged_at: $now}}) SET x += row "
        "RETURN seq ORDER BY seq"
    )


def _now_us() -> int:
    """Now, in microseconds since the epoch (Memgraph's ``timestamp()`` unit)."""
    return time.time_ns() // 1000


def _read_query() -> str:
    fields = ", ".join(f"x.{name} AS {name}" for name in FIELDS)
    return (
        f"MATCH (x:{CHANGE_LABEL}) WHERE x.log = $log AND x.seq > $after "
        f"RETURN {fields} ORDER BY x.seq LIMIT $limit"
    )


def _change(row: dict[str, Any]) -> Change:
    values = dict(row)
    values["labels"] = tuple(values.get("labels") or ())
    values["properties"] = tuple(values.get("properties") or ())
    values["changed_labels"] = tuple(values.get("changed_labels") or ())
    return Change(**values)


class ChangeLog:
    """The change log ``log`` (default :data:`DEFAULT_LOG`) of ``source``'s graph: a Bolt source
    (any openCypher server: Memgraph, whose triggers may write it, or another) or an
    :class:`EmbeddedSource` (the log is kept as change nodes of its graph)."""

    def __init__(self, source: GraphSource, log: str = DEFAULT_LOG) -> None:
        self.source = source
        self.log = check_log_name(log)

    def record(self, changes: Iterable[Change]) -> list[int]:
        """Appends ``changes`` to the log in one transaction, in their order; returns the
        ``seq`` each got (consecutive, above every earlier one of this log). Nothing is written
        when a change is invalid (``ConfigurationError`` naming it) or the write fails."""
        rows = []
        for change in changes:
            if not isinstance(change, Change):
                raise ConfigurationError(f"changes: expected Change objects, got {change!r}")
            rows.append(change.row())
        if not rows:
            return []
        if isinstance(self.source, EmbeddedSource):
            return self._record_embedded(rows)
        params = {"log": self.log, "rows": rows, "now": _now_us()}
        result = self.source.write(_record_query(), params)
        return [int(r["seq"]) for r in result]

    def _record_embedded(self, rows: list[dict[str, Any]]) -> list[int]:
        graph = self.source.graph
        with self.source.lock:
            counter = [
                n for n in graph.nodes(COUNTER_LABEL) if graph.get_property(n, "log") == self.log
            ]
            if counter:
                node = counter[0]
            else:
                node = graph.add_node([COUNTER_LABEL], {"log": self.log, "seq": 0})
            base, now = int(graph.get_property(node, "seq", 0)), _now_us()
            for i, row in enumerate(rows, start=1):
                stored = {k: v for k, v in row.items() if v is not None and v != []}
                stored["logged_at"] = now
                graph.add_node([CHANGE_LABEL], {"log": self.log, "seq": base + i, **stored})
            graph.set_property(node, "seq", base + len(rows))
        return list(range(base + 1, base + len(rows) + 1))

    def read(self, after: int = 0, limit: int = 1000) -> tuple[list[Change], int]:
        """The changes of this log with ``seq > after``, at most ``limit``, in ``seq`` order, and
        the cursor to read on from (the last one's ``seq``; ``after`` when there is none). A
        cursor or limit that is not a non-negative int (limit >= 1) is a ``ConfigurationError``
        naming it."""
        for name, value, least in (("after", after, 0), ("limit", limit, 1)):
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise ConfigurationError(f"{name}: expected an int >= {least}, got {value!r}")
        if isinstance(self.source, EmbeddedSource):
            changes = self._read_embedded(after, limit)
        else:
            rows = self.source.read(
                _read_query(), {"log": self.log, "after": after, "limit": limit}
            )
            changes = [_change(row) for row in rows]
        return changes, (changes[-1].seq if changes else after)

    def deleted_nodes(self, element_ids: Iterable[int], after: int = 0) -> set[int]:
        """Which of ``element_ids`` a change of this log with ``seq > after`` records as a
        deleted node."""
        ids = sorted(set(element_ids))
        if not ids:
            return set()
        if isinstance(self.source, EmbeddedSource):
            graph, wanted = self.source.graph, set(ids)
            with self.source.lock:
                return {
                    graph.get_property(n, "element_id")
                    for n in graph.nodes(CHANGE_LABEL)
                    if graph.get_property(n, "log") == self.log
                    and graph.get_property(n, "seq") > after
                    and graph.get_property(n, "kind") == "deleted"
                    and graph.get_property(n, "entity") == "node"
                    and graph.get_property(n, "element_id") in wanted
                }
        rows = self.source.read(
            f"MATCH (x:{CHANGE_LABEL}) WHERE x.log = $log AND x.seq > $after "
            "AND x.kind = 'deleted' AND x.entity = 'node' AND x.element_id IN $ids "
            "RETURN DISTINCT x.element_id AS i",
            {"log": self.log, "after": after, "ids": ids},
        )
        return {r["i"] for r in rows}

    def _read_embedded(self, after: int, limit: int) -> list[Change]:
        graph = self.source.graph
        with self.source.lock:
            found = []
            for node in graph.nodes(CHANGE_LABEL):
                if graph.get_property(node, "log") != self.log:
                    continue
                seq = graph.get_property(node, "seq")
                if seq > after:
                    found.append({name: graph.get_property(node, name) for name in FIELDS})
        found.sort(key=lambda row: row["seq"])
        return [_change(row) for row in found[:limit]]


# -------------------------------------------------------------------------- Memgraph's triggers
@dataclasses.dataclass(frozen=True)
class TriggerStatement:
    """One statement ``install-triggers`` runs: a ``CREATE TRIGGER`` (its trigger ``name``, its
    ``event``, e.g. ``ON () CREATE``) or a schema statement (``event`` empty), and the whole
    ``statement``."""

    name: str
    event: str
    statement: str

    @property
    def described(self) -> str:
        """What the statement is, for messages: ``trigger NAME (EVENT)`` or its name."""
        return f"trigger {self.name} ({self.event})" if self.event else self.name


def schema_statements() -> list[TriggerStatement]:
    """Memgraph's uniqueness constraint on the counters' ``log`` (two transactions that log the
    first change of a log at once cannot create two counters: one fails and the trigger's
    change is not logged, rather than numbered twice) and the label-property index on the
    changes' ``seq`` (the reader's keyset)."""
    return [
        TriggerStatement(
            f"the unique constraint on :{COUNTER_LABEL}(log)",
            "",
            f"CREATE CONSTRAINT ON (c:{COUNTER_LABEL}) ASSERT c.log IS UNIQUE",
        ),
        TriggerStatement(
            f"the index on :{CHANGE_LABEL}(seq)", "", f"CREATE INDEX ON :{CHANGE_LABEL}(seq)"
        ),
    ]


def _not_ours(var: str) -> str:
    return " AND ".join(f"NOT {var}:{label}" for label in sorted(OWN_LABELS))


def _append(log: str, fields: str) -> str:
    """The Cypher that numbers the current row and writes its change node."""
    return (
        f"MERGE (c:{COUNTER_LABEL} {{log: '{log}'}}) "
        "SET c.seq = coalesce(c.seq, 0) + 1 "
        f"CREATE (:{CHANGE_LABEL} {{log: '{log}', seq: c.seq, logged_at: timestamp(), {fields}}})"
    )


#: Which (entity, event) reads which of Memgraph's predefined trigger variables, and binds the
#: element to ``v`` (a node) or ``e`` with endpoints ``s`` and ``t`` (a relationship); an update
#: groups the variable's elements per element, collecting the property names (``names``: a
#: property entry's ``key``) and, for a node, the labels set or removed (``relabels``: a label
#: entry's ``label``; a label entry has no ``key`` and a property entry no ``label``, and
#: ``collect`` skips the nulls those lookups give).
_SELECTS = {
    ("node", "CREATE"): f"UNWIND createdVertices AS v WITH v WHERE {_not_ours('v')} ",
    ("node", "UPDATE"): (
        "UNWIND updatedVertices AS u "
        "WITH u.vertex AS v, collect(DISTINCT u.key) AS names, "
        "collect(DISTINCT u.label) AS relabels "
        f"WITH v, names, relabels WHERE {_not_ours('v')} "
    ),
    ("node", "DELETE"): f"UNWIND deletedVertices AS v WITH v WHERE {_not_ours('v')} ",
    ("relationship", "CREATE"): (
        "UNWIND createdEdges AS e WITH e, startNode(e) AS s, endNode(e) AS t "
    ),
    ("relationship", "UPDATE"): (
        "UNWIND updatedEdges AS u WITH u.edge AS e, collect(DISTINCT u.key) AS names "
        "WITH e, names, startNode(e) AS s, endNode(e) AS t "
    ),
    ("relationship", "DELETE"): (
        "UNWIND deletedEdges AS e WITH e, startNode(e) AS s, endNode(e) AS t "
    ),
}
_KINDS = {"CREATE": "created", "UPDATE": "updated", "DELETE": "deleted"}


def _fields(entity: str, event: str, id_property: str | None) -> str:
    """The change node's fields (but ``log`` and ``seq``) for ``entity`` and ``event``."""

    def key(var: str) -> str:
        return "null" if id_property is None else f"{var}.{quote_name(id_property, 'id_property')}"

    var = "v" if entity == "node" else "e"
    properties = {"CREATE": f"keys({var})", "UPDATE": "names", "DELETE": "[]"}[event]
    fields = (
        f"kind: '{_KINDS[event]}', entity: '{entity}', element_id: id({var}), key: {key(var)}, "
    )
    if entity == "node":
        relabels = ", changed_labels: relabels" if event == "UPDATE" else ""
        return fields + f"labels: labels(v), properties: {properties}{relabels}"
    return fields + (
        f"rel_type: type(e), start_id: id(s), end_id: id(t), start_key: {key('s')}, "
        f"end_key: {key('t')}, properties: {properties}"
    )


def trigger_statements(
    id_property: str | None = None, log: str = DEFAULT_LOG
) -> list[TriggerStatement]:
    """The six Memgraph ``CREATE TRIGGER`` statements (node and relationship; CREATE, UPDATE,
    DELETE; AFTER COMMIT) that append every change of a transaction to the log ``log``, with
    ``id_property`` (a property name, or None) read as each element's ``key`` and its
    endpoints'. Changes to the log's own nodes are not logged. Trigger names:
    ``memgraph_tf_<log>_<node|rel>_<create|update|delete>``. A bad ``log`` or ``id_property``
    raises ``ConfigurationError`` naming it."""
    check_log_name(log)
    if id_property is not None:
        quote_name(id_property, "id_property")
    statements = []
    for entity, pattern, short in (("node", "()", "node"), ("relationship", "-->", "rel")):
        for event in _KINDS:
            name = f"memgraph_tf_{log}_{short}_{event.lower()}"
            statement = (
                f"CREATE TRIGGER {name} ON {pattern} {event} AFTER COMMIT EXECUTE "
                + _SELECTS[(entity, event)]
                + _append(log, _fields(entity, event, id_property))
            )
            statements.append(TriggerStatement(name, f"ON {pattern} {event}", statement))
    return statements


def install_triggers(source: GraphSource, statements: Sequence[TriggerStatement]) -> list[str]:
    """Runs each statement (:func:`schema_statements` then :func:`trigger_statements`) on
    ``source``, in order, each auto-commit (Memgraph refuses trigger, index and constraint
    queries inside a transaction); returns their names. A server that refuses one (no triggers,
    e.g. ArcadeDB; a trigger of that name already there) raises ``ConfigurationError`` naming
    it, those run before it, and the server's message; an embedded graph has no triggers
    (``ConfigurationError``)."""
    from memgraph_tf.errors import QueryError

    if isinstance(source, EmbeddedSource):
        raise ConfigurationError(
            "graph: the embedded graph has no triggers; record its changes with "
            "memgraph_tf.client.change_log.ChangeLog.record"
        )
    installed: list[str] = []
    for trigger in statements:
        try:
            list(source.run(trigger.statement))
        except QueryError as exc:
            raise ConfigurationError(
                f"the server refused {trigger.described}, run before it: "
                f"{', '.join(installed) or 'none'}: {exc}. Triggers need Memgraph; on another "
                "server record changes with ChangeLog.record"
            ) from exc
        installed.append(trigger.name)
    return installed


# ------------------------------------------------------------- the bounded mode's reservoirs
def last_seq(log: ChangeLog) -> int:
    """The ``seq`` of the last change of ``log`` (0 when it has none): the cursor a reservoir
    build reflects when nothing is written during it."""
    source = log.source
    if isinstance(source, EmbeddedSource):
        graph = source.graph
        with source.lock:
            for node in graph.nodes(COUNTER_LABEL):
                if graph.get_property(node, "log") == log.log:
                    return int(graph.get_property(node, "seq", 0))
        return 0
    rows = source.read(
        f"MATCH (c:{COUNTER_LABEL}) WHERE c.log = $log RETURN c.seq AS seq", {"log": log.log}
    )
    return int(rows[0]["seq"] or 0) if rows else 0


def build_reservoirs(
    source: GraphSource, options: dict[str, Any], log: ChangeLog | None = None
) -> dict[str, int]:
    """Builds the reservoirs of one edge step (``tf_features.build_reservoirs``: ``options``
    holds ``capacity``, ``edge_types``, ``direction``, ``id_property``, ``seed``,
    ``batch_nodes``) page by page, one write transaction each, from ``options["after"]`` (a
    cursor a previous, interrupted build returned) to the end; with ``log``, the reservoirs
    record its last ``seq`` as applied (read before the build: changes logged during it may be
    applied twice). Returns the totals of ``nodes``, ``reservoirs`` and ``removed``."""
    from memgraph_tf.client.sources.procedure_table import BUILD_RESERVOIRS

    opts = dict(options)
    if log is not None:
        opts["applied_seq"] = last_seq(log)
    totals = {"nodes": 0, "reservoirs": 0, "removed": 0}
    while True:
        page = source.call_procedure(BUILD_RESERVOIRS, BUILD_RESERVOIRS.plain(opts))
        for name in totals:
            totals[name] += page[name]
        if page["next"] is None:
            return totals
        opts["after"] = page["next"]


def apply_to_reservoirs(
    log: ChangeLog, options: dict[str, Any], after: int = 0, limit: int = 1000
) -> tuple[dict[str, int], int]:
    """Keeps the reservoirs of one edge step (``options``: its ``edge_types``, ``direction``,
    ``id_property``) current: applies the changes of ``log`` after the cursor ``after``,
    ``limit`` per ``tf_features.update_reservoirs`` call, and returns the totals (``applied``,
    ``skipped``, ``updated``, ``short``: see :func:`memgraph_tf.procedures.reservoir.update`)
    and the new cursor. Re-applying changes is harmless (each reservoir skips those at or below
    its ``applied_seq``), so a crash between calls loses nothing."""
    from memgraph_tf.client.sources.procedure_table import UPDATE_RESERVOIRS

    totals = {"applied": 0, "skipped": 0, "updated": 0, "short": 0}
    while True:
        changes, cursor = log.read(after, limit)
        if not changes:
            return totals, after
        rows = [{**change.row(), "seq": change.seq} for change in changes]
        got = log.source.call_procedure(UPDATE_RESERVOIRS, UPDATE_RESERVOIRS.plain(rows, options))
        for name in totals:
            totals[name] += got[name]
        after = cursor
