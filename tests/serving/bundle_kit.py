"""Checks the typed bundle tests share: a bundle's answers by node id through its signature,
over REST and in batch inference. Imported by name: ``from tests.serving.bundle_kit import
classified_over_rest``."""

from __future__ import annotations

import pathlib
from collections.abc import Sequence
from typing import Any

import numpy as np
import requests


def model_inputs(sections: dict[str, Any], names: Sequence[str]) -> dict[str, Any]:
    """The inputs ``names`` of a model from a blob's unpacked ``sections`` (``blob.unpack``):
    strings as ``tf.string`` tensors, a ragged section (a raw bag) as its values and its
    ``NAME.row_splits`` (int64), the rest as unpacked."""
    import tensorflow as tf

    from memgraph_tf import blob

    inputs = {}
    for name, value in sections.items():
        if isinstance(value, blob.Ragged):
            inputs[name] = tf.constant(list(value.values), tf.string)
            inputs[name + ".row_splits"] = tf.constant(value.row_splits, tf.int64)
        elif value.dtype == object:
            inputs[name] = tf.constant(value.tolist(), tf.string)
        else:
            inputs[name] = value
    return {k: inputs[k] for k in names}


def predicted_by_node_id(
    bundle_path: pathlib.Path, source: Any, ids: Sequence[int], check: int
) -> tuple[list[bytes], np.ndarray]:
    """``(blobs, scores)``: the blobs the bundle at ``bundle_path`` samples from ``source`` for
    ``ids`` (one call, cut per node) and its predict signature's scores on them (the op loaded).
    Asserts that the blob of ``ids[check]`` is what ``sample_typed`` writes for it alone."""
    import tensorflow as tf

    from memgraph_tf import ops
    from memgraph_tf.serving import bundle
    from memgraph_tf.serving.neighbourhoods import fetch_blobs

    sampling = bundle.inference_sampling(bundle.read_bundle_config(bundle_path))
    blobs = fetch_blobs(source, ids, sampling)
    nn, props, opts = sampling.typed_arguments()
    assert blobs[check] == source.sample_typed([ids[check]], nn, props, opts)
    ops.load_library()
    loaded = tf.saved_model.load(str(bundle_path))
    scores = loaded.signatures[bundle.PREDICT_SIGNATURE](blobs=tf.constant(blobs))["scores"]
    return blobs, scores.numpy()


def classified_over_rest(
    bundle_path: pathlib.Path, source: Any, model: str, ids: Sequence[int], **server_args: Any
) -> np.ndarray:
    """The probabilities a model server over ``source`` serving the bundle at ``bundle_path``
    answers to REST ``:classify`` of ``model`` with one ``{"node_id"}`` example per id: a row
    per id, a column per class in the bundle's ``class_names`` order (``server_args`` go to
    ``ModelServer``). Asserts a 200."""
    from memgraph_tf.serving import bundle
    from memgraph_tf.serving.model_server import ModelServer
    from memgraph_tf.serving.server import start_server

    names = bundle.read_bundle_config(bundle_path).class_names
    ms = ModelServer(bundle_path.parent, graph_source=source, **server_args)
    try:
        with start_server(ms) as rest:
            r = requests.post(
                f"{rest.url}/v1/models/{model}:classify",
                json={"examples": [{"node_id": i} for i in ids]},
                timeout=60,
            )
    finally:
        ms.close()
    assert r.status_code == 200, r.text
    return np.array([[dict(row)[n] for n in names] for row in r.json()["results"]])


def assert_batch_writes_classes(
    source: Any,
    bundle_path: pathlib.Path,
    prop: str,
    *,
    label: str,
    nodes: int,
    ids: Sequence[int],
    probs: np.ndarray,
    class_names: Sequence[str],
) -> None:
    """``classify_graph`` over ``source`` with the bundle at ``bundle_path`` classifies all
    ``nodes`` nodes, none failing, and writes, for the ``label`` nodes of ``ids`` (their ``id``
    property), the class of highest probability in ``probs`` (a row per id) and its score
    under ``prop``'s property names."""
    from memgraph_tf.batch import BundleBackend, classify_graph
    from memgraph_tf.client.node_tables import property_names

    cls, score, _ = property_names(prop)
    with BundleBackend(bundle_path) as backend:
        run = classify_graph(source, backend, write_property=prop, batch_size=64, progress=False)
    assert (run.classified, run.failed) == (nodes, 0)
    graph = source.graph
    by_key = {graph.get_property(n, "id"): n for n in graph.nodes(label)}
    for row, key in zip(probs, ids):
        node = by_key[key]
        assert graph.get_property(node, cls) == class_names[int(row.argmax())]
        np.testing.assert_allclose(graph.get_property(node, score), row.max(), rtol=1e-5)


def scores_by_embeddings(loaded: Any, sampling: Any, source: Any, pairs: np.ndarray) -> np.ndarray:
    """A loaded link bundle's scores of ``pairs`` (``[n, 2]`` ids) the two-tower way: each
    role's ``sample_typed`` blobs (``sampling.role_arguments``) through its ``embed_source`` /
    ``embed_target`` signature, then ``score_embeddings`` on the two embeddings."""
    import tensorflow as tf

    from memgraph_tf.serving import bundle
    from memgraph_tf.serving.neighbourhoods import split_typed_blob

    z = {}
    for role, column, sig in (
        ("source", 0, bundle.EMBED_SOURCE_SIGNATURE),
        ("target", 1, bundle.EMBED_TARGET_SIGNATURE),
    ):
        nn, props, opts = sampling.role_arguments(role)
        ids = pairs[:, column].tolist()
        role_blobs = split_typed_blob(source.sample_typed(ids, nn, props, opts), len(ids))
        z[role] = loaded.signatures[sig](blobs=tf.constant(role_blobs))[bundle.EMBEDDINGS_OUTPUT]
    return loaded.signatures[bundle.SCORE_EMBEDDINGS_SIGNATURE](
        z_source=z["source"], z_target=z["target"]
    )[bundle.REGRESS_OUTPUT].numpy()


def regressed_over_rest(source: Any, bundle_path: pathlib.Path, pairs: Any) -> np.ndarray:
    """The scores a model server over ``source`` serving the link bundle at ``bundle_path`` (as
    model ``links``) answers to REST ``:regress`` with one ``{"source_id", "target_id"}``
    example per pair of ``pairs``. Asserts a 200."""
    from memgraph_tf.serving.model_config import ModelEntry
    from memgraph_tf.serving.model_server import ModelServer
    from memgraph_tf.serving.server import start_server

    ms = ModelServer(model_config=[ModelEntry("links", bundle_path.parent)], graph_source=source)
    server = start_server(ms)
    try:
        examples = [{"source_id": int(s), "target_id": int(t)} for s, t in pairs]
        r = requests.post(
            f"{server.url}/v1/models/links:regress", json={"examples": examples}, timeout=60
        )
    finally:
        server.close()
        ms.close()
    assert r.status_code == 200, r.text
    return np.array(r.json()["results"])
