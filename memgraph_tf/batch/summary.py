"""What a batch-inference run reports, in one shape (:class:`RunSummary`) for both ways to run it:
:class:`BatchSummary` (``memgraph-tf classify``:
:class:`~memgraph_tf.batch.classifier.BatchClassifier`) and
:class:`~memgraph_tf.beam.runner.BeamSummary` (``classify --runner``); :class:`ModelRun`, the
model and the time that every run's summary reports (link scoring's too).

Imports no TensorFlow, no Bolt driver and no serving module (the Beam runner builds on it before
Beam is imported).
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

#: How many invalid nodes a summary lists (all are counted).
MAX_LISTED_INVALID = 1000


@dataclasses.dataclass
class ModelRun:
    """The model a run used (``model_name``, ``model_version``) and how long the run took
    (``elapsed_s``, keyword-only)."""

    model_name: str
    model_version: int
    elapsed_s: float = dataclasses.field(default=0.0, kw_only=True)


@dataclasses.dataclass
class RunSummary(ModelRun):
    """A :class:`ModelRun` that classified nodes: the property it wrote (``write_property``: the
    class; its score and version properties beside it) and how many nodes it classified
    (``classified``, keyword-only). A subclass adds its other counters, names in :attr:`rate_of`
    the one :attr:`nodes_per_s` divides by ``elapsed_s``, and says what the run did in
    :meth:`counts_text`."""

    write_property: str
    classified: int = dataclasses.field(default=0, kw_only=True)

    #: The counter :attr:`nodes_per_s` divides by ``elapsed_s``.
    rate_of: ClassVar[str] = "classified"

    @property
    def nodes_per_s(self) -> float:
        """The :attr:`rate_of` nodes per second of the run (0 before it has taken any time)."""
        return getattr(self, self.rate_of) / self.elapsed_s if self.elapsed_s > 0 else 0.0

    def counts_text(self) -> str:
        """What the run did, for :meth:`text`."""
        raise NotImplementedError

    def text(self) -> str:
        """One line for people: :meth:`counts_text`, time and rate, the model and the properties
        it wrote (:func:`~memgraph_tf.client.node_tables.property_names`)."""
        from memgraph_tf.client.node_tables import property_names

        cls, score, ver = property_names(self.write_property)
        return (
            f"{self.counts_text()} in {self.elapsed_s:.1f} s: {self.nodes_per_s:.0f} nodes/s; "
            f"model {self.model_name} version {self.model_version} -> {cls}, {score}, {ver}"
        )


@dataclasses.dataclass
class BatchSummary(RunSummary):
    """What a :class:`~memgraph_tf.batch.classifier.BatchClassifier` run did (:class:`RunSummary`:
    the model, the property written, ``elapsed_s``, :attr:`nodes_per_s` of the classified nodes).
    ``classified``: nodes written; ``skipped``: invalid nodes left unwritten (``skip_invalid``);
    ``failed``: nodes of the batch a run stopped at, plus predictions that matched no node when
    written (deleted meanwhile); ``up_to_date``: nodes left out because they already carried this
    version's prediction; ``total``: nodes the run set out to classify; ``invalid``: ``(node id,
    reason)`` of the first :data:`MAX_LISTED_INVALID` invalid nodes."""

    shard: str = "0/1"
    total: int = 0
    skipped: int = 0
    failed: int = 0
    up_to_date: int = 0
    batches: int = 0
    invalid: list[tuple[int, str]] = dataclasses.field(default_factory=list)
    interrupted: bool = False

    def counts_text(self) -> str:
        return (
            f"classified {self.classified} nodes, skipped {self.skipped} invalid, failed "
            f"{self.failed}, already up to date {self.up_to_date} (shard {self.shard})"
        )


__all__ = ["MAX_LISTED_INVALID", "BatchSummary", "ModelRun", "RunSummary"]
