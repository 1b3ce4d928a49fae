"""Link bundles: a LinkPredictor exported with and without the op answers
TF Serving's classify and regress contracts on one ``tf_features.sample_pairs`` blob per example,
and its embed/score signatures give the same probability; ``memgraph-tf serve --graph`` (and the
gateway in front of it) answers ``{"source_id": s, "target_id": t}`` examples over REST and gRPC
by sampling each pair's blob with the bundle's settings -- the in-process ``predict_links`` scores
for the same blobs -- and refuses a bad pair with 400 / INVALID_ARGUMENT naming it.

The graph is the typed kit's shop graph (:User -[:BOUGHT]-> :Product), the model an initialised
(not trained) LinkPredictor: the contract is about the plumbing, not the accuracy."""

from __future__ import annotations

import pathlib
import re

import grpc
import numpy as np
import pytest
import requests
import tensorflow as tf
from tensorflow.core.example import example_pb2
from tensorflow.core.protobuf import saved_model_pb2
from tensorflow_serving.apis import (
    classification_pb2,
    prediction_service_pb2_grpc,
    regression_pb2,
)

from memgraph_tf import blob
from memgraph_tf.serving import bundle, rest_api
from memgraph_tf.serving.neighbourhoods import NeighbourhoodFetcher, split_typed_blob
from tests.client import typed_kit as kit

NN = {
    "source": {"(:User)-[:BOUGHT]->(:Product)": [3]},
    "target": {"(:Product)<-[:BOUGHT]-(:User)": [3]},
}
PROPS = {"User": ["features"], "Product": ["features"]}
OPTIONS = {"id_property": "id"}


@pytest.fixture(scope="module")
def link_kit(tmp_path_factory):
    """The graph source, an initialised LinkPredictor, its op and op-free bundles, and pairs:
    three existing :BOUGHT relationships (their own edge must be removed) and three non-edges."""
    import keras

    from memgraph_tf.client.link_prediction import LinkPredictor
    from memgraph_tf.serving.export_links import export_link_bundle

    _, _, _, source = kit.shop()
    keras.utils.set_random_seed(0)
    model = LinkPredictor(
        "User",
        NN,
        {"User": 16, "Product": 12},
        target_label="Product",
        hidden_units=8,
        scorer="mlp",
        mlp_units=[8],
    )
    model.properties = PROPS
    model.ensure_built()
    base = tmp_path_factory.mktemp("link-bundles")
    op = export_link_bundle(model, base, "links", 1, decoder="op", sample_options=OPTIONS)
    free = export_link_bundle(
        model, base, "links_free", 1, decoder="portable", sample_options=OPTIONS
    )
    # a user's bought products, from its own typed blob: pairs whose own relationship exists
    nn, props, opts = bundle.inference_sampling(bundle.read_bundle_config(op.path)).role_arguments(
        "source"
    )
    users = [0, 5, 17]
    bought = blob.unpack(source.sample_typed(users, nn, props, opts))["ids_h1_Product"][:, 0]
    assert (bought >= 0).all()
    edges = [[u, int(p)] for u, p in zip(users, bought)]
    pairs = np.array(edges + [[42, 100], [599, 0], [7, 55]])
    return source, model, op, free, pairs


def _in_process(link_kit) -> np.ndarray:
    from memgraph_tf.client.link_prediction import predict_links

    source, model, _, _, pairs = link_kit
    return predict_links(model, source, pairs, options={**OPTIONS, "seed": bundle.DEFAULT_SEED})


def _examples(pairs, key: str = "blob", blobs=None) -> list[bytes]:
    out = []
    for i, _ in enumerate(pairs):
        ex = example_pb2.Example()
        ex.features.feature[key].bytes_list.value.append(blobs[i])
        out.append(ex.SerializeToString())
    return out


def test_op_and_op_free_link_bundles_give_the_in_process_scores(link_kit):
    source, _, op, free, pairs = link_kit
    config = bundle.read_bundle_config(op.path)
    assert config.class_names == bundle.LINK_CLASS_NAMES
    assert config.link["num_neighbors"] == NN and config.link["properties"] == PROPS
    assert (config.link["source_label"], config.link["target_label"]) == ("User", "Product")
    assert config.options == {**OPTIONS, "dtype": "float32"}
    assert bundle.BundleConfig.from_json(config.to_json()) == config
    with pytest.raises(bundle.BundleError, match=r"class_names: expected \['link', 'no link'\]"):
        bundle.BundleConfig.from_dict({**config.to_dict(), "class_names": ["a", "b"]})
    sm = saved_model_pb2.SavedModel.FromString((op.path / "saved_model.pb").read_bytes())
    sigs = sm.meta_graphs[0].signature_def
    assert sigs[bundle.REGRESS_SIGNATURE].method_name == bundle.REGRESS_METHOD_NAME
    assert sigs[bundle.LINK_CLASSIFY_SIGNATURE].method_name == bundle.CLASSIFY_METHOD_NAME
    assert set(sigs[bundle.REGRESS_SIGNATURE].outputs) == {bundle.REGRESS_OUTPUT}

    sampling = bundle.inference_sampling(config)
    blobs = NeighbourhoodFetcher(source, serialize=False).fetch_pairs(
        pairs[:, 0].tolist(), pairs[:, 1].tolist(), sampling
    )
    # a pair's blob is what sample_pairs writes for it alone (keyed draws), its edge removed
    nn, props, opts = sampling.pair_arguments()
    assert blobs[1] == source.sample_pairs([int(pairs[1, 0])], [int(pairs[1, 1])], nn, props, opts)
    expected = _in_process(link_kit)
    examples = tf.constant(_examples(pairs, blobs=blobs))
    role_blobs = {}
    for role, column in (("source", 0), ("target", 1)):
        nn, props, opts = sampling.role_arguments(role)
        ids = pairs[:, column].tolist()
        role_blobs[role] = split_typed_blob(source.sample_typed(ids, nn, props, opts), len(ids))
    for info in (op, free):
        loaded = tf.saved_model.load(str(info.path))
        out = loaded.signatures[bundle.LINK_CLASSIFY_SIGNATURE](inputs=examples)
        assert out[bundle.CLASSES_OUTPUT].numpy()[0].tolist() == [b"link", b"no link"]
        scores = out[bundle.SCORES_OUTPUT].numpy()
        np.testing.assert_allclose(scores[:, 0], expected, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(scores.sum(axis=1), 1.0, rtol=1e-6)
        p = loaded.signatures[bundle.REGRESS_SIGNATURE](inputs=examples)[bundle.REGRESS_OUTPUT]
        np.testing.assert_allclose(p.numpy(), expected, rtol=1e-5, atol=1e-6)
        z = {
            role: loaded.signatures[sig](blobs=tf.constant(role_blobs[role]))[
                bundle.EMBEDDINGS_OUTPUT
            ]
            for role, sig in (
                ("source", bundle.EMBED_SOURCE_SIGNATURE),
                ("target", bundle.EMBED_TARGET_SIGNATURE),
            )
        }
        by_z = loaded.signatures[bundle.SCORE_EMBEDDINGS_SIGNATURE](
            z_source=z["source"], z_target=z["target"]
        )[bundle.REGRESS_OUTPUT].numpy()
        # the non-edges: sample_typed's neighbourhoods are the pair blob's halves
        np.testing.assert_allclose(by_z[3:], expected[3:], rtol=1e-5, atol=1e-6)
    # the existing edges: removing the pair's own relationship changes the score
    assert np.abs(by_z[:3] - expected[:3]).max() > 1e-4


@pytest.fixture(scope="module")
def served(link_kit):
    """The local server (REST + gRPC) serving the op link bundle ``links`` and the typed node
    bundle ``shop``, with the gateway (REST + gRPC) in front of its gRPC port."""
    from memgraph_tf.serving.gateway import UpstreamServer
    from memgraph_tf.serving.grpc_server import start_grpc_server
    from memgraph_tf.serving.model_config import ModelEntry
    from memgraph_tf.serving.model_server import ModelServer
    from memgraph_tf.serving.server import start_server

    source, _, op, _, _ = link_kit
    entries = [
        ModelEntry("links", op.path.parent),
        ModelEntry("shop", kit.bundle(True).path.parent),
    ]
    ms = ModelServer(model_config=entries, graph_source=source)
    assert ms.warmup_requests >= 2  # the link bundle's classify and regress records replayed
    running = []
    try:
        running += [start_server(ms), start_grpc_server(ms)]
        gw = UpstreamServer(running[1].target, source, timeout_s=30)
        running += [start_server(gw), start_grpc_server(gw)]
        channels = [grpc.insecure_channel(running[i].target) for i in (1, 3)]
        yield (
            ms,
            [running[0].url, running[2].url],
            [prediction_service_pb2_grpc.PredictionServiceStub(c) for c in channels],
        )
        for c in channels:
            c.close()
    finally:
        for r in running:
            r.close()
        ms.close()


def _rest(url: str, model: str, verb: str, examples: list) -> requests.Response:
    return requests.post(f"{url}/v1/models/{model}:{verb}", json={"examples": examples}, timeout=60)


def _grpc(stub, model: str, verb: str, examples: list):
    message = (
        classification_pb2.ClassificationRequest
        if verb == "classify"
        else regression_pb2.RegressionRequest
    )
    req = message()
    req.model_spec.name = model
    for e in examples:
        feature = req.input.example_list.examples.add().features.feature
        for k, v in e.items():
            if isinstance(v, int):
                feature[k].int64_list.value.append(v)
            elif isinstance(v, float):
                feature[k].float_list.value.append(v)
            else:
                feature[k].bytes_list.value.append(str(v).encode())
    call = stub.Classify if verb == "classify" else stub.Regress
    return call(req, timeout=60)


def test_served_by_pair_ids_equals_in_process_over_rest_grpc_and_the_gateway(link_kit, served):
    _, _, _, _, pairs = link_kit
    _, urls, stubs = served
    expected = _in_process(link_kit)
    examples = [{"source_id": int(s), "target_id": int(t)} for s, t in pairs]
    for url, stub in zip(urls, stubs):  # the local server, then the gateway
        r = _rest(url, "links", "classify", examples)
        assert r.status_code == 200, r.text
        rows = r.json()["results"]
        assert [[c[0] for c in row] for row in rows] == [list(bundle.LINK_CLASS_NAMES)] * len(pairs)
        np.testing.assert_allclose([row[0][1] for row in rows], expected, rtol=1e-5, atol=1e-6)
        r = _rest(url, "links", "regress", examples)
        assert r.status_code == 200, r.text
        np.testing.assert_allclose(r.json()["results"], expected, rtol=1e-5, atol=1e-6)
        rows = _grpc(stub, "links", "classify", examples).result.classifications
        got = [{c.label: c.score for c in row.classes}["link"] for row in rows]
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
        got = [v.value for v in _grpc(stub, "links", "regress", examples).result.regressions]
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


BAD = [
    # (model, verb, examples, REST message, gRPC message (None: the REST one))
    (
        "links",
        "regress",
        [{"source_id": 0, "target_id": 3}, {"source_id": 99999, "target_id": 3}],
        r"examples\[1\]\.source_id: unknown node id 99999 \(no :User node has id = 99999\)",
        None,
    ),
    (
        "links",
        "classify",
        [{"source_id": 0, "target_id": 600}],
        r"examples\[0\]\.target_id: unknown node id 600 \(no :Product node has id = 600\)",
        None,
    ),
    (
        "links",
        "classify",
        [{"source_id": 0}],
        r"^examples\[0\]\.target_id: missing; a link bundle scores a pair",
        None,
    ),
    (
        "links",
        "regress",
        [{"source_id": 1.5, "target_id": 3}],
        r"^examples\[0\]\.source_id: expected an integer, got 1\.5$",
        r"^examples\[0\]\.source_id: expected one int64 value, got float_list \[1\.5\]$",
    ),
    (
        "links",
        "classify",
        [{"node_id": 1}],
        r"^examples\[0\]\.node_id: model 'links' is a link bundle scoring \(:User\)-\(:Product\) "
        r"pairs: send 'source_id' and 'target_id' per example$",
        None,
    ),
    (
        "links",
        "regress",
        [{"other": 1}],
        r"^examples\[0\]: expected 'source_id' and 'target_id' \(model 'links' scores",
        None,
    ),
    (
        "shop",
        "regress",
        [{"node_id": 1}],
        r"^Model 'shop' is a node classification bundle: it answers :classify",
        None,
    ),
    (
        "shop",
        "classify",
        [{"source_id": 1, "target_id": 2}],
        r"^examples\[0\]\.source_id: model 'shop' classifies nodes: send 'node_id'",
        None,
    ),
]


@pytest.mark.parametrize("model, verb, examples, rest_message, grpc_message", BAD)
def test_bad_pairs_are_refused_naming_them(
    served, model, verb, examples, rest_message, grpc_message
):
    _, urls, stubs = served
    r = _rest(urls[0], model, verb, examples)
    assert r.status_code == 400, r.text
    assert re.search(rest_message, r.json()["error"]), r.json()["error"]
    with pytest.raises(grpc.RpcError) as err:
        _grpc(stubs[0], model, verb, examples)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert re.search(grpc_message or rest_message, err.value.details()), err.value.details()


def test_context_at_on_a_link_bundle_without_a_timed_step_is_refused_naming_it(served):
    """A request's context ``at`` names the time of a link bundle with a timed step
    (tests/serving/test_timed_link_bundles.py); this bundle has none: 400 / INVALID_ARGUMENT
    naming ``context.at``, from the local server and from the gateway, over REST and gRPC; so is
    ``at`` beside ``node_id`` on its ``embed_source``."""
    _, urls, stubs = served
    message = (
        "context.at: model 'links' is a link bundle without a timed step (no {time: ...} in its "
        "num_neighbors): it samples every pair with every relationship, at no time; send no 'at'"
    )
    body = {"context": {"at": 40}, "examples": [{"source_id": 0, "target_id": 3}]}
    for url, stub in zip(urls, stubs):
        for verb in ("classify", "regress"):
            r = requests.post(f"{url}/v1/models/links:{verb}", json=body, timeout=60)
            assert r.status_code == 400, r.text
            assert r.json()["error"] == message
        req = regression_pb2.RegressionRequest()
        req.model_spec.name = "links"
        holder = req.input.example_list_with_context
        holder.context.features.feature["at"].int64_list.value.append(40)
        ex = holder.examples.add().features.feature
        ex["source_id"].int64_list.value.append(0)
        ex["target_id"].int64_list.value.append(3)
        with pytest.raises(grpc.RpcError) as err:
            stub.Regress(req, timeout=60)
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert err.value.details() == message
    embed = {"signature_name": "embed_source", "inputs": {"node_id": [0], "at": 40}}
    r = requests.post(f"{urls[0]}/v1/models/links:predict", json=embed, timeout=60)
    assert r.status_code == 400, r.text
    assert r.json()["error"] == message.replace("context.at", "at")


def test_a_node_of_the_wrong_label_is_refused_naming_it(served, monkeypatch):
    """By internal ids (no id_property), a :User node as the target is not a :Product node."""
    ms, urls, stubs = served
    _, _, ids, _ = kit.shop()
    spec = ms.sampling[1]
    by_internal = bundle.SamplingSpec(
        (), (), {k: v for k, v in spec.options.items() if k != "id_property"}, link=spec.link
    )
    monkeypatch.setitem(ms.sampling, 1, by_internal)
    user, other_user = ids["User"][3], ids["User"][4]
    examples = [{"source_id": user, "target_id": other_user}]
    message = f"examples[0].target_id: node {other_user} is not a :Product node"
    r = _rest(urls[0], "links", "classify", examples)
    assert r.status_code == 400 and message in r.json()["error"], r.text
    with pytest.raises(grpc.RpcError) as err:
        _grpc(stubs[0], "links", "regress", examples)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert message in err.value.details()


def test_random_pair_examples_are_answered_200_or_400(served):
    """A seeded, bounded fuzz of the source_id/target_id rule through the REST core (classify and
    regress on the link bundle, and the node bundle): every answer is 200 or a 400 with an error
    message, never a 5xx."""
    import json
    import random

    ms, _, _ = served
    rng = random.Random(25)
    values = [
        0,
        3,
        5,
        599,
        600,
        -1,
        2**63 - 1,
        -(2**63),
        2**63,
        1.5,
        "7",
        True,
        None,
        [1],
        {"a": 1},
    ]
    values += [{"b64": "AAAA"}, {"b64": "not base64!"}]
    keys = ["source_id", "target_id", "node_id", "blob", "other"]
    statuses = set()
    for _ in range(300):
        examples = [
            {k: rng.choice(values) for k in rng.sample(keys, rng.randint(0, 3))}
            if rng.random() > 0.05
            else rng.choice(values)
            for _ in range(rng.randint(1, 3))
        ]
        model = rng.choice(["links", "links", "shop"])
        verb = rng.choice(["classify", "regress"])
        body = json.dumps({"examples": examples}).encode()
        status, answer = rest_api.handle_bytes(ms, "POST", f"/v1/models/{model}:{verb}", body)
        statuses.add(status)
        assert status in (200, 400), (status, answer, body)
        if status == 400:
            assert json.loads(answer)["error"], body
    assert statuses == {200, 400}


ROLES = (("source", "User"), ("target", "Product"))


def test_compact_pair_samples_give_the_dense_blobs_byte_for_byte(link_kit):
    """The server samples pairs in the compact layout and builds the dense one-pair blobs the
    bundle reads (:class:`~memgraph_tf.ops.sample_decoding.DensePairBlobs`): byte for byte the dense
    ``sample_pairs`` blob of each pair, over the shop graph's two labels, edges and non-edges,
    padded slots (users with fewer purchases than the fanout) and any row range."""
    from memgraph_tf.ops.sample_decoding import DensePairBlobs
    from memgraph_tf.typed_sampling import TypedSamplingSpec

    source, _, op, _, pairs = link_kit
    sampling = bundle.inference_sampling(bundle.read_bundle_config(op.path))
    _, props, opts = sampling.pair_arguments()
    nn = {  # fanouts above most nodes' degree: padded slots
        "source": {"(:User)-[:BOUGHT]->(:Product)": [8]},
        "target": {"(:Product)<-[:BOUGHT]-(:User)": [40]},
    }
    rng = np.random.default_rng(3)
    many = np.concatenate(
        [pairs, np.stack([rng.integers(0, 600, 40), rng.integers(0, 120, 40)], 1)]
    )
    src, dst = many[:, 0].tolist(), many[:, 1].tolist()
    dense = split_typed_blob(source.sample_pairs(src, dst, nn, props, opts), len(many))
    compact = source.sample_pairs(src, dst, nn, props, {**opts, "layout": "compact"})
    specs = [
        TypedSamplingSpec.from_num_neighbors(*sampling.link.role(r)[:2])
        for r in ("source", "target")
    ]
    built = DensePairBlobs(compact, len(many), *specs)
    masks = [v for b in dense for k, v in blob.unpack(b).items() if ".mask_" in k]
    assert any(m.all() for m in masks) and not all(m.all() for m in masks)  # padded slots too
    assert built.blobs(0, len(many)) == dense
    assert built.blobs(5, 9) == dense[5:9] and built.blobs(7, 7) == []
    assert {len(b) for b in dense} == {built.blob_bytes}
    with pytest.raises(ValueError, match=r"section 'src\.index_h0_User' has \(3,\) rows, expected"):
        DensePairBlobs(
            source.sample_pairs(src[:3], dst[:3], nn, props, {**opts, "layout": "compact"}),
            len(many),
            *specs,
        )


def _scores(results: list) -> np.ndarray:
    return np.array([[c[1] for c in row] for row in results])


def test_concurrent_pair_requests_share_model_runs(link_kit, served, monkeypatch):
    """N concurrent link requests naming pairs are answered by fewer model runs than N (their
    rows share chunks), each request its own rows: the answers of the requests made one by one.
    The first model run is held until all N requests are queued, so they must overlap."""
    import threading

    ms, urls, _ = served
    _, _, _, _, pairs = link_kit
    n = 6
    requests_ = [
        [{"source_id": int(s), "target_id": int(t)} for s, t in np.roll(pairs, i, axis=0)[: i + 1]]
        for i in range(n)
    ]
    alone = [_rest(urls[0], "links", "classify", ex).json()["results"] for ex in requests_]
    key = ("links", 1, bundle.LINK_CLASSIFY_SIGNATURE)
    original, held = ms._call, []

    def gated(mv, name, fn, feeds):
        if not held:  # the first run waits until every request is queued
            held.append(ms.pair_runner.wait_queued(key, n, timeout_s=60))
        return original(mv, name, fn, feeds)

    monkeypatch.setattr(ms, "_call", gated)
    calls, runs = ms.model_calls, ms.pair_runner.runs
    answers: list = [None] * n

    def ask(i: int) -> None:
        answers[i] = _rest(urls[0], "links", "classify", requests_[i])

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert held == [True]
    assert [r.status_code for r in answers] == [200] * n, [r.text for r in answers]
    for r, own in zip(answers, alone):  # (other batch shapes: float32 rounding may differ)
        got = r.json()["results"]
        assert [[c[0] for c in row] for row in got] == [[c[0] for c in row] for row in own]
        np.testing.assert_allclose(_scores(got), _scores(own), rtol=1e-6, atol=1e-7)
    assert ms.pair_runner.runs - runs == ms.model_calls - calls < n


def test_large_pair_requests_run_in_bounded_chunks(link_kit, served, monkeypatch):
    """A request whose examples exceed the runner's chunk size is answered over several model
    runs of at most that many bytes, with the answer of one run."""
    ms, urls, _ = served
    _, _, _, _, pairs = link_kit
    examples = [{"source_id": int(s), "target_id": int(t)} for s, t in pairs]

    def scores() -> np.ndarray:
        return _scores(_rest(urls[0], "links", "classify", examples).json()["results"])

    whole = scores()
    sizes = []
    original = ms._call

    def recording(mv, name, fn, feeds):
        sizes.append(sum(len(x) for x in next(iter(feeds.values()))))
        return original(mv, name, fn, feeds)

    monkeypatch.setattr(ms, "_call", recording)
    monkeypatch.setattr(ms.pair_runner, "chunk_bytes", 2)  # one example a run
    np.testing.assert_allclose(scores(), whole, rtol=1e-6)
    assert len(sizes) == len(pairs)
    each = 2 * max(sizes) + 40  # two a run (row_bytes: +16 each)
    monkeypatch.setattr(ms.pair_runner, "chunk_bytes", each)
    sizes.clear()
    np.testing.assert_allclose(scores(), whole, rtol=1e-6)
    assert len(sizes) == 3 and sum(sizes) <= 3 * each


FIXTURES = pathlib.Path(__file__).resolve().parent / "fixtures"


def test_a_link_bundle_of_an_earlier_export_answers_as_recorded(link_kit, tmp_path):
    """``fixtures/link_bundle.tar.gz`` is an op-free link bundle written by an earlier
    memgraph-tf (``fixtures/make_link_bundle.py``), with the scores its exporting code computed
    for six pairs
    (the model in process, and the exported classify signature). The current server answers it
    with those scores -- by blob, and by pair ids sampled now from the same graph (the same blobs
    as recorded) -- over classify and regress."""
    import base64
    import json
    import tarfile

    from memgraph_tf.serving.model_server import ModelServer

    answers = json.loads((FIXTURES / "link_bundle_answers.json").read_text())
    source = link_kit[0]
    with tarfile.open(FIXTURES / "link_bundle.tar.gz") as tar:
        tar.extractall(tmp_path, filter="data")
    ms = ModelServer(tmp_path / "links", graph_source=source, poll_wait_s=0)
    try:
        mv = ms.resolve("links", None, None)
        blobs = [{"blob": {"b64": b}} for b in answers["blobs_b64"]]
        by_ids = [{"source_id": s, "target_id": t} for s, t in answers["pairs"]]
        pairs = np.array(answers["pairs"])
        sampled = NeighbourhoodFetcher(source, serialize=False).fetch_pairs(
            pairs[:, 0].tolist(), pairs[:, 1].tolist(), bundle.inference_sampling(mv.bundle_config)
        )
        assert [base64.b64encode(b).decode() for b in sampled] == answers["blobs_b64"]

        def post(verb: str, examples: list) -> list:
            body = json.dumps({"examples": examples}).encode()
            status, out = rest_api.handle_bytes(ms, "POST", f"/v1/models/links:{verb}", body)
            assert status == 200, out
            return json.loads(out)["results"]

        for examples in (blobs, by_ids):
            got = _scores(post("classify", examples))[:, 0]
            np.testing.assert_allclose(got, answers["exported"], rtol=1e-6, atol=1e-7)
            np.testing.assert_allclose(got, answers["in_process"], rtol=1e-5, atol=1e-6)
            got = post("regress", examples)
            np.testing.assert_allclose(got, answers["exported"], rtol=1e-6, atol=1e-7)
    finally:
        ms.close()
