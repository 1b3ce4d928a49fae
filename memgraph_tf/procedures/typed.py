"""Typed (heterogeneous) sampling and the graph's schema: ``tf_features.sample_typed`` and
``tf_features.schema``, stdlib only; thin entry points over the shared machinery.

``sample_typed`` samples the slot tables of a :class:`~memgraph_tf.typed_sampling.TypedSamplingSpec`
(:mod:`memgraph_tf.procedures.slots`: the draws, the rules) and writes the typed layout
(``options.layout``: dense, compact or sparse; the same draws in each) of
:func:`memgraph_tf.layout.typed_sample_sections` (:mod:`memgraph_tf.procedures.slot_blobs`: the
feature tables, the sections, the ``options.max_blob_bytes`` checks). Keys are the values of
``options.id_property`` (unique within a label among the nodes a call meets; seeds looked up among
the nodes with the seed label, ``options.label``) or internal ids. Equal graphs, arguments and
seeds give equal bytes over any graph access (the query module and the client-side fallback
alike).
"""

from __future__ import annotations

import array
import dataclasses
import functools
from typing import Any

from memgraph_tf import blob, layout
from memgraph_tf.procedures.access import READ_CHUNK, AccessFactory
from memgraph_tf.procedures.draw import base_seed
from memgraph_tf.procedures.edge_columns import parse_edge_feature_specs
from memgraph_tf.procedures.errors import OptionError
from memgraph_tf.procedures.options import (
    Options,
    parse_options,
    parse_properties,
    parse_spec,
    parse_typed_call,
)
from memgraph_tf.procedures.raw import parse_feature_specs, split_feature_specs
from memgraph_tf.procedures.slot_blobs import LabelView, RoleCall, check_packed, layout_sections
from memgraph_tf.procedures.slots import Keys, Role, resolve_seeds
from memgraph_tf.procedures.tables import build_table, first_columns, le, refuse_strings
from memgraph_tf.procedures.timed import SeedTimes, check_timing, seed_times

__all__ = ["sample_typed", "schema"]


def sample_typed(
    factory: AccessFactory, seeds: Any, num_neighbors: Any, properties: Any, options: Any
) -> tuple[bytes, int]:
    """``tf_features.sample_typed``: (blob, seed count). See :mod:`memgraph_tf.procedures.slots`
    for the rules and :func:`memgraph_tf.layout.typed_sample_sections` for the layout.

    ``options.feature_spec`` (a map label -> feature spec) gives a label raw property columns
    in place of ``properties`` (:mod:`memgraph_tf.procedures.raw`; a spec of ``required``
    properties only is exactly ``properties[label]``); ``options.edge_feature_spec`` (a map edge
    pattern -> feature spec) gives a step's slots the properties of their relationships
    (:mod:`memgraph_tf.procedures.edge_columns`).

    Guarantees: checks, in this order, the options (``options.feature_spec`` included), the spec,
    the properties map and the feature specs' labels, then the seeds
    (each must have the seed label); a bad input raises a :class:`ProcedureInputError` naming the
    option, step, label, property or node; the same graph, arguments and ``options.seed`` give the
    same bytes over any graph access; with ``options.exclude_splits`` no relationship whose
    ``options.split_property`` is one of them is walked, at any hop."""
    opts, split, feature_spec = parse_typed_call(options)
    if split is not None and opts.reservoir_threshold is not None:
        raise OptionError(
            "options.reservoir_threshold: expected without options.exclude_splits (a reservoir "
            "samples every relationship of its step, held-out ones included), got both"
        )
    specs = parse_feature_specs(feature_spec)
    seed_label = opts.label
    spec = parse_spec(seed_label, num_neighbors)
    check_timing(spec, opts.seed_time, opts.at)
    names_of = parse_properties(properties, spec.labels())
    raw_of = split_feature_specs(specs, properties, names_of, spec.labels())
    edge_of = parse_edge_feature_specs(opts.edge_feature_spec, [spec], opts)
    plain = dataclasses.replace(opts, id_property=None, label=None, label_property=None)
    nav = factory(plain)
    internals, seed_keys = resolve_seeds(
        factory, nav, opts, seeds, "seeds", seed_label, "the seed label, options.label"
    )
    n = len(internals)
    keys = Keys(nav, opts.id_property)
    keys.add(seed_label, internals, seed_keys)
    call = RoleCall(factory, nav, keys, names_of, opts, split, raw_of=raw_of, edge_of=edge_of)
    call.fix_seed_columns(seed_label, internals[0])

    def layout_of(widths: Any) -> list[layout.Section]:
        return layout_sections(
            layout.typed_sample_sections,
            spec,
            widths,
            opts.dtype,
            labels=bool(opts.label_property),
            batch=n,
            layout=opts.layout,
            raw=call.raw_widths,
            edges=call.edge_widths,
        )

    timing = None
    if opts.at is not None:
        timing = SeedTimes([opts.at] * n, opts.time_order == "most_recent")
    elif opts.seed_time is not None:
        name = functools.partial(keys.name, seed_label)
        most_recent = opts.time_order == "most_recent"
        timing = seed_times(nav, internals, name, opts.seed_time, most_recent)

    def make_roles() -> list[Role]:
        return [
            Role(
                spec,
                internals,
                seed_keys,
                base_seed(opts),
                timing=timing,
                reservoir_threshold=opts.reservoir_threshold,
                id_property=opts.id_property,
            )
        ]

    sections = call.sample_sections(n, spec.layout().slots, "seed", layout_of, make_roles)
    if opts.label_property:
        view = LabelView(nav, seed_label, keys.of[seed_label], opts.id_property)
        got = build_table(view, internals, [], opts, allow_strings=False, columns=[])
        data = le(array.array("q", [got.labels[k] for k in internals]))
        sections[layout.LABELS] = blob.Dense(data, [n], "int64")
    data = blob.pack(sections)
    check_packed(data, n, "seed", [*raw_of, *map(str, edge_of)], opts)
    return data, n


# ------------------------------------------------------------------------------------------------
# schema
# ------------------------------------------------------------------------------------------------


def schema(factory: AccessFactory, properties: Any, options: Any) -> dict[str, Any]:
    """``tf_features.schema``: the metagraph. ``labels``: per label (sorted) ``{"label", "count",
    "properties": [{"name", "kind", "width", "dtype"}]}`` -- the properties asked for that label in
    ``properties`` (a map label -> names), each checked on *every* node of the label (present,
    numeric, the same width: else an error naming the node); ``relationships``: per ``(source
    label, type, target label)`` (sorted) ``{"source", "type", "target", "count"}``."""
    opts = parse_options("schema", options)
    names_of = parse_properties(properties)
    plain = Options(dtype=opts.dtype)
    nav = factory(plain)
    counts = nav.label_counts()
    for label in names_of:
        if label not in counts:
            raise OptionError(
                f"properties: unknown label {label!r} (the graph has "
                f"{', '.join(map(repr, sorted(counts))) or 'no labels'})"
            )
    described: dict[str, list[dict[str, Any]]] = {}
    for label, names in names_of.items():
        nodes = nav.label_nodes(label)
        nav.resolve(nodes, f"properties[{label!r}] nodes")
        view = LabelView(nav, label, {}, None)
        columns = first_columns(view, nodes[0], names)
        refuse_strings(columns)
        for start in range(0, len(nodes), 4 * READ_CHUNK):
            part = nodes[start : start + 4 * READ_CHUNK]
            build_table(view, part, names, plain, allow_strings=False, columns=columns)
        described[label] = [
            {"name": c.name, "kind": c.kind, "width": c.width, "dtype": opts.dtype} for c in columns
        ]
    return {
        "labels": [
            {"label": label, "count": counts[label], "properties": described.get(label, [])}
            for label in sorted(counts)
        ],
        "relationships": [
            {"source": a, "type": t, "target": b, "count": c}
            for (a, t, b), c in sorted(nav.triples().items())
        ],
    }
