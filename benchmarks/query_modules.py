"""Benchmark the tf_features query module through the embedded runtime (the real mgp.py).

1. pack throughput for 128-d float vectors: ``tf_features.pack`` (one base64 blob, decoded with
   numpy) vs a baseline procedure returning the same features as lists of floats, one row per node
   (converted to a numpy array on the client); nodes/s and MB/s of float32 feature payload, and the
   ratio, measured in this run.
2. 2-hop GraphSAGE sampling (fanouts 10, 5) seeds/s on a power-law (preferential-attachment) graph
   of 100k nodes, ids only and with features, batched (``sample``) and one seed per call, against
   the older sampler (the code at commit 93e52a3, materialised from git history by
   ``_sample_baseline.py``; it must write the same bytes) in alternating rounds of the same run;
   then per node (``sample_per_node``) and the compact and sparse layouts. ``--baseline REV``
   compares with the sampler of any other commit instead (e.g. the one before a change: its
   ``memgraph_tf`` helper files and query module, read with ``git show``), the same way, and then
   per node and the compact and sparse layouts too (same bytes, checked; alternating rounds).

Usage: python benchmarks/query_modules.py [--pack-nodes N] [--graph-nodes N] [--seeds N]
                                          [--skip-pack] [--baseline REV]
The embedded runtime adds Python overhead per graph access that Memgraph's C++ side does not have,
so absolute numbers are a floor; the ratios compare like with like.
"""

from __future__ import annotations

import argparse
import importlib.util
import pathlib
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from typing import NamedTuple

import numpy as np

from memgraph_tf import blob
from memgraph_tf.embedded import EmbeddedGraph

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import _sample_baseline  # noqa: E402 -- beside this file: importable once HERE is on sys.path

REV_MODULE = "_sample_rev"
"""The query-module name a ``--baseline REV`` sampler is loaded under (``_sample_rev.sample``)."""
_REV_TOP_FILES = ("__init__.py", "errors.py", "lazy.py", "blob.py", "layout.py")


def _git(*args: str) -> str:
    proc = subprocess.run(
        ["git", "-C", str(HERE.parent), *args], capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        raise SystemExit(f"--baseline: git {' '.join(args)} failed: {proc.stderr.strip()}")
    return proc.stdout


def materialise_rev(rev: str, dest: str) -> tuple[pathlib.Path, str]:
    """Writes the query module and the stdlib-only ``memgraph_tf`` helper files of commit ``rev``
    under ``dest``, the package renamed so that it sits beside today's, registers the package and
    returns (the module file to load as :data:`REV_MODULE`, the commit's short hash)."""
    sha = _git("rev-parse", "--short", f"{rev}^{{commit}}").strip()
    package = f"_memgraph_tf_{sha}"
    listed = _git("ls-tree", "-r", "--name-only", sha, "memgraph_tf/").split()
    wanted = [f"memgraph_tf/{name}" for name in _REV_TOP_FILES] + [
        path
        for path in listed
        if re.fullmatch(r"memgraph_tf/(procedures/)?[^/]+\.py", path)
        and path.removeprefix("memgraph_tf/") not in _REV_TOP_FILES
    ]  # (every top-level module too: the procedures of later commits import more of them)
    name = re.compile(r"\bmemgraph_tf\b")
    root = pathlib.Path(dest) / package
    for path in wanted:
        if path not in listed:
            continue
        target = root / path.removeprefix("memgraph_tf/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(name.sub(package, _git("show", f"{sha}:{path}")))
    module_file = pathlib.Path(dest) / f"{REV_MODULE}.py"
    module_file.write_text(name.sub(package, _git("show", f"{sha}:query_modules/tf_features.py")))
    spec = importlib.util.spec_from_file_location(
        package, root / "__init__.py", submodule_search_locations=[str(root)]
    )
    assert spec is not None and spec.loader is not None
    sys.modules[package] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sys.modules[package])
    return module_file, sha


def best_of(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def bench_pack(n: int, d: int, repeat: int) -> None:
    rng = random.Random(0)
    g = EmbeddedGraph()
    g.load_module(HERE / "_lists_module.py")
    for _ in range(n):
        g.add_node(["N"], {"f": [rng.random() for _ in range(d)]})
    ids = list(range(n))
    payload_mb = n * d * 4 / 1e6

    def via_blob():
        [row] = g.call("tf_features.pack", ids, ["f"], {})
        return blob.unpack_b64(row["blob"])["features"]

    def via_lists():
        rows = g.call("_lists_module.features", ids, "f")
        return np.asarray([r["features"] for r in rows], dtype=np.float32)

    np.testing.assert_array_equal(via_blob(), via_lists())  # same numbers either way
    t_blob = best_of(via_blob, repeat)
    t_lists = best_of(via_lists, repeat)
    [row] = g.call("tf_features.pack", ids, ["f"], {})
    print(
        f"pack {n} nodes x {d} float32 ({payload_mb:.1f} MB of features; blob text "
        f"{len(row['blob']) / 1e6:.1f} MB)"
    )
    print(
        f"  blob  : {n / t_blob:10.0f} nodes/s  {payload_mb / t_blob:8.1f} MB/s  "
        f"({t_blob * 1e3:.0f} ms)"
    )
    print(
        f"  lists : {n / t_lists:10.0f} nodes/s  {payload_mb / t_lists:8.1f} MB/s  "
        f"({t_lists * 1e3:.0f} ms)"
    )
    print(f"  ratio blob/lists: {t_lists / t_blob:.2f}x")


def power_law_graph(n: int, m: int, d: int, seed: int = 0) -> EmbeddedGraph:
    """Preferential attachment: each new node links to m earlier nodes picked by degree."""
    rng = random.Random(seed)
    pool = [rng.random() for _ in range(1024)]  # shared float objects keep memory small
    g = EmbeddedGraph()
    for _ in range(n):
        g.add_node(["N"], {"f": [pool[rng.randrange(1024)] for _ in range(d)]})
    ends: list[int] = list(range(m))
    for v in range(m, n):
        targets = set()
        while len(targets) < m:
            targets.add(ends[rng.randrange(len(ends))])
        for t in targets:
            g.add_edge(v, t, "E")
            ends.extend((v, t))
    return g


class Sampling(NamedTuple):
    """The arguments of a sampling procedure's call after its seeds."""

    fanouts: list[int]
    props: list[str]
    options: dict


def _seeds_per_s(
    g: EmbeddedGraph, proc: str, seeds: list[int], size: int, sampling: Sampling
) -> tuple[float, float]:
    """(seeds per wall-clock second, seeds per CPU second of this thread)."""
    t0, c0 = time.perf_counter(), time.thread_time()
    for start in range(0, len(seeds), size):
        assert g.call(proc, seeds[start : start + size], *sampling)
    return len(seeds) / (time.perf_counter() - t0), len(seeds) / (time.thread_time() - c0)


def _rate_rounds(
    g: EmbeddedGraph,
    base: str,
    proc: str,
    seeds: list[int],
    size: int,
    sampling: Sampling,
    rounds: int,
    note: str = "",
) -> str:
    """The seeds/s of procedure ``base`` and of ``proc`` (the best of ``rounds`` alternating
    rounds, per wall-clock and per CPU second) and their ratios, as the rows print them, ``note``
    ending the per-round list."""
    old, new = [], []
    for _ in range(rounds):
        old.append(_seeds_per_s(g, base, seeds, size, sampling))
        new.append(_seeds_per_s(g, proc, seeds, size, sampling))
    wall_old, wall_new = max(o[0] for o in old), max(n[0] for n in new)
    cpu_old, cpu_new = max(o[1] for o in old), max(n[1] for n in new)
    return (
        f"baseline {wall_old:7.0f}  now {wall_new:7.0f} seeds/s  ratio "
        f"{wall_new / wall_old:.2f}x | per CPU s: {cpu_old:7.0f} vs {cpu_new:7.0f}, ratio "
        f"{cpu_new / cpu_old:.2f}x (per-round wall ratios "
        f"{', '.join(f'{b[0] / a[0]:.2f}' for a, b in zip(old, new))}{note})"
    )


def api_calls(
    g: EmbeddedGraph, proc: str, seeds: list[int], size: int, sampling: Sampling
) -> tuple[int, int, int, dict[str, int]]:
    """(``_mgp`` calls, edges walked, nodes read, calls per method) of sampling ``seeds`` in calls
    of ``size``, counted by the embedded runtime (``count_api_calls``; switched on for these calls
    only). An edge walked is one ``from_vertex``/``to_vertex`` call (each edge read gives its other
    end exactly once); a node read, one ``get_property`` call per property."""
    runtime = g._runtime  # (the counting switch of this graph's runtime, for these calls only)
    runtime.count_api_calls = True
    by_method: dict[str, int] = {}
    try:
        for start in range(0, len(seeds), size):
            g.call(proc, seeds[start : start + size], *sampling)
            for method, calls in g.api_calls.items():
                by_method[method] = by_method.get(method, 0) + calls
    finally:
        runtime.count_api_calls = False
    edges = by_method.get("Edge.from_vertex", 0) + by_method.get("Edge.to_vertex", 0)
    nodes = by_method.get("Vertex.get_property", 0) // max(1, len(sampling.props))
    return sum(by_method.values()), edges, nodes, by_method


def _calls_text(counted: tuple[int, int, int, dict[str, int]]) -> str:
    total, edges, nodes, by_method = counted
    top = sorted(by_method.items(), key=lambda item: -item[1])[:6]
    return (
        f"{total / max(1, edges):.2f} calls per edge walked ({total:,} calls, {edges:,} edges, "
        f"{nodes:,} node reads; {', '.join(f'{m} {c:,}' for m, c in top)})"
    )


def bench_sample(
    n: int,
    seeds_count: int,
    batch: int,
    d: int,
    rounds: int,
    baseline_dir: str,
    baseline_rev: str | None = None,
) -> None:
    """Sampling seeds/s of ``tf_features.sample`` against the older code path
    (``tf_features_93e52a3.sample``: commit 93e52a3's sampler from git history, written under
    ``baseline_dir``), alternating the two ``rounds`` times on the same
    graph and seeds; the ratio is of the best round of each, in wall-clock time and in this
    thread's CPU time (steadier on a shared machine). The two must write the same bytes. With
    ``baseline_rev`` the baseline is that commit's sampler (:func:`materialise_rev`)."""
    t0 = time.perf_counter()
    g = power_law_graph(n, 4, d)
    if baseline_rev is None:
        g.load_module(_sample_baseline.materialise(baseline_dir))
        base_proc = f"{_sample_baseline.MODULE_NAME}.sample"
        base_text = f"the older sampler at commit {_sample_baseline.COMMIT} (from git history"
    else:
        module_file, sha = materialise_rev(baseline_rev, baseline_dir)
        g.load_module(module_file)
        base_proc = f"{REV_MODULE}.sample"
        base_text = f"the sampler at commit {sha} ({baseline_rev}, from git history"
    build_s = time.perf_counter() - t0
    degrees = [len(g.neighbours(i)) for i in range(0, n, max(1, n // 2000))]
    print(
        f"power-law graph: {g.node_count} nodes, {g.edge_count} edges (built in {build_s:.1f} s); "
        f"sampled degree median {statistics.median(degrees)}, max {max(degrees)}"
    )
    rng = random.Random(1)
    seeds = [rng.randrange(n) for _ in range(seeds_count)]
    fanouts = [10, 5]
    opts = {"seed": 7}
    for props in ([], ["f"]):
        [old] = g.call(base_proc, seeds[:batch], fanouts, props, opts)
        [new] = g.call("tf_features.sample", seeds[:batch], fanouts, props, opts)
        assert old["blob"] == new["blob"], (
            "the baseline and tf_features.sample wrote different bytes"
        )
    print(
        f"  2-hop (10, 5), {len(seeds)} seeds; best of {rounds} alternating rounds; baseline = "
        f"{base_text}; same bytes, checked)"
    )
    for label, props, size in [
        ("ids only, batched", [], batch),
        (f"{d}-d features, batched", ["f"], batch),
        (f"{d}-d features, 1 seed/call", ["f"], 1),
    ]:
        count = seeds_count if size > 1 else min(seeds_count, 300)
        sampling = Sampling(fanouts, props, opts)
        rates = _rate_rounds(
            g, base_proc, "tf_features.sample", seeds[:count], size, sampling, rounds
        )
        print(f"  {label:28s}: {rates}")
    count = min(len(seeds), 4 * batch)
    for label, props in (("ids only", []), (f"{d}-d features", ["f"])):
        sampling = Sampling(fanouts, props, opts)
        old_calls = api_calls(g, base_proc, seeds[:count], batch, sampling)
        new_calls = api_calls(g, "tf_features.sample", seeds[:count], batch, sampling)
        print(
            f"  _mgp calls, {label}, {count} seeds batched: baseline {_calls_text(old_calls)}; "
            f"now {_calls_text(new_calls)}"
        )
    for label, proc, layout_name in [
        (f"{d}-d features, per node", "sample_per_node", "dense"),
        (f"{d}-d, batched, compact", "sample", "compact"),
        (f"{d}-d, batched, sparse", "sample", "sparse"),
    ]:
        lay = {**opts, "layout": layout_name}
        sampling = Sampling(fanouts, ["f"], lay)
        if baseline_rev is None:  # (the older sampler has neither per node nor layouts)
            rate = max(
                _seeds_per_s(g, f"tf_features.{proc}", seeds, batch, sampling)[0]
                for _ in range(rounds)
            )
            print(f"  {label:28s}: now {rate:7.0f} seeds/s")
            continue
        base = f"{REV_MODULE}.{proc}"
        assert g.call(base, seeds[:batch], fanouts, ["f"], lay) == g.call(
            f"tf_features.{proc}", seeds[:batch], fanouts, ["f"], lay
        ), f"the baseline and tf_features.{proc} wrote different bytes ({layout_name})"
        rates = _rate_rounds(
            g, base, f"tf_features.{proc}", seeds, batch, sampling, rounds, "; same bytes, checked"
        )
        print(f"  {label:28s}: {rates}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pack-nodes", type=int, default=20000)
    parser.add_argument("--dim", type=int, default=128)
    parser.add_argument("--graph-nodes", type=int, default=100000)
    parser.add_argument("--graph-dim", type=int, default=16)
    parser.add_argument("--seeds", type=int, default=2000)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--skip-pack", action="store_true", help="only the sampling benchmark")
    parser.add_argument(
        "--baseline",
        metavar="REV",
        help="compare sampling with the sampler of this commit (default: the older one, 93e52a3)",
    )
    args = parser.parse_args()
    if not args.skip_pack:
        bench_pack(args.pack_nodes, args.dim, args.repeat)
    with tempfile.TemporaryDirectory() as baseline_dir:
        bench_sample(
            args.graph_nodes,
            args.seeds,
            args.batch,
            args.graph_dim,
            args.repeat,
            baseline_dir,
            args.baseline,
        )


if __name__ == "__main__":
    main()
