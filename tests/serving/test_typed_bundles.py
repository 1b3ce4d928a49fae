"""Typed bundles: a TypedGraphSAGE exported with and without the op
reads one ``tf_features.sample_typed`` blob per node; both give the in-process model's scores on
the same blobs; ``memgraph-tf serve --graph`` answers ``{"node_id": N}`` for the seed label over
REST and gRPC by sampling that blob with the bundle's typed settings, and refuses a node it
cannot sample as the seed label with 400 / INVALID_ARGUMENT naming the node and the label."""

from __future__ import annotations

import json

import grpc
import numpy as np
import pytest
import requests
import tensorflow as tf
from tensorflow_serving.apis import prediction_service_pb2_grpc

from memgraph_tf import blob
from memgraph_tf.errors import BundleError
from memgraph_tf.serving import bundle
from memgraph_tf.serving.neighbourhoods import fetch_blobs
from tests.client import typed_kit as kit
from tests.serving.grpc_kit import node_id_request

USERS = [0, 5, 17, 42, 599]


def _in_process(ids: list[int]) -> np.ndarray:
    """The trained model's probabilities on one sample_typed blob of ``ids`` (inference seed)."""
    _, _, _, source = kit.shop()
    model = kit.trained().model
    opts = {**kit.OPTIONS, "label": "User", "seed": bundle.DEFAULT_SEED}
    x = blob.unpack(source.sample_typed(ids, kit.NN, kit.PROPS, opts))
    return tf.nn.softmax(model({k: x[k] for k in model.input_names()})).numpy()


def test_op_and_op_free_bundles_give_the_in_process_scores():
    _, _, _, source = kit.shop()
    op, free = kit.bundle(True), kit.bundle(False)
    config = bundle.read_bundle_config(op.path)
    assert config.typed["seed_label"] == "User"
    assert config.typed["num_neighbors"] == kit.NN
    assert config.typed["properties"] == kit.PROPS
    assert config.typed["schema"] == json.loads(json.dumps(kit.trained().model.schema))
    assert (config.fanouts, config.feature_dim, config.properties) == ((), 0, ())
    assert config.options["label"] == "User" and config.options["id_property"] == "id"
    assert bundle.BundleConfig.from_json(config.to_json()) == config
    sampling = bundle.inference_sampling(config)
    blobs = fetch_blobs(source, USERS, sampling)
    # each node's blob is what sample_typed writes for it alone (keyed draws)
    nn, props, opts = sampling.typed_arguments()
    assert blobs[1] == source.sample_typed([USERS[1]], nn, props, opts)
    expected = _in_process(USERS)
    for info in (op, free):
        loaded = tf.saved_model.load(str(info.path))
        scores = loaded.signatures[bundle.PREDICT_SIGNATURE](blobs=tf.constant(blobs))["scores"]
        np.testing.assert_allclose(scores.numpy(), expected, rtol=1e-5, atol=1e-6)


def test_typed_config_refusals_name_the_key():
    config = bundle.read_bundle_config(kit.bundle(True).path).to_dict()
    with pytest.raises(BundleError, match=r"fanouts: expected \[\] in a typed bundle"):
        bundle.BundleConfig.from_dict({**config, "fanouts": [5, 3]})
    bad = {**config["typed"], "num_neighbors": {"(:User)-[:BOUGHT]->(:Nope)": [0, 1]}}
    with pytest.raises(BundleError, match=r"typed: num_neighbors: .*never reached"):
        bundle.BundleConfig.from_dict({**config, "typed": bad})
    bad = {**config["typed"], "properties": {"Shop": ["features"]}}
    with pytest.raises(BundleError, match=r"typed.properties: label 'Shop' has no slots"):
        bundle.BundleConfig.from_dict({**config, "typed": bad})
    from memgraph_tf.serving.export import export_bundle

    with pytest.raises(BundleError, match=r"layout: expected one of .*, got 'csr'"):
        export_bundle(kit.trained().model, kit.bundle_base(), "x", 1, use_op=True, layout="csr")


@pytest.mark.parametrize("layout_name", ["compact", "sparse"])
def test_compact_and_sparse_typed_bundles_give_the_dense_scores(layout_name):
    """The layout is stored in the config, the fetcher (serving and batch alike) asks the graph
    for it and cuts each node's blob out of one call, and the bundle expands it in the graph to
    the dense inputs: the in-process model's scores on the dense blobs.

    The bundles decode with the op: an op-free typed export costs tens of seconds on a loaded
    machine. The op-free decoder gives the same scores through the bundle's own decoding step
    (checked here, in-process), its SavedModel form is that of the op-free dense typed bundle
    (test_op_and_op_free_bundles_give_the_in_process_scores) and of the op-free compact and sparse
    bundles (tests/serving/test_layout_bundles.py), and it decodes typed compact and sparse blobs
    bitwise as the op does (tests/ops/test_typed_sample_decoding.py)."""
    from memgraph_tf import ops
    from memgraph_tf.ops import sample_decoding
    from memgraph_tf.serving.export import _decode_gathered, _typed_gathered, export_bundle

    use_op = True
    _, _, _, source = kit.shop()
    model = kit.trained().model
    info = export_bundle(
        model,
        kit.bundle_base(),
        f"shop_{layout_name}",
        1,
        use_op=use_op,
        sample_options=kit.OPTIONS,
        layout=layout_name,
    )
    config = bundle.read_bundle_config(info.path)
    assert config.options["layout"] == layout_name
    assert "index_h1_Product" in config.sections and "features_h0_User" not in config.sections
    sampling = bundle.inference_sampling(config)
    blobs = fetch_blobs(source, USERS, sampling)
    nn, props, opts = sampling.typed_arguments()
    assert blobs[3] == source.sample_typed([USERS[3]], nn, props, opts)  # cut = sampled alone
    assert "table_ids_Category" in blob.unpack(blobs[3])
    if use_op:
        ops.load_library()
    loaded = tf.saved_model.load(str(info.path))
    predict = loaded.signatures[bundle.PREDICT_SIGNATURE]
    scores = predict(blobs=tf.constant(blobs))["scores"]
    np.testing.assert_allclose(scores.numpy(), _in_process(USERS), rtol=1e-5, atol=1e-6)
    # the op-free decoder through the bundle's decoding step: the same model inputs
    portable = _decode_gathered(
        tf.constant(blobs), ops.unpack_blob_portable, _typed_gathered(model, layout_name)
    )
    scores = tf.nn.softmax(model(portable, training=False))
    np.testing.assert_allclose(scores.numpy(), _in_process(USERS), rtol=1e-5, atol=1e-6)
    warm = sample_decoding.zero_typed_node_blob(
        model.spec, model.feature_dims, model.feature_dtype, layout_name=layout_name
    )
    assert predict(blobs=tf.constant([warm]))["scores"].shape == (1, 2)


@pytest.fixture(scope="module")
def served():
    from memgraph_tf.serving.grpc_server import start_grpc_server
    from memgraph_tf.serving.model_server import ModelServer
    from memgraph_tf.serving.server import start_server

    _, _, _, source = kit.shop()
    base = kit.bundle(True).path.parent
    ms = ModelServer(base, graph_source=source, warmup=False)
    with start_server(ms) as rest, start_grpc_server(ms) as rpc:
        channel = grpc.insecure_channel(rpc.target)
        yield (
            ms,
            f"{rest.url}/v1/models/shop:classify",
            (prediction_service_pb2_grpc.PredictionServiceStub(channel)),
        )
        channel.close()
    ms.close()


def _rest(url: str, ids: list[int]) -> requests.Response:
    return requests.post(url, json={"examples": [{"node_id": i} for i in ids]}, timeout=60)


def _grpc(stub, ids: list[int]):
    req = node_id_request("shop", ids)
    return stub.Classify(req, timeout=60)


def test_served_by_node_id_equals_in_process(served, monkeypatch):
    ms, url, stub = served
    expected = _in_process(USERS)
    r = _rest(url, USERS)
    assert r.status_code == 200, r.text
    by_rest = [dict(row) for row in r.json()["results"]]
    got = np.array([[row["even"], row["odd"]] for row in by_rest])
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    rows = _grpc(stub, USERS).result.classifications
    got = np.array(
        [[{c.label: c.score for c in row.classes}[k] for k in ("even", "odd")] for row in rows]
    )
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)

    # a key no :User node has: 400 / INVALID_ARGUMENT naming it and the label
    r = _rest(url, [0, 99999])
    assert r.status_code == 400
    assert "no :User node has id = 99999" in r.json()["error"]
    with pytest.raises(grpc.RpcError) as err:
        _grpc(stub, [99999])
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "no :User node has id = 99999" in err.value.details()

    # by internal id (no id_property): a :Product node is refused naming it and the seed label
    _, _, ids, _ = kit.shop()
    spec = bundle.inference_sampling(ms.versions[1].bundle_config)
    by_internal = bundle.SamplingSpec(
        (), (), {k: v for k, v in spec.options.items() if k != "id_property"}, spec.typed
    )
    monkeypatch.setitem(ms.sampling, 1, by_internal)
    product = ids["Product"][3]
    r = _rest(url, [product])
    assert r.status_code == 400
    assert f"node {product} is not a :User node" in r.json()["error"]
    with pytest.raises(grpc.RpcError) as err:
        _grpc(stub, [product])
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert f"node {product} is not a :User node" in err.value.details()
