"""WCC, BFS and SSSP after edges were deleted, re-weighted and appended, from the previous
result and the changed edges (:mod:`graphsys.kernels.repair`), reading only the part of the
graph the change reaches; the guide is docs/growing.md.

The graph after the change is read as the adjacency of the edge sets the previous result
read (their stored CSR/CSC index, mapped, where one was built; else built from their
buckets) with the deleted pairs skipped and the re-weighted ones given their new weight,
plus the edges appended since. BFS and SSSP on one CPU in memory take this path after a
pure append too.

* **WCC**: only an old component that lost an edge can split; searches grow from the ends
  of its deleted edges, merge where they meet and stop once at most one still grows
  (:func:`graphsys.kernels.repair.wcc_race`); the appended edges are then unioned.
* **BFS, SSSP**: the nodes whose distance came through a deleted or re-weighted edge are
  invalidated, take the best distance their valid in-neighbours offer, and a
  Dijkstra-ordered relaxation from them and from the sources of new and re-weighted edges
  reaches the fixed point (KickStarter's trimming;
  :func:`graphsys.kernels.repair.distance_repair`).

A run starts from scratch instead (``result.stats.start == "scratch"``, a repair has
``"repair"``; ``result.stats.method`` says why) where the changed pairs and new edges are
more than :data:`REPAIR_MAX_FRACTION` of the edges read, on another device, mode or
backend, on a time view, where a change set does not change every edge set the previous
result read alike, or where the repair scans more than :data:`REPAIR_MAX_SWEEPS` times the
edges read. An edge re-added after its deletion is read as an appended one
(``Change.readded`` of :func:`~graphsys.storage.previous.read_change`). The answers are a
run from scratch's.

Examples
--------
>>> import tempfile, pathlib, numpy as np, graphsys
>>> from graphsys import bsp
>>> from graphsys.storage.changes import delete_edges
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> g = graphsys.from_numpy(np.arange(100), np.arange(1, 101), d / "g")   # a path
>>> before = {"wcc": bsp.wcc(g).to_table(), "bfs": bsp.bfs(g, 0).to_table()}
>>> _ = delete_edges(d / "g", [60], [61])                                # cut it in two
>>> g = graphsys.open_graph(d / "g")
>>> after = bsp.wcc(g, init=before["wcc"])
>>> after.stats.start, after.stats.method
('repair', 'repaired (1 deleted pairs, 2 ends searched, 0 new edges unioned)')
>>> bool((after.values == bsp.wcc(g).values).all()), len(set(after.values))
(True, 2)
>>> levels = bsp.bfs(g, 0, init=before["bfs"])      # 40 nodes no longer reached
>>> levels.stats.method
'repaired (1 deleted pairs, 0 re-weighted, 0 new edges; 40 invalidated, 0 relaxed)'
>>> levels.value(61), bool((levels.values == bsp.bfs(g, 0).values).all())
(inf, True)
"""

from __future__ import annotations

import contextlib
import time

import numpy as np

from graphsys.bsp.engine import Result
from graphsys.bsp.engine import run as run_program
from graphsys.bsp.stats import RunStats, SuperstepStats
from graphsys.errors import FormatError, GraphsysError
from graphsys.execution import Execution
from graphsys.kernels import repair
from graphsys.kernels.arrays import flags, old_adjacency, read_only
from graphsys.kernels.components import forest_labels, labelled_forest, union_edges
from graphsys.storage.previous import (  # noqa: F401 (read_edges_as_stored re-exported)
    REPAIR_MAX_FRACTION,
    Change,
    read_change,
    read_edges_as_stored,
)
from graphsys.views.rows import from_pairs

#: A repair that scans more than this many times both ends of every edge read (a search
#: along out- and in-edges sees each edge from both ends) stops and runs from scratch
REPAIR_MAX_SWEEPS = 1


class Costly(str):
    """Why a repair does not pay (more changed, or it reached too far): a run from scratch
    answers, where another reason leaves an append's start to the engine."""


def repair_applies(kwargs: dict, what: str = "a repair") -> str | None:
    """Why ``what`` does not apply to a run of these engine options (their ``execution``;
    None: it does)."""
    ex = kwargs.get("execution") or Execution()
    if str(ex.device) != "cpu" or ex.distributed:
        return f"{what} runs on one CPU"
    if ex.mode not in ("auto", "memory") or ex.backend not in ("auto", "numba"):
        return f"{what} runs in memory with numba"
    return None


def decide(graph, previous, kwargs) -> Change | str:
    """The change to repair from, or why the run starts from scratch (module docstring)."""
    why = repair_applies(kwargs)
    if why is not None:
        return why
    change = read_change(graph, previous, kwargs.get("edge_set"))
    if isinstance(change, str):
        return change
    read = max(graph.edge_set(kwargs.get("edge_set")).num_edges, 1)
    share = (len(change.src) + change.pairs) / read
    if share > REPAIR_MAX_FRACTION:
        return Costly(f"changed edges {share:.2%} of those read, above the repair's "
                      f"{REPAIR_MAX_FRACTION:.0%}")
    return change


def from_scratch(spec, graph, why: str, *, source=None, params=None, max_iters=None,
                 **kwargs) -> Result:
    """The run from scratch that replaces a repair, saying why."""
    program = spec.make(graph, source=source, edge_set=kwargs.get("edge_set"),
                        **(params or {}))
    result = run_program(graph, program, max_iters=spec.max_iters(graph, max_iters), **kwargs)
    result.stats.method += f" (from scratch: {why})"
    result.stats.start = "scratch"
    return result


def run_stats(name, graph, kwargs, t0, setup, step, method, **more) -> RunStats:
    """The stats of a run from a previous result in one in-memory CPU pass (``step``),
    started at ``t0`` with ``setup`` seconds before its pass; ``start`` "repair" unless
    ``more`` says otherwise."""
    step.seconds["edges"] = time.perf_counter() - t0 - setup
    return RunStats(**{"start": "repair", **more}, algorithm=name, mode="memory", device="cpu",
                    backend="numba", world_size=1, num_nodes=graph.num_nodes(),
                    num_edges=graph.edge_set(kwargs.get("edge_set")).num_edges,
                    setup_seconds=setup, seconds=time.perf_counter() - t0, converged=True,
                    method=method, supersteps=[step])


def components_repaired(spec, graph, previous, labels, change: Change, kwargs
                        ) -> Result | str:
    """WCC after ``change`` from the old ``labels`` int64 (one per listed node, each below
    their count); a string saying why not when the search reaches too far."""
    t0 = time.perf_counter()
    n = graph.num_nodes()
    known = np.flatnonzero(previous.known)
    comp = np.full(n, -1, np.int64)
    comp[known] = labels
    u, v = change.changed_deleted // n, change.changed_deleted % n
    same = (u != v) & (comp[u] >= 0) & (comp[u] == comp[v])  # only an old edge can split
    ends = np.zeros(n, np.bool_)
    ends[u[same]] = ends[v[same]] = True
    seeds = np.flatnonzero(ends)
    limit = _limit(graph, kwargs)
    work = 0
    key = comp
    if len(seeds):
        oip, oix, _, lay = old_adjacency(graph, change.old, "csr", False, False)
        iip, iix, _, _ = old_adjacency(graph, change.old, "csc", False, False)
        # the search reads the pairs there are now: a re-added edge's pair is one
        r = len(change.src) - change.readded
        gone = np.setdiff1d(change.deleted, change.src[r:] * n + change.dst[r:]) \
            if change.readded else change.deleted
        dout, din = flags(n, gone)
        setup = time.perf_counter() - t0
        keys = read_only(gone, np.sort(gone % n * n + gone // n))  # by source, by target
        with _ids_checked(graph, change):
            key, work, done = repair.wcc_race(n, oip, oix, iip, iix, lay, *keys, dout, din,
                                              comp, len(known), seeds, limit)
        if not done:
            return Costly(f"the split search scanned more than {REPAIR_MAX_SWEEPS}x both "
                          f"ends of the edges")
    else:
        setup = time.perf_counter() - t0
    parent = np.arange(n, dtype=np.int64)
    has = np.flatnonzero(key >= 0)  # ascending: each tree rooted at its smallest node
    labelled_forest(has, key[has], parent, np.full(int(key.max(initial=-1)) + 1, -1, np.int64))
    merged = int(union_edges(parent, change.src, change.dst))
    label = forest_labels(parent)
    step = SuperstepStats(superstep=0, active=len(seeds), direction="repair",
                          edges_scanned=int(work) + len(change.src),
                          messages_sent=len(change.src), messages_combined=merged, fused=True)
    method = (f"repaired ({len(change.changed_deleted):,} deleted pairs, {len(seeds):,} "
              f"ends searched, {len(change.src):,} new edges unioned)")
    return Result(values=label.astype(np.float64),
                  stats=run_stats(spec.name, graph, kwargs, t0, setup, step, method),
                  graph=graph)


@contextlib.contextmanager
def _ids_checked(graph, change: Change):
    """A repair kernel's check of the ids it reads (:func:`graphsys.kernels.repair._nbr`)
    as a one-line FormatError naming the edge set."""
    try:
        yield
    except IndexError:
        raise FormatError(f"{graph.location}: a stored index of edge set {change.old[0]!r} "
                          f"holds a neighbour id out of range (corrupted; run graphsys "
                          f"index again)") from None


def _limit(graph, kwargs) -> int:
    """The most edge ends a repair scans before it stops."""
    return 2 * REPAIR_MAX_SWEEPS * graph.edge_set(kwargs.get("edge_set")).num_edges


def distances_repaired(spec, graph, previous, base, values, change: Change, kwargs
                       ) -> Result | str:
    """BFS levels or SSSP distances after ``change`` from ``values`` float64 (N,) (inf at
    new nodes; a copy, changed in place); a string saying why not when the repair reaches
    too far."""
    t0 = time.perf_counter()
    n = graph.num_nodes()
    use_w = base.message == "add_weight"
    weighted = use_w and graph.edge_set(kwargs.get("edge_set")).has_weight
    for w in (change.weight if weighted else None, change.updated_weight if weighted
              else None):
        if w is not None and len(w) and (np.isnan(w).any() or (w < 0).any()):
            raise GraphsysError("sssp: a negative (or NaN) edge weight among the changed "
                                "edges")
    oip, oix, ow, lay = old_adjacency(graph, change.old, "csr", weighted, False)
    iip, iix, iw, _ = old_adjacency(graph, change.old, "csc", weighted, False)
    w_new = change.weight if weighted and change.weight is not None else np.zeros(
        0, np.float32)
    nip, nix, nw = from_pairs(n, change.src, change.dst, w_new)
    mip, mix, mw = from_pairs(n, change.dst, change.src, w_new)
    uk = change.updated if weighted else np.zeros(0, np.int64)
    uw = change.updated_weight if weighted else np.zeros(0, np.float32)
    dout, din = flags(n, change.deleted, uk)
    checks = _checks(change, n, values, base.relax_offset + (use_w and not weighted), weighted)
    es, ed, estep = _relaxed_edges(change, n, base, use_w, weighted)
    setup = time.perf_counter() - t0
    limit = _limit(graph, kwargs)
    with _ids_checked(graph, change):
        gone, relaxed, work, done = repair.distance_repair(
            n, values, float(base.relax_offset), use_w, oip, oix, ow, nip, nix, nw, iip, iix,
            iw, mip, mix, mw, lay, change.deleted, uk, uw, dout, din, checks, es, ed, estep,
            int(base.source), limit)
    if not done:
        return Costly(f"the repair scanned more than {REPAIR_MAX_SWEEPS}x both ends of the "
                      f"edges")
    step = SuperstepStats(superstep=0, active=int(relaxed), direction="repair",
                          edges_scanned=int(work), messages_sent=int(work),
                          messages_combined=int(gone), fused=True)
    method = (f"repaired ({len(change.changed_deleted):,} deleted pairs, "
              f"{len(change.changed_updated):,} re-weighted, {len(change.src):,} new "
              f"edges; {int(gone):,} invalidated, {int(relaxed):,} relaxed)")
    return Result(values=values, stats=run_stats(spec.name, graph, kwargs, t0, setup, step,
                                                 method, weighted=weighted), graph=graph)


def _checks(change: Change, n: int, d: np.ndarray, least: float, weighted: bool
            ) -> np.ndarray:
    """The targets of the deleted (and, ``weighted``, re-weighted) pairs whose distance the
    pair may have given: ``d[u] + least <= d[v]``, ``least`` the least step along an edge
    (weights are non-negative). The others keep an intact in-edge that gives it (``d`` was
    a fixed point); a node that loses one later is pushed again as a dependant."""
    keys = np.concatenate([change.changed_deleted, change.changed_updated]) if weighted \
        else change.changed_deleted
    u, v = keys // n, keys % n
    return np.unique(v[d[u] + least <= d[v]])


def _relaxed_edges(change: Change, n: int, base, use_w: bool, weighted: bool):
    """The edges a distance repair relaxes once: the appended ones and (weighted) the
    re-weighted pairs still there; (src, dst, step float64)."""
    w = change.weight.astype(np.float64) if weighted and change.weight is not None \
        else np.ones(len(change.src))
    step = base.relax_offset + (w if use_w else np.zeros(len(w)))
    src, dst = change.src, change.dst
    if weighted and len(change.changed_updated):
        keys = change.changed_updated[~np.isin(change.changed_updated, change.deleted)]
        uw = change.updated_weight[np.searchsorted(change.updated, keys)]
        src, dst = np.concatenate([src, keys // n]), np.concatenate([dst, keys % n])
        step = np.concatenate([step, base.relax_offset + uw.astype(np.float64)])
    return src, dst, np.asarray(step, np.float64)


def check_values(previous, what: str) -> None:
    """A one-line FormatError unless the previous distances are non-negative or inf."""
    old = previous.values[previous.known]
    if (np.isnan(old) | (old < 0)).any():
        raise FormatError(f"{previous.source}: {what} must be non-negative or inf")
