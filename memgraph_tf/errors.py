"""The root of memgraph-tf's error tree (standard library only: Memgraph imports it too).

Every error the library raises on purpose derives from :class:`MemgraphTfError`, so
``except MemgraphTfError`` catches whatever memgraph-tf reports and lets programming errors
(``AttributeError``, a bare ``TypeError`` or ``ValueError`` from a wrong call) through. Each class
keeps the built-in base it had before the common root (in parentheses below), so
``except ValueError`` and the like still catch what they caught. The whole tree, with the module
that defines each subtree::

    MemgraphTfError
    +-- BlobFormatError (ValueError)                     memgraph_tf.blob: a blob or pack() input breaks v1
    +-- OpLibraryError (RuntimeError)                    memgraph_tf.ops: cannot build or load the op library
    +-- ProcedureInputError (ValueError)                 memgraph_tf.procedures.errors: bad input to tf_features.*
    |   +-- OptionError                                  an argument or option is unknown or bad
    |   +-- NodeNotFoundError (LookupError)              a node id is not in the graph
    |   +-- PropertyValueError                           a property is missing or cannot be packed
    +-- EmbeddedError                                    memgraph_tf.embedded: a CALL that failed
    |   +-- ProcedureNotFoundError (LookupError)         no loaded module has the procedure
    |   +-- ArgumentTypeError (TypeError)                arguments do not fit the signature
    |   +-- ProcedureError (RuntimeError)                the procedure raised: Memgraph's text (its error is the __cause__)
    |       +-- ResultConversionError (TypeError)        a result Memgraph could not convert (Memgraph's text)
    +-- ClientError                                      memgraph_tf.client: the graph sources, training, batch inference
    |   +-- ConfigurationError (ValueError)              a bad argument or setting
    |   +-- GraphConnectionError (ConnectionError)
    |   |   +-- ServerUnavailable                        nothing answers, or the connection died mid-query
    |   |   +-- AuthenticationError                      the server refused the credentials
    |   +-- QueryError                                   the server rejected or failed a query
    |   |   +-- ProcedureUnavailable                     a tf_features procedure is not installed
    |   +-- ResultError (ValueError)                     a row does not fit the declared output types
    |   |   +-- NullValueError                           a column holds null
    |   |   +-- ValueTypeError (TypeError)               a value of the wrong type
    |   |   +-- ValueLengthError                         a list of the wrong length
    |   +-- GraphDataError (ValueError)                  a node is missing or a property cannot be packed
    |   |   +-- InvalidNodeError                         batch inference stopped at a node it cannot classify
    |   |   +-- KeysetPagingError                        keyset paging repeated a key, or left selected nodes unread
    |   +-- ModelError                                   batch inference: the model backend failed
    |       +-- ModelInputError (ValueError)             the model rejected an input blob
    +-- ServingError                                     memgraph_tf.serving (.status, .message, .url, .grpc_code)
    |   +-- ServingConnectionError                       no HTTP answer after all retries
    |   +-- ServingTimeoutError                          no answer within timeout_s
    |   +-- InvalidResponseError                         a 2xx answer that is not the promised JSON
    |   +-- RequestTooLargeError                         413, or one item alone above max_request_bytes
    |   +-- ServingHTTPError                             any other non-2xx answer
    |   |   +-- BadRequestError                          400
    |   |   +-- UnauthorizedError                        401
    |   |   +-- ForbiddenError                           403
    |   |   +-- NotFoundError                            404
    |   |   +-- ConflictError                            409
    |   |   +-- TooManyRequestsError                     429
    |   |   +-- InternalServerError                      500
    |   |   +-- NotImplementedByServerError              501
    |   |   +-- UnavailableError                         503 (retried)
    |   |   +-- DeadlineExceededError                    504 (retried)
    |   +-- ServingFailure                               memgraph-tf serve answers a request with this status
    |   +-- BundleError (ValueError)                     a bundle or export argument breaks the contract
    |   +-- BundleExistsError (FileExistsError)          export_bundle: the version directory exists
    |   +-- NeighbourhoodError                           node ids -> neighbourhood blobs failed
    |       +-- NodeIdError (ValueError)                 a node id is not an int64 integer
    |       +-- NeighbourhoodDataError (ValueError)      the graph lacks a node, or its data cannot be packed
    |       +-- GraphUnavailableError (ConnectionError)  the graph cannot be reached
    |       +-- GraphSourceError                         any other failure of the graph source
    +-- ArcadeDBStartError (RuntimeError)                memgraph_tf.testing.arcadedb: no test server

The client's errors translate the ``neo4j`` driver's at the boundary (the original stays attached as
``__cause__``), so callers need not import the driver to handle them. Errors raised inside a
``tf.data`` pipeline or ``tf.py_function`` reach the caller as the ``tf.errors.OpError`` subclass
TensorFlow maps them to (``InvalidArgumentError`` for the ``ValueError`` and ``TypeError`` families,
another ``OpError`` such as ``UnknownError`` otherwise); their message contains this module's message
unchanged.

The serving errors that come from an answer carry the HTTP ``status``, the status code's name
``grpc_code`` and the server's message (the ``"error"`` field of TF Serving's ``{"error": "..."}``
body, the raw body when it is not that shape, or the gRPC status details). :data:`STATUS_TABLE`
holds, one row per TF Serving / gRPC status code, the HTTP status TF Serving's ``http_server.cc``
(``ToHTTPStatusCode``) answers it with, the error class and whether clients retry it;
:func:`error_for_status` builds the right error from it. Code names are strings;
``grpc.StatusCode[name]`` gives the enum. :data:`EXIT_CODES` is the commands' exit-code table.

The procedures' input errors stay in :mod:`memgraph_tf.procedures.errors`: their ``module.Class``
is part of the text Memgraph sends a client when a procedure raises, which the client reads
(:mod:`memgraph_tf.client.procedure_errors`), so it must not depend on this module's layout.

Not in the tree, on purpose:

* the ``_mgp`` errors of :mod:`memgraph_tf.embedded._runtime` (``UnknownError``,
  ``InvalidArgumentError``, ``ImmutableObjectError``, ...): they stand in for the errors of
  Memgraph's C extension, which Memgraph's ``mgp.py`` subclasses and translates, so they derive from
  ``Exception`` exactly as Memgraph's do, and a query module sees the same errors embedded and in
  Memgraph;
* errors raised by TensorFlow ops (a malformed blob given to ``ops.unpack_blob`` is a
  ``tf.errors.InvalidArgumentError``), and the ``tf.errors.OpError`` that TensorFlow makes of an
  error raised inside ``tf.data`` or ``tf.py_function``: TensorFlow decides their types;
* ``ValueError`` / ``TypeError`` for a call with wrong arguments (a programming error).

The bases defined in other modules (``BlobFormatError``, ``OpLibraryError``,
``ProcedureInputError``, ``EmbeddedError``, ``ArcadeDBStartError``) are importable from here by
name. They are looked up on first use, so importing this module needs the standard library alone; using a
name imports its package (those packages import TensorFlow or the Bolt driver only lazily).
"""  # noqa: E501 -- the tree: one class a line, its note beside it (tests/test_errors.py)

from __future__ import annotations

import http
import logging
from typing import Any, NamedTuple

from memgraph_tf.lazy import lazy_attributes

__all__ = [
    "EXIT_CODES",
    "EXIT_FAILED",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_USAGE",
    "INTERNAL_ERROR_MESSAGE",
    "REQUEST_TOO_LARGE_STATUS",
    "RETRYABLE_CODES",
    "RETRYABLE_HTTP_STATUSES",
    "STATUS_TABLE",
    "ArcadeDBStartError",
    "AuthenticationError",
    "BadRequestError",
    "BlobFormatError",
    "BundleError",
    "BundleExistsError",
    "ClientError",
    "ConfigurationError",
    "ConflictError",
    "DeadlineExceededError",
    "EmbeddedError",
    "ForbiddenError",
    "GraphConnectionError",
    "GraphDataError",
    "GraphSourceError",
    "GraphUnavailableError",
    "InternalServerError",
    "InvalidNodeError",
    "InvalidResponseError",
    "KeysetPagingError",
    "MemgraphTfError",
    "ModelError",
    "ModelInputError",
    "NeighbourhoodDataError",
    "NeighbourhoodError",
    "NodeIdError",
    "NotFoundError",
    "NotImplementedByServerError",
    "NullValueError",
    "OpLibraryError",
    "ProcedureInputError",
    "ProcedureUnavailable",
    "QueryError",
    "RequestTooLargeError",
    "ResultError",
    "ServerUnavailable",
    "ServingConnectionError",
    "ServingError",
    "ServingFailure",
    "ServingHTTPError",
    "ServingTimeoutError",
    "StatusRow",
    "TooManyRequestsError",
    "UnauthorizedError",
    "UnavailableError",
    "ValueLengthError",
    "ValueTypeError",
    "code_for_http",
    "code_name",
    "command_failure",
    "error_for_status",
    "exit_code_for",
    "http_reason",
    "http_status_for",
    "is_retryable",
]


class MemgraphTfError(Exception):
    """Base class of every error memgraph-tf raises on purpose."""


# The base of each package's subtree -> the module that defines it (imported on first use).
_PACKAGE_BASES = {
    "BlobFormatError": "memgraph_tf.blob",
    "OpLibraryError": "memgraph_tf.ops",
    "ProcedureInputError": "memgraph_tf.procedures.errors",
    "EmbeddedError": "memgraph_tf.embedded",
    "ArcadeDBStartError": "memgraph_tf.testing.arcadedb",
}


__getattr__, __dir__ = lazy_attributes(__name__, _PACKAGE_BASES, globals())


# ------------------------------------------------------------------------------ the client's errors
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
    (:class:`~memgraph_tf.client.node_tables.KeysetScan`) do not add up: a page whose keys do not
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


# ------------------------------------------------------------------------------- the serving errors
class ServingError(MemgraphTfError):
    """Base class of every serving error. ``status`` is the HTTP status (``None`` when there
    was no HTTP answer); ``message`` is the server's error message (or a local description);
    ``url`` the request URL; ``grpc_code`` the name of the TF Serving / gRPC status code
    (``"NOT_FOUND"``) for errors built from :data:`STATUS_TABLE` (``None`` otherwise). Where an
    enum is needed: ``grpc.StatusCode[exc.grpc_code]``."""

    grpc_code: str | None = None

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        url: str | None = None,
        grpc_code: str | None = None,
    ):
        self.message = message
        self.status = status
        self.url = url
        if grpc_code is not None:
            self.grpc_code = grpc_code
        where = f" ({url})" if url else ""
        code = f"HTTP {status}: " if status is not None else ""
        super().__init__(f"{code}{message}{where}")


class ServingConnectionError(ServingError):
    """The server could not be reached (after all retries)."""


class ServingTimeoutError(ServingError):
    """The server did not answer within the client's ``timeout_s``."""


class InvalidResponseError(ServingError):
    """The server answered 2xx with a body that is not the JSON the REST API specifies."""


class RequestTooLargeError(ServingError):
    """413 from the server, or (``status is None``) a single item that alone exceeds the client's
    ``max_request_bytes`` so it cannot be sent even after splitting."""


class ServingHTTPError(ServingError):
    """A non-2xx HTTP answer."""


class BadRequestError(ServingHTTPError):
    """400: the request was malformed or did not fit the model's signature."""


class UnauthorizedError(ServingHTTPError):
    """401."""


class ForbiddenError(ServingHTTPError):
    """403."""


class NotFoundError(ServingHTTPError):
    """404: unknown model, version or path."""


class ConflictError(ServingHTTPError):
    """409."""


class TooManyRequestsError(ServingHTTPError):
    """429: the server ran out of a resource."""


class InternalServerError(ServingHTTPError):
    """500."""


class NotImplementedByServerError(ServingHTTPError):
    """501: the server does not implement the request (for example an unsupported dtype)."""


class UnavailableError(ServingHTTPError):
    """503: the server (or the model) is unavailable right now. The client retries these."""


class DeadlineExceededError(ServingHTTPError):
    """504: the server ran out of time. The client retries these."""


class ServingFailure(ServingError):
    """Raised inside ``memgraph-tf serve`` (the model server, the ``json_*.py`` conversions, the
    gRPC servicers): the request is answered with HTTP ``status`` and ``{"error": message}`` over
    REST, and with the status code ``grpc_code`` (a :data:`STATUS_TABLE` code name) over gRPC --
    the status, code and message TF Serving gives for the same input. ``grpc_code`` defaults to
    the table's code for ``status`` (:func:`code_for_http`); build one from a code with
    :meth:`for_code`."""

    def __init__(self, status: int, message: str, *, grpc_code: str | None = None):
        super().__init__(message, status=status, grpc_code=grpc_code or code_for_http(status))

    @classmethod
    def for_code(cls, grpc_code: str, message: str) -> ServingFailure:
        """The failure answered with ``grpc_code`` (a code name) and the HTTP status TF
        Serving's REST front end gives that code (:func:`http_status_for`)."""
        return cls(http_status_for(grpc_code), message, grpc_code=grpc_code)

    @classmethod
    def too_large(cls, message: str) -> ServingFailure:
        """A request above one of this server's size limits: 413 over REST (the HTTP layer's
        answer), RESOURCE_EXHAUSTED over gRPC (see :data:`STATUS_TABLE`)."""
        return cls(REQUEST_TOO_LARGE_STATUS, message, grpc_code="RESOURCE_EXHAUSTED")


class BundleError(ServingError, ValueError):
    """A bundle, or an argument meant for one, breaks the bundle contract (``serving/bundle.py``):
    a config key that is unknown, missing or of the wrong type, an unreadable asset, an
    ``export_bundle`` argument it cannot use. ``key`` names the config key or parameter (``None``
    when the whole document is at fault). Also a ValueError."""

    def __init__(self, message: str, *, key: str | None = None):
        self.key = key
        super().__init__(message)


class BundleExistsError(ServingError, FileExistsError):
    """``export_bundle``: the version directory exists and ``overwrite`` is False."""


class NeighbourhoodError(ServingError):
    """Turning node ids into neighbourhood blobs (``serving/neighbourhoods.py``) failed. The
    source's own error, if any, is attached as ``__cause__``."""


class NodeIdError(NeighbourhoodError, ValueError):
    """A node id is not an integer in the int64 range; the message names where it came from."""

    grpc_code = "INVALID_ARGUMENT"


class NeighbourhoodDataError(NeighbourhoodError, ValueError):
    """The graph source rejected the request's data: a node it lacks, a property it cannot pack."""

    grpc_code = "INVALID_ARGUMENT"


class GraphUnavailableError(NeighbourhoodError, ConnectionError):
    """The graph source cannot be reached (its ConnectionError or OSError)."""

    grpc_code = "UNAVAILABLE"


class GraphSourceError(NeighbourhoodError):
    """Any other failure the graph source reports as a memgraph-tf error (a failed query), or an
    answer that does not fit the request (a wrong number of blobs)."""

    grpc_code = "INTERNAL"


# ------------------------------------------------------------------------------ the status table
class StatusRow(NamedTuple):
    """One row of :data:`STATUS_TABLE`: a TF Serving / gRPC status code (its name and number, as
    in ``grpc.StatusCode`` and ``tensorflow/core/protobuf/error_codes.proto``), the HTTP status
    TF Serving's REST front end answers it with, the error class a client raises for it, and
    whether a client retries it (the call may succeed later, and every call here is free of
    side effects)."""

    code: str
    number: int
    http: int
    error: type[ServingError]
    retryable: bool


#: The one status table of the package. The HTTP statuses are TF Serving's:
#: ``tensorflow_serving/model_servers/http_server.cc``, ``ToHTTPStatusCode`` (CANCELLED is its
#: ``CLIENT_CLOSED_REQUEST``, 499). Both servers answer from it (REST: the HTTP status of a
#: failure's code; gRPC: the code), both clients build their errors from it
#: (:func:`error_for_status`, ``grpc_client.error_from_rpc``) and retry what it marks
#: retryable. Rows are in HTTP status order; where several codes share a status, the first row
#: listed is the code a failure known only by its HTTP status is answered with over gRPC
#: (:func:`code_for_http`: 400 INVALID_ARGUMENT, 409 ABORTED, 500 INTERNAL).
#: The last row is not a code mapping: a request above a size limit of this server (a body above
#: ``max_request_bytes``, more than ``max_examples`` examples) is 413 from the HTTP layer, and
#: RESOURCE_EXHAUSTED over gRPC, where there is no 413 (the code's own status stays 429).
STATUS_TABLE: tuple[StatusRow, ...] = (
    StatusRow("INVALID_ARGUMENT", 3, 400, BadRequestError, False),
    StatusRow("FAILED_PRECONDITION", 9, 400, BadRequestError, False),
    StatusRow("OUT_OF_RANGE", 11, 400, BadRequestError, False),
    StatusRow("UNAUTHENTICATED", 16, 401, UnauthorizedError, False),
    StatusRow("PERMISSION_DENIED", 7, 403, ForbiddenError, False),
    StatusRow("NOT_FOUND", 5, 404, NotFoundError, False),
    StatusRow("ABORTED", 10, 409, ConflictError, False),
    StatusRow("ALREADY_EXISTS", 6, 409, ConflictError, False),
    StatusRow("RESOURCE_EXHAUSTED", 8, 429, TooManyRequestsError, False),
    StatusRow("CANCELLED", 1, 499, ServingHTTPError, False),
    StatusRow("INTERNAL", 13, 500, InternalServerError, False),
    StatusRow("UNKNOWN", 2, 500, InternalServerError, False),
    StatusRow("DATA_LOSS", 15, 500, InternalServerError, False),
    StatusRow("UNIMPLEMENTED", 12, 501, NotImplementedByServerError, False),
    StatusRow("UNAVAILABLE", 14, 503, UnavailableError, True),
    StatusRow("DEADLINE_EXCEEDED", 4, 504, DeadlineExceededError, True),
    StatusRow("RESOURCE_EXHAUSTED", 8, 413, RequestTooLargeError, False),  # size limits (above)
)
#: The HTTP status of a request above one of this server's size limits (see STATUS_TABLE).
REQUEST_TOO_LARGE_STATUS = 413
#: The HTTP reason phrase of TF Serving's 499, which Python's ``http.HTTPStatus`` lacks.
_EXTRA_REASONS = {499: "Client Closed Request"}

_BY_CODE: dict[str, StatusRow] = {}
_BY_NUMBER: dict[int, StatusRow] = {}
_BY_HTTP: dict[int, StatusRow] = {}
for _row in STATUS_TABLE:  # the first row wins each key
    _BY_CODE.setdefault(_row.code, _row)
    _BY_NUMBER.setdefault(_row.number, _row)
    _BY_HTTP.setdefault(_row.http, _row)
del _row

#: The HTTP statuses and the code names a client retries (the table's ``retryable`` rows).
RETRYABLE_HTTP_STATUSES: tuple[int, ...] = tuple(r.http for r in STATUS_TABLE if r.retryable)
RETRYABLE_CODES: tuple[str, ...] = tuple(r.code for r in STATUS_TABLE if r.retryable)


def http_status_for(grpc_code: str) -> int:
    """The HTTP status TF Serving answers a status code name with (500 for a name the table
    lacks, as ``ToHTTPStatusCode``'s default)."""
    row = _BY_CODE.get(grpc_code)
    return row.http if row is not None else 500


def code_for_http(status: int) -> str:
    """The code name a failure known by its HTTP ``status`` is answered with over gRPC: the first
    :data:`STATUS_TABLE` row with that status; else INTERNAL for a 5xx, INVALID_ARGUMENT for
    anything else."""
    row = _BY_HTTP.get(status)
    if row is not None:
        return row.code
    return "INTERNAL" if status >= 500 else "INVALID_ARGUMENT"


def code_name(number: int) -> str:
    """The code name for a status code number (``tf.errors.OpError.error_code``); UNKNOWN for a
    number the table lacks."""
    row = _BY_NUMBER.get(number)
    return row.code if row is not None else "UNKNOWN"


def is_retryable(grpc_code: str) -> bool:
    """Whether a client retries an answer with this code name (the table's ``retryable``)."""
    row = _BY_CODE.get(grpc_code)
    return row is not None and row.retryable


def http_reason(status: int) -> str:
    """The reason phrase of an HTTP status line (``Not Found``; TF Serving's 499 ``Client Closed
    Request``; ``Error`` for a status without one)."""
    try:
        return http.HTTPStatus(status).phrase
    except ValueError:
        return _EXTRA_REASONS.get(status, "Error")


#: What a server answers (500 / INTERNAL) for a failure that is its own bug: no exception type,
#: message or traceback reaches the client; the server logs them (``logger.exception``).
INTERNAL_ERROR_MESSAGE = (
    "Internal error in memgraph-tf serve: the request could not be answered; the server's log "
    "holds the cause"
)


def error_for_status(
    status: int, message: str, url: str | None = None, *, grpc_code: str | None = None
) -> ServingError:
    """The :class:`ServingError` subclass instance for a non-2xx HTTP ``status``, carrying
    ``message`` and ``url``: the error class of the :data:`STATUS_TABLE` row with that status
    (a code's row when ``grpc_code`` names one), :class:`ServingHTTPError` for a status the table
    lacks. ``grpc_code`` is the code given, else the table's code for the status (None for a
    status the table lacks)."""
    row = _BY_CODE.get(grpc_code) if grpc_code is not None else None
    if row is None or row.http != status:
        row = _BY_HTTP.get(status)
    cls = row.error if row is not None else ServingHTTPError
    code = grpc_code if grpc_code is not None else (row.code if row is not None else None)
    return cls(message, status=status, url=url, grpc_code=code)


# Exit codes of the memgraph-tf commands (classify, in one process or on Beam; serve;
# install-modules).
EXIT_OK = 0
EXIT_FAILED = 1  # the run failed or stopped; what was written stays, a rerun resumes
EXIT_USAGE = 2  # a bad command line, setting, credential or model name: nothing was run or written
EXIT_INTERRUPTED = 130  # Ctrl-C (128 + SIGINT); what was written stays, a rerun resumes

EXIT_CODES: dict[str, int] = {
    # The one exit-code table: an exception's class (``module.QualName``) -> the exit code.
    # exit_code_for() walks the exception's MRO and takes the first class listed here, so a
    # subclass is listed only where it differs from its bases. Classes are named, not imported,
    # so that this module stays at the bottom of the layers (a test checks every name resolves).
    "memgraph_tf.errors.ConfigurationError": EXIT_USAGE,
    "memgraph_tf.errors.AuthenticationError": EXIT_USAGE,
    "memgraph_tf.errors.BundleError": EXIT_USAGE,
    "memgraph_tf.errors.NotFoundError": EXIT_USAGE,  # no such model or version
    "memgraph_tf.errors.MemgraphTfError": EXIT_FAILED,
    # a path the user named: missing, a file where a directory belongs (or the reverse),
    # already there (install-modules --no-overwrite), or not readable / writable
    "builtins.FileNotFoundError": EXIT_USAGE,
    "builtins.NotADirectoryError": EXIT_USAGE,
    "builtins.IsADirectoryError": EXIT_USAGE,
    "builtins.FileExistsError": EXIT_USAGE,
    "builtins.PermissionError": EXIT_USAGE,
    "builtins.OSError": EXIT_FAILED,
    "builtins.ImportError": EXIT_USAGE,  # an optional extra is missing (apache-beam)
    "builtins.ValueError": EXIT_USAGE,  # a command-line value refused by a constructor
    "builtins.KeyboardInterrupt": EXIT_INTERRUPTED,
}


def exit_code_for(exc: BaseException) -> int:
    """The exit code for a command that stops with ``exc``: the :data:`EXIT_CODES` entry of the
    first class in ``type(exc).__mro__`` that has one, else :data:`EXIT_FAILED` (a bug is a failed
    run, never success). Every command of the package exits through this one table."""
    for cls in type(exc).__mro__:
        code = EXIT_CODES.get(f"{cls.__module__}.{cls.__qualname__}")
        if code is not None:
            return code
    return EXIT_FAILED


def command_failure(
    exc: BaseException,
    *,
    interrupted: str | None = None,
    written: str | None = None,
    log: logging.Logger,
) -> tuple[int, str]:
    """The exit code (:func:`exit_code_for`) and the one line, without the ``memgraph-tf
    COMMAND:`` prefix, of a command that stopped with ``exc`` -- never a traceback. Ctrl-C (130):
    ``interrupted``, or for a resumable command (``classify``, ``score-links``: ``interrupted``
    given) ``interrupted after INTERRUPTED; run the same command again to resume``; a bad command
    line, setting or input (2: nothing was written): ``error: EXC``, which names what is at
    fault; a failure memgraph-tf or the system reports (a :class:`MemgraphTfError` or
    ``OSError``, 1): ``failed: EXC``, for a resumable command (``written`` given) followed by
    `` (WRITTEN before; run the same command again to resume)``; anything else is a bug (1):
    ``internal error: TYPE: EXC (run with -v for the traceback)``, the traceback logged on
    ``log`` at debug level (call it inside the ``except`` block). The line holds no more of
    the command line than ``exc``'s message does: the library's messages show URIs with their
    credentials masked."""
    code = exit_code_for(exc)
    if code == EXIT_INTERRUPTED:
        if interrupted is None:
            return code, "interrupted"
        return code, f"interrupted after {interrupted}; run the same command again to resume"
    if code == EXIT_USAGE:
        return code, f"error: {exc}"
    if isinstance(exc, (MemgraphTfError, OSError)):
        if written is None:
            return code, f"failed: {exc}"
        return code, f"failed: {exc} ({written} before; run the same command again to resume)"
    log.debug("internal error", exc_info=True)
    return code, f"internal error: {type(exc).__name__}: {exc} (run with -v for the traceback)"
