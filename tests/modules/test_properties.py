"""Property-based checks of tf_features.sample on random graphs (through the embedded runtime), and
the graph-access protocol contract: another GraphAccess over the same graph gives the same bytes."""

from __future__ import annotations

import random

import _memgraph_tf_modules_cases as cases  # registered by conftest.py
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memgraph_tf import blob, procedures


@st.composite
def graphs(draw):
    n = draw(st.integers(1, 10))
    nodes = [(["N"], {"f": [float(i), float(draw(st.integers(-5, 5)))]}) for i in range(n)]
    edges = draw(
        st.lists(
            st.tuples(st.integers(0, n - 1), st.integers(0, n - 1), st.sampled_from(["A", "B"])),
            max_size=25,
        )
    )
    return cases.GraphSpec(nodes, edges)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    spec=graphs(),
    data=st.data(),
    fanouts=st.lists(st.integers(1, 4), min_size=1, max_size=3),
    direction=st.sampled_from(["out", "in", "both"]),
    edge_types=st.sampled_from([None, ["A"], ["B"], ["A", "B"]]),
    replace=st.booleans(),
    low_degree=st.sampled_from(["pad", "resample"]),
    seed=st.integers(0, 2**31),
)
def test_random_graph_samples(
    spec, data, fanouts, direction, edge_types, replace, low_degree, seed
):
    runner = cases.EmbeddedRunner()
    runner.build(spec)
    seeds = data.draw(st.lists(st.integers(0, len(spec.nodes) - 1), min_size=1, max_size=4))
    opts = {
        "seed": seed,
        "direction": direction,
        "edge_types": edge_types,
        "replace": replace,
        "low_degree": low_degree,
    }
    [row] = runner.call("tf_features.sample", seeds, fanouts, ["f"], opts)
    out = blob.unpack_b64(row["blob"])
    cases.check_sample_structure(
        runner, spec, seeds, fanouts, ["f"], out, edge_types, direction, pad=low_degree == "pad"
    )
    if not replace:  # no neighbour twice under one parent, except resampled fill-ins
        ids_1 = out["ids_1"]
        for i, s in enumerate(seeds):
            distinct = len(spec.neighbours(s, edge_types, direction))
            real = [k for k in ids_1[i].tolist() if k != -1]
            assert len(set(real[: min(distinct, fanouts[0])])) == min(distinct, fanouts[0])
    assert runner.call("tf_features.sample", seeds, fanouts, ["f"], opts)[0]["blob"] == row["blob"]
    per_node = runner.call("tf_features.sample_per_node", seeds, fanouts, ["f"], opts)
    for i, r in enumerate(per_node):
        part = blob.unpack_b64(r["blob"])
        for name, value in part.items():
            np.testing.assert_array_equal(value[0], out[name][i])


class ShuffledDictAccess:
    """A GraphAccess over plain dicts that hands neighbours out shuffled and repeated: what a Cypher
    fallback might see. The shared code must still produce the module's bytes."""

    def __init__(self, spec, seed):
        self.spec = spec
        self.rng = random.Random(seed)

    def node_name(self, key):
        return procedures.node_name(key, None)

    def check_abort(self):
        pass

    def properties(self, keys, names):
        return [[self.spec.nodes[k][1].get(n) for n in names] for k in keys]

    def neighbours(self, keys, read):
        out = []
        for k in keys:
            found = list(self.spec.neighbours(k, read.edge_types, read.direction)) * 2
            self.rng.shuffle(found)
            out.append(found)
        return out


@settings(max_examples=25, deadline=None)
@given(spec=graphs(), seed=st.integers(0, 1000), shuffle=st.integers(0, 1000))
def test_another_graph_access_gives_the_same_bytes(spec, seed, shuffle):
    runner = cases.EmbeddedRunner()
    runner.build(spec)
    seeds = list(range(len(spec.nodes)))
    opts = {"seed": seed, "direction": "both"}
    access = ShuffledDictAccess(spec, shuffle)
    [row] = runner.call("tf_features.sample", seeds, [3, 2], ["f"], opts)
    assert blob.b64encode(procedures.sample_blob(access, seeds, [3, 2], ["f"], opts)) == row["blob"]
    [row] = runner.call("tf_features.pack", seeds, ["f"], {})
    assert blob.b64encode(procedures.pack_blob(access, seeds, ["f"], {})) == row["blob"]
    rows = runner.call("tf_features.sample_per_node", seeds, [2], ["f"], opts)
    mine = procedures.sample_per_node_blobs(access, seeds, [2], ["f"], opts)
    assert [(r["node_id"], r["blob"]) for r in rows] == [(k, blob.b64encode(b)) for k, b in mine]
