"""Batch inference: classify the nodes of a graph with an exported model and write the answers back
(``memgraph-tf classify``; docs/batch-inference.md). Above :mod:`memgraph_tf.client` (graph
sources, node selection, paging and write-back: :mod:`memgraph_tf.client.node_tables`) and
:mod:`memgraph_tf.serving` (bundles, serving clients, neighbourhood fetching).

- :mod:`~memgraph_tf.batch.backends` -- model backends: :class:`ModelBackend`,
  :class:`BundleBackend` (a bundle in-process), :class:`ServingBackend`, :func:`rest_backend`,
  :func:`grpc_backend`; the version directory a bundle path means (:func:`resolve_version_dir`)
  and the sampling settings of a run (:func:`sampling_for`);
- :mod:`~memgraph_tf.batch.classifier` -- :class:`BatchClassifier` and :func:`classify_graph`: the
  resumable, sharded, pipelined run (fetch threads or forked fetch processes);
- :mod:`~memgraph_tf.batch.embedder` -- :class:`EmbedBackend`, :class:`BatchEmbedder` and
  :func:`embed_nodes`: a bundle's encoder over every node, the embedding written back (the
  classifier's run); :mod:`~memgraph_tf.batch.vectors` -- Memgraph's vector index from the client;
- :mod:`~memgraph_tf.batch.summary` -- :class:`RunSummary` and :class:`BatchSummary`, what a run
  reports (the Beam runner's ``BeamSummary`` is a :class:`RunSummary` too).

:class:`Shard`, :func:`check_where` and :func:`property_names` live in the client layer
(:mod:`memgraph_tf.client.node_tables`) and are re-exported here. Names are imported on first use,
so
``import memgraph_tf.batch`` imports neither TensorFlow nor the Bolt driver.
"""

from __future__ import annotations

from memgraph_tf.lazy import lazy_attributes

_EXPORTS = {
    "DEFAULT_SEED": ".backends",
    "ModelBackend": ".backends",
    "BundleBackend": ".backends",
    "ServingBackend": ".backends",
    "rest_backend": ".backends",
    "grpc_backend": ".backends",
    "resolve_version_dir": ".backends",
    "sampling_for": ".backends",
    "DEFAULT_BATCH_SIZE": ".classifier",
    "BatchClassifier": ".classifier",
    "classify_graph": ".classifier",
    "isolate": ".classifier",
    "EmbedBackend": ".embedder",
    "BatchEmbedder": ".embedder",
    "embed_nodes": ".embedder",
    "LinkBackend": ".link_scoring",
    "BundleLinkBackend": ".link_scoring",
    "ModelLinkBackend": ".link_scoring",
    "score_links": ".link_scoring",
    "RunSummary": ".summary",
    "BatchSummary": ".summary",
    "DEFAULT_WRITE_PROPERTY": "memgraph_tf.client.node_tables",
    "Shard": "memgraph_tf.client.node_tables",
    "check_where": "memgraph_tf.client.node_tables",
    "property_names": "memgraph_tf.client.node_tables",
}

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_attributes(__name__, _EXPORTS, globals())
