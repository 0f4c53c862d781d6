"""Negative samplers for link prediction: uniform, and PinSage's hard negatives.

Hard negatives (Ying et al., 2018, section 3.3): items that are related to the query but
not as related as the positive. Items are ranked by their personalized-PageRank score with
respect to the query item on the item -> other -> item meta-path graph, and negatives are
drawn uniformly from the ranks ``[rank_lo, rank_hi)`` (PinSage used 2000-5000 on billions
of pins; small graphs need a proportionally smaller band).
"""

from __future__ import annotations

import threading

import numpy as np
import scipy.sparse as sp
import torch

from graphsys.errors import GraphsysError
from graphsys.sampling._util import as_seed_array
from graphsys.sampling.adjacency import Adjacency


class UniformNegativeSampler:
    """``num_negatives`` node ids per query drawn uniformly from ``[0, num_nodes)``."""

    def __init__(self, num_nodes: int, num_negatives: int = 1):
        if num_nodes < 1 or num_negatives < 1:
            raise GraphsysError("num_nodes and num_negatives must be >= 1")
        self.num_nodes, self.num_negatives = int(num_nodes), int(num_negatives)

    def __call__(self, queries, rng_seed: int = 0) -> torch.Tensor:
        """int64 (Q, num_negatives)."""
        q = as_seed_array(queries, self.num_nodes, "query")
        rng = np.random.default_rng(rng_seed)
        return torch.from_numpy(rng.integers(0, self.num_nodes, (len(q), self.num_negatives),
                                             dtype=np.int64))


def _row_normalised(adj: Adjacency) -> sp.csr_matrix:
    m = adj.to_scipy().astype(np.float64)
    m.data[:] = 1.0
    deg = np.asarray(m.sum(axis=1)).ravel()
    inv = np.divide(1.0, deg, out=np.zeros_like(deg), where=deg > 0)
    return sp.diags(inv) @ m


def metapath_ppr(fw: Adjacency, bw: Adjacency, queries: np.ndarray, *,
                 damping: float = 0.85, num_iters: int = 20) -> np.ndarray:
    """Personalized PageRank over a meta-path, from each query node: scores of every
    ``ntype`` node, float64 (Q, N). (The BSP engine's
    :func:`graphsys.bsp.personalized_pagerank` is PPR over a stored graph's edges, from one
    weighted source set; ``damping`` means the same in both: the probability of following
    an edge rather than restarting.)

    Power iteration of ``x <- (1 - damping) e_q + damping x P`` with ``P`` the meta-path walk
    matrix ``D_fw^-1 A_fw D_bw^-1 A_bw`` (mass at dead ends is dropped). Cost
    ``O(num_iters * Q * (nnz(fw) + nnz(bw)))`` time and ``O(Q * N)`` memory: use batches.
    """
    pfw = _row_normalised(fw)
    pbw = _row_normalised(bw)
    e = np.zeros((len(queries), fw.num_rows))
    e[np.arange(len(queries)), queries] = 1.0
    x = e.copy()
    pfw_t, pbw_t = pfw.T.tocsr(), pbw.T.tocsr()
    for _ in range(num_iters):
        step = (pbw_t @ (pfw_t @ x.T)).T
        x = (1.0 - damping) * e + damping * step
    return x


class PPRHardNegativeSampler:
    """Hard negatives from a band of personalized-PageRank ranks.

    Args:
        fw, bw: the meta-path adjacencies (as for :class:`RandomWalkNeighborSampler`).
        rank_lo, rank_hi: the band of ranks (0 = highest score) to draw from; the query
            itself is excluded from the ranking. Clipped to the number of nodes.
        num_negatives: negatives per query.
        damping, num_iters: PPR damping (1 - the restart probability) and power
            iterations (:func:`metapath_ppr`).
    """

    def __init__(self, fw: Adjacency, bw: Adjacency, rank_lo: int, rank_hi: int,
                 num_negatives: int = 1, *, damping: float = 0.85, num_iters: int = 20):
        n = fw.num_rows
        if not 0 <= rank_lo < rank_hi:
            raise GraphsysError(f"hard-negative band must satisfy 0 <= lo < hi, got "
                                f"[{rank_lo}, {rank_hi})")
        if rank_lo >= n - 1:
            raise GraphsysError(f"hard-negative band starts at rank {rank_lo} but only "
                                f"{n - 1} other nodes exist")
        self.fw, self.bw = fw, bw
        self.rank_lo, self.rank_hi = int(rank_lo), int(min(rank_hi, n - 1))
        self.num_negatives, self.damping = int(num_negatives), damping
        self.num_iters = num_iters
        # band of each query, computed once on first use (int64 (N, hi - lo); -1 = not yet)
        self._band = np.full((n, self.rank_hi - self.rank_lo), -1, np.int64)
        self._done = np.zeros(n, bool)
        self._lock = threading.Lock()

    def band(self, queries) -> np.ndarray:
        """Node ids ranked ``rank_lo .. rank_hi-1`` by PPR for each query, int64
        (Q, rank_hi - rank_lo); cached per query (memory: N x band width)."""
        q = as_seed_array(queries, self.fw.num_rows, "query")
        with self._lock:
            todo = np.unique(q[~self._done[q]])
            for a in range(0, len(todo), 256):
                part = todo[a:a + 256]
                scores = metapath_ppr(self.fw, self.bw, part, damping=self.damping,
                                      num_iters=self.num_iters)
                scores[np.arange(len(part)), part] = -np.inf
                # rank by score descending, ties by id ascending (stable sort of -score)
                order = np.argsort(-scores, axis=1, kind="stable")
                self._band[part] = order[:, self.rank_lo:self.rank_hi]
                self._done[part] = True
        return self._band[q]

    def __call__(self, queries, rng_seed: int = 0) -> torch.Tensor:
        """int64 (Q, num_negatives) node ids ranked in ``[rank_lo, rank_hi)`` for each query."""
        band = self.band(queries)
        rng = np.random.default_rng(rng_seed)
        pick = rng.integers(0, band.shape[1], (band.shape[0], self.num_negatives))
        return torch.from_numpy(np.take_along_axis(band, pick, axis=1))
