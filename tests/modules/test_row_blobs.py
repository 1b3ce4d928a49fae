"""The fast writers against the generic ones they stand in for.

``sample_per_node`` writes its rows from one packed template (dense) or from the feature table
converted once (compact, sparse) with :func:`memgraph_tf.blob.pack_bytes`; each row must be
exactly ``blob.pack`` of :func:`memgraph_tf.procedures.sections.sample_sections` of that row (the
generic path the procedure used before), and ``pack_bytes`` exactly ``pack`` or a named refusal.
"""

from __future__ import annotations

import array
import random
import sys
import types

import pytest

from memgraph_tf import blob
from memgraph_tf.embedded import EmbeddedGraph
from memgraph_tf.procedures import MgpGraphAccess, core, parse_fanouts, parse_options, sections


def _graph() -> EmbeddedGraph:
    """Hubs, leaves, self-loops, an isolated node, sparse and negative features, two edge types."""
    rng = random.Random(5)
    g = EmbeddedGraph()
    for i in range(120):
        feats = [0.0] * 6
        for j in rng.sample(range(6), rng.randrange(0, 3)):
            feats[j] = rng.choice([-0.0, 1.5, -2.25, rng.random()])
        g.add_node(["N"], {"f": feats, "c": i % 3})
    for i in range(300):
        a, b = rng.randrange(119), rng.randrange(4) if i % 4 == 0 else rng.randrange(119)
        g.add_edge(a, b, "E" if i % 3 else "F")
    for i in range(0, 119, 13):
        g.add_edge(i, i, "E")
    return g  # node 119 has no edges


@pytest.mark.parametrize("layout", ["dense", "compact", "sparse"])
@pytest.mark.parametrize("low_degree", ["pad", "resample"])
def test_sample_per_node_rows_equal_the_generic_writer(layout, low_degree, monkeypatch, tmp_path):
    g = _graph()
    seeds = [0, 1, 2, 3, 119, 5, 5, 17, 44]
    options = {"seed": 3, "layout": layout, "low_degree": low_degree, "label_property": "c"}
    rows = g.call("tf_features.sample_per_node", seeds, [3, 2], ["f"], options)
    assert [r["node_id"] for r in rows] == seeds
    # the generic writer: the same sample, each row packed by blob.pack from sample_sections
    opts = parse_options("sample_per_node", options)
    fanouts = parse_fanouts([3, 2])
    generic: list[bytes] = []

    def write(ctx):
        access = MgpGraphAccess(ctx, opts)
        keys = access.resolve(seeds, "seeds")
        result = core.sample(access, keys, fanouts, ["f"], opts, per_row=True)
        for i in range(len(keys)):
            row = sections.sample_sections(result, fanouts, opts, slice(i, i + 1))
            generic.append(blob.pack(row))

    _run_in_call(g, write, monkeypatch, tmp_path)
    assert [blob.b64decode(r["blob"]) for r in rows] == generic
    # and each row is the single-seed sample's blob (the procedure's documented contract)
    for seed, row in zip(seeds, rows):
        [alone] = g.call("tf_features.sample", [seed], [3, 2], ["f"], options)
        assert row["blob"] == alone["blob"]


def _run_in_call(g: EmbeddedGraph, fn, monkeypatch, tmp_path) -> None:
    """Runs ``fn(ctx)`` inside a procedure call of ``g`` (a probe module loaded for it), with the
    ``mgp.ProcCtx`` Memgraph hands a procedure."""
    hook = types.ModuleType("_row_blobs_hook")
    hook.fn = fn
    monkeypatch.setitem(sys.modules, "_row_blobs_hook", hook)
    path = tmp_path / "row_blobs_probe.py"
    path.write_text(
        "import mgp\n"
        "import _row_blobs_hook\n"
        "@mgp.read_proc\n"
        "def run(ctx: mgp.ProcCtx) -> mgp.Record(ok=bool):\n"
        "    _row_blobs_hook.fn(ctx)\n"
        "    return mgp.Record(ok=True)\n"
    )
    g.load_module(path)
    assert g.call("row_blobs_probe.run") == [{"ok": True}]


def test_pack_bytes_equals_pack_and_refuses_by_name():
    ids = blob.Dense(array.array("q", [4, -1, 9]).tobytes(), [3], "int64")
    mask = blob.Dense(bytes([1, 0, 1, 1, 0, 0]), [1, 2, 3], "bool")
    values = blob.Dense(array.array("f", [1.5, -2.0, 0.25]).tobytes(), [3], "float32")
    ragged = blob.Ragged(values, array.array("q", [0, 1, 3]))
    sections = {"ids": ids, "mask": mask, "table": ragged}
    assert blob.pack_bytes(sections) == blob.pack(sections)
    assert blob.unpack(blob.pack_bytes({"ids": ids}))["ids"].tolist() == [4, -1, 9]
    short = blob.Dense(b"\0" * 20, [3], "int64")
    with pytest.raises(blob.BlobFormatError, match=r"section 'ids': expected 24 payload bytes"):
        blob.pack_bytes({"ids": short})
    bad_end = blob.Ragged(values, array.array("q", [0, 1, 2]))
    with pytest.raises(blob.BlobFormatError, match=r"ragged 'table': expected row_splits start"):
        blob.pack_bytes({"table": bad_end})
    with pytest.raises(blob.BlobFormatError, match=r"section 'x': expected .* for string"):
        blob.pack_bytes({"x": blob.Dense(b"ab", [1], "string")})
