"""The keyed test graph of the batch-inference tests (tests/client/test_batch*.py) and the Beam
tests (tests/beam/): 90 nodes with sparse integer ids, 4 features and a class, linked at random;
built in-process or written to a Bolt server. Imported as ``tests.graphs`` (pytest runs from the
repository root, which tests/conftest.py puts on ``sys.path``).

Each suite uses its own node label (:class:`KeyedGraph`), so both can share one Bolt server.
"""

from __future__ import annotations

import collections

import numpy as np
import pytest

from memgraph_tf.client import EmbeddedSource
from memgraph_tf.client.node_tables import property_names
from memgraph_tf.embedded import EmbeddedGraph

CLASSES = ["red", "green", "blue"]
FANOUTS = [3, 2]
DIM = 4
SEED = 11
N = 90
#: The short training run of the trained models the client tests share (the typed GraphSAGE of
#: ``tests.client.typed_kit``, the link predictor of test_link_prediction.py).
SHORT_RUN = {"hidden_units": 16, "batch_size": 64, "steps": 20, "eval_every": 10, "seed": 0}


def short_run(**overrides):
    """The training settings of :data:`SHORT_RUN` with ``overrides`` (other values, more
    settings): for a test's own run of a trainer."""
    return {**SHORT_RUN, **overrides}


#: the attributes of a Bolt server object that a command reads from the environment
CREDENTIALS = ("user", "password", "database")


def node_id(i: int) -> int:
    """Sparse ids, negative and positive, so id order, keyset pages, key ranges and shards are not
    trivial."""
    return 7 * i - 200


def graph_data(n: int = N, bad: tuple[int, ...] = (), seed: int = 0):
    """``(nodes, edges)``: nodes ``{"id", "features", "label"}``, edges ``(i, j)`` by index; the
    ``bad`` indices get features one value too long and no edges (so only they are invalid; the
    other edges are the same as without them)."""
    rng = np.random.default_rng(seed)
    feats = rng.normal(size=(n, DIM + 1)).astype(np.float32) * 2.0
    nodes = [
        {
            "id": node_id(i),
            "features": feats[i, : DIM + (1 if i in bad else 0)].tolist(),
            "label": i % 3,
        }
        for i in range(n)
    ]
    edges = []
    for i in range(n):
        for j in rng.choice(n, size=3, replace=False).tolist():
            if j != i and i not in bad and j not in bad:
                edges.append((i, j))
    return nodes, edges


class CountingGraph(EmbeddedGraph):
    """An EmbeddedGraph that counts its property writes: ``writes[(internal id, property)]``."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: collections.Counter = collections.Counter()

    def set_property(self, node_id, key, value):
        self.writes[(node_id, key)] += 1
        return super().set_property(node_id, key, value)


class KeyedGraph:
    """The test graph under node label ``label``, with sampling ``options`` (keyed by ``id``)."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.options = {"id_property": "id", "label": label, "seed": SEED}

    def embedded_source(self, n: int = N, bad: tuple[int, ...] = ()) -> EmbeddedSource:
        """An EmbeddedSource over :func:`graph_data` plus one node of another label (never
        classified); its graph counts writes (:class:`CountingGraph`), from zero."""
        nodes, edges = graph_data(n, bad)
        graph = CountingGraph()
        for props in nodes:
            graph.add_node([self.label], props)
        graph.add_node(["Other"], {"id": 10**6, "features": [0.0] * DIM})
        for a, b in edges:
            graph.add_edge(a, b, "LINK")
        graph.writes.clear()
        return EmbeddedSource(graph)

    def bundle(self, small_sage_bundle, name: str, version: int, *, use_op: bool):
        """BASE/NAME: the session's untrained GraphSAGE over this graph (the ``small_sage_bundle``
        fixture's) exported as version ``version`` with this graph's sampling ``options``."""
        return small_sage_bundle(
            name, version, self.options, use_op=use_op, fanouts=FANOUTS, dim=DIM, classes=CLASSES
        )

    def reference(self, backend) -> dict[int, tuple]:
        """``{id: (class, score, version)}`` of ``memgraph_tf.batch``'s uninterrupted full run of
        ``backend`` over a fresh :meth:`embedded_source` (checked: every node classified, none
        skipped, failed or up to date)."""
        from memgraph_tf.batch import classify_graph

        source = self.embedded_source()
        summary = classify_graph(source, backend, batch_size=32, progress=False)
        assert summary.classified == N
        assert summary.skipped == summary.failed == summary.up_to_date == 0
        return predictions(source)

    def write_bolt(self, bolt_source):
        """The graph written afresh to a Bolt server (its ``label`` nodes replaced; each node also
        gets ``half`` = id % 2); returns ``bolt_source``."""
        nodes, edges = graph_data()
        label = self.label
        bolt_source.write(f"MATCH (n:{label}) DETACH DELETE n")
        bolt_source.write(
            f"UNWIND $rows AS r CREATE (:{label} {{id: r.id, features: r.features, "
            f"label: r.label, half: r.id % 2}})",
            {"rows": nodes},
        )
        bolt_source.write(
            f"UNWIND $pairs AS p MATCH (a:{label} {{id: p.a}}), (b:{label} {{id: p.b}}) "
            f"CREATE (a)-[:LINK]->(b)",
            {"pairs": [{"a": node_id(a), "b": node_id(b)} for a, b in edges]},
        )
        return bolt_source

    def bolt_predictions(self, source, prop: str = "predicted_class") -> dict[int, tuple]:
        """``{id: (class, score, version)}`` of the Bolt graph's nodes that carry ``prop``."""
        cls, score, version = property_names(prop)
        rows = source.read(
            f"MATCH (n:{self.label}) WHERE n.`{cls}` IS NOT NULL "
            f"RETURN n.id AS id, n.`{cls}` AS c, n.`{score}` AS s, n.`{version}` AS v"
        )
        return {r["id"]: (r["c"], r["s"], r["v"]) for r in rows}


# The fixtures both batch suites share (tests/client, tests/beam: each conftest imports them and
# gives them its ``bundle_base`` and its ``keyed_graph``).
@pytest.fixture(scope="session")
def backend(bundle_base):
    """The suite's op-free bundle loaded in-process once for the session
    (memgraph_tf.batch.BundleBackend; loading costs seconds)."""
    from memgraph_tf.batch import BundleBackend

    with BundleBackend(bundle_base) as model:
        yield model


@pytest.fixture(scope="session")
def reference(keyed_graph, backend):
    """``memgraph_tf.batch``'s uninterrupted full run of ``backend`` over the suite's embedded
    graph: ``{id: (class, score, version)}`` (:meth:`KeyedGraph.reference`)."""
    return keyed_graph.reference(backend)


def predictions(source: EmbeddedSource, prop: str = "predicted_class") -> dict[int, tuple]:
    """``{id: (class, score, version)}`` of the embedded nodes that carry ``prop``."""
    cls, score, version = property_names(prop)
    graph = source.graph
    out = {}
    for internal in graph.nodes():
        value = graph.get_property(internal, cls)
        if value is not None:
            out[graph.get_property(internal, "id")] = (
                value,
                graph.get_property(internal, score),
                graph.get_property(internal, version),
            )
    return out


def writes_per_node(source: EmbeddedSource, prop: str = "predicted_class") -> dict[int, int]:
    """``{id: times P_version was set}`` over a :class:`CountingGraph`'s counted writes."""
    version = property_names(prop)[2]
    graph = source.graph
    return {
        graph.get_property(internal, "id"): count
        for (internal, key), count in graph.writes.items()
        if key == version
    }


def assert_same(got: dict, want: dict) -> None:
    """Same nodes, same classes, scores equal to 1e-6 and the same set of versions."""
    assert sorted(got) == sorted(want)
    assert [got[k][0] for k in sorted(got)] == [want[k][0] for k in sorted(want)]
    np.testing.assert_allclose(
        [got[k][1] for k in sorted(got)], [want[k][1] for k in sorted(want)], rtol=1e-6
    )
    assert {v[2] for v in got.values()} == {v[2] for v in want.values()}


def credentials_env(server) -> dict[str, str]:
    """The environment variables that give a command ``server``'s user, password and database
    (``MEMGRAPH_TF_USER``, ``MEMGRAPH_TF_PASSWORD``, ``MEMGRAPH_TF_DATABASE``)."""
    return {f"MEMGRAPH_TF_{name.upper()}": getattr(server, name) for name in CREDENTIALS}


def use_credentials(monkeypatch, server) -> None:
    """Sets ``credentials_env(server)`` for the rest of the test (a command run in-process)."""
    for key, value in credentials_env(server).items():
        monkeypatch.setenv(key, value)
