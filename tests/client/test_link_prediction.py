"""Link prediction: the metrics against hand-computed values, the
:class:`LinkPredictor`'s inputs against the pair blob's sections, and training through the unchanged
query module (embedded runtime): ``tf_features.split_edges`` holds edges out,
``train_link_predictor`` samples every batch with ``tf_features.sample_pairs``; it beats chance
clearly on a planted-community graph, and no held-out relationship -- nor a pair's own -- is ever
walked in a neighbourhood it trained on."""

from __future__ import annotations

import itertools

import keras
import numpy as np
import pytest
import tensorflow as tf

from memgraph_tf import blob, layout
from memgraph_tf.client import EmbeddedSource
from memgraph_tf.client.link_prediction import (
    ROWS_PREFIX,
    LinkPredictor,
    average_precision,
    evaluate_links,
    hits_at_k,
    mean_reciprocal_rank,
    pair_sample_dataset,
    ranks,
    roc_auc,
    train_link_predictor,
)
from memgraph_tf.embedded import EmbeddedGraph
from memgraph_tf.errors import ConfigurationError
from tests.graphs import SHORT_RUN

PATTERN = "(:Item)-[:LINK]-(:Item)"
NN = {PATTERN: [5, 3]}
OPTIONS = {"id_property": "id"}
N, CLASSES, DIM, BASE = 160, 4, 8, 100


# ------------------------------------------------------------------------------------------------
# metrics
# ------------------------------------------------------------------------------------------------


def test_auc_and_ap_equal_the_hand_computed_values():
    labels = [1, 0, 1, 0]
    # positives 0.9, 0.3; negatives 0.8, 0.1: 3 of the 4 (positive, negative) pairs ordered right
    assert roc_auc(labels, [0.9, 0.8, 0.3, 0.1]) == 0.75
    # descending 1 0 1 0: precision 1/1 at the first positive, 2/3 at the second
    assert average_precision(labels, [0.9, 0.8, 0.3, 0.1]) == pytest.approx((1 + 2 / 3) / 2)
    # a tie between a positive and a negative counts one half; tied rows enter together in AP
    assert roc_auc(labels, [0.5, 0.5, 0.9, 0.1]) == pytest.approx(3.5 / 4)
    assert average_precision(labels, [0.5, 0.5, 0.9, 0.1]) == pytest.approx(0.5 + 0.5 * 2 / 3)
    assert average_precision([0, 1, 1, 0], [0.5, 0.5, 0.9, 0.1]) == pytest.approx(0.5 + 0.5 * 2 / 3)
    # a monotone rescaling changes nothing; perfect and reversed orders give 1 and 0
    assert roc_auc(labels, np.log([0.9, 0.8, 0.3, 0.1])) == 0.75
    assert roc_auc([1, 1, 0], [3, 2, 1]) == 1.0 and roc_auc([1, 1, 0], [1, 2, 3]) == 0.0
    assert average_precision([1, 1, 0], [3, 2, 1]) == 1.0


def test_auc_equals_the_pairwise_count_on_random_scores_with_ties():
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 2, 300)
    scores = rng.integers(0, 20, 300).astype(float)  # many ties
    pos, neg = scores[labels == 1], scores[labels == 0]
    wins = sum(1.0 if p > q else 0.5 if p == q else 0.0 for p, q in itertools.product(pos, neg))
    assert roc_auc(labels, scores) == pytest.approx(wins / (len(pos) * len(neg)))
    # AP as the mean over positives of the precision at their (tie-group) cut
    order = np.argsort(-scores, kind="stable")
    ap = 0.0
    for i in np.flatnonzero(labels[order] == 1):
        cut = scores[order][i]
        ap += labels[scores >= cut].mean()
    assert average_precision(labels, scores) == pytest.approx(ap / labels.sum())


def test_ranks_hits_and_mrr_equal_the_hand_computed_values():
    pos = [0.5, 0.2]
    neg = [[0.1, 0.6, 0.5], [0.3, 0.4, 0.1]]
    # row 0: one negative above, one tied -> 1 + 1 + 1/2; row 1: two above -> 3
    assert ranks(pos, neg).tolist() == [2.5, 3.0]
    assert mean_reciprocal_rank(pos, neg) == pytest.approx((1 / 2.5 + 1 / 3) / 2)
    assert hits_at_k(pos, neg, 1) == 0.0
    assert hits_at_k(pos, neg, 2) == 0.0
    assert hits_at_k(pos, neg, 3) == 1.0
    # one negative set shared by every positive
    assert ranks([0.5, 0.2], [0.6, 0.3, 0.1]).tolist() == [2.0, 3.0]


def test_metric_inputs_that_make_no_sense_are_refused_by_name():
    with pytest.raises(ValueError, match=r"expected at least one positive and one negative"):
        roc_auc([1, 1], [0.2, 0.3])
    with pytest.raises(ValueError, match=r"labels: expected 0 or 1, got \[2\]"):
        average_precision([1, 2], [0.2, 0.3])
    with pytest.raises(ValueError, match=r"scores: expected finite numbers"):
        roc_auc([1, 0], [np.nan, 0.3])
    with pytest.raises(ValueError, match=r"negative_scores: expected \[m\] or \[2, m\]"):
        ranks([0.1, 0.2], [[0.1], [0.2], [0.3]])
    with pytest.raises(ValueError, match=r"k: expected an integer >= 1, got 0"):
        hits_at_k([0.1], [0.2], 0)


# ------------------------------------------------------------------------------------------------
# a planted-community graph, split in the database
# ------------------------------------------------------------------------------------------------


def _community_graph():
    """Items of 4 classes (``id`` = 100 + i) with features that hint at the class and LINK edges
    mostly inside a class: a link is predictable from the two endpoints' neighbourhoods."""
    rng = np.random.default_rng(0)
    classes = np.arange(N) % CLASSES
    centers = rng.standard_normal((CLASSES, DIM))
    features = centers[classes] * 1.5 + rng.standard_normal((N, DIM))
    g = EmbeddedGraph()
    for i in range(N):
        g.add_node(["Item"], {"id": BASE + i, "features": features[i].tolist()})
    edges: set[tuple[int, int]] = set()
    while len(edges) < 4 * N:
        a, b = (int(x) for x in rng.integers(0, N, 2))
        same = classes[a] == classes[b]
        if a != b and (same or rng.random() < 0.05) and (b, a) not in edges:
            edges.add((a, b))
    for a, b in sorted(edges):
        g.add_edge(a, b, "LINK")
    return g, sorted(edges)


def _splits(g) -> dict[str, np.ndarray]:
    """split -> [n, 2] ids of the relationships carrying it (the embedded store, in creation
    order: the graph has no public reader of relationship properties)."""
    store = g._store
    out: dict[str, list] = {"train": [], "val": [], "test": []}
    for a, b, props in zip(store.esrc, store.edst, store.eprops):
        out[props["split"]].append((BASE + a, BASE + b))
    return {k: np.array(v, dtype=np.int64) for k, v in out.items()}


def _non_edges(edges, k, rng):
    known = {frozenset(e) for e in edges}
    out: list[tuple[int, int]] = []
    while len(out) < k:
        a, b = (int(x) for x in rng.integers(0, N, 2))
        if a != b and frozenset((a, b)) not in known:
            known.add(frozenset((a, b)))
            out.append((BASE + a, BASE + b))
    return np.array(out, dtype=np.int64)


class _Recording:
    """A graph source that records every ``sample_pairs`` call (arguments and blob)."""

    def __init__(self, inner: EmbeddedSource) -> None:
        self.inner = inner
        self.calls: list[tuple[list[int], list[int], dict, str]] = []

    def __getattr__(self, name: str):
        return getattr(self.inner, name)

    def sample_pairs_b64(self, sources, targets, num_neighbors, properties, options):
        text = self.inner.sample_pairs_b64(sources, targets, num_neighbors, properties, options)
        self.calls.append((list(sources), list(targets), dict(options), text))
        return text


@pytest.fixture(scope="module")
def split_graph():
    g, edges = _community_graph()
    source = EmbeddedSource(g)
    counts = source.split_edges(
        PATTERN, {"seed": 3, "val_fraction": 0.1, "test_fraction": 0.1, **OPTIONS}
    )
    splits = _splits(g)
    rng = np.random.default_rng(1)
    held = [
        np.concatenate([splits[s], _non_edges(edges, len(splits[s]), rng)]) for s in ("val", "test")
    ]
    ys = [np.r_[np.ones(len(splits[s])), np.zeros(len(splits[s]))] for s in ("val", "test")]
    return source, splits, counts, (held[0], ys[0]), (held[1], ys[1])


@pytest.fixture(scope="module")
def trained(split_graph):
    source, splits, _, (val, val_y), _ = split_graph
    spy = _Recording(source)
    result = train_link_predictor(
        spy,
        "Item",
        NN,
        ["features"],
        splits["train"],
        val,
        val_y,
        options=OPTIONS,
        **SHORT_RUN,
    )
    return result, spy


def _walked(sections, prefix, spec):
    """Per row, the set of unordered {parent, child} id pairs the row's ``prefix`` neighbourhood
    walked (every step's group of the layout)."""
    rows = len(sections[layout.PAIR_LABELS])
    walked: list[set] = [set() for _ in range(rows)]
    for group in spec.layout().groups:
        parents = sections[prefix + layout.typed_ids_name(group.hop - 1, group.step.left)]
        children = sections[prefix + layout.typed_ids_name(group.hop, group.step.right)]
        child = children[:, group.offset : group.offset + group.size]
        child = child.reshape(rows, group.parents, group.fanout)
        parent = parents[:, : group.parents]  # a group's parents: every slot of their table
        for r in range(rows):
            for p in range(group.parents):
                for c in child[r, p]:
                    if c >= 0 and parent[r, p] >= 0:
                        walked[r].add(frozenset((int(parent[r, p]), int(c))))
    return walked


def test_training_beats_chance_clearly_and_reports_auc_ap_and_ranking(split_graph, trained):
    source, _, counts, _, (test, test_y) = split_graph
    result, _ = trained
    assert counts["val"] == counts["test"] == int(0.1 * 4 * N)
    assert result.history["eval_step"] == [10, 20]
    assert result.best_val_auc == max(result.history["val_auc"]) >= 0.75
    assert result.best_step in result.history["eval_step"]
    metrics = evaluate_links(
        result.model,
        source,
        test,
        test_y,
        options=OPTIONS,
        seed=1,
        ranking_negatives=10,
        hits=(1, 5),
        feature_caches=result.feature_caches,
    )
    assert metrics["num_pairs"] == len(test)
    assert metrics["auc"] >= 0.75 and metrics["ap"] >= 0.7  # chance: 0.5
    # ranked against 10 database-drawn negatives, chance MRR is about 0.29
    assert metrics["mrr"] >= 0.4
    assert 0 <= metrics["hits@1"] <= metrics["hits@5"] <= 1
    assert result.model.properties == {"Item": ["features"]}
    assert result.model.feature_dims == {"Item": DIM}


def test_no_held_out_edge_nor_the_pairs_own_is_walked_during_training(split_graph, trained):
    _, splits, _, _, _ = split_graph
    result, spy = trained
    held_out = {frozenset(map(int, e)) for s in ("val", "test") for e in splits[s]}
    model = result.model
    assert len(spy.calls) >= 20  # every training step (and the validation) sampled a pair blob
    walked_any = 0
    for sources, _targets, options, text in spy.calls:
        assert options["exclude_splits"] == ["val", "test"]
        sections = blob.unpack_b64(text)
        rows = len(sections[layout.PAIR_LABELS])
        if options.get("negatives"):
            assert options["negatives"] == 1 and rows == 2 * len(sources)
            assert sections[layout.PAIR_LABELS].tolist() == [1] * len(sources) + [0] * len(sources)
        src = sections["src." + layout.typed_ids_name(0, "Item")][:, 0]
        dst = sections["dst." + layout.typed_ids_name(0, "Item")][:, 0]
        for prefix, spec in (("src.", model.source_spec), ("dst.", model.target_spec)):
            for r, walked in enumerate(_walked(sections, prefix, spec)):
                walked_any += len(walked)
                assert not walked & held_out, (prefix, r, walked & held_out)
                assert frozenset((int(src[r]), int(dst[r]))) not in walked
    assert walked_any > 1000
    # the check can fail: the same pairs sampled without exclude_splits walk held-out edges, and
    # the ablation that keeps the pairs' own relationships walks them
    pairs = splits["val"]
    opts = {**OPTIONS, "source_label": "Item", "seed": 5}
    text = spy.inner.sample_pairs_b64(
        pairs[:, 0].tolist(), pairs[:, 1].tolist(), NN, {}, {**opts, "exclude_splits": ["test"]}
    )
    sections = blob.unpack_b64(text)
    walked = set().union(*_walked(sections, "src.", model.source_spec))
    assert walked & {frozenset(map(int, e)) for e in splits["test"]} == set()
    ds = pair_sample_dataset(
        spy.inner,
        model,
        splits["train"][:64],
        {},
        options={**opts, "exclude_splits": ["val", "test"]},
        keep_pair_edges=True,
        feature_caches=result.feature_caches,
    )
    sections = {k: v.numpy() for k, v in next(iter(ds)).items()}
    own = {frozenset(map(int, e)) for e in splits["train"][:64]}
    seen = set().union(*_walked(sections, "src.", model.source_spec))
    assert own & seen  # visible once the procedure does not remove it


def test_the_model_reads_exactly_the_pair_blobs_sections(split_graph, trained):
    source, splits, _, _, _ = split_graph
    model = trained[0].model
    pairs = splits["train"][:8]
    options = {**OPTIONS, "source_label": "Item", "seed": 2, "negatives": 1}
    data = source.sample_pairs(
        pairs[:, 0].tolist(), pairs[:, 1].tolist(), NN, {"Item": ["features"]}, options
    )
    sections = blob.unpack(data)
    expected = layout.pair_sample_sections(model.source_spec, model.target_spec, {"Item": DIM})
    assert list(sections) == [s.name for s in expected]
    inputs = [s.name for s in expected if s.role in ("features", "mask")]
    assert sorted(model.input_names()) == sorted(inputs)  # (features first, then masks)
    assert model.input_names(masks=False) == [s.name for s in expected if s.role == "features"]
    for name, shape in model.input_shapes(16).items():
        assert sections[name].shape == shape
    logits = np.asarray(model(sections))  # the blob as it comes: extra sections are ignored
    assert logits.shape == (16,)
    # the cached-feature pipeline gives the model the same tensors as features in the blob
    ds = pair_sample_dataset(
        source,
        model,
        pairs,
        {"Item": ["features"]},
        options={k: v for k, v in options.items() if k != "negatives"},
        negatives=1,
        feature_caches=trained[0].feature_caches,
    )
    batch = next(iter(ds))
    for name in inputs:
        np.testing.assert_array_equal(batch[name].numpy(), sections[name], err_msg=name)
    # the config rebuilds the same architecture: the same weights give the same logits
    again = LinkPredictor.from_config(model.get_config())
    again.ensure_built()
    again.set_weights(model.get_weights())
    np.testing.assert_allclose(np.asarray(again(sections)), logits, rtol=1e-6)
    with pytest.raises(ConfigurationError, match=r"inputs: missing dst\.features_h0_Item"):
        model({k: v for k, v in sections.items() if not k.startswith("dst.")})


def _rows_and_features_batches(source, model, caches, pairs):
    """The same pair batch (fixed seed) as per-slot features and as distinct rows."""
    options = {**OPTIONS, "source_label": "Item", "seed": 5}
    common = dict(options=options, negatives=1, feature_caches=caches)
    features = next(
        iter(pair_sample_dataset(source, model, pairs, {"Item": ["features"]}, **common))
    )
    rows = next(
        iter(pair_sample_dataset(source, model, pairs, {"Item": ["features"]}, rows=True, **common))
    )
    return features, rows


def test_the_distinct_rows_path_gives_the_per_slot_logits(split_graph, trained):
    source, splits, _, _, _ = split_graph
    model = trained[0].model
    features, rows = _rows_and_features_batches(
        source, model, trained[0].feature_caches, splits["train"][:24]
    )
    assert not any(k.startswith("src.features_") for k in rows)  # no per-slot features made
    table = rows[ROWS_PREFIX + "Item"]
    assert table.shape[0] < rows["src.index_h2_Item"].shape.num_elements()  # fewer rows than slots
    for name in ("src.features_h1_Item", "dst.features_h2_Item"):
        index = rows[name.replace("features_", "index_")]
        np.testing.assert_array_equal(tf.gather(table, index).numpy(), features[name].numpy())
    want = model(features, training=False).numpy()
    got = model(rows, training=False).numpy()
    np.testing.assert_allclose(got, want, atol=1e-5)
    # the same rows as a sparse table: the first layer per non-zero entry, the same logits
    sparse = {**rows, ROWS_PREFIX + "Item": tf.sparse.from_dense(table)}
    np.testing.assert_allclose(model(sparse, training=False).numpy(), want, atol=1e-5)
    # training: dropout on encode()'s tensors; at a vanishing rate both paths are the function
    tiny = LinkPredictor.from_config({**model.get_config(), "dropout": 1e-7})
    tiny.ensure_built()
    tiny.set_weights(model.get_weights())
    want = tiny(features, training=True).numpy()
    np.testing.assert_allclose(tiny(sparse, training=True).numpy(), want, atol=1e-4)
    np.testing.assert_allclose(tiny(rows, training=True).numpy(), want, atol=1e-4)


def test_training_through_sparse_distinct_rows_lowers_the_loss(split_graph, trained):
    source, splits, _, _, _ = split_graph
    keras.utils.set_random_seed(0)
    model = LinkPredictor.from_config(trained[0].model.get_config())
    model.ensure_built()
    options = {**OPTIONS, "source_label": "Item", "seed": 5}
    ds = pair_sample_dataset(
        source,
        model,
        splits["train"][:64],
        {"Item": ["features"]},
        options=options,
        negatives=1,
        feature_caches=trained[0].feature_caches,
        rows=True,
    )
    rows = next(iter(ds))
    batch = {**rows, ROWS_PREFIX + "Item": tf.sparse.from_dense(rows[ROWS_PREFIX + "Item"])}
    y = tf.cast(batch[layout.PAIR_LABELS], tf.float32)
    variables = model.trainable_link_variables()
    optimizer = keras.optimizers.Adam(0.01)

    @tf.function(autograph=False)
    def step():
        with tf.GradientTape() as tape:
            logits = model(batch, training=True)
            loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(y, logits))
        optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))
        return loss

    def loss():  # without dropout
        logits = model(batch, training=False)
        return float(tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(y, logits)))

    before = loss()
    for _ in range(30):
        step()
    assert loss() < 0.75 * before, (before, loss())


def test_bad_training_arguments_name_what_is_wrong(split_graph):
    source, splits, _, (val, val_y), _ = split_graph
    train = splits["train"]
    with pytest.raises(ConfigurationError, match=r"train_pairs: expected a non-empty \[n, 2\]"):
        train_link_predictor(source, "Item", NN, ["features"], train[:, 0], steps=1)
    with pytest.raises(ConfigurationError, match=r"val_pairs, val_labels: expected both"):
        train_link_predictor(source, "Item", NN, ["features"], train, val, steps=1)
    with pytest.raises(ConfigurationError, match=r"options.negatives: expected none"):
        train_link_predictor(
            source, "Item", NN, ["features"], train, options={"negatives": 2}, steps=1
        )
    with pytest.raises(ConfigurationError, match=r"options.seed: expected no fixed sampling seed"):
        train_link_predictor(source, "Item", NN, ["features"], train, options={"seed": 1})
    with pytest.raises(ConfigurationError, match=r"scorer: expected one of dot, mlp, got 'cos'"):
        train_link_predictor(
            source, "Item", NN, ["features"], train, options=OPTIONS, scorer="cos", steps=1
        )
    with pytest.raises(ConfigurationError, match=r"val_labels: expected one 0/1 label per pair"):
        train_link_predictor(source, "Item", NN, ["features"], train, val, val_y[:3], steps=1)


def test_the_model_classes_are_registered_with_keras_by_name():
    """Keras rebuilds a saved model by its registered name (``package>Class``): each model and
    layer class is registered under its own name."""
    import keras

    from memgraph_tf.client.feature_encoding import LabelEncoder
    from memgraph_tf.client.graphsage import GraphSAGE
    from memgraph_tf.client.typed_graphsage import TypedGraphSAGE

    for cls in (LinkPredictor, TypedGraphSAGE, GraphSAGE, LabelEncoder):
        assert keras.saving.get_registered_object(f"memgraph_tf>{cls.__name__}") is cls
