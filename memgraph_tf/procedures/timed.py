"""Point-in-time draws (stdlib only): an edge step that names a relationship property as its time
(``(:Account)-[:TRANSFER {time: ts}]->(:Account)``) walks, in each seed's row and at every hop,
only the relationships whose time is not after that seed's time (``options.seed_time``: the
seeds' time property, or ``options.at``: one time for every seed, read instead of it; in
``sample_pairs``, each pair's time: :mod:`memgraph_tf.procedures.pair_times`). Times are
integers (e.g. epoch seconds); a relationship or seed without one, or with another type, fails
the call naming it.

Per row (seed time ``T``), a node's neighbours over a timed step are the distinct neighbours with
at least one relationship of the step at a time ``<= T``; ``options.time_order``:

* ``uniform``: those, sorted by key, drawn exactly as an untimed step draws
  (:class:`~memgraph_tf.procedures.draw.Drawer` without replacement, padding: the same ``rng``
  calls);
* ``most_recent``: those ordered by their latest such relationship's time, latest first (ties:
  by key), the first ``fanout`` of them, then padding; no generator call.
"""

from __future__ import annotations

import collections.abc
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from memgraph_tf.layout import PAD_ID
from memgraph_tf.procedures.access import READ_CHUNK, GraphAccess, is_int
from memgraph_tf.procedures.draw import ParentDrawer
from memgraph_tf.procedures.errors import OptionError, PropertyValueError, describe_value
from memgraph_tf.procedures.weighted import ValuedRead

__all__ = [
    "AsOf",
    "RecentDrawer",
    "SeedTimes",
    "check_timing",
    "read_timed",
    "require_timing",
    "seed_times",
]

Timed = list[tuple[int, int]]
"""A node's ``(neighbour, time)`` per distinct relationship, sorted by neighbour key, then time."""


class SeedTimes:
    """The seeds' times, row by row, and whether timed steps draw the most recent first."""

    __slots__ = ("most_recent", "times")

    def __init__(self, times: list[int], most_recent: bool) -> None:
        self.times, self.most_recent = times, most_recent


def check_timing(spec: Any, seed_time: str | None, at: int | None = None) -> None:
    """An :class:`OptionError` unless the seeds' times are given (``options.seed_time``, or
    ``options.at``: one time for every seed, which wins over ``seed_time``) exactly when some
    step of ``spec`` has a time."""
    timed = [str(s) for s in spec.steps if s.time is not None]
    if timed and seed_time is None and at is None:
        raise OptionError(
            f"options.seed_time: expected the seeds' time property ({timed[0]} has a time), got "
            "none"
        )
    if (seed_time is not None or at is not None) and not timed:
        given = f"seed_time {seed_time!r}" if at is None else f"at {at}"
        raise OptionError(
            f"options.{given.split()[0]}: expected a step with a time in num_neighbors (e.g. "
            f"'(:Account)-[:TRANSFER {{time: ts}}]->(:Account)'), got none ({given})"
        )


def _time_error(where: str, prop: str, value: Any) -> PropertyValueError:
    got = "no value" if value is None else describe_value(value)
    return PropertyValueError(f"{where} property {prop!r}: expected an integer time, got {got}")


def seed_times(
    access: GraphAccess,
    internals: Sequence[int],
    name: Callable[[int], str],
    prop: str,
    most_recent: bool,
) -> SeedTimes:
    """The seeds' (``internals``) integer times from property ``prop``; an error naming the seed
    (``seeds[i]``, ``name(internal)``) for a missing one or one of another type."""
    times: list[int] = []
    for start in range(0, len(internals), READ_CHUNK):
        part = list(internals[start : start + READ_CHUNK])
        for i, (value,) in enumerate(access.properties(part, [prop]), start):
            if not is_int(value):
                raise _time_error(f"seeds[{i}]: {name(internals[i])}", f"{prop}", value)
            times.append(value)
    return SeedTimes(times, most_recent)


def read_timed(how: ValuedRead, todo: Sequence[int], cache: dict[int, Timed]) -> None:
    """Puts each node of ``todo``'s :data:`Timed` list into ``cache`` (read as
    :func:`memgraph_tf.procedures.weighted.read_weighted` reads); an error naming the relationship
    (its endpoints, ``how.name(label, node)``), the property and the value for the first time in
    key order that is not an integer."""
    key = how.key
    for node, rows in how.rows(todo):
        if not all(is_int(value) for _, value, _ in rows):
            for nbr, value, out in how.in_key_order(rows):
                if not is_int(value):
                    raise _time_error(how.where(node, nbr, out), how.step.time, value)
        cache[node] = sorted(((n, t) for n, t, _ in rows), key=lambda r: (key(r[0]), r[1]))


class AsOf(collections.abc.Mapping):
    """``cache`` (node -> :data:`Timed`) as one row sees it at time ``time``: node -> its
    neighbours with a relationship not after ``time``, in key order, or (``most_recent``) latest
    first; computed once per node."""

    def __init__(self, cache: dict[int, Timed], time: int, most_recent: bool) -> None:
        self._cache, self._time, self._most_recent = cache, time, most_recent
        self._seen: dict[int, list[int]] = {}

    def __getitem__(self, node: int) -> list[int]:
        got = self._seen.get(node)
        if got is None:
            latest: dict[int, int] = {}
            for nbr, t in self._cache[node]:
                if t <= self._time:
                    latest[nbr] = t  # (times ascending within a neighbour)
            if self._most_recent:
                order = {n: i for i, n in enumerate(latest)}
                got = sorted(latest, key=lambda n: (-latest[n], order[n]))
            else:
                got = list(latest)
            self._seen[node] = got
        return got

    def __iter__(self) -> Iterator[int]:
        return iter(self._cache)

    def __len__(self) -> int:
        return len(self._cache)


class RecentDrawer(ParentDrawer):
    """Draws ``f`` slots per parent slot: the first ``f`` of the parent's neighbours as
    :class:`AsOf` orders them (most recent first), then padding; padding under a padded parent;
    no generator call."""

    __slots__ = ()

    def draw_parent(self, rng: Any, found: list[int], ids: list[int], mask: list[bool]) -> None:
        """Appends the ``f`` slots of a parent with neighbours ``found`` (most recent first)."""
        f = self._f
        got = found[:f]
        ids += got
        ids += [PAD_ID] * (f - len(got))
        mask += [True] * len(got) + [False] * (f - len(got))


def require_timing(timing: SeedTimes | None, step: Any) -> SeedTimes:
    """The call's seed times; an OptionError naming the step when it has none (only
    ``sample_typed``, with ``options.seed_time`` or ``options.at``, and ``sample_pairs``, with
    ``options.pair_time`` or ``options.pair_times``, sample timed steps)."""
    if timing is None:
        raise OptionError(
            f"num_neighbors: {step}: a step with a time is sampled by tf_features.sample_typed "
            "and tf_features.sample_pairs only (with the seeds' or pairs' times)"
        )
    return timing
