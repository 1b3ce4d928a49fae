"""A REST request body -> its JSON document, as TF Serving's ``ParseJson`` reads it (rapidjson with
``kParseIterativeFlag | kParseNanAndInfFlag | kParseStopWhenDoneFlag``): :func:`parse_request_body`.

Deep nesting is found on the raw bytes before any Python object is built (:func:`deep_members`),
integers beyond int64 are read as :class:`.json_values.JsonBigNumber`, Python's JSON errors are
reported in rapidjson's words at rapidjson's offsets, and unpaired surrogate escapes are
rapidjson's error (:func:`surrogate_error_offset`). Every rejection is a 400
:class:`~.errors.ServingFailure`. No HTTP and no TensorFlow here; numpy on first use.
"""

from __future__ import annotations

import json
import math
import re

from memgraph_tf.serving.errors import ServingFailure
from memgraph_tf.serving.json_values import (
    DEBUG_STRING_BYTES,
    INT64_MAX,
    INT64_MIN,
    JsonBigNumber,
    SkippedValue,
    bad_request,
    format_error,
    json_value_str,
)

#: Default for the deepest JSON nesting a request may use (the top-level object is level 1).
DEFAULT_MAX_JSON_DEPTH = 64
#: The top-level keys of a request body that TF Serving reads (``FillSignature``,
#: ``FillPredictRequestFromJson``, ``FillClassifyRegressRequestFromJson``). A value nested deeper
#: than ``--max-json-depth`` under any other key is skipped unread, as rapidjson's iterative
#: parser reads it without recursion and nothing looks at it.
REQUEST_KEYS = frozenset({"signature_name", "instances", "inputs", "examples", "context"})


def _structure(body: bytes):
    """``(positions, deltas)`` of the brackets and braces of ``body`` that lie outside JSON
    strings (escaped quotes handled), with +1 for an opener and -1 for a closer. Exact up to the
    first syntax error of the document, which is as far as any JSON parser descends."""
    import numpy as np

    b = np.frombuffer(body, np.uint8)
    quotes = np.flatnonzero(b == 0x22)
    if quotes.size:
        backslashes = np.flatnonzero(b == 0x5C)
        if backslashes.size:
            starts = np.ones(backslashes.size, bool)
            starts[1:] = np.diff(backslashes) != 1
            run_start = backslashes[starts]
            prev = quotes - 1
            after_bs = np.zeros(quotes.size, bool)
            ok = prev >= 0
            after_bs[ok] = b[prev[ok]] == 0x5C
            where = np.flatnonzero(after_bs)
            run = prev[where] - run_start[np.searchsorted(run_start, prev[where], "right") - 1] + 1
            escaped = np.zeros(quotes.size, bool)
            escaped[where] = (run % 2) == 1
            quotes = quotes[~escaped]
    opens = (b == 0x5B) | (b == 0x7B)
    pos = np.flatnonzero(opens | (b == 0x5D) | (b == 0x7D))
    pos = pos[(np.searchsorted(quotes, pos) % 2) == 0]
    return pos, np.where(opens[pos], 1, -1)


def _key_before(body: bytes, offset: int) -> str | None:
    """The object key whose value starts at ``offset`` (parsed, escapes read), or None."""
    m = re.search(rb'"((?:[^"\\]|\\.){0,200})"\s*:\s*$', body[max(0, offset - 400) : offset])
    if not m:
        return None
    try:
        return json.loads(b'"' + m.group(1) + b'"')
    except ValueError:
        return m.group(1).decode("utf-8", "replace")


def _depth_error(max_depth: int, offset: int, key: str | None) -> ServingFailure:
    under = f" under key '{key}'" if key is not None else ""
    return bad_request(
        f"JSON Parse error: nesting deeper than {max_depth} levels at offset: {offset}"
        f"{under} (this server's limit, --max-json-depth)"
    )


def deep_members(body: bytes, max_depth: int = DEFAULT_MAX_JSON_DEPTH) -> list[tuple]:
    """Where ``body`` nests arrays/objects deeper than ``max_depth`` (the top-level object is
    level 1): one ``(offset, start, end, key)`` per top-level member holding such nesting --
    ``offset`` the first bracket beyond the limit, ``body[start:end]`` the member's value (to the
    end of the body if it never closes), ``key`` its key (None when the document is not an
    object). Only the document's own brackets count: rapidjson stops when the root value ends
    (``kParseStopWhenDoneFlag``). Runs on the raw bytes in a few vectorised passes, before any
    parsing, in time and memory linear in the body."""
    if len(body) < 65536 and body.count(b"[") + body.count(b"{") <= max_depth:
        return []  # a cheap way out for small bodies; large ones always hold more brackets
    import numpy as np

    pos, delta = _structure(body)
    depth = np.cumsum(delta)
    closed = np.flatnonzero(depth <= 0)
    if closed.size:  # what follows the root value is never read
        pos, delta, depth = pos[: closed[0] + 1], delta[: closed[0] + 1], depth[: closed[0] + 1]
    over = np.flatnonzero(depth > max_depth)
    if not over.size:
        return []
    if body.lstrip(b" \t\n\r")[:1] != b"{":
        return [(int(pos[over[0]]), 0, len(body), None)]
    opens = np.flatnonzero((depth == 2) & (delta == 1))  # top-level member values
    closes = np.flatnonzero((depth == 1) & (delta == -1))
    out = []
    i = 0
    while i < over.size:
        first = int(over[i])
        j = int(opens[np.searchsorted(opens, first, "right") - 1])
        after = np.searchsorted(closes, j)
        k = int(closes[after]) if after < closes.size else None
        start = int(pos[j])
        end = int(pos[k]) + 1 if k is not None else len(body)
        out.append((int(pos[first]), start, end, _key_before(body, start)))
        i = int(np.searchsorted(over, k, "right")) if k is not None else over.size
    return out


def check_json_depth(body: bytes, max_depth: int = DEFAULT_MAX_JSON_DEPTH) -> None:
    """400 when ``body`` nests arrays/objects deeper than ``max_depth`` anywhere (the top-level
    object is level 1), naming the offset and the top-level key it is under. Runs on the raw
    bytes, before any parsing (see :func:`deep_members`). :func:`parse_request_body` applies it
    only to the keys a request uses (:data:`REQUEST_KEYS`)."""
    found = deep_members(body, max_depth)
    if found:
        offset, _, _, key = found[0]
        raise _depth_error(max_depth, offset, key)


_DIGITS_TO_1 = bytes(1 if 0x30 <= i <= 0x39 else 0 for i in range(256))
_NINETEEN_DIGITS = b"\x01" * 19


def _has_long_digit_run(body: bytes) -> bool:
    """Whether ``body`` holds 19 ASCII digits in a row (an integer that may not fit int64);
    two C-speed passes, several times faster than a regular expression."""
    return _NINETEEN_DIGITS in body.translate(_DIGITS_TO_1)


class _NumberTooBig(Exception):
    pass


def _checked_int(text: str) -> int | JsonBigNumber:
    """An integer token as rapidjson's reader (``reader.h``, ``ParseNumber``) reads it: an int
    when it fits int64, ``-9223372036854775808`` (20 characters) included, else a
    :class:`JsonBigNumber`; a number beyond double range raises :class:`_NumberTooBig`."""
    if len(text) <= 20:
        value = int(text)
        if INT64_MIN <= value <= INT64_MAX:
            return value
    number = JsonBigNumber(text)
    if number.kind == "double" and math.isinf(number.value):
        raise _NumberTooBig(text)
    return number


#: An exponent of 3+ digits (``1e999``, ``2E+308``): a float literal that may overflow a double.
_BIG_EXPONENT = re.compile(rb"[eE]\+?[0-9]{3}")


def _checked_float(text: str) -> float:
    """A JSON float literal as a double; a literal beyond double range (which Python would read as
    infinity) raises :class:`_NumberTooBig`, as rapidjson refuses it."""
    value = float(text)
    if math.isinf(value):
        raise _NumberTooBig(text)
    return value


class _DuplicateKey(Exception):
    pass


def _object_without_duplicates(pairs: list) -> dict:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set = set()
        for k, _ in pairs:
            if k in seen:
                raise _DuplicateKey(k)
            seen.add(k)
    return obj


#: A ``\uD800``-``\uDFFF`` escape somewhere in a body: only then is it scanned for surrogates.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
#: One escape sequence: ``\uXXXX`` (group 1: the hex digits) or a backslash and any one byte.
_ESCAPE = re.compile(rb"\\(?:u([0-9a-fA-F]{4})|[\s\S])")
#: rapidjson's text for kParseErrorStringUnicodeSurrogateInvalid (``error/en.h``).
SURROGATE_INVALID = "The surrogate pair in string is invalid."


def surrogate_error_offset(body: bytes) -> int | None:
    """The byte offset of the first ``\\u`` escape that rapidjson's reader (``reader.h``,
    ``ParseStringToStream``) refuses with "The surrogate pair in string is invalid." -- a high
    surrogate (D800-DBFF) not followed at once by an escaped low one (DC00-DFFF), or a low
    surrogate alone -- offset of its backslash, as rapidjson reports it; None when there is
    none. Python's parser accepts both and makes a string that cannot be encoded as UTF-8."""
    if not _SURROGATE_ESCAPE.search(body):
        return None
    pending: tuple[int, int] | None = None  # a high surrogate's (start, end)
    for m in _ESCAPE.finditer(body):
        digits = m.group(1)
        code = int(digits, 16) if digits is not None else None
        if pending is not None:
            start, end = pending
            pending = None
            if m.start() == end and code is not None and 0xDC00 <= code <= 0xDFFF:
                continue
            return start
        if code is None:
            continue
        if 0xD800 <= code <= 0xDBFF:
            pending = (m.start(), m.end())
        elif 0xDC00 <= code <= 0xDFFF:
            return m.start()
    return pending[0] if pending is not None else None


_PY_TO_RAPIDJSON = {
    "Expecting value": "Invalid value.",
    "Expecting property name enclosed in double quotes": "Missing a name for object member.",
    "Expecting ':' delimiter": "Missing a colon after a name of object member.",
    "Unterminated string starting at": "Missing a closing quotation mark in string.",
    "Invalid control character at": "Invalid encoding in string.",
    "Invalid \\escape": "Invalid escape character in string.",
    "Invalid \\uXXXX escape": "Incorrect hex digit after \\u escape in string.",
    "Extra data": "The document root must not be followed by other values.",
}


def _parse_error_text(body: bytes, exc: json.JSONDecodeError) -> str:
    if exc.msg == "Expecting ',' delimiter":
        import numpy as np

        pos, delta = _structure(body[: exc.pos])
        if pos.size:
            depth = np.cumsum(delta)
            opener = np.flatnonzero((delta == 1) & (depth == depth[-1]))
            if depth[-1] > 0 and opener.size and body[int(pos[opener[-1]])] == 0x5B:
                return "Missing a comma or ']' after an array element."
        return "Missing a comma or '}' after an object member."
    return _PY_TO_RAPIDJSON.get(exc.msg, exc.msg)


def _surrogate_error(offset: int) -> ServingFailure:
    return bad_request(f"JSON Parse error: {SURROGATE_INVALID} at offset: {offset}")


_JSON_SPACE = b" \t\n\r"


def _skip_deep_members(body: bytes, max_depth: int) -> tuple[bytes, dict[str, bytes]]:
    """``body`` with the values of unused top-level keys that nest deeper than ``max_depth``
    replaced by ``0`` and spaces (offsets unchanged), and ``{key: the value's bytes}`` of those
    values; a 400 naming the key and offset for such nesting under a key the request uses."""
    found = deep_members(body, max_depth)
    if not found:
        return body, {}
    buf = bytearray(body)
    skipped: dict[str, bytes] = {}
    for offset, start, end, key in found:
        if key is None or (key in REQUEST_KEYS and key != "signature_name"):
            raise _depth_error(max_depth, offset, key)
        skipped[key] = body[start : min(end, start + 4 * DEBUG_STRING_BYTES)]
        buf[start:end] = b"0" + b" " * (end - start - 1)
    return bytes(buf), skipped


def parse_request_body(body: bytes, *, max_depth: int = DEFAULT_MAX_JSON_DEPTH) -> dict:
    """A POST body -> its JSON object, by TF Serving's ``ParseJson`` / ``FillSignature``
    (rapidjson with ``kParseIterativeFlag | kParseNanAndInfFlag | kParseStopWhenDoneFlag``):

    - 400 for an empty body ("JSON Parse error: The document is empty"), text that is not JSON
      ("JSON Parse error: <rapidjson's words> at offset: N"), a value that is not an object
      ("JSON Value: ... Is not object") or a ``signature_name`` that is not a string ("...
      'signature_name' key must be a string value.", however deep the value nests);
    - what follows the root value is not read (rapidjson stops when the root is done);
    - a ``\\u`` escape of an unpaired UTF-16 surrogate (a value, a key, ``signature_name``) is
      rapidjson's "The surrogate pair in string is invalid." at its backslash's offset
      (:func:`surrogate_error_offset`), so no string that cannot be encoded as UTF-8 leaves the
      parser;
    - integers beyond int64 come back as :class:`JsonBigNumber`; a number beyond double range
      (``1e999``, a 400-digit integer) is 400 "Number too big to be stored in double.", as
      rapidjson words it, never an infinity;
    - nesting deeper than ``max_depth`` (the top-level object is level 1) under a key the request
      uses (:data:`REQUEST_KEYS`) is 400 naming the key and offset (TF Serving has no limit);
      under any other key the value is skipped unread, in linear time and without recursion,
      and stands in the document as a :class:`SkippedValue` (json_tensor_test.cc
      DeeplyNestedWellFormed / DeeplyNestedMalformed);
    - beyond TF Serving: duplicate keys in one object are 400, and so are bytes that are not
      UTF-8 inside the document (rapidjson, which runs without ``kParseValidateEncodingFlag``,
      passes them through)."""
    if not body:
        raise bad_request("JSON Parse error: The document is empty")
    start = len(body) - len(body.lstrip(_JSON_SPACE))
    if start == len(body):
        raise bad_request(f"JSON Parse error: The document is empty. at offset: {len(body)}")
    data, skipped = _skip_deep_members(body, max_depth)
    bad_utf8 = None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:  # fine if it lies after the root value (never read)
        bad_utf8 = exc.start
        text = data[: exc.start].decode("utf-8")
    surrogate = surrogate_error_offset(data) if b"\\u" in data else None
    long_run = _has_long_digit_run(data)
    # Only bodies that can hold an overflowing float pay for a Python call per float literal.
    decoder = json.JSONDecoder(
        object_pairs_hook=_object_without_duplicates,
        parse_int=_checked_int if long_run else None,
        parse_float=_checked_float if long_run or _BIG_EXPONENT.search(data) else None,
    )
    try:
        doc, end = decoder.raw_decode(text, start)
    except _DuplicateKey as exc:
        raise bad_request(
            f"JSON Parse error: duplicate key {json.dumps(exc.args[0])} in one object "
            f"(this server refuses duplicate keys)"
        ) from None
    except json.JSONDecodeError as exc:
        error_at = len(text[: exc.pos].encode("utf-8", "surrogatepass"))
        if surrogate is not None and surrogate < error_at:
            raise _surrogate_error(surrogate) from None  # rapidjson stops there first
        if bad_utf8 is not None and (
            exc.msg.startswith("Unterminated string") or not text[exc.pos :].strip(" \t\n\r")
        ):
            raise bad_request(
                f"JSON Parse error: Invalid encoding in string. at offset: {bad_utf8}"
            ) from None
        raise bad_request(
            f"JSON Parse error: {_parse_error_text(data, exc)} at offset: {exc.pos}"
        ) from None
    except _NumberTooBig as exc:  # rapidjson's words for a number beyond double range
        offset = data.find(exc.args[0].encode("ascii"))
        raise bad_request(
            f"JSON Parse error: Number too big to be stored in double. at offset: {offset}"
        ) from None
    except (RecursionError, ValueError) as exc:  # defence in depth: the scans above prevent it
        raise bad_request(f"JSON Parse error: {exc}") from None
    if surrogate is not None and surrogate < len(text[:end].encode("utf-8", "surrogatepass")):
        raise _surrogate_error(surrogate)
    if not isinstance(doc, dict):
        raise format_error(doc, "Is not object")
    for key, raw in skipped.items():
        if key in doc:
            doc[key] = SkippedValue(raw)
    sig = doc.get("signature_name")
    if "signature_name" in doc and not isinstance(sig, str):
        raise bad_request(
            "JSON Value: " + json_value_str(doc) + " not formatted correctly. "
            "'signature_name' key must be a string value."
        )
    return doc


__all__ = [
    "DEFAULT_MAX_JSON_DEPTH",
    "REQUEST_KEYS",
    "SURROGATE_INVALID",
    "check_json_depth",
    "deep_members",
    "parse_request_body",
    "surrogate_error_offset",
]
