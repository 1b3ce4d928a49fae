"""The Python packer and reader against the golden vectors (tests/golden, written from the spec)."""

from __future__ import annotations

import json
import pathlib
import re

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


@pytest.mark.parametrize("path", VALID, ids=lambda p: p.stem)
def test_every_truncation_rejected(path: pathlib.Path) -> None:
    _, data = _load(path)
    for cut in range(len(data)):
        with pytest.raises(
            blob.BlobFormatError, match=r"(header|total_length): expected .* at offset (0|16)"
        ):
            blob.unpack(data[:cut])


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
