"""The client's graph layer for batch inference (memgraph_tf.client.node_tables): the property-name
rule
and the old score name read for one release, node selection, the node table's pages and writes on
an embedded graph, the source's lock contract, ``open_graph``, and the compatibility aliases of
the names that moved to memgraph_tf.batch."""

from __future__ import annotations

import threading

import pytest

from memgraph_tf.client.node_tables import (
    LEGACY_SCORE_PROPERTY,
    NodeSelection,
    NodeTable,
    Shard,
    bundle_selection,
    key_index,
    property_names,
    read_score,
)
from memgraph_tf.errors import ConfigurationError, GraphDataError
from tests.graphs import KeyedGraph, N, node_id, predictions, writes_per_node

GRAPH = KeyedGraph("GraphsItem")


def test_one_property_name_rule_and_the_old_score_name_read_for_one_release():
    assert property_names("predicted_class") == (
        "predicted_class",
        "predicted_class_score",
        "predicted_class_version",
    )
    assert LEGACY_SCORE_PROPERTY == "predicted_score"
    old = {"predicted_class": 2, "predicted_score": 0.7}
    new = {**old, "predicted_class_score": 0.9}
    assert read_score(old.get) == 0.7  # written before this release: still read
    assert read_score(new.get) == 0.9  # the new name wins when both are there
    assert read_score({"p": "x", "predicted_score": 0.7}.get, "p") is None  # only the default P


def test_bundle_selection_applies_the_label_rule_and_the_key():
    options = {"label": "Paper", "id_property": "pid", "seed": 3}
    selection = bundle_selection(options, 7, shard="1/3")
    assert (selection.label, selection.id_property, selection.version) == ("Paper", "pid", 7)
    assert selection.shard == Shard(1, 3)
    assert bundle_selection({}, 1, label="Any").label == "Any"
    with pytest.raises(
        ConfigurationError, match=r"label: the model samples :Paper nodes .*got 'Other'"
    ):
        bundle_selection(options, 7, label="Other")
    with pytest.raises(ConfigurationError, match=r"write_property: expected a non-empty name"):
        NodeSelection(write_property="a`b")
    with pytest.raises(ConfigurationError, match=r"where parameters: only with a Cypher where"):
        NodeSelection(where_params={"x": 1})


def test_node_table_pages_counts_and_writes_on_an_embedded_graph():
    source = GRAPH.embedded_source()
    keys = sorted(node_id(i) for i in range(N))
    table = NodeTable(source, NodeSelection(label=GRAPH.label, id_property="id", version=2))
    assert table.count(todo=True) == N and table.bounds(todo=False) == (keys[0], keys[-1])
    assert table.page(None, 4, True) == keys[:4]
    assert table.page(keys[3], 4, True) == keys[4:8]
    assert table.page(None, 100, True, lo=keys[10], hi=keys[13]) == keys[10:13]
    batch = [(k, "red", 0.25) for k in keys[:5]] + [(10**9, "red", 0.5)]  # one unknown key
    assert table.write(batch) == 5
    assert table.write(batch, only_todo=True) == 0  # already carry version 2
    assert table.count(todo=True) == N - 5 and table.page(None, 2, True) == keys[5:7]
    assert predictions(source)[keys[0]] == ("red", 0.25, 2)
    assert writes_per_node(source)[keys[0]] == 1
    sharded = NodeTable(
        source, NodeSelection(label=GRAPH.label, id_property="id", version=2, shard=Shard(1, 3))
    )
    assert sharded.page(None, 1000, False) == [k for k in keys if k % 3 == 1]
    exported = NodeTable(source, NodeSelection(label=GRAPH.label, id_property="id"))
    with pytest.raises(ConfigurationError, match=r"write: the selection has no model version"):
        exported.write(batch)
    with pytest.raises(ConfigurationError, match=r"where: the embedded graph runs no Cypher"):
        NodeTable(source, NodeSelection(label=GRAPH.label, where="n.id > 0"))


def test_key_index_refuses_a_key_two_nodes_share():
    source = GRAPH.embedded_source(n=4)
    source.graph.add_node([GRAPH.label], {"id": node_id(2), "features": [0.0] * 4})
    with pytest.raises(GraphDataError, match=rf"id: expected unique ids, got {node_id(2)}"):
        key_index(source, GRAPH.label, "id")


def test_the_source_lock_is_its_public_concurrency_contract():
    source = GRAPH.embedded_source(n=4)
    assert source.lock is source.lock  # one lock for the source's lifetime
    with source.lock, source.lock:  # reentrant: held around several calls, which take it too
        assert len(source.node_ids(label=GRAPH.label, id_property="id")) == 4
    entered = threading.Event()

    def call() -> None:
        with source.lock:
            entered.set()

    with source.lock:
        worker = threading.Thread(target=call)
        worker.start()
        assert not entered.wait(0.2)  # another thread waits while this one holds it
    worker.join(5)
    assert entered.is_set()


def test_open_graph_opens_embedded_datasets_and_checks_bolt_uris():
    from memgraph_tf.client import EmbeddedSource, open_graph

    assert isinstance(open_graph("embedded:synthetic"), EmbeddedSource)
    with pytest.raises(ConfigurationError, match=r"uri: expected one of the schemes bolt://"):
        open_graph("http://db:7687")
    with pytest.raises(ConfigurationError, match=r"uri: expected a string, got int"):
        open_graph(7687)


def test_the_moved_batch_names_stay_importable_from_the_client_for_one_release():
    import memgraph_tf.batch as batch
    import memgraph_tf.client as client

    for name in client._MOVED_TO_BATCH:
        assert getattr(client, name) is getattr(batch, name), name
        assert name in client.__all__
    assert client.Shard is batch.Shard
