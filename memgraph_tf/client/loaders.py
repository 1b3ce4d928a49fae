"""Loaders that write the package's datasets into a real graph database through a source's Cypher
(``source.write``: a :class:`~memgraph_tf.client.sources.BoltSource`), in ``UNWIND`` batches:

* :func:`load_into_graph` -- a Planetoid dataset (:class:`memgraph_tf.datasets.Planetoid`);
* :func:`load_typed_graph` -- a typed graph (:class:`memgraph_tf.typed_datasets.TypedGraph`);
* :func:`request_id_index` -- the index on ``:label(id)`` both ask for.

They live above the sources they write through; the dataset modules below them only generate and
read data.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from memgraph_tf import typed_datasets
from memgraph_tf.client.sources import GraphSource
from memgraph_tf.datasets import Planetoid, node_properties
from memgraph_tf.typed_datasets import TypedGraph
from memgraph_tf.typed_datasets import node_properties as typed_node_properties

logger = logging.getLogger(__name__)


def request_id_index(source: GraphSource, label: str, prop: str = "id") -> bool:
    """Asks the server for an index on ``:label(prop)`` (Memgraph's syntax, then Neo4j's);
    returns whether one was accepted. A server that accepts neither is only slower: loaders
    match nodes by that property."""
    for query in (
        f"CREATE INDEX ON :{label}({prop})",
        f"CREATE INDEX IF NOT EXISTS FOR (n:{label}) ON (n.{prop})",
    ):
        try:
            source.write(query)
            return True
        except Exception as exc:  # noqa: BLE001 -- servers differ in index syntax; only speed depends on it
            logger.debug("index request %r refused: %s", query, exc)
    return False


def load_into_graph(
    source: GraphSource,
    data: Planetoid,
    *,
    label: str = "Paper",
    edge_type: str = "CITES",
    batch_size: int = 500,
    replace: bool = False,
    progress: Any = None,
) -> dict[str, int]:
    """Writes ``data`` into a real graph database through Cypher: ``:label`` nodes with the
    properties of :func:`~memgraph_tf.datasets.node_properties` (``id`` is the node number) and
    one ``edge_type`` edge ``min -> max`` per undirected pair, ``batch_size`` rows per ``UNWIND``
    query.

    Guarantees: never deletes anything unless ``replace``; when ``:label`` nodes exist it raises
    ValueError saying how many, unless ``replace`` (then they are detach-deleted first, in batches).
    An index on ``:label(id)`` is requested (Memgraph syntax, then Neo4j's; a server that accepts
    neither is only slower). ``progress(kind, done)`` is called after each batch (``kind``
    ``nodes`` or ``edges``). Returns ``{"nodes": n, "edges": m}``.
    """
    for value, what in ((label, "label"), (edge_type, "edge_type")):
        if not value.isidentifier():
            raise ValueError(f"{what}: expected a plain identifier, got {value!r}")
    if not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size: expected an integer >= 1, got {batch_size!r}")
    [row] = source.write(f"MATCH (n:{label}) RETURN count(n) AS c")
    existing = int(row["c"])
    if existing and not replace:
        raise ValueError(
            f"label {label!r}: expected no existing :{label} nodes, got {existing} "
            "(pass replace=True / --replace to delete them first, or choose another label)"
        )
    while existing:
        [row] = source.write(
            f"MATCH (n:{label}) WITH n LIMIT $k DETACH DELETE n RETURN count(*) AS c",
            {"k": batch_size},
        )
        existing = int(row["c"])
    request_id_index(source, label)
    props = node_properties(data)
    n = data.num_nodes
    for lo in range(0, n, batch_size):
        rows = [
            {
                "id": i,
                "features": props["features"][i],
                "label": props["label"][i],
                "split": props["split"][i],
            }
            for i in range(lo, min(n, lo + batch_size))
        ]
        source.write(
            f"UNWIND $rows AS r CREATE (:{label} {{id: r.id, features: r.features, label: r.label, "
            "split: r.split})",
            {"rows": rows},
        )
        if progress is not None:
            progress("nodes", len(rows))
    for lo in range(0, len(data.edges), batch_size):
        pairs = [list(e) for e in data.edges[lo : lo + batch_size]]
        source.write(
            f"UNWIND $pairs AS p MATCH (a:{label} {{id: p[0]}}) MATCH (b:{label} {{id: p[1]}}) "
            f"CREATE (a)-[:{edge_type}]->(b)",
            {"pairs": pairs},
        )
        if progress is not None:
            progress("edges", len(pairs))
    logger.info(
        "loaded %s into the graph: %d :%s nodes, %d :%s edges",
        data.name,
        n,
        label,
        len(data.edges),
        edge_type,
    )
    return {"nodes": n, "edges": len(data.edges)}


def load_typed_graph(
    source: GraphSource,
    graph: TypedGraph,
    *,
    batch_size: int = 500,
    replace: bool = False,
    progress: Callable[[str, int], Any] | None = None,
) -> dict[str, int]:
    """Writes ``graph`` into a real graph database through Cypher (``source.write``: a
    :class:`~memgraph_tf.client.BoltSource`), ``batch_size`` rows per ``UNWIND`` query: one node
    per node of each node set, with its label and
    :func:`~memgraph_tf.typed_datasets.node_properties`; one relationship per edge of each edge
    set, with its type and direction, between the nodes matched by label and ``id``. Read back
    with ``options.id_property = "id"`` (ids are unique within a label only).

    Guarantees: never deletes anything unless ``replace``; when nodes of one of the graph's
    labels exist it raises ValueError naming the label and how many, before writing anything,
    unless ``replace`` (then they are detach-deleted first, in batches). An index on each
    ``:label(id)`` is requested (:func:`request_id_index`).
    ``progress(kind, done)`` is called after each batch (``kind`` ``nodes`` or ``edges``).
    Returns ``{"nodes": n, "edges": m}``."""
    for label in graph.node_sets:
        if not label.isidentifier():
            raise ValueError(f"node set {label!r}: expected a plain identifier as its label")
    for key in graph.edge_sets:
        if not key[1].isidentifier():
            raise ValueError(f"edge set {key}: expected a plain identifier as its type")
    if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1:
        raise ValueError(f"batch_size: expected an integer >= 1, got {batch_size!r}")
    existing = {}
    for label in graph.node_sets:
        [row] = source.write(f"MATCH (n:{label}) RETURN count(n) AS c")
        existing[label] = int(row["c"])
    found = {label: n for label, n in existing.items() if n}
    if found and not replace:
        label, n = next(iter(found.items()))
        raise ValueError(
            f"label {label!r}: expected no existing :{label} nodes, got {n} (pass replace=True "
            "/ --replace to delete the graph's labels first, or load into another database)"
        )
    for label, n in found.items():
        while n:
            [row] = source.write(
                f"MATCH (n:{label}) WITH n LIMIT $k DETACH DELETE n RETURN count(*) AS c",
                {"k": batch_size},
            )
            n = int(row["c"])
    nodes = edges = 0
    for label in graph.node_sets:
        request_id_index(source, label, typed_datasets.ID_PROPERTY)
        rows = typed_node_properties(graph, label)
        for lo in range(0, len(rows), batch_size):
            part = rows[lo : lo + batch_size]
            source.write(f"UNWIND $rows AS r CREATE (n:{label}) SET n = r", {"rows": part})
            nodes += len(part)
            if progress is not None:
                progress("nodes", len(part))
    for (src, rel_type, dst), edge_set in graph.edge_sets.items():
        pairs = [
            [a, b] for a, b in zip(edge_set.source.tolist(), edge_set.target.tolist(), strict=True)
        ]
        query = (
            f"UNWIND $pairs AS p MATCH (a:{src} {{{typed_datasets.ID_PROPERTY}: p[0]}}) "
            f"MATCH (b:{dst} {{{typed_datasets.ID_PROPERTY}: p[1]}}) CREATE (a)-[:{rel_type}]->(b)"
        )
        for lo in range(0, len(pairs), batch_size):
            part = pairs[lo : lo + batch_size]
            source.write(query, {"pairs": part})
            edges += len(part)
            if progress is not None:
                progress("edges", len(part))
    logger.info("loaded %s into the graph: %d nodes, %d relationships", graph.name, nodes, edges)
    return {"nodes": nodes, "edges": edges}
