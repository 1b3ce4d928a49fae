"""Shared case definitions for the tf_features suites: the embedded runtime and real Memgraph
(Bolt).

A *runner* builds a small graph from a spec and calls procedures; nodes in arguments are written as
``V(i)`` (the vertex of spec node i) or ``I(i)`` (its internal id), which each runner maps to its
own graph. Expected values are derived from the spec, never copied from a run.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from memgraph_tf import blob


@dataclasses.dataclass(frozen=True)
class V:
    """The vertex of spec node i."""

    i: int


@dataclasses.dataclass(frozen=True)
class I:  # noqa: E742 -- short on purpose, used inside argument lists
    """The internal id of spec node i."""

    i: int


@dataclasses.dataclass
class GraphSpec:
    nodes: list[tuple[list[str], dict[str, Any]]]
    edges: list[tuple[int, int, str]]

    def neighbours(self, i: int, edge_types=None, direction: str = "both") -> set[int]:
        """Reference neighbourhood straight from the spec."""
        out = set()
        for a, b, t in self.edges:
            if edge_types is not None and t not in edge_types:
                continue
            if a == i and direction in ("out", "both"):
                out.add(b)
            if b == i and direction in ("in", "both"):
                out.add(a)
        return out


def small_graph() -> GraphSpec:
    """6 papers; 0-4 linked both ways, mixed edge types, node 5 isolated."""
    nodes = []
    for i in range(6):
        nodes.append(
            (
                ["Paper"],
                {
                    "f": [float(i), i + 0.5, -1.0 / (i + 1)],
                    "x": i * 10,
                    "w": 0.1 * i,
                    "name": f"paper-{i}",
                    "y": i % 3,
                    "pid": 100 + i,
                },
            )
        )
    nodes.append((["Author"], {"pid": 100, "f": [9.0, 9.0]}))  # same pid, other label, shorter f
    edges = [
        (0, 1, "CITES"),
        (0, 2, "CITES"),
        (3, 0, "CITES"),
        (1, 2, "CITES"),
        (2, 3, "LINKS"),
        (4, 0, "LINKS"),
        (0, 4, "CITES"),
    ]
    return GraphSpec(nodes, edges)


def star_graph(leaves: int = 40) -> GraphSpec:
    """Hub 0 with ``leaves`` leaves; leaf j also links to leaf j+1 (a ring)."""
    nodes = [(["N"], {"f": [0.0, 0.0]})] + [
        (["N"], {"f": [float(j), 1.0]}) for j in range(1, leaves + 1)
    ]
    edges = [(0, j, "E") for j in range(1, leaves + 1)]
    edges += [(j, j % leaves + 1, "E") for j in range(1, leaves + 1)]
    return GraphSpec(nodes, edges)


def bad_values_graph() -> GraphSpec:
    """Nodes whose properties break the rules, one way each."""
    nodes = [
        (["B"], {"f": [1.0, 2.0], "s": 1.0, "label": 1}),  # 0: fine
        (["B"], {"f": [1.0, 2.0, 3.0], "s": 2.0}),  # 1: vector of another length, no label
        (
            ["B"],
            {"f": [1.0, "two"], "s": "text"},
        ),  # 2: non-numeric element; string where a number was
        (["B"], {"f": [float("nan"), 1.0], "s": float("inf")}),  # 3: NaN / inf
        (["B"], {"s": 4.0}),  # 4: no f
        (["B"], {"f": {"a": 1}, "s": 1e300}),  # 5: a map; 1e300 overflows float32
        (["B"], {"f": [1.0, 2.0], "s": 5.0, "label": "cat"}),  # 6: non-integer label
    ]
    return GraphSpec(nodes, [(0, 1, "E")])


# --------------------------------------------------------------------------------------------
# Runners
# --------------------------------------------------------------------------------------------


class Runner:
    """Builds a graph from a spec and calls tf_features procedures."""

    error_type: type[BaseException] = Exception

    def build(self, spec: GraphSpec) -> None:
        raise NotImplementedError

    def nid(self, i: int) -> int:
        """Internal id of spec node i."""
        raise NotImplementedError

    def call(self, procedure: str, *args: Any) -> list[dict[str, Any]]:
        raise NotImplementedError


class EmbeddedRunner(Runner):
    def __init__(self) -> None:
        from memgraph_tf.embedded import EmbeddedGraph, ProcedureError

        self.error_type = ProcedureError
        self._cls = EmbeddedGraph
        self.graph = None

    def build(self, spec: GraphSpec) -> None:
        self.graph = self._cls()
        self._ids = [self.graph.add_node(labels, props) for labels, props in spec.nodes]
        for a, b, t in spec.edges:
            self.graph.add_edge(self._ids[a], self._ids[b], t)

    def nid(self, i: int) -> int:
        return self._ids[i]

    def _map(self, value: Any) -> Any:
        if isinstance(value, V):
            return self.graph.node(self._ids[value.i])
        if isinstance(value, I):
            return self._ids[value.i]
        if isinstance(value, list):
            return [self._map(v) for v in value]
        return value

    def call(self, procedure: str, *args: Any) -> list[dict[str, Any]]:
        return self.graph.call(procedure, *[self._map(a) for a in args])


YIELDS = {
    "tf_features.pack": ["blob", "count"],
    "tf_features.sample": ["blob"],
    "tf_features.sample_per_node": ["node_id", "blob"],
    "tf_features.describe": ["feature_width", "dtype", "columns", "sections", "num_classes"],
}


class BoltRunner(Runner):
    """Runs against a real Memgraph with the neo4j driver (``MEMGRAPH_TF_TEST_MEMGRAPH_URI``)."""

    def __init__(self, driver: Any) -> None:
        import neo4j.exceptions

        self.error_type = neo4j.exceptions.Neo4jError
        self.driver = driver

    def build(self, spec: GraphSpec) -> None:
        with self.driver.session() as s:
            s.run("MATCH (n) DETACH DELETE n").consume()
            self._ids = []
            for labels, props in spec.nodes:
                label_text = "".join(f":`{label}`" for label in labels)
                rec = s.run(
                    f"CREATE (v{label_text}) SET v = $props RETURN id(v) AS id",
                    props=_bolt_props(props),
                ).single()
                self._ids.append(rec["id"])
            for a, b, t in spec.edges:
                s.run(
                    f"MATCH (a), (b) WHERE id(a) = $a AND id(b) = $b CREATE (a)-[:`{t}`]->(b)",
                    a=self._ids[a],
                    b=self._ids[b],
                ).consume()

    def nid(self, i: int) -> int:
        return self._ids[i]

    def call(self, procedure: str, *args: Any) -> list[dict[str, Any]]:
        params: dict[str, Any] = {}
        prefix = ""
        call_args = []
        for k, arg in enumerate(args):
            if k == 0 and isinstance(arg, list) and arg and all(isinstance(v, V) for v in arg):
                # collect() keeps the UNWIND order, so the procedure gets the vertices as listed
                params["ids"] = [self._ids[v.i] for v in arg]
                prefix = (
                    "UNWIND range(0, size($ids) - 1) AS i MATCH (n) WHERE id(n) = $ids[i] "
                    "WITH i, n ORDER BY i WITH collect(n) AS vs "
                )
                call_args.append("vs")
            else:
                params[f"a{k}"] = _bolt_args(arg, self._ids)
                call_args.append(f"$a{k}")
        fields = ", ".join(f"`{f}`" for f in YIELDS[procedure])
        query = f"{prefix}CALL {procedure}({', '.join(call_args)}) YIELD {fields} RETURN {fields}"
        with self.driver.session() as s:
            return [dict(r) for r in s.run(query, **params)]


def _bolt_props(props: dict[str, Any]) -> dict[str, Any]:
    return dict(props)


def _bolt_args(value: Any, ids: list[int]) -> Any:
    if isinstance(value, I):
        return ids[value.i]
    if isinstance(value, list):
        return [_bolt_args(v, ids) for v in value]
    return value


# --------------------------------------------------------------------------------------------
# Helpers for checks
# --------------------------------------------------------------------------------------------


def decode(row: dict[str, Any]) -> dict[str, Any]:
    return blob.unpack_b64(row["blob"])


def f32(values: list[float]) -> np.ndarray:
    return np.asarray(values, dtype=np.float32)


def features_of(spec: GraphSpec, i: int, names: list[str]) -> list[float]:
    out: list[float] = []
    for name in names:
        v = spec.nodes[i][1][name]
        out.extend(v if isinstance(v, list) else [v])
    return out


def check_sample_structure(
    runner: Runner,
    spec: GraphSpec,
    seeds: list[int],
    fanouts: list[int],
    names: list[str],
    sections: dict[str, Any],
    edge_types=None,
    direction: str = "both",
    pad: bool = True,
) -> None:
    """Shapes, masks, 'every sampled neighbour is a real neighbour', features of each slot."""
    inv = {runner.nid(i): i for i in range(len(spec.nodes))}
    d = len(features_of(spec, seeds[0], names))
    n = len(seeds)
    assert list(sections["ids_0"]) == [runner.nid(s) for s in seeds]
    shape = [n]
    for h in range(len(fanouts) + 1):
        if h:
            shape.append(fanouts[h - 1])
        ids = sections[f"ids_{h}"]
        feats = sections[f"features_{h}"]
        assert list(ids.shape) == shape, (h, ids.shape)
        assert list(feats.shape) == shape + [d]
        assert ids.dtype == np.int64
        if h and pad:
            mask = sections[f"mask_{h}"]
            assert mask.dtype == np.bool_ and list(mask.shape) == shape
        else:
            assert f"mask_{h}" not in sections
            mask = np.ones(shape, dtype=bool)
        flat_ids, flat_mask = ids.reshape(-1), mask.reshape(-1)
        flat_feats = feats.reshape(-1, d) if d else None
        for slot, (key, valid) in enumerate(zip(flat_ids.tolist(), flat_mask.tolist())):
            if not valid:
                assert key == -1
                if d:
                    assert not flat_feats[slot].any()
                continue
            node = inv[key]
            if d:
                np.testing.assert_array_equal(flat_feats[slot], f32(features_of(spec, node, names)))
            if h:
                parent_slot = slot // fanouts[h - 1]
                parent = inv[int(sections[f"ids_{h - 1}"].reshape(-1)[parent_slot])]
                allowed = spec.neighbours(parent, edge_types, direction)
                if not allowed and not pad:
                    assert node == parent  # an isolated node resamples itself
                else:
                    assert node in allowed, (h, parent, node, allowed)


def regex(text: str) -> str:
    return re.escape(text)


def procedure_error(procedure: str, last_line: str) -> str:
    """A regex of the whole text Memgraph sends when ``procedure`` raised: ``"<procedure>: "``,
    the traceback (Memgraph's ``src/py/py.hpp`` ``FormatException``, first frame skipped, from
    ``py_module.cpp`` ``CallPythonProcedure``) and ``last_line`` (a regex: ``module.Class:
    message``) as its last line."""
    return (
        rf"(?s)\A{re.escape(procedure)}: Traceback \(most recent call last\):\n.*\n{last_line}\n\Z"
    )


def is_nan(x: float) -> bool:
    return isinstance(x, float) and math.isnan(x)


Check = Callable[[Runner, GraphSpec], None]


# --------------------------------------------------------------------------------------------
# Cases that succeed (each: fn(runner) -> None, building its own graph)
# --------------------------------------------------------------------------------------------

CASES: dict[str, Callable[[Runner], None]] = {}


def case(fn: Callable[[Runner], None]) -> Callable[[Runner], None]:
    CASES[fn.__name__] = fn
    return fn


@case
def pack_ids_features_in_input_order(r: Runner) -> None:
    spec = small_graph()
    r.build(spec)
    order = [3, 0, 5, 1]
    [row] = r.call("tf_features.pack", [I(i) for i in order], ["f", "x", "w"], {})
    assert row["count"] == 4
    out = decode(row)
    assert list(out) == ["ids", "features"]
    assert out["ids"].dtype == np.int64 and out["ids"].tolist() == [r.nid(i) for i in order]
    assert out["features"].dtype == np.float32 and out["features"].shape == (4, 5)
    np.testing.assert_array_equal(
        out["features"], f32([features_of(spec, i, ["f", "x", "w"]) for i in order])
    )


@case
def pack_vertices_strings_labels_float64(r: Runner) -> None:
    spec = small_graph()
    r.build(spec)
    order = [2, 4, 2]
    [row] = r.call(
        "tf_features.pack",
        [V(i) for i in order],
        ["w", "name", "f"],
        {"dtype": "float64", "label_property": "y"},
    )
    out = decode(row)
    assert list(out) == ["ids", "features", "name", "labels"]
    assert out["ids"].tolist() == [r.nid(i) for i in order]
    assert out["features"].dtype == np.float64
    expected = np.asarray([features_of(spec, i, ["w", "f"]) for i in order], dtype=np.float64)
    np.testing.assert_array_equal(out["features"], expected)
    assert out["name"].tolist() == [spec.nodes[i][1]["name"].encode() for i in order]
    assert out["labels"].dtype == np.int64 and out["labels"].tolist() == [
        spec.nodes[i][1]["y"] for i in order
    ]


@case
def pack_by_id_property_with_label(r: Runner) -> None:
    spec = small_graph()
    r.build(spec)
    [row] = r.call("tf_features.pack", [104, 100], ["f"], {"id_property": "pid", "label": "Paper"})
    out = decode(row)
    assert out["ids"].tolist() == [104, 100]
    np.testing.assert_array_equal(
        out["features"], f32([spec.nodes[4][1]["f"], spec.nodes[0][1]["f"]])
    )


@case
def pack_no_properties_gives_zero_width(r: Runner) -> None:
    r.build(small_graph())
    [row] = r.call("tf_features.pack", [I(1), I(2)], [], None)
    out = decode(row)
    assert out["features"].shape == (2, 0)


@case
def pack_allow_non_finite(r: Runner) -> None:
    spec = bad_values_graph()
    r.build(spec)
    [row] = r.call("tf_features.pack", [I(3), I(0)], ["f", "s"], {"allow_non_finite": True})
    feats = decode(row)["features"]
    assert np.isnan(feats[0, 0]) and feats[0, 1] == 1.0 and np.isposinf(feats[0, 2])
    np.testing.assert_array_equal(feats[1], f32([1.0, 2.0, 1.0]))


@case
def sample_shapes_masks_real_neighbours(r: Runner) -> None:
    spec = small_graph()
    r.build(spec)
    seeds = [0, 5, 2, 0]
    [row] = r.call(
        "tf_features.sample",
        [I(s) for s in seeds],
        [3, 2],
        ["f", "x"],
        {"seed": 7, "label_property": "y"},
    )
    out = decode(row)
    assert list(out) == [
        "ids_0",
        "features_0",
        "ids_1",
        "features_1",
        "mask_1",
        "ids_2",
        "features_2",
        "mask_2",
        "labels",
    ]
    check_sample_structure(r, spec, seeds, [3, 2], ["f", "x"], out)
    assert out["labels"].tolist() == [spec.nodes[s][1]["y"] for s in seeds]
    # node 0 has 4 distinct neighbours > fanout 3: no padding; node 5 is isolated: all padding
    assert out["mask_1"][0].all() and not out["mask_1"][1].any() and not out["mask_2"][1].any()
    assert len(set(out["ids_1"][0].tolist())) == 3  # without replacement
    # node 2 has 3 neighbours (0, 1, 3) = fanout: all of them, in id order
    assert out["ids_1"][2].tolist() == sorted(r.nid(i) for i in spec.neighbours(2))
    # a seed's neighbourhood does not depend on the rest of the batch: rows 0 and 3 agree
    np.testing.assert_array_equal(out["ids_2"][0], out["ids_2"][3])


@case
def sample_direction_and_edge_types(r: Runner) -> None:
    spec = small_graph()
    r.build(spec)
    for direction in ("out", "in", "both"):
        for types in (None, ["CITES"], ["LINKS"], ["CITES", "LINKS"]):
            opts = {"seed": 3, "direction": direction, "edge_types": types}
            [row] = r.call("tf_features.sample", [I(i) for i in range(6)], [4, 3], ["f"], opts)
            out = decode(row)
            check_sample_structure(r, spec, list(range(6)), [4, 3], ["f"], out, types, direction)
            for i in range(6):  # fanout 4 >= every degree: exactly the neighbours, then padding
                expect = sorted(r.nid(j) for j in spec.neighbours(i, types, direction))
                got = out["ids_1"][i].tolist()
                assert got == expect + [-1] * (4 - len(expect)), (direction, types, i)
                assert out["mask_1"][i].tolist() == [True] * len(expect) + [False] * (
                    4 - len(expect)
                )


@case
def sample_with_replacement(r: Runner) -> None:
    spec = small_graph()
    r.build(spec)
    [row] = r.call("tf_features.sample", [I(1), I(4)], [6], ["f"], {"seed": 11, "replace": True})
    out = decode(row)
    check_sample_structure(r, spec, [1, 4], [6], ["f"], out)
    assert out["mask_1"].all()  # degree 3 and 1 < 6, but drawing with replacement fills every slot
    assert set(out["ids_1"][1].tolist()) == {r.nid(0)}


@case
def sample_resample_low_degree(r: Runner) -> None:
    spec = small_graph()
    r.build(spec)
    [row] = r.call(
        "tf_features.sample", [I(4), I(5)], [5, 2], ["f"], {"seed": 5, "low_degree": "resample"}
    )
    out = decode(row)
    assert not any(name.startswith("mask_") for name in out)
    check_sample_structure(r, spec, [4, 5], [5, 2], ["f"], out, pad=False)
    assert out["ids_1"][0].tolist() == [r.nid(0)] * 5  # node 4's only neighbour, repeated
    assert out["ids_1"][1].tolist() == [r.nid(5)] * 5  # isolated: the node itself


@case
def sample_same_seed_same_blob_other_seed_differs(r: Runner) -> None:
    spec = star_graph()
    r.build(spec)
    args = ([I(0), I(3)], [5, 3], ["f"])
    first = r.call("tf_features.sample", *args, {"seed": 1})[0]["blob"]
    again = r.call("tf_features.sample", *args, {"seed": 1})[0]["blob"]
    other = r.call("tf_features.sample", *args, {"seed": 2})[0]["blob"]
    assert first == again
    assert first != other
    check_sample_structure(r, spec, [0, 3], [5, 3], ["f"], blob.unpack_b64(other))


@case
def sample_covers_all_neighbours_over_seeds(r: Runner) -> None:
    spec = star_graph()
    r.build(spec)
    chosen: set[int] = set()
    for seed in range(120):
        [row] = r.call("tf_features.sample", [I(0)], [5], [], {"seed": seed})
        ids = decode(row)["ids_1"][0].tolist()
        assert len(set(ids)) == 5
        chosen.update(ids)
    assert chosen == {r.nid(j) for j in range(1, 41)}


@case
def sample_per_node_equals_single_seed_samples(r: Runner) -> None:
    spec = small_graph()
    r.build(spec)
    seeds = [0, 3, 5]
    opts = {"seed": 9, "label_property": "y"}
    rows = r.call("tf_features.sample_per_node", [I(s) for s in seeds], [2, 2], ["f"], opts)
    assert [row["node_id"] for row in rows] == [r.nid(s) for s in seeds]
    whole = decode(r.call("tf_features.sample", [I(s) for s in seeds], [2, 2], ["f"], opts)[0])
    for k, (s, row) in enumerate(zip(seeds, rows)):
        single = r.call("tf_features.sample", [I(s)], [2, 2], ["f"], opts)[0]["blob"]
        assert row["blob"] == single
        part = decode(row)
        assert list(part) == list(whole)
        for name, value in part.items():
            assert value.shape[0] == 1
            np.testing.assert_array_equal(value[0], whole[name][k])


@case
def describe_pack_and_sample_layouts(r: Runner) -> None:
    spec = small_graph()
    r.build(spec)
    [row] = r.call(
        "tf_features.describe", ["f", "x", "name"], {"label": "Paper", "id_property": "pid"}
    )
    assert row["feature_width"] == 4 and row["dtype"] == "float32"
    assert row["columns"] == [
        {"name": "f", "kind": "vector", "width": 3, "offset": 0},
        {"name": "x", "kind": "number", "width": 1, "offset": 3},
        {"name": "name", "kind": "string", "width": 0, "offset": 4},
    ]
    assert [s["name"] for s in row["sections"]] == ["ids", "features", "name"]
    [row] = r.call("tf_features.describe", ["pid", "f"], {"label": "Author"})  # label alone filters
    assert row["columns"][1] == {"name": "f", "kind": "vector", "width": 2, "offset": 1}
    [row] = r.call(
        "tf_features.describe",
        ["f"],
        {"fanouts": [3, 2], "dtype": "float64", "label_property": "y"},
    )
    sections = {s["name"]: (s["dtype"], s["shape"]) for s in row["sections"]}
    assert sections == {
        "ids_0": ("int64", [-1]),
        "features_0": ("float64", [-1, 3]),
        "ids_1": ("int64", [-1, 3]),
        "features_1": ("float64", [-1, 3, 3]),
        "mask_1": ("bool", [-1, 3]),
        "ids_2": ("int64", [-1, 3, 2]),
        "features_2": ("float64", [-1, 3, 2, 3]),
        "mask_2": ("bool", [-1, 3, 2]),
        "labels": ("int64", [-1]),
    }
    # and the sample blob really has that layout
    out = decode(
        r.call(
            "tf_features.sample", [I(0)], [3, 2], ["f"], {"dtype": "float64", "label_property": "y"}
        )[0]
    )
    assert {k: (str(v.dtype), [-1] + list(v.shape[1:])) for k, v in out.items()} == sections


@case
def describe_with_id_property_inspects_a_node_that_has_an_id(r: Runner) -> None:
    # the first node with 'f' has no id: pack/sample by id can never reach it, so describe must not
    # inspect it (nor fail on it); it describes what pack by id really produces
    spec = GraphSpec([(["P"], {"f": [1.0, 2.0, 3.0]}), (["P"], {"f": [4.0, 5.0], "pid": 7})], [])
    r.build(spec)
    [row] = r.call("tf_features.describe", ["f"], {"id_property": "pid"})
    assert row["feature_width"] == 2
    [packed] = r.call("tf_features.pack", [7], ["f"], {"id_property": "pid"})
    assert decode(packed)["features"].shape == (1, row["feature_width"])


@case
def describe_num_classes(r: Runner) -> None:
    spec = small_graph()  # Paper i has y = i % 3; the Author node has no y
    r.build(spec)
    expected = max(props["y"] for _, props in spec.nodes if "y" in props) + 1
    [row] = r.call("tf_features.describe", ["f"], {"label_property": "y"})
    assert row["num_classes"] == expected == 3
    [row] = r.call(
        "tf_features.describe", [], {"label_property": "y", "label": "Paper", "fanouts": [2]}
    )
    assert row["num_classes"] == 3 and row["feature_width"] == 0
    [row] = r.call("tf_features.describe", ["f"], {"label_property": "y", "label": "Author"})
    assert row["num_classes"] is None  # no Author node has a class
    [row] = r.call("tf_features.describe", ["f"], {})
    assert row["num_classes"] is None  # no label_property: no class count
    [row] = r.call("tf_features.describe", ["f"], {"label_property": "x"})  # x = 10 * i
    assert row["num_classes"] == 51
    # -1 ("unlabelled") is no class; nodes without the property are skipped; the count is not
    # limited to the node describe inspects
    r.build(
        GraphSpec([(["P"], {"f": [1.0], "c": -1}), (["P"], {"f": [2.0]}), (["Q"], {"c": 6})], [])
    )
    [row] = r.call("tf_features.describe", ["f"], {"label_property": "c"})
    assert row["num_classes"] == 7 and row["feature_width"] == 1
    [row] = r.call("tf_features.describe", ["f"], {"label_property": "c", "label": "P"})
    assert row["num_classes"] is None


# --------------------------------------------------------------------------------------------
# Error cases: (graph, procedure, args, expected message fragment as a function of the runner)
# --------------------------------------------------------------------------------------------


def _blob_bytes(payloads: list[int]) -> int:
    """A blob's length from its payload lengths, by docs/blob-format.md section 1: a 32-byte header,
    a 128-byte entry per section, each payload padded to a multiple of 8."""
    return 32 + 128 * len(payloads) + sum(-(-p // 8) * 8 for p in payloads)


def _slots_per_hop(n: int, fanouts: list[int]) -> list[int]:
    out = [n]
    for f in fanouts:
        out.append(out[-1] * f)
    return out


def dense_sample_bytes(n: int, fanouts: list[int], width: int, item: int) -> int:
    """The dense sample blob (docs/query-modules.md): ids, features, masks (h >= 1) per hop."""
    payloads = []
    for h, slots in enumerate(_slots_per_hop(n, fanouts)):
        payloads += [8 * slots, item * width * slots] + ([slots] if h else [])
    return _blob_bytes(payloads)


def compact_worst_bytes(
    n: int, fanouts: list[int], width: int, item: int = 4, u: int | None = None
) -> int:
    """The compact blob when every slot is a distinct table row (or with ``u`` rows): index_h int32
    per hop, table_ids int64 [u] and table [u, width], each with a two-element int64 row_splits."""
    per_hop = _slots_per_hop(n, fanouts)
    u = sum(per_hop) if u is None else u
    return _blob_bytes([4 * s for s in per_hop] + [8 * u, 16, item * width * u, 16])


def sparse_worst_bytes(
    n: int, fanouts: list[int], width: int, item: int = 4, u: int | None = None
) -> int:
    """The sparse blob when every slot is a distinct row (or with ``u`` rows) and every feature
    non-zero: index_h, table_ids (+ splits), table_columns int32 [u x width] with u + 1 splits,
    table_values."""
    per_hop = _slots_per_hop(n, fanouts)
    u = sum(per_hop) if u is None else u
    nnz = u * width
    return _blob_bytes([4 * s for s in per_hop] + [8 * u, 16, 4 * nnz, 8 * (u + 1), item * nnz, 16])


ErrorCase = tuple[Callable[[], GraphSpec], str, tuple, Callable[[Runner], str]]

ERROR_CASES: dict[str, ErrorCase] = {
    "missing_property": (
        bad_values_graph,
        "tf_features.pack",
        ([I(0), I(4)], ["f"], {}),
        lambda r: f"node {r.nid(4)} property 'f': expected a value, got none (missing)",
    ),
    "missing_property_first_node": (
        bad_values_graph,
        "tf_features.pack",
        ([I(4)], ["s", "f"], {}),
        lambda r: f"node {r.nid(4)} property 'f': expected a value, got none (missing)",
    ),
    "non_numeric_element": (
        bad_values_graph,
        "tf_features.pack",
        ([I(0), I(2)], ["f"], {}),
        lambda r: f"node {r.nid(2)} property 'f'[1]: expected a number, got str 'two'",
    ),
    "string_where_number": (
        bad_values_graph,
        "tf_features.pack",
        ([I(0), I(2)], ["s"], {}),
        lambda r: (
            f"node {r.nid(2)} property 's': expected a number (as on the first node), "
            "got str 'text'"
        ),
    ),
    "map_value": (
        bad_values_graph,
        "tf_features.pack",
        ([I(5)], ["f"], {}),
        lambda r: (
            f"node {r.nid(5)} property 'f': expected a number, a list of numbers or a string, "
            "got map"
        ),
    ),
    "vectors_of_different_lengths": (
        bad_values_graph,
        "tf_features.pack",
        ([I(0), I(1)], ["f"], {}),
        lambda r: (
            f"node {r.nid(1)} property 'f': expected a list of 2 numbers (the length on the first "
            "node), got a list of 3"
        ),
    ),
    "nan_rejected": (
        bad_values_graph,
        "tf_features.pack",
        ([I(0), I(3)], ["f"], {}),
        lambda r: f"node {r.nid(3)} property 'f'[0]: expected a finite number, got nan",
    ),
    "inf_rejected": (
        bad_values_graph,
        "tf_features.pack",
        ([I(3)], ["s"], {}),
        lambda r: f"node {r.nid(3)} property 's': expected a finite number, got inf",
    ),
    "float32_overflow_rejected": (
        bad_values_graph,
        "tf_features.pack",
        ([I(0), I(5)], ["s"], {}),
        lambda r: (
            f"node {r.nid(5)} property 's': expected a finite number, got 1e+300 (inf as float32)"
        ),
    ),
    "unknown_id": (
        small_graph,
        "tf_features.pack",
        ([I(0), 10**12], ["f"], {}),
        lambda r: "nodes[1]: unknown node id 1000000000000 (no node has that internal id)",
    ),
    "unknown_id_property_value": (
        small_graph,
        "tf_features.pack",
        ([100, 105, 107], ["f"], {"id_property": "pid", "label": "Paper"}),
        lambda r: "nodes[2]: unknown node id 107 (no :Paper node has pid = 107)",
    ),
    "duplicate_id_property_value": (
        small_graph,
        "tf_features.pack",
        ([101], ["f"], {"id_property": "pid"}),
        lambda r: (
            "options.id_property: expected unique ids, got pid = 100 on the nodes with internal "
            f"ids {r.nid(0)} and {r.nid(6)}"
        ),
    ),
    "unknown_seed": (
        small_graph,
        "tf_features.sample",
        ([10**12], [2], ["f"], {}),
        lambda r: "seeds[0]: unknown node id 1000000000000 (no node has that internal id)",
    ),
    "empty_nodes": (
        small_graph,
        "tf_features.pack",
        ([], ["f"], {}),
        lambda r: "nodes: expected at least one node or id, got an empty list",
    ),
    "empty_seeds": (
        small_graph,
        "tf_features.sample_per_node",
        ([], [2], ["f"], {}),
        lambda r: "seeds: expected at least one node or id, got an empty list",
    ),
    "bad_node_entry": (
        small_graph,
        "tf_features.pack",
        ([I(0), "five"], ["f"], {}),
        lambda r: "nodes[1]: expected a node or an integer id, got str 'five'",
    ),
    "zero_fanout": (
        small_graph,
        "tf_features.sample",
        ([I(0)], [2, 0], ["f"], {}),
        lambda r: "fanouts[1]: expected an integer >= 1, got int 0",
    ),
    "negative_fanout": (
        small_graph,
        "tf_features.sample",
        ([I(0)], [-3], ["f"], {}),
        lambda r: "fanouts[0]: expected an integer >= 1, got int -3",
    ),
    "no_fanouts": (
        small_graph,
        "tf_features.sample",
        ([I(0)], [], ["f"], {}),
        lambda r: "fanouts: expected a list of 1 to 6 positive integers (one per hop), got list []",
    ),
    "too_many_hops": (
        small_graph,
        "tf_features.sample",
        ([I(0)], [1] * 7, ["f"], {}),
        lambda r: (
            "fanouts: expected a list of 1 to 6 positive integers (one per hop), "
            "got list [1, 1, 1, 1, 1, ...]"
        ),
    ),
    "unknown_option": (
        small_graph,
        "tf_features.pack",
        ([I(0)], ["f"], {"fanout": 3}),
        lambda r: (
            "options: unknown option 'fanout' for tf_features.pack (allowed: 'allow_non_finite', "
            "'dtype', 'id_property', 'label', 'label_property', 'max_blob_bytes')"
        ),
    ),
    "sample_option_on_pack": (
        small_graph,
        "tf_features.pack",
        ([I(0)], ["f"], {"seed": 3}),
        lambda r: "options: unknown option 'seed' for tf_features.pack",
    ),
    "unknown_direction": (
        small_graph,
        "tf_features.sample",
        ([I(0)], [2], ["f"], {"direction": "sideways"}),
        lambda r: "options.direction: expected one of 'out', 'in', 'both', got str 'sideways'",
    ),
    "bad_low_degree": (
        small_graph,
        "tf_features.sample",
        ([I(0)], [2], ["f"], {"low_degree": "drop"}),
        lambda r: "options.low_degree: expected one of 'pad', 'resample', got str 'drop'",
    ),
    "bad_dtype": (
        small_graph,
        "tf_features.pack",
        ([I(0)], ["f"], {"dtype": "float16"}),
        lambda r: "options.dtype: expected one of 'float32', 'float64', got str 'float16'",
    ),
    "bad_seed": (
        small_graph,
        "tf_features.sample",
        ([I(0)], [2], ["f"], {"seed": "abc"}),
        lambda r: "options.seed: expected an integer or null, got str 'abc'",
    ),
    "bad_edge_types": (
        small_graph,
        "tf_features.sample",
        ([I(0)], [2], ["f"], {"edge_types": "CITES"}),
        lambda r: (
            "options.edge_types: expected a list of edge type names (strings), got str 'CITES'"
        ),
    ),
    "bad_replace": (
        small_graph,
        "tf_features.sample",
        ([I(0)], [2], ["f"], {"replace": 1}),
        lambda r: "options.replace: expected true or false, got int 1",
    ),
    "label_without_id_property": (
        small_graph,
        "tf_features.pack",
        ([I(0)], ["f"], {"label": "Paper"}),
        lambda r: "options.label: expected together with options.id_property",
    ),
    "duplicate_property": (
        small_graph,
        "tf_features.pack",
        ([I(0)], ["f", "x", "f"], {}),
        lambda r: "properties[2]: expected each property once, got 'f' twice",
    ),
    "string_property_in_sample": (
        small_graph,
        "tf_features.sample",
        ([I(0)], [2], ["f", "name"], {}),
        lambda r: (
            "properties: expected numeric properties for sampling, got string property 'name'"
        ),
    ),
    "missing_label_property": (
        bad_values_graph,
        "tf_features.pack",
        ([I(0), I(1)], ["s"], {"label_property": "label"}),
        lambda r: (
            f"node {r.nid(1)} property 'label' (options.label_property): expected an integer "
            "class, got none (missing)"
        ),
    ),
    "non_integer_label": (
        bad_values_graph,
        "tf_features.pack",
        ([I(6)], ["s"], {"label_property": "label"}),
        lambda r: (
            f"node {r.nid(6)} property 'label' (options.label_property): expected an integer "
            "class, got str 'cat'"
        ),
    ),
    "missing_property_on_sampled_neighbour": (
        bad_values_graph,
        "tf_features.sample",
        ([I(0)], [1], ["f"], {"seed": 1}),
        lambda r: (
            f"node {r.nid(1)} property 'f': expected a list of 2 numbers (the length on the first "
            "node), got a list of 3"
        ),
    ),
    "sample_too_large": (
        small_graph,
        "tf_features.sample",
        ([I(0), I(1), I(2)], [1000, 1000, 1000], ["f"], {}),
        lambda r: (
            f"max_blob_bytes: the blob would hold {dense_sample_bytes(3, [1000] * 3, 3, 4):,} "
            "bytes (fanouts [1000, 1000, 1000], 3 seeds, dense, 3 float32 features); the limit is "
            "268,435,456 (options.max_blob_bytes): ask for fewer seeds or smaller fanouts per "
            "call, or raise the limit"
        ),
    ),
    "sample_over_max_blob_bytes": (
        small_graph,
        "tf_features.sample",
        ([I(0), I(1)], [2, 2], ["f", "x"], {"max_blob_bytes": 1000, "dtype": "float64"}),
        lambda r: (
            f"max_blob_bytes: the blob would hold {dense_sample_bytes(2, [2, 2], 4, 8):,} bytes "
            "(fanouts [2, 2], 2 seeds, dense, 4 float64 features); the limit is 1,000 "
            "(options.max_blob_bytes)"
        ),
    ),
    "sample_per_node_over_max_blob_bytes": (
        small_graph,
        "tf_features.sample_per_node",
        ([I(0), I(1)], [3, 3], ["f"], {"max_blob_bytes": 1000}),
        lambda r: (
            f"max_blob_bytes: each row's blob would hold {dense_sample_bytes(1, [3, 3], 3, 4):,} "
            "bytes (fanouts [3, 3], 1 seed per row, dense, 3 float32 features); the limit is "
            "1,000 (options.max_blob_bytes)"
        ),
    ),
    "sample_compact_over_max_blob_bytes_before_sampling": (
        small_graph,
        "tf_features.sample",
        ([I(0)], [4, 4], ["f"], {"max_blob_bytes": 500, "layout": "compact"}),
        lambda r: (
            # what the arguments fix: index_0..2 int32 (1 + 4 + 16 slots) and the two row splits
            # of the table, whose rows are not known before sampling
            "max_blob_bytes: the blob would hold at least "
            f"{compact_worst_bytes(1, [4, 4], 3, u=0):,} bytes (fanouts [4, 4], 1 seed, compact, 3 "
            "float32 features; before sampling: the index arrays, the table of sampled nodes not "
            "counted yet); the limit is 500"
        ),
    ),
    "sample_sparse_over_max_blob_bytes_before_sampling": (
        small_graph,
        "tf_features.sample",
        ([I(0)], [4, 4], ["f"], {"max_blob_bytes": 500, "layout": "sparse"}),
        lambda r: (
            "max_blob_bytes: the blob would hold at least "
            f"{sparse_worst_bytes(1, [4, 4], 3, u=0):,} bytes (fanouts [4, 4], 1 seed, sparse, 3 "
            "float32 features; before sampling: the index arrays, the table of sampled nodes not "
            "counted yet); the limit is 500"
        ),
    ),
    "pack_over_max_blob_bytes": (
        small_graph,
        "tf_features.pack",
        ([I(i) for i in range(6)], ["f"], {"max_blob_bytes": 400}),
        lambda r: (
            # ids [6] int64 (48 bytes) and features [6, 3] float32 (72 bytes) after the 32-byte
            # header and two 128-byte section entries
            "max_blob_bytes: the blob would hold 408 bytes (6 nodes, 3 float32 features); the "
            "limit is 400 (options.max_blob_bytes): ask for fewer nodes per call, or raise the "
            "limit"
        ),
    ),
    "pack_strings_over_max_blob_bytes": (
        small_graph,
        "tf_features.pack",
        ([I(i) for i in range(6)], ["x", "name"], {"max_blob_bytes": 560}),
        lambda r: (
            # ids 48 + features [6, 1] float32 24 + 'name': 7 offsets (56) and 6 x 'paper-i'
            # (42 bytes of text; 98, padded to 104), three entries: 32 + 384 + 48 + 24 + 104
            "max_blob_bytes: the blob would hold 592 bytes (6 nodes, 1 float32 feature, 42 "
            "bytes of text in 1 string property); the limit is 560"
        ),
    ),
    "pack_strings_over_max_blob_bytes_before_reading": (
        small_graph,
        "tf_features.pack",
        ([I(i) for i in range(6)], ["x", "name"], {"max_blob_bytes": 400}),
        lambda r: (
            # without the text: 32 + 384 + 48 + 24 + 56
            "max_blob_bytes: the blob would hold at least 544 bytes (6 nodes, 1 float32 feature, "
            "1 string property (their text not counted yet)); the limit is 400"
        ),
    ),
    "max_blob_bytes_out_of_range": (
        small_graph,
        "tf_features.pack",
        ([I(0)], ["f"], {"max_blob_bytes": 2**31}),
        lambda r: (
            "options.max_blob_bytes: expected a number of bytes from 1 to 2147483647 (the blob "
            "format's limit) or null, got int 2147483648"
        ),
    ),
    "max_blob_bytes_not_an_integer": (
        small_graph,
        "tf_features.sample",
        ([I(0)], [2], ["f"], {"max_blob_bytes": "1GB"}),
        lambda r: (
            "options.max_blob_bytes: expected a number of bytes from 1 to 2147483647 (the blob "
            "format's limit) or null, got str '1GB'"
        ),
    ),
    "seed_null": (
        small_graph,
        "tf_features.sample",
        ([None], [2], ["f"], {}),
        lambda r: "seeds[0]: expected a node or an integer id, got null",
    ),
    "seed_null_per_node": (
        small_graph,
        "tf_features.sample_per_node",
        ([I(0), I(1), None], [2], ["f"], {}),
        lambda r: "seeds[2]: expected a node or an integer id, got null",
    ),
    "node_null": (
        small_graph,
        "tf_features.pack",
        ([I(0), None], ["f"], {}),
        lambda r: "nodes[1]: expected a node or an integer id, got null",
    ),
    "fanout_float": (
        small_graph,
        "tf_features.sample",
        ([I(0)], [1e9], ["f"], {}),
        lambda r: "fanouts[0]: expected an integer >= 1, got float 1000000000.0",
    ),
    "fanout_null": (
        small_graph,
        "tf_features.sample_per_node",
        ([I(0)], [2, None], ["f"], {}),
        lambda r: "fanouts[1]: expected an integer >= 1, got null",
    ),
    "fanout_string": (
        small_graph,
        "tf_features.sample",
        ([I(0)], [2, "3"], ["f"], {}),
        lambda r: "fanouts[1]: expected an integer >= 1, got str '3'",
    ),
    "property_null": (
        small_graph,
        "tf_features.pack",
        ([I(0)], ["f", None], {}),
        lambda r: "properties[1]: expected a non-empty property name, got null",
    ),
    "property_integer_in_sample": (
        small_graph,
        "tf_features.sample",
        ([I(0)], [2], [7], {}),
        lambda r: "properties[0]: expected a non-empty property name, got int 7",
    ),
    "describe_property_null": (
        small_graph,
        "tf_features.describe",
        ([None], {}),
        lambda r: "properties[0]: expected a non-empty property name, got null",
    ),
    "string_property_named_like_a_section": (
        lambda: GraphSpec([(["T"], {"labels": "a,b"})], []),
        "tf_features.pack",
        ([I(0)], ["labels"], {}),
        lambda r: (
            "properties: expected string property names other than 'ids', 'features' and 'labels' "
            "(section names of the blob), got 'labels'"
        ),
    ),
    "describe_no_node_has_properties": (
        small_graph,
        "tf_features.describe",
        (["f", "nope"], {}),
        lambda r: (
            "properties: expected a node having all of ['f', 'nope'], got no node with all of them"
        ),
    ),
    "id_property_missing_on_sampled_neighbour": (
        lambda: GraphSpec([(["P"], {"f": [1.0], "pid": 5}), (["Q"], {"f": [2.0]})], [(0, 1, "E")]),
        "tf_features.sample",
        ([5], [1], ["f"], {"id_property": "pid", "label": "P", "seed": 1}),
        lambda r: (
            f"node {r.nid(1)} property 'pid' (options.id_property): expected an integer id, "
            "got no value"
        ),
    ),
    "id_property_not_an_integer": (
        lambda: GraphSpec(
            [(["P"], {"f": [1.0], "pid": 5}), (["P"], {"f": [2.0], "pid": "six"})], []
        ),
        "tf_features.pack",
        ([5], ["f"], {"id_property": "pid"}),
        lambda r: (
            f"node {r.nid(1)} property 'pid' (options.id_property): expected an integer id, "
            "got str 'six'"
        ),
    ),
    "empty_property_name": (
        small_graph,
        "tf_features.pack",
        ([I(0)], ["f", ""], {}),
        lambda r: "properties[1]: expected a non-empty property name, got str ''",
    ),
    "describe_bad_fanouts": (
        small_graph,
        "tf_features.describe",
        (["f"], {"fanouts": [3, 0]}),
        lambda r: "options.fanouts[1]: expected an integer >= 1, got int 0",
    ),
    "describe_string_property_with_fanouts": (
        small_graph,
        "tf_features.describe",
        (["f", "name"], {"fanouts": [3]}),
        lambda r: (
            "properties: expected numeric properties for sampling, got string property 'name'"
        ),
    ),
    "describe_non_integer_label": (
        bad_values_graph,
        "tf_features.describe",
        (["s"], {"label_property": "label"}),
        lambda r: (
            f"node {r.nid(6)} property 'label' (options.label_property): expected an integer "
            "class, got str 'cat'"
        ),
    ),
    "describe_float_label": (
        lambda: GraphSpec([(["P"], {"f": [1.0], "c": 1}), (["P"], {"f": [2.0], "c": 2.0})], []),
        "tf_features.describe",
        (["f"], {"label_property": "c", "label": "P"}),
        lambda r: (
            f"node {r.nid(1)} property 'c' (options.label_property): expected an integer class, "
            "got float 2.0"
        ),
    ),
    "describe_string_property_named_like_a_section": (
        lambda: GraphSpec([(["T"], {"labels": "a,b"})], []),
        "tf_features.describe",
        (["labels"], {}),
        lambda r: (
            "properties: expected string property names other than 'ids', 'features' and 'labels' "
            "(section names of the blob), got 'labels'"
        ),
    ),
    "describe_no_node_has_properties_and_id": (
        small_graph,
        "tf_features.describe",
        (["f"], {"id_property": "nope", "label": "Author"}),
        lambda r: (
            "properties: expected a node having all of ['f'] and options.id_property 'nope', got "
            "no :Author node with all of them"
        ),
    ),
}


# --------------------------------------------------------------------------------------------
# The tests of every runner
# --------------------------------------------------------------------------------------------


class RunnerTests:
    """The cases above as tests; a test module runs them on its runner with a subclass named
    ``Test...`` that provides the ``runner`` fixture."""

    @pytest.mark.parametrize("name", sorted(CASES))
    def test_case(self, name: str, runner: Runner) -> None:
        CASES[name](runner)

    @pytest.mark.parametrize("name", sorted(ERROR_CASES))
    def test_error_case(self, name: str, runner: Runner) -> None:
        graph, procedure, args, message = ERROR_CASES[name]
        runner.build(graph())
        with pytest.raises(runner.error_type, match=regex(message(runner))):
            runner.call(procedure, *args)


def sample_variant(
    runner: Runner, properties: list[str], options: dict[str, Any]
) -> tuple[int, str, bool, bool]:
    """Builds :func:`small_graph` on ``runner``; returns what a sample of ``properties`` with
    ``options`` is laid out by: ``(feature width, dtype, pad, labels)``."""
    spec = small_graph()
    runner.build(spec)
    return (
        len(features_of(spec, 0, properties)),
        options.get("dtype", "float32"),
        options.get("low_degree", "pad") == "pad",
        "label_property" in options,
    )
