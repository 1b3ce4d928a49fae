"""Over a real Bolt server (ArcadeDB, which has no tf_features procedures: the client-side code of
``tf_features.structural_write`` runs over plain Cypher): the exact local FastRP recompute
(``options.changed_nodes``) leaves every stored vector equal to a full recompute on the changed
graph, and ``memgraph-tf refresh`` of a featureless classifier recomputes them near a new node
before re-scoring, so every stored prediction equals a full re-score on that graph."""

from __future__ import annotations

import pytest

from memgraph_tf import cli
from memgraph_tf.batch import BundleBackend, classify_graph
from memgraph_tf.batch.refresh import Refresher
from memgraph_tf.client.change_log import Change, ChangeLog
from memgraph_tf.client.node_tables import property_names
from memgraph_tf.client.structural import (
    STRUCTURAL_OPTIONS,
    STRUCTURAL_PROPERTY,
    structural_call,
    structural_features,
    write_structural_features,
)
from tests.client.test_refresh_structural import (
    FRIENDS,
    NEW,
    SEED,
    assert_same_predictions,
    trained_bundle,
)
from tests.client.test_structural_default import BASE, OPTIONS, N, communities
from tests.client.test_structural_local import CALL, PROP

pytestmark = pytest.mark.arcadedb

LOG = "fastrpbolt"
CHAIN = 40


def _clear(bolt) -> None:
    bolt.write("MATCH (n) WHERE n:Item OR n:Chain DETACH DELETE n")
    bolt.write(f"MATCH (n:MemgraphTfChange) WHERE n.log = '{LOG}' DETACH DELETE n")
    bolt.write(f"MATCH (n:MemgraphTfChangeCounter) WHERE n.log = '{LOG}' DELETE n")
    bolt.write(f"MATCH (n:MemgraphTfRefreshCursor) WHERE n.log = '{LOG}' DELETE n")


@pytest.fixture
def bolt(bolt_source):
    _clear(bolt_source)
    yield bolt_source
    _clear(bolt_source)


def _node_id(bolt, label: str, key: int) -> int:
    [row] = bolt.read(f"MATCH (n:{label}) WHERE n.id = $k RETURN id(n) AS i", {"k": key})
    return row["i"]


def _link(bolt, label: str, a: int, b: int, rel_type: str = "LINK", **props) -> int:
    [row] = bolt.write(
        f"MATCH (x:{label}) WHERE x.id = $a MATCH (y:{label}) WHERE y.id = $b "
        f"CREATE (x)-[r:{rel_type}]->(y) SET r += $p RETURN id(r) AS r",
        {"a": a, "b": b, "p": props},
    )
    return row["r"]


def test_local_recompute_equals_a_full_one_over_bolt(bolt):
    """A path of ``CHAIN`` items; a new item linked to items 20 and 21, item 30's key changed."""
    bolt.write(
        "UNWIND $rows AS r CREATE (n:Chain) SET n = r", {"rows": [{"id": i} for i in range(CHAIN)]}
    )
    for i in range(CHAIN - 1):
        _link(bolt, "Chain", i, i + 1)
    write_structural_features(bolt, "Chain", {**CALL, "write_property": PROP})
    bolt.write("CREATE (:Chain {id: 500})")
    _link(bolt, "Chain", 500, 20)
    _link(bolt, "Chain", 21, 500)
    bolt.write("MATCH (n:Chain) WHERE n.id = 30 SET n.id = 600")
    changed = [_node_id(bolt, "Chain", k) for k in (500, 20, 21, 600)]
    call = {**CALL, "write_property": PROP, "changed_nodes": changed}
    answer = write_structural_features(bolt, "Chain", call)
    assert 0 < answer["nodes"] < CHAIN and len(answer["updated"]) == answer["nodes"]
    assert _node_id(bolt, "Chain", 0) not in answer["updated"]
    rows = bolt.read(f"MATCH (n:Chain) RETURN n.id AS id, n.{PROP} AS v")
    full = structural_features(bolt, "Chain", CALL)
    assert {r["id"]: list(r["v"]) for r in rows} == dict(
        zip(full.node_ids.tolist(), full.features.tolist())
    )


def _load_items(bolt) -> None:
    g, *_ = communities(held_out=0.0)
    rows = [{"id": g.get_property(i, "id"), "label": g.get_property(i, "label")} for i in range(N)]
    bolt.write("UNWIND $rows AS r CREATE (n:Item) SET n = r", {"rows": rows})
    bolt.write(
        "UNWIND $p AS p MATCH (x:Item) WHERE x.id = p.a MATCH (y:Item) WHERE y.id = p.b "
        "CREATE (x)-[:LINK {split: 'train'}]->(y)",
        {"p": [{"a": BASE + a, "b": BASE + b} for a, b, _ in g.edges()]},
    )


def _predictions(bolt) -> dict[int, tuple]:
    cls, score, _ = property_names("predicted_class")
    rows = bolt.read(f"MATCH (n:Item) RETURN n.id AS id, n.`{cls}` AS c, n.`{score}` AS s")
    return {r["id"]: (r["c"], r["s"]) for r in rows}


def _scenario(bolt, model) -> None:
    """The training graph on the server with its FastRP property, every item classified, then a
    new item linked to three items, the changes in the log :data:`LOG`."""
    _load_items(bolt)
    write_structural_features(bolt, "Item", structural_call(OPTIONS, seed=SEED))
    classify_graph(bolt, model, progress=False)
    [row] = bolt.write("CREATE (n:Item {id: $k, label: 0}) RETURN id(n) AS i", {"k": NEW})
    new = row["i"]
    changes = [Change("created", "node", new, key=NEW, labels=("Item",), properties=("id",))]
    for friend in FRIENDS:
        rel = _link(bolt, "Item", NEW, BASE + friend, split="train")
        end = _node_id(bolt, "Item", BASE + friend)
        changes.append(
            Change("created", "relationship", rel, rel_type="LINK", start_id=new, end_id=end)
        )
    ChangeLog(bolt, LOG).record(changes)


def _fastrp(bolt) -> dict[int, list[float] | None]:
    rows = bolt.read(f"MATCH (n:Item) RETURN n.id AS id, n.{STRUCTURAL_PROPERTY} AS v")
    return {r["id"]: None if r["v"] is None else list(r["v"]) for r in rows}


def test_refresh_over_bolt_equals_a_full_recompute_and_rescore(bolt, tmp_path):
    with BundleBackend(trained_bundle(str(tmp_path))) as model:
        _scenario(bolt, model)
        before = _fastrp(bolt)
        refresher = Refresher(bolt, model, log=LOG, progress=False)
        summary = refresher.once()
        assert summary.committed and summary.structural > len(FRIENDS)
        full = structural_features(bolt, "Item", {**STRUCTURAL_OPTIONS, **OPTIONS, "seed": SEED})
        assert _fastrp(bolt) == dict(zip(full.node_ids.tolist(), full.features.tolist()))
        refreshed = _predictions(bolt)
        # Memgraph's triggers would log the pass's writes (ArcadeDB has none): log the vectors
        # it changed; the next pass knows them as its own and re-scores nothing
        moved = [k for k, v in _fastrp(bolt).items() if v != before[k]]
        ChangeLog(bolt, LOG).record(
            Change("updated", "node", _node_id(bolt, "Item", k), labels=("Item",),
                   properties=(STRUCTURAL_PROPERTY,))
            for k in moved
        )  # fmt: skip
        second = refresher.once()
        assert second.committed and second.changes == len(moved) > len(FRIENDS)
        assert (second.structural, second.classified) == (0, 0)
        assert _predictions(bolt) == refreshed
        classify_graph(bolt, model, overwrite=True, progress=False)
        assert_same_predictions(refreshed, _predictions(bolt))


def test_the_command_opts_out_with_no_structural(
    bolt, arcadedb_server, tmp_path, monkeypatch, capsys
):
    from tests.graphs import use_credentials

    use_credentials(monkeypatch, arcadedb_server)
    path = trained_bundle(str(tmp_path))
    with BundleBackend(path) as model:
        _scenario(bolt, model)
    before = _fastrp(bolt)
    code = cli.main(
        ["refresh", "--graph", arcadedb_server.uri, "--model", path, "--log", LOG,
         "--no-progress", "--no-structural"]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0, out
    assert "4 change(s)" in out and "0 FastRP vector(s) recomputed" in out
    assert _fastrp(bolt) == before and before[NEW] is None
