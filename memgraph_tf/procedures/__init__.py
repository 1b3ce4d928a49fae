"""The library behind ``query_modules/tf_features.py`` (importable with the standard library alone).

The query module is a thin layer of typed ``@mgp.read_proc`` functions over the ``run_*`` functions
here. The work itself (:mod:`memgraph_tf.procedures.core`) is written against a small graph-access
protocol (:class:`~memgraph_tf.procedures.access.GraphAccess`), so the same code, and the same bytes,
serve a client-side fallback over plain Cypher.
"""

from __future__ import annotations

from typing import Any, Sequence

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
    "pack_blob",
    "run_describe",
    "run_pack",
    "run_sample",
    "run_sample_per_node",
    "sample_blob",
    "sample_per_node_blobs",
]


def _options(procedure: str, options: Any) -> Options:
    return options if isinstance(options, Options) else parse_options(procedure, options)


def pack_blob(access: GraphAccess, keys: Sequence[int], properties: Any, options: Any = None) -> bytes:
    """The ``tf_features.pack`` blob for already-resolved ``keys`` over any :class:`GraphAccess`
    (``options``: the raw map or :class:`Options`). The query module and a client-side fallback
    both call this, so equal graphs give equal bytes."""
    opts = _options("pack", options)
    core.check_names(properties)
    return core.pack(access, keys, properties, opts)


def sample_blob(access: GraphAccess, keys: Sequence[int], fanouts: Any, properties: Any, options: Any = None) -> bytes:
    """The ``tf_features.sample`` blob for resolved seed ``keys`` (see :func:`pack_blob`)."""
    opts = _options("sample", options)
    fan = parse_fanouts(fanouts)
    core.check_names(properties)
    return blob.pack(core.sample_sections(core.sample(access, keys, fan, properties, opts), fan, opts))


def sample_per_node_blobs(
    access: GraphAccess, keys: Sequence[int], fanouts: Any, properties: Any, options: Any = None
) -> list[tuple[int, bytes]]:
    """``(key, blob)`` per seed, each blob equal to :func:`sample_blob` of that seed alone."""
    opts = _options("sample_per_node", options)
    fan = parse_fanouts(fanouts)
    core.check_names(properties)
    result = core.sample(access, keys, fan, properties, opts)
    rows = []
    for i, key in enumerate(keys):
        if i % 256 == 255:
            access.check_abort()
        rows.append((key, blob.pack(core.sample_sections(result, fan, opts, slice(i, i + 1)))))
    return rows


def run_pack(ctx: Any, nodes: Any, properties: Any, options: Any) -> tuple[str, int]:
    """``tf_features.pack``: returns (base64url blob, node count)."""
    opts = parse_options("pack", options)
    core.check_names(properties)
    access = MgpGraphAccess(ctx, opts)
    keys = access.resolve(nodes, "nodes")
    return blob.b64encode(pack_blob(access, keys, properties, opts)), len(keys)


def _prepare(ctx: Any, procedure: str, seeds: Any, fanouts: Any, properties: Any, options: Any):
    opts = parse_options(procedure, options)
    parse_fanouts(fanouts)
    core.check_names(properties)
    access = MgpGraphAccess(ctx, opts)
    return access, access.resolve(seeds, "seeds"), opts


def run_sample(ctx: Any, seeds: Any, fanouts: Any, properties: Any, options: Any) -> str:
    """``tf_features.sample``: the base64url blob of all seeds' neighbourhoods."""
    access, keys, opts = _prepare(ctx, "sample", seeds, fanouts, properties, options)
    return blob.b64encode(sample_blob(access, keys, fanouts, properties, opts))


def run_sample_per_node(ctx: Any, seeds: Any, fanouts: Any, properties: Any, options: Any) -> list[tuple[int, str]]:
    """``tf_features.sample_per_node``: (seed key, base64url blob of that seed alone) per seed."""
    access, keys, opts = _prepare(ctx, "sample_per_node", seeds, fanouts, properties, options)
    return [(key, blob.b64encode(data)) for key, data in sample_per_node_blobs(access, keys, fanouts, properties, opts)]


def run_describe(ctx: Any, properties: Any, options: Any) -> dict[str, Any]:
    """``tf_features.describe``: the layout pack/sample produce for ``properties`` (inspecting the
    first node, with ``options.label`` if given, that has all of them and, with
    ``options.id_property``, an id)."""
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
