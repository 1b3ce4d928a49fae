"""In-process inference with a model in memory: node ids -> sampled neighbourhoods -> GraphSAGE ->
predictions (:func:`predict`), written back to the graph (:func:`predict_and_write`) under the
same property names as ``memgraph-tf classify`` (:func:`memgraph_tf.client.graphs.property_names`).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
from tqdm.auto import tqdm

from memgraph_tf.client.checks import positive_int
from memgraph_tf.client.errors import ConfigurationError, GraphDataError
from memgraph_tf.client.graphs import DEFAULT_WRITE_PROPERTY, property_names
from memgraph_tf.client.graphsage import GraphSAGE, predict_proba
from memgraph_tf.client.pipeline import FeatureCache
from memgraph_tf.client.sources import GraphSource, quote_name

logger = logging.getLogger(__name__)


class Predictions(NamedTuple):
    """``ids[i]`` was predicted ``classes[i]`` with probability ``scores[i]``; ``probabilities``
    is [n, C]."""

    ids: np.ndarray
    classes: np.ndarray
    scores: np.ndarray
    probabilities: np.ndarray


def draw_seed(base_seed: int, draw: int) -> int:
    """The ``options.seed`` of neighbourhood draw ``draw``: ``base_seed`` itself for draw 0 (so
    one draw samples exactly as a bundle whose options carry that seed), else a stable 63-bit
    mix of both."""
    if draw == 0:
        return int(base_seed)
    digest = hashlib.blake2b(
        f"memgraph-tf/draw/{int(base_seed)}/{int(draw)}".encode(), digest_size=8
    ).digest()
    return int.from_bytes(digest, "little") >> 1


def predict(
    model: GraphSAGE,
    source: GraphSource,
    node_ids: Any,
    *,
    properties: Sequence[str] = ("features",),
    options: Mapping[str, Any] | None = None,
    draws: int = 1,
    batch_size: int = 256,
    feature_cache: FeatureCache | None = None,
    seed: int | None = 0,
    decoder: str = "auto",
) -> Predictions:
    """Predicted class and probability per node, in ``node_ids`` order, averaged over ``draws``
    neighbourhood samples.

    Guarantees: with a seed (``options["seed"]``, else ``seed``) draw ``d`` samples every node with
    ``options.seed = draw_seed(seed, d)``, and the query modules key a sample by (seed, node), so
    a node's prediction does not depend on the other ids, their order, ``batch_size`` or chunking;
    with neither (``seed=None``) every call samples afresh."""
    import tensorflow as tf

    ids = np.asarray(node_ids, dtype=np.int64)
    opts = dict(options or {})
    base = opts.get("seed") if opts.get("seed") is not None else seed
    try:
        if base is None:
            probs = predict_proba(
                model,
                source,
                ids,
                properties=properties,
                options=opts,
                draws=draws,
                batch_size=batch_size,
                feature_cache=feature_cache,
                seed=None,
                decoder=decoder,
            )
        else:
            total = None
            for draw in range(positive_int("draws", draws)):
                part = predict_proba(
                    model,
                    source,
                    ids,
                    properties=properties,
                    options={**opts, "seed": draw_seed(base, draw)},
                    draws=1,
                    batch_size=batch_size,
                    feature_cache=feature_cache,
                    seed=None,
                    decoder=decoder,
                )
                total = part.astype(np.float64) if total is None else total + part
            probs = (total / draws).astype(np.float32)
    except tf.errors.InvalidArgumentError as exc:  # an unknown id or bad features, from tf.data
        message = exc.message.split("<stack traces unavailable>")[-1]
        raise GraphDataError(" ".join(message.split())) from None
    classes = probs.argmax(axis=1)
    return Predictions(ids, classes, probs[np.arange(len(ids)), classes], probs)


def predict_and_write(
    model: GraphSAGE,
    source: GraphSource,
    node_ids: Any = None,
    *,
    property_name: str = DEFAULT_WRITE_PROPERTY,
    version: int = 0,
    write_class_names: bool = False,
    properties: Sequence[str] = ("features",),
    options: Mapping[str, Any] | None = None,
    chunk_size: int = 1024,
    batch_size: int = 256,
    draws: int = 1,
    feature_cache: FeatureCache | None = None,
    seed: int | None = 0,
    progress: bool = True,
    decoder: str = "auto",
) -> int:
    """Predicts ``node_ids`` (default: every node, with ``options["label"]`` if set) chunk by chunk
    and writes each node's prediction under the names batch inference uses
    (:func:`~memgraph_tf.client.graphs.property_names` of ``property_name`` P): ``P`` the class
    (the class index, or with ``write_class_names`` the model's class name), ``P_score`` its
    probability and ``P_version`` the model ``version`` (an in-memory model has none: 0 unless
    given). Before this release the score went to ``predicted_score``, which readers still accept
    for one release (:func:`~memgraph_tf.client.graphs.read_score`).

    Guarantees: nodes are written in chunks of ``chunk_size``, each chunk's class, score and
    version in one statement of one managed write transaction (no node gets a class without its
    score and version), with a tqdm progress bar; with a fixed ``seed`` (the default) each
    node is sampled as :func:`predict` samples it -- keyed by (seed, draw, node), never by its
    position -- so any subset, order or chunking writes the same values and an interrupted run can
    simply be run again (on all ids or the remaining ones). Returns the number of nodes written.
    An id that matches no node, or a node whose features cannot be packed, raises
    :class:`GraphDataError` with the procedure's message (nothing of its chunk is written).

    For exported bundles, resumable runs, shards and serving endpoints use
    :mod:`memgraph_tf.batch` (``memgraph-tf classify``).
    """
    names = property_names(property_name)
    for name in names:
        quote_name(name, "property_name")
    if not isinstance(version, int) or isinstance(version, bool):
        raise ConfigurationError(f"version: expected an integer model version, got {version!r}")
    chunk_size = positive_int("chunk_size", chunk_size)
    if write_class_names and model.class_names is None:
        raise ConfigurationError(
            "write_class_names: expected a model with class_names, got a model without them"
        )
    opts = {k: v for k, v in dict(options or {}).items() if k != "label_property"}
    id_property = opts.get("id_property")
    label = opts.get("label") if id_property else None
    if node_ids is None:
        node_ids = source.node_ids(label=opts.get("label"), id_property=id_property)
    ids = np.asarray(node_ids, dtype=np.int64)
    written = 0
    with tqdm(total=len(ids), unit="node", desc="predict", disable=not progress) as bar:
        for start in range(0, len(ids), chunk_size):
            chunk = ids[start : start + chunk_size]
            pred = predict(
                model,
                source,
                chunk,
                properties=properties,
                options=opts,
                draws=draws,
                batch_size=batch_size,
                feature_cache=feature_cache,
                seed=seed,
                decoder=decoder,
            )
            classes = (
                [model.class_names[c] for c in pred.classes]
                if write_class_names
                else [int(c) for c in pred.classes]
            )
            columns: dict[str, list[Any]] = {
                names[0]: classes,
                names[1]: [float(s) for s in pred.scores],
                names[2]: [version] * len(chunk),
            }
            written += source.write_columns(
                chunk.tolist(), columns, id_property=id_property, label=label, batch_size=chunk_size
            )
            bar.update(len(chunk))
    if written < len(ids):
        logger.warning(
            "predictions of %d node(s) matched no node and were not written", len(ids) - written
        )
    logger.info("wrote predictions of %d nodes to %r", written, property_name)
    return written
