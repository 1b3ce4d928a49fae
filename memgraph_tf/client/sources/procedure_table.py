"""The procedure table: each ``tf_features`` procedure a source calls -- its name, its parameters
in order, the result fields the sources read, how its answer is taken from them and how its
arguments become plain Python values -- written once, for :class:`GraphSource`'s operations and
for every source (Bolt with the procedures or the client-side fallback, embedded).

The query module's signatures (``query_modules/tf_features.py``) are the reference; the table
names a subset of each procedure's result fields (tests/client/test_procedure_table.py checks
both)."""

from __future__ import annotations

import dataclasses
import inspect
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from memgraph_tf.errors import ConfigurationError
from memgraph_tf.feature_spec import LabelSpec

logger = logging.getLogger(__name__)


def to_python(value: Any) -> Any:
    """numpy scalars/arrays and eager tensors -> plain Python values the Bolt driver accepts."""
    if hasattr(value, "numpy") and callable(value.numpy):
        value = value.numpy()
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, (list, tuple)):
        return [to_python(v) for v in value]
    return value


def plain_options(options: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A procedure's ``options`` map with plain Python values (None stays None; a
    :class:`~memgraph_tf.feature_spec.LabelSpec` in ``options.feature_spec`` as its
    :meth:`~memgraph_tf.feature_spec.LabelSpec.to_dict`); anything but a mapping raises
    :class:`ConfigurationError`."""
    if options is None:
        return None
    if not isinstance(options, Mapping):
        raise ConfigurationError(f"options: expected a map or None, got {type(options).__name__}")
    out = {k: to_python(v) for k, v in options.items()}
    specs = out.get("feature_spec")
    if isinstance(specs, Mapping):
        out["feature_spec"] = {
            label: spec.to_dict() if isinstance(spec, LabelSpec) else spec
            for label, spec in specs.items()
        }
    return out


def typed_properties(properties: Any) -> Any:
    """A ``{label: [names]}`` map as plain Python (anything else as given: the procedure names
    it)."""
    if not isinstance(properties, Mapping):
        return properties
    return {
        k: to_python(list(v)) if isinstance(v, (list, tuple)) else v for k, v in properties.items()
    }


def typed_args(seeds: Any, num_neighbors: Any, properties: Any, options: Any) -> tuple:
    """``sample_typed``'s arguments as plain Python values (driver and embedded runtime alike)."""
    if isinstance(num_neighbors, Mapping):
        num_neighbors = {
            str(k): to_python(list(v)) if isinstance(v, (list, tuple)) else v
            for k, v in num_neighbors.items()
        }
    return (
        to_python(list(seeds)),
        num_neighbors,
        typed_properties(properties),
        plain_options(options),
    )


def pair_args(
    sources: Any, targets: Any, num_neighbors: Any, properties: Any, options: Any
) -> tuple:
    """``sample_pairs``' arguments as plain Python values (one pattern map, or one per role)."""
    if isinstance(num_neighbors, Mapping) and set(num_neighbors) == {"source", "target"}:
        num_neighbors = {
            role: typed_args([], nn, None, None)[1] for role, nn in num_neighbors.items()
        }
    else:
        num_neighbors = typed_args([], num_neighbors, None, None)[1]
    return (
        to_python(list(sources)),
        to_python(list(targets)),
        num_neighbors,
        typed_properties(properties),
        plain_options(options),
    )


def _nodes_args(nodes: Any, properties: Any, options: Any) -> tuple:
    return to_python(list(nodes)), list(properties), plain_options(options)


def _sample_args(seeds: Any, fanouts: Any, properties: Any, options: Any) -> tuple:
    return (
        to_python(list(seeds)),
        to_python(list(fanouts)),
        list(properties),
        plain_options(options),
    )


def _describe_args(properties: Any, options: Any) -> tuple:
    return list(properties), plain_options(options)


def _schema_args(properties: Any, options: Any) -> tuple:
    return typed_properties(properties), plain_options(options)


def _split_args(pattern: Any, options: Any) -> tuple:
    return pattern, plain_options(options)


def _structural_args(label: Any, options: Any) -> tuple:
    return label, plain_options(options)


def _profile_args(label: Any, properties: Any, options: Any) -> tuple:
    names = to_python(list(properties)) if isinstance(properties, (list, tuple)) else properties
    return label, names, plain_options(options)


@dataclasses.dataclass(frozen=True)
class Procedure:
    """One ``tf_features`` procedure as the sources call it.

    ``fields``: the result fields a call yields; ``plain``: the operation's arguments -> plain
    Python values, its parameters named as the procedure's, in order; ``params``: those names
    (the procedure's arguments in order); ``answer``: ``"map"`` (the first row's fields),
    ``"blob"`` (the first row's blob), ``"blobs"`` (each row's blob, in row order) or ``"rows"``
    (every row's fields, in row order); ``write``: a write procedure (a write transaction over
    Bolt); ``detected``: one of the procedures whose presence makes a Bolt source call the
    procedures rather than pack on the client (:data:`PROCEDURES`); ``keyed``: its node lists of
    ``options.id_property`` keys may be resolved by the caller (:mod:`.keyed`)."""

    name: str
    fields: tuple[str, ...]
    plain: Callable[..., tuple]
    answer: str = "map"
    write: bool = False
    detected: bool = False
    keyed: bool = False
    params: tuple[str, ...] = dataclasses.field(init=False)

    def __post_init__(self) -> None:
        params = tuple(inspect.signature(self.plain).parameters)
        object.__setattr__(self, "params", params)

    def answer_of(self, rows: Sequence[Mapping[str, Any]]) -> Any:
        """The operation's answer from the rows of one call: a base64url blob, a list of them,
        or a dict of :attr:`fields`."""
        if self.answer == "blob":
            return rows[0]["blob"]
        if self.answer == "blobs":
            return [row["blob"] for row in rows]
        if self.answer == "rows":
            return [{name: row[name] for name in self.fields} for row in rows]
        return {name: rows[0][name] for name in self.fields}


PACK = Procedure("tf_features.pack", ("blob",), _nodes_args, "blob", detected=True, keyed=True)
SAMPLE = Procedure("tf_features.sample", ("blob",), _sample_args, "blob", detected=True, keyed=True)
SAMPLE_PER_NODE = Procedure(
    "tf_features.sample_per_node",
    ("node_id", "blob"),
    _sample_args,
    "blobs",
    detected=True,
    keyed=True,
)
DESCRIBE = Procedure(
    "tf_features.describe",
    ("feature_width", "dtype", "columns", "sections", "num_classes"),
    _describe_args,
    detected=True,
)
SAMPLE_TYPED = Procedure("tf_features.sample_typed", ("blob",), typed_args, "blob", keyed=True)
SCHEMA = Procedure("tf_features.schema", ("labels", "relationships"), _schema_args)
SAMPLE_PAIRS = Procedure("tf_features.sample_pairs", ("blob",), pair_args, "blob", keyed=True)
SPLIT_EDGES = Procedure(
    "tf_features.split_edges", ("train", "val", "test", "relationships"), _split_args, write=True
)
PROFILE = Procedure("tf_features.profile", ("label", "count", "properties"), _profile_args)
STRUCTURAL = Procedure(
    "tf_features.structural", ("node_id", "features", "columns"), _structural_args, "rows"
)
STRUCTURAL_WRITE = Procedure(
    "tf_features.structural_write",
    ("nodes", "width", "columns", "updated"),
    _structural_args,
    write=True,
)


def _build_reservoirs_args(options: Any) -> tuple:
    return (plain_options(options),)


def _update_reservoirs_args(changes: Any, options: Any) -> tuple:
    return to_python(list(changes)), plain_options(options)


BUILD_RESERVOIRS = Procedure(
    "tf_features.build_reservoirs",
    ("nodes", "reservoirs", "removed", "next"),
    _build_reservoirs_args,
    write=True,
)
UPDATE_RESERVOIRS = Procedure(
    "tf_features.update_reservoirs",
    ("applied", "skipped", "updated", "short"),
    _update_reservoirs_args,
    write=True,
)

TABLE: dict[str, Procedure] = {
    p.name: p
    for p in (
        PACK,
        SAMPLE,
        SAMPLE_PER_NODE,
        DESCRIBE,
        SAMPLE_TYPED,
        SCHEMA,
        SAMPLE_PAIRS,
        SPLIT_EDGES,
        PROFILE,
        BUILD_RESERVOIRS,
        UPDATE_RESERVOIRS,
        STRUCTURAL,
        STRUCTURAL_WRITE,
    )
}
"""Every procedure a source calls, by name."""

PROCEDURES = tuple(name for name, p in TABLE.items() if p.detected)
"""The procedures whose presence a :class:`~memgraph_tf.client.sources.BoltSource` detects."""

PROCEDURE_PARAMS = {name: p.params for name, p in TABLE.items() if p.keyed}
"""The arguments, in order, of the procedures whose node lists a source may resolve itself."""
