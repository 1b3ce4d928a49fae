"""The client: graph sources, tf.data over Cypher, blob pipelines, GraphSAGE training and inference.

- :func:`connect` / :func:`open_graph` / :class:`BoltSource` / :class:`EmbeddedSource` -- where
  blobs and rows come from (``sources``; ``open_graph`` opens ``bolt://...`` and
  ``embedded:NAME`` URIs); errors in ``errors``.
- :class:`OpenCypherDataset` -- a ``tf.data.Dataset`` over the rows of a Cypher query (``dataset``).
- :func:`opencypher_fn` -- a tensor -> tensor function that runs a query (``fn``).
- :func:`sample_dataset`, :func:`pack_dataset`, :class:`FeatureCache` -- node ids -> procedure call
  -> base64 decode -> unpack op, batched and prefetched (``pipeline``).
- :class:`GraphSAGE`, :func:`train_graphsage`, :func:`evaluate` (``graphsage``);
  :func:`predict_and_write` (``inference``).
- :class:`NodeSelection`, :class:`NodeTable`, :class:`Shard`, :func:`property_names` -- which
  nodes batch inference reads, keyset paging and the write-back of predictions (``graphs``).

Batch inference with an exported bundle (``memgraph-tf classify``) lives in
:mod:`memgraph_tf.batch`, above this package. Its names that this package used to export --
``classify_graph``, ``BatchClassifier``, ``BatchSummary``, ``BundleBackend``, ``ModelBackend``,
``ServingBackend``, ``rest_backend``, ``grpc_backend`` -- stay importable from here as
compatibility aliases for one release (``_MOVED_TO_BATCH``: each is the object of
``memgraph_tf.batch``, imported on first use); import them from :mod:`memgraph_tf.batch`.

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
    "TrainResult": "graphsage",
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

__all__ = sorted([*_EXPORTS, *_MOVED_TO_BATCH])


__getattr__, __dir__ = lazy_attributes(
    __name__,
    {**{name: f".{module}" for name, module in _EXPORTS.items()}, **_MOVED_TO_BATCH},
    globals(),
)
