"""Bundles exported per sample layout: dense, compact and sparse bundles, op and op-free,
give the same scores for the same sampled neighbourhoods; the layout is stored in the bundle config,
so the server's node_id path asks the graph for that layout; warmup requests are valid blobs."""

from __future__ import annotations

import functools
import random

import numpy as np
import pytest
import requests

from memgraph_tf import blob
from memgraph_tf.errors import BundleError
from memgraph_tf.serving import bundle

LAYOUTS = ["dense", "compact", "sparse"]
NODES = 12


def paper_graph(dim: int, reverse: bool = False):
    """The test graph: bag-of-words-like rows (mostly zeros) and random edges; with ``reverse``
    the same nodes and edges, each feature row reversed."""
    from memgraph_tf.embedded import EmbeddedGraph

    rng = random.Random(11)
    g = EmbeddedGraph()
    for _ in range(NODES):
        row = [rng.choice([0.0, 0.0, 0.0, 1.0, 0.5]) for _ in range(dim)]
        g.add_node(["Paper"], {"features": row[::-1] if reverse else row})
    for _ in range(2 * NODES):
        g.add_edge(rng.randrange(NODES), rng.randrange(NODES), "CITES")
    return g


@pytest.fixture(scope="module")
def graph(sage):
    return paper_graph(sage.dim)


# Every (layout, decoder) bundle but the dense op-free one: that is the bundle the other serving
# tests export (tests/serving/test_bundles.py checks its scores against Keras, its warmup record
# and its run the way TF Serving loads it), and an op-free export and load cost seconds each.
KINDS = [(layout_name, use_op) for layout_name in LAYOUTS for use_op in (True, False)]
KINDS.remove(("dense", False))


@pytest.fixture(scope="module")
def bundles(tmp_path_factory, sage):
    from memgraph_tf.serving.export import export_bundle

    base = tmp_path_factory.mktemp("layout_bundles")
    model = sage.make(seed=2)
    infos = {}
    for layout_name, use_op in KINDS:
        name = f"sage_{layout_name}_{'op' if use_op else 'portable'}"
        infos[layout_name, use_op] = export_bundle(
            model,
            base,
            name,
            1,
            use_op=use_op,
            properties=["features"],
            sample_options={"seed": 3, "low_degree": "pad"},
            layout=layout_name,
        )
    return infos


def per_node_blobs(graph, sage, layout_name):
    rows = graph.call(
        "tf_features.sample_per_node",
        list(range(NODES)),
        list(sage.fanouts),
        ["features"],
        {"seed": 3, "layout": layout_name},
    )
    return [blob.b64decode(r["blob"]) for r in rows]


def load(info):
    """The bundle loaded in this process, once per bundle: a loaded bundle's signatures are
    instantiated on their first call (seconds for the op-free decoder's graph), so the tests
    share each loaded bundle instead of loading it again."""
    if info.use_op:
        from memgraph_tf import ops

        ops.load_library()
    return _load(str(info.path))


@functools.cache
def _load(path: str):
    import tensorflow as tf

    return tf.saved_model.load(path)


def classify(model, blobs):
    import tensorflow as tf
    from tensorflow.core.example import example_pb2

    examples = []
    for b in blobs:
        ex = example_pb2.Example()
        ex.features.feature[bundle.DEFAULT_BLOB_FEATURE_KEY].bytes_list.value.append(b)
        examples.append(ex.SerializeToString())
    return model.signatures[bundle.CLASSIFY_SIGNATURE](inputs=tf.constant(examples))[
        bundle.SCORES_OUTPUT
    ].numpy()


def test_every_layout_and_decoder_gives_the_dense_scores(bundles, graph, sage):
    import tensorflow as tf

    dense = per_node_blobs(graph, sage, "dense")
    want = classify(load(bundles["dense", True]), dense)
    assert want.shape == (NODES, len(sage.classes))
    for (layout_name, use_op), info in bundles.items():
        blobs = per_node_blobs(graph, sage, layout_name)
        model = load(info)
        np.testing.assert_array_equal(
            classify(model, blobs), want, err_msg=f"{layout_name} use_op={use_op}"
        )
        predicted = model.signatures[bundle.PREDICT_SIGNATURE](blobs=tf.constant(blobs))
        np.testing.assert_array_equal(predicted[bundle.SCORES_OUTPUT].numpy(), want)


@pytest.mark.parametrize("layout_name", LAYOUTS)
def test_the_layout_is_in_the_config_and_the_warmup_request_runs(bundles, layout_name):
    import tensorflow as tf
    from tensorflow_serving.apis import prediction_log_pb2

    from memgraph_tf import layout

    info = bundles[layout_name, layout_name == "dense"]  # op-free where exported here
    config = bundle.read_bundle_config(info.path)
    assert config.options == {"seed": 3, "low_degree": "pad", "layout": layout_name}
    assert (
        config.sampling.arguments()[2]["layout"] == layout_name
    )  # what servers and clients sample with
    want = layout.model_input_sections(
        config.fanouts, config.feature_dim, layout=layout_name, batch=1
    )
    assert config.sections == {s.name: (s.dtype, tuple(s.shape)) for s in want}
    [record] = list(tf.data.TFRecordDataset(str(bundle.warmup_path(info.path))).as_numpy_iterator())
    log = prediction_log_pb2.PredictionLog.FromString(record)
    examples = [
        ex.SerializeToString() for ex in log.classify_log.request.input.example_list.examples
    ]
    scores = load(info).signatures[bundle.CLASSIFY_SIGNATURE](inputs=tf.constant(examples))[
        bundle.SCORES_OUTPUT
    ]
    assert scores.shape == (1, len(config.class_names))


def test_the_server_samples_node_ids_in_the_bundle_s_layout(bundles, graph, sage):
    """A server of the sparse op bundle: which layout the server samples in is read from the
    bundle's config, whatever its decoder (both decoders' sparse bundles give the dense scores
    above), and an op-free bundle's load and first call in a server cost seconds."""
    from memgraph_tf.client.sources import EmbeddedSource
    from memgraph_tf.serving.model_server import ModelServer
    from memgraph_tf.serving.server import start_server

    class Spy(EmbeddedSource):
        def sample_blobs_per_node(self, seeds, fanouts, properties, options=None):
            self.options = dict(options or {})
            return super().sample_blobs_per_node(seeds, fanouts, properties, options)

    source = Spy(graph)
    info = bundles["sparse", True]
    want = classify(load(bundles["dense", True]), per_node_blobs(graph, sage, "dense"))
    with start_server(
        ModelServer(info.path.parent, info.name, graph_source=source, warmup=False)
    ) as srv:
        r = requests.post(
            f"{srv.url}/v1/models/{info.name}:classify",
            timeout=120,
            json={"examples": [{"node_id": i} for i in range(NODES)]},
        )
    assert r.status_code == 200, r.text
    assert source.options["layout"] == "sparse"
    got = [[score for _, score in row] for row in r.json()["results"]]
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-6)  # JSON prints floats with 6-9 digits


@pytest.fixture(scope="module")
def graphsage_bundles(tmp_path_factory, sage):
    """The project's GraphSAGE (feature and hidden normalisation on), and its op-free bundle in the
    sparse layout (what the demo exports for bag-of-words features): it scores through
    ``GraphSAGE.call_table`` (the compact layout and the op decoder, whose code it shares, are
    checked in tests/ops/test_layouts.py and tests/client/test_graphsage.py without an export)."""
    import keras

    from memgraph_tf.client import GraphSAGE
    from memgraph_tf.serving.export import export_bundle

    keras.utils.set_random_seed(4)
    model = GraphSAGE(
        list(sage.fanouts),
        sage.dim,
        len(sage.classes),
        hidden_units=8,
        dropout=0.0,
        normalize_features=True,
        normalize_hidden=True,
        class_names=sage.classes,
    ).ensure_built()
    base = tmp_path_factory.mktemp("graphsage_layouts")
    infos = {
        (layout_name, use_op): export_bundle(
            model,
            base,
            f"sage_{layout_name}",
            1,
            use_op=use_op,
            properties=["features"],
            sample_options={"seed": 3, "low_degree": "pad"},
            layout=layout_name,
            warmup=False,
        )
        for layout_name, use_op in (("sparse", False),)
    }
    return model, infos


def test_graphsage_bundles_read_table_rows_and_score_as_the_model(graphsage_bundles, graph, sage):
    """A GraphSAGE bundle of the sparse layout scores each blob as the model does on the
    dense layout's inputs (up to float rounding: its first layer projects each table row once),
    also when the same call holds blobs of another graph with the same node ids but other
    features (no row is shared between blobs that disagree about a node)."""
    import tensorflow as tf
    from tensorflow.core.protobuf import saved_model_pb2

    from memgraph_tf.serving.loading import op_names

    model, infos = graphsage_bundles
    dense = [blob.unpack(b) for b in per_node_blobs(graph, sage, "dense")]  # [1, ...] sections
    inputs = {k: np.concatenate([d[k] for d in dense]) for k in model.input_names()}
    want = tf.nn.softmax(model(inputs, training=False)).numpy()
    other = paper_graph(sage.dim, reverse=True)
    for (layout_name, use_op), info in infos.items():
        predict = load(info).signatures[bundle.PREDICT_SIGNATURE]
        blobs = per_node_blobs(graph, sage, layout_name)
        got = predict(blobs=tf.constant(blobs))[bundle.SCORES_OUTPUT].numpy()
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-6, err_msg=f"{layout_name} {use_op}")
        theirs = per_node_blobs(other, sage, layout_name)
        alone = predict(blobs=tf.constant(theirs))[bundle.SCORES_OUTPUT].numpy()
        mixed = predict(blobs=tf.constant(blobs + theirs))[bundle.SCORES_OUTPUT].numpy()
        np.testing.assert_allclose(mixed, np.concatenate([got, alone]), rtol=0, atol=1e-6)
        assert np.abs(alone - got).max() > 1e-3  # (the other graph's scores differ)
        # the served graph keeps to tf.sparse.sparse_dense_matmul: training's CSR matrix ops
        # (variant handles, a custom gradient) stay out of the bundle
        sm = saved_model_pb2.SavedModel()
        sm.ParseFromString((info.path / "saved_model.pb").read_bytes())
        ops = set().union(*(op_names(mg) for mg in sm.meta_graphs))
        assert "SparseTensorDenseMatMul" in ops, layout_name
        assert not {op for op in ops if "CSR" in op or op.startswith("SparseMatrix")}, ops


def test_export_refuses_a_bad_or_conflicting_layout(tmp_path, sage):
    from memgraph_tf.serving.export import export_bundle

    model = sage.make()
    refused = [
        (
            {"layout": "csr"},
            r"layout: expected one of \['dense', 'compact', 'sparse'\], got 'csr'",
        ),
        (
            {"sample_options": {"layout": "coo"}},
            r"layout: expected one of \['dense', 'compact', 'sparse'\], got 'coo'",
        ),
        (
            {"layout": "sparse", "sample_options": {"layout": "compact"}},
            r"layout: expected the same layout as sample_options\['layout'\] "
            r"\('compact'\), got 'sparse'",
        ),
        (
            {"layout": "sparse", "sections": {"features_0": ("float32", (1, 4))}},
            r"sections: expected none \(the sparse layout's sections are fixed\)",
        ),
    ]
    for arguments, message in refused:
        with pytest.raises(BundleError, match=message):
            export_bundle(model, tmp_path, "m", 1, use_op=False, **arguments)
    assert not (tmp_path / "m").exists()  # refused before anything was written
