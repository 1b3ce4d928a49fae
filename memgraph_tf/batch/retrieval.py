"""Nearest nodes by embedding: from Memgraph's vector index when the graph has one on the
embedding property, else an exact search on the client (every embedding read once, a matrix
product); the ``similar`` query, and the exact top-k that recall@k of the index path is measured
against.

Similarities are the index metric's (Memgraph's ``SimilarityFromDistance``): for ``cos`` the
cosine, for ``ip`` ``1 - (1 - dot)`` = the dot product, for ``l2sq`` ``1 / (1 + squared
distance)``; the exact search ranks by the same metric, so both paths order nodes alike.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Collection, Sequence
from typing import Any

import numpy as np

from memgraph_tf.batch import vectors
from memgraph_tf.batch.commands import close_all, report_failure
from memgraph_tf.client.sources import EmbeddedSource, GraphSource, quote_name
from memgraph_tf.errors import ConfigurationError, GraphDataError

logger = logging.getLogger(__name__)

RETRIEVALS = ("auto", "index", "exact")
"""``auto``: the vector index when there is one on the property, else exact; ``index``: the index
(an error without one); ``exact``: the client-side search. (The same names as
:data:`memgraph_tf.batch.link_scoring.RETRIEVALS`.)"""


@dataclasses.dataclass
class Embeddings:
    """Every stored embedding of a label: ``keys`` (ascending) and ``matrix`` ``[n, D]``."""

    keys: np.ndarray
    matrix: np.ndarray

    def rows(self, keys: Sequence[int]) -> np.ndarray:
        """The embeddings of ``keys`` (each must be stored)."""
        pos = np.searchsorted(self.keys, keys)
        return self.matrix[pos]


def read_embeddings(
    source: GraphSource, label: str, prop: str, id_property: str | None
) -> Embeddings:
    """Every ``label`` node's embedding property ``prop`` (nodes without it are left out), keyed
    by ``id_property`` (None: the internal id). Raises :class:`GraphDataError` naming a node
    whose embedding has another width than the first."""
    if isinstance(source, EmbeddedSource):
        graph = source.graph
        rows = []
        with source.lock:
            for node in graph.nodes(label):
                z = graph.get_property(node, prop)
                if z is not None:
                    key = node if id_property is None else graph.get_property(node, id_property)
                    rows.append((key, z))
    else:
        key = "id(n)" if id_property is None else f"n.{quote_name(id_property, 'id_property')}"
        p = quote_name(prop, "property")
        found = source.read(
            f"MATCH (n:{quote_name(label, 'label')}) WHERE n.{p} IS NOT NULL "
            f"RETURN {key} AS key, n.{p} AS z"
        )
        rows = [(r["key"], r["z"]) for r in found]
    rows.sort(key=lambda r: r[0])
    if not rows:
        return Embeddings(np.zeros(0, np.int64), np.zeros((0, 0), np.float32))
    width = len(rows[0][1])
    for k, z in rows:
        if len(z) != width:
            raise GraphDataError(
                f"{prop}: node {k} has an embedding of {len(z)} values, node {rows[0][0]} of "
                f"{width}"
            )
    return Embeddings(
        np.asarray([k for k, _ in rows], np.int64), np.asarray([z for _, z in rows], np.float32)
    )


def similarities(query: np.ndarray, matrix: np.ndarray, metric: str) -> np.ndarray:
    """``[q, n]`` similarities of each query row to each matrix row under ``metric`` (``cos``,
    ``ip``, ``l2sq``), as the vector index reports them."""
    q = np.asarray(query, np.float32)
    m = np.asarray(matrix, np.float32)
    if metric == "cos":
        qn = q / np.maximum(np.linalg.norm(q, axis=1, keepdims=True), 1e-12)
        mn = m / np.maximum(np.linalg.norm(m, axis=1, keepdims=True), 1e-12)
        return qn @ mn.T
    if metric == "ip":
        return q @ m.T
    if metric == "l2sq":
        d = (q * q).sum(1)[:, None] - 2 * q @ m.T + (m * m).sum(1)[None, :]
        return 1.0 / (1.0 + np.maximum(d, 0.0))
    raise ConfigurationError(
        f"metric: expected cos, ip or l2sq for an exact search, got {metric!r}"
    )


def exact_top_k(
    query: np.ndarray,
    stored: Embeddings,
    k: int,
    metric: str,
    exclude: Sequence[Collection[int]] | None = None,
) -> list[list[tuple[int, float]]]:
    """Per query row, the ``k`` stored nodes of highest similarity (``(key, similarity)``,
    highest first; ties to the smaller key), leaving out the keys of ``exclude[i]``."""
    sims = similarities(query, stored.matrix, metric)
    position = {int(key): j for j, key in enumerate(stored.keys.tolist())}
    out = []
    for i, row in enumerate(sims):
        drop = [position[key] for key in (exclude[i] if exclude else ()) if key in position]
        row = row.astype(np.float64)
        row[drop] = -np.inf
        take = min(k, len(row) - len(drop))
        if take <= 0:
            out.append([])
            continue
        top = np.argpartition(-row, take - 1)[:take] if take < len(row) else np.arange(len(row))
        top = top[np.lexsort((top, -row[top]))]
        out.append([(int(stored.keys[j]), float(row[j])) for j in top])
    return out


def recall_at_k(found: Sequence[Sequence[int]], exact: Sequence[Sequence[int]]) -> float:
    """Mean over queries of ``|found_i & exact_i| / |exact_i|`` (queries with an empty exact
    answer left out; 1.0 when none is left)."""
    parts = [len(set(f) & set(e)) / len(e) for f, e in zip(found, exact) if e]
    return float(np.mean(parts)) if parts else 1.0


def resolve_index(
    source: GraphSource, label: str, prop: str, retrieval: str, dimension: int | None = None
) -> vectors.VectorIndex | None:
    """The vector index on ``:label(prop)`` that ``retrieval`` (:data:`RETRIEVALS`) uses: None
    for ``exact``, or ``auto`` without such an index; ``index`` without one raises
    :class:`ConfigurationError` naming the label and property. A dimension that is not
    ``dimension`` (when given) is refused (:func:`~memgraph_tf.batch.vectors.check_dimension`)."""
    if retrieval not in RETRIEVALS:
        raise ConfigurationError(
            f"retrieval: expected one of {', '.join(RETRIEVALS)}, got {retrieval!r}"
        )
    if retrieval == "exact":
        return None
    index = vectors.index_for(vectors.index_info(source), label, prop)
    if index is None and retrieval == "index":
        raise ConfigurationError(
            f"retrieval: no vector index on :{label}({prop}); create one (memgraph-tf embed "
            f"--create-index) or use exact retrieval"
        )
    if index is not None and dimension is not None:
        vectors.check_dimension(index, dimension, "the model's embeddings")
    return index


def similar_nodes(
    source: GraphSource,
    node: int,
    k: int,
    *,
    label: str,
    prop: str = "embedding",
    id_property: str | None = None,
    retrieval: str = "auto",
    metric: str = vectors.DEFAULT_METRIC,
    rerank: Any = None,
) -> list[tuple[int, float]]:
    """The ``k`` nodes of ``label`` nearest to node ``node`` (a key: ``id_property``, else the
    internal id) by their stored embeddings ``prop``, the node itself left out: ``(key,
    similarity)``, nearest first -- from the vector index on ``:label(prop)`` (``retrieval``:
    :data:`RETRIEVALS`; its metric) or an exact search (``metric``). ``rerank``: a
    :class:`~memgraph_tf.batch.link_scoring.LinkBackend` whose target encoder wrote ``prop``:
    the ``k`` candidates re-ordered by its link probability from ``node`` (its source encoder),
    the probability as the score. Raises :class:`ConfigurationError` naming the node when it
    has no embedding."""
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ConfigurationError(f"k: expected an integer >= 1, got {k!r}")
    index = resolve_index(source, label, prop, retrieval)
    own = _own_embedding(source, label, prop, id_property, node)
    if index is not None:
        [hits] = vectors.search_many(source, index.name, k + 1, [own], id_property, prop)
        found = [(key, sim) for key, sim, _ in hits if key != node][:k]
        stored_z = {key: z for key, _, z in hits}
    else:
        stored = read_embeddings(source, label, prop, id_property)
        [found] = exact_top_k(np.asarray([own]), stored, k, metric, [{node}])
        stored_z = {key: stored.rows([key])[0] for key, _ in found}
    if rerank is None or not found:
        return found
    nn, props, opts = rerank.sampling("src")
    z_source = rerank.embed("src", source.sample_typed([node], nn, props, opts))
    z_targets = np.asarray([stored_z[key] for key, _ in found], np.float32)
    probs = rerank.score(np.repeat(z_source, len(found), axis=0), z_targets)
    order = sorted(range(len(found)), key=lambda i: (-float(probs[i]), found[i][0]))
    return [(found[i][0], float(probs[i])) for i in order]


def _own_embedding(
    source: GraphSource, label: str, prop: str, id_property: str | None, node: int
) -> list[float]:
    if isinstance(source, EmbeddedSource):
        graph = source.graph
        with source.lock:
            if id_property is not None:
                internal = graph.find_nodes(label, id_property, node)
            else:
                internal = [node] if node in graph.nodes(label) else []
            z = graph.get_property(internal[0], prop) if internal else None
    else:
        key = "id(n)" if id_property is None else f"n.{quote_name(id_property, 'id_property')}"
        rows = source.read(
            f"MATCH (n:{quote_name(label, 'label')}) WHERE {key} = $node "
            f"RETURN n.{quote_name(prop, 'property')} AS z",
            {"node": node},
        )
        z = rows[0]["z"] if rows else None
    if z is None:
        raise ConfigurationError(
            f"node: :{label} node {node} has no embedding {prop!r} (run memgraph-tf embed first, "
            f"or check the id)"
        )
    return [float(x) for x in z]


def add_arguments(p: Any) -> None:
    """The options of ``memgraph-tf similar``."""
    p.add_argument("--graph", required=True, help="bolt://HOST:PORT or embedded:NAME (as classify)")
    p.add_argument("--label", required=True, help="the nodes' label")
    p.add_argument("--node-id", type=int, required=True, help="the node whose neighbours to find")
    p.add_argument("-k", type=int, default=10, help="how many nodes (default 10)")
    p.add_argument("--id-property", default=None, help="the node key (default the internal id)")
    p.add_argument(
        "--property", default="embedding", help="the embedding property (default embedding)"
    )
    p.add_argument("--retrieval", choices=RETRIEVALS, default="auto", help="index, exact or auto")
    p.add_argument(
        "--metric", default=vectors.DEFAULT_METRIC, help="the exact search's metric (default cos)"
    )
    p.add_argument(
        "--rerank-model",
        default=None,
        metavar="BUNDLE_DIR",
        help="a link bundle: re-rank the k nodes by its link probability from the node",
    )


def run_cli(args: Any, open_graph: Any, open_link_bundle: Any) -> int:
    """``memgraph-tf similar``: one ``key<TAB>score`` line per node, nearest first; one line on
    failure, exit codes from :data:`memgraph_tf.errors.EXIT_CODES` (2: a bad option, label,
    node or bundle). ``open_graph`` opens ``--graph``, ``open_link_bundle`` loads
    ``--rerank-model`` (a :class:`~memgraph_tf.batch.link_scoring.BundleLinkBackend`)."""
    source = backend = None
    try:
        source = open_graph(args.graph)
        if args.rerank_model is not None:
            backend = open_link_bundle(args.rerank_model)
        found = similar_nodes(
            source,
            args.node_id,
            args.k,
            label=args.label,
            prop=args.property,
            id_property=args.id_property,
            retrieval=args.retrieval,
            metric=args.metric,
            rerank=backend,
        )
    except (Exception, KeyboardInterrupt) as exc:  # noqa: BLE001 -- errors.command_failure: one line, an exit code
        return report_failure("similar", exc, log=logger)
    finally:
        close_all(backend, source)
    for key, score in found:
        print(f"{key}\t{score:.6f}")
    return 0


__all__ = [
    "RETRIEVALS",
    "Embeddings",
    "add_arguments",
    "exact_top_k",
    "read_embeddings",
    "recall_at_k",
    "resolve_index",
    "run_cli",
    "similar_nodes",
    "similarities",
]
