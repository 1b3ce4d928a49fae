"""Loaders: the Planetoid files (memgraph_tf.datasets) and edge lists into an EmbeddedGraph, then
tf_features over them."""

from __future__ import annotations

import numpy as np
import pytest

from memgraph_tf import blob
from memgraph_tf.datasets import load_planetoid, planetoid_graph
from memgraph_tf.embedded import EmbeddedGraph

pytestmark = pytest.mark.filterwarnings("ignore:Please import `csr_matrix`:DeprecationWarning")


@pytest.fixture(scope="module")
def cora(planetoid_root):
    return planetoid_graph("cora", planetoid_root)


def test_cora_loads_with_the_standard_split(cora, planetoid_root):
    assert cora.node_count == 2708
    splits = [cora.get_property(i, "split") for i in range(cora.node_count)]
    assert splits[:140] == ["train"] * 140 and splits[140:640] == ["val"] * 500
    test_index = [int(x) for x in (planetoid_root / "ind.cora.test.index").read_text().split()]
    assert sorted(i for i, s in enumerate(splits) if s == "test") == sorted(test_index)
    labels = {cora.get_property(i, "label") for i in range(cora.node_count)}
    assert labels == set(range(7))
    assert len(cora.get_property(0, "features")) == 1433
    assert cora.labels(0) == ["Paper"] and cora.get_property(17, "id") == 17
    # undirected pairs stored once: the 'both' neighbourhood is the Planetoid adjacency list
    import pickle

    with open(planetoid_root / "ind.cora.graph", "rb") as f:
        adjacency = pickle.load(f, encoding="latin1")
    for node in (0, 5, 1708, 2707):
        assert cora.neighbours(node) == sorted(set(adjacency[node]))


def test_cora_test_rows_follow_test_index_order(cora, planetoid_root):
    import pickle

    with open(planetoid_root / "ind.cora.tx", "rb") as f:
        tx = pickle.load(f, encoding="latin1").toarray()
    with open(planetoid_root / "ind.cora.ty", "rb") as f:
        ty = pickle.load(f, encoding="latin1")
    test_index = [int(x) for x in (planetoid_root / "ind.cora.test.index").read_text().split()]
    for row in (0, 1, 500, 999):
        node = test_index[row]
        np.testing.assert_array_equal(
            np.asarray(cora.get_property(node, "features"), np.float32), tx[row]
        )
        assert cora.get_property(node, "label") == int(np.argmax(ty[row]))


def test_cora_through_tf_features(cora):
    [row] = cora.call("tf_features.pack", [0, 2707], ["features"], {"label_property": "label"})
    out = blob.unpack_b64(row["blob"])
    assert out["features"].shape == (2, 1433)
    np.testing.assert_array_equal(
        out["features"][1], np.asarray(cora.get_property(2707, "features"), np.float32)
    )
    [row] = cora.call(
        "tf_features.sample", [0, 1, 2], [10, 5], ["features"], {"seed": 0, "direction": "both"}
    )
    out = blob.unpack_b64(row["blob"])
    assert out["features_2"].shape == (3, 10, 5, 1433)
    for parent, children, mask in zip(
        out["ids_1"].reshape(-1), out["ids_2"].reshape(-1, 5), out["mask_2"].reshape(-1, 5)
    ):
        if parent >= 0:
            assert set(children[mask].tolist()) <= set(cora.neighbours(int(parent)))


def test_citeseer_isolated_test_range_nodes(planetoid_root):
    g = planetoid_graph("citeseer", planetoid_root)
    assert g.node_count == 3327
    missing = [i for i in range(g.node_count) if g.get_property(i, "label") == -1]
    assert len(missing) == 15  # test-range indices with no row in tx
    assert all(g.get_property(i, "split") == "none" for i in missing)
    assert not any(g.get_property(missing[0], "features"))


def test_planetoid_missing_file(tmp_path):
    with pytest.raises(
        FileNotFoundError, match=r"Planetoid 'cora': expected .*ind.cora.x, got no such file"
    ):
        load_planetoid("cora", tmp_path)
    with pytest.raises(
        FileNotFoundError, match=r"Planetoid 'cora': expected .*ind.cora.x, got no such file"
    ):
        planetoid_graph("cora", tmp_path)


def test_load_planetoid_is_the_graph_s_data(cora, planetoid_root):
    data = load_planetoid("cora", planetoid_root)
    assert data.name == "cora" and data.num_nodes == cora.node_count == 2708
    assert data.features.dtype == np.float32 and data.features.shape == (2708, 1433)
    assert data.labels.dtype == np.int64 and set(data.labels.tolist()) == set(range(7))
    assert (
        data.split.count("train") == 140
        and data.split.count("val") == 500
        and data.split.count("test") == 1000
    )
    assert len(data.edges) == cora.edge_count and all(a <= b for a, b in data.edges)
    assert len(set(data.edges)) == len(data.edges)
    for node in (0, 1708, 2707):
        np.testing.assert_array_equal(
            np.asarray(cora.get_property(node, "features"), np.float32), data.features[node]
        )
        assert cora.get_property(node, "label") == data.labels[node]
        assert cora.get_property(node, "split") == data.split[node]


def test_edge_list_file(tmp_path):
    path = tmp_path / "edges.txt"
    path.write_text("# a ring\n0 1\n1 2\n\n2 0   # closing\n")
    g = EmbeddedGraph.from_edge_list(
        path, num_nodes=4, node_properties={"f": [[1.0], [2.0], [3.0], [4.0]]}
    )
    assert g.node_count == 4 and g.edge_count == 3
    assert g.neighbours(0) == [1, 2] and g.neighbours(3) == []
    assert g.neighbours(0, direction="out") == [1] and g.neighbours(0, ["OTHER"]) == []
    [row] = g.call("tf_features.sample", [0, 3], [2], ["f"], {"seed": 1})
    out = blob.unpack_b64(row["blob"])
    assert out["ids_1"].tolist() == [[1, 2], [-1, -1]]
    np.testing.assert_array_equal(out["features_1"][0], [[2.0], [3.0]])


def test_edge_list_errors(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_text("0 1\n1 x\n")
    with pytest.raises(ValueError, match=r"bad.txt:2: expected two integer node ids, got '1 x'"):
        EmbeddedGraph.from_edge_list(path)
    with pytest.raises(
        ValueError, match=r"num_nodes: expected > 5 \(the largest id in edges\), got 3"
    ):
        EmbeddedGraph.from_edge_list([(0, 5)], num_nodes=3)
    with pytest.raises(
        ValueError, match=r"node_properties\['f'\]: expected 6 values \(one per node\), got 2"
    ):
        EmbeddedGraph.from_edge_list([(0, 5)], node_properties={"f": [1, 2]})
    with pytest.raises(ValueError, match=r"edges\[1\]: expected node ids >= 0, got \(2, -1\)"):
        EmbeddedGraph.from_edge_list([(0, 1), (2, -1)])
    path.write_text("0 1\n# negative\n-3 1\n")
    with pytest.raises(ValueError, match=r"bad.txt:3: expected node ids >= 0, got '-3 1'"):
        EmbeddedGraph.from_edge_list(path)
