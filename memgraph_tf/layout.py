"""The layout of the ``tf_features`` blobs: section names, dtypes and shapes, option names,
``PAD_ID``.

This is the one place the blob contract above the byte format (docs/blob-format.md) is written
down. The query modules (:mod:`memgraph_tf.procedures`) write blobs in this layout and
``tf_features.describe`` reports it; the client pipelines, the GraphSAGE input signature and the
serving bundles decode it. Standard library only: it is shipped into Memgraph beside ``blob.py``.

Two layouts, ``n`` nodes (or seeds) per blob, ``d`` the feature width, ``K = len(fanouts)``:

* **pack** (``tf_features.pack``): ``ids`` int64 ``[n]``; ``features`` ``[n, d]`` in the feature
  dtype; one string section ``[n]`` per string property (named after the property); ``labels``
  int64 ``[n]`` with ``options.label_property``.
* **sample** (``tf_features.sample``), ``options.layout`` (:data:`LAYOUTS`) chooses how:

  - ``dense`` (the default): for ``h = 0..K`` in this order ``ids_h`` int64 ``[n, f1..fh]``,
    ``features_h`` ``[n, f1..fh, d]``, ``mask_h`` bool ``[n, f1..fh]`` (``h >= 1``, only when
    low-degree nodes are padded); then ``labels`` int64 ``[n]`` with ``options.label_property``. A
    padded slot has id :data:`PAD_ID`, zero features and mask false.
  - ``compact``: each distinct sampled node once, in a *table* of ``u`` rows, and per hop the row
    of every slot: ``index_h`` int32 ``[n, f1..fh]`` for ``h = 0..K`` (``-1`` for a padded slot);
    ``table_ids`` int64 ``[u]`` (the rows' node keys) and ``table`` ``[u, d]`` (their features),
    each a ragged pair with one row (``NAME.row_splits`` = ``[0, u]``); then ``labels``.
  - ``sparse``: as ``compact``, with the table in CSR form instead of ``table``:
    ``table_columns`` int32 ``[nnz]`` with ``table_columns.row_splits`` int64 ``[u + 1]`` (the
    columns of row ``r``'s non-zero entries, increasing, are
    ``table_columns[row_splits[r]:row_splits[r+1]]``) and ``table_values`` ``[nnz]`` (their values;
    a ragged pair with one row, ``[0, nnz]``).

  ``u`` and ``nnz`` vary from blob to blob; every section whose length varies is a ragged pair
  (docs/blob-format.md, section 3), so that a vector of blobs decodes with the decoders' ragged
  support. :func:`memgraph_tf.ops.sample_decoding.decode_sample` turns any layout back into the
  dense
  one's tensors (in the graph). The table's rows are the sampled nodes in order of first
  appearance (hop 0, then hop 1, ..., each hop row-major); a row is written once even when it is
  reached many times.
* **typed sample** (``tf_features.sample_typed``): the slot tables of a
  :class:`~memgraph_tf.typed_sampling.TypedSamplingSpec` (``spec.layout()``), ``options.layout``
  (:data:`LAYOUTS`) choosing how, as for ``sample``:

  - ``dense``: for each table ``(h, label)`` in layout order (hop by hop, labels in order of
    first appearance): ``ids_h{h}_{label}`` int64 ``[n, slots]`` (the node keys, :data:`PAD_ID`
    where padded), ``features_h{h}_{label}`` ``[n, slots, width(label)]`` in the feature dtype
    (only for a label given feature properties), ``mask_h{h}_{label}`` bool ``[n, slots]``
    (``h >= 1``); then ``labels`` int64 ``[n]`` with ``options.label_property``. The features
    and mask sections are named exactly as the typed model's inputs
    (:func:`memgraph_tf.typed_sampling.typed_features_name` / ``mask_name``), so a decoded blob is
    the
    model's input dict.
  - ``compact`` / ``sparse``: one feature table *per label* (each distinct node of that label
    once): ``index_h{h}_{label}`` int32 ``[n, slots]`` per slot table in layout order (the row
    of the slot's node in its label's table, ``-1`` where padded); then per label in order of
    first appearance the ``sample`` layout's table sections suffixed ``_{label}``:
    ``table_ids_{label}`` and, for a label with features, ``table_{label}`` (compact) or
    ``table_columns_{label}`` / ``table_values_{label}`` (sparse), each a ragged pair; then
    ``labels``. A label's table rows are its nodes in order of first appearance over its slot
    tables (layout order, each row-major).

  See :func:`typed_sample_sections`; :func:`memgraph_tf.ops.sample_decoding.decode_typed_sample`
  turns
  any of them into the dense layout's tensors.
* **pair sample** (``tf_features.sample_pairs``): ``n`` rows, one per (source, target) pair (the
  given pairs, then the drawn negatives): the typed sections of the sources' spec, each name
  prefixed :data:`PAIR_SOURCE_PREFIX` (``src.``), then those of the targets' spec prefixed
  :data:`PAIR_TARGET_PREFIX` (``dst.``), then :data:`PAIR_LABELS` int64 ``[n]`` (1 for a given
  pair, 0 for a drawn negative); in any typed layout (``options.layout``; compact/sparse: each
  endpoint its own per-label tables). See :func:`pair_sample_sections`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from memgraph_tf.feature_spec import LabelSpec
    from memgraph_tf.typed_sampling import EdgeStep, TypedSamplingSpec

__all__ = [
    "DESCRIBE_OPTIONS",
    "EDGE_GROUPS",
    "EDGE_ROLE_PREFIX",
    "FEATURES",
    "FEATURE_DTYPES",
    "IDS",
    "LABELS",
    "LAYOUTS",
    "OPTION_NAMES",
    "PACK_OPTIONS",
    "PACK_SECTION_NAMES",
    "PAD_ID",
    "PAIR_LABELS",
    "PAIR_SOURCE_PREFIX",
    "PAIR_TARGET_PREFIX",
    "RAW_DTYPES",
    "RAW_GROUPS",
    "RAW_GROUP_OF_KIND",
    "ROW_SPLITS_SUFFIX",
    "SAMPLE_OPTIONS",
    "SAMPLE_PAIRS_OPTIONS",
    "SAMPLE_TYPED_OPTIONS",
    "SCHEMA_OPTIONS",
    "SPLITS",
    "SPLIT_EDGES_OPTIONS",
    "SPLIT_OPTIONS",
    "SPLIT_PROPERTY",
    "TABLE",
    "TABLE_COLUMNS",
    "TABLE_IDS",
    "TABLE_VALUES",
    "RawWidths",
    "Section",
    "features_name",
    "ids_name",
    "index_name",
    "mask_name",
    "model_input_names",
    "model_input_sections",
    "pack_sections",
    "pair_sample_sections",
    "ragged_names",
    "raw_widths",
    "row_splits_name",
    "sample_sections",
    "typed_edge_name",
    "typed_edge_sections",
    "typed_ids_name",
    "typed_index_name",
    "typed_raw_name",
    "typed_sample_sections",
    "typed_table_name",
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

LAYOUTS = ("dense", "compact", "sparse")
"""The sample layouts (``options.layout``); ``dense`` is the default."""
TABLE_IDS = "table_ids"
"""compact/sparse: the node key of each table row, int64 ``[u]`` (a ragged pair with one row)."""
TABLE = "table"
"""compact: the features of each table row, ``[u, d]`` (a ragged pair with one row)."""
TABLE_COLUMNS = "table_columns"
"""sparse: the column of each non-zero table entry, int32 ``[nnz]``; its row splits are the CSR
ones."""
TABLE_VALUES = "table_values"
"""sparse: the value of each non-zero table entry, ``[nnz]`` (a ragged pair with one row)."""
ROW_SPLITS_SUFFIX = ".row_splits"
"""The suffix of a ragged pair's row-splits section (docs/blob-format.md, section 3)."""

PACK_OPTIONS = (
    "allow_non_finite",
    "dtype",
    "id_property",
    "label",
    "label_property",
    "max_blob_bytes",
)
"""Options of ``tf_features.pack`` (also accepted by every other procedure)."""
SAMPLE_OPTIONS = PACK_OPTIONS + (
    "direction",
    "edge_types",
    "layout",
    "low_degree",
    "replace",
    "reservoir_threshold",
    "seed",
)
"""Options of ``tf_features.sample`` and ``sample_per_node`` (``reservoir_threshold``: the bounded
mode, :mod:`memgraph_tf.procedures.reservoir`)."""
DESCRIBE_OPTIONS = SAMPLE_OPTIONS + ("fanouts",)
"""Options of ``tf_features.describe``."""
SPLIT_PROPERTY = "split"
"""The relationship property ``tf_features.split_edges`` writes and ``options.exclude_splits``
reads by default (``options.split_property``)."""
SPLITS = ("train", "val", "test")
"""The values ``tf_features.split_edges`` writes (the GAE protocol's edge split)."""
SPLIT_OPTIONS = ("exclude_splits", "split_property")
"""Options of the typed samplers that leave held-out relationships out of every neighbourhood."""
SAMPLE_TYPED_OPTIONS = (
    PACK_OPTIONS
    + (
        "at",
        "edge_feature_spec",
        "feature_spec",
        "layout",
        "reservoir_threshold",
        "seed",
        "seed_time",
        "time_order",
    )
    + SPLIT_OPTIONS
)
"""Options of ``tf_features.sample_typed``: ``label`` is the seed label (required); ``layout`` one
of :data:`LAYOUTS`; ``feature_spec`` a map label -> feature spec (the raw property columns,
:func:`typed_sample_sections`' ``raw``); the typed sampler draws distinct neighbours without
replacement and pads -- a weighted step with ``replace: true`` in its pattern draws with
replacement -- (no ``replace``, ``low_degree``, ``direction``, ``edge_types`` options: the spec
says which relationships, which way, how); ``edge_feature_spec`` a map edge pattern -> feature spec
of the step's relationship properties (the edge feature columns, :func:`typed_edge_sections`)."""
SCHEMA_OPTIONS = ("dtype",)
"""Options of ``tf_features.schema``."""
SAMPLE_PAIRS_OPTIONS = (
    "allow_non_finite",
    "dtype",
    "edge_feature_spec",
    "feature_spec",
    "id_property",
    "layout",
    "max_blob_bytes",
    "negatives",
    "pair_time",
    "pair_times",
    "seed",
    "source_label",
    "target_label",
    "time_order",
) + SPLIT_OPTIONS
"""Options of ``tf_features.sample_pairs``: ``source_label`` is required, ``target_label``
defaults to it; ``negatives`` is the number of negative targets drawn per pair; ``feature_spec``
and ``edge_feature_spec`` as in :data:`SAMPLE_TYPED_OPTIONS` (both halves); ``pair_time`` (a
relationship property) or ``pair_times`` (one integer per pair) give each pair's time for steps
with a time, and ``time_order`` how they draw (:mod:`memgraph_tf.procedures.pair_times`)."""
SPLIT_EDGES_OPTIONS = (
    "cutoffs",
    "id_property",
    "seed",
    "split_property",
    "test_fraction",
    "time_property",
    "val_fraction",
)
"""Options of ``tf_features.split_edges``: ``seed`` is required for the random split;
``time_property`` with ``cutoffs = [t1, t2]`` splits by time instead (train before ``t1``, val
before ``t2``, test from ``t2``)."""
OPTION_NAMES = {
    "pack": PACK_OPTIONS,
    "sample": SAMPLE_OPTIONS,
    "sample_per_node": SAMPLE_OPTIONS,
    "describe": DESCRIBE_OPTIONS,
    "sample_typed": SAMPLE_TYPED_OPTIONS,
    "schema": SCHEMA_OPTIONS,
    "sample_pairs": SAMPLE_PAIRS_OPTIONS,
    "split_edges": SPLIT_EDGES_OPTIONS,
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
        raise ValueError(
            f"h: expected a hop >= 1 for a mask section (hop 0 holds the seeds), got {h!r}"
        )
    return f"mask_{h}"


def index_name(h: int) -> str:
    """The compact/sparse sample section of hop ``h``'s table rows: ``index_h``."""
    return f"index_{_hop(h)}"


def row_splits_name(name: str) -> str:
    """The row-splits section of the ragged pair ``name``: ``name.row_splits``."""
    return name + ROW_SPLITS_SUFFIX


def _hop(h: int) -> int:
    if not isinstance(h, int) or isinstance(h, bool) or h < 0:
        raise ValueError(f"h: expected a hop index, an integer >= 0, got {h!r}")
    return h


class Section(NamedTuple):
    """One blob section: ``name``, ``dtype`` (a blob dtype name), ``shape`` (the batch dimension
    first, as the ``batch`` argument that made it; a length that varies from blob to blob, such as
    the table's ``u``, is ``-1``, or None when ``batch`` is None); ``role`` is one of ``ids``,
    ``features``, ``mask``, ``labels``, ``string`` and, in the compact/sparse layouts, ``index``,
    ``table_ids``, ``table``, ``columns``, ``values``, ``row_splits``; ``hop`` is ``h`` for the
    per-hop sections of a sample layout, else None; ``label`` is the node label of a typed
    sample's per-label section (its slot table or feature table), else None."""

    name: str
    dtype: str
    shape: tuple
    role: str
    hop: int | None = None
    label: str | None = None

    def to_map(self) -> dict:
        """``{"name", "dtype", "shape"}`` as ``tf_features.describe`` reports it (shape as a
        list)."""
        return {"name": self.name, "dtype": self.dtype, "shape": list(self.shape)}


def _check(
    fanouts: Sequence[int] | None, width: int, dtype: str, batch: int | None
) -> tuple[int, ...]:
    if not isinstance(width, int) or isinstance(width, bool) or width < 0:
        raise ValueError(f"width: expected the feature width, an integer >= 0, got {width!r}")
    if dtype not in FEATURE_DTYPES:
        raise ValueError(
            f"dtype: expected one of {', '.join(map(repr, FEATURE_DTYPES))}, got {dtype!r}"
        )
    if batch is not None and (not isinstance(batch, int) or isinstance(batch, bool) or batch < -1):
        raise ValueError(f"batch: expected None, -1 (unknown) or a size >= 0, got {batch!r}")
    if fanouts is None:
        return ()
    if (
        not isinstance(fanouts, (list, tuple))
        or not fanouts
        or not all(isinstance(f, int) and not isinstance(f, bool) and f >= 1 for f in fanouts)
    ):
        raise ValueError(
            f"fanouts: expected a non-empty list of integers >= 1 (one per hop), got {fanouts!r}"
        )
    return tuple(fanouts)


def _layout(layout: str) -> str:
    if layout not in LAYOUTS:
        raise ValueError(f"layout: expected one of {', '.join(map(repr, LAYOUTS))}, got {layout!r}")
    return layout


def sample_sections(
    fanouts: Sequence[int],
    width: int,
    dtype: str = "float32",
    *,
    pad: bool = True,
    labels: bool = False,
    batch: int | None = -1,
    layout: str = "dense",
) -> list[Section]:
    """The sections of a ``tf_features.sample`` blob, in blob order (see the module docstring).

    ``fanouts``: one integer >= 1 per hop; ``width``: the feature width ``d``; ``dtype``: the
    features' dtype (``options.dtype``); ``pad``: masks are written (``options.low_degree`` is
    ``pad``; the compact and sparse layouts have no masks: a padded slot's index is ``-1``);
    ``labels``: a ``labels`` section is written (``options.label_property`` is set); ``batch``: the
    first dimension of every per-seed shape (``-1`` as ``describe`` reports it, None for a
    ``tf.TensorSpec``, ``n`` for a blob of n seeds); ``layout``: one of :data:`LAYOUTS`
    (``options.layout``).

    Guarantees: the names, dtypes, order and shapes are exactly those of the blobs the procedures
    write, where a length that varies from blob to blob (``u``, ``nnz``) reads ``-1`` (None when
    ``batch`` is None); a bad argument raises ValueError naming it, its value and what is allowed.
    """
    fanouts = _check(fanouts, width, dtype, batch)
    layout = _layout(layout)
    out: list[Section] = []
    shape: tuple = (batch,)
    for h in range(len(fanouts) + 1):
        if h:
            shape = shape + (fanouts[h - 1],)
        if layout != "dense":
            out.append(Section(index_name(h), "int32", shape, "index", h))
            continue
        out.append(Section(ids_name(h), "int64", shape, "ids", h))
        out.append(Section(features_name(h), dtype, shape + (width,), "features", h))
        if h and pad:
            out.append(Section(mask_name(h), "bool", shape, "mask", h))
    if layout != "dense":
        out.extend(_ragged(TABLE_IDS, "int64", (), "table_ids", batch))
        out.extend(_table_sections(width, dtype, batch, layout))
    if labels:
        out.append(Section(LABELS, "int64", (batch,), "labels"))
    return out


def _ragged(
    name: str, dtype: str, inner: tuple, role: str, batch: int | None, rows: int | None = 1
) -> list[Section]:
    """A ragged pair: ``name`` ``[-1, *inner]`` and ``name.row_splits`` int64 ``[rows + 1]``
    (``rows`` None: a number of rows that varies too)."""
    var = None if batch is None else -1
    splits = var if rows is None else rows + 1
    return [
        Section(name, dtype, (var,) + inner, role),
        Section(row_splits_name(name), "int64", (splits,), "row_splits"),
    ]


def _table_sections(width: int, dtype: str, batch: int | None, layout: str) -> list[Section]:
    if layout == "compact":
        return _ragged(TABLE, dtype, (width,), "table", batch)
    return _ragged(TABLE_COLUMNS, "int32", (), "columns", batch, rows=None) + _ragged(
        TABLE_VALUES, dtype, (), "values", batch
    )


def ragged_names(sections: Sequence[Section]) -> list[str]:
    """The names in ``sections`` that are the values of a ragged pair (their ``NAME.row_splits``
    is in ``sections`` too): what a decoder must be asked to decode as ragged."""
    names = {s.name for s in sections}
    return [s.name for s in sections if row_splits_name(s.name) in names]


def pack_sections(
    width: int,
    dtype: str = "float32",
    *,
    strings: Sequence[str] = (),
    labels: bool = False,
    batch: int | None = -1,
) -> list[Section]:
    """The sections of a ``tf_features.pack`` blob, in blob order: ``ids``, ``features``, one string
    section per name in ``strings`` (the string properties, in property order), ``labels`` when
    ``labels``. Arguments as in :func:`sample_sections`.

    Guarantees: the layout of the blobs ``tf_features.pack`` writes; a string name that is one of
    :data:`PACK_SECTION_NAMES` raises ValueError (pack refuses such properties).
    """
    _check(None, width, dtype, batch)
    out = [
        Section(IDS, "int64", (batch,), "ids"),
        Section(FEATURES, dtype, (batch, width), "features"),
    ]
    for name in strings:
        if name in PACK_SECTION_NAMES:
            raise ValueError(
                "strings: expected string property names other than "
                f"{', '.join(map(repr, PACK_SECTION_NAMES))} (section names of the blob), got "
                f"{name!r}"
            )
        out.append(Section(name, "string", (batch,), "string"))
    if labels:
        out.append(Section(LABELS, "int64", (batch,), "labels"))
    return out


def model_input_sections(
    fanouts: Sequence[int],
    width: int,
    dtype: str = "float32",
    *,
    masks: bool = True,
    batch: int | None = -1,
    layout: str = "dense",
) -> list[Section]:
    """The sections a GraphSAGE model reads from a sample blob, in blob order: in the dense layout
    ``features_h`` for h = 0..K and, with ``masks``, ``mask_h`` for h = 1..K; in the compact and
    sparse layouts ``index_h`` for h = 0..K and the table's sections (``table`` or
    ``table_columns``/``table_values``, each with its row splits). That is :func:`sample_sections`
    without the ids and labels; :func:`memgraph_tf.ops.sample_decoding.decode_sample` makes the
    model's
    inputs (:func:`model_input_names`) from any of them."""
    return [
        s
        for s in sample_sections(fanouts, width, dtype, pad=masks, batch=batch, layout=layout)
        if s.role not in ("ids", "labels", "table_ids")
        and not (s.role == "row_splits" and s.name == row_splits_name(TABLE_IDS))
    ]


def model_input_names(hops: int, masks: bool = True) -> list[str]:
    """``features_0..features_K`` then, with ``masks``, ``mask_1..mask_K`` (``K = hops``)."""
    if not isinstance(hops, int) or isinstance(hops, bool) or hops < 1:
        raise ValueError(f"hops: expected the number of hops, an integer >= 1, got {hops!r}")
    names = [features_name(h) for h in range(hops + 1)]
    return names + ([mask_name(h) for h in range(1, hops + 1)] if masks else [])


def typed_ids_name(hop: int, label: str) -> str:
    """The typed sample section of table ``(hop, label)``'s node keys: ``ids_h{hop}_{label}``."""
    return f"ids_h{_hop(hop)}_{label}"


def typed_index_name(hop: int, label: str) -> str:
    """The compact/sparse typed sample section of table ``(hop, label)``'s feature-table rows:
    ``index_h{hop}_{label}``."""
    return f"index_h{_hop(hop)}_{label}"


def typed_table_name(name: str, label: str) -> str:
    """A compact/sparse typed sample's per-label table section: ``name`` (:data:`TABLE_IDS`,
    :data:`TABLE`, :data:`TABLE_COLUMNS` or :data:`TABLE_VALUES`) then ``_{label}``, e.g.
    ``table_ids_Product``."""
    if name not in (TABLE_IDS, TABLE, TABLE_COLUMNS, TABLE_VALUES):
        raise ValueError(
            f"name: expected one of {TABLE_IDS!r}, {TABLE!r}, {TABLE_COLUMNS!r}, {TABLE_VALUES!r}, "
            f"got {name!r}"
        )
    return f"{name}_{label}"


RAW_GROUPS = ("num", "time", "cat", "bag", "has")
"""The raw column groups of a typed slot table (``options.feature_spec``), in blob order:
``num`` float32 (kinds ``required``, ``numeric``, ``boolean``), ``time`` int64 (``temporal``),
``cat`` string (``categorical``: category texts), ``bag`` ragged string (``multi_categorical``),
``has`` bool (one column per spec property: present and not null)."""
RAW_DTYPES = {"num": "float32", "time": "int64", "cat": "string", "bag": "string", "has": "bool"}
"""The dtype of each raw group's section."""
RAW_GROUP_OF_KIND = {
    "required": "num",
    "numeric": "num",
    "boolean": "num",
    "temporal": "time",
    "categorical": "cat",
    "multi_categorical": "bag",
}
"""The raw group each feature-spec kind's columns go to (:mod:`memgraph_tf.feature_spec`)."""


class RawWidths(NamedTuple):
    """The raw column widths of one label (``options.feature_spec``): columns per group (0: no
    section); ``has`` is the number of spec properties."""

    num: int = 0
    time: int = 0
    cat: int = 0
    bag: int = 0
    has: int = 0


def raw_widths(spec: LabelSpec, required: Mapping[str, int] | None = None) -> RawWidths:
    """The raw column widths of a label's feature spec (``options.feature_spec``): per group
    the columns of its properties (``numeric``: ``length`` or 1; ``required``: its width in
    ``required``, the numbers per node as the first node the procedure meets fixes them; any
    other kind: 1), ``has`` the number of properties. What a model reading the blob sizes its
    inputs with (:func:`typed_sample_sections`' ``raw``).

    Guarantees: the widths the procedure writes for that spec and those required widths; a
    ``required`` property missing from ``required`` raises ValueError naming it."""
    counts = dict.fromkeys(RAW_GROUPS, 0)
    for prop in spec.properties:
        if prop.kind == "required":
            if prop.name not in (required or {}):
                raise ValueError(
                    f"required: expected the width of required property {prop.name!r} of label "
                    f"{spec.label!r}, got none"
                )
            width = required[prop.name]
        else:
            width = (getattr(prop, "length", None) or 1) if prop.kind == "numeric" else 1
        counts[RAW_GROUP_OF_KIND[prop.kind]] += width
    counts["has"] = len(spec.properties)
    return RawWidths(**counts)


def typed_raw_name(group: str, hop: int, label: str) -> str:
    """The dense typed sample section of table ``(hop, label)``'s raw ``group``
    (:data:`RAW_GROUPS`): ``{group}_h{hop}_{label}``, e.g. ``cat_h1_Product``."""
    if group not in RAW_GROUPS:
        raise ValueError(
            f"group: expected one of {', '.join(map(repr, RAW_GROUPS))}, got {group!r}"
        )
    return f"{group}_h{_hop(hop)}_{label}"


EDGE_GROUPS = RAW_GROUPS
"""The edge feature column groups of an edge step's group of slots (``options.edge_feature_spec``,
docs/blob-format.md section 12), in blob order: the raw groups of :data:`RAW_GROUPS`, filled from
the properties of the relationship that reached each slot."""


EDGE_ROLE_PREFIX = "edge_"
"""The :class:`Section` role of an edge feature section is this prefix and its raw group's role
(``edge_num``, ..., ``edge_row_splits``)."""


def typed_edge_name(group: str, hop: int, step: int) -> str:
    """The dense typed sample section with edge feature ``group`` (:data:`EDGE_GROUPS`) of the
    slots that step ``step`` (its index in the sampling spec's steps) fills at hop ``hop``:
    ``edge_{group}_h{hop}_s{step}``, e.g. ``edge_num_h1_s0``."""
    if group not in EDGE_GROUPS:
        raise ValueError(
            f"group: expected one of {', '.join(map(repr, EDGE_GROUPS))}, got {group!r}"
        )
    if not isinstance(step, int) or isinstance(step, bool) or step < 0:
        raise ValueError(f"step: expected a step index, an integer >= 0, got {step!r}")
    return f"edge_{group}_h{_hop(hop)}_s{step}"


RAW_TABLE_ROLES = tuple(f"table_{group}" for group in RAW_GROUPS)
"""The section roles of a compact/sparse typed sample's raw tables (one per :data:`RAW_GROUPS`
group, in that order: ``table_num`` ... ``table_has``)."""


def typed_raw_table_name(group: str, label: str) -> str:
    """The compact/sparse typed sample's raw table section of ``label``'s ``group``
    (:data:`RAW_GROUPS`): ``table_{group}_{label}``, e.g. ``table_cat_Product`` (one row per
    table row of the label)."""
    if group not in RAW_GROUPS:
        raise ValueError(
            f"group: expected one of {', '.join(map(repr, RAW_GROUPS))}, got {group!r}"
        )
    return f"table_{group}_{label}"


def _raw_table_sections(label: str, widths: RawWidths, batch: int | None) -> list[Section]:
    """The raw tables of ``label`` in the compact/sparse layouts: per group with columns, a
    ragged pair ``table_{group}_{label}`` of one row (``[u, W]``, splits ``[0, u]``); ``bag``
    one row per (table row, column) (splits ``[u * Wb + 1]``)."""
    out: list[Section] = []
    for group, width in zip(RAW_GROUPS, widths):
        if not isinstance(width, int) or isinstance(width, bool) or width < 0:
            raise ValueError(
                f"raw[{label!r}].{group}: expected a column count, an integer >= 0, got {width!r}"
            )
        if not width:
            continue
        name = typed_raw_table_name(group, label)
        role = f"table_{group}"
        if group == "bag":
            pair = _ragged(name, "string", (), role, batch, rows=None)
        else:
            pair = _ragged(name, RAW_DTYPES[group], (width,), role, batch)
        out.extend(sec._replace(label=label) for sec in pair)
    return out


def _raw_sections(
    h: int,
    label: str,
    slots: int,
    widths: RawWidths,
    batch: int | None,
    name_of: Callable[[str], str] | None = None,
) -> list[Section]:
    """The raw sections of slot table ``(h, label)``: per group with columns, in
    :data:`RAW_GROUPS` order; ``bag`` a ragged pair of ``batch * slots * bag`` rows; named
    ``name_of(group)`` (default :func:`typed_raw_name`)."""
    out: list[Section] = []
    for group, width in zip(RAW_GROUPS, widths):
        if not isinstance(width, int) or isinstance(width, bool) or width < 0:
            raise ValueError(
                f"raw[{label!r}].{group}: expected a column count, an integer >= 0, got {width!r}"
            )
        if not width:
            continue
        name = typed_raw_name(group, h, label) if name_of is None else name_of(group)
        if group != "bag":
            shape = (batch, slots, width)
            out.append(Section(name, RAW_DTYPES[group], shape, group, h, label))
            continue
        var = None if batch is None else -1
        rows = var if batch is None or batch < 0 else batch * slots * width + 1
        out.append(Section(name, "string", (var,), group, h, label))
        out.append(Section(row_splits_name(name), "int64", (rows,), "row_splits", h, label))
    return out


def typed_edge_sections(
    spec: TypedSamplingSpec, edges: Mapping[EdgeStep, RawWidths], batch: int | None = -1
) -> list[Section]:
    """The edge feature sections (``options.edge_feature_spec``, docs/blob-format.md section 12)
    of the spec's groups (:meth:`~memgraph_tf.typed_sampling.TypedSamplingSpec.layout`, in layout
    order) whose step is in ``edges`` (step -> the :class:`RawWidths` of its edge feature spec):
    per group of hop ``h`` of step ``i`` with ``parents * fanout`` slots, the raw groups with
    columns (:data:`EDGE_GROUPS` order) named :func:`typed_edge_name`, shape
    ``[batch, parents * fanout, width]`` (``bag`` a ragged pair). ``Section.hop`` is ``h``,
    ``Section.label`` the step's right label, ``Section.role`` :data:`EDGE_ROLE_PREFIX` and the
    group (``edge_num``, ``edge_row_splits``).

    Guarantees: the names, dtypes, order and shapes the procedure writes; a step of ``edges``
    that is not in the spec raises ValueError naming it."""
    steps = list(spec.steps)
    for step in edges:
        if step not in steps:
            raise ValueError(
                f"edges: step {step} is not in this sampling spec (its steps: "
                f"{', '.join(map(str, steps))})"
            )
    out: list[Section] = []
    for group in spec.layout().groups:
        if group.step not in edges:
            continue
        index = steps.index(group.step)
        sections = _raw_sections(
            group.hop,
            group.step.right,
            group.size,
            RawWidths(*edges[group.step]),
            batch,
            name_of=lambda g, h=group.hop, i=index: typed_edge_name(g, h, i),
        )
        out.extend(sec._replace(role=EDGE_ROLE_PREFIX + sec.role) for sec in sections)
    return out


def typed_sample_sections(
    spec: TypedSamplingSpec,
    widths: Mapping[str, int],
    dtype: str = "float32",
    *,
    labels: bool = False,
    batch: int | None = -1,
    layout: str = "dense",
    raw: Mapping[str, RawWidths] | None = None,
    edges: Mapping[EdgeStep, RawWidths] | None = None,
) -> list[Section]:
    """The sections of a ``tf_features.sample_typed`` blob, in blob order (module docstring).

    ``spec``: the sampling spec (its :meth:`~memgraph_tf.typed_sampling.TypedSamplingSpec.layout`
    fixes the tables); ``widths``: the feature width per label (absent or 0: the label has no
    features and no ``features_*`` / feature-table section); ``dtype``, ``labels``, ``batch``,
    ``layout`` (:data:`LAYOUTS`, ``options.layout``) as in :func:`sample_sections`; ``raw``:
    per label given a feature spec (``options.feature_spec``), its :class:`RawWidths`: in the
    dense layout, in place of ``features_h{h}_{label}`` each slot table of the label has the raw
    sections ``num_``/``time_``/``cat_``/``bag_``/``has_h{h}_{label}`` (:data:`RAW_GROUPS`; a
    group without columns has none; ``bag`` a ragged pair); in the compact and sparse layouts, in
    place of the label's feature table, its raw tables ``table_{group}_{label}``
    (:func:`typed_raw_table_name`, one row per table row); ``edges``: per step given an edge
    feature spec (``options.edge_feature_spec``), its :class:`RawWidths`: the step's groups' edge
    sections (:func:`typed_edge_sections`, dense layout only) follow the slot tables' sections.
    ``Section.hop`` is the slot table's hop, ``Section.label`` the label of a per-label section.

    Guarantees: the names, dtypes, order and shapes of the blobs the procedure writes (a length
    that varies from blob to blob reads ``-1``, None when ``batch`` is None); the dense
    ``features_*``/``mask_*`` names are the typed model's input names; a bad width, a width for a
    label without slots, two sections named alike, or a section name longer than the blob format
    allows raises ValueError naming the label or section; so does ``raw`` for a label without
    slots or a label also in ``widths``, and ``edges`` in any layout but ``dense``.
    """
    from memgraph_tf import typed_sampling  # (stdlib only, shipped beside this module)

    _check(None, 0, dtype, batch)
    layout = _layout(layout)
    slot_layout = spec.layout()
    known = spec.labels()
    raw = dict(raw or {})
    for label in raw:
        if label not in known or widths.get(label):
            why = "has no slots in this spec" if label not in known else "has feature widths too"
            raise ValueError(f"raw: label {label!r} {why}")
    for label, width in widths.items():
        if label not in known:
            raise ValueError(
                f"widths: label {label!r} has no slots in this spec (labels with slots: "
                f"{', '.join(map(repr, known))})"
            )
        if not isinstance(width, int) or isinstance(width, bool) or width < 0:
            raise ValueError(
                f"widths[{label!r}]: expected the feature width, an integer >= 0, got {width!r}"
            )
    out: list[Section] = []
    for h, table in enumerate(slot_layout.tables):
        for label, slots in table.items():
            shape = (batch, slots)
            if layout != "dense":
                out.append(Section(typed_index_name(h, label), "int32", shape, "index", h, label))
                continue
            out.append(Section(typed_ids_name(h, label), "int64", shape, "ids", h, label))
            width = widths.get(label, 0)
            if label in raw:
                out.extend(_raw_sections(h, label, slots, RawWidths(*raw[label]), batch))
            elif width:
                name = typed_sampling.typed_features_name(h, label)
                out.append(Section(name, dtype, shape + (width,), "features", h, label))
            if h:
                name = typed_sampling.typed_mask_name(h, label)
                out.append(Section(name, "bool", shape, "mask", h, label))
    if edges:
        if layout != "dense":
            raise ValueError(
                "edges: edge feature columns (options.edge_feature_spec) are written in the dense "
                "layout only"
            )
        out.extend(typed_edge_sections(spec, edges, batch))
    if layout != "dense":
        for label in known:  # one table per label, labels in order of first appearance
            table_sections = _ragged(TABLE_IDS, "int64", (), "table_ids", batch)
            width = widths.get(label, 0)
            if width:
                table_sections += _table_sections(width, dtype, batch, layout)
            for sec in table_sections:
                base = sec.name.removesuffix(ROW_SPLITS_SUFFIX)
                name = typed_table_name(base, label) + sec.name[len(base) :]
                out.append(sec._replace(name=name, label=label))
            if label in raw:
                out.extend(_raw_table_sections(label, RawWidths(*raw[label]), batch))
    if labels:
        out.append(Section(LABELS, "int64", (batch,), "labels"))
    _check_names(out, layout)
    return out


def _check_names(sections: Sequence[Section], layout: str) -> None:
    """ValueError for a name over the blob format's limit or two sections named alike."""
    from memgraph_tf import blob  # (stdlib only, shipped beside this module)

    seen: dict[str, Section] = {}
    for sec in sections:
        size = len(sec.name.encode("utf-8"))
        if size > blob.MAX_NAME_BYTES:
            shorter = "" if layout == "dense" else " (or the dense layout, whose names are shorter)"
            raise ValueError(
                f"section {sec.name!r}: expected a name of at most {blob.MAX_NAME_BYTES} bytes "
                f"(docs/blob-format.md), got {size}: use a shorter label name{shorter}"
            )
        other = seen.setdefault(sec.name, sec)
        if other is not sec:
            raise ValueError(
                f"section {sec.name!r}: expected unique section names, got it for the labels "
                f"{other.label!r} and {sec.label!r}: rename a label or use the dense layout"
            )


PAIR_SOURCE_PREFIX = "src."
"""The prefix of the sources' typed sections in a pair blob."""
PAIR_TARGET_PREFIX = "dst."
"""The prefix of the targets' typed sections in a pair blob."""
PAIR_LABELS = "pair_labels"
"""The pair blob's labels: int64 ``[n]``, 1 for a given pair, 0 for a drawn negative."""


def pair_sample_sections(
    source_spec: TypedSamplingSpec,
    target_spec: TypedSamplingSpec,
    widths: Mapping[str, int],
    dtype: str = "float32",
    *,
    batch: int | None = -1,
    layout: str = "dense",
    raw: Mapping[str, RawWidths] | None = None,
    edges: Mapping[EdgeStep, RawWidths] | None = None,
) -> list[Section]:
    """The sections of a ``tf_features.sample_pairs`` blob, in blob order (module docstring):
    :func:`typed_sample_sections` of ``source_spec`` (seed label: the source label) prefixed
    :data:`PAIR_SOURCE_PREFIX`, of ``target_spec`` prefixed :data:`PAIR_TARGET_PREFIX`, then
    :data:`PAIR_LABELS`. ``widths``: the feature width per label (a label without slots in one
    spec is ignored for that spec); ``dtype``, ``batch``, ``layout`` as in
    :func:`typed_sample_sections` (compact/sparse: each endpoint has its own per-label tables);
    ``raw`` the raw widths per label (``options.feature_spec``), as ``widths``; ``edges`` the edge
    feature widths per step (``options.edge_feature_spec``; a step not in one spec is ignored for
    that spec).

    Guarantees: the names, dtypes, order and shapes of the blobs the procedure writes; stripping
    a prefix gives that endpoint's :func:`typed_sample_sections` (in the dense layout the typed
    model's input names); a name longer than the blob format allows raises ValueError naming the
    section."""
    out: list[Section] = []
    for prefix, spec in ((PAIR_SOURCE_PREFIX, source_spec), (PAIR_TARGET_PREFIX, target_spec)):
        labels = spec.labels()
        own = {label: w for label, w in widths.items() if label in labels}
        own_raw = {label: w for label, w in (raw or {}).items() if label in labels}
        own_edges = {s: w for s, w in (edges or {}).items() if s in spec.steps}
        for sec in typed_sample_sections(
            spec, own, dtype, batch=batch, layout=layout, raw=own_raw, edges=own_edges
        ):
            out.append(sec._replace(name=prefix + sec.name))
    out.append(Section(PAIR_LABELS, "int64", (batch,), "pair_labels"))
    _check_names(out, layout)
    return out
