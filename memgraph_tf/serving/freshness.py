"""What a ``node_id`` answer reflects: the model version that answered and the moment of the graph
its neighbourhoods were read at, so that a caller can tell how fresh the answer is.

The server reads a request's neighbourhoods from the graph when it answers (one procedure call per
batch of ids: in Memgraph, one transaction, which sees the graph as committed when it starts), so
the moment is the wall-clock time, UTC, just before the first read of the request. Both travel
beside TF Serving's answer, never inside it (its bodies and protos stay TF Serving's own):

* REST: the response headers :data:`MODEL_VERSION_HEADER` and :data:`GRAPH_TIME_HEADER`;
* gRPC: the trailing metadata keys :data:`MODEL_VERSION_KEY` and :data:`GRAPH_TIME_KEY`.

Only answers that read the graph (``node_id`` examples) carry them; a request of blobs reads no
graph and carries neither. The time is RFC 3339 with microseconds, e.g.
``2026-11-28T23:45:01.123456Z`` (:func:`graph_time_text`).
"""

from __future__ import annotations

import contextvars
import dataclasses
import datetime
import time

__all__ = [
    "GRAPH_TIME_HEADER",
    "GRAPH_TIME_KEY",
    "MODEL_VERSION_HEADER",
    "MODEL_VERSION_KEY",
    "Freshness",
    "begin",
    "current",
    "end",
    "graph_time_text",
    "note_graph_read",
    "note_model_version",
]

#: The REST response header with the model version of a ``node_id`` answer.
MODEL_VERSION_HEADER = "X-Memgraph-Tf-Model-Version"
#: The REST response header with the moment of the graph a ``node_id`` answer reflects.
GRAPH_TIME_HEADER = "X-Memgraph-Tf-Graph-Time"
#: The gRPC trailing metadata key of the model version (gRPC keys are lower case).
MODEL_VERSION_KEY = "memgraph-tf-model-version"
#: The gRPC trailing metadata key of the graph's moment.
GRAPH_TIME_KEY = "memgraph-tf-graph-time"


@dataclasses.dataclass
class Freshness:
    """One request's: ``graph_time`` (seconds since the epoch, when its first neighbourhood read
    began; None: it read no graph) and ``model_version`` (the version that answered)."""

    graph_time: float | None = None
    model_version: int | None = None

    def headers(self) -> list[tuple[str, str]]:
        """The REST headers (none when the request read no graph)."""
        if self.graph_time is None:
            return []
        out = [(GRAPH_TIME_HEADER, graph_time_text(self.graph_time))]
        if self.model_version is not None:
            out.insert(0, (MODEL_VERSION_HEADER, str(self.model_version)))
        return out

    def metadata(self) -> tuple[tuple[str, str], ...]:
        """The gRPC trailing metadata (empty when the request read no graph)."""
        keys = {MODEL_VERSION_HEADER: MODEL_VERSION_KEY, GRAPH_TIME_HEADER: GRAPH_TIME_KEY}
        return tuple((keys[name], value) for name, value in self.headers())


_CURRENT: contextvars.ContextVar[Freshness | None] = contextvars.ContextVar(
    "memgraph_tf_freshness", default=None
)


def begin() -> tuple[Freshness, contextvars.Token]:
    """Starts recording this thread's request: ``(record, token)``; pass the token to
    :func:`end`."""
    record = Freshness()
    return record, _CURRENT.set(record)


def end(token: contextvars.Token) -> None:
    """Stops recording the request :func:`begin` started."""
    _CURRENT.reset(token)


def current() -> Freshness | None:
    """The record of the request this thread answers, or None."""
    return _CURRENT.get()


def note_graph_read(now: float | None = None) -> None:
    """A neighbourhood read of the current request begins (``now``: seconds since the epoch,
    default the clock); the request's moment is its first read's."""
    record = _CURRENT.get()
    if record is not None and record.graph_time is None:
        record.graph_time = time.time() if now is None else now


def note_model_version(version: int) -> None:
    """The version answering the current request."""
    record = _CURRENT.get()
    if record is not None:
        record.model_version = int(version)


def graph_time_text(seconds: float) -> str:
    """``seconds`` since the epoch as RFC 3339, UTC, with microseconds:
    ``2026-11-28T23:45:01.123456Z``."""
    moment = datetime.datetime.fromtimestamp(seconds, datetime.UTC).replace(tzinfo=None)
    return moment.isoformat(timespec="microseconds") + "Z"
