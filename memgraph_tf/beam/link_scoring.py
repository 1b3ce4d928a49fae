"""Batch link scoring on Apache Beam: :class:`ScoreLinks`, ``memgraph-tf score-links``
as a pipeline -- the same candidates (top k per source, or a Cypher query's pairs), the same
scores, the same relationships ``(s)-[:PREDICTED_LINK {score, model_version}]->(t)`` and source
markers (:mod:`memgraph_tf.batch.link_scoring`, :mod:`memgraph_tf.client.link_tables`)::

    graph = GraphSpec("bolt://memgraph:7687")
    with create_pipeline("DirectRunner") as p:
        p | ScoreLinks(graph, LinkModel(...), k=10, relationship_type="CITES")

One shape on every runner, the one :class:`~memgraph_tf.beam.transforms.ClassifyNodes` takes on
Beam's DaskRunner (docs/scaling.md, "Dask"): the launcher reads the sources' key span once and
cuts it into ``num_ranges`` ranges, each a ``Create`` of its own; workers read their range by keyset
pages (sources not done for this version), and each page is one element that a single DoFn scores
and writes, ending in one :class:`LinkTally` per page. No ``BatchElements``, no ``finish_bundle``
output, no tagged output, and the tallies are the pipeline's last transform: nothing that runner
leaves out is used.

Each worker builds its model backend once from ``model`` -- a picklable zero-argument callable
returning a :class:`~memgraph_tf.batch.link_scoring.LinkBackend` (e.g. a bundle path's loader) --
and, for
top k, embeds every target once. A retried bundle scores its pages again: the links are MERGEd on
``(s, TYPE, t)``, so none is written twice.

Counters (namespace :data:`~memgraph_tf.beam.transforms.NAMESPACE`): ``link_sources``,
``link_pairs``, ``links_written``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import apache_beam as beam
from apache_beam.metrics import Metrics

from memgraph_tf.batch.link_scoring import DEFAULT_BATCH_SIZE, LinkBackend, LinkScorer
from memgraph_tf.beam.graph_specs import GraphSpec, acquire, release
from memgraph_tf.beam.transforms import (
    DEFAULT_NUM_RANGES,
    NAMESPACE,
    KeyRangePlan,
    NodeScan,
    Page,
    ReadRangePagesFn,
    create_ranges,
    plan_key_ranges,
)
from memgraph_tf.client.link_tables import DEFAULT_LINK_TYPE

__all__ = ["LinkTally", "ScoreLinks"]


@dataclasses.dataclass(frozen=True)
class LinkTally:
    """What one page came to: ``sources`` scored, ``pairs`` scored, ``links`` written."""

    sources: int
    pairs: int
    links: int


class _ScorePageFn(beam.DoFn):
    """Scores one page of sources and writes its links and markers (:class:`LinkScorer`'s
    ``score_page`` and ``commit``). The graph handle is kept for the process (as the DaskRunner
    shape of ClassifyNodes does: that runner sets a DoFn up once per partition)."""

    def __init__(
        self, graph: GraphSpec, model: Callable[[], LinkBackend], options: Mapping[str, Any]
    ) -> None:
        super().__init__()
        self.graph, self.model, self.options = graph, model, dict(options)
        self._sources = Metrics.counter(NAMESPACE, "link_sources")
        self._pairs = Metrics.counter(NAMESPACE, "link_pairs")
        self._links = Metrics.counter(NAMESPACE, "links_written")
        self._scorer: LinkScorer | None = None

    def setup(self) -> None:
        if self._scorer is None:
            handle = acquire(self.graph)
            self._scorer = LinkScorer(handle.source, self.model(), **self.options)

    def process(self, page: Page) -> Iterator[LinkTally]:
        scorer = self._scorer
        keys = list(page.keys)
        links, pairs = scorer.score_page(keys)
        written = scorer.commit(keys, links, pairs)
        self._sources.inc(len(keys))
        self._pairs.inc(pairs)
        self._links.inc(written)
        yield LinkTally(len(keys), pairs, written)


class ScoreLinks(beam.PTransform):
    """``PBegin -> PCollection[LinkTally]``: :class:`~memgraph_tf.batch.link_scoring.LinkScorer` as
    a
    pipeline (module docstring). ``model``: a picklable zero-argument callable returning the
    :class:`~memgraph_tf.batch.link_scoring.LinkBackend` (called once per worker; it also gives the
    labels,
    key property and version, read once here on the launcher); exactly one of ``k`` or ``query``
    (with ``query_params``); ``relationship_type``, ``link_type``, ``batch_size`` (sources per
    page), ``overwrite``, ``at`` (the time a model with timed steps samples every node at;
    default "now") as for ``memgraph-tf score-links``; ``num_ranges`` key ranges.

    Guarantees: the relationships written are those of ``memgraph-tf score-links`` with the same
    model and graph, each once, also when the runner retries a bundle. The launcher checks the
    labels, relationship type and candidates before the pipeline is built (nothing written on a
    bad input)."""

    def __init__(
        self,
        graph: GraphSpec,
        model: Callable[[], LinkBackend],
        *,
        k: int | None = None,
        query: str | None = None,
        query_params: Mapping[str, Any] | None = None,
        relationship_type: str | None = None,
        link_type: str = DEFAULT_LINK_TYPE,
        batch_size: int = DEFAULT_BATCH_SIZE,
        num_ranges: int = DEFAULT_NUM_RANGES,
        overwrite: bool = False,
        at: int | None = None,
    ) -> None:
        super().__init__()
        self.graph, self.model = graph, model
        self.options = {
            "k": k,
            "query": query,
            "query_params": dict(query_params or {}),
            "relationship_type": relationship_type,
            "link_type": link_type,
            "batch_size": batch_size,
            "overwrite": overwrite,
            "at": at,
        }
        self.num_ranges = num_ranges
        #: The key ranges read (set when applied).
        self.plan: KeyRangePlan | None = None

    def expand(self, pbegin: Any) -> Any:
        handle = acquire(self.graph)
        backend = self.model()
        try:  # the launcher checks what it can before any worker writes
            scorer = LinkScorer(handle.source, backend, **self.options)
            scorer.table.check()
            if self.options["query"] is not None:
                scorer.prepare()
            selection = scorer.selection.sources()
        finally:
            backend.close()
            release(handle)
        scan = NodeScan(
            self.graph,
            selection,
            todo=not self.options["overwrite"],
            num_ranges=self.num_ranges,
            page_size=self.options["batch_size"],
        )
        self.plan = plan_key_ranges(scan)
        return (
            create_ranges(pbegin, self.plan)
            | "ReadSourcePages" >> beam.ParDo(ReadRangePagesFn(scan))
            | "ScoreLinkPages" >> beam.ParDo(_ScorePageFn(self.graph, self.model, self.options))
        )
