"""Typed errors for talking to a TensorFlow Serving compatible REST endpoint.

Every error raised by :class:`memgraph_tf.serving.ServingClient` is a :class:`ServingError` (itself a
:class:`memgraph_tf.errors.MemgraphTfError`, the root of the library's tree). Errors
that come from an HTTP answer carry the HTTP ``status`` and the server's message (the ``"error"``
field of TF Serving's ``{"error": "..."}`` body, or the raw body when it is not that shape)::

    ServingError                      status: int | None, message: str, url: str | None
    +-- ServingConnectionError        no HTTP answer (refused, reset, DNS) after all retries
    +-- ServingTimeoutError           no answer within timeout_s
    +-- RequestTooLargeError          413, or one item alone above max_request_bytes (status None)
    +-- ServingHTTPError              any non-2xx answer; subclasses by status:
        +-- BadRequestError           400  INVALID_ARGUMENT / FAILED_PRECONDITION / OUT_OF_RANGE
        +-- UnauthorizedError         401  UNAUTHENTICATED
        +-- ForbiddenError            403  PERMISSION_DENIED
        +-- NotFoundError             404  unknown model, version or path
        +-- ConflictError             409  ALREADY_EXISTS / ABORTED
        +-- TooManyRequestsError      429  RESOURCE_EXHAUSTED
        +-- InternalServerError       500  INTERNAL / UNKNOWN / DATA_LOSS
        +-- NotImplementedByServerError 501  UNIMPLEMENTED
        +-- UnavailableError          503  UNAVAILABLE (retried)
        +-- DeadlineExceededError     504  DEADLINE_EXCEEDED (retried)
    +-- InvalidResponseError          a 2xx answer that is not the JSON the API promises
    +-- ServingFailure                the local server (memgraph-tf serve) answers a request with
    |                                 this error status (raised inside the server, never to a client)
    +-- BundleError                   a bundle or an export argument breaks the bundle contract
    |                                 (also a ValueError); ``key`` names the config key / parameter
    +-- BundleExistsError             the version directory exists (also a FileExistsError)
    +-- NeighbourhoodError            node id -> neighbourhood blob failed (classify_nodes, --graph):
        +-- NodeIdError               a node id is not an int64 integer (also a ValueError)    -> 400
        +-- NeighbourhoodDataError    the graph lacks a node, or its data cannot be packed
                                      (also a ValueError)                                      -> 400
        +-- GraphUnavailableError     the graph cannot be reached (also a ConnectionError)     -> 503
        +-- GraphSourceError          any other failure the graph source reports, or an answer
                                      that does not fit (wrong blob count)                     -> 500

The HTTP status codes are the ones TF Serving's ``http_server.cc`` maps gRPC status codes to.
:func:`error_for_status` builds the right subclass from a status and message.
"""

from __future__ import annotations

from memgraph_tf.errors import MemgraphTfError


class ServingError(MemgraphTfError):
    """Base class. ``status`` is the HTTP status (``None`` when there was no HTTP answer);
    ``message`` is the server's error message (or a local description); ``url`` the request URL."""

    def __init__(self, message: str, *, status: int | None = None, url: str | None = None):
        self.message = message
        self.status = status
        self.url = url
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
    """Raised inside ``memgraph-tf serve`` (``model_server.py``, ``rest_json.py``): the request is
    answered with HTTP ``status`` and ``{"error": message}``, the status and message TF Serving
    gives for the same input."""

    def __init__(self, status: int, message: str):
        super().__init__(message, status=status)


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


class NeighbourhoodDataError(NeighbourhoodError, ValueError):
    """The graph source rejected the request's data: a node it lacks, a property it cannot pack."""


class GraphUnavailableError(NeighbourhoodError, ConnectionError):
    """The graph source cannot be reached (its ConnectionError or OSError)."""


class GraphSourceError(NeighbourhoodError):
    """Any other failure the graph source reports as a memgraph-tf error (a failed query), or an
    answer that does not fit the request (a wrong number of blobs)."""


_BY_STATUS: dict[int, type[ServingError]] = {
    400: BadRequestError,
    401: UnauthorizedError,
    403: ForbiddenError,
    404: NotFoundError,
    409: ConflictError,
    413: RequestTooLargeError,
    429: TooManyRequestsError,
    500: InternalServerError,
    501: NotImplementedByServerError,
    503: UnavailableError,
    504: DeadlineExceededError,
}


def error_for_status(status: int, message: str, url: str | None = None) -> ServingError:
    """Return the :class:`ServingError` subclass instance for an HTTP ``status`` (any non-2xx code
    maps to at least :class:`ServingHTTPError`), carrying ``message`` and ``url``."""
    cls = _BY_STATUS.get(status, ServingHTTPError)
    return cls(message, status=status, url=url)


__all__ = [
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
    "TooManyRequestsError",
    "UnauthorizedError",
    "UnavailableError",
    "error_for_status",
]
