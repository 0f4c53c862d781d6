"""Core numbers (k-core) after edges were appended and deleted, from a previous result and
the changed edges, reading only the part of the graph the change reaches; the guide is
docs/growing.md.

The graph after the change is read as the repairs of
:mod:`graphsys.bsp.incremental_changes` read it. Each deleted copy, then each appended
edge, is applied one at a time by the order-based core maintenance of
:mod:`graphsys.kernels.core_maintenance` (Zhang et al., ICDE 2017) from the k-order the
previous result kept (its ``order`` column); the result keeps the updated order. Weight
updates change no core and are not read.

A run starts from scratch instead, saying why in ``result.stats.method``
(``result.stats.start == "scratch"``), by the repairs' rule, where the previous result
keeps no k-order (or one of a version this release does not read), where the updates
scan more than :data:`SCAN_SHARE` of
:data:`~graphsys.bsp.incremental_changes.REPAIR_MAX_SWEEPS` times both ends of the edges
read (or :data:`SCAN_FLOOR` entries per sweep where that is more), and with
``self_loops="refuse"`` (which reads every edge). The core numbers are a run from
scratch's.

Examples
--------
>>> import tempfile, pathlib, numpy as np, graphsys
>>> from graphsys import bsp
>>> from graphsys.storage.changes import delete_edges
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> tail = np.arange(3, 1000)
>>> src = np.concatenate([[0, 0, 0, 1, 1, 2], tail])
>>> dst = np.concatenate([[1, 2, 3, 2, 3, 3], tail + 1])
>>> g = graphsys.from_numpy(src, dst, d / "g")          # a 4-clique with a long tail
>>> before = bsp.kcore(g).to_table()
>>> _ = delete_edges(d / "g", [0], [1])                  # 0.1 % of the edges
>>> g = graphsys.open_graph(d / "g")
>>> after = bsp.kcore(g, init=before)                    # only the clique is peeled
>>> after.stats.start, after.stats.method
('repair', 'updated (1 deleted pairs, 0 new edges; 30 entries scanned)')
>>> after.values[:5].tolist(), bool((after.values == bsp.kcore(g).values).all())
([2.0, 2.0, 2.0, 2.0, 1.0], True)
"""

from __future__ import annotations

import time

import numpy as np

from graphsys.bsp import incremental_changes as changes
from graphsys.bsp.algorithms.common import symmetric
from graphsys.bsp.engine import Result
from graphsys.bsp.stats import SuperstepStats
from graphsys.errors import FormatError
from graphsys.kernels import core_maintenance

#: The share of :func:`~graphsys.bsp.incremental_changes.REPAIR_MAX_SWEEPS` sweeps an
#: update scans before it stops: an entry of the overlay (translated, checked against the
#: deleted pairs, read to reach, count, order and peel) costs several times one of a
#: peeling, so an update that gives up has spent about half of a peeling from scratch
SCAN_SHARE = 1 / 32
#: The fewest entries an update may scan, per one of those sweeps: a run from scratch
#: also opens the graph's indexes, lays it out and lists its result, which on a small
#: graph (ca-GrQc's 29k edges) costs more than the update scanning this many entries
SCAN_FLOOR = 1 << 15


def cores_from(spec, graph, previous, *, source=None, params=None,
               max_iters: int | None = None, edge_set=None, **kwargs) -> Result:
    """Core numbers from ``previous``'s after appends and deletions (the module
    docstring), or from scratch where that does not apply or pay, saying why."""
    previous.check_fixed_point(spec.name)
    old = previous.values[previous.known]
    if len(old) and (not np.all(np.isfinite(old)) or (old < 0).any()
                     or not np.array_equal(old, np.floor(old))):
        raise FormatError(f"{previous.source}: core numbers must be non-negative integers; "
                          f"run kcore from scratch instead (without a previous result)")
    kwargs["edge_set"] = edge_set
    why = changes.repair_applies(kwargs, "a k-core update")
    if why is None and (params or {}).get("self_loops", "ignore") != "ignore":
        why = "self_loops='refuse' reads every edge"
    change = changes.read_edges_as_stored(graph, previous, edge_set) if why is None else why
    if not isinstance(change, str):
        read = max(graph.edge_set(edge_set).num_edges, 1)
        share = (len(change.src) + len(change.changed_deleted)) / read
        if share > changes.REPAIR_MAX_FRACTION:
            change = changes.Costly(f"changed edges {share:.2%} of those read, above the "
                                    f"repair's {changes.REPAIR_MAX_FRACTION:.0%}")
    if not isinstance(change, str) and previous.order is None:
        change = "the previous result keeps no k-order (written before results kept one)"
    if not isinstance(change, str):
        core = np.zeros(graph.num_nodes(), np.int64)
        core[previous.known] = old.astype(np.int64)
        change = cores_updated(spec, graph, core, _order(previous, core, len(change.src)),
                               change, kwargs)
    if isinstance(change, str):
        return changes.from_scratch(spec, graph, change, params=params, max_iters=max_iters,
                            **kwargs)
    return change


def _order(previous, core: np.ndarray, inserted: int) -> tuple:
    """The k-order ``previous`` kept, as :func:`~graphsys.kernels.core_maintenance.
    order_lists` (room for the core numbers to rise by one per ``inserted`` edge); a
    one-line FormatError when it is not one of ``core``."""
    n = len(core)
    ok, od = core_maintenance.order_lists(core, previous.order,
                                          int(core.max(initial=0)) + inserted + 2,
                                          1 << max(1, 61 - n.bit_length()))
    if not ok or (previous.order[previous.known] < 0).any():
        raise FormatError(f"{previous.source}: its order is not a peeling order of its core "
                          f"numbers; run kcore from scratch instead (without a previous "
                          f"result)")
    return od


def cores_updated(spec, graph, core: np.ndarray, od: tuple, change: changes.Change, kwargs
                  ) -> Result | str:
    """The core numbers after ``change`` from ``core`` int64 (N,) and their k-order ``od``
    (both changed in place), or a string saying why not when the updates reach too far."""
    t0 = time.perf_counter()
    two = not symmetric(graph, kwargs.get("edge_set"))
    ov, deleted, inserted, pairs = core_maintenance.overlay(graph, change, two)
    setup = time.perf_counter() - t0
    sweeps = changes.REPAIR_MAX_SWEEPS
    limit = int(max(SCAN_SHARE * changes._limit(graph, kwargs), SCAN_FLOOR * sweeps))
    scanned, done = core_maintenance.overlay_update(
        ov, graph.num_nodes(), core, od, *deleted, *inserted, limit)
    if not done:
        return changes.Costly(f"the updates scanned more than {limit:,} entries (the larger "
                              f"of {SCAN_SHARE:g} x {sweeps} times both ends of the edges "
                              f"and {SCAN_FLOOR:,} x {sweeps})")
    step = SuperstepStats(superstep=0, active=int(len(deleted[0]) + len(inserted[0])),
                          direction="repair", edges_scanned=int(scanned),
                          messages_sent=0, fused=True)
    method = (f"updated ({pairs:,} deleted pairs, {len(inserted[0]):,} new edges; "
              f"{int(scanned):,} entries scanned)")
    return Result(values=core.astype(np.float64),
                  stats=changes.run_stats(spec.name, graph, kwargs, t0, setup, step, method),
                  graph=graph, order=core_maintenance.order_ranks(od, len(core)))
