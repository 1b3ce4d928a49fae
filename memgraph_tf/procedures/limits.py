"""The size of the blob a ``tf_features`` call builds, and the ``options.max_blob_bytes`` check
(stdlib only).

A call's memory grows with its blob: the sampled ids and masks, the feature table, the blob bytes
and their base64 text are all proportional to it. A call is checked in two phases, each before
what it sizes is allocated (docs/blob-format.md, :mod:`memgraph_tf.layout`):

1. **Before sampling**, from the arguments alone -- the number of nodes or seeds, the fanouts, the
   feature width (read from the first node), the dtype and the layout: what they fix exactly.
   ``pack`` and the dense sample layout: the whole blob (``pack``'s string properties: the text is
   counted once it is read, before the blob is built). The compact and sparse layouts: the
   ``index_h`` arrays, the fixed row splits and ``labels`` -- the blob holds at least that; its
   table depends on the nodes sampled (:func:`check_sample`).
2. **After sampling, before any feature is read** (compact and sparse): the number ``u`` of
   distinct sampled nodes is known. Compact: the exact size. Sparse: the worst case over those
   nodes (every feature non-zero, ``nnz = u x width``); when that exceeds the limit, the caller
   counts the real non-zeros as it reads the features and checks the exact size before the blob
   is built (:func:`check_sampled`).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import NoReturn

from memgraph_tf import blob, layout
from memgraph_tf.procedures.errors import OptionError
from memgraph_tf.procedures.options import Options

__all__ = [
    "check_pack",
    "check_sample",
    "check_sampled",
    "pack_bytes",
    "refuse",
    "sample_bytes",
    "slots",
    "total_bytes",
]


def _item_bytes(dtype: str) -> int:
    return blob.ITEM_BYTES[dtype]


def total_bytes(payloads: Sequence[int]) -> int:
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


def sample_bytes(
    n: int,
    fanouts: Sequence[int],
    width: int,
    options: Options,
    u: int | None = None,
    nnz: int | None = None,
) -> int:
    """The bytes of a ``sample`` blob of ``n`` seed rows (``options.layout``, ``options.dtype``,
    masks with ``low_degree: 'pad'``, ``labels`` with ``options.label_property``). Dense: exact
    (``u`` and ``nnz`` unused). Compact and sparse: with a table of ``u`` distinct nodes (None: the
    worst case for the fanouts, every slot a distinct node) and, sparse, ``nnz`` non-zero entries
    (None: ``u x width``, every feature non-zero); exact when both are the real ones."""
    rows = slots(n, fanouts) if u is None else u
    return _sample_bytes(
        n,
        tuple(fanouts),
        width,
        options.dtype,
        options.pad,
        bool(options.label_property),
        options.layout,
        rows,
        rows * width if nnz is None else nnz,
    )


@functools.lru_cache(maxsize=256)  # a pure function of its arguments; calls repeat them
def _sample_bytes(
    n: int,
    fanouts: tuple[int, ...],
    width: int,
    dtype: str,
    pad: bool,
    labels: bool,
    name: str,
    u: int,
    nnz: int,
) -> int:
    payloads = []
    for sec in layout.sample_sections(
        fanouts, width, dtype, pad=pad, labels=labels, batch=n, layout=name
    ):
        if sec.role in ("table_ids", "table"):
            elements = u * (width if sec.role == "table" else 1)
        elif sec.role in ("columns", "values"):
            elements = nnz
        elif -1 in sec.shape:  # table_columns.row_splits: one split per table row, and one more
            elements = u + 1
        else:
            elements = 1
            for d in sec.shape:
                elements *= d
        payloads.append(elements * _item_bytes(sec.dtype))
    return total_bytes(payloads)


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
    return total_bytes(payloads)


def _count(n: int, what: str, plural: str | None = None) -> str:
    return f"{n:,} {what if n == 1 else plural or what + 's'}"


def _features(width: int, dtype: str) -> str:
    return "no features" if width == 0 else f"{_count(width, dtype + ' feature')}"


def _sampled(n: int, fanouts: Sequence[int], width: int, options: Options, seeds: str) -> str:
    return f"fanouts {list(fanouts)}, {seeds}, {options.layout}, {_features(width, options.dtype)}"


def check_sample(
    n: int, fanouts: Sequence[int], width: int, options: Options, *, per_row: bool = False
) -> None:
    """Phase 1, before anything is sampled: raises :class:`OptionError` when what the arguments fix
    of the ``sample`` blob of ``n`` seeds (``per_row``: each ``sample_per_node`` row's blob, of one
    seed) exceeds ``options.max_blob_bytes`` -- dense: the whole blob, exactly; compact and sparse:
    the blob without its table of sampled nodes (``index_h``, the fixed row splits, ``labels``),
    which it holds at least. The message names the option, the size, what it is made of and the
    limit."""
    rows = 1 if per_row else n
    dense = options.layout == "dense"
    size = sample_bytes(rows, fanouts, width, options, *((None, None) if dense else (0, 0)))
    if size <= options.max_blob_bytes:
        return
    what = _sampled(n, fanouts, width, options, "1 seed per row" if per_row else _count(n, "seed"))
    subject = "each row's blob" if per_row else "the blob"
    if dense:
        amount = f"would hold {size:,} bytes ({what})"
    else:
        amount = (
            f"would hold at least {size:,} bytes ({what}; before sampling: the index arrays, "
            "the table of sampled nodes not counted yet)"
        )
    refuse(f"{subject} {amount}", options.max_blob_bytes, "fewer seeds or smaller fanouts")


def check_sampled(
    n: int,
    fanouts: Sequence[int],
    width: int,
    options: Options,
    u: int,
    nnz: int | None = None,
    *,
    row: str | None = None,
    counted: int | None = None,
) -> bool:
    """Phase 2, after sampling and before any feature is read (compact and sparse layouts): the
    blob of ``n`` seed rows whose table holds ``u`` distinct nodes (``row``: the blob of that
    ``sample_per_node`` row, named so in the message, ``n`` = 1).

    Compact: the exact size. Sparse without ``nnz``: the worst case over the ``u`` nodes (every
    feature non-zero); True when it fits, False when it does not -- then count the non-zeros and
    call again with ``nnz``. Sparse with ``nnz``: the exact size, or with ``counted`` (the first
    ``counted`` of the ``u`` nodes counted so far) the least it can be.

    Returns True when the blob fits; raises :class:`OptionError` naming the option, the phase, the
    figures and the limit when it does not."""
    sparse = options.layout == "sparse"
    size = sample_bytes(n, fanouts, width, options, u, nnz if sparse else None)
    if size <= options.max_blob_bytes:
        return True
    if sparse and nnz is None and width:
        return False
    seeds = "1 seed" if row is not None else _count(n, "seed")
    figures = f"after sampling: {_count(u, 'distinct node')}"
    at_least = ""
    if sparse and width:
        figures += f", {_count(nnz or 0, 'non-zero value')}"
        if counted is not None and counted < u:
            figures += f" in the first {counted:,} of them"
            at_least = " at least"
    what = f"{_sampled(n, fanouts, width, options, seeds)}; {figures}"
    subject = "the blob" if row is None else f"the blob of {row}"
    refuse(
        f"{subject} would hold{at_least} {size:,} bytes ({what})",
        options.max_blob_bytes,
        "fewer seeds or smaller fanouts",
    )


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
    refuse(f"the blob {verb} {size:,} bytes ({what})", options.max_blob_bytes, "fewer nodes")


def refuse(what: str, limit: int, fewer: str) -> NoReturn:
    """Raises the one :class:`OptionError` wording of a refusal: ``what`` the blob would hold,
    the ``limit`` (``options.max_blob_bytes``) and what to ask for (``fewer``) instead."""
    raise OptionError(
        f"max_blob_bytes: {what}; the limit is {limit:,} (options.max_blob_bytes): ask for "
        f"{fewer} per call, or raise the limit"
    )
