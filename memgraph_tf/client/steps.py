"""The step loop of the client's one trainer (:func:`memgraph_tf.client.trainer.fit_task`, behind
``train_graphsage``, ``train_typed_graphsage`` and ``train_link_predictor``): steps, the history
they record, evaluation every few steps and early stopping on a validation metric with the best
weights restored."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from tqdm.auto import tqdm

logger = logging.getLogger(__name__)

STEP_KEYS = ("step", "loss", "train_accuracy", "wait_s", "step_s")
"""Per-step history: the step number, its loss and training accuracy, the seconds it waited for
its batch and the seconds the step itself took."""
EVAL_KEYS = ("eval_step", "eval_s", "elapsed_s")
"""Per-evaluation history: the step it followed, its seconds, the seconds since training began."""


def close_iterator(holder: list[Any]) -> None:
    """Drops the last reference to the iterator in ``holder`` (emptied) from another thread while
    this one waits in ``join`` with the GIL released.

    A ``tf.data`` iterator deleted before its end cancels the elements still in flight, among them
    sampling calls that run Python (``tf.py_function``); deleting it off the training thread keeps
    that thread from holding the GIL while they are cancelled. This alone did not remove the waits
    seen after early stops (one off-thread deletion still took 8.9 s); turning off tf.data's
    autotuning model did (:func:`memgraph_tf.client.pipeline.without_autotune`). Guarantees: on
    return the iterator is deleted (the helper is joined) and ``holder`` is empty."""
    closer = threading.Thread(target=holder.clear, name="mgtf-close-iterator", daemon=True)
    closer.start()
    closer.join()


def fit_steps(
    model: Any,
    batches: Iterable[Any],
    *,
    steps: int,
    train_step: Callable[[Any], tuple[Any, Any]],
    evaluate: Callable[[], Mapping[str, float]] | None,
    metric: str,
    metric_keys: Iterable[str],
    eval_every: int,
    patience: int,
    progress: bool,
    check_batch: Callable[[Any], None] | None = None,
) -> tuple[dict[str, list[float]], int, float | None]:
    """Runs up to ``steps`` of ``train_step(batch) -> (loss, accuracy)`` over ``batches``.

    Every ``eval_every`` steps and after the last, ``evaluate()`` returns the validation figures
    (``metric_keys``; ``metric`` is the one to maximise). Training stops early when ``metric`` has
    not improved for ``patience`` steps. Guarantees: the model ends with the weights of its best
    evaluation (the last weights when ``evaluate`` is None); returns ``(history, best_step,
    best)``, where ``history`` holds :data:`STEP_KEYS` per step and :data:`EVAL_KEYS` plus
    ``metric_keys`` per evaluation, and ``best_step`` is the number of steps run when nothing was
    evaluated."""
    keys = (*STEP_KEYS, *EVAL_KEYS, *metric_keys)
    history: dict[str, list[float]] = {key: [] for key in keys}
    best, best_step, best_weights = None, 0, None
    started = time.monotonic()
    bar = tqdm(total=steps, unit="step", desc="train", disable=not progress)
    held = [iter(batches)]  # the only reference to the iterator: see close_iterator
    for step in range(1, steps + 1):
        t0 = time.perf_counter()
        batch = next(held[0], None)
        if batch is None:
            break
        t1 = time.perf_counter()
        if check_batch is not None:
            check_batch(batch)
        loss, acc = train_step(batch)
        loss, acc = float(loss), float(acc)
        history["wait_s"].append(t1 - t0)
        history["step_s"].append(time.perf_counter() - t1)
        history["step"].append(step)
        history["loss"].append(loss)
        history["train_accuracy"].append(acc)
        bar.update(1)
        scores = history.get(metric)
        last = scores[-1] if scores else None
        bar.set_postfix(
            loss=f"{loss:.3f}",
            train=f"{acc:.2f}",
            val="-" if last is None else f"{last:.3f}",
            refresh=False,
        )
        if evaluate is None or not (step % eval_every == 0 or step == steps):
            continue
        t0 = time.perf_counter()
        figures = evaluate()
        history["eval_step"].append(step)
        for key in metric_keys:
            history[key].append(float(figures[key]))
        history["eval_s"].append(time.perf_counter() - t0)
        history["elapsed_s"].append(time.monotonic() - started)
        score = float(figures[metric])
        shown = " ".join(f"{key} {float(figures[key]):.4f}" for key in metric_keys)
        logger.info("step %d: loss %.4f train acc %.3f %s", step, loss, acc, shown)
        if best is None or score > best:
            best, best_step, best_weights = score, step, model.get_weights()
        elif step - best_step >= patience:
            logger.info(
                "early stop at step %d (best %s %.4f at step %d)", step, metric, best, best_step
            )
            break
    bar.close()
    close_iterator(held)  # an early stop leaves sampling in flight: cancelled off this thread
    if best_weights is not None:
        model.set_weights(best_weights)
    else:
        best_step = len(history["step"])
    logger.info("trained %d steps in %.1f s", len(history["step"]), time.monotonic() - started)
    return history, best_step, best
