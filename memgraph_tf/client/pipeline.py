"""Blob pipelines: ``tf.data`` stages from node ids to tensors.

Each stage is: a batch of node ids -> one procedure call (``tf_features.sample`` / ``pack``, through
``tf.py_function``) -> the base64url text -> the unpack op (which decodes the base64) -> a dict of
tensors. The calls run in parallel ``map`` workers and the result is prefetched, so database round
trips overlap training (the driver releases the GIL while it waits on the socket).

:class:`FeatureCache` fetches the features of a node set once (``tf_features.pack``) and gathers
rows by id in the graph; :func:`sample_dataset` can then ask the procedures for neighbour ids only,
which moves far fewer bytes per step when nodes recur across batches (small graphs, many epochs).
"""

from __future__ import annotations

import logging
import threading
import zlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import tensorflow as tf

from memgraph_tf import blob, layout
from memgraph_tf.client.checks import positive_int
from memgraph_tf.client.sources import GraphSource
from memgraph_tf.errors import ConfigurationError, GraphDataError
from memgraph_tf.layout import PAD_ID
from memgraph_tf.ops import sample_decoding

logger = logging.getLogger(__name__)

DECODERS = ("auto", "op", "portable")


def node_id_array(node_ids: Any) -> np.ndarray:
    """``node_ids`` as an int64 vector; :class:`ConfigurationError` unless it is a non-empty 1-D
    sequence of integers."""
    ids = np.asarray(node_ids)
    if ids.ndim != 1 or ids.size == 0 or ids.dtype.kind not in "iu":
        raise ConfigurationError(
            "node_ids: expected a non-empty 1-D sequence of integer ids, got shape "
            f"{list(ids.shape)} of {ids.dtype}"
        )
    return ids.astype(np.int64)


def _fanouts(fanouts: Any) -> tuple[int, ...]:
    if not isinstance(fanouts, (list, tuple)) or not fanouts:
        raise ConfigurationError(
            f"fanouts: expected a non-empty list of integers >= 1 (one per hop), got {fanouts!r}"
        )
    return tuple(positive_int(f"fanouts[{i}]", f) for i, f in enumerate(fanouts))


def unpacker(decoder: str = "auto") -> Any:
    """The blob decoder: ``op`` (the C++ op, built on first use), ``portable`` (stock TF ops) or
    ``auto`` (the op, else the portable decoder when the op library cannot be built)."""
    from memgraph_tf import ops

    if decoder not in DECODERS:
        raise ConfigurationError(f"decoder: expected one of {', '.join(DECODERS)}, got {decoder!r}")
    if decoder == "portable":
        return ops.unpack_blob_portable
    if decoder == "op":
        return ops.unpack_blob
    try:
        ops.load_library()
        return ops.unpack_blob
    except ops.OpLibraryError as exc:
        logger.warning(
            "the UnpackBlob op library is unavailable (%s); using the portable decoder", exc
        )
        return ops.unpack_blob_portable


def pack_options(options: Mapping[str, Any] | None) -> dict[str, Any]:
    """The subset of sample ``options`` that ``tf_features.pack`` accepts."""
    return {k: v for k, v in (options or {}).items() if k in layout.PACK_OPTIONS}


def describe_options(options: Mapping[str, Any] | None) -> dict[str, Any]:
    """The subset of pack/sample ``options`` that ``tf_features.describe`` accepts (all of them:
    describe takes every sample option, plus ``fanouts``)."""
    return {k: v for k, v in (options or {}).items() if k in layout.DESCRIBE_OPTIONS}


def feature_layout(
    source: GraphSource, properties: Sequence[str], options: Mapping[str, Any] | None = None
) -> tuple[int, str]:
    """``(width d, dtype name)`` of the features ``properties`` give under ``options``, from
    ``tf_features.describe`` (nothing is packed or fetched)."""
    info = source.describe(list(properties), describe_options(options))
    return int(info["feature_width"]), str(info["dtype"])


def feature_width(
    source: GraphSource, properties: Sequence[str], options: Mapping[str, Any] | None = None
) -> int:
    """The feature width ``d`` that ``properties`` give, as ``tf_features.describe`` reports it."""
    return feature_layout(source, properties, options)[0]


SPARSE_ROWS_MAX_DENSITY = 0.1
"""The largest share of non-zero feature entries at which :attr:`FeatureCache.sparse` holds: below
it the trainers hand the model its rows as a ``tf.SparseTensor`` (bag-of-words features such as
Cora's, 1.3 % non-zero), whose products cost per non-zero entry rather than per column."""


class FeatureCache:
    """The features (and optionally labels) of a node set, fetched once through
    ``tf_features.pack``.

    Guarantees: :meth:`gather` returns, for ids of any shape, the rows of those nodes (zeros for
    ``PAD_ID``), computed in the graph (usable in ``tf.data``); :meth:`gather_sparse` the same rows
    of a vector of ids as a ``tf.SparseTensor``; an id that is not in the cache fails with
    ``tf.errors.InvalidArgumentError`` naming it, never with a silent zero row.
    """

    def __init__(
        self, ids: np.ndarray, features: np.ndarray, labels: np.ndarray | None = None
    ) -> None:
        self.ids = np.asarray(ids, dtype=np.int64)
        features = np.asarray(features)
        self.width = int(features.shape[1])
        self.dtype = tf.as_dtype(features.dtype)
        # one extra zero row at the end: where PAD_ID and unknown ids point
        table = np.concatenate([features, np.zeros((1, self.width), dtype=features.dtype)])
        self._table = tf.constant(table)
        self.labels = None if labels is None else np.asarray(labels, dtype=np.int64)
        self._index = RowIndex(self.ids)
        self.density = float(np.count_nonzero(table)) / max(table.size, 1)
        self._host_table = table
        self._csr_form: tuple[tf.Tensor, tf.Tensor, tf.Tensor] | None = None

    def _csr(self) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
        """The table in CSR form (row splits, columns, values of the row-major non-zero entries),
        made on first use (a dense cache never pays for it), as eager constants."""
        if self._csr_form is None:
            with tf.init_scope():
                row_of, column = np.nonzero(self._host_table)
                splits = np.bincount(row_of, minlength=len(self._host_table))
                self._csr_form = (
                    tf.constant(np.concatenate([[0], np.cumsum(splits)]), dtype=tf.int64),
                    tf.constant(column.astype(np.int64)),
                    tf.constant(self._host_table[row_of, column]),
                )
        return self._csr_form

    @property
    def sparse(self) -> bool:
        """Whether at most :data:`SPARSE_ROWS_MAX_DENSITY` of the entries are non-zero."""
        return self.density <= SPARSE_ROWS_MAX_DENSITY

    @classmethod
    def from_source(
        cls,
        source: GraphSource,
        node_ids: Any,
        properties: Sequence[str],
        options: Mapping[str, Any] | None = None,
        *,
        chunk_size: int = 2048,
    ) -> FeatureCache:
        """Packs ``node_ids`` in chunks of ``chunk_size`` through the source's ``pack``
        procedure."""
        ids = np.unique(node_id_array(node_ids))
        chunk_size = positive_int("chunk_size", chunk_size)
        opts = pack_options(options)
        feats, labels = [], []
        for start in range(0, len(ids), chunk_size):
            part = ids[start : start + chunk_size].tolist()
            sections = blob.unpack(source.pack_blob(part, list(properties), opts))
            feats.append(sections[layout.FEATURES])
            if layout.LABELS in sections:
                labels.append(sections[layout.LABELS])
        logger.info("feature cache: %d nodes x %d features", len(ids), feats[0].shape[1])
        return cls(ids, np.concatenate(feats), np.concatenate(labels) if labels else None)

    def _lookup(self, ids: tf.Tensor) -> tf.Tensor:
        """The table row of each id (the zero row for ``PAD_ID``), after a check that every other
        id is cached."""
        return self._index.lookup(ids)

    def gather(self, ids: tf.Tensor) -> tf.Tensor:
        """Rows for ``ids`` (any shape) -> ``ids.shape + [width]``."""
        return tf.gather(self._table, self._lookup(ids))

    def gather_sparse(self, ids: tf.Tensor) -> tf.SparseTensor:
        """Rows for ``ids`` (a vector) as a ``tf.SparseTensor`` ``[len(ids), width]`` holding
        their non-zero entries, in row-major order: ``tf.sparse.to_dense`` of it is
        :meth:`gather` of the same ids."""
        rows = self._lookup(ids)
        splits, columns, values = self._csr()
        owner, at = csr_entries(splits, rows)
        return tf.SparseTensor(
            tf.stack([owner, tf.gather(columns, at)], axis=1),
            tf.gather(values, at),
            tf.stack([tf.size(rows, out_type=tf.int64), tf.constant(self.width, tf.int64)]),
        )


CACHED_RAW_GROUPS = ("num", "time", "cat", "has")
"""The raw groups (:data:`memgraph_tf.layout.RAW_GROUPS`) a :class:`RawFeatureCache` holds: the
dense ones. A ``multi_categorical`` property (the ragged ``bag`` group) keeps its label on the
sampled path."""


DEFAULT_MAX_EXTRA_ROWS = 65536
"""The most rows a :class:`RawFeatureCache` keeps beside those it was filled with (nodes read when
a batch met them): past it, each batch meeting such a node reads it again."""

RAW_CACHE_MIN_CHUNK = 64
"""The fewest seeds of a :meth:`RawFeatureCache.from_source` call that is split in halves when it
fails: a failing call of this many or fewer leaves its nodes out of the cache."""


def raw_cacheable(spec: Any) -> bool:
    """Whether a :class:`RawFeatureCache` can serve a label of ``spec`` (a
    :class:`~memgraph_tf.feature_spec.LabelSpec`): none of its properties is
    ``multi_categorical``."""
    return all(layout.RAW_GROUP_OF_KIND[p.kind] in CACHED_RAW_GROUPS for p in spec.properties)


class RawFeatureCache:
    """The raw property columns (``options.feature_spec``) of one label's nodes, read once: the
    same values a sampled blob's raw sections carry for them (the model's encoder turns them
    into features, vocabularies and statistics included, so nothing is encoded twice).

    ``columns``: group of :data:`CACHED_RAW_GROUPS` -> ``[n, width]`` (``num`` float32,
    ``time`` int64, ``cat`` bytes, ``has`` bool), row ``i`` that of ``ids[i]``; ``widths``
    (group -> width) is needed only when ``ids`` is empty. ``spec``: the
    :class:`~memgraph_tf.feature_spec.LabelSpec` the columns were read with (None: unknown).
    ``reader``: reads the rows of ids that are not cached (a list of ids -> group -> ``[k,
    width]``, rows in that order; :meth:`from_source`'s is the procedure call that filled the
    cache, for those ids only); the rows it reads are kept, up to ``max_extra_rows`` of them (the
    later ones are read again by each batch that meets them).

    Guarantees: :meth:`gather` returns, per group, the rows of ``ids`` of any shape
    (``ids.shape + [width]``), a padded slot (``PAD_ID``) zero, ``b""`` and ``has`` false as the
    procedures write it (:mod:`memgraph_tf.procedures.raw`). An id not cached is read by
    ``reader`` (its errors -- a node missing, a value the spec refuses, naming the node -- fail
    the gather, as they fail a sampled batch); without one it fails with
    ``tf.errors.InvalidArgumentError`` naming it."""

    def __init__(
        self,
        ids: Any,
        columns: Mapping[str, Any],
        *,
        widths: Mapping[str, int] | None = None,
        spec: Any = None,
        reader: Callable[[list[int]], Mapping[str, np.ndarray]] | None = None,
        max_extra_rows: int = DEFAULT_MAX_EXTRA_ROWS,
    ) -> None:
        self.ids = np.asarray(ids, dtype=np.int64).reshape(-1)
        if not len(self.ids) and widths is not None:
            columns = {g: _empty_column(g, w) for g, w in widths.items() if w}
        unknown = sorted(set(columns) - set(CACHED_RAW_GROUPS))
        if unknown or "has" not in columns:
            raise ConfigurationError(
                f"columns: expected groups among {', '.join(CACHED_RAW_GROUPS)} with has, got "
                f"{', '.join(sorted(columns)) or 'none'}"
            )
        self.spec = spec
        self.widths: dict[str, int] = {}
        self._tables: dict[str, tf.Tensor] = {}
        for group in CACHED_RAW_GROUPS:
            if group not in columns:
                continue
            values = np.asarray(columns[group])
            if values.ndim != 2 or len(values) != len(self.ids):
                raise ConfigurationError(
                    f"columns[{group!r}]: expected [{len(self.ids)}, width], got shape "
                    f"{list(values.shape)}"
                )
            pad = np.full((1, values.shape[1]), b"" if group == "cat" else 0, values.dtype)
            self.widths[group] = int(values.shape[1])
            self._tables[group] = tf.constant(np.concatenate([values, pad]))
        self._index = RowIndex(self.ids)
        self._reader = reader
        if isinstance(max_extra_rows, bool) or not isinstance(max_extra_rows, int):
            raise ConfigurationError(
                f"max_extra_rows: expected an integer >= 0, got {max_extra_rows!r}"
            )
        self.max_extra_rows = max(0, max_extra_rows)
        self._extra: dict[int, tuple[np.ndarray, ...]] = {}
        self._lock = threading.Lock()

    @classmethod
    def from_source(
        cls,
        source: GraphSource,
        label: str,
        spec: Any,
        rel_type: str,
        options: Mapping[str, Any] | None = None,
        *,
        chunk_size: int = 2048,
        widths: Mapping[str, int] | None = None,
        max_extra_rows: int = DEFAULT_MAX_EXTRA_ROWS,
    ) -> RawFeatureCache:
        """Reads the raw columns of every ``label`` node (keyed by ``options["id_property"]``,
        else internal ids) through the source's ``tf_features.sample_typed`` with ``spec``
        (a :class:`~memgraph_tf.feature_spec.LabelSpec`) as ``options.feature_spec`` and one
        step of fanout 0 (``rel_type``: any relationship type; nothing is walked), ``chunk_size``
        seeds a call: the seeds' own table, written by the code that writes every sampled
        blob's. The cache's ``reader`` is that call: a node the cache lacks (created since, or
        one whose values failed) is read when a batch meets it, as a sampled batch reads it.

        A call that fails with :class:`GraphDataError` (a value the spec refuses, a node deleted
        meanwhile) is split in halves down to :data:`RAW_CACHE_MIN_CHUNK` seeds; the nodes of a
        part that still fails are left out of the cache, so the error is raised -- by the
        procedure, naming the node, the property and the value -- only when a batch gathers one
        of them, as on the sampled path. ``widths`` (group -> width, e.g. the label encoder's
        ``group_widths``): the cache's widths when no node is read (a label without nodes).
        :class:`ConfigurationError` for a spec :func:`raw_cacheable` refuses, and for a label of
        which no node is read without ``widths``."""
        from memgraph_tf.typed_sampling import EdgeStep

        if not raw_cacheable(spec):
            raise ConfigurationError(
                f"label {label!r}: a multi_categorical property (ragged bags) is not cached; "
                "its batches take the sampled path"
            )
        opts = {
            k: v
            for k, v in (options or {}).items()
            if k in ("id_property", "dtype", "allow_non_finite")
        }
        opts.update(label=label, feature_spec={label: spec.to_dict()})
        step = {str(EdgeStep(label, rel_type, label)): [0]}
        chunk_size = positive_int("chunk_size", chunk_size)
        keys = source.node_ids(label=label, id_property=opts.get("id_property"))
        ids = np.unique(node_id_array(keys)) if len(keys) else np.zeros([0], np.int64)

        def reader(seeds: list[int]) -> dict[str, np.ndarray]:
            sections = blob.unpack(source.sample_typed(seeds, step, {}, opts))
            names = {g: layout.typed_raw_name(g, 0, label) for g in CACHED_RAW_GROUPS}
            return {g: sections[n][:, 0, :] for g, n in names.items() if n in sections}

        kept, parts, left_out = _read_rows(reader, ids, chunk_size)
        if left_out:
            logger.warning(
                "raw feature cache: label %r: %d node(s) left out, read by the batches that "
                "meet them (%s)",
                label,
                sum(len(p) for p, _ in left_out),
                left_out[0][1],
            )
        if not kept and widths is None:
            why = f"every node failed: {left_out[0][1]}" if left_out else "the label has no nodes"
            raise ConfigurationError(
                f"label {label!r}: no node's raw columns were read ({why}); pass widths= for "
                "an empty cache"
            )
        logger.info("raw feature cache: %d %s nodes, groups %s", len(kept), label, sorted(parts))
        return cls(
            np.concatenate(kept) if kept else np.zeros([0], np.int64),
            {g: np.concatenate(v) for g, v in parts.items()},
            widths=widths,
            spec=spec,
            reader=reader,
            max_extra_rows=max_extra_rows,
        )

    def gather(self, ids: tf.Tensor) -> dict[str, tf.Tensor]:
        """Per cached group, the rows of ``ids`` (any shape) -> ``ids.shape + [width]``."""
        ids = tf.cast(ids, tf.int64)
        if self._reader is None:
            rows = self._index.lookup(ids)
            return {group: tf.gather(table, rows) for group, table in self._tables.items()}
        rows = self._index.rows(ids)
        out = {group: tf.gather(table, rows) for group, table in self._tables.items()}
        where = tf.where(tf.logical_and(tf.equal(rows, self._index.size), ids != PAD_ID))
        wanted = tf.gather_nd(ids, where)
        groups = list(self._tables)

        def read() -> list[tf.Tensor]:
            values = tf.numpy_function(
                self._read_uncached,
                [wanted],
                [self._tables[g].dtype for g in groups],
                stateful=True,
                name="feature_cache_read",
            )
            for value, group in zip(values, groups):
                value.set_shape([None, self.widths[group]])
            return list(values)

        def none() -> list[tf.Tensor]:
            return [tf.zeros([0, self.widths[g]], self._tables[g].dtype) for g in groups]

        fetched = tf.cond(tf.size(wanted) > 0, read, none)
        return {g: tf.tensor_scatter_nd_update(out[g], where, f) for g, f in zip(groups, fetched)}

    def _read_uncached(self, wanted: np.ndarray) -> list[np.ndarray]:
        """The rows of the uncached ids ``wanted`` in order, per group of the tables: kept ones,
        else read (and kept while there is room)."""
        groups = list(self._tables)
        keys = [int(k) for k in np.unique(wanted)]
        with self._lock:
            rows = {k: self._extra[k] for k in keys if k in self._extra}
        unread = [k for k in keys if k not in rows]
        if unread:
            read = self._reader(unread)
            for i, k in enumerate(unread):
                rows[k] = tuple(np.asarray(read[g][i]) for g in groups)
            with self._lock:
                for k in unread[: max(0, self.max_extra_rows - len(self._extra))]:
                    self._extra[k] = rows[k]
        out = []
        for j, group in enumerate(groups):
            table = [rows[int(k)][j] for k in wanted]
            out.append(np.stack(table).astype(self._tables[group].dtype.as_numpy_dtype))
        return out


def _empty_column(group: str, width: int) -> np.ndarray:
    """A ``[0, width]`` column of ``group``'s dtype."""
    return np.zeros([0, int(width)], tf.as_dtype(layout.RAW_DTYPES[group]).as_numpy_dtype)


def _read_rows(
    reader: Callable[[list[int]], Mapping[str, np.ndarray]], ids: np.ndarray, chunk_size: int
) -> tuple[list[np.ndarray], dict[str, list[np.ndarray]], list[tuple[np.ndarray, str]]]:
    """:meth:`RawFeatureCache.from_source`'s reads of ``ids`` by ``reader``, ``chunk_size`` a
    call, a failing call split in halves down to :data:`RAW_CACHE_MIN_CHUNK` ids: the ids read
    (per call), their columns per group (per call), and each part left out with its error."""
    pending = [ids[s : s + chunk_size] for s in range(0, len(ids), chunk_size)]
    kept: list[np.ndarray] = []
    parts: dict[str, list[np.ndarray]] = {}
    left_out: list[tuple[np.ndarray, str]] = []
    while pending:
        seeds = pending.pop(0)
        try:
            columns = reader(seeds.tolist())
        except GraphDataError as exc:
            if len(seeds) > RAW_CACHE_MIN_CHUNK:
                half = len(seeds) // 2
                pending[:0] = [seeds[:half], seeds[half:]]
            else:
                left_out.append((seeds, str(exc)))
            continue
        kept.append(seeds)
        for group, values in columns.items():
            parts.setdefault(group, []).append(values)
    return kept, parts, left_out


class RowIndex:
    """Node id -> row of a cache's table (``len(ids)``, the zero row, for ``PAD_ID``).

    Guarantees: :meth:`lookup` checks in the graph that every id but ``PAD_ID`` is one of
    ``ids`` and fails with ``tf.errors.InvalidArgumentError`` naming the first uncached ones."""

    def __init__(self, ids: np.ndarray) -> None:
        self.size = len(ids)
        keys, rows = np.asarray(ids, np.int64), np.arange(len(ids), dtype=np.int64)
        if not self.size:  # (a table cannot be empty: PAD_ID to the zero row, the default)
            keys, rows = np.array([PAD_ID], np.int64), np.zeros([1], np.int64)
        self._rows = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(tf.constant(keys), tf.constant(rows)),
            default_value=self.size,
        )

    def rows(self, ids: tf.Tensor) -> tf.Tensor:
        """The table row of each id (any shape, int64): ``len(ids)`` for one not among them."""
        return self._rows.lookup(tf.cast(ids, tf.int64))

    def lookup(self, ids: tf.Tensor) -> tf.Tensor:
        """The table row of each id (any shape, int64), checked."""
        ids = tf.cast(ids, tf.int64)
        rows = self._rows.lookup(ids)
        missing = tf.logical_and(tf.equal(rows, self.size), tf.not_equal(ids, PAD_ID))
        check = tf.debugging.Assert(
            tf.logical_not(tf.reduce_any(missing)),
            [
                "feature cache: expected every sampled node id to be cached, got uncached id(s)",
                tf.boolean_mask(ids, missing)[:5],
            ],
            name="feature_cache_check",
        )
        with tf.control_dependencies([check]):
            return tf.identity(rows)


def csr_entries(splits: tf.Tensor, rows: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
    """The entries of the rows ``rows`` (a vector) of a CSR matrix with row splits ``splits``
    (int64 ``[r + 1]``): ``(owner, at)``, both int64 and as long as those rows' entries together,
    in order -- ``owner`` the position in ``rows`` each entry belongs to (non-decreasing), ``at``
    its position in the matrix's column and value arrays. A handful of graph ops, whatever the
    number of rows (``tf.RaggedTensor`` gathers build many more)."""
    rows = tf.cast(rows, tf.int64)
    starts = tf.gather(splits, rows)
    lengths = tf.gather(splits, rows + 1) - starts
    offsets = tf.cumsum(lengths, exclusive=True)
    position = tf.range(tf.reduce_sum(lengths))
    # the last picked row whose entries start at or before each position (empty rows skipped)
    owner = tf.searchsorted(offsets, position, side="right", out_type=tf.int64) - 1
    return owner, position + tf.gather(starts - offsets, owner)


def batch_seed(base_seed: int | None, index: Any) -> int | None:
    """The procedure's ``options.seed`` for batch ``index`` of a run seeded ``base_seed`` (None:
    unseeded): a stable 63-bit value, so batches sample differently and runs repeat."""
    if base_seed is None:
        return None
    # a stable 63-bit seed per (base seed, batch index): batches sample differently, runs repeat
    return zlib.crc32(f"{base_seed}/{int(index)}".encode()) * 2**31 + int(index) % 2**31


def _ordered(num_parallel_calls: int | None) -> dict[str, bool]:
    """``deterministic=True`` for parallel maps (batches stay in order); nothing for sequential
    ones."""
    return {} if num_parallel_calls is None else {"deterministic": True}


def sample_dataset(
    source: GraphSource,
    node_ids: Any,
    fanouts: Sequence[int],
    properties: Sequence[str],
    *,
    options: Mapping[str, Any] | None = None,
    batch_size: int = 128,
    shuffle: bool = False,
    seed: int | None = None,
    repeat: bool = False,
    drop_remainder: bool = False,
    feature_cache: FeatureCache | None = None,
    include_ids: bool = True,
    num_parallel_calls: int | None = tf.data.AUTOTUNE,
    prefetch: int | None = tf.data.AUTOTUNE,
    decoder: str = "auto",
    gather_features: bool = True,
    draws: int = 1,
) -> tf.data.Dataset:
    """GraphSAGE batches: a dict of ``features_h``, ``mask_h``, ``ids_h`` and ``labels`` (the sample
    layout, :func:`memgraph_tf.layout.sample_sections`) per batch of seed ids.

    Every batch is one ``tf_features.sample`` call. ``seed`` makes the run reproducible while each
    batch still draws its own neighbourhoods (the procedure's ``options.seed`` is derived from
    ``seed`` and the batch index; an explicit ``options["seed"]`` instead fixes every node's sample
    for good). With ``feature_cache`` the procedure returns neighbour ids only and the features are
    gathered from the cache. ``labels`` is present when ``options["label_property"]`` is set.

    ``options["layout"]`` (``dense``, ``compact``, ``sparse``) is the layout the procedure writes;
    the batches are the same in every layout
    (:func:`memgraph_tf.ops.sample_decoding.decode_sample`).

    ``gather_features=False`` (only with ``feature_cache``) leaves the features out: the batches
    hold ``ids_h``, ``mask_h`` and ``labels`` only (``include_ids`` is then ignored), for
    :func:`unique_rows` or a ``cache()`` of the sampled neighbourhoods.

    ``draws`` passes over the batches of ``node_ids`` (after any ``repeat``, so only useful
    without it): every pass draws its own neighbourhoods, and no batch mixes two passes (the
    procedure samples a seed listed twice in one call the same way both times).

    Guarantees: ``features_h`` has the static shape ``[batch, f1..fh, d]`` and ``mask_h``
    ``[batch, f1..fh]`` (masks only when ``options["low_degree"]`` is ``pad``, the default).
    """
    ids = node_id_array(node_ids)
    fanouts = _fanouts(list(fanouts))
    batches = batching(batch_size, draws, seed, shuffle, repeat, num_parallel_calls)
    if not gather_features and feature_cache is None:
        raise ConfigurationError(
            "gather_features: expected True without a feature_cache (the features then come in "
            "the blobs), got False"
        )
    options = dict(options or {})
    props = list(properties)
    pad = options.get("low_degree") in (None, "pad")  # a null option means the default, "pad"
    has_labels = bool(options.get("label_property"))
    layout_name = options.get("layout") or "dense"
    if layout_name not in layout.LAYOUTS:
        raise ConfigurationError(
            f"options.layout: expected one of {', '.join(layout.LAYOUTS)}, got {layout_name!r}"
        )
    if feature_cache is not None:
        width, fdtype = feature_cache.width, feature_cache.dtype.name
        fetch_props: list[str] = []
    else:
        width, fdtype = feature_layout(source, props, options)
        fetch_props = props
    unpack = unpacker(decoder)

    def call(batch_ids: np.ndarray, opts: dict[str, Any]) -> str:
        return source.sample_blob_b64(batch_ids.tolist(), list(fanouts), fetch_props, opts)

    def decode(text: tf.Tensor) -> dict[str, tf.Tensor]:
        # any layout -> the dense layout's tensors (the blob's features are empty with a cache)
        out = sample_decoding.decode_sample(
            text,
            fanouts,
            0 if feature_cache is not None else width,
            fdtype,
            layout_name=layout_name,
            pad=pad,
            labels=has_labels,
            features=feature_cache is None,
            ids=True,
            unpack=unpack,
            encoding="base64",
        )
        if feature_cache is not None:
            if not gather_features:
                return out
            for h in range(len(fanouts) + 1):
                out[layout.features_name(h)] = feature_cache.gather(out[layout.ids_name(h)])
        if not include_ids:
            for h in range(len(fanouts) + 1):
                del out[layout.ids_name(h)]
        return out

    return call_batches(
        ids,
        call,
        decode,
        options=options,
        drop_remainder=drop_remainder,
        prefetch=prefetch,
        name="tf_features_sample",
        **batches,
    )


def batching(
    batch_size: Any,
    draws: Any,
    seed: int | None,
    shuffle: bool,
    repeat: bool,
    num_parallel_calls: int | None,
) -> dict[str, Any]:
    """The keyword arguments of :func:`call_batches` that every sampling dataset function takes
    from its caller as they are (``batch_size``, ``draws``, ``seed``, ``shuffle``, ``repeat``,
    ``num_parallel_calls``), checked: ``batch_size`` then ``draws`` integers >= 1
    (:class:`ConfigurationError` naming the first bad one)."""
    return {
        "batch_size": positive_int("batch_size", batch_size),
        "draws": positive_int("draws", draws),
        "seed": seed,
        "shuffle": shuffle,
        "repeat": repeat,
        "num_parallel_calls": num_parallel_calls,
    }


def call_batches(
    items: np.ndarray,
    call: Callable[[np.ndarray, dict[str, Any]], str],
    decode: Callable[[tf.Tensor], dict[str, tf.Tensor]],
    *,
    options: Mapping[str, Any] | None,
    seed: int | None,
    batch_size: int,
    shuffle: bool = False,
    repeat: bool = False,
    drop_remainder: bool = False,
    draws: int = 1,
    num_parallel_calls: int | None = None,
    prefetch: int | None = tf.data.AUTOTUNE,
    name: str = "procedure_call",
) -> tf.data.Dataset:
    """The ``tf.data`` tail every sampling pipeline shares (node, typed and pair batches): the
    ``items`` (seed ids ``[n]`` or pairs ``[n, 2]``), shuffled (``shuffle``, by ``seed``, anew each
    pass), repeated for good (``repeat``), batched, then passed ``draws`` times; per batch one
    ``call(batch, options)`` -> base64 text run in ``tf.py_function`` (op name ``name``) and
    ``decode(text)`` -> the batch's tensors, both as ``map`` stages with ``num_parallel_calls``
    workers (None: sequential), then ``prefetch`` (None: none).

    Guarantees: batches stay in order (parallel maps are deterministic); each call gets a copy of
    ``options`` whose ``seed`` is :func:`batch_seed` of ``seed`` and the batch's index in the run,
    unless ``options["seed"]`` is set (then every call keeps it: each node's sample fixed)."""
    opts = dict(options or {})
    fixed_seed = opts.get("seed") is not None

    def run(batch: tf.Tensor, index: tf.Tensor) -> str:
        call_opts = dict(opts)
        if not fixed_seed:
            call_opts["seed"] = batch_seed(seed, index.numpy())
        return call(batch.numpy(), call_opts)

    @tf.autograph.experimental.do_not_convert  # plain graph code: converting it costs seconds a run
    def fetch(batch: tf.Tensor, index: tf.Tensor) -> tf.Tensor:
        text = tf.py_function(run, [batch, index], Tout=tf.string, name=name)
        text.set_shape([])
        return text

    ds = tf.data.Dataset.from_tensor_slices(items)
    if shuffle:
        ds = ds.shuffle(len(items), seed=seed, reshuffle_each_iteration=True)
    if repeat:
        ds = ds.repeat()
    ds = ds.batch(batch_size, drop_remainder=drop_remainder)
    if draws > 1:
        ds = ds.repeat(draws)
    ds = tf.data.Dataset.zip((ds, tf.data.Dataset.counter()))
    ordered = _ordered(num_parallel_calls)
    ds = ds.map(fetch, num_parallel_calls=num_parallel_calls, **ordered)
    decode = tf.autograph.experimental.do_not_convert(decode)
    ds = ds.map(decode, num_parallel_calls=num_parallel_calls, **ordered)
    if prefetch is not None:
        ds = ds.prefetch(prefetch)
    return ds


ROWS = "rows"
"""The :func:`unique_rows` batch key of the distinct nodes' feature rows."""


def index_name(hop: int) -> str:
    """The :func:`unique_rows` batch key of hop ``hop``'s row indices."""
    return f"index_{hop}"


def without_autotune(ds: tf.data.Dataset) -> tf.data.Dataset:
    """``ds`` with tf.data's autotuning model off: ``AUTOTUNE`` parallelism and buffer sizes take
    tf.data's static defaults instead of being tuned by a background model.

    For training pipelines, which early stopping abandons with sampling still in flight. With the
    model on, deleting such an iterator waited 7-10 s in 8 of about 35 early-stopped Cora runs
    (``benchmarks/peer_pyg.py`` recipe, load 1-7; no Python frame running meanwhile); with it off,
    at most 0.11 s in 8 of 8, at the same step times. Guarantees: the same elements in the same
    order (only the tuning of parallelism and buffers changes)."""
    options = tf.data.Options()
    options.autotune.enabled = False
    return ds.with_options(options)


def unique_rows(feature_cache: FeatureCache, hops: int, sparse: bool = False) -> Any:
    """A ``tf.data`` map function: a ``gather_features=False`` batch of :func:`sample_dataset` ->
    ``rows`` (the feature rows ``[u, d]`` of the batch's ``u`` distinct node ids, padding
    included as a zero row; with ``sparse``, a ``tf.SparseTensor`` of their non-zero entries in
    row-major order, :meth:`FeatureCache.gather_sparse`), ``index_h`` (int32, the shape of
    ``ids_h``: each slot's row in ``rows``), and the batch's ``mask_h`` and ``labels`` unchanged.

    Guarantees: ``tf.gather(rows, index_h)`` (of the dense ``rows``) equals
    ``feature_cache.gather(ids_h)`` for every hop, so a model reading rows and indices
    (:meth:`memgraph_tf.client.graphsage.GraphSAGE.call_rows`) sees the features
    :func:`sample_dataset` would have gathered, each node's row once per batch rather than once per
    sampled slot; an id missing from the cache fails as in :meth:`FeatureCache.gather`.
    """
    names = [layout.ids_name(h) for h in range(hops + 1)]

    @tf.autograph.experimental.do_not_convert
    def apply(batch: Mapping[str, tf.Tensor]) -> dict[str, tf.Tensor]:
        out = {k: v for k, v in batch.items() if k not in names}
        out[ROWS], index = distinct_rows(feature_cache, [batch[n] for n in names], sparse)
        for h, slot_rows in enumerate(index):
            out[index_name(h)] = slot_rows
        return out

    return apply


def distinct_rows(
    feature_cache: FeatureCache, ids: Sequence[tf.Tensor], sparse: bool = False
) -> tuple[Any, list[tf.Tensor]]:
    """The feature rows of the distinct ids among the tensors ``ids`` (any shapes), each once, in
    order of first appearance (``sparse``: as a ``tf.SparseTensor``,
    :meth:`FeatureCache.gather_sparse`), and per tensor the row of each of its ids (int32, the
    tensor's shape): ``tf.gather(rows, index[i])`` is ``feature_cache.gather(ids[i])``."""
    flat = [tf.reshape(t, [-1]) for t in ids]
    unique, where = tf.unique(tf.concat(flat, axis=0), out_idx=tf.int32)
    rows = (feature_cache.gather_sparse if sparse else feature_cache.gather)(unique)
    index, start = [], 0
    for t, f in zip(ids, flat):
        size = tf.size(f, out_type=tf.int32)
        slot_rows = tf.reshape(where[start : start + size], tf.shape(t, out_type=tf.int32))
        slot_rows.set_shape(t.shape)
        index.append(slot_rows)
        start = start + size
    return rows, index


def pack_dataset(
    source: GraphSource,
    node_ids: Any,
    properties: Sequence[str],
    *,
    options: Mapping[str, Any] | None = None,
    batch_size: int = 1024,
    num_parallel_calls: int | None = tf.data.AUTOTUNE,
    prefetch: int | None = tf.data.AUTOTUNE,
    decoder: str = "auto",
) -> tf.data.Dataset:
    """Feature batches ``{"ids", "features", "labels"?}``: one ``tf_features.pack`` call per batch.

    Guarantees: ``features`` has the static shape ``[batch, d]``; rows follow ``node_ids``' order.
    """
    ids = node_id_array(node_ids)
    batch_size = positive_int("batch_size", batch_size)
    opts = pack_options(options)
    props = list(properties)
    width, fdtype = feature_layout(source, props, opts)
    unpack = unpacker(decoder)
    sections = layout.pack_sections(
        width, fdtype, labels=bool(opts.get("label_property")), batch=None
    )
    names = [s.name for s in sections]
    dtypes = [s.dtype for s in sections]
    shapes = [list(s.shape) for s in sections]

    def call(batch_ids: tf.Tensor) -> tf.Tensor:
        return source.pack_blob_b64(batch_ids.numpy().tolist(), props, opts)

    @tf.autograph.experimental.do_not_convert
    def fetch(batch_ids: tf.Tensor) -> tf.Tensor:
        text = tf.py_function(call, [batch_ids], Tout=tf.string, name="tf_features_pack")
        text.set_shape([])
        return text

    @tf.autograph.experimental.do_not_convert
    def decode(text: tf.Tensor) -> dict[str, tf.Tensor]:
        return dict(zip(names, unpack(text, names, dtypes, shapes=shapes, encoding="base64")))

    ds = tf.data.Dataset.from_tensor_slices(ids).batch(batch_size)
    ds = ds.map(fetch, num_parallel_calls=num_parallel_calls, **_ordered(num_parallel_calls))
    ds = ds.map(decode, num_parallel_calls=num_parallel_calls, **_ordered(num_parallel_calls))
    if prefetch is not None:
        ds = ds.prefetch(prefetch)
    return ds


def model_inputs(batch: Mapping[str, tf.Tensor], hops: int) -> dict[str, tf.Tensor]:
    """The GraphSAGE model's inputs (``features_h``, ``mask_h``) from a :func:`sample_dataset`
    batch."""
    return {k: batch[k] for k in layout.model_input_names(hops) if k in batch}
