"""Triangle counts after edges were appended and deleted, from a previous result and the
changed edges, reading only the rows of the changed edges' ends.

A triangle count given a previous per-node result (``init``: a
:meth:`~graphsys.mining.triangle.TriangleStats.to_table`, or the Parquet file
``graphsys mine triangles --out`` writes) reads the graph after the change as the
repairs of :mod:`graphsys.bsp.incremental_changes` do (:mod:`graphsys.storage.previous`,
the overlay of :mod:`graphsys.kernels.core_maintenance`): the adjacency of the edge sets
the previous result read, less the pairs deleted before it, with the pairs deleted since
and the appended edges beside it. Each deleted copy, then each appended edge, is applied
one at a time (ordered processing, so a batch is exact: a triangle two changed edges
close is counted by the later of them only); where one changes the undirected simple
view (the last copy of a pair gone, the first one there), the common neighbours of its
ends in the graph as it stands then are the triangles lost or gained, and the ends'
simple degrees move by one. Parallel edges and self-loops count as the count from
scratch counts them: not at all. Weight updates change no triangle and are not read.

A count starts from scratch instead, and says why in
:attr:`~graphsys.mining.triangle.TriangleStats.method`, where the changed edges are more
than :data:`~graphsys.storage.previous.REPAIR_MAX_FRACTION` of the edges read, out of core
or over ranks, on a time view, where a change set does not change every edge set the
previous result read alike, and where the update scans more than :data:`SCAN_SWEEPS`
times both ends of the edges read (then it stops, having spent about what a count from
scratch costs).

Examples
--------
>>> import tempfile, pathlib, numpy as np, graphsys
>>> from graphsys import mining
>>> from graphsys.storage.changes import delete_edges
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> tail = np.arange(3, 1000)
>>> src = np.concatenate([[0, 0, 0, 1, 1, 2], tail])
>>> dst = np.concatenate([[1, 2, 3, 2, 3, 3], tail + 1])
>>> g = graphsys.from_numpy(src, dst, d / "g")          # a 4-clique with a long tail
>>> before = mining.triangle_stats(g, per_node=True)
>>> before.count
4
>>> _ = delete_edges(d / "g", [0], [1])                  # 0.1 % of the edges
>>> g = graphsys.open_graph(d / "g")
>>> after = mining.triangle_stats(g, per_node=True, init=before.to_table())
>>> after.count, after.method
(2, 'updated (1 deleted pairs, 0 new edges; 8 entries scanned)')
>>> after.triangles.values[:4].tolist()
[1, 1, 2, 2]
"""

from __future__ import annotations

import numba
import numpy as np

from graphsys.errors import FormatError
from graphsys.kernels import core_maintenance
from graphsys.kernels.core_maintenance import live_row
from graphsys.storage.previous import REPAIR_MAX_FRACTION, read_change, read_previous

#: An update that scans more than this many times both ends of every edge read stops and
#: counts from scratch
SCAN_SWEEPS = 1


@numba.njit(cache=True, nogil=True)
def triangle_update(ov, n, counts, degree, d_u, d_v, d_slot_u, d_slot_v, i_u, i_v, i_slot_u,
                    i_slot_v, limit):
    """Triangles through each node ``counts`` and simple degrees ``degree`` int64 (N,)
    (changed in place) after the copies ``d_u[t] - d_v[t]`` are deleted one at a time, then
    the edges ``i_u - i_v`` inserted one at a time, over the overlay ``ov``
    (:func:`~graphsys.kernels.core_maintenance.overlay`). Returns (the change of the
    total, entries scanned, False when that passed ``limit`` and the update stopped)."""
    nalive, dgone = ov[10], ov[13]
    cu, mu, su = np.zeros(n, np.int64), np.zeros(n, np.int64), np.empty(n, np.int64)
    cv, mv, sv = np.zeros(n, np.int64), np.zeros(n, np.int64), np.empty(n, np.int64)
    stamp, delta, scanned = 0, 0, 0
    for phase in range(2):
        insert = phase == 1
        ends_u, ends_v = (i_u, i_v) if insert else (d_u, d_v)
        for t in range(ends_u.shape[0]):
            u, v = ends_u[t], ends_v[t]
            stamp += 1
            work = live_row(ov, n, u, stamp, cu, mu, su)[1]
            before = cu[v] if mu[v] == stamp else 0
            if insert:
                nalive[i_slot_u[t]] = True
                nalive[i_slot_v[t]] = True
            else:
                dgone[d_slot_u[t]] = True
                dgone[d_slot_v[t]] = True
            scanned += work
            if before != (0 if insert else 1):  # the simple view keeps or lacks the pair
                continue
            sign = 1 if insert else -1
            listed, work = live_row(ov, n, v, stamp, cv, mv, sv)
            scanned += work
            found = 0
            for j in range(listed):  # the common neighbours, each once
                x = sv[j]
                if x != u and x != v and cv[x] > 0 and mu[x] == stamp and cu[x] > 0:
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
    change = scratch_why or read_change(graph, previous, edge_set)
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
    _, scanned, done = triangle_update(ov, n, counts, degree, *deleted, *inserted,
                                       2 * SCAN_SWEEPS * edges)
    if not done:
        return f"the update scanned more than {SCAN_SWEEPS}x both ends of the edges"
    return (int(counts.sum()) // 3, counts, degree,
            f"updated ({pairs:,} deleted pairs, {len(inserted[0]):,} new edges; "
            f"{int(scanned):,} entries scanned)")
