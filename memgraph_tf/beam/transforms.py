"""Apache Beam transforms: node ids -> neighbourhood blobs -> predictions -> writes, and blobs ->
TFRecord files. Each step is a transform of its own; :class:`ClassifyNodes` and
:class:`ExportNeighbourhoods` chain them::

    keys   = p | ReadNodeIds(NodeScan(graph, selection, todo=True))  # int node keys, by range
    hoods  = keys | FetchNeighbourhoods(graph, sampling)               # ["blobs"]: (key, blob)
    preds  = hoods["blobs"] | ClassifyBlobs(model)      # ["predictions"]: (key, class, score)
    counts = preds["predictions"] | WritePredictions(graph, selection) # nodes written per batch

(``["invalid"]`` of the middle two: ``(key, reason)`` of nodes skipped with ``skip_invalid``.)

Why key ranges and a reshuffle rather than a splittable DoFn: checked on Beam 2.77, the
FnApiRunner with ``direct_num_workers`` > 1 drops the residuals of self-checkpointing SDFs
(``ParallelBundleManager.process_bundle`` merges the workers' responses without their
``residual_roots``: 10 of 90 nodes were never read), and the BundleBasedDirectRunner checks an
SDF's tracker before a generator ``process`` has run. Plain ranges work on every runner; pick
``num_ranges`` a few times the number of workers so that uneven ranges even out.

Workers open the graph themselves from a :class:`~memgraph_tf.beam.graphs.GraphSpec` (no live
connection or password travels in the pipeline) and load the model from a
:class:`~memgraph_tf.beam.models.ModelSpec` through :class:`BlobModelHandler`, a RunInference
``ModelHandler`` of our own (Beam's ``TFModelHandler*`` load Keras models and would not register the
blob op; ours goes through ``memgraph_tf.serving.model_server.load_version``, which loads the op
library on each worker when an op bundle needs it).

Counters (namespace :data:`NAMESPACE`): ``nodes_selected`` (counted when the key span is read),
``nodes_read``, ``nodes_fetched``, ``nodes_invalid``,
``nodes_classified``, ``nodes_written``, ``nodes_unchanged`` (a prediction the write left alone:
the node already carried this version -- a retried bundle -- or no longer exists).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, NamedTuple

import apache_beam as beam
from apache_beam.metrics import Metrics
from apache_beam.ml.inference.base import ModelHandler, PredictionResult, RunInference

from memgraph_tf.batch.backends import ModelBackend, sampling_for
from memgraph_tf.batch.pipeline import DEFAULT_BATCH_SIZE, fetch_error_is_node_specific, isolate
from memgraph_tf.beam.graphs import GraphSpec, acquire, release
from memgraph_tf.beam.models import ModelSpec
from memgraph_tf.client.errors import ConfigurationError, InvalidNodeError, ModelInputError
from memgraph_tf.client.graphs import DEFAULT_WRITE_PROPERTY, NodeSelection, bundle_selection
from memgraph_tf.serving.bundle import SamplingSpec
from memgraph_tf.serving.grpc_codec import proto_field, proto_varint
from memgraph_tf.serving.neighbourhoods import NeighbourhoodFetcher

logger = logging.getLogger(__name__)

#: The Beam metrics namespace of every counter these transforms keep.
NAMESPACE = "memgraph_tf"
#: Tag of the ``(node key, reason)`` outputs of nodes that cannot be classified.
INVALID = "invalid"
DEFAULT_NUM_RANGES = 16
#: Features of an exported tf.Example besides the blob.
NODE_ID_FEATURE = "node_id"
SEED_FEATURE = "seed"


# ------------------------------------------------------------------------------------------ read
@dataclasses.dataclass(frozen=True)
class NodeScan:
    """What :class:`ReadNodeIds` reads: the selected nodes of ``graph`` (with ``todo``: those
    without the selection's version), split into ``num_ranges`` key ranges, paged ``page_size`` at
    a time."""

    graph: GraphSpec
    selection: NodeSelection
    todo: bool = False
    num_ranges: int = DEFAULT_NUM_RANGES
    page_size: int = DEFAULT_BATCH_SIZE

    def __post_init__(self) -> None:
        for name in ("num_ranges", "page_size"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigurationError(f"{name}: expected an integer >= 1, got {value!r}")
        if self.todo and self.selection.version is None:
            raise ConfigurationError("todo: needs a selection with the model version")


def split_key_range(lo: int, hi: int, num_ranges: int) -> list[tuple[int, int]]:
    """``[lo, hi]`` (inclusive) as at most ``num_ranges`` consecutive half-open ranges ``[a, b)`` of
    equal width that together cover it exactly once."""
    size = hi - lo + 1
    step = max(1, -(-size // num_ranges))
    return [(start, min(start + step, hi + 1)) for start in range(lo, hi + 1, step)]


class _SplitKeysFn(beam.DoFn):
    """The selected nodes' key span ``[min key, max key]`` (one query, on a worker) as
    ``num_ranges`` half-open key ranges."""

    def __init__(self, scan: NodeScan) -> None:
        super().__init__()
        self.scan = scan
        self._selected = Metrics.counter(NAMESPACE, "nodes_selected")

    def process(self, element: Any) -> Iterator[tuple[int, int]]:
        handle = acquire(self.scan.graph)
        try:
            table = handle.table(self.scan.selection)
            bounds = table.bounds(self.scan.todo)
            if bounds is not None:  # what the ranges must add up to (the run's summary checks it)
                self._selected.inc(table.count(self.scan.todo))
        finally:
            release(handle)
        if bounds is None:
            logger.info("no node to read in %s", self.scan.graph)
            return
        ranges = split_key_range(bounds[0], bounds[1], self.scan.num_ranges)
        logger.info(
            "reading node keys %d..%d of %s in %d range(s)",
            bounds[0],
            bounds[1],
            self.scan.graph,
            len(ranges),
        )
        yield from ranges


class _ReadRangeFn(beam.DoFn):
    """The selected keys in one half-open range ``[lo, hi)``, ascending, by keyset pages."""

    def __init__(self, scan: NodeScan) -> None:
        super().__init__()
        self.scan = scan
        self._read = Metrics.counter(NAMESPACE, "nodes_read")
        self._handle: Any = None

    def setup(self) -> None:
        self._handle = acquire(self.scan.graph)
        self._table = self._handle.table(self.scan.selection)

    def teardown(self) -> None:
        if self._handle is not None:
            release(self._handle)
            self._handle = None

    def process(self, key_range: tuple[int, int]) -> Iterator[int]:
        lo, hi = key_range
        # each page checked to ascend past the last key (a repeated key raises KeysetPagingError)
        for keys in self._table.scan(self.scan.page_size, self.scan.todo, lo=lo, hi=hi):
            self._read.inc(len(keys))
            yield from keys


class ReadNodeIds(beam.PTransform):
    """``PBegin -> PCollection[int]``: the keys of the selected nodes (``id_property`` values, else
    internal ids), each exactly once. A worker asks the graph for the key span and cuts it into
    ``scan.num_ranges`` key ranges of equal width; a reshuffle hands the ranges to the workers,
    which read them by keyset pages (``key >= lo AND key < hi AND key > last ORDER BY key LIMIT
    page_size``: no SKIP). With ``scan.todo``, nodes already carrying the selection's version are
    left out. A range is read again only if the runner retries its bundle, which re-emits the
    same keys (the write step makes that harmless)."""

    def __init__(self, scan: NodeScan) -> None:
        super().__init__()
        self.scan = scan

    def expand(self, pbegin: Any) -> Any:
        return (
            pbegin
            | "Scan" >> beam.Create([str(self.scan.graph)])
            | "SplitKeyRanges" >> beam.ParDo(_SplitKeysFn(self.scan))
            | "Distribute" >> beam.Reshuffle()
            | "ReadKeyRange" >> beam.ParDo(_ReadRangeFn(self.scan))
        )


# ----------------------------------------------------------------------------------------- fetch
class _FetchFn(beam.DoFn):
    def __init__(
        self,
        graph: GraphSpec,
        sampling: SamplingSpec,
        seeds: Sequence[int] | None,
        skip_invalid: bool,
    ) -> None:
        super().__init__()
        self.graph, self.sampling, self.seeds, self.skip_invalid = (
            graph,
            sampling,
            seeds,
            skip_invalid,
        )
        self._fetched = Metrics.counter(NAMESPACE, "nodes_fetched")
        self._invalid = Metrics.counter(NAMESPACE, "nodes_invalid")
        self._bytes = Metrics.distribution(NAMESPACE, "blob_bytes")
        self._handle: Any = None

    def setup(self) -> None:
        self._handle = acquire(self.graph)
        self._fetcher = NeighbourhoodFetcher(self._handle.source, serialize=False)

    def teardown(self) -> None:
        if self._handle is not None:
            release(self._handle)
            self._handle = None

    def _fetch(self, sampling: SamplingSpec, keys: Sequence[int]) -> list[bytes]:
        with self._handle.lock:
            return self._fetcher.fetch(list(keys), sampling)

    def process(self, keys: Sequence[int]) -> Iterator[Any]:
        keys = list(keys)
        specs = (
            [(None, self.sampling)]
            if self.seeds is None
            else [
                (
                    seed,
                    SamplingSpec(
                        self.sampling.fanouts,
                        self.sampling.properties,
                        {**self.sampling.options, "seed": seed},
                    ),
                )
                for seed in self.seeds
            ]
        )
        bad_keys: set[int] = set()
        for seed, sampling in specs:
            good, bad = isolate(
                [k for k in keys if k not in bad_keys],
                lambda ks, s=sampling: self._fetch(s, ks),
                fetch_error_is_node_specific,
            )
            for key, reason in bad:
                if not self.skip_invalid:
                    raise InvalidNodeError(key, reason)
                logger.warning("skipped node %d: %s", key, reason)
                self._invalid.inc()
                bad_keys.add(key)
                yield beam.pvalue.TaggedOutput(INVALID, (key, reason))
            for key, blob in good:
                self._fetched.inc()
                self._bytes.update(len(blob))
                yield (key, blob) if seed is None else (key, seed, blob)


class FetchNeighbourhoods(beam.PTransform):
    """``PCollection[int] -> {"blobs": (key, blob), "invalid": (key, reason)}``: each node's
    neighbourhood blob, sampled with ``sampling`` through the graph's query modules (or the Bolt
    fallback, or the embedded runtime), ``batch_size`` nodes per call.

    Guarantees: a node's blob depends only on the graph, ``sampling`` and the node (sampling is
    keyed by ``(options.seed, node)``), never on its batch. With ``seeds``, every node is sampled
    once per seed and ``blobs`` holds ``(key, seed, blob)``. A node that cannot be sampled (an
    unknown id, features that cannot be packed) fails the bundle with
    :class:`~memgraph_tf.client.errors.InvalidNodeError` naming it, or, with ``skip_invalid``, goes
    to ``invalid`` (with every seed's blob of it left out)."""

    def __init__(
        self,
        graph: GraphSpec,
        sampling: SamplingSpec,
        *,
        batch_size: int = DEFAULT_BATCH_SIZE,
        seeds: Sequence[int] | None = None,
        skip_invalid: bool = False,
    ) -> None:
        super().__init__()
        if seeds is not None:
            seeds = [int(s) for s in seeds]
            if not seeds:
                raise ConfigurationError("seeds: expected at least one seed, got none")
        self.graph, self.sampling, self.batch_size = graph, sampling, batch_size
        self.seeds, self.skip_invalid = seeds, skip_invalid

    def expand(self, keys: Any) -> Any:
        results = (
            keys
            | "Batch"
            >> beam.BatchElements(min_batch_size=self.batch_size, max_batch_size=self.batch_size)
            | "Sample"
            >> beam.ParDo(
                _FetchFn(self.graph, self.sampling, self.seeds, self.skip_invalid)
            ).with_outputs(INVALID, main="blobs")
        )
        return {"blobs": results.blobs, "invalid": results[INVALID]}


# ------------------------------------------------------------------------------------- inference
class Rejected(NamedTuple):
    """The inference of a blob the model rejected (``skip_invalid``): why."""

    reason: str


class BlobModelHandler(ModelHandler):
    """A RunInference ``ModelHandler`` for memgraph-tf models: examples are ``(node key, blob)``
    pairs, the model is a :class:`~memgraph_tf.batch.ModelBackend` opened from ``model``
    on each worker (a bundle loaded in-process -- op or op-free, the op library registered on the
    worker -- or a TF Serving endpoint over REST or gRPC, pinned to the resolved version).

    A bundle is loaded once per worker process and kept (:meth:`ModelSpec.open` with
    ``shared``). ``run_inference`` returns one ``PredictionResult(example=node key,
    inference=(class label, score), model_id="NAME/VERSION")`` per example, in order. A batch
    the model rejects (:class:`~memgraph_tf.client.errors.ModelInputError`) is halved down to the
    rejected nodes; those raise :class:`~memgraph_tf.client.errors.InvalidNodeError`, or with
    ``skip_invalid`` get ``inference=Rejected(reason)``. Batches hold up to ``batch_size``
    examples."""

    def __init__(
        self, model: ModelSpec, *, batch_size: int = DEFAULT_BATCH_SIZE, skip_invalid: bool = False
    ) -> None:
        super().__init__(min_batch_size=batch_size, max_batch_size=batch_size)
        self.model = model
        self.skip_invalid = skip_invalid

    def load_model(self) -> ModelBackend:
        backend = self.model.open(shared=True)
        logger.info("worker uses %s", self.model)
        return backend

    def run_inference(
        self,
        batch: Sequence[tuple[int, bytes]],
        model: ModelBackend,
        inference_args: Mapping[str, Any] | None = None,
    ) -> list[PredictionResult]:
        model_id = f"{self.model.model_name}/{self.model.version}"
        keys = [key for key, _ in batch]
        blob_of = dict(batch)
        good, bad = isolate(
            keys,
            lambda ks: model.classify([blob_of[k] for k in ks]),
            lambda exc: isinstance(exc, ModelInputError),
        )
        if bad and not self.skip_invalid:
            raise InvalidNodeError(*bad[0])
        out = {key: (label, score) for key, (label, score) in good}
        out.update((key, Rejected(reason)) for key, reason in bad)
        return [PredictionResult(key, out[key], model_id) for key in keys]

    def get_num_bytes(self, batch: Sequence[tuple[int, bytes]]) -> int:
        return sum(len(blob) for _, blob in batch)

    def get_metrics_namespace(self) -> str:
        return NAMESPACE

    def validate_inference_args(self, inference_args: Mapping[str, Any] | None) -> None:
        if inference_args:
            raise ConfigurationError(
                f"inference_args: BlobModelHandler takes none, got {sorted(inference_args)}"
            )


class _SplitPredictionsFn(beam.DoFn):
    def __init__(self) -> None:
        super().__init__()
        self._classified = Metrics.counter(NAMESPACE, "nodes_classified")
        self._invalid = Metrics.counter(NAMESPACE, "nodes_invalid")

    def process(self, result: PredictionResult) -> Iterator[Any]:
        if isinstance(result.inference, Rejected):
            logger.warning("skipped node %d: %s", result.example, result.inference.reason)
            self._invalid.inc()
            yield beam.pvalue.TaggedOutput(INVALID, (result.example, result.inference.reason))
            return
        label, score = result.inference
        self._classified.inc()
        yield result.example, label, float(score)


class ClassifyBlobs(beam.PTransform):
    """``PCollection[(key, blob)] -> {"predictions": (key, class label, score), "invalid": (key,
    reason)}`` through RunInference with :class:`BlobModelHandler` (see there for what it
    guarantees)."""

    def __init__(
        self, model: ModelSpec, *, batch_size: int = DEFAULT_BATCH_SIZE, skip_invalid: bool = False
    ) -> None:
        super().__init__()
        self.handler = BlobModelHandler(model, batch_size=batch_size, skip_invalid=skip_invalid)

    def expand(self, blobs: Any) -> Any:
        results = (
            blobs
            | "RunInference" >> RunInference(self.handler)
            | "Predictions"
            >> beam.ParDo(_SplitPredictionsFn()).with_outputs(INVALID, main="predictions")
        )
        return {"predictions": results.predictions, "invalid": results[INVALID]}


# ----------------------------------------------------------------------------------------- write
class _WriteFn(beam.DoFn):
    def __init__(self, graph: GraphSpec, selection: NodeSelection, only_todo: bool) -> None:
        super().__init__()
        self.graph, self.selection, self.only_todo = graph, selection, only_todo
        self._written = Metrics.counter(NAMESPACE, "nodes_written")
        self._unchanged = Metrics.counter(NAMESPACE, "nodes_unchanged")
        self._handle: Any = None

    def setup(self) -> None:
        self._handle = acquire(self.graph)
        self._table = self._handle.table(self.selection)

    def teardown(self) -> None:
        if self._handle is not None:
            release(self._handle)
            self._handle = None

    def process(self, predictions: Sequence[tuple[int, str, float]]) -> Iterator[int]:
        predictions = list(predictions)
        written = self._table.write(predictions, only_todo=self.only_todo)
        self._written.inc(written)
        if written < len(predictions):
            self._unchanged.inc(len(predictions) - written)
            logger.info(
                "%d of %d prediction(s) left unchanged: the node already carries version %s "
                "(a retried bundle) or is gone",
                len(predictions) - written,
                len(predictions),
                self.selection.version,
            )
        yield written


class WritePredictions(beam.PTransform):
    """``PCollection[(key, class label, score)] -> PCollection[int]`` (nodes written per batch):
    ``P``, ``P_score`` and ``P_version`` of each node set in one statement per batch of
    ``batch_size`` (one managed transaction on Bolt, retried by the driver on transient errors).

    With ``only_todo`` (the default) the statement only touches nodes whose ``P_version`` is not
    this version yet, so a bundle that a runner retries after its writes were committed writes no
    node twice; ``only_todo=False`` (``overwrite``) rewrites the same values instead."""

    def __init__(
        self,
        graph: GraphSpec,
        selection: NodeSelection,
        *,
        batch_size: int = DEFAULT_BATCH_SIZE,
        only_todo: bool = True,
    ) -> None:
        super().__init__()
        if selection.version is None:
            raise ConfigurationError("selection: WritePredictions needs the model version")
        self.graph, self.selection, self.batch_size, self.only_todo = (
            graph,
            selection,
            batch_size,
            only_todo,
        )

    def expand(self, predictions: Any) -> Any:
        return (
            predictions
            | "Batch"
            >> beam.BatchElements(min_batch_size=self.batch_size, max_batch_size=self.batch_size)
            | "Write" >> beam.ParDo(_WriteFn(self.graph, self.selection, self.only_todo))
        )


# -------------------------------------------------------------------------------------- pipelines
def selection_for(
    model: ModelSpec,
    *,
    label: str | None = None,
    where: Any = None,
    where_params: Mapping[str, Any] | None = None,
    write_property: str = DEFAULT_WRITE_PROPERTY,
) -> NodeSelection:
    """The nodes batch inference classifies with ``model``:
    :func:`memgraph_tf.client.graphs.bundle_selection` with the bundle's options and the model
    version -- the same selection as ``memgraph-tf classify`` (``label`` default the bundle's
    ``options.label``, another label refused; keyed by ``options.id_property``, else internal
    ids)."""
    return bundle_selection(
        model.config.options,
        model.version,
        label=label,
        where=where,
        where_params=where_params,
        write_property=write_property,
    )


class ClassifyNodes(beam.PTransform):
    """``PBegin -> {"written": PCollection[int], "invalid": PCollection[(key, reason)]}``: batch
    inference as a Beam pipeline, with ``memgraph-tf classify``'s semantics -- the same nodes
    (``label``, ``where``), the same keyed sampling (:func:`~memgraph_tf.batch.sampling_for`),
    hence the same predictions, the same properties (``P``, ``P_score``, ``P_version``); nodes that
    already carry this version's prediction are skipped unless ``overwrite``; nodes that cannot be
    classified fail the job naming the node unless ``skip_invalid``.

    ``num_ranges`` key ranges are read in parallel; ``batch_size`` nodes per fetch, model call and
    write transaction. ``read_graph`` (default ``graph``): where keys are read and neighbourhoods
    sampled -- a Memgraph replica, say -- while writes always go to ``graph`` (the MAIN
    instance). A replica that lags may offer a node that MAIN already carries this version for;
    the write leaves such a node alone, so nothing is written twice, only sampled twice."""

    def __init__(
        self,
        graph: GraphSpec,
        model: ModelSpec,
        *,
        label: str | None = None,
        where: Any = None,
        where_params: Mapping[str, Any] | None = None,
        write_property: str = DEFAULT_WRITE_PROPERTY,
        batch_size: int = DEFAULT_BATCH_SIZE,
        num_ranges: int = DEFAULT_NUM_RANGES,
        skip_invalid: bool = False,
        overwrite: bool = False,
        read_graph: GraphSpec | None = None,
    ) -> None:
        super().__init__()
        self.graph, self.model = graph, model
        self.read_graph = read_graph or graph
        self.selection = selection_for(
            model,
            label=label,
            where=where,
            where_params=where_params,
            write_property=write_property,
        )
        self.scan = NodeScan(
            self.read_graph,
            self.selection,
            todo=not overwrite,
            num_ranges=num_ranges,
            page_size=batch_size,
        )
        self.sampling = sampling_for(model.config)
        self.batch_size, self.skip_invalid, self.overwrite = batch_size, skip_invalid, overwrite

    def expand(self, pbegin: Any) -> Any:
        keys = pbegin | "ReadNodeIds" >> ReadNodeIds(self.scan)
        fetched = keys | "FetchNeighbourhoods" >> FetchNeighbourhoods(
            self.read_graph,
            self.sampling,
            batch_size=self.batch_size,
            skip_invalid=self.skip_invalid,
        )
        classified = fetched["blobs"] | "Classify" >> ClassifyBlobs(
            self.model, batch_size=self.batch_size, skip_invalid=self.skip_invalid
        )
        written = classified["predictions"] | "WritePredictions" >> WritePredictions(
            self.graph, self.selection, batch_size=self.batch_size, only_todo=not self.overwrite
        )
        invalid = (fetched["invalid"], classified["invalid"]) | "Invalid" >> beam.Flatten()
        return {"written": written, "invalid": invalid}


# ---------------------------------------------------------------------------------------- export
def example_bytes(features: Mapping[str, bytes | int]) -> bytes:
    """A serialized ``tf.Example`` with one value per feature: ``bytes`` -> a bytes_list, ``int`` ->
    an int64_list; features in sorted key order. Guarantees: ``tf.train.Example.FromString`` reads
    back exactly these features and values (a test checks it); no TensorFlow import."""
    entries = []
    for key in sorted(features):
        value = features[key]
        if isinstance(value, (bytes, bytearray, memoryview)):
            feature = proto_field(1, proto_field(1, bytes(value)))  # Feature.bytes_list.value
        elif isinstance(value, int) and not isinstance(value, bool):
            # Feature.int64_list.value (packed)
            feature = proto_field(3, proto_field(1, proto_varint(value)))
        else:
            raise ConfigurationError(
                f"features[{key!r}]: expected bytes or an int, got {type(value).__name__}"
            )
        entries.append(
            proto_field(1, proto_field(1, key.encode("utf-8")) + proto_field(2, feature))
        )
    return proto_field(1, b"".join(entries))  # Example.features.feature


class ExportNeighbourhoods(beam.PTransform):
    """``PBegin -> PCollection[str]`` (the files written): every selected node's neighbourhood
    blob, sampled with ``sampling`` once per seed in ``seeds`` (default: ``sampling``'s own
    seed), as TFRecord files ``file_path_prefix-SSSSS-of-NNNNN.tfrecord`` of ``tf.Example`` s with
    the features ``blob_feature_key`` (the blob), :data:`NODE_ID_FEATURE` and
    :data:`SEED_FEATURE` (int64) -- for training at scale (``tf.data.TFRecordDataset``; decode
    the blob with ``memgraph_tf.ops.unpack_blob`` or ``memgraph_tf.blob.unpack``).

    Guarantees: each (node, seed) pair appears in exactly one record; a record's blob equals
    ``source.sample_blobs_per_node([node], fanouts, properties, {**options, "seed": seed})``.
    Put ``label_property`` in ``sampling.options`` to carry the training labels in the blobs.
    Nodes that cannot be sampled fail the job, or with ``skip_invalid`` are left out (output
    ``invalid`` of :class:`FetchNeighbourhoods`)."""

    def __init__(
        self,
        graph: GraphSpec,
        sampling: SamplingSpec,
        file_path_prefix: str,
        *,
        selection: NodeSelection | None = None,
        seeds: Sequence[int] | None = None,
        blob_feature_key: str = "blob",
        batch_size: int = DEFAULT_BATCH_SIZE,
        num_ranges: int = DEFAULT_NUM_RANGES,
        num_shards: int = 0,
        skip_invalid: bool = False,
    ) -> None:
        super().__init__()
        options = sampling.options
        selection = selection or NodeSelection(
            label=options.get("label"), id_property=options.get("id_property")
        )
        if selection.version is not None:
            raise ConfigurationError(
                "selection: an export reads every selected node; give no model version"
            )
        if blob_feature_key in (NODE_ID_FEATURE, SEED_FEATURE) or not blob_feature_key:
            raise ConfigurationError(
                f"blob_feature_key: expected a name other than {NODE_ID_FEATURE!r} and "
                f"{SEED_FEATURE!r}, got {blob_feature_key!r}"
            )
        self.graph, self.sampling, self.prefix = graph, sampling, file_path_prefix
        self.scan = NodeScan(
            graph, selection, todo=False, num_ranges=num_ranges, page_size=batch_size
        )
        self.seeds = list(seeds) if seeds is not None else [int(options.get("seed") or 0)]
        self.key, self.batch_size, self.num_shards, self.skip_invalid = (
            blob_feature_key,
            batch_size,
            num_shards,
            skip_invalid,
        )

    def expand(self, pbegin: Any) -> Any:
        key = self.key
        fetched = (
            pbegin
            | "ReadNodeIds" >> ReadNodeIds(self.scan)
            | "FetchNeighbourhoods"
            >> FetchNeighbourhoods(
                self.graph,
                self.sampling,
                batch_size=self.batch_size,
                seeds=self.seeds,
                skip_invalid=self.skip_invalid,
            )
        )
        return (
            fetched["blobs"]
            | "ToExample"
            >> beam.MapTuple(
                lambda node, seed, blob: example_bytes(
                    {key: blob, NODE_ID_FEATURE: node, SEED_FEATURE: seed}
                )
            )
            | "WriteTFRecord"
            >> beam.io.WriteToTFRecord(
                self.prefix, file_name_suffix=".tfrecord", num_shards=self.num_shards
            )
        )


def read_exported(file_pattern: str, blob_feature_key: str = "blob") -> Any:
    """A ``tf.data.Dataset`` of ``{"blob": string, "node_id": int64, "seed": int64}`` scalars over
    files written by :class:`ExportNeighbourhoods` (imports TensorFlow)."""
    import tensorflow as tf

    spec = {
        blob_feature_key: tf.io.FixedLenFeature([], tf.string),
        NODE_ID_FEATURE: tf.io.FixedLenFeature([], tf.int64),
        SEED_FEATURE: tf.io.FixedLenFeature([], tf.int64),
    }
    files = tf.io.gfile.glob(file_pattern)
    if not files:
        raise ConfigurationError(f"file_pattern: no file matches {file_pattern!r}")

    def parse(record: Any) -> dict[str, Any]:
        parsed = tf.io.parse_single_example(record, spec)
        return {
            "blob": parsed[blob_feature_key],
            "node_id": parsed[NODE_ID_FEATURE],
            "seed": parsed[SEED_FEATURE],
        }

    return tf.data.TFRecordDataset(sorted(files)).map(parse)


__all__ = [
    "DEFAULT_NUM_RANGES",
    "INVALID",
    "NAMESPACE",
    "NODE_ID_FEATURE",
    "SEED_FEATURE",
    "BlobModelHandler",
    "ClassifyBlobs",
    "ClassifyNodes",
    "ExportNeighbourhoods",
    "FetchNeighbourhoods",
    "NodeScan",
    "ReadNodeIds",
    "Rejected",
    "WritePredictions",
    "example_bytes",
    "isolate",
    "read_exported",
    "selection_for",
]
