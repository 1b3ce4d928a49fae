"""Timing shared by the sampling benchmarks (typed_sampling.py, weighted_sampling.py): one call's
wall time, and two calls' rates measured in alternating rounds of the same run."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any


def timed(fn: Callable[[], Any]) -> float:
    """Seconds one call of ``fn`` takes."""
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def paired_rates(
    items: int, first: Callable[[], Any], second: Callable[[], Any], rounds: int
) -> tuple[float, float]:
    """``items`` per second of ``first`` and of ``second``, each from the median of ``rounds``
    calls, after one warm-up call each; the two alternate, so both see the same machine load."""
    first(), second()  # warm-up
    t_first, t_second = [], []
    for _ in range(rounds):
        t_first.append(timed(first))
        t_second.append(timed(second))
    return items / statistics.median(t_first), items / statistics.median(t_second)
