"""Node embeddings written back (``memgraph-tf embed``, :func:`memgraph_tf.batch.embed_nodes`): the
bundle's ``embed`` signature is the classifier's input, every node is written once (also across a
SIGKILL and a rerun over real Bolt), and the vector index option refuses a dimension that does not
match. The graph and bundles are test_batch.py's (fixtures in conftest.py)."""

from __future__ import annotations

import re
import signal
import subprocess
import time

import numpy as np
import pytest

from memgraph_tf.batch import BundleBackend
from memgraph_tf.batch.embedder import BatchEmbedder, EmbedBackend, embed_nodes
from memgraph_tf.errors import ConfigurationError
from tests.client.classify_kit import LABEL, embedded_source, killable_run
from tests.graphs import N, use_credentials
from tests.processes import interruptible


@pytest.fixture(scope="module")
def embed_backend(op_bundle_base):
    with EmbedBackend(op_bundle_base) as model:
        yield model


def _embeddings(source, prop: str = "embedding") -> dict[int, tuple[list[float], int]]:
    graph = source.graph
    out = {}
    for internal in graph.nodes(LABEL):
        z = graph.get_property(internal, prop)
        if z is not None:
            out[graph.get_property(internal, "id")] = (
                list(z),
                graph.get_property(internal, prop + "_version"),
            )
    return out


def test_the_embed_signature_is_the_classifiers_input(embed_backend, op_bundle_base, sage_model):
    """softmax(z W + b) of the written embedding z is the class score the bundle's classify
    signature gives the same blob: the embedding is the last hidden layer."""
    from memgraph_tf.serving.neighbourhoods import NeighbourhoodFetcher

    source = embedded_source()
    ids = [-200, -193, 423]
    blobs = NeighbourhoodFetcher(source).fetch(ids, embed_backend.sampling())
    z = embed_backend.embed(blobs)
    assert z.shape == (3, 2 * sage_model.hidden_units[-1]) == (3, embed_backend.dimension)
    kernel, bias = (np.asarray(w) for w in sage_model.classifier.weights)
    logits = z @ kernel + bias
    probs = np.exp(logits - logits.max(1, keepdims=True))
    probs /= probs.sum(1, keepdims=True)
    with BundleBackend(op_bundle_base) as classifier:
        scores = [score for _, score in classifier.classify(blobs)]
    np.testing.assert_allclose(probs.max(1), scores, rtol=1e-4)


def test_every_node_is_embedded_once_and_a_rerun_writes_nothing(embed_backend):
    source = embedded_source()
    summary = embed_nodes(source, embed_backend, batch_size=16)
    assert summary.classified == N and summary.up_to_date == 0
    written = _embeddings(source)
    assert len(written) == N
    assert all(v == 1 and len(z) == embed_backend.dimension for z, v in written.values())
    writes = source.graph.writes
    assert {k for (_, k) in writes} == {"embedding", "embedding_version"}
    assert max(writes.values()) == 1
    again = embed_nodes(source, embed_backend, batch_size=16)
    assert again.classified == 0 and again.up_to_date == N
    assert max(source.graph.writes.values()) == 1
    assert "embedded 0 nodes" in again.text()


def test_explicit_ids_and_shards_give_the_same_vectors(embed_backend):
    full = embedded_source()
    embed_nodes(full, embed_backend, batch_size=32)
    reference = _embeddings(full)
    parts = embedded_source()
    for i in range(3):
        embed_nodes(parts, embed_backend, batch_size=7, shard=f"{i}/3")
    np.testing.assert_allclose(
        [_embeddings(parts)[k][0] for k in sorted(reference)],
        [reference[k][0] for k in sorted(reference)],
        rtol=1e-5,
    )
    some = embedded_source()
    embed_nodes(some, embed_backend, node_ids=[-200, 423])
    assert set(_embeddings(some)) == {-200, 423}


def test_create_index_then_search_finds_each_node_itself(embed_backend):
    from memgraph_tf.batch import vectors

    source = embedded_source()
    run = BatchEmbedder(source, embed_backend, create_index=True, progress=False)
    assert run.index is not None and run.index.dimension == embed_backend.dimension
    run.run()
    written = _embeddings(source)
    hits = [vectors.search(source, run.index.name, 1, z, "id")[0][0] for z, _ in written.values()]
    assert np.mean([h == k for h, k in zip(hits, written)]) > 0.9


def test_an_index_of_another_dimension_is_refused_before_anything_is_written(embed_backend):
    source = embedded_source()
    source.graph.execute(
        f'CREATE VECTOR INDEX small ON :{LABEL}(embedding) WITH CONFIG {{"dimension": 3, '
        f'"capacity": 100, "metric": "cos"}}'
    )
    with pytest.raises(
        ConfigurationError,
        match=r"vector index 'small' on :BatchItem\(embedding\) has dimension 3, the embeddings "
        r"of BatchSageOp have 16",
    ):
        BatchEmbedder(source, embed_backend, progress=False)
    assert not _embeddings(source)


def _bundle_without_encoder(sage_model, tmp_path):
    """BASE/NoEncoder: ``sage_model`` behind a Keras model that has no ``encode``."""
    import keras

    from memgraph_tf.serving import export_bundle
    from tests.client.classify_kit import OPTIONS

    class Wrapped(keras.Model):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner
            self.fanouts, self.feature_dim = inner.fanouts, inner.feature_dim
            self.class_names = inner.class_names

        def call(self, inputs, training=None):
            return self.inner(inputs, training=training)

    export_bundle(
        Wrapped(sage_model),
        tmp_path,
        "NoEncoder",
        1,
        use_op=True,
        properties=["features"],
        sample_options=OPTIONS,
        scores="logits",
        warmup=False,
    )
    return tmp_path / "NoEncoder"


def _cli(monkeypatch, capsys, source, *args):
    from memgraph_tf import cli
    from memgraph_tf.client import sources

    monkeypatch.setattr(sources, "open_graph", lambda uri, **options: source)
    code = cli.main(["embed", "--graph", "embedded:test", "--no-progress", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_cli_usage_errors_are_one_line_and_exit_2(
    monkeypatch, capsys, op_bundle_base, sage_model, tmp_path
):
    source = embedded_source()
    source.graph.execute(
        f'CREATE VECTOR INDEX small ON :{LABEL}(embedding) WITH CONFIG {{"dimension": 3, '
        f'"capacity": 100, "metric": "cos"}}'
    )
    no_encoder = _bundle_without_encoder(sage_model, tmp_path)
    cases = [
        (
            ["--model", str(op_bundle_base)],
            r"vector index 'small' on :BatchItem\(embedding\) has "
            r"dimension 3, the embeddings of BatchSageOp have 16",
        ),
        (["--model", str(no_encoder)], r"has no encoder: no 'embed' signature"),
        (["--model", str(op_bundle_base), "--role", "target"], r"role: only for a link bundle"),
        (["--model", str(op_bundle_base), "--shard", "3/2"], r"shard: expected i/N"),
    ]
    for args, message in cases:
        code, out, err = _cli(monkeypatch, capsys, source, *args)
        lines = [line for line in err.splitlines() if line.startswith("memgraph-tf embed:")]
        assert code == 2, err
        assert len(lines) == 1 and re.search(message, lines[0]), err
        assert "Traceback" not in err and out == ""
    assert not _embeddings(source)
    code, out, err = _cli(
        monkeypatch, capsys, source, "--model", str(op_bundle_base), "--write-property", "z"
    )
    assert code == 0, err
    assert f"embedded {N} nodes" in out and len(_embeddings(source, "z")) == N


@pytest.mark.arcadedb
def test_sigkill_midway_then_rerun_embeds_every_node_once(
    monkeypatch, capsys, arcadedb_server, bolt_graph, op_bundle_base, embed_backend
):
    from memgraph_tf import cli

    command, env = killable_run("embed", arcadedb_server, op_bundle_base, "killed_z")

    def done() -> int:
        query = f"MATCH (n:{LABEL}) WHERE n.killed_z_version = 1 RETURN count(n) AS c"
        return bolt_graph.read(query)[0]["c"]

    proc = subprocess.Popen(
        interruptible(command), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + 180
        while done() < 6:
            assert proc.poll() is None, f"the run ended before the signal: {proc.communicate()}"
            assert time.monotonic() < deadline, "no batch written within 180 s"
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == -signal.SIGKILL
    at_kill = done()
    assert 6 <= at_kill < N, f"killed too late to test a resume: {at_kill} of {N} written"
    use_credentials(monkeypatch, arcadedb_server)
    capsys.readouterr()
    assert cli.main(command[3:]) == 0
    assert f"embedded {N - at_kill} nodes" in capsys.readouterr().out
    rows = bolt_graph.read(
        f"MATCH (n:{LABEL}) RETURN n.id AS id, n.killed_z AS z, n.killed_z_version AS v"
    )
    assert len(rows) == N and all(r["v"] == 1 for r in rows)
    reference = embedded_source()
    embed_nodes(reference, embed_backend)
    expected = _embeddings(reference)
    np.testing.assert_allclose(
        [r["z"] for r in sorted(rows, key=lambda r: r["id"])],
        [expected[k][0] for k in sorted(expected)],
        rtol=1e-5,
        atol=1e-6,
    )
