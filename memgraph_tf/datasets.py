"""The Planetoid datasets (Cora, Citeseer, Pubmed): where the files are, how to read them, and the
graph the demo, the benchmarks and the tests run on.

* :func:`planetoid_root` -- the directory holding ``ind.<name>.*``. The files are not shipped in the
  package (see README, "Data"); they are looked up in ``$MEMGRAPH_TF_DATASETS/planetoid``,
  ``$MEMGRAPH_TF_DATASETS`` and ``../shared/datasets/planetoid`` beside the repository, in that order.
* :func:`load_planetoid` -- the parsed dataset (:class:`Planetoid`: features, labels, the standard
  split, the undirected edges), with numpy and scipy (the files are pickled scipy matrices).
* :func:`planetoid_graph` -- that dataset as an :class:`~memgraph_tf.embedded.EmbeddedGraph`, built
  with the embedded runtime's generic loader (:meth:`~memgraph_tf.embedded.EmbeddedGraph.from_edge_list`).

Importing this module needs the standard library alone.
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
import pickle
import warnings
from typing import TYPE_CHECKING, Any, Iterable

if TYPE_CHECKING:
    from memgraph_tf.embedded import EmbeddedGraph

PLANETOID_PARTS = ("x", "y", "tx", "ty", "allx", "ally", "graph")
"""The pickled parts of a Planetoid dataset (``ind.<name>.<part>``), besides ``test.index``."""
VAL_SIZE = 500
"""The validation nodes of the standard split: the ``VAL_SIZE`` nodes after the training nodes."""


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


@dataclasses.dataclass(frozen=True)
class Planetoid:
    """A Planetoid dataset with the standard split (Yang, Cohen, Salakhutdinov, ICML 2016).

    Node ``i`` has the feature row ``features[i]`` (float32 ``[num_nodes, width]``), the class
    ``labels[i]`` (int64; -1 for the nodes without a label, Citeseer's isolated test-range nodes) and
    the split ``split[i]``: ``train`` (the first ``len(y)`` nodes), ``val`` (the next
    :data:`VAL_SIZE`), ``test`` (the nodes in ``test.index``) or ``none``. ``edges`` holds each
    undirected pair once as ``(min, max)``, self-loops once, in the order of the adjacency file.
    """

    name: str
    features: Any
    labels: Any
    split: list[str]
    edges: list[tuple[int, int]]

    @property
    def num_nodes(self) -> int:
        return len(self.split)


def load_planetoid(name: str, root: str | os.PathLike[str] | None = None) -> Planetoid:
    """Reads ``root/ind.<name>.*`` (``root`` None: :func:`planetoid_root`); FileNotFoundError naming
    the first missing file. The test rows ``tx``/``ty`` belong to the nodes of ``test.index`` in
    its line order; the graph may name more nodes than there are feature rows (Citeseer)."""
    import numpy as np

    root = pathlib.Path(root) if root is not None else planetoid_root(name)
    data = {}
    for part in PLANETOID_PARTS:
        path = root / f"ind.{name}.{part}"
        if not path.exists():
            raise FileNotFoundError(f"Planetoid {name!r}: expected {path}, got no such file")
        with open(path, "rb") as f, warnings.catch_warnings():
            # the pickles name scipy.sparse.csr.csr_matrix, a deprecated alias
            warnings.simplefilter("ignore", DeprecationWarning)
            data[part] = pickle.load(f, encoding="latin1")
    test_index = [int(line) for line in (root / f"ind.{name}.test.index").read_text().split()]
    allx, tx = data["allx"], data["tx"]
    ally, ty = np.asarray(data["ally"]), np.asarray(data["ty"])
    lo, hi = min(test_index), max(test_index)
    n = max(allx.shape[0] + (hi - lo + 1), len(data["graph"]))
    width = allx.shape[1]
    features = np.zeros((n, width), dtype=np.float32)
    onehot = np.zeros((n, ally.shape[1]), dtype=np.float32)
    features[: allx.shape[0]] = allx.toarray()
    onehot[: allx.shape[0]] = ally
    tx_dense = tx.toarray()
    for row, node in enumerate(test_index):  # tx row j belongs to the j-th line of test.index
        features[node] = tx_dense[row]
        onehot[node] = ty[row]
    labels = np.where(onehot.sum(axis=1) > 0, onehot.argmax(axis=1), -1).astype(np.int64)
    split = ["none"] * n
    n_train = np.asarray(data["y"]).shape[0]
    for i in range(n_train):
        split[i] = "train"
    for i in range(n_train, n_train + VAL_SIZE):
        split[i] = "val"
    for i in test_index:
        split[i] = "test"
    edges = []
    seen = set()
    for src, dsts in data["graph"].items():
        for dst in dsts:
            a, b = (src, dst) if src <= dst else (dst, src)
            if (a, b) not in seen and b < n:
                seen.add((a, b))
                edges.append((a, b))
    return Planetoid(name=name, features=features, labels=labels, split=split, edges=edges)


def planetoid_graph(
    name: str,
    root: str | os.PathLike[str] | None = None,
    *,
    label: str = "Paper",
    edge_type: str = "CITES",
    modules: Iterable[str | os.PathLike[str]] | None = None,
) -> "EmbeddedGraph":
    """Cora / Citeseer / Pubmed (:func:`load_planetoid`) as an in-process graph running the query
    modules (``modules``: as for :class:`~memgraph_tf.embedded.EmbeddedGraph`).

    Node ``i`` (internal id ``i``, label ``label``) has properties ``id`` (= i), ``features`` (list
    of floats), ``label`` (int class, -1 without one) and ``split``; each undirected pair is one
    ``edge_type`` edge ``min -> max`` (use ``direction: 'both'``).
    """
    from memgraph_tf.embedded import EmbeddedGraph

    data = load_planetoid(name, root)
    cache: dict[float, float] = {}  # share float objects: Planetoid features are mostly 0/1
    rows = [[cache.setdefault(v, v) for v in row.tolist()] for row in data.features]
    return EmbeddedGraph.from_edge_list(
        data.edges,
        num_nodes=data.num_nodes,
        label=label,
        edge_type=edge_type,
        node_properties={
            "id": list(range(data.num_nodes)),
            "features": rows,
            "label": [int(v) for v in data.labels.tolist()],
            "split": data.split,
        },
        modules=modules,
    )
