"""tf_features.sample_typed and tf_features.schema through the unchanged query module (embedded
runtime, Memgraph's real mgp.py): the typed dense layout, the sampler's semantics against the graph
(those of the reference sampler, memgraph_tf.typed_datasets.sample_neighbourhoods), keyed draws,
the size limit and errors naming the label, relationship type, property or option."""

from __future__ import annotations

import collections

import numpy as np
import pytest

from memgraph_tf import blob, layout
from memgraph_tf.client import EmbeddedSource
from memgraph_tf.client.errors import GraphDataError
from memgraph_tf.typed_datasets import sample_neighbourhoods, shop_graph, typed_embedded_graph
from memgraph_tf.typed_sampling import TypedSamplingSpec, features_name, mask_name

# BOUGHT fanout 7 > the 5 purchases of every user: hop-1 products are padded, and so are the
# categories below the padded products; FOLLOWS both ways reaches the followers too.
NN = {
    "(:User)-[:BOUGHT]->(:Product)": [7, 0],
    "(:User)-[:FOLLOWS]-(:User)": [3, 2],
    "(:Product)-[:IN]->(:Category)": [0, 2],
    "(:Product)<-[:BOUGHT]-(:User)": [0, 2],
}
PROPS = {"User": ["features"], "Product": ["features"], "Category": ["features"]}
OPTS = {"label": "User", "id_property": "id", "seed": 11, "label_property": "label"}


@pytest.fixture(scope="module")
def shop():
    graph = shop_graph(200, num_products=60, num_categories=4, num_classes=2, follows_per_user=3)
    embedded, internal = typed_embedded_graph(graph)
    return graph, EmbeddedSource(embedded), internal


def _neighbours(graph, step):
    """node number -> set of its step neighbours (numbers), from the generator's edge sets."""
    out = collections.defaultdict(set)
    for (a, t, b), es in graph.edge_sets.items():
        if t != step.rel_type:
            continue
        if step.direction in ("out", "both") and (a, b) == (step.left, step.right):
            for s, d in zip(es.source.tolist(), es.target.tolist()):
                out[s].add(d)
        if step.direction in ("in", "both") and (b, a) == (step.left, step.right):
            for s, d in zip(es.source.tolist(), es.target.tolist()):
                out[d].add(s)
    return out


def test_the_blob_has_the_typed_layout_and_the_samplers_semantics(shop):
    graph, source, _ = shop
    spec = TypedSamplingSpec.from_num_neighbors("User", NN)
    seeds = list(range(0, 200, 7))
    got = blob.unpack(source.sample_typed(seeds, NN, PROPS, OPTS))
    widths = {label: ns.width for label, ns in graph.node_sets.items()}
    sections = layout.typed_sample_sections(spec, widths, labels=True, batch=len(seeds))
    assert [(s.name, s.dtype, tuple(s.shape)) for s in sections] == [
        (name, str(v.dtype), v.shape) for name, v in got.items()
    ]
    assert got["labels"].tolist() == graph.labels[seeds].tolist()
    assert got[layout.typed_ids_name(0, "User")][:, 0].tolist() == seeds
    tables = {
        (h, label): got[layout.typed_ids_name(h, label)]
        for h, t in enumerate(spec.layout().tables)
        for label in t
    }
    for (h, label), ids in tables.items():
        features = graph.node_sets[label].features
        filled = ids >= 0
        np.testing.assert_array_equal(got[features_name(h, label)][filled], features[ids[filled]])
        assert not got[features_name(h, label)][~filled].any()
        if h:
            np.testing.assert_array_equal(got[mask_name(h, label)], filled)
    padded = 0
    for group in spec.layout().groups:
        nbrs = _neighbours(graph, group.step)
        parents = tables[(group.hop - 1, group.step.left)]
        children = tables[(group.hop, group.step.right)][
            :, group.offset : group.offset + group.size
        ].reshape(len(seeds), group.parents, group.fanout)
        for b in range(len(seeds)):
            for p, parent in enumerate(parents[b].tolist()):
                drawn = [c for c in children[b, p].tolist() if c >= 0]
                if parent < 0:  # children of a padded slot are padded
                    assert drawn == []
                    padded += 1
                    continue
                assert len(drawn) == len(set(drawn)) == min(group.fanout, len(nbrs[parent]))
                assert set(drawn) <= nbrs[parent], (group.step, parent)
                assert children[b, p].tolist()[len(drawn) :] == [-1] * (group.fanout - len(drawn))
    assert padded  # the spec pads (fanout 7 > 5 purchases): the rule above was exercised


def test_draws_are_uniform_like_the_reference_sampler(shop):
    graph, source, _ = shop
    step = {"(:User)-[:FOLLOWS]-(:User)": [2]}
    spec = TypedSamplingSpec.from_num_neighbors("User", step)
    seed_user = 3
    counts = collections.Counter()
    reference = collections.Counter()
    runs = 120
    rng = np.random.default_rng(0)
    for s in range(runs):
        opts = {"label": "User", "id_property": "id", "seed": s}
        ids = blob.unpack(source.sample_typed([seed_user], step, None, opts))["ids_h1_User"]
        counts.update(ids[0].tolist())
        ref = sample_neighbourhoods(graph, spec, [seed_user], rng)["h1.User"]
        reference.update(ref[0].tolist())
    assert set(counts) == set(reference)  # the same neighbours, and no others
    degree = len(counts)
    assert degree > 2  # so the draw is a real choice
    for node in counts:  # each neighbour drawn 2/degree of the time; 5 sigma apart at most
        p = 2 / degree
        sigma = (runs * p * (1 - p)) ** 0.5
        assert abs(counts[node] - runs * p) < 5 * sigma
        assert abs(counts[node] - reference[node]) < 5 * 2**0.5 * sigma


def test_a_seeds_neighbourhood_does_not_depend_on_the_other_seeds(shop):
    _, source, _ = shop
    both = blob.unpack(source.sample_typed([4, 9], NN, PROPS, OPTS))
    alone = blob.unpack(source.sample_typed([9], NN, PROPS, OPTS))
    for name, value in alone.items():
        np.testing.assert_array_equal(both[name][1:], value, err_msg=name)
    assert source.sample_typed([4, 9], NN, PROPS, OPTS) == source.sample_typed(
        [4, 9], NN, PROPS, OPTS
    )
    other_seed = source.sample_typed([4, 9], NN, PROPS, {**OPTS, "seed": 12})
    assert other_seed != source.sample_typed([4, 9], NN, PROPS, OPTS)


def test_internal_ids_labels_without_features_and_float64(shop):
    graph, source, internal = shop
    seeds = [internal["User"][5], internal["User"][6]]
    got = blob.unpack(
        source.sample_typed(
            seeds, NN, {"Product": ["features"]}, {"label": "User", "seed": 1, "dtype": "float64"}
        )
    )
    assert "features_h0_User" not in got and "features_h2_Category" not in got
    assert got["features_h1_Product"].dtype == np.float64
    products = got["ids_h1_Product"]
    filled = products >= 0
    by_internal = {v: i for i, v in enumerate(internal["Product"])}
    rows = [by_internal[int(k)] for k in products[filled]]
    np.testing.assert_array_equal(
        got["features_h1_Product"][filled], graph.node_sets["Product"].features[rows]
    )


def test_schema_reports_labels_widths_and_triples(shop):
    graph, source, _ = shop
    report = source.schema(PROPS)
    assert report["labels"] == [
        {
            "label": label,
            "count": graph.node_sets[label].size,
            "properties": [
                {
                    "name": "features",
                    "kind": "vector",
                    "width": graph.node_sets[label].width,
                    "dtype": "float32",
                }
            ],
        }
        for label in sorted(graph.node_sets)
    ]
    assert report["relationships"] == [
        {"source": a, "type": t, "target": b, "count": es.size}
        for (a, t, b), es in sorted(graph.edge_sets.items())
    ]


@pytest.mark.parametrize(
    ("num_neighbors", "properties", "options", "message"),
    [
        (
            {"(:User)-[:RATED]->(:Product)": [2]},
            None,
            OPTS,
            r"num_neighbors: \(:User\)-\[:RATED\]->\(:Product\): the graph has no such "
            r"relationships "
            r"\(relationship type 'RATED' between :User and :Product nodes; the graph has "
            r"\(:Product\)-\[:IN\]->\(:Category\), \(:User\)-\[:BOUGHT\]->\(:Product\)",
        ),
        (
            {"(:User)-[:BOUGHT]->(:Prodcut)": [2]},
            None,
            OPTS,
            r"\(:User\)-\[:BOUGHT\]->\(:Prodcut\): the graph has no such relationships",
        ),
        (
            {"(:User)-[:BOUGHT]->(:Product)": [2]},
            {"Shop": ["features"]},
            OPTS,
            r"properties: label 'Shop' has no slots in this sampling spec \(labels with slots: "
            r"'User', 'Product'\)",
        ),
        (
            {"(:User)-[:BOUGHT]->(:Product)": [2]},
            {"Product": ["price"]},
            OPTS,
            r"node with id = \d+ \(:Product\) property 'price': expected a value, got none "
            r"\(missing\)",
        ),
        (
            {"(:User)-[:BOUGHT]->(:Product)": [-1]},
            None,
            OPTS,
            r"num_neighbors\['\(:User\)-\[:BOUGHT\]->\(:Product\)'\]\[0\]: expected an integer "
            r">= 0",
        ),
        ({"User-BOUGHT->Product": [1]}, None, OPTS, r"edge step: expected a pattern like"),
        (
            {"(:User)-[:BOUGHT]->(:Product)": [2]},
            None,
            {"seed": 1},
            r"options\.label: expected the seed label",
        ),
        (
            {"(:User)-[:BOUGHT]->(:Product)": [2]},
            None,
            {**OPTS, "direction": "out"},
            r"options: unknown option 'direction' for tf_features\.sample_typed",
        ),
        (
            {"(:User)-[:BOUGHT]->(:Product)": [2]},
            {"User": "features"},
            OPTS,
            r"properties\['User'\]: expected a list of property names",
        ),
    ],
)
def test_bad_input_names_what_is_at_fault(shop, num_neighbors, properties, options, message):
    _, source, _ = shop
    with pytest.raises(GraphDataError, match=message):
        source.sample_typed([1, 2], num_neighbors, properties, options)


def test_seeds_of_another_label_and_a_width_that_differs_within_a_label(shop):
    _, source, internal = shop
    with pytest.raises(
        GraphDataError,
        match=rf"seeds\[1\]: node {internal['Product'][0]} is not a :User node \(the seed label",
    ):
        source.sample_typed(
            [internal["User"][0], internal["Product"][0]], NN, None, {"label": "User"}
        )
    with pytest.raises(GraphDataError, match=r"seeds\[0\]: unknown node id 999 \(no :User node"):
        source.sample_typed([999], NN, None, OPTS)
    graph = shop_graph(100, num_products=20, num_categories=4, num_classes=2, follows_per_user=1)
    embedded, ids = typed_embedded_graph(graph)
    embedded.set_property(ids["Product"][7], "features", [0.5] * 5)
    bad = EmbeddedSource(embedded)
    with pytest.raises(
        GraphDataError,
        match=rf"node {ids['Product'][7]} \(:Product\) property 'features': expected a list of "
        r"12 numbers \(the length on the first node\), got a list of 5",
    ):
        bad.schema({"Product": ["features"]})
    buyers = [
        int(u)
        for u, p in zip(
            *(
                graph.edge_sets[("User", "BOUGHT", "Product")].source,
                graph.edge_sets[("User", "BOUGHT", "Product")].target,
            )
        )
        if p == 7
    ]
    with pytest.raises(
        GraphDataError,
        match=r"node with id = \d+ \(:Product\) property 'features': expected a list of (12|5) "
        r"numbers \(the length on the first node\)",
    ):
        bad.sample_typed(
            buyers[:1],
            {"(:User)-[:BOUGHT]->(:Product)": [5]},
            {"Product": ["features"]},
            {"label": "User", "id_property": "id"},
        )
    with pytest.raises(
        GraphDataError,
        match=r"properties: unknown label 'Shop' \(the graph has "
        r"'Category', 'Product', 'User'\)",
    ):
        bad.schema({"Shop": ["features"]})


def test_max_blob_bytes_before_and_after_sampling(shop):
    _, source, _ = shop
    step = {"(:User)-[:BOUGHT]->(:Product)": [2]}
    props = {"User": ["features"], "Product": ["features"]}
    full = len(source.sample_typed([1, 2], step, props, OPTS))
    with pytest.raises(
        GraphDataError,
        match=r"max_blob_bytes: the blob would hold at least [\d,]+ bytes \(2 seeds, 3 slots each, "
        r"feature widths User 16 \(float32\); before sampling\); the limit is 100 ",
    ):
        source.sample_typed([1, 2], step, props, {**OPTS, "max_blob_bytes": 100})
    with pytest.raises(
        GraphDataError,
        match=rf"max_blob_bytes: the blob would hold {full:,} bytes \(2 seeds, 3 slots each, "
        rf"feature widths User 16, Product 12 \(float32\); after sampling\); the limit is "
        rf"{full - 1:,} ",
    ):
        source.sample_typed([1, 2], step, props, {**OPTS, "max_blob_bytes": full - 1})
    assert len(source.sample_typed([1, 2], step, props, {**OPTS, "max_blob_bytes": full})) == full


@pytest.mark.parametrize("layout_name", ["compact", "sparse"])
def test_compact_and_sparse_layouts_hold_the_dense_blobs_draws_and_features(shop, layout_name):
    """The same keyed draws in every layout: gathering each label's table by the index sections
    gives the dense blob's ids, masks and features; the sections are typed_sample_sections';
    the size limit counts the real tables (sparse: its non-zero entries)."""
    graph, source, _ = shop
    spec = TypedSamplingSpec.from_num_neighbors("User", NN)
    props = {"User": ["features"], "Product": ["features"]}  # Category: ids alone
    widths = {label: graph.node_sets[label].width for label in props}
    seeds = [3, 8, 3, 150]
    opts = {**OPTS, "layout": layout_name}
    raw = source.sample_typed(seeds, NN, props, opts)
    got = blob.unpack(raw)
    dense = blob.unpack(source.sample_typed(seeds, NN, props, OPTS))
    sections = layout.typed_sample_sections(
        spec, widths, labels=True, batch=len(seeds), layout=layout_name
    )
    assert [s.name for s in sections] == [
        n
        for name, v in got.items()
        for n in [name] + [name + ".row_splits"] * (type(v) is blob.Ragged)
    ]
    assert got["labels"].tolist() == dense["labels"].tolist()
    for h, table in enumerate(spec.layout().tables):
        for label in table:
            index = got[layout.typed_index_name(h, label)]
            assert index.dtype == np.int32 and index.shape == (len(seeds), table[label])
            table_ids = got[layout.typed_table_name(layout.TABLE_IDS, label)].values
            ids = np.where(index >= 0, table_ids[index], layout.PAD_ID)
            np.testing.assert_array_equal(ids, dense[layout.typed_ids_name(h, label)])
            if h:
                np.testing.assert_array_equal(index >= 0, dense[mask_name(h, label)])
            if label not in widths:
                continue
            if layout_name == "compact":
                rows = got[layout.typed_table_name(layout.TABLE, label)].values
            else:
                cols = got[layout.typed_table_name(layout.TABLE_COLUMNS, label)]
                vals = got[layout.typed_table_name(layout.TABLE_VALUES, label)].values
                rows = np.zeros((len(table_ids), widths[label]), np.float32)
                for r, (a, b) in enumerate(zip(cols.row_splits[:-1], cols.row_splits[1:])):
                    assert (np.diff(cols.values[a:b]) > 0).all() and (vals[a:b] != 0).all()
                    rows[r, cols.values[a:b]] = vals[a:b]
            features = np.where((index >= 0)[..., None], rows[index], 0)
            assert features.tobytes() == dense[features_name(h, label)].tobytes()
    # every node once per table: the seeds' repeated row shares its rows
    user_ids = got[layout.typed_table_name(layout.TABLE_IDS, "User")].values
    assert len(set(user_ids.tolist())) == len(user_ids)
    full = len(raw)
    with pytest.raises(
        GraphDataError,
        match=rf"max_blob_bytes: the blob would hold {full:,} bytes \(4 seeds, \d+ slots each, "
        rf"feature widths User 16, Product 12 \(float32\); after sampling\); the limit is "
        rf"{full - 1:,} ",
    ):
        source.sample_typed(seeds, NN, props, {**opts, "max_blob_bytes": full - 1})
    assert source.sample_typed(seeds, NN, props, {**opts, "max_blob_bytes": full}) == raw
    with pytest.raises(
        GraphDataError, match=r"options.layout: expected one of 'dense', 'compact', 'sparse', got"
    ):
        source.sample_typed(seeds, NN, props, {**opts, "layout": "csr"})
    long = {"(:User)-[:BOUGHT]->(:ProductOfTheShopXYZW)": [2]}  # 20 characters: too long here
    with pytest.raises(
        GraphDataError,
        match=r"options.layout \('compact'\): section 'table_ids_ProductOfTheShopXYZW.row_splits': "
        r"expected a name of at most 40 bytes .* got 41: use a shorter label name \(or the dense",
    ):
        source.sample_typed(seeds, long, {}, {**OPTS, "layout": "compact"})


@pytest.mark.parametrize(
    "direction, pattern, fanouts", [("out", "->", [2, 4]), ("both", "-", [9, 2])]
)
def test_one_label_and_one_step_draw_exactly_what_tf_features_sample_draws(
    shop, direction, pattern, fanouts
):
    """A homogeneous graph is a typed graph with one label and one edge step: sample_typed over
    FOLLOWS between users draws the very slots (ids, masks, features) of tf_features.sample over
    the FOLLOWS relationships with the same seed, without replacement, padded (one draw rule,
    memgraph_tf.procedures.draw.Drawer)."""
    _, source, _ = shop
    seeds = list(range(0, 200, 9))
    nn = {f"(:User)-[:FOLLOWS]{pattern}(:User)": fanouts}
    opts = {"id_property": "id", "seed": 5}
    typed = blob.unpack(
        source.sample_typed(seeds, nn, {"User": ["features"]}, {**opts, "label": "User"})
    )
    plain = blob.unpack(
        source.sample_blob(
            seeds,
            fanouts,
            ["features"],
            {
                **opts,
                "label": "User",
                "edge_types": ["FOLLOWS"],
                "direction": direction,
                "low_degree": "pad",
            },
        )
    )
    # every user follows 3: out, hop 1 draws 2 of 3 (rng.sample), hop 2 pads (4 > 3); both
    # ways, hop 1 pads some users and samples others
    assert not (plain["mask_1"].all() and plain["mask_2"].all())
    for h in range(3):
        ids = typed[layout.typed_ids_name(h, "User")]
        np.testing.assert_array_equal(ids, plain[f"ids_{h}"].reshape(ids.shape))
        features = typed[features_name(h, "User")]
        np.testing.assert_array_equal(features, plain[f"features_{h}"].reshape(features.shape))
        if h:
            mask = typed[mask_name(h, "User")]
            np.testing.assert_array_equal(mask, plain[f"mask_{h}"].reshape(mask.shape))
