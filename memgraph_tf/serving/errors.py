"""Typed errors of the serving package, and the one status table they are built from.

Every error raised by :class:`memgraph_tf.serving.ServingClient` (and its gRPC twin) is a
:class:`ServingError` (itself a :class:`memgraph_tf.errors.MemgraphTfError`, the root of the
library's tree). Errors that come from an answer carry the HTTP ``status``, the status code's
name ``grpc_code`` and the server's message (the ``"error"`` field of TF Serving's
``{"error": "..."}`` body, the raw body when it is not that shape, or the gRPC status details)::

    ServingError                   status: int | None, message, url, grpc_code: str | None
    +-- ServingConnectionError     no answer (refused, reset, DNS) after all retries
    +-- ServingTimeoutError        no answer within timeout_s
    +-- RequestTooLargeError       413, or one item alone above max_request_bytes (status None)
    +-- ServingHTTPError           any other non-2xx answer; subclasses by status:
        +-- BadRequestError        400  INVALID_ARGUMENT / FAILED_PRECONDITION / OUT_OF_RANGE
        +-- UnauthorizedError      401  UNAUTHENTICATED
        +-- ForbiddenError         403  PERMISSION_DENIED
        +-- NotFoundError          404  unknown model, version or path
        +-- ConflictError          409  ALREADY_EXISTS / ABORTED
        +-- TooManyRequestsError   429  RESOURCE_EXHAUSTED
        +-- InternalServerError    500  INTERNAL / UNKNOWN / DATA_LOSS
        +-- NotImplementedByServerError  501  UNIMPLEMENTED
        +-- UnavailableError       503  UNAVAILABLE (retried)
        +-- DeadlineExceededError  504  DEADLINE_EXCEEDED (retried)
    +-- InvalidResponseError       a 2xx answer that is not what the API promises
    +-- ServingFailure             memgraph-tf serve answers a request with this status and code
    |                              (raised inside the server, never to a client)
    +-- BundleError                a bundle or an export argument breaks the bundle contract
    |                              (also a ValueError); ``key`` names the config key / parameter
    +-- BundleExistsError          the version directory exists (also a FileExistsError)
    +-- NeighbourhoodError         node id -> neighbourhood blob failed (classify_nodes, --graph);
        |                          a server answers each with its class's ``grpc_code``:
        +-- NodeIdError            a node id is not an int64 integer (also a ValueError): 400
        +-- NeighbourhoodDataError the graph lacks a node, or its data cannot be packed
        |                          (also a ValueError): 400
        +-- GraphUnavailableError  the graph cannot be reached (also a ConnectionError): 503
        +-- GraphSourceError       any other failure of the graph source, or an answer that
                                   does not fit (wrong blob count): 500

:data:`STATUS_TABLE` holds, one row per TF Serving / gRPC status code, the HTTP status TF
Serving's ``http_server.cc`` (``ToHTTPStatusCode``) answers it with, the error class and whether
clients retry it; :func:`error_for_status` builds the right error from it. Standard library only
(no gRPC, no TensorFlow): code names are strings, ``grpc.StatusCode[name]`` gives the enum.
"""

from __future__ import annotations

import http
from typing import NamedTuple

from memgraph_tf.errors import MemgraphTfError


class ServingError(MemgraphTfError):
    """Base class. ``status`` is the HTTP status (``None`` when there was no HTTP answer);
    ``message`` is the server's error message (or a local description); ``url`` the request URL;
    ``grpc_code`` the name of the TF Serving / gRPC status code (``"NOT_FOUND"``) for errors built
    from :data:`STATUS_TABLE` (``None`` otherwise). Where an enum is needed:
    ``grpc.StatusCode[exc.grpc_code]``."""

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


__all__ = [
    "INTERNAL_ERROR_MESSAGE",
    "REQUEST_TOO_LARGE_STATUS",
    "RETRYABLE_CODES",
    "RETRYABLE_HTTP_STATUSES",
    "STATUS_TABLE",
    "BadRequestError",
    "BundleError",
    "BundleExistsError",
    "ConflictError",
    "DeadlineExceededError",
    "ForbiddenError",
    "GraphSourceError",
    "GraphUnavailableError",
    "InternalServerError",
    "InvalidResponseError",
    "NeighbourhoodDataError",
    "NeighbourhoodError",
    "NodeIdError",
    "NotFoundError",
    "NotImplementedByServerError",
    "RequestTooLargeError",
    "ServingConnectionError",
    "ServingError",
    "ServingFailure",
    "ServingHTTPError",
    "ServingTimeoutError",
    "StatusRow",
    "TooManyRequestsError",
    "UnauthorizedError",
    "UnavailableError",
    "code_for_http",
    "code_name",
    "error_for_status",
    "http_reason",
    "http_status_for",
    "is_retryable",
]
