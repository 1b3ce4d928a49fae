"""Typed errors for talking to a TensorFlow Serving compatible REST endpoint.

Every error raised by :class:`memgraph_tf.serving.ServingClient` is a :class:`ServingError`. Errors
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

The HTTP status codes are the ones TF Serving's ``http_server.cc`` maps gRPC status codes to.
:func:`error_for_status` builds the right subclass from a status and message.
"""

from __future__ import annotations


class ServingError(Exception):
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
    "ConflictError",
    "DeadlineExceededError",
    "ForbiddenError",
    "InternalServerError",
    "InvalidResponseError",
    "NotFoundError",
    "NotImplementedByServerError",
    "RequestTooLargeError",
    "ServingConnectionError",
    "ServingError",
    "ServingHTTPError",
    "ServingTimeoutError",
    "TooManyRequestsError",
    "UnauthorizedError",
    "UnavailableError",
    "error_for_status",
]
