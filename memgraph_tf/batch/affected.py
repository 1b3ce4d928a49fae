"""The nodes whose prediction a set of graph changes can alter: the *affected set* of a change-log
page under a bundle's sampling spec (``memgraph-tf refresh``; see docs/batch-inference.md).

A seed's neighbourhood is drawn hop by hop: at hop ``h`` each step expands the slots of hop
``h - 1`` (of its left label, typed) into their neighbours along its relationship types and
direction, from one RNG keyed by the seed (:mod:`memgraph_tf.procedures.draw`). Run the old and
the new graph's draws side by side: they agree until the first read that differs -- a neighbour
list of a node at hop ``h - 1`` that a step reads (a relationship created or deleted there), or the
features, key or labels of a node in some slot. Up to that read both walks took the same
relationships, which exist in both graphs, so the node read is reachable from the seed in the
graph as it is now. Hence the affected set is complete when computed by walking the spec's steps
*backwards* (the reverse direction, the parent's label) in the current graph from:

* each endpoint whose neighbour list a created or deleted relationship changes, placed at hop
  ``h - 1`` for every step at hop ``h`` that reads it (the relationship's type, the direction
  that walks from that endpoint, the endpoint's label as the step's left label);
* each created or updated node, at every hop ``0..K`` (typed: every table of its labels; a label
  change -- :attr:`~memgraph_tf.client.change_log.Change.relabelled`, whatever properties it set
  too -- every table), unless the update is no label change and names only properties the model
  does not read (its own predictions, for one).

A node that is gone is no walk's starting point: its relationships' deletions (their recorded
endpoints) place its former neighbours. The walk runs inside the database: one Cypher query per
step and hop over any Bolt source (:class:`CypherWalker`), the in-memory graph's adjacency on the
embedded runtime (:class:`EmbeddedWalker`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from memgraph_tf.client.change_log import OWN_LABELS, Change
from memgraph_tf.client.sources import EmbeddedSource, GraphSource, quote_name
from memgraph_tf.serving.bundle import SamplingSpec

__all__ = [
    "CypherWalker",
    "EmbeddedWalker",
    "WalkSpec",
    "WalkStep",
    "affected_nodes",
    "start_positions",
    "walker_for",
]

#: Node ids per walk query (``UNWIND``).
WALK_CHUNK = 1000

_REVERSE = {"out": "in", "in": "out", "both": "both"}

Position = tuple[int, "str | None"]  # (hop, label: None in a homogeneous spec)


@dataclasses.dataclass(frozen=True)
class WalkStep:
    """One expansion of the sampler: the slots of hop ``hop - 1`` with label ``left`` (None: any
    node) expand into their neighbours along ``rel_types`` (None: every type) and ``direction``,
    which fill hop ``hop``'s slots of label ``right`` (None: any node)."""

    hop: int
    left: str | None
    rel_types: tuple[str, ...] | None
    direction: str
    right: str | None


@dataclasses.dataclass(frozen=True)
class WalkSpec:
    """A sampling spec as the backwards walk reads it: ``steps``, the hops ``num_hops``, the
    seed label (None: any node), the labels of each hop's slot tables (``(None,)`` per hop when
    homogeneous) and the properties the model reads per label (``None`` key: homogeneous)."""

    steps: tuple[WalkStep, ...]
    num_hops: int
    seed_label: str | None
    tables: tuple[tuple[str | None, ...], ...]
    read_properties: Mapping[str | None, frozenset[str]]
    id_property: str | None = None

    @classmethod
    def from_sampling(cls, spec: SamplingSpec, seed_label: str | None = None) -> WalkSpec:
        """The walk of a node bundle's sampling settings (homogeneous or typed; a link bundle's
        are refused with ``ValueError``); ``seed_label`` the selection's label (homogeneous)."""
        options = dict(spec.options)
        id_property = options.get("id_property")
        if spec.link is not None:
            raise ValueError("sampling: a link bundle's pairs have no affected set here")
        if spec.typed is None:
            types = options.get("edge_types")
            types = None if types is None else tuple(types)
            direction = options.get("direction") or "both"
            hops = len(spec.fanouts)
            steps = tuple(WalkStep(h, None, types, direction, None) for h in range(1, hops + 1))
            tables = tuple((None,) for _ in range(hops + 1))
            props = {None: frozenset(spec.properties)}
            return cls(steps, hops, seed_label, tables, props, id_property)
        from memgraph_tf.typed_sampling import TypedSamplingSpec

        typed = TypedSamplingSpec.from_num_neighbors(
            spec.typed.seed_label, {k: list(v) for k, v in spec.typed.num_neighbors.items()}
        )
        layout = typed.layout()
        steps = tuple(
            WalkStep(g.hop, g.step.left, (g.step.rel_type,), g.step.direction, g.step.right)
            for g in layout.groups
        )
        tables = tuple(tuple(t) for t in layout.tables)
        props = {label: frozenset(names) for label, names in spec.typed.properties.items()}
        return cls(steps, layout.num_hops, typed.seed_label, tables, props, id_property)

    def reads(self, names: Iterable[str], labels: Sequence[str] | None) -> bool:
        """Whether an update of properties ``names`` (empty: unknown, e.g. a label change) on a
        node with ``labels`` (None: unknown) can change what the model reads."""
        names = set(names)
        if not names or (self.id_property is not None and self.id_property in names):
            return True
        if None in self.read_properties:
            return bool(names & self.read_properties[None])
        wanted = (
            self.read_properties
            if labels is None
            else {label: self.read_properties.get(label, frozenset()) for label in labels}
        )
        return any(names & props for props in wanted.values())


class CypherWalker:
    """The walk over any Bolt source: parameterised Cypher, :data:`WALK_CHUNK` ids a query."""

    def __init__(self, source: GraphSource) -> None:
        self.source = source

    def labels(self, ids: Sequence[int]) -> dict[int, list[str]]:
        """``{internal id: labels}`` of the nodes of ``ids`` that exist."""
        out: dict[int, list[str]] = {}
        for part in _chunks(ids):
            rows = self.source.read(
                "UNWIND $ids AS i MATCH (n) WHERE id(n) = i RETURN i, labels(n) AS labels",
                {"ids": part},
            )
            out.update({r["i"]: list(r["labels"]) for r in rows})
        return out

    def parents(self, ids: Sequence[int], step: WalkStep) -> set[int]:
        """The nodes (with ``step.left``) of which some node of ``ids`` is a neighbour along
        ``step``: the step walked backwards."""
        rel, where, params = "[r]", "", {}
        if step.rel_types is not None and len(step.rel_types) == 1:
            rel = f"[r:{quote_name(step.rel_types[0], 'type')}]"
        elif step.rel_types is not None:
            where, params["types"] = " AND type(r) IN $types", list(step.rel_types)
        back = _REVERSE[step.direction]
        pattern = {"out": f"-{rel}->", "in": f"<-{rel}-", "both": f"-{rel}-"}[back]
        parent = "(p)" if step.left is None else f"(p:{quote_name(step.left, 'label')})"
        query = (
            f"UNWIND $ids AS i MATCH (x){pattern}{parent} WHERE id(x) = i{where} "
            "RETURN DISTINCT id(p) AS p"
        )
        found: set[int] = set()
        for part in _chunks(ids):
            found.update(r["p"] for r in self.source.read(query, {**params, "ids": part}))
        return found

    def keys(self, ids: Sequence[int], id_property: str) -> dict[int, Any]:
        """``{internal id: its id_property value}`` (nodes without one left out)."""
        prop = quote_name(id_property, "id_property")
        out: dict[int, Any] = {}
        for part in _chunks(ids):
            rows = self.source.read(
                f"UNWIND $ids AS i MATCH (n) WHERE id(n) = i AND n.{prop} IS NOT NULL "
                f"RETURN i, n.{prop} AS key",
                {"ids": part},
            )
            out.update({r["i"]: r["key"] for r in rows})
        return out


class EmbeddedWalker:
    """The walk over an :class:`EmbeddedSource`'s in-memory graph (its adjacency lists)."""

    def __init__(self, source: EmbeddedSource) -> None:
        self.source = source
        self.graph = source.graph

    def _exists(self, i: Any) -> bool:
        return isinstance(i, int) and not isinstance(i, bool) and 0 <= i < self.graph.node_count

    def labels(self, ids: Sequence[int]) -> dict[int, list[str]]:
        with self.source.lock:
            return {i: self.graph.labels(i) for i in ids if self._exists(i)}

    def parents(self, ids: Sequence[int], step: WalkStep) -> set[int]:
        graph, back = self.graph, _REVERSE[step.direction]
        found: set[int] = set()
        with self.source.lock:
            for i in ids:
                found.update(graph.neighbours(i, step.rel_types, back))
            if step.left is not None:
                found = {p for p in found if step.left in graph.labels(p)}
        return found

    def keys(self, ids: Sequence[int], id_property: str) -> dict[int, Any]:
        with self.source.lock:
            values = {i: self.graph.get_property(i, id_property) for i in ids}
        return {i: v for i, v in values.items() if v is not None}


def walker_for(source: GraphSource) -> CypherWalker | EmbeddedWalker:
    """The walker of ``source``: the in-memory graph's, else Cypher's."""
    return EmbeddedWalker(source) if isinstance(source, EmbeddedSource) else CypherWalker(source)


def _chunks(ids: Sequence[int]) -> Iterable[list[int]]:
    ids = list(ids)
    for start in range(0, len(ids), WALK_CHUNK):
        yield ids[start : start + WALK_CHUNK]


def _reads_relationships(spec: WalkSpec, change: Change) -> list[WalkStep]:
    return [s for s in spec.steps if s.rel_types is None or change.rel_type in s.rel_types]


def start_positions(
    spec: WalkSpec, changes: Sequence[Change], labels: Mapping[int, list[str]]
) -> dict[Position, set[int]]:
    """Where the walk starts: ``{(hop, label): internal ids}`` for ``changes``, ``labels`` the
    labels of the nodes that exist now (see the module docstring). Changes to memgraph-tf's own
    bookkeeping nodes and relationship property updates (the samplers read none) start
    nothing."""
    out: dict[Position, set[int]] = {}
    for change in changes:
        if set(change.labels) & OWN_LABELS:
            continue
        if change.entity == "relationship":
            if change.kind == "updated":
                continue
            for step in _reads_relationships(spec, change):
                ends = {"out": [change.start_id], "in": [change.end_id]}.get(
                    step.direction, [change.start_id, change.end_id]
                )
                for end in ends:
                    own = labels.get(end)
                    if own is None or (step.left is not None and step.left not in own):
                        continue
                    out.setdefault((step.hop - 1, step.left), set()).add(end)
            continue
        own = labels.get(change.element_id)
        if change.kind == "deleted" or own is None or set(own) & OWN_LABELS:
            continue
        every = change.relabelled  # a label change: it may move the node between tables
        if change.kind == "updated" and not every and not spec.reads(change.properties, own):
            continue
        for hop, table in enumerate(spec.tables):
            for label in table:
                if label is None or every or label in own:
                    out.setdefault((hop, label), set()).add(change.element_id)
    return out


def affected_nodes(spec: WalkSpec, starts: Mapping[Position, set[int]], walker: Any) -> set[int]:
    """The internal ids of the seeds (nodes with ``spec.seed_label``, any node when None) whose
    sampled neighbourhood can hold a start position: the steps walked backwards, hop ``K`` down
    to 1, inside the database through ``walker``."""
    frontier = {pos: set(ids) for pos, ids in starts.items()}
    for hop in range(spec.num_hops, 0, -1):
        for step in (s for s in spec.steps if s.hop == hop):
            ids = frontier.get((hop, step.right))
            if ids:
                parents = walker.parents(sorted(ids), step)
                frontier.setdefault((hop - 1, step.left), set()).update(parents)
    seeds = frontier.get((0, None if spec.tables[0] == (None,) else spec.seed_label), set())
    found = walker.labels(sorted(seeds))
    if spec.seed_label is None:
        return {i for i, own in found.items() if not set(own) & OWN_LABELS}
    return {i for i, own in found.items() if spec.seed_label in own}
