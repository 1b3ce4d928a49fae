"""The structural properties a refresh keeps fresh: a featureless label's FastRP embedding
(:data:`~memgraph_tf.client.structural.STRUCTURAL_PROPERTY`, written by the trainers and read by
the model through its feature spec), or any property whose feature spec entry records the
``tf_features.structural_write`` call that wrote it (``NumericSpec.structural``), recomputed
where changes can alter it, before re-scoring.

The recompute uses the options the spec records (the trainers record theirs: seed, dimension,
iteration weights, normalisation strength...), so it writes the values the training call would
write on the graph as it is now. A spec without the record (an export from before the record
existed, or a hand-built spec) names no seed: :func:`structural_calls` refuses it unless a seed is
given (``--structural-seed``), which stands for the trainers' default call with that seed.

FastRP (:mod:`memgraph_tf.procedures.structural`) gives a node a value that reads nothing
farther than ``len(iteration_weights)`` hops: the relationships of the nodes within one hop
less, the random start (a function of the seed and a node's key only) and degree of the nodes
within that reach. So the nodes of the label within that reach of the nodes a change names (a
node, a relationship's endpoints) are the only ones whose value can change, and the procedure's
``options.changed_nodes`` rewrites exactly those, each with the value a call over the whole
label gives it on the graph as it is now (tests/client/test_structural_local.py). Their
predictions read that value, so the refresh re-scores the seeds that reach them as it does for
a feature update.

That holds while the call walks the same relationship types. The trainers' call names the types
touching the label at training time (``relationship_types``, sorted): a refresh keeps walking
exactly those -- the vectors the model was trained on -- so a type that first touches the label
after training changes no vector, and a pass reads no schema. A record naming no types (written
by hand, or a label without relationships at training time) walks every type touching the label
now: each pass with changes reads the schema for them (``tf_features.schema``, a scan of every
node and relationship), and when the changes may have added or removed one (:func:`type_change`)
the label is recomputed in full and every prediction re-scored.

A server's triggers log the pass's own writes of the property, and the property is one the model
reads, so the next pass would re-score the seeds reading every rewritten vector once more (every
node after a full recompute) to the same values. :class:`StructuralRefresh` remembers a digest of
each vector it wrote (read back after the write, before the pass re-scores: the value the
predictions were made with) and :meth:`StructuralRefresh.own_writes` recognises a logged update
that sets nothing but a target's property, and changes no label, on a node whose stored value still
has that digest: it starts no walk. A genuine write of the property by anyone else leaves another
value (its digest differs) and is re-scored; one that writes the very value changes no prediction.
Any logged update of the property not recognised so (another value, other properties set with it)
drops the node's digest: the pass re-scores with the value it left, so this object's old value
written back later is re-scored too. The memory lives in the process (a digest per rewritten node
of the structural labels): a new ``memgraph-tf refresh`` process re-scores the logged writes of the
previous one once. The read back costs a read of every rewritten vector (every vector of the label
after a full recompute), and the next pass reads the logged ones again; a logged deletion of a node
drops its digest.
"""

from __future__ import annotations

import collections
import dataclasses
import hashlib
import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from memgraph_tf.batch.affected import WalkSpec, walker_for
from memgraph_tf.client.change_log import OWN_LABELS, Change
from memgraph_tf.client.structural import (
    STRUCTURAL_PROPERTY,
    structural_call,
    write_structural_features,
)
from memgraph_tf.errors import ConfigurationError
from memgraph_tf.layout import SPLIT_PROPERTY
from memgraph_tf.procedures.errors import OptionError
from memgraph_tf.procedures.structural import parse_structural_call

logger = logging.getLogger(__name__)

__all__ = [
    "DEFAULT_FASTRP_WIDTH",
    "StructuralRefresh",
    "StructuralRewrite",
    "StructuralTarget",
    "fastrp_nodes",
    "structural_calls",
    "structural_labels",
    "type_change",
    "value_digest",
]

#: The width of the trainers' default FastRP property (the procedure's ``dimension`` default).
DEFAULT_FASTRP_WIDTH = 256


@dataclasses.dataclass(frozen=True)
class StructuralTarget:
    """One structural property to keep fresh: ``label``, ``prop`` (the property its feature spec
    reads) and ``call`` (the ``tf_features.structural_write`` options over the whole label)."""

    label: str
    prop: str
    call: Mapping[str, Any]


def _structural_entries(options: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """``(label, property entry)`` of each feature spec entry (a bundle config's
    ``options.feature_spec``) that reads :data:`STRUCTURAL_PROPERTY` or records a
    ``structural`` call, sorted by label and property."""
    out = []
    for label, spec in (options.get("feature_spec") or {}).items():
        props = spec.get("properties", []) if isinstance(spec, Mapping) else []
        for prop in props:
            if isinstance(prop, Mapping) and (
                prop.get("name") == STRUCTURAL_PROPERTY or prop.get("structural") is not None
            ):
                out.append((label, prop))
    return sorted(out, key=lambda e: (e[0], str(e[1].get("name"))))


def structural_labels(options: Mapping[str, Any]) -> list[str]:
    """The labels whose feature spec (a bundle config's ``options.feature_spec``) reads
    :data:`STRUCTURAL_PROPERTY` or a property with a recorded ``structural`` call, sorted."""
    return sorted({label for label, _ in _structural_entries(options)})


def structural_calls(options: Mapping[str, Any], seed: int | None = None) -> list[StructuralTarget]:
    """The structural properties the feature spec of a bundle config's ``options`` reads, each
    with the call that recomputes it: the ``structural`` options its entry records (checked with
    the procedure's own parser), else -- an entry of :data:`STRUCTURAL_PROPERTY` without the
    record -- the trainers' default call drawn from ``seed``.

    Guarantees: ``ConfigurationError`` naming the label and the property, and nothing returned,
    for an entry without the record when ``seed`` is None (its seed is unknown: a guess would
    write vectors unlike the rest of the graph without any error), for one without the record at
    another width than the trainers' default, for a ``seed`` other than the one recorded, and
    for recorded options the procedure refuses."""
    out = []
    for label, prop in _structural_entries(options):
        name, record = prop["name"], prop.get("structural")
        where = f"model: label {label!r} reads {name!r}"
        if record is None:
            if seed is None:
                raise ConfigurationError(
                    f"{where}, and its feature spec records no 'structural' options (the seed "
                    "and settings the vectors were written with): pass --structural-seed N (the "
                    "training seed; 0 when training set none) to recompute it with the trainers' "
                    "default options, or --no-structural to leave it as it is"
                )
            if prop.get("length") != DEFAULT_FASTRP_WIDTH:
                raise ConfigurationError(
                    f"{where} with length {prop.get('length')!r}, not the trainers' default "
                    f"{DEFAULT_FASTRP_WIDTH}, and records no 'structural' options: they are "
                    "unknown here (refresh it by hand and pass --no-structural)"
                )
            out.append(StructuralTarget(label, name, structural_call(options, seed=seed)))
            continue
        call = {**record, "write_property": name}
        try:
            _, parsed = parse_structural_call(label, call, write=True)
        except OptionError as exc:
            raise ConfigurationError(f"{where}: its recorded 'structural' options: {exc}") from None
        if seed is not None and seed != parsed.seed:
            raise ConfigurationError(
                f"{where}: --structural-seed {seed} is not the seed {parsed.seed} its feature "
                "spec records for it (drop the flag: the recorded options are used)"
            )
        if parsed.features == ("fastrp",) and prop.get("length") != parsed.dimension:
            raise ConfigurationError(
                f"{where} with length {prop.get('length')!r}, but its recorded 'structural' "
                f"options write {parsed.dimension} numbers"
            )
        out.append(StructuralTarget(label, name, call))
    return out


class StructuralRefresh:
    """The recompute of one bundle's structural properties (:func:`structural_calls` of the
    bundle's ``options``; ``seed``: only for an entry without a recorded call) limited to what
    changed. :attr:`labels` empty: the bundle reads no structural property (or not
    ``enabled``)."""

    def __init__(
        self, options: Mapping[str, Any], seed: int | None = None, *, enabled: bool = True
    ) -> None:
        self.targets = structural_calls(options, seed) if enabled else []
        self.labels = sorted({t.label for t in self.targets})
        #: ``(property, internal id)`` -> digest of the value this object last wrote there.
        self.written: dict[tuple[str, int], bytes] = {}

    def remember(self, source: Any, target: StructuralTarget, ids: Sequence[int] | None) -> None:
        """Reads back ``target``'s property on the nodes ``ids`` (None: every node of its label)
        and keeps each value's digest, so :meth:`own_writes` knows the logged writes of it."""
        if ids is None:
            ids = source.node_ids(label=target.label)
        values = walker_for(source).keys(list(ids), target.prop)
        for i in ids:
            self.written[(target.prop, i)] = value_digest(values.get(i))

    def own_writes(self, source: Any, changes: Sequence[Change]) -> set[int]:
        """The positions in ``changes`` of the logged writes of this object's own rewrites: a node
        update whose properties are all properties of the targets of its labels and that changes
        no label (:attr:`Change.relabelled`: Memgraph's update trigger folds a transaction's label
        and property changes of a node into one entry), on a node whose stored values of them
        have the digests :meth:`remember` kept (the value it wrote and the predictions were made
        with). Any other change -- a write of another value, one that sets another property or a
        label too, a node this object never wrote -- is not among them.

        Every other logged update that may have set a target's property on a node (naming it, or
        naming no property) makes this object forget its digest there: the pass re-scores with the
        value that update left, so a later write of this object's old value back is another
        value for the predictions, and is re-scored too. A logged deletion of a node drops its
        digests, so the memory holds no node the log says is gone."""
        props = {t.label: set() for t in self.targets}
        for t in self.targets:
            props[t.label].add(t.prop)
        candidates: dict[int, tuple[str, ...]] = {}
        for pos, c in enumerate(changes):
            if c.entity != "node" or c.kind != "updated" or c.relabelled:
                continue  # a label change folded into the entry is never this object's
            mine = set().union(*(props.get(label, set()) for label in c.labels))
            if set(c.properties) <= mine and all(
                (p, c.element_id) in self.written for p in c.properties
            ):
                candidates[pos] = c.properties
        for prop in sorted({p for names in candidates.values() for p in names}):
            ids = sorted({changes[pos].element_id for pos, n in candidates.items() if prop in n})
            values = walker_for(source).keys(ids, prop)
            same = {i for i in ids if value_digest(values.get(i)) == self.written[(prop, i)]}
            for pos, names in candidates.items():
                if prop in names and changes[pos].element_id not in same:
                    candidates[pos] = ()  # another value: not (only) this object's write
        own = {pos for pos, names in candidates.items() if names}
        self._forget(changes, own)
        return own

    def _forget(self, changes: Sequence[Change], own: set[int]) -> None:
        """Drops the digests of the target properties that the node updates of ``changes`` not
        at the positions ``own`` may have set, and every digest of a node they delete."""
        names = {t.prop for t in self.targets}
        for pos, c in enumerate(changes):
            if pos in own or c.entity != "node" or c.kind == "created":
                continue
            named = c.kind == "updated" and c.properties
            for prop in names.intersection(c.properties) if named else names:
                self.written.pop((prop, c.element_id), None)

    def walk_spec(self, spec: WalkSpec) -> WalkSpec:
        """``spec`` reading each target's property on its label too (the model reads it through
        its feature spec), so an update of it starts the backwards walk."""
        reads = dict(spec.read_properties)
        for t in self.targets:
            for label in [None] if None in reads else [t.label]:
                reads[label] = frozenset(reads.get(label, frozenset()) | {t.prop})
        return dataclasses.replace(spec, read_properties=reads)

    def rewrite(
        self, source: Any, changes: Sequence[Change], labels: Mapping[int, Sequence[str]]
    ) -> StructuralRewrite:
        """Rewrites the properties where ``changes`` can have altered them; ``labels``: the
        labels of the nodes the changes name that are in the graph now (the others are gone).

        Per target without recorded ``relationship_types`` (the trainers record them), the
        relationship types touching its label now (``tf_features.schema``: a scan of the graph,
        made only for such a target) are the call's; when the changes may have added or
        removed one of them (:func:`type_change`), every node's vector changes and the label is
        recomputed in full (``everything``); else the label's nodes within reach of the nodes
        the changes name are, and each rewritten node comes back as an update of the property
        for the affected set."""
        out = StructuralRewrite()
        if not self.targets or not changes:
            return out
        triples = None
        for t in self.targets:
            call = dict(t.call)
            present = sorted(i for i in fastrp_nodes(changes, call) if i in labels)
            reason = None
            if call.get("relationship_types") is None:
                triples = source.schema()["relationships"] if triples is None else triples
                touching: dict[str, int] = {}  # type -> a lower bound of its relationships
                for r in triples:
                    if t.label in (r["source"], r["target"]):
                        touching[r["type"]] = max(touching.get(r["type"], 0), r["count"])
                call["relationship_types"] = sorted(touching) or None
                reason = type_change(t.label, touching, changes, labels)
            if reason is not None:
                answer = write_structural_features(source, t.label, call)
                self.remember(source, t, None)
                logger.info(
                    "label %r: %s: rewrote %r on all %d node(s)",
                    t.label,
                    reason,
                    t.prop,
                    answer["nodes"],
                )
                out.everything = True
                out.count += answer["nodes"]
                continue
            if not present:
                continue
            answer = write_structural_features(source, t.label, {**call, "changed_nodes": present})
            self.remember(source, t, answer["updated"])
            logger.info(
                "label %r: rewrote %r on %d node(s) near %d changed node(s)",
                t.label,
                t.prop,
                answer["nodes"],
                len(present),
            )
            out.count += answer["nodes"]
            out.updates += [
                Change("updated", "node", i, labels=(t.label,), properties=(t.prop,))
                for i in answer["updated"]
            ]
        return out


def value_digest(value: Any) -> bytes:
    """A digest of a stored property value (its ``repr``: exact for floats), 16 bytes."""
    return hashlib.blake2b(repr(value).encode(), digest_size=16).digest()


@dataclasses.dataclass
class StructuralRewrite:
    """What :meth:`StructuralRefresh.rewrite` did: ``count`` vectors rewritten, ``updates`` (one
    node update per vector rewritten near the changes) and ``everything`` (a label was recomputed
    in full: every prediction reading it may change)."""

    count: int = 0
    updates: list[Change] = dataclasses.field(default_factory=list)
    everything: bool = False


def type_change(
    label: str,
    touching: Mapping[str, int],
    changes: Sequence[Change],
    labels: Mapping[int, Sequence[str]],
) -> str | None:
    """Why ``changes`` may have changed the set of relationship types touching ``label`` (the
    types a default call walks), or None. ``touching``: per type touching it now, a lower bound
    of its relationships there; ``labels``: the labels of the named nodes in the graph now.

    A type may have started touching it when a created relationship is of it and no more of its
    relationships touch the label than the pass created of it; it may have stopped when a
    deleted relationship is of a type that no longer touches it and an endpoint has the label
    (or is gone, unless its deletion in ``changes`` lists its labels without it). A label change
    (:attr:`Change.relabelled`: an update naming changed labels, or naming nothing) may have done
    either."""
    created = collections.Counter(
        c.rel_type for c in changes if c.entity == "relationship" and c.kind == "created"
    )
    gone = {c.element_id: c.labels for c in changes if c.entity == "node" and c.kind == "deleted"}
    for c in changes:
        if set(c.labels) & OWN_LABELS:
            continue
        if c.entity == "node":
            if c.relabelled:
                return f"node {c.element_id}'s labels changed"
            continue
        if c.kind == "updated":
            continue
        if c.rel_type in touching:
            if c.kind == "created" and touching[c.rel_type] <= created[c.rel_type]:
                return f"relationship type {c.rel_type!r} may have started touching it"
        elif c.kind == "deleted":
            ends = [labels.get(e, gone.get(e)) for e in (c.start_id, c.end_id)]
            if any(own is None or label in own for own in ends):
                return f"relationship type {c.rel_type!r} may have stopped touching it"
    return None


def fastrp_nodes(changes: Iterable[Change], call: Mapping[str, Any]) -> set[int]:
    """The internal ids of the nodes whose FastRP inputs ``changes`` can have altered under the
    ``tf_features.structural_write`` options ``call``: a created or deleted node, a
    relationship's endpoints, a node whose labels (:attr:`Change.relabelled`) or
    ``call["id_property"]`` changed, the endpoints of a relationship whose
    ``call["split_property"]`` changed when ``call`` leaves splits out. Other property updates
    -- the property the vectors are written into among them, which a server's triggers log --
    change no FastRP input, nor does a relationship of a type that ``call["relationship_types"]``
    (when given) does not name; memgraph-tf's own bookkeeping nodes are left out."""
    types = call.get("relationship_types")
    id_property = call.get("id_property")
    split = call.get("split_property") or SPLIT_PROPERTY if call.get("exclude_splits") else None
    ids: set[int] = set()
    for c in changes:
        if set(c.labels) & OWN_LABELS:
            continue
        if c.entity == "relationship" and types is not None and c.rel_type not in types:
            continue
        if c.kind == "updated" and c.properties and not c.relabelled:
            named = id_property if c.entity == "node" else split
            if named is None or named not in c.properties:
                continue
        ids.update([c.element_id] if c.entity == "node" else [c.start_id, c.end_id])
    return ids
