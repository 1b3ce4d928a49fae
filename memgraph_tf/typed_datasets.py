"""Typed (heterogeneous) graphs with a planted signal that only the typed structure reveals.

No small real heterogeneous node-classification dataset we found may be redistributed, so the
typed-graph work runs on :func:`shop_graph`, a generated shop::

    (:User)-[:BOUGHT]->(:Product)-[:IN]->(:Category)      (:User)-[:FOLLOWS]->(:User)

* A user's class is uniform over ``num_classes``; its own features (``User.features``) are noise.
* Category ``c`` belongs to class ``c % num_classes``; its features are a fixed random code (so a
  model can tell categories apart without per-node embeddings: the graph stays inductive).
* Products have noise features of another width; every category holds as many products, and
  a user never buys the same product twice.
* Each user makes ``purchases_per_user`` purchases: with probability ``signal`` a product whose
  category belongs to the user's class, otherwise a product drawn uniformly from all products.
* Each user follows ``follows_per_user`` users drawn uniformly (no homophily: pure noise that a
  model ignoring relationship types mixes with the purchases).

The best possible accuracy is known exactly (:func:`best_accuracy`): given everything in the graph,
a user's class depends on the data only through the classes of the categories it bought from (the
follows, the features and the other buyers are independent of it given those), and the Bayes rule
picks the class bought from most often, ties broken uniformly. Vocabulary follows TF-GNN: a graph
has *node sets* (one per label) and *edge sets* (one per ``(source label, type, target label)``).

Importing this module needs the standard library alone; generating needs numpy.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import math
import weakref
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

    from memgraph_tf.embedded import EmbeddedGraph
    from memgraph_tf.typed_sampling import EdgeStep, TypedSamplingSpec

__all__ = [
    "EdgeSet",
    "NodeSet",
    "PlantedGraph",
    "TypedGraph",
    "bayes_predictions",
    "best_accuracy",
    "demo_shop_graph",
    "embedded_rows",
    "node_properties",
    "sample_neighbourhoods",
    "shop_graph",
    "transfer_graph",
    "typed_embedded_graph",
]

logger = logging.getLogger(__name__)

FEATURES = "features"
"""The property that holds a node's feature vector, on every label that has features."""
ID_PROPERTY = "id"
"""The property that numbers a node inside its node set (unique within a label only)."""
LABEL_PROPERTY = "label"
"""The property that holds a target node's class (an int)."""
SPLIT_PROPERTY = "split"
"""The property that holds a target node's split: ``train``, ``val`` or ``test``."""


@dataclasses.dataclass(frozen=True)
class NodeSet:
    """The nodes of one label: ``size`` nodes, numbered ``0..size-1`` inside the set, and their
    feature matrix (``[size, width]`` float32) or None for a label without features."""

    label: str
    size: int
    features: np.ndarray | None

    @property
    def width(self) -> int:
        """The feature width (0 without features)."""
        return 0 if self.features is None else int(self.features.shape[1])


@dataclasses.dataclass(frozen=True)
class EdgeSet:
    """The relationships of one ``(source label, type, target label)`` triple, as parallel arrays of
    node numbers inside the source and the target node sets."""

    source_label: str
    rel_type: str
    target_label: str
    source: np.ndarray
    target: np.ndarray

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.source_label, self.rel_type, self.target_label)

    @property
    def size(self) -> int:
        return int(self.source.shape[0])


@dataclasses.dataclass(frozen=True, eq=False)
class TypedGraph:
    """A typed graph with labels on one node set.

    ``labels[i]`` is the class of node ``i`` of ``target_label``; ``split[i]`` is ``train``,
    ``val`` or ``test``; ``best_accuracy`` is the Bayes-optimal accuracy over the whole label
    distribution (see :func:`best_accuracy`); ``params`` records the generator's arguments;
    ``class_names`` names the classes.
    """

    name: str
    node_sets: Mapping[str, NodeSet]
    edge_sets: Mapping[tuple[str, str, str], EdgeSet]
    target_label: str
    labels: np.ndarray
    split: tuple[str, ...]
    num_classes: int
    best_accuracy: float
    params: Mapping[str, Any]
    class_names: tuple[str, ...] = ()
    """A name per class (``class_names[c]`` for class ``c``); empty: unnamed."""

    def ids(self, split: str) -> list[int]:
        """Numbers (inside the target node set) of the target nodes in ``split``."""
        return [i for i, s in enumerate(self.split) if s == split]


@dataclasses.dataclass(frozen=True, eq=False, kw_only=True)
class PlantedGraph:
    """What a generated one-label graph with a planted signal holds besides its nodes and
    relationships (:class:`memgraph_tf.ledger_datasets.LedgerGraph`,
    :class:`memgraph_tf.property_datasets.PropertyGraph`): ``labels[i]`` and ``split[i]`` of seed
    node ``i`` (its ``id``), ``best_accuracy`` exact, ``chance``, ``bayes[i]`` the Bayes rule's
    class for seed node ``i`` and ``params``, the generator's arguments. Keyword-only fields."""

    labels: np.ndarray
    split: tuple[str, ...]
    num_classes: int
    best_accuracy: float
    chance: float
    bayes: np.ndarray
    params: Mapping[str, Any]

    def ids(self, split: str) -> list[int]:
        """The ``id`` of each seed node in ``split`` (``train``, ``val``, ``test``)."""
        return [i for i, s in enumerate(self.split) if s == split]


def embedded_rows(
    label: str,
    nodes: Iterable[Mapping[str, Any]],
    relationships: Mapping[str, Iterable[Sequence[Any]]],
    modules: Iterable[Any] | None = None,
) -> tuple[EmbeddedGraph, list[int]]:
    """An in-process graph running the query modules (``modules``: as for
    :class:`~memgraph_tf.embedded.EmbeddedGraph`) with one ``label`` node per property map of
    ``nodes`` and, per type of ``relationships``, one relationship of that type per row
    ``(source, target)`` or ``(source, target, properties)`` (numbers into ``nodes``), in order;
    returns it and the internal id of each node."""
    from memgraph_tf.embedded import EmbeddedGraph

    g = EmbeddedGraph(modules)
    ids = [g.add_node([label], props) for props in nodes]
    for rel_type, rows in relationships.items():
        for a, b, *props in rows:
            g.add_edge(ids[a], ids[b], rel_type, *props)
    return g, ids


SHOP_DATASET = "shop"
"""The shop graph's name: ``memgraph-tf demo --dataset shop``, the ``embedded:shop`` graph URI."""

SHOP_CLASS_NAMES = ("books", "music", "garden", "sports", "toys", "kitchen", "travel", "games")
"""The shop graph's class names (a user's class is the kind of shop category it buys from);
classes beyond these are ``class N``."""

DEMO_USERS = 3_000
"""Users of the shop graph of ``memgraph-tf demo --dataset shop`` and ``embedded:shop``
(:func:`demo_shop_graph`): small enough that the demo runs in minutes on 2 cores."""


def demo_shop_graph() -> TypedGraph:
    """The shop graph the demo and the ``embedded:shop`` graph URI use: :func:`shop_graph` with
    :data:`DEMO_USERS` users and the defaults otherwise (same call, same graph)."""
    return shop_graph(DEMO_USERS)


def best_accuracy(num_classes: int, purchases: int, signal: float) -> float:
    """The exact Bayes-optimal accuracy of :func:`shop_graph`'s users.

    Each purchase lands in a category of the user's own class with probability
    ``q = signal + (1 - signal) / num_classes`` and in each other class with ``(1 - q) /
    (num_classes - 1)``, independently; the optimal rule takes the class bought most often (the
    likelihood grows with that count), ties uniformly. Summed over every count vector exactly.
    """
    if num_classes < 2 or purchases < 1 or not 0.0 <= signal <= 1.0:
        raise ValueError(
            f"best_accuracy: expected num_classes >= 2, purchases >= 1 and 0 <= signal <= 1, got "
            f"{num_classes}, {purchases}, {signal}"
        )
    q = signal + (1.0 - signal) / num_classes
    r = (1.0 - q) / (num_classes - 1)
    total = 0.0
    # the true class is class 0 (by symmetry); counts[0] purchases of it, the rest elsewhere
    for counts in _compositions(purchases, num_classes):
        top = max(counts)
        if counts[0] != top:
            continue
        ties = sum(1 for c in counts if c == top)
        ways = math.factorial(purchases)
        for c in counts:
            ways //= math.factorial(c)
        total += ways * q ** counts[0] * r ** (purchases - counts[0]) / ties
    return total


def _compositions(n: int, k: int) -> Iterable[tuple[int, ...]]:
    """Every tuple of ``k`` non-negative ints summing to ``n``."""
    for bars in itertools.combinations(range(n + k - 1), k - 1):
        edges = (-1, *bars, n + k - 1)
        yield tuple(edges[i + 1] - edges[i] - 1 for i in range(k))


def bayes_predictions(graph: TypedGraph, seed: int = 0) -> np.ndarray:
    """The Bayes rule applied to ``graph``'s users: the class of the categories bought from most
    often, ties broken uniformly with ``seed``. Its accuracy estimates :attr:`best_accuracy`."""
    import numpy as np

    bought = graph.edge_sets[("User", "BOUGHT", "Product")]
    product_in = graph.edge_sets[("Product", "IN", "Category")]
    category_of_product = np.empty(graph.node_sets["Product"].size, dtype=np.int64)
    category_of_product[product_in.source] = product_in.target
    k = graph.num_classes
    votes = np.zeros((graph.node_sets["User"].size, k), dtype=np.int64)
    np.add.at(votes, (bought.source, category_of_product[bought.target] % k), 1)
    rng = np.random.default_rng(seed)
    noisy = votes + rng.random(votes.shape) * 0.5  # uniform tie-break, never reorders counts
    return noisy.argmax(axis=1)


def shop_graph(
    num_users: int = 12_000,
    *,
    num_products: int = 3_000,
    num_categories: int = 12,
    num_classes: int = 4,
    purchases_per_user: int = 5,
    follows_per_user: int = 10,
    signal: float = 0.55,
    user_width: int = 16,
    product_width: int = 12,
    category_width: int = 8,
    seed: int = 0,
) -> TypedGraph:
    """The generated shop graph of the module docstring; same arguments, same graph.

    Split of the users: 60% train, 20% validation, 20% test (by a seeded permutation).
    """
    import numpy as np

    _check_shop_arguments(
        num_users=num_users,
        num_products=num_products,
        num_categories=num_categories,
        num_classes=num_classes,
        purchases_per_user=purchases_per_user,
        follows_per_user=follows_per_user,
        signal=signal,
        user_width=user_width,
        product_width=product_width,
        category_width=category_width,
    )
    rng = np.random.default_rng(seed)
    labels = rng.integers(num_classes, size=num_users)
    users, bought, product_category = _shop_purchases(
        rng, labels, num_classes, num_products, num_categories, purchases_per_user, signal
    )
    followers = np.repeat(np.arange(num_users), follows_per_user)
    followed = rng.integers(num_users - 1, size=followers.shape[0])
    followed += followed >= followers  # nobody follows themselves
    codes = rng.normal(size=(num_categories, category_width)).astype(np.float32)
    node_sets = {
        "User": NodeSet(
            "User", num_users, rng.normal(size=(num_users, user_width)).astype(np.float32)
        ),
        "Product": NodeSet(
            "Product",
            num_products,
            rng.normal(size=(num_products, product_width)).astype(np.float32),
        ),
        "Category": NodeSet("Category", num_categories, codes),
    }
    edge_sets = {
        e.key: e
        for e in (
            EdgeSet("User", "BOUGHT", "Product", users, bought),
            EdgeSet("Product", "IN", "Category", np.arange(num_products), product_category),
            EdgeSet("User", "FOLLOWS", "User", followers, followed),
        )
    }
    split = _shop_split(rng, num_users)
    params = {
        "num_users": num_users,
        "num_products": num_products,
        "num_categories": num_categories,
        "num_classes": num_classes,
        "purchases_per_user": purchases_per_user,
        "follows_per_user": follows_per_user,
        "signal": signal,
        "seed": seed,
    }
    return TypedGraph(
        name=SHOP_DATASET,
        node_sets=node_sets,
        edge_sets=edge_sets,
        target_label="User",
        labels=labels.astype(np.int64),
        split=split,
        num_classes=num_classes,
        best_accuracy=best_accuracy(num_classes, purchases_per_user, signal),
        params=params,
        class_names=tuple(
            SHOP_CLASS_NAMES[c] if c < len(SHOP_CLASS_NAMES) else f"class {c}"
            for c in range(num_classes)
        ),
    )


def _check_shop_arguments(
    *,
    num_users: int,
    num_products: int,
    num_categories: int,
    num_classes: int,
    purchases_per_user: int,
    follows_per_user: int,
    signal: float,
    user_width: int,
    product_width: int,
    category_width: int,
) -> None:
    """Raises ValueError naming the first of :func:`shop_graph`'s arguments that is out of range."""
    checks = {
        "num_users": (num_users, 100),
        "num_products": (num_products, num_categories),
        "num_categories": (num_categories, num_classes),
        "num_classes": (num_classes, 2),
        "purchases_per_user": (purchases_per_user, 1),
        "follows_per_user": (follows_per_user, 0),
        "user_width": (user_width, 1),
        "product_width": (product_width, 1),
        "category_width": (category_width, 1),
    }
    for name, (value, least) in checks.items():
        if not isinstance(value, int) or value < least:
            raise ValueError(f"shop_graph: {name}: expected an integer >= {least}, got {value!r}")
    if num_products % (num_categories * purchases_per_user):
        raise ValueError(
            f"shop_graph: num_products: expected a multiple of num_categories x "
            f"purchases_per_user ({num_categories * purchases_per_user}), got {num_products}"
        )
    if num_categories % num_classes:
        raise ValueError(
            f"shop_graph: num_categories: expected a multiple of num_classes ({num_classes}), got "
            f"{num_categories}"
        )
    if not 0.0 <= signal <= 1.0:
        raise ValueError(f"shop_graph: signal: expected 0 <= signal <= 1, got {signal!r}")


def _shop_purchases(
    rng: np.random.Generator,
    labels: np.ndarray,
    num_classes: int,
    num_products: int,
    num_categories: int,
    purchases_per_user: int,
    signal: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(buying user, bought product) per purchase, and each product's category, drawn from
    ``rng``: each user's ``purchases_per_user`` purchases in a row (user ``i`` has class
    ``labels[i]``), each from a category of the user's class with probability ``signal``."""
    import numpy as np

    num_users = labels.shape[0]
    # Products sit on ``purchases_per_user`` shelves, each shelf holding every category equally
    # often; a user's j-th purchase comes from shelf j. So a user never buys a product twice (a
    # sampler that keeps distinct neighbours sees every purchase), the purchases stay independent,
    # and every class has as many products per shelf, which keeps "the class bought most often"
    # the Bayes rule with the exact accuracy of best_accuracy().
    shelves = purchases_per_user
    slot = rng.permutation(num_products)  # product p is slot[p] in shelf-major order
    shelf_of = slot % shelves
    product_category = (slot // shelves) % num_categories
    pools = {
        (j, c): np.flatnonzero((shelf_of == j) & (product_category % num_classes == c))
        for j in range(shelves)
        for c in range(num_classes)
    }
    shelf_all = [np.flatnonzero(shelf_of == j) for j in range(shelves)]
    users = np.repeat(np.arange(num_users), shelves)
    shelf = np.tile(np.arange(shelves), num_users)
    own = rng.random(users.shape[0]) < signal
    bought = np.empty(users.shape[0], dtype=np.int64)
    for j in range(shelves):
        anywhere = (shelf == j) & ~own
        bought[anywhere] = rng.choice(shelf_all[j], size=int(anywhere.sum()))
        for c in range(num_classes):
            chosen = (shelf == j) & own & (labels[users] == c)
            bought[chosen] = rng.choice(pools[(j, c)], size=int(chosen.sum()))
    return users, bought, product_category


def _shop_split(rng: np.random.Generator, num_users: int) -> tuple[str, ...]:
    """Each user's split drawn from ``rng``: 60% ``train``, 20% ``val``, 20% ``test``."""
    order = rng.permutation(num_users)
    split = ["train"] * num_users
    for i in order[int(0.6 * num_users) : int(0.8 * num_users)]:
        split[i] = "val"
    for i in order[int(0.8 * num_users) :]:
        split[i] = "test"
    return tuple(split)


def node_properties(graph: TypedGraph, label: str) -> list[dict[str, Any]]:
    """The properties of each node of ``label``'s node set, in node order: ``id`` (its number
    inside the set), ``features`` (floats) where the set has features, and on the target label
    ``label`` (int class) and ``split`` (``train``/``val``/``test``). The one definition of what
    a typed graph's nodes carry, in-process (:func:`typed_embedded_graph`) and in a database
    (:func:`memgraph_tf.client.loaders.load_typed_graph`)."""
    node_set = graph.node_sets[label]
    rows = node_set.features.tolist() if node_set.features is not None else None
    out: list[dict[str, Any]] = []
    for i in range(node_set.size):
        props: dict[str, Any] = {ID_PROPERTY: i}
        if rows is not None:
            props[FEATURES] = rows[i]
        if label == graph.target_label:
            props[LABEL_PROPERTY] = int(graph.labels[i])
            props[SPLIT_PROPERTY] = graph.split[i]
        out.append(props)
    return out


def typed_embedded_graph(
    graph: TypedGraph, modules: Iterable[Any] | None = None, *, into: EmbeddedGraph | None = None
) -> tuple[EmbeddedGraph, dict[str, list[int]]]:
    """``graph`` as an in-process graph running the query modules (a new one, or ``into``: an
    empty graph to fill, e.g. of a subclass); returns it and, per label, the internal id of each
    node of that node set (``ids[label][i]``).

    Every node gets ``id`` (its number inside its node set) and, where its set has features,
    ``features`` (a list of floats); target nodes also get ``label`` (int class) and ``split``.
    Relationships keep their types and directions.
    """
    from memgraph_tf.embedded import EmbeddedGraph

    g = EmbeddedGraph(modules) if into is None else into
    ids: dict[str, list[int]] = {}
    for label in graph.node_sets:
        ids[label] = [g.add_node([label], props) for props in node_properties(graph, label)]
    for (src_label, rel_type, dst_label), edge_set in graph.edge_sets.items():
        src_ids, dst_ids = ids[src_label], ids[dst_label]
        for a, b in zip(edge_set.source.tolist(), edge_set.target.tolist(), strict=True):
            g.add_edge(src_ids[a], dst_ids[b], rel_type)
    return g, ids


TRANSFER_STEP = "(:Account)-[:TRANSFER]->(:Account)"
"""The edge step of :func:`transfer_graph`: an account's outgoing transfers."""
TRANSFER_CHANNELS = ("card", "wire", "cash", "atm")
"""The ``channel`` values of :func:`transfer_graph`'s transfers; class ``c`` prefers channel
``c``."""


def transfer_spec() -> dict[str, Any]:
    """The feature spec (``LabelSpec.to_dict()`` form) of :func:`transfer_graph`'s ``TRANSFER``
    properties: ``amount`` numeric (standardised), ``channel`` categorical."""
    return {
        "label": "TRANSFER",
        "properties": [
            {"name": "amount", "kind": "numeric", "mean": 0.0, "std": 1.0},
            {"name": "channel", "kind": "categorical", "vocabulary": list(TRANSFER_CHANNELS)},
        ],
    }


def transfer_graph(
    num_accounts: int = 600,
    transfers_per_account: int = 5,
    num_classes: int = 2,
    signal: float = 0.6,
    seed: int = 0,
) -> EmbeddedGraph:
    """An in-process graph whose label signal lies **only in relationship properties**:
    ``num_accounts`` ``:Account`` nodes (``id``, ``features``: two noise floats, ``label``: a class
    uniform over ``num_classes`` <= 4, ``split``: 60/20/20 train/val/test), each with
    ``transfers_per_account`` outgoing ``TRANSFER`` relationships to accounts drawn uniformly (the
    structure and the neighbours' features are independent of the class). Each transfer of an
    account of class ``c`` has ``channel`` :data:`TRANSFER_CHANNELS` ``[c]`` with probability
    ``signal``, else one drawn uniformly, and ``amount`` drawn from ``N(c - (num_classes - 1) / 2,
    1)``; one transfer in ten has no ``amount`` (missing). So a model that reads the transfers'
    properties (``options.edge_feature_spec`` with :func:`transfer_spec`) can learn the class,
    one that reads nodes and structure alone cannot (chance). Needs numpy."""
    import numpy as np

    from memgraph_tf.embedded import EmbeddedGraph

    if not 2 <= num_classes <= len(TRANSFER_CHANNELS):
        raise ValueError(f"num_classes: expected 2..{len(TRANSFER_CHANNELS)}, got {num_classes!r}")
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, num_classes, num_accounts)
    split = _shop_split(rng, num_accounts)
    features = rng.normal(size=(num_accounts, 2)).round(4).tolist()
    g = EmbeddedGraph()
    ids = [
        g.add_node(
            ["Account"],
            {
                ID_PROPERTY: i,
                FEATURES: features[i],
                LABEL_PROPERTY: int(labels[i]),
                SPLIT_PROPERTY: split[i],
            },
        )
        for i in range(num_accounts)
    ]
    centre = (num_classes - 1) / 2
    for i in range(num_accounts):
        c = int(labels[i])
        targets = rng.choice(num_accounts, size=transfers_per_account, replace=False)
        for t in targets.tolist():
            keep = rng.random() < signal
            channel = c if keep else int(rng.integers(0, len(TRANSFER_CHANNELS)))
            props: dict[str, Any] = {"channel": TRANSFER_CHANNELS[channel]}
            if rng.random() >= 0.1:
                props["amount"] = round(float(rng.normal(c - centre, 1.0)), 4)
            g.add_edge(ids[i], ids[t], "TRANSFER", props)
    return g


_ADJACENCY: weakref.WeakKeyDictionary[TypedGraph, dict[EdgeStep, tuple[np.ndarray, np.ndarray]]]
_ADJACENCY = weakref.WeakKeyDictionary()


def _adjacency(graph: TypedGraph, step: EdgeStep) -> tuple[np.ndarray, np.ndarray]:
    """CSR (``indptr``, ``indices``) from ``step.left`` node numbers to ``step.right`` ones, built
    once per graph and step."""
    cached = _ADJACENCY.setdefault(graph, {})
    if step not in cached:
        cached[step] = _build_adjacency(graph, step)
    return cached[step]


def _build_adjacency(graph: TypedGraph, step: EdgeStep) -> tuple[np.ndarray, np.ndarray]:
    import numpy as np

    pairs = []
    for direction, key in (
        ("out", (step.left, step.rel_type, step.right)),
        ("in", (step.right, step.rel_type, step.left)),
    ):
        if step.direction not in (direction, "both") or key not in graph.edge_sets:
            continue
        edges = graph.edge_sets[key]
        src, dst = edges.source, edges.target
        if direction == "in":
            src, dst = dst, src
        pairs.append(np.stack([src, dst], axis=1))
    if not pairs:
        known = ", ".join(f"(:{a})-[:{t}]->(:{b})" for a, t, b in graph.edge_sets)
        raise ValueError(
            f"num_neighbors: {step}: the graph has no such relationships (has {known})"
        )
    pairs = np.unique(np.concatenate(pairs), axis=0)  # distinct neighbours, ascending
    counts = np.bincount(pairs[:, 0], minlength=graph.node_sets[step.left].size)
    indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    return indptr, pairs[:, 1].astype(np.int64)


def sample_neighbourhoods(
    graph: TypedGraph,
    spec: TypedSamplingSpec,
    seeds: Sequence[int],
    rng: np.random.Generator,
    *,
    exclude: tuple[str, str, np.ndarray] | None = None,
) -> dict[str, np.ndarray]:
    """A reference typed sampler in numpy: per slot table (:func:`~memgraph_tf.typed_sampling.
    slot_table_name`), the node numbers ``[len(seeds), slots]`` (-1 for a padded slot).

    Each step draws ``fanout`` of a node's distinct neighbours (over that step's relationships)
    uniformly without replacement, or all of them (then padded) when it has fewer, as
    ``tf_features.sample`` does with ``pad``; children of a padded slot are padded.

    ``exclude`` = ``(source_label, target_label, pairs)`` with ``pairs[b] = (s, t)`` leaves the
    relationship between ``s`` and ``t`` out of row ``b``'s neighbourhood at every hop (link
    prediction: a pair's own relationship must not be seen while scoring it). A
    :class:`TypedGraph` holds no relationship properties: a weighted step is refused
    (``ValueError`` naming it).
    """
    import numpy as np

    from memgraph_tf.typed_sampling import slot_table_name

    weighted = [str(s) for s in spec.steps if s.weight is not None]
    if weighted:
        raise ValueError(
            f"sample_neighbourhoods: {', '.join(weighted)}: a weighted step needs relationship "
            "properties, which a TypedGraph does not hold (sample it from a graph source)"
        )
    layout = spec.layout()
    batch = len(seeds)
    tables = {
        slot_table_name(0, spec.seed_label): np.asarray(seeds, dtype=np.int64).reshape(batch, 1)
    }
    for h in range(1, layout.num_hops + 1):
        for label, size in layout.tables[h].items():
            tables[slot_table_name(h, label)] = np.full((batch, size), -1, dtype=np.int64)
    for group in layout.groups:
        step = group.step
        indptr, indices = _adjacency(graph, step)
        if indices.size == 0:
            continue  # no such relationships at all: every slot stays padded
        parents = tables[slot_table_name(group.hop - 1, step.left)].reshape(-1)
        valid = parents >= 0
        start = indptr[np.where(valid, parents, 0)]
        degree = np.where(valid, indptr[np.where(valid, parents, 0) + 1] - start, 0)
        widest = max(int(degree.max(initial=0)), group.fanout)
        columns = np.arange(widest)[None, :]
        at = np.minimum(start[:, None] + columns, len(indices) - 1)
        usable = columns < degree[:, None]
        if exclude is not None:
            forbidden = _forbidden(exclude, step, group.parents, parents)
            if forbidden is not None:
                usable &= indices[at] != forbidden[:, None]
        # a uniform draw without replacement: the usable neighbours in random order, then the rest
        keys = np.where(usable, rng.random((parents.shape[0], widest)), 2.0)
        picked = np.argsort(keys, axis=1, kind="stable")[:, : group.fanout]
        found = np.take_along_axis(usable, picked, axis=1)
        children = np.where(found, np.take_along_axis(indices[at], picked, axis=1), -1)
        target = tables[slot_table_name(group.hop, step.right)]
        target[:, group.offset : group.offset + group.size] = children.reshape(batch, group.size)
    return tables


def _forbidden(
    exclude: tuple[str, str, np.ndarray], step: EdgeStep, parents: int, parent_ids: np.ndarray
) -> np.ndarray | None:
    """Per parent slot, the neighbour it must not reach (-2 for none), or None when ``step`` does
    not connect the excluded pair's labels."""
    import numpy as np

    source_label, target_label, pairs = exclude
    pairs = np.asarray(pairs, dtype=np.int64)
    rows = np.repeat(np.arange(pairs.shape[0]), parents)
    forbidden = np.full(parent_ids.shape[0], -2, dtype=np.int64)
    used = False
    if (step.left, step.right) == (source_label, target_label):
        here = parent_ids == pairs[rows, 0]
        forbidden[here] = pairs[rows, 1][here]
        used = True
    if (step.left, step.right) == (target_label, source_label):
        here = (parent_ids == pairs[rows, 1]) & (forbidden == -2)
        forbidden[here] = pairs[rows, 0][here]
        used = True
    return forbidden if used else None
