"""The raw-column golden vectors (tests/golden/raw, written by hand from docs/blob-format.md section
11 by tests/golden/generate.py): the query module samples exactly these bytes from the vectors'
graph (strings, a Date, a LocalDateTime, lists, absent values), in the dense and the compact
layout (the sparse layout's bytes are the compact ones); the Python packer writes them; the
Python reader, the C++ reader (its CLI harness, every truncation too) and both TF decoders read
their values, and both expand the compact vector to exactly the dense vector's sections.
scripts/fuzz.sh seeds its corpus with them (it takes every tests/golden/**/*.bin)."""

from __future__ import annotations

import datetime

import pytest

from memgraph_tf import layout
from memgraph_tf.feature_spec import LabelSpec
from memgraph_tf.typed_sampling import TypedSamplingSpec
from tests.ops import golden_kit as kit

tf = pytest.importorskip("tensorflow")


def _value(v):
    if isinstance(v, dict) and set(v) == {"Date"}:
        return datetime.date.fromisoformat(v["Date"])
    if isinstance(v, dict) and set(v) == {"LocalDateTime"}:
        return datetime.datetime.fromisoformat(v["LocalDateTime"])
    return v


@pytest.fixture(scope="module")
def vectors(golden_dir):
    return kit.load_vectors(
        golden_dir / "raw", {"typed_raw_dense", "typed_raw_compact", "pair_raw_dense"}
    )


def _properties(node: dict) -> dict:
    return {k: _value(v) for k, v in node["properties"].items()}


def _layout(call: dict) -> list[layout.Section]:
    """The sections the layout module gives for the call (the required ``f``: 2 numbers)."""
    raw = {
        label: layout.raw_widths(LabelSpec.from_dict(spec), {"f": 2})
        for label, spec in call["options"]["feature_spec"].items()
    }
    nn = call["num_neighbors"]
    if call["procedure"] == "sample_typed":
        spec = TypedSamplingSpec.from_num_neighbors("User", nn)
        name = call["options"].get("layout", "dense")
        return layout.typed_sample_sections(spec, {}, batch=2, raw=raw, layout=name)
    src = TypedSamplingSpec.from_num_neighbors("User", nn["source"])
    dst = TypedSamplingSpec.from_num_neighbors("Product", nn["target"])
    return layout.pair_sample_sections(src, dst, {}, batch=2, raw=raw)


def test_the_query_module_samples_the_golden_bytes_and_python_reads_them(vectors, helpers):
    docs, graph = vectors
    source = kit.embedded_source(graph, _properties)
    for name, (data, doc) in docs.items():
        kit.assert_packed_and_read(helpers, name, data, doc)
        assert kit.sample(source, doc["call"]) == data, name
        want = doc["sections"]
        got = _layout(doc["call"])
        assert [(s.name, s.dtype) for s in got] == [(s["name"], s["dtype"]) for s in want]
        fixed = [s for s in got if -1 not in s.shape]  # (a bag's or a table's length varies)
        assert [list(s.shape) for s in fixed] == [
            s["shape"] for s in want if s["name"] in {f.name for f in fixed}
        ]


class TestReaders(kit.ReaderTests):
    truncated = "typed_raw_dense"


@pytest.mark.parametrize("decoder", ["op", "portable"])
@pytest.mark.parametrize("layout_name", ["compact", "sparse"])
def test_the_compact_vector_decodes_to_the_dense_vector(ops, vectors, decoder, layout_name):
    """``decode_typed_sample`` of typed_raw_compact (read as compact, and as sparse: the same
    bytes) gives every section of typed_raw_dense, values and shapes."""
    import numpy as np

    from memgraph_tf.ops.sample_decoding import decode_typed_sample

    docs, _ = vectors
    data, doc = docs["typed_raw_compact"]
    dense = {s["name"]: s for s in docs["typed_raw_dense"][1]["sections"]}
    raw = {
        label: layout.raw_widths(LabelSpec.from_dict(spec), {"f": 2})
        for label, spec in doc["call"]["options"]["feature_spec"].items()
    }
    spec = TypedSamplingSpec.from_num_neighbors("User", doc["call"]["num_neighbors"])
    unpack = ops.unpack_blob if decoder == "op" else ops.unpack_blob_portable
    got = decode_typed_sample(
        tf.constant(data), spec, {}, layout_name=layout_name, ids=True, raw=raw, unpack=unpack
    )
    assert set(got) == set(dense)
    for name, want in dense.items():
        value = got[name].numpy()
        if want["dtype"] == "string":
            value = np.vectorize(lambda b: b.decode("utf-8"), otypes=[object])(value)
        assert list(value.shape) == want["shape"], name
        assert value.reshape(-1).tolist() == want["values"], name


def test_a_raw_table_short_of_rows_is_refused_naming_blob_and_section(ops, vectors):
    """A compact blob whose ``table_cat_User`` holds one row for two table rows: the decode
    fails naming the blob, the section and both counts (``InvalidArgumentError``)."""
    from memgraph_tf import blob
    from memgraph_tf.ops.sample_decoding import decode_typed_sample

    docs, _ = vectors
    doc = docs["typed_raw_compact"][1]
    sections = {}
    for s in doc["sections"]:
        sections[s["name"]] = blob.Dense(s["values"], s["shape"], s["dtype"])
    sections["table_cat_User"] = blob.Dense(["de"], [1, 1], "string")
    sections["table_cat_User.row_splits"] = blob.Dense([0, 1], [2], "int64")
    raw = {
        label: layout.raw_widths(LabelSpec.from_dict(spec), {"f": 2})
        for label, spec in doc["call"]["options"]["feature_spec"].items()
    }
    spec = TypedSamplingSpec.from_num_neighbors("User", doc["call"]["num_neighbors"])
    with pytest.raises(
        tf.errors.InvalidArgumentError,
        match=r"memgraph_tf layout: blob 0 section table_cat_User: expected one row per table "
        r"row, 2, got 1",
    ):
        decode_typed_sample(
            tf.constant(blob.pack(sections)),
            spec,
            {},
            layout_name="compact",
            raw=raw,
            unpack=ops.unpack_blob,
        )


def test_a_compact_pair_blob_s_halves_decode_to_the_dense_pair_vector(ops, vectors):
    """pair_raw_dense's call in the compact layout: each half, expanded with its prefix, gives
    exactly that half's sections of the dense pair vector."""
    import numpy as np

    from memgraph_tf.ops.sample_decoding import decode_typed_sample

    docs, graph = vectors
    doc = docs["pair_raw_dense"][1]
    call = {**doc["call"], "options": {**doc["call"]["options"], "layout": "compact"}}
    data = kit.sample(kit.embedded_source(graph, _properties), call)
    assert "src.table_cat_User" in blob_names(data)
    raw = {
        label: layout.raw_widths(LabelSpec.from_dict(spec), {"f": 2})
        for label, spec in call["options"]["feature_spec"].items()
    }
    nn = call["num_neighbors"]
    for prefix, label, role in (("src.", "User", "source"), ("dst.", "Product", "target")):
        spec = TypedSamplingSpec.from_num_neighbors(label, nn[role])
        got = decode_typed_sample(
            tf.constant(data),
            spec,
            {},
            layout_name="compact",
            ids=True,
            raw=raw,
            prefix=prefix,
            unpack=ops.unpack_blob,
        )
        want = {
            s["name"][len(prefix) :]: s for s in doc["sections"] if s["name"].startswith(prefix)
        }
        assert set(got) == set(want)
        for name, w in want.items():
            value = got[name].numpy()
            if w["dtype"] == "string":
                value = np.vectorize(lambda b: b.decode("utf-8"), otypes=[object])(value)
            assert list(value.shape) == w["shape"], name
            assert value.reshape(-1).tolist() == w["values"], name


def blob_names(data: bytes) -> list[str]:
    from memgraph_tf import blob

    return [s.name for s in blob.read_table(memoryview(data))]
