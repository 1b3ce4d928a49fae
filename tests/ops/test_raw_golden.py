"""The raw-column golden vectors (tests/golden/raw, written by hand from docs/blob-format.md section
11 by tests/golden/generate.py): the query module samples exactly these bytes from the vectors'
graph (strings, a Date, a LocalDateTime, lists, absent values); the Python packer writes them; the
Python reader, the C++ reader (its CLI harness, every truncation too) and both TF decoders read
their values. scripts/fuzz.sh seeds its corpus with them (it takes every tests/golden/**/*.bin)."""

from __future__ import annotations

import datetime
import json

import numpy as np
import pytest

from memgraph_tf import blob, layout
from memgraph_tf.client import EmbeddedSource
from memgraph_tf.embedded import EmbeddedGraph
from memgraph_tf.feature_spec import LabelSpec
from memgraph_tf.typed_sampling import TypedSamplingSpec

tf = pytest.importorskip("tensorflow")


def _value(v):
    if isinstance(v, dict) and set(v) == {"Date"}:
        return datetime.date.fromisoformat(v["Date"])
    if isinstance(v, dict) and set(v) == {"LocalDateTime"}:
        return datetime.datetime.fromisoformat(v["LocalDateTime"])
    return v


@pytest.fixture(scope="module")
def vectors(golden_dir):
    folder = golden_dir / "raw"
    out = {
        path.stem: (path.read_bytes(), json.loads(path.with_suffix(".json").read_text()))
        for path in sorted(folder.glob("*.bin"))
    }
    assert set(out) == {"typed_raw_dense", "pair_raw_dense"}
    graph = json.loads((folder / "graph.json").read_text())
    return out, graph


def _source(graph: dict) -> EmbeddedSource:
    g = EmbeddedGraph()
    internal = {}
    for node in graph["nodes"]:
        props = {k: _value(v) for k, v in node["properties"].items()}
        internal[props["id"]] = g.add_node([node["label"]], props)
    for a, rel_type, b in graph["relationships"]:
        g.add_edge(internal[a], internal[b], rel_type)
    return EmbeddedSource(g)


def _want(doc: dict) -> dict[str, np.ndarray]:
    out = {}
    for s in doc["sections"]:
        if s["dtype"] == "string":
            value = np.asarray([v.encode() for v in s["values"]], dtype=object)
        else:
            value = np.asarray(s["values"], dtype=np.dtype(s["dtype"]))
        out[s["name"]] = value.reshape(s["shape"])
    return out


def _call(source: EmbeddedSource, call: dict) -> bytes:
    if call["procedure"] == "sample_typed":
        return source.sample_typed(
            call["seeds"], call["num_neighbors"], call["properties"], call["options"]
        )
    return source.sample_pairs(
        call["sources"], call["targets"], call["num_neighbors"], call["properties"], call["options"]
    )


def _layout(call: dict) -> list[layout.Section]:
    """The sections the layout module gives for the call (the required ``f``: 2 numbers)."""
    raw = {
        label: layout.raw_widths(LabelSpec.from_dict(spec), {"f": 2})
        for label, spec in call["options"]["feature_spec"].items()
    }
    nn = call["num_neighbors"]
    if call["procedure"] == "sample_typed":
        spec = TypedSamplingSpec.from_num_neighbors("User", nn)
        return layout.typed_sample_sections(spec, {}, batch=2, raw=raw)
    src = TypedSamplingSpec.from_num_neighbors("User", nn["source"])
    dst = TypedSamplingSpec.from_num_neighbors("Product", nn["target"])
    return layout.pair_sample_sections(src, dst, {}, batch=2, raw=raw)


def test_the_query_module_samples_the_golden_bytes_and_python_reads_them(vectors):
    docs, graph = vectors
    source = _source(graph)
    for name, (data, doc) in docs.items():
        sections = {
            s["name"]: blob.Dense(s["values"], s["shape"], s["dtype"]) for s in doc["sections"]
        }
        assert blob.pack(sections) == data, name  # the packer against the hand-built bytes
        assert _call(source, doc["call"]) == data, name
        want = doc["sections"]
        got = _layout(doc["call"])
        assert [(s.name, s.dtype) for s in got] == [(s["name"], s["dtype"]) for s in want]
        fixed = [s for s in got if s.role != "bag"]  # (a bag's length varies: -1 in the layout)
        assert [list(s.shape) for s in fixed] == [
            s["shape"] for s in want if s["name"] in {f.name for f in fixed}
        ]
        unpacked = blob.unpack(data)
        for s_name, value_want in _want(doc).items():
            base = s_name.removesuffix(".row_splits")
            value = unpacked[base]
            if isinstance(value, blob.Ragged):
                value = value.row_splits if base != s_name else value.values
            np.testing.assert_array_equal(value, value_want, err_msg=f"{name}/{s_name}")


def test_the_cpp_reader_reads_them_and_rejects_every_truncation(
    vectors, reader_cli, helpers, tmp_path
):
    docs, _ = vectors
    names = list(docs)
    lines = helpers.run_cli(reader_cli, frames=[docs[n][0] for n in names])
    for name, line in zip(names, lines):
        assert line["ok"] is True, (name, line.get("error"))
        want = docs[name][1]["sections"]
        assert [s["name"] for s in line["sections"]] == [s["name"] for s in want]
        for got, section in zip(line["sections"], want):
            assert (got["dtype"], got["shape"]) == (section["dtype"], section["shape"])
            assert got["values"] == section["values"], f"{name}/{section['name']}"
    data = docs["typed_raw_dense"][0]
    path = tmp_path / "typed_raw_dense.bin"
    path.write_bytes(data)
    cuts = helpers.run_cli(reader_cli, "--truncations", str(path))
    assert [c["length"] for c in cuts] == list(range(len(data)))
    assert not any(c["ok"] for c in cuts)


@pytest.mark.parametrize("decoder", ["op", "portable"])
def test_both_decoders_read_them(ops, vectors, decoder):
    docs, _ = vectors
    unpack = ops.unpack_blob if decoder == "op" else ops.unpack_blob_portable
    for name, (data, doc) in docs.items():
        sections = blob.read_table(data)
        splits = {s.name for s in sections if s.name.endswith(".row_splits")}
        ragged = [s.name for s in sections if s.name + ".row_splits" in splits]
        asked = [s for s in sections if s.name not in splits]
        out = unpack(data, [s.name for s in asked], [s.dtype for s in asked], ragged=ragged)
        want = _want(doc)
        for section, value in zip(asked, out):
            if section.name in ragged:
                np.testing.assert_array_equal(
                    value.row_splits.numpy(), want[section.name + ".row_splits"]
                )
                value = value.flat_values
            got = value.numpy()
            assert got.shape == want[section.name].shape, (name, section.name)
            assert got.tolist() == want[section.name].tolist(), (name, section.name)
