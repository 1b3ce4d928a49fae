"""The end-to-end demo (``memgraph-tf demo``): the whole path a user's data takes, leaving behind
what a person can follow up -- bundles, pictures and a report in ``--out`` (default
``./memgraph-tf-demo/``).

1. **load** the dataset (Cora by default, shipped in the package) into a graph: the in-process
   Memgraph runtime, where the unchanged ``query_modules/tf_features.py`` runs through Memgraph's
   real ``mgp.py``; or, with ``--graph bolt://...``, a real Memgraph, written through Cypher in
   ``UNWIND`` batches (:func:`memgraph_tf.datasets.load_into_graph`).
2. **train** GraphSAGE with features and neighbourhoods coming only through ``tf_features.*`` blobs,
   unpacked by the C++ op; measure test accuracy (mean of several neighbourhood draws).
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
import logging
import os
import pathlib
import re
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from typing import Any

from memgraph_tf import datasets, report, typed_datasets

logger = logging.getLogger(__name__)

DEFAULT_OUT = "memgraph-tf-demo"
MODEL_NAME = "GraphSage"
EVAL_DRAWS = 10
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

    if graph is None:
        g = datasets.planetoid_graph(data)
        return (
            client.EmbeddedSource(g),
            {},
            g,
            "the in-process runtime (the query modules through mgp.py)",
        )
    source = client.connect(graph)
    total = data.num_nodes + len(data.edges)
    with _bar(progress, total=total, desc="load", unit="row") as bar:
        datasets.load_into_graph(
            source,
            data,
            label=GRAPH_LABEL,
            edge_type=GRAPH_EDGE_TYPE,
            replace=replace,
            progress=lambda kind, n: bar.update(n),
        )
    return source, {"label": GRAPH_LABEL, "id_property": "id"}, None, f"{source!r}"


def _predict_draws(
    model: Any,
    source: Any,
    ids: list[int],
    *,
    options: dict,
    feature_cache: Any,
    seed: int,
    draws: int,
    progress: bool,
) -> Any:
    """Class probabilities averaged over ``draws`` neighbourhood samples: one pipeline and one
    traced model call for all draws (the progress bar moves once they are done)."""
    import numpy as np

    from memgraph_tf.client.graphsage import predict_proba

    with _bar(progress, total=draws, desc="test", unit="draw") as bar:
        probs = predict_proba(
            model,
            source,
            ids,
            options=options or None,
            feature_cache=feature_cache,
            seed=(seed + 1) * 1000,
            draws=draws,
        )
        bar.update(draws)
    return np.asarray(probs)


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


def _classify_stage(
    source: Any, bundle_dir: pathlib.Path, progress: bool
) -> tuple[int, float, str]:
    """Batch inference over every node with the exported op-free bundle run in-process, as
    ``memgraph-tf classify --model`` runs it (:mod:`memgraph_tf.batch`): the class name written to
    ``predicted_class``, its score and the model version beside it
    (:func:`~memgraph_tf.client.graphs.property_names`). Returns (nodes written, seconds, how)."""
    from memgraph_tf.batch import BatchClassifier, BundleBackend

    clock = _Clock()
    with BundleBackend(bundle_dir) as backend:
        summary = BatchClassifier(
            source, backend, write_property="predicted_class", overwrite=True, progress=progress
        ).run()
    return summary.classified, clock.seconds, "memgraph_tf.batch, the op-free bundle"


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
) -> dict[str, Any]:
    """Runs the demo (see the module docstring) and returns its figures: ``test_accuracy``,
    ``val_accuracy``, ``served_accuracy``, ``served_agreement``, ``written``, ``seconds``, the
    :class:`~memgraph_tf.report.Summary` (``summary``) and the files written (``files``).

    ``dataset`` :data:`SHOP` runs :func:`run_shop` (``shop``: its graph's overrides)."""
    import numpy as np

    if dataset == SHOP:
        return run_shop(
            out,
            graph=graph,
            replace=replace,
            steps=steps,
            seed=seed,
            classify_count=classify_count,
            progress=progress,
            shop=shop,
        )

    tf = import_tensorflow_quietly()  # noqa: F841 -- before anything else imports TensorFlow

    from memgraph_tf.client import predict, train_graphsage
    from memgraph_tf.client.graphsage import PLANETOID_RECIPE
    from memgraph_tf.serving import ModelServer, ServingClient, export_bundle, start_server

    out = pathlib.Path(out)
    out.mkdir(parents=True, exist_ok=True)
    stages: list[report.Stage] = []
    notes: list[str] = []
    n_stages = 6

    # 1. load
    clock = _Clock()
    data = datasets.load_dataset(dataset)
    source, options, embedded, graph_text = _load(data, graph, replace, progress)
    train_ids, val_ids, test_ids = data.ids("train"), data.ids("val"), data.ids("test")
    test_ids = [i for i in test_ids if data.labels[i] >= 0]
    stages.append(
        report.Stage(
            "load graph",
            clock.seconds,
            data.num_nodes,
            "nodes",
            "embedded runtime" if graph is None else "Cypher UNWIND batches",
        )
    )
    _say(
        f"[1/{n_stages}] loaded {dataset} into {graph_text}: {data.num_nodes:,} nodes, "
        f"{len(data.edges):,} edges; train/val/test "
        f"{len(train_ids)}/{len(val_ids)}/{len(test_ids)} "
        f"({clock.seconds:.1f} s)"
    )

    # 2. train and test
    clock = _Clock()
    recipe = dict(PLANETOID_RECIPE)
    if dataset == "synthetic":
        recipe.update(SYNTHETIC_RECIPE)
    if steps is not None:
        recipe["steps"] = steps
    result = train_graphsage(
        source,
        train_ids,
        val_ids,
        options=options or None,
        seed=seed,
        class_names=list(data.class_names),
        progress=progress,
        **recipe,
    )
    model = result.model
    trained_steps = len(result.history["step"])
    stages.append(
        report.Stage(
            "train",
            clock.seconds,
            trained_steps,
            "steps",
            f"{len(train_ids)} nodes, fanouts {'x'.join(map(str, recipe['fanouts']))}",
        )
    )
    clock = _Clock()
    probs = _predict_draws(
        model,
        source,
        test_ids,
        options=options,
        feature_cache=result.feature_cache,
        seed=seed,
        draws=EVAL_DRAWS,
        progress=progress,
    )
    predicted = probs.argmax(axis=1)
    truth = data.labels[test_ids]
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
    published = datasets.PUBLISHED_ACCURACY.get(dataset, {})
    beside = ", ".join(f"{k} {v:.3f}" for k, v in published.items())
    via = (
        "tf_features blobs"
        if embedded is not None or source.has_procedures()
        else "blobs packed on the client (this server has no tf_features procedures)"
    )
    _say(
        f"[2/{n_stages}] trained GraphSAGE for {trained_steps} steps via {via} "
        f"({stages[-2].seconds:.1f} s): best val acc {result.best_val_accuracy:.3f} (step "
        f"{result.best_step}), "
        f"test acc {test_accuracy:.3f}" + (f" (published: {beside})" if beside else "")
    )

    # 3. export
    clock = _Clock()
    layout = bundle_layout(data.features)
    with _bar(progress, total=2, desc="export", unit="bundle") as bar:
        portable = export_bundle(
            model,
            out / "portable",
            MODEL_NAME,
            1,
            use_op=False,
            overwrite=True,
            layout=layout,
            sample_options=options or None,
        )
        bar.update(1)
        with_op = export_bundle(
            model,
            out / "with_op",
            MODEL_NAME,
            1,
            use_op=True,
            overwrite=True,
            layout=layout,
            sample_options=options or None,
        )
        bar.update(1)
    stages.append(
        report.Stage(
            "export bundles",
            clock.seconds,
            None,
            "",
            f"2 bundles: op-free + with the op; {layout} layout",
        )
    )
    bundles = {
        "op-free bundle (stock TF Serving)": str(portable.path),
        "bundle with the C++ op": str(with_op.path),
    }
    _say(
        f"[3/{n_stages}] exported {portable.path} (stock ops only) and {with_op.path} (the op) "
        f"({clock.seconds:.1f} s)"
    )

    # 4. serve
    ids = test_ids[:classify_count]
    names = list(data.class_names)
    local = predict(
        model, source, ids, options=options or None, feature_cache=result.feature_cache, seed=seed
    )
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
                data.labels,
                local.classes,
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
                    data.labels,
                    local.classes,
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
            f"[4/{n_stages}] {c.how}: {c.nodes} test nodes in {c.seconds * 1000:.0f} ms; accuracy "
            f"{c.accuracy:.3f}, "
            f"agreement with in-process predictions {c.agreement:.3f}"
        )
    _say(f"      e.g. node {ids[0]} -> {labels[0]} (truth: {names[int(data.labels[ids[0]])]})")

    # 5. batch inference
    written, seconds, how = _classify_stage(source, out / "portable" / MODEL_NAME, progress)
    stages.append(report.Stage("batch inference", seconds, written, "nodes", how))
    sample = ""
    if embedded is not None:
        sample = "; e.g. " + ", ".join(
            f"{n}: {embedded.get_property(n, 'predicted_class')}" for n in test_ids[:3]
        )
    _say(
        f"[5/{n_stages}] batch inference wrote the predicted class of {written:,} nodes back to "
        "the graph "
        f"({seconds:.1f} s, {how}){sample}"
    )

    # 6. pictures and report
    clock = _Clock()
    title = {"cora": "Cora", "citeseer": "Citeseer"}.get(dataset, dataset)
    images = {
        "Training: loss, training and validation accuracy": report.training_curves(
            result.history,
            out / "training.png",
            test_accuracy=test_accuracy,
            published=published,
            best_step=result.best_step,
            title=f"{title}: GraphSAGE training",
        ),
        "Confusion matrix on the test nodes": report.confusion_figure(
            report.confusion_matrix(truth, predicted, len(names)),
            names,
            out / "confusion.png",
            title=f"{title}, {len(test_ids)} test nodes: accuracy {test_accuracy:.3f}",
        ),
    }
    images["Throughput and time per stage"] = report.throughput_figure(
        stages, out / "throughput.png", title=f"{title}: the demo's stages"
    )
    stages.append(report.Stage("pictures + report", clock.seconds))
    summary = report.Summary(
        dataset=dataset,
        graph=graph_text,
        num_nodes=data.num_nodes,
        num_edges=len(data.edges),
        num_features=int(data.features.shape[1]),
        class_names=names,
        train_nodes=len(train_ids),
        val_nodes=len(val_ids),
        test_nodes=len(test_ids),
        test_accuracy=test_accuracy,
        val_accuracy=result.best_val_accuracy,
        eval_draws=EVAL_DRAWS,
        published=published,
        served=served,
        stages=stages,
        out_dir=str(out),
        bundles=bundles,
        commands=_commands(out, dataset, graph, ids[:2]),
        notes=notes,
    )
    html = report.write_report(out, summary, images)
    _say(
        f"[6/{n_stages}] wrote {', '.join(p.name for p in images.values())} and {html.name} into "
        f"{out} "
        f"({clock.seconds:.1f} s)"
    )
    if embedded is None and hasattr(source, "close"):
        source.close()
    return {
        "dataset": dataset,
        "test_accuracy": test_accuracy,
        "val_accuracy": result.best_val_accuracy,
        "served_accuracy": served[0].accuracy,
        "served_agreement": served[0].agreement,
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


def run_shop(
    out: str | os.PathLike[str] = DEFAULT_OUT,
    *,
    graph: str | None = None,
    replace: bool = False,
    steps: int | None = None,
    seed: int = 0,
    classify_count: int = 64,
    progress: bool = True,
    shop: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The demo on the generated typed shop graph (``memgraph-tf demo --dataset shop``), the same
    six stages as on Cora, through the typed path:

    1. load :func:`~memgraph_tf.typed_datasets.demo_shop_graph` (or ``shop_graph(**shop)``) into
       the in-process runtime, or with ``graph`` into a real database through Cypher
       (:func:`~memgraph_tf.typed_datasets.load_typed_graph`);
    2. train :class:`~memgraph_tf.client.typed_graphsage.TypedGraphSAGE` on :User nodes with
       ``tf_features.sample_typed`` blobs, the train/validation split read from the nodes'
       ``split`` property; test accuracy (mean of :data:`EVAL_DRAWS` draws) beside the graph's
       exact best possible accuracy;
    3. export the op-free and the op typed bundles;
    4. serve the op-free one by ``node_id`` over REST and gRPC, compared with the in-process model
       on the same blobs (the bundle's inference sampling: the same neighbourhoods);
    5. batch inference over every :User node, the class written back;
    6. pictures and report.

    Returns the figures :func:`run` does, plus ``best_possible``."""
    import numpy as np

    tf = import_tensorflow_quietly()  # before anything else imports TensorFlow
    from memgraph_tf import blob, client
    from memgraph_tf.client.typed_graphsage import predict_typed_proba, train_typed_graphsage
    from memgraph_tf.serving import ModelServer, ServingClient, export_bundle, start_server
    from memgraph_tf.serving.bundle import inference_sampling, read_bundle_config

    out = pathlib.Path(out)
    out.mkdir(parents=True, exist_ok=True)
    stages: list[report.Stage] = []
    notes: list[str] = []
    n_stages = 6

    # 1. load
    clock = _Clock()
    data = typed_datasets.shop_graph(**shop) if shop else typed_datasets.demo_shop_graph()
    num_nodes = sum(ns.size for ns in data.node_sets.values())
    num_edges = sum(es.size for es in data.edge_sets.values())
    embedded = None
    if graph is None:
        embedded, _ = typed_datasets.typed_embedded_graph(data)
        source: Any = client.EmbeddedSource(embedded)
        graph_text = "the in-process runtime (the query modules through mgp.py)"
    else:
        source = client.connect(graph)
        with _bar(progress, total=num_nodes + num_edges, desc="load", unit="row") as bar:
            typed_datasets.load_typed_graph(
                source, data, replace=replace, progress=lambda kind, n: bar.update(n)
            )
        graph_text = f"{source!r}"
    users = data.target_label
    train_n, val_n = len(data.ids("train")), len(data.ids("val"))
    test_ids = data.ids("test")
    stages.append(
        report.Stage(
            "load graph",
            clock.seconds,
            num_nodes,
            "nodes",
            "embedded runtime" if graph is None else "Cypher UNWIND batches",
        )
    )
    labels_text = ", ".join(f":{label} {ns.size:,}" for label, ns in data.node_sets.items())
    types_text = ", ".join(f":{t} {es.size:,}" for (_, t, _), es in data.edge_sets.items())
    _say(
        f"[1/{n_stages}] loaded the shop graph into {graph_text}: {labels_text}; {types_text}; "
        f":{users} train/val/test {train_n}/{val_n}/{len(test_ids)} ({clock.seconds:.1f} s)"
    )

    # 2. train and test
    clock = _Clock()
    recipe = dict(SHOP_RECIPE)
    if steps is not None:
        recipe["steps"] = steps
    names = list(data.class_names)
    result = train_typed_graphsage(
        source,
        users,
        SHOP_NUM_NEIGHBORS,
        SHOP_PROPERTIES,
        options=SHOP_OPTIONS,  # no train_ids: the split is read from the :User nodes' `split`
        seed=seed,
        class_names=names,
        progress=progress,
        **recipe,
    )
    model = result.model
    trained_steps = len(result.history["step"])
    stages.append(
        report.Stage(
            "train",
            clock.seconds,
            trained_steps,
            "steps",
            f"{train_n} :{users} nodes, {len(SHOP_NUM_NEIGHBORS)} edge steps",
        )
    )
    clock = _Clock()
    with _bar(progress, total=EVAL_DRAWS, desc="test", unit="draw") as bar:
        probs = predict_typed_proba(
            model,
            source,
            test_ids,
            options=SHOP_OPTIONS,
            draws=EVAL_DRAWS,
            seed=(seed + 1) * 1000,
        )
        bar.update(EVAL_DRAWS)
    predicted = probs.argmax(axis=1)
    truth = data.labels[test_ids]
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
    via = (
        "tf_features.sample_typed blobs"
        if embedded is not None or source.has_procedures()
        else "typed blobs sampled on the client (this server has no tf_features procedures)"
    )
    _say(
        f"[2/{n_stages}] trained the typed GraphSAGE for {trained_steps} steps via {via} "
        f"({stages[-2].seconds:.1f} s; split read from the :{users} nodes' "
        f"{typed_datasets.SPLIT_PROPERTY!r} property): best val acc "
        f"{result.best_val_accuracy:.3f} (step {result.best_step}), test acc "
        f"{test_accuracy:.3f} (best possible {data.best_accuracy:.3f}, chance "
        f"{1 / data.num_classes:.3f})"
    )

    # 3. export
    clock = _Clock()
    with _bar(progress, total=2, desc="export", unit="bundle") as bar:
        portable = export_bundle(
            model,
            out / "portable",
            MODEL_NAME,
            1,
            use_op=False,
            overwrite=True,
            sample_options=SHOP_OPTIONS,
        )
        bar.update(1)
        with_op = export_bundle(
            model,
            out / "with_op",
            MODEL_NAME,
            1,
            use_op=True,
            overwrite=True,
            sample_options=SHOP_OPTIONS,
        )
        bar.update(1)
    stages.append(
        report.Stage(
            "export bundles", clock.seconds, None, "", "2 typed bundles: op-free + with the op"
        )
    )
    bundles = {
        "op-free typed bundle (stock TF Serving)": str(portable.path),
        "typed bundle with the C++ op": str(with_op.path),
    }
    _say(
        f"[3/{n_stages}] exported {portable.path} (stock ops only) and {with_op.path} (the op), "
        f"typed: seed label :{users} ({clock.seconds:.1f} s)"
    )

    # 4. serve, against the in-process model on the same blobs
    ids = test_ids[:classify_count]
    sampling = inference_sampling(read_bundle_config(portable.path))
    x = blob.unpack(source.sample_typed(ids, *sampling.typed_arguments()))
    local_probs = tf.nn.softmax(model({k: x[k] for k in model.input_names() if k in x})).numpy()
    local_classes = local_probs.argmax(axis=1)
    served: list[report.ServedCheck] = []
    server = ModelServer(out / "portable" / MODEL_NAME, MODEL_NAME, graph_source=source)
    with (
        start_server(server) as running,
        ServingClient(running.url, MODEL_NAME, timeout_s=60) as rest,
    ):
        labels, rest_seconds = _classify_by_node_id(rest, ids, progress, "serve")
        served.append(
            _check(
                "REST :classify by node_id",
                labels,
                names,
                ids,
                data.labels,
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
                    data.labels,
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
            f"[4/{n_stages}] {c.how}: {c.nodes} test :{users} nodes in "
            f"{c.seconds * 1000:.0f} ms; accuracy {c.accuracy:.3f}, agreement with the "
            f"in-process model on the same blobs {c.agreement:.3f}"
        )
    _say(f"      e.g. user {ids[0]} -> {labels[0]} (truth: {names[int(data.labels[ids[0]])]})")

    # 5. batch inference
    written, seconds, how = _classify_stage(source, out / "portable" / MODEL_NAME, progress)
    stages.append(report.Stage("batch inference", seconds, written, "nodes", how))
    _say(
        f"[5/{n_stages}] batch inference wrote the predicted class of {written:,} :{users} nodes "
        f"back to the graph ({seconds:.1f} s, {how})"
    )

    # 6. pictures and report
    clock = _Clock()
    title = "Shop graph (typed)"
    images = {
        "Training: loss, training and validation accuracy": report.training_curves(
            result.history,
            out / "training.png",
            test_accuracy=test_accuracy,
            best_step=result.best_step,
            title=f"{title}: typed GraphSAGE training",
            best_possible=data.best_accuracy,
        ),
        "Confusion matrix on the test nodes": report.confusion_figure(
            report.confusion_matrix(truth, predicted, len(names)),
            names,
            out / "confusion.png",
            title=f"{title}, {len(test_ids)} test users: accuracy {test_accuracy:.3f}",
        ),
    }
    images["Throughput and time per stage"] = report.throughput_figure(
        stages, out / "throughput.png", title=f"{title}: the demo's stages"
    )
    stages.append(report.Stage("pictures + report", clock.seconds))
    widths = ", ".join(f"{label} {ns.width}" for label, ns in data.node_sets.items())
    summary = report.Summary(
        dataset=SHOP,
        graph=graph_text,
        num_nodes=num_nodes,
        num_edges=num_edges,
        num_features=widths,
        class_names=names,
        train_nodes=train_n,
        val_nodes=val_n,
        test_nodes=len(test_ids),
        test_accuracy=test_accuracy,
        val_accuracy=result.best_val_accuracy,
        eval_draws=EVAL_DRAWS,
        published={},
        served=served,
        stages=stages,
        out_dir=str(out),
        bundles=bundles,
        commands=_commands(out, SHOP, graph, ids[:2]),
        notes=notes,
        best_possible=data.best_accuracy,
        model_name="typed GraphSAGE",
        same_blobs=True,
    )
    html = report.write_report(out, summary, images)
    _say(
        f"[6/{n_stages}] wrote {', '.join(p.name for p in images.values())} and {html.name} into "
        f"{out} ({clock.seconds:.1f} s)"
    )
    if embedded is None and hasattr(source, "close"):
        source.close()
    return {
        "dataset": SHOP,
        "test_accuracy": test_accuracy,
        "best_possible": data.best_accuracy,
        "val_accuracy": result.best_val_accuracy,
        "served_accuracy": served[0].accuracy,
        "served_agreement": served[0].agreement,
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
        choices=[*datasets.DATASETS, SHOP],
        help="cora / citeseer (shipped in the package), synthetic (a small random graph) or shop "
        "(a generated typed graph: users, products, categories; the typed GraphSAGE)",
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
    """``memgraph-tf demo``: runs :func:`run`, prints the summary and the commands to go on."""
    if not getattr(args, "verbose", False):
        for name in ("memgraph_tf", "absl"):  # absl: SavedModel export's renaming notes
            logging.getLogger(name).setLevel(logging.WARNING)
    clock = _Clock()
    figures = run(
        args.dataset,
        args.out,
        graph=args.graph,
        replace=args.replace,
        steps=args.steps,
        seed=args.seed,
        progress=not args.no_progress,
    )
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
