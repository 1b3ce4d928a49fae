"""Errors raised by :mod:`memgraph_tf.client`.

Every error the client raises on purpose derives from :class:`ClientError` (itself a
:class:`memgraph_tf.errors.MemgraphTfError`, the root of the library's tree); driver errors from
``neo4j`` are translated at the boundary (the original stays attached as ``__cause__``), so callers
need not import the driver to handle them. The tree::

    ClientError                         base of every client error
    +-- ConfigurationError              a bad argument or setting (also a ValueError)
    +-- GraphConnectionError            talking to the server failed (also a ConnectionError)
    |   +-- ServerUnavailable           nothing answers at the URI, or the connection died mid-query
    |   +-- AuthenticationError         the server refused the credentials
    +-- QueryError                      the server rejected or failed a query
    |   +-- ProcedureUnavailable        a ``tf_features`` procedure is not installed on the server
    +-- ResultError                     a row does not fit the declared output types
    |                                   (also a ValueError)
    |   +-- NullValueError              a column holds null
    |   +-- ValueTypeError              a value of the wrong type (also a TypeError)
    |   +-- ValueLengthError            a list of the wrong length
    +-- GraphDataError                  the graph lacks a node, or a property cannot be packed
    |                                   (also a ValueError; the fallback packer's errors)
    |   +-- InvalidNodeError            batch inference stopped at a node it cannot classify
    |   +-- KeysetPagingError           keyset paging repeated a key, or left selected nodes unread
    +-- ModelError                      batch inference: the model backend failed
        +-- ModelInputError             the model rejected an input blob (also a ValueError)

Errors raised inside a ``tf.data`` pipeline or ``tf.py_function`` reach the caller as the
``tf.errors.OpError`` subclass TensorFlow maps them to (``InvalidArgumentError`` for the
``ValueError`` and ``TypeError`` families, another ``OpError`` such as ``UnknownError`` otherwise);
their message contains this module's message unchanged.
"""

from __future__ import annotations

from typing import Any

from memgraph_tf.errors import MemgraphTfError


class ClientError(MemgraphTfError):
    """Base class of every error raised by ``memgraph_tf.client``."""


class ConfigurationError(ClientError, ValueError):
    """A bad argument or setting: the message names the parameter, the bad value and the allowed
    ones."""


class GraphConnectionError(ClientError, ConnectionError):
    """Talking to the graph server failed."""


class ServerUnavailable(GraphConnectionError):
    """Nothing answers at the URI, or the connection was lost while a query ran."""


class AuthenticationError(GraphConnectionError):
    """The server refused the credentials (the message never contains the password)."""


class QueryError(ClientError):
    """The server rejected or failed a query; the message carries the server's message and the
    query."""


class ProcedureUnavailable(QueryError):
    """A ``tf_features`` procedure is not installed on the server."""


class ResultError(ClientError, ValueError):
    """A result row does not fit the declared output types; names the column, the row and the
    value."""


class NullValueError(ResultError):
    """A column of a row holds null."""


class ValueTypeError(ResultError, TypeError):
    """A value has a type that cannot be cast to the column's dtype."""


class ValueLengthError(ResultError):
    """A list value has a length other than the column's declared one."""


class GraphDataError(ClientError, ValueError):
    """The graph lacks a node, or a property cannot be packed (client-side packing)."""


class InvalidNodeError(GraphDataError):
    """Batch inference (:mod:`memgraph_tf.batch`) stopped at a node it cannot classify: an
    unknown id, features that cannot be packed (its own or a sampled neighbour's), or a blob the
    model rejects. ``node_id`` names the node and ``reason`` says why; nothing of the batch that
    holds it was written."""

    def __init__(self, node_id: int, reason: str, message: str | None = None) -> None:
        self.node_id = node_id
        self.reason = reason
        super().__init__(message or f"node {node_id}: {reason}")

    def __reduce__(self) -> tuple[Any, ...]:
        # pickled by distributed runners (Beam workers): rebuild from the three arguments
        return (type(self), (self.node_id, self.reason, str(self)))


class KeysetPagingError(GraphDataError):
    """The node keys a run reads by keyset pagination
    (:class:`~memgraph_tf.client.graphs.KeysetScan`) do not add up: a page whose keys do not
    ascend past the previous page's last key (a server that ignores ``key > $after``; paging on
    would repeat it forever), or a run that ends with selected nodes it never read (the server's
    pages stopped early or skipped keys). The message names the key or the gap; what was written
    stays."""


class ModelError(ClientError):
    """Batch inference: the model backend failed on a batch (the model, or the server that runs
    it); the backend's own error is the ``__cause__``."""


class ModelInputError(ModelError, ValueError):
    """The model rejected an input batch (a blob it cannot decode, or of a shape it does not
    take): the fault is in the data of some node of the batch, which batch inference can find."""
