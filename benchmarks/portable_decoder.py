"""Benchmark: what the op-free decoder (``unpack_blob_portable``) costs an op-free bundle.

For each layout (``--layouts``, default dense and sparse) an untrained seeded GraphSAGE (fanouts
``--fanouts``, ``--dim`` features, 16 units) is exported op-free (``use_op=False``, no warmup
record), each export in its own fresh process; then a fresh process loads the bundle the way the
model server does (``tf.saved_model.load``) and calls its ``predict`` and ``classify`` signatures
on ``--batch`` request blobs of that layout (sampled from a small embedded graph). Printed per
layout:

* **export**: the wall time of ``export_bundle`` (tracing the signatures and saving);
* **load**: ``tf.saved_model.load``;
* **first call** of each signature: what every process that loads the bundle pays once per
  signature (TensorFlow instantiates and optimizes the signature's function graph then);
* **steady**: the median of ``--repeat`` later calls of ``predict``;
* **nodes**: the nodes of the SavedModel's serving graph (graph plus function library), and
  **nodes_instantiated**: the same less the functions marked ``_noinline``, which TensorFlow
  instantiates only when called (the decoder's error messages);
* and, once, the decoder alone: ``unpack_blob_portable`` traced in a ``tf.function`` for the dense
  layout's sections (nodes, trace time, first call, median call).

With ``--baseline REV`` every child runs twice per round, alternating, with the ``memgraph_tf``
package of commit ``REV`` (``git archive``, first on the children's ``PYTHONPATH``) and with this
checkout's, and the ratios now / baseline are printed (medians over ``--rounds``). The load average
is printed before and after.

    .venv/bin/python benchmarks/portable_decoder.py --baseline d4b3e3e
    .venv/bin/python benchmarks/portable_decoder.py --layouts dense --rounds 1
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from batch import child_env, materialise  # noqa: E402 -- beside this file: importable once HERE is on sys.path

NOW = "now"


def _nodes(graph_def) -> tuple[int, int]:
    """Nodes of a graph: its own plus every function of its library; and the same without the
    functions marked ``_noinline`` (TensorFlow instantiates those only when they are called: the
    portable decoder's error messages)."""
    own = len(graph_def.node)
    functions = [(len(f.node_def), "_noinline" in f.attr) for f in graph_def.library.function]
    return (
        own + sum(n for n, _ in functions),
        own + sum(n for n, deferred in functions if not deferred),
    )


def make_blobs(layout: str, fanouts: list[int], dim: int, batch: int) -> list[bytes]:
    """``batch`` per-node request blobs of ``layout``, sampled from a seeded random graph."""
    import numpy as np

    from memgraph_tf import blob
    from memgraph_tf.embedded import EmbeddedGraph

    rng = np.random.default_rng(0)
    n = 200
    feats = rng.standard_normal((n, dim)).astype(np.float32).tolist()
    src, dst = rng.integers(0, n, size=4 * n).tolist(), rng.integers(0, n, size=4 * n).tolist()
    graph = EmbeddedGraph.from_edge_list(
        zip(src, dst), num_nodes=n, label="Node", node_properties={"features": feats}
    )
    rows = graph.call(
        "tf_features.sample_per_node",
        list(range(batch)),
        fanouts,
        ["features"],
        {"seed": 7, "layout": layout},
    )
    return [blob.b64decode(r["blob"]) for r in rows]


def child_export(args: argparse.Namespace) -> dict:
    """Exports the op-free bundle of ``args.layout`` under ``args.dir``: its wall time and nodes."""
    import keras
    from tensorflow.core.protobuf import saved_model_pb2

    from memgraph_tf.client import GraphSAGE
    from memgraph_tf.serving import export_bundle

    keras.utils.set_random_seed(0)
    model = GraphSAGE(
        args.fanouts, args.dim, 4, hidden_units=16, dropout=0.0, class_names=["a", "b", "c", "d"]
    ).ensure_built()
    t0 = time.perf_counter()
    info = export_bundle(
        model,
        args.dir,
        "Bench",
        1,
        use_op=False,
        layout=args.layout,
        properties=["features"],
        warmup=False,
    )
    export_s = time.perf_counter() - t0
    sm = saved_model_pb2.SavedModel()
    sm.ParseFromString((info.path / "saved_model.pb").read_bytes())
    nodes, instantiated = _nodes(sm.meta_graphs[0].graph_def)
    return {
        "export_s": export_s,
        "nodes": nodes,
        "nodes_instantiated": instantiated,
        "path": str(info.path),
    }


def child_load(args: argparse.Namespace) -> dict:
    """Loads the bundle at ``args.dir`` and times each signature's first and later calls."""
    import tensorflow as tf

    blobs = json.loads(pathlib.Path(args.blobs).read_text())
    blobs = [bytes.fromhex(b) for b in blobs]
    examples = [
        tf.train.Example(
            features=tf.train.Features(
                feature={"blob": tf.train.Feature(bytes_list=tf.train.BytesList(value=[b]))}
            )
        ).SerializeToString()
        for b in blobs
    ]
    t0 = time.perf_counter()
    loaded = tf.saved_model.load(args.dir)
    out = {"load_s": time.perf_counter() - t0}
    from memgraph_tf.serving import bundle

    predict = loaded.signatures[bundle.PREDICT_SIGNATURE]
    classify = loaded.signatures[bundle.CLASSIFY_SIGNATURE]
    calls = {
        "predict": lambda: predict(**{bundle.PREDICT_INPUT: tf.constant(blobs)}),
        "classify": lambda: classify(**{bundle.CLASSIFY_INPUT: tf.constant(examples)}),
    }
    for name, call in calls.items():
        t0 = time.perf_counter()
        call()
        out[f"first_{name}_s"] = time.perf_counter() - t0
    times = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        calls["predict"]()
        times.append(time.perf_counter() - t0)
    out["steady_ms"] = statistics.median(times) * 1000
    return out


def child_decoder(args: argparse.Namespace) -> dict:
    """``unpack_blob_portable`` alone, for the dense layout's sections, in a tf.function."""
    import tensorflow as tf

    from memgraph_tf import blob, ops

    blobs = [bytes.fromhex(b) for b in json.loads(pathlib.Path(args.blobs).read_text())]
    table = blob.read_table(blobs[0])
    names = [s.name for s in table]
    dtypes = [s.dtype for s in table]
    t0 = time.perf_counter()
    fn = tf.function(
        lambda b: ops.unpack_blob_portable(b, names, dtypes), autograph=False
    ).get_concrete_function(tf.TensorSpec([None], tf.string))
    trace_s = time.perf_counter() - t0
    nodes, instantiated = _nodes(fn.graph.as_graph_def())
    x = tf.constant(blobs)
    t0 = time.perf_counter()
    fn(x)
    first_s = time.perf_counter() - t0
    times = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        fn(x)
        times.append(time.perf_counter() - t0)
    return {
        "sections": len(names),
        "nodes": nodes,
        "nodes_instantiated": instantiated,
        "trace_s": trace_s,
        "first_s": first_s,
        "steady_ms": statistics.median(times) * 1000,
    }


def run_child(mode: str, package: pathlib.Path | None, **kw) -> dict:
    cmd = [sys.executable, __file__, f"--child-{mode}"]
    for k, v in kw.items():
        cmd += [f"--{k.replace('_', '-')}", *(str(x) for x in (v if isinstance(v, list) else [v]))]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=child_env(package))
    if proc.returncode != 0:
        raise SystemExit(f"child {mode} failed:\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", help="a git revision to compare against, in the same run")
    parser.add_argument("--layouts", nargs="+", default=["dense", "sparse"])
    parser.add_argument("--fanouts", nargs="+", type=int, default=[10, 10])
    parser.add_argument("--dim", type=int, default=16)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=2)
    for mode in ("export", "load", "decoder"):
        parser.add_argument(f"--child-{mode}", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--dir", help=argparse.SUPPRESS)
    parser.add_argument("--layout", help=argparse.SUPPRESS)
    parser.add_argument("--blobs", help=argparse.SUPPRESS)
    args = parser.parse_args()
    for mode, fn in (("export", child_export), ("load", child_load), ("decoder", child_decoder)):
        if getattr(args, f"child_{mode}"):
            print(json.dumps(fn(args)))
            return

    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = pathlib.Path(tmp_name)
        versions: dict[str, pathlib.Path | None] = {NOW: None}
        if args.baseline:
            base_dir, sha = materialise(args.baseline, tmp / "baseline")
            versions = {f"baseline {sha}": base_dir, NOW: None}
        blob_files = {}
        for layout in args.layouts:
            path = tmp / f"blobs-{layout}.json"
            blobs = make_blobs(layout, args.fanouts, args.dim, args.batch)
            path.write_text(json.dumps([b.hex() for b in blobs]))
            blob_files[layout] = path
        common = {"fanouts": args.fanouts, "dim": args.dim, "repeat": args.repeat}
        results: dict[tuple[str, str], list[dict]] = {}
        for r in range(args.rounds):
            order = list(versions) if r % 2 == 0 else list(reversed(versions))
            for label in order:
                package = versions[label]
                for layout in args.layouts:
                    out = tmp / f"{label.split()[0]}-{layout}-{r}"
                    exp = run_child("export", package, dir=out, layout=layout, **common)
                    load = run_child(
                        "load", package, dir=exp["path"], blobs=blob_files[layout], **common
                    )
                    results.setdefault((label, layout), []).append({**exp, **load})
                if "dense" in blob_files:
                    dec = run_child("decoder", package, blobs=blob_files["dense"], **common)
                    results.setdefault((label, "decoder"), []).append(dec)
    print(
        f"op-free GraphSAGE bundles, fanouts {args.fanouts}, dim {args.dim}, batch {args.batch}; "
        f"medians of {args.rounds} round(s), each child a fresh process"
    )
    keys = ["export_s", "load_s", "first_predict_s", "first_classify_s", "steady_ms", "nodes"]
    keys.append("nodes_instantiated")
    dec_keys = ["sections", "nodes", "nodes_instantiated", "trace_s", "first_s", "steady_ms"]
    for layout in [*args.layouts, "decoder"]:
        if (NOW, layout) not in results:
            continue
        title = "decoder alone (dense sections)" if layout == "decoder" else f"layout {layout}"
        print(f"\n{title}")
        for key in dec_keys if layout == "decoder" else keys:
            row = {}
            for label in versions:
                row[label] = statistics.median(x[key] for x in results[(label, layout)])
            text = "  ".join(f"{label}: {v:10.3f}" for label, v in row.items())
            if len(row) == 2:
                base, now = row.values()
                text += f"  now/baseline: {now / base:.2f}" if base else ""
            print(f"  {key:18s} {text}")
    print(f"\nload average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
