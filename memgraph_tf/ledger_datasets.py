"""A generated ledger: accounts, the payees they register (with a limit: a weight) and the
transfers they make (with an amount and a time), whose labels lie in the strong payee ties and
in transfers made after each account's time (planted leakage), with the exact best accuracy
available at that time (:func:`ledger_graph`).

Every node is an ``:Account``. The first ``num_accounts`` are *customers* (the seeds): each has a
class ``label`` (uniform over ``num_classes``), a time ``t`` (an integer) at which its label is
to be predicted, ``features`` of zeros (an account says nothing of itself) and a ``split``. The
other ``num_classes * counterparties_per_class`` are *counterparties*: ``features`` the one-hot
of their class, ``t`` 0, ``split`` ``"counterparty"`` (never a training seed). Relationships go
from a customer to counterparties:

* ``(:Account)-[:PAYEE {limit}]->(:Account)``: ``regular`` payees with a high ``limit`` (uniform
  in ``[2000, 10000)``), each a counterparty of the customer's class with probability
  ``regular_quality``, else of a uniform class; and ``occasional`` payees with a low ``limit``
  (uniform in ``[1, 10)``) of a uniform class: the signal lies in the strong ties, amid many weak
  noisy ones. Registered before the customer's time (no time of their own).
* ``(:Account)-[:TRANSFER {amount, ts}]->(:Account)``: ``past`` transfers at integer times
  ``ts`` uniform in ``[t - 100, t)``, each to a counterparty of the customer's class with
  probability ``past_quality`` (weak), else of a uniform class; and ``leaks`` transfers made
  after the customer's time, at ``ts`` uniform in ``[t + 100, t + 300)``, each to a counterparty
  of its class with probability ``leak_quality`` (strong: the planted leakage). The graph is a
  snapshot at ``horizon``: a transfer at ``ts >= horizon`` has not happened and is left out.
  ``amount`` uniform in ``[1, 100)``.

Customers' times: the *early* ones (``split`` ``train`` or, with probability ``val_fraction``,
``val``) uniform in ``[100, horizon - 300)``, so that every transfer after their time is in the
snapshot; the *late* ones (``split`` ``test``, a share ``test_fraction``) uniform in
``[horizon - 100, horizon)``, so that none is: trained and validated on the past, tested on the
future, as a deployed model is.

:attr:`LedgerGraph.best_accuracy` is exact: the Bayes rule's expected accuracy given everything
that exists at a customer's time (its payees, their limits, its past transfers), summed over every
outcome of the regular payees' and past transfers' classes (occasional payees carry nothing);
:attr:`LedgerGraph.bayes` is that rule's class per customer on the generated graph.

Importing this module needs the standard library alone; generating needs numpy.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from memgraph_tf.typed_datasets import PlantedGraph, embedded_rows

if TYPE_CHECKING:
    from memgraph_tf.embedded import EmbeddedGraph

__all__ = [
    "LABEL",
    "LEDGER_DATASET",
    "PAYEE",
    "TRANSFER",
    "LedgerGraph",
    "ledger_embedded_graph",
    "ledger_graph",
]

LEDGER_DATASET = "ledger"
"""The generated ledger's name (``memgraph-tf demo --dataset ledger``, ``embedded:ledger``)."""
LABEL = "Account"
"""The label of every node (and the seed label)."""
PAYEE = "PAYEE"
"""The registered payees' relationship type (property ``limit``: a weight)."""
TRANSFER = "TRANSFER"
"""The transfers' relationship type (properties ``amount`` and ``ts``, an integer time)."""
SEED_TIME = "t"
"""The customers' time property (``options.seed_time``)."""
COUNTERPARTY_SPLIT = "counterparty"
"""The ``split`` of the counterparties (never a seed)."""
HISTORY = 100
"""How far before its time a customer's past transfers go."""
LEAK_DELAY = (100, 300)
"""The transfers after a customer's time come this much later (low inclusive, high exclusive)."""
REGULAR_LIMIT = (2000.0, 10000.0)
OCCASIONAL_LIMIT = (1.0, 10.0)


@dataclasses.dataclass(frozen=True, eq=False)
class LedgerGraph(PlantedGraph):
    """The generated ledger: ``nodes[i]`` the property map of account ``i`` (customers first),
    ``payees`` and ``transfers`` rows ``(source, target, properties)``; the seeds are the
    customers: ``labels[i]`` and ``split[i]`` of each, ``best_accuracy`` exact as of each
    customer's time (module docstring), ``bayes[i]`` the Bayes rule's class for customer ``i``,
    ``chance`` the largest class prior, ``params`` the generator's arguments."""

    nodes: Sequence[Mapping[str, Any]]
    payees: Sequence[tuple[int, int, Mapping[str, Any]]]
    transfers: Sequence[tuple[int, int, Mapping[str, Any]]]


def _hit(quality: float, k: int) -> tuple[float, float]:
    """(probability of the customer's class, of each other class) of one drawn counterparty."""
    return quality + (1 - quality) / k, (1 - quality) / k


def _counts(n: int, k: int) -> Iterator[tuple[int, ...]]:
    """Every vector of ``k`` non-negative counts summing to ``n``."""
    for bars in itertools.combinations(range(n + k - 1), k - 1):
        edges = (-1, *bars, n + k - 1)
        yield tuple(edges[j + 1] - edges[j] - 1 for j in range(k))


def _multinomial(counts: Sequence[int], p: Sequence[float]) -> float:
    out = math.factorial(sum(counts))
    for c, q in zip(counts, p):
        out = out / math.factorial(c) * q**c
    return out


def _score(quality: float, k: int) -> float:
    """The log-likelihood ratio one counterparty of class ``c`` adds to class ``c``."""
    hit, miss = _hit(quality, k)
    return math.log(hit / miss) if miss > 0 else 1e9


def _exact_accuracy(k: int, evidence: Sequence[tuple[int, float]]) -> float:
    """The Bayes rule's expected accuracy (ties split evenly) with uniform classes and, per
    ``(draws, quality)`` of ``evidence``, that many independent counterparties, each of the true
    class with probability ``quality + (1 - quality) / k``, else of a uniform class."""
    parts = [
        [
            (_multinomial(c, [_hit(q, k)[0]] + [_hit(q, k)[1]] * (k - 1)), c, _score(q, k))
            for c in _counts(n, k)
        ]
        for n, q in evidence
        if n > 0
    ]
    total = 0.0
    for combo in itertools.product(*parts):  # the true class is 0 (the classes are symmetric)
        p = math.prod(prob for prob, _, _ in combo)
        scores = [sum(c[j] * s for _, c, s in combo) for j in range(k)]
        top = max(scores)
        best = [j for j in range(k) if scores[j] >= top - 1e-9]
        total += p * (1.0 / len(best) if 0 in best else 0.0)
    return total if parts else 1.0 / k


def _check(params: Mapping[str, Any]) -> None:
    for name, low in (
        ("num_accounts", 10),
        ("num_classes", 2),
        ("counterparties_per_class", 1),
        ("regular", 0),
        ("occasional", 0),
        ("past", 0),
        ("leaks", 0),
        ("horizon", 1000),
    ):
        value = params[name]
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ValueError(f"{name}: expected an integer >= {low}, got {value!r}")
    for name in ("regular_quality", "past_quality", "leak_quality", "val_fraction"):
        value = params[name]
        if not isinstance(value, (int, float)) or not 0 <= value <= 1:
            raise ValueError(f"{name}: expected a number in [0, 1], got {value!r}")
    if not isinstance(params["test_fraction"], (int, float)) or not (
        0 < params["test_fraction"] < 1
    ):
        raise ValueError(
            f"test_fraction: expected a number in (0, 1), got {params['test_fraction']!r}"
        )


def ledger_graph(
    num_accounts: int = 3000,
    *,
    num_classes: int = 4,
    counterparties_per_class: int = 150,
    regular: int = 3,
    regular_quality: float = 0.8,
    occasional: int = 20,
    past: int = 6,
    past_quality: float = 0.2,
    leaks: int = 6,
    leak_quality: float = 0.9,
    test_fraction: float = 0.25,
    val_fraction: float = 0.5,
    horizon: int = 1000,
    seed: int = 0,
) -> LedgerGraph:
    """The ledger of the module docstring (same arguments, same graph).

    Guarantees: ``best_accuracy`` is exact for the generating distribution given what exists at
    each customer's time (a finite test split scatters around it); every test customer's time is
    within 100 of ``horizon`` and every transfer after it is left out; every early customer's
    transfers after its time are in. ``horizon`` is at least 1000 (room for the early period,
    the gap and the test period). ValueError naming the argument for a bad one."""
    params = dict(locals())  # the arguments as given, before any other name is bound
    _check(params)
    import numpy as np

    rng = np.random.default_rng(seed)
    n, k, m = num_accounts, num_classes, counterparties_per_class
    labels = rng.integers(0, k, n)
    late = rng.random(n) < test_fraction
    times = np.where(
        late,
        rng.integers(horizon - HISTORY, horizon, n),
        rng.integers(HISTORY, horizon - LEAK_DELAY[1], n),
    )
    split = tuple(
        "test" if late[i] else "val" if rng.random() < val_fraction else "train" for i in range(n)
    )
    nodes: list[dict[str, Any]] = [
        {
            "id": i,
            "features": [0.0] * k,
            "t": int(times[i]),
            "label": int(labels[i]),
            "split": split[i],
        }
        for i in range(n)
    ]
    for c in range(k):
        one_hot = [1.0 if j == c else 0.0 for j in range(k)]
        nodes += [
            {
                "id": n + c * m + j,
                "features": one_hot,
                "t": 0,
                "label": c,
                "split": COUNTERPARTY_SPLIT,
            }
            for j in range(m)
        ]

    def counterparty(i: int, quality: float) -> int:
        c = labels[i] if rng.random() < quality else rng.integers(0, k)
        return int(n + c * m + rng.integers(0, m))

    payees, transfers = [], []
    scores = np.zeros((n, k))
    w_reg, w_past = _score(regular_quality, k), _score(past_quality, k)
    for i in range(n):
        t = int(times[i])
        for _ in range(regular):
            j = counterparty(i, regular_quality)
            payees.append((i, j, {"limit": round(float(rng.uniform(*REGULAR_LIMIT)), 2)}))
            scores[i, nodes[j]["label"]] += w_reg
        for _ in range(occasional):
            j = counterparty(i, 0.0)
            payees.append((i, j, {"limit": round(float(rng.uniform(*OCCASIONAL_LIMIT)), 2)}))
        for _ in range(past):
            j = counterparty(i, past_quality)
            ts = int(rng.integers(t - HISTORY, t))
            transfers.append((i, j, {"amount": round(float(rng.uniform(1, 100)), 2), "ts": ts}))
            scores[i, nodes[j]["label"]] += w_past
        for _ in range(leaks):
            j = counterparty(i, leak_quality)
            ts = t + int(rng.integers(*LEAK_DELAY))
            if ts < horizon:
                amount = round(float(rng.uniform(1, 100)), 2)
                transfers.append((i, j, {"amount": amount, "ts": ts}))
    best = _exact_accuracy(k, [(regular, regular_quality), (past, past_quality)])
    return LedgerGraph(
        nodes=nodes,
        payees=payees,
        transfers=transfers,
        labels=labels.astype(np.int64),
        split=split,
        num_classes=k,
        best_accuracy=best,
        chance=1.0 / k,
        bayes=scores.argmax(axis=1),
        params=params,
    )


def ledger_embedded_graph(
    graph: LedgerGraph, modules: Iterable[Any] | None = None
) -> tuple[EmbeddedGraph, list[int]]:
    """``graph`` as an in-process graph running the query modules: one ``:Account`` node per
    account with its property map, its ``PAYEE`` and ``TRANSFER`` relationships; returns it and
    the internal id of each account."""
    return embedded_rows(
        LABEL, graph.nodes, {PAYEE: graph.payees, TRANSFER: graph.transfers}, modules
    )
