"""Serving with a real graph (ArcadeDB over Bolt, with a user name and password): node ids -> blobs
-> :classify, and the credentials rule for bundles exported while connected."""

from __future__ import annotations

import base64
import os

import numpy as np
import pytest
import requests

from memgraph_tf.serving import errors
from memgraph_tf.serving.client import ServingClient, classify_nodes

N = 12
OPTIONS = {"id_property": "id", "seed": 3, "low_degree": "pad"}


@pytest.fixture(scope="module")
def arcadedb():
    """A server of this module's own: its graph must not meet the client suite's. Skips when
    arcadedb-embedded is not installed, except in CI (as tests/conftest.py's arcadedb_server)."""
    if not os.environ.get("CI"):  # in CI the credentials test must run: a missing package fails
        pytest.importorskip(
            "arcadedb_embedded", reason="arcadedb-embedded (a real Bolt server) is not installed"
        )
    from memgraph_tf.testing.arcadedb import ArcadeDBServerProcess

    with ArcadeDBServerProcess() as server:
        yield server


@pytest.fixture(scope="module")
def source(arcadedb, sage):
    from memgraph_tf.client import connect

    rng = np.random.default_rng(5)
    src = connect(arcadedb.uri, auth=arcadedb.auth, database=arcadedb.database)
    rows = [
        {"id": i, "features": rng.normal(size=sage.dim).astype(float).tolist()} for i in range(N)
    ]
    edges = [{"a": i, "b": (i + k) % N} for i in range(N) for k in (1, 3)]
    src.write("UNWIND $rows AS r CREATE (:Node {id: r.id, features: r.features})", {"rows": rows})
    src.write(
        "UNWIND $edges AS e MATCH (a:Node {id: e.a}), (b:Node {id: e.b}) CREATE (a)-[:LINK]->(b)",
        {"edges": edges},
    )
    try:
        yield src
    finally:
        src.close()


@pytest.fixture(scope="module")
def exported(tmp_path_factory, source, sage, arcadedb):
    """A bundle exported while `source` is connected with user name and password, and with the
    connection settings in the MEMGRAPH_TF_* environment as a deployment would have them."""
    from memgraph_tf.serving.export import export_bundle

    model = sage.make(seed=11)
    base = tmp_path_factory.mktemp("graph_bundles")
    env = {
        "MEMGRAPH_TF_URI": arcadedb.uri,
        "MEMGRAPH_TF_USER": arcadedb.user,
        "MEMGRAPH_TF_PASSWORD": arcadedb.password,
    }
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        info = export_bundle(
            model,
            base,
            "GraphSage",
            1,
            use_op=True,
            properties=["features"],
            sample_options=OPTIONS,
        )
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return model, base, info


def _in_process(model, blobs):
    return model(_features(blobs)).numpy()


def test_bundle_holds_no_uri_user_or_password(exported, arcadedb):
    _, base, info = exported
    secrets_ = {
        "uri": arcadedb.uri,
        "password": arcadedb.password,
        "user": arcadedb.user,
        "host:port": f"{arcadedb.host}:{arcadedb.bolt_port}",
        "user in auth form": f"{arcadedb.user}:{arcadedb.password}",
    }
    assert len(arcadedb.password) >= 12
    files = [p for p in base.rglob("*") if p.is_file()]
    names = {p.relative_to(info.path).parts[0] for p in files if info.path in p.parents}
    assert {"saved_model.pb", "variables", "assets"} <= names  # the files the rule is about
    for path in files:
        data = path.read_bytes()
        for what, value in secrets_.items():
            assert value.encode() not in data, f"{what} found in {path}"
            assert base64.b64encode(value.encode()) not in data, f"{what} (base64) in {path}"


def test_graph_server_classifies_node_ids(exported, source):
    from memgraph_tf.serving.model_server import ModelServer
    from memgraph_tf.serving.server import start_server

    model, _base, info = exported
    ids = [0, 5, 11]
    blobs = source.sample_blobs_per_node(ids, [3, 2], ["features"], OPTIONS)
    want = _in_process(model, blobs)
    with start_server(ModelServer(info.path.parent, graph_source=source)) as srv:
        r = requests.post(
            f"{srv.url}/v1/models/GraphSage/versions/1:classify",
            timeout=60,
            json={"examples": [{"node_id": i} for i in ids]},
        )  # the notes' request
        assert r.status_code == 200, r.text
        got = np.array([[s for _, s in row] for row in r.json()["results"]])
        np.testing.assert_allclose(got, want, atol=1e-5, rtol=0)
        with ServingClient(srv.url, "GraphSage") as c:
            triples = classify_nodes(source, c, ids)
            with pytest.raises(
                errors.BadRequestError, match=r"examples\[0\].node_id: expected an integer"
            ):
                c.classify([{"node_id": "x"}])
    assert [t[0] for t in triples] == ids
    assert [t[1] for t in triples] == [model.class_names[i] for i in want.argmax(1)]
    np.testing.assert_allclose([t[2] for t in triples], want.max(1), atol=1e-5, rtol=0)


def test_node_ids_without_a_graph_are_a_clear_400(exported):
    from memgraph_tf.serving.model_server import ModelServer
    from memgraph_tf.serving.server import start_server

    _, _, info = exported
    with start_server(ModelServer(info.path.parent, warmup=False)) as srv:
        with ServingClient(srv.url, "GraphSage") as c:
            with pytest.raises(
                errors.BadRequestError,
                match=r"examples\[0\]: 'node_id' needs a server started with --graph",
            ):
                c.classify([{"node_id": 1}])


def test_embedded_cora_graph_source(tmp_path, planetoid_dir):
    """`--graph embedded:DIR/cora`: the unchanged query modules in process feed :classify."""
    import tensorflow as tf

    from memgraph_tf.client import open_graph
    from memgraph_tf.client.graphsage import GraphSAGE
    from memgraph_tf.serving.export import export_bundle
    from memgraph_tf.serving.model_server import ModelServer
    from memgraph_tf.serving.server import start_server

    cora = planetoid_dir / "cora"
    options = {"seed": 1}
    model = GraphSAGE([3, 2], 1433, 7, hidden_units=8, class_names=[f"c{i}" for i in range(7)])
    # the op decodes: the graph source does not depend on the decoder (an op-free export of this
    # 1433-wide model and its first call cost seconds)
    info = export_bundle(model, tmp_path, "cora", 1, use_op=True, sample_options=options)
    source = open_graph(f"embedded:{cora}")
    ids = [0, 5, 2000]
    blobs = source.sample_blobs_per_node(ids, [3, 2], ["features"], options)
    want = tf.nn.softmax(model(_features(blobs), training=False)).numpy()
    with start_server(ModelServer(info.path.parent, graph_source=source, warmup=False)) as srv:
        with ServingClient(srv.url, "cora") as c:
            triples = classify_nodes(source, c, ids)
        r = requests.post(
            f"{srv.url}/v1/models/cora:classify",
            timeout=60,
            json={"examples": [{"node_id": i} for i in ids]},
        )
    assert r.status_code == 200, r.text
    np.testing.assert_allclose(
        [[s for _, s in row] for row in r.json()["results"]], want, atol=1e-5, rtol=0
    )
    assert [t[1] for t in triples] == [f"c{i}" for i in want.argmax(1)]


def _features(blobs):
    from memgraph_tf import blob

    feats = {}
    for b in blobs:
        for k, v in blob.unpack(b).items():
            if k.startswith(("features_", "mask_")):
                feats.setdefault(k, []).append(v[0])
    return {k: np.stack(v) for k, v in feats.items()}


def test_graph_server_over_memgraph_s_procedure_errors_answers_400(exported, source, arcadedb):
    """``serve --graph bolt://...`` on a server whose procedures fail as Memgraph's do:
    an unknown node is a 400 naming it, as on the embedded graph (before: a 500 carrying the
    server's whole traceback); a known node's answer is the one the client-side path gives."""
    import neo4j

    from memgraph_tf.client.sources import BoltSource
    from memgraph_tf.embedded import EmbeddedGraph
    from memgraph_tf.serving.model_server import ModelServer
    from memgraph_tf.serving.server import start_server
    from tests.client.memgraph_like import MemgraphLikeDriver

    graph, internal = EmbeddedGraph(), {}
    for row in source.read("MATCH (n:Node) RETURN n.id AS id, n.features AS f ORDER BY id"):
        internal[row["id"]] = graph.add_node(["Node"], {"id": row["id"], "features": row["f"]})
    for row in source.read("MATCH (a:Node)-[:LINK]->(b:Node) RETURN a.id AS a, b.id AS b"):
        graph.add_edge(internal[row["a"]], internal[row["b"]], "LINK")
    inner = neo4j.GraphDatabase.driver(arcadedb.uri, auth=arcadedb.auth)
    driver = MemgraphLikeDriver(graph, inner, arcadedb.database)
    memgraph = BoltSource(driver, uri=arcadedb.uri, database=arcadedb.database)
    model, _base, info = exported
    want = _in_process(model, source.sample_blobs_per_node([5], [3, 2], ["features"], OPTIONS))
    try:
        with start_server(ModelServer(info.path.parent, graph_source=memgraph)) as srv:
            url = f"{srv.url}/v1/models/GraphSage/versions/1:classify"
            bad = requests.post(url, timeout=60, json={"examples": [{"node_id": 999}]})
            good = requests.post(url, timeout=60, json={"examples": [{"node_id": 5}]})
    finally:
        driver.shutdown()
    assert bad.status_code == 400, bad.text
    assert bad.json() == {
        "error": "fetching node ids [999] from the graph: examples[0].node_id: unknown node id 999 "
        "(no node has id = 999)"
    }
    assert good.status_code == 200, good.text
    got = np.array([[s for _, s in row] for row in good.json()["results"]])
    np.testing.assert_allclose(got, want, atol=1e-5, rtol=0)
    assert any("PROCEDURE MEMORY LIMIT 1024 MB" in c for c in driver.calls)
