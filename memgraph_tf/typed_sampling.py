"""Typed sampling specs: which relationships to follow, in which direction, how many per hop, and
where each sampled node lands in the per-hop, per-label slot tables.

This is the one home of the typed-sampling contract. A spec names a *seed label* and,
per **edge step** -- a relationship type walked from nodes of one label to nodes of another, in one
direction, written as a Cypher pattern -- a fanout per hop (PyG's ``num_neighbors`` dict, TF-GNN's
sampling spec); the relationship may name a property as its weight, ``-[:TRANSFER {weight:
amount}]->``, or its time, ``-[:TRANSFER {time: ts}]->`` (:class:`EdgeStep`)::

    spec = TypedSamplingSpec.from_num_neighbors(
        "User",
        {
            "(:User)-[:BOUGHT]->(:Product)": [5, 0],
            "(:User)-[:FOLLOWS]->(:User)": [5, 0],
            "(:Product)-[:IN]->(:Category)": [0, 1],
        },
    )

**Slot tables.** Hop 0 holds the seed (one slot of the seed label). At hop ``h >= 1`` each step
with fanout ``f > 0`` expands every slot of hop ``h - 1``'s table of its left label into ``f``
slots of hop ``h``'s table of its right label; these ``n * f`` slots are the step's *group*,
contiguous in that table, parent-major (child ``j`` of parent slot ``p`` at ``offset + p * f +
j``). Groups are appended in the spec's step order: the patterns' sorted order (as
``str(step)`` writes them), whatever order ``num_neighbors`` lists them in.
:meth:`TypedSamplingSpec.layout` computes the tables' sizes and every group's offset; they
depend on the spec alone, so a model reads neighbourhoods by reshaping, and a padded slot (a
missing neighbour, or any child of a padded slot) is masked out.

Standard library only.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping, Sequence

__all__ = [
    "DIRECTIONS",
    "EdgeStep",
    "Group",
    "SlotLayout",
    "TypedSamplingSpec",
    "slot_table_name",
    "typed_features_name",
    "typed_mask_name",
]

DIRECTIONS = ("out", "in", "both")
"""``out``: ``(left)-[type]->(right)``; ``in``: ``(left)<-[type]-(right)``; ``both``:
``(left)-[type]-(right)``, either way (distinct neighbours over both). ``left`` is the label of the
nodes expanded, ``right`` the label of the neighbours reached."""

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_PATTERN = re.compile(
    rf"^\(:(?P<left>{_NAME})\)(?P<a><?)-\[:(?P<type>{_NAME})"
    rf"(?:\{{(?P<key>weight|time):(?P<prop>{_NAME})(?:,replace:(?P<replace>true|false))?\}})?\]"
    rf"-(?P<b>>?)\(:(?P<right>{_NAME})\)$"
)


def slot_table_name(hop: int, label: str) -> str:
    """The name of hop ``hop``'s slot table of ``label``, e.g. ``h1.Product``."""
    return f"h{hop}.{label}"


def typed_features_name(hop: int, label: str) -> str:
    """The model input with the features of table ``(hop, label)``, ``[B, slots, width]``."""
    return f"features_h{hop}_{label}"


def typed_mask_name(hop: int, label: str) -> str:
    """The model input that marks the filled slots of table ``(hop, label)``, ``[B, slots]`` bool
    (hops >= 1)."""
    return f"mask_h{hop}_{label}"


@dataclasses.dataclass(frozen=True, order=True)
class EdgeStep:
    """One relationship type walked from ``left``-labelled nodes to ``right``-labelled ones;
    with a ``weight`` (a relationship property name) its neighbours are drawn with probability
    proportional to that property's value summed over the relationships to each neighbour
    (:mod:`memgraph_tf.procedures.weighted`); with a ``time`` (a relationship property name) only
    the relationships whose time is not after the seed's are walked
    (:mod:`memgraph_tf.procedures.timed`); else every relationship, uniformly. Not both. A
    weighted step draws distinct neighbours (without replacement) unless ``replace``
    (``-[:T {weight: amount, replace: true}]->``): then each slot is an independent draw, so a
    neighbour may fill several slots and a node with a weighted neighbour fills them all."""

    left: str
    rel_type: str
    right: str
    direction: str = "out"
    weight: str | None = None
    time: str | None = None
    replace: bool = False

    def __post_init__(self) -> None:
        for field, value in (
            ("left", self.left),
            ("rel_type", self.rel_type),
            ("right", self.right),
            *((("weight", self.weight),) if self.weight is not None else ()),
            *((("time", self.time),) if self.time is not None else ()),
        ):
            if not isinstance(value, str) or not re.fullmatch(_NAME, value):
                raise ValueError(
                    f"edge step: {field}: expected a plain label or type name, got {value!r}"
                )
        if self.weight is not None and self.time is not None:
            raise ValueError(
                f"edge step: expected a weight or a time, not both, got weight {self.weight!r} "
                f"and time {self.time!r}"
            )
        if not isinstance(self.replace, bool):
            raise ValueError(f"edge step: replace: expected true or false, got {self.replace!r}")
        if self.replace and self.weight is None:
            prop = f"time: {self.time}, " if self.time is not None else ""
            raise ValueError(
                f"edge step {self._arrows(f' {{{prop}replace: true}}')}: replace: expected on a "
                "step with a weight only (draws with replacement are weighted draws), got it on "
                f"a step with {'a time' if self.time is not None else 'no weight'}"
            )
        if self.direction not in DIRECTIONS:
            raise ValueError(
                f"edge step: direction: expected one of {', '.join(DIRECTIONS)}, got "
                f"{self.direction!r}"
            )

    @property
    def relationship_property(self) -> str | None:
        """The relationship property the step reads: its weight or its time (None: neither)."""
        return self.weight if self.weight is not None else self.time

    @classmethod
    def parse(cls, text: str) -> EdgeStep:
        """``(:A)-[:T]->(:B)`` (out), ``(:A)<-[:T]-(:B)`` (in) or ``(:A)-[:T]-(:B)`` (both), the
        relationship optionally weighted by one of its properties: ``-[:T {weight: amount}]->``
        (with replacement: ``-[:T {weight: amount, replace: true}]->``), or timed by one:
        ``-[:T {time: ts}]->``; ValueError naming the text."""
        m = _PATTERN.match(text.replace(" ", "")) if isinstance(text, str) else None
        if m is None or (m["a"] and m["b"]):
            raise ValueError(
                f"edge step: expected a pattern like '(:User)-[:BOUGHT]->(:Product)', "
                f"'(:Product)<-[:BOUGHT]-(:User)', '(:Paper)-[:CITES]-(:Paper)' or "
                f"'(:Account)-[:TRANSFER {{weight: amount}}]->(:Account)', got {text!r}"
            )
        direction = "in" if m["a"] else "out" if m["b"] else "both"
        prop: dict[str, object] = {m["key"]: m["prop"]} if m["key"] else {}
        if m["replace"] is not None:
            prop["replace"] = m["replace"] == "true"
        return cls(m["left"], m["type"], m["right"], direction, **prop)

    def _arrows(self, rel: str) -> str:
        arrow = {"out": ("-", "->"), "in": ("<-", "-"), "both": ("-", "-")}.get(
            self.direction, ("-", "-")
        )
        return f"(:{self.left}){arrow[0]}[:{self.rel_type}{rel}]{arrow[1]}(:{self.right})"

    def __str__(self) -> str:
        if self.weight is not None:
            return self._arrows(
                f" {{weight: {self.weight}{', replace: true' if self.replace else ''}}}"
            )
        return self._arrows(f" {{time: {self.time}}}" if self.time is not None else "")


@dataclasses.dataclass(frozen=True)
class Group:
    """The slots one step adds at one hop: ``parents`` slots of table ``(hop - 1, step.left)``,
    each with ``fanout`` children at ``offset ..`` of table ``(hop, step.right)``."""

    hop: int
    step: EdgeStep
    parents: int
    fanout: int
    offset: int

    @property
    def size(self) -> int:
        return self.parents * self.fanout


@dataclasses.dataclass(frozen=True)
class SlotLayout:
    """Per hop, the slot count of each label's table (labels in order of first appearance), and
    the groups that fill hops ``1..K``."""

    tables: tuple[Mapping[str, int], ...]
    groups: tuple[Group, ...]

    @property
    def num_hops(self) -> int:
        return len(self.tables) - 1

    def table_names(self) -> list[str]:
        """Every table's :func:`slot_table_name`, hop by hop."""
        return [slot_table_name(h, label) for h, t in enumerate(self.tables) for label in t]

    def children(self, hop: int, label: str) -> list[Group]:
        """The groups at ``hop + 1`` whose parents are the slots of table ``(hop, label)``."""
        return [g for g in self.groups if g.hop == hop + 1 and g.step.left == label]

    @property
    def slots(self) -> int:
        """All slots of one seed's neighbourhood."""
        return sum(sum(t.values()) for t in self.tables)


@dataclasses.dataclass(frozen=True)
class TypedSamplingSpec:
    """A seed label and, per edge step, one fanout per hop (``fanouts[i][h - 1]`` for
    ``steps[i]`` at hop ``h``); every step has the same number of hops.

    The steps are kept in the canonical order, sorted by their patterns as ``str(step)`` writes
    them (steps and fanouts reordered together on construction), whatever order they are given
    in: the same ``num_neighbors`` gives the same step numbering -- slot groups, a model's
    per-step weights, edge sections ``edge_*_h{h}_s{i}`` -- on the embedded runtime, over Bolt
    to Memgraph (which hands a procedure every map with its keys sorted, so a map's order never
    reaches it) and on the client-side procedures."""

    seed_label: str
    steps: tuple[EdgeStep, ...]
    fanouts: tuple[tuple[int, ...], ...]

    def __post_init__(self) -> None:
        if not isinstance(self.seed_label, str) or not re.fullmatch(_NAME, self.seed_label):
            raise ValueError(f"seed_label: expected a plain label name, got {self.seed_label!r}")
        if not self.steps:
            raise ValueError("num_neighbors: expected at least one edge step, got none")
        if len(self.fanouts) != len(self.steps):
            raise ValueError(
                f"num_neighbors: expected one fanout list per edge step ({len(self.steps)}), got "
                f"{len(self.fanouts)}"
            )
        if len(set(self.steps)) != len(self.steps):
            raise ValueError("num_neighbors: an edge step is listed twice")
        order = sorted(range(len(self.steps)), key=lambda i: str(self.steps[i]))
        object.__setattr__(self, "steps", tuple(self.steps[i] for i in order))
        object.__setattr__(self, "fanouts", tuple(self.fanouts[i] for i in order))
        hops = {len(f) for f in self.fanouts}
        if len(hops) != 1 or 0 in hops:
            by_step = ", ".join(f"{s}: {len(f)}" for s, f in zip(self.steps, self.fanouts))
            raise ValueError(
                f"num_neighbors: expected the same number (>= 1) of hops for every edge step, "
                f"got {by_step}"
            )
        for step, fanouts in zip(self.steps, self.fanouts):
            for h, f in enumerate(fanouts, start=1):
                if isinstance(f, bool) or not isinstance(f, int) or f < 0:
                    raise ValueError(
                        f"num_neighbors[{str(step)!r}][{h - 1}]: expected an integer >= 0, got "
                        f"{f!r}"
                    )
        layout = self.layout()
        unused = [
            str(s)
            for s, fanouts in zip(self.steps, self.fanouts)
            if any(fanouts) and not any(g.step == s for g in layout.groups)
        ]
        if unused:
            raise ValueError(
                f"num_neighbors: {', '.join(unused)}: never reached from seeds of "
                f"{self.seed_label!r} at the hops given a fanout (its left label has no slots "
                f"there)"
            )

    @classmethod
    def from_num_neighbors(
        cls, seed_label: str, num_neighbors: Mapping[str | EdgeStep, Sequence[int]]
    ) -> TypedSamplingSpec:
        """A spec from a ``{pattern: [fanout per hop]}`` mapping (patterns as :meth:`EdgeStep.parse`
        reads them, or :class:`EdgeStep` objects), its steps in the canonical sorted order
        whatever the mapping's order."""
        if not isinstance(num_neighbors, Mapping):
            raise ValueError(
                f"num_neighbors: expected a mapping of edge patterns to fanout lists, got "
                f"{type(num_neighbors).__name__}"
            )
        steps, fanouts = [], []
        for key, value in num_neighbors.items():
            steps.append(key if isinstance(key, EdgeStep) else EdgeStep.parse(key))
            if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
                raise ValueError(
                    f"num_neighbors[{str(key)!r}]: expected a list of fanouts per hop, got "
                    f"{value!r}"
                )
            fanouts.append(tuple(value))
        return cls(seed_label, tuple(steps), tuple(fanouts))

    @property
    def num_hops(self) -> int:
        return len(self.fanouts[0])

    def num_neighbors(self) -> dict[str, list[int]]:
        """The spec as a ``{pattern: [fanout per hop]}`` mapping, patterns in the canonical
        sorted order (JSON-friendly; round-trips through :meth:`from_num_neighbors`)."""
        return {str(s): list(f) for s, f in zip(self.steps, self.fanouts)}

    def labels(self) -> list[str]:
        """Every label with slots, in order of first appearance."""
        seen: dict[str, None] = {}
        for table in self.layout().tables:
            seen.update(dict.fromkeys(table))
        return list(seen)

    def layout(self) -> SlotLayout:
        """The slot tables and groups (see the module docstring)."""
        tables: list[dict[str, int]] = [{self.seed_label: 1}]
        groups: list[Group] = []
        for h in range(1, len(self.fanouts[0]) + 1):
            table: dict[str, int] = {}
            for step, fanouts in zip(self.steps, self.fanouts):
                f = fanouts[h - 1]
                parents = tables[h - 1].get(step.left, 0)
                if f == 0 or parents == 0:
                    continue
                offset = table.get(step.right, 0)
                groups.append(Group(h, step, parents, f, offset))
                table[step.right] = offset + parents * f
            tables.append(table)
        return SlotLayout(tuple(tables), tuple(groups))
