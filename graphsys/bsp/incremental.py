"""Runs that start from a stored result of the same algorithm on an earlier version of the
graph (``init=PREV``, ``graphsys run --init``); the guide is docs/growing.md.

PREV's provenance (the algorithm, its source and parameters, each edge set it read with the
digest of its buckets, whether it converged) must show it ran on *the edges the run reads
less new edge sets*; anything else is refused in one line saying what differs. Nodes are
matched by original id; nodes PREV does not list are new. WCC, BFS and SSSP repair PREV,
which is right only from a fixed point, so they refuse an unconverged PREV or one that does
not say; PageRank iterates to ``tol`` from any start. After change sets
(:mod:`graphsys.storage.changes`) WCC, BFS and SSSP repair through
:mod:`graphsys.bsp.incremental_changes`, PageRank through
:mod:`graphsys.bsp.incremental_pagerank`, k-core through
:mod:`graphsys.bsp.incremental_cores`; the other algorithms refuse such a PREV.

* **PageRank** (:func:`pagerank_warm_start`): the power iteration from PREV's ranks, to the
  same stopping rule as a run from scratch.
* **WCC** (:func:`components_from`): each old component becomes one union-find tree rooted
  at its smallest id, and only the new edges are unioned (the larger root under the
  smaller), so labels are a run from scratch's; the old edges are not read.
* **BFS, SSSP** (:func:`distances_from`): an added edge can only lower distances, and only
  through it (KickStarter's observation [1]_): the targets it lowers are relaxed from.

Examples
--------
>>> import tempfile, pathlib, graphsys
>>> from graphsys import bsp
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> g = graphsys.from_numpy([1, 2, 4], [2, 3, 5], d / "g")
>>> before = bsp.wcc(g).to_table()            # components {1, 2, 3} and {4, 5}
>>> _ = (d / "day2.tsv").write_text("3\\t4\\n5\\t6\\n")
>>> _ = graphsys.ingest(d / "day2.tsv", d / "g", append=True, edge_set="day2")
>>> g = graphsys.open_graph(d / "g")         # the default view reads both days
>>> after = bsp.wcc(g, init=before)          # union-find over the two new edges
>>> after.stats.method, len(set(after.values))
('union-find over the new edges', 1)
>>> bool((after.values == bsp.wcc(g).values).all())
True

References
----------
.. [1] K. Vora, R. Gupta and G. Xu, "KickStarter: Fast and Accurate Computations on
   Streaming Graphs via Trimmed Approximations", ASPLOS 2017.
"""

from __future__ import annotations

import time

import numpy as np

from graphsys.bsp import incremental_changes as changes
from graphsys.bsp.engine import Result
from graphsys.bsp.engine import run as run_program
from graphsys.bsp.program import VertexProgram, lower_to_min
from graphsys.bsp.stats import SuperstepStats
from graphsys.errors import FormatError, GraphsysError
from graphsys.execution import Execution
from graphsys.kernels.components import forest_labels, labelled_forest, union_edges
from graphsys.storage.previous import (  # noqa: F401 (re-exported: read by bsp's front-ends)
    Previous,
    provenance,
    read_previous,
    result_provenance,
    same_run,
    starts_from,
)


def _new_edges(graph, previous: Previous):
    """Record batches ``(src, dst, rel, weight)`` of the edge sets PREV did not read."""
    if previous.new_edge_sets:
        yield from graph.iter_edges(list(previous.new_edge_sets))


# -- PageRank -----------------------------------------------------------------------------------
def pagerank_warm_start(spec, graph, previous: Previous, *, source=None, params=None,
                        max_iters: int | None = None, start: np.ndarray | None = None,
                        **kwargs) -> Result:
    """PageRank (or personalized PageRank) started from ``previous``'s ranks, new nodes at
    the smallest old rank, scaled to sum 1 (or from ``start``, float64 (N,) summing to 1,
    derived by the caller from them); to ``previous``'s tolerance or a looser one the
    program expects at most ``previous``'s superstep count
    (:attr:`~graphsys.bsp.program.VertexProgram.expected_supersteps`); the run is otherwise
    the cold one."""
    if start is None:
        start = previous.values.copy()
        old = start[previous.known]
        if not np.all(np.isfinite(old)) or (old < 0).any():
            raise FormatError(f"{previous.source}: ranks must be finite and non-negative")
        # a node with no in-edge holds only its share of the teleport and dangling mass:
        # the smallest old rank, the value a new node (reached by a few new edges) is
        # nearest to
        start[~previous.known] = old.min() if len(old) else 1.0 / graph.num_nodes()
        if start.sum() <= 0:
            start[:] = 1.0
    program = spec.make(graph, source=source, edge_set=kwargs.get("edge_set"),
                        **(params or {}))
    program.initial = start / start.sum()
    # to the previous run's tolerance or a looser one it ends within the previous run's
    # count (from nearer the fixed point): mode "auto" streams the edges where building the
    # adjacency would cost more than that many supersteps save
    # (graphsys.bsp.engine.choose_mode); to a tighter one the count says nothing
    tol = getattr(program, "tol", None)
    if previous.tol is not None and tol is not None and tol >= previous.tol \
            and previous.converged:
        program.expected_supersteps = previous.supersteps
    result = run_program(graph, program, max_iters=spec.max_iters(graph, max_iters), **kwargs)
    result.stats.method += ", warm start"
    result.stats.start = "warm"
    if (kwargs.get("execution") or Execution()).mode == "auto" \
            and result.stats.mode == "out-of-core":
        result.stats.method += (f", streamed (the previous run took {previous.supersteps} "
                                f"supersteps)")
    return result


# -- WCC ---------------------------------------------------------------------------------------
def components_from(spec, graph, previous: Previous, *, source=None, params=None,
                    max_iters: int | None = None, edge_set=None, **kwargs) -> Result:
    """Weakly connected components from ``previous``'s labels: after appends, the new edges
    only (module docstring); after deletions, by :mod:`graphsys.bsp.incremental_changes`.
    In memory on the CPU whatever ``mode`` and ``device`` say, except a run from scratch."""
    previous.check_fixed_point(spec.name)
    t0 = time.perf_counter()
    n = graph.num_nodes()
    old_ids = np.flatnonzero(previous.known)
    raw = previous.values[old_ids]
    labels = raw.astype(np.int64)
    if len(raw) and (not np.array_equal(labels, raw) or labels.min() < 0
                     or labels.max() >= len(raw)):
        raise FormatError(f"{previous.source}: component labels must be node numbers in "
                          f"0..{len(raw) - 1}")
    if previous.change_sets:
        kwargs["edge_set"] = edge_set
        change = changes.decide(graph, previous, kwargs)
        if not isinstance(change, str):
            change = changes.components_repaired(spec, graph, previous, labels, change,
                                                 kwargs)
        if isinstance(change, str):
            return changes.from_scratch(spec, graph, change, params=params,
                                        max_iters=max_iters, **kwargs)
        return change
    parent = np.arange(n, dtype=np.int64)
    labelled_forest(old_ids, labels, parent, np.full(len(raw), -1, np.int64))
    setup = time.perf_counter() - t0
    scanned = merged = 0
    for s, d, _, _ in _new_edges(graph, previous):
        merged += int(union_edges(parent, s.astype(np.int64, copy=False),
                                  d.astype(np.int64, copy=False)))
        scanned += len(s)
    label = forest_labels(parent)
    step = SuperstepStats(superstep=0, active=n, direction="union-find", edges_scanned=scanned,
                          messages_sent=scanned, messages_combined=merged, fused=True)
    return Result(values=label.astype(np.float64), graph=graph, stats=changes.run_stats(
        spec.name, graph, {"edge_set": edge_set}, t0, setup, step,
        "union-find over the new edges"))


# -- BFS, SSSP ----------------------------------------------------------------------------------
class Repair(VertexProgram):
    """A min-relaxation program (``base``: BFS, SSSP, a program declaring ``relax_state``)
    resumed from ``values`` float64 (N,) with the vertices ``seeds`` bool (N,) active: the
    same messages and updates, every target accepting (not only unreached ones), so the
    run lowers what the seeds can improve and stops at the fixed point."""

    def __init__(self, base: VertexProgram, values: np.ndarray, seeds: np.ndarray):
        self.base, self.values, self.seeds = base, values, seeds
        self.name = base.name
        self.message, self.combiner, self.direction = base.message, "min", base.direction
        self.uses_weights = base.uses_weights
        self.relax_state, self.relax_offset = base.relax_state, base.relax_offset

    def init(self, ctx):
        import torch

        value = torch.from_numpy(self.values[ctx.lo:ctx.hi].copy()).to(ctx.device)
        active = torch.from_numpy(self.seeds[ctx.lo:ctx.hi].copy()).to(ctx.device)
        return {self.relax_state: value}, active

    def send(self, ctx, state):
        return self.base.send(ctx, state)

    def update(self, ctx, state, combined, received):
        return lower_to_min(state, self.relax_state, combined, received)

    def result(self, ctx, state):
        return state[self.relax_state]


def distances_from(spec, graph, previous: Previous, *, source=None, params=None,
                   max_iters: int | None = None, **kwargs) -> Result:
    """BFS levels or SSSP distances repaired from ``previous``'s: on one CPU in memory by
    :mod:`graphsys.bsp.incremental_changes`; elsewhere, after appends only, by lowering the
    targets the new edges improve and relaxing from them (module docstring); from scratch
    after a deletion or update there, and where more changed than a repair pays for."""
    previous.check_fixed_point(spec.name)
    base = spec.make(graph, source=source, edge_set=kwargs.get("edge_set"), **(params or {}))
    if base.relax_state is None or base.direction != "out":
        raise GraphsysError(f"{spec.name}: distances are repaired for min-relaxation "
                            f"programs along out-edges")
    changes.check_values(previous, "distances")
    values = previous.values.copy()
    values[~previous.known] = np.inf
    change = changes.decide(graph, previous, kwargs)
    if not isinstance(change, str):
        change = changes.distances_repaired(spec, graph, previous, base, values, change,
                                            kwargs)
        if not isinstance(change, str):
            return change
    if previous.change_sets or isinstance(change, changes.Costly):
        return changes.from_scratch(spec, graph, change, source=source, params=params,
                                    max_iters=max_iters, **kwargs)
    seeds = np.zeros(len(values), np.bool_)
    add_weight = base.message == "add_weight"
    for s, d, _, w in _new_edges(graph, previous):
        step = base.relax_offset + (w.astype(np.float64) if add_weight and w is not None
                                    else (1.0 if add_weight else 0.0))
        cand = values[s] + step
        lower = cand < values[d]
        if lower.any():
            np.minimum.at(values, d[lower], cand[lower])
            seeds[d[lower]] = True
    if kwargs.get("schedule") == "auto":
        kwargs["schedule"] = "sync"
    result = run_program(graph, Repair(base, values, seeds),
                         max_iters=spec.max_iters(graph, max_iters), **kwargs)
    result.stats.method += ", repaired from the new edges"
    result.stats.start = "repair"
    return result
