"""OpenCypherDataset against a real Bolt server (ArcadeDB): dtypes, parameters, nulls, ragged,
errors."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from memgraph_tf.client import OpenCypherDataset
from memgraph_tf.client.sources import GraphSource
from memgraph_tf.errors import (
    ConfigurationError,
    NullValueError,
    ValueLengthError,
    ValueTypeError,
)

pytestmark = pytest.mark.arcadedb

ROWS = [
    {
        "id": i,
        "x": i / 4,
        "flag": i % 3 == 0,
        "name": f"node-{i}-é",
        "vec": [i, i * 2, i * 3],
        "var": list(range(i % 4)),
        "big": i * 1_000_000_007,
    }
    for i in range(23)
]


@pytest.fixture(scope="module")
def items(bolt_source):
    bolt_source.write("MATCH (n:DsItem) DELETE n")
    bolt_source.write(
        "UNWIND $rows AS r CREATE (:DsItem {id: r.id, x: r.x, flag: r.flag, name: r.name, vec: "
        "r.vec, "
        "var: r.var, big: r.big})",
        {"rows": ROWS},
    )
    return ROWS


ALL = (
    "MATCH (n:DsItem) RETURN n.id AS id, n.x AS x, n.flag AS flag, n.name AS name, n.vec AS vec, "
    "n.var AS var, n.big AS big ORDER BY n.id"
)


def test_every_dtype_vectors_and_ragged(bolt_source, items):
    ds = OpenCypherDataset(
        bolt_source,
        ALL,
        {
            "id": tf.int32,
            "x": "float32",
            "flag": "bool",
            "name": tf.string,
            "vec": ("float64", [3]),
            "var": ("int64", [None]),
            "big": "int64",
        },
        fetch_size=5,
    )
    assert isinstance(ds, tf.data.Dataset)
    spec = ds.element_spec
    assert (
        spec["id"].dtype == tf.int32
        and spec["x"].dtype == tf.float32
        and spec["flag"].dtype == tf.bool
    )
    assert (
        spec["name"].dtype == tf.string
        and spec["vec"].shape == [3]
        and spec["vec"].dtype == tf.float64
    )
    assert spec["big"].dtype == tf.int64
    batches = list(ds.batch(10))
    assert [int(b["id"].shape[0]) for b in batches] == [10, 10, 3]
    got = {
        k: np.concatenate([b[k].numpy() for b in batches])
        for k in ("id", "x", "flag", "name", "vec", "big")
    }
    assert got["id"].tolist() == [r["id"] for r in items]
    np.testing.assert_allclose(got["x"], np.asarray([r["x"] for r in items], dtype=np.float32))
    assert got["flag"].tolist() == [r["flag"] for r in items]
    assert [v.decode("utf-8") for v in got["name"]] == [r["name"] for r in items]
    np.testing.assert_array_equal(
        got["vec"], np.asarray([r["vec"] for r in items], dtype=np.float64)
    )
    assert got["big"].tolist() == [r["big"] for r in items]
    assert isinstance(batches[0]["var"], tf.RaggedTensor)
    ragged = [row for b in batches for row in b["var"].to_list()]
    assert ragged == [r["var"] for r in items]


def test_parameters_tuple_and_single_outputs(bolt_source, items):
    wanted = [4, 17, 2]
    ds = OpenCypherDataset(
        bolt_source,
        "UNWIND $ids AS i MATCH (n:DsItem {id: i}) RETURN n.id, n.vec",
        [tf.int64, ("int32", [3])],
        parameters={"ids": np.asarray(wanted, dtype=np.int64)},
    )
    rows = [(int(a), b.tolist()) for a, b in ds.as_numpy_iterator()]
    assert rows == [(i, items[i]["vec"]) for i in wanted]
    single = OpenCypherDataset(
        bolt_source, "UNWIND $xs AS x RETURN x * 2", tf.float64, {"xs": [1.5, -2]}
    )
    assert list(single.as_numpy_iterator()) == [3.0, -4.0]


def test_each_iteration_runs_the_query_again(bolt_source, items):
    ds = OpenCypherDataset(bolt_source, "MATCH (n:DsItem) RETURN n.id AS id", {"id": tf.int64})
    first = sorted(int(e["id"]) for e in ds)
    second = sorted(int(e["id"]) for e in ds.repeat(2))
    assert first == [r["id"] for r in items]
    assert second == sorted(first * 2)


def test_null_is_an_error_naming_column_row_and_value(bolt_source, items):
    query = "UNWIND $xs AS x RETURN x AS score"
    ds = OpenCypherDataset(
        bolt_source, query, {"score": tf.float32}, {"xs": [1.0, 2.0, 3.0, None, 5.0]}
    )
    with pytest.raises(
        tf.errors.InvalidArgumentError,
        match=r"column 'score' row 3: expected a number for float32, got null",
    ):
        list(ds)
    with pytest.raises(
        NullValueError, match=r"column 'score' row 3: expected a number for float32, got null"
    ):
        list(ds.rows())


def test_row_numbers_count_across_fetched_chunks(bolt_source, items):
    xs = [float(i) for i in range(11)]
    xs[7] = None
    ds = OpenCypherDataset(
        bolt_source,
        "UNWIND $xs AS x RETURN x AS score",
        {"score": tf.float64},
        {"xs": xs},
        fetch_size=3,
    )
    with pytest.raises(
        NullValueError, match=r"column 'score' row 7: expected a number for float64, got null"
    ):
        list(ds.rows())
    seen = []
    with pytest.raises(
        tf.errors.InvalidArgumentError,
        match=r"column 'score' row 7: expected a number for float64, got null",
    ):
        for value in ds:
            seen.append(float(value["score"]))
    assert seen == xs[:6]  # the chunks before the bad one (rows 0-5) arrived intact


def test_wrong_type_is_an_error(bolt_source, items):
    ds = OpenCypherDataset(
        bolt_source, "MATCH (n:DsItem) RETURN n.name AS name ORDER BY n.id", {"name": tf.int64}
    )
    with pytest.raises(
        ValueTypeError,
        match=r"column 'name' row 0: expected an integer for int64, got str 'node-0-é'",
    ):
        list(ds.rows())
    ds = OpenCypherDataset(
        bolt_source, "UNWIND $xs AS x RETURN x AS b", {"b": tf.bool}, {"xs": [True, 1]}
    )
    with pytest.raises(
        tf.errors.InvalidArgumentError,
        match=r"column 'b' row 1: expected a boolean for bool, got int 1",
    ):
        list(ds)


def test_wrong_length_and_element_type_are_errors(bolt_source, items):
    query = "MATCH (n:DsItem) RETURN n.var AS v ORDER BY n.id"
    ds = OpenCypherDataset(bolt_source, query, {"v": ("int64", [2])})
    with pytest.raises(
        ValueLengthError,
        match=r"column 'v' row 0: expected a list of 2 values, got a list of 0: list \[\]",
    ):
        list(ds.rows())
    ds = OpenCypherDataset(
        bolt_source,
        "UNWIND $xs AS x RETURN x AS v",
        {"v": ("float32", [2])},
        {"xs": [[1.0, 2.0], [3.0, "four"]]},
    )
    with pytest.raises(
        tf.errors.InvalidArgumentError,
        match=r"column 'v'\[1\] row 1: expected a number for float32, got str 'four'",
    ):
        list(ds)


def test_int32_overflow_is_an_error(bolt_source, items):
    ds = OpenCypherDataset(
        bolt_source, "MATCH (n:DsItem) RETURN n.big AS big ORDER BY n.id", {"big": tf.int32}
    )
    third = items[3]["big"]
    with pytest.raises(
        ValueTypeError,
        match=r"column 'big' row 3: expected an integer in int32 range \[-2147483648, "
        rf"2147483647\], got {third}",
    ):
        list(ds.rows())


def test_declaration_errors_name_the_parameter(bolt_source, items):
    with pytest.raises(
        ConfigurationError,
        match=r"output_types\['x'\]: expected a dtype among bool, int32, int64, float32, float64, "
        r"string, got 'complex64'",
    ):
        OpenCypherDataset(bolt_source, ALL, {"x": "complex64"})
    with pytest.raises(ConfigurationError, match=r"fetch_size: expected an integer >= 1, got 0"):
        OpenCypherDataset(bolt_source, ALL, {"x": "float32"}, fetch_size=0)
    with pytest.raises(ConfigurationError, match=r"source: expected a graph source"):
        OpenCypherDataset("bolt://localhost:7687", ALL, {"x": "float32"})
    ds = OpenCypherDataset(bolt_source, ALL, {"missing": "float32"})
    with pytest.raises(
        ConfigurationError,
        match=r"output_types: expected the query to return column\(s\) \['missing'\], got columns "
        r"\['id', 'x'",
    ):
        list(ds.rows())
    ds = OpenCypherDataset(bolt_source, ALL, ["int64", "float32"])
    with pytest.raises(
        tf.errors.InvalidArgumentError,
        match=r"output_types: expected 2 column\(s\) by position, got a query returning 7",
    ):
        list(ds)


class _CountingSource(GraphSource):
    """A real BoltSource seen through a counter of the records it handed out."""

    def __init__(self, inner):
        self.inner = inner
        self.handed_out = 0

    def run(self, query, parameters=None, *, fetch_size=None):
        for record in self.inner.run(query, parameters, fetch_size=fetch_size):
            self.handed_out += 1
            yield record


def test_rows_are_streamed_not_materialised(bolt_source):
    counting = _CountingSource(bolt_source)
    ds = OpenCypherDataset(
        counting, "UNWIND range(1, 200000) AS i RETURN i", tf.int64, fetch_size=50
    )
    assert [int(v) for v in ds.take(3)] == [1, 2, 3]
    assert 3 <= counting.handed_out <= 100


def test_empty_result_is_an_empty_dataset(bolt_source):
    ds = OpenCypherDataset(
        bolt_source, "MATCH (n:NoSuchLabel) RETURN n.x AS x", {"x": ("float32", [4])}
    )
    assert list(ds) == []
    assert ds.element_spec["x"].shape.as_list() == [4]


def test_tensor_specs_and_ragged_strings(bolt_source, items):
    rows = [["a", "bé"], [], ["c"]]
    ds = OpenCypherDataset(
        bolt_source,
        "UNWIND range(0, 2) AS i RETURN i AS i, $words[i] AS words, [i, i + 1] AS pair",
        {
            "i": tf.TensorSpec([], tf.int64),
            "words": tf.RaggedTensorSpec([None], tf.string),
            "pair": tf.TensorSpec([2], tf.int32),
        },
        {"words": rows},
    )
    [batch] = list(ds.batch(3))
    assert batch["i"].numpy().tolist() == [0, 1, 2]
    assert isinstance(batch["words"], tf.RaggedTensor)
    assert [[w.decode("utf-8") for w in r] for r in batch["words"].to_list()] == rows
    assert batch["pair"].dtype == tf.int32 and batch["pair"].numpy().tolist() == [
        [0, 1],
        [1, 2],
        [2, 3],
    ]
    with pytest.raises(
        ConfigurationError,
        match=r"output_types\['m'\]: expected a shape whose only unknown dimension is the first "
        r".*got \[3, None\]",
    ):
        OpenCypherDataset(bolt_source, ALL, {"m": tf.TensorSpec([3, None], tf.float32)})
