"""The client against a real Memgraph with the tf_features modules (MEMGRAPH_TF_TEST_MEMGRAPH_URI).

Memgraph cannot run on the development machine (FACTS.md); these tests run wherever the variable
names a Memgraph (e.g. ``docker compose -f docker/compose.yaml up memgraph``) and skip otherwise.
They check the procedure path of BoltSource: it detects the modules and returns the same bytes as
the client-side fallback over the same server.
"""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from memgraph_tf.client import OpenCypherDataset, connect, sample_dataset
from tests.real_memgraph import AUTH, MARKS, URI

pytestmark = MARKS
LABEL = "MgtfClientTest"
OPTIONS = {"id_property": "id", "label": LABEL, "seed": 3}


@pytest.fixture(scope="module")
def sources():
    with_procs = connect(URI, auth=AUTH)
    without = connect(URI, auth=AUTH, use_procedures=False)
    with_procs.write(f"MATCH (n:{LABEL}) DETACH DELETE n")
    rng = np.random.default_rng(0)
    nodes = [{"id": 500 + i, "f": rng.standard_normal(3).tolist(), "y": i % 2} for i in range(20)]
    with_procs.write(
        f"UNWIND $rows AS r CREATE (:{LABEL} {{id: r.id, f: r.f, y: r.y}})", {"rows": nodes}
    )
    pairs = [{"a": 500 + i, "b": 500 + (i * 7 + 3) % 20} for i in range(20)]
    with_procs.write(
        f"UNWIND $p AS p MATCH (a:{LABEL} {{id: p.a}}), (b:{LABEL} {{id: p.b}}) CREATE "
        "(a)-[:E]->(b)",
        {"p": pairs},
    )
    # the keyed calls find the keys' nodes through it (an index query runs auto-commit)
    list(with_procs.run(f"CREATE INDEX ON :{LABEL}(id)"))
    yield with_procs, without
    list(with_procs.run(f"DROP INDEX ON :{LABEL}(id)"))
    with_procs.write(f"MATCH (n:{LABEL}) DETACH DELETE n")
    with_procs.close()
    without.close()


def test_procedures_detected_and_same_bytes_as_fallback(sources):
    with_procs, without = sources
    if not with_procs.has_procedures():
        pytest.skip(
            "this Memgraph has no tf_features modules (memgraph-tf install-modules DIR; CALL "
            "mg.load_all())"
        )
    ids = [500 + i for i in (3, 0, 19)]
    pack_options = {"id_property": "id", "label": LABEL, "label_property": "y"}
    assert with_procs.pack_blob(ids, ["f"], pack_options) == without.pack_blob(
        ids, ["f"], pack_options
    )
    assert with_procs.sample_blob(ids, [3, 2], ["f"], OPTIONS) == without.sample_blob(
        ids, [3, 2], ["f"], OPTIONS
    )
    assert with_procs.sample_blobs_per_node(
        ids, [2], ["f"], OPTIONS
    ) == without.sample_blobs_per_node(ids, [2], ["f"], OPTIONS)
    batch = next(
        iter(sample_dataset(with_procs, ids, [3, 2], ["f"], options=OPTIONS, batch_size=3))
    )
    assert batch["features_2"].shape.as_list() == [3, 3, 2, 3]
    describe_options = {**pack_options, "fanouts": [3, 2]}
    info = with_procs.describe(["f"], describe_options)
    assert info == without.describe(["f"], describe_options)
    assert info["feature_width"] == 3 and info["num_classes"] == 2


def test_keys_found_by_the_query_give_the_procedure_s_blobs_and_errors(sources):
    """The keyed query (OPTIONAL MATCH through the index, the nodes collected and passed) against
    the procedure given the keys themselves: same blobs, duplicates kept; an unknown key is the
    procedure's own error."""
    from memgraph_tf import blob
    from memgraph_tf.errors import GraphDataError

    with_procs, _ = sources
    if not with_procs.has_procedures():
        pytest.skip("this Memgraph has no tf_features modules")
    assert with_procs._indexed(LABEL, "id")  # SHOW INDEX INFO lists the fixture's index
    keys = [503, 501, 503]
    rows = with_procs.read(
        "CALL tf_features.sample_per_node($k, [3, 2], ['f'], $o) YIELD node_id, blob "
        "RETURN node_id, blob",
        {"k": keys, "o": OPTIONS},
    )
    got = with_procs.sample_blobs_per_node(keys, [3, 2], ["f"], OPTIONS)
    assert got == [blob.b64decode(r["blob"]) for r in rows]
    with pytest.raises(GraphDataError, match=rf"^seeds\[1\]: unknown node id 999 \(no :{LABEL} "):
        with_procs.sample_blobs_per_node([501, 999], [3, 2], ["f"], OPTIONS)


def test_open_cypher_dataset_on_memgraph(sources):
    with_procs, _ = sources
    ds = OpenCypherDataset(
        with_procs,
        f"MATCH (n:{LABEL}) RETURN n.id AS id, n.f AS f ORDER BY n.id",
        {"id": tf.int64, "f": ("float32", [3])},
    )
    ids = [int(e["id"]) for e in ds]
    assert ids == list(range(500, 520))
