"""The edge-feature golden vectors (tests/golden/edge, written by hand from docs/blob-format.md
section 12 by tests/golden/generate.py): the layout module names exactly their sections; the Python
packer writes them and the query module samples them from the vectors' graph; the Python reader,
the C++ reader (its CLI harness, every truncation too) and both TF decoders read their values.
scripts/fuzz.sh seeds its corpus with them (it takes every tests/golden/**/*.bin)."""

from __future__ import annotations

import pytest

from memgraph_tf import layout
from memgraph_tf.feature_spec import LabelSpec
from memgraph_tf.typed_sampling import EdgeStep, TypedSamplingSpec
from tests.ops import golden_kit as kit

tf = pytest.importorskip("tensorflow")


@pytest.fixture(scope="module")
def vectors(golden_dir):
    return kit.load_vectors(golden_dir / "edge", {"typed_edge_dense"})


def _layout(call: dict) -> list[layout.Section]:
    """The sections the layout module gives for the vector's call."""
    edges = {
        EdgeStep.parse(pattern): layout.raw_widths(LabelSpec.from_dict(spec))
        for pattern, spec in call["options"]["edge_feature_spec"].items()
    }
    spec = TypedSamplingSpec.from_num_neighbors("Account", call["num_neighbors"])
    return layout.typed_sample_sections(spec, {}, batch=2, edges=edges)


def test_the_query_module_samples_the_golden_bytes_and_the_layout_names_them(vectors, helpers):
    docs, graph = vectors
    source = kit.embedded_source(graph, lambda node: node["properties"])
    for name, (data, doc) in docs.items():
        kit.assert_packed_and_read(helpers, name, data, doc)
        assert kit.sample(source, doc["call"]) == data, name
        want = doc["sections"]
        got = _layout(doc["call"])
        assert [(s.name, s.dtype, list(s.shape)) for s in got] == [
            (s["name"], s["dtype"], s["shape"]) for s in want
        ]
        assert {s.role for s in got if s.name.startswith("edge_")} == {
            "edge_num",
            "edge_time",
            "edge_cat",
            "edge_has",
        }


class TestReaders(kit.ReaderTests):
    truncated = "typed_edge_dense"
