"""Benchmark: decoding blobs with the UnpackBlob op vs the portable decoder vs stock alternatives.

    .venv/bin/python benchmarks/unpack.py [--rows 100000] [--cols 128] [--batch 256] [--repeat 15]

Every figure is measured in this run, on this machine, and printed with ratios against baselines
measured in the same run (never compared with numbers from elsewhere):

1. one float32 [rows, cols] blob (default 100k x 128 = 51.2 MB of payload): the op, the portable
   decoder, tf.io.parse_example of the same values as a float_list feature, tf.io.decode_raw of the
   bare payload, and two numpy copies of the payload: into a fresh array (np.frombuffer(...).copy(),
   which pays for allocating and first touching 51 MB on every call) and into a warm, preallocated
   buffer (np.copyto: one copy at memory speed, the like-for-like baseline). parse_example runs on
   two layouts: `rows` Examples of `cols` floats (one Example per node, the layout a
   tf.data/TFRecord pipeline holds node features in, giving the same [rows, cols] tensor as the op:
   the target's baseline) and one Example holding all rows*cols values in one packed float_list (TF
   parses that with a single copy, so it shows the copy floor rather than the cost of the Example
   format);
2. batches of `batch` small per-node blobs (~1 KB: float32 [240] features + int64 id), decoded as
   one vector: the same five;
3. the per-call cost on a single ~1 KB blob (eager and inside tf.function);
4. the blob of 1. as the Memgraph transport's base64url text (68 MB): the op decoding the text
   itself (encoding="base64") vs tf.io.decode_base64 then the op vs Python's base64 decoder then
   numpy.

Targets: on 1., op >= 0.6x the numpy copy's throughput and >= 2x parse_example's.
Timings are the median of `repeat` interleaved rounds after a warm-up (every decoder once per
round), so a noisy stretch of a shared machine slows all of them alike; look at the ratios.
"""

from __future__ import annotations

import logging
import random
import statistics
import time
from collections.abc import Callable

import numpy as np
import tensorflow as tf
from _options import number_options  # beside this file (the script's directory is on sys.path)

from memgraph_tf import blob
from memgraph_tf.ops import load_library, unpack_blob, unpack_blob_portable

log = logging.getLogger("benchmarks.unpack")


def median_time_s(fn: Callable[[], object], repeat: int, warmup: int = 2) -> float:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def interleaved_medians(
    fns: dict[str, Callable[[], object]], repeat: int, warmup: int = 2
) -> dict[str, float]:
    """Median seconds per call of each function, timed in interleaved rounds (every function once
    per round, in a shuffled order), so that a slow stretch of a shared machine hits all of them
    alike and no function always runs right after the same other one (whose cache and allocator
    leftovers it would otherwise always inherit)."""
    for fn in fns.values():
        for _ in range(warmup):
            fn()
    items = list(fns.items())
    order = random.Random(0)
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeat):
        order.shuffle(items)
        for name, fn in items:
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    return {name: statistics.median(ts) for name, ts in times.items()}


def example_bytes(values: np.ndarray) -> bytes:
    feature = tf.train.Feature(float_list=tf.train.FloatList(value=values.reshape(-1)))
    return tf.train.Example(features=tf.train.Features(feature={"x": feature})).SerializeToString()


def report(
    title: str,
    payload_bytes: int,
    calls: int,
    results: dict[str, float],
    baselines: list[str],
    counted: str = "payload",
) -> None:
    """Prints one table; GB/s is ``payload_bytes`` (described by ``counted``) per call over the
    time."""
    print(
        f"\n== {title} ({payload_bytes / 1e6:.2f} MB of {counted} per call; "
        "GB/s counts these bytes)"
    )
    header = f"{'decoder':<28}{'ms/call':>10}{'GB/s':>9}{'calls/s':>11}" + "".join(
        f"  x {b:<27}" for b in baselines
    )
    print(header)
    for name, seconds in results.items():
        row = (
            f"{name:<28}{seconds * 1e3:>10.3f}{payload_bytes / seconds / 1e9:>9.2f}"
            f"{calls / seconds:>11.1f}"
        )
        for b in baselines:
            row += f"  {results[b] / seconds:<29.2f}"
        print(row)


def big_blob(rows: int, cols: int, repeat: int) -> dict[str, float]:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((rows, cols), dtype=np.float32)
    data = blob.pack({"x": x})
    (info,) = blob.read_table(data)
    payload = data[info.payload_offset : info.payload_offset + info.payload_length]
    blob_t = tf.constant(data)
    payload_t = tf.constant(payload)
    serialized = tf.constant([example_bytes(x)])
    spec = {"x": tf.io.FixedLenFeature([rows * cols], tf.float32)}
    # The per-node layout a tf.Example pipeline would use: one Example (128 floats) per row.
    serialized_rows = tf.constant([example_bytes(row) for row in x])
    row_spec = {"x": tf.io.FixedLenFeature([cols], tf.float32)}

    op_fn = tf.function(lambda b: unpack_blob(b, ["x"], ["float32"])[0])
    portable_fn = tf.function(lambda b: unpack_blob_portable(b, ["x"], ["float32"])[0])
    parse_fn = tf.function(lambda s: tf.io.parse_example(s, spec)["x"])
    parse_rows_fn = tf.function(lambda s: tf.io.parse_example(s, row_spec)["x"])
    raw_fn = tf.function(lambda p: tf.io.decode_raw(p, tf.float32))
    mv = memoryview(data)

    # Same values everywhere (checked once, outside the timings).
    want = x.reshape(-1)
    assert np.array_equal(op_fn(blob_t).numpy().reshape(-1), want)
    assert np.array_equal(portable_fn(blob_t).numpy().reshape(-1), want)
    assert np.array_equal(parse_fn(serialized).numpy().reshape(-1), want)
    assert np.array_equal(parse_rows_fn(serialized_rows).numpy().reshape(-1), want)
    assert np.array_equal(raw_fn(payload_t).numpy(), want)

    warm = np.empty(rows * cols, np.float32)
    results = interleaved_medians(
        {
            "numpy copy": lambda: np.frombuffer(
                mv, np.float32, count=rows * cols, offset=info.payload_offset
            ).copy(),
            "numpy copy, warm buffer": lambda: np.copyto(
                warm, np.frombuffer(mv, np.float32, count=rows * cols, offset=info.payload_offset)
            ),
            "op (UnpackBlob)": lambda: op_fn(blob_t),
            "op eager": lambda: unpack_blob(blob_t, ["x"], ["float32"]),
            "portable": lambda: portable_fn(blob_t),
            "tf.io.decode_raw": lambda: raw_fn(payload_t),
            "tf.io.parse_example": lambda: parse_fn(serialized),
            "parse_example, row Examples": lambda: parse_rows_fn(serialized_rows),
        },
        repeat,
    )
    print(
        "\n(tf.io.parse_example: one Example holding all values as one packed float_list; "
        f"'row Examples': {rows} Examples of {cols} floats, the per-node layout)"
    )
    report(
        f"one float32 [{rows}, {cols}] blob",
        len(payload),
        1,
        results,
        [
            "numpy copy",
            "numpy copy, warm buffer",
            "tf.io.parse_example",
            "parse_example, row Examples",
        ],
    )
    return results


def small_blobs(batch: int, repeat: int) -> dict[str, float]:
    rng = np.random.default_rng(1)
    feats = rng.standard_normal((batch, 240), dtype=np.float32)
    blobs = [blob.pack({"id": np.array([i], np.int64), "x": feats[i]}) for i in range(batch)]
    infos = [blob.read_table(b) for b in blobs]
    x_off = infos[0][1].payload_offset
    payloads = [b[x_off : x_off + 960] for b in blobs]
    blobs_t = tf.constant(blobs)
    payloads_t = tf.constant(payloads)
    serialized = tf.constant([example_bytes(f) for f in feats])
    spec = {"x": tf.io.FixedLenFeature([240], tf.float32)}
    op_fn = tf.function(lambda b: unpack_blob(b, ["id", "x"], ["int64", "float32"]))
    portable_fn = tf.function(lambda b: unpack_blob_portable(b, ["id", "x"], ["int64", "float32"]))
    parse_fn = tf.function(lambda s: tf.io.parse_example(s, spec)["x"])
    raw_fn = tf.function(lambda p: tf.io.decode_raw(p, tf.float32))

    def numpy_copy():
        return np.stack([np.frombuffer(b, np.float32, count=240, offset=x_off) for b in blobs])

    assert np.array_equal(op_fn(blobs_t)[1].numpy(), feats)
    assert np.array_equal(portable_fn(blobs_t)[1].numpy(), feats)
    assert np.array_equal(parse_fn(serialized).numpy(), feats)
    assert np.array_equal(raw_fn(payloads_t).numpy(), feats)
    assert np.array_equal(numpy_copy(), feats)
    results = interleaved_medians(
        {
            "numpy copy (loop+stack)": numpy_copy,
            "op (UnpackBlob)": lambda: op_fn(blobs_t),
            "op eager": lambda: unpack_blob(blobs_t, ["id", "x"], ["int64", "float32"]),
            "portable": lambda: portable_fn(blobs_t),
            "tf.io.decode_raw": lambda: raw_fn(payloads_t),
            "tf.io.parse_example": lambda: parse_fn(serialized),
        },
        repeat,
    )
    size = sum(len(b) for b in blobs)
    print(f"\n(per-node blob: {len(blobs[0])} bytes; {batch} per batch)")
    report(
        f"batches of {batch} small blobs",
        size,
        1,
        results,
        ["numpy copy (loop+stack)", "tf.io.parse_example"],
        counted="whole blobs (headers included)",
    )
    return results


def per_call(repeat: int) -> None:
    data = blob.pack({"id": np.array([7], np.int64), "x": np.ones(240, np.float32)})
    t = tf.constant(data)
    op_fn = tf.function(lambda b: unpack_blob(b, ["id", "x"], ["int64", "float32"]))
    portable_fn = tf.function(lambda b: unpack_blob_portable(b, ["id", "x"], ["int64", "float32"]))
    n = 200
    identity_fn = tf.function(tf.identity)
    rows = {
        "tf.function(tf.identity)": lambda: identity_fn(t),  # the bare call overhead, for scale
        "op eager": lambda: unpack_blob(t, ["id", "x"], ["int64", "float32"]),
        "op in tf.function": lambda: op_fn(t),
        "portable in tf.function": lambda: portable_fn(t),
        "blob.unpack (numpy)": lambda: blob.unpack(data),
    }
    print(f"\n== per-call cost on one {len(data)}-byte blob")
    for name, fn in rows.items():
        seconds = median_time_s(lambda fn=fn: [fn() for _ in range(n)], max(3, repeat // 3)) / n
        print(f"{name:<28}{seconds * 1e6:>10.1f} us/call")


def base64_blob(rows: int, cols: int, repeat: int) -> dict[str, float]:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((rows, cols), dtype=np.float32)
    data = blob.pack({"x": x})
    text = blob.b64encode(data)
    text_t = tf.constant(text)
    (info,) = blob.read_table(data)
    fused_fn = tf.function(lambda t: unpack_blob(t, ["x"], ["float32"], encoding="base64")[0])
    two_step_fn = tf.function(lambda t: unpack_blob(tf.io.decode_base64(t), ["x"], ["float32"])[0])
    portable_fn = tf.function(
        lambda t: unpack_blob_portable(t, ["x"], ["float32"], encoding="base64")[0]
    )

    def python_decode():
        raw = blob.b64decode(text)
        return np.frombuffer(raw, np.float32, count=rows * cols, offset=info.payload_offset)

    assert np.array_equal(fused_fn(text_t).numpy(), x)
    assert np.array_equal(two_step_fn(text_t).numpy(), x)
    assert np.array_equal(portable_fn(text_t).numpy(), x)
    assert np.array_equal(python_decode().reshape(rows, cols), x)
    results = interleaved_medians(
        {
            "op, encoding=base64": lambda: fused_fn(text_t),
            "tf.io.decode_base64 + op": lambda: two_step_fn(text_t),
            "portable, encoding=base64": lambda: portable_fn(text_t),
            "python b64decode + numpy": python_decode,
        },
        max(5, repeat // 3),
    )
    report(
        f"the [{rows}, {cols}] blob as base64url text",
        len(text),
        1,
        results,
        ["tf.io.decode_base64 + op", "python b64decode + numpy"],
        counted="base64 text",
    )
    return results


def main() -> None:
    args = number_options(__doc__, rows=100_000, cols=128, batch=256, repeat=21).parse_args()
    logging.basicConfig(level=logging.INFO)
    load_library()
    print(f"TensorFlow {tf.__version__}, numpy {np.__version__}")
    big = big_blob(args.rows, args.cols, args.repeat)
    small_blobs(args.batch, args.repeat)
    per_call(args.repeat)
    b64 = base64_blob(args.rows, args.cols, args.repeat)
    op = big["op (UnpackBlob)"]
    vs_numpy = big["numpy copy"] / op
    print(f"\ntargets on [{args.rows}, {args.cols}] float32 (op in tf.function):")
    print(
        f"  op / numpy copy into a fresh array = {vs_numpy:.2f}x "
        f"(target >= 0.6: {'MET' if vs_numpy >= 0.6 else 'NOT MET'})"
    )
    print(
        f"  op / numpy copy into a warm buffer = {big['numpy copy, warm buffer'] / op:.2f}x "
        "(one copy at memory speed: the like-for-like baseline)"
    )
    ratio = big["parse_example, row Examples"] / op
    print(
        f"  op / tf.io.parse_example of {args.rows} row Examples = {ratio:.2f}x "
        f"(target >= 2: {'MET' if ratio >= 2 else 'NOT MET'})"
    )
    ratio = big["tf.io.parse_example"] / op
    print(
        f"  for scale: op / parse_example of one {args.rows * args.cols}-value Example = "
        f"{ratio:.2f}x (both are one copy of the payload, bounded by memory bandwidth)"
    )
    ratio = b64["tf.io.decode_base64 + op"] / b64["op, encoding=base64"]
    print(f"  base64 text in the op / tf.io.decode_base64 then the op = {ratio:.2f}x")


if __name__ == "__main__":
    main()
