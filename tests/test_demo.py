"""The main job (``memgraph-tf demo``): the whole pipeline on the small synthetic graph (CI), what
it leaves in the output folder (bundles, pictures that decode, a report that shows them), its
command line, its summary and the filter that keeps TensorFlow's start-up lines off the screen."""

from __future__ import annotations

import importlib.util
import os
import pathlib
import re

import numpy as np
import pytest

from memgraph_tf import cli, datasets, demo, report


def run_quietly(dataset: str, out, **kwargs):
    """``demo.run(dataset, out, progress=False, **kwargs)`` with its stdout captured; asserts
    that the run printed each of its six stages and returns ``(out, figures, printed)``."""
    import contextlib
    import io

    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        figures = demo.run(dataset, out, progress=False, **kwargs)
    for step in range(1, 7):
        assert f"[{step}/6]" in printed.getvalue()
    return out, figures, printed.getvalue()


@pytest.fixture(scope="module")
def synthetic_run(tmp_path_factory):
    return run_quietly("synthetic", tmp_path_factory.mktemp("demo"), steps=30, classify_count=16)


def test_demo_pipeline_on_the_synthetic_graph(synthetic_run) -> None:
    _, figures, _ = synthetic_run
    assert figures["written"] == 400
    assert figures["test_accuracy"] > 0.8  # 4 balanced classes: chance is 0.25
    assert figures["served_agreement"] >= 0.75
    summary = figures["summary"]
    assert [s.name for s in summary.stages][:3] == ["load graph", "train", "test evaluation"]
    assert summary.stages[1].count == 30
    assert summary.served[0].nodes == 16
    grpc = importlib.util.find_spec("memgraph_tf.serving.grpc_server") is not None
    assert [c.how for c in summary.served] == ["REST :classify by node_id"] + (
        ["gRPC Classify by node_id"] if grpc else []
    )
    for check in summary.served:
        assert check.agreement >= 0.75, check


def test_demo_leaves_bundles_pictures_and_report(synthetic_run) -> None:
    import matplotlib.image

    out, figures, _ = synthetic_run
    for kind in ("portable", "with_op"):
        assert (out / kind / "GraphSage" / "1" / "saved_model.pb").is_file()
        assert figures["files"][kind] == out / kind / "GraphSage" / "1"
    assert (out / "with_op" / "GraphSage" / "1" / "assets.extra").is_dir()
    pngs = sorted(p.name for p in out.glob("*.png"))
    assert pngs == ["confusion.png", "throughput.png", "training.png"]
    page = (out / "report.html").read_text(encoding="utf-8")
    for name in pngs:
        image = matplotlib.image.imread(out / name)
        assert image.ndim == 3 and image.shape[0] > 200 and image.shape[1] > 300, name
        assert image.std() > 0.05, f"{name} is blank"
        assert f'<img src="{name}"' in page
    assert "red, green, blue, yellow" in page
    assert f"{figures['test_accuracy']:.3f}" in page
    assert "each side samples its own neighbourhoods" in page


@pytest.mark.arcadedb
def test_demo_bundles_take_the_sparse_layout_for_bag_of_words_features(synthetic_run) -> None:
    from memgraph_tf.serving import bundle

    assert demo.bundle_layout(datasets.load_dataset("cora").features) == "sparse"  # ~1.3% non-zero
    assert demo.bundle_layout(datasets.load_dataset("citeseer").features) == "sparse"
    assert demo.bundle_layout(np.eye(10, dtype=np.float32)) == "sparse"  # 10%: at the threshold
    assert demo.bundle_layout(np.eye(9, dtype=np.float32)) == "dense"
    assert (
        demo.bundle_layout(datasets.load_dataset("synthetic").features) == "sparse"
    )  # 9.2% non-zero
    out, _, _ = synthetic_run
    for kind in ("portable", "with_op"):
        config = bundle.read_bundle_config(out / kind / "GraphSage" / "1")
        assert config.sampling.options.get("layout") == "sparse"


SMALL_SHOP = {
    "num_users": 600,
    "num_products": 120,
    "num_categories": 4,
    "num_classes": 2,
    "follows_per_user": 3,
    "signal": 0.9,
}
"""A small shop graph with a strong signal (best possible accuracy 0.999, chance 0.5)."""


def test_shop_demo_trains_typed_serves_by_node_id_and_scores_every_user(tmp_path) -> None:
    from memgraph_tf.serving import bundle
    from memgraph_tf.typed_datasets import shop_graph

    out, figures, printed = run_quietly(
        "shop", tmp_path, steps=20, classify_count=12, shop=SMALL_SHOP
    )
    graph = shop_graph(**SMALL_SHOP)
    assert "split read from the :User nodes' 'split' property" in printed
    # the test accuracy beside the graph's exact best possible accuracy, well above chance
    assert figures["best_possible"] == graph.best_accuracy > 0.99
    assert 0.9 <= figures["test_accuracy"] <= 1.0
    summary = figures["summary"]
    assert summary.published == {} and summary.best_possible == graph.best_accuracy
    assert (summary.train_nodes, summary.val_nodes, summary.test_nodes) == tuple(
        len(graph.ids(s)) for s in ("train", "val", "test")
    )
    text = report.summary_text(summary)
    assert re.search(r"typed GraphSAGE test accuracy \(this run\)\s+(0\.9\d\d|1\.000)", text)
    assert re.search(r"best possible accuracy \(exact\)\s+0\.999", text)
    ratio = figures["test_accuracy"] / graph.best_accuracy
    assert re.search(rf"test accuracy / best possible\s+{ratio:.3f}", text)
    assert "GCN" not in text and "agreement compares the served class" in text
    # served by node_id over REST and gRPC: the in-process model's class on the same blobs
    grpc = importlib.util.find_spec("memgraph_tf.serving.grpc_server") is not None
    assert [c.how for c in summary.served] == ["REST :classify by node_id"] + (
        ["gRPC Classify by node_id"] if grpc else []
    )
    for check in summary.served:
        assert (check.nodes, check.agreement) == (12, 1.0), check
    # batch inference wrote every :User node once, and no other label
    assert figures["written"] == graph.node_sets["User"].size
    # typed bundles, op-free and with the op, with the shop's class names
    for kind in ("portable", "with_op"):
        config = bundle.read_bundle_config(out / kind / "GraphSage" / "1")
        assert config.typed["seed_label"] == "User"
        assert config.options["id_property"] == "id" and config.class_names == ("books", "music")
    assert config.use_op
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "books, music" in page and "features User 16, Product 12, Category 8" in page
    assert sorted(p.name for p in out.glob("*.png")) == [
        "confusion.png",
        "throughput.png",
        "training.png",
    ]
    assert "--graph embedded:shop --port 8501" in summary.commands[1]


SMALL_PEOPLE = {"num_people": 600, "strength": 3.0, "seed": 1}
"""A small planted property graph with a strong signal (best possible accuracy 0.902, chance
0.417)."""


def test_people_demo_infers_a_spec_trains_serves_and_scores_every_person(tmp_path) -> None:
    from memgraph_tf.feature_spec import LabelSpec
    from memgraph_tf.property_datasets import planted_property_graph
    from memgraph_tf.serving import bundle

    out, figures, printed = run_quietly(
        "people", tmp_path, steps=30, classify_count=12, people=SMALL_PEOPLE
    )
    graph = planted_property_graph(**SMALL_PEOPLE)
    # profile -> inferred spec (printed) -> training, in that order
    profiled = printed.index("profiled :Person (600 nodes, tf_features.profile)")
    inferred = printed.index("inferred the feature spec of :Person")
    assert printed.index("[1/6]") < profiled < inferred < printed.index("[2/6]")
    assert "plan: string/missing, coverage 61%, 3 distinct" in printed
    assert re.search(r"city: categorical \(10 values \+ 1 OOV\)", printed)
    assert re.search(r"plan: categorical \(3 values \+ 1 OOV, missing indicator\)", printed)
    assert "joined: temporal (Date, standardised: mean" in printed
    spec = figures["feature_spec"]
    assert [p.name for p in spec.properties] == [
        "city",
        "tags",
        "joined",
        "plan",
        "score",
        "visits",
    ]
    assert LabelSpec.from_json((out / "feature_spec.json").read_text()).to_dict() == spec.to_dict()
    # well above chance, at most the exact best possible accuracy (with a finite-sample margin)
    assert figures["best_possible"] == graph.best_accuracy
    assert graph.chance + 0.2 < figures["test_accuracy"] <= graph.best_accuracy + 0.08
    # served by node_id over REST and gRPC: the in-process model's class on the same blobs
    grpc = importlib.util.find_spec("memgraph_tf.serving.grpc_server") is not None
    summary = figures["summary"]
    assert [c.how for c in summary.served] == ["REST :classify by node_id"] + (
        ["gRPC Classify by node_id"] if grpc else []
    )
    for check in summary.served:
        assert (check.nodes, check.agreement) == (12, 1.0), check
    # batch inference wrote every :Person node
    assert figures["written"] == 600
    # both bundles sample the raw property columns with the inferred spec
    for kind in ("portable", "with_op"):
        config = bundle.read_bundle_config(out / kind / "GraphSage" / "1")
        assert config.typed["seed_label"] == "Person"
        assert config.options["feature_spec"] == {"Person": spec.to_dict()}
        assert config.class_names == ("segment_0", "segment_1", "segment_2")
    assert "--graph embedded:people --port 8501" in summary.commands[1]


def test_people_demo_refuses_a_bolt_graph() -> None:
    from memgraph_tf.errors import ConfigurationError

    with pytest.raises(ConfigurationError, match=r"--dataset people runs on the in-process"):
        demo.run("people", "unused", graph="bolt://db:7687", progress=False)


SMALL_LEDGER = {"num_accounts": 400, "counterparties_per_class": 30, "occasional": 10, "seed": 1}
"""A small ledger (best possible accuracy as of each account's time 0.963, chance 0.25)."""


@pytest.fixture(scope="module")
def ledger_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("ledger")
    return run_quietly("ledger", out, steps=30, classify_count=12, ledger=SMALL_LEDGER)


def test_ledger_demo_trains_with_weights_and_time_serves_and_scores_every_account(
    ledger_run,
) -> None:
    from memgraph_tf.ledger_datasets import ledger_graph
    from memgraph_tf.serving import bundle

    out, figures, printed = ledger_run
    graph = ledger_graph(**SMALL_LEDGER)
    for step in range(1, 7):
        assert f"[{step}/6]" in printed
    assert "weighted PAYEE draws, TRANSFER as of each account's 't'" in printed
    # well above chance, at most the exact best possible accuracy (with a finite-sample margin)
    assert figures["best_possible"] == graph.best_accuracy
    assert 0.6 < figures["test_accuracy"] <= graph.best_accuracy + 0.05
    # served by node_id over REST and gRPC: the in-process model's class on the same blobs
    summary = figures["summary"]
    for check in summary.served:
        assert (check.nodes, check.agreement) == (12, 1.0), check
    # batch inference wrote every :Account node (customers and counterparties)
    assert figures["written"] == len(graph.nodes)
    # both bundles sample the payees by limit and the transfers as of each seed's time
    for kind in ("portable", "with_op"):
        config = bundle.read_bundle_config(out / kind / "GraphSage" / "1")
        assert config.typed["seed_label"] == "Account"
        assert config.typed["num_neighbors"] == demo.LEDGER_NUM_NEIGHBORS
        assert config.options["seed_time"] == "t"
    assert "--graph embedded:ledger --port 8501" in summary.commands[1]


def test_ledger_demo_samples_each_account_as_of_its_time(ledger_run) -> None:
    """The served sampling (the bundle's) of early accounts, whose transfers after their time are
    in the graph: their neighbourhoods hold every counterparty of their past transfers (six, under
    the fanout of ten) and none reached only by a later transfer."""
    from memgraph_tf import blob
    from memgraph_tf.client import EmbeddedSource
    from memgraph_tf.ledger_datasets import ledger_embedded_graph, ledger_graph
    from memgraph_tf.serving import bundle

    out, _, _ = ledger_run
    graph = ledger_graph(**SMALL_LEDGER)
    source = EmbeddedSource(ledger_embedded_graph(graph)[0])
    config = bundle.read_bundle_config(out / "portable" / "GraphSage" / "1")
    early = graph.ids("train")[:20]
    x = blob.unpack(
        source.sample_typed(early, *bundle.inference_sampling(config).typed_arguments())
    )
    later_only = 0
    for row, i in zip(x["ids_h1_Account"].tolist(), early):
        t = graph.nodes[i]["t"]
        payees = {b for a, b, _ in graph.payees if a == i}
        past = {b for a, b, p in graph.transfers if a == i and p["ts"] <= t}
        later = {b for a, b, p in graph.transfers if a == i and p["ts"] > t} - past - payees
        seen = set(row) - {-1}
        assert past <= seen <= past | payees, i
        assert not seen & later, i
        later_only += len(later)
    assert later_only > 50  # the later transfers exist: leaving them out is the sampler's doing


def test_ledger_demo_refuses_a_bolt_graph() -> None:
    from memgraph_tf.errors import ConfigurationError

    with pytest.raises(ConfigurationError, match=r"--dataset ledger runs on the in-process"):
        demo.run("ledger", "unused", graph="bolt://db:7687", progress=False)


@pytest.mark.arcadedb
def test_demo_with_graph_loads_a_real_bolt_server_through_cypher(
    tmp_path, monkeypatch, arcadedb_server, bolt_source
) -> None:
    """On the session's ArcadeDB server (a real Bolt server; a server of its own cost seconds of
    JVM start): the demo writes :Paper nodes and :CITES edges, which are deleted before and after
    as the other users of the shared database do with theirs."""
    import contextlib
    import io

    monkeypatch.setenv("MEMGRAPH_TF_USER", arcadedb_server.user)
    monkeypatch.setenv("MEMGRAPH_TF_PASSWORD", arcadedb_server.password)
    monkeypatch.setenv("MEMGRAPH_TF_DATABASE", arcadedb_server.database)
    bolt_source.write(f"MATCH (n:{demo.GRAPH_LABEL}) DETACH DELETE n")
    try:
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            figures = demo.run(
                "synthetic",
                tmp_path,
                graph=arcadedb_server.uri,
                steps=10,
                classify_count=8,
                progress=False,
            )
        [row] = bolt_source.run(
            "MATCH (n:Paper) WHERE n.predicted_class IS NOT NULL RETURN count(n) AS c"
        )
        [edges] = bolt_source.run("MATCH (:Paper)-[e:CITES]->(:Paper) RETURN count(e) AS c")
    finally:
        bolt_source.write(f"MATCH (n:{demo.GRAPH_LABEL}) DETACH DELETE n")
    assert row["c"] == 400 and figures["written"] == 400
    assert edges["c"] == len(datasets.synthetic().edges)
    assert (
        "blobs packed on the client" in printed.getvalue()
    )  # ArcadeDB has no tf_features procedures
    assert re.search(
        rf"--graph {re.escape(arcadedb_server.uri)} --port 8501( --grpc-port 8500)? &$",
        figures["summary"].commands[1],
    )
    assert (tmp_path / "report.html").is_file()


def test_demo_output_folder_is_the_one_given(tmp_path, monkeypatch) -> None:
    args = cli.build_parser().parse_args(["demo"])
    assert (args.out, args.dataset, args.graph) == ("memgraph-tf-demo", "cora", None)
    args = cli.build_parser().parse_args(
        [
            "demo",
            "--dataset",
            "synthetic",
            "--out",
            str(tmp_path / "x"),
            "--graph",
            "bolt://db:7687",
            "--replace",
            "--steps",
            "5",
        ]
    )
    assert (args.dataset, args.out, args.graph, args.replace, args.steps) == (
        "synthetic",
        str(tmp_path / "x"),
        "bolt://db:7687",
        True,
        5,
    )
    with pytest.raises(SystemExit, match=r"^2$"):
        cli.build_parser().parse_args(["demo", "--dataset", "pubmed"])
    assert cli.build_parser().parse_args(["demo", "--dataset", "shop"]).dataset == "shop"
    assert cli.build_parser().parse_args(["demo", "--dataset", "people"]).dataset == "people"
    assert cli.build_parser().parse_args(["demo", "--dataset", "ledger"]).dataset == "ledger"


def test_commands_to_go_on_name_the_output_folder() -> None:
    import pathlib

    lines = demo._commands(pathlib.Path("memgraph-tf-demo"), "cora", None, [1708, 1709])
    text = "\n".join(lines)
    assert (
        "memgraph-tf serve memgraph-tf-demo/portable/GraphSage --graph embedded:cora --port 8501"
        in text
    )
    assert (
        "curl -s -X POST http://127.0.0.1:8501/v1/models/GraphSage:classify "
        '-d \'{"examples": [{"node_id": 1708}, {"node_id": 1709}]}\''
    ) in text
    real = "\n".join(demo._commands(pathlib.Path("out"), "cora", "bolt://db:7687", [1]))
    assert "--graph bolt://db:7687" in real


def test_demo_options_are_defined_by_the_demo_module() -> None:
    import argparse

    parser = argparse.ArgumentParser(prog="demo")
    demo.add_arguments(parser)  # what `memgraph-tf demo` is built from; no CLI module needed
    args = parser.parse_args(["--dataset", "citeseer", "--graph", "bolt://db:7687", "--replace"])
    want = cli.build_parser().parse_args(
        ["demo", "--dataset", "citeseer", "--graph", "bolt://db:7687", "--replace"]
    )
    assert {k: v for k, v in vars(want).items() if k not in ("command", "func", "verbose")} == (
        vars(args)
    )
    lines = "\n".join(demo._commands(pathlib.Path("o"), "cora", None, [1]))
    assert "--grpc-port 8500 &" in lines and "memgraph-tf classify --graph embedded:cora" in lines


def test_graph_uri_opens_a_packaged_dataset() -> None:
    from memgraph_tf.client import open_graph

    source = open_graph("embedded:synthetic")
    assert len(source.node_ids()) == 400
    shop = open_graph("embedded:shop")  # the shop demo's graph, as its commands to go on use it
    assert len(shop.node_ids(label="User", id_property="id")) == 3_000
    assert shop.node_ids(label="User", id_property="id", where={"split": "test"})[:2] == [18, 32]
    ledger = open_graph("embedded:ledger")  # the ledger demo's graph: 3,000 customers
    assert len(ledger.node_ids(label="Account", where={"split": "counterparty"})) == 4 * 150
    assert len(ledger.node_ids(label="Account")) == 3_000 + 4 * 150
    with pytest.raises(
        ValueError, match=r"dataset: expected one of cora, citeseer, synthetic, got 'nope'"
    ):
        open_graph("embedded:nope")


def test_native_log_filter_drops_only_tensorflow_start_up_lines(capfd) -> None:
    lines = [
        "WARNING: All log messages before absl::InitializeLog() is called are written to STDERR\n",
        "I0000 00:00:1795426048.153049   22215 port.cc:153] oneDNN custom operations are on.\n",
        "I0000 00:00:1795426048.153351   22215 cudart_stub.cc:31] Could not find cuda drivers on "
        "your machine\n",
        "E0000 00:00:1795426050.308762   22215 cuda_platform.cc:52] failed call to cuInit: "
        "INTERNAL: CUDA error\n",
        "E0000 00:00:1795426050.308762   22215 kernel.cc:7] a real error\n",
        "Traceback (most recent call last):\n",
    ]
    with demo.native_log_filter():
        for line in lines:
            os.write(2, line.encode())
    err = capfd.readouterr().err
    assert err == lines[4] + lines[5]


def _summary(**changes) -> report.Summary:
    fields = {
        "dataset": "cora",
        "graph": "g",
        "num_nodes": 2708,
        "num_edges": 5278,
        "num_features": 1433,
        "class_names": datasets.CLASS_NAMES["cora"],
        "train_nodes": 140,
        "val_nodes": 500,
        "test_nodes": 1000,
        "test_accuracy": 0.812,
        "val_accuracy": 0.79,
        "eval_draws": 10,
        "published": datasets.PUBLISHED_ACCURACY["cora"],
        "served": [report.ServedCheck("REST :classify by node_id", 64, 0.906, 0.938, 0.5)],
        "stages": [
            report.Stage("train", 40.0, 200, "steps"),
            report.Stage("pictures + report", 2.0),
        ],
        "out_dir": "out",
        "bundles": {"b": "out/portable/GraphSage/1"},
        "commands": ["memgraph-tf serve x"],
    }
    fields.update(changes)
    return report.Summary(**fields)


def test_summary_table_puts_test_accuracy_beside_the_published_figures() -> None:
    text = report.summary_text(_summary())
    rows = {line.split("  ")[0]: line for line in text.splitlines()}
    assert re.search(r"GraphSAGE test accuracy \(this run\)\s+0\.812\s+1000 test nodes", text)
    assert re.search(r"GCN, published\s+0\.815", rows["GCN, published"])
    assert re.search(r"GAT, published\s+0\.830", rows["GAT, published"])
    assert re.search(
        r"served vs in-process agreement, REST :classify by node_id\s+0\.938\s+64 test nodes", text
    )
    assert "measured on 64 test nodes and test accuracy on 1000: a smaller sample" in text.replace(
        "\n", " "
    )
    assert re.search(r"train\s+40\.0 s\s+200 steps\s+5\.00 step/s", text)
    assert re.search(r"total\s+42\.0 s", text)
    assert "{" not in text  # a table, not a raw dict


def test_confusion_matrix_counts_pairs_and_skips_unlabelled() -> None:
    m = report.confusion_matrix([0, 0, 1, 2, -1], [0, 1, 1, 0, 2], 3)
    assert m.tolist() == [[1, 1, 0], [0, 1, 0], [1, 0, 0]]


def test_report_refuses_pictures_outside_its_folder(tmp_path) -> None:
    (tmp_path / "out").mkdir()
    with pytest.raises(ValueError, match=r"images\['x'\]: expected a file inside .*out, got "):
        report.write_report(tmp_path / "out", _summary(), {"x": tmp_path / "elsewhere.png"})


def test_throughput_figure_draws_rates_and_times(tmp_path) -> None:
    import matplotlib.image

    stages = [
        report.Stage("a", 2.0, 100, "nodes"),
        report.Stage("b", 1.0),
        report.Stage("c", 0.5, 10, "steps"),
    ]
    path = report.throughput_figure(stages, tmp_path / "t.png")
    assert matplotlib.image.imread(path).shape[2] in (3, 4)
    assert [s.rate_text() for s in stages] == ["50.0 node/s", "-", "20.0 step/s"]


def test_readme_shows_the_architecture_picture(repo_root) -> None:
    import matplotlib.image

    image = matplotlib.image.imread(repo_root / "docs" / "architecture.png")
    assert image.shape[0] > 300 and image.shape[1] > 600
    assert "](docs/architecture.png)" in (repo_root / "README.md").read_text(encoding="utf-8")
