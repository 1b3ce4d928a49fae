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

import numpy as np
import pytest

from memgraph_tf import layout
from memgraph_tf.ops import sample_decoding
from memgraph_tf.typed_sampling import TypedSamplingSpec
from tests.ops import golden_kit as kit

tf = pytest.importorskip("tensorflow")


@pytest.fixture(scope="module")
def vectors(golden_dir):
    return kit.load_vectors(
        golden_dir / "typed", {"typed_dense", "typed_compact", "typed_sparse", "pair_dense"}
    )


def _properties(node: dict) -> dict:
    props = {"id": node["id"]}
    if "features" in node:
        props["features"] = node["features"]
    if "label_class" in node:
        props["label"] = node["label_class"]
    return props


def _spec(call: dict) -> TypedSamplingSpec:
    return TypedSamplingSpec.from_num_neighbors(call["options"]["label"], call["num_neighbors"])


def test_the_query_module_samples_the_golden_bytes_and_python_reads_them(vectors, helpers):
    docs, graph = vectors
    source = kit.embedded_source(graph, _properties)
    for name, (data, doc) in docs.items():
        kit.assert_packed_and_read(helpers, name, data, doc)
        call = doc["call"]
        if call["procedure"] == "sample_typed":
            widths = {"User": 2, "Product": 3}
            spec = layout.typed_sample_sections(
                _spec(call), widths, labels=True, batch=2, layout=call["options"]["layout"]
            )
            assert [s.name for s in spec] == [s["name"] for s in doc["sections"]]
        assert kit.sample(source, call) == data, name


def test_the_cpp_reader_reads_them_and_rejects_every_truncation(
    vectors, reader_cli, helpers, tmp_path
):
    kit.assert_cpp_reader_reads(helpers, reader_cli, vectors[0], tmp_path / "typed_sparse.bin")


@pytest.mark.parametrize("decoder", ["op", "portable"])
def test_both_decoders_read_them_and_expand_compact_and_sparse_to_dense(
    ops, vectors, helpers, decoder
):
    docs, _ = vectors
    unpack = ops.unpack_blob if decoder == "op" else ops.unpack_blob_portable
    kit.assert_decoder_reads(helpers, unpack, docs)
    dense = kit.expected_arrays(helpers, docs["typed_dense"][1])
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
