"""The graph side of batch link scoring: which source nodes a run scores, their existing
neighbours, the candidates a Cypher query names, and how predicted links go back -- the one home of
the predicted relationship's type and property names, shared by ``memgraph-tf score-links``
(:mod:`memgraph_tf.batch.links`) and the Beam transforms (:mod:`memgraph_tf.beam`), over any
:class:`~memgraph_tf.client.sources.GraphSource`.

* **What is written** (:func:`link_property_names`): a scored pair ``(s, t)`` becomes one
  relationship ``(s)-[:TYPE {score, model_version}]->(t)`` (``TYPE`` default
  :data:`DEFAULT_LINK_TYPE`, ``PREDICTED_LINK``; :data:`SCORE_PROPERTY` the link probability,
  :data:`VERSION_PROPERTY` the model version), and each source whose links are all written gets
  the progress marker ``<type in lower case>_version`` = the model version (``PREDICTED_LINK`` ->
  ``predicted_link_version``).
* **Idempotent**: :meth:`LinkTable.write` MERGEs on ``(s, TYPE, t)`` and sets the properties, so
  writing a batch twice (a rerun, a retried Beam bundle) leaves one relationship per pair.
* **Resumable**: the sources are paged by key (:class:`~memgraph_tf.client.graphs.NodeTable`:
  keyset pages, shards, the guard), and with ``todo`` only those whose marker is not this version:
  a rerun skips sources already done. Links are written before the marker, so a kill between the
  two repeats that batch, which MERGE keeps exact.

No TensorFlow and no serving import: the client layer.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from memgraph_tf.client.errors import ConfigurationError
from memgraph_tf.client.graphs import (
    PARAM_PREFIX,
    NodeSelection,
    NodeTable,
    Shard,
    key_index,
    property_names,
)
from memgraph_tf.client.sources import BoltSource, EmbeddedSource, GraphSource, quote_name

#: The relationship type scored links are written as unless told otherwise.
DEFAULT_LINK_TYPE = "PREDICTED_LINK"
#: The link's probability, on the written relationship.
SCORE_PROPERTY = "score"
#: The model version that scored the link, on the written relationship.
VERSION_PROPERTY = "model_version"
#: The two columns a candidates query returns.
CANDIDATE_COLUMNS = ("source_id", "target_id")

Link = tuple[int, int, float]
"""``(source key, target key, score)``."""


def link_property_names(link_type: str = DEFAULT_LINK_TYPE) -> tuple[str, str, str]:
    """``(score, model version, source marker)`` for links of ``link_type``: ``score`` and
    ``model_version`` on each relationship, ``<link_type lower case>_version`` on each source
    node whose links are written. The one naming rule; every writer and reader uses it."""
    quote_name(link_type, "link_type")
    return SCORE_PROPERTY, VERSION_PROPERTY, property_names(link_type.lower())[2]


def check_candidates(rows: Sequence[Mapping[str, Any]]) -> list[tuple[int, int]]:
    """The ``(source_id, target_id)`` pairs of a candidates query's ``rows`` (dicts), in order;
    raises :class:`ConfigurationError` naming the columns when a row has others than
    :data:`CANDIDATE_COLUMNS`, and the row, column and value when an id is not an integer."""
    pairs: list[tuple[int, int]] = []
    for i, row in enumerate(rows):
        if set(row) != set(CANDIDATE_COLUMNS):
            raise ConfigurationError(
                f"candidates query: expected the columns {', '.join(CANDIDATE_COLUMNS)}, got "
                f"{', '.join(map(str, row)) or 'none'} (RETURN s.id AS source_id, t.id AS "
                f"target_id)"
            )
        for column in CANDIDATE_COLUMNS:
            value = row[column]
            if not isinstance(value, int) or isinstance(value, bool):
                raise ConfigurationError(
                    f"candidates query: row {i}: {column}: expected an integer node id, got "
                    f"{type(value).__name__} {value!r}"
                )
        pairs.append((row["source_id"], row["target_id"]))
    return pairs


@dataclasses.dataclass(frozen=True)
class LinkSelection:
    """What a link-scoring run reads and writes: the ``source_label`` and ``target_label`` nodes
    (keyed by ``id_property``, else internal ids), ``relationship_type`` (the type the model
    predicts: a source's existing neighbours through it are no top-k candidates; None: no
    exclusion), the written ``link_type`` (:func:`link_property_names`), the model ``version`` and
    the :class:`~memgraph_tf.client.graphs.Shard` of the sources.

    Guarantees: every name is quotable and ``version`` an integer, else
    :class:`ConfigurationError` at construction; picklable (the Beam workers get it)."""

    source_label: str
    target_label: str
    version: int
    id_property: str | None = None
    relationship_type: str | None = None
    link_type: str = DEFAULT_LINK_TYPE
    shard: Shard = dataclasses.field(default_factory=Shard)

    def __post_init__(self) -> None:
        for name in ("source_label", "target_label", "link_type"):
            quote_name(getattr(self, name), name)
        for name in ("id_property", "relationship_type"):
            if getattr(self, name) is not None:
                quote_name(getattr(self, name), name)
        if not isinstance(self.version, int) or isinstance(self.version, bool):
            raise ConfigurationError(
                f"version: expected an integer model version, got {self.version!r}"
            )
        if not isinstance(self.shard, Shard):
            raise ConfigurationError(
                f"shard: expected a Shard, got {type(self.shard).__name__} (Shard.parse('i/N'))"
            )

    def sources(self) -> NodeSelection:
        """The source nodes as a :class:`~memgraph_tf.client.graphs.NodeSelection` whose version
        property is the link marker (for paging with ``todo``)."""
        return NodeSelection(
            label=self.source_label,
            id_property=self.id_property,
            write_property=self.link_type.lower(),
            version=self.version,
            shard=self.shard,
        )


class LinkTable:
    """A graph's source and target nodes for one :class:`LinkSelection`, and the write-back of
    their links, on a Bolt or an embedded source.

    Guarantees: :attr:`sources` pages the selected sources (keyset, ascending, guarded; with
    ``todo`` those whose marker is not this version); :meth:`write` sets ``score`` and
    ``model_version`` on exactly one ``TYPE`` relationship per pair (MERGE; one write transaction
    per call on Bolt, under the source's lock when embedded) and returns how many pairs it wrote;
    :meth:`mark_done` sets the marker. :meth:`check` refuses (:class:`ConfigurationError`) a label
    without nodes and a relationship type the graph lacks, before anything is written."""

    def __init__(self, source: GraphSource, selection: LinkSelection) -> None:
        self.source = source
        self.selection = s = selection
        self.score_property, self.version_property, self.marker = link_property_names(s.link_type)
        self.embedded = isinstance(source, EmbeddedSource)
        if not self.embedded and not isinstance(source, BoltSource):
            raise ConfigurationError(
                f"source: expected a BoltSource or an EmbeddedSource, got {type(source).__name__}"
            )
        self._source_index = (
            key_index(source, s.source_label, s.id_property) if self.embedded else None
        )
        self.sources = NodeTable(source, s.sources(), index=self._source_index)
        self._target_index: tuple[list[int], dict[int, int]] | None = None
        if not self.embedded:
            p = f"n.{quote_name(s.id_property, 'id_property')}" if s.id_property else "id(n)"
            self._key = p
            self._s = quote_name(s.source_label, "source_label")
            self._t = quote_name(s.target_label, "target_label")

    def _cypher_key(self, var: str) -> str:
        return self._key.replace("n.", f"{var}.", 1) if self._key.startswith("n.") else f"id({var})"

    # -- nodes ----------------------------------------------------------------------------------
    def target_keys(self) -> list[int]:
        """Every target node's key, ascending (nodes of the target label with an integer key)."""
        if self.embedded:
            return list(self._targets()[0])
        return self.source.node_ids(
            label=self.selection.target_label, id_property=self.selection.id_property
        )

    def source_keys(self) -> list[int]:
        """Every source node's key (all shards, done or not), ascending."""
        if self.embedded:
            return list(self._source_index[0])
        return self.source.node_ids(
            label=self.selection.source_label, id_property=self.selection.id_property
        )

    def _targets(self) -> tuple[list[int], dict[int, int]]:
        s = self.selection
        if self._target_index is None:
            if s.target_label == s.source_label:
                self._target_index = self._source_index
            else:
                self._target_index = key_index(self.source, s.target_label, s.id_property)
        return self._target_index

    def check(self) -> None:
        """Raises :class:`ConfigurationError` naming what the graph lacks: a label without nodes,
        the ``relationship_type`` with no relationship between the two labels."""
        s = self.selection
        for role, label in (("source_label", s.source_label), ("target_label", s.target_label)):
            if self.embedded:
                found = bool(self.source.graph.nodes(label))
            else:
                rows = self.source.read(f"MATCH (n:{quote_name(label, role)}) RETURN n LIMIT 1")
                found = bool(rows)
            if not found:
                raise ConfigurationError(f"{role}: the graph has no :{label} nodes")
        if s.relationship_type is None:
            return
        if self.embedded:
            sources = set(self._source_index[1].values())
            targets = set(self._targets()[1].values())
            with self.source.lock:
                found = any(
                    (a in sources and b in targets) or (b in sources and a in targets)
                    for a, b, _ in self.source.graph.edges(s.relationship_type)
                )
        else:
            rows = self.source.read(
                f"MATCH (a:{self._s})-[r:{quote_name(s.relationship_type, 'relationship_type')}]-"
                f"(b:{self._t}) RETURN 1 AS one LIMIT 1"
            )
            found = bool(rows)
        if not found:
            raise ConfigurationError(
                f"relationship_type: the graph has no :{s.relationship_type} relationship "
                f"between :{s.source_label} and :{s.target_label} nodes"
            )

    def neighbours(self, keys: Sequence[int]) -> dict[int, set[int]]:
        """Source key -> the keys of the target nodes joined to it by ``relationship_type`` in
        either direction (empty sets without a relationship type)."""
        out: dict[int, set[int]] = {k: set() for k in keys}
        s = self.selection
        if s.relationship_type is None or not keys:
            return out
        if self.embedded:
            graph = self.source.graph
            internal = self._source_index[1]
            target_internal = self._targets()[1]
            key_of = {i: k for k, i in target_internal.items()}
            with self.source.lock:
                for key in keys:
                    found = graph.neighbours(internal[key], [s.relationship_type])
                    out[key] = {key_of[i] for i in found if i in key_of}
            return out
        rel = quote_name(s.relationship_type, "relationship_type")
        rows = self.source.read(
            f"UNWIND $keys AS k MATCH (s:{self._s})-[:{rel}]-(t:{self._t}) "
            f"WHERE {self._cypher_key('s')} = k RETURN k AS s, {self._cypher_key('t')} AS t",
            {"keys": list(keys)},
        )
        for row in rows:
            out[row["s"]].add(row["t"])
        return out

    # -- write-back -----------------------------------------------------------------------------
    def write(self, links: Sequence[Link]) -> int:
        """MERGEs ``(s)-[:TYPE]->(t)`` for each ``(s, t, score)`` and sets its ``score`` and
        ``model_version`` (this selection's); returns the number of links written (pairs whose
        ends match no source or target node are not)."""
        if not links:
            return 0
        s = self.selection
        version = s.version
        if self.embedded:
            graph = self.source.graph
            src_internal = self._source_index[1]
            dst_internal = self._targets()[1]
            written = 0
            with self.source.lock:
                for sk, tk, score in links:
                    a, b = src_internal.get(sk), dst_internal.get(tk)
                    if a is None or b is None:
                        continue
                    graph.merge_edge(
                        a,
                        b,
                        s.link_type,
                        {self.score_property: float(score), self.version_property: version},
                    )
                    written += 1
            return written
        link = quote_name(s.link_type, "link_type")
        rows = [{"s": a, "t": b, "p": float(p)} for a, b, p in links]
        query = (
            f"UNWIND $rows AS r MATCH (s:{self._s}) WHERE {self._cypher_key('s')} = r.s "
            f"MATCH (t:{self._t}) WHERE {self._cypher_key('t')} = r.t "
            f"MERGE (s)-[l:{link}]->(t) SET l.{quote_name(self.score_property, 'score')} = r.p, "
            f"l.{quote_name(self.version_property, 'model_version')} = ${PARAM_PREFIX}version "
            f"RETURN count(l) AS written"
        )
        result = self.source.write(query, {"rows": rows, f"{PARAM_PREFIX}version": version})
        return int(result[0]["written"]) if result else 0

    def mark_done(self, keys: Sequence[int]) -> None:
        """Sets the marker (this version) on the sources ``keys``: their links are written."""
        if not keys:
            return
        version = self.selection.version
        if self.embedded:
            internal = self._source_index[1]
            with self.source.lock:
                for key in keys:
                    self.source.graph.set_property(internal[key], self.marker, version)
            return
        self.source.write(
            f"UNWIND $keys AS k MATCH (s:{self._s}) WHERE {self._cypher_key('s')} = k "
            f"SET s.{quote_name(self.marker, 'marker')} = ${PARAM_PREFIX}version",
            {"keys": list(keys), f"{PARAM_PREFIX}version": version},
        )

    def read_links(self) -> list[tuple[int, int, float, int]]:
        """Every written link ``(source key, target key, score, model_version)`` between the two
        labels, one row per relationship (so a pair written twice shows twice), sorted."""
        s = self.selection
        if self.embedded:
            src_keys = {i: k for k, i in self._source_index[1].items()}
            dst_keys = {i: k for k, i in self._targets()[1].items()}
            with self.source.lock:
                rows = [
                    (
                        src_keys[a],
                        dst_keys[b],
                        props.get(self.score_property),
                        props.get(self.version_property),
                    )
                    for a, b, props in self.source.graph.edges(s.link_type)
                    if a in src_keys and b in dst_keys
                ]
            return sorted(rows)
        link = quote_name(s.link_type, "link_type")
        found = self.source.read(
            f"MATCH (s:{self._s})-[l:{link}]->(t:{self._t}) RETURN {self._cypher_key('s')} AS s, "
            f"{self._cypher_key('t')} AS t, l.{self.score_property} AS p, "
            f"l.{self.version_property} AS v"
        )
        return sorted((r["s"], r["t"], r["p"], r["v"]) for r in found)


__all__ = [
    "CANDIDATE_COLUMNS",
    "DEFAULT_LINK_TYPE",
    "SCORE_PROPERTY",
    "VERSION_PROPERTY",
    "Link",
    "LinkSelection",
    "LinkTable",
    "check_candidates",
    "link_property_names",
]
