"""memgraph_tf.beam on Beam's own DaskRunner (``apache_beam.runners.dask.dask_runner``) over a real
``dask.distributed`` cluster -- a scheduler and 2 worker processes on 127.0.0.1 (the session's
``dask_cluster``), the graph in ArcadeDB over real Bolt: the same predictions as the one-process
batch module node for node, each node read and written once; the TFRecord export; the command
line; and, pinned, what that runner leaves out of the Beam model (Beam 2.77,
``runners/dask/transform_evaluator.py``: ``apply_dofn_to_bundle`` returns the outputs before it
calls ``invoke_finish_bundle``; ``ParDo.apply`` sends tagged and main outputs to one bag;
``DaskRunner.run_pipeline`` computes only ``list(bags.values())[-1]``; ``DaskRunnerResult.metrics``
raises), which is why our transforms take another shape there and the batching ones refuse it."""

from __future__ import annotations

import os
import random
import re
import sys

import pytest

from tests.beam import helpers as h

try:
    import apache_beam as beam
    import distributed
except ImportError as exc:
    h.beam_missing(exc)

from memgraph_tf.beam import classify_with_beam, create_pipeline, register_graph, unregister_graph
from memgraph_tf.beam.graph_specs import GraphSpec
from memgraph_tf.beam.models import ModelSpec
from memgraph_tf.beam.runner import run_pipeline
from memgraph_tf.errors import ConfigurationError, InvalidNodeError

pytestmark = pytest.mark.arcadedb


MODEL = "BeamSageOp"  # conftest's op_bundle_base: the op-free bundle's model, version 2


@pytest.fixture(scope="module")
def served(op_bundle_base):
    """The op bundle behind the local TF-Serving-compatible server (REST), in this process: the
    Dask workers call it over HTTP, so they never import TensorFlow (a worker process that loads a
    bundle pays seconds of TensorFlow start-up; the DirectRunner tests cover that path). The
    workers do not see the decoder; loading the op-free bundle would instantiate the portable
    decoder's graph at warmup (seconds)."""
    from memgraph_tf.serving.model_server import ModelServer
    from memgraph_tf.serving.server import start_server

    server = ModelServer(op_bundle_base, MODEL)
    try:
        with start_server(server) as running:
            yield running.url
    finally:
        server.close()


@pytest.fixture(scope="module")
def model(served):
    return ModelSpec.resolve(rest=served, model_name=MODEL)


def _as_version_1(predictions: dict) -> dict:
    """Predictions written by the op bundle (version 2), as the reference's version 1, after
    checking that they carry version 2."""
    assert {v for _, _, v in predictions.values()} <= {2}
    return {k: (c, s, 1) for k, (c, s, _) in predictions.items()}


def _dask(cluster, *extra):
    return [f"--dask_client_address={cluster.scheduler_address}", *extra]


def _gather(result):
    """The elements of the job's last transform (the only one the DaskRunner computes)."""
    return [x for part in result.client.gather(result.futures) for x in part]


def _worker_state():
    """On a worker: its pid, whether it ran our transforms, whether it imported TensorFlow."""
    return (
        os.getpid(),
        "memgraph_tf.beam.transforms" in sys.modules,
        "tensorflow" in sys.modules,
    )


def test_two_dask_workers_write_the_one_process_predictions_each_node_once(
    bolt_graph, bolt_env, dask_cluster, model, served, reference, capsys
):
    from memgraph_tf import cli
    from memgraph_tf.beam import run_classify_pipeline

    spec = GraphSpec(bolt_env.uri)
    summary = classify_with_beam(
        spec,
        model,
        runner="DaskRunner",
        dask_address=dask_cluster.scheduler_address,
        batch_size=16,
        num_ranges=4,
    )
    counts = (summary.selected, summary.read, summary.fetched, summary.classified)
    assert counts == (h.N, h.N, h.N, h.N)
    # written counts the guarded writes that changed a node: a node written twice would show
    # as unchanged (its second write finds this version) and written would fall short
    assert (summary.written, summary.unchanged, summary.invalid) == (h.N, 0, 0)
    assert (summary.runner, summary.workers) == ("DaskRunner", 2)
    h.assert_same(_as_version_1(h.bolt_predictions(bolt_graph)), reference)
    # both workers are processes of their own and both ran pages (model over REST: no TensorFlow)
    with distributed.Client(dask_cluster) as client:
        state = client.run(_worker_state)
    assert len(state) == 2 and [s[1:] for s in state.values()] == [(True, False)] * 2
    assert len({s[0] for s in state.values()} | {os.getpid()}) == 3
    # the same job from the command line: nothing left to do
    args = cli.build_parser().parse_args(
        ["classify", "--graph", bolt_env.uri, "--serving", served, "--model-name", MODEL]
        + ["--no-progress", "--runner", "DaskRunner"]
        + ["--dask-address", dask_cluster.scheduler_address]
    )
    assert run_classify_pipeline(args) == 0
    assert capsys.readouterr().out.startswith(
        "classified 0 nodes, written 0, unchanged 0, skipped 0 invalid on DaskRunner (2 worker(s))"
    )


def test_dask_export_writes_each_node_and_seed_once(bolt_graph, bolt_env, dask_cluster, tmp_path):
    from memgraph_tf.beam.transforms import ExportNeighbourhoods, read_exported
    from memgraph_tf.serving.bundle import SamplingSpec

    sampling = SamplingSpec(h.FANOUTS, ["features"], {**h.OPTIONS, "label_property": "label"})
    pipeline = create_pipeline("DaskRunner", pipeline_args=_dask(dask_cluster))
    _ = pipeline | ExportNeighbourhoods(
        GraphSpec(bolt_env.uri),
        sampling,
        str(tmp_path / "hoods"),
        seeds=[1, 2],
        batch_size=32,
        num_ranges=2,
    )
    files = run_pipeline(pipeline, _gather)
    assert sorted(files) == sorted(str(f) for f in tmp_path.glob("hoods-key*.tfrecord"))
    records = [
        {k: v.numpy() for k, v in r.items()} for r in read_exported(str(tmp_path / "hoods-*"))
    ]
    pairs = sorted((int(r["node_id"]), int(r["seed"])) for r in records)
    assert pairs == sorted((h.node_id(i), s) for i in range(h.N) for s in (1, 2))
    for r in random.Random(0).sample(records, 6):
        options = {**sampling.options, "seed": int(r["seed"])}
        [want] = bolt_graph.sample_blobs_per_node(
            [int(r["node_id"])], h.FANOUTS, ["features"], options
        )
        assert r["blob"] == want


def test_an_invalid_node_fails_the_dask_job_naming_it_or_is_skipped(
    bolt_graph, bolt_env, dask_cluster, model, reference
):
    bad = h.node_id(20)
    too_long = [0.5] * (h.DIM + 1)
    bolt_graph.write(
        f"MATCH (n:{h.LABEL} {{id: $id}}) SET n.features = $f", {"id": bad, "f": too_long}
    )
    common = dict(
        runner="DaskRunner",
        dask_address=dask_cluster.scheduler_address,
        batch_size=16,
        num_ranges=4,
    )
    spec = GraphSpec(bolt_env.uri)
    # the worker's InvalidNodeError reaches the launcher (Dask re-raises it), naming the node
    # classified and the node at fault (a sampled neighbour, or the node itself)
    with pytest.raises(
        InvalidNodeError,
        match=rf"^node -?\d+: node with id = {bad} property 'features': "
        rf"expected a list of {h.DIM} numbers .*got a list of {h.DIM + 1}$",
    ):
        classify_with_beam(spec, model, **common)
    before = h.bolt_predictions(bolt_graph)
    summary = classify_with_beam(spec, model, skip_invalid=True, **common)
    got = h.bolt_predictions(bolt_graph)
    assert bad not in got and summary.invalid >= 1
    assert summary.written == len(got) - len(before)
    assert len(got) + summary.invalid == h.N  # every other node classified, each once
    # a blob without the bad node: the same
    h.assert_same(_as_version_1(got), {k: reference[k] for k in got})


def test_dask_refusals_one_line_with_exit_code_2_on_the_command_line(
    bolt_env, served, model, capsys
):
    from memgraph_tf import cli
    from memgraph_tf.beam import run_classify_pipeline

    parser = cli.build_parser()
    base = ["classify", "--serving", served, "--model-name", MODEL, "--no-progress"]
    spec = register_graph(h.embedded_source())
    try:
        cases = [
            (
                ["--graph", spec.uri, "--runner", "DaskRunner"],
                r"error: graph: inprocess:\S+ lives in this process, but DaskRunner",
            ),
            (
                ["--graph", bolt_env.uri, "--runner", "DaskRunner", "--num-workers", "2"],
                r"error: --num-workers: not with --runner DaskRunner",
            ),
            (
                ["--graph", bolt_env.uri, "--runner", "DirectRunner", "--dask-address", "x:1"],
                r"error: dask_address: only with the DaskRunner, not DirectRunner",
            ),
        ]
        for extra, message in cases:
            code = run_classify_pipeline(parser.parse_args(base + extra))
            err = capsys.readouterr().err.strip().splitlines()
            assert code == 2 and len(err) == 1, err
            assert err[0].startswith("memgraph-tf classify: ") and re.search(message, err[0]), err
    finally:
        unregister_graph(spec)
    with pytest.raises(ConfigurationError, match=r"^num_workers: not with the DaskRunner, got 2"):
        classify_with_beam(GraphSpec(bolt_env.uri), model, runner="DaskRunner", num_workers=2)


# ------------------------------------------------- what Beam's DaskRunner leaves out, pinned
class _Tagging(beam.DoFn):
    def process(self, x):
        yield x if x % 2 == 0 else beam.pvalue.TaggedOutput("odd", x)


def test_what_the_dask_runner_leaves_out_is_pinned_and_refused(dask_cluster, model):
    from memgraph_tf.beam.transforms import ClassifyBlobs, FetchNeighbourhoods, WritePredictions
    from memgraph_tf.client.node_tables import NodeSelection
    from memgraph_tf.serving.bundle import SamplingSpec

    # BatchElements emits its last batch in finish_bundle, which the runner never collects
    p = create_pipeline("DaskRunner", pipeline_args=_dask(dask_cluster, "--dask_npartitions=1"))
    _ = p | beam.Create(range(25)) | beam.BatchElements(min_batch_size=4, max_batch_size=4)
    batches = run_pipeline(p, _gather)
    assert sorted(x for b in batches for x in b) == list(range(24))  # 24: the 25th is lost
    # tagged outputs land in the main output; only the last transform applied is computed
    p = create_pipeline("DaskRunner", pipeline_args=_dask(dask_cluster, "--dask_npartitions=1"))
    split = p | beam.Create([1, 2, 3, 4]) | beam.ParDo(_Tagging()).with_outputs("odd", main="even")
    _ = split.even | "Even" >> beam.Map(lambda x: ("even", x))
    _ = split.odd | "Odd" >> beam.Map(lambda x: ("odd", x))
    assert sorted(run_pipeline(p, _gather)) == [("odd", 1), ("odd", 2), ("odd", 3), ("odd", 4)]
    # and it keeps no metrics (the runner's own words)
    p = create_pipeline("DaskRunner", pipeline_args=_dask(dask_cluster))
    _ = p | beam.Create([1])
    with pytest.raises(NotImplementedError, match=r"collecting metrics will come later"):
        run_pipeline(p, lambda result: result.metrics())
    # so the transforms that batch refuse it (ClassifyNodes / ExportNeighbourhoods run pages)
    graph = GraphSpec("bolt://127.0.0.1:1")
    sampling = SamplingSpec(h.FANOUTS, ["features"], dict(h.OPTIONS))
    selection = NodeSelection(label=h.LABEL, id_property="id", version=1)
    for name, transform in (
        ("FetchNeighbourhoods", FetchNeighbourhoods(graph, sampling)),
        ("ClassifyBlobs", ClassifyBlobs(model)),
        ("WritePredictions", WritePredictions(graph, selection)),
    ):
        p = create_pipeline("DaskRunner", pipeline_args=_dask(dask_cluster))
        with pytest.raises(
            ConfigurationError,
            match=rf"^{name}: cannot run on Beam's DaskRunner: .* finish_bundle, so the last "
            r"batch of every bundle would be lost",
        ):
            _ = p | beam.Create([1]) | transform
