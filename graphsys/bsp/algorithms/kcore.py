"""k-core decomposition by BSP peeling (core numbers as networkx ``core_number``)."""

from __future__ import annotations

from collections.abc import Callable

import torch

from graphsys.bsp.algorithms.common import symmetric
from graphsys.bsp.algorithms.spec import AlgorithmSpec
from graphsys.bsp.docstrings import document_options
from graphsys.bsp.edges import DENSE_DIVISOR
from graphsys.bsp.engine import Result, engine_options
from graphsys.bsp.program import VertexProgram


class KCore(VertexProgram):
    """Peel vertices of degree <= k; removed vertices tell their neighbours (sum of 1s),
    which lower their degree. When a superstep removes nothing, k rises to the smallest
    remaining degree (a global min aggregator). A vertex's core number is the k at which it
    is removed. Degree = in + out on a directed edge set (networkx's convention), the stored
    out-degree on an undirected one."""

    name = "kcore"
    message, combiner = "copy", "sum"
    halt_when_inactive = False

    def __init__(self, both_ways: bool = True):
        self.direction = "both" if both_ways else "out"

    def init(self, ctx):
        deg = ctx.degree("both" if self.direction == "both" else "out").clone()
        state = {"deg": deg, "alive": torch.ones_like(deg, dtype=torch.bool),
                 "core": torch.zeros_like(deg), "k": 0.0}
        return state, torch.zeros_like(deg, dtype=torch.bool)

    def aggregate(self, ctx, state):
        alive_deg = state["deg"][state["alive"]]
        low = alive_deg.min() if alive_deg.numel() else float("inf")
        return {"min_degree": (low, "min")}

    def send(self, ctx, state):
        return torch.ones_like(state["deg"])

    def update(self, ctx, state, combined, received):
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


@document_options()
def kcore(graph, *, max_iters: int | None = None, mode: str = "memory", device: str = "cpu",
          backend: str = "auto", threads: int | None = None, edge_set: str | None = None,
          distributed: bool = False, progress: Callable | None = None, readahead: int = 4,
          dense_divisor: float = DENSE_DIVISOR, fuse: bool = True) -> Result:
    """Core number of every node (the largest ``k`` of a k-core containing it).

    The values of networkx's :func:`networkx.core_number` (the decomposition of [1]_),
    computed by peeling in supersteps: every node of degree at most ``k`` is removed at
    once and its neighbours' degrees drop; when a superstep removes nothing, ``k`` rises
    to the smallest remaining degree (a global min aggregator). Degree is in + out on a
    directed edge set (networkx's convention), the stored degree on an undirected one;
    multi-edges count with their multiplicity.

    Parameters
    ----------
    graph : Graph or str or Path
        An opened graph or a graph directory.
    max_iters : int, optional
        Most supersteps (default 4N + 4: every superstep removes a node or raises ``k``).
    %(engine_options)s

    Returns
    -------
    Result
        ``values``: float64 (N,) core numbers by internal node id.

    Raises
    ------
    ParameterError
        An unknown ``mode``, ``backend`` or ``device``.

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
    return KCORE_SPEC.run(graph, max_iters=max_iters, **engine_options(locals()))


def _kcore_program(graph, *, edge_set=None):
    return KCore(both_ways=not symmetric(graph, edge_set))


#: At most 4N + 4 supersteps: every superstep removes at least one node or raises k.
KCORE_SPEC = AlgorithmSpec("kcore", _kcore_program, lambda n: 4 * n + 4)
