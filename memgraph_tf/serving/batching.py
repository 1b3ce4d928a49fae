"""Server-side batching for ``memgraph-tf serve`` (TF Serving's ``--enable_batching``):
:class:`BatchingOptions` (its batching parameters) and :class:`BatchScheduler`, which merges
concurrent model calls into one. No TensorFlow here; numpy is imported on first use.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from typing import Any

from memgraph_tf.errors import ServingFailure


@dataclass(frozen=True)
class BatchingOptions:
    """Server-side batching, as TF Serving's ``--enable_batching`` with a batching parameters
    file (``max_batch_size``, ``batch_timeout_micros``, ``num_batch_threads``,
    ``max_enqueued_batches``). Sizes count examples / rows (the first dimension), as TF
    Serving's task sizes do."""

    max_batch_size: int = 128
    batch_timeout_micros: int = 0
    num_batch_threads: int = max(1, os.cpu_count() or 1)
    max_enqueued_batches: int = 100

    def __post_init__(self) -> None:
        for key, low in (
            ("max_batch_size", 1),
            ("batch_timeout_micros", 0),
            ("num_batch_threads", 1),
            ("max_enqueued_batches", 1),
        ):
            value = getattr(self, key)
            if not isinstance(value, int) or isinstance(value, bool) or value < low:
                raise ValueError(f"batching {key}: expected an int >= {low}, got {value!r}")


class _Task:
    """One caller's call. ``done`` is a lock held from creation until the result or the error
    is set (released once, by the batch thread; the caller waits by acquiring it): a bare
    lock's release costs a fraction of ``threading.Event.set``'s condition machinery, on
    every task."""

    __slots__ = ("done", "error", "feeds", "result", "runner", "size")

    def __init__(self, feeds: dict, size: int, runner):
        self.feeds, self.size, self.runner = feeds, size, runner
        self.done = threading.Lock()
        self.done.acquire()
        self.result: dict | None = None
        self.error: BaseException | None = None


class _Batch:
    __slots__ = ("deadline", "key", "size", "tasks")

    def __init__(self, key: Any, deadline: float):
        self.key, self.tasks, self.size, self.deadline = key, [], 0, deadline


class BatchScheduler:
    """Merges concurrent model calls with the same key (version, signature, input dtypes and
    per-row shapes) into one call, as TF Serving's BasicBatchScheduler does: a batch is run when
    it holds ``max_batch_size`` rows or ``batch_timeout_micros`` after its first task, by one of
    ``num_batch_threads`` threads; with a timeout of 0 a batch runs as soon as a thread is free,
    so batches form while every thread is busy.

    Guarantees: every caller gets exactly the answer (or the error) an unbatched call would give:
    outputs are split by the rows each task brought; a batch whose outputs are not all batch-major
    (a scalar, another first dimension), or whose merged call fails, is run again task by task. A
    task larger than ``max_batch_size`` runs alone. More than ``max_enqueued_batches`` batches
    waiting is a 503 (TF Serving's UNAVAILABLE "queue ... is full"), which clients retry."""

    def __init__(self, options: BatchingOptions):
        self.options = options
        self._cond = threading.Condition()
        self._open: dict[Any, _Batch] = {}
        self._ready: list[_Batch] = []
        self._closed = False
        self.batches_run = 0
        self.tasks_run = 0
        self._threads = [
            threading.Thread(target=self._work, name=f"memgraph-tf-batch-{i}", daemon=True)
            for i in range(options.num_batch_threads)
        ]
        for t in self._threads:
            t.start()

    def submit(self, key: Any, feeds: dict, size: int, runner) -> dict:
        """Run ``runner(feeds)`` (``{name: array}`` -> ``{output: array}``), batched with other
        tasks of ``key``; returns this task's outputs or raises its error."""
        if size > self.options.max_batch_size or size < 1:
            return runner(feeds)
        task = _Task(feeds, size, runner)
        with self._cond:
            if self._closed:
                return runner(feeds)
            batch = self._open.get(key)
            if batch is not None and batch.size + size > self.options.max_batch_size:
                self._ready.append(self._open.pop(key))
                batch = None
            if batch is None:
                if len(self._ready) >= self.options.max_enqueued_batches:
                    raise ServingFailure.for_code(
                        "UNAVAILABLE",
                        "The batch scheduling queue to which this task was submitted is full",
                    )
                batch = _Batch(key, time.monotonic() + self.options.batch_timeout_micros / 1e6)
                self._open[key] = batch
            batch.tasks.append(task)
            batch.size += size
            if batch.size >= self.options.max_batch_size:
                self._ready.append(self._open.pop(key))
            self._cond.notify()  # one batch thread; it wakes the next if more is queued
        task.done.acquire()
        if task.error is not None:
            raise task.error
        return task.result

    def _next(self) -> _Batch | None:
        """The next batch to run (called with the lock held), waiting as long as needed."""
        while not self._closed:
            if self._ready:
                batch = self._ready.pop(0)
                self._pass_on()
                return batch
            now = time.monotonic()
            due = [b for b in self._open.values() if b.deadline <= now]
            if due:
                batch = min(due, key=lambda b: b.deadline)
                del self._open[batch.key]
                self._pass_on()
                return batch
            wait = min((b.deadline - now for b in self._open.values()), default=None)
            self._cond.wait(timeout=wait)
        return None

    def _pass_on(self) -> None:
        """(With the lock held, as a batch thread takes a batch.) Wake another batch thread
        when batches remain queued or open: :meth:`submit` wakes one thread per task, so the
        others sleep until a thread that takes work hands the rest on."""
        if self._ready or self._open:
            self._cond.notify()

    def _work(self) -> None:
        while True:
            with self._cond:
                batch = self._next()
            if batch is None:
                return
            self._run(batch)
            del batch  # its tasks (their feeds and results) not kept while this thread waits
            # yield the GIL: the callers just released (and those still parsing requests)
            # run and submit before this thread takes the next batch, so batches hold more
            # tasks instead of the thread taking a batch of one right away
            time.sleep(0)

    @staticmethod
    def _one(task: _Task) -> None:
        try:
            task.result = task.runner(task.feeds)
        except BaseException as exc:  # noqa: BLE001 -- handed to the waiting caller
            task.error = exc
        task.done.release()

    def _run(self, batch: _Batch) -> None:
        import numpy as np

        tasks = batch.tasks
        with self._cond:
            self.batches_run += 1
            self.tasks_run += len(tasks)
        if len(tasks) == 1:
            self._one(tasks[0])
            return
        try:
            merged = {k: np.concatenate([t.feeds[k] for t in tasks]) for k in tasks[0].feeds}
            out = tasks[0].runner(merged)
            total = batch.size
            if not all(
                isinstance(v, np.ndarray) and v.ndim >= 1 and v.shape[0] == total
                for v in out.values()
            ):
                raise _NotBatchMajor
        except BaseException:  # noqa: BLE001 -- a failed or unsplittable batch runs task by task
            for t in tasks:
                self._one(t)
            return
        start = 0
        for t in tasks:
            t.result = {k: v[start : start + t.size] for k, v in out.items()}
            start += t.size
            t.done.release()

    def close(self) -> None:
        """Stop the batch threads once the queued batches are run; later calls run directly."""
        with self._cond:
            self._ready.extend(self._open.values())
            self._open.clear()
            pending = list(self._ready)
            self._ready.clear()
            self._closed = True
            self._cond.notify_all()
        for batch in pending:
            self._run(batch)
        for t in self._threads:
            t.join(timeout=5)


class _NotBatchMajor(Exception):
    pass


__all__ = ["BatchScheduler", "BatchingOptions"]
