"""The size of the blob a ``tf_features`` call would build, known before it samples or reads
anything, and the ``options.max_blob_bytes`` check (stdlib only).

A call's memory grows with its blob: the sampled ids and masks, the feature table, the blob bytes
and their base64 text are all proportional to it. The sizes here are computed from the arguments
alone -- the number of nodes or seeds, the fanouts, the feature width (read from the first node),
the dtype and the layout (docs/blob-format.md, :mod:`memgraph_tf.layout`) -- so a call that would
build too much is refused before it allocates any of it:

* ``pack`` and the dense sample layout: the exact size (``pack``'s string properties: the text is
  counted once it is read, before the blob is built);
* the compact and sparse sample layouts, whose table depends on the sampled nodes: the worst case
  for the fanouts -- every sampled slot a distinct node (the table has as many rows as slots) and,
  for sparse, every feature non-zero (``nnz = rows x width``).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence

from memgraph_tf import blob, layout
from memgraph_tf.procedures.errors import OptionError
from memgraph_tf.procedures.options import Options

__all__ = ["check_pack", "check_sample", "pack_bytes", "sample_bytes", "slots"]


def _item_bytes(dtype: str) -> int:
    return blob.ITEM_BYTES[dtype]


def _total(payloads: Sequence[int]) -> int:
    """The blob's ``total_length`` for these payload lengths (header, section table, payloads each
    padded to a multiple of 8: docs/blob-format.md, section 1)."""
    align = blob.ALIGNMENT
    return (
        blob.HEADER_BYTES
        + blob.SECTION_ENTRY_BYTES * len(payloads)
        + sum((p + align - 1) // align * align for p in payloads)
    )


def slots(n: int, fanouts: Sequence[int]) -> int:
    """The sampled slots of ``n`` seeds: ``n x (1 + f1 + f1 f2 + ... + f1..fK)``."""
    total, per_row = 1, 1
    for f in fanouts:
        per_row *= f
        total += per_row
    return n * total


def sample_bytes(n: int, fanouts: Sequence[int], width: int, options: Options) -> int:
    """The bytes of a ``sample`` blob of ``n`` seed rows (``options.layout``, ``options.dtype``,
    masks with ``low_degree: 'pad'``, ``labels`` with ``options.label_property``): exact for the
    dense layout; for compact and sparse the worst case (``u`` = every slot, ``nnz = u x
    width``)."""
    return _sample_bytes(
        n,
        tuple(fanouts),
        width,
        options.dtype,
        options.pad,
        bool(options.label_property),
        options.layout,
    )


@functools.lru_cache(maxsize=256)  # a pure function of its arguments; calls repeat them
def _sample_bytes(
    n: int, fanouts: tuple[int, ...], width: int, dtype: str, pad: bool, labels: bool, name: str
) -> int:
    u = slots(n, fanouts)
    payloads = []
    for sec in layout.sample_sections(
        fanouts, width, dtype, pad=pad, labels=labels, batch=n, layout=name
    ):
        if sec.role in ("table_ids", "table"):
            elements = u * (width if sec.role == "table" else 1)
        elif sec.role in ("columns", "values"):
            elements = u * width
        elif -1 in sec.shape:  # table_columns.row_splits: one split per table row, and one more
            elements = u + 1
        else:
            elements = 1
            for d in sec.shape:
                elements *= d
        payloads.append(elements * _item_bytes(sec.dtype))
    return _total(payloads)


def pack_bytes(
    n: int,
    width: int,
    options: Options,
    strings: Sequence[str] = (),
    text_bytes: Mapping[str, int] | None = None,
) -> int:
    """The bytes of a ``pack`` blob of ``n`` nodes: ``ids``, ``features`` (``width`` columns of
    ``options.dtype``), one section per string property in ``strings`` holding ``text_bytes[name]``
    bytes of UTF-8 text (0 when not given: the size without the text), ``labels`` with
    ``options.label_property``. Exact."""
    text_bytes = text_bytes or {}
    payloads = []
    for sec in layout.pack_sections(
        width, options.dtype, strings=strings, labels=bool(options.label_property), batch=n
    ):
        if sec.dtype == "string":
            payloads.append(8 * (n + 1) + text_bytes.get(sec.name, 0))
        else:
            elements = 1
            for d in sec.shape:
                elements *= d
            payloads.append(elements * _item_bytes(sec.dtype))
    return _total(payloads)


def _count(n: int, what: str, plural: str | None = None) -> str:
    return f"{n:,} {what if n == 1 else plural or what + 's'}"


def _features(width: int, dtype: str) -> str:
    return "no features" if width == 0 else f"{_count(width, dtype + ' feature')}"


def check_sample(
    n: int, fanouts: Sequence[int], width: int, options: Options, *, per_row: bool = False
) -> None:
    """Raises :class:`OptionError` when the ``sample`` blob of ``n`` seeds (``per_row``: each
    ``sample_per_node`` row's blob, of one seed) would exceed ``options.max_blob_bytes``: the
    message names the option, the size (exact, or the worst case in the compact and sparse
    layouts), what it is made of and the limit."""
    rows = 1 if per_row else n
    size = sample_bytes(rows, fanouts, width, options)
    if size <= options.max_blob_bytes:
        return
    seeds = "1 seed per row" if per_row else _count(n, "seed")
    what = f"fanouts {list(fanouts)}, {seeds}, {options.layout}, {_features(width, options.dtype)}"
    subject = "each row's blob" if per_row else "the blob"
    if options.layout == "dense":
        amount = f"would hold {size:,} bytes ({what})"
    else:
        nonzero = ", every feature non-zero" if options.layout == "sparse" and width else ""
        amount = (
            f"could hold up to {size:,} bytes ({what}; the worst case for these fanouts: every "
            f"sampled slot a distinct node{nonzero})"
        )
    _refuse(f"{subject} {amount}", options.max_blob_bytes, "fewer seeds or smaller fanouts")


def check_pack(
    n: int,
    width: int,
    options: Options,
    strings: Sequence[str] = (),
    text_bytes: Mapping[str, int] | None = None,
) -> None:
    """Raises :class:`OptionError` when the ``pack`` blob of ``n`` nodes would exceed
    ``options.max_blob_bytes``; without ``text_bytes`` the string properties' text is not counted
    yet (the check before anything is read) and the message says so."""
    size = pack_bytes(n, width, options, strings, text_bytes)
    if size <= options.max_blob_bytes:
        return
    what = f"{_count(n, 'node')}, {_features(width, options.dtype)}"
    if strings:
        props = _count(len(strings), "string property", "string properties")
        if text_bytes is None:
            what += f", {props} (their text not counted yet)"
        else:
            what += f", {sum(text_bytes.values()):,} bytes of text in {props}"
    verb = "would hold" if text_bytes is not None or not strings else "would hold at least"
    _refuse(f"the blob {verb} {size:,} bytes ({what})", options.max_blob_bytes, "fewer nodes")


def _refuse(what: str, limit: int, fewer: str) -> None:
    raise OptionError(
        f"max_blob_bytes: {what}; the limit is {limit:,} (options.max_blob_bytes): ask for "
        f"{fewer} per call, or raise the limit"
    )
