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
    from memgraph_tf import deploy

    for path in deploy.install_modules(args.directory, overwrite=not args.no_overwrite):
        print(path)
    return 0


def open_graph_source(uri: str):
    """A graph source for ``serve --graph``. ``embedded:NAME`` loads a dataset shipped in the package
    (``cora``, ``citeseer``; or ``synthetic``), ``embedded:DIR/NAME`` the Planetoid dataset NAME from
    ``DIR/ind.NAME.*``, into an in-process graph that runs the unchanged query modules; anything
    else is a Bolt URI for :func:`memgraph_tf.client.connect`, which takes the user name and password
    from ``MEMGRAPH_TF_USER`` / ``MEMGRAPH_TF_PASSWORD`` (never a command line, never a bundle)."""
    import pathlib

    from memgraph_tf import client

    if uri.startswith("embedded:"):
        from memgraph_tf.datasets import planetoid_graph

        spec = uri[len("embedded:"):]
        if "/" not in spec:
            return client.EmbeddedSource(planetoid_graph(spec))
        path = pathlib.Path(spec)
        return client.EmbeddedSource(planetoid_graph(path.name, path.parent))
    return client.connect(uri)


def _serve(args: argparse.Namespace) -> int:
    # The CLI owns the graph connection: the server only receives a source object.
    from memgraph_tf.serving import server

    source = open_graph_source(args.graph) if getattr(args, "graph", None) else None
    try:
        return server.main(args, graph_source=source)
    finally:
        if source is not None and hasattr(source, "close"):
            source.close()


def _demo(args: argparse.Namespace) -> int:
    import os

    # before TensorFlow is imported: keep its C++ info and warning lines off the demo's screen
    # (demo.import_tensorflow_quietly filters the start-up lines this variable does not reach)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
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
    p.add_argument("--max-request-bytes", type=int, default=64 * 1024 * 1024)
    p.add_argument("--version-label", action="append", default=[], metavar="LABEL=VERSION",
                   help="a version label, e.g. stable=1 (repeatable)")
    p.set_defaults(func=_serve)

    from memgraph_tf import demo  # standard library only until it runs

    p = sub.add_parser("demo", help="the end-to-end demo: dataset -> training -> bundles -> serving -> "
                                    "batch inference -> pictures and report.html")
    demo.add_arguments(p)
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
