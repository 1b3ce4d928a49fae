"""A generated property graph with the value kinds a feature spec encodes: ints, floats, strings,
booleans, lists of strings, numeric vectors, Date, LocalDateTime and Duration values, integer
timestamps, absent properties -- for tests/modules/test_profile.py and
tests/client/test_feature_spec.py."""

from __future__ import annotations

import datetime
import random

LABEL = "Person"
COUNTRIES = ("de", "fr", "it", "es", "pl")
TAGS = ("a", "b", "c", "d")


def people(n: int = 60, seed: int = 7) -> list[dict]:
    """``n`` property maps (None: the property is absent on that node)."""
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        rows.append(
            {
                "age": 18 + rng.randrange(60),
                "score": None if i % 5 == 0 else round(rng.uniform(-2.0, 3.0), 3),
                "country": COUNTRIES[min(int(rng.expovariate(0.8)), len(COUNTRIES) - 1)],
                "vip": i % 3 == 0,
                "tags": [t for t in TAGS if rng.random() < 0.4],
                "emb": [rng.uniform(-1, 1) for _ in range(3)],
                "born": datetime.date(1950, 1, 1) + datetime.timedelta(days=rng.randrange(20000)),
                "seen": None
                if i % 4 == 0
                else datetime.datetime(2024, 1, 1)
                + datetime.timedelta(seconds=rng.randrange(10**7)),
                "wait": datetime.timedelta(seconds=rng.randrange(3600), microseconds=i),
                "created": 1_700_000_000 + rng.randrange(10**6),
            }
        )
    return rows


def embedded_people(n: int = 60, *, extra_label: bool = True):
    """An EmbeddedGraph with :func:`people` as ``Person`` nodes (absent values left out) and,
    with ``extra_label``, one ``Other`` node."""
    from memgraph_tf.embedded import EmbeddedGraph

    graph = EmbeddedGraph()
    for row in people(n):
        graph.add_node([LABEL], {k: v for k, v in row.items() if v is not None})
    if extra_label:
        graph.add_node(["Other"], {"age": "not a person"})
    return graph
