"""Point-in-time pairs for ``tf_features.sample_pairs`` (stdlib only).

A spec of ``sample_pairs`` may hold steps with a time (``(:Account)-[:SENT {time: ts}]-(:Account)``,
:mod:`memgraph_tf.procedures.timed`). Each pair then has a time ``T``, and every row of the pair
-- the pair itself and each negative drawn for it -- samples both endpoints' neighbourhoods as of
``T``: at every hop, a timed step walks only the relationships whose time is not after ``T``
(``options.time_order``: ``uniform`` or ``most_recent``, as for ``sample_typed``). The pair's
time comes from exactly one of

* ``options.pair_times``: a list with one integer time per pair (e.g. the times of validation
  pairs and of their given negatives, which have no relationship to read a time from);
* ``options.pair_time``: a relationship property name: a pair's time is the smallest value of it
  over the relationships between its two endpoints of the types some step walks between the
  source and target labels (either direction) -- the moment the link formed, as
  ``split_edges`` dates an edge. A pair without such a relationship (a pair without a time) or
  with a value that is not an integer fails the call, naming the pair or the relationship, the
  property and the value.

**Negatives as of the pair's time.** With ``options.negatives = k`` a negative target of pair
``i`` (time ``T``) is drawn uniformly among the *active* target nodes at ``T``: the nodes of the
target label with at least one relationship of a timed step that reaches the label (either
endpoint; held-out relationships, ``options.exclude_splits``, do not count) at a time not after
``T``. A node that has not appeared yet is no negative: a model would learn "new nodes never
link", a shortcut the future does not keep. The known neighbours of the source stay excluded at
any time (a link formed after ``T`` is a positive of a later period, never a negative). The
draw is keyed exactly as the untimed one (``(options.seed, source key, target key)``), over the
active nodes ordered by (first active time, key). Where every node active by ``T`` is the source
or a known neighbour of it (the earliest pairs of a growing graph), the pool extends, in that
order, to the first nodes to become active after ``T`` until it holds one; a source joined to
every active node fails the call naming it.
"""

from __future__ import annotations

import bisect
import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from memgraph_tf.procedures.access import GraphAccess, is_int
from memgraph_tf.procedures.errors import OptionError, PropertyValueError, describe_value
from memgraph_tf.procedures.options import SplitFilter, parse_time_order
from memgraph_tf.procedures.timed import read_timed
from memgraph_tf.procedures.weighted import ValuedRead, distinct_relationships, relationship_name
from memgraph_tf.typed_sampling import EdgeStep, TypedSamplingSpec

__all__ = [
    "ActiveTargets",
    "PairTiming",
    "check_pair_timing",
    "pair_times",
    "parse_pair_timing",
]

_REVERSED = {"out": "in", "in": "out", "both": "both"}


@dataclasses.dataclass(frozen=True)
class PairTiming:
    """The parsed time options of ``sample_pairs``: ``times`` (``options.pair_times``) or
    ``prop`` (``options.pair_time``), and whether timed steps draw the most recent first."""

    times: tuple[int, ...] | None
    prop: str | None
    most_recent: bool

    @property
    def option(self) -> str:
        """The option that gave the pairs' times, as errors name it."""
        return "options.pair_times" if self.times is not None else "options.pair_time"


def parse_pair_timing(raw: dict[str, Any]) -> PairTiming | None:
    """Pops ``pair_times``, ``pair_time`` and ``time_order`` from the options ``raw``: None when
    neither time option is given; an :class:`OptionError` naming the option (and for a bad time
    ``options.pair_times[i]``) and the value otherwise."""
    times, prop = raw.pop("pair_times", None), raw.pop("pair_time", None)
    order = parse_time_order(raw)
    if times is None and prop is None:
        return None
    if times is not None and prop is not None:
        raise OptionError(
            "options.pair_times: expected either options.pair_times (one time per pair) or "
            f"options.pair_time (a relationship property), got both (pair_time {prop!r})"
        )
    if prop is not None:
        if not isinstance(prop, str) or not prop:
            raise OptionError(
                "options.pair_time: expected a relationship property name (each pair's time is "
                f"its relationships' smallest value of it), got {describe_value(prop)}"
            )
        return PairTiming(None, prop, order == "most_recent")
    if not isinstance(times, (list, tuple)):
        raise OptionError(
            f"options.pair_times: expected a list of integer times, one per pair, got "
            f"{describe_value(times)}"
        )
    for i, value in enumerate(times):
        if not is_int(value):
            raise OptionError(
                f"options.pair_times[{i}]: expected an integer time, got {describe_value(value)}"
            )
    return PairTiming(tuple(times), None, order == "most_recent")


def check_pair_timing(specs: Sequence[TypedSamplingSpec], timing: PairTiming | None) -> None:
    """An :class:`OptionError` unless the pairs' times are given exactly when some step of
    ``specs`` has a time."""
    timed = [str(s) for spec in specs for s in spec.steps if s.time is not None]
    if timed and timing is None:
        raise OptionError(
            f"options.pair_time: expected the pairs' times ({timed[0]} has a time): "
            "options.pair_time (a relationship property) or options.pair_times (one per pair), "
            "got neither"
        )
    if timing is not None and not timed:
        raise OptionError(
            f"{timing.option}: expected a step with a time in num_neighbors (e.g. "
            "'(:Account)-[:SENT {time: ts}]-(:Account)'), got none"
        )


def _joining(specs: Sequence[TypedSamplingSpec], source: str, target: str) -> list[str]:
    """The relationship types some step walks between the labels ``source`` and ``target``."""
    return sorted(
        {s.rel_type for spec in specs for s in spec.steps if {s.left, s.right} == {source, target}}
    )


def pair_times(
    nav: GraphAccess,
    timing: PairTiming,
    specs: Sequence[TypedSamplingSpec],
    labels: tuple[str, str],
    pairs: tuple[Sequence[int], Sequence[int]],
    name: Callable[[str, int], str],
) -> list[int]:
    """Each pair's time (module docstring): ``options.pair_times`` checked against the pair
    count, or read from the relationships between the endpoints (``pairs``: sources and targets,
    internal ids; ``labels``: their labels; errors name nodes by ``name(label, node)``)."""
    sources, targets = pairs
    if timing.times is not None:
        if len(timing.times) != len(sources):
            raise OptionError(
                f"options.pair_times: expected one time per pair ({len(sources)}), got "
                f"{len(timing.times)}"
            )
        return list(timing.times)
    prop = timing.prop
    source, target = labels
    # per pair its relationships' (value, step, direction); a relationship is named only when
    # its value fails the call (names cost a key lookup and a format per relationship)
    found: dict[tuple[int, int], list[tuple[Any, EdgeStep, bool]]] = {}
    distinct = list(dict.fromkeys(sources))
    for rel_type in _joining(specs, source, target):
        step = EdgeStep(source, rel_type, target, "both", time=prop)

        def read(part: list[int], step: EdgeStep = step) -> Any:
            return nav.valued_neighbours(part, step)

        for s, rows in distinct_relationships(nav, distinct, read):
            for t, value, out in rows:
                found.setdefault((s, t), []).append((value, step, out))
    times = []
    for i, (s, t) in enumerate(zip(sources, targets)):
        got = found.get((s, t), [])
        if not got:
            raise PropertyValueError(
                f"options.pair_time: sources[{i}], targets[{i}]: no relationship between "
                f"{name(source, s)} and {name(target, t)} of a type the steps walk between "
                f":{source} and :{target} to read its time {prop!r} from (a pair without a "
                "time: give options.pair_times)"
            )
        if not all(is_int(value) for value, _, _ in got):
            _raise_bad_time(got, (s, t), prop, name)
        times.append(min(v for v, _, _ in got))
    return times


def _raise_bad_time(
    got: list[tuple[Any, EdgeStep, bool]],
    pair: tuple[int, int],
    prop: str,
    name: Callable[[str, int], str],
) -> None:
    """The :class:`PropertyValueError` of the first relationship of ``pair`` (by name, then
    value) whose time property ``prop`` is no integer."""
    s, t = pair
    named = sorted(
        ((relationship_name(name, step, s, t, out), value) for value, step, out in got),
        key=lambda r: (r[0], describe_value(r[1])),
    )
    for where, value in named:
        if not is_int(value):
            shown = "no value" if value is None else describe_value(value)
            raise PropertyValueError(
                f"options.pair_time: {where} property {prop!r}: expected an integer time, got "
                f"{shown}"
            )


class ActiveTargets:
    """The target-label nodes active as of a time (module docstring): ``ordered`` holds the
    active nodes by (first active time, key), ``firsts`` their first active times; the nodes
    active at ``T`` are ``ordered[:self.count(T)]``."""

    def __init__(
        self,
        nav: GraphAccess,
        specs: Sequence[TypedSamplingSpec],
        label: str,
        candidates: Sequence[int],
        keys: Any,
        split: SplitFilter | None,
    ) -> None:
        first: dict[int, int] = {}
        steps = {
            _from(s, label)
            for spec in specs
            for s in spec.steps
            if s.time is not None and label in (s.left, s.right)
        }
        for step in sorted(steps):
            cache: dict[int, Any] = {}

            def read(part: list[int], step: EdgeStep = step) -> Any:
                found = nav.valued_neighbours(part, step, split)
                keys.add(step.right, [row[0] for rows in found for row in rows])
                return found

            key = keys.of.setdefault(step.right, {}).__getitem__
            read_timed(ValuedRead(nav, step, read, key, keys.name), candidates, cache)
            for node, rows in cache.items():
                if rows:
                    t = min(t for _, t in rows)
                    first[node] = min(t, first.get(node, t))
        key_of = keys.of[label]
        self.ordered = sorted(first, key=lambda n: (first[n], key_of[n]))
        self.firsts = [first[n] for n in self.ordered]
        self.rank = {n: i for i, n in enumerate(self.ordered)}

    def count(self, time: int) -> int:
        """How many nodes are active at ``time`` (the first of :attr:`ordered`)."""
        return bisect.bisect_right(self.firsts, time)


def _from(step: EdgeStep, label: str) -> EdgeStep:
    """``step`` walked from its ``label`` end (``step`` itself when its left label is it)."""
    if step.left == label:
        return step
    return EdgeStep(label, step.rel_type, step.left, _REVERSED[step.direction], time=step.time)
