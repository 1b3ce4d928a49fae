"""The end-to-end demo (``memgraph-tf demo``): the whole path a user's data takes, leaving behind
what a person can follow up -- bundles, pictures and a report in ``--out`` (default
``./memgraph-tf-demo/``).

1. **load** the dataset (Cora by default, shipped in the package) into a graph: the in-process
   Memgraph runtime, where the unchanged ``query_modules/tf_features.py`` runs through Memgraph's
   real ``mgp.py``; or, with ``--graph bolt://...``, a real Memgraph, written through Cypher in
   ``UNWIND`` batches (:func:`memgraph_tf.client.loaders.load_into_graph`).
2. **train** GraphSAGE with features and neighbourhoods coming only through ``tf_features.*`` blobs,
   unpacked by the C++ op; measure test accuracy (mean of several neighbourhood draws).
   On ``--dataset people`` (the planted property graph) the :Person properties are profiled
   and their feature spec inferred first (printed); the model encodes the raw property columns.
   On ``--dataset ledger`` (accounts, payees and transfers) the payees are drawn by their limit
   and the transfers as of each account's time.
3. **export** two TF Serving bundles into ``OUT/``: ``portable/`` (stock ops only, for the stock
   ``tensorflow/serving`` image) and ``with_op/`` (the C++ op inside).
4. **serve** the portable bundle with the local TF-Serving-compatible server (REST, and gRPC where
   :mod:`memgraph_tf.serving.grpc_server` is present) and classify test nodes by ``node_id`` -- the
   server fetches each node's neighbourhood blob from the graph -- comparing with in-process
   predictions.
5. **batch inference**: classify every node and write the class back to the graph.
6. **report**: ``training.png``, ``confusion.png``, ``throughput.png`` and ``report.html`` in
   ``OUT/``, a summary table on the terminal, and the commands to go on.

Nothing here needs a Memgraph server or TF Serving; the same calls work against them (see README).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import logging
import os
import pathlib
import re
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from memgraph_tf import datasets, ledger_datasets, property_datasets, report, typed_datasets

logger = logging.getLogger(__name__)

DEFAULT_OUT = "memgraph-tf-demo"
MODEL_NAME = "GraphSage"
EVAL_DRAWS = 10
STAGES = 6
"""The demo's stages (the ``[i/6]`` of its printed lines), on every dataset."""
IN_PROCESS_TEXT = "the in-process runtime (the query modules through mgp.py)"
"""Where stage 1 says the graph was loaded when it runs in-process."""
GRAPH_LABEL = "Paper"
GRAPH_EDGE_TYPE = "CITES"
#: The largest share of non-zero feature values for which the demo exports sparse-layout bundles.
SPARSE_BELOW = 0.1
SYNTHETIC_RECIPE = {"steps": 60, "eval_every": 10, "patience": 60, "batch_size": 80}
"""Overrides of ``PLANETOID_RECIPE`` for the small synthetic graph (CI)."""
SHOP = typed_datasets.SHOP_DATASET
"""``--dataset shop``: the generated typed shop graph (:func:`memgraph_tf.typed_datasets.
demo_shop_graph`), trained with the typed GraphSAGE."""
SHOP_NUM_NEIGHBORS = {
    "(:User)-[:BOUGHT]->(:Product)": [5, 0],
    "(:User)-[:FOLLOWS]->(:User)": [10, 0],
    "(:Product)-[:IN]->(:Category)": [0, 1],
}
"""The shop demo's typed sampling: a user's purchases and follows, then each product's category
(the settings of ``benchmarks/typed_accuracy.py``)."""
SHOP_PROPERTIES = {"User": ["features"], "Product": ["features"], "Category": ["features"]}
SHOP_OPTIONS = {"id_property": "id"}
"""Seed keys are the ``id`` property of the :User nodes (ids are numbered per label)."""
SHOP_RECIPE = {
    "hidden_units": 64,
    "dropout": 0.2,
    "l2": 1e-5,
    "learning_rate": 0.01,
    "batch_size": 256,
    "steps": 120,
    "eval_every": 20,
    "eval_draws": 2,
    "patience": 120,
}
"""``train_typed_graphsage`` settings of the shop demo."""

_NATIVE_LOG = re.compile(
    r"^(WARNING: All log messages before absl::InitializeLog\(\) is called are written to STDERR"
    r"|[IW]\d{4} \d\d:\d\d:\d+\.\d+\s+\d+ \S+:\d+\] "
    r"|E\d{4} \d\d:\d\d:\d+\.\d+\s+\d+ \S+:\d+\] failed call to cuInit"
    r"|To enable the following instructions:)"
)
"""TensorFlow's native start-up lines (absl info/warning lines written before its logging is set up,
and the ``cuInit`` error of a machine without a GPU), which ``TF_CPP_MIN_LOG_LEVEL`` does not
reach."""


def _say(message: str = "") -> None:
    print(message, flush=True)


@contextlib.contextmanager
def native_log_filter() -> Iterator[None]:
    """While active, file descriptor 2 goes to a temporary file; on exit its lines come back to
    stderr except TensorFlow's native start-up lines (:data:`_NATIVE_LOG`). Other errors, fatal
    lines and Python tracebacks pass through."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            text = tmp.read().decode("utf-8", "replace")
            kept = [line for line in text.splitlines(keepends=True) if not _NATIVE_LOG.match(line)]
            if kept:
                sys.stderr.write("".join(kept))
                sys.stderr.flush()


def import_tensorflow_quietly() -> Any:
    """Imports TensorFlow and initialises its devices inside :func:`native_log_filter`; returns the
    module."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    with native_log_filter():
        import tensorflow as tf

        tf.config.list_physical_devices()
        tf.constant(0)  # the first op initialises the devices (the cuInit line)
    logging.getLogger("tensorflow").setLevel(logging.ERROR)
    return tf


class _Clock:
    def __init__(self) -> None:
        self.started = time.perf_counter()

    @property
    def seconds(self) -> float:
        return time.perf_counter() - self.started


def _bar(progress: bool, **kwargs: Any) -> Any:
    from tqdm.auto import tqdm

    return tqdm(disable=not progress, leave=False, **kwargs)


# ------------------------------------------------------------------------------------------------
# the stages
# ------------------------------------------------------------------------------------------------


def _load(
    data: datasets.Planetoid, graph: str | None, replace: bool, progress: bool
) -> tuple[Any, dict, Any, str]:
    """(source, sampling options, embedded graph or None, description)."""
    from memgraph_tf import client
    from memgraph_tf.client import loaders

    if graph is None:
        g = datasets.planetoid_graph(data)
        return (
            client.EmbeddedSource(g),
            {},
            g,
            IN_PROCESS_TEXT,
        )
    source = client.connect(graph)
    total = data.num_nodes + len(data.edges)
    with _bar(progress, total=total, desc="load", unit="row") as bar:
        loaders.load_into_graph(
            source,
            data,
            label=GRAPH_LABEL,
            edge_type=GRAPH_EDGE_TYPE,
            replace=replace,
            progress=lambda kind, n: bar.update(n),
        )
    return source, {"label": GRAPH_LABEL, "id_property": "id"}, None, f"{source!r}"


def _loaded(stages: list[report.Stage], seconds: float, num_nodes: int, graph: str | None) -> None:
    """Appends stage 1 of both demos to ``stages``: ``num_nodes`` loaded in ``seconds`` into the
    in-process runtime (``graph`` None) or into ``graph`` through Cypher."""
    how = "embedded runtime" if graph is None else "Cypher UNWIND batches"
    stages.append(report.Stage("load graph", seconds, num_nodes, "nodes", how))


def _trained(stages: list[report.Stage], seconds: float, result: Any, detail: str) -> int:
    """Appends the training of stage 2 (``result``: what it returned) to ``stages``; returns the
    number of steps trained."""
    trained_steps = len(result.history["step"])
    stages.append(report.Stage("train", seconds, trained_steps, "steps", detail))
    return trained_steps


def _test_stage(
    predict: Callable[..., Any],
    classes: Any,
    test_ids: list[int],
    stages: list[report.Stage],
    *,
    seed: int,
    progress: bool,
) -> tuple[Any, Any, float]:
    """The test evaluation of stage 2 of both demos: ``predict(seed=, draws=)`` gives the class
    probabilities of ``test_ids`` averaged over :data:`EVAL_DRAWS` neighbourhood samples (one
    pipeline and one traced model call for all draws; the progress bar moves once they are done),
    seeded apart from training's ``seed``; appends the stage to ``stages``. Returns (predicted
    classes, true classes: ``classes`` indexed by ``test_ids``, test accuracy)."""
    import numpy as np

    clock = _Clock()
    with _bar(progress, total=EVAL_DRAWS, desc="test", unit="draw") as bar:
        probs = np.asarray(predict(seed=(seed + 1) * 1000, draws=EVAL_DRAWS))
        bar.update(EVAL_DRAWS)
    predicted = probs.argmax(axis=1)
    truth = classes[test_ids]
    test_accuracy = float(np.mean(predicted == truth))
    stages.append(
        report.Stage(
            "test evaluation",
            clock.seconds,
            len(test_ids) * EVAL_DRAWS,
            "nodes",
            f"{len(test_ids)} nodes x {EVAL_DRAWS} draws",
        )
    )
    return predicted, truth, test_accuracy


def _grpc_classify(
    server: Any, ids: list[int], progress: bool
) -> tuple[list[str], float, str] | None:
    """gRPC ``Classify`` of ``ids`` by ``node_id`` on the running model server (a second front end
    over the same loaded model): (top labels, seconds, target), or None where
    :mod:`memgraph_tf.serving.grpc_server` / ``grpc_client`` are not part of this build."""
    try:
        from memgraph_tf.serving.grpc_client import GrpcServingClient
        from memgraph_tf.serving.grpc_server import start_grpc_server
    except ImportError:
        return None
    with (
        start_grpc_server(server) as running,
        GrpcServingClient(running.target, MODEL_NAME, timeout_s=60) as client,
    ):
        labels, seconds = _classify_by_node_id(client, ids, progress, "gRPC")
        return labels, seconds, running.target


def _classify_by_node_id(
    client: Any, ids: list[int], progress: bool, desc: str
) -> tuple[list[str], float]:
    """Classify ``ids`` by ``node_id`` through a REST or gRPC client, 16 nodes a request: (top
    labels, seconds). The first call (it warms the model up / sets up the channel) is not timed."""
    client.classify([{"node_id": int(ids[0])}])
    clock = _Clock()
    results = []
    with _bar(progress, total=len(ids), desc=desc, unit="node") as bar:
        for lo in range(0, len(ids), 16):
            part = ids[lo : lo + 16]
            results += client.classify([{"node_id": int(i)} for i in part])
            bar.update(len(part))
    seconds = clock.seconds
    return [max(r, key=lambda p: p[1])[0] for r in results], seconds


def bundle_layout(features: Any) -> str:
    """The sample layout the demo exports its bundles in (docs/blob-format.md): ``sparse`` when at
    most :data:`SPARSE_BELOW` of the feature values are non-zero (Planetoid's bag-of-words
    features: about 1%), where it makes a Cora node's blob ~160x smaller than ``dense`` and
    sampling it ~8x faster, with the same predictions; else ``dense``."""
    import numpy as np

    features = np.asarray(features)
    nonzero = np.count_nonzero(features) / max(features.size, 1)
    return "sparse" if nonzero <= SPARSE_BELOW else "dense"


def _export_stage(
    model: Any,
    out: pathlib.Path,
    stages: list[report.Stage],
    progress: bool,
    *,
    sample_options: Mapping[str, Any] | None,
    layout: str | None = None,
    seed_label: str | None = None,
) -> tuple[Any, Any, dict[str, str]]:
    """Stage 3 of both demos: exports ``model`` as version 1 of :data:`MODEL_NAME` twice,
    replacing what is there -- op-free into ``out/portable/`` and with the C++ op into
    ``out/with_op/`` -- with ``sample_options`` and ``layout`` (None: the bundles' default);
    appends the stage to ``stages`` and prints its line. ``seed_label``: a typed model's seed
    label, named in the line (its bundles are called typed). Returns (portable, with_op, the
    report's ``{what: path}`` of both)."""
    from memgraph_tf.serving import export_bundle

    clock = _Clock()
    infos = []
    with _bar(progress, total=2, desc="export", unit="bundle") as bar:
        for kind, use_op in (("portable", False), ("with_op", True)):
            infos.append(
                export_bundle(
                    model,
                    out / kind,
                    MODEL_NAME,
                    1,
                    use_op=use_op,
                    overwrite=True,
                    layout=layout,
                    sample_options=sample_options,
                )
            )
            bar.update(1)
    portable, with_op = infos
    typed = "" if seed_label is None else "typed "
    detail = f"2 {typed}bundles: op-free + with the op" + (f"; {layout} layout" if layout else "")
    stages.append(report.Stage("export bundles", clock.seconds, None, "", detail))
    bundles = {
        f"op-free {typed}bundle (stock TF Serving)": str(portable.path),
        f"{typed}bundle with the C++ op": str(with_op.path),
    }
    seed = "" if seed_label is None else f", typed: seed label :{seed_label}"
    _say(
        f"[3/{STAGES}] exported {portable.path} (stock ops only) and {with_op.path} (the op)"
        f"{seed} ({clock.seconds:.1f} s)"
    )
    return portable, with_op, bundles


def _serve_stage(
    out: pathlib.Path,
    source: Any,
    ids: list[int],
    names: list[str],
    classes: Any,
    local_classes: Any,
    stages: list[report.Stage],
    notes: list[str],
    progress: bool,
    *,
    nodes: str,
    compared_with: str,
    noun: str,
) -> list[report.ServedCheck]:
    """Stage 4 of both demos: serves the op-free bundle in ``out/portable/`` with the local model
    server (node ids read from ``source``) and classifies ``ids`` by ``node_id`` over REST, then
    over gRPC where this build has it (else a line in ``notes``); checks each front end's classes
    against the true ``classes`` (indexed by node id) and the in-process ``local_classes``;
    appends each front end's timing to ``stages``; prints a line per front end (``nodes``: what
    the ids are; ``compared_with``: what the in-process classes are) and one example
    (``noun``: what a node is called). Returns the checks, REST's first."""
    from memgraph_tf.serving import ModelServer, ServingClient, start_server

    served: list[report.ServedCheck] = []
    server = ModelServer(out / "portable" / MODEL_NAME, MODEL_NAME, graph_source=source)
    with (
        start_server(server) as running,
        ServingClient(running.url, MODEL_NAME, timeout_s=60) as client,
    ):
        labels, rest_seconds = _classify_by_node_id(client, ids, progress, "serve")
        served.append(
            _check(
                "REST :classify by node_id",
                labels,
                names,
                ids,
                classes,
                local_classes,
                rest_seconds,
            )
        )
        stages.append(
            report.Stage("serve: REST :classify", rest_seconds, len(ids), "nodes", "by node_id")
        )
        grpc = _grpc_classify(server, ids, progress)
        if grpc is not None:
            g_labels, g_seconds, _ = grpc
            served.append(
                _check(
                    "gRPC Classify by node_id",
                    g_labels,
                    names,
                    ids,
                    classes,
                    local_classes,
                    g_seconds,
                )
            )
            stages.append(
                report.Stage("serve: gRPC Classify", g_seconds, len(ids), "nodes", "by node_id")
            )
        else:
            notes.append(
                "gRPC: not served by this build (memgraph_tf.serving.grpc_server is not present)"
            )
    for c in served:
        _say(
            f"[4/{STAGES}] {c.how}: {c.nodes} test {nodes} in {c.seconds * 1000:.0f} ms; "
            f"accuracy {c.accuracy:.3f}, agreement with {compared_with} {c.agreement:.3f}"
        )
    _say(f"      e.g. {noun} {ids[0]} -> {labels[0]} (truth: {names[int(classes[ids[0]])]})")
    return served


def _classify_stage(
    source: Any,
    out: pathlib.Path,
    stages: list[report.Stage],
    progress: bool,
    *,
    nodes: str,
    embedded: Any = None,
    sample_ids: list[int] | None = None,
) -> int:
    """Stage 5 of both demos: batch inference over every node with the op-free bundle in
    ``out/portable/`` run in-process, as ``memgraph-tf classify --model`` runs it
    (:mod:`memgraph_tf.batch`): the class name written to ``predicted_class``, its score and the
    model version beside it (:func:`~memgraph_tf.client.node_tables.property_names`). Appends the
    stage to ``stages`` and prints its line (``nodes``: what was classified; with ``embedded``,
    the in-process graph, and ``sample_ids``: the classes written to those nodes). Returns the
    number of nodes written."""
    from memgraph_tf.batch import BatchClassifier, BundleBackend

    clock = _Clock()
    with BundleBackend(out / "portable" / MODEL_NAME) as backend:
        load_s = clock.seconds
        summary = BatchClassifier(
            source, backend, write_property="predicted_class", overwrite=True, progress=progress
        ).run()
    written, seconds = summary.classified, clock.seconds
    how = f"memgraph_tf.batch, the op-free bundle; loaded in {load_s:.1f} s"
    stages.append(report.Stage("batch inference", seconds, written, "nodes", how))
    sample = ""
    if embedded is not None and sample_ids:
        sample = "; e.g. " + ", ".join(
            f"{n}: {embedded.get_property(n, 'predicted_class')}" for n in sample_ids
        )
    _say(
        f"[5/{STAGES}] batch inference wrote the predicted class of {written:,} {nodes} back to "
        f"the graph ({seconds:.1f} s, {how}, then {summary.elapsed_s:.1f} s to classify: "
        f"{written / max(summary.elapsed_s, 1e-9):,.0f} nodes/s with the model's first call in "
        f"this process){sample}"
    )
    return written


def _report_stage(
    out: pathlib.Path,
    stages: list[report.Stage],
    result: Any,
    truth: Any,
    predicted: Any,
    *,
    title: str,
    test_nodes: str,
    test_accuracy: float,
    served: list[report.ServedCheck],
    bundles: Mapping[str, str],
    notes: list[str],
    published: Mapping[str, float],
    best_possible: float | None = None,
    model_name: str = "GraphSAGE",
    **summary_fields: Any,
) -> tuple[report.Summary, pathlib.Path, dict[str, pathlib.Path]]:
    """Stage 6 of both demos: ``training.png`` (``result``'s history, the test accuracy beside
    ``published`` figures or ``best_possible``), ``confusion.png`` (``truth`` against
    ``predicted`` on the test nodes; ``test_nodes``: what they are), ``throughput.png`` (the
    ``stages``) and ``report.html`` in ``out``; appends the stage to ``stages`` and prints its
    line. ``summary_fields``: the :class:`~memgraph_tf.report.Summary` fields of the dataset
    (``class_names`` among them). Returns (summary, report.html, ``{caption: picture}``)."""
    clock = _Clock()
    names = list(summary_fields["class_names"])
    images = {
        "Training: loss, training and validation accuracy": report.training_curves(
            result.history,
            out / "training.png",
            test_accuracy=test_accuracy,
            published=published,
            best_step=result.best_step,
            title=f"{title}: {model_name} training",
            best_possible=best_possible,
        ),
        "Confusion matrix on the test nodes": report.confusion_figure(
            report.confusion_matrix(truth, predicted, len(names)),
            names,
            out / "confusion.png",
            title=f"{title}, {len(truth)} {test_nodes}: accuracy {test_accuracy:.3f}",
        ),
    }
    images["Throughput and time per stage"] = report.throughput_figure(
        stages, out / "throughput.png", title=f"{title}: the demo's stages"
    )
    stages.append(report.Stage("pictures + report", clock.seconds))
    summary = report.Summary(
        test_nodes=len(truth),
        test_accuracy=test_accuracy,
        val_accuracy=result.best_val_accuracy,
        eval_draws=EVAL_DRAWS,
        published=published,
        served=served,
        stages=stages,
        out_dir=str(out),
        bundles=bundles,
        notes=notes,
        best_possible=best_possible,
        model_name=model_name,
        **summary_fields,
    )
    html = report.write_report(out, summary, images)
    _say(
        f"[6/{STAGES}] wrote {', '.join(p.name for p in images.values())} and {html.name} into "
        f"{out} ({clock.seconds:.1f} s)"
    )
    return summary, html, images


def _figures(
    summary: report.Summary,
    html: pathlib.Path,
    images: Mapping[str, pathlib.Path],
    portable: Any,
    with_op: Any,
    written: int,
    **extra: Any,
) -> dict[str, Any]:
    """What :func:`run` returns (``extra``: figures of one demo only)."""
    return {
        "dataset": summary.dataset,
        "test_accuracy": summary.test_accuracy,
        **extra,
        "val_accuracy": summary.val_accuracy,
        "served_accuracy": summary.served[0].accuracy,
        "served_agreement": summary.served[0].agreement,
        "written": written,
        "seconds": summary.total_seconds,
        "summary": summary,
        "files": {
            "report": html,
            **{p.stem: p for p in images.values()},
            "portable": portable.path,
            "with_op": with_op.path,
        },
    }


def _commands(
    out: pathlib.Path, dataset: str, graph: str | None, example_ids: list[int]
) -> list[str]:
    base = out / "portable" / MODEL_NAME
    graph_arg = graph if graph else f"embedded:{dataset}"
    examples = ", ".join(f'{{"node_id": {i}}}' for i in example_ids)
    return [
        "# serve the op-free bundle (stock TF Serving runs it too; see docs/serving.md), "
        "node ids read from the graph:",
        f"memgraph-tf serve {base} --graph {graph_arg} --port 8501 --grpc-port 8500 &",
        "# classify nodes by node id:",
        f"curl -s -X POST http://127.0.0.1:8501/v1/models/{MODEL_NAME}:classify "
        f"-d '{{\"examples\": [{examples}]}}'",
        "# batch inference again: every node, the class written back as predicted_class"
        + (" (embedded: the graph lives as long as the command)" if not graph else ""),
        f"memgraph-tf classify --graph {graph_arg} --model {base} --overwrite",
        "# the pictures and this summary: open it in a browser",
        f"{out / 'report.html'}",
    ]


@dataclasses.dataclass
class _Loaded:
    """What stage 1 leaves for the others: the graph ``source`` (``embedded``: the in-process
    graph, None over Bolt), where it was loaded (``text``), the test node ids, every node's true
    class (``labels``, indexed by node id) and the class names."""

    source: Any
    embedded: Any
    text: str
    test_ids: list[int]
    labels: Any
    class_names: list[str]

    def via(self, procedures: str, client_side: str) -> str:
        """How the training blobs were made: ``procedures`` where the graph runs the tf_features
        procedures (in-process, or a server that has them), else ``client_side`` and why."""
        if self.embedded is not None or self.source.has_procedures():
            return procedures
        return f"{client_side} (this server has no tf_features procedures)"


def _split_text(train_n: int, val_n: int, g: _Loaded) -> str:
    """The stage 1 line's split: ``train/val/test`` and the number of seeds in each."""
    return f"train/val/test {train_n}/{val_n}/{len(g.test_ids)}"


class _PlanetoidDemo:
    """What the demo does on a Planetoid dataset (cora, citeseer, synthetic) at each stage where
    the datasets differ; :func:`_run_stages` runs the stages."""

    def __init__(self, dataset: str, graph: str | None, replace: bool, steps: int | None):
        self.dataset, self.graph, self.replace, self.steps = dataset, graph, replace, steps

    def load(self, progress: bool) -> _Loaded:
        data = self.data = datasets.load_dataset(self.dataset)
        source, self.options, embedded, text = _load(data, self.graph, self.replace, progress)
        self.train_ids, self.val_ids = data.ids("train"), data.ids("val")
        test_ids = [i for i in data.ids("test") if data.labels[i] >= 0]
        return _Loaded(source, embedded, text, test_ids, data.labels, list(data.class_names))

    def loaded_line(self, g: _Loaded) -> tuple[int, str]:
        data = self.data
        return data.num_nodes, (
            f"loaded {self.dataset} into {g.text}: {data.num_nodes:,} nodes, "
            f"{len(data.edges):,} edges; {_split_text(len(self.train_ids), len(self.val_ids), g)}"
        )

    def train(self, g: _Loaded, seed: int, progress: bool) -> tuple[Any, str, Callable]:
        from memgraph_tf.client import train_graphsage
        from memgraph_tf.client.graphsage import PLANETOID_RECIPE, predict_proba

        recipe = dict(PLANETOID_RECIPE)
        if self.dataset == "synthetic":
            recipe.update(SYNTHETIC_RECIPE)
        if self.steps is not None:
            recipe["steps"] = self.steps
        result = train_graphsage(
            g.source,
            self.train_ids,
            self.val_ids,
            options=self.options or None,
            seed=seed,
            class_names=g.class_names,
            progress=progress,
            **recipe,
        )
        fanouts = "x".join(map(str, recipe["fanouts"]))
        predict = functools.partial(
            predict_proba,
            result.model,
            g.source,
            g.test_ids,
            options=self.options or None,
            feature_cache=result.feature_cache,
        )
        return result, f"{len(self.train_ids)} nodes, fanouts {fanouts}", predict

    def trained_line(self, g: _Loaded, result: Any, steps: int, seconds: float, acc: float) -> str:
        published = datasets.PUBLISHED_ACCURACY.get(self.dataset, {})
        beside = ", ".join(f"{k} {v:.3f}" for k, v in published.items())
        via = g.via("tf_features blobs", "blobs packed on the client")
        return (
            f"trained GraphSAGE for {steps} steps via {via} "
            f"({seconds:.1f} s): best val acc {result.best_val_accuracy:.3f} (step "
            f"{result.best_step}), "
            f"test acc {acc:.3f}" + (f" (published: {beside})" if beside else "")
        )

    def export_options(self) -> dict[str, Any]:
        return {"sample_options": self.options or None, "layout": bundle_layout(self.data.features)}

    def local_classes(self, g: _Loaded, result: Any, ids: list[int], portable: Any, seed: int):
        from memgraph_tf.client import predict

        options = self.options or None
        cache = result.feature_cache
        return predict(
            result.model, g.source, ids, options=options, feature_cache=cache, seed=seed
        ).classes

    def serve_options(self) -> dict[str, str]:
        return {"nodes": "nodes", "compared_with": "in-process predictions", "noun": "node"}

    def classify_options(self, g: _Loaded) -> dict[str, Any]:
        return {"nodes": "nodes", "embedded": g.embedded, "sample_ids": g.test_ids[:3]}

    def report_options(self, g: _Loaded) -> dict[str, Any]:
        data = self.data
        return {
            "title": {"cora": "Cora", "citeseer": "Citeseer"}.get(self.dataset, self.dataset),
            "test_nodes": "test nodes",
            "published": datasets.PUBLISHED_ACCURACY.get(self.dataset, {}),
            "dataset": self.dataset,
            "num_nodes": data.num_nodes,
            "num_edges": len(data.edges),
            "num_features": int(data.features.shape[1]),
            "train_nodes": len(self.train_ids),
            "val_nodes": len(self.val_ids),
        }

    def extra_figures(self) -> dict[str, Any]:
        return {}


class _ShopDemo:
    """What the demo does on the generated typed shop graph at each stage where the datasets
    differ (``run(dataset="shop")``: the typed path, the train/validation split read from the
    nodes' ``split`` property); :func:`_run_stages` runs the stages. A subclass on another
    typed graph sets the class attributes below and the hooks :meth:`train_arguments` and
    :meth:`report_options`."""

    #: The sampling options, training recipe and neighbour counts of the graph; the report's
    #: title and the noun of one target node (the report's test nodes are ``test <noun>s``).
    options: dict[str, Any] = SHOP_OPTIONS
    recipe: dict[str, Any] = SHOP_RECIPE
    num_neighbors: dict[str, list[int]] = SHOP_NUM_NEIGHBORS
    title, noun = "Shop graph (typed)", "user"

    def __init__(self, graph: str | None, replace: bool, steps: int | None, shop: Any) -> None:
        self.dataset, self.graph, self.replace, self.steps, self.shop = (
            SHOP,
            graph,
            replace,
            steps,
            shop,
        )

    def load(self, progress: bool) -> _Loaded:
        from memgraph_tf import client
        from memgraph_tf.client import loaders

        shop = self.shop
        data = self.data = (
            typed_datasets.shop_graph(**shop) if shop else typed_datasets.demo_shop_graph()
        )
        self.num_nodes = sum(ns.size for ns in data.node_sets.values())
        self.num_edges = sum(es.size for es in data.edge_sets.values())
        embedded = None
        if self.graph is None:
            embedded, _ = typed_datasets.typed_embedded_graph(data)
            source: Any = client.EmbeddedSource(embedded)
            text = IN_PROCESS_TEXT
        else:
            source = client.connect(self.graph)
            with _bar(
                progress, total=self.num_nodes + self.num_edges, desc="load", unit="row"
            ) as bar:
                loaders.load_typed_graph(
                    source, data, replace=self.replace, progress=lambda kind, n: bar.update(n)
                )
            text = f"{source!r}"
        self.users = data.target_label
        self.train_n, self.val_n = len(data.ids("train")), len(data.ids("val"))
        return _Loaded(
            source, embedded, text, data.ids("test"), data.labels, list(data.class_names)
        )

    def loaded_line(self, g: _Loaded) -> tuple[int, str]:
        data = self.data
        labels_text = ", ".join(f":{label} {ns.size:,}" for label, ns in data.node_sets.items())
        types_text = ", ".join(f":{t} {es.size:,}" for (_, t, _), es in data.edge_sets.items())
        return self.num_nodes, (
            f"loaded the shop graph into {g.text}: {labels_text}; {types_text}; "
            f":{self.users} {_split_text(self.train_n, self.val_n, g)}"
        )

    def train_arguments(self, g: _Loaded) -> tuple[Any, dict[str, Any], str]:
        """The properties and extra keyword arguments :meth:`train` passes to
        ``train_typed_graphsage``, and what the training line says of the input."""
        return SHOP_PROPERTIES, {}, f"{len(self.num_neighbors)} edge steps"

    def train(self, g: _Loaded, seed: int, progress: bool) -> tuple[Any, str, Callable]:
        from memgraph_tf.client.typed_graphsage import predict_typed_proba, train_typed_graphsage

        properties, extra, input_text = self.train_arguments(g)
        recipe = dict(self.recipe)
        if self.steps is not None:
            recipe["steps"] = self.steps
        result = train_typed_graphsage(
            g.source,
            self.users,
            self.num_neighbors,
            properties,
            options=self.options,  # no train_ids: the split is read from the nodes' `split`
            seed=seed,
            class_names=g.class_names,
            progress=progress,
            **extra,
            **recipe,
        )
        detail = f"{self.train_n} :{self.users} nodes, {input_text}"
        predict = functools.partial(
            predict_typed_proba, result.model, g.source, g.test_ids, options=self.options
        )
        return result, detail, predict

    def trained_line(self, g: _Loaded, result: Any, steps: int, seconds: float, acc: float) -> str:
        data = self.data
        via = g.via("tf_features.sample_typed blobs", "typed blobs sampled on the client")
        return (
            f"trained the typed GraphSAGE for {steps} steps via {via} "
            f"({seconds:.1f} s; split read from the :{self.users} nodes' "
            f"{typed_datasets.SPLIT_PROPERTY!r} property): "
            + self.scores_text(result, acc, 1 / data.num_classes)
        )

    def scores_text(
        self, result: Any, acc: float, chance: float, best: str = "best possible"
    ) -> str:
        """The stage 2 line's figures: the best validation accuracy and its step, the test
        accuracy ``acc``, the graph's best possible accuracy (``best`` names it) and ``chance``."""
        return (
            f"best val acc {result.best_val_accuracy:.3f} (step {result.best_step}), test acc "
            f"{acc:.3f} ({best} {self.data.best_accuracy:.3f}, chance {chance:.3f})"
        )

    def export_options(self) -> dict[str, Any]:
        return {"sample_options": self.options, "seed_label": self.users}

    def local_classes(self, g: _Loaded, result: Any, ids: list[int], portable: Any, seed: int):
        """The in-process model's classes of ``ids`` on the blobs the bundle's inference
        sampling gives (the neighbourhoods the server samples)."""
        import tensorflow as tf

        from memgraph_tf import blob
        from memgraph_tf.serving.bundle import inference_sampling, read_bundle_config

        model = result.model
        sampling = inference_sampling(read_bundle_config(portable.path))
        x = blob.unpack(g.source.sample_typed(ids, *sampling.typed_arguments()))
        probs = tf.nn.softmax(model({k: x[k] for k in model.input_names() if k in x})).numpy()
        return probs.argmax(axis=1)

    def serve_options(self) -> dict[str, str]:
        return {
            "nodes": f":{self.users} nodes",
            "compared_with": "the in-process model on the same blobs",
            "noun": self.noun,
        }

    def classify_options(self, g: _Loaded) -> dict[str, Any]:
        return {"nodes": f":{self.users} nodes"}

    def report_options(self, g: _Loaded) -> dict[str, Any]:
        data = self.data
        return {
            "title": self.title,
            "test_nodes": f"test {self.noun}s",
            "published": {},
            "best_possible": data.best_accuracy,
            "model_name": "typed GraphSAGE",
            "dataset": self.dataset,
            "num_nodes": self.num_nodes,
            "num_edges": self.num_edges,
            "num_features": self.features_text(),
            "train_nodes": self.train_n,
            "val_nodes": self.val_n,
            "same_blobs": True,
        }

    def features_text(self) -> str:
        """The report's line of the model's input features."""
        return ", ".join(f"{label} {ns.width}" for label, ns in self.data.node_sets.items())

    def extra_figures(self) -> dict[str, Any]:
        return {"best_possible": self.data.best_accuracy}


PEOPLE = property_datasets.PROPERTY_DATASET
"""``--dataset people``: the planted property graph (:func:`memgraph_tf.property_datasets.
planted_property_graph`), its :Person properties profiled, a feature spec inferred from the
profile and the typed GraphSAGE trained on the raw property columns."""
PEOPLE_NUM_NEIGHBORS = {"(:Person)-[:KNOWS]->(:Person)": [3]}
PEOPLE_OPTIONS = {"id_property": "id"}
PEOPLE_PROPERTIES = [*property_datasets.SIGNAL_PROPERTIES, *property_datasets.NOISE_PROPERTIES]
"""The :Person properties the people demo profiles and encodes (not ``id``, ``label``,
``split``)."""
PEOPLE_RECIPE = {
    "hidden_units": 32,
    "dropout": 0.1,
    "l2": 1e-4,
    "batch_size": 256,
    "steps": 150,
    "eval_every": 25,
    "eval_draws": 1,
}
"""``train_typed_graphsage`` settings of the people demo (a few seconds on 2 cores)."""
SPEC_FILE = "feature_spec.json"


def spec_lines(spec: Any) -> list[str]:
    """One line per property of ``spec`` (a :class:`~memgraph_tf.feature_spec.LabelSpec`): its
    name, kind and the encoding's parameters (vocabulary size and OOV buckets, hash buckets, the
    standardisation, a missing indicator)."""
    lines = []
    for prop in spec.to_dict()["properties"]:
        kind, parts = prop["kind"], []
        if prop.get("vocabulary") is not None:
            parts.append(f"{len(prop['vocabulary'])} values + {prop['oov_buckets']} OOV")
        if prop.get("hash_buckets"):
            parts.append(f"{prop['hash_buckets']} hash buckets")
        if prop.get("type"):
            parts.append(prop["type"])
        if prop.get("standardize"):
            parts.append(f"standardised: mean {prop['mean']:.4g}, std {prop['std']:.4g}")
        if prop.get("missing_indicator"):
            parts.append("missing indicator")
        lines.append(f"{prop['name']}: {kind}" + (f" ({', '.join(parts)})" if parts else ""))
    return lines


def profile_lines(profile: Mapping[str, Any]) -> list[str]:
    """One line per property of a ``tf_features.profile`` answer: coverage, value types and the
    number of distinct values."""
    lines = []
    for prop in profile["properties"]:
        types = "/".join(t["type"] for t in prop["types"])
        distinct = prop.get("cardinality")
        if prop.get("element_cardinality") is not None:
            distinct = f"{prop['element_cardinality']} element"
        lines.append(
            f"{prop['name']}: {types}, coverage {prop['coverage']:.0%}"
            + (f", {distinct} distinct" if distinct is not None else "")
        )
    return lines


def in_process_only(graph: str | None, dataset: str, what: str) -> None:
    """A :class:`~memgraph_tf.errors.ConfigurationError` naming ``--graph`` when a ``graph`` URI
    is given for ``dataset`` (``what``: how the error names its graph), which no loader writes to
    a Bolt server."""
    from memgraph_tf.errors import ConfigurationError

    if graph is not None:
        raise ConfigurationError(
            f"--graph: --dataset {dataset} runs on the in-process runtime only (no loader "
            f"writes {what} to a Bolt server); leave --graph out"
        )


class _PlantedDemo(_ShopDemo):
    """What the demo does on a generated one-label graph with a planted signal (a
    :class:`~memgraph_tf.typed_datasets.PlantedGraph`) where it differs from the shop graph: the
    graph is generated with the dataset's overrides and loaded into the in-process runtime only
    (no loader writes its property maps to a Bolt server); its classes are named
    ``segment_K``. A subclass sets the class attributes below, ``title`` and ``noun``;
    :data:`GENERATORS` makes the graph of its ``name``."""

    recipe = PEOPLE_RECIPE  # the same small recipe serves every generated graph
    #: ``--dataset`` (``name``), how an error names the graph (``what``) and the seed label.
    name: str
    what: str
    label: str

    def __init__(self, graph: str | None, replace: bool, steps: int | None, overrides: Any) -> None:
        in_process_only(graph, self.name, self.what)
        super().__init__(None, replace, steps, None)
        self.dataset, self.overrides = self.name, dict(overrides or {})

    def load(self, progress: bool) -> _Loaded:
        from memgraph_tf import client

        generate, embedded_graph = GENERATORS[self.name]
        data = generate(**self.overrides)
        embedded = embedded_graph(data)[0]
        self.num_edges = embedded.edge_count
        self.data, self.num_nodes, self.users = data, len(data.nodes), self.label
        self.train_n, self.val_n = len(data.ids("train")), len(data.ids("val"))
        names = [f"segment_{k}" for k in range(data.num_classes)]
        source = client.EmbeddedSource(embedded)
        return _Loaded(source, embedded, IN_PROCESS_TEXT, data.ids("test"), data.labels, names)


class _PeopleDemo(_PlantedDemo):
    """What the demo does on the planted property graph (``--dataset people``) at each stage
    where the datasets differ: stage 2 first profiles the :Person properties and infers their
    feature spec (printed, and written to ``OUT/feature_spec.json`` at stage 4); training,
    export, serving and batch inference run with that spec. The in-process runtime only: no
    loader writes the property maps to a Bolt server."""

    options = PEOPLE_OPTIONS
    num_neighbors = PEOPLE_NUM_NEIGHBORS
    name, what, label = PEOPLE, "the planted property graph", property_datasets.LABEL
    title, noun = "Planted property graph (feature spec)", "person"

    def loaded_line(self, g: _Loaded) -> tuple[int, str]:
        return self.num_nodes, (
            f"loaded the planted property graph into {g.text}: :{self.users} {self.num_nodes:,}; "
            f":KNOWS {self.num_edges:,}; {_split_text(self.train_n, self.val_n, g)}"
        )

    def infer_spec(self, g: _Loaded) -> None:
        """Profiles the :Person properties (``tf_features.profile``), infers their feature spec
        and prints both."""
        from memgraph_tf.client.feature_specs import infer_feature_spec, profile_label

        label = self.users
        clock = _Clock()
        profile = profile_label(g.source, label, PEOPLE_PROPERTIES)
        self.spec = infer_feature_spec(g.source, label, PEOPLE_PROPERTIES)
        _say(f"      profiled :{label} ({profile['count']:,} nodes, tf_features.profile):")
        for line in profile_lines(profile):
            _say(f"        {line}")
        _say(f"      inferred the feature spec of :{label} ({clock.seconds:.1f} s in all):")
        for line in spec_lines(self.spec):
            _say(f"        {line}")

    def train_arguments(self, g: _Loaded) -> tuple[Any, dict[str, Any], str]:
        """Infers the feature spec first (:meth:`infer_spec`): the model reads the properties
        through it."""
        self.infer_spec(g)
        extra = {"feature_spec": {self.users: self.spec}}
        return {}, extra, f"{len(self.spec.properties)} properties"

    def trained_line(self, g: _Loaded, result: Any, steps: int, seconds: float, acc: float) -> str:
        return (
            f"trained the typed GraphSAGE on the encoded property columns for {steps} steps via "
            f"tf_features.sample_typed blobs (options.feature_spec; {seconds:.1f} s): "
            + self.scores_text(result, acc, self.data.chance)
        )

    def local_classes(self, g: _Loaded, result: Any, ids: list[int], portable: Any, seed: int):
        """The in-process model's classes of ``ids`` on the blobs the server fetches (the
        bundle's inference sampling, its feature spec included), decoded by the bundle's own
        decoding step; writes the spec beside the bundles."""
        import tensorflow as tf

        from memgraph_tf import ops
        from memgraph_tf.serving.bundle import inference_sampling, read_bundle_config
        from memgraph_tf.serving.export import decode_with_bags
        from memgraph_tf.serving.neighbourhoods import fetch_blobs

        (portable.path.parents[2] / SPEC_FILE).write_text(self.spec.to_json(), encoding="utf-8")
        config = read_bundle_config(portable.path)
        blobs = fetch_blobs(g.source, ids, inference_sampling(config))
        inputs = decode_with_bags(tf.constant(blobs), ops.unpack_blob_portable, config.sections)
        return tf.nn.softmax(result.model(inputs, training=False)).numpy().argmax(axis=1)

    def features_text(self) -> str:
        return f"{self.users} {len(self.spec.properties)} properties (inferred spec)"

    def extra_figures(self) -> dict[str, Any]:
        return {"best_possible": self.data.best_accuracy, "feature_spec": self.spec}


LEDGER = ledger_datasets.LEDGER_DATASET
"""``--dataset ledger``: the generated ledger (:func:`memgraph_tf.ledger_datasets.ledger_graph`):
accounts, their payees (a limit: the weight) and transfers (an amount and a time), the typed
GraphSAGE trained with a weighted step and a point-in-time step."""
LEDGER_NUM_NEIGHBORS = {
    "(:Account)-[:PAYEE {weight: limit}]->(:Account)": [3],
    "(:Account)-[:TRANSFER {time: ts}]->(:Account)": [10],
}
"""The ledger demo's sampling: three payees drawn by limit, ten transfers not after the seed's
time."""
LEDGER_OPTIONS = {"id_property": "id", "seed_time": ledger_datasets.SEED_TIME}
"""Seed keys are the ``id`` property; each seed is sampled as of its time ``t``."""
GENERATORS = {
    PEOPLE: (property_datasets.planted_property_graph, property_datasets.property_embedded_graph),
    LEDGER: (ledger_datasets.ledger_graph, ledger_datasets.ledger_embedded_graph),
}
"""Per generated one-label graph (``--dataset``): its generator (the dataset's overrides are its
arguments) and the function that makes the in-process graph of what it generates."""


class _LedgerDemo(_PlantedDemo):
    """What the demo does on the generated ledger (``--dataset ledger``) at each stage where the
    datasets differ: the customers' classes are learnt from a weighted ``PAYEE`` step and a
    point-in-time ``TRANSFER`` step (each customer sampled as of its time ``t``, in training,
    serving and batch inference alike). The in-process runtime only."""

    options = LEDGER_OPTIONS
    num_neighbors = LEDGER_NUM_NEIGHBORS
    name, what, label = LEDGER, "the generated ledger", ledger_datasets.LABEL
    title, noun = "Ledger (weights and time)", "account"

    def loaded_line(self, g: _Loaded) -> tuple[int, str]:
        data = self.data
        return self.num_nodes, (
            f"loaded the ledger into {g.text}: :{self.users} {self.num_nodes:,} "
            f"({len(data.labels):,} customers); :{ledger_datasets.PAYEE} {len(data.payees):,} "
            f"(limit); :{ledger_datasets.TRANSFER} {len(data.transfers):,} (amount, ts); "
            f"{_split_text(self.train_n, self.val_n, g)} (test: the latest)"
        )

    def train_arguments(self, g: _Loaded) -> tuple[Any, dict[str, Any], str]:
        return {self.users: ["features"]}, {}, "payees by limit, transfers as of each time"

    def trained_line(self, g: _Loaded, result: Any, steps: int, seconds: float, acc: float) -> str:
        return (
            f"trained the typed GraphSAGE for {steps} steps via tf_features.sample_typed blobs "
            f"(weighted PAYEE draws, TRANSFER as of each account's {ledger_datasets.SEED_TIME!r}; "
            f"{seconds:.1f} s): "
            + self.scores_text(
                result, acc, self.data.chance, "best possible as of each account's time"
            )
        )

    def features_text(self) -> str:
        return f"{self.users} {self.data.num_classes} (a counterparty's class; customers: zeros)"


def _run_stages(
    demo: Any, out: str | os.PathLike[str], *, seed: int, classify_count: int, progress: bool
) -> dict[str, Any]:
    """The six stages of the demo (the module docstring) with ``demo`` (a
    :class:`_PlanetoidDemo` or :class:`_ShopDemo`) doing what differs between datasets; prints
    a line per stage and returns :func:`run`'s figures."""
    import_tensorflow_quietly()  # before anything else imports TensorFlow
    from memgraph_tf import serving  # noqa: F401 -- imported before any stage is timed

    out = pathlib.Path(out)
    out.mkdir(parents=True, exist_ok=True)
    stages: list[report.Stage] = []
    notes: list[str] = []

    # 1. load
    clock = _Clock()
    g = demo.load(progress)
    try:
        num_nodes, line = demo.loaded_line(g)
        _loaded(stages, clock.seconds, num_nodes, demo.graph)
        _say(f"[1/{STAGES}] {line} ({clock.seconds:.1f} s)")

        # 2. train and test
        clock = _Clock()
        result, detail, predict = demo.train(g, seed, progress)
        trained_steps = _trained(stages, clock.seconds, result, detail)
        predicted, truth, test_accuracy = _test_stage(
            predict, g.labels, g.test_ids, stages, seed=seed, progress=progress
        )
        _say(
            f"[2/{STAGES}] "
            + demo.trained_line(g, result, trained_steps, stages[-2].seconds, test_accuracy)
        )

        # 3. export
        portable, with_op, bundles = _export_stage(
            result.model, out, stages, progress, **demo.export_options()
        )

        # 4. serve, against the in-process model
        ids = g.test_ids[:classify_count]
        local = demo.local_classes(g, result, ids, portable, seed)
        served = _serve_stage(
            out,
            g.source,
            ids,
            g.class_names,
            g.labels,
            local,
            stages,
            notes,
            progress,
            **demo.serve_options(),
        )

        # 5. batch inference
        written = _classify_stage(g.source, out, stages, progress, **demo.classify_options(g))

        # 6. pictures and report
        summary, html, images = _report_stage(
            out,
            stages,
            result,
            truth,
            predicted,
            test_accuracy=test_accuracy,
            served=served,
            bundles=bundles,
            notes=notes,
            graph=g.text,
            class_names=g.class_names,
            commands=_commands(out, demo.dataset, demo.graph, ids[:2]),
            **demo.report_options(g),
        )
    finally:
        if g.embedded is None and hasattr(g.source, "close"):
            g.source.close()
    return _figures(summary, html, images, portable, with_op, written, **demo.extra_figures())


def run(
    dataset: str = "cora",
    out: str | os.PathLike[str] = DEFAULT_OUT,
    *,
    graph: str | None = None,
    replace: bool = False,
    steps: int | None = None,
    seed: int = 0,
    classify_count: int = 64,
    progress: bool = True,
    shop: Mapping[str, Any] | None = None,
    people: Mapping[str, Any] | None = None,
    ledger: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Runs the demo (see the module docstring) and returns its figures: ``test_accuracy``,
    ``val_accuracy``, ``served_accuracy``, ``served_agreement``, ``written``, ``seconds``, the
    :class:`~memgraph_tf.report.Summary` (``summary``) and the files written (``files``).

    ``dataset`` :data:`SHOP` runs the same six stages through the typed path on the generated
    shop graph (``shop``: :func:`~memgraph_tf.typed_datasets.shop_graph`'s overrides; also
    returns ``best_possible``): :class:`~memgraph_tf.client.typed_graphsage.TypedGraphSAGE` on
    the :User nodes with ``tf_features.sample_typed`` blobs, served and batch-scored by
    ``node_id`` like the others;
    :data:`PEOPLE` the planted property graph with an inferred feature spec (``people``:
    :func:`~memgraph_tf.property_datasets.planted_property_graph`'s arguments; also returns
    ``best_possible`` and the ``feature_spec``); :data:`LEDGER` the generated ledger with
    weighted and point-in-time steps (``ledger``: :func:`~memgraph_tf.ledger_datasets.
    ledger_graph`'s arguments; also returns ``best_possible``)."""
    demo: Any
    if dataset == SHOP:
        demo = _ShopDemo(graph, replace, steps, shop)
    elif dataset == PEOPLE:
        demo = _PeopleDemo(graph, replace, steps, people)
    elif dataset == LEDGER:
        demo = _LedgerDemo(graph, replace, steps, ledger)
    else:
        demo = _PlanetoidDemo(dataset, graph, replace, steps)
    return _run_stages(demo, out, seed=seed, classify_count=classify_count, progress=progress)


def _check(
    how: str,
    labels: list[str],
    names: list[str],
    ids: list[int],
    classes: Any,
    local_classes: Any,
    seconds: float,
) -> report.ServedCheck:
    """``classes``: the true class of every node, indexed by node id."""
    import numpy as np

    served = np.asarray([names.index(label) for label in labels])
    truth = np.asarray(classes)[ids]
    return report.ServedCheck(
        how,
        len(ids),
        float(np.mean(served == truth)),
        float(np.mean(served == np.asarray(local_classes))),
        seconds,
    )


# ------------------------------------------------------------------------------------------------
# command line
# ------------------------------------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``memgraph-tf demo`` options."""
    parser.add_argument(
        "--dataset",
        default="cora",
        choices=[*datasets.DATASETS, SHOP, PEOPLE, LEDGER],
        help="cora / citeseer (shipped in the package), synthetic (a small random graph), shop "
        "(a generated typed graph: users, products, categories; the typed GraphSAGE), people "
        "(a planted property graph: its properties profiled, a feature spec inferred and "
        "encoded inside the model; in-process only) or ledger (accounts, payees with limits and "
        "transfers with amounts and times: weighted and point-in-time steps; in-process only)",
    )
    parser.add_argument(
        "--graph",
        default=None,
        metavar="URI",
        help="load the dataset into this Memgraph (bolt://...; user and password from "
        "MEMGRAPH_TF_USER / MEMGRAPH_TF_PASSWORD) instead of the in-process runtime",
    )
    parser.add_argument(
        "--replace",
        action="store_true",
        help=f"with --graph: delete existing :{GRAPH_LABEL} nodes first (shop: its :User, "
        ":Product and :Category nodes)",
    )
    parser.add_argument(
        "--out",
        default=DEFAULT_OUT,
        metavar="DIR",
        help=f"where the bundles, pictures and report.html go (default: ./{DEFAULT_OUT}/)",
    )
    parser.add_argument(
        "--steps", type=int, default=None, help="training steps (default: the recipe's)"
    )
    parser.add_argument(
        "--seed", type=int, default=0, help="seed for weights and sampling (default: 0)"
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")


def main(args: argparse.Namespace) -> int:
    """``memgraph-tf demo``: runs :func:`run`, prints the summary and the commands to go on, exit
    0. A failure is one line on stderr (``memgraph-tf demo: ...``, never a traceback) and the
    exit code of :func:`memgraph_tf.errors.command_failure`: 2 for a bad ``--graph`` (a URI
    with credentials, refused credentials), 1 for a graph that cannot be reached, 130 after
    Ctrl-C."""
    from memgraph_tf.batch.commands import options_from, report_failure

    if not getattr(args, "verbose", False):
        for name in ("memgraph_tf", "absl"):  # absl: SavedModel export's renaming notes
            logging.getLogger(name).setLevel(logging.WARNING)
    clock = _Clock()
    try:
        figures = run(
            args.dataset,
            args.out,
            progress=not args.no_progress,
            **options_from(args, ("graph", "replace", "steps", "seed")),
        )
    except (Exception, KeyboardInterrupt) as exc:  # noqa: BLE001 -- errors.command_failure: one line, an exit code
        return report_failure("demo", exc, log=logger)
    summary = figures["summary"]
    _say()
    _say(report.summary_text(summary))
    _say()
    _say("to go on:")
    for line in summary.commands:
        _say(f"  {line}")
    _say()
    _say(f"demo finished in {clock.seconds:.0f} s; test accuracy {figures['test_accuracy']:.3f}")
    return 0
