"""The ``memgraph-tf`` command line.

Each subcommand imports its implementation lazily, so ``memgraph-tf --help`` is instant and
``install-modules`` works without TensorFlow.
"""

from __future__ import annotations

import argparse
import logging
import sys


def _build_ops(args: argparse.Namespace) -> int:
    from memgraph_tf import ops

    path = ops.build_library(force=args.force, cache_dir=args.cache_dir)
    print(path)
    return 0


def _install_modules(args: argparse.Namespace) -> int:
    """``memgraph-tf install-modules DIR``: the written paths on stdout, exit 0; a user error (an
    existing file with ``--no-overwrite``, a DIR that is a file or not writable, a missing
    package file) is one line on stderr and exit 2, never a traceback."""
    from memgraph_tf import deploy

    try:
        paths = deploy.install_modules(args.directory, overwrite=not args.no_overwrite)
    except (OSError, ValueError) as exc:
        logging.getLogger(__name__).debug("install-modules failed", exc_info=True)
        sys.stderr.write(f"memgraph-tf install-modules: {type(exc).__name__}: {exc}\n")
        return 2
    for path in paths:
        print(path)
    return 0


def open_graph_source(uri: str):
    """A graph source for ``serve --graph``. ``embedded:DIR/NAME`` loads the Planetoid dataset NAME
    from ``DIR/ind.NAME.*`` into an in-process graph that runs the unchanged query modules; anything
    else is a Bolt URI for :func:`memgraph_tf.client.connect`, which takes the user name and password
    from ``MEMGRAPH_TF_USER`` / ``MEMGRAPH_TF_PASSWORD`` (never a command line, never a bundle)."""
    import pathlib

    from memgraph_tf import client

    if uri.startswith("embedded:"):
        from memgraph_tf.datasets import planetoid_graph

        path = pathlib.Path(uri[len("embedded:"):])
        return client.EmbeddedSource(planetoid_graph(path.name, path.parent))
    return client.connect(uri)


def _serve(args: argparse.Namespace) -> int:
    """``memgraph-tf serve``: exit 0 after Ctrl-C; a user error (missing or empty model
    directory, bad label, busy port, unreachable --graph) is one line on stderr and exit 2."""
    import os

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # before TensorFlow is imported
    # The CLI owns the graph connection: the server only receives a source object.
    from memgraph_tf.serving import server

    return server.run_cli(args, open_graph_source)


def _demo(args: argparse.Namespace) -> int:
    from memgraph_tf import demo

    return demo.main(args)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="memgraph-tf", description=__doc__)
    parser.add_argument("-v", "--verbose", action="store_true", help="log at DEBUG level")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("build-ops", help="compile the UnpackBlob op library (cached)")
    p.add_argument("--force", action="store_true", help="rebuild even if a cached build exists")
    p.add_argument("--cache-dir", default=None, help="override MEMGRAPH_TF_OP_CACHE_DIR")
    p.set_defaults(func=_build_ops)

    p = sub.add_parser("install-modules", help="copy the tf_features query modules into DIR")
    p.add_argument("directory", help="Memgraph's query-modules directory")
    p.add_argument("--no-overwrite", action="store_true", help="fail instead of replacing files")
    p.set_defaults(func=_install_modules)

    p = sub.add_parser("serve", help="serve SavedModels over TF Serving's REST API")
    p.add_argument("model_base_path", help="BASE with BASE/<version>/saved_model.pb")
    p.add_argument("--model-name", default=None, help="name in URLs (default: BASE's name)")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8501)
    p.add_argument("--graph", default=None, help="Bolt URI (or 'embedded:PATH') to fetch node blobs")
    p.add_argument("--max-request-bytes", type=int, default=64 * 1024 * 1024,
                   help="bodies above this get 413 (default 64 MiB)")
    p.add_argument("--version-label", action="append", default=[], metavar="LABEL=VERSION",
                   help="a version label, e.g. stable=1 (repeatable)")
    p.add_argument("--max-examples", type=int, default=1024,
                   help="examples / instances per request; more get 413 (default 1024)")
    p.add_argument("--max-json-depth", type=int, default=64,
                   help="deepest JSON nesting of a request body; deeper gets 400 (default 64)")
    p.add_argument("--idle-timeout-s", type=int, default=60,
                   help="close connections idle this many seconds (default 60)")
    p.add_argument("--rest-api-num-threads", type=int, default=None,
                   help="request threads (default: max(8, 4 x CPUs), as TF Serving)")
    p.add_argument("--enable-batching", action="store_true",
                   help="merge concurrent requests of one version and signature into one model "
                        "call (TF Serving's --enable_batching)")
    p.add_argument("--max-batch-size", type=int, default=128,
                   help="rows per merged call (default 128)")
    p.add_argument("--batch-timeout-micros", type=int, default=0,
                   help="how long a batch waits for more rows (default 0: runs as soon as a "
                        "batch thread is free)")
    p.add_argument("--num-batch-threads", type=int, default=None,
                   help="merged calls running at once (default: CPUs)")
    p.add_argument("--max-enqueued-batches", type=int, default=100,
                   help="batches waiting at most; beyond, 503 (default 100)")
    p.set_defaults(func=_serve)

    p = sub.add_parser("demo", help="the end-to-end demo (Cora: modules -> training -> serving)")
    p.add_argument("--dataset", default="cora", choices=["cora", "citeseer"])
    p.add_argument("--workdir", default=None, help="where to write the bundle (default: temp dir)")
    p.set_defaults(func=_demo)
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
