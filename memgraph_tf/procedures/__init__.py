"""The library behind ``query_modules/tf_features.py`` (importable with the standard library alone).

The query module is a thin layer of typed ``@mgp.read_proc`` functions over the ``run_*`` functions
here. Every procedure is written against one graph-access protocol
(:class:`~memgraph_tf.procedures.access.GraphAccess`), made per call by an *access factory*
(``Options -> GraphAccess``). :class:`ProcedureRunner` is the one place that turns a procedure's
raw arguments into that work over any factory: the ``run_*`` functions give it Memgraph's ``mgp``
context (:class:`~memgraph_tf.procedures.mgp_access.MgpGraphAccess`), the client-side fallback
gives it Cypher over Bolt, so both run the same code and produce the same bytes.

The modules: :mod:`.options` (arguments), :mod:`.access` (the protocol), :mod:`.mgp_access` (its
``mgp`` implementation), :mod:`.draw` (the one draw rule), :mod:`.tables` (feature tables),
:mod:`.core` (pack, homogeneous sampling, describe) and :mod:`.sections` (the sample blob),
:mod:`.slots` and :mod:`.slot_blobs` (typed slot sampling and its blob), :mod:`.typed`
(``sample_typed``, ``schema``), :mod:`.pairs` (``sample_pairs``, ``split_edges``),
:mod:`.structural` (``structural``, ``structural_write``), :mod:`.limits`
(``options.max_blob_bytes``), :mod:`.reservoir` (the bounded mode: stored per-node samples of hubs'
relationships), :mod:`.errors`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memgraph_tf import blob
from memgraph_tf.procedures import core, pairs, reservoir, sections, structural, tables, typed
from memgraph_tf.procedures.access import AccessFactory, GraphAccess, node_name
from memgraph_tf.procedures.errors import (
    NodeNotFoundError,
    OptionError,
    ProcedureInputError,
    PropertyValueError,
)
from memgraph_tf.procedures.mgp_access import MgpGraphAccess
from memgraph_tf.procedures.options import Options, check_names, parse_fanouts, parse_options
from memgraph_tf.procedures.profile import run_profile

__all__ = [
    "AccessFactory",
    "GraphAccess",
    "MgpGraphAccess",
    "NodeNotFoundError",
    "OptionError",
    "Options",
    "ProcedureInputError",
    "ProcedureRunner",
    "PropertyValueError",
    "core",
    "mgp_runner",
    "node_name",
    "pack_blob",
    "parse_fanouts",
    "parse_options",
    "run_build_reservoirs",
    "run_describe",
    "run_pack",
    "run_profile",
    "run_sample",
    "run_sample_pairs",
    "run_sample_per_node",
    "run_sample_typed",
    "run_schema",
    "run_split_edges",
    "run_structural",
    "run_structural_write",
    "run_update_reservoirs",
    "sample_blob",
    "sample_per_node_blobs",
]


def _options(procedure: str, options: Any) -> Options:
    return options if isinstance(options, Options) else parse_options(procedure, options)


def pack_blob(
    access: GraphAccess, keys: Sequence[int], properties: Any, options: Any = None
) -> bytes:
    """The ``tf_features.pack`` blob for already-resolved ``keys`` over any :class:`GraphAccess`
    (``options``: the raw map or :class:`Options`). :class:`ProcedureRunner` calls this for the
    query module and the client-side fallback alike, so equal graphs give equal bytes. A blob
    larger than ``options.max_blob_bytes`` is refused (:class:`OptionError`) before the nodes are
    read (:mod:`memgraph_tf.procedures.limits`)."""
    opts = _options("pack", options)
    check_names(properties)
    return core.pack(access, keys, properties, opts)


def sample_blob(
    access: GraphAccess, keys: Sequence[int], fanouts: Any, properties: Any, options: Any = None
) -> bytes:
    """The ``tf_features.sample`` blob for resolved seed ``keys`` (see :func:`pack_blob`); refused
    when it would exceed ``options.max_blob_bytes``: before anything is sampled (dense: the whole
    blob; compact and sparse: its index arrays), and in the compact and sparse layouts after
    sampling, before any feature is read (the table of the distinct sampled nodes; sparse: their
    non-zero values, counted as they are read when the worst case over them exceeds the limit)."""
    opts = _options("sample", options)
    fan = parse_fanouts(fanouts)
    check_names(properties)
    result = core.sample(access, keys, fan, properties, opts)
    return blob.pack(sections.sample_sections(result, fan, opts, check_abort=access.check_abort))


def sample_per_node_blobs(
    access: GraphAccess, keys: Sequence[int], fanouts: Any, properties: Any, options: Any = None
) -> list[tuple[int, bytes]]:
    """``(key, blob)`` per seed, each blob equal to :func:`sample_blob` of that seed alone;
    ``options.max_blob_bytes`` limits each of those blobs (checked as :func:`sample_blob` checks
    its blob, row by row after sampling)."""
    opts = _options("sample_per_node", options)
    fan = parse_fanouts(fanouts)
    check_names(properties)
    result = core.sample(access, keys, fan, properties, opts, per_row=True)
    return list(zip(keys, sections.sample_row_blobs(result, fan, opts, access.check_abort)))


class ProcedureRunner:
    """Runs every ``tf_features`` procedure from its raw arguments over the graph accesses
    ``access_factory`` makes (one per call): ``pack``/``sample``/``sample_per_node``/``describe``
    here, ``sample_typed``/``schema`` (:mod:`.typed`) and ``sample_pairs``/``split_edges``
    (:mod:`.pairs`) through their modules.

    Guarantees, for every graph access: the options are parsed for the procedure, then the fanouts
    and the property names are checked, then the access is made, the first node is resolved and
    the size of the blob is checked against ``options.max_blob_bytes``
    (:func:`memgraph_tf.procedures.core.check_blob_size`, before anything is sampled: phase 1 of
    :mod:`memgraph_tf.procedures.limits`), then the nodes are resolved, so the same bad input
    raises the same :class:`ProcedureInputError` (same message) everywhere; equal graphs,
    arguments and ``options.seed`` give equal bytes.
    """

    def __init__(self, access_factory: AccessFactory) -> None:
        self._factory = access_factory

    def _prepare(
        self,
        procedure: str,
        nodes: Any,
        param: str,
        properties: Any,
        options: Any,
        fanouts: Any = None,
    ) -> tuple[GraphAccess, list[int], Options]:
        opts = parse_options(procedure, options)
        fan = None if fanouts is None else parse_fanouts(fanouts)
        names = check_names(properties)
        access = self._factory(opts)
        if isinstance(nodes, (list, tuple)) and len(nodes) > 1:
            # the size of the call from its first node, before the others are resolved: a call
            # too large for options.max_blob_bytes is refused without walking its input
            [first] = access.resolve(nodes[:1], param)
            per_row = procedure == "sample_per_node"
            core.check_blob_size(access, first, len(nodes), names, opts, fan, per_row=per_row)
        return access, access.resolve(nodes, param), opts

    def pack(self, nodes: Any, properties: Any, options: Any = None) -> tuple[bytes, int]:
        """``tf_features.pack``: (blob, node count)."""
        access, keys, opts = self._prepare("pack", nodes, "nodes", properties, options)
        return pack_blob(access, keys, properties, opts), len(keys)

    def sample(self, seeds: Any, fanouts: Any, properties: Any, options: Any = None) -> bytes:
        """``tf_features.sample``: the blob of all seeds' neighbourhoods."""
        access, keys, opts = self._prepare("sample", seeds, "seeds", properties, options, fanouts)
        return sample_blob(access, keys, fanouts, properties, opts)

    def sample_per_node(
        self, seeds: Any, fanouts: Any, properties: Any, options: Any = None
    ) -> list[tuple[int, bytes]]:
        """``tf_features.sample_per_node``: (seed key, blob of that seed alone) per seed, in
        order."""
        access, keys, opts = self._prepare(
            "sample_per_node", seeds, "seeds", properties, options, fanouts
        )
        return sample_per_node_blobs(access, keys, fanouts, properties, opts)

    def describe(self, properties: Any, options: Any = None) -> dict[str, Any]:
        """``tf_features.describe``: the layout pack/sample produce for ``properties`` (inspecting
        the first node, with ``options.label`` if given, that has all of them and, with
        ``options.id_property``, an id) and, with ``options.label_property``, ``num_classes``
        (see :func:`memgraph_tf.procedures.core.num_classes`)."""
        opts = parse_options("describe", options)
        names = check_names(properties)
        access = self._factory(opts)
        columns: list[tables.Column] = []
        if names:
            key = access.first_node_with(names)
            if key is None:
                raise tables.no_node_error(names, opts)
            values = access.properties([key], names)[0]
            columns = tables.infer_columns(access.node_name(key), names, values)
        classes = core.num_classes(access, opts.label_property) if opts.label_property else None
        return core.describe(columns, opts, classes)

    def sample_typed(
        self, seeds: Any, num_neighbors: Any, properties: Any, options: Any = None
    ) -> tuple[bytes, int]:
        """``tf_features.sample_typed``: (blob, seed count); see
        :func:`memgraph_tf.procedures.typed.sample_typed`."""
        return typed.sample_typed(self._factory, seeds, num_neighbors, properties, options)

    def schema(self, properties: Any, options: Any = None) -> dict[str, Any]:
        """``tf_features.schema``; see :func:`memgraph_tf.procedures.typed.schema`."""
        return typed.schema(self._factory, properties, options)

    def sample_pairs(
        self,
        sources: Any,
        targets: Any,
        num_neighbors: Any,
        properties: Any,
        options: Any = None,
    ) -> tuple[bytes, int]:
        """``tf_features.sample_pairs``: (blob, row count); see
        :func:`memgraph_tf.procedures.pairs.sample_pairs`."""
        return pairs.sample_pairs(
            self._factory, sources, targets, num_neighbors, properties, options
        )

    def split_edges(self, pattern: Any, options: Any = None) -> dict[str, int]:
        """``tf_features.split_edges``: edges per split and relationships written; see
        :func:`memgraph_tf.procedures.pairs.split_edges`."""
        return pairs.split_edges(self._factory, pattern, options)

    def structural(self, label: Any, options: Any = None) -> structural.StructuralResult:
        """``tf_features.structural``: keys, vectors and column names; see
        :func:`memgraph_tf.procedures.structural.structural`."""
        return structural.structural(self._factory, label, options)

    def structural_write(self, label: Any, options: Any = None) -> dict[str, Any]:
        """``tf_features.structural_write``; see
        :func:`memgraph_tf.procedures.structural.structural_write`."""
        return structural.structural_write(self._factory, label, options)


def mgp_runner(ctx: Any) -> ProcedureRunner:
    """The runner over Memgraph's ``mgp.ProcCtx`` (inside Memgraph or the embedded runtime)."""
    return ProcedureRunner(lambda opts: MgpGraphAccess(ctx, opts))


def run_pack(ctx: Any, nodes: Any, properties: Any, options: Any) -> tuple[str, int]:
    """``tf_features.pack``: returns (base64url blob, node count)."""
    data, count = mgp_runner(ctx).pack(nodes, properties, options)
    return blob.b64encode(data), count


def run_sample(ctx: Any, seeds: Any, fanouts: Any, properties: Any, options: Any) -> str:
    """``tf_features.sample``: the base64url blob of all seeds' neighbourhoods."""
    return blob.b64encode(mgp_runner(ctx).sample(seeds, fanouts, properties, options))


def run_sample_per_node(
    ctx: Any, seeds: Any, fanouts: Any, properties: Any, options: Any
) -> list[tuple[int, str]]:
    """``tf_features.sample_per_node``: (seed key, base64url blob of that seed alone) per seed."""
    rows = mgp_runner(ctx).sample_per_node(seeds, fanouts, properties, options)
    return [(key, blob.b64encode(data)) for key, data in rows]


def run_describe(ctx: Any, properties: Any, options: Any) -> dict[str, Any]:
    """``tf_features.describe``: see :meth:`ProcedureRunner.describe`."""
    return mgp_runner(ctx).describe(properties, options)


def run_sample_typed(
    ctx: Any, seeds: Any, num_neighbors: Any, properties: Any, options: Any
) -> tuple[str, int]:
    """``tf_features.sample_typed``: (base64url blob, seed count)."""
    data, count = mgp_runner(ctx).sample_typed(seeds, num_neighbors, properties, options)
    return blob.b64encode(data), count


def run_schema(ctx: Any, properties: Any, options: Any) -> dict[str, Any]:
    """``tf_features.schema``: see :func:`memgraph_tf.procedures.typed.schema`."""
    return mgp_runner(ctx).schema(properties, options)


def run_sample_pairs(
    ctx: Any, sources: Any, targets: Any, num_neighbors: Any, properties: Any, options: Any
) -> tuple[str, int]:
    """``tf_features.sample_pairs``: (base64url blob, row count)."""
    data, count = mgp_runner(ctx).sample_pairs(sources, targets, num_neighbors, properties, options)
    return blob.b64encode(data), count


def run_split_edges(ctx: Any, pattern: Any, options: Any) -> dict[str, int]:
    """``tf_features.split_edges``: see :func:`memgraph_tf.procedures.pairs.split_edges`."""
    return mgp_runner(ctx).split_edges(pattern, options)


def run_build_reservoirs(ctx: Any, options: Any) -> dict[str, Any]:
    """``tf_features.build_reservoirs``: one page of the build (a write procedure's context);
    see :func:`memgraph_tf.procedures.reservoir.build`."""
    opts = reservoir.parse_build_options(options)
    return reservoir.build(reservoir.MgpReservoirStore(ctx), opts)


def run_update_reservoirs(ctx: Any, changes: Any, options: Any) -> dict[str, int]:
    """``tf_features.update_reservoirs``: change-log entries applied to the reservoirs; see
    :func:`memgraph_tf.procedures.reservoir.update`."""
    opts = reservoir.parse_update_options(options)
    return reservoir.update(reservoir.MgpReservoirStore(ctx), changes, opts)


def run_structural(ctx: Any, label: Any, options: Any) -> structural.StructuralResult:
    """``tf_features.structural``: see :func:`memgraph_tf.procedures.structural.structural`."""
    return mgp_runner(ctx).structural(label, options)


def run_structural_write(ctx: Any, label: Any, options: Any) -> dict[str, Any]:
    """``tf_features.structural_write``: see
    :func:`memgraph_tf.procedures.structural.structural_write`."""
    return mgp_runner(ctx).structural_write(label, options)
