"""Client-side procedures for Bolt servers without the ``tf_features`` procedures.

Runs :class:`memgraph_tf.procedures.ProcedureRunner` -- the very runner behind the query module,
with the same option parsing, argument checks and node resolution order -- over a graph-access
factory whose accesses (:class:`~memgraph_tf.client.sources.CypherGraphAccess`) read the graph
with plain Cypher (and ``split_edges`` writes it). Guarantees: for the same
graph, ids, arguments and ``options.seed`` the blobs are byte-identical to the query module's and
``describe``, ``schema`` and ``split_edges`` report the same maps; a bad input raises
:class:`~memgraph_tf.errors.GraphDataError` with the procedure's own message.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from memgraph_tf import blob
from memgraph_tf.client.sources.cypher import native_value
from memgraph_tf.errors import GraphDataError
from memgraph_tf.procedures import AccessFactory, ProcedureRunner
from memgraph_tf.procedures.errors import ProcedureInputError


def memgraph_value(value: Any) -> Any:
    """``value`` with every map in it (nested, and in lists) rebuilt with its keys sorted, lists
    and tuples as lists: how Memgraph hands a procedure an argument map, and a Bolt client a
    procedure's result map, whatever order the other side wrote it in
    (``src/communication/bolt/v1/value.hpp`` ``map_t`` and ``src/query/procedure/
    mg_procedure_impl.hpp`` ``mgp_map::map_type`` are sorted maps; see
    :func:`memgraph_tf.embedded.memgraph_map_order`). The client-side procedures take their
    arguments and give their answers this way, so a map's order never makes them differ from
    the procedures."""
    if isinstance(value, Mapping):
        return {k: memgraph_value(value[k]) for k in sorted(value)}
    if isinstance(value, (list, tuple)):
        return [memgraph_value(v) for v in value]
    return value


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


def sample_typed(
    factory: AccessFactory,
    seeds: Sequence[int],
    num_neighbors: Any,
    properties: Any,
    options: Any,
) -> tuple[bytes, int]:
    """``tf_features.sample_typed`` on the client: (blob, seed count)."""
    with _as_graph_data_errors():
        return ProcedureRunner(factory).sample_typed(seeds, num_neighbors, properties, options)


def schema(factory: AccessFactory, properties: Any, options: Any) -> dict[str, Any]:
    """``tf_features.schema`` on the client: the same map the procedure returns."""
    with _as_graph_data_errors():
        return ProcedureRunner(factory).schema(properties, options)


def sample_pairs(
    factory: AccessFactory,
    sources: Sequence[int],
    targets: Sequence[int],
    num_neighbors: Any,
    properties: Any,
    options: Any,
) -> tuple[bytes, int]:
    """``tf_features.sample_pairs`` on the client: (blob, row count)."""
    with _as_graph_data_errors():
        runner = ProcedureRunner(factory)
        return runner.sample_pairs(sources, targets, num_neighbors, properties, options)


def split_edges(factory: AccessFactory, pattern: Any, options: Any) -> dict[str, int]:
    """``tf_features.split_edges`` on the client: the same counts the procedure returns."""
    with _as_graph_data_errors():
        return ProcedureRunner(factory).split_edges(pattern, options)


def build_reservoirs(source: Any, options: Any) -> dict[str, Any]:
    """``tf_features.build_reservoirs`` on the client (one page, written in one transaction per
    chunk of nodes): the same reservoirs and counts the procedure writes and returns."""
    from memgraph_tf.client.sources.cypher import CypherReservoirStore
    from memgraph_tf.procedures import reservoir

    with _as_graph_data_errors():
        opts = reservoir.parse_build_options(options)
        return reservoir.build(CypherReservoirStore(source), opts)


def update_reservoirs(source: Any, changes: Any, options: Any) -> dict[str, int]:
    """``tf_features.update_reservoirs`` on the client: the same reservoirs and counts."""
    from memgraph_tf.client.sources.cypher import CypherReservoirStore
    from memgraph_tf.procedures import reservoir

    with _as_graph_data_errors():
        opts = reservoir.parse_update_options(options)
        return reservoir.update(CypherReservoirStore(source), changes, opts)


def structural(factory: AccessFactory, label: Any, options: Any) -> list[dict[str, Any]]:
    """``tf_features.structural`` on the client: the rows the procedure yields
    (``node_id``, ``features``, ``columns``), bit-identical vectors."""
    with _as_graph_data_errors():
        result = ProcedureRunner(factory).structural(label, options)
    return [
        {"node_id": key, "features": vector, "columns": result.columns}
        for key, vector in zip(result.keys, result.vectors)
    ]


def structural_write(factory: AccessFactory, label: Any, options: Any) -> dict[str, Any]:
    """``tf_features.structural_write`` on the client: the procedure's vectors written over
    Cypher, the same map it returns."""
    with _as_graph_data_errors():
        return ProcedureRunner(factory).structural_write(label, options)


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
                profiler.add_all((k, native_value(v)) for k, v in row["p"].items())
        else:
            columns = ", ".join(
                f"n.{quote_name(name, 'properties')} AS v{j}" for j, name in enumerate(names)
            )
            for row in source.run(f"MATCH {node} RETURN {columns}"):
                profiler.add_named([native_value(row[f"v{j}"]) for j in range(len(names))])
        if not profiler.nodes:
            rows = source.read("MATCH (n) UNWIND labels(n) AS label RETURN DISTINCT label")
            raise prof.no_such_label(label, (r["label"] for r in rows))
        return profiler.result()
