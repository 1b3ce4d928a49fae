"""The typed blob of sampled roles (stdlib only): the per-label feature tables of the nodes the
:class:`~memgraph_tf.procedures.slots.Role` s met, their sections in the dense, compact or sparse
typed layout (:func:`memgraph_tf.layout.typed_sample_sections`, and prefixed for a pair blob) and
the ``options.max_blob_bytes`` checks: before anything is sampled (with the widths known by then:
a lower bound) and exactly after sampling, before any feature is read (sparse: with its non-zero
entries as a lower bound then, and exactly once the features are read, before the blob is built).

A label's feature columns are fixed by the first node of that label the call meets (tables in
layout order, slots in order), or, when it meets none, by the first node of that label having the
properties; every other node must match (else an error names the node, its label and the
property).
"""

from __future__ import annotations

import array
import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from memgraph_tf import blob, layout
from memgraph_tf.feature_spec import LabelSpec
from memgraph_tf.layout import PAD_ID
from memgraph_tf.procedures import limits
from memgraph_tf.procedures.access import AccessFactory, GraphAccess, node_name
from memgraph_tf.procedures.edge_columns import EdgeTables
from memgraph_tf.procedures.errors import OptionError
from memgraph_tf.procedures.options import Options, SplitFilter
from memgraph_tf.procedures.raw import (
    RawLayout,
    RawTable,
    build_raw_table,
    raw_sections,
    raw_table_sections,
    required_names,
)
from memgraph_tf.procedures.slots import Keys, Role, check_steps, draw_role
from memgraph_tf.procedures.tables import (
    INT32,
    Column,
    FeatureTable,
    build_table,
    csr,
    first_columns,
    gather,
    le,
    no_node_error,
    refuse_strings,
)
from memgraph_tf.typed_sampling import EdgeStep


class LabelView:
    """A :class:`~memgraph_tf.procedures.access.GraphAccess` over internal ids of one label's nodes
    that names each node by its key and label (``node with id = 5 (:Product)``), for
    :func:`~memgraph_tf.procedures.tables.build_table`'s errors."""

    def __init__(self, nav: Any, label: str, key_of: Mapping[int, int], id_property: Any) -> None:
        self._nav, self._label, self._key_of, self._id_property = nav, label, key_of, id_property

    def node_name(self, internal: int) -> str:
        return (
            f"{node_name(self._key_of.get(internal, internal), self._id_property)} (:{self._label})"
        )

    def properties(self, keys: Sequence[int], names: Sequence[str]) -> list[list[Any]]:
        return self._nav.properties(keys, names)

    def check_abort(self) -> None:
        self._nav.check_abort()


def _sizes(
    sections: Sequence[layout.Section],
    rows_of: Mapping[str, int] | None = None,
    nnz_of: Mapping[str, int] | None = None,
) -> int:
    """The blob size of ``sections``; a length that varies (``-1``: a compact/sparse table's)
    is taken from ``rows_of`` (table rows per section label) and ``nnz_of`` (non-zero entries per
    label), 0 where they do not say: a lower bound."""
    payloads = []
    for sec in sections:
        elements = 1
        for d in sec.shape:
            if d == -1:
                owner = _owner(sec)
                u = (rows_of or {}).get(owner, 0)
                if sec.role == "row_splits":  # (only the CSR splits vary: u + 1)
                    d = u + 1
                elif sec.role in ("columns", "values"):
                    d = (nnz_of or {}).get(owner, 0)
                else:
                    d = u
            elements *= d
        if sec.dtype == "string":  # (offsets only: the texts' bytes are not known yet)
            payloads.append(8 * (elements + 1))
        else:
            payloads.append(elements * blob.ITEM_BYTES[sec.dtype])
    return limits.total_bytes(payloads)  # (the one home of the blob-size rule)


def layout_sections(fn: Any, *args: Any, **kwargs: Any) -> list[layout.Section]:
    """``fn(*args, **kwargs)`` (a section list of :mod:`memgraph_tf.layout`), its ValueError (a
    label name too long for a section name in this layout, two labels whose sections are named
    alike) as an :class:`OptionError` naming ``options.layout``."""
    try:
        return fn(*args, **kwargs)
    except ValueError as exc:
        raise OptionError(f"options.layout ({kwargs.get('layout', 'dense')!r}): {exc}") from None


def _owner(sec: layout.Section) -> str:
    """The key of a per-label table section in the counts of :func:`_sizes`: its label, prefixed
    with its pair prefix in a pair blob."""
    for prefix in (layout.PAIR_SOURCE_PREFIX, layout.PAIR_TARGET_PREFIX):
        if sec.name.startswith(prefix):
            return prefix + (sec.label or "")
    return sec.label or ""


def check_size(
    sections: Sequence[layout.Section],
    n: int,
    slots: int,
    widths: Mapping[str, int],
    options: Options,
    phase: str,
    what: str = "seed",
    rows_of: Mapping[str, int] | None = None,
    nnz_of: Mapping[str, int] | None = None,
    raw: Mapping[str, layout.RawWidths] | None = None,
) -> None:
    """Refuses (:func:`memgraph_tf.procedures.limits.refuse`) a typed or pair blob of
    ``sections`` larger than ``options.max_blob_bytes``, naming ``n`` rows of ``what`` (``seed``,
    ``pair``), ``slots`` slots each, the feature ``widths`` and the ``phase`` (``before`` sampling:
    a lower bound; ``after``); the tables' varying lengths come from ``rows_of`` and ``nnz_of``
    (:func:`_sizes`); ``raw``: the raw column widths per label (named too; string sections count
    their offsets alone)."""
    size = _sizes(sections, rows_of, nnz_of)
    if size <= options.max_blob_bytes:
        return
    shown = ", ".join(f"{label} {w}" for label, w in widths.items()) or "none"
    for label, w in (raw or {}).items():
        columns = ", ".join(f"{group} {c}" for group, c in zip(layout.RAW_GROUPS, w) if c)
        shown += f"; raw columns of {label}: {columns}"
    limits.refuse(  # (the one wording of a refusal)
        f"the blob would hold {'at least ' if phase == 'before' else ''}{size:,} bytes "
        f"({n:,} {what}{'s' if n != 1 else ''}, {slots} slots each, feature widths "
        f"{shown} ({options.dtype}); {phase} sampling)",
        options.max_blob_bytes,
        f"fewer {what}s or smaller fanouts",
    )


def check_packed(data: bytes, n: int, what: str, raw_labels: Sequence[str], opts: Options) -> None:
    """Refuses a built blob ``data`` of ``n`` rows of ``what`` larger than
    ``options.max_blob_bytes`` when it holds raw columns (``raw_labels``): their texts' sizes are
    known only once read, so the checks before could count their offsets alone."""
    if not raw_labels or len(data) <= opts.max_blob_bytes:
        return
    limits.refuse(
        f"the blob holds {len(data):,} bytes ({n:,} {what}{'s' if n != 1 else ''}, raw property "
        f"columns of {', '.join(map(repr, raw_labels))}; after reading them)",
        opts.max_blob_bytes,
        f"fewer {what}s or smaller fanouts",
    )


def seed_columns(
    nav: Any,
    keys: Keys,
    names_of: Mapping[str, list[str]],
    opts: Options,
    label: str,
    first: int,
    columns_of: dict[str, list[Column]],
    widths: dict[str, int],
) -> None:
    """Fixes ``label``'s feature columns from the seed ``first`` (before sampling)."""
    if label not in names_of or label in columns_of:
        return
    view = LabelView(nav, label, keys.of[label], opts.id_property)
    columns_of[label] = first_columns(view, first, names_of[label])
    refuse_strings(columns_of[label])
    widths[label] = sum(c.width for c in columns_of[label])


def feature_tables(
    factory: AccessFactory,
    nav: Any,
    keys: Keys,
    names_of: Mapping[str, list[str]],
    opts: Options,
    roles: Sequence[Role],
    columns_of: dict[str, list[Column]],
    widths: dict[str, int],
    widths_known: Callable[[], None],
) -> dict[str, FeatureTable]:
    """The feature table of every label with properties over the nodes the roles met; fixes the
    columns of the labels not fixed yet (first node met, tables in layout order, roles in order)
    and calls ``widths_known()`` once every width is known, before any feature is read."""
    plain = dataclasses.replace(opts, id_property=None, label=None, label_property=None)
    met = met_nodes(roles)
    for label, names in names_of.items():
        if label in columns_of:
            continue
        view = LabelView(nav, label, keys.of.get(label, {}), opts.id_property)
        if met.get(label):
            columns_of[label] = first_columns(view, met[label][0], names)
        else:
            finder = factory(dataclasses.replace(plain, label=label))
            first = finder.first_node_with(names)
            if first is None:
                raise no_node_error(names, dataclasses.replace(plain, label=label))
            columns_of[label] = first_columns(finder, first, names)
        refuse_strings(columns_of[label])
        widths[label] = sum(c.width for c in columns_of[label])
    widths_known()
    tables_of: dict[str, FeatureTable] = {}
    for label, names in names_of.items():
        view = LabelView(nav, label, keys.of.get(label, {}), opts.id_property)
        tables_of[label] = build_table(
            view, met.get(label, []), names, plain, allow_strings=False, columns=columns_of[label]
        )
    return tables_of


def met_nodes(roles: Sequence[Role]) -> dict[str, list[int]]:
    """Per label, the distinct nodes (internal ids) of the roles' filled slots, in order of
    first appearance (roles in order, tables in layout order, each row-major)."""
    met: dict[str, list[int]] = {}
    for role in roles:
        for (_, label), flat in role.tables.items():
            met.setdefault(label, [])
            met[label].extend(k for k in flat if k != PAD_ID)
    return {label: list(dict.fromkeys(ks)) for label, ks in met.items()}


def role_sections(
    role: Role,
    keys: Keys,
    tables_of: Mapping[str, FeatureTable],
    widths: Mapping[str, int],
    opts: Options,
    check_abort: Any,
    prefix: str = "",
    raw_tables: Mapping[str, RawTable] | None = None,
) -> dict[str, Any]:
    """The typed sections of ``role`` in ``opts.layout``
    (:func:`memgraph_tf.layout.typed_sample_sections`, without ``labels``), each name prefixed
    with ``prefix``. Compact/sparse: a slot's index is its node's row in :meth:`Role.table_rows`
    of its label, whose features are the table (sparse: the entries that are not zero, CSR, as
    ``tf_features.sample``'s); gathering them by index gives exactly the dense layout's
    sections."""
    n = len(role.internals)
    raw_tables = raw_tables or {}  # (a label given a feature spec: raw_sections, in place of
    raw = {  # its features_* sections)
        label: t.layout.widths for label, t in raw_tables.items() if label in role.spec.labels()
    }
    specs = layout.typed_sample_sections(
        role.spec, role.widths(widths), opts.dtype, batch=n, layout=opts.layout, raw=raw
    )
    sections: dict[str, Any] = {}
    if opts.layout != "dense":
        order_of = role.table_rows()
        row_of = {label: dict(zip(order, range(len(order)))) for label, order in order_of.items()}
    for sec in specs:
        label = sec.label or ""
        if label in raw and sec.role in (*layout.RAW_GROUPS, "row_splits"):
            if sec.role == "has":  # (the last raw section of a slot table: write them all)
                flat = role.tables[(sec.hop, label)]
                slots = role.layout.tables[sec.hop][label]
                got = raw_sections(raw_tables[label], flat, sec.hop, n, slots)
                sections.update((prefix + name, value) for name, value in got.items())
            continue
        if label in raw and sec.role in layout.RAW_TABLE_ROLES:
            if sec.role == "table_has":  # (the last raw table of a label: write them all)
                got = raw_table_sections(raw_tables[label], order_of[label])
                sections.update((prefix + name, value) for name, value in got.items())
            continue
        if sec.role == "index":
            rows = row_of[label]
            flat = role.tables[(sec.hop, label)]
            data = le(array.array(INT32, [rows.get(k, -1) for k in flat]))
        elif sec.role == "table_ids":
            key_of = keys.of.get(label, {})
            u = len(order_of[label])
            ids = le(array.array("q", [key_of[k] for k in order_of[label]]))
            sections[prefix + sec.name] = blob.Ragged(
                blob.Dense(ids, [u], "int64"), array.array("q", [0, u])
            )
            continue
        elif sec.role in ("table", "columns"):
            order = order_of[label]
            u, d = len(order), widths[label]
            flat = gather(tables_of[label], order, opts.dtype, check_abort=check_abort)
            one_row = array.array("q", [0, u])
            if sec.role == "table":
                data = blob.Dense(le(flat), [u, d], opts.dtype)
                sections[prefix + sec.name] = blob.Ragged(data, one_row)
                continue
            columns, values, splits = csr(flat, u, d, opts.dtype, check_abort)
            nnz = len(columns)
            sections[prefix + sec.name] = blob.Ragged(
                blob.Dense(le(columns), [nnz], "int32"), splits
            )
            name = layout.typed_table_name(layout.TABLE_VALUES, label)
            sections[prefix + name] = blob.Ragged(
                blob.Dense(le(values), [nnz], opts.dtype), array.array("q", [0, nnz])
            )
            continue
        elif sec.role in ("values", "row_splits"):
            continue  # (written with their table above)
        elif sec.role == "ids":
            flat = role.tables[(sec.hop, label)]
            key_of = keys.of.get(label, {})
            data = le(array.array("q", [PAD_ID if k == PAD_ID else key_of[k] for k in flat]))
        elif sec.role == "mask":
            data = bytes([k != PAD_ID for k in role.tables[(sec.hop, label)]])
        else:  # features
            flat = role.tables[(sec.hop, label)]
            data = le(gather(tables_of[label], flat, opts.dtype, check_abort=check_abort))
        sections[prefix + sec.name] = blob.Dense(data, list(sec.shape), sec.dtype)
    return sections


def table_counts(roles: Sequence[Role], prefixes: Sequence[str] = ("",)) -> dict[str, int]:
    """Table rows per (prefixed) label of the roles' compact/sparse tables (for the size check)."""
    return {
        prefix + label: len(order)
        for role, prefix in zip(roles, prefixes)
        for label, order in role.table_rows().items()
    }


def nnz_counts(
    roles: Sequence[Role],
    tables_of: Mapping[str, FeatureTable],
    prefixes: Sequence[str] = ("",),
) -> dict[str, int]:
    """Non-zero feature entries per (prefixed) label of the roles' sparse tables."""
    out: dict[str, int] = {}
    for role, prefix in zip(roles, prefixes):
        for label, order in role.table_rows().items():
            table = tables_of.get(label)
            if table is None or not table.width:
                continue
            d, flat, row_of = table.width, table.flat, table.row_of
            out[prefix + label] = sum(
                d - flat[row_of[k] * d : (row_of[k] + 1) * d].count(0) for k in order
            )
    return out


@dataclasses.dataclass
class RoleCall:
    """One typed call's shared state (``sample_typed``: one role; ``sample_pairs``: the sources'
    and the targets'): the access factory and the call's access by internal id ``nav``, the keys
    met, the feature properties per label, the options and held-out relationships, the
    columns and widths fixed so far (per label), the labels given a feature spec with raw
    columns (``raw_of``) with their raw layouts fixed so far, and the steps given an edge feature
    spec (``edge_of``)."""

    factory: AccessFactory
    nav: GraphAccess
    keys: Keys
    names_of: Mapping[str, list[str]]
    opts: Options
    split: SplitFilter | None
    columns_of: dict[str, list[Column]] = dataclasses.field(default_factory=dict)
    widths: dict[str, int] = dataclasses.field(default_factory=dict)
    raw_of: Mapping[str, LabelSpec] = dataclasses.field(default_factory=dict)
    raw_layouts: dict[str, RawLayout] = dataclasses.field(default_factory=dict)
    edge_of: Mapping[EdgeStep, LabelSpec] = dataclasses.field(default_factory=dict)

    @property
    def edge_widths(self) -> dict[EdgeStep, layout.RawWidths]:
        """The edge feature column widths per step given a spec (``options.edge_feature_spec``)."""
        return {step: layout.raw_widths(spec) for step, spec in self.edge_of.items()}

    @property
    def raw_widths(self) -> dict[str, layout.RawWidths]:
        """The raw column widths of the labels whose raw layout is fixed."""
        return {label: raw.widths for label, raw in self.raw_layouts.items()}

    def fix_raw_layout(self, label: str, first: int | None) -> None:
        """Fixes the raw layout of ``label`` (in ``raw_of``): its ``required`` properties' widths
        from the node ``first`` (internal id), or when None from the first node of the label
        having them all (an error when none has); a spec without ``required`` properties reads no
        node."""
        spec = self.raw_of[label]
        names = required_names(spec)
        required: list[Column] = []
        if names:
            plain = dataclasses.replace(self.opts, id_property=None, label_property=None)
            if first is None:
                finder = self.factory(dataclasses.replace(plain, label=label))
                first = finder.first_node_with(names)
                if first is None:
                    raise no_node_error(names, dataclasses.replace(plain, label=label))
                required = first_columns(finder, first, names)
            else:
                view = LabelView(
                    self.nav, label, self.keys.of.get(label, {}), self.opts.id_property
                )
                required = first_columns(view, first, names)
            refuse_strings(required)
        self.raw_layouts[label] = RawLayout(label, spec, required)

    def fix_seed_columns(self, label: str, first: int) -> None:
        """Fixes ``label``'s feature columns (or raw layout) from its seed ``first`` (before
        sampling)."""
        if label in self.raw_of:
            if label not in self.raw_layouts:
                self.fix_raw_layout(label, first)
            return
        seed_columns(
            self.nav,
            self.keys,
            self.names_of,
            self.opts,
            label,
            first,
            self.columns_of,
            self.widths,
        )

    def sample_sections(
        self,
        n: int,
        slots: int,
        what: str,
        layout_of: Callable[[Mapping[str, int]], list[layout.Section]],
        make_roles: Callable[[], list[Role]],
        prefixes: Sequence[str] = ("",),
    ) -> dict[str, Any]:
        """Checks the blob's size before sampling (``layout_of(widths)``: its sections; ``n``
        rows of ``what``, ``slots`` slots each), makes the roles (``make_roles``, one per prefix),
        draws them, reads the feature tables (checking the size again before any feature is read
        and, sparse, once the values are read) and returns their sections, each role's prefixed
        with its prefix (:func:`role_sections`)."""
        roles: list[Role] = []
        opts, nav = self.opts, self.nav

        def check(phase: str, nnz_of: Mapping[str, int] | None = None) -> None:
            rows_of = table_counts(roles, prefixes) if roles else None
            sections = layout_of(self.widths)
            check_size(
                sections, n, slots, self.widths, opts, phase, what, rows_of, nnz_of, self.raw_widths
            )

        check("before")
        roles.extend(make_roles())
        cache: dict[EdgeStep, dict[int, list[int]]] = {}
        for role in roles:
            draw_role(nav, self.keys, role, cache, self.split)
        check_steps(nav, cache)
        met = met_nodes(roles) if self.raw_of else {}
        for label in self.raw_of:
            if label not in self.raw_layouts:
                self.fix_raw_layout(label, met[label][0] if met.get(label) else None)
        tables_of = feature_tables(
            self.factory,
            nav,
            self.keys,
            self.names_of,
            opts,
            roles,
            self.columns_of,
            self.widths,
            lambda: check("after"),
        )
        if opts.layout == "sparse":  # its size is known once the values are read
            check("after", nnz_counts(roles, tables_of, prefixes))
        raw_tables = {
            label: build_raw_table(
                LabelView(nav, label, self.keys.of.get(label, {}), opts.id_property),
                met.get(label, []),
                raw_layout,
                opts.allow_non_finite,
            )
            for label, raw_layout in self.raw_layouts.items()
        }
        edges = EdgeTables(nav, self.keys.name, self.edge_of, self.split, opts.allow_non_finite)
        edges.build(roles)
        sections: dict[str, Any] = {}
        for role, prefix in zip(roles, prefixes):
            sections.update(
                role_sections(
                    role,
                    self.keys,
                    tables_of,
                    self.widths,
                    opts,
                    nav.check_abort,
                    prefix,
                    raw_tables,
                )
            )
            sections.update((prefix + name, value) for name, value in edges.sections(role).items())
        return sections
