"""Where the Planetoid datasets (Cora, Citeseer) are found, for the demo, the benchmarks and the tests.

The files are not shipped in the package (see README, "Data"); they are looked up in
``$MEMGRAPH_TF_DATASETS/planetoid``, ``$MEMGRAPH_TF_DATASETS`` and ``../shared/datasets/planetoid``
beside the repository, in that order.
"""

from __future__ import annotations

import os
import pathlib


def planetoid_candidates() -> list[pathlib.Path]:
    """The directories :func:`planetoid_root` tries, in order."""
    candidates = []
    env = os.environ.get("MEMGRAPH_TF_DATASETS")
    if env:
        candidates += [pathlib.Path(env) / "planetoid", pathlib.Path(env)]
    repo = pathlib.Path(__file__).resolve().parent.parent
    candidates.append(repo.parent / "shared" / "datasets" / "planetoid")
    return candidates


def planetoid_root(name: str = "cora") -> pathlib.Path:
    """The first candidate directory holding ``ind.<name>.*``; FileNotFoundError listing all tried."""
    tried = planetoid_candidates()
    for c in tried:
        if (c / f"ind.{name}.graph").exists():
            return c
    raise FileNotFoundError(
        f"Planetoid files: expected ind.{name}.* in one of " + ", ".join(str(c) for c in tried)
        + "; set MEMGRAPH_TF_DATASETS to the directory holding planetoid/"
    )
