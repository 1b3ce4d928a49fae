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
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from memgraph_tf import blob, layout, typed_sampling

logger = logging.getLogger(__name__)

__all__ = [
    "DensePairBlobs",
    "SampleRows",
    "decode_sample",
    "decode_sample_rows",
    "decode_typed_sample",
    "zero_node_blob",
    "zero_typed_node_blob",
]

_ROWS = "rows"  # _expand(densify=False)'s key of the table


def _unpacker(unpack: Callable[..., list[Any]] | None) -> Callable[..., list[Any]]:
    if unpack is not None:
        return unpack
    from memgraph_tf import ops

    return ops.unpack_blob


def _unpack(
    fn: Callable[..., list[Any]],
    blobs: Any,
    wanted: Sequence[Any],
    encoding: str,
    *,
    prefix: str = "",
    all_sections: Sequence[Any] | None = None,
) -> dict[str, Any]:
    """``{section name: tensor}``: the ``wanted`` sections (:class:`memgraph_tf.layout.Section`)
    of ``blobs``, unpacked by ``fn`` in one call with their dtypes and shapes. ``prefix`` (a pair
    blob's half) is put before the names read, not the names returned; with ``all_sections`` (the
    blob's every section) the wanted ones :func:`memgraph_tf.layout.ragged_names` lists come back
    ragged (without it ``fn`` is given no ``ragged``)."""
    names = [s.name for s in wanted]
    more: dict[str, Any] = {}
    if all_sections is not None:
        more["ragged"] = [prefix + n for n in layout.ragged_names(all_sections) if n in names]
    tensors = fn(
        blobs,
        [prefix + n for n in names],
        [s.dtype for s in wanted],
        shapes=[list(s.shape) for s in wanted],
        encoding=encoding,
        **more,
    )
    return dict(zip(names, tensors))


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
        return _unpack(fn, blobs, wanted, encoding)
    scalar = blobs.shape.rank == 0
    vec = tf.reshape(blobs, [1]) if scalar else blobs
    table_roles = ("table", "columns", "values") if features else ()
    wanted = [
        s
        for s in all_sections
        if s.role in ("index", "labels") + table_roles or (s.role == "table_ids" and ids)
    ]
    decoded = _unpack(fn, vec, wanted, encoding, all_sections=all_sections)
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


def _check_counts(want: Any, got: Any, section: str, what: str) -> Any:
    """A :func:`_check` that the per-blob counts ``got`` equal ``want``; its message names the
    first blob where they differ, ``section``, ``what`` was expected and both counts."""
    import tensorflow as tf

    bad = tf.not_equal(want, got)
    b = _first_bad_blob(bad)
    return _check(
        tf.logical_not(tf.reduce_any(bad)),
        "blob ",
        b,
        f" section {section}: expected {what}, ",
        _pick(want, b),
        ", got ",
        _pick(got, b),
    )


def _pick(values: Any, at: Any) -> Any:
    """``values[at]`` for a vector, 0 when ``at`` is out of range (an error message's operand)."""
    import tensorflow as tf

    at = tf.minimum(tf.cast(at, tf.int64), tf.size(values, tf.int64))
    return tf.gather(tf.concat([values, tf.zeros([1], values.dtype)], 0), at)


class _Slots(NamedTuple):
    """One per-hop index section and the dense sections it expands to (None: not asked for)."""

    index: str
    features: str | None
    ids: str | None
    mask: str | None


class _TableNames(NamedTuple):
    """The sections of one feature table: its node keys, and its rows (compact) or CSR parts."""

    table_ids: str
    table: str
    columns: str
    values: str


_HOMOGENEOUS = _TableNames(
    layout.TABLE_IDS, layout.TABLE, layout.TABLE_COLUMNS, layout.TABLE_VALUES
)


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
    """The homogeneous layout's expansion: one table, ``index_h`` for h = 0..K (``densify``: as
    :func:`_expand`'s)."""
    slots = [
        _Slots(
            layout.index_name(h),
            layout.features_name(h) if features else None,
            layout.ids_name(h) if ids else None,
            layout.mask_name(h) if pad and h else None,
        )
        for h in range(len(fanouts) + 1)
    ]
    return _expand(decoded, _HOMOGENEOUS, slots, width, layout_name, features, ids, densify)


def _expand(
    decoded: dict[str, Any],
    names: _TableNames,
    slots: Sequence[_Slots],
    width: int,
    layout_name: str,
    features: bool,
    ids: bool,
    densify: bool = True,
) -> dict[str, Any]:
    """The one graph-side expansion of a compact/sparse feature table (``names``, decoded from a
    vector of blobs) and its index sections (``slots``) into the dense sections: checks the
    layout rules (docs/blob-format.md section 8), concatenates the blobs' tables (a CSR one
    densified) and gathers every slot's row (a zero row, ``PAD_ID`` and mask false for ``-1``).
    With ``features`` false the table's extent comes from its ``table_ids``. Not ``densify``
    (features and ids): no slot is gathered; instead each slot's index section holds the global
    row of each slot (``r`` for ``-1``), ``_ROWS`` the ``r`` rows of the concatenated tables
    (compact: ``[r, d]``; sparse: row splits, columns and values) and ``table_ids`` their ids
    (``[r]``); masks as usual."""

    checks: list[Any] = []
    table, dense = _feature_table(decoded, names, width, layout_name, features, densify, checks)
    table, id_rows = _id_table(decoded, names, table, ids or not features, checks)
    out: dict[str, Any] = {}
    for slot in slots:
        _expand_slot(decoded, slot, table, dense, id_rows, width, densify, checks, out)
    if not densify:
        out[_ROWS] = dense
        out[layout.TABLE_IDS] = id_rows
    return out


def _feature_table(
    decoded: dict[str, Any],
    names: _TableNames,
    width: int,
    layout_name: str,
    features: bool,
    densify: bool,
    checks: list[Any],
) -> tuple[Any, Any]:
    """``(table, rows)`` of :func:`_expand`'s feature table: the concatenated tables' extent
    (a :class:`_Table`, None without ``features``) and their rows (compact: ``[r, d]``; sparse:
    densified, or its CSR parts when not ``densify``); the sparse layout's checks appended to
    ``checks``."""
    import tensorflow as tf

    if features and layout_name == "compact":
        rt = decoded[names.table]
        starts, sizes = _one_row_spans(rt)
        return _Table(starts, sizes, tf.shape(rt.flat_values, out_type=tf.int64)[0]), rt.flat_values
    if not features:
        return None, None
    cols, vals = decoded[names.columns], decoded[names.values]
    starts = cols.row_splits[:-1]
    sizes = cols.row_splits[1:] - starts
    table = _Table(starts, sizes, cols.row_splits[-1])
    _, nnz = _one_row_spans(cols)
    _, vnnz = _one_row_spans(vals)
    checks.append(
        _check_counts(nnz, vnnz, names.values, f"as many values as {names.columns} has columns")
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
                f" section {names.columns}: expected {what} (d = {width}), got ",
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
    return table, dense


def _id_table(
    decoded: dict[str, Any], names: _TableNames, table: Any, wanted: bool, checks: list[Any]
) -> tuple[Any, Any]:
    """``(table, id rows)`` of :func:`_expand`: with ``wanted``, the concatenated tables' node
    keys (and the table's extent from them when ``table`` is None; else a check that they agree,
    appended to ``checks``); else ``(table, None)``."""
    import tensorflow as tf

    id_rows = None
    if wanted:
        rt = decoded[names.table_ids]
        id_starts, id_sizes = _one_row_spans(rt)
        id_rows = rt.flat_values
        if table is None:
            table = _Table(id_starts, id_sizes, tf.shape(id_rows, out_type=tf.int64)[0])
        else:
            checks.append(
                _check_counts(table.sizes, id_sizes, names.table_ids, "one id per table row")
            )
    return table, id_rows


def _expand_slot(
    decoded: dict[str, Any],
    slot: _Slots,
    table: Any,
    dense: Any,
    id_rows: Any,
    width: int,
    densify: bool,
    checks: list[Any],
    out: dict[str, Any],
) -> None:
    """One slot of :func:`_expand`: its index checked against its blob's table, then its
    features, ids and mask (or, not ``densify``, its global rows) written to ``out``."""
    import tensorflow as tf

    name = slot.index
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
            out[name] = rows  # (the rows are gathered by the caller)
        elif slot.features is not None and dense is not None:
            padded = tf.concat([dense, tf.zeros([1, width], dense.dtype)], 0)
            out[slot.features] = tf.gather(padded, rows)
        if densify and slot.ids is not None:
            out[slot.ids] = tf.gather(tf.concat([id_rows, [layout.PAD_ID]], 0), rows)
        if slot.mask is not None:
            out[slot.mask] = index >= 0


def decode_typed_sample(
    blobs: Any,
    spec: Any,
    widths: Mapping[str, int],
    dtype: str = "float32",
    *,
    layout_name: str = "dense",
    ids: bool = False,
    labels: bool = False,
    prefix: str = "",
    unpack: Callable[..., list[Any]] | None = None,
    encoding: str = "raw",
    raw: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Decodes typed sample blobs (``tf_features.sample_typed``) written in ``layout_name`` into
    the typed dense layout's tensors -- the typed model's inputs by name.

    ``blobs``: a scalar string tensor (one blob of ``n`` seeds) or a vector of blobs; ``spec``
    (:class:`~memgraph_tf.typed_sampling.TypedSamplingSpec`), ``widths`` (feature width per
    label; 0 or absent: none) and ``dtype`` describe how they were sampled; ``ids`` asks for the
    ``ids_h*`` sections, ``labels`` for ``labels`` (``options.label_property`` was set);
    ``prefix``: the sections' name prefix (a pair blob's ``src.`` / ``dst.``: one endpoint of
    ``tf_features.sample_pairs``; ``labels`` must then be false); ``unpack``, ``encoding`` as
    in :func:`decode_sample`; ``raw``: per label sampled with ``options.feature_spec``, its
    :class:`~memgraph_tf.layout.RawWidths` (docs/blob-format.md section 11).

    Guarantees: returns, unprefixed, ``features_h{h}_{label}`` (labels with features), the raw
    sections of each ``raw`` label's slot tables (``bag_h{h}_{label}`` as flat values and
    ``.row_splits``, one row per cell, row-major over every blob's ``[n, slots, Wb]``),
    ``mask_h{h}_{label}`` (h >= 1), with ``ids`` ``ids_h{h}_{label}`` and with ``labels``
    ``labels``, each ``[n, slots, ...]`` (a leading ``[batch]`` for a vector of blobs): exactly
    what decoding the dense layout of the same sample gives. Compact and sparse tables are
    expanded by the same graph-side code as :func:`decode_sample`'s, one table per label, with
    its checks and messages (naming the blob and the typed section). Only stock TensorFlow ops
    are added to ``unpack``'s."""
    import tensorflow as tf

    if prefix and labels:
        raise ValueError(f"labels: expected false with a prefix ({prefix!r}: a pair blob's half)")
    widths = {label: int(w) for label, w in widths.items() if int(w)}
    raw = {label: layout.RawWidths(*w) for label, w in (raw or {}).items()}
    all_sections = layout.typed_sample_sections(
        spec, widths, dtype, labels=labels, batch=None, layout=layout_name, raw=raw
    )
    fn = _unpacker(unpack)
    blobs = tf.convert_to_tensor(blobs, dtype=tf.string)
    if layout_name == "dense":
        wanted = [s for s in all_sections if s.role != "ids" or ids]
        return _unpack(fn, blobs, wanted, encoding, prefix=prefix)
    scalar = blobs.shape.rank == 0
    vec = tf.reshape(blobs, [1]) if scalar else blobs
    wanted = [
        s
        for s in all_sections
        if s.role in ("index", "labels", "table", "columns", "values", *layout.RAW_TABLE_ROLES)
        or (s.role == "table_ids" and (ids or not widths.get(s.label or "")))
    ]
    decoded = _unpack(fn, vec, wanted, encoding, prefix=prefix, all_sections=all_sections)
    out: dict[str, Any] = {}
    for label in spec.labels():
        width = widths.get(label, 0)
        table_names = _TableNames(
            *(
                layout.typed_table_name(n, label)
                for n in (layout.TABLE_IDS, layout.TABLE, layout.TABLE_COLUMNS, layout.TABLE_VALUES)
            )
        )
        slots = [
            _Slots(
                s.name,
                typed_sampling.typed_features_name(s.hop, label) if width else None,
                layout.typed_ids_name(s.hop, label) if ids else None,
                typed_sampling.typed_mask_name(s.hop, label) if s.hop else None,
            )
            for s in all_sections
            if s.role == "index" and s.label == label
        ]
        out.update(_expand(decoded, table_names, slots, width, layout_name, bool(width), ids))
        if label in raw:
            hops = [s for s in all_sections if s.role == "index" and s.label == label]
            out.update(_expand_raw(decoded, label, raw[label], hops, table_names.table_ids))
    if labels:
        out[layout.LABELS] = decoded[layout.LABELS]
    if scalar:  # (a bag's flat values and splits have no blob dimension)
        out = {k: v if _flat_bag(k) else v[0] for k, v in out.items()}
    return out


def _flat_bag(name: str) -> bool:
    """Whether ``name`` is a dense raw ``bag`` section or its row splits (flat, no blob axis)."""
    return name.startswith("bag_h")


def _expand_raw(
    decoded: dict[str, Any],
    label: str,
    widths: layout.RawWidths,
    index_sections: Sequence[Any],
    table_ids: str,
) -> dict[str, Any]:
    """The dense raw sections of ``label``'s slot tables from its compact/sparse raw tables
    (docs/blob-format.md section 11): every slot's table row gathered (a padded slot: zeros,
    ``""``, ``false``, empty bags); checks each raw table holds one row per table row (``bag``:
    one per table row and column), naming the blob and the section. The index sections were
    checked by :func:`_expand`."""
    import tensorflow as tf

    ids_rt = decoded[table_ids]
    starts, sizes = _one_row_spans(ids_rt)
    total = tf.shape(ids_rt.flat_values, out_type=tf.int64)[0]
    checks = []
    for group, width in zip(layout.RAW_GROUPS, widths):
        if width:
            name = layout.typed_raw_table_name(group, label)
            if group == "bag":  # (its rows are the cells: [B, (u * Wb), (k)])
                got = tf.cast(decoded[name].row_lengths(), tf.int64)
                want, what = sizes * width, f"{width} rows (one per column) per table row"
            else:
                _, got = _one_row_spans(decoded[name])
                want, what = sizes, "one row per table row"
            checks.append(_check_counts(want, got, name, what))
    out: dict[str, Any] = {}
    with tf.control_dependencies(checks):
        for sec in index_sections:
            index = tf.cast(decoded[sec.name], tf.int64)  # [B, n, slots]
            shifted = index + tf.reshape(starts, [-1, 1, 1])
            rows = tf.where(index >= 0, shifted, total)  # -1 -> the padding row after the tables
            for group, width in zip(layout.RAW_GROUPS, widths):
                if not width:
                    continue
                table = decoded[layout.typed_raw_table_name(group, label)]
                name = layout.typed_raw_name(group, sec.hop, label)
                if group == "bag":
                    cells = tf.RaggedTensor.from_uniform_row_length(table.values, width)
                    empty = tf.RaggedTensor.from_row_lengths(
                        tf.zeros([0], tf.string), tf.zeros([width], tf.int64)
                    )
                    padded = tf.concat([cells, tf.expand_dims(empty, 0)], 0)
                    picked = tf.gather(padded, tf.reshape(rows, [-1])).values  # [cells, (k)]
                    out[name] = picked.values
                    out[layout.row_splits_name(name)] = picked.row_splits
                    continue
                values = table.flat_values
                pad = tf.zeros([1, width], values.dtype)
                out[name] = tf.gather(tf.concat([values, pad], 0), rows)
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


def zero_typed_node_blob(
    spec: Any, widths: Mapping[str, int], dtype: str = "float32", *, layout_name: str = "dense"
) -> bytes:
    """The blob ``tf_features.sample_typed`` would write, in ``layout_name``, for one seed with
    key 0, zero features and no neighbours (every slot but the seed's padded): a valid input for
    a typed bundle's warmup requests.

    Guarantees: the sections, dtypes and shapes of
    :func:`memgraph_tf.layout.typed_sample_sections` with n = 1 and no labels;
    :func:`decode_typed_sample` of it gives zero features and false masks."""
    widths = {label: int(w) for label, w in widths.items() if int(w)}
    sections = layout.typed_sample_sections(spec, widths, dtype, batch=1, layout=layout_name)
    seed = spec.seed_label
    out: dict[str, Any] = {}
    for s in sections:
        rows = 1 if s.label == seed else 0  # the compact/sparse table rows: the seed's alone
        if s.role in ("ids", "index"):
            out[s.name] = np.full(s.shape, 0 if s.hop == 0 else layout.PAD_ID, dtype=s.dtype)
        elif s.role == "features":
            out[s.name] = np.zeros(s.shape, dtype=s.dtype)
        elif s.role == "mask":
            out[s.name] = np.zeros(s.shape, dtype=bool)
        elif s.role == "table_ids":
            out[s.name] = blob.Ragged(np.zeros([rows], np.int64), [0, rows])
        elif s.role == "table":
            out[s.name] = blob.Ragged(np.zeros([rows, widths[s.label]], dtype), [0, rows])
        elif s.role == "columns":
            out[s.name] = blob.Ragged(np.zeros([0], np.int32), [0] * (rows + 1))
        elif s.role == "values":
            out[s.name] = blob.Ragged(np.zeros([0], dtype), [0, 0])
    return blob.pack(out)


def _seed_rows(name: str, value: Any, i: int, count: int) -> Any:
    """Seed ``i``'s part of a dense typed section of ``count`` seeds: its row of a dense one; of
    a ragged one (a raw ``bag_*`` section: ``count * slots * columns`` rows, seed-major) its
    rows, their splits starting at 0."""
    if not isinstance(value, blob.Ragged):
        return value[i : i + 1]
    splits = value.row_splits
    if (len(splits) - 1) % count:
        raise ValueError(
            f"typed blob: ragged section {name!r} has {len(splits) - 1} rows, expected a multiple "
            f"of {count} (the seeds)"
        )
    per = (len(splits) - 1) // count
    own = splits[i * per : (i + 1) * per + 1]
    values = value.values[own[0] : own[-1]]
    if values.dtype == object:  # strings (an empty slice keeps its dtype this way)
        values = blob.Dense(list(values), [len(values)], "string")
    return blob.Ragged(values, own - own[0])


def split_typed_blob(raw: bytes, count: int, spec: Any, layout_name: str = "dense") -> list[bytes]:
    """A ``tf_features.sample_typed`` blob of ``count`` seeds (``spec``, ``layout_name``) cut into
    ``count`` one-seed blobs, in numpy (no TensorFlow).

    Guarantees: blob ``i`` is, byte for byte, what ``sample_typed`` writes for seed ``i`` alone
    with the same options (the typed sampler keys each seed's draws by ``(options.seed, seed)``):
    every per-seed section cut to row ``i``; in the compact and sparse layouts each label's table
    rebuilt from the rows row ``i`` reaches, in their order of first appearance over the label's
    index sections (docs/blob-format.md section 9), and the indices renumbered. ValueError names
    a section whose rows are not ``count`` or a table section the blob lacks."""
    sections = blob.unpack(raw)
    for name, value in sections.items():
        if not isinstance(value, blob.Ragged) and value.shape[:1] != (count,):
            raise ValueError(
                f"typed blob: section {name!r} has {value.shape[:1]} rows, expected {count} "
                "(one per seed)"
            )
    if layout_name == "dense":
        return [
            blob.pack({n: _seed_rows(n, v, i, count) for n, v in sections.items()})
            for i in range(count)
        ]
    index_of: dict[str, list[str]] = {}
    for h, table in enumerate(spec.layout().tables):
        for label in table:
            index_of.setdefault(label, []).append(layout.typed_index_name(h, label))
    bases = (layout.TABLE_IDS, layout.TABLE, layout.TABLE_COLUMNS, layout.TABLE_VALUES)
    table_of = {
        layout.typed_table_name(base, label): (base, label) for label in index_of for base in bases
    }
    table_of.update(  # a feature-spec label's raw tables (docs/blob-format.md section 11)
        (layout.typed_raw_table_name(group, label), (f"table_{group}", label))
        for label in index_of
        for group in layout.RAW_GROUPS
    )
    for label in index_of:
        name = layout.typed_table_name(layout.TABLE_IDS, label)
        if not isinstance(sections.get(name), blob.Ragged):
            raise ValueError(
                f"typed blob: expected a ragged section {name!r} ({layout_name}), got none"
            )
    out = []
    for i in range(count):
        rows_of: dict[str, np.ndarray] = {}
        entries_of: dict[str, np.ndarray] = {}  # sparse: each label's CSR entries, row by row
        cut: dict[str, Any] = {}
        for label, names in index_of.items():
            reached = np.concatenate([sections[n][i].reshape(-1) for n in names])
            reached = reached[reached >= 0]
            _, first = np.unique(reached, return_index=True)
            rows = reached[np.sort(first)]  # the rows row i reaches, in first-appearance order
            u_all = len(sections[layout.typed_table_name(layout.TABLE_IDS, label)].values)
            renumber = np.full(u_all + 1, -1, np.int32)  # (the last entry: -1 stays -1)
            renumber[rows] = np.arange(len(rows), dtype=np.int32)
            rows_of[label] = rows
            for n in names:
                cut[n] = renumber[sections[n][i : i + 1]]
        one_seed: dict[str, Any] = {}
        for name, value in sections.items():
            if name in cut:
                one_seed[name] = cut[name]
            elif name not in table_of:  # labels
                one_seed[name] = value[i : i + 1]
            else:
                base, label = table_of[name]
                rows = rows_of[label]
                if base in (layout.TABLE_IDS, layout.TABLE) or (
                    base in layout.RAW_TABLE_ROLES and base != "table_bag"
                ):
                    one_seed[name] = blob.Ragged(value.values[rows], [0, len(rows)])
                    continue
                if base == "table_bag":  # one row per (table row, column)
                    u_all = len(sections[layout.typed_table_name(layout.TABLE_IDS, label)].values)
                    one_seed[name] = _bag_rows(value, rows, u_all)
                    continue
                if base == layout.TABLE_COLUMNS:
                    splits = np.asarray(value.row_splits, np.int64)
                    lengths = splits[rows + 1] - splits[rows]
                    picked = np.repeat(splits[rows], lengths) + (
                        np.arange(lengths.sum()) - np.repeat(np.cumsum(lengths) - lengths, lengths)
                    )
                    entries_of[label] = picked
                    one_seed[name] = blob.Ragged(
                        value.values[picked], np.concatenate([[0], np.cumsum(lengths)])
                    )
                    continue
                picked = entries_of[label]  # (table_values follows its table_columns)
                one_seed[name] = blob.Ragged(value.values[picked], [0, len(picked)])
        out.append(blob.pack(one_seed))
    return out


def _bag_rows(value: Any, rows: np.ndarray, table_rows: int) -> Any:
    """The cells of table rows ``rows`` of a raw ``table_bag_*`` section (``table_rows`` rows of
    ``Wb`` cells each), as its ragged pair."""
    splits = np.asarray(value.row_splits, np.int64)
    width = (len(splits) - 1) // table_rows if table_rows else 0
    cells = (rows[:, None] * width + np.arange(width)).reshape(-1)
    lengths = splits[cells + 1] - splits[cells]
    picked = [value.values[a:b] for a, b in zip(splits[cells], splits[cells + 1])]
    values = np.concatenate(picked) if picked else np.zeros([0], object)
    return blob.Ragged(values, np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64))


class DensePairBlobs:
    """The one-pair dense blobs of a compact ``tf_features.sample_pairs`` blob of ``count``
    pairs (``options.layout = "compact"``; ``source_spec`` / ``target_spec`` the two endpoints'
    :class:`~memgraph_tf.typed_sampling.TypedSamplingSpec`; the feature widths and dtype are
    the compact tables'), cut on demand in numpy (no TensorFlow): the compact blob holds each
    sampled node's features once, the dense blobs repeat them per slot, so a server keeps the
    compact sample (only: the object holds views of ``raw``) and builds the dense blobs of a few
    pairs at a time.

    Guarantees: :meth:`blobs` ``(i, j)`` is, byte for byte, what ``sample_pairs`` writes in the
    dense layout for each pair ``i..j-1`` alone with the same options (a slot's id and features
    are its table row's, a padded slot's id :data:`memgraph_tf.layout.PAD_ID`, its features zero
    and its mask false); every blob has :attr:`blob_bytes` bytes. ValueError names a section the
    compact blob lacks or whose rows are not ``count``."""

    def __init__(self, raw: bytes, count: int, source_spec: Any, target_spec: Any):
        sections = blob.unpack(raw, copy=False)  # (views of ``raw``: the only copy kept)
        dtype = "float32"
        self.count = count
        prefixes = (layout.PAIR_SOURCE_PREFIX, layout.PAIR_TARGET_PREFIX)
        widths: dict[str, int] = {}
        for prefix, spec in zip(prefixes, (source_spec, target_spec)):
            for label in spec.labels():
                table = sections.get(prefix + layout.typed_table_name(layout.TABLE, label))
                if isinstance(table, blob.Ragged):
                    widths[label] = int(table.values.shape[1])
                    dtype = str(table.values.dtype)
        dense = layout.pair_sample_sections(source_spec, target_spec, widths, dtype, batch=1)
        self._fills = [self._fill(sections, sec, count) for sec in dense]
        first = blob.pack({sec.name: fill(0, 1) for sec, fill in zip(dense, self._fills)})
        table = blob.read_table(first)
        self._spans = [(info.payload_offset, info.payload_length) for info in table]
        self._head = np.frombuffer(first, np.uint8)[: self._spans[0][0] if self._spans else None]
        self.blob_bytes = len(first)
        if self.blobs(0, 1)[0] != first:  # the byte layout above is pack's, for every pair
            raise ValueError("pair blob: the dense template does not reproduce blob.pack")

    @staticmethod
    def _fill(sections: Mapping[str, Any], sec: Any, count: int) -> Callable[[int, int], Any]:
        """``fill(i, j)``: dense section ``sec``'s values for pairs ``i..j-1`` (``[j - i, ...]``,
        little-endian, the section's dtype)."""

        def get(name: str) -> Any:
            value = sections.get(name)
            if value is None:
                raise ValueError(f"compact pair blob: expected a section {name!r}, got none")
            if not isinstance(value, blob.Ragged) and value.shape[:1] != (count,):
                raise ValueError(
                    f"compact pair blob: section {name!r} has {value.shape[:1]} rows, expected "
                    f"{count} (one per pair)"
                )
            return value

        if sec.role == "pair_labels":
            labels = get(sec.name)
            return lambda i, j: np.asarray(labels[i:j], "<i8")
        prefix = sec.name[: sec.name.index(".") + 1]
        index = get(prefix + layout.typed_index_name(sec.hop, sec.label))
        if sec.role == "mask":
            return lambda i, j: index[i:j] >= 0
        base = layout.TABLE_IDS if sec.role == "ids" else layout.TABLE
        values = get(prefix + layout.typed_table_name(base, sec.label)).values
        pad = layout.PAD_ID if sec.role == "ids" else 0

        def fill(i: int, j: int) -> Any:
            at = index[i:j]
            if not len(values):  # no row: every slot padded
                return np.full(at.shape + values.shape[1:], pad, values.dtype)
            out = values[np.maximum(at, 0)]
            out[at < 0] = pad
            return out

        return fill

    def __len__(self) -> int:
        return self.count

    def blobs(self, start: int, stop: int) -> list[bytes]:
        """The dense blobs of pairs ``start..stop-1``, in order."""
        rows = max(0, stop - start)
        if not rows:
            return []
        buf = np.zeros((rows, self.blob_bytes), np.uint8)
        buf[:, : len(self._head)] = self._head
        for fill, (offset, length) in zip(self._fills, self._spans):
            if length:
                values = np.ascontiguousarray(fill(start, stop))
                buf[:, offset : offset + length] = values.reshape(rows, -1).view(np.uint8)
        return [row.tobytes() for row in buf]
