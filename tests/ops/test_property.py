"""Property: random section sets round-trip blob.pack -> op, and op == portable == blob.unpack."""

from __future__ import annotations

import itertools

import numpy as np
import tensorflow as tf
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from memgraph_tf import blob

NP = {
    "bool": np.bool_,
    "int32": np.int32,
    "int64": np.int64,
    "float32": np.float32,
    "float64": np.float64,
}
NAMES = st.text(alphabet="abcxyzAZ09_.-:/", min_size=1, max_size=12).filter(
    lambda n: not n.endswith(".row_splits")
)
SHAPES = hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=3)


@st.composite
def dense_section(draw):
    dtype = draw(st.sampled_from(sorted(blob.DTYPES)))
    shape = draw(SHAPES)
    if dtype == "string":
        n = int(np.prod(shape))
        flat = draw(st.lists(st.binary(max_size=6), min_size=n, max_size=n))
        arr = np.empty(n, dtype=object)
        arr[:] = flat
        return dtype, arr.reshape(shape)
    return dtype, draw(hnp.arrays(NP[dtype], shape))


@st.composite
def ragged_section(draw):
    dtype = draw(st.sampled_from(sorted(blob.DTYPES)))
    lengths = draw(st.lists(st.integers(0, 3), min_size=0, max_size=4))
    inner = draw(st.lists(st.integers(0, 2), min_size=0, max_size=1))
    total = sum(lengths)
    shape = tuple([total] + inner)
    if dtype == "string":
        n = int(np.prod(shape))
        arr = np.empty(n, dtype=object)
        arr[:] = draw(st.lists(st.binary(max_size=4), min_size=n, max_size=n))
        values = arr.reshape(shape)
    else:
        values = draw(hnp.arrays(NP[dtype], shape))
    return dtype, blob.Ragged(values, np.cumsum([0] + lengths).astype(np.int64))


@st.composite
def section_sets(draw):
    names = draw(st.lists(NAMES, min_size=1, max_size=5, unique=True))
    sections, dtypes = {}, {}
    for name in names:
        if (
            len(name) <= 29
            and draw(st.booleans())
            and not any(n.startswith(name + ".") for n in names)
        ):
            dtype, value = draw(ragged_section())
        else:
            dtype, value = draw(dense_section())
        sections[name] = value
        dtypes[name] = dtype
    return sections, dtypes


def as_bytes_list(a) -> list:
    return [bytes(x) for x in np.asarray(a, dtype=object).reshape(-1)]


def as_array(a) -> np.ndarray:
    # A rank-0 string tensor's .numpy() is a bytes object: np.asarray would make it dtype S, which
    # drops trailing NUL bytes.
    return np.array(a, dtype=object) if isinstance(a, bytes) else np.asarray(a)


def assert_equal(got, want, what):
    got, want = as_array(got), as_array(want)
    assert got.shape == want.shape, f"{what}: {got.shape} != {want.shape}"
    if want.dtype == object:
        assert as_bytes_list(got) == as_bytes_list(want), what
    else:
        assert got.dtype == want.dtype and got.tobytes() == want.tobytes(), (
            f"{what}: {got} != {want}"
        )


def ragged_rows(values, splits):
    return [np.asarray(values)[a:b] for a, b in itertools.pairwise(splits)]


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(section_sets())
def test_pack_then_op_equals_portable_equals_blob_unpack(ops, case):
    sections, dtypes = case
    data = blob.pack(sections, dtypes)
    reference = blob.unpack(data)
    names = list(sections)
    ragged = [n for n in names if isinstance(sections[n], blob.Ragged)]
    kinds = [dtypes[n] for n in names]
    op_out = ops.unpack_blob(data, names, kinds, ragged=ragged)
    portable_out = ops.unpack_blob_portable(data, names, kinds, ragged=ragged)
    op_batch = ops.unpack_blob([data, data], names, kinds, ragged=ragged)
    portable_batch = ops.unpack_blob_portable([data, data], names, kinds, ragged=ragged)
    # The Memgraph transport: the op decoding base64url text (padded, and not) gives the same
    # tensors.
    text = blob.b64encode(data)
    op_text = ops.unpack_blob(
        [text, text.rstrip("=")], names, kinds, ragged=ragged, encoding="base64"
    )
    for i, name in enumerate(names):
        if isinstance(op_text[i], tf.RaggedTensor):
            assert_equal(
                op_text[i].flat_values.numpy(), op_batch[i].flat_values.numpy(), f"{name} base64"
            )
            for got, want in zip(op_text[i].nested_row_splits, op_batch[i].nested_row_splits):
                assert got.numpy().tolist() == want.numpy().tolist(), f"{name} base64 splits"
        else:
            assert_equal(op_text[i].numpy(), op_batch[i].numpy(), f"{name} base64")
    for i, name in enumerate(names):
        ref = reference[name]
        if isinstance(ref, blob.Ragged):
            for out in (op_out[i], portable_out[i]):
                assert_equal(out.flat_values.numpy(), ref.values, f"{name} values")
                assert out.row_splits.numpy().tolist() == ref.row_splits.tolist(), name
            for out in (op_batch[i], portable_batch[i]):
                assert out.row_splits.numpy().tolist() == [
                    0,
                    len(ref.row_splits) - 1,
                    2 * (len(ref.row_splits) - 1),
                ]
                assert_equal(
                    out.flat_values.numpy(),
                    np.concatenate([ref.values, ref.values]),
                    f"{name} batch",
                )
        else:
            assert_equal(op_out[i].numpy(), ref, f"{name} op")
            assert_equal(portable_out[i].numpy(), ref, f"{name} portable")
            assert_equal(op_batch[i].numpy(), np.stack([ref, ref]), f"{name} op batch")
            assert_equal(portable_batch[i].numpy(), np.stack([ref, ref]), f"{name} portable batch")
        # And the packer's input round-trips.
        original = sections[name]
        if isinstance(original, blob.Ragged):
            assert_equal(op_out[i].flat_values.numpy(), original.values, f"{name} round trip")
        else:
            assert_equal(op_out[i].numpy(), original, f"{name} round trip")
