"""Fetch benchmark over real Bolt (ArcadeDB from PyPI, started in its own process).

Rows of ``--dim`` float features, fetched two ways in the same run:

* **lists**: ``OpenCypherDataset`` over ``MATCH (n:BenchRow) RETURN n.f`` -- each row a Bolt list of
  floats, decoded by the Python driver, validated and cast to float32, then batched;
* **blob**: the same features packed as one blob per ``--batch`` rows (what ``tf_features.pack``
  returns on Memgraph: a base64url string), fetched as one string per batch through
  ``OpenCypherDataset``, then the unpack op, which decodes the base64 text itself, inside the
  tf.data graph.

Both produce identical float32 tensors (checked). Prints rows/s for each and the ratio (target >=
10x); medians of ``--repeats`` interleaved passes after one warm-up each.

    .venv/bin/python benchmarks/fetch.py --rows 20000 --dim 128 --batch 1024
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import tensorflow as tf

from memgraph_tf import blob, ops
from memgraph_tf.client import OpenCypherDataset, connect
from memgraph_tf.client.pipeline import unpacker
from memgraph_tf.testing.arcadedb import ArcadeDBServerProcess


def load(source, rows: int, dim: int, batch: int) -> np.ndarray:
    rng = np.random.default_rng(0)
    data = rng.standard_normal((rows, dim)).astype(np.float32)
    source.write("MATCH (n:BenchRow) DELETE n")
    source.write("MATCH (n:BenchBatch) DELETE n")
    for start in range(0, rows, 1000):
        part = data[start : start + 1000]
        source.write(
            "UNWIND $rows AS r CREATE (:BenchRow {i: r.i, f: r.f})",
            {"rows": [{"i": start + j, "f": row.tolist()} for j, row in enumerate(part)]},
        )
    blobs = []
    for b, start in enumerate(range(0, rows, batch)):
        part = data[start : start + batch]
        text = blob.pack_b64(
            {"features": part, "ids": np.arange(start, start + len(part), dtype=np.int64)}
        )
        blobs.append({"i": b, "blob": text})
    for start in range(0, len(blobs), 8):
        source.write(
            "UNWIND $rows AS r CREATE (:BenchBatch {i: r.i, blob: r.blob})",
            {"rows": blobs[start : start + 8]},
        )
    return data


def lists_dataset(source, dim: int, batch: int) -> tf.data.Dataset:
    ds = OpenCypherDataset(
        source,
        "MATCH (n:BenchRow) RETURN n.f AS f ORDER BY n.i",
        {"f": ("float32", [dim])},
        fetch_size=1000,
    )
    return ds.map(lambda row: row["f"]).batch(batch)


def blob_dataset(source, dim: int, decoder: str) -> tf.data.Dataset:
    unpack = unpacker(decoder)
    ds = OpenCypherDataset(
        source, "MATCH (b:BenchBatch) RETURN b.blob AS blob ORDER BY b.i", tf.string, fetch_size=8
    )

    def decode(text: tf.Tensor) -> tf.Tensor:
        return unpack(text, ["features"], [tf.float32], shapes=[[None, dim]], encoding="base64")[0]

    return ds.map(decode, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)


def run_once(ds: tf.data.Dataset) -> tuple[float, np.ndarray]:
    started = time.perf_counter()
    parts = [t.numpy() for t in ds]
    return time.perf_counter() - started, np.concatenate(parts)


def measure(
    datasets: dict[str, tf.data.Dataset], repeats: int
) -> dict[str, tuple[float, np.ndarray]]:
    """Median seconds per full pass, after one warm-up pass each (the server JIT-compiles its query
    paths); the ways take turns so that load from elsewhere hits both alike."""
    for ds in datasets.values():
        run_once(ds)
    times: dict[str, list[float]] = {name: [] for name in datasets}
    out: dict[str, np.ndarray] = {}
    for _ in range(repeats):
        for name, ds in datasets.items():
            seconds, out[name] = run_once(ds)
            times[name].append(seconds)
    return {name: (statistics.median(times[name]), out[name]) for name in datasets}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=20000)
    parser.add_argument("--dim", type=int, default=128)
    parser.add_argument(
        "--batch", type=int, default=1024, help="rows per blob (and per lists batch)"
    )
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--decoder", default="auto", choices=["auto", "op", "portable"])
    args = parser.parse_args()

    with ArcadeDBServerProcess() as server:
        with connect(server.uri, auth=server.auth, database=server.database) as source:
            started = time.perf_counter()
            data = load(source, args.rows, args.dim, args.batch)
            print(
                f"loaded {args.rows} rows x {args.dim} float32 into ArcadeDB in "
                f"{time.perf_counter() - started:.1f} s"
            )
            # "auto" falls back to the stock-op decoder when the op library cannot be built: say
            # which ran
            way = "unpack op" if unpacker(args.decoder) is ops.unpack_blob else "portable decoder"
            results = measure(
                {
                    "lists": lists_dataset(source, args.dim, args.batch),
                    "blob": blob_dataset(source, args.dim, args.decoder),
                },
                args.repeats,
            )
            (lists_s, lists_out), (blob_s, blob_out) = results["lists"], results["blob"]
            if not (np.array_equal(lists_out, data) and np.array_equal(blob_out, data)):
                raise SystemExit("fetched features differ from the features loaded")
    lists_rate, blob_rate = args.rows / lists_s, args.rows / blob_s
    print(
        f"lists of floats via OpenCypherDataset : {lists_rate:12,.0f} rows/s  ({lists_s:.3f} s, "
        f"median of {args.repeats})"
    )
    print(
        f"blob per {args.batch} rows via {way:<15}: {blob_rate:12,.0f} rows/s  ({blob_s:.3f} s, "
        f"median of {args.repeats})"
    )
    print(
        f"ratio blob / lists                    : {blob_rate / lists_rate:12.1f} x  (target >= 10 "
        "x)"
    )


if __name__ == "__main__":
    main()
