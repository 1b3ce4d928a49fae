"""The op-free blob decoder: ``unpack_blob_portable``, built from stock TensorFlow ops only.

A SavedModel that decodes blobs with this function runs on the stock TF Serving image, which cannot
load the custom ``MemgraphTf>UnpackBlob`` op. It returns the same tensors as
:func:`memgraph_tf.ops.unpack_blob` and rejects the same blobs with the same messages.
:func:`blob_errors` gives, without raising, each blob's message from the same checks.

How it works (all vectorized over the blobs of a batch and the requested names, no Python loop over
data, and few graph nodes: TensorFlow optimizes a graph node by node the first time a process runs
it, which is what loading an op-free bundle costs -- ``benchmarks/portable_decoder.py``):

1. All blobs are concatenated once into a flat uint8 vector (``tf.io.decode_raw``), so memory stays
   proportional to the blobs' total size, whatever one blob's size or claims; every read is a gather
   at clamped positions. Section table entries are read only for blobs whose header passed (the
   table then fits in the blob), giving one flat list of entries for all blobs, whose fields form
   the columns of one int64 matrix.
2. Every rule of ``docs/blob-format.md`` section 4 is evaluated as a boolean tensor, per blob and
   per table entry; the first failing rule in the spec's order is selected numerically. Payload
   scans (bool bytes, string offsets) gather only payloads of sections that passed rules 11-24,
   which lie inside the blob and do not overlap, so they never touch more bytes than the blob holds.
   The lookup, ragged and shape checks run for all requested names at once, as [blob, name]
   tensors.
3. Only when a blob is bad is the message formatted (``tf.cond``), with the spec's exact text
   (templates filled from one table of fields), and raised as ``tf.errors.InvalidArgumentError``.
   In a graph the formatting is a function marked ``_noinline``, so TensorFlow instantiates it only
   when a bad blob calls it. Stock TF's ``Assert`` op C-escapes string data (a quote becomes
   ``\\'``), which would change the spec's messages, so the error is raised by
   ``tf.strings.to_number`` on the message, the one stock op found whose ``InvalidArgumentError``
   carries an input string verbatim: the message reads
   ``StringToNumberOp could not correctly convert string: blob 0: <spec message>``.
4. The outputs are computed from positions that include the checks' (zero) results, a data
   dependency that no graph optimization can drop: fixed-size payloads are cut with
   ``tf.strings.substr`` and read with ``tf.io.decode_raw`` (little-endian on any host); strings are
   assembled from their bytes. Nothing is decoded from a blob that failed a check.
"""

from __future__ import annotations

import string
import sys
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import tensorflow as tf

from memgraph_tf.ops._args import check_encoding, check_shapes, normalize_args

MAX_I31 = 2**31 - 1
_BIG = np.int64(2**62)
_DT_CODE = {"bool": 1, "int32": 2, "int64": 3, "float32": 4, "float64": 5, "string": 6}
_DT_NAMES = ["?", "bool", "int32", "int64", "float32", "float64", "string", "?"]
_SIZES = [0, 1, 4, 8, 4, 8, 0, 0]
#: Blob dtype name -> the ``tf.DType`` its values decode to.
TF_DTYPES: dict[str, tf.DType] = {
    "bool": tf.bool,
    "int32": tf.int32,
    "int64": tf.int64,
    "float32": tf.float32,
    "float64": tf.float64,
    "string": tf.string,
}
# The per-entry fields of ``_Blobs.fields`` (int64 columns, ``dims`` last: 8 columns).
_ENTRY_FIELDS = (
    "dtype",
    "rank",
    "nlen",
    "resv",
    "p_off",
    "p_len",
    "n",
    "entry",
    "size",
    "is_str",
    "min_len",
    "expected_off",
    "end",
    "j15",
    "j16",
    "k18",
    "k19",
    "t24",
    "pos25",
    "j26",
    "data_len",
    "dims",
)
# The spec's format messages (docs/blob-format.md section 4), rule by rule, for _render.
_FORMAT_MESSAGES = (
    "header: expected at least 32 bytes, got {length} at offset 0",
    "magic: expected 'MGTF', got '{magic}' at offset 0",
    "version: expected 1, got {version} at offset 4",
    "flags: expected 0, got {flags} at offset 6",
    "section_count: expected <= 1024, got {count} at offset 8",
    "reserved0: expected 0, got {res0} at offset 12",
    "total_length: expected {length} (the blob's size), got {total} at offset 16",
    "total_length: expected <= 2147483647, got {total} at offset 16",
    "reserved1: expected 0, got {res1} at offset 24",
    "section table: expected at least {table_end} bytes for {count} sections, got {length} at "
    "offset 32",
    "section {i} dtype: expected 1..6, got {dtype} at offset {e}",
    "section {i} rank: expected <= 8, got {rank} at offset {e1}",
    "section {i} name_length: expected 1..40, got {nlen} at offset {e2}",
    "section {i} reserved: expected 0, got {resv} at offset {e4}",
    "section {i} name: expected [A-Za-z0-9_.:/-], got byte {b15} at offset {at15}",
    "section {i} name padding: expected 0, got byte {b16} at offset {at16}",
    "section {i} ('{name}') name: expected a unique name, got a duplicate at offset {e88}",
    "section {i} ('{name}') dims[{k18}]: expected 0..2147483647, got {d18} at offset {at18}",
    "section {i} ('{name}') dims[{k19}]: expected 0 (unused), got {d19} at offset {at19}",
    "section {i} ('{name}') payload_offset: expected {expected_off}, got {p_off} at offset {e8}",
    "section {i} ('{name}') dims: expected <= 2147483647 elements, got more at offset {e24}",
    "section {i} ('{name}') payload_length: expected {exp22}, got {p_len} at offset {e16}",
    "section {i} ('{name}') payload: expected to end by {length}, got end {end23} at offset {e16}",
    "padding: expected 0, got byte {b24} at offset {at24}",
    "section {i} ('{name}') bool: expected 0 or 1, got {v25} at offset {pos25}",
    "section {i} ('{name}') offsets[{j26}]: expected {lo26}..{hi26}, got {v26} at offset {at26}",
    "total_length: expected {end_total}, got {total} at offset 16",
)
# The lookup errors of ``unpack_blob`` (codes 1-10 of _Lookups), for _render. Reader errors read
# "blob b: <message>"; shape errors "blob b section ...".
_LOOKUP_MESSAGES = (
    "{prefix}: section '{q}': expected a section named '{q}', got none (present: {present})",
    "{prefix}: section '{q}': expected dtype {want_dtype}, got {got_dtype} at offset {entry}",
    "{prefix}: section '{q}.row_splits': expected an int64 row-splits section for ragged '{q}', "
    "got none",
    "{prefix}: section '{q}.row_splits': expected int64 rank 1 with >= 1 element, got {rdtype} "
    "rank {rrank} at offset {rentry}",
    "{prefix}: section '{q}': expected rank >= 1 for ragged values, got 0 at offset {entry1}",
    "{prefix}: section '{q}.row_splits' [0]: expected 0..0, got {vj} at offset {r_off}",
    "{prefix}: section '{q}.row_splits' [{jb}]: expected {vprev}..{nv}, got {vj} at offset {at7}",
    "{prefix}: section '{q}.row_splits' [{last_j}]: expected {nv}..{nv}, got {last} at offset "
    "{at8}",
    "{prefix} section '{q}': expected shape {want_shape} (the shapes attr), got {got_shape}",
    "{prefix} section '{q}': expected shape {shape0}, got {shape_b} (as blob 0)",
)
_NAME_OK = [
    (65 <= b <= 90) or (97 <= b <= 122) or (48 <= b <= 57) or b in b"_.-:/" for b in range(256)
]
_HEX = [f"0x{b:02x}" for b in range(256)]
_ESC = [
    chr(b) if 0x20 <= b <= 0x7E and b not in (0x5C, 0x27) else f"\\x{b:02x}" for b in range(256)
]


def _int64(v: int) -> tf.Tensor:
    return tf.constant(v, tf.int64)


def _i64(x: Any) -> tf.Tensor:
    return tf.cast(x, tf.int64)


def _s(x: Any) -> tf.Tensor:
    """Decimal text of a signed integer tensor."""
    return tf.strings.as_string(_i64(x))


def _u(x: Any) -> tf.Tensor:
    """Decimal text of the unsigned 64-bit value whose bits are the int64 tensor ``x``."""
    return tf.strings.as_string(tf.bitcast(_i64(x), tf.uint64))


def _u65(a: Any, b: Any) -> tf.Tensor:
    """Decimal text of a + b for int64 ``a`` >= 0 and ``b`` read as unsigned (the sum may pass
    2^64)."""
    au = tf.bitcast(_i64(a), tf.uint64)
    bu = tf.bitcast(_i64(b), tf.uint64)
    lo = au + bu  # wraps
    carry = lo < au
    ten10 = tf.constant(10**10, tf.uint64)
    hi_part = lo // ten10 + tf.constant(1844674407, tf.uint64)
    lo_part = lo % ten10 + tf.constant(3709551616, tf.uint64)
    bump = lo_part >= ten10
    hi_part = tf.where(bump, hi_part + 1, hi_part)
    lo_part = tf.where(bump, lo_part - ten10, lo_part)
    wide = tf.strings.join(
        [tf.strings.as_string(hi_part), tf.strings.as_string(lo_part, width=10, fill="0")]
    )
    return tf.where(carry, wide, tf.strings.as_string(lo))


def _join(*parts: Any) -> tf.Tensor:
    return tf.strings.join([p if isinstance(p, tf.Tensor) else tf.constant(p) for p in parts])


def _first(mask: tf.Tensor, axis: int = -1) -> tf.Tensor:
    """Index of the first True along ``axis`` (the axis length if none), int64."""
    n = mask.shape[axis]  # static where known: one node instead of five
    n = _int64(n) if n is not None else tf.shape(mask, out_type=tf.int64)[axis]
    idx = tf.argmax(tf.cast(mask, tf.int8), axis=axis, output_type=tf.int64)
    return tf.where(tf.reduce_any(mask, axis=axis), idx, n)


def _arange(n: int, row: bool = False) -> tf.Tensor:
    """The int64 constant [0, 1, ..., n-1] (shape [1, n] if ``row``): one graph node."""
    values = np.arange(n, dtype=np.int64)
    return tf.constant(values[None, :] if row else values)


def _align8(x: tf.Tensor) -> tf.Tensor:
    return tf.bitwise.bitwise_and(x + 7, tf.constant(-8, tf.int64))


def _pad1(t: tf.Tensor) -> tf.Tensor:
    """``t`` with one zero row appended along axis 0 (so a gather at index len(t) is valid)."""
    zeros = tf.zeros(tf.concat([[1], tf.shape(t)[1:]], 0), t.dtype)
    return tf.concat([t, zeros], 0)


def _ranges(limits: tf.Tensor, starts: tf.Tensor | None = None):
    """The concatenated ranges [starts[i], limits[i]) (starts default 0), int64: (values, the
    index i of each value, the row splits). Row ids are counted from the rows' starts (a scatter
    and a cumsum, linear in the values) rather than by RaggedTensor.value_rowids (~70 graph
    nodes each)."""
    limits = _i64(limits)
    starts = tf.zeros_like(limits) if starts is None else _i64(starts)
    splits, values = tf.raw_ops.RaggedRange(
        starts=starts, limits=limits, deltas=tf.ones_like(limits), Tsplits=tf.int64
    )
    bounds = splits[1:-1]  # where rows 1.. start: in [0, total]; empty rows add at one place
    marks = tf.scatter_nd(bounds[:, None], tf.ones_like(bounds), tf.reshape(splits[-1] + 1, [1]))
    return values, tf.cumsum(marks[:-1]), splits


def _at(t: tf.Tensor, idx: tf.Tensor) -> tf.Tensor:
    """t[idx] with idx clamped to [0, len(t)]; index len(t) (or any past it) reads a zero row."""
    n = tf.shape(t, out_type=tf.int64)[0]
    return tf.gather(_pad1(t), tf.clip_by_value(idx, 0, n))


class _Blobs:
    """The parsed, checked view of a vector of blobs (see the module docstring).

    All blobs are concatenated into one flat byte vector ``F`` (each blob at ``base[b]``), so
    memory stays proportional to the blobs' total size whatever their individual sizes or claims.
    The section table entries of all blobs whose header passed rules 1-10 form one flat list of
    ``E`` entries (entry ``e`` belongs to blob ``seg[e]`` and is its section ``local[e]``).
    """

    def __init__(self, vec: tf.Tensor, single: bool):
        self.vec = vec
        self.B = tf.shape(vec, out_type=tf.int64)[0]
        self.L = _i64(tf.strings.length(vec))
        self.base = tf.cumsum(self.L, exclusive=True)
        joined = vec[0] if single else tf.strings.reduce_join(vec)
        self.N = tf.reduce_sum(self.L) + 8  # 8 zero bytes at the end: every 8-byte read is in range
        self.last_pos = self.N - 1
        self.F = tf.io.decode_raw(joined, tf.uint8, fixed_length=tf.cast(self.N, tf.int32))
        self._header()
        self._table()

    # ---- reading --------------------------------------------------------------------------------
    def bytes_at(self, pos: tf.Tensor) -> tf.Tensor:
        return tf.gather(self.F, tf.clip_by_value(pos, 0, self.last_pos))

    def u64_at(self, pos: tf.Tensor) -> tf.Tensor:
        """The int64 (bits of the little-endian u64) at absolute byte position(s) ``pos``."""
        raw = self.bytes_at(pos[..., None] + _arange(8))
        return tf.bitcast(raw, tf.int64)

    def word_at(self, b: tf.Tensor, offset: tf.Tensor) -> tf.Tensor:
        """The 8-byte field at ``offset`` of blob ``b``."""
        return self.u64_at(tf.gather(self.base, b) + offset)

    # ---- header, rules 1-10 ---------------------------------------------------------------
    def _header(self) -> None:
        k = _arange(32, row=True)
        head8 = tf.where(
            k < self.L[:, None], self.bytes_at(self.base[:, None] + k), tf.constant(0, tf.uint8)
        )
        h = _i64(head8)
        self.magic = head8[:, :4]
        self.version = h[:, 4] + h[:, 5] * 256
        self.flags = h[:, 6] + h[:, 7] * 256
        self.count = h[:, 8] + h[:, 9] * 256 + h[:, 10] * 65536 + h[:, 11] * 16777216
        self.res0 = h[:, 12] + h[:, 13] * 256 + h[:, 14] * 65536 + h[:, 15] * 16777216
        words = tf.bitcast(tf.reshape(head8, [-1, 4, 8]), tf.int64)
        self.total = words[:, 2]
        self.res1 = words[:, 3]
        self.table_end = 32 + 128 * self.count
        length = self.L
        rules = [
            length < 32,
            tf.logical_not(
                tf.reduce_all(tf.equal(self.magic, tf.constant([77, 71, 84, 70], tf.uint8)), -1)
            ),
            tf.not_equal(self.version, 1),
            tf.not_equal(self.flags, 0),
            self.count > 1024,
            tf.not_equal(self.res0, 0),
            tf.not_equal(self.total, length),
            self.total > MAX_I31,
            tf.not_equal(self.res1, 0),
            self.table_end > length,
        ]
        stacked = tf.stack(rules, 1)
        self.header_code = tf.where(tf.reduce_any(stacked, 1), _first(stacked, 1) + 1, _int64(0))

    # ---- section table, rules 11-27 -----------------------------------------------------------
    def _table(self) -> None:
        """The section table: every entry's fields (:meth:`_read_entries`), the per-entry rules
        11-24 (:meth:`_entry_rules`), then each blob's first failing rule (:meth:`_codes`)."""
        ebase = self._read_entries()
        early, aligned = self._entry_rules(ebase)
        self._codes(ebase, early, aligned)

    def _read_entries(self) -> tf.Tensor:
        """Each entry's fields (dtype, rank, name, payload offset and length, dims) as
        attributes; returns each entry's blob's base offset."""
        # Entries are read only for blobs whose header passed: count <= 1024 and the table fits in
        # the blob, so all entries together are at most (sum of blob sizes) / 128.
        n_entries = tf.where(tf.equal(self.header_code, 0), self.count, _int64(0))
        self.local, self.seg, splits = _ranges(n_entries)
        self.row_starts = splits[:-1]
        self.E = tf.shape(self.local, out_type=tf.int64)[0]
        seg, local = self.seg, self.local
        self.entry = 32 + 128 * local  # offset in its blob
        ebase = tf.gather(self.base, seg)
        ebytes = self.bytes_at((ebase + self.entry)[:, None] + _arange(128, row=True))
        ewords = tf.bitcast(tf.reshape(ebytes, [-1, 16, 8]), tf.int64)
        eints = _i64(ebytes[:, :8])
        self.dtype = eints[:, 0]
        self.rank = eints[:, 1]
        self.nlen = eints[:, 2] + eints[:, 3] * 256
        self.resv = eints[:, 4] + eints[:, 5] * 256 + eints[:, 6] * 65536 + eints[:, 7] * 16777216
        self.p_off = ewords[:, 1]
        self.p_len = ewords[:, 2]
        self.dims = ewords[:, 3:11]
        self.name_bytes = ebytes[:, 88:128]
        self.name_words = ewords[:, 11:16]
        return ebase

    def _entry_rules(self, ebase: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        """The rules 11-24 per entry: ``(early [E, 14] bool, each payload's aligned length)``."""
        seg = self.seg
        length = tf.gather(self.L, seg)

        r11 = (self.dtype < 1) | (self.dtype > 6)
        r12 = self.rank > 8
        r13 = (self.nlen < 1) | (self.nlen > 40)
        r14 = tf.not_equal(self.resv, 0)
        in_name = _arange(40, row=True) < self.nlen[:, None]
        name_ok = tf.gather(tf.constant(_NAME_OK), tf.cast(self.name_bytes, tf.int32))
        bad15 = in_name & tf.logical_not(name_ok)
        bad16 = tf.logical_not(in_name) & tf.not_equal(self.name_bytes, 0)
        self.j15, self.j16 = _first(bad15), _first(bad16)
        # Rule 17: an earlier entry of the same blob with the same 40 name bytes (exact: UniqueV2
        # over the rows [blob, name words]).
        _, group = tf.raw_ops.UniqueV2(
            x=tf.concat([seg[:, None], self.name_words], 1),
            axis=tf.constant([0], tf.int64),
            out_idx=tf.int64,
        )
        position = tf.range(self.E, dtype=tf.int64)
        first_seen = tf.math.unsorted_segment_min(position, group, tf.maximum(self.E, 1))
        r17 = tf.gather(first_seen, group) < position
        in_rank = _arange(8, row=True) < self.rank[:, None]
        bad18 = in_rank & ((self.dims < 0) | (self.dims > MAX_I31))
        bad19 = tf.logical_not(in_rank) & tf.not_equal(self.dims, 0)
        self.k18, self.k19 = _first(bad18), _first(bad19)
        aligned = _align8(self.p_len)
        running = tf.cumsum(aligned, exclusive=True)
        within = running - tf.gather(running, tf.gather(self.row_starts, seg))
        self.expected_off = tf.gather(self.table_end, seg) + within
        r20 = tf.not_equal(self.p_off, self.expected_off)
        nf = tf.reduce_prod(tf.where(in_rank, tf.cast(self.dims, tf.float64), 1.0), -1)
        r21 = nf > MAX_I31
        self.n = tf.cast(tf.clip_by_value(nf, 0.0, float(MAX_I31)), tf.int64)
        self.size = tf.gather(tf.constant(_SIZES, tf.int64), tf.clip_by_value(self.dtype, 0, 7))
        self.is_str = tf.equal(self.dtype, 6)
        self.min_len = 8 * (self.n + 1)
        r22 = tf.where(
            self.is_str,
            (self.p_len >= 0) & (self.p_len < self.min_len),
            tf.not_equal(self.p_len, self.n * self.size),
        )
        r23 = (self.p_len < 0) | (self.p_len > length - self.p_off)
        self.end = self.p_off + self.p_len
        pad_end = tf.minimum(_align8(self.end), length)
        pidx = self.end[:, None] + _arange(7, row=True)
        self.pbytes = self.bytes_at(ebase[:, None] + pidx)
        bad24 = (pidx < pad_end[:, None]) & tf.not_equal(self.pbytes, 0)
        self.t24 = _first(bad24)
        early = tf.stack(
            [
                r11,
                r12,
                r13,
                r14,
                tf.reduce_any(bad15, -1),
                tf.reduce_any(bad16, -1),
                r17,
                tf.reduce_any(bad18, -1),
                tf.reduce_any(bad19, -1),
                r20,
                r21,
                r22,
                r23,
                tf.reduce_any(bad24, -1),
            ],
            -1,
        )
        return early, aligned

    def _codes(self, ebase: tf.Tensor, early: tf.Tensor, aligned: tf.Tensor) -> None:
        """Rules 25-27, then each blob's code (``self.code``: its first failing rule, 0 when it
        passes) and the per-entry field matrix lookups read (``self.fields``)."""
        batch, seg, local = self.B, self.seg, self.local
        early_any = tf.reduce_any(early, -1)
        early_code = _first(early) + 11
        first_early = tf.math.unsorted_segment_min(tf.where(early_any, local, _BIG), seg, batch)
        # Entries before their blob's first failure of rules 11-24: payloads inside the blob,
        # disjoint.
        self.elig = local < tf.gather(first_early, seg)
        self._bools(ebase)
        self._strings(ebase)
        late = tf.where(
            self.elig & self.r25, _int64(25), tf.where(self.elig & self.r26, _int64(26), _int64(0))
        )
        self.sec_code = tf.where(early_any, early_code, late)
        self.first_sec = tf.minimum(
            tf.math.unsorted_segment_min(
                tf.where(tf.not_equal(self.sec_code, 0), local, _BIG), seg, batch
            ),
            _BIG,
        )
        sec_fail = self.first_sec < _BIG
        self.end_total = self.table_end + tf.math.unsorted_segment_sum(aligned, seg, batch)
        r27 = tf.not_equal(self.end_total, self.total)
        self.fail_entry = self.row_starts + tf.where(sec_fail, self.first_sec, 0)
        code = tf.where(
            tf.not_equal(self.header_code, 0),
            self.header_code,
            tf.where(
                sec_fail, _at(self.sec_code, self.fail_entry), tf.where(r27, _int64(27), _int64(0))
            ),
        )
        self.code = code

        # Every per-entry field a lookup or a message reads, as the columns of one int64 matrix
        # (one zero row appended): a field of any entries is one gather, not one per field.
        columns = [getattr(self, f) for f in _ENTRY_FIELDS[:-1]]
        self.fields = _pad1(tf.concat([tf.stack([_i64(c) for c in columns], 1), self.dims], 1))

    def entry_fields(self, entries: tf.Tensor) -> dict[str, tf.Tensor]:
        """The fields of the given entries (1-D, clamped to [0, E]; E reads zeros): one tensor per
        name of :data:`_ENTRY_FIELDS`, ``dims`` of shape [K, 8]."""
        row = tf.gather(self.fields, tf.clip_by_value(entries, 0, self.E))
        out = dict(zip(_ENTRY_FIELDS[:-1], tf.unstack(row[:, : len(_ENTRY_FIELDS) - 1], axis=1)))
        out["dims"] = row[:, len(_ENTRY_FIELDS) - 1 :]
        return out

    def _ranges(self, mask: tf.Tensor, start: tf.Tensor, length: tf.Tensor):
        """Flat [start, start+length) ranges of the masked entries; returns (positions, entry)."""
        values, rowids, _ = _ranges(tf.where(mask, start + length, 0), tf.where(mask, start, 0))
        return values, rowids

    def _bools(self, ebase: tf.Tensor) -> None:
        mask = self.elig & tf.equal(self.dtype, 1) & (self.p_len > 0)
        pos, entry = self._ranges(mask, ebase + self.p_off, self.p_len)
        vals = self.bytes_at(pos)
        local = pos - tf.gather(ebase, entry)
        first = tf.math.unsorted_segment_min(tf.where(vals > 1, local, _BIG), entry, self.E)
        self.pos25 = tf.minimum(first, _BIG)
        self.r25 = self.pos25 < _BIG

    def _strings(self, ebase: tf.Tensor) -> None:
        mask = self.elig & self.is_str
        self.data_len = self.p_len - 8 * (self.n + 1)
        j, entry = self._ranges(mask, tf.zeros_like(self.n), self.n + 1)
        pos = tf.gather(ebase + self.p_off, entry) + 8 * j
        v = self.u64_at(pos)
        prev = self.u64_at(pos - 8)
        dl = tf.gather(self.data_len, entry)
        bad = (tf.equal(j, 0) & tf.not_equal(v, 0)) | ((j > 0) & ((v < 0) | (v < prev) | (v > dl)))
        first = tf.math.unsorted_segment_min(tf.where(bad, j, _BIG), entry, self.E)
        self.j26 = tf.minimum(first, _BIG)
        self.last26 = self.u64_at(ebase + self.p_off + 8 * self.n)
        self.r26 = mask & ((self.j26 < _BIG) | tf.not_equal(self.last26, self.data_len))

    # ---- messages (only built when a blob is bad) ------------------------------------------------
    def entry_names(self, entries: tf.Tensor) -> tf.Tensor:
        """The names of the given entries (valid for entries that passed rules 15-16)."""
        nb = _at(self.name_bytes, entries)
        chars = tf.gather(tf.constant([bytes([i]) for i in range(256)]), tf.cast(nb, tf.int32))
        in_name = _arange(40) < _at(self.nlen, entries)[..., None]
        return tf.strings.reduce_join(tf.where(in_name, chars, ""), axis=-1)

    def present(self, b: tf.Tensor) -> tf.Tensor:
        """Per blob ``b[k]``: the names of its sections, quoted, in table order, joined by ", "."""
        quoted = tf.strings.join(["'", self.entry_names(tf.range(self.E, dtype=tf.int64)), "'"])
        per_blob = tf.RaggedTensor.from_value_rowids(quoted, self.seg, nrows=self.B, validate=False)
        return tf.gather(tf.strings.reduce_join(per_blob, axis=1, separator=", "), b)

    def format_errors(self, b: tf.Tensor) -> tf.Tensor:
        """Per blob ``b[k]`` (1-D): the spec's message for its first broken rule (``code[b] > 0``;
        meaningless otherwise)."""
        i = tf.gather(self.first_sec, b)
        ei = tf.gather(self.fail_entry, b)
        f = self.entry_fields(ei)  # the failing section's fields
        e = 32 + 128 * i
        nb = _at(self.name_bytes, ei)
        j15, j16, k18, k19 = f["j15"], f["j16"], f["k18"], f["k19"]
        end, t24, pos25 = f["end"], f["t24"], f["pos25"]
        p_off, p_len, n = f["p_off"], f["p_len"], f["n"]
        j26f, dl = f["j26"], f["data_len"]
        jj = tf.where(j26f < _BIG, j26f, n)
        kind_a = tf.equal(j26f, 0)  # offsets[0] != 0
        kind_b = (j26f > 0) & (j26f < _BIG)  # offsets[j] outside [offsets[j-1], data length]
        prev26 = self.word_at(b, p_off + 8 * tf.maximum(jj - 1, 0))
        magic = tf.gather(self.magic, b)
        hexb = tf.constant(_HEX)
        ints = {
            "length": tf.gather(self.L, b),
            "version": tf.gather(self.version, b),
            "flags": tf.gather(self.flags, b),
            "count": tf.gather(self.count, b),
            "res0": tf.gather(self.res0, b),
            "table_end": tf.gather(self.table_end, b),
            "end_total": tf.gather(self.end_total, b),
            "i": i,
            "e": e,
            "e1": e + 1,
            "e2": e + 2,
            "e4": e + 4,
            "e8": e + 8,
            "e16": e + 16,
            "e24": e + 24,
            "e88": e + 88,
            "dtype": f["dtype"],
            "rank": f["rank"],
            "nlen": f["nlen"],
            "resv": f["resv"],
            "at15": e + 88 + j15,
            "at16": e + 88 + j16,
            "k18": k18,
            "d18": tf.gather(f["dims"], tf.minimum(k18, 7), batch_dims=1),
            "at18": e + 24 + 8 * k18,
            "k19": k19,
            "d19": tf.gather(f["dims"], tf.minimum(k19, 7), batch_dims=1),
            "at19": e + 24 + 8 * k19,
            "expected_off": f["expected_off"],
            "at24": end + t24,
            "v25": _i64(self.bytes_at(tf.gather(self.base, b) + pos25)),
            "pos25": pos25,
            "j26": jj,
            # else: offsets[n] != data length
            "lo26": tf.where(kind_a, _int64(0), tf.where(kind_b, prev26, dl)),
            "hi26": tf.where(kind_a, _int64(0), dl),
            "at26": p_off + 8 * jj,
        }
        uints = {
            "total": tf.gather(self.total, b),
            "res1": tf.gather(self.res1, b),
            "p_off": p_off,
            "p_len": p_len,
            "v26": self.word_at(b, p_off + 8 * jj),
        }
        texts = {
            "magic": tf.strings.reduce_join(
                tf.gather(tf.constant(_ESC), tf.cast(magic, tf.int32)), -1
            ),
            "name": self.entry_names(ei),
            "b15": tf.gather(
                hexb, tf.cast(tf.gather(nb, tf.minimum(j15, 39), batch_dims=1), tf.int32)
            ),
            "b16": tf.gather(
                hexb, tf.cast(tf.gather(nb, tf.minimum(j16, 39), batch_dims=1), tf.int32)
            ),
            "b24": tf.gather(
                hexb,
                tf.cast(
                    tf.gather(_at(self.pbytes, ei), tf.minimum(t24, 6), batch_dims=1), tf.int32
                ),
            ),
            "exp22": tf.where(
                tf.not_equal(f["is_str"], 0), _join(">= ", _s(f["min_len"])), _s(n * f["size"])
            ),
            "end23": _u65(p_off, p_len),
        }
        return _render(_FORMAT_MESSAGES, tf.gather(self.code, b) - 1, ints, uints, texts)


def _render(
    templates: Sequence[str],
    which: tf.Tensor,
    ints: dict[str, tf.Tensor],
    uints: dict[str, tf.Tensor],
    texts: dict[str, tf.Tensor],
) -> tf.Tensor:
    """``templates[which[k]]`` (clamped to the list) with each ``{field}`` replaced by row ``k``
    of that field: decimal text of an int64 in ``ints``, of the unsigned 64-bit value whose bits
    an int64 in ``uints`` holds, or a string of ``texts`` (all 1-D, one row per message).

    A handful of graph nodes for any number of templates: the numbers are formatted by one
    AsString per kind, and each template is a row of literal pieces and field indices."""
    fields = [*ints, *uints, *texts]
    parsed = [list(string.Formatter().parse(t)) for t in templates]
    width = max(len(p) for p in parsed)
    blank = len(fields)  # the index of an empty field
    pieces = [[lit for lit, _, _, _ in p] + [""] * (width - len(p)) for p in parsed]
    slots = [
        [blank if f is None else fields.index(f) for _, f, _, _ in p] + [blank] * (width - len(p))
        for p in parsed
    ]
    columns = [tf.strings.as_string(tf.stack(list(ints.values()), 1))]
    if uints:
        u = tf.bitcast(tf.stack([_i64(x) for x in uints.values()], 1), tf.uint64)
        columns.append(tf.strings.as_string(u))
    if texts:
        columns.append(tf.stack(list(texts.values()), 1))
    columns.append(tf.fill(tf.stack([tf.size(which), 1]), ""))
    table = tf.concat(columns, 1)  # [K, fields + 1]
    w = tf.clip_by_value(which, 0, len(templates) - 1)
    lit = tf.gather(tf.constant(pieces), w)
    arg = tf.gather(table, tf.gather(tf.constant(slots, tf.int64), w), batch_dims=1)
    return tf.strings.reduce_join(tf.strings.join([lit, arg]), axis=1)


def _raise_if(bad: tf.Tensor, message_fn) -> tf.Tensor:
    """Raises InvalidArgumentError with ``message_fn()`` (scalar string) when ``bad``; returns a
    dummy."""

    # The message is only formatted when needed (tf.cond); StringToNumber's error carries its input
    # verbatim (see the module docstring), and "0" converts cleanly. In a graph, the formatting is a
    # function of its own marked ``_noinline``: TensorFlow (grappler, the session and tf.function
    # runtimes) then neither inlines nor instantiates it until a bad blob calls it, so a graph's
    # first run does not pay for optimizing the message code (about a third of the nodes).
    if not tf.executing_eagerly():
        message_fn = tf.function(
            message_fn, autograph=False, experimental_attributes={"_noinline": True}
        )
    message = tf.cond(bad, message_fn, lambda: tf.constant("0"))
    return tf.strings.to_number(message, tf.float32)


class _Lookups:
    """The requested names, all at once: per blob and name, the section's index and fields, and
    the lookup/ragged/shape checks (codes 1-10 of the op's lookup errors), as [B, Q] tensors.

    ``batched`` adds the batch rule (every blob's shape as blob 0's); without it each blob is
    judged alone, as a scalar call would judge it. ``dep`` (the format check's zero result) bounds
    the row-splits reads by the blobs' sizes even if the format check had not run.
    """

    def __init__(
        self,
        p: _Blobs,
        names: Sequence[str],
        dtypes: Sequence[str],
        ragged: Sequence[bool],
        shapes: Sequence[Any] | None,
        batched: bool,
        dep: tf.Tensor,
    ):
        self.p, self.names, self.dtypes, self.ragged, self.batched = (
            p,
            list(names),
            list(dtypes),
            list(ragged),
            batched,
        )
        nq = self.Q = len(self.names)
        self.shapes = [
            None if shapes is None or shapes[i] is None else tf.TensorShape(shapes[i])
            for i in range(nq)
        ]
        splits = [n + ".row_splits" for n, r in zip(self.names, self.ragged) if r]
        si, found = self._find(self.names + splits)  # [B, Q + R]
        rcol = []  # per name: its row_splits column (a ragged name's), else its own
        for q, r in enumerate(self.ragged):
            rcol.append(nq + len([x for x in self.ragged[:q] if x]) if r else q)
        f = p.entry_fields(tf.reshape(si, [-1]))
        width = nq + len(splits)
        used = ("dtype", "rank", "p_off", "n", "entry")
        cols = {k: tf.reshape(f[k], [p.B, width]) for k in used}
        dims_all = tf.reshape(f["dims"], [p.B, width, 8])
        self.sdtype, self.rank, self.dims = (
            cols["dtype"][:, :nq],
            cols["rank"][:, :nq],
            dims_all[:, :nq],
        )
        self.p_off, self.n, self.entry = (
            cols["p_off"][:, :nq],
            cols["n"][:, :nq],
            cols["entry"][:, :nq],
        )
        is_ragged = tf.constant(self.ragged, tf.bool)[None, :]
        want_dt = tf.constant([_DT_CODE[d] for d in self.dtypes], tf.int64)[None, :]
        found_q = found[:, :nq]
        codes = [tf.logical_not(found_q), tf.not_equal(self.sdtype, want_dt)]

        def rs(t: tf.Tensor) -> tf.Tensor:  # the row_splits section's field, per blob and name
            return tf.gather(t, rcol, axis=1)

        rfound = rs(found)
        self.rdtype, self.rrank, rdims0 = rs(cols["dtype"]), rs(cols["rank"]), rs(dims_all[:, :, 0])
        self.r_off, self.rentry = rs(cols["p_off"]), rs(cols["entry"])
        bad_kind = tf.not_equal(self.rdtype, 3) | tf.not_equal(self.rrank, 1) | (rdims0 < 1)
        self.nvalues = self.dims[:, :, 0]
        ok_so_far = is_ragged & found_q & rfound & tf.logical_not(bad_kind)
        # Bounded by the blob's size even if the format check had not run (``dep`` is the check's
        # zero result: a data dependency Grappler cannot prune, unlike a control edge).
        rows = tf.where(ok_so_far & (self.rank >= 1), rdims0, 0)
        rows = tf.minimum(tf.maximum(rows, 0), (p.L // 8)[:, None]) + dep
        self.rows = rows
        j, pair, _ = _ranges(tf.reshape(rows, [-1]))  # pair = b * Q + q
        pos = tf.gather(tf.reshape(p.base[:, None] + self.r_off, [-1]), pair) + 8 * j
        v = p.u64_at(pos)
        prev = p.u64_at(pos - 8)
        nv = tf.gather(tf.reshape(self.nvalues, [-1]), pair)
        bad = (tf.equal(j, 0) & tf.not_equal(v, 0)) | ((j > 0) & ((v < prev) | (v > nv)))
        jbad = tf.math.unsorted_segment_min(tf.where(bad, j, _BIG), pair, p.B * nq)
        self.jbad = tf.reshape(tf.minimum(jbad, _BIG), [p.B, nq])
        self.split_values, self.split_pair, self.split_j = v, pair, j
        self.last = p.u64_at(p.base[:, None] + self.r_off + 8 * (rows - 1))
        codes += [
            is_ragged & tf.logical_not(rfound),
            is_ragged & bad_kind,
            is_ragged & (self.rank < 1),
            is_ragged & tf.equal(self.jbad, 0),
            is_ragged & (self.jbad > 0) & (self.jbad < _BIG),
            is_ragged & tf.equal(self.jbad, _BIG) & tf.not_equal(self.last, self.nvalues),
        ]
        # The shapes attr: rank and the given dims (-1: any; columns past 8 cannot match a rank).
        want_rank = [-1 if s is None or s.rank is None else s.rank for s in self.shapes]
        want_dims = [
            ([-1 if d is None else d for d in s.as_list()] if w >= 0 else []) + [-1] * 8
            for s, w in zip(self.shapes, want_rank)
        ]
        wr = tf.constant(want_rank, tf.int64)[None, :]
        wd = tf.constant([w[:8] for w in want_dims], tf.int64)[None, :, :]
        codes.append(
            (wr >= 0)
            & (
                tf.not_equal(self.rank, wr)
                | tf.reduce_any((wd >= 0) & tf.not_equal(self.dims, wd), -1)
            )
        )
        if batched:  # every blob's shape as blob 0's (a ragged name's leading dim excepted)
            begin = tf.constant([[1 if r else 0 for r in self.ragged]], tf.int64)
            compared = _arange(8)[None, None, :] >= begin[:, :, None]
            diff = tf.not_equal(self.rank, self.rank[:1]) | tf.reduce_any(
                compared & tf.not_equal(self.dims, self.dims[:1]), -1
            )
            codes.append(diff)
        else:
            codes.append(tf.zeros_like(found_q))
        stacked = tf.stack(codes, 2)
        self.code = tf.where(tf.reduce_any(stacked, 2), _first(stacked, 2) + 1, 0)  # [B, Q]

    def _find(self, names: list[str]) -> tuple[tf.Tensor, tf.Tensor]:
        """Per blob and name: the first entry of that name (the blob's first entry if none), and
        whether there is one; [B, len(names)] each."""
        p = self.p
        raw = [n.encode("utf-8") for n in names]
        words = np.stack(
            [np.frombuffer(r[:40].ljust(40, b"\0"), dtype="<i8").astype(np.int64) for r in raw]
        )
        findable = tf.constant([len(r) <= 40 for r in raw])
        match = (
            tf.reduce_all(tf.equal(p.name_words[:, None, :], tf.constant(words)[None, :, :]), -1)
            & findable[None, :]
        )
        first = tf.math.unsorted_segment_min(tf.where(match, p.local[:, None], _BIG), p.seg, p.B)
        found = first < _BIG
        return p.row_starts[:, None] + tf.where(found, first, 0), found

    def format_errors(self, b: tf.Tensor, q: tf.Tensor) -> tf.Tensor:
        """The lookup error message of blob ``b[k]``, name ``q[k]`` (1-D each; ``code[b, q] > 0``,
        meaningless otherwise)."""
        p = self.p
        at = tf.stack([b, q], 1)

        def g(t: tf.Tensor) -> tf.Tensor:
            return tf.gather_nd(t, at)

        def per_name(texts: list[str]) -> tf.Tensor:
            return tf.gather(tf.constant(texts), q)

        dt_names = tf.constant(_DT_NAMES)
        ragged = tf.constant([1 if r else 0 for r in self.ragged], tf.int64)

        def shape_text(dims: tf.Tensor, rank: tf.Tensor, begin: tf.Tensor) -> tf.Tensor:
            k = _arange(8, row=True)
            shown = (k >= begin[:, None]) & (k < rank[:, None])
            text = _s(dims)
            text = tf.where(k > begin[:, None], tf.strings.join([",", text]), text)
            inner = tf.strings.reduce_join(tf.where(shown, text, ""), axis=-1)
            star = tf.where(rank > 1, "[*,", "[*")
            return _join(tf.where(begin > 0, star, "["), inner, "]")

        entry, rank, dims = g(self.entry), g(self.rank), g(self.dims)
        jb, rows, r_off = g(self.jbad), g(self.rows), g(self.r_off)
        want = [
            ""
            if s is None or s.rank is None
            else "[" + ",".join("?" if d is None else str(d) for d in s.as_list()) + "]"
            for s in self.shapes
        ]
        begin = tf.gather(ragged, q)
        ints = {
            "entry": entry,
            "entry1": entry + 1,
            "rrank": g(self.rrank),
            "rentry": g(self.rentry),
            "vj": p.word_at(b, r_off + 8 * tf.minimum(jb, tf.maximum(rows - 1, 0))),
            "vprev": p.word_at(b, r_off + 8 * tf.maximum(tf.minimum(jb, rows) - 1, 0)),
            "nv": g(self.nvalues),
            "jb": jb,
            "r_off": r_off,
            "at7": r_off + 8 * jb,
            "last_j": rows - 1,
            "last": g(self.last),
            "at8": r_off + 8 * (rows - 1),
        }
        texts = {
            "prefix": _join("blob ", _s(b)) if self.batched else tf.fill(tf.shape(b), "blob"),
            "q": per_name(self.names),
            "present": p.present(b),
            "want_dtype": per_name(self.dtypes),
            "got_dtype": tf.gather(dt_names, tf.clip_by_value(g(self.sdtype), 0, 7)),
            "rdtype": tf.gather(dt_names, tf.clip_by_value(g(self.rdtype), 0, 7)),
            "want_shape": per_name(want),
            "got_shape": shape_text(dims, rank, tf.zeros_like(begin)),
            "shape0": shape_text(tf.gather(self.dims[0], q), tf.gather(self.rank[0], q), begin),
            "shape_b": shape_text(dims, rank, begin),
        }
        return _render(_LOOKUP_MESSAGES, g(self.code) - 1, ints, {}, texts)


def _elements(p: _Blobs, dtype: str, p_off: tf.Tensor, count: tf.Tensor, single: bool) -> tf.Tensor:
    """The ``count[b]`` elements of the section at ``p_off[b]`` of every blob, concatenated (1-D).

    Fixed-size dtypes: one blob's payload is sliced from the flat bytes and bitcast; a batch's
    payloads are cut out with tf.strings.substr (same shape as the blobs: no broadcast copy) and
    read by tf.io.decode_raw (little-endian on any host).
    Strings: the offsets and bytes are gathered from the flat byte vector.
    """
    if dtype == "string":
        start = p.base + p_off
        j, b, _ = _ranges(count)  # element j of blob b: bytes [offsets[j], offsets[j+1])
        at = tf.gather(start, b) + 8 * j
        first = p.u64_at(at)
        abs_starts = first + tf.gather(start + 8 * (count + 1), b)
        lengths = p.u64_at(at + 8) - first
        idx, element, _ = _ranges(abs_starts + lengths, abs_starts)
        chars = tf.gather(
            tf.constant([bytes([i]) for i in range(256)]), tf.cast(p.bytes_at(idx), tf.int32)
        )
        return tf.strings.unsorted_segment_join(chars, element, tf.size(j, out_type=tf.int64))
    size = _SIZES[_DT_CODE[dtype]]
    if single and sys.byteorder == "little":
        # One blob: a slice of the flat bytes (tf.strings.substr copies large strings slowly).
        raw = tf.slice(p.F, tf.reshape(p_off[0], [1]), tf.reshape(count[0] * size, [1]))
        if dtype == "bool":
            return tf.cast(raw, tf.bool)
        return tf.reshape(tf.bitcast(tf.reshape(raw, [-1, size]), TF_DTYPES[dtype]), [-1])
    payload = tf.strings.substr(p.vec, p_off, count * size)
    payload = tf.strings.reduce_join(payload)  # blobs may hold different counts (ragged)
    return tf.reshape(tf.io.decode_raw(payload, TF_DTYPES[dtype]), [-1])


def _prefix(b: tf.Tensor, batched: bool) -> tf.Tensor:
    """How a message about blob ``b`` starts: ``blob b: `` in a vector, ``blob: `` for a scalar."""
    return _join("blob ", _s(b), ": ") if batched else tf.constant("blob: ")


def unpack_blob_portable(
    blobs: Any,
    names: str | Sequence[str],
    dtypes: Any,
    ragged: Iterable[str] = (),
    shapes: Sequence[Any] | None = None,
    name: str | None = None,
    encoding: str = "raw",
) -> list[Any]:
    """Decodes sections of blob(s) with stock TensorFlow ops only (runs on stock TF Serving).

    Guarantees the contract of :func:`memgraph_tf.ops.unpack_blob`: the same outputs (values,
    dtypes, shapes, ragged structure) and the same rejections, raised as
    ``tf.errors.InvalidArgumentError`` whose message contains the op's message (``blob b: <spec
    message>``). Works eagerly, in ``tf.function``, ``tf.data`` and SavedModels. Unlike the op,
    ``blobs`` must have a static rank (0 or 1; ``ValueError`` otherwise).
    ``encoding="base64"`` decodes base64url text first with ``tf.io.decode_base64``: the same
    values as the op for valid text, but TensorFlow's own message for invalid text.
    """
    encoding = check_encoding(encoding)
    names, blob_dtypes, ragged_flags = normalize_args(names, dtypes, ragged)
    check_shapes(shapes, names)
    with tf.name_scope(name or "UnpackBlobPortable"):
        blobs = tf.convert_to_tensor(blobs, dtype=tf.string)
        if encoding == "base64":
            blobs = tf.io.decode_base64(blobs)
        rank = blobs.shape.rank
        if rank not in (0, 1):
            raise ValueError(
                "blobs: expected a scalar or a vector of blobs (rank 0 or 1), got shape "
                f"{blobs.shape}"
            )
        batched = rank == 1
        vec = blobs if batched else tf.reshape(blobs, [1])
        nonempty = _raise_if(
            tf.equal(tf.size(vec), 0),
            lambda: tf.constant(
                "blobs: expected a scalar or a vector of at least 1 blob, got an empty vector"
            ),
        )
        p = _Blobs(vec, single=not batched)  # safe on an empty vector; blob 0 is read after `dep`
        bad_blob = _first(tf.not_equal(p.code, 0), 0)
        guard = _raise_if(
            bad_blob < p.B,
            lambda: _join(_prefix(bad_blob, batched), p.format_errors(bad_blob[None])[0]),
        )
        # The checks' results (0) are added to every position read below: a data dependency, so the
        # decoding cannot run before (or without) the checks, whatever graph optimizations do.
        dep = tf.cast(guard, tf.int64) + tf.cast(nonempty, tf.int64)
        with tf.control_dependencies([guard]):
            lk = _Lookups(p, names, blob_dtypes, ragged_flags, shapes, batched, dep)
            flat = tf.reshape(tf.transpose(lk.code), [-1])  # name-major order
            at = _first(tf.not_equal(flat, 0), 0)
            guard2 = _raise_if(
                at < tf.size(flat, out_type=tf.int64),
                lambda: lk.format_errors((at % p.B)[None], (at // p.B)[None])[0],
            )
        dep2 = dep + tf.cast(guard2, tf.int64)
        with tf.control_dependencies([guard, guard2]):
            return _decode(p, lk, batched, dep2)


def blob_errors(
    blobs: Any,
    names: str | Sequence[str],
    dtypes: Any,
    ragged: Iterable[str] = (),
    shapes: Sequence[Any] | None = None,
) -> tf.Tensor:
    """Per blob of the vector ``blobs``: the message that ``unpack_blob_portable(blob, names,
    dtypes, ragged, shapes)`` raises for that blob alone (a scalar call), or ``""`` where it
    decodes. Raises nothing on bad blobs.

    The same rules and message code as the raising path (one implementation), all blobs in one
    graph run: for checking many blobs at once (the mutation tests).
    """
    names, blob_dtypes, ragged_flags = normalize_args(names, dtypes, ragged)
    check_shapes(shapes, names)
    vec = tf.convert_to_tensor(blobs, dtype=tf.string)
    if vec.shape.rank != 1:
        raise ValueError(f"blobs: expected a vector of blobs, got shape {vec.shape}")
    p = _Blobs(vec, single=False)
    b = tf.range(p.B, dtype=tf.int64)
    lk = _Lookups(p, names, blob_dtypes, ragged_flags, shapes, False, _int64(0))
    q = _first(tf.not_equal(lk.code, 0), 1)  # each blob's first failing name (Q if none)
    looked_up = lk.format_errors(b, tf.minimum(q, lk.Q - 1))
    return tf.where(
        tf.not_equal(p.code, 0),
        _join(_prefix(b, False), p.format_errors(b)),
        tf.where(q < lk.Q, looked_up, ""),
    )


def _decode(p: _Blobs, lk: _Lookups, batched: bool, dep: tf.Tensor) -> list[Any]:
    """Every requested section of every blob (the checks passed: ``dep`` is their zero)."""
    single = not batched
    nq = lk.Q

    def by_name(t: tf.Tensor) -> list[tf.Tensor]:
        return tf.unstack(t, num=nq, axis=1)

    ranks, dims, p_offs = by_name(lk.rank), by_name(lk.dims), by_name(lk.p_off)
    ns, nvalues, rows = by_name(lk.n), by_name(lk.nvalues), by_name(lk.rows)
    outputs = []
    for q in range(nq):
        dtype = lk.dtypes[q]
        # Blob 0's shape, read at index `dep` (= 0 once the checks passed: see
        # unpack_blob_portable).
        rank0 = tf.gather(ranks[q], dep)
        dims0 = tf.gather(dims[q], dep)
        if not lk.ragged[q]:
            shape = tf.slice(dims0, tf.constant([0], tf.int64), tf.reshape(rank0, [1]))
            values = _elements(p, dtype, p_offs[q] + dep, ns[q], single)
            full = tf.concat([tf.reshape(p.B, [1]), shape], 0) if batched else shape
            out = tf.reshape(values, full)
            want = lk.shapes[q]
            if want is not None and want.rank is not None:
                out = tf.ensure_shape(out, ([None] if batched else []) + want.as_list())
            outputs.append(out)
            continue
        inner = tf.slice(
            dims0, tf.constant([1], tf.int64), tf.reshape(tf.maximum(rank0 - 1, 0), [1])
        )
        inner_n = tf.reduce_prod(inner)
        values = _elements(p, dtype, p_offs[q] + dep, nvalues[q] * inner_n, single)
        values = tf.reshape(
            values, tf.concat([tf.reshape(tf.reduce_sum(nvalues[q]), [1]), inner], 0)
        )  # no -1: inner may hold a 0
        # Row splits of every blob, shifted by the values of the blobs before it; each blob's
        # leading 0 dropped but the first.
        shift = tf.cumsum(nvalues[q], exclusive=True)
        mine = tf.equal(lk.split_pair % nq, q) & (lk.split_j > 0)
        shifted = lk.split_values + tf.gather(shift, lk.split_pair // nq) + dep
        row_splits = tf.concat([[tf.constant(0, tf.int64)], tf.boolean_mask(shifted, mine)], 0)
        rt = tf.RaggedTensor.from_row_splits(values, row_splits, validate=False)
        if batched:
            batch_splits = tf.concat([[tf.constant(0, tf.int64)], tf.cumsum(rows[q] - 1)], 0)
            rt = tf.RaggedTensor.from_row_splits(rt, batch_splits, validate=False)
        outputs.append(rt)
    return outputs
