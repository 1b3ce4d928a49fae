"""Feature specs: the spec model (JSON round trip, validation naming label, property, kind and
value), ``infer_feature_spec`` through the embedded runtime, and ``tf_features.profile`` / the
inferred spec over ArcadeDB (the client-side fallback) equal to the embedded runtime's."""

from __future__ import annotations

import datetime
import json
import statistics

import pytest

from memgraph_tf.client.feature_specs import infer_feature_spec, profile_label
from memgraph_tf.client.sources import EmbeddedSource
from memgraph_tf.embedded import EmbeddedGraph
from memgraph_tf.errors import ConfigurationError, GraphDataError
from memgraph_tf.feature_spec import (
    BooleanSpec,
    CategoricalSpec,
    FeatureSpecError,
    LabelSpec,
    MultiCategoricalSpec,
    NumericSpec,
    RequiredSpec,
    TemporalSpec,
)
from tests.profile_kit import LABEL, embedded_people, people


# ------------------------------------------------------------------------------ the spec model
def _spec():
    return LabelSpec(
        "P",
        [
            RequiredSpec("features"),
            NumericSpec("age", default=30.5, mean=30.5, std=4.0, missing_indicator=True),
            NumericSpec("emb", length=3),
            CategoricalSpec("country", vocabulary=["de", "fr"], oov_buckets=2),
            CategoricalSpec("city", hash_buckets=64, oov_buckets=0),
            MultiCategoricalSpec("tags", vocabulary=["a", 1, True]),
            TemporalSpec("born", type="Date", mean=9000.0, std=300.0),
            TemporalSpec("created", type="timestamp", unit="s"),
            BooleanSpec("vip", default=True),
        ],
    )


def test_json_round_trip_and_file(tmp_path):
    spec = _spec()
    text = spec.to_json()
    raw = json.loads(text)
    assert raw["label"] == "P" and raw["properties"][1] == {
        "name": "age",
        "kind": "numeric",
        "default": 30.5,
        "standardize": True,
        "mean": 30.5,
        "std": 4.0,
        "length": None,
        "missing_indicator": True,
    }
    assert LabelSpec.from_json(text) == spec
    spec.save(tmp_path / "p.json")
    edited = (tmp_path / "p.json").read_text().replace('"fr"', '"fr", "it"')
    (tmp_path / "p.json").write_text(edited)
    assert LabelSpec.load(tmp_path / "p.json").property("country").vocabulary == ["de", "fr", "it"]


def test_a_structural_record_travels_with_the_spec():
    """The options of the ``structural_write`` call that wrote a property: in the JSON when
    recorded (tuples as lists), absent when not, equal after the round trip."""
    call = {"features": ["fastrp"], "dimension": 3, "iteration_weights": (0.0, 1.0), "seed": 7}
    spec = LabelSpec("P", [NumericSpec("emb", length=3, structural=call)])
    raw = json.loads(spec.to_json())
    assert raw["properties"][0]["structural"] == {**call, "iteration_weights": [0.0, 1.0]}
    assert (
        LabelSpec.from_json(spec.to_json()).properties[0].structural
        == raw["properties"][0]["structural"]
    )
    assert (
        "structural"
        not in LabelSpec("P", [NumericSpec("emb", length=3)]).to_dict()["properties"][0]
    )


def _with(index: int, **changes):
    raw = _spec().to_dict()
    raw["properties"][index].update(changes)
    return raw


@pytest.mark.parametrize(
    "raw, message",
    [
        (
            _with(1, default="x"),
            r"label 'P' property 'age': kind 'numeric' takes a 'default' that is a number, "
            r"got 'x'",
        ),
        (_with(1, std=0), r"property 'age': kind 'numeric' takes a 'std' that is a number > 0"),
        (
            _with(1, kind="nummeric"),
            r"label 'P' property 'age': expected a 'kind' among 'required', 'numeric', "
            r"'categorical', 'multi_categorical', 'temporal', 'boolean', got 'nummeric'",
        ),
        (
            _with(0, default=1.0),
            r"property 'features': kind 'required' has no parameter 'default' \(it takes none\)",
        ),
        (
            _with(3, vocabulary=["de", "de"]),
            r"property 'country': kind 'categorical' takes a 'vocabulary' of distinct values, "
            r"got 'de' twice",
        ),
        (
            _with(3, hash_buckets=8),
            r"property 'country': kind 'categorical' takes a 'vocabulary' or 'hash_buckets', not "
            r"both",
        ),
        (
            _with(5, vocabulary=[1.5]),
            r"property 'tags': kind 'multi_categorical' takes a 'vocabulary' that is a list of "
            r"strings, integers or booleans, got \[1.5\]",
        ),
        (
            _with(6, unit="s"),
            r"property 'born': kind 'temporal' takes a 'unit' .* with type 'timestamp' only, got "
            r"type 'Date' and unit 's'",
        ),
        (
            _with(6, type="Time"),
            r"property 'born': kind 'temporal' takes a 'type' that is one of 'Date', ",
        ),
        (
            _with(8, default=1),
            r"property 'vip': kind 'boolean' takes a 'default' that is true or false, got 1",
        ),
        (_with(2, name="age"), r"label 'P' property 'age': expected each property once"),
        (
            _with(2, structural=["fastrp"]),
            r"property 'emb': kind 'numeric' takes a 'structural' that is null or a map of "
            r"tf_features.structural_write options, got \['fastrp'\]",
        ),
        (
            _with(2, structural={"seed": 7, "write_property": "other"}),
            r"property 'emb': kind 'numeric' takes 'structural' options whose 'write_property' "
            r"is the property itself, got 'other'",
        ),
        (
            _with(2, structural={"seed": 7, "changed_nodes": [1]}),
            r"property 'emb': kind 'numeric' takes 'structural' options of a call over the "
            r"whole label, got one with 'changed_nodes'",
        ),
        ({"label": "", "properties": []}, r"expected a non-empty 'label', got ''"),
    ],
)
def test_validation_names_label_property_kind_and_value(raw, message):
    with pytest.raises(FeatureSpecError, match=message):
        LabelSpec.from_dict(raw)


def test_invalid_json_is_refused_with_the_reason():
    with pytest.raises(FeatureSpecError, match=r"expected feature spec JSON, got invalid JSON"):
        LabelSpec.from_json("{")


# ------------------------------------------------------------------------------ inference
@pytest.fixture(scope="module")
def people_source():
    return EmbeddedSource(embedded_people())


def test_inferred_kinds_follow_the_documented_rules(people_source):
    rows = people()
    spec = infer_feature_spec(people_source, LABEL, timestamps={"created": "s"})
    kinds = {p.name: type(p) for p in spec.properties}
    assert kinds == {
        "age": NumericSpec,
        "born": TemporalSpec,
        "country": CategoricalSpec,
        "created": TemporalSpec,
        "emb": NumericSpec,
        "score": NumericSpec,
        "seen": TemporalSpec,
        "tags": MultiCategoricalSpec,
        "vip": BooleanSpec,
        "wait": TemporalSpec,
    }
    ages = [r["age"] for r in rows]
    age = spec.property("age")
    assert age.mean == age.default == statistics.fmean(ages) and not age.missing_indicator
    assert age.std == pytest.approx(statistics.pstdev(ages), rel=1e-12)
    assert spec.property("score").missing_indicator is True  # some nodes lack it
    assert spec.property("emb").length == 3
    country_counts = {}
    for r in rows:
        country_counts[r["country"]] = country_counts.get(r["country"], 0) + 1
    ordered = sorted(country_counts, key=lambda c: (-country_counts[c], c))
    assert spec.property("country").vocabulary == ordered  # most frequent first
    assert spec.property("country").oov_buckets == 1
    assert set(spec.property("tags").vocabulary) == {t for r in rows for t in r["tags"]}
    assert spec.property("vip").default is False  # 40 of 60 nodes
    assert (spec.property("born").type, spec.property("seen").type) == ("Date", "LocalDateTime")
    assert spec.property("seen").missing_indicator is True
    created = spec.property("created")
    assert (created.type, created.unit) == ("timestamp", "s")
    assert LabelSpec.from_json(spec.to_json()) == spec


def test_a_large_vocabulary_turns_to_hashing(people_source):
    spec = infer_feature_spec(people_source, LABEL, ["country", "tags"], max_vocabulary=2)
    country, tags = spec.properties
    assert (country.vocabulary, country.hash_buckets) == ([], 16)  # 5 distinct: 2 x 5 -> 16
    assert (tags.vocabulary, tags.hash_buckets) == ([], 8)  # 4 distinct tags


def _mixed_graph():
    graph = EmbeddedGraph()
    for value in ["x", "y", "x", 4, 5.5]:
        graph.add_node([LABEL], {"v": value})
    graph.add_node([LABEL], {"w": {"a": 1}})
    return EmbeddedSource(graph)


def test_mixed_types_raise_or_keep_the_majority():
    source = _mixed_graph()
    with pytest.raises(
        FeatureSpecError,
        match=r"label 'Person' property 'v': expected values of one kind, got string \(3\), "
        r"float \(1\), int \(1\), missing \(1\); pass mixed='majority'",
    ):
        infer_feature_spec(source, LABEL, ["v"])
    (spec,) = infer_feature_spec(source, LABEL, ["v"], mixed="majority").properties
    assert isinstance(spec, CategoricalSpec)
    assert (spec.vocabulary, spec.missing_indicator) == (["x", "y"], True)
    with pytest.raises(
        FeatureSpecError, match=r"property 'w': no kind encodes values of type 'map' \(1 nodes\)"
    ):
        infer_feature_spec(source, LABEL, ["w"])


def test_with_majority_values_no_kind_encodes_count_as_missing():
    graph = EmbeddedGraph()
    for value in [1.5, 2.5, {"a": 1}]:
        graph.add_node([LABEL], {"v": value})
    source = EmbeddedSource(graph)
    with pytest.raises(
        FeatureSpecError, match=r"property 'v': no kind encodes values of type 'map'"
    ):
        infer_feature_spec(source, LABEL, ["v"])
    (spec,) = infer_feature_spec(source, LABEL, ["v"], mixed="majority").properties
    assert spec == NumericSpec("v", default=2.0, mean=2.0, std=0.5, missing_indicator=True)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"max_vocabulary": 0}, r"max_vocabulary: expected an integer >= 1, got 0"),
        ({"mixed": "first"}, r"mixed: expected 'error' or 'majority', got 'first'"),
        ({"timestamps": {"age": "h"}}, r"timestamps\['age'\]: expected a unit among 's', "),
        (
            {"timestamps": {"nope": "s"}},
            r"timestamps: expected properties of label 'Person', got 'nope'",
        ),
    ],
)
def test_bad_inference_arguments_are_named(people_source, kwargs, message):
    with pytest.raises(ConfigurationError, match=message):
        infer_feature_spec(people_source, LABEL, **kwargs)


def test_a_timestamp_must_hold_integers(people_source):
    with pytest.raises(FeatureSpecError, match=r"property 'score': a timestamp must hold integers"):
        infer_feature_spec(people_source, LABEL, ["score"], timestamps={"score": "s"})


def test_procedure_errors_reach_the_caller_as_graph_data_errors(people_source):
    with pytest.raises(GraphDataError, match=r"label: no node has label 'Nobody'"):
        profile_label(people_source, "Nobody")


# ------------------------------------------------------------------------------ over ArcadeDB
ARCADE_LABEL = "ProfilePerson"


@pytest.fixture(scope="module")
def arcade_people(bolt_source):
    """:func:`people` as ArcadeDB nodes (no tf_features procedures there: the client-side
    fallback profiles them), the absent values left out of each node."""
    rows = []
    for row in people():
        rows.append({k: v for k, v in row.items() if v is not None})
    bolt_source.write(f"MATCH (n:{ARCADE_LABEL}) DELETE n")
    for row in rows:
        props = ", ".join(f"{k}: $row.{k}" for k in row)
        bolt_source.write(f"CREATE (n:{ARCADE_LABEL} {{{props}}})", {"row": row})
    assert not bolt_source.has_procedures()
    return bolt_source


def _embedded_as(label):
    graph = EmbeddedGraph()
    for row in people():
        graph.add_node([label], {k: v for k, v in row.items() if v is not None})
    return EmbeddedSource(graph)


@pytest.mark.parametrize("properties", [None, ["score", "country", "tags", "born", "vip"]])
def test_the_fallback_profile_equals_the_procedure_s(arcade_people, properties):
    over_bolt = profile_label(arcade_people, ARCADE_LABEL, properties)
    embedded = profile_label(_embedded_as(ARCADE_LABEL), ARCADE_LABEL, properties)
    assert over_bolt == embedded


def test_the_inferred_spec_over_arcadedb_equals_the_embedded_one(arcade_people):
    kwargs = {"timestamps": {"created": "s"}}
    over_bolt = infer_feature_spec(arcade_people, ARCADE_LABEL, **kwargs)
    assert over_bolt == infer_feature_spec(_embedded_as(ARCADE_LABEL), ARCADE_LABEL, **kwargs)
    assert isinstance(over_bolt.property("born"), TemporalSpec)


def test_profile_dates_survive_bolt(arcade_people):
    (born,) = profile_label(arcade_people, ARCADE_LABEL, ["born"])["properties"]
    first = min(r["born"] for r in people())
    assert born["temporal"][0]["min"] == (first - datetime.date(1970, 1, 1)).days


def test_the_profile_over_bolt_with_the_procedure_equals_the_embedded_one():
    """A BoltSource on a server with the module calls ``tf_features.profile`` itself
    (tests/client/memgraph_like.py: the unchanged module through mgp.py behind the driver)."""
    from memgraph_tf.client.sources import BoltSource
    from tests.client.memgraph_like import MemgraphLikeDriver

    graph = embedded_people()
    driver = MemgraphLikeDriver(graph)
    bolt = BoltSource(driver, uri="bolt://memgraph.example:7687", database=None)
    assert bolt.has_procedures()
    names = ["age", "score", "country", "tags", "emb", "vip"]
    assert profile_label(bolt, LABEL, names) == profile_label(EmbeddedSource(graph), LABEL, names)
    assert "CALL tf_features.profile(" in driver.calls[-1]
