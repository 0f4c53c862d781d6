"""k-core decomposition (core numbers as networkx ``core_number``): BSP peeling, and in
memory a level-by-level peeling kernel."""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from graphsys.bsp.algorithms.common import self_loop_counts, symmetric
from graphsys.bsp.algorithms.spec import AlgorithmSpec
from graphsys.bsp.docstrings import ENGINE_OPTIONS, document_options
from graphsys.bsp.edges import DENSE_DIVISOR
from graphsys.bsp.engine import Result
from graphsys.bsp.incremental_cores import cores_from
from graphsys.bsp.program import Solved, VertexProgram
from graphsys.bsp.stats import SuperstepStats
from graphsys.device import host_array
from graphsys.errors import GraphsysError, ParameterError
from graphsys.kernels.cores import core_levels, peel_degrees

#: How :func:`kcore` treats self-loops
SELF_LOOPS = ("ignore", "refuse")


class KCore(VertexProgram):
    """The peeling of :func:`kcore` in supersteps: removed vertices tell their neighbours
    (sum of 1s), which lower their degree. ``loops``: int64 (N,) self-loops per vertex,
    which never count, or None to count them when first needed.

    Examples
    --------
    What :func:`kcore` runs, on a triangle 1-2-3 with a pendant 4 (pass
    ``both_ways=False`` for an edge set stored undirected):

    >>> import tempfile, graphsys
    >>> from graphsys import bsp
    >>> g = graphsys.from_numpy([1, 1, 2, 3], [2, 3, 3, 4], tempfile.mkdtemp() + "/g")
    >>> bsp.run(g, bsp.KCore()).to_dict()
    {1: 2.0, 2: 2.0, 3: 2.0, 4: 1.0}
    """

    name = "kcore"
    message, combiner = "copy", "sum"
    host_state = True  # init and result are Context calls (in memory: no torch)
    halt_when_inactive = False

    def __init__(self, both_ways: bool = True, loops: np.ndarray | None = None):
        self.direction = "both" if both_ways else "out"
        self.given, self.loops = loops, loops

    def init(self, ctx):
        self.loops = self.given
        # the core numbers only: the in-memory fast path needs no more (see aggregate)
        state = {"core": ctx.full(0.0), "k": 0.0, "loops_out": False}
        return state, ctx.full(False, bool)

    def aggregate(self, ctx, state):
        import torch

        if not state["loops_out"]:  # superstep 0: the degrees, less the self-loops
            deg = ctx.degree("both" if self.direction == "both" else "out")
            if self.loops is None:
                self.loops = self_loop_counts(ctx.graph, ctx.edge_set)
            # each stored loop is an out- and, both ways, an in-entry
            loops = self.loops[ctx.lo:ctx.hi] * (2 if self.direction == "both" else 1)
            state["deg"] = deg - torch.as_tensor(loops, dtype=deg.dtype).to(deg.device)
            state["alive"] = ctx.full(True, torch.bool)
            state["loops_out"] = True
        alive_deg = state["deg"][state["alive"]]
        low = alive_deg.min() if alive_deg.numel() else float("inf")
        return {"min_degree": (low, "min")}

    def send(self, ctx, state):
        import torch

        return torch.ones_like(state["deg"])

    def update(self, ctx, state, combined, received):
        import torch

        alive = state["alive"]
        state["deg"] = state["deg"] - torch.where(received, combined, 0.0)
        if ctx.num_active == 0:  # nothing was peeled last superstep: raise k
            state["k"] = max(state["k"], ctx.aggregates["min_degree"])
        remove = alive & (state["deg"] <= state["k"])
        state["core"] = torch.where(remove, state["k"], state["core"])
        state["alive"] = alive & ~remove
        return remove, {"alive": (int(state["alive"].sum()), "sum")}

    def halt(self, ctx, votes):
        return votes["alive"] == 0

    def result(self, ctx, state):
        return state["core"]

    def solve_in_memory(self, ctx, edges, state, schedule, max_iters):
        """``schedule="auto"``: peeling level by level in one numba call
        (:func:`~graphsys.kernels.cores.core_levels`), recorded as one superstep
        (``stats.method``: ``level-peel``), the same core numbers, and the removal order
        kept (:attr:`peeled`, the peel's queue: a k-order once numbered, from which
        :mod:`graphsys.bsp.incremental_cores` updates). ``max_iters`` not applied."""
        if schedule != "auto":
            return None
        two = self.direction == "both"
        adj = edges.adjacencies("csr", "csc") if two else edges.adjacencies("csr")
        out, into = adj[0][:2], adj[-1][:2]
        t0 = time.perf_counter()
        n = ctx.num_nodes
        entries = int(out[0][-1]) + (int(into[0][-1]) if two else 0)
        count = self.loops is None  # else the loops read from the buckets
        loops = np.empty(0, np.int64) if count else self.loops

        def degrees(keep: bool) -> np.ndarray:
            deg = np.empty(n, np.int32 if entries < 2**31 else np.int64)
            peel_degrees(*out, into[0], two, loops, count, deg)
            deg.setflags(write=not keep)
            return deg

        if count:  # from the index alone: kept per mapped index, copied (core_levels
            # consumes its degrees)
            deg = edges.derived(f"kcore-degrees-{self.direction}", ("csr", "csc")[:1 + two],
                                lambda: degrees(True)).copy()
        else:
            deg = degrees(False)
        vid = np.int32 if n < 2**31 else np.int64
        self.peeled = np.empty(n, vid)
        read = core_levels(*out, *into, two, deg, host_array(state["core"]), np.empty(n, vid),
                           self.peeled)
        method = "level-peel"
        ss = SuperstepStats(superstep=0, active=ctx.num_nodes, direction=method,
                            edges_scanned=int(read), messages_sent=0, fused=True)
        ss.seconds["edges"] = time.perf_counter() - t0
        return Solved(method, [ss], 0)


@document_options(*ENGINE_OPTIONS, "init")
def kcore(graph, *, self_loops: str = "ignore", max_iters: int | None = None,
          schedule: str = "auto", mode: str = "auto", device: str = "cpu",
          backend: str = "auto", threads: int | None = None, edge_set: str | None = None,
          distributed: bool = False, progress: bool | Callable | None = None, readahead: int = 4,
          dense_divisor: float = DENSE_DIVISOR, fuse: bool = True, init=None) -> Result:
    """Core number of every node (the largest ``k`` of a k-core containing it).

    The values of networkx's :func:`networkx.core_number` (the decomposition of [1]_).
    In memory on CPU the default schedule peels in one numba call, in O(N + E), level by
    level (every vertex of degree at most ``k`` and those that fall to it, then
    ``k + 1``); otherwise peeling in supersteps: every node of
    degree at most ``k`` is removed at once and its neighbours' degrees drop; when a
    superstep removes nothing, ``k`` rises to the smallest remaining degree (a global min
    aggregator). Degree is in + out on a directed edge set (networkx's convention), the
    stored degree on an undirected one; multi-edges count with their multiplicity,
    self-loops never (networkx refuses a graph with self-loops; ``self_loops="refuse"``
    does the same).

    Parameters
    ----------
    %(graph)s
    self_loops : {"ignore", "refuse"}, default "ignore"
        ``ignore``: a self-loop adds nothing to a degree (the core numbers of the graph
        without its self-loops, what networkx asks users to compute with
        ``G.remove_edges_from(nx.selfloop_edges(G))``). ``refuse``: networkx's rule, an
        error when the edge set has a self-loop (found by reading the diagonal buckets).
    max_iters : int, optional
        Most supersteps (default 4N + 4: every superstep removes a node or raises ``k``).
    schedule : {"auto", "sync"}, default "auto"
        ``auto``: in memory on CPU, the peeling in numba (recorded as one superstep,
        ``result.stats.method`` ``"level-peel"``), else ``sync``;
        ``sync``: BSP supersteps.
    %(engine_options)s

    Returns
    -------
    Result
        ``values``: float64 (N,) core numbers by internal node id; ``order``: the peeling
        order (each node's position, a k-order) where the in-memory peeling ran, written
        beside the values by ``to_table()`` so that a later run with ``init=`` updates
        both (:mod:`graphsys.bsp.incremental_cores`).

    Raises
    ------
    ParameterError
        An unknown ``self_loops``, ``schedule``, ``mode``, ``backend`` or ``device``.
    GraphsysError
        ``self_loops="refuse"`` and the edge set has a self-loop.

    References
    ----------
    .. [1] V. Batagelj, M. Zaversnik, "An O(m) algorithm for cores decomposition of
       networks", arXiv cs/0310049, 2003.

    Examples
    --------
    A triangle with a tail:

    >>> import tempfile, numpy as np, graphsys
    >>> from graphsys import bsp
    >>> src, dst = np.array([1, 2, 3, 3]), np.array([2, 3, 1, 4])
    >>> g = graphsys.from_numpy(src, dst, tempfile.mkdtemp() + "/g", undirected=True)
    >>> bsp.kcore(g).to_dict()
    {1: 2.0, 2: 2.0, 3: 2.0, 4: 1.0}
    """
    return KCORE_SPEC.run(graph, max_iters=max_iters, self_loops=self_loops, init=init, mode=mode,
                          device=device, backend=backend, threads=threads, distributed=distributed,
                          progress=progress, edge_set=edge_set, readahead=readahead,
                          dense_divisor=dense_divisor, fuse=fuse, schedule=schedule)


def _kcore_program(graph, *, edge_set=None, self_loops: str = "ignore"):
    if self_loops not in SELF_LOOPS:
        raise ParameterError("self_loops", f"must be one of {', '.join(SELF_LOOPS)}, got "
                                           f"{self_loops!r}")
    loops = None
    if self_loops == "refuse":
        loops = self_loop_counts(graph, edge_set)
        found = int(loops.sum())
        if found:
            raise GraphsysError(f"kcore: edge set {graph.edge_set(edge_set).name!r} has "
                                f"{found:,} self-loops, which networkx's core numbers refuse "
                                f"(leave them out with self_loops='ignore')")
    return KCore(both_ways=not symmetric(graph, edge_set), loops=loops)


#: At most 4N + 4 supersteps: every superstep removes at least one node or raises k.
KCORE_SPEC = AlgorithmSpec("kcore", _kcore_program, lambda n: 4 * n + 4,
                           parameters=("self_loops",), warm_start=cores_from)
