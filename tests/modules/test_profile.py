"""``tf_features.profile`` through the embedded runtime (Memgraph's real mgp.py converts the
result, so only values Memgraph can return pass): per property the types seen, coverage,
statistics, list lengths, cardinality and top values, checked against figures computed here with
the standard library.

Values as Memgraph hands them to a procedure: mgp.py (Memgraph's include/mgp.py, the file the
embedded runtime loads) maps Date, LocalDateTime and Duration to ``datetime.date``,
``datetime.datetime`` and ``datetime.timedelta``; a property set to null is removed (openCypher
SET semantics; the runtime's ``set_property``), so a node lacks it."""

from __future__ import annotations

import datetime
import statistics

import pytest

from memgraph_tf.embedded import EmbeddedGraph, ProcedureError
from tests.profile_kit import COUNTRIES, LABEL, embedded_people, people


def _profile(graph, *args):
    (row,) = graph.call("tf_features.profile", LABEL, *args)
    return row


def _by_name(row):
    return {p["name"]: p for p in row["properties"]}


def test_every_property_of_the_label_is_profiled():
    rows = people()
    row = _profile(embedded_people(), None)
    assert row["label"] == LABEL and row["count"] == len(rows)
    assert [p["name"] for p in row["properties"]] == sorted(rows[0])  # "Other" node not counted
    props = _by_name(row)

    ages = [r["age"] for r in rows]
    age = props["age"]
    assert age["types"] == [{"type": "int", "count": len(rows)}]
    assert (age["count"], age["missing"], age["coverage"]) == (len(rows), 0, 1.0)
    assert age["numeric"]["min"] == min(ages) and age["numeric"]["max"] == max(ages)
    assert age["numeric"]["mean"] == statistics.fmean(ages)
    assert age["numeric"]["std"] == pytest.approx(statistics.pstdev(ages), rel=1e-12)
    assert age["cardinality"] == len(set(ages)) and age["cardinality_exact"] is True

    scores = [r["score"] for r in rows if r["score"] is not None]
    score = props["score"]
    assert score["types"] == [
        {"type": "float", "count": len(scores)},
        {"type": "missing", "count": len(rows) - len(scores)},
    ]
    assert score["coverage"] == len(scores) / len(rows)
    assert score["numeric"]["mean"] == pytest.approx(statistics.fmean(scores), rel=1e-12)
    assert score["top"] == [] and score["cardinality"] is None  # floats are not categories

    country = props["country"]
    counts = {c: sum(r["country"] == c for r in rows) for c in COUNTRIES}
    expected = sorted(((-n, c) for c, n in counts.items() if n), key=lambda t: t)
    assert country["top"] == [{"value": c, "count": -n} for n, c in expected]
    assert country["numeric"] is None

    assert _by_name(row)["vip"]["top"] == [
        {"value": False, "count": sum(not r["vip"] for r in rows)},
        {"value": True, "count": sum(r["vip"] for r in rows)},
    ]


def test_lists_report_lengths_element_types_and_element_categories():
    rows = people()
    props = _by_name(_profile(embedded_people(), ["tags", "emb"]))
    tags = props["tags"]
    lengths = [len(r["tags"]) for r in rows]
    assert {t["type"] for t in tags["types"]} <= {"list of string", "empty list"}
    assert tags["lengths"]["min"] == min(lengths) and tags["lengths"]["max"] == max(lengths)
    assert tags["lengths"]["mean"] == statistics.fmean(lengths)
    assert tags["element_types"] == [{"type": "string", "count": sum(lengths)}]
    element_counts = {t["value"]: t["count"] for t in tags["element_top"]}
    assert element_counts == {
        t: sum(t in r["tags"] for r in rows) for t in {t for r in rows for t in r["tags"]}
    }
    emb = props["emb"]
    assert emb["types"] == [{"type": "list of float", "count": len(rows)}]
    values = [v for r in rows for v in r["emb"]]
    assert emb["element_numeric"]["count"] == len(values)
    assert emb["element_numeric"]["mean"] == pytest.approx(statistics.fmean(values), rel=1e-12)
    assert emb["element_top"] == []


def test_temporal_values_are_summarised_in_their_units():
    rows = people()
    props = _by_name(_profile(embedded_people(), ["born", "seen", "wait"]))
    (born,) = props["born"]["temporal"]
    days = [(r["born"] - datetime.date(1970, 1, 1)).days for r in rows]
    assert born["type"] == "Date" and born["unit"] == "days since 1970-01-01"
    assert (born["min"], born["max"]) == (min(days), max(days))
    assert born["mean"] == statistics.fmean(days)
    (seen,) = props["seen"]["temporal"]
    micros = [
        (r["seen"] - datetime.datetime(1970, 1, 1)) // datetime.timedelta(microseconds=1)
        for r in rows
        if r["seen"] is not None
    ]
    assert seen["type"] == "LocalDateTime" and seen["count"] == len(micros)
    assert (seen["min"], seen["max"]) == (min(micros), max(micros))
    assert props["seen"]["coverage"] == len(micros) / len(rows)
    (wait,) = props["wait"]["temporal"]
    assert wait["type"] == "Duration" and wait["unit"] == "microseconds"
    assert wait["max"] == max(r["wait"] // datetime.timedelta(microseconds=1) for r in rows)


def test_mixed_types_are_counted_apart_and_true_is_not_one():
    graph = EmbeddedGraph()
    for value in [1, True, 1, "1", 2.5, [1, 2.0], [], ["x", 1]]:
        graph.add_node([LABEL], {"v": value})
    graph.add_node([LABEL], {})
    (prop,) = _profile(graph, ["v"])["properties"]
    assert prop["types"] == [
        {"type": "int", "count": 2},
        {"type": "bool", "count": 1},
        {"type": "empty list", "count": 1},
        {"type": "float", "count": 1},
        {"type": "list of mixed", "count": 1},
        {"type": "list of number", "count": 1},
        {"type": "missing", "count": 1},
        {"type": "string", "count": 1},
    ]
    assert prop["top"] == [
        {"value": 1, "count": 2},
        {"value": True, "count": 1},
        {"value": "1", "count": 1},
    ]
    assert prop["numeric"]["count"] == 3 and prop["numeric"]["mean"] == 4.5 / 3


def test_statistics_do_not_depend_on_node_order():
    values = [1e16, 1.0, -1e16, 0.1, 0.2, 3, 7.25, -0.3] * 5
    results = []
    for order in (values, values[::-1], sorted(values)):
        graph = EmbeddedGraph()
        for v in order:
            graph.add_node([LABEL], {"x": v})
        results.append(_profile(graph, ["x"])["properties"][0]["numeric"])
    assert results[0] == results[1] == results[2]
    assert results[0]["mean"] == float(sum(map(__import__("fractions").Fraction, values)) / 40)


def test_cardinality_beyond_the_cap_is_a_lower_bound():
    graph = EmbeddedGraph()
    for i in range(30):
        graph.add_node([LABEL], {"k": f"v{i % 12}"})
    (prop,) = _profile(graph, ["k"], {"max_distinct": 5, "top_k": 2})["properties"]
    assert prop["cardinality"] == 5 and prop["cardinality_exact"] is False
    assert len(prop["top"]) == 2
    (exact,) = _profile(graph, ["k"], {"max_distinct": 12})["properties"]
    assert exact["cardinality"] == 12 and exact["cardinality_exact"] is True


def test_non_finite_floats_are_counted_not_summed():
    graph = EmbeddedGraph()
    for v in (1.0, float("nan"), 3.0, float("inf")):
        graph.add_node([LABEL], {"x": v})
    numeric = _profile(graph, ["x"])["properties"][0]["numeric"]
    assert numeric == {"count": 2, "min": 1.0, "max": 3.0, "mean": 2.0, "std": 1.0, "non_finite": 2}


@pytest.mark.parametrize(
    "args, message",
    [
        ((None,), r"label: expected a non-empty label name, got null"),
        ((LABEL, "age"), r"properties: expected a list of property names or null .*str 'age'"),
        ((LABEL, ["age", 3]), r"properties\[1\]: expected a non-empty property name, got int 3"),
        ((LABEL, ["age", "age"]), r"properties\[1\]: 'age' is named twice"),
        (
            (LABEL, None, {"top": 3}),
            r"options: unknown option 'top' for tf_features.profile \(allowed: 'max_distinct', "
            r"'top_k'\)",
        ),
        ((LABEL, None, {"max_distinct": 0}), r"options.max_distinct: expected an integer >= 1, "),
        ((LABEL, None, {"top_k": "5"}), r"options.top_k: expected an integer >= 0, got str '5'"),
        (("Persn",), r"label: no node has label 'Persn' \(the graph has 'Other', 'Person'\)"),
    ],
)
def test_bad_arguments_name_the_parameter_and_value(args, message):
    graph = embedded_people(5)
    with pytest.raises(ProcedureError, match=message):
        graph.call("tf_features.profile", *args)


class _AbortAt:
    """An abort flag that reads true from check number ``at`` on (counting every check)."""

    def __init__(self, at=None):
        self.at, self.checks = at, 0

    def __bool__(self):
        self.checks += 1
        return self.at is not None and self.checks >= self.at


def test_the_scan_checks_for_abort():
    graph = EmbeddedGraph()
    for i in range(3000):
        graph.add_node([LABEL], {"x": i})
    counter = _AbortAt()
    graph.request_abort(counter)
    assert _profile(graph, ["x"])["count"] == 3000
    assert counter.checks >= 3000 // 256
    graph.request_abort(_AbortAt(at=counter.checks))  # the last check, at the end of the scan
    with pytest.raises(ProcedureError, match="AbortError"):
        graph.call("tf_features.profile", LABEL, ["x"])
