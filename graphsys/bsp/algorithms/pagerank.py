r"""PageRank and personalized PageRank as a vertex program (networkx's definition).

.. math::
    x^{(k+1)} = \alpha \Big(A^\top D^{-1} x^{(k)} + p \sum_{u:\,d_u=0} x^{(k)}_u\Big)
               + (1-\alpha)\, p

with :math:`p` uniform or the normalised personalization vector; dangling mass is spread
like the teleport (networkx's ``dangling=None``); multi-edges count with their
multiplicity. Weighted: :math:`A_{uv}` is the weight of ``u -> v`` and :math:`D` the
weighted out-degree; a vertex whose out-weights sum to 0 is dangling. Stops when
:math:`\|x^{(k+1)} - x^{(k)}\|_1 <` ``tol`` (networkx compares with ``N * tol``).

``sum_dtype="float32"``: the numba CPU kernels round the sent values :math:`x_u / d_u` to
float32 (relative error at most :math:`u = 2^{-24}` each). In memory targets sum them in
float64, so a pulled sum is within a relative :math:`u`; out of core a target of
in-degree :math:`k` sums in float32 over one target partition, within :math:`(k + 1)\,u`.
Ranks, update and L1 test stay float64.

``sum_dtype="auto"`` (the default): float32 sent values in memory, unweighted, with
``tol`` at least :data:`AUTO_FLOAT32_MIN_TOL`; float64 elsewhere. There the rounding
perturbs an iteration by at most :math:`\alpha u` in L1, moving the fixed point by at most
:math:`\alpha u / (1 - \alpha)`: at least 16 times below the
:math:`\mathrm{tol}\, \alpha / (1 - \alpha)` the stopping rule leaves. ``result.stats.method``
ends in ``float32 sends`` when they ran.
"""

from __future__ import annotations

import math
import os
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numba
import numpy as np

from graphsys.bsp.algorithms.common import (
    id_list,
    open_if_path,
    resolve_weighted,
    source_index,
    teleport_weights,
)
from graphsys.bsp.algorithms.pagerank_device import solve_on_device
from graphsys.bsp.algorithms.pagerank_krylov import check_layout, solve_krylov
from graphsys.bsp.algorithms.spec import AlgorithmSpec
from graphsys.bsp.docstrings import ENGINE_OPTIONS, cite, document_options, fill_doc
from graphsys.bsp.edges import DENSE_DIVISOR, cache_bytes
from graphsys.bsp.engine import Result, run
from graphsys.bsp.incremental_pagerank import pagerank_from
from graphsys.bsp.kernels import PARALLEL_MIN_ITEMS
from graphsys.bsp.kernels_pagerank import (
    bfs_order,
    ell_bytes,
    ell_layout,
    pagerank_ell_step,
    pagerank_push_step,
    pagerank_step,
    renumber,
    settle_vertex,
)
from graphsys.bsp.program import Solved, VertexProgram
from graphsys.bsp.stats import SuperstepStats
from graphsys.device import host_array
from graphsys.errors import GraphsysError, ParameterError, check_flag, check_real
from graphsys.kernels.arrays import read_only
from graphsys.memory import over_budget
from graphsys.storage.adjacency_index import build_command, build_index, warn_outdated_push
from graphsys.storage.lock import manifest_digest
from graphsys.storage.node_reads import internal_of
from graphsys.storage.push_layout import (
    degree_order,
    layout_bytes,
    min_blocks,
    push_layout,
    sums_length,
)

#: PageRank renumbers the vertices of graphs with fewer in-edges per vertex than this in
#: breadth-first order (in memory, CPU): on road networks and meshes a locality order puts
#: a target's sources in nearby cache lines (reverse Cuthill-McKee is the classic one; BFS
#: order is its cheap cousin); docs/benchmarks.md has the timings
LOCALITY_MAX_DEGREE = 4

#: PageRank pushes into destination blocks when its float64 sent values exceed this (one
#: core's L2): below it the pull's gathers hit L2 already, and the push saves too little
#: per iteration to pay for building its layout
PUSH_MIN_BYTES = cache_bytes(level=2, default=1 << 20)
#: ... and while they fit in half the last-level cache: a push sweeps them once per
#: destination block, which costs more than the pull's gathers once they spill out of it
PUSH_MAX_BYTES = cache_bytes() // 2

#: The fused loop stores the graph's ``push`` index (:func:`store_push_index`) when it has
#: none and its float64 sent values exceed this (and fit :data:`PUSH_MAX_BYTES`), with at
#: least :data:`LOCALITY_MAX_DEGREE` edges per vertex: one core's L2, the floor under which
#: the pull's gathers already hit L2 (:data:`PUSH_MIN_BYTES`' value, kept apart from it)
PUSH_STORE_MIN_BYTES = PUSH_MIN_BYTES

#: ``sum_dtype="auto"``: the fused in-memory loop sends float32 values when ``tol`` is at
#: least this (the rounding then stays 16 times below the stopping rule's own error; see
#: the module docstring)
AUTO_FLOAT32_MIN_TOL = 1e-6

#: The fused loop pulls this many iterations before it forecasts whether to switch to the
#: push layout (two L1 changes after the first give the decay rate)
PUSH_FORECAST_AFTER = 3
#: The push layout is built when at least this many iterations are forecast to be left:
#: its build costs about as much per edge as this many pushed iterations save over pulled
#: ones. A count of iterations, not a timing, so the same call picks the same layout (and
#: rounds the same) every time
PUSH_BREAK_EVEN_ITERATIONS = 60


class PageRank(VertexProgram):
    """Pull-sum of ``rank / out_degree``; all vertices active; halts on the L1 change.

    Each update also prepares the next superstep: the values to send (``rank / deg``) and
    the local dangling mass (the ``dangling`` aggregator), so a superstep reads every vertex
    array once. With the numba backend that update is one parallel pass
    (:func:`_update_pass`); on the torch backend (any device) it is a few tensor ops.

    Parameters
    ----------
    damping : float, default 0.85
        :math:`\alpha` in (0, 1).
    tol : float, default 1e-6
        L1 change threshold.
    personalization : numpy.ndarray, optional
        float64 (N,) non-negative teleport weights by internal id; None: uniform.
    sum_dtype : {"auto", "float64", "float32"}, default "auto"
        The dtype of the sent values and sums (the module docstring has the rule and the
        error bound); float32 for unweighted runs only.
    weighted : bool, default False
        Whether the walk follows edges in proportion to their weights (messages
        ``rank / weighted out-degree`` multiplied by the edge weight).
    store_index : bool, default True
        Whether the fused in-memory loop may store the graph's ``push`` index where it has
        none and it pays (:meth:`solve_in_memory`); False leaves the graph directory as it
        is.

    Examples
    --------
    What :func:`pagerank` runs:

    >>> import tempfile, numpy as np, graphsys
    >>> from graphsys import bsp
    >>> src, dst = np.array([1, 2, 3, 3, 4]), np.array([2, 3, 1, 4, 1])
    >>> g = graphsys.from_numpy(src, dst, tempfile.mkdtemp() + "/g")
    >>> result = bsp.run(g, bsp.PageRank(tol=1e-10))
    >>> [(node, round(rank, 3)) for node, rank in result.top(3)], result.stats.converged
    ([(1, 0.287), (2, 0.281), (3, 0.277)], True)
    """

    name = "pagerank"
    message, combiner, direction = "copy", "sum", "out"
    #: float64 (N,) ranks summing to 1 the iteration starts from (a warm start,
    #: :mod:`graphsys.bsp.incremental`); None: the uniform vector
    initial: np.ndarray | None = None

    def __init__(self, damping: float = 0.85, tol: float = 1e-6,
                 personalization: np.ndarray | None = None, sum_dtype: str = "auto",
                 weighted: bool = False, store_index: bool = True):
        damping = check_real("damping", damping, low=0, high=1, low_open=True, high_open=True)
        tol = check_real("tol", tol, low=0, low_open=True)
        #: whether the fused in-memory loop sends float32 values
        self.fused_float32 = sum_dtype == "float32"
        #: whether float32 sent values were asked for (the Krylov path sends float64)
        self.float32_asked = self.fused_float32
        if sum_dtype == "auto":  # the engine's passes (and out of core) stay float64
            self.fused_float32 = not weighted and tol >= AUTO_FLOAT32_MIN_TOL
            sum_dtype = "float64"
        self.damping, self.tol, self.personalization = damping, tol, personalization
        #: the teleport vector scaled to a maximum of 1 (its sum cannot overflow)
        self._teleport = (None if personalization is None else
                          teleport_weights(personalization, "personalization"))
        self.sum_dtype, self.weighted = sum_dtype, bool(weighted)
        self.store_index = check_flag("store_index", store_index)
        if self.weighted:  # x_u / weighted degree, times the edge weight on each edge
            self.message, self.uses_weights = "mul_weight", True
            if sum_dtype == "float32":
                raise ParameterError("sum_dtype", f"{sum_dtype} sums apply to unweighted "
                                                  f"runs; a weighted one sums in float64")
        self.check()  # a bad sum_dtype fails here, not at the first superstep

    host_state = True  # init (NumPy where ctx.host), solve_in_memory and result
    host_supersteps = True  # aggregate, send, update and halt: NumPy on the numba backend

    def init(self, ctx):
        n = ctx.num_nodes
        if self.personalization is None:
            p = None  # uniform: the teleport term is a scalar
        else:
            pv = self._teleport
            if pv.shape != (n,):
                raise GraphsysError(f"personalization has {len(pv)} weights for {n} nodes "
                                    f"(one per internal id)")
            p = pv[ctx.lo:ctx.hi] / pv.sum()
        deg = ctx.degree("out-weight" if self.weighted else "out")
        if ctx.host:
            return self._host_init(ctx, p, deg)
        import torch

        if p is not None:
            p = torch.as_tensor(p).to(ctx.device)
        # 1/deg, 0 for dangling vertices: send() is then one multiply
        inv_deg = torch.where(deg > 0, 1.0 / torch.where(deg > 0, deg, 1.0), 0.0)
        rank = ctx.full(1.0 / n) if self.initial is None else torch.as_tensor(
            np.array(self.initial[ctx.lo:ctx.hi], np.float64)).to(ctx.device)
        everyone = torch.ones(ctx.num_local, dtype=torch.bool, device=ctx.device)
        # 1.0 at a dangling vertex: its mass is then one dot product, where selecting the
        # dangling ranks by a mask would wait for the device to count them every superstep
        is_dangling = (deg == 0).to(torch.float64)
        state = {"rank": rank, "p": p, "inv_deg": inv_deg, "send": rank * inv_deg,
                 # local dangling mass of ``rank``: the aggregator of the next superstep
                 "dangling": torch.dot(rank, is_dangling), "is_dangling": is_dangling,
                 "everyone": everyone}
        return state, everyone

    def _host_init(self, ctx, p: np.ndarray | None, deg: np.ndarray) -> tuple[dict, np.ndarray]:
        """:meth:`init` of a NumPy state (:attr:`Context.host`): the same arrays."""
        inv_deg = np.divide(1.0, deg, out=np.zeros_like(deg), where=deg > 0)
        rank = ctx.full(1.0 / ctx.num_nodes) if self.initial is None else np.array(
            self.initial[ctx.lo:ctx.hi], np.float64)
        everyone = np.ones(ctx.num_local, np.bool_)
        state = {"rank": rank, "p": p, "inv_deg": inv_deg, "send": rank * inv_deg,
                 "dangling": rank[deg == 0].sum(), "everyone": everyone}
        return state, everyone

    def aggregate(self, ctx, state):
        return {"dangling": (state["dangling"], "sum")}

    def send(self, ctx, state):
        return state["send"]

    def update(self, ctx, state, combined, received):
        a, p = self.damping, state["p"]
        scale = a * ctx.aggregates["dangling"] + (1.0 - a)  # teleport + dangling mass
        if ctx.backend == "numba":
            delta, dangling = _update_pass(
                host_array(combined), host_array(state["rank"]), host_array(state["inv_deg"]),
                host_array(p) if p is not None else np.zeros(0), a, scale / ctx.num_nodes,
                scale, host_array(state["send"]))
        else:
            import torch

            new = combined.mul_(a)
            if p is None:
                new.add_(scale / ctx.num_nodes)
            else:
                new.add_(p, alpha=scale)
            delta = (new - state["rank"]).abs_().sum()
            dangling = torch.dot(new, state["is_dangling"])
            torch.mul(new, state["inv_deg"], out=state["send"])
            state["rank"] = new
        state["dangling"] = dangling
        return state["everyone"], {"delta": (delta, "sum")}

    def halt(self, ctx, votes):
        return votes["delta"] < self.tol

    def result(self, ctx, state):
        return state["rank"]

    def solve_in_memory(self, ctx, edges, state, schedule, max_iters):
        """The same supersteps as the engine's loop, each one numba call (pull or push and
        update fused; :mod:`~graphsys.bsp.kernels_pagerank`); ``direction`` records which
        layout ran each iteration. The layout (docs/scaling.md has the rules' costs):

        * a linear solve (:mod:`~graphsys.bsp.algorithms.pagerank_krylov`) from
          :data:`~graphsys.bsp.algorithms.pagerank_krylov.KRYLOV_MIN_NODES` vertices while
          the sent values fit :data:`PUSH_STORE_MIN_BYTES` and no push index is stored;
        * a push over the stored ``push`` index from the first iteration, with at least
          :data:`LOCALITY_MAX_DEGREE` edges per vertex and sent values within
          :data:`PUSH_MAX_BYTES`; without one, where the sent values exceed
          :data:`PUSH_STORE_MIN_BYTES`, the run stores it first
          (:func:`store_push_index`) unless ``store_index`` is False or it cannot write;
        * a pull over the CSC with hub-ordered sources where the engine's pull hub-sorts
          (:meth:`~graphsys.bsp.edges.MemoryEdges.hot_adjacency`);
        * a pull over fixed slots in breadth-first order
          (:func:`~graphsys.bsp.kernels_pagerank.bfs_order`,
          :func:`~graphsys.bsp.kernels_pagerank.ell_layout`) below
          :data:`LOCALITY_MAX_DEGREE` in-edges per vertex;
        * else a pull over the CSC, switching after :data:`PUSH_FORECAST_AFTER` iterations
          to a push layout built in memory (sent values between :data:`PUSH_MIN_BYTES` and
          :data:`PUSH_MAX_BYTES`) where :func:`iterations_left` forecasts at least
          :data:`PUSH_BREAK_EVEN_ITERATIONS` more.

        Layouts are built in the setup; ranks are mapped back at the end. A weighted run
        declines (returns None): the layouts carry no weights."""
        if self.width is not None or self.weighted:
            return None  # the engine's supersteps: their pulls multiply by the weights
        t0 = time.perf_counter()
        stored, stored_now = _push_index(self, ctx, edges)
        map_seconds = time.perf_counter() - t0
        solved = None if stored is not None else solve_krylov(
            self, ctx, edges, state, max_iters, max_bytes=PUSH_STORE_MIN_BYTES,
            locality_degree=LOCALITY_MAX_DEGREE)
        if solved is not None:
            solved.setup_seconds += map_seconds
            return solved
        loop = _FusedLoop.start(self, ctx, edges, state, stored, stored_now)
        loop.setup += map_seconds
        steps, deltas, converged = [], [], False
        for it in range(max_iters):
            if loop.pushable and it == PUSH_FORECAST_AFTER and iterations_left(
                    deltas, self.tol, max_iters - it) >= PUSH_BREAK_EVEN_ITERATIONS \
                    and loop.push_fits():
                loop.switch_to_push(ctx)
            delta, ss = loop.iterate(it, self.damping)
            steps.append(ss)
            deltas.append(delta)
            if delta < self.tol:
                converged = True
                break
        loop.finish(state)
        return Solved(loop.method, steps, 0 if converged else ctx.num_local, loop.setup)

    def solve_on_device(self, ctx, edges, state, schedule, max_iters):
        """The torch backend's supersteps in three ops each (one SpMV), the L1 change read
        every few supersteps: :mod:`graphsys.bsp.algorithms.pagerank_device`."""
        return solve_on_device(self, ctx, edges, state, max_iters)


def store_push_index(graph, edge_set: str | None):
    """Build and store the ``push`` index of ``edge_set`` (and the CSC it is built from), as
    ``graphsys index --push`` does, and return it mapped; None where it is not written: the
    run then keeps its in-memory layouts. The files are written out of core, within the
    RAM available now (the budget of an in-memory run), under the writer lock, and listed
    in the manifest last, as every index is. A view of several edge sets, a remote graph
    and a directory (or parent) this process may not write are skipped quietly; a store
    that fails warns in one line naming the cause and is not tried again in this process
    (:data:`_STORE_FAILED`)."""
    es = graph.edge_set(edge_set)
    if es.members or not graph.location.local or not all(
            os.access(d, os.W_OK) for d in (graph.path, Path(graph.path).parent)):
        return None
    key = (str(Path(graph.path).resolve()), es.name, manifest_digest(graph.manifest))
    if key in _STORE_FAILED:
        return None
    try:
        build_index(graph, ("push",), edge_sets=[es.name], memory_limit=None)  # RAM free now
    except (GraphsysError, OSError) as exc:
        _STORE_FAILED.add(key)
        warnings.warn(f"{graph.path}: PageRank could not store the push index of edge set "
                      f"{es.name!r} ({exc}); it runs without it and does not try again in "
                      f"this process: pass store_index=False to skip the attempt, or store "
                      f"it with {build_command(graph, ('push',), es.name)}", stacklevel=2)
        return None
    return graph.adjacency_index(es.name, "push")


def _push_index(program: PageRank, ctx, edges):
    """The graph's ``push`` index where the fused loop would use it (mapped, or stored by
    this run: :func:`store_push_index`), and whether this run stored it; (None, False)
    where the graph is too sparse or its sent values too large for a push."""
    n = ctx.num_nodes
    if edges.num_edges < LOCALITY_MAX_DEGREE * n or 8 * n > PUSH_MAX_BYTES:
        return None, False
    stored = ctx.graph.adjacency_index(ctx.edge_set, "push")
    if stored is not None:
        return stored, False
    warn_outdated_push(ctx.graph, ctx.graph.edge_set(ctx.edge_set).name)
    if program.store_index and 8 * n > PUSH_STORE_MIN_BYTES:
        stored = store_push_index(ctx.graph, ctx.edge_set)
        return stored, stored is not None
    return None, False


@dataclass
class _FusedLoop:
    """The state of :meth:`PageRank.solve_in_memory`'s fused loop: the layout a step reads
    (``step(*layout, send, new_send, rank, inv_deg, p, ...)``), the vertex arrays in its
    order, and what its statistics report."""

    n: int
    m: int  # edges scanned per iteration
    receivers: int  # vertices with an in-edge
    layout: tuple
    step: Callable
    method: str
    direction: str
    order: np.ndarray | None  # new id -> engine id of every vertex, when renumbered
    rank: np.ndarray
    inv_deg: np.ndarray
    p: np.ndarray
    send: np.ndarray
    new_send: np.ndarray
    dangling: float
    float32: bool
    pushable: bool  # may switch to a push after PUSH_FORECAST_AFTER iterations
    csc: tuple  # (indptr, idx) the push blocks are built from
    setup: float = 0.0  # seconds building layouts

    @classmethod
    def start(cls, program: PageRank, ctx, edges, state, stored, stored_now) -> _FusedLoop:
        """The layout the graph picks (see :meth:`PageRank.solve_in_memory`), the vertex
        arrays renumbered into it and the first sent values placed."""
        n = ctx.num_nodes
        hub = stored is None and edges._hub_sorts("csc")
        indptr = idx = None
        if stored is None:
            indptr, idx, hub_order = (edges.hot_adjacency("csc") if hub
                                      else edges.adjacency("csc"))
        t0 = time.perf_counter()
        if stored is None:
            m, receivers = int(indptr[-1] - indptr[0]), int(np.count_nonzero(np.diff(indptr)))
        else:
            m, receivers = stored.info.num_edges, stored.receivers
        pushable = (stored is None and not hub and m >= LOCALITY_MAX_DEGREE * n
                    and edges.private("csc") and PUSH_MIN_BYTES < 8 * n <= PUSH_MAX_BYTES)
        order = slot = None
        if stored is not None:
            order = stored.order
            layout = stored.layout() + (np.zeros(sums_length(n, stored.bounds)),)
            step, direction = pagerank_push_step, "push"
            method = (f"fused-pagerank (push index, "
                      f"{'stored by this run, ' if stored_now else ''}degree order)")
        elif hub:
            slot = np.empty(n, idx.dtype)  # where each vertex's sent value goes
            slot[hub_order] = np.arange(n, dtype=idx.dtype)
            layout, step = (indptr, idx, slot), pagerank_step
            method, direction = "fused-pagerank (hub order)", "pull"
        elif m < LOCALITY_MAX_DEGREE * n:  # no push index serves so sparse a graph
            check_layout(ctx, "PageRank's breadth-first ELL layout",
                         ell_bytes(indptr, idx.dtype, True), index=False)
            order = bfs_order(indptr, idx)
            layout = ell_layout(*read_only(*renumber(indptr, idx, order)))
            step = pagerank_ell_step
            method, direction = "fused-pagerank (bfs order, ell)", "pull"
        else:
            layout, step = (indptr, idx, np.zeros(0, idx.dtype)), pagerank_step
            method, direction = "fused-pagerank", "pull"
        rank, inv_deg = host_array(state["rank"]), host_array(state["inv_deg"])
        p = host_array(state["p"]) if state["p"] is not None else np.zeros(0)
        if order is not None:
            rank, inv_deg = rank[order], inv_deg[order]
            p = p[order] if len(p) else p
        sent = host_array(state["send"])
        # ELL reads a padding source N whose value stays 0
        dtype = np.float32 if program.fused_float32 else np.float64
        send = np.zeros(n + (step is pagerank_ell_step), dtype)
        if hub:
            send[slot] = sent
        else:
            send[:n] = sent[order] if order is not None else sent
        return cls(n, m, receivers, layout, step, method, direction, order, rank, inv_deg, p,
                   send, np.zeros_like(send), float(state["dangling"]),
                   program.fused_float32, pushable, (indptr, idx),
                   time.perf_counter() - t0)

    def push_fits(self) -> bool:
        """Whether the push layout's build (:func:`~graphsys.storage.push_layout.
        layout_bytes`) and six float64 vertex arrays (the order, the sums, the vertex
        arrays renumbered) fit the RAM available now: the switch only saves time, so a run
        where they do not keeps pulling."""
        need = layout_bytes(self.n, self.m, min_blocks(self.n), numba.get_num_threads())
        return over_budget(need + 6 * 8 * (self.n + 1)) is None

    def switch_to_push(self, ctx) -> None:
        """Renumber by descending out-degree and push into destination blocks from now on
        (:func:`~graphsys.storage.push_layout.push_layout`); its build joins the setup."""
        t0 = time.perf_counter()
        out_degree = host_array(ctx.degree("out"))  # float64, counted by init
        order = degree_order(out_degree)
        self.layout = push_layout(*self.csc, order, out_degree, min_blocks(self.n))
        self.layout += (np.zeros(sums_length(self.n, self.layout[0])),)
        self.step, self.direction = pagerank_push_step, "push"
        self.method = "fused-pagerank (push blocks, degree order)"
        self.order = order
        self.rank, self.inv_deg, self.send = self.rank[order], self.inv_deg[order], self.send[order]
        self.p = self.p[order] if len(self.p) else self.p
        self.new_send = np.zeros_like(self.send)
        self.setup += time.perf_counter() - t0

    def iterate(self, it: int, a: float) -> tuple[float, SuperstepStats]:
        """One superstep: one numba call (pull or push and update fused); its L1 change
        and statistics."""
        t0 = time.perf_counter()
        scale = a * self.dangling + (1.0 - a)
        delta, self.dangling = self.step(*self.layout, self.send, self.new_send, self.rank,
                                         self.inv_deg, self.p, a, scale / self.n, scale)
        self.send, self.new_send = self.new_send, self.send
        ss = SuperstepStats(superstep=it, active=self.n, direction=self.direction,
                            edges_scanned=self.m, messages_sent=self.m,
                            messages_combined=self.receivers, fused=True)
        ss.seconds["edges"] = time.perf_counter() - t0
        return delta, ss

    def finish(self, state) -> None:
        """The ranks mapped back into the engine's state, with its sent values and
        dangling mass."""
        if self.float32:
            # rounded sent values leak rank mass (about 1e-9 of it): the fixed point sums
            # to 1, so the result does too (a change within the float32 bound)
            self.rank /= self.rank.sum()
            self.method += ", float32 sends"
        if self.order is not None:
            host_array(state["rank"])[self.order] = self.rank
        np.multiply(host_array(state["rank"]), host_array(state["inv_deg"]),
                    out=host_array(state["send"]))
        state["dangling"] = self.dangling


#: (graph directory, edge set, manifest digest) of every push index whose store failed in
#: this process (:func:`store_push_index` does not try it again)
_STORE_FAILED: set[tuple[str, str, str]] = set()


def iterations_left(deltas: list[float], tol: float, cap: int) -> int:
    """Iterations until the L1 change falls below ``tol``, forecast from the last two
    (``deltas``: one per iteration so far) as a geometric decay, at most ``cap`` (also when
    the change is not shrinking)."""
    d1, d2 = deltas[-2], deltas[-1]
    if d2 < tol:
        return 0
    if not 0.0 < d2 < d1:
        return cap
    return min(cap, math.ceil(math.log(tol / d2) / math.log(d2 / d1)))


@numba.njit(parallel=True, cache=True, nogil=True)
def _update_pass(combined, rank, inv_deg, p, damping, base, scale, send):
    """One pass over the vertices (all float64 (N_local,); parallel from
    :data:`~graphsys.bsp.kernels.PARALLEL_MIN_ITEMS` of them): ``rank`` becomes ``damping *
    combined + base`` (uniform teleport; ``p`` empty) or ``damping * combined + scale * p``;
    ``send`` becomes ``rank * inv_deg``. Returns (L1 change of ``rank``, rank mass on
    dangling vertices, ``inv_deg == 0``)."""
    delta = 0.0
    dangling = 0.0
    if rank.shape[0] < PARALLEL_MIN_ITEMS:
        for v in range(rank.shape[0]):
            c, d = settle_vertex(v, v, combined[v], rank, inv_deg, send, p, damping, base,
                                 scale)
            delta += c
            dangling += d
    else:
        for v in numba.prange(rank.shape[0]):
            c, d = settle_vertex(v, v, combined[v], rank, inv_deg, send, p, damping, base,
                                 scale)
            delta += c
            dangling += d
    return delta, dangling


_PAGERANK_PARAMETERS = """damping : float, default 0.85
    The probability :math:`\\alpha` of following an edge rather than teleporting, in
    (0, 1).
tol : float, default 1e-6
    Stop when the L1 change of the rank vector falls below ``tol`` (networkx compares
    with ``N * tol``).
max_iters : int, optional
    Most iterations (supersteps; default 100). ``result.stats.converged`` is False when
    they ran out first.
sum_dtype : {"auto", "float64", "float32"}, default "auto"
    The dtype the numba CPU kernels send and sum messages in; ``float32`` halves the
    cache footprint of the random accesses at a bounded relative error (see
    :mod:`graphsys.bsp.algorithms.pagerank`); the torch backend refuses it, and so does
    a weighted run (it sums in float64). ``auto``: float32 sent values (float64 sums) in
    the fused in-memory loop of an unweighted run with ``tol >= 1e-6``, where their
    rounding stays far below the stopping rule's error (float32 ranks on the torch
    backend in memory, the last supersteps in float64 where the float32 sums' rounding
    would hold the change above ``tol``: :mod:`graphsys.bsp.algorithms.pagerank_device`);
    float64 otherwise.
weighted : bool, optional
    Follow edges in proportion to their weights (networkx's default ``weight="weight"``):
    None (default) when the edge set has weights, True requires them, False ignores
    them (every edge weighs 1, as ``weight=None`` in networkx). Weights must be finite
    and non-negative; a node whose out-weights sum to 0 is dangling.
    ``result.stats.weighted`` records which was computed.
store_index : bool, default True
    Whether an in-memory run may store the graph's ``push`` index (and the CSC it is built
    from) into the graph directory, on a graph without one where pushing over it pays (see
    :meth:`PageRank.solve_in_memory`): every later run then maps it. False leaves the
    directory untouched (the run builds what it needs in memory); ``graphsys index
    --push`` stores it explicitly."""

@document_options(*ENGINE_OPTIONS, "init", "device_budget")
@fill_doc(pagerank_parameters=_PAGERANK_PARAMETERS,
          references=cite("pagerank", "ligra"))
def pagerank(graph, *, damping: float = 0.85, tol: float = 1e-6, max_iters: int | None = None,
             sum_dtype: str = "auto", weighted: bool | None = None,
             store_index: bool = True, mode: str = "auto", device: str = "cpu",
             backend: str = "auto", threads: int | None = None, edge_set: str | None = None,
             distributed: bool = False, progress: bool | Callable | None = None,
             readahead: int = 4, dense_divisor: float = DENSE_DIVISOR,
             fuse: bool = True, init=None,
             device_budget: int | float | None = None) -> Result:
    """PageRank of every node, as networkx's :func:`networkx.pagerank` defines it.

    Power iteration of :math:`x \\leftarrow \\alpha (A^\\top D^{-1} x + p \\sum_{d_u = 0}
    x_u) + (1 - \\alpha) p` with a uniform teleport :math:`p`; the rank of dangling
    nodes (no out-edges) is spread like the teleport, multi-edges count with their
    multiplicity. On an edge set with weights :math:`A` holds the weights and :math:`D`
    the weighted out-degrees (``weighted``). Unweighted, in memory on CPU, the iterations
    run as one fused numba loop whose layout (pull, push into destination blocks,
    breadth-first renumbered pull) is picked from the graph's shape; on the torch backend
    (any device) each iteration is one sparse matrix-vector product and two tensor ops,
    the L1 change read every few iterations
    (:mod:`~graphsys.bsp.algorithms.pagerank_device`); weighted runs take the engine's
    supersteps, whose pulls multiply by the weights; ``result.stats.method`` names what
    ran.

    Parameters
    ----------
    %(graph)s
    %(pagerank_parameters)s
    %(engine_options)s

    Returns
    -------
    Result
        ``values``: float64 (N,) ranks summing to 1, by internal node id; map them to
        original ids with ``result.top(k)``, ``result.value(id)``, ``result.to_dict()`` or
        ``result.to_table()``. ``result.stats``: the run's :class:`RunStats`.

    Raises
    ------
    ParameterError
        ``damping`` outside (0, 1), ``tol`` not positive, an unknown ``sum_dtype``,
        ``mode``, ``backend`` or ``device``, ``weighted`` True on an edge set without
        weights.
    GraphsysError
        A weighted run over a negative, NaN or infinite edge weight.

    See Also
    --------
    personalized_pagerank : teleport to chosen nodes instead of uniformly.

    References
    ----------
    %(references)s

    Examples
    --------
    >>> import tempfile, numpy as np, graphsys
    >>> from graphsys import bsp
    >>> src, dst = np.array([1, 2, 3, 3, 4]), np.array([2, 3, 1, 4, 1])
    >>> g = graphsys.from_numpy(src, dst, tempfile.mkdtemp() + "/g")
    >>> result = bsp.pagerank(g, tol=1e-10)
    >>> [(node, round(rank, 3)) for node, rank in result.top(3)]
    [(1, 0.287), (2, 0.281), (3, 0.277)]
    >>> round(result.value(4), 3)
    0.155

    Weights steer the walk (as ``networkx.pagerank(G)``); ``weighted=False`` ignores them:

    >>> w = np.array([1.0, 1.0, 1.0, 9.0, 1.0])
    >>> g = graphsys.from_numpy(src, dst, tempfile.mkdtemp() + "/g", weight=w)
    >>> round(bsp.pagerank(g, tol=1e-8).value(4), 3)
    0.233
    >>> result = bsp.pagerank(g, tol=1e-8, weighted=False)
    >>> round(result.value(4), 3), result.stats.weighted
    (0.155, False)
    """
    return PAGERANK_SPEC.run(graph, damping=damping, tol=tol, max_iters=max_iters,
                             sum_dtype=sum_dtype, weighted=weighted, store_index=store_index,
                             init=init, mode=mode, device=device, backend=backend, threads=threads,
                             distributed=distributed, progress=progress, edge_set=edge_set,
                             readahead=readahead, dense_divisor=dense_divisor, fuse=fuse,
                             device_budget=device_budget)


@document_options(*ENGINE_OPTIONS, "init")
@fill_doc(pagerank_parameters=_PAGERANK_PARAMETERS,
          references=cite("pagerank", "ligra"))
def personalized_pagerank(graph, sources, *, weights=None, damping: float = 0.85,
                          tol: float = 1e-6, max_iters: int | None = None,
                          sum_dtype: str = "auto", weighted: bool | None = None,
                          store_index: bool = True, mode: str = "auto",
                          device: str = "cpu", backend: str = "auto",
                          threads: int | None = None, edge_set: str | None = None,
                          distributed: bool = False, progress: bool | Callable | None = None,
                          readahead: int = 4, dense_divisor: float = DENSE_DIVISOR,
                          fuse: bool = True, init=None) -> Result:
    """PageRank teleporting to chosen source nodes instead of uniformly.

    The same iteration as :func:`pagerank` with the teleport vector :math:`p` put on
    ``sources`` (in proportion to ``weights``); dangling mass follows the same
    distribution, as ``networkx.pagerank(G, personalization=...)`` does; edge weights
    steer the walk as in :func:`pagerank` (``weighted``). A run from one source without
    ``weights`` is ``graphsys run ppr --source``'s: its result records its run, so that
    it can start the next (``init``).

    Parameters
    ----------
    %(graph)s
    sources : node id or sequence of node ids
        Original ids of the nodes the walk teleports to.
    weights : sequence of float, optional
        Non-negative teleport weight of each source, not all zero (default: equal).
    %(pagerank_parameters)s
    %(engine_options)s

    Returns
    -------
    Result
        ``values``: float64 (N,) ranks summing to 1, by internal node id (see
        :func:`pagerank`).

    Raises
    ------
    ParameterError
        ``sources`` empty, or a bad ``damping``, ``tol`` or engine option.
        ``init`` with several sources or with ``weights``.
    GraphsysError
        A source id that is not a node of the graph, or ``weights`` negative, NaN,
        infinite, all zero or not one per source (finite weights of any magnitude are
        scaled before they are summed: ``[1e308, 1e308]`` is ``[1, 1]``).

    References
    ----------
    %(references)s

    Examples
    --------
    >>> import tempfile, numpy as np, graphsys
    >>> from graphsys import bsp
    >>> src, dst = np.array([1, 2, 3, 3, 4]), np.array([2, 3, 1, 4, 1])
    >>> g = graphsys.from_numpy(src, dst, tempfile.mkdtemp() + "/g")
    >>> result = bsp.personalized_pagerank(g, [4], tol=1e-10)
    >>> [(node, round(rank, 3)) for node, rank in result.top(3)]
    [(1, 0.295), (2, 0.251), (4, 0.241)]
    """
    graph = open_if_path(graph)
    src = id_list(sources)
    if not src:
        raise ParameterError("sources", "must hold at least one node id (personalized "
                                        "pagerank)")
    if len(src) == 1 and weights is None:
        return PPR_SPEC.run(graph, src[0], damping=damping, tol=tol,
                            max_iters=max_iters, sum_dtype=sum_dtype, weighted=weighted,
                            store_index=store_index, init=init, mode=mode, device=device,
                            backend=backend, threads=threads, distributed=distributed,
                            progress=progress, edge_set=edge_set, readahead=readahead,
                            dense_divisor=dense_divisor, fuse=fuse)
    if init is not None:
        raise ParameterError("init", "starts a personalized pagerank of one source without "
                                     "weights (the runs a result records)")
    idx = internal_of(graph, src, "sources")
    w = teleport_weights(np.ones(len(idx)) if weights is None else weights,
                         "personalization weights")
    if w.shape != idx.shape:
        raise GraphsysError(f"personalization weights must be one per source: "
                            f"{w.size} weights for {len(idx)} sources")
    p = np.zeros(graph.num_nodes(), np.float64)
    np.add.at(p, idx, w)
    prog = _pagerank_program(graph, edge_set=edge_set, damping=damping, tol=tol,
                             sum_dtype=sum_dtype, weighted=weighted, store_index=store_index,
                             personalization=p)
    limit = PPR_SPEC.max_iters(graph, max_iters)
    result = run(graph, prog, max_iters=limit, mode=mode, device=device, backend=backend,
                 threads=threads, distributed=distributed, progress=progress,
                 edge_set=edge_set, readahead=readahead, dense_divisor=dense_divisor,
                 fuse=fuse)
    PPR_SPEC.warn_unconverged(result, limit)
    return result


def _pagerank_program(graph, *, edge_set=None, damping: float = 0.85, tol: float = 1e-6,
                      sum_dtype: str = "auto", weighted: bool | None = None,
                      store_index: bool = True, personalization: np.ndarray | None = None):
    """PageRank, named ``ppr`` when it teleports to ``personalization``."""
    prog = PageRank(damping, tol, personalization=personalization, sum_dtype=sum_dtype,
                    weighted=resolve_weighted(graph, edge_set, weighted),
                    store_index=store_index)
    if personalization is not None:
        prog.name = "ppr"
    return prog


def _ppr_program(graph, *, source, **params):
    """PageRank teleporting to the one node ``source`` (an original id)."""
    p = np.zeros(graph.num_nodes(), np.float64)
    p[source_index(graph, source)] = 1.0
    return _pagerank_program(graph, personalization=p, **params)


PAGERANK_SPEC = AlgorithmSpec("pagerank", _pagerank_program, lambda n: 100,
                              parameters=("damping", "tol", "sum_dtype", "weighted",
                                          "store_index"),
                              warm_start=pagerank_from)
PPR_SPEC = AlgorithmSpec("ppr", _ppr_program, lambda n: 100, needs_source=True,
                         parameters=("damping", "tol", "sum_dtype", "weighted",
                                     "store_index"),
                         warm_start=pagerank_from)


class PageRankRows(PageRank):
    """:class:`PageRank` declared as a vector program of width 1: the same values through
    the vector (``(N, 1)`` rows) edge paths, to measure and test them against the scalar
    ones."""

    width = 1

    def send(self, ctx, state):
        return super().send(ctx, state).unsqueeze(1)

    def update(self, ctx, state, combined, received):
        return super().update(ctx, state, combined[:, 0], received)
