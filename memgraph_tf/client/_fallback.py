"""Client-side packing for Bolt servers without the ``tf_features`` procedures.

Calls the very functions the query module calls (:func:`memgraph_tf.procedures.pack_blob`,
``sample_blob``, ``sample_per_node_blobs``), with the same option parsing and node resolution order,
over a graph-access object that fetches properties and neighbours with plain Cypher. Guarantees: for
the same graph, ids, arguments and ``options.seed`` the blobs are byte-identical to the query
module's; a bad input raises :class:`~memgraph_tf.client.errors.GraphDataError` with the procedure's
own message.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from memgraph_tf import blob, procedures
from memgraph_tf.client.errors import GraphDataError
from memgraph_tf.procedures import core
from memgraph_tf.procedures.errors import ProcedureInputError
from memgraph_tf.procedures.options import parse_fanouts, parse_options

AccessFactory = Callable[[Any], Any]


def _prepare(factory: AccessFactory, procedure: str, nodes: Any, properties: Any, options: Any,
             fanouts: Any = None, param: str = "seeds") -> tuple[Any, list[int], Any]:
    opts = parse_options(procedure, options)
    if fanouts is not None:
        parse_fanouts(fanouts)
    core.check_names(properties)
    access = factory(opts)
    return access, access.resolve(nodes, param), opts


def pack_b64(factory: AccessFactory, nodes: Sequence[int], properties: Sequence[str], options: Any) -> str:
    """``tf_features.pack`` on the client: the base64url blob."""
    try:
        access, keys, opts = _prepare(factory, "pack", nodes, properties, options, param="nodes")
        return blob.b64encode(procedures.pack_blob(access, keys, properties, opts))
    except ProcedureInputError as exc:
        raise GraphDataError(str(exc)) from exc


def sample_b64(factory: AccessFactory, seeds: Sequence[int], fanouts: Sequence[int],
               properties: Sequence[str], options: Any) -> str:
    """``tf_features.sample`` on the client: the base64url blob."""
    try:
        access, keys, opts = _prepare(factory, "sample", seeds, properties, options, fanouts)
        return blob.b64encode(procedures.sample_blob(access, keys, fanouts, properties, opts))
    except ProcedureInputError as exc:
        raise GraphDataError(str(exc)) from exc


def sample_per_node_b64(factory: AccessFactory, seeds: Sequence[int], fanouts: Sequence[int],
                        properties: Sequence[str], options: Any) -> list[str]:
    """``tf_features.sample_per_node`` on the client: one base64url blob per seed, in order."""
    try:
        access, keys, opts = _prepare(factory, "sample_per_node", seeds, properties, options, fanouts)
        return [blob.b64encode(data)
                for _, data in procedures.sample_per_node_blobs(access, keys, fanouts, properties, opts)]
    except ProcedureInputError as exc:
        raise GraphDataError(str(exc)) from exc
