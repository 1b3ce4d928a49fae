"""Memgraph's vector index for the embedded graph, on USearch (the engine Memgraph's index uses).

What Memgraph does, and what this module mirrors (Memgraph's ``src/storage/v2/indices/
vector_index.cpp``, ``vector_index_utils.hpp``, ``vector_match_mode.hpp``, ``src/query/
interpreter.cpp`` and ``query_modules/vector_search_module.cpp``; the user guide
``pages/querying/vector-search.mdx``):

- an index covers the nodes that match its label filter (one label, any of ``:A|B``, all of
  ``:A&B``, or every node: ``ON (prop)``) and have the property; it is kept in step with every
  write at once (the index runs at ``READ_UNCOMMITTED``);
- a list written to an indexed property of a covered node must be numbers ("Vector index property
  must be a list of floats or integers.") of the index's dimension ("Vector index property must
  have the same number of dimensions as specified in the index."); anything that is not a list
  (or null) takes the node out of the index;
- the vector lives in the index only: the property reads back as the index stores it (a list of
  floats at the ``scalar_kind``'s precision);
- a full index grows by ``resize_coefficient``; creating an index whose name or whose (filter,
  property) is taken, or dropping one that does not exist, is no error: a notification says so.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np
from usearch.index import Index, MetricKind, ScalarKind

from memgraph_tf.embedded._runtime import EmbeddedError, store_value

__all__ = [
    "METRIC_NAMES",
    "SCALAR_NAMES",
    "LabelFilter",
    "VectorIndexError",
    "VectorIndexSpec",
    "VectorIndexes",
    "config_from_map",
]

#: metric name (Memgraph's ``MetricFromName``, aliases included) -> the canonical name
METRIC_NAMES: dict[str, str] = {
    "l2sq": "l2sq",
    "euclidean_sq": "l2sq",
    "ip": "ip",
    "inner": "ip",
    "dot": "ip",
    "cos": "cos",
    "angular": "cos",
    "haversine": "haversine",
    "divergence": "divergence",
    "pearson": "pearson",
    "hamming": "hamming",
    "tanimoto": "tanimoto",
    "sorensen": "sorensen",
}
_USEARCH_METRIC = {
    "l2sq": MetricKind.L2sq,
    "ip": MetricKind.IP,
    "cos": MetricKind.Cos,
    "haversine": MetricKind.Haversine,
    "divergence": MetricKind.Divergence,
    "pearson": MetricKind.Pearson,
    "hamming": MetricKind.Hamming,
    "tanimoto": MetricKind.Tanimoto,
    "sorensen": MetricKind.Sorensen,
}
# Memgraph's SimilarityFromDistance: 1 - d for these, 1 / (1 + d) for the others
_ONE_MINUS = frozenset({"ip", "cos", "pearson", "hamming", "tanimoto", "sorensen"})

#: scalar kind name (Memgraph's ``ScalarFromName``, aliases included) -> the canonical name
SCALAR_NAMES: dict[str, str] = {
    "b1x8": "b1x8",
    "binary": "b1x8",
    "u40": "u40",
    "uuid": "uuid",
    "bf16": "bf16",
    "bfloat16": "bf16",
    "f64": "f64",
    "float64": "f64",
    "double": "f64",
    "f32": "f32",
    "float32": "f32",
    "float": "f32",
    "f16": "f16",
    "float16": "f16",
    "f8": "f8",
    "float8": "f8",
    "u64": "u64",
    "uint64": "u64",
    "u32": "u32",
    "uint32": "u32",
    "u16": "u16",
    "uint16": "u16",
    "u8": "u8",
    "uint8": "u8",
    "i64": "i64",
    "int64": "i64",
    "i32": "i32",
    "int32": "i32",
    "i16": "i16",
    "int16": "i16",
    "i8": "i8",
    "int8": "i8",
}
# the scalar kinds whose stored values read back as floats through USearch's Python binding
_USEARCH_SCALAR = {
    "f64": ScalarKind.F64,
    "f32": ScalarKind.F32,
    "f16": ScalarKind.F16,
    "bf16": ScalarKind.BF16,
}

_DEFAULT_METRIC = "l2sq"
_DEFAULT_SCALAR = "f32"
_DEFAULT_RESIZE_COEFFICIENT = 2

NOT_A_NUMBER_LIST = "Vector index property must be a list of floats or integers."
WRONG_DIMENSION = (
    "Vector index property must have the same number of dimensions as specified in the index."
)


class VectorIndexError(EmbeddedError, ValueError):
    """What Memgraph refuses about a vector index (its ``VectorSearchException`` and the
    config errors of ``CREATE VECTOR INDEX``), with Memgraph's message."""


@dataclasses.dataclass(frozen=True)
class LabelFilter:
    """The nodes an index covers: ``mode`` is ``single`` / ``any`` / ``all`` / ``wildcard``."""

    mode: str
    labels: tuple[str, ...] = ()

    def matches(self, labels: Iterable[str]) -> bool:
        """True when a node with ``labels`` is covered."""
        have = set(labels)
        if self.mode == "wildcard":
            return True
        if self.mode == "all":
            return all(label in have for label in self.labels)
        return any(label in have for label in self.labels)

    def affected_by(self, label: str) -> bool:
        """True when adding or removing ``label`` can change whether a node is covered."""
        return label in self.labels

    def text(self) -> str:
        """The ``label`` column of ``SHOW VECTOR INDEX INFO``: ``*``, ``:A``, ``:A|B``, ``:A&B``."""
        if self.mode == "wildcard":
            return "*"
        return ":" + ("&" if self.mode == "all" else "|").join(self.labels)


@dataclasses.dataclass
class VectorIndexSpec:
    """One index's definition (``capacity`` grows as the index does)."""

    name: str
    label_filter: LabelFilter
    property: str
    dimension: int
    capacity: int
    metric: str = _DEFAULT_METRIC
    resize_coefficient: int = _DEFAULT_RESIZE_COEFFICIENT
    scalar_kind: str = _DEFAULT_SCALAR


def _config_int(config: Mapping[str, Any], key: str) -> int:
    value = config[key]
    if type(value) is not int:
        raise VectorIndexError(
            f"Vector index config {key!r}: expected an integer, got {type(value).__name__}"
        )
    return value


def _config_str(config: Mapping[str, Any], key: str, default: str) -> str:
    value = config.get(key, default)
    if not isinstance(value, str):
        raise VectorIndexError(
            f"Vector index config {key!r}: expected a string, got {type(value).__name__}"
        )
    return value


def config_from_map(config: Any) -> dict[str, Any]:
    """The ``WITH CONFIG`` map checked as Memgraph's ``VectorIndexConfigFromTypedMap``
    (``src/query/interpreter.cpp``) checks it: not empty, ``dimension`` and ``capacity``
    present, known ``metric`` / ``scalar_kind`` names; ``dimension`` is kept to 16 bits and a
    ``resize_coefficient`` <= 0 is the default 2, as Memgraph's casts do. Returns the keyword
    arguments of :class:`VectorIndexSpec` but ``name``, ``label_filter`` and ``property``."""
    if not isinstance(config, Mapping):
        raise VectorIndexError("WITH CONFIG expression must evaluate to a map.")
    if not config:
        raise VectorIndexError(
            "Vector index config map is empty. Please provide mandatory fields: dimension and "
            "capacity."
        )
    metric_name = _config_str(config, "metric", _DEFAULT_METRIC)
    if metric_name not in METRIC_NAMES:
        raise VectorIndexError(
            f"Unsupported metric name: {metric_name}. Supported metrics are l2sq, ip, cos, "
            "haversine, divergence, pearson, hamming, tanimoto, and sorensen."
        )
    if "dimension" not in config:
        raise VectorIndexError("Vector index spec must have a 'dimension' field.")
    dimension = _config_int(config, "dimension") & 0xFFFF  # Memgraph: static_cast<uint16_t>
    if "capacity" not in config:
        raise VectorIndexError("Vector index spec must have a 'capacity' field.")
    capacity = _config_int(config, "capacity")
    resize = _config_int(config, "resize_coefficient") if "resize_coefficient" in config else 0
    resize = resize & 0xFFFF if resize > 0 else _DEFAULT_RESIZE_COEFFICIENT
    scalar_name = _config_str(config, "scalar_kind", _DEFAULT_SCALAR)
    if scalar_name not in SCALAR_NAMES:
        raise VectorIndexError(
            f"Unsupported scalar name: {scalar_name}. Supported scalars are b1x8, u40, uuid, "
            "bf16, f64, f32, f16, f8, u64, u32, u16, u8, i64, i32, i16, and i8."
        )
    return {
        "dimension": dimension,
        "capacity": capacity,
        "metric": METRIC_NAMES[metric_name],
        "resize_coefficient": resize,
        "scalar_kind": SCALAR_NAMES[scalar_name],
    }


def to_vector(value: Any) -> list[float] | None:
    """Memgraph's ``TryListToVector``: a list of ints / floats as float32 values, [] for null,
    None for anything else (a bool is no number)."""
    if value is None:
        return []
    if not isinstance(value, (list, tuple)):
        return None
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
        return None
    return [float(np.float32(v)) for v in value]


class _Item:
    """One index: its spec, its USearch index (keys are vertex ids) and its logical capacity."""

    def __init__(self, spec: VectorIndexSpec) -> None:
        self.spec = spec
        self.index = self.fresh()

    def fresh(self) -> Index:
        """An empty USearch index of this spec."""
        spec = self.spec
        return Index(
            ndim=spec.dimension,
            metric=_USEARCH_METRIC[spec.metric],
            dtype=_USEARCH_SCALAR[spec.scalar_kind],
        )

    def put(self, vid: int, vector: list[float]) -> None:
        """Memgraph's ``UpdateVectorIndex``: [] removes; else replaces, growing when full."""
        if vid in self.index:
            self.index.remove(vid)
        if not vector:
            return
        if len(self.index) >= self.spec.capacity:
            self.spec.capacity *= self.spec.resize_coefficient
        self.index.add(vid, np.asarray(vector, dtype=np.float32))

    def stored(self, vid: int) -> tuple[float, ...]:
        """The vector of ``vid`` as the index holds it, as doubles (Memgraph's ``index.get``)."""
        return tuple(float(x) for x in np.asarray(self.index.get(vid), dtype=np.float64))


class VectorIndexes:
    """The vector indexes of one store, kept in step with it through the store's hooks.

    ``labels(vid)`` and ``properties(vid)`` read the store (``properties`` returns the vertex's
    live property dict, which the hooks may rewrite to the value as the index stores it);
    ``vertex_count()`` is the number of vertices."""

    def __init__(
        self,
        labels: Callable[[int], list[str]],
        properties: Callable[[int], dict[str, Any]],
        vertex_count: Callable[[], int],
    ) -> None:
        self._labels = labels
        self._properties = properties
        self._vertex_count = vertex_count
        self._items: dict[str, _Item] = {}

    # -- DDL -----------------------------------------------------------------------------------
    def create(self, spec: VectorIndexSpec) -> str:
        """``CREATE VECTOR INDEX``: builds the index over every covered node; returns Memgraph's
        notification ("Created vector index {name}." or, for a taken name or (filter, property),
        "Error while creating vector index {name}, for more information check the logs.").
        A covered node whose property is no list of numbers, or of another dimension, fails it
        (:class:`VectorIndexError`) and leaves no index."""
        taken = spec.name in self._items or any(
            i.spec.label_filter == spec.label_filter and i.spec.property == spec.property
            for i in self._items.values()
        )
        if taken:
            return (
                f"Error while creating vector index {spec.name}, for more information check "
                "the logs."
            )
        if spec.scalar_kind not in _USEARCH_SCALAR:
            raise VectorIndexError(
                f"Failed to create vector index {spec.name}, error message: scalar_kind "
                f"{spec.scalar_kind!r} is not supported by the embedded runtime (supported: "
                f"{', '.join(sorted(_USEARCH_SCALAR))})"
            )
        if spec.dimension == 0 or spec.capacity < 0:
            raise VectorIndexError(
                f"Failed to create vector index {spec.name}. Failed to reserve memory for the index"
            )
        item = _Item(spec)
        updates: list[tuple[int, list[float]]] = []
        for vid in range(self._vertex_count()):
            if not spec.label_filter.matches(self._labels(vid)):
                continue
            value = self._properties(vid).get(spec.property)
            if value is None:
                continue
            updates.append((vid, self._checked(spec, vid, value, strict=True)))
        for vid, vector in updates:
            item.put(vid, vector)
        self._items[spec.name] = item
        for vid, _ in updates:
            self._write_back(vid, spec.property)
        return f"Created vector index {spec.name}."

    def drop(self, name: str) -> str:
        """``DROP VECTOR INDEX``: Memgraph's notification ("Dropped vector index {name}." or
        "Vector index {name} doesn't exist."). Properties keep the value as the index held it."""
        if self._items.pop(name, None) is None:
            return f"Vector index {name} doesn't exist."
        return f"Dropped vector index {name}."

    def info(self) -> list[dict[str, Any]]:
        """``SHOW VECTOR INDEX INFO`` / ``vector_search.show_index_info()`` rows, by name."""
        return [
            {
                "index_name": s.name,
                "label": s.label_filter.text(),
                "property": s.property,
                "metric": s.metric,
                "dimension": s.dimension,
                "capacity": s.capacity,
                "size": len(item.index),
                "scalar_kind": s.scalar_kind,
                "index_type": "label+property_vector",
            }
            for item in sorted(self._items.values(), key=lambda i: i.spec.name)
            for s in (item.spec,)
        ]

    def search(self, name: str, limit: int, query: Any) -> list[tuple[int, float, float]]:
        """``vector_search.search``: up to ``limit`` ``(vertex id, distance, similarity)``,
        nearest first, from USearch's approximate search; similarity as Memgraph's
        ``SimilarityFromDistance`` (``1 - d`` or ``1 / (1 + d)``, absolute value)."""
        item = self._items.get(name)
        if item is None:
            raise VectorIndexError(f"Vector index {name} does not exist.")
        vector = []
        for x in query:
            if isinstance(x, bool) or not isinstance(x, (int, float)):
                raise VectorIndexError(
                    "Unrecognized argument type when performing vector search, expected values "
                    "are Double or Int!"
                )
            vector.append(float(np.float32(x)))
        if len(vector) != item.spec.dimension:
            raise VectorIndexError(
                f"vector_search.search: the query vector has {len(vector)} dimensions, index "
                f"{name} has {item.spec.dimension}"
            )
        if limit <= 0 or len(item.index) == 0:
            return []
        found = item.index.search(np.asarray(vector, dtype=np.float32), int(limit))
        rows = []
        for key, distance in zip(found.keys, found.distances):
            d = float(distance)
            similarity = 1.0 - d if item.spec.metric in _ONE_MINUS else 1.0 / (1.0 + d)
            rows.append((int(key), d, abs(similarity)))
        return rows

    # -- hooks the store calls ---------------------------------------------------------------
    def _checked(self, spec: VectorIndexSpec, vid: int, value: Any, *, strict: bool) -> list[float]:
        """``value`` as the vector ``spec`` takes ([] for null; a non-list is [] unless
        ``strict``); raises Memgraph's message, then which node, property and index."""
        vector = to_vector(value)
        if vector is None:
            if not strict:
                return []
            raise VectorIndexError(
                f"{NOT_A_NUMBER_LIST} (node {vid}, property {spec.property!r}, index "
                f"{spec.name!r}: got {_short(value)})"
            )
        if vector and len(vector) != spec.dimension:
            raise VectorIndexError(
                f"{WRONG_DIMENSION} (node {vid}, property {spec.property!r}: {len(vector)} "
                f"values, index {spec.name!r} has dimension {spec.dimension})"
            )
        return vector

    def _covering(self, labels: Iterable[str], key: str) -> list[_Item]:
        labels = list(labels)
        return [
            i
            for i in self._items.values()
            if i.spec.property == key and i.spec.label_filter.matches(labels)
        ]

    def _write_back(self, vid: int, key: str) -> None:
        """The property as the index stores it (the first covering index holding the node)."""
        for item in self._covering(self._labels(vid), key):
            if vid in item.index:
                self._properties(vid)[key] = _as_stored(item.stored(vid))
                return

    def check_property(self, vid: int, key: str, value: Any) -> Callable[[], None]:
        """Checks writing ``value`` (as stored; None: removing) to ``key`` of vertex ``vid``:
        raises :class:`VectorIndexError` as Memgraph's ``SetProperty`` does (a list of
        non-numbers or of another dimension, for a covered node). Returns the update to run
        once the store holds the new value (it rewrites the value as the index stores it)."""
        items = self._covering(self._labels(vid), key)
        if not items:
            return _nothing
        is_list = isinstance(value, (list, tuple))
        vector = self._checked(items[0].spec, vid, value, strict=is_list) if is_list else []
        for item in items[1:]:
            self._checked(item.spec, vid, value, strict=is_list)

        def apply() -> None:
            for item in items:
                item.put(vid, vector)
            if vector:
                self._write_back(vid, key)

        return apply

    def check_labels(self, vid: int, labels: list[str]) -> Callable[[], None]:
        """Checks giving vertex ``vid`` the ``labels``: a node that comes under an index must hold
        a list of numbers of its dimension there (Memgraph's ``UpdateOnAddLabel`` refuses even a
        string). Returns the update to run once the store holds the labels."""
        old = self._labels(vid)
        props = self._properties(vid)
        changed = set(old).symmetric_difference(labels)
        joins: list[tuple[_Item, list[float]]] = []
        leaves: list[_Item] = []
        for item in self._items.values():
            f = item.spec.label_filter
            if not any(f.affected_by(label) for label in changed):
                continue
            value = props.get(item.spec.property)
            if value is None:
                continue
            before, after = f.matches(old), f.matches(labels)
            if after and not before:
                joins.append((item, self._checked(item.spec, vid, value, strict=True)))
            elif before and not after:
                leaves.append(item)

        def apply() -> None:
            for item, vector in joins:
                item.put(vid, vector)
            for item in leaves:
                item.put(vid, [])
            if joins:
                self._write_back(vid, joins[0][0].spec.property)

        return apply

    def resync(self) -> None:
        """Rebuilds every index from the store (after a rolled-back write procedure)."""
        n = self._vertex_count()
        for item in self._items.values():
            item.index = item.fresh()
            for vid in range(n):
                if not item.spec.label_filter.matches(self._labels(vid)):
                    continue
                vector = to_vector(self._properties(vid).get(item.spec.property))
                if vector and len(vector) == item.spec.dimension:
                    item.put(vid, vector)


def _short(value: Any) -> str:
    text = repr(list(value) if isinstance(value, tuple) else value)
    return text if len(text) <= 60 else text[:57] + "..."


def _nothing() -> None:
    return None


def _as_stored(vector: tuple[float, ...]) -> Any:
    return store_value(list(vector), "vector index property")
