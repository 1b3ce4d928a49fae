"""Predictions that stay fresh: ``memgraph-tf refresh`` reads the change log from its cursor,
re-scores only the nodes the changes can affect, and advances its cursor after the writes
(docs/batch-inference.md, "Refreshing predictions")::

    from memgraph_tf.batch import BundleBackend
    from memgraph_tf.batch.refresh import Refresher

    with BundleBackend("models/GraphSage") as model:
        summary = Refresher(source, model).once()

Guarantees of one pass (:meth:`Refresher.once`):

* it reads the changes of the log after the cursor (at most ``max_changes``), in ``seq`` order;
* the **affected set** (:mod:`memgraph_tf.batch.affected`): the seeds whose sampled neighbourhood
  can hold a changed element under the bundle's sampling spec, found by walking the spec's steps
  backwards inside the database; sampling is keyed by node, so re-scoring exactly these nodes
  leaves every node's prediction equal to a full re-score of the graph as it is now;
* a bundle that reads a featureless label's FastRP property (the trainers' default,
  :data:`~memgraph_tf.client.structural.STRUCTURAL_PROPERTY`, or any property whose feature spec
  entry records its ``structural`` call) first has it recomputed for the label's nodes within
  reach of the changed nodes, with the options its feature spec records, exactly as a full
  recompute on the graph as it is now gives them (:mod:`memgraph_tf.batch.structural_refresh`),
  and the seeds that read a rewritten vector join the affected set (the triggers' log of those
  writes, still in place, re-scores nothing in the next pass of the same process); a bundle whose
  spec reads
  the FastRP property without the record is refused (``ConfigurationError`` naming the label,
  the property and ``--structural-seed``) unless ``structural_seed`` is given;
* they are re-scored through :class:`~memgraph_tf.batch.classifier.BatchClassifier` (the batches,
  the write-back and its properties of ``memgraph-tf classify``), and, given an ``embed`` backend
  (:class:`~memgraph_tf.batch.embedder.EmbedBackend`: the bundle's ``embed`` signature), re-embedded
  through :class:`~memgraph_tf.batch.embedder.BatchEmbedder` (``memgraph-tf embed``'s write-back:
  ``embedding_property`` and its ``_version``, which Memgraph's vector index on that property
  follows);
* a deleted node takes its predictions with it (they are its properties); its former
  neighbours are placed by the deletions of its relationships, whose endpoints the log records;
* a created or updated change naming a node that is not in the graph, and that no later change
  deletes, stops the pass before anything is written (``ConfigurationError`` naming the change and
  the node);
* its summary reports the lag of the changes it read: from each one's logging (``logged_at``) to
  the cursor's move after its fresh prediction was written;
* the cursor (a ``(:MemgraphTfRefreshCursor {log, name})`` node, ``name`` = model name and write
  property) moves to the last change read only after every re-scored batch has committed, in a
  write of its own. A pass killed before that is redone by the next one: re-scoring is
  deterministic, so the same values are written again, and no change is skipped or applied on
  top of a later state.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import signal
import threading
import time
from collections.abc import Callable
from typing import Any

from memgraph_tf.batch.affected import WalkSpec, affected_nodes, start_positions, walker_for
from memgraph_tf.batch.backends import ModelBackend, resolve_version_dir, sampling_for
from memgraph_tf.batch.classifier import DEFAULT_BATCH_SIZE, BatchClassifier
from memgraph_tf.batch.commands import close_all, report_failure
from memgraph_tf.batch.embedder import DEFAULT_EMBEDDING_PROPERTY, BatchEmbedder
from memgraph_tf.batch.structural_refresh import StructuralRefresh
from memgraph_tf.client.change_log import CURSOR_LABEL, DEFAULT_LOG, Change, ChangeLog
from memgraph_tf.client.node_tables import DEFAULT_WRITE_PROPERTY, NodeTable, bundle_selection
from memgraph_tf.client.sources import EmbeddedSource, GraphSource
from memgraph_tf.client.structural import STRUCTURAL_PROPERTY
from memgraph_tf.errors import ConfigurationError

logger = logging.getLogger(__name__)

__all__ = [
    "DEFAULT_MAX_CHANGES",
    "DEFAULT_POLL_INTERVAL_S",
    "MAX_POLL_INTERVAL_S",
    "MIN_POLL_INTERVAL_S",
    "RefreshSummary",
    "Refresher",
    "add_arguments",
    "check_poll_interval",
    "run_cli",
    "signal_stopper",
]

#: Changes one pass reads at most (a longer backlog takes several passes).
DEFAULT_MAX_CHANGES = 10_000
#: ``--follow``'s wait between passes that found no change, by default.
DEFAULT_POLL_INTERVAL_S = 2.0
#: The bounds of the poll interval.
MIN_POLL_INTERVAL_S = 0.05
MAX_POLL_INTERVAL_S = 300.0


@dataclasses.dataclass
class RefreshSummary:
    """What one pass did: the cursor it read from and moved to, the changes read, the affected
    nodes (and the selected nodes of the graph they are a part of), the nodes whose structural
    property was recomputed, what was re-scored, and whether the cursor moved (``committed``)."""

    log: str
    cursor_from: int
    cursor_to: int
    changes: int = 0
    affected: int = 0
    graph_nodes: int = 0
    structural: int = 0
    classified: int = 0
    embedded: int = 0
    skipped: int = 0
    failed: int = 0
    deleted_nodes: int = 0
    committed: bool = False
    elapsed_s: float = 0.0
    #: From the logging of the oldest / newest change read to the cursor's move (None: the
    #: changes carry no ``logged_at``, or the cursor did not move).
    oldest_lag_s: float | None = None
    newest_lag_s: float | None = None

    @property
    def ratio(self) -> float:
        """Affected nodes / selected nodes of the graph (0 for an empty graph)."""
        return self.affected / self.graph_nodes if self.graph_nodes else 0.0

    def text(self) -> str:
        """One line for people."""
        if not self.changes:
            return f"refresh: no change after seq {self.cursor_from} in log {self.log!r}"
        return (
            f"refresh: {self.changes} change(s), seq {self.cursor_from + 1}..{self.cursor_to} of "
            f"log {self.log!r}: {self.affected} affected node(s) of {self.graph_nodes} "
            f"({self.ratio:.4%}), {self.structural} FastRP vector(s) recomputed, "
            f"{self.classified} re-scored, {self.embedded} re-embedded, "
            f"{self.skipped} skipped, "
            f"{self.failed} failed, {self.deleted_nodes} deleted node(s) in "
            f"{self.elapsed_s:.2f} s; "
            + ("cursor moved" if self.committed else "cursor NOT moved (rerun to redo)")
            + (
                ""
                if self.oldest_lag_s is None
                else f"; lag from a change's logging to its fresh prediction "
                f"{self.newest_lag_s:.2f}-{self.oldest_lag_s:.2f} s"
            )
        )


class Refresher:
    """Refreshes the predictions of ``model`` (a :class:`ModelBackend` of a node bundle) on
    ``source`` from the change log ``log``: :meth:`once` runs one pass, :meth:`follow` passes
    until stopped. ``write_property``, ``label``, ``batch_size``, ``skip_invalid`` and
    ``progress`` are ``memgraph-tf classify``'s; ``embed`` (an
    :class:`~memgraph_tf.batch.embedder.EmbedBackend` of the same bundle, or None) re-embeds the
    affected nodes into ``embedding_property``; ``structural`` (default true) recomputes the
    bundle's FastRP property near the changes first, with the options its feature spec records;
    ``structural_seed`` stands for them where the spec has no record (a bundle exported before
    the record existed: the trainers' default call with that seed) and is refused where it
    differs from a recorded seed. A spec reading the FastRP property without the record and no
    ``structural_seed``: ``ConfigurationError`` naming the label, the property and the flag."""

    def __init__(
        self,
        source: GraphSource,
        model: ModelBackend,
        *,
        log: str = DEFAULT_LOG,
        write_property: str = DEFAULT_WRITE_PROPERTY,
        label: str | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
        max_changes: int = DEFAULT_MAX_CHANGES,
        skip_invalid: bool = False,
        progress: bool = False,
        embed: ModelBackend | None = None,
        embedding_property: str = DEFAULT_EMBEDDING_PROPERTY,
        structural: bool = True,
        structural_seed: int | None = None,
    ) -> None:
        if isinstance(max_changes, bool) or not isinstance(max_changes, int) or max_changes < 1:
            raise ConfigurationError(f"max_changes: expected an int >= 1, got {max_changes!r}")
        if not isinstance(model, ModelBackend):
            raise ConfigurationError(f"model: expected a ModelBackend, got {type(model).__name__}")
        self.source, self.model = source, model
        self.log = ChangeLog(source, log)
        self.selection = bundle_selection(
            model.config.options, model.version, label=label, write_property=write_property
        )
        self.label = self.selection.label
        try:
            self.spec = WalkSpec.from_sampling(sampling_for(model.config), self.label)
        except ValueError as exc:
            raise ConfigurationError(f"model: {exc}") from None
        self.structural = StructuralRefresh(
            model.config.options, structural_seed, enabled=structural
        )
        if self.structural.labels:
            self.spec = self.structural.walk_spec(self.spec)
        self.write_property = write_property
        self.batch_size, self.max_changes = batch_size, max_changes
        self.skip_invalid, self.progress = bool(skip_invalid), progress
        self.walker = walker_for(source)
        self.cursor_name = f"{model.name}/{write_property}"
        self.embed, self.embedding_property = embed, embedding_property
        if embed is not None and embed.version != model.version:
            raise ConfigurationError(
                f"embed: expected the encoder of {model.name} version {model.version}, got "
                f"{embed.name} version {embed.version}"
            )
        self._run: BatchClassifier | None = None
        self._stop = threading.Event()

    # -- the cursor -----------------------------------------------------------------------------
    def cursor(self) -> int:
        """The last ``seq`` applied (0 before the first pass)."""
        if isinstance(self.source, EmbeddedSource):
            node = self._cursor_node(create=False)
            return 0 if node is None else int(self.source.graph.get_property(node, "seq", 0))
        rows = self.source.read(
            f"MATCH (c:{CURSOR_LABEL}) WHERE c.log = $log AND c.name = $name RETURN c.seq AS seq",
            {"log": self.log.log, "name": self.cursor_name},
        )
        return int(rows[0]["seq"]) if rows else 0

    def _cursor_node(self, create: bool) -> int | None:
        graph = self.source.graph
        for node in graph.nodes(CURSOR_LABEL):
            props = (graph.get_property(node, "log"), graph.get_property(node, "name"))
            if props == (self.log.log, self.cursor_name):
                return node
        if not create:
            return None
        return graph.add_node([CURSOR_LABEL], {"log": self.log.log, "name": self.cursor_name})

    def _set_cursor(self, seq: int) -> None:
        if isinstance(self.source, EmbeddedSource):
            with self.source.lock:
                self.source.graph.set_property(self._cursor_node(create=True), "seq", seq)
            return
        self.source.write(
            f"MERGE (c:{CURSOR_LABEL} {{log: $log, name: $name}}) SET c.seq = $seq",
            {"log": self.log.log, "name": self.cursor_name, "seq": seq},
        )

    # -- one pass -------------------------------------------------------------------------------
    def _check_known(self, changes: list[Change], labels: dict[int, list[str]], after: int) -> None:
        """Raises ``ConfigurationError`` for the first created or updated change naming a node
        that is not in the graph and that no later change of the log deletes."""
        named: list[tuple[Change, int, str]] = []
        for c in changes:
            if c.kind == "deleted":
                continue
            if c.entity == "node":
                named.append((c, c.element_id, "the node"))
            else:
                named += [(c, c.start_id, "its start node"), (c, c.end_id, "its end node")]
        missing = {node for _, node, _ in named if node not in labels}
        if not missing:
            return
        gone = self.log.deleted_nodes(missing, after)
        for c, node, role in named:
            if node in missing and node not in gone:
                what = c.entity if c.entity == "node" else f"relationship {c.element_id}"
                raise ConfigurationError(
                    f"change log {self.log.log!r}, seq {c.seq} ({c.kind} {what}): {role}, "
                    f"node {node}, is not in the graph and no later change deletes it"
                )

    def affected(self, changes: list[Change], after: int) -> tuple[set[int] | None, int]:
        """The internal ids of the nodes ``changes`` (read after cursor ``after``) can affect
        (None: every node), and the number of nodes whose structural property was recomputed
        first (the bundle's featureless labels: :mod:`memgraph_tf.batch.structural_refresh`;
        their updates join ``changes``; a label recomputed in full affects every node). The
        logged writes of this refresher's own recomputes whose values are still in place
        (:meth:`~memgraph_tf.batch.structural_refresh.StructuralRefresh.own_writes`) affect
        nothing: the predictions were made with those values."""
        ids = set()
        for c in changes:
            if c.entity == "node":
                ids.add(c.element_id)
            else:
                ids.update((c.start_id, c.end_id))
        labels = self.walker.labels(sorted(ids))
        self._check_known(changes, labels, after)
        own = self.structural.own_writes(self.source, changes) if self.structural.written else ()
        changes = [c for pos, c in enumerate(changes) if pos not in own]
        rewrite = self.structural.rewrite(self.source, changes, labels)
        if rewrite.everything:
            return None, rewrite.count
        more = sorted({c.element_id for c in rewrite.updates} - labels.keys())
        labels.update(self.walker.labels(more))
        starts = start_positions(self.spec, changes + rewrite.updates, labels)
        return affected_nodes(self.spec, starts, self.walker), rewrite.count

    def _keys(self, internal: set[int] | None) -> list[int] | None:
        if internal is None:
            return None
        if self.selection.id_property is None:
            return sorted(internal)
        return sorted(self.walker.keys(sorted(internal), self.selection.id_property).values())

    def once(self) -> RefreshSummary:
        """One pass (see the module docstring); returns what it did. Raises the errors of
        :class:`BatchClassifier` (then the cursor has not moved), ``ConfigurationError`` for a
        change naming an unknown node, the source's errors."""
        t0 = time.perf_counter()
        after = self.cursor()
        changes, last = self.log.read(after, self.max_changes)
        s = RefreshSummary(self.log.log, after, last, changes=len(changes))
        if not changes:
            s.elapsed_s = time.perf_counter() - t0
            return s
        affected, s.structural = self.affected(changes, after)
        keys = self._keys(affected)
        s.deleted_nodes = sum(c.entity == "node" and c.kind == "deleted" for c in changes)
        s.graph_nodes = NodeTable(self.source, self.selection).count(False)
        s.affected = s.graph_nodes if keys is None else len(keys)
        if keys is None or keys:
            try:
                run = self._rerun(BatchClassifier, self.model, self.write_property, keys)
            finally:
                s.elapsed_s = time.perf_counter() - t0
            s.classified, s.skipped, s.failed = run.classified, run.skipped, run.failed
            if not self._complete(s.classified + s.skipped + s.failed, s.affected, s):
                return s  # stopped between batches: the next pass redoes these changes
            if self.embed is not None:
                run = self._rerun(BatchEmbedder, self.embed, self.embedding_property, keys)
                s.embedded, s.failed = run.classified, s.failed + run.failed
                if not self._complete(run.classified + run.skipped + run.failed, s.affected, s):
                    return s
        self._set_cursor(last)
        s.committed = True
        s.elapsed_s = time.perf_counter() - t0
        logged = [c.logged_at for c in changes if c.logged_at is not None]
        if logged:
            now_us = time.time_ns() // 1000
            s.oldest_lag_s, s.newest_lag_s = (
                (now_us - min(logged)) / 1e6,
                (now_us - max(logged)) / 1e6,
            )
        logger.info("%s", s.text())
        return s

    def _complete(self, done: int, wanted: int, s: RefreshSummary) -> bool:
        """Whether the run just made did every node (a stop can end it between batches)."""
        if self._stop.is_set() and done < wanted:
            logger.info("%s", s.text())
            return False
        return True

    def _rerun(
        self,
        run_class: type[BatchClassifier],
        model: ModelBackend,
        prop: str,
        keys: list[int] | None,
    ) -> Any:
        """Runs ``run_class`` (:class:`BatchClassifier`, or :class:`BatchEmbedder` for
        :attr:`embed`) with ``model`` over the nodes ``keys`` (None: every node of the
        selection), rewriting ``prop``; returns the
        run's summary. The run is :attr:`_run` meanwhile, so that :meth:`stop` reaches it."""
        self._run = run_class(
            self.source,
            model,
            write_property=prop,
            label=self.label,
            node_ids=keys,
            batch_size=self.batch_size,
            skip_invalid=self.skip_invalid,
            overwrite=True,
            progress=self.progress,
        )
        return self._run.run()

    # -- following the log ----------------------------------------------------------------------
    def stop(self) -> None:
        """Asks :meth:`follow` (and a pass in progress, after the batch being written) to stop."""
        self._stop.set()
        if self._run is not None:
            self._run.stop()

    def follow(self, poll_interval_s: float = DEFAULT_POLL_INTERVAL_S, on_pass: Any = None) -> int:
        """Passes until :meth:`stop`: the next one at once when a pass read ``max_changes``
        changes (a backlog), else after ``poll_interval_s`` (between
        :data:`MIN_POLL_INTERVAL_S` and :data:`MAX_POLL_INTERVAL_S`). ``on_pass(summary)`` is
        called after each pass that read changes. Returns the number of such passes."""
        check_poll_interval(poll_interval_s)
        passes = 0
        while not self._stop.is_set():
            summary = self.once()
            if summary.changes:
                passes += 1
                if on_pass is not None:
                    on_pass(summary)
            if summary.changes >= self.max_changes and summary.committed:
                continue
            self._stop.wait(poll_interval_s)
        return passes


def check_poll_interval(value: Any) -> float:
    """``value`` when it is a number of seconds within the poll interval's bounds; else
    ``ConfigurationError`` naming it."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not ok or not MIN_POLL_INTERVAL_S <= value <= MAX_POLL_INTERVAL_S:
        raise ConfigurationError(
            f"poll_interval_s: expected seconds from {MIN_POLL_INTERVAL_S} to "
            f"{MAX_POLL_INTERVAL_S}, got {value!r}"
        )
    return float(value)


# ------------------------------------------------------------------------------ the command line
def signal_stopper(stop: Callable[[], None]) -> Callable[[int, Any], None]:
    """A signal handler that runs ``stop`` on a thread of its own and returns at once. A handler
    runs in the main thread between two bytecodes, perhaps while that thread holds the lock of
    the very ``threading.Event`` that ``stop`` sets (inside ``Event.wait``, as it is for most
    of a follow loop): calling ``stop`` there would wait for itself forever."""

    def handler(signum: int, frame: Any) -> None:
        threading.Thread(target=stop, name="memgraph-tf-stop", daemon=True).start()

    return handler


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options of ``memgraph-tf refresh``."""
    p.add_argument(
        "--graph",
        required=True,
        help="bolt://HOST:PORT (credentials from MEMGRAPH_TF_USER / MEMGRAPH_TF_PASSWORD, "
        "database MEMGRAPH_TF_DATABASE) or embedded:NAME, as classify",
    )
    p.add_argument(
        "--model",
        required=True,
        metavar="BUNDLE_DIR",
        help="the node bundle whose predictions to refresh: BASE/NAME (its newest version) or "
        "BASE/NAME/VERSION",
    )
    p.add_argument("--log", default=DEFAULT_LOG, metavar="NAME", help="the change log's name")
    p.add_argument(
        "--write-property",
        default=DEFAULT_WRITE_PROPERTY,
        metavar="P",
        help="the prediction properties (P, P_score, P_version), as classify",
    )
    p.add_argument(
        "--label", default=None, help="the nodes to keep fresh (default: the bundle's label)"
    )
    p.add_argument("--batch-size", type=int, default=DEFAULT_BATCH_SIZE, help="nodes per batch")
    p.add_argument(
        "--max-changes",
        type=int,
        default=DEFAULT_MAX_CHANGES,
        help="changes one pass reads at most (a longer backlog takes several passes)",
    )
    p.add_argument(
        "--follow",
        action="store_true",
        help="keep following the log until SIGTERM or Ctrl-C (a pass in progress finishes its "
        "batch; the cursor moves only after a whole pass)",
    )
    p.add_argument(
        "--poll-interval-s",
        type=float,
        default=DEFAULT_POLL_INTERVAL_S,
        help=f"--follow's wait after a pass that emptied the backlog, {MIN_POLL_INTERVAL_S} to "
        f"{MAX_POLL_INTERVAL_S} s (default {DEFAULT_POLL_INTERVAL_S})",
    )
    p.add_argument(
        "--skip-invalid",
        action="store_true",
        help="report and skip nodes that cannot be classified instead of stopping",
    )
    p.add_argument(
        "--embedding-property",
        default=DEFAULT_EMBEDDING_PROPERTY,
        metavar="P",
        help="re-embed the affected nodes into P and P_version when the bundle has an 'embed' "
        f"signature, as memgraph-tf embed writes them (default {DEFAULT_EMBEDDING_PROPERTY})",
    )
    p.add_argument(
        "--no-embed", action="store_true", help="re-score only, even with an 'embed' signature"
    )
    p.add_argument(
        "--no-structural",
        action="store_true",
        help=f"do not recompute the FastRP property ({STRUCTURAL_PROPERTY}) the trainers write "
        "for a featureless label (default: where the bundle reads it, it is recomputed near the "
        "changes before re-scoring)",
    )
    p.add_argument(
        "--structural-seed",
        type=int,
        default=None,
        metavar="N",
        help="only for a bundle whose feature spec does not record the FastRP call (exported "
        "before the record existed): the training seed the projection was drawn from (0 when "
        "training set none); a bundle that records it uses its recorded options, and a "
        "different N is refused",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar")


def _encoder(path: Any) -> Any:
    """The bundle's :class:`~memgraph_tf.batch.embedder.EmbedBackend`, or None when it has no
    ``embed`` signature (then nothing is re-embedded)."""
    from memgraph_tf.batch.embedder import EmbedBackend
    from memgraph_tf.serving.bundle import EMBED_SIGNATURE
    from memgraph_tf.serving.loading import read_saved_model_proto

    version_dir, _ = resolve_version_dir(path)
    proto = read_saved_model_proto(version_dir)
    if not any(EMBED_SIGNATURE in graph.signature_def for graph in proto.meta_graphs):
        logger.info("%s has no %r signature: re-scoring only", path, EMBED_SIGNATURE)
        return None
    return EmbedBackend(version_dir)


def run_cli(args: argparse.Namespace, open_graph: Callable[[str], Any]) -> int:
    """``memgraph-tf refresh``: each pass's summary line on stdout, one line on failure; exit
    codes from :data:`memgraph_tf.errors.EXIT_CODES` (0 done -- with ``--follow``, stopped by
    SIGTERM --, 1 failed: rerun to redo the pass, 2 a bad command line, bundle or log entry:
    nothing written, 130 Ctrl-C). ``open_graph`` opens ``--graph``."""
    from memgraph_tf.batch.backends import BundleBackend

    source = model = encoder = None
    previous = None
    try:
        if args.follow:
            check_poll_interval(args.poll_interval_s)
        source = open_graph(args.graph)
        model = BundleBackend(args.model)
        encoder = None if args.no_embed else _encoder(args.model)
        refresher = Refresher(
            source,
            model,
            log=args.log,
            write_property=args.write_property,
            label=args.label,
            batch_size=args.batch_size,
            max_changes=args.max_changes,
            skip_invalid=args.skip_invalid,
            progress=not args.no_progress,
            embed=encoder,
            embedding_property=args.embedding_property,
            structural=not args.no_structural,
            structural_seed=args.structural_seed,
        )
        if not args.follow:
            print(refresher.once().text())
            return 0
        previous = signal.signal(signal.SIGTERM, signal_stopper(refresher.stop))
        logger.info("following log %r every %.2f s until SIGTERM", args.log, args.poll_interval_s)
        refresher.follow(args.poll_interval_s, lambda s: print(s.text(), flush=True))
        print("refresh: stopped (SIGTERM)", flush=True)
        return 0
    except (Exception, KeyboardInterrupt) as exc:  # noqa: BLE001 -- errors.command_failure: one line, an exit code
        return report_failure("refresh", exc, log=logger, interrupted="the pass in progress")
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
        close_all(encoder, model, source)
