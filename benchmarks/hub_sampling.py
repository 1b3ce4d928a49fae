"""What a hub costs the sampler: time per call of ``tf_features.sample`` and
``tf_features.sample_typed`` (ids only, fanout 10, ``seed`` fixed) against the degree of the node
drawn from, on the embedded runtime (the real mgp.py) and over Bolt with the client-side fallback
(ArcadeDB, which has no tf_features procedures: the client runs the same sampler over plain Cypher).

One graph per backend holds a star of ``d`` leaves per hub degree (``--degrees``; relationships
``hub -[:E]-> leaf``, all nodes ``:N``) and a star of 10 leaves, the baseline. Rows:

* **hop 1**: the seed is the hub, fanouts ``[10]`` (typed: ``(:N)-[:E]-(:N)``: ``[10]``);
* **hop 2**: the seed is a leaf of the hub (its only neighbour is the hub), fanouts ``[10, 10]``:
  the hub is reached at hop 1 and drawn from at hop 2 (low degree padded, so both procedures draw
  the same slots).

The baseline of each row is the same call with the seed moved to the degree-10 star (its centre,
or one of its leaves), in the same graph and run, alternating with the hub's call round by round;
``ratio`` = the hub's time per call / the baseline's (best of the rounds each). On the embedded
runtime the row also gives the ``_mgp`` calls per sampled neighbour (a valid slot of the blob's
masks; counted with ``count_api_calls``) and the relationships walked per call
(``Edge.from_vertex`` and ``Edge.to_vertex`` calls).

Then, per Bolt degree, where the fallback's time goes: the neighbour query it sends (one row per
neighbour) against a server-side ``count(DISTINCT m)`` and a query returning only the keys at 10
positions of the sorted distinct neighbours (``rng.sample(range(d), 10)``; checked equal to
``rng.sample`` over the rows with the same generator: the positions depend only on ``d``).

The defaults (embedded degrees 10^3..10^5, Bolt 10^3 and 10^4, 7 rounds) take ~1.5 minutes on
two loaded cores. ``--with-million`` adds a hub of 10^6 to the embedded graph: its graph of 1.1M
nodes builds in 8-12 s, but each call from it takes 2-10 s. ArcadeDB's load and per-call cost grow
linearly (10^5 relationships: ~30 s to load, 3-7 s a call), hence 10^5 only with
``--bolt-degrees``. ``--skip-bolt`` leaves Bolt out (as when ``arcadedb-embedded`` is not
installed); ``--markdown`` also prints the rows as a markdown table. The embedded runtime's
per-call costs are not Memgraph's: compare the ratios and the call counts, not the absolute
figures.

    .venv/bin/python benchmarks/hub_sampling.py [--degrees 1000 10000 100000] [--with-million]
        [--bolt-degrees 1000 10000 100000] [--skip-bolt] [--rounds N] [--markdown]
        [--bounded | --bounded-only | --weighted-only | --edges-only] [--capacity R]

``--bounded`` adds the bounded mode's rows (``tf_features.sample`` from uniform reservoirs,
``sample_typed`` over a weighted step from weighted reservoirs, without and with replacement, and
``sample_typed`` with edge feature columns from uniform reservoirs); ``--bounded-only`` /
``--weighted-only`` / ``--edges-only`` print only the uniform / the weighted / the edge ones.
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import os
import random
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

from memgraph_tf import blob

BASE_DEGREE = 10
SPEC = "(:N)-[:E]-(:N)"
HOMOGENEOUS = {"seed": 7, "direction": "both"}
TYPED = {"seed": 7, "label": "N"}


def timed(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def calls(sample: Callable[..., Any], seed: int, hops: int) -> dict[str, Callable[[], Any]]:
    """The two procedures' calls from ``seed`` with ``hops`` hops of fanout 10 (ids only)."""
    fanouts = [10] * hops
    return {
        "sample": lambda: sample("sample", seed, fanouts),
        "sample_typed": lambda: sample("sample_typed", seed, fanouts),
    }


def valid_slots(blob_b64: str) -> int:
    """Sampled neighbours of a blob: the true entries of its masks (hops >= 1)."""
    sections = blob.unpack_b64(blob_b64)
    return int(sum(v.sum() for k, v in sections.items() if k.startswith("mask")))


def compare(hub: Callable[[], Any], base: Callable[[], Any], rounds: int) -> tuple[float, float]:
    """(best seconds per call of ``hub``, of ``base``), alternating the two ``rounds`` times
    after one warm-up call each (the best round: the least disturbed by the machine's load)."""
    hub(), base()
    t_hub, t_base = [], []
    for _ in range(rounds):
        t_hub.append(timed(hub))
        t_base.append(timed(base))
    return min(t_hub), min(t_base)


def compared_calls(
    sample: Callable[..., Any],
    hubs: dict[int, int],
    leaves: dict[int, int],
    degrees: list[int],
    rounds: int,
) -> Iterator[tuple[int, int, str, Callable[[], Any], float, float]]:
    """(hops, degree, procedure, the call at that degree, its best seconds, the baseline's best
    seconds) for 1 hop from each hub and 2 hops from each hub's leaf, by ``compare`` against the
    same call from the degree-``BASE_DEGREE`` star."""
    for hop, seed_of in ((1, hubs), (2, leaves)):
        base = calls(sample, seed_of[BASE_DEGREE], hop)
        for degree in degrees:
            for proc, hub_call in calls(sample, seed_of[degree], hop).items():
                yield (hop, degree, proc, hub_call, *compare(hub_call, base[proc], rounds))


def row_text(backend: str, proc: str, hop: int, degree: int, t_hub: float, t_base: float) -> str:
    return (
        f"{backend:8s} {proc:12s} hop {hop}  d={degree:>9,}  {t_hub * 1e3:9.1f} ms/call  "
        f"baseline (d=10) {t_base * 1e3:7.2f} ms  ratio {t_hub / t_base:8.1f}x"
    )


# -- embedded -----------------------------------------------------------------------------------
def build_embedded(
    degrees: list[int], weighted: bool = False
) -> tuple[Any, dict[int, int], dict[int, int]]:
    """(graph, degree -> hub id, degree -> one leaf id); degree 10 is the baseline star. With
    ``weighted`` each relationship has ``w`` = 1 .. 5 (its leaf's index mod 5, plus 1)."""
    from memgraph_tf.embedded import EmbeddedGraph

    g = EmbeddedGraph(default_memory_limit_bytes=None, count_api_calls=False)
    hubs, leaves = {}, {}
    for degree in [BASE_DEGREE, *degrees]:
        hub = g.add_node(["N"])
        hubs[degree] = hub
        for i in range(degree):
            leaf = g.add_node(["N"])
            g.add_edge(hub, leaf, "E", {"w": float(1 + i % 5)} if weighted else None)
        leaves[degree] = leaf
    return g, hubs, leaves


def embedded_rows(degrees: list[int], rounds: int) -> list[tuple[Any, ...]]:
    t0 = time.perf_counter()
    g, hubs, leaves = build_embedded(degrees)
    print(
        f"embedded graph: {g.node_count:,} nodes, {g.edge_count:,} relationships, built in "
        f"{time.perf_counter() - t0:.1f} s"
    )

    def sample(proc: str, seed: int, fanouts: list[int]) -> str:
        if proc == "sample":
            [row] = g.call("tf_features.sample", [seed], fanouts, [], HOMOGENEOUS)
        else:
            [row] = g.call("tf_features.sample_typed", [seed], {SPEC: fanouts}, {}, TYPED)
        return row["blob"]

    runtime = g._runtime  # (the counting switch of this graph's runtime, for the counted calls)
    rows = []
    for hop, degree, proc, hub_call, t_hub, t_base in compared_calls(
        sample, hubs, leaves, degrees, rounds
    ):
        runtime.count_api_calls = True
        try:
            slots = valid_slots(hub_call())
            counted = g.api_calls
        finally:
            runtime.count_api_calls = False
        total = sum(counted.values())
        walked = counted.get("Edge.from_vertex", 0) + counted.get("Edge.to_vertex", 0)
        top = sorted(counted.items(), key=lambda item: -item[1])[:4]
        print(
            f"{row_text('embedded', proc, hop, degree, t_hub, t_base)}  "
            f"{total / slots:9.1f} _mgp calls per sampled neighbour ({total:,} calls, "
            f"{walked:,} relationships walked, {slots} sampled; "
            f"{', '.join(f'{m} {c:,}' for m, c in top)})"
        )
        rows.append(("embedded", proc, hop, degree, t_hub, t_base, total / slots))
    return rows


# -- the bounded mode (memgraph_tf/procedures/reservoir.py) ------------------------------------
def bounded_rows(degrees: list[int], rounds: int, capacity: int) -> list[tuple[Any, ...]]:
    """``tf_features.sample`` (ids only, fanout 10) in the bounded mode on the embedded runtime:
    reservoirs of ``capacity`` built by ``tf_features.build_reservoirs`` (one page), drawn from
    above a threshold of ``capacity``; hop 1 from each hub and hop 2 from a leaf, against the
    same call from the degree-10 star (exact: no reservoir there). Prints the build's time and
    the acceptance figure: the time per call at the largest degree over that at the smallest."""
    t0 = time.perf_counter()
    g, hubs, leaves = build_embedded(degrees)
    t1 = time.perf_counter()
    [page] = g.call(
        "tf_features.build_reservoirs",
        {"capacity": capacity, "seed": 1, "direction": "both", "batch_nodes": g.node_count + 1},
    )
    print(
        f"bounded: graph of {g.node_count:,} nodes built in {t1 - t0:.1f} s; "
        f"{page['reservoirs']} reservoirs of {capacity} built in {time.perf_counter() - t1:.1f} s "
        "(tf_features.build_reservoirs, one pass)"
    )
    options = {**HOMOGENEOUS, "reservoir_threshold": capacity}

    def sample(seed: int, fanouts: list[int]) -> str:
        [row] = g.call("tf_features.sample", [seed], fanouts, [], options)
        return row["blob"]

    rows = []
    for hop, seed_of in ((1, hubs), (2, leaves)):
        fanouts = [10] * hop
        base = functools.partial(sample, seed_of[BASE_DEGREE], fanouts)
        best = {}
        for degree in degrees:
            hub = functools.partial(sample, seed_of[degree], fanouts)
            best[degree], t_base = compare(hub, base, rounds)
            print(row_text("bounded", "sample", hop, degree, best[degree], t_base))
            rows.append(("bounded", "sample", hop, degree, best[degree], t_base, None))
        lo, hi = min(degrees), max(degrees)
        print(
            f"bounded  sample       hop {hop}  d={hi:,} / d={lo:,}: "
            f"{best[hi] / best[lo]:.2f}x the time per call"
        )
    return rows


WEIGHTED_SPECS = {
    "weighted": "(:N)-[:E {weight: w}]-(:N)",
    "weighted, replace": "(:N)-[:E {weight: w, replace: true}]-(:N)",
}


def graph_with_reservoirs(
    degrees: list[int], capacity: int, step: dict, what: str
) -> tuple[Any, dict[int, int]]:
    """The weighted stars of ``degrees`` on the embedded runtime with reservoirs of ``capacity``
    built for ``step`` (``tf_features.build_reservoirs``, one pass); prints what it took under
    the heading ``what``. Returns (graph, degree -> hub id)."""
    t0 = time.perf_counter()
    g, hubs, _ = build_embedded(degrees, weighted=True)
    t1 = time.perf_counter()
    [page] = g.call(
        "tf_features.build_reservoirs",
        {"capacity": capacity, "seed": 1, "batch_nodes": g.node_count + 1, **step},
    )
    print(
        f"{what}: graph of {g.node_count:,} nodes built in {t1 - t0:.1f} s; "
        f"{page['reservoirs']} reservoirs of {capacity} built in "
        f"{time.perf_counter() - t1:.1f} s (tf_features.build_reservoirs, one pass)"
    )
    return g, hubs


def weighted_bounded_rows(degrees: list[int], rounds: int, capacity: int) -> list[tuple]:
    """``tf_features.sample_typed`` over a weighted step (``WEIGHTED_SPECS``: without and with
    replacement; ids only, fanout 10) in the bounded mode on the embedded runtime: weighted
    reservoirs of ``capacity`` (``options.weight``), drawn from above a threshold of
    ``capacity``; hop 1 from each hub against the same call from the degree-10 weighted star
    (exact: no reservoir there), and the exact path's time at each degree for scale."""
    step = {"edge_types": ["E"], "direction": "both", "neighbour_label": "N", "weight": "w"}
    g, hubs = graph_with_reservoirs(degrees, capacity, step, "weighted bounded")

    def sample(spec: str, seed: int, threshold: int | None) -> str:
        opts = {**TYPED, "reservoir_threshold": threshold}
        [row] = g.call("tf_features.sample_typed", [seed], {spec: [10]}, {}, opts)
        return row["blob"]

    rows = []
    for name, spec in WEIGHTED_SPECS.items():
        base = functools.partial(sample, spec, hubs[BASE_DEGREE], capacity)
        for degree in degrees:
            hub = functools.partial(sample, spec, hubs[degree], capacity)
            t_hub, t_base = compare(hub, base, rounds)
            exact, _ = compare(functools.partial(sample, spec, hubs[degree], None), base, 1)
            print(
                f"{row_text('bounded', name, 1, degree, t_hub, t_base)}  "
                f"(exact path {exact * 1e3:.1f} ms/call)"
            )
            rows.append(("bounded", f"sample_typed ({name})", 1, degree, t_hub, t_base, None))
    return rows


EDGE_SPEC = {"label": "E", "properties": [{"name": "w", "kind": "numeric"}]}


def edge_bounded_rows(degrees: list[int], rounds: int, capacity: int) -> list[tuple]:
    """``tf_features.sample_typed`` over ``(:N)-[:E]-(:N)`` with edge feature columns (the
    relationships' ``w``, ``options.edge_feature_spec``; fanout 10) in the bounded mode on the
    embedded runtime: uniform reservoirs of ``capacity`` drawn from above a threshold of
    ``capacity``, the slots' member relationships read from the leaves' side; hop 1 from each
    hub against the same call from the degree-10 star (exact: no reservoir there), and the same
    call without edge columns and on the exact path at each degree for scale."""
    step = {"edge_types": ["E"], "direction": "both", "neighbour_label": "N"}
    g, hubs = graph_with_reservoirs(degrees, capacity, step, "edge columns, bounded")

    def sample(seed: int, threshold: int | None, edges: bool = True) -> str:
        opts = {**TYPED, "reservoir_threshold": threshold}
        opts["edge_feature_spec"] = {SPEC: EDGE_SPEC} if edges else None
        [row] = g.call("tf_features.sample_typed", [seed], {SPEC: [10]}, {}, opts)
        return row["blob"]

    rows = []
    base = functools.partial(sample, hubs[BASE_DEGREE], capacity)
    for degree in degrees:
        hub = functools.partial(sample, hubs[degree], capacity)
        t_hub, t_base = compare(hub, base, rounds)
        plain, _ = compare(functools.partial(sample, hubs[degree], capacity, False), base, rounds)
        exact, _ = compare(functools.partial(sample, hubs[degree], None), base, 1)
        print(
            f"{row_text('bounded', 'edge columns', 1, degree, t_hub, t_base)}  (without edge "
            f"columns {plain * 1e3:.1f} ms/call; exact path {exact * 1e3:.1f} ms/call)"
        )
        rows.append(("bounded", "sample_typed (edge columns)", 1, degree, t_hub, t_base, None))
    return rows


# -- Bolt fallback ------------------------------------------------------------------------------
def load_bolt(source: Any, degrees: list[int], batch: int = 5000) -> tuple[dict, dict]:
    """Writes the stars to ArcadeDB (``:N {id}`` nodes); returns (degree -> hub's ``id(n)``,
    degree -> one leaf's ``id(n)``)."""
    source.write("MATCH (n:N) DETACH DELETE n")
    hubs, leaves = {}, {}
    next_id = 0
    for degree in [BASE_DEGREE, *degrees]:
        hub_key, next_id = next_id, next_id + 1
        source.write("CREATE (:N {id: $id})", {"id": hub_key})
        for lo in range(0, degree, batch):
            keys = list(range(next_id + lo, next_id + min(degree, lo + batch)))
            source.write(
                "MATCH (h:N {id: $hub}) UNWIND $ids AS i CREATE (h)-[:E]->(:N {id: i})",
                {"hub": hub_key, "ids": keys},
            )
        leaf_key, next_id = next_id + degree - 1, next_id + degree
        [row] = source.read(
            "MATCH (h:N {id: $h}), (l:N {id: $l}) RETURN id(h) AS h, id(l) AS l",
            {"h": hub_key, "l": leaf_key},
        )
        hubs[degree], leaves[degree] = row["h"], row["l"]
    return hubs, leaves


def bolt_rows(degrees: list[int], rounds: int) -> list[tuple[Any, ...]]:
    from memgraph_tf.client import connect
    from memgraph_tf.datasets import request_id_index
    from memgraph_tf.testing.arcadedb import ArcadeDBServerProcess

    t0 = time.perf_counter()
    with ArcadeDBServerProcess() as server:
        source = connect(server.uri, auth=server.auth, database=server.database)
        t1 = time.perf_counter()
        request_id_index(source, "N")  # (speeds up the load only)
        hubs, leaves = load_bolt(source, degrees)
        print(
            f"ArcadeDB (Bolt fallback): started in {t1 - t0:.1f} s, {sum(degrees) + BASE_DEGREE:,} "
            f"relationships loaded in {time.perf_counter() - t1:.1f} s"
        )

        def sample(proc: str, seed: int, fanouts: list[int]) -> bytes:
            if proc == "sample":
                return source.sample_blob([seed], fanouts, [], HOMOGENEOUS)
            return source.sample_typed([seed], {SPEC: fanouts}, {}, TYPED)

        rows = []
        for hop, degree, proc, _, t_hub, t_base in compared_calls(
            sample, hubs, leaves, degrees, rounds
        ):
            print(row_text("bolt", proc, hop, degree, t_hub, t_base))
            rows.append(("bolt", proc, hop, degree, t_hub, t_base, None))
        probe_bolt(source, hubs, degrees, rounds)
        source.close()
    return rows


ALL_ROWS = (  # the fallback's neighbour query (client/sources/cypher.py), for one node
    "UNWIND $rows AS row MATCH (n)-[r]-(m) WHERE id(n) = row.internal "
    "RETURN row.key AS key, id(m) AS nbr, id(m) AS internal"
)
COUNT = "MATCH (n)-[r]-(m) WHERE id(n) = $i RETURN count(DISTINCT m) AS d"
PICK = (  # the keys at positions $idx of the node's sorted distinct neighbour keys
    "MATCH (n)-[r]-(m) WHERE id(n) = $i WITH DISTINCT id(m) AS k ORDER BY k "
    "WITH collect(k) AS ks RETURN [j IN $idx | ks[j]] AS picked"
)


def probe_bolt(source: Any, hubs: dict[int, int], degrees: list[int], rounds: int) -> None:
    """Where the fallback's time goes at a hub: the neighbour query it sends (every neighbour's
    row) against a server-side ``count(DISTINCT m)`` and a query returning only the keys at 10
    positions of the sorted distinct neighbours (drawn with ``rng.sample(range(d), 10)``: the
    positions ``rng.sample`` picks from the sorted list; checked equal to those of the rows)."""
    print("Bolt fallback at a hub, by query (best of rounds):")
    for degree in [BASE_DEGREE, *degrees]:
        hub = hubs[degree]
        [row] = source.read(COUNT, {"i": hub})
        idx = random.Random(7).sample(range(row["d"]), min(10, row["d"]))
        best: dict[str, float] = {}
        results: dict[str, Any] = {}
        for _ in range(rounds):
            for name, query, params in (
                ("all rows", ALL_ROWS, {"rows": [{"key": hub, "internal": hub}]}),
                ("count", COUNT, {"i": hub}),
                ("pick", PICK, {"i": hub, "idx": idx}),
            ):
                t0 = time.perf_counter()
                results[name] = source.read(query, params)
                best[name] = min(best.get(name, float("inf")), time.perf_counter() - t0)
        keys = sorted({row["nbr"] for row in results["all rows"]})
        picked = results["pick"][0]["picked"]
        assert picked == [keys[j] for j in idx], "the server's positions differ from the rows'"
        assert picked == random.Random(7).sample(keys, len(idx)), "rng.sample drew other keys"
        print(
            f"  d={degree:>9,}: all {len(keys):,} rows {best['all rows'] * 1e3:8.1f} ms   "
            f"count(DISTINCT m) {best['count'] * 1e3:7.1f} ms   10 picked positions "
            f"{best['pick'] * 1e3:7.1f} ms (= rng.sample over the rows, checked)"
        )


def markdown(rows: list[tuple[Any, ...]]) -> str:
    lines = [
        "| backend | procedure | hop | degree | ms/call | baseline (d=10) ms | ratio | "
        "`_mgp` calls per sampled neighbour |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for backend, proc, hop, degree, t_hub, t_base, per_slot in rows:
        counted = "" if per_slot is None else f"{per_slot:,.1f}"
        lines.append(
            f"| {backend} | `{proc}` | {hop} | {degree:,} | {t_hub * 1e3:.1f} | "
            f"{t_base * 1e3:.2f} | {t_hub / t_base:.0f}x | {counted} |"
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--degrees", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    parser.add_argument(
        "--with-million", action="store_true", help="add a hub of 10^6 (embedded only)"
    )
    parser.add_argument("--bolt-degrees", type=int, nargs="+", default=[1_000, 10_000])
    parser.add_argument("--skip-bolt", action="store_true")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--markdown", action="store_true", help="also print the table as markdown")
    parser.add_argument(
        "--bounded", action="store_true", help="add the bounded mode's rows (embedded)"
    )
    parser.add_argument("--bounded-only", action="store_true", help="only the bounded mode's rows")
    parser.add_argument("--capacity", type=int, default=100, help="the bounded mode's R")
    parser.add_argument(
        "--weighted-only",
        action="store_true",
        help="only the bounded mode's rows of a weighted step (sample_typed)",
    )
    parser.add_argument(
        "--edges-only",
        action="store_true",
        help="only the bounded mode's rows with edge feature columns (sample_typed)",
    )
    args = parser.parse_args()
    degrees = sorted(set(args.degrees) | ({1_000_000} if args.with_million else set()))
    start = time.perf_counter()
    print(f"load average {os.getloadavg()[0]:.1f} ({os.cpu_count()} CPUs); {args.rounds} rounds")
    if args.weighted_only:
        rows = weighted_bounded_rows(degrees, args.rounds, args.capacity)
        args.skip_bolt = True
    elif args.edges_only:
        rows = edge_bounded_rows(degrees, args.rounds, args.capacity)
        args.skip_bolt = True
    elif args.bounded_only:
        rows = bounded_rows(degrees, args.rounds, args.capacity)
        args.skip_bolt = True
    else:
        rows = embedded_rows(degrees, args.rounds)
        if args.bounded:
            rows += bounded_rows(degrees, args.rounds, args.capacity)
            rows += weighted_bounded_rows(degrees, args.rounds, args.capacity)
            rows += edge_bounded_rows(degrees, args.rounds, args.capacity)
    if args.skip_bolt:
        pass
    elif importlib.util.find_spec("arcadedb_embedded") is None:
        print("Bolt rows skipped: arcadedb-embedded is not installed")
    else:
        rows += bolt_rows(sorted(set(args.bolt_degrees)), args.rounds)
    print(f"load average {os.getloadavg()[0]:.1f}; total {time.perf_counter() - start:.0f} s")
    if args.markdown:
        print(markdown(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
