r"""In-memory PageRank on small graphs by Jacobi, Chebyshev or BiCGSTAB steps on its linear
system (:mod:`graphsys.bsp.kernels_pagerank_krylov`), finished by power iterations.

Jacobi steps cost and contract what a power iteration does; once a step contracts the
residual by less than Chebyshev's rate (:func:`switch_ratio`: 0.557 at damping 0.85) they
give way to Chebyshev semi-iteration on an undirected edge set or to BiCGSTAB on a directed
one, which take about a third of the power iteration's products on slowly mixing graphs.
:func:`solve_krylov` runs them where they apply (unweighted, in memory, CPU, from
:data:`KRYLOV_MIN_NODES` vertices up to the size from which the power iteration stores a
push index), pulling over ELL slots, and stops once the linear residual bounds the
PageRank residual of the normalised iterate below ``tol * KRYLOV_TARGET``.

The stopping rule stays the power iteration's: the normalised iterate starts the fused
power iteration (:func:`~graphsys.bsp.kernels_pagerank.pagerank_ell_step`), which runs
until its L1 change falls below ``tol``, so the ranks are within
:math:`\mathrm{tol}\,\alpha / (1 - \alpha)` of the fixed point in L1, as from the power
iteration alone. Every product counts against ``max_iters`` (a BiCGSTAB iteration's
superstep holds two, the first one three), the finishing power steps too.
"""

from __future__ import annotations

import math
import time
from types import SimpleNamespace

import numpy as np

from graphsys.bsp.kernels_pagerank import (
    ELL_SLOTS,
    bfs_order,
    ell_bytes,
    ell_layout,
    pagerank_ell_step,
    renumber,
)
from graphsys.bsp.kernels_pagerank_krylov import (
    bicgstab_iteration,
    chebyshev_step,
    chebyshev_weights,
    chunk_bounds,
    residual,
)
from graphsys.bsp.program import Solved
from graphsys.bsp.stats import SuperstepStats
from graphsys.device import host_array
from graphsys.kernels.arrays import read_only
from graphsys.storage.csr import check_build

#: float64 (N+1,) vectors a solve holds at its peak: the start, BiCGSTAB's ten, the
#: Jacobi/Chebyshev iterates and sent values beside them, the finishing power steps' and
#: the temporaries of their first values
KRYLOV_VECTORS = 18

#: Krylov solves graphs from this many vertices: below, a power iteration costs a few
#: microseconds and the solver's extra vector passes and reductions do not pay
KRYLOV_MIN_NODES = 4096


#: ... and when ``max_iters`` allows at least this many supersteps (a run capped at a few
#: iterations is a power iteration's by its caller's choice)
KRYLOV_MIN_ITERS = 8

#: The solver stops when its bound on the PageRank residual of the normalised iterate is
#: below ``tol`` times this, so the finishing power step's change (at most that residual)
#: is below ``tol`` with room for the drift of the solver's recursive residual
KRYLOV_TARGET = 0.5


def applies(prog, ctx, max_iters: int, max_bytes: int) -> bool:
    """Whether :func:`solve_krylov` runs ``prog`` (a :class:`~graphsys.bsp.algorithms.
    pagerank.PageRank`): unweighted, float32 sends not asked for, one process, a graph of
    :data:`KRYLOV_MIN_NODES` vertices or more whose float64 rank vector fits ``max_bytes``,
    and ``max_iters`` at least :data:`KRYLOV_MIN_ITERS`."""
    n = ctx.num_nodes
    return (not prog.weighted and prog.width is None and not prog.float32_asked
            and ctx.num_local == n and KRYLOV_MIN_NODES <= n and 8 * n <= max_bytes
            and max_iters >= KRYLOV_MIN_ITERS)


def solve_krylov(prog, ctx, edges, state, max_iters: int, *, max_bytes: int,
                 locality_degree: int) -> Solved | None:
    """Run PageRank ``prog`` by Jacobi, then Chebyshev (an undirected edge set) or BiCGSTAB
    steps, then power iterations until the L1 change is below ``prog.tol`` (see the module
    docstring); None where :func:`applies` says no (the caller's layouts run): the caller
    passes as ``max_bytes`` the size from which it stores a push index (one core's L2), so
    the two do not overlap. Every product pulls over ELL slots
    (:func:`~graphsys.bsp.kernels_pagerank.ell_layout`), of the CSC renumbered in
    breadth-first order on a graph with fewer than ``locality_degree`` in-edges per
    vertex, as the power iteration's layouts do."""
    if not applies(prog, ctx, max_iters, max_bytes):
        return None
    t0 = time.perf_counter()
    n, a = ctx.num_nodes, prog.damping
    indptr, idx, _ = edges.adjacency("csc")
    dense = indptr[-1] - indptr[0] >= locality_degree * n  # a stored push index then serves
    check_layout(ctx, "the ELL layout and vectors of PageRank's linear solve",
                 ell_bytes(indptr, idx.dtype, not dense) + KRYLOV_VECTORS * 8 * (n + 1),
                 index=bool(dense))
    deg = host_array(ctx.degree("out"))
    symmetric = (ctx.graph.edge_set(ctx.edge_set).undirected
                 and np.array_equal(np.diff(indptr), deg))
    inv = host_array(state["inv_deg"])
    tele = host_array(state["p"]) if state["p"] is not None else np.zeros(0)
    # the start: the ranks scaled as the fixed point's z is (exact when they are it)
    z0 = host_array(state["rank"]) / (1.0 - a + a * float(state["dangling"]))
    order = None  # new id -> engine id, when renumbered
    if not dense:
        order = bfs_order(indptr, idx)
        inv, z0 = inv[order], z0[order]
        tele = tele[order] if len(tele) else tele
        indptr, idx = read_only(*renumber(indptr, idx, order))  # as the adjacency is
    work = _Work(n, *ell_layout(indptr, idx))
    setup = time.perf_counter() - t0
    z, solver, broke = _solve(work, inv, tele, z0, a, prog.tol * KRYLOV_TARGET,
                              max_iters - 1, symmetric)
    total = z.sum()
    if not (np.all(np.isfinite(z)) and total > 0.0):
        z, total, broke = z0, z0.sum(), True  # the power steps start where the solver did
    x = z / total
    solver_steps = len(work.steps)
    converged, dangling = _finish(prog, work, inv, tele, x, max_iters)
    host_array(state["rank"])[slice(None) if order is None else order] = x
    np.multiply(host_array(state["rank"]), host_array(state["inv_deg"]),
                out=host_array(state["send"]))
    state["dangling"] = dangling
    powers = len(work.steps) - solver_steps
    detail = (f"{solver}{', bfs order' if order is not None else ''}, ell, {powers} power "
              f"step{'s' if powers != 1 else ''}{' after a breakdown' if broke else ''}")
    return Solved(f"fused-pagerank ({detail})", work.steps, 0 if converged else n, setup)


def check_layout(ctx, what: str, need: int, *, index: bool) -> None:
    """Refuse in one line (:func:`~graphsys.storage.csr.check_build`) the in-RAM build of
    ``what``, a PageRank layout of ``need`` bytes, over the RAM available now (where the
    adjacency it is built from lies already); ``index``: a stored ``push`` index would be
    pushed over instead (no layout built), and the refusal names the command that stores
    it, else the run out of core."""
    check_build(ctx.graph, ctx.edge_set, what, need, None,
                ("push",) if index else None,
                instead="run it out of core (mode out-of-core) or on a machine with more RAM")


class _Work:
    """The pulled ELL layout (``slots, over_ptr, overflow``), its row chunks, reduction
    scratch and the superstep records of one solve; :meth:`record` adds a superstep of
    some products, :attr:`products` counts them."""

    def __init__(self, n: int, *layout):
        self.n, self.layout = n, layout
        slots, over_ptr, overflow = layout
        self.bounds = chunk_bounds(over_ptr)
        self.m = int(np.count_nonzero(slots < n)) + len(overflow)
        self.receivers = int(np.count_nonzero(slots[::ELL_SLOTS] < n))
        self.part = np.zeros((len(self.bounds) - 1, 4))
        self.steps: list[SuperstepStats] = []
        self.products = 0
        self.t0 = time.perf_counter()

    def record(self, products: int, direction: str) -> None:
        """A superstep of ``products`` pulls, timed since the last record (or the start)."""
        ss = SuperstepStats(superstep=len(self.steps), active=self.n, direction=direction,
                            edges_scanned=self.m * products,
                            messages_sent=self.m * products,
                            messages_combined=self.receivers * products, fused=True)
        now = time.perf_counter()
        ss.seconds["edges"] = now - self.t0
        self.t0 = now
        self.steps.append(ss)
        self.products += products

    def vector(self, values=None) -> np.ndarray:
        """A float64 gathered vector (N+1,: the last the padding source's 0), zero or
        ``values`` (N,) in front."""
        out = np.zeros(self.n + 1)
        if values is not None:
            out[:self.n] = values
        return out


def _finish(prog, work: _Work, inv, tele, x, max_iters: int):
    """Power iterations from ``x`` (float64 (N,) summing to 1; updated in place) over
    ``work``'s layout until the L1 change is below ``prog.tol`` or ``max_iters`` products
    ran in all (at least one runs). Returns (converged, dangling mass)."""
    a, n = prog.damping, x.shape[0]
    send, new_send = work.vector(x * inv), work.vector()
    dangling = float(x[inv == 0.0].sum())
    work.t0 = time.perf_counter()
    while True:
        scale = a * dangling + (1.0 - a)
        delta, dangling = pagerank_ell_step(*work.layout, send, new_send, x, inv, tele, a,
                                            scale / n, scale)
        send, new_send = new_send, send
        work.record(1, "pull")
        if delta < prog.tol:
            return True, dangling
        if work.products >= max_iters:
            return False, dangling


def switch_ratio(damping: float) -> float:
    """The residual contraction per product under which Jacobi steps go on: Chebyshev's
    asymptotic rate :math:`\\alpha / (1 + \\sqrt{1 - \\alpha^2})` (0.557 at 0.85)."""
    return damping / (1.0 + math.sqrt(1.0 - damping * damping))


def _solve(work: _Work, inv, tele, z0, a, target, budget: int, symmetric: bool):
    """Jacobi steps on :math:`z = \\alpha A z + p` (:func:`~graphsys.bsp.
    kernels_pagerank_krylov.chebyshev_step` with weight 1) while they contract the L1
    residual by less than :func:`switch_ratio` per step (graphs with a spectral gap), then
    Chebyshev steps (``symmetric``) or BiCGSTAB from the current iterate; at most
    ``budget`` products. Stops at the first iterate whose residual bound is below
    ``target``. Returns (that iterate or the last, the solver's name, whether it broke
    down)."""
    n = work.n
    cur, prev = z0.copy(), z0.copy()  # the first weight is 1: prev is overwritten
    send, new_send = work.vector(cur * inv), work.vector()
    weights = chebyshev_weights(a, budget + 1)
    k, last, ratio = 0, math.inf, switch_ratio(a)  # k: Chebyshev steps so far
    while work.products < budget:
        l1, sr, sig = chebyshev_step(work.bounds, *work.layout, send, new_send, cur, prev,
                                     inv, tele, work.part, a, 1.0 / n, weights[k])
        work.record(1, "chebyshev" if k else "jacobi")
        if sig > 0.0 and (l1 + abs(sr)) / sig < target:
            break  # cur: the iterate the bound is for
        cur, prev = prev, cur
        send, new_send = new_send, send
        if k:
            k += 1
        elif l1 > ratio * last:  # the step just taken was Chebyshev's first from cur
            if not symmetric:
                z, broke = _bicgstab(work, inv, tele, cur, a, target, budget)
                return z, "BiCGSTAB", broke
            k = 1
        last = l1
    return cur, "chebyshev" if k else "jacobi", False


def _bicgstab(work: _Work, inv, tele, z0, a, target, budget):
    """BiCGSTAB on :math:`(I - \\alpha A) z = p` from ``z0``, until ``work`` counts
    ``budget`` products (two an iteration, one more for the first residual). Returns (z,
    whether it broke down)."""
    n = work.n
    p_vec = tele if len(tele) else np.full(n, 1.0 / n)
    z, r, gathered = z0.copy(), np.empty(n), work.vector()
    rho = residual(work.bounds, *work.layout, inv, p_vec, z, r, gathered, work.part, a)
    r0, p = r.copy(), r.copy()
    gp, gs = work.vector(inv * p), work.vector()
    v, s, t = np.empty(n), np.empty(n), np.empty(n)
    first = 1  # the initial residual's product rides with the first iteration's record
    while work.products + first + 2 <= budget and rho != 0.0:
        rho, l1, sr, sig, status = bicgstab_iteration(
            work.bounds, *work.layout, inv, z, r, r0, p, gp, v, s, gs, t, work.part, a, rho)
        work.record(2 + first, "bicgstab")
        first = 0
        if status == 1:
            return z, True
        if sig > 0.0 and (l1 + abs(sr)) / sig < target:
            break
        if status == 2:
            return z, True
    return z, False


def warm_kernels() -> None:
    """Compile (or load from the cache) the kernels :func:`solve_krylov` calls, on a small
    ring lattice's CSC as the engine hands it (read-only views, mapped or built alike), for
    the dense and the sparse (breadth-first renumbered) layouts:
    :mod:`graphsys.bsp.warmup`'s generated graphs are under :data:`KRYLOV_MIN_NODES`
    vertices."""
    n = 64
    ring = np.arange(n)
    indptr = np.arange(0, 5 * n + 1, 5, dtype=np.int64)
    idx = ((ring[:, None] + np.array([-2, -1, 0, 1, 2])) % n).astype(np.int32).ravel()
    inv = np.full(n, 0.2)
    ip, ix = read_only(indptr, idx)
    order = bfs_order(ip, ix)
    for layout in (ell_layout(ip, ix), ell_layout(*read_only(*renumber(ip, ix, order)))):
        work = _Work(n, *layout)
        for tele in (np.zeros(0), np.full(n, 1.0 / n)):
            _solve(work, inv, tele, np.full(n, 1.0), 0.85, 1e-12, 3, True)
            _bicgstab(work, inv, tele, np.full(n, 1.0), 0.85, 1e-12, work.products + 3)
            _finish(SimpleNamespace(damping=0.85, tol=1.0), work, inv, tele,
                    np.full(n, 1.0 / n), work.products + 1)
