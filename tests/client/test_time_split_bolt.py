"""tf_features.split_edges by time over real Bolt (ArcadeDB, no tf_features procedures: the
client-side split runs the procedure's own code over plain Cypher): the same counts and the same
values written as the embedded query module, for integer, Date and LocalDateTime times, and the
same error for a relationship without the time property."""

from __future__ import annotations

import datetime

import numpy as np
import pytest

from memgraph_tf.client import EmbeddedSource
from memgraph_tf.embedded import EmbeddedGraph
from memgraph_tf.errors import GraphDataError

pytestmark = pytest.mark.arcadedb

SENT = "(:Acct)-[:SENT]->(:Acct)"
N = 40
DAY0 = datetime.date(2024, 3, 1)
NOON0 = datetime.datetime(2024, 3, 1, 12, 0)


@pytest.fixture(scope="module")
def twin_accounts(bolt_source):
    """The same accounts (id = 700 + i) and transfers (parallel ones included), each with an
    integer ``ts``, a Date ``day`` and a LocalDateTime ``at`` (all in the same order), in an
    EmbeddedGraph and in ArcadeDB."""
    rng = np.random.default_rng(4)
    rows = [
        {
            "a": 700 + int(a),
            "b": 700 + int(b),
            "ts": int(t),
            "day": DAY0 + datetime.timedelta(int(t)),
            "at": NOON0 + datetime.timedelta(hours=int(t)),
        }
        for a, b, t in zip(
            rng.integers(0, N, 150), rng.integers(0, N, 150), rng.integers(0, 60, 150)
        )
        if a != b
    ]
    embedded = EmbeddedGraph()
    nodes = {700 + i: embedded.add_node(["Acct"], {"id": 700 + i}) for i in range(N)}
    for r in rows:
        embedded.add_edge(
            nodes[r["a"]], nodes[r["b"]], "SENT", {k: r[k] for k in ("ts", "day", "at")}
        )
    bolt_source.write("MATCH (n:Acct) DETACH DELETE n")
    bolt_source.write("UNWIND $ids AS i CREATE (:Acct {id: i})", {"ids": sorted(nodes)})
    bolt_source.write(
        "UNWIND $rows AS r MATCH (x:Acct) WHERE x.id = r.a MATCH (y:Acct) WHERE y.id = r.b "
        "CREATE (x)-[:SENT {ts: r.ts, day: r.day, at: r.at}]->(y)",
        {"rows": rows},
    )
    yield EmbeddedSource(embedded), embedded, bolt_source
    bolt_source.write("MATCH (n:Acct) DETACH DELETE n")  # the session's database is shared


def _written(embedded, bolt, key):
    mine = sorted((a, b, p["ts"], p[key]) for a, b, p in embedded.edges("SENT"))
    ids = {v: 700 + v for v in range(N)}  # embedded internal ids are creation order
    mine = sorted((ids[a], ids[b], t, s) for a, b, t, s in mine)
    rows = bolt.read(
        f"MATCH (a:Acct)-[r:SENT]->(b:Acct) RETURN a.id AS a, b.id AS b, r.ts AS t, r.{key} AS s"
    )
    return mine, sorted((r["a"], r["b"], r["t"], r["s"]) for r in rows)


@pytest.mark.parametrize(
    ("prop", "cutoffs"),
    [
        ("ts", [20, 45]),
        ("day", [DAY0 + datetime.timedelta(20), DAY0 + datetime.timedelta(45)]),
        ("at", [NOON0 + datetime.timedelta(hours=20), NOON0 + datetime.timedelta(hours=45)]),
    ],
    ids=["integer", "Date", "LocalDateTime"],
)
def test_the_same_temporal_split_over_bolt(twin_accounts, prop, cutoffs):
    source, embedded, bolt = twin_accounts
    opts = {"time_property": prop, "cutoffs": cutoffs, "id_property": "id", "split_property": "w"}
    counts = source.split_edges(SENT, opts)
    assert min(counts["train"], counts["val"], counts["test"]) > 0
    assert bolt.split_edges(SENT, opts) == counts
    mine, theirs = _written(embedded, bolt, "w")
    assert theirs == mine
    firsts: dict[tuple[int, int], int] = {}
    for a, b, t, _ in mine:
        firsts[(a, b)] = min(t, firsts.get((a, b), t))
    for a, b, _, split in mine:  # every relationship carries its edge's first time's split
        first = firsts[(a, b)]
        assert split == ("train" if first < 20 else "val" if first < 45 else "test")


def test_the_same_error_for_a_relationship_without_the_time(twin_accounts):
    source, _embedded, bolt = twin_accounts
    messages = []
    for src in (source, bolt):
        with pytest.raises(
            GraphDataError,
            match=r"options.time_property: relationship \(node with id = 7\d\d\)-\[:SENT\]->"
            r"\(node with id = 7\d\d\): property 'missing': expected an integer",
        ) as info:
            opts = {"time_property": "missing", "cutoffs": [1, 2], "id_property": "id"}
            src.split_edges(SENT, opts)
        messages.append(str(info.value))
    assert messages[0] == messages[1]
