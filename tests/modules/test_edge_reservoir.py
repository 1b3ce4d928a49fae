"""Edge feature columns in the bounded mode (``options.edge_feature_spec`` with
``options.reservoir_threshold``; memgraph_tf/procedures/edge_columns.py, reservoir.py) on the
embedded runtime: a slot a hub fills from its reservoir carries the properties of the member
relationship it stands for -- not of another relationship to the same neighbour --, uniform and
weighted reservoirs, either direction; below the threshold the bytes are the exact path's; a
bad value of a member names the relationship as the exact path does, and a member relationship
deleted since the build names it."""

from __future__ import annotations

import re

import numpy as np
import pytest

from memgraph_tf import blob
from memgraph_tf.client import EmbeddedSource
from memgraph_tf.embedded import EmbeddedGraph, ProcedureError
from memgraph_tf.errors import GraphDataError
from memgraph_tf.procedures.reservoir import Reservoir, WeightedReservoir, property_name
from memgraph_tf.typed_sampling import EdgeStep, TypedSamplingSpec

ACCOUNTS = 40
PARALLEL = 12  # accounts 1 .. 12 send the merchant three transfers each
CAPACITY = 12
THRESHOLD = 10
IN = "(:Merchant)<-[:TRANSFER]-(:Acct)"
BOTH = "(:Merchant)-[:TRANSFER]-(:Acct)"
WEIGHTED = "(:Merchant)<-[:TRANSFER {weight: w}]-(:Acct)"
BACK = "(:Acct)-[:TRANSFER]->(:Merchant)"
SPEC = {
    "label": "TRANSFER",
    "properties": [
        {"name": "amount", "kind": "numeric"},
        {"name": "channel", "kind": "categorical", "vocabulary": ["web", "atm"]},
    ],
}
BUILD = {
    "capacity": CAPACITY,
    "seed": 3,
    "edge_types": ["TRANSFER"],
    "id_property": "id",
    "label": "Merchant",
    "neighbour_label": "Acct",
}


def shop(bad: frozenset[int] = frozenset()) -> tuple[EmbeddedGraph, dict[int, int]]:
    """Merchant 0 (the hub: every account pays it, accounts 1 .. 12 three times each, and it
    refunds accounts 1 .. 6), merchant 100 (paid by accounts 1 .. 3: below the threshold).
    Amounts are distinct: ``a + 1000 * j`` for account ``a``'s ``j``-th transfer (negative for
    a refund; of the relationships ``bad`` (ids): ``'ten'``); ``w`` (the weighted step's
    weight) 1 .. 3. Returns the graph and id -> node."""
    g = EmbeddedGraph()
    node = {0: g.add_node(["Merchant"], {"id": 0}), 100: g.add_node(["Merchant"], {"id": 100})}
    made: list[tuple[int, int, dict]] = []  # (relationship ids: creation order)
    for a in range(1, ACCOUNTS + 1):
        node[a] = g.add_node(["Acct"], {"id": a})
        for j in range(3 if a <= PARALLEL else 1):
            props = {"amount": a + 1000.0 * j, "channel": ["web", "atm"][j % 2], "w": 1 + j}
            made.append((node[a], node[0], props))
        if a <= 6:
            made.append((node[0], node[a], {"amount": -float(a), "w": 1}))
        if a <= 3:
            made.append((node[a], node[100], {"amount": 0.5 * a, "channel": "atm", "w": 2}))
    for i, (start, end, props) in enumerate(made):
        assert (
            g.add_edge(start, end, "TRANSFER", props | ({"amount": "ten"} if i in bad else {})) == i
        )
    return g, node


@pytest.fixture(scope="module")
def built() -> tuple[EmbeddedGraph, dict[int, int]]:
    g, node = shop()
    for extra in ({"direction": "in"}, {"direction": "both"}, {"direction": "in", "weight": "w"}):
        [page] = g.call("tf_features.build_reservoirs", {**BUILD, **extra})
        assert page["reservoirs"] == 1  # the hub only
    return g, node


def relationships(g: EmbeddedGraph) -> dict[int, tuple[int, int, dict]]:
    """Every relationship, read from the graph: id -> (start, end, properties) (the embedded
    store numbers relationships in creation order, and this graph deletes none)."""
    return dict(enumerate(g.edges()))


def members(g: EmbeddedGraph, hub: int, pattern: str) -> dict[int, list[int]]:
    """The hub's reservoir of the step ``pattern``, read from the graph: neighbour internal id
    -> its member relationship ids."""
    direction = "both" if pattern == BOTH else "in"
    weight = "w" if pattern == WEIGHTED else None
    name = property_name(("TRANSFER",), direction, "id", "Acct", weight)
    value = g.get_property(hub, name)
    res = (WeightedReservoir if weight else Reservoir).decode(value, "hub", name)
    out: dict[int, list[int]] = {}
    for rel, internal in zip(res.rels, res.internals):
        out.setdefault(internal, []).append(rel)
    return out


def carried(rels: dict, parent: int, candidates: list[int]) -> tuple[float, bytes]:
    """The columns (amount, channel) a slot carries among its ``candidates``: an outgoing one
    first, then the smallest columns (edge_columns.py's rule; the amounts are distinct)."""
    best = min(candidates, key=lambda r: (rels[r][0] != parent, rels[r][2]["amount"]))
    props = rels[best][2]
    return props["amount"], props.get("channel", "").encode()


def edge_section(kind: str, hop: int, pattern: str, nn: dict) -> str:
    """The name of the edge section of ``kind`` at ``hop`` of the step ``pattern`` of the
    sampling spec ``nn`` (its index: the spec's canonical step order)."""
    steps = TypedSamplingSpec.from_num_neighbors("Merchant", nn).steps
    return f"edge_{kind}_h{hop}_s{list(steps).index(EdgeStep.parse(pattern))}"


def sample(g: EmbeddedGraph, pattern: str, seed: int, threshold: int | None, **extra) -> bytes:
    opts = {
        "label": "Merchant",
        "id_property": "id",
        "seed": seed,
        "reservoir_threshold": threshold,
        "edge_feature_spec": {pattern: SPEC, BACK: SPEC},
        **extra,
    }
    return EmbeddedSource(g).sample_typed([0, 100], {pattern: [6, 0], BACK: [0, 2]}, None, opts)


@pytest.mark.parametrize("pattern", [IN, BOTH, WEIGHTED])
def test_a_hub_slot_carries_its_member_relationship_and_other_slots_the_exact_one(built, pattern):
    g, node = built
    rels = relationships(g)
    hub_members = members(g, node[0], pattern)
    checked = differs = 0
    nn = {pattern: [6, 0], BACK: [0, 2]}
    num, cat, has = (edge_section(k, 1, pattern, nn) for k in ("num", "cat", "has"))
    back_num = edge_section("num", 2, BACK, nn)
    for seed in range(8):
        got = blob.unpack(sample(g, pattern, seed, THRESHOLD))
        hop1, hop2 = got["ids_h1_Acct"], got["ids_h2_Merchant"]
        for row, parent in enumerate((node[0], node[100])):
            for slot, key in enumerate(hop1[row].tolist()):
                if key == -1:
                    continue
                n = node[key]
                every = [r for r, (a, b, _) in rels.items() if {a, b} == {parent, n}]
                if pattern != BOTH:  # (the step's direction: the account pays)
                    every = [r for r in every if rels[r][0] == n]
                own = hub_members[n] if parent == node[0] else every
                want = carried(rels, parent, own)
                differs += want != carried(rels, parent, every)
                assert got[num][row, slot, 0] == want[0]
                assert got[cat][row, slot, 0] == want[1]
                assert got[has][row, slot].tolist() == [True, bool(want[1])]
                for j, m in enumerate(hop2[row, 2 * slot : 2 * slot + 2].tolist()):
                    if m != -1:  # hop 2: an account's own transfers (the exact path)
                        back = [r for r, (a, b, _) in rels.items() if (a, b) == (n, node[m])]
                        assert got[back_num][row, 2 * slot + j, 0] == min(
                            rels[r][2]["amount"] for r in back
                        )
                checked += 1
    assert checked == 8 * (6 + 3)
    # the hub's parallel transfers: some slot's member is not the one the exact rule picks
    assert differs > 0


def test_below_the_threshold_the_bytes_are_the_exact_paths(built):
    g, _ = built
    for pattern in (IN, BOTH, WEIGHTED):
        exact = sample(g, pattern, 5, None)
        assert sample(g, pattern, 5, 10_000) == exact  # (the hub's 60-odd relationships)
        assert sample(g, pattern, 5, THRESHOLD) != exact


def test_the_draws_are_those_of_a_bounded_call_without_edge_features(built):
    g, _ = built
    with_edges = blob.unpack(sample(g, IN, 2, THRESHOLD))
    plain = blob.unpack(sample(g, IN, 2, THRESHOLD, edge_feature_spec=None))
    assert list(plain) == [n for n in with_edges if not n.startswith("edge_")]
    for name, value in plain.items():
        np.testing.assert_array_equal(with_edges[name], value)


def hub_only(g: EmbeddedGraph, threshold: int | None) -> bytes:
    """Hop 1 only, from the hub: every distinct member neighbour (fanout = their number), or
    without a threshold (the exact path) every account."""
    fanout = len(members(g, g.find_nodes("Merchant", "id", 0)[0], IN)) if threshold else ACCOUNTS
    opts = {"label": "Merchant", "id_property": "id", "seed": 1, "edge_feature_spec": {IN: SPEC}}
    opts["reservoir_threshold"] = threshold
    return EmbeddedSource(g).sample_typed([0], {IN: [fanout]}, None, opts)


def single_member(g: EmbeddedGraph, node: dict[int, int]) -> int:
    """The id of an account with one transfer to the hub, a member of its reservoir."""
    hub_members = members(g, node[0], IN)
    return next(a for a in range(PARALLEL + 7, ACCOUNTS + 1) if node[a] in hub_members)


def test_a_slot_reads_its_member_relationships_only():
    clean, node = shop()
    clean.call("tf_features.build_reservoirs", {**BUILD, "direction": "in"})
    hub_members = members(clean, node[0], IN)
    rels = relationships(clean)
    # the non-member parallel transfers of the accounts the reservoir holds: made bad
    own = {r for rs in hub_members.values() for r in rs}
    bad = frozenset(
        r for r, (a, b, _) in rels.items() if a in hub_members and b == node[0] and r not in own
    )
    assert bad  # (the reservoir holds accounts of parallel transfers, not all of them)
    g, _ = shop(bad)
    g.call("tf_features.build_reservoirs", {**BUILD, "direction": "in"})
    assert members(g, node[0], IN) == hub_members  # (the build reads no amount)
    assert blob.unpack(hub_only(g, THRESHOLD))  # every member drawn, no bad value read
    with pytest.raises(GraphDataError, match=r"expected a number, got str 'ten'$"):
        hub_only(g, None)  # (the exact path reads every transfer of a drawn account)


def test_a_bad_member_value_names_the_relationship_as_the_exact_path_does():
    g, node = shop()
    g.call("tf_features.build_reservoirs", {**BUILD, "direction": "in"})
    inside = single_member(g, node)
    g.merge_edge(node[inside], node[0], "TRANSFER", {"amount": "ten"})
    message = (
        rf"^relationship \(:Acct \{{id: {inside}\}}\)-\[:TRANSFER\]->\(:Merchant \{{id: 0\}}\) "
        r"property 'amount' \(kind 'numeric'\): expected a number, got str 'ten'$"
    )
    for threshold in (THRESHOLD, None):  # the same message as the exact path's
        with pytest.raises(GraphDataError, match=message):
            hub_only(g, threshold)


def test_a_member_relationship_deleted_since_the_build_is_named():
    g, node = shop()
    g.call("tf_features.build_reservoirs", {**BUILD, "direction": "in"})
    inside = single_member(g, node)
    [rel] = members(g, node[0], IN)[node[inside]]
    g.delete_edge(rel)
    with pytest.raises(
        GraphDataError,
        match=rf"^relationship {rel} of \(:Merchant\)<-\[:TRANSFER\]-\(:Acct\) between "
        rf"\(:Merchant \{{id: 0\}}\) and \(:Acct \{{id: {inside}\}}\): in "
        r"\(:Merchant \{id: 0\}\)'s "
        r"reservoir \(options\.reservoir_threshold\) but no longer in the graph: the reservoir "
        r"lags the graph \(apply the change log with tf_features\.update_reservoirs",
    ):
        hub_only(g, THRESHOLD)


PUBLIC_PATH_MODULE = """
import mgp
from memgraph_tf import blob, procedures
from memgraph_tf.procedures.mgp_access import MgpGraphAccess


@mgp.read_proc
def sample_typed(ctx: mgp.ProcCtx, seeds: mgp.List[mgp.Any], num_neighbors: mgp.Map,
                 properties: mgp.Nullable[mgp.Map] = None, options: mgp.Nullable[mgp.Map] = None
                 ) -> mgp.Record(blob=str, count=int):
    runner = procedures.ProcedureRunner(lambda opts: MgpGraphAccess(ctx, opts, handles=False))
    data, count = runner.sample_typed(seeds, num_neighbors, properties, options)
    return mgp.Record(blob=blob.b64encode(data), count=count)
"""


def test_the_public_mgp_path_reads_the_same_member_relationships(built, tmp_path):
    """MgpGraphAccess through the public mgp API (where mgp.py exposes no handles) gives the
    handle path's bytes."""
    g, _ = built
    path = tmp_path / "public_edges.py"
    path.write_text(PUBLIC_PATH_MODULE)
    g.load_module(path)
    nn = {IN: [6, 0], BOTH: [4, 0], WEIGHTED: [3, 0], BACK: [0, 2]}
    opts = {"label": "Merchant", "id_property": "id", "seed": 9, "reservoir_threshold": THRESHOLD}
    opts["edge_feature_spec"] = {p: SPEC for p in nn}
    [handles] = g.call("tf_features.sample_typed", [0, 100], nn, None, opts)
    [public] = g.call("public_edges.sample_typed", [0, 100], nn, None, opts)
    assert handles == public
    got = blob.unpack_b64(handles["blob"])
    assert got[edge_section("num", 1, IN, nn)].shape == (2, 6, 1)


def test_the_public_mgp_path_refuses_a_lagging_reservoir_as_the_handle_path_does(tmp_path):
    """The draw's checks (memgraph_tf/procedures/reservoir.py, ``BoundedReads.verify``) through
    the public mgp API: a member relationship deleted, then a member's key changed, refused
    with the handle path's messages."""
    g, node = shop()
    g.call("tf_features.build_reservoirs", {**BUILD, "direction": "in"})
    path = tmp_path / "public_edges.py"
    path.write_text(PUBLIC_PATH_MODULE)
    g.load_module(path)
    inside = single_member(g, node)
    opts = {"label": "Merchant", "id_property": "id", "seed": 1, "reservoir_threshold": THRESHOLD}

    def messages() -> list[str]:
        out = []
        args = ([0], {IN: [len(members(g, node[0], IN))]}, None, opts)  # (every member)
        for procedure in ("tf_features.sample_typed", "public_edges.sample_typed"):
            with pytest.raises(ProcedureError) as info:
                g.call(procedure, *args)
            out.append(str(info.value).rstrip().rsplit("\n", 1)[-1])
        return out

    [rel] = members(g, node[0], IN)[node[inside]]
    g.delete_edge(rel)
    handles, public = messages()
    assert handles == public and public.endswith(
        f"relationship {rel} of (:Merchant)<-[:TRANSFER]-(:Acct) between (:Merchant {{id: 0}}) "
        f"and (:Acct {{id: {inside}}}): in (:Merchant {{id: 0}})'s reservoir "
        "(options.reservoir_threshold) but no longer in the graph: the reservoir lags the graph "
        "(apply the change log with tf_features.update_reservoirs, or rebuild it with "
        "tf_features.build_reservoirs)"
    )
    g.call("tf_features.build_reservoirs", {**BUILD, "direction": "in"})
    for a in range(1, ACCOUNTS + 1):
        g.set_property(node[a], "id", a + 500)
    handles, public = messages()
    assert handles == public and re.search(
        r": \(:Acct \{id: \d+\}\) \(internal id \d+\): in a reservoir "
        r"\(options\.reservoir_threshold\) but no longer in the graph under that key: ",
        public,
    )
