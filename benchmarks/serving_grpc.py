"""Serving benchmark, gRPC against REST: one ``memgraph-tf serve --grpc-port`` process answers both
APIs from one ModelServer, and every row is measured in the same run.

1. Payload (single client, sequential, ``--reps`` requests each): request bytes of a 1-node and a
   64-node classify -- REST's JSON body (blobs as ``{"b64": ...}``) against gRPC's serialized
   ``ClassificationRequest`` -- and the p50 latency of each; ratios REST/gRPC.
2. Load: ``--clients`` concurrent clients (threads, one client each) for ``--duration-s`` per row:
   1 and 64 nodes per classify, REST (:func:`serving.rest_load_phase`) and gRPC
   (:func:`grpc_load_phase`, one GrpcServingClient per thread), server-side batching off and on
   (``--enable-batching``). Requests/s, nodes/s, p50 / p99; ratios gRPC/REST per row. Errors must
   be zero (exit status 1 otherwise). Both transports return the same scores (checked).

The model and blobs are those of ``benchmarks/serving.py`` (GraphSAGE-shaped, fanouts 10,5, d=64,
7 classes, op-free bundle by default).

Usage::

    .venv/bin/python benchmarks/serving_grpc.py                   # 60 s per load row
    .venv/bin/python benchmarks/serving_grpc.py --duration-s 10   # a quick look
"""

from __future__ import annotations

import logging
import pathlib
import statistics
import sys
import tempfile

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import serving  # noqa: E402  (benchmarks/serving.py: model, blobs, server process, REST load)

logger = logging.getLogger(__name__)


def grpc_load_phase(target: str, model: str, examples: list, clients: int,
                    duration_s: float) -> dict:
    """``clients`` threads, each with its own GrpcServingClient (its own channel), classifying
    ``examples`` in a loop for ``duration_s``: requests, errors, req/s, nodes/s, p50 / p99."""
    from memgraph_tf.serving.grpc_client import GrpcServingClient

    return serving.load_phase(lambda: GrpcServingClient(target, model, timeout_s=60, retries=0),
                              examples, clients, duration_s)


def grpc_request_bytes(client, examples: list) -> int:
    """Serialized size of the ClassificationRequest the gRPC client sends for ``examples``."""
    from tensorflow_serving.apis import classification_pb2

    req = classification_pb2.ClassificationRequest()
    req.model_spec.name = client.model
    req.model_spec.signature_name = client.classify_signature
    for e in examples:
        req.input.example_list.examples.add().CopyFrom(client._example(e))
    return req.ByteSize()


def main(argv: list[str] | None = None) -> int:
    args = serving.parse_args(argv, __doc__, "seconds per load row")
    logging.basicConfig(level=logging.WARNING)

    from memgraph_tf.serving.client import ServingClient
    from memgraph_tf.serving.export import export_bundle
    from memgraph_tf.serving.grpc_client import GrpcServingClient
    from memgraph_tf.testing.arcadedb import free_port

    fanouts, dim, classes, decoder = serving.model_settings(args)
    model = serving.build_model(fanouts, dim, classes)
    blobs, feats = serving.node_data(64, fanouts, dim)
    want = model(feats).numpy()
    total_errors = 0
    with tempfile.TemporaryDirectory(prefix="memgraph-tf-bench-grpc-") as tmp:
        base = pathlib.Path(tmp) / "GraphSage"
        export_bundle(model, pathlib.Path(tmp), "GraphSage", 1, use_op=decoder == "op")
        server = None
        try:
            rows: dict = {}
            for batching in ("off", "on"):
                grpc_port = free_port()
                extra = ("--grpc-port", str(grpc_port))
                if batching == "on":
                    extra += ("--enable-batching",)
                server = serving.Server(base, "GraphSage", extra)
                target = f"127.0.0.1:{grpc_port}"
                rest = ServingClient(server.url, "GraphSage", timeout_s=60)
                rpc = GrpcServingClient(target, "GraphSage", timeout_s=60)
                by_rest = np.array([[s for _, s in r] for r in rest.classify(blobs)])
                by_grpc = np.array([[s for _, s in r] for r in rpc.classify(blobs)])
                np.testing.assert_allclose(by_grpc, want, atol=1e-5)
                np.testing.assert_allclose(by_rest, by_grpc, rtol=1e-5, atol=1e-6)
                if batching == "off":
                    print(f"# serving benchmark, gRPC vs REST: fanouts={fanouts} feature_dim="
                          f"{dim} classes={len(classes)} decoder={decoder}; blob per node = "
                          f"{len(blobs[0])} bytes; one server process, both APIs")
                    print(f"\n## payload: sequential single client, {args.reps} requests each")
                    print(f"{'nodes':>5} {'REST bytes':>11} {'gRPC bytes':>11} {'bytes x':>8} "
                          f"{'REST p50 ms':>12} {'gRPC p50 ms':>12} {'latency x':>10}")
                    for n in (1, 64):
                        rb = serving.body_bytes(rest, blobs[:n])
                        gb = grpc_request_bytes(rpc, blobs[:n])
                        rest.classify(blobs[:n]), rpc.classify(blobs[:n])  # warm
                        tr = statistics.median(serving.timed(lambda: rest.classify(blobs[:n]),
                                                             args.reps)) * 1e3
                        tg = statistics.median(serving.timed(lambda: rpc.classify(blobs[:n]),
                                                             args.reps)) * 1e3
                        print(f"{n:>5} {rb:>11} {gb:>11} {rb / gb:>8.2f} {tr:>12.2f} "
                              f"{tg:>12.2f} {tr / tg:>10.2f}")
                    print(f"\n## load: {args.clients} concurrent clients, {args.duration_s:g} s "
                          f"per row, classify of blobs")
                    print(f"{'transport':>9} {'batching':>8} {'nodes/req':>9} {'requests':>9} "
                          f"{'req/s':>8} {'nodes/s':>9} {'p50 ms':>8} {'p99 ms':>8} "
                          f"{'errors':>7}")
                rest.close(), rpc.close()
                for n in (1, 64):
                    for transport in ("rest", "grpc"):
                        if transport == "rest":
                            r = serving.rest_load_phase(server.url, "GraphSage", blobs[:n],
                                                        args.clients, args.duration_s)
                        else:
                            r = grpc_load_phase(target, "GraphSage", blobs[:n], args.clients,
                                                args.duration_s)
                        rows[transport, batching, n] = r
                        total_errors += len(r["errors"])
                        print(f"{transport:>9} {batching:>8} {n:>9} {r['requests']:>9} "
                              f"{r['rps']:>8.1f} {r['nodes_per_s']:>9.1f} {r['p50_ms']:>8.2f} "
                              f"{r['p99_ms']:>8.2f} {len(r['errors']):>7}")
                        for e in r["errors"][:5]:
                            print("   error:", e)
                server.close()
                server = None
            print()
            for batching in ("off", "on"):
                for n in (1, 64):
                    g, r = rows["grpc", batching, n], rows["rest", batching, n]
                    print(f"gRPC vs REST, batching {batching}, {n:>2}-node requests: req/s "
                          f"{g['rps'] / r['rps']:.2f}x, p50 {g['p50_ms'] / r['p50_ms']:.2f}x, "
                          f"p99 {g['p99_ms'] / r['p99_ms']:.2f}x")
        finally:
            if server is not None:
                server.close()
    print(f"errors: {total_errors}")
    return 1 if total_errors else 0


if __name__ == "__main__":
    sys.exit(main())
