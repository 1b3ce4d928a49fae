"""Examples naming nodes completed with their blobs when the model's batch runs
(memgraph_tf/serving/node_rows.py): each row parses to the example the request gave, its node's
blob in place of ``node_id``; a merged read names no request's examples."""

from __future__ import annotations

import pytest

from memgraph_tf.serving.node_rows import NodeExamples, complete_rows


class Reads:
    """A fetch stand-in: blob ``b"blob-<id>" * id`` (lengths differ), recording each read."""

    def __init__(self):
        self.calls = []

    def __call__(self, ids, names):
        self.calls.append((list(ids), names))
        return [b"blob-%d" % i * i for i in ids]


def _example(features: dict) -> bytes:
    from tensorflow.core.example import example_pb2

    ex = example_pb2.Example()
    for name, value in features.items():
        if isinstance(value, bytes):
            ex.features.feature[name].bytes_list.value.append(value)
        else:
            ex.features.feature[name].float_list.value.append(value)
    return ex.SerializeToString()


def _parsed(serialized: bytes):
    from tensorflow.core.example import example_pb2

    return example_pb2.Example.FromString(serialized)


def test_rows_parse_to_the_examples_with_their_blobs():
    reads = Reads()
    base = [_example({"w": 0.5}), _example({"b": b"carried"}), b""]
    examples = NodeExamples(base, [0, 2], [7, 300], ["examples[0].node_id", "x"], "b", None, reads)
    assert len(examples) == 3 and reads.calls == []  # nothing read until rows are asked for
    prefix = _example({"ctx": 2.0})
    rows = list(examples.with_prefix(prefix))
    assert [_parsed(r) for r in rows] == [
        _parsed(prefix + _example({"w": 0.5, "b": b"blob-7" * 7})),
        _parsed(prefix + _example({"b": b"carried"})),
        _parsed(prefix + _example({"b": b"blob-300" * 300})),
    ]
    assert reads.calls == [([7, 300], ["examples[0].node_id", "x"])]
    assert examples[1] == base[1] and reads.calls[-1][0] == [7, 300]  # a row without a node
    assert examples[-1] == _example({"b": b"blob-300" * 300})
    assert examples[::2] == [rows[0][len(prefix) :], rows[2][len(prefix) :]]
    with pytest.raises(IndexError, match="out of range"):
        examples[-4]


def test_complete_rows_reads_once_and_a_merged_read_names_nothing():
    reads = Reads()
    heads, ids = [b"", b"h", b""], [5, None, 6]
    out = complete_rows(heads, ids, None, reads, "b")
    assert reads.calls == [([5, 6], None)]
    assert out[1] == b"h" and _parsed(out[2]) == _parsed(_example({"b": b"blob-6" * 6}))
    assert complete_rows([b"x"], [None], None, reads, "b") == [b"x"] and len(reads.calls) == 1


def test_a_read_that_fails_raises_its_error():
    def fail(ids, names):
        raise ValueError(f"no node {ids[0]} ({names[0]})")

    examples = NodeExamples([b""], [0], [9], ["examples[0].node_id"], "b", None, fail)
    with pytest.raises(ValueError, match=r"no node 9 \(examples\[0\]\.node_id\)"):
        examples.rows(0, 1)
