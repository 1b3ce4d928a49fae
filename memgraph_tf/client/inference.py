"""Batch inference: node ids -> sampled neighbourhoods -> GraphSAGE -> predictions written back to the graph."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
from tqdm.auto import tqdm

from memgraph_tf.client.errors import ConfigurationError, GraphDataError
from memgraph_tf.client.graphsage import GraphSAGE, predict_proba
from memgraph_tf.client.pipeline import FeatureCache
from memgraph_tf.client.sources import GraphSource, _quote_name

logger = logging.getLogger(__name__)


def _positive(name: str, value: Any) -> int:
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 1:
        raise ConfigurationError(f"{name}: expected an integer >= 1, got {value!r}")
    return int(value)


class Predictions(NamedTuple):
    """``ids[i]`` was predicted ``classes[i]`` with probability ``scores[i]``; ``probabilities`` [n, C]."""

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
            for draw in range(_positive("draws", draws)):
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
    except (
        tf.errors.InvalidArgumentError
    ) as exc:  # an unknown id or bad features, raised in tf.data
        message = exc.message.split("<stack traces unavailable>")[-1]
        raise GraphDataError(" ".join(message.split())) from None
    classes = probs.argmax(axis=1)
    return Predictions(ids, classes, probs[np.arange(len(ids)), classes], probs)


def predict_and_write(
    model: GraphSAGE,
    source: GraphSource,
    node_ids: Any = None,
    *,
    property_name: str = "predicted_class",
    score_property: str | None = "predicted_score",
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
    and writes each node's class to ``property_name`` (the class index, or with
    ``write_class_names`` the model's class name) and its probability to ``score_property``.

    Guarantees: nodes are written in chunks of ``chunk_size``, each chunk's classes and scores in
    one statement of one managed write transaction (no node gets a class without its score), with
    a tqdm progress bar; with a fixed ``seed`` (the default) each
    node is sampled as :func:`predict` samples it -- keyed by (seed, draw, node), never by its
    position -- so any subset, order or chunking writes the same values and an interrupted run can
    simply be run again (on all ids or the remaining ones). Returns the number of nodes written.
    An id that matches no node, or a node whose features cannot be packed, raises
    :class:`GraphDataError` with the procedure's message (nothing of its chunk is written).

    For exported bundles, resumable runs, shards and serving endpoints use
    :mod:`memgraph_tf.client.batch` (``memgraph-tf classify``).
    """
    _quote_name(property_name, "property_name")
    if score_property is not None:
        _quote_name(score_property, "score_property")
        if score_property == property_name:
            raise ConfigurationError(
                f"score_property: expected a property other than property_name "
                f"({property_name!r}), got the same"
            )
    if not isinstance(chunk_size, int) or isinstance(chunk_size, bool) or chunk_size < 1:
        raise ConfigurationError(f"chunk_size: expected an integer >= 1, got {chunk_size!r}")
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
            columns: dict[str, list[Any]] = {property_name: classes}
            if score_property is not None:
                columns[score_property] = [float(s) for s in pred.scores]
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
