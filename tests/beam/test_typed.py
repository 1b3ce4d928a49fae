"""memgraph_tf.beam with a typed bundle: ``ClassifyNodes`` on the DirectRunner (threads
over the embedded graph) and on the DaskRunner (2 worker processes, the graph in ArcadeDB over real
Bolt) writes every :User node once -- and nothing of another label -- with the predictions of the
one-process path (``memgraph-tf classify``: :func:`memgraph_tf.batch.classify_graph`);
``ExportNeighbourhoods`` samples with the bundle's typed settings (each record's blob is the
node's own ``sample_typed`` blob).

The model and the graph are the typed kit's (tests/client/typed_kit.py: 600 users, 2 classes),
each run on a fresh copy of the graph."""

from __future__ import annotations

import random

import pytest

from tests.beam import helpers as h

try:
    import apache_beam  # noqa: F401 -- imported only to see whether Beam is installed
except ImportError as exc:
    h.beam_missing(exc)

from memgraph_tf.beam import classify_with_beam, register_graph, unregister_graph
from memgraph_tf.beam.graph_specs import GraphSpec
from memgraph_tf.beam.models import ModelSpec
from memgraph_tf.client import EmbeddedSource
from memgraph_tf.client.node_tables import property_names
from memgraph_tf.typed_datasets import typed_embedded_graph
from tests.client import typed_kit as kit
from tests.graphs import CountingGraph

USERS = 600


def _graph():
    graph = kit.shop()[0]
    assert graph.node_sets["User"].size == USERS
    return graph


def _embedded() -> EmbeddedSource:
    """A fresh embedded copy of the module's shop graph whose writes are counted."""
    graph, _ = typed_embedded_graph(_graph(), into=CountingGraph())
    graph.writes.clear()
    return EmbeddedSource(graph)


@pytest.fixture(scope="module")
def bundle_dir():
    """The kit's typed bundle decoding with the op (model ``shop``): the Beam paths do not depend
    on the decoder, and each process or server that loads the op-free bundle first instantiates
    the portable decoder's graph (seconds; tests/serving/test_typed_bundles.py checks the op-free
    typed bundle's scores)."""
    return kit.bundle(True).path


@pytest.fixture(scope="module")
def reference(bundle_dir):
    """The one-process path's predictions: ``{user id: (class, score, version)}``."""
    from memgraph_tf.batch import BundleBackend, classify_graph

    source = _embedded()
    with BundleBackend(bundle_dir) as backend:
        summary = classify_graph(source, backend, batch_size=64, progress=False)
    assert summary.classified == USERS
    return h.predictions(source)


def _labels_written(source: EmbeddedSource) -> set[str]:
    version = property_names("predicted_class")[2]
    graph = source.graph
    return {
        label
        for (internal, key) in graph.writes
        if key == version
        for label in graph.labels(internal)
    }


def test_direct_runner_writes_each_user_once_with_the_one_process_predictions(
    bundle_dir, reference
):
    source = _embedded()
    h.classify_on_two_threads(source, bundle_dir, USERS)
    h.assert_same(h.predictions(source), reference)
    assert h.writes_per_node(source) == {k: 1 for k in range(USERS)}
    assert _labels_written(source) == {"User"}  # never a :Product or :Category node
    assert {c for c, _, _ in reference.values()} == {"even", "odd"}  # not one class for all


def test_export_keeps_the_typed_settings(bundle_dir, tmp_path):
    from memgraph_tf.beam import create_pipeline
    from memgraph_tf.beam.transforms import ExportNeighbourhoods, read_exported
    from memgraph_tf.serving import bundle

    source = _embedded()
    sampling = bundle.inference_sampling(bundle.read_bundle_config(bundle_dir))
    assert sampling.typed is not None and sampling.options["label"] == "User"
    # typed settings without options.label still export only the seed label's nodes
    sampling = bundle.SamplingSpec(
        (), (), {k: v for k, v in sampling.options.items() if k != "label"}, sampling.typed
    )
    spec = register_graph(source)
    try:
        with create_pipeline("DirectRunner", num_workers=2, running_mode="multi_threading") as p:
            _ = p | ExportNeighbourhoods(
                spec, sampling, str(tmp_path / "hoods"), seeds=[1, 2], batch_size=32, num_ranges=4
            )
    finally:
        unregister_graph(spec)
    records = [
        {k: v.numpy() for k, v in r.items()} for r in read_exported(str(tmp_path / "hoods-*"))
    ]
    pairs = sorted((int(r["node_id"]), int(r["seed"])) for r in records)
    assert pairs == sorted((i, s) for i in range(USERS) for s in (1, 2))  # :User nodes only
    nn, props, options = sampling.typed_arguments()
    for r in random.Random(0).sample(records, 10):
        want = source.sample_typed([int(r["node_id"])], nn, props, {**options, "seed": r["seed"]})
        assert r["blob"] == want


@pytest.mark.arcadedb
def test_two_dask_workers_over_bolt_write_the_one_process_predictions(
    bolt_source, bolt_env, dask_cluster, bundle_dir, reference
):
    from memgraph_tf.client.loaders import load_typed_graph
    from memgraph_tf.serving.model_server import ModelServer
    from memgraph_tf.serving.server import start_server

    load_typed_graph(bolt_source, _graph(), replace=True)
    assert not bolt_source.has_procedures()  # the client-side typed sampler runs on the workers
    # warmup (the bundle's warmup request, as TF Serving replays it) traces the model at load,
    # not in the workers' first requests (a trace takes tens of seconds on a loaded machine)
    server = ModelServer(bundle_dir.parent, "shop")
    try:
        assert server.warmup_requests >= 1
        with start_server(server) as running:
            summary = classify_with_beam(
                GraphSpec(bolt_env.uri),
                ModelSpec.resolve(rest=running.url, model_name="shop"),
                runner="DaskRunner",
                dask_address=dask_cluster.scheduler_address,
                batch_size=32,
                num_ranges=4,
            )
    finally:
        server.close()
    assert (summary.read, summary.classified, summary.written, summary.unchanged) == (
        USERS,
        USERS,
        USERS,
        0,
    )
    cls, score, version = property_names("predicted_class")
    for label in ("Product", "Category"):  # never written
        [row] = bolt_source.read(
            f"MATCH (n:{label}) WHERE n.{version} IS NOT NULL RETURN count(n) AS c"
        )
        assert row["c"] == 0, label
    rows = bolt_source.read(
        f"MATCH (n:User) RETURN n.id AS id, n.{cls} AS c, n.{score} AS s, n.{version} AS v"
    )
    h.assert_same({r["id"]: (r["c"], r["s"], r["v"]) for r in rows}, reference)
