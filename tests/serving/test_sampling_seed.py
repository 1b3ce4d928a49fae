"""One answer per node: every inference path (``memgraph-tf serve --graph``, ``memgraph-tf
classify``, in-process prediction), for a bundle with or without ``options.seed``, samples with
:func:`memgraph_tf.serving.bundle.inference_sampling` -- the bundle's seed, else
``bundle.DEFAULT_SEED`` -- keyed by (seed, node); new draws per request only with
``sampling_seed="random"`` (``memgraph-tf serve --sampling-seed random``)."""

from __future__ import annotations

import argparse
import json

import grpc
import numpy as np
import pytest
import requests
from tensorflow_serving.apis import prediction_service_pb2_grpc

from memgraph_tf import errors
from memgraph_tf.serving import bundle
from memgraph_tf.serving.grpc_server import start_grpc_server
from memgraph_tf.serving.json_values import format_decimal
from tests.graphs import KeyedGraph, node_id, predictions
from tests.serving.grpc_kit import node_id_request

LABEL = "Seedless"
NODES = [node_id(i) for i in range(6)]


class Recording:
    """A graph source that records the options of each call, then asks the real one."""

    def __init__(self, inner):
        self.inner = inner
        self.options: list[dict] = []

    def sample_blobs_per_node(self, ids, fanouts, properties, options):
        self.options.append(dict(options))
        return self.inner.sample_blobs_per_node(ids, fanouts, properties, options)


@pytest.fixture(scope="module")
def seedless(tmp_path_factory, sage):
    """A bundle whose sampling options hold no seed, over the keyed test graph (90 nodes, fanouts
    [3, 2], 4 features: the shapes of ``sage.make``), served over REST and gRPC with a graph. It
    decodes with the op: sampling does not depend on the decoder, and each load of an op-free
    bundle (the server's, the batch backend's) first instantiates the portable decoder's graph."""
    from memgraph_tf.serving.export import export_bundle
    from memgraph_tf.serving.model_server import ModelServer
    from memgraph_tf.serving.server import start_server

    base = tmp_path_factory.mktemp("seedless")
    options = {"id_property": "id", "label": LABEL, "low_degree": "pad"}
    export_bundle(
        sage.make(seed=3), base, "seedless", 1, use_op=True, sample_options=options, warmup=False
    )
    source = KeyedGraph(LABEL).embedded_source()
    graph = Recording(source)
    ms = ModelServer(base / "seedless", graph_source=graph, warmup=False)
    with start_server(ms) as rest, start_grpc_server(ms) as rpc:
        channel = grpc.insecure_channel(rpc.target)
        yield type(
            "Served",
            (),
            {
                "base": base,
                "source": source,
                "graph": graph,
                "ms": ms,
                "url": f"{rest.url}/v1/models/seedless:classify",
                "stub": prediction_service_pb2_grpc.PredictionServiceStub(channel),
            },
        )
        channel.close()
    ms.close()


def rest_scores(url: str, ids: list[int]) -> list[dict[str, str]]:
    """Each node's ``{label: score text}`` as the REST answer prints it."""
    body = json.dumps({"examples": [{"node_id": i} for i in ids]})
    r = requests.post(url, data=body, timeout=60)
    assert r.status_code == 200, r.text
    # the score texts, exactly as written (six significant digits, TF Serving's WriteDecimal)
    rows = json.loads(r.text, parse_float=str)["results"]
    return [dict(row) for row in rows]


def grpc_scores(stub, ids: list[int]) -> list[dict[str, float]]:
    req = node_id_request("seedless", ids)
    resp = stub.Classify(req, timeout=60)
    return [{c.label: c.score for c in row.classes} for row in resp.result.classifications]


def test_a_seedless_bundle_gives_one_answer_per_node_on_every_path(seedless):
    """The same nodes classified twice over REST and once over gRPC get identical scores, sampled
    with seed 0, and the answer is the one batch inference (BundleBackend + classify_graph)
    computes and writes for them."""
    from memgraph_tf.batch import BundleBackend, classify_graph

    seedless.graph.options.clear()
    first = rest_scores(seedless.url, NODES)
    second = rest_scores(seedless.url, NODES[::-1])[::-1]  # other order, other batch
    assert first == second
    by_grpc = grpc_scores(seedless.stub, NODES)
    assert [{k: format_decimal(v) for k, v in row.items()} for row in by_grpc] == first
    assert {o.get("seed") for o in seedless.graph.options} == {bundle.DEFAULT_SEED}

    with BundleBackend(seedless.base / "seedless" / "1") as backend:
        classify_graph(seedless.source, backend, node_ids=NODES, progress=False)
    written = predictions(seedless.source)
    for nid, row in zip(NODES, by_grpc):
        label, score = max(row.items(), key=lambda kv: kv[1])
        assert written[nid][0] == label
        np.testing.assert_allclose(written[nid][1], score, rtol=1e-6)


def test_random_sampling_is_asked_for_by_name(seedless, sage_bundle, monkeypatch):
    """``sampling_seed="random"`` draws afresh on every request (no seed reaches the graph: the
    query modules draw one); an int overrides the bundle's seed; a bundle's own seed is kept."""
    from memgraph_tf.serving.model_server import ModelServer

    config = seedless.ms.versions[1].bundle_config
    random_spec = bundle.inference_sampling(config, bundle.RANDOM_SAMPLING)
    monkeypatch.setitem(seedless.ms.sampling, 1, random_spec)  # as sampling_seed="random" sets it
    seedless.graph.options.clear()
    answers = {json.dumps(rest_scores(seedless.url, NODES)) for _ in range(4)}
    assert len(answers) > 1  # new neighbourhoods, new scores
    assert all("seed" not in o for o in seedless.graph.options)
    assert bundle.inference_sampling(config, 5).options["seed"] == 5
    own = bundle.read_bundle_config(sage_bundle.path / "1")
    assert bundle.inference_sampling(own).options["seed"] == sage_bundle.options["seed"]
    with pytest.raises(ValueError, match=r"sampling_seed: expected an int, None .* or 'random'"):
        ModelServer(seedless.base / "seedless", warmup=False, sampling_seed="sometimes")


def test_sampling_seed_option_and_contract():
    from memgraph_tf.serving.server import parse_sampling_seed

    assert [parse_sampling_seed(v) for v in (None, "random", "12", " -3 ", 4)] == [
        None,
        "random",
        12,
        -3,
        4,
    ]
    with pytest.raises(ValueError, match=r"--sampling-seed: expected an integer or 'random'"):
        parse_sampling_seed("often")
    args = argparse.Namespace(sampling_seed="random")
    assert parse_sampling_seed(args.sampling_seed) == bundle.RANDOM_SAMPLING
    config = bundle.BundleConfig(
        model_name="m",
        version=1,
        use_op=False,
        blob_feature_key="blob",
        class_names=["a", "b"],
        fanouts=[2],
        feature_dim=3,
        properties=["features"],
        options={"label_property": "y", "low_degree": "pad"},
        sections={"features_0": {"dtype": "float32", "shape": [1, 3]}},
        scores="probabilities",
        tensorflow_version="2",
    )
    assert bundle.inference_sampling(config).options == {"low_degree": "pad", "seed": 0}
    assert bundle.inference_sampling(config, 9).options["seed"] == 9
    assert "seed" not in bundle.inference_sampling(config, bundle.RANDOM_SAMPLING).options
    with pytest.raises(errors.BundleError, match=r"seed: expected an int, None or 'random'"):
        bundle.inference_sampling(config, "x")


def test_the_serve_command_takes_sampling_seed(tmp_path, capsys):
    """``memgraph-tf serve --sampling-seed``: parsed by the command line; a bad value is one line
    on stderr and exit 2 (before any model is loaded)."""
    from memgraph_tf import cli

    args = cli.build_parser().parse_args(["serve", str(tmp_path), "--sampling-seed", "random"])
    assert args.sampling_seed == "random"
    assert cli.main(["serve", str(tmp_path), "--sampling-seed", "often"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("memgraph-tf serve: ") and len(err.strip().splitlines()) == 1
    assert "--sampling-seed: expected an integer or 'random'" in err
