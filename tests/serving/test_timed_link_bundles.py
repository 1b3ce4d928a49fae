"""Link bundles of a model with a timed step (tests/serving/timed_links_kit.py): the export keeps
the timed steps and ``time_order``; ``memgraph-tf serve --graph`` answers ``source_id`` /
``target_id`` pairs over REST and gRPC, op and op-free, as of the request's context ``at`` --
else "now" (``bundle.NOW_TIME``: every relationship) -- with ``predict_links``'s scores on
``[n, 3]`` pairs whose time column is that time; an ``embed_*`` request by ``node_id`` takes the
same ``at``; a bad ``at`` is a 400 / INVALID_ARGUMENT naming ``context.at``."""

from __future__ import annotations

import grpc
import numpy as np
import pytest
import requests
import tensorflow as tf
from tensorflow_serving.apis import (
    classification_pb2,
    predict_pb2,
    prediction_service_pb2_grpc,
    regression_pb2,
)

from memgraph_tf.serving import bundle
from tests.serving import timed_links_kit as kit


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """The op bundle ``timed_links`` and the op-free bundle ``timed_links_free`` in one base."""
    base = tmp_path_factory.mktemp("timed-link-bundles")
    return kit.export(base), kit.export(base, "timed_links_free", decoder="portable")


@pytest.fixture(scope="module")
def served(exported):
    """``(graph source, REST url, gRPC stub, gRPC target)`` of a local server holding both
    bundles."""
    from memgraph_tf.serving.grpc_server import start_grpc_server
    from memgraph_tf.serving.model_config import ModelEntry
    from memgraph_tf.serving.model_server import ModelServer
    from memgraph_tf.serving.server import start_server

    source = kit.graph()
    entries = [ModelEntry(info.path.parent.name, info.path.parent) for info in exported]
    ms = ModelServer(model_config=entries, graph_source=source, warmup=False)
    with start_server(ms) as rest, start_grpc_server(ms) as rpc:
        channel = grpc.insecure_channel(rpc.target)
        stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
        yield source, rest.url, stub, rpc.target
        channel.close()
    ms.close()


def test_the_export_keeps_the_timed_steps_and_time_order(exported):
    from memgraph_tf.errors import BundleError
    from memgraph_tf.serving.export_links import link_settings

    config = bundle.read_bundle_config(exported[0].path)
    assert config.link["num_neighbors"] == kit.NN
    assert config.options == {**kit.OPTIONS, "dtype": "float32"}
    assert config.link_sampling.timed_roles() == ("source",)
    sampling = bundle.inference_sampling(config)
    _, _, options = sampling.pair_arguments(3)
    assert options["pair_times"] == [bundle.NOW_TIME] * 3  # "now": no upper time bound
    assert options["time_order"] == "most_recent" and "at" not in options
    at = bundle.inference_sampling(config).options | {"at": kit.AT}
    timed = bundle.SamplingSpec((), (), at, link=config.link)
    assert timed.pair_arguments(2)[2]["pair_times"] == [kit.AT, kit.AT]
    assert sampling.role_arguments("source")[2]["at"] == bundle.NOW_TIME
    assert timed.role_arguments("source")[2]["at"] == kit.AT
    assert "at" not in timed.role_arguments("target")[2]  # no timed step: sample_typed refuses it
    with pytest.raises(BundleError, match=r"^count: a link bundle with a timed step"):
        sampling.pair_arguments()
    with pytest.raises(BundleError, match=r"^sample_options: 'pair_time': expected only"):
        link_settings(kit.model(), sample_options={"pair_time": "ts"})


def _body(pairs, at) -> dict:
    body = {"examples": [{"source_id": int(s), "target_id": int(t)} for s, t in pairs]}
    return body if at is None else {"context": {"at": at}, **body}


def _grpc(stub, model: str, verb: str, pairs, at) -> list[float]:
    message = (
        classification_pb2.ClassificationRequest
        if verb == "classify"
        else (regression_pb2.RegressionRequest)
    )
    req = message()
    req.model_spec.name = model
    holder = req.input.example_list_with_context
    if at is not None:
        holder.context.features.feature["at"].int64_list.value.append(at)
    for s, t in pairs:
        feature = holder.examples.add().features.feature
        feature["source_id"].int64_list.value.append(int(s))
        feature["target_id"].int64_list.value.append(int(t))
    if verb == "classify":
        rows = stub.Classify(req, timeout=60).result.classifications
        return [{c.label: c.score for c in row.classes}["link"] for row in rows]
    return [r.value for r in stub.Regress(req, timeout=60).result.regressions]


def test_served_pairs_as_of_at_or_now_equal_predict_links(served):
    """REST and gRPC, ``:classify`` and ``:regress``, op and op-free: the scores of
    ``predict_links`` on the pairs with the time column ``at`` (``NOW_TIME`` without one)."""
    source, url, stub, _ = served
    pairs = np.r_[kit.non_edges(4), [[0, 3], [5, 7]]]  # and two pairs that may be edges
    expected = {at: kit.in_process(source, pairs, at) for at in (kit.AT, None)}
    assert np.abs(expected[kit.AT] - expected[None]).max() > 1e-3  # the time matters
    for model in ("timed_links", "timed_links_free"):
        for at, want in expected.items():
            r = requests.post(
                f"{url}/v1/models/{model}:classify", json=_body(pairs, at), timeout=60
            )
            assert r.status_code == 200, r.text
            got = [row[0][1] for row in r.json()["results"]]
            np.testing.assert_allclose(got, want, rtol=0, atol=1e-5)
            r = requests.post(f"{url}/v1/models/{model}:regress", json=_body(pairs, at), timeout=60)
            assert r.status_code == 200, r.text
            np.testing.assert_allclose(r.json()["results"], want, rtol=0, atol=1e-5)
            for verb in ("classify", "regress"):
                got = _grpc(stub, model, verb, pairs, at)
                np.testing.assert_allclose(got, want, rtol=0, atol=1e-5)


@pytest.mark.parametrize(
    "at, shown",
    [(1.5, "float_list [1.5]"), ([40, 41], "int64_list [40, 41]"), ("x", "bytes_list [b'x']")],
)
def test_an_at_that_is_not_one_integer_is_refused_naming_context_at(served, at, shown):
    _, url, stub, _ = served
    pairs = kit.non_edges(1)
    for verb in ("classify", "regress"):
        r = requests.post(f"{url}/v1/models/timed_links:{verb}", json=_body(pairs, at), timeout=60)
        assert r.status_code == 400, r.text
        assert r.json()["error"] == f"context.at: expected one integer time (int64), got {shown}"
    req = classification_pb2.ClassificationRequest()
    req.model_spec.name = "timed_links"
    holder = req.input.example_list_with_context
    holder.context.features.feature["at"].float_list.value.append(1.5)
    ex = holder.examples.add().features.feature
    ex["source_id"].int64_list.value.append(int(pairs[0, 0]))
    ex["target_id"].int64_list.value.append(int(pairs[0, 1]))
    with pytest.raises(grpc.RpcError) as err:
        stub.Classify(req, timeout=60)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert err.value.details() == (
        "context.at: expected one integer time (int64), got float_list [1.5]"
    )


def test_embed_by_node_id_takes_the_same_at(served):
    """``:predict`` on ``embed_source`` with ``{"inputs": {"node_id": [...], "at": T}}`` (REST) or
    the int64 inputs ``node_id`` and ``at`` (gRPC): the model's embeddings of the users' typed
    blobs sampled as of T (without ``at``: now); ``embed_target`` (no timed step) ignores it."""
    from memgraph_tf.batch.link_scoring import ModelLinkBackend

    source, url, stub, _ = served
    users = [0, 14, 21]
    backend = ModelLinkBackend(kit.model(), options=kit.OPTIONS, seed=bundle.DEFAULT_SEED)

    def expected(at):
        nn, props, opts = backend.sampling("src")
        opts = bundle.role_time_options("User", nn, opts, at, link_timed=True)
        return backend.embed("src", source.sample_typed(users, nn, props, opts))

    want = {kit.AT: expected(kit.AT), None: expected(None)}
    assert np.abs(want[kit.AT] - want[None]).max() > 1e-4
    for at, z in want.items():
        inputs = {"node_id": users} | ({} if at is None else {"at": at})
        body = {"signature_name": bundle.EMBED_SOURCE_SIGNATURE, "inputs": inputs}
        r = requests.post(f"{url}/v1/models/timed_links:predict", json=body, timeout=60)
        assert r.status_code == 200, r.text
        np.testing.assert_allclose(np.array(r.json()["outputs"]), z, rtol=0, atol=1e-5)
    req = predict_pb2.PredictRequest()
    req.model_spec.name = "timed_links"
    req.model_spec.signature_name = bundle.EMBED_SOURCE_SIGNATURE
    req.inputs["node_id"].CopyFrom(tf.make_tensor_proto(np.array(users, dtype=np.int64)))
    req.inputs["at"].CopyFrom(tf.make_tensor_proto(np.int64(kit.AT)))
    got = tf.make_ndarray(stub.Predict(req, timeout=60).outputs[bundle.EMBEDDINGS_OUTPUT])
    np.testing.assert_allclose(got, want[kit.AT], rtol=0, atol=1e-5)
    body = {"signature_name": bundle.EMBED_TARGET_SIGNATURE, "inputs": {"node_id": [1, 2]}}
    now = requests.post(f"{url}/v1/models/timed_links:predict", json=body, timeout=60)
    body["inputs"]["at"] = kit.AT
    at = requests.post(f"{url}/v1/models/timed_links:predict", json=body, timeout=60)
    assert at.status_code == now.status_code == 200, at.text
    assert at.json() == now.json()


def test_the_gateway_samples_the_pairs_as_of_the_requests_at(served):
    """The gateway in front of the server's gRPC port samples the pairs itself, with the same
    context ``at``."""
    from memgraph_tf.serving.gateway import UpstreamServer
    from memgraph_tf.serving.server import start_server

    source, _, _, target = served
    pairs = kit.non_edges(3)
    want = kit.in_process(source, pairs, kit.AT)
    gateway = UpstreamServer(target, source, timeout_s=30)
    try:
        with start_server(gateway) as rest:
            url = f"{rest.url}/v1/models/timed_links:regress"
            r = requests.post(url, json=_body(pairs, kit.AT), timeout=60)
    finally:
        gateway.close()
    assert r.status_code == 200, r.text
    np.testing.assert_allclose(r.json()["results"], want, rtol=0, atol=1e-5)


def test_sampling_settings_without_a_timed_step_refuse_options_at():
    """Sampling settings built by hand (no request check in front of them): ``options.at`` on a
    link bundle without a timed step is a BundleError naming it, never a procedure call that
    fails on an unknown option."""
    from memgraph_tf.errors import BundleError

    step = {"(:A)-[:R]->(:A)": [2]}
    link = {
        "source_label": "A",
        "target_label": "A",
        "num_neighbors": {"source": step, "target": step},
        "properties": {},
    }
    untimed = bundle.SamplingSpec((), (), {"seed": 1}, link=link)
    assert untimed.link.timed_roles() == ()
    assert "pair_times" not in untimed.pair_arguments()[2]
    at = bundle.SamplingSpec((), (), {"seed": 1, "at": 3}, link=link)
    message = r"^options\.at: expected none, the link bundle's neighbourhoods have no timed step"
    for call in (lambda: at.pair_arguments(2), lambda: at.role_arguments("source")):
        with pytest.raises(BundleError, match=message + r" \(got at 3\)$") as err:
            call()
        assert err.value.key == "at"


def test_role_time_options_refuse_a_time_for_a_link_without_a_timed_step():
    """``role_time_options`` drops a time only for the untimed role of a link with a timed step;
    for a link with none (``link_timed=False``) a time is a BundleError naming ``options.at``."""
    from memgraph_tf.errors import BundleError

    step = {"(:A)-[:R]->(:A)": [2]}
    message = r"^options\.at: expected none, the link bundle's neighbourhoods have no timed step"
    for at, options in ((5, {"seed": 1}), (None, {"seed": 1, "at": 5})):
        with pytest.raises(BundleError, match=message + r" \(got at 5\)$") as err:
            bundle.role_time_options("A", step, options, at, link_timed=False)
        assert err.value.key == "at"
    assert bundle.role_time_options("A", step, {"seed": 1}, link_timed=False) == {"seed": 1}
    assert bundle.role_time_options("A", step, {"seed": 1, "at": 5}, link_timed=True) == {"seed": 1}


@pytest.mark.parametrize("at", [2**64 - 1, 2**63, -(2**63) - 1])
def test_an_at_outside_int64_is_refused_naming_it(served, at):
    """An embed request's ``at`` outside int64 is a 400 / INVALID_ARGUMENT naming ``at`` and the
    value over REST (a JSON integer token) and gRPC (a uint64 tensor), never a graph failure. A
    ``context.at`` outside int64 is a 400 too: TF Serving's own for a uint64 JSON context feature
    (json_tensor.cc: "Feature: at has uint64_t element. Only int64_t is supported."), or, for a
    token read as a double, the float feature refused naming ``context.at``; a gRPC context holds
    int64 values only."""
    from tensorflow_serving.apis import predict_pb2

    _, url, stub, _ = served
    sig = bundle.EMBED_SOURCE_SIGNATURE
    body = {"signature_name": sig, "inputs": {"node_id": [0, 14], "at": at}}
    r = requests.post(f"{url}/v1/models/timed_links:predict", json=body, timeout=60)
    assert r.status_code == 400, r.text
    assert r.json()["error"] == f"at: expected one integer time (int64), got {at}: out of range"
    pairs = kit.non_edges(1)
    r = requests.post(f"{url}/v1/models/timed_links:classify", json=_body(pairs, at), timeout=60)
    assert r.status_code == 400, r.text
    if at > 0:
        assert r.json()["error"] == "Feature: at has uint64_t element. Only int64_t is supported."
    else:
        assert r.json()["error"].startswith("context.at: expected one integer time (int64), got")
        return  # (a uint64 tensor holds no negative time)
    req = predict_pb2.PredictRequest()
    req.model_spec.name, req.model_spec.signature_name = "timed_links", sig
    req.inputs["node_id"].CopyFrom(tf.make_tensor_proto(np.array([0, 14], dtype=np.int64)))
    req.inputs["at"].CopyFrom(tf.make_tensor_proto(np.uint64(at)))
    with pytest.raises(grpc.RpcError) as err:
        stub.Predict(req, timeout=60)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert err.value.details() == (
        f"at: expected one integer time (int64), got uint64 {at}: out of range"
    )
