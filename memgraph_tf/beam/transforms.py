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

Workers open the graph themselves from a :class:`~memgraph_tf.beam.graph_specs.GraphSpec` (no live
connection or password travels in the pipeline) and load the model from a
:class:`~memgraph_tf.beam.models.ModelSpec` through :class:`BlobModelHandler`, a RunInference
``ModelHandler`` of our own (Beam's ``TFModelHandler*`` load Keras models and would not register the
blob op; ours goes through ``memgraph_tf.serving.model_server.load_version``, which loads the op
library on each worker when an op bundle needs it).

On Beam's DaskRunner (``apache_beam.runners.dask``) :class:`ClassifyNodes` and
:class:`ExportNeighbourhoods` take another shape (:func:`runs_on_dask`; docs/scaling.md, "Dask"),
because that runner, checked on Beam 2.77, executes only part of the Beam model: it never collects
what a DoFn emits in ``finish_bundle`` (so ``beam.BatchElements`` -- here, and inside RunInference
-- drops the last batch of every bundle), puts tagged outputs into the main output, computes only
the last transform the pipeline applied (other leaves never run), runs ``Reshuffle`` as a no-op
and keeps up to 128 created elements in one partition, and has no metrics. There, the launcher
reads the key span and count (:func:`plan_key_ranges`), each key range is a ``Create`` of its own
(one Dask partition each, so the ranges run on all workers), and every element after it is a whole
keyset page (:class:`Page`) carried through fetch, inference and write by the same DoFns' code,
ending in one :class:`PageTally` per page. :class:`FetchNeighbourhoods`, :class:`ClassifyBlobs` and
:class:`WritePredictions` on their own refuse that runner (:data:`DASK_REFUSAL`).

Counters (namespace :data:`NAMESPACE`): ``nodes_selected`` (counted when the key span is read),
``nodes_read``, ``nodes_fetched``, ``nodes_invalid``,
``nodes_classified``, ``nodes_written``, ``nodes_unchanged`` (a prediction the write left alone:
the node already carried this version -- a retried bundle -- or no longer exists).
"""

from __future__ import annotations

import dataclasses
import logging
import sys
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, NamedTuple

import apache_beam as beam
from apache_beam.metrics import Metrics
from apache_beam.ml.inference.base import ModelHandler, PredictionResult, RunInference

from memgraph_tf.batch.backends import ModelBackend
from memgraph_tf.batch.classifier import DEFAULT_BATCH_SIZE, fetch_error_is_node_specific, isolate
from memgraph_tf.beam.graph_specs import GraphSpec, acquire, release
from memgraph_tf.beam.models import ModelSpec
from memgraph_tf.client.node_tables import DEFAULT_WRITE_PROPERTY, NodeSelection, bundle_selection
from memgraph_tf.errors import ConfigurationError, InvalidNodeError, ModelInputError
from memgraph_tf.serving.bundle import SamplingSpec
from memgraph_tf.serving.grpc_codec import proto_field, proto_varint
from memgraph_tf.serving.neighbourhoods import NeighbourhoodFetcher

logger = logging.getLogger(__name__)

#: The Beam metrics namespace of every counter these transforms keep.
NAMESPACE = "memgraph_tf"
#: Tag of the ``(node key, reason)`` outputs of nodes that cannot be classified.
INVALID = "invalid"
DEFAULT_NUM_RANGES = 16
#: Why FetchNeighbourhoods, ClassifyBlobs and WritePredictions refuse Beam's DaskRunner.
DASK_REFUSAL = (
    "{name}: cannot run on Beam's DaskRunner: it batches with beam.BatchElements, and that runner "
    "never collects what a DoFn emits in finish_bundle, so the last batch of every bundle would be "
    "lost without an error (Beam 2.77); use ClassifyNodes or ExportNeighbourhoods, which run "
    "keyset pages as elements there"
)
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


def runs_on_dask(pipeline: Any) -> bool:
    """Whether ``pipeline`` runs on Beam's DaskRunner (a check of the runner's class that imports
    nothing: without Dask installed, no pipeline can run there)."""
    module = sys.modules.get("apache_beam.runners.dask.dask_runner")
    return module is not None and isinstance(getattr(pipeline, "runner", None), module.DaskRunner)


def refuse_dask(pipeline: Any, name: str) -> None:
    """Raises ConfigurationError (:data:`DASK_REFUSAL`) when ``pipeline`` runs on the DaskRunner."""
    if runs_on_dask(pipeline):
        raise ConfigurationError(DASK_REFUSAL.format(name=name))


@dataclasses.dataclass(frozen=True)
class KeyRangePlan:
    """The key ranges a run reads, cut on the launcher (the DaskRunner shape): ``ranges``
    (half-open, together covering the selected keys once) and ``selected``, the selected nodes
    counted when the span was read (what ``nodes_read`` must add up to)."""

    ranges: tuple[tuple[int, int], ...]
    selected: int


def plan_key_ranges(scan: NodeScan) -> KeyRangePlan:
    """Reads the selected nodes' key span and count once, here (the launcher opens the graph:
    a Bolt graph's credentials come from this process's ``MEMGRAPH_TF_USER`` / ``_PASSWORD``), and
    cuts it into ``scan.num_ranges`` ranges; no node to read gives one empty range ``[0, 0)``."""
    handle = acquire(scan.graph)
    try:
        table = handle.table(scan.selection)
        bounds = table.bounds(scan.todo)
        selected = table.count(scan.todo) if bounds is not None else 0
    finally:
        release(handle)
    if bounds is None:
        logger.info("no node to read in %s", scan.graph)
        return KeyRangePlan(((0, 0),), 0)
    ranges = split_key_range(bounds[0], bounds[1], scan.num_ranges)
    logger.info(
        "reading node keys %d..%d of %s in %d range(s)",
        bounds[0],
        bounds[1],
        scan.graph,
        len(ranges),
    )
    return KeyRangePlan(tuple(ranges), selected)


def create_ranges(pbegin: Any, plan: KeyRangePlan) -> Any:
    """``PBegin -> PCollection[(lo, hi)]``: one ``Create`` per range, flattened. On the
    DaskRunner each ``Create`` becomes a partition of its own (the runner keeps up to 128 created
    elements in one partition and its Reshuffle is a no-op), so the ranges run on all workers."""
    created = [
        pbegin | f"KeyRange{i}" >> beam.Create([key_range])
        for i, key_range in enumerate(plan.ranges)
    ]
    return created | "KeyRanges" >> beam.Flatten()


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


@dataclasses.dataclass(frozen=True)
class Page:
    """One keyset page on its way through the DaskRunner shape: the ``keys`` read; after
    fetching, how many nodes were ``fetched`` and their ``blobs`` (``(key, blob)``, or ``(key, seed,
    blob)`` with seeds); after inference the blobs are dropped and ``predictions`` ``(key, class
    label, score)`` kept; ``invalid`` holds ``(key, reason)`` of the nodes skipped so far."""

    keys: tuple[int, ...]
    fetched: int = 0
    blobs: tuple = ()
    predictions: tuple = ()
    invalid: tuple = ()


@dataclasses.dataclass(frozen=True)
class PageTally:
    """What one page came to (the last element of the DaskRunner shape of :class:`ClassifyNodes`,
    in place of the counters that runner does not keep): nodes ``read``, ``fetched``,
    ``classified``, ``written`` and ``unchanged`` (left alone by the guarded write), and the
    ``invalid`` ``(key, reason)`` pairs (``skip_invalid``)."""

    read: int
    fetched: int
    classified: int
    written: int
    unchanged: int
    invalid: tuple = ()


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

    def pages(self, key_range: tuple[int, int]) -> Iterator[list[int]]:
        lo, hi = key_range
        # each page checked to ascend past the last key (a repeated key raises KeysetPagingError)
        for keys in self._table.scan(self.scan.page_size, self.scan.todo, lo=lo, hi=hi):
            self._read.inc(len(keys))
            yield keys

    def process(self, key_range: tuple[int, int]) -> Iterator[int]:
        for keys in self.pages(key_range):
            yield from keys


class _KeepGraphOpen:
    """For the DoFns of the DaskRunner shape: that runner sets up and tears down every DoFn once
    per partition, so ``teardown`` keeps the process's graph handle (one Bolt driver per worker
    process, reused by the next partition) instead of releasing it."""

    def teardown(self) -> None:
        pass


class ReadRangePagesFn(_KeepGraphOpen, _ReadRangeFn):
    """Reads a key range as :class:`_ReadRangeFn` does, each keyset page as one :class:`Page`
    element."""

    def process(self, key_range: tuple[int, int]) -> Iterator[Page]:  # type: ignore[override] -- pages
        for keys in self.pages(key_range):
            yield Page(tuple(keys))


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
                        self.sampling.typed,  # a typed bundle's settings
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


class _FetchPageFn(_KeepGraphOpen, _FetchFn):
    """:class:`_FetchFn` over a :class:`Page`: the page comes back with its blobs and invalid
    nodes (no tagged output)."""

    def process(self, page: Page) -> Iterator[Page]:  # type: ignore[override] -- a Page, not keys
        blobs, invalid = [], []
        for out in super().process(page.keys):
            if isinstance(out, beam.pvalue.TaggedOutput):
                invalid.append(out.value)
            else:
                blobs.append(out)
        yield dataclasses.replace(
            page, fetched=len(blobs), blobs=tuple(blobs), invalid=page.invalid + tuple(invalid)
        )


class FetchNeighbourhoods(beam.PTransform):
    """``PCollection[int] -> {"blobs": (key, blob), "invalid": (key, reason)}``: each node's
    neighbourhood blob, sampled with ``sampling`` through the graph's query modules (or the Bolt
    fallback, or the embedded runtime), ``batch_size`` nodes per call.

    Guarantees: a node's blob depends only on the graph, ``sampling`` and the node (sampling is
    keyed by ``(options.seed, node)``), never on its batch. With ``seeds``, every node is sampled
    once per seed and ``blobs`` holds ``(key, seed, blob)``. A node that cannot be sampled (an
    unknown id, features that cannot be packed) fails the bundle with
    :class:`~memgraph_tf.errors.InvalidNodeError` naming it, or, with ``skip_invalid``, goes
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
        refuse_dask(keys.pipeline, "FetchNeighbourhoods")
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
    the model rejects (:class:`~memgraph_tf.errors.ModelInputError`) is halved down to the
    rejected nodes; those raise :class:`~memgraph_tf.errors.InvalidNodeError`, or with
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
            lambda ks: model.infer([blob_of[k] for k in ks]),
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


def split_prediction(result: PredictionResult) -> tuple[bool, tuple]:
    """A :class:`BlobModelHandler` result as ``(True, (key, class label, score))``, or ``(False,
    (key, reason))`` for a blob the model rejected (logged)."""
    if isinstance(result.inference, Rejected):
        logger.warning("skipped node %d: %s", result.example, result.inference.reason)
        return False, (result.example, result.inference.reason)
    label, score = result.inference
    return True, (result.example, label, None if score is None else float(score))


class _SplitPredictionsFn(beam.DoFn):
    def __init__(self) -> None:
        super().__init__()
        self._classified = Metrics.counter(NAMESPACE, "nodes_classified")
        self._invalid = Metrics.counter(NAMESPACE, "nodes_invalid")

    def process(self, result: PredictionResult) -> Iterator[Any]:
        ok, value = split_prediction(result)
        if ok:
            self._classified.inc()
            yield value
        else:
            self._invalid.inc()
            yield beam.pvalue.TaggedOutput(INVALID, value)


class _ClassifyPageFn(beam.DoFn):
    """A :class:`Page`'s blobs through :class:`BlobModelHandler` (the model loaded once per worker
    process): the page comes back with its predictions, the rejected nodes added to its invalid
    ones, and no blobs."""

    def __init__(self, handler: BlobModelHandler) -> None:
        super().__init__()
        self.handler = handler
        self._model: Any = None

    def setup(self) -> None:
        self._model = self.handler.load_model()

    def teardown(self) -> None:
        if self._model is not None and self.handler.model.kind != "bundle":
            self._model.close()  # a served model's client (a bundle is the process's, shared)
        self._model = None

    def process(self, page: Page) -> Iterator[Page]:
        results = self.handler.run_inference(list(page.blobs), self._model) if page.blobs else []
        predictions, invalid = [], []
        for result in results:
            ok, value = split_prediction(result)
            (predictions if ok else invalid).append(value)
        yield dataclasses.replace(
            page, blobs=(), predictions=tuple(predictions), invalid=page.invalid + tuple(invalid)
        )


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
        refuse_dask(blobs.pipeline, "ClassifyBlobs")
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


class _WritePageFn(_KeepGraphOpen, _WriteFn):
    """:class:`_WriteFn` over a :class:`Page`'s predictions: one :class:`PageTally` per page."""

    def process(self, page: Page) -> Iterator[PageTally]:  # type: ignore[override] -- a Page
        written = next(iter(super().process(page.predictions))) if page.predictions else 0
        yield PageTally(
            read=len(page.keys),
            fetched=page.fetched,
            classified=len(page.predictions),
            written=written,
            unchanged=len(page.predictions) - written,
            invalid=page.invalid,
        )


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
        refuse_dask(predictions.pipeline, "WritePredictions")
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
    :func:`memgraph_tf.client.node_tables.bundle_selection` with the bundle's options and the model
    version -- the same selection as ``memgraph-tf classify`` (``label`` default the bundle's
    ``options.label``, another label refused; keyed by ``options.id_property``, else internal
    ids)."""
    return bundle_selection(
        model.selection_options(),
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
    the write leaves such a node alone, so nothing is written twice, only sampled twice.

    On Beam's DaskRunner (:func:`runs_on_dask`) the same steps run with one keyset page per
    element (see the module docstring): the key span is read when the transform is applied
    (:attr:`plan`, on the launcher), and the output is ``{"pages": PCollection[PageTally]}`` --
    that runner computes only the pipeline's last transform, so apply nothing after it there."""

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
        self.sampling = model.sampling()
        self.batch_size, self.skip_invalid, self.overwrite = batch_size, skip_invalid, overwrite
        #: The key ranges read (set when applied on the DaskRunner).
        self.plan: KeyRangePlan | None = None

    def _expand_pages(self, pbegin: Any) -> Any:
        self.plan = plan_key_ranges(self.scan)
        tallies = (
            create_ranges(pbegin, self.plan)
            | "ReadKeyRangePages" >> beam.ParDo(ReadRangePagesFn(self.scan))
            | "FetchPages"
            >> beam.ParDo(_FetchPageFn(self.read_graph, self.sampling, None, self.skip_invalid))
            | "ClassifyPages"
            >> beam.ParDo(
                _ClassifyPageFn(
                    BlobModelHandler(
                        self.model, batch_size=self.batch_size, skip_invalid=self.skip_invalid
                    )
                )
            )
            | "WritePages"
            >> beam.ParDo(_WritePageFn(self.graph, self.selection, not self.overwrite))
        )
        return {"pages": tallies}

    def expand(self, pbegin: Any) -> Any:
        if runs_on_dask(pbegin.pipeline):
            return self._expand_pages(pbegin)
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


def tfrecord_bytes(record: bytes) -> bytes:
    """``record`` framed as TFRecord: its length (uint64, little-endian), the length's masked
    CRC-32C, the record, the record's masked CRC-32C (the format ``tf.data.TFRecordDataset``
    reads; a test reads files written with it back)."""
    import struct

    import google_crc32c

    def masked(data: bytes) -> bytes:
        crc = google_crc32c.value(data)
        return struct.pack("<I", (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF)

    length = struct.pack("<Q", len(record))
    return length + masked(length) + record + masked(record)


class _WriteRecordsFn(beam.DoFn):
    """Writes a :class:`Page`'s blobs (``(key, seed, blob)``) as one TFRecord file
    ``{prefix}-key{first key}.tfrecord`` of ``tf.Example`` s (named by the page, so a retried page
    rewrites the same file with the same records); yields the file name (none for a page without
    blobs)."""

    def __init__(self, prefix: str, blob_feature_key: str) -> None:
        super().__init__()
        self.prefix, self.key = prefix, blob_feature_key

    def process(self, page: Page) -> Iterator[str]:
        if not page.blobs:
            return
        from apache_beam.io.filesystems import FileSystems

        path = f"{self.prefix}-key{page.keys[0]}.tfrecord"
        with FileSystems.create(path) as out:
            for node, seed, blob in page.blobs:
                out.write(
                    tfrecord_bytes(
                        example_bytes({self.key: blob, NODE_ID_FEATURE: node, SEED_FEATURE: seed})
                    )
                )
        yield path


class ExportNeighbourhoods(beam.PTransform):
    """``PBegin -> PCollection[str]`` (the files written): every selected node's neighbourhood
    blob, sampled with ``sampling`` once per seed in ``seeds`` (default: ``sampling``'s own
    seed), as TFRecord files ``file_path_prefix-SSSSS-of-NNNNN.tfrecord`` of ``tf.Example`` s with
    the features ``blob_feature_key`` (the blob), :data:`NODE_ID_FEATURE` and
    :data:`SEED_FEATURE` (int64) -- for training at scale (``tf.data.TFRecordDataset``; decode
    the blob with ``memgraph_tf.ops.unpack_blob`` or ``memgraph_tf.blob.unpack``).

    Guarantees: each (node, seed) pair appears in exactly one record; a record's blob equals
    ``source.sample_blobs_per_node([node], fanouts, properties, {**options, "seed": seed})``, or
    with typed settings (``sampling.typed``: a typed bundle's) ``source.sample_typed([node],
    num_neighbors, properties, {**options, "seed": seed})`` of
    :meth:`~memgraph_tf.serving.bundle.SamplingSpec.typed_arguments`, the selection then being the
    seed label's nodes.
    Put ``label_property`` in ``sampling.options`` to carry the training labels in the blobs.
    Nodes that cannot be sampled fail the job, or with ``skip_invalid`` are left out (output
    ``invalid`` of :class:`FetchNeighbourhoods`).

    On Beam's DaskRunner (:func:`runs_on_dask`) the key span is read when the transform is applied
    and every keyset page is written as a file of its own, ``file_path_prefix-key{first node
    key}.tfrecord`` (``num_shards`` does not apply), with the same records."""

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
        label = options.get("label")
        if label is None and sampling.typed is not None:
            label = sampling.typed.seed_label  # typed sampling starts from its seed label only
        selection = selection or NodeSelection(label=label, id_property=options.get("id_property"))
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

    def _expand_pages(self, pbegin: Any) -> Any:
        return (
            create_ranges(pbegin, plan_key_ranges(self.scan))
            | "ReadKeyRangePages" >> beam.ParDo(ReadRangePagesFn(self.scan))
            | "FetchPages"
            >> beam.ParDo(_FetchPageFn(self.graph, self.sampling, self.seeds, self.skip_invalid))
            | "WriteTFRecordPages" >> beam.ParDo(_WriteRecordsFn(self.prefix, self.key))
        )

    def expand(self, pbegin: Any) -> Any:
        if runs_on_dask(pbegin.pipeline):
            return self._expand_pages(pbegin)
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
    "DASK_REFUSAL",
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
    "KeyRangePlan",
    "NodeScan",
    "Page",
    "PageTally",
    "ReadNodeIds",
    "Rejected",
    "WritePredictions",
    "create_ranges",
    "example_bytes",
    "isolate",
    "plan_key_ranges",
    "read_exported",
    "refuse_dask",
    "runs_on_dask",
    "selection_for",
    "split_prediction",
    "tfrecord_bytes",
]
