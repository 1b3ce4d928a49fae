"""The encoder core both GraphSAGE models share (:class:`~memgraph_tf.client.graphsage.GraphSAGE`
over the sample layout's hop tensors, :class:`~memgraph_tf.client.typed_graphsage.TypedGraphSAGE`
over typed slot tables): the masked mean of sampled neighbours, a layer's output from its self and
neighbour transforms, and the sparse products that let a first layer read each distinct feature
row once (``rows`` + each slot's row index instead of per-slot features).

Every function is a pure function of its tensors (graph code, usable in ``tf.function`` and
SavedModels)."""

from __future__ import annotations

from typing import Any

import keras
import tensorflow as tf

from memgraph_tf.client.pipeline import csr_entries


def masked_mean(values: Any, mask: Any = None) -> Any:
    """The mean of ``values`` ``[..., f, d]`` over the neighbour axis ``-2``, counting only the
    slots whose ``mask`` ``[..., f]`` (bool or 0/1 floats; None: every slot) is set; zero valid
    slots give zeros."""
    if mask is None:
        return keras.ops.mean(values, axis=-2)
    m = keras.ops.expand_dims(keras.ops.cast(mask, values.dtype), -1)
    total = keras.ops.sum(values * m, axis=-2)
    return total / keras.ops.maximum(keras.ops.sum(m, axis=-2), 1.0)


def layer_output(
    out: Any, bias: Any, activation: Any = keras.ops.relu, normalize: bool = False
) -> Any:
    """A GraphSAGE layer's output from its concatenated self and neighbour transforms ``[...,
    2 * units]``: ``activation(out + bias)`` (None: none), then with ``normalize`` each row divided
    by its L2 norm (at least 1e-12)."""
    out = out + bias
    if activation is not None:
        out = activation(out)
    if normalize:
        out = out / keras.ops.maximum(keras.ops.norm(out, axis=-1, keepdims=True), 1e-12)
    return out


def valid_slots(index: tf.Tensor, mask: tf.Tensor | None) -> tuple[tf.Tensor, ...]:
    """The valid slots of ``index`` ``[n, f]`` (``mask`` ``[n, f]``; None: every slot), in
    parent-major order: ``(parent, row, weight)`` -- each slot's parent (int64), its row (int64)
    and its weight in the parent's masked mean (1 / the parent's valid slots)."""
    fanout = int(index.shape[-1])
    flat = tf.reshape(tf.cast(index, tf.int64), [-1])
    if mask is None:
        slot = tf.range(tf.size(flat, out_type=tf.int64))
        parent = slot // fanout
        return parent, flat, tf.fill(tf.shape(flat), 1.0 / fanout)
    mask = tf.reshape(tf.cast(mask, tf.bool), [-1, fanout])
    share = 1.0 / tf.maximum(tf.reduce_sum(tf.cast(mask, tf.float32), axis=1), 1.0)
    slot = tf.where(tf.reshape(mask, [-1]))[:, 0]
    parent = slot // fanout
    return parent, tf.gather(flat, slot), tf.gather(share, parent)


def rows_mean(
    rows: tf.Tensor, index: tf.Tensor, mask: tf.Tensor | None, csr: bool = True
) -> tf.Tensor:
    """The masked mean over the last axis of ``tf.gather(rows, index)`` (``[..., f, d]`` ->
    ``[..., d]``; zero valid slots -> zeros), as one sparse-dense product over the valid slots
    (``csr``: as :func:`sparse_matmul`'s)."""
    fanout = int(index.shape[-1])
    flat = tf.reshape(index, [-1, fanout])
    parent, row, weight = valid_slots(
        flat, None if mask is None else tf.reshape(mask, [-1, fanout])
    )
    matrix = tf.SparseTensor(
        tf.stack([parent, row], axis=1),
        weight,
        tf.stack([tf.shape(flat, out_type=tf.int64)[0], tf.shape(rows, out_type=tf.int64)[0]]),
    )
    out = sparse_matmul(matrix, rows, csr)
    out = tf.reshape(out, tf.concat([tf.shape(index)[:-1], tf.shape(rows)[-1:]], axis=0))
    out.set_shape(index.shape[:-1].concatenate(rows.shape[-1:]))
    return out


def sparse_matmul(matrix: tf.SparseTensor, dense: Any, csr: bool = True) -> tf.Tensor:
    """``matrix [n, k] x dense [k, m]``, differentiable in ``dense``, for a ``matrix`` whose
    entries are grouped by row in increasing row order (as the CSR conversion reads them):
    TensorFlow's CSR product, on CPU several times faster than ``tf.sparse.sparse_dense_matmul``,
    with the gradient ``matrix^T x upstream`` (TensorFlow's own gradient of the CSR product also
    builds the sparse side's and needs static shapes). Not ``csr``:
    ``tf.sparse.sparse_dense_matmul`` itself -- what a serving bundle's graph uses
    (:meth:`GraphSAGE.call_table`), so that it holds only the long-standing sparse op, not the CSR
    matrix ops and their variant handles."""
    if not csr:
        out = tf.sparse.sparse_dense_matmul(matrix, dense)
        out.set_shape([None, dense.shape[-1]])
        return out
    csr = tf.raw_ops.SparseTensorToCSRSparseMatrix(
        indices=matrix.indices, values=matrix.values, dense_shape=matrix.dense_shape
    )

    @tf.custom_gradient
    def product(b: tf.Tensor) -> Any:
        def grad(upstream: tf.Tensor) -> tf.Tensor:
            return tf.raw_ops.SparseMatrixMatMul(a=csr, b=upstream, transpose_a=True)

        return tf.raw_ops.SparseMatrixMatMul(a=csr, b=b), grad

    out = product(tf.convert_to_tensor(dense))
    out.set_shape([None, dense.shape[-1]])
    return out


def csr_table(
    indices: tf.Tensor, values: tf.Tensor, count: tf.Tensor, width: int
) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor, int]:
    """The CSR table (``splits``, ``columns``, ``values``, ``width``) of ``count`` rows whose
    entries ``indices`` ``[nnz, 2]`` are in row-major order (a ``tf.SparseTensor``'s)."""
    row_of = indices[:, 0]
    splits = tf.searchsorted(row_of, tf.range(count + 1), side="left", out_type=tf.int64)
    return splits, indices[:, 1], values, width


def sparse_rows(
    splits: tf.Tensor, columns: tf.Tensor, values: tf.Tensor, width: int, rows: tf.Tensor
) -> tf.SparseTensor:
    """The rows ``rows`` (a vector) of the CSR table (``splits``, ``columns``, ``values``) as a
    ``tf.SparseTensor`` ``[len(rows), width]`` in row-major order."""
    owner, at = csr_entries(splits, rows)
    return tf.SparseTensor(
        tf.stack([owner, tf.gather(columns, at)], axis=1),
        tf.gather(values, at),
        tf.stack([tf.size(rows, out_type=tf.int64), tf.constant(width, tf.int64)]),
    )


def sparse_rows_mean(
    splits: tf.Tensor,
    columns: tf.Tensor,
    values: tf.Tensor,
    width: int,
    index: tf.Tensor,
    mask: tf.Tensor | None,
) -> tf.SparseTensor:
    """The masked mean of the rows ``index`` ``[n, f]`` of the CSR table (as in
    :func:`sparse_rows`) per parent, as a ``tf.SparseTensor`` ``[n, width]`` with one entry per
    (parent, column) that some valid child has (zero valid children -> an empty row), grouped by
    parent in increasing order."""
    parent, row, weight = valid_slots(index, mask)
    owner, at = csr_entries(splits, row)
    parent, column = tf.gather(parent, owner), tf.gather(columns, at)
    # one entry per (parent, column): first appearances keep the parents in order
    unique, where = tf.unique(parent * width + column, out_idx=tf.int64)
    size = tf.size(unique, out_type=tf.int64)
    total = tf.math.unsorted_segment_sum(
        tf.gather(weight, owner) * tf.gather(values, at), where, size
    )
    # the keys back to (parent, column) in float64, which vectorises: column + 0.5 keeps the
    # quotient half a column away from an integer, whatever rounding the division gets
    parent = tf.cast(tf.math.floor((tf.cast(unique, tf.float64) + 0.5) / width), tf.int64)
    return tf.SparseTensor(
        tf.stack([parent, unique - parent * width], axis=1),
        total,
        tf.stack([tf.shape(index, out_type=tf.int64)[0], tf.constant(width, tf.int64)]),
    )
