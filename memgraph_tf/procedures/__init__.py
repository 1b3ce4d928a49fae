"""The library behind ``query_modules/tf_features.py`` (importable with the standard library alone).

The query module is a thin layer of typed ``@mgp.read_proc`` functions over the ``run_*`` functions
here. The work itself (:mod:`memgraph_tf.procedures.core`) is written against a small graph-access
protocol (:class:`~memgraph_tf.procedures.access.GraphAccess`), so the same code, and the same bytes,
serve a client-side fallback over plain Cypher.
"""

from __future__ import annotations

from typing import Any, Iterator

from memgraph_tf import blob
from memgraph_tf.procedures import core
from memgraph_tf.procedures.access import GraphAccess, MgpGraphAccess, node_name
from memgraph_tf.procedures.errors import (
    NodeNotFoundError,
    OptionError,
    ProcedureInputError,
    PropertyValueError,
)
from memgraph_tf.procedures.options import Options, parse_fanouts, parse_options

__all__ = [
    "GraphAccess",
    "MgpGraphAccess",
    "NodeNotFoundError",
    "OptionError",
    "Options",
    "ProcedureInputError",
    "PropertyValueError",
    "core",
    "node_name",
    "parse_fanouts",
    "parse_options",
    "run_describe",
    "run_pack",
    "run_sample",
    "run_sample_per_node",
]


def run_pack(ctx: Any, nodes: Any, properties: Any, options: Any) -> tuple[str, int]:
    """``tf_features.pack``: returns (base64url blob, node count)."""
    opts = parse_options("pack", options)
    core.check_names(properties)
    access = MgpGraphAccess(ctx, opts)
    keys = access.resolve(nodes, "nodes")
    return blob.b64encode(core.pack(access, keys, properties, opts)), len(keys)


def _sample(ctx: Any, procedure: str, seeds: Any, fanouts: Any, properties: Any, options: Any):
    opts = parse_options(procedure, options)
    fan = parse_fanouts(fanouts)
    core.check_names(properties)
    access = MgpGraphAccess(ctx, opts)
    keys = access.resolve(seeds, "seeds")
    return core.sample(access, keys, fan, properties, opts), fan, opts, keys


def run_sample(ctx: Any, seeds: Any, fanouts: Any, properties: Any, options: Any) -> str:
    """``tf_features.sample``: the base64url blob of all seeds' neighbourhoods."""
    result, fan, opts, _ = _sample(ctx, "sample", seeds, fanouts, properties, options)
    return blob.b64encode(blob.pack(core.sample_sections(result, fan, opts)))


def run_sample_per_node(ctx: Any, seeds: Any, fanouts: Any, properties: Any, options: Any) -> Iterator[tuple[int, str]]:
    """``tf_features.sample_per_node``: (seed key, base64url blob of that seed alone) per seed, in
    order; each blob equals ``tf_features.sample([seed], ...)`` with the same options."""
    result, fan, opts, keys = _sample(ctx, "sample_per_node", seeds, fanouts, properties, options)
    rows = []
    for i, key in enumerate(keys):
        if i % 256 == 255:
            ctx.check_must_abort()
        sections = core.sample_sections(result, fan, opts, slice(i, i + 1))
        rows.append((key, blob.b64encode(blob.pack(sections))))
    return rows


def run_describe(ctx: Any, properties: Any, options: Any) -> dict[str, Any]:
    """``tf_features.describe``: the layout pack/sample produce for ``properties`` (inspecting the
    first node, with ``options.label`` if given, that has all of them)."""
    opts = parse_options("describe", options)
    names = core.check_names(properties)
    access = MgpGraphAccess(ctx, opts)
    key = access.first_node_with(names) if names else None
    if key is None:
        columns: list[core.Column] = []
    else:
        values = access.properties([key], names)[0]
        columns = core.infer_columns(access.node_name(key), names, values)
    return core.describe(columns, opts)
