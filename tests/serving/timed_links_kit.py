"""Shared parts of the tests of link models with a timed step
(tests/serving/test_timed_link_bundles.py, tests/client/test_score_links.py,
tests/beam/test_link_scoring.py): a small shop graph whose :FOLLOWS relationships carry a time
``ts``; an initialised (not trained) :class:`LinkPredictor` scoring (:User)-(:Product) pairs whose
source neighbourhood walks :FOLLOWS as of a time and whose target neighbourhood has no timed step;
its bundles; and the in-process scores every served and batch path must give (``predict_links``
on ``[n, 3]`` pairs whose time column is the time). The contract is about the plumbing, not the
accuracy."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

TIMED = "(:User)-[:FOLLOWS {time: ts}]->(:User)"
NN = {"source": {TIMED: [3, 2]}, "target": {"(:Product)<-[:BOUGHT]-(:User)": [3]}}
PROPS = {"User": ["features"], "Product": ["features"]}
OPTIONS = {"id_property": "id", "time_order": "most_recent"}
#: A time that leaves out part of the :FOLLOWS relationships (their ``ts`` spread over 0..99).
AT = 40


@functools.cache
def shop() -> Any:
    """The typed shop graph (200 users, 40 products): its :class:`TypedGraph`."""
    from memgraph_tf.typed_datasets import shop_graph

    return shop_graph(
        200, num_products=40, num_categories=4, num_classes=2, follows_per_user=4, signal=0.9
    )


def graph() -> Any:
    """A fresh :class:`EmbeddedSource` of :func:`shop` (each caller its own, as batch scoring
    writes into it): :FOLLOWS relationships with ``ts`` = ``13 k mod 100``."""
    from memgraph_tf.client import EmbeddedSource
    from memgraph_tf.embedded import EmbeddedGraph
    from memgraph_tf.typed_datasets import node_properties

    typed = shop()
    g = EmbeddedGraph()
    ids = {
        label: [g.add_node([label], p) for p in node_properties(typed, label)]
        for label in typed.node_sets
    }
    for (src, rel, dst), edges in typed.edge_sets.items():
        pairs = zip(edges.source.tolist(), edges.target.tolist(), strict=True)
        for k, (a, b) in enumerate(pairs):
            props = {"ts": (13 * k) % 100} if rel == "FOLLOWS" else None
            g.add_edge(ids[src][a], ids[dst][b], rel, props)
    return EmbeddedSource(g)


@functools.cache
def model() -> Any:
    """The initialised link model (weights from a fixed seed), with its properties set."""
    import keras

    from memgraph_tf.client.link_prediction import LinkPredictor

    keras.utils.set_random_seed(0)
    m = LinkPredictor(
        "User", NN, {"User": 16, "Product": 12}, target_label="Product", hidden_units=8
    )
    m.properties = dict(PROPS)
    return m.ensure_built()


def export(base: Any, name: str = "timed_links", decoder: str = "op") -> Any:
    """The model's link bundle ``base/name/1`` (:class:`BundleInfo`), sampling with
    :data:`OPTIONS`."""
    from memgraph_tf.serving.export_links import export_link_bundle

    return export_link_bundle(model(), base, name, 1, decoder=decoder, sample_options=OPTIONS)


def non_edges(count: int = 6) -> np.ndarray:
    """``[count, 2]`` (user, product) keys joined by no :BOUGHT relationship."""
    typed = shop()
    bought = typed.edge_sets["User", "BOUGHT", "Product"]
    joined = set(zip(bought.source.tolist(), bought.target.tolist(), strict=True))
    out = []
    for user in range(0, 200, 7):
        product = (user * 3) % 40
        if (user, product) not in joined:
            out.append((user, product))
    return np.array(out[:count], dtype=np.int64)


def in_process(source: Any, pairs: Any, at: int | None) -> np.ndarray:
    """``predict_links`` of the model on ``pairs`` as of ``at`` (None: "now",
    :data:`~memgraph_tf.serving.bundle.NOW_TIME`) with the inference seed."""
    from memgraph_tf.client.link_prediction import predict_links
    from memgraph_tf.serving import bundle

    pairs = np.asarray(pairs, dtype=np.int64)[:, :2]
    when = bundle.NOW_TIME if at is None else at
    timed = np.c_[pairs, np.full(len(pairs), when, dtype=np.int64)]
    options = {**OPTIONS, "seed": bundle.DEFAULT_SEED}
    return predict_links(model(), source, timed, options=options)
