"""What the Bolt-versus-embedded tests (tests/client/test_*_bolt.py) share: their ``twins``
fixture is ``(embedded graph, its EmbeddedSource, the Bolt source)`` holding the same graph.
Imported by name: ``from tests.client.twins_kit import add_bad_amount``."""

from __future__ import annotations

from typing import Any


def add_bad_amount(twins: tuple[Any, Any, Any], label: str, rel_type: str, a: int, b: int) -> str:
    """Adds ``(a)-[:rel_type {amount: 'ten'}]->(b)`` between the ``label`` nodes whose ``id`` is
    ``a`` and ``b`` to both twins; returns the regex of the start of the error that names its
    ``amount``: ``relationship (:label {id: a})-[:rel_type]->(:label {id: b}) property
    'amount'``."""
    g, _, bolt = twins
    bolt.write(
        f"MATCH (x:{label} {{id: {a}}}), (y:{label} {{id: {b}}}) "
        f"CREATE (x)-[:{rel_type} {{amount: 'ten'}}]->(y)"
    )
    [x] = g.find_nodes(label, "id", a)
    [y] = g.find_nodes(label, "id", b)
    g.add_edge(x, y, rel_type, {"amount": "ten"})
    return (
        rf"relationship \(:{label} \{{id: {a}\}}\)-\[:{rel_type}\]->"
        rf"\(:{label} \{{id: {b}\}}\) property 'amount'"
    )
