"""The client: graph sources, tf.data over Cypher, blob pipelines, GraphSAGE training and inference.

- :func:`connect` / :class:`BoltSource` / :class:`EmbeddedSource` -- where blobs and rows come from
  (``sources``); errors in ``errors``.
- :class:`OpenCypherDataset` -- a ``tf.data.Dataset`` over the rows of a Cypher query (``dataset``).
- :func:`opencypher_fn` -- a tensor -> tensor function that runs a query (``fn``).
- :func:`sample_dataset`, :func:`pack_dataset`, :class:`FeatureCache` -- node ids -> procedure call
  -> base64 decode -> unpack op, batched and prefetched (``pipeline``).
- :class:`GraphSAGE`, :func:`train_graphsage`, :func:`evaluate` (``graphsage``);
  :func:`predict_and_write` (``inference``).
- :func:`classify_graph`, :class:`BatchClassifier`, :class:`BundleBackend`, :func:`rest_backend`,
  :func:`grpc_backend` -- batch inference with an exported bundle: resumable, sharded, pipelined
  (``batch``; ``memgraph-tf classify``).

Names are imported lazily, so ``from memgraph_tf.client import connect`` does not import TensorFlow.
"""

from __future__ import annotations

from memgraph_tf.lazy import lazy_attributes

_EXPORTS = {
    "connect": "sources",
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
    "classify_graph": "batch",
    "BatchClassifier": "batch",
    "BatchSummary": "batch",
    "BundleBackend": "batch",
    "ModelBackend": "batch",
    "ServingBackend": "batch",
    "Shard": "batch",
    "rest_backend": "batch",
    "grpc_backend": "batch",
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
    "ModelError": "errors",
    "ModelInputError": "errors",
}

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_attributes(
    __name__, {name: f".{module}" for name, module in _EXPORTS.items()}, globals()
)
