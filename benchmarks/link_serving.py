"""Link serving in one run: pair sampling against two single-node sample calls (the rows
of ``benchmarks/pair_sampling.py``), then served pair classification under concurrent clients
through the local server (``memgraph-tf serve --graph``), REST and gRPC.

The served part: an initialised (untrained: latency does not depend on the weights)
:class:`~memgraph_tf.client.link_prediction.LinkPredictor` over the shop graph's
``(:User)-[:BOUGHT]->(:Product)`` pairs, exported as an op bundle, served from the embedded graph
(the unchanged query module through the real mgp.py). ``--clients`` threads (8), each with its own
connection, send ``--serve-pairs`` pairs per request for ``--duration-s`` per row:

- **by ids** (``ids``): ``{"source_id": u, "target_id": p}`` examples, keys by the ``id``
  property (the bundle's ``id_property``) -- the server samples each pair's blob with
  ``tf_features.sample_pairs`` (the pair's own relationship removed) and runs the model;
- **by internal ids** (``ids:internal``): the same pairs by internal node ids, a second bundle of
  the same model without ``id_property`` (the in-run baseline of the by-ids rows: the source
  resolves ``id_property`` keys to nodes before the call, through the graph's index -- in Memgraph a
  label-property index -- where the procedure alone would scan the label's nodes on every call);
- **by blob**: the same pairs' blobs, sampled beforehand, sent as ``{"blob": {"b64": ...}}`` (gRPC:
  the bytes feature) -- the baseline: the same server, model and clients without the graph work.

Printed per row: requests/s, pairs/s, p50 / p99 latency and the load average; then by-ids over
by-internal-ids and both over by-blob per transport. Before the served rows, one graph call per path
at each ``--call-users`` size (:func:`call_rows`): keys the procedure looks up itself (its scan, the
path before) against keys the source resolves, both against internal ids. The scores of both forms
are checked equal first. The embedded runtime's per-call costs are not Memgraph's: a real Memgraph
adds a Bolt round trip per request and samples in C++-backed storage.

    .venv/bin/python benchmarks/link_serving.py [--users N] [--pairs N] [--rounds N]
        [--serve-users N] [--clients N] [--serve-pairs N] [--duration-s S]
        [--call-users N [N ...]] [--call-repeats N] [--skip-sampling] [--skip-serving]
"""

from __future__ import annotations

import argparse
import base64
import os
import pathlib
import random
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import pair_sampling
import serving

MODEL = "links"
#: the same model sampling by internal ids (no ``id_property``)
MODEL_INTERNAL = "links_internal"
NN = {
    "source": {"(:User)-[:BOUGHT]->(:Product)": [5, 3]},
    "target": {"(:Product)<-[:BOUGHT]-(:User)": [5, 3]},
}


def parse_args(argv: list[str] | None) -> tuple[argparse.Namespace, list[str]]:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--users", type=int, default=6_000, help="pair sampling rows: shop users")
    p.add_argument("--pairs", type=int, default=500, help="pair sampling rows: pairs per call")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--serve-users", type=int, default=2_000, help="served graph: shop users")
    p.add_argument("--clients", type=int, default=8)
    p.add_argument("--serve-pairs", type=int, default=1, help="pairs per served request")
    p.add_argument("--duration-s", type=float, default=10.0, help="seconds per served row")
    p.add_argument(
        "--call-users",
        type=int,
        nargs="+",
        default=[2_000, 20_000],
        help="one-call rows: shop users (one graph per value)",
    )
    p.add_argument("--call-repeats", type=int, default=30, help="one-call rows: calls per path")
    p.add_argument("--skip-sampling", action="store_true", help="skip the pair sampling rows")
    p.add_argument("--skip-serving", action="store_true", help="skip the served rows")
    args = p.parse_args(argv)
    sampling = ["--users", str(args.users), "--pairs", str(args.pairs)]
    return args, sampling + ["--rounds", str(args.rounds)]


class RestClient:
    def __init__(self, url: str):
        import requests

        self.session = requests.Session()
        self.url = url

    def __call__(self, model: str, examples: list[dict]) -> list:
        r = self.session.post(
            f"{self.url}/v1/models/{model}:classify", json={"examples": examples}, timeout=120
        )
        if r.status_code != 200:
            raise RuntimeError(f"HTTP {r.status_code}: {r.text[:200]}")
        return r.json()["results"]

    def close(self) -> None:
        self.session.close()


class GrpcClient:
    def __init__(self, target: str):
        import grpc
        from tensorflow_serving.apis import prediction_service_pb2_grpc

        self.channel = grpc.insecure_channel(target)
        self.stub = prediction_service_pb2_grpc.PredictionServiceStub(self.channel)

    def __call__(self, model: str, examples: list[dict]) -> list:
        from tensorflow_serving.apis import classification_pb2

        req = classification_pb2.ClassificationRequest()
        req.model_spec.name = model
        for e in examples:
            feature = req.input.example_list.examples.add().features.feature
            for k, v in e.items():
                if isinstance(v, dict):  # {"b64": ...}
                    feature[k].bytes_list.value.append(base64.b64decode(v["b64"]))
                else:
                    feature[k].int64_list.value.append(v)
        rows = self.stub.Classify(req, timeout=120).result.classifications
        return [[[c.label, c.score] for c in row.classes] for row in rows]

    def close(self) -> None:
        self.channel.close()


def load_phase(
    new_client, model: str, batches: list[list[dict]], clients: int, duration_s: float
) -> dict:
    """``clients`` threads, each its own client, cycling through ``batches`` (client ``i`` starts
    at batch ``i``) for ``duration_s``: requests/s, pairs/s, p50 / p99 latency, errors."""
    latencies: list[list[float]] = [[] for _ in range(clients)]
    errors: list[str] = []
    stop = time.monotonic() + duration_s

    def worker(i: int) -> None:
        client = new_client()
        k = i
        try:
            while time.monotonic() < stop:
                batch = batches[k % len(batches)]
                k += clients
                t0 = time.perf_counter()
                try:
                    if len(client(model, batch)) != len(batch):
                        errors.append(f"client {i}: wrong number of results")
                except Exception as exc:  # noqa: BLE001 -- counted and reported: a run must have none
                    errors.append(f"client {i}: {type(exc).__name__}: {exc}")
                latencies[i].append(time.perf_counter() - t0)
        finally:
            client.close()

    wall = serving.run_threads(worker, clients)
    flat = np.asarray([x for lst in latencies for x in lst])
    return {
        "requests": len(flat),
        "errors": errors,
        "rps": len(flat) / wall,
        "pairs_per_s": len(flat) * len(batches[0]) / wall,
        "p50_ms": float(np.percentile(flat, 50)) * 1e3,
        "p99_ms": float(np.percentile(flat, 99)) * 1e3,
        "load": os.getloadavg()[0],
    }


def _median_ms(call, repeats: int) -> float:
    call()  # warm: the embedded graph's index is built by the first keyed call after a write
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        call()
        times.append(time.perf_counter() - t0)
    return float(np.median(times)) * 1e3


def _call_paths(g, source, keys: tuple, internals: tuple, props: dict) -> dict:
    """Per call, the three ways of :func:`call_rows` (procedure lookup, source lookup, internal
    ids) as functions of nothing."""
    (u, p), (iu, ip) = keys, internals
    keyed = {"id_property": "id", "seed": 0}
    pairs = {"source_label": "User", "target_label": "Product"}
    user = {"label": "User"}
    nn = NN["source"]
    return {
        "sample_pairs": (
            lambda: g.call("tf_features.sample_pairs", [u], [p], NN, props, {**keyed, **pairs}),
            lambda: source.sample_pairs_b64([u], [p], NN, props, {**keyed, **pairs}),
            lambda: source.sample_pairs_b64([iu], [ip], NN, props, {"seed": 0, **pairs}),
        ),
        "sample_typed": (
            lambda: g.call("tf_features.sample_typed", [u], nn, props, {**keyed, **user}),
            lambda: source.sample_typed_b64([u], nn, props, {**keyed, **user}),
            lambda: source.sample_typed_b64([iu], nn, props, {"seed": 0, **user}),
        ),
    }


def call_rows(args: argparse.Namespace) -> None:
    """One graph call per request, single-threaded, at each of ``--call-users``: a one-pair
    ``sample_pairs`` and a one-seed ``sample_typed``, keyed three ways -- by ``id`` keys handed
    to the procedure (its own lookup: a scan of the label per call, the path before keys were
    resolved by the caller), by ``id`` keys through the source (resolved by the caller: the
    graph's index, then the nodes passed in), by internal ids (the baseline) -- with the same
    blobs checked first; median ms of ``--call-repeats`` calls and the ratios to internal ids."""
    from memgraph_tf.client import EmbeddedSource
    from memgraph_tf.typed_datasets import FEATURES, shop_graph, typed_embedded_graph

    props = {"User": [FEATURES], "Product": [FEATURES]}
    print(
        "\n## one graph call (single-threaded): by id keys the procedure looks up itself (a scan "
        "of the label, before) / by id keys the source resolves (after) / by internal ids "
        f"(baseline); median of {args.call_repeats} calls"
    )
    print(
        f"{'users':>6s} {'call':12s} {'keys, proc ms':>13s} {'keys, src ms':>12s} "
        f"{'internal ms':>11s} {'before/int':>10s} {'after/int':>9s} {'load':>5s}"
    )
    for users in args.call_users:
        graph = shop_graph(users)
        g, internal = typed_embedded_graph(graph)
        source = EmbeddedSource(g)
        bought = graph.edge_sets[("User", "BOUGHT", "Product")]
        u, p = (
            int(bought.source[len(bought.source) // 2]),
            int(bought.target[len(bought.source) // 2]),
        )
        iu, ip = int(internal["User"][u]), int(internal["Product"][p])
        calls = _call_paths(g, source, (u, p), (iu, ip), props)
        for name, (proc, src, by_internal) in calls.items():
            assert proc()[0]["blob"] == src(), name  # the same blob both ways
            before, after, base = (
                _median_ms(c, args.call_repeats) for c in (proc, src, by_internal)
            )
            print(
                f"{users:6d} {name:12s} {before:13.2f} {after:12.2f} {base:11.2f} "
                f"{before / base:9.1f}x {after / base:8.2f}x {os.getloadavg()[0]:5.1f}"
            )


def serve_rows(args: argparse.Namespace) -> int:
    import keras

    from memgraph_tf.client import EmbeddedSource
    from memgraph_tf.client.link_prediction import LinkPredictor
    from memgraph_tf.serving import bundle
    from memgraph_tf.serving.export_links import export_link_bundle
    from memgraph_tf.serving.grpc_server import start_grpc_server
    from memgraph_tf.serving.model_config import ModelEntry
    from memgraph_tf.serving.model_server import ModelServer
    from memgraph_tf.serving.neighbourhoods import NeighbourhoodFetcher
    from memgraph_tf.serving.server import start_server
    from memgraph_tf.typed_datasets import FEATURES, shop_graph, typed_embedded_graph

    graph = shop_graph(args.serve_users)
    g, internal = typed_embedded_graph(graph)
    source = EmbeddedSource(g)
    widths = {label: graph.node_sets[label].width for label in ("User", "Product")}
    keras.utils.set_random_seed(0)
    model = LinkPredictor("User", NN, widths, target_label="Product", hidden_units=64)
    model.properties = {"User": [FEATURES], "Product": [FEATURES]}
    bought = graph.edge_sets[("User", "BOUGHT", "Product")]
    n = args.clients * 8 * args.serve_pairs
    order = random.Random(2).sample(range(len(bought.source)), n)
    pairs = [(int(bought.source[i]), int(bought.target[i])) for i in order]
    k = args.serve_pairs
    with tempfile.TemporaryDirectory(prefix="link-serving-") as tmp:
        for name, options in ((MODEL, {"id_property": "id"}), (MODEL_INTERNAL, {})):
            export_link_bundle(model, tmp, name, 1, decoder="op", sample_options=options)
        entries = [ModelEntry(name, pathlib.Path(tmp, name)) for name in (MODEL, MODEL_INTERNAL)]
        ms = ModelServer(model_config=entries, graph_source=source)
        spec = bundle.inference_sampling(ms.versions[1].bundle_config)
        blobs = NeighbourhoodFetcher(source).fetch_pairs(
            [s for s, _ in pairs], [t for _, t in pairs], spec
        )
        examples = {
            "ids": [{"source_id": s, "target_id": t} for s, t in pairs],
            "ids:internal": [
                {"source_id": int(internal["User"][s]), "target_id": int(internal["Product"][t])}
                for s, t in pairs
            ],
            "blob": [{"blob": {"b64": base64.b64encode(b).decode()}} for b in blobs],
        }
        models = {"ids": MODEL, "ids:internal": MODEL_INTERNAL, "blob": MODEL}
        forms = {f: [e[i : i + k] for i in range(0, n, k)] for f, e in examples.items()}
        with start_server(ms) as rest, start_grpc_server(ms) as rpc:
            new = {
                "rest": lambda: RestClient(rest.url),
                "grpc": lambda: GrpcClient(rpc.target),
            }
            first = {f: new["rest"]()(models[f], forms[f][0]) for f in ("ids", "blob")}
            assert first["ids"] == first["blob"], first  # the same blobs, the same scores
            print(
                f"\n## served pair classify: {args.clients} clients, {k} pair(s) per request, "
                f"{args.duration_s:g} s per row; shop graph {g.node_count} nodes, "
                f"{g.edge_count} relationships; op bundle, hidden 64, fanouts 5, 3 per role\n"
                "ids: keys by the id property (id_property: id); ids:internal: internal ids; "
                "blob: the pairs' blobs sent (no graph work: the baseline)"
            )
            print(
                f"{'transport':9s} {'examples':12s} {'req/s':>8s} {'pairs/s':>8s} {'p50 ms':>8s} "
                f"{'p99 ms':>8s} {'errors':>6s} {'load':>5s}"
            )
            rows = {}
            for transport in ("rest", "grpc"):
                for form in ("ids", "ids:internal", "blob"):
                    r = load_phase(
                        new[transport], models[form], forms[form], args.clients, args.duration_s
                    )
                    rows[transport, form] = r
                    print(
                        f"{transport:9s} {form:12s} {r['rps']:8.1f} {r['pairs_per_s']:8.1f} "
                        f"{r['p50_ms']:8.2f} {r['p99_ms']:8.2f} {len(r['errors']):6d} "
                        f"{r['load']:5.1f}"
                    )
                    for e in r["errors"][:3]:
                        print(f"  error: {e}")
            for transport in ("rest", "grpc"):
                a, b = rows[transport, "ids"], rows[transport, "ids:internal"]
                print(
                    f"{transport}: ids / ids:internal: p50 {a['p50_ms'] / b['p50_ms']:.2f}x, "
                    f"p99 {a['p99_ms'] / b['p99_ms']:.2f}x, "
                    f"pairs/s {a['pairs_per_s'] / b['pairs_per_s']:.2f}x"
                )
            for transport in ("rest", "grpc"):
                b = rows[transport, "blob"]
                for form in ("ids", "ids:internal"):
                    a = rows[transport, form]
                    print(
                        f"{transport}: {form} / blob: p50 {a['p50_ms'] / b['p50_ms']:.2f}x, "
                        f"p99 {a['p99_ms'] / b['p99_ms']:.2f}x, "
                        f"pairs/s {a['pairs_per_s'] / b['pairs_per_s']:.2f}x"
                    )
        ms.close()
    return 1 if any(r["errors"] for r in rows.values()) else 0


def main(argv: list[str] | None = None) -> int:
    args, sampling = parse_args(argv)
    print(f"load average at start: {os.getloadavg()[0]:.1f}")
    code = 0
    if not args.skip_sampling:
        print("## pair sampling (benchmarks/pair_sampling.py rows)")
        code = pair_sampling.main(sampling)
    call_rows(args)
    return code or (0 if args.skip_serving else serve_rows(args))


if __name__ == "__main__":
    sys.exit(main())
