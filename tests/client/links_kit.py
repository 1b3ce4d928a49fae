"""Shared parts of the link-scoring tests (tests/client/test_score_links*.py, tests/beam/): a small
keyed graph (``tests.graphs``' 90 nodes with sparse ids, label :data:`LABEL`, relationships
:data:`REL`), one untrained :class:`LinkPredictor` built from a fixed seed (deterministic weights:
the tests compare scores, not quality), and the entry point the SIGKILL test runs as a subprocess.

Run as ``python -m tests.client.links_kit WEIGHTS -- score-links ...``: builds the same model, loads
``WEIGHTS``, makes it the CLI's link backend and runs ``memgraph-tf score-links ...``."""

from __future__ import annotations

import sys

from tests.graphs import DIM, graph_data

LABEL = "Doc"
REL = "REFERS"
PATTERN = f"(:{LABEL})-[:{REL}]-(:{LABEL})"
NN = {PATTERN: [3, 2]}
PROPS = {LABEL: ["features"]}
OPTIONS = {"id_property": "id"}
SEED = 7


def embedded_graph():
    """The graph in-process: ``(EmbeddedSource, nodes, edges)``."""
    from memgraph_tf.client import EmbeddedSource
    from memgraph_tf.embedded import EmbeddedGraph

    nodes, edges = graph_data()
    g = EmbeddedGraph()
    ids = [g.add_node([LABEL], {"id": n["id"], "features": n["features"]}) for n in nodes]
    for a, b in edges:
        g.add_edge(ids[a], ids[b], REL)
    return EmbeddedSource(g), nodes, edges


def write_bolt_graph(bolt) -> None:
    """The same graph on a Bolt server (its :data:`LABEL` nodes replaced)."""
    nodes, edges = graph_data()
    bolt.write(f"MATCH (n:{LABEL}) DETACH DELETE n")
    rows = [{"id": n["id"], "features": n["features"]} for n in nodes]
    bolt.write(f"UNWIND $rows AS r CREATE (n:{LABEL}) SET n = r", {"rows": rows})
    bolt.write(
        f"UNWIND $p AS p MATCH (x:{LABEL}) WHERE x.id = p.a MATCH (y:{LABEL}) WHERE y.id = p.b "
        f"CREATE (x)-[:{REL}]->(y)",
        {"p": [{"a": nodes[a]["id"], "b": nodes[b]["id"]} for a, b in edges]},
    )


def model(scorer: str = "dot"):
    """The untrained link model (weights from :data:`SEED`), with its properties set."""
    import keras

    from memgraph_tf.client.link_prediction import LinkPredictor

    keras.utils.set_random_seed(SEED)
    m = LinkPredictor(LABEL, NN, {LABEL: DIM}, hidden_units=8, scorer=scorer).ensure_built()
    m.properties = dict(PROPS)
    return m


def backend(m, version: int = 1):
    from memgraph_tf.batch.link_scoring import ModelLinkBackend

    return ModelLinkBackend(m, version, properties=PROPS, options=OPTIONS, seed=SEED)


_BUILT: dict = {}  # weights path -> model, per process


class SavedBackend:
    """A picklable backend factory (what Beam's ScoreLinks takes): the kit's model with the weights
    saved at ``weights``, built once per process."""

    def __init__(self, weights: str) -> None:
        self.weights = str(weights)

    def __call__(self):
        m = _BUILT.get(self.weights)
        if m is None:
            m = _BUILT[self.weights] = model()
            m.load_weights(self.weights)
        return backend(m)


def main(argv: list[str]) -> int:
    weights, rest = argv[0], argv[argv.index("--") + 1 :]
    from memgraph_tf import cli
    from memgraph_tf.batch import link_scoring

    link_scoring.backend_from_args = lambda args: SavedBackend(weights)()
    return cli.main(rest)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main(sys.argv[1:]))
