"""Client-side packing for Bolt servers without the ``tf_features`` procedures.

Mirrors :mod:`memgraph_tf.procedures` (``run_pack``, ``run_sample``, ``run_sample_per_node``) step for
step -- the same option parsing, the same packing and sampling code -- over a graph-access object that
fetches properties and neighbours with plain Cypher. Guarantees: for the same graph, ids, arguments
and ``options.seed`` the blobs are byte-identical to the query module's; a bad input raises
:class:`~memgraph_tf.client.errors.GraphDataError` with the procedure's own message.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from memgraph_tf import blob
from memgraph_tf.client.errors import GraphDataError
from memgraph_tf.procedures import core
from memgraph_tf.procedures.errors import ProcedureInputError
from memgraph_tf.procedures.options import parse_fanouts, parse_options

AccessFactory = Callable[[Any], Any]


def _wrap(fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except ProcedureInputError as exc:
        raise GraphDataError(str(exc)) from exc


def pack_b64(factory: AccessFactory, nodes: Sequence[int], properties: Sequence[str], options: Any) -> str:
    """``tf_features.pack`` on the client: the base64url blob."""

    def work() -> str:
        opts = parse_options("pack", options)
        core.check_names(properties)
        access = factory(opts)
        keys = access.resolve(nodes, "nodes")
        return blob.b64encode(core.pack(access, keys, properties, opts))

    return _wrap(work)


def _sample(factory: AccessFactory, procedure: str, seeds: Any, fanouts: Any, properties: Any, options: Any):
    opts = parse_options(procedure, options)
    fan = parse_fanouts(fanouts)
    core.check_names(properties)
    access = factory(opts)
    keys = access.resolve(seeds, "seeds")
    return core.sample(access, keys, fan, properties, opts), fan, opts, keys


def sample_b64(factory: AccessFactory, seeds: Sequence[int], fanouts: Sequence[int],
               properties: Sequence[str], options: Any) -> str:
    """``tf_features.sample`` on the client: the base64url blob."""

    def work() -> str:
        result, fan, opts, _ = _sample(factory, "sample", seeds, fanouts, properties, options)
        return blob.b64encode(blob.pack(core.sample_sections(result, fan, opts)))

    return _wrap(work)


def sample_per_node_b64(factory: AccessFactory, seeds: Sequence[int], fanouts: Sequence[int],
                        properties: Sequence[str], options: Any) -> list[str]:
    """``tf_features.sample_per_node`` on the client: one base64url blob per seed, in order."""

    def work() -> list[str]:
        result, fan, opts, keys = _sample(factory, "sample_per_node", seeds, fanouts, properties, options)
        return [blob.b64encode(blob.pack(core.sample_sections(result, fan, opts, slice(i, i + 1))))
                for i in range(len(keys))]

    return _wrap(work)
