"""Opening a source: :func:`connect` (Bolt) and :func:`open_graph` (a Bolt URI or an
``embedded:`` dataset)."""

from __future__ import annotations

import logging
import os
from typing import Any

import neo4j
import neo4j.exceptions as neo4j_errors

from memgraph_tf.client.sources.bolt import BoltSource
from memgraph_tf.client.sources.config import (
    DEFAULT_DRIVER_OPTIONS,
    ENV_DATABASE,
    RETRY_TIME_S,
    UNLIMITED,
    connect_timeout,
    procedure_memory,
    resolve_auth,
    resolve_uri,
)
from memgraph_tf.client.sources.embedded import EmbeddedSource
from memgraph_tf.client.sources.interface import GraphSource
from memgraph_tf.errors import ConfigurationError
from memgraph_tf.ledger_datasets import LEDGER_DATASET
from memgraph_tf.property_datasets import PROPERTY_DATASET
from memgraph_tf.typed_datasets import SHOP_DATASET

logger = logging.getLogger(__name__)


def connect(
    uri: str | None = None,
    auth: Any = None,
    database: str | None = None,
    *,
    use_procedures: bool | None = None,
    fetch_size: int = 1000,
    verify: bool = True,
    procedure_memory_limit_mb: int | str | None = None,
    connect_timeout_s: float | str | None = None,
    **driver_options: Any,
) -> BoltSource:
    """Opens a :class:`BoltSource` over one long-lived ``neo4j`` driver.

    ``uri`` (else ``MEMGRAPH_TF_URI``): ``bolt://``, ``bolt+s://``, ``bolt+ssc://``, ``neo4j://``
    (and ``neo4j+s``/``neo4j+ssc``). ``auth``: ``(user, password)``, a neo4j auth object, or None to
    use ``MEMGRAPH_TF_USER``/``MEMGRAPH_TF_PASSWORD`` (no auth when neither is set). ``database``:
    else ``MEMGRAPH_TF_DATABASE``, else the server's default. ``use_procedures``: None detects the
    ``tf_features`` procedures on first use; False always packs on the client; True requires them.
    ``connect_timeout_s``: how long reaching the server may take (:func:`connect_timeout`: None
    reads ``MEMGRAPH_TF_CONNECT_TIMEOUT_S``, else :data:`DEFAULT_CONNECT_TIMEOUT_S`, 5 s) -- the
    driver's ``connection_timeout`` and ``connection_acquisition_timeout``; a server that does
    not answer within it is :class:`ServerUnavailable` at once, without the driver's retries.
    ``driver_options`` go to ``neo4j.GraphDatabase.driver`` over :data:`DEFAULT_DRIVER_OPTIONS`
    and those timeouts (``max_transaction_retry_time``: how long a transient failure of a reachable
    server is retried, :data:`RETRY_TIME_S` by default).
    ``procedure_memory_limit_mb``: the ``PROCEDURE MEMORY`` clause of the ``tf_features`` calls
    (:func:`procedure_memory`: megabytes or ``"unlimited"``; None:
    ``MEMGRAPH_TF_PROCEDURE_MEMORY_LIMIT_MB``, else :data:`DEFAULT_PROCEDURE_MEMORY_LIMIT_MB`).

    Guarantees: with ``verify`` (the default) the server was reached and accepted the credentials
    before this returns, or :class:`ServerUnavailable` / :class:`AuthenticationError` was raised;
    the credentials are given to the driver and kept nowhere else.
    """
    uri = resolve_uri(uri)
    driver_auth, user = resolve_auth(auth)
    database = database if database is not None else os.environ.get(ENV_DATABASE) or None
    if use_procedures not in (None, True, False):
        raise ConfigurationError(
            f"use_procedures: expected None (detect), True or False, got {use_procedures!r}"
        )
    if not isinstance(fetch_size, int) or isinstance(fetch_size, bool) or fetch_size < 1:
        raise ConfigurationError(f"fetch_size: expected an integer >= 1, got {fetch_size!r}")
    memory = procedure_memory(procedure_memory_limit_mb)
    timeout_s = connect_timeout(connect_timeout_s)
    options = {
        **DEFAULT_DRIVER_OPTIONS,
        "connection_timeout": timeout_s,
        "connection_acquisition_timeout": timeout_s,
        "max_transaction_retry_time": RETRY_TIME_S,
        **driver_options,
    }
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
        connect_timeout_s=options["connection_acquisition_timeout"],
        retry_time_s=options["max_transaction_retry_time"],
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


def open_graph(
    uri: str, *, database: str | None = None, connect_timeout_s: float | str | None = None
) -> GraphSource:
    """The graph source a URI names -- the one opener of ``memgraph-tf serve --graph``,
    ``memgraph-tf classify --graph`` and the Beam workers:

    * ``embedded:NAME``: a dataset shipped in the package (``cora``, ``citeseer``) or
      ``synthetic``, loaded into an in-process graph that runs the unchanged query modules
      (:class:`EmbeddedSource`; ``database`` is ignored);
    * ``embedded:shop``: the demo's generated typed shop graph
      (:func:`memgraph_tf.typed_datasets.demo_shop_graph`), the same way;
    * ``embedded:people``: the planted property graph
      (:func:`memgraph_tf.property_datasets.planted_property_graph`, its defaults), the same way;
    * ``embedded:ledger``: the generated ledger
      (:func:`memgraph_tf.ledger_datasets.ledger_graph`, its defaults), the same way;
    * ``embedded:DIR/NAME``: the Planetoid dataset NAME from ``DIR/ind.NAME.*``, the same way;
    * anything else: a Bolt URI for :func:`connect` (with ``database`` and ``connect_timeout_s``:
      None reads ``MEMGRAPH_TF_CONNECT_TIMEOUT_S``, else 5 s), which takes the user name
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
        if spec == PROPERTY_DATASET:
            from memgraph_tf.property_datasets import (
                planted_property_graph,
                property_embedded_graph,
            )

            return EmbeddedSource(property_embedded_graph(planted_property_graph())[0])
        if spec == LEDGER_DATASET:
            from memgraph_tf.ledger_datasets import ledger_embedded_graph, ledger_graph

            return EmbeddedSource(ledger_embedded_graph(ledger_graph())[0])
        if "/" not in spec:
            return EmbeddedSource(planetoid_graph(spec))
        path = pathlib.Path(spec)
        return EmbeddedSource(planetoid_graph(path.name, path.parent))
    return connect(uri, database=database, connect_timeout_s=connect_timeout_s)
