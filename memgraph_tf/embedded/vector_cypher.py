"""The Cypher of Memgraph's vector index statements, parsed as Memgraph's grammar has them.

``src/query/frontend/opencypher/grammar/MemgraphCypher.g4``::

    vectorIndexLabels : '(' propertyKeyName ')'
                      | ':' labelName ( '|' ':'? labelName )* '(' propertyKeyName ')'
                      | ':' labelName ( '&' ':'? labelName )+ '(' propertyKeyName ')' ;
    createVectorIndex : CREATE VECTOR INDEX indexName ON vectorIndexLabels
                        WITH CONFIG configsMap=configMapOrExpression ;
    dropVectorIndex : DROP VECTOR INDEX indexName ;

and ``Cypher.g4``'s ``SHOW VECTOR INDEX INFO`` / ``SHOW VECTOR INDEXES``. Keywords are
case-insensitive; names are identifiers or backtick-quoted (a doubled backtick is one); one
trailing ``;`` is allowed. The config is a map of literals (and ``$parameters``) or a
``$parameter`` holding a map; query-module functions are not evaluated here.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from typing import Any

from memgraph_tf.embedded.vector_index import LabelFilter, VectorIndexError

__all__ = ["Statement", "parse_statement"]

_TOKEN = re.compile(
    r"""
    (?P<ws>\s+|//[^\n]*|/\*.*?\*/)
    |(?P<name>`(?:[^`]|``)*`)
    |(?P<string>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")
    |(?P<number>-?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?)
    |(?P<param>\$(?:\w+|`(?:[^`]|``)*`))
    |(?P<word>[^\W\d]\w*)
    |(?P<punct>[(){}\[\]:,|&;])
    """,
    re.VERBOSE | re.DOTALL,
)
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "'": "'", '"': '"', "\\": "\\"}


@dataclasses.dataclass(frozen=True)
class Statement:
    """A parsed statement: ``action`` is ``create`` / ``drop`` / ``show``."""

    action: str
    name: str = ""
    label_filter: LabelFilter | None = None
    property: str = ""
    config: Any = None


def _tokens(text: str) -> list[tuple[str, str]]:
    out, pos = [], 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise VectorIndexError(f"Invalid input at offset {pos}: {text[pos : pos + 20]!r}")
        pos = m.end()
        if m.lastgroup != "ws":
            out.append((m.lastgroup or "", m.group()))
    return out


class _Parser:
    def __init__(self, text: str, parameters: Mapping[str, Any]) -> None:
        self.toks = _tokens(text)
        self.pos = 0
        self.parameters = parameters

    def peek(self) -> tuple[str, str]:
        return self.toks[self.pos] if self.pos < len(self.toks) else ("end", "")

    def fail(self, expected: str) -> VectorIndexError:
        kind, text = self.peek()
        got = "the end of the query" if kind == "end" else repr(text)
        return VectorIndexError(f"Invalid vector index statement: expected {expected}, got {got}")

    def keyword(self, word: str) -> None:
        kind, text = self.peek()
        if kind != "word" or text.upper() != word:
            raise self.fail(word)
        self.pos += 1

    def punct(self, char: str) -> bool:
        if self.peek() == ("punct", char):
            self.pos += 1
            return True
        return False

    def expect(self, char: str) -> None:
        if not self.punct(char):
            raise self.fail(repr(char))

    def name(self, what: str) -> str:
        kind, text = self.peek()
        if kind == "word":
            self.pos += 1
            return text
        if kind == "name":
            self.pos += 1
            return text[1:-1].replace("``", "`")
        raise self.fail(what)

    def end(self) -> None:
        self.punct(";")
        if self.peek()[0] != "end":
            raise self.fail("the end of the query")

    def labels(self) -> tuple[LabelFilter, str]:
        if self.punct("("):
            prop = self.name("a property name")
            self.expect(")")
            return LabelFilter("wildcard"), prop
        self.expect(":")
        names = [self.name("a label name")]
        separator = None
        while self.peek() in (("punct", "|"), ("punct", "&")):
            sep = self.peek()[1]
            if separator not in (None, sep):
                raise self.fail("'(' (a filter is all '|' or all '&')")
            separator = sep
            self.pos += 1
            self.punct(":")
            names.append(self.name("a label name"))
        self.expect("(")
        prop = self.name("a property name")
        self.expect(")")
        mode = "single" if separator is None else ("any" if separator == "|" else "all")
        return LabelFilter(mode, tuple(names)), prop

    def value(self) -> Any:
        kind, text = self.peek()
        self.pos += 1
        if kind == "number":
            return float(text) if any(c in text for c in ".eE") else int(text)
        if kind == "string":
            return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(0)), text[1:-1])
        if kind == "param":
            key = text[1:].strip("`")
            if key not in self.parameters:
                raise VectorIndexError(f"Parameter ${key} not provided.")
            return self.parameters[key]
        if kind == "word" and text.upper() in ("TRUE", "FALSE", "NULL"):
            return {"TRUE": True, "FALSE": False, "NULL": None}[text.upper()]
        if (kind, text) == ("punct", "["):
            items: list[Any] = []
            while not self.punct("]"):
                if items:
                    self.expect(",")
                items.append(self.value())
            return items
        if (kind, text) == ("punct", "{"):
            return self.map_rest()
        self.pos -= 1
        raise self.fail("a literal or a $parameter")

    def map_rest(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        while not self.punct("}"):
            if out:
                self.expect(",")
            kind = self.peek()[0]
            if kind == "string":
                key = self.value()
            elif kind in ("word", "name"):
                key = self.name("a config key")
            else:
                raise self.fail("a config key (a string or a name)")
            self.expect(":")
            out[key] = self.value()
        return out

    def statement(self) -> Statement:
        kind, text = self.peek()
        verb = text.upper() if kind == "word" else ""
        self.pos += 1
        if verb == "SHOW":
            self.keyword("VECTOR")
            if self.peek()[0] == "word" and self.peek()[1].upper() == "INDEXES":
                self.pos += 1
            else:
                self.keyword("INDEX")
                self.keyword("INFO")
            self.end()
            return Statement("show")
        if verb not in ("CREATE", "DROP"):
            self.pos -= 1
            raise self.fail("CREATE, DROP or SHOW")
        self.keyword("VECTOR")
        self.keyword("INDEX")
        name = self.name("an index name")
        if verb == "DROP":
            self.end()
            return Statement("drop", name)
        self.keyword("ON")
        label_filter, prop = self.labels()
        self.keyword("WITH")
        self.keyword("CONFIG")
        config = self.value()
        self.end()
        return Statement("create", name, label_filter, prop, config)


def parse_statement(text: str, parameters: Mapping[str, Any] | None = None) -> Statement:
    """Parses one ``CREATE VECTOR INDEX`` / ``DROP VECTOR INDEX`` / ``SHOW VECTOR INDEX INFO``
    statement; raises :class:`VectorIndexError` naming the offending token for anything
    Memgraph's grammar refuses (and for a ``$parameter`` not in ``parameters``)."""
    return _Parser(text, parameters or {}).statement()
