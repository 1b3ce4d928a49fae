"""A generated property graph whose labels depend only on categorical, list, temporal and optional
properties, with its exact best accuracy (:func:`planted_property_graph`).

``(:Person)-[:KNOWS]->(:Person)``, each person knowing ``knows_per_person`` others drawn uniformly
(no homophily: the relationships carry no signal). Each person has

* ``city``: a string among :data:`CITIES`, Zipf-like frequencies (categorical);
* ``tags``: a list of strings, each of :data:`TAGS` in it with probability 0.35, possibly empty
  (multi-categorical);
* ``joined``: a ``datetime.date`` among ``months`` dates 30 days apart from 2018-01-01
  (temporal);
* ``plan``: absent with probability 0.4, else one of :data:`PLANS` (an optional categorical);
* ``score`` (a float) and ``visits`` (an int): pure noise, independent of everything;
* ``id``, ``label`` (the class, an int) and ``split`` (60/20/20 ``train``/``val``/``test``).

A person's class is drawn from ``softmax(effect(city) + mean of effect(tag) over its tags (0 for
none) + slope * z(joined) + effect(plan or absent))``, with the effect tables drawn once from
``seed`` and multiplied by ``strength``; ``z`` is the standardised month index. Every property
is drawn independently, so the best accuracy any model can reach is the Bayes rule's, computed
exactly by summing ``P(x) max_k P(k | x)`` over every combination ``x`` of the four properties
(:attr:`PropertyGraph.best_accuracy`); :attr:`PropertyGraph.chance` is the largest class prior
(the best accuracy without the properties). The numeric properties carry nothing: a model that
sees only them stays at chance.

Importing this module needs the standard library alone; generating needs numpy.
"""

from __future__ import annotations

import dataclasses
import datetime
import itertools
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from memgraph_tf.typed_datasets import PlantedGraph, embedded_rows

if TYPE_CHECKING:
    from memgraph_tf.embedded import EmbeddedGraph

__all__ = [
    "CITIES",
    "PLANS",
    "PROPERTY_DATASET",
    "TAGS",
    "PropertyGraph",
    "planted_property_graph",
    "property_embedded_graph",
]

PROPERTY_DATASET = "people"
"""The planted property graph's name."""
LABEL = "Person"
"""The label of every node (and the seed label)."""
CITIES = ("Oslo", "Rome", "Lima", "Kyiv", "Pune", "Baku", "Oulu", "Cork", "Graz", "Bern")
TAGS = ("music", "sport", "books", "games", "food", "travel")
PLANS = ("free", "pro", "team")
FIRST_DAY = datetime.date(2018, 1, 1)
"""The first ``joined`` date; the others follow every 30 days."""
SIGNAL_PROPERTIES = ("city", "tags", "joined", "plan")
NOISE_PROPERTIES = ("score", "visits")
TAG_PROBABILITY = 0.35
PLAN_MISSING = 0.4


@dataclasses.dataclass(frozen=True, eq=False)
class PropertyGraph(PlantedGraph):
    """The generated graph: ``nodes[i]`` the property map of person ``i`` (an absent property is
    not in the map), ``edges`` pairs ``(i, j)`` of ``KNOWS`` relationships; every person is a
    seed: ``labels[i]`` and ``split[i]`` as in the maps, ``best_accuracy`` and ``chance`` exact
    over the generating distribution, ``bayes[i]`` the Bayes rule's class for person ``i``,
    ``params`` the generator's arguments."""

    nodes: Sequence[Mapping[str, Any]]
    edges: Sequence[tuple[int, int]]


def _effects(rng: Any, num_classes: int, months: int, strength: float) -> dict[str, Any]:
    import numpy as np

    k = num_classes
    p = _marginals(months)

    def centred(table: Any, weights: Any) -> Any:  # each class's mean effect 0: balanced classes
        return (table - weights @ table) * strength

    return {
        "city": centred(rng.normal(0.0, 1.5, (len(CITIES), k)), p["city"]),
        "tag": centred(rng.normal(0.0, 2.5, (len(TAGS), k)), np.full(len(TAGS), 1 / len(TAGS))),
        "slope": rng.normal(0.0, 1.0, k) * strength,
        "plan": centred(rng.normal(0.0, 1.5, (len(PLANS) + 1, k)), p["plan"]),  # row 0: absent
        "z": (np.arange(months) - (months - 1) / 2) / max(np.arange(months).std(), 1.0),
    }


def _marginals(months: int) -> dict[str, Any]:
    import numpy as np

    city = 1.0 / np.arange(1, len(CITIES) + 1)
    return {
        "city": city / city.sum(),
        "month": np.full(months, 1.0 / months),
        "plan": np.array([PLAN_MISSING] + [(1 - PLAN_MISSING) / len(PLANS)] * len(PLANS)),
    }


def _tag_sets() -> Iterable[tuple[int, ...]]:
    for r in range(len(TAGS) + 1):
        yield from itertools.combinations(range(len(TAGS)), r)


def _logits(effects: Mapping[str, Any], city: Any, tag_mean: Any, month: Any, plan: Any) -> Any:
    return (
        effects["city"][city]
        + tag_mean
        + effects["z"][month][..., None] * effects["slope"]
        + effects["plan"][plan]
    )


def _exact(effects: Mapping[str, Any], months: int) -> tuple[float, float]:
    """(best accuracy, chance) summed over every combination of the four properties."""
    import numpy as np

    p = _marginals(months)
    best = 0.0
    prior = np.zeros(effects["city"].shape[1])
    city, month, plan = np.meshgrid(
        np.arange(len(CITIES)), np.arange(months), np.arange(len(PLANS) + 1), indexing="ij"
    )
    weight = p["city"][city] * p["month"][month] * p["plan"][plan]
    for tags in _tag_sets():
        p_tags = TAG_PROBABILITY ** len(tags) * (1 - TAG_PROBABILITY) ** (len(TAGS) - len(tags))
        tag_mean = effects["tag"][list(tags)].mean(axis=0) if tags else 0.0
        logits = _logits(effects, city, tag_mean, month, plan)
        probs = np.exp(logits - logits.max(axis=-1, keepdims=True))
        probs /= probs.sum(axis=-1, keepdims=True)
        best += float((weight * probs.max(axis=-1)).sum()) * p_tags
        prior += (weight[..., None] * probs).sum(axis=(0, 1, 2)) * p_tags
    return best, float(prior.max())


def planted_property_graph(
    num_people: int = 3000,
    *,
    num_classes: int = 3,
    months: int = 60,
    strength: float = 1.0,
    knows_per_person: int = 3,
    seed: int = 0,
) -> PropertyGraph:
    """The planted property graph of the module docstring (same arguments, same graph).

    Guarantees: ``best_accuracy`` is exact for the generating distribution (the Bayes rule's
    expected accuracy; a finite test split scatters around it); the class depends on ``city``,
    ``tags``, ``joined`` and ``plan`` only. ValueError naming the argument for a bad one."""
    params = dict(locals())  # the arguments as given, before any other name is bound
    import numpy as np

    for name, value, low in (
        ("num_people", num_people, 10),
        ("num_classes", num_classes, 2),
        ("months", months, 2),
        ("knows_per_person", knows_per_person, 0),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ValueError(f"{name}: expected an integer >= {low}, got {value!r}")
    if not isinstance(strength, (int, float)) or not strength > 0:
        raise ValueError(f"strength: expected a number > 0, got {strength!r}")
    rng = np.random.default_rng(seed)
    effects = _effects(rng, num_classes, months, float(strength))
    best, chance = _exact(effects, months)
    p = _marginals(months)
    n = num_people
    city = rng.choice(len(CITIES), n, p=p["city"])
    has_tag = rng.random((n, len(TAGS))) < TAG_PROBABILITY
    month = rng.integers(0, months, n)
    plan = rng.choice(len(PLANS) + 1, n, p=p["plan"])
    counts = has_tag.sum(axis=1)
    tag_mean = (has_tag @ effects["tag"]) / np.maximum(counts, 1)[:, None]
    logits = _logits(effects, city, tag_mean, month, plan)
    probs = np.exp(logits - logits.max(axis=1, keepdims=True))
    probs /= probs.sum(axis=1, keepdims=True)
    labels = (rng.random((n, 1)) > probs.cumsum(axis=1)).sum(axis=1).clip(0, num_classes - 1)
    order = rng.permutation(n)
    split = ["train"] * n
    for i in order[int(0.6 * n) : int(0.8 * n)]:
        split[i] = "val"
    for i in order[int(0.8 * n) :]:
        split[i] = "test"
    score = rng.normal(0.0, 1.0, n)
    visits = rng.poisson(5.0, n)
    nodes = []
    for i in range(n):
        props: dict[str, Any] = {
            "id": i,
            "city": CITIES[city[i]],
            "tags": [TAGS[j] for j in np.flatnonzero(has_tag[i])],
            "joined": FIRST_DAY + datetime.timedelta(days=30 * int(month[i])),
            "score": round(float(score[i]), 4),
            "visits": int(visits[i]),
            "label": int(labels[i]),
            "split": split[i],
        }
        if plan[i]:
            props["plan"] = PLANS[plan[i] - 1]
        nodes.append(props)
    edges = [
        (i, int(j))
        for i in range(n)
        for j in rng.choice(n - 1, min(knows_per_person, n - 1), replace=False)
    ]
    edges = [(i, j + (j >= i)) for i, j in edges]  # never oneself
    return PropertyGraph(
        nodes=nodes,
        edges=edges,
        labels=labels.astype(np.int64),
        split=tuple(split),
        num_classes=num_classes,
        best_accuracy=best,
        chance=chance,
        bayes=probs.argmax(axis=1),
        params=params,
    )


def property_embedded_graph(
    graph: PropertyGraph, modules: Iterable[Any] | None = None
) -> tuple[EmbeddedGraph, list[int]]:
    """``graph`` as an in-process graph running the query modules: one ``:Person`` node per
    person with its property map (absent properties left out) and its ``KNOWS`` relationships;
    returns it and the internal id of each person."""
    return embedded_rows(LABEL, graph.nodes, {"KNOWS": graph.edges}, modules)
