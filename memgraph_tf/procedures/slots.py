"""Typed slot sampling (stdlib only): the machinery ``tf_features.sample_typed`` and
``sample_pairs`` share -- the keys of the nodes a call meets (:class:`Keys`), the seeds of a
label (:func:`resolve_seeds`), one list of seeds and its slot tables under a spec (:class:`Role`)
and their draws (:func:`draw_role`, through :class:`~memgraph_tf.procedures.draw.Drawer`: the
draw rule of ``tf_features.sample``).

The rules (docs/blob-format.md section 9):

* a step's neighbours of a node are the *distinct* nodes with the step's right label one
  relationship of the step's type away in the step's direction (``both``: either way), sorted by
  key; ``fanout`` of them are drawn uniformly without replacement, or all of them and the rest of
  the slots padded (:data:`~memgraph_tf.layout.PAD_ID`); every child of a padded slot is padded;
  a step with a weight draws by :mod:`memgraph_tf.procedures.weighted`'s rules, one with a time
  by :mod:`memgraph_tf.procedures.timed`'s;
* each seed row draws from its own generator keyed by ``(options.seed, seed key)``
  (:func:`~memgraph_tf.procedures.draw.rng_for`), in this order: groups in layout order (hop by
  hop, steps in spec order), within a group parent slots in order, ``fanout`` draws per parent. So
  a seed's neighbourhood does not depend on the other seeds of the call, and equal graphs,
  arguments and seeds give equal slots over any graph access.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import itertools
from collections.abc import Mapping, Sequence
from typing import Any

from memgraph_tf.layout import PAD_ID
from memgraph_tf.procedures.access import (
    READ_CHUNK,
    AccessFactory,
    GraphAccess,
    NeighbourRead,
    node_name,
    require_int_id,
    require_unique_id,
    typed_node_name,
)
from memgraph_tf.procedures.draw import DRAWS_PER_CHECK, Drawer, read_neighbours, rng_for
from memgraph_tf.procedures.errors import (
    OptionError,
)
from memgraph_tf.procedures.options import Options, SplitFilter
from memgraph_tf.procedures.reservoir import BoundedReads, ReservoirDrawer
from memgraph_tf.procedures.timed import AsOf, RecentDrawer, SeedTimes, read_timed, require_timing
from memgraph_tf.procedures.weighted import ValuedRead, WeightedDrawer, read_weighted, without
from memgraph_tf.typed_sampling import EdgeStep, TypedSamplingSpec


class Keys:
    """Keys of the nodes a call meets, per label (internal id -> key), checked: with
    ``options.id_property`` an integer, unique within the label among the nodes met."""

    def __init__(self, nav: Any, id_property: str | None) -> None:
        self._nav, self._id_property = nav, id_property
        self.of: dict[str, dict[int, int]] = {}
        self._seen: dict[str, dict[int, int]] = {}

    def add(self, label: str, internals: Sequence[int], keys: Sequence[int] | None = None) -> None:
        """Registers the ``label`` nodes ``internals`` (internal ids) met by the call, with their
        ``keys`` when known (else read: ``options.id_property``, or the internal id); raises
        naming the node for a key that is not an integer or is held by two nodes of the label."""
        of = self.of.setdefault(label, {})
        new = [i for i in dict.fromkeys(internals) if i not in of]
        if not new:
            return
        if self._id_property is None:
            of.update(zip(new, new))
            return
        if keys is None:
            keys = []
            for start in range(0, len(new), READ_CHUNK):
                part = new[start : start + READ_CHUNK]
                keys.extend(v[0] for v in self._nav.properties(part, [self._id_property]))
        else:
            given = dict(zip(internals, keys))
            keys = [given[i] for i in new]
        seen = self._seen.setdefault(label, {})
        for internal, key in zip(new, keys):
            require_int_id(key, f"node {internal} (:{label})", self._id_property)
            require_unique_id(seen, key, internal, self._id_property, label)
            of[internal] = key

    def name(self, label: str, internal: int) -> str:
        """How errors name a ``label`` node the call met: ``(:Label {id: 3})`` by its key with
        ``options.id_property``, else (or before its key is known) by its internal id:
        ``(node 5:Label)``."""
        return typed_node_name(
            label, internal, self.of.get(label, {}).get(internal), self._id_property
        )


def no_relationships(graph: GraphAccess, step: EdgeStep) -> OptionError | None:
    """The error for a step over relationships the graph lacks, or None when it has some."""
    pairs = []
    if step.direction in ("out", "both"):
        pairs.append((step.left, step.rel_type, step.right))
    if step.direction in ("in", "both"):
        pairs.append((step.right, step.rel_type, step.left))
    if any(graph.has_triple(*p) for p in pairs):
        return None
    known = ", ".join(f"(:{a})-[:{t}]->(:{b})" for a, t, b in sorted(graph.triples())) or "none"
    return OptionError(
        f"num_neighbors: {step}: the graph has no such relationships (relationship type "
        f"{step.rel_type!r} between :{step.left} and :{step.right} nodes; the graph has {known})"
    )


def resolve_seeds(
    factory: AccessFactory,
    nav: Any,
    opts: Options,
    seeds: Any,
    param: str,
    label: str,
    option: str,
) -> tuple[list[int], list[int]]:
    """``seeds`` (nodes of ``label``) as (internal ids, keys), in order; ``nav`` is the call's
    access by internal id (the seeds are registered with it). With ``opts.id_property`` an id is
    looked up among the ``label`` nodes; without, a node without ``label`` is an error naming
    ``param[i]`` and ``option`` (the option that gave the label)."""
    if opts.id_property is not None:
        by_id = factory(dataclasses.replace(opts, label=label, label_property=None))
        keys = by_id.resolve(seeds, param)
        internals = by_id.internal_ids(keys)
        nav.resolve(internals, param)
        # an id is looked up among the label's nodes; a seed given as a vertex is checked here
        given = [i for i, seed in enumerate(seeds) if not isinstance(seed, int)]
        checked = nav.has_label([internals[i] for i in given], label) if given else []
        for i, ok in zip(given, checked):
            if not ok:
                raise OptionError(
                    f"{param}[{i}]: {node_name(keys[i], opts.id_property)} is not a :{label} "
                    f"node ({option})"
                )
        return internals, keys
    internals = nav.resolve(seeds, param)
    for i, ok in enumerate(nav.has_label(internals, label)):
        if not ok:
            raise OptionError(
                f"{param}[{i}]: node {internals[i]} is not a :{label} node ({option})"
            )
    return internals, internals


class Role:
    """One list of seeds (a row each) and its slot tables under a spec: what ``sample_typed``
    samples once and ``sample_pairs`` twice (the sources', the targets'). ``avoid[row] = (a, b)``
    (internal ids): in that row a slot holding ``a`` never reaches ``b`` and one holding ``b``
    never reaches ``a`` (a pair's own relationships). ``timing``: the seeds' times, for steps
    with a time (:mod:`memgraph_tf.procedures.timed`)."""

    def __init__(
        self,
        spec: TypedSamplingSpec,
        internals: list[int],
        seed_keys: Sequence[int],
        base_seed: int,
        avoid: Sequence[tuple[int, int]] | None = None,
        timing: SeedTimes | None = None,
        *,
        reservoir_threshold: int | None = None,
        id_property: str | None = None,
    ) -> None:
        self.spec, self.layout = spec, spec.layout()
        self.timing = timing
        self.internals = internals
        self.reservoir_threshold, self.id_property = reservoir_threshold, id_property
        self.bounded: dict[EdgeStep, BoundedReads] = {}  # per step, with reservoir_threshold
        self.rngs = [rng_for(base_seed, key) for key in seed_keys]  # tf_features.sample's RNG
        self.avoid = avoid
        n = len(internals)
        self.tables: dict[tuple[int, str], list[int]] = {(0, spec.seed_label): list(internals)}
        for h, table in enumerate(self.layout.tables):
            for label, size in table.items():
                self.tables.setdefault((h, label), [PAD_ID] * (n * size))

    def bounded_reads(self, step: EdgeStep, keys: Keys) -> BoundedReads | None:
        """The bounded mode of ``step`` (its reservoirs: :mod:`.reservoir`), None when the
        role's ``reservoir_threshold`` is not set; the members' keys go to ``keys``."""
        if self.reservoir_threshold is None:
            return None
        if step.time is not None:
            raise OptionError(
                f"options.reservoir_threshold: step {step} has a time ({step.time!r}): a "
                "reservoir samples the relationships the graph holds now and cannot answer which "
                "were there as of a seed's time; sample this spec without "
                "options.reservoir_threshold (allowed: steps without a time)"
            )
        if step not in self.bounded:
            self.bounded[step] = BoundedReads(
                self.reservoir_threshold,
                [step.rel_type],
                step.direction,
                self.id_property,
                step.right,
                register=functools.partial(keys.add, step.right),
                hub_name=functools.partial(keys.name, step.left),
                step_text=str(step),
                weight=step.weight,
                replace=step.replace,
            )
        return self.bounded[step]

    def widths(self, widths: Mapping[str, int]) -> dict[str, int]:
        """``widths`` restricted to the labels with slots in this role's spec."""
        labels = self.spec.labels()
        return {label: w for label, w in widths.items() if label in labels}

    def table_rows(self) -> dict[str, list[int]]:
        """Per label, the distinct nodes (internal ids) of its filled slots in order of first
        appearance over its slot tables (layout order, each row-major): the rows of the label's
        feature table in the compact/sparse layouts."""
        rows: dict[str, dict[int, None]] = {}
        for h, table in enumerate(self.layout.tables):
            for label in table:
                seen = rows.setdefault(label, {})
                seen.update(dict.fromkeys(self.tables[(h, label)]))
        return {label: [k for k in seen if k != PAD_ID] for label, seen in rows.items()}


def _without_pair(
    nbrs: Mapping[int, list[int]], parents: Sequence[int], a: int, b: int
) -> Mapping[int, list[int]]:
    """``nbrs`` as the row of the pair ``(a, b)`` sees them: ``a``'s without ``b`` and ``b``'s
    without ``a`` (the pair's own relationships are not walked); ``nbrs`` itself when the row's
    ``parents`` hold neither."""
    own: dict[int, list[int]] = {}
    for node, other in ((a, b), (b, a)):
        if node in parents and other in nbrs[node]:
            own[node] = without(nbrs[node], other)
    return collections.ChainMap(own, nbrs) if own else nbrs


def _read_step(
    nav: GraphAccess, keys: Keys, step: EdgeStep, split: SplitFilter | None, part: list[int]
) -> list[list[int]]:
    """The neighbours of the nodes ``part`` over ``step`` (without the held-out relationships),
    their keys registered with ``keys``."""
    found = nav.neighbours(part, NeighbourRead((step.rel_type,), step.direction, step.right, split))
    keys.add(step.right, list(itertools.chain.from_iterable(found)))
    return found


def _read_valued_step(
    nav: GraphAccess, keys: Keys, step: EdgeStep, split: SplitFilter | None, part: list[int]
) -> list[list[tuple[int, Any, Any, bool]]]:
    """:func:`_read_step` with each relationship's weight or time
    (``step.relationship_property``) and identity."""
    found = nav.valued_neighbours(part, step, split)
    keys.add(step.right, [row[0] for rows in found for row in rows])
    return found


def draw_role(
    nav: GraphAccess,
    keys: Keys,
    role: Role,
    cache: dict[EdgeStep, dict[int, list[int]]],
    split: SplitFilter | None,
) -> None:
    """Fills ``role.tables`` (see the module docstring for the draws); ``cache`` holds each step's
    sorted distinct neighbours per node, shared by the roles of a call; ``split``: the held-out
    relationships, never walked."""
    drawn = 0
    tables = role.tables
    for group in role.layout.groups:
        step, f = group.step, group.fanout
        parents = tables[(group.hop - 1, step.left)]
        nbrs = cache.setdefault(step, {})
        bounded = role.bounded_reads(step, keys)
        if bounded is not None:  # the bounded mode: hubs draw from their reservoirs
            met = [k for k in dict.fromkeys(parents) if k != PAD_ID]
            bounded.fill(nav, met, nbrs, f, group.hop)
        todo = [k for k in dict.fromkeys(parents) if k != PAD_ID and k not in nbrs]
        key_of = keys.of.setdefault(step.right, {})  # (filled by keys.add as they are read)
        draw: Any = Drawer(f)  # tf_features.sample's draw without replacement, padding
        timing = None if step.time is None else require_timing(role.timing, step)
        read = functools.partial(_read_valued_step, nav, keys, step, split)
        valued = ValuedRead(nav, step, read, key_of.__getitem__, keys.name)  # (weight or time)
        if step.weight is not None:  # the weighted draw (procedures.weighted)
            read_weighted(valued, todo, nbrs)
            draw = (WeightedDrawer if bounded is None else ReservoirDrawer)(f, step.replace)
        elif step.time is not None:  # point in time, per row (procedures.timed)
            read_timed(valued, todo, nbrs)
            if timing is not None and timing.most_recent:
                draw = RecentDrawer(f)
        else:
            plain = functools.partial(_read_step, nav, keys, step, split)
            read_neighbours(nav, todo, nbrs, plain, key_of.__getitem__)
        target = tables[(group.hop, step.right)]
        width = role.layout.tables[group.hop][step.right]
        per = group.parents
        avoid = role.avoid
        for row, rng in enumerate(role.rngs):
            base = row * width + group.offset
            row_parents = parents[row * per : (row + 1) * per]
            row_nbrs: Mapping[int, Any] = nbrs
            if timing is not None:  # as of the row's time, then without the pair's own ones
                row_nbrs = AsOf(nbrs, timing.times[row], timing.most_recent)
            if avoid is not None:
                row_nbrs = _without_pair(row_nbrs, row_parents, *avoid[row])
            ids: list[int] = []
            draw(rng, row_nbrs, row_parents, [p != PAD_ID for p in row_parents], ids, [])
            target[base : base + per * f] = ids  # children of a padded slot stay padded
            if bounded is not None:
                bounded.verify(nav, ids, [k != PAD_ID for k in ids])
            drawn += per * f
            if drawn >= DRAWS_PER_CHECK:
                drawn = 0
                nav.check_abort()


def check_steps(graph: GraphAccess, cache: Mapping[EdgeStep, Mapping[int, list[int]]]) -> None:
    """Raises for a step that found no neighbours at all when the graph lacks its relationships."""
    for step, nbrs in cache.items():
        if nbrs and not any(nbrs.values()):
            error = no_relationships(graph, step)
            if error is not None:
                raise error
