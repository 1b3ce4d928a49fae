"""Sample blobs of any layout back to the dense layout's tensors, in the graph: the one place where
the compact and sparse layouts (:mod:`memgraph_tf.layout`, docs/blob-format.md section 8) are
gathered and densified.

:func:`decode_sample` decodes ``tf_features.sample`` / ``sample_per_node`` blobs with either decoder
(the C++ op or the op-free one, passed as ``unpack``) and returns what the dense layout holds:
``features_h``, ``mask_h`` (when padding), optionally ``ids_h`` and ``labels``. For the compact and
sparse layouts it

1. decodes the per-hop ``index_h`` sections and the table (``table``, or ``table_columns`` /
   ``table_values``, ragged pairs whose per-blob lengths differ) of every blob;
2. checks, per blob, that every index is ``-1`` or a row of that blob's table, that the table's
   parts agree in length and (sparse) that the columns are in ``0..d-1`` and increasing within a
   row;
3. concatenates the tables of all blobs into one (plus a zero row for ``-1``), densifies a CSR table
   with ``tf.scatter_nd`` (the design notes' sparse -> dense rule), and gathers ``features_h`` by
   the indices shifted by each blob's first row.

Only stock TensorFlow ops are added, so a SavedModel built on the op-free decoder still runs on the
stock TF Serving image. Used by the serving bundles (:mod:`memgraph_tf.serving.export`) and the
client pipeline (:func:`memgraph_tf.client.pipeline.sample_dataset`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from memgraph_tf import blob, layout

logger = logging.getLogger(__name__)

__all__ = ["SampleRows", "decode_sample", "decode_sample_rows", "zero_node_blob"]

_ROWS = "rows"  # _gather_layout(densify=False)'s key of the table


def _unpacker(unpack: Callable[..., list[Any]] | None) -> Callable[..., list[Any]]:
    if unpack is not None:
        return unpack
    from memgraph_tf import ops

    return ops.unpack_blob


def decode_sample(
    blobs: Any,
    fanouts: Sequence[int],
    width: int,
    dtype: str = "float32",
    *,
    layout_name: str = "dense",
    pad: bool = True,
    features: bool = True,
    ids: bool = False,
    labels: bool = False,
    unpack: Callable[..., list[Any]] | None = None,
    encoding: str = "raw",
) -> dict[str, Any]:
    """Decodes sample blobs written in ``layout_name`` into the dense layout's tensors.

    ``blobs``: a scalar string tensor (one blob of ``n`` seeds) or a vector of blobs (each of ``n``
    seeds, e.g. ``sample_per_node``'s ``n = 1``); ``fanouts``, ``width`` (``d``), ``dtype``, ``pad``
    (``options.low_degree`` is ``pad``) and ``labels`` (``options.label_property`` was set) describe
    how the blobs were sampled; ``features``/``ids`` ask for ``features_h``/``ids_h``; ``unpack`` is
    :func:`memgraph_tf.ops.unpack_blob` (default) or :func:`~memgraph_tf.ops.unpack_blob_portable`;
    ``encoding`` as theirs.

    Guarantees: returns ``features_h`` (h = 0..K, ``dtype``, ``[n, f1..fh, d]``), ``mask_h``
    (h = 1..K, bool, only when ``pad``), ``ids_h`` (int64, with ``ids``) and ``labels`` (int64
    ``[n]``, with ``labels``), each with a leading ``[batch]`` dimension for a vector of blobs:
    exactly the tensors that decoding the dense layout of the same sample gives (features equal in
    value; a sparse ``-0.0`` reads ``0.0``). A malformed blob raises
    ``tf.errors.InvalidArgumentError``: the decoder's message, or for the layout rules above one
    naming the blob, the section and the rule (``memgraph_tf layout: blob 2 section index_1:
    expected table rows -1..u-1 ...``). Only stock TensorFlow ops are added to ``unpack``'s.
    """
    import tensorflow as tf

    fanouts = [int(f) for f in fanouts]
    if not (features or ids):
        raise ValueError(
            "features, ids: expected at least one of them true (the table rows are what is "
            "decoded), got both false"
        )
    all_sections = layout.sample_sections(
        fanouts, width, dtype, pad=pad, labels=labels, batch=None, layout=layout_name
    )
    fn = _unpacker(unpack)
    blobs = tf.convert_to_tensor(blobs, dtype=tf.string)
    if layout_name == "dense":
        wanted = [
            s
            for s in all_sections
            if (s.role == "features" and features)
            or s.role == "mask"
            or (s.role == "ids" and ids)
            or s.role == "labels"
        ]
        tensors = fn(
            blobs,
            [s.name for s in wanted],
            [s.dtype for s in wanted],
            shapes=[list(s.shape) for s in wanted],
            encoding=encoding,
        )
        return dict(zip([s.name for s in wanted], tensors))
    scalar = blobs.shape.rank == 0
    vec = tf.reshape(blobs, [1]) if scalar else blobs
    table_roles = ("table", "columns", "values") if features else ()
    wanted = [
        s
        for s in all_sections
        if s.role in ("index", "labels") + table_roles or (s.role == "table_ids" and ids)
    ]
    names = [s.name for s in wanted]
    ragged = [n for n in layout.ragged_names(all_sections) if n in names]
    decoded = dict(
        zip(
            names,
            fn(
                vec,
                names,
                [s.dtype for s in wanted],
                ragged=ragged,
                shapes=[list(s.shape) for s in wanted],
                encoding=encoding,
            ),
        )
    )
    out = _gather_layout(decoded, fanouts, width, dtype, layout_name, pad, features, ids)
    if labels:
        out[layout.LABELS] = decoded[layout.LABELS]
    if scalar:
        out = {k: v[0] for k, v in out.items()}
    return out


class SampleRows(NamedTuple):
    """What :func:`decode_sample_rows` returns: the tables of a vector of blobs as one table,
    ``rows`` (``[r + 1, d]`` in the features' dtype, the last row zeros: a dense tensor for the
    compact layout, a ``tf.SparseTensor`` in canonical order for the sparse one), and per hop h
    the table row of every slot, ``index[h]`` (int64 ``[batch, n, f1..fh]``; a padded slot points
    at the zero row) and, when padding, ``masks[h]`` (bool, the same shape; None for h = 0 and
    when not padding)."""

    rows: Any
    index: list[Any]
    masks: list[Any]


def decode_sample_rows(
    blobs: Any,
    fanouts: Sequence[int],
    width: int,
    dtype: str = "float32",
    *,
    layout_name: str,
    pad: bool = True,
    unpack: Callable[..., list[Any]] | None = None,
    encoding: str = "raw",
) -> SampleRows:
    """Decodes a vector of compact or sparse sample blobs into their tables and row indices,
    without gathering: ``tf.gather(densified rows, index[h])`` is exactly :func:`decode_sample`'s
    ``features_h`` for the same blobs (and ``masks[h]`` its ``mask_h``), so a model that reads
    each table row once (:meth:`memgraph_tf.client.graphsage.GraphSAGE.call_table`) never makes
    the ``[slots, d]`` features. Arguments as :func:`decode_sample`'s (``blobs`` a vector).

    Guarantees: the same checks, hence the same rejections and messages, as :func:`decode_sample`
    (every index ``-1`` or a row of its blob's table; the table's parts agree; sparse columns in
    ``0..d-1`` and increasing within a row); only stock TensorFlow ops are added to ``unpack``'s;
    ValueError for the dense layout (its blobs hold no table) or a blob tensor that is not a
    vector."""
    import tensorflow as tf

    fanouts = [int(f) for f in fanouts]
    if layout_name not in ("compact", "sparse"):
        raise ValueError(
            f"layout_name: expected 'compact' or 'sparse' (a layout with a table), got "
            f"{layout_name!r}"
        )
    blobs = tf.convert_to_tensor(blobs, dtype=tf.string)
    if blobs.shape.rank != 1:
        raise ValueError(f"blobs: expected a vector of blobs (rank 1), got shape {blobs.shape}")
    all_sections = layout.sample_sections(
        fanouts, width, dtype, pad=pad, batch=None, layout=layout_name
    )
    wanted = [
        s for s in all_sections if s.role in ("index", "table", "columns", "values", "table_ids")
    ]
    names = [s.name for s in wanted]
    ragged = [n for n in layout.ragged_names(all_sections) if n in names]
    decoded = dict(
        zip(
            names,
            _unpacker(unpack)(
                blobs,
                names,
                [s.dtype for s in wanted],
                ragged=ragged,
                shapes=[list(s.shape) for s in wanted],
                encoding=encoding,
            ),
        )
    )
    out = _gather_layout(
        decoded, fanouts, width, dtype, layout_name, pad, True, True, densify=False
    )
    rows, position = _distinct_rows(out[layout.TABLE_IDS], out[_ROWS], width)
    position = tf.concat([position, [_kept_count(rows)]], 0)  # row r (padded slots) -> zero row
    hops = range(len(fanouts) + 1)
    return SampleRows(
        rows,
        [tf.gather(position, out[layout.index_name(h)]) for h in hops],
        [out.get(layout.mask_name(h)) if h else None for h in hops],
    )


def _kept_count(rows: Any) -> Any:
    """The number of rows before the zero row of a :class:`SampleRows` table."""
    import tensorflow as tf

    shape = rows.dense_shape if isinstance(rows, tf.SparseTensor) else tf.shape(rows, tf.int64)
    return shape[0] - 1


def _distinct_rows(ids: Any, table: Any, width: int) -> tuple[Any, Any]:
    """The rows of the concatenated tables with one row per distinct (table id, content), and
    where each row went: ``(rows, position)``, ``rows`` ``[k + 1, d]`` (dense for a compact
    ``table`` ``[r, d]``, a ``tf.SparseTensor`` for a sparse one, ``(row splits, columns,
    values)``), its last row zeros; ``position`` ``[r]`` each row's row in ``rows``.

    A row is merged into the first row of its table id only when their values are equal as
    numbers (the same columns and values; 0.0 equals -0.0, and a row holding NaN is never merged),
    so blobs that disagree about a node (sampled at different times, or made up) keep their own
    rows: what a blob's rows hold, hence its scores, does not depend on the other blobs of the
    call."""
    import tensorflow as tf

    r = tf.shape(ids, out_type=tf.int64)[0]
    everyone = tf.range(r)
    distinct, by_id = tf.unique(ids, out_idx=tf.int64)
    first = tf.math.unsorted_segment_min(everyone, by_id, tf.size(distinct, out_type=tf.int64))
    same_id = tf.gather(first, by_id)  # the first row with this row's table id
    if isinstance(table, tuple):
        splits, columns, values = table
        sizes = splits[1:] - splits[:-1]
        entries = tf.shape(columns, out_type=tf.int64)[0]
        entry_row = tf.ragged.row_splits_to_segment_ids(splits)
        theirs = tf.gather(splits, tf.gather(same_id, entry_row)) + (
            tf.range(entries) - tf.gather(splits, entry_row)
        )
        theirs = tf.minimum(theirs, tf.maximum(entries - 1, 0))  # (lengths differ: told apart)
        differs = tf.logical_not(
            tf.equal(tf.gather(columns, theirs), columns)
            & tf.equal(tf.gather(values, theirs), values)
        )
        differing = tf.math.unsorted_segment_max(tf.cast(differs, tf.int32), entry_row, r)
        equal = tf.equal(sizes, tf.gather(sizes, same_id)) & (differing <= 0)
    else:
        equal = tf.reduce_all(tf.equal(table, tf.gather(table, same_id)), axis=1)
    keep, position = tf.unique(tf.where(equal, same_id, everyone), out_idx=tf.int64)
    k = tf.shape(keep, out_type=tf.int64)[0]
    if not isinstance(table, tuple):
        rows = tf.concat([tf.gather(table, keep), tf.zeros([1, width], table.dtype)], 0)
        return rows, position
    picked = tf.gather(tf.RaggedTensor.from_row_splits(tf.range(entries), splits), keep)
    at = picked.flat_values
    indices = tf.stack([picked.value_rowids(), tf.cast(tf.gather(columns, at), tf.int64)], 1)
    return tf.SparseTensor(indices, tf.gather(values, at), tf.stack([k + 1, width])), position


class _Table:
    """The tables of a vector of blobs, concatenated: ``rows`` (global row count), ``starts`` [B]
    (each blob's first row) and ``sizes`` [B] (its row count)."""

    def __init__(self, starts: Any, sizes: Any, rows: Any) -> None:
        self.starts, self.sizes, self.rows = starts, sizes, rows


def _one_row_spans(rt: Any) -> tuple[Any, Any]:
    """(start, length) per blob of the values of ragged pairs decoded from a vector of blobs
    (``[B, (rows), (k), ...]``), whatever their row count."""
    import tensorflow as tf

    outer, inner = rt.row_splits, rt.values.row_splits
    starts = tf.gather(inner, outer[:-1])
    return starts, tf.gather(inner, outer[1:]) - starts


def _check(ok: Any, *message: Any) -> Any:
    """A stock ``Assert`` op raising ``InvalidArgumentError`` with one message, ``memgraph_tf
    layout: `` then the ``message`` parts (str, or integer tensors written in decimal) when ``ok``
    is false; the message carries no quote characters (``Assert`` escapes them)."""
    import tensorflow as tf

    parts = [
        p if isinstance(p, str) else tf.strings.as_string(tf.cast(p, tf.int64)) for p in message
    ]
    return tf.debugging.Assert(ok, [tf.strings.join(["memgraph_tf layout: "] + parts)])


def _first_bad_blob(bad: Any) -> Any:
    """The index of the first true entry of the vector ``bad`` (0 when none, also when empty)."""
    import tensorflow as tf

    padded = tf.concat([tf.cast(bad, tf.int32), [0]], 0)
    return tf.argmax(padded, output_type=tf.int64)


def _pick(values: Any, at: Any) -> Any:
    """``values[at]`` for a vector, 0 when ``at`` is out of range (an error message's operand)."""
    import tensorflow as tf

    at = tf.minimum(tf.cast(at, tf.int64), tf.size(values, tf.int64))
    return tf.gather(tf.concat([values, tf.zeros([1], values.dtype)], 0), at)


def _gather_layout(
    decoded: dict[str, Any],
    fanouts: list[int],
    width: int,
    dtype: str,
    layout_name: str,
    pad: bool,
    features: bool,
    ids: bool,
    densify: bool = True,
) -> dict[str, Any]:
    """The layout's checks, then (``densify``) ``features_h``/``ids_h``/``mask_h`` gathered from
    the concatenated tables, or (not ``densify``; features and ids) the ``r`` rows of the
    concatenated tables as ``_ROWS`` (compact: ``[r, d]``; sparse: row splits, columns and values)
    and ``table_ids`` (``[r]``), with ``index_h`` (the global row of each slot, ``r`` for ``-1``)
    and ``mask_h``."""
    import tensorflow as tf

    hops = len(fanouts)
    checks = []
    table = None
    dense = None
    if features and layout_name == "compact":
        rt = decoded[layout.TABLE]
        starts, sizes = _one_row_spans(rt)
        table = _Table(starts, sizes, tf.shape(rt.flat_values, out_type=tf.int64)[0])
        dense = rt.flat_values
    elif features:
        cols, vals = decoded[layout.TABLE_COLUMNS], decoded[layout.TABLE_VALUES]
        starts = cols.row_splits[:-1]
        sizes = cols.row_splits[1:] - starts
        table = _Table(starts, sizes, cols.row_splits[-1])
        _, nnz = _one_row_spans(cols)
        _, vnnz = _one_row_spans(vals)
        bad = tf.not_equal(nnz, vnnz)
        b = _first_bad_blob(bad)
        checks.append(
            _check(
                tf.logical_not(tf.reduce_any(bad)),
                "blob ",
                b,
                f" section {layout.TABLE_VALUES}: "
                f"expected as many values as {layout.TABLE_COLUMNS} has columns, ",
                _pick(nnz, b),
                ", got ",
                _pick(vnnz, b),
            )
        )
        column = cols.flat_values
        row = cols.values.value_rowids()  # the global table row of every entry
        same_row = tf.equal(row[1:], row[:-1])
        bad_col = (column < 0) | (column >= width)
        bad_order = tf.concat([[False], same_row & (column[1:] <= column[:-1])], 0)
        for what, mask in (
            ("columns in 0..d-1", bad_col),
            ("columns increasing within a row", bad_order),
        ):
            at = _first_bad_blob(mask)
            # the blob of that entry's table row (searched for that entry alone)
            blob_at = tf.searchsorted(cols.row_splits, _pick(row, at)[None], side="right")[0] - 1
            checks.append(
                _check(
                    tf.logical_not(tf.reduce_any(mask)),
                    "blob ",
                    blob_at,
                    f" section {layout.TABLE_COLUMNS}: expected {what} (d = {width}), got ",
                    _pick(column, at),
                    " in table row ",
                    _pick(row, at) - _pick(starts, blob_at),
                )
            )
        with tf.control_dependencies(checks):
            if densify:
                indices = tf.stack([row, tf.cast(column, tf.int64)], axis=1)
                dense = tf.scatter_nd(indices, vals.flat_values, tf.stack([table.rows + 1, width]))
            else:  # (row splits, columns, values): the CSR of the concatenated tables
                dense = (cols.values.row_splits, tf.identity(column), vals.flat_values)
    id_rows = None
    if ids:
        rt = decoded[layout.TABLE_IDS]
        id_starts, id_sizes = _one_row_spans(rt)
        id_rows = rt.flat_values
        if table is None:
            table = _Table(id_starts, id_sizes, tf.shape(id_rows, out_type=tf.int64)[0])
        else:
            bad = tf.not_equal(id_sizes, table.sizes)
            b = _first_bad_blob(bad)
            checks.append(
                _check(
                    tf.logical_not(tf.reduce_any(bad)),
                    "blob ",
                    b,
                    f" section {layout.TABLE_IDS}: expected one id per table row, ",
                    _pick(table.sizes, b),
                    ", got ",
                    _pick(id_sizes, b),
                )
            )
    out: dict[str, Any] = {}
    for h in range(hops + 1):
        name = layout.index_name(h)
        index = tf.cast(decoded[name], tf.int64)  # [B, n, f1..fh]
        flat = tf.reshape(index, [tf.shape(index)[0], -1])
        bad = (flat < -1) | (flat >= table.sizes[:, None])
        bad_blob = tf.reduce_any(bad, axis=1)
        b = _first_bad_blob(bad_blob)
        row_b = tf.gather(flat, tf.minimum(b, tf.shape(flat, out_type=tf.int64)[0] - 1))
        bad_b = tf.gather(bad, tf.minimum(b, tf.shape(bad, out_type=tf.int64)[0] - 1))
        got = _pick(row_b, _first_bad_blob(bad_b))
        check = _check(
            tf.logical_not(tf.reduce_any(bad_blob)),
            "blob ",
            b,
            f" section {name}: expected table rows -1..u-1 (u = ",
            _pick(table.sizes, b),
            "), got ",
            got,
        )
        with tf.control_dependencies([check] + checks):
            extra = [1] * (index.shape.rank - 1)
            shifted = index + tf.reshape(table.starts, [-1] + extra)
            rows = tf.where(index >= 0, shifted, table.rows)  # -1 -> the zero row after the tables
            if not densify:
                out[name] = rows
                features = ids = False  # (the rows are gathered by the caller)
            if features:
                padded = tf.concat([dense, tf.zeros([1, width], dense.dtype)], 0)
                out[layout.features_name(h)] = tf.gather(padded, rows)
            if ids:
                out[layout.ids_name(h)] = tf.gather(tf.concat([id_rows, [layout.PAD_ID]], 0), rows)
            if pad and h:
                out[layout.mask_name(h)] = index >= 0
    if not densify:
        out[_ROWS] = dense
        out[layout.TABLE_IDS] = id_rows
    return out


def zero_node_blob(
    fanouts: Sequence[int],
    width: int,
    dtype: str = "float32",
    *,
    layout_name: str = "dense",
    pad: bool = True,
) -> bytes:
    """The blob ``sample_per_node`` would write, in ``layout_name``, for a node with key 0, zero
    features and no neighbours (every neighbour slot padded, or with ``pad`` false resampled from
    the node itself): a valid input for warmup requests.

    Guarantees: the sections, dtypes and shapes of :func:`memgraph_tf.layout.sample_sections` with
    n = 1 and no labels; :func:`decode_sample` of it gives zero features (and, with ``pad``, false
    masks)."""
    fanouts = [int(f) for f in fanouts]
    sections = layout.sample_sections(fanouts, width, dtype, pad=pad, batch=1, layout=layout_name)
    out: dict[str, Any] = {}
    for s in sections:
        fill = 0 if s.hop in (None, 0) or not pad else layout.PAD_ID
        if s.role in ("ids", "index"):
            out[s.name] = np.full(s.shape, fill, dtype=s.dtype)
        elif s.role == "features":
            out[s.name] = np.zeros(s.shape, dtype=s.dtype)
        elif s.role == "mask":
            out[s.name] = np.zeros(s.shape, dtype=bool)
        elif s.role == "table_ids":
            out[s.name] = blob.Ragged(np.zeros([1], np.int64), [0, 1])
        elif s.role == "table":
            out[s.name] = blob.Ragged(np.zeros([1, width], dtype), [0, 1])
        elif s.role == "columns":
            out[s.name] = blob.Ragged(np.zeros([0], np.int32), [0, 0])
        elif s.role == "values":
            out[s.name] = blob.Ragged(np.zeros([0], dtype), [0, 0])
    return blob.pack(out)
