"""MemgraphTf>UnpackBlob (memgraph_tf.ops.unpack_blob) and the op-free decoder
(memgraph_tf.ops.unpack_blob_portable): golden vectors, every truncation, mutations, batching,
ragged outputs, argument errors, gradients."""

from __future__ import annotations

import functools

import numpy as np
import pytest
import tensorflow as tf

from memgraph_tf import blob

DECODERS = ["op", "portable"]


def decoder(ops, kind: str):
    return ops.unpack_blob if kind == "op" else ops.unpack_blob_portable


@functools.cache
def graph_decoder(kind: str, names: tuple, dtypes: tuple, ragged: tuple = ()):
    """The decoder in its own tf.Graph run by a Session: built once, called thousands of times.

    A dedicated graph keeps an error's cost ~1 ms however many tf.functions this test process has
    traced (errors raised inside a tf.function are post-processed against the whole function
    library, which grows through the session). Returns numpy arrays (ragged: flat values).
    """
    from memgraph_tf import ops

    fn = decoder(ops, kind)
    graph = tf.Graph()
    with graph.as_default():
        placeholder = tf.compat.v1.placeholder(tf.string, [])
        out = fn(placeholder, list(names), list(dtypes), ragged=list(ragged))
        out = [o.flat_values if isinstance(o, tf.RaggedTensor) else o for o in out]
    session = tf.compat.v1.Session(graph=graph)

    def run(data: bytes):
        return session.run(out, {placeholder: data})

    return run


def error_of(fn, *args, **kwargs) -> str | None:
    try:
        fn(*args, **kwargs)
    except tf.errors.InvalidArgumentError as exc:
        return exc.message
    return None


def request_for(data: bytes, doc: dict | None = None) -> tuple[tuple, tuple, tuple]:
    """Names/dtypes to ask for: the ragged names of an invalid vector, else every section, else
    'x'."""
    try:
        table = blob.read_table(data)
    except blob.BlobFormatError:
        return ("x",), ("float32",), ()
    if doc and doc.get("ragged"):
        by = {s.name: s.dtype for s in table}
        return tuple(doc["ragged"]), tuple(by[n] for n in doc["ragged"]), tuple(doc["ragged"])
    if not table:
        return ("x",), ("float32",), ()
    return tuple(s.name for s in table), tuple(s.dtype for s in table), ()


def good_blob(names, dtypes, ragged=()) -> bytes:
    """A valid blob holding one element of each requested section (ragged ones as one row)."""
    sections = {}
    for n, d in zip(names, dtypes):
        value = ["a"] if d == "string" else np.zeros([1], helpers_np_dtype(d))
        sections[n] = blob.Ragged(value, [0, 1]) if n in ragged else value
    return blob.pack(sections, {n: d for n, d in zip(names, dtypes)})


def helpers_np_dtype(d: str):
    return {
        "bool": np.bool_,
        "int32": np.int32,
        "int64": np.int64,
        "float32": np.float32,
        "float64": np.float64,
    }[d]


@pytest.mark.parametrize("kind", DECODERS)
def test_valid_golden_vectors_decode_to_the_json_values(ops, kind, valid_vector, helpers):
    name, data, doc = valid_vector
    if not doc["sections"]:
        message = error_of(decoder(ops, kind), data, ["x"], ["float32"])
        assert "blob: section 'x': expected a section named 'x', got none (present: )" in message
        return
    names = [s["name"] for s in doc["sections"]]
    dtypes = [s["dtype"] for s in doc["sections"]]
    out = decoder(ops, kind)(data, names, dtypes)
    assert len(out) == len(names)
    py = blob.unpack(data)
    for got, want in zip(out, doc["sections"]):
        assert got.dtype == tf.as_dtype(want["dtype"])
        helpers.assert_same_array(
            got.numpy(), helpers.expected_array(want), f"{name}/{want['name']}"
        )
        # Same as the Python reader.
        value = py.get(want["name"])
        if isinstance(value, blob.Ragged):
            value = value.values
        if value is not None:
            helpers.assert_same_array(
                got.numpy(), np.asarray(value), f"{name}/{want['name']} vs blob.unpack"
            )


@pytest.mark.parametrize("kind", DECODERS)
def test_invalid_golden_vectors_raise_the_spec_message(ops, kind, invalid_vector):
    name, data, doc = invalid_vector
    names, dtypes, ragged = request_for(data, doc)
    message = error_of(decoder(ops, kind), data, list(names), list(dtypes), ragged=list(ragged))
    assert message is not None, f"{name} accepted ({doc['description']})"
    assert doc["error"] in message
    # Vector of blobs: the bad blob is named by its index.
    good = good_blob(names, dtypes, ragged)
    message = error_of(
        decoder(ops, kind), [good, data], list(names), list(dtypes), ragged=list(ragged)
    )
    assert message is not None and f"blob 1: {doc['error']}" in message


@pytest.mark.parametrize("kind", DECODERS)
def test_ragged_golden_vector_decodes_as_ragged_tensors(ops, kind, helpers):
    data = dict((v[0], v[1]) for v in helpers.valid).get("ragged")
    if data is None:
        pytest.skip("tests/golden/valid/ragged.bin is absent")
    py = blob.unpack(data)
    nbrs, vec = decoder(ops, kind)(
        data, ["nbrs", "vec"], ["int64", "float32"], ragged=["nbrs", "vec"]
    )
    assert isinstance(nbrs, tf.RaggedTensor) and isinstance(vec, tf.RaggedTensor)
    want = py["nbrs"]
    assert nbrs.to_list() == [
        list(want.values[a:b]) for a, b in zip(want.row_splits[:-1], want.row_splits[1:])
    ]
    assert vec.shape.rank == 3 and vec.flat_values.shape[-1] == 2
    assert vec.to_list() == [
        py["vec"].values[a:b].tolist()
        for a, b in zip(py["vec"].row_splits[:-1], py["vec"].row_splits[1:])
    ]
    # A vector of blobs: [batch, (nrows), (ragged), ...], rows of each blob in order.
    other = blob.pack(
        {
            "nbrs": blob.Ragged(np.array([5, 6, 7], np.int64), [0, 1, 3]),
            "vec": blob.Ragged(np.ones((1, 2), np.float32), [0, 0, 1]),
        }
    )
    nb2, vec2 = decoder(ops, kind)(
        [data, other], ["nbrs", "vec"], ["int64", "float32"], ragged=["nbrs", "vec"]
    )
    assert nb2.to_list() == [nbrs.to_list(), [[5], [6, 7]]]
    assert vec2.to_list() == [vec.to_list(), [[], [[1.0, 1.0]]]]
    assert nb2.ragged_rank == 2


@pytest.mark.parametrize("kind", DECODERS)
def test_every_truncation_of_every_valid_vector_is_rejected(ops, kind, valid_vector, helpers):
    name, data, _ = valid_vector
    # A truncated blob fails the format checks, which come before any section lookup, so one traced
    # function (asking for "x") serves every vector.
    run = graph_decoder(kind, ("x",), ("float32",))
    for n in range(len(data)):
        ok, want = helpers.python_result(data[:n])
        assert not ok
        message = error_of(run, data[:n])
        assert message is not None, f"{name}[:{n}] accepted"
        assert f"blob: {want}" in message, f"{name}[:{n}]"


@functools.cache
def graph_checker(names: tuple, dtypes: tuple, ragged: tuple = ()):
    """``memgraph_tf.ops.portable.blob_errors`` in its own tf.Graph (see graph_decoder): for a list
    of blobs, each one's message from the portable decoder's own checks as a scalar call would
    raise it ("" where it decodes), all in one graph run."""
    from memgraph_tf.ops.portable import blob_errors

    graph = tf.Graph()
    with graph.as_default():
        placeholder = tf.compat.v1.placeholder(tf.string, [None])
        out = blob_errors(placeholder, list(names), list(dtypes), ragged=list(ragged))
    session = tf.compat.v1.Session(graph=graph)

    def run(blobs: list[bytes]) -> list[str]:
        return [m.decode("utf-8") for m in session.run(out, {placeholder: blobs})]

    return run


# One rejected mutation in this many also goes through the portable decoder's raising path, whose
# message must be the one blob_errors gave.
RAISING_STRIDE = 25


@pytest.mark.parametrize("kind", DECODERS)
def test_single_byte_mutations_match_the_python_reader(ops, kind, valid_vector, helpers):
    """Each byte of each valid vector set to 0x00, 0x01, 0x07, 0x80, 0xff: both TF decoders accept
    exactly what memgraph_tf.blob.unpack accepts, with its values, and reject the rest with its
    message (all sections requested, ragged pairs as ragged, like blob.unpack).

    The op decodes each mutation. The portable decoder checks all mutations of a vector in one graph
    run (``blob_errors``: the same checks and messages as its raising path), decodes every one it
    accepts, and raises for every RAISING_STRIDE-th one it rejects, with the same message."""
    name, data, _ = valid_vector
    table = blob.read_table(data)
    splits = {s.name for s in table if s.name.endswith(".row_splits")}
    ragged = tuple(s.name for s in table if s.name + ".row_splits" in splits)
    names = tuple(s.name for s in table if s.name not in {r + ".row_splits" for r in ragged})
    by = {s.name: s.dtype for s in table}
    if not names:  # no sections: ask for one that is absent (a valid mutation gives a lookup error)
        names, by = ("x",), {"x": "float32"}
    dtypes = tuple(by[n] for n in names)
    run = graph_decoder(kind, names, dtypes, ragged)
    mutated_blobs = helpers.mutations(data)
    if kind == "portable":
        checked = graph_checker(names, dtypes, ragged)(mutated_blobs)
    rejected = 0
    for i, mutated in enumerate(mutated_blobs):
        ok, want = helpers.python_result(mutated)
        if kind == "op":
            message = error_of(run, mutated)
        else:
            message = checked[i] or None
            if message is not None:
                rejected += 1
                assert message.startswith("blob: "), message
                if rejected % RAISING_STRIDE == 1:
                    raised = error_of(run, mutated)
                    assert raised is not None, f"{name}: the raising path accepted {message}"
                    # The raising path's message (see memgraph_tf/ops/portable.py): the line
                    # "StringToNumberOp could not correctly convert string: <message>".
                    line = raised.split("convert string: ", 1)[1].split("\n", 1)[0]
                    assert line == message
        if message is not None:
            if ok:
                # A mutated name makes the requested section absent: a lookup error, not a format
                # one.
                assert "expected a section named" in message or "expected dtype" in message, message
                continue
            if kind == "op":
                assert f"blob: {want}" in message
            else:  # blob_errors gives the message itself
                assert message == f"blob: {want}"
            continue
        assert ok, f"{name}: accepted a blob Python rejects with {want}"
        for n, got in zip(names, run(mutated)):
            value = want[n].values if isinstance(want[n], blob.Ragged) else want[n]
            if got.dtype.kind == "f":
                assert np.array_equal(
                    got.reshape(-1), np.asarray(value).reshape(-1), equal_nan=True
                )
            else:
                assert got.reshape(-1).tolist() == np.asarray(value).reshape(-1).tolist()


@pytest.mark.parametrize("kind", DECODERS)
def test_dims_claiming_more_than_held_is_rejected_before_allocating(ops, kind):
    """dims [1000, 1000] float32 (4 MB) in a 176-byte blob.

    Both decoders validate before they allocate anything sized by the blob: the op's kernel runs the
    plain reader over every blob (rule 21 bounds the element count without overflow, rule 22 ties
    payload_length to the dims, rule 23 ties it to the blob's real size) and allocates its outputs
    only after every blob and section passed; the portable decoder reads only the blob's own bytes
    (padded to the header's section table) and builds its outputs under a control dependency on the
    check. The last two claims would need 2^64 bytes (float32 [2^31-1, 2^31-1]) and 2^31-1 strings
    (~48 GB of tstring objects, each constructed): a decoder that sized an output by the dims
    before checking them would fail with ResourceExhaustedError or die, not give this message."""
    claim = bytearray(blob.pack({"x": np.zeros((2, 2), np.float32)}))
    claim[32 + 24 : 32 + 40] = (1000).to_bytes(8, "little") * 2
    message = error_of(decoder(ops, kind), bytes(claim), ["x"], ["float32"])
    assert "blob: section 0 ('x') payload_length: expected 4000000, got 16 at offset 48" in message
    claim[32 + 16 : 32 + 24] = (4 * 10**6).to_bytes(8, "little")
    message = error_of(decoder(ops, kind), bytes(claim), ["x"], ["float32"])
    assert (
        "blob: section 0 ('x') payload: expected to end by 176, got end 4000160 at offset 48"
        in message
    )
    # More elements than 2^31 - 1: rule 21, checked with an overflow-free product.
    claim[32 + 24 : 32 + 40] = (2**31 - 1).to_bytes(8, "little") * 2
    message = error_of(decoder(ops, kind), bytes(claim), ["x"], ["float32"])
    assert (
        "blob: section 0 ('x') dims: expected <= 2147483647 elements, got more at offset 56"
        in message
    )
    # 2^31 - 1 strings (within the element limit) whose offsets alone would need 16 GB, in 184
    # bytes.
    strings = bytearray(blob.pack({"s": ["ab"]}))
    strings[32 + 24 : 32 + 32] = (2**31 - 1).to_bytes(8, "little")
    strings[32 + 16 : 32 + 24] = (8 * 2**31).to_bytes(8, "little")
    message = error_of(decoder(ops, kind), bytes(strings), ["s"], ["string"])
    assert (
        "blob: section 0 ('s') payload: expected to end by 184, got end 17179869344 at offset 48"
        in message
    )


@pytest.mark.parametrize("kind", DECODERS)
def test_batched_blobs_stack_along_a_new_leading_dim(ops, kind):
    blobs = [
        blob.pack({"x": np.full((2, 3), i, np.float32), "s": [f"n{i}", ""], "ok": [i % 2 == 0]})
        for i in range(4)
    ]
    x, s, ok = decoder(ops, kind)(blobs, ["x", "s", "ok"], [tf.float32, "string", "bool"])
    assert x.shape == (4, 2, 3)
    assert x.numpy()[:, 0, 0].tolist() == [0.0, 1.0, 2.0, 3.0]
    assert s.numpy().tolist() == [[f"n{i}".encode(), b""] for i in range(4)]
    assert ok.numpy().reshape(-1).tolist() == [True, False, True, False]
    # Sections at different places in different blobs (other sections before them, other order).
    mixed = [
        blob.pack({"x": np.full((2, 3), 7, np.float32), "s": ["a", "b"], "ok": [True]}),
        blob.pack(
            {
                "pad": np.zeros(5, np.int32),
                "ok": [False],
                "s": ["", "ccc"],
                "x": np.full((2, 3), 8, np.float32),
            }
        ),
    ]
    x, s, ok = decoder(ops, kind)(mixed, ["x", "s", "ok"], [tf.float32, "string", "bool"])
    assert x.numpy()[:, 1, 2].tolist() == [7.0, 8.0]
    assert s.numpy().tolist() == [[b"a", b"b"], [b"", b"ccc"]]
    assert ok.numpy().tolist() == [[True], [False]]


@pytest.mark.parametrize("kind", DECODERS)
def test_batched_blobs_with_mismatching_shapes_name_the_blob(ops, kind):
    blobs = [blob.pack({"x": np.zeros((2, 16), np.float32)})] * 3 + [
        blob.pack({"x": np.zeros((3, 16), np.float32)})
    ]
    message = error_of(decoder(ops, kind), blobs, ["x"], ["float32"])
    assert "blob 3 section 'x': expected shape [2,16], got [3,16] (as blob 0)" in message
    # Ragged sections only need the same inner dims.
    r = [blob.pack({"v": blob.Ragged(np.zeros((n, 4), np.float32), [0, n])}) for n in (1, 5)]
    (v,) = decoder(ops, kind)(r, ["v"], ["float32"], ragged=["v"])
    assert v.shape.as_list()[0] == 2 and v.flat_values.shape.as_list() == [6, 4]
    r.append(blob.pack({"v": blob.Ragged(np.zeros((2, 3), np.float32), [0, 2])}))
    message = error_of(decoder(ops, kind), r, ["v"], ["float32"], ragged=["v"])
    assert "blob 2 section 'v': expected shape [*,4], got [*,3] (as blob 0)" in message


@pytest.mark.parametrize("kind", DECODERS)
def test_absent_section_and_wrong_dtype_are_named(ops, kind):
    data = blob.pack({"a": np.zeros(2, np.int64), "b": np.zeros(1, np.float32)})
    message = error_of(decoder(ops, kind), data, ["c"], ["float32"])
    assert (
        "blob: section 'c': expected a section named 'c', got none (present: 'a', 'b')" in message
    )
    message = error_of(decoder(ops, kind), data, ["a"], ["float32"])
    assert "blob: section 'a': expected dtype float32, got int64 at offset 32" in message
    message = error_of(decoder(ops, kind), data, ["a"], ["int64"], ragged=["a"])
    assert (
        "blob: section 'a.row_splits': expected an int64 row-splits section for ragged 'a', "
        "got none" in message
    )


@pytest.mark.parametrize("kind", DECODERS)
def test_shapes_give_static_shapes_and_are_checked(ops, kind):
    data = blob.pack({"x": np.zeros((3, 8), np.float32)})

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def run(b):
        (x,) = decoder(ops, kind)(b, ["x"], ["float32"], shapes=[[None, 8]])
        assert x.shape.as_list() == [None, None, 8]
        return x

    assert run(tf.constant([data, data])).shape == (2, 3, 8)
    message = error_of(decoder(ops, kind), data, ["x"], ["float32"], shapes=[[3, 7]])
    assert "blob section 'x': expected shape [3,7] (the shapes attr), got [3,8]" in message


@pytest.mark.parametrize("kind", DECODERS)
def test_argument_errors_name_the_parameter(ops, kind):
    fn = decoder(ops, kind)
    data = blob.pack({"x": [1.0]})
    with pytest.raises(ValueError, match=r"names: expected at least one section name, got \[\]"):
        fn(data, [], [])
    with pytest.raises(
        ValueError, match=r"dtypes: expected 1 entries \(one per name in \['x'\]\), got 2"
    ):
        fn(data, ["x"], ["float32", "int64"])
    with pytest.raises(
        ValueError,
        match=r"dtypes: expected one of \[.*'float32'.*\] or the tf.DType, got 'float16'",
    ):
        fn(data, ["x"], ["float16"])
    with pytest.raises(ValueError, match=r"ragged: expected names among \['x'\], got \['y'\]"):
        fn(data, ["x"], ["float64"], ragged=["y"])
    with pytest.raises(
        ValueError, match=r"dtypes: expected one of \[.*'float32'.*\] or the tf.DType, got \[1\]"
    ):
        fn(data, ["x"], [[1]])
    with pytest.raises(ValueError, match=r"names: expected each name once, got \['x', 'x'\]"):
        fn(data, ["x", "x"], ["float64", "float64"])
    with pytest.raises(ValueError, match=r"names: expected non-empty str section names, got 3"):
        fn(data, [3], ["float64"])
    with pytest.raises(ValueError, match=r"shapes: expected 1 entries \(one per name\), got 2"):
        fn(data, ["x"], ["float64"], shapes=[[1], [2]])
    rank2 = r"blobs: expected a scalar or a vector of blobs \(rank 0 or 1\), got shape \(1, 1\)"
    with pytest.raises(ValueError, match=rank2):
        fn(tf.constant([[data]]), ["x"], ["float64"])
    with pytest.raises(ValueError, match=rank2):  # the same when traced
        tf.function(lambda b: fn(b, ["x"], ["float64"]))(tf.constant([[data]]))
    message = error_of(fn, tf.constant([], tf.string), ["x"], ["float64"])
    assert "blobs: expected a scalar or a vector of at least 1 blob, got an empty vector" in message
    graph_fn = tf.function(
        lambda b: fn(b, ["x"], ["float64"]), input_signature=[tf.TensorSpec([None], tf.string)]
    )
    message = error_of(graph_fn, tf.constant([], tf.string))
    assert "blobs: expected a scalar or a vector of at least 1 blob, got an empty vector" in message


@pytest.mark.parametrize("kind", DECODERS)
def test_works_in_tf_function_and_tf_data(ops, kind):
    blobs = [
        blob.pack({"x": np.arange(4, dtype=np.float32) + i, "nb": blob.Ragged([i, i + 1], [0, 2])})
        for i in range(5)
    ]

    @tf.function
    def f(b):
        x, nb = decoder(ops, kind)(b, ["x", "nb"], ["float32", "int64"], ragged=["nb"])
        return x, nb.flat_values

    x, nb = f(tf.constant(blobs[2]))
    assert x.numpy().tolist() == [2.0, 3.0, 4.0, 5.0] and nb.numpy().tolist() == [2, 3]
    ds = (
        tf.data.Dataset.from_tensor_slices(blobs)
        .map(lambda b: decoder(ops, kind)(b, ["x"], ["float32"])[0])
        .batch(5)
    )
    (batch,) = list(ds)
    assert batch.numpy()[:, 0].tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    ds = (
        tf.data.Dataset.from_tensor_slices(blobs)
        .batch(2)
        .map(lambda b: decoder(ops, kind)(b, ["x"], ["float32"])[0])
    )
    assert [t.shape[0] for t in ds] == [2, 2, 1]


def test_op_is_registered_not_differentiable(ops):
    """tf.gradients through the op gives None instead of LookupError('No gradient defined')."""
    data = blob.pack({"x": np.ones(3, np.float32)})
    graph = tf.Graph()
    with graph.as_default():
        b = tf.constant(data)
        w = tf.constant(2.0)
        (x,) = ops.unpack_blob(b, ["x"], ["float32"])
        y = tf.reduce_sum(x * w)
        grads = tf.gradients(y, [w, b])
        unpack_op = x.op
        assert unpack_op.type == "MemgraphTf>UnpackBlob"
        from tensorflow.python.framework import ops as tf_ops

        assert tf_ops.get_gradient_function(unpack_op) is None
        assert tf_ops.get_gradient_function(y.op) is not None  # a differentiable op for contrast
    assert grads[1] is None and grads[0] is not None


@pytest.mark.parametrize("kind", DECODERS)
def test_base64url_transport_decodes_in_graph(ops, kind):
    """Blobs leave Memgraph as base64url text with padding (spec section 6): tf.io.decode_base64
    (web-safe alphabet) turns them back into blobs inside the graph."""
    blobs = [
        blob.pack({"x": np.array([i, -i], np.float32), "t": [f"\u00e9{i}" * i]}) for i in range(3)
    ]
    text = tf.constant([blob.b64encode(b) for b in blobs])
    x, t = decoder(ops, kind)(tf.io.decode_base64(text), ["x", "t"], ["float32", "string"])
    assert x.numpy().tolist() == [[0.0, 0.0], [1.0, -1.0], [2.0, -2.0]]
    assert [v.decode() for v in t.numpy().reshape(-1)] == ["", "\u00e91", "\u00e92\u00e92"]


@pytest.mark.parametrize("kind", DECODERS)
@pytest.mark.parametrize("payload_length", [2**64 - 1, 2**64 - 160, 2**63, 2**64 - 161])
def test_payload_end_past_2_to_64_is_printed_exactly(ops, kind, payload_length, helpers):
    """payload_offset (160) + a string section's payload_length may exceed 2^64: the message gives
    the true sum, as Python's integers do."""
    bad = bytearray(blob.pack({"s": ["ab"]}))
    bad[32 + 16 : 32 + 24] = payload_length.to_bytes(8, "little")
    ok, want = helpers.python_result(bytes(bad))
    assert not ok and f"got end {160 + payload_length} at offset 48" in want
    message = error_of(decoder(ops, kind), bytes(bad), ["s"], ["string"])
    assert f"blob: {want}" in message


def test_portable_memory_follows_the_blobs_total_size(tmp_path):
    """20,000 blobs of 32 bytes, each claiming 1024 sections (a 131 KB table): the portable decoder
    must not size anything by the claims (20,000 x 131 KB would be 2.6 GB). Peak RSS of a fresh
    process stays within a few hundred MB of TensorFlow's own."""
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent(
        """
        import resource, struct
        import tensorflow as tf
        from memgraph_tf.ops import unpack_blob_portable
        claim = b"MGTF" + struct.pack("<HHIIQQ", 1, 0, 1024, 0, 32, 0)
        tf.constant(0)  # TF initialised before the baseline
        base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        try:
            unpack_blob_portable(tf.constant([claim] * 20000), ["x"], ["float32"])
        except tf.errors.InvalidArgumentError as exc:
            print("ERR", " ".join(exc.message.splitlines()))
        print("GROWTH_MB", (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) // 1024)
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.strip().splitlines()
    assert (
        "blob 0: section table: expected at least 131104 bytes for 1024 sections, "
        "got 32 at offset 32" in lines[0]
    )
    growth_mb = int(lines[-1].split()[1])
    assert growth_mb < 400, f"peak RSS grew by {growth_mb} MB"


@pytest.mark.parametrize("kind", DECODERS)
def test_error_order_in_a_batch_is_format_first_then_name_major(ops, kind):
    """Both decoders report the same first error: every blob's format before any lookup, then the
    names in request order, each over the blobs in order."""
    ab = blob.pack({"a": [1.0], "b": [2.0]})
    only_a = blob.pack({"a": [1.0]})
    only_b = blob.pack({"b": [2.0]})
    truncated = ab[:-8]
    fn = decoder(ops, kind)
    message = error_of(fn, [ab, only_a, truncated], ["a", "b"], ["float64", "float64"])
    assert (
        f"blob 2: total_length: expected {len(ab) - 8} (the blob's size), "
        f"got {len(ab)} at offset 16" in message
    )
    message = error_of(fn, [ab, only_a, only_b], ["a", "b"], ["float64", "float64"])
    assert "blob 2: section 'a': expected a section named 'a', got none (present: 'b')" in message
    message = error_of(fn, [ab, only_a, only_b], ["b", "a"], ["float64", "float64"])
    assert "blob 1: section 'b': expected a section named 'b', got none (present: 'a')" in message


@pytest.mark.parametrize("kind", DECODERS)
def test_large_payloads_decode_exactly(ops, kind):
    """Payloads past the op's parallel-copy threshold (4 MB: one contiguous range per worker thread)
    and past its streaming-store threshold (16 MB: non-temporal stores after a head that aligns the
    destination), with sizes that are not multiples of any block, alone and in a batch, where the
    second blob's slice of the output starts at an odd address."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((9000, 131), dtype=np.float32)  # 4.7 MB
    y = rng.integers(-(2**62), 2**62, size=(3, 250_001), dtype=np.int64)  # 6 MB
    data = blob.pack({"x": x, "y": y})
    gx, gy = decoder(ops, kind)(data, ["x", "y"], ["float32", "int64"])
    assert gx.numpy().tobytes() == x.tobytes() and gy.numpy().tobytes() == y.tobytes()
    other = blob.pack({"x": x[::-1].copy(), "y": -y})
    (bx,) = decoder(ops, kind)([data, other], ["x"], ["float32"])
    assert bx.numpy().tobytes() == np.stack([x, x[::-1]]).tobytes()

    flags = rng.integers(0, 2, size=(16 << 20) + 13).astype(bool)  # 16 MB + 13 bytes
    (gf,) = decoder(ops, kind)(blob.pack({"f": flags}), ["f"], ["bool"])
    assert np.array_equal(gf.numpy(), flags)
    (bf,) = decoder(ops, kind)([blob.pack({"f": flags}), blob.pack({"f": ~flags})], ["f"], ["bool"])
    assert np.array_equal(bf.numpy(), np.stack([flags, ~flags]))


@pytest.mark.parametrize(
    "length",
    [
        (4 << 20) - 1,
        4 << 20,
        (4 << 20) + 1,
        (16 << 20) - 1,
        (16 << 20) + 64,
        (16 << 20) + 1013,
        (33 << 20) + 7,
    ],
)
def test_copy_ranges_cover_every_byte_around_the_thresholds(ops, length):
    """The op splits large payloads into per-thread ranges (rounded to cache lines) and streams
    those past 16 MB: lengths just around the thresholds, and ones no block size divides, come back
    whole, also when the output slice starts at an odd address (the second blob of a batch)."""
    rng = np.random.default_rng(length)
    flags = rng.integers(0, 2, size=length).astype(bool)
    flags[-64:] = True  # output memory is not cleared: a byte the op skipped holds leftovers
    (one,) = ops.unpack_blob(blob.pack({"f": flags}), ["f"], ["bool"])
    assert np.array_equal(one.numpy(), flags)
    (two,) = ops.unpack_blob([blob.pack({"f": ~flags}), blob.pack({"f": flags})], ["f"], ["bool"])
    assert np.array_equal(two.numpy()[0], ~flags) and np.array_equal(two.numpy()[1], flags)


def test_blobs_of_unknown_static_rank(ops):
    """The op accepts blobs of unknown static rank for dense names (it checks the rank when it
    runs); ragged outputs need the rank to know their nesting, and the portable decoder always needs
    it."""
    data = blob.pack({"x": [1.5], "r": blob.Ragged(np.array([1, 2], np.int64), [0, 2])})
    graph = tf.Graph()
    with graph.as_default():
        unknown = tf.compat.v1.placeholder(tf.string, None)
        (x,) = ops.unpack_blob(unknown, ["x"], ["float64"])
        with pytest.raises(
            ValueError,
            match=r"blobs: expected a tensor of known rank \(0 or 1\) for ragged "
            r"outputs, got unknown rank",
        ):
            ops.unpack_blob(unknown, ["r"], ["int64"], ragged=["r"])
        with pytest.raises(
            ValueError,
            match=r"blobs: expected a scalar or a vector of blobs \(rank 0 or 1\), "
            r"got shape <unknown>",
        ):
            ops.unpack_blob_portable(unknown, ["x"], ["float64"])
    with tf.compat.v1.Session(graph=graph) as session:
        assert session.run(x, {unknown: [data, data]}).tolist() == [[1.5], [1.5]]
        assert session.run(x, {unknown: data}).tolist() == [1.5]
        with pytest.raises(
            tf.errors.InvalidArgumentError,
            match=r"blobs: expected a scalar or a vector of blobs, got shape \[1,1\]",
        ):
            session.run(x, {unknown: [[data]]})
