"""Memgraph's vector index from the client side: which indexes a graph has, creating one for an
embedding property, and searching one -- over Bolt (Memgraph's Cypher) and over the embedded
graph (:meth:`memgraph_tf.embedded.EmbeddedGraph.execute`, the same statements on ``usearch``).

Memgraph's contract (its documentation, ``pages/querying/vector-search.mdx``): ``CREATE VECTOR
INDEX name ON :Label(prop) WITH CONFIG {"dimension": d, "capacity": n, "metric": m}``,
``CALL vector_search.show_index_info() YIELD *`` (``index_name``, ``label``, ``property``,
``dimension``, ``metric``, ...) and ``CALL vector_search.search(name, k, vector) YIELD node,
distance, similarity``. Index statements run in an auto-commit transaction (:meth:`run`), as
Memgraph takes no index statement inside an explicit one.

A Bolt server without ``vector_search`` (another openCypher database) has no vector indexes:
:func:`index_info` answers None there, and retrieval falls back to an exact search.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from typing import Any

from memgraph_tf.client.sources import EmbeddedSource, GraphSource, quote_name
from memgraph_tf.errors import ConfigurationError, QueryError

logger = logging.getLogger(__name__)

#: The metric an index created for embeddings uses unless told otherwise.
DEFAULT_METRIC = "cos"


@dataclasses.dataclass(frozen=True)
class VectorIndex:
    """One vector index as ``show_index_info`` describes it."""

    name: str
    label: str
    property: str
    dimension: int
    metric: str

    def covers(self, label: str | None, prop: str) -> bool:
        """Whether the index is on ``:label(prop)``."""
        return self.property == prop and (self.label or None) == label


def index_info(source: GraphSource) -> list[VectorIndex] | None:
    """The graph's vector indexes, or None when the graph has no ``vector_search`` module (a
    Bolt server that is not Memgraph)."""
    if isinstance(source, EmbeddedSource):
        with source.lock:
            rows = source.graph.call("vector_search.show_index_info")
    else:
        try:
            rows = source.read("CALL vector_search.show_index_info() YIELD *")
        except QueryError as exc:
            logger.debug("no vector indexes on this graph: %s", exc)
            return None
    return [
        VectorIndex(
            str(r["index_name"]),
            str(r.get("label") or "").removeprefix(":"),  # ":A" in the embedded runtime
            str(r["property"]),
            int(r["dimension"]),
            str(r.get("metric") or ""),
        )
        for r in rows
    ]


def index_for(
    indexes: Sequence[VectorIndex] | None, label: str | None, prop: str
) -> VectorIndex | None:
    """The index of ``indexes`` on ``:label(prop)``, if any."""
    for index in indexes or ():
        if index.covers(label, prop):
            return index
    return None


def check_dimension(index: VectorIndex | None, dimension: int, what: str) -> None:
    """Raises :class:`ConfigurationError` naming the index, its label, property and dimension
    when ``index`` exists and its dimension is not ``dimension`` (``what`` names the vectors)."""
    if index is not None and index.dimension != dimension:
        raise ConfigurationError(
            f"vector index {index.name!r} on :{index.label}({index.property}) has dimension "
            f"{index.dimension}, {what} have {dimension}: drop it (DROP VECTOR INDEX "
            f"{index.name};) or write another property"
        )


def create_index(
    source: GraphSource,
    name: str,
    label: str,
    prop: str,
    dimension: int,
    *,
    capacity: int,
    metric: str = DEFAULT_METRIC,
) -> VectorIndex:
    """``CREATE VECTOR INDEX name ON :label(prop) WITH CONFIG {dimension, capacity, metric}``
    unless an index on ``:label(prop)`` exists already (its dimension checked:
    :func:`check_dimension`); returns the index. An index ``name`` on another label or property
    raises :class:`ConfigurationError` naming both; so does a graph without vector indexes."""
    indexes = index_info(source)
    if indexes is None:
        raise ConfigurationError(
            "create_index: this graph has no vector indexes (vector_search.show_index_info is "
            "missing: not a Memgraph server)"
        )
    found = index_for(indexes, label, prop)
    if found is not None:
        check_dimension(found, dimension, "the embeddings")
        return found
    for index in indexes:
        if index.name == name:
            raise ConfigurationError(
                f"index_name: vector index {name!r} exists on :{index.label}({index.property}), "
                f"not on :{label}({prop}); choose another name"
            )
    if isinstance(metric, str):
        metric_text = metric.replace('"', "")
    else:
        raise ConfigurationError(f"metric: expected a metric name, got {metric!r}")
    query = (
        f"CREATE VECTOR INDEX {quote_name(name, 'index_name')} ON "
        f":{quote_name(label, 'label')}({quote_name(prop, 'property')}) WITH CONFIG "
        f'{{"dimension": {int(dimension)}, "capacity": {int(capacity)}, "metric": "{metric_text}"}}'
    )
    if isinstance(source, EmbeddedSource):
        with source.lock:
            source.graph.execute(query)
    else:
        list(source.run(query))
    found = index_for(index_info(source), label, prop)
    if found is None:
        raise ConfigurationError(f"create_index: the graph did not create {name!r}: {query}")
    logger.info("created vector index %s on :%s(%s), dimension %d", name, label, prop, dimension)
    return found


def search(
    source: GraphSource, index: str, k: int, vector: Sequence[float], key: str | None
) -> list[tuple[int, float]]:
    """``vector_search.search(index, k, vector)``: up to ``k`` ``(node key, similarity)``,
    nearest first; the key is property ``key`` (None: the internal id)."""
    [hits] = search_many(source, index, k, [vector], key)
    return [(node, similarity) for node, similarity, _ in hits]


def search_many(
    source: GraphSource,
    index: str,
    k: int,
    vectors: Sequence[Sequence[float]],
    key: str | None,
    prop: str | None = None,
) -> list[list[tuple[int, float, Any]]]:
    """``vector_search.search(index, k, v)`` for each vector ``v`` (one query over Bolt: ``UNWIND``
    then ``CALL``): per vector, up to ``k`` ``(node key, similarity, the node's property prop or
    None)``, nearest first; the key is property ``key`` (None: the internal id)."""
    queries = [[float(x) for x in v] for v in vectors]
    if isinstance(source, EmbeddedSource):
        graph = source.graph
        out = []
        with source.lock:
            for v in queries:
                rows = graph.call("vector_search.search", index, int(k), v)
                out.append(
                    [
                        (
                            int(
                                r["node"].id
                                if key is None
                                else graph.get_property(r["node"].id, key)
                            ),
                            float(r["similarity"]),
                            None if prop is None else graph.get_property(r["node"].id, prop),
                        )
                        for r in rows
                    ]
                )
        return out
    expr = "id(node)" if key is None else f"node.{quote_name(key, 'id_property')}"
    value = "null" if prop is None else f"node.{quote_name(prop, 'property')}"
    rows = source.read(
        f"UNWIND $queries AS q CALL vector_search.search($index, $k, q.v) YIELD node, similarity "
        f"RETURN q.i AS i, {expr} AS key, similarity, {value} AS value",
        {"index": index, "k": int(k), "queries": [{"i": i, "v": v} for i, v in enumerate(queries)]},
    )
    out = [[] for _ in queries]
    for r in rows:
        out[int(r["i"])].append((int(r["key"]), float(r["similarity"]), r["value"]))
    for hits in out:
        hits.sort(key=lambda h: -h[1])
    return out


__all__ = [
    "DEFAULT_METRIC",
    "VectorIndex",
    "check_dimension",
    "create_index",
    "index_for",
    "index_info",
    "search",
    "search_many",
]
