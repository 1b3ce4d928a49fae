"""Graph sources: where feature and neighbourhood blobs and query rows come from.

Two sources offer the same operations (:class:`GraphSource`, ``interface``):

* :class:`BoltSource` (``bolt``; made by :func:`connect`) talks Bolt to Memgraph -- or to any
  Bolt + openCypher server -- over one long-lived ``neo4j`` driver; on a server without the
  ``tf_features`` procedures it packs blobs on the client from plain Cypher
  (:class:`CypherGraphAccess`, ``cypher``), with the same bytes.
* :class:`EmbeddedSource` (``embedded``) runs the unchanged query modules in-process over an
  :class:`memgraph_tf.embedded.EmbeddedGraph`.

:func:`connect` and :func:`open_graph` (``opening``) open them; URIs, credentials, environment
variables and the procedure memory limit are resolved in ``config``; keyed calls (node lists of
``options.id_property`` keys) are resolved to their nodes in ``keyed``.

Credentials come from the arguments or from ``MEMGRAPH_TF_URI``, ``MEMGRAPH_TF_USER``,
``MEMGRAPH_TF_PASSWORD`` (and ``MEMGRAPH_TF_DATABASE``); they are handed to the driver and never
kept on the source, which also refuses to be pickled or copied, so nothing that captures a source (a
model, a dataset graph) can carry them.
"""

from __future__ import annotations

from memgraph_tf.client.sources.bolt import BoltSource
from memgraph_tf.client.sources.config import (
    DEFAULT_CONNECT_TIMEOUT_S,
    DEFAULT_DRIVER_OPTIONS,
    DEFAULT_PROCEDURE_MEMORY_LIMIT_MB,
    ENV_CONNECT_TIMEOUT,
    ENV_DATABASE,
    ENV_PASSWORD,
    ENV_PROCEDURE_MEMORY,
    ENV_URI,
    ENV_USER,
    MAX_PROCEDURE_MEMORY_LIMIT_MB,
    RETRY_TIME_S,
    SCHEMES,
    UNLIMITED,
    ProcedureMemory,
    connect_timeout,
    procedure_memory,
    quote_name,
)
from memgraph_tf.client.sources.cypher import CypherGraphAccess
from memgraph_tf.client.sources.embedded import EmbeddedSource
from memgraph_tf.client.sources.interface import GraphSource
from memgraph_tf.client.sources.keyed import (
    INDEX_INFO_TTL_S,
    keyed_call_query,
    keyed_lists,
    keyed_lookup_cypher,
    resolved_keys,
)
from memgraph_tf.client.sources.opening import EMBEDDED_SCHEME, connect, open_graph
from memgraph_tf.client.sources.procedure_table import (
    PROCEDURE_PARAMS,
    PROCEDURES,
    TABLE,
    Procedure,
    to_python,
)

__all__ = [
    "DEFAULT_CONNECT_TIMEOUT_S",
    "DEFAULT_DRIVER_OPTIONS",
    "DEFAULT_PROCEDURE_MEMORY_LIMIT_MB",
    "EMBEDDED_SCHEME",
    "ENV_CONNECT_TIMEOUT",
    "ENV_DATABASE",
    "ENV_PASSWORD",
    "ENV_PROCEDURE_MEMORY",
    "ENV_URI",
    "ENV_USER",
    "INDEX_INFO_TTL_S",
    "MAX_PROCEDURE_MEMORY_LIMIT_MB",
    "PROCEDURES",
    "PROCEDURE_PARAMS",
    "RETRY_TIME_S",
    "SCHEMES",
    "TABLE",
    "UNLIMITED",
    "BoltSource",
    "CypherGraphAccess",
    "EmbeddedSource",
    "GraphSource",
    "Procedure",
    "ProcedureMemory",
    "connect",
    "connect_timeout",
    "keyed_call_query",
    "keyed_lists",
    "keyed_lookup_cypher",
    "open_graph",
    "procedure_memory",
    "quote_name",
    "resolved_keys",
    "to_python",
]
