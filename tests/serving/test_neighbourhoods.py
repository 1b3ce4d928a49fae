"""Node id -> neighbourhood blob (memgraph_tf/serving/neighbourhoods.py): one component, used by
both classify_nodes (client side) and the local server's {"node_id": ...} examples; and the
serving package's layering (the server never imports memgraph_tf.client)."""

from __future__ import annotations

import ast
import pathlib

import numpy as np
import pytest
import requests

from memgraph_tf import errors
from memgraph_tf.errors import MemgraphTfError
from memgraph_tf.serving.bundle import SamplingSpec
from memgraph_tf.serving.client import ServingClient, classify_nodes
from memgraph_tf.serving.neighbourhoods import NeighbourhoodFetcher, check_node_ids, fetch_blobs
from tests.serving.http_kit import assert_error

SPEC = SamplingSpec([3, 2], ["features"], {"seed": 7, "low_degree": "pad"})
SERVING_DIR = pathlib.Path(__file__).resolve().parents[2] / "memgraph_tf" / "serving"


class FakeSource:
    """A graph source: blobs by node id from a table, or the configured failure."""

    def __init__(
        self, table: dict[int, bytes] | None = None, fail: BaseException | None = None, answer=None
    ):
        self.table = table or {}
        self.fail = fail
        self.answer = answer
        self.calls: list[tuple] = []

    def sample_blobs_per_node(self, ids, fanouts, properties, options):
        self.calls.append((list(ids), fanouts, properties, options))
        if self.fail is not None:
            raise self.fail
        if self.answer is not None:
            return self.answer
        for i, nid in enumerate(ids):  # the query module's words (memgraph_tf/procedures/access.py)
            if nid not in self.table:
                raise LookupError(f"seeds[{i}]: unknown node id {nid} (no node has id = {nid})")
        return [self.table[i] for i in ids]


class QueryFailed(MemgraphTfError):
    """Stands for a client QueryError (a MemgraphTfError that is neither a ValueError nor a
    ConnectionError), without importing memgraph_tf.client."""


# ---------------------------------------------------------------------------------- component
def test_fetch_passes_the_bundles_sampling_and_keeps_order():
    src = FakeSource({1: b"one", 2: b"two", 5: b"five"})
    got = NeighbourhoodFetcher(src).fetch([5, np.int64(1), 2], SPEC)
    assert got == [b"five", b"one", b"two"]
    ((ids, fanouts, properties, options),) = src.calls
    assert ids == [5, 1, 2] and all(type(i) is int for i in ids)  # plain ints for the driver
    assert (fanouts, properties, options) == (
        [3, 2],
        ["features"],
        {"seed": 7, "low_degree": "pad"},
    )
    assert NeighbourhoodFetcher(src).fetch([], SPEC) == [] and len(src.calls) == 1  # no call


@pytest.mark.parametrize(
    "bad, message",
    [
        ("7", r'node_ids\[1\]: expected an integer, got "7"'),
        (True, r"node_ids\[1\]: expected an integer, got true"),
        (1.5, r"node_ids\[1\]: expected an integer, got 1.5"),
        (None, r"node_ids\[1\]: expected an integer, got null"),
        (2**63, r"node_ids\[1\]: expected an integer in the int64 range, got 9223372036854775808"),
        (-(2**63) - 1, r"node_ids\[1\]: expected an integer in the int64 range"),
    ],
)
def test_bad_node_ids_are_named_before_the_source_is_called(bad, message):
    src = FakeSource({1: b"x"})
    with pytest.raises(errors.NodeIdError, match=message) as info:
        fetch_blobs(src, [1, bad], SPEC)
    assert isinstance(info.value, ValueError) and not src.calls


def test_check_node_ids_names_each_id_and_returns_plain_ints():
    with pytest.raises(
        errors.NodeIdError, match=r'examples\[4\].node_id: expected an integer, got "x"'
    ):
        check_node_ids([1, "x"], names=["examples[3].node_id", "examples[4].node_id"])
    got = check_node_ids([-(2**63), 2**63 - 1, np.int32(5)])
    assert got == [-(2**63), 2**63 - 1, 5] and all(type(i) is int for i in got)


@pytest.mark.parametrize(
    "fail, kind, builtin, message",
    [
        (
            ConnectionRefusedError("refused"),
            errors.GraphUnavailableError,
            ConnectionError,
            r"the graph is unavailable: refused",
        ),
        (
            TimeoutError("timed out"),
            errors.GraphUnavailableError,
            ConnectionError,
            r"the graph is unavailable: timed out",
        ),
        (
            ValueError("no node with id 9"),
            errors.NeighbourhoodDataError,
            ValueError,
            r"fetching node ids \[1, 9\] from the graph: no node with id 9",
        ),
        (
            KeyError(9),
            errors.NeighbourhoodDataError,
            ValueError,
            r"fetching node ids \[1, 9\] from the graph: 9",
        ),
        (
            QueryFailed("procedure failed"),
            errors.GraphSourceError,
            MemgraphTfError,
            r"fetching node ids \[1, 9\] from the graph: procedure failed",
        ),
    ],
)
def test_source_failures_become_typed_errors(fail, kind, builtin, message):
    with pytest.raises(kind, match=message) as info:
        fetch_blobs(FakeSource(fail=fail), [1, 9], SPEC)
    assert isinstance(info.value, builtin) and isinstance(info.value, errors.ServingError)
    assert info.value.__cause__ is fail


def test_other_exceptions_propagate_unchanged():
    bug = RuntimeError("a bug in the source")
    with pytest.raises(RuntimeError, match="a bug in the source") as info:
        fetch_blobs(FakeSource(fail=bug), [1], SPEC)
    assert info.value is bug


def test_answers_that_do_not_fit_are_source_errors():
    with pytest.raises(
        errors.GraphSourceError, match=r"the source returned 1 blobs for 2 node ids"
    ):
        fetch_blobs(FakeSource(answer=[b"a"]), [1, 2], SPEC)
    with pytest.raises(errors.GraphSourceError, match=r"returned a str for node 2, expected bytes"):
        fetch_blobs(FakeSource(answer=[b"a", "YQ"]), [1, 2], SPEC)


def test_long_id_lists_are_shortened_in_messages():
    with pytest.raises(
        errors.NeighbourhoodDataError,
        match=r"fetching node ids \[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, \.\.\.\] "
        r"\(3000 ids\) from the graph: bad",
    ):
        fetch_blobs(FakeSource(fail=ValueError("bad")), list(range(3000)), SPEC)


def test_a_source_without_the_method_is_refused():
    with pytest.raises(TypeError, match=r"source: expected an object with sample_blobs_per_node"):
        NeighbourhoodFetcher(object())


# ---------------------------------------------------------------------- both paths, one component
@pytest.fixture(scope="module")
def node_table(sage):
    blobs, _ = sage.blobs(4, seed=3)
    return {100 + i: b for i, b in enumerate(blobs)}


@pytest.fixture(scope="module")
def served(sage_op_bundle, node_table):
    """The session's C++-op sage bundle (sampling options seed 7, low_degree pad) served with a
    fake graph source (the server's --graph path); routing and sampling do not depend on the
    decoder."""
    from memgraph_tf.serving.model_server import ModelServer
    from memgraph_tf.serving.server import start_server

    assert sage_op_bundle.options == {"seed": 7, "low_degree": "pad"}
    source = FakeSource(node_table)
    ms = ModelServer(sage_op_bundle.path, graph_source=source, warmup=False)
    with start_server(ms) as srv:
        srv.source = source
        srv.model_server = ms
        yield srv


def test_both_paths_fetch_through_the_one_component(served, node_table, monkeypatch):
    fetched = []
    original = NeighbourhoodFetcher.fetch

    def spy(self, node_ids, sampling, *, names=None):
        fetched.append((list(node_ids), sampling, names))
        return original(self, node_ids, sampling, names=names)

    monkeypatch.setattr(NeighbourhoodFetcher, "fetch", spy)
    ids = [101, 103, 100]
    r = requests.post(
        f"{served.url}/v1/models/sage:classify",
        timeout=60,
        json={"examples": [{"node_id": i} for i in ids]},
    )
    assert r.status_code == 200, r.text
    with ServingClient(served.url, "sage") as c:
        triples = classify_nodes(served.source, c, ids)
        direct = c.classify([node_table[i] for i in ids])
    assert len(fetched) == 2  # once for the server's node_id examples, once for classify_nodes
    assert fetched[0] == (
        ids,
        SPEC,
        ["examples[0].node_id", "examples[1].node_id", "examples[2].node_id"],
    )
    assert fetched[1] == (ids, SPEC, None)  # classify_nodes read the same spec from the bundle
    by_server = [[s for _, s in row] for row in r.json()["results"]]
    np.testing.assert_allclose(by_server, [[s for _, s in row] for row in direct], atol=1e-6)
    assert [t[0] for t in triples] == ids
    assert [t[1] for t in triples] == [max(row, key=lambda p: p[1])[0] for row in direct]


@pytest.mark.parametrize(
    "fail, status, kind, fragment",
    [
        (
            ConnectionRefusedError("graph down"),
            503,
            errors.GraphUnavailableError,
            "the graph is unavailable: graph down",
        ),
        (
            ValueError("no node 102"),
            400,
            errors.NeighbourhoodDataError,
            "fetching node ids [102] from the graph: no node 102",
        ),
        (
            QueryFailed("procedure tf_features.sample_per_node failed"),
            500,
            errors.GraphSourceError,
            "fetching node ids [102] from the graph: procedure tf_features.sample_per_node failed",
        ),
    ],
)
def test_both_paths_report_a_failing_graph_the_same_way(served, fail, status, kind, fragment):
    served.source.fail = fail
    try:
        r = requests.post(
            f"{served.url}/v1/models/sage:classify",
            timeout=60,
            json={"examples": [{"node_id": 102}]},
        )
        with ServingClient(served.url, "sage", retries=0) as c:
            with pytest.raises(kind) as info:
                classify_nodes(served.source, c, [102])
    finally:
        served.source.fail = None
    assert (r.status_code, r.json()) == (status, {"error": fragment})
    assert info.value.message == fragment


def test_both_paths_name_a_bad_node_id(served):
    r = requests.post(
        f"{served.url}/v1/models/sage:classify",
        timeout=60,
        json={"examples": [{"node_id": 100}, {"node_id": 2**64}]},
    )
    assert r.status_code == 400
    assert r.json()["error"] == (
        "examples[1].node_id: expected an integer in the int64 range, got 18446744073709551616"
    )
    with (
        ServingClient(served.url, "sage") as c,
        pytest.raises(errors.NodeIdError, match=r"node_ids\[1\]: expected an integer, got \"x\""),
    ):
        classify_nodes(served.source, c, [100, "x"])


def _grpc_classify(served, *examples: dict):
    """A gRPC Classify of ``examples`` (feature -> int64 value) against the served bundle:
    ``(code, details)`` of its failure."""
    import grpc
    from tensorflow_serving.apis import classification_pb2, prediction_service_pb2_grpc

    from memgraph_tf.serving.grpc_server import start_grpc_server

    req = classification_pb2.ClassificationRequest()
    req.model_spec.name = "sage"
    for features in examples:
        ex = req.input.example_list.examples.add()
        for key, value in features.items():
            ex.features.feature[key].int64_list.value.append(value)
    with (
        start_grpc_server(served.model_server) as rpc,
        grpc.insecure_channel(rpc.target) as channel,
    ):
        stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
        with pytest.raises(grpc.RpcError) as info:
            stub.Classify(req, timeout=30)
    return info.value.code().name, info.value.details()


@pytest.mark.parametrize("unknown", [999, -(2**63)])
def test_unknown_ids_are_named_by_the_requests_field(served, unknown):
    """The query module names an unknown id by its place in its seed list (``seeds[1]: unknown
    node id ...``, memgraph_tf/procedures/access.py); REST and gRPC answers name the request's
    field, ``examples[1].node_id``. int64's smallest value is an id over REST as over gRPC:
    rapidjson reads ``-9223372036854775808`` as an int64 (reader.h ParseNumber), and so does
    json_tensor.cc's int64 handling (``IsInt64()``)."""
    want = (
        f"fetching node ids [100, {unknown}] from the graph: examples[1].node_id: unknown node "
        f"id {unknown} (no node has id = {unknown})"
    )
    body = f'{{"examples": [{{"node_id": 100}}, {{"node_id": {unknown}}}]}}'
    r = requests.post(f"{served.url}/v1/models/sage:classify", timeout=60, data=body)
    assert_error(r, 400, want)
    assert _grpc_classify(served, {"node_id": 100}, {"node_id": unknown}) == (
        "INVALID_ARGUMENT",
        want,
    )


def test_an_example_with_neither_node_id_nor_blob_is_named(served):
    """``{"examples": [{}]}`` to a node bundle: 400 naming the example and the missing feature,
    over REST and gRPC, before TensorFlow's ParseExample (whose message names neither)."""
    key = served.model_server.models["sage"].versions[1].bundle_config.blob_feature_key
    want = (
        f"examples[1]: the feature '{key}' (the node's neighbourhood blob) is missing; send it, "
        f"or 'node_id' to name the node (model 'sage' classifies nodes)"
    )
    r = requests.post(
        f"{served.url}/v1/models/sage:classify",
        timeout=60,
        json={"examples": [{"node_id": 100}, {}]},
    )
    assert_error(r, 400, want)
    r = requests.post(f"{served.url}/v1/models/sage:classify", timeout=60, json={"examples": [{}]})
    assert (r.status_code, r.json()["error"]) == (400, want.replace("examples[1]", "examples[0]"))
    assert _grpc_classify(served, {"node_id": 100}, {}) == ("INVALID_ARGUMENT", want)


# ------------------------------------------------------------------------------------ layering
def _imports(path: pathlib.Path) -> set[str]:
    """Every module a file imports, at any level (functions included), as absolute names."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = (
                    "memgraph_tf.serving" + ("." + base if base else "")
                    if node.level == 1
                    else "memgraph_tf" + ("." + base if base else "")
                )
            out.add(base)
            out.update(f"{base}.{a.name}" for a in node.names)
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", "") == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ):
            out.add(str(node.args[0].value))
    return out


def test_the_serving_package_never_imports_the_client_package():
    files = sorted(SERVING_DIR.glob("*.py"))
    assert {p.name for p in files} >= {
        "server.py",
        "model_server.py",
        "neighbourhoods.py",
        "json_parse.py",
        "bundle.py",
        "client.py",
        "export.py",
    }
    offenders = {
        p.name: sorted(
            m
            for m in _imports(p)
            if m == "memgraph_tf.client" or m.startswith("memgraph_tf.client.")
        )
        for p in files
    }
    assert {k: v for k, v in offenders.items() if v} == {}
    # the check itself sees imports inside functions
    assert "memgraph_tf.client" in _imports(
        pathlib.Path(__file__).resolve().parents[2] / "memgraph_tf" / "cli.py"
    )


def test_the_model_core_imports_no_http_module():
    """model_server.py runs TF Serving's semantics without HTTP: it imports the JSON conversions
    (json_parse, json_examples, json_tensors) but never the REST routing, the HTTP server, the
    gateway or an HTTP library -- at any level, functions included."""
    imported = _imports(SERVING_DIR / "model_server.py")
    assert {"memgraph_tf.serving.json_parse", "memgraph_tf.serving.json_tensors"} <= imported
    http = {
        "memgraph_tf.serving.rest_api",
        "memgraph_tf.serving.server",
        "memgraph_tf.serving.gateway",
    }
    offenders = sorted(
        m
        for m in imported
        if m in http or m.split(".")[0] in {"http", "waitress", "requests", "urllib"}
    )
    assert offenders == []


def test_bundle_names_and_config_keys_are_defined_only_in_bundle_py():
    """Asset names as string constants, and config keys as dict-literal keys or subscripts, appear
    in serving/bundle.py and nowhere else in the package."""
    names = {
        "memgraph_tf_bundle.json",
        "class_labels.txt",
        "op_library.json",
        "tf_serving_warmup_requests",
        "memgraph_tf_config",
        "memgraph-tf-bundle",
        "assets.extra",
        "config_json",
    }
    from memgraph_tf.serving.bundle import BundleConfig

    # "version" is also a key of TF Serving's status answer (model_server.py), so it is left out
    keys = (set(BundleConfig.__dataclass_fields__) | {"format"}) - {"version"}
    where: dict[str, set[str]] = {}
    for path in sorted(SERVING_DIR.parent.rglob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            found = set()
            if isinstance(node, ast.Constant) and node.value in names:
                found.add(node.value)
            if path.parent == SERVING_DIR:
                if isinstance(node, ast.Dict):
                    found |= {
                        k.value
                        for k in node.keys
                        if isinstance(k, ast.Constant) and k.value in keys
                    }
                if (
                    isinstance(node, ast.Subscript)
                    and isinstance(node.slice, ast.Constant)
                    and node.slice.value in keys
                ):
                    found.add(node.slice.value)
            for name in found:
                where.setdefault(name, set()).add(path.relative_to(SERVING_DIR.parent).as_posix())
    assert where, "the scan found nothing: it no longer sees bundle.py"
    assert {k: v for k, v in where.items() if v != {"serving/bundle.py"}} == {}
    assert names <= set(where)


def test_the_cli_opens_the_graph_and_hands_the_server_a_source(monkeypatch):
    """`serve --graph URI`: the CLI (which may import memgraph_tf.client) opens the source, the
    server receives the object, and the CLI closes it when the server returns."""
    from memgraph_tf import cli
    from memgraph_tf.client import sources
    from memgraph_tf.serving import server

    class Closable(FakeSource):
        closed = False

        def close(self):
            self.closed = True

    src, opened, seen = Closable(), [], []
    monkeypatch.setattr(sources, "open_graph", lambda uri, **kw: opened.append(uri) or src)

    def fake_main(args, graph_source=None):
        seen.append((args.model_base_path, graph_source, getattr(graph_source, "closed", None)))
        return 0

    monkeypatch.setattr(server, "main", fake_main)
    args = cli.build_parser().parse_args(["serve", "BASE", "--graph", "bolt://db:7687"])
    assert args.func(args) == 0
    assert opened == ["bolt://db:7687"] and seen == [("BASE", src, False)] and src.closed
    args = cli.build_parser().parse_args(["serve", "BASE"])
    assert args.func(args) == 0
    assert seen[-1] == ("BASE", None, None) and opened == ["bolt://db:7687"]  # no --graph: none
