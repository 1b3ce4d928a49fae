"""Gateway benchmark: the node-id gateway in front of an upstream against one local
server, ``{"node_id": N}`` classify, in one run.

Three ``memgraph-tf serve`` subprocesses on 127.0.0.1, each answering REST and gRPC:

- **local** (the baseline): ``memgraph-tf serve --graph embedded:cora BASE`` -- loads the bundle
  and turns node ids into neighbourhood blobs itself;
- **upstream**: ``memgraph-tf serve BASE`` -- loads the same bundle, no graph (TF Serving's
  place: it speaks TF Serving's gRPC API);
- **gateway**: ``memgraph-tf serve --graph embedded:cora --upstream UPSTREAM`` -- holds no
  model; samples each node's blob (settings from the upstream's ``GetModelMetadata`` and the
  bundle config, as in production) and forwards a blob request over gRPC to the upstream.

The model: an untrained seeded GraphSAGE for Cora (fanouts 10, 10; 1,433 features), exported in
one sample layout (``--layout``, default sparse, the smallest blob) with
``benchmarks/serving.py``'s bundle set-up. The graph: the packaged Cora in process
(``embedded:cora``) in both servers that sample, so the graph fetch costs the same and the ratio
is the price of the gateway's extra hop.

Scores are checked first: through the gateway, REST and gRPC, they equal the local server's
for the same nodes. Then ``--clients`` concurrent clients (threads, each its own client, no
retries) classify 1 and 64 node ids per request for ``--duration-s`` per row, over REST and
gRPC, local and gateway rows alternating so load drift on the shared machine falls on both.
Each row: requests, req/s, nodes/s, p50 / p99 latency, errors (must be zero: exit status 1
otherwise) and the 1-min load average. **Baseline** of the ratios: the local server, same
transport and request size, this run.

Usage::

    .venv/bin/python benchmarks/serving_gateway.py                    # 10 s per row
    .venv/bin/python benchmarks/serving_gateway.py --duration-s 3     # a short run
"""

from __future__ import annotations

import argparse
import logging
import pathlib
import sys
import tempfile

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import layouts
import serving
from serving import CASES, MODEL, Server, load, load_phase, make_client, print_row

log = logging.getLogger("benchmarks.serving_gateway")

#: the graph both sampling servers open (the packaged Cora, in process)
GRAPH = "embedded:cora"
SETUPS = ("local", "gateway")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--duration-s", type=float, default=10.0, help="seconds per load row")
    p.add_argument("--clients", type=int, default=8)
    p.add_argument("--sizes", default="1,64", help="node ids per request, comma-separated")
    p.add_argument("--transports", default="rest,grpc", help="rest, grpc or both")
    p.add_argument(
        "--layout",
        choices=layouts.LAYOUTS,
        default="sparse",
        help="the bundle's sample layout (default sparse: the smallest blob on the extra hop)",
    )
    serving.add_server_options(
        p, "the bundle", "extra argument for every `memgraph-tf serve` (repeat)"
    )
    args = p.parse_args(argv)
    args.transports = [t for t in args.transports.split(",") if t]
    if not args.transports or set(args.transports) - {"rest", "grpc"}:
        p.error(f"--transports: expected some of rest, grpc, got {','.join(args.transports)!r}")
    args.sizes = [int(n) for n in args.sizes.split(",")]
    if any(n < 1 or n > 64 for n in args.sizes):
        p.error("--sizes: expected numbers from 1 to 64")
    if args.layout == "dense" and max(args.sizes) > 1:
        p.error("--layout dense: 1-node requests only (64 dense Cora blobs are 54 MB a request)")
    serving.resolve_decoder(args)
    return args


def scores(server: Server, transport: str, nodes: list[int], version: int) -> np.ndarray:
    with make_client(server, transport, version) as c:
        return np.array([[s for _, s in r] for r in c.classify([{"node_id": n} for n in nodes])])


def check_scores(servers: dict[str, Server], transports: list[str], version: int) -> None:
    """Through the gateway, over each transport, the local server's scores for the same nodes
    (which also warms every server up: the first call of a signature traces it)."""
    nodes = [0, 1, 42, 2707, 1000, 7, 8, 9]
    want = scores(servers["local"], "rest", nodes, version)
    for transport in transports:
        for setup in SETUPS:
            got = scores(servers[setup], transport, nodes, version)
            np.testing.assert_allclose(
                got, want, rtol=1e-5, atol=1e-6, err_msg=f"{setup} over {transport}: scores differ"
            )
    print(f"scores checked: gateway = local over {', '.join(transports)} ({len(nodes)} nodes)")


def print_ratios(rows: dict) -> None:
    print("\n## gateway / local (baseline: the local server, same transport and size, this run)")
    for (n, transport), by_setup in rows.items():
        base, r = by_setup.get("local"), by_setup.get("gateway")
        if base is None or r is None:
            continue
        print(
            f"  {n:>2}-node {transport:>4}: req/s {r['rps'] / base['rps']:.2f}x, "
            f"p50 {r['p50_ms'] / base['p50_ms']:.2f}x ({r['p50_ms'] - base['p50_ms']:+.1f} ms), "
            f"p99 {r['p99_ms'] / base['p99_ms']:.2f}x ({r['p99_ms'] - base['p99_ms']:+.1f} ms); "
            f"load {base['load']:.1f} / {r['load']:.1f}"
        )


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    serving.begin("gateway", args, f"layout {args.layout}, decoder {args.decoder}, graph {GRAPH}")
    version = CASES[args.layout]
    total_errors = 0
    rows: dict = {}
    with tempfile.TemporaryDirectory(prefix="memgraph-tf-gateway-bench-") as tmp:
        tmp = pathlib.Path(tmp)
        serving.export_cases(tmp, [args.layout], args.decoder == "op", layouts.cora_graph())
        extra = tuple(args.serve_arg)
        servers: dict[str, Server] = {}
        try:
            servers["local"] = Server(tmp / MODEL, MODEL, (*extra, "--graph", GRAPH), grpc=True)
            servers["upstream"] = Server(tmp / MODEL, MODEL, extra, grpc=True)
            servers["gateway"] = Server(
                None,
                MODEL,
                (*extra, "--graph", GRAPH, "--upstream", servers["upstream"].target),
                grpc=True,
            )
            print(f"servers up: {load()}")
            check_scores(servers, args.transports, version)
            print(
                f"\n## load: {args.clients} concurrent clients, {args.duration_s:g} s per row, "
                f'{{"node_id": N}} classify, model {MODEL!r} version {version} ({args.layout})'
            )
            print(
                f"{'layout':>9} {'nodes':>5} {'transport':>9} {'server':>8} {'requests':>8} "
                f"{'req/s':>8} {'nodes/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'errors':>6} "
                f"{'load':>5}"
            )
            for n in args.sizes:
                examples = [{"node_id": i} for i in range(n)]
                for transport in args.transports:
                    for setup in SETUPS:
                        r = load_phase(
                            lambda s=servers[setup], t=transport: make_client(s, t, version),
                            examples,
                            args.clients,
                            args.duration_s,
                        )
                        rows.setdefault((n, transport), {})[setup] = r
                        total_errors += len(r["errors"])
                        print_row(args.layout, n, transport, setup, r)
        finally:
            for server in reversed(list(servers.values())):
                server.close()
        print_ratios(rows)
    print(f"\nerrors: {total_errors}; {load()}")
    return 1 if total_errors else 0


if __name__ == "__main__":
    sys.exit(main())
