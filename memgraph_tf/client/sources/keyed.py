"""Keys resolved by the caller: a procedure given integer keys under ``options.id_property`` finds
their nodes itself, and the mgp API has no index lookup: it scans every node of the label on each
call. The sources resolve the keys first, the way Memgraph answers ``MATCH (n:Label) WHERE n.id =
k`` (through a label-property index when there is one), and pass the nodes instead; a key with no
node or with two is passed as it is, so the procedure's own lookup gives its error for it (and only
then scans)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from memgraph_tf.client.sources.config import NAME_PATTERN, quote_name
from memgraph_tf.client.sources.procedure_table import PROCEDURE_PARAMS

logger = logging.getLogger(__name__)


def _lookup_label(value: Any) -> bool:
    return isinstance(value, str) and NAME_PATTERN.match(value) is not None


def keyed_lists(procedure: str, args: Mapping[str, Any]) -> dict[str, str | None]:
    """The node-list arguments of a call of ``procedure`` (``args``: name -> value, as
    :data:`PROCEDURE_PARAMS` names them) whose keys the caller resolves to nodes: name -> the label
    the procedure looks them up in (None: every node). Empty -- the call goes as it is, and the
    procedure gives its own answer or error -- unless ``options.id_property`` and that label are
    names a query can hold, and each such list is a non-empty list of integers (of equal lengths
    for ``sample_pairs``)."""
    options = args.get("options")
    if procedure not in PROCEDURE_PARAMS or not isinstance(options, Mapping):
        return {}
    if not _lookup_label(options.get("id_property")):
        return {}
    label = options.get("label")
    if procedure == "tf_features.sample_pairs":
        source = options.get("source_label")
        target = options.get("target_label")
        lists: dict[str, Any] = {"sources": source, "targets": source if target is None else target}
    elif procedure == "tf_features.sample_typed":
        lists = {"seeds": label}
    else:  # pack / sample / sample_per_node: options.label is optional
        lists = {PROCEDURE_PARAMS[procedure][0]: label}
        if label is None:
            return {name: None for name in lists if _int_list(args.get(name))}
    if not all(_lookup_label(lb) for lb in lists.values()):
        return {}
    if not all(_int_list(args.get(name)) for name in lists):
        return {}
    if len({len(args[name]) for name in lists}) != 1:
        return {}
    return lists


def _int_list(value: Any) -> bool:
    return (
        isinstance(value, list)
        and bool(value)
        and all(type(v) is int for v in value)  # no bool, no float: the procedure names those
    )


def resolved_keys(keys: Sequence[int], find: Callable[[int], Sequence[Any]]) -> list[Any]:
    """``keys`` with each key that ``find`` (key -> the nodes holding it) answers with exactly one
    node replaced by that node; the others -- no node, or two -- kept as keys, for the procedure
    to name (``seeds[i]: unknown node id ...``, ``expected unique ids ...``)."""
    out: list[Any] = []
    for key in keys:
        found = find(key)
        out.append(found[0] if len(found) == 1 else key)
    return out


INDEX_INFO_TTL_S = 60.0
"""How long a :class:`BoltSource` trusts what ``SHOW INDEX INFO`` said (an index created later is
used from then on)."""

_KEYED = "mgtf_"  # the prefix of the variables a keyed call's query binds


def keyed_lookup_cypher(keyed: Mapping[str, str | None], id_property: str) -> str:
    """The Cypher that binds, for each list ``$name`` of ``keyed`` (name -> label), a variable
    ``mgtf_<name>`` to :func:`resolved_keys` of it: per position, the one node (with the label)
    whose ``id_property`` equals the key, else the key itself -- in the list's order, duplicates
    kept. The lists have equal lengths (:func:`keyed_lists`) and are walked together.

    Memgraph answers each ``WHERE n.id = $name[i]`` through a label-property index when one
    exists (``CREATE INDEX ON :Label(id)``; its planner rewrites an Optional's branch with such
    lookups too: ``src/query/plan/rewrite/index_lookup.hpp``), sorts before ``collect()``
    (docs: ``querying/clauses/with``) and passes a collected node list to a procedure's list
    argument (docs: ``node_similarity``, ``WITH COLLECT(m) AS nodes1 CALL ...(nodes1, ...)``)."""
    prop = quote_name(id_property, "options.id_property")
    names = list(keyed)
    first = names[0]
    parts = [f"UNWIND range(0, size(${first}) - 1) AS {_KEYED}i"]
    carried: list[str] = []
    for j, name in enumerate(names):
        label = keyed[name]
        node = f"{_KEYED}n{j}" + (f":{quote_name(label, 'label')}" if label else "")
        parts.append(
            f"OPTIONAL MATCH ({node}) WHERE {_KEYED}n{j}.{prop} = ${name}[{_KEYED}i] "
            f"WITH {_KEYED}i, {''.join(c + ', ' for c in carried)}"
            f"collect({_KEYED}n{j}) AS {_KEYED}f{j}"
        )
        carried.append(f"{_KEYED}f{j}")
    parts.append(f"ORDER BY {_KEYED}i")
    picks = ", ".join(
        f"collect(CASE WHEN size({_KEYED}f{j}) = 1 THEN {_KEYED}f{j}[0] ELSE ${name}[{_KEYED}i] "
        f"END) AS {_KEYED}{name}"
        for j, name in enumerate(names)
    )
    parts.append(f"WITH {picks}")
    return " ".join(parts)


def keyed_call_query(
    procedure: str,
    names: Sequence[str],
    keyed: Mapping[str, str | None],
    id_property: str,
    clause: str,
    fields: str,
) -> str:
    """``CALL procedure(...)`` over the parameters ``names`` in order, the lists of ``keyed``
    replaced by their nodes (:func:`keyed_lookup_cypher`), with ``clause`` (the memory clause or
    empty) and ``YIELD fields RETURN fields``: one query, one round trip."""
    args = ", ".join(f"{_KEYED}{n}" if n in keyed else f"${n}" for n in names)
    call = f"CALL {procedure}({args}){' ' + clause if clause else ''}"
    return f"{keyed_lookup_cypher(keyed, id_property)} {call} YIELD {fields} RETURN {fields}"
