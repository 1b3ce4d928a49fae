"""The change log (memgraph_tf.client.change_log): Memgraph's trigger statements that write it,
checked against Memgraph's documented grammar and predefined variables; the application-written
log and its cursor reader over the embedded graph and over a real Bolt server (ArcadeDB);
``memgraph-tf install-triggers``."""

from __future__ import annotations

import re
import secrets

import pytest

from memgraph_tf import cli
from memgraph_tf.client.change_log import (
    CHANGE_LABEL,
    FIELDS,
    Change,
    ChangeLog,
    schema_statements,
    trigger_statements,
)
from memgraph_tf.errors import ConfigurationError

# memgraph/documentation pages/fundamentals/triggers.mdx, "Create a trigger":
#   CREATE TRIGGER trigger_name [ SECURITY ( DEFINER | INVOKER ) ]
#   [ ON [ () | --> ] CREATE | UPDATE | DELETE ] [ BEFORE | AFTER ] COMMIT
#   EXECUTE openCypherStatements
TRIGGER_GRAMMAR = re.compile(
    r"CREATE TRIGGER (?P<name>[A-Za-z_][A-Za-z0-9_]*)"
    r"(?: SECURITY (?:DEFINER|INVOKER))?"
    r"(?: ON(?: (?P<object>\(\)|-->))? (?P<event>CREATE|UPDATE|DELETE))?"
    r" (?P<phase>BEFORE|AFTER) COMMIT"
    r" EXECUTE (?P<query>.+)",
    re.DOTALL,
)

# the same page, "Predefined variables": the table of the variables each event type offers
DOCUMENTED_VARIABLES = {
    ("()", "CREATE"): {"createdVertices"},
    ("-->", "CREATE"): {"createdEdges"},
    ("()", "UPDATE"): {
        "setVertexProperties",
        "removedVertexProperties",
        "setVertexLabels",
        "removedVertexLabels",
        "updatedVertices",
    },
    ("-->", "UPDATE"): {"setEdgeProperties", "removedEdgeProperties", "updatedEdges"},
    ("()", "DELETE"): {"deletedVertices"},
    ("-->", "DELETE"): {"deletedEdges"},
}
ALL_VARIABLES = set().union(*DOCUMENTED_VARIABLES.values()) | {
    "createdObjects",
    "deletedObjects",
    "updatedObjects",
}


@pytest.mark.parametrize("id_property", [None, "id", "my key"])
def test_each_trigger_statement_follows_memgraphs_documented_grammar(id_property):
    statements = trigger_statements(id_property)
    events = set()
    for trigger in statements:
        match = TRIGGER_GRAMMAR.fullmatch(trigger.statement)
        assert match, trigger.statement
        assert match["name"] == trigger.name
        assert match["phase"] == "AFTER"
        assert match["object"] is not None and match["event"] is not None, trigger.statement
        events.add((match["object"], match["event"]))
        # the variables it reads are the ones its event type offers, and it reads one
        used = {w for w in re.findall(r"[A-Za-z]+", match["query"]) if w in ALL_VARIABLES}
        assert used, trigger.statement
        assert used <= DOCUMENTED_VARIABLES[(match["object"], match["event"])], trigger.statement
        key = "null" if id_property is None else f"v.`{id_property}`"
        if match["object"] == "()":
            assert f"key: {key}," in match["query"]
    assert events == set(DOCUMENTED_VARIABLES)  # every node and relationship event, once each
    assert len({t.name for t in statements}) == 6  # trigger names are globally unique


# memgraph/memgraph src/query/trigger_context.cpp (SetVertexLabel::ToMap and
# RemovedVertexLabel::ToMap): an updatedVertices entry of a label change holds `vertex`, `label`
# (and `event_type`), no `key`; a property entry holds `key`, no `label`;
# src/query/interpret/eval.cpp (PropertyLookup on a map): a missing key reads null, which
# collect() skips.
WRITTEN = re.compile(r"CREATE \(:MemgraphTfChange \{(?P<fields>.*)\}\)$")


def _written(statement: str) -> dict[str, str]:
    """The change node's fields a trigger statement writes: ``{name: Cypher expression}``."""
    match = WRITTEN.search(statement)
    assert match, statement
    return dict(re.findall(r"(\w+): ((?:\w+\([^)]*\)|[^,])+)", match["fields"]))


def test_the_node_update_trigger_logs_the_labels_set_or_removed_beside_the_properties():
    for trigger in trigger_statements("id"):
        written = _written(trigger.statement)
        assert set(written) - {"log", "seq", "logged_at"} <= set(FIELDS), written
        query = TRIGGER_GRAMMAR.fullmatch(trigger.statement)["query"]
        if trigger.event != "ON () UPDATE":
            assert "changed_labels" not in written and "u.label" not in query, trigger.statement
            continue
        # one change per node: its property entries' keys and its label entries' labels, both
        # collected in the same group, so a label change beside a property change is kept
        assert "UNWIND updatedVertices AS u WITH u.vertex AS v, " in query
        group = query.split("WITH u.vertex AS v, ", 1)[1].split(" WITH ", 1)[0]
        assert "collect(DISTINCT u.key) AS names" in group
        assert "collect(DISTINCT u.label) AS relabels" in group
        assert (written["properties"], written["changed_labels"]) == ("names", "relabels")


def test_a_label_change_is_a_label_change_whatever_else_the_update_names():
    both = Change("updated", "node", 1, properties=("name",), changed_labels=("Item",))
    assert both.relabelled
    assert Change("updated", "node", 1, changed_labels=("Old",)).relabelled
    assert Change("updated", "node", 1).relabelled  # names nothing: what changed is unknown
    assert not Change("updated", "node", 1, properties=("name",)).relabelled
    assert not Change("created", "node", 1).relabelled
    with pytest.raises(ConfigurationError, match=r"node 1: changed_labels: only a node update"):
        Change("created", "node", 1, changed_labels=("Item",))


def test_a_log_entry_without_changed_labels_is_read_by_what_it_names():
    """An entry written by a trigger that does not collect labels: no ``changed_labels``; one
    naming no property reads as a label change, one naming properties as a property update."""
    from memgraph_tf.client import EmbeddedSource
    from memgraph_tf.embedded import EmbeddedGraph

    source = EmbeddedSource(EmbeddedGraph(modules=[]))
    common = {"log": "default", "kind": "updated", "entity": "node", "labels": ["Item"]}
    source.graph.add_node([CHANGE_LABEL], {**common, "seq": 1, "element_id": 4})
    source.graph.add_node([CHANGE_LABEL], {**common, "seq": 2, "element_id": 5,
                                           "properties": ["f"]})  # fmt: skip
    changes, cursor = ChangeLog(source).read()
    assert cursor == 2
    assert [(c.element_id, c.changed_labels, c.relabelled) for c in changes] == [
        (4, (), True),
        (5, (), False),
    ]


def test_the_trigger_statements_refuse_a_bad_log_or_property_name():
    with pytest.raises(ConfigurationError, match=r"log: expected a letter .* got 'a-b'"):
        trigger_statements(log="a-b")
    with pytest.raises(ConfigurationError, match=r"id_property: expected a non-empty name"):
        trigger_statements("a`b")


def test_install_triggers_dry_run_prints_the_statements(capsys):
    code = cli.main(
        ["install-triggers", "--graph", "bolt://127.0.0.1:1", "--id-property", "id", "--dry-run"]
    )
    out = capsys.readouterr().out
    assert code == 0
    lines = out.splitlines()
    expected = schema_statements() + trigger_statements("id")
    assert [line.rstrip(";") for line in lines] == [t.statement for t in expected]


def test_install_triggers_on_the_embedded_graph_is_a_usage_error(capsys):
    code = cli.main(["install-triggers", "--graph", "embedded:synthetic"])
    err = capsys.readouterr().err
    assert code == 2
    assert "the embedded graph has no triggers" in err


@pytest.mark.arcadedb
def test_install_triggers_on_a_server_without_triggers_names_the_statement(
    arcadedb_server, capsys, monkeypatch
):
    monkeypatch.setenv("MEMGRAPH_TF_USER", arcadedb_server.user)
    monkeypatch.setenv("MEMGRAPH_TF_PASSWORD", arcadedb_server.password)
    monkeypatch.setenv("MEMGRAPH_TF_DATABASE", arcadedb_server.database)
    code = cli.main(["install-triggers", "--graph", arcadedb_server.uri])
    err = capsys.readouterr().err
    assert code == 2, err
    # the first statement is refused (ArcadeDB has no Memgraph constraint, index or trigger DDL)
    first = schema_statements()[0].described
    assert f"the server refused {first}, run before it: none: " in err, err
    assert "Triggers need Memgraph" in err


def test_a_change_names_what_is_wrong_with_it():
    with pytest.raises(ConfigurationError, match=r"kind: expected one of .* got 'made'"):
        Change("made", "node", 1)
    with pytest.raises(ConfigurationError, match=r"element_id: expected .* got '1'"):
        Change("created", "node", "1")
    with pytest.raises(ConfigurationError, match=r"relationship 4: expected rel_type, start_id"):
        Change("created", "relationship", 4, rel_type="R")


CHANGES = [
    Change("created", "node", 7, key=107, labels=("Item",), properties=("id", "features")),
    Change(
        "created", "relationship", 3, rel_type="LINK", start_id=7, end_id=8, start_key=107,
        end_key=108, properties=("weight",),
    ),
    Change("updated", "node", 8, key=108, labels=("Item", "Hot"), properties=("features",),
           changed_labels=("Hot", "Cold")),
    Change("deleted", "relationship", 3, rel_type="LINK", start_id=7, end_id=8),
    Change("deleted", "node", 7, key=107, labels=("Item",)),
]  # fmt: skip


def _check_log(log: ChangeLog, other: ChangeLog) -> None:
    """Records CHANGES in two transactions (and one change in ``other``), reads them back in
    pages of two from cursor 0: the same changes, seq 1..5 in order, the cursor the last seq."""
    assert log.read() == ([], 0)
    assert log.record(CHANGES[:2]) == [1, 2]
    assert other.record(CHANGES[:1]) == [1]  # each log numbers its own changes
    assert log.record(CHANGES[2:]) == [3, 4, 5]
    assert log.record([]) == []
    pages, cursor = [], 0
    while True:
        page, cursor = log.read(after=cursor, limit=2)
        if not page:
            break
        pages.append(page)
    assert [len(p) for p in pages] == [2, 2, 1]
    read = [c for p in pages for c in p]
    assert [c.seq for c in read] == [1, 2, 3, 4, 5]
    assert cursor == 5
    assert [c.__class__(**{**vars(c), "seq": None}) for c in read] == CHANGES
    assert log.read(after=5) == ([], 5)
    assert other.read()[0][0].element_id == 7


def test_the_application_written_log_over_the_embedded_graph():
    from memgraph_tf.client import EmbeddedSource
    from memgraph_tf.embedded import EmbeddedGraph

    source = EmbeddedSource(EmbeddedGraph(modules=[]))
    _check_log(ChangeLog(source), ChangeLog(source, "other"))
    assert len(source.graph.nodes(CHANGE_LABEL)) == 6


@pytest.mark.arcadedb
def test_the_application_written_log_over_bolt(bolt_source):
    name = f"t{secrets.token_hex(4)}"  # the session's server is shared: a log of its own
    _check_log(ChangeLog(bolt_source, name), ChangeLog(bolt_source, name + "other"))


def test_read_refuses_a_bad_cursor_or_limit():
    from memgraph_tf.client import EmbeddedSource
    from memgraph_tf.embedded import EmbeddedGraph

    log = ChangeLog(EmbeddedSource(EmbeddedGraph(modules=[])))
    with pytest.raises(ConfigurationError, match=r"after: expected an int >= 0, got -1"):
        log.read(after=-1)
    with pytest.raises(ConfigurationError, match=r"limit: expected an int >= 1, got 0"):
        log.read(limit=0)
    with pytest.raises(ConfigurationError, match=r"changes: expected Change objects"):
        log.record([{"kind": "created"}])
