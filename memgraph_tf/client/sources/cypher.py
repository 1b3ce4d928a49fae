"""The procedures' graph-access protocol over plain parameterised Cypher
(:class:`CypherGraphAccess`): what a :class:`~memgraph_tf.client.sources.BoltSource` packs blobs
with on a server without the ``tf_features`` procedures."""

from __future__ import annotations

import datetime
import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from memgraph_tf.client.sources.config import quote_name
from memgraph_tf.errors import GraphDataError

if TYPE_CHECKING:
    from memgraph_tf.procedures.access import NeighbourRead
    from memgraph_tf.procedures.reservoir import BuildOptions

logger = logging.getLogger(__name__)


def native_value(value: Any) -> Any:
    """A property value as the Bolt driver gives it -> the Python value ``mgp`` gives a procedure
    for it: the driver's temporal types (``neo4j.time``) to ``datetime`` ones (a Duration without
    months to a ``timedelta``, nanoseconds cut to microseconds as Memgraph keeps them), lists
    element-wise; any other value unchanged (a Duration with months has no ``mgp`` form: Memgraph
    keeps none)."""
    if isinstance(value, list):
        return [native_value(v) for v in value]
    if not type(value).__module__.startswith("neo4j"):
        return value
    months = getattr(value, "months", None)
    if months is not None:  # neo4j.time.Duration
        if months:
            return value
        return datetime.timedelta(
            days=value.days, seconds=value.seconds, microseconds=value.nanoseconds // 1000
        )
    to_native = getattr(value, "to_native", None)
    return to_native() if callable(to_native) else value


class CypherReader(Protocol):
    """What :class:`CypherGraphAccess` needs of a source: a read query's rows, and (for
    ``split_edges``) a write query run (a :class:`~memgraph_tf.client.sources.BoltSource` is
    one)."""

    def read(self, query: str, parameters: Any = None) -> list[dict[str, Any]]:
        """All rows of ``query`` run with ``parameters`` in a read transaction."""
        ...

    def write(self, query: str, parameters: Any = None) -> list[dict[str, Any]]:
        """All rows of ``query`` run with ``parameters`` in a write transaction."""
        ...


class CypherGraphAccess:
    """The procedures' graph-access protocol
    (:class:`memgraph_tf.procedures.access.GraphAccess`) over plain parameterised Cypher on a
    :class:`BoltSource`: every ``tf_features`` procedure runs over it on the client.

    Keys are the values of ``options.id_property`` (seeds looked up among ``:options.label`` nodes
    when given), or the server's ``id(n)`` without it. As in the query module, a key stands for the
    very node it was found on -- a seed, or a neighbour reached over an edge, with or without the
    label -- so properties and neighbours are fetched by internal id, and two nodes met under the
    same key are an error. Fetches are batched with ``UNWIND``; the packing code sorts and
    deduplicates neighbours itself, so the blob does not depend on the order the server returns rows
    in.
    """

    def __init__(self, source: CypherReader, options: Any) -> None:
        self._source = source
        self._id_property = options.id_property
        self._label = options.label
        self._node = f"(n:{quote_name(self._label, 'options.label')})" if self._label else "(n)"
        self._internal: dict[int, Any] = {}  # key -> the server's id(n) of the node it stands for
        self._adopted: dict[int, Any] = {}  # key -> id(n): a reservoir's members (adopt)
        self._adopted_names: dict[int, str] = {}  # adopted key -> how errors name it

    @classmethod
    def factory(cls, source: CypherReader) -> Callable[[Any], CypherGraphAccess]:
        return lambda options: cls(source, options)

    # -- protocol -------------------------------------------------------------------------------
    def node_name(self, key: int) -> str:
        from memgraph_tf.procedures.access import node_name

        return node_name(key, self._id_property)

    def check_abort(self) -> None:
        """Nothing to check on the client: the caller can interrupt."""

    def _key(self, var: str) -> str:
        if self._id_property:
            return f"{var}.{quote_name(self._id_property, 'options.id_property')}"
        return f"id({var})"

    def _match(self) -> str:
        return f"MATCH {self._node} WHERE {self._key('n')} = k"

    def _rows(self, keys: Sequence[int]) -> list[dict[str, Any]]:
        """``{"key", "internal"}`` per distinct key: the node each key stands for."""
        if self._id_property is None:
            return [{"key": k, "internal": k} for k in dict.fromkeys(keys)]
        return [{"key": k, "internal": self._internal[k]} for k in dict.fromkeys(keys)]

    def _check_id(self, key: Any, internal: Any) -> None:
        """Raises :class:`GraphDataError` unless the key found on node ``internal`` is an
        integer."""
        if not isinstance(key, int) or isinstance(key, bool):
            what = "no value" if key is None else f"{type(key).__name__} {key!r}"
            raise GraphDataError(
                f"node {internal} property {self._id_property!r} (options.id_property): "
                f"expected an integer id, got {what}"
            )

    def _register(self, key: int, internal: Any) -> None:
        seen = self._internal.setdefault(key, internal)
        if seen != internal:
            raise GraphDataError(
                f"options.id_property: expected unique ids, got {self._id_property} = {key} on the "
                f"nodes with internal ids {seen} and {internal}"
            )

    def adopt(
        self, keys: Sequence[int], internals: Sequence[int], names: Sequence[str] | None = None
    ) -> None:
        """Registers each key as the node with that ``id(n)`` (a reservoir's members; without
        ``options.id_property`` keys are internal ids already). Reading one no longer in the
        graph, or (with ``options.id_property``) no longer holding its key, raises the query
        module's error for it (naming it ``names[i]``, default :meth:`node_name`)."""
        for i, (key, internal) in enumerate(zip(keys, internals)):
            if self._id_property is not None:
                self._register(key, internal)
            if key not in self._adopted:
                self._adopted[key] = internal
                if names is not None:
                    self._adopted_names[key] = names[i]

    def properties(self, keys: Sequence[int], names: Sequence[str]) -> list[list[Any]]:
        columns = "".join(
            f", n.{quote_name(name, 'properties')} AS p{i}" for i, name in enumerate(names)
        )
        checked = self._id_property is not None and any(k in self._adopted for k in keys)
        if checked:  # an adopted key is checked against the node's (as the query module does)
            columns += f", {self._key('n')} AS now"
        query = (
            "UNWIND $rows AS row MATCH (n) WHERE id(n) = row.internal RETURN row.key AS key"
            + columns
        )
        rows = self._source.read(query, {"rows": self._rows(keys)})
        by_key = {
            row["key"]: [native_value(row[f"p{i}"]) for i in range(len(names))] for row in rows
        }
        if checked:
            now = {row["key"]: row["now"] for row in rows}
        missing = [
            k for k in keys if k not in by_key or (checked and k in self._adopted and now[k] != k)
        ]
        if missing and missing[0] in self._adopted:
            from memgraph_tf.procedures.access import stale_member

            name = self._adopted_names.get(missing[0]) or self.node_name(missing[0])
            raise GraphDataError(stale_member(name, self._adopted[missing[0]]))
        if missing:
            raise GraphDataError(
                f"{self.node_name(missing[0])}: expected the node to exist, got none (deleted "
                "while packing?)"
            )
        return [by_key[k] for k in keys]

    def present_relationships(
        self, keys: Sequence[int], read: NeighbourRead, wanted: Sequence[set[tuple]]
    ) -> list[set[tuple]]:
        """One ``UNWIND`` query per batch: ``id(r)`` and ``id(m)`` of each relationship, those
        wanted kept."""
        params: dict[str, Any] = {"rows": self._rows(keys)}
        where = ""
        if read.edge_types is not None:
            where, params["types"] = " AND type(r) IN $types", list(read.edge_types)
        pattern = {"out": "-[r]->", "in": "<-[r]-", "both": "-[r]-"}[read.direction]
        query = (
            f"UNWIND $rows AS row MATCH (n){pattern}(m) WHERE id(n) = row.internal{where} "
            "RETURN row.key AS key, id(r) AS rel, id(m) AS other"
        )
        found: dict[int, list[tuple]] = {k: [] for k in keys}
        for row in self._source.read(query, params):
            found[row["key"]].append((row["rel"], row["other"]))
        return [want.intersection(found[k]) for k, want in zip(keys, wanted)]

    def neighbours(self, keys: Sequence[int], read: NeighbourRead) -> list[list[int]]:
        """With a ``read.label`` (a typed step: one relationship type, its name checked by the
        step's parser) the type and the label are in the pattern; else the types are a
        parameter."""
        edge_types, label, held_out = read.edge_types, read.label, read.held_out
        params: dict[str, Any] = {"rows": self._rows(keys)}
        where = ""
        if label is not None and edge_types is not None and len(edge_types) == 1:
            rel = f"[r:{quote_name(edge_types[0], 'type')}]"
        else:
            rel = "[r]"
            if edge_types is not None:
                where, params["types"] = " AND type(r) IN $types", list(edge_types)
        pattern = {"out": f"-{rel}->", "in": f"<-{rel}-", "both": f"-{rel}-"}[read.direction]
        other = "(m)" if label is None else f"(m:{quote_name(label, 'label')})"
        if held_out is not None:  # a relationship without the split property is kept
            prop = f"r.{quote_name(held_out.property, 'options.split_property')}"
            where += f" AND ({prop} IS NULL OR NOT {prop} IN $held_out)"
            params["held_out"] = sorted(held_out.values)
        query = (
            f"UNWIND $rows AS row MATCH (n){pattern}{other} WHERE id(n) = row.internal{where} "
            f"RETURN row.key AS key, {self._key('m')} AS nbr, id(m) AS internal"
        )
        found: dict[int, list[int]] = {k: [] for k in keys}
        for row in self._source.read(query, params):
            nbr = row["nbr"]
            self._check_id(nbr, row["internal"])
            if self._id_property is not None:
                self._register(nbr, row["internal"])
            found[row["key"]].append(nbr)
        return [found[k] for k in keys]

    def valued_neighbours(
        self,
        keys: Sequence[int],
        step: Any,
        held_out: Any = None,
        names: Sequence[str] | None = None,
    ) -> list[list[tuple[int, Any, Any, bool]]]:
        """One ``UNWIND`` query per batch: each relationship of ``step`` with its weight or time
        property (with ``names``: the tuple of those properties, through :func:`native_value`),
        its ``id(r)`` and whether it starts at the key's node."""
        params: dict[str, Any] = {"rows": self._rows(keys)}
        rel = f"[r:{quote_name(step.rel_type, 'type')}]"
        pattern = {"out": f"-{rel}->", "in": f"<-{rel}-", "both": f"-{rel}-"}[step.direction]
        where = ""
        if held_out is not None:  # a relationship without the split property is kept
            prop = f"r.{quote_name(held_out.property, 'options.split_property')}"
            where = f" AND ({prop} IS NULL OR NOT {prop} IN $held_out)"
            params["held_out"] = sorted(held_out.values)
        if names is None:
            value = f"r.{quote_name(step.relationship_property, 'property')}"
        else:
            value = "[" + ", ".join(f"r.{quote_name(n, 'property')}" for n in names) + "]"
        query = (
            f"UNWIND $rows AS row MATCH (n){pattern}(m:{quote_name(step.right, 'label')}) "
            f"WHERE id(n) = row.internal{where} RETURN row.key AS key, {self._key('m')} AS nbr, "
            f"id(m) AS internal, {value} AS weight, id(r) AS rel, "
            "id(startNode(r)) = id(n) AS outgoing"
        )
        found: dict[int, list[tuple[int, Any, Any, bool]]] = {k: [] for k in keys}
        for row in self._source.read(query, params):
            nbr = row["nbr"]
            self._check_id(nbr, row["internal"])
            if self._id_property is not None:
                self._register(nbr, row["internal"])
            weight = row["weight"]
            if names is not None:
                weight = tuple(native_value(v) for v in weight)
            found[row["key"]].append((nbr, weight, row["rel"], row["outgoing"]))
        return [found[k] for k in keys]

    def first_node_with(self, names: Sequence[str]) -> int | None:
        """The key of the node with the smallest ``id(n)`` (with ``options.label``) having all
        ``names`` and, with ``options.id_property``, an id; None when there is none."""
        required = list(names) + ([self._id_property] if self._id_property is not None else [])
        where = " AND ".join(f"n.{quote_name(name, 'properties')} IS NOT NULL" for name in required)
        rows = self._source.read(
            f"MATCH {self._node} WHERE {where} RETURN {self._key('n')} AS key, id(n) AS internal "
            "ORDER BY internal LIMIT 1"
        )
        if not rows:
            return None
        key, internal = rows[0]["key"], rows[0]["internal"]
        if self._id_property is not None:
            self._check_id(key, internal)
            self._register(key, internal)
        return key

    def label_values(self, name: str) -> list[tuple[Any, Any]]:
        """``(value, id(n) of one node holding it)`` per distinct value of ``name`` among the nodes
        (with ``options.label``) that have it: one aggregating query, a row per class."""
        prop = f"n.{quote_name(name, 'options.label_property')}"
        rows = self._source.read(
            f"MATCH {self._node} WHERE {prop} IS NOT NULL RETURN {prop} AS value, min(id(n)) AS "
            "internal"
        )
        return [(row["value"], row["internal"]) for row in rows]

    def resolve(self, nodes: Any, param: str) -> list[int]:
        """Integer ids -> keys, in order; raises naming ``param[i]`` for a bad or unknown id."""
        if not isinstance(nodes, (list, tuple)):
            raise GraphDataError(
                f"{param}: expected a list of integer ids, got {type(nodes).__name__}"
            )
        if not nodes:
            raise GraphDataError(f"{param}: expected at least one node or id, got an empty list")
        for i, node in enumerate(nodes):
            if not isinstance(node, int) or isinstance(node, bool):
                raise GraphDataError(
                    f"{param}[{i}]: expected an integer id, got {type(node).__name__} {node!r}"
                )
        distinct = list(dict.fromkeys(nodes))
        query = (
            f"UNWIND $keys AS k {self._match()} RETURN k AS key, count(n) AS found, "
            f"collect(id(n))[0..2] AS internal"
        )
        counts = {row["key"]: row for row in self._source.read(query, {"keys": distinct})}
        for i, node in enumerate(nodes):
            row = counts.get(node)
            if row is None or row["found"] == 0:
                if self._id_property is None:
                    raise GraphDataError(
                        f"{param}[{i}]: unknown node id {node} (no node has that internal id)"
                    )
                scope = f":{self._label} node" if self._label else "node"
                raise GraphDataError(
                    f"{param}[{i}]: unknown node id {node} (no {scope} has {self._id_property} = "
                    f"{node})"
                )
            if row["found"] > 1:
                a, b = row["internal"][:2]
                raise GraphDataError(
                    f"options.id_property: expected unique ids, got {self._id_property} = {node} "
                    "on the "
                    f"nodes with internal ids {a} and {b}"
                )
            if self._id_property is not None:
                self._register(node, row["internal"][0])
        return list(nodes)

    # -- typed reads ----------------------------------------------------------------------------
    def internal_ids(self, keys: Sequence[int]) -> list[int]:
        if self._id_property is None:
            return list(keys)
        return [self._internal[k] for k in keys]

    def has_label(self, keys: Sequence[int], label: str) -> list[bool]:
        rows = self._source.read(
            "UNWIND $rows AS row MATCH (n) WHERE id(n) = row.internal "
            "RETURN row.key AS key, $label IN labels(n) AS ok",
            {"rows": self._rows(keys), "label": label},
        )
        ok = {r["key"]: bool(r["ok"]) for r in rows}
        return [ok.get(k, False) for k in keys]

    # -- metagraph scans (tf_features.schema, sample_typed, sample_pairs) -----------------------
    def label_nodes(self, label: str) -> list[int]:
        node = f"(n:{quote_name(label, 'label')})"
        return [r["i"] for r in self._source.read(f"MATCH {node} RETURN id(n) AS i ORDER BY i")]

    def label_counts(self) -> dict[str, int]:
        rows = self._source.read("MATCH (n) UNWIND labels(n) AS label RETURN label, count(*) AS c")
        return {r["label"]: r["c"] for r in rows}

    def triples(self) -> dict[tuple[str, str, str], int]:
        rows = self._source.read(
            "MATCH (a)-[r]->(b) UNWIND labels(a) AS la UNWIND labels(b) AS lb "
            "RETURN la, type(r) AS t, lb, count(*) AS c"
        )
        return {(r["la"], r["t"], r["lb"]): r["c"] for r in rows}

    def has_triple(self, source: str, rel_type: str, target: str) -> bool:
        pattern = (
            f"(a:{quote_name(source, 'label')})-[:{quote_name(rel_type, 'type')}]->"
            f"(b:{quote_name(target, 'label')})"
        )
        return bool(self._source.read(f"MATCH {pattern} RETURN 1 AS one LIMIT 1"))

    # -- the relationships of an edge step (tf_features.split_edges) ----------------------------
    def relationships(self, step: Any) -> list[tuple[Any, Any, Any]]:
        """The handles are ``(id(r), id of its start node, type)``: what :meth:`write_splits`
        finds each relationship by."""
        left = f"(a:{quote_name(step.left, 'label')})"
        right = f"(b:{quote_name(step.right, 'label')})"
        rel = f"[r:{quote_name(step.rel_type, 'type')}]"
        seen: set[Any] = set()
        out = []
        for direction in ("out", "in"):
            if step.direction not in (direction, "both"):
                continue
            arrow = f"-{rel}->" if direction == "out" else f"<-{rel}-"
            rows = self._source.read(
                f"MATCH {left}{arrow}{right} RETURN id(a) AS a, id(b) AS b, id(r) AS r"
            )
            for row in rows:
                if row["r"] in seen:
                    continue
                seen.add(row["r"])
                start = row["a"] if direction == "out" else row["b"]  # the relationship's start
                out.append(((row["r"], start, step.rel_type), row["a"], row["b"]))
        return out

    def relationship_values(self, handles: Sequence[Any], name: str) -> list[Any]:
        """Read in chunks of 1000 relationships per type; values through :func:`native_value`."""
        by_type: dict[str, list[dict[str, Any]]] = {}
        for rel, start, rel_type in handles:
            by_type.setdefault(rel_type, []).append({"r": rel, "s": start})
        prop = quote_name(name, "options.time_property")
        found: dict[Any, Any] = {}
        for rel_type, items in by_type.items():
            query = (
                f"UNWIND $rows AS row MATCH (s)-[r:{quote_name(rel_type, 'type')}]->() "
                f"WHERE id(s) = row.s AND id(r) = row.r RETURN row.r AS r, r.{prop} AS v"
            )
            for start in range(0, len(items), 1000):
                for row in self._source.read(query, {"rows": items[start : start + 1000]}):
                    found[row["r"]] = native_value(row["v"])
        return [found.get(rel) for rel, _, _ in handles]

    def write_splits(self, rows: Sequence[tuple[Any, str]], name: str) -> None:
        """In write transactions of up to 1000 relationships."""
        by_type: dict[str, list[dict[str, Any]]] = {}
        for (rel, start, rel_type), value in rows:
            by_type.setdefault(rel_type, []).append({"r": rel, "s": start, "v": value})
        prop = quote_name(name, "options.split_property")
        for rel_type, items in by_type.items():
            query = (
                f"UNWIND $rows AS row MATCH (s)-[r:{quote_name(rel_type, 'type')}]->() "
                f"WHERE id(s) = row.s AND id(r) = row.r SET r.{prop} = row.v"
            )
            for start in range(0, len(items), 1000):
                self._source.write(query, {"rows": items[start : start + 1000]})

    def write_node_values(self, rows: Sequence[tuple[int, Any]], name: str) -> None:
        """In write transactions of up to 1000 nodes (by internal id)."""
        prop = quote_name(name, "options.write_property")
        query = f"UNWIND $rows AS row MATCH (n) WHERE id(n) = row.n SET n.{prop} = row.v"
        items = [{"n": n, "v": v} for n, v in rows]
        for start in range(0, len(items), 1000):
            self._source.write(query, {"rows": items[start : start + 1000]})


class CypherReservoirStore:
    """The bounded mode's :class:`~memgraph_tf.procedures.reservoir.ReservoirStore` over plain
    Cypher (``tf_features.build_reservoirs`` / ``update_reservoirs`` on the client): nodes by
    ``id(n)``, one batched query per read or write."""

    def __init__(self, source: CypherReader) -> None:
        self._source = source

    def check_abort(self) -> None:
        """Nothing to check on the client: the caller can interrupt."""

    def node_page(self, after: int | None, limit: int, label: str | None) -> list[int]:
        where = "" if after is None else "WHERE id(n) > $after "
        node = "(n)" if label is None else f"(n:{quote_name(label, 'options.label')})"
        rows = self._source.read(
            f"MATCH {node} {where}RETURN id(n) AS i ORDER BY i LIMIT $limit",
            {"after": after, "limit": limit},
        )
        return [row["i"] for row in rows]

    def step_relationships(
        self, internals: Sequence[int], opts: BuildOptions
    ) -> list[list[tuple[int, int, Any, bool]]]:
        edge_types, direction, label = opts.edge_types, opts.direction, opts.neighbour_label
        where, params = "", {"ids": list(internals)}
        other = "(m)" if label is None else f"(m:{quote_name(label, 'options.neighbour_label')})"
        if edge_types is not None:
            where, params["types"] = " AND type(r) IN $types", list(edge_types)
        value = "null" if opts.weight is None else f"r.{quote_name(opts.weight, 'options.weight')}"
        found: dict[Any, dict[int, tuple[int, int, Any, bool]]] = {i: {} for i in internals}
        for arrow in ("-[r]->", "<-[r]-"):
            if direction != "both" and arrow != ("-[r]->" if direction == "out" else "<-[r]-"):
                continue
            rows = self._source.read(
                f"UNWIND $ids AS i MATCH (n){arrow}{other} WHERE id(n) = i{where} "
                f"RETURN i, id(r) AS r, id(m) AS m, {value} AS v",
                params,
            )
            for row in rows:
                found[row["i"]].setdefault(
                    row["r"], (row["r"], row["m"], row["v"], arrow == "-[r]->")
                )
        return [list(found[i].values()) for i in internals]

    def relationship_values(
        self, rows: Sequence[tuple[int, int, bool]], prop: str
    ) -> dict[int, Any]:
        found: dict[int, Any] = {}
        name = quote_name(prop, "options.weight")
        for outgoing, arrow in ((True, "-[r]->"), (False, "<-[r]-")):
            wanted = [{"i": i, "r": r} for i, r, out in rows if out == outgoing]
            if not wanted:
                continue
            got = self._source.read(
                f"UNWIND $rows AS row MATCH (n){arrow}() WHERE id(n) = row.i AND id(r) = row.r "
                f"RETURN id(r) AS r, r.{name} AS v",
                {"rows": wanted},
            )
            found.update((row["r"], row["v"]) for row in got)
        return found

    def labelled(self, internals: Sequence[int], label: str) -> list[bool]:
        rows = self._source.read(
            f"UNWIND $ids AS i MATCH (n:{quote_name(label, 'options.neighbour_label')}) "
            "WHERE id(n) = i RETURN i",
            {"ids": list(internals)},
        )
        have = {row["i"] for row in rows}
        return [i in have for i in internals]

    def read(self, internals: Sequence[int], name: str) -> list[Any]:
        prop = quote_name(name, "property")
        rows = self._source.read(
            f"UNWIND $ids AS i MATCH (n) WHERE id(n) = i RETURN i, n.{prop} AS v",
            {"ids": list(internals)},
        )
        values = {row["i"]: row["v"] for row in rows}
        return [values.get(i) for i in internals]

    def write(self, rows: Sequence[tuple[int, Any]], name: str) -> None:
        if not rows:
            return
        prop = quote_name(name, "property")
        self._source.write(
            f"UNWIND $rows AS row MATCH (n) WHERE id(n) = row.i SET n.{prop} = row.v",
            {"rows": [{"i": i, "v": v} for i, v in rows]},
        )
