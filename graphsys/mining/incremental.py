"""Triangle counts after edges were appended and deleted, from a previous result and the
changed edges, reading only the rows of the changed edges' ends.

Given a previous per-node result (``init``: a
:meth:`~graphsys.mining.triangle.TriangleStats.to_table`, or the Parquet file ``graphsys
mine triangles --out`` writes), the graph after the change is read as the repairs of
:mod:`graphsys.bsp.incremental_changes` read it (:mod:`graphsys.storage.previous`). Each
deleted copy, then each appended edge, is applied one at a time; where one changes the
undirected simple view, the common neighbours of its ends are the triangles lost or
gained. A count starts from scratch instead, saying why in
:attr:`~graphsys.mining.triangle.TriangleStats.method`, by the repairs' rule
(:data:`~graphsys.storage.previous.REPAIR_MAX_FRACTION`, out of core or over ranks, a time
view, an edge set re-adding a pair a change set deleted) or where the update would read
more than :data:`SCAN_SWEEPS` times both ends of the edges read. ``docs/growing.md``
("Triangle counts") gives the rule in full.

Examples
--------
>>> import pathlib, tempfile, numpy as np, graphsys
>>> from graphsys import mining
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> path = np.arange(4, 1000)                            # a triangle, a pendant, a path
>>> g = graphsys.from_numpy(np.concatenate([[0, 0, 1, 1], path]),
...                         np.concatenate([[1, 2, 2, 3], path + 1]), d / "g")
>>> before = mining.triangle_stats(g, per_node=True).to_table()
>>> _ = (d / "day2.tsv").write_text("2\\t3\\n3\\t0\\n")      # 0-2-3 closed by both
>>> _ = graphsys.ingest(d / "day2.tsv", d / "g", append=True, edge_set="day2")
>>> after = mining.triangle_stats(graphsys.open_graph(d / "g"), per_node=True,
...                               init=before)
>>> after.count, after.method
(4, 'updated (0 deleted pairs, 2 new edges; 12 entries scanned)')
>>> [after.triangles.value(k) for k in range(5)]
[3, 3, 3, 3, 0]
"""

from __future__ import annotations

import numba
import numpy as np

from graphsys.errors import FormatError
from graphsys.kernels import core_maintenance
from graphsys.kernels.core_maintenance import live_row
from graphsys.storage.previous import REPAIR_MAX_FRACTION, read_edges_as_stored, read_previous

#: An update that reads more than this many times both ends of every edge read counts from
#: scratch
SCAN_SWEEPS = 1


@numba.njit(cache=True, nogil=True)
def triangle_update(ov, n, counts, degree, d_u, d_v, d_slot_u, d_slot_v, i_u, i_v, i_slot_u,
                    i_slot_v, limit):
    """Triangles through each node ``counts`` and simple degrees ``degree`` int64 (N,)
    (changed in place) after the copies ``d_u[t] - d_v[t]`` are deleted one at a time, then
    the edges ``i_u - i_v`` inserted one at a time, over the overlay ``ov``
    (:func:`~graphsys.kernels.core_maintenance.overlay`). Consecutive changes with the same
    ``u`` (:func:`by_hub` groups them) read its row once, kept up to date as each changes
    it. Returns (the change of the total, entries scanned, False when that passed
    ``limit`` and the update stopped)."""
    nalive, dgone = ov[10], ov[13]
    cu, mu, su = np.zeros(n, np.int64), np.zeros(n, np.int64), np.empty(n, np.int64)
    cv, mv, sv = np.zeros(n, np.int64), np.zeros(n, np.int64), np.empty(n, np.int64)
    ustamp, vstamp, delta, scanned = 0, 0, 0, 0
    for phase in range(2):
        insert = phase == 1
        sign = 1 if insert else -1
        ends_u, ends_v = (i_u, i_v) if insert else (d_u, d_v)
        live, slot_u, slot_v = (nalive, i_slot_u, i_slot_v) if insert else (
            dgone, d_slot_u, d_slot_v)
        held = -1
        for t in range(ends_u.shape[0]):
            u, v = ends_u[t], ends_v[t]
            if u != held:  # u's row as it stands
                held, ustamp = u, ustamp + 1
                scanned += live_row(ov, n, u, ustamp, cu, mu, su)[1]
            if mu[v] != ustamp:
                mu[v], cu[v] = ustamp, 0
            before = cu[v]
            cu[v] += sign
            live[slot_u[t]] = True
            live[slot_v[t]] = True
            if before != (0 if insert else 1):  # the simple view keeps or lacks the pair
                continue
            vstamp += 1
            listed, work = live_row(ov, n, v, vstamp, cv, mv, sv)
            scanned += work
            found = 0
            for j in range(listed):  # the common neighbours, each once
                x = sv[j]
                if x != u and x != v and cv[x] > 0 and mu[x] == ustamp and cu[x] > 0:
                    counts[x] += sign
                    found += 1
            counts[u] += sign * found
            counts[v] += sign * found
            degree[u] += sign
            degree[v] += sign
            delta += sign * found
            if scanned > limit:
                return delta, scanned, False
    return delta, scanned, True


def by_hub(degree: np.ndarray, u, v, slot_u, slot_v) -> tuple[np.ndarray, ...]:
    """The changes ``(u, v, slot_u, slot_v)`` with each pair's end of higher ``degree``
    first, grouped by it (stable): :func:`triangle_update` then reads a hub's row once for
    all its changes (any order of one phase ends at the same counts)."""
    swap = degree[v] > degree[u]
    a, b = np.where(swap, v, u), np.where(swap, u, v)
    sa, sb = np.where(swap, slot_v, slot_u), np.where(swap, slot_u, slot_v)
    order = np.argsort(a, kind="stable")
    return a[order], b[order], sa[order], sb[order]


def updated(graph, edge_set: str, init, scratch_why: str | None):
    """``(total, counts, degree, method)`` after the change since ``init`` (the module
    docstring), counts and degree int64 (N,) by internal id; or a string saying why the
    count starts from scratch. ``scratch_why``: a reason of the caller's (out of core, over
    ranks) not to update."""
    previous = read_previous(graph, init, "triangles", edge_set,
                             column=("triangles", "degree"))
    old = previous.values[previous.known]
    if len(old) and (not np.all(np.isfinite(old)) or (old < 0).any()
                     or not np.array_equal(old, np.floor(old))):
        raise FormatError(f"{previous.source}: triangles and degrees must be non-negative "
                          f"integers; count from scratch instead (without a previous result)")
    change = scratch_why or read_edges_as_stored(graph, previous, edge_set)
    if isinstance(change, str):
        return change
    edges = graph.edge_set(edge_set).num_edges
    share = (len(change.src) + len(change.changed_deleted)) / max(edges, 1)
    if share > REPAIR_MAX_FRACTION:
        return (f"changed edges {share:.2%} of those read, above the update's "
                f"{REPAIR_MAX_FRACTION:.0%}")
    n = graph.num_nodes()
    counts, degree = np.zeros(n, np.int64), np.zeros(n, np.int64)
    counts[previous.known], degree[previous.known] = old[:, 0], old[:, 1]
    ov, deleted, inserted, pairs = core_maintenance.overlay(
        graph, change, not graph.edge_set(edge_set).undirected)
    deleted, inserted = by_hub(degree, *deleted), by_hub(degree, *inserted)
    # the rows it reads at least (their simple degrees before the change): past the limit,
    # not started
    reads = sum(int(degree[np.unique(c[0])].sum() + degree[c[1]].sum())
                for c in (deleted, inserted))
    limit = int(2 * SCAN_SWEEPS * edges)
    _, scanned, done = triangle_update(ov, n, counts, degree, *deleted, *inserted, limit) \
        if reads <= limit else (0, reads, False)
    if not done:
        return f"the update reads more than {SCAN_SWEEPS}x both ends of the edges"
    return (int(counts.sum()) // 3, counts, degree,
            f"updated ({pairs:,} deleted pairs, {len(inserted[0]):,} new edges; "
            f"{int(scanned):,} entries scanned)")
