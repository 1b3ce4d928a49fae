"""Items in groups, linked only inside their group: the small link graphs of the feature-spec and
featureless-label tests. Imported by name: ``from tests.client.communities_kit import NN``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

PATTERN = "(:Item)-[:LINK]-(:Item)"
NN = {PATTERN: [4]}
OPTIONS = {"id_property": "id"}
N, GROUPS, BASE = 120, 4, 100


def item_graph(
    node_properties: Callable[[np.random.Generator, int], dict[str, Any]],
) -> tuple[Any, np.random.Generator, np.ndarray, list[tuple[int, int]]]:
    """``(graph, rng, groups, edges)``: an embedded graph of ``N`` ``:Item`` nodes at positions
    ``0..N-1`` (``id``: ``BASE`` + position, plus ``node_properties(rng, group)``) in ``GROUPS``
    groups (``groups[i]``: item ``i``'s), and the :func:`group_edges` drawn after them, not yet
    added (the caller gives them their properties); ``rng`` (seed 0) continues for the caller."""
    from memgraph_tf.embedded import EmbeddedGraph

    rng = np.random.default_rng(0)
    groups = np.arange(N) % GROUPS
    g = EmbeddedGraph()
    for i in range(N):
        g.add_node(["Item"], {"id": BASE + i, **node_properties(rng, int(groups[i]))})
    return g, rng, groups, group_edges(rng, groups)


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


def split_pairs(source: Any, pos: np.ndarray, neg: np.ndarray) -> tuple:
    """``(source, training pairs, validation pairs, validation labels)``: the first 80% of the
    positive pairs train; the rest and as many negatives validate."""
    cut = int(0.8 * len(pos))
    val = np.concatenate([pos[cut:], neg[cut:]])
    val_y = np.r_[np.ones(len(pos) - cut), np.zeros(len(pos) - cut)]
    return source, pos[:cut], val, val_y


def train_items(graph: tuple, properties: Any, num_neighbors: Any = None, **kwargs: Any) -> Any:
    """``train_link_predictor`` on the ``:Item`` pairs of ``graph`` (as :func:`split_pairs`
    gives it) with :data:`OPTIONS`, ``num_neighbors`` (default :data:`NN`) and ``kwargs``."""
    from memgraph_tf.client.link_prediction import train_link_predictor

    source, train, val, val_y = graph
    nn = NN if num_neighbors is None else num_neighbors
    return train_link_predictor(
        source, "Item", nn, properties, train, val, val_y, options=OPTIONS, **kwargs
    )
