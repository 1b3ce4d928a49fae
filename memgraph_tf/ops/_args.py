"""The argument checks both blob decoders share (:func:`memgraph_tf.ops.unpack_blob` and
:func:`memgraph_tf.ops.portable.unpack_blob_portable`), so their contracts cannot drift apart.

Imported by ``ops/__init__.py`` and ``ops/portable.py``; imports neither (TensorFlow only inside the
functions that need it).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from memgraph_tf import blob

#: Accepted values of ``encoding``: the blobs' raw bytes, or base64url text as blobs leave Memgraph.
ENCODINGS = ("raw", "base64")

#: Accepted dtype spellings -> the blob dtype name: the blob dtype names themselves
#: (:data:`memgraph_tf.blob.DTYPES`), ``float`` and ``double``.
DTYPES = {**{name: name for name in blob.DTYPES}, "float": "float32", "double": "float64"}


def normalize_args(
    names: str | Sequence[str],
    dtypes: Any,
    ragged: Iterable[str],
) -> tuple[list[str], list[str], list[bool]]:
    """Checks the arguments shared by both decoders; returns (names, blob dtype names, ragged
    flags)."""
    import tensorflow as tf

    if isinstance(names, str):
        names = [names]
    names = list(names)
    if not names:
        raise ValueError("names: expected at least one section name, got []")
    for n in names:
        if not isinstance(n, str) or not n:
            raise ValueError(f"names: expected non-empty str section names, got {n!r}")
    if len(set(names)) != len(names):
        raise ValueError(f"names: expected each name once, got {names}")
    if isinstance(dtypes, (str, tf.DType)) or not isinstance(dtypes, Sequence):
        dtypes = [dtypes]
    dtypes = list(dtypes)
    if len(dtypes) != len(names):
        raise ValueError(
            f"dtypes: expected {len(names)} entries (one per name in {names}), got {len(dtypes)}: "
            f"{dtypes}"
        )
    out_dtypes = []
    for d in dtypes:
        key = d.name if isinstance(d, tf.DType) else d
        if not isinstance(key, str) or key not in DTYPES:
            raise ValueError(f"dtypes: expected one of {sorted(DTYPES)} or the tf.DType, got {d!r}")
        out_dtypes.append(DTYPES[key])
    if isinstance(ragged, str):
        ragged = [ragged]
    ragged = list(ragged)
    unknown = [r for r in ragged if r not in names]
    if unknown:
        raise ValueError(f"ragged: expected names among {names}, got {unknown}")
    return names, out_dtypes, [n in ragged for n in names]


def check_encoding(encoding: Any) -> str:
    """``encoding`` if it is one of :data:`ENCODINGS`; raises ValueError otherwise."""
    if encoding not in ENCODINGS:
        raise ValueError(f"encoding: expected one of {list(ENCODINGS)}, got {encoding!r}")
    return encoding


def check_shapes(shapes: Sequence[Any] | None, names: Sequence[str]) -> None:
    """``shapes`` is ``None`` or holds one entry per name; raises ValueError otherwise."""
    if shapes is not None and len(shapes) != len(names):
        raise ValueError(f"shapes: expected {len(names)} entries (one per name), got {len(shapes)}")
