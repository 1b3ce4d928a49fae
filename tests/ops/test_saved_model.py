"""Both decoders inside a SavedModel, saved here and reloaded and run in a fresh Python process."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import tensorflow as tf

from memgraph_tf import blob

RELOAD = textwrap.dedent(
    """
    import json, sys
    import tensorflow as tf
    kind, path, blob_path = sys.argv[1:4]
    if kind == "op":
        from memgraph_tf.ops import load_library
        load_library()  # a SavedModel with a custom op needs its library loaded first
    model = tf.saved_model.load(path)
    fn = model.signatures["serving_default"]
    blobs = json.load(open(blob_path))
    out = fn(blobs=tf.constant([bytes.fromhex(b) for b in blobs]))
    print(json.dumps({"x": out["x"].numpy().tolist(), "nbrs": out["nbrs"].numpy().tolist(),
                      "nbrs_splits": out["nbrs_splits"].numpy().tolist(),
                      "loaded_op": "memgraph_tf.ops._loader" in sys.modules
                                   and sys.modules["memgraph_tf.ops._loader"]._state.module
                                   is not None}))
    """
)


def saved_graph_op_types(path: str) -> set[str]:
    from tensorflow.core.protobuf import saved_model_pb2

    sm = saved_model_pb2.SavedModel()
    with open(f"{path}/saved_model.pb", "rb") as fh:
        sm.ParseFromString(fh.read())
    types = set()
    for mg in sm.meta_graphs:
        types |= {n.op for n in mg.graph_def.node}
        for f in mg.graph_def.library.function:
            types |= {n.op for n in f.node_def}
    return types


@pytest.mark.parametrize("kind", ["op", "portable"])
def test_saved_model_reloads_in_a_fresh_process(ops, kind, tmp_path):
    fn = ops.unpack_blob if kind == "op" else ops.unpack_blob_portable

    class Decoder(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="blobs")])
        def serve(self, blobs):
            x, nbrs = fn(
                blobs, ["x", "nbrs"], ["float32", "int64"], ragged=["nbrs"], shapes=[[3], [None]]
            )
            return {"x": x, "nbrs": nbrs.flat_values, "nbrs_splits": nbrs.values.row_splits}

    module = Decoder()
    path = str(tmp_path / "model")
    tf.saved_model.save(module, path, signatures={"serving_default": module.serve})
    types = saved_graph_op_types(path)
    if kind == "op":
        assert "MemgraphTf>UnpackBlob" in types
    else:
        assert not [t for t in types if t.startswith("MemgraphTf")], (
            "the portable model must use stock ops only"
        )
    blobs = [
        blob.pack(
            {
                "x": np.array([i, i + 0.5, -i], np.float32),
                "nbrs": blob.Ragged(np.arange(i + 1, dtype=np.int64), [0, i + 1]),
            }
        )
        for i in range(3)
    ]
    blob_path = tmp_path / "blobs.json"
    blob_path.write_text(json.dumps([b.hex() for b in blobs]))
    proc = subprocess.run(
        [sys.executable, "-c", RELOAD, kind, path, str(blob_path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["x"] == [[float(i), i + 0.5, float(-i)] for i in range(3)]
    assert result["nbrs"] == [0, 0, 1, 0, 1, 2]
    assert result["nbrs_splits"] == [0, 1, 3, 6]
    assert result["loaded_op"] == (kind == "op")


def test_saved_models_name_the_encoding_attr_only_when_it_is_not_the_default(ops, tmp_path):
    """A SavedModel decoding raw blobs does not mention ``encoding`` (TF strips default-valued
    attrs), so it still loads in a server built with an op library from before that attr existed;
    one that decodes base64 text records it."""
    from tensorflow.core.protobuf import saved_model_pb2

    class Decoder(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
        def raw(self, blobs):
            return ops.unpack_blob(blobs, ["x"], ["float32"])[0]

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
        def text(self, texts):
            return ops.unpack_blob(texts, ["x"], ["float32"], encoding="base64")[0]

    tf.saved_model.save(Decoder(), str(tmp_path))
    sm = saved_model_pb2.SavedModel()
    sm.ParseFromString((tmp_path / "saved_model.pb").read_bytes())
    encodings = {}
    for f in sm.meta_graphs[0].graph_def.library.function:
        for node in f.node_def:
            if node.op == "MemgraphTf>UnpackBlob":
                encodings[f.signature.name.split("_")[3]] = (
                    node.attr["encoding"].s if "encoding" in node.attr else None
                )
    assert encodings == {"raw": None, "text": b"base64"}
