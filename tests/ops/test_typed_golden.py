"""The typed and pair golden vectors (tests/golden/typed, written by hand from docs/blob-format.md
sections 9 and 10 by tests/golden/generate.py): the query module samples exactly these bytes from
the vectors' graph; the Python packer writes them; the Python reader, the C++ reader (its CLI
harness, every truncation too) and both TF decoders read their values; the compact and sparse
vectors expand in the graph to the dense vector's tensors. scripts/fuzz.sh seeds its corpus with
them (it takes every tests/golden/**/*.bin).

Lean on purpose: the byte-format checks that every valid vector gets in tests/golden/valid (each
byte mutated, every truncation through both TF decoders) cost minutes for vectors of this size
and test nothing the format-level vectors do not."""

from __future__ import annotations

import json

import numpy as np
import pytest

from memgraph_tf import blob, layout
from memgraph_tf.client import EmbeddedSource
from memgraph_tf.embedded import EmbeddedGraph
from memgraph_tf.ops import sample_decoding
from memgraph_tf.typed_sampling import TypedSamplingSpec

tf = pytest.importorskip("tensorflow")


@pytest.fixture(scope="module")
def vectors(golden_dir):
    folder = golden_dir / "typed"
    out = {}
    for path in sorted(folder.glob("*.bin")):
        out[path.stem] = (path.read_bytes(), json.loads(path.with_suffix(".json").read_text()))
    assert set(out) == {"typed_dense", "typed_compact", "typed_sparse", "pair_dense"}
    graph = json.loads((folder / "graph.json").read_text())
    return out, graph


def _source(graph: dict) -> EmbeddedSource:
    g = EmbeddedGraph()
    internal = {}
    for node in graph["nodes"]:
        props = {"id": node["id"]}
        if "features" in node:
            props["features"] = node["features"]
        if "label_class" in node:
            props["label"] = node["label_class"]
        internal[node["id"]] = g.add_node([node["label"]], props)
    for a, rel_type, b in graph["relationships"]:
        g.add_edge(internal[a], internal[b], rel_type)
    return EmbeddedSource(g)


def _values(doc: dict) -> dict[str, np.ndarray]:
    return {
        s["name"]: np.asarray(s["values"], dtype=blob._NUMPY_DTYPES[s["dtype"]]).reshape(s["shape"])
        for s in doc["sections"]
    }


def _spec(call: dict) -> TypedSamplingSpec:
    return TypedSamplingSpec.from_num_neighbors(call["options"]["label"], call["num_neighbors"])


def test_the_query_module_samples_the_golden_bytes_and_python_reads_them(vectors):
    docs, graph = vectors
    source = _source(graph)
    for name, (data, doc) in docs.items():
        call = doc["call"]
        sections = {
            s["name"]: blob.Dense(s["values"], s["shape"], s["dtype"]) for s in doc["sections"]
        }
        assert blob.pack(sections) == data, name  # the packer against the hand-built bytes
        if call["procedure"] == "sample_typed":
            got = source.sample_typed(
                call["seeds"], call["num_neighbors"], call["properties"], call["options"]
            )
            widths = {"User": 2, "Product": 3}
            spec = layout.typed_sample_sections(
                _spec(call), widths, labels=True, batch=2, layout=call["options"]["layout"]
            )
            assert [s.name for s in spec] == [s["name"] for s in doc["sections"]]
        else:
            got = source.sample_pairs(
                call["sources"],
                call["targets"],
                call["num_neighbors"],
                call["properties"],
                call["options"],
            )
        assert got == data, name
        unpacked = blob.unpack(data)
        for s_name, want in _values(doc).items():
            base = s_name.removesuffix(".row_splits")
            value = unpacked[base] if base in unpacked else unpacked[s_name]
            if isinstance(value, blob.Ragged):
                value = value.row_splits if base != s_name else value.values
            np.testing.assert_array_equal(value, want, err_msg=f"{name}/{s_name}")


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
    data = docs["typed_sparse"][0]
    path = tmp_path / "typed_sparse.bin"
    path.write_bytes(data)
    cuts = helpers.run_cli(reader_cli, "--truncations", str(path))
    assert [c["length"] for c in cuts] == list(range(len(data)))
    assert not any(c["ok"] for c in cuts)


@pytest.mark.parametrize("decoder", ["op", "portable"])
def test_both_decoders_read_them_and_expand_compact_and_sparse_to_dense(ops, vectors, decoder):
    docs, _ = vectors
    unpack = ops.unpack_blob if decoder == "op" else ops.unpack_blob_portable
    for name, (data, doc) in docs.items():
        sections = blob.read_table(data)
        splits = {s.name for s in sections if s.name.endswith(".row_splits")}
        ragged = [s.name for s in sections if s.name + ".row_splits" in splits]
        asked = [s for s in sections if s.name not in splits]
        out = unpack(data, [s.name for s in asked], [s.dtype for s in asked], ragged=ragged)
        want = _values(doc)
        for section, value in zip(asked, out):
            if section.name in ragged:
                np.testing.assert_array_equal(
                    value.row_splits.numpy(), want[section.name + ".row_splits"]
                )
                value = value.flat_values
            assert value.numpy().tobytes() == want[section.name].tobytes(), (name, section.name)
    dense = _values(docs["typed_dense"][1])
    for name in ("typed_compact", "typed_sparse"):
        data, doc = docs[name]
        call = doc["call"]
        got = sample_decoding.decode_typed_sample(
            tf.constant([data, data]),
            _spec(call),
            {"User": 2, "Product": 3},
            layout_name=call["options"]["layout"],
            ids=True,
            labels=True,
            unpack=unpack,
        )
        assert sorted(got) == sorted(dense)
        for key, value in got.items():
            want = np.stack([dense[key]] * 2)
            assert value.numpy().tobytes() == want.tobytes(), (name, key)
