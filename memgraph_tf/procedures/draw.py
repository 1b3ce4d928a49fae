"""The one draw rule of every sampler (stdlib only): which neighbours fill a node's slots, and the
keyed random generators the draws come from.

``tf_features.sample`` / ``sample_per_node`` (:func:`memgraph_tf.procedures.core.sample_ids`),
``sample_typed`` and ``sample_pairs`` (:func:`memgraph_tf.procedures.slots.draw_role`) all draw
through :class:`Drawer` from an RNG made by :func:`rng_for`: a homogeneous graph is a typed graph
with one label and one edge step, and a typed step draws exactly as ``tf_features.sample`` draws
without replacement, padding. The draws (which RNG calls, in which order) are the samplers'
contract: the same graph, arguments and seed give the same slots on any graph access.
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from memgraph_tf.layout import PAD_ID
from memgraph_tf.procedures.access import READ_CHUNK, GraphAccess
from memgraph_tf.procedures.options import Options

__all__ = ["DRAWS_PER_CHECK", "Drawer", "base_seed", "read_neighbours", "rng_for"]

DRAWS_PER_CHECK = 16384
"""Samplers check for abort at least every this many drawn slots (a few milliseconds)."""


def rng_for(base_seed: int, key: object) -> random.Random:
    """The generator keyed by ``(base_seed, key)``: a seed row's (``key``: the seed's key), or a
    keyed draw's (``key``: a string naming it, e.g. ``split_edges``). Equal arguments give equal
    sequences on every host and Python version that keeps ``random.Random``'s string seeding."""
    return random.Random(f"memgraph-tf/{base_seed}/{key}")


def base_seed(options: Options) -> int:
    """``options.seed``, or a fresh random one when it is not set (the call is then not
    repeatable)."""
    return options.seed if options.seed is not None else int.from_bytes(os.urandom(8), "little")


def read_neighbours(
    access: GraphAccess,
    todo: Sequence[int],
    cache: dict[int, list[int]],
    read: Callable[[list[int]], list[list[int]]],
    key: Callable[[int], Any] | None = None,
) -> None:
    """Puts the neighbour list a node draws from into ``cache`` for each node of ``todo``: the
    *distinct* neighbours ``read`` hands out (in any order, possibly repeated), sorted (by
    ``key``: the nodes' keys where they are not the nodes themselves), whatever order the graph
    gave them in. Reads :data:`~memgraph_tf.procedures.access.READ_CHUNK` nodes at a time, with
    an abort check before each read."""
    for start in range(0, len(todo), READ_CHUNK):
        access.check_abort()
        part = list(todo[start : start + READ_CHUNK])
        for node, found in zip(part, read(part)):
            cache[node] = sorted(set(found), key=key)


class ParentDrawer:
    """A draw (called as :class:`Drawer` is) that draws each parent's ``f`` slots on its own:
    :meth:`draw_parent` from the parent's entry of ``neighbours``, or from :attr:`empty` under a
    padded parent, in parent order."""

    __slots__ = ("_f",)
    empty: Any = ()
    """What a padded parent draws from (a subclass's form of no neighbours)."""

    def __init__(self, f: int) -> None:
        self._f = f

    def __call__(
        self,
        rng: random.Random,
        neighbours: Mapping[int, Any],
        parents: Sequence[int],
        valid: Sequence[bool],
        ids: list[int],
        mask: list[bool],
    ) -> None:
        """Draws the slots of ``parents`` (``valid``: which of them are real nodes) in order."""
        draw, empty = self.draw_parent, self.empty
        for parent, ok in zip(parents, valid):
            draw(rng, neighbours[parent] if ok else empty, ids, mask)

    def draw_parent(self, rng: random.Random, found: Any, ids: list[int], mask: list[bool]) -> None:
        """Appends one parent's ``f`` slots, drawn from ``found``, to ``ids`` and ``mask``."""
        raise NotImplementedError


class Drawer:
    """Draws ``f`` slots per parent slot, appending ids to ``ids`` and validity to ``mask``:
    padding (``PAD_ID``, false) under a padded or masked parent; else from the parent's sorted
    distinct neighbours ``nbrs`` (d of them): with ``replace`` ``nbrs[rng.randrange(d)]`` f times;
    without, ``rng.sample(nbrs, f)`` when d > f, else all of them then (``pad``) f - d padded
    slots or (resample) ``nbrs[rng.randrange(d)]`` f - d times; a node without neighbours stands
    in for itself when resampling (a self-loop).

    The draws (which ``rng`` calls, in which order) are the samplers' contract: the same node and
    seed give the same slots."""

    __slots__ = ("_f", "_falses", "_pad", "_pads", "_replace", "_trues")

    def __init__(self, f: int, replace: bool = False, pad: bool = True) -> None:
        self._f, self._replace, self._pad = f, replace, pad
        self._pads, self._falses, self._trues = [PAD_ID] * f, [False] * f, [True] * f

    def __call__(
        self,
        rng: random.Random,
        neighbours: Mapping[int, list[int]],
        parents: Sequence[int],
        valid: Sequence[bool],
        ids: list[int],
        mask: list[bool],
    ) -> None:
        """Draws the slots of ``parents`` (``valid``: which of them are real nodes) in order,
        from ``neighbours[parent]`` (sorted, distinct), appending to ``ids`` and ``mask``."""
        f, replace, pad = self._f, self._replace, self._pad
        pads, falses, trues = self._pads, self._falses, self._trues
        sample, randrange = rng.sample, rng.randrange
        for key, ok in zip(parents, valid):
            if not ok:
                ids += pads
                mask += falses
                continue
            nbrs = neighbours[key]
            d = len(nbrs)
            if d > f and not replace:  # the common case first
                ids += sample(nbrs, f)
                mask += trues
            elif d == 0:
                if pad:
                    ids += pads
                    mask += falses
                else:  # resampling from nothing: the node stands in for its own neighbours
                    ids += [key] * f
                    mask += trues
            elif replace:
                ids += [nbrs[randrange(d)] for _ in range(f)]
                mask += trues
            else:
                ids += nbrs
                if pad:
                    ids += pads[d:]
                    mask += trues[:d]
                    mask += falses[d:]
                else:
                    ids += [nbrs[randrange(d)] for _ in range(f - d)]
                    mask += trues
