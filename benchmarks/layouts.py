"""Body bytes per Cora node for each sample layout, and the same scores from each.

``body_bytes_per_node()`` samples every Cora node's neighbourhood once per layout (fanouts 10, 10,
the ``features`` property, ``tf_features.sample_per_node`` through the embedded runtime, one seed
for all layouts) and prints the size of the TF Serving REST ``:classify`` body that carries it
(``{"examples": [{"blob": {"b64": ...}}]}``) for dense, compact and sparse: node 0, and the median,
90th percentile and maximum over the nodes measured; with ratios dense / layout.

``same_scores()`` exports an (untrained, seeded) GraphSAGE as op-free bundles in each layout and
checks that their ``serving_default`` scores for the same sampled neighbourhoods are bitwise equal.

``typed_body_bytes_per_node()`` (``--typed USERS``) does the same for typed blobs
(``tf_features.sample_typed``) of shop-graph users.

Usage: .venv/bin/python benchmarks/layouts.py [--nodes N] [--no-scores] [--typed USERS]
"""

from __future__ import annotations

import argparse
import base64
import json
import logging
import statistics
import tempfile

import numpy as np

from memgraph_tf import blob

log = logging.getLogger("benchmarks.layouts")

FANOUTS = [10, 10]
LAYOUTS = ("dense", "compact", "sparse")


def cora_graph():
    from memgraph_tf.datasets import planetoid_graph

    return planetoid_graph("cora")


def blobs_per_node(graph, node_ids: list[int], layout: str, seed: int = 7) -> list[bytes]:
    rows = graph.call(
        "tf_features.sample_per_node",
        node_ids,
        FANOUTS,
        ["features"],
        {"seed": seed, "layout": layout, "direction": "both"},
    )
    return [blob.b64decode(r["blob"]) for r in rows]


def body_bytes(data: bytes) -> int:
    """The REST ``:classify`` body for one node: its blob as ``{"b64": standard base64}``."""
    body = {"examples": [{"blob": {"b64": base64.b64encode(data).decode("ascii")}}]}
    return len(json.dumps(body, separators=(",", ":")).encode())


def print_size_rows(sizes: dict[str, list[int]], first: str, ratio_digits: int) -> None:
    """Prints a table of body bytes per layout: the first body's (column ``first``), the median,
    p90 and max, and the dense median over the layout's median (``ratio_digits`` decimals)."""
    dense = statistics.median(sizes["dense"])
    print(f"  {'layout':8s} {first:>9s} {'median':>9s} {'p90':>9s} {'max':>9s}  dense/median")
    for layout, s in sizes.items():
        p90 = float(np.percentile(s, 90))
        print(
            f"  {layout:8s} {s[0]:9d} {statistics.median(s):9.0f} {p90:9.0f} {max(s):9d}  "
            f"{dense / statistics.median(s):8.{ratio_digits}f}x"
        )


def body_bytes_per_node(nodes: int | None = None, graph=None) -> dict[str, list[int]]:
    """Prints and returns the body bytes per node for each layout (``nodes``: the first N nodes,
    default all; dense on at most 64, its size being the same for every node)."""
    graph = graph if graph is not None else cora_graph()
    ids = list(range(graph.node_count if nodes is None else min(nodes, graph.node_count)))
    sizes = {}
    for layout in LAYOUTS:
        part = ids[:64] if layout == "dense" else ids
        sizes[layout] = [body_bytes(b) for b in blobs_per_node(graph, part, layout)]
    print(
        f"REST :classify body bytes per Cora node, fanouts {tuple(FANOUTS)}, {len(ids)} nodes "
        f"(dense: {len(sizes['dense'])}, all the same size)"
    )
    print_size_rows(sizes, "node 0", ratio_digits=1)
    return sizes


def same_scores(nodes: int = 64, graph=None) -> None:
    """Exports op-free GraphSAGE bundles in each layout and compares their scores on the same
    neighbourhoods (raises AssertionError if any differs)."""
    import tensorflow as tf

    from memgraph_tf.client.graphsage import GraphSAGE
    from memgraph_tf.serving.export import export_bundle

    graph = graph if graph is not None else cora_graph()
    ids = list(range(nodes))
    model = GraphSAGE(
        FANOUTS,
        1433,
        7,
        hidden_units=64,
        normalize_features=True,
        normalize_hidden=True,
        class_names=[f"c{i}" for i in range(7)],
    )
    model.ensure_built()
    scores = {}
    with tempfile.TemporaryDirectory() as base:
        for layout in LAYOUTS:
            info = export_bundle(
                model,
                base,
                f"cora_{layout}",
                1,
                use_op=False,
                layout=layout,
                sample_options={"seed": 7, "direction": "both"},
                warmup=False,
            )
            loaded = tf.saved_model.load(str(info.path))
            blobs = tf.constant(blobs_per_node(graph, ids, layout))
            scores[layout] = loaded.signatures["serving_default"](blobs=blobs)["scores"].numpy()
    for layout in LAYOUTS[1:]:
        assert scores[layout].tobytes() == scores["dense"].tobytes(), (
            f"{layout} scores differ from dense"
        )
    top = scores["dense"].argmax(axis=1)
    print(
        f"scores of {nodes} Cora nodes, op-free bundles: compact and sparse bitwise equal to dense "
        f"(top classes {np.bincount(top, minlength=7).tolist()})"
    )


TYPED_NN = {  # benchmarks/typed_accuracy.py's typed spec
    "(:User)-[:BOUGHT]->(:Product)": [5, 0],
    "(:User)-[:FOLLOWS]->(:User)": [10, 0],
    "(:Product)-[:IN]->(:Category)": [0, 1],
}
TYPED_PROPS = {"User": ["features"], "Product": ["features"], "Category": ["features"]}


def typed_body_bytes_per_node(users: int = 1000) -> dict[str, list[int]]:
    """Prints and returns the REST ``:classify`` body bytes of one user's typed blob per layout
    on the generated shop graph (``memgraph_tf.typed_datasets.shop_graph()``, its defaults: 12,000
    users), spec :data:`TYPED_NN`: one ``sample_typed`` call for the first ``users`` users cut
    into each user's own blob as the serving fetcher does (byte for byte the user sampled alone);
    ratios dense (the baseline) / layout."""
    from memgraph_tf.client import EmbeddedSource
    from memgraph_tf.ops.sample_decoding import split_typed_blob
    from memgraph_tf.typed_datasets import shop_graph, typed_embedded_graph
    from memgraph_tf.typed_sampling import TypedSamplingSpec

    graph = shop_graph()
    embedded, _ = typed_embedded_graph(graph)
    source = EmbeddedSource(embedded)
    spec = TypedSamplingSpec.from_num_neighbors("User", TYPED_NN)
    ids = list(range(min(users, graph.node_sets["User"].size)))
    sizes, whole = {}, {}
    for layout in LAYOUTS:
        opts = {"label": "User", "id_property": "id", "seed": 7, "layout": layout}
        raw = source.sample_typed(ids, TYPED_NN, TYPED_PROPS, opts)
        whole[layout] = len(raw)
        sizes[layout] = [body_bytes(b) for b in split_typed_blob(raw, len(ids), spec, layout)]
    widths = {label: ns.width for label, ns in graph.node_sets.items()}
    print(
        f"REST :classify body bytes per shop user (typed blob), {len(ids)} users, "
        f"widths {widths}, spec {TYPED_NN}"
    )
    print_size_rows(sizes, "user 0", ratio_digits=2)
    print(f"  one blob of all {len(ids)} users (a training batch), blob bytes per user:")
    for layout, size in whole.items():
        print(f"  {layout:8s} {size / len(ids):9.0f}  dense/layout {whole['dense'] / size:.2f}x")
    return sizes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--nodes", type=int, default=None, help="measure the first N nodes (default: all)"
    )
    parser.add_argument("--no-scores", action="store_true", help="skip the bundle score comparison")
    parser.add_argument(
        "--typed",
        type=int,
        metavar="USERS",
        default=None,
        help="measure typed blobs of the first USERS users of the shop graph instead of Cora",
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    if args.typed is not None:
        typed_body_bytes_per_node(args.typed)
        return
    graph = cora_graph()
    body_bytes_per_node(args.nodes, graph)
    if not args.no_scores:
        same_scores(graph=graph)


if __name__ == "__main__":
    main()
