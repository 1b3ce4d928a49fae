"""Client-side procedures for Bolt servers without the ``tf_features`` procedures.

Runs :class:`memgraph_tf.procedures.ProcedureRunner` -- the very runner behind the query module,
with the same option parsing, argument checks and node resolution order -- over a graph-access
factory whose accesses fetch properties and neighbours with plain Cypher. Guarantees: for the same
graph, ids, arguments and ``options.seed`` the blobs are byte-identical to the query module's and
``describe`` reports the same map; a bad input raises
:class:`~memgraph_tf.client.errors.GraphDataError` with the procedure's own message.
"""

from __future__ import annotations

import contextlib
import datetime
from collections.abc import Iterator, Sequence
from typing import Any

from memgraph_tf import blob
from memgraph_tf.client.errors import GraphDataError
from memgraph_tf.procedures import AccessFactory, ProcedureRunner
from memgraph_tf.procedures.errors import ProcedureInputError


@contextlib.contextmanager
def _as_graph_data_errors() -> Iterator[None]:
    try:
        yield
    except ProcedureInputError as exc:
        raise GraphDataError(str(exc)) from exc


def pack_b64(
    factory: AccessFactory, nodes: Sequence[int], properties: Sequence[str], options: Any
) -> str:
    """``tf_features.pack`` on the client: the base64url blob."""
    with _as_graph_data_errors():
        data, _ = ProcedureRunner(factory).pack(nodes, properties, options)
    return blob.b64encode(data)


def sample_b64(
    factory: AccessFactory,
    seeds: Sequence[int],
    fanouts: Sequence[int],
    properties: Sequence[str],
    options: Any,
) -> str:
    """``tf_features.sample`` on the client: the base64url blob."""
    with _as_graph_data_errors():
        data = ProcedureRunner(factory).sample(seeds, fanouts, properties, options)
    return blob.b64encode(data)


def sample_per_node_b64(
    factory: AccessFactory,
    seeds: Sequence[int],
    fanouts: Sequence[int],
    properties: Sequence[str],
    options: Any,
) -> list[str]:
    """``tf_features.sample_per_node`` on the client: one base64url blob per seed, in order."""
    with _as_graph_data_errors():
        rows = ProcedureRunner(factory).sample_per_node(seeds, fanouts, properties, options)
    return [blob.b64encode(data) for _, data in rows]


def describe(factory: AccessFactory, properties: Sequence[str], options: Any) -> dict[str, Any]:
    """``tf_features.describe`` on the client: the same map the procedure returns."""
    with _as_graph_data_errors():
        return ProcedureRunner(factory).describe(properties, options)


class CypherTypedGraph:
    """:class:`memgraph_tf.procedures.typed.TypedGraph` over plain parameterised Cypher on a
    :class:`~memgraph_tf.client.sources.BoltSource`: the accesses are the client's Cypher access
    with the typed reads added; the metagraph comes from aggregating queries. Run by the very code
    of ``tf_features.sample_typed`` / ``schema``, so the blobs are byte-identical to the query
    module's for the same graph, ids (``options.id_property``), arguments and ``options.seed``."""

    def __init__(self, source: Any, access_factory: AccessFactory, quote_name: Any) -> None:
        self._source = source
        self._factory = access_factory
        self._quote = quote_name

    def access(self, options: Any) -> Any:
        return self._factory(options)

    def label_nodes(self, label: str) -> list[int]:
        node = f"(n:{self._quote(label, 'label')})"
        return [r["i"] for r in self._source.read(f"MATCH {node} RETURN id(n) AS i ORDER BY i")]

    def label_counts(self) -> dict[str, int]:
        rows = self._source.read("MATCH (n) UNWIND labels(n) AS label RETURN label, count(*) AS c")
        return {r["label"]: r["c"] for r in rows}

    def triples(self) -> dict[tuple[str, str, str], int]:
        rows = self._source.read(
            "MATCH (a)-[r]->(b) UNWIND labels(a) AS la UNWIND labels(b) AS lb "
            "RETURN la, type(r) AS t, lb, count(*) AS c"
        )
        return {(r["la"], r["t"], r["lb"]): r["c"] for r in rows}

    def has_triple(self, source: str, rel_type: str, target: str) -> bool:
        pattern = (
            f"(a:{self._quote(source, 'label')})-[:{self._quote(rel_type, 'type')}]->"
            f"(b:{self._quote(target, 'label')})"
        )
        return bool(self._source.read(f"MATCH {pattern} RETURN 1 AS one LIMIT 1"))


def sample_typed(
    graph: CypherTypedGraph,
    seeds: Sequence[int],
    num_neighbors: Any,
    properties: Any,
    options: Any,
) -> tuple[bytes, int]:
    """``tf_features.sample_typed`` on the client: (blob, seed count)."""
    from memgraph_tf.procedures import typed

    with _as_graph_data_errors():
        return typed.sample_typed(graph, seeds, num_neighbors, properties, options)


def schema(graph: CypherTypedGraph, properties: Any, options: Any) -> dict[str, Any]:
    """``tf_features.schema`` on the client: the same map the procedure returns."""
    from memgraph_tf.procedures import typed

    with _as_graph_data_errors():
        return typed.schema(graph, properties, options)


class CypherPairGraph(CypherTypedGraph):
    """:class:`CypherTypedGraph` that also lists and marks the relationships of an edge step
    (``tf_features.split_edges`` on the client; :class:`memgraph_tf.procedures.pairs.PairGraph`):
    reads in a read transaction, the writes in write transactions of up to 1000 relationships."""

    def relationships(self, step: Any) -> list[tuple[Any, Any, Any]]:
        left = f"(a:{self._quote(step.left, 'label')})"
        right = f"(b:{self._quote(step.right, 'label')})"
        rel = f"[r:{self._quote(step.rel_type, 'type')}]"
        seen: set[Any] = set()
        out = []
        for direction in ("out", "in"):
            if step.direction not in (direction, "both"):
                continue
            arrow = f"-{rel}->" if direction == "out" else f"<-{rel}-"
            rows = self._source.read(
                f"MATCH {left}{arrow}{right} RETURN id(a) AS a, id(b) AS b, id(r) AS r"
            )
            for row in rows:
                if row["r"] in seen:
                    continue
                seen.add(row["r"])
                start = row["a"] if direction == "out" else row["b"]  # the relationship's start
                out.append(((row["r"], start, step.rel_type), row["a"], row["b"]))
        return out

    def write_splits(self, rows: Sequence[tuple[Any, str]], name: str) -> None:
        by_type: dict[str, list[dict[str, Any]]] = {}
        for (rel, start, rel_type), value in rows:
            by_type.setdefault(rel_type, []).append({"r": rel, "s": start, "v": value})
        prop = self._quote(name, "options.split_property")
        for rel_type, items in by_type.items():
            query = (
                f"UNWIND $rows AS row MATCH (s)-[r:{self._quote(rel_type, 'type')}]->() "
                f"WHERE id(s) = row.s AND id(r) = row.r SET r.{prop} = row.v"
            )
            for start in range(0, len(items), 1000):
                self._source.write(query, {"rows": items[start : start + 1000]})


def sample_pairs(
    graph: CypherPairGraph,
    sources: Sequence[int],
    targets: Sequence[int],
    num_neighbors: Any,
    properties: Any,
    options: Any,
) -> tuple[bytes, int]:
    """``tf_features.sample_pairs`` on the client: (blob, row count)."""
    from memgraph_tf.procedures import pairs

    with _as_graph_data_errors():
        return pairs.sample_pairs(graph, sources, targets, num_neighbors, properties, options)


def split_edges(graph: CypherPairGraph, pattern: Any, options: Any) -> dict[str, int]:
    """``tf_features.split_edges`` on the client: the same counts the procedure returns."""
    from memgraph_tf.procedures import pairs

    with _as_graph_data_errors():
        return pairs.split_edges(graph, pattern, options)


def _native(value: Any) -> Any:
    """A value as the Bolt driver gives it -> the Python value ``mgp`` gives for it: the driver's
    temporal types (``neo4j.time``) to ``datetime`` ones (a Duration without months to a
    ``timedelta``, nanoseconds cut to microseconds as Memgraph keeps them), lists element-wise."""
    if isinstance(value, list):
        return [_native(v) for v in value]
    if not type(value).__module__.startswith("neo4j"):
        return value
    months = getattr(value, "months", None)
    if months is not None:  # neo4j.time.Duration
        if months:
            return value
        return datetime.timedelta(
            days=value.days, seconds=value.seconds, microseconds=value.nanoseconds // 1000
        )
    to_native = getattr(value, "to_native", None)
    return to_native() if callable(to_native) else value


def profile(
    source: Any, quote_name: Any, label: Any, properties: Any, options: Any
) -> dict[str, Any]:
    """``tf_features.profile`` on the client: the label's nodes streamed by one Cypher query
    (``properties(n)``, or the named properties), fed to the procedure's own profiler
    (:class:`memgraph_tf.procedures.profile.LabelProfiler`): the same map the procedure returns
    for the same graph."""
    from memgraph_tf.procedures import profile as prof

    with _as_graph_data_errors():
        label, names, opts = prof.parse_profile_call(label, properties, options)
        profiler = prof.LabelProfiler(label, names, opts)
        node = f"(n:{quote_name(label, 'label')})"
        if names is None:
            for row in source.run(f"MATCH {node} RETURN properties(n) AS p"):
                profiler.add_all((k, _native(v)) for k, v in row["p"].items())
        else:
            columns = ", ".join(
                f"n.{quote_name(name, 'properties')} AS v{j}" for j, name in enumerate(names)
            )
            for row in source.run(f"MATCH {node} RETURN {columns}"):
                profiler.add_named([_native(row[f"v{j}"]) for j in range(len(names))])
        if not profiler.nodes:
            rows = source.read("MATCH (n) UNWIND labels(n) AS label RETURN DISTINCT label")
            raise prof.no_such_label(label, (r["label"] for r in rows))
        return profiler.result()
