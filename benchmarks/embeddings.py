"""Node embeddings and retrieval from the vector index, two measurements:

**precision** -- on Cora (GraphSAGE, Planetoid split) and the generated shop graph (typed
GraphSAGE on :User): train, export, ``embed_nodes`` every node (with the vector index), then the
10 nearest nodes of every labelled node by cosine (exact search, and the vector index): the share
of them in the node's own class (precision@10). Baseline, same run: random embeddings of the same
shape (chance: the sum of the squared class shares).

**links** -- ``score-links`` top-10 with candidates from the vector index on the targets'
embeddings (``embed --role target --create-index --metric ip``, timed apart: written once, reused
by every later run) against the exact top-10 (every target embedded and scored), same model
(an untrained LinkPredictor: recall and speed do not depend on its weights), on Cora (every
paper a source) and on a generated graph of ``--nodes`` nodes (the first ``--sources`` sources by
key): recall@10 of the index path against the exact one, and the ratio of their times.

    .venv/bin/python benchmarks/embeddings.py                     # both, 100k nodes
    .venv/bin/python benchmarks/embeddings.py --part links --nodes 20000
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

K = 10


def _precision(neighbours, labels) -> float:
    import numpy as np

    return float(np.mean([np.mean([labels[t] == labels[s] for t in n]) for s, n in neighbours]))


def _knn_precision(stored, labels, index_name, source, id_property):
    """(exact precision@10, index precision@10, index recall@10 vs exact, random precision@10)."""
    import numpy as np

    from memgraph_tf.batch import retrieval, vectors

    keys = [int(k) for k in stored.keys if labels.get(int(k), -1) >= 0]
    query = stored.rows(keys)
    exact = retrieval.exact_top_k(query, stored, K, "cos", [{k} for k in keys])
    exact_ids = [[t for t, _ in row] for row in exact]
    hits = vectors.search_many(source, index_name, K + 1, query.tolist(), id_property)
    found = [[t for t, _, _ in row if t != k][:K] for k, row in zip(keys, hits)]
    rng = np.random.default_rng(0)
    noise = retrieval.Embeddings(stored.keys, rng.normal(size=stored.matrix.shape))
    rand = retrieval.exact_top_k(noise.rows(keys), noise, K, "cos", [{k} for k in keys])
    return (
        _precision(zip(keys, exact_ids), labels),
        _precision(zip(keys, found), labels),
        retrieval.recall_at_k(found, exact_ids),
        _precision(zip(keys, ([t for t, _ in row] for row in rand)), labels),
    )


def _chance(labels) -> float:
    import collections

    counts = collections.Counter(v for v in labels.values() if v >= 0)
    total = sum(counts.values())
    return sum((c / total) ** 2 for c in counts.values())


def precision_cora(base: str, steps: int) -> None:
    from memgraph_tf import datasets
    from memgraph_tf.batch import embed_nodes, retrieval
    from memgraph_tf.client import PLANETOID_RECIPE, EmbeddedSource, train_graphsage
    from memgraph_tf.serving import export_bundle

    data = datasets.load_dataset("cora")
    source = EmbeddedSource(datasets.planetoid_graph("cora"))
    start = time.perf_counter()
    result = train_graphsage(
        source,
        data.ids("train"),
        data.ids("val"),
        class_names=data.class_names,
        seed=0,
        progress=False,
        **{**PLANETOID_RECIPE, "steps": steps},
    )
    print(f"cora: trained {steps} steps in {time.perf_counter() - start:.1f} s")
    export_bundle(result.model, base, "cora", 1, use_op=True, layout="sparse", warmup=False)
    summary = embed_nodes(source, f"{base}/cora", create_index=True, label="Paper")
    print(f"cora: {summary.text()}")
    stored = retrieval.read_embeddings(source, "Paper", "embedding", None)
    labels = {i: int(c) for i, c in enumerate(data.labels)}
    exact, by_index, recall, rand = _knn_precision(stored, labels, "embedding_Paper", source, None)
    print(
        f"cora precision@10 ({len(stored.keys)} nodes, dimension {stored.matrix.shape[1]}): "
        f"embeddings {exact:.3f} exact / {by_index:.3f} vector index (recall@10 of the index "
        f"{recall:.3f}); random embeddings {rand:.3f} (chance {_chance(labels):.3f}): "
        f"{exact / rand:.1f}x random"
    )


def precision_shop(base: str, steps: int) -> None:
    from memgraph_tf import typed_datasets
    from memgraph_tf.batch import embed_nodes, retrieval
    from memgraph_tf.client import EmbeddedSource
    from memgraph_tf.client.typed_graphsage import train_typed_graphsage
    from memgraph_tf.demo import SHOP_NUM_NEIGHBORS, SHOP_OPTIONS, SHOP_PROPERTIES, SHOP_RECIPE
    from memgraph_tf.serving import export_bundle

    data = typed_datasets.demo_shop_graph()
    graph, _ = typed_datasets.typed_embedded_graph(data)
    source = EmbeddedSource(graph)
    start = time.perf_counter()
    result = train_typed_graphsage(
        source,
        data.target_label,
        SHOP_NUM_NEIGHBORS,
        SHOP_PROPERTIES,
        options=SHOP_OPTIONS,
        seed=0,
        class_names=list(data.class_names),
        progress=False,
        **{**SHOP_RECIPE, "steps": steps},
    )
    print(f"shop: trained {steps} steps in {time.perf_counter() - start:.1f} s")
    export_bundle(
        result.model, base, "shop", 1, use_op=True, sample_options=SHOP_OPTIONS, warmup=False
    )
    summary = embed_nodes(source, f"{base}/shop", create_index=True)
    print(f"shop: {summary.text()}")
    stored = retrieval.read_embeddings(source, data.target_label, "embedding", "id")
    labels = {i: int(c) for i, c in enumerate(data.labels)}
    exact, by_index, recall, rand = _knn_precision(
        stored, labels, f"embedding_{data.target_label}", source, "id"
    )
    print(
        f"shop precision@10 ({len(stored.keys)} :{data.target_label} nodes, dimension "
        f"{stored.matrix.shape[1]}): embeddings {exact:.3f} exact / {by_index:.3f} vector index "
        f"(recall@10 of the index {recall:.3f}); random embeddings {rand:.3f} (chance "
        f"{_chance(labels):.3f}): {exact / rand:.1f}x random"
    )


def links(base: str, name: str, graph, label: str, rel: str, sources: int | None) -> None:
    """Top-10 of the first ``sources`` sources (all: None) by exact and by index retrieval, on
    ``graph`` (links are scored, not written: both paths are timed from ``prepare`` to the last
    page's links)."""
    import keras

    from memgraph_tf.batch import embed_nodes, retrieval
    from memgraph_tf.batch.link_scoring import BundleLinkBackend, LinkScorer
    from memgraph_tf.client import EmbeddedSource
    from memgraph_tf.client.link_prediction import LinkPredictor
    from memgraph_tf.serving.export_links import export_link_bundle

    width = len(graph.get_property(0, "features"))
    keras.utils.set_random_seed(0)
    model = LinkPredictor(
        label, {f"(:{label})-[:{rel}]-(:{label})": [10, 5]}, {label: width}, hidden_units=64
    ).ensure_built()
    model.properties = {label: ["features"]}
    export_link_bundle(model, base, name, 1, decoder="op", sample_options={"seed": 0}, warmup=False)
    bundle = f"{base}/{name}"
    source = EmbeddedSource(graph)
    n = len(graph.nodes(label))
    keys = list(range(n if sources is None else min(sources, n)))

    def run(retrieval_name):
        with BundleLinkBackend(bundle) as backend:
            backend.embed("src", source.sample_typed([0], *backend.sampling("src")))  # traced
            scorer = LinkScorer(
                source, backend, k=K, relationship_type=rel, retrieval=retrieval_name
            )
            start = time.perf_counter()
            scorer.prepare()
            out: dict[int, list[int]] = {}
            pairs = 0
            for lo in range(0, len(keys), 256):
                page_links, page_pairs = scorer.score_page(keys[lo : lo + 256])
                pairs += page_pairs
                for s, t, _ in page_links:
                    out.setdefault(s, []).append(t)
            return time.perf_counter() - start, pairs, out

    exact_s, exact_pairs, exact = run("exact")
    start = time.perf_counter()
    written = embed_nodes(source, bundle, role="target", create_index=True, metric="ip")
    embed_s = time.perf_counter() - start
    index_s, index_pairs, found = run("index")
    recall = retrieval.recall_at_k(
        [found.get(s, []) for s in keys], [exact.get(s, []) for s in keys]
    )
    print(
        f"{name}: {n:,} nodes, {len(keys):,} sources, top-{K}: exact {exact_s:.1f} s "
        f"({exact_pairs:,} pairs scored), vector index {index_s:.1f} s ({index_pairs:,} pairs "
        f"scored) = {exact_s / index_s:.1f}x faster; recall@10 {recall:.3f}; the targets' "
        f"embeddings written once beforehand in {embed_s:.1f} s ({written.nodes_per_s:,.0f} "
        f"nodes/s)"
    )


def generated(n: int, dim: int = 32, degree: float = 8.0, seed: int = 0):
    """A random graph of ``n`` :Node nodes (``features`` of ``dim`` normal values, ~``degree``
    EDGE relationships per node)."""
    import numpy as np

    from memgraph_tf.embedded import EmbeddedGraph

    rng = np.random.default_rng(seed)
    features = rng.standard_normal((n, dim)).astype(np.float32).tolist()
    m = int(n * degree / 2)
    edges = zip(rng.integers(0, n, size=m).tolist(), rng.integers(0, n, size=m).tolist())
    return EmbeddedGraph.from_edge_list(
        edges, num_nodes=n, label="Node", node_properties={"features": features}
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--part", choices=("precision", "links", "all"), default="all")
    parser.add_argument("--nodes", type=int, default=100_000)
    parser.add_argument("--sources", type=int, default=1000)
    parser.add_argument("--cora-steps", type=int, default=100)
    parser.add_argument("--shop-steps", type=int, default=120)
    args = parser.parse_args()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    print(f"load average before: {os.getloadavg()}")
    with tempfile.TemporaryDirectory() as base:
        if args.part in ("precision", "all"):
            precision_cora(base, args.cora_steps)
            precision_shop(base, args.shop_steps)
        if args.part in ("links", "all"):
            from memgraph_tf import datasets

            cora = datasets.planetoid_graph("cora")
            links(base, "cora_links", cora, "Paper", "CITES", None)
            big = generated(args.nodes)
            links(base, f"generated_{args.nodes}", big, "Node", "EDGE", args.sources)
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
