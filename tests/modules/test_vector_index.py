"""Memgraph's vector index in the embedded runtime (memgraph_tf/embedded/vector_index.py).

What each test relies on is cited from Memgraph's documentation (memgraph/documentation
``pages/querying/vector-search.mdx``) or source (memgraph/memgraph: ``src/storage/v2/indices/
vector_index.cpp``, ``vector_index_utils.hpp``, ``src/storage/v2/vertex_accessor.cpp``,
``src/query/interpreter.cpp``, ``src/query/procedure/mg_procedure_impl.cpp``,
``query_modules/vector_search_module.cpp``, ``src/query/frontend/opencypher/grammar/
MemgraphCypher.g4``, ``tests/gql_behave/tests/memgraph_V1/features/vector_search.feature``).
"""

from __future__ import annotations

import logging
import textwrap

import numpy as np
import pytest

from memgraph_tf.embedded import ArgumentTypeError, EmbeddedGraph, ProcedureError
from memgraph_tf.embedded.vector_index import VectorIndexError

CREATE = 'CREATE VECTOR INDEX {name} ON {on} WITH CONFIG {{"dimension": 2, "capacity": 10}}'


def graph_with_index(on: str = ":L1(prop1)", name: str = "test_index") -> EmbeddedGraph:
    g = EmbeddedGraph(modules=[])
    g.execute(CREATE.format(name=name, on=on))
    return g


def size(g: EmbeddedGraph, name: str = "test_index") -> int:
    [row] = [r for r in g.execute("SHOW VECTOR INDEX INFO") if r["index_name"] == name]
    return row["size"]


# -- creating, showing, searching ----------------------------------------------------------------


def test_show_index_info_fields_and_defaults() -> None:
    """vector_search.feature "Get vector index info": the nine columns, metric l2sq and scalar
    kind f32 by default (interpreter.cpp kDefaultMetric / kDefaultScalarKind); the capacity is
    "at least the given value" (vector-search.mdx, Configuration parameters)."""
    g = graph_with_index()
    assert g.notifications == ["Created vector index test_index."]
    [row] = g.execute("SHOW VECTOR INDEX INFO")
    capacity = row.pop("capacity")
    assert capacity >= 10
    assert row == {
        "index_name": "test_index",
        "label": ":L1",
        "property": "prop1",
        "metric": "l2sq",
        "dimension": 2,
        "size": 0,
        "scalar_kind": "f32",
        "index_type": "label+property_vector",
    }
    assert g.call("vector_search.show_index_info") == g.execute("SHOW VECTOR INDEXES")


def test_search_distance_and_similarity_l2sq() -> None:
    """vector_search.feature "Search vector index": the two nearest of three, distance 0 / 1,
    similarity 1 / (1 + d) (vector_index_utils.hpp SimilarityFromDistance)."""
    g = graph_with_index()
    g.add_node(["L1"], {"prop1": [1.0, 2.0]})
    b = g.add_node(["L1"], {"prop1": [1.0, 1.0]})
    g.add_node(["L1"], {"prop1": [100.0, 150.0]})
    rows = g.call("vector_search.search", "test_index", 2, [1.0, 1.0])
    assert [(r["node"].id, r["distance"], r["similarity"]) for r in rows] == [
        (b, 0.0, 1.0),
        (0, 1.0, 0.5),
    ]
    assert set(rows[0]) == {"node", "distance", "similarity"}  # vector_search_module.cpp


def test_search_cos_similarity_is_one_minus_distance() -> None:
    """vector_index_utils.hpp SimilarityFromDistance: 1 - d for cos; vector-search.mdx's example
    (cos: [1, 2] against [2, 2] is 0.948683)."""
    g = EmbeddedGraph(modules=[])
    g.execute(
        'CREATE VECTOR INDEX i ON :Node(vector) WITH CONFIG {"dimension": 2, "capacity": 100, '
        '"metric": "cos"}'
    )
    g.add_node(["Node"], {"vector": [1, 2]})
    [row] = g.call("vector_search.search", "i", 1, [2.0, 2.0])
    assert row["similarity"] == pytest.approx(0.948683, abs=1e-5)
    assert row["distance"] == pytest.approx(1 - 0.948683, abs=1e-5)


def test_integer_query_and_property_reads_back_at_index_precision() -> None:
    """vector_search.feature "Vector search performs on integer values": an integer query
    vector works, and the property reads back from the index as f32 (2.0999999046325684);
    vector-search.mdx: the vector is stored only in the index (single-store)."""
    g = graph_with_index()
    n = g.add_node(["L1"], {"prop1": [2.1, 2.1]})
    [row] = g.call("vector_search.search", "test_index", 1, [2, 2])
    assert row["node"].id == n
    assert g.get_property(n, "prop1") == [2.0999999046325684, 2.0999999046325684]


def test_f16_scalar_kind_stores_half_precision() -> None:
    """vector-search.mdx "Scalar kind": the element type in the index; the value read back is
    the index's (vector_index.cpp: the property holds only the index id)."""
    g = EmbeddedGraph(modules=[])
    g.execute(
        'CREATE VECTOR INDEX i ON :N(v) WITH CONFIG {"dimension": 2, "capacity": 4, '
        '"scalar_kind": "float16"}'
    )
    n = g.add_node(["N"], {"v": [0.1, 3]})
    assert g.get_property(n, "v") == [float(np.float16(0.1)), 3.0]
    assert g.execute("SHOW VECTOR INDEX INFO")[0]["scalar_kind"] == "f16"


# -- writes the index follows -------------------------------------------------------------------


def test_wrong_dimension_is_refused_and_node_not_created() -> None:
    """vector_search.feature "Vector index raises error on property with wrong dimension";
    message from vector_index_utils.hpp UpdateVectorIndex."""
    g = graph_with_index()
    with pytest.raises(
        VectorIndexError,
        match=r"same number of dimensions as specified in the index\. \(node 0, property "
        r"'prop1': 3 values, index 'test_index' has dimension 2\)",
    ):
        g.add_node(["L1"], {"prop1": [1.1, 1.1, 1.1]})
    assert g.node_count == 0
    assert size(g) == 0


def test_list_of_non_numbers_is_refused() -> None:
    """vector_index_utils.hpp ListToVector: "Vector index property must be a list of floats or
    integers." (vertex_accessor.cpp TryConvertToVectorIndexProperty, for any list)."""
    g = graph_with_index()
    n = g.add_node(["L1"], {"prop1": [1.0, 2.0]})
    with pytest.raises(VectorIndexError, match="must be a list of floats or integers"):
        g.set_property(n, "prop1", ["a", "b"])
    assert g.get_property(n, "prop1") == [1.0, 2.0]
    assert size(g) == 1


def test_non_list_value_takes_the_node_out() -> None:
    """vertex_accessor.cpp TryConvertToVectorIndexProperty keeps a non-list as it is and
    vector_index.cpp UpdateOnSetProperty removes the node from the index."""
    g = graph_with_index()
    n = g.add_node(["L1"], {"prop1": [1.0, 2.0]})
    g.set_property(n, "prop1", "text")
    assert g.get_property(n, "prop1") == "text"
    assert size(g) == 0
    assert g.call("vector_search.search", "test_index", 5, [1.0, 2.0]) == []


def test_set_and_remove_property() -> None:
    """vector_search.feature "Setting property after index creation adds to vector index" and
    "Removing property removes node from vector index"."""
    g = graph_with_index()
    n = g.add_node(["L1"])
    g.set_property(n, "prop1", [3.0, 4.0])
    assert size(g) == 1
    [row] = g.call("vector_search.search", "test_index", 1, [3.0, 4.0])
    assert (row["node"].id, row["distance"]) == (n, 0.0)
    g.set_property(n, "prop1", [5.0, 6.0])  # an update replaces the vector
    assert g.call("vector_search.search", "test_index", 1, [5.0, 6.0])[0]["distance"] == 0.0
    assert size(g) == 1
    g.set_property(n, "prop1", None)
    assert size(g) == 0


def test_labels_added_and_removed() -> None:
    """vector_search.feature "Adding label after creating node with property adds to vector
    index", "Removing label removes node from vector index" and "Vertex with both labels remains
    in one index when removing one label" (vector_index.cpp UpdateOnAddLabel / RemoveLabel)."""
    g = graph_with_index()
    g.execute(CREATE.format(name="test_index2", on=":L2(prop1)"))
    n = g.add_node([], {"prop1": [5.0, 6.0]})
    assert (size(g), size(g, "test_index2")) == (0, 0)
    g.add_label(n, "L1")
    g.add_label(n, "L2")
    assert (size(g), size(g, "test_index2")) == (1, 1)
    g.remove_label(n, "L1")
    assert (size(g), size(g, "test_index2")) == (0, 1)
    g.remove_label(n, "L2")
    assert (size(g), size(g, "test_index2")) == (0, 0)
    assert g.get_property(n, "prop1") == [5.0, 6.0]


def test_adding_a_label_over_a_string_property_is_refused() -> None:
    """vector_index.cpp UpdateOnAddLabel converts the property with ListToVector, which refuses
    a string (unlike setting a string on an indexed node)."""
    g = graph_with_index()
    n = g.add_node([], {"prop1": "text"})
    with pytest.raises(VectorIndexError, match="must be a list of floats or integers"):
        g.add_label(n, "L1")
    assert g.labels(n) == []


def test_procedure_writes_show_at_once_and_rollback_restores(tmp_path) -> None:
    """vector-search.mdx: the vector index runs at READ_UNCOMMITTED (a write shows at once);
    a failed write procedure's transaction is aborted, its index changes with it."""
    path = tmp_path / "writer.py"
    path.write_text(
        textwrap.dedent(
            """
            import mgp

            @mgp.write_proc
            def put(ctx: mgp.ProcCtx, v: mgp.Vertex, fail: bool) -> mgp.Record(ok=bool):
                v.properties.set("prop1", [9.0, 9.0])
                if fail:
                    raise RuntimeError("failing after the write")
                return mgp.Record(ok=True)
            """
        )
    )
    g = EmbeddedGraph(modules=[path])
    g.execute(CREATE.format(name="test_index", on=":L1(prop1)"))
    n = g.add_node(["L1"], {"prop1": [1.0, 1.0]})
    with pytest.raises(ProcedureError, match="failing after the write"):
        g.call("writer.put", g.node(n), True)
    assert g.call("vector_search.search", "test_index", 1, [1.0, 1.0])[0]["distance"] == 0.0
    g.call("writer.put", g.node(n), False)
    assert g.call("vector_search.search", "test_index", 1, [9.0, 9.0])[0]["distance"] == 0.0
    assert size(g) == 1


def test_capacity_exceeded_grows_by_resize_coefficient() -> None:
    """vector_index_utils.hpp UpdateVectorIndex: a full index is resized by resize_coefficient
    (vector-search.mdx: default 2), no error."""
    g = EmbeddedGraph(modules=[])
    g.execute(
        'CREATE VECTOR INDEX i ON :N(v) WITH CONFIG {"dimension": 2, "capacity": 2, '
        '"resize_coefficient": 3}'
    )
    for k in range(7):
        g.add_node(["N"], {"v": [k, k]})
    [row] = g.execute("SHOW VECTOR INDEX INFO")
    assert row["size"] == 7
    assert row["capacity"] >= 7


# -- creating and dropping ----------------------------------------------------------------------


def test_create_over_existing_nodes_and_failure_leaves_no_index() -> None:
    """vector_index.cpp CreateIndex: existing covered nodes join; a bad one fails the CREATE
    (ListToVector) and the index is dropped again."""
    g = EmbeddedGraph(modules=[])
    g.add_node(["L1"], {"prop1": [1.0, 2.0]})
    g.add_node(["L2"], {"prop1": [1.0, 2.0]})
    g.execute(CREATE.format(name="ok", on=":L1(prop1)"))
    assert size(g, "ok") == 1
    g.add_node(["L3"], {"prop1": "text"})
    with pytest.raises(VectorIndexError, match="must be a list of floats or integers"):
        g.execute(CREATE.format(name="bad", on=":L3(prop1)"))
    assert [r["index_name"] for r in g.execute("SHOW VECTOR INDEX INFO")] == ["ok"]


def test_duplicate_name_or_target_is_a_notification(caplog) -> None:
    """interpreter.cpp: a failed CreateVectorIndex (vector_index.cpp SetupIndex: the name or the
    (label filter, property) is taken) is a notification, not an error."""
    g = graph_with_index()
    taken = "Error while creating vector index {}, for more information check the logs."
    with caplog.at_level(logging.WARNING):
        g.execute(CREATE.format(name="test_index", on=":Other(p)"))
    assert g.notifications == [taken.format("test_index")]
    assert taken.format("test_index") in caplog.text
    g.execute(CREATE.format(name="again", on=":L1(prop1)"))
    assert g.notifications == [taken.format("again")]
    assert len(g.execute("SHOW VECTOR INDEX INFO")) == 1


def test_drop() -> None:
    """interpreter.cpp: "Dropped vector index {}." / "Vector index {} doesn't exist." (a
    notification); vector_search.feature "Dropping vector index restores vectors to vertex
    properties"."""
    g = graph_with_index()
    n = g.add_node(["L1"], {"prop1": [1.0, 2.0]})
    g.execute("DROP VECTOR INDEX test_index")
    assert g.notifications == ["Dropped vector index test_index."]
    assert g.execute("SHOW VECTOR INDEX INFO") == []
    assert g.get_property(n, "prop1") == [1.0, 2.0]
    g.execute("DROP VECTOR INDEX test_index;")
    assert g.notifications == ["Vector index test_index doesn't exist."]


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ("{}", "Vector index config map is empty. Please provide mandatory fields"),
        ('{"capacity": 10}', "Vector index spec must have a 'dimension' field."),
        ('{"dimension": 2}', "Vector index spec must have a 'capacity' field."),
        (
            '{"dimension": 2, "capacity": 10, "metric": "jaccard"}',
            "Unsupported metric name: jaccard. Supported metrics are l2sq",
        ),
        (
            '{"dimension": 2, "capacity": 10, "scalar_kind": "f128"}',
            "Unsupported scalar name: f128. Supported scalars are b1x8",
        ),
        ("$config", "WITH CONFIG expression must evaluate to a map."),
    ],
)
def test_config_errors(config: str, message: str) -> None:
    """interpreter.cpp VectorIndexConfigFromTypedMap and the $config branch of the vector index
    query; vector_index_utils.hpp MetricFromName / ScalarFromName (jaccard is listed in
    vector-search.mdx but refused by MetricFromName)."""
    g = EmbeddedGraph(modules=[])
    with pytest.raises(VectorIndexError, match=message.replace(".", r"\.").replace("$", r"\$")):
        g.execute(f"CREATE VECTOR INDEX i ON :A(p) WITH CONFIG {config}", {"config": 42})


def test_config_aliases_and_parameters() -> None:
    """vector_index_utils.hpp MetricFromName / ScalarFromName aliases; vector-search.mdx "Using
    parameters for configuration" (the whole map, or single values)."""
    g = EmbeddedGraph(modules=[])
    g.execute(
        "CREATE VECTOR INDEX a ON :A(p) WITH CONFIG $config",
        {
            "config": {
                "dimension": 3,
                "capacity": 8,
                "metric": "euclidean_sq",
                "scalar_kind": "double",
            }
        },
    )
    g.execute(
        'create vector index b on :B(p) with config {"dimension": $dim, capacity: $cap, '
        '"metric": "angular"}',
        {"dim": 4, "cap": 8},
    )
    rows = {r["index_name"]: r for r in g.execute("SHOW VECTOR INDEX INFO")}
    assert (rows["a"]["metric"], rows["a"]["scalar_kind"], rows["a"]["dimension"]) == (
        "l2sq",
        "f64",
        3,
    )
    assert (rows["b"]["metric"], rows["b"]["dimension"]) == ("cos", 4)


# -- label filters and the grammar --------------------------------------------------------------


def test_label_filters_any_all_wildcard() -> None:
    """vector_search.feature "Create wildcard vector index", "Create OR vector index on multiple
    labels (with optional colon prefix)", "Create AND vector index on multiple labels": what
    each covers and its label text (*, :A|B, :A&B)."""
    g = EmbeddedGraph(modules=[])
    g.execute(CREATE.format(name="w", on="(embedding)"))
    g.execute(CREATE.format(name="o", on=":A|:B(embedding)"))
    g.execute(CREATE.format(name="a", on=":A&B(embedding)"))
    g.add_node(["A", "B"], {"embedding": [1.0, 2.0]})
    g.add_node(["A"], {"embedding": [3.0, 4.0]})
    g.add_node(["C"], {"embedding": [5.0, 6.0]})
    rows = {r["index_name"]: (r["label"], r["size"]) for r in g.execute("SHOW VECTOR INDEX INFO")}
    assert rows == {"w": ("*", 3), "o": (":A|B", 2), "a": (":A&B", 1)}
    found = g.call("vector_search.search", "w", 10, [1.0, 2.0])
    assert [r["distance"] for r in found] == [0.0, 8.0, 32.0]


@pytest.mark.parametrize(
    "statement",
    [
        "CREATE VECTOR INDEX `my index` ON :`La bel`(`p``q`) WITH CONFIG {dimension: 2, "
        "capacity: 1}",
        "Create Vector Index i On :A|B|:C(p) With Config {'dimension': 2, 'capacity': 1};",
        'CREATE VECTOR INDEX index ON :A&:B(p) WITH CONFIG {`dimension`: 2, "capacity": 1}',
        "SHOW VECTOR INDEX INFO",
        "show vector indexes;",
        "DROP VECTOR INDEX `x`",
    ],
)
def test_grammar_accepts(statement: str) -> None:
    """MemgraphCypher.g4 vectorIndexLabels / createVectorIndex / dropVectorIndex (names are
    symbolicName: identifiers, keywords or backtick-quoted; the colon after | or & optional;
    configMapOrExpression) and Cypher.g4 vectorIndexInfo."""
    g = EmbeddedGraph(modules=[])
    g.execute(statement)


@pytest.mark.parametrize(
    ("statement", "message"),
    [
        ("CREATE VECTOR INDEX i ON :A|B&C(p) WITH CONFIG {}", "a filter is all"),
        ("CREATE VECTOR INDEX i ON :A(p)", "expected WITH, got the end of the query"),
        # ON is a symbolicName (MemgraphCypher.g4 memgraphCypherKeyword): the name, then ':'
        ("CREATE VECTOR INDEX ON :A(p) WITH CONFIG {}", "expected ON, got ':'"),
        ("CREATE VECTOR INDEX i ON A(p) WITH CONFIG {}", "expected ':', got 'A'"),
        ("CREATE VECTOR INDEX i ON :A WITH CONFIG {}", "expected '\\(', got 'WITH'"),
        ("DROP VECTOR INDEX i extra", "expected the end of the query, got 'extra'"),
        ("SHOW VECTOR INDEX", "expected INFO"),
        ("MATCH (n) RETURN n", "expected CREATE, DROP or SHOW"),
        ("CREATE VECTOR INDEX i ON :A(p) WITH CONFIG {1: 2}", "expected a config key"),
    ],
)
def test_grammar_refuses(statement: str, message: str) -> None:
    """MemgraphCypher.g4 vectorIndexLabels: | and & do not mix, a label needs its colon, the
    property its parentheses; WITH CONFIG is mandatory; configKeyValuePair keys are literals
    whose value must be a string (interpreter.cpp ParseVectorIndexConfigMap ValueString)."""
    g = EmbeddedGraph(modules=[])
    with pytest.raises(VectorIndexError, match=message):
        g.execute(statement)


# -- vector_search.search's errors --------------------------------------------------------------


def test_search_errors() -> None:
    """vector_index.cpp SearchNodes: "Vector index {} does not exist."; mg_procedure_impl.cpp
    mgp_graph_search_vector_index: Double or Int elements only; vector_search_module.cpp's
    declared argument types (index_name STRING, result_set_size INTEGER, query_vector LIST)."""
    g = graph_with_index()
    g.add_node(["L1"], {"prop1": [1.0, 2.0]})
    with pytest.raises(ProcedureError, match=r"Vector index nope does not exist\."):
        g.call("vector_search.search", "nope", 1, [1.0, 2.0])
    with pytest.raises(ProcedureError, match="expected values are Double or Int!"):
        g.call("vector_search.search", "test_index", 1, ["invalid", "invalid"])
    with pytest.raises(ArgumentTypeError, match="'result_set_size' at position 1 must be of"):
        g.call("vector_search.search", "test_index", 1.5, [1.0, 2.0])
    with pytest.raises(ArgumentTypeError, match="requires exactly 3 arguments"):
        g.call("vector_search.search", "test_index", 1)


# -- recall --------------------------------------------------------------------------------------


def test_recall_against_exact_search() -> None:
    """USearch's HNSW search (what Memgraph's index runs) against exact l2sq search on random
    vectors: recall@10 over 50 queries, with a generous bound (measured: 1.000)."""
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((2000, 16)).astype(np.float32)
    g = EmbeddedGraph(modules=[])
    g.execute('CREATE VECTOR INDEX r ON :V(e) WITH CONFIG {"dimension": 16, "capacity": 2000}')
    for v in vectors:
        g.add_node(["V"], {"e": v.tolist()})
    queries = rng.standard_normal((50, 16)).astype(np.float32)
    hits = 0
    for q in queries:
        exact = set(np.argsort(((vectors - q) ** 2).sum(axis=1))[:10].tolist())
        found = g.call("vector_search.search", "r", 10, q.tolist())
        hits += len(exact & {r["node"].id for r in found})
    recall = hits / (10 * len(queries))
    logging.getLogger(__name__).info("vector index recall@10: %.3f", recall)
    print(f"vector index recall@10 = {recall:.3f}")
    assert recall >= 0.8
