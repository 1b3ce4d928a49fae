"""Configuration of the graph sources: URIs, credentials and environment variables, the driver
settings, the procedure memory limit, and the quoting of names placed in queries.

Credentials come from the arguments or from ``MEMGRAPH_TF_URI``, ``MEMGRAPH_TF_USER``,
``MEMGRAPH_TF_PASSWORD`` (and ``MEMGRAPH_TF_DATABASE``); a URI shown in a message or a ``repr`` is
:func:`redact`-ed.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import os
import re
import urllib.parse
from typing import Any

import neo4j

from memgraph_tf.client.errors import ConfigurationError
from memgraph_tf.procedures.options import DEFAULT_MAX_BLOB_BYTES

logger = logging.getLogger(__name__)


ENV_URI = "MEMGRAPH_TF_URI"
ENV_USER = "MEMGRAPH_TF_USER"
ENV_PASSWORD = "MEMGRAPH_TF_PASSWORD"
ENV_DATABASE = "MEMGRAPH_TF_DATABASE"

SCHEMES = ("bolt", "bolt+s", "bolt+ssc", "neo4j", "neo4j+s", "neo4j+ssc")
"""URI schemes :func:`connect` accepts (``+s``: TLS with a verified certificate, ``+ssc``: TLS that
accepts a self-signed one)."""

ENV_CONNECT_TIMEOUT = "MEMGRAPH_TF_CONNECT_TIMEOUT_S"
DEFAULT_CONNECT_TIMEOUT_S = 5.0
"""How long reaching the graph server may take by default (:func:`connect_timeout`): the TCP
connect (the neo4j driver's ``connection_timeout``) and the wait for a connection, TLS and the
Bolt handshake included (its ``connection_acquisition_timeout``). A server that does not answer
within it is unavailable (:class:`~memgraph_tf.client.errors.ServerUnavailable`; a served
``node_id`` request answers 503), and a failed connection is not retried."""

RETRY_TIME_S = 15.0
"""How long a managed transaction that a reachable server failed with a transient error (a
conflict with a concurrent transaction) is retried: the neo4j driver's
``max_transaction_retry_time`` of the retry."""

DEFAULT_DRIVER_OPTIONS: dict[str, Any] = {"keep_alive": True}
"""Driver settings :func:`connect` uses unless ``driver_options`` overrides them (besides the
timeouts it derives from ``connect_timeout_s`` and :data:`RETRY_TIME_S`)."""

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


def connect_timeout(timeout_s: float | str | None = None) -> float:
    """The connect timeout in seconds from ``timeout_s`` -- a number > 0 (also as a decimal
    string) -- or, when None, from ``MEMGRAPH_TF_CONNECT_TIMEOUT_S``, else
    :data:`DEFAULT_CONNECT_TIMEOUT_S`. Raises :class:`ConfigurationError` naming the argument or
    the variable and the bad value."""
    name = "connect_timeout_s"
    if timeout_s is None:
        timeout_s = os.environ.get(ENV_CONNECT_TIMEOUT) or None
        if timeout_s is None:
            return DEFAULT_CONNECT_TIMEOUT_S
        name = ENV_CONNECT_TIMEOUT
    value: Any = timeout_s
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            value = None
    if (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value > 0
    ):
        return float(value)
    raise ConfigurationError(f"{name}: expected a number of seconds > 0, got {timeout_s!r}")


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
NAME_PATTERN = re.compile(r"^[^`\x00]+$")
"""The names :func:`quote_name` accepts: non-empty, without a backquote or NUL."""


def short_query(query: str) -> str:
    """``query`` on one line, cut to 200 characters (for messages)."""
    query = " ".join(query.split())
    return query if len(query) <= _QUERY_SHOWN_CHARS else query[: _QUERY_SHOWN_CHARS - 3] + "..."


def quote_name(name: str, param: str) -> str:
    """``name`` (a property or label name) as a backquoted Cypher identifier, safe to place in a
    query. Raises :class:`ConfigurationError` naming ``param`` for anything that cannot be quoted
    (not a string, empty, or holding a backquote or NUL). The one name check of every query the
    client, batch inference and the Beam transforms build."""
    if not isinstance(name, str) or not NAME_PATTERN.match(name):
        raise ConfigurationError(
            f"{param}: expected a non-empty name without backquotes or NUL, got {name!r}"
        )
    return f"`{name}`"


def resolve_uri(uri: str | None) -> str:
    """``uri``, else ``MEMGRAPH_TF_URI``, checked: a string with a scheme of :data:`SCHEMES`, a
    host and no credentials; else :class:`ConfigurationError` naming what is wrong (the URI
    redacted)."""
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
            f"got {parsed.scheme + '://' if parsed.scheme else 'none'} in {redact(uri)!r}"
        )
    if parsed.username or parsed.password:
        raise ConfigurationError(
            "uri: expected no user or password inside the URI (pass auth=(user, password) or set "
            f"{ENV_USER}/{ENV_PASSWORD}), got credentials in {redact(uri)!r}"
        )
    if not parsed.hostname:
        raise ConfigurationError(f"uri: expected a host, got none in {uri!r}")
    return uri


def redact(uri: str) -> str:
    """``uri`` with any user and password replaced by ``***`` (safe to show)."""
    parsed = urllib.parse.urlsplit(uri)
    if parsed.username or parsed.password:
        host = parsed.hostname or ""
        if parsed.port:
            host += f":{parsed.port}"
        parsed = parsed._replace(netloc=f"***@{host}")
    return urllib.parse.urlunsplit(parsed)


def resolve_auth(auth: Any) -> tuple[Any, str | None]:
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
