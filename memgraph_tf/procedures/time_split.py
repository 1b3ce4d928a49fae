"""The temporal edge split of ``tf_features.split_edges`` (stdlib only).

With ``options.time_property = "ts"`` and ``options.cutoffs = [t1, t2]`` the split of an edge is
set by time instead of drawn: an edge (the unit of :mod:`memgraph_tf.procedures.pairs`: parallel
relationships, and for an undirected step both directions, are one edge) whose time ``t`` is

* ``t < t1``: ``train``; ``t1 <= t < t2``: ``val``; ``t >= t2``: ``test``

where the time of an edge is the smallest ``ts`` among its relationships (the moment the link
formed: every relationship of an edge gets its edge's split, so no edge is a positive of two
splits). Times and cutoffs are all of one kind: integers (e.g. epoch seconds), Memgraph ``Date``
values (``datetime.date``) or ``LocalDateTime`` values (naive ``datetime.datetime``), compared
as such (a Date by day, a LocalDateTime to the microsecond); ``t1 < t2`` is required.
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Callable, Hashable, Sequence
from typing import Any

from memgraph_tf.procedures.errors import OptionError, PropertyValueError, describe_value

__all__ = ["TimeSplit", "parse_time_split", "time_kind"]


def time_kind(value: Any) -> str | None:
    """``"integer"``, ``"LocalDateTime"`` or ``"Date"``: the kind of a time ``value`` the
    temporal split compares; None for anything else (a bool, a float, a string, a zoned
    date-time, a list...)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return "integer"
    if isinstance(value, datetime.datetime):
        return "LocalDateTime" if value.tzinfo is None else None
    if isinstance(value, datetime.date):
        return "Date"
    return None


@dataclasses.dataclass(frozen=True)
class TimeSplit:
    """The parsed ``options.time_property`` and ``options.cutoffs`` (of kind ``kind``)."""

    prop: str
    cutoffs: tuple[Any, Any]
    kind: str

    def split_of(self, time: Any) -> str:
        """``train`` before ``t1``, ``val`` from ``t1`` to before ``t2``, ``test`` from ``t2``."""
        t1, t2 = self.cutoffs
        return "train" if time < t1 else "val" if time < t2 else "test"

    def assign(
        self,
        units: Sequence[Hashable],
        values: Sequence[Any],
        name_of: Callable[[int], str],
    ) -> dict[Any, str]:
        """The split of each unit: ``units[i]`` is the edge of the ``i``-th relationship and
        ``values[i]`` its time. Raises :class:`PropertyValueError` naming the relationship
        (``name_of(i)``), the property and the value when a time is missing or not of the
        cutoffs' kind; the relationships are checked in the order of their units, so every graph
        access reports the same one."""
        first: dict[Any, Any] = {}
        order = sorted(range(len(units)), key=lambda i: (units[i], describe_value(values[i])))
        for i in order:
            value = values[i]
            if value is None or time_kind(value) != self.kind:
                got = "no such property" if value is None else describe_value(value)
                raise PropertyValueError(
                    f"options.time_property: {name_of(i)}: property {self.prop!r}: expected "
                    f"{'an' if self.kind == 'integer' else 'a'} {self.kind} (the kind of "
                    f"options.cutoffs), got {got}"
                )
            unit = units[i]
            if unit not in first or value < first[unit]:
                first[unit] = value
        return {unit: self.split_of(t) for unit, t in first.items()}


def parse_time_split(raw: dict[str, Any]) -> TimeSplit | None:
    """Pops ``time_property`` and ``cutoffs`` from the options ``raw``: None when neither is
    given; raises :class:`OptionError` when one is missing, the property is not a name, or the
    cutoffs are not two increasing values of one time kind."""
    prop = raw.pop("time_property", None)
    cutoffs = raw.pop("cutoffs", None)
    if prop is None and cutoffs is None:
        return None
    if not isinstance(prop, str) or not prop:
        raise OptionError(
            "options.time_property: expected a relationship property name (options.cutoffs "
            f"splits by it), got {describe_value(prop)}"
        )
    if not isinstance(cutoffs, (list, tuple)) or len(cutoffs) != 2:
        raise OptionError(
            "options.cutoffs: expected [t1, t2] (train before t1, val before t2, test from t2) "
            f"with options.time_property, got {describe_value(cutoffs)}"
        )
    kinds = [time_kind(c) for c in cutoffs]
    for i, (value, kind) in enumerate(zip(cutoffs, kinds)):
        if kind is None:
            raise OptionError(
                f"options.cutoffs[{i}]: expected an integer, a Date or a LocalDateTime, got "
                f"{describe_value(value)}"
            )
    if kinds[0] != kinds[1]:
        raise OptionError(
            "options.cutoffs: expected two values of one kind, got "
            f"{describe_value(cutoffs[0])} and {describe_value(cutoffs[1])}"
        )
    if not cutoffs[0] < cutoffs[1]:
        raise OptionError(
            f"options.cutoffs: expected t1 < t2, got {describe_value(cutoffs[0])} and "
            f"{describe_value(cutoffs[1])}"
        )
    return TimeSplit(prop, (cutoffs[0], cutoffs[1]), kinds[0])
