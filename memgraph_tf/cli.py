"""The ``memgraph-tf`` command line.

Each subcommand imports its implementation lazily, so ``memgraph-tf --help`` is instant and
``install-modules`` works without TensorFlow.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
import urllib.parse
from typing import Any

from memgraph_tf.errors import EXIT_USAGE, exit_code_for  # standard library only


def _build_ops(args: argparse.Namespace) -> int:
    from memgraph_tf import ops

    path = ops.build_library(force=args.force, cache_dir=args.cache_dir)
    print(path)
    return 0


def _install_modules(args: argparse.Namespace) -> int:
    """``memgraph-tf install-modules DIR``: the written paths on stdout, exit 0; a user error (an
    existing file with ``--no-overwrite``, a DIR that is a file or not writable, a missing
    package file) is one line on stderr and the exit code of
    :func:`~memgraph_tf.errors.exit_code_for` (2 for each of those), never a traceback. A
    ``memgraph_tf`` that a server Python (``--server-python``, else
    :func:`~memgraph_tf.deploy.server_python_candidates`) would import instead of the copied files
    is one warning line on stderr (exit 0)."""
    from memgraph_tf import deploy

    try:
        paths = deploy.install_modules(args.directory, overwrite=not args.no_overwrite)
    except (OSError, ValueError) as exc:
        logging.getLogger(__name__).debug("install-modules failed", exc_info=True)
        sys.stderr.write(f"memgraph-tf install-modules: {type(exc).__name__}: {exc}\n")
        return exit_code_for(exc)
    for path in paths:
        print(path)
    # a memgraph_tf installed in the server's Python shadows the copied files: warn, exit 0
    pythons = args.server_python or deploy.server_python_candidates()
    for python in pythons:
        origin = deploy.shadowing_package(args.directory, python)
        if origin is not None:
            warning = deploy.shadowing_warning(args.directory, python, origin)
            sys.stderr.write(f"memgraph-tf install-modules: warning: {warning}\n")
    return 0


def _serve(args: argparse.Namespace) -> int:
    """``memgraph-tf serve``: exit 0 after Ctrl-C; a user error (missing or empty model
    directory, bad label, busy port, unreachable --graph) is one line on stderr and exit 2."""

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # before TensorFlow is imported
    from memgraph_tf.client import sources
    from memgraph_tf.serving import server

    # the library opens the graph (memgraph_tf.client.open_graph); the server receives the opener
    timeout_s = getattr(args, "graph_connect_timeout_s", None)
    return server.run_cli(args, lambda uri: sources.open_graph(uri, connect_timeout_s=timeout_s))


def _classify_backend(args: argparse.Namespace):
    from memgraph_tf import batch

    if args.model is not None:
        if args.model_name or args.model_version is not None:
            raise ValueError(
                "--model-name / --model-version: only with --serving or --serving-grpc "
                "(--model BUNDLE_DIR names its version directory itself)"
            )
        return batch.BundleBackend(args.model)
    if not args.model_name:
        raise ValueError("--model-name: required with --serving and --serving-grpc")
    # TF Serving's APIs take no credentials: refused, shown masked (client.sources.config.redact)
    from memgraph_tf.client.sources.config import redact

    if args.serving is not None and "@" in urllib.parse.urlsplit(args.serving).netloc:
        raise ValueError(
            "--serving: expected http://HOST:PORT without user or password (TF Serving's REST "
            f"API takes none), got {redact(args.serving)!r}"
        )
    if args.serving_grpc is not None and "@" in args.serving_grpc:
        shown = redact(f"//{args.serving_grpc}").removeprefix("//")  # HOST:PORT: no scheme
        raise ValueError(
            "--serving-grpc: expected HOST:PORT without user or password (TF Serving's gRPC "
            f"API takes none), got {shown!r}"
        )
    if args.serving is not None:
        return batch.rest_backend(args.serving, args.model_name, version=args.model_version)
    return batch.grpc_backend(args.serving_grpc, args.model_name, version=args.model_version)


#: The most label names a ``--label`` error lists.
MAX_LABELS_NAMED = 20


def _check_label(source: Any, label: str) -> None:
    """Raises ``ConfigurationError`` naming ``label`` and the labels the graph has (at most
    :data:`MAX_LABELS_NAMED`) when no node of ``source`` carries ``label``: ``classify --label``
    with a label the graph lacks is a usage error, never a run that classifies nothing."""
    from memgraph_tf.client import EmbeddedSource
    from memgraph_tf.client.sources import quote_name
    from memgraph_tf.errors import ConfigurationError

    if isinstance(source, EmbeddedSource):
        with source.lock:
            graph = source.graph
            if graph.nodes(label):
                return
            labels = sorted({name for node in graph.nodes() for name in graph.labels(node)})
    else:
        if source.read(f"MATCH (n:{quote_name(label, 'label')}) RETURN 1 AS one LIMIT 1"):
            return
        rows = source.read("MATCH (n) UNWIND labels(n) AS name RETURN DISTINCT name")
        labels = sorted(str(row["name"]) for row in rows)
    named = ", ".join(f":{name}" for name in labels[:MAX_LABELS_NAMED])
    if len(labels) > MAX_LABELS_NAMED:
        named += f", ... ({len(labels)} labels)"
    raise ConfigurationError(
        f"label: the graph has no :{label} nodes (its labels: {named or 'none'})"
    )


def _check_where_on_server(source: Any, where: str, params: dict[str, Any]) -> None:
    """Raises ``ConfigurationError`` when the Bolt server refuses the ``--where`` predicate in a
    query that reads no node (``LIMIT 0``): a predicate the server cannot parse or plan is a
    usage error, reported before anything is read or written. A server that cannot be reached
    still raises its own error (a failed run). Memgraph takes ``LIMIT 0`` (its Limit cursor
    refuses only a negative limit: src/query/plan/operator.cpp)."""
    from memgraph_tf.errors import ConfigurationError, QueryError

    try:
        source.read(f"MATCH (n) WHERE ({where}) RETURN 1 AS one LIMIT 0", params)
    except QueryError as exc:
        raise ConfigurationError(
            f"where: the server refused the predicate {where!r}: {exc}"
        ) from exc


#: The ``classify`` options handed to :class:`~memgraph_tf.batch.BatchClassifier` as parsed.
CLASSIFIER_OPTIONS = (
    "write_property",
    "label",
    "where",
    "batch_size",
    "skip_invalid",
    "overwrite",
    "fetch_workers",
)


def _classify(args: argparse.Namespace) -> int:
    """``memgraph-tf classify``: one line on failure, the summary on success. Exit codes, from the
    one table (:func:`memgraph_tf.errors.exit_code_for`): 0 done, 1 the run failed or stopped
    (what was written stays; rerun to resume), 2 a bad command line or setting (nothing was
    written): among them a ``--label`` no node of the graph carries (the error names the labels
    it has) and a ``--where`` the Bolt server refuses, 130 interrupted (Ctrl-C; rerun to
    resume)."""
    if getattr(args, "runner", None):
        from memgraph_tf.beam.runner import run_classify_pipeline

        return run_classify_pipeline(args)
    if getattr(args, "pipeline_args", None):
        print(
            f"memgraph-tf classify: error: unexpected arguments {args.pipeline_args} (Beam "
            f"pipeline options after -- need --runner)",
            file=sys.stderr,
        )
        return EXIT_USAGE

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # before TensorFlow is imported
    from memgraph_tf import batch
    from memgraph_tf.batch.commands import options_from
    from memgraph_tf.beam.runner import parse_params  # standard library only
    from memgraph_tf.client import BoltSource, sources
    from memgraph_tf.errors import ConfigurationError, InvalidNodeError, command_failure

    def fail(code: int, message: str) -> int:
        print(f"memgraph-tf classify: {message}", file=sys.stderr)
        return code

    source = model = run = None
    try:
        # what the command line alone decides is checked before the graph and the model are opened
        shard = batch.Shard.parse(args.shard)
        params = parse_params(args.param)
        if args.where is not None:
            batch.check_where(args.where, params)
        elif params:
            raise ValueError("--param: only with --where")
        source = sources.open_graph(args.graph)
        if args.where is not None and not isinstance(source, BoltSource):
            raise ConfigurationError(
                "where: the embedded graph runs no Cypher; --where needs a Bolt "
                "graph (--graph bolt://...)"
            )
        if args.where is not None:
            _check_where_on_server(source, args.where, params)
        if args.label is not None:
            _check_label(source, args.label)
        model = _classify_backend(args)
        run = batch.BatchClassifier(
            source,
            model,
            where_params=params,
            shard=shard,
            progress=not args.no_progress,
            **options_from(args, CLASSIFIER_OPTIONS),
        )
        summary = run.run()
    except (Exception, KeyboardInterrupt) as exc:  # noqa: BLE001 -- errors.command_failure: one line, an exit code
        done = run.summary.classified if run is not None else 0
        if isinstance(exc, InvalidNodeError) and run is not None:
            return fail(
                exit_code_for(exc),
                f"stopped at {exc}. Nothing of its batch was written; {done} node(s) "
                f"classified before it (rerun with --skip-invalid to skip such nodes)",
            )
        return fail(
            *command_failure(
                exc,
                interrupted=f"classifying {done} node(s)",
                written=f"{done} node(s) classified and written",
                log=logging.getLogger(__name__),
            )
        )
    finally:
        for closable in (model, source):
            if closable is not None:
                closable.close()
    print(summary.text())
    for node, reason in summary.invalid[:20]:
        print(f"  skipped node {node}: {reason}")
    if summary.skipped > 20:
        print(f"  ... and {summary.skipped - 20} more skipped node(s)")
    return 0


def _batch_module(name: str) -> Any:
    """``memgraph_tf.batch.<name>``, imported after switching TensorFlow's C++ info and warning
    lines off (the variable only counts before TensorFlow is imported)."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    return importlib.import_module(f"memgraph_tf.batch.{name}")


def _score_links(args: argparse.Namespace) -> int:
    """``memgraph-tf score-links`` (:func:`memgraph_tf.batch.link_scoring.run_cli`)."""
    link_scoring = _batch_module("link_scoring")
    from memgraph_tf.beam.runner import parse_params  # standard library only
    from memgraph_tf.client import sources

    return link_scoring.run_cli(args, sources.open_graph, parse_params)


def _refresh(args: argparse.Namespace) -> int:
    """``memgraph-tf refresh`` (:func:`memgraph_tf.batch.refresh.run_cli`)."""
    refresh = _batch_module("refresh")
    from memgraph_tf.client import sources

    return refresh.run_cli(args, sources.open_graph)


def _embed(args: argparse.Namespace) -> int:
    """``memgraph-tf embed`` (:func:`memgraph_tf.batch.embedder.run_cli`; with ``--runner``, a
    Beam pipeline: :func:`memgraph_tf.beam.runner.run_classify_pipeline`)."""
    if getattr(args, "runner", None) or getattr(args, "pipeline_args", None):
        from memgraph_tf.beam.runner import run_classify_pipeline

        return run_classify_pipeline(args, command="embed")
    embedder = _batch_module("embedder")
    from memgraph_tf.client import sources

    return embedder.run_cli(args, sources.open_graph)


def _similar(args: argparse.Namespace) -> int:
    """``memgraph-tf similar`` (:func:`memgraph_tf.batch.retrieval.run_cli`)."""
    retrieval = _batch_module("retrieval")
    from memgraph_tf.batch import link_scoring
    from memgraph_tf.client import sources

    return retrieval.run_cli(args, sources.open_graph, link_scoring.BundleLinkBackend)


def _install_triggers(args: argparse.Namespace) -> int:
    """``memgraph-tf install-triggers``: the Memgraph triggers that write the change log
    (:mod:`memgraph_tf.client.change_log`); ``--dry-run`` prints them (one per line, ``;``
    ended) without opening the graph. A server that refuses one (no triggers, e.g. ArcadeDB) is
    one line naming the trigger, exit 2."""
    from memgraph_tf.client import change_log, sources
    from memgraph_tf.errors import command_failure

    source = None
    try:
        statements = change_log.schema_statements() + change_log.trigger_statements(
            args.id_property, args.log
        )
        if args.dry_run:
            for trigger in statements:
                print(f"{trigger.statement};")
            return 0
        source = sources.open_graph(args.graph)
        installed = change_log.install_triggers(source, statements)
    except (Exception, KeyboardInterrupt) as exc:  # noqa: BLE001 -- errors.command_failure: one line, an exit code
        code, message = command_failure(exc, log=logging.getLogger(__name__))
        print(f"memgraph-tf install-triggers: {message}", file=sys.stderr)
        return code
    finally:
        if source is not None:
            source.close()
    for name in installed:
        print(name)
    return 0


def _demo(args: argparse.Namespace) -> int:

    # before TensorFlow is imported: keep its C++ info and warning lines off the demo's screen
    # (demo.import_tensorflow_quietly filters the start-up lines this variable does not reach)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    from memgraph_tf import demo

    return demo.main(args)


def _add_build_ops(sub: Any) -> None:
    p = sub.add_parser("build-ops", help="compile the UnpackBlob op library (cached)")
    p.add_argument("--force", action="store_true", help="rebuild even if a cached build exists")
    p.add_argument("--cache-dir", default=None, help="override MEMGRAPH_TF_OP_CACHE_DIR")
    p.set_defaults(func=_build_ops)


def _add_install_modules(sub: Any) -> None:
    p = sub.add_parser("install-modules", help="copy the tf_features query modules into DIR")
    p.add_argument("directory", help="Memgraph's query-modules directory")
    p.add_argument("--no-overwrite", action="store_true", help="fail instead of replacing files")
    p.add_argument(
        "--server-python",
        action="append",
        default=None,
        metavar="PYTHON",
        help="the Python Memgraph runs (repeatable): warn when a memgraph_tf installed there "
        "shadows the copied files (default: this Python outside a venv, and /usr/bin/python3)",
    )
    p.set_defaults(func=_install_modules)


def _add_serve(sub: Any) -> None:
    p = sub.add_parser("serve", help="serve SavedModels over TF Serving's REST (and gRPC) API")
    _serve_model_arguments(p)
    _serve_request_arguments(p)
    _serve_runtime_arguments(p)
    p.set_defaults(func=_serve)


def _serve_model_arguments(p: argparse.ArgumentParser) -> None:
    """``serve``: what is served (models, gateway upstream, graph) and where."""
    p.add_argument(
        "model_base_path",
        nargs="?",
        default=None,
        help="BASE with BASE/<version>/saved_model.pb (or --model-config-file, or --upstream)",
    )
    p.add_argument(
        "--model-config-file",
        "--model_config_file",
        dest="model_config_file",
        default=None,
        metavar="FILE",
        help="TF Serving's ModelServerConfig text proto (the models.config export_bundle "
        "writes): several models, version policies and labels",
    )
    p.add_argument(
        "--file-system-poll-wait-seconds",
        "--file_system_poll_wait_seconds",
        dest="file_system_poll_wait_seconds",
        type=float,
        default=1.0,
        metavar="S",
        help="poll the model base paths for new and removed versions every S seconds "
        "(default 1, as TF Serving; 0: load once at start-up)",
    )
    p.add_argument(
        "--max-num-load-retries",
        "--max_num_load_retries",
        dest="max_num_load_retries",
        type=int,
        default=5,
        metavar="N",
        help="a version that fails to load is tried N more times before its status says END "
        "with the error (default 5, as TF Serving)",
    )
    p.add_argument(
        "--load-retry-interval-micros",
        "--load_retry_interval_micros",
        dest="load_retry_interval_micros",
        type=int,
        default=60_000_000,
        metavar="US",
        help="microseconds between load tries (default 60000000: one minute, as TF Serving)",
    )
    p.add_argument(
        "--monitoring-config-file",
        "--monitoring_config_file",
        dest="monitoring_config_file",
        default=None,
        metavar="FILE",
        help="TF Serving's MonitoringConfig text proto; 'prometheus_config { enable: true }' "
        "serves /monitoring/prometheus/metrics (off without it, as TF Serving)",
    )
    p.add_argument(
        "--access-log",
        "--access_log",
        dest="access_log",
        action="store_true",
        help="log one JSON line per request (logger memgraph_tf.serving.access_log; also "
        "MEMGRAPH_TF_ACCESS_LOG=1); off by default",
    )
    p.add_argument(
        "--upstream",
        default=None,
        metavar="HOST:PORT",
        help="gateway mode: hold no model; turn node_id examples into blobs (--graph) and "
        "forward every request to this TF Serving gRPC port",
    )
    p.add_argument(
        "--upstream-timeout-s",
        type=float,
        default=30.0,
        help="gateway: the longest an upstream call may take (default 30; a gRPC request's "
        "own earlier deadline wins)",
    )
    p.add_argument(
        "--bundle",
        default=None,
        metavar="PATH",
        help="gateway: read the sampling settings from this bundle (BASE or BASE/VERSION) "
        "instead of asking the upstream",
    )
    p.add_argument("--model-name", default=None, help="name in URLs (default: BASE's name)")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8501)
    p.add_argument(
        "--graph", default=None, help="Bolt URI (or 'embedded:PATH') to fetch node blobs"
    )
    p.add_argument(
        "--graph-connect-timeout-s",
        type=float,
        default=None,
        help="seconds to reach the --graph server before a node_id request answers 503 "
        "(default: MEMGRAPH_TF_CONNECT_TIMEOUT_S, else 5)",
    )
    p.add_argument(
        "--sampling-seed",
        default=None,
        metavar="N|random",
        help="options.seed of node_id neighbourhoods (default: the bundle's seed, else 0, as "
        "memgraph-tf classify); 'random': new neighbourhoods on every request",
    )
    p.add_argument(
        "--version-label",
        action="append",
        default=[],
        metavar="LABEL=VERSION",
        help="a version label, e.g. stable=1 (repeatable)",
    )


def _serve_request_arguments(p: argparse.ArgumentParser) -> None:
    """``serve``: the limits on requests and connections."""
    p.add_argument(
        "--max-request-bytes",
        type=int,
        default=64 * 1024 * 1024,
        help="bodies above this get 413 (default 64 MiB)",
    )
    p.add_argument(
        "--max-examples",
        type=int,
        default=1024,
        help="examples / instances per request; more get 413 (default 1024)",
    )
    p.add_argument(
        "--max-json-depth",
        type=int,
        default=64,
        help="deepest JSON nesting of a request body; deeper gets 400 (default 64)",
    )
    p.add_argument(
        "--idle-timeout-s",
        type=int,
        default=60,
        help="close connections idle this many seconds (default 60)",
    )
    p.add_argument(
        "--max-connections-per-client",
        type=int,
        default=0,
        metavar="N",
        help="at most N connections from one client address: a new one sheds that client's "
        "connection trickling an unfinished request longest, or is closed when all are busy "
        "(default 0: no cap; clients behind one proxy or NAT share an address)",
    )
    p.add_argument(
        "--request-header-timeout-s",
        type=float,
        default=10.0,
        help="close a connection whose request line and headers are not all received this many "
        "seconds after the request's first byte (the connection's opening for its first "
        "request), however steadily bytes arrive (default 10)",
    )
    p.add_argument(
        "--request-body-timeout-s",
        type=float,
        default=60.0,
        help="answer 408 and close a connection whose request body is not all received this "
        "many seconds after its headers (default 60)",
    )
    p.add_argument(
        "--rest-api-num-threads",
        type=int,
        default=None,
        help="request threads (default: max(8, 4 x CPUs), as TF Serving)",
    )


def _serve_runtime_arguments(p: argparse.ArgumentParser) -> None:
    """``serve``: batching, the gRPC front end and TensorFlow's threads."""
    p.add_argument(
        "--enable-batching",
        action="store_true",
        help="merge concurrent requests of one version and signature into one model "
        "call (TF Serving's --enable_batching)",
    )
    p.add_argument(
        "--max-batch-size", type=int, default=128, help="rows per merged call (default 128)"
    )
    p.add_argument(
        "--batch-timeout-micros",
        type=int,
        default=0,
        help="how long a batch waits for more rows (default 0: runs as soon as a "
        "batch thread is free)",
    )
    p.add_argument(
        "--num-batch-threads",
        type=int,
        default=None,
        help="merged calls running at once (default: CPUs)",
    )
    p.add_argument(
        "--max-enqueued-batches",
        type=int,
        default=100,
        help="batches waiting at most; beyond, 503 (default 100)",
    )
    p.add_argument(
        "--grpc-port",
        type=int,
        default=None,
        help="also serve TF Serving's gRPC API (PredictionService, ModelService) on "
        "this port, over the same loaded model (TF Serving uses 8500)",
    )
    p.add_argument("--grpc-host", default=None, help="gRPC bind address (default: --host)")
    p.add_argument("--grpc-max-workers", type=int, default=None, help="gRPC threads (default 8)")
    p.add_argument(
        "--grpc-max-message-bytes",
        type=int,
        default=None,
        help="gRPC messages above this get RESOURCE_EXHAUSTED (default 64 MiB)",
    )
    p.add_argument(
        "--tensorflow-intra-op-parallelism",
        type=int,
        default=0,
        metavar="N",
        help="threads TensorFlow uses inside one op (default 0: TensorFlow's choice, "
        "the number of cores; TF Serving's --tensorflow_intra_op_parallelism)",
    )
    p.add_argument(
        "--tensorflow-inter-op-parallelism",
        type=int,
        default=0,
        metavar="N",
        help="threads TensorFlow runs independent ops and model calls on (default 0: "
        "TensorFlow's choice; TF Serving's --tensorflow_inter_op_parallelism). "
        "On a small machine under many concurrent requests, 1 and 1 cost less "
        "CPU per request: see docs/serving.md",
    )


def _graph_parser(sub: Any, name: str, graph_help: str, **texts: str) -> Any:
    """The subcommand ``name`` (``texts``: its ``help`` and ``description``) with its required
    ``--graph`` option (``graph_help``)."""
    p = sub.add_parser(name, **texts)
    p.add_argument("--graph", required=True, help=graph_help)
    return p


def _add_classify(sub: Any) -> None:
    p = _graph_parser(
        sub,
        "classify",
        "bolt://HOST:PORT (or neo4j://, +s, +ssc; user and password from "
        "MEMGRAPH_TF_USER / MEMGRAPH_TF_PASSWORD, database MEMGRAPH_TF_DATABASE), or "
        "embedded:NAME / embedded:DIR/NAME (a dataset in-process)",
        help="classify a graph's nodes with a model and write the predictions back",
        description="Classify the nodes of a graph with an exported bundle (in-process, or behind "
        "TF Serving's REST or gRPC API) and write P (class label), P_score and P_version "
        "(model version) on each node; resumable (a rerun skips nodes that carry this "
        "version's prediction) and shardable. See docs/batch-inference.md.",
    )
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument(
        "--model",
        metavar="BUNDLE_DIR",
        help="run a bundle in-process: BASE/NAME (its newest version) or BASE/NAME/VERSION",
    )
    which.add_argument(
        "--serving", metavar="URL", help="TF Serving's REST API, e.g. http://host:8501"
    )
    which.add_argument(
        "--serving-grpc", metavar="HOST:PORT", help="TF Serving's gRPC API, e.g. host:8500"
    )
    p.add_argument(
        "--model-name", default=None, help="the served model's name (--serving, --serving-grpc)"
    )
    p.add_argument(
        "--model-version",
        type=int,
        default=None,
        help="the served version to use (default: the newest available when the run starts)",
    )
    p.add_argument(
        "--label",
        default=None,
        help="classify only nodes with this label (default: the bundle's options.label); a "
        "label the graph does not have is a usage error (exit 2) naming the labels it has",
    )
    p.add_argument(
        "--where",
        default=None,
        metavar="PREDICATE",
        help="a Cypher predicate over n, values as $parameters, e.g. 'n.year >= $year' "
        "(Bolt graphs only)",
    )
    p.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a --where parameter; VALUE is JSON if it parses, else a string (repeatable)",
    )
    p.add_argument(
        "--shard",
        default="0/1",
        metavar="I/N",
        help="classify only the nodes whose id modulo N is I (default 0/1: all)",
    )
    p.add_argument(
        "--batch-size", type=int, default=1024, help="nodes per batch (one write transaction each)"
    )
    p.add_argument(
        "--write-property",
        default="predicted_class",
        metavar="P",
        help="write the class to P, its score to P_score, the model version to P_version",
    )
    p.add_argument(
        "--skip-invalid",
        action="store_true",
        help="report and skip nodes that cannot be classified instead of stopping",
    )
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="also reclassify nodes that already carry this model version's prediction",
    )
    p.add_argument(
        "--fetch-workers",
        type=int,
        default=1,
        help="batches fetched concurrently: calls in flight over Bolt, forked sampling "
        "processes on an embedded graph",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    from memgraph_tf.beam.runner import add_runner_arguments  # imports no Beam

    add_runner_arguments(p)
    p.set_defaults(func=_classify)


#: The batch subcommands' ``help`` and ``description`` (:func:`_add_batch_command`), by name.
_BATCH_TEXTS = {
    "score-links": dict(
        help="score candidate pairs with a link model and write them back as relationships",
        description="Score the top K targets per source node, or the pairs a Cypher query "
        "returns, with a link model and MERGE (s)-[:PREDICTED_LINK {score, model_version}]->(t); "
        "resumable and shardable. See docs/batch-inference.md.",
    ),
    "embed": dict(
        help="write each node's embedding from a bundle's encoder back as a list property",
        description="Run a bundle's encoder (a node model's last hidden layer, a link model's "
        "source or target encoder) over every node and write P (the embedding) and P_version; "
        "resumable and shardable; --create-index adds Memgraph's vector index. See "
        "docs/batch-inference.md.",
    ),
    "similar": dict(
        help="the k nodes nearest to a node by embedding (vector index or exact search)",
        description="The k nodes nearest to --node-id by their embedding property, from "
        "Memgraph's vector index when there is one, else an exact search; --rerank-model "
        "re-ranks them by a link model. See docs/batch-inference.md.",
    ),
    "refresh": dict(
        help="keep predictions fresh: re-score only the nodes the change log's changes affect",
        description="Read the change log from this model's cursor, re-score the nodes whose "
        "sampled neighbourhood can hold a changed node or relationship (the bundle's sampling "
        "steps walked backwards inside the database), write their predictions as classify does, "
        "then move the cursor. Once, or --follow. See docs/batch-inference.md.",
    ),
}


def _add_batch_command(sub: Any, name: str, module: str, func: Any) -> argparse.ArgumentParser:
    """Add the subcommand ``name`` (its ``help`` and ``description`` from :data:`_BATCH_TEXTS`),
    its arguments from ``memgraph_tf.batch.<module>.add_arguments``, running ``func``; returns
    its parser. The batch modules import no TensorFlow until they run, so ``--help`` stays
    instant."""
    p = sub.add_parser(name, **_BATCH_TEXTS[name])
    importlib.import_module(f"memgraph_tf.batch.{module}").add_arguments(p)
    p.set_defaults(func=func)
    return p


def _add_score_links(sub: Any) -> None:
    _add_batch_command(sub, "score-links", "link_scoring", _score_links)


def _add_embed(sub: Any) -> None:
    p = _add_batch_command(sub, "embed", "embedder", _embed)
    from memgraph_tf.beam.runner import add_runner_arguments  # imports no Beam

    add_runner_arguments(p)


def _add_similar(sub: Any) -> None:
    _add_batch_command(sub, "similar", "retrieval", _similar)


def _add_install_triggers(sub: Any) -> None:
    p = _graph_parser(
        sub,
        "install-triggers",
        "bolt://HOST:PORT of a Memgraph server (user and password from "
        "MEMGRAPH_TF_USER / MEMGRAPH_TF_PASSWORD); not opened with --dry-run",
        help="install the Memgraph triggers that log every change (for refreshing predictions)",
        description="Create the AFTER COMMIT triggers that append each created, updated and "
        "deleted node and relationship to the change log (:MemgraphTfChange nodes). See "
        "docs/batch-inference.md, 'The change log'.",
    )
    p.add_argument(
        "--id-property",
        default=None,
        metavar="P",
        help="record each element's (and each relationship endpoint's) property P as its key",
    )
    p.add_argument(
        "--log",
        default="default",
        metavar="NAME",
        help="the log's name (default 'default'): part of the trigger names",
    )
    p.add_argument(
        "--dry-run", action="store_true", help="print the statements instead of running them"
    )
    p.set_defaults(func=_install_triggers)


def _add_refresh(sub: Any) -> None:
    _add_batch_command(sub, "refresh", "refresh", _refresh)


def _add_demo(sub: Any) -> None:
    p = sub.add_parser(
        "demo",
        help="the end-to-end demo: dataset -> training -> bundles -> serving -> "
        "batch inference -> pictures and report.html",
    )
    from memgraph_tf import demo  # standard library only until it runs

    demo.add_arguments(p)
    p.set_defaults(func=_demo)


SUBCOMMANDS = (
    _add_build_ops,
    _add_install_modules,
    _add_serve,
    _add_classify,
    _add_score_links,
    _add_embed,
    _add_similar,
    _add_install_triggers,
    _add_refresh,
    _add_demo,
)
"""One function per subcommand, each adding its parser (in ``--help``'s order)."""


def build_parser() -> argparse.ArgumentParser:
    """The ``memgraph-tf`` parser: the global options and one subparser per entry of
    :data:`SUBCOMMANDS`."""
    parser = argparse.ArgumentParser(prog="memgraph-tf", description=__doc__)
    parser.add_argument("-v", "--verbose", action="store_true", help="log at DEBUG level")
    sub = parser.add_subparsers(dest="command", required=True)
    for add in SUBCOMMANDS:
        add(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(levelname)s %(name)s: %(message)s",
    )
    return int(args.func(args) or 0)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
