"""Server-side batching (``--enable-batching``, TF Serving's BasicBatchScheduler semantics):
concurrent calls of one version and signature are merged into one model call, and every caller
gets the answer an unbatched server gives."""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import requests

from memgraph_tf.errors import ServingFailure
from memgraph_tf.serving.model_server import BatchingOptions, BatchScheduler


def _concurrently(n: int, fn):
    """Run ``fn(i)`` for i < n on n threads released together; results in order."""
    barrier = threading.Barrier(n)

    def go(i):
        barrier.wait()
        return fn(i)

    with ThreadPoolExecutor(n) as pool:
        return list(pool.map(go, range(n)))


# ---------------------------------------------------------------------------------- scheduler
class Runner:
    """A model stand-in: doubles its input rows, counting calls and rows per call."""

    def __init__(self, out=None, fail_when=None):
        self.calls: list[int] = []
        self.out = out
        self.fail_when = fail_when
        self.lock = threading.Lock()

    def __call__(self, feeds):
        x = feeds["x"]
        with self.lock:
            self.calls.append(len(x))
        if self.fail_when is not None and self.fail_when(x):
            raise ServingFailure(400, f"bad rows {x.tolist()}")
        if self.out is not None:
            return self.out(x)
        return {"y": x * 2, "n": np.arange(len(x))}


def test_concurrent_tasks_merge_into_one_call_and_split_back():
    sched = BatchScheduler(
        BatchingOptions(max_batch_size=64, batch_timeout_micros=1_000_000, num_batch_threads=1)
    )
    runner = Runner()
    try:
        got = _concurrently(8, lambda i: sched.submit("k", {"x": np.array([i, 10 + i])}, 2, runner))
    finally:
        sched.close()
    assert runner.calls == [16]  # one call, 8 tasks x 2 rows
    for i, out in enumerate(got):  # each task gets the rows it brought
        assert out["y"].tolist() == [2 * i, 2 * (10 + i)]
    assert sorted(v for out in got for v in out["n"].tolist()) == list(range(16))
    assert sched.batches_run == 1 and sched.tasks_run == 8


def test_max_batch_size_splits_batches_and_a_big_task_runs_alone():
    sched = BatchScheduler(
        BatchingOptions(max_batch_size=4, batch_timeout_micros=1_000_000, num_batch_threads=1)
    )
    runner = Runner()
    try:
        _concurrently(8, lambda i: sched.submit("k", {"x": np.array([i])}, 1, runner))
        out = sched.submit("k", {"x": np.arange(10)}, 10, runner)
    finally:
        sched.close()
    assert sorted(runner.calls[:2]) == [4, 4] and runner.calls[2:] == [10]
    assert out["y"].tolist() == list(range(0, 20, 2))


def test_different_keys_never_merge():
    sched = BatchScheduler(BatchingOptions(batch_timeout_micros=1_000_000, num_batch_threads=1))
    runner = Runner()
    try:
        _concurrently(6, lambda i: sched.submit(i % 2, {"x": np.array([i])}, 1, runner))
    finally:
        sched.close()
    assert sorted(runner.calls) == [3, 3]


@pytest.mark.parametrize("case", ["failing batch", "not batch-major"])
def test_a_batch_that_cannot_be_split_runs_task_by_task(case):
    if case == "failing batch":  # one bad task: the others still get their answers
        runner = Runner(fail_when=lambda x: 3 in x.tolist())
    else:  # a scalar output cannot be split by rows
        runner = Runner(out=lambda x: {"total": np.array(x.sum())})
    sched = BatchScheduler(BatchingOptions(batch_timeout_micros=1_000_000, num_batch_threads=1))

    def one(i):
        try:
            return sched.submit("k", {"x": np.array([i])}, 1, runner)
        except ServingFailure as exc:
            return exc

    try:
        got = _concurrently(6, one)
    finally:
        sched.close()
    assert runner.calls[0] == 6 and runner.calls[1:] == [1] * 6
    for i, out in enumerate(got):
        if case == "failing batch" and i == 3:
            assert isinstance(out, ServingFailure) and out.message == "bad rows [3]"
        elif case == "failing batch":
            assert out["y"].tolist() == [2 * i]
        else:
            assert out["total"].item() == i


def test_a_full_queue_is_a_503():
    gate = threading.Event()
    runner = Runner(out=lambda x: (gate.wait(10), {"y": x})[1])
    sched = BatchScheduler(
        BatchingOptions(max_batch_size=1, num_batch_threads=1, max_enqueued_batches=1)
    )
    try:
        with ThreadPoolExecutor(3) as pool:
            first = pool.submit(sched.submit, "k", {"x": np.array([1])}, 1, runner)
            while not runner.calls:  # the one thread is busy with the first task
                threading.Event().wait(0.01)
            second = pool.submit(sched.submit, "k", {"x": np.array([2])}, 1, runner)
            while len(sched._ready) < 1:
                threading.Event().wait(0.01)
            with pytest.raises(
                ServingFailure,
                match="batch scheduling queue to which this task was submitted is full",
            ) as info:
                sched.submit("k", {"x": np.array([3])}, 1, runner)
            assert info.value.status == 503
            gate.set()
            assert first.result()["y"].tolist() == [1] and second.result()["y"].tolist() == [2]
    finally:
        gate.set()
        sched.close()


def test_options_are_checked():
    with pytest.raises(ValueError, match=r"batching max_batch_size: expected an int >= 1, got 0"):
        BatchingOptions(max_batch_size=0)


# -------------------------------------------------------------------------------- end to end
X = np.array([[1.0, 2.0, 3.0], [0.5, -1.0, 2.0], [0.0, 0.0, 0.25], [3.0, 1.0, -2.0]], np.float32)


@pytest.fixture(scope="module")
def servers(toy_base):
    """The toy model twice: unbatched, and batched (one batch thread, 300 ms timeout)."""
    from memgraph_tf.serving.model_server import ModelServer
    from memgraph_tf.serving.server import start_server

    plain = ModelServer(toy_base, "toy")
    batched = ModelServer(
        toy_base,
        "toy",
        batching=BatchingOptions(
            max_batch_size=64, batch_timeout_micros=300_000, num_batch_threads=1
        ),
    )
    with start_server(plain) as a, start_server(batched, threads=16) as b:
        a.model_server, b.model_server = plain, batched
        yield a, b
    batched.close()


REQUESTS = (
    [(":classify", {"signature_name": "classify", "examples": [{"x": row.tolist()}]}) for row in X]
    + [(":predict", {"instances": [row.tolist()]}) for row in X]
    + [(":regress", {"signature_name": "regress", "examples": [{"x": row.tolist()}]}) for row in X]
    + [
        (":classify", {"signature_name": "classify", "examples": [{"x": [1, 2, 3]}]}),
        (":predict", {"instances": [[1.0, 2.0]]}),
    ]
)  # two bad ones: their own 400s


def _post(srv, i):
    suffix, body = REQUESTS[i % len(REQUESTS)]
    r = requests.post(f"{srv.url}/v1/models/toy{suffix}", data=json.dumps(body), timeout=60)
    return r.status_code, r.text


def test_batched_answers_equal_unbatched_and_calls_are_merged(servers):
    plain, batched = servers
    want = [_post(plain, i) for i in range(len(REQUESTS))]
    assert [s for s, _ in want].count(400) == 2
    before = batched.model_server.model_calls
    runs = batched.model_server.batcher.batches_run
    got = _concurrently(len(REQUESTS), lambda i: _post(batched, i))
    assert got == want  # same status and the same bytes, request by request
    calls = batched.model_server.model_calls - before
    batches = batched.model_server.batcher.batches_run - runs
    # 14 requests over 3 signatures (plus the bad predict, refused before the model): far fewer
    # model calls than requests, the failing classify batch re-run task by task
    assert batches <= 6 and calls < len(REQUESTS) - 1, (calls, batches)


# ------------------------------------------------------------------ node ids, batched fetches
class CountingTable:
    """A graph source answering blobs by node id from a table, counting its calls."""

    def __init__(self, table):
        self.table, self.calls, self.lock = table, [], threading.Lock()

    def sample_blobs_per_node(self, ids, fanouts, properties, options):
        with self.lock:
            self.calls.append(list(ids))
        return [self.table[i] for i in ids]


def test_node_id_fetches_are_merged_and_answers_equal_unbatched(sage_op_bundle, sage):
    from memgraph_tf.serving.model_server import ModelServer
    from memgraph_tf.serving.server import start_server

    blobs, _ = sage.blobs(6, seed=3)
    table = dict(enumerate(blobs, 100))
    plain_source, batched_source = CountingTable(table), CountingTable(table)
    plain = ModelServer(sage_op_bundle.path, graph_source=plain_source, warmup=False)
    options = BatchingOptions(max_batch_size=64, batch_timeout_micros=200_000, num_batch_threads=1)
    batched = ModelServer(
        sage_op_bundle.path, graph_source=batched_source, warmup=False, batching=options
    )
    good = [{"examples": [{"node_id": 100 + i % 6}]} for i in range(11)]
    mixed = [*good[:5], {"examples": [{"node_id": 100}, {"node_id": 7}]}]  # 7: not in the graph

    def post(srv, body):
        r = requests.post(f"{srv.url}/v1/models/sage:classify", json=body, timeout=60)
        return r.status_code, r.text

    with start_server(plain) as a, start_server(batched, threads=16) as b:
        want = [post(a, body) for body in good]
        got = _concurrently(len(good), lambda i: post(b, good[i]))
        assert got == want and {s for s, _ in got} == {200}  # same bytes, request by request
        assert len(batched_source.calls) < len(good) / 2, batched_source.calls
        want = [post(a, body) for body in mixed]
        got = _concurrently(len(mixed), lambda i: post(b, mixed[i]))
    batched.close()
    assert got == want
    # the missing id's error names only its own request's ids: a merged call that fails is run
    # again request by request
    assert want[-1][0] == 400 and "node ids [100, 7] from the graph" in want[-1][1], want[-1]


def _node_servers(bundle, sage):
    """An unbatched server and a batched one (access log on) of ``bundle`` over blobs of six
    nodes (ids 100-105): ``(plain, batched, the batched one's CountingTable, the blobs)``."""
    from memgraph_tf.serving.model_server import ModelServer

    blobs, _ = sage.blobs(6, seed=3)
    table = dict(enumerate(blobs, 100))
    plain = ModelServer(bundle.path, graph_source=CountingTable(table), warmup=False)
    source = CountingTable(table)
    options = BatchingOptions(max_batch_size=64, batch_timeout_micros=200_000, num_batch_threads=1)
    batched = ModelServer(
        bundle.path, graph_source=source, warmup=False, batching=options, access_log=True
    )
    return plain, batched, source, blobs


def test_a_node_id_request_is_one_batch_task_and_answers_as_unbatched(sage_op_bundle, sage, caplog):
    """With batching on, a request's graph read and its model call are one task of the batch
    scheduler (one task a request, not two; fewer source and model calls than requests).
    Answers over REST and gRPC -- with a context, and beside an example that carries its blob
    -- equal an unbatched server's, and the access log still times the read and the call."""
    import base64
    import logging

    import grpc
    from tensorflow_serving.apis import prediction_service_pb2_grpc

    from memgraph_tf.serving.grpc_server import start_grpc_server
    from memgraph_tf.serving.server import start_server
    from tests.serving.grpc_kit import node_id_request

    plain, batched, source, blobs = _node_servers(sage_op_bundle, sage)
    key = plain.resolve("sage", None, None).bundle_config.blob_feature_key
    carried = {key: {"b64": base64.b64encode(blobs[4]).decode()}}
    bodies = [{"examples": [{"node_id": 100 + i % 6}]} for i in range(8)] + [
        {"context": {"extra": 1.5}, "examples": [{"node_id": 101}, {"node_id": 102}]},
        {"examples": [{"node_id": 103}, carried, {"node_id": 105}]},
    ]

    def post(srv, body):
        r = requests.post(f"{srv.url}/v1/models/sage:classify", json=body, timeout=60)
        return r.status_code, r.text

    def classify(rpc, ids, context=False):
        request = node_id_request("sage", ids)
        if context:  # the same examples as an ExampleListWithContext
            listed = request.input.example_list_with_context
            listed.examples.extend(request.input.example_list.examples)
            listed.context.features.feature["extra"].float_list.value.append(1.5)
        with grpc.insecure_channel(rpc.target) as channel:
            stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
            return stub.Classify(request, timeout=30).result

    with start_server(plain) as a, start_server(batched, threads=16) as b:
        with start_grpc_server(plain) as a_rpc, start_grpc_server(batched) as b_rpc:
            want = [post(a, body) for body in bodies]
            tasks, calls = batched.batcher.tasks_run, batched.model_calls
            with caplog.at_level(logging.INFO, logger="memgraph_tf.serving.access_log"):
                got = _concurrently(len(bodies), lambda i: post(b, bodies[i]))
            merged_tasks = batched.batcher.tasks_run - tasks
            merged_calls, reads = batched.model_calls - calls, len(source.calls)
            assert classify(b_rpc, [104, 100]) == classify(a_rpc, [104, 100])
            assert classify(b_rpc, [101], True) == classify(a_rpc, [101], True)
            assert len(classify(b_rpc, [101], True).classifications) == 1
    batched.close()
    assert got == want and {s for s, _ in got} == {200}  # same bytes, request by request
    assert merged_tasks == len(bodies), merged_tasks
    assert merged_calls < len(bodies) / 2 and reads <= merged_calls + 1, (merged_calls, reads)
    lines = [json.loads(r.getMessage()) for r in caplog.records]
    assert len(lines) == len(bodies)
    assert all(line["graph_fetch_ms"] > 0 and line["model_ms"] > 0 for line in lines), lines


def test_node_id_errors_under_batching_are_the_unbatched_ones(sage_op_bundle, sage, caplog):
    """Under batching: a request wrong in its nodes and its signature gets the graph's error
    first, as unbatched; a bad example fails only its own request and the rows its batch read
    are not read again for the others; a failed request's read is still timed."""
    import base64
    import logging

    from memgraph_tf.serving.server import start_server

    plain, batched, source, _ = _node_servers(sage_op_bundle, sage)
    key = plain.resolve("sage", None, None).bundle_config.blob_feature_key
    garbage = {key: {"b64": base64.b64encode(b"not a blob").decode()}}
    wrong = [
        {"signature_name": "nope", "examples": [{"node_id": 7}]},  # 7: not in the graph
        {"signature_name": "nope", "examples": [{"node_id": 100}]},
    ]
    bodies = [{"examples": [{"node_id": 100 + i}]} for i in range(5)]
    bodies.append({"examples": [{"node_id": 105}, garbage]})

    def post(srv, body):
        r = requests.post(f"{srv.url}/v1/models/sage:classify", json=body, timeout=60)
        return r.status_code, r.text

    with start_server(plain) as a, start_server(batched, threads=16) as b:
        wrong_got = [post(b, body) for body in wrong]
        assert wrong_got == [post(a, body) for body in wrong]
        want = [post(a, body) for body in bodies]
        del source.calls[:]
        runs = batched.batcher.batches_run
        got = _concurrently(len(bodies), lambda i: post(b, bodies[i]))
        runs, reads = batched.batcher.batches_run - runs, list(source.calls)
        with caplog.at_level(logging.INFO, logger="memgraph_tf.serving.access_log"):
            missing = post(b, {"examples": [{"node_id": 7}]})
    batched.close()
    assert wrong_got[0][0] == 400 and "node ids [7] from the graph" in wrong_got[0][1]
    assert (
        wrong_got[1][0] == 400 and "nope" in wrong_got[1][1] and "not found" in wrong_got[1][1]
    ), wrong_got
    assert got == want and [s for s, _ in got] == [200] * 5 + [400]
    # one read a batch: a batch whose model call fails runs again without reading again
    assert len(reads) == runs, (runs, reads)
    assert missing[0] == 400 and "[7]" in missing[1], missing
    [line] = [json.loads(r.getMessage()) for r in caplog.records]
    assert line["status"] == 400 and line["graph_fetch_ms"] > 0, line
