"""options.max_blob_bytes (issue 23, point 5): the procedures size what a call would build before
they sample or read anything, and refuse it quickly, in little memory, when it is too large.

The reproducers are the issue's: on Cora (1,433 float32 features) one seed with fanouts [10**6],
[10**9] or [20, 20, 20, 20] used to pass the size checks and allocate several GiB before any error
(or build a 1.29-billion-character blob)."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

import _memgraph_tf_modules_cases as cases  # registered by conftest.py
import pytest

from memgraph_tf import blob

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
DEFAULT_LIMIT = 268_435_456

# The issue's inputs, and the same explosion through the other procedures and layouts.
REPRODUCERS = [
    ("tf_features.sample", ([0], [10**6], ["features"], {})),
    ("tf_features.sample", ([0], [10**9], ["features"], {})),
    ("tf_features.sample", ([0], [20, 20, 20, 20], ["features"], {})),
    ("tf_features.sample_per_node", ([0], [20, 20, 20, 20], ["features"], {})),
    ("tf_features.sample", ([0], [20, 20, 20, 20], ["features"], {"layout": "compact"})),
    ("tf_features.sample", ([0], [10**9], [], {"layout": "sparse"})),
    ("tf_features.pack", (list(range(2708)) * 25, ["features"], {})),
]

_MEASURE = r"""
import json, re, sys, time, tracemalloc
from memgraph_tf import datasets

def vm(key):
    with open("/proc/self/status") as f:
        return int(re.search(key + r":\s+(\d+) kB", f.read()).group(1)) * 1024

def reset_peak():  # Linux >= 4.0: writing 5 resets the peak resident set size (VmHWM)
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False

graph = datasets.planetoid_graph("cora")
graph.call("tf_features.sample", [0], [2], ["features"], {"seed": 0})  # warm up
out = []
for procedure, args in json.loads(sys.stdin.read()):
    rss = reset_peak() and vm("VmRSS")
    tracemalloc.start()
    start = time.perf_counter()
    try:
        graph.call(procedure, *args)
        error = None
    except Exception as exc:
        error = str(exc)
    seconds = time.perf_counter() - start
    traced_peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    out.append({"seconds": seconds, "traced_peak": traced_peak, "error": error,
                "rss_peak_growth": None if rss is False else vm("VmHWM") - rss})
print(json.dumps(out))
"""


def test_the_issues_reproducers_are_refused_in_under_a_second_and_200_mb():
    proc = subprocess.run(
        [sys.executable, "-c", _MEASURE],
        input=json.dumps(REPRODUCERS),
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    results = json.loads(proc.stdout.strip().splitlines()[-1])
    for (procedure, args), got in zip(REPRODUCERS, results):
        what = f"{procedure}{args[1:] if procedure != 'tf_features.pack' else ''}"
        assert got["error"] is not None, f"{what} was not refused"
        assert "max_blob_bytes: " in got["error"], got["error"]
        assert f"the limit is {DEFAULT_LIMIT:,} (options.max_blob_bytes)" in got["error"]
        assert got["seconds"] < 1.0, (what, got)
        assert got["traced_peak"] < 200 * 2**20, (what, got)
        if got["rss_peak_growth"] is not None:
            assert got["rss_peak_growth"] < 200 * 2**20, (what, got)
    # the issue's dense example, exactly: 1 + 20 + 400 + 8,000 + 160,000 = 168,421 slots of an
    # int64 id, 1,433 float32 features and (below the seed) a mask byte
    message = results[2]["error"]
    size = cases.dense_sample_bytes(1, [20, 20, 20, 20], 1433, 4)
    assert size == 966_906_792  # ~1.29e9 characters of base64, as the issue measured
    assert (
        f"max_blob_bytes: the blob would hold {size:,} bytes (fanouts [20, 20, 20, 20], 1 seed, "
        "dense, 1,433 float32 features); the limit is 268,435,456 (options.max_blob_bytes)"
    ) in message


def _raw(rows: list[dict]) -> list[bytes]:
    return [blob.b64decode(row["blob"]) for row in rows]


@pytest.mark.parametrize(
    "procedure, args",
    [
        ("tf_features.sample", ([0, 1, 5], [3, 2], ["f", "x"], {"seed": 1})),
        ("tf_features.sample", ([0, 1], [2], ["f"], {"seed": 1, "label_property": "y"})),
        ("tf_features.sample", ([0], [4], [], {"seed": 1, "low_degree": "resample"})),
        ("tf_features.sample_per_node", ([0, 1, 2], [3, 2], ["f"], {"seed": 1})),
        ("tf_features.pack", ([0, 1, 2, 0], ["f", "name", "x"], {"label_property": "y"})),
        ("tf_features.pack", ([3], [], {})),
    ],
)
def test_the_dense_and_pack_sizes_are_exact(embedded_runner, procedure, args):
    """A limit equal to the blob's size passes; one byte less is refused, naming that size."""
    embedded_runner.build(cases.small_graph())
    *rest, options = args
    sizes = {len(raw) for raw in _raw(embedded_runner.call(procedure, *rest, options))}
    [size] = sizes  # sample_per_node: every row's blob has the same size
    assert _raw(embedded_runner.call(procedure, *rest, {**options, "max_blob_bytes": size}))
    with pytest.raises(
        embedded_runner.error_type, match=rf"max_blob_bytes: .* would hold {size:,} bytes"
    ):
        embedded_runner.call(procedure, *rest, {**options, "max_blob_bytes": size - 1})


def _fan_graph(leaves: int) -> cases.GraphSpec:
    """Hub 0 pointing at ``leaves`` leaves; every feature non-zero."""
    nodes = [(["N"], {"f": [float(i + 1), -2.0, 0.5]}) for i in range(leaves + 1)]
    return cases.GraphSpec(nodes, [(0, j, "E") for j in range(1, leaves + 1)])


@pytest.mark.parametrize("layout_name", ["compact", "sparse"])
def test_the_worst_case_bound_is_reached_and_never_exceeded(embedded_runner, layout_name):
    worst = {"compact": cases.compact_worst_bytes, "sparse": cases.sparse_worst_bytes}[layout_name]
    # every slot a distinct node with every feature non-zero: the blob is the bound itself
    embedded_runner.build(_fan_graph(6))
    options = {"seed": 1, "layout": layout_name, "direction": "out"}
    [raw] = _raw(embedded_runner.call("tf_features.sample", [0], [6], ["f"], options))
    assert len(raw) == worst(1, [6], 3)
    assert embedded_runner.call(
        "tf_features.sample", [0], [6], ["f"], {**options, "max_blob_bytes": len(raw)}
    )
    with pytest.raises(
        embedded_runner.error_type,
        match=rf"max_blob_bytes: the blob could hold up to {len(raw):,} bytes \(fanouts \[6\], "
        rf"1 seed, {layout_name}, 3 float32 features; the worst case for these fanouts",
    ):
        embedded_runner.call(
            "tf_features.sample", [0], [6], ["f"], {**options, "max_blob_bytes": len(raw) - 1}
        )
    # repeated nodes and padding: the blob is smaller than the bound, which still applies
    embedded_runner.build(cases.small_graph())
    for seeds, fanouts in (([0, 1, 2], [3, 3]), ([5], [4, 2])):
        [raw] = _raw(
            embedded_runner.call("tf_features.sample", seeds, fanouts, ["f"], options | {})
        )
        assert len(raw) <= worst(len(seeds), fanouts, 3)


def test_a_raised_limit_lets_a_large_call_through(embedded_runner):
    embedded_runner.build(cases.star_graph(3))
    args = ([0], [300, 300], ["f"], {"seed": 1})
    size = cases.dense_sample_bytes(1, [300, 300], 2, 4)  # 90,301 slots: 1,354,552 bytes
    with pytest.raises(
        embedded_runner.error_type, match=rf"the blob would hold {size:,} bytes .* the limit is "
    ):
        embedded_runner.call("tf_features.sample", *args[:3], {**args[3], "max_blob_bytes": 10**6})
    [raw] = _raw(
        embedded_runner.call("tf_features.sample", *args[:3], {**args[3], "max_blob_bytes": size})
    )
    assert len(raw) == size
