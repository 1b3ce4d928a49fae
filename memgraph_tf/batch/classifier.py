"""The batch-inference pipeline: classify the nodes of a graph with a model backend and write the
answers back (``memgraph-tf classify`` is a thin layer over it; see docs/batch-inference.md)::

    from memgraph_tf.batch import BundleBackend, classify_graph
    from memgraph_tf.client import connect

    with connect("bolt://memgraph:7687") as source, BundleBackend("models/GraphSage") as model:
        summary = classify_graph(source, model, write_property="predicted_class")

Parts, each replaceable:

* a **model backend** (:class:`~memgraph_tf.batch.backends.ModelBackend`: a bundle in-process, or
  TF Serving over REST or gRPC);
* the **node table** over the source (:class:`~memgraph_tf.client.node_tables.NodeTable`, the same
one
  the Beam transforms use): keyset-paged node keys, and one write per batch (Bolt: any Bolt
  server, Memgraph with the query modules or another server through the client-side fallback; or
  an in-process :class:`~memgraph_tf.client.sources.EmbeddedSource`);
* the **pipeline** (:class:`BatchClassifier`): three threads joined by bounded queues -- ids and
  neighbourhood blobs (the next batch), the model (the current batch), writes (the previous
  batch); on an embedded graph, ``fetch_workers`` > 1 samples in that many forked processes.

Guarantees of a run:

* **Sampling** uses the bundle's fanouts, properties and options, with ``options.seed`` = the
  bundle's seed, or :data:`~memgraph_tf.batch.backends.DEFAULT_SEED` when the bundle has none
  (:func:`~memgraph_tf.batch.backends.sampling_for`). The query modules key each seed's sample by
  ``(options.seed, node key)``, so a node's prediction does not depend on which other nodes share
  its batch: any subset, order, batch size or shard gives the same prediction as a full run.
* **Written properties**, for write property ``P`` (default ``predicted_class``): ``P`` the top
  class label (a string, one of the bundle's class names), ``P_score`` its score (a float: the
  model's probability) and ``P_version`` the model version (an int: the bundle's version
  directory number, or the version the serving endpoint answered with). All three are set in one
  statement; each batch is one managed write transaction (retried on transient errors by the
  driver), so no node is ever half-written and no batch is partly written.
* **Ids** stream in ascending order by keyset pagination (``WHERE key > $after ORDER BY key LIMIT
  batch_size``, never SKIP): the key is ``options.id_property`` when the bundle has one, else the
  internal id. ``label`` restricts the nodes (default: the bundle's ``options.label``); ``where``
  is a parameterised openCypher predicate over ``n`` (Bolt only; see
  :func:`~memgraph_tf.client.node_tables.check_where`).
* **Every selected node is accounted for**: a page whose keys do not ascend past the last key read
  stops the run (:class:`~memgraph_tf.client.node_tables.KeysetScan`), and a run that read its
  pages to
  the end checks that selected = classified + already up to date + invalid + failed; nodes never
  read (a server whose pages stopped early or skipped keys) raise
  :class:`~memgraph_tf.errors.KeysetPagingError` naming the gap, unless they are no longer
  to do when counted again (another run classified them, or they were deleted, meanwhile).
* **Resume**: unless ``overwrite``, nodes whose ``P_version`` already equals this model version
  are left out by the id query itself, so rerunning an interrupted run (SIGKILL, Ctrl-C, a lost
  connection) classifies exactly the nodes that are missing.
* **Shards**: ``Shard(i, N)`` takes the nodes whose key modulo N (the non-negative remainder) is
  i, so shards 0..N-1 partition the nodes and can run in parallel processes.
* **Invalid nodes** -- an unknown id, features that cannot be packed (the node's own or a sampled
  neighbour's), or a blob the model rejects: the run stops with :class:`InvalidNodeError` naming
  the first such node of the batch (in batch order) and the reason, and nothing of that batch is
  written (earlier batches are); with ``skip_invalid`` such nodes are reported, left unwritten and
  the rest of their batch is written. A failing batch is split in halves until the bad nodes are
  isolated (the sample of a node does not depend on its batch, so the split changes nothing else).
"""

from __future__ import annotations

import collections
import concurrent.futures
import dataclasses
import gc
import logging
import queue
import re
import signal
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from memgraph_tf import errors as serving_errors
from memgraph_tf.batch.backends import ModelBackend
from memgraph_tf.batch.summary import MAX_LISTED_INVALID, BatchSummary
from memgraph_tf.client.node_tables import (
    DEFAULT_WRITE_PROPERTY,
    NodeTable,
    Prediction,
    Shard,
    bundle_selection,
    property_names,
)
from memgraph_tf.client.sources import EmbeddedSource, GraphSource
from memgraph_tf.errors import (
    ClientError,
    ConfigurationError,
    InvalidNodeError,
    KeysetPagingError,
    ModelInputError,
    ProcedureUnavailable,
    QueryError,
)
from memgraph_tf.serving.neighbourhoods import NeighbourhoodFetcher

logger = logging.getLogger(__name__)

DEFAULT_BATCH_SIZE = 1024

_REASON_CHARS = 500
_POLL_S = 0.1


@dataclasses.dataclass
class _Batch:
    ids: list[int]
    pairs: list[tuple[int, bytes]] = dataclasses.field(
        default_factory=list
    )  # (id, blob) of valid ids
    predictions: list[Prediction] = dataclasses.field(default_factory=list)
    invalid: list[tuple[int, str]] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class _Failure:
    error: BaseException
    ids: list[int] = dataclasses.field(default_factory=list)  # the batch it stopped at


_END = object()


def fetch_error_is_node_specific(exc: BaseException) -> bool:
    """Whether a fetch failure can be pinned on nodes of the batch (worth splitting it)."""
    if isinstance(exc, (serving_errors.NeighbourhoodDataError, serving_errors.NodeIdError)):
        return True
    if isinstance(exc, serving_errors.GraphSourceError):
        cause = exc.__cause__
        return isinstance(cause, QueryError) and not isinstance(cause, ProcedureUnavailable)
    return False


def failure_reason(exc: BaseException) -> str:
    """The one-line reason (at most 500 characters) reported for a node a fetch failed on."""
    cause = (
        exc.__cause__
        if isinstance(exc, serving_errors.NeighbourhoodError) and exc.__cause__
        else exc
    )
    text = " ".join(str(cause).split())
    text = re.sub(r"^(seeds|node_ids)\[\d+\]: ", "", text)
    return text[:_REASON_CHARS]


def isolate(
    items: Sequence[Any],
    call: Callable[[Sequence[Any]], list[Any]],
    node_specific: Callable[[BaseException], bool],
    *,
    node_of: Callable[[Any], int] | None = None,
    skip_invalid: bool = True,
) -> tuple[list[tuple[Any, Any]], list[tuple[int, str]]]:
    """``call`` over ``items`` -> ``(good, bad)``: ``(item, result)`` for the items it succeeds on,
    in order, and ``(node id, reason)`` for the others (``node_of(item)`` is an item's node id; the
    item itself without it). A failing batch whose error is ``node_specific`` is halved until the
    failing items are alone (sound because a node's result does not depend on its batch); another
    error propagates. Without ``skip_invalid`` the first bad node (in order) raises
    :class:`InvalidNodeError`, the call's error as its cause."""
    try:
        results = call(items)
    except Exception as exc:
        if not node_specific(exc):
            raise
        if len(items) == 1:
            node, reason = items[0] if node_of is None else node_of(items[0]), failure_reason(exc)
            if not skip_invalid:
                raise InvalidNodeError(node, reason) from exc
            return [], [(node, reason)]
        mid = len(items) // 2
        options = {"node_of": node_of, "skip_invalid": skip_invalid}
        good_a, bad_a = isolate(items[:mid], call, node_specific, **options)
        good_b, bad_b = isolate(items[mid:], call, node_specific, **options)
        return good_a + good_b, bad_a + bad_b
    return list(zip(items, results)), []


def _first(item: tuple[int, Any]) -> int:
    return item[0]


def _fetch_worker(fetch: Callable[[list[int]], Any], conn: Any, inherited: Sequence[Any]) -> None:
    """A forked fetch worker: ``fetch(ids)`` for each id list received on ``conn``, the batch (or
    None when it failed: the parent then fetches that batch itself and raises its error) sent back;
    returns at end of input (the parent closed its end, or died)."""
    for other in inherited:  # the parent's ends of the pipes, so that only the parent holds them
        other.close()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    while True:
        try:
            ids = conn.recv()
        except (EOFError, OSError):
            return
        try:
            result = fetch(ids)
        except BaseException:  # noqa: BLE001 -- re-raised by the parent's own fetch of the batch
            result = None
        try:
            conn.send(result)
        except (BrokenPipeError, OSError):
            return


class _Fetchers:
    """Fetches whole batches with ``fetch``, up to ``count`` at a time: in this thread (``count``
    1) or in a pool of ``count`` threads (``threads``); results are taken back in the order the
    batches were handed out."""

    def __init__(
        self, fetch: Callable[[list[int]], Any], count: int, *, threads: bool = True
    ) -> None:
        self._fetch = fetch
        self._count = count
        self._busy: collections.deque = (
            collections.deque()
        )  # (worker or future, ids), in hand-out order
        self._pool = (
            concurrent.futures.ThreadPoolExecutor(count, thread_name_prefix="mgtf-fetch")
            if count > 1 and threads
            else None
        )

    @property
    def idle(self) -> bool:
        """Whether another batch can be handed out (:meth:`submit`)."""
        return len(self._busy) < self._count

    def pending(self) -> int:
        return len(self._busy)

    def oldest(self) -> list[int]:
        """The ids of the oldest handed-out batch (the one :meth:`result` answers next)."""
        return self._busy[0][1]

    def submit(self, ids: list[int]) -> None:
        self._busy.append(
            (None if self._pool is None else self._pool.submit(self._fetch, ids), ids)
        )

    def result(self) -> Any:
        future, ids = self._busy.popleft()
        return self._fetch(ids) if future is None else future.result()

    def close(self) -> None:
        if self._pool is not None:
            for future, _ in self._busy:
                future.cancel()
            self._pool.shutdown(wait=False)
        self._busy.clear()


class _ForkedFetchers(_Fetchers):
    """``count`` processes forked from this one, each sampling whole batches with ``fetch`` from
    the graph as it was at the fork (an :class:`EmbeddedSource`'s in-memory graph: sampling is
    Python, so threads would take turns on the GIL). Batches are handed out round robin, at most
    one per worker at a time, and their results taken back in the order they were handed out.
    Guarantees: a worker's batch equals ``fetch(ids)`` in this process (keyed sampling over the
    same graph); a batch a worker failed on is fetched again here, so its error is raised exactly
    as without workers; a worker that dies raises :class:`ClientError` naming it; workers leave
    when this process closes their pipe, or dies (they see the end of their input)."""

    def __init__(self, fetch: Callable[[list[int]], Any], count: int, lock: Any) -> None:
        import multiprocessing

        try:
            context = multiprocessing.get_context("fork")
        except ValueError as exc:
            raise ConfigurationError(
                f"fetch_workers: > 1 on an embedded graph forks sampling "
                f"processes, which this platform cannot: {exc}"
            ) from exc
        super().__init__(fetch, count, threads=False)
        self._conns: list[Any] = []
        self._procs: list[Any] = []
        self._next = 0
        try:
            with lock:  # no thread of this process is inside the graph while it forks
                for i in range(count):
                    mine, theirs = context.Pipe(duplex=True)
                    proc = context.Process(
                        target=_fetch_worker,
                        args=(fetch, theirs, self._conns + [mine]),
                        name=f"mgtf-fetch-{i}",
                        daemon=True,
                    )
                    proc.start()
                    theirs.close()
                    self._conns.append(mine)
                    self._procs.append(proc)
        except BaseException:
            self.close()
            raise
        logger.info(
            "sampling with %d forked fetch processes (pids %s)",
            count,
            ", ".join(str(p.pid) for p in self._procs),
        )

    def submit(self, ids: list[int]) -> None:
        """Hands ``ids`` to the next worker; call only while :attr:`idle`."""
        worker = self._next
        self._next = (self._next + 1) % len(self._conns)
        self._conns[worker].send(ids)
        self._busy.append((worker, ids))

    def result(self) -> Any:
        """The oldest handed-out batch's result."""
        worker, ids = self._busy.popleft()
        try:
            result = self._conns[worker].recv()
        except (EOFError, OSError) as exc:
            proc = self._procs[worker]
            proc.join(1.0)
            raise ClientError(
                f"fetch worker {worker} (pid {proc.pid}) exited with code {proc.exitcode} "
                f"while sampling nodes {ids[0]}..{ids[-1]}; nothing of that batch was "
                f"written (rerun to resume)"
            ) from exc
        return self._fetch(ids) if result is None else result

    def close(self) -> None:
        for conn in self._conns:
            conn.close()
        for proc in self._procs:
            proc.join(2.0)
            if proc.exitcode is None:
                proc.terminate()
                proc.join(2.0)
        self._conns, self._procs = [], []
        self._busy.clear()


class BatchClassifier:
    """Classifies the nodes of ``source`` with ``model`` and writes the predictions back (see the
    module docstring for what a run guarantees).

    ``node_ids`` (optional) classifies exactly these ids, in this order (shard filter applied,
    no resume filter); otherwise ids stream from the graph (``label``, ``where``, ``shard``, and,
    unless ``overwrite``, only nodes without this version's prediction). ``where``: a Cypher
    predicate over ``n`` with ``where_params`` (Bolt sources), or a callable ``key -> bool``
    (embedded sources). ``fetch_workers`` > 1 fetches that many batches concurrently: over Bolt in
    threads (the server does the sampling); on an embedded graph in that many processes forked
    when :meth:`run` starts (sampling there is Python, bound to one core per process), which sample
    the graph as it was then -- sampling is keyed, so the predictions are the same for any number
    of workers (Linux/macOS: needs ``fork``; each worker's memory grows towards the graph's size as
    it touches the graph's objects). ``queue_batches`` bounds each queue between stages.
    :attr:`summary` is updated as batches are written, also when :meth:`run` raises.

    What a node's answer is comes from the model backend (:meth:`ModelBackend.infer`: the class
    and its score; an embedding backend's ``(vector, None)``), as do the sampling settings and the
    selection's options: a subclass changes :attr:`action` (the log's verb) and
    :attr:`summary_class`, the rest of the run is shared.
    """

    #: The verb of the log lines and the progress bar.
    action = "classify"
    #: The summary a run fills.
    summary_class: type[BatchSummary] = BatchSummary

    def __init__(
        self,
        source: GraphSource,
        model: ModelBackend,
        *,
        write_property: str = DEFAULT_WRITE_PROPERTY,
        label: str | None = None,
        where: str | Callable[[int], bool] | None = None,
        where_params: Mapping[str, Any] | None = None,
        shard: Shard | str | None = None,
        node_ids: Iterable[int] | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
        skip_invalid: bool = False,
        overwrite: bool = False,
        progress: bool = True,
        fetch_workers: int = 1,
        queue_batches: int = 2,
    ) -> None:
        for name, value in (
            ("batch_size", batch_size),
            ("fetch_workers", fetch_workers),
            ("queue_batches", queue_batches),
        ):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigurationError(f"{name}: expected an integer >= 1, got {value!r}")
        if not isinstance(model, ModelBackend):
            raise ConfigurationError(f"model: expected a ModelBackend, got {type(model).__name__}")
        cfg = model.config
        self.selection = bundle_selection(
            model.selection_options(),
            model.version,
            label=label,
            where=where,
            where_params=where_params,
            write_property=write_property,
            shard=shard,
        )
        self.source = source
        self.model = model
        self.shard = self.selection.shard
        self.batch_size = batch_size
        self.skip_invalid = bool(skip_invalid)
        self.overwrite = bool(overwrite)
        self.progress = progress
        self.fetch_workers = fetch_workers
        self.queue_batches = queue_batches
        self.write_property = write_property
        self.label = self.selection.label
        self.id_property = self.selection.id_property
        self.sampling = model.sampling()
        written = set(property_names(write_property)) & set(cfg.properties)
        if isinstance(source, EmbeddedSource) and fetch_workers > 1 and written:
            raise ConfigurationError(
                f"fetch_workers: the forked sampling processes read the graph as it was when the "
                f"run started, but the model samples {sorted(written)}, which this run writes; "
                f"use another write_property or fetch_workers=1"
            )
        self._table = NodeTable(source, self.selection)
        self._fetcher = NeighbourhoodFetcher(source, serialize=False)
        self._node_ids = None if node_ids is None else self._explicit_ids(node_ids)
        self.summary = self.summary_class(
            model.name, model.version, write_property, shard=str(self.shard)
        )
        self._stop = threading.Event()
        self._error: BaseException | None = None
        self._scan: Any = None  # the KeysetScan of the run's id pages (not with node_ids)
        self._finished = False  # the writer saw the end of the input: every batch was written

    def _explicit_ids(self, node_ids: Iterable[int]) -> list[int]:
        ids = []
        for i, nid in enumerate(node_ids):
            if hasattr(nid, "item") and not isinstance(nid, int):
                nid = nid.item()  # numpy integers
            if not isinstance(nid, int) or isinstance(nid, bool):
                raise ConfigurationError(f"node_ids[{i}]: expected an integer id, got {nid!r}")
            if self.shard.contains(nid):
                ids.append(nid)
        return ids

    # -- stages ---------------------------------------------------------------------------------
    def _id_batches(self) -> Iterator[list[int]]:
        if self._node_ids is not None:
            for start in range(0, len(self._node_ids), self.batch_size):
                yield self._node_ids[start : start + self.batch_size]
            return
        self._scan = self._table.scan(self.batch_size, not self.overwrite)
        for ids in self._scan:
            if self._stop.is_set():
                return
            yield ids

    def _fetch(self, ids: list[int]) -> _Batch:
        batch = _Batch(ids)
        good, batch.invalid = isolate(
            [(nid, None) for nid in ids],
            lambda items: self._fetcher.fetch([nid for nid, _ in items], self.sampling),
            fetch_error_is_node_specific,
            node_of=_first,
            skip_invalid=self.skip_invalid,
        )
        batch.pairs = [(nid, blob) for (nid, _), blob in good]
        return batch

    def _infer(self, batch: _Batch) -> _Batch:
        good, bad = isolate(
            batch.pairs,
            lambda items: self.model.infer([b for _, b in items]),
            lambda exc: isinstance(exc, ModelInputError),
            node_of=_first,
            skip_invalid=self.skip_invalid,
        )
        batch.predictions = [(nid, label, score) for (nid, _), (label, score) in good]
        batch.invalid += bad
        batch.pairs = []
        return batch

    def _write(self, batch: _Batch, bar: Any) -> None:
        written = self._table.write(batch.predictions)
        s = self.summary
        s.batches += 1
        s.classified += written
        if written < len(batch.predictions):
            logger.warning(
                "%d prediction(s) of this batch matched no node when written (deleted meanwhile?)",
                len(batch.predictions) - written,
            )
            s.failed += len(batch.predictions) - written
        for nid, reason in batch.invalid:
            logger.warning("skipped node %d: %s", nid, reason)
            s.skipped += 1
            if len(s.invalid) < MAX_LISTED_INVALID:
                s.invalid.append((nid, reason))
        bar.update(len(batch.ids))

    # -- threads --------------------------------------------------------------------------------
    def _put(self, q: queue.Queue, item: Any) -> bool:
        while not self._stop.is_set():
            try:
                q.put(item, timeout=_POLL_S)
                return True
            except queue.Full:
                continue
        return False

    def _get(self, q: queue.Queue) -> Any:
        while True:
            try:
                return q.get(timeout=_POLL_S)
            except queue.Empty:
                if self._stop.is_set():
                    return _END

    def _producer(self, out: queue.Queue, fetchers: _Fetchers) -> None:
        ids: list[int] = []
        try:
            for ids in self._id_batches():
                fetchers.submit(ids)
                if fetchers.idle:
                    continue
                ids = fetchers.oldest()
                if not self._put(out, fetchers.result()):
                    return
            while fetchers.pending():
                ids = fetchers.oldest()
                if not self._put(out, fetchers.result()):
                    return
            self._put(out, _END)
        except BaseException as exc:  # noqa: BLE001 -- the writer re-raises it after the good batches
            self._put(out, _Failure(exc, ids))
        finally:
            fetchers.close()

    def _inferencer(self, inq: queue.Queue, out: queue.Queue) -> None:
        while True:
            item = self._get(inq)
            if item is _END or isinstance(item, _Failure):
                self._put(out, item)
                return
            try:
                batch = self._infer(item)
            except BaseException as exc:  # noqa: BLE001 -- handed to the writer, re-raised by run()
                self._put(out, _Failure(exc, item.ids))
                return
            if not self._put(out, batch):
                return

    def _writer(self, inq: queue.Queue, bar: Any) -> None:
        try:
            while True:
                item = self._get(inq)
                if item is _END:
                    self._finished = not self._stop.is_set()
                    return
                if isinstance(item, _Failure):
                    self.summary.failed += len(item.ids)
                    self._error = item.error
                    return
                self._write(item, bar)
                if self._stop.is_set():
                    return
        except BaseException as exc:  # noqa: BLE001 -- run() re-raises it in the caller's thread
            self._error = exc
        finally:
            self._stop.set()

    def stop(self) -> None:
        """Asks a running :meth:`run` to stop after the batch being written (which completes)."""
        self._stop.set()

    def run(self) -> BatchSummary:
        """Runs the pipeline to the end; returns :attr:`summary`. Raises :class:`InvalidNodeError`
        (without ``skip_invalid``), :class:`KeysetPagingError` (the graph's id pages repeated a
        key or left selected nodes unread), the source's or model's error, or
        ``KeyboardInterrupt`` after the batch being written has been written; :attr:`summary` then
        tells what was done."""
        from tqdm.auto import tqdm

        t0 = time.perf_counter()
        s = self.summary
        if self._node_ids is not None:
            s.total = len(self._node_ids)
        else:
            s.total = self._table.count(not self.overwrite)
            if not self.overwrite:
                s.up_to_date = self._table.count(False) - s.total
        logger.info(
            "%s %d node(s) with %s version %d (shard %s, batches of %d; %d already up to date)",
            self.action,
            s.total,
            self.model.name,
            self.model.version,
            self.shard,
            self.batch_size,
            s.up_to_date,
        )
        fetched: queue.Queue = queue.Queue(self.queue_batches)
        inferred: queue.Queue = queue.Queue(self.queue_batches)
        # the objects that exist now (an embedded graph's above all) are left out of the garbage
        # collector's passes during the run: sampling makes many short-lived objects, and each
        # full pass would walk the whole graph (~25% of sampling's CPU time at 100k nodes); in
        # forked fetch workers it also keeps the graph's pages shared. Not when the process has
        # frozen objects itself (gc.unfreeze would release those too). No collection first: a
        # full pass over a process that has loaded TensorFlow (~465k objects) took 0.25 s, a fifth
        # of a whole Cora run; garbage frozen with the rest is collected after the unfreeze.
        frozen = isinstance(self.source, EmbeddedSource) and gc.get_freeze_count() == 0
        if frozen:
            gc.freeze()
        try:  # forked before any thread of the run starts (a fork copies only the forking thread)
            fetchers = (
                _ForkedFetchers(self._fetch, self.fetch_workers, self.source.lock)
                if self.fetch_workers > 1 and isinstance(self.source, EmbeddedSource)
                else _Fetchers(self._fetch, self.fetch_workers)
            )
        except BaseException:
            if frozen:
                gc.unfreeze()
            raise
        bar = tqdm(
            total=s.total,
            unit="node",
            desc=f"{self.action} {self.shard}",
            disable=not self.progress,
            smoothing=0.1,
            dynamic_ncols=True,
        )
        threads = [
            threading.Thread(
                target=self._producer, args=(fetched, fetchers), name="mgtf-ids-fetch", daemon=True
            ),
            threading.Thread(
                target=self._inferencer, args=(fetched, inferred), name="mgtf-model", daemon=True
            ),
        ]
        writer = threading.Thread(
            target=self._writer, args=(inferred, bar), name="mgtf-write", daemon=True
        )
        for t in threads + [writer]:
            t.start()
        try:
            while writer.is_alive():
                writer.join(_POLL_S)
        except KeyboardInterrupt:
            s.interrupted = True
            self._stop.set()
            writer.join()  # the batch being written is finished: no batch is half-written
            raise
        finally:
            self._stop.set()
            for t in threads:
                t.join(timeout=5.0)
            fetchers.close()
            if frozen:
                gc.unfreeze()
            bar.close()
            s.elapsed_s = time.perf_counter() - t0
        if self._error is not None:
            raise self._error
        if self._finished:
            self._check_complete()
        logger.info("%s", s.text())
        return s

    def _check_complete(self) -> None:
        """After a run that read its id pages to the end: every selected node is accounted for
        (selected = classified + already up to date + invalid + failed), else
        :class:`KeysetPagingError` naming the gap. Nodes that a concurrent writer classified, or
        that were deleted, during the run are not a gap: the nodes left unread are counted again
        (with ``overwrite``: the selected nodes now, less those read)."""
        s = self.summary
        scan = self._scan
        if scan is None:  # explicit node_ids: each one was classified, skipped or failed
            return
        missing = s.total - scan.read
        if missing <= 0:
            return
        todo = not self.overwrite
        still = self._table.count(todo) if todo else self._table.count(False) - scan.read
        missing = min(missing, still)
        if missing <= 0:
            logger.info(
                "%d selected node(s) were not read but are no longer to do (classified by "
                "another run, or deleted, meanwhile)",
                s.total - scan.read,
            )
            return
        after = scan.unread()
        if scan.last_key is None:
            how = "the server's keyset paging returned no key at all"
        elif after > 0:
            how = (
                f"the server's keyset paging stopped early after key {scan.last_key}: "
                f"{after} selected node(s) have a greater key"
            )
        else:
            how = "the server's keyset pages skipped them"
        raise KeysetPagingError(
            f"selected {s.total + s.up_to_date} node(s) but classified {s.classified}, "
            f"{s.up_to_date} already up to date, {s.skipped} invalid"
            + (f", {s.failed} failed" if s.failed else "")
            + f": {missing} node(s) were never read ({how})"
        )


def classify_graph(source: GraphSource, model: ModelBackend, **options: Any) -> BatchSummary:
    """``BatchClassifier(source, model, **options).run()``: see :class:`BatchClassifier`."""
    return BatchClassifier(source, model, **options).run()


__all__ = [
    "DEFAULT_BATCH_SIZE",
    "BatchClassifier",
    "classify_graph",
    "failure_reason",
    "fetch_error_is_node_specific",
    "isolate",
]
