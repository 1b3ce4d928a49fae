"""One small shop graph (memgraph_tf.typed_datasets) and one typed GraphSAGE trained on it through
the embedded query module, built once per test session and shared by the typed training, bundle,
serving and batch tests (tests/client/test_typed_training.py, tests/serving/test_typed_bundles.py,
tests/client/test_typed_batch.py)."""

from __future__ import annotations

import atexit
import functools
import shutil
import tempfile

from tests.graphs import SHORT_RUN

NN = {
    "(:User)-[:BOUGHT]->(:Product)": [5, 0],
    "(:User)-[:FOLLOWS]->(:User)": [3, 0],
    "(:Product)-[:IN]->(:Category)": [0, 1],
}
PROPS = {"User": ["features"], "Product": ["features"], "Category": ["features"]}
OPTIONS = {"id_property": "id"}
"""Seed keys are the ``id`` property of the :User nodes (ids are numbered per label)."""


@functools.cache
def shop():
    """``(graph, embedded graph, internal ids per label, EmbeddedSource)``: 600 users, 2 classes,
    a strong planted signal (best accuracy ~0.999; chance 0.5)."""
    from memgraph_tf.client import EmbeddedSource
    from memgraph_tf.typed_datasets import shop_graph, typed_embedded_graph

    graph = shop_graph(
        600, num_products=120, num_categories=4, num_classes=2, follows_per_user=3, signal=0.9
    )
    embedded, ids = typed_embedded_graph(graph)
    return graph, embedded, ids, EmbeddedSource(embedded)


def train_users(graph, source, nn, props, options, **kwargs):
    """``train_typed_graphsage`` on ``source`` with :User seeds: ``graph``'s train and val ids,
    the classes ``even`` and ``odd``; ``kwargs`` go to the trainer."""
    from memgraph_tf.client.typed_graphsage import train_typed_graphsage

    return train_typed_graphsage(
        source,
        "User",
        nn,
        props,
        graph.ids("train"),
        graph.ids("val"),
        options=options,
        class_names=["even", "odd"],
        **kwargs,
    )


@functools.cache
def trained():
    """The :class:`~memgraph_tf.client.trainer.TrainResult` of ``train_typed_graphsage`` on
    :func:`shop` (20 steps, seed 0)."""
    graph, _, _, source = shop()
    return train_users(graph, source, NN, PROPS, OPTIONS, dropout=0.1, **SHORT_RUN)


@functools.cache
def bundle_base() -> str:
    """A folder for the session's typed bundles (removed at exit)."""
    path = tempfile.mkdtemp(prefix="typed-bundles-")
    atexit.register(shutil.rmtree, path, True)
    return path


@functools.cache
def bundle(use_op: bool = True):
    """The trained model exported (once per session) as an op bundle (model ``shop``) or op-free
    (model ``shop_free``), version 1, sampling with :data:`OPTIONS`."""
    from memgraph_tf.serving.export import export_bundle

    name = "shop" if use_op else "shop_free"
    return export_bundle(
        trained().model, bundle_base(), name, 1, use_op=use_op, sample_options=OPTIONS
    )
