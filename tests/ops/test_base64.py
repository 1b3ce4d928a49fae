"""The Memgraph transport decoded inside the op: ``unpack_blob(..., encoding="base64")`` and the
plain C++ base64url decoder (memgraph_tf/cc/base64url.{h,cc}) behind it, through the sanitizer-built
harness and through the op; the portable decoder's ``encoding="base64"`` for the values."""

from __future__ import annotations

import base64
import random

import numpy as np
import pytest
import tensorflow as tf

from memgraph_tf import blob

CHAR = "base64: expected a base64url character (A-Z a-z 0-9 - _), got "

# (text, the decoder's message) for texts that are not base64url.
BAD_TEXTS = [
    (b"QUJD+w==", CHAR + "'+' (0x2b) at offset 4"),
    (b"QUJD/w==", CHAR + "'/' (0x2f) at offset 4"),
    (b"QU\x00D", CHAR + "byte 0x00 at offset 2"),
    (b"QUJD\nQUJD", CHAR + "byte 0x0a at offset 4"),
    (b"QUJDR", "base64: expected a data length of 4k, 4k+2 or 4k+3 characters, got 5 at offset 4"),
    (b"QUI==", "base64: expected 1 padding '=' after 3 data characters, got 2 at offset 3"),
    (b"QQ=", "base64: expected 2 padding '=' after 2 data characters, got 1 at offset 2"),
    (b"QUJD===", CHAR + "'=' (0x3d) at offset 4"),
    (b"QUJD=A==", CHAR + "'=' (0x3d) at offset 4"),
]


def texts_of(data: bytes) -> list[bytes]:
    """The padded and the unpadded base64url text of ``data``."""
    padded = base64.urlsafe_b64encode(data)
    return [padded, padded.rstrip(b"=")]


def test_harness_decodes_like_python_and_names_bad_characters(reader_cli, helpers):
    """The plain decoder, in three ranges as the op's threads split a text, gives Python's bytes for
    random data of every length 0..299 (padded and not), and the exact message for bad texts."""
    rng = random.Random(5)
    datas = [bytes(rng.getrandbits(8) for _ in range(n)) for n in range(300)]
    texts = [t for d in datas for t in texts_of(d)]
    lines = helpers.run_cli(reader_cli, base64_frames=texts + [t for t, _ in BAD_TEXTS])
    good, bad = lines[: len(texts)], lines[len(texts) :]
    for text, line in zip(texts, good):
        assert line["ok"] is True, (text, line)
        assert bytes.fromhex(line["decoded"]) == base64.urlsafe_b64decode(
            text + b"=" * (-len(text) % 4)
        )
    assert [line.get("error") for line in bad] == [message for _, message in BAD_TEXTS]


def test_harness_reports_the_first_bad_character_whichever_range_holds_it(reader_cli, helpers):
    text = bytearray(base64.urlsafe_b64encode(bytes(range(256)) * 40))  # 13,656 characters
    late, early = len(text) - 10, len(text) // 2 + 1
    text[late] = ord("*")
    (line,) = helpers.run_cli(reader_cli, base64_frames=[bytes(text)])
    assert line["error"] == CHAR + f"'*' (0x2a) at offset {late}"
    text[early] = ord("!")
    (line,) = helpers.run_cli(reader_cli, base64_frames=[bytes(text)])
    assert line["error"] == CHAR + f"'!' (0x21) at offset {early}"


@pytest.mark.parametrize("kind", ["op", "portable"])
def test_golden_vectors_as_base64_decode_like_the_raw_bytes(ops, kind, valid_vector, helpers):
    name, data, doc = valid_vector
    names = [s["name"] for s in doc["sections"]]
    dtypes = [s["dtype"] for s in doc["sections"]]
    fn = ops.unpack_blob if kind == "op" else ops.unpack_blob_portable
    if not names:  # a blob without sections: asking for one gives the same rejection both ways
        with pytest.raises(
            tf.errors.InvalidArgumentError,
            match="section 'x': expected a section named 'x', got none",
        ) as raw:
            fn(data, ["x"], ["float32"])
        for text in texts_of(data):
            with pytest.raises(tf.errors.InvalidArgumentError, match=_re(raw.value.message)):
                fn(text, ["x"], ["float32"], encoding="base64")
        return
    want = fn(data, names, dtypes)
    for text in texts_of(data):
        got = fn(text, names, dtypes, encoding="base64")
        for n, g, w in zip(names, got, want):
            helpers.assert_same_array(g.numpy(), w.numpy(), f"{name}: {n}")


def test_op_decodes_a_batch_of_texts_with_ragged_sections(ops):
    a = blob.pack(
        {
            "x": np.arange(6, dtype=np.float32).reshape(3, 2),
            "nbrs": blob.Ragged(np.array([4, 5, 6], np.int64), [0, 1, 3]),
        }
    )
    b = blob.pack(
        {"x": -np.ones((3, 2), np.float32), "nbrs": blob.Ragged(np.array([7], np.int64), [0, 0, 1])}
    )
    texts = [blob.b64encode(a), blob.b64encode(b).rstrip("=")]
    x, nbrs = ops.unpack_blob(
        texts, ["x", "nbrs"], ["float32", "int64"], ragged=["nbrs"], encoding="base64"
    )
    rx, rnbrs = ops.unpack_blob([a, b], ["x", "nbrs"], ["float32", "int64"], ragged=["nbrs"])
    assert x.numpy().tobytes() == rx.numpy().tobytes()
    assert nbrs.to_list() == rnbrs.to_list() == [[[4], [5, 6]], [[], [7]]]


def test_op_errors_name_the_blob_and_the_character_offset(ops):
    good = blob.b64encode(blob.pack({"x": [1.0]}))
    for text, message in BAD_TEXTS:
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"(^|\s)blob: " + _re(message)):
            ops.unpack_blob(text, ["x"], ["float64"], encoding="base64")
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"(^|\s)blob 1: " + _re(message)):
            ops.unpack_blob([good, text], ["x"], ["float64"], encoding="base64")


def test_op_checks_the_decoded_blob_with_the_spec_messages(ops):
    """After decoding, the blob rules apply to the decoded bytes (offsets count decoded bytes)."""
    data = blob.pack({"x": [1.0, 2.0]})
    truncated = base64.urlsafe_b64encode(data[:-8])
    with pytest.raises(
        tf.errors.InvalidArgumentError,
        match=_re(
            f"blob: total_length: expected {len(data) - 8} (the blob's size), got "
            f"{len(data)} at offset 16"
        ),
    ):
        ops.unpack_blob(truncated, ["x"], ["float64"], encoding="base64")
    with pytest.raises(tf.errors.InvalidArgumentError, match=_re("blob: magic: expected")):
        ops.unpack_blob(
            base64.urlsafe_b64encode(b"NOPE" + data[4:]), ["x"], ["float64"], encoding="base64"
        )


def test_large_texts_are_decoded_by_threads_and_report_the_first_bad_character(ops):
    """Texts past 4 MB are split between worker threads at whole 4-character groups: the values come
    back whole, and with bad characters in two ranges the first one is reported."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((20_011, 131), dtype=np.float32)  # 10.5 MB, 14 MB of text
    data = blob.pack({"x": x})
    text = base64.urlsafe_b64encode(data)
    for t in (text, text.rstrip(b"=")):
        (got,) = ops.unpack_blob(t, ["x"], ["float32"], encoding="base64")
        assert got.numpy().tobytes() == x.tobytes()
    broken = bytearray(text)
    late, early = len(text) - 100, len(text) // 3 + 2
    broken[late] = ord("+")
    broken[early] = ord("/")
    with pytest.raises(
        tf.errors.InvalidArgumentError, match=_re(CHAR + f"'/' (0x2f) at offset {early}")
    ):
        ops.unpack_blob(bytes(broken), ["x"], ["float32"], encoding="base64")


def test_base64_in_tf_function_and_tf_data(ops):
    texts = [blob.b64encode(blob.pack({"x": np.full(3, i, np.int32)})) for i in range(4)]
    fn = tf.function(lambda t: ops.unpack_blob(t, ["x"], ["int32"], encoding="base64")[0])
    assert fn(tf.constant(texts)).numpy().tolist() == [[i] * 3 for i in range(4)]
    ds = tf.data.Dataset.from_tensor_slices(texts).map(
        lambda t: ops.unpack_blob(t, ["x"], ["int32"], encoding="base64")[0]
    )
    assert [v.numpy().tolist() for v in ds] == [[i] * 3 for i in range(4)]


@pytest.mark.parametrize("kind", ["op", "portable"])
def test_encoding_argument_is_checked(ops, kind):
    fn = ops.unpack_blob if kind == "op" else ops.unpack_blob_portable
    with pytest.raises(
        ValueError, match=r"encoding: expected one of \['raw', 'base64'\], got 'hex'"
    ):
        fn(b"", ["x"], ["float32"], encoding="hex")


def _re(text: str) -> str:
    import re

    return re.escape(text)


def test_size_limit_is_checked_before_anything_is_allocated(reader_cli, helpers):
    """A text whose decoded size would pass the blob limit (2^31-1 bytes) is rejected by the plan,
    which looks at the length and the last characters only: the harness gives it 2.9 GB of reserved,
    untouched address space (under ASan a 2 GB allocation would fail loudly)."""
    limit_chars = (
        2**31 - 1
    ) // 3 * 4 + 2  # 2,863,311,530 characters decode to 2^31-1 bytes exactly
    (ok,) = helpers.run_cli(reader_cli, "--base64-plan-size", str(limit_chars))
    assert ok == {"ok": True, "decoded_bytes": 2**31 - 1}
    (over,) = helpers.run_cli(reader_cli, "--base64-plan-size", str(limit_chars + 1))
    assert over == {
        "ok": False,
        "error": "base64: expected at most 2147483647 decoded bytes (the blob size "
        "limit), got 2147483648 at offset 0",
    }
