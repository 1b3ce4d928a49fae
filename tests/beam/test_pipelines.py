"""memgraph_tf.beam on Beam's DirectRunner (the FnApiRunner, never Prism) and its
BundleBasedDirectRunner: predictions equal the batch module's, each node read and written exactly
once with 1 and 4 worker threads over the embedded graph and 2 worker processes over real Bolt
(each process imports TensorFlow and loads the bundle: seconds each on 2 cores), resume,
a bundle retried after its write committed writes nothing twice, invalid nodes, the TFRecord
export, the REST and op-bundle backends and the ``--runner`` command line."""

from __future__ import annotations

import argparse
import random
import re

import pytest

from tests.beam import helpers as h

try:
    import apache_beam  # noqa: F401 -- imported only to see whether Beam is installed
except ImportError as exc:
    h.beam_missing(exc)

from memgraph_tf.beam import classify_with_beam, register_graph, unregister_graph
from memgraph_tf.beam.graph_specs import GraphSpec, acquire, release
from memgraph_tf.beam.models import ModelSpec, sampling_for
from memgraph_tf.beam.transforms import example_bytes, split_key_range
from memgraph_tf.client.node_tables import NodeSelection, NodeTable
from memgraph_tf.errors import ConfigurationError


@pytest.fixture
def graph():
    """A fresh embedded test graph registered for in-process runners: (GraphSpec, source)."""
    source = h.embedded_source()
    spec = register_graph(source)
    yield spec, source
    unregister_graph(spec)


@pytest.fixture(scope="session")
def model(bundle_base):
    return ModelSpec.resolve(bundle=bundle_base)


# ------------------------------------------------------------------------------------ parts
def test_key_ranges_cover_each_key_once():
    for lo, hi, n in [(-200, 423, 5), (0, 0, 16), (5, 9, 16), (-(2**62), 2**62, 7)]:
        ranges = split_key_range(lo, hi, n)
        assert len(ranges) <= n and ranges[0][0] == lo and ranges[-1][1] == hi + 1
        assert all(a < b for a, b in ranges) and all(
            ranges[i][1] == ranges[i + 1][0] for i in range(len(ranges) - 1)
        )


def test_example_bytes_parse_back_as_tf_examples():
    import tensorflow as tf

    for features in (
        {"blob": b"\x00\xff" * 300, "node_id": -200, "seed": 11},
        {"nödé": bytes(range(256)), "node_id": 2**63 - 1, "seed": 0},
    ):
        parsed = tf.train.Example.FromString(example_bytes(features))
        got = {
            k: (v.bytes_list.value[0] if v.HasField("bytes_list") else v.int64_list.value[0])
            for k, v in parsed.features.feature.items()
        }
        assert got == features
    with pytest.raises(
        ConfigurationError, match=r"features\['x'\]: expected bytes or an int, got float"
    ):
        example_bytes({"x": 1.5})


def test_sampling_and_selection_are_the_batch_classifier_s(backend, model):
    from memgraph_tf.batch import BatchClassifier
    from memgraph_tf.beam.transforms import selection_for

    run = BatchClassifier(h.embedded_source(), backend, progress=False)
    assert sampling_for(model.config) == run.sampling
    assert (model.model_name, model.version) == (backend.name, backend.version)
    selection = selection_for(model)
    assert (selection.label, selection.id_property, selection.version) == (h.LABEL, "id", 1)
    with pytest.raises(
        ConfigurationError, match=r"label: the model samples :BeamItem nodes .*got 'Other'"
    ):
        selection_for(model, label="Other")


def test_specs_carry_no_credentials_and_in_process_graphs_stay_in_their_process():
    with pytest.raises(ConfigurationError, match=r"graph: expected a URI without user or password"):
        GraphSpec("bolt://neo4j:secret@db:7687")
    with pytest.raises(
        ConfigurationError, match=r"graph: inprocess:nobody is not registered in this process"
    ):
        acquire(GraphSpec("inprocess:nobody"))
    from memgraph_tf.beam.runner import check_runner_for_graph

    with pytest.raises(ConfigurationError, match=r"lives in this process, but FlinkRunner"):
        check_runner_for_graph(GraphSpec("inprocess:x"), "FlinkRunner", None)
    with pytest.raises(
        ConfigurationError, match=r"DirectRunner in multi_processing mode runs workers elsewhere"
    ):
        check_runner_for_graph(GraphSpec("embedded:cora"), "DirectRunner", "multi_processing")
    check_runner_for_graph(GraphSpec("bolt://db:7687"), "DataflowRunner", None)  # fine


def test_node_table_pages_by_key_and_guarded_writes_write_once(graph):
    spec, source = graph
    handle = acquire(spec)
    try:
        table = handle.table(NodeSelection(label=h.LABEL, id_property="id", version=3))
        keys = sorted(h.node_id(i) for i in range(h.N))
        assert table.bounds(todo=True) == (keys[0], keys[-1])
        assert table.page(None, 100, True, lo=-200, hi=-150) == [k for k in keys if k < -150]
        assert table.page(-190, 3, False, lo=-200, hi=10**6) == [-186, -179, -172]
        assert table.page(-190, 3, False) == [-186, -179, -172]
        batch = [(k, "red", 0.5) for k in keys[:10]] + [(999_999, "red", 0.5)]
        assert table.write(batch, only_todo=True) == 10
        assert table.write(batch, only_todo=True) == 0  # a retried batch: nothing written twice
        assert table.page(None, 5, True, lo=-200, hi=10**6) == keys[10:15]
        assert table.count(todo=True) == h.N - 10
        assert table.bounds(todo=True) == (keys[10], keys[-1])
        assert table.write(batch[:2], only_todo=False) == 2  # overwrite rewrites
        assert h.writes_per_node(source)[keys[0]] == 2 and h.writes_per_node(source)[keys[5]] == 1
    finally:
        release(handle)


def classify_every_node(spec, model, workers: int, mode: str) -> None:
    """A DirectRunner job over ``spec`` (``workers`` workers in running mode ``mode``, batches of
    16, 8 key ranges) that reads, classifies and writes each of the graph's nodes, none left
    unchanged."""
    summary = classify_with_beam(
        spec,
        model,
        runner="DirectRunner",
        num_workers=workers,
        running_mode=mode,
        batch_size=16,
        num_ranges=8,
    )
    assert (summary.read, summary.classified, summary.written, summary.unchanged) == (
        h.N,
        h.N,
        h.N,
        0,
    )


# ---------------------------------------------------------------- embedded graph, 1 and 4 workers
@pytest.mark.parametrize("workers, mode", [(1, "in_memory"), (4, "multi_threading")])
def test_embedded_run_equals_the_batch_module_each_node_once(
    graph, model, reference, workers, mode
):
    spec, source = graph
    classify_every_node(spec, model, workers, mode)
    h.assert_same(h.predictions(source), reference)
    assert h.writes_per_node(source) == {k: 1 for k in reference}
    assert 10**6 not in h.predictions(source)  # another label: never classified


def test_a_rerun_classifies_only_what_is_missing(graph, model, backend, reference):
    from memgraph_tf.batch import classify_graph

    spec, source = graph
    done = sorted(reference)[20:50]
    classify_graph(source, backend, node_ids=done, progress=False)  # an interrupted earlier run
    summary = classify_with_beam(spec, model, batch_size=16, num_ranges=4)
    assert (summary.read, summary.written) == (h.N - len(done), h.N - len(done))
    h.assert_same(h.predictions(source), reference)
    assert h.writes_per_node(source) == {k: 1 for k in reference}
    again = classify_with_beam(spec, model, batch_size=16)
    assert (again.read, again.written) == (0, 0)
    redo = classify_with_beam(spec, model, batch_size=16, overwrite=True)
    assert (redo.read, redo.written) == (h.N, h.N)


def test_reads_from_a_lagging_replica_write_to_main_once(graph, model, backend, reference):
    from memgraph_tf.batch import classify_graph

    main_spec, main = graph
    replica = h.embedded_source()  # the same data, none of MAIN's recent writes
    replica_spec = register_graph(replica)
    done = sorted(reference)[::4]
    classify_graph(main, backend, node_ids=done, progress=False)
    try:
        summary = classify_with_beam(
            main_spec,
            model,
            read_graph=replica_spec,
            num_workers=2,
            running_mode="multi_threading",
            batch_size=16,
        )
    finally:
        unregister_graph(replica_spec)
    assert (summary.read, summary.written, summary.unchanged) == (h.N, h.N - len(done), len(done))
    assert h.predictions(replica) == {} and not replica.graph.writes
    assert h.writes_per_node(main) == {k: 1 for k in reference}
    h.assert_same(h.predictions(main), reference)


class _CrashAfterCommit:
    """Wraps NodeTable.write: the ``crash_at``-th call commits its batch, then raises once (a
    worker dying after its transaction committed)."""

    def __init__(self, monkeypatch, crash_at: int):
        self.calls: list[tuple[list[int], int]] = []
        self.crashed = 0
        original = NodeTable.write
        wrapper = self

        def write(table, predictions, *, only_todo):
            written = original(table, predictions, only_todo=only_todo)
            wrapper.calls.append(([p[0] for p in predictions], written))
            if len(wrapper.calls) == crash_at and not wrapper.crashed:
                wrapper.crashed += 1
                raise RuntimeError("injected worker failure after the batch committed")
            return written

        monkeypatch.setattr(NodeTable, "write", write)


def test_a_bundle_beam_retries_after_its_writes_committed_writes_no_node_twice(
    graph, model, reference, monkeypatch
):
    spec, source = graph
    fault = _CrashAfterCommit(monkeypatch, crash_at=2)
    summary = classify_with_beam(
        spec, model, runner="BundleBasedDirectRunner", batch_size=16, num_ranges=3
    )
    assert fault.crashed == 1
    # Beam retried the bundle: its batches came again, the committed ones were left alone
    resent = [ids for ids, written in fault.calls if written == 0]
    assert resent and all(ids in [i for i, w in fault.calls if w > 0] for ids in resent)
    assert sum(w for _, w in fault.calls) == h.N
    assert h.writes_per_node(source) == {k: 1 for k in reference}
    h.assert_same(h.predictions(source), reference)
    # counters of the failed attempt are not committed; the retried batches show as unchanged
    assert summary.unchanged >= len(resent[0]) and summary.written < h.N


def test_the_fnapi_runner_does_not_retry_a_rerun_completes_the_job(
    graph, model, reference, monkeypatch
):
    spec, source = graph
    fault = _CrashAfterCommit(monkeypatch, crash_at=2)
    with pytest.raises(Exception, match=r"injected worker failure after the batch committed"):
        classify_with_beam(spec, model, batch_size=16, num_ranges=4)
    committed = sum(w for _, w in fault.calls)
    assert 0 < committed < h.N and len(h.predictions(source)) == committed
    summary = classify_with_beam(spec, model, batch_size=16, num_ranges=4)
    assert summary.written == h.N - committed
    assert h.writes_per_node(source) == {k: 1 for k in reference}
    h.assert_same(h.predictions(source), reference)


def test_invalid_nodes_stop_the_job_or_are_skipped(model, backend):
    from memgraph_tf.batch import classify_graph

    bad = 20
    source = h.embedded_source(bad=(bad,))
    spec = register_graph(source)
    try:
        with pytest.raises(
            Exception, match=rf"InvalidNodeError: node {h.node_id(bad)}: .*features"
        ):
            classify_with_beam(spec, model, batch_size=8, num_ranges=2)
        before = len(h.predictions(source))
        assert h.node_id(bad) not in h.predictions(source)
        summary = classify_with_beam(spec, model, batch_size=8, num_ranges=2, skip_invalid=True)
    finally:
        unregister_graph(spec)
    assert (
        summary.invalid == 1
        and summary.read == h.N - before
        and summary.written == h.N - 1 - before
    )
    got = h.predictions(source)
    assert h.node_id(bad) not in got and len(got) == h.N - 1
    want_source = h.embedded_source(bad=(bad,))
    batch = classify_graph(want_source, backend, skip_invalid=True, progress=False)
    assert [nid for nid, _ in batch.invalid] == [h.node_id(bad)]
    h.assert_same(got, h.predictions(want_source))


@pytest.fixture(scope="module")
def model_server(op_bundle_base):
    """The op twin (version 2) behind a local ModelServer, loaded once for the REST and the gRPC
    case: the transports do not depend on the decoder, and an op-free bundle's load and first
    call cost seconds per server (the predictions are compared with the op-free ``reference``)."""
    from memgraph_tf.serving.model_server import ModelServer

    server = ModelServer(op_bundle_base, "BeamSageOp")
    yield server
    server.close()


@pytest.mark.parametrize("transport", ["rest", "grpc"])
def test_served_model_through_the_local_server(graph, model_server, reference, transport):
    spec, source = graph
    server = model_server
    if transport == "rest":
        from memgraph_tf.serving.server import start_server

        running, target = start_server(server), "url"
    else:
        grpc_server = pytest.importorskip(
            "memgraph_tf.serving.grpc_server",
            reason="the gRPC server (memgraph_tf.serving.grpc_server) is not here",
        )
        running, target = grpc_server.start_grpc_server(server), "target"
    with running:
        served = ModelSpec.resolve(**{transport: getattr(running, target)}, model_name="BeamSageOp")
        assert (served.kind, served.version) == (transport, 2)
        summary = classify_with_beam(
            spec, served, num_workers=2, running_mode="multi_threading", batch_size=16
        )
    assert summary.written == h.N
    got = h.predictions(source)
    assert {v for _, _, v in got.values()} == {2}
    h.assert_same({k: (c, s, 1) for k, (c, s, _) in got.items()}, reference)


# --------------------------------------------------------------------------------------- export
def test_export_writes_each_node_and_seed_once_as_tf_examples(graph, tmp_path):
    import numpy as np

    from memgraph_tf import blob
    from memgraph_tf.beam import create_pipeline
    from memgraph_tf.beam.transforms import ExportNeighbourhoods, read_exported
    from memgraph_tf.serving.bundle import SamplingSpec

    spec, source = graph
    sampling = SamplingSpec(h.FANOUTS, ["features"], {**h.OPTIONS, "label_property": "label"})
    with create_pipeline("DirectRunner", num_workers=2, running_mode="multi_threading") as p:
        _ = p | ExportNeighbourhoods(
            spec,
            sampling,
            str(tmp_path / "hoods"),
            seeds=[1, 2],
            batch_size=16,
            num_ranges=4,
            num_shards=3,
        )
    files = sorted(tmp_path.glob("hoods-*-of-00003.tfrecord"))
    assert len(files) == 3
    records = [
        {k: v.numpy() for k, v in r.items()} for r in read_exported(str(tmp_path / "hoods-*"))
    ]
    pairs = sorted((int(r["node_id"]), int(r["seed"])) for r in records)
    assert pairs == sorted((h.node_id(i), s) for i in range(h.N) for s in (1, 2))
    picked = random.Random(0).sample(records, 12)
    for r in picked:
        options = {**sampling.options, "seed": int(r["seed"])}
        [want] = source.sample_blobs_per_node([int(r["node_id"])], h.FANOUTS, ["features"], options)
        assert r["blob"] == want
        unpacked = blob.unpack(r["blob"])
        assert int(unpacked["labels"][0]) == (int(r["node_id"]) + 200) // 7 % 3
    a, b = ([r["blob"] for r in records if r["seed"] == s] for s in (1, 2))
    assert not np.array_equal(sorted(a), sorted(b))  # another seed, other neighbourhoods


# ------------------------------------------------------------------------- real Bolt (ArcadeDB)
@pytest.mark.arcadedb
def test_bolt_worker_processes_with_the_op_bundle(bolt_graph, bolt_env, op_bundle_base, reference):
    op_model = ModelSpec.resolve(bundle=op_bundle_base)
    assert op_model.config.use_op and op_model.version == 2
    spec = GraphSpec(bolt_env.uri)
    classify_every_node(spec, op_model, 2, "multi_processing")
    got = h.bolt_predictions(bolt_graph)
    assert {v for _, _, v in got.values()} == {2}
    h.assert_same({k: (c, s, 1) for k, (c, s, _) in got.items()}, reference)


@pytest.mark.arcadedb
def test_bolt_one_worker_resumes_after_the_batch_module(
    bolt_graph, bolt_env, backend, model, reference
):
    from memgraph_tf.batch import classify_graph

    done = sorted(reference)[::3]
    classify_graph(bolt_graph, backend, node_ids=done, progress=False)
    summary = classify_with_beam(GraphSpec(bolt_env.uri), model, batch_size=16, num_ranges=4)
    assert (summary.read, summary.written) == (h.N - len(done), h.N - len(done))
    h.assert_same(h.bolt_predictions(bolt_graph), reference)
    where = classify_with_beam(
        GraphSpec(bolt_env.uri),
        model,
        where="n.id >= $low",
        where_params={"low": 0},
        write_property="positive",
        batch_size=16,
    )
    assert where.written == sum(1 for k in reference if k >= 0)
    h.assert_same(
        h.bolt_predictions(bolt_graph, "positive"), {k: v for k, v in reference.items() if k >= 0}
    )


# ------------------------------------------------------------------------------------ command line
def _classify_parser() -> argparse.ArgumentParser:
    """``memgraph-tf classify``'s parser with the runner arguments (added here until the CLI wires
    them itself)."""
    from memgraph_tf import cli
    from memgraph_tf.beam import add_runner_arguments

    parser = cli.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    classify = sub.choices["classify"]
    if not any("--runner" in a.option_strings for a in classify._actions):
        add_runner_arguments(classify)
    return parser


def test_cli_runs_the_pipeline_and_prints_a_summary(graph, bundle_base, reference, capsys):
    from memgraph_tf.beam import run_classify_pipeline

    spec, source = graph
    args = _classify_parser().parse_args(
        [
            "classify",
            "--graph",
            spec.uri,
            "--model",
            str(bundle_base),
            "--batch-size",
            "16",
            "--write-property",
            "cli",
            "--no-progress",
            "--runner",
            "DirectRunner",
            "--num-workers",
            "2",
            "--",
            "--direct_runner_bundle_repeat=0",
        ]
    )
    assert args.pipeline_args == ["--direct_runner_bundle_repeat=0"]
    assert run_classify_pipeline(args) == 0
    out = capsys.readouterr().out
    assert out.startswith(
        f"classified {h.N} nodes, written {h.N}, unchanged 0, skipped 0 invalid on DirectRunner "
        f"(2 worker(s))"
    )
    assert "model BeamSage version 1 -> cli, cli_score, cli_version" in out
    h.assert_same(h.predictions(source, "cli"), reference)


def test_cli_refusals_are_one_line_with_exit_code_2(graph, bundle_base, capsys):
    from memgraph_tf.beam import run_classify_pipeline

    spec, _ = graph
    base = ["classify", "--graph", spec.uri, "--model", str(bundle_base), "--no-progress"]
    cases = [
        (
            ["--runner", "FlinkRunner"],
            r"error: graph: inprocess:\S+ lives in this process, but FlinkRunner",
        ),
        (
            ["--runner", "DirectRunner", "--running-mode", "multi_processing"],
            r"in multi_processing mode runs workers",
        ),
        (["--runner", "DirectRunner", "--shard", "1/3"], r"error: --shard: not with --runner"),
        (
            ["--runner", "DirectRunner", "--where", "n.id > 0"],
            r"error: where: the embedded graph runs no Cypher",
        ),
        (
            ["--runner", "DirectRunner", "--num-workers", "0"],
            r"error: --num-workers: expected an integer >= 1",
        ),
    ]
    parser = _classify_parser()
    for extra, message in cases:
        code = run_classify_pipeline(parser.parse_args(base + extra))
        err = capsys.readouterr().err.strip().splitlines()
        assert code == 2 and len(err) == 1, err
        assert err[0].startswith("memgraph-tf classify: ")
        assert re.search(message, err[0]), err[0]


# ----------------------------------------------------------------- keyset paging adds up
def test_key_ranges_that_stop_early_or_repeat_a_key_fail_the_run(graph, model, monkeypatch):
    from memgraph_tf.errors import KeysetPagingError

    spec, _ = graph
    page = NodeTable.page
    # a server that answers each range's first page only: the summary's counts catch the gap
    monkeypatch.setattr(
        NodeTable,
        "page",
        lambda self, after, limit, todo, **kw: (
            page(self, after, limit, todo, **kw) if after is None else []
        ),
    )
    with pytest.raises(KeysetPagingError) as info:  # before: a summary and exit 0
        classify_with_beam(spec, model, batch_size=16, num_ranges=2)
    assert str(info.value) == (
        f"selected {h.N} node(s) but read 32 (classified 32, 0 invalid): {h.N - 32} node(s) were "
        f"never read (the server's keyset pages over the key ranges stopped early or skipped keys)"
    )
    # a server that starts each page again at the last key: refused on the worker, naming it
    monkeypatch.setattr(
        NodeTable,
        "page",
        lambda self, after, limit, todo, **kw: (
            page(self, None, limit, todo, **kw)
            if after is None
            else [after, *page(self, after, limit - 1, todo, **kw)]
        ),
    )
    with pytest.raises(
        Exception, match=r"keyset paging: page 2 returned key -?\d+ after key -?\d+"
    ):
        classify_with_beam(spec, model, batch_size=16, num_ranges=2, overwrite=True)
    monkeypatch.undo()
    summary = classify_with_beam(spec, model, batch_size=16, num_ranges=2)  # the rerun completes
    assert (summary.selected, summary.read) == (h.N - 32, h.N - 32)
