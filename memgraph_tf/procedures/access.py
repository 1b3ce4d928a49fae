"""The one graph-access protocol every ``tf_features`` procedure is written against.

The packing and sampling code (:mod:`.core`, :mod:`.typed`, :mod:`.pairs`) sees nodes only as
integer *keys* (a node's internal id, or the value of ``options.id_property``) and asks a
:class:`GraphAccess` for properties, neighbours and whole-graph scans in batches. An *access
factory* (:data:`AccessFactory`) makes one access per call from the call's parsed options. Two
implementations exist: :class:`~memgraph_tf.procedures.mgp_access.MgpGraphAccess` (Memgraph's
``mgp`` API: the query module, the embedded runtime) and the client's Cypher access
(:class:`memgraph_tf.client.sources.CypherGraphAccess`, plain Cypher over Bolt). The procedures
sort and deduplicate what an access hands out themselves, so both give the same bytes for the same
graph, arguments and seed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol

from memgraph_tf.procedures.errors import (
    ProcedureInputError,
    PropertyValueError,
    describe_value,
)
from memgraph_tf.procedures.options import Options, SplitFilter

__all__ = [
    "ABORT_CHECK_EVERY",
    "READ_CHUNK",
    "AccessFactory",
    "GraphAccess",
    "NeighbourRead",
    "all_ints",
    "is_int",
    "node_name",
    "require_int_id",
    "require_unique_id",
    "stale_member",
    "stale_relationship",
    "typed_node_name",
]

ABORT_CHECK_EVERY = 256
"""An access checks for abort at least every this many nodes or edges read."""
READ_CHUNK = 512
"""Nodes per batched read the procedures ask an access for."""


@dataclasses.dataclass(frozen=True)
class NeighbourRead:
    """Which relationships a :meth:`GraphAccess.neighbours` read walks from each key: those of
    ``edge_types`` (None: every type; kept as a tuple) along ``direction`` (``out``, ``in``,
    ``both``) to a node with ``label`` (None: any node), without the relationships ``held_out``
    names (a relationship lacking its property is kept)."""

    edge_types: Sequence[str] | None = None
    direction: str = "both"
    label: str | None = None
    held_out: SplitFilter | None = None

    def __post_init__(self) -> None:
        if self.edge_types is not None:
            object.__setattr__(self, "edge_types", tuple(self.edge_types))


class GraphAccess(Protocol):
    """What the procedures need from a graph. Keys are Python ints; an access made with
    ``options.id_property`` (and ``options.label``, where the seeds are looked up) keys nodes by
    that property, else by internal id.

    Implementations guarantee: ``properties`` returns one list per key (``None`` for a missing
    property, lists as Python lists); ``neighbours`` returns, per key, the keys of the nodes one
    edge away, in any order and possibly repeated; the scans see the graph as it is during the
    call; ``check_abort`` raises when the caller must stop; the same bad input raises the same
    :class:`~memgraph_tf.procedures.errors.ProcedureInputError` message on every implementation.
    """

    # -- keys -----------------------------------------------------------------------------------
    def node_name(self, key: int) -> str:
        """How a node is named in error messages (``node 5`` / ``node with id = 5``)."""

    def check_abort(self) -> None:
        """Raises if the procedure must stop (Memgraph: ``ctx.check_must_abort()``)."""

    def resolve(self, nodes: Any, param: str) -> list[int]:
        """Keys of ``nodes`` (vertices or integer ids) in input order, duplicates kept; raises
        naming ``param[i]`` for a node that is not a node or not in the graph."""

    def internal_ids(self, keys: Sequence[int]) -> list[int]:
        """The internal id of the node each of ``keys`` (resolved or met in this call) stands
        for."""

    def adopt(
        self, keys: Sequence[int], internals: Sequence[int], names: Sequence[str] | None = None
    ) -> None:
        """Registers ``keys[i]`` as the key of the node with internal id ``internals[i]``: nodes
        met without an edge walk (a reservoir's members, :mod:`.reservoir`), read later like
        any other key. Reading one no longer in the graph (with ``options.id_property``: no
        longer holding its key) raises :class:`~memgraph_tf.procedures.errors.ProcedureInputError`
        with :func:`stale_member`'s message, the node named ``names[i]`` (default
        :meth:`node_name`)."""

    # -- reads ----------------------------------------------------------------------------------
    def properties(self, keys: Sequence[int], names: Sequence[str]) -> list[list[Any]]:
        """Property values per key, ``None`` where missing."""

    def neighbours(self, keys: Sequence[int], read: NeighbourRead) -> list[list[int]]:
        """Per key, the keys of the nodes one relationship away over the relationships ``read``
        walks (its edge types, direction, neighbour label and held-out split)."""

    def valued_neighbours(
        self,
        keys: Sequence[int],
        step: Any,
        held_out: SplitFilter | None = None,
        names: Sequence[str] | None = None,
    ) -> list[list[tuple[int, Any, Any, bool]]]:
        """Per key, ``(neighbour key, value of step.relationship_property or None, relationship id,
        outgoing)`` per relationship the :class:`~memgraph_tf.typed_sampling.EdgeStep` ``step``
        walks from it (to a node with the step's right label, without those ``held_out`` names),
        in any order, possibly repeated (``outgoing``: the key's node is the relationship's
        start). With ``names`` the value is a tuple of those properties' values instead (None
        where missing; temporal values as ``mgp`` gives them, as :meth:`relationship_values`)."""

    def has_label(self, keys: Sequence[int], label: str) -> list[bool]:
        """Per key, whether its node has ``label``."""

    def present_relationships(
        self,
        keys: Sequence[int],
        read: NeighbourRead,
        wanted: Sequence[set[tuple[Any, int]]],
    ) -> list[set[tuple[Any, int]]]:
        """Per key, those of the ``(relationship id, other end's internal id)`` pairs
        ``wanted[i]`` that are among the relationships ``read`` walks from its node
        (``read.edge_types`` and ``read.direction``; its label and held-out split are not
        applied). Cost: O(the node's degree in that direction) at most; an access may stop
        walking a node's relationships once all its wanted pairs are found."""

    # -- scans ----------------------------------------------------------------------------------
    def first_node_with(self, names: Sequence[str]) -> int | None:
        """The key of the first node (with ``options.label``) having all ``names`` and, with
        ``options.id_property``, an id; None when there is none."""

    def label_values(self, name: str) -> Iterable[tuple[Any, int]]:
        """``(value, internal id of a node holding it)`` covering at least every distinct value of
        property ``name`` among the nodes (with ``options.label``) that have it."""

    def label_nodes(self, label: str) -> list[int]:
        """The internal ids of the nodes with ``label``, in a fixed order."""

    def label_counts(self) -> dict[str, int]:
        """Nodes per label."""

    def triples(self) -> dict[tuple[str, str, str], int]:
        """Relationships per ``(source label, type, target label)``."""

    def has_triple(self, source: str, rel_type: str, target: str) -> bool:
        """Whether some ``(:source)-[:rel_type]->(:target)`` relationship exists."""

    # -- the relationships of an edge step (tf_features.split_edges) -----------------------------
    def relationships(self, step: Any) -> list[tuple[Any, int, int]]:
        """``(handle, left internal id, right internal id)`` per distinct relationship the
        :class:`~memgraph_tf.typed_sampling.EdgeStep` matches (``left``: its endpoint with the
        step's left label), in any order."""

    def relationship_values(self, handles: Sequence[Any], name: str) -> list[Any]:
        """Property ``name`` of each relationship handle (from :meth:`relationships`), in order:
        ``None`` where it is missing; temporal values as ``mgp`` gives them (``datetime.date``
        for a Date, a naive ``datetime.datetime`` for a LocalDateTime)."""

    def write_splits(self, rows: Sequence[tuple[Any, str]], name: str) -> None:
        """Sets property ``name`` to the value on each relationship ``handle`` of ``rows``."""

    def write_node_values(self, rows: Sequence[tuple[int, Any]], name: str) -> None:
        """Sets property ``name`` of each node (internal id) of ``rows`` to its value
        (``tf_features.structural_write``)."""


AccessFactory = Callable[[Options], GraphAccess]
"""Makes the graph access for one call from its parsed options."""


def node_name(key: int, id_property: str | None) -> str:
    """The canonical way errors name a node: ``node 5`` or ``node with id = 5``."""
    return f"node {key}" if id_property is None else f"node with {id_property} = {key}"


def is_int(value: Any) -> bool:
    """Whether ``value`` is an integer key (an ``int``, not a ``bool``)."""
    return isinstance(value, int) and not isinstance(value, bool)


_PLAIN_INT = frozenset({int})


def all_ints(values: Sequence[Any]) -> bool:
    """Whether :func:`is_int` holds for every item of ``values`` (a list or tuple): the items'
    types are gathered first in one C-level pass (plain ``int`` alone: true), item by item
    only when another type is among them."""
    return set(map(type, values)) <= _PLAIN_INT or all(map(is_int, values))


def require_int_id(
    value: Any,
    node: str,
    id_property: str,
    error: type[ProcedureInputError] = PropertyValueError,
) -> int:
    """``value`` (the ``id_property`` value of ``node``, e.g. ``node 5`` or ``node 5 (:User)``)
    when it is an integer id; else raises ``error`` naming the node, the property and the value
    (``no value`` where missing)."""
    if not is_int(value):
        what = "no value" if value is None else describe_value(value)
        raise error(
            f"{node} property {id_property!r} (options.id_property): expected an integer id, "
            f"got {what}"
        )
    return value


def require_unique_id(
    seen: dict[int, int], key: int, internal: int, id_property: str, label: str
) -> None:
    """Records ``key`` as the ``id_property`` value of the ``label`` node ``internal`` in ``seen``
    (key -> internal id); raises :class:`ProcedureInputError` naming both nodes where another
    node of the label already has that key."""
    other = seen.setdefault(key, internal)
    if other != internal:
        raise ProcedureInputError(
            f"options.id_property: expected unique ids within a label, got {id_property} = {key} "
            f"on the :{label} nodes with internal ids {other} and {internal}"
        )


LAGS = (
    "the reservoir lags the graph (apply the change log with tf_features.update_reservoirs, or "
    "rebuild it with tf_features.build_reservoirs)"
)


def stale_member(name: str, internal: Any, what: str = "in the graph under that key") -> str:
    """The message, on every access, for a reservoir member (``name``: the node as
    :func:`node_name` or :func:`typed_node_name` names it) no longer in the graph under its
    key (``what``: what it no longer is, e.g. ``a :Label node``)."""
    return (
        f"{name} (internal id {internal}): in a reservoir (options.reservoir_threshold) but no "
        f"longer {what}: {LAGS}"
    )


def stale_relationship(rel: Any, step: str, hub: str, member: str) -> str:
    """The message for the member relationship ``rel`` of the edge step ``step`` (its text)
    between the node ``hub`` whose reservoir holds it and its neighbour ``member`` (both as
    errors name them) that the graph no longer holds."""
    return (
        f"relationship {rel} of {step} between {hub} and {member}: in {hub}'s reservoir "
        f"(options.reservoir_threshold) but no longer in the graph: {LAGS}"
    )


def typed_node_name(label: str, internal: int, key: int | None, id_property: str | None) -> str:
    """How the typed procedures' errors name a ``label`` node: ``(:Label {id: 3})`` by its
    ``key`` with ``id_property``, else (or with no key) by its internal id:
    ``(node 5:Label)``."""
    if id_property is None or key is None:
        return f"(node {internal}:{label})"
    return f"(:{label} {{{id_property}: {key}}})"
