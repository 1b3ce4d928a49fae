"""Packing, homogeneous GraphSAGE sampling and ``describe`` over a
:class:`~memgraph_tf.procedures.access.GraphAccess`: the work behind ``tf_features.pack`` /
``sample`` / ``sample_per_node`` / ``describe`` (the feature tables: :mod:`.tables`; the sample
blob's sections: :mod:`.sections`; the draws: :mod:`.draw`).

Stdlib only (numpy, when importable, only speeds up the NaN/inf check); the bytes produced do not
depend on whether numpy is present. Everything is deterministic given the graph, the arguments and
``options.seed``:

* a node's neighbours are the *distinct* nodes one allowed edge away, sorted by key, whatever order
  the graph hands them out in;
* each seed row gets its own ``random.Random`` seeded from ``(options.seed, seed key)``
  (:func:`~memgraph_tf.procedures.draw.rng_for`), so a seed's
  neighbourhood does not depend on the other seeds in the call (``sample`` of n seeds equals the n
  single-seed blobs of ``sample_per_node`` stacked);
* per seed, hops are drawn in order 1..K and, within a hop, slots in row-major order;
* with ``options.reservoir_threshold`` (the bounded mode, :mod:`.reservoir`) a node whose stored
  reservoir records a degree above it draws, by the same rule, from its reservoir's members
  instead of all its neighbours.
"""

from __future__ import annotations

import array
import functools
import itertools
from collections.abc import Iterator, Sequence
from typing import Any

from memgraph_tf import blob, layout
from memgraph_tf.procedures import limits
from memgraph_tf.procedures.access import GraphAccess, NeighbourRead
from memgraph_tf.procedures.draw import (
    DRAWS_PER_CHECK,
    Drawer,
    base_seed,
    read_neighbours,
    rng_for,
)
from memgraph_tf.procedures.errors import PropertyValueError, describe_value
from memgraph_tf.procedures.options import Options, check_names
from memgraph_tf.procedures.reservoir import BoundedReads
from memgraph_tf.procedures.sections import Sample
from memgraph_tf.procedures.tables import (
    Column,
    FeatureTable,
    build_table,
    first_columns,
    gather,
    le,
    no_labels,
    refuse_strings,
    string_sections,
)

# ------------------------------------------------------------------------------------------------
# pack
# ------------------------------------------------------------------------------------------------


def pack(access: GraphAccess, keys: Sequence[int], names: Sequence[str], options: Options) -> bytes:
    """The ``tf_features.pack`` blob: ``ids`` int64 [n], ``features`` [n, d] in ``options.dtype``
    (the properties' values concatenated in the order of ``names``), one string section [n] per
    string property (named after it), and ``labels`` int64 [n] when ``options.label_property``."""
    names = check_names(names)
    columns = check_blob_size(access, keys[0], len(keys), names, options)
    strings = string_sections(columns)
    width = sum(c.width for c in columns)
    table = build_table(access, keys, names, options, columns=columns)
    if strings:  # the text is known now: the exact size, before the blob is built
        text_bytes = {}
        for name in strings:
            lengths = [len(v.encode("utf-8")) for v in table.strings[name]]
            text_bytes[name] = sum(lengths[table.row_of[k]] for k in keys)
        limits.check_pack(len(keys), width, options, strings, text_bytes)
    return blob.pack(_pack_sections(table, keys, options))


def check_blob_size(
    access: GraphAccess,
    first: int,
    n: int,
    names: Sequence[str],
    options: Options,
    fanouts: Sequence[int] | None = None,
    *,
    per_row: bool = False,
) -> list[Column]:
    """Refuses, before anything but the first node's properties is read, a ``pack`` of ``n`` nodes
    (``fanouts`` None) or a ``sample`` of ``n`` seeds (``per_row``: each ``sample_per_node`` row)
    whose blob would exceed ``options.max_blob_bytes`` (:mod:`memgraph_tf.procedures.limits`,
    phase 1: compact and sparse are checked again after sampling; ``pack``'s string text is
    counted later, once read); returns the column layout the first node
    ``first`` fixes. Raises what :func:`infer_columns` / :func:`refuse_strings` raise for that
    node, then :class:`OptionError` naming the size and the limit."""
    columns = first_columns(access, first, names)
    width = sum(c.width for c in columns)
    if fanouts is None:
        limits.check_pack(n, width, options, string_sections(columns))
    else:
        refuse_strings(columns)
        limits.check_sample(n, fanouts, width, options, per_row=per_row)
    return columns


def _pack_sections(table: FeatureTable, keys: Sequence[int], options: Options) -> dict[str, Any]:
    """The pack blob's sections, in :func:`memgraph_tf.layout.pack_sections` order and shapes."""
    n = len(keys)
    strings = string_sections(table.columns)
    sections: dict[str, Any] = {}
    for sec in layout.pack_sections(
        table.width, options.dtype, strings=strings, labels=bool(options.label_property), batch=n
    ):
        if sec.role == "ids":
            data = le(array.array("q", keys))
        elif sec.role == "features":
            data = le(gather(table, keys, options.dtype))
        elif sec.role == "labels":
            data = le(array.array("q", [table.labels[k] for k in keys]))
        else:  # a string property
            values = table.strings[sec.name]
            sections[sec.name] = [values[table.row_of[k]] for k in keys]
            continue
        sections[sec.name] = blob.Dense(data, list(sec.shape), sec.dtype)
    return sections


# sample
# ------------------------------------------------------------------------------------------------


def sample_ids(
    access: GraphAccess, seeds: Sequence[int], fanouts: Sequence[int], options: Options
) -> tuple[list[list[int]], list[list[bool]]]:
    """Samples the k-hop neighbourhoods of ``seeds`` (keys); see the module docstring for the
    rules."""
    seed = base_seed(options)
    rngs = [rng_for(seed, key) for key in seeds]
    ids: list[list[int]] = [list(seeds)]
    masks: list[list[bool]] = [[True] * len(seeds)]
    neighbour_cache: dict[int, list[int]] = {}
    bounded = BoundedReads.of(options)  # the bounded mode: hubs draw from their reservoirs
    per_row = 1
    for h, f in enumerate(fanouts, start=1):
        prev_ids, prev_mask = ids[h - 1], masks[h - 1]
        parents = list(dict.fromkeys(k for k, m in zip(prev_ids, prev_mask) if m))
        if bounded is not None:
            bounded.fill(access, parents, neighbour_cache, f, h)
        todo = [k for k in parents if k not in neighbour_cache]
        read = functools.partial(
            access.neighbours, read=NeighbourRead(options.edge_types, options.direction)
        )
        read_neighbours(access, todo, neighbour_cache, read)
        cur_ids: list[int] = []
        cur_mask: list[bool] = []
        draw = Drawer(f, options.replace, options.pad)
        # an abort check every DRAWS_PER_CHECK drawn slots: every few rows, or within a row as
        # wide as that (one seed with large fanouts)
        rows_per_check = max(1, DRAWS_PER_CHECK // (per_row * f))
        slots_per_check = max(1, DRAWS_PER_CHECK // f)
        for row, rng in enumerate(rngs):
            if row % rows_per_check == rows_per_check - 1:
                access.check_abort()
            first, stop = row * per_row, (row + 1) * per_row
            for lo in range(first, stop, slots_per_check):
                if lo != first:
                    access.check_abort()
                hi = min(stop, lo + slots_per_check)
                draw(rng, neighbour_cache, prev_ids[lo:hi], prev_mask[lo:hi], cur_ids, cur_mask)
        if bounded is not None:
            bounded.verify(access, cur_ids, cur_mask)
        ids.append(cur_ids)
        masks.append(cur_mask)
        per_row *= f
    return ids, masks


def sample(
    access: GraphAccess,
    seeds: Sequence[int],
    fanouts: Sequence[int],
    names: Sequence[str],
    options: Options,
    *,
    per_row: bool = False,
) -> Sample:
    """Samples and reads the features of every sampled node (see :func:`sample_sections`).

    Guarantees: the blob (with ``per_row``, each single seed's blob: ``sample_per_node``) is
    checked against ``options.max_blob_bytes`` (:mod:`memgraph_tf.procedures.limits`) before what
    it sizes is allocated. Phase 1, before anything is sampled -- and, with several seeds, before
    any seed but the first is read (for the feature width): :func:`limits.check_sample`; the dense
    layout is then sized exactly and the seeds' own properties are read (and checked) before their
    neighbourhoods are sampled. Compact and sparse, phase 2, after sampling and before any feature
    is read: :func:`_check_sampled` (the distinct sampled nodes; for sparse, if needed, their
    non-zero values counted as they are read); the features are read after it."""
    names = check_names(names)
    columns = None  # the first seed fixes the layout
    if len(seeds) > 1 or options.layout != "dense":  # sized from the first seed alone
        columns = check_blob_size(
            access, seeds[0], len(seeds), names, options, fanouts, per_row=per_row
        )
    table = None
    if options.layout == "dense":  # sized exactly in phase 1: the seeds are read first
        table = build_table(access, seeds, names, options, allow_strings=False, columns=columns)
        limits.check_sample(len(seeds), fanouts, table.width, options, per_row=per_row)
    ids, masks = sample_ids(access, seeds, fanouts, options)
    chain = itertools.chain.from_iterable
    distinct = dict.fromkeys(itertools.compress(chain(ids), chain(masks)))  # (in hop order)
    if table is None:
        assert columns is not None  # (set above for every layout but dense)
        _check_sampled(
            access, ids, masks, list(distinct), fanouts, names, columns, options, per_row
        )
        table = build_table(access, seeds, names, options, allow_strings=False, columns=columns)
    extra = [k for k in distinct if k not in table.row_of]
    if extra:
        more = build_table(
            access, extra, names, no_labels(options), allow_strings=False, columns=table.columns
        )
        base = len(table.row_of)
        table.flat.extend(more.flat)
        for k, r in more.row_of.items():
            table.row_of[k] = base + r
    return Sample(ids, masks, table)


def _check_sampled(
    access: GraphAccess,
    ids: list[list[int]],
    masks: list[list[bool]],
    distinct: list[int],
    fanouts: Sequence[int],
    names: Sequence[str],
    columns: list[Column],
    options: Options,
    per_row: bool,
) -> None:
    """Phase 2 of the size check (compact and sparse layouts), after sampling and before any
    feature is read: refuses the blob (``per_row``: any row's blob) whose table of distinct sampled
    nodes (``distinct``: those of the whole call, in order of first appearance) makes it exceed
    ``options.max_blob_bytes`` -- compact exactly; sparse first with the worst case over those
    nodes, then, where that exceeds the limit, with their non-zero values counted as they are read
    (:func:`_count_nonzero`: one chunk of rows at a time, no full copy of the table). Nothing is
    computed when the worst case for the fanouts (every slot a distinct node) fits."""
    n = len(ids[0])
    rows = 1 if per_row else n
    width = sum(c.width for c in columns)
    if limits.sample_bytes(rows, fanouts, width, options) <= options.max_blob_bytes:
        return  # the bound over every possible table fits: no need to look at this one
    if not per_row:
        if limits.check_sampled(n, fanouts, width, options, len(distinct)):
            return
        nnz = counted = 0  # sparse over its worst case: count, and stop as soon as it is too much
        for part, part_nnz in _count_nonzero(access, distinct, names, columns, options):
            nnz += sum(part_nnz)
            counted += len(part)
            limits.check_sampled(n, fanouts, width, options, len(distinct), nnz, counted=counted)
        return
    per_hop = [1]
    for f in fanouts:
        per_hop.append(per_hop[-1] * f)
    to_count: list[tuple[int, list[int]]] = []  # sparse rows over their worst case
    for i in range(n):
        if i % 256 == 255:
            access.check_abort()
        keys: dict[int, None] = {}
        for h, (hop_ids, hop_mask) in enumerate(zip(ids, masks)):
            lo, hi = i * per_hop[h], (i + 1) * per_hop[h]
            keys.update(dict.fromkeys(itertools.compress(hop_ids[lo:hi], hop_mask[lo:hi])))
        row = f"row {i} (seed: {access.node_name(ids[0][i])})"
        if not limits.check_sampled(1, fanouts, width, options, len(keys), row=row):
            to_count.append((i, list(keys)))
    if not to_count:
        return
    nnz_of: dict[int, int] = {}
    needed = list(dict.fromkeys(k for _, keys in to_count for k in keys))
    for part, part_nnz in _count_nonzero(access, needed, names, columns, options):
        nnz_of.update(zip(part, part_nnz))
    for i, keys in to_count:
        row = f"row {i} (seed: {access.node_name(ids[0][i])})"
        nnz = sum(nnz_of[k] for k in keys)
        limits.check_sampled(1, fanouts, width, options, len(keys), nnz, row=row)


def _count_nonzero(
    access: GraphAccess,
    keys: Sequence[int],
    names: Sequence[str],
    columns: list[Column],
    options: Options,
) -> Iterator[tuple[Sequence[int], list[int]]]:
    """``(keys, non-zero values of each)`` for ``keys``, a chunk at a time: each chunk's features
    are read and checked as :func:`build_table` reads and checks them (the same errors, the same
    conversion to ``options.dtype``: a value is non-zero exactly when the sparse table holds it),
    counted, and dropped before the next chunk is read."""
    width = sum(c.width for c in columns)
    chunk = max(16, min(512, 2**16 // max(1, width)))  # ~64k values a chunk
    plain = no_labels(options)  # (the seeds' classes are read, and checked, with the table)
    for start in range(0, len(keys), chunk):
        part = keys[start : start + chunk]
        flat = build_table(access, part, names, plain, allow_strings=False, columns=columns).flat
        yield part, [width - flat[r * width : (r + 1) * width].count(0) for r in range(len(part))]


# ------------------------------------------------------------------------------------------------
# describe
# ------------------------------------------------------------------------------------------------


def num_classes(access: Any, label_property: str) -> int | None:
    """1 + the largest class in ``label_property`` over the nodes (with ``options.label``) that have
    it, or None when none has a class >= 0. Negative values (such as -1 for "unlabelled") count as
    no class; nodes without the property are skipped.

    Guarantees: one pass over the values ``access.label_values`` hands out; a value that is not an
    integer raises :class:`PropertyValueError` naming the node (by internal id) and the value,
    as ``pack`` would for that node.
    """
    top = -1
    for value, internal_id in access.label_values(label_property):
        if not isinstance(value, int) or isinstance(value, bool):
            raise PropertyValueError(
                f"node {internal_id} property {label_property!r} (options.label_property): "
                f"expected an integer class, got {describe_value(value)}"
            )
        if value > top:
            top = value
    return None if top < 0 else top + 1


def describe(columns: list[Column], options: Options, classes: int | None = None) -> dict[str, Any]:
    """What pack/sample produce for these columns: ``feature_width``, ``dtype``, ``columns``
    (name, kind, width, offset), ``sections`` (name, dtype, shape with -1 for the batch dimension
    and for lengths that vary from blob to blob; the sample layout of
    :func:`memgraph_tf.layout.sample_sections` in ``options.layout`` when ``options.fanouts`` is
    set, else the pack layout of :func:`memgraph_tf.layout.pack_sections`) and ``num_classes``
    (``classes``: see :func:`num_classes`; None without ``options.label_property``).

    Guarantees: raises :class:`OptionError` exactly where pack (a string property named like a
    fixed section) or sample (any string property) would refuse these columns.
    """
    width = sum(c.width for c in columns)
    labels = bool(options.label_property)
    if options.fanouts is None:
        sections = layout.pack_sections(
            width, options.dtype, strings=string_sections(columns), labels=labels
        )
    else:
        refuse_strings(columns)
        sections = layout.sample_sections(
            options.fanouts,
            width,
            options.dtype,
            pad=options.pad,
            labels=labels,
            layout=options.layout,
        )
    return {
        "feature_width": width,
        "dtype": options.dtype,
        "columns": [
            {"name": c.name, "kind": c.kind, "width": c.width, "offset": c.offset} for c in columns
        ],
        "sections": [s.to_map() for s in sections],
        "num_classes": classes if labels else None,
    }
