"""Writes the golden vectors of blob format v1 (run: python tests/golden/generate.py).

valid/NAME.bin   + NAME.json  {"description", "sections": [{"name", "dtype", "shape", "values"}]}
invalid/NAME.bin + NAME.json  {"description", "error", optional "ragged": [names]}
typed/NAME.bin   + NAME.json  {"description", "call", "decodes_to", "sections"}; typed/graph.json
raw/NAME.bin     + NAME.json  {"description", "call", "sections"}; raw/graph.json
edge/NAME.bin    + NAME.json  {"description", "call", "sections"}; edge/graph.json

The valid bytes are written by hand here with ``struct`` from the spec's layout, not by
``memgraph_tf.blob.pack``, so that the test "the packer's bytes equal the golden vectors" checks the
packer against the spec. Invalid vectors are valid ones with one field broken; their "error" is the
exact message docs/blob-format.md prescribes, computed from the layout, never by running a reader.
Strings in "values" are UTF-8 text; floats are exact (binary fractions) so JSON holds them exactly.
"""

from __future__ import annotations

import json
import math
import pathlib
import struct

HERE = pathlib.Path(__file__).resolve().parent
CODES = {"bool": 1, "int32": 2, "int64": 3, "float32": 4, "float64": 5, "string": 6}
FMT = {"bool": "?", "int32": "i", "int64": "q", "float32": "f", "float64": "d"}


def align8(n: int) -> int:
    return (n + 7) // 8 * 8


def payload(dtype: str, values: list) -> bytes:
    if dtype == "string":
        raw = [v.encode("utf-8") for v in values]
        offs = [0]
        for r in raw:
            offs.append(offs[-1] + len(r))
        return struct.pack(f"<{len(offs)}Q", *offs) + b"".join(raw)
    return struct.pack(f"<{len(values)}{FMT[dtype]}", *values)


def build(sections: list[dict]) -> bytes:
    """Lays out sections per docs/blob-format.md section 1 (independently of memgraph_tf.blob)."""
    table = b""
    payloads = b""
    start = 32 + 128 * len(sections)
    for s in sections:
        p = payload(s["dtype"], s["values"])
        dims = list(s["shape"]) + [0] * (8 - len(s["shape"]))
        name = s["name"].encode()
        table += struct.pack(
            "<BBHIQQ8q40s",
            CODES[s["dtype"]],
            len(s["shape"]),
            len(name),
            0,
            start + len(payloads),
            len(p),
            *dims,
            name,
        )
        payloads += p + b"\0" * (align8(len(p)) - len(p))
    total = start + len(payloads)
    return struct.pack("<4sHHIIQQ", b"MGTF", 1, 0, len(sections), 0, total, 0) + table + payloads


def sec(name: str, dtype: str, shape: list[int], values: list) -> dict:
    return {"name": name, "dtype": dtype, "shape": shape, "values": values}


VALID: dict[str, tuple[str, list[dict]]] = {
    "empty": ("no sections at all", []),
    "small_mixed": (
        "the spec's hex-dump example: int64 ids, float32 matrix, strings",
        [
            sec("ids", "int64", [2], [7, 9]),
            sec("x", "float32", [2, 2], [1.5, -2.0, 0.25, 3.0]),
            sec("tag", "string", [2], ["a", "bc"]),
        ],
    ),
    "all_dtypes": (
        "one section of every dtype, ranks 0..2, negative numbers, empty and non-ASCII strings",
        [
            sec("b", "bool", [3], [True, False, True]),
            sec("i32", "int32", [2, 3], [0, -1, 2147483647, -2147483648, 5, 6]),
            sec("i64", "int64", [], [-9007199254740993]),
            sec("f32", "float32", [], [0.5]),
            sec("f64", "float64", [4], [-0.0, 1e-300, 3.25, -1024.0]),
            sec("s", "string", [2, 2], ["", "h\u00e9llo", "x", "graph \u2192 tensor"]),
        ],
    ),
    "empty_dims": (
        "sections with a zero dimension (no payload bytes)",
        [
            sec("e", "float32", [0, 128], []),
            sec("s", "string", [0], []),
            sec("i", "int64", [3, 0], []),
        ],
    ),
    "ragged": (
        "a ragged int64 section (values + row_splits) and a ragged float32 [5, 2] section",
        [
            sec("nbrs", "int64", [5], [10, 11, 12, 13, 14]),
            sec("nbrs.row_splits", "int64", [4], [0, 2, 2, 5]),
            sec("vec", "float32", [3, 2], [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]),
            sec("vec.row_splits", "int64", [3], [0, 3, 3]),
        ],
    ),
    "rank8": (
        "a section of the maximum rank 8",
        [sec("x", "int32", [1, 2, 1, 1, 2, 1, 1, 1], [1, 2, 3, 4])],
    ),
    "sample_like": (
        "the layout tf_features.sample produces for 2 seeds, fanout 2, 3 features",
        [
            sec("ids_0", "int64", [2], [0, 1]),
            sec("features_0", "float32", [2, 3], [0.0, 0.5, 1.0, 1.5, 2.0, 2.5]),
            sec("ids_1", "int64", [2, 2], [1, 2, 0, 0]),
            sec(
                "features_1", "float32", [2, 2, 3], [1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 0, 0, 0, 0, 0, 0]
            ),
            sec("mask_1", "bool", [2, 2], [True, True, True, False]),
        ],
    ),
    "long_name": (
        "a 40-byte name using every allowed punctuation character",
        [sec("Aa0_.-:/" + "z" * 32, "float64", [1], [2.0])],
    ),
}


# Typed sample blobs (docs/blob-format.md sections 9 and 10) of a graph small enough to sample by
# hand: every fanout is at least the degree it meets, so no draw is random and the blobs follow
# from the spec's rules alone (all neighbours, sorted by key, then padding). Written to
# tests/golden/typed/ (graph.json + NAME.bin/.json: the sections, the call that samples them and,
# for compact/sparse, the dense vector they decode to); tests/ops/test_typed_golden.py checks them.
TYPED_GRAPH = {
    "description": "(:User)-[:BOUGHT]->(:Product)-[:IN]->(:Category); keys are the id property",
    "nodes": [
        {"label": "User", "id": 10, "features": [0.5, -1.0], "label_class": 1},
        {"label": "User", "id": 11, "features": [0.0, 0.25], "label_class": 0},
        {"label": "Product", "id": 20, "features": [1.5, 0.0, -2.0]},
        {"label": "Product", "id": 21, "features": [0.0, 0.0, 0.0]},
        {"label": "Category", "id": 30},
    ],
    "relationships": [
        [10, "BOUGHT", 20],
        [10, "BOUGHT", 21],
        [11, "BOUGHT", 21],
        [20, "IN", 30],
        [21, "IN", 30],
    ],
}
_TYPED_CALL = {
    "procedure": "sample_typed",
    "seeds": [10, 11],
    "num_neighbors": {
        "(:User)-[:BOUGHT]->(:Product)": [2, 0],
        "(:Product)-[:IN]->(:Category)": [0, 1],
    },
    "properties": {"User": ["features"], "Product": ["features"]},
    "options": {"label": "User", "id_property": "id", "label_property": "label", "seed": 0},
}
# the pairs (10, 21), (11, 21) of both pair vectors (typed/pair_dense, raw/pair_raw_dense)
_PAIR_CALL = {
    "procedure": "sample_pairs",
    "sources": [10, 11],
    "targets": [21, 21],
    "num_neighbors": {
        "source": {"(:User)-[:BOUGHT]->(:Product)": [2]},
        "target": {"(:Product)<-[:BOUGHT]-(:User)": [2]},
    },
    "properties": {"User": ["features"], "Product": ["features"]},
    "options": {
        "source_label": "User",
        "target_label": "Product",
        "id_property": "id",
        "seed": 0,
    },
}
# the slot tables: h0 User 1 slot, h1 Product 2 (user 10: 20, 21; user 11: 21, padded),
# h2 Category 2 (under 20 and 21: 30, 30; under 21: 30, padded)
_INDEX = [
    sec("index_h0_User", "int32", [2, 1], [0, 1]),
    sec("index_h1_Product", "int32", [2, 2], [0, 1, 1, -1]),
    sec("index_h2_Category", "int32", [2, 2], [0, 0, 0, -1]),
]


def _one_row(name: str, dtype: str, shape: list[int], values: list) -> list[dict]:
    return [sec(name, dtype, shape, values), sec(name + ".row_splits", "int64", [2], [0, shape[0]])]


TYPED: dict[str, tuple[str, dict, str | None, list[dict]]] = {
    "typed_dense": (
        "tf_features.sample_typed, dense layout, 2 seeds (section 9)",
        {**_TYPED_CALL, "options": {**_TYPED_CALL["options"], "layout": "dense"}},
        None,
        [
            sec("ids_h0_User", "int64", [2, 1], [10, 11]),
            sec("features_h0_User", "float32", [2, 1, 2], [0.5, -1.0, 0.0, 0.25]),
            sec("ids_h1_Product", "int64", [2, 2], [20, 21, 21, -1]),
            sec("features_h1_Product", "float32", [2, 2, 3], [1.5, 0.0, -2.0] + [0.0] * 9),
            sec("mask_h1_Product", "bool", [2, 2], [True, True, True, False]),
            sec("ids_h2_Category", "int64", [2, 2], [30, 30, 30, -1]),
            sec("mask_h2_Category", "bool", [2, 2], [True, True, True, False]),
            sec("labels", "int64", [2], [1, 0]),
        ],
    ),
    "typed_compact": (
        "tf_features.sample_typed, compact layout: one table per label (Category: ids alone)",
        {**_TYPED_CALL, "options": {**_TYPED_CALL["options"], "layout": "compact"}},
        "typed_dense",
        _INDEX
        + _one_row("table_ids_User", "int64", [2], [10, 11])
        + _one_row("table_User", "float32", [2, 2], [0.5, -1.0, 0.0, 0.25])
        + _one_row("table_ids_Product", "int64", [2], [20, 21])
        + _one_row("table_Product", "float32", [2, 3], [1.5, 0.0, -2.0, 0.0, 0.0, 0.0])
        + _one_row("table_ids_Category", "int64", [1], [30])
        + [sec("labels", "int64", [2], [1, 0])],
    ),
    "typed_sparse": (
        "tf_features.sample_typed, sparse layout: CSR tables (product 21's row has no entry)",
        {**_TYPED_CALL, "options": {**_TYPED_CALL["options"], "layout": "sparse"}},
        "typed_dense",
        _INDEX
        + _one_row("table_ids_User", "int64", [2], [10, 11])
        + [
            sec("table_columns_User", "int32", [3], [0, 1, 1]),
            sec("table_columns_User.row_splits", "int64", [3], [0, 2, 3]),
        ]
        + _one_row("table_values_User", "float32", [3], [0.5, -1.0, 0.25])
        + _one_row("table_ids_Product", "int64", [2], [20, 21])
        + [
            sec("table_columns_Product", "int32", [2], [0, 2]),
            sec("table_columns_Product.row_splits", "int64", [3], [0, 2, 2]),
        ]
        + _one_row("table_values_Product", "float32", [2], [1.5, -2.0])
        + _one_row("table_ids_Category", "int64", [1], [30])
        + [sec("labels", "int64", [2], [1, 0])],
    ),
    "pair_dense": (
        "tf_features.sample_pairs, dense: pairs (10, 21), (11, 21); each pair's own BOUGHT "
        "left out (section 10)",
        _PAIR_CALL,
        None,
        [
            sec("src.ids_h0_User", "int64", [2, 1], [10, 11]),
            sec("src.features_h0_User", "float32", [2, 1, 2], [0.5, -1.0, 0.0, 0.25]),
            sec("src.ids_h1_Product", "int64", [2, 2], [20, -1, -1, -1]),
            sec("src.features_h1_Product", "float32", [2, 2, 3], [1.5, 0.0, -2.0] + [0.0] * 9),
            sec("src.mask_h1_Product", "bool", [2, 2], [True, False, False, False]),
            sec("dst.ids_h0_Product", "int64", [2, 1], [21, 21]),
            sec("dst.features_h0_Product", "float32", [2, 1, 3], [0.0] * 6),
            sec("dst.ids_h1_User", "int64", [2, 2], [11, -1, 10, -1]),
            sec(
                "dst.features_h1_User",
                "float32",
                [2, 2, 2],
                [0.0, 0.25, 0.0, 0.0, 0.5, -1.0, 0.0, 0.0],
            ),
            sec("dst.mask_h1_User", "bool", [2, 2], [True, False, True, False]),
            sec("pair_labels", "int64", [2], [1, 1]),
        ],
    ),
}


def u16(b: bytes, off: int, v: int) -> bytes:
    return b[:off] + struct.pack("<H", v) + b[off + 2 :]


def u32(b: bytes, off: int, v: int) -> bytes:
    return b[:off] + struct.pack("<I", v) + b[off + 4 :]


def u64(b: bytes, off: int, v: int) -> bytes:
    return b[:off] + struct.pack("<Q", v) + b[off + 8 :]


def i64(b: bytes, off: int, v: int) -> bytes:
    return b[:off] + struct.pack("<q", v) + b[off + 8 :]


def byte(b: bytes, off: int, v: int) -> bytes:
    return b[:off] + bytes([v]) + b[off + 1 :]


# Raw property columns (docs/blob-format.md section 11: options.feature_spec) of a graph small
# enough to sample by hand: every fanout covers the degree it meets. Typed values in graph.json are
# tagged maps: {"Date": "YYYY-MM-DD"}, {"LocalDateTime": "YYYY-MM-DDTHH:MM:SS"}. Written to
# tests/golden/raw/; tests/ops/test_raw_golden.py checks them.
RAW_GRAPH = {
    "description": "(:User)-[:BOUGHT]->(:Product); keys are the id property; absent properties "
    "are left out of a node",
    "nodes": [
        {
            "label": "User",
            "properties": {
                "id": 10,
                "f": [0.5, -1.0],
                "age": 31,
                "country": "de",
                "born": {"Date": "1990-01-02"},
                "tags": ["a", "b"],
                "vip": True,
            },
        },
        {
            "label": "User",
            "properties": {"id": 11, "f": [0.0, 0.25], "country": 7, "tags": [], "vip": False},
        },
        {
            "label": "Product",
            "properties": {
                "id": 20,
                "price": 2.5,
                "color": "red",
                "added": {"LocalDateTime": "1970-01-02T00:00:01"},
            },
        },
        {"label": "Product", "properties": {"id": 21, "price": 4.0}},
    ],
    "relationships": [[10, "BOUGHT", 20], [10, "BOUGHT", 21], [11, "BOUGHT", 21]],
}
_USER_SPEC = {
    "label": "User",
    "properties": [
        {"name": "f", "kind": "required"},
        {"name": "age", "kind": "numeric", "mean": 30.0, "std": 5.0},
        {"name": "country", "kind": "categorical", "vocabulary": ["de", "fr"]},
        {"name": "born", "kind": "temporal", "type": "Date"},
        {"name": "tags", "kind": "multi_categorical", "vocabulary": ["a"]},
        {"name": "vip", "kind": "boolean"},
    ],
}
_PRODUCT_SPEC = {
    "label": "Product",
    "properties": [
        {"name": "price", "kind": "numeric"},
        {"name": "color", "kind": "categorical", "hash_buckets": 8},
        {"name": "added", "kind": "temporal", "type": "LocalDateTime"},
    ],
}
T, F = True, False
_RAW_SPECS = {"User": _USER_SPEC, "Product": _PRODUCT_SPEC}
# Each node's raw columns in the vectors, by label and key: (num, time, cat, bag, has), in the
# specs' group order; key -1 is a padded slot's (zeros, empty strings, False). User num: f (2
# columns), age, vip; time: born (days since 1970-01-01: 20 * 365 + 5 + 1). Product num: price;
# time: added (one day and one second after the epoch, in microseconds). Products have no bag.
_RAW_COLUMNS: dict[str, dict[int, tuple[list, list, list, list | None, list]]] = {
    "User": {
        10: ([0.5, -1.0, 31.0, 1.0], [7306], ["de"], ["a", "b"], [T] * 6),
        11: ([0.0, 0.25, 0.0, 0.0], [0], ["7"], [], [T, F, T, F, T, T]),
        -1: ([0.0] * 4, [0], [""], [], [F] * 6),
    },
    "Product": {
        20: ([2.5], [86_401_000_000], ["red"], None, [T, T, T]),
        21: ([4.0], [0], [""], None, [T, F, F]),
        -1: ([0.0], [0], [""], None, [F] * 3),
    },
}
_RAW_GROUPS = (("num", "float32"), ("time", "int64"), ("cat", "string"))


def _flat(rows: list[tuple], group: int) -> list:
    """Column ``group`` of :data:`_RAW_COLUMNS` rows, one after another."""
    return [v for row in rows for v in row[group]]


def _bag(name: str, rows: list[tuple]) -> list[dict]:
    """The bag section ``name`` of ``rows`` (none when their label has no bag) and its row
    splits, a row per node."""
    if rows[0][3] is None:
        return []
    splits = [0]
    for row in rows:
        splits.append(splits[-1] + len(row[3]))
    return [
        sec(name, "string", [splits[-1]], _flat(rows, 3)),
        sec(name + ".row_splits", "int64", [len(splits)], splits),
    ]


def _raw_slots(prefix: str, hop: int, label: str, ids: list[int], num: list | None = None):
    """The dense sections (ids, num, time, cat, bag, has, mask) of table ``(hop, label)`` of 2
    seeds whose slots hold the nodes ``ids`` (-1: padded), from :data:`_RAW_COLUMNS`; ``num``:
    the num section's values as the vector's JSON writes them, when not the table's floats."""
    shape = [2, len(ids) // 2]
    rows = [_RAW_COLUMNS[label][key] for key in ids]
    out = [sec(f"{prefix}ids_h{hop}_{label}", "int64", shape, ids)]
    for i, (group, dtype) in enumerate(_RAW_GROUPS):
        width = len(rows[0][i])
        out.append(sec(f"{prefix}{group}_h{hop}_{label}", dtype, shape + [width], _flat(rows, i)))
    if num is not None:
        out[1]["values"] = num
    out += _bag(f"{prefix}bag_h{hop}_{label}", rows)
    has = shape + [len(rows[0][4])]
    out.append(sec(f"{prefix}has_h{hop}_{label}", "bool", has, _flat(rows, 4)))
    if hop:
        out.append(sec(f"{prefix}mask_h{hop}_{label}", "bool", shape, [k != -1 for k in ids]))
    return out


def _raw_tables(label: str, ids: list[int]) -> list[dict]:
    """The compact layout's raw tables of ``label`` (section 11, rule 7): its table ids, then a
    table per group, a row per distinct node of ``ids`` (from :data:`_RAW_COLUMNS`), each with
    its row splits (a bag's: per node)."""
    rows = [_RAW_COLUMNS[label][key] for key in ids]
    out = _one_row(f"table_ids_{label}", "int64", [len(ids)], ids)
    for i, (group, dtype) in enumerate(_RAW_GROUPS):
        out += _one_row(
            f"table_{group}_{label}", dtype, [len(ids), len(rows[0][i])], _flat(rows, i)
        )
    out += _bag(f"table_bag_{label}", rows)
    return out + _one_row(f"table_has_{label}", "bool", [len(ids), len(rows[0][4])], _flat(rows, 4))


def _typed_raw_call(**layout: str) -> dict:
    """The call of the typed raw vectors: seeds 10 and 11, one BOUGHT hop of 2, the raw specs;
    ``layout``: ``options.layout`` when given (written before the specs)."""
    return {
        "procedure": "sample_typed",
        "seeds": [10, 11],
        "num_neighbors": {"(:User)-[:BOUGHT]->(:Product)": [2]},
        "properties": None,
        "options": {
            "label": "User",
            "id_property": "id",
            "seed": 0,
            **layout,
            "feature_spec": _RAW_SPECS,
        },
    }


RAW: dict[str, tuple[str, dict, list[dict]]] = {
    "typed_raw_dense": (
        "tf_features.sample_typed with options.feature_spec, dense layout, 2 seeds (section 11): "
        "user 11 lacks age and born, product 21 color and added, user 11's second slot padded",
        _typed_raw_call(),
        _raw_slots("", 0, "User", [10, 11]) + _raw_slots("", 1, "Product", [20, 21, 21, -1]),
    ),
    "typed_raw_compact": (
        "typed_raw_dense's call in the compact layout (section 11, rule 7): per label its table "
        "ids, then one raw table per group, a row per distinct node; user 11's second slot padded "
        "(index -1). The sparse layout writes the same bytes (no feature table to put in CSR)",
        _typed_raw_call(layout="compact"),
        [
            sec("index_h0_User", "int32", [2, 1], [0, 1]),
            sec("index_h1_Product", "int32", [2, 2], [0, 1, 1, -1]),
        ]
        + _raw_tables("User", [10, 11])
        + _raw_tables("Product", [20, 21]),
    ),
    "pair_raw_dense": (
        "tf_features.sample_pairs with options.feature_spec, dense: pairs (10, 21), (11, 21), "
        "each pair's own BOUGHT left out (sections 10 and 11)",
        {
            **_PAIR_CALL,
            "properties": None,
            "options": {**_PAIR_CALL["options"], "feature_spec": _RAW_SPECS},
        },
        # user 10 without 21 (the pair's own): 20 and a pad; user 11 bought 21 alone; product
        # 21's buyers without the row's own source: 11 for (10, 21), 10 for (11, 21)
        _raw_slots("src.", 0, "User", [10, 11], num=[0.5, -1.0, 31.0, 1.0, 0.0, 0.25, 0, 0])
        + _raw_slots("src.", 1, "Product", [20, -1, -1, -1])
        + _raw_slots("dst.", 0, "Product", [21, 21])
        + _raw_slots("dst.", 1, "User", [11, -1, 10, -1])
        + [sec("pair_labels", "int64", [2], [1, 1])],
    ),
}


def invalid() -> dict[str, tuple[str, bytes, str, dict]]:
    small = build(VALID["small_mixed"][1])  # 3 sections: table 32..416, payloads from 416
    e0, e1, e2 = 32, 160, 288
    # payloads from 416: ids: 16 bytes -> 416..432; x: 16 bytes -> 432..448; tag: 24+3 bytes ->
    # 448..475, pad to 480
    assert len(small) == 480
    mixed = build(VALID["all_dtypes"][1])
    rag = build(VALID["ragged"][1])
    out: dict[str, tuple[str, bytes, str, dict]] = {}

    def add(name: str, desc: str, data: bytes, error: str, **extra) -> None:
        out[name] = (desc, data, error, extra)

    def broken(name, desc, write, off, value, expects, got=None, data=small, **extra):
        """``data`` with ``value`` written at ``off`` by ``write``; its error: ``expects`` (what
        the field should hold), what it got (``value`` unless ``got``) and the offset ``off``."""
        error = f"{expects}, got {value if got is None else got} at offset {off}"
        add(name, desc, write(data, off, value), error, **extra)

    add(
        "short_header",
        "10 bytes only",
        small[:10],
        "header: expected at least 32 bytes, got 10 at offset 0",
    )
    add(
        "bad_magic",
        "magic is 'MGTX'",
        small[:3] + b"X" + small[4:],
        "magic: expected 'MGTF', got 'MGTX' at offset 0",
    )
    add(
        "bad_magic_binary",
        "magic has a NUL and a quote",
        b"M\0'\xff" + small[4:],
        "magic: expected 'MGTF', got 'M\\x00\\x27\\xff' at offset 0",
    )
    broken("bad_version", "version 2", u16, 4, 2, "version: expected 1")
    broken("bad_flags", "flags bit 0 set", u16, 6, 1, "flags: expected 0")
    broken(
        "too_many_sections", "section_count 1025", u32, 8, 1025, "section_count: expected <= 1024"
    )
    broken("reserved0", "reserved0 = 7", u32, 12, 7, "reserved0: expected 0")
    broken(
        "total_length_mismatch",
        "total_length 1000 for a 480-byte blob",
        u64,
        16,
        1000,
        "total_length: expected 480 (the blob's size)",
    )
    broken("reserved1", "reserved1 = 1", u64, 24, 1, "reserved1: expected 0")
    add(
        "table_truncated",
        "section_count 4 but only 480 bytes (table needs 544)",
        u32(small, 8, 4),
        "section table: expected at least 544 bytes for 4 sections, got 480 at offset 32",
    )
    broken("bad_dtype_zero", "dtype code 0", byte, e0, 0, "section 0 dtype: expected 1..6")
    broken(
        "bad_dtype_seven",
        "dtype code 7 in section 1",
        byte,
        e1,
        7,
        "section 1 dtype: expected 1..6",
    )
    broken("bad_rank", "rank 9", byte, e1 + 1, 9, "section 1 rank: expected <= 8")
    broken(
        "name_length_zero", "name_length 0", u16, e0 + 2, 0, "section 0 name_length: expected 1..40"
    )
    broken(
        "name_length_41", "name_length 41", u16, e2 + 2, 41, "section 2 name_length: expected 1..40"
    )
    broken("entry_reserved", "entry reserved = 3", u32, e1 + 4, 3, "section 1 reserved: expected 0")
    broken(
        "name_bad_char",
        "a space in a name",
        byte,
        e0 + 89,
        0x20,
        "section 0 name: expected [A-Za-z0-9_.:/-]",
        got="byte 0x20",
    )
    add(
        "name_nul",
        "a NUL inside the name (name_length 3 for 'x')",
        u16(small, e1 + 2, 3),
        "section 1 name: expected [A-Za-z0-9_.:/-], got byte 0x00 at offset 249",
    )
    broken(
        "name_padding",
        "non-zero byte after the name",
        byte,
        e1 + 88 + 39,
        0x41,
        "section 1 name padding: expected 0",
        got="byte 0x41",
    )
    dup = small[: e1 + 88] + b"ids".ljust(40, b"\0") + small[e1 + 128 :]
    dup = u16(dup, e1 + 2, 3)
    add(
        "duplicate_name",
        "section 1 renamed to 'ids'",
        dup,
        "section 1 ('ids') name: expected a unique name, got a duplicate at offset 248",
    )
    broken(
        "negative_dim",
        "dims[1] = -3",
        i64,
        e1 + 24 + 8,
        -3,
        "section 1 ('x') dims[1]: expected 0..2147483647",
    )
    broken(
        "huge_dim",
        "dims[0] = 2^31",
        i64,
        e0 + 24,
        2**31,
        "section 0 ('ids') dims[0]: expected 0..2147483647",
    )
    broken(
        "unused_dim",
        "dims[5] = 1 with rank 2",
        i64,
        e1 + 24 + 40,
        1,
        "section 1 ('x') dims[5]: expected 0 (unused)",
    )
    broken(
        "payload_offset_wrong",
        "section 1 payload_offset 440",
        u64,
        e1 + 8,
        440,
        "section 1 ('x') payload_offset: expected 432",
    )
    big = i64(i64(small, e1 + 24, 65536), e1 + 32, 65536)
    add(
        "too_many_elements",
        "dims [65536, 65536]",
        big,
        "section 1 ('x') dims: expected <= 2147483647 elements, got more at offset 184",
    )
    broken(
        "payload_length_mismatch",
        "float32 [2,2] with payload_length 12",
        u64,
        e1 + 16,
        12,
        "section 1 ('x') payload_length: expected 16",
    )
    broken(
        "string_payload_short",
        "string [2] with payload_length 16 (offsets need 24)",
        u64,
        e2 + 16,
        16,
        "section 2 ('tag') payload_length: expected >= 24",
    )
    claim = i64(u64(small, e1 + 16, 1_000_000 * 128 * 4), e1 + 24, 1_000_000)
    claim = i64(claim, e1 + 32, 128)
    add(
        "dims_claim_more_than_held",
        "float32 [1000000, 128] (512 MB) in a 480-byte blob",
        claim,
        "section 1 ('x') payload: expected to end by 480, got end 512000432 at offset 176",
    )
    broken(
        "nonzero_padding",
        "padding byte after the strings is 0x01",
        byte,
        477,
        1,
        "padding: expected 0",
        got="byte 0x01",
    )
    # all_dtypes: bool section payload at 32 + 128*6 = 800
    broken(
        "bool_value_two",
        "a bool byte of 2",
        byte,
        801,
        2,
        "section 0 ('b') bool: expected 0 or 1",
        data=mixed,
    )
    broken(
        "string_offset0",
        "string offsets[0] = 1",
        u64,
        448,
        1,
        "section 2 ('tag') offsets[0]: expected 0..0",
    )
    broken(
        "string_offset_beyond_data",
        "string offsets[1] = 4, beyond the 3 data bytes",
        u64,
        456,
        4,
        "section 2 ('tag') offsets[1]: expected 0..3",
    )
    s_off = payload_offset(mixed, 5)  # all_dtypes 's': offsets [0, 0, 6, 7, 23]
    add(
        "string_offset_decreasing",
        "string offsets [0, 0, 8, 7, 23]",
        u64(mixed, s_off + 16, 8),
        f"section 5 ('s') offsets[3]: expected 8..23, got 7 at offset {s_off + 24}",
    )
    broken(
        "string_offset_last",
        "string last offset 2 (data has 3 bytes)",
        u64,
        464,
        2,
        "section 2 ('tag') offsets[2]: expected 3..3",
    )
    trail = u64(small + b"\0" * 8, 16, 488)
    add(
        "trailing_bytes",
        "8 extra zero bytes after the last payload, total_length 488",
        trail,
        "total_length: expected 480, got 488 at offset 16",
    )
    # ragged: table 32..544; nbrs values 544..584; nbrs.row_splits 584..616; vec 616..640;
    # vec.row_splits 640..664
    broken(
        "ragged_splits_first",
        "row_splits[0] = 1",
        u64,
        584,
        1,
        "section 'nbrs.row_splits' [0]: expected 0..0",
        data=rag,
        ragged=["nbrs"],
    )
    broken(
        "ragged_splits_decreasing",
        "row_splits [0, 2, 1, 5]",
        u64,
        600,
        1,
        "section 'nbrs.row_splits' [2]: expected 2..5",
        data=rag,
        ragged=["nbrs"],
    )
    broken(
        "ragged_splits_last",
        "row_splits [0, 3, 3] for 3 rows of vec... last is 2",
        u64,
        656,
        2,
        "section 'vec.row_splits' [2]: expected 3..3",
        data=rag,
        ragged=["vec"],
    )
    wrong = build(
        [
            sec("nbrs", "int64", [5], [10, 11, 12, 13, 14]),
            sec("nbrs.row_splits", "int32", [4], [0, 2, 2, 5]),
        ]
    )
    add(
        "ragged_splits_int32",
        "nbrs.row_splits stored as int32",
        wrong,
        "section 'nbrs.row_splits': expected int64 rank 1 with >= 1 element, got int32 rank 1 at "
        "offset 160",
        ragged=["nbrs"],
    )
    return out


def payload_offset(data: bytes, index: int) -> int:
    return struct.unpack_from("<Q", data, 32 + 128 * index + 8)[0]


def hexdump(data: bytes) -> str:
    lines = []
    for off in range(0, len(data), 16):
        chunk = data[off : off + 16]
        hexpart = " ".join(f"{b:02x}" for b in chunk)
        lines.append(f"{off:08x}  {hexpart}")
    return "\n".join(lines)


def payment_spec(label: str, time: str, mean: float, std: float, *more: dict) -> dict:
    """The edge feature spec of payments of type ``label`` with a column of every kind (section
    12): ``amount`` numeric standardised by ``mean`` and ``std``, ``channel`` categorical over
    ``web`` and ``atm``, ``flagged`` boolean and ``time`` a timestamp in seconds; then the
    columns ``more``."""
    return {
        "label": label,
        "properties": [
            {"name": "amount", "kind": "numeric", "mean": mean, "std": std},
            {"name": "channel", "kind": "categorical", "vocabulary": ["web", "atm"]},
            {"name": "flagged", "kind": "boolean"},
            {"name": time, "kind": "temporal", "type": "timestamp", "unit": "s"},
            *more,
        ],
    }


# Edge feature columns (docs/blob-format.md section 12: options.edge_feature_spec) of a graph small
# enough to sample by hand: every fanout covers the degree it meets. Relationships are
# [a, type, b, properties]; 1 and 2 are joined twice, and the slot 1 -> 2 carries the relationship
# whose columns are smaller (num [1, 1] before [2.5, 0]). Written to tests/golden/edge/;
# tests/ops/test_edge_golden.py checks them.
EDGE_GRAPH = {
    "description": "(:Account)-[:TRANSFER]->(:Account); keys are the id property; absent "
    "properties are left out of a relationship",
    "nodes": [{"label": "Account", "properties": {"id": i}} for i in (1, 2, 3)],
    "relationships": [
        [1, "TRANSFER", 2, {"amount": 2.5, "channel": "web", "at": 100}],
        [1, "TRANSFER", 2, {"amount": 1.0, "channel": "atm", "flagged": True, "at": 50}],
        [1, "TRANSFER", 3, {"amount": 4, "channel": 7, "at": 70}],
        [2, "TRANSFER", 3, {"channel": "web", "flagged": False}],
    ],
}
_TRANSFER_SPEC = payment_spec("TRANSFER", "at", 2.0, 1.0)
EDGE: dict[str, tuple[str, dict, list[dict]]] = {
    "typed_edge_dense": (
        "tf_features.sample_typed with options.edge_feature_spec, dense layout, 2 seeds, 2 hops "
        "(section 12): accounts 1 and 2 joined twice, 2 -> 3 without amount and at",
        {
            "procedure": "sample_typed",
            "seeds": [1, 2],
            "num_neighbors": {"(:Account)-[:TRANSFER]->(:Account)": [2, 1]},
            "properties": None,
            "options": {
                "label": "Account",
                "id_property": "id",
                "seed": 0,
                "edge_feature_spec": {"(:Account)-[:TRANSFER]->(:Account)": _TRANSFER_SPEC},
            },
        },
        [
            sec("ids_h0_Account", "int64", [2, 1], [1, 2]),
            sec("ids_h1_Account", "int64", [2, 2], [2, 3, 3, -1]),
            sec("mask_h1_Account", "bool", [2, 2], [T, T, T, F]),
            # hop 2, one child per hop-1 slot: 2 -> 3; 3, 3 and the pad have none
            sec("ids_h2_Account", "int64", [2, 2], [3, -1, -1, -1]),
            sec("mask_h2_Account", "bool", [2, 2], [T, F, F, F]),
            # num: amount, flagged; slots 1 -> 2 (the smaller of the two), 1 -> 3, 2 -> 3, pad
            sec("edge_num_h1_s0", "float32", [2, 2, 2], [1.0, 1.0, 4.0, 0.0, 0.0, 0.0, 0.0, 0.0]),
            sec("edge_time_h1_s0", "int64", [2, 2, 1], [50, 70, 0, 0]),
            sec("edge_cat_h1_s0", "string", [2, 2, 1], ["atm", "7", "web", ""]),
            sec(
                "edge_has_h1_s0", "bool", [2, 2, 4], [T] * 4 + [T, T, F, T] + [F, T, T, F] + [F] * 4
            ),
            sec("edge_num_h2_s0", "float32", [2, 2, 2], [0.0] * 8),
            sec("edge_time_h2_s0", "int64", [2, 2, 1], [0, 0, 0, 0]),
            sec("edge_cat_h2_s0", "string", [2, 2, 1], ["web", "", "", ""]),
            sec("edge_has_h2_s0", "bool", [2, 2, 4], [F, T, T, F] + [F] * 12),
        ],
    ),
}


def _emptied(folder: pathlib.Path) -> pathlib.Path:
    """``folder``, made if missing, with every file in it removed."""
    folder.mkdir(exist_ok=True)
    for old in folder.glob("*"):
        old.unlink()
    return folder


def _write_sampled(folder: pathlib.Path, graph: dict, vectors: dict[str, tuple]) -> None:
    """Writes ``graph`` to ``folder/graph.json`` and each sampled vector, ``(description, call,
    [decodes_to,] sections)``, to ``NAME.bin`` and ``NAME.json`` (those keys, in that order)."""
    (_emptied(folder) / "graph.json").write_text(json.dumps(graph, indent=1) + "\n")
    for name, (desc, call, *dense, sections) in vectors.items():
        (folder / f"{name}.bin").write_bytes(build(sections))
        decodes_to = {"decodes_to": dense[0]} if dense else {}
        doc = {"description": desc, "call": call, **decodes_to, "sections": sections}
        (folder / f"{name}.json").write_text(json.dumps(doc, indent=1) + "\n")


def main() -> None:
    for sub in ("valid", "invalid"):
        _emptied(HERE / sub)
    for name, (desc, sections) in VALID.items():
        data = build(sections)
        (HERE / "valid" / f"{name}.bin").write_bytes(data)
        doc = {"description": desc, "sections": sections}
        for s in sections:
            if s["dtype"].startswith("float"):
                assert all(math.isfinite(v) for v in s["values"])
        (HERE / "valid" / f"{name}.json").write_text(
            json.dumps(doc, indent=1, ensure_ascii=False) + "\n"
        )
    for name, (desc, data, error, extra) in invalid().items():
        (HERE / "invalid" / f"{name}.bin").write_bytes(data)
        doc = {"description": desc, "error": error, **extra}
        (HERE / "invalid" / f"{name}.json").write_text(json.dumps(doc, indent=1) + "\n")
    _write_sampled(HERE / "typed", TYPED_GRAPH, TYPED)
    _write_sampled(HERE / "raw", RAW_GRAPH, RAW)
    _write_sampled(HERE / "edge", EDGE_GRAPH, EDGE)


if __name__ == "__main__":
    main()
