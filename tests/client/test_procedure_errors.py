"""A procedure's error reaches the caller as the same client error over Bolt as on the embedded
graph: every error case the ``tf_features`` procedures raise, each run for real through
the unchanged query module, formatted as Memgraph formats it and hydrated by the real ``neo4j``
driver; then end to end, ``memgraph-tf classify`` and ``memgraph-tf serve`` over a Bolt source.

Memgraph's text and the driver's hydration: ``tests/client/memgraph_like.py``. The serving 400 over
such a source: tests/serving/test_graph.py.
"""

from __future__ import annotations

import ast
import dataclasses
import datetime
import pathlib
import re
import traceback
from typing import Any

import neo4j.exceptions
import numpy as np
import pytest

from memgraph_tf.batch import ModelBackend
from memgraph_tf.client import EmbeddedSource
from memgraph_tf.client.feature_specs import profile_label
from memgraph_tf.client.procedure_errors import (
    MEMGRAPH_ERROR_CODE,
    parse_procedure_failure,
    translate_procedure_failure,
)
from memgraph_tf.client.sources import BoltSource
from memgraph_tf.client.sources.procedure_table import (
    BUILD_RESERVOIRS,
    STRUCTURAL,
    STRUCTURAL_WRITE,
    UPDATE_RESERVOIRS,
)
from memgraph_tf.embedded import EmbeddedGraph
from memgraph_tf.errors import (
    ConfigurationError,
    GraphDataError,
    ProcedureUnavailable,
    QueryError,
)
from tests.client.memgraph_like import MemgraphLikeDriver, hydrated

PROCEDURES_DIR = pathlib.Path(__file__).resolve().parents[2] / "memgraph_tf" / "procedures"
URI = "bolt://memgraph.example:7687"


# --------------------------------------------------------------------- every case, Bolt = embedded
def case_graph() -> EmbeddedGraph:
    """Nodes that break the rules one way each (internal id = index):

    0, 1 fine (0 has a string property named like a blob section); 2 a vector of another
    length; 3 a string in the vector; 4 no ``f``; 5 NaN;
    6 a map; 7 id 'x' (outside label P, a neighbour of 0); 8 a scalar ``f``; 9 label 'cat';
    10 and 11 (label Q) the same ``qid``; 12 (label R) the id of node 0, a neighbour of 1."""
    g = EmbeddedGraph()
    nodes = [
        (["P"], {"id": 10, "f": [1.0, 2.0], "s": "a", "ids": "b", "y": 1, "key": 100}),
        (["P"], {"id": 11, "f": [3.0, 4.0], "y": 0, "key": 101}),
        (["P"], {"id": 12, "f": [1.0, 2.0, 3.0]}),
        (["P"], {"id": 13, "f": [1.0, "x"]}),
        (["P"], {"id": 14}),
        (["P"], {"id": 15, "f": [float("nan"), 1.0]}),
        (["P"], {"id": 16, "f": {"a": 1}}),
        (["X"], {"id": "x", "f": [0.0, 0.0]}),
        (["P"], {"id": 18, "f": 5.0}),
        (["L"], {"id": 19, "f": [1.0, 1.0], "y": "cat"}),
        (["Q"], {"qid": 7, "f": [1.0, 1.0]}),
        (["Q"], {"qid": 7, "f": [2.0, 2.0]}),
        (["R"], {"id": 10, "f": [0.5, 0.5]}),
    ]
    for labels, props in nodes:
        g.add_node(labels, props)
    for a, b in ((0, 7), (1, 12), (0, 1)):
        g.add_edge(a, b, "E")
    return g


def typed_case_graph() -> EmbeddedGraph:
    """A small shop for the typed procedures (internal id = index)::

        (:User)-[:BOUGHT]->(:Product)-[:IN]->(:Category)      (:User)-[:FOLLOWS]->(:User)

    Users 0..3 (ids 1..4; 3 bought nothing); products 4 (id 10) and 5 (id 11, a ``g`` of another
    width, bought by no one), 6 (id 'x', bought by user 1), 7 and 8 (both id 12, bought by user
    2); category 9 (of product 4). User 0 follows every other user; user 1 ``PAID`` product 4
    (``q: 'x'``)."""
    g = EmbeddedGraph()
    nodes = [
        (["User"], {"id": 1, "f": [1.0, 2.0]}),
        (["User"], {"id": 2, "f": [3.0, 4.0]}),
        (["User"], {"id": 3, "f": [5.0, 6.0]}),
        (["User"], {"id": 4, "f": [7.0, 8.0]}),
        (["Product"], {"id": 10, "g": [1.0]}),
        (["Product"], {"id": 11, "g": [2.0, 3.0]}),
        (["Product"], {"id": "x", "g": [1.0]}),
        (["Product"], {"id": 12, "g": [1.0]}),
        (["Product"], {"id": 12, "g": [1.0]}),
        (["Category"], {"id": 20}),
    ]
    for labels, props in nodes:
        g.add_node(labels, props)
    edges = [(0, 4, "BOUGHT"), (1, 6, "BOUGHT"), (2, 7, "BOUGHT"), (2, 8, "BOUGHT"), (4, 9, "IN")]
    edges += [(0, 1, "FOLLOWS"), (0, 2, "FOLLOWS"), (0, 3, "FOLLOWS")]
    for a, b, rel_type in edges:
        g.add_edge(a, b, rel_type)
    g.add_edge(1, 4, "PAID", {"q": "x"})  # (a relationship property of the wrong kind)
    return g


def hub_case_graph() -> EmbeddedGraph:
    """The bounded mode's cases (internal id = index): hub 0 (``:H {id: 0}``) with leaves 1..6
    (``(0)-[:E]->(leaf)``) and node 7 (a leaf too, ``key: 'x'``: the others' ``key`` is their
    ``id``); hub 0 holds one reservoir per
    edge step, each broken one way (memgraph_tf/procedures/reservoir.py; the typed step
    ``(:H)-[:E]->(:H)``'s: member relationships the graph does not hold; keyed by ``id``: a
    member stored under a key it no longer has; ``(:H)-[:E]->(:K)``'s: members without ``:K``)."""
    from memgraph_tf.procedures.reservoir import FORMAT, WEIGHTED_FORMAT, property_name

    g = EmbeddedGraph()
    hub = g.add_node(["H"], {"id": 0, "key": 0})
    for i in range(1, 8):
        g.add_edge(hub, g.add_node(["H"], {"id": i, "key": i if i < 7 else "x"}), "E")

    def reservoir(capacity, degree, keys, internals=None):
        internals = keys if internals is None else internals
        head = [FORMAT, capacity, degree, 0, 0, 1, 0, len(keys)]
        return head + keys + [100 + k for k in keys] + internals

    for step, value in (
        ((["E"], "out", None), reservoir(3, 7, [1, 2, 3])),  # capacity 3
        ((["E"], "in", None), reservoir(5, 7, [1, 2])),  # shrunk to 2
        ((["E"], "both", None), [FORMAT - 1, *reservoir(3, 7, [1, 2, 3])[1:]]),  # old format
        ((["E", "G"], "out", None), "not a reservoir"),
        ((["E", "G"], "both", None), reservoir(3, 7, [1, 2, 3])[:-1]),  # truncated
        ((["G"], "out", None), reservoir(3, 7, [])),  # every member deleted
        ((["E"], "out", "id"), reservoir(3, 7, [1, 2, 999], [1, 2, 999])),  # a deleted member
        ((["E"], "out", None, "H", "w"), "not a reservoir"),  # a weighted step's
        ((["E"], "in", None, "H", "w"), [WEIGHTED_FORMAT, 3, 7, 0, 0, 3, 0] + [1] * 14),
        ((["E"], "out", None, "H"), reservoir(3, 7, [1, 2, 3])),  # relationships 101 .. 103
        ((["E"], "out", "id", "H"), reservoir(3, 7, [1, 2, 33], [1, 2, 3])),  # 3's id is 3
        ((["E"], "out", None, "K"), reservoir(3, 7, [1, 2, 3])),  # members without label K
    ):
        g.set_property(hub, property_name(*step), value)
    return g


def ledger_case_graph() -> EmbeddedGraph:
    """Point-in-time pairs (internal id = index): accounts 0..3 (``:Acct``, ids 1..4);
    ``SENT {ts}``: 0->1 at 5, 1->2 at 7, 2->3 at 9; ``LATE {ts: 'late'}``: 0->1; ``PAID
    {w: -2}``: 0->1; ``ONE {ts: 1}``: 0->1."""
    g = EmbeddedGraph()
    acct = [g.add_node(["Acct"], {"id": i + 1}) for i in range(4)]
    for a, b, ts in ((0, 1, 5), (1, 2, 7), (2, 3, 9)):
        g.add_edge(acct[a], acct[b], "SENT", {"ts": ts})
    g.add_edge(acct[0], acct[1], "LATE", {"ts": "late"})
    g.add_edge(acct[0], acct[1], "PAID", {"w": -2})
    g.add_edge(acct[0], acct[1], "ONE", {"ts": 1})
    return g


@dataclasses.dataclass(frozen=True)
class Case:
    call: str  # pack, sample, sample_per_node, describe, profile; typed graph: TYPED_CALLS
    args: tuple
    match: str  # what the message must say (the node, argument, property at fault)
    graph: str = ""  # "hubs": hub_case_graph(), "ledger": ledger_case_graph() (else by the call)


TYPED_CALLS = ("sample_typed", "schema", "sample_pairs", "split_edges")


def split_case(options: Any, match: str, pattern: str | None = None) -> Case:
    """A ``split_edges`` case: the call ``split_edges(pattern, options)`` (``pattern`` None:
    :data:`BOUGHT`)."""
    return Case("split_edges", (BOUGHT if pattern is None else pattern, options), match)


def structural_case(options: Any, match: str, label: Any = "P", call: str = "structural") -> Case:
    """A ``structural`` (or ``structural_write``) case: the call ``call(label, options)``."""
    return Case(call, (label, options), match)


@dataclasses.dataclass(frozen=True)
class Node:
    """A vertex argument (Cypher: a node a MATCH found): the case graph's node ``internal``."""

    internal: int


ID = {"id_property": "id"}
USER = {"label": "User"}
PAIRS = {"source_label": "User"}
BOUGHT = "(:User)-[:BOUGHT]->(:Product)"
FOLLOWS = "(:User)-[:FOLLOWS]-(:User)"
SENT = "(:Acct)-[:SENT {time: ts}]-(:Acct)"
ACCT = {"source_label": "Acct", "id_property": "id"}
RESERVOIR = {"reservoir_threshold": 0}
RESERVOIR_NAME = "'tf_reservoir_[0-9a-f]{12}'"
RELATIONSHIP = {"entity": "relationship", "kind": "created", "rel_type": "E", "seq": 1}
SPEC_F = {"label": "User", "properties": [{"name": "f", "kind": "numeric", "length": 2}]}
SPEC_F_CATEGORY = {"label": "User", "properties": [{"name": "f", "kind": "categorical"}]}
SPEC_CATEGORY = {
    "label": "Category",
    "properties": [{"name": "w", "kind": "required"}, {"name": "v", "kind": "boolean"}],
}
PAID = "(:User)-[:PAID]->(:Product)"
EDGE_SPEC = {"label": "PAID", "properties": [{"name": "q", "kind": "numeric"}]}
EDGE_REQUIRED = {"label": "PAID", "properties": [{"name": "q", "kind": "required"}]}
HUB_EDGE_SPEC = {"label": "E", "properties": [{"name": "q", "kind": "numeric"}]}
EDGE_ODD_NAME = {"label": "PAID", "properties": [{"name": "a b", "kind": "numeric"}]}
CASES = {
    # -- the bounded mode (hub_case_graph)
    "bounded: a capacity below the fanout": Case(
        "sample",
        ([0], [4], [], {**RESERVOIR, "edge_types": ["E"], "direction": "out"}),
        rf"^options\.reservoir_threshold: node 0 has a reservoir \({RESERVOIR_NAME}\) of "
        r"capacity 3, below hop 1's fanout 4: rebuild it with options\.capacity >= 4 ",
        "hubs",
    ),
    "bounded: a reservoir shrunk below the fanout": Case(
        "sample",
        ([0], [3], [], {**RESERVOIR, "edge_types": ["E"], "direction": "in"}),
        rf"^options\.reservoir_threshold: node 0 has a reservoir \({RESERVOIR_NAME}\) holding 2 "
        r"distinct neighbours \(capacity 5, shrunk by deletions",
        "hubs",
    ),
    "bounded: an empty reservoir drawn with replacement": Case(
        "sample",
        ([0], [3], [], {**RESERVOIR, "edge_types": ["G"], "direction": "out", "replace": True}),
        rf"^options\.reservoir_threshold: node 0 has a reservoir \({RESERVOIR_NAME}\) holding 0 "
        r"distinct neighbours \(capacity 3, shrunk by deletions or parallel relationships\), "
        r"below the one neighbour hop 1's draw with replacement needs: rebuild it ",
        "hubs",
    ),
    "bounded: a reservoir of an older format": Case(
        "sample",
        ([0], [2], [], {**RESERVOIR, "edge_types": ["E"]}),
        rf"^options\.reservoir_threshold: node 0 has a reservoir \({RESERVOIR_NAME}\) of format "
        r"0, this sampler reads format 1: rebuild it",
        "hubs",
    ),
    "bounded: a property that is no reservoir": Case(
        "sample",
        ([0], [2], [], {**RESERVOIR, "edge_types": ["E", "G"], "direction": "out"}),
        rf"^options\.reservoir_threshold: node 0 property {RESERVOIR_NAME}: expected a "
        r"reservoir \(a list of integers, format 1\), got str 'not a reservoir'",
        "hubs",
    ),
    "bounded: a truncated reservoir": Case(
        "sample",
        ([0], [2], [], {**RESERVOIR, "edge_types": ["E", "G"]}),
        rf"^options\.reservoir_threshold: node 0 property {RESERVOIR_NAME}: a malformed "
        r"reservoir \(3 members, capacity 3, degree 7, 16 integers\)",
        "hubs",
    ),
    "bounded: a member no longer in the graph": Case(
        "sample",
        ([0], [3], [], {**RESERVOIR, **ID, "edge_types": ["E"], "direction": "out"}),
        r"^node with id = 999 \(internal id 999\): in a reservoir \(options\.reservoir_threshold\)"
        r" but no longer in the graph under that key",
        "hubs",
    ),
    "bounded: a typed member whose key changed": Case(
        "sample_typed",
        ([0], {"(:H)-[:E]->(:H)": [3]}, None, {"label": "H", **ID, **RESERVOIR}),
        r"^\(:H \{id: 33\}\) \(internal id 3\): in a reservoir \(options\.reservoir_threshold\) "
        r"but no longer in the graph under that key: the reservoir lags the graph",
        "hubs",
    ),
    "bounded: a typed member without the step's label": Case(
        "sample_typed",
        ([0], {"(:H)-[:E]->(:K)": [3]}, None, {"label": "H", **RESERVOIR}),
        r"^\(node 1:K\) \(internal id 1\): in a reservoir \(options\.reservoir_threshold\) "
        r"but no longer a :K node: the reservoir lags the graph",
        "hubs",
    ),
    "bounded: a weighted step's property that is no reservoir": Case(
        "sample_typed",
        ([0], {"(:H)-[:E {weight: w}]->(:H)": [2]}, None, {"label": "H", **RESERVOIR}),
        rf"^options\.reservoir_threshold: \(node 0:H\) property {RESERVOIR_NAME}: expected a "
        r"weighted "
        r"step's reservoir \(a list of integers, format 2\), got str 'not a reservoir'",
        "hubs",
    ),
    "bounded: a truncated weighted reservoir": Case(
        "sample_typed",
        ([0], {"(:H)<-[:E {weight: w}]-(:H)": [2]}, None, {"label": "H", **RESERVOIR}),
        rf"^options\.reservoir_threshold: \(node 0:H\) property {RESERVOIR_NAME}: a malformed "
        r"reservoir \(3 members, capacity 3, degree 7, 21 integers\)",
        "hubs",
    ),
    "bounded: a negative threshold": Case(
        "sample",
        ([0], [2], [], {"reservoir_threshold": -1}),
        r"^options\.reservoir_threshold: expected an integer >= 0 \(the degree above which",
        "hubs",
    ),
    "sample_typed: the bounded mode with held-out relationships": Case(
        "sample_typed",
        ([0], {BOUGHT: [1]}, None, {**USER, "reservoir_threshold": 0, "exclude_splits": ["test"]}),
        r"^options\.reservoir_threshold: expected without options\.exclude_splits \(a reservoir ",
    ),
    "build_reservoirs: no capacity": Case(
        "build_reservoirs", ({},), r"^options\.capacity: expected the reservoir size R", "hubs"
    ),
    "build_reservoirs: an unknown option": Case(
        "build_reservoirs",
        ({"capacity": 2, "fanouts": [2]},),
        r"^options: unknown option 'fanouts' for tf_features\.build_reservoirs \(allowed: ",
        "hubs",
    ),
    "build_reservoirs: a bad direction": Case(
        "build_reservoirs",
        ({"capacity": 2, "direction": "up"},),
        r"^options\.direction: expected one of 'out', 'in', 'both', got str 'up'$",
        "hubs",
    ),
    "build_reservoirs: bad edge types": Case(
        "build_reservoirs",
        ({"capacity": 2, "edge_types": "E"},),
        r"^options\.edge_types: expected a list of edge type names \(strings\), got str 'E'$",
        "hubs",
    ),
    "build_reservoirs: an empty label": Case(
        "build_reservoirs",
        ({"capacity": 2, "label": ""},),
        r"^options\.label: expected a non-empty string, got str ''$",
        "hubs",
    ),
    "build_reservoirs: a capacity of 0": Case(
        "build_reservoirs",
        ({"capacity": 0},),
        r"^options\.capacity: expected an integer >= 1, got int 0$",
        "hubs",
    ),
    "build_reservoirs: a seed that is no integer": Case(
        "build_reservoirs",
        ({"capacity": 2, "seed": "7"},),
        r"^options\.seed: expected an integer, got str '7'$",
        "hubs",
    ),
    "build_reservoirs: an id that is no integer": Case(
        "build_reservoirs",
        ({"capacity": 2, "id_property": "key"},),
        r"^node 7 property 'key' \(options\.id_property\): expected an integer id, got str 'x'$",
        "hubs",
    ),
    "update_reservoirs: a relationship id that is no integer": Case(
        "update_reservoirs",
        ([{**RELATIONSHIP, "element_id": "r", "start_id": 0, "end_id": 1}], None),
        r"^changes\[0\]\.element_id: expected an integer, got str 'r'$",
        "hubs",
    ),
    "update_reservoirs: an endpoint without its key": Case(  # (hub 0 holds the step's)
        "update_reservoirs",
        (
            [{**RELATIONSHIP, "element_id": 5, "start_id": 0, "end_id": 1, "start_key": 0}],
            {"edge_types": ["E"], "direction": "out", **ID},
        ),
        r"^changes\[0\]: expected the integer id of node 1 \(options\.id_property: the change's ",
        "hubs",
    ),
    "unknown internal id": Case(
        "pack", ([999], ["f"], {}), r"^nodes\[0\]: unknown node id 999 \(no node has that "
    ),
    "unknown seed": Case("sample", ([1, 999], [2], ["f"], {}), r"^seeds\[1\]: unknown node id 999"),
    "unknown id_property value": Case(
        "sample_per_node",
        ([12345], [2], ["f"], {"id_property": "key"}),
        r"^seeds\[0\]: unknown node id 12345 \(no node has key = 12345\)$",
    ),
    "unknown :label id": Case(
        "pack",
        ([11, 12345], ["f"], {"id_property": "id", "label": "P"}),
        r"^nodes\[1\]: unknown node id 12345 \(no :P node has id = 12345\)$",
    ),
    "unknown option": Case(
        "pack", ([0], ["f"], {"bogus": 1}), r"^options: unknown option 'bogus' for tf_features"
    ),
    "sample-only option given to pack": Case(
        "pack", ([0], ["f"], {"edge_types": ["E"]}), r"^options: unknown option 'edge_types' "
    ),
    "option of the wrong type": Case(
        "describe", (["f"], {"seed": "x"}), r"^options\.seed: expected .*, got str 'x'$"
    ),
    "option not among the choices": Case(
        "pack", ([0], ["f"], {"dtype": "int8"}), r"^options\.dtype: expected one of .*'int8'"
    ),
    "label without id_property": Case(
        "pack", ([0], ["f"], {"label": "P"}), r"^options\.label: expected together with options"
    ),
    "max_blob_bytes out of range": Case(
        "pack", ([0], ["f"], {"max_blob_bytes": 0}), r"^options\.max_blob_bytes: expected "
    ),
    "no fanouts": Case("sample", ([0], [], ["f"], {}), r"^fanouts: expected a list of 1 to "),
    "a bad fanout": Case("sample", ([0], [2, 0], ["f"], {}), r"^fanouts\[1\]: expected an integer"),
    "no nodes": Case("pack", ([], ["f"], {}), r"^nodes: expected at least one node or id, got an "),
    "a node that is no id": Case(
        "sample", (["a"], [1], ["f"], {}), r"^seeds\[0\]: expected a node or an integer id, got str"
    ),
    "an empty property name": Case(
        "pack", ([0], ["f", ""], {}), r"^properties\[1\]: expected a non-empty property name"
    ),
    "a property named twice": Case(
        "pack", ([0], ["f", "f"], {}), r"^properties\[1\]: expected each property once, got 'f'"
    ),
    "a section's name as a property": Case(
        "pack", ([0], ["ids"], {}), r"^properties: expected string property names other than "
    ),
    "a string property sampled": Case(
        "sample", ([0], [1], ["s"], {}), r"^properties: expected numeric properties for sampling, "
    ),
    "missing property on the first node": Case(
        "pack", ([4, 0], ["f"], {}), r"^node 4 property 'f': expected a value, got none \(missing"
    ),
    "missing property on a later node": Case(
        "pack", ([0, 4], ["f"], {}), r"^node 4 property 'f': expected a value, got none \(missing"
    ),
    "a vector of another length": Case(
        "pack", ([0, 2], ["f"], {}), r"^node 2 property 'f': expected a list of 2 numbers \(the "
    ),
    "a string in the first node's vector": Case(
        "pack", ([3], ["f"], {}), r"^node 3 property 'f'\[1\]: expected a number, got str 'x'$"
    ),
    "a string in a later node's vector": Case(
        "pack", ([0, 3], ["f"], {}), r"^node 3 property 'f'\[1\]: expected a number, got str 'x'$"
    ),
    "a value that cannot be packed": Case(
        "pack", ([6], ["f"], {}), r"^node 6 property 'f': expected a number, a list of numbers or "
    ),
    "a scalar where the first node had a vector": Case(
        "pack", ([0, 8], ["f"], {}), r"^node 8 property 'f': expected .*\(as on the first node\)"
    ),
    "NaN": Case("pack", ([5], ["f"], {}), r"^node 5 property 'f'.*: expected a finite number, "),
    "a label that is no class": Case(
        "pack", ([9], ["f"], {"label_property": "y"}), r"^node 9 property 'y' \(options\.label_pr"
    ),
    "describe: a label that is no class": Case(
        "describe", (["f"], {"label_property": "y"}), r"^node 9 property 'y' \(options\.label_pr"
    ),
    "describe: no node has the properties": Case(
        "describe", (["nope"], {}), r"^properties: expected a node having all of \['nope'\], got "
    ),
    "a neighbour whose id is not an integer": Case(
        "sample",
        ([10], [2], ["f"], {"id_property": "id", "label": "P"}),
        r"^node 7 property 'id' \(options\.id_property\): expe",
    ),
    "an id that is not an integer, met by the index": Case(
        "pack", ([10], ["f"], ID), r"^node 7 property 'id' \(options\.id_property\): expected an "
    ),
    "two nodes with one id, met by the index": Case(
        "pack",
        ([7], ["f"], {"id_property": "qid", "label": "Q"}),
        r"^options\.id_property: expected unique ids, got qid = 7 on the nodes with internal "
        r"ids 10 and 11$",
    ),
    "two nodes with one id, met through an edge": Case(
        "sample",
        ([11], [3], ["f"], {"id_property": "id", "label": "P"}),
        r"^options\.id_property: expected unique ids, got id = 10 on the nodes with internal ",
    ),
    "a blob over max_blob_bytes": Case(
        "pack", ([0, 1], ["f"], {"max_blob_bytes": 64}), r"^max_blob_bytes: the blob would hold "
    ),
    # -- the typed procedures, on typed_case_graph()
    "sample_typed: no seed label": Case(
        "sample_typed", ([0], {BOUGHT: [1]}, None, {}), r"^options\.label: expected the seed label"
    ),
    "sample_typed: a label too long for the layout's section names": Case(
        "sample_typed",
        (
            [0],
            {"(:User)-[:BOUGHT]->(:ProductsOfTheShopCatalogue)": [1]},
            None,
            {**USER, "layout": "sparse"},
        ),
        r"^options\.layout \('sparse'\): section "
        r"'table_ids_ProductsOfTheShopCatalogue\.row_splits': expected a name of at most 40 bytes",
    ),
    "sample_typed: a bad split_property": Case(
        "sample_typed",
        ([0], {BOUGHT: [1]}, None, {**USER, "split_property": ""}),
        r"^options\.split_property: expected a property name \(a non-empty string\), got ",
    ),
    "sample_typed: a bad exclude_splits": Case(
        "sample_typed",
        ([0], {BOUGHT: [1]}, None, {**USER, "exclude_splits": ["val", 3]}),
        r"^options\.exclude_splits: expected a list of split names .*, got list \['val', 3\]$",
    ),
    "sample_typed: fanouts that are no list": Case(
        "sample_typed",
        ([0], {BOUGHT: 2}, None, USER),
        r"^num_neighbors\['\(:User\)-\[:BOUGHT\]->\(:Product\)'\]: expected a list of fanouts ",
    ),
    "sample_typed: a label key that is empty": Case(
        "sample_typed",
        ([0], {BOUGHT: [1]}, {"": ["f"]}, USER),
        r"^properties: expected label names as keys, got ''$",
    ),
    "sample_typed: a label without slots": Case(
        "sample_typed",
        ([0], {BOUGHT: [1]}, {"Category": ["f"]}, USER),
        r"^properties: label 'Category' has no slots in this sampling spec \(labels with slots: "
        r"'User', 'Product'\)$",
    ),
    "sample_typed: a label's names that are no list": Case(
        "sample_typed",
        ([0], {BOUGHT: [1]}, {"User": "f"}, USER),
        r"^properties\['User'\]: expected a list of property names, got str 'f'$",
    ),
    "sample_typed: a seed of another label": Case(
        "sample_typed",
        ([0, 4], {BOUGHT: [1]}, None, USER),
        r"^seeds\[1\]: node 4 is not a :User node \(the seed label, options\.label\)$",
    ),
    "sample_typed: a seed vertex of another label under id_property": Case(
        "sample_typed",
        ([Node(0), Node(4)], {BOUGHT: [1]}, None, {**USER, **ID}),
        r"^seeds\[1\]: node with id = 10 is not a :User node \(the seed label, options\.label\)$",
    ),
    "sample_typed: a feature_spec that is no map": Case(
        "sample_typed",
        ([0], {BOUGHT: [1]}, None, {**USER, "feature_spec": 5}),
        r"^options\.feature_spec: expected a map of label -> feature spec .*, got int 5$",
    ),
    "sample_typed: a feature_spec label key that is empty": Case(
        "sample_typed",
        ([0], {BOUGHT: [1]}, None, {**USER, "feature_spec": {"": SPEC_F}}),
        r"^options\.feature_spec: expected label names as keys, got ''$",
    ),
    "sample_typed: a feature_spec of an unknown kind": Case(
        "sample_typed",
        (
            [0],
            {BOUGHT: [1]},
            None,
            {
                **USER,
                "feature_spec": {"User": {**SPEC_F, "properties": [{"name": "f", "kind": "x"}]}},
            },
        ),
        r"^options\.feature_spec\['User'\]: label 'User' property 'f': expected a 'kind' among ",
    ),
    "sample_typed: a feature_spec under another label's key": Case(
        "sample_typed",
        ([0], {BOUGHT: [1]}, None, {**USER, "feature_spec": {"Product": SPEC_F}}),
        r"^options\.feature_spec\['Product'\]: expected the spec's 'label' to be 'Product' \(its "
        r"key\), got 'User'$",
    ),
    "sample_typed: a feature_spec label without slots": Case(
        "sample_typed",
        ([0], {BOUGHT: [1]}, None, {**USER, "feature_spec": {"Category": SPEC_CATEGORY}}),
        r"^options\.feature_spec: label 'Category' has no slots in this sampling spec",
    ),
    "sample_typed: a label in feature_spec and properties": Case(
        "sample_typed",
        ([0], {BOUGHT: [1]}, {"User": ["f"]}, {**USER, "feature_spec": {"User": SPEC_F}}),
        r"^options\.feature_spec and properties: expected label 'User' in one of them, got it in "
        r"both",
    ),
    "sample_typed: a value of the wrong type for its kind": Case(
        "sample_typed",
        ([1], {BOUGHT: [1]}, None, {**USER, **ID, "feature_spec": {"User": SPEC_F_CATEGORY}}),
        r"^node with id = 1 \(:User\) property 'f' \(kind 'categorical'\): expected a string, an "
        r"integer or a boolean, got list \[1\.0, 2\.0\]$",
    ),
    "sample_typed: no node of a raw label met or having its required properties": Case(
        "sample_typed",
        (
            [3],
            {BOUGHT: [1, 0], "(:Product)-[:IN]->(:Category)": [0, 1]},
            None,
            {**USER, "feature_spec": {"Category": SPEC_CATEGORY}},
        ),
        r"^properties: expected a node having all of \['w'\], got no :Category node with all of "
        r"them$",
    ),
    "sample_typed: a neighbour whose id is not an integer": Case(
        "sample_typed",
        ([2], {BOUGHT: [1]}, None, {**USER, **ID}),
        r"^node 6 \(:Product\) property 'id' \(options\.id_property\): expected an integer id, "
        r"got str 'x'$",
    ),
    "sample_typed: two neighbours with one id": Case(
        "sample_typed",
        ([3], {BOUGHT: [2]}, None, {**USER, **ID}),
        r"^options\.id_property: expected unique ids within a label, got id = 12 on the :Product "
        r"nodes with internal ids 7 and 8$",
    ),
    "sample_typed: no node of a label met or having the properties": Case(
        "sample_typed",
        ([3], {BOUGHT: [1]}, {"Product": ["nope"]}, USER),
        r"^properties: expected a node having all of \['nope'\], got no :Product node with all ",
    ),
    "schema: an unknown label": Case(
        "schema",
        ({"Shop": ["f"]}, None),
        r"^properties: unknown label 'Shop' \(the graph has 'Category', 'Product', 'User'\)$",
    ),
    "schema: a property of another width": Case(
        "schema",
        ({"Product": ["g"]}, None),
        r"^node 5 \(:Product\) property 'g': expected a list of 1 ",
    ),
    # -- link prediction
    "split_edges: an unknown option": split_case(
        {"seed": 1, "negatives": 2},
        r"^options: unknown option 'negatives' for tf_features\.split_edges \(allowed: ",
    ),
    "split_edges: no seed": split_case(
        {}, r"^options\.seed: expected an integer \(the split is drawn "
    ),
    "split_edges: a fraction out of range": split_case(
        {"seed": 1, "val_fraction": 1.5},
        r"^options\.val_fraction: expected a fraction from 0 to 1, got float 1\.5$",
    ),
    "split_edges: fractions over 1": split_case(
        {"seed": 1, "val_fraction": 0.6, "test_fraction": 0.5},
        r"^options\.val_fraction \+ options\.test_fraction: expected at most 1, got 0\.6 \+ 0\.5$",
    ),
    "split_edges: a bad split_property": split_case(
        {"seed": 1, "split_property": ""},
        r"^options\.split_property: expected a property name, got ",
    ),
    "split_edges: a pattern that is no edge step": split_case(
        {"seed": 1}, r"^pattern: edge step: expected a ", pattern="User-BOUGHT->Product"
    ),
    "split_edges: a pattern the graph has no relationships of": split_case(
        {"seed": 1},
        r"^pattern: \(:User\)-\[:LIKES\]->\(:Product\): the graph has no such relationships ",
        pattern="(:User)-[:LIKES]->(:Product)",
    ),
    "split_edges: cutoffs without a time_property": split_case(
        {"cutoffs": [1, 2]},
        r"^options\.time_property: expected a relationship property name \(options\.cutoffs ",
    ),
    "split_edges: a time_property without cutoffs": split_case(
        {"time_property": "at"},
        r"^options\.cutoffs: expected \[t1, t2\] \(train before t1, .*got null$",
    ),
    "split_edges: a cutoff of no time kind": split_case(
        {"time_property": "at", "cutoffs": [1, 2.5]},
        r"^options\.cutoffs\[1\]: expected an integer, a Date or a LocalDateTime, got float 2\.5$",
    ),
    "split_edges: cutoffs of two kinds": split_case(
        {"time_property": "at", "cutoffs": [1, datetime.date(2024, 1, 1)]},
        r"^options\.cutoffs: expected two values of one kind, got int 1 and date ",
    ),
    "split_edges: cutoffs not increasing": split_case(
        {"time_property": "at", "cutoffs": [5, 5]},
        r"^options\.cutoffs: expected t1 < t2, got int 5 and int 5$",
    ),
    "split_edges: a fraction with a time split": split_case(
        {"time_property": "at", "cutoffs": [1, 2], "test_fraction": 0.2},
        r"^options\.test_fraction: not used with options\.time_property ",
    ),
    "split_edges: a relationship without the time property": split_case(
        {"time_property": "at", "cutoffs": [1, 2]},
        r"^options\.time_property: relationship \(node 0\)-\[:BOUGHT\]->\(node 4\): property "
        r"'at': expected an integer \(the kind of options\.cutoffs\), got no such property$",
    ),
    "sample_typed: a weighted step over a relationship without its weight": Case(
        "sample_typed",
        ([0], {"(:User)-[:BOUGHT {weight: w}]->(:Product)": [1]}, None, USER),
        r"^relationship \(node 0:User\)-\[:BOUGHT\]->\(node 4:Product\) property 'w': expected "
        r"a number \(the step's weight\), got no value$",
    ),
    "sample_typed: the bounded mode on a timed step": Case(
        "sample_typed",
        (
            [0],
            {"(:User)-[:BOUGHT {time: at}]->(:Product)": [1]},
            None,
            {**USER, **RESERVOIR, "seed_time": "id"},
        ),
        r"^options\.reservoir_threshold: step \(:User\)-\[:BOUGHT \{time: at\}\]->\(:Product\) "
        r"has a time \('at'\): a reservoir samples the relationships the graph holds now and "
        r"cannot answer which were there as of a seed's time; sample this spec without "
        r"options\.reservoir_threshold \(allowed: steps without a time\)$",
    ),
    "sample_typed: a timed step without options.seed_time": Case(
        "sample_typed",
        ([0], {"(:User)-[:BOUGHT {time: at}]->(:Product)": [1]}, None, USER),
        r"^options\.seed_time: expected the seeds' time property \(\(:User\)-\[:BOUGHT "
        r"\{time: at\}\]->\(:Product\) has a time\), got none$",
    ),
    "sample_typed: options.seed_time without a timed step": Case(
        "sample_typed",
        ([0], {BOUGHT: [1]}, None, {**USER, "seed_time": "id"}),
        r"^options\.seed_time: expected a step with a time in num_neighbors ",
    ),
    "sample_typed: a seed without a time": Case(
        "sample_typed",
        ([0], {"(:User)-[:BOUGHT {time: at}]->(:Product)": [1]}, None, {**USER, "seed_time": "t"}),
        r"^seeds\[0\]: \(node 0:User\) property 't': expected an integer time, got no value$",
    ),
    "sample_typed: a relationship without its time": Case(
        "sample_typed",
        ([0], {"(:User)-[:BOUGHT {time: at}]->(:Product)": [1]}, None, {**USER, "seed_time": "id"}),
        r"^relationship \(node 0:User\)-\[:BOUGHT\]->\(node 4:Product\) property 'at': "
        r"expected an integer time, got no value$",
    ),
    "sample_typed: edge_feature_spec not a map": Case(
        "sample_typed",
        ([0], {BOUGHT: [1]}, None, {**USER, "edge_feature_spec": [1]}),
        r"^options\.edge_feature_spec: expected a map of edge pattern -> feature spec ",
    ),
    "sample_typed: edge_feature_spec of a bad pattern": Case(
        "sample_typed",
        ([0], {BOUGHT: [1]}, None, {**USER, "edge_feature_spec": {"(:User)": EDGE_SPEC}}),
        r"^options\.edge_feature_spec\['\(:User\)'\]: edge step: expected a pattern like ",
    ),
    "sample_typed: edge_feature_spec of a step not sampled": Case(
        "sample_typed",
        ([0], {BOUGHT: [1]}, None, {**USER, "edge_feature_spec": {FOLLOWS: EDGE_SPEC}}),
        r"^options\.edge_feature_spec\['\(:User\)-\[:FOLLOWS\]-\(:User\)'\]: expected one of the "
        r"steps of num_neighbors \(\(:User\)-\[:BOUGHT\]->\(:Product\)\), got ",
    ),
    "sample_typed: edge_feature_spec of another relationship type": Case(
        "sample_typed",
        ([0], {BOUGHT: [1]}, None, {**USER, "edge_feature_spec": {BOUGHT: EDGE_SPEC}}),
        r"expected the spec's 'label' to be the relationship type 'BOUGHT', got 'PAID'$",
    ),
    "sample_typed: edge_feature_spec without properties": Case(
        "sample_typed",
        (
            [0],
            {PAID: [1]},
            None,
            {**USER, "edge_feature_spec": {PAID: {"label": "PAID", "properties": []}}},
        ),
        r"\]: expected at least one relationship property, got none$",
    ),
    "sample_typed: edge_feature_spec of a required property": Case(
        "sample_typed",
        ([0], {PAID: [1]}, None, {**USER, "edge_feature_spec": {PAID: EDGE_REQUIRED}}),
        r"\]: property 'q': expected a kind other than 'required' for a relationship property ",
    ),
    "sample_typed: edge_feature_spec of a property name that is not plain": Case(
        "sample_typed",
        ([0], {PAID: [1]}, None, {**USER, "edge_feature_spec": {PAID: EDGE_ODD_NAME}}),
        r"\]: expected plain property names \(\[A-Za-z_\]\[A-Za-z0-9_\]\*\), got 'a b'$",
    ),
    "sample_typed: a reservoir's relationship no longer in the graph (edge features)": Case(
        "sample_typed",
        (
            [0],
            {"(:H)-[:E]->(:H)": [3]},
            None,
            {"label": "H", **RESERVOIR, "edge_feature_spec": {"(:H)-[:E]->(:H)": HUB_EDGE_SPEC}},
        ),
        r"^relationship 10[123] of \(:H\)-\[:E\]->\(:H\) between \(node 0:H\) and \(node "
        r"[123]:H\): in \(node 0:H\)'s reservoir \(options\.reservoir_threshold\) but no longer "
        r"in the graph: the reservoir lags the graph \(apply the change log with "
        r"tf_features\.update_reservoirs, or rebuild it with tf_features\.build_reservoirs\)$",
        "hubs",
    ),
    "sample_typed: edge_feature_spec in the compact layout": Case(
        "sample_typed",
        (
            [0],
            {PAID: [1]},
            None,
            {**USER, "layout": "compact", "edge_feature_spec": {PAID: EDGE_SPEC}},
        ),
        r"^options\.layout \('compact'\): edge feature columns \(options\.edge_feature_spec\) are "
        r"written in the dense layout only$",
    ),
    "sample_typed: a relationship property of the wrong kind": Case(
        "sample_typed",
        ([1], {PAID: [1]}, None, {**USER, "edge_feature_spec": {PAID: EDGE_SPEC}}),
        r"^relationship \(node 1:User\)-\[:PAID\]->\(node 4:Product\) property 'q' \(kind "
        r"'numeric'\): expected a number, got str 'x'$",
    ),
    "sample_pairs: a timed step without the pairs' times": Case(
        "sample_pairs",
        ([1], [2], {SENT: [1]}, None, ACCT),
        r"^options\.pair_time: expected the pairs' times \(\(:Acct\)-\[:SENT \{time: ts\}\]-"
        r"\(:Acct\) has a time\): options\.pair_time \(a relationship property\) or "
        r"options\.pair_times \(one per pair\), got neither$",
        "ledger",
    ),
    "sample_pairs: pair times without a timed step": Case(
        "sample_pairs",
        ([1], [2], {"(:Acct)-[:SENT]-(:Acct)": [1]}, None, {**ACCT, "pair_times": [5]}),
        r"^options\.pair_times: expected a step with a time in num_neighbors \(e\.g\. "
        r"'\(:Account\)-\[:SENT \{time: ts\}\]-\(:Account\)'\), got none$",
        "ledger",
    ),
    "sample_pairs: a bad options.time_order": Case(
        "sample_pairs",
        ([1], [2], {SENT: [1]}, None, {**ACCT, "pair_time": "ts", "time_order": "latest"}),
        r"^options\.time_order: expected one of 'uniform', 'most_recent', got str 'latest'$",
        "ledger",
    ),
    "sample_pairs: both pair_time and pair_times": Case(
        "sample_pairs",
        ([1], [2], {SENT: [1]}, None, {**ACCT, "pair_time": "ts", "pair_times": [5]}),
        r"^options\.pair_times: expected either options\.pair_times \(one time per pair\) or "
        r"options\.pair_time \(a relationship property\), got both \(pair_time 'ts'\)$",
        "ledger",
    ),
    "sample_pairs: pair_time not a name": Case(
        "sample_pairs",
        ([1], [2], {SENT: [1]}, None, {**ACCT, "pair_time": 5}),
        r"^options\.pair_time: expected a relationship property name \(each pair's time is its "
        r"relationships' smallest value of it\), got int 5$",
        "ledger",
    ),
    "sample_pairs: pair_times not a list": Case(
        "sample_pairs",
        ([1], [2], {SENT: [1]}, None, {**ACCT, "pair_times": 5}),
        r"^options\.pair_times: expected a list of integer times, one per pair, got int 5$",
        "ledger",
    ),
    "sample_pairs: a pair time of the wrong type": Case(
        "sample_pairs",
        ([1], [2], {SENT: [1]}, None, {**ACCT, "pair_times": [2.5]}),
        r"^options\.pair_times\[0\]: expected an integer time, got float 2\.5$",
        "ledger",
    ),
    "sample_pairs: a pair time per pair": Case(
        "sample_pairs",
        ([1], [2], {SENT: [1]}, None, {**ACCT, "pair_times": [5, 6]}),
        r"^options\.pair_times: expected one time per pair \(1\), got 2$",
        "ledger",
    ),
    "sample_pairs: a pair without a time": Case(
        "sample_pairs",
        ([1, 1], [2, 3], {SENT: [1]}, None, {**ACCT, "pair_time": "ts"}),
        r"^options\.pair_time: sources\[1\], targets\[1\]: no relationship between "
        r"\(:Acct \{id: 1\}\) and \(:Acct \{id: 3\}\) of a type the steps walk between :Acct "
        r"and :Acct to read its time 'ts' from \(a pair without a time: give "
        r"options\.pair_times\)$",
        "ledger",
    ),
    "sample_pairs: a pair's relationship time of the wrong type": Case(
        "sample_pairs",
        ([1], [2], {"(:Acct)-[:LATE {time: ts}]-(:Acct)": [1]}, None, {**ACCT, "pair_time": "ts"}),
        r"^options\.pair_time: relationship \(:Acct \{id: 1\}\)-\[:LATE\]->\(:Acct \{id: 2\}\) "
        r"property 'ts': expected an integer time, got str 'late'$",
        "ledger",
    ),
    "sample_pairs: no negative active at the pair's time or later": Case(
        "sample_pairs",
        (
            [1],
            [3],
            {"(:Acct)-[:ONE {time: ts}]-(:Acct)": [1]},
            None,
            {**ACCT, "pair_times": [5], "negatives": 1},
        ),
        r"^options\.negatives: sources\[0\]: node with id = 1 \(:Acct\) has no negative target "
        r"at the pair's time 5 or later: every active :Acct node \(one with a relationship of a "
        r"timed step\) is joined to it or is it$",
        "ledger",
    ),
    "sample_pairs: a negative weight on a step with replacement": Case(
        "sample_pairs",
        ([1], [2], {"(:Acct)-[:PAID {weight: w, replace: true}]-(:Acct)": [2]}, None, ACCT),
        r"^relationship \(:Acct \{id: 1\}\)-\[:PAID\]->\(:Acct \{id: 2\}\) property 'w': "
        r"expected a finite number >= 0, got int -2$",
        "ledger",
    ),
    "sample_typed: replacement on a step with a time": Case(
        "sample_typed",
        ([1], {"(:Acct)-[:SENT {time: ts, replace: true}]-(:Acct)": [1]}, None, {"label": "Acct"}),
        r"^edge step \(:Acct\)-\[:SENT \{time: ts, replace: true\}\]-\(:Acct\): "
        r"replace: expected on a step with a weight only \(draws with replacement are weighted "
        r"draws\), got it on a step with a time$",
        "ledger",
    ),
    "sample_pairs: no source label": Case(
        "sample_pairs",
        ([0], [1], {FOLLOWS: [1]}, None, {}),
        r"^options\.source_label: expected a label \(a non-empty string: the label of the pairs' "
        r"sources\), got ",
    ),
    "sample_pairs: negatives out of range": Case(
        "sample_pairs",
        ([0], [1], {FOLLOWS: [1]}, None, {**PAIRS, "negatives": -1}),
        r"^options\.negatives: expected the number of negatives per pair, an integer from 0 to ",
    ),
    "sample_pairs: fewer targets than sources": Case(
        "sample_pairs",
        ([0, 1], [2], {FOLLOWS: [1]}, None, PAIRS),
        r"^targets: expected one target per source \(2\), got 1$",
    ),
    "sample_pairs: a source joined to every target": Case(
        "sample_pairs",
        ([0], [1], {FOLLOWS: [1]}, None, {**PAIRS, "negatives": 1}),
        r"^options\.negatives: sources\[0\]: node 0 \(:User\) is joined to every :User node ",
    ),
    "structural: no label": structural_case(
        None, r"^label: expected a non-empty label name, got null$", label=None
    ),
    "structural: an unknown option": structural_case(
        {"write_property": "v"},
        r"^options: unknown option 'write_property' for tf_features\.structural \(allowed: ",
    ),
    "structural_write: no write_property": structural_case(
        {},
        r"^options\.write_property: expected the property name to write the vectors into, got "
        r"nothing \(tf_features\.structural_write requires it\)$",
        call="structural_write",
    ),
    "structural_write: changed_nodes not a list": structural_case(
        {"write_property": "v", "changed_nodes": 3},
        r"^options\.changed_nodes: expected a list of internal node ids, got int 3$",
        call="structural_write",
    ),
    "structural_write: a changed node that is no id": structural_case(
        {"write_property": "v", "changed_nodes": [1, "x"]},
        r"^options\.changed_nodes\[1\]: expected an internal node id, got str 'x'$",
        call="structural_write",
    ),
    "structural: features not a list": structural_case(
        {"features": "degree"},
        r"^options\.features: expected a non-empty list of 'degree', 'fastrp', got str 'degree'$",
    ),
    "structural: an unknown feature": structural_case(
        {"features": ["degree", "pagerank"]},
        r"^options\.features\[1\]: expected a non-empty list of 'degree', 'fastrp', got str ",
    ),
    "structural: a feature named twice": structural_case(
        {"relationship_types": ["E", "E"]},
        r"^options\.relationship_types\[1\]: 'E' is named twice$",
    ),
    "structural: a bad degree scale": structural_case(
        {"degree": "sqrt"}, r"^options\.degree: expected one of 'log1p', 'count', got str 'sqrt'$"
    ),
    "structural: a dimension too large": structural_case(
        {"dimension": 5000},
        r"^options\.dimension: expected an integer from 1 to 4096, got int 5000$",
    ),
    "structural: too many iteration weights": structural_case(
        {"iteration_weights": [1.0] * 9},
        r"^options\.iteration_weights: expected a list of 1 to 8 numbers, got ",
    ),
    "structural: a weight that is no number": structural_case(
        {"iteration_weights": [1.0, "x"]},
        r"^options\.iteration_weights\[1\]: expected a finite number, got str 'x'$",
    ),
    "structural: a bad seed": structural_case(
        {"seed": 1.5}, r"^options\.seed: expected an integer, got float 1\.5$"
    ),
    "structural: a bad id_property": structural_case(
        {"id_property": 3}, r"^options\.id_property: expected a property name, got int 3$"
    ),
    "structural: a label no node has": structural_case(
        None, r"^label: no node has the label 'Nobody'$", label="Nobody"
    ),
    "structural: an id that is no integer": structural_case(
        {"id_property": "id"},
        r"^node 7 \(:X\) property 'id' \(options\.id_property\): expected an integer id, got "
        r"str 'x'$",
        label="X",
    ),
    "structural: two nodes with one id": structural_case(
        {"id_property": "qid"},
        r"^options\.id_property: expected unique ids within a label, got qid = 7 on the :Q nodes "
        r"with internal ids 10 and 11$",
        label="Q",
    ),
    "structural_write: a changed node's id another node of the label holds": structural_case(
        {"id_property": "qid", "write_property": "v", "changed_nodes": [11]},
        r"^options\.id_property: expected unique ids within a label, got qid = 7 on the :Q nodes "
        r"with internal ids 10 and 11$",
        label="Q",
        call="structural_write",
    ),
    "profile: no label": Case(
        "profile", (None, None, None), r"^label: expected a non-empty label name, got null$"
    ),
    "profile: a label no node has": Case(
        "profile",
        ("Nobody", None, None),
        r"^label: no node has label 'Nobody' \(the graph has 'L', 'P', 'Q', 'R', 'X'\)$",
    ),
    "profile: properties not a list": Case(
        "profile",
        ("P", "f", None),
        r"^properties: expected a list of property names or null \(every property\), got str 'f'$",
    ),
    "profile: a property name not a string": Case(
        "profile",
        ("P", ["f", 3], None),
        r"^properties\[1\]: expected a non-empty property name, got int 3$",
    ),
    "profile: a property named twice": Case(
        "profile", ("P", ["f", "f"], None), r"^properties\[1\]: 'f' is named twice$"
    ),
    "profile: unknown option": Case(
        "profile",
        ("P", None, {"top": 1}),
        r"^options: unknown option 'top' for tf_features\.profile \(allowed: 'max_distinct', ",
    ),
    "profile: option out of range": Case(
        "profile",
        ("P", None, {"top_k": -1}),
        r"^options\.top_k: expected an integer >= 0, got int -1$",
    ),
}

# Raise sites no call through Memgraph can reach: Memgraph checks each argument against the
# declared type before the call (module.hpp ValidateArguments; query_modules/tf_features.py:
# nodes, seeds, sources, targets, fanouts and pack's properties are lists, options and the typed
# procedures' properties a map or null, pattern a string), and a Memgraph integer is an int64, far
# inside float range. (check_names' "expected a list" is reached: a typed properties map's value.)
UNREACHABLE = {
    # declared MAP? / LIST OF MAP: Memgraph refuses anything else before the call
    ("reservoir.py", "_parse", "options: expected a map"),
    ("options.py", "options_map", "options: expected a map"),  # (structural, split_edges)
    ("reservoir.py", "_per_node", "changes: expected a list of change maps"),
    ("reservoir.py", "_per_node", "expected a change map"),
    ("mgp_access.py", "resolve", "expected a list of nodes or integer ids"),
    ("options.py", "parse_options", "options: expected a map"),
    ("tables.py", "_raise_bad_value", "expected a number in float range"),
    ("options.py", "parse_typed_call", "options: expected a map"),
    ("options.py", "parse_properties", "properties: expected a map of label"),
    ("pairs.py", "_parse_pair_options", "options: expected a map"),
    ("profile.py", "parse_profile_call", "options: expected a map"),
    # sample_typed and sample_pairs check their seeds' / pairs' times before any draw
    ("timed.py", "require_timing", "a step with a time is sampled"),
}


def _call(source: Any, case: Case, graph: EmbeddedGraph) -> Any:
    method = {
        "pack": source.pack_blob,
        "sample": source.sample_blob,
        "sample_per_node": source.sample_blobs_per_node,
        "describe": source.describe,
        "sample_typed": source.sample_typed,
        "schema": source.schema,
        "sample_pairs": source.sample_pairs,
        "split_edges": source.split_edges,  # a write procedure: a write transaction over Bolt
        "profile": lambda *a: profile_label(source, *a),
        "build_reservoirs": lambda *a: source.call_procedure(BUILD_RESERVOIRS, a),
        "update_reservoirs": lambda *a: source.call_procedure(UPDATE_RESERVOIRS, a),
        "structural": lambda *a: source.call_procedure(STRUCTURAL, a),
        "structural_write": lambda *a: source.call_procedure(STRUCTURAL_WRITE, a),
    }[case.call]
    args = [
        [graph.node(v.internal) if isinstance(v, Node) else v for v in a]
        if isinstance(a, list)
        else a
        for a in case.args
    ]
    return method(*args)


@pytest.fixture(scope="module")
def graphs():
    """The plain case graph, the typed one (for TYPED_CALLS), the hubs (the bounded mode) and the
    ledger (point-in-time pairs)."""
    return {
        "plain": case_graph(),
        "typed": typed_case_graph(),
        "hubs": hub_case_graph(),
        "ledger": ledger_case_graph(),
    }


@pytest.fixture(scope="module")
def raised_at():
    """Case name -> (file, function, first line of the raise statement) of its exception."""
    return {}


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_procedure_error_is_the_same_client_error_over_bolt_and_embedded(
    name, graphs, raised_at
):
    case = CASES[name]
    graph = graphs[case.graph or ("typed" if case.call in TYPED_CALLS else "plain")]
    driver = MemgraphLikeDriver(graph)
    bolt = BoltSource(driver, uri=URI, database=None)
    with pytest.raises(GraphDataError) as embedded_error:
        _call(EmbeddedSource(graph), case, graph)
    with pytest.raises(GraphDataError) as bolt_error:
        _call(bolt, case, graph)
    message = str(bolt_error.value)
    # the same class and message on both paths (before: ProcedureUnavailable or a bare QueryError
    # over Bolt), the procedure's own message, no traceback or server path
    assert type(bolt_error.value) is type(embedded_error.value) is GraphDataError
    assert message == str(embedded_error.value)
    assert re.search(case.match, message), message
    assert "\n" not in message and "Traceback" not in message and "File " not in message
    # the Bolt error came from the server's text, hydrated by the driver
    server = bolt_error.value.__cause__
    assert isinstance(server, neo4j.exceptions.ClientError), server
    assert server.code == MEMGRAPH_ERROR_CODE
    assert server.message.startswith(f"tf_features.{case.call}: Traceback (most recent call")
    assert server.message.endswith(f": {message}\n")
    assert "PROCEDURE MEMORY LIMIT 1024 MB YIELD" in driver.calls[-1]
    # the write procedures in a write transaction (BoltSource.write); the rest read
    write = case.call in (
        "split_edges",
        "build_reservoirs",
        "update_reservoirs",
        "structural_write",
    )
    assert driver.modes[-1] == ("execute_write" if write else "execute_read"), driver.modes
    raised = embedded_error.value.__cause__.__cause__
    last = traceback.extract_tb(raised.__traceback__)[-1]
    raised_at[name] = (pathlib.Path(last.filename).name, last.name, last.lineno)


def _raise_sites() -> dict[tuple[str, str, int], str]:
    """(file, function, line) -> the message's start, for each ``raise`` of a procedure input
    error in memgraph_tf/procedures (and of ``tables.no_node_error``, which builds one)."""
    classes = {"ProcedureInputError", "OptionError", "NodeNotFoundError", "PropertyValueError"}
    sites = {}
    for path in sorted(PROCEDURES_DIR.glob("*.py")):
        tree = ast.parse(path.read_text())
        for func in ast.walk(tree):
            if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(func):
                if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
                    callee = ast.unparse(node.exc.func)
                    if callee.split(".")[-1] in classes or callee.endswith("no_node_error"):
                        text = ast.unparse(node.exc.args[0]) if node.exc.args else ""
                        sites[(path.name, func.name, node.lineno)] = text
    return sites


def test_the_cases_reach_every_raise_of_the_procedures(raised_at):
    """Every raise site is hit by a case above, or listed as unreachable with its reason, so a new
    error of the procedures without a case fails here."""
    if len(raised_at) < len(CASES):  # the cases ran in another process, or were deselected
        pytest.skip("needs the case tests of this module to run first, in this process")
    sites = _raise_sites()
    unreachable = {
        site
        for site, text in sites.items()
        if any((f, fn) == site[:2] and words in text for f, fn, words in UNREACHABLE)
    }
    assert len(unreachable) == len(UNREACHABLE), unreachable
    hit = set(raised_at.values())
    missed = {site: text for site, text in sites.items() if site not in hit | unreachable}
    assert not missed, missed


# ------------------------------------------------------------- the translator's other branches
def _raise_chained():
    try:
        int("x")
    except ValueError as cause:
        raise RuntimeError("the procedure failed\nat step 2") from cause


def test_a_chained_exception_and_other_failures_become_a_one_line_query_error():
    try:
        _raise_chained()
    except RuntimeError as exc:
        text = "m.p: " + "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    assert "The above exception was the direct cause" in text
    failure = parse_procedure_failure(text, ["m.p"])
    assert (failure.error_class, failure.message) == (
        "RuntimeError",
        "the procedure failed\nat step 2",
    )
    error = translate_procedure_failure(text, where=URI, procedures=["m.p"])
    assert type(error) is QueryError
    assert (
        str(error) == f"{URI}: procedure m.p failed: RuntimeError: the procedure failed\nat step 2"
    )
    # an exception with no frame (set by Memgraph's C code): the text is the exception alone
    bare = translate_procedure_failure(
        "m.p: TypeError: Unsupported PyObject conversion\n", where=URI, procedures=["m.p"]
    )
    assert str(bare) == f"{URI}: procedure m.p failed: TypeError: Unsupported PyObject conversion"
    # not about that procedure: left to the caller
    assert translate_procedure_failure(text, where=URI, procedures=["m.q"]) is None


def test_only_a_missing_procedure_is_procedure_unavailable():
    bolt = BoltSource(MemgraphLikeDriver(EmbeddedGraph(modules=[])), uri=URI, database=None)
    bolt._use_procedures = True
    # Memgraph's own words (operator.cpp CallProcedureCursor, cypher_main_visitor.cpp)
    missing = "There is no procedure named 'tf_features.pack'."
    error = bolt._translate(hydrated(missing), "CALL tf_features.pack($n) YIELD blob RETURN blob")
    assert type(error) is ProcedureUnavailable
    assert str(error) == f"{URI}: query failed: {missing}"
    # a procedure whose message says "unknown ... procedure" is not missing (before: it was)
    try:
        raise ValueError("unknown procedure step 'x'")
    except ValueError as exc:
        text = "tf_features.pack: " + "".join(traceback.format_exception(exc))
    error = bolt._translate(hydrated(text), "CALL tf_features.pack($n) YIELD blob RETURN blob")
    assert type(error) is QueryError
    assert (
        str(error)
        == f"{URI}: procedure tf_features.pack failed: ValueError: unknown procedure step 'x'"
    )


# ------------------------------------------------------------------------------------ end to end
LABEL = "BatchItem"  # the label of the batch bundle's sampling options (classify_kit.OPTIONS)
FIRST_ID = 3_000_000  # far from the keyed graph's ids, which share the label on the server
N_KNOWN = 1_500  # + 1 node the procedures do not know: a batch of 1,501 ids
WHERE = f"n.id >= {FIRST_ID}"


@pytest.fixture(scope="module")
def memgraph_like(arcadedb_server):
    """A Bolt server whose procedure calls fail as on Memgraph: the server (ArcadeDB) holds 1,501
    ``BatchItem`` nodes, the procedures' graph the first 1,500 of them (node ``FIRST_ID + 1500``
    was deleted there meanwhile): (a function making a BoltSource on it, its driver, the unknown
    id)."""
    import neo4j

    from tests.graphs import DIM

    rng = np.random.default_rng(7)
    features = rng.normal(size=(N_KNOWN + 1, DIM)).round(3).tolist()
    graph = EmbeddedGraph()
    for i in range(N_KNOWN):
        graph.add_node([LABEL], {"id": FIRST_ID + i, "features": features[i]})
    for i in range(N_KNOWN):
        graph.add_edge(i, int(rng.integers(N_KNOWN)), "LINK")
    inner = neo4j.GraphDatabase.driver(arcadedb_server.uri, auth=arcadedb_server.auth)
    driver = MemgraphLikeDriver(graph, inner, arcadedb_server.database)

    def make() -> BoltSource:
        return BoltSource(driver, uri=arcadedb_server.uri, database=arcadedb_server.database)

    rows = [{"id": FIRST_ID + i, "features": f} for i, f in enumerate(features)]
    with make() as source:
        source.write(f"MATCH (n:{LABEL}) WHERE {WHERE} DETACH DELETE n")
        source.write(
            f"UNWIND $rows AS r CREATE (:{LABEL} {{id: r.id, features: r.features}})",
            {"rows": rows},
        )
    try:
        yield make, driver, FIRST_ID + N_KNOWN
    finally:
        with make() as source:
            source.write(f"MATCH (n:{LABEL}) WHERE {WHERE} DETACH DELETE n")
        driver.shutdown()


def test_classify_over_bolt_isolates_the_unknown_node_in_a_1501_id_batch(
    memgraph_like, backend, bundle_base, monkeypatch, capsys
):
    from memgraph_tf import cli
    from memgraph_tf.client import sources

    make, driver, unknown = memgraph_like
    monkeypatch.setattr(sources, "open_graph", lambda uri, **options: make())
    monkeypatch.setattr(cli, "_classify_backend", lambda args: _Shared(backend))
    reason = f"unknown node id {unknown} (no :{LABEL} node has id = {unknown})"
    common = ["classify", "--graph", "bolt://x", "--model", str(bundle_base), "--no-progress"]
    common += ["--batch-size", "2048"]
    # before: the whole run failed (ProcedureUnavailable), with or without --skip-invalid; the
    # message was the server's ~20-line traceback
    last_ten = f"n.id >= {unknown - 10}"
    code = cli.main([*common, "--where", last_ten, "--write-property", "strict"])
    err = capsys.readouterr().err
    assert code == 1
    assert err.strip() == (
        f"memgraph-tf classify: stopped at node {unknown}: {reason}. Nothing of its batch was "
        f"written; 0 node(s) classified before it (rerun with --skip-invalid to skip such nodes)"
    )
    code = cli.main([*common, "--where", WHERE, "--skip-invalid"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert f"skipped node {unknown}: {reason}" in out
    assert "Traceback" not in out + err and "File " not in out + err
    with make() as source:
        written = source.read(
            f"MATCH (n:{LABEL}) WHERE {WHERE} AND n.predicted_class_version = 1 "
            "RETURN count(n) AS c"
        )
    assert written[0]["c"] == N_KNOWN
    calls = [c for c in driver.calls if "tf_features." in c]
    assert calls and all("PROCEDURE MEMORY LIMIT 1024 MB YIELD" in c for c in calls)


class _Shared(ModelBackend):
    """The module's loaded bundle, for the CLI (which closes its model; this one stays open)."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.config, self.version = inner, inner.config, inner.version

    def classify(self, blobs):
        return self.inner.classify(blobs)


class _SamePageEveryTime(BoltSource):
    """A Bolt server that answers every keyset page with its first one (it ignores the paging
    query's ``key > $after``)."""

    first_page: list | None = None

    def read(self, query, parameters=None):
        rows = super().read(query, parameters)
        if "ORDER BY id LIMIT" in query:
            self.first_page = self.first_page or rows
            return self.first_page
        return rows


@pytest.mark.parametrize("overwrite", [False, True])
def test_a_server_returning_the_same_page_twice_stops_the_run_naming_the_key(
    memgraph_like, backend, overwrite
):
    from memgraph_tf.batch import classify_graph
    from memgraph_tf.errors import KeysetPagingError

    make, driver, _ = memgraph_like
    source = _SamePageEveryTime(driver, uri=URI, database=make().database)
    first, last = FIRST_ID, FIRST_ID + 7
    where = {"where": "n.id >= $lo AND n.id < $hi", "where_params": {"lo": first, "hi": first + 20}}
    # before the guard, with overwrite: the same 8 keys paged and classified forever
    with pytest.raises(KeysetPagingError) as info:
        classify_graph(
            source,
            backend,
            batch_size=8,
            overwrite=overwrite,
            write_property=f"paged_{overwrite}",  # its own: no node of it is done before
            progress=False,
            **where,
        )
    assert str(info.value) == (
        f"keyset paging: page 2 returned key {first} after key {last} (expected keys > {last}, "
        "ascending): the server does not honour the paging query's n.`id` > $after ORDER BY key; "
        "8 node(s) read before it"
    )


# ------------------------------------------------------------------------- PROCEDURE MEMORY clause
def test_the_procedure_memory_limit_is_configurable_and_checked(monkeypatch):
    from memgraph_tf.client.sources import (
        DEFAULT_PROCEDURE_MEMORY_LIMIT_MB,
        ENV_PROCEDURE_MEMORY,
        procedure_memory,
    )
    from memgraph_tf.procedures.options import DEFAULT_MAX_BLOB_BYTES

    monkeypatch.delenv(ENV_PROCEDURE_MEMORY, raising=False)
    default = procedure_memory()
    # the base64 text of a largest blob (x4/3), held twice, fits
    assert default.limit_bytes >= 2 * DEFAULT_MAX_BLOB_BYTES * 4 // 3
    assert default.clause == f"PROCEDURE MEMORY LIMIT {DEFAULT_PROCEDURE_MEMORY_LIMIT_MB} MB"
    assert procedure_memory(512).clause == "PROCEDURE MEMORY LIMIT 512 MB"
    assert procedure_memory("unlimited").clause == "PROCEDURE MEMORY UNLIMITED"
    assert procedure_memory("unlimited").limit_bytes is None
    monkeypatch.setenv(ENV_PROCEDURE_MEMORY, "64")
    assert procedure_memory().limit_bytes == 64 * 2**20
    assert procedure_memory(8).limit_mb == 8  # the argument wins
    for bad in ("0", "1.5", "64MB", "-1"):
        monkeypatch.setenv(ENV_PROCEDURE_MEMORY, bad)
        with pytest.raises(ConfigurationError, match=rf"^{ENV_PROCEDURE_MEMORY}: expected a whole"):
            procedure_memory()
    for bad in (0, True, 2.0, 2**63, "lots"):
        with pytest.raises(
            ConfigurationError, match=r"^procedure_memory_limit_mb: expected a whole number of "
        ):
            procedure_memory(bad)


def test_the_embedded_source_honours_the_limit_naming_it():
    graph = EmbeddedGraph()
    for _ in range(300):
        graph.add_node(["P"], {"f": [float(j) for j in range(1000)]})
    nodes, call = list(range(300)), "CALL tf_features.pack($n, $p, $o) {} YIELD count"
    params = {"n": nodes, "p": ["f"], "o": {}}
    small = EmbeddedSource(graph, procedure_memory_limit_mb=1)
    with pytest.raises(QueryError) as info:  # a 1.2 MB blob, 1.6 MB as base64 text
        small.pack_blob(nodes, ["f"])
    assert str(info.value).startswith("embedded graph: procedure tf_features.pack failed: ")
    assert "over the procedure memory limit of 1,048,576 bytes (PROCEDURE MEMORY LIMIT 1 MB)" in (
        str(info.value)
    )
    assert len(EmbeddedSource(graph).pack_blob(nodes, ["f"])) > 2**20  # the default: 1024 MB
    # run(): the CALL's own clause, as Memgraph reads it
    with pytest.raises(QueryError, match=r"PROCEDURE MEMORY LIMIT 1 MB"):
        list(small.run(call.format("PROCEDURE MEMORY LIMIT 1024 KB"), params))
    assert list(small.run(call.format("PROCEDURE MEMORY UNLIMITED"), params)) == [{"count": 300}]
    with pytest.raises(ConfigurationError, match=r"Memory limit must be a non-negative integer"):
        list(small.run(call.format("PROCEDURE MEMORY LIMIT 0 MB"), params))
