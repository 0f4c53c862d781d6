"""Weakly connected components (min-label propagation; in memory, Afforest or union-find)."""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from graphsys.bsp.algorithms.common import symmetric
from graphsys.bsp.algorithms.spec import AlgorithmSpec
from graphsys.bsp.docstrings import ENGINE_OPTIONS, cite, document_options, fill_doc
from graphsys.bsp.edges import DENSE_DIVISOR
from graphsys.bsp.engine import Result
from graphsys.bsp.incremental import components_from
from graphsys.bsp.program import Solved, VertexProgram, lower_to_min
from graphsys.bsp.stats import SuperstepStats
from graphsys.device import host_array
from graphsys.kernels import components as afforest


class WCC(VertexProgram):
    """Every vertex ends with the smallest global id of its weakly connected component.
    Labels start as global ids; messages go both ways along edges (one way when the edge
    set is stored undirected); only vertices whose label dropped send.

    Examples
    --------
    What :func:`wcc` runs (labels are internal ids; ``to_original`` names the nodes):

    >>> import tempfile, graphsys
    >>> from graphsys import bsp
    >>> g = graphsys.from_numpy([1, 2, 4], [2, 3, 5], tempfile.mkdtemp() + "/g")
    >>> result = bsp.run(g, bsp.WCC())
    >>> result.to_dict()
    {1: 0.0, 2: 0.0, 3: 0.0, 4: 3.0, 5: 3.0}
    >>> g.to_original(result.values.astype("int64")).tolist()
    [1, 1, 1, 4, 4]
    """

    name = "wcc"
    message, combiner = "copy", "min"
    relax_state = "label"
    host_state = True  # init and result are Context calls

    def __init__(self, both_ways: bool = True):
        self.direction = "both" if both_ways else "out"

    def init(self, ctx):
        # filled by Context (NumPy on the CPU: a torch conversion or fill of this size
        # wakes torch's thread pool, which costs more than the work on a small graph)
        return {"label": ctx.node_range(np.float64)}, ctx.full(True, bool)

    def send(self, ctx, state):
        return state["label"]

    def result(self, ctx, state):
        return state["label"]

    def update(self, ctx, state, combined, received):
        return lower_to_min(state, "label", combined, received)

    def solve_in_memory(self, ctx, edges, state, schedule, max_iters):
        """``schedule="auto"``: union-find in one numba call, Afforest or a one-pass
        union-find as :func:`graphsys.kernels.components.choose` picks for the graph's average
        degree (``stats.method``); recorded as one superstep. ``max_iters`` not applied."""
        if schedule != "auto":
            return None
        directed = self.direction == "both"
        method = afforest.choose(ctx.num_nodes, edges.num_edges, directed)
        both = method == "afforest" and directed
        adj = edges.adjacencies("csr", "csc") if both else edges.adjacencies("csr")
        indptr, idx, _ = adj[0]
        into = adj[-1][:2]
        t0 = time.perf_counter()
        comp = np.empty(ctx.num_nodes, idx.dtype)
        if method == "afforest":
            read, _ = afforest.afforest(indptr, idx, *into, directed, 0, comp)
        else:
            read = afforest.union_find(indptr, idx, comp, not directed)
        host_array(state["label"])[:] = comp
        ss = SuperstepStats(superstep=0, active=ctx.num_nodes, direction=method,
                            edges_scanned=int(read), messages_sent=int(read), fused=True)
        ss.seconds["edges"] = time.perf_counter() - t0
        return Solved(method, [ss], 0)


@document_options(*ENGINE_OPTIONS, "init", "device_budget")
@fill_doc(references=cite("afforest", "pregel"))
def wcc(graph, *, max_iters: int | None = None, schedule: str = "auto", mode: str = "auto",
        device: str = "cpu", backend: str = "auto", threads: int | None = None,
        edge_set: str | None = None, distributed: bool = False,
        progress: bool | Callable | None = None, readahead: int = 4,
        dense_divisor: float = DENSE_DIVISOR, fuse: bool = True, init=None,
        device_budget: int | float | None = None) -> Result:
    """Weakly connected components: each node's label is the smallest internal id in its
    component.

    Edges are followed in both directions (once where the edge set is stored
    undirected). The BSP program propagates the minimum label; in memory on CPU the
    default schedule runs a union-find instead (Afforest [1]_ on graphs dense enough for
    its neighbour sampling to skip most edges, a one-pass union-find on sparser ones),
    with the same labels.

    Parameters
    ----------
    %(graph)s
    max_iters : int, optional
        Most supersteps (default N + 1: enough for any component).
    schedule : {"auto", "sync", "async"}, default "auto"
        ``auto``: in memory on CPU, Afforest or union-find in one numba call (recorded as
        one superstep), else ``sync``. ``sync``: min-label propagation in BSP supersteps
        [2]_. ``async``: a FIFO work list to the same labels (in memory, CPU, one
        process). ``result.stats.method`` names what ran.
    %(engine_options)s

    Returns
    -------
    Result
        ``values``: float64 (N,) component labels by internal node id (nodes with equal
        labels share a component; the label is the component's smallest internal id, not
        an original id).

    Raises
    ------
    ParameterError
        An unknown ``schedule``, ``mode``, ``backend`` or ``device``.

    References
    ----------
    %(references)s

    Examples
    --------
    >>> import tempfile, numpy as np, graphsys
    >>> from graphsys import bsp
    >>> src, dst = np.array([1, 2, 4, 6]), np.array([2, 3, 5, 4])
    >>> g = graphsys.from_numpy(src, dst, tempfile.mkdtemp() + "/g")
    >>> components = {}
    >>> for node, label in bsp.wcc(g).to_dict().items():
    ...     components.setdefault(label, []).append(node)
    >>> sorted(components.values())
    [[1, 2, 3], [4, 5, 6]]
    """
    return WCC_SPEC.run(graph, max_iters=max_iters, init=init, mode=mode, device=device,
                        backend=backend, threads=threads, distributed=distributed,
                        progress=progress, edge_set=edge_set, readahead=readahead,
                        dense_divisor=dense_divisor, fuse=fuse, schedule=schedule,
                        device_budget=device_budget)


def _wcc_program(graph, *, edge_set=None):
    return WCC(both_ways=not symmetric(graph, edge_set))


WCC_SPEC = AlgorithmSpec("wcc", _wcc_program, lambda n: n + 1, warm_start=components_from)
