"""Which nodes a batch-inference run reads, and how its predictions go back: the one home of the
rules that ``memgraph-tf classify`` (:mod:`memgraph_tf.batch`) and the Beam transforms
(:mod:`memgraph_tf.beam`) share, over any :class:`~memgraph_tf.client.sources.GraphSource`.

* **Property names** (:func:`property_names`): for write property ``P`` (default
  :data:`DEFAULT_WRITE_PROPERTY`, ``predicted_class``) a prediction is ``P`` (the class),
  ``P_score`` (its score) and ``P_version`` (the model version), on every path --
  ``memgraph-tf classify``, Beam, :func:`memgraph_tf.client.predict_and_write`. The score's old
  name :data:`LEGACY_SCORE_PROPERTY` (``predicted_score``) is still read for one release
  (:func:`read_score`).
* **Node selection** (:class:`NodeSelection`, :func:`bundle_selection`): a label (the bundle's
  ``options.label`` unless another is refused: :func:`selection_label`), the node key
  (``options.id_property``, else the internal id), a ``where`` predicate (Cypher, checked by
  :func:`check_where`, on Bolt; a callable ``key -> bool`` on an embedded graph) and a
  :class:`Shard`.
* **Paging and write-back** (:class:`NodeTable`): counts, key bounds, keyset pages (``key >
  $after ORDER BY key LIMIT n``, never SKIP; :class:`KeysetScan` pages a whole key range and
  refuses a page that does not ascend past the last key) and one write statement per batch that
  sets ``P``, ``P_score`` and ``P_version`` together.

No TensorFlow and no serving import: the client layer.
"""

from __future__ import annotations

import bisect
import dataclasses
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from memgraph_tf.client.sources import BoltSource, EmbeddedSource, GraphSource, quote_name
from memgraph_tf.errors import ConfigurationError, GraphDataError, KeysetPagingError

#: The class property batch inference writes unless told otherwise.
DEFAULT_WRITE_PROPERTY = "predicted_class"
SCORE_SUFFIX = "_score"
VERSION_SUFFIX = "_version"
#: The score property :func:`memgraph_tf.client.predict_and_write` wrote before it used
#: ``predicted_class_score``: still read (never written) for one release, see :func:`read_score`.
LEGACY_SCORE_PROPERTY = "predicted_score"
#: The prefix of the query parameters batch inference adds; ``where`` parameters may not use it.
PARAM_PREFIX = "mgtf_"

Prediction = tuple[int, Any, float | None]
"""``(node key, class label, score)``; an embedding run writes ``(node key, vector, None)``: a
score of None sets no ``P_score``."""


def property_names(write_property: str) -> tuple[str, str, str]:
    """``(class, score, version)`` property names for write property ``P``: ``P``, ``P_score``,
    ``P_version``. The one naming rule of predictions; every writer and reader uses it."""
    return write_property, write_property + SCORE_SUFFIX, write_property + VERSION_SUFFIX


def read_score(get: Callable[[str], Any], write_property: str = DEFAULT_WRITE_PROPERTY) -> Any:
    """A node's score for write property ``P``: ``get(P_score)``; for the default ``P``, when that
    is None, ``get("predicted_score")`` (the name written before, read for one release). ``get``
    reads one property of the node (e.g. ``lambda p: graph.get_property(node, p)``)."""
    score = get(property_names(write_property)[1])
    if score is None and write_property == DEFAULT_WRITE_PROPERTY:
        score = get(LEGACY_SCORE_PROPERTY)
    return score


# ------------------------------------------------------------------------------------------ shards
@dataclasses.dataclass(frozen=True)
class Shard:
    """Shard ``index`` of ``count``: the nodes whose key modulo ``count`` (the non-negative
    remainder, also for negative keys) is ``index``. Guarantees: for a given ``count`` every
    integer key is in exactly one shard, the same in Python (:meth:`contains`) and in Cypher
    (:meth:`cypher`)."""

    index: int = 0
    count: int = 1

    def __post_init__(self) -> None:
        for name in ("index", "count"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool):
                raise ConfigurationError(f"shard: expected integers i/N, got {name} {value!r}")
        if self.count < 1 or not 0 <= self.index < self.count:
            raise ConfigurationError(
                f"shard: expected i/N with N >= 1 and 0 <= i < N, got {self.index}/{self.count}"
            )

    @classmethod
    def parse(cls, text: str) -> Shard:
        """``"i/N"`` -> ``Shard(i, N)``; anything else raises :class:`ConfigurationError`."""
        match = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", str(text))
        if match is None:
            raise ConfigurationError(f"shard: expected i/N such as 0/3, got {text!r}")
        return cls(int(match[1]), int(match[2]))

    def contains(self, key: int) -> bool:
        """Whether ``key`` is in this shard."""
        return key % self.count == self.index  # Python's % is the non-negative remainder here

    def cypher(self, key: str) -> str:
        """The Cypher condition for ``key`` (an expression), with parameters ``$mgtf_shards`` (N)
        and ``$mgtf_shard`` (i). Cypher's ``%`` keeps the dividend's sign, hence the ``+ N``."""
        n, i = f"${PARAM_PREFIX}shards", f"${PARAM_PREFIX}shard"
        return f"(({key} % {n}) + {n}) % {n} = {i}"

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


# ---------------------------------------------------------------------------------------- --where
_CLAUSE_WORDS = frozenset(
    {
        "MATCH",
        "OPTIONAL",
        "CREATE",
        "MERGE",
        "DELETE",
        "DETACH",
        "SET",
        "REMOVE",
        "CALL",
        "RETURN",
        "WITH",
        "UNWIND",
        "FOREACH",
        "LOAD",
        "UNION",
        "ORDER",
        "SKIP",
        "LIMIT",
        "YIELD",
        "DROP",
        "USING",
        "PROFILE",
        "EXPLAIN",
        "FINISH",
        "START",
        "COMMIT",
        "ROLLBACK",
        "BEGIN",
    }
)
_PAIRS = {")": "(", "]": "[", "}": "{"}


def _outside_literals(text: str) -> str:
    """``text`` with string literals and backquoted names blanked out (kept as ``''``); raises
    :class:`ConfigurationError` for an unterminated one."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in "'\"`":
            j = i + 1
            while j < n:
                if c != "`" and text[j] == "\\":
                    j += 2
                    continue
                if text[j] == c:
                    if c == "`" and j + 1 < n and text[j + 1] == "`":  # `` inside a backquoted name
                        j += 2
                        continue
                    break
                j += 1
            if j >= n:
                raise ConfigurationError(
                    f"where: expected a closed {c}...{c} starting at character "
                    f"{i}, got an unterminated one in {text!r}"
                )
            out.append(" '' ")
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def check_where(where: str, parameters: Mapping[str, Any] | None = None) -> str:
    """The predicate, stripped, when ``where`` is a single openCypher expression over ``n`` that
    can be placed in ``WHERE ... AND (<where>)``; raises :class:`ConfigurationError` naming the
    problem otherwise.

    Guarantees (checked outside string literals and backquoted names): no ``;`` and no comment,
    balanced brackets (so it cannot close the surrounding parenthesis), no clause keyword (MATCH,
    CREATE, SET, DELETE, CALL, RETURN, WITH, UNWIND, ...: subqueries are not allowed), and every
    ``$name`` it uses is in ``parameters`` and does not start with :data:`PARAM_PREFIX`. Values are
    only ever passed as parameters, never written into the query text."""
    if not isinstance(where, str) or not where.strip():
        raise ConfigurationError(
            f"where: expected a non-empty Cypher predicate over n, got {where!r}"
        )
    where = where.strip()
    bare = _outside_literals(where)
    for token in (";", "//", "/*"):
        if token in bare:
            raise ConfigurationError(
                f"where: expected one predicate expression, got {token!r} in {where!r}"
            )
    stack: list[str] = []
    for c in bare:
        if c in "([{":
            stack.append(c)
        elif c in _PAIRS and (not stack or stack.pop() != _PAIRS[c]):
            raise ConfigurationError(
                f"where: expected balanced brackets, got an unmatched {c!r} in {where!r}"
            )
    if stack:
        raise ConfigurationError(
            f"where: expected balanced brackets, got an unclosed {stack[-1]!r} in {where!r}"
        )
    for word in re.findall(
        r"[A-Za-z_][A-Za-z0-9_]*", re.sub(r"\$[A-Za-z_][A-Za-z0-9_]*", " ", bare)
    ):
        if word.upper() in _CLAUSE_WORDS:
            raise ConfigurationError(
                f"where: expected a predicate expression over n, got the clause "
                f"keyword {word.upper()} in {where!r}"
            )
    params = dict(parameters or {})
    for name in params:
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise ConfigurationError(f"where parameters: expected identifier names, got {name!r}")
        if name.startswith(PARAM_PREFIX):
            raise ConfigurationError(
                f"where parameters: names starting with {PARAM_PREFIX!r} are "
                f"reserved for batch inference, got {name!r}"
            )
    for name in re.findall(r"\$([A-Za-z_][A-Za-z0-9_]*)", bare):
        if name not in params:
            raise ConfigurationError(
                f"where: ${name} is used but not given (parameters: "
                f"{sorted(params) or 'none'}; CLI: --param {name}=VALUE)"
            )
    return where


def check_key_ids(ids: list[Any], key: str) -> list[int]:
    """``ids``, node keys a query returned for ``key`` (e.g. ``n.paper_id``), if each is an
    integer; raises :class:`GraphDataError` naming ``key`` and the value otherwise."""
    for value in ids:
        if not isinstance(value, int) or isinstance(value, bool):
            raise GraphDataError(
                f"node key {key}: expected integer ids, got {type(value).__name__} {value!r}"
            )
    return ids


# -------------------------------------------------------------------------------------- selection
@dataclasses.dataclass(frozen=True)
class NodeSelection:
    """Which nodes a run reads and writes: ``label`` (None: all), ``id_property`` (the node key;
    None: the internal id), ``where`` (Bolt: a parameterised Cypher predicate over ``n`` with
    ``where_params``, checked by :func:`check_where`; embedded: a callable key -> bool), ``shard``,
    and the prediction properties: ``write_property`` P (:func:`property_names`) and the model
    ``version``. ``version`` None reads every selected node (an export) and cannot write.

    Guarantees: every name is quotable (:func:`~memgraph_tf.client.sources.quote_name`) and a
    string ``where`` passed :func:`check_where`, else :class:`ConfigurationError` at construction;
    the selection is picklable when ``where`` is (a string always is)."""

    label: str | None = None
    id_property: str | None = None
    where: str | Callable[[int], bool] | None = None
    where_params: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    write_property: str = DEFAULT_WRITE_PROPERTY
    version: int | None = None
    shard: Shard = Shard()

    def __post_init__(self) -> None:
        for name in property_names(self.write_property):
            quote_name(name, "write_property")
        for name, value in (("label", self.label), ("id_property", self.id_property)):
            if value is not None:
                quote_name(value, name)
        if isinstance(self.where, str):
            object.__setattr__(self, "where", check_where(self.where, self.where_params))
        elif self.where is not None and not callable(self.where):
            raise ConfigurationError(
                f"where: expected a Cypher predicate over n or a callable key -> "
                f"bool, got {type(self.where).__name__}"
            )
        elif self.where_params:
            raise ConfigurationError("where parameters: only with a Cypher where predicate")
        if self.version is not None and (
            not isinstance(self.version, int) or isinstance(self.version, bool)
        ):
            raise ConfigurationError(
                f"version: expected an integer model version, got {self.version!r}"
            )
        if not isinstance(self.shard, Shard):
            raise ConfigurationError(
                f"shard: expected a Shard, got {type(self.shard).__name__} (Shard.parse('i/N'))"
            )


def selection_label(label: str | None, bundle_label: str | None) -> str | None:
    """The label batch inference classifies: ``label`` when given, else the bundle's
    ``options.label``. A model samples only its own label's nodes, so another label than the
    bundle's raises :class:`ConfigurationError`."""
    if label is not None and bundle_label is not None and label != bundle_label:
        raise ConfigurationError(
            f"label: the model samples :{bundle_label} nodes (its options.label), got "
            f"{label!r}; leave label out or give {bundle_label!r}"
        )
    return label if label is not None else bundle_label


def bundle_selection(
    options: Mapping[str, Any],
    version: int,
    *,
    label: str | None = None,
    where: str | Callable[[int], bool] | None = None,
    where_params: Mapping[str, Any] | None = None,
    write_property: str = DEFAULT_WRITE_PROPERTY,
    shard: Shard | str | None = None,
) -> NodeSelection:
    """The nodes batch inference classifies with a bundle whose sampling ``options`` are given
    (its config's ``options``) and whose model ``version`` is written: :func:`selection_label`,
    keyed by ``options.id_property`` (else internal ids); ``shard`` a :class:`Shard` or ``"i/N"``.
    ``memgraph-tf classify`` and the Beam pipeline both select through this function."""
    return NodeSelection(
        label=selection_label(label, options.get("label")),
        id_property=options.get("id_property"),
        where=where,
        where_params=dict(where_params or {}),
        write_property=write_property,
        version=version,
        shard=Shard.parse(shard) if isinstance(shard, str) else (shard or Shard()),
    )


def key_index(
    source: EmbeddedSource, label: str | None, id_property: str | None
) -> tuple[list[int], dict[int, int]]:
    """An embedded graph's ``(sorted keys, key -> internal id)`` of the nodes with ``label`` whose
    key (``id_property``, else the internal id) is an integer (the procedures cannot sample the
    others by id either), read under the source's lock. Raises :class:`GraphDataError` for a key
    that two nodes share."""
    graph = source.graph
    internal_of: dict[int, int] = {}
    with source.lock:
        for internal in graph.nodes(label):
            key = internal if id_property is None else graph.get_property(internal, id_property)
            if key is None or isinstance(key, bool) or not isinstance(key, int):
                continue
            if internal_of.setdefault(key, internal) != internal:
                raise GraphDataError(
                    f"{id_property}: expected unique ids, got {key} on the nodes "
                    f"with internal ids {internal_of[key]} and {internal}"
                )
    return sorted(internal_of), internal_of


# ------------------------------------------------------------------------------------- node table
class NodeTable:
    """Counts, key bounds, keyset pages and prediction writes over ``source`` (a
    :class:`~memgraph_tf.client.sources.BoltSource` or an
    :class:`~memgraph_tf.client.sources.EmbeddedSource`) for one :class:`NodeSelection`.

    Guarantees, for both kinds of source:

    * :meth:`count`, :meth:`bounds` and :meth:`page` see the same node set: the selected nodes
      (label, ``where``, shard) whose key is an integer, and with ``todo`` only those whose
      ``P_version`` is not the selection's version;
    * :meth:`page` returns keys in ascending order, ``key > after`` (and ``lo <= key < hi`` when
      given), at most ``limit`` of them (keyset pagination: no SKIP);
    * :meth:`write` sets ``P``, ``P_score`` and ``P_version`` of each node together, in one
      statement of one managed transaction per call (Bolt; the driver retries transient errors)
      or under the source's lock (embedded), so no node is ever half-written; with
      ``only_todo`` a node that already carries this version is left untouched, so writing a
      batch twice writes each node once.

    On an embedded graph the selected keys are read once, at construction (``index``: a
    :func:`key_index` result to reuse instead); ``where`` and the version filter are evaluated
    page by page. Every read and write of the embedded graph holds :attr:`GraphSource.lock`.
    """

    def __init__(
        self,
        source: GraphSource,
        selection: NodeSelection,
        *,
        index: tuple[list[int], dict[int, int]] | None = None,
    ) -> None:
        self.source = source
        self.selection = selection
        s = selection
        self._props = property_names(s.write_property)
        self.embedded = isinstance(source, EmbeddedSource)
        if self.embedded:
            if s.where is not None and not callable(s.where):
                raise ConfigurationError(
                    "where: the embedded graph runs no Cypher; expected a callable node key -> "
                    f"bool, got {type(s.where).__name__} (a Cypher predicate needs a Bolt graph)"
                )
            keys, internal_of = (
                index if index is not None else key_index(source, s.label, s.id_property)
            )
            if s.shard.count > 1:
                keys = [k for k in keys if s.shard.contains(k)]
            self._keys, self._internal = keys, internal_of
            return
        if not isinstance(source, BoltSource):
            raise ConfigurationError(
                f"source: expected a BoltSource or an EmbeddedSource, got {type(source).__name__}"
            )
        if s.where is not None and not isinstance(s.where, str):
            raise ConfigurationError(
                "where: expected a Cypher predicate string over n for a Bolt "
                f"source, got {type(s.where).__name__}"
            )
        self._node = f"(n:{quote_name(s.label, 'label')})" if s.label else "(n)"
        self._key = f"n.{quote_name(s.id_property, 'id_property')}" if s.id_property else "id(n)"
        # The key as key range conditions compare it. A property stays as it is (Memgraph answers
        # `n.id >= $lo` from a label-property index by a range scan). Internal ids are compared as
        # `id(n) + 0`: ArcadeDB (26.10) turns any comparison of a bare id(n) of an unlabelled node
        # -- `>`, `>=`, `<`, `<>` alike -- into a lookup of that one record id, so `MATCH (n) WHERE
        # id(n) > $after` returned no row or one. Memgraph plans `id(n) > $x` as a scan and a
        # filter either way (only `id(n) = x` and `id(n) IN list` become ScanAllById), so the
        # addition costs it one integer add per scanned node.
        self._range_key = self._key if s.id_property else "id(n) + 0"
        cls, score, ver = (quote_name(p, "write_property") for p in self._props)
        self._ver = ver
        self._set = f"n.{cls} = r.c, n.{score} = r.s, n.{ver} = ${PARAM_PREFIX}version"
        self._conditions = [f"{self._key} IS NOT NULL"]
        if s.shard.count > 1:
            self._conditions.append(s.shard.cypher(self._key))
        if s.where is not None:
            self._conditions.append(f"({s.where})")
        self._params = {
            **s.where_params,
            f"{PARAM_PREFIX}version": s.version,
            f"{PARAM_PREFIX}shards": s.shard.count,
            f"{PARAM_PREFIX}shard": s.shard.index,
        }

    @property
    def key_text(self) -> str:
        """The node key as the paging query names it: ``n.<id_property>`` or ``id(n)``."""
        if self.embedded:
            p = self.selection.id_property
            return f"n.{p}" if p else "id(n)"
        return self._key

    def _check_todo(self, todo: bool) -> None:
        if todo and self.selection.version is None:
            raise ConfigurationError("todo: the selection has no model version to compare with")

    # -- Bolt ------------------------------------------------------------------------------------
    def _cypher_where(self, todo: bool, extra: Sequence[str] = ()) -> str:
        conditions = list(self._conditions)
        if todo:
            conditions.append(f"(n.{self._ver} IS NULL OR n.{self._ver} <> ${PARAM_PREFIX}version)")
        return " AND ".join(conditions + list(extra))

    # -- embedded --------------------------------------------------------------------------------
    def _wanted(self, key: int, todo: bool) -> bool:
        where = self.selection.where
        if where is not None and not where(key):
            return False
        if todo:
            version = self.source.graph.get_property(self._internal[key], self._props[2])
            return version != self.selection.version
        return True

    # -- operations ------------------------------------------------------------------------------
    def count(self, todo: bool, *, lo: int | None = None, hi: int | None = None) -> int:
        """How many nodes are selected (with ``todo``: without this version's prediction; with
        ``lo`` / ``hi``: only keys ``lo <= key < hi``)."""
        self._check_todo(todo)
        if self.embedded:
            with self.source.lock:
                return sum(
                    1
                    for key in self._keys
                    if (lo is None or key >= lo)
                    and (hi is None or key < hi)
                    and self._wanted(key, todo)
                )
        extra, params = self._range(lo, hi)
        rows = self.source.read(
            f"MATCH {self._node} WHERE {self._cypher_where(todo, extra)} RETURN count(n) AS c",
            {**self._params, **params},
        )
        return int(rows[0]["c"]) if rows else 0

    def _range(self, lo: int | None, hi: int | None) -> tuple[list[str], dict[str, Any]]:
        p = PARAM_PREFIX
        extra = []
        if lo is not None:
            extra.append(f"{self._range_key} >= ${p}lo")
        if hi is not None:
            extra.append(f"{self._range_key} < ${p}hi")
        return extra, {f"{p}lo": lo, f"{p}hi": hi}

    def bounds(self, todo: bool) -> tuple[int, int] | None:
        """``(smallest key, largest key)`` of the selected nodes (with ``todo``: those without this
        version's prediction), or None when there are none."""
        self._check_todo(todo)
        if self.embedded:
            with self.source.lock:
                wanted = [k for k in self._keys if self._wanted(k, todo)]
            return (wanted[0], wanted[-1]) if wanted else None
        rows = self.source.read(
            f"MATCH {self._node} WHERE {self._cypher_where(todo)} RETURN min({self._key}) AS lo, "
            f"max({self._key}) AS hi",
            self._params,
        )
        if not rows or rows[0]["lo"] is None:
            return None
        lo, hi = check_key_ids([rows[0]["lo"], rows[0]["hi"]], self._key)
        return lo, hi

    def page(
        self,
        after: int | None,
        limit: int,
        todo: bool,
        *,
        lo: int | None = None,
        hi: int | None = None,
    ) -> list[int]:
        """Up to ``limit`` selected keys with ``key > after`` (None: from the start) and, when
        given, ``lo <= key < hi``; ascending."""
        self._check_todo(todo)
        if after is not None:
            lo = after + 1 if lo is None else max(lo, after + 1)
        if lo is not None and hi is not None and lo >= hi:
            return []
        if self.embedded:
            start = 0 if lo is None else bisect.bisect_left(self._keys, lo)
            out: list[int] = []
            with self.source.lock:
                for i in range(start, len(self._keys)):
                    key = self._keys[i]
                    if hi is not None and key >= hi:
                        break
                    if self._wanted(key, todo):
                        out.append(key)
                        if len(out) == limit:
                            break
            return out
        extra, params = self._range(lo, hi)
        query = (
            f"MATCH {self._node} WHERE {self._cypher_where(todo, extra)} "
            f"RETURN {self._key} AS id ORDER BY id LIMIT {int(limit)}"
        )
        rows = self.source.read(query, {**self._params, **params})
        return check_key_ids([row["id"] for row in rows], self._key)

    def scan(
        self, limit: int, todo: bool, *, lo: int | None = None, hi: int | None = None
    ) -> KeysetScan:
        """The selected keys (``lo <= key < hi`` when given) as a :class:`KeysetScan`: keyset
        pages of up to ``limit`` keys, each page checked to ascend past the previous one."""
        return KeysetScan(self, limit, todo, lo=lo, hi=hi)

    def write(self, predictions: Sequence[Prediction], *, only_todo: bool = False) -> int:
        """Writes ``(key, class, score)`` predictions with the selection's version (see the class
        docstring); returns the number of nodes written (keys that match no selected node, and
        with ``only_todo`` nodes already carrying this version, are not)."""
        version = self.selection.version
        if version is None:
            raise ConfigurationError("write: the selection has no model version to write")
        if not predictions:
            return 0
        if self.embedded:
            graph = self.source.graph
            cls, score, ver = self._props
            written = 0
            with self.source.lock:
                for nid, label, value in predictions:
                    internal = self._internal.get(nid)
                    if internal is None or (
                        only_todo and graph.get_property(internal, ver) == version
                    ):
                        continue
                    graph.set_property(internal, cls, label)
                    if value is not None:
                        graph.set_property(internal, score, float(value))
                    graph.set_property(internal, ver, version)
                    written += 1
            return written
        rows = [
            {"id": nid, "c": label, "s": None if score is None else float(score)}
            for nid, label, score in predictions
        ]
        guard = (
            f" AND (n.{self._ver} IS NULL OR n.{self._ver} <> ${PARAM_PREFIX}version)"
            if only_todo
            else ""
        )
        query = (
            f"UNWIND $rows AS r MATCH {self._node} WHERE {self._key} = r.id{guard} "
            f"SET {self._set} RETURN count(n) AS written"
        )
        result = self.source.write(query, {"rows": rows, f"{PARAM_PREFIX}version": version})
        return int(result[0]["written"]) if result else 0


class KeysetScan:
    """Iterating yields the pages of :meth:`NodeTable.page` over one key range, ``after`` = the
    last key of the page before, until a page shorter than ``limit`` (the range's end); keeps
    :attr:`read` (keys yielded) and :attr:`last_key` (the last one; None before any).

    Guarantees: every key yielded is an integer, greater than every key yielded before it, and
    within ``[lo, hi)``; otherwise :class:`~memgraph_tf.errors.KeysetPagingError` names the
    key and the key it should have followed (a server that ignores ``key > $after`` would
    otherwise repeat its page forever). A page that ends the scan early while selected nodes
    remain is not visible here: :meth:`unread` counts what is left after :attr:`last_key`."""

    def __init__(
        self,
        table: NodeTable,
        limit: int,
        todo: bool,
        *,
        lo: int | None = None,
        hi: int | None = None,
    ) -> None:
        if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
            raise ConfigurationError(f"limit: expected an integer >= 1, got {limit!r}")
        self.table, self.limit, self.todo, self.lo, self.hi = table, limit, todo, lo, hi
        self.read = 0
        self.last_key: int | None = None
        self.pages = 0

    def __iter__(self) -> Iterator[list[int]]:
        while True:
            keys = self.table.page(self.last_key, self.limit, self.todo, lo=self.lo, hi=self.hi)
            self.pages += 1
            self._check(keys)
            if keys:
                self.read += len(keys)
                self.last_key = keys[-1]
                yield keys
            if len(keys) < self.limit:
                return

    def _check(self, keys: list[int]) -> None:
        previous = self.last_key
        for key in keys:
            if previous is not None and key <= previous:
                raise KeysetPagingError(
                    f"keyset paging: page {self.pages} returned key {key} after key {previous} "
                    f"(expected keys > {previous}, ascending): the server does not honour the "
                    f"paging query's {self.table.key_text} > $after ORDER BY key; "
                    f"{self.read} node(s) read before it"
                )
            if (self.lo is not None and key < self.lo) or (self.hi is not None and key >= self.hi):
                raise KeysetPagingError(
                    f"keyset paging: page {self.pages} returned key {key} outside the key range "
                    f"[{self.lo}, {self.hi}): the server does not honour the paging query's "
                    f"range condition; {self.read} node(s) read before it"
                )
            previous = key

    def unread(self) -> int:
        """How many selected nodes (as the scan selects them) have a key after :attr:`last_key`
        (all of the range before any page): nodes an early-ending page left unread."""
        lo = self.lo if self.last_key is None else self.last_key + 1
        if self.lo is not None:
            lo = max(lo, self.lo)
        if lo is not None and self.hi is not None and lo >= self.hi:
            return 0
        return self.table.count(self.todo, lo=lo, hi=self.hi)


__all__ = [
    "DEFAULT_WRITE_PROPERTY",
    "LEGACY_SCORE_PROPERTY",
    "PARAM_PREFIX",
    "SCORE_SUFFIX",
    "VERSION_SUFFIX",
    "KeysetScan",
    "NodeSelection",
    "NodeTable",
    "Prediction",
    "Shard",
    "bundle_selection",
    "check_key_ids",
    "check_where",
    "key_index",
    "property_names",
    "read_score",
    "selection_label",
]
