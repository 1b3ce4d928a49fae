"""``memgraph-tf refresh`` (memgraph_tf.batch.refresh): after relationship insertions and
deletions and a feature update, a pass re-scores only the affected nodes and leaves every node's
prediction equal to a full re-score's, node for node; the cursor moves after the writes; a change
naming an unknown node stops the pass before any write; over a real Bolt server (ArcadeDB) with
an application-written log, a refresh killed mid-pass (SIGKILL) and run again loses nothing and
applies nothing twice; ``--follow`` stops cleanly on SIGTERM."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import threading

import pytest

from memgraph_tf import cli
from memgraph_tf.batch import BundleBackend, classify_graph
from memgraph_tf.batch.refresh import Refresher, signal_stopper
from memgraph_tf.client.change_log import Change, ChangeLog
from memgraph_tf.errors import ConfigurationError
from tests.client.classify_kit import GRAPH
from tests.graphs import KeyedGraph, N, assert_same, credentials_env, predictions, writes_per_node


@pytest.fixture(scope="module")
def op_backend(op_bundle_base):
    with BundleBackend(op_bundle_base) as model:
        yield model


def _change_graph(source, rng, inserts=12, deletes=3):
    """Random LINK insertions and deletions and one feature update on the embedded test graph,
    each recorded in the default change log; returns the changes."""
    graph = source.graph
    nodes = graph.nodes(GRAPH.label)
    changes = []
    for _ in range(inserts):
        a, b = rng.sample(nodes, 2)
        eid = graph.add_edge(a, b, "LINK")
        changes.append(
            Change("created", "relationship", eid, rel_type="LINK", start_id=a, end_id=b)
        )
    live = [(e, a, b) for e, (a, b, _) in enumerate(graph.edges())]  # none deleted: ids in order
    for eid, a, b in rng.sample(live, deletes):
        graph.delete_edge(eid)
        changes.append(
            Change("deleted", "relationship", eid, rel_type="LINK", start_id=a, end_id=b)
        )
    graph.set_property(nodes[5], "features", [0.5, -1.0, 2.0, 0.25])
    changes.append(
        Change("updated", "node", nodes[5], labels=(GRAPH.label,), properties=("features",))
    )
    ChangeLog(source).record(changes)
    return changes


def test_a_pass_equals_a_full_rescore_and_rescored_only_the_affected(op_backend):
    source = GRAPH.embedded_source()
    classify_graph(source, op_backend, progress=False)
    _change_graph(source, random.Random(4))
    source.graph.writes.clear()
    refresher = Refresher(source, op_backend, batch_size=16)
    summary = refresher.once()
    assert summary.committed and summary.changes == 16 and refresher.cursor() == 16
    assert 0 < summary.affected < N and summary.graph_nodes == N
    assert summary.classified == summary.affected
    # the lag, from each change's logging (logged_at: the writer's clock) to the cursor's move
    assert all(isinstance(c.logged_at, int) for c in ChangeLog(source).read()[0])
    assert 0 <= summary.newest_lag_s <= summary.oldest_lag_s < 600
    assert "lag from a change's logging to its fresh prediction" in summary.text()
    rescored = writes_per_node(source)
    assert len(rescored) == summary.affected and set(rescored.values()) == {1}
    refreshed = predictions(source)
    classify_graph(source, op_backend, overwrite=True, progress=False)
    assert_same(refreshed, predictions(source))
    # the log is read: the next pass finds nothing and writes nothing
    source.graph.writes.clear()
    again = refresher.once()
    assert again.changes == 0 and not source.graph.writes


def _embeddings(source):
    graph = source.graph
    return {
        graph.get_property(i, "id"): graph.get_property(i, "embedding")
        for i in graph.nodes(GRAPH.label)
    }


def test_a_pass_re_embeds_the_affected_nodes_as_a_full_embed_run(op_backend, op_bundle_base):
    """With the bundle's ``embed`` signature: the affected nodes' embeddings (what Memgraph's
    vector index on the property holds) equal those of a full ``embed`` run, node for node."""
    import numpy as np

    from memgraph_tf.batch.embedder import EmbedBackend, embed_nodes

    source = GRAPH.embedded_source()
    with EmbedBackend(op_bundle_base) as encoder:
        embed_nodes(source, encoder)
        classify_graph(source, op_backend, progress=False)
        _change_graph(source, random.Random(5))
        source.graph.writes.clear()
        summary = Refresher(source, op_backend, embed=encoder, batch_size=16).once()
        assert summary.committed and 0 < summary.embedded == summary.affected < N
        written = {key for _, key in source.graph.writes}
        assert {"embedding", "embedding_version", "predicted_class"} <= written
        refreshed = _embeddings(source)
        embed_nodes(source, encoder, overwrite=True)
        full = _embeddings(source)
    assert sorted(refreshed) == sorted(full)
    np.testing.assert_allclose(
        [refreshed[k] for k in sorted(full)], [full[k] for k in sorted(full)], rtol=1e-6
    )


def test_a_change_naming_an_unknown_node_stops_the_pass_before_any_write(op_backend):
    source = GRAPH.embedded_source()
    log = ChangeLog(source)
    node = source.graph.nodes(GRAPH.label)[0]
    log.record([Change("created", "relationship", 1, rel_type="LINK", start_id=node, end_id=9999)])
    source.graph.writes.clear()
    refresher = Refresher(source, op_backend)
    with pytest.raises(
        ConfigurationError,
        match=r"change log 'default', seq 1 \(created relationship 1\): its end node, node 9999, "
        r"is not in the graph and no later change deletes it",
    ):
        refresher.once()
    assert refresher.cursor() == 0 and not source.graph.writes
    # a node that a later change deletes is no error: it is gone, its deletion explains it
    log.record([Change("deleted", "node", 9999)])
    assert refresher.once().committed and refresher.cursor() == 2


def test_refresh_usage_errors_exit_2_naming_the_value(capsys):
    code = cli.main(
        ["refresh", "--graph", "bolt://127.0.0.1:1", "--model", "m", "--follow",
         "--poll-interval-s", "0"]
    )  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2
    assert "memgraph-tf refresh: error: poll_interval_s: expected seconds from 0.05 to 300" in err
    assert "Traceback" not in err


# ---------------------------------------------------------------- over Bolt: kill and restart
BOLT = KeyedGraph("RefreshItem")

CHILD = textwrap.dedent(
    """
    import sys, time
    from memgraph_tf.batch import BundleBackend
    from memgraph_tf.batch.refresh import Refresher, signal_stopper
    from memgraph_tf.client import connect

    class Stalls(BundleBackend):
        calls = 0
        def classify(self, blobs):
            Stalls.calls += 1
            print(f"batch {Stalls.calls}", flush=True)
            if Stalls.calls >= 2:
                time.sleep(600)  # killed here, mid-pass: batch 1 is written, the cursor is not
            return super().classify(blobs)

    uri, bundle = sys.argv[1:3]
    with connect(uri) as source, Stalls(bundle) as model:
        Refresher(source, model, batch_size=4).once()
    """
)


@pytest.fixture(scope="module")
def bolt_bundle(small_sage_bundle):
    return BOLT.bundle(small_sage_bundle, "RefreshSage", 1, use_op=True)


def _link_change(kind, rel_id, start_id, end_id):
    """The application's record of a ``kind`` (created / deleted) LINK relationship."""
    return Change(kind, "relationship", rel_id, rel_type="LINK", start_id=start_id, end_id=end_id)


def _bolt_changes(bolt_source, rng):
    """LINK insertions and deletions and a DETACH DELETE of a node over Cypher, each recorded by
    the application (ArcadeDB has no triggers)."""
    label = BOLT.label
    rows = bolt_source.read(f"MATCH (n:{label}) RETURN id(n) AS i ORDER BY n.id")
    nodes = [r["i"] for r in rows]
    changes = []
    for _ in range(10):
        a, b = rng.sample(nodes[:-1], 2)
        [row] = bolt_source.write(
            "MATCH (a), (b) WHERE id(a) = $a AND id(b) = $b CREATE (a)-[r:LINK]->(b) "
            "RETURN id(r) AS r",
            {"a": a, "b": b},
        )
        changes.append(_link_change("created", row["r"], a, b))
    rels = bolt_source.read(
        f"MATCH (a:{label})-[r:LINK]->(b:{label}) RETURN id(r) AS r, id(a) AS a, id(b) AS b"
    )
    for rel in rng.sample(sorted(rels, key=lambda r: (r["a"], r["b"])), 3):
        bolt_source.write("MATCH ()-[r]->() WHERE id(r) = $r DELETE r", {"r": rel["r"]})
        changes.append(_link_change("deleted", rel["r"], rel["a"], rel["b"]))
    gone = nodes[-1]  # its relationships' deletions record its former neighbours
    for rel in bolt_source.read(
        "MATCH (a)-[r]-(b) WHERE id(a) = $n RETURN DISTINCT id(r) AS r, id(startNode(r)) AS s, "
        "id(endNode(r)) AS t",
        {"n": gone},
    ):
        changes.append(_link_change("deleted", rel["r"], rel["s"], rel["t"]))
    bolt_source.write("MATCH (n) WHERE id(n) = $n DETACH DELETE n", {"n": gone})
    changes.append(Change("deleted", "node", gone, labels=(label,)))
    ChangeLog(bolt_source, "refreshbolt").record(changes)
    return changes


@pytest.mark.arcadedb
def test_killed_mid_refresh_over_bolt_and_rerun_nothing_lost_nothing_twice(
    bolt_source, arcadedb_server, bolt_bundle, tmp_path
):
    BOLT.write_bolt(bolt_source)
    bolt_source.write("MATCH (n:MemgraphTfRefreshCursor) DETACH DELETE n")
    bolt_source.write("MATCH (n:MemgraphTfChange) WHERE n.log = 'refreshbolt' DETACH DELETE n")
    bolt_source.write("MATCH (n:MemgraphTfChangeCounter) WHERE n.log = 'refreshbolt' DELETE n")
    with BundleBackend(bolt_bundle) as model:
        classify_graph(bolt_source, model, progress=False)
        changes = _bolt_changes(bolt_source, random.Random(9))
        env = {**os.environ, **credentials_env(arcadedb_server), "PYTHONPATH": os.getcwd()}
        child = CHILD.replace(
            "Refresher(source, model,", "Refresher(source, model, log='refreshbolt',"
        )
        proc = subprocess.Popen(
            [sys.executable, "-c", child, arcadedb_server.uri, str(bolt_bundle)],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=env,
        )
        try:
            assert proc.stdout.readline().strip() == "batch 1"
            assert proc.stdout.readline().strip() == "batch 2"  # the pass is under way
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
        refresher = Refresher(bolt_source, model, log="refreshbolt")
        assert refresher.cursor() == 0  # killed before the cursor moved: the pass is redone
        rerun = subprocess.run(
            [sys.executable, "-m", "memgraph_tf.cli", "refresh", "--graph", arcadedb_server.uri,
             "--model", str(bolt_bundle), "--log", "refreshbolt", "--no-progress"],
            capture_output=True, text=True, env=env, timeout=300,
        )  # fmt: skip
        assert rerun.returncode == 0, rerun.stderr
        assert f"refresh: {len(changes)} change(s), seq 1..{len(changes)}" in rerun.stdout
        assert "cursor moved; lag from a change's logging to its fresh prediction" in rerun.stdout
        assert refresher.cursor() == len(changes)
        assert refresher.once().changes == 0  # nothing is applied twice
        refreshed = BOLT.bolt_predictions(bolt_source)
        classify_graph(bolt_source, model, overwrite=True, progress=False)
        assert len(refreshed) == N - 1  # the deleted node's predictions went with it
        assert_same(refreshed, BOLT.bolt_predictions(bolt_source))


@pytest.mark.arcadedb
def test_follow_refreshes_each_new_change_and_stops_cleanly_on_sigterm(
    bolt_source, arcadedb_server, bolt_bundle
):
    BOLT.write_bolt(bolt_source)
    log = ChangeLog(bolt_source, "followlog")
    bolt_source.write("MATCH (n:MemgraphTfChange) WHERE n.log = 'followlog' DETACH DELETE n")
    bolt_source.write("MATCH (n:MemgraphTfChangeCounter) WHERE n.log = 'followlog' DELETE n")
    bolt_source.write("MATCH (n:MemgraphTfRefreshCursor) WHERE n.log = 'followlog' DELETE n")
    env = {**os.environ, **credentials_env(arcadedb_server), "PYTHONPATH": os.getcwd()}
    proc = subprocess.Popen(
        [sys.executable, "-m", "memgraph_tf.cli", "refresh", "--graph", arcadedb_server.uri,
         "--model", str(bolt_bundle), "--log", "followlog", "--follow", "--poll-interval-s",
         "0.2", "--no-progress"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    try:
        [a, b] = [
            r["i"] for r in bolt_source.read("MATCH (n:RefreshItem) RETURN id(n) AS i LIMIT 2")
        ]
        [row] = bolt_source.write(
            "MATCH (a), (b) WHERE id(a) = $a AND id(b) = $b CREATE (a)-[r:LINK]->(b) "
            "RETURN id(r) AS r",
            {"a": a, "b": b},
        )
        log.record(
            [Change("created", "relationship", row["r"], rel_type="LINK", start_id=a, end_id=b)]
        )
        line = proc.stdout.readline()  # the pass that read the change (the earlier ones found none)
        assert line.startswith("refresh: 1 change(s), seq 1..1 of log 'followlog'"), line
        assert "cursor moved" in line
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert out.strip().endswith("refresh: stopped (SIGTERM)")
    assert "Traceback" not in err


@pytest.mark.arcadedb
def test_the_command_names_an_unknown_node_of_the_log_exit_2(
    bolt_source, arcadedb_server, bolt_bundle, monkeypatch, capsys
):
    from tests.graphs import use_credentials

    use_credentials(monkeypatch, arcadedb_server)
    bolt_source.write("MATCH (n:MemgraphTfChange) WHERE n.log = 'badlog' DETACH DELETE n")
    bolt_source.write("MATCH (n:MemgraphTfChangeCounter) WHERE n.log = 'badlog' DELETE n")
    unknown = 10**15 + 7
    assert not bolt_source.read("MATCH (n) WHERE id(n) = $i RETURN 1 AS one", {"i": unknown})
    ChangeLog(bolt_source, "badlog").record(
        [Change("updated", "node", unknown, labels=(BOLT.label,), properties=("features",))]
    )
    code = cli.main(
        ["refresh", "--graph", arcadedb_server.uri, "--model", str(bolt_bundle), "--log",
         "badlog", "--no-progress"]
    )  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2, err
    assert (
        f"memgraph-tf refresh: error: change log 'badlog', seq 1 (updated node): the node, node "
        f"{unknown}, is not in the graph and no later change deletes it" in err
    )
    assert "Traceback" not in err
    assert Refresher(bolt_source, BundleBackend(bolt_bundle), log="badlog").cursor() == 0


def test_a_typed_bundles_pass_equals_a_full_rescore():
    """The typed bundle of tests/client/typed_kit.py on a fresh copy of its shop graph: after
    BOUGHT, FOLLOWS and IN insertions and deletions and a product's feature update, the users'
    predictions equal a full re-score's, node for node, and only the affected users were
    re-scored."""
    from memgraph_tf.client import EmbeddedSource
    from memgraph_tf.typed_datasets import shop_graph, typed_embedded_graph
    from tests.client import typed_kit as kit

    graph = shop_graph(
        600, num_products=120, num_categories=4, num_classes=2, follows_per_user=3, signal=0.9
    )  # typed_kit.shop()'s graph, a copy of its own: this test changes it
    embedded, ids = typed_embedded_graph(graph)
    source = EmbeddedSource(embedded)
    prop = "typed_class"
    rng = random.Random(8)
    with BundleBackend(kit.bundle(True).path) as model:
        classify_graph(source, model, write_property=prop, progress=False)
        edges = list(enumerate(embedded.edges()))  # none deleted: ids in order
        changes = []
        for eid, (a, b, _) in rng.sample(edges, 6):
            t = next(t for t in ("BOUGHT", "FOLLOWS", "IN") if (a, b, {}) in embedded.edges(t))
            embedded.delete_edge(eid)
            changes.append(Change("deleted", "relationship", eid, rel_type=t, start_id=a, end_id=b))
        for t, left, right in [("BOUGHT", "User", "Product"), ("FOLLOWS", "User", "User"),
                               ("IN", "Product", "Category")] * 3:  # fmt: skip
            a, b = rng.choice(ids[left]), rng.choice(ids[right])
            eid = embedded.add_edge(a, b, t)
            changes.append(Change("created", "relationship", eid, rel_type=t, start_id=a, end_id=b))
        product = ids["Product"][5]
        embedded.set_property(
            product, "features", [0.0] * len(embedded.get_property(product, "features"))
        )
        changes.append(
            Change("updated", "node", product, labels=("Product",), properties=("features",))
        )
        ChangeLog(source).record(changes)
        summary = Refresher(source, model, write_property=prop).once()
        users = ids["User"]
        assert summary.committed and 0 < summary.affected < len(users)
        assert summary.classified == summary.affected and summary.graph_nodes == len(users)
        refreshed = predictions(source, prop)
        classify_graph(source, model, write_property=prop, overwrite=True, progress=False)
    full = predictions(source, prop)
    assert_same(refreshed, full)


def test_memgraphs_triggers_do_not_log_the_refresh_cursor():
    """The cursor's writes are memgraph-tf's bookkeeping: the node triggers skip its label as
    they skip the log's own (a refresh must not feed its own log)."""
    from memgraph_tf.client.change_log import OWN_LABELS, trigger_statements

    for trigger in trigger_statements("id"):
        if trigger.event.startswith("ON ()"):
            for label in sorted(OWN_LABELS):
                assert f"NOT v:{label}" in trigger.statement, trigger.statement
    assert "MemgraphTfRefreshCursor" in OWN_LABELS


def test_the_sigterm_handler_stops_even_when_the_signal_lands_inside_the_events_lock():
    """A signal handler runs in the main thread between two bytecodes: in a follow loop, most
    often inside ``Event.wait``, which holds the event's lock around its bookkeeping. A handler
    that set the event itself would then wait for its own thread's lock forever (the SIGTERM
    that left ``refresh --follow`` running); :func:`signal_stopper` returns at once and the stop
    lands as soon as the interrupted thread lets go of the lock."""
    event = threading.Event()
    handler = signal_stopper(event.set)

    def interrupted_inside_the_lock() -> None:
        with event._cond:  # where Event.wait is when the signal arrives
            handler(signal.SIGTERM, None)

    t = threading.Thread(target=interrupted_inside_the_lock, daemon=True)
    t.start()
    t.join(5)
    assert not t.is_alive(), "the handler waited for the lock its own thread holds"
    assert event.wait(5)
