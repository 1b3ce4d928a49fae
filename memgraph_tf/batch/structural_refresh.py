"""The structural property a refresh keeps fresh: a featureless label's FastRP embedding
(:data:`~memgraph_tf.client.structural.STRUCTURAL_PROPERTY`, written by the trainers and read by
the model through its feature spec) recomputed where changes can alter it, before re-scoring.

FastRP (:mod:`memgraph_tf.procedures.structural`) gives a node a value that reads nothing
farther than ``len(iteration_weights)`` hops: the relationships of the nodes within one hop
less, the random start (a function of the seed and a node's key only) and degree of the nodes
within that reach. So the nodes of the label within that reach of the nodes a change names (a
node, a relationship's endpoints) are the only ones whose value can change, and the procedure's
``options.changed_nodes`` rewrites exactly those, each with the value a call over the whole
label gives it on the graph as it is now (tests/client/test_structural_local.py). Their
predictions read that value, so the refresh re-scores the seeds that reach them as it does for
a feature update.

That holds while the call walks the same relationship types: the trainers' call walks every type
touching the label, so when the changes may have added or removed one (:func:`type_change`) the
label is recomputed in full and every prediction re-scored.
"""

from __future__ import annotations

import collections
import dataclasses
import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from memgraph_tf.batch.affected import WalkSpec
from memgraph_tf.client.change_log import OWN_LABELS, Change
from memgraph_tf.client.structural import (
    STRUCTURAL_PROPERTY,
    structural_call,
    write_structural_features,
)
from memgraph_tf.errors import ConfigurationError
from memgraph_tf.layout import SPLIT_PROPERTY

logger = logging.getLogger(__name__)

__all__ = [
    "DEFAULT_FASTRP_WIDTH",
    "StructuralRefresh",
    "StructuralRewrite",
    "fastrp_nodes",
    "structural_labels",
    "type_change",
]

#: The width of the trainers' default FastRP property (the procedure's ``dimension`` default).
DEFAULT_FASTRP_WIDTH = 256


def structural_labels(options: Mapping[str, Any]) -> list[str]:
    """The labels whose feature spec (a bundle config's ``options.feature_spec``) reads
    :data:`STRUCTURAL_PROPERTY`, sorted; a spec reading it at another width than the trainers'
    default raises ``ConfigurationError`` naming the label (those vectors were written with
    options the bundle does not record)."""
    out = []
    for label, spec in (options.get("feature_spec") or {}).items():
        props = spec.get("properties", []) if isinstance(spec, Mapping) else []
        for prop in props:
            if not isinstance(prop, Mapping) or prop.get("name") != STRUCTURAL_PROPERTY:
                continue
            if prop.get("length") != DEFAULT_FASTRP_WIDTH:
                raise ConfigurationError(
                    f"model: label {label!r} reads {STRUCTURAL_PROPERTY!r} with length "
                    f"{prop.get('length')!r}, not the trainers' default {DEFAULT_FASTRP_WIDTH}: "
                    "its options are unknown here (refresh it by hand and pass --no-structural)"
                )
            out.append(label)
    return sorted(set(out))


class StructuralRefresh:
    """The FastRP recompute of one bundle's featureless labels: the trainers' call
    (:func:`~memgraph_tf.client.structural.structural_call` of the bundle's ``options``, the
    projection drawn from ``seed`` -- the training seed; None: the trainers' default) limited to
    what changed. :attr:`labels` empty: the bundle reads no structural property (or not
    ``enabled``)."""

    def __init__(
        self, options: Mapping[str, Any], seed: int | None = None, *, enabled: bool = True
    ) -> None:
        self.labels = structural_labels(options) if enabled else []
        self.call = structural_call(options, seed=seed)

    def walk_spec(self, spec: WalkSpec) -> WalkSpec:
        """``spec`` reading :data:`STRUCTURAL_PROPERTY` on :attr:`labels` too (the model reads it
        through its feature spec), so an update of it starts the backwards walk."""
        reads = dict(spec.read_properties)
        for label in [None] if None in reads else self.labels:
            reads[label] = frozenset(reads.get(label, frozenset()) | {STRUCTURAL_PROPERTY})
        return dataclasses.replace(spec, read_properties=reads)

    def rewrite(
        self, source: Any, changes: Sequence[Change], labels: Mapping[int, Sequence[str]]
    ) -> StructuralRewrite:
        """Rewrites the property where ``changes`` can have altered it; ``labels``: the labels of
        the nodes the changes name that are in the graph now (the others are gone).

        Per label, the relationship types touching it now (``tf_features.schema``) are the call's;
        when the changes may have added or removed one of them (:func:`type_change`), every
        node's vector changes and the label is recomputed in full (``everything``); else the
        label's nodes within reach of the nodes the changes name are, and each rewritten node
        comes back as an update of :data:`STRUCTURAL_PROPERTY` for the affected set."""
        present = sorted(i for i in fastrp_nodes(changes, self.call) if i in labels)
        out = StructuralRewrite()
        if not self.labels or not changes:
            return out
        triples = source.schema()["relationships"]
        for label in self.labels:
            touching: dict[str, int] = {}  # type -> a lower bound of its relationships at label
            for t in triples:
                if label in (t["source"], t["target"]):
                    touching[t["type"]] = max(touching.get(t["type"], 0), t["count"])
            call = {**self.call, "relationship_types": sorted(touching) or None}
            reason = type_change(label, touching, changes, labels)
            if reason is not None:
                answer = write_structural_features(source, label, call)
                logger.info(
                    "label %r: %s: rewrote %r on all %d node(s)",
                    label,
                    reason,
                    STRUCTURAL_PROPERTY,
                    answer["nodes"],
                )
                out.everything = True
                out.count += answer["nodes"]
                continue
            if not present:
                continue
            answer = write_structural_features(source, label, {**call, "changed_nodes": present})
            logger.info(
                "label %r: rewrote %r on %d node(s) near %d changed node(s)",
                label,
                STRUCTURAL_PROPERTY,
                answer["nodes"],
                len(present),
            )
            out.count += answer["nodes"]
            out.updates += [
                Change("updated", "node", i, labels=(label,), properties=(STRUCTURAL_PROPERTY,))
                for i in answer["updated"]
            ]
        return out


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
    change no FastRP input; memgraph-tf's own bookkeeping nodes are left out."""
    id_property = call.get("id_property")
    split = call.get("split_property") or SPLIT_PROPERTY if call.get("exclude_splits") else None
    ids: set[int] = set()
    for c in changes:
        if set(c.labels) & OWN_LABELS:
            continue
        if c.kind == "updated" and c.properties and not c.relabelled:
            named = id_property if c.entity == "node" else split
            if named is None or named not in c.properties:
                continue
        ids.update([c.element_id] if c.entity == "node" else [c.start_id, c.end_id])
    return ids
