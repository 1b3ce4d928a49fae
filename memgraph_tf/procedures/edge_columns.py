"""Edge feature columns of typed blobs (``options.edge_feature_spec``; stdlib only).

An edge step given a feature spec (:class:`memgraph_tf.feature_spec.LabelSpec` whose ``label`` is
the step's relationship type) carries, beside every slot it fills, the properties of the
relationship that reached the slot, grouped by kind exactly as a label's raw property columns
(:mod:`memgraph_tf.procedures.raw`: ``num``, ``time``, ``cat``, ``bag``, ``has``), in the sections
of :func:`memgraph_tf.layout.typed_edge_sections` (docs/blob-format.md section 12).

The rules:

* the relationships of a slot are those of the step between its parent and its node (without
  the held-out ones, ``options.exclude_splits``); when there are several, the slot carries one:
  one starting at the parent before one ending there, then the one whose columns are smallest
  (group by group in blob order, numbers numerically with NaN last, texts by code point, shorter
  bags first, false before true) -- so the bytes do not depend on the order an access hands
  relationships out in;
* a missing or null property is written as missing (zero, ``""``, an empty bag, ``has`` false);
  a value of the wrong type for its kind raises a :class:`PropertyValueError` naming the
  relationship (its endpoints and type), the property, the kind and the value; when several
  relationships of a slot hold bad values, the error is the first of their messages in text
  order; slots are checked in order of first appearance (roles, groups in layout order, rows,
  slots);
* over a step with a time (point-in-time sampling), a slot's relationships are those not after
  its row's seed time (the relationships the draw walked), so no later relationship's
  properties reach the row;
* in the bounded mode (``options.reservoir_threshold``, :mod:`.reservoir`) a slot filled by a
  parent that drew from its reservoir stands for the reservoir's members: its relationships are
  the members' relationships to its node (not the parent's other relationships to it), chosen
  among as above. They are read from the node's side (the node's relationships of the step
  towards the parent), so the hub's own relationships are not walked; a member relationship no
  longer in the graph (a reservoir behind the change log) raises naming the parent, the node
  and the relationship id;
* a layout other than ``dense``, or a spec property of kind ``required`` is refused naming the
  option.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from memgraph_tf import layout
from memgraph_tf.feature_spec import LabelSpec
from memgraph_tf.layout import PAD_ID
from memgraph_tf.procedures.access import READ_CHUNK, GraphAccess, is_int
from memgraph_tf.procedures.errors import (
    OptionError,
    PropertyValueError,
    describe_value,
)
from memgraph_tf.procedures.options import Options, SplitFilter
from memgraph_tf.procedures.raw import RawLayout, RawTable, parse_label_spec, raw_sections
from memgraph_tf.procedures.weighted import relationship_name
from memgraph_tf.typed_sampling import EdgeStep, TypedSamplingSpec

__all__ = ["EdgeTables", "parse_edge_feature_specs"]

_PROPERTY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_REVERSED = {"out": "in", "in": "out", "both": "both"}


def parse_edge_feature_specs(
    value: Any, specs: Sequence[TypedSamplingSpec], opts: Options
) -> dict[EdgeStep, LabelSpec]:
    """``options.edge_feature_spec``: a map edge pattern (as ``num_neighbors`` writes it) ->
    the feature spec of the step's relationship properties in :meth:`LabelSpec.to_dict`'s form,
    its ``label`` the relationship type; null: none. Returns step -> spec, in the map's order.

    Guarantees: an :class:`OptionError` naming ``options.edge_feature_spec[pattern]`` for a
    pattern that is not one of the ``specs``' steps, a bad spec (the spec's own error), a spec
    without properties, of another relationship type, with a ``required`` property or a
    property name that is not a plain name, and for a layout other than ``dense``."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise OptionError(
            "options.edge_feature_spec: expected a map of edge pattern -> feature spec "
            f"(LabelSpec.to_dict() of the relationship type), got {describe_value(value)}"
        )
    steps = list(dict.fromkeys(s for spec in specs for s in spec.steps))
    out: dict[EdgeStep, LabelSpec] = {}
    for pattern, raw in value.items():
        where = f"options.edge_feature_spec[{pattern!r}]"
        try:
            step = EdgeStep.parse(pattern)
        except ValueError as exc:
            raise OptionError(f"{where}: {exc}") from None
        if step not in steps:
            raise OptionError(
                f"{where}: expected one of the steps of num_neighbors "
                f"({', '.join(map(str, steps))}), got {step}"
            )
        spec = parse_label_spec(raw, where)
        _check_spec(where, step, spec, opts)
        out[step] = spec
    return out


def _check_spec(where: str, step: EdgeStep, spec: LabelSpec, opts: Options) -> None:
    if spec.label != step.rel_type:
        raise OptionError(
            f"{where}: expected the spec's 'label' to be the relationship type "
            f"{step.rel_type!r}, got {spec.label!r}"
        )
    if not spec.properties:
        raise OptionError(f"{where}: expected at least one relationship property, got none")
    for prop in spec.properties:
        if prop.kind == "required":
            raise OptionError(
                f"{where}: property {prop.name!r}: expected a kind other than 'required' for a "
                "relationship property (e.g. 'numeric', which gives a missing value its "
                "default), got 'required'"
            )
        if not _PROPERTY.fullmatch(prop.name):
            raise OptionError(
                f"{where}: expected plain property names ([A-Za-z_][A-Za-z0-9_]*), got "
                f"{prop.name!r}"
            )
    if opts.layout != "dense":
        raise OptionError(
            f"options.layout ({opts.layout!r}): edge feature columns "
            "(options.edge_feature_spec) are written in the dense layout only"
        )


def _order_key(table: RawTable, row: int, outgoing: bool) -> tuple:
    """The order in which the relationships of one slot are ranked (the module docstring)."""
    w = table.layout.widths
    num = table.num[row * w.num : (row + 1) * w.num]
    num_key = [(math.isnan(v), 0.0 if math.isnan(v) else v) for v in num]
    return (
        not outgoing,
        num_key,
        list(table.time[row * w.time : (row + 1) * w.time]),
        table.cat[row * w.cat : (row + 1) * w.cat],
        table.bag[row * w.bag : (row + 1) * w.bag],
        list(table.has[row * w.has : (row + 1) * w.has]),
    )


class _LazyName:
    """A relationship's name in an error message, computed only when a message is made."""

    __slots__ = ("_make",)

    def __init__(self, make: Any) -> None:
        self._make = make

    def __str__(self) -> str:
        return self._make()

    def __format__(self, spec: str) -> str:
        return format(self._make(), spec)


@dataclasses.dataclass
class EdgeTables:
    """The edge feature rows of one call: per step given a spec (``edge_of``), a
    :class:`RawTable` whose ``row_of`` maps each ``(parent, node)`` pair of internal ids that a
    slot joins (for a step with a time ``(parent, node, seed time)``: only the relationships not
    after the row's seed time count) to the row of the relationship the slot carries.
    ``name(label, internal)`` names nodes in errors."""

    nav: GraphAccess
    name: Any
    edge_of: Mapping[EdgeStep, LabelSpec]
    split: SplitFilter | None
    allow_non_finite: bool
    tables: dict[EdgeStep, RawTable] = dataclasses.field(default_factory=dict)
    _keys: dict[int, dict[int, list[tuple]]] = dataclasses.field(
        default_factory=dict, init=False, repr=False
    )

    def build(self, roles: Sequence[Any]) -> None:
        """Reads and encodes the relationships of every filled slot of the ``roles``
        (:class:`~memgraph_tf.procedures.slots.Role` s) over the steps given a spec."""
        for step, spec in self.edge_of.items():
            table = RawTable(RawLayout(step.rel_type, spec, []))
            self.tables[step] = table
            pairs: dict[int, dict[tuple, None]] = {}
            for role in roles:
                for group in role.layout.groups:
                    if group.step == step:
                        for key in self._slot_keys(role, group):
                            if key[1] != PAD_ID:
                                pairs.setdefault(key[0], {})[key] = None
            members = _reservoir_members(roles, step, pairs)
            exact = {p: keys for p, keys in pairs.items() if p not in members}
            found = self._read(step, spec, exact)
            if members:
                found.update(self._read_members(step, spec, pairs, members))
            for parent, keys in pairs.items():
                for key in keys:
                    rels = found[parent].get(key[1], [])
                    if step.time is not None:  # (times are integers: the draw checked them)
                        rels = [r for r in rels if is_int(r[2]) and r[2] <= key[2]]
                    self._encode(table, step, key, [(out, values) for out, values, _ in rels])

    def _read(
        self, step: EdgeStep, spec: LabelSpec, pairs: Mapping[int, Mapping[tuple, None]]
    ) -> dict[int, dict[int, list[tuple[bool, list[Any], Any]]]]:
        """Per parent of ``pairs`` (parent -> the slot keys it joins), per neighbour its slots
        hold, ``(outgoing, values in spec order, time or None)`` per relationship of ``step`` (a
        relationship walked both ways, a self-loop, once each way; the time: ``step.time``'s
        value for a step with a time)."""
        names = [p.name for p in spec.properties]
        timed = step.time is not None
        if timed:
            names.append(step.time)
        parents = list(pairs)
        out: dict[int, dict[int, list[tuple[bool, list[Any], Any]]]] = {}
        for start in range(0, len(parents), READ_CHUNK):
            self.nav.check_abort()
            part = parents[start : start + READ_CHUNK]
            found = self.nav.valued_neighbours(part, step, self.split, names=names)
            for parent, rows in zip(part, found):
                picked = {key[1] for key in pairs[parent]}
                seen: set[tuple[Any, bool]] = set()
                per: dict[int, list[tuple[bool, list[Any], Any]]] = {}
                for nbr, values, rel, outgoing in rows:
                    if nbr in picked and (rel, outgoing) not in seen:  # (may come twice)
                        seen.add((rel, outgoing))
                        got = list(values)
                        time = got.pop() if timed else None
                        per.setdefault(nbr, []).append((outgoing, got, time))
                out[parent] = per
        return out

    def _read_members(
        self,
        step: EdgeStep,
        spec: LabelSpec,
        pairs: Mapping[int, Mapping[tuple, None]],
        members: Mapping[int, Mapping[int, Sequence[int]]],
    ) -> dict[int, dict[int, list[tuple[bool, list[Any], Any]]]]:
        """:meth:`_read`'s rows for the parents of ``pairs`` that drew from their reservoirs
        (``members``: parent -> neighbour -> its member relationship ids): per parent, per
        neighbour its slots hold, the member relationships only, read from the neighbour's side
        (the step walked backwards), so the parent's own relationships are not walked. (The draw
        checked that each is still there: :meth:`~.reservoir.BoundedReads.verify`.)"""
        names = [p.name for p in spec.properties]
        back = EdgeStep(step.right, step.rel_type, step.left, _REVERSED[step.direction])
        wanted: dict[int, dict[int, frozenset[int]]] = {}  # neighbour -> parent -> members
        for parent, rels in members.items():
            for key in pairs[parent]:
                wanted.setdefault(key[1], {})[parent] = frozenset(rels.get(key[1], ()))
        out: dict[int, dict[int, list[tuple[bool, list[Any], Any]]]] = {p: {} for p in members}
        nodes = list(wanted)
        for start in range(0, len(nodes), READ_CHUNK):
            self.nav.check_abort()
            part = nodes[start : start + READ_CHUNK]
            found = self.nav.valued_neighbours(part, back, self.split, names=names)
            for node, rows in zip(part, found):
                of = wanted[node]
                seen: set[tuple[Any, bool]] = set()
                for parent, values, rel, outgoing in rows:
                    if rel in of.get(parent, ()) and (rel, outgoing) not in seen:  # (may repeat)
                        seen.add((rel, outgoing))
                        out[parent].setdefault(node, []).append((not outgoing, list(values), None))
        return out

    def _encode(
        self,
        table: RawTable,
        step: EdgeStep,
        key: tuple,
        candidates: list[tuple[bool, list[Any]]],
    ) -> None:
        """Adds the rows of the relationships ``candidates`` between ``key``'s parent and node
        and points ``key`` at the one the slot carries; the first error in text order for bad
        values."""
        parent, node = key[0], key[1]
        width = table.layout.widths.has
        if not candidates:  # (the graph changed during the call: written as missing)
            candidates = [(True, [None] * width)]
        errors: list[str] = []
        best: tuple | None = None
        for outgoing, values in candidates:
            row = len(table.has) // width
            where = functools.partial(relationship_name, self.name, step, parent, node, outgoing)
            try:
                table.add(_LazyName(where), values, self.allow_non_finite)
            except PropertyValueError as exc:
                errors.append(str(exc))
                continue
            if len(candidates) == 1:  # (the common case: nothing to rank)
                best = ((), row)
                break
            rank = _order_key(table, row, outgoing)
            if best is None or rank < best[0]:
                best = (rank, row)
        if errors:
            raise PropertyValueError(min(errors))
        assert best is not None
        table.row_of[key] = best[1]

    def _slot_keys(self, role: Any, group: Any) -> list[tuple]:
        """Each slot of ``group`` (of ``role``'s layout), row by row: its key ``(parent, node)``
        or, for a step with a time, ``(parent, node, the row's seed time)`` (``node``
        :data:`PAD_ID` where padded); computed once per role and group of a call."""
        cache = self._keys.setdefault(id(role), {})
        got = cache.get(id(group))
        if got is None:
            got = cache[id(group)] = _group_slot_keys(role, group)
        return got

    def sections(self, role: Any) -> dict[str, Any]:
        """The edge sections of ``role`` (:func:`memgraph_tf.layout.typed_edge_sections`:
        per group of a step given a spec, in layout order)."""
        out: dict[str, Any] = {}
        n = len(role.internals)
        steps = list(role.spec.steps)
        for group in role.layout.groups:
            table = self.tables.get(group.step)
            if table is None:
                continue
            flat = [PAD_ID if key[1] == PAD_ID else key for key in self._slot_keys(role, group)]
            name_of = functools.partial(
                layout.typed_edge_name, hop=group.hop, step=steps.index(group.step)
            )
            out.update(raw_sections(table, flat, group.hop, n, group.size, name_of=name_of))
        return out


def _reservoir_members(
    roles: Sequence[Any], step: EdgeStep, pairs: Mapping[int, Any]
) -> dict[int, Mapping[int, Sequence[int]]]:
    """Of the parents of ``pairs``, those that drew ``step`` from their reservoirs in any of the
    ``roles`` (:meth:`~memgraph_tf.procedures.reservoir.BoundedReads.member_relationships`):
    parent -> neighbour internal id -> member relationship ids."""
    reads = [r.bounded[step] for r in roles if step in r.bounded]
    out: dict[int, Mapping[int, Sequence[int]]] = {}
    for parent in pairs if reads else ():
        for read in reads:
            got = read.member_relationships(parent)
            if got is not None:
                out[parent] = got
                break
    return out


def _group_slot_keys(role: Any, group: Any) -> list[tuple]:
    """:meth:`EdgeTables._slot_keys` of ``group``, computed."""
    step, f = group.step, group.fanout
    parents = role.tables[(group.hop - 1, step.left)]
    nodes = role.tables[(group.hop, step.right)]
    width = role.layout.tables[group.hop][step.right]
    per = group.parents
    times = role.timing.times if step.time is not None else None
    out: list[tuple] = []
    for row in range(len(role.internals)):
        base = row * width + group.offset
        row_nodes = nodes[base : base + per * f]
        row_parents = [p for p in parents[row * per : (row + 1) * per] for _ in range(f)]
        if times is None:
            out += zip(row_parents, row_nodes)
        else:
            t = times[row]
            out += [(p, n, t) for p, n in zip(row_parents, row_nodes)]
    return out
