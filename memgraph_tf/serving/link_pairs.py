"""Pairs named by node ids on a link bundle (``{"source_id": s, "target_id": t}`` examples of
``memgraph-tf serve --graph``), answered in bounded memory and batched across requests.

A link bundle reads one dense ``sample_pairs`` blob per example, which repeats every sampled
node's features in every slot that holds it (Cora, fanouts 5, 3: 243 KB a pair, 249 MB for 1,024
pairs). The server therefore samples a request's pairs in the compact layout (each node's features
once, :meth:`.neighbourhoods.NeighbourhoodFetcher.fetch_pair_sample`) and builds the dense blobs
-- byte for byte the ones the model reads otherwise -- a chunk of examples at a time, right before
the model runs on that chunk:

- :class:`PairExamples`: a request's serialized tf.Examples, those naming a pair completed with
  their pair blob only when :meth:`PairExamples.rows` asks for them;
- :class:`PairRunner`: runs the model over the examples of every request waiting on one model
  version and signature, in chunks of at most :attr:`PairRunner.chunk_bytes` bytes of examples
  (and :data:`MAX_CHUNK_ROWS` rows), rows of several requests in one chunk: concurrent requests
  share model runs instead of queueing one after another; each request gets exactly the output
  rows of its own examples, or its own error.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

#: The most bytes of serialized examples one model run of :class:`PairRunner` takes.
DEFAULT_CHUNK_BYTES = 32 * 1024 * 1024
#: The most examples one model run of :class:`PairRunner` takes.
MAX_CHUNK_ROWS = 1024


def blob_example(key: str, blob: bytes) -> bytes:
    """A serialized ``tf.Example`` holding only the bytes feature ``key`` = ``[blob]``: appended
    to a serialized example without ``key``, it adds that feature (serialized protos concatenate
    as they merge)."""
    from tensorflow.core.example import example_pb2

    ex = example_pb2.Example()
    ex.features.feature[key].bytes_list.value.append(blob)
    return ex.SerializeToString()


class PairExamples(Sequence):
    """A request's serialized tf.Examples on a link bundle: ``base`` (each example serialized,
    those at ``positions`` without their ids), ``pairs`` (a
    :class:`~memgraph_tf.ops.sample_decoding.DensePairBlobs`: the blob of the ``j``-th example at
    ``positions``) and the bundle's blob feature ``key``; ``prefix`` (an
    ExampleListWithContext's serialized context) goes before every example.

    Guarantees: item ``i`` parses to the example the request gave with, at a pair position, its
    pair blob as the bytes feature ``key``; blobs are built only for the rows asked for."""

    def __init__(
        self,
        base: Sequence[bytes],
        positions: Sequence[int],
        pairs: Any,
        key: str,
        prefix: bytes = b"",
    ):
        self.base = list(base)
        self.positions = list(positions)
        self.pairs = pairs
        self.key = key
        self.prefix = prefix
        self._pair_of = {p: j for j, p in enumerate(self.positions)}
        self._heads: dict[int, bytes] = {}
        self.row_bytes = len(prefix) + max(map(len, self.base), default=0) + pairs.blob_bytes + 16

    def with_prefix(self, prefix: bytes) -> PairExamples:
        """The same examples, each after ``prefix`` (an ExampleListWithContext's context)."""
        return PairExamples(self.base, self.positions, self.pairs, self.key, prefix + self.prefix)

    def __len__(self) -> int:
        return len(self.base)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return self.rows(*i.indices(len(self))[:2])
        if i < 0:
            i += len(self)
        return self.rows(i, i + 1)[0]

    def __iter__(self) -> Any:
        step = 256  # (blobs built a few at a time)
        for start in range(0, len(self), step):
            yield from self.rows(start, min(start + step, len(self)))

    def rows(self, start: int, stop: int) -> list[bytes]:
        """The serialized examples ``start..stop-1``, pair blobs built now."""
        chosen = [i for i in range(start, stop) if i in self._pair_of]
        blobs = {}
        if chosen:
            first, last = self._pair_of[chosen[0]], self._pair_of[chosen[-1]]
            built = self.pairs.blobs(first, last + 1)
            blobs = {self.positions[first + k]: b for k, b in enumerate(built)}
        out = []
        for i in range(start, stop):
            blob = blobs.get(i)
            if blob is None:
                out.append(self.prefix + self.base[i])
                continue
            head = self._heads.get(len(blob))
            if head is None:  # the serialized feature up to its value: the same for one length
                head = self._heads[len(blob)] = blob_example(self.key, bytes(len(blob)))[
                    : -len(blob)
                ]
            out.append(b"".join((self.prefix, self.base[i], head, blob)))
        return out


class _Job:
    __slots__ = ("answered", "done", "error", "examples", "next", "parts")

    def __init__(self, examples: PairExamples):
        self.examples = examples
        self.next = 0  # the first row not yet taken into a chunk
        self.parts: list[dict] = []
        self.answered = 0  # the rows whose outputs are in parts
        self.error: BaseException | None = None
        self.done = False


class PairRunner:
    """Runs a model over :class:`PairExamples` of concurrent requests in shared chunks.

    :meth:`run` queues a request under ``key`` (the model version and signature); one waiting
    caller at a time per key (whichever finds no chunk of that key running) takes the next chunk
    -- rows of the queued requests in arrival order, at most ``chunk_bytes`` bytes and
    :data:`MAX_CHUNK_ROWS` rows -- builds it, runs ``runner(serialized examples)`` on it and hands
    each request its rows of the outputs. A chunk whose run fails, or whose outputs are not all
    batch-major, is run again request by request, so each request gets the answer or the error
    it would alone. :attr:`runs` counts the model runs."""

    def __init__(self, chunk_bytes: int = DEFAULT_CHUNK_BYTES):
        self.chunk_bytes = chunk_bytes
        self._cond = threading.Condition()
        self._queues: dict[Any, list[_Job]] = {}
        self._running: set[Any] = set()
        self._runs_lock = threading.Lock()
        self.runs = 0

    def _count_run(self) -> None:
        with self._runs_lock:
            self.runs += 1

    def queued(self, key: Any) -> int:
        """The requests of ``key`` not yet answered."""
        with self._cond:
            return len(self._queues.get(key, ()))

    def wait_queued(self, key: Any, count: int, timeout_s: float) -> bool:
        """Wait until at least ``count`` requests of ``key`` are queued; False on timeout."""
        with self._cond:
            return self._cond.wait_for(lambda: self.queued(key) >= count, timeout=timeout_s)

    def run(self, key: Any, examples: PairExamples, runner: Callable[[list[bytes]], dict]) -> dict:
        """``{output: array}`` of ``runner`` over all of ``examples`` (concatenated by rows), or
        the error its rows raised."""
        import numpy as np

        job = _Job(examples)
        with self._cond:
            queue = self._queues.setdefault(key, [])
            queue.append(job)
            self._cond.notify_all()
            while not job.done:
                if key in self._running:
                    self._cond.wait()
                    continue
                self._running.add(key)
                chunk = self._take(queue)
                self._cond.release()
                try:
                    self._run_chunk(chunk, runner)
                finally:
                    self._cond.acquire()
                    self._running.discard(key)
                    self._finish(key, queue)
                    self._cond.notify_all()
        if job.error is not None:
            raise job.error
        if len(job.parts) == 1:
            return job.parts[0]
        return {k: np.concatenate([p[k] for p in job.parts]) for k in job.parts[0]}

    def _take(self, queue: list[_Job]) -> list[tuple[_Job, int, int]]:
        """The next chunk (called with the lock held): ``(job, start, stop)`` row ranges."""
        chunk, rows, size = [], 0, 0
        for job in queue:
            if job.done or job.error is not None:
                continue
            start = stop = job.next
            each = job.examples.row_bytes
            while stop < len(job.examples) and rows < MAX_CHUNK_ROWS:
                if rows and size + each > self.chunk_bytes:
                    break
                stop, rows, size = stop + 1, rows + 1, size + each
            if stop > start:
                job.next = stop
                chunk.append((job, start, stop))
            if stop < len(job.examples):
                break
        return chunk

    def _run_chunk(self, chunk: list[tuple[_Job, int, int]], runner: Callable) -> None:
        """Run one chunk; outputs (or errors) handed to its jobs."""
        try:
            serialized = [s for job, a, b in chunk for s in job.examples.rows(a, b)]
            self._count_run()
            out = runner(serialized)
            total = len(serialized)
            if not all(getattr(v, "ndim", 0) >= 1 and v.shape[0] == total for v in out.values()):
                raise _NotBatchMajor
        except BaseException as exc:  # noqa: BLE001 -- rerun alone, or handed to the caller
            if len(chunk) == 1 and not isinstance(exc, _NotBatchMajor):
                chunk[0][0].error = exc
                return
            for job, a, b in chunk:
                self._run_alone(job, a, b, runner)
            return
        start = 0
        for job, a, b in chunk:
            job.parts.append({k: v[start : start + b - a] for k, v in out.items()})
            job.answered += b - a
            start += b - a

    def _run_alone(self, job: _Job, start: int, stop: int, runner: Callable) -> None:
        try:
            self._count_run()
            job.parts.append(runner(job.examples.rows(start, stop)))
            job.answered += stop - start
        except BaseException as exc:  # noqa: BLE001 -- handed to the waiting caller
            job.error = exc

    def _finish(self, key: Any, queue: list[_Job]) -> None:
        """Mark the jobs whose rows are all answered (or that failed) done and drop them
        (called with the lock held)."""
        keep = []
        for job in queue:
            if job.error is not None or job.answered >= len(job.examples):
                job.done = True
            else:
                keep.append(job)
        queue[:] = keep
        if not keep:
            del self._queues[key]


class _NotBatchMajor(Exception):
    pass


__all__ = ["DEFAULT_CHUNK_BYTES", "MAX_CHUNK_ROWS", "PairExamples", "PairRunner", "blob_example"]
