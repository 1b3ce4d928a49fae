"""The keyed test graph (``tests.graphs``) as the batch-inference tests use it: label
``BatchItem``; and the keyset-paging kit (the graph under ``PagingItem``, fake paging servers);
shared by test_batch.py and test_batch_cli.py (their fixtures are in conftest.py)."""

from __future__ import annotations

import dataclasses
import os
import sys

from memgraph_tf.batch.backends import ModelBackend
from memgraph_tf.client.node_tables import NodeTable
from tests.graphs import KeyedGraph, credentials_env

LABEL = "BatchItem"
GRAPH = KeyedGraph(LABEL)
OPTIONS = GRAPH.options
embedded_source = GRAPH.embedded_source
bolt_predictions = GRAPH.bolt_predictions


def killable_run(command: str, server, bundle, write_property: str) -> tuple[list[str], dict]:
    """The command line and environment of ``memgraph-tf COMMAND`` (classify, embed) as a child
    process over the Bolt ``server`` (its credentials in the environment) with ``bundle``, in
    batches of 2 writing ``write_property`` and no progress bar: the runs the tests stop midway."""
    env = {**os.environ, **credentials_env(server), "TF_CPP_MIN_LOG_LEVEL": "3"}
    argv = [sys.executable, "-m", "memgraph_tf.cli", command, "--graph", server.uri]
    argv += ["--model", str(bundle), "--batch-size", "2", "--write-property", write_property]
    return [*argv, "--no-progress"], env


# ------------------------------------------ keyset paging (test_batch*.py): servers that page badly
PAGING = KeyedGraph("PagingItem")  # its own label: other suites share the ArcadeDB server
PAGING_WHERE = "n.paging_run = true"  # selections without a label: `where` keeps them to PAGING
_PAGE = NodeTable.page
_RANGE = NodeTable._range


def bare_id_range(self, lo, hi):
    """``NodeTable._range`` before the fix: ``id(n) >= $lo`` on the bare internal id."""
    extra, params = _RANGE(self, lo, hi)
    return [c.replace(self._range_key, self._key) for c in extra], params


def repeats_its_last_key(self, after, limit, todo, **kw):
    """``NodeTable.page`` of a server whose page starts again at ``after`` (``key >= $after``)."""
    if after is None:
        return _PAGE(self, after, limit, todo, **kw)
    return [after, *_PAGE(self, after, limit - 1, todo, **kw)]


def stops_after_one_page(self, after, limit, todo, **kw):
    """``NodeTable.page`` of a server that answers the first page only (every later one empty)."""
    return _PAGE(self, after, limit, todo, **kw) if after is None else []


def paging_written(source, prop: str) -> int:
    """How many :data:`PAGING` nodes carry version 1 of write property ``prop``."""
    query = f"MATCH (n) WHERE {PAGING_WHERE} AND n.`{prop}_version` = 1 RETURN count(n) AS c"
    return source.read(query)[0]["c"]


class Unlabelled(ModelBackend):
    """A loaded bundle as if exported without ``options.label`` and ``options.id_property``
    (keys are internal ids, every label is selected); the inner backend stays open."""

    def __init__(self, inner: ModelBackend):
        options = {"seed": inner.config.options["seed"]}
        self.inner, self.version = inner, inner.version
        self.config = dataclasses.replace(inner.config, options=options)

    def classify(self, blobs):
        return self.inner.classify(blobs)
