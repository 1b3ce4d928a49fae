"""``tf_features.structural_write`` with ``options.changed_nodes``: the exact local recompute of a
label's FastRP embedding. After relationships are added and deleted, a node is added and a key
changes, writing only the label's nodes within reach of the changed nodes leaves every node's
stored vector equal -- bit for bit -- to the whole label's call on the changed graph, through the
embedded runtime and the client-side code over Bolt (ArcadeDB)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from memgraph_tf.client import EmbeddedSource
from memgraph_tf.client.structural import structural_features, write_structural_features
from memgraph_tf.embedded import EmbeddedGraph
from memgraph_tf.errors import GraphDataError

N = 80
PROP = "fastrp"
CALL = {"id_property": "id", "features": ["fastrp"], "dimension": 16, "seed": 5}


def chain_graph() -> tuple[EmbeddedGraph, list[int]]:
    """``N`` ``:Item`` nodes (``id`` 1000 + position) on a path, and
    a ``:Tag`` node (no id) on every 7th item: FastRP walks through nodes of any label."""
    g = EmbeddedGraph()
    items = [g.add_node(["Item"], {"id": 1000 + i}) for i in range(N)]
    for i in range(N - 1):
        g.add_edge(items[i], items[i + 1], "LINK")
    for i in range(0, N, 7):
        g.add_edge(g.add_node(["Tag"], {}), items[i], "TAGGED")
    return g, items


def change(g: EmbeddedGraph, items: list[int]) -> list[int]:
    """A new item linked to items 40 and 41, the relationship 20->21 deleted, item 60's key
    changed; returns the changed nodes (the nodes and relationship endpoints a log names)."""
    new = g.add_node(["Item"], {"id": 5000})
    g.add_edge(new, items[40], "LINK")
    g.add_edge(items[41], new, "LINK")
    (eid,) = [e for e, (a, b, _) in enumerate(g.edges()) if (a, b) == (items[20], items[21])]
    g.delete_edge(eid)
    g.set_property(items[60], "id", 6000)
    return [new, items[40], items[41], items[20], items[21], items[60]]


def stored(g: EmbeddedGraph) -> dict[int, list[float] | None]:
    return {i: g.get_property(i, PROP) for i in g.nodes("Item")}


def check_local_equals_full(source, g: EmbeddedGraph, items: list[int]) -> None:
    write_structural_features(source, "Item", {**CALL, "write_property": PROP})
    changed = change(g, items)
    local = write_structural_features(
        source, "Item", {**CALL, "write_property": PROP, "changed_nodes": changed}
    )
    got = stored(g)
    full = structural_features(source, "Item", CALL)
    by_key = dict(zip(full.node_ids.tolist(), full.features.tolist()))
    expected = {i: by_key[g.get_property(i, "id")] for i in g.nodes("Item")}
    assert got == expected  # bit for bit, the new node included
    updated = local["updated"]
    assert len(updated) == local["nodes"] and updated == sorted(updated)
    assert 0 < len(updated) < N  # the region, not the label
    assert set(changed) - {items[60]} <= set(updated) and items[5] not in updated


def test_local_recompute_equals_a_full_one_embedded():
    g, items = chain_graph()
    check_local_equals_full(EmbeddedSource(g), g, items)


def test_without_changed_nodes_every_node_is_written_and_updated_is_null():
    g, _ = chain_graph()
    answer = write_structural_features(EmbeddedSource(g), "Item", {**CALL, "write_property": PROP})
    assert answer["nodes"] == N and answer["updated"] is None


def test_an_empty_change_writes_nothing():
    g, _ = chain_graph()
    call = {**CALL, "write_property": PROP, "changed_nodes": []}
    answer = write_structural_features(EmbeddedSource(g), "Item", call)
    assert answer["nodes"] == 0 and answer["updated"] == []
    assert all(v is None for v in stored(g).values())


def test_a_bad_changed_node_is_named():
    g, _ = chain_graph()
    call = {**CALL, "write_property": PROP, "changed_nodes": [1, "x"]}
    with pytest.raises(GraphDataError, match=r"options\.changed_nodes\[1\]: expected an internal"):
        write_structural_features(EmbeddedSource(g), "Item", call)


@pytest.mark.parametrize("at", [60, 6])  # outside the region of the changed node 60, inside it
def test_a_changed_key_another_node_of_the_label_holds_is_refused_as_the_full_call_refuses(at):
    g, items = chain_graph()
    source = EmbeddedSource(g)
    write_structural_features(source, "Item", {**CALL, "write_property": PROP})
    before = stored(g)
    g.set_property(items[at], "id", 1005)  # item 5's key
    with pytest.raises(GraphDataError) as full:
        structural_features(source, "Item", CALL)
    message = (
        "options.id_property: expected unique ids within a label, got id = 1005 on the :Item "
        f"nodes with internal ids {items[5]} and {items[at]}"
    )
    assert message in str(full.value)
    call = {**CALL, "write_property": PROP, "changed_nodes": [items[at]]}
    with pytest.raises(GraphDataError, match=re.escape(message)):
        write_structural_features(source, "Item", call)
    assert stored(g) == before  # nothing written


def test_local_vectors_are_the_full_ones_with_degree_scaling():
    """``normalization_strength`` reads the degrees of nodes one hop farther: still exact."""
    g, items = chain_graph()
    source = EmbeddedSource(g)
    call = {**CALL, "normalization_strength": -0.5, "iteration_weights": [0.5, 1.0, 1.0]}
    write_structural_features(source, "Item", {**call, "write_property": PROP})
    changed = change(g, items)
    write_structural_features(
        source, "Item", {**call, "write_property": PROP, "changed_nodes": changed}
    )
    full = structural_features(source, "Item", call)
    by_key = dict(zip(full.node_ids.tolist(), full.features.tolist()))
    assert stored(g) == {i: by_key[g.get_property(i, "id")] for i in g.nodes("Item")}
    assert np.isfinite(full.features).all()
