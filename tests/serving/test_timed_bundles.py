"""Typed bundles with a timed step (``(:User)-[:FOLLOWS {time: ts}]->(:User)``, the seeds' time
``options.seed_time``) and a weighted step (``{weight: w}``): the model trains with them, the
export keeps ``seed_time`` / ``time_order`` in its sampling options, ``memgraph-tf serve --graph``
answers ``{"node_id": N}`` over REST and gRPC with the in-process model's scores on the same
point-in-time blobs, and batch inference writes the in-process classes; ``options.at`` (one time
for every seed) and a ``:classify`` request's context ``at``, which the server passes as it."""

from __future__ import annotations

import functools

import grpc
import numpy as np
import pytest
import requests
import tensorflow as tf
from tensorflow_serving.apis import classification_pb2, prediction_service_pb2_grpc

from memgraph_tf import blob
from memgraph_tf.serving import bundle
from tests.client import typed_kit as kit
from tests.graphs import short_run
from tests.serving.grpc_kit import node_id_request

TIMED = "(:User)-[:FOLLOWS {time: ts}]->(:User)"
WEIGHTED = "(:User)-[:BOUGHT {weight: w}]->(:Product)"
NN = {WEIGHTED: [4, 0], TIMED: [3, 2], "(:Product)-[:IN]->(:Category)": [0, 1]}
PROPS = {"User": ["features"], "Product": ["features"], "Category": ["features"]}
OPTIONS = {"id_property": "id", "seed_time": "t", "time_order": "most_recent"}
USERS = [0, 3, 17, 42, 150]


@functools.cache
def ledger_shop():
    """``(graph, embedded graph, internal ids, source)``: a small shop graph whose :User nodes
    carry a time ``t`` and whose FOLLOWS / BOUGHT relationships carry a time ``ts`` / a weight
    ``w`` (deterministic, spread so that each seed sees part of its follows)."""
    from memgraph_tf.client import EmbeddedSource
    from memgraph_tf.embedded import EmbeddedGraph
    from memgraph_tf.typed_datasets import node_properties, shop_graph

    graph = shop_graph(
        200, num_products=40, num_categories=4, num_classes=2, follows_per_user=4, signal=0.9
    )
    g = EmbeddedGraph()
    ids = {}
    for label in graph.node_sets:
        rows = node_properties(graph, label)
        if label == "User":
            rows = [{**p, "t": (37 * i) % 100} for i, p in enumerate(rows)]
        ids[label] = [g.add_node([label], p) for p in rows]
    for (src, rel, dst), edges in graph.edge_sets.items():
        pairs = zip(edges.source.tolist(), edges.target.tolist(), strict=True)
        for k, (a, b) in enumerate(pairs):
            props = {"FOLLOWS": {"ts": (13 * k) % 100}, "BOUGHT": {"w": 1.0 + k % 5}}.get(rel)
            g.add_edge(ids[src][a], ids[dst][b], rel, props)
    return graph, g, ids, EmbeddedSource(g)


@functools.cache
def trained():
    graph, _, _, source = ledger_shop()
    return kit.train_users(graph, source, NN, PROPS, OPTIONS, **short_run(steps=4, eval_every=2))


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    from memgraph_tf.serving.export import export_bundle

    base = tmp_path_factory.mktemp("timed-bundles")
    return export_bundle(
        trained().model, str(base), "ledger", 1, use_op=True, sample_options=OPTIONS
    )


def in_process(ids: list[int]) -> np.ndarray:
    """The trained model's probabilities on one sample_typed blob of ``ids`` (inference seed)."""
    source = ledger_shop()[3]
    model = trained().model
    opts = {**OPTIONS, "label": "User", "seed": bundle.DEFAULT_SEED}
    x = blob.unpack(source.sample_typed(ids, NN, PROPS, opts))
    return tf.nn.softmax(model({k: x[k] for k in model.input_names()})).numpy()


def test_the_bundle_keeps_the_timing_options(exported):
    config = bundle.read_bundle_config(exported.path)
    assert config.options["seed_time"] == "t"
    assert config.options["time_order"] == "most_recent"
    nn, _, opts = bundle.inference_sampling(config).typed_arguments()
    assert (opts["seed_time"], opts["time_order"]) == ("t", "most_recent")
    assert nn == NN


@pytest.fixture(scope="module")
def served(exported):
    from memgraph_tf.serving.grpc_server import start_grpc_server
    from memgraph_tf.serving.model_server import ModelServer
    from memgraph_tf.serving.server import start_server

    ms = ModelServer(exported.path.parent, graph_source=ledger_shop()[3], warmup=False)
    with start_server(ms) as rest, start_grpc_server(ms) as rpc:
        channel = grpc.insecure_channel(rpc.target)
        yield (
            f"{rest.url}/v1/models/ledger:classify",
            (prediction_service_pb2_grpc.PredictionServiceStub(channel)),
        )
        channel.close()
    ms.close()


def test_served_by_node_id_equals_in_process(served):
    url, stub = served
    expected = in_process(USERS)
    r = requests.post(url, json={"examples": [{"node_id": i} for i in USERS]}, timeout=60)
    assert r.status_code == 200, r.text
    got = np.array([[dict(row)["even"], dict(row)["odd"]] for row in r.json()["results"]])
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    req = node_id_request("ledger", USERS)
    rows = stub.Classify(req, timeout=60).result.classifications
    got = np.array(
        [[{c.label: c.score for c in row.classes}[k] for k in ("even", "odd")] for row in rows]
    )
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def test_batch_classify_writes_the_in_process_classes(exported):
    from memgraph_tf.batch import BundleBackend, classify_graph
    from memgraph_tf.client.node_tables import property_names

    graph, embedded, ids, source = ledger_shop()
    cls, _, _ = property_names("timed_class")
    with BundleBackend(exported.path) as backend:
        done = classify_graph(source, backend, write_property="timed_class", progress=False)
    users = graph.node_sets["User"].size
    assert (done.classified, done.failed) == (users, 0)
    model = trained().model
    for row, key in zip(in_process(USERS), USERS):
        assert embedded.get_property(ids["User"][key], cls) == model.class_names[int(row.argmax())]


def test_options_at_is_one_time_for_every_seed():
    """``options.at`` replaces the seeds' own times: the blob of seeds whose times differ, sampled
    ``at`` T, is the blob of the same seeds after setting each seed's ``t`` to T."""
    from memgraph_tf.client import EmbeddedSource
    from memgraph_tf.embedded import EmbeddedGraph
    from memgraph_tf.errors import GraphDataError

    source = ledger_shop()[3]
    opts = {**OPTIONS, "label": "User", "seed": 3}
    at = source.sample_typed(USERS, NN, PROPS, {**opts, "at": 40})
    own = source.sample_typed(USERS, NN, PROPS, opts)
    assert at != own  # the seeds' own times (0..99) select other relationships
    g = EmbeddedGraph()
    node = [g.add_node(["Acct"], {"id": i, "t": t}) for i, t in enumerate((5, 50))]
    g.add_edge(node[0], node[1], "PAYS", {"ts": 20})
    g.add_edge(node[1], node[0], "PAYS", {"ts": 20})
    small = EmbeddedSource(g)
    step = {"(:Acct)-[:PAYS {time: ts}]->(:Acct)": [1]}
    base = {"label": "Acct", "id_property": "id", "seed": 1}
    ids = blob.unpack(small.sample_typed([0, 1], step, None, {**base, "seed_time": "t"}))
    assert ids["ids_h1_Acct"].tolist() == [[-1], [0]]  # 0 at time 5 sees nothing, 1 at 50 sees 0
    for at_time, want in ((30, [[1], [0]]), (10, [[-1], [-1]])):
        got = blob.unpack(small.sample_typed([0, 1], step, None, {**base, "at": at_time}))
        assert got["ids_h1_Acct"].tolist() == want
    with pytest.raises(GraphDataError, match=r"options\.at: expected an integer time, got"):
        small.sample_typed([0], step, None, {**base, "at": "2024-01-01"})
    with pytest.raises(GraphDataError, match=r"options\.at: expected a step with a time"):
        small.sample_typed([0], {"(:Acct)-[:PAYS]->(:Acct)": [1]}, None, {**base, "at": 3})


def test_every_sample_typed_option_passes_the_option_table():
    """Serving's link roles and link evaluation keep only :data:`SAMPLE_TYPED_OPTIONS`."""
    from memgraph_tf import layout

    for name in ("seed_time", "time_order", "at"):
        assert name in layout.SAMPLE_TYPED_OPTIONS


def test_a_requests_context_at_samples_every_node_id_at_that_time(served):
    """``{"context": {"at": T}, "examples": [{"node_id": N}, ...]}`` (REST) and an
    ``example_list_with_context`` whose context holds the int64 feature ``at`` (gRPC): every seed
    sampled with ``options.at = T`` instead of its own time; a non-integer ``at`` is a 400 /
    INVALID_ARGUMENT naming ``context.at``."""
    url, stub = served
    source, model = ledger_shop()[3], trained().model
    opts = {**OPTIONS, "label": "User", "seed": bundle.DEFAULT_SEED, "at": 40}
    x = blob.unpack(source.sample_typed(USERS, NN, PROPS, opts))
    expected = tf.nn.softmax(model({k: x[k] for k in model.input_names()})).numpy()
    assert not np.allclose(expected, in_process(USERS), atol=1e-6)  # the time matters
    body = {"context": {"at": 40}, "examples": [{"node_id": i} for i in USERS]}
    r = requests.post(url, json=body, timeout=60)
    assert r.status_code == 200, r.text
    got = np.array([[dict(row)["even"], dict(row)["odd"]] for row in r.json()["results"]])
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    req = classification_pb2.ClassificationRequest()
    req.model_spec.name = "ledger"
    holder = req.input.example_list_with_context
    holder.context.features.feature["at"].int64_list.value.append(40)
    for i in USERS:
        holder.examples.add().features.feature["node_id"].int64_list.value.append(i)
    rows = stub.Classify(req, timeout=60).result.classifications
    got = np.array(
        [[{c.label: c.score for c in row.classes}[k] for k in ("even", "odd")] for row in rows]
    )
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)

    r = requests.post(url, json={**body, "context": {"at": 1.5}}, timeout=60)
    assert r.status_code == 400
    assert (
        "context.at: expected one integer time (int64), got float_list [1.5]" in r.json()["error"]
    )
    holder.context.features.feature["at"].int64_list.value.append(41)
    with pytest.raises(grpc.RpcError) as err:
        stub.Classify(req, timeout=60)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "context.at: expected one integer time (int64), got int64_list [40, 41]" in (
        err.value.details()
    )


def test_context_at_on_other_bundles_is_refused_naming_it(sage_op_bundle):
    """A homogeneous bundle has no ``options.at``: refused in the server naming ``context.at``; a
    typed bundle without a timed step: the procedure's refusal, a 400 (not a 5xx)."""
    from memgraph_tf.errors import ServingFailure
    from memgraph_tf.serving.model_server import ModelServer
    from memgraph_tf.serving.node_examples import sampling_at
    from memgraph_tf.serving.server import start_server
    from tests.client import typed_kit as kit

    context = tf.train.Example()
    context.features.feature["at"].int64_list.value.append(4)
    sage_config = bundle.read_bundle_config(sage_op_bundle.info.path)
    with pytest.raises(ServingFailure, match=r"context\.at: only a typed node bundle") as err:
        sampling_at(sage_config, None, context)
    assert err.value.status == 400
    ms = ModelServer(kit.bundle(True).path.parent, graph_source=kit.shop()[3], warmup=False)
    body = {"context": {"at": 4}, "examples": [{"node_id": 1}]}
    with start_server(ms) as rest:
        r = requests.post(f"{rest.url}/v1/models/shop:classify", json=body, timeout=60)
    ms.close()
    assert r.status_code == 400
    assert "options.at: expected a step with a time in num_neighbors" in r.json()["error"]


def test_embed_by_node_id_at_a_time(served, exported):
    """``:predict`` on ``embed`` with ``{"inputs": {"node_id": [...], "at": T}}`` (REST) or the
    int64 inputs ``node_id`` and ``at`` (gRPC): the embeddings of the blobs sampled with
    ``options.at = T``; an ``at`` that is not one integer is refused naming ``at``."""
    import base64

    from tensorflow_serving.apis import predict_pb2

    from memgraph_tf.serving.neighbourhoods import fetch_blobs
    from memgraph_tf.serving.node_examples import sampling_with_at

    url, stub = served
    predict_url = url.replace(":classify", ":predict")
    config = bundle.read_bundle_config(exported.path)
    blobs = fetch_blobs(ledger_shop()[3], USERS, sampling_with_at(config, None, 40, "at"))
    sig = bundle.EMBED_SIGNATURE
    by_blob = {
        "signature_name": sig,
        "inputs": {bundle.EMBED_INPUT: [{"b64": base64.b64encode(b).decode()} for b in blobs]},
    }
    expected = np.array(requests.post(predict_url, json=by_blob, timeout=60).json()["outputs"])
    body = {"signature_name": sig, "inputs": {"node_id": USERS, "at": 40}}
    r = requests.post(predict_url, json=body, timeout=60)
    assert r.status_code == 200, r.text
    np.testing.assert_allclose(np.array(r.json()["outputs"]), expected, rtol=1e-5, atol=1e-6)
    own = requests.post(predict_url, json={**body, "inputs": {"node_id": USERS}}, timeout=60)
    assert not np.allclose(np.array(own.json()["outputs"]), expected, atol=1e-6)
    req = predict_pb2.PredictRequest()
    req.model_spec.name, req.model_spec.signature_name = "ledger", sig
    req.inputs["node_id"].CopyFrom(tf.make_tensor_proto(np.array(USERS, dtype=np.int64)))
    req.inputs["at"].CopyFrom(tf.make_tensor_proto(np.int64(40)))
    got = tf.make_ndarray(next(iter(stub.Predict(req, timeout=60).outputs.values())))
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    r = requests.post(
        predict_url, json={**body, "inputs": {"node_id": USERS, "at": 1.5}}, timeout=60
    )
    assert r.status_code == 400
    assert "at: expected one integer time (int64), got float64 of shape []" in r.json()["error"]
    req.inputs["at"].CopyFrom(tf.make_tensor_proto(np.float32(1.5)))
    with pytest.raises(grpc.RpcError) as err:
        stub.Predict(req, timeout=60)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "at: expected one integer time (int64), got float32 of shape []" in err.value.details()


def test_batched_requests_at_several_times_share_model_calls(exported):
    """With server-side batching, concurrent requests whose context ``at`` differs merge into
    one model call per batch, each time's nodes read apart (one read per time), interleaved as
    they arrive: every answer equals an unbatched server's, a missing node's error included."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from memgraph_tf.serving.batching import BatchingOptions
    from memgraph_tf.serving.model_server import ModelServer
    from memgraph_tf.serving.server import start_server

    source = ledger_shop()[3]
    plain = ModelServer(exported.path.parent, graph_source=source, warmup=False)
    options = BatchingOptions(max_batch_size=64, batch_timeout_micros=300_000, num_batch_threads=1)
    batched = ModelServer(exported.path.parent, graph_source=source, warmup=False, batching=options)
    bodies = []
    for k, at in enumerate([None, 40, None, 60, 40, None, 60, 40]):
        body = {"examples": [{"node_id": USERS[(k + j) % 5]} for j in range(1 + k % 3)]}
        bodies.append(body if at is None else {**body, "context": {"at": at}})
    missing = {"context": {"at": 40}, "examples": [{"node_id": 999999}]}
    barrier = threading.Barrier(len(bodies))

    def post(srv, body, wait=False):
        if wait:
            barrier.wait()
        r = requests.post(f"{srv.url}/v1/models/ledger:classify", json=body, timeout=60)
        return r.status_code, r.text

    with start_server(plain) as a, start_server(batched, threads=16) as b:
        want = [post(a, body) for body in bodies]
        runs, calls = batched.batcher.batches_run, batched.model_calls
        with ThreadPoolExecutor(len(bodies)) as pool:
            got = list(pool.map(lambda body: post(b, body, True), bodies))
        runs, calls = batched.batcher.batches_run - runs, batched.model_calls - calls
        barrier = threading.Barrier(len(bodies) + 1)
        with ThreadPoolExecutor(len(bodies) + 1) as pool:
            got_missing = list(pool.map(lambda body: post(b, body, True), [*bodies, missing]))
        want_missing = post(a, missing)
    batched.close()
    assert got == want and {s for s, _ in got} == {200}
    # three times in at most two batches, one model call each: times share model calls
    assert calls == runs and runs <= 2, (calls, runs)
    assert got_missing == [*want, want_missing] and want_missing[0] == 400, want_missing
