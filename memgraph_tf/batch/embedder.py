"""Node embeddings written back to the graph: ``memgraph-tf embed`` and :func:`embed_nodes` run a
bundle's encoder over every selected node and write its embedding as a list property, with the
model version -- the batch-inference run of :mod:`memgraph_tf.batch.classifier` (the same paging,
resume, shards, fetch workers and invalid-node handling), with an embedding where a class was::

    from memgraph_tf.batch import embed_nodes
    from memgraph_tf.client import connect

    with connect("bolt://memgraph:7687") as source:
        summary = embed_nodes(source, "models/GraphSage", create_index=True)

The encoder (:class:`EmbedBackend`):

* a **node bundle**: its ``embed`` signature, the model's last hidden layer (the classifier's
  input); exported for a model with ``encode`` (:class:`~memgraph_tf.client.GraphSAGE`,
  :class:`~memgraph_tf.client.typed_graphsage.TypedGraphSAGE`);
* a **link bundle**: its ``embed_source`` or ``embed_target`` signature (``role``), the nodes of
  that role's label, sampled as link scoring samples them.

A bundle without one raises :class:`ConfigurationError` naming the bundle and its signatures.

**Written properties**, for write property ``P`` (default ``embedding``): ``P`` the embedding (a
list of floats) and ``P_version`` the model version; a rerun leaves out the nodes whose
``P_version`` is this version, so an interrupted run (SIGKILL included) resumes with exactly the
nodes that are missing, each written once.

**The vector index** (:mod:`memgraph_tf.batch.vectors`): before anything is written, an existing
index on ``:Label(P)`` whose dimension is not the encoder's raises :class:`ConfigurationError`
naming it; ``create_index`` creates ``CREATE VECTOR INDEX`` for ``:Label(P)`` (name
``index_name``, default ``P_<label>``) when there is none.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from memgraph_tf.batch import vectors
from memgraph_tf.batch.backends import ModelBackend, resolve_version_dir, sampling_for
from memgraph_tf.batch.classifier import DEFAULT_BATCH_SIZE, BatchClassifier
from memgraph_tf.batch.commands import options_from, run_batch
from memgraph_tf.batch.summary import BatchSummary
from memgraph_tf.client.node_tables import NodeTable, Shard
from memgraph_tf.client.sources import GraphSource
from memgraph_tf.errors import ConfigurationError, ModelError, ModelInputError
from memgraph_tf.serving import bundle
from memgraph_tf.serving.bundle import SamplingSpec

logger = logging.getLogger(__name__)

#: The property embeddings are written to unless told otherwise (``P_version`` beside it).
DEFAULT_EMBEDDING_PROPERTY = "embedding"
#: The endpoint roles of a link bundle's encoders.
ROLES = bundle.LINK_ROLES


class EmbedBackend(ModelBackend):
    """A bundle's encoder run in-process: ``infer(blobs)`` -> ``(embedding as a list of floats,
    None)`` per blob. ``path``: ``BASE/NAME`` (its highest version) or ``BASE/NAME/VERSION``;
    ``role``: ``source`` or ``target`` for a link bundle (default ``source``), none for a node
    bundle. Guarantees: :attr:`dimension` is the embeddings' width; the run samples each node as
    the bundle's own serving paths do (a node bundle: :func:`sampling_for`; a link bundle: that
    role's ``sample_typed`` settings, the seed the bundle's)."""

    def __init__(self, path: Any, *, role: str | None = None) -> None:
        from memgraph_tf.serving import loading

        version_dir, version = resolve_version_dir(path)
        try:
            loaded = loading.load_version(version_dir, version or 0)
        except ValueError as exc:
            raise ModelError(f"model: cannot load {version_dir}: {exc}") from exc
        config = loaded.bundle_config
        if config is None:
            raise ConfigurationError(
                f"model: {str(version_dir)!r} is a SavedModel but not a memgraph-tf bundle "
                f"(no assets/{bundle.CONFIG_ASSET})"
            )
        self.config = config
        self.version = version if version is not None else config.version
        self.path = version_dir
        if config.link is not None:
            role = "source" if role is None else role
            if role not in ROLES:
                raise ConfigurationError(f"role: expected source or target, got {role!r}")
            signature = bundle.EMBED_ROLE_SIGNATURES[role]
            self._sampling = bundle.inference_sampling(config).role_sampling(role)
            self._options = {
                "label": self._sampling.typed.seed_label,
                "id_property": self._sampling.options.get("id_property"),
            }
        else:
            if role is not None:
                raise ConfigurationError(
                    f"role: only for a link bundle; {config.model_name!r} embeds its own nodes"
                )
            signature = bundle.EMBED_SIGNATURE
            self._sampling = sampling_for(config)
            self._options = config.options
        if signature not in loaded.functions:
            raise ConfigurationError(
                f"model: {str(version_dir)!r} has no encoder: no {signature!r} signature (has "
                f"{', '.join(sorted(loaded.functions))}); export a node model with encode() "
                f"(GraphSAGE, TypedGraphSAGE) or a link model"
            )
        self.role = role
        self._loaded = loaded
        self._embed = loaded.functions[signature]
        shape = self._embed.structured_outputs[bundle.EMBEDDINGS_OUTPUT].shape
        self.dimension = int(shape[-1])
        self.signature = signature

    def sampling(self) -> SamplingSpec:
        return self._sampling

    def selection_options(self) -> Mapping[str, Any]:
        return self._options

    def embed(self, blobs: Sequence[bytes]) -> np.ndarray:
        """Embeddings ``[len(blobs), D]`` (float32) of per-node blobs, in order; raises
        :class:`ModelInputError` when the model rejects a blob."""
        import tensorflow as tf

        if not blobs:
            return np.zeros((0, self.dimension), np.float32)
        try:
            out = self._embed(**{bundle.EMBED_INPUT: tf.constant(list(blobs), dtype=tf.string)})
        except tf.errors.InvalidArgumentError as exc:
            raise ModelInputError(f"the model rejected the blob: {exc.message[:500]}") from None
        z = out[bundle.EMBEDDINGS_OUTPUT].numpy().astype(np.float32)
        if z.shape != (len(blobs), self.dimension):
            raise ModelError(
                f"{self.name} version {self.version}: expected embeddings of shape "
                f"({len(blobs)}, {self.dimension}), got {z.shape}"
            )
        return z

    def infer(self, blobs: Sequence[bytes]) -> list[tuple[Any, float | None]]:
        return [(row, None) for row in self.embed(blobs).tolist()]

    def classify(self, blobs: Sequence[bytes]) -> list[tuple[str, float]]:
        raise ConfigurationError(f"model: {self.signature!r} embeds nodes; it does not classify")

    def close(self) -> None:
        self._embed = None
        self._loaded = None


@dataclasses.dataclass
class EmbedSummary(BatchSummary):
    """A :class:`BatchSummary` whose ``classified`` counts the nodes embedded."""

    def counts_text(self) -> str:
        return (
            f"embedded {self.classified} nodes, skipped {self.skipped} invalid, failed "
            f"{self.failed}, already up to date {self.up_to_date} (shard {self.shard})"
        )

    def text(self) -> str:
        return (
            f"{self.counts_text()} in {self.elapsed_s:.1f} s: {self.nodes_per_s:.0f} nodes/s; "
            f"model {self.model_name} version {self.model_version} -> {self.write_property}, "
            f"{self.write_property}_version"
        )


class BatchEmbedder(BatchClassifier):
    """A :class:`BatchClassifier` run with an :class:`EmbedBackend`: writes each node's embedding
    (``P``) and the model version (``P_version``). ``create_index`` / ``index_name`` /
    ``metric`` / ``capacity``: see the module docstring; the index check runs in the constructor,
    before anything is written."""

    action = "embed"
    summary_class = EmbedSummary

    def __init__(
        self,
        source: GraphSource,
        model: EmbedBackend,
        *,
        write_property: str = DEFAULT_EMBEDDING_PROPERTY,
        create_index: bool = False,
        index_name: str | None = None,
        metric: str = vectors.DEFAULT_METRIC,
        capacity: int | None = None,
        **options: Any,
    ) -> None:
        if not isinstance(model, EmbedBackend):
            raise ConfigurationError(f"model: expected an EmbedBackend, got {type(model).__name__}")
        super().__init__(source, model, write_property=write_property, **options)
        self.index = self._prepare_index(create_index, index_name, metric, capacity)

    def _prepare_index(
        self, create: bool, name: str | None, metric: str, capacity: int | None
    ) -> vectors.VectorIndex | None:
        label, prop, dim = self.label, self.write_property, self.model.dimension
        if create and not label:
            raise ConfigurationError(
                "create_index: a vector index needs a label (--label, label=): the model has none"
            )
        existing = vectors.index_for(vectors.index_info(self.source), label, prop)
        vectors.check_dimension(existing, dim, f"the embeddings of {self.model.name}")
        if not create or existing is not None:
            return existing
        if capacity is None:
            capacity = max(1024, 2 * NodeTable(self.source, self.selection).count(False))
        return vectors.create_index(
            self.source,
            name or f"{prop}_{label}",
            label,
            prop,
            dim,
            capacity=capacity,
            metric=metric,
        )


def embed_nodes(
    source: GraphSource,
    model: EmbedBackend | Any,
    node_ids: Sequence[int] | None = None,
    **options: Any,
) -> EmbedSummary:
    """Embeds the nodes of ``source`` with ``model`` (an :class:`EmbedBackend`, or a bundle path
    loaded as one, closed afterwards; ``role=`` for a link bundle) and writes them back (module
    docstring); ``node_ids``: exactly these keys (no resume filter), else every selected node
    still to do. ``options``: :class:`BatchEmbedder`'s and :class:`BatchClassifier`'s (``label``,
    ``where``, ``shard``, ``batch_size``, ``overwrite``, ``fetch_workers``, ``progress``...).
    Returns the run's summary."""
    role = options.pop("role", None)
    own = not isinstance(model, EmbedBackend)
    backend = EmbedBackend(model, role=role) if own else model
    try:
        options.setdefault("progress", False)
        return BatchEmbedder(source, backend, node_ids=node_ids, **options).run()
    finally:
        if own:
            backend.close()


# ------------------------------------------------------------------------------------------------
# the command
# ------------------------------------------------------------------------------------------------


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options of ``memgraph-tf embed``."""
    p.add_argument("--graph", required=True, help="bolt://HOST:PORT or embedded:NAME (as classify)")
    p.add_argument(
        "--model", required=True, metavar="BUNDLE_DIR", help="a node bundle or a link bundle"
    )
    p.add_argument(
        "--role",
        choices=ROLES,
        default=None,
        help="a link bundle's encoder: source (default) or target",
    )
    p.add_argument(
        "--write-property",
        default=DEFAULT_EMBEDDING_PROPERTY,
        metavar="P",
        help="write P (the embedding, a list of floats) and P_version (default embedding)",
    )
    p.add_argument("--label", default=None, help="default: the label the model embeds")
    p.add_argument(
        "--shard", default="0/1", metavar="I/N", help="nodes whose key modulo N is I (default all)"
    )
    p.add_argument("--batch-size", type=int, default=DEFAULT_BATCH_SIZE, help="nodes per write")
    p.add_argument(
        "--overwrite", action="store_true", help="also re-embed nodes done with this version"
    )
    p.add_argument("--skip-invalid", action="store_true", help="report invalid nodes, go on")
    p.add_argument("--fetch-workers", type=int, default=1, help="batches fetched concurrently")
    p.add_argument(
        "--create-index",
        action="store_true",
        help="create Memgraph's vector index on :Label(P) when there is none",
    )
    p.add_argument("--index-name", default=None, help="the index's name (default P_<label>)")
    p.add_argument(
        "--metric", default=vectors.DEFAULT_METRIC, help="the index's metric (default cos)"
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar")


#: The ``memgraph-tf embed`` options that :class:`BatchEmbedder` takes under the same names.
_EMBEDDER_OPTIONS = (
    "write_property",
    "label",
    "batch_size",
    "overwrite",
    "skip_invalid",
    "fetch_workers",
    "create_index",
    "index_name",
    "metric",
)


def run_cli(args: argparse.Namespace, open_graph: Callable[[str], Any]) -> int:
    """``memgraph-tf embed``: the summary on success, one line on failure; exit codes from
    :data:`memgraph_tf.errors.EXIT_CODES` (0 done, 1 failed: rerun to resume, 2 a bad command
    line, bundle or index: nothing written, 130 interrupted)."""

    def start(opened: list[Any]) -> BatchEmbedder:
        shard = Shard.parse(args.shard)
        source = open_graph(args.graph)
        opened.append(source)
        backend = EmbedBackend(args.model, role=args.role)
        opened.append(backend)
        return BatchEmbedder(
            source,
            backend,
            shard=shard,
            progress=not args.no_progress,
            **options_from(args, _EMBEDDER_OPTIONS),
        )

    def report(run: BatchEmbedder, summary: Any) -> None:
        print(summary.text())
        if run.index is not None:
            print(f"vector index {run.index.name} on :{run.index.label}({run.index.property})")

    return run_batch(
        "embed",
        start,
        report,
        log=logger,
        done=lambda summary: summary.classified,
        interrupted="embedding {} node(s)",
        written="{} node(s) embedded and written",
    )


__all__ = [
    "DEFAULT_EMBEDDING_PROPERTY",
    "BatchEmbedder",
    "EmbedBackend",
    "EmbedSummary",
    "add_arguments",
    "embed_nodes",
    "run_cli",
]
