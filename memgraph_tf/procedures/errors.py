"""Errors raised by the ``tf_features`` procedures (stdlib only).

Every error is a :class:`ValueError` subclass (and a :class:`memgraph_tf.errors.MemgraphTfError`)
whose message names what is at fault: the parameter, option, node id, property and, for vector
elements, the index. Memgraph reports the message to the client unchanged.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from memgraph_tf.errors import MemgraphTfError


class ProcedureInputError(MemgraphTfError, ValueError):
    """Bad input to a ``tf_features`` procedure (arguments, options or graph data)."""


class OptionError(ProcedureInputError):
    """An argument or option is unknown, of the wrong type or out of range."""


class NodeNotFoundError(ProcedureInputError, LookupError):
    """A node id given to a procedure does not exist in the graph."""


class PropertyValueError(ProcedureInputError):
    """A node's property is missing or has a value that cannot be packed."""


def describe_value(value: Any) -> str:
    """A short, type-tagged rendering of ``value`` for error messages: ``null`` for Cypher's null
    (Python None), ``node 5`` / ``relationship 7`` for a graph object (an ``mgp.Vertex`` or
    ``mgp.Edge``: its internal id), else the Python type and the value (``str 'five'``,
    ``float 1e+09``, ``list [1, 2, ...]``)."""
    if value is None:
        return "null"
    kind = type(value).__name__
    if kind in ("Vertex", "Edge") and hasattr(value, "id"):
        try:
            return f"{'node' if kind == 'Vertex' else 'relationship'} {value.id}"
        except Exception:  # noqa: BLE001 -- an invalid handle: fall back to the generic form
            pass
    if isinstance(value, (list, tuple)):
        text = repr(list(value[:5]))[:-1] + (", ...]" if len(value) > 5 else "]")
        return f"list {text}"
    if isinstance(value, dict):
        return "map " + repr(dict(list(value.items())[:5]))
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{kind} {text}"


def quoted(values: Iterable[Any]) -> str:
    """``'a', 'b', 'c'`` for error messages listing allowed values."""
    return ", ".join(repr(v) for v in values)
