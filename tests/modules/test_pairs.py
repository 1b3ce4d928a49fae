"""Link prediction in the database through the unchanged query module (embedded runtime,
Memgraph's real mgp.py): tf_features.split_edges (a seeded, idempotent GAE split written on the
relationships), options.exclude_splits (a held-out relationship is never walked), and
tf_features.sample_pairs (both endpoints' neighbourhoods without the pair's own relationships,
keyed uniform negatives, the pair layout) with errors naming what is at fault."""

from __future__ import annotations

import collections

import numpy as np
import pytest

from memgraph_tf import blob, layout
from memgraph_tf.client import EmbeddedSource
from memgraph_tf.client.errors import GraphDataError
from memgraph_tf.embedded import EmbeddedGraph
from memgraph_tf.typed_datasets import shop_graph, typed_embedded_graph
from memgraph_tf.typed_sampling import TypedSamplingSpec

CITES = "(:Paper)-[:CITES]-(:Paper)"
NN = {CITES: [30, 30]}  # more than any degree: every neighbour is drawn, so tests see them all
PROPS = {"Paper": ["f"]}
PAIR = {"source_label": "Paper", "id_property": "id", "seed": 7}
N = 120


def _papers(seed: int = 0):
    """An EmbeddedGraph of N papers (id = 1000 + i) with random citations (some both ways), and
    the edge list as (i, j) with i -> j."""
    rng = np.random.default_rng(seed)
    g = EmbeddedGraph()
    nodes = [g.add_node(["Paper"], {"id": 1000 + i, "f": [float(i), 1.0]}) for i in range(N)]
    edges = set()
    while len(edges) < 3 * N:
        a, b = (int(x) for x in rng.integers(0, N, 2))
        if a != b:
            edges.add((a, b))
    edges = sorted(edges)
    for a, b in edges:
        g.add_edge(nodes[a], nodes[b], "CITES")
    return g, nodes, edges


@pytest.fixture(scope="module")
def papers():
    g, _nodes, edges = _papers()
    source = EmbeddedSource(g)
    counts = source.split_edges(CITES, {"seed": 1, "id_property": "id"})
    return g, source, edges, counts


def _splits(g, edges):
    """(i, j) -> the split written on relationship i -> j (edge ids are in creation order)."""
    return {e: g._store.eprops[k]["split"] for k, e in enumerate(edges)}


def _neighbours(edges, split_of=None, held_out=()):
    """Paper number -> its neighbours (either direction) over relationships not held out."""
    out = collections.defaultdict(set)
    for a, b in edges:
        if split_of is not None and split_of[(a, b)] in held_out:
            continue
        out[a].add(b)
        out[b].add(a)
    return out


def test_split_edges_is_the_gae_split_of_undirected_edges_and_idempotent(papers):
    g, source, edges, counts = papers
    split_of = _splits(g, edges)
    undirected = {tuple(sorted(e)) for e in edges}
    assert counts == {
        "val": int(0.05 * len(undirected)),
        "test": int(0.10 * len(undirected)),
        "train": len(undirected) - int(0.05 * len(undirected)) - int(0.10 * len(undirected)),
        "relationships": len(edges),
    }
    # both directions between two papers are one edge: one split (no leak through the other)
    for a, b in edges:
        if (b, a) in split_of:
            assert split_of[(a, b)] == split_of[(b, a)]
    per_edge = {tuple(sorted(e)): s for e, s in split_of.items()}
    assert collections.Counter(per_edge.values()) == {k: counts[k] for k in layout.SPLITS}
    # a rerun with the seed writes the same; another seed another split, same sizes
    assert source.split_edges(CITES, {"seed": 1, "id_property": "id"}) == counts
    assert _splits(g, edges) == split_of
    other = source.split_edges(CITES, {"seed": 2, "id_property": "id", "split_property": "s2"})
    assert other == counts
    moved = {e: g._store.eprops[k]["s2"] for k, e in enumerate(edges)}
    assert moved != split_of


def test_a_held_out_relationship_is_never_walked(papers):
    g, source, edges, _ = papers
    split_of = _splits(g, edges)
    kept = _neighbours(edges, split_of, ("val", "test"))
    everything = _neighbours(edges)
    seeds = [1000 + i for i in range(N)]
    opts = {"label": "Paper", "id_property": "id", "seed": 3}
    for exclude, allowed in ((["val", "test"], kept), (None, everything)):
        got = blob.unpack(source.sample_typed(seeds, NN, None, {**opts, "exclude_splits": exclude}))
        h0, h1, h2 = (got[layout.typed_ids_name(h, "Paper")] - 1000 for h in range(3))
        # every neighbour is drawn (fanout > degree): hop 1 is exactly the allowed neighbours
        for row, seed in enumerate(h0[:, 0]):
            assert {int(x) for x in h1[row] if x >= 0} == allowed[seed]
        walked = {
            (int(p), int(c))
            for row in range(N)
            for hop, parents, children in ((1, h0, h1), (2, h1, h2))
            for j, c in enumerate(children[row])
            if c >= 0
            for p in [parents[row][j // NN[CITES][hop - 1]]]
        }
        held = {(a, b) for (a, b), s in split_of.items() if s != "train"}
        held_walked = {w for w in walked if w in held or w[::-1] in held}
        if exclude:
            assert not held_walked  # never, at any hop
        else:
            assert held_walked  # the same draw without the option does walk them


def _rows(got, prefix, hop):
    return got[prefix + layout.typed_ids_name(hop, "Paper")] - 1000


def test_a_pairs_own_relationship_is_removed_from_both_neighbourhoods(papers):
    _g, source, edges, _ = papers
    nbrs = _neighbours(edges)
    pairs = [e for e in edges if e[0] < 60][:25]
    got = blob.unpack(
        source.sample_pairs(
            [1000 + a for a, _ in pairs], [1000 + b for _, b in pairs], NN, PROPS, PAIR
        )
    )
    sections = layout.pair_sample_sections(
        *(TypedSamplingSpec.from_num_neighbors("Paper", NN),) * 2, {"Paper": 2}, batch=len(pairs)
    )
    assert [(s.name, s.dtype, s.shape) for s in sections] == [
        (k, str(v.dtype), v.shape) for k, v in got.items()
    ]
    assert got[layout.PAIR_LABELS].tolist() == [1] * len(pairs)
    f = NN[CITES][0]
    for row, (s, t) in enumerate(pairs):
        for prefix, me, other in (("src.", s, t), ("dst.", t, s)):
            h0, h1, h2 = (_rows(got, prefix, h)[row] for h in range(3))
            assert h0.tolist() == [me]
            # hop 1: every neighbour but the pair's other end (other relationships stay)
            assert {int(x) for x in h1 if x >= 0} == nbrs[me] - {other}
            for j, c in enumerate(h2):
                parent = int(h1[j // f])
                if c >= 0 and parent in (s, t):
                    assert int(c) != (t if parent == s else s), (row, prefix, parent)
            assert other not in h1
        np.testing.assert_array_equal(got["src.features_h0_Paper"][row, 0], [float(s), 1.0])


def test_without_a_relationship_to_remove_each_end_is_sample_typeds_neighbourhood(papers):
    _g, source, edges, _ = papers
    nn = {CITES: [3, 2]}  # fewer than the degree: the draws themselves are compared
    undirected = {tuple(sorted(e)) for e in edges}
    s, t = next((a, b) for a in range(N) for b in range(a + 1, N) if (a, b) not in undirected)
    got = blob.unpack(source.sample_pairs([1000 + s], [1000 + t], nn, PROPS, PAIR))
    for prefix, node in (("src.", s), ("dst.", t)):
        alone = blob.unpack(
            source.sample_typed(
                [1000 + node], nn, PROPS, {"label": "Paper", "id_property": "id", "seed": 7}
            )
        )
        for name, value in alone.items():
            np.testing.assert_array_equal(got[prefix + name], value, err_msg=prefix + name)


def test_negatives_are_keyed_uniform_and_never_known_neighbours(papers):
    _g, source, edges, _ = papers
    nbrs = _neighbours(edges)
    s, t = edges[0]
    k = 1000  # pairs.MAX_NEGATIVES
    opts = {**PAIR, "negatives": k}
    raw = source.sample_pairs([1000 + s], [1000 + t], {CITES: [1]}, None, opts)
    assert source.sample_pairs([1000 + s], [1000 + t], {CITES: [1]}, None, opts) == raw
    assert (
        source.sample_pairs([1000 + s], [1000 + t], {CITES: [1]}, None, {**opts, "seed": 8}) != raw
    )
    got = blob.unpack(raw)
    assert got[layout.PAIR_LABELS].tolist() == [1] + [0] * k
    assert (_rows(got, "src.", 0)[:, 0] == s).all()
    drawn = _rows(got, "dst.", 0)[1:, 0].tolist()
    assert not set(drawn) & (nbrs[s] | {s})
    free = set(range(N)) - nbrs[s] - {s}
    counts = collections.Counter(drawn)
    assert set(counts) == free  # every free paper is drawn
    mean = k / len(free)
    chi2 = sum((counts[c] - mean) ** 2 / mean for c in free)
    assert chi2 < len(free) + 5 * (2 * len(free)) ** 0.5  # ~ chi2(df = |free| - 1): uniform


@pytest.mark.parametrize(
    ("sources", "targets", "nn", "options", "message"),
    [
        ([1000, 99], [1001, 1002], NN, PAIR, r"sources\[1\]: unknown node id 99 \(no :Paper node"),
        ([1000], ["1001"], NN, PAIR, r"targets\[0\]: expected a node or an integer id, got str"),
        (
            [1000],
            [1001],
            {"(:Paper)-[:LIKES]-(:Paper)": [2]},
            PAIR,
            r"num_neighbors: \(:Paper\)-\[:LIKES\]-\(:Paper\): the graph has no such relation",
        ),
        ([1000, 1001], [1002], NN, PAIR, r"targets: expected one target per source \(2\), got 1"),
        ([1000], [1001], NN, {**PAIR, "negatives": -1}, r"options\.negatives: expected the numb"),
        ([1000], [1001], NN, {"id_property": "id"}, r"options\.source_label: expected a label"),
        (
            [1000],
            [1001],
            NN,
            {**PAIR, "exclude_splits": "test"},
            r"options\.exclude_splits: expected a list of split names",
        ),
        ([1000], [1001], NN, {**PAIR, "label": "Paper"}, r"unknown option 'label' for tf_featu"),
    ],
)
def test_bad_pairs_are_named(papers, sources, targets, nn, options, message):
    _, source, _, _ = papers
    with pytest.raises(GraphDataError, match=message):
        source.sample_pairs(sources, targets, nn, PROPS, options)


@pytest.mark.parametrize(
    ("pattern", "options", "message"),
    [
        (CITES, {"id_property": "id"}, r"options\.seed: expected an integer"),
        ("(:Paper)-[:LIKES]-(:Paper)", {"seed": 1}, r"pattern: \(:Paper\)-\[:LIKES\]-\(:Paper\): "),
        ("Paper CITES Paper", {"seed": 1}, r"pattern: edge step: expected a pattern like"),
        (CITES, {"seed": 1, "val_fraction": 0.7, "test_fraction": 0.5}, r"at most 1, got 0\.7"),
        (CITES, {"seed": 1, "fractions": [1]}, r"unknown option 'fractions' for tf_features\.sp"),
    ],
)
def test_bad_splits_are_named_and_write_nothing(pattern, options, message):
    g, _, edges = _papers(seed=5)
    with pytest.raises(GraphDataError, match=message):
        EmbeddedSource(g).split_edges(pattern, options)
    assert all(g._store.eprops[k] is None for k in range(len(edges)))


def test_typed_pairs_across_labels():
    """User -> Product pairs on the shop graph: the layout of two specs, the wrong label named."""
    graph = shop_graph(100, num_products=40, num_categories=4, num_classes=2, follows_per_user=2)
    embedded, _ = typed_embedded_graph(graph)
    source = EmbeddedSource(embedded)
    nn = {"(:User)-[:BOUGHT]->(:Product)": [40, 2], "(:Product)<-[:BOUGHT]-(:User)": [40, 2]}
    opts = {"source_label": "User", "target_label": "Product", "id_property": "id", "seed": 1}
    bought = graph.edge_sets[("User", "BOUGHT", "Product")]
    users, products = bought.source[:6].tolist(), bought.target[:6].tolist()
    got = blob.unpack(
        source.sample_pairs(
            users, products, nn, {"Product": ["features"]}, {**opts, "negatives": 1}
        )
    )
    specs = [TypedSamplingSpec.from_num_neighbors(lb, nn) for lb in ("User", "Product")]
    widths = {"Product": graph.node_sets["Product"].width}
    sections = layout.pair_sample_sections(*specs, widths, batch=12)
    assert [(s.name, s.shape) for s in sections] == [(k, v.shape) for k, v in got.items()]
    for row, (u, p) in enumerate(zip(users, products)):
        assert p not in got["src.ids_h1_Product"][row].tolist()
        assert u not in got["dst.ids_h1_User"][row].tolist()
        others = set(bought.target[bought.source == u].tolist()) - {p}
        assert set(got["src.ids_h1_Product"][row].tolist()) - {-1} == others
    with pytest.raises(GraphDataError, match=r"targets\[0\]: unknown node id 99 \(no :Product"):
        source.sample_pairs([0], [99], nn, None, opts)
    plain = {**opts, "id_property": None}
    with pytest.raises(GraphDataError, match=r"targets\[0\]: node 0 is not a :Product node"):
        source.sample_pairs([1], [0], nn, None, plain)


PUBLIC_PATH_MODULE = """
import mgp
from memgraph_tf import blob, procedures
from memgraph_tf.procedures.mgp_access import MgpGraphAccess


def _runner(ctx):
    return procedures.ProcedureRunner(lambda opts: MgpGraphAccess(ctx, opts, handles=False))


@mgp.read_proc
def sample_typed(ctx: mgp.ProcCtx, seeds: mgp.List[mgp.Any], num_neighbors: mgp.Map,
                 properties: mgp.Nullable[mgp.Map] = None, options: mgp.Nullable[mgp.Map] = None
                 ) -> mgp.Record(blob=str, count=int):
    data, count = _runner(ctx).sample_typed(seeds, num_neighbors, properties, options)
    return mgp.Record(blob=blob.b64encode(data), count=count)


@mgp.read_proc
def sample_pairs(ctx: mgp.ProcCtx, sources: mgp.List[mgp.Any], targets: mgp.List[mgp.Any],
                 num_neighbors: mgp.Map, properties: mgp.Nullable[mgp.Map] = None,
                 options: mgp.Nullable[mgp.Map] = None) -> mgp.Record(blob=str, count=int):
    data, count = _runner(ctx).sample_pairs(sources, targets, num_neighbors, properties, options)
    return mgp.Record(blob=blob.b64encode(data), count=count)
"""


def test_the_public_mgp_path_samples_the_same_bytes_as_the_handle_path(papers, tmp_path):
    """MgpGraphAccess reads neighbours through the ``_mgp`` handles or, where mgp.py does not
    expose them, through the public mgp API: typed and pair sampling (a label on every step,
    held-out relationships, the pair's own relationships, negatives) give the same blob either
    way."""
    g, _source, edges, _ = papers
    path = tmp_path / "public_path.py"
    path.write_text(PUBLIC_PATH_MODULE)
    g.load_module(path)
    nn = {CITES: [3, 2]}  # fewer than most degrees: the draws themselves are compared
    typed_opts = {"label": "Paper", "id_property": "id", "seed": 5, "exclude_splits": ["val"]}
    seeds = [1000 + i for i in range(0, N, 3)]
    pairs = [e for e in edges if e[0] < 40][:15]
    pair_args = ([1000 + a for a, _ in pairs], [1000 + b for _, b in pairs], nn, PROPS)
    pair_opts = {**PAIR, "negatives": 2, "exclude_splits": ["test"], "layout": "sparse"}
    for proc, args in (
        ("sample_typed", (seeds, nn, PROPS, typed_opts)),
        ("sample_pairs", (*pair_args, pair_opts)),
    ):
        [handles] = g.call(f"tf_features.{proc}", *args)
        [public] = g.call(f"public_path.{proc}", *args)
        assert handles == public, proc
        assert blob.unpack_b64(handles["blob"])  # a blob, not an empty answer
