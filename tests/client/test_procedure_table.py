"""The procedure table the sources call through: it names exactly the query module's procedures,
with their parameters in order, result fields they yield and their kind (read / write), and every
procedure operation of a source goes through it."""

from __future__ import annotations

import ast

import numpy as np
import pytest

from memgraph_tf.client.errors import ConfigurationError
from memgraph_tf.client.sources import PROCEDURE_PARAMS, PROCEDURES, TABLE, GraphSource


def _module_signatures(repo_root) -> dict[str, tuple[tuple[str, ...], set[str], bool]]:
    """``tf_features.NAME`` -> (parameters after ctx, the fields of its mgp.Record, whether it is
    a write procedure), read from query_modules/tf_features.py."""
    tree = ast.parse((repo_root / "query_modules" / "tf_features.py").read_text())
    found = {}
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef):
            continue
        kinds = {ast.unparse(d) for d in node.decorator_list}
        if not kinds & {"mgp.read_proc", "mgp.write_proc"}:
            continue
        params = tuple(a.arg for a in node.args.args[1:])  # after ctx
        fields = {k.arg for k in node.returns.keywords}  # -> mgp.Record(name=type, ...)
        found[f"tf_features.{node.name}"] = (params, fields, "mgp.write_proc" in kinds)
    return found


def test_the_table_matches_the_query_module(repo_root):
    module = _module_signatures(repo_root)
    assert sorted(TABLE) == sorted(module)
    for name, procedure in TABLE.items():
        params, fields, write = module[name]
        assert procedure.params == params, name
        assert set(procedure.fields) <= fields, name
        assert procedure.write is write, name
    assert PROCEDURES == (
        "tf_features.pack",
        "tf_features.sample",
        "tf_features.sample_per_node",
        "tf_features.describe",
    )
    assert set(PROCEDURE_PARAMS) == {
        "tf_features.pack",
        "tf_features.sample",
        "tf_features.sample_per_node",
        "tf_features.sample_typed",
        "tf_features.sample_pairs",
    }


class Recording(GraphSource):
    """Answers every call with the procedure's name and the plain arguments it was given."""

    def call_procedure(self, procedure, args):
        return (procedure.name, args)


def test_every_operation_goes_through_its_table_entry_with_plain_arguments():
    source = Recording()
    ids = np.array([3, 4], dtype=np.int64)
    nn = {"(:User)-[:BOUGHT]->(:Product)": (np.int64(2),)}
    cases = [
        (
            source.pack_blob_b64(ids, ("f",), {"k": np.int64(1)}),
            ("tf_features.pack", ([3, 4], ["f"], {"k": 1})),
        ),
        (
            source.sample_blob_b64(ids, (2, 1), ["f"]),
            ("tf_features.sample", ([3, 4], [2, 1], ["f"], None)),
        ),
        (
            source.sample_blobs_per_node_b64([5], [2], ["f"], {}),
            ("tf_features.sample_per_node", ([5], [2], ["f"], {})),
        ),
        (source.describe(("f",)), ("tf_features.describe", (["f"], None))),
        (
            source.sample_typed_b64(ids, nn, {"User": ("f",)}, {"label": "User"}),
            (
                "tf_features.sample_typed",
                (
                    [3, 4],
                    {"(:User)-[:BOUGHT]->(:Product)": [2]},
                    {"User": ["f"]},
                    {"label": "User"},
                ),
            ),
        ),
        (source.schema({"User": ("f",)}), ("tf_features.schema", ({"User": ["f"]}, None))),
        (
            source.sample_pairs_b64([1], [2], {"source": nn, "target": nn}, None, {"seed": 3}),
            (
                "tf_features.sample_pairs",
                (
                    [1],
                    [2],
                    {
                        "source": {"(:User)-[:BOUGHT]->(:Product)": [2]},
                        "target": {"(:User)-[:BOUGHT]->(:Product)": [2]},
                    },
                    None,
                    {"seed": 3},
                ),
            ),
        ),
        (
            source.split_edges("(:A)-[:R]->(:B)", {"seed": 1}),
            ("tf_features.split_edges", ("(:A)-[:R]->(:B)", {"seed": 1})),
        ),
    ]
    for got, want in cases:
        assert got == want
    with pytest.raises(ConfigurationError, match=r"^options: expected a map or None, got list$"):
        source.describe(["f"], ["not", "a", "map"])


@pytest.mark.parametrize(
    "name, rows, answer",
    [
        ("tf_features.pack", [{"blob": "QQ", "count": 1}], "QQ"),
        (
            "tf_features.sample_per_node",
            [{"node_id": 1, "blob": "QQ"}, {"blob": "Qg"}],
            ["QQ", "Qg"],
        ),
        (
            "tf_features.split_edges",
            [{"train": 8, "val": 1, "test": 1, "relationships": 10, "extra": 0}],
            {"train": 8, "val": 1, "test": 1, "relationships": 10},
        ),
    ],
)
def test_the_answer_of_a_call(name, rows, answer):
    assert TABLE[name].answer_of(rows) == answer
