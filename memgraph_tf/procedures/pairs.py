"""Link prediction in the database: ``tf_features.split_edges`` and
``tf_features.sample_pairs``, stdlib only.

**Edge splits (the GAE protocol, done inside the graph).** ``split_edges(pattern, options)`` takes
the relationships an edge step matches (:meth:`~memgraph_tf.typed_sampling.EdgeStep.parse`:
``(:Paper)-[:CITES]-(:Paper)``, ``(:User)-[:BOUGHT]->(:Product)``...) and writes
``options.split_property`` (default ``split``) = ``train`` / ``val`` / ``test`` on each of them:

* the unit drawn is an *edge*: the endpoints' keys (``options.id_property`` values, else internal
  ids) as ``(left key, right key)`` -- for an undirected step between nodes of one label, the
  unordered pair ``(min, max)`` -- so parallel relationships, and for an undirected step the two
  directions between the same nodes, are one edge and get one split (none leaks the other);
* the edges, sorted, are shuffled by a ``random.Random`` keyed by ``options.seed`` (required);
  the first ``floor(val_fraction * E)`` are ``val``, the next ``floor(test_fraction * E)``
  ``test``, the rest ``train`` (defaults 0.05 and 0.10: the 85/5/10 GAE split). The same graph,
  pattern and seed write the same splits on any graph access: a rerun changes nothing.

``options.exclude_splits`` on ``sample_typed`` and ``sample_pairs`` (e.g. ``["val", "test"]``)
then leaves every relationship whose split property holds one of those values out of every
sampled neighbourhood, at every hop (:class:`memgraph_tf.procedures.options.SplitFilter`).

**Pair sampling.** ``sample_pairs(sources, targets, num_neighbors, properties, options)`` samples,
for each pair ``(s, t)`` (``s`` a node of ``options.source_label``, ``t`` of
``options.target_label``, default the source label), the typed neighbourhood of ``s`` (the spec
seeded at the source label) and of ``t`` (seeded at the target label) into one blob
(:func:`memgraph_tf.layout.pair_sample_sections`), with these rules:

* **the pair's own relationships are removed from both neighbourhoods at every hop**: in the row
  of ``(s, t)`` a slot holding ``s`` never reaches ``t`` and a slot holding ``t`` never reaches
  ``s``, over every step (so over any relationship of the steps' types between the two);
  everything else is ``sample_typed``'s draw: each endpoint's row draws from the RNG keyed by
  ``(options.seed, its key)``, so where the pair's relationships are not met its neighbourhood is
  byte for byte the one ``sample_typed`` gives that node with the same seed;
* ``options.negatives = k`` draws ``k`` negative targets per given pair, uniformly over the nodes
  of the target label, from a ``random.Random`` keyed by ``(options.seed, source key, target
  key)`` (a rerun draws the same negatives), independently (a negative may repeat), never the
  source itself nor a *known neighbour* of it: a node joined to the source by any relationship
  of a type that some step walks between the two labels, in either direction, held out or not (a
  held-out edge is a positive of its split, never a negative);
* rows: the given pairs in order, then the negatives (pair ``i``'s ``j``-th at ``n + i * k +
  j``); ``pair_labels`` is 1 for a given pair, 0 for a negative;
* **point in time**: with steps that have a time (``{time: ts}``) each pair has a time --
  ``options.pair_time`` (its relationships' smallest value of a property) or
  ``options.pair_times`` (one per pair) -- and every row of the pair, its negatives' included,
  walks both neighbourhoods as of that time; the negatives are drawn among the target nodes
  active by then (:mod:`memgraph_tf.procedures.pair_times`).
"""

from __future__ import annotations

import array
import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from memgraph_tf import blob, layout
from memgraph_tf.procedures.access import AccessFactory, GraphAccess, NeighbourRead, node_name
from memgraph_tf.procedures.draw import base_seed, rng_for
from memgraph_tf.procedures.edge_columns import parse_edge_feature_specs
from memgraph_tf.procedures.errors import OptionError, ProcedureInputError, describe_value
from memgraph_tf.procedures.options import (
    Options,
    options_map,
    parse_options,
    parse_properties,
    parse_spec,
    parse_split_filter,
)
from memgraph_tf.procedures.pair_times import (
    ActiveTargets,
    PairTiming,
    check_pair_timing,
    pair_times,
    parse_pair_timing,
)
from memgraph_tf.procedures.raw import parse_feature_specs, split_feature_specs
from memgraph_tf.procedures.slot_blobs import RoleCall, check_packed, layout_sections
from memgraph_tf.procedures.slots import Keys, Role, no_relationships, resolve_seeds
from memgraph_tf.procedures.tables import le
from memgraph_tf.procedures.time_split import TimeSplit, parse_time_split
from memgraph_tf.procedures.timed import SeedTimes
from memgraph_tf.typed_sampling import EdgeStep, TypedSamplingSpec

__all__ = ["MAX_NEGATIVES", "sample_pairs", "split_edges"]

MAX_NEGATIVES = 1000
"""The most negatives ``options.negatives`` may ask for per pair."""
DEFAULT_VAL_FRACTION = 0.05
DEFAULT_TEST_FRACTION = 0.10
_WRITE_CHUNK = 1000


# ------------------------------------------------------------------------------------------------
# split_edges
# ------------------------------------------------------------------------------------------------


def _fraction(raw: dict[str, Any], name: str, default: float) -> float:
    value = raw.pop(name, None)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise OptionError(
            f"options.{name}: expected a fraction from 0 to 1, got {describe_value(value)}"
        )
    return float(value)


def _parse_split_options(options: Any) -> tuple[Options, Any, float, float, str, TimeSplit | None]:
    """``split_edges``'s options: (parsed ``id_property``, seed, val and test fractions, split
    property, temporal split or None)."""
    raw = options_map(options, "split_edges", layout.SPLIT_EDGES_OPTIONS)
    timed = parse_time_split(raw)
    if timed is not None:
        for key in ("val_fraction", "test_fraction"):
            if raw.get(key) is not None:
                raise OptionError(
                    f"options.{key}: not used with options.time_property (options.cutoffs set "
                    "the split)"
                )
    seed = raw.pop("seed", None)
    if (timed is None or seed is not None) and (
        not isinstance(seed, int) or isinstance(seed, bool)
    ):
        raise OptionError(
            "options.seed: expected an integer (the split is drawn from it: the same seed writes "
            f"the same split), got {describe_value(seed)}"
        )
    val = _fraction(raw, "val_fraction", DEFAULT_VAL_FRACTION)
    test = _fraction(raw, "test_fraction", DEFAULT_TEST_FRACTION)
    if val + test > 1:
        raise OptionError(
            f"options.val_fraction + options.test_fraction: expected at most 1, got {val} + {test}"
        )
    name = raw.pop("split_property", None)
    name = layout.SPLIT_PROPERTY if name is None else name
    if not isinstance(name, str) or not name:
        raise OptionError(
            f"options.split_property: expected a property name, got {describe_value(name)}"
        )
    return parse_options("split_edges", raw), seed, val, test, name, timed  # id_property


def split_edges(factory: AccessFactory, pattern: Any, options: Any) -> dict[str, int]:
    """``tf_features.split_edges``: writes the split of every relationship ``pattern`` matches
    (module docstring; by time with ``options.time_property``:
    :mod:`memgraph_tf.procedures.time_split`); returns ``{"train", "val", "test"}`` (edges per
    split) and ``"relationships"`` (relationships written).

    Guarantees: the same graph, pattern and ``options.seed`` (or cutoffs) write the same values
    over any graph access (idempotent); nothing is written when an input is bad (the options, the
    pattern, an endpoint without an integer ``options.id_property``, a relationship whose time is
    missing or not of the cutoffs' kind) or when the graph has no relationship of the pattern (an
    error naming the relationships it has)."""
    opts, seed, val, test, name, timed = _parse_split_options(options)
    try:
        step = EdgeStep.parse(pattern)
    except ValueError as exc:
        raise OptionError(f"pattern: {exc}") from None

    nav = factory(dataclasses.replace(opts, id_property=None))
    found = nav.relationships(step)
    if not found:
        error = no_relationships(nav, step)
        why = str(error).removeprefix("num_neighbors: ") if error else f"{step}: none matches it"
        raise OptionError(f"pattern: {why}")
    ends = list(dict.fromkeys(i for _, a, b in found for i in (a, b)))
    nav.resolve(ends, "relationship endpoints")
    keys = Keys(nav, opts.id_property)
    keys.add(step.left, list(dict.fromkeys(a for _, a, _ in found)))
    keys.add(step.right, list(dict.fromkeys(b for _, _, b in found)))
    left_of, right_of = keys.of[step.left], keys.of[step.right]
    unordered = step.direction == "both" and step.left == step.right

    def unit(a: int, b: int) -> tuple[int, int]:
        ka, kb = left_of[a], right_of[b]
        return (min(ka, kb), max(ka, kb)) if unordered else (ka, kb)

    if timed is not None:
        arrow = {"out": ("-", "->"), "in": ("<-", "-"), "both": ("-", "-")}[step.direction]

        def name_of(i: int) -> str:
            _, a, b = found[i]
            left, right = (node_name(k, opts.id_property) for k in (left_of[a], right_of[b]))
            return f"relationship ({left}){arrow[0]}[:{step.rel_type}]{arrow[1]}({right})"

        values = nav.relationship_values([h for h, _, _ in found], timed.prop)
        split_of = timed.assign([unit(a, b) for _, a, b in found], values, name_of)
        rows = [(handle, split_of[unit(a, b)]) for handle, a, b in found]
        nav.write_splits(rows, name)
        counts = {s: 0 for s in layout.SPLITS}
        for s in split_of.values():
            counts[s] += 1
        return {**counts, "relationships": len(rows)}

    units = sorted({unit(a, b) for _, a, b in found})
    rng_for(seed, "split_edges").shuffle(units)  # the keyed RNG of the samplers
    n_val, n_test = int(val * len(units)), int(test * len(units))
    split_of = {u: "val" for u in units[:n_val]}
    split_of.update((u, "test") for u in units[n_val : n_val + n_test])
    split_of.update((u, "train") for u in units[n_val + n_test :])
    rows = [(handle, split_of[unit(a, b)]) for handle, a, b in found]
    nav.write_splits(rows, name)
    return {
        "train": len(units) - n_val - n_test,
        "val": n_val,
        "test": n_test,
        "relationships": len(rows),
    }


# ------------------------------------------------------------------------------------------------
# sample_pairs
# ------------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class _PairOptions:
    source_label: str
    target_label: str
    negatives: int
    timing: PairTiming | None = None


def _parse_pair_options(options: Any) -> tuple[Options, _PairOptions, Any, Any]:
    """The options, the pair options, the held-out relationships and ``options.feature_spec``
    as given."""
    if options is not None and not isinstance(options, Mapping):
        raise OptionError(f"options: expected a map, got {describe_value(options)}")
    raw = dict(options or {})
    labels = []
    for name, fallback in (("source_label", None), ("target_label", "source_label")):
        value = raw.pop(name, None)
        if value is None and fallback is not None:
            value = labels[0]
        if not isinstance(value, str) or not value:
            raise OptionError(
                f"options.{name}: expected a label (a non-empty string: the label of the pairs' "
                f"{name.split('_')[0]}s), got {describe_value(value)}"
            )
        labels.append(value)
    negatives = raw.pop("negatives", None)
    negatives = 0 if negatives is None else negatives
    if (
        not isinstance(negatives, int)
        or isinstance(negatives, bool)
        or not 0 <= negatives <= MAX_NEGATIVES
    ):
        raise OptionError(
            f"options.negatives: expected the number of negatives per pair, an integer from 0 to "
            f"{MAX_NEGATIVES}, got {describe_value(negatives)}"
        )
    split = parse_split_filter(raw)
    feature_spec = raw.pop("feature_spec", None)
    edge_feature_spec = raw.pop("edge_feature_spec", None)
    timing = parse_pair_timing(raw)
    opts = parse_options("sample_pairs", raw)
    opts = dataclasses.replace(opts, edge_feature_spec=edge_feature_spec)
    return opts, _PairOptions(labels[0], labels[1], negatives, timing), split, feature_spec


def _parse_specs(
    num_neighbors: Any, source_label: str, target_label: str
) -> tuple[TypedSamplingSpec, TypedSamplingSpec]:
    """One pattern map for both endpoints, or ``{"source": map, "target": map}``."""
    if isinstance(num_neighbors, Mapping) and set(num_neighbors) == {"source", "target"}:
        return (
            parse_spec(source_label, num_neighbors["source"]),
            parse_spec(target_label, num_neighbors["target"]),
        )
    return parse_spec(source_label, num_neighbors), parse_spec(target_label, num_neighbors)


def _negatives(
    nav: GraphAccess,
    keys: Keys,
    specs: Sequence[TypedSamplingSpec],
    pair: _PairOptions,
    rows: tuple[Sequence[int], Sequence[int], Sequence[int] | None],
    seed: int,
    opts: Options,
    split: Any,
) -> list[int]:
    """``pair.negatives`` negative targets (internal ids) per pair, pair-major (module
    docstring); ``rows``: the pairs' sources, targets and times (None: untimed), with times only
    the targets active as of each pair's time
    (:class:`~memgraph_tf.procedures.pair_times.ActiveTargets`)."""
    sources, targets, times = rows
    k = pair.negatives
    label = pair.target_label
    candidates = nav.label_nodes(label)
    if candidates:
        nav.resolve(candidates, f"the :{label} nodes")
    keys.add(label, candidates)
    key_of = keys.of[label]
    candidates = sorted(dict.fromkeys(candidates), key=key_of.__getitem__)
    active = None
    if times is not None:
        active = ActiveTargets(nav, specs, label, candidates, keys, split)
        candidates = active.ordered
    distinct = list(dict.fromkeys(sources))
    known: dict[int, set[int]] = {s: {s} for s in distinct}
    for rel_type in sorted(
        {
            s.rel_type
            for spec in specs
            for s in spec.steps
            if {s.left, s.right} == {pair.source_label, pair.target_label}
        }
    ):
        read = NeighbourRead((rel_type,), "both", label)
        for s, found in zip(distinct, nav.neighbours(distinct, read)):
            known[s].update(found)
    source_key_of = keys.of[pair.source_label]
    in_label = set(candidates)
    out: list[int] = []
    for i, (s, t) in enumerate(zip(sources, targets)):
        if i % 256 == 0:
            nav.check_abort()
        forbidden = known[s]
        source = f"{node_name(source_key_of[s], opts.id_property)} (:{pair.source_label})"
        if active is None or times is None:
            size = len(candidates)
            free = size - len(forbidden & in_label)
        else:
            size = active.count(times[i])
            free = size - sum(1 for c in forbidden if active.rank.get(c, size) < size)
            while free <= 0 and size < len(candidates):  # none yet: the next to become active
                free += candidates[size] not in forbidden
                size += 1
            if free <= 0:
                raise ProcedureInputError(
                    f"options.negatives: sources[{i}]: {source} has no negative target at the "
                    f"pair's time {times[i]} or later: every active :{label} node (one with a "
                    "relationship of a timed step) is joined to it or is it"
                )
        if free <= 0:
            raise ProcedureInputError(
                f"options.negatives: sources[{i}]: {source} is joined to every :{label} node (or "
                "is the only one): no negative target to draw"
            )
        rng = rng_for(seed, f"negatives/{source_key_of[s]}/{keys.of[label][t]}")
        if free * 4 >= size:  # rejection: uniform over the free candidates
            for _ in range(k):
                while True:
                    c = candidates[rng.randrange(size)]
                    if c not in forbidden:
                        break
                out.append(c)
        else:  # few free candidates: draw from them directly (uniform too)
            pool = [c for c in candidates[:size] if c not in forbidden]
            out.extend(pool[rng.randrange(len(pool))] for _ in range(k))
    return out


def sample_pairs(
    factory: AccessFactory,
    sources: Any,
    targets: Any,
    num_neighbors: Any,
    properties: Any,
    options: Any,
) -> tuple[bytes, int]:
    """``tf_features.sample_pairs``: (blob, row count). See the module docstring for the rules and
    :func:`memgraph_tf.layout.pair_sample_sections` for the layout.

    Guarantees: checks, in this order, the options, the specs, the properties map, the sources
    (nodes of the source label), the targets (of the target label); a bad input raises a
    :class:`ProcedureInputError` naming the option, step, label, property or ``sources[i]`` /
    ``targets[i]``; the same graph, arguments and ``options.seed`` give the same bytes over any
    graph access; neither neighbourhood of a row walks a relationship between the row's two
    endpoints, nor (``options.exclude_splits``) a held-out relationship, nor (steps with a time)
    one after the row's pair's time; with a time, a negative target is a node of the target
    label active at the pair's time (:mod:`memgraph_tf.procedures.pair_times`), and a pair
    without a time, or a time that is not an integer, fails the call naming it."""
    opts, pair, split, feature_spec = _parse_pair_options(options)
    specs_of = parse_feature_specs(feature_spec)
    src_spec, dst_spec = _parse_specs(num_neighbors, pair.source_label, pair.target_label)
    check_pair_timing((src_spec, dst_spec), pair.timing)
    labels = list(dict.fromkeys(src_spec.labels() + dst_spec.labels()))
    names_of = parse_properties(properties, labels)
    raw_of = split_feature_specs(specs_of, properties, names_of, labels)
    edge_of = parse_edge_feature_specs(opts.edge_feature_spec, [src_spec, dst_spec], opts)
    plain = dataclasses.replace(opts, id_property=None, label=None, label_property=None)
    nav = factory(plain)
    s_int, s_keys = resolve_seeds(
        factory, nav, opts, sources, "sources", pair.source_label, "options.source_label"
    )
    t_int, t_keys = resolve_seeds(
        factory, nav, opts, targets, "targets", pair.target_label, "options.target_label"
    )
    if len(t_int) != len(s_int):
        raise OptionError(
            f"targets: expected one target per source ({len(s_int)}), got {len(t_int)}"
        )
    keys = Keys(nav, opts.id_property)
    keys.add(pair.source_label, s_int, s_keys)
    keys.add(pair.target_label, t_int, t_keys)
    seed = base_seed(opts)
    n = len(s_int) * (1 + pair.negatives)
    specs = (src_spec, dst_spec)
    times = None
    if pair.timing is not None:
        ends = (pair.source_label, pair.target_label)
        times = pair_times(nav, pair.timing, specs, ends, (s_int, t_int), keys.name)
    call = RoleCall(factory, nav, keys, names_of, opts, split, raw_of=raw_of, edge_of=edge_of)
    call.fix_seed_columns(pair.source_label, s_int[0])
    call.fix_seed_columns(pair.target_label, t_int[0])

    def layout_of(widths: Any) -> list[layout.Section]:
        return layout_sections(
            layout.pair_sample_sections,
            src_spec,
            dst_spec,
            widths,
            opts.dtype,
            batch=n,
            layout=opts.layout,
            raw=call.raw_widths,
            edges=call.edge_widths,
        )

    def make_roles() -> list[Role]:
        sources_of_rows, targets_of_rows = list(s_int), list(t_int)
        if pair.negatives:
            rows = (s_int, t_int, times)
            drawn = _negatives(nav, keys, specs, pair, rows, seed, opts, split)
            sources_of_rows += [s for s in s_int for _ in range(pair.negatives)]
            targets_of_rows += drawn
        timing = None
        if times is not None and pair.timing is not None:
            row_times = times + [t for t in times for _ in range(pair.negatives)]
            timing = SeedTimes(row_times, pair.timing.most_recent)
        avoid = list(zip(sources_of_rows, targets_of_rows))
        roles = []
        for spec, rows_of, label in (
            (src_spec, sources_of_rows, pair.source_label),
            (dst_spec, targets_of_rows, pair.target_label),
        ):
            key_of = keys.of[label]
            roles.append(Role(spec, rows_of, [key_of[i] for i in rows_of], seed, avoid, timing))
        return roles

    slots = src_spec.layout().slots + dst_spec.layout().slots
    prefixes = (layout.PAIR_SOURCE_PREFIX, layout.PAIR_TARGET_PREFIX)
    sections = call.sample_sections(n, slots, "pair", layout_of, make_roles, prefixes)
    labels_data = [1] * len(s_int) + [0] * (n - len(s_int))
    sections[layout.PAIR_LABELS] = blob.Dense(le(array.array("q", labels_data)), [n], "int64")
    data = blob.pack(sections)
    check_packed(data, n, "pair", [*raw_of, *map(str, edge_of)], opts)
    return data, n
