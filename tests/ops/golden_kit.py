"""The checks that the sampled-blob golden vectors (tests/golden/typed, raw and edge) share:
loading a folder of vectors, building the vectors' graph, and checking that the packer, the Python
reader, the C++ reader harness and both TF decoders agree with each vector's JSON document.
Imported by name: ``from tests.ops import golden_kit as kit``; ``helpers`` is the fixture of that
name in tests/ops/conftest.py; :class:`ReaderTests` holds the reader tests as a base class."""

from __future__ import annotations

import json
import pathlib
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from memgraph_tf import blob
from memgraph_tf.client import EmbeddedSource
from memgraph_tf.embedded import EmbeddedGraph

Docs = dict[str, tuple[bytes, dict[str, Any]]]


def load_vectors(folder: pathlib.Path, names: set[str]) -> tuple[Docs, dict[str, Any]]:
    """``({stem: (bytes, json doc)}, graph)`` for the ``*.bin`` vectors of ``folder`` and its
    ``graph.json``; fails unless the stems are exactly ``names``."""
    docs = {
        path.stem: (path.read_bytes(), json.loads(path.with_suffix(".json").read_text()))
        for path in sorted(folder.glob("*.bin"))
    }
    assert set(docs) == names
    return docs, json.loads((folder / "graph.json").read_text())


def embedded_source(
    graph: dict[str, Any], properties: Callable[[dict[str, Any]], dict[str, Any]]
) -> EmbeddedSource:
    """The vectors' graph in an embedded graph: a node per ``graph["nodes"]`` entry, with its label
    and ``properties(node)`` (which hold its ``id``), and the ``[a, type, b]`` relationships (or
    ``[a, type, b, properties]``)."""
    g = EmbeddedGraph()
    internal = {}
    for node in graph["nodes"]:
        props = properties(node)
        internal[props["id"]] = g.add_node([node["label"]], props)
    for a, rel_type, b, *rel_props in graph["relationships"]:
        g.add_edge(internal[a], internal[b], rel_type, *rel_props)
    return EmbeddedSource(g)


def sample(source: EmbeddedSource, call: dict[str, Any]) -> bytes:
    """The blob that ``source`` samples for a vector's ``call`` (``sample_typed`` or
    ``sample_pairs``, with the call's arguments)."""
    if call["procedure"] == "sample_typed":
        return source.sample_typed(
            call["seeds"], call["num_neighbors"], call["properties"], call["options"]
        )
    return source.sample_pairs(
        call["sources"], call["targets"], call["num_neighbors"], call["properties"], call["options"]
    )


def expected_arrays(helpers: SimpleNamespace, doc: dict[str, Any]) -> dict[str, np.ndarray]:
    """Every section of the vector's JSON document as a numpy array, by section name."""
    return {s["name"]: helpers.expected_array(s) for s in doc["sections"]}


def assert_packed_and_read(helpers: SimpleNamespace, name: str, data: bytes, doc: dict) -> None:
    """The Python packer writes exactly ``data`` from the document's sections, and the Python
    reader reads every section's values (a ragged section as values and row splits)."""
    sections = {s["name"]: blob.Dense(s["values"], s["shape"], s["dtype"]) for s in doc["sections"]}
    assert blob.pack(sections) == data, name  # the packer against the hand-built bytes
    unpacked = blob.unpack(data)
    for s_name, want in expected_arrays(helpers, doc).items():
        base = s_name.removesuffix(".row_splits")
        value = unpacked[base] if base in unpacked else unpacked[s_name]
        if isinstance(value, blob.Ragged):
            value = value.row_splits if base != s_name else value.values
        np.testing.assert_array_equal(value, want, err_msg=f"{name}/{s_name}")


def assert_cpp_reader_reads(
    helpers: SimpleNamespace, reader_cli: pathlib.Path, docs: Docs, truncated: pathlib.Path
) -> None:
    """The C++ reader harness reads every vector's sections (names, dtypes, shapes, values) and
    rejects every truncation of the vector named by ``truncated``'s stem (written there)."""
    names = list(docs)
    lines = helpers.run_cli(reader_cli, frames=[docs[n][0] for n in names])
    for name, line in zip(names, lines):
        assert line["ok"] is True, (name, line.get("error"))
        want = docs[name][1]["sections"]
        assert [s["name"] for s in line["sections"]] == [s["name"] for s in want]
        for got, section in zip(line["sections"], want):
            assert (got["dtype"], got["shape"]) == (section["dtype"], section["shape"])
            assert got["values"] == section["values"], f"{name}/{section['name']}"
    data = docs[truncated.stem][0]
    truncated.write_bytes(data)
    cuts = helpers.run_cli(reader_cli, "--truncations", str(truncated))
    assert [c["length"] for c in cuts] == list(range(len(data)))
    assert not any(c["ok"] for c in cuts)


def assert_decoder_reads(helpers: SimpleNamespace, unpack: Callable, docs: Docs) -> None:
    """``unpack`` (the op's or the portable decoder's) reads every section of every vector, a
    ragged one as row splits and flat values, bit for bit as the document gives them."""
    for name, (data, doc) in docs.items():
        sections = blob.read_table(data)
        splits = {s.name for s in sections if s.name.endswith(".row_splits")}
        ragged = [s.name for s in sections if s.name + ".row_splits" in splits]
        asked = [s for s in sections if s.name not in splits]
        out = unpack(data, [s.name for s in asked], [s.dtype for s in asked], ragged=ragged)
        want = expected_arrays(helpers, doc)
        for section, value in zip(asked, out):
            what = f"{name}/{section.name}"
            if section.name in ragged:
                helpers.assert_same_array(
                    value.row_splits.numpy(), want[section.name + ".row_splits"], what
                )
                value = value.flat_values
            helpers.assert_same_array(value.numpy(), want[section.name], what)


class ReaderTests:
    """The C++ reader and both TF decoders read a folder's vectors, as tests: a test module runs
    them with a subclass named ``Test...`` that sets :attr:`truncated` and whose module provides
    the ``vectors`` fixture (:func:`load_vectors`'s pair)."""

    #: the stem of the vector whose every truncation the C++ reader must reject
    truncated: str

    def test_the_cpp_reader_reads_them_and_rejects_every_truncation(
        self, vectors, reader_cli, helpers, tmp_path
    ):
        path = tmp_path / f"{self.truncated}.bin"
        assert_cpp_reader_reads(helpers, reader_cli, vectors[0], path)

    @pytest.mark.parametrize("decoder", ["op", "portable"])
    def test_both_decoders_read_them(self, ops, vectors, helpers, decoder):
        unpack = ops.unpack_blob if decoder == "op" else ops.unpack_blob_portable
        assert_decoder_reads(helpers, unpack, vectors[0])
