"""memgraph_tf.blob.pack / unpack: inference, conversions, errors, the stdlib-only path, round
trips."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memgraph_tf import blob

REPO = pathlib.Path(__file__).resolve().parents[2]


def test_python_list_inference() -> None:
    out = blob.unpack(
        blob.pack({"b": [True, False], "i": [[1, 2], [3, 4]], "f": [1, 2.5], "s": ["x", b"y"]})
    )
    assert out["b"].dtype == np.bool_ and out["i"].dtype == np.int64 and out["i"].shape == (2, 2)
    assert out["f"].dtype == np.float64 and out["f"].tolist() == [1.0, 2.5]
    assert out["s"].tolist() == [b"x", b"y"]


def test_dtype_override_and_scalar() -> None:
    out = blob.unpack(blob.pack({"f": [1, 2], "n": 3}, dtypes={"f": "float32", "n": "int32"}))
    assert out["f"].dtype == np.float32 and out["n"].shape == () and out["n"].dtype == np.int32


def test_copy_false_returns_read_only_views() -> None:
    data = blob.pack({"x": np.arange(4, dtype=np.float32)})
    view = blob.unpack(data, copy=False)["x"]
    assert not view.flags.writeable
    assert blob.unpack(data)["x"].flags.writeable


@pytest.mark.parametrize(
    ("sections", "dtypes", "message"),
    [
        (
            {"x": [[1, 2], [3]]},
            None,
            r"section 'x': expected length 2 at index \[1\], got length 1 .*Ragged",
        ),
        (
            {"x": [1, "a"]},
            None,
            r"section 'x': expected values of one kind, got int64 and string \(first string at "
            r"index 1\)",
        ),
        (
            {"x": [1.5]},
            {"x": "int64"},
            r"section 'x': expected int64 values, got float 1.5 at index 0",
        ),
        (
            {"x": [2**63]},
            None,
            r"section 'x': expected int64 values in \[-9223372036854775808, 9223372036854775807\], "
            r"got 9223372036854775808 at index 0",
        ),
        (
            {"x": [1]},
            {"x": "float16"},
            r"section 'x': expected dtype one of \[.*'float32'.*\], got 'float16'",
        ),
        (
            {"x": [1]},
            {"y": "int64"},
            r"dtypes: expected names of given sections \['x'\], got \['y'\]",
        ),
        (
            {"bad name": [1]},
            None,
            r"section name 'bad name': expected characters \[A-Za-z0-9_.:/-\], got ' '",
        ),
        ({"n" * 41: [1]}, None, r"expected 1..40 bytes, got 41"),
        (
            {"x": np.zeros(2, np.float16)},
            None,
            r"section 'x': expected a numpy dtype of .*, got float16",
        ),
        (
            {"x": np.array([1.5])},
            {"x": "int64"},
            r"section 'x': expected values convertible to int64 without changing kind, got float64",
        ),
        (
            {"x": np.array([2**40])},
            {"x": "int32"},
            r"section 'x': expected int32 values in \[-2147483648, 2147483647\], got 1099511627776",
        ),
        (
            {"x": blob.Dense([1, 2, 3], [2, 2], "int64")},
            None,
            r"section 'x': expected 4 elements for shape \[2, 2\], got 3",
        ),
        (
            {"x": blob.Ragged([1, 2, 3], [0, 2])},
            None,
            r"ragged 'x': expected row_splits starting at 0, non-decreasing, ending at 3",
        ),
        (
            {"x": blob.Ragged([1], [0, 1]), "x.row_splits": [0]},
            None,
            r"section 'x.row_splits': expected a unique name, got a duplicate",
        ),
        ({"x": {1, 2}}, None, r"section 'x': expected an array-like, a nested list, .* got set"),
        (
            {"x": [object()]},
            None,
            r"section 'x': expected bool, int, float, str or bytes values, got object",
        ),
    ],
)
def test_pack_errors_name_the_section(sections, dtypes, message) -> None:
    with pytest.raises(blob.BlobFormatError, match=message):
        blob.pack(sections, dtypes)


def test_base64url_transport_round_trip() -> None:
    data = blob.pack({"x": np.arange(100, dtype=np.int64)})
    text = blob.pack_b64({"x": np.arange(100, dtype=np.int64)})
    assert "+" not in text and "/" not in text and blob.b64decode(text) == data
    assert blob.unpack_b64(text)["x"].tolist() == list(range(100))
    with pytest.raises(
        blob.BlobFormatError, match=r"base64: expected base64url text with padding, got '\*\*\*'"
    ):
        blob.b64decode("***")


def test_stdlib_only_packer_gives_same_bytes() -> None:
    """Inside Memgraph numpy may be missing: packing must work, and give the golden bytes."""
    script = r"""
import json, pathlib, sys
sys.modules["numpy"] = None  # make 'import numpy' fail
from memgraph_tf import blob
assert blob._np is None
out = {}
for p in sorted(pathlib.Path(sys.argv[1]).glob("*.json")):
    doc = json.loads(p.read_text())
    secs = {s["name"]: blob.Dense(s["values"], s["shape"], s["dtype"]) for s in doc["sections"]}
    out[p.stem] = blob.pack(secs) == p.with_suffix(".bin").read_bytes()
nested = blob.pack({"a": [[1.5, 2.0]], "s": ["q"]}, {"a": "float32"})
print(json.dumps({"golden": out, "nested": nested.hex()}))
"""
    result = subprocess.run(
        [sys.executable, "-c", script, str(REPO / "tests" / "golden" / "valid")],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
    )
    report = json.loads(result.stdout)
    assert report["golden"] and all(report["golden"].values()), report
    expected = blob.pack(
        {"a": np.array([[1.5, 2.0]], np.float32), "s": np.array(["q"], dtype=object)}
    )
    assert bytes.fromhex(report["nested"]) == expected


_DTYPES = st.sampled_from(["bool", "int32", "int64", "float32", "float64", "string"])


@st.composite
def _section(draw):
    dtype = draw(_DTYPES)
    shape = draw(st.lists(st.integers(0, 3), min_size=0, max_size=4))
    n = int(np.prod(shape)) if shape else 1
    if dtype == "string":
        values = draw(st.lists(st.binary(max_size=6), min_size=n, max_size=n))
        return (
            np.array(values, dtype=object).reshape(shape)
            if shape
            else np.array(values[0], dtype=object)
        )
    if dtype == "bool":
        elems = st.booleans()
    elif dtype.startswith("int"):
        bits = 31 if dtype == "int32" else 63
        elems = st.integers(-(2**bits), 2**bits - 1)
    else:
        elems = st.floats(allow_nan=False, width=32 if dtype == "float32" else 64)
    values = draw(st.lists(elems, min_size=n, max_size=n))
    return np.array(values, dtype=blob._NUMPY_DTYPES[dtype]).reshape(shape)


@settings(max_examples=150, deadline=None)
@given(
    st.dictionaries(st.from_regex(r"[A-Za-z0-9_]{1,12}", fullmatch=True), _section(), max_size=5)
)
def test_round_trip_random_sections(sections) -> None:
    data = blob.pack(sections)
    out = blob.unpack(data)
    assert list(out) == list(sections)
    for name, arr in sections.items():
        assert out[name].shape == arr.shape
        if arr.dtype == object:
            assert out[name].tolist() == arr.tolist()
        else:
            assert out[name].dtype == arr.dtype
            np.testing.assert_array_equal(out[name], arr)
    assert blob.pack({k: out[k] for k in out}) == data  # canonical: same values -> same bytes
    spans = [(info.payload_offset, info.payload_length) for info in blob.read_table(data)]
    assert blob.payload_spans(data) == spans


def test_array_module_inputs() -> None:
    import array

    dense = blob.pack({"x": blob.Dense(array.array("d", [1.0, 2.0]), [2], "float64")})
    plain = blob.pack({"x": array.array("d", [1.0, 2.0])})
    assert dense == plain == blob.pack({"x": np.array([1.0, 2.0])})
    converted = blob.pack({"x": blob.Dense(array.array("d", [1.0, 2.0]), [2], "float32")})
    assert blob.unpack(converted)["x"].dtype == np.float32
