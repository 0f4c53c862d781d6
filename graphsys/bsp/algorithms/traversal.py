"""Frontier traversals: BFS levels and single-source shortest paths (Bellman-Ford)."""

from __future__ import annotations

import time
from collections.abc import Callable

import numba

from graphsys.bsp.algorithms.bfs_device import solve_on_device
from graphsys.bsp.algorithms.common import (
    check_weights_non_negative,
    source_index,
    split_seconds,
    symmetric,
)
from graphsys.bsp.algorithms.spec import AlgorithmSpec
from graphsys.bsp.docstrings import ENGINE_OPTIONS, cite, document_options, fill_doc
from graphsys.bsp.edges import DENSE_DIVISOR
from graphsys.bsp.engine import Result
from graphsys.bsp.incremental import distances_from
from graphsys.bsp.kernels_bfs import bfs_solve
from graphsys.bsp.program import Solved, VertexProgram, lower_to_min
from graphsys.bsp.stats import SuperstepStats
from graphsys.device import host_array

INF = float("inf")


class _FromSource(VertexProgram):
    """A min-relaxation from one ``source`` (global id): the state :attr:`relax_state`
    starts at ``inf`` everywhere but 0 at the source, the only active vertex; a received
    minimum below a vertex's value lowers it and makes the vertex active. Subclasses name
    the state (``relax_state``) and say what a vertex sends."""

    def __init__(self, source: int):
        self.source = source

    def init(self, ctx):
        value, frontier = ctx.full(INF), ctx.full(False, bool)  # the source alone
        if ctx.lo <= self.source < ctx.hi:
            value[self.source - ctx.lo] = 0.0
            frontier[self.source - ctx.lo] = True
        return {self.relax_state: value}, frontier

    def update(self, ctx, state, combined, received):
        return lower_to_min(state, self.relax_state, combined, received)

    def result(self, ctx, state):
        return state[self.relax_state]


class BFS(_FromSource):
    """Hop levels from ``source`` (global id) along edge direction; ``inf`` = unreachable.

    Frontier = vertices reached in the previous superstep; a pull only visits unreached
    targets (``accepts``) and stops at their first frontier in-neighbour.

    Examples
    --------
    What :func:`bfs` runs; the program takes the source's internal id:

    >>> import tempfile, numpy as np, graphsys
    >>> from graphsys import bsp
    >>> src, dst = np.array([1, 2, 3, 1, 5]), np.array([2, 3, 4, 3, 1])
    >>> g = graphsys.from_numpy(src, dst, tempfile.mkdtemp() + "/g")
    >>> source = int(g.to_internal([1])[0])
    >>> bsp.run(g, bsp.BFS(source)).to_dict()
    {1: 0.0, 2: 1.0, 3: 1.0, 4: 2.0, 5: inf}
    """

    name = "bfs"
    message, combiner, direction = "copy", "min", "out"
    first_message_wins = True
    relax_state, relax_offset = "level", 1.0
    host_state = True  # init and result are Context calls and indexing

    def send(self, ctx, state):
        return state["level"] + 1.0

    def accepts(self, ctx, state):
        import torch

        return torch.isinf(state["level"])

    def solve_in_memory(self, ctx, edges, state, schedule, max_iters):
        """``schedule="auto"``: direction-optimizing BFS in one numba call
        (:func:`~graphsys.bsp.kernels_bfs.bfs_solve`; bottom-up steps read the CSC, or the
        CSR of a symmetric edge set). One superstep is recorded per *phase* (a run of
        levels in one direction: ``superstep`` = its first level, ``active`` = the vertices
        expanded, ``messages_combined`` = the vertices it reached), not per level."""
        if schedule != "auto":
            return None
        adj = (edges.adjacencies("csr") if symmetric(ctx.graph, ctx.edge_set)
               else edges.adjacencies("csr", "csc"))
        out, into = adj[0][:2], adj[-1][:2]
        t0 = time.perf_counter()
        rows, pulled, num_left = bfs_solve(*out, *into, self.source, host_array(state["level"]),
                                           max_iters, numba.get_num_threads())
        seconds = time.perf_counter() - t0
        supersteps = []
        for (first, _, active, e, reached), w in zip(rows.tolist(), split_seconds(
                seconds, rows[:, 2] + rows[:, 3])):
            ss = SuperstepStats(superstep=first, active=active,
                                direction="pull" if pulled[first] else "push",
                                edges_scanned=e, messages_sent=e, messages_combined=reached,
                                fused=True)
            ss.seconds["edges"] = w
            supersteps.append(ss)
        return Solved("direction-optimizing-bfs", supersteps, num_left)

    def solve_on_device(self, ctx, edges, state, schedule, max_iters):
        """The torch backend in memory (``schedule`` ``auto`` or ``sync``): the lean
        direction-optimizing supersteps of :mod:`~graphsys.bsp.algorithms.bfs_device`, one
        per level, pushed or pulled as the CPU search does, one host read each."""
        return solve_on_device(self, ctx, edges, state, schedule, max_iters)


class SSSP(_FromSource):
    """Shortest-path distances (sum of float32 weights, 1 where unweighted) from ``source``;
    a vertex whose distance dropped sends ``dist + w`` along its out-edges.

    Examples
    --------
    What :func:`sssp` runs; the program takes the source's internal id:

    >>> import tempfile, numpy as np, graphsys
    >>> from graphsys import bsp
    >>> src, dst = np.array([1, 1, 2, 3]), np.array([2, 3, 3, 4])
    >>> w = np.array([1.0, 5.0, 1.5, 0.5])
    >>> g = graphsys.from_numpy(src, dst, tempfile.mkdtemp() + "/g", weight=w)
    >>> bsp.run(g, bsp.SSSP(int(g.to_internal([1])[0]))).to_dict()
    {1: 0.0, 2: 1.0, 3: 2.5, 4: 3.0}
    """

    name = "sssp"
    message, combiner, direction = "add_weight", "min", "out"
    uses_weights = True
    relax_state = "dist"

    def send(self, ctx, state):
        return state["dist"]


_SOURCE_DOC = """graph : Graph or str or Path
    An opened graph or a graph directory.
source : int or str
    Original id of the node the search starts from."""

@document_options(*ENGINE_OPTIONS, "init", "device_budget")
@fill_doc(source=_SOURCE_DOC, references=cite("pregel", "beamer", "ligra"))
def bfs(graph, source, *, max_iters: int | None = None, schedule: str = "auto",
        mode: str = "auto", device: str = "cpu", backend: str = "auto",
        threads: int | None = None, edge_set: str | None = None, distributed: bool = False,
        progress: bool | Callable | None = None, readahead: int = 4,
        dense_divisor: float = DENSE_DIVISOR, fuse: bool = True, init=None,
        device_budget: int | float | None = None) -> Result:
    """Breadth-first search levels (hops from ``source`` along edge direction).

    Parameters
    ----------
    %(source)s
    max_iters : int, optional
        Most supersteps, one per level (default N + 1: every reachable node).
    schedule : {"auto", "sync", "async"}, default "auto"
        ``auto``: in memory on CPU, the direction-optimizing BFS [2]_ in one numba call
        (top-down while the frontier is small, bottom-up while it is large; one
        recorded superstep per run of levels in one direction), else ``sync``. ``sync``:
        one BSP superstep per level, pushed or pulled by Ligra's rule [3]_. ``async``: a
        FIFO work list to the same levels (in memory, CPU, one process). On the torch
        backend in memory (the CPU or CUDA), ``auto`` and ``sync`` run lean supersteps on
        the device (:mod:`~graphsys.bsp.algorithms.bfs_device`): one per level, top-down
        or bottom-up by the CPU search's rule, a few torch ops and one host read each
        (``fuse=False``: the engine's supersteps). ``result.stats.method`` names what ran.
    %(engine_options)s

    Returns
    -------
    Result
        ``values``: float64 (N,) levels by internal node id: 0 at ``source``, ``inf``
        where it cannot reach. ``result.to_dict()``, ``result.value(id)`` and
        ``result.top(k, largest=False)`` speak original ids.

    Raises
    ------
    GraphsysError
        ``source`` is not a node of the graph, or ``schedule="async"`` outside memory mode.
    ParameterError
        An unknown ``schedule``, ``mode``, ``backend`` or ``device``.

    References
    ----------
    %(references)s

    Examples
    --------
    >>> import tempfile, numpy as np, graphsys
    >>> from graphsys import bsp
    >>> src, dst = np.array([1, 2, 3, 1, 5]), np.array([2, 3, 4, 3, 1])
    >>> g = graphsys.from_numpy(src, dst, tempfile.mkdtemp() + "/g")
    >>> result = bsp.bfs(g, 1)
    >>> result.to_dict()
    {1: 0.0, 2: 1.0, 3: 1.0, 4: 2.0, 5: inf}
    >>> result.top(2)
    [(5, inf), (4, 2.0)]
    """
    return BFS_SPEC.run(graph, source, max_iters=max_iters, init=init, mode=mode, device=device,
                        backend=backend, threads=threads, distributed=distributed,
                        progress=progress, edge_set=edge_set, readahead=readahead,
                        dense_divisor=dense_divisor, fuse=fuse, schedule=schedule,
                        device_budget=device_budget)


@document_options(*ENGINE_OPTIONS, "init", "device_budget")
@fill_doc(source=_SOURCE_DOC, references=cite("pregel"))
def sssp(graph, source, *, max_iters: int | None = None, schedule: str = "sync",
         mode: str = "auto", device: str = "cpu", backend: str = "auto",
         threads: int | None = None, edge_set: str | None = None, distributed: bool = False,
         progress: bool | Callable | None = None, readahead: int = 4,
         dense_divisor: float = DENSE_DIVISOR, fuse: bool = True, init=None,
         device_budget: int | float | None = None) -> Result:
    """Single-source shortest-path distances (label-correcting Bellman-Ford supersteps).

    Every node whose distance dropped sends ``distance + weight`` along its out-edges;
    the targets keep the minimum (Pregel's shortest-paths program [1]_). Edge weights are
    the edge set's float32 weights, 1 where it has none.

    Parameters
    ----------
    %(source)s
    max_iters : int, optional
        Most supersteps (default N + 1: enough for any shortest path).
    schedule : {"sync", "async"}, default "sync"
        ``sync``: BSP supersteps; ``async``: a FIFO work list to the same distances (in
        memory, CPU, one process), far less work on high-diameter graphs.
    %(engine_options)s

    Returns
    -------
    Result
        ``values``: float64 (N,) distances by internal node id: 0 at ``source``, ``inf``
        where it cannot reach.

    Raises
    ------
    GraphsysError
        A negative (or NaN) edge weight, found before running, or ``source`` not a node.
    ParameterError
        An unknown ``schedule``, ``mode``, ``backend`` or ``device``.

    References
    ----------
    %(references)s

    Examples
    --------
    >>> import tempfile, numpy as np, graphsys
    >>> from graphsys import bsp
    >>> src, dst = np.array([1, 1, 2, 3]), np.array([2, 3, 3, 4])
    >>> w = np.array([1.0, 5.0, 1.5, 0.5])
    >>> g = graphsys.from_numpy(src, dst, tempfile.mkdtemp() + "/g", weight=w)
    >>> bsp.sssp(g, 1).to_dict()
    {1: 0.0, 2: 1.0, 3: 2.5, 4: 3.0}
    """
    return SSSP_SPEC.run(graph, source, max_iters=max_iters, init=init, mode=mode, device=device,
                         backend=backend, threads=threads, distributed=distributed,
                         progress=progress, edge_set=edge_set, readahead=readahead,
                         dense_divisor=dense_divisor, fuse=fuse, schedule=schedule,
                         device_budget=device_budget)


def _bfs_program(graph, *, source, edge_set=None):
    return BFS(source_index(graph, source))


def _sssp_program(graph, *, source, edge_set=None):
    check_weights_non_negative(graph, edge_set)
    return SSSP(source_index(graph, source))


BFS_SPEC = AlgorithmSpec("bfs", _bfs_program, lambda n: n + 1, needs_source=True,
                         warm_start=distances_from)
SSSP_SPEC = AlgorithmSpec("sssp", _sssp_program, lambda n: n + 1, needs_source=True,
                          warm_start=distances_from)
