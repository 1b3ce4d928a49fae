"""The bounded mode (stdlib only): a stored sample of at most ``R`` relationships per node and
edge step -- its *reservoir* -- that the samplers draw from instead of the node's whole
neighbourhood when the node's degree exceeds ``options.reservoir_threshold``.

A reservoir is data in the graph: one integer-list property on the node (:func:`property_name`,
named after the edge step it samples), so the query module, the embedded runtime and the Bolt
fallback read the same list and draw the same bytes. Its layout (:class:`Reservoir`)::

    [FORMAT, capacity R, degree n, c1, c2, seed, applied_seq, m,
     key_1 .. key_m, relationship_1 .. relationship_m, internal_1 .. internal_m]

``n`` is the number of relationships of the step at the node (kept current by maintenance: the
cheap degree check), the members are ``m <= R`` of those relationships (the neighbour's key, the
relationship's internal id, the neighbour's internal id); ``c1``/``c2`` are the uncompensated
deletions of Random Pairing (below); ``seed`` keys the generators of its build and maintenance;
``applied_seq`` is the last change-log ``seq`` applied (changes at or below it are skipped, so
re-applying a batch is harmless).

* **Build** (:func:`build`, ``tf_features.build_reservoirs``): one pass over the nodes in internal
  id order, ``options.batch_nodes`` per call (resumable from ``options.after``, the cursor the
  previous call returned), an abort check at least every
  :data:`~memgraph_tf.procedures.access.ABORT_CHECK_EVERY` relationships. A node with ``n > R``
  relationships of the step gets the members at positions ``rng.sample(range(n), R)`` of its
  relationships sorted by (neighbour key, relationship id), ``rng = rng_for(seed,
  "reservoir/<key>")``: a uniform R-subset of its relationships. A node with ``n <= R`` keeps no
  reservoir (one left from an earlier build is removed): the exact path draws from it.
* **Maintenance** (:func:`update`, ``tf_features.update_reservoirs``, fed from the change log):
  Random Pairing (Gemulla, Lehner, Haas: "A dip in the reservoir", VLDB 2006). A deleted member
  leaves the reservoir (``c1 += 1``), a deleted non-member counts (``c2 += 1``); an insert while
  deletions are uncompensated joins the reservoir with probability ``c1 / (c1 + c2)``, else it
  is skipped, and either way compensates one deletion; with none uncompensated it is Algorithm R
  (joins with probability ``R / n``, replacing a uniformly chosen member). **Guarantee:** given its
  size, the reservoir is a uniform random subset of the node's current relationships of the step.
  Its size stays ``R`` under inserts, and falls by one per deleted member until inserts make up
  for them: a delete-heavy node's reservoir shrinks, which :func:`update` reports (``short``) and
  the draw refuses once it holds fewer distinct neighbours than the fanout (with replacement:
  none).

**Weighted steps** (``options.weight``: the relationship property a weighted step draws by; the
reservoir is another property, :class:`WeightedReservoir`, format :data:`WEIGHTED_FORMAT`): the
build gives each relationship of positive weight an Efraimidis-Spirakis priority
(:func:`priority`) and keeps the ``R`` largest, the next one's priority as the threshold; an
insert joins when its priority is above the threshold (evicting the least member, whose priority
becomes the threshold), a deleted member leaves (the reservoir shrinks), a reweighted relationship
leaves and rejoins. So the members are always the relationships of largest priority. A draw
(:class:`ReservoirDrawer`) redraws the members' priorities given that they exceed the threshold,
which gives one call the exact path's law while the reservoir has lost no member to a deletion;
after deletions shrink it, the draw favours the relationships inserted since (by more the more it
shrank; :func:`update` reports it ``short``: rebuild it). docs/hubs.md, "Weighted steps".

The population is the node's *relationships*: with no parallel relationships of the step (and,
for ``both``, no mutual pair) that is its distinct neighbours, as for the exact path; a
neighbour with k relationships to the node is k times as likely to be in the reservoir.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import math
import operator
import random
import struct
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from memgraph_tf.procedures.access import (
    ABORT_CHECK_EVERY,
    READ_CHUNK,
    GraphAccess,
    NeighbourRead,
    all_ints,
    is_int,
    require_int_id,
    stale_member,
    stale_relationship,
    typed_node_name,
)
from memgraph_tf.procedures.draw import ParentDrawer, rng_for
from memgraph_tf.procedures.errors import OptionError, ProcedureInputError, describe_value
from memgraph_tf.procedures.options import DIRECTIONS
from memgraph_tf.procedures.weighted import Weighted, WeightedDrawer, check_weight, take_largest

__all__ = [
    "FORMAT",
    "WEIGHTED_FORMAT",
    "BoundedReads",
    "BuildOptions",
    "Reservoir",
    "ReservoirDrawer",
    "ReservoirStore",
    "WeightedMembers",
    "WeightedReservoir",
    "build",
    "parse_build_options",
    "parse_update_options",
    "property_name",
    "update",
]

FORMAT = 1
"""The layout version of a reservoir property this code reads and writes."""
HEADER = 8
"""Integers before the members: format, capacity, degree, c1, c2, seed, applied_seq, m."""
PROPERTY_PREFIX = "tf_reservoir_"
BUILD_OPTIONS = ("after", "applied_seq", "batch_nodes", "capacity", "direction", "edge_types")
BUILD_OPTIONS += ("id_property", "label", "neighbour_label", "seed", "weight")
UPDATE_OPTIONS = ("direction", "edge_types", "id_property", "label", "neighbour_label", "weight")
DEFAULT_BATCH_NODES = 100_000


def property_name(
    edge_types: Sequence[str] | None,
    direction: str,
    id_property: str | None,
    label: str | None = None,
    weight: str | None = None,
) -> str:
    """The node property holding the reservoir of the edge step (``edge_types`` None: every type;
    ``direction``; ``label``: only neighbours with it, a typed step's right label; ``weight``: the
    relationship property a weighted step draws by) in the key space of ``id_property`` (None:
    internal ids): ``tf_reservoir_`` and 12 hex digits of the step's BLAKE2b digest. A reservoir
    built for another step (a weighted step's and the unweighted step's of the same
    relationships included) has another name, so a draw never reads it."""
    types = ",".join(sorted(set(edge_types))) if edge_types is not None else "*"
    text = f"{FORMAT}|{direction}|{types}|{id_property or ''}" + (f"|{label}" if label else "")
    text += f"|weight={weight}" if weight else ""
    return PROPERTY_PREFIX + hashlib.blake2b(text.encode(), digest_size=6).hexdigest()


@dataclasses.dataclass
class Reservoir:
    """One node's reservoir (see the module docstring). ``keys[i]``, ``rels[i]``,
    ``internals[i]``: member i's neighbour key, relationship id, neighbour internal id."""

    capacity: int
    degree: int
    c1: int
    c2: int
    seed: int
    applied_seq: int
    keys: list[int]
    rels: list[int]
    internals: list[int]

    def encode(self) -> list[int]:
        """The property value: the header, then the members sorted by (key, relationship)."""
        order = sorted(range(len(self.keys)), key=lambda i: (self.keys[i], self.rels[i]))
        head = [FORMAT, self.capacity, self.degree, self.c1, self.c2, self.seed]
        head += [self.applied_seq, len(order)]
        return (
            head
            + [self.keys[i] for i in order]
            + [self.rels[i] for i in order]
            + [self.internals[i] for i in order]
        )

    @classmethod
    def decode(cls, value: Any, where: str, name: str) -> Reservoir:
        """The reservoir stored as ``value`` on the node ``where`` names; a value of another
        format (an older or newer build) or a malformed one raises :class:`ProcedureInputError`
        naming the node, the property and ``options.reservoir_threshold``."""
        if not isinstance(value, (list, tuple)) or len(value) < HEADER or not all_ints(value):
            raise ProcedureInputError(
                f"options.reservoir_threshold: {where} property {name!r}: expected a reservoir "
                f"(a list of integers, format {FORMAT}), got {describe_value(value)}; rebuild it "
                "with tf_features.build_reservoirs"
            )
        if value[0] != FORMAT:
            raise ProcedureInputError(
                f"options.reservoir_threshold: {where} has a reservoir ({name!r}) of format "
                f"{value[0]}, this sampler reads format {FORMAT}: rebuild it with "
                "tf_features.build_reservoirs"
            )
        capacity, degree, c1, c2, seed, applied, m = value[1:HEADER]
        if len(value) != HEADER + 3 * m or not 0 <= m <= capacity or degree < m:
            raise ProcedureInputError(
                f"options.reservoir_threshold: {where} property {name!r}: a malformed reservoir "
                f"({m} members, capacity {capacity}, degree {degree}, {len(value)} integers); "
                "rebuild it with tf_features.build_reservoirs"
            )
        members = list(value[HEADER:])
        return cls(
            capacity,
            degree,
            c1,
            c2,
            seed,
            applied,
            members[:m],
            members[m : 2 * m],
            members[2 * m :],
        )

    # -- maintenance (Random Pairing) ------------------------------------------------------------
    def insert(self, rel: int, key: int, internal: int, rng: Any) -> None:
        """One created relationship of the step (``rel`` to the neighbour ``key`` /
        ``internal``); a relationship already a member is ignored (applied twice)."""
        if rel in self.rels:
            return
        self.degree += 1
        uncompensated = self.c1 + self.c2
        if uncompensated:
            if rng.random() * uncompensated < self.c1:
                self.c1 -= 1
                self._append(rel, key, internal)
            else:
                self.c2 -= 1
        elif len(self.rels) < self.capacity:
            self._append(rel, key, internal)
        elif rng.random() * self.degree < self.capacity:
            i = rng.randrange(len(self.rels))
            self.keys[i], self.rels[i], self.internals[i] = key, rel, internal

    def delete(self, rel: int, of_step: bool = True) -> None:
        """One deleted relationship: a member leaves (``c1 += 1``); a non-member counts
        (``c2 += 1``) when ``of_step`` (its other end had the step's neighbour label), else it
        was never of the step and changes nothing. Either way the degree falls by one when
        the relationship counted toward it (a member, or ``of_step``)."""
        try:
            i = self.rels.index(rel)
        except ValueError:
            if of_step:
                self.degree = max(0, self.degree - 1)
                self.c2 += 1
            return
        self.degree = max(0, self.degree - 1)
        self.c1 += 1
        last = len(self.rels) - 1  # swap with the last member, then drop it
        for members in (self.keys, self.rels, self.internals):
            members[i] = members[last]
            members.pop()

    def _append(self, rel: int, key: int, internal: int) -> None:
        self.keys.append(key)
        self.rels.append(rel)
        self.internals.append(internal)


WEIGHTED_FORMAT = 2
"""The layout version of a weighted step's reservoir property (:class:`WeightedReservoir`)."""
WEIGHTED_HEADER = 7
"""Integers before a weighted reservoir's members: format, capacity, degree, seed,
applied_seq, m, the threshold's bits."""
LOWEST = -sys.float_info.max
"""The threshold of a weighted reservoir holding every relationship of positive weight."""


def float_bits(value: float) -> int:
    """``value``'s IEEE-754 binary64 bit pattern as a signed 64-bit integer (how a weighted
    reservoir stores its floats, so its property is a list of integers that any store
    round-trips exactly)."""
    return struct.unpack("<q", struct.pack("<d", value))[0]


def bits_float(bits: int) -> float:
    """The float whose bit pattern :func:`float_bits` gave."""
    return struct.unpack("<d", struct.pack("<q", bits))[0]


def priority(rng: random.Random, weight: float) -> float:
    """A relationship's Efraimidis-Spirakis key ``log(1 - u) / weight`` (one ``rng.random()``;
    ``weight > 0``): the relationships of largest key are a weighted sample without replacement.
    Never below :data:`LOWEST` (a subnormal weight)."""
    return max(math.log(1.0 - rng.random()) / weight, LOWEST)


@dataclasses.dataclass
class WeightedReservoir:
    """One node's reservoir of a weighted step: ``keys[i]``, ``rels[i]``, ``internals[i]``,
    ``weights[i]``, ``priorities[i]``: member i's neighbour key, relationship id, neighbour
    internal id, weight and Efraimidis-Spirakis key (:func:`priority`). ``threshold``: every
    member's priority is above it and every other relationship's at or below it (the members
    are the relationships of largest priority). Its property (:meth:`encode`)::

        [WEIGHTED_FORMAT, capacity R, degree n, seed, applied_seq, m, bits(threshold),
         key_1 .. key_m, relationship_1 .. relationship_m, internal_1 .. internal_m,
         bits(weight_1) .. bits(weight_m), bits(priority_1) .. bits(priority_m)]

    (floats as their bit patterns, :func:`float_bits`)."""

    capacity: int
    degree: int
    seed: int
    applied_seq: int
    threshold: float
    keys: list[int]
    rels: list[int]
    internals: list[int]
    weights: list[float]
    priorities: list[float]

    def encode(self) -> list[int]:
        """The property value: the header, then the members sorted by (key, relationship)."""
        order = sorted(range(len(self.keys)), key=lambda i: (self.keys[i], self.rels[i]))
        head = [WEIGHTED_FORMAT, self.capacity, self.degree, self.seed, self.applied_seq]
        head += [len(order), float_bits(self.threshold)]
        columns = (self.keys, self.rels, self.internals)
        floats = (self.weights, self.priorities)
        return (
            head
            + [c[i] for c in columns for i in order]
            + [float_bits(c[i]) for c in floats for i in order]
        )

    @classmethod
    def decode(cls, value: Any, where: str, name: str) -> WeightedReservoir:
        """The weighted reservoir stored as ``value`` on the node ``where`` names; another
        layout or a malformed one raises :class:`ProcedureInputError` naming the node, the
        property and ``options.reservoir_threshold``."""
        if (
            not isinstance(value, (list, tuple))
            or len(value) < WEIGHTED_HEADER
            or not all_ints(value)
            or value[0] != WEIGHTED_FORMAT
        ):
            raise ProcedureInputError(
                f"options.reservoir_threshold: {where} property {name!r}: expected a weighted "
                f"step's reservoir (a list of integers, format {WEIGHTED_FORMAT}), got "
                f"{describe_value(value)}; rebuild it with tf_features.build_reservoirs"
            )
        capacity, degree, seed, applied, m, threshold = value[1:WEIGHTED_HEADER]
        if len(value) != WEIGHTED_HEADER + 5 * m or not 0 <= m <= capacity or degree < m:
            raise ProcedureInputError(
                f"options.reservoir_threshold: {where} property {name!r}: a malformed reservoir "
                f"({m} members, capacity {capacity}, degree {degree}, {len(value)} integers); "
                "rebuild it with tf_features.build_reservoirs"
            )
        cols = [
            list(value[WEIGHTED_HEADER + j * m : WEIGHTED_HEADER + (j + 1) * m]) for j in range(5)
        ]
        weights, priorities = ([bits_float(b) for b in c] for c in cols[3:])
        return cls(
            capacity, degree, seed, applied, bits_float(threshold), *cols[:3], weights, priorities
        )

    # -- maintenance (the members stay the relationships of largest priority) --------------------
    def insert(self, rel: int, key: int, internal: int, weight: float | None, rng: Any) -> None:
        """One created relationship of the step (``rel`` to the neighbour ``key`` / ``internal``,
        of ``weight``; None: no longer in the graph, so never a member). It draws a priority
        (weight > 0) and joins when that is above the threshold; a reservoir then over its
        capacity drops its member of least priority, whose priority becomes the threshold. A
        relationship already a member is ignored (applied twice)."""
        if rel in self.rels:
            return
        self.degree += 1
        if not weight:
            return
        key_ = priority(rng, weight)
        if key_ <= self.threshold:
            return
        for column, v in zip(self._columns(), (key, rel, internal, weight, key_)):
            column.append(v)
        if len(self.rels) > self.capacity:
            least = min(range(len(self.rels)), key=lambda i: (self.priorities[i], self.rels[i]))
            self.threshold = self.priorities[least]
            self._drop(least)

    def delete(self, rel: int, of_step: bool = True) -> None:
        """One deleted relationship: a member leaves (the reservoir shrinks; the threshold
        stays, so the rest are still the relationships of largest priority). The degree falls by
        one when it counted toward it: a member, or ``of_step`` (its other end had the step's
        neighbour label; else it was never of the step and changes nothing)."""
        if rel in self.rels:
            self._drop(self.rels.index(rel))
        elif not of_step:
            return
        self.degree = max(0, self.degree - 1)

    def _columns(self) -> tuple[list, ...]:
        return (self.keys, self.rels, self.internals, self.weights, self.priorities)

    def _drop(self, i: int) -> None:
        for column in self._columns():
            column[i] = column[-1]
            column.pop()


class WeightedMembers(Weighted):
    """What a parent drawing from its weighted reservoir draws from: the distinct members
    (``ids``, sorted by key; ``weights``: their members' summed weights, as
    :class:`~memgraph_tf.procedures.weighted.Weighted` holds them) and, per member relationship,
    its neighbour's index in ``ids`` (``owner``), its weight and the reservoir's ``threshold``
    (:class:`ReservoirDrawer` draws from these)."""

    __slots__ = ("owner", "rel_weights", "spans", "threshold")

    def __init__(
        self, ids: list[int], owner: list[int], rel_weights: list[float], threshold: float
    ) -> None:
        totals = [0.0] * len(ids)
        for i, w in zip(owner, rel_weights):
            totals[i] += w
        super().__init__(ids, totals)
        self.owner, self.rel_weights, self.threshold = owner, rel_weights, threshold
        # 1 - exp(threshold * w): a member's priority is log(1 - span * u) / w, u in [0, 1)
        self.spans = [-math.expm1(threshold * w) for w in rel_weights]

    def without(self, node: int) -> WeightedMembers:
        """These members but those to ``node``."""
        kept = [j for j, i in enumerate(self.owner) if self.ids[i] != node]
        ids = [n for n in self.ids if n != node]
        index = {n: i for i, n in enumerate(ids)}
        return WeightedMembers(
            ids,
            [index[self.ids[self.owner[j]]] for j in kept],
            [self.rel_weights[j] for j in kept],
            self.threshold,
        )

    def neighbour_keys(self, rng: random.Random) -> list[float]:
        """A fresh priority per member (one ``rng.random()`` each, in member order), drawn given
        that it is above the threshold, and per neighbour the largest of its members'."""
        rand, log = rng.random, math.log
        keys = [log(1.0 - s * rand()) / w for s, w in zip(self.spans, self.rel_weights)]
        if len(keys) == len(self.ids):  # one member per neighbour (no parallel relationships)
            return keys
        best = [-math.inf] * len(self.ids)
        for i, k in zip(self.owner, keys):
            if k > best[i]:
                best[i] = k
        return best


class ReservoirDrawer(ParentDrawer):
    """A weighted step's draw in the bounded mode: a parent with :class:`WeightedMembers` (a
    reservoir) draws by the rule below, any other by
    :class:`~memgraph_tf.procedures.weighted.WeightedDrawer`'s exact rule.

    From a reservoir (``d`` distinct neighbours among its members; module docstring of
    :mod:`.reservoir`, "weighted steps"): without replacement, when ``d <= f`` all of them in key
    order then padding (no generator call); else :meth:`WeightedMembers.neighbour_keys` once and
    the ``f`` neighbours of largest key, largest first (ties: the earlier neighbour first). With
    replacement, each of the ``f`` slots is the neighbour of largest key of its own
    :meth:`WeightedMembers.neighbour_keys` (ties: the earlier)."""

    __slots__ = ("exact", "fanout", "replace")
    empty = WeightedDrawer.empty

    def __init__(self, f: int, replace: bool = False) -> None:
        super().__init__(f)
        self.exact = WeightedDrawer(f, replace)
        self.fanout, self.replace = f, replace

    def draw_parent(self, rng: random.Random, found: Any, ids: list[int], mask: list[bool]) -> None:
        """Appends the ``f`` slots of a parent drawing from ``found``."""
        if not isinstance(found, WeightedMembers) or not found.ids:
            self.exact.draw_parent(rng, found, ids, mask)
            return
        nbrs = found.ids
        f = self.fanout
        if self.replace:
            for _ in range(f):
                keys = found.neighbour_keys(rng)
                ids.append(nbrs[keys.index(max(keys))])  # (the first of the largest)
            mask += [True] * f
        else:
            take_largest(nbrs, f, lambda: found.neighbour_keys(rng), ids, mask)


# ------------------------------------------------------------------------------------------------
# the draw: which nodes read their reservoir
# ------------------------------------------------------------------------------------------------


_REVERSED = {"out": "in", "in": "out", "both": "both"}


def _step_text(edge_types: Sequence[str] | None, direction: str) -> str:
    """An untyped edge step as errors write it, from the node drawn from: ``()<-[:T|U]-()``
    (no type: ``()-[]->()``)."""
    rel = f"[:{'|'.join(edge_types)}]" if edge_types else "[]"
    return {"out": f"()-{rel}->()", "in": f"()<-{rel}-()", "both": f"()-{rel}-()"}[direction]


def _distinct_pairs(keys: list[int], internals: list[int]) -> list[tuple[int, int]]:
    """``sorted(set(zip(keys, internals)))``; as a reservoir is written (:meth:`Reservoir.encode`:
    sorted by key), without the set and the sort when the keys are strictly increasing."""
    if all(map(operator.lt, keys, itertools.islice(keys, 1, None))):
        return list(zip(keys, internals))
    return sorted(set(zip(keys, internals)))


class _Read:
    """One reservoir :class:`BoundedReads` read this call: the node drawing from it (``node``,
    its internal id ``own``), the reservoir ``res`` and its distinct ``(stored key, internal
    id)`` ``pairs`` (sorted). A member's drawn id is its stored key when ``untyped``, else its
    internal id. ``rel_of``: where no two members share a drawn id or a neighbour (internal id),
    drawn id -> its member's relationship; else None (:meth:`holders` groups them). The members'
    relationships per neighbour (:meth:`per_internal`) and their holders per drawn id are
    grouped when first asked for, each in one pass: a draw asks for a few of the R members."""

    __slots__ = ("_by_drawn", "_per", "_side", "node", "own", "pairs", "rel_of", "res")

    def __init__(
        self,
        node: int,
        own: int,
        res: Reservoir | WeightedReservoir,
        pairs: Sequence[tuple[int, int]],
        untyped: bool,
    ) -> None:
        self.node, self.own, self.res, self.pairs = node, own, res, pairs
        self._per: dict[int, list[int]] | None = None
        self._by_drawn: dict[int, list[tuple[int, int, Sequence[int]]]] | None = None
        self._side = 0 if untyped else 1  # (the drawn id's place in a pair)
        self.rel_of = dict(zip(res.keys if untyped else res.internals, res.rels))
        m = len(res.rels)
        if len(self.rel_of) != m or len(set(res.internals)) != m:
            self.rel_of = None

    def per_internal(self) -> dict[int, list[int]]:
        """The member relationship ids per neighbour internal id, in the reservoir's order."""
        if self._per is None:
            internals, rels = self.res.internals, self.res.rels
            if self.rel_of is not None:  # (one relationship per neighbour)
                self._per = dict(zip(internals, map(list, zip(rels))))
            else:
                self._per = {}
                for rel, internal in zip(rels, internals):
                    self._per.setdefault(internal, []).append(rel)
        return self._per

    def holders(self, drawn: int) -> list[tuple[int, int, Sequence[int]]]:
        """``(node, own, the member relationships)`` for each of ``pairs`` whose drawn id is
        ``drawn``, in ``pairs`` order; without ``rel_of``, from all the drawn ids' holders,
        grouped in one pass over ``pairs`` when first asked for."""
        if self.rel_of is not None:
            return [(self.node, self.own, (self.rel_of[drawn],))]
        if self._by_drawn is None:
            per, side, by_drawn = self.per_internal(), self._side, {}
            for pair in self.pairs:
                held = (self.node, self.own, per[pair[1]])
                by_drawn.setdefault(pair[side], []).append(held)
            self._by_drawn = by_drawn
        return self._by_drawn.get(drawn, [])


class BoundedReads:
    """The bounded mode of one edge step in one call: which nodes draw from their reservoir.

    Guarantees (:meth:`fill`): a node whose reservoir (the step's property, :func:`property_name`)
    records a degree above ``threshold`` draws from its members' distinct keys, sorted (a
    weighted step's, ``weight``: from its :class:`WeightedMembers`); any other node is left to
    the exact path. A reservoir of another format, one of a capacity below a hop's fanout, or
    one holding fewer distinct neighbours than the draw needs (a hop's fanout; with ``replace``
    one; none for a complete weighted reservoir, which pads as the exact path does) raises
    naming ``options.reservoir_threshold``, the node and what to do; nothing is drawn in silence
    from a reservoir that cannot fill the slots as the exact path would. Each drawn member is
    checked against the graph (:meth:`verify`).

    Typed steps (``register`` given) key nodes by internal id: ``register(internals, keys)``
    hands the members' stored keys to the call, ``hub_name(internal)`` names a node drawn from
    in errors, ``label`` is the step's right label and ``step_text`` the step as errors write
    it; the members are named ``(:Label {id: 3})`` by their stored keys."""

    def __init__(
        self,
        threshold: int,
        edge_types: Sequence[str] | None,
        direction: str,
        id_property: str | None,
        label: str | None = None,
        register: Any = None,
        weight: str | None = None,
        replace: bool = False,
        hub_name: Callable[[int], str] | None = None,
        step_text: str | None = None,
    ) -> None:
        self.threshold = threshold
        self.weight = weight
        self.replace = replace
        self.edge_types, self.direction = edge_types, direction
        self.id_property, self.label = id_property, label
        self.name = property_name(edge_types, direction, id_property, label, weight)
        self._register = register  # typed steps: (internals, keys) -> None; nodes by internal id
        self._hub_name = hub_name
        self._step_text = step_text or _step_text(edge_types, direction)
        self._back = NeighbourRead(edge_types, _REVERSED[direction])  # (verify: members' side)
        self._drawn: dict[int, tuple[int, int, bool]] = {}  # node -> (capacity, distinct, complete)
        self._reads: list[_Read] = []  # the reservoirs read this call, in order
        self._by_node: dict[int, _Read] = {}  # node drawing from its reservoir -> that read
        self._first: dict[int, int] = {}
        """Drawn id of a member met so far (its key; typed: its internal id) -> the index in
        ``_reads`` of the first reservoir holding it (:meth:`_holders`)."""
        self._later: dict[int, list[int]] = {}  # drawn id -> the later reservoirs holding it
        self._stored: dict[int, dict[int, None]] = {}  # typed: member internal -> stored keys
        self._verified: set[int] = set()  # members :meth:`verify` checked

    @classmethod
    def of(cls, options: Any) -> BoundedReads | None:
        """The bounded mode of ``tf_features.sample``'s step (``options.edge_types``,
        ``options.direction``, keys of ``options.id_property``), None when
        ``options.reservoir_threshold`` is not set."""
        if options.reservoir_threshold is None:
            return None
        return cls(
            options.reservoir_threshold,
            options.edge_types,
            options.direction,
            options.id_property,
            replace=options.replace,
        )

    def hub(self, access: GraphAccess, key: int) -> str:
        """How errors name the node ``key`` that draws from its reservoir."""
        return access.node_name(key) if self._hub_name is None else self._hub_name(key)

    def member(self, access: GraphAccess, drawn: int, key: int) -> str:
        """How errors name the member ``drawn`` (typed: its internal id) under its stored
        ``key``."""
        if self._register is None:
            return access.node_name(key)
        return typed_node_name(self.label or "", drawn, key, self.id_property)

    def fill(
        self,
        access: GraphAccess,
        nodes: Sequence[int],
        cache: dict[int, list[int]],
        fanout: int,
        hop: int,
    ) -> None:
        """Puts the sorted distinct member keys of each of ``nodes`` (distinct keys) that draws
        from its reservoir into ``cache`` (their members registered with the access) and checks
        every such node against ``fanout`` (``hop``: for the message); the nodes left out of
        ``cache`` are the exact path's to read."""
        todo = [k for k in nodes if k not in cache]
        for key in nodes:
            if key in self._drawn:
                self._check(access, key, fanout, hop)
        for start in range(0, len(todo), READ_CHUNK):
            access.check_abort()
            part = todo[start : start + READ_CHUNK]
            for key, (value,) in zip(part, access.properties(part, [self.name])):
                if value is None:
                    continue
                where = self.hub(access, key)
                res: Reservoir | WeightedReservoir
                if self.weight is not None:
                    res = WeightedReservoir.decode(value, where, self.name)
                else:
                    res = Reservoir.decode(value, where, self.name)
                if res.degree <= self.threshold:
                    continue
                complete = isinstance(res, WeightedReservoir) and res.threshold == LOWEST
                pairs = _distinct_pairs(res.keys, res.internals)
                self._drawn[key] = (res.capacity, len(pairs), complete)
                self._check(access, key, fanout, hop)
                ids = self._adopt(access, key, res, pairs)
                if isinstance(res, WeightedReservoir):
                    index = {k: j for j, k in enumerate(ids)}
                    drawn = res.keys if self._register is None else res.internals
                    owner = [index[k] for k in drawn]
                    cache[key] = WeightedMembers(ids, owner, list(res.weights), res.threshold)
                else:
                    cache[key] = ids

    def _adopt(
        self,
        access: GraphAccess,
        key: int,
        res: Reservoir | WeightedReservoir,
        pairs: Sequence[tuple[int, int]],
    ) -> list[int]:
        """Registers the members of ``key``'s reservoir ``res`` (``pairs``: its distinct
        ``(stored key, internal id)``, sorted) with the access (typed: with the call's keys too)
        and for :meth:`verify` (:meth:`_holders`, worked out for the members drawn only);
        returns the ids the node draws from (their keys; typed: their internal ids, in key
        order)."""
        if self._register is None:
            ids = [k for k, _ in pairs]
            access.adopt(res.keys, res.internals)
            own = access.internal_ids([key])[0]
        else:  # the access keys nodes by internal id; their keys go to the call's Keys
            ids = [i for _, i in pairs]
            names = [self.member(access, i, k) for k, i in pairs]
            access.adopt(ids, ids, names)
            self._register(ids, [k for k, _ in pairs])
            own = key
            for k, i in pairs:
                self._stored.setdefault(i, {})[k] = None
        read = _Read(key, own, res, pairs, self._register is None)
        index = len(self._reads)
        self._reads.append(read)
        self._by_node[key] = read
        fresh = dict.fromkeys(ids, index)
        for drawn in fresh.keys() & self._first.keys():  # (held by an earlier reservoir too)
            self._later.setdefault(drawn, []).append(index)
            del fresh[drawn]
        self._first.update(fresh)
        return ids

    def _holders(self, drawn: int) -> list[tuple[int, int, Sequence[int]]]:
        """``(node whose reservoir holds the member drawn, that node's internal id, the member
        relationships)`` for each distinct ``(stored key, internal id)`` of the member ``drawn``
        (its key; typed: its internal id) in each reservoir read this call that holds it, in
        the order the reservoirs were read (each one's in its ``pairs`` order)."""
        out: list[tuple[int, int, Sequence[int]]] = []
        for index in (self._first[drawn], *self._later.get(drawn, ())):
            out += self._reads[index].holders(drawn)
        return out

    def member_relationships(self, key: int) -> Mapping[int, Sequence[int]] | None:
        """For a node :meth:`fill` gave its reservoir to draw from: its members' relationship
        ids per neighbour internal id (the relationships a slot it fills stands for); None for a
        node left to the exact path."""
        read = self._by_node.get(key)
        return None if read is None else read.per_internal()

    def verify(self, access: GraphAccess, ids: Sequence[int], mask: Sequence[bool]) -> None:
        """Checks the nodes of a hop's slots (``ids`` where ``mask``) that are members of a
        reservoir read this call, each once per call, against the graph, so a reservoir behind
        the change log raises naming the member (:func:`~.access.stale_member`) or the
        relationship (:func:`~.access.stale_relationship`) even where nothing else of it would
        be read (ids only, the last hop): the node is still there (one lookup by its internal
        id) under its stored key (typed: and with the step's right label), and each of its
        member relationships, of every reservoir read this call that holds it, is still there
        (read from the member's side: O(the member's degree in that direction) at most, its
        relationships of other types walked too, not the hub's;
        :meth:`~.access.GraphAccess.present_relationships`)."""
        drawn = [
            k
            for k in dict.fromkeys(itertools.compress(ids, mask))
            if k in self._first and k not in self._verified
        ]
        first, later, reads = self._first, self._later, self._reads
        for start in range(0, len(drawn), READ_CHUNK):
            part = drawn[start : start + READ_CHUNK]
            self._verify_nodes(access, part)
            wanted: list[set[tuple[int, int]]] = []
            for k in part:
                read = reads[first[k]]
                if read.rel_of is not None and k not in later:  # (the common case, inline)
                    wanted.append({(read.rel_of[k], read.own)})
                else:
                    held = self._holders(k)
                    wanted.append({(rel, own) for _, own, rels in held for rel in rels})
            found = access.present_relationships(part, self._back, wanted)
            for k, want, there in zip(part, wanted, found):
                if len(there) == len(want):  # (every one found)
                    continue
                for hub, own, rels in self._holders(k):
                    for rel in sorted(rels):
                        if (rel, own) not in there:
                            key = k if self._register is None else next(iter(self._stored[k]))
                            raise ProcedureInputError(
                                stale_relationship(
                                    rel,
                                    self._step_text,
                                    self.hub(access, hub),
                                    self.member(access, k, key),
                                )
                            )
            self._verified.update(part)

    def _verify_nodes(self, access: GraphAccess, part: Sequence[int]) -> None:
        """:meth:`verify`'s node checks of the members ``part``: the read raises for a node
        gone (and, untyped with ``options.id_property``, for a key changed: the access checks
        it); typed, the key read is compared with each stored one and the label is checked."""
        typed = self._register is not None
        names = [self.id_property] if typed and self.id_property is not None else []
        values = access.properties(part, names)
        if not typed:
            return
        for internal, got in zip(part, values):
            for stored in self._stored[internal]:
                if names and got[0] != stored:
                    name = self.member(access, internal, stored)
                    raise ProcedureInputError(stale_member(name, internal))
        if self.label is not None:
            for internal, ok in zip(part, access.has_label(part, self.label)):
                if not ok:
                    name = self.member(access, internal, next(iter(self._stored[internal])))
                    raise ProcedureInputError(stale_member(name, internal, f"a :{self.label} node"))

    def _check(self, access: GraphAccess, key: int, fanout: int, hop: int) -> None:
        """Refuses a reservoir of a capacity below ``fanout``, and one holding fewer distinct
        neighbours than the draw needs: ``fanout`` without replacement, one with replacement,
        none when it is complete (a weighted reservoir holding every relationship of positive
        weight: the exact path's population, so its draw pads as the exact one does)."""
        capacity, distinct, complete = self._drawn[key]
        if capacity < fanout:
            raise OptionError(
                f"options.reservoir_threshold: {self.hub(access, key)} has a reservoir "
                f"({self.name!r}) of capacity {capacity}, below hop {hop}'s fanout {fanout}: "
                f"rebuild it with options.capacity >= {fanout} (tf_features.build_reservoirs)"
            )
        need = 0 if complete else min(fanout, 1) if self.replace else fanout
        if distinct < need:
            below = (
                f"below the one neighbour hop {hop}'s draw with replacement needs"
                if self.replace
                else f"below hop {hop}'s fanout {fanout}"
            )
            raise OptionError(
                f"options.reservoir_threshold: {self.hub(access, key)} has a reservoir "
                f"({self.name!r}) holding {distinct} distinct neighbours (capacity {capacity}, "
                f"shrunk by deletions or parallel relationships), {below}: rebuild it "
                "(tf_features.build_reservoirs)"
            )


# ------------------------------------------------------------------------------------------------
# build and maintenance over a store
# ------------------------------------------------------------------------------------------------


class ReservoirStore(Protocol):
    """What building and maintaining reservoirs needs of a graph (nodes by internal id)."""

    def check_abort(self) -> None:
        """Raises if the procedure must stop."""

    def node_page(self, after: int | None, limit: int, label: str | None) -> list[int]:
        """The internal ids above ``after`` (None: all) of the nodes (with ``label`` when
        given), ascending, at most ``limit``."""

    def step_relationships(
        self, internals: Sequence[int], opts: BuildOptions
    ) -> list[list[tuple[int, int, Any, bool]]]:
        """Per node, ``(relationship id, other end's internal id, value, outgoing)`` of each
        distinct relationship of the step of ``opts`` (``edge_types``, ``direction``; a self-loop
        once; with ``neighbour_label``, to such nodes only); ``value``: the relationship's
        ``opts.weight`` property (None where missing, or without ``opts.weight``);
        ``outgoing``: whether the node is its start."""

    def relationship_values(
        self, rows: Sequence[tuple[int, int, bool]], prop: str
    ) -> dict[int, Any]:
        """For each ``(node internal id, relationship id, outgoing)`` row, the relationship's
        property ``prop`` (None where missing), found among the node's outgoing (or incoming)
        relationships; a relationship not found (deleted since) is left out. Cost: the node's
        relationships of that direction are walked, O(its degree) per row's node."""

    def labelled(self, internals: Sequence[int], label: str) -> list[bool]:
        """Per node, whether it has ``label`` (False for a node no longer in the graph)."""

    def read(self, internals: Sequence[int], name: str) -> list[Any]:
        """Per node, property ``name`` (None where missing, or for a node no longer in the
        graph; a list as a Python list)."""

    def write(self, rows: Sequence[tuple[int, Any]], name: str) -> None:
        """Sets property ``name`` to the value of each ``(internal id, value)`` row; None
        removes it."""


@dataclasses.dataclass(frozen=True)
class BuildOptions:
    """Validated options of ``tf_features.build_reservoirs`` / ``update_reservoirs``."""

    capacity: int = 0
    edge_types: tuple[str, ...] | None = None
    direction: str = "both"
    id_property: str | None = None
    label: str | None = None
    neighbour_label: str | None = None
    seed: int = 0
    after: int | None = None
    batch_nodes: int = DEFAULT_BATCH_NODES
    applied_seq: int = 0
    weight: str | None = None

    @property
    def name(self) -> str:
        """The reservoir property of this step (:func:`property_name`)."""
        return property_name(
            self.edge_types, self.direction, self.id_property, self.neighbour_label, self.weight
        )


def _parse(procedure: str, options: Any, allowed: Sequence[str]) -> dict[str, Any]:
    if options is not None and not isinstance(options, Mapping):
        raise OptionError(f"options: expected a map, got {describe_value(options)}")
    values: dict[str, Any] = {}
    for key, value in sorted((options or {}).items()):
        if key not in allowed:
            raise OptionError(
                f"options: unknown option {key!r} for tf_features.{procedure} (allowed: "
                f"{', '.join(map(repr, allowed))})"
            )
        if value is None:
            continue
        if key == "direction":
            if value not in DIRECTIONS:
                raise OptionError(
                    f"options.direction: expected one of {', '.join(map(repr, DIRECTIONS))}, "
                    f"got {describe_value(value)}"
                )
        elif key == "edge_types":
            if not isinstance(value, (list, tuple)) or not all(
                isinstance(t, str) and t for t in value
            ):
                raise OptionError(
                    "options.edge_types: expected a list of edge type names (strings), got "
                    f"{describe_value(value)}"
                )
            value = tuple(sorted(set(value)))
        elif key in ("id_property", "label", "neighbour_label", "weight"):
            if not isinstance(value, str) or not value:
                raise OptionError(
                    f"options.{key}: expected a non-empty string, got {describe_value(value)}"
                )
        else:
            least = {"capacity": 1, "batch_nodes": 1, "after": -(2**63)}.get(key, 0)
            if key != "seed" and (not is_int(value) or value < least):
                raise OptionError(
                    f"options.{key}: expected an integer >= {least}, got {describe_value(value)}"
                )
            if key == "seed" and not is_int(value):
                raise OptionError(f"options.seed: expected an integer, got {describe_value(value)}")
        values[key] = value
    return values


def parse_build_options(options: Any) -> BuildOptions:
    """``tf_features.build_reservoirs``' options: ``capacity`` (R, required, >= 1), the step
    (``edge_types``, ``direction``; ``weight``: a weighted step's weight property) and key space
    (``id_property``) the samplers will use,
    ``seed`` (default 0), ``label`` (only its nodes get reservoirs; default every node),
    ``neighbour_label`` (a typed step's right label: only neighbours with it count),
    ``after`` / ``batch_nodes`` (the page of nodes), ``applied_seq`` (the change-log cursor the
    build reflects). A bad one raises :class:`OptionError` naming it."""
    values = _parse("build_reservoirs", options, BUILD_OPTIONS)
    if "capacity" not in values:
        raise OptionError(
            "options.capacity: expected the reservoir size R (an integer >= 1, at least the "
            "largest fanout the samplers will draw), got none"
        )
    return BuildOptions(**values)


def parse_update_options(options: Any) -> BuildOptions:
    """``tf_features.update_reservoirs``' options: the step (``edge_types``, ``direction``,
    ``neighbour_label``, ``weight``) and key space (``id_property``) of the reservoirs to
    maintain; ``label`` (the build's) only names the nodes in errors."""
    return BuildOptions(**_parse("update_reservoirs", options, UPDATE_OPTIONS))


def _node_keys(store: ReservoirStore, internals: Sequence[int], id_property: str | None) -> list:
    """The key of each node: its ``id_property`` value (an integer, else an error naming the
    node) or its internal id."""
    if id_property is None:
        return list(internals)
    values = store.read(internals, id_property)
    for internal, value in zip(internals, values):
        require_int_id(value, f"node {internal}", id_property, ProcedureInputError)
    return values


def build(store: ReservoirStore, opts: BuildOptions) -> dict[str, Any]:
    """One page of ``tf_features.build_reservoirs`` (see the module docstring): ``{"nodes"
    (scanned), "reservoirs" (written), "removed" (old reservoirs of nodes at or below the
    capacity), "next" (the cursor for the next page; None when every node was scanned)}``."""
    page = store.node_page(opts.after, opts.batch_nodes, opts.label)
    name, written, removed = opts.name, 0, 0
    for start in range(0, len(page), READ_CHUNK):
        store.check_abort()
        part = page[start : start + READ_CHUNK]
        found = store.step_relationships(part, opts)
        old = store.read(part, name)
        others = sorted({r[1] for rels in found for r in rels})
        key_of = dict(zip(others, _node_keys(store, others, opts.id_property)))
        own = _node_keys(store, part, opts.id_property)
        rows: list[tuple[int, Any]] = []
        for internal, key, rels, before in zip(part, own, found, old):
            if len(rels) <= opts.capacity:
                if before is not None:
                    rows.append((internal, None))
                    removed += 1
                continue
            rng = rng_for(opts.seed, f"reservoir/{key}")
            if opts.weight is not None:
                sides = (internal, key, key_of)
                rows.append((internal, build_weighted(opts, sides, rels, rng).encode()))
                written += 1
                continue
            members = sorted((key_of[other], rel, other) for rel, other, *_ in rels)
            picked = [members[i] for i in rng.sample(range(len(members)), opts.capacity)]
            reservoir = Reservoir(
                opts.capacity,
                len(members),
                0,
                0,
                opts.seed,
                opts.applied_seq,
                [m[0] for m in picked],
                [m[1] for m in picked],
                [m[2] for m in picked],
            )
            rows.append((internal, reservoir.encode()))
            written += 1
        store.write(rows, name)
    done = len(page) < opts.batch_nodes
    return {
        "nodes": len(page),
        "reservoirs": written,
        "removed": removed,
        "next": None if done or not page else page[-1],
    }


def relationship_text(
    opts: BuildOptions, node: tuple[int, Any], other: tuple[int, Any], outgoing: bool
) -> str:
    """How build and maintenance errors name a relationship of the step between ``node`` and
    ``other`` (each ``(internal id, key)``) as the weighted draw names it
    (:func:`~memgraph_tf.procedures.weighted.relationship_name`): ``relationship (:L {id:
    3})-[:T]->(:M {id: 5})`` with ``options.id_property``, else by internal id, ``(node 3:L)``;
    the labels are ``options.label`` and ``options.neighbour_label`` where given."""

    def name(label: str | None, internal: int, key: Any) -> str:
        if opts.id_property is None:
            return f"(node {internal}" + (f":{label})" if label else ")")
        return f"({':' + label + ' ' if label else ''}{{{opts.id_property}: {key}}})"

    a, b = name(opts.label, *node), name(opts.neighbour_label, *other)
    if not outgoing:
        a, b = b, a
    types = "|".join(opts.edge_types or ())
    return f"relationship {a}-[{':' + types if types else ''}]->{b}"


def build_weighted(
    opts: BuildOptions, node: tuple[int, Any, Mapping[int, Any]], rels: Sequence, rng: Any
) -> WeightedReservoir:
    """The weighted reservoir of one node (``node``: its internal id, its key, the keys of its
    neighbours by internal id) over its relationships ``rels`` (``(relationship, other end,
    weight, node is the start)``), in (neighbour key, relationship) order: each weight checked
    (:func:`~memgraph_tf.procedures.weighted.check_weight`, the error naming the relationship
    by :func:`relationship_text`), one :func:`priority` per relationship of positive weight, the
    ``capacity`` of largest priority kept (ties: the earlier), the next one's priority the
    threshold (:data:`LOWEST` when none is left out)."""
    internal, key, key_of = node
    members = sorted((key_of[other], rel, other, out, value) for rel, other, value, out in rels)
    ranked = []
    for nkey, rel, other, outgoing, value in members:

        def where(other: int = other, nkey: Any = nkey, outgoing: bool = outgoing) -> str:
            return relationship_text(opts, (internal, key), (other, nkey), outgoing)

        weight = check_weight(value, where, opts.weight or "")
        if weight > 0:
            ranked.append((priority(rng, weight), nkey, rel, other, weight))
    order = sorted(range(len(ranked)), key=lambda i: (-ranked[i][0], i))
    kept = [ranked[i] for i in order[: opts.capacity]]
    threshold = ranked[order[opts.capacity]][0] if len(order) > opts.capacity else LOWEST
    return WeightedReservoir(
        opts.capacity,
        len(members),
        opts.seed,
        opts.applied_seq,
        threshold,
        [m[1] for m in kept],
        [m[2] for m in kept],
        [m[3] for m in kept],
        [m[4] for m in kept],
        [m[0] for m in kept],
    )


def _endpoints(
    change: Mapping[str, Any], opts: BuildOptions, i: int
) -> list[tuple[int, int, Any, bool]]:
    """``(node internal id, other end's internal id, other end's key, node is the start)`` for
    each endpoint of the relationship ``change`` whose reservoir of the step it touches (the
    key as the change gives it, unchecked: only a creation applied to a reservoir needs it,
    :func:`_apply` checks it there)."""
    for field in ("element_id", "start_id", "end_id", "seq"):
        value = change.get(field)
        if not is_int(value):
            raise OptionError(
                f"changes[{i}].{field}: expected an integer, got {describe_value(value)}"
            )
    start, end = change["start_id"], change["end_id"]
    keyed = opts.id_property is not None
    start_key = change.get("start_key") if keyed else start
    end_key = change.get("end_key") if keyed else end
    out = []
    if opts.direction in ("out", "both"):
        out.append((start, end, end_key, True))
    if opts.direction in ("in", "both") and not (opts.direction == "both" and start == end):
        out.append((end, start, start_key, False))
    return out


def _step_kinds(change: Mapping[str, Any], opts: BuildOptions) -> tuple[str, ...]:
    """What ``change`` does to the step's reservoirs, in order: ``("created",)``,
    ``("deleted",)``, for a weighted step's relationship whose weight was set or removed
    ``("deleted", "created")`` (it leaves and comes back with its new weight), else ``()``."""
    if change.get("entity") != "relationship":
        return ()
    kind = change.get("kind")
    if kind in ("created", "deleted"):
        return (kind,)
    props = change.get("properties")
    if kind == "updated" and opts.weight is not None and isinstance(props, (list, tuple)):
        return ("deleted", "created") if opts.weight in props else ()
    return ()


def _per_node(store: ReservoirStore, changes: Any, opts: BuildOptions) -> dict[int, list[tuple]]:
    """The changes of the step per endpoint node: ``(seq, order, kind, relationship, other
    end, its key, node is the start, of the step, index in changes)`` rows (the key unchecked:
    :func:`_apply` checks a creation's). ``of the step``: whether the other end has
    ``neighbour_label`` (always, without one): it has it now, or it is a node this call's
    changes delete and their deletion lists it among its ``labels``. A created relationship
    not of the step is left out; a deleted one is kept (:func:`_apply`: it still leaves the
    reservoir when it is a member -- its other end may be gone, or have lost the label, since it
    joined)."""
    if not isinstance(changes, (list, tuple)):
        raise OptionError(f"changes: expected a list of change maps, got {describe_value(changes)}")
    per_node: dict[int, list[tuple]] = {}
    types = None if opts.edge_types is None else set(opts.edge_types)
    gone: dict[int, bool] = {}  # a node these changes delete -> whether it had neighbour_label
    for i, change in enumerate(changes):
        if i % ABORT_CHECK_EVERY == 0:
            store.check_abort()
        if not isinstance(change, Mapping):
            raise OptionError(f"changes[{i}]: expected a change map, got {describe_value(change)}")
        if (
            change.get("entity") == "node"
            and change.get("kind") == "deleted"
            and is_int(change.get("element_id"))
        ):
            labels = change.get("labels")
            gone[change.get("element_id")] = isinstance(labels, (list, tuple)) and (
                opts.neighbour_label in labels
            )
        kinds = _step_kinds(change, opts)
        if not kinds or (types is not None and change.get("rel_type") not in types):
            continue
        for node, other, key, outgoing in _endpoints(change, opts, i):
            for order, kind in enumerate(kinds):
                row = (
                    change["seq"],
                    order,
                    kind,
                    change["element_id"],
                    other,
                    key,
                    outgoing,
                    True,
                    i,
                )
                per_node.setdefault(node, []).append(row)
    if opts.neighbour_label is not None:
        others = sorted({row[4] for rows in per_node.values() for row in rows})
        ok = dict(zip(others, store.labelled(others, opts.neighbour_label)))
        ok.update((n, had) for n, had in gone.items() if n in ok and not ok[n])
        per_node = {
            n: [(*r[:7], ok[r[4]], r[8]) for r in rows if ok[r[4]] or r[2] == "deleted"]
            for n, rows in per_node.items()
        }
    return per_node


def _weights(
    store: ReservoirStore, opts: BuildOptions, node: tuple[int, Any], fresh: Sequence[tuple]
) -> dict[int, float | None]:
    """The checked weight (:func:`~memgraph_tf.procedures.weighted.check_weight`) of each
    relationship ``fresh`` creates at ``node`` (``(internal id, key)``), read from the graph
    now; None for one no longer there. Read from the other end's side (so ``node``, the hub, is
    not walked; a relationship between two hubs walks the other one's relationships)."""
    wanted = [(r[4], r[3], not r[6]) for r in fresh if r[2] == "created"]
    values = store.relationship_values(wanted, opts.weight or "")
    out: dict[int, float | None] = {}
    for _, _, _, rel, other, key, outgoing, *_ in (r for r in fresh if r[2] == "created"):
        if rel not in values:
            out[rel] = None
            continue

        def where(other: int = other, key: Any = key, outgoing: bool = outgoing) -> str:
            return relationship_text(opts, node, (other, key), outgoing)

        out[rel] = check_weight(values[rel], where, opts.weight or "")
    return out


def _apply(
    store: ReservoirStore, value: Any, node: tuple[int, Any], rows: list, opts: BuildOptions
) -> tuple[Any, int, int]:
    """The reservoir stored as ``value`` on ``node`` (``(internal id, key)``) after the
    ``rows`` of its changes above its ``applied_seq`` (None when every change was at or below
    it), and how many changes it applied and skipped."""
    internal, key = node
    weighted = opts.weight is not None
    name = opts.name
    where = f"node {internal}"
    res: Any = (WeightedReservoir if weighted else Reservoir).decode(value, where, name)
    todo = sorted(rows)
    fresh = [c for c in todo if c[0] > res.applied_seq]
    skipped = len({c[0] for c in todo}) - len({c[0] for c in fresh})
    if not fresh:
        return None, 0, skipped
    rng = rng_for(res.seed, f"reservoir/{key}/{fresh[0][0]}")
    weights = _weights(store, opts, node, fresh) if weighted else {}
    for _, _, kind, rel, other, nkey, _, of_step, i in fresh:
        if kind == "deleted":
            res.delete(rel, of_step)
            continue
        if not is_int(nkey):
            raise OptionError(
                f"changes[{i}]: expected the integer {opts.id_property} of node {other} "
                f"(options.id_property: the change's start_key / end_key), got "
                f"{describe_value(nkey)}"
            )
        if weighted:
            res.insert(rel, nkey, other, weights[rel], rng)
        else:
            res.insert(rel, nkey, other, rng)
    res.applied_seq = fresh[-1][0]
    return res, len({c[0] for c in fresh}), skipped


def _is_short(res: Reservoir | WeightedReservoir) -> bool:
    """Whether ``res`` holds fewer members than its capacity, a weighted reservoir holding
    every relationship of positive weight (threshold :data:`LOWEST`: complete) excepted: what
    :func:`update` reports as ``short``."""
    complete = isinstance(res, WeightedReservoir) and res.threshold == LOWEST
    return len(res.rels) < res.capacity and not complete


def update(store: ReservoirStore, changes: Any, opts: BuildOptions) -> dict[str, int]:
    """``tf_features.update_reservoirs``: applies the relationship changes of the step (created,
    deleted; for a weighted step also updated where the weight was set or removed: a deletion,
    then a creation with the weight the graph holds now; in ``seq`` order; others ignored) to
    the reservoirs of their endpoints. A node without a reservoir is left alone (the exact path
    reads it), and so is an endpoint no longer in the graph (deleted with its relationships); a
    change at or below a reservoir's ``applied_seq`` is skipped. Each node's
    changes of one call draw from ``rng_for(seed, "reservoir/<key>/<first seq>")``. A weighted
    step reads each created relationship's weight from the graph (one that is gone never joins:
    its deletion follows in the log); a bad weight raises naming the relationship, the property
    and the value. With ``neighbour_label`` a created relationship counts when its other end has
    the label now (or this call's changes delete that node listing it); a deleted one always
    leaves the reservoir when it is a member, and otherwise lowers the degree only under the
    same rule. Returns ``{"applied", "skipped" (changes at or below applied_seq), "updated"
    (reservoirs written), "short" (of those, reservoirs holding fewer than their capacity, but
    complete weighted ones: :func:`_is_short`)}``."""
    per_node = _per_node(store, changes, opts)
    nodes = sorted(per_node)
    name = opts.name
    stats = {"applied": 0, "skipped": 0, "updated": 0, "short": 0}
    for start in range(0, len(nodes), READ_CHUNK):
        store.check_abort()
        part = nodes[start : start + READ_CHUNK]
        rows = []
        held = [(i, v) for i, v in zip(part, store.read(part, name)) if v is not None]
        own = _node_keys(store, [i for i, _ in held], opts.id_property) if held else []
        for (internal, value), key in zip(held, own):  # (a node gone since holds none)
            res, applied, skipped = _apply(store, value, (internal, key), per_node[internal], opts)
            stats["skipped"] += skipped
            if res is None:
                continue
            stats["applied"] += applied
            stats["updated"] += 1
            stats["short"] += _is_short(res)
            rows.append((internal, res.encode()))
        store.write(rows, name)
    return stats


class MgpReservoirStore:
    """:class:`ReservoirStore` over an ``mgp.ProcCtx`` (the public mgp API; a write procedure's
    context for :meth:`write`)."""

    def __init__(self, ctx: Any) -> None:
        self._ctx = ctx
        self._graph = ctx.graph

    def check_abort(self) -> None:
        self._ctx.check_must_abort()

    def node_page(self, after: int | None, limit: int, label: str | None) -> list[int]:
        ids = []
        for i, vertex in enumerate(self._graph.vertices):
            if i % ABORT_CHECK_EVERY == 0:
                self._ctx.check_must_abort()
            if (after is None or vertex.id > after) and (
                label is None or any(lb.name == label for lb in vertex.labels)
            ):
                ids.append(vertex.id)
        ids.sort()
        return ids[:limit]

    def step_relationships(
        self, internals: Sequence[int], opts: BuildOptions
    ) -> list[list[tuple[int, int, Any, bool]]]:
        edge_types, direction, label = opts.edge_types, opts.direction, opts.neighbour_label
        types = None if edge_types is None else frozenset(edge_types)
        out = []
        walked = 0
        for internal in internals:
            vertex = self._graph.get_vertex_by_id(internal)
            seen: dict[int, tuple[int, int, Any, bool]] = {}
            for outgoing in (True, False):
                if direction != "both" and outgoing != (direction == "out"):
                    continue
                for edge in vertex.out_edges if outgoing else vertex.in_edges:
                    walked += 1
                    if walked % ABORT_CHECK_EVERY == 0:
                        self._ctx.check_must_abort()
                    if types is not None and edge.type.name not in types:
                        continue
                    other = edge.to_vertex if outgoing else edge.from_vertex
                    if edge.id not in seen and (
                        label is None or any(lb.name == label for lb in other.labels)
                    ):
                        value = None if opts.weight is None else edge.properties.get(opts.weight)
                        seen[edge.id] = (edge.id, other.id, value, outgoing)
            out.append(list(seen.values()))
        return out

    def relationship_values(
        self, rows: Sequence[tuple[int, int, bool]], prop: str
    ) -> dict[int, Any]:
        wanted: dict[tuple[int, bool], set[int]] = {}
        for internal, rel, outgoing in rows:
            wanted.setdefault((internal, outgoing), set()).add(rel)
        found: dict[int, Any] = {}
        walked = 0
        for (internal, outgoing), rels in sorted(wanted.items()):
            try:
                vertex = self._graph.get_vertex_by_id(internal)
            except IndexError:  # (the node was deleted, and its relationships with it)
                continue
            for edge in vertex.out_edges if outgoing else vertex.in_edges:
                walked += 1
                if walked % ABORT_CHECK_EVERY == 0:
                    self._ctx.check_must_abort()
                if edge.id in rels:
                    found[edge.id] = edge.properties.get(prop)
        return found

    def labelled(self, internals: Sequence[int], label: str) -> list[bool]:
        out = []
        for internal in internals:
            try:
                vertex = self._graph.get_vertex_by_id(internal)
            except IndexError:
                out.append(False)
                continue
            out.append(any(lb.name == label for lb in vertex.labels))
        return out

    def read(self, internals: Sequence[int], name: str) -> list[Any]:
        out = []
        for internal in internals:
            try:
                value = self._graph.get_vertex_by_id(internal).properties.get(name)
            except IndexError:  # (a node deleted since: an endpoint of a logged deletion)
                value = None
            out.append(list(value) if isinstance(value, (list, tuple)) else value)
        return out

    def write(self, rows: Sequence[tuple[int, Any]], name: str) -> None:
        for i, (internal, value) in enumerate(rows):
            if i % ABORT_CHECK_EVERY == 0:
                self._ctx.check_must_abort()
            self._graph.get_vertex_by_id(internal).properties.set(name, value)
