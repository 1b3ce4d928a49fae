"""BoltSource against a real ArcadeDB server: connection settings, credentials, failures, writes."""

from __future__ import annotations

import copy
import pickle
import threading

import pytest
import tensorflow as tf

from memgraph_tf.client import OpenCypherDataset, connect
from memgraph_tf.errors import (
    AuthenticationError,
    ConfigurationError,
    ProcedureUnavailable,
    QueryError,
    ServerUnavailable,
)
from memgraph_tf.testing.arcadedb import ArcadeDBServerProcess, free_port

pytestmark = pytest.mark.arcadedb


def test_connect_from_environment(arcadedb_server, monkeypatch):
    monkeypatch.setenv("MEMGRAPH_TF_URI", arcadedb_server.uri)
    monkeypatch.setenv("MEMGRAPH_TF_USER", arcadedb_server.user)
    monkeypatch.setenv("MEMGRAPH_TF_PASSWORD", arcadedb_server.password)
    monkeypatch.setenv("MEMGRAPH_TF_DATABASE", arcadedb_server.database)
    with connect() as source:
        assert [r["x"] for r in source.run("UNWIND [3, 4] AS x RETURN x")] == [3, 4]
        assert source.database == arcadedb_server.database


def test_source_keeps_no_credentials_and_refuses_pickling(bolt_source, arcadedb_server):
    password = arcadedb_server.password
    assert password not in repr(bolt_source)
    assert all(password not in repr(v) for v in vars(bolt_source).values())
    with pytest.raises(
        TypeError, match=r"BoltSource cannot be pickled or copied: it holds a live connection"
    ):
        pickle.dumps(bolt_source)
    with pytest.raises(TypeError, match=r"BoltSource cannot be pickled or copied"):
        copy.deepcopy(bolt_source)


def test_uri_and_argument_errors(monkeypatch):
    monkeypatch.delenv("MEMGRAPH_TF_URI", raising=False)
    with pytest.raises(
        ConfigurationError,
        match=r"uri: expected a Bolt URI such as bolt://host:7687 \(argument or MEMGRAPH_TF_URI\), "
        r"got none",
    ):
        connect()
    with pytest.raises(
        ConfigurationError,
        match=r"uri: expected one of the schemes bolt://, bolt\+s://, bolt\+ssc://, neo4j://, "
        r"neo4j\+s://, neo4j\+ssc://, got http:// in 'http://localhost:7687'",
    ):
        connect("http://localhost:7687")
    with pytest.raises(
        ConfigurationError,
        match=r"uri: expected no user or password inside the URI .* got credentials in "
        r"'bolt://\*\*\*@localhost:7687'",
    ):
        connect("bolt://root:secret@localhost:7687")
    with pytest.raises(
        ConfigurationError,
        match=r"auth: expected \(user, password\) as two strings, a neo4j auth object or None, got "
        r"a tuple of 1 item",
    ):
        connect("bolt://localhost:7687", auth=("root",))
    with pytest.raises(
        ConfigurationError,
        match=r"use_procedures: expected None \(detect\), True or False, got 'yes'",
    ):
        connect("bolt://localhost:7687", use_procedures="yes")


def test_wrong_password(arcadedb_server):
    with pytest.raises(
        AuthenticationError, match=r"the server refused the credentials for user 'root'"
    ) as info:
        connect(arcadedb_server.uri, auth=("root", "not-the-password"), database="g")
    assert "not-the-password" not in str(info.value)


def test_server_that_is_down():
    uri = f"bolt://127.0.0.1:{free_port()}"
    refused = rf"{uri}: server unavailable or connection lost: .*Connection refused"
    with pytest.raises(ServerUnavailable, match=refused):
        connect(uri, auth=("root", "x"), connection_timeout=3.0)


def test_query_errors(bolt_source):
    with pytest.raises(QueryError, match=r"query failed: .*\(query: 'MATCH \(n RETURN n'\)"):
        bolt_source.read("MATCH (n RETURN n")
    assert bolt_source.has_procedures() is False  # ArcadeDB has no tf_features procedures


def test_required_procedures_missing(arcadedb_server):
    with connect(
        arcadedb_server.uri, auth=arcadedb_server.auth, database="g", use_procedures=True
    ) as source:
        with pytest.raises(ProcedureUnavailable, match=r"query failed: .*tf_features\.pack"):
            source.pack_blob([1], ["x"])


def test_write_properties_batched_and_idempotent(bolt_source):
    bolt_source.write("MATCH (n:WpNode) DELETE n")
    bolt_source.write("UNWIND range(0, 24) AS i CREATE (:WpNode {key: i})")
    ids = list(range(0, 25, 2))
    values = [i * 10 for i in ids]
    for _ in range(2):
        assert bolt_source.write_properties(
            ids, "pred", values, id_property="key", label="WpNode", batch_size=4
        ) == len(ids)
    assert (
        bolt_source.write_properties([1, 999], "other", [5, 6], id_property="key", label="WpNode")
        == 1
    )
    rows = bolt_source.read("MATCH (n:WpNode) RETURN n.key AS k, n.pred AS p ORDER BY k")
    assert {r["k"]: r["p"] for r in rows} == {
        i: (i * 10 if i % 2 == 0 else None) for i in range(25)
    }
    assert bolt_source.read("MATCH (n:WpNode) WHERE n.other IS NOT NULL RETURN n.key AS k") == [
        {"k": 1}
    ]
    with pytest.raises(
        ConfigurationError, match=r"values: expected one value per node id \(2\), got 1"
    ):
        bolt_source.write_properties([1, 2], "pred", [1], id_property="key")
    with pytest.raises(
        ConfigurationError,
        match=r"name: expected a non-empty name without backquotes or NUL, got 'a`b'",
    ):
        bolt_source.write_properties([1], "a`b", [1], id_property="key")


def test_write_columns_sets_every_column_in_one_statement_per_batch(bolt_source, monkeypatch):
    bolt_source.write("MATCH (n:WcNode) DELETE n")
    bolt_source.write("UNWIND range(0, 12) AS i CREATE (:WcNode {key: i})")
    ids = list(range(13)) + [999]
    queries = []
    real_write = bolt_source.write
    monkeypatch.setattr(
        bolt_source, "write", lambda q, p=None: queries.append(q) or real_write(q, p)
    )
    written = bolt_source.write_columns(
        ids,
        {"cls": [f"c{i}" for i in ids], "score": [i / 100 for i in ids]},
        id_property="key",
        label="WcNode",
        batch_size=4,
    )
    assert written == 13  # 999 matches no node
    assert len(queries) == 4  # one transaction per batch of 4 ids, both properties in its statement
    assert all("`cls` = row.v0" in q and "`score` = row.v1" in q for q in queries)
    rows = bolt_source.read(
        "MATCH (n:WcNode) RETURN n.key AS k, n.cls AS c, n.score AS s ORDER BY k"
    )
    assert [(r["k"], r["c"], r["s"]) for r in rows] == [(i, f"c{i}", i / 100) for i in range(13)]
    with pytest.raises(
        ConfigurationError, match=r"columns\['s'\]: expected one value per node id \(2\), got 1"
    ):
        bolt_source.write_columns([1, 2], {"c": [1, 2], "s": [1]}, id_property="key")
    with pytest.raises(
        ConfigurationError,
        match=r"columns: expected a non-empty mapping of property name -> values, got \{\}",
    ):
        bolt_source.write_columns([1], {}, id_property="key")
    with pytest.raises(
        ConfigurationError,
        match=r"columns: expected a non-empty name without backquotes or NUL, got 'a`b'",
    ):
        bolt_source.write_columns([1], {"ok": [1], "a`b": [1]}, id_property="key")
    assert len(queries) == 4  # the refused calls sent nothing


def test_server_killed_mid_stream_raises_without_hanging():
    with ArcadeDBServerProcess() as server:
        source = connect(
            server.uri, auth=server.auth, database=server.database, connection_timeout=5.0
        )
        ds = OpenCypherDataset(
            source, "UNWIND range(1, 2000000) AS i RETURN i", tf.int64, fetch_size=100
        )
        iterator = iter(ds)
        first = [int(next(iterator)) for _ in range(5)]
        assert first == [1, 2, 3, 4, 5]
        server.kill()
        outcome = {}

        def drain():
            try:
                for _ in iterator:
                    pass
                outcome["result"] = "finished"
            except Exception as exc:  # noqa: BLE001 -- recorded, checked below by type and message
                outcome["error"] = exc

        thread = threading.Thread(target=drain, daemon=True)
        thread.start()
        thread.join(timeout=120)
        assert not thread.is_alive(), "iteration hung after the server was killed"
        error = outcome.get("error")
        assert isinstance(error, tf.errors.OpError), outcome
        assert (
            "server unavailable or connection lost while running 'UNWIND range(1, 2000000) AS i "
            "RETURN i'" in str(error)
        )
        with pytest.raises(ServerUnavailable, match=r"server unavailable or connection lost"):
            list(source.run("RETURN 1 AS x"))
        source.close()


def test_routing_scheme_and_tls_schemes(arcadedb_server):
    with connect(
        arcadedb_server.uri.replace("bolt://", "neo4j://"), auth=arcadedb_server.auth, database="g"
    ) as source:
        assert [r["x"] for r in source.run("UNWIND [7] AS x RETURN x")] == [7]
    # the test server speaks plain Bolt: a TLS scheme must try TLS and fail clearly, not fall back
    with pytest.raises(
        ServerUnavailable,
        match=r"bolt\+ssc://127\.0\.0\.1:\d+ \(database 'g'\): server unavailable .*SSL",
    ):
        connect(
            arcadedb_server.uri.replace("bolt://", "bolt+ssc://"),
            auth=arcadedb_server.auth,
            database="g",
            connection_timeout=3.0,
        )
