"""JSON values as TF Serving's REST API reads and writes them (``util/json_tensor.cc``, rapidjson):
the value model shared by the request parser (:mod:`.json_parse`), the tf.Example conversion
(:mod:`.json_examples`) and the tensor conversion (:mod:`.json_tensors`).

- what the parser yields beyond Python's JSON types: :class:`JsonBigNumber` (an integer beyond
  int64, kept as text), :class:`SkippedValue` (a deep value left unread);
- the JSON type names and value texts TF Serving's messages use: :func:`json_type`,
  :func:`json_value_str` (``JsonValueToDebugString``), :func:`rapidjson_double`;
- answers: :func:`dumps` and :class:`RawJson`, float32 / float64 printed as ``WriteDecimal``
  does (:func:`format_decimal`, :func:`float_tokens`);
- ``{"b64": ...}`` values (:func:`is_b64`, :func:`b64_value`) and the 400 failures every
  conversion raises (:func:`bad_request`, :func:`format_error`).

No HTTP and no TensorFlow here; numpy is imported on first use.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
from typing import Any

from memgraph_tf.serving.errors import ServingFailure

#: int64's range: JSON integers inside it are Python ints, others :class:`JsonBigNumber`.
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
_UINT64_MAX = 2**64 - 1
#: json_tensor.cc ``kMaxJsonDebugStringBytes``: ``JsonValueToDebugString`` stops writing a value
#: into an error message once it holds this many bytes.
DEBUG_STRING_BYTES = 256
#: Beyond TF Serving (which writes a token whole once it starts it): the characters of one string
#: or key echoed inside an error message, ``...`` after them.
_TOKEN_TEXT_LIMIT = 2000


def bad_request(message: str) -> ServingFailure:
    """A 400 :class:`ServingFailure` (TF Serving's INVALID_ARGUMENT)."""
    return ServingFailure(400, message)


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


def float_tokens(arr) -> list[str]:
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


def as_json_number(v: Any) -> Any:
    """A Python int outside int64 (from a caller, not the parser) as the parser would give it."""
    if type(v) is int and not INT64_MIN <= v <= INT64_MAX:
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


def format_error(doc: Any, *parts: str) -> ServingFailure:
    """A 400: TF Serving's ``FormatError``: ``JSON Value: <doc> <parts>``."""
    return bad_request("JSON Value: " + json_value_str(doc) + " " + "".join(parts))


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
        raise bad_request("Unable to base64 decode") from None


__all__ = [
    "DEBUG_STRING_BYTES",
    "INT64_MAX",
    "INT64_MIN",
    "JsonBigNumber",
    "RawJson",
    "SkippedValue",
    "as_json_number",
    "b64_value",
    "bad_request",
    "dumps",
    "float_tokens",
    "format_decimal",
    "format_error",
    "is_b64",
    "json_type",
    "json_value_str",
    "rapidjson_double",
]
