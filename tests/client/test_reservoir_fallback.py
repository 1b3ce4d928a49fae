"""The bounded mode over the Bolt fallback (ArcadeDB, plain Cypher) gives the embedded query
module's exact reservoirs and bytes: the reservoir is data in the graph, built, maintained and
drawn from by the same code (memgraph_tf/procedures/reservoir.py), edge feature columns of the
slots drawn from it included (memgraph_tf/procedures/edge_columns.py)."""

from __future__ import annotations

import dataclasses
import datetime
import random
import re

import pytest

from memgraph_tf.client import EmbeddedSource
from memgraph_tf.client.change_log import Change, ChangeLog, apply_to_reservoirs, build_reservoirs
from memgraph_tf.embedded import EmbeddedGraph
from memgraph_tf.errors import GraphDataError
from memgraph_tf.procedures.reservoir import FORMAT, Reservoir, WeightedReservoir, property_name
from tests.golden.generate import payment_spec

pytestmark = pytest.mark.arcadedb

LABEL = "ResNode"
LOG = "reservoirs"
HUBS = {0: 40, 1: 25}  # hub id -> leaves; the leaves' ids follow from 100 on
STEP = {"edge_types": ["R"], "direction": "both", "id_property": "id"}
BUILD = {**STEP, "capacity": 12, "seed": 9, "label": LABEL, "batch_nodes": 16}
NAME = property_name(("R",), "both", "id")


def _edges() -> list[tuple[int, int]]:
    edges, leaf = [], 100
    for hub, degree in HUBS.items():
        for _ in range(degree):
            edges.append((hub, leaf))
            leaf += 1
    return edges + [(100, 101), (0, 1)]


def weight(a: int, b: int) -> float:
    """The ``w`` of the relationship ``a -> b`` (a weighted step's weight): 0.5 .. 2.0."""
    return 0.5 * (1 + (a + b) % 4)


@pytest.fixture(scope="module")
def twins(bolt_source):
    edges = _edges()
    ids = sorted({i for e in edges for i in e})
    embedded = EmbeddedGraph()
    node = {i: embedded.add_node([LABEL], {"id": i}) for i in ids}
    for a, b in edges:
        embedded.add_edge(node[a], node[b], "R", {"w": weight(a, b)})
    bolt_source.write(f"MATCH (n:{LABEL}) DETACH DELETE n")
    bolt_source.write(f"UNWIND $ids AS i CREATE (:{LABEL} {{id: i}})", {"ids": ids})
    bolt_source.write(
        f"UNWIND $pairs AS p MATCH (a:{LABEL} {{id: p[0]}}), (b:{LABEL} {{id: p[1]}}) "
        "CREATE (a)-[:R {w: p[2]}]->(b)",
        {"pairs": [[a, b, weight(a, b)] for a, b in edges]},
    )
    yield EmbeddedSource(embedded), bolt_source, node
    bolt_source.write(f"MATCH (n:{LABEL}) DETACH DELETE n")
    bolt_source.write("MATCH (c:MemgraphTfChange) WHERE c.log = $log DELETE c", {"log": LOG})
    bolt_source.write("MATCH (c:MemgraphTfChangeCounter) WHERE c.log = $log DELETE c", {"log": LOG})


def members(source, key: int) -> list[int]:
    """The hub's reservoir members (neighbour keys, sorted), read from the graph."""
    if isinstance(source, EmbeddedSource):
        [internal] = source.graph.find_nodes(LABEL, "id", key)
        value = source.graph.get_property(internal, NAME)
    else:
        [row] = source.read(f"MATCH (n:{LABEL}) WHERE n.id = $k RETURN n.{NAME} AS r", {"k": key})
        value = row["r"]
    return sorted(Reservoir.decode(list(value), f"node {key}", NAME).keys)


def sample(source, fanouts, **extra) -> bytes:
    opts = {**STEP, "label": LABEL, "seed": 4, "reservoir_threshold": 20, **extra}
    return source.sample_blob([0, 1, 100], fanouts, [], opts)


def test_build_maintenance_and_draws_are_byte_identical(twins):
    embedded, bolt, node = twins
    for source in (embedded, bolt):
        totals = build_reservoirs(source, BUILD, log=ChangeLog(source, LOG))
        assert totals["reservoirs"] == 2  # hubs 0 (41 relationships) and 1 (26)
    assert members(bolt, 0) == members(embedded, 0) and len(members(bolt, 0)) == 12
    assert members(bolt, 1) == members(embedded, 1)
    assert sample(bolt, [5, 3]) == sample(embedded, [5, 3])
    assert sample(bolt, [5, 3]) != sample(embedded, [5, 3], reservoir_threshold=None)

    # the same changes logged on both: 6 new leaves of hub 0, then the deletion of 3 of them
    # (only logged: neither store deletes them in this test; the reservoirs follow the log)
    for source in (embedded, bolt):
        log = ChangeLog(source, LOG)
        changes = []
        for leaf in range(500, 506):
            if source is embedded:
                new = embedded.graph.add_node([LABEL], {"id": leaf})
                node[leaf] = new
                rel = embedded.graph.add_edge(node[0], new, "R", {"w": 1.0})
                hub, other = node[0], new
            else:
                [row] = bolt.write(
                    f"MATCH (h:{LABEL} {{id: 0}}) CREATE (h)-[r:R {{w: 1.0}}]->"
                    f"(m:{LABEL} {{id: $k}}) RETURN id(r) AS r, id(h) AS h, id(m) AS m",
                    {"k": leaf},
                )
                rel, hub, other = row["r"], row["h"], row["m"]
            changes.append(
                Change(
                    "created",
                    "relationship",
                    rel,
                    rel_type="R",
                    start_id=hub,
                    end_id=other,
                    start_key=0,
                    end_key=leaf,
                )
            )
        changes += [
            Change(
                "deleted",
                "relationship",
                c.element_id,
                rel_type="R",
                start_id=c.start_id,
                end_id=c.end_id,
                start_key=0,
                end_key=c.end_key,
            )
            for c in changes[:3]
        ]
        log.record(changes)
        totals, _ = apply_to_reservoirs(log, STEP, after=0)
        assert (totals["applied"], totals["updated"]) == (9, 1)  # the leaves have no reservoir
    assert members(bolt, 0) == members(embedded, 0)
    assert sample(bolt, [5, 3]) == sample(embedded, [5, 3])


def test_bad_input_is_the_same_error_on_both(twins):
    embedded, bolt, _ = twins
    for source in (embedded, bolt):
        build_reservoirs(source, BUILD)
        with pytest.raises(
            GraphDataError,
            match=r"options\.reservoir_threshold: node with id = 0 has a reservoir "
            rf"\('{NAME}'\) of capacity 12, below hop 1's fanout 13",
        ):
            sample(source, [13])
        with pytest.raises(
            GraphDataError, match=r"options\.reservoir_threshold: expected an integer >= 0"
        ):
            sample(source, [3], reservoir_threshold=-2)
        # a member deleted since the reservoir was written (ids only: nothing else reads it)
        if isinstance(source, EmbeddedSource):
            [hub, a, b] = (source.graph.find_nodes(LABEL, "id", k)[0] for k in (1, 100, 101))
            stale = [FORMAT, 3, 30, 0, 0, 1, 0, 3, 100, 101, 999, 1, 2, 3, a, b, 10**12]
            source.graph.set_property(hub, NAME, stale)
        else:
            rows = source.read(
                f"MATCH (n:{LABEL}) WHERE n.id IN [100, 101] RETURN n.id AS k, id(n) AS i"
            )
            a, b = (row["i"] for row in sorted(rows, key=lambda row: row["k"]))
            stale = [FORMAT, 3, 30, 0, 0, 1, 0, 3, 100, 101, 999, 1, 2, 3, a, b, 10**12]
            source.write(f"MATCH (n:{LABEL}) WHERE n.id = 1 SET n.{NAME} = $v", {"v": stale})
        with pytest.raises(
            GraphDataError,
            match=r"^node with id = 999 \(internal id 1000000000000\): in a reservoir "
            r"\(options\.reservoir_threshold\) but no longer in the graph under that key",
        ):
            source.sample_blob([1], [3], [], {**STEP, "label": LABEL, "reservoir_threshold": 0})


def test_typed_steps_are_byte_identical(twins):
    embedded, bolt, _ = twins
    step = {**BUILD, "neighbour_label": LABEL}
    spec = {f"(:{LABEL})-[:R]-(:{LABEL})": [5, 2]}
    opts = {"label": LABEL, "id_property": "id", "seed": 6, "reservoir_threshold": 20}
    blobs = []
    for source in (embedded, bolt):
        assert build_reservoirs(source, step)["reservoirs"] >= 1
        blobs.append(source.sample_typed([0, 100], spec, {}, opts))
    assert blobs[0] == blobs[1]
    exact = embedded.sample_typed([0, 100], spec, {}, {**opts, "reservoir_threshold": None})
    assert blobs[0] != exact


WEIGHTED = {**STEP, "neighbour_label": LABEL, "weight": "w"}
WEIGHTED_NAME = property_name(("R",), "both", "id", LABEL, "w")


def stored_weighted(source, key: int) -> WeightedReservoir:
    """The hub's weighted reservoir as stored in the graph."""
    if isinstance(source, EmbeddedSource):
        [internal] = source.graph.find_nodes(LABEL, "id", key)
        value = source.graph.get_property(internal, WEIGHTED_NAME)
    else:
        [row] = source.read(
            f"MATCH (n:{LABEL}) WHERE n.id = $k RETURN n.{WEIGHTED_NAME} AS r", {"k": key}
        )
        value = row["r"]
    return WeightedReservoir.decode(list(value), f"node {key}", WEIGHTED_NAME)


def weighted(source, key: int) -> WeightedReservoir:
    """The hub's weighted reservoir, read from the graph, but its relationship and internal
    ids (each store numbers its own)."""
    return dataclasses.replace(stored_weighted(source, key), rels=[], internals=[])


def weighted_ids(source, key: int) -> tuple[list[int], list[int]]:
    """The hub's weighted reservoir's relationship and neighbour internal ids."""
    res = stored_weighted(source, key)
    return res.rels, res.internals


def weighted_blobs(source, threshold: int | None = 20) -> list[bytes]:
    """sample_typed's blobs over the weighted step, without and with replacement."""
    opts = {"label": LABEL, "id_property": "id", "seed": 6, "reservoir_threshold": threshold}
    return [
        source.sample_typed(
            [0, 1, 100], {f"(:{LABEL})-[:R {{weight: w{extra}}}]-(:{LABEL})": [5, 2]}, {}, opts
        )
        for extra in ("", ", replace: true")
    ]


def test_weighted_reservoirs_build_maintain_and_draw_byte_identically(twins):
    embedded, bolt, node = twins
    for source in (embedded, bolt):
        log = ChangeLog(source, LOG)
        totals = build_reservoirs(source, {**BUILD, **WEIGHTED}, log=log)
        assert totals["reservoirs"] == 2
    assert weighted(bolt, 0) == weighted(embedded, 0) and len(weighted(bolt, 0).keys) == 12
    assert weighted(bolt, 1) == weighted(embedded, 1)
    assert weighted_blobs(bolt) == weighted_blobs(embedded)
    exact = weighted_blobs(embedded, None)
    assert all(a != b for a, b in zip(weighted_blobs(embedded), exact))
    # 5 new heavy payees of hub 0, one of them deleted again, and a member's weight set to 0
    member_key = next(k for k in weighted(embedded, 0).keys if k >= 100)  # (a leaf)
    for source in (embedded, bolt):
        log = ChangeLog(source, LOG)
        changes = []
        for leaf in range(600, 605):
            if source is embedded:
                node[leaf] = embedded.graph.add_node([LABEL], {"id": leaf})
                rel = embedded.graph.add_edge(node[0], node[leaf], "R", {"w": 40.0})
                hub, other = node[0], node[leaf]
            else:
                [row] = bolt.write(
                    f"MATCH (h:{LABEL} {{id: 0}}) CREATE (h)-[r:R {{w: 40.0}}]->(m:{LABEL} "
                    "{id: $k}) RETURN id(r) AS r, id(h) AS h, id(m) AS m",
                    {"k": leaf},
                )
                rel, hub, other = row["r"], row["h"], row["m"]
            changes.append(Change("created", "relationship", rel, rel_type="R", start_id=hub,
                                  end_id=other, start_key=0, end_key=leaf))  # fmt: skip
        first = changes[0]
        changes.append(dataclasses.replace(first, kind="deleted"))
        res = weighted(source, 0)
        i = res.keys.index(member_key)
        rels, internals = weighted_ids(source, 0)
        if source is embedded:
            embedded.graph.merge_edge(node[0], node[member_key], "R", {"w": 0.0})
            embedded.graph.delete_edge(first.element_id)
        else:
            bolt.write("MATCH ()-[r]->() WHERE id(r) = $r SET r.w = 0.0", {"r": rels[i]})
            bolt.write("MATCH ()-[r]->() WHERE id(r) = $r DELETE r", {"r": first.element_id})
        changes.append(Change("updated", "relationship", rels[i], rel_type="R",
                              start_id=hub, end_id=internals[i], start_key=0,
                              end_key=member_key, properties=("w",)))  # fmt: skip
        log.record(changes)
        totals, _ = apply_to_reservoirs(log, WEIGHTED, after=0)
        assert totals["updated"] == 1 and totals["applied"] == 7
        assert member_key not in weighted(source, 0).keys
    assert weighted(bolt, 0) == weighted(embedded, 0)
    assert weighted_blobs(bolt) == weighted_blobs(embedded)


def test_a_detach_deleted_member_leaves_the_weighted_reservoir_byte_identically(twins):
    """A member's neighbour deleted with its relationships (Memgraph logs each relationship a
    ``DETACH DELETE`` removes, and the node: memgraph/memgraph src/query/plan/operator.cpp, the
    DeleteCursor's detach branch): the relationship leaves and ``n`` falls, though the neighbour
    no longer has ``neighbour_label`` (the embedded graph deletes no node: it loses the label)."""
    embedded, bolt, node = twins
    for source in (embedded, bolt):
        build_reservoirs(source, {**BUILD, **WEIGHTED}, log=ChangeLog(source, LOG))
    key = next(k for k in sorted(weighted(embedded, 0).keys) if 102 <= k < 140)  # (one hub's leaf)
    before = weighted(embedded, 0)
    for source in (embedded, bolt):
        res = stored_weighted(source, 0)
        i = res.keys.index(key)
        rel, leaf = res.rels[i], res.internals[i]
        if source is embedded:
            embedded.graph.delete_edge(rel)
            embedded.graph.remove_label(leaf, LABEL)
            hub = node[0]
        else:
            [row] = bolt.read(f"MATCH (h:{LABEL} {{id: 0}}) RETURN id(h) AS h")
            hub = row["h"]
            bolt.write(f"MATCH (n:{LABEL}) WHERE n.id = $k DETACH DELETE n", {"k": key})
        ChangeLog(source, LOG).record(
            [
                Change("deleted", "relationship", rel, rel_type="R", start_id=hub, end_id=leaf,
                       start_key=0, end_key=key),
                Change("deleted", "node", leaf, key=key, labels=(LABEL,)),
            ]
        )  # fmt: skip
        totals, _ = apply_to_reservoirs(ChangeLog(source, LOG), WEIGHTED, after=0)
        assert totals["updated"] >= 1
    after = weighted(embedded, 0)
    assert key not in after.keys and after.degree == before.degree - 1
    assert weighted(bolt, 0) == after


# -- edge feature columns in the bounded mode ----------------------------------------------------
SHOP, PAYER = "RShop", "RAcct"
PAY_IN = f"(:{SHOP})<-[:RPAY]-(:{PAYER})"
PAY_BOTH = f"(:{SHOP})-[:RPAY]-(:{PAYER})"
PAY_WEIGHTED = f"(:{SHOP})<-[:RPAY {{weight: w}}]-(:{PAYER})"
PAY_BACK = f"(:{PAYER})-[:RPAY]->(:{SHOP})"
PAY_SPEC = payment_spec("RPAY", "ts", 10.0, 5.0, {"name": "on", "kind": "temporal", "type": "Date"})
PAY_BUILD = {
    "capacity": 10,
    "seed": 5,
    "edge_types": ["RPAY"],
    "id_property": "id",
    "label": SHOP,
    "neighbour_label": PAYER,
}


def shop_data() -> tuple[list[dict], list[dict]]:
    """Shop 0 (a hub: 30 payers, payers 1 .. 5 twice with equal properties, and refunds to
    payers 1 .. 4) and shop 1000 (3 payers: below the threshold); ``(payer, shop, props)`` rows
    of mixed property types, an absent property left out (ArcadeDB stores no null). Parallel
    relationships carry equal properties: which of them a reservoir holds follows the stores'
    relationship ids, which differ between them (docs/hubs.md, "Bytes")."""
    rng = random.Random(20261129)
    nodes = [{"label": SHOP, "id": 0}, {"label": SHOP, "id": 1000}]
    nodes += [{"label": PAYER, "id": i} for i in range(1, 31)]
    rows = []
    for payer in range(1, 31):
        props = {
            "amount": rng.choice([rng.uniform(0, 100), rng.randint(0, 50), None]),
            "channel": rng.choice(["web", "atm", 7, None]),
            "flagged": rng.choice([True, False, None]),
            "ts": rng.randint(0, 100),
            "on": rng.choice([datetime.date(2026, 2, 1 + rng.randint(0, 27)), None]),
            "w": rng.choice([1, 2, 3]),
        }
        props = {k: v for k, v in props.items() if v is not None}
        rows += [{"a": payer, "b": 0, "p": props}] * (2 if payer <= 5 else 1)
        if payer <= 4:
            rows.append({"a": 0, "b": payer, "p": {"amount": -1.0 * payer, "w": 1}})
        if payer <= 3:
            rows.append({"a": payer, "b": 1000, "p": {"amount": 0.5, "ts": payer, "w": 2}})
    return nodes, rows


@pytest.fixture(scope="module")
def shop_twins(bolt_source):
    nodes, rows = shop_data()
    g = EmbeddedGraph()
    ids = {n["id"]: g.add_node([n["label"]], {"id": n["id"]}) for n in nodes}
    for r in rows:
        g.add_edge(ids[r["a"]], ids[r["b"]], "RPAY", r["p"])
    for label in (SHOP, PAYER):
        bolt_source.write(f"MATCH (n:{label}) DETACH DELETE n")
        ids_of = [n["id"] for n in nodes if n["label"] == label]
        bolt_source.write(f"UNWIND $ids AS i CREATE (:{label} {{id: i}})", {"ids": ids_of})
    bolt_source.write(
        f"UNWIND $rows AS r MATCH (a {{id: r.a}}), (b {{id: r.b}}) WHERE (a:{SHOP} OR "
        f"a:{PAYER}) AND (b:{SHOP} OR b:{PAYER}) AND labels(a) <> labels(b) "
        "CREATE (a)-[e:RPAY]->(b) SET e += r.p",
        {"rows": rows},
    )
    embedded = EmbeddedSource(g)
    for source in (embedded, bolt_source):
        for extra in (
            {"direction": "in"},
            {"direction": "both"},
            {"weight": "w", "direction": "in"},
        ):
            assert build_reservoirs(source, {**PAY_BUILD, **extra})["reservoirs"] == 1
    yield g, embedded, bolt_source
    for label in (SHOP, PAYER):
        bolt_source.write(f"MATCH (n:{label}) DETACH DELETE n")


def shop_sample(source, threshold: int | None = 10, fanouts: dict | None = None) -> bytes:
    nn = fanouts or {PAY_IN: [5, 0], PAY_BOTH: [4, 0], PAY_WEIGHTED: [3, 0], PAY_BACK: [0, 2]}
    opts = {"label": SHOP, "id_property": "id", "seed": 8, "reservoir_threshold": threshold}
    opts["edge_feature_spec"] = {p: PAY_SPEC for p in nn}
    return source.sample_typed([0, 1000], nn, None, opts)


def shop_members(source, name: str) -> Reservoir:
    """Shop 0's reservoir ``name``, read from the graph."""
    if isinstance(source, EmbeddedSource):
        [internal] = source.graph.find_nodes(SHOP, "id", 0)
        value = source.graph.get_property(internal, name)
    else:
        [row] = source.read(f"MATCH (n:{SHOP}) WHERE n.id = 0 RETURN n.{name} AS r")
        value = row["r"]
    return Reservoir.decode(list(value), "node 0", name)


def test_edge_features_from_reservoirs_are_byte_identical(shop_twins):
    g, embedded, bolt = shop_twins
    expected = shop_sample(embedded)
    assert shop_sample(bolt) == expected
    assert expected != shop_sample(embedded, None)  # (the hub drew from its reservoirs)
    # a member relationship deleted since the build: the same message, but the stores' ids
    name = property_name(("RPAY",), "in", "id", PAYER)
    res = [shop_members(source, name) for source in (embedded, bolt)]
    assert sorted(res[0].keys) == sorted(res[1].keys)
    key = min(k for k in res[0].keys if k > 5)  # (a payer of one relationship)
    fanout = {PAY_IN: [len(set(res[0].keys))]}
    for source, stored in zip((embedded, bolt), res):
        rel = stored.rels[stored.keys.index(key)]
        if source is embedded:
            g.delete_edge(rel)
        else:
            bolt.write("MATCH ()-[r]->() WHERE id(r) = $r DELETE r", {"r": rel})
        with pytest.raises(
            GraphDataError,
            match=rf"^relationship {rel} of \(:{SHOP}\)<-\[:RPAY\]-\(:{PAYER}\) between "
            rf"\(:{SHOP} \{{id: 0\}}\) and \(:{PAYER} \{{id: {key}\}}\): in \(:{SHOP} "
            r"\{id: 0\}\)'s reservoir \(options\.reservoir_threshold\) but no longer in the graph",
        ):
            shop_sample(source, fanouts=fanout)


# -- a reservoir behind the graph: refused the same on both --------------------------------------
STALE_HUB, STALE_LEAF = "StaleHub", "StaleLeaf"
STALE_STEP = {"edge_types": ["SRT"], "direction": "in", "id_property": "id", "label": STALE_HUB}
STALE_TYPED = {f"(:{STALE_HUB})<-[:SRT]-(:{STALE_LEAF})": [12]}


def stale_twins(bolt) -> tuple[EmbeddedSource, dict[int, int]]:
    """Hub 0 (``:StaleHub``) paid by leaves 100 .. 119 (``:StaleLeaf``), on a fresh embedded
    graph and, rewritten, on the server; both steps' reservoirs (capacity 12) built on both.
    Returns the embedded source and its id -> node."""
    g = EmbeddedGraph()
    node = {0: g.add_node([STALE_HUB], {"id": 0})}
    for i in range(100, 120):
        node[i] = g.add_node([STALE_LEAF], {"id": i})
        g.add_edge(node[i], node[0], "SRT")
    for label in (STALE_HUB, STALE_LEAF):
        bolt.write(f"MATCH (n:{label}) DETACH DELETE n")
    bolt.write(f"CREATE (:{STALE_HUB} {{id: 0}})")
    bolt.write(f"UNWIND range(100, 119) AS i CREATE (:{STALE_LEAF} {{id: i}})")
    bolt.write(f"MATCH (h:{STALE_HUB}), (l:{STALE_LEAF}) CREATE (l)-[:SRT]->(h)")
    embedded = EmbeddedSource(g)
    for source in (embedded, bolt):
        for extra in ({}, {"neighbour_label": STALE_LEAF}):
            assert build_reservoirs(source, {**STALE_STEP, **extra, "capacity": 12})["reservoirs"]
    return embedded, node


def stale_calls(source) -> list[str | bytes]:
    """The untyped and the typed draw of hub 0 (fanout 12: every member), or their errors with
    the stores' own ids (internal, relationship) left out."""
    opts = {"label": STALE_HUB, "id_property": "id", "seed": 3, "reservoir_threshold": 10}
    step = {"edge_types": ["SRT"], "direction": "in"}
    calls = (
        lambda: source.sample_blob([0], [12], [], {**opts, **step}),
        lambda: source.sample_typed([0], STALE_TYPED, None, opts),
    )
    out = []
    for call in calls:
        try:
            out.append(call())
        except GraphDataError as exc:
            text = re.sub(r"internal id \d+", "internal id _", str(exc))
            out.append(re.sub(r"^relationship \d+", "relationship _", text))
    return out


def test_a_member_whose_key_changed_is_refused_the_same_on_both(bolt_source):
    """Untyped and typed, on the Bolt fallback as embedded (before: the fallback's untyped draw
    and both typed draws kept the member under its stored key in silence)."""
    embedded, node = stale_twins(bolt_source)
    before = stale_calls(embedded)
    assert stale_calls(bolt_source) == before and all(isinstance(b, bytes) for b in before)
    for i in range(100, 120):
        embedded.graph.set_property(node[i], "id", i + 800)
    bolt_source.write(f"MATCH (n:{STALE_LEAF}) SET n.id = n.id + 800")
    untyped, typed = stale_calls(embedded)
    assert stale_calls(bolt_source) == [untyped, typed]
    lags = (
        r" \(internal id _\): in a reservoir \(options\.reservoir_threshold\) but no longer in "
        r"the graph under that key: the reservoir lags the graph"
    )
    assert re.match(r"^node with id = 1\d\d" + lags, untyped), untyped
    assert re.match(rf"^\(:{STALE_LEAF} \{{id: 1\d\d\}}\)" + lags, typed), typed


def test_a_member_relationship_deleted_since_is_refused_the_same_on_both(bolt_source):
    """Its neighbour still there (before: both draws held a node no longer a neighbour)."""
    embedded, node = stale_twins(bolt_source)
    name = property_name(("SRT",), "in", "id", STALE_LEAF)
    res = Reservoir.decode(embedded.graph.get_property(node[0], name), "node 0", name)
    first = min(res.keys)  # (fanout 12: the slots hold the members in key order)
    embedded.graph.delete_edge(res.rels[res.keys.index(first)])
    bolt_source.write(
        f"MATCH (l:{STALE_LEAF} {{id: $k}})-[r:SRT]->(h:{STALE_HUB}) DELETE r", {"k": first}
    )
    untyped, typed = stale_calls(embedded)
    assert stale_calls(bolt_source) == [untyped, typed]
    assert untyped == (
        f"relationship _ of ()<-[:SRT]-() between node with id = 0 and node with id = {first}: "
        "in node with id = 0's reservoir (options.reservoir_threshold) but no longer in the "
        "graph: the reservoir lags the graph (apply the change log with "
        "tf_features.update_reservoirs, or rebuild it with tf_features.build_reservoirs)"
    )
    assert typed.startswith(
        f"relationship _ of (:{STALE_HUB})<-[:SRT]-(:{STALE_LEAF}) between (:{STALE_HUB} "
        f"{{id: 0}}) and (:{STALE_LEAF} {{id: {first}}}): in (:{STALE_HUB} {{id: 0}})'s reservoir"
    )
