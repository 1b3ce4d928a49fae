"""The sample blob's sections (``tf_features.sample`` / ``sample_per_node``): a
:class:`Sample`'s ids, masks and feature table written in the dense, compact or sparse layout of
:func:`memgraph_tf.layout.sample_sections`, all rows at once or row by row (stdlib only).
"""

from __future__ import annotations

import array
import functools
import itertools
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from memgraph_tf import blob, layout
from memgraph_tf.procedures.options import Options
from memgraph_tf.procedures.tables import (
    INT32,
    ITEMS_PER_CHECK,
    TYPECODE,
    FeatureTable,
    csr,
    le,
    no_check,
)


class Sample(NamedTuple):
    """``ids[h]`` flat row-major ids of hop h (length n*f1*...*fh); ``masks[h]`` (h >= 1) their
    validity; ``table`` the features of every sampled key."""

    ids: list[list[int]]
    masks: list[list[bool]]
    table: FeatureTable


def _row_bytes(table: FeatureTable) -> list[bytes]:
    """The little-endian bytes of each table row, in row order, then one row of zeros."""
    raw = le(table.flat)
    size = table.width * table.flat.itemsize
    if not size:
        return [b""] * (len(table.row_of) + 1)
    rows = [raw[lo : lo + size] for lo in range(0, len(raw), size)]
    rows.append(bytes(size))
    return rows


def _gather_le(
    table: FeatureTable,
    keys: Sequence[int],
    mask: Sequence[bool],
    rows: list[bytes],
    check_abort: Callable[[], None] = no_check,
) -> bytes:
    """``le(gather(table, keys, dtype, mask, check_abort))`` -- the same bytes -- joined from the
    rows' bytes (``rows``: :func:`_row_bytes` of ``table``) instead of copied value by value."""
    if table.width == 0:
        return b""
    zero = len(rows) - 1
    get = table.row_of.get
    parts: list[bytes] = []
    n = len(keys)
    for lo in range(0, n, ITEMS_PER_CHECK):
        if lo:
            check_abort()
        hi = min(n, lo + ITEMS_PER_CHECK)
        parts += [rows[get(k, zero) if m else zero] for k, m in zip(keys[lo:hi], mask[lo:hi])]
    return b"".join(parts)


def dense_row_blobs(
    sections: dict[str, Any], n: int, check_abort: Callable[[], None] = no_check
) -> list[bytes]:
    """Row i's blob of the dense ``sections`` (each a :class:`blob.Dense` of little-endian bytes
    with ``n`` rows first), for i in 0..n-1: exactly ``blob.pack`` of the sections cut to row i
    (shapes ``[1, ...]``).

    Every row's blob has the same header and section table, and its payloads at the same offsets
    (the same shapes, so the same lengths): row 0 is packed by :func:`blob.pack_bytes` (the
    bytes of ``blob.pack``) and its payloads found with :func:`blob.payload_spans`, and each row
    is that template with its own payload bytes in place; padding stays zero, as ``blob.pack``
    writes it. ``check_abort`` is called every 256 rows."""
    if n == 0:
        return []
    cut = [
        (name, memoryview(sec.flat), len(sec.flat) // n, [1, *sec.shape[1:]], sec.dtype)
        for name, sec in sections.items()
    ]
    first = blob.pack_bytes(
        {
            name: blob.Dense(bytes(data[:size]), shape, dtype)
            for name, data, size, shape, dtype in cut
        }
    )
    spans = blob.payload_spans(first)
    assert [length for _, length in spans] == [size for _, _, size, _, _ in cut]
    pieces: list[Any] = []  # the template's bytes between payloads, then a payload slot, ...
    at = 0
    for (offset, length), (_, data, size, _, _) in zip(spans, cut):
        pieces.append(first[at:offset])
        pieces.append((data, size))
        at = offset + length
    tail = first[at:]
    out = [first]
    for i in range(1, n):
        if i % 256 == 255:
            check_abort()
        parts = [
            piece if type(piece) is bytes else piece[0][i * piece[1] : (i + 1) * piece[1]]
            for piece in pieces
        ]
        parts.append(tail)
        out.append(b"".join(parts))
    return out


def sample_sections(
    result: Sample,
    fanouts: Sequence[int],
    options: Options,
    rows: slice | None = None,
    check_abort: Callable[[], None] = no_check,
    shared: TableBytes | None = None,
) -> dict[str, Any]:
    """Blob sections of a sample, exactly :func:`memgraph_tf.layout.sample_sections` for
    ``options.layout`` (names, order, dtypes, shapes with n = the number of seed rows). Dense: for
    h = 0..K ``ids_h`` int64 [n, f1..fh], ``features_h`` [n, f1..fh, d], ``mask_h`` bool
    [n, f1..fh] (h >= 1, when padding); compact/sparse: ``index_h`` and the table (see
    :func:`_compact_sections`); then ``labels`` int64 [n] when ``options.label_property``.
    ``rows`` restricts to some seed rows; ``check_abort`` is called every
    :data:`ITEMS_PER_CHECK` slots or table rows written (the access's ``check_abort``);
    ``shared`` (:func:`table_bytes` of ``result.table``) saves converting the table again when
    several row ranges of one sample are written."""
    n_all = len(result.ids[0])
    start, stop, _ = (rows or slice(0, n_all)).indices(n_all)
    n = stop - start
    per_hop = [1]  # nodes per seed row at hop h
    for f in fanouts:
        per_hop.append(per_hop[-1] * f)
    if options.layout != "dense":
        return _compact_sections(
            result, fanouts, options, start, stop, per_hop, check_abort, shared
        )
    sections: dict[str, Any] = {}
    rows_bytes = None if shared is None else shared.rows
    for sec in layout.sample_sections(
        fanouts,
        result.table.width,
        options.dtype,
        pad=options.pad,
        labels=bool(options.label_property),
        batch=n,
    ):
        if sec.role == "labels":
            data = le(array.array("q", [result.table.labels[k] for k in result.ids[0][start:stop]]))
        else:
            lo, hi = start * per_hop[sec.hop], stop * per_hop[sec.hop]
            hop_ids = result.ids[sec.hop][lo:hi]
            if sec.role == "ids":
                data = le(array.array("q", hop_ids))
            elif sec.role == "mask":
                data = bytes(result.masks[sec.hop][lo:hi])
            else:  # features
                if rows_bytes is None:
                    rows_bytes = _row_bytes(result.table)
                data = _gather_le(
                    result.table, hop_ids, result.masks[sec.hop][lo:hi], rows_bytes, check_abort
                )
        sections[sec.name] = blob.Dense(data, list(sec.shape), sec.dtype)
    return sections


def _compact_sections(
    result: Sample,
    fanouts: Sequence[int],
    options: Options,
    start: int,
    stop: int,
    per_hop: list[int],
    check_abort: Callable[[], None] = no_check,
    shared: TableBytes | None = None,
) -> dict[str, Any]:
    """The compact/sparse sections of seed rows ``start:stop`` (memgraph_tf.layout,
    docs/blob-format.md section 8): ``index_h`` int32 (the table row of each slot, -1 where the mask
    is false); the table of the distinct keys of those rows in order of first appearance (hop by
    hop, row-major) as ``table_ids`` and ``table`` (compact) or ``table_columns``/``table_values``
    (sparse, CSR: the entries that are not zero, columns increasing); ``labels``.

    Guarantees: gathering the table rows by ``index_h`` (zeros for -1) gives exactly the dense
    layout's ``features_h`` of the same rows (values equal; an entry of -0.0 is not written in the
    sparse form and reads back as 0.0), and ``table_ids`` by ``index_h`` its ``ids_h``."""
    table = result.table
    d = table.width
    seen: dict[int, None] = {}
    sections: dict[str, Any] = {}
    specs = _sections_of(
        tuple(fanouts),
        d,
        options.dtype,
        options.pad,
        bool(options.label_property),
        stop - start,
        options.layout,
    )
    index_specs = [sec for sec in specs if sec.role == "index"]
    spans = [(start * per_hop[sec.hop], stop * per_hop[sec.hop]) for sec in index_specs]
    for sec, (lo, hi) in zip(index_specs, spans):  # the distinct keys, in order of first appearance
        if hi - lo > ITEMS_PER_CHECK:
            check_abort()
        seen.update(
            dict.fromkeys(
                itertools.compress(result.ids[sec.hop][lo:hi], result.masks[sec.hop][lo:hi])
            )
        )
    order = list(seen)
    row_of = dict(zip(order, range(len(order))))
    for sec, (lo, hi) in zip(index_specs, spans):
        hop_mask = result.masks[sec.hop][lo:hi]
        rows = list(
            map(row_of.__getitem__, itertools.compress(result.ids[sec.hop][lo:hi], hop_mask))
        )
        if len(rows) != hi - lo:  # padded slots: -1
            at = iter(rows)
            rows = [next(at) if valid else -1 for valid in hop_mask]
        index = array.array(INT32, rows)
        sections[sec.name] = blob.Dense(le(index), list(sec.shape), sec.dtype)
    u = len(order)
    one_row = array.array("q", [0, u])
    sections[layout.TABLE_IDS] = blob.Ragged(
        blob.Dense(le(array.array("q", order)), [u], "int64"), one_row
    )
    if shared is None:
        shared = table_bytes(table, options, check_abort)
    picked = list(map(table.row_of.__getitem__, order))  # (every valid slot's key has a row)
    if options.layout == "compact":
        data = b"".join([shared.rows[r] for r in picked])
        sections[layout.TABLE] = blob.Ragged(blob.Dense(data, [u, d], options.dtype), one_row)
    else:
        assert shared.csr is not None  # (made for the sparse layout)
        col_bytes, value_bytes, bounds = shared.csr
        size = array.array(TYPECODE[options.dtype]).itemsize
        col_size = array.array(INT32).itemsize
        spans = [(bounds[r], bounds[r + 1]) for r in picked]
        columns = b"".join([col_bytes[lo * col_size : hi * col_size] for lo, hi in spans])
        values = b"".join([value_bytes[lo * size : hi * size] for lo, hi in spans])
        splits = array.array("q", [0])
        splits.extend(itertools.accumulate(hi - lo for lo, hi in spans))
        nnz = splits[-1]
        sections[layout.TABLE_COLUMNS] = blob.Ragged(blob.Dense(columns, [nnz], "int32"), splits)
        sections[layout.TABLE_VALUES] = blob.Ragged(
            blob.Dense(values, [nnz], options.dtype), array.array("q", [0, nnz])
        )
    if options.label_property:
        labels = array.array("q", [table.labels[k] for k in result.ids[0][start:stop]])
        sections[layout.LABELS] = blob.Dense(le(labels), [stop - start], "int64")
    return sections


@functools.lru_cache(maxsize=64)
def _sections_of(
    fanouts: tuple[int, ...], d: int, dtype: str, pad: bool, labels: bool, n: int, layout_name: str
) -> tuple[layout.Section, ...]:
    """:func:`memgraph_tf.layout.sample_sections` (immutable sections), made once for the rows of
    a call rather than per row."""
    return tuple(
        layout.sample_sections(
            fanouts, d, dtype, pad=pad, labels=labels, batch=n, layout=layout_name
        )
    )


class TableBytes(NamedTuple):
    """A sample's feature table as the blob writes it: ``rows`` the little-endian bytes of each
    table row, then a row of zeros (:func:`_row_bytes`); ``csr`` (sparse layout only) the whole
    table's CSR form (:func:`csr`): (column bytes int32, value bytes, row bounds), row r's
    entries being ``bounds[r]:bounds[r + 1]``."""

    rows: list[bytes]
    csr: tuple[bytes, bytes, list[int]] | None


def table_bytes(
    table: FeatureTable, options: Options, check_abort: Callable[[], None] = no_check
) -> TableBytes:
    """The table converted once for any number of row ranges (see :class:`TableBytes`): gathering
    its rows (``rows``; the CSR rows for sparse) in a slot order gives exactly the bytes of
    gathering the values first and converting them then, row by row."""
    rows = _row_bytes(table)
    if options.layout != "sparse":
        return TableBytes(rows, None)
    columns, values, splits = csr(
        table.flat, len(rows) - 1, table.width, options.dtype, check_abort
    )
    return TableBytes(rows, (le(columns), le(values), splits.tolist()))


def sample_row_blobs(
    result: Sample,
    fanouts: Sequence[int],
    options: Options,
    check_abort: Callable[[], None] = no_check,
) -> list[bytes]:
    """The blob of each seed row alone: row i's is ``blob.pack(sample_sections(result, fanouts,
    options, slice(i, i + 1)))`` (``sample_per_node``), made with the table converted once
    (:func:`table_bytes`) and, in the dense layout, from one packed template
    (:func:`dense_row_blobs`). ``check_abort`` is called every 256 rows."""
    n = len(result.ids[0])
    shared = table_bytes(result.table, options, check_abort)
    if options.layout == "dense":  # every section is [n, ...]: build them once, cut row by row
        sections = sample_sections(result, fanouts, options, None, check_abort, shared)
        return dense_row_blobs(sections, n, check_abort)
    out = []
    for i in range(n):
        if i % 256 == 255:
            check_abort()
        out.append(
            blob.pack_bytes(
                sample_sections(result, fanouts, options, slice(i, i + 1), shared=shared)
            )
        )
    return out
