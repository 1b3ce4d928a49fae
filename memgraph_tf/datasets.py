"""The datasets the demo, the README, the benchmarks and the tests run on: Cora and Citeseer
(Planetoid split) and a small synthetic graph.

* :func:`load_dataset` -- a :class:`Planetoid` by name: ``cora`` / ``citeseer`` from the compact
  copies shipped inside the package (``memgraph_tf/data/planetoid/<name>.npz``; no network, no files
  beside the repository), ``synthetic`` generated (:func:`synthetic`), or with ``root`` parsed from
  the original Planetoid files.
* :func:`planetoid_graph` -- a dataset as an :class:`~memgraph_tf.embedded.EmbeddedGraph` (the
  in-process runtime that runs the unchanged query modules);
  :func:`memgraph_tf.client.loaders.load_into_graph` writes one into a real Memgraph (any Bolt +
  openCypher server) with ``UNWIND`` batches.
* :func:`load_planetoid` -- parses the original files ``ind.<name>.*`` (Python-2 pickles of scipy
  matrices; needs scipy). :func:`planetoid_root` finds them in ``$MEMGRAPH_TF_DATASETS/planetoid``,
  ``$MEMGRAPH_TF_DATASETS`` or ``../shared/datasets/planetoid`` beside the repository.
* :func:`compact_arrays` / :func:`save_compact` / :func:`load_compact` -- the packaged form, written
  by ``scripts/convert_planetoid.py``: 0/1 features as CSR column indices (``int16``), labels
  ``int8`` (-1: no label), each undirected edge once (``int16`` pairs), the split as index arrays,
  the class names. Cora and Citeseer come from the Planetoid project (Yang, Cohen, Salakhutdinov,
  ICML 2016; MIT licence: ``NOTICE``, ``memgraph_tf/data/planetoid/LICENSE``).

Class names are the original LINQS datasets' (:data:`CLASS_NAMES`), matched by class size: every
class size is distinct, and :func:`check_class_sizes` checks the match on every conversion.

Importing this module needs the standard library alone.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import pathlib
import pickle
import warnings
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memgraph_tf.embedded import EmbeddedGraph

logger = logging.getLogger(__name__)

PLANETOID_PARTS = ("x", "y", "tx", "ty", "allx", "ally", "graph")
"""The pickled parts of a Planetoid dataset (``ind.<name>.<part>``), besides ``test.index``."""
VAL_SIZE = 500
"""The validation nodes of the standard split: the ``VAL_SIZE`` nodes after the training nodes."""

PACKAGED = ("cora", "citeseer")
"""The datasets shipped inside the package (``memgraph_tf/data/planetoid/<name>.npz``)."""
DATASETS = PACKAGED + ("synthetic",)
"""Every name :func:`load_dataset` knows without a ``root``."""

CLASS_NAMES: dict[str, tuple[str, ...]] = {
    "cora": (
        "Theory",
        "Reinforcement_Learning",
        "Genetic_Algorithms",
        "Neural_Networks",
        "Probabilistic_Methods",
        "Case_Based",
        "Rule_Learning",
    ),
    "citeseer": ("AI", "ML", "IR", "DB", "Agents", "HCI"),
}
"""Planetoid label index -> the original LINQS class name."""
CLASS_SIZES: dict[str, tuple[int, ...]] = {
    "cora": (351, 217, 418, 818, 426, 298, 180),
    "citeseer": (249, 590, 668, 701, 596, 508),
}
"""Nodes per class (all nodes with a label) in the original LINQS datasets, in the order of
:data:`CLASS_NAMES`: all distinct, so they fix which Planetoid label index is which class."""

PUBLISHED_ACCURACY: dict[str, dict[str, float]] = {
    "cora": {"GCN": 0.815, "GAT": 0.830},
    "citeseer": {"GCN": 0.703, "GAT": 0.725},
}
"""Published test accuracy on the Planetoid split: GCN (Kipf & Welling, ICLR 2017, Table 2) and GAT
(Velickovic et al., ICLR 2018)."""

DATA_DIR = pathlib.Path(__file__).resolve().parent / "data" / "planetoid"
"""Where the packaged datasets are."""
COMPACT_FORMAT = 1
"""Version of the packaged form (the ``format`` array of each ``.npz``)."""


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
    """The first candidate directory holding ``ind.<name>.*``; FileNotFoundError listing all
    tried."""
    tried = planetoid_candidates()
    for c in tried:
        if (c / f"ind.{name}.graph").exists():
            return c
    raise FileNotFoundError(
        f"Planetoid files: expected ind.{name}.* in one of "
        + ", ".join(str(c) for c in tried)
        + "; set MEMGRAPH_TF_DATASETS to the directory holding planetoid/"
    )


@dataclasses.dataclass(frozen=True)
class Planetoid:
    """A Planetoid dataset with the standard split (Yang, Cohen, Salakhutdinov, ICML 2016).

    Node ``i`` has the feature row ``features[i]`` (float32 ``[num_nodes, width]``), the class
    ``labels[i]`` (int64; -1 for the nodes without a label, Citeseer's isolated test-range nodes)
    and the split ``split[i]``: ``train`` (the first ``len(y)`` nodes), ``val`` (the next
    :data:`VAL_SIZE`), ``test`` (the nodes in ``test.index``) or ``none``. ``edges`` holds each
    undirected pair once as ``(min, max)``, self-loops once, in the order of the adjacency file.
    ``class_names[c]`` names class ``c`` (empty when unknown).
    """

    name: str
    features: Any
    labels: Any
    split: list[str]
    edges: list[tuple[int, int]]
    class_names: tuple[str, ...] = ()

    @property
    def num_nodes(self) -> int:
        return len(self.split)

    @property
    def num_classes(self) -> int:
        """``len(class_names)`` when known, else 1 + the largest label."""
        return len(self.class_names) if self.class_names else int(self.labels.max()) + 1

    def ids(self, split: str) -> list[int]:
        """The nodes of one split (``train``, ``val``, ``test`` or ``none``), ascending."""
        return [i for i, s in enumerate(self.split) if s == split]


def load_planetoid(name: str, root: str | os.PathLike[str] | None = None) -> Planetoid:
    """Parses the original files ``root/ind.<name>.*`` (``root`` None: :func:`planetoid_root`);
    FileNotFoundError naming the first missing file. The test rows ``tx``/``ty`` belong to the nodes
    of ``test.index`` in its line order; the graph may name more nodes than there are feature rows
    (Citeseer). Class names from :data:`CLASS_NAMES` (not checked here:
    :func:`check_class_sizes`)."""
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
    return Planetoid(
        name=name,
        features=features,
        labels=labels,
        split=split,
        edges=edges,
        class_names=CLASS_NAMES.get(name, ()),
    )


# ------------------------------------------------------------------------------------------------
# the packaged (compact) form
# ------------------------------------------------------------------------------------------------

COMPACT_KEYS = (
    "format",
    "name",
    "num_nodes",
    "width",
    "indptr",
    "indices",
    "labels",
    "edges",
    "train",
    "val",
    "test",
    "class_names",
)
"""The arrays of a packaged dataset (see the module docstring)."""


def check_class_sizes(data: Planetoid) -> None:
    """Raises ValueError unless every class of ``data`` has the size :data:`CLASS_SIZES` gives its
    name (the evidence that :data:`CLASS_NAMES` is the right mapping); other datasets pass."""
    import numpy as np

    expected = CLASS_SIZES.get(data.name)
    if expected is None:
        return
    labels = np.asarray(data.labels)
    got = tuple(int(c) for c in np.bincount(labels[labels >= 0], minlength=len(expected)))
    if got != expected:
        raise ValueError(
            f"{data.name}: expected class sizes {expected} (LINQS: "
            f"{', '.join(CLASS_NAMES[data.name])}), got {got}"
        )


def compact_arrays(data: Planetoid) -> dict[str, Any]:
    """``data`` in the packaged form: ``{key: numpy array}`` for :data:`COMPACT_KEYS`. ValueError
    when a feature is not 0/1, a label does not fit int8, or a node id does not fit int16."""
    import numpy as np

    features = np.asarray(data.features)
    if not np.isin(features, (0.0, 1.0)).all():
        raise ValueError(f"{data.name}: expected 0/1 features (bag of words), got other values")
    n, width = features.shape
    if n > np.iinfo(np.int16).max or width > np.iinfo(np.int16).max:
        raise ValueError(
            f"{data.name}: expected fewer than 32768 nodes and features, got {n} x {width}"
        )
    labels = np.asarray(data.labels)
    if labels.min() < -1 or labels.max() > np.iinfo(np.int8).max:
        raise ValueError(
            f"{data.name}: expected labels in -1..127, got {labels.min()}..{labels.max()}"
        )
    rows, cols = np.nonzero(features)  # row-major: CSR order
    indptr = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(np.bincount(rows, minlength=n), out=indptr[1:])
    split = np.asarray(data.split)
    return {
        "format": np.asarray(COMPACT_FORMAT, dtype=np.int32),
        "name": np.asarray(data.name),
        "num_nodes": np.asarray(n, dtype=np.int32),
        "width": np.asarray(width, dtype=np.int32),
        "indptr": indptr,
        "indices": cols.astype(np.int16),
        "labels": labels.astype(np.int8),
        "edges": np.asarray(data.edges, dtype=np.int16).reshape(-1, 2),
        "train": np.flatnonzero(split == "train").astype(np.int16),
        "val": np.flatnonzero(split == "val").astype(np.int16),
        "test": np.flatnonzero(split == "test").astype(np.int16),
        "class_names": np.asarray(list(data.class_names), dtype=str),
    }


def save_compact(data: Planetoid, path: str | os.PathLike[str]) -> pathlib.Path:
    """Writes :func:`compact_arrays` of ``data`` to ``path`` (a compressed ``.npz``); returns it."""
    import numpy as np

    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        np.savez_compressed(f, **compact_arrays(data))
    return path


def read_compact(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The arrays of a packaged ``.npz`` (no pickles); ValueError for another format or missing
    keys."""
    import numpy as np

    with np.load(path, allow_pickle=False) as npz:
        arrays = {k: npz[k] for k in npz.files}
    missing = [k for k in COMPACT_KEYS if k not in arrays]
    if missing:
        raise ValueError(
            f"{path}: expected the arrays {', '.join(COMPACT_KEYS)}, missing {', '.join(missing)}"
        )
    if int(arrays["format"]) != COMPACT_FORMAT:
        raise ValueError(f"{path}: expected format {COMPACT_FORMAT}, got {int(arrays['format'])}")
    return arrays


def from_compact(arrays: Mapping[str, Any]) -> Planetoid:
    """The :class:`Planetoid` a :func:`compact_arrays` result holds (dense float32 features)."""
    import numpy as np

    n, width = int(arrays["num_nodes"]), int(arrays["width"])
    indptr = np.asarray(arrays["indptr"], dtype=np.int64)
    features = np.zeros((n, width), dtype=np.float32)
    rows = np.repeat(np.arange(n), np.diff(indptr))
    features[rows, np.asarray(arrays["indices"], dtype=np.int64)] = 1.0
    split = ["none"] * n
    for name in ("train", "val", "test"):
        for i in arrays[name].tolist():
            split[i] = name
    edges = [(int(a), int(b)) for a, b in np.asarray(arrays["edges"]).tolist()]
    return Planetoid(
        name=str(arrays["name"]),
        features=features,
        labels=np.asarray(arrays["labels"], dtype=np.int64),
        split=split,
        edges=edges,
        class_names=tuple(str(c) for c in arrays["class_names"].tolist()),
    )


def packaged_path(name: str) -> pathlib.Path:
    """The packaged file of ``name`` (one of :data:`PACKAGED`); ValueError for another name."""
    if name not in PACKAGED:
        raise ValueError(
            f"dataset: expected one of {', '.join(PACKAGED)} (shipped in the package), got {name!r}"
        )
    return DATA_DIR / f"{name}.npz"


def load_compact(name: str) -> Planetoid:
    """A packaged dataset (:data:`PACKAGED`), read from inside the package."""
    path = packaged_path(name)
    if not path.exists():
        raise FileNotFoundError(
            f"{name}: expected the packaged file {path} (regenerate it with "
            "scripts/convert_planetoid.py)"
        )
    return from_compact(read_compact(path))


# ------------------------------------------------------------------------------------------------
# a small synthetic graph (CI)
# ------------------------------------------------------------------------------------------------

SYNTHETIC_CLASSES = ("red", "green", "blue", "yellow")


def synthetic(
    num_nodes: int = 400,
    width: int = 64,
    *,
    seed: int = 0,
    homophily: float = 0.85,
    mean_degree: float = 4.0,
) -> Planetoid:
    """A small random graph whose labels a 2-layer GraphSAGE learns in a few dozen steps.

    Node ``i`` has class ``i % 4`` (:data:`SYNTHETIC_CLASSES`); its 0/1 features switch on a few of
    its class's "topic" columns (each class owns ``width // 4`` of them) plus a few random ones; its
    edges (``mean_degree`` per node on average) stay inside its class with probability
    ``homophily``. Split: 20 training nodes per class, 80 validation, 160 test, the rest unsplit.
    Same ``seed``, same graph.
    """
    import numpy as np

    classes = len(SYNTHETIC_CLASSES)
    if num_nodes < 300 or width < 4 * classes:
        raise ValueError(
            f"synthetic: expected num_nodes >= 300 and width >= {4 * classes}, got "
            f"{num_nodes} and {width}"
        )
    rng = np.random.default_rng(seed)
    labels = np.arange(num_nodes) % classes
    topic = width // classes
    features = np.zeros((num_nodes, width), dtype=np.float32)
    for i, c in enumerate(labels):
        features[i, c * topic + rng.choice(topic, size=3, replace=False)] = 1.0
        features[i, rng.choice(width, size=3, replace=False)] = 1.0
    by_class = [np.flatnonzero(labels == c) for c in range(classes)]
    edges: set[tuple[int, int]] = set()
    while len(edges) < int(num_nodes * mean_degree / 2):
        a = int(rng.integers(num_nodes))
        pool = by_class[labels[a]] if rng.random() < homophily else np.arange(num_nodes)
        b = int(rng.choice(pool))
        if a != b:
            edges.add((min(a, b), max(a, b)))
    order = rng.permutation(num_nodes)
    split = ["none"] * num_nodes
    train = [int(i) for c in range(classes) for i in order[labels[order] == c][:20]]
    chosen = set(train)
    rest = [int(i) for i in order if i not in chosen]
    for i in train:
        split[i] = "train"
    for i in rest[:80]:
        split[i] = "val"
    for i in rest[80:240]:
        split[i] = "test"
    return Planetoid(
        name="synthetic",
        features=features,
        labels=labels.astype(np.int64),
        split=split,
        edges=sorted(edges),
        class_names=SYNTHETIC_CLASSES,
    )


# ------------------------------------------------------------------------------------------------
# by name, and as a graph
# ------------------------------------------------------------------------------------------------


def load_dataset(name: str, root: str | os.PathLike[str] | None = None) -> Planetoid:
    """A dataset by name: ``root`` None -- the packaged ``cora`` / ``citeseer``, or ``synthetic``;
    ``root`` given -- parsed from ``root/ind.<name>.*`` (:func:`load_planetoid`). ValueError naming
    the known datasets for another name."""
    if root is not None:
        return load_planetoid(name, root)
    if name == "synthetic":
        return synthetic()
    if name not in PACKAGED:
        raise ValueError(f"dataset: expected one of {', '.join(DATASETS)}, got {name!r}")
    return load_compact(name)


def planetoid_graph(
    name: str | Planetoid,
    root: str | os.PathLike[str] | None = None,
    *,
    label: str = "Paper",
    edge_type: str = "CITES",
    modules: Iterable[str | os.PathLike[str]] | None = None,
) -> EmbeddedGraph:
    """A dataset (a name for :func:`load_dataset`, or a :class:`Planetoid`) as an in-process graph
    running the query modules (``modules``: as for :class:`~memgraph_tf.embedded.EmbeddedGraph`).

    Node ``i`` (internal id ``i``, label ``label``) has properties ``id`` (= i), ``features`` (list
    of floats), ``label`` (int class, -1 without one) and ``split``; each undirected pair is one
    ``edge_type`` edge ``min -> max`` (use ``direction: 'both'``).
    """
    from memgraph_tf.embedded import EmbeddedGraph

    data = name if isinstance(name, Planetoid) else load_dataset(name, root)
    return EmbeddedGraph.from_edge_list(
        data.edges,
        num_nodes=data.num_nodes,
        label=label,
        edge_type=edge_type,
        node_properties=node_properties(data),
        modules=modules,
    )


def node_properties(data: Planetoid) -> dict[str, list[Any]]:
    """Per-node property lists: ``id``, ``features`` (floats), ``label``, ``split``."""
    cache: dict[float, float] = {}  # share float objects: the features are mostly 0/1
    rows = [[cache.setdefault(v, v) for v in row.tolist()] for row in data.features]
    return {
        "id": list(range(data.num_nodes)),
        "features": rows,
        "label": [int(v) for v in data.labels.tolist()],
        "split": list(data.split),
    }
