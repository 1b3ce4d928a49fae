#!/usr/bin/env python3
"""Converts the Planetoid files (ind.<name>.*) into the compact form shipped in the package.

    .venv/bin/python scripts/convert_planetoid.py [--root DIR] [--out DIR] [NAME ...]

NAME defaults to cora and citeseer; --root to memgraph_tf.datasets.planetoid_root (the shared
datasets folder beside the repository, or $MEMGRAPH_TF_DATASETS); --out to
memgraph_tf/data/planetoid. Each dataset is parsed with memgraph_tf.datasets.load_planetoid, its
class sizes are checked against the LINQS originals (the evidence for the class names), and it is
written with save_compact. tests/test_datasets.py checks that the packaged files equal a fresh
conversion.
"""

from __future__ import annotations

import argparse
import pathlib
import sys

from memgraph_tf import datasets


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "names", nargs="*", metavar="NAME", help="datasets to convert (default: cora citeseer)"
    )
    parser.add_argument(
        "--root", default=None, help="folder holding ind.<name>.* (default: planetoid_root)"
    )
    parser.add_argument(
        "--out", default=str(datasets.DATA_DIR), help="output folder (default: the package's)"
    )
    args = parser.parse_args(argv)
    unknown = sorted(set(args.names) - set(datasets.PACKAGED))
    if unknown:
        parser.error(f"NAME: expected {' or '.join(datasets.PACKAGED)}, got {', '.join(unknown)}")
    for name in args.names or datasets.PACKAGED:
        root = args.root if args.root is not None else datasets.planetoid_root(name)
        data = datasets.load_planetoid(name, root)
        datasets.check_class_sizes(data)
        path = datasets.save_compact(data, pathlib.Path(args.out) / f"{name}.npz")
        sizes = ", ".join(f"{c} {n}" for c, n in zip(data.class_names, datasets.CLASS_SIZES[name]))
        print(
            f"{name}: {data.num_nodes} nodes, {len(data.edges)} edges, {data.features.shape[1]} "
            f"features ({int(data.features.sum())} ones); classes {sizes} -> {path.name} "
            f"({path.stat().st_size} bytes)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
