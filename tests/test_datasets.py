"""The datasets: the packaged Cora/Citeseer equal a fresh conversion of the Planetoid files, carry
the LINQS class names (checked by class size), load with no network and no ../shared; the synthetic
graph; loading a dataset into a real Bolt server through Cypher."""

from __future__ import annotations

import numpy as np
import pytest

from memgraph_tf import datasets
from memgraph_tf.client import loaders


def _shared_root(name: str):
    try:
        return datasets.planetoid_root(name)
    except FileNotFoundError as exc:
        pytest.skip(f"the Planetoid files are not beside the repository: {exc}")


@pytest.mark.parametrize("name", datasets.PACKAGED)
def test_packaged_file_equals_a_fresh_conversion_of_the_planetoid_files(name) -> None:
    fresh = datasets.compact_arrays(datasets.load_planetoid(name, _shared_root(name)))
    packaged = datasets.read_compact(datasets.packaged_path(name))
    assert sorted(packaged) == sorted(datasets.COMPACT_KEYS)
    for key in datasets.COMPACT_KEYS:
        assert packaged[key].dtype == fresh[key].dtype, key
        assert np.array_equal(packaged[key], fresh[key]), key


@pytest.mark.parametrize("name", datasets.PACKAGED)
def test_packaged_dataset_is_the_parsed_dataset(name) -> None:
    parsed = datasets.load_planetoid(name, _shared_root(name))
    packaged = datasets.load_dataset(name)
    assert np.array_equal(packaged.features, parsed.features)
    assert packaged.features.dtype == np.float32
    assert np.array_equal(packaged.labels, parsed.labels)
    assert packaged.split == parsed.split
    assert packaged.edges == parsed.edges
    assert packaged.class_names == parsed.class_names == datasets.CLASS_NAMES[name]


@pytest.mark.parametrize(
    "name, sizes",
    [
        (
            "cora",
            {
                "Theory": 351,
                "Reinforcement_Learning": 217,
                "Genetic_Algorithms": 418,
                "Neural_Networks": 818,
                "Probabilistic_Methods": 426,
                "Case_Based": 298,
                "Rule_Learning": 180,
            },
        ),
        ("citeseer", {"AI": 249, "ML": 590, "IR": 668, "DB": 701, "Agents": 596, "HCI": 508}),
    ],
)
def test_class_names_match_the_linqs_class_sizes(name, sizes) -> None:
    data = datasets.load_dataset(name)
    counts = np.bincount(data.labels[data.labels >= 0], minlength=len(sizes))
    assert {data.class_names[c]: int(n) for c, n in enumerate(counts)} == sizes
    assert len(set(sizes.values())) == len(sizes)  # all distinct: the sizes fix the mapping
    datasets.check_class_sizes(data)


def test_packaged_datasets_have_the_standard_split() -> None:
    cora, citeseer = datasets.load_dataset("cora"), datasets.load_dataset("citeseer")
    assert (cora.num_nodes, len(cora.edges), cora.features.shape[1], cora.num_classes) == (
        2708,
        5278,
        1433,
        7,
    )
    assert (citeseer.num_nodes, citeseer.features.shape[1], citeseer.num_classes) == (3327, 3703, 6)
    for data, train in ((cora, 140), (citeseer, 120)):
        assert len(data.ids("train")) == train
        assert data.ids("val") == list(range(train, train + 500))
        assert len(data.ids("test")) == 1000
    assert int((citeseer.labels < 0).sum()) == 15  # Citeseer's isolated test-range nodes


def test_check_class_sizes_refuses_a_wrong_mapping() -> None:
    data = datasets.load_dataset("cora")
    swapped = np.where(data.labels == 0, 1, np.where(data.labels == 1, 0, data.labels))
    wrong = datasets.Planetoid(
        "cora", data.features, swapped, data.split, data.edges, data.class_names
    )
    with pytest.raises(
        ValueError, match=r"cora: expected class sizes \(351, 217, .*got \(217, 351, "
    ):
        datasets.check_class_sizes(wrong)


def test_packaged_datasets_need_no_files_beside_the_repository(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("MEMGRAPH_TF_DATASETS", str(tmp_path / "nowhere"))
    monkeypatch.setattr(datasets, "__file__", str(tmp_path / "pkg" / "datasets.py"))

    def no_pickles(*args, **kwargs):
        raise AssertionError("the packaged form must not read the Planetoid pickles")

    monkeypatch.setattr(datasets, "load_planetoid", no_pickles)
    with pytest.raises(FileNotFoundError, match=r"expected ind\.cora\.\*"):
        datasets.planetoid_root("cora")
    assert datasets.load_dataset("cora").num_nodes == 2708
    assert datasets.load_dataset("citeseer").num_nodes == 3327


def test_planetoid_root_error_lists_what_it_tried(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("MEMGRAPH_TF_DATASETS", str(tmp_path / "nowhere"))
    monkeypatch.setattr(datasets, "__file__", str(tmp_path / "pkg" / "datasets.py"))
    with pytest.raises(
        FileNotFoundError,
        match=r"expected ind\.cora\.\* in one of .*nowhere/planetoid, .*nowhere, ",
    ):
        datasets.planetoid_root()


def test_load_dataset_names_the_known_datasets() -> None:
    with pytest.raises(
        ValueError, match=r"dataset: expected one of cora, citeseer, synthetic, got 'pubmed'"
    ):
        datasets.load_dataset("pubmed")
    with pytest.raises(
        ValueError, match=r"expected one of cora, citeseer \(shipped in the package\), got 'x'"
    ):
        datasets.packaged_path("x")


def test_compact_form_round_trips_and_checks_its_input(tmp_path) -> None:
    data = datasets.synthetic()
    path = datasets.save_compact(data, tmp_path / "s.npz")
    back = datasets.from_compact(datasets.read_compact(path))
    assert np.array_equal(back.features, data.features)
    assert np.array_equal(back.labels, data.labels)
    assert (back.split, back.edges, back.class_names, back.name) == (
        data.split,
        data.edges,
        data.class_names,
        "synthetic",
    )
    halves = datasets.Planetoid("h", data.features * 0.5, data.labels, data.split, data.edges)
    with pytest.raises(ValueError, match=r"h: expected 0/1 features"):
        datasets.compact_arrays(halves)
    arrays = datasets.compact_arrays(data)
    arrays["format"] = np.asarray(2, dtype=np.int32)
    np.savez(tmp_path / "v2.npz", **arrays)
    with pytest.raises(ValueError, match=r"v2\.npz: expected format 1, got 2"):
        datasets.read_compact(tmp_path / "v2.npz")
    del arrays["edges"]
    np.savez(tmp_path / "short.npz", **arrays)
    with pytest.raises(ValueError, match=r"short\.npz: expected the arrays .*, missing edges"):
        datasets.read_compact(tmp_path / "short.npz")


def test_synthetic_graph_is_reproducible_homophilous_and_split() -> None:
    a, b = datasets.synthetic(), datasets.synthetic()
    assert np.array_equal(a.features, b.features) and a.edges == b.edges and a.split == b.split
    assert datasets.synthetic(seed=1).edges != a.edges
    assert a.num_classes == 4 and a.class_names == datasets.SYNTHETIC_CLASSES
    assert [len(a.ids(s)) for s in ("train", "val", "test")] == [80, 80, 160]
    assert np.bincount(a.labels[a.ids("train")]).tolist() == [20, 20, 20, 20]
    same = np.mean([a.labels[x] == a.labels[y] for x, y in a.edges])
    assert same > 0.8  # what makes the labels learnable from neighbourhoods
    with pytest.raises(ValueError, match=r"synthetic: expected num_nodes >= 300"):
        datasets.synthetic(num_nodes=10)


def test_planetoid_graph_of_the_synthetic_dataset() -> None:
    data = datasets.synthetic()
    graph = datasets.planetoid_graph("synthetic")
    assert graph.node_count == data.num_nodes and graph.edge_count == len(data.edges)
    x, y = data.edges[0]
    assert y in graph.neighbours(x)
    assert graph.get_property(7, "label") == int(data.labels[7])
    assert graph.get_property(7, "features") == data.features[7].tolist()
    assert graph.get_property(7, "split") == data.split[7]


@pytest.mark.arcadedb
def test_load_into_graph_writes_the_dataset_through_cypher(bolt_source) -> None:
    data = datasets.synthetic()
    calls = []
    done = loaders.load_into_graph(
        bolt_source,
        data,
        label="SynPaper",
        edge_type="SYN_CITES",
        batch_size=150,
        progress=lambda kind, n: calls.append((kind, n)),
    )
    assert done == {"nodes": 400, "edges": len(data.edges)}
    assert calls[:3] == [("nodes", 150), ("nodes", 150), ("nodes", 100)]
    assert sum(n for kind, n in calls if kind == "edges") == len(data.edges)
    [row] = bolt_source.run(
        "MATCH (n:SynPaper {id: 7}) RETURN n.label AS label, n.features AS f, n.split AS s"
    )
    assert (row["label"], row["f"], row["s"]) == (
        int(data.labels[7]),
        data.features[7].tolist(),
        data.split[7],
    )
    [row] = bolt_source.run("MATCH (:SynPaper)-[e:SYN_CITES]->(:SynPaper) RETURN count(e) AS c")
    assert row["c"] == len(data.edges)
    with pytest.raises(
        ValueError, match=r"label 'SynPaper': expected no existing :SynPaper nodes, got 400"
    ):
        loaders.load_into_graph(bolt_source, data, label="SynPaper", edge_type="SYN_CITES")
    loaders.load_into_graph(
        bolt_source, data, label="SynPaper", edge_type="SYN_CITES", replace=True
    )
    [row] = bolt_source.run("MATCH (n:SynPaper) RETURN count(n) AS c")
    assert row["c"] == 400
