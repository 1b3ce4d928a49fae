"""Batch inference and neighbourhood export on Apache Beam (``pip install 'memgraph-tf[beam]'``):
the same work as ``memgraph-tf classify``, spread over the workers of a Dask cluster (Beam's
DaskRunner), Flink, Spark, Dataflow or Beam's DirectRunner. See docs/scaling.md.

Composable transforms (:mod:`memgraph_tf.beam.transforms`)::

    import apache_beam as beam
    from memgraph_tf.beam import ClassifyNodes, GraphSpec, ModelSpec, create_pipeline

    graph = GraphSpec("bolt://memgraph:7687")  # workers log in with MEMGRAPH_TF_USER / _PASSWORD
    model = ModelSpec.resolve(bundle="models/GraphSage")
    with create_pipeline("DirectRunner", num_workers=4, running_mode="multi_processing") as p:
        p | ClassifyNodes(graph, model, batch_size=1024)

* :class:`ReadNodeIds` -- node keys by key range (ranges cut on a worker, handed out by a
  reshuffle, read by keyset pages), each node once;
* :class:`FetchNeighbourhoods` -- per-node blobs through the ``tf_features`` query modules (or the
  Bolt fallback, or the embedded runtime), sampling keyed by ``(seed, node)``;
* :class:`ClassifyBlobs` -- RunInference with :class:`BlobModelHandler` (a bundle in-process, op or
  op-free, or TF Serving over REST / gRPC);
* :class:`WritePredictions` -- class, score and version in one ``UNWIND ... SET`` per batch,
  leaving nodes that already carry this version alone (retried bundles write nothing twice);
* :class:`ClassifyNodes` -- the four above; :class:`ExportNeighbourhoods` -- blobs as TFRecord
  files of ``tf.Example`` s, for training at scale.

The command-line hooks (:func:`add_runner_arguments`, :func:`run_classify_pipeline`) and
:mod:`memgraph_tf.beam.runner` import no Beam until a pipeline runs; the transforms need it
(importing them without Beam raises ImportError naming the extra).
"""

from __future__ import annotations

import logging

from memgraph_tf.beam.runner import (
    BEAM_MISSING,
    RUNNERS,
    BeamSummary,
    add_runner_arguments,
    classify_with_beam,
    create_pipeline,
    require_beam,
    run_classify_pipeline,
)
from memgraph_tf.lazy import lazy_attributes

logger = logging.getLogger(__name__)

_LAZY = {
    "GraphSpec": "memgraph_tf.beam.graph_specs",
    "NodeSelection": "memgraph_tf.beam.graph_specs",
    "register_graph": "memgraph_tf.beam.graph_specs",
    "unregister_graph": "memgraph_tf.beam.graph_specs",
    "ModelSpec": "memgraph_tf.beam.models",
    "sampling_for": "memgraph_tf.beam.models",
    "BlobModelHandler": "memgraph_tf.beam.transforms",
    "ClassifyBlobs": "memgraph_tf.beam.transforms",
    "ClassifyNodes": "memgraph_tf.beam.transforms",
    "ExportNeighbourhoods": "memgraph_tf.beam.transforms",
    "FetchNeighbourhoods": "memgraph_tf.beam.transforms",
    "NodeScan": "memgraph_tf.beam.transforms",
    "ReadNodeIds": "memgraph_tf.beam.transforms",
    "WritePredictions": "memgraph_tf.beam.transforms",
    "ScoreLinks": "memgraph_tf.beam.link_scoring",
    "read_exported": "memgraph_tf.beam.transforms",
}


def _beam_for(module: str) -> None:
    if module.endswith(
        ("transforms", "link_scoring")
    ):  # the modules that import Beam at import time
        require_beam()


__getattr__, __dir__ = lazy_attributes(__name__, _LAZY, globals(), before_import=_beam_for)


__all__ = [
    "BEAM_MISSING",
    "RUNNERS",
    "BeamSummary",
    "BlobModelHandler",
    "ClassifyBlobs",
    "ClassifyNodes",
    "ExportNeighbourhoods",
    "FetchNeighbourhoods",
    "GraphSpec",
    "ModelSpec",
    "NodeScan",
    "NodeSelection",
    "ReadNodeIds",
    "ScoreLinks",
    "WritePredictions",
    "add_runner_arguments",
    "classify_with_beam",
    "create_pipeline",
    "read_exported",
    "register_graph",
    "require_beam",
    "run_classify_pipeline",
    "sampling_for",
    "unregister_graph",
]
