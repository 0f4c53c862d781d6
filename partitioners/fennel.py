"""FENNEL one-pass streaming partitioning (Tsourakakis et al., WSDM 2014): few cut edges.

:class:`FennelPartitioner` places each node, in one pass over a seeded random order, in
the partition that holds most of its already-placed neighbours, less a penalty that grows
with the partition's size, under a hard capacity.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numba
import numpy as np

from partitioners.base import PartitionContext, Partitioner

ORDERS = ("random", "natural")


@numba.njit(cache=True, nogil=True)
def _fennel(indptr: np.ndarray, indices: np.ndarray, order: np.ndarray, natural: bool,
            num_partitions: int, alpha: float, gamma: float, capacity: int,
            out: np.ndarray) -> None:
    """Stream the nodes (``order``, or 0..N-1 if ``natural``) and assign each greedily.

    ``out`` is int32 of shape (N,); it is set to -1 then filled. ``counts`` holds
    |N(v) ∩ S_p| for the current node and is cleared after each node; ``penalty`` caches
    alpha * gamma * |S_p|**(gamma - 1), refreshed only for the partition that grew.
    """
    n = out.shape[0]
    out[:] = -1
    sizes = np.zeros(num_partitions, dtype=np.int64)
    counts = np.zeros(num_partitions, dtype=np.int64)
    penalty = np.zeros(num_partitions, dtype=np.float64)
    for k in range(n):
        v = k if natural else order[k]
        for e in range(indptr[v], indptr[v + 1]):
            p = out[indices[e]]
            if p >= 0:
                counts[p] += 1
        best = -1
        best_score = 0.0
        for p in range(num_partitions):
            if sizes[p] < capacity:
                score = counts[p] - penalty[p]
                if best < 0 or score > best_score or (score == best_score
                                                      and sizes[p] < sizes[best]):
                    best = p
                    best_score = score
            counts[p] = 0
        out[v] = best
        sizes[best] += 1
        penalty[best] = alpha * gamma * sizes[best] ** (gamma - 1.0)


def _real(name: str, value: Any) -> float:
    """``value`` as a finite float, or ValueError naming the parameter."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) \
            or not math.isfinite(value):
        raise ValueError(f"fennel parameter {name} must be a finite number, got {value!r}")
    return float(value)


class FennelPartitioner(Partitioner):
    """FENNEL: one streaming pass that places each node next to its already-placed neighbors.

    Nodes arrive in a seeded random order (``order="random"``) or in id order
    (``order="natural"``). Node v goes to the partition p maximizing

        score(p) = |N(v) ∩ S_p| - alpha * gamma * |S_p| ** (gamma - 1)

    among partitions with |S_p| < C, the hard capacity C = max(ceil(N / P), floor(nu * N / P))
    nodes; ties go to the smaller partition, then the lower index. S_p is the set of nodes
    placed in p so far and N(v) the neighbors of v in ``ctx.adjacency()`` (with multiplicity).
    The default alpha is the paper's m * P**(gamma - 1) / N**gamma, i.e. sqrt(P) * m / N**1.5
    at gamma = 1.5, with m = indptr[-1] / 2 the undirected edge count.

    Time O(E + N P); memory beyond the CSR: the int32 output, the stream order (int32 if
    N < 2**31, else int64; none for ``"natural"``) and O(P).

    Parameters
    ----------
    num_partitions : int
        ``P >= 1``.
    seed : int, default 0
        Seed of the stream order (with ``order="random"``).
    gamma : float, default 1.5
        Exponent of the size penalty, > 1.
    nu : float, default 1.1
        Capacity slack, >= 1: no partition exceeds ``nu * N / P`` nodes (or
        ``ceil(N / P)``, when that is larger).
    alpha : float, optional
        Weight of the size penalty, >= 0; default the paper's formula above.
    order : {"random", "natural"}, default "random"
        The stream order: a permutation drawn from the seed, or id order.

    Raises
    ------
    ValueError
        A parameter out of range, naming it.

    References
    ----------
    .. [1] C. Tsourakakis, C. Gkantsidis, B. Radunovic and M. Vojnovic, "FENNEL:
       Streaming Graph Partitioning for Massive Scale Graphs", ACM International
       Conference on Web Search and Data Mining (WSDM), 2014.

    Examples
    --------
    Two 4-cycles joined by one edge: Fennel cuts only the bridge.

    >>> import numpy as np
    >>> from partitioners import EdgeListContext, FennelPartitioner
    >>> ctx = EdgeListContext(8, src=[0, 1, 2, 0, 4, 5, 6, 4, 3],
    ...                       dst=[1, 2, 3, 3, 5, 6, 7, 7, 4])
    >>> parts = FennelPartitioner(2, seed=0).assign(ctx)
    >>> parts.tolist()
    [0, 0, 0, 0, 1, 1, 1, 1]
    >>> int(np.sum(parts[ctx.src] != parts[ctx.dst]))  # cut edges
    1
    """

    name = "fennel"

    def __init__(self, num_partitions: int, *, seed: int = 0, gamma: float = 1.5,
                 nu: float = 1.1, alpha: float | None = None, order: str = "random",
                 **params: Any):
        super().__init__(num_partitions, seed=seed, **params)
        self.gamma = _real("gamma", gamma)
        if self.gamma <= 1.0:
            raise ValueError(f"fennel parameter gamma must be > 1, got {gamma!r}")
        self.nu = _real("nu", nu)
        if self.nu < 1.0:
            raise ValueError(f"fennel parameter nu must be >= 1, got {nu!r}")
        self.alpha = None if alpha is None else _real("alpha", alpha)
        if self.alpha is not None and self.alpha < 0.0:
            raise ValueError(f"fennel parameter alpha must be >= 0, got {alpha!r}")
        if order not in ORDERS:
            raise ValueError(f"fennel parameter order must be one of {', '.join(ORDERS)}, "
                             f"got {order!r}")
        self.order = order

    def params(self) -> dict[str, Any]:
        return {**super().params(), "gamma": self.gamma, "nu": self.nu, "alpha": self.alpha,
                "order": self.order}

    def capacity(self, num_nodes: int) -> int:
        """Most nodes any partition may hold: max(ceil(N / P), floor(nu * N / P)), at most N."""
        p = self.num_partitions
        slack = self.nu * num_nodes / p  # may be inf, and past int64: no partition holds > N
        return num_nodes if slack >= num_nodes else max(-(-num_nodes // p), math.floor(slack))

    def resolved_alpha(self, num_nodes: int, num_edges: float) -> float:
        """alpha, or m * P**(gamma - 1) / N**gamma for ``num_edges`` = m undirected edges."""
        if self.alpha is not None:
            return self.alpha
        if num_nodes == 0 or num_edges == 0:
            return 0.0
        try:
            return num_edges * self.num_partitions ** (self.gamma - 1.0) / num_nodes ** self.gamma
        except OverflowError:  # a large gamma: the same quotient in logarithms, capped
            return math.exp(min(math.log(num_edges) + (self.gamma - 1.0) * math.log(
                self.num_partitions) - self.gamma * math.log(num_nodes), 709.0))

    def assign(self, ctx: PartitionContext) -> np.ndarray:
        n = ctx.num_nodes
        indptr, indices = (np.asarray(a) for a in ctx.adjacency())
        if indptr.shape != (n + 1,):
            raise ValueError(f"ctx.adjacency() indptr has shape {indptr.shape}, "
                             f"expected ({n + 1},)")
        alpha = self.resolved_alpha(n, float(indptr[-1]) / 2.0)
        natural = self.order == "natural"
        if natural:
            order = np.zeros(0, dtype=np.int32)
        else:
            order = np.arange(n, dtype=np.int32 if n < 2**31 else np.int64)
            np.random.default_rng(self.seed).shuffle(order)
        out = np.empty(n, dtype=np.int32)
        _fennel(indptr, indices, order, natural, self.num_partitions, alpha, self.gamma,
                self.capacity(n), out)
        return out
