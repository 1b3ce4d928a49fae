"""Embeddings written back by a Beam pipeline (DirectRunner): ``classify_with_beam`` with a
:class:`ModelSpec` that embeds writes the vectors ``memgraph_tf.batch.embed_nodes`` writes, each
node once; a rerun writes nothing."""

from __future__ import annotations

import numpy as np
import pytest

from tests.beam import helpers as h

try:
    import apache_beam  # noqa: F401 -- imported only to see whether Beam is installed
except ImportError as exc:
    h.beam_missing(exc)

from memgraph_tf.batch.embedder import EmbedBackend, embed_nodes
from memgraph_tf.beam import classify_with_beam, register_graph, unregister_graph
from memgraph_tf.beam.models import ModelSpec
from memgraph_tf.errors import ConfigurationError


def _embeddings(source) -> dict[int, list[float]]:
    graph = source.graph
    out = {}
    for node in graph.nodes(h.LABEL):
        z = graph.get_property(node, "embedding")
        if z is not None:
            assert graph.get_property(node, "embedding_version") == 2
            out[graph.get_property(node, "id")] = list(z)
    return out


def test_a_beam_run_embeds_each_node_once_as_the_batch_module(op_bundle_base):
    source = h.embedded_source()
    spec = register_graph(source)
    try:
        model = ModelSpec.resolve(bundle=op_bundle_base, embed="node")
        summary = classify_with_beam(spec, model, write_property="embedding", batch_size=16)
        assert (summary.read, summary.written) == (h.N, h.N)
        again = classify_with_beam(spec, model, write_property="embedding", batch_size=16)
        assert (again.read, again.written) == (0, 0)
    finally:
        unregister_graph(spec)
    written = _embeddings(source)
    assert {k for (_, k), n in source.graph.writes.items() if n != 1} == set()
    reference = h.embedded_source()
    with EmbedBackend(op_bundle_base) as backend:
        embed_nodes(reference, backend)
    want = _embeddings(reference)
    assert sorted(written) == sorted(want) and len(want) == h.N
    np.testing.assert_allclose(
        [written[k] for k in sorted(want)], [want[k] for k in sorted(want)], rtol=1e-5, atol=1e-6
    )


def test_embed_must_fit_the_bundle(op_bundle_base):
    with pytest.raises(ConfigurationError, match=r"embed: 'source' does not fit 'BeamSageOp'"):
        ModelSpec.resolve(bundle=op_bundle_base, embed="source")
    with pytest.raises(ConfigurationError, match=r"embed: only for a bundle run in-process"):
        ModelSpec.resolve(rest="http://127.0.0.1:1", model_name="m", embed="node")
