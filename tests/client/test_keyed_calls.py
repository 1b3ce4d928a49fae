"""Keys resolved by the caller: a call under ``options.id_property`` finds its keys' nodes before
the procedure runs (Memgraph: one query, ``OPTIONAL MATCH (n:Label) WHERE n.id = $seeds[i]``; the
embedded graph: its index), so the procedure does not scan the label for them -- with the blobs
and the errors of the procedure's own lookup."""

from __future__ import annotations

import pytest

from memgraph_tf.client.sources import (
    BoltSource,
    EmbeddedSource,
    keyed_lists,
    keyed_lookup_cypher,
    resolved_keys,
)
from memgraph_tf.embedded import EmbeddedGraph, ProcedureError
from memgraph_tf.errors import GraphDataError
from tests.client.memgraph_like import MemgraphLikeDriver

BOUGHT = "(:User)-[:BOUGHT]->(:Product)"
NN = {"source": {BOUGHT: [2]}, "target": {"(:Product)<-[:BOUGHT]-(:User)": [2]}}
PROPS = {"User": ["f"], "Product": ["g"]}
KEYS = {"id_property": "id", "label": "User"}
USER = {**KEYS, "seed": 3}
PAIRS = {"id_property": "id", "source_label": "User", "target_label": "Product", "seed": 3}
URI = "bolt://memgraph.example:7687"


def shop() -> EmbeddedGraph:
    """Users 0..3 (ids 1..4), guests 4 and 5 (both id 9, no edges), products 6..8 (ids 10..12),
    a category 9 (id 10: a :Product id on another label). Internal id = index."""
    g = EmbeddedGraph(count_api_calls=True)
    for i in range(4):
        g.add_node(["User"], {"id": i + 1, "f": [float(i), 1.0]})
    g.add_node(["Guest"], {"id": 9, "f": [0.0, 0.0]})
    g.add_node(["Guest"], {"id": 9, "f": [0.0, 0.0]})
    for i in range(3):
        g.add_node(["Product"], {"id": 10 + i, "g": [float(i)], "f": [1.0, float(i)]})
    g.add_node(["Category"], {"id": 10})
    for a, b in ((0, 6), (0, 7), (1, 7), (2, 8)):
        g.add_edge(a, b, "BOUGHT")
    return g


# (method, procedure, args) -- each keyed call and the same call as the procedure gets it
CALLS = [
    ("pack_blob", "tf_features.pack", ([2, 1, 2], ["f"], KEYS)),
    ("sample_blobs_per_node", "tf_features.sample_per_node", ([3, 1, 3], [2], ["f"], USER)),
    ("sample_typed", "tf_features.sample_typed", ([3, 1], {BOUGHT: [2]}, PROPS, USER)),
    ("sample_pairs", "tf_features.sample_pairs", ([1, 2, 1], [11, 12, 10], NN, PROPS, PAIRS)),
]


@pytest.fixture(scope="module")
def graph():
    return shop()


def _raw(graph: EmbeddedGraph, procedure: str, args: tuple) -> list:
    """The procedure given the keys themselves (its own lookup: a scan of the label)."""
    rows = graph.call(procedure, *args)
    assert graph.api_calls.get("Graph.iter_vertices", 0) >= 1  # the scan
    return rows


@pytest.mark.parametrize(("method", "procedure", "args"), CALLS, ids=[c[1] for c in CALLS])
def test_a_keyed_call_gives_the_procedure_s_blob_without_its_scan(graph, method, procedure, args):
    from memgraph_tf import blob

    raw = _raw(graph, procedure, args)
    want = [blob.b64decode(r["blob"]) for r in raw]
    embedded = EmbeddedSource(graph)
    got = getattr(embedded, method)(*args)
    assert graph.api_calls.get("Graph.iter_vertices", 0) == 0  # the nodes came in: no scan
    driver = MemgraphLikeDriver(graph, indexes=[("User", "id"), ("Product", "id")])
    bolt = getattr(BoltSource(driver, uri=URI, database=None), method)
    assert bolt(*args) == got
    assert "OPTIONAL MATCH (mgtf_n0:`User`) WHERE mgtf_n0.`id` = $" in driver.calls[-1]
    assert graph.api_calls.get("Graph.iter_vertices", 0) == 0
    assert (got if isinstance(got, list) else [got]) == want


def test_without_an_index_the_keys_go_to_the_procedure(graph, caplog):
    """Without an index on the key, Memgraph would scan the label once per key: the call keeps
    its keys (one scan, in the procedure) and the missing index is named once."""
    driver = MemgraphLikeDriver(graph, indexes=[("Product", "id")])
    bolt = BoltSource(driver, uri=URI, database=None)
    args = ([3, 1], {BOUGHT: [2]}, PROPS, USER)
    want = EmbeddedSource(graph).sample_typed(*args)
    with caplog.at_level("WARNING", logger="memgraph_tf.client.sources"):
        assert bolt.sample_typed(*args) == bolt.sample_typed(*args) == want
    assert driver.calls[-1].startswith("CALL tf_features.sample_typed($seeds, ")
    assert graph.api_calls.get("Graph.iter_vertices", 0) >= 1
    warned = [r.getMessage() for r in caplog.records if "no index on :User(id)" in r.getMessage()]
    assert len(warned) == 1 and "CREATE INDEX ON :User(id);" in warned[0]


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (("pack_blob", [1, 99], ["f"], KEYS), r"^nodes\[1\]: unknown node id 99 \(no :User node "),
        (  # a :Product id on a :User seed
            ("sample_typed", [1, 10], {BOUGHT: [2]}, PROPS, USER),
            r"^seeds\[1\]: unknown node id 10 \(no :User node has id = 10\)$",
        ),
        (  # two :Guest nodes hold id 9
            ("sample_blobs_per_node", [9], [2], ["f"], {**USER, "label": "Guest"}),
            r"^options\.id_property: expected unique ids, got id = 9 on the nodes with internal "
            r"ids 4 and 5$",
        ),
        (
            ("sample_pairs", [1, 2], [11, 3], NN, PROPS, PAIRS),
            r"^targets\[1\]: unknown node id 3 \(no :Product node has id = 3\)$",
        ),
    ],
)
def test_a_key_without_one_node_is_the_procedure_s_own_error(graph, call, message):
    method, *args = call
    procedure = {c[0]: c[1] for c in CALLS}[method]
    with pytest.raises(ProcedureError) as raw:
        graph.call(procedure, *args)
    with pytest.raises(GraphDataError, match=message) as keyed:
        getattr(EmbeddedSource(graph), method)(*args)
    assert str(keyed.value) == str(raw.value).rstrip("\n").rsplit("\n", 1)[-1].split(": ", 1)[1]


def test_a_seed_vertex_of_another_label_is_refused(graph):
    """Keys are looked up among the seed label's nodes; a vertex passed in is checked."""
    with pytest.raises(ProcedureError, match=r"seeds\[1\]: node with id = 10 is not a :User node"):
        graph.call(
            "tf_features.sample_typed", [graph.node(0), graph.node(6)], {BOUGHT: [2]}, PROPS, USER
        )


def test_the_embedded_index_answers_as_cypher_s_equality_through_writes():
    """``find_nodes`` is ``MATCH (n:label) WHERE n.name = value``: a float equal to the integer
    matches, a bool does not; the label filters; nodes added and properties written show."""
    g = EmbeddedGraph(modules=[])
    a = g.add_node(["U"], {"id": 5})
    b = g.add_node(["U"], {"id": 5.0})
    g.add_node(["U"], {"id": True})
    c = g.add_node(["V"], {"id": 5})
    assert g.find_nodes("U", "id", 5) == [a, b] and g.find_nodes(None, "id", 5) == [a, b, c]
    assert g.find_nodes("U", "id", 1) == [] and g.find_nodes("U", "id", "5") == []
    d = g.add_node(["U"], {"id": 5})
    g.set_property(a, "other", 1)
    assert g.find_nodes("U", "id", 5) == [a, b, d]
    g.set_property(b, "id", 6)
    assert g.find_nodes("U", "id", 5) == [a, d] and g.find_nodes("U", "id", 6) == [b]


def test_which_lists_are_resolved():
    args = {"seeds": [1, 2], "options": USER}
    assert keyed_lists("tf_features.sample_typed", args) == {"seeds": "User"}
    assert keyed_lists("tf_features.pack", {"nodes": [1], "options": {"id_property": "id"}}) == {
        "nodes": None
    }
    pairs = {"sources": [1], "targets": [2], "options": {**PAIRS, "target_label": None}}
    assert keyed_lists("tf_features.sample_pairs", pairs) == {"sources": "User", "targets": "User"}
    for no in (  # the call goes as it is: the procedure answers for these
        {"seeds": [1, True], "options": USER},  # a bool is no key
        {"seeds": [1, "2"], "options": USER},
        {"seeds": [], "options": USER},
        {"seeds": [1], "options": {"label": "User"}},  # no id_property
        {"seeds": [1], "options": {**USER, "label": "a`b"}},
    ):
        assert keyed_lists("tf_features.sample_typed", no) == {}
    uneven = {"sources": [1, 2], "targets": [2], "options": PAIRS}
    assert keyed_lists("tf_features.sample_pairs", uneven) == {}


def test_the_lookup_cypher_on_a_real_engine(bolt_source):
    """The lookup part of a keyed call, run by a real openCypher engine (ArcadeDB): per position
    the one node of the label holding the key, else the key; order and duplicates kept; two lists
    walked together."""
    from neo4j.graph import Node

    label, other = "KeyProbe", "KeyProbeOther"
    bolt_source.write(f"UNWIND [1, 2, 3, 4, 4] AS k CREATE (:{label} {{probe_key: k}})")
    bolt_source.write(f"UNWIND [5, 1] AS k CREATE (:{other} {{probe_key: k}})")
    try:

        def find(lb):
            node = f"(n:{lb})" if lb else "(n)"
            query = f"MATCH {node} WHERE n.probe_key = $k RETURN n"
            return lambda k: [r["n"].element_id for r in bolt_source.run(query, {"k": k})]

        def shown(values):
            return [v.element_id if isinstance(v, Node) else v for v in values]

        a, b = [3, 1, 4, 5, 99, 3], [5, 1, 2, 1, 1, 5]
        for keyed in ({"a": label}, {"a": None}, {"a": label, "b": other}):
            text = keyed_lookup_cypher(keyed, "probe_key")
            ret = ", ".join(f"mgtf_{name} AS {name}" for name in keyed)
            [row] = bolt_source.run(f"{text} RETURN {ret}", {"a": a, "b": b})  # nodes as nodes
            for name, lb in keyed.items():
                want = resolved_keys({"a": a, "b": b}[name], find(lb))
                assert shown(row[name]) == want
                assert any(isinstance(v, Node) for v in row[name])
    finally:
        bolt_source.write(f"MATCH (n:{label}) DETACH DELETE n")
        bolt_source.write(f"MATCH (n:{other}) DETACH DELETE n")
