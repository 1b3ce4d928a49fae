"""Batch inference with a typed bundle: ``memgraph-tf classify``'s
pipeline (:func:`memgraph_tf.batch.classify_graph` with a :class:`~memgraph_tf.batch.
BundleBackend`) selects the bundle's seed label (its ``options.label``), samples each node's
typed blob with the bundle's settings (the serving fetcher's typed path) and writes every target
node once; a second run finds them all up to date; other labels are never written."""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from memgraph_tf import blob
from memgraph_tf.client.graphs import property_names
from memgraph_tf.serving import bundle
from tests.client import typed_kit as kit


def test_classify_writes_every_target_node_once():
    from memgraph_tf.batch import BundleBackend, classify_graph

    graph, embedded, ids, source = kit.shop()
    info = kit.bundle(True)
    prop = "typed_class"
    cls, score, version = property_names(prop)
    with BundleBackend(info.path) as backend:
        first = classify_graph(source, backend, write_property=prop, batch_size=128, progress=False)
        again = classify_graph(source, backend, write_property=prop, progress=False)
    users = graph.node_sets["User"].size
    assert (first.total, first.classified, first.failed, first.skipped) == (users, users, 0, 0)
    assert (again.classified, again.up_to_date) == (0, users)
    for label, internal in ids.items():
        written = [embedded.get_property(i, cls) is not None for i in internal]
        assert all(written) if label == "User" else not any(written), label
    # the written class and score are the model's on the node's own typed blob
    model = kit.trained().model
    sample = [0, 7, 123]
    opts = {**kit.OPTIONS, "label": "User", "seed": bundle.DEFAULT_SEED}
    x = blob.unpack(source.sample_typed(sample, kit.NN, kit.PROPS, opts))
    probs = tf.nn.softmax(model({k: x[k] for k in model.input_names()})).numpy()
    for row, key in zip(probs, sample):
        node = ids["User"][key]
        assert embedded.get_property(node, cls) == model.class_names[int(row.argmax())]
        np.testing.assert_allclose(embedded.get_property(node, score), row.max(), rtol=1e-5)
        assert embedded.get_property(node, version) == 1
