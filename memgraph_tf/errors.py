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
    +-- ClientError                                      memgraph_tf.client.errors
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
    +-- ServingError                                     memgraph_tf.serving.errors (.status, .message, .url, .grpc_code)
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

The package bases are importable from here by name (``from memgraph_tf.errors import ClientError``).
They are looked up on first use, so importing this module needs the standard library alone; using a
name imports its package (those packages import TensorFlow or the Bolt driver only lazily).
"""  # noqa: E501 -- the tree: one class a line, its note beside it (tests/test_errors.py)

from __future__ import annotations

import logging

from memgraph_tf.lazy import lazy_attributes

__all__ = [
    "EXIT_CODES",
    "EXIT_FAILED",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_USAGE",
    "ArcadeDBStartError",
    "BlobFormatError",
    "ClientError",
    "EmbeddedError",
    "MemgraphTfError",
    "OpLibraryError",
    "ProcedureInputError",
    "ServingError",
    "command_failure",
    "exit_code_for",
]


class MemgraphTfError(Exception):
    """Base class of every error memgraph-tf raises on purpose."""


# The base of each package's subtree -> the module that defines it (imported on first use).
_PACKAGE_BASES = {
    "BlobFormatError": "memgraph_tf.blob",
    "OpLibraryError": "memgraph_tf.ops",
    "ProcedureInputError": "memgraph_tf.procedures.errors",
    "EmbeddedError": "memgraph_tf.embedded",
    "ClientError": "memgraph_tf.client.errors",
    "ServingError": "memgraph_tf.serving.errors",
    "ArcadeDBStartError": "memgraph_tf.testing.arcadedb",
}


__getattr__, __dir__ = lazy_attributes(__name__, _PACKAGE_BASES, globals())


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
    "memgraph_tf.client.errors.ConfigurationError": EXIT_USAGE,
    "memgraph_tf.client.errors.AuthenticationError": EXIT_USAGE,
    "memgraph_tf.serving.errors.BundleError": EXIT_USAGE,
    "memgraph_tf.serving.errors.NotFoundError": EXIT_USAGE,  # no such model or version
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
