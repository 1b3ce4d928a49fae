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
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterable, Mapping
from typing import Any

from memgraph_tf.batch.affected import WalkSpec
from memgraph_tf.client.change_log import OWN_LABELS, Change
from memgraph_tf.client.structural import (
    STRUCTURAL_PROPERTY,
    structural_call,
    write_structural_features,
)
from memgraph_tf.errors import ConfigurationError

logger = logging.getLogger(__name__)

__all__ = ["DEFAULT_FASTRP_WIDTH", "StructuralRefresh", "named_nodes", "structural_labels"]

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

    def rewrite(self, source: Any, present: Iterable[int]) -> list[Change]:
        """Rewrites the property of each label's nodes within reach of the nodes ``present``
        (internal ids of nodes in the graph that changes name); returns one node update of
        :data:`STRUCTURAL_PROPERTY` per node rewritten, for the affected set."""
        changed = sorted(set(present))
        out: list[Change] = []
        if not changed:
            return out
        for label in self.labels:
            answer = write_structural_features(
                source, label, {**self.call, "changed_nodes": changed}
            )
            logger.info(
                "label %r: rewrote %r on %d node(s) near %d changed node(s)",
                label,
                STRUCTURAL_PROPERTY,
                answer["nodes"],
                len(changed),
            )
            out += [
                Change("updated", "node", i, labels=(label,), properties=(STRUCTURAL_PROPERTY,))
                for i in answer["updated"]
            ]
        return out


def named_nodes(changes: Iterable[Change]) -> set[int]:
    """The internal ids the ``changes`` name (a node; a relationship's endpoints), memgraph-tf's
    own bookkeeping nodes left out."""
    ids: set[int] = set()
    for c in changes:
        if set(c.labels) & OWN_LABELS:
            continue
        ids.update([c.element_id] if c.entity == "node" else [c.start_id, c.end_id])
    return ids
