"""Batch inference (memgraph_tf.batch): an exported bundle run in-process and behind the
local server over REST and gRPC, over the embedded graph and over real Bolt (ArcadeDB, client-side
fallback); resume, shards, subset/order/batch-size invariance, invalid nodes, failures; keyset
paging that adds up (every selected node read, ArcadeDB without a label included). The
command line and the SIGKILL/SIGINT subprocess tests are in test_batch_cli.py."""

from __future__ import annotations

import random
import re

import numpy as np
import pytest

from memgraph_tf.batch import (
    BatchClassifier,
    BundleBackend,
    ModelBackend,
    classify_graph,
    rest_backend,
)
from memgraph_tf.client import EmbeddedSource
from memgraph_tf.client.errors import (
    ConfigurationError,
    InvalidNodeError,
    KeysetPagingError,
    ModelError,
    ModelInputError,
    ServerUnavailable,
)
from memgraph_tf.client.graphs import NodeSelection, NodeTable, Shard, check_where
from memgraph_tf.errors import EXIT_FAILED, exit_code_for
from memgraph_tf.serving.grpc_codec import serialize_blob_example
from tests.client import classify_kit as kit
from tests.client.classify_kit import LABEL, OPTIONS, bolt_predictions, embedded_source
from tests.graphs import CLASSES, FANOUTS, SEED, N, assert_same, node_id, predictions


def isolated_run(source: EmbeddedSource, model, ids) -> dict:
    """Each node classified alone (batch size 1) into property ``alone``: the values a node gets
    whatever else is in its batch."""
    classify_graph(
        source, model, node_ids=ids, batch_size=1, write_property="alone", progress=False
    )
    return predictions(source, "alone")


# ------------------------------------------------------------------------------------- unit parts
def test_serialized_example_is_tf_example_bytes():
    import tensorflow as tf

    for blob, key in ((b"", "blob"), (b"\x00\xff" * 300, "blob"), (bytes(range(256)) * 70, "nödé")):
        want = tf.train.Example(
            features=tf.train.Features(
                feature={key: tf.train.Feature(bytes_list=tf.train.BytesList(value=[blob]))}
            )
        ).SerializeToString()
        assert serialize_blob_example(blob, key) == want


def test_shards_partition_every_key():
    shards = [Shard.parse(f"{i}/3") for i in range(3)]
    for key in list(range(-50, 50)) + [2**62, -(2**62)]:
        assert sum(s.contains(key) for s in shards) == 1
    assert Shard.parse(" 1 / 4 ") == Shard(1, 4)
    with pytest.raises(
        ConfigurationError, match=r"shard: expected i/N with N >= 1 and 0 <= i < N, got 3/3"
    ):
        Shard.parse("3/3")
    with pytest.raises(ConfigurationError, match=r"shard: expected i/N such as 0/3, got '1-3'"):
        Shard.parse("1-3")


def test_where_accepts_predicates_and_refuses_anything_else():
    assert (
        check_where(" n.year >= $year AND n.title <> 'MATCH; )' ", {"year": 2})
        == "n.year >= $year AND n.title <> 'MATCH; )'"
    )
    assert check_where("size([(n)--(m) WHERE m.x > 1 | m]) > 2 AND `weird name` IS NULL")
    cases = [
        ("n.x = 1 RETURN n", r"got the clause keyword RETURN"),
        ("n.x = 1) OR (true", r"expected balanced brackets, got an unmatched '\)'"),
        ("(n.x = 1", r"expected balanced brackets, got an unclosed '\('"),
        ("n.x = 1; MATCH (m) DETACH DELETE m", r"expected one predicate expression, got ';'"),
        ("n.x = 1 // comment", r"expected one predicate expression, got '//'"),
        ("n.name = 'open", r"expected a closed '...' starting at character 9"),
        ("EXISTS { MATCH (n)--() }", r"got the clause keyword MATCH"),
        ("n.x = $missing", r"\$missing is used but not given .*--param missing=VALUE"),
        ("", r"where: expected a non-empty Cypher predicate over n"),
    ]
    for where, message in cases:
        with pytest.raises(ConfigurationError, match=message):
            check_where(where)
    with pytest.raises(ConfigurationError, match=r"names starting with 'mgtf_' are reserved"):
        check_where("n.x = $mgtf_version", {"mgtf_version": 1})


# ------------------------------------------------------------------------ embedded, in-process
def test_full_run_writes_class_score_and_version(reference, sage_model, backend):
    from memgraph_tf.client import predict

    assert backend.version == 1 and backend.name == "BatchSage"
    assert len(reference) == N
    assert {c for c, _, _ in reference.values()} <= set(CLASSES)
    assert len({c for c, _, _ in reference.values()}) >= 2  # the model tells nodes apart
    assert {v for _, _, v in reference.values()} == {1}
    # the same numbers through the independent tf.data path with the Keras model itself
    ids = sorted(reference)
    source = embedded_source()
    pred = predict(sage_model, source, ids, properties=["features"], options=OPTIONS, batch_size=16)
    assert [reference[i][0] for i in ids] == [CLASSES[c] for c in pred.classes]
    np.testing.assert_allclose([reference[i][1] for i in ids], pred.scores, rtol=1e-5)
    assert 10**6 not in reference  # a node without the label


def test_subset_order_and_batch_size_do_not_change_predictions(reference, backend):
    source = embedded_source()
    ids = sorted(reference)
    random.Random(5).shuffle(ids)
    subset = ids[:37]
    for batch_size in (1, 5, 64):
        summary = classify_graph(
            source,
            backend,
            node_ids=subset,
            batch_size=batch_size,
            write_property=f"p{batch_size}",
            progress=False,
        )
        assert summary.classified == len(subset)
        assert_same(predictions(source, f"p{batch_size}"), {i: reference[i] for i in subset})
    # the test can fail: another seed gives other neighbourhoods for some of these nodes
    blobs = [
        source.sample_blobs_per_node(subset, FANOUTS, ["features"], {**OPTIONS, "seed": s})
        for s in (SEED, SEED + 1)
    ]
    assert blobs[0] != blobs[1]


def test_three_shards_classify_every_node_exactly_once(reference, backend):
    source = embedded_source()
    counts = []
    for i in range(3):
        summary = classify_graph(
            source, backend, shard=f"{i}/3", batch_size=8, write_property=f"s{i}", progress=False
        )
        counts.append(summary.classified)
        assert all(k % 3 == i for k in predictions(source, f"s{i}"))
    assert sum(counts) == N and min(counts) > 0
    merged: dict = {}
    for i in range(3):
        part = predictions(source, f"s{i}")
        assert not set(part) & set(merged)
        merged.update(part)
    assert_same(merged, reference)


def test_rerun_skips_nodes_with_this_version_and_overwrite_redoes_them(reference, backend):
    source = embedded_source()
    first = sorted(reference)[10:40]
    classify_graph(source, backend, node_ids=first, progress=False)
    written: list[int] = []
    run = BatchClassifier(source, backend, batch_size=16, progress=False)
    original = run._table.write
    run._table.write = lambda preds: written.extend(p[0] for p in preds) or original(preds)
    summary = run.run()
    assert summary.up_to_date == len(first) and summary.classified == N - len(first)
    assert sorted(written) == sorted(set(reference) - set(first))
    assert_same(predictions(source), reference)
    again = classify_graph(source, backend, progress=False)
    assert (again.classified, again.up_to_date, again.total) == (0, N, 0)
    redo = classify_graph(source, backend, overwrite=True, progress=False)
    assert (redo.classified, redo.up_to_date) == (N, 0)


def test_where_callable_and_label_checks_on_the_embedded_graph(reference, backend):
    source = embedded_source()
    summary = classify_graph(source, backend, where=lambda key: key > 0, progress=False)
    assert summary.classified == sum(1 for k in reference if k > 0)
    assert sorted(predictions(source)) == sorted(k for k in reference if k > 0)
    with pytest.raises(ConfigurationError, match=r"where: the embedded graph runs no Cypher"):
        BatchClassifier(source, backend, where="n.id > 0")
    with pytest.raises(
        ConfigurationError, match=r"label: the model samples :BatchItem nodes .*got 'Other'"
    ):
        BatchClassifier(source, backend, label="Other")
    with pytest.raises(ConfigurationError, match=r"batch_size: expected an integer >= 1, got 0"):
        BatchClassifier(source, backend, batch_size=0)
    with pytest.raises(
        ConfigurationError, match=r"write_property: expected a non-empty name without backquotes"
    ):
        BatchClassifier(source, backend, write_property="a`b")


def test_invalid_node_stops_the_run_and_its_batch_is_not_written(reference, backend):
    bad = 20  # batch 3 of 8-node batches (ids ascend with the index)
    source = embedded_source(bad=(bad,))
    run = BatchClassifier(source, backend, batch_size=8, progress=False)
    with pytest.raises(InvalidNodeError, match=rf"^node {node_id(bad)}: ") as info:
        run.run()
    assert info.value.node_id == node_id(bad)
    assert "features" in info.value.reason
    written = predictions(source)
    assert sorted(written) == [node_id(i) for i in range(16)]  # batches 1 and 2; nothing of batch 3
    assert run.summary.classified == 16 and run.summary.failed == 8
    assert_same(written, isolated_run(source, backend, sorted(written)))


def test_skip_invalid_reports_the_node_and_writes_the_rest(reference, backend):
    bad = (20, 21, 60)
    source = embedded_source(bad=bad)
    summary = classify_graph(source, backend, batch_size=8, skip_invalid=True, progress=False)
    assert summary.skipped == 3 and summary.classified == N - 3
    assert [nid for nid, _ in summary.invalid] == [node_id(i) for i in bad]
    assert all(
        node_id(i) == nid and "features" in reason for i, (nid, reason) in zip(bad, summary.invalid)
    )
    written = predictions(source)
    assert set(written) == set(reference) - {node_id(i) for i in bad}
    assert_same(written, isolated_run(source, backend, sorted(written)))
    with pytest.raises(InvalidNodeError, match=r"^node 999999: unknown node id 999999"):
        classify_graph(embedded_source(), backend, node_ids=[node_id(0), 999999], progress=False)


def test_a_blob_the_model_rejects_is_pinned_on_its_node(backend):
    bad = 30
    source = embedded_source(bad=(bad,))
    # alone, the node's blob samples fine (its own 5 features fix the layout) but the model takes 4
    with pytest.raises(InvalidNodeError, match=rf"^node {node_id(bad)}: .+") as info:
        classify_graph(source, backend, node_ids=[node_id(bad)], progress=False)
    assert isinstance(info.value.__cause__, ModelInputError)


def test_a_node_without_features_is_named_with_the_procedure_s_reason(backend):
    source = embedded_source()
    source.graph.set_property(5, "features", None)
    with pytest.raises(
        InvalidNodeError,
        match=rf"^node {node_id(5)}: node with id = {node_id(5)} property "
        r"'features': expected a value, got none \(missing\)$",
    ):
        classify_graph(source, backend, batch_size=8, progress=False)
    assert predictions(source) == {}  # node 5 is in the first batch: nothing written


class _PickyModel(ModelBackend):
    """Rejects any batch holding a blob from ``bad`` (by content), else asks the real model."""

    def __init__(self, inner: BundleBackend, bad_blobs: set[bytes]):
        self.inner, self.bad_blobs, self.config, self.version = (
            inner,
            bad_blobs,
            inner.config,
            inner.version,
        )
        self.calls = 0

    def classify(self, blobs):
        self.calls += 1
        if any(b in self.bad_blobs for b in blobs):
            raise ModelInputError("Invalid argument: the blob is bad")
        return self.inner.classify(blobs)


def test_model_rejections_are_split_down_to_the_nodes(reference, backend):
    source = embedded_source()
    ids = sorted(reference)
    bad_ids = [ids[3], ids[4], ids[50]]
    bad_blobs = set(source.sample_blobs_per_node(bad_ids, FANOUTS, ["features"], OPTIONS))
    picky = _PickyModel(backend, bad_blobs)
    summary = classify_graph(source, picky, batch_size=32, skip_invalid=True, progress=False)
    assert summary.invalid == [(i, "Invalid argument: the blob is bad") for i in bad_ids]
    assert_same(predictions(source), {k: v for k, v in reference.items() if k not in bad_ids})


def test_concurrent_fetches_keep_batches_whole_and_in_order(reference, backend):
    source = embedded_source()
    seen: list[list[int]] = []
    run = BatchClassifier(
        source, backend, batch_size=8, fetch_workers=3, queue_batches=1, progress=False
    )
    original = run._table.write
    run._table.write = lambda preds: seen.append([p[0] for p in preds]) or original(preds)
    assert run.run().classified == N
    assert [i for batch in seen for i in batch] == sorted(reference) and {
        len(b) for b in seen[:-1]
    } == {8}
    assert_same(predictions(source), reference)


def test_forked_fetch_workers_sample_in_other_processes_with_the_same_predictions(
    reference, backend
):
    import os

    source = embedded_source()
    run = BatchClassifier(source, backend, batch_size=8, fetch_workers=3, progress=False)
    fetch, infer, pids = run._fetch, run._infer, []

    def tagged(ids):  # runs in the worker that fetched the batch
        batch = fetch(ids)
        batch.pid = os.getpid()
        return batch

    run._fetch = tagged
    run._infer = lambda batch: pids.append(batch.pid) or infer(batch)
    assert run.run().classified == N
    assert len(set(pids)) == 3 and os.getpid() not in pids and len(pids) == -(-N // 8)
    assert_same(predictions(source), reference)


def test_forked_fetch_workers_stop_at_an_invalid_node_like_one_process(reference, backend):
    bad = 20
    source = embedded_source(bad=(bad,))
    run = BatchClassifier(source, backend, batch_size=8, fetch_workers=2, progress=False)
    with pytest.raises(InvalidNodeError, match=rf"^node {node_id(bad)}: .*features"):
        run.run()
    assert sorted(predictions(source)) == [node_id(i) for i in range(16)]  # nothing of batch 3
    assert run.summary.classified == 16 and run.summary.failed == 8
    source = embedded_source(bad=(20, 21, 60))
    summary = classify_graph(
        source, backend, batch_size=8, skip_invalid=True, fetch_workers=2, progress=False
    )
    assert [nid for nid, _ in summary.invalid] == [node_id(i) for i in (20, 21, 60)]
    written = predictions(source)
    assert set(written) == set(reference) - {node_id(i) for i in (20, 21, 60)}
    assert_same(written, isolated_run(source, backend, sorted(written)))


def test_a_fetch_worker_that_dies_stops_the_run_naming_it(reference, backend):
    import os

    from memgraph_tf.client.errors import ClientError

    source = embedded_source()
    run = BatchClassifier(source, backend, batch_size=8, fetch_workers=2, progress=False)
    fetch, parent = run._fetch, os.getpid()
    run._fetch = lambda ids: (
        os._exit(3) if node_id(20) in ids and os.getpid() != parent else fetch(ids)
    )
    with pytest.raises(
        ClientError,
        match=rf"^fetch worker 0 \(pid \d+\) exited with code 3 while sampling "
        rf"nodes {node_id(16)}\.\.{node_id(23)}; nothing of that batch",
    ):
        run.run()
    written = predictions(source)
    assert sorted(written) == [node_id(i) for i in range(16)]
    assert_same(written, {k: reference[k] for k in written})
    again = classify_graph(source, backend, batch_size=8, fetch_workers=2, progress=False)
    assert (again.classified, again.up_to_date) == (N - 16, 16)
    assert_same(predictions(source), reference)


def test_forked_fetch_workers_refuse_to_sample_a_property_the_run_writes(backend):
    with pytest.raises(
        ConfigurationError,
        match=r"^fetch_workers: the forked sampling processes read the graph "
        r"as it was .* samples \['features'\], which this run writes",
    ):
        BatchClassifier(embedded_source(), backend, write_property="features", fetch_workers=2)


def test_forked_fetch_workers_leave_when_their_process_is_killed(tmp_path, bundle_base):
    import os
    import re
    import signal
    import subprocess
    import sys
    import time

    script = tmp_path / "run.py"
    script.write_text(f"""
import logging, sys
from memgraph_tf.batch import BundleBackend, classify_graph
from memgraph_tf.client import EmbeddedSource
from memgraph_tf.embedded import EmbeddedGraph
logging.basicConfig(level=logging.INFO, stream=sys.stderr)
graph = EmbeddedGraph()
for i in range(20000):
    graph.add_node([{LABEL!r}], {{"id": i, "features": [0.5, 1.0, -1.0, float(i % 7)]}})
for i in range(20000):
    graph.add_edge(i, (i * 7 + 1) % 20000, "LINK")
classify_graph(EmbeddedSource(graph), BundleBackend(sys.argv[1]), batch_size=16, fetch_workers=2,
               progress=False)
""")
    proc = subprocess.Popen(
        [sys.executable, str(script), str(bundle_base)],
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
    )
    try:
        pids = None
        for line in proc.stderr:
            found = re.search(r"forked fetch processes \(pids (\d+), (\d+)\)", line)
            if found:
                pids = [int(found[1]), int(found[2])]
                break
        assert pids is not None, "the run logged no fetch workers"
        time.sleep(1.0)
        assert proc.poll() is None, "the run ended before the kill"
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()

    def alive(pid: int) -> bool:
        try:
            with open(f"/proc/{pid}/stat") as f:
                return f.read().rsplit(")", 1)[1].split()[0] != "Z"
        except FileNotFoundError:
            return False

    deadline = time.monotonic() + 30
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(alive(p) for p in pids), f"fetch workers {pids} outlived their killed process"


def test_a_run_freezes_the_graph_for_the_collector_and_leaves_it_as_it_found_it(reference, backend):
    import gc

    source = embedded_source()
    run = BatchClassifier(source, backend, batch_size=32, progress=False)
    infer, during = run._infer, []
    run._infer = lambda batch: during.append(gc.get_freeze_count()) or infer(batch)
    assert gc.get_freeze_count() == 0
    run.run()
    assert min(during) > 0 and gc.get_freeze_count() == 0
    # a process that froze objects itself keeps them frozen, and the run freezes nothing more
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        run = BatchClassifier(
            embedded_source(), backend, batch_size=32, overwrite=True, progress=False
        )
        infer, during = run._infer, []
        run._infer = lambda batch: during.append(gc.get_freeze_count()) or infer(batch)
        run.run()
        # (frozen objects that die leave the count: it may only go down)
        assert max(during) <= frozen and 0 < gc.get_freeze_count() <= frozen
    finally:
        gc.unfreeze()
    assert_same(predictions(source), reference)


def test_predict_signature_gives_the_classify_signature_s_answers(backend, monkeypatch):
    source = embedded_source()
    blobs = source.sample_blobs_per_node(
        [node_id(i) for i in range(40)], FANOUTS, ["features"], OPTIONS
    )
    assert backend._predict is not None  # exported bundles have a blobs -> scores serving_default
    direct = backend.classify(blobs)
    monkeypatch.setattr(backend, "_predict", None)  # the classify signature on tf.Examples
    assert backend.classify(blobs) == direct


class _FailingModel(ModelBackend):
    """The real model, until call ``fail_on`` raises a ModelError (a model failure that is not the
    nodes' fault)."""

    def __init__(self, inner: BundleBackend, fail_on: int):
        self.inner, self.fail_on, self.config, self.version = (
            inner,
            fail_on,
            inner.config,
            inner.version,
        )
        self.calls = 0

    def classify(self, blobs):
        self.calls += 1
        if self.calls == self.fail_on:
            raise ModelError("the model server fell over")
        return self.inner.classify(blobs)


def test_a_model_failure_stops_the_run_without_splitting_the_batch(backend):
    source = embedded_source()
    model = _FailingModel(backend, fail_on=2)
    run = BatchClassifier(source, model, batch_size=8, progress=False)
    with pytest.raises(ModelError, match=r"^the model server fell over$"):
        run.run()
    assert model.calls == 2  # no halving: the fault is not in a node
    assert run.summary.classified == 8 and len(predictions(source)) == 8


def test_a_write_failure_stops_the_run_and_earlier_batches_stay(backend):
    source = embedded_source()
    run = BatchClassifier(source, backend, batch_size=8, progress=False)
    original, calls = run._table.write, []

    def write(preds):
        calls.append(len(preds))
        if len(calls) == 3:
            raise ServerUnavailable("bolt://x: server unavailable or connection lost")
        return original(preds)

    run._table.write = write
    with pytest.raises(ServerUnavailable, match=r"server unavailable or connection lost"):
        run.run()
    assert run.summary.classified == 16 and len(predictions(source)) == 16
    again = classify_graph(
        source, backend, batch_size=8, progress=False
    )  # and a rerun finishes the job
    assert (again.classified, again.up_to_date) == (N - 16, 16)


def test_op_bundle_gives_the_op_free_bundle_s_predictions(tmp_path, sage_model, reference):
    from memgraph_tf.serving import export_bundle

    export_bundle(
        sage_model,
        tmp_path,
        "BatchSageOp",
        4,
        use_op=True,
        properties=["features"],
        sample_options=OPTIONS,
        warmup=False,
    )
    source = embedded_source()
    with BundleBackend(tmp_path / "BatchSageOp" / "4") as model:
        assert model.version == 4 and model.config.use_op
        classify_graph(source, model, progress=False)
    got = predictions(source)
    assert {v for _, _, v in got.values()} == {4}
    assert_same({k: (c, s, 1) for k, (c, s, _) in got.items()}, reference)


def test_bundle_backend_refuses_what_is_not_a_bundle(tmp_path):
    with pytest.raises(
        ConfigurationError, match=r"model: expected a bundle directory .*no such directory"
    ):
        BundleBackend(tmp_path / "nope")
    with pytest.raises(
        ConfigurationError, match=r"model: expected saved_model.pb or numbered version directories"
    ):
        BundleBackend(tmp_path)


def test_predict_and_write_no_longer_depends_on_chunks(sage_model):
    from memgraph_tf.client import predict_and_write

    source = embedded_source(n=40)
    ids = [node_id(i) for i in range(40)]
    shuffled = list(ids)
    random.Random(1).shuffle(shuffled)
    opts = {"id_property": "id", "label": LABEL}
    predict_and_write(
        sage_model,
        source,
        ids,
        options=opts,
        chunk_size=40,
        property_name="whole",
        progress=False,
    )
    predict_and_write(
        sage_model,
        source,
        shuffled[:23],
        options=opts,
        chunk_size=4,
        batch_size=3,
        property_name="parts",
        progress=False,
    )
    graph = source.graph
    rows = {graph.get_property(i, "id"): i for i in graph.nodes(LABEL)}
    for nid in shuffled[:23]:
        assert graph.get_property(rows[nid], "parts") == graph.get_property(rows[nid], "whole")
        assert graph.get_property(rows[nid], "parts_score") == pytest.approx(
            graph.get_property(rows[nid], "whole_score"), rel=1e-6
        )
        assert graph.get_property(rows[nid], "parts_version") == 0


# ------------------------------------------------------------------------------ REST and gRPC
@pytest.fixture(scope="module")
def model_server(op_bundle_base):
    """A local server of the op twin: the REST and gRPC backends do not depend on the decoder
    (their predictions are compared with the op-free ``reference``)."""
    from memgraph_tf.serving.model_server import ModelServer

    return ModelServer(op_bundle_base, "BatchSageOp")


def test_rest_backend_through_the_local_server(model_server, reference):
    from memgraph_tf.serving.server import start_server

    source = embedded_source()
    with start_server(model_server) as running, rest_backend(running.url, "BatchSageOp") as model:
        assert model.version == 1 and model.client.version == 1  # pinned to what was newest
        summary = classify_graph(source, model, batch_size=16, progress=False)
    assert summary.classified == N
    assert_same(predictions(source), reference)


def test_grpc_backend_through_the_local_server(model_server, reference):
    grpc_server = pytest.importorskip(
        "memgraph_tf.serving.grpc_server",
        reason="the gRPC server (memgraph_tf.serving.grpc_server) is not here",
    )
    from memgraph_tf.batch import grpc_backend

    source = embedded_source()
    with (
        grpc_server.start_grpc_server(model_server) as running,
        grpc_backend(running.target, "BatchSageOp") as model,
    ):
        assert model.version == 1
        summary = classify_graph(source, model, batch_size=16, progress=False)
    assert summary.classified == N
    assert_same(predictions(source), reference)


# ------------------------------------------------------------------------ real Bolt (ArcadeDB)
@pytest.mark.arcadedb
def test_bolt_fallback_run_equals_the_embedded_run(bolt_graph, backend, reference):
    summary = classify_graph(
        bolt_graph, backend, batch_size=32, write_property="bolt", progress=False
    )
    assert (summary.classified, summary.up_to_date) == (N, 0)
    assert_same(bolt_predictions(bolt_graph, "bolt"), reference)
    again = classify_graph(
        bolt_graph, backend, batch_size=32, write_property="bolt", progress=False
    )
    assert (again.classified, again.up_to_date) == (0, N)


@pytest.mark.arcadedb
def test_bolt_where_predicate_and_shards(bolt_graph, backend, reference):
    summary = classify_graph(
        bolt_graph,
        backend,
        where="n.half = $h",
        where_params={"h": 0},
        write_property="even",
        progress=False,
    )
    even = {k for k in reference if k % 2 == 0}
    assert summary.classified == len(even)
    assert_same(bolt_predictions(bolt_graph, "even"), {k: reference[k] for k in even})
    merged: dict = {}
    for i in range(3):
        part_summary = classify_graph(
            bolt_graph,
            backend,
            shard=Shard(i, 3),
            batch_size=7,
            write_property=f"bs{i}",
            progress=False,
        )
        part = bolt_predictions(bolt_graph, f"bs{i}")
        assert part_summary.classified == len(part) and all(k % 3 == i for k in part)
        assert not set(part) & set(merged)
        merged.update(part)
    assert_same(merged, reference)


@pytest.mark.arcadedb
def test_bolt_rest_backend(bolt_graph, model_server, reference):
    from memgraph_tf.serving.server import start_server

    with start_server(model_server) as running, rest_backend(running.url, "BatchSageOp") as model:
        classify_graph(bolt_graph, model, batch_size=16, write_property="rest", progress=False)
    assert_same(bolt_predictions(bolt_graph, "rest"), reference)


# ------------------------------------------------------- keyset paging adds up
@pytest.mark.arcadedb
def test_arcadedb_compares_a_bare_id_of_an_unlabelled_node_as_a_record_lookup(
    bolt_source, paging_graph
):
    """The server finding behind the paging query's ``id(n) + 0``: ArcadeDB 26.10 looks up the one
    record whose id is compared with a bare ``id(n)`` of an unlabelled node, whatever the
    comparison."""
    after = paging_graph[10]
    count = "MATCH (n) WHERE {key} > $after AND " + kit.PAGING_WHERE + " RETURN count(n) AS c"
    assert bolt_source.read(count.format(key="id(n)"), {"after": after}) == [{"c": 0}]
    assert bolt_source.read(count.format(key="id(n) + 0"), {"after": after}) == [{"c": N - 11}]
    labelled = "MATCH (n:PagingItem) WHERE id(n) > $after RETURN count(n) AS c"
    assert bolt_source.read(labelled, {"after": after}) == [{"c": N - 11}]


@pytest.mark.arcadedb
def test_arcadedb_pages_every_node_of_a_selection_without_a_label(bolt_source, paging_graph):
    table = NodeTable(bolt_source, NodeSelection(where=kit.PAGING_WHERE, version=1))
    scan = table.scan(7, todo=False)
    assert [k for page in scan for k in page] == paging_graph
    assert (scan.read, scan.last_key, scan.unread()) == (N, paging_graph[-1], 0)
    assert table.count(False, lo=paging_graph[30], hi=paging_graph[40]) == 10
    assert table.bounds(False) == (paging_graph[0], paging_graph[-1])
    ranged = table.scan(4, todo=False, lo=paging_graph[5], hi=paging_graph[20])
    assert [k for page in ranged for k in page] == paging_graph[5:20]


@pytest.mark.arcadedb
def test_arcadedb_without_a_label_classifies_every_node(
    bolt_source, paging_graph, backend, monkeypatch
):
    model = kit.Unlabelled(backend)
    options = {"where": kit.PAGING_WHERE, "batch_size": 16, "progress": False}
    # before: the bare-id query read the first page and a key or two, and the run said done
    monkeypatch.setattr(NodeTable, "_range", kit.bare_id_range)
    with pytest.raises(KeysetPagingError) as info:
        classify_graph(bolt_source, model, write_property="old", **options)
    done = kit.paging_written(bolt_source, "old")
    assert 16 <= done < N
    assert re.fullmatch(
        rf"selected {N} node\(s\) but classified {done}, 0 already up to date, 0 invalid: "
        rf"{N - done} node\(s\) were never read \(the server's keyset .*\)",
        str(info.value),
    ), info.value
    assert exit_code_for(info.value) == EXIT_FAILED
    monkeypatch.undo()
    # after: every node, and a rerun finds nothing left to do
    summary = classify_graph(bolt_source, model, write_property="new", **options)
    assert (summary.total, summary.classified, summary.up_to_date) == (N, N, 0)
    assert kit.paging_written(bolt_source, "new") == N
    again = classify_graph(bolt_source, model, write_property="new", **options)
    assert (again.total, again.classified, again.up_to_date) == (0, 0, N)


def test_a_page_that_repeats_its_last_key_is_refused_naming_it(backend, monkeypatch):
    source = embedded_source()
    keys = sorted(node_id(i) for i in range(N))
    monkeypatch.setattr(NodeTable, "page", kit.repeats_its_last_key)
    for overwrite in (False, True):  # before: with overwrite it paged the same keys forever
        with pytest.raises(KeysetPagingError) as info:
            classify_graph(source, backend, batch_size=16, overwrite=overwrite, progress=False)
        assert str(info.value) == (
            f"keyset paging: page 2 returned key {keys[15]} after key {keys[15]} (expected keys "
            f"> {keys[15]}, ascending): the server does not honour the paging query's n.id > "
            f"$after ORDER BY key; 16 node(s) read before it"
        )
        assert exit_code_for(info.value) == EXIT_FAILED


def test_a_server_that_stops_early_fails_the_run_naming_the_gap(backend, monkeypatch):
    source = embedded_source()
    keys = sorted(node_id(i) for i in range(N))
    classify_graph(source, backend, node_ids=keys[40:45], progress=False)  # 5 already done
    monkeypatch.setattr(NodeTable, "page", kit.stops_after_one_page)
    with pytest.raises(KeysetPagingError) as info:  # before: exit 0 after the first page
        classify_graph(source, backend, batch_size=32, progress=False)
    assert str(info.value) == (
        f"selected {N} node(s) but classified 32, 5 already up to date, 0 invalid: {N - 37} "
        f"node(s) were never read (the server's keyset paging stopped early after key "
        f"{keys[31]}: {N - 37} selected node(s) have a greater key)"
    )
    assert exit_code_for(info.value) == EXIT_FAILED
    monkeypatch.undo()
    summary = classify_graph(source, backend, batch_size=32, progress=False)  # the rerun resumes
    assert (summary.classified, summary.up_to_date) == (N - 37, 37)


def test_nodes_classified_elsewhere_meanwhile_are_no_gap(backend, monkeypatch):
    """Selected nodes that another run classifies during this one are not read by it (they are no
    longer to do), and are no gap."""
    source = embedded_source()
    keys = sorted(node_id(i) for i in range(N))
    page = NodeTable.page

    def another_run_takes_the_rest(self, after, limit, todo, **kw):
        if after == keys[31]:
            classify_graph(source, backend, node_ids=keys[32:], progress=False)
        return page(self, after, limit, todo, **kw)

    monkeypatch.setattr(NodeTable, "page", another_run_takes_the_rest)
    summary = classify_graph(source, backend, batch_size=32, progress=False)
    assert (summary.total, summary.classified, summary.up_to_date) == (N, 32, 0)


def test_the_scan_refuses_keys_out_of_order_or_out_of_range(monkeypatch):
    table = NodeTable(embedded_source(), NodeSelection(label=LABEL, id_property="id"))
    keys = sorted(node_id(i) for i in range(N))
    monkeypatch.setattr(NodeTable, "page", lambda self, after, limit, todo, **kw: keys[2::-1])
    with pytest.raises(
        KeysetPagingError, match=rf"^keyset paging: page 1 returned key {keys[1]} after key "
    ):
        list(table.scan(5, todo=False))
    monkeypatch.setattr(NodeTable, "page", lambda self, after, limit, todo, **kw: keys[:3])
    with pytest.raises(
        KeysetPagingError,
        match=rf"^keyset paging: page 1 returned key {keys[0]} outside the key range "
        rf"\[{keys[1]}, None\)",
    ):
        list(table.scan(5, todo=False, lo=keys[1]))
