"""A grammar-aware generator of TF Serving requests for the fuzz tests: JSON bodies
written as text (so they can hold what ``json.dumps`` never writes: lone surrogate escapes,
invalid UTF-8, numbers beyond every limit) and TensorProtos of any dtype and rank, aimed at the
tensor code rather than the parser: nesting of 0-100 levels (30-40 often), ranks above 32 and 64,
every DataType number, numbers at the int32 / int64 / uint64 / float32 / double limits.

``RestGrammar(rng).request(targets)`` -> ``(path, body bytes)``; ``tensor_proto(rng)`` -> a
``TensorProto``. Deterministic for a seeded ``random.Random``.
"""

from __future__ import annotations

import random
from typing import Any

#: Ranks the generators favour: the edges of TensorFlow's string conversion (32), numpy (64)
#: and TensorFlow (254).
RANKS = [0, 1, 1, 2, 2, 3, 8, 30, 31, 32, 33, 34, 35, 36, 38, 40, 63, 64, 65, 100]
#: Number tokens at the limits of every type a JSON number can become.
NUMBERS = [
    "0",
    "-0",
    "-0.0",
    "1",
    "-1",
    "2147483647",
    "2147483648",
    "-2147483648",
    "-2147483649",
    "4294967295",
    "4294967296",
    "9007199254740993",
    "16777217",
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775808",
    "-9223372036854775809",
    "18446744073709551615",
    "18446744073709551616",
    "123456789012345678901234567890",
    "1" + "0" * 400,
    "3.4028234663852886e38",
    "3.4028235e38",
    "3.5e38",
    "1e39",
    "1.7976931348623157e308",
    "1.8e308",
    "1e400",
    "-2.5E+400",
    "5e-324",
    "1e-400",
    "0.1",
    "1.5",
    "NaN",
    "Infinity",
    "-Infinity",
    "1e",
    "01",
    ".5",
    "-",
]
#: String tokens: plain, escaped, pairs, lone surrogates (high, low, high then another escape).
STRINGS = [
    '""',
    '"a"',
    '"YQ=="',
    '"text with spaces"',
    '"\\u00e9\\u4e2d"',
    '"\\ud83d\\ude00"',
    '"\\ud800"',
    '"\\udfff"',
    '"\\udbff\\u0041"',
    '"\\ud800\\ud800"',
    '"x\\udc00y"',
    '"\\\\ud800"',
    '"\\u0000"',
    '"\\x"',
    '"\\u12"',
    '"üñï"',
]
#: Raw bytes that are not UTF-8 (in a string or bare): a stray byte, an overlong '/', an encoded
#: surrogate, a cut multi-byte character.
BAD_UTF8 = [b"\xff", b"\xc0\xaf", b"\xed\xa0\x80", b"\xe4\xb8"]
LITERALS = ["true", "false", "null", '{"b64": "YQ=="}', '{"b64": "!!"}', '{"b64": 1}', "{}", "[]"]


#: Tokens every signature of their kind takes (a float32 at its limit, a surrogate pair, ...).
GOOD = {
    "number": ["0", "1.5", "-2", "3.4028234663852886e38", "1e-45", "16777216", "-0.0"],
    "string": ['"a"', '"YQ=="', '"\\u00e9"', '"\\ud83d\\ude00"', '{"b64": "YQ=="}', '""'],
}


class RestGrammar:
    """Bodies for ``:predict`` / ``:classify`` / ``:regress`` built from the JSON grammar. A
    target is ``(model name, {input: (leaf kind, shape or None for any rank)})``; about half the
    predict bodies are ones the signature takes (so the model runs, deep any-rank tensors
    included), the rest anything the grammar makes."""

    def __init__(self, rng: random.Random):
        self.rng = rng

    def good_tensor(self, kind: str, shape: list[int | None] | None) -> str:
        rng = self.rng
        if shape is None:
            shape = [None] * rng.choice([0, 1, 2, 8, 31, 32, 33, 34, 40, 48, 63, 64])
        dims = [d if d is not None else (rng.randint(1, 2) if len(shape) < 4 else 1) for d in shape]

        def build(level: int) -> str:
            if level == len(dims):
                return rng.choice(GOOD[kind])
            return "[" + ",".join(build(level + 1) for _ in range(dims[level])) + "]"

        return build(0)

    def leaf(self, kind: str | None = None) -> str:
        rng = self.rng
        kind = kind or rng.choice(["number", "string", "literal", "number", "string"])
        if kind == "number":
            return rng.choice(NUMBERS)
        if kind == "string":
            return rng.choice(STRINGS)
        return rng.choice(LITERALS)

    def tensor(self, rank: int | None = None, kind: str | None = None) -> str:
        """A nested list of ``rank`` levels: usually dense (dims 1-3, fewer elements the deeper
        it goes), sometimes ragged, empty or mixed."""
        rng = self.rng
        rank = rng.choice(RANKS) if rank is None else rank
        kind = kind or rng.choice(["number", "string", "literal", "b64", None])
        dims = [1 if rank > 6 or rng.random() < 0.5 else rng.randint(0, 3) for _ in range(rank)]

        def build(level: int) -> str:
            if level == rank:
                if kind == "b64":
                    return '{"b64": "YQ=="}'
                return self.leaf(kind)
            n = dims[level]
            if rng.random() < 0.03:  # ragged: one element short, or a leaf among lists
                n = max(0, n - 1) if rng.random() < 0.5 else n
                items = [build(level + 1) for _ in range(n)] + [self.leaf()]
            else:
                items = [build(level + 1) for _ in range(n)]
            return "[" + ",".join(items) + "]"

        return build(0)

    def key(self) -> str:
        return self.rng.choice(
            ['"x"', '"blobs"', '"s"', '"f"', '"blob"', '"node_id"', '"\\ud800"', '"k"']
        )

    def example(self) -> str:
        rng = self.rng
        parts = []
        for _ in range(rng.randint(0, 3)):
            value = (
                self.leaf()
                if rng.random() < 0.4
                else self.tensor(rng.choice([1, 1, 2, 3, 33]), rng.choice(["number", "string"]))
            )
            parts.append(f"{self.key()}: {value}")
        if rng.random() < 0.3:
            parts.append(f'"node_id": {rng.choice(NUMBERS[:20])}')
        return "{" + ", ".join(parts) + "}"

    def signature(self) -> str:
        return self.rng.choice(
            ['"classify"', '"regress"', '"serving_default"', '"\\udfff"', '"nope"', "5"]
        )

    def request(self, targets: list[tuple[str, dict[str, tuple]]]) -> tuple[str, bytes]:
        """A path and a body for one of ``targets`` (see the class docstring)."""
        rng = self.rng
        model, specs = rng.choice(targets)
        inputs = sorted(specs)
        verb = rng.choice(["predict", "predict", "predict", "classify", "regress"])
        members = []
        if verb == "predict" and rng.random() < 0.5:  # one the signature takes
            named = ", ".join(f'"{k}": {self.good_tensor(*specs[k])}' for k in inputs)
            return f"/v1/models/{model}:predict", ('{"inputs": {' + named + "}}").encode()
        if rng.random() < 0.25:
            members.append(f'"signature_name": {self.signature()}')
        if verb == "predict":
            if rng.random() < 0.5:  # columnar
                named = [f'"{k}": {self.tensor()}' for k in inputs if rng.random() < 0.9]
                if rng.random() < 0.1:
                    named.append(f"{self.key()}: {self.tensor()}")
                value = "{" + ", ".join(named) + "}" if rng.random() < 0.85 else self.tensor()
                members.append(f'"inputs": {value}')
            else:  # rows
                rows = []
                rank = rng.choice(RANKS)
                for _ in range(rng.randint(1, 3)):
                    if len(inputs) > 1 or rng.random() < 0.3:
                        rows.append(
                            "{" + ", ".join(f'"{k}": {self.tensor(rank)}' for k in inputs) + "}"
                        )
                    else:
                        rows.append(self.tensor(rank))
                members.append('"instances": [' + ", ".join(rows) + "]")
        else:
            if rng.random() < 0.2:
                members.append(f'"context": {self.example()}')
            members.append(
                '"examples": [' + ", ".join(self.example() for _ in range(rng.randint(0, 3))) + "]"
            )
        rng.shuffle(members)
        body = ("{" + ", ".join(members) + "}").encode("utf-8")
        if rng.random() < 0.08:  # invalid UTF-8 inside or outside a string
            pos = rng.randrange(len(body) + 1)
            body = body[:pos] + rng.choice(BAD_UTF8) + body[pos:]
        return f"/v1/models/{model}:{verb}", body


# ----------------------------------------------------------------------------------- gRPC
#: Every DataType number (and a few that are none), with the common ones more often.
DTYPES = list(range(0, 24)) + [101, 107, 300] + [1, 1, 7, 7, 7, 9, 3]


def tensor_proto(rng: random.Random, dtype: int | None = None) -> Any:
    """A TensorProto of a random dtype and rank (up to 300, over 32 and 64 often), dims mostly 1
    (sometimes 0, -1 or 2**40), an unknown rank sometimes, and values in tensor_content (of the
    right length or not) or in the typed fields (as many as the shape holds, fewer, or more)."""
    from tensorflow.core.framework import tensor_pb2

    t = tensor_pb2.TensorProto()
    t.dtype = rng.choice(DTYPES) if dtype is None else dtype
    rank = rng.choice(RANKS + [254, 255, 300])
    dims = [1] * rank
    if rank and rng.random() < 0.2:
        dims[rng.randrange(rank)] = rng.choice([0, 2, 3, -1, 2**40])
    for d in dims:
        t.tensor_shape.dim.add().size = d
    if rng.random() < 0.03:
        t.tensor_shape.unknown_rank = True
    n = 1
    for d in dims:
        n *= max(d, 0)
    n = min(n, 8)
    r = rng.random()
    if r < 0.25:
        t.tensor_content = rng.randbytes(rng.choice([n, n * 4, n * 8, n * 4 + 1, 0, 3]))
    elif r < 0.9:
        count = rng.choice([n, n, 1, 0, n + 1])
        if t.dtype == 7:
            t.string_val.extend(rng.choice([b"a", b"", b"\xff\xfe", b"YQ=="]) for _ in range(count))
        elif t.dtype in (1, 19):
            t.float_val.extend(
                rng.choice([0.0, 1.5, -3.4e38, 3.4e38, float("nan"), float("inf")])
                for _ in range(count)
            )
        elif t.dtype == 2:
            t.double_val.extend(rng.choice([0.0, 1e308, -1e-308]) for _ in range(count))
        elif t.dtype in (9, 23):
            t.int64_val.extend(rng.choice([0, -(2**63), 2**63 - 1]) for _ in range(count))
        elif t.dtype == 10:
            t.bool_val.extend(rng.random() < 0.5 for _ in range(count))
        else:
            t.int_val.extend(rng.choice([0, 255, -(2**31), 2**31 - 1]) for _ in range(count))
    return t


__all__ = ["NUMBERS", "RANKS", "STRINGS", "RestGrammar", "tensor_proto"]
