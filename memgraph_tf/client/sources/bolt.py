"""The Bolt source (:class:`BoltSource`): Memgraph -- or any Bolt + openCypher server -- over
one long-lived ``neo4j`` driver.

Reads and writes run as managed transactions, which the driver retries on transient errors. On a
server without the ``tf_features`` procedures (Neo4j, ArcadeDB, a Memgraph without the modules) it
detects that once and falls back to plain parameterised Cypher (:class:`CypherGraphAccess`) that
fetches properties and neighbours, then packs the blob on the client with the very code the query
module runs (:mod:`memgraph_tf.procedures`): slower, same bytes for the same graph, ids and seed
(give nodes stable ids with ``options["id_property"]``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import neo4j
import neo4j.exceptions as neo4j_errors

from memgraph_tf import blob, errors
from memgraph_tf.client.procedure_errors import called_procedures, translate_procedure_failure
from memgraph_tf.client.sources import config
from memgraph_tf.client.sources import procedure_table as table
from memgraph_tf.client.sources.cypher import CypherGraphAccess
from memgraph_tf.client.sources.interface import CheckedWrite, GraphSource
from memgraph_tf.client.sources.keyed import INDEX_INFO_TTL_S, keyed_call_query, keyed_lists
from memgraph_tf.client.sources.procedure_table import PROCEDURES, Procedure, to_python

logger = logging.getLogger(__name__)


def _server_message(exc: BaseException) -> str:
    message = getattr(exc, "message", None)
    return str(message if message else exc)


class BoltSource(GraphSource):
    """A :class:`GraphSource` over Bolt (see the module docstring). Make one with :func:`connect`.

    Thread-safe (the driver pools connections). Holds no credentials: only the driver does.
    """

    kind = "bolt"

    def __init__(
        self,
        driver: neo4j.Driver,
        *,
        uri: str,
        database: str | None,
        user: str | None = None,
        use_procedures: bool | None = None,
        fetch_size: int = 1000,
        procedure_memory_limit_mb: int | str | None = None,
        connect_timeout_s: float | str | None = None,
        retry_time_s: float = config.RETRY_TIME_S,
    ) -> None:
        self._driver = driver
        self.connect_timeout_s = config.connect_timeout(connect_timeout_s)
        self.retry_time_s = retry_time_s
        self.uri = config.redact(uri)
        self.database = database
        self._user = user
        self._use_procedures = use_procedures
        self._memgraph: bool | None = (
            None  # whether mg.procedures() answers: the server is Memgraph
        )
        self.fetch_size = fetch_size
        self.procedure_memory = config.procedure_memory(procedure_memory_limit_mb)
        self._closed = False
        self._index_info: tuple[float, frozenset[tuple[str, str]]] | None = None
        self._unindexed_warned: set[tuple[str, str]] = set()

    def __repr__(self) -> str:
        return f"BoltSource(uri={self.uri!r}, database={self.database!r})"

    def _indexed(self, label: str | None, name: str) -> bool:
        """Whether the server has a label-property index on ``:label(name)``: Memgraph's ``SHOW
        INDEX INFO`` rows ``[index type, label, property, count]`` (``property`` a name, or a list
        of names from 3.x; an info query, which Memgraph refuses inside a transaction: run
        auto-commit), read again after :data:`INDEX_INFO_TTL_S`; False when the query fails
        (another server, no privilege). Without such an index the keyed lookup would scan the
        label once per key, so a call keeps its keys and the procedure scans once; that is
        logged once per label and property, with the index to create."""
        if label is None:
            return False
        now = time.monotonic()
        if self._index_info is None or now - self._index_info[0] > INDEX_INFO_TTL_S:
            found: set[tuple[str, str]] = set()
            try:
                for row in self.run("SHOW INDEX INFO"):
                    kind, on, props = row[0], row[1], row[2]
                    if isinstance(props, str):
                        props = [props]
                    if (
                        str(kind).startswith("label+property")
                        and isinstance(props, list)
                        and props
                        and isinstance(props[0], str)
                    ):
                        found.add((on, props[0]))  # a composite index serves its first
            except (errors.QueryError, ValueError, IndexError) as exc:  # unreachable: raised
                logger.info(
                    "%s: SHOW INDEX INFO failed (%s): keys go to the procedures", self.uri, exc
                )
            self._index_info = (now, frozenset(found))
        if (label, name) in self._index_info[1]:
            return True
        if (label, name) not in self._unindexed_warned:
            self._unindexed_warned.add((label, name))
            logger.warning(
                "%s: no index on :%s(%s): each call by %s scans the label's nodes in the "
                "procedure; CREATE INDEX ON :%s(%s); lets the keys be looked up",
                self.uri,
                label,
                name,
                name,
                label,
                name,
            )
        return False

    # -- plumbing ---------------------------------------------------------------------------------
    def _translate(self, exc: BaseException, query: str | None = None) -> BaseException:
        where = f"{self.uri}" + (f" (database {self.database!r})" if self.database else "")
        if isinstance(exc, neo4j_errors.AuthError):
            who = f" for user {self._user!r}" if self._user is not None else ""
            return errors.AuthenticationError(
                f"{where}: the server refused the credentials{who}: {_server_message(exc)}"
            )
        if isinstance(
            exc,
            (
                neo4j_errors.ServiceUnavailable,
                neo4j_errors.SessionExpired,
                neo4j_errors.IncompleteCommit,
                ConnectionError,
                OSError,
            ),
        ):
            during = f" while running {config.short_query(query)!r}" if query else ""
            return errors.ServerUnavailable(
                f"{where}: server unavailable or connection lost{during}: "
                f"{' '.join(str(exc).split())}"
            )
        if isinstance(exc, neo4j_errors.Neo4jError):
            message = _server_message(exc)
            translated = translate_procedure_failure(
                message,
                where=where,
                procedures=called_procedures(query),
                code=getattr(exc, "code", None),
            )
            if translated is not None:
                return translated
            return errors.QueryError(
                f"{where}: query failed: {message}"
                + (f" (query: {config.short_query(query)!r})" if query else "")
            )
        if isinstance(exc, neo4j_errors.DriverError):
            return errors.GraphConnectionError(f"{where}: driver error: {exc}")
        return exc  # anything else unchanged (the caller re-raises it)

    def _session(
        self, *, write: bool = False, fetch_size: int | None = None, retry_time_s: float = 0.0
    ) -> neo4j.Session:
        """A session whose connection is acquired (opened, TLS and Bolt handshake included)
        within :attr:`connect_timeout_s` (the driver's ``connection_acquisition_timeout``) and
        whose managed transactions are retried for ``retry_time_s`` (its
        ``max_transaction_retry_time``; 0: not retried)."""
        if self._closed:
            raise errors.ConfigurationError(f"{self!r}: expected an open source, got a closed one")
        kwargs: dict[str, Any] = {
            "default_access_mode": neo4j.WRITE_ACCESS if write else neo4j.READ_ACCESS,
            "fetch_size": fetch_size or self.fetch_size,
            "connection_acquisition_timeout": self.connect_timeout_s,
            "max_transaction_retry_time": retry_time_s,
        }
        if self.database:
            kwargs["database"] = self.database
        return self._driver.session(**kwargs)

    def verify(self) -> None:
        """Checks the server answers and accepts the credentials (raises the client errors)."""
        try:
            self._driver.verify_connectivity()
        except (neo4j_errors.Neo4jError, neo4j_errors.DriverError, OSError) as exc:
            raise self._translate(exc) from exc

    def read(self, query: str, parameters: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        """Runs ``query`` in a managed read transaction (retried on transient errors); all rows."""
        return self._managed(query, parameters, write=False)

    def write(
        self, query: str, parameters: Mapping[str, Any] | None = None
    ) -> list[dict[str, Any]]:
        """Runs ``query`` in a managed write transaction (retried on transient errors); all rows."""
        return self._managed(query, parameters, write=True)

    def _managed(
        self, query: str, parameters: Mapping[str, Any] | None, *, write: bool
    ) -> list[dict[str, Any]]:
        """``query`` in a managed transaction. A server that cannot be reached within
        :attr:`connect_timeout_s`, or a connection lost, is reported at once
        (:class:`~.errors.ServerUnavailable`), not retried; a transient failure of a reachable
        server (a conflict with a concurrent transaction) is retried as the driver retries them,
        for :attr:`retry_time_s`."""

        def work(tx: neo4j.ManagedTransaction) -> list[dict[str, Any]]:
            return [record.data() for record in tx.run(query, dict(parameters or {}))]

        def attempt(retry_time_s: float) -> list[dict[str, Any]]:
            with self._session(write=write, retry_time_s=retry_time_s) as session:
                return (session.execute_write if write else session.execute_read)(work)

        try:
            try:
                return attempt(0.0)
            except (neo4j_errors.Neo4jError, neo4j_errors.DriverError) as exc:
                if not _transient(exc):
                    raise
            return attempt(self.retry_time_s)
        except (neo4j_errors.Neo4jError, neo4j_errors.DriverError, OSError) as exc:
            raise self._translate(exc, query) from exc

    def _run(
        self, query: str, params: dict[str, Any], fetch_size: int | None
    ) -> Iterator[neo4j.Record]:
        """Yields the records of ``query`` as the server streams them (``fetch_size`` per pull).

        Guarantees: at most about ``fetch_size`` records are buffered; the session is closed when
        the iterator is exhausted or closed; a lost connection raises
        :class:`~.errors.ServerUnavailable` (not a hang: the driver sees the socket close). Not
        retried: rows may already be consumed.
        """
        session = self._session(fetch_size=fetch_size)
        try:
            try:
                yield from session.run(query, params)
            except (neo4j_errors.Neo4jError, neo4j_errors.DriverError, OSError) as exc:
                raise self._translate(exc, query) from exc
        finally:
            try:
                session.close()
            except (neo4j_errors.Neo4jError, neo4j_errors.DriverError, OSError):
                logger.debug("closing a session after an error failed", exc_info=True)

    def _write_checked(self, write: CheckedWrite) -> int:
        names = list(write.columns)
        sets = ", ".join(
            f"n.{config.quote_name(name, 'name')} = row.v{j}" for j, name in enumerate(names)
        )
        node = f"(n:{config.quote_name(write.label, 'label')})" if write.label else "(n)"
        match = (
            f"MATCH {node} WHERE n.{config.quote_name(write.id_property, 'id_property')} = row.id"
            if write.id_property
            else f"MATCH {node} WHERE id(n) = row.id"
        )
        query = f"UNWIND $rows AS row {match} SET {sets} RETURN count(n) AS written"
        written = 0
        for start in range(0, len(write.node_ids), write.batch_size):
            stop = start + write.batch_size
            rows = [
                {"id": i, **{f"v{j}": v for j, v in enumerate(values)}}
                for i, *values in zip(
                    write.node_ids[start:stop],
                    *(write.columns[name][start:stop] for name in names),
                )
            ]
            result = self.write(query, {"rows": rows})
            written += int(result[0]["written"]) if result else 0
        return written

    def _node_ids(
        self, label: str | None, id_property: str | None, where: dict[str, Any]
    ) -> list[int]:
        node = f"(n:{config.quote_name(label, 'label')})" if label else "(n)"
        key = f"n.{config.quote_name(id_property, 'id_property')}" if id_property else "id(n)"
        tests = [f"{key} IS NOT NULL"]
        params: dict[str, Any] = {}
        for j, (name, value) in enumerate(where.items()):
            tests.append(f"n.{config.quote_name(name, 'where')} = $w{j}")
            params[f"w{j}"] = to_python(value)
        rows = self.read(f"MATCH {node} WHERE {' AND '.join(tests)} RETURN {key} AS id", params)
        return sorted(row["id"] for row in rows)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._driver.close()

    # -- procedures or fallback -------------------------------------------------------------------
    def _probe(self) -> set[str] | None:
        """The names ``mg.procedures()`` lists, or None on a server without it (not Memgraph);
        records which it was."""
        try:
            rows = self.read("CALL mg.procedures() YIELD name RETURN name")
        except (errors.QueryError, ValueError) as exc:
            logger.info("%s: no mg.procedures() (%s): not Memgraph", self.uri, exc)
            self._memgraph = False
            return None
        self._memgraph = True
        return {row["name"] for row in rows}

    def has_procedures(self) -> bool:
        """Whether the server has the ``tf_features`` procedures (detected once, then cached)."""
        if self._use_procedures is None:
            names = self._probe()
            self._use_procedures = names is not None and all(p in names for p in PROCEDURES)
            if not self._use_procedures:
                logger.info(
                    "%s: the tf_features procedures are missing: packing blobs on the client "
                    "from plain Cypher (slower, same bytes)",
                    self.uri,
                )
        return self._use_procedures

    def call_procedure(self, procedure: Procedure, args: tuple) -> Any:
        """With the ``tf_features`` procedures (:meth:`has_procedures`): one ``CALL`` of
        ``procedure`` (:meth:`_call`); without them: the procedure's own code on the client
        (:data:`CLIENT_SIDE`), over plain Cypher, with the same answer for the same graph (maps
        in and out sorted by key, as Memgraph hands them over)."""
        if self.has_procedures():
            return procedure.answer_of(self._call(procedure, dict(zip(procedure.params, args))))
        value = _fallback().memgraph_value
        return value(CLIENT_SIDE[procedure.name](self, *map(value, args)))

    def _call(self, procedure: Procedure, params: dict[str, Any]) -> list[dict[str, Any]]:
        """``CALL procedure($a, $b, ...) [PROCEDURE MEMORY ...] YIELD fields RETURN fields`` with
        ``params`` in order, in a managed read transaction (a write transaction for a write
        procedure: Memgraph refuses one in a read transaction). The memory clause
        (:attr:`procedure_memory`) goes to Memgraph only -- a server where ``mg.procedures()``
        answers: another server's parser refuses it. A node list of integer keys under
        ``options.id_property`` (:func:`keyed_lists`) is resolved to its nodes by the same query
        (:func:`keyed_call_query`) where the server has an index on the key (:meth:`_indexed`):
        the procedure then need not scan the label for them."""
        if self._memgraph is None:
            self._probe()
        clause = f" {self.procedure_memory.clause}" if self._memgraph else ""
        fields = ", ".join(procedure.fields)
        run = self.write if procedure.write else self.read
        keyed = keyed_lists(procedure.name, params)
        if keyed and all(
            self._indexed(label, params["options"]["id_property"]) for label in keyed.values()
        ):  # the keys' nodes found by the query, not by a scan in the procedure
            options = params["options"]
            query = keyed_call_query(
                procedure.name, list(params), keyed, options["id_property"], clause.strip(), fields
            )
            return run(query, params)
        args = ", ".join(f"${name}" for name in params)
        return run(f"CALL {procedure.name}({args}){clause} YIELD {fields} RETURN {fields}", params)

    def access_factory(self) -> Callable[[Any], CypherGraphAccess]:
        """The procedures' graph access over plain Cypher on this source (per call options)."""
        return CypherGraphAccess.factory(self)


def _client_blob(answer: tuple[bytes, Any]) -> str:
    """The base64url text of a client-side sampler's ``(blob, count)``."""
    return blob.b64encode(answer[0])


CLIENT_SIDE: dict[str, Callable[..., Any]] = {
    table.PACK.name: lambda s, *a: _fallback().pack_b64(s.access_factory(), *a),
    table.SAMPLE.name: lambda s, *a: _fallback().sample_b64(s.access_factory(), *a),
    table.SAMPLE_PER_NODE.name: lambda s, *a: _fallback().sample_per_node_b64(
        s.access_factory(), *a
    ),
    table.DESCRIBE.name: lambda s, *a: _fallback().describe(s.access_factory(), *a),
    table.SAMPLE_TYPED.name: lambda s, *a: _client_blob(
        _fallback().sample_typed(s.access_factory(), *a)
    ),
    table.SCHEMA.name: lambda s, *a: _fallback().schema(s.access_factory(), *a),
    table.SAMPLE_PAIRS.name: lambda s, *a: _client_blob(
        _fallback().sample_pairs(s.access_factory(), *a)
    ),
    table.SPLIT_EDGES.name: lambda s, *a: _fallback().split_edges(s.access_factory(), *a),
    table.PROFILE.name: lambda s, *a: _fallback().profile(s, config.quote_name, *a),
    table.BUILD_RESERVOIRS.name: lambda s, *a: _fallback().build_reservoirs(s, *a),
    table.UPDATE_RESERVOIRS.name: lambda s, *a: _fallback().update_reservoirs(s, *a),
    table.STRUCTURAL.name: lambda s, *a: _fallback().structural(s.access_factory(), *a),
    table.STRUCTURAL_WRITE.name: lambda s, *a: _fallback().structural_write(s.access_factory(), *a),
}
"""Per procedure of the table, its answer computed on the client by the procedure's own code
(:mod:`memgraph_tf.client._fallback`) over a :class:`BoltSource`'s plain Cypher: ``(source,
*plain arguments) -> answer``."""


def _transient(exc: BaseException) -> bool:
    """Whether the driver would retry ``exc`` and the server answered: a retryable error that is
    not a failed or lost connection."""
    if isinstance(exc, (neo4j_errors.ServiceUnavailable, neo4j_errors.SessionExpired)):
        return False
    retryable = getattr(exc, "is_retryable", None)
    return bool(retryable()) if callable(retryable) else False


def _fallback() -> Any:
    from memgraph_tf.client import _fallback as module

    return module
