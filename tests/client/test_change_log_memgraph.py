"""The change-log triggers on a real Memgraph (MEMGRAPH_TF_TEST_MEMGRAPH_URI; skipped without one:
Memgraph cannot run on the development machine, FACTS.md): installed by
:func:`memgraph_tf.client.change_log.install_triggers`, they log a transaction's node and
relationship creations, updates and deletions, which :class:`ChangeLog` reads back numbered 1..n.

AFTER COMMIT triggers run after the transaction, on Memgraph's own threads
(memgraph/documentation pages/fundamentals/triggers.mdx, "Statement execution phase"): there is no
event to wait on, so the test polls the log until the changes are there or a deadline passes."""

from __future__ import annotations

import secrets
import time

import pytest

from memgraph_tf.client import connect
from memgraph_tf.client.change_log import (
    CHANGE_LABEL,
    COUNTER_LABEL,
    ChangeLog,
    install_triggers,
    schema_statements,
    trigger_statements,
)
from memgraph_tf.errors import QueryError
from tests.real_memgraph import AUTH, MARKS, URI

pytestmark = MARKS
LABEL = "MgtfChangeLogTest"
EXTRA = "MgtfChangeLogExtra"
DEADLINE_S = 30.0


@pytest.fixture
def logged():
    """(source, ChangeLog) of a log of its own, its triggers installed; dropped afterwards."""
    log = f"t{secrets.token_hex(4)}"
    source = connect(URI, auth=AUTH)
    triggers = trigger_statements("id", log)
    try:
        install_triggers(source, schema_statements() + triggers)
        yield source, ChangeLog(source, log)
    finally:
        for trigger in triggers:
            try:
                list(source.run(f"DROP TRIGGER {trigger.name}"))
            except QueryError:  # a trigger that was never installed
                pass
        source.write(f"MATCH (n:{LABEL}) DETACH DELETE n")
        source.write(f"MATCH (n) WHERE (n:{CHANGE_LABEL} OR n:{COUNTER_LABEL}) AND n.log = $log "
                     "DETACH DELETE n", {"log": log})  # fmt: skip
        source.close()


def test_the_triggers_log_node_and_relationship_changes(logged):
    source, log = logged
    source.write(f"CREATE (:{LABEL} {{id: 1, f: 0.5}}), (:{LABEL} {{id: 2}})")
    source.write(
        f"MATCH (a:{LABEL} {{id: 1}}), (b:{LABEL} {{id: 2}}) CREATE (a)-[:E {{w: 1}}]->(b)"
    )
    source.write(f"MATCH (a:{LABEL} {{id: 1}}) SET a.f = 0.7")
    source.write(f"MATCH (:{LABEL})-[r:E]->() SET r.w = 2")
    source.write(f"MATCH (:{LABEL})-[r:E]->() DELETE r")
    source.write(f"MATCH (b:{LABEL} {{id: 2}}) DELETE b")
    # a label set beside a property in one transaction: one update naming both
    source.write(f"MATCH (a:{LABEL} {{id: 1}}) SET a:{EXTRA}, a.f = 0.9")
    expected = {
        ("created", "node", 1, ("f", "id"), ()),
        ("created", "node", 2, ("id",), ()),
        ("created", "relationship", None, ("w",), ()),
        ("updated", "node", 1, ("f",), ()),
        ("updated", "relationship", None, ("w",), ()),
        ("deleted", "relationship", None, (), ()),
        ("deleted", "node", 2, (), ()),
        ("updated", "node", 1, ("f",), (EXTRA,)),
    }
    deadline = time.monotonic() + DEADLINE_S
    changes: list = []
    while len(changes) < len(expected) and time.monotonic() < deadline:
        changes = log.read(limit=100)[0]
        time.sleep(0.2)  # polling: AFTER COMMIT triggers signal nothing (module docstring)
    assert [c.seq for c in changes] == list(range(1, len(expected) + 1))
    got = {
        (c.kind, c.entity, c.key, tuple(sorted(c.properties)), c.changed_labels) for c in changes
    }
    assert got == expected
    for c in changes:
        if c.entity == "relationship":
            assert (c.rel_type, c.start_key, c.end_key) == ("E", 1, 2), c
        else:
            assert LABEL in c.labels, c
