"""tf_features.structural / structural_write in the embedded runtime: degrees per relationship type
and direction, the FastRP formula checked against an independent numpy computation, the inductive
property (a new node gets its vector from its key and neighbourhood, nothing else moves beyond its
reach), held-out relationships, the write into a numeric feature property, abort checks and the
errors naming parameter, value and allowed ones."""

from __future__ import annotations

import math

import numpy as np
import pytest

from memgraph_tf import blob
from memgraph_tf.client import EmbeddedSource
from memgraph_tf.client.structural import structural_features, write_structural_features
from memgraph_tf.embedded import EmbeddedGraph, ProcedureError
from memgraph_tf.errors import GraphDataError
from memgraph_tf.procedures.structural import random_vector


def _graph(edges, n, extra=()):
    g = EmbeddedGraph()
    ids = [g.add_node(["P"], {"id": 100 + i}) for i in range(n)]
    for a, b in edges:
        g.add_edge(ids[a], ids[b], "R")
    for a, b, t in extra:
        g.add_edge(ids[a], ids[b], t)
    return g


def _fastrp(adj, keys, seed, dim, weights, self_weight=0.0, beta=0.0):
    """An independent numpy FastRP over an adjacency dict (node -> neighbour list)."""
    nodes = sorted(adj)
    deg = np.array([max(len(adj[v]), 1) for v in nodes], dtype=np.float64)
    r = np.array([random_vector(seed, keys[v], dim) for v in nodes])
    n0 = r / np.linalg.norm(r, axis=1, keepdims=True) * (deg**beta)[:, None]
    a = np.zeros((len(nodes), len(nodes)))
    for v in nodes:
        for u in adj[v]:
            a[v, u] += 1
    out, cur = self_weight * n0, n0
    for w in weights:
        cur = a @ cur
        norm = np.linalg.norm(cur, axis=1, keepdims=True)
        cur = np.divide(cur, norm, out=np.zeros_like(cur), where=norm > 0)
        out = out + w * cur
    return out


def test_random_vectors_are_sparse_signed_and_a_function_of_seed_and_key():
    v = random_vector(7, 12345, 3000)
    assert set(v) == {-1.0, 0.0, 1.0}
    share = np.mean(np.array(v) != 0)
    assert abs(share - 1 / 3) < 0.03  # two of the six residues
    assert random_vector(7, 12345, 3000) == v
    assert random_vector(7, 12346, 3000) != v
    assert random_vector(8, 12345, 3000) != v
    assert random_vector(7, 12345, 10) == v[:10]


def test_degrees_per_type_and_direction_and_the_fastrp_formula():
    edges = [(0, 1), (1, 2), (2, 3), (3, 0), (0, 2), (4, 3)]
    g = _graph(edges, 6, extra=[(5, 0, "S"), (5, 1, "S")])
    opts = {"id_property": "id", "seed": 3, "dimension": 12, "iteration_weights": [1.0, 0.5]}
    got = structural_features(EmbeddedSource(g), "P", {**opts, "degree": "count"})
    assert got.columns == [
        "degree:R:out",
        "degree:R:in",
        "degree:S:out",
        "degree:S:in",
        *[f"fastrp:{j}" for j in range(12)],
    ]
    np.testing.assert_array_equal(got.node_ids, np.arange(100, 106))
    out_r = [sum(a == i for a, _ in edges) for i in range(6)]
    in_r = [sum(b == i for _, b in edges) for i in range(6)]
    np.testing.assert_array_equal(got.features[:, 0], out_r)
    np.testing.assert_array_equal(got.features[:, 1], in_r)
    np.testing.assert_array_equal(
        got.features[:, 2:4], [[0, 1], [0, 1], [0, 0], [0, 0], [0, 0], [2, 0]]
    )
    adj = {i: [] for i in range(6)}
    for a, b in [*edges, (5, 0), (5, 1)]:
        adj[a].append(b)
        adj[b].append(a)
    want = _fastrp(adj, {i: 100 + i for i in range(6)}, 3, 12, [1.0, 0.5])
    np.testing.assert_allclose(got.features[:, 4:], want, rtol=1e-12, atol=1e-12)
    logs = structural_features(EmbeddedSource(g), "P", {**opts, "features": ["degree"]})
    np.testing.assert_array_equal(logs.features[:, 0], [math.log1p(d) for d in out_r])
    beta = {**opts, "features": ["fastrp"], "self_weight": 0.5, "normalization_strength": -0.5}
    got = structural_features(EmbeddedSource(g), "P", beta)
    want = _fastrp(adj, {i: 100 + i for i in range(6)}, 3, 12, [1.0, 0.5], 0.5, -0.5)
    np.testing.assert_allclose(got.features, want, rtol=1e-12, atol=1e-12)


def test_a_new_node_gets_its_vector_without_moving_nodes_out_of_its_reach():
    path = [(i, i + 1) for i in range(7)]  # 0 - 1 - ... - 7
    opts = {"id_property": "id", "seed": 1, "dimension": 16, "iteration_weights": [1.0, 1.0]}
    before = structural_features(EmbeddedSource(_graph(path, 8)), "P", opts)
    g = _graph(path, 8)
    new = g.add_node(["P"], {"id": 999})
    g.add_edge(new, 0, "R")
    after = structural_features(EmbeddedSource(g), "P", opts)
    assert after.node_ids.tolist() == [*range(100, 108), 999]
    # two iterations: nodes 0..2 see the new node, nodes 3..7 are unchanged bit for bit
    assert after.features[3:8].tobytes() == before.features[3:8].tobytes()
    assert not np.array_equal(after.features[:3], before.features[:3])
    adj = {
        i: [j for a, b in [*path, (8, 0)] for i2, j in ((a, b), (b, a)) if i2 == i]
        for i in range(9)
    }
    keys = {**{i: 100 + i for i in range(8)}, 8: 999}
    want = _fastrp(adj, keys, 1, 16, [1.0, 1.0])
    np.testing.assert_allclose(after.features[:, 2:], want, rtol=1e-12, atol=1e-12)


def test_held_out_relationships_are_left_out():
    g = _graph([(0, 1), (1, 2), (2, 0)], 3)
    source = EmbeddedSource(g)
    opts = {"id_property": "id", "dimension": 8, "degree": "count"}
    full = structural_features(source, "P", opts)
    [first] = [e for e in g.edges("R") if e[:2] == (0, 1)]
    source.split_edges("(:P)-[:R]-(:P)", {"seed": 0, "id_property": "id", "test_fraction": 0.34})
    held = structural_features(source, "P", {**opts, "exclude_splits": ["test"]})
    assert held.features[:, :2].sum() == full.features[:, :2].sum() - 2  # one edge: out + in
    unsplit = structural_features(source, "P", {**opts, "exclude_splits": ["val"]})
    assert unsplit.features.tobytes() == full.features.tobytes()
    assert first


def test_the_written_property_is_a_numeric_feature():
    g = _graph([(0, 1), (1, 2)], 3)
    source = EmbeddedSource(g)
    opts = {"id_property": "id", "seed": 2, "dimension": 4, "write_property": "s"}
    answer = write_structural_features(source, "P", opts)
    assert answer == {"nodes": 3, "width": 6, "columns": answer["columns"], "updated": None}
    read = structural_features(
        source, "P", {k: v for k, v in opts.items() if k != "write_property"}
    )
    assert [g.get_property(i, "s") for i in range(3)] == read.features.tolist()
    packed = blob.unpack(
        source.pack_blob([100, 101, 102], ["s"], {"id_property": "id", "dtype": "float64"})
    )
    np.testing.assert_array_equal(packed["features"], read.features)


def test_abort_is_checked_in_the_loops():
    g = _graph([(i, (i * 7 + 1) % 600) for i in range(600)], 600)
    g.request_abort()
    with pytest.raises(ProcedureError, match="AbortError"):
        g.call("tf_features.structural", "P", {"dimension": 4})
    g.request_abort(False)
    assert len(g.call("tf_features.structural", "P", {"dimension": 4})) == 600


@pytest.mark.parametrize(
    "label, options, message",
    [
        (None, {}, r"label: expected a non-empty label name, got null"),
        (
            "P",
            {"dim": 3},
            r"options: unknown option 'dim' for tf_features.structural \(allowed: .*'dimension'",
        ),
        (
            "P",
            {"dimension": 0},
            r"options.dimension: expected an integer from 1 to 4096, got int 0",
        ),
        (
            "P",
            {"features": ["pagerank"]},
            r"options.features\[0\]: expected a non-empty list of 'degree', 'fastrp', "
            r"got str 'pagerank'",
        ),
        (
            "P",
            {"degree": "sqrt"},
            r"options.degree: expected one of 'log1p', 'count', got str 'sqrt'",
        ),
        (
            "P",
            {"iteration_weights": []},
            r"options.iteration_weights: expected a list of 1 to 8 numbers, got list \[\]",
        ),
        (
            "P",
            {"iteration_weights": [1, "x"]},
            r"options.iteration_weights\[1\]: expected a finite number, got str 'x'",
        ),
        ("P", {"seed": 1.5}, r"options.seed: expected an integer, got float 1.5"),
        (
            "P",
            {"write_property": "s"},
            r"options: unknown option 'write_property' for tf_features.structural ",
        ),
        ("Q", {}, r"label: no node has the label 'Q'"),
        (
            "P",
            {"id_property": "missing"},
            r"node 0 \(:P\) property 'missing' \(options.id_property\): "
            r"expected an integer id, got no value",
        ),
    ],
)
def test_bad_arguments_name_the_parameter_value_and_allowed_ones(label, options, message):
    source = EmbeddedSource(_graph([(0, 1)], 2))
    with pytest.raises(GraphDataError, match=message):
        structural_features(source, label, options)


def test_the_write_procedure_needs_a_property_and_writes_nothing_on_bad_input():
    g = _graph([(0, 1)], 2)
    source = EmbeddedSource(g)
    with pytest.raises(GraphDataError, match=r"options.write_property: expected the property name"):
        write_structural_features(source, "P", {})
    with pytest.raises(GraphDataError, match=r"options.dimension: expected an integer"):
        write_structural_features(source, "P", {"write_property": "s", "dimension": -1})
    assert g.get_property(0, "s") is None
