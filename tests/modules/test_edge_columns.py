"""Edge feature columns of ``tf_features.sample_typed`` on the embedded runtime
(``options.edge_feature_spec``, memgraph_tf.procedures.edge_columns, docs/blob-format.md section
12): missing and null values, the relationship a slot carries among parallel ones whatever order
they were created in, the untouched draws, and every refusal naming what is at fault."""

from __future__ import annotations

import numpy as np
import pytest

from memgraph_tf import blob
from memgraph_tf.client import EmbeddedSource
from memgraph_tf.embedded import EmbeddedGraph
from memgraph_tf.errors import GraphDataError

STEP = "(:A)-[:R]->(:A)"
SPEC = {
    "label": "R",
    "properties": [
        {"name": "w", "kind": "numeric"},
        {"name": "kind", "kind": "categorical", "vocabulary": ["x"]},
    ],
}
OPTS = {"label": "A", "id_property": "id", "seed": 1, "edge_feature_spec": {STEP: SPEC}}
# (from, to, properties): 1 -> 2 twice, 1 -> 3 with a null kind, 2 -> 1 back
EDGES = [
    (1, 2, {"w": 5.0, "kind": "y"}),
    (1, 2, {"w": -1, "kind": "x"}),
    (1, 3, {"w": 2.0, "kind": None}),
    (2, 1, {"kind": "z"}),
]


def source_of(edges, extra_label_edges=()):
    g = EmbeddedGraph()
    ids = {i: g.add_node(["A"], {"id": i}) for i in (1, 2, 3)}
    for a, b, props in edges:
        g.add_edge(ids[a], ids[b], "R", props)
    for a, b, rel, props in extra_label_edges:
        g.add_edge(ids[a], ids[b], rel, props)
    return EmbeddedSource(g)


def test_a_slot_carries_its_relationship_missing_values_unset_and_padding_empty():
    got = blob.unpack(source_of(EDGES).sample_typed([1, 2, 3], {STEP: [2]}, None, OPTS))
    assert got["ids_h1_A"].tolist() == [[2, 3], [1, -1], [-1, -1]]
    # 1 -> 2: of the two, the smaller columns (w -1 before 5); 1 -> 3: kind null
    np.testing.assert_array_equal(got["edge_num_h1_s0"][..., 0], [[-1, 2], [0, 0], [0, 0]])
    assert got["edge_cat_h1_s0"][..., 0].tolist() == [[b"x", b""], [b"z", b""], [b"", b""]]
    assert got["edge_has_h1_s0"].tolist() == [
        [[True, True], [True, False]],
        [[False, True], [False, False]],
        [[False, False], [False, False]],
    ]


def test_the_bytes_do_not_depend_on_the_order_relationships_were_created_in():
    nn = {STEP: [2], "(:A)-[:R]-(:A)": [2]}
    opts = {**OPTS, "edge_feature_spec": {STEP: SPEC, "(:A)-[:R]-(:A)": SPEC}}
    one = source_of(EDGES).sample_typed([1, 2, 3], nn, None, opts)
    assert source_of(EDGES[::-1]).sample_typed([1, 2, 3], nn, None, opts) == one
    got = blob.unpack(one)
    # both ways from 2: the relationship 2 -> 1 (outgoing) before 1 -> 2 (incoming)
    assert got["ids_h1_A"][1].tolist()[2:] == [1, -1]
    assert got["edge_cat_h1_s1"][1, 0, 0] == b"z"


def test_the_draws_are_those_of_a_call_without_edge_features():
    nn = {STEP: [1, 1]}
    with_edges = blob.unpack(source_of(EDGES).sample_typed([1, 2, 3], nn, None, OPTS))
    plain_opts = {**OPTS, "edge_feature_spec": None}
    plain = blob.unpack(source_of(EDGES).sample_typed([1, 2, 3], nn, None, plain_opts))
    assert list(plain) == [n for n in with_edges if not n.startswith("edge_")]
    for name, value in plain.items():
        np.testing.assert_array_equal(with_edges[name], value)


def test_a_value_of_the_wrong_type_names_the_relationship_property_kind_and_value():
    bad = [*EDGES, (3, 1, {"w": [1, 2]})]
    message = (
        r"relationship \(:A \{id: 3\}\)-\[:R\]->\(:A \{id: 1\}\) property 'w' \(kind 'numeric'\): "
        r"expected a number, got list \[1, 2\]"
    )
    with pytest.raises(GraphDataError, match=message):
        source_of(bad).sample_typed([3], {STEP: [2]}, None, OPTS)


@pytest.mark.parametrize(
    ("edge_spec", "extra", "message"),
    [
        ("nope", {}, r"options.edge_feature_spec: expected a map of edge pattern -> feature spec"),
        (
            {"(:A)-[:S]->(:A)": SPEC},
            {},
            r"options.edge_feature_spec\['\(:A\)-\[:S\]->\(:A\)'\]: expected one of the steps of "
            r"num_neighbors \(\(:A\)-\[:R\]->\(:A\)\), got \(:A\)-\[:S\]->\(:A\)",
        ),
        (
            {STEP: {**SPEC, "label": "S"}},
            {},
            r"expected the spec's 'label' to be the relationship type 'R', got 'S'",
        ),
        (
            {STEP: {"label": "R", "properties": [{"name": "w", "kind": "required"}]}},
            {},
            r"property 'w': expected a kind other than 'required'",
        ),
        ({STEP: {"label": "R", "properties": []}}, {}, r"expected at least one relationship"),
        (
            {STEP: {"label": "R", "properties": [{"name": "w", "kind": "numeric", "std": 0}]}},
            {},
            r"options.edge_feature_spec\['\(:A\)-\[:R\]->\(:A\)'\]: .*'w'",
        ),
        ({STEP: SPEC}, {"layout": "compact"}, r"written in the dense layout only"),
    ],
)
def test_bad_options_are_refused_naming_them(edge_spec, extra, message):
    opts = {**OPTS, **extra, "edge_feature_spec": edge_spec}
    with pytest.raises(GraphDataError, match=message):
        source_of(EDGES).sample_typed([1], {STEP: [2]}, None, opts)


def test_over_a_timed_step_a_slot_carries_only_relationships_not_after_the_seed_time():
    timed = "(:A)-[:R {time: t}]->(:A)"
    spec = {"label": "R", "properties": [{"name": "w", "kind": "numeric"}]}
    edges = [(1, 2, {"w": 1.0, "t": 5}), (1, 2, {"w": -3.0, "t": 50}), (1, 3, {"w": 7.0, "t": 60})]
    source = source_of(edges)

    def carried(at):
        opts = {**OPTS, "at": at, "edge_feature_spec": {timed: spec}}
        got = blob.unpack(source.sample_typed([1], {timed: [2]}, None, opts))
        return got["ids_h1_A"][0].tolist(), got["edge_num_h1_s0"][0, :, 0].tolist()

    # at 10 the later relationships are not walked: neither their node nor their properties
    assert carried(10) == ([2, -1], [1.0, 0.0])
    # at 100 both relationships to 2 count, and the smaller columns win
    assert carried(100) == ([2, 3], [-3.0, 7.0])
