"""The client: graph sources, tf.data over Cypher, blob pipelines, GraphSAGE training and inference.

- :func:`connect` / :func:`open_graph` / :class:`BoltSource` / :class:`EmbeddedSource` -- where
  blobs and rows come from (``sources``; ``open_graph`` opens ``bolt://...`` and
  ``embedded:NAME`` URIs); errors in ``errors``.
- :class:`OpenCypherDataset` -- a ``tf.data.Dataset`` over the rows of a Cypher query (``dataset``).
- :func:`opencypher_fn` -- a tensor -> tensor function that runs a query (``fn``).
- :func:`sample_dataset`, :func:`pack_dataset`, :class:`FeatureCache` -- node ids -> procedure call
  -> base64 decode -> unpack op, batched and prefetched (``pipeline``).
- Models: :class:`GraphSAGE` (``graphsage``), :class:`TypedGraphSAGE` (``typed_graphsage``),
  :class:`LinkPredictor` (``link_prediction``), sharing one encoder core (``encoder``).
- Training: one trainer (:func:`fit_task`, ``trainer``) driving a task
  (:class:`NodeClassification`, :class:`LinkPrediction`, ``tasks``); its presets
  :func:`train_graphsage`, :func:`train_typed_graphsage`, :func:`train_link_predictor`, and the
  evaluations :func:`evaluate`, :func:`evaluate_typed`, :func:`evaluate_links`;
  :func:`predict` / :func:`predict_and_write` (``inference``).
- :class:`NodeSelection`, :class:`NodeTable`, :class:`Shard`, :func:`property_names` -- which
  nodes batch inference reads, keyset paging and the write-back of predictions (``graphs``).

Batch inference with an exported bundle (``memgraph-tf classify``) lives in
:mod:`memgraph_tf.batch`, above this package. Deprecated aliases:
``classify_graph``, ``BatchClassifier``, ``BatchSummary``, ``BundleBackend``, ``ModelBackend``,
``ServingBackend``, ``rest_backend`` and ``grpc_backend`` also import from here
(``_MOVED_TO_BATCH``: each is the object of ``memgraph_tf.batch``, imported on first use); import
them from :mod:`memgraph_tf.batch`.

Names are imported lazily, so ``from memgraph_tf.client import connect`` does not import TensorFlow.
"""

from __future__ import annotations

from memgraph_tf.lazy import lazy_attributes

_EXPORTS = {
    "connect": "sources",
    "open_graph": "sources",
    "BoltSource": "sources",
    "EmbeddedSource": "sources",
    "GraphSource": "sources",
    "CypherGraphAccess": "sources",
    "OpenCypherDataset": "dataset",
    "opencypher_fn": "fn",
    "sample_dataset": "pipeline",
    "pack_dataset": "pipeline",
    "FeatureCache": "pipeline",
    "GraphSAGE": "graphsage",
    "train_graphsage": "graphsage",
    "evaluate": "graphsage",
    "predict_proba": "graphsage",
    "TrainResult": "trainer",
    "TypedGraphSAGE": "typed_graphsage",
    "train_typed_graphsage": "typed_graphsage",
    "evaluate_typed": "typed_graphsage",
    "predict_typed_proba": "typed_graphsage",
    "LinkPredictor": "link_prediction",
    "LinkTrainResult": "link_prediction",
    "train_link_predictor": "link_prediction",
    "evaluate_links": "link_prediction",
    "predict_links": "link_prediction",
    "Task": "tasks",
    "NodeClassification": "tasks",
    "LinkPrediction": "tasks",
    "fit_task": "trainer",
    "predict_task": "trainer",
    "predict": "inference",
    "predict_and_write": "inference",
    "NodeSelection": "graphs",
    "NodeTable": "graphs",
    "Shard": "graphs",
    "property_names": "graphs",
    "ClientError": "errors",
    "ConfigurationError": "errors",
    "GraphConnectionError": "errors",
    "ServerUnavailable": "errors",
    "AuthenticationError": "errors",
    "QueryError": "errors",
    "ProcedureUnavailable": "errors",
    "ResultError": "errors",
    "NullValueError": "errors",
    "ValueTypeError": "errors",
    "ValueLengthError": "errors",
    "GraphDataError": "errors",
    "InvalidNodeError": "errors",
    "KeysetPagingError": "errors",
    "ModelError": "errors",
    "ModelInputError": "errors",
}

# Compatibility aliases, kept for one release: batch inference moved to memgraph_tf.batch (a
# layer above this one). Resolved on first use, so importing this package imports nothing of it.
_MOVED_TO_BATCH = {
    "classify_graph": "memgraph_tf.batch.pipeline",
    "BatchClassifier": "memgraph_tf.batch.pipeline",
    "BatchSummary": "memgraph_tf.batch.summary",
    "BundleBackend": "memgraph_tf.batch.backends",
    "ModelBackend": "memgraph_tf.batch.backends",
    "ServingBackend": "memgraph_tf.batch.backends",
    "rest_backend": "memgraph_tf.batch.backends",
    "grpc_backend": "memgraph_tf.batch.backends",
}

# what users import (CypherGraphAccess stays reachable by name for the sources' own use)
__all__ = [
    "AuthenticationError",
    "BatchClassifier",
    "BatchSummary",
    "BoltSource",
    "BundleBackend",
    "ClientError",
    "ConfigurationError",
    "EmbeddedSource",
    "FeatureCache",
    "GraphConnectionError",
    "GraphDataError",
    "GraphSAGE",
    "GraphSource",
    "InvalidNodeError",
    "KeysetPagingError",
    "LinkPrediction",
    "LinkPredictor",
    "LinkTrainResult",
    "ModelBackend",
    "ModelError",
    "ModelInputError",
    "NodeClassification",
    "NodeSelection",
    "NodeTable",
    "NullValueError",
    "OpenCypherDataset",
    "ProcedureUnavailable",
    "QueryError",
    "ResultError",
    "ServerUnavailable",
    "ServingBackend",
    "Shard",
    "Task",
    "TrainResult",
    "TypedGraphSAGE",
    "ValueLengthError",
    "ValueTypeError",
    "classify_graph",
    "connect",
    "evaluate",
    "evaluate_links",
    "evaluate_typed",
    "fit_task",
    "grpc_backend",
    "open_graph",
    "opencypher_fn",
    "pack_dataset",
    "predict",
    "predict_and_write",
    "predict_links",
    "predict_proba",
    "predict_task",
    "predict_typed_proba",
    "property_names",
    "rest_backend",
    "sample_dataset",
    "train_graphsage",
    "train_link_predictor",
    "train_typed_graphsage",
]


__getattr__, __dir__ = lazy_attributes(
    __name__,
    {**{name: f".{module}" for name, module in _EXPORTS.items()}, **_MOVED_TO_BATCH},
    globals(),
)
