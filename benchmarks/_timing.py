"""Timing shared by the sampling benchmarks (typed_sampling.py, weighted_sampling.py,
timed_sampling.py, edge_features.py): one call's wall time, and several calls' rates measured in
alternating rounds of the same run."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any


def timed(fn: Callable[[], Any]) -> float:
    """Seconds one call of ``fn`` takes."""
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def alternating_times(calls: Sequence[Callable[[], Any]], rounds: int) -> list[list[float]]:
    """Per call of ``calls``, its seconds in each of ``rounds`` rounds, after one warm-up call
    each; every round calls each once, in order, so all see the same machine load."""
    for call in calls:  # warm-up
        call()
    times: list[list[float]] = [[] for _ in calls]
    for _ in range(rounds):
        for call, spent in zip(calls, times):
            spent.append(timed(call))
    return times


def alternating_rates(items: int, calls: Sequence[Callable[[], Any]], rounds: int) -> list[float]:
    """``items`` per second of each of ``calls``, each from the median of its
    :func:`alternating_times`."""
    return [items / statistics.median(spent) for spent in alternating_times(calls, rounds)]


def round_ratio(spent: Sequence[float], baseline: Sequence[float]) -> float:
    """The median over rounds of ``baseline``'s seconds over ``spent``'s in the same round (two
    lists of :func:`alternating_times`): how many times faster ``spent``'s call runs, each round
    compared with its own, so that load that drifts between rounds cancels."""
    return statistics.median(b / s for s, b in zip(spent, baseline))


def paired_rates(
    items: int, first: Callable[[], Any], second: Callable[[], Any], rounds: int
) -> tuple[float, float]:
    """:func:`alternating_rates` of ``first`` and ``second``: ``items`` per second of each."""
    first_rate, second_rate = alternating_rates(items, (first, second), rounds)
    return first_rate, second_rate
