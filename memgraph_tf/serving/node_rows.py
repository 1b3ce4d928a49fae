"""Examples naming nodes whose blobs are read in the same batch as the model runs on them.

With server-side batching on (``memgraph-tf serve --enable-batching``), a request of ``node_id``
examples is one task of the batch scheduler: the graph read of its nodes and the model call on
its examples run together, merged with the concurrent requests of the same model version and
signature (one source call per sampling setting, then one model call, for the whole batch). A
request thus waits for one batch, not for a batch of graph reads and then a batch of model calls.

- :class:`NodeExamples`: a request's serialized tf.Examples on a node bundle, those naming a node
  completed with the node's blob only when :meth:`NodeExamples.rows` asks for them;
- :func:`complete_rows`: rows of one or several requests completed with one graph read.

No TensorFlow here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from memgraph_tf.serving.grpc_codec import blob_example_prefix

#: ``fetch(node_ids, names)`` -> one blob per id; ``names`` (how errors name each id) or None for
#: a merged read, which names no request's examples.
Fetch = Callable[[list[int], "list[str] | None"], list[bytes]]


def complete_rows(
    heads: Sequence[bytes],
    node_ids: Sequence[int | None],
    names: Sequence[str | None] | None,
    fetch: Fetch,
    key: str,
) -> list[bytes]:
    """Row ``i``: ``heads[i]``, followed where ``node_ids[i]`` is not None by that node's blob as
    the bytes feature ``key`` (serialized protos concatenate as they merge). The blobs are read
    with one ``fetch`` of those ids (``names``: theirs, or None)."""
    chosen = [i for i, n in enumerate(node_ids) if n is not None]
    if not chosen:
        return list(heads)
    ids = [node_ids[i] for i in chosen]
    blobs = fetch(ids, None if names is None else [names[i] for i in chosen])
    out = list(heads)
    for i, blob in zip(chosen, blobs):
        out[i] = b"".join((heads[i], blob_example_prefix(len(blob), key), blob))
    return out


class NodeExamples(Sequence):
    """A request's serialized tf.Examples on a node bundle: ``base`` (each example serialized,
    those at ``positions`` without ``node_id``), ``node_ids`` (the node of the ``j``-th example
    at ``positions``), ``names`` (how errors name them: ``examples[i].node_id``), the bundle's
    blob feature ``key``, the ``sampling`` settings the blobs are read with and ``fetch`` (reads
    them: :data:`Fetch`); ``prefix`` (a serialized context) goes before every example.

    Guarantees: item ``i`` parses to the example the request gave with, at a node position, the
    node's blob as the bytes feature ``key`` and no ``node_id``; blobs are read only for the rows
    asked for, or by whoever completes :meth:`parts` (:func:`complete_rows`)."""

    def __init__(
        self,
        base: Sequence[bytes],
        positions: Sequence[int],
        node_ids: Sequence[int],
        names: Sequence[str],
        key: str,
        sampling: Any,
        fetch: Fetch,
        prefix: bytes = b"",
    ):
        self.base = list(base)
        self.key, self.sampling, self.fetch, self.prefix = key, sampling, fetch, prefix
        self._node = dict(zip(positions, zip(node_ids, names)))
        self.positions, self.node_ids, self.names = list(positions), list(node_ids), list(names)

    def with_prefix(self, prefix: bytes) -> NodeExamples:
        """The same examples, each after ``prefix`` (an ExampleListWithContext's context)."""
        return NodeExamples(
            self.base,
            self.positions,
            self.node_ids,
            self.names,
            self.key,
            self.sampling,
            self.fetch,
            prefix + self.prefix,
        )

    def parts(self, start: int = 0, stop: int | None = None) -> tuple[list, list, list]:
        """``(heads, node ids, names)`` of rows ``start..stop-1``: each row's serialized bytes
        before its blob, and its node id and name (None for a row that names no node)."""
        stop = len(self) if stop is None else stop
        heads = [self.prefix + self.base[i] for i in range(start, stop)]
        named = [self._node.get(i, (None, None)) for i in range(start, stop)]
        return heads, [n for n, _ in named], [m for _, m in named]

    def rows(self, start: int, stop: int) -> list[bytes]:
        """The serialized examples ``start..stop-1``, their blobs read now with ``fetch`` as it
        is (untimed, no graph time noted: the server times and notes its own reads)."""
        heads, ids, names = self.parts(start, stop)
        return complete_rows(heads, ids, names, self.fetch, self.key)

    def __len__(self) -> int:
        return len(self.base)

    def __getitem__(self, i: Any) -> Any:
        chosen = range(len(self))[i]  # a bad index raises IndexError, as a list's does
        if isinstance(chosen, int):
            return self.rows(chosen, chosen + 1)[0]
        if chosen.step == 1:
            return self.rows(chosen.start, chosen.stop)
        return [self.rows(j, j + 1)[0] for j in chosen]

    def __iter__(self) -> Any:
        return iter(self.rows(0, len(self)))


__all__ = ["Fetch", "NodeExamples", "complete_rows"]
