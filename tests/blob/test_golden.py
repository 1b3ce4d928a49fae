"""The Python packer and reader against the golden vectors (tests/golden, written from the spec)."""

from __future__ import annotations

import json
import pathlib
import re
import struct

import numpy as np
import pytest

from memgraph_tf import blob

GOLDEN = pathlib.Path(__file__).resolve().parent.parent / "golden"
VALID = sorted((GOLDEN / "valid").glob("*.json"))
INVALID = sorted((GOLDEN / "invalid").glob("*.json"))


def _load(path: pathlib.Path) -> tuple[dict, bytes]:
    return json.loads(path.read_text()), path.with_suffix(".bin").read_bytes()


def test_golden_vectors_exist() -> None:
    assert len(VALID) >= 8 and len(INVALID) >= 35


@pytest.mark.parametrize("path", VALID, ids=lambda p: p.stem)
def test_packer_bytes_equal_golden(path: pathlib.Path) -> None:
    doc, data = _load(path)
    sections = {s["name"]: blob.Dense(s["values"], s["shape"], s["dtype"]) for s in doc["sections"]}
    assert blob.pack(sections) == data


@pytest.mark.parametrize("path", VALID, ids=lambda p: p.stem)
def test_packer_from_nested_numpy_equals_golden(path: pathlib.Path) -> None:
    doc, data = _load(path)
    sections = {}
    for s in doc["sections"]:
        if s["dtype"] == "string":
            arr = np.array(s["values"], dtype=object).reshape(s["shape"])
        else:
            arr = np.array(s["values"], dtype=blob._NUMPY_DTYPES[s["dtype"]]).reshape(s["shape"])
        sections[s["name"]] = arr
    assert blob.pack(sections) == data


@pytest.mark.parametrize("path", VALID, ids=lambda p: p.stem)
def test_reader_decodes_golden_values(path: pathlib.Path) -> None:
    doc, data = _load(path)
    table = {s.name: s for s in blob.read_table(data)}
    assert [s["name"] for s in doc["sections"]] == list(table)
    out = blob.unpack(data)
    for s in doc["sections"]:
        name = s["name"]
        if name.endswith(".row_splits") and name[: -len(".row_splits")] in out:
            got = out[name[: -len(".row_splits")]].row_splits
        else:
            got = out[name]
            if isinstance(got, blob.Ragged):
                got = got.values
        assert table[name].dtype == s["dtype"]
        assert list(got.shape) == s["shape"]
        if s["dtype"] == "string":
            assert [v.decode("utf-8") for v in got.reshape(-1)] == s["values"]
        else:
            expected = np.array(s["values"], dtype=blob._NUMPY_DTYPES[s["dtype"]])
            np.testing.assert_array_equal(got.reshape(-1), expected)
            assert got.dtype == expected.dtype


@pytest.mark.parametrize("path", INVALID, ids=lambda p: p.stem)
def test_invalid_vectors_rejected_with_spec_message(path: pathlib.Path) -> None:
    doc, data = _load(path)
    with pytest.raises(blob.BlobFormatError, match=re.escape(doc["error"])):
        blob.unpack(data)


TRUNCATION_ERRORS = {
    "unpack": r"(header|total_length): expected .* at offset (0|16)",
    "payload_spans": r"^(header|total_length): expected .* at offset (0|16)$",
}


@pytest.mark.parametrize("reader", sorted(TRUNCATION_ERRORS))
@pytest.mark.parametrize("path", VALID, ids=lambda p: p.stem)
def test_every_truncation_rejected(path: pathlib.Path, reader: str) -> None:
    """``blob.unpack`` and ``blob.payload_spans`` refuse every prefix of a valid blob."""
    _, data = _load(path)
    for cut in range(len(data)):
        with pytest.raises(blob.BlobFormatError, match=TRUNCATION_ERRORS[reader]):
            getattr(blob, reader)(data[:cut])


def test_dims_claim_more_than_held_rejected_before_allocating() -> None:
    """The payload-bounds rule (23) runs before any array is created: the 512 MB claim never
    allocates."""
    _doc, data = _load(GOLDEN / "invalid" / "dims_claim_more_than_held.json")
    import tracemalloc

    tracemalloc.start()
    with pytest.raises(
        blob.BlobFormatError, match=r"payload: expected to end by 480, got end 512000432"
    ):
        blob.unpack(data)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 1_000_000


def test_ragged_pairs_come_back_as_ragged() -> None:
    _, data = _load(GOLDEN / "valid" / "ragged.json")
    out = blob.unpack(data)
    assert set(out) == {"nbrs", "vec"}
    rows = [
        out["nbrs"].values[a:b].tolist()
        for a, b in zip(out["nbrs"].row_splits, out["nbrs"].row_splits[1:])
    ]
    assert rows == [[10, 11], [], [12, 13, 14]]
    assert out["vec"].values.shape == (3, 2)


# -- blob.payload_spans: the payloads of a blob from blob.pack, refused as read_table refuses ----
SPAN_CHECKS = [  # the invalid vectors breaking a rule payload_spans checks
    "bad_magic",
    "bad_magic_binary",
    "bad_version",
    "dims_claim_more_than_held",
    "short_header",
    "table_truncated",
    "too_many_sections",
    "total_length_mismatch",
]


@pytest.mark.parametrize("path", VALID, ids=lambda p: p.stem)
def test_payload_spans_are_read_tables(path: pathlib.Path) -> None:
    _, data = _load(path)
    spans = [(info.payload_offset, info.payload_length) for info in blob.read_table(data)]
    assert blob.payload_spans(data) == spans
    assert blob.payload_spans(memoryview(data)) == spans


@pytest.mark.parametrize("path", INVALID, ids=lambda p: p.stem)
def test_payload_spans_refuse_a_blob_they_cannot_read_with_the_readers_message(
    path: pathlib.Path,
) -> None:
    """A blob breaking a rule of what payload_spans reads (the header, the table's size, each
    payload within the data) is refused with read_table's message; any other invalid blob
    gives spans within the data, after the table (its other rules are read_table's)."""
    doc, data = _load(path)
    if path.stem in SPAN_CHECKS:
        with pytest.raises(blob.BlobFormatError, match=re.escape(doc["error"])):
            blob.payload_spans(data)
        return
    spans = blob.payload_spans(data)
    table_end = blob.HEADER_BYTES + blob.SECTION_ENTRY_BYTES * len(spans)
    assert spans and all(table_end <= at and at + n <= len(data) for at, n in spans)


def test_payload_spans_refuse_empty_data_and_a_payload_inside_the_table() -> None:
    with pytest.raises(
        blob.BlobFormatError, match=r"^header: expected at least 32 bytes, got 0 at offset 0$"
    ):
        blob.payload_spans(b"")
    data = bytearray(blob.pack({"x": np.arange(3, dtype=np.int64)}))
    struct.pack_into("<Q", data, blob.HEADER_BYTES + 8, 0)  # section 0's payload offset
    with pytest.raises(
        blob.BlobFormatError,
        match=r"^section 0 \('x'\) payload_offset: expected 160, got 0 at offset 40$",
    ):
        blob.payload_spans(data)
