"""What a batch-inference run reports, in one shape for both ways to run it:
:class:`~memgraph_tf.client.batch.BatchSummary` (``memgraph-tf classify``) and
:class:`~memgraph_tf.beam.runner.BeamSummary` (``classify --runner``).

Standard library only at import time, so that the Beam runner module can build on it without
importing the Bolt driver.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar


@dataclasses.dataclass
class RunSummary:
    """The model a run used (``model_name``, ``model_version``), the property it wrote
    (``write_property``: the class; its score and version properties beside it) and how long it
    took (``elapsed_s``, keyword-only). A subclass adds its counters, names in :attr:`rate_of` the
    one :attr:`nodes_per_s` divides by ``elapsed_s``, and says what the run did in
    :meth:`counts_text`."""

    model_name: str
    model_version: int
    write_property: str
    elapsed_s: float = dataclasses.field(default=0.0, kw_only=True)

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
        it wrote."""
        from memgraph_tf.client.batch import property_names

        cls, score, ver = property_names(self.write_property)
        return (
            f"{self.counts_text()} in {self.elapsed_s:.1f} s: {self.nodes_per_s:.0f} nodes/s; "
            f"model {self.model_name} version {self.model_version} -> {cls}, {score}, {ver}"
        )
