"""opencypher_fn against a real Bolt server: eager, tf.function, tf.data; errors."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from memgraph_tf.client import opencypher_fn
from memgraph_tf.errors import ConfigurationError

pytestmark = pytest.mark.arcadedb

FEATURES = {i: [float(i), i / 2, -float(i)] for i in range(10, 20)}
QUERY = "UNWIND $node_ids AS nid MATCH (n:FnTrain {id: nid}) RETURN n.features"


@pytest.fixture(scope="module")
def train_nodes(bolt_source):
    bolt_source.write("MATCH (n:FnTrain) DELETE n")
    bolt_source.write(
        "UNWIND $rows AS r CREATE (:FnTrain {id: r.id, features: r.f, name: r.name})",
        {"rows": [{"id": i, "f": f, "name": f"paper {i}"} for i, f in FEATURES.items()]},
    )
    return FEATURES


def test_eager(bolt_source, train_nodes):
    fetch = opencypher_fn(bolt_source, QUERY, "node_ids", tf.float32)
    ids = [13, 11, 19]
    out = fetch(tf.constant(ids, dtype=tf.int64))
    assert out.dtype == tf.float32
    np.testing.assert_allclose(
        out.numpy(), np.asarray([train_nodes[i] for i in ids], dtype=np.float32)
    )


def test_in_tf_function_with_static_shape(bolt_source, train_nodes):
    fetch = opencypher_fn(bolt_source, QUERY, "node_ids", "float64", shape=[3])

    @tf.function
    def total(ids):
        feats = fetch(ids)
        assert feats.shape.as_list() == [None, 3]
        return tf.reduce_sum(feats, axis=1)

    ids = tf.constant([10, 15], dtype=tf.int32)
    np.testing.assert_allclose(total(ids).numpy(), [sum(train_nodes[i]) for i in (10, 15)])


def test_in_tf_data(bolt_source, train_nodes):
    fetch = opencypher_fn(bolt_source, QUERY, "node_ids", tf.float32, shape=[3])
    ids = sorted(train_nodes)
    ds = tf.data.Dataset.from_tensor_slices(ids).batch(4).map(lambda b: (b, fetch(b)))
    seen = {}
    for batch_ids, feats in ds:
        for i, f in zip(batch_ids.numpy().tolist(), feats.numpy()):
            seen[i] = f.tolist()
    assert seen == {i: np.asarray(f, dtype=np.float32).tolist() for i, f in train_nodes.items()}


def test_strings_both_ways(bolt_source, train_nodes):
    fetch = opencypher_fn(
        bolt_source, "UNWIND $names AS s MATCH (n:FnTrain {name: s}) RETURN n.id", "names", tf.int64
    )
    out = fetch(tf.constant(["paper 12", "paper 18"]))
    assert out.numpy().tolist() == [12, 18]
    names = opencypher_fn(
        bolt_source, "UNWIND $ids AS i MATCH (n:FnTrain {id: i}) RETURN n.name", "ids", tf.string
    )
    assert names(tf.constant([14])).numpy().tolist() == [b"paper 14"]


def test_errors(bolt_source, train_nodes):
    with pytest.raises(
        ConfigurationError, match=r"parameter_name: expected \$ids to appear in the query"
    ):
        opencypher_fn(bolt_source, QUERY, "ids", tf.float32)
    with pytest.raises(
        ConfigurationError, match=r"parameter_name: expected the parameter's name without '\$'"
    ):
        opencypher_fn(bolt_source, QUERY, "$node_ids", tf.float32)
    with pytest.raises(
        ConfigurationError,
        match=r"dtype: expected a dtype among bool, int32, int64, float32, float64, string, got "
        r"tf.complex64",
    ):
        opencypher_fn(bolt_source, QUERY, "node_ids", tf.complex64)
    two_columns = opencypher_fn(
        bolt_source, "UNWIND $node_ids AS i RETURN i AS a, i AS b", "node_ids", tf.int64
    )
    with pytest.raises(
        tf.errors.InvalidArgumentError, match=r"row 0: expected exactly one column, got 2"
    ):
        two_columns(tf.constant([1]))
    wrong_width = opencypher_fn(bolt_source, QUERY, "node_ids", tf.float32, shape=[4])
    with pytest.raises(
        tf.errors.InvalidArgumentError,
        match=r"column 'value' row 0: expected a list of 4 values, got a list of 3",
    ):
        wrong_width(tf.constant([10]))


def test_no_uri_or_credentials_in_the_traced_graph(bolt_source, arcadedb_server, train_nodes):
    fetch = opencypher_fn(bolt_source, QUERY, "node_ids", tf.float32, shape=[3])
    concrete = tf.function(fetch).get_concrete_function(tf.TensorSpec([None], tf.int64))
    serialized = concrete.graph.as_graph_def().SerializeToString()
    assert (
        b"EagerPyFunc" in serialized
    )  # the query runs in Python: nothing to serialise into a model
    assert arcadedb_server.password.encode() not in serialized
    assert f"127.0.0.1:{arcadedb_server.bolt_port}".encode() not in serialized
    assert b"MATCH" not in serialized
