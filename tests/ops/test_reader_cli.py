"""The plain C++ reader (memgraph_tf/cc/blob_reader.{h,cc}) through its test harness, built with g++
(AddressSanitizer + UndefinedBehaviorSanitizer where available, so an out-of-bounds read or UB fails
the harness and the test)."""

from __future__ import annotations

from typing import Any

import numpy as np

from memgraph_tf import blob


def cli_array(section: dict[str, Any], np_dtypes: dict[str, Any]) -> np.ndarray:
    shape = tuple(section["shape"])
    if section["dtype"] == "string":
        flat = np.empty(len(section["values"]), dtype=object)
        for i, v in enumerate(section["values"]):
            flat[i] = v.encode("latin-1")  # the harness writes byte b as the code point b
        return flat.reshape(shape)
    return np.asarray(section["values"], dtype=np_dtypes[section["dtype"]]).reshape(shape)


def python_sections(out: dict[str, Any]) -> dict[str, Any]:
    """blob.unpack's result flattened back to one array per section (Ragged -> values,
    row_splits)."""
    flat = {}
    for name, value in out.items():
        if isinstance(value, blob.Ragged):
            flat[name] = value.values
            flat[name + ".row_splits"] = value.row_splits
        else:
            flat[name] = value
    return flat


def assert_cli_matches_python(line: dict[str, Any], data: bytes, helpers) -> None:
    ok, result = helpers.python_result(data)
    if not ok:
        assert line["ok"] is False, f"C++ accepted a blob Python rejects with: {result}"
        assert line["error"] == result
        return
    assert line["ok"] is True, f"C++ rejected a blob Python accepts: {line.get('error')}"
    flat = python_sections(result)
    assert [s["name"] for s in line["sections"]] == list(flat), "section order/names differ"
    for section in line["sections"]:
        got = cli_array(section, helpers.np_dtypes)
        want = np.asarray(flat[section["name"]])
        assert got.shape == want.shape, section["name"]
        if got.dtype == object:
            assert list(got.reshape(-1)) == [bytes(x) for x in want.reshape(-1)], section["name"]
        else:
            assert np.array_equal(got, want.astype(got.dtype), equal_nan=got.dtype.kind == "f"), (
                section["name"]
            )


def test_valid_golden_vectors_decode_to_the_json_values(reader_cli, valid_vector, helpers):
    name, data, doc = valid_vector
    (line,) = helpers.run_cli(reader_cli, frames=[data])
    assert line["ok"] is True, line.get("error")
    assert [s["name"] for s in line["sections"]] == [s["name"] for s in doc["sections"]]
    for got, want in zip(line["sections"], doc["sections"]):
        assert got["dtype"] == want["dtype"]
        assert got["shape"] == want["shape"]
        helpers.assert_same_array(
            cli_array(got, helpers.np_dtypes),
            helpers.expected_array(want),
            f"{name}/{want['name']}",
        )


def test_invalid_golden_vectors_give_the_spec_message(reader_cli, invalid_vector, helpers):
    name, data, doc = invalid_vector
    (line,) = helpers.run_cli(reader_cli, frames=[data])
    assert line["ok"] is False, f"{name}: accepted an invalid vector ({doc['description']})"
    assert line["error"] == doc["error"]


def test_every_truncation_of_every_valid_vector_is_rejected_like_python(
    reader_cli, valid_vector, helpers, tmp_path
):
    name, data, _ = valid_vector
    path = tmp_path / f"{name}.bin"
    path.write_bytes(data)
    lines = helpers.run_cli(reader_cli, "--truncations", str(path))
    assert [line["length"] for line in lines] == list(range(len(data)))
    for line in lines:
        assert line["ok"] is False, f"{name}[:{line['length']}] accepted"
        ok, message = helpers.python_result(data[: line["length"]])
        assert not ok
        assert line["error"] == message


def test_single_byte_mutations_match_the_python_reader(reader_cli, valid_vector, helpers):
    """Every byte of every valid vector replaced by 0x00, 0x01, 0x07, 0x80, 0xff: the C++ reader and
    the Python reader accept the same blobs with the same values and reject the rest with the same
    message (the first broken rule in the spec's order)."""
    _, data, _ = valid_vector
    mutated = helpers.mutations(data)
    lines = helpers.run_cli(reader_cli, frames=mutated)
    assert len(lines) == len(mutated)
    rejected = 0
    for line, blob_bytes in zip(lines, mutated):
        assert_cli_matches_python(line, blob_bytes, helpers)
        rejected += not line["ok"]
    assert rejected > 0


def test_dims_claiming_more_than_held_is_rejected_without_allocating(reader_cli, helpers):
    """A float32 section whose dims claim 2^31-1 x 2^31-1 elements in a 200-byte blob.

    The reader checks each dim (rule 18), the element count against 2^31-1 with an overflow-free
    running product (rule 21) and payload_length against dims * 4 (rule 22) and against the blob's
    size (rule 23) before it records the section; the only allocation before those checks is the
    section vector, reserved after rule 10 proved the table fits inside the blob. Under ASan, an
    attempt to allocate ~2^64 bytes or to read past the blob would abort the harness."""
    good = blob.pack({"x": np.zeros((2, 2), np.float32)})
    big = 2**31 - 1
    claim = bytearray(good)
    claim[32 + 24 : 32 + 40] = big.to_bytes(8, "little") + big.to_bytes(8, "little")
    (line,) = helpers.run_cli(reader_cli, frames=[bytes(claim)])
    assert line["ok"] is False
    assert (
        line["error"]
        == "section 0 ('x') dims: expected <= 2147483647 elements, got more at offset 56"
    )
    # Dims that fit the element limit but not the blob: rejected by payload_length (rule 22).
    claim[32 + 24 : 32 + 40] = (1000).to_bytes(8, "little") + (1000).to_bytes(8, "little")
    (line,) = helpers.run_cli(reader_cli, frames=[bytes(claim)])
    assert line["error"] == "section 0 ('x') payload_length: expected 4000000, got 16 at offset 48"
    # payload_length agreeing with the dims but beyond the blob: rule 23.
    claim[32 + 16 : 32 + 24] = (4000000).to_bytes(8, "little")
    (line,) = helpers.run_cli(reader_cli, frames=[bytes(claim)])
    assert (
        line["error"]
        == "section 0 ('x') payload: expected to end by 176, got end 4000160 at offset 48"
    )


def test_string_payload_length_near_2_to_64_reports_the_exact_end(reader_cli, helpers):
    """payload_offset + payload_length overflows 64 bits: the message still gives the true sum."""
    good = blob.pack({"s": ["ab"]})
    bad = bytearray(good)
    bad[32 + 16 : 32 + 24] = (2**64 - 1).to_bytes(8, "little")
    (line,) = helpers.run_cli(reader_cli, frames=[bytes(bad)])
    ok, message = helpers.python_result(bytes(bad))
    assert not ok
    assert line["error"] == message
    assert f"got end {160 + 2**64 - 1} at offset 48" in line["error"]
