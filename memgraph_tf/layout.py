"""The layout of the ``tf_features`` blobs: section names, dtypes and shapes, option names, ``PAD_ID``.

This is the one place the blob contract above the byte format (docs/blob-format.md) is written
down. The query modules (:mod:`memgraph_tf.procedures`) write blobs in this layout and
``tf_features.describe`` reports it; the client pipelines, the GraphSAGE input signature and the
serving bundles decode it. Standard library only: it is shipped into Memgraph beside ``blob.py``.

Two layouts, ``n`` nodes (or seeds) per blob, ``d`` the feature width, ``K = len(fanouts)``:

* **pack** (``tf_features.pack``): ``ids`` int64 ``[n]``; ``features`` ``[n, d]`` in the feature
  dtype; one string section ``[n]`` per string property (named after the property); ``labels``
  int64 ``[n]`` with ``options.label_property``.
* **sample** (``tf_features.sample``): for ``h = 0..K`` in this order ``ids_h`` int64
  ``[n, f1..fh]``, ``features_h`` ``[n, f1..fh, d]``, ``mask_h`` bool ``[n, f1..fh]`` (``h >= 1``,
  only when low-degree nodes are padded); then ``labels`` int64 ``[n]`` with
  ``options.label_property``. A padded slot has id :data:`PAD_ID`, zero features and mask false.
"""

from __future__ import annotations

from typing import NamedTuple, Sequence

__all__ = [
    "DESCRIBE_OPTIONS",
    "FEATURE_DTYPES",
    "FEATURES",
    "IDS",
    "LABELS",
    "OPTION_NAMES",
    "PACK_OPTIONS",
    "PACK_SECTION_NAMES",
    "PAD_ID",
    "SAMPLE_OPTIONS",
    "Section",
    "features_name",
    "ids_name",
    "mask_name",
    "model_input_names",
    "model_input_sections",
    "pack_sections",
    "sample_sections",
]

PAD_ID = -1
"""The id written for a padded neighbour slot (its ``mask_h`` entry is false, its features zero)."""

FEATURE_DTYPES = ("float32", "float64")
"""The dtypes ``features``/``features_h`` can have (``options.dtype``)."""

IDS = "ids"
FEATURES = "features"
LABELS = "labels"
PACK_SECTION_NAMES = (IDS, FEATURES, LABELS)
"""The fixed section names of the pack layout (a string property may not be named like them)."""

PACK_OPTIONS = ("allow_non_finite", "dtype", "id_property", "label", "label_property")
"""Options of ``tf_features.pack`` (also accepted by every other procedure)."""
SAMPLE_OPTIONS = PACK_OPTIONS + ("direction", "edge_types", "low_degree", "replace", "seed")
"""Options of ``tf_features.sample`` and ``sample_per_node``."""
DESCRIBE_OPTIONS = SAMPLE_OPTIONS + ("fanouts",)
"""Options of ``tf_features.describe``."""
OPTION_NAMES = {
    "pack": PACK_OPTIONS,
    "sample": SAMPLE_OPTIONS,
    "sample_per_node": SAMPLE_OPTIONS,
    "describe": DESCRIBE_OPTIONS,
}
"""The option names each procedure accepts (any other key is an error)."""

def ids_name(h: int) -> str:
    """The sample section of hop ``h``'s node ids: ``ids_h``."""
    return f"ids_{_hop(h)}"


def features_name(h: int) -> str:
    """The sample section of hop ``h``'s features: ``features_h``."""
    return f"features_{_hop(h)}"


def mask_name(h: int) -> str:
    """The sample section of hop ``h``'s validity mask: ``mask_h`` (``h >= 1``)."""
    if _hop(h) < 1:
        raise ValueError(f"h: expected a hop >= 1 for a mask section (hop 0 holds the seeds), got {h!r}")
    return f"mask_{h}"


def _hop(h: int) -> int:
    if not isinstance(h, int) or isinstance(h, bool) or h < 0:
        raise ValueError(f"h: expected a hop index, an integer >= 0, got {h!r}")
    return h


class Section(NamedTuple):
    """One blob section: ``name``, ``dtype`` (a blob dtype name), ``shape`` (the batch dimension
    first, as the ``batch`` argument that made it); ``role`` is one of ``ids``, ``features``,
    ``mask``, ``labels``, ``string``; ``hop`` is ``h`` in a sample layout, else None."""

    name: str
    dtype: str
    shape: tuple
    role: str
    hop: int | None = None

    def to_map(self) -> dict:
        """``{"name", "dtype", "shape"}`` as ``tf_features.describe`` reports it (shape as a list)."""
        return {"name": self.name, "dtype": self.dtype, "shape": list(self.shape)}


def _check(fanouts: Sequence[int] | None, width: int, dtype: str, batch: int | None) -> tuple[int, ...]:
    if not isinstance(width, int) or isinstance(width, bool) or width < 0:
        raise ValueError(f"width: expected the feature width, an integer >= 0, got {width!r}")
    if dtype not in FEATURE_DTYPES:
        raise ValueError(f"dtype: expected one of {', '.join(map(repr, FEATURE_DTYPES))}, got {dtype!r}")
    if batch is not None and (not isinstance(batch, int) or isinstance(batch, bool) or batch < -1):
        raise ValueError(f"batch: expected None, -1 (unknown) or a size >= 0, got {batch!r}")
    if fanouts is None:
        return ()
    if not isinstance(fanouts, (list, tuple)) or not fanouts or not all(
            isinstance(f, int) and not isinstance(f, bool) and f >= 1 for f in fanouts):
        raise ValueError(f"fanouts: expected a non-empty list of integers >= 1 (one per hop), got {fanouts!r}")
    return tuple(fanouts)


def sample_sections(fanouts: Sequence[int], width: int, dtype: str = "float32", *, pad: bool = True,
                    labels: bool = False, batch: int | None = -1) -> list[Section]:
    """The sections of a ``tf_features.sample`` blob, in blob order (see the module docstring).

    ``fanouts``: one integer >= 1 per hop; ``width``: the feature width ``d``; ``dtype``: the
    features' dtype (``options.dtype``); ``pad``: masks are written (``options.low_degree`` is
    ``pad``); ``labels``: a ``labels`` section is written (``options.label_property`` is set);
    ``batch``: the first dimension of every shape (``-1`` as ``describe`` reports it, None for a
    ``tf.TensorSpec``, ``n`` for a blob of n seeds).

    Guarantees: the names, dtypes, order and shapes are exactly those of the blobs the procedures
    write; a bad argument raises ValueError naming it, its value and what is allowed.
    """
    fanouts = _check(fanouts, width, dtype, batch)
    out: list[Section] = []
    shape: tuple = (batch,)
    for h in range(len(fanouts) + 1):
        if h:
            shape = shape + (fanouts[h - 1],)
        out.append(Section(ids_name(h), "int64", shape, "ids", h))
        out.append(Section(features_name(h), dtype, shape + (width,), "features", h))
        if h and pad:
            out.append(Section(mask_name(h), "bool", shape, "mask", h))
    if labels:
        out.append(Section(LABELS, "int64", (batch,), "labels"))
    return out


def pack_sections(width: int, dtype: str = "float32", *, strings: Sequence[str] = (), labels: bool = False,
                  batch: int | None = -1) -> list[Section]:
    """The sections of a ``tf_features.pack`` blob, in blob order: ``ids``, ``features``, one string
    section per name in ``strings`` (the string properties, in property order), ``labels`` when
    ``labels``. Arguments as in :func:`sample_sections`.

    Guarantees: the layout of the blobs ``tf_features.pack`` writes; a string name that is one of
    :data:`PACK_SECTION_NAMES` raises ValueError (pack refuses such properties).
    """
    _check(None, width, dtype, batch)
    out = [Section(IDS, "int64", (batch,), "ids"), Section(FEATURES, dtype, (batch, width), "features")]
    for name in strings:
        if name in PACK_SECTION_NAMES:
            raise ValueError(
                f"strings: expected string property names other than "
                f"{', '.join(map(repr, PACK_SECTION_NAMES))} (section names of the blob), got {name!r}")
        out.append(Section(name, "string", (batch,), "string"))
    if labels:
        out.append(Section(LABELS, "int64", (batch,), "labels"))
    return out


def model_input_sections(fanouts: Sequence[int], width: int, dtype: str = "float32", *, masks: bool = True,
                         batch: int | None = -1) -> list[Section]:
    """The sections a GraphSAGE model reads from a sample blob: ``features_h`` for h = 0..K and,
    with ``masks``, ``mask_h`` for h = 1..K, in blob order (:func:`sample_sections` without the
    ids and labels)."""
    return [s for s in sample_sections(fanouts, width, dtype, pad=masks, batch=batch)
            if s.role in ("features", "mask")]


def model_input_names(hops: int, masks: bool = True) -> list[str]:
    """``features_0..features_K`` then, with ``masks``, ``mask_1..mask_K`` (``K = hops``)."""
    if not isinstance(hops, int) or isinstance(hops, bool) or hops < 1:
        raise ValueError(f"hops: expected the number of hops, an integer >= 1, got {hops!r}")
    names = [features_name(h) for h in range(hops + 1)]
    return names + ([mask_name(h) for h in range(1, hops + 1)] if masks else [])
