"""The demo's pictures and report: what a run measured, as PNGs (matplotlib, Agg backend: no display
needed), a text table for the terminal and a self-contained ``report.html`` beside the PNGs.

* :class:`Stage` / :class:`ServedCheck` / :class:`Summary` -- what a demo run measured.
* :func:`summary_text` -- the summary as plain-text tables (what ``memgraph-tf demo`` prints).
* :func:`training_curves`, :func:`confusion_figure`, :func:`throughput_figure` -- one PNG each;
  :func:`confusion_matrix` -- the counts behind the confusion figure.
* :func:`write_report` -- ``report.html`` holding the summary and the pictures (relative ``<img>``
  paths, so the folder can be moved or served as it is).
* :func:`architecture_figure` -- the README's picture (``python -m memgraph_tf.report
  architecture docs/architecture.png`` redraws it).

Importing this module needs the standard library alone; drawing imports numpy and matplotlib.
"""

from __future__ import annotations

import dataclasses
import functools
import html
import logging
import os
import pathlib
from collections.abc import Mapping, Sequence
from typing import Any

logger = logging.getLogger(__name__)

SERVED_VS_TEST_NOTE = (
    "Served accuracy is measured on {served} test nodes and test accuracy on {test}: a smaller "
    "sample, and each side samples its own neighbourhoods (the server one draw per node, keyed by "
    "the bundle's seed as batch inference samples, the in-process figure an average of {draws} "
    "draws), so the two differ by chance; agreement counts the nodes where the served and the "
    "in-process prediction name the same class."
)
"""Why the served accuracy differs from the test accuracy (formatted with ``served``, ``test``,
``draws``)."""
SAME_BLOBS_NOTE = (
    "Served accuracy is measured on {served} test nodes and test accuracy on {test}: a smaller "
    "sample, and the server scores one draw per node (keyed by the bundle's seed, as batch "
    "inference samples) where the test figure averages {draws} draws, so the two differ by "
    "chance; agreement compares the served class with the in-process model's on the same blobs, "
    "so anything below 1.000 is a fault."
)
"""The served note where the in-process predictions were made on the served blobs
(:attr:`Summary.same_blobs`)."""


@dataclasses.dataclass
class Stage:
    """One stage of the demo: ``count`` ``unit`` (nodes, steps, ...) in ``seconds``."""

    name: str
    seconds: float
    count: int | None = None
    unit: str = ""
    detail: str = ""

    @property
    def rate(self) -> float | None:
        """``count / seconds`` (None without a count)."""
        if not self.count or self.seconds <= 0:
            return None
        return self.count / self.seconds

    def rate_text(self) -> str:
        rate = self.rate
        if rate is None:
            return "-"
        unit = self.unit[:-1] if self.unit.endswith("s") else self.unit
        return f"{_num(rate)} {unit}/s"


@dataclasses.dataclass
class ServedCheck:
    """Nodes classified through a server (``how``), compared with the truth and with in-process
    predictions."""

    how: str
    nodes: int
    accuracy: float
    agreement: float
    seconds: float


@dataclasses.dataclass
class Summary:
    """What a demo run measured (see :func:`summary_text` for how it reads)."""

    dataset: str
    graph: str
    num_nodes: int
    num_edges: int
    num_features: int | str
    class_names: Sequence[str]
    train_nodes: int
    val_nodes: int
    test_nodes: int
    test_accuracy: float
    val_accuracy: float | None
    eval_draws: int
    published: Mapping[str, float]
    served: list[ServedCheck]
    stages: list[Stage]
    out_dir: str
    bundles: Mapping[str, str]
    commands: list[str]
    notes: list[str] = dataclasses.field(default_factory=list)
    best_possible: float | None = None
    """The exact best possible test accuracy of a generated graph (the shop graph's Bayes rule),
    shown beside the test accuracy instead of published figures."""
    model_name: str = "GraphSAGE"
    same_blobs: bool = False
    """Whether the served-vs-in-process agreement was measured on the same blobs."""

    @property
    def total_seconds(self) -> float:
        return sum(s.seconds for s in self.stages)


def _num(x: float) -> str:
    if x >= 100:
        return f"{x:,.0f}"
    if x >= 10:
        return f"{x:.1f}"
    return f"{x:.2f}"


def format_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A plain-text table: a header, a rule, one line per row; columns padded to their widest
    cell."""
    cells = [list(map(str, headers))] + [list(map(str, r)) for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def accuracy_rows(s: Summary) -> list[list[str]]:
    """``[what, figure, note]`` rows: test accuracy beside the published figures, then served
    checks."""
    rows = [
        [
            f"{s.model_name} test accuracy (this run)",
            f"{s.test_accuracy:.3f}",
            f"{s.test_nodes} test nodes, mean of {s.eval_draws} neighbourhood draws",
        ]
    ]
    if s.val_accuracy is not None:
        rows.append(
            [
                f"{s.model_name} validation accuracy (best)",
                f"{s.val_accuracy:.3f}",
                f"{s.val_nodes} nodes",
            ]
        )
    for method, acc in s.published.items():
        rows.append([f"{method}, published", f"{acc:.3f}", "same Planetoid split"])
    if s.best_possible is not None:
        rows.append(
            [
                "best possible accuracy (exact)",
                f"{s.best_possible:.3f}",
                "the Bayes rule over the graph's planted signal",
            ]
        )
        rows.append(
            [
                "test accuracy / best possible",
                f"{s.test_accuracy / s.best_possible:.3f}",
                f"{s.test_nodes} test nodes",
            ]
        )
    for c in s.served:
        rows.append([f"served accuracy, {c.how}", f"{c.accuracy:.3f}", f"{c.nodes} test nodes"])
        rows.append(
            [
                f"served vs in-process agreement, {c.how}",
                f"{c.agreement:.3f}",
                f"{c.nodes} test nodes",
            ]
        )
    return rows


def stage_rows(s: Summary) -> list[list[str]]:
    """``[stage, time, work, throughput]`` rows."""
    rows = []
    for st in s.stages:
        work = f"{st.count:,} {st.unit}" if st.count else ""
        if st.detail:
            work = f"{work} ({st.detail})" if work else st.detail
        rows.append([st.name, f"{st.seconds:.1f} s", work, st.rate_text()])
    rows.append(["total", f"{s.total_seconds:.1f} s", "", ""])
    return rows


def served_note(s: Summary) -> str:
    served = max((c.nodes for c in s.served), default=0)
    note = SAME_BLOBS_NOTE if s.same_blobs else SERVED_VS_TEST_NOTE
    return note.format(served=served, test=s.test_nodes, draws=s.eval_draws)


def summary_text(s: Summary) -> str:
    """The summary as the terminal shows it: the dataset, an accuracy table, a stage table, the
    bundles and the commands to go on."""
    head = (
        f"{s.dataset}: {s.num_nodes:,} nodes, {s.num_edges:,} edges, {_features(s)}, "
        f"{len(s.class_names)} classes; train/val/test "
        f"{s.train_nodes}/{s.val_nodes}/{s.test_nodes}; "
        f"graph: {s.graph}"
    )
    parts = [head, "", format_table(["accuracy", "figure", "on"], accuracy_rows(s))]
    if s.served:
        parts += ["", _wrap(served_note(s))]
    parts += ["", format_table(["stage", "time", "work", "throughput"], stage_rows(s))]
    parts += ["", f"output folder: {s.out_dir}"]
    parts += [f"  {name}: {path}" for name, path in s.bundles.items()]
    parts += [f"  note: {n}" for n in s.notes]
    return "\n".join(parts)


def _features(s: Summary) -> str:
    if isinstance(s.num_features, str):
        return f"features {s.num_features}"
    return f"{s.num_features:,} features"


def _wrap(text: str, width: int = 100) -> str:
    import textwrap

    return "\n".join(textwrap.wrap(text, width))


# ------------------------------------------------------------------------------------------------
# pictures
# ------------------------------------------------------------------------------------------------


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _save(fig: Any, path: str | os.PathLike[str]) -> pathlib.Path:
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    _pyplot().close(fig)
    logger.debug("wrote %s", path)
    return path


def training_curves(
    history: Mapping[str, Sequence[float]],
    path: str | os.PathLike[str],
    *,
    test_accuracy: float | None = None,
    published: Mapping[str, float] | None = None,
    best_step: int | None = None,
    title: str = "training",
    best_possible: float | None = None,
) -> pathlib.Path:
    """Loss per step (left) and accuracy (right: training batch per step, validation per evaluation,
    the test accuracy, the published figures and ``best_possible`` as horizontal lines).
    ``history``: as :class:`memgraph_tf.client.TrainResult` records it (``step``, ``loss``,
    ``train_accuracy``, ``eval_step``, ``val_accuracy``)."""
    import numpy as np

    plt = _pyplot()
    fig, (ax_loss, ax_acc) = plt.subplots(1, 2, figsize=(11, 4))
    steps = np.asarray(history["step"])
    loss = np.asarray(history["loss"])
    ax_loss.plot(steps, loss, color="#1f77b4", alpha=0.35, lw=1, label="loss per step")
    if len(loss) >= 10:
        k = max(5, len(loss) // 20)
        smooth = np.convolve(loss, np.ones(k) / k, mode="valid")
        ax_loss.plot(steps[k - 1 :], smooth, color="#1f77b4", lw=2, label=f"mean of {k} steps")
    ax_loss.set_xlabel("training step")
    ax_loss.set_ylabel("loss (cross-entropy + L2)")
    ax_loss.set_title("loss")
    ax_loss.grid(alpha=0.3)
    ax_loss.legend(loc="upper right")

    ax_acc.plot(
        steps, history["train_accuracy"], color="#ff7f0e", alpha=0.5, lw=1, label="train batch"
    )
    if history.get("eval_step"):
        ax_acc.plot(
            history["eval_step"],
            history["val_accuracy"],
            "o-",
            color="#2ca02c",
            ms=4,
            lw=1.5,
            label="validation",
        )
    if best_step:
        ax_acc.axvline(
            best_step, color="grey", ls=":", lw=1, label=f"best step ({best_step}): kept"
        )
    if test_accuracy is not None:
        ax_acc.axhline(
            test_accuracy, color="#d62728", lw=1.5, label=f"test, this run: {test_accuracy:.3f}"
        )
    for (method, acc), style in zip((published or {}).items(), ("--", "-.", ":")):
        ax_acc.axhline(acc, color="black", ls=style, lw=1, label=f"{method} published: {acc:.3f}")
    if best_possible is not None:
        ax_acc.axhline(
            best_possible, color="black", ls="--", lw=1, label=f"best possible: {best_possible:.3f}"
        )
    ax_acc.set_ylim(0, 1.02)
    ax_acc.set_xlabel("training step")
    ax_acc.set_ylabel("accuracy")
    ax_acc.set_title("accuracy")
    ax_acc.grid(alpha=0.3)
    ax_acc.legend(loc="lower right", fontsize=8)
    fig.suptitle(title)
    return _save(fig, path)


def confusion_matrix(truth: Sequence[int], predicted: Sequence[int], num_classes: int) -> Any:
    """Counts ``[true class, predicted class]`` (int64 ``[C, C]``); truths < 0 are skipped."""
    import numpy as np

    truth = np.asarray(truth, dtype=np.int64)
    predicted = np.asarray(predicted, dtype=np.int64)
    keep = truth >= 0
    out = np.zeros((num_classes, num_classes), dtype=np.int64)
    np.add.at(out, (truth[keep], predicted[keep]), 1)
    return out


def confusion_figure(
    matrix: Any,
    class_names: Sequence[str],
    path: str | os.PathLike[str],
    *,
    title: str = "confusion matrix",
) -> pathlib.Path:
    """Rows: true class, columns: predicted class; colour = share of the row, text = count."""
    import numpy as np

    plt = _pyplot()
    m = np.asarray(matrix)
    share = m / np.maximum(m.sum(axis=1, keepdims=True), 1)
    k = len(class_names)
    size = max(5.0, 0.9 * k + 2.5)
    fig, ax = plt.subplots(figsize=(size + 1.5, size))
    im = ax.imshow(share, cmap="Blues", vmin=0, vmax=1)
    for i in range(k):
        for j in range(k):
            ax.text(
                j,
                i,
                str(int(m[i, j])),
                ha="center",
                va="center",
                fontsize=9,
                color="white" if share[i, j] > 0.55 else "black",
            )
    labels = [n.replace("_", " ") for n in class_names]
    ax.set_xticks(range(k), labels, rotation=35, ha="right")
    ax.set_yticks(range(k), [f"{n} ({int(m[i].sum())})" for i, n in enumerate(labels)])
    ax.set_xlabel("predicted class")
    ax.set_ylabel("true class (test nodes)")
    ax.set_title(title)
    fig.colorbar(im, ax=ax, fraction=0.046, pad=0.04, label="share of the true class")
    return _save(fig, path)


def throughput_figure(
    stages: Sequence[Stage], path: str | os.PathLike[str], *, title: str = "throughput per stage"
) -> pathlib.Path:
    """Left: items per second of each stage that has a count (log scale); right: seconds per
    stage."""
    plt = _pyplot()
    rated = [s for s in stages if s.rate is not None]
    fig, (ax_rate, ax_time) = plt.subplots(
        1, 2, figsize=(12, max(3.0, 0.5 * len(stages) + 1.5)), gridspec_kw={"width_ratios": [3, 2]}
    )
    names = [s.name for s in rated][::-1]
    rates = [s.rate for s in rated][::-1]
    bars = ax_rate.barh(names, rates, color="#1f77b4")
    ax_rate.set_xscale("log")
    ax_rate.set_xlim(min(rates, default=1) / 2, max(rates, default=1) * 30)
    for bar, s in zip(bars, rated[::-1]):
        ax_rate.text(
            bar.get_width() * 1.1,
            bar.get_y() + bar.get_height() / 2,
            s.rate_text(),
            va="center",
            fontsize=9,
        )
    ax_rate.set_xlabel("items per second (log scale)")
    ax_rate.set_title("throughput")
    ax_rate.grid(axis="x", alpha=0.3)
    names = [s.name for s in stages][::-1]
    secs = [s.seconds for s in stages][::-1]
    bars = ax_time.barh(names, secs, color="#ff7f0e")
    ax_time.set_xlim(0, max(secs, default=1) * 1.3)
    for bar, sec in zip(bars, secs):
        ax_time.text(
            bar.get_width() + max(secs) * 0.02,
            bar.get_y() + bar.get_height() / 2,
            f"{sec:.1f} s",
            va="center",
            fontsize=9,
        )
    ax_time.set_xlabel("seconds")
    ax_time.set_title("time")
    ax_time.grid(axis="x", alpha=0.3)
    fig.suptitle(title)
    fig.tight_layout()
    return _save(fig, path)


def _figure_box(ax: Any, x, y, w, h, title: str, lines: list[str], color: str) -> None:
    """A rounded box on ``ax`` at (x, y) of size (w, h): ``title`` in bold, ``lines`` below."""
    from matplotlib.patches import FancyBboxPatch

    ax.add_patch(
        FancyBboxPatch(
            (x, y),
            w,
            h,
            boxstyle="round,pad=0.05,rounding_size=0.15",
            fc=color,
            ec="#333333",
            lw=1.2,
        )
    )
    ax.text(x + w / 2, y + h - 0.28, title, ha="center", va="top", fontsize=11, weight="bold")
    ax.text(
        x + w / 2,
        y + h - 0.7,
        "\n".join(lines),
        ha="center",
        va="top",
        fontsize=8.5,
        linespacing=1.4,
    )


def _figure_arrow(ax: Any, x1, y1, x2, y2, rad: float = 0.0) -> None:
    """An arrow on ``ax`` from (x1, y1) to (x2, y2), bent by ``rad``."""
    from matplotlib.patches import FancyArrowPatch

    ax.add_patch(
        FancyArrowPatch(
            (x1, y1),
            (x2, y2),
            arrowstyle="-|>",
            mutation_scale=14,
            lw=1.4,
            color="#333333",
            connectionstyle=f"arc3,rad={rad}",
        )
    )


def architecture_figure(path: str | os.PathLike[str]) -> pathlib.Path:
    """The README's architecture picture: Memgraph (query modules) -> blobs -> TensorFlow (op) ->
    SavedModel bundles -> TF Serving / the local server -> clients."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(12, 6.4))
    ax.set_xlim(0, 12)
    ax.set_ylim(0, 6.4)
    ax.axis("off")

    box = functools.partial(_figure_box, ax)
    arrow = functools.partial(_figure_arrow, ax)

    def label(x, y, text):
        ax.text(x, y, text, ha="center", va="center", fontsize=8, style="italic")

    top, h = 2.5, 2.8
    box(
        0.2,
        top,
        3.0,
        h,
        "Memgraph",
        [
            "your graph: nodes with",
            "feature lists, edges",
            "",
            "CALL tf_features.pack",
            "CALL tf_features.sample",
            "(query modules, Python)",
        ],
        "#e8f0fe",
    )
    box(
        4.5,
        top,
        3.0,
        h,
        "TensorFlow (client)",
        [
            "memgraph_tf.client:",
            "tf.data over Cypher,",
            "UnpackBlob C++ op,",
            "GraphSAGE training,",
            "batch inference",
        ],
        "#fff4e5",
    )
    box(
        8.8,
        top,
        3.0,
        h,
        "serving",
        [
            "SavedModel bundles:",
            "op-free (stock TF Serving)",
            "or with the op;",
            "memgraph-tf serve (REST),",
            ":classify by node_id",
        ],
        "#e9f7ef",
    )
    box(
        4.5,
        0.15,
        3.0,
        1.5,
        "embedded runtime",
        ["the same query modules", "in-process (CI, the demo)"],
        "#f3e8fd",
    )
    box(8.8, 0.15, 3.0, 1.5, "clients", ["curl, ServingClient,", "memgraph-tf classify"], "#fdecea")
    arrow(3.25, 4.5, 4.45, 4.5)
    label(3.85, 4.85, "one blob per\ncall (base64url)")
    arrow(4.45, 3.2, 3.25, 3.2)
    label(3.85, 3.55, "predictions\nwritten back")
    arrow(7.55, 4.2, 8.75, 4.2)
    label(8.15, 4.5, "export_bundle")
    arrow(10.3, 1.7, 10.3, 2.45)
    label(10.95, 2.07, "POST :classify")
    arrow(6.0, 1.7, 6.0, 2.45)
    label(6.6, 2.07, "same blobs")
    arrow(10.3, 5.35, 1.7, 5.35, rad=0.18)
    label(6.0, 6.2, "serve --graph: node_id -> neighbourhood blob, straight from the database")
    ax.set_title(
        "memgraph-tf: the graph database does the graph work, TensorFlow the learning", fontsize=12
    )
    return _save(fig, path)


# ------------------------------------------------------------------------------------------------
# report.html
# ------------------------------------------------------------------------------------------------


def _html_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in r) + "</tr>" for r in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def write_report(
    out_dir: str | os.PathLike[str],
    summary: Summary,
    images: Mapping[str, str | os.PathLike[str]],
    name: str = "report.html",
) -> pathlib.Path:
    """Writes ``out_dir/name``: the summary tables, each picture in ``images`` (caption -> path;
    referenced relative to ``out_dir``, so they must lie inside it) and the commands to go on."""
    out = pathlib.Path(out_dir)
    figures = []
    for caption, img in images.items():
        rel = os.path.relpath(pathlib.Path(img).resolve(), out.resolve())
        if rel.startswith(".."):
            raise ValueError(f"images[{caption!r}]: expected a file inside {out}, got {img}")
        figures.append(
            f'<figure><img src="{html.escape(pathlib.PurePath(rel).as_posix())}" '
            f'alt="{html.escape(caption)}"><figcaption>{html.escape(caption)}</figcaption></figure>'
        )
    s = summary
    bundles = "".join(
        f"<li>{html.escape(k)}: <code>{html.escape(v)}</code></li>" for k, v in s.bundles.items()
    )
    notes = "".join(f"<li>{html.escape(n)}</li>" for n in s.notes)
    commands = html.escape("\n".join(s.commands))
    page = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>memgraph-tf demo: {html.escape(s.dataset)}</title>
<style>
body {{ font-family: system-ui, sans-serif; max-width: 1100px; margin: 2em auto; padding: 0 1em;
       color: #222; }}
table {{ border-collapse: collapse; margin: 1em 0; }}
th, td {{ border: 1px solid #ccc; padding: 4px 10px; text-align: left; }}
th {{ background: #f3f3f3; }}
figure {{ margin: 1.5em 0; }} img {{ max-width: 100%; border: 1px solid #ddd; }}
pre {{ background: #f6f8fa; padding: 1em; overflow-x: auto; }}
</style></head><body>
<h1>memgraph-tf demo: {html.escape(s.dataset)}</h1>
<p>{s.num_nodes:,} nodes, {s.num_edges:,} edges, {html.escape(_features(s))},
{len(s.class_names)} classes ({html.escape(", ".join(s.class_names))});
train/val/test {s.train_nodes}/{s.val_nodes}/{s.test_nodes};
graph: {html.escape(s.graph)}.</p>
<h2>Accuracy</h2>
{_html_table(["accuracy", "figure", "on"], accuracy_rows(s))}
<p>{html.escape(served_note(s)) if s.served else ""}</p>
<h2>Stages</h2>
{_html_table(["stage", "time", "work", "throughput"], stage_rows(s))}
<h2>Pictures</h2>
{"".join(figures)}
<h2>Bundles</h2>
<ul>{bundles}</ul>
{f"<h2>Notes</h2><ul>{notes}</ul>" if notes else ""}
<h2>Go on</h2>
<pre>{commands}</pre>
</body></html>
"""
    path = out / name
    path.write_text(page, encoding="utf-8")
    return path


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m memgraph_tf.report architecture PATH``: redraws the README's picture."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m memgraph_tf.report")
    parser.add_argument("what", choices=["architecture"])
    parser.add_argument("path")
    args = parser.parse_args(argv)
    architecture_figure(args.path)
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
