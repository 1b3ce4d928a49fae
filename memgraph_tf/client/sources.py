"""Graph sources: where feature and neighbourhood blobs and query rows come from.

Two sources offer the same operations (:class:`GraphSource`):

* :class:`BoltSource` (made by :func:`connect`) talks Bolt to Memgraph -- or to any Bolt +
  openCypher server -- over one long-lived ``neo4j`` driver. Reads and writes run as managed
  transactions, which the driver retries on transient errors. On a server without the
  ``tf_features`` procedures (Neo4j, ArcadeDB, a Memgraph without the modules) it detects that once
  and falls back to plain parameterised Cypher that fetches properties and neighbours, then packs
  the blob on the client with the very code the query module runs (:mod:`memgraph_tf.procedures`):
  slower, same bytes for the same graph, ids and seed (give nodes stable ids with
  ``options["id_property"]``).
* :class:`EmbeddedSource` runs the unchanged query modules in-process over an
  :class:`memgraph_tf.embedded.EmbeddedGraph`.

Credentials come from the arguments or from ``MEMGRAPH_TF_URI``, ``MEMGRAPH_TF_USER``,
``MEMGRAPH_TF_PASSWORD`` (and ``MEMGRAPH_TF_DATABASE``); they are handed to the driver and never
kept on the source, which also refuses to be pickled or copied, so nothing that captures a source (a
model, a dataset graph) can carry them.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import re
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import neo4j
import neo4j.exceptions as neo4j_errors

from memgraph_tf import blob
from memgraph_tf.client.errors import (
    AuthenticationError,
    ConfigurationError,
    GraphConnectionError,
    GraphDataError,
    ProcedureUnavailable,
    QueryError,
    ServerUnavailable,
)
from memgraph_tf.client.procedure_errors import called_procedures, translate_procedure_failure
from memgraph_tf.procedures.options import DEFAULT_MAX_BLOB_BYTES
from memgraph_tf.typed_datasets import SHOP_DATASET

logger = logging.getLogger(__name__)

ENV_URI = "MEMGRAPH_TF_URI"
ENV_USER = "MEMGRAPH_TF_USER"
ENV_PASSWORD = "MEMGRAPH_TF_PASSWORD"
ENV_DATABASE = "MEMGRAPH_TF_DATABASE"

SCHEMES = ("bolt", "bolt+s", "bolt+ssc", "neo4j", "neo4j+s", "neo4j+ssc")
"""URI schemes :func:`connect` accepts (``+s``: TLS with a verified certificate, ``+ssc``: TLS that
accepts a self-signed one)."""

DEFAULT_DRIVER_OPTIONS: dict[str, Any] = {
    "connection_timeout": 10.0,
    "connection_acquisition_timeout": 30.0,
    "max_transaction_retry_time": 15.0,
    "keep_alive": True,
}
"""Driver settings :func:`connect` uses unless ``driver_options`` overrides them."""

PROCEDURES = (
    "tf_features.pack",
    "tf_features.sample",
    "tf_features.sample_per_node",
    "tf_features.describe",
)

ENV_PROCEDURE_MEMORY = "MEMGRAPH_TF_PROCEDURE_MEMORY_LIMIT_MB"
UNLIMITED = "unlimited"
_MB = 1024 * 1024  # Memgraph's MB in PROCEDURE MEMORY LIMIT n MB (VisitMemoryLimit: 1024 * 1024)
DEFAULT_PROCEDURE_MEMORY_LIMIT_MB = 4 * DEFAULT_MAX_BLOB_BYTES // _MB
"""The ``PROCEDURE MEMORY LIMIT`` of the client's procedure calls by default: 1024 MB, four times
the largest blob a call builds by default (``options.max_blob_bytes``, 256 MiB). Memgraph counts
only what a procedure allocates through its API; a blob leaves as base64 text (x4/3), held once as
the value the procedure returns and once as the result record's copy: about 2.7x the blob."""
MAX_PROCEDURE_MEMORY_LIMIT_MB = (2**63 - 1) // _MB
"""The largest limit: Memgraph reads it as an int64 literal and multiplies it by 2^20
(``EvaluateMemoryLimit`` refuses an overflow)."""


@dataclasses.dataclass(frozen=True)
class ProcedureMemory:
    """The memory limit the client's procedure calls carry: ``limit_mb`` megabytes (2^20 bytes,
    as Memgraph counts them), or None for no limit. Make one with :func:`procedure_memory`."""

    limit_mb: int | None

    @property
    def limit_bytes(self) -> int | None:
        """The limit in bytes (None: unlimited)."""
        return None if self.limit_mb is None else self.limit_mb * _MB

    @property
    def clause(self) -> str:
        """Memgraph's clause (``CALL m.p(...) PROCEDURE MEMORY ... YIELD ...``; grammar:
        ``Cypher.g4`` ``procedureMemoryLimit``): ``PROCEDURE MEMORY LIMIT 1024 MB`` or
        ``PROCEDURE MEMORY UNLIMITED``."""
        if self.limit_mb is None:
            return "PROCEDURE MEMORY UNLIMITED"
        return f"PROCEDURE MEMORY LIMIT {self.limit_mb} MB"


def procedure_memory(limit_mb: int | str | None = None) -> ProcedureMemory:
    """The procedure memory limit from ``limit_mb`` -- an integer number of megabytes from 1 to
    :data:`MAX_PROCEDURE_MEMORY_LIMIT_MB` (also as a decimal string) or ``"unlimited"`` -- or, when
    None, from ``MEMGRAPH_TF_PROCEDURE_MEMORY_LIMIT_MB`` (same values), else
    :data:`DEFAULT_PROCEDURE_MEMORY_LIMIT_MB`. Raises :class:`ConfigurationError` naming the
    argument or the variable and the bad value."""
    name = "procedure_memory_limit_mb"
    if limit_mb is None:
        limit_mb = os.environ.get(ENV_PROCEDURE_MEMORY) or None
        if limit_mb is None:
            return ProcedureMemory(DEFAULT_PROCEDURE_MEMORY_LIMIT_MB)
        name = ENV_PROCEDURE_MEMORY
    value: Any = limit_mb
    if isinstance(value, str):
        text = value.strip()
        if text.lower() == UNLIMITED:
            return ProcedureMemory(None)
        value = int(text) if text.isascii() and text.isdigit() else None
    if (
        isinstance(value, int)
        and not isinstance(value, bool)
        and 1 <= value <= MAX_PROCEDURE_MEMORY_LIMIT_MB
    ):
        return ProcedureMemory(value)
    raise ConfigurationError(
        f"{name}: expected a whole number of megabytes from 1 to {MAX_PROCEDURE_MEMORY_LIMIT_MB} "
        f"or {UNLIMITED!r}, got {limit_mb!r}"
    )


_QUERY_SHOWN_CHARS = 200
_NAME_RE = re.compile(r"^[^`\x00]+$")


def _short(query: str) -> str:
    query = " ".join(query.split())
    return query if len(query) <= _QUERY_SHOWN_CHARS else query[: _QUERY_SHOWN_CHARS - 3] + "..."


def quote_name(name: str, param: str) -> str:
    """``name`` (a property or label name) as a backquoted Cypher identifier, safe to place in a
    query. Raises :class:`ConfigurationError` naming ``param`` for anything that cannot be quoted
    (not a string, empty, or holding a backquote or NUL). The one name check of every query the
    client, batch inference and the Beam transforms build."""
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise ConfigurationError(
            f"{param}: expected a non-empty name without backquotes or NUL, got {name!r}"
        )
    return f"`{name}`"


def _server_message(exc: BaseException) -> str:
    message = getattr(exc, "message", None)
    return str(message if message else exc)


class GraphSource:
    """The operations every source offers. Node ids are integers: internal ids, or the values of
    ``options["id_property"]`` when given.

    Blob operations return raw blob bytes (``*_b64`` variants: the base64url text the procedures
    return, for ``unpack_blob(..., encoding="base64")`` in a graph). Subclasses implement the
    ``*_b64`` methods, :meth:`run` and :meth:`_write_checked` (the write after
    :meth:`write_columns`' checks).
    """

    kind = "graph"

    @property
    def lock(self) -> Any:
        """The source's concurrency contract: a reentrant context manager. While a thread holds it,
        no other thread of this process uses the source, so a sequence of calls and direct reads
        of an embedded graph (``source.graph``) is atomic with respect to the source's other users
        (the fetch threads of batch inference, Beam's DoFns). Every call of the source takes it
        itself, so holding it is only needed around several calls. An :class:`EmbeddedSource`'s
        is a ``threading.RLock`` (its in-memory graph is not safe for concurrent use); a
        :class:`BoltSource`'s does nothing (the driver is thread-safe). A fork made while holding
        it copies no thread in the middle of a graph call."""
        return _NO_LOCK

    # -- blobs ------------------------------------------------------------------------------------
    def pack_blob_b64(
        self,
        node_ids: Sequence[int],
        properties: Sequence[str],
        options: Mapping[str, Any] | None = None,
    ) -> str:
        raise NotImplementedError

    def sample_blob_b64(
        self,
        seeds: Sequence[int],
        fanouts: Sequence[int],
        properties: Sequence[str],
        options: Mapping[str, Any] | None = None,
    ) -> str:
        raise NotImplementedError

    def sample_blobs_per_node_b64(
        self,
        seeds: Sequence[int],
        fanouts: Sequence[int],
        properties: Sequence[str],
        options: Mapping[str, Any] | None = None,
    ) -> list[str]:
        raise NotImplementedError

    def pack_blob(
        self,
        node_ids: Sequence[int],
        properties: Sequence[str],
        options: Mapping[str, Any] | None = None,
    ) -> bytes:
        """The ``tf_features.pack`` blob (``ids``, ``features``, ``labels``...) of ``node_ids``."""
        return blob.b64decode(self.pack_blob_b64(node_ids, properties, options))

    def sample_blob(
        self,
        seeds: Sequence[int],
        fanouts: Sequence[int],
        properties: Sequence[str],
        options: Mapping[str, Any] | None = None,
    ) -> bytes:
        """The ``tf_features.sample`` blob (``ids_h``, ``features_h``, ``mask_h``, ``labels``)."""
        return blob.b64decode(self.sample_blob_b64(seeds, fanouts, properties, options))

    def sample_blobs_per_node(
        self,
        seeds: Sequence[int],
        fanouts: Sequence[int],
        properties: Sequence[str],
        options: Mapping[str, Any] | None = None,
    ) -> list[bytes]:
        """One blob per seed (n = 1), in seed order; each equals ``sample_blob([seed], ...)``."""
        return [
            blob.b64decode(t)
            for t in self.sample_blobs_per_node_b64(seeds, fanouts, properties, options)
        ]

    def describe(
        self, properties: Sequence[str], options: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """What ``tf_features.describe`` reports for ``properties`` (docs/query-modules.md):
        ``feature_width``, ``dtype``, ``columns``, ``sections`` (the pack layout, or the sample
        layout with ``options["fanouts"]``) and ``num_classes`` (with ``options["label_property"]``:
        1 + the largest class among the nodes with ``options["label"]``; else None).

        Guarantees: the map the procedure returns, without packing or fetching any features; a
        bad input raises :class:`GraphDataError` with the procedure's message."""
        raise NotImplementedError

    # -- typed (heterogeneous) graphs: tf_features.sample_typed / schema (issue 24) ---------------
    def sample_typed_b64(
        self,
        seeds: Sequence[int],
        num_neighbors: Mapping[str, Sequence[int]],
        properties: Mapping[str, Sequence[str]] | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> str:
        """``tf_features.sample_typed``'s base64url blob (see :meth:`sample_typed`)."""
        raise NotImplementedError

    def sample_typed(
        self,
        seeds: Sequence[int],
        num_neighbors: Mapping[str, Sequence[int]],
        properties: Mapping[str, Sequence[str]] | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> bytes:
        """The typed sample blob of ``seeds`` (nodes of the seed label ``options["label"]``):
        ``num_neighbors`` maps edge patterns (``"(:User)-[:BOUGHT]->(:Product)"``) to a fanout per
        hop, ``properties`` maps labels to feature property names (memgraph_tf.layout,
        ``typed_sample_sections``; docs/query-modules.md). Guarantees: the same bytes from the
        procedure and from the client-side sampler for the same graph, ids and ``options["seed"]``;
        a bad input raises :class:`GraphDataError` with the procedure's message."""
        return blob.b64decode(self.sample_typed_b64(seeds, num_neighbors, properties, options))

    def schema(
        self,
        properties: Mapping[str, Sequence[str]] | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """What ``tf_features.schema`` reports: ``labels`` (per label its count and the kind and
        width of the feature properties asked for it in ``properties``, checked on every node)
        and ``relationships`` (per (source label, type, target label) the count)."""
        raise NotImplementedError

    def node_ids(
        self,
        *,
        label: str | None = None,
        id_property: str | None = None,
        where: Mapping[str, Any] | None = None,
    ) -> list[int]:
        """Ids of all nodes (with ``label``, and with each property of ``where`` equal to its
        value: e.g. ``{"split": "train"}``): values of ``id_property`` (nodes without it
        skipped), or internal ids; ascending."""
        raise NotImplementedError

    # -- link prediction: tf_features.sample_pairs / split_edges (issue 25) -----------------------
    def sample_pairs_b64(
        self,
        sources: Sequence[int],
        targets: Sequence[int],
        num_neighbors: Mapping[str, Any],
        properties: Mapping[str, Sequence[str]] | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> str:
        """``tf_features.sample_pairs``' base64url blob (see :meth:`sample_pairs`)."""
        raise NotImplementedError

    def sample_pairs(
        self,
        sources: Sequence[int],
        targets: Sequence[int],
        num_neighbors: Mapping[str, Any],
        properties: Mapping[str, Sequence[str]] | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> bytes:
        """The pair blob of ``(sources[i], targets[i])`` (nodes of ``options["source_label"]`` and
        ``options["target_label"]``): both endpoints' typed neighbourhoods with the pair's own
        relationships removed at every hop, ``options["negatives"]`` drawn negatives per pair and
        ``pair_labels`` (memgraph_tf.layout, ``pair_sample_sections``; docs/query-modules.md).
        Guarantees: the same bytes from the procedure and from the client-side sampler for the
        same graph, ids and ``options["seed"]``; a bad input raises :class:`GraphDataError` with
        the procedure's message."""
        return blob.b64decode(
            self.sample_pairs_b64(sources, targets, num_neighbors, properties, options)
        )

    def split_edges(self, pattern: str, options: Mapping[str, Any] | None = None) -> dict[str, int]:
        """``tf_features.split_edges``: writes ``train``/``val``/``test`` into
        ``options["split_property"]`` (default ``split``) of every relationship ``pattern``
        matches, drawn from ``options["seed"]``; returns ``{"train", "val", "test",
        "relationships"}``. Guarantees: idempotent for a seed, the same split from the procedure
        and the client-side fallback (with ``options["id_property"]``), run in a write
        transaction; a bad input raises :class:`GraphDataError` and writes nothing."""
        raise NotImplementedError

    # -- queries and writes -----------------------------------------------------------------------
    def run(
        self,
        query: str,
        parameters: Mapping[str, Any] | None = None,
        *,
        fetch_size: int | None = None,
    ) -> Iterator[Mapping[str, Any]]:
        """Runs ``query`` and yields its records lazily (mapping column -> value)."""
        raise NotImplementedError

    def write_properties(
        self,
        node_ids: Sequence[int],
        name: str,
        values: Sequence[Any],
        *,
        id_property: str | None = None,
        label: str | None = None,
        batch_size: int = 1000,
    ) -> int:
        """Sets property ``name`` of each node to its value, in batches of ``batch_size`` (one
        managed write transaction each); nodes are found by ``id_property`` (among ``label`` nodes,
        which lets the server use a label-property index) or by internal id. Returns the number of
        nodes written (ids that match no node are not counted).

        Idempotent: writing the same values again leaves the graph as it was."""
        node_ids = [_to_python(i) for i in node_ids]
        values = _to_python(list(values))
        _check_write_args(node_ids, values, batch_size)
        quote_name(name, "name")
        return self._write_checked(
            node_ids, {name: values}, id_property=id_property, label=label, batch_size=batch_size
        )

    def write_columns(
        self,
        node_ids: Sequence[int],
        columns: Mapping[str, Sequence[Any]],
        *,
        id_property: str | None = None,
        label: str | None = None,
        batch_size: int = 1000,
    ) -> int:
        """Sets several properties per node: ``columns`` maps a property name to one value per
        node id. Guarantees: a node's properties are set together, in one statement of one
        managed write transaction per batch of ``batch_size`` nodes (over Bolt), under the
        source's lock (embedded), so no node is left with some of them written; nodes are found
        as in :meth:`write_properties`. Returns the number of nodes written. Idempotent."""
        node_ids = [_to_python(i) for i in node_ids]
        if not isinstance(columns, Mapping) or not columns:
            raise ConfigurationError(
                f"columns: expected a non-empty mapping of property name -> values, got {columns!r}"
            )
        checked: dict[str, list[Any]] = {}
        for name, values in columns.items():
            quote_name(name, "columns")
            checked[name] = _to_python(list(values))
            _check_write_args(
                node_ids,
                checked[name],
                batch_size,
                f"columns[{name!r}]",
                length_only=len(checked) > 1,
            )
        return self._write_checked(
            node_ids, checked, id_property=id_property, label=label, batch_size=batch_size
        )

    def _write_checked(
        self,
        node_ids: list[int],
        columns: dict[str, list[Any]],
        *,
        id_property: str | None,
        label: str | None,
        batch_size: int,
    ) -> int:
        """:meth:`write_columns` after its checks: ``node_ids`` are ints, each column holds one
        plain Python value per id under a valid property name, and ``batch_size`` >= 1."""
        raise NotImplementedError

    def write_property(
        self,
        node_id: int,
        name: str,
        value: Any,
        *,
        id_property: str | None = None,
        label: str | None = None,
    ) -> int:
        """Sets one node's property (see :meth:`write_properties`)."""
        return self.write_properties([node_id], name, [value], id_property=id_property, label=label)

    def close(self) -> None:
        """Releases the source's resources; idempotent."""

    def __enter__(self) -> GraphSource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- no capture --------------------------------------------------------------------------------
    def __reduce__(self) -> Any:
        raise TypeError(
            f"{type(self).__name__} cannot be pickled or copied: it holds a live connection, and "
            "its "
            f"credentials must never be serialised (pass a source to each process instead)"
        )

    def __deepcopy__(self, memo: Any) -> Any:
        self.__reduce__()

    def __copy__(self) -> Any:
        self.__reduce__()


class _NoLock:
    """The :attr:`GraphSource.lock` of a thread-safe source: a reentrant no-op."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


_NO_LOCK = _NoLock()


def _check_write_args(
    node_ids: Sequence[int],
    values: Sequence[Any],
    batch_size: int,
    param: str = "values",
    *,
    length_only: bool = False,
) -> None:
    """One value per node id in ``values`` (named ``param``), then, unless ``length_only`` (the ids
    and batch size were checked with an earlier column), ``batch_size`` >= 1 and integer ids."""
    if len(node_ids) != len(values):
        raise ConfigurationError(
            f"{param}: expected one value per node id ({len(node_ids)}), got {len(values)}"
        )
    if length_only:
        return
    if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1:
        raise ConfigurationError(f"batch_size: expected an integer >= 1, got {batch_size!r}")
    for i, node_id in enumerate(node_ids):
        if not isinstance(node_id, int) or isinstance(node_id, bool):
            raise ConfigurationError(f"node_ids[{i}]: expected an integer id, got {node_id!r}")


def _to_python(value: Any) -> Any:
    """numpy scalars/arrays and eager tensors -> plain Python values the Bolt driver accepts."""
    if hasattr(value, "numpy") and callable(value.numpy):
        value = value.numpy()
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, (list, tuple)):
        return [_to_python(v) for v in value]
    return value


# ------------------------------------------------------------------------------------------------
# Bolt
# ------------------------------------------------------------------------------------------------


def _resolve_uri(uri: str | None) -> str:
    uri = uri if uri is not None else os.environ.get(ENV_URI)
    if not uri:
        raise ConfigurationError(
            f"uri: expected a Bolt URI such as bolt://host:7687 (argument or {ENV_URI}), got none"
        )
    if not isinstance(uri, str):
        raise ConfigurationError(f"uri: expected a string, got {type(uri).__name__}")
    parsed = urllib.parse.urlsplit(uri)
    if parsed.scheme not in SCHEMES:
        raise ConfigurationError(
            f"uri: expected one of the schemes {', '.join(s + '://' for s in SCHEMES)}, "
            f"got {parsed.scheme + '://' if parsed.scheme else 'none'} in {_redact(uri)!r}"
        )
    if parsed.username or parsed.password:
        raise ConfigurationError(
            "uri: expected no user or password inside the URI (pass auth=(user, password) or set "
            f"{ENV_USER}/{ENV_PASSWORD}), got credentials in {_redact(uri)!r}"
        )
    if not parsed.hostname:
        raise ConfigurationError(f"uri: expected a host, got none in {uri!r}")
    return uri


def _redact(uri: str) -> str:
    parsed = urllib.parse.urlsplit(uri)
    if parsed.username or parsed.password:
        host = parsed.hostname or ""
        if parsed.port:
            host += f":{parsed.port}"
        parsed = parsed._replace(netloc=f"***@{host}")
    return urllib.parse.urlunsplit(parsed)


def _resolve_auth(auth: Any) -> tuple[Any, str | None]:
    """(driver auth, user name for messages)."""
    if auth is None:
        user = os.environ.get(ENV_USER)
        password = os.environ.get(ENV_PASSWORD)
        if user is None and password is None:
            return None, None
        return neo4j.basic_auth(user or "", password or ""), user or ""
    if isinstance(auth, (tuple, list)):
        if len(auth) != 2 or not all(isinstance(a, str) for a in auth):
            raise ConfigurationError(
                "auth: expected (user, password) as two strings, a neo4j auth object or None, "
                f"got a {type(auth).__name__} of {len(auth)} item(s)"
            )
        return neo4j.basic_auth(auth[0], auth[1]), auth[0]
    if isinstance(auth, neo4j.Auth):
        return auth, getattr(auth, "principal", None)
    raise ConfigurationError(
        f"auth: expected (user, password), a neo4j auth object or None, got {type(auth).__name__}"
    )


def connect(
    uri: str | None = None,
    auth: Any = None,
    database: str | None = None,
    *,
    use_procedures: bool | None = None,
    fetch_size: int = 1000,
    verify: bool = True,
    procedure_memory_limit_mb: int | str | None = None,
    **driver_options: Any,
) -> BoltSource:
    """Opens a :class:`BoltSource` over one long-lived ``neo4j`` driver.

    ``uri`` (else ``MEMGRAPH_TF_URI``): ``bolt://``, ``bolt+s://``, ``bolt+ssc://``, ``neo4j://``
    (and ``neo4j+s``/``neo4j+ssc``). ``auth``: ``(user, password)``, a neo4j auth object, or None to
    use ``MEMGRAPH_TF_USER``/``MEMGRAPH_TF_PASSWORD`` (no auth when neither is set). ``database``:
    else ``MEMGRAPH_TF_DATABASE``, else the server's default. ``use_procedures``: None detects the
    ``tf_features`` procedures on first use; False always packs on the client; True requires them.
    ``driver_options`` go to ``neo4j.GraphDatabase.driver`` over :data:`DEFAULT_DRIVER_OPTIONS`.
    ``procedure_memory_limit_mb``: the ``PROCEDURE MEMORY`` clause of the ``tf_features`` calls
    (:func:`procedure_memory`: megabytes or ``"unlimited"``; None:
    ``MEMGRAPH_TF_PROCEDURE_MEMORY_LIMIT_MB``, else :data:`DEFAULT_PROCEDURE_MEMORY_LIMIT_MB`).

    Guarantees: with ``verify`` (the default) the server was reached and accepted the credentials
    before this returns, or :class:`ServerUnavailable` / :class:`AuthenticationError` was raised;
    the credentials are given to the driver and kept nowhere else.
    """
    uri = _resolve_uri(uri)
    driver_auth, user = _resolve_auth(auth)
    database = database if database is not None else os.environ.get(ENV_DATABASE) or None
    if use_procedures not in (None, True, False):
        raise ConfigurationError(
            f"use_procedures: expected None (detect), True or False, got {use_procedures!r}"
        )
    if not isinstance(fetch_size, int) or isinstance(fetch_size, bool) or fetch_size < 1:
        raise ConfigurationError(f"fetch_size: expected an integer >= 1, got {fetch_size!r}")
    memory = procedure_memory(procedure_memory_limit_mb)
    options = dict(DEFAULT_DRIVER_OPTIONS)
    options.update(driver_options)
    try:
        driver = neo4j.GraphDatabase.driver(uri, auth=driver_auth, **options)
    except (neo4j_errors.ConfigurationError, ValueError, TypeError) as exc:
        raise ConfigurationError(f"driver_options: the neo4j driver rejected them: {exc}") from exc
    source = BoltSource(
        driver,
        uri=uri,
        database=database,
        user=user,
        use_procedures=use_procedures,
        fetch_size=fetch_size,
        procedure_memory_limit_mb=UNLIMITED if memory.limit_mb is None else memory.limit_mb,
    )
    if verify:
        try:
            source.verify()
        except BaseException:
            source.close()
            raise
    return source


#: The URI prefix of a dataset loaded into an in-process graph (:func:`open_graph`).
EMBEDDED_SCHEME = "embedded:"


def open_graph(uri: str, *, database: str | None = None) -> GraphSource:
    """The graph source a URI names -- the one opener of ``memgraph-tf serve --graph``,
    ``memgraph-tf classify --graph`` and the Beam workers:

    * ``embedded:NAME``: a dataset shipped in the package (``cora``, ``citeseer``) or
      ``synthetic``, loaded into an in-process graph that runs the unchanged query modules
      (:class:`EmbeddedSource`; ``database`` is ignored);
    * ``embedded:shop``: the demo's generated typed shop graph
      (:func:`memgraph_tf.typed_datasets.demo_shop_graph`), the same way;
    * ``embedded:DIR/NAME``: the Planetoid dataset NAME from ``DIR/ind.NAME.*``, the same way;
    * anything else: a Bolt URI for :func:`connect` (with ``database``), which takes the user name
      and password from ``MEMGRAPH_TF_USER`` / ``MEMGRAPH_TF_PASSWORD`` -- never from the URI, a
      command line or a bundle.

    Guarantees: each call opens a new source, owned by the caller (close it); an unknown dataset
    raises ``ValueError`` naming the choices, a bad Bolt URI :class:`ConfigurationError`, an
    unreachable server :class:`ServerUnavailable`."""
    if not isinstance(uri, str):
        raise ConfigurationError(f"uri: expected a string, got {type(uri).__name__}")
    if uri.startswith(EMBEDDED_SCHEME):
        import pathlib

        from memgraph_tf.datasets import planetoid_graph

        spec = uri[len(EMBEDDED_SCHEME) :]
        if spec == SHOP_DATASET:
            from memgraph_tf.typed_datasets import demo_shop_graph, typed_embedded_graph

            return EmbeddedSource(typed_embedded_graph(demo_shop_graph())[0])
        if "/" not in spec:
            return EmbeddedSource(planetoid_graph(spec))
        path = pathlib.Path(spec)
        return EmbeddedSource(planetoid_graph(path.name, path.parent))
    return connect(uri, database=database)


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
    ) -> None:
        self._driver = driver
        self.uri = _redact(uri)
        self.database = database
        self._user = user
        self._use_procedures = use_procedures
        self._memgraph: bool | None = (
            None  # whether mg.procedures() answers: the server is Memgraph
        )
        self.fetch_size = fetch_size
        self.procedure_memory = procedure_memory(procedure_memory_limit_mb)
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
            except (QueryError, ServerUnavailable, ValueError, IndexError) as exc:
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
            return AuthenticationError(
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
            during = f" while running {_short(query)!r}" if query else ""
            return ServerUnavailable(
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
            return QueryError(
                f"{where}: query failed: {message}"
                + (f" (query: {_short(query)!r})" if query else "")
            )
        if isinstance(exc, neo4j_errors.DriverError):
            return GraphConnectionError(f"{where}: driver error: {exc}")
        return exc  # anything else unchanged (the caller re-raises it)

    def _session(self, *, write: bool = False, fetch_size: int | None = None) -> neo4j.Session:
        if self._closed:
            raise ConfigurationError(f"{self!r}: expected an open source, got a closed one")
        kwargs: dict[str, Any] = {
            "default_access_mode": neo4j.WRITE_ACCESS if write else neo4j.READ_ACCESS,
            "fetch_size": fetch_size or self.fetch_size,
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
        def work(tx: neo4j.ManagedTransaction) -> list[dict[str, Any]]:
            return [record.data() for record in tx.run(query, dict(parameters or {}))]

        try:
            with self._session(write=write) as session:
                return (session.execute_write if write else session.execute_read)(work)
        except (neo4j_errors.Neo4jError, neo4j_errors.DriverError, OSError) as exc:
            raise self._translate(exc, query) from exc

    def run(
        self,
        query: str,
        parameters: Mapping[str, Any] | None = None,
        *,
        fetch_size: int | None = None,
    ) -> Iterator[neo4j.Record]:
        """Yields the records of ``query`` as the server streams them (``fetch_size`` per pull).

        Guarantees: at most about ``fetch_size`` records are buffered; the session is closed when
        the iterator is exhausted or closed; a lost connection raises :class:`ServerUnavailable`
        (not a hang: the driver sees the socket close). Not retried: rows may already be consumed.
        """
        params = dict(parameters or {})
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

    def _write_checked(
        self,
        node_ids: list[int],
        columns: dict[str, list[Any]],
        *,
        id_property: str | None,
        label: str | None,
        batch_size: int,
    ) -> int:
        names = list(columns)
        sets = ", ".join(f"n.{quote_name(name, 'name')} = row.v{j}" for j, name in enumerate(names))
        node = f"(n:{quote_name(label, 'label')})" if label else "(n)"
        match = (
            f"MATCH {node} WHERE n.{quote_name(id_property, 'id_property')} = row.id"
            if id_property
            else f"MATCH {node} WHERE id(n) = row.id"
        )
        query = f"UNWIND $rows AS row {match} SET {sets} RETURN count(n) AS written"
        written = 0
        for start in range(0, len(node_ids), batch_size):
            stop = start + batch_size
            rows = [
                {"id": i, **{f"v{j}": v for j, v in enumerate(values)}}
                for i, *values in zip(
                    node_ids[start:stop], *(columns[name][start:stop] for name in names)
                )
            ]
            result = self.write(query, {"rows": rows})
            written += int(result[0]["written"]) if result else 0
        return written

    def node_ids(
        self,
        *,
        label: str | None = None,
        id_property: str | None = None,
        where: Mapping[str, Any] | None = None,
    ) -> list[int]:
        node = f"(n:{quote_name(label, 'label')})" if label else "(n)"
        key = f"n.{quote_name(id_property, 'id_property')}" if id_property else "id(n)"
        tests = [f"{key} IS NOT NULL"]
        params: dict[str, Any] = {}
        for j, (name, value) in enumerate(dict(where or {}).items()):
            tests.append(f"n.{quote_name(name, 'where')} = $w{j}")
            params[f"w{j}"] = _to_python(value)
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
        except (QueryError, ValueError) as exc:
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

    def _call(self, procedure: str, params: dict[str, Any], fields: str) -> list[dict[str, Any]]:
        """``CALL procedure($a, $b, ...) [PROCEDURE MEMORY ...] YIELD fields RETURN fields`` with
        ``params`` in order, in a managed read transaction. The memory clause
        (:attr:`procedure_memory`) goes to Memgraph only -- a server where ``mg.procedures()``
        answers: another server's parser refuses it. A node list of integer keys under
        ``options.id_property`` (:func:`keyed_lists`) is resolved to its nodes by the same query
        (:func:`keyed_call_query`) where the server has an index on the key (:meth:`_indexed`):
        the procedure then need not scan the label for them."""
        if self._memgraph is None:
            self._probe()
        clause = f" {self.procedure_memory.clause}" if self._memgraph else ""
        keyed = keyed_lists(procedure, params)
        if keyed and all(
            self._indexed(label, params["options"]["id_property"]) for label in keyed.values()
        ):  # the keys' nodes found by the query, not by a scan in the procedure
            options = params["options"]
            query = keyed_call_query(
                procedure, list(params), keyed, options["id_property"], clause.strip(), fields
            )
            return self.read(query, params)
        args = ", ".join(f"${name}" for name in params)
        return self.read(f"CALL {procedure}({args}){clause} YIELD {fields} RETURN {fields}", params)

    def pack_blob_b64(
        self,
        node_ids: Sequence[int],
        properties: Sequence[str],
        options: Mapping[str, Any] | None = None,
    ) -> str:
        node_ids, properties, options = _to_python(list(node_ids)), list(properties), _opts(options)
        if self.has_procedures():
            rows = self._call(
                "tf_features.pack",
                {"nodes": node_ids, "properties": properties, "options": options},
                "blob",
            )
            return rows[0]["blob"]
        return _fallback().pack_b64(CypherGraphAccess.factory(self), node_ids, properties, options)

    def sample_blob_b64(
        self,
        seeds: Sequence[int],
        fanouts: Sequence[int],
        properties: Sequence[str],
        options: Mapping[str, Any] | None = None,
    ) -> str:
        seeds, fanouts, properties, options = (
            _to_python(list(seeds)),
            _to_python(list(fanouts)),
            list(properties),
            _opts(options),
        )
        if self.has_procedures():
            rows = self._call(
                "tf_features.sample",
                {"seeds": seeds, "fanouts": fanouts, "properties": properties, "options": options},
                "blob",
            )
            return rows[0]["blob"]
        return _fallback().sample_b64(
            CypherGraphAccess.factory(self), seeds, fanouts, properties, options
        )

    def sample_blobs_per_node_b64(
        self,
        seeds: Sequence[int],
        fanouts: Sequence[int],
        properties: Sequence[str],
        options: Mapping[str, Any] | None = None,
    ) -> list[str]:
        seeds, fanouts, properties, options = (
            _to_python(list(seeds)),
            _to_python(list(fanouts)),
            list(properties),
            _opts(options),
        )
        if self.has_procedures():
            rows = self._call(
                "tf_features.sample_per_node",
                {"seeds": seeds, "fanouts": fanouts, "properties": properties, "options": options},
                "node_id, blob",
            )
            return [row["blob"] for row in rows]
        return _fallback().sample_per_node_b64(
            CypherGraphAccess.factory(self), seeds, fanouts, properties, options
        )

    def describe(
        self, properties: Sequence[str], options: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        properties, options = list(properties), _opts(options)
        if self.has_procedures():
            rows = self._call(
                "tf_features.describe",
                {"properties": properties, "options": options},
                _DESCRIBE_FIELDS,
            )
            return dict(rows[0])
        return _fallback().describe(CypherGraphAccess.factory(self), properties, options)

    def sample_typed_b64(
        self,
        seeds: Sequence[int],
        num_neighbors: Mapping[str, Sequence[int]],
        properties: Mapping[str, Sequence[str]] | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> str:
        seeds, num_neighbors, properties, options = _typed_args(
            seeds, num_neighbors, properties, options
        )
        if self.has_procedures():
            params = {
                "seeds": seeds,
                "num_neighbors": num_neighbors,
                "properties": properties,
                "options": options,
            }
            return self._call("tf_features.sample_typed", params, "blob")[0]["blob"]
        data, _ = _fallback().sample_typed(
            self._typed_graph(), seeds, num_neighbors, properties, options
        )
        return blob.b64encode(data)

    def schema(
        self,
        properties: Mapping[str, Sequence[str]] | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        properties, options = _typed_properties(properties), _opts(options)
        if self.has_procedures():
            params = {"properties": properties, "options": options}
            return dict(self._call("tf_features.schema", params, "labels, relationships")[0])
        return _fallback().schema(self._typed_graph(), properties, options)

    def _typed_graph(self) -> Any:
        """The client-side typed graph (metagraph queries and typed reads over plain Cypher)."""
        return _fallback().CypherTypedGraph(self, CypherGraphAccess.factory(self), quote_name)

    def sample_pairs_b64(
        self,
        sources: Sequence[int],
        targets: Sequence[int],
        num_neighbors: Mapping[str, Any],
        properties: Mapping[str, Sequence[str]] | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> str:
        args = _pair_args(sources, targets, num_neighbors, properties, options)
        if self.has_procedures():
            names = ("sources", "targets", "num_neighbors", "properties", "options")
            return self._call("tf_features.sample_pairs", dict(zip(names, args)), "blob")[0]["blob"]
        data, _ = _fallback().sample_pairs(self._pair_graph(), *args)
        return blob.b64encode(data)

    def split_edges(self, pattern: str, options: Mapping[str, Any] | None = None) -> dict[str, int]:
        options = _opts(options)
        if self.has_procedures():  # a write procedure: Memgraph refuses it in a read transaction
            fields = "train, val, test, relationships"
            clause = f" {self.procedure_memory.clause}" if self._memgraph else ""
            rows = self.write(
                f"CALL tf_features.split_edges($pattern, $options){clause} YIELD {fields} "
                f"RETURN {fields}",
                {"pattern": pattern, "options": options},
            )
            return dict(rows[0])
        return _fallback().split_edges(self._pair_graph(), pattern, options)

    def _pair_graph(self) -> Any:
        """The client-side typed graph that also lists and marks relationships (split_edges)."""
        return _fallback().CypherPairGraph(self, CypherGraphAccess.factory(self), quote_name)


_DESCRIBE_FIELDS = "feature_width, dtype, columns, sections, num_classes"

# -- keys resolved by the caller ------------------------------------------------------------------
# A procedure given integer keys under options.id_property finds their nodes itself, and the mgp
# API has no index lookup: it scans every node of the label on each call. The sources resolve the
# keys first, the way Memgraph answers MATCH (n:Label) WHERE n.id = k (through a label-property
# index when there is one), and pass the nodes instead; a key with no node or with two is passed
# as it is, so the procedure's own lookup gives its error for it (and only then scans).

PROCEDURE_PARAMS = {
    "tf_features.pack": ("nodes", "properties", "options"),
    "tf_features.sample": ("seeds", "fanouts", "properties", "options"),
    "tf_features.sample_per_node": ("seeds", "fanouts", "properties", "options"),
    "tf_features.sample_typed": ("seeds", "num_neighbors", "properties", "options"),
    "tf_features.sample_pairs": ("sources", "targets", "num_neighbors", "properties", "options"),
}
"""The arguments, in order, of the procedures whose node lists a source may resolve itself."""


def _lookup_label(value: Any) -> bool:
    return isinstance(value, str) and _NAME_RE.match(value) is not None


def keyed_lists(procedure: str, args: Mapping[str, Any]) -> dict[str, str | None]:
    """The node-list arguments of a call of ``procedure`` (``args``: name -> value, as
    :data:`PROCEDURE_PARAMS` names them) whose keys the caller resolves to nodes: name -> the label
    the procedure looks them up in (None: every node). Empty -- the call goes as it is, and the
    procedure gives its own answer or error -- unless ``options.id_property`` and that label are
    names a query can hold, and each such list is a non-empty list of integers (of equal lengths
    for ``sample_pairs``)."""
    options = args.get("options")
    if procedure not in PROCEDURE_PARAMS or not isinstance(options, Mapping):
        return {}
    if not _lookup_label(options.get("id_property")):
        return {}
    label = options.get("label")
    if procedure == "tf_features.sample_pairs":
        source = options.get("source_label")
        target = options.get("target_label")
        lists: dict[str, Any] = {"sources": source, "targets": source if target is None else target}
    elif procedure == "tf_features.sample_typed":
        lists = {"seeds": label}
    else:  # pack / sample / sample_per_node: options.label is optional
        lists = {PROCEDURE_PARAMS[procedure][0]: label}
        if label is None:
            return {name: None for name in lists if _int_list(args.get(name))}
    if not all(_lookup_label(lb) for lb in lists.values()):
        return {}
    if not all(_int_list(args.get(name)) for name in lists):
        return {}
    if len({len(args[name]) for name in lists}) != 1:
        return {}
    return lists


def _int_list(value: Any) -> bool:
    return (
        isinstance(value, list)
        and bool(value)
        and all(type(v) is int for v in value)  # no bool, no float: the procedure names those
    )


def resolved_keys(keys: Sequence[int], find: Callable[[int], Sequence[Any]]) -> list[Any]:
    """``keys`` with each key that ``find`` (key -> the nodes holding it) answers with exactly one
    node replaced by that node; the others -- no node, or two -- kept as keys, for the procedure
    to name (``seeds[i]: unknown node id ...``, ``expected unique ids ...``)."""
    out: list[Any] = []
    for key in keys:
        found = find(key)
        out.append(found[0] if len(found) == 1 else key)
    return out


INDEX_INFO_TTL_S = 60.0
"""How long a :class:`BoltSource` trusts what ``SHOW INDEX INFO`` said (an index created later is
used from then on)."""

_KEYED = "mgtf_"  # the prefix of the variables a keyed call's query binds


def keyed_lookup_cypher(keyed: Mapping[str, str | None], id_property: str) -> str:
    """The Cypher that binds, for each list ``$name`` of ``keyed`` (name -> label), a variable
    ``mgtf_<name>`` to :func:`resolved_keys` of it: per position, the one node (with the label)
    whose ``id_property`` equals the key, else the key itself -- in the list's order, duplicates
    kept. The lists have equal lengths (:func:`keyed_lists`) and are walked together.

    Memgraph answers each ``WHERE n.id = $name[i]`` through a label-property index when one
    exists (``CREATE INDEX ON :Label(id)``; its planner rewrites an Optional's branch with such
    lookups too: ``src/query/plan/rewrite/index_lookup.hpp``), sorts before ``collect()``
    (docs: ``querying/clauses/with``) and passes a collected node list to a procedure's list
    argument (docs: ``node_similarity``, ``WITH COLLECT(m) AS nodes1 CALL ...(nodes1, ...)``)."""
    prop = quote_name(id_property, "options.id_property")
    names = list(keyed)
    first = names[0]
    parts = [f"UNWIND range(0, size(${first}) - 1) AS {_KEYED}i"]
    carried: list[str] = []
    for j, name in enumerate(names):
        label = keyed[name]
        node = f"{_KEYED}n{j}" + (f":{quote_name(label, 'label')}" if label else "")
        parts.append(
            f"OPTIONAL MATCH ({node}) WHERE {_KEYED}n{j}.{prop} = ${name}[{_KEYED}i] "
            f"WITH {_KEYED}i, {''.join(c + ', ' for c in carried)}"
            f"collect({_KEYED}n{j}) AS {_KEYED}f{j}"
        )
        carried.append(f"{_KEYED}f{j}")
    parts.append(f"ORDER BY {_KEYED}i")
    picks = ", ".join(
        f"collect(CASE WHEN size({_KEYED}f{j}) = 1 THEN {_KEYED}f{j}[0] ELSE ${name}[{_KEYED}i] "
        f"END) AS {_KEYED}{name}"
        for j, name in enumerate(names)
    )
    parts.append(f"WITH {picks}")
    return " ".join(parts)


def keyed_call_query(
    procedure: str,
    names: Sequence[str],
    keyed: Mapping[str, str | None],
    id_property: str,
    clause: str,
    fields: str,
) -> str:
    """``CALL procedure(...)`` over the parameters ``names`` in order, the lists of ``keyed``
    replaced by their nodes (:func:`keyed_lookup_cypher`), with ``clause`` (the memory clause or
    empty) and ``YIELD fields RETURN fields``: one query, one round trip."""
    args = ", ".join(f"{_KEYED}{n}" if n in keyed else f"${n}" for n in names)
    call = f"CALL {procedure}({args}){' ' + clause if clause else ''}"
    return f"{keyed_lookup_cypher(keyed, id_property)} {call} YIELD {fields} RETURN {fields}"


def _opts(options: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if options is None:
        return None
    if not isinstance(options, Mapping):
        raise ConfigurationError(f"options: expected a map or None, got {type(options).__name__}")
    return {k: _to_python(v) for k, v in options.items()}


def _typed_properties(properties: Any) -> Any:
    """A ``{label: [names]}`` map as plain Python (anything else as given: the procedure names
    it)."""
    if not isinstance(properties, Mapping):
        return properties
    return {
        k: _to_python(list(v)) if isinstance(v, (list, tuple)) else v for k, v in properties.items()
    }


def _typed_args(seeds: Any, num_neighbors: Any, properties: Any, options: Any) -> tuple:
    """``sample_typed``'s arguments as plain Python values (driver and embedded runtime alike)."""
    if isinstance(num_neighbors, Mapping):
        num_neighbors = {
            str(k): _to_python(list(v)) if isinstance(v, (list, tuple)) else v
            for k, v in num_neighbors.items()
        }
    return _to_python(list(seeds)), num_neighbors, _typed_properties(properties), _opts(options)


def _pair_args(
    sources: Any, targets: Any, num_neighbors: Any, properties: Any, options: Any
) -> tuple:
    """``sample_pairs``' arguments as plain Python values (one pattern map, or one per role)."""
    if isinstance(num_neighbors, Mapping) and set(num_neighbors) == {"source", "target"}:
        num_neighbors = {
            role: _typed_args([], nn, None, None)[1] for role, nn in num_neighbors.items()
        }
    else:
        num_neighbors = _typed_args([], num_neighbors, None, None)[1]
    return (
        _to_python(list(sources)),
        _to_python(list(targets)),
        num_neighbors,
        _typed_properties(properties),
        _opts(options),
    )


def _fallback() -> Any:
    from memgraph_tf.client import _fallback as module

    return module


class CypherGraphAccess:
    """The procedures' graph-access protocol over plain parameterised Cypher on a
    :class:`BoltSource`.

    Keys are the values of ``options.id_property`` (seeds looked up among ``:options.label`` nodes
    when given), or the server's ``id(n)`` without it. As in the query module, a key stands for the
    very node it was found on -- a seed, or a neighbour reached over an edge, with or without the
    label -- so properties and neighbours are fetched by internal id, and two nodes met under the
    same key are an error. Fetches are batched with ``UNWIND``; the packing code sorts and
    deduplicates neighbours itself, so the blob does not depend on the order the server returns rows
    in.
    """

    def __init__(self, source: BoltSource, options: Any) -> None:
        self._source = source
        self._id_property = options.id_property
        self._label = options.label
        self._node = f"(n:{quote_name(self._label, 'options.label')})" if self._label else "(n)"
        self._internal: dict[int, Any] = {}  # key -> the server's id(n) of the node it stands for

    @classmethod
    def factory(cls, source: BoltSource) -> Callable[[Any], CypherGraphAccess]:
        return lambda options: cls(source, options)

    # -- protocol -------------------------------------------------------------------------------
    def node_name(self, key: int) -> str:
        from memgraph_tf.procedures.access import node_name

        return node_name(key, self._id_property)

    def check_abort(self) -> None:
        """Nothing to check on the client: the caller can interrupt."""

    def _key(self, var: str) -> str:
        if self._id_property:
            return f"{var}.{quote_name(self._id_property, 'options.id_property')}"
        return f"id({var})"

    def _match(self) -> str:
        return f"MATCH {self._node} WHERE {self._key('n')} = k"

    def _rows(self, keys: Sequence[int]) -> list[dict[str, Any]]:
        """``{"key", "internal"}`` per distinct key: the node each key stands for."""
        if self._id_property is None:
            return [{"key": k, "internal": k} for k in dict.fromkeys(keys)]
        return [{"key": k, "internal": self._internal[k]} for k in dict.fromkeys(keys)]

    def _check_id(self, key: Any, internal: Any) -> None:
        """Raises :class:`GraphDataError` unless the key found on node ``internal`` is an
        integer."""
        if not isinstance(key, int) or isinstance(key, bool):
            what = "no value" if key is None else f"{type(key).__name__} {key!r}"
            raise GraphDataError(
                f"node {internal} property {self._id_property!r} (options.id_property): "
                f"expected an integer id, got {what}"
            )

    def _register(self, key: int, internal: Any) -> None:
        seen = self._internal.setdefault(key, internal)
        if seen != internal:
            raise GraphDataError(
                f"options.id_property: expected unique ids, got {self._id_property} = {key} on the "
                f"nodes with internal ids {seen} and {internal}"
            )

    def properties(self, keys: Sequence[int], names: Sequence[str]) -> list[list[Any]]:
        columns = ", ".join(
            f"n.{quote_name(name, 'properties')} AS p{i}" for i, name in enumerate(names)
        )
        query = "UNWIND $rows AS row MATCH (n) WHERE id(n) = row.internal RETURN row.key AS key" + (
            f", {columns}" if columns else ""
        )
        rows = self._source.read(query, {"rows": self._rows(keys)})
        by_key = {row["key"]: [row[f"p{i}"] for i in range(len(names))] for row in rows}
        missing = [k for k in keys if k not in by_key]
        if missing:
            raise GraphDataError(
                f"{self.node_name(missing[0])}: expected the node to exist, got none (deleted "
                "while packing?)"
            )
        return [by_key[k] for k in keys]

    def neighbours(
        self, keys: Sequence[int], edge_types: Sequence[str] | None, direction: str
    ) -> list[list[int]]:
        pattern = {"out": "-[r]->", "in": "<-[r]-", "both": "-[r]-"}[direction]
        where = "" if edge_types is None else " AND type(r) IN $types"
        query = (
            f"UNWIND $rows AS row MATCH (n){pattern}(m) WHERE id(n) = row.internal{where} "
            f"RETURN row.key AS key, {self._key('m')} AS nbr, id(m) AS internal"
        )
        rows = self._source.read(query, {"rows": self._rows(keys), "types": list(edge_types or [])})
        found: dict[int, list[int]] = {k: [] for k in keys}
        for row in rows:
            nbr = row["nbr"]
            self._check_id(nbr, row["internal"])
            if self._id_property is not None:
                self._register(nbr, row["internal"])
            found[row["key"]].append(nbr)
        return [found[k] for k in keys]

    def first_node_with(self, names: Sequence[str]) -> int | None:
        """The key of the node with the smallest ``id(n)`` (with ``options.label``) having all
        ``names`` and, with ``options.id_property``, an id; None when there is none."""
        required = list(names) + ([self._id_property] if self._id_property is not None else [])
        where = " AND ".join(f"n.{quote_name(name, 'properties')} IS NOT NULL" for name in required)
        rows = self._source.read(
            f"MATCH {self._node} WHERE {where} RETURN {self._key('n')} AS key, id(n) AS internal "
            "ORDER BY internal LIMIT 1"
        )
        if not rows:
            return None
        key, internal = rows[0]["key"], rows[0]["internal"]
        if self._id_property is not None:
            self._check_id(key, internal)
            self._register(key, internal)
        return key

    def label_values(self, name: str) -> list[tuple[Any, Any]]:
        """``(value, id(n) of one node holding it)`` per distinct value of ``name`` among the nodes
        (with ``options.label``) that have it: one aggregating query, a row per class."""
        prop = f"n.{quote_name(name, 'options.label_property')}"
        rows = self._source.read(
            f"MATCH {self._node} WHERE {prop} IS NOT NULL RETURN {prop} AS value, min(id(n)) AS "
            "internal"
        )
        return [(row["value"], row["internal"]) for row in rows]

    def resolve(self, nodes: Any, param: str) -> list[int]:
        """Integer ids -> keys, in order; raises naming ``param[i]`` for a bad or unknown id."""
        if not isinstance(nodes, (list, tuple)):
            raise GraphDataError(
                f"{param}: expected a list of integer ids, got {type(nodes).__name__}"
            )
        if not nodes:
            raise GraphDataError(f"{param}: expected at least one node or id, got an empty list")
        for i, node in enumerate(nodes):
            if not isinstance(node, int) or isinstance(node, bool):
                raise GraphDataError(
                    f"{param}[{i}]: expected an integer id, got {type(node).__name__} {node!r}"
                )
        distinct = list(dict.fromkeys(nodes))
        query = (
            f"UNWIND $keys AS k {self._match()} RETURN k AS key, count(n) AS found, "
            f"collect(id(n))[0..2] AS internal"
        )
        counts = {row["key"]: row for row in self._source.read(query, {"keys": distinct})}
        for i, node in enumerate(nodes):
            row = counts.get(node)
            if row is None or row["found"] == 0:
                if self._id_property is None:
                    raise GraphDataError(
                        f"{param}[{i}]: unknown node id {node} (no node has that internal id)"
                    )
                scope = f":{self._label} node" if self._label else "node"
                raise GraphDataError(
                    f"{param}[{i}]: unknown node id {node} (no {scope} has {self._id_property} = "
                    f"{node})"
                )
            if row["found"] > 1:
                a, b = row["internal"][:2]
                raise GraphDataError(
                    f"options.id_property: expected unique ids, got {self._id_property} = {node} "
                    "on the "
                    f"nodes with internal ids {a} and {b}"
                )
            if self._id_property is not None:
                self._register(node, row["internal"][0])
        return list(nodes)

    # -- typed sampling (tf_features.sample_typed on the client) ---------------------------------
    def internal_ids(self, keys: Sequence[int]) -> list[int]:
        if self._id_property is None:
            return list(keys)
        return [self._internal[k] for k in keys]

    def has_label(self, keys: Sequence[int], label: str) -> list[bool]:
        rows = self._source.read(
            "UNWIND $rows AS row MATCH (n) WHERE id(n) = row.internal "
            "RETURN row.key AS key, $label IN labels(n) AS ok",
            {"rows": self._rows(keys), "label": label},
        )
        ok = {r["key"]: bool(r["ok"]) for r in rows}
        return [ok.get(k, False) for k in keys]

    def typed_neighbours(
        self, keys: Sequence[int], rel_type: str, direction: str, label: str
    ) -> list[list[int]]:
        if self._id_property is not None:
            raise GraphDataError(
                "typed_neighbours: expected an access by internal id (no id_property)"
            )
        rel = f"[:{quote_name(rel_type, 'type')}]"
        pattern = {"out": f"-{rel}->", "in": f"<-{rel}-", "both": f"-{rel}-"}[direction]
        rows = self._source.read(
            f"UNWIND $rows AS row MATCH (n){pattern}(m:{quote_name(label, 'label')}) "
            "WHERE id(n) = row.internal RETURN row.key AS key, id(m) AS nbr",
            {"rows": self._rows(keys)},
        )
        found: dict[int, list[int]] = {k: [] for k in keys}
        for row in rows:
            found[row["key"]].append(row["nbr"])
        return [found[k] for k in keys]

    def typed_neighbours_kept(
        self,
        keys: Sequence[int],
        rel_type: str,
        direction: str,
        label: str,
        split_property: str,
        held_out: frozenset[str],
    ) -> list[list[int]]:
        """As :meth:`typed_neighbours`, over only the relationships whose ``split_property`` is
        not one of ``held_out`` (a relationship without it is kept)."""
        if self._id_property is not None:
            raise GraphDataError(
                "typed_neighbours_kept: expected an access by internal id (no id_property)"
            )
        rel = f"[r:{quote_name(rel_type, 'type')}]"
        pattern = {"out": f"-{rel}->", "in": f"<-{rel}-", "both": f"-{rel}-"}[direction]
        prop = f"r.{quote_name(split_property, 'options.split_property')}"
        rows = self._source.read(
            f"UNWIND $rows AS row MATCH (n){pattern}(m:{quote_name(label, 'label')}) "
            f"WHERE id(n) = row.internal AND ({prop} IS NULL OR NOT {prop} IN $held_out) "
            "RETURN row.key AS key, id(m) AS nbr",
            {"rows": self._rows(keys), "held_out": sorted(held_out)},
        )
        found: dict[int, list[int]] = {k: [] for k in keys}
        for row in rows:
            found[row["key"]].append(row["nbr"])
        return [found[k] for k in keys]


# ------------------------------------------------------------------------------------------------
# Embedded
# ------------------------------------------------------------------------------------------------

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

    def _single_blob(self, procedure: str, *args: Any) -> str:
        return self._keyed_call(procedure, *args)[0]["blob"]

    def _keyed_call(self, procedure: str, *args: Any) -> list[dict[str, Any]]:
        """:meth:`_call` of a procedure of :data:`PROCEDURE_PARAMS`, its lists of integer keys
        under ``options.id_property`` (:func:`keyed_lists`) first resolved to their nodes through
        the graph's index (:meth:`~memgraph_tf.embedded.EmbeddedGraph.find_nodes`), as
        :class:`BoltSource` has Memgraph resolve them: the procedure need not scan the label."""
        named = dict(zip(PROCEDURE_PARAMS[procedure], args))
        keyed = keyed_lists(procedure, named)
        if not keyed:
            return self._call(procedure, *args)
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
            return self._call(procedure, *named.values())

    def pack_blob_b64(
        self,
        node_ids: Sequence[int],
        properties: Sequence[str],
        options: Mapping[str, Any] | None = None,
    ) -> str:
        return self._single_blob(
            "tf_features.pack", _to_python(list(node_ids)), list(properties), _opts(options)
        )

    def sample_blob_b64(
        self,
        seeds: Sequence[int],
        fanouts: Sequence[int],
        properties: Sequence[str],
        options: Mapping[str, Any] | None = None,
    ) -> str:
        return self._single_blob(
            "tf_features.sample",
            _to_python(list(seeds)),
            _to_python(list(fanouts)),
            list(properties),
            _opts(options),
        )

    def describe(
        self, properties: Sequence[str], options: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        return dict(self._call("tf_features.describe", list(properties), _opts(options))[0])

    def sample_blobs_per_node_b64(
        self,
        seeds: Sequence[int],
        fanouts: Sequence[int],
        properties: Sequence[str],
        options: Mapping[str, Any] | None = None,
    ) -> list[str]:
        rows = self._keyed_call(
            "tf_features.sample_per_node",
            _to_python(list(seeds)),
            _to_python(list(fanouts)),
            list(properties),
            _opts(options),
        )
        return [row["blob"] for row in rows]

    def sample_typed_b64(
        self,
        seeds: Sequence[int],
        num_neighbors: Mapping[str, Sequence[int]],
        properties: Mapping[str, Sequence[str]] | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> str:
        return self._single_blob(
            "tf_features.sample_typed", *_typed_args(seeds, num_neighbors, properties, options)
        )

    def schema(
        self,
        properties: Mapping[str, Sequence[str]] | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        rows = self._call("tf_features.schema", _typed_properties(properties), _opts(options))
        return dict(rows[0])

    def sample_pairs_b64(
        self,
        sources: Sequence[int],
        targets: Sequence[int],
        num_neighbors: Mapping[str, Any],
        properties: Mapping[str, Sequence[str]] | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> str:
        return self._single_blob(
            "tf_features.sample_pairs",
            *_pair_args(sources, targets, num_neighbors, properties, options),
        )

    def split_edges(self, pattern: str, options: Mapping[str, Any] | None = None) -> dict[str, int]:
        return dict(self._call("tf_features.split_edges", pattern, _opts(options))[0])

    def run(
        self,
        query: str,
        parameters: Mapping[str, Any] | None = None,
        *,
        fetch_size: int | None = None,
    ) -> Iterator[Mapping[str, Any]]:
        match = _CALL_RE.match(query)
        if match is None:
            raise ConfigurationError(
                "query: expected a procedure call 'CALL module.procedure($a, ...) [YIELD ...] "
                "[RETURN ...]' "
                f"(the embedded runtime runs query modules, not Cypher), got {_short(query)!r}"
            )
        memory = _memory_option(match)
        params = dict(parameters or {})
        args = []
        for i, arg in enumerate(a.strip() for a in match["args"].split(",") if a.strip()):
            if not arg.startswith("$") or arg[1:] not in params:
                raise ConfigurationError(
                    f"query: argument {i} of {match['proc']}: expected a $parameter present in "
                    f"parameters ({', '.join(sorted(params)) or 'none'}), got {arg!r}"
                )
            args.append(_to_python(params[arg[1:]]))
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

    def node_ids(
        self,
        *,
        label: str | None = None,
        id_property: str | None = None,
        where: Mapping[str, Any] | None = None,
    ) -> list[int]:
        internal = self.graph.nodes(label)
        for name, value in dict(where or {}).items():
            quote_name(name, "where")
            internal = [i for i in internal if self.graph.get_property(i, name) == value]
        if id_property is None:
            return internal
        values = (self.graph.get_property(i, id_property) for i in internal)
        return sorted(v for v in values if v is not None)

    def _write_checked(
        self,
        node_ids: list[int],
        columns: dict[str, list[Any]],
        *,
        id_property: str | None,
        label: str | None,
        batch_size: int,
    ) -> int:
        written = 0
        items = list(columns.items())
        with self._lock:
            for row, internal in enumerate(self._internal_ids(node_ids, id_property, label)):
                if internal >= 0:
                    for name, values in items:
                        self.graph.set_property(internal, name, values[row])
                    written += 1
        return written
