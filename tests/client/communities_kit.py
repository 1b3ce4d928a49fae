"""Items in groups, linked only inside their group: the small link graphs of the feature-spec and
featureless-label tests. Imported by name: ``from tests.client.communities_kit import NN``."""

from __future__ import annotations

import numpy as np

PATTERN = "(:Item)-[:LINK]-(:Item)"
NN = {PATTERN: [4]}
OPTIONS = {"id_property": "id"}
N, GROUPS, BASE = 120, 4, 100


def group_edges(rng: np.random.Generator, groups: np.ndarray) -> list[tuple[int, int]]:
    """``3 * N`` distinct pairs of positions (``a != b``, not both ``(a, b)`` and ``(b, a)``) of
    items of one group, sorted; draws from ``rng`` until it has them."""
    edges: set[tuple[int, int]] = set()
    while len(edges) < 3 * N:
        a, b = (int(x) for x in rng.integers(0, N, 2))
        if a != b and groups[a] == groups[b] and (b, a) not in edges:
            edges.add((a, b))
    return sorted(edges)


def cross_group_pairs(
    rng: np.random.Generator, groups: np.ndarray, n: int
) -> list[tuple[int, int]]:
    """``n`` pairs of ids (``BASE`` + position) of items of different groups, drawn from ``rng``."""
    pairs = []
    while len(pairs) < n:
        a, b = (int(x) for x in rng.integers(0, N, 2))
        if groups[a] != groups[b]:
            pairs.append((BASE + a, BASE + b))
    return pairs
