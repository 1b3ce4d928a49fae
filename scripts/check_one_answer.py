"""One answer per node: every node of a dataset classified by ``node_id`` over REST
(several passes) and gRPC on the local server, and by batch inference (``memgraph_tf.batch``),
with one bundle that stores no sampling seed and default settings everywhere. Exits 0 when every
path gives every node the same top class and the same float32 score (and REST/gRPC the same whole
score vector), 1 naming the first nodes that differ.

    .venv/bin/python scripts/check_one_answer.py                 # Cora, 5 REST passes
    .venv/bin/python scripts/check_one_answer.py --dataset citeseer --passes 2

Too long for the test suite (about a minute on Cora); tests/serving/test_sampling_seed.py checks
the same rule on a small graph in every run.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time


def _scores(results: list[list[tuple[str, float]]]) -> list[dict[str, float]]:
    import numpy as np

    return [{label: float(np.float32(score)) for label, score in r} for r in results]


def _by_node_id(client, ids: list[int], per_request: int = 64) -> list[dict[str, float]]:
    out: list[dict[str, float]] = []
    for lo in range(0, len(ids), per_request):
        part = ids[lo : lo + per_request]
        out += _scores(client.classify([{"node_id": i} for i in part]))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", default="cora", choices=("cora", "citeseer"))
    parser.add_argument("--passes", type=int, default=5, help="REST passes over every node")
    parser.add_argument("--layout", default="sparse", choices=("dense", "compact", "sparse"))
    parser.add_argument(
        "--sampling-seed",
        default=None,
        help="the server's --sampling-seed (default: none, the bundle's rule); 'random' shows "
        "what this check catches",
    )
    args = parser.parse_args(argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

    import numpy as np

    from memgraph_tf import datasets
    from memgraph_tf.batch import BatchClassifier, BundleBackend
    from memgraph_tf.client import EmbeddedSource
    from memgraph_tf.client.graphs import property_names
    from memgraph_tf.client.graphsage import GraphSAGE
    from memgraph_tf.serving import ModelServer, ServingClient, export_bundle, start_server
    from memgraph_tf.serving.grpc_client import GrpcServingClient
    from memgraph_tf.serving.grpc_server import start_grpc_server

    data = datasets.load_dataset(args.dataset)
    graph = datasets.planetoid_graph(args.dataset)
    source = EmbeddedSource(graph)
    ids = list(range(data.num_nodes))
    model = GraphSAGE(
        [10, 10],
        data.features.shape[1],
        data.num_classes,
        hidden_units=16,
        class_names=list(data.class_names),
    )
    with tempfile.TemporaryDirectory() as tmp:
        info = export_bundle(model, tmp, "OneAnswer", 1, use_op=False, layout=args.layout)
        base = os.path.join(tmp, "OneAnswer")
        seed = (info.config.get("options") or {}).get("seed")
        print(f"bundle: {args.layout} layout, fanouts [10, 10], options.seed in the bundle: {seed}")
        server = ModelServer(base, graph_source=source, sampling_seed=args.sampling_seed)
        passes: list[list[dict[str, float]]] = []
        with start_server(server) as rest, start_grpc_server(server) as rpc:
            with ServingClient(rest.url, "OneAnswer", timeout_s=120) as client:
                for k in range(args.passes):
                    clock = time.monotonic()
                    passes.append(_by_node_id(client, ids))
                    print(
                        f"REST pass {k + 1}: {len(ids)} nodes in {time.monotonic() - clock:.1f} s"
                    )
            with GrpcServingClient(rpc.target, "OneAnswer", timeout_s=120) as client:
                clock = time.monotonic()
                over_grpc = _by_node_id(client, ids)
                print(f"gRPC: {len(ids)} nodes in {time.monotonic() - clock:.1f} s")
        server.close()
        clock = time.monotonic()
        with BundleBackend(base) as backend:
            BatchClassifier(
                source, backend, write_property="one_answer", overwrite=True, progress=False
            ).run()
        print(f"batch inference: {len(ids)} nodes in {time.monotonic() - clock:.1f} s")
    cls, score, _ = property_names("one_answer")
    batch = [(graph.get_property(i, cls), float(graph.get_property(i, score))) for i in ids]

    problems = []
    for k, other in enumerate(passes[1:], start=2):
        diff = [i for i in ids if other[i] != passes[0][i]]
        if diff:
            problems.append(f"REST pass {k} differs from pass 1 on {len(diff)} nodes: {diff[:10]}")
    diff = [i for i in ids if over_grpc[i] != passes[0][i]]
    if diff:
        problems.append(f"gRPC differs from REST on {len(diff)} nodes: {diff[:10]}")
    top = [max(s.items(), key=lambda kv: kv[1]) for s in passes[0]]
    diff = [
        i
        for i in ids
        if top[i][0] != batch[i][0] or np.float32(top[i][1]) != np.float32(batch[i][1])
    ]
    if diff:
        problems.append(f"batch inference differs from REST on {len(diff)} nodes: {diff[:10]}")
    if problems:
        print("\n".join(problems), file=sys.stderr)
        return 1
    print(
        f"one answer per node: {len(ids)} {args.dataset} nodes, {args.passes} REST passes, gRPC "
        f"and batch inference give identical scores"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
