"""The served ``embed`` signature by ``node_id``: ``:predict`` with ``signature_name: "embed"``
over REST and gRPC (TF Serving's predict contract, ``node_id`` standing for the ``blobs`` input
on a server started with a graph) answers the embeddings batch inference writes; bad ids are
400 / INVALID_ARGUMENT naming the position."""

from __future__ import annotations

import numpy as np
import pytest
import requests

from memgraph_tf import errors
from memgraph_tf.serving.grpc_client import GrpcServingClient
from memgraph_tf.serving.grpc_server import start_grpc_server
from tests.graphs import CLASSES, DIM, FANOUTS, KeyedGraph, node_id

LABEL = "Embedded"
NODES = [node_id(i) for i in (0, 5, 17, 42)]


@pytest.fixture(scope="module")
def served(tmp_path_factory, small_sage):
    from memgraph_tf.serving.client import ServingClient
    from memgraph_tf.serving.export import export_bundle
    from memgraph_tf.serving.model_server import ModelServer
    from memgraph_tf.serving.server import start_server

    base = tmp_path_factory.mktemp("embed_serving")
    options = {"id_property": "id", "label": LABEL, "seed": 4, "low_degree": "pad"}
    export_bundle(
        small_sage(FANOUTS, DIM, CLASSES),
        base,
        "sage",
        1,
        use_op=True,
        sample_options=options,
        warmup=False,
    )
    source = KeyedGraph(LABEL).embedded_source()
    ms = ModelServer(base / "sage", graph_source=source, warmup=False)
    with start_server(ms) as rest, start_grpc_server(ms) as rpc:
        yield type(
            "Served",
            (),
            {
                "base": base,
                "source": source,
                "rest": ServingClient(rest.url, "sage"),
                "url": f"{rest.url}/v1/models/sage:predict",
                "grpc": GrpcServingClient(rpc.target, "sage"),
            },
        )
    ms.close()


def test_rest_and_grpc_embed_by_node_id_as_batch_inference_does(served):
    from memgraph_tf.batch.embedder import EmbedBackend, embed_nodes

    with EmbedBackend(served.base / "sage") as model:
        source = KeyedGraph(LABEL).embedded_source()
        embed_nodes(source, model, node_ids=NODES)
        graph = source.graph
        want = np.asarray(
            [graph.get_property(graph.find_nodes(LABEL, "id", i)[0], "embedding") for i in NODES]
        )
    assert want.shape == (4, model.dimension)
    np.testing.assert_allclose(served.rest.embed(NODES), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(served.grpc.embed(NODES), want, rtol=1e-5, atol=1e-6)
    rows = requests.post(
        served.url,
        json={"signature_name": "embed", "instances": [{"node_id": i} for i in NODES]},
        timeout=30,
    )
    assert rows.status_code == 200, rows.text
    np.testing.assert_allclose(rows.json()["predictions"], want, rtol=1e-5, atol=1e-6)


def test_bad_node_ids_are_refused_naming_them(served):
    missing = requests.post(
        served.url,
        json={"signature_name": "embed", "inputs": {"node_id": [NODES[0], 99999]}},
        timeout=30,
    )
    assert missing.status_code == 400
    assert "node_id[1]" in missing.json()["error"] and "99999" in missing.json()["error"]
    nested = requests.post(
        served.url, json={"signature_name": "embed", "inputs": {"node_id": [[1, 2]]}}, timeout=30
    )
    assert nested.status_code == 400
    assert "node_id: expected a vector of int64 node ids" in nested.json()["error"]
    with pytest.raises(errors.BadRequestError, match=r"node_id\[1\].*99999"):
        served.grpc.embed([NODES[0], 99999])
    # node_id names nodes only on a signature that embeds them
    with pytest.raises(errors.BadRequestError, match="input size does not match signature"):
        served.grpc.predict(inputs={"node_id": [1]}, signature_name="serving_default")
