"""Baseline query module for benchmarks/query_modules.py: features as lists of floats, one row per
node (what a procedure returns without blobs)."""

import mgp


@mgp.read_proc
def features(ctx: mgp.ProcCtx, nodes: mgp.List[int], prop: str) -> mgp.Record(
    id=int, features=mgp.List[float]
):
    graph = ctx.graph
    rows = []
    for i, node_id in enumerate(nodes):
        if i % 256 == 0:
            ctx.check_must_abort()
        vertex = graph.get_vertex_by_id(node_id)
        rows.append(mgp.Record(id=node_id, features=vertex.properties.get(prop)))
    return rows
