"""``memgraph-tf embed --runner DirectRunner``: the command line's Beam pipeline writes the
embeddings the one-process ``memgraph-tf embed`` writes; what the pipeline cannot do is a usage
error (exit 2, one line)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from tests.beam import helpers as h

try:
    import apache_beam  # noqa: F401 -- imported only to see whether Beam is installed
except ImportError as exc:
    h.beam_missing(exc)

from memgraph_tf import cli
from memgraph_tf.batch.embedder import EmbedBackend, embed_nodes
from memgraph_tf.beam import register_graph, unregister_graph


def _embeddings(source, prop: str = "embedding") -> dict[int, list[float]]:
    graph = source.graph
    out = {}
    for node in graph.nodes(h.LABEL):
        z = graph.get_property(node, prop)
        if z is not None:
            out[graph.get_property(node, "id")] = list(z)
    return out


def test_embed_on_the_direct_runner_writes_the_one_process_embeddings(op_bundle_base, capsys):
    source = h.embedded_source()
    spec = register_graph(source)
    argv = ["embed", "--graph", spec.uri, "--model", str(op_bundle_base), "--batch-size", "16"]
    try:
        code = cli.main([*argv, "--no-progress", "--runner", "DirectRunner", "--num-workers", "2"])
        out = capsys.readouterr().out
    finally:
        unregister_graph(spec)
    assert code == 0, capsys.readouterr().err
    assert out.startswith(f"embedded {h.N} nodes, written {h.N}, unchanged 0"), out
    assert "model BeamSageOp version 2 -> embedding, embedding_version" in out
    assert all(
        source.graph.get_property(n, "embedding_score") is None for n in source.graph.nodes(h.LABEL)
    )
    assert {k for (_, k), n in source.graph.writes.items() if n != 1} == set()
    reference = h.embedded_source()
    with EmbedBackend(op_bundle_base) as backend:
        embed_nodes(reference, backend)
    want, got = _embeddings(reference), _embeddings(source)
    assert len(want) == h.N and sorted(got) == sorted(want)
    np.testing.assert_allclose(
        [got[k] for k in sorted(want)], [want[k] for k in sorted(want)], rtol=1e-5, atol=1e-6
    )


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--runner", "DirectRunner", "--create-index"], r"--create-index: not with --runner"),
        (["--runner", "DirectRunner", "--role", "source"], r"embed: 'source' does not fit"),
        (["--runner", "DirectRunner", "--shard", "1/3"], r"--shard: not with --runner"),
        (["--", "--direct_num_workers=2"], r"Beam pipeline options after -- need --runner"),
    ],
)
def test_embed_pipeline_refusals_are_one_line_with_exit_code_2(
    op_bundle_base, capsys, extra, message
):
    source = h.embedded_source()
    spec = register_graph(source)
    try:
        code = cli.main(["embed", "--graph", spec.uri, "--model", str(op_bundle_base), *extra])
    finally:
        unregister_graph(spec)
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("memgraph-tf embed: error: ")
    assert len(err.strip().splitlines()) == 1
    assert re.search(message, err), err
    assert _embeddings(source) == {}


@pytest.mark.parametrize("role", [None, "target"], ids=["default-source", "target"])
def test_embed_a_link_bundles_role_on_the_direct_runner(tmp_path_factory, capsys, role):
    """A link bundle's encoder (``--role``, default source) on the DirectRunner writes what the
    one-process run of that role writes."""
    from memgraph_tf.serving.export_links import export_link_bundle
    from tests.client import links_kit as kit

    base = tmp_path_factory.mktemp("embed-links")
    options = {**kit.OPTIONS, "seed": kit.SEED}
    export_link_bundle(
        kit.model(), base, "links", 2, decoder="op", sample_options=options, warmup=False
    )
    source, _, _ = kit.embedded_graph()
    spec = register_graph(source)
    argv = ["embed", "--graph", spec.uri, "--model", str(base / "links"), "--no-progress"]
    try:
        code = cli.main(
            [
                *argv,
                *(["--role", role] if role else []),
                "--write-property",
                "z",
                "--runner",
                "DirectRunner",
            ]
        )
    finally:
        unregister_graph(spec)
    assert code == 0, capsys.readouterr().err
    reference, _, _ = kit.embedded_graph()
    embed_nodes(reference, str(base / "links"), role=role, write_property="z")

    def vectors(src):
        graph = src.graph
        return {
            graph.get_property(n, "id"): list(graph.get_property(n, "z"))
            for n in graph.nodes(kit.LABEL)
            if graph.get_property(n, "z") is not None
        }

    want, got = vectors(reference), vectors(source)
    assert want and sorted(got) == sorted(want)
    np.testing.assert_allclose(
        [got[k] for k in sorted(want)], [want[k] for k in sorted(want)], rtol=1e-5, atol=1e-6
    )
