"""tf_features.sample_typed with options.feature_spec through the unchanged query module (embedded
runtime, Memgraph's real mgp.py): the raw columns of docs/blob-format.md section 11 against the
graph's values, padding, absent values, unseen categories, the required-only spec as
``properties``, and every refusal naming the node, label, property, kind and value type (or the
option at fault)."""

from __future__ import annotations

import datetime

import numpy as np
import pytest

from memgraph_tf import blob
from memgraph_tf.client import EmbeddedSource
from memgraph_tf.embedded import EmbeddedGraph
from memgraph_tf.errors import GraphDataError
from memgraph_tf.feature_spec import (
    BooleanSpec,
    CategoricalSpec,
    LabelSpec,
    MultiCategoricalSpec,
    NumericSpec,
    RequiredSpec,
    TemporalSpec,
    category_text,
)

NN = {"(:Item)-[:LINK]->(:Item)": [2]}
ITEMS = [
    {
        "id": 1,
        "v": [1.0, 2.0],
        "x": 1.5,
        "pair": [3, 4],
        "on": True,
        "day": datetime.date(1970, 1, 11),
        "at": datetime.datetime(1970, 1, 1, 0, 0, 2, 5),
        "wait": datetime.timedelta(seconds=3, microseconds=7),
        "ts": 1_700_000_000,
        "c": "zebra",
        "n": -3,
        "bag": ["p", 2, False],
    },
    {"id": 2, "v": [0.0, 0.5], "c": True, "bag": []},
    {"id": 3, "v": [4.0, 4.0]},
]
LINKS = [(0, 1), (0, 2), (1, 2)]


def spec(*props) -> dict:
    return LabelSpec("Item", list(props)).to_dict()


FULL = [
    RequiredSpec("v"),
    NumericSpec("x"),
    NumericSpec("pair", length=2),
    BooleanSpec("on"),
    TemporalSpec("day", type="Date"),
    TemporalSpec("at", type="LocalDateTime"),
    TemporalSpec("wait", type="Duration"),
    TemporalSpec("ts", type="timestamp", unit="s"),
    CategoricalSpec("c", vocabulary=["zebra"]),
    CategoricalSpec("n", hash_buckets=4),
    MultiCategoricalSpec("bag", vocabulary=["p"]),
]


def source(items=ITEMS, links=LINKS) -> EmbeddedSource:
    g = EmbeddedGraph()
    for props in items:
        g.add_node(["Item"], props)
    for a, b in links:
        g.add_edge(a, b, "LINK")
    return EmbeddedSource(g)


def options(*props, **more) -> dict:
    return {
        "label": "Item",
        "id_property": "id",
        "seed": 1,
        "feature_spec": {"Item": spec(*props)},
        **more,
    }


def test_the_raw_columns_hold_the_graph_s_values():
    got = blob.unpack(source().sample_typed([1, 2, 3], NN, None, options(*FULL)))
    assert list(got) == [
        "ids_h0_Item",
        "num_h0_Item",
        "time_h0_Item",
        "cat_h0_Item",
        "bag_h0_Item",
        "has_h0_Item",
        "ids_h1_Item",
        "num_h1_Item",
        "time_h1_Item",
        "cat_h1_Item",
        "bag_h1_Item",
        "has_h1_Item",
        "mask_h1_Item",
    ]
    first = ITEMS[0]
    # num: v (2), x, pair (2), on -- spec order within the group
    np.testing.assert_array_equal(
        got["num_h0_Item"][:, 0],
        np.array([[1, 2, 1.5, 3, 4, 1], [0, 0.5, 0, 0, 0, 0], [4, 4, 0, 0, 0, 0]], np.float32),
    )
    epoch = datetime.datetime(1970, 1, 1)
    want_time = [
        (first["day"] - epoch.date()).days,
        (first["at"] - epoch) // datetime.timedelta(microseconds=1),
        first["wait"] // datetime.timedelta(microseconds=1),
        first["ts"],
    ]
    assert want_time == [10, 2_000_005, 3_000_007, 1_700_000_000]
    assert got["time_h0_Item"][:, 0].tolist() == [want_time, [0] * 4, [0] * 4]
    assert got["cat_h0_Item"][:, 0].tolist() == [[b"zebra", b"-3"], [b"true", b""], [b"", b""]]
    bag = got["bag_h0_Item"]
    assert bag.values.tolist() == [b"p", b"2", b"false"]
    assert bag.row_splits.tolist() == [0, 3, 3, 3]  # item 2's empty list and item 3's missing one
    has = got["has_h0_Item"][:, 0].tolist()
    assert has[0] == [True] * 11
    assert has[1] == [True] + [False] * 7 + [True, False, True]
    assert has[2] == [True] + [False] * 10
    # hop 1: item 1 links to 2 and 3, item 2 to 3, item 3 to none (padded: zeros, "", no bag)
    assert got["ids_h1_Item"].tolist() == [[2, 3], [3, -1], [-1, -1]]
    assert got["mask_h1_Item"].tolist() == [[True, True], [True, False], [False, False]]
    np.testing.assert_array_equal(got["num_h1_Item"][0, 0], got["num_h0_Item"][1, 0])
    assert got["cat_h1_Item"][2].tolist() == [[b"", b""], [b"", b""]]
    assert not got["has_h1_Item"][1, 1].any() and not got["has_h1_Item"][2].any()
    assert got["bag_h1_Item"].row_splits.tolist() == [0] * 7


def test_category_text_is_the_one_rule():
    assert [category_text(v) for v in ("é", True, False, 0, -3, 1)] == [
        "é",
        "true",
        "false",
        "0",
        "-3",
        "1",
    ]
    with pytest.raises(
        TypeError, match=r"category: expected a string, an integer or a boolean, got float 1\.5"
    ):
        category_text(1.5)


def test_a_required_only_spec_is_exactly_properties():
    src = source()
    opts = options(RequiredSpec("v"))
    plain = {k: v for k, v in opts.items() if k != "feature_spec"}
    assert src.sample_typed([1, 2], NN, None, opts) == src.sample_typed(
        [1, 2], NN, {"Item": ["v"]}, plain
    )


def test_an_unseen_category_travels_as_its_text():
    opts = options(CategoricalSpec("c", vocabulary=["lion"], oov_buckets=2))
    got = blob.unpack(source().sample_typed([1], NN, None, opts))
    assert got["cat_h0_Item"].tolist() == [[[b"zebra"]]]


def test_values_of_the_wrong_type_are_refused_naming_node_label_property_kind_and_type():
    items = [dict(ITEMS[0]), dict(ITEMS[1]), {"id": 3, "v": [1.0, 1.0], "x": "five"}]
    cases = [
        (
            NumericSpec("x"),
            3,
            r"property 'x' \(kind 'numeric'\): expected a number, got str 'five'",
        ),
        (NumericSpec("on"), 1, r"'on' \(kind 'numeric'\): expected a number, got bool True"),
        (
            NumericSpec("pair", length=3),
            1,
            r"'pair' \(kind 'numeric'\): expected a list of 3 numbers, got a list of 2$",
        ),
        (
            NumericSpec("bag", length=3),
            1,
            r"'bag'\[0\] \(kind 'numeric'\): expected a number, got str 'p'",
        ),
        (BooleanSpec("x"), 1, r"'x' \(kind 'boolean'\): expected true or false, got float 1\.5"),
        (
            TemporalSpec("at", type="Date"),
            1,
            r"'at' \(kind 'temporal'\): expected a Date, got datetime ",
        ),
        (
            TemporalSpec("day", type="timestamp", unit="ms"),
            1,
            r"'day' \(kind 'temporal'\): expected an integer timestamp \(unit 'ms'\), got date ",
        ),
        (TemporalSpec("ts", type="Duration"), 1, r"expected a Duration, got int 1700000000"),
        (
            CategoricalSpec("x"),
            1,
            r"'x' \(kind 'categorical'\): expected a string, an integer or a boolean, got "
            r"float 1\.5",
        ),
        (
            MultiCategoricalSpec("c"),
            1,
            r"'c' \(kind 'multi_categorical'\): expected a list of strings, integers or "
            r"booleans, got str 'zebra'",
        ),
        (
            MultiCategoricalSpec("v"),
            1,
            r"'v'\[0\] \(kind 'multi_categorical'\): expected a string, an integer or a "
            r"boolean, got float 1\.0",
        ),
        (
            RequiredSpec("x"),
            2,
            r"^node with id = 2 \(:Item\) property 'x' \(kind 'required'\): expected a value, "
            r"got none \(missing\)$",
        ),
    ]
    src = source(items)
    for prop, seed, message in cases:
        with pytest.raises(GraphDataError, match=message):
            src.sample_typed([1, seed], NN, None, options(prop, NumericSpec("zz")))
    with pytest.raises(GraphDataError, match=r"^node with id = 3 \(:Item\) property 'x'"):
        src.sample_typed([3], NN, None, options(NumericSpec("x")))


def test_non_finite_numbers_need_allow_non_finite():
    items = [{"id": 1, "x": float("nan")}, {"id": 2, "x": 1e39}]
    src = source(items, [(0, 1)])
    with pytest.raises(
        GraphDataError,
        match=r"'x' \(kind 'numeric'\): expected a finite number, got float nan \(nan as "
        r"float32\); set options\.allow_non_finite",
    ):
        src.sample_typed([1], NN, None, options(NumericSpec("x")))
    with pytest.raises(
        GraphDataError, match=r"expected a finite number, got float 1e\+39 \(inf as float32\)"
    ):
        src.sample_typed([2], NN, None, options(NumericSpec("x")))
    got = blob.unpack(
        src.sample_typed([1, 2], NN, None, options(NumericSpec("x"), allow_non_finite=True))
    )
    assert np.isnan(got["num_h0_Item"][0, 0, 0]) and np.isinf(got["num_h0_Item"][1, 0, 0])


@pytest.mark.parametrize(
    ("opts", "message"),
    [
        (
            {"max_blob_bytes": 300},
            r"^max_blob_bytes: the blob would hold at least [\d,]+ bytes \(2 seeds, 3 slots each, "
            r"feature widths none; raw columns of Item: num 6, time 4, cat 2, bag 1, has 11 "
            r"\(float32\); before sampling\)",
        ),
    ],
)
def test_the_option_s_refusals(opts, message):
    with pytest.raises(GraphDataError, match=message):
        source().sample_typed([1, 2], NN, None, options(*FULL, **opts))


@pytest.mark.parametrize("layout_name", ["compact", "sparse"])
def test_the_compact_and_sparse_layouts_carry_raw_tables_that_gather_to_the_dense_sections(
    layout_name,
):
    """docs/blob-format.md section 11, rule 7: one ``table_{group}_Item`` per group, a row per
    distinct node (``table_ids_Item`` order); each slot's row gathered by its index (a padded
    slot: zeros, ``""``, empty bags, false) is exactly the dense layout's section."""
    src = source()
    dense = blob.unpack(src.sample_typed([1, 2], NN, None, options(*FULL)))
    got = blob.unpack(src.sample_typed([1, 2], NN, None, options(*FULL, layout=layout_name)))
    assert list(got) == ["index_h0_Item", "index_h1_Item", "table_ids_Item"] + [
        f"table_{group}_Item" for group in ("num", "time", "cat", "bag", "has")
    ]
    ids = got["table_ids_Item"].values
    assert ids.tolist() == [1, 2, 3]  # first appearance: the seeds, then 1's second neighbour
    bag = got["table_bag_Item"]
    cells = [bag.values[a:b].tolist() for a, b in zip(bag.row_splits[:-1], bag.row_splits[1:])]
    width = len(cells) // len(ids)
    for h in (0, 1):
        index = got[f"index_h{h}_Item"]
        valid = index >= 0
        np.testing.assert_array_equal(np.where(valid, ids[index], -1), dense[f"ids_h{h}_Item"])
        for group in ("num", "time", "cat", "has"):
            table = got[f"table_{group}_Item"]
            assert table.row_splits.tolist() == [0, len(ids)]
            want = dense[f"{group}_h{h}_Item"]
            pad = b"" if want.dtype == object else np.zeros_like(want[0, 0])
            rows = np.where(valid[..., None], table.values[index], pad)
            np.testing.assert_array_equal(rows, want, err_msg=f"{group}_h{h}")
        want_bag = dense[f"bag_h{h}_Item"]
        flat = [
            cells[r * width + j] if r >= 0 else [] for r in index.reshape(-1) for j in range(width)
        ]
        assert [len(c) for c in flat] == np.diff(want_bag.row_splits).tolist()
        assert [v for c in flat for v in c] == want_bag.values.tolist()


def test_the_exact_size_is_checked_once_the_texts_are_read():
    src = source()
    size = len(src.sample_typed([1, 2], NN, None, options(*FULL)))
    with pytest.raises(
        GraphDataError,
        match=rf"^max_blob_bytes: the blob holds {size:,} bytes \(2 seeds, raw property columns "
        rf"of 'Item'; after reading them\); the limit is {size - 1:,}",
    ):
        src.sample_typed([1, 2], NN, None, options(*FULL, max_blob_bytes=size - 1))


def test_a_label_too_long_for_the_bag_section_is_refused_naming_it():
    label = "L" * 23
    g = EmbeddedGraph()
    g.add_node([label], {"t": ["a"]})
    raw = LabelSpec(label, [MultiCategoricalSpec("t")]).to_dict()
    nn = {f"(:{label})-[:R]->(:{label})": [1]}
    with pytest.raises(
        GraphDataError,
        match=rf"section 'bag_h0_{label}\.row_splits': expected a name of at most 40 bytes",
    ):
        EmbeddedSource(g).sample_typed(
            [0], nn, None, {"label": label, "feature_spec": {label: raw}}
        )


def test_a_label_too_long_for_a_raw_table_is_refused_naming_it():
    """18 characters fit ``table_time_{label}.row_splits`` in 40 bytes, 19 do not."""
    for size, fits in ((18, True), (19, False)):
        label = "L" * size
        g = EmbeddedGraph()
        a = g.add_node([label], {"d": datetime.date(1970, 1, 2)})
        g.add_edge(a, g.add_node([label], {}), "R")
        raw = LabelSpec(label, [TemporalSpec("d", type="Date")]).to_dict()
        nn = {f"(:{label})-[:R]->(:{label})": [1]}
        opts = {"label": label, "layout": "compact", "feature_spec": {label: raw}}
        if fits:
            got = blob.unpack(EmbeddedSource(g).sample_typed([0], nn, None, opts))
            assert got[f"table_time_{label}"].values.tolist() == [[1], [0]]
            continue
        with pytest.raises(
            GraphDataError,
            match=rf"^options\.layout \('compact'\): section 'table_time_{label}\.row_splits': "
            r"expected a name of at most 40 bytes",
        ):
            EmbeddedSource(g).sample_typed([0], nn, None, opts)


def test_sample_pairs_takes_feature_spec_for_both_halves():
    src = source()
    opts = options(*FULL)
    pair_opts = {**{k: v for k, v in opts.items() if k != "label"}, "source_label": "Item"}
    got = blob.unpack(src.sample_pairs([1, 2], [2, 3], NN, None, pair_opts))
    typed = blob.unpack(src.sample_typed([1, 2, 3], NN, None, opts))
    row_of = {1: 0, 2: 1, 3: 2}
    for prefix, ids in (("src.", [1, 2]), ("dst.", [2, 3])):
        assert got[f"{prefix}ids_h0_Item"][:, 0].tolist() == ids
        for group in ("num", "time", "cat", "has"):  # hop 0: the row's own node's raw row
            want = typed[f"{group}_h0_Item"][[row_of[i] for i in ids]]
            np.testing.assert_array_equal(got[f"{prefix}{group}_h0_Item"], want)
    assert got["pair_labels"].tolist() == [1, 1]
    assert "src.bag_h1_Item" in got and "dst.has_h1_Item" in got
    assert not any(name.startswith(("src.features", "dst.features")) for name in got)


def test_a_client_may_give_label_specs_themselves():
    src = source()
    opts = options(*FULL)
    given = {**opts, "feature_spec": {"Item": LabelSpec("Item", list(FULL))}}
    assert src.sample_typed([1, 2], NN, None, given) == src.sample_typed([1, 2], NN, None, opts)


def test_a_raw_blob_splits_into_each_seed_s_own_blob():
    """What serving and batch inference send per node: byte for byte the seed sampled alone,
    the bags' rows cut per seed too."""
    from memgraph_tf.ops.sample_decoding import split_typed_blob
    from memgraph_tf.typed_sampling import TypedSamplingSpec

    src = source()
    opts = options(*FULL)
    whole = src.sample_typed([1, 2, 3], NN, None, opts)
    parts = split_typed_blob(whole, 3, TypedSamplingSpec.from_num_neighbors("Item", NN))
    assert parts == [src.sample_typed([seed], NN, None, opts) for seed in (1, 2, 3)]


@pytest.mark.parametrize("layout_name", ["compact", "sparse"])
def test_a_compact_blob_with_raw_tables_splits_into_each_seed_s_own_blob(layout_name):
    """``split_typed_blob`` rebuilds each label's raw tables from the rows a seed reaches
    (bags cell by cell): byte for byte the blob of that seed sampled alone."""
    from memgraph_tf.ops.sample_decoding import split_typed_blob
    from memgraph_tf.typed_sampling import TypedSamplingSpec

    src = source()
    opts = options(*FULL, layout=layout_name)
    data = src.sample_typed([1, 2, 3], NN, None, opts)
    spec = TypedSamplingSpec.from_num_neighbors("Item", NN)
    parts = split_typed_blob(data, 3, spec, layout_name)
    assert parts == [src.sample_typed([k], NN, None, opts) for k in (1, 2, 3)]
