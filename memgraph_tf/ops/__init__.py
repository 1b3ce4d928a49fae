"""TensorFlow decoders for memgraph-tf blobs (format v1, ``docs/blob-format.md``).

* :func:`unpack_blob` -- the C++ op ``MemgraphTf>UnpackBlob`` (validate, then one copy per section).
  The op library is compiled on first use (see :mod:`memgraph_tf.ops._loader`).
* :func:`unpack_blob_portable` -- the same results from stock TensorFlow ops only, for SavedModels
  served by the stock TF Serving image (which cannot load custom ops).
* :func:`build_library` / :func:`load_library` -- compile (cached) / load the op library; the public
  entry points for code outside this package (``memgraph-tf build-ops``, op bundles in
  ``memgraph_tf.serving.export``). :class:`OpLibraryError` when it cannot be built or loaded.

Both take ``blobs`` (a scalar string tensor holding one blob, or a vector of blobs), the section
``names`` to decode, their ``dtypes`` and the names to decode as ragged, and return one tensor per
name: for a scalar blob the section's own shape; for a vector of blobs the sections stacked along a
new leading batch dimension (every blob must have the same shape for a section). A ragged name comes
back as a ``tf.RaggedTensor``: ``[nrows, (ragged), ...]`` for a scalar blob and
``[batch, (nrows), (ragged), ...]`` for a vector. Malformed blobs raise
``tf.errors.InvalidArgumentError`` whose message contains the spec's message (field and offset).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from memgraph_tf.lazy import lazy_attributes
from memgraph_tf.ops._args import DTYPES, ENCODINGS, check_encoding, check_shapes, normalize_args
from memgraph_tf.ops._loader import OpLibraryError, build_library, load_library

__all__ = [
    "DTYPES",
    "ENCODINGS",
    "OpLibraryError",
    "build_library",
    "load_library",
    "unpack_blob",
    "unpack_blob_portable",
]


def unpack_blob(
    blobs: Any,
    names: str | Sequence[str],
    dtypes: Any,
    ragged: Iterable[str] = (),
    shapes: Sequence[Any] | None = None,
    name: str | None = None,
    encoding: str = "raw",
) -> list[Any]:
    """Decodes sections of blob(s) with the C++ op ``MemgraphTf>UnpackBlob``.

    Guarantees: returns one tensor per name in ``names`` order (``tf.RaggedTensor`` for names in
    ``ragged``), each with the dtype given in ``dtypes``; every blob is validated in full before any
    output is allocated. Raises ``tf.errors.InvalidArgumentError`` naming the blob index and the
    spec's message for malformed blobs, an absent section, a dtype mismatch, an invalid ragged pair
    or (vector of blobs) a shape that differs from blob 0's; ``ValueError`` naming the parameter for
    bad arguments. ``shapes`` (optional, one per name, ``None`` dims allowed) gives the static
    section shapes and is checked against every blob. An empty vector of blobs is rejected
    (``InvalidArgumentError``: the output shapes come from the blobs). ``blobs`` of unknown static
    rank are accepted for dense names only. Not differentiable.

    ``encoding="base64"`` takes base64url text (padded or not: the form blobs leave Memgraph in)
    instead of raw blobs and decodes it inside the op, with several threads for large texts: no
    ``tf.io.decode_base64`` step and no intermediate string tensor. A bad character or length is an
    ``InvalidArgumentError`` ``base64: expected ..., got ... at offset N`` (N counts characters).
    """
    import tensorflow as tf

    encoding = check_encoding(encoding)
    names, blob_dtypes, ragged_flags = normalize_args(names, dtypes, ragged)
    check_shapes(shapes, names)
    attr_shapes = [] if shapes is None else [tf.TensorShape(s) for s in shapes]
    module = load_library()
    blobs = tf.convert_to_tensor(blobs, dtype=tf.string)
    if blobs.shape.rank is not None and blobs.shape.rank > 1:
        raise ValueError(
            f"blobs: expected a scalar or a vector of blobs (rank 0 or 1), got shape {blobs.shape}"
        )
    tf_dtypes = [tf.as_dtype(d) for d in blob_dtypes]  # blob dtype names are TF's names
    num_ragged = sum(ragged_flags)
    values, row_splits, batch_splits = module.memgraph_tf_unpack_blob(
        blobs,
        names=names,
        dtypes=tf_dtypes,
        ragged=ragged_flags,
        num_ragged=num_ragged,
        shapes=attr_shapes,
        encoding=encoding,
        name=name,
    )
    return _assemble(blobs, values, row_splits, batch_splits, ragged_flags)


def _assemble(
    blobs: Any,
    values: Sequence[Any],
    row_splits: Sequence[Any],
    batch_splits: Sequence[Any],
    ragged_flags: Sequence[bool],
) -> list[Any]:
    import tensorflow as tf

    out = []
    r = 0
    batched = blobs.shape.rank == 1 if blobs.shape.rank is not None else None
    for i, is_ragged in enumerate(ragged_flags):
        if not is_ragged:
            out.append(values[i])
            continue
        rows = tf.RaggedTensor.from_row_splits(values[i], row_splits[r], validate=False)
        if batched is None:
            raise ValueError(
                "blobs: expected a tensor of known rank (0 or 1) for ragged outputs, "
                "got unknown rank"
            )
        if batched:
            rows = tf.RaggedTensor.from_row_splits(rows, batch_splits[r], validate=False)
        out.append(rows)
        r += 1
    return out


# ``unpack_blob_portable`` is :func:`memgraph_tf.ops.portable.unpack_blob_portable` (same contract
# and results as :func:`unpack_blob` from stock TensorFlow ops only), imported on first access so
# that ``import memgraph_tf.ops`` does not import TensorFlow.
__getattr__, __dir__ = lazy_attributes(
    __name__, {"unpack_blob_portable": "memgraph_tf.ops.portable"}, globals()
)
