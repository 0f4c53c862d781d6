r"""HITS hubs and authorities (Kleinberg 1999) by power iteration, as networkx defines them.

.. math::
    a^{(k)} = A^\top h^{(k)}, \qquad
    h^{(k+1)} = \frac{A\, a^{(k)}}{\max_u (A\, a^{(k)})_u}, \qquad h^{(0)} = \mathbf{1}

with :math:`A_{uv}` the weight of edge ``u -> v`` (1 unweighted; multi-edges add), as
networkx's :func:`~networkx.hits` builds :math:`A`. The vertex program switches direction
every superstep (even ones compute authorities, odd ones hubs); both columns are finally
scaled to sum 1 (networkx's ``normalized=True``).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from graphsys.bsp.algorithms.common import resolve_weighted
from graphsys.bsp.algorithms.spec import AlgorithmSpec
from graphsys.bsp.docstrings import document_options
from graphsys.bsp.edges import DENSE_DIVISOR
from graphsys.bsp.engine import Result
from graphsys.bsp.kernels_centrality import hits_solve
from graphsys.bsp.program import Solved, VertexProgram
from graphsys.bsp.stats import SuperstepStats
from graphsys.device import host_array
from graphsys.errors import check_real

#: Most supersteps by default (two per power iteration): luxembourg-osm's hubs settle below
#: tol 1e-8 after 5,849 (the gap between its top two singular values is tiny)
DEFAULT_MAX_ITERS = 20_000


class HITS(VertexProgram):
    """Hubs and authorities; :meth:`result` is float64 (N_local, 2): hub, authority
    (unnormalised: :func:`hits` scales the columns).

    Examples
    --------
    >>> import tempfile, graphsys
    >>> from graphsys import bsp
    >>> g = graphsys.from_numpy([1, 1, 2, 3], [2, 3, 3, 1], tempfile.mkdtemp() + "/g")
    >>> hub, authority = bsp.run(g, bsp.HITS()).values.T
    >>> (hub / hub.sum()).round(3).tolist(), (authority / authority.sum()).round(3).tolist()
    ([0.618, 0.382, 0.0], [0.0, 0.382, 0.618])
    """

    name = "hits"
    message, combiner = "mul_weight", "sum"
    host_state = True  # init and result are Context calls (in memory: no torch)
    uses_weights = True

    def __init__(self, tol: float = 1e-8, weighted: bool = True):
        tol = check_real("tol", tol, low=0, low_open=True)
        self.tol, self.step, self.hub_max = tol, 0, 1.0
        if not weighted:  # every edge counts 1: the weights are not even read
            self.message, self.uses_weights = "copy", False

    @property
    def direction(self) -> str:
        return "out" if self.step % 2 == 0 else "in"

    def init(self, ctx):
        self.step, self.hub_max = 0, 1.0
        state = {"hub": ctx.full(1.0), "auth": ctx.full(0.0), "last": ctx.full(0.0)}
        return state, ctx.full(True, bool)

    def send(self, ctx, state):
        return state["hub"] / self.hub_max if self.step % 2 == 0 else state["auth"]

    def update(self, ctx, state, combined, received):
        import torch

        got = torch.where(received, combined, 0.0)
        if self.step % 2 == 0:  # authorities of the (scaled) hub vector just sent
            state["hub"] = state["hub"] / self.hub_max
            state["auth"] = got
            votes = {"change": ((state["hub"] - state["last"]).abs().sum(), "sum")}
        else:  # new hubs; scaled by their global max before they are sent
            state["last"] = state["hub"]
            state["hub"] = got
            votes = {"max": (got.max() if got.numel() else 0.0, "max")}
        self.step += 1
        return torch.ones_like(received), votes

    def halt(self, ctx, votes):
        if "max" in votes:
            self.hub_max = votes["max"] or 1.0
            return False
        return votes["change"] < self.tol

    def result(self, ctx, state):
        if isinstance(state["hub"], np.ndarray):  # NumPy state (ctx.host)
            return np.stack([state["hub"], state["auth"]], 1)
        import torch

        return torch.stack([state["hub"], state["auth"]], 1)

    def solve_in_memory(self, ctx, edges, state, schedule, max_iters):
        """``schedule="auto"``: the same power iteration over numba kernels
        (:func:`~graphsys.bsp.kernels_centrality.hits_solve`: a pull per superstep, no
        engine superstep); the same stopping rule and supersteps, each recorded with the
        run's time split evenly."""
        if schedule != "auto":
            return None
        csr, csc = edges.adjacencies("csr", "csc")
        t0 = time.perf_counter()
        hub, auth = host_array(state["hub"]), host_array(state["auth"])
        steps, converged = hits_solve(*csc, *csr, self.uses_weights, self.tol, max_iters,
                                      hub, auth)
        self.step = steps
        seconds = (time.perf_counter() - t0) / max(steps, 1)
        supersteps = []
        for step in range(steps):
            ss = SuperstepStats(superstep=step, active=ctx.num_nodes,
                                direction="pull", edges_scanned=edges.num_edges,
                                messages_sent=edges.num_edges, fused=True)
            ss.seconds["edges"] = seconds
            supersteps.append(ss)
        return Solved("fused-hits", supersteps, 0 if converged else ctx.num_nodes)


@document_options()
def hits(graph, *, tol: float = 1e-8, max_iters: int | None = None,
         weighted: bool | None = None, schedule: str = "auto", mode: str = "auto",
         device: str = "cpu", backend: str = "auto", threads: int | None = None,
         edge_set: str | None = None, distributed: bool = False,
         progress: bool | Callable | None = None, readahead: int = 4,
         dense_divisor: float = DENSE_DIVISOR, fuse: bool = True) -> Result:
    """Hub and authority scores (HITS [1]_), as networkx's :func:`networkx.hits`.

    Power iteration: authorities are the (weighted) sum of the hub scores of their
    in-neighbours, hubs the sum of the authority scores of their out-neighbours, hubs
    scaled by their maximum each round; at the end each column is scaled to sum to 1.
    Edge weights multiply the scores (1 where the edge set has none, or with
    ``weighted=False``), as networkx's :func:`networkx.hits` reads the ``weight``
    attribute. Even supersteps send along edges, odd ones against them; in memory on CPU
    the same iteration runs in numba calls (``result.stats.method`` ``"fused-hits"``).
    **Convergence rule**: the run stops after the authorities of a hub vector (scaled to
    max 1) whose L1 change from the previous one is below ``tol``.

    Parameters
    ----------
    %(graph)s
    tol : float, default 1e-8
        Stop when the L1 change of the hub vector falls below ``tol``.
    max_iters : int, optional
        Most supersteps (default 20,000); two supersteps make one power iteration. Where
        they run out first, ``result.stats.converged`` is False, the values are the last
        iterate, not the scores, and a :class:`~graphsys.errors.ConvergenceWarning` is
        issued (networkx raises instead; ``graphsys run`` refuses).
    schedule : {"auto", "sync"}, default "auto"
        ``auto``: in memory on CPU, the same supersteps as numba pulls; ``sync``: BSP
        supersteps.
    weighted : bool, optional
        Multiply by the edge weights: None (default) when the edge set has weights, True
        requires them, False counts every edge as 1. ``result.stats.weighted`` records
        which was computed. Negative weights (signed ratings) are read as networkx reads
        them: a column whose scores sum to a negative number is divided by that sum too.
    %(engine_options)s

    Returns
    -------
    Result
        ``values``: float64 (N, 2) by internal node id: column 0 the hub scores, column 1
        the authority scores, each summing to 1 (all 0 on a graph without edges, where no
        node is a hub or an authority). ``result.to_dict()`` maps each original
        id to ``[hub, authority]``; ``result.top(k)`` ranks the authorities,
        ``result.top(k, column="hub")`` the hubs (``result.columns``).

    Raises
    ------
    ParameterError
        ``tol`` not positive, ``weighted`` True on an edge set without weights, or an
        unknown ``mode``, ``backend`` or ``device``.

    References
    ----------
    .. [1] J. M. Kleinberg, "Authoritative sources in a hyperlinked environment", Journal
       of the ACM 46(5), 1999.

    Examples
    --------
    >>> import tempfile, numpy as np, graphsys
    >>> from graphsys import bsp
    >>> src, dst = np.array([1, 1, 2, 3]), np.array([2, 3, 3, 1])
    >>> g = graphsys.from_numpy(src, dst, tempfile.mkdtemp() + "/g")
    >>> scores = bsp.hits(g, tol=1e-12).to_dict()
    >>> {node: [round(hub, 3), round(auth, 3)] for node, (hub, auth) in scores.items()}
    {1: [0.618, 0.0], 2: [0.382, 0.382], 3: [0.0, 0.618]}
    """
    return HITS_SPEC.run(graph, tol=tol, max_iters=max_iters, weighted=weighted, mode=mode,
                         device=device, backend=backend, threads=threads, distributed=distributed,
                         progress=progress, edge_set=edge_set, readahead=readahead,
                         dense_divisor=dense_divisor, fuse=fuse, schedule=schedule)


def _hits_program(graph, *, edge_set=None, tol: float = 1e-8, weighted: bool | None = None):
    return HITS(tol, weighted=resolve_weighted(graph, edge_set, weighted))


def _normalise(res):
    """Scale each column of ``res.values`` to sum to 1, and name the columns. The sum may
    be negative (signed weights: networkx divides by it alike, which fixes the singular
    vector's sign); a zero one (no edges) leaves the column as it is."""
    total = res.values.sum(axis=0)
    res.values = res.values / np.where(total != 0, total, 1.0)
    res.columns = ("hub", "authority")
    return res


HITS_SPEC = AlgorithmSpec("hits", _hits_program, lambda n: DEFAULT_MAX_ITERS,
                          parameters=("tol", "weighted"), finish=_normalise)
