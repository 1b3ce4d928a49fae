"""Raw property columns (``options.feature_spec``) over real Bolt: ArcadeDB has no tf_features
procedures, so the client-side sampler runs the procedure's own code over plain Cypher; its blobs
equal the embedded query module's byte for byte (ints, floats, strings, booleans, lists, Date,
LocalDateTime and Duration values as the driver hands them, absent values), and a value of the
wrong type is refused with the same message on both."""

from __future__ import annotations

import random

import pytest

from memgraph_tf import blob
from memgraph_tf.client import EmbeddedSource
from memgraph_tf.client.feature_specs import infer_feature_spec
from memgraph_tf.embedded import EmbeddedGraph
from memgraph_tf.errors import GraphDataError
from tests.profile_kit import people

pytestmark = pytest.mark.arcadedb

LABEL = "RawPerson"
NN = {f"(:{LABEL})-[:KNOWS]->(:{LABEL})": [3, 2]}
N = 40


def _rows() -> list[dict]:
    rows = [{k: v for k, v in row.items() if v is not None} for row in people(N)]
    for i, row in enumerate(rows):
        row["id"] = i
    return rows


def _edges() -> list[tuple[int, int]]:
    rng = random.Random(3)
    return sorted({(i, rng.randrange(N)) for i in range(N) for _ in range(3)})


@pytest.fixture(scope="module")
def twins(bolt_source):
    rows, edges = _rows(), _edges()
    graph = EmbeddedGraph()
    for row in rows:
        graph.add_node([LABEL], row)
    for a, b in edges:
        graph.add_edge(a, b, "KNOWS")
    bolt_source.write(f"MATCH (n:{LABEL}) DETACH DELETE n")
    for row in rows:
        props = ", ".join(f"{k}: $row.{k}" for k in row)
        bolt_source.write(f"CREATE (n:{LABEL} {{{props}}})", {"row": row})
    bolt_source.write(
        f"UNWIND $edges AS e MATCH (a:{LABEL} {{id: e[0]}}), (b:{LABEL} {{id: e[1]}}) "
        "CREATE (a)-[:KNOWS]->(b)",
        {"edges": [list(e) for e in edges]},
    )
    assert not bolt_source.has_procedures()
    embedded = EmbeddedSource(graph)
    spec = infer_feature_spec(embedded, LABEL, timestamps={"created": "s"})
    yield embedded, bolt_source, spec
    bolt_source.write(f"MATCH (n:{LABEL}) DETACH DELETE n")  # the server is shared by modules


def test_the_same_raw_blobs_byte_for_byte(twins):
    embedded, bolt, spec = twins
    kinds = {p.kind for p in spec.properties}
    assert kinds == {"numeric", "categorical", "multi_categorical", "temporal", "boolean"}
    options = {
        "label": LABEL,
        "id_property": "id",
        "seed": 5,
        "feature_spec": {LABEL: spec.to_dict()},
    }
    seeds = [0, 3, 7, 39, 3]
    expected = embedded.sample_typed(seeds, NN, None, options)
    assert bolt.sample_typed(seeds, NN, None, options) == expected
    sections = blob.unpack(expected)
    assert {"num_h0_RawPerson", "time_h2_RawPerson", "cat_h1_RawPerson", "has_h2_RawPerson"} <= set(
        sections
    )
    # absent values ('score' on every fifth node, 'seen' on every fourth) read as absent
    has = sections["has_h0_RawPerson"][:, 0]
    names = [p.name for p in spec.properties]
    rows = _rows()
    for name in ("score", "seen", "age"):
        want = [name in rows[s] for s in seeds]
        assert has[:, names.index(name)].tolist() == want, name
    assert not all(name in rows[0] for name in ("score", "seen"))
    for other in (
        {**options, "seed": 6},
        {**options, "layout": "compact"},  # raw tables (docs/blob-format.md section 11, rule 7)
        {**options, "layout": "sparse"},
    ):
        assert bolt.sample_typed(seeds, NN, None, other) == embedded.sample_typed(
            seeds, NN, None, other
        ), other


def test_a_wrong_type_is_the_same_error_on_both(twins):
    embedded, bolt, spec = twins
    raw = spec.to_dict()
    for prop in raw["properties"]:
        if prop["name"] == "country":  # declared a Date: the strings are refused
            prop.clear()
            prop.update({"name": "country", "kind": "temporal", "type": "Date"})
    options = {"label": LABEL, "id_property": "id", "feature_spec": {LABEL: raw}}
    message = (
        r"node with id = 0 \(:RawPerson\) property 'country' \(kind 'temporal'\): expected a "
        r"Date, got str '"
    )
    for source in (embedded, bolt):
        with pytest.raises(GraphDataError, match=message):
            source.sample_typed([0], NN, None, options)


def test_the_same_raw_pair_blobs_byte_for_byte(twins):
    embedded, bolt, spec = twins
    options = {
        "source_label": LABEL,
        "id_property": "id",
        "seed": 2,
        "negatives": 1,
        "feature_spec": {LABEL: spec.to_dict()},
    }
    sources, targets = [0, 5, 9], [11, 20, 31]
    expected = embedded.sample_pairs(sources, targets, NN, None, options)
    assert bolt.sample_pairs(sources, targets, NN, None, options) == expected
    assert {"src.cat_h1_RawPerson", "dst.time_h2_RawPerson"} <= set(blob.unpack(expected))
