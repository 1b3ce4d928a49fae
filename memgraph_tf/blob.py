"""Blob format v1: pack named, typed n-d arrays into one byte string, and read them back.

The normative specification is ``docs/blob-format.md``; this module implements it exactly, including
the order of the checks and the text of every rejection message, which the C++ reader shares.

* :func:`pack` runs with the standard library alone (it runs inside Memgraph, whose Python may lack
  numpy) and takes numpy arrays fast when numpy is present; both paths give the same bytes.
* :func:`unpack` needs numpy. It validates the whole blob before it allocates anything sized by the
  blob's contents, and raises :class:`BlobFormatError` naming the field and byte offset at fault.

Ragged data (ragged rank 1) is a pair of sections ``NAME`` (flat values) and ``NAME.row_splits``;
:func:`pack` writes a :class:`Ragged` as that pair and :func:`unpack` returns such pairs as
:class:`Ragged`.
"""

from __future__ import annotations

import array
import binascii
import functools
import itertools
import struct
import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from memgraph_tf.errors import MemgraphTfError

try:  # numpy is optional for packing (Memgraph's Python may lack it)
    import numpy as _np
except ImportError:  # pragma: no cover - exercised by the stdlib-only subprocess test
    _np = None

__all__ = [
    "DTYPES",
    "HEADER_BYTES",
    "MAGIC",
    "MAX_BLOB_BYTES",
    "MAX_ELEMENTS",
    "MAX_NAME_BYTES",
    "MAX_RANK",
    "MAX_SECTIONS",
    "SECTION_ENTRY_BYTES",
    "VERSION",
    "BlobFormatError",
    "Dense",
    "Ragged",
    "b64decode",
    "b64encode",
    "pack",
    "pack_b64",
    "unpack",
    "unpack_b64",
]

MAGIC = b"MGTF"
VERSION = 1
HEADER_BYTES = 32
SECTION_ENTRY_BYTES = 128
ALIGNMENT = 8
MAX_SECTIONS = 1024
MAX_RANK = 8
MAX_NAME_BYTES = 40
MAX_BLOB_BYTES = 2**31 - 1
MAX_DIM = 2**31 - 1
MAX_ELEMENTS = 2**31 - 1
ROW_SPLITS_SUFFIX = ".row_splits"

DTYPES: dict[str, int] = {
    "bool": 1,
    "int32": 2,
    "int64": 3,
    "float32": 4,
    "float64": 5,
    "string": 6,
}
DTYPE_NAMES: dict[int, str] = {code: name for name, code in DTYPES.items()}
ITEM_BYTES: dict[str, int] = {"bool": 1, "int32": 4, "int64": 8, "float32": 4, "float64": 8}
_NUMPY_DTYPES = {"bool": "|b1", "int32": "<i4", "int64": "<i8", "float32": "<f4", "float64": "<f8"}

_HEADER = struct.Struct("<4sHHIIQQ")
_ENTRY = struct.Struct("<BBHIQQ8q40s")
_SPAN = struct.Struct("<QQ")  # an entry's payload offset and length, 8 bytes into it
assert _HEADER.size == HEADER_BYTES and _ENTRY.size == SECTION_ENTRY_BYTES

_NAME_CHARS = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-:/")
_LITTLE = sys.byteorder == "little"


def _array_typecode(item_bytes: int, kind: str) -> str:
    candidates = {"i": ("i", "l"), "q": ("q", "l"), "f": ("f",), "d": ("d",)}[kind]
    for code in candidates:
        if array.array(code).itemsize == item_bytes:
            return code
    raise RuntimeError(
        f"no array typecode of {item_bytes} bytes for kind {kind!r}"
    )  # pragma: no cover


_TYPECODES = {
    "bool": "B",
    "int32": _array_typecode(4, "i"),
    "int64": _array_typecode(8, "q"),
    "float32": _array_typecode(4, "f"),
    "float64": _array_typecode(8, "d"),
}


class BlobFormatError(MemgraphTfError, ValueError):
    """A blob (or the data given to :func:`pack`) breaks the format v1 rules.

    The message names the field and, for blobs, the absolute byte offset at fault, in the form
    ``<field>: expected <X>, got <Y> at offset <N>``.
    """


class Ragged(NamedTuple):
    """A ragged array of ragged rank 1: row ``r`` is ``values[row_splits[r]:row_splits[r + 1]]``."""

    values: Any
    row_splits: Any

    @classmethod
    def from_rows(cls, rows: Sequence[Sequence[Any]]) -> Ragged:
        """Builds a Ragged from a list of variable-length rows (lists of scalars or of equal
        vectors)."""
        values: list[Any] = []
        splits = [0]
        for row in rows:
            values.extend(row)
            splits.append(len(values))
        return cls(values, splits)


class Dense(NamedTuple):
    """A section given as a flat sequence in row-major order with an explicit shape.

    ``flat`` may be a list, an ``array.array``, a bytes-like object holding the little-endian
    payload of a fixed-size dtype, or a numpy array. This is the fast path for callers that build
    payloads incrementally (the query modules do) since no nested-list shape inference is needed.
    """

    flat: Any
    shape: Sequence[int]
    dtype: str


# --------------------------------------------------------------------------------------------
# Packing
# --------------------------------------------------------------------------------------------


def _align(n: int) -> int:
    return (n + ALIGNMENT - 1) & ~(ALIGNMENT - 1)


def _check_name(name: Any) -> bytes:
    if type(name) is str:  # (a writer names the same sections blob after blob)
        return _checked_name(name)
    if not isinstance(name, str):
        raise BlobFormatError(f"section name: expected a str, got {type(name).__name__} {name!r}")
    return _checked_name(str(name))


@functools.lru_cache(maxsize=256)
def _checked_name(name: str) -> bytes:
    """The UTF-8 bytes of a valid section name (remembered); BlobFormatError naming the rule
    otherwise (not remembered: an exception is not cached)."""
    raw = name.encode("utf-8")
    if not 1 <= len(raw) <= MAX_NAME_BYTES:
        raise BlobFormatError(
            f"section name {name!r}: expected 1..{MAX_NAME_BYTES} bytes, got {len(raw)}"
        )
    bad = [chr(b) for b in raw if b not in _NAME_CHARS]
    if bad:
        raise BlobFormatError(
            f"section name {name!r}: expected characters [A-Za-z0-9_.:/-], got {bad[0]!r}"
        )
    return raw


def _check_dtype_name(name: str, dtype: Any) -> str:
    if dtype not in DTYPES:
        raise BlobFormatError(
            f"section {name!r}: expected dtype one of {sorted(DTYPES)}, got {dtype!r}"
        )
    return dtype


def _shape_of(name: str, value: Any) -> tuple[list[int], list[Any]]:
    """Infers the shape of a nested list/tuple and flattens it (row-major)."""
    shape: list[int] = []
    probe = value
    while isinstance(probe, (list, tuple)):
        shape.append(len(probe))
        if not probe:
            break
        probe = probe[0]
    if not shape:
        return [], [value]
    if len(shape) > MAX_RANK:
        raise BlobFormatError(f"section {name!r}: expected rank <= {MAX_RANK}, got {len(shape)}")
    flat: list[Any] = []

    def not_rectangular(expected: str, index: Sequence[int], got: str) -> BlobFormatError:
        return BlobFormatError(
            f"section {name!r}: expected {expected} at index {list(index)}, got {got} "
            "(a non-rectangular nested list: use blob.Ragged for variable-length rows)"
        )

    def walk(node: Any, depth: int, index: tuple[int, ...]) -> None:
        if depth == len(shape):
            if isinstance(node, (list, tuple)):
                raise not_rectangular("a scalar", index, "a list")
            flat.append(node)
            return
        if not isinstance(node, (list, tuple)) or len(node) != shape[depth]:
            got = f"length {len(node)}" if isinstance(node, (list, tuple)) else "a scalar"
            raise not_rectangular(f"length {shape[depth]}", index, got)
        if depth + 1 == len(shape):
            for i, item in enumerate(node):
                if isinstance(item, (list, tuple)):
                    raise not_rectangular("a scalar", index + (i,), "a list")
            flat.extend(node)
            return
        for i, item in enumerate(node):
            walk(item, depth + 1, index + (i,))

    walk(value, 0, ())
    return shape, flat


#: The section dtype a Python value asks for, by its type (bool first: a bool is an int too).
_PYTHON_KINDS = (
    (bool, "bool"),
    (int, "int64"),
    (float, "float64"),
    ((str, bytes, bytearray), "string"),
)


def _value_kind(name: str, i: int, v: Any) -> str:
    """The dtype value ``v`` (index ``i`` of section ``name``) asks for; a numpy scalar asks for
    its own. Another type raises BlobFormatError naming the section and the index."""
    for types, kind in _PYTHON_KINDS:
        if isinstance(v, types):
            return kind
    if _np is not None and isinstance(v, _np.generic):
        return _numpy_dtype_name(name, v.dtype)
    raise BlobFormatError(
        f"section {name!r}: expected bool, int, float, str or bytes values, "
        f"got {type(v).__name__} {v!r} at index {i}"
    )


def _infer_dtype(name: str, flat: Sequence[Any]) -> str:
    kinds: set[str] = set()
    for i, v in enumerate(flat):
        k = _value_kind(name, i, v)
        if k not in kinds:
            if kinds and (k == "string") != ("string" in kinds):
                raise BlobFormatError(
                    f"section {name!r}: expected values of one kind, got {sorted(kinds)[0]} and "
                    f"{k} (first {k} at index {i})"
                )
            kinds.add(k)
    if not kinds:
        return "float32"  # an empty list: the feature dtype
    if "string" in kinds:
        return "string"
    for dt in ("float64", "float32", "int64", "int32", "bool"):
        if dt in kinds:
            return dt
    return "float64"  # pragma: no cover


def _numpy_dtype_name(name: str, dtype: Any) -> str:
    kind = dtype.kind
    if kind == "b":
        return "bool"
    if kind in "iu" and dtype.itemsize <= 4 and not (kind == "u" and dtype.itemsize == 4):
        return "int32"
    if kind == "i" and dtype.itemsize == 8:
        return "int64"
    if kind == "f" and dtype.itemsize == 4:
        return "float32"
    if kind == "f" and dtype.itemsize == 8:
        return "float64"
    if kind in "USO":
        return "string"
    raise BlobFormatError(
        f"section {name!r}: expected a numpy dtype of bool, int32, int64, float32, float64 or "
        f"string, got {dtype} (pass dtypes={{{name!r}: ...}} to convert)"
    )


def _encode_strings(name: str, flat: Iterable[Any]) -> bytes:
    pieces: list[bytes] = []
    for i, v in enumerate(flat):
        if isinstance(v, str):
            pieces.append(v.encode("utf-8"))
        elif isinstance(v, (bytes, bytearray, memoryview)):
            pieces.append(bytes(v))
        elif _np is not None and isinstance(v, (_np.str_, _np.bytes_)):
            pieces.append(v.encode("utf-8") if isinstance(v, _np.str_) else bytes(v))
        else:
            raise BlobFormatError(
                f"section {name!r}: expected str or bytes for a string section, "
                f"got {type(v).__name__} {v!r} at index {i}"
            )
    offsets = array.array(_TYPECODES["int64"], [0]) * (len(pieces) + 1)
    total = 0
    for i, p in enumerate(pieces):
        total += len(p)
        offsets[i + 1] = total
    if not _LITTLE:  # pragma: no cover - big-endian hosts
        offsets.byteswap()
    return offsets.tobytes() + b"".join(pieces)


def _encode_flat(name: str, dtype: str, flat: Sequence[Any]) -> bytes:
    """Encodes a flat Python sequence as a little-endian payload of ``dtype`` (stdlib only)."""
    if dtype == "string":
        return _encode_strings(name, flat)
    if isinstance(flat, (bytes, bytearray, memoryview)):
        return bytes(flat)
    if isinstance(flat, array.array) and (flat.typecode != _TYPECODES[dtype] or dtype == "bool"):
        flat = flat.tolist()
    if isinstance(flat, array.array):
        arr = flat
    else:
        for i, v in enumerate(flat):
            if dtype == "bool":
                ok = isinstance(v, bool) or (isinstance(v, int) and v in (0, 1))
            elif dtype.startswith("int"):
                ok = isinstance(v, int) and not isinstance(v, bool)
            else:
                ok = isinstance(v, (int, float)) and not isinstance(v, bool)
            if not ok and _np is not None and isinstance(v, _np.generic):
                ok = _numpy_value_fits(dtype, v)
            if not ok:
                raise BlobFormatError(
                    f"section {name!r}: expected {dtype} values, got {type(v).__name__} {v!r} at "
                    f"index {i}"
                )
        try:
            arr = array.array(
                _TYPECODES[dtype], flat if dtype != "bool" else [1 if v else 0 for v in flat]
            )
        except OverflowError as exc:
            bound = 2 ** (ITEM_BYTES[dtype] * 8 - 1)
            bad = next((i for i, v in enumerate(flat) if not -bound <= int(v) < bound), None)
            raise BlobFormatError(
                f"section {name!r}: expected {dtype} values in [{-bound}, {bound - 1}], "
                f"got {flat[bad]!r} at index {bad}"
            ) from exc
    if not _LITTLE and ITEM_BYTES[dtype] > 1:  # pragma: no cover - big-endian hosts
        arr = array.array(arr.typecode, arr)
        arr.byteswap()
    return arr.tobytes()


def _numpy_value_fits(dtype: str, v: Any) -> bool:
    kind = v.dtype.kind
    if dtype == "bool":
        return kind == "b"
    if dtype.startswith("int"):
        return kind in "iu"
    return kind in "iuf"


def _section_from_numpy(name: str, arr: Any, dtype: str | None) -> tuple[str, list[int], bytes]:
    if dtype is None:
        dtype = _numpy_dtype_name(name, arr.dtype)
    if arr.ndim > MAX_RANK:
        raise BlobFormatError(f"section {name!r}: expected rank <= {MAX_RANK}, got {arr.ndim}")
    shape = [int(d) for d in arr.shape]
    if dtype == "string":
        if arr.dtype.kind not in "USO":
            raise BlobFormatError(
                f"section {name!r}: expected str or bytes elements for dtype string, got "
                f"{arr.dtype}"
            )
        return dtype, shape, _encode_strings(name, arr.reshape(-1).tolist())
    if arr.dtype.kind in "USO":
        raise BlobFormatError(
            f"section {name!r}: expected dtype {dtype}, got string array {arr.dtype}"
        )
    target = _np.dtype(_NUMPY_DTYPES[dtype])
    if arr.dtype != target:
        if dtype == "bool" and arr.dtype.kind in "iu":
            if arr.size and (arr.min() < 0 or arr.max() > 1):
                raise BlobFormatError(
                    f"section {name!r}: expected 0 or 1 for dtype bool, got other values"
                )
        elif not _np.can_cast(arr.dtype, target, casting="same_kind"):
            raise BlobFormatError(
                f"section {name!r}: expected values convertible to {dtype} without changing kind, "
                f"got {arr.dtype}"
            )
        if dtype.startswith("int") and arr.dtype.kind in "iu" and arr.size:
            info = _np.iinfo(target)
            lo, hi = arr.min(), arr.max()
            if lo < info.min or hi > info.max:
                raise BlobFormatError(
                    f"section {name!r}: expected {dtype} values in [{info.min}, {info.max}], "
                    f"got {lo if lo < info.min else hi}"
                )
        arr = arr.astype(target)
    return dtype, shape, _np.ascontiguousarray(arr).tobytes()


def _element_count(name: str, shape: list[int]) -> int:
    """The number of elements of section ``name`` of ``shape``; raises :class:`BlobFormatError`
    naming the section when a dimension is negative."""
    n = 1
    for d in shape:
        if d < 0:
            raise BlobFormatError(f"section {name!r}: expected dims >= 0, got shape {shape}")
        n *= d
    return n


def _normalize(name: str, value: Any, dtype: str | None) -> tuple[str, list[int], bytes]:
    """Returns (dtype, shape, payload bytes) for one section."""
    if dtype is not None:
        _check_dtype_name(name, dtype)
    if isinstance(value, Dense):
        dt = _check_dtype_name(name, dtype or value.dtype)
        shape = [int(d) for d in value.shape]
        if len(shape) > MAX_RANK:
            raise BlobFormatError(
                f"section {name!r}: expected rank <= {MAX_RANK}, got {len(shape)}"
            )
        n = _element_count(name, shape)
        flat = value.flat
        if _np is not None and isinstance(flat, _np.ndarray):
            got = flat.size
            if got != n:
                raise BlobFormatError(
                    f"section {name!r}: expected {n} elements for shape {shape}, got {got}"
                )
            _, _, payload = _section_from_numpy(name, flat.reshape(shape), dt)
            return dt, shape, payload
        if isinstance(flat, (bytes, bytearray, memoryview)) and dt != "string":
            got = len(flat) // ITEM_BYTES[dt]
            if len(flat) != n * ITEM_BYTES[dt]:
                raise BlobFormatError(
                    f"section {name!r}: expected {n * ITEM_BYTES[dt]} payload bytes for {dt} shape "
                    f"{shape}, got {len(flat)}"
                )
        else:
            got = len(flat)
            if got != n:
                raise BlobFormatError(
                    f"section {name!r}: expected {n} elements for shape {shape}, got {got}"
                )
        return dt, shape, _encode_flat(name, dt, flat)
    if _np is not None and isinstance(value, (_np.ndarray, _np.generic)):
        return _section_from_numpy(name, _np.asarray(value), dtype)
    if isinstance(value, (list, tuple, bool, int, float, str, bytes)):
        if isinstance(value, bytes) and dtype not in (None, "string"):
            raise BlobFormatError(f"section {name!r}: expected {dtype} values, got bytes")
        shape, flat = _shape_of(name, value)
        dt = dtype or _infer_dtype(name, flat)
        return dt, shape, _encode_flat(name, dt, flat)
    if isinstance(value, array.array):
        dt = dtype or {
            "b": "int32",
            "h": "int32",
            "i": "int32",
            "l": "int64",
            "q": "int64",
            "f": "float32",
            "d": "float64",
            "B": "int32",
            "H": "int32",
        }.get(value.typecode)
        if dt is None:
            raise BlobFormatError(
                f"section {name!r}: expected a supported array typecode, got {value.typecode!r}"
            )
        return dt, [len(value)], _encode_flat(name, dt, value)
    raise BlobFormatError(
        f"section {name!r}: expected an array-like, a nested list, a list of str/bytes, "
        f"blob.Dense or blob.Ragged, got {type(value).__name__}"
    )


def pack(sections: Mapping[str, Any], dtypes: Mapping[str, str] | None = None) -> bytes:
    """Packs named sections into a format-v1 blob and returns its bytes.

    Guarantees: the result is the canonical encoding of the sections in ``sections``' iteration
    order (the same input always gives the same bytes, with or without numpy); :func:`unpack` of it
    gives the same values back; every rule of ``docs/blob-format.md`` holds for it.

    Values may be numpy arrays (their dtype kept unless ``dtypes`` names another of the same kind),
    nested lists/tuples (rectangular; ``bool`` -> bool, ``int`` -> int64, ``float`` -> float64,
    ``str``/``bytes`` -> string unless ``dtypes`` says otherwise), :class:`Dense` or
    :class:`Ragged`. A :class:`Ragged` ``NAME`` becomes the sections ``NAME`` and
    ``NAME.row_splits``; its entry in ``dtypes`` applies to the values.

    Raises :class:`BlobFormatError` naming the section (and index) at fault.
    """
    dtypes = dict(dtypes or {})
    unknown = set(dtypes) - set(sections)
    if unknown:
        raise BlobFormatError(
            f"dtypes: expected names of given sections {sorted(sections)}, got {sorted(unknown)}"
        )
    entries: list[tuple[bytes, str, list[int], bytes]] = []
    for name, value in sections.items():
        raw_name = _check_name(name)
        if isinstance(value, Ragged):
            dt, shape, payload = _normalize(name, value.values, dtypes.get(name))
            if not shape:
                raise BlobFormatError(
                    f"section {name!r}: expected ragged values of rank >= 1, got a scalar"
                )
            splits_name = name + ROW_SPLITS_SUFFIX
            raw_splits = _check_name(splits_name)
            sdt, sshape, spayload = _normalize(splits_name, value.row_splits, "int64")
            _check_row_splits_python(name, value.row_splits, shape[0])
            entries.append((raw_name, dt, shape, payload))
            entries.append((raw_splits, sdt, sshape, spayload))
        else:
            dt, shape, payload = _normalize(name, value, dtypes.get(name))
            entries.append((raw_name, dt, shape, payload))
    if len(entries) > MAX_SECTIONS:
        raise BlobFormatError(f"sections: expected at most {MAX_SECTIONS}, got {len(entries)}")
    seen: set[bytes] = set()
    for raw_name, *_ in entries:
        if raw_name in seen:
            raise BlobFormatError(
                f"section {raw_name.decode()!r}: expected a unique name, got a duplicate "
                "(a Ragged NAME also writes NAME.row_splits)"
            )
        seen.add(raw_name)

    return _write(entries)


def _write(entries: Sequence[tuple[bytes, str, list[int], bytes]]) -> bytes:
    """The blob of checked ``(raw name, dtype, shape, payload)`` entries, in order: the header,
    the section table, each payload at the next 8-byte boundary, zero padding."""
    header_end = HEADER_BYTES + SECTION_ENTRY_BYTES * len(entries)
    table = bytearray()
    offset = header_end
    for raw_name, dt, shape, payload in entries:
        n = 1
        for d in shape:
            if d > MAX_DIM:
                raise BlobFormatError(
                    f"section {raw_name.decode()!r}: expected dims <= {MAX_DIM}, got {shape}"
                )
            n *= d
        if n > MAX_ELEMENTS:
            raise BlobFormatError(
                f"section {raw_name.decode()!r}: expected <= {MAX_ELEMENTS} elements, got {n}"
            )
        dims = list(shape) + [0] * (MAX_RANK - len(shape))
        table += _ENTRY.pack(
            DTYPES[dt], len(shape), len(raw_name), 0, offset, len(payload), *dims, raw_name
        )
        offset = _align(offset + len(payload))
    total = offset
    if total > MAX_BLOB_BYTES:
        raise BlobFormatError(f"blob: expected at most {MAX_BLOB_BYTES} bytes, got {total}")
    out = bytearray(total)
    _HEADER.pack_into(out, 0, MAGIC, VERSION, 0, len(entries), 0, total, 0)
    out[HEADER_BYTES:header_end] = table
    offset = header_end
    for _, _, _, payload in entries:
        out[offset : offset + len(payload)] = payload
        offset = _align(offset + len(payload))
    return bytes(out)


def pack_bytes(sections: Mapping[str, Dense | Ragged]) -> bytes:
    """``pack(sections)`` -- the same bytes -- for sections whose payloads are already encoded:
    :class:`Dense` with a little-endian ``bytes`` payload of a fixed-width dtype, or
    :class:`Ragged` of such values with ``array('q')`` row splits.

    Checks what is cheap to check (names, dtypes, shapes, payload lengths, that row splits start
    at 0 and end at the number of values) and raises :class:`BlobFormatError` as :func:`pack`
    does; the values themselves (bools of 0/1, row splits non-decreasing) are the caller's
    guarantee, for writers that make many small blobs of values they built themselves."""
    entries: list[tuple[bytes, str, list[int], bytes]] = []

    def add(name: str, value: Dense) -> None:
        dt = _check_dtype_name(name, value.dtype)
        shape = list(value.shape)
        n = _element_count(name, shape)
        payload = value.flat
        if dt == "string" or not isinstance(payload, bytes) or len(payload) != n * ITEM_BYTES[dt]:
            raise BlobFormatError(
                f"section {name!r}: expected {n * ITEM_BYTES.get(dt, 0)} payload bytes for {dt} "
                f"shape {shape}"
            )
        if len(shape) > MAX_RANK:
            raise BlobFormatError(
                f"section {name!r}: expected rank <= {MAX_RANK}, got {len(shape)}"
            )
        entries.append((_check_name(name), dt, shape, payload))

    for name, value in sections.items():
        if isinstance(value, Ragged):
            add(name, value.values)
            splits = value.row_splits
            if (
                not isinstance(splits, array.array)
                or splits.typecode not in "ql"
                or splits.itemsize != 8
            ):
                raise BlobFormatError(f"ragged {name!r}: expected int64 array row splits")
            if (
                not value.values.shape
                or not splits
                or splits[0] != 0
                or (splits[-1] != value.values.shape[0])
            ):
                raise BlobFormatError(
                    f"ragged {name!r}: expected row_splits starting at 0 and ending at the number "
                    "of values"
                )
            splits_name = name + ROW_SPLITS_SUFFIX
            add(
                splits_name,
                Dense(_encode_flat(splits_name, "int64", splits), [len(splits)], "int64"),
            )
        else:
            add(name, value)
    if len(entries) > MAX_SECTIONS:
        raise BlobFormatError(f"sections: expected at most {MAX_SECTIONS}, got {len(entries)}")
    if len({raw for raw, *_ in entries}) != len(entries):
        raise BlobFormatError(
            "sections: expected unique names (a Ragged NAME also writes NAME.row_splits)"
        )
    return _write(entries)


def _check_row_splits_python(name: str, splits: Any, nvalues: int) -> None:
    seq = splits.tolist() if hasattr(splits, "tolist") else list(splits)
    if (
        not seq
        or seq[0] != 0
        or seq[-1] != nvalues
        or any(b < a for a, b in itertools.pairwise(seq))
    ):
        raise BlobFormatError(
            f"ragged {name!r}: expected row_splits starting at 0, non-decreasing, ending at "
            f"{nvalues} (the number of values), got {seq[:8]}{'...' if len(seq) > 8 else ''}"
        )


# --------------------------------------------------------------------------------------------
# Reading
# --------------------------------------------------------------------------------------------


def _escape(raw: bytes) -> str:
    return "".join(
        chr(b) if 0x20 <= b <= 0x7E and b not in (0x5C, 0x27) else f"\\x{b:02x}" for b in raw
    )


class SectionInfo(NamedTuple):
    """A validated section table entry (offsets absolute in the blob)."""

    index: int
    name: str
    dtype: str
    shape: tuple[int, ...]
    payload_offset: int
    payload_length: int
    entry_offset: int


def _err(field: str, expected: Any, got: Any, offset: int) -> BlobFormatError:
    return BlobFormatError(f"{field}: expected {expected}, got {got} at offset {offset}")


def read_table(data: bytes | bytearray | memoryview) -> list[SectionInfo]:
    """Validates a whole blob (rules 1-27 of the spec) and returns its section table.

    Needs numpy only for bool/string payload checks of large sections; allocates nothing sized
    by the blob's claims before they are checked against the blob's real length.
    """
    mv = memoryview(data).cast("B")
    size = len(mv)
    if size < HEADER_BYTES:
        raise _err("header", f"at least {HEADER_BYTES} bytes", size, 0)
    magic, version, flags, count, reserved0, total, reserved1 = _HEADER.unpack_from(mv, 0)
    if magic != MAGIC:
        raise _err("magic", "'MGTF'", f"'{_escape(magic)}'", 0)
    if version != VERSION:
        raise _err("version", VERSION, version, 4)
    if flags != 0:
        raise _err("flags", 0, flags, 6)
    if count > MAX_SECTIONS:
        raise _err("section_count", f"<= {MAX_SECTIONS}", count, 8)
    if reserved0 != 0:
        raise _err("reserved0", 0, reserved0, 12)
    if total != size:
        raise _err("total_length", f"{size} (the blob's size)", total, 16)
    if total > MAX_BLOB_BYTES:
        raise _err("total_length", f"<= {MAX_BLOB_BYTES}", total, 16)
    if reserved1 != 0:
        raise _err("reserved1", 0, reserved1, 24)
    table_end = HEADER_BYTES + SECTION_ENTRY_BYTES * count
    if table_end > size:
        raise _err("section table", f"at least {table_end} bytes for {count} sections", size, 32)

    sections: list[SectionInfo] = []
    names: set[str] = set()
    expected_offset = table_end
    for i in range(count):
        e = HEADER_BYTES + SECTION_ENTRY_BYTES * i
        code, rank, name_len, reserved, p_off, p_len, *rest = _ENTRY.unpack_from(mv, e)
        dims_all, raw_name = rest[:MAX_RANK], rest[MAX_RANK]
        where = f"section {i}"
        if code not in DTYPE_NAMES:
            raise _err(f"{where} dtype", "1..6", code, e)
        if rank > MAX_RANK:
            raise _err(f"{where} rank", f"<= {MAX_RANK}", rank, e + 1)
        if not 1 <= name_len <= MAX_NAME_BYTES:
            raise _err(f"{where} name_length", f"1..{MAX_NAME_BYTES}", name_len, e + 2)
        if reserved != 0:
            raise _err(f"{where} reserved", 0, reserved, e + 4)
        for j in range(name_len):
            if raw_name[j] not in _NAME_CHARS:
                raise _err(
                    f"{where} name", "[A-Za-z0-9_.:/-]", f"byte 0x{raw_name[j]:02x}", e + 88 + j
                )
        for j in range(name_len, MAX_NAME_BYTES):
            if raw_name[j] != 0:
                raise _err(f"{where} name padding", 0, f"byte 0x{raw_name[j]:02x}", e + 88 + j)
        name = raw_name[:name_len].decode("ascii")
        if name in names:
            raise _err(f"{where} ('{name}') name", "a unique name", "a duplicate", e + 88)
        names.add(name)
        where = f"{where} ('{name}')"
        for k in range(rank):
            if not 0 <= dims_all[k] <= MAX_DIM:
                raise _err(f"{where} dims[{k}]", f"0..{MAX_DIM}", dims_all[k], e + 24 + 8 * k)
        for k in range(rank, MAX_RANK):
            if dims_all[k] != 0:
                raise _err(f"{where} dims[{k}]", "0 (unused)", dims_all[k], e + 24 + 8 * k)
        if p_off != expected_offset:
            raise _err(f"{where} payload_offset", expected_offset, p_off, e + 8)
        n = 1
        for k in range(rank):
            n *= dims_all[k]
        if n > MAX_ELEMENTS:
            raise _err(f"{where} dims", f"<= {MAX_ELEMENTS} elements", "more", e + 24)
        dtype = DTYPE_NAMES[code]
        if dtype == "string":
            if p_len < 8 * (n + 1):
                raise _err(f"{where} payload_length", f">= {8 * (n + 1)}", p_len, e + 16)
        elif p_len != n * ITEM_BYTES[dtype]:
            raise _err(f"{where} payload_length", n * ITEM_BYTES[dtype], p_len, e + 16)
        end = p_off + p_len
        if end > size:
            raise _err(f"{where} payload", f"to end by {size}", f"end {end}", e + 16)
        pad_end = min(_align(end), size)
        for j in range(end, pad_end):
            if mv[j] != 0:
                raise _err("padding", 0, f"byte 0x{mv[j]:02x}", j)
        info = SectionInfo(i, name, dtype, tuple(dims_all[:rank]), p_off, p_len, e)
        if dtype == "bool":
            _check_bool(mv, info, where)
        elif dtype == "string":
            _check_string_offsets(mv, info, n, where)
        sections.append(info)
        expected_offset = _align(end)
    if expected_offset != total:
        raise _err("total_length", expected_offset, total, 16)
    return sections


def payload_spans(data: bytes | bytearray | memoryview) -> list[tuple[int, int]]:
    """``(payload offset, payload length)`` of each section of a blob :func:`pack` wrote, in
    table order, read from its section table. Checks what it reads on: the header (magic,
    version, section count, total length the data's size), the table within the data and
    each payload after it and within the data; a blob failing one of those is refused with
    :func:`read_table`'s :class:`BlobFormatError` naming the field. The rest (dtypes, names,
    shapes, payload bytes) is not checked: a blob from elsewhere is :func:`read_table`'s."""
    mv = memoryview(data).cast("B")
    size = len(mv)
    if size >= HEADER_BYTES:
        magic, version, _, count, _, total, _ = _HEADER.unpack_from(mv, 0)
        table_end = HEADER_BYTES + SECTION_ENTRY_BYTES * count
        header_ok = (magic, version) == (MAGIC, VERSION) and count <= MAX_SECTIONS
        if header_ok and total == size and table_end <= size:
            entry = HEADER_BYTES + 8
            spans = [_SPAN.unpack_from(mv, entry + SECTION_ENTRY_BYTES * i) for i in range(count)]
            if all(table_end <= at and at + n <= size for at, n in spans):
                return spans
    # (read_table raises for each case left: the message naming the field is its own)
    return [(info.payload_offset, info.payload_length) for info in read_table(mv)]


def _check_bool(mv: memoryview, info: SectionInfo, where: str) -> None:
    payload = mv[info.payload_offset : info.payload_offset + info.payload_length]
    if _np is not None:
        arr = _np.frombuffer(payload, dtype=_np.uint8)
        bad = _np.flatnonzero(arr > 1)
        if bad.size:
            j = int(bad[0])
            raise _err(f"{where} bool", "0 or 1", int(arr[j]), info.payload_offset + j)
        return
    for j, b in enumerate(payload):  # pragma: no cover - stdlib-only path
        if b > 1:
            raise _err(f"{where} bool", "0 or 1", b, info.payload_offset + j)


def _check_string_offsets(mv: memoryview, info: SectionInfo, n: int, where: str) -> None:
    data_len = info.payload_length - 8 * (n + 1)
    base = info.payload_offset
    if _np is not None:
        offs = _np.frombuffer(mv, dtype="<u8", count=n + 1, offset=base)
        if offs[0] != 0:
            raise _err(f"{where} offsets[0]", "0..0", int(offs[0]), base)
        if n:
            prev = offs[:-1]
            bad = _np.flatnonzero((offs[1:] < prev) | (offs[1:] > data_len))
            if bad.size:
                j = int(bad[0]) + 1
                raise _err(
                    f"{where} offsets[{j}]",
                    f"{int(offs[j - 1])}..{data_len}",
                    int(offs[j]),
                    base + 8 * j,
                )
        if offs[n] != data_len:
            raise _err(
                f"{where} offsets[{n}]", f"{data_len}..{data_len}", int(offs[n]), base + 8 * n
            )
        return
    prev = 0  # pragma: no cover - stdlib-only path
    for j in range(n + 1):  # pragma: no cover
        (v,) = struct.unpack_from("<Q", mv, base + 8 * j)
        lo, hi = (0, 0) if j == 0 else (prev, data_len)
        if j == n:
            lo = max(lo, data_len) if j else 0
            hi = data_len
        if not lo <= v <= hi:
            raise _err(f"{where} offsets[{j}]", f"{lo}..{hi}", v, base + 8 * j)
        prev = v


def _decode_section(mv: memoryview, info: SectionInfo, copy: bool) -> Any:
    n = 1
    for d in info.shape:
        n *= d
    if info.dtype == "string":
        offs = _np.frombuffer(mv, dtype="<u8", count=n + 1, offset=info.payload_offset)
        start = info.payload_offset + 8 * (n + 1)
        raw = bytes(mv[start : info.payload_offset + info.payload_length])
        out = _np.empty(n, dtype=object)
        bounds = offs.tolist()
        for j in range(n):
            out[j] = raw[bounds[j] : bounds[j + 1]]
        return out.reshape(info.shape)
    arr = _np.frombuffer(mv, dtype=_NUMPY_DTYPES[info.dtype], count=n, offset=info.payload_offset)
    arr = arr.reshape(info.shape)
    if copy:
        arr = arr.astype(arr.dtype.newbyteorder("="), copy=True)
    return arr


def unpack(data: bytes | bytearray | memoryview, *, copy: bool = True) -> dict[str, Any]:
    """Validates a blob and returns its sections as numpy arrays, keyed by name.

    Guarantees: either the whole blob is valid and every section is returned, or
    :class:`BlobFormatError` is raised naming the field and offset at fault (nothing partial).
    Fixed-size sections come back with their dtype and shape (``copy=False`` returns read-only
    views into ``data`` instead of copies); string sections as object arrays of ``bytes``; each
    pair ``NAME`` + ``NAME.row_splits`` as one :class:`Ragged` under ``NAME`` (validated, so
    ``values[row_splits[r]:row_splits[r+1]]`` is row ``r``).
    """
    if _np is None:  # pragma: no cover
        raise ImportError("memgraph_tf.blob.unpack needs numpy (pip install numpy)")
    mv = memoryview(data).cast("B")
    table = read_table(mv)
    by_name = {s.name: s for s in table}
    out: dict[str, Any] = {}
    for info in table:
        if (
            info.name.endswith(ROW_SPLITS_SUFFIX)
            and info.name[: -len(ROW_SPLITS_SUFFIX)] in by_name
        ):
            continue
        value = _decode_section(mv, info, copy)
        splits_info = by_name.get(info.name + ROW_SPLITS_SUFFIX)
        if splits_info is not None:
            splits = _check_ragged(mv, info, splits_info)
            value = Ragged(value, splits.copy() if copy else splits)
        out[info.name] = value
    return out


def _check_ragged(mv: memoryview, values: SectionInfo, splits: SectionInfo) -> Any:
    """Validates a ragged pair per spec section 4 and returns the row splits (int64 view)."""
    sname = splits.name
    if splits.dtype != "int64" or len(splits.shape) != 1 or splits.shape[0] < 1:
        raise BlobFormatError(
            f"section '{sname}': expected int64 rank 1 with >= 1 element, got {splits.dtype} "
            f"rank {len(splits.shape)} at offset {splits.entry_offset}"
        )
    if not values.shape:
        raise BlobFormatError(
            f"section '{values.name}': expected rank >= 1 for ragged values, got 0 "
            f"at offset {values.entry_offset + 1}"
        )
    nvalues = values.shape[0]
    arr = _np.frombuffer(mv, dtype="<i8", count=splits.shape[0], offset=splits.payload_offset)
    base = splits.payload_offset
    if arr[0] != 0:
        raise BlobFormatError(
            f"section '{sname}' [0]: expected 0..0, got {int(arr[0])} at offset {base}"
        )
    if arr.size > 1:
        bad = _np.flatnonzero((arr[1:] < arr[:-1]) | (arr[1:] > nvalues))
        if bad.size:
            j = int(bad[0]) + 1
            raise BlobFormatError(
                f"section '{sname}' [{j}]: expected {int(arr[j - 1])}..{nvalues}, got "
                f"{int(arr[j])} at offset {base + 8 * j}"
            )
    last = arr.size - 1
    if arr[last] != nvalues:
        raise BlobFormatError(
            f"section '{sname}' [{last}]: expected {nvalues}..{nvalues}, got {int(arr[last])} "
            f"at offset {base + 8 * last}"
        )
    return arr


# --------------------------------------------------------------------------------------------
# Transport: base64url (Memgraph has no bytes type)
# --------------------------------------------------------------------------------------------


_TO_URLSAFE = bytes.maketrans(b"+/", b"-_")
_FROM_URLSAFE = bytes.maketrans(b"-_", b"+/")


def b64encode(data: bytes) -> str:
    """base64url with padding (RFC 4648 section 5): the form blobs leave Memgraph in
    (``base64.urlsafe_b64encode``'s bytes, without its two Python calls a blob)."""
    return binascii.b2a_base64(data, newline=False).translate(_TO_URLSAFE).decode("ascii")


def b64decode(text: str | bytes) -> bytes:
    """Decodes base64url text (with padding) to the raw blob bytes; raises BlobFormatError if
    invalid (what ``base64.b64decode(altchars=b"-_", validate=True)`` accepts and returns)."""
    try:
        raw = text.encode("ascii") if isinstance(text, str) else bytes(text)
        return binascii.a2b_base64(raw.translate(_FROM_URLSAFE), strict_mode=True)
    except (ValueError, UnicodeEncodeError) as exc:
        sample = text[:16] if isinstance(text, (str, bytes)) else type(text).__name__
        raise BlobFormatError(
            f"base64: expected base64url text with padding, got {sample!r}... ({exc})"
        ) from exc


def pack_b64(sections: Mapping[str, Any], dtypes: Mapping[str, str] | None = None) -> str:
    """:func:`pack`, then :func:`b64encode`."""
    return b64encode(pack(sections, dtypes))


def unpack_b64(text: str | bytes, *, copy: bool = True) -> dict[str, Any]:
    """:func:`b64decode`, then :func:`unpack`."""
    return unpack(b64decode(text), copy=copy)
