"""Memgraph query module ``tf_features``: node features and GraphSAGE neighbourhoods as blobs.

Deploy with ``memgraph-tf install-modules DIR`` (copies this file and the ``memgraph_tf`` helper
package it imports into Memgraph's query-modules directory), then ``CALL mg.load_all();``.
Blobs follow docs/blob-format.md and leave as base64url strings (Memgraph has no bytes type).
Reference: docs/query-modules.md.
"""

# No `from __future__ import annotations` here: mgp.py reads the annotations as real types.
import mgp

from memgraph_tf import procedures as _procedures

# The list arguments are declared LIST OF ANY? (a list whose elements may be anything, null
# included) rather than LIST OF INTEGER / LIST OF STRING: Memgraph's own check of a declared type
# names only the argument and that type ("argument named 'fanouts' at position 1 must be of type
# LIST OF INTEGER."), while the procedures check every element themselves and name it
# (``fanouts[0]: expected an integer >= 1, got null``). A value that is not a list at all is
# still refused by Memgraph before the call.
_AnyList = mgp.List[mgp.Nullable[mgp.Any]]


@mgp.read_proc
def pack(
    ctx: mgp.ProcCtx,
    nodes: _AnyList,
    properties: _AnyList,
    options: mgp.Nullable[mgp.Map] = None,
) -> mgp.Record(blob=str, count=int):
    """One blob with ``ids`` [n], ``features`` [n, d], a section per string property and ``labels``
    (with ``options.label_property``) for ``nodes`` (vertices, or integer ids)."""
    encoded, count = _procedures.run_pack(ctx, nodes, properties, options)
    return mgp.Record(blob=encoded, count=count)


@mgp.read_proc
def sample(
    ctx: mgp.ProcCtx,
    seeds: _AnyList,
    fanouts: _AnyList,
    properties: _AnyList,
    options: mgp.Nullable[mgp.Map] = None,
) -> mgp.Record(blob=str):
    """One blob with ``ids_h``, ``features_h`` (h = 0..len(fanouts)), ``mask_h`` when padding, and
    ``labels`` (with ``options.label_property``): GraphSAGE neighbourhoods of ``seeds``."""
    return mgp.Record(blob=_procedures.run_sample(ctx, seeds, fanouts, properties, options))


@mgp.read_proc
def sample_per_node(
    ctx: mgp.ProcCtx,
    seeds: _AnyList,
    fanouts: _AnyList,
    properties: _AnyList,
    options: mgp.Nullable[mgp.Map] = None,
) -> mgp.Record(node_id=int, blob=str):
    """One row per seed: its id and the blob ``sample`` would give for that seed alone."""
    rows = _procedures.run_sample_per_node(ctx, seeds, fanouts, properties, options)
    return [mgp.Record(node_id=node_id, blob=encoded) for node_id, encoded in rows]


@mgp.read_proc
def describe(
    ctx: mgp.ProcCtx,
    properties: _AnyList,
    options: mgp.Nullable[mgp.Map] = None,
) -> mgp.Record(
    feature_width=int,
    dtype=str,
    columns=mgp.List[mgp.Map],
    sections=mgp.List[mgp.Map],
    num_classes=mgp.Nullable[int],
):
    """The feature width, dtype, per-property columns and the blob sections (pack layout, or the
    sample layout for ``options.fanouts``) that these properties produce, and with
    ``options.label_property`` the class count (1 + the largest label)."""
    info = _procedures.run_describe(ctx, properties, options)
    return mgp.Record(**info)


@mgp.read_proc
def sample_typed(
    ctx: mgp.ProcCtx,
    seeds: _AnyList,
    num_neighbors: mgp.Map,
    properties: mgp.Nullable[mgp.Map] = None,
    options: mgp.Nullable[mgp.Map] = None,
) -> mgp.Record(blob=str, count=int):
    """Typed (heterogeneous) neighbourhoods of ``seeds`` (nodes of the seed label,
    ``options.label``): ``num_neighbors`` maps edge patterns such as
    ``(:User)-[:BOUGHT]->(:Product)`` to a fanout per hop, ``properties`` maps labels to feature
    property names. One blob with, per hop and label, ``ids_h{h}_{label}``,
    ``features_h{h}_{label}`` and ``mask_h{h}_{label}``, and ``labels`` (with
    ``options.label_property``); ``count``: the number of seeds. ``options.feature_spec`` maps a
    label to its feature spec (``LabelSpec.to_dict()``): that label's raw values travel instead,
    as ``num_``/``time_``/``cat_``/``bag_``/``has_h{h}_{label}`` (docs/blob-format.md section 11).
    """
    encoded, count = _procedures.run_sample_typed(ctx, seeds, num_neighbors, properties, options)
    return mgp.Record(blob=encoded, count=count)


@mgp.read_proc
def schema(
    ctx: mgp.ProcCtx,
    properties: mgp.Nullable[mgp.Map] = None,
    options: mgp.Nullable[mgp.Map] = None,
) -> mgp.Record(labels=mgp.List[mgp.Map], relationships=mgp.List[mgp.Map]):
    """The graph's metagraph: per label its node count and the kind and width of the feature
    properties asked for it in ``properties`` (checked on every node of the label); per
    (source label, type, target label) the relationship count."""
    return mgp.Record(**_procedures.run_schema(ctx, properties, options))


@mgp.read_proc
def sample_pairs(
    ctx: mgp.ProcCtx,
    sources: _AnyList,
    targets: _AnyList,
    num_neighbors: mgp.Map,
    properties: mgp.Nullable[mgp.Map] = None,
    options: mgp.Nullable[mgp.Map] = None,
) -> mgp.Record(blob=str, count=int):
    """Link prediction: for each (source, target) pair (nodes of ``options.source_label`` and
    ``options.target_label``) both endpoints' typed neighbourhoods in one blob, with the pair's own
    relationships removed from both at every hop: ``src.*`` and ``dst.*`` typed sections and
    ``pair_labels`` (1 for a given pair, 0 for each of the ``options.negatives`` negatives drawn
    per pair); ``count``: the number of rows (pairs and negatives). ``options.feature_spec`` as in
    ``sample_typed``, for both halves. With steps that have a time, each pair's time
    (``options.pair_time``: its relationships' property, or ``options.pair_times``: one per pair)
    bounds both neighbourhoods of its rows, and its negatives are drawn among the target nodes
    active by then."""
    encoded, count = _procedures.run_sample_pairs(
        ctx, sources, targets, num_neighbors, properties, options
    )
    return mgp.Record(blob=encoded, count=count)


@mgp.write_proc
def split_edges(
    ctx: mgp.ProcCtx,
    pattern: str,
    options: mgp.Nullable[mgp.Map] = None,
) -> mgp.Record(train=int, val=int, test=int, relationships=int):
    """Link prediction: sets ``options.split_property`` (default ``split``) to ``train``, ``val``
    or ``test`` on every relationship ``pattern`` (e.g. ``(:Paper)-[:CITES]-(:Paper)``) matches,
    drawn from ``options.seed`` (``options.val_fraction`` 0.05, ``options.test_fraction`` 0.10 by
    default), or by time with ``options.time_property`` and ``options.cutoffs = [t1, t2]`` (train
    before ``t1``, val before ``t2``, test from ``t2``); the counts of edges per split and of
    relationships written."""
    return mgp.Record(**_procedures.run_split_edges(ctx, pattern, options))


# -- the bounded mode: per-node reservoirs of relationships (memgraph_tf/procedures/reservoir.py)


@mgp.write_proc
def build_reservoirs(
    ctx: mgp.ProcCtx,
    options: mgp.Nullable[mgp.Map] = None,
) -> mgp.Record(nodes=int, reservoirs=int, removed=int, next=mgp.Nullable[int]):
    """One page (``options.batch_nodes`` nodes after the cursor ``options.after``, in internal id
    order) of the build: each node with more than ``options.capacity`` relationships of the step
    (``options.edge_types``, ``options.direction``) gets a uniform sample of that many (with
    ``options.weight``, a weighted one) as a reservoir property; ``next``: the cursor of the next
    page, null when done."""
    return mgp.Record(**_procedures.run_build_reservoirs(ctx, options))


@mgp.write_proc
def update_reservoirs(
    ctx: mgp.ProcCtx,
    changes: mgp.List[mgp.Map],
    options: mgp.Nullable[mgp.Map] = None,
) -> mgp.Record(applied=int, skipped=int, updated=int, short=int):
    """Applies change-log entries (relationships created and deleted; with ``options.weight``,
    also reweighted) to the reservoirs of the step (``options.edge_types``,
    ``options.direction``) of their endpoints."""
    return mgp.Record(**_procedures.run_update_reservoirs(ctx, changes, options))


# -- profile: what one label's node properties hold (memgraph_tf/procedures/profile.py) ----------


@mgp.read_proc
def profile(
    ctx: mgp.ProcCtx,
    label: mgp.Nullable[mgp.Any],
    properties: mgp.Nullable[mgp.Any] = None,
    options: mgp.Nullable[mgp.Map] = None,
) -> mgp.Record(label=str, count=int, properties=mgp.List[mgp.Map]):
    """One scan of the nodes with ``label``: per property (``properties``: the names; null: every
    property found) the value types with counts, coverage, numeric and temporal statistics, list
    lengths and element types, cardinality and the ``options.top_k`` most frequent values."""
    return mgp.Record(**_procedures.run_profile(ctx, label, properties, options))


# -- structural: features from the graph's structure (memgraph_tf/procedures/structural.py) -------


@mgp.read_proc
def structural(
    ctx: mgp.ProcCtx,
    label: mgp.Nullable[mgp.Any],
    options: mgp.Nullable[mgp.Map] = None,
) -> mgp.Record(node_id=int, features=mgp.List[float], columns=mgp.List[str]):
    """One row per node of ``label`` (sorted by key): its key (``options.id_property`` or the
    internal id) and its structural vector -- log degrees per relationship type and direction,
    then a seeded FastRP embedding -- with the name of each entry in ``columns``."""
    result = _procedures.run_structural(ctx, label, options)
    return [
        mgp.Record(node_id=key, features=vector, columns=result.columns)
        for key, vector in zip(result.keys, result.vectors)
    ]


@mgp.write_proc
def structural_write(
    ctx: mgp.ProcCtx,
    label: mgp.Nullable[mgp.Any],
    options: mgp.Nullable[mgp.Map] = None,
) -> mgp.Record(nodes=int, width=int, columns=mgp.List[str], updated=mgp.Nullable[mgp.List[int]]):
    """``structural``'s vector of every node of ``label`` written into
    ``options.write_property`` (a list of floats, read back as a numeric feature); the node
    count, the vector width and the entries' names. With ``options.changed_nodes`` only the
    label's nodes within reach of those nodes are written, their internal ids in ``updated``."""
    return mgp.Record(**_procedures.run_structural_write(ctx, label, options))
