"""``tf_features.structural`` / ``structural_write``: features of a label's nodes from the graph's
structure alone, for labels without node properties (standard library only).

Per node of ``label``, one float vector, its parts in the order of ``options.features``:

* ``degree``: per relationship type touching the label (sorted; ``options.relationship_types``
  to choose) its out- then in-degree, as ``log(1 + count)`` (``options.degree``: ``log1p``) or
  the count (``count``);
* ``fastrp``: a FastRP embedding (Chen et al., "Fast and Accurate Network Embeddings via Very
  Sparse Random Projection", 2019) over the relationships of those types, either direction, to
  nodes of any label. Every node ``u`` within ``len(options.iteration_weights)`` hops starts from
  a very sparse random vector ``R(u)`` (``options.dimension`` entries, each +1 or -1 with
  probability 1/6 and 0 with 4/6) drawn from a BLAKE2b hash of ``(options.seed, key of u)`` --
  the key is ``options.id_property``'s integer value where the node has one, else its internal
  id -- so a node added later gets its vector without anything being retrained or stored, and
  each node's vector does not depend on the order nodes are met in. Then
  ``N_0(u) = deg(u) ** options.normalization_strength * l2norm(R(u))`` (``deg``: its
  relationships of those types, at least 1),
  ``N_i(v) = l2norm(sum over relationships (v, u) of N_{i-1}(u))`` and the embedding is
  ``options.self_weight * N_0 + sum_i options.iteration_weights[i-1] * N_i`` (a node without
  relationships: its ``N_i`` are zero).

``options.changed_nodes`` (``structural_write`` only): the exact local recompute -- only the label's
nodes within ``len(options.iteration_weights)`` hops of those nodes are written, each with the
vector of the whole label's call (:func:`structural_write`); a key of one of them that another node
of the label holds is refused as that call refuses it.

``options.exclude_splits`` (and ``split_property``) leave held-out relationships (the GAE
protocol, ``tf_features.split_edges``) out of degrees and propagation, so link prediction is
measured on structure the model may see.

Guarantees: neighbours are summed in the order of their internal ids and every value is a Python
float computed in that fixed order, so the embedded runtime, Memgraph and the client-side
fallback over Bolt give bit-identical vectors for the same graph and options; the rows come
sorted by node key; the loops check for abort (``ctx.check_must_abort``) at least every
:data:`ABORT_CHECK_EVERY` nodes; a bad argument raises :class:`OptionError` naming the parameter,
the value and the allowed ones, before the graph is read.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from collections.abc import Sequence
from typing import Any

from memgraph_tf.procedures.access import (
    ABORT_CHECK_EVERY,
    READ_CHUNK,
    AccessFactory,
    NeighbourRead,
    is_int,
    require_int_id,
    require_unique_id,
)
from memgraph_tf.procedures.errors import (
    OptionError,
    describe_value,
    quoted,
)
from memgraph_tf.procedures.options import Options, SplitFilter, options_map, parse_split_filter

__all__ = [
    "DEGREE_SCALES",
    "FEATURE_PARTS",
    "READ_OPTIONS",
    "WRITE_OPTIONS",
    "StructuralOptions",
    "StructuralResult",
    "parse_structural_call",
    "random_vector",
    "structural",
    "structural_write",
]

FEATURE_PARTS = ("degree", "fastrp")
"""The parts ``options.features`` may name, in any order."""
DEGREE_SCALES = ("log1p", "count")
"""The values of ``options.degree``."""
READ_OPTIONS = (
    "degree",
    "dimension",
    "exclude_splits",
    "features",
    "id_property",
    "iteration_weights",
    "normalization_strength",
    "relationship_types",
    "seed",
    "self_weight",
    "split_property",
)
"""The options of ``tf_features.structural``."""
WRITE_OPTIONS = (*READ_OPTIONS, "changed_nodes", "write_property")
"""The options of ``tf_features.structural_write``."""
MAX_DIMENSION = 4096
"""The largest ``options.dimension``."""
MAX_ITERATIONS = 8
"""The most ``options.iteration_weights``."""


@dataclasses.dataclass(frozen=True)
class StructuralOptions:
    """Validated options of ``tf_features.structural`` (module docstring; defaults as documented
    in docs/query-modules.md)."""

    features: tuple[str, ...] = FEATURE_PARTS
    degree: str = "log1p"
    relationship_types: tuple[str, ...] | None = None
    dimension: int = 256
    iteration_weights: tuple[float, ...] = (0.0, 0.0, 1.0, 1.0, 1.0, 1.0)
    self_weight: float = 0.0
    normalization_strength: float = 0.0
    seed: int = 0
    id_property: str | None = None
    held_out: SplitFilter | None = None
    write_property: str | None = None
    changed_nodes: tuple[int, ...] | None = None


@dataclasses.dataclass(frozen=True)
class StructuralResult:
    """The answer: ``keys`` (sorted), ``vectors`` (one per key) and ``columns`` (one name per
    entry of a vector)."""

    keys: list[int]
    vectors: list[list[float]]
    columns: list[str]


def _number(name: str, value: Any) -> float:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if not ok:
        raise OptionError(f"options.{name}: expected a finite number, got {describe_value(value)}")
    return float(value)


def _names(name: str, value: Any, allowed: Sequence[str] | None = None) -> tuple[str, ...]:
    what = f"a non-empty list of {quoted(allowed)}" if allowed else "a non-empty list of names"
    if not isinstance(value, (list, tuple)) or not value:
        raise OptionError(f"options.{name}: expected {what}, got {describe_value(value)}")
    for i, item in enumerate(value):
        if not isinstance(item, str) or not item or (allowed and item not in allowed):
            raise OptionError(f"options.{name}[{i}]: expected {what}, got {describe_value(item)}")
        if item in value[:i]:
            raise OptionError(f"options.{name}[{i}]: {item!r} is named twice")
    return tuple(value)


def _parse_one(key: str, value: Any) -> Any:
    """One option's validated value (``key`` known, ``value`` not null)."""
    if key == "features":
        return _names(key, value, FEATURE_PARTS)
    if key == "relationship_types":
        return _names(key, value)
    if key == "degree":
        if value not in DEGREE_SCALES:
            raise OptionError(
                f"options.degree: expected one of {quoted(DEGREE_SCALES)}, got "
                f"{describe_value(value)}"
            )
        return value
    if key == "dimension":
        if not is_int(value) or not 1 <= value <= MAX_DIMENSION:
            raise OptionError(
                f"options.dimension: expected an integer from 1 to {MAX_DIMENSION}, got "
                f"{describe_value(value)}"
            )
        return value
    if key == "iteration_weights":
        if not isinstance(value, (list, tuple)) or not 1 <= len(value) <= MAX_ITERATIONS:
            raise OptionError(
                f"options.iteration_weights: expected a list of 1 to {MAX_ITERATIONS} numbers, "
                f"got {describe_value(value)}"
            )
        return tuple(_number(f"iteration_weights[{i}]", v) for i, v in enumerate(value))
    if key == "changed_nodes":
        if not isinstance(value, (list, tuple)):
            raise OptionError(
                f"options.changed_nodes: expected a list of internal node ids, got "
                f"{describe_value(value)}"
            )
        for i, item in enumerate(value):
            if not is_int(item):
                raise OptionError(
                    f"options.changed_nodes[{i}]: expected an internal node id, got "
                    f"{describe_value(item)}"
                )
        return tuple(value)
    if key in ("self_weight", "normalization_strength"):
        return _number(key, value)
    if key == "seed":
        if not is_int(value):
            raise OptionError(f"options.seed: expected an integer, got {describe_value(value)}")
        return value
    # id_property, write_property
    if not isinstance(value, str) or not value:
        raise OptionError(f"options.{key}: expected a property name, got {describe_value(value)}")
    return value


def parse_structural_call(
    label: Any, options: Any, *, write: bool
) -> tuple[str, StructuralOptions]:
    """The label and the options of ``tf_features.structural`` (``write``: ``structural_write``,
    which requires ``options.write_property``), checked; a bad one raises :class:`OptionError`
    naming the parameter, the value and what is allowed."""
    procedure = "structural_write" if write else "structural"
    if not isinstance(label, str) or not label:
        raise OptionError(f"label: expected a non-empty label name, got {describe_value(label)}")
    raw = options_map(options, procedure, WRITE_OPTIONS if write else READ_OPTIONS)
    held_out = parse_split_filter(raw)
    values = {key: _parse_one(key, value) for key, value in raw.items() if value is not None}
    opts = StructuralOptions(held_out=held_out, **values)
    if write and opts.write_property is None:
        raise OptionError(
            "options.write_property: expected the property name to write the vectors into, got "
            "nothing (tf_features.structural_write requires it)"
        )
    return label, opts


def random_vector(seed: int, key: int, dimension: int) -> list[float]:
    """The very sparse random vector of the node with ``key``: per entry two bytes of
    BLAKE2b(``"{seed}:{key}:{block}"``) taken modulo 6: 0 -> 1.0, 1 -> -1.0, else 0.0. A pure
    function of its arguments (the same on every machine and in every process)."""
    out: list[float] = []
    block = 0
    while len(out) < dimension:
        digest = hashlib.blake2b(f"{seed}:{key}:{block}".encode(), digest_size=64).digest()
        for i in range(0, 64, 2):
            r = int.from_bytes(digest[i : i + 2], "little") % 6
            out.append(1.0 if r == 0 else -1.0 if r == 1 else 0.0)
        block += 1
    return out[:dimension]


def _l2norm(vector: list[float]) -> list[float]:
    norm = math.sqrt(sum(x * x for x in vector))
    return [x / norm for x in vector] if norm > 0.0 else vector


class _Walk:
    """The graph reads of one call: adjacency lists (internal ids, sorted) and hash keys."""

    def __init__(self, nav: Any, opts: StructuralOptions, types: list[str]) -> None:
        self.nav, self.opts, self.types = nav, opts, types
        self.adjacency: dict[int, list[int]] = {}

    def neighbours(self, ids: Sequence[int], rel_types: Sequence[str], direction: str) -> list:
        out: list[list[int]] = []
        for start in range(0, len(ids), READ_CHUNK):
            self.nav.check_abort()
            part = ids[start : start + READ_CHUNK]
            out.extend(
                sorted(row)
                for row in self.nav.neighbours(
                    part, NeighbourRead(rel_types, direction, held_out=self.opts.held_out)
                )
            )
        return out

    def expand(self, ids: Sequence[int], hops: int) -> None:
        """Adjacency (either direction, over the types) of every node within ``hops`` of ids;
        reads only the rows not read before in the call (a node read before is walked through:
        its own reach may be shorter than this one's)."""
        frontier = list(dict.fromkeys(ids))
        seen = set(frontier)
        for _ in range(hops + 1):
            if not frontier or not self.types:
                return
            todo = [i for i in frontier if i not in self.adjacency]
            if todo:
                self.adjacency.update(zip(todo, self.neighbours(todo, self.types, "both")))
            met = dict.fromkeys(u for v in frontier for u in self.adjacency[v])
            frontier = [u for u in met if u not in seen]
            seen.update(frontier)

    def id_values(self, ids: Sequence[int]) -> list[Any]:
        """``options.id_property``'s value on each of ``ids`` (None where missing)."""
        out: list[Any] = []
        for start in range(0, len(ids), READ_CHUNK):
            self.nav.check_abort()
            out.extend(
                v[0]
                for v in self.nav.properties(
                    ids[start : start + READ_CHUNK], [self.opts.id_property]
                )
            )
        return out

    def hash_keys(self, ids: Sequence[int]) -> dict[int, int]:
        """Internal id -> the key its random vector is drawn from (module docstring)."""
        if self.opts.id_property is None:
            return {i: i for i in ids}
        values = self.id_values(list(ids))
        return {i: v if is_int(v) else i for i, v in zip(ids, values)}


def _fastrp(walk: _Walk, nodes: list[int]) -> list[list[float]]:
    """The FastRP embedding of each of ``nodes`` (module docstring)."""
    opts = walk.opts
    hops = len(opts.iteration_weights)
    walk.expand(nodes, hops if opts.normalization_strength else hops - 1)
    # every node N_{i} is needed for: within hops - i of ``nodes``
    rings = [list(dict.fromkeys(nodes))]
    for _ in range(hops):
        seen = set().union(*rings)
        nxt = [u for v in rings[-1] for u in walk.adjacency.get(v, ()) if u not in seen]
        rings.append(list(dict.fromkeys(nxt)))
    everyone = [v for ring in rings for v in ring]
    keys = walk.hash_keys(everyone)
    beta = opts.normalization_strength
    current: dict[int, list[float]] = {}
    for n, v in enumerate(everyone):
        if n % ABORT_CHECK_EVERY == 0:
            walk.nav.check_abort()
        vector = _l2norm(random_vector(opts.seed, keys[v], opts.dimension))
        if beta:
            scale = float(max(len(walk.adjacency.get(v, ())), 1)) ** beta
            vector = [x * scale for x in vector]
        current[v] = vector
    zero = [0.0] * opts.dimension
    out = {v: [opts.self_weight * x for x in current[v]] for v in rings[0]}
    for i, weight in enumerate(opts.iteration_weights, start=1):
        needed = [v for ring in rings[: hops - i + 1] for v in ring]
        nxt = {}
        for n, v in enumerate(needed):
            if n % ABORT_CHECK_EVERY == 0:
                walk.nav.check_abort()
            row = walk.adjacency.get(v, ())
            nxt[v] = _l2norm([sum(col) for col in zip(*(current[u] for u in row))]) if row else zero
        current = nxt
        for v in rings[0]:
            out[v] = [a + weight * b for a, b in zip(out[v], current[v])]
    return [out[v] for v in nodes]


def _degrees(walk: _Walk, nodes: list[int]) -> list[list[float]]:
    """Per node its out- and in-degree per relationship type (module docstring)."""
    columns: list[list[int]] = []
    for rel_type in walk.types:
        for direction in ("out", "in"):
            columns.append([len(row) for row in walk.neighbours(nodes, [rel_type], direction)])
    scale = math.log1p if walk.opts.degree == "log1p" else float
    return [[scale(col[n]) for col in columns] for n in range(len(nodes))]


def _types(nav: Any, label: str, opts: StructuralOptions) -> list[str]:
    """The relationship types the call uses: ``options.relationship_types``, else every type
    with an endpoint of ``label``, sorted."""
    if opts.relationship_types is not None:
        return list(opts.relationship_types)
    found = {t for (a, t, b) in nav.triples() if label in (a, b)}
    return sorted(found)


def _label_keys(walk: _Walk, label: str, nodes: list[int]) -> dict[int, int]:
    """Internal id -> key of the ``label`` nodes: ``options.id_property``'s value (an integer,
    unique within the label: else an error naming the node), or the internal id."""
    name = walk.opts.id_property
    if name is None:
        return {i: i for i in nodes}
    out: dict[int, int] = {}
    seen: dict[int, int] = {}
    for i, value in zip(nodes, walk.id_values(nodes)):
        require_int_id(value, f"node {i} (:{label})", name)
        require_unique_id(seen, value, i, name, label)
        out[i] = value
    return out


def _require_unique_in_label(walk: _Walk, label: str, nodes: list[int]) -> None:
    """With ``options.id_property``: raises the error the whole label's call raises (the same
    message, naming the same two nodes) where another ``label`` node holds the integer key of
    one of the ``label`` nodes ``nodes``: one pass over the label's keys, in the order that call
    reads them, no embedding computed."""
    name = walk.opts.id_property
    if name is None or not nodes:
        return
    wanted = {v for v in walk.id_values(nodes) if is_int(v)}
    everyone = walk.nav.resolve(walk.nav.label_nodes(label), "label nodes")
    seen: dict[int, int] = {}
    for i, value in zip(everyone, walk.id_values(everyone)):
        if is_int(value) and value in wanted:
            require_unique_id(seen, value, i, name, label)


def _region(walk: _Walk, label: str, changed: list[int]) -> list[int]:
    """The ``label`` nodes within ``len(options.iteration_weights)`` hops of ``changed`` (over
    the call's relationships, either direction): the nodes whose FastRP embedding a change of
    the nodes ``changed`` (their relationships, keys or degrees) can alter -- no other node's
    embedding reads anything of theirs."""
    hops = len(walk.opts.iteration_weights)
    walk.expand(changed, hops - 1)
    seen = dict.fromkeys(changed)
    frontier = list(seen)
    for _ in range(hops):
        met = [u for v in frontier for u in walk.adjacency.get(v, ()) if u not in seen]
        frontier = list(dict.fromkeys(met))
        seen.update(dict.fromkeys(frontier))
    ids = list(seen)
    return [i for i, labelled in zip(ids, walk.nav.has_label(ids, label)) if labelled]


def _compute(factory: AccessFactory, label: str, opts: StructuralOptions) -> tuple:
    """(access, sorted keys, internal ids in that order, vectors, columns); with
    ``options.changed_nodes`` of the label nodes :func:`_region` finds only, each vector the one
    the whole label's call gives it."""
    nav = factory(Options())
    if opts.changed_nodes is None:
        nodes = nav.label_nodes(label)
        if not nodes:
            raise OptionError(f"label: no node has the label {label!r}")
        nodes = nav.resolve(nodes, "label nodes")
    types = _types(nav, label, opts)
    walk = _Walk(nav, opts, types)
    if opts.changed_nodes is not None:
        changed = list(opts.changed_nodes)
        nodes = (
            _region(walk, label, nav.resolve(changed, "options.changed_nodes")) if changed else []
        )
        _require_unique_in_label(walk, label, nodes)
    keys = _label_keys(walk, label, nodes)
    nodes.sort(key=lambda i: keys[i])
    parts: list[list[list[float]]] = []
    columns: list[str] = []
    for part in opts.features:
        if part == "degree":
            parts.append(_degrees(walk, nodes) if nodes else [])
            columns += [f"degree:{t}:{d}" for t in types for d in ("out", "in")]
        else:
            parts.append(_fastrp(walk, nodes) if nodes else [])
            columns += [f"fastrp:{j}" for j in range(opts.dimension)]
    vectors = [[x for part in parts for x in part[n]] for n in range(len(nodes))]
    return nav, [keys[i] for i in nodes], nodes, vectors, columns


def structural(factory: AccessFactory, label: Any, options: Any) -> StructuralResult:
    """``tf_features.structural``: the vector of every node of ``label`` (module docstring);
    with ``options.id_property`` the keys are its values (every node of the label must hold an
    integer there), else internal ids."""
    label, opts = parse_structural_call(label, options, write=False)
    _, keys, _, vectors, columns = _compute(factory, label, opts)
    return StructuralResult(keys, vectors, columns)


def structural_write(factory: AccessFactory, label: Any, options: Any) -> dict[str, Any]:
    """``tf_features.structural_write``: writes each node's vector (a list of floats) into
    ``options.write_property``; returns ``{"nodes", "width", "columns", "updated"}``. Nothing is
    written when an input is bad.

    With ``options.changed_nodes`` (internal ids of nodes in the graph, e.g. the nodes and the
    relationship endpoints a change log names) the exact local recompute: only the label's nodes
    within ``len(options.iteration_weights)`` hops of them are written, each with the vector the
    call without the option writes on the same graph (FastRP reads nothing farther: a node's
    random start is a function of the seed and its key only), and ``updated`` lists their
    internal ids, sorted; without it, every node of the label is written and ``updated`` is
    null. Exact while the relationship types the call uses are the same as when the label's
    other vectors were written (``options.relationship_types`` fixes them)."""
    label, opts = parse_structural_call(label, options, write=True)
    nav, _, internals, vectors, columns = _compute(factory, label, opts)
    if internals:
        nav.write_node_values(list(zip(internals, vectors)), opts.write_property)
    updated = None if opts.changed_nodes is None else sorted(nav.internal_ids(internals))
    return {"nodes": len(internals), "width": len(columns), "columns": columns, "updated": updated}
