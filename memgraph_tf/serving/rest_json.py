"""TF Serving's REST JSON <-> tf.Example / tensor conversion, written from its rules
(``g3doc/api_rest.md``, ``util/json_tensor.cc``) with TF Serving's error messages and number
formatting.

- request bodies: :func:`parse_request_body` -- finds deep nesting on the raw bytes
  (:func:`deep_members`: refused under the keys a request reads, skipped unread under any other)
  and reads integers beyond int64 as :class:`JsonBigNumber` (never a Python ``int``) *before*
  building Python objects; stops at the end of the root value; refuses duplicate keys; maps
  Python's JSON errors to rapidjson's words (TF Serving parses with rapidjson); values quoted in
  messages as ``JsonValueToDebugString`` writes them (:func:`json_value_str`);
- ``:classify`` / ``:regress``: :func:`request_context`, :func:`request_examples`,
  :func:`json_to_example`, :func:`serialize_examples`; answers from :func:`classify_response`
  and :func:`regress_response`;
- ``:predict``: :func:`predict_feeds` (row ``instances`` / columnar ``inputs`` -> numpy arrays
  of the signature's dtypes, with ``json_tensor.cc``'s shape and size checks) and
  :func:`predict_response`;
- answers are written by :func:`dumps`, which prints float32 values the way TF Serving's
  ``WriteDecimal`` does (six significant digits when they round-trip, else nine; ``.0`` added to
  whole numbers; ``NaN`` / ``Infinity``): :func:`format_decimal`.

Every rejection is a :class:`ServingFailure` carrying the HTTP status TF Serving answers with
(400 for bad input, 501 for an input dtype the REST API does not convert). No HTTP and no model
execution here; numpy is imported on first use, TensorFlow only to build tf.Example protos.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from memgraph_tf.serving import json_output
from memgraph_tf.serving.errors import ServingFailure

#: Default for the deepest JSON nesting a request may use (the top-level object is level 1).
DEFAULT_MAX_JSON_DEPTH = 64

_F32_MAX = 3.4028234663852886e38
_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_UINT32_MAX, _UINT64_MAX = 2**32 - 1, 2**64 - 1
_KIND_NAMES = {"bytes_list": "bytes", "float_list": "float", "int64_list": "int64"}
#: tensorflow/core/framework/types.proto DataType -> DataTypeString (the names TF Serving prints).
DATA_TYPE_NAMES = {
    1: "float",
    2: "double",
    3: "int32",
    4: "uint8",
    5: "int16",
    6: "int8",
    7: "string",
    8: "complex64",
    9: "int64",
    10: "bool",
    11: "qint8",
    12: "quint8",
    13: "qint32",
    14: "bfloat16",
    15: "qint16",
    16: "quint16",
    17: "uint16",
    18: "complex128",
    19: "half",
    20: "resource",
    21: "variant",
    22: "uint32",
    23: "uint64",
}
#: json_tensor.cc ``kMaxJsonDebugStringBytes``: ``JsonValueToDebugString`` stops writing a value
#: into an error message once it holds this many bytes.
DEBUG_STRING_BYTES = 256
#: Beyond TF Serving (which writes a token whole once it starts it): the characters of one string
#: or key echoed inside an error message, ``...`` after them.
_TOKEN_TEXT_LIMIT = 2000
#: The top-level keys of a request body that TF Serving reads (``FillSignature``,
#: ``FillPredictRequestFromJson``, ``FillClassifyRegressRequestFromJson``). A value nested deeper
#: than ``--max-json-depth`` under any other key is skipped unread, as rapidjson's iterative
#: parser reads it without recursion and nothing looks at it.
REQUEST_KEYS = frozenset({"signature_name", "instances", "inputs", "examples", "context"})


def bad_request(message: str) -> ServingFailure:
    """A 400 :class:`ServingFailure` (TF Serving's INVALID_ARGUMENT)."""
    return ServingFailure(400, message)


_bad = bad_request


# ------------------------------------------------------------------------------ number printing
def format_decimal(value: float, bits: int = 32) -> str:
    """``value`` as TF Serving's ``WriteDecimal<float|double>`` prints it (``json_tensor.cc``):
    ``%g`` (six significant digits) when that reads back as the same float32 (``bits=32``) or
    float64 (``bits=64``), else ``%.9g`` / ``%.17g``; ``.0`` appended when the text has neither
    a ``.`` nor an exponent; ``NaN``, ``Infinity``, ``-Infinity`` for non-finite values."""
    import numpy as np

    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "-Infinity" if value < 0 else "Infinity"
    if bits == 32:
        value = float(np.float32(value))
        text = f"{value:g}"
        if float(np.float32(float(text))) != value:
            text = f"{value:.9g}"
    else:
        text = f"{value:g}"
        if float(text) != value:
            text = f"{value:.17g}"
    if "." not in text and "e" not in text:
        text += ".0"
    return text


def _float_tokens(arr) -> list[str]:
    """Flat list of :func:`format_decimal` texts for a float array (float16/32 print as float,
    float64 as double, as TF Serving does), vectorised where it can be."""
    import numpy as np

    is32 = arr.dtype != np.float64
    flat = arr.astype(np.float32 if is32 else np.float64).ravel()
    values = flat.tolist()
    tokens = [f"{v:g}" for v in values]
    finite = np.isfinite(flat)
    back = np.array(tokens, dtype=np.float64)
    if is32:
        back = back.astype(np.float32)
    long_fmt = "%.9g" if is32 else "%.17g"
    for i in np.flatnonzero((back != flat) & finite).tolist():
        tokens[i] = long_fmt % values[i]
    for i, t in enumerate(tokens):
        if "." not in t and "e" not in t:
            tokens[i] = (
                t + ".0"
                if finite[i]
                else ("NaN" if t == "nan" else "-Infinity" if t == "-inf" else "Infinity")
            )
        elif not finite[i]:  # pragma: no cover  (non-finite text never has '.' or 'e')
            tokens[i] = format_decimal(values[i], 32 if is32 else 64)
    return tokens


class RawJson(str):
    """Text :func:`dumps` writes as it is (a number token or a finished JSON value)."""

    __slots__ = ()


def dumps(obj: Any) -> str:
    """Compact JSON for an answer: :class:`RawJson` written verbatim, other floats with
    :func:`format_decimal` (float64 rules), strings as UTF-8 text (not ``\\u`` escapes, as
    rapidjson writes them)."""
    if isinstance(obj, RawJson):
        return str(obj)
    if isinstance(obj, str):
        return json.dumps(obj, ensure_ascii=False)
    if isinstance(obj, dict):
        return (
            "{"
            + ",".join(
                json.dumps(str(k), ensure_ascii=False) + ":" + dumps(v) for k, v in obj.items()
            )
            + "}"
        )
    if isinstance(obj, (list, tuple)):
        return "[" + ",".join(dumps(v) for v in obj) + "]"
    literal = _literal(obj)
    if literal is not None:
        return literal
    if isinstance(obj, float):
        return format_decimal(obj, 64)
    raise TypeError(f"dumps: cannot write a {type(obj).__name__}")


#: JSON's literal names: (Python value, JSON text, the type name TF Serving's messages use)
_LITERALS = ((True, "true", "True"), (False, "false", "False"), (None, "null", "Null"))
#: The type names of the other parsed JSON values (anything else is a Number)
_CONTAINER_TYPES = ((dict, "Object"), (list, "Array"), (str, "String"))


def _literal(x: Any) -> str | None:
    """``true`` / ``false`` / ``null`` / an int's digits for those values, else None."""
    for value, text, _ in _LITERALS:
        if x is value:
            return text
    return str(x) if isinstance(x, int) else None


# ------------------------------------------------------------------------------------ JSON values
class JsonBigNumber:
    """An integer token outside int64, kept as text (never converted to a Python ``int`` with
    thousands of digits). rapidjson reads such a token as uint64 when it fits (``kind ==
    "uint64"``, ``value`` an int) and as a double otherwise (``kind == "double"``, ``value`` a
    float), and so does every conversion here."""

    __slots__ = ("kind", "text", "value")

    def __init__(self, text: str):
        self.text = text
        digits = text.lstrip("-")
        if not text.startswith("-") and len(digits) <= 20 and int(text) <= _UINT64_MAX:
            self.kind, self.value = "uint64", int(text)
        else:
            self.kind, self.value = "double", float(text)

    def __repr__(self) -> str:
        return f"JsonBigNumber({self.text[:40]!r})"


def _as_json_number(v: Any) -> Any:
    """A Python int outside int64 (from a caller, not the parser) as the parser would give it."""
    if type(v) is int and not _INT64_MIN <= v <= _INT64_MAX:
        return JsonBigNumber(str(v))
    return v


def json_type(v: Any) -> str:
    """The JSON type name TF Serving's messages use for a parsed value."""
    for value, _, name in _LITERALS:
        if v is value:
            return name
    if isinstance(v, SkippedValue):
        return v.type_name
    return next((name for cls, name in _CONTAINER_TYPES if isinstance(v, cls)), "Number")


class _Stop(Exception):
    pass


def rapidjson_double(x: float) -> str | None:
    """A double as rapidjson's ``Writer::Double`` writes it (``internal/dtoa.h``: the shortest
    digits that read back, laid out by ``Prettify``: ``100.0``, ``0.001``, ``1e-7``,
    ``1.5e300``, ``-0.0``); None for NaN and infinities, which that writer refuses."""
    if math.isnan(x) or math.isinf(x):
        return None
    if x == 0:
        return "-0.0" if math.copysign(1.0, x) < 0 else "0.0"
    mantissa, _, exp = repr(abs(x)).partition("e")
    whole, _, frac = mantissa.partition(".")
    digits = whole + frac
    point = len(whole) + (int(exp) if exp else 0)  # x = 0.<digits> * 10**point
    stripped = digits.lstrip("0")
    point -= len(digits) - len(stripped)
    digits = stripped.rstrip("0")
    length, kk = len(digits), point
    k = kk - length
    if k >= 0 and kk <= 21:
        text = digits + "0" * k + ".0"
    elif 0 < kk <= 21:
        text = digits[:kk] + "." + digits[kk:]
    elif -6 < kk <= 0:
        text = "0." + "0" * -kk + digits
    elif length == 1:
        text = f"{digits}e{kk - 1}"
    else:
        text = f"{digits[0]}.{digits[1:]}e{kk - 1}"
    return ("-" if x < 0 else "") + text


_CONTROL_ESCAPE = re.compile(r"\\u00([0-9a-f]{2})")


def _string_token(text: str) -> str:
    """A string as rapidjson's writer quotes it (control characters as ``\\u00XX`` in upper-case
    hex, other text as it is), cut after :data:`_TOKEN_TEXT_LIMIT` characters."""
    cut = len(text) > _TOKEN_TEXT_LIMIT
    quoted = json.dumps(text[:_TOKEN_TEXT_LIMIT], ensure_ascii=False)
    if "\\u00" in quoted:
        quoted = _CONTROL_ESCAPE.sub(lambda m: "\\u00" + m.group(1).upper(), quoted)
    return quoted[:-1] + '..."' if cut else quoted


class _DebugWriter:
    """rapidjson's ``PrettyWriter`` with ``kFormatSingleLineArray`` behind json_tensor.cc's
    ``JsonWriterWithLimit``: an event is written only while the text holds fewer than ``limit``
    bytes, and writing stops at the first event refused (as ``Value::Accept`` does)."""

    def __init__(self, limit: int):
        self.parts: list[str] = []
        self.size = 0
        self.limit = limit
        self.levels: list[list] = []  # [in_array, value_count] per open container

    def put(self, text: str) -> None:
        self.parts.append(text)
        self.size += len(text.encode("utf-8", "surrogatepass"))

    def check(self) -> None:
        if self.size >= self.limit:
            raise _Stop

    def indent(self) -> None:
        self.put(" " * (4 * len(self.levels)))

    def prefix(self) -> None:
        if not self.levels:
            return
        level = self.levels[-1]
        in_array, count = level
        if in_array:
            if count:
                self.put(", ")
        else:
            if count:
                self.put(",\n" if count % 2 == 0 else ": ")
            else:
                self.put("\n")
            if count % 2 == 0:
                self.indent()
        level[1] += 1

    def scalar(self, text: str | None) -> None:
        self.check()
        self.prefix()
        if text is None:  # NaN / infinity: Writer::Double writes the prefix, then fails
            raise _Stop
        self.put(text)

    def start(self, opener: str, in_array: bool) -> None:
        self.check()
        self.prefix()
        self.put(opener)
        self.levels.append([in_array, 0])

    def end(self, closer: str) -> None:
        self.check()
        in_array, count = self.levels.pop()
        if count and not in_array:
            self.put("\n")
            self.indent()
        self.put(closer)

    def value(self, x: Any) -> None:
        if isinstance(x, dict):
            self.start("{", False)
            for k, val in x.items():
                self.scalar(_string_token(str(k)))
                self.value(val)
            self.end("}")
        elif isinstance(x, list):
            self.start("[", True)
            for val in x:
                self.value(val)
            self.end("]")
        elif isinstance(x, SkippedValue):  # its brackets, one event each, up to the limit
            self.check()
            self.prefix()
            self.put(x.text[: max(1, self.limit - self.size)])
            raise _Stop
        else:
            self.scalar(_scalar_token(x))


def _scalar_token(x: Any) -> str | None:
    if isinstance(x, JsonBigNumber):
        return x.text if x.kind == "uint64" else rapidjson_double(x.value)
    literal = _literal(x)
    if literal is not None:
        return literal
    if isinstance(x, float):
        return rapidjson_double(x)
    return _string_token(str(x))


class SkippedValue:
    """The value of a top-level key a request does not use, nested deeper than the server's
    ``--max-json-depth`` and so left unread (:func:`parse_request_body`). ``text``: the start of
    its JSON text, which is what an error message quoting the document shows of it."""

    __slots__ = ("text", "type_name")

    def __init__(self, raw: bytes):
        self.text = raw[:DEBUG_STRING_BYTES].decode("utf-8", "replace")
        self.type_name = "Array" if raw[:1] == b"[" else "Object"

    def __repr__(self) -> str:
        return f"SkippedValue({self.text[:20]!r})"


def json_value_str(v: Any, limit: int = DEBUG_STRING_BYTES) -> str:
    """A JSON value as TF Serving's ``JsonValueToDebugString`` (json_tensor.cc) writes it inside
    error messages: rapidjson's PrettyWriter with single-line arrays (``[1, 2]``; objects one
    member a line, 4-space indents), numbers by :func:`rapidjson_double`, writing stopped once
    the text holds ``limit`` (256) bytes or at a NaN / infinity (rapidjson's writer refuses them
    and the text ends before them). Beyond TF Serving: one string is cut after 2,000 characters."""
    writer = _DebugWriter(limit)
    try:
        writer.value(v)
    except _Stop:
        pass
    return "".join(writer.parts)


def _format_error(doc: Any, *parts: str) -> ServingFailure:
    """TF Serving's ``FormatError``: ``JSON Value: <doc> <parts>``."""
    return _bad("JSON Value: " + json_value_str(doc) + " " + "".join(parts))


def is_b64(v: Any) -> bool:
    """True for ``{"b64": "<text>"}`` (the only key): TF Serving's encoding of binary values."""
    return isinstance(v, dict) and len(v) == 1 and isinstance(v.get("b64"), str)


def b64_value(v: dict) -> bytes:
    """The bytes of a ``{"b64": ...}`` value (standard base64, padding optional); 400 "Unable to
    base64 decode" otherwise."""
    text = v["b64"]
    try:
        return base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise _bad("Unable to base64 decode") from None


# ------------------------------------------------------------------------------- request bodies
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
    return _bad(
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
    if len(text) <= 19:
        value = int(text)
        if _INT64_MIN <= value <= _INT64_MAX:
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
    return _bad(f"JSON Parse error: {SURROGATE_INVALID} at offset: {offset}")


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
        raise _bad("JSON Parse error: The document is empty")
    start = len(body) - len(body.lstrip(_JSON_SPACE))
    if start == len(body):
        raise _bad(f"JSON Parse error: The document is empty. at offset: {len(body)}")
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
        raise _bad(
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
            raise _bad(
                f"JSON Parse error: Invalid encoding in string. at offset: {bad_utf8}"
            ) from None
        raise _bad(
            f"JSON Parse error: {_parse_error_text(data, exc)} at offset: {exc.pos}"
        ) from None
    except _NumberTooBig as exc:  # rapidjson's words for a number beyond double range
        offset = data.find(exc.args[0].encode("ascii"))
        raise _bad(
            f"JSON Parse error: Number too big to be stored in double. at offset: {offset}"
        ) from None
    except (RecursionError, ValueError) as exc:  # defence in depth: the scans above prevent it
        raise _bad(f"JSON Parse error: {exc}") from None
    if surrogate is not None and surrogate < len(text[:end].encode("utf-8", "surrogatepass")):
        raise _surrogate_error(surrogate)
    if not isinstance(doc, dict):
        raise _format_error(doc, "Is not object")
    for key, raw in skipped.items():
        if key in doc:
            doc[key] = SkippedValue(raw)
    sig = doc.get("signature_name")
    if "signature_name" in doc and not isinstance(sig, str):
        raise _bad(
            "JSON Value: " + json_value_str(doc) + " not formatted correctly. "
            "'signature_name' key must be a string value."
        )
    return doc


# ---------------------------------------------------------------------------------- tf.Example
def _kind_error(name: str, kind: str) -> ServingFailure:
    return _bad(f"Unexpected element type in feature: {name} expecting type: {_KIND_NAMES[kind]}")


def _add_feature_value(feature, name: str, v: Any) -> None:
    """TF Serving's ``AddValueToFeature`` for one JSON value."""
    kind = feature.WhichOneof("kind")
    v = _as_json_number(v)

    def want(k: str) -> None:
        if kind is not None and kind != k:
            raise _kind_error(name, kind)

    if v is None or isinstance(v, list) or (isinstance(v, dict) and not is_b64(v)):
        raise _bad(f"Feature: {name} has element with unexpected JSON type: {json_type(v)}")
    if isinstance(v, bool):
        want("int64_list")
        feature.int64_list.value.append(int(v))
    elif isinstance(v, dict):
        want("bytes_list")
        feature.bytes_list.value.append(b64_value(v))
    elif isinstance(v, str):
        want("bytes_list")
        feature.bytes_list.value.append(v.encode("utf-8"))
    elif isinstance(v, float) or (isinstance(v, JsonBigNumber) and v.kind == "double"):
        want("float_list")  # GetFloat(): rounded to float32, infinity beyond its range
        feature.float_list.value.append(_to_float32(v.value if isinstance(v, JsonBigNumber) else v))
    elif isinstance(v, JsonBigNumber):  # uint64
        want("int64_list")
        raise _bad(f"Feature: {name} has uint64_t element. Only int64_t is supported.")
    else:
        want("int64_list")
        feature.int64_list.value.append(v)


def _to_float32(x: float) -> float:
    """rapidjson's ``GetFloat()``, ``static_cast<float>`` of the double: rounded to nearest, a
    value beyond float32's range an infinity of its sign (TF Serving since 2021: json_tensor.cc
    no longer refuses such values; json_tensor_test.cc FloatTensorThatExceedsMaxReturnsInf)."""
    import numpy as np

    with np.errstate(over="ignore"):
        return float(np.float32(x))


def _fast_fill(feature, content: list) -> bool:
    """Fill a feature from a homogeneous list of floats or of int64 ints in one call (the same
    result as the element-wise path); False when the list is anything else."""
    first = type(content[0])
    if first is float and all(type(v) is float for v in content):
        if any(abs(v) > _F32_MAX and math.isfinite(v) for v in content):
            content = [_to_float32(v) for v in content]
        feature.float_list.value.extend(content)
        return True
    if first is int and all(type(v) is int for v in content):
        if any(v > _INT64_MAX or v < _INT64_MIN for v in content):
            return False
        feature.int64_list.value.extend(content)
        return True
    return False


def json_to_example(obj: Any):
    """One JSON example object -> ``tf.train.Example`` by TF Serving's
    ``MakeExampleFromJsonObject``: string -> bytes, ``{"b64": ...}`` -> decoded bytes, number
    with a decimal point or exponent (or an integer beyond uint64) -> float, integer or bool ->
    int64; the first element of a list fixes the feature's kind; a float is rounded to float32
    (infinity beyond its range), as ``GetFloat()`` does. 400 with TF Serving's message for
    anything else."""
    from tensorflow.core.example import example_pb2

    if not isinstance(obj, dict):
        raise _bad(f"Example must be JSON object but got JSON {json_type(obj)}")
    ex = example_pb2.Example()
    for name, content in obj.items():
        feature = ex.features.feature[name]
        if isinstance(content, list):
            if content and _fast_fill(feature, content):
                continue
            for v in content:
                _add_feature_value(feature, name, v)
        else:
            _add_feature_value(feature, name, content)
    return ex


NO_CONTEXT: Any = object()


def request_context(doc: dict):
    """The ``context`` of a ``:classify`` / ``:regress`` body as a ``tf.train.Example``, or
    :data:`NO_CONTEXT` when there is none. Checked before ``examples``, as TF Serving does (a
    body holding only a context that is not an object gets "Example must be JSON object ...")."""
    if "context" not in doc:
        return NO_CONTEXT
    return json_to_example(doc["context"])


def request_examples(doc: dict, method: str = "classify") -> list:
    """The ``examples`` list of a ``:classify`` / ``:regress`` body (not yet converted); 400 when
    it is missing, not a list, or empty. TF Serving's message says "When method is classify"
    for ``:regress`` too, and so does this one; ``method`` is kept for callers."""
    del method
    if "examples" not in doc:
        raise _format_error(
            doc, "When method is classify, key 'examples' is expected and was not found"
        )
    examples = doc["examples"]
    if not isinstance(examples, list):
        raise _format_error(doc, "Expecting 'examples' value to be an list/array")
    if not examples:
        raise _format_error(doc, "'examples' value is an empty array")
    return examples


def serialize_examples(examples: Sequence[Any], context: Any = NO_CONTEXT) -> list[bytes]:
    """Serialized ``tf.Example`` s, one per example (a JSON object or an ``Example``), each
    merged with ``context`` (an ``Example``, a JSON object, or :data:`NO_CONTEXT`): concatenated
    serialized protos merge, so the example's own features override the context's, as in TF
    Serving's ExampleListWithContext."""
    if context is NO_CONTEXT:
        ctx = b""
    else:
        ctx = (
            context if hasattr(context, "SerializeToString") else json_to_example(context)
        ).SerializeToString()
    out = []
    for e in examples:
        ex = e if hasattr(e, "SerializeToString") else json_to_example(e)
        out.append(ctx + ex.SerializeToString())
    return out


def classify_response(classes, scores) -> dict:
    """``{"results": [[[label, score], ...], ...]}`` from ``[n, k]`` arrays of class labels
    (bytes) and/or scores (either may be None: labels "" / scores 0.0, as TF Serving writes);
    scores printed as float32 (:func:`format_decimal`). The results are one :class:`RawJson`
    text; write the answer with :func:`dumps`."""
    import numpy as np

    ref = classes if classes is not None else scores
    n, k = ref.shape
    if scores is not None:
        tokens = _float_tokens(np.asarray(scores, dtype=np.float32))
    else:
        tokens = ["0.0"] * (n * k)
    if classes is not None:
        labels = [
            json.dumps(
                c.decode("utf-8", "replace") if isinstance(c, bytes) else str(c), ensure_ascii=False
            )
            for c in classes.ravel().tolist()
        ]
    else:
        labels = ['""'] * (n * k)
    rows = []
    for r in range(n):
        base = r * k
        rows.append(
            "[" + ",".join(f"[{labels[base + j]},{tokens[base + j]}]" for j in range(k)) + "]"
        )
    return {"results": RawJson("[" + ",".join(rows) + "]")}


def regress_response(values) -> dict:
    """``{"results": [v, ...]}`` from a ``[n]`` array, printed as float32 (RegressionResult's
    value is a float). Write it with :func:`dumps`."""
    import numpy as np

    return {"results": [RawJson(t) for t in _float_tokens(np.asarray(values, np.float32))]}


# -------------------------------------------------------------------------------------- tensors
_NP: dict = {}


def numpy_dtype(dtype_enum: int):
    """The numpy dtype that holds a DataType enum's values (object for strings); None for the
    types without one here (their values are refused by the conversion anyway)."""
    if not _NP:
        import numpy as np

        _NP.update(
            {
                k: np.dtype(v)
                for k, v in {
                    1: np.float32,
                    2: np.float64,
                    3: np.int32,
                    4: np.uint8,
                    5: np.int16,
                    6: np.int8,
                    7: object,
                    9: np.int64,
                    10: np.bool_,
                    19: np.float16,
                    22: np.uint32,
                    23: np.uint64,
                }.items()
            }
        )
    return _NP.get(dtype_enum)


def _type_error(v: Any, dtype_enum: int) -> ServingFailure:
    return _bad(
        f"JSON Value: {json_value_str(v)} Type: {json_type(v)} is not of expected type: "
        f"{DATA_TYPE_NAMES.get(dtype_enum, str(dtype_enum))}"
    )


def _leaf(v: Any, dtype_enum: int) -> Any:
    """TF Serving's ``AddValueToTensor`` (plus the b64 objects of ``FillTensorProto``) for one
    JSON leaf: the Python value to store, or a 400 / 501 :class:`ServingFailure`."""
    v = _as_json_number(v)
    if isinstance(v, dict):
        if dtype_enum != 7:
            raise _type_error(v, dtype_enum)
        if not is_b64(v):
            raise _bad(f"JSON Value: {json_value_str(v)} not formatted correctly for base64 data")
        return b64_value(v)
    is_num = not isinstance(v, bool) and isinstance(v, (int, float, JsonBigNumber))
    if dtype_enum in (1, 2):  # float, double
        # IsNumber(), then GetDouble() (an integer cast to double) / GetFloat() (that double cast
        # to float, by _array): every number is taken, rounded, an infinity beyond float's range
        # (json_tensor_test.cc FloatTensorWithPrecisionLoss, FloatTensorThatExceedsMaxReturnsInf)
        if not is_num:
            raise _type_error(v, dtype_enum)
        return float(v.value if isinstance(v, JsonBigNumber) else v)
    if dtype_enum in (3, 4, 5, 6):  # int32, uint8, int16, int8: rapidjson IsInt()
        if not (isinstance(v, int) and not isinstance(v, bool) and _INT32_MIN <= v <= _INT32_MAX):
            raise _type_error(v, dtype_enum)
        return v
    if dtype_enum == 7:
        if not isinstance(v, str):
            raise _type_error(v, dtype_enum)
        return v.encode("utf-8")
    if dtype_enum == 9:
        if not (isinstance(v, int) and not isinstance(v, bool)):
            raise _type_error(v, dtype_enum)
        return v
    if dtype_enum == 10:
        if not isinstance(v, bool):
            raise _type_error(v, dtype_enum)
        return v
    if dtype_enum == 22:
        if not (isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= _UINT32_MAX):
            raise _type_error(v, dtype_enum)
        return v
    if dtype_enum == 23:
        if isinstance(v, JsonBigNumber) and v.kind == "uint64":
            return v.value
        if not (isinstance(v, int) and not isinstance(v, bool) and v >= 0):
            raise _type_error(v, dtype_enum)
        return v
    raise ServingFailure(
        501,
        f"Conversion of JSON Value: {json_value_str(v)} to type: "
        f"{DATA_TYPE_NAMES.get(dtype_enum, str(dtype_enum))}",
    )


_FAST_TYPES = {1: (float, int), 2: (float, int), 9: (int,), 7: (str,), 10: (bool,)}


def _leaves(values: list, dtype_enum: int, rank: int, level: int) -> list:
    """Convert one innermost list (all of whose elements must be leaves) in order; a fast path
    for homogeneous lists of the common types, the exact element-wise rules otherwise."""
    types = set(map(type, values))
    fast = _FAST_TYPES.get(dtype_enum)
    if fast and types <= set(fast):
        if dtype_enum == 7:
            return [v.encode("utf-8") for v in values]
        if int in types and any(
            type(v) is int and not _INT64_MIN <= v <= _INT64_MAX for v in values
        ):
            return [_leaf(v, dtype_enum) for v in values]
        if dtype_enum in (1, 2) and int in types:
            return [float(v) for v in values]  # the double first, as GetFloat() rounds twice
        return values
    out = []
    for v in values:
        if isinstance(v, list):
            raise _bad(f"Encountered list at unexpected level: {level + 1} expected < {rank}")
        out.append(_leaf(v, dtype_enum))
    return out


def _dense_shape(value: Any) -> list[int]:
    """TF Serving's ``GetDenseTensorShape``: the sizes of the first element at each level."""
    shape = []
    while isinstance(value, list):
        shape.append(len(value))
        if not value:
            break
        value = value[0]
    return shape


def _fill(value: Any, level: int, shape: list[int], dtype_enum: int, out: list) -> None:
    """TF Serving's ``FillTensorProto``: append the leaves of ``value`` to ``out`` in row-major
    order, checking that the nesting is the dense ``shape``."""
    rank = len(shape)
    if not isinstance(value, list):
        if level != rank:
            raise _bad(
                f"JSON Value: {json_value_str(value)} found at incorrect level: "
                f"{level + 1} in the JSON DOM. Expected at level: {rank}"
            )
        out.append(_leaf(value, dtype_enum))
        return
    if level >= rank:
        raise _bad(f"Encountered list at unexpected level: {level} expected < {rank}")
    if len(value) != shape[level]:
        raise _bad(
            f"Encountered list at unexpected size: {len(value)} at level: {level} "
            f"expected size: {shape[level]}"
        )
    if level == rank - 1:
        out.extend(_leaves(value, dtype_enum, rank, level))
        return
    for v in value:
        _fill(v, level + 1, shape, dtype_enum, out)


def _tensor_values(value: Any, dtype_enum: int) -> tuple[list[int], list]:
    shape = _dense_shape(value)
    out: list = []
    _fill(value, 0, shape, dtype_enum, out)
    return shape, out


def _array(shape: list[int], values: list, dtype_enum: int):
    import numpy as np

    np_dt = numpy_dtype(dtype_enum)
    if np_dt is None:  # no values reached _leaf (an empty list): still not convertible
        raise ServingFailure(
            501,
            f"Conversion of JSON Value: [] to type: "
            f"{DATA_TYPE_NAMES.get(dtype_enum, str(dtype_enum))}",
        )
    if np_dt == np.dtype(object):
        arr = np.empty(len(values), dtype=object)
        arr[:] = values
        return arr.reshape(shape)
    if np_dt.kind in "iu" and np_dt.itemsize < 4:
        # TF Serving stores int8/int16/uint8 values in TensorProto.int_val (int32) and casts.
        return np.array(values, dtype=np.int64).astype(np_dt).reshape(shape)
    with np.errstate(over="ignore"):  # a double beyond float32's range is an infinity
        return np.array(values, dtype=np_dt).reshape(shape)


def json_to_array(
    value: Any, dtype_enum: int, what: str = "", check: Callable[[list[int]], None] | None = None
):
    """A JSON value (nested lists) -> numpy array of the signature input's dtype
    (``dtype_enum``, a ``DataType`` enum), by TF Serving's ``GetDenseTensorShape`` /
    ``FillTensorProto`` / ``AddValueToTensor``: 400 with its messages for ragged lists or values
    of another type, 501 for a dtype the REST API does not convert. ``check(shape)`` (optional)
    runs once the elements are read and before any array is built (the signature check,
    :func:`.input_specs.check_input`). ``what`` is unused (kept for callers)."""
    del what
    shape, values = _tensor_values(value, dtype_enum)
    if check is not None:
        check(shape)
    return _array(shape, values, dtype_enum)


#: A signature check: ``check(input name, shape)`` raises a ServingFailure for a shape the
#: signature cannot take.
_Check = Callable[[str, list[int]], None]


def _bound(check: _Check | None, name: str) -> Callable[[list[int]], None] | None:
    return None if check is None else (lambda shape: check(name, shape))


def _shape_str(shape: list[int]) -> str:
    return "[" + ",".join(str(d) for d in shape) + "]"


def _status_text(exc: ServingFailure) -> str:
    """absl::Status::ToString() of a failure, as TF Serving nests it in row-format errors."""
    return f"{exc.grpc_code or 'UNKNOWN'}: {exc.message}"


def _instances_feeds(doc: dict, infos: dict[str, int], check: _Check | None = None) -> dict:
    """TF Serving's ``FillTensorMapFromInstancesList``; ``check(name, shape)`` runs on each
    batched input's shape before its array is built."""
    inst = doc["instances"]
    if not isinstance(inst[0], dict) and len(infos) > 1:
        raise _bad(
            "instances is a plain list, but expecting list of objects as multiple "
            "input tensors required as per tensorinfo_map"
        )

    def element_is_object(v: Any) -> bool:
        return isinstance(v, dict) and not is_b64(v)

    objects = element_is_object(inst[0])
    names = sorted(infos)
    sizes: dict[str, int] = {}
    shapes: dict[str, list[int]] = {}
    values: dict[str, list] = {}

    def add(item: Any, name: str) -> None:
        if name not in infos:
            raise _bad(f"JSON object: does not have named input: {name}")
        shape, vals = _tensor_values(item, infos[name])
        if name not in sizes:
            sizes[name], shapes[name], values[name] = len(vals), shape, []
        elif sizes[name] != len(vals):
            raise _bad(f"Expecting tensor size: {sizes[name]} but got: {len(vals)}")
        elif shapes[name] != shape:
            raise _bad(f"Expecting shape {_shape_str(shapes[name])} but got: {_shape_str(shape)}")
        values[name].extend(vals)

    for i, elem in enumerate(inst):
        if objects:
            if not element_is_object(elem):
                raise _bad(f"Expecting object but got list at item {i} of input list")
            for name, item in elem.items():
                try:
                    add(item, name)
                except ServingFailure as exc:
                    raise _bad(
                        f"Failed to process element: {i} key: {name} of 'instances' list. "
                        f"Error: {_status_text(exc)}"
                    ) from None
            if set(elem) != set(infos):
                raise _bad(
                    f"Failed to process element: {i} of 'instances' list. JSON object: "
                    f"{json_value_str(elem)} keys must be equal to: {','.join(names)}"
                )
        else:
            if element_is_object(elem):
                raise _bad(f"Expecting value/list but got object at item {i} of input list")
            try:
                add(elem, names[0])
            except ServingFailure as exc:
                raise _bad(
                    f"Failed to process element: {i} of 'instances' list. Error: "
                    f"{_status_text(exc)}"
                ) from None
    n = len(inst)
    if check is not None:
        for name in values:
            check(name, [n] + shapes[name])
    return {name: _array([n] + shapes[name], values[name], infos[name]) for name in values}


def predict_feeds(
    doc: dict, inputs: Mapping[str, int], signature_name: str, check: _Check | None = None
) -> tuple[dict, bool]:
    """A ``:predict`` body -> ``({input name: numpy array}, columnar)`` for a signature whose
    inputs are ``{name: DataType enum}``, by TF Serving's ``FillPredictRequestFromJson``: exactly
    one of row format (``instances``) and columnar format (``inputs``, ``columnar`` True); every
    rejection with TF Serving's message. ``check(name, shape)`` (optional; the model server
    passes :func:`.input_specs.check_input` for the signature) runs on each input's shape once
    its JSON elements are read, before any array is built: a shape the signature cannot take
    never reaches numpy or TensorFlow."""
    infos = dict(inputs)
    if not infos:
        raise _bad(f"Failed to get input map for signature: {signature_name or 'DEFAULT'}")
    has_inst, has_inputs = "instances" in doc, "inputs" in doc
    if has_inst:
        if has_inputs:
            raise _format_error(
                doc,
                "Not formatted correctly expecting only one of 'inputs' or "
                "'instances' keys to exist ",
            )
        if not isinstance(doc["instances"], list):
            raise _format_error(doc, "Excepting 'instances' to be an list/array")
        if not doc["instances"]:
            raise _format_error(doc, "No values in 'instances' array")
        return _instances_feeds(doc, infos, check), False
    if not has_inputs:
        raise _bad("Missing 'inputs' or 'instances' key")
    val = doc["inputs"]
    feeds: dict[str, Any] = {}
    if not isinstance(val, dict) or is_b64(val):
        if len(infos) > 1:
            raise _bad(
                "inputs is a plain value/list, but expecting an object as multiple "
                "input tensors required as per tensorinfo_map"
            )
        name = next(iter(infos))
        feeds[name] = json_to_array(val, infos[name], check=_bound(check, name))
    else:
        for name in sorted(infos):
            if name not in val:
                raise _bad(f"Missing named input: {name} in 'inputs' object.")
            feeds[name] = json_to_array(val[name], infos[name], check=_bound(check, name))
    return feeds, True


def request_batch_size(doc: dict) -> int:
    """How many examples / instances a request body holds (``examples`` or ``instances``
    length; for columnar ``inputs``, the largest first dimension), for a per-request cap; 0
    when the body has none of these lists."""
    for key in ("examples", "instances"):
        if isinstance(doc.get(key), list):
            return len(doc[key])
    val = doc.get("inputs")
    if isinstance(val, list):
        return len(val)
    if isinstance(val, dict):
        return max((len(v) for v in val.values() if isinstance(v, list)), default=0)
    return 0


# ------------------------------------------------------------------------------------- answers
def tensor_tokens(name: str, arr):
    """An output array -> numpy object array (same shape) of JSON texts, by the rules of
    :mod:`.json_output` (TF Serving's ``AddSingleValueAndAdvance``): float/half/double by
    :func:`format_decimal`, ints, bools, strings as text (``{"b64": ...}`` when the output's name
    ends in ``_bytes``, or -- unlike TF Serving, which writes the raw bytes -- when they are not
    UTF-8). 400 "Failed to write JSON value for tensor type: T" for any other dtype (complex64,
    uint16, bfloat16, ...)."""
    import numpy as np

    kind = json_output.value_kind(arr)
    flat = arr.ravel()
    if kind == "float":
        tokens = _float_tokens(arr)
    elif kind == "int":
        tokens = [str(v) for v in flat.tolist()]
    elif kind == "bool":
        tokens = ["true" if v else "false" for v in flat.tolist()]
    else:
        as_b64 = json_output.is_bytes_output(name)
        tokens = []
        for v in flat.tolist():
            value = json_output.string_value(v, as_b64, arr)
            tokens.append(
                json.dumps(value, ensure_ascii=False)
                if isinstance(value, str)
                else '{"b64":"' + value["b64"] + '"}'
            )
    out = np.empty(len(tokens), dtype=object)
    out[:] = tokens
    return out.reshape(arr.shape)


def _nest(tokens) -> str:
    if isinstance(tokens, str):  # one element of a 1-D token array
        return tokens
    if tokens.ndim == 0:
        return tokens.item()
    if tokens.ndim == 1:
        return "[" + ",".join(tokens.tolist()) + "]"
    return "[" + ",".join(_nest(t) for t in tokens) + "]"


def tensor_to_json(name: str, arr) -> RawJson:
    """One output array as JSON text (see :func:`tensor_tokens`)."""
    import numpy as np

    return RawJson(_nest(tensor_tokens(name, np.asarray(arr))))


def predict_response(out: Mapping[str, Any], columnar: bool) -> dict:
    """Signature outputs (numpy arrays) -> ``{"outputs": ...}`` (columnar) or
    ``{"predictions": ...}`` (row format: one object per batch row, or the bare values when there
    is one output), laid out by :func:`.json_output.arrange` (TF Serving's
    ``MakeJsonFromTensors``). 400 when a row-format output has no shape information (a scalar),
    the batch sizes differ, or a dtype cannot be written. Write it with :func:`dumps`."""
    import numpy as np

    arrays = {k: np.asarray(v) for k, v in out.items()}
    if columnar:
        return {"outputs": json_output.arrange(arrays, True, tensor_to_json)}
    return {
        "predictions": json_output.arrange(
            arrays, False, tensor_tokens, row=lambda tokens, i: RawJson(_nest(tokens[i]))
        )
    }


__all__ = [
    "DATA_TYPE_NAMES",
    "DEBUG_STRING_BYTES",
    "DEFAULT_MAX_JSON_DEPTH",
    "NO_CONTEXT",
    "REQUEST_KEYS",
    "JsonBigNumber",
    "RawJson",
    "ServingFailure",
    "SkippedValue",
    "b64_value",
    "bad_request",
    "check_json_depth",
    "classify_response",
    "deep_members",
    "dumps",
    "format_decimal",
    "is_b64",
    "json_to_array",
    "json_to_example",
    "json_type",
    "json_value_str",
    "numpy_dtype",
    "parse_request_body",
    "predict_feeds",
    "predict_response",
    "rapidjson_double",
    "regress_response",
    "request_batch_size",
    "request_context",
    "request_examples",
    "serialize_examples",
    "tensor_to_json",
    "tensor_tokens",
]
