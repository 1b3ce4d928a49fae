"""Typed (heterogeneous) sampling and the graph's schema: ``tf_features.sample_typed`` and
``tf_features.schema`` (issue 24), stdlib only.

``sample_typed`` samples the slot tables of a :class:`~memgraph_tf.typed_sampling.TypedSamplingSpec`
and writes the typed layout (``options.layout``: dense, compact or sparse; the same draws in each)
of :func:`memgraph_tf.layout.typed_sample_sections`. The rules:

* a step's neighbours of a node are the *distinct* nodes with the step's right label one
  relationship of the step's type away in the step's direction (``both``: either way), sorted by
  key; ``fanout`` of them are drawn uniformly without replacement, or all of them and the rest of
  the slots padded (:data:`~memgraph_tf.layout.PAD_ID`, mask false, zero features); every child of
  a padded slot is padded;
* keys are the values of ``options.id_property`` (unique within a label among the nodes a call
  meets; seeds looked up among the nodes with the seed label, ``options.label``) or internal ids;
* each seed row draws from its own ``random.Random`` keyed by ``(options.seed, seed key)``
  (:func:`memgraph_tf.procedures.core._rng`), in this order: groups in layout order (hop by hop,
  steps in spec order), within a group parent slots in order (parent-major), ``fanout`` draws per
  parent (``rng.sample`` of ``fanout`` when there are more, as ``tf_features.sample`` draws without
  replacement). So a seed's neighbourhood does not depend on
  the other seeds of the call, and equal graphs, arguments and seeds give equal bytes over any
  graph access (the query module and the client-side fallback alike);
* a label's feature columns are fixed by the first node of that label the call meets (tables in
  layout order, slots in order), or, when it meets none, by the first node of that label having
  the properties; every other node must match (else an error names the node, its label and the
  property).

The blob is checked against ``options.max_blob_bytes`` before anything is sampled (with the widths
known by then: a lower bound) and exactly after sampling, before any feature is read (sparse: with
its non-zero entries as a lower bound then, and exactly once the distinct nodes' features are
read, before the blob is built).
"""

from __future__ import annotations

import array
import dataclasses
import itertools
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from memgraph_tf import blob, layout
from memgraph_tf.layout import PAD_ID
from memgraph_tf.procedures import core, limits
from memgraph_tf.procedures.access import MgpGraphAccess, node_name
from memgraph_tf.procedures.errors import (
    OptionError,
    ProcedureInputError,
    PropertyValueError,
    describe_value,
)
from memgraph_tf.procedures.options import Options, parse_options
from memgraph_tf.typed_sampling import EdgeStep, TypedSamplingSpec

__all__ = [
    "MgpTypedGraph",
    "SplitFilter",
    "TypedGraph",
    "parse_properties",
    "parse_split_filter",
    "parse_typed_call",
    "resolve_seeds",
    "run_sample_typed",
    "run_schema",
    "sample_typed",
    "schema",
]

_CHUNK = 512
"""Nodes per batched read."""
_DRAWS_PER_CHECK = 16384
"""An abort check at least every this many drawn slots."""


class TypedGraph(Protocol):
    """What the typed procedures need from a graph: per call accesses (the
    :class:`~memgraph_tf.procedures.access.ProcedureAccess` protocol plus ``internal_ids``,
    ``has_label`` and ``typed_neighbours`` of :class:`MgpGraphAccess`) and the metagraph scans of
    ``tf_features.schema`` (also used to explain a step that found no relationships)."""

    def access(self, options: Options) -> Any:
        """A graph access for ``options`` (``id_property``/``label``: what a key is)."""

    def label_nodes(self, label: str) -> list[int]:
        """The internal ids of the nodes with ``label``, in a fixed order (graph order)."""

    def label_counts(self) -> dict[str, int]:
        """Nodes per label."""

    def triples(self) -> dict[tuple[str, str, str], int]:
        """Relationships per ``(source label, type, target label)``."""

    def has_triple(self, source: str, rel_type: str, target: str) -> bool:
        """Whether some ``(:source)-[:rel_type]->(:target)`` relationship exists."""


class MgpTypedGraph:
    """:class:`TypedGraph` over an ``mgp.ProcCtx`` (inside Memgraph or the embedded runtime): the
    accesses are :class:`MgpGraphAccess`; the scans walk ``ctx.graph.vertices`` (and their
    outgoing relationships) through the public ``mgp`` API with an abort check every 256 nodes."""

    def __init__(self, ctx: Any) -> None:
        self._ctx = ctx

    def access(self, options: Options) -> MgpGraphAccess:
        return MgpGraphAccess(self._ctx, options)

    def _vertices(self) -> Iterable[Any]:
        for i, vertex in enumerate(self._ctx.graph.vertices):
            if i % 256 == 0:
                self._ctx.check_must_abort()
            yield vertex

    def label_nodes(self, label: str) -> list[int]:
        return [v.id for v in self._vertices() if any(lb.name == label for lb in v.labels)]

    def label_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for vertex in self._vertices():
            for lb in vertex.labels:
                counts[lb.name] = counts.get(lb.name, 0) + 1
        return counts

    def triples(self) -> dict[tuple[str, str, str], int]:
        counts: dict[tuple[str, str, str], int] = {}
        for vertex in self._vertices():
            sources = [lb.name for lb in vertex.labels]
            for edge in vertex.out_edges:
                rel = edge.type.name
                for target in (lb.name for lb in edge.to_vertex.labels):
                    for source in sources:
                        key = (source, rel, target)
                        counts[key] = counts.get(key, 0) + 1
        return counts

    def has_triple(self, source: str, rel_type: str, target: str) -> bool:
        for vertex in self._vertices():
            if not any(lb.name == source for lb in vertex.labels):
                continue
            for edge in vertex.out_edges:
                if edge.type.name == rel_type and any(
                    lb.name == target for lb in edge.to_vertex.labels
                ):
                    return True
        return False


# ------------------------------------------------------------------------------------------------
# arguments
# ------------------------------------------------------------------------------------------------


def parse_typed_options(options: Any) -> Options:
    """The options of ``sample_typed``; ``options.label`` (the seed label) is required
    (``options.exclude_splits`` / ``split_property``: :func:`parse_split_filter`)."""
    return parse_typed_call(options)[0]


def parse_typed_call(options: Any) -> tuple[Options, SplitFilter | None]:
    """The options of ``sample_typed`` and its held-out relationships
    (:func:`parse_split_filter`)."""
    if options is not None and not isinstance(options, Mapping):
        raise OptionError(f"options: expected a map, got {describe_value(options)}")
    raw = dict(options or {})
    label = raw.pop("label", None)
    if not isinstance(label, str) or not label:
        raise OptionError(
            "options.label: expected the seed label (a non-empty string: the label of the seeds, "
            f"the left label of the first hop's steps), got {describe_value(label)}"
        )
    split = parse_split_filter(raw)
    opts = parse_options("sample_typed", raw)
    return dataclasses.replace(opts, label=label), split


@dataclasses.dataclass(frozen=True)
class SplitFilter:
    """Held-out relationships (issue 25, the GAE protocol): those whose ``property`` holds one of
    ``values``. A sampler given one never walks such a relationship, at any hop; a relationship
    without the property is kept."""

    property: str
    values: frozenset[str]


def parse_split_filter(raw: dict[str, Any]) -> SplitFilter | None:
    """Pops ``exclude_splits`` (a list of split names, e.g. ``["val", "test"]``; null or empty:
    none held out) and ``split_property`` (default :data:`memgraph_tf.layout.SPLIT_PROPERTY`) from
    the options map ``raw``; an OptionError names a bad one."""
    values = raw.pop("exclude_splits", None)
    name = raw.pop("split_property", None)
    if name is None:
        name = layout.SPLIT_PROPERTY
    elif not isinstance(name, str) or not name:
        raise OptionError(
            f"options.split_property: expected a property name (a non-empty string), got "
            f"{describe_value(name)}"
        )
    if values is None:
        return None
    if not isinstance(values, (list, tuple)) or not all(isinstance(v, str) and v for v in values):
        raise OptionError(
            "options.exclude_splits: expected a list of split names (non-empty strings, e.g. "
            f"['val', 'test']), got {describe_value(values)}"
        )
    return SplitFilter(name, frozenset(values)) if values else None


def parse_spec(seed_label: str, num_neighbors: Any) -> TypedSamplingSpec:
    """The spec; its ValueError (naming the step, hop and value) as :class:`OptionError`."""
    try:
        return TypedSamplingSpec.from_num_neighbors(seed_label, num_neighbors)
    except ValueError as exc:
        raise OptionError(str(exc)) from None


def parse_properties(properties: Any, labels: Sequence[str] | None = None) -> dict[str, list[str]]:
    """``properties``: a map label -> list of feature property names (null: no features for any
    label; an empty list: none for that label). With ``labels``, every key must be one of them
    (the labels with slots). Returns the labels with at least one property."""
    if properties is None:
        return {}
    if not isinstance(properties, Mapping):
        raise OptionError(
            "properties: expected a map of label -> list of feature property names, got "
            f"{describe_value(properties)}"
        )
    out: dict[str, list[str]] = {}
    for label, names in properties.items():
        if not isinstance(label, str) or not label:
            raise OptionError(f"properties: expected label names as keys, got {label!r}")
        if labels is not None and label not in labels:
            raise OptionError(
                f"properties: label {label!r} has no slots in this sampling spec (labels with "
                f"slots: {', '.join(map(repr, labels))})"
            )
        checked = core.check_names(names, f"properties[{label!r}]")
        if checked:
            out[label] = checked
    return out


# ------------------------------------------------------------------------------------------------
# sample_typed
# ------------------------------------------------------------------------------------------------


class _LabelView:
    """A :class:`~memgraph_tf.procedures.access.GraphAccess` over internal ids of one label's nodes
    that names each node by its key and label (``node with id = 5 (:Product)``), for
    :func:`core.build_table`'s errors."""

    def __init__(self, nav: Any, label: str, key_of: Mapping[int, int], id_property: Any) -> None:
        self._nav, self._label, self._key_of, self._id_property = nav, label, key_of, id_property

    def node_name(self, internal: int) -> str:
        return (
            f"{node_name(self._key_of.get(internal, internal), self._id_property)} (:{self._label})"
        )

    def properties(self, keys: Sequence[int], names: Sequence[str]) -> list[list[Any]]:
        return self._nav.properties(keys, names)

    def check_abort(self) -> None:
        self._nav.check_abort()


class _Keys:
    """Keys of the nodes a call meets, per label (internal id -> key), checked: with
    ``options.id_property`` an integer, unique within the label among the nodes met."""

    def __init__(self, nav: Any, id_property: str | None) -> None:
        self._nav, self._id_property = nav, id_property
        self.of: dict[str, dict[int, int]] = {}
        self._seen: dict[str, dict[int, int]] = {}

    def add(self, label: str, internals: Sequence[int], keys: Sequence[int] | None = None) -> None:
        of = self.of.setdefault(label, {})
        new = [i for i in dict.fromkeys(internals) if i not in of]
        if not new:
            return
        if self._id_property is None:
            of.update(zip(new, new))
            return
        if keys is None:
            keys = []
            for start in range(0, len(new), _CHUNK):
                part = new[start : start + _CHUNK]
                keys.extend(v[0] for v in self._nav.properties(part, [self._id_property]))
        else:
            given = dict(zip(internals, keys))
            keys = [given[i] for i in new]
        seen = self._seen.setdefault(label, {})
        for internal, key in zip(new, keys):
            if not isinstance(key, int) or isinstance(key, bool):
                what = "no value" if key is None else describe_value(key)
                raise PropertyValueError(
                    f"node {internal} (:{label}) property {self._id_property!r} "
                    f"(options.id_property): expected an integer id, got {what}"
                )
            other = seen.setdefault(key, internal)
            if other != internal:
                raise ProcedureInputError(
                    f"options.id_property: expected unique ids within a label, got "
                    f"{self._id_property} = {key} on the :{label} nodes with internal ids {other} "
                    f"and {internal}"
                )
            of[internal] = key


def _sizes(
    sections: Sequence[layout.Section],
    rows_of: Mapping[str, int] | None = None,
    nnz_of: Mapping[str, int] | None = None,
) -> int:
    """The blob size of ``sections``; a length that varies (``-1``: a compact/sparse table's)
    is taken from ``rows_of`` (table rows per section label) and ``nnz_of`` (non-zero entries per
    label), 0 where they do not say: a lower bound."""
    payloads = []
    for sec in sections:
        elements = 1
        for d in sec.shape:
            if d == -1:
                owner = _owner(sec)
                u = (rows_of or {}).get(owner, 0)
                if sec.role == "row_splits":  # (only the CSR splits vary: u + 1)
                    d = u + 1
                elif sec.role in ("columns", "values"):
                    d = (nnz_of or {}).get(owner, 0)
                else:
                    d = u
            elements *= d
        payloads.append(elements * blob.ITEM_BYTES[sec.dtype])
    return limits._total(payloads)  # (the one home of the blob-size rule)


def layout_sections(fn: Any, *args: Any, **kwargs: Any) -> list[layout.Section]:
    """``fn(*args, **kwargs)`` (a section list of :mod:`memgraph_tf.layout`), its ValueError (a
    label name too long for a section name in this layout, two labels whose sections are named
    alike) as an :class:`OptionError` naming ``options.layout``."""
    try:
        return fn(*args, **kwargs)
    except ValueError as exc:
        raise OptionError(f"options.layout ({kwargs.get('layout', 'dense')!r}): {exc}") from None


def _owner(sec: layout.Section) -> str:
    """The key of a per-label table section in the counts of :func:`_sizes`: its label, prefixed
    with its pair prefix in a pair blob."""
    for prefix in (layout.PAIR_SOURCE_PREFIX, layout.PAIR_TARGET_PREFIX):
        if sec.name.startswith(prefix):
            return prefix + (sec.label or "")
    return sec.label or ""


def _check_size(
    sections: Sequence[layout.Section],
    n: int,
    slots: int,
    widths: Mapping[str, int],
    options: Options,
    phase: str,
    what: str = "seed",
    rows_of: Mapping[str, int] | None = None,
    nnz_of: Mapping[str, int] | None = None,
) -> None:
    size = _sizes(sections, rows_of, nnz_of)
    if size <= options.max_blob_bytes:
        return
    shown = ", ".join(f"{label} {w}" for label, w in widths.items()) or "none"
    limits._refuse(  # (the one wording of a refusal)
        f"the blob would hold {'at least ' if phase == 'before' else ''}{size:,} bytes "
        f"({n:,} {what}{'s' if n != 1 else ''}, {slots} slots each, feature widths "
        f"{shown} ({options.dtype}); {phase} sampling)",
        options.max_blob_bytes,
        f"fewer {what}s or smaller fanouts",
    )


def _no_relationships(graph: TypedGraph, step: EdgeStep) -> OptionError | None:
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
    graph: TypedGraph,
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
        by_id = graph.access(dataclasses.replace(opts, label=label, label_property=None))
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


class _Role:
    """One list of seeds (a row each) and its slot tables under a spec: what ``sample_typed``
    samples once and ``sample_pairs`` twice (the sources', the targets'). ``avoid[row] = (a, b)``
    (internal ids): in that row a slot holding ``a`` never reaches ``b`` and one holding ``b``
    never reaches ``a`` (a pair's own relationships)."""

    def __init__(
        self,
        spec: TypedSamplingSpec,
        internals: list[int],
        seed_keys: Sequence[int],
        base_seed: int,
        avoid: Sequence[tuple[int, int]] | None = None,
    ) -> None:
        self.spec, self.layout = spec, spec.layout()
        self.internals = internals
        self.rngs = [core._rng(base_seed, key) for key in seed_keys]  # tf_features.sample's RNG
        self.avoid = avoid
        n = len(internals)
        self.tables: dict[tuple[int, str], list[int]] = {(0, spec.seed_label): list(internals)}
        for h, table in enumerate(self.layout.tables):
            for label, size in table.items():
                self.tables.setdefault((h, label), [PAD_ID] * (n * size))

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


def _read_neighbours(
    nav: Any, part: list[int], step: EdgeStep, split: SplitFilter | None
) -> list[list[int]]:
    if split is None:
        return nav.typed_neighbours(part, step.rel_type, step.direction, step.right)
    return nav.typed_neighbours_kept(
        part, step.rel_type, step.direction, step.right, split.property, split.values
    )


def _draw(
    nav: Any,
    keys: _Keys,
    role: _Role,
    cache: dict[EdgeStep, dict[int, list[int]]],
    split: SplitFilter | None,
) -> None:
    """Fills ``role.tables`` (see the module docstring for the draws); ``cache`` holds each step's
    sorted distinct neighbours per node, shared by the roles of a call."""
    drawn = 0
    tables = role.tables
    for group in role.layout.groups:
        step, f = group.step, group.fanout
        parents = tables[(group.hop - 1, step.left)]
        nbrs = cache.setdefault(step, {})
        todo = [k for k in dict.fromkeys(parents) if k != PAD_ID and k not in nbrs]
        for start in range(0, len(todo), _CHUNK):
            nav.check_abort()
            part = todo[start : start + _CHUNK]
            found = _read_neighbours(nav, part, step, split)
            keys.add(step.right, list(itertools.chain.from_iterable(found)))
            key_of = keys.of.setdefault(step.right, {})
            for key, row in zip(part, found):
                nbrs[key] = sorted(set(row), key=key_of.__getitem__)
        target = tables[(group.hop, step.right)]
        width = role.layout.tables[group.hop][step.right]
        per = group.parents
        pads = [PAD_ID] * f
        avoid = role.avoid
        for row, rng in enumerate(role.rngs):
            base = row * width + group.offset
            a, b = avoid[row] if avoid is not None else (PAD_ID, PAD_ID)
            for p, parent in enumerate(parents[row * per : (row + 1) * per]):
                if parent == PAD_ID:
                    continue  # children of a padded slot stay padded
                found = nbrs[parent]
                if parent in (a, b):  # the pair's own relationships are not walked
                    other = b if parent == a else a
                    if other in found:
                        found = [k for k in found if k != other]
                # tf_features.sample's draw without replacement, padding (core's draw contract):
                # rng.sample(nbrs, f) when there are more than f, else all of them, then padding
                drawn_ids = rng.sample(found, f) if len(found) > f else found + pads[len(found) :]
                target[base + p * f : base + (p + 1) * f] = drawn_ids
            drawn += per * f
            if drawn >= _DRAWS_PER_CHECK:
                drawn = 0
                nav.check_abort()


def _check_steps(graph: TypedGraph, cache: Mapping[EdgeStep, Mapping[int, list[int]]]) -> None:
    """Raises for a step that found no neighbours at all when the graph lacks its relationships."""
    for step, nbrs in cache.items():
        if nbrs and not any(nbrs.values()):
            error = _no_relationships(graph, step)
            if error is not None:
                raise error


def _seed_columns(
    nav: Any,
    keys: _Keys,
    names_of: Mapping[str, list[str]],
    opts: Options,
    label: str,
    first: int,
    columns_of: dict[str, list[core.Column]],
    widths: dict[str, int],
) -> None:
    """Fixes ``label``'s feature columns from the seed ``first`` (before sampling)."""
    if label not in names_of or label in columns_of:
        return
    view = _LabelView(nav, label, keys.of[label], opts.id_property)
    columns_of[label] = core.first_columns(view, first, names_of[label])
    core.refuse_strings(columns_of[label])
    widths[label] = sum(c.width for c in columns_of[label])


def _feature_tables(
    graph: TypedGraph,
    nav: Any,
    keys: _Keys,
    names_of: Mapping[str, list[str]],
    opts: Options,
    roles: Sequence[_Role],
    columns_of: dict[str, list[core.Column]],
    widths: dict[str, int],
    check_size: Any,
) -> dict[str, core.FeatureTable]:
    """The feature table of every label with properties over the nodes the roles met; fixes the
    columns of the labels not fixed yet (first node met, tables in layout order, roles in order)
    and calls ``check_size()`` once every width is known, before any feature is read."""
    plain = dataclasses.replace(opts, id_property=None, label=None, label_property=None)
    met: dict[str, list[int]] = {}
    for role in roles:
        for (_, label), flat in role.tables.items():
            met.setdefault(label, [])
            met[label].extend(k for k in flat if k != PAD_ID)
    met = {label: list(dict.fromkeys(ks)) for label, ks in met.items()}
    for label, names in names_of.items():
        if label in columns_of:
            continue
        view = _LabelView(nav, label, keys.of.get(label, {}), opts.id_property)
        if met.get(label):
            columns_of[label] = core.first_columns(view, met[label][0], names)
        else:
            finder = graph.access(dataclasses.replace(plain, label=label))
            first = finder.first_node_with(names)
            if first is None:
                raise core.no_node_error(names, dataclasses.replace(plain, label=label))
            columns_of[label] = core.first_columns(finder, first, names)
        core.refuse_strings(columns_of[label])
        widths[label] = sum(c.width for c in columns_of[label])
    check_size()
    tables_of: dict[str, core.FeatureTable] = {}
    for label, names in names_of.items():
        view = _LabelView(nav, label, keys.of.get(label, {}), opts.id_property)
        tables_of[label] = core.build_table(
            view, met.get(label, []), names, plain, allow_strings=False, columns=columns_of[label]
        )
    return tables_of


def _role_sections(
    role: _Role,
    keys: _Keys,
    tables_of: Mapping[str, core.FeatureTable],
    widths: Mapping[str, int],
    opts: Options,
    check_abort: Any,
    prefix: str = "",
) -> dict[str, Any]:
    """The typed sections of ``role`` in ``opts.layout``
    (:func:`memgraph_tf.layout.typed_sample_sections`, without ``labels``), each name prefixed
    with ``prefix``. Compact/sparse: a slot's index is its node's row in :meth:`_Role.table_rows`
    of its label, whose features are the table (sparse: the entries that are not zero, CSR, as
    ``tf_features.sample``'s); gathering them by index gives exactly the dense layout's
    sections."""
    n = len(role.internals)
    specs = layout.typed_sample_sections(
        role.spec, role.widths(widths), opts.dtype, batch=n, layout=opts.layout
    )
    sections: dict[str, Any] = {}
    if opts.layout != "dense":
        order_of = role.table_rows()
        row_of = {label: dict(zip(order, range(len(order)))) for label, order in order_of.items()}
    for sec in specs:
        label = sec.label or ""
        if sec.role == "index":
            rows = row_of[label]
            flat = role.tables[(sec.hop, label)]
            data = core._le(array.array(core._INT32, [rows.get(k, -1) for k in flat]))
        elif sec.role == "table_ids":
            key_of = keys.of.get(label, {})
            u = len(order_of[label])
            ids = core._le(array.array("q", [key_of[k] for k in order_of[label]]))
            sections[prefix + sec.name] = blob.Ragged(
                blob.Dense(ids, [u], "int64"), array.array("q", [0, u])
            )
            continue
        elif sec.role in ("table", "columns"):
            order = order_of[label]
            u, d = len(order), widths[label]
            flat = core._gather(tables_of[label], order, opts.dtype, check_abort=check_abort)
            one_row = array.array("q", [0, u])
            if sec.role == "table":
                data = blob.Dense(core._le(flat), [u, d], opts.dtype)
                sections[prefix + sec.name] = blob.Ragged(data, one_row)
                continue
            columns, values, splits = core._csr(flat, u, d, opts.dtype, check_abort)
            nnz = len(columns)
            sections[prefix + sec.name] = blob.Ragged(
                blob.Dense(core._le(columns), [nnz], "int32"), splits
            )
            name = layout.typed_table_name(layout.TABLE_VALUES, label)
            sections[prefix + name] = blob.Ragged(
                blob.Dense(core._le(values), [nnz], opts.dtype), array.array("q", [0, nnz])
            )
            continue
        elif sec.role in ("values", "row_splits"):
            continue  # (written with their table above)
        elif sec.role == "ids":
            flat = role.tables[(sec.hop, label)]
            key_of = keys.of.get(label, {})
            data = core._le(array.array("q", [PAD_ID if k == PAD_ID else key_of[k] for k in flat]))
        elif sec.role == "mask":
            data = bytes([k != PAD_ID for k in role.tables[(sec.hop, label)]])
        else:  # features
            flat = role.tables[(sec.hop, label)]
            data = core._le(
                core._gather(tables_of[label], flat, opts.dtype, check_abort=check_abort)
            )
        sections[prefix + sec.name] = blob.Dense(data, list(sec.shape), sec.dtype)
    return sections


def _table_counts(roles: Sequence[_Role], prefixes: Sequence[str] = ("",)) -> dict[str, int]:
    """Table rows per (prefixed) label of the roles' compact/sparse tables (for the size check)."""
    return {
        prefix + label: len(order)
        for role, prefix in zip(roles, prefixes)
        for label, order in role.table_rows().items()
    }


def _nnz_counts(
    roles: Sequence[_Role],
    tables_of: Mapping[str, core.FeatureTable],
    prefixes: Sequence[str] = ("",),
) -> dict[str, int]:
    """Non-zero feature entries per (prefixed) label of the roles' sparse tables."""
    out: dict[str, int] = {}
    for role, prefix in zip(roles, prefixes):
        for label, order in role.table_rows().items():
            table = tables_of.get(label)
            if table is None or not table.width:
                continue
            d, flat, row_of = table.width, table.flat, table.row_of
            out[prefix + label] = sum(
                d - flat[row_of[k] * d : (row_of[k] + 1) * d].count(0) for k in order
            )
    return out


def sample_typed(
    graph: TypedGraph, seeds: Any, num_neighbors: Any, properties: Any, options: Any
) -> tuple[bytes, int]:
    """``tf_features.sample_typed``: (blob, seed count). See the module docstring for the rules
    and :func:`memgraph_tf.layout.typed_sample_sections` for the layout.

    Guarantees: checks, in this order, the options, the spec, the properties map, then the seeds
    (each must have the seed label); a bad input raises a :class:`ProcedureInputError` naming the
    option, step, label, property or node; the same graph, arguments and ``options.seed`` give the
    same bytes over any :class:`TypedGraph`; with ``options.exclude_splits`` no relationship whose
    ``options.split_property`` is one of them is walked, at any hop."""
    opts, split = parse_typed_call(options)
    seed_label = opts.label
    spec = parse_spec(seed_label, num_neighbors)
    names_of = parse_properties(properties, spec.labels())
    plain = dataclasses.replace(opts, id_property=None, label=None, label_property=None)
    nav = graph.access(plain)
    internals, seed_keys = resolve_seeds(
        graph, nav, opts, seeds, "seeds", seed_label, "the seed label, options.label"
    )
    n = len(internals)
    keys = _Keys(nav, opts.id_property)
    keys.add(seed_label, internals, seed_keys)
    widths: dict[str, int] = {}
    columns_of: dict[str, list[core.Column]] = {}
    _seed_columns(nav, keys, names_of, opts, seed_label, internals[0], columns_of, widths)
    slots = spec.layout().slots
    role: _Role | None = None

    def check(phase: str, nnz_of: Mapping[str, int] | None = None) -> None:
        sections = layout_sections(
            layout.typed_sample_sections,
            spec,
            widths,
            opts.dtype,
            labels=bool(opts.label_property),
            batch=n,
            layout=opts.layout,
        )
        rows_of = None if role is None else _table_counts([role])
        _check_size(sections, n, slots, widths, opts, phase, rows_of=rows_of, nnz_of=nnz_of)

    check("before")
    base_seed = opts.seed if opts.seed is not None else int.from_bytes(os.urandom(8), "little")
    role = _Role(spec, internals, seed_keys, base_seed)
    cache: dict[EdgeStep, dict[int, list[int]]] = {}
    _draw(nav, keys, role, cache, split)
    _check_steps(graph, cache)
    tables_of = _feature_tables(
        graph, nav, keys, names_of, opts, [role], columns_of, widths, lambda: check("after")
    )
    if opts.layout == "sparse":  # its size is known once the values are read
        check("after", _nnz_counts([role], tables_of))
    sections = _role_sections(role, keys, tables_of, widths, opts, nav.check_abort)
    if opts.label_property:
        view = _LabelView(nav, seed_label, keys.of[seed_label], opts.id_property)
        got = core.build_table(view, internals, [], opts, allow_strings=False, columns=[])
        data = core._le(array.array("q", [got.labels[k] for k in internals]))
        sections[layout.LABELS] = blob.Dense(data, [n], "int64")
    return blob.pack(sections), n


# ------------------------------------------------------------------------------------------------
# schema
# ------------------------------------------------------------------------------------------------


def schema(graph: TypedGraph, properties: Any, options: Any) -> dict[str, Any]:
    """``tf_features.schema``: the metagraph. ``labels``: per label (sorted) ``{"label", "count",
    "properties": [{"name", "kind", "width", "dtype"}]}`` -- the properties asked for that label in
    ``properties`` (a map label -> names), each checked on *every* node of the label (present,
    numeric, the same width: else an error naming the node); ``relationships``: per ``(source
    label, type, target label)`` (sorted) ``{"source", "type", "target", "count"}``."""
    opts = parse_options("schema", options)
    names_of = parse_properties(properties)
    counts = graph.label_counts()
    for label in names_of:
        if label not in counts:
            raise OptionError(
                f"properties: unknown label {label!r} (the graph has "
                f"{', '.join(map(repr, sorted(counts))) or 'no labels'})"
            )
    plain = Options(dtype=opts.dtype)
    nav = graph.access(plain)
    described: dict[str, list[dict[str, Any]]] = {}
    for label, names in names_of.items():
        nodes = graph.label_nodes(label)
        nav.resolve(nodes, f"properties[{label!r}] nodes")
        view = _LabelView(nav, label, {}, None)
        columns = core.first_columns(view, nodes[0], names)
        core.refuse_strings(columns)
        for start in range(0, len(nodes), 4 * _CHUNK):
            part = nodes[start : start + 4 * _CHUNK]
            core.build_table(view, part, names, plain, allow_strings=False, columns=columns)
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
            for (a, t, b), c in sorted(graph.triples().items())
        ],
    }


# ------------------------------------------------------------------------------------------------
# the query module's entry points
# ------------------------------------------------------------------------------------------------


def run_sample_typed(
    ctx: Any, seeds: Any, num_neighbors: Any, properties: Any, options: Any
) -> tuple[str, int]:
    """``tf_features.sample_typed``: (base64url blob, seed count)."""
    data, count = sample_typed(MgpTypedGraph(ctx), seeds, num_neighbors, properties, options)
    return blob.b64encode(data), count


def run_schema(ctx: Any, properties: Any, options: Any) -> dict[str, Any]:
    """``tf_features.schema``: see :func:`schema`."""
    return schema(MgpTypedGraph(ctx), properties, options)
