"""Weighted draws (stdlib only): an edge step that names a relationship property as its weight
(``(:Account)-[:TRANSFER {weight: amount}]->(:Account)``) draws each neighbour with probability
proportional to that property summed over the step's relationships to it.

The rules, on top of :mod:`memgraph_tf.procedures.draw`'s (the same keyed generators, the same
slot order, the same padding):

* a node's weighted neighbours (:func:`read_weighted`) are the distinct neighbours of positive
  total weight, sorted by key, each with its total: the exactly rounded sum (``math.fsum``, so
  the order an access hands them out in does not matter) of the weight over the *distinct*
  relationships to it (a self-loop walked both ways counts once); a neighbour of total 0 is never
  drawn; every weight is checked (:func:`check_weight`), so a bad one fails the call whichever
  node draws first; where a total would pass the largest float, the node's weights are first
  scaled by one power of two (:func:`node_totals`): the same ratios, so the same draws as the
  weights scaled down by hand;
* without replacement, from ``d`` weighted neighbours and ``f`` slots: when ``d <= f`` all of them
  in key order, then padding (no generator call, as the uniform draw); else one
  ``rng.random()`` per neighbour in key order, ``u``, giving the key ``log(1 - u) / w``
  (Efraimidis-Spirakis), and the ``f`` neighbours with the largest keys, largest first (ties: the
  earlier neighbour first) -- successive weighted draws without replacement;
* with replacement: ``f`` times ``rng.random() * total`` located in the running sums (the first
  neighbour whose running sum exceeds it, the last where none does): what
  ``rng.choices(ids, cum_weights=sums, k=f)`` draws, which the draw calls (running sums that
  would pass the largest float are those of the weights scaled by :func:`overflow_shift`).

So the same graph, arguments and seed give the same slots on any graph access.
"""

from __future__ import annotations

import dataclasses
import functools
import heapq
import itertools
import math
import random
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from memgraph_tf.layout import PAD_ID
from memgraph_tf.procedures.access import READ_CHUNK, GraphAccess, is_int
from memgraph_tf.procedures.draw import ParentDrawer
from memgraph_tf.procedures.errors import PropertyValueError, describe_value

__all__ = [
    "NO_NEIGHBOURS",
    "ValuedRead",
    "Weighted",
    "WeightedDrawer",
    "check_weight",
    "distinct_relationships",
    "node_totals",
    "overflow_shift",
    "read_weighted",
    "relationship_name",
    "without",
]


class Weighted:
    """A node's weighted neighbours: ``ids``, the sorted distinct neighbours of positive total
    weight, and ``weights``, their totals, index by index. Its length is the neighbour count."""

    __slots__ = ("ids", "weights")

    def __init__(self, ids: list[int], weights: list[float]) -> None:
        self.ids, self.weights = ids, weights

    def __len__(self) -> int:
        return len(self.ids)

    def __contains__(self, node: object) -> bool:
        return node in self.ids

    def without(self, node: int) -> Weighted:
        """These neighbours but ``node``."""
        kept = [(n, w) for n, w in zip(self.ids, self.weights) if n != node]
        return Weighted([n for n, _ in kept], [w for _, w in kept])


NO_NEIGHBOURS = Weighted([], [])
"""No neighbour to draw (what a padded parent draws from)."""


def without(neighbours: Any, node: int) -> Any:
    """A neighbour list (sorted ids, or :class:`Weighted`) but ``node``."""
    if isinstance(neighbours, Weighted):
        return neighbours.without(node)
    return [k for k in neighbours if k != node]


def relationship_name(
    name: Callable[[str, int], str], step: Any, node: int, neighbour: int, outgoing: bool
) -> str:
    """How errors name a relationship of ``step`` between ``node`` (of the step's left label) and
    ``neighbour`` (right label): its endpoints (``name(label, node)``) and type, as Cypher writes
    it, e.g. ``relationship (:Account {id: 3})-[:TRANSFER]->(:Account {id: 5})``."""
    a, b = name(step.left, node), name(step.right, neighbour)
    if not outgoing:
        a, b = b, a
    return f"relationship {a}-[:{step.rel_type}]->{b}"


def check_weight(value: Any, where: Callable[[], str], prop: str) -> float:
    """``value`` as a float when it is a finite number >= 0 (an int or a float, not a bool);
    else a :class:`PropertyValueError` naming the relationship (``where()``), the property and the
    value."""
    if isinstance(value, float) or is_int(value):
        number = float(value)
        if math.isfinite(number) and number >= 0:
            return number
        what = "a finite number >= 0"
    else:
        what = "a number (the step's weight)"
    got = "no value" if value is None else describe_value(value)
    raise PropertyValueError(f"{where()} property {prop!r}: expected {what}, got {got}")


@dataclasses.dataclass(frozen=True)
class ValuedRead:
    """How :func:`read_weighted` and :func:`memgraph_tf.procedures.timed.read_timed` read one
    step's valued relationships: ``read`` hands out, per node, ``(neighbour, value, relationship
    id, outgoing)`` per relationship of ``step`` (in any order, possibly repeated) through
    ``access``; ``key`` gives the nodes' keys (the sort order); errors name nodes by
    ``name(label, node)``."""

    access: GraphAccess
    step: Any
    read: Callable[[list[int]], list[list[tuple[int, Any, Any, bool]]]]
    key: Callable[[int], Any]
    name: Callable[[str, int], str]

    def rows(self, todo: Sequence[int]) -> Iterator[tuple[int, list[tuple[int, Any, bool]]]]:
        """:func:`distinct_relationships` of ``todo`` through this read."""
        return distinct_relationships(self.access, todo, self.read)

    def in_key_order(self, rows: Iterable[tuple[int, Any, bool]]) -> list[tuple[int, Any, bool]]:
        """``(neighbour, value, outgoing)`` ``rows`` sorted by the neighbour's key, then
        direction, then value: the order in which the first bad value is reported, whatever
        order the access gave them in."""
        return sorted(rows, key=lambda r: (self.key(r[0]), r[2], repr(r[1])))

    def where(self, node: int, nbr: int, out: bool) -> str:
        """:func:`relationship_name` of the step's relationship between ``node`` and ``nbr``."""
        return relationship_name(self.name, self.step, node, nbr, out)


def read_weighted(how: ValuedRead, todo: Sequence[int], cache: dict[int, Weighted]) -> None:
    """Puts each node of ``todo``'s weighted neighbours (:data:`Weighted`, see the module
    docstring), sorted by ``how.key``, into ``cache``. Reads
    :data:`~memgraph_tf.procedures.access.READ_CHUNK` nodes at a time, with an abort check before
    each read; raises :func:`check_weight`'s error for the first bad weight in key order."""
    key = how.key
    for node, rows in how.rows(todo):
        per: dict[int, list[float]] = {}
        for nbr, value, _ in rows:
            kind = value.__class__
            if (kind is float or kind is int) and 0 <= value <= _LARGEST:
                per.setdefault(nbr, []).append(float(value))
            else:  # a bad weight: the error for the first one in key order
                _first_bad(how, node, rows)
                per.setdefault(nbr, []).append(float(value))  # (a number of another type)
        order = sorted(per, key=key)
        totals = zip(order, node_totals([per[n] for n in order]))
        kept = [(n, w) for n, w in totals if w > 0]
        cache[node] = Weighted([n for n, _ in kept], [w for _, w in kept])


def node_totals(weights: Sequence[Sequence[float]]) -> list[float]:
    """Each neighbour's total of its finite weights >= 0 (``weights`` one list per neighbour):
    ``math.fsum`` of them where every total is a float (every graph short of weights near
    ``sys.float_info.max``); else the totals of every weight scaled by :func:`overflow_shift` of
    the weight count (a power of two: the same ratios; finite totals, and so is their sum), a
    positive total that the scaling rounds to zero kept as the smallest positive float (the
    neighbour stays a weighted neighbour)."""
    try:
        return [math.fsum(ws) for ws in weights]
    except OverflowError:  # a total beyond the largest float
        pass
    shift = overflow_shift(sum(len(ws) for ws in weights))
    return [
        math.fsum(math.ldexp(w, shift) for w in ws) or (_TINIEST if any(ws) else 0.0)
        for ws in weights
    ]


def overflow_shift(count: int) -> int:
    """The power of two (a negative exponent) that scales ``count`` finite floats so that any
    sum of them stays at most half the largest float: ``-(count.bit_length() + 1)``."""
    return -(count.bit_length() + 1)


def distinct_relationships(
    access: GraphAccess,
    todo: Sequence[int],
    read: Callable[[list[int]], list[list[tuple[int, Any, Any, bool]]]],
) -> Iterator[tuple[int, list[tuple[int, Any, bool]]]]:
    """Yields each node of ``todo`` (in order) with one ``(neighbour, value, outgoing)`` per
    distinct relationship id of what ``read`` hands out for it (``(neighbour, value,
    relationship id, outgoing)`` rows, in any order, possibly repeated). Reads
    :data:`~memgraph_tf.procedures.access.READ_CHUNK` nodes at a time, with an abort check before
    each read."""
    for start in range(0, len(todo), READ_CHUNK):
        access.check_abort()
        part = list(todo[start : start + READ_CHUNK])
        for node, found in zip(part, read(part)):
            yield node, list({rel: (nbr, value, out) for nbr, value, rel, out in found}.values())


_LARGEST = sys.float_info.max
_TINIEST = math.ulp(0.0)


def _first_bad(how: ValuedRead, node: int, rows: Iterable[tuple[int, Any, bool]]) -> None:
    """Raises :func:`check_weight`'s error for the first bad weight of ``rows`` in key order
    (then direction, then value), whatever order the access gave them in."""
    for nbr, value, out in how.in_key_order(rows):
        check_weight(value, functools.partial(how.where, node, nbr, out), how.step.weight)


class WeightedDrawer(ParentDrawer):
    """Draws ``f`` slots per parent slot from :data:`Weighted` neighbour lists, appending ids to
    ``ids`` and validity to ``mask`` (the rules of the module docstring; padding under a padded
    parent or for missing neighbours, as :class:`~memgraph_tf.procedures.draw.Drawer` pads)."""

    __slots__ = ("_replace",)
    empty = NO_NEIGHBOURS

    def __init__(self, f: int, replace: bool = False) -> None:
        super().__init__(f)
        self._replace = replace

    def draw_parent(
        self, rng: random.Random, found: Weighted, ids: list[int], mask: list[bool]
    ) -> None:
        """Appends the ``f`` slots of a parent with weighted neighbours ``found``."""
        f = self._f
        nbrs, weights = found.ids, found.weights
        d = len(nbrs)
        if d == 0:
            ids += [PAD_ID] * f
            mask += [False] * f
        elif self._replace:
            sums = list(itertools.accumulate(weights))
            if sums[-1] == math.inf:  # the same ratios, scaled by a power of two: a finite total
                shift = overflow_shift(d)
                sums = list(itertools.accumulate(math.ldexp(w, shift) for w in weights))
            ids += rng.choices(nbrs, cum_weights=sums, k=f)  # one random() and bisection a slot
            mask += [True] * f
        else:
            take_largest(nbrs, f, functools.partial(priorities, rng, weights), ids, mask)


def priorities(rng: random.Random, weights: Sequence[float]) -> list[float]:
    """One Efraimidis-Spirakis priority ``log(1 - u) / w`` per weight, in order (one
    ``rng.random()`` each): the ``f`` largest are a weighted draw of ``f`` without replacement."""
    return [math.log(1.0 - rng.random()) / w for w in weights]


def take_largest(
    nbrs: Sequence[int], f: int, keys: Callable[[], list[float]], ids: list[int], mask: list[bool]
) -> None:
    """Appends ``f`` slots drawn without replacement from ``nbrs`` by their priorities: every
    neighbour, then padding, when there are at most ``f`` (``keys`` is not called: no random
    number is drawn); else the ``f`` of largest ``keys()`` (one priority per neighbour, in
    ``nbrs``'s order; ties: the first), in decreasing priority."""
    d = len(nbrs)
    if d <= f:
        ids += nbrs
        ids += [PAD_ID] * (f - d)
        mask += [True] * d + [False] * (f - d)
        return
    order = keys()
    ids += [nbrs[i] for i in heapq.nlargest(f, range(d), key=order.__getitem__)]
    mask += [True] * f
