"""Strongly connected components: the coloring algorithm with trimming in supersteps (any
mode, device, process count), and in memory a forward-backward split plus Tarjan."""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from graphsys.bsp.algorithms.common import symmetric
from graphsys.bsp.algorithms.spec import AlgorithmSpec
from graphsys.bsp.docstrings import document_options
from graphsys.bsp.edges import DENSE_DIVISOR
from graphsys.bsp.engine import Result
from graphsys.bsp.kernels_components import scc_multistep
from graphsys.bsp.program import Solved, VertexProgram
from graphsys.bsp.stats import SuperstepStats
from graphsys.device import host_array
from graphsys.kernels import components as afforest

INF = float("inf")
#: what each phase sends, along which edges, combined how (the trims count alive
#: neighbours; the colours flow forward as minima, the components grow backward)
_PHASES = {"trim-in": ("out", "sum"), "trim-out": ("in", "sum"),
           "forward": ("out", "min"), "backward": ("in", "max")}


class SCC(VertexProgram):
    """Strongly connected components by colouring (Orzan; Slota, Rajamanickam, Madduri's
    Multistep), in rounds over the vertices not yet assigned (*alive*):

    1. **trim** (two supersteps): alive vertices count their alive in- and out-neighbours;
       one with none either way is a component of its own;
    2. **forward**: every alive vertex starts with its own id as colour and the minimum
       flows along out-edges (a min-relaxation) until no colour drops: a vertex's colour
       is then the smallest alive id that reaches it;
    3. **backward**: each vertex whose colour is its own id (a *root*) starts its
       component; it grows against the edges to alive vertices of the same colour (a max
       combiner: an in-neighbour's successors never carry a larger colour than its own).

    Assigned vertices leave; the rounds end when none is alive. A component's label is its
    smallest id (its root). Phase changes that depend on the whole graph (no colour
    dropped, nothing assigned) are decided by the halting vote and take effect in the next
    superstep, which sends nothing (its frontier is empty by then) and starts the phase.

    Examples
    --------
    What :func:`scc` runs, on a cycle 1 -> 2 -> 3 -> 1 with a tail 3 -> 4:

    >>> import tempfile, graphsys
    >>> from graphsys import bsp
    >>> g = graphsys.from_numpy([1, 2, 3, 3], [2, 3, 1, 4], tempfile.mkdtemp() + "/g")
    >>> bsp.run(g, bsp.SCC()).to_dict()
    {1: 0.0, 2: 0.0, 3: 0.0, 4: 3.0}
    """

    name = "scc"
    message = "copy"
    halt_when_inactive = False
    host_state = True  # init and result are Context calls (the supersteps take tensors)

    def __init__(self, undirected: bool = False):
        self.undirected = undirected
        self.phase, self.entering = "trim-in", False

    @property
    def direction(self) -> str:
        return _PHASES[self.phase][0]

    @property
    def combiner(self) -> str:
        return _PHASES[self.phase][1]

    def init(self, ctx):
        self.phase, self.entering = "trim-in", False
        # the labels only: the in-memory fast path needs no more (see aggregate); NumPy
        # on the CPU, so that it imports no torch
        return {"label": ctx.full(INF)}, ctx.full(True, bool)

    def aggregate(self, ctx, state):
        import torch

        if "id" not in state:  # the first superstep: the rest of the state
            state.update(id=ctx.node_range(torch.float64), color=ctx.node_range(torch.float64),
                         alive=ctx.full(True, torch.bool), indeg=ctx.full(0.0))
        return {}

    def send(self, ctx, state):
        import torch

        if self.phase.startswith("trim"):
            return torch.ones_like(state["color"])
        return state["color"]

    def accepts(self, ctx, state):
        import torch

        if self.phase == "backward":
            return state["alive"] & torch.isinf(state["label"])
        return state["alive"]

    def update(self, ctx, state, combined, received):
        import torch

        alive, label, color = state["alive"], state["label"], state["color"]
        got = torch.where(received, combined, 0.0)
        if self.entering and self.phase == "backward":  # the roots start their components
            roots = alive & (color == state["id"])
            state["label"] = torch.where(roots, color, label)
            return roots, {"assigned": (int(roots.sum()), "sum")}
        if self.entering:  # a new round: the assigned vertices leave
            state["alive"] = alive = alive & torch.isinf(label)
            return alive.clone(), {"alive": (int(alive.sum()), "sum")}
        if self.phase == "trim-in":
            state["indeg"] = got
            return alive.clone(), {}
        if self.phase == "trim-out":
            alone = alive & ((state["indeg"] == 0) | (got == 0))
            state["label"] = torch.where(alone, state["id"], label)
            state["alive"] = alive = alive & ~alone
            state["color"] = torch.where(alive, state["id"], color)
            return alive.clone(), {"alive": (int(alive.sum()), "sum")}
        if self.phase == "forward":
            lower = received & alive & (combined < color)
            state["color"] = torch.where(lower, combined, color)
            return lower, {"lowered": (int(lower.sum()), "sum")}
        grow = received & alive & torch.isinf(label) & (combined == color)
        state["label"] = torch.where(grow, color, label)
        return grow, {"assigned": (int(grow.sum()), "sum")}

    def halt(self, ctx, votes):
        entering, self.entering = self.entering, False
        if self.phase == "trim-in" and not entering:
            self.phase = "trim-out"
        elif self.phase == "trim-out":
            if votes["alive"] == 0:
                return True
            self.phase = "forward"
        elif self.phase == "trim-in":  # a round started: anything left?
            return votes["alive"] == 0
        elif self.phase == "forward" and votes["lowered"] == 0:
            self.phase, self.entering = "backward", True
        elif self.phase == "backward" and not entering and votes["assigned"] == 0:
            self.phase, self.entering = "trim-in", True
        return False

    def result(self, ctx, state):
        return state["label"]

    def solve_in_memory(self, ctx, edges, state, schedule, max_iters):
        """``schedule="auto"``: the vertices without in- or out-edges trimmed, the
        component of the vertex of largest in x out degree from its forward and backward
        closures (two direction-optimizing searches on two threads), then Tarjan's
        algorithm on the rest, in numba
        (:func:`~graphsys.bsp.kernels_components.scc_multistep`); on an edge set stored
        undirected, :func:`wcc`'s union-find (each stored pair linked once) or Afforest.
        Recorded as one superstep, the same labels. ``max_iters`` not applied."""
        if schedule != "auto":
            return None
        adj = edges.adjacencies("csr") if self.undirected else edges.adjacencies("csr", "csc")
        out, into = adj[0][:2], adj[-1][:2]
        t0 = time.perf_counter()
        label = host_array(state["label"])
        if self.undirected:  # the weak components: union-find, or Afforest on dense graphs
            comp = np.empty(ctx.num_nodes, out[1].dtype)  # wcc's kernel signatures
            method = afforest.choose(ctx.num_nodes, edges.num_edges, False)
            read = (afforest.afforest(*out, *out, False, 0, comp)[0] if method == "afforest"
                    else afforest.union_find(*out, comp, True))
            label[:] = comp
        else:  # the labels are written straight into the result
            method = "pivot-tarjan"
            read, _ = scc_multistep(*out, *into, label)
        ss = SuperstepStats(superstep=0, active=ctx.num_nodes, direction=method,
                            edges_scanned=int(read), messages_sent=0, fused=True)
        ss.seconds["edges"] = time.perf_counter() - t0
        return Solved(method, [ss], 0)


@document_options()
def scc(graph, *, max_iters: int | None = None, schedule: str = "auto", mode: str = "auto",
        device: str = "cpu", backend: str = "auto", threads: int | None = None,
        edge_set: str | None = None, distributed: bool = False,
        progress: bool | Callable | None = None, readahead: int = 4,
        dense_divisor: float = DENSE_DIVISOR, fuse: bool = True) -> Result:
    """Strongly connected components: each node's label is the smallest internal id of its
    component (as :func:`wcc` labels weak ones).

    Two vertices share a component when each reaches the other along the edges' direction
    (networkx's :func:`~networkx.strongly_connected_components`, igraph's
    ``connected_components(mode="strong")``); on an edge set stored undirected the
    components are the weak ones (found as :func:`wcc` finds them). In memory on CPU the
    default schedule follows Multistep [3]_ in numba: the vertices without in- or
    out-edges are components of their own, the component of the vertex of largest in x
    out degree (on power-law graphs the giant one) is split off with a forward and a
    backward direction-optimizing search [4]_ (run at once on two threads), and Tarjan's
    algorithm [1]_ labels the rest. Otherwise the colouring algorithm of :class:`SCC` runs
    in supersteps [2]_ [3]_, in memory or streaming the buckets out of core.

    Parameters
    ----------
    %(graph)s
    max_iters : int, optional
        Most supersteps (default (N + 1)(2N + 6), more than any run takes; a round takes
        about twice the depth of its colours plus four).
    schedule : {"auto", "sync"}, default "auto"
        ``auto``: in memory on CPU, the forward-backward split and Tarjan in numba
        (recorded as one superstep, ``result.stats.method`` ``"pivot-tarjan"``; on an
        undirected edge set ``"union-find"`` or ``"afforest"``), else ``sync``; ``sync``:
        the colouring algorithm in BSP supersteps.
    %(engine_options)s

    Returns
    -------
    Result
        ``values``: float64 (N,) component labels by internal node id (the component's
        smallest internal id).

    Raises
    ------
    ParameterError
        An unknown ``schedule``, ``mode``, ``backend`` or ``device``.

    References
    ----------
    .. [1] R. Tarjan, "Depth-first search and linear graph algorithms", SIAM Journal on
       Computing 1(2), 1972.
    .. [2] S. Orzan, "On distributed verification and verified distribution", PhD thesis,
       Vrije Universiteit Amsterdam, 2004.
    .. [3] G. M. Slota, S. Rajamanickam, K. Madduri, "BFS and coloring-based parallel
       algorithms for strongly connected components and related problems", IPDPS 2014.
    .. [4] S. Beamer, K. Asanovic, D. Patterson, "Direction-optimizing breadth-first
       search", SC 2012.

    Examples
    --------
    Two cycles joined one way, and a node that only points into them:

    >>> import tempfile, numpy as np, graphsys
    >>> from graphsys import bsp
    >>> src, dst = np.array([1, 2, 3, 3, 4, 5, 6]), np.array([2, 3, 1, 4, 5, 4, 1])
    >>> g = graphsys.from_numpy(src, dst, tempfile.mkdtemp() + "/g")
    >>> components = {}
    >>> for node, label in bsp.scc(g).to_dict().items():
    ...     components.setdefault(label, []).append(node)
    >>> sorted(components.values())
    [[1, 2, 3], [4, 5], [6]]
    >>> bsp.scc(g, mode="out-of-core").to_dict() == bsp.scc(g).to_dict()
    True
    """
    return SCC_SPEC.run(graph, max_iters=max_iters, mode=mode, device=device, backend=backend,
                        threads=threads, distributed=distributed, progress=progress,
                        edge_set=edge_set, readahead=readahead, dense_divisor=dense_divisor,
                        fuse=fuse, schedule=schedule)


def _scc_program(graph, *, edge_set=None):
    return SCC(undirected=symmetric(graph, edge_set))


SCC_SPEC = AlgorithmSpec("scc", _scc_program, lambda n: (n + 1) * (2 * n + 6))
