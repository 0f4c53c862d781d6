"""Negative samplers for link prediction: uniform, and PinSage's hard negatives.

Hard negatives (Ying et al., 2018, section 3.3): items related to the query, but less than
the positive: ranked by personalized PageRank from the query item on the item -> other ->
item meta-path graph, drawn uniformly from the ranks ``[rank_lo, rank_hi)`` (PinSage used
2000-5000 on billions of pins; small graphs need a proportionally smaller band).

Negatives are drawn from one NumPy generator seeded with ``rng_seed``, in query order, not
from streams keyed by node id: a negative belongs to a (query, training pair) of a batch (a
query repeats within a batch, once per positive), and the link task is not split between
data-parallel ranks.
"""

from __future__ import annotations

import threading

import numba
import numpy as np
import torch

from graphsys.errors import GraphsysError, check_count, check_real
from graphsys.memory import over_budget
from graphsys.sampling._util import as_seed_array, seed_entropy
from graphsys.sampling.adjacency import Adjacency

#: Queries whose PPR runs together (:meth:`PPRHardNegativeSampler.band`).
PPR_BATCH = 256


class UniformNegativeSampler:
    """``num_negatives`` node ids per query drawn uniformly from ``[low, num_nodes)``
    (``low``: the first node of the candidates' type, default 0).

    Examples
    --------
    >>> from graphsys.sampling import UniformNegativeSampler
    >>> UniformNegativeSampler(10, 3)([0, 5], rng_seed=0).tolist()
    [[8, 6, 5], [2, 3, 0]]
    """

    def __init__(self, num_nodes: int, num_negatives: int = 1, *, low: int = 0):
        # 1.5 was cut to 1, True read as 1, NaN raised a raw ValueError
        num_nodes, num_negatives = check_count("num_nodes", num_nodes), check_count(
            "num_negatives", num_negatives)
        low = check_count("low", low, minimum=0, maximum=num_nodes - 1)
        self.num_nodes, self.num_negatives, self.low = num_nodes, num_negatives, low

    def __call__(self, queries, rng_seed: int = 0) -> torch.Tensor:
        """int64 (Q, num_negatives)."""
        q = as_seed_array(queries, self.num_nodes, "query")
        rng = np.random.default_rng(seed_entropy(rng_seed))
        return torch.from_numpy(rng.integers(self.low, self.num_nodes,
                                             (len(q), self.num_negatives), dtype=np.int64))


@numba.njit(cache=True, nogil=True)
def _walk_step(indptr, indices, x, out):
    """``out = x D^-1 A`` in column layout: every entry ``c`` of row ``r`` of the CSR
    (``indptr``, ``indices``) adds ``x[r] / deg(r)`` to ``out[c]`` (``x`` (rows, Q),
    ``out`` (cols, Q)); rows without neighbours drop their mass. Reads the CSR as it is
    (a mapped index too): no normalised copy."""
    out[:] = 0.0
    q = x.shape[1]
    for r in range(indptr.shape[0] - 1):
        lo, hi = indptr[r], indptr[r + 1]
        if hi > lo:
            inv = 1.0 / (hi - lo)
            for k in range(lo, hi):
                c = indices[k]
                for j in range(q):
                    out[c, j] += x[r, j] * inv


def metapath_ppr(fw: Adjacency, bw: Adjacency, queries: np.ndarray, *,
                 damping: float = 0.85, num_iters: int = 20) -> np.ndarray:
    """Personalized PageRank over a meta-path, from each query node: scores of every
    ``ntype`` node, float64 (Q, N). (The BSP engine's
    :func:`graphsys.bsp.personalized_pagerank` is PPR over a stored graph's edges, from one
    weighted source set; ``damping`` means the same in both: the probability of following
    an edge rather than restarting.)

    Power iteration of ``x <- (1 - damping) e_q + damping x P`` with ``P`` the meta-path walk
    matrix ``D_fw^-1 A_fw D_bw^-1 A_bw`` (mass at dead ends is dropped), walked over the
    adjacencies as they are (mapped ones too: nothing is copied). Cost
    ``O(num_iters * Q * (nnz(fw) + nnz(bw)))`` time and ``O(Q * N)`` memory: use batches.

    Parameters
    ----------
    fw, bw : Adjacency
        The meta-path's two hops (:func:`~graphsys.sampling.bipartite_adjacency`).
    queries : array-like of int
        The ``ntype`` nodes to restart at (Q,).
    damping : float, default 0.85
        In [0, 1).
    num_iters : int, default 20
        Power iterations (non-negative).

    Returns
    -------
    numpy.ndarray
        float64 (Q, N): row ``q`` the scores from ``queries[q]``.

    Raises
    ------
    ParameterError
        ``damping`` outside [0, 1) or ``num_iters`` not a non-negative integer.

    Examples
    --------
    On the path 0 - 1 - 2 a two-hop walk from node 0 never stands on node 1:

    >>> from graphsys.sampling import from_coo
    >>> a = from_coo([0, 1, 1, 2], [1, 0, 2, 1], 3, 3)
    >>> metapath_ppr(a, a, [0], damping=0.5, num_iters=50).round(3).tolist()
    [[0.75, 0.0, 0.25]]
    """
    damping, num_iters = _check_walk(damping, num_iters)
    queries = np.asarray(queries, np.int64)
    cols = np.arange(len(queries))
    x = np.zeros((fw.num_rows, len(queries)))
    x[queries, cols] = 1.0
    mid = np.empty((fw.num_cols, len(queries)))
    step = np.empty_like(x)
    for _ in range(num_iters):
        _walk_step(fw.indptr, fw.indices, x, mid)
        _walk_step(bw.indptr, bw.indices, mid, step)
        np.multiply(step, damping, out=x)
        x[queries, cols] += 1.0 - damping
    return x.T


def _check_walk(damping, num_iters) -> tuple[float, int]:
    """``damping`` a finite number in [0, 1) and ``num_iters`` a non-negative integer (a
    NaN damping would rank every node by NaN scores); ParameterError otherwise."""
    return (check_real("damping", damping, low=0, high=1, high_open=True),
            check_count("num_iters", num_iters, minimum=0))


class PPRHardNegativeSampler:
    """Hard negatives from a band of personalized-PageRank ranks (PinSage's curriculum).

    For each query, the nodes ranked ``rank_lo`` to ``rank_hi`` by a personalized PageRank
    over the meta-path (the query itself excluded) are close to it but rarely its positives:
    negatives drawn from that band are harder than uniform ones.

    Parameters
    ----------
    fw, bw : Adjacency
        The meta-path adjacencies (as for
        :class:`~graphsys.sampling.RandomWalkNeighborSampler`), walked as they are: mapped
        ones are not copied.
    rank_lo, rank_hi : int
        The band of ranks (0 = highest score) to draw from; clipped to the number of nodes.
    num_negatives : int, default 1
        Negatives per query.
    damping : float, default 0.85
        PPR damping (1 - the restart probability).
    num_iters : int, default 20
        Power iterations (:func:`metapath_ppr`).
    memory_limit : int, optional
        Bytes the sampler may hold (default: the RAM available): the band cache (N x band
        width int64) and one batch of :data:`PPR_BATCH` queries (four arrays of 8 bytes per
        ``ntype`` node and one per ``other_type`` node, per query); above it the sampler is
        refused in one line.

    Raises
    ------
    GraphsysError
        A band outside ``0 <= rank_lo < rank_hi``, or beyond the number of nodes; a memory
        need above ``memory_limit``.

    References
    ----------
    .. [1] R. Ying, R. He, K. Chen, P. Eksombatchai, W. L. Hamilton and J. Leskovec,
       "Graph Convolutional Neural Networks for Web-Scale Recommender Systems", KDD 2018.

    Examples
    --------
    Items 0..4 linked through the users who like them (item -> user -> item):

    >>> import numpy as np
    >>> from graphsys.sampling import PPRHardNegativeSampler, from_coo
    >>> user, item = np.array([0, 0, 1, 1, 1, 2, 2]), np.array([0, 1, 1, 2, 3, 3, 4])
    >>> fw, bw = from_coo(item, user, 5, 3), from_coo(user, item, 3, 5)
    >>> sampler = PPRHardNegativeSampler(fw, bw, 1, 3, num_negatives=2)
    >>> sampler.band([0, 4]).tolist()  # ranks 1 and 2 for items 0 and 4
    [[3, 2], [1, 2]]
    >>> sampler([0, 4], rng_seed=0).tolist()
    [[2, 2], [2, 1]]
    """

    def __init__(self, fw: Adjacency, bw: Adjacency, rank_lo: int, rank_hi: int,
                 num_negatives: int = 1, *, damping: float = 0.85, num_iters: int = 20,
                 memory_limit: int | None = None):
        n = fw.num_rows
        damping, num_iters = _check_walk(damping, num_iters)
        # -1 raised a raw ValueError at the first draw, 1.5 was cut to 1, 0.5 to 0
        num_negatives = check_count("num_negatives", num_negatives)
        rank_lo, rank_hi = (check_count("rank_lo", rank_lo, minimum=0),
                            check_count("rank_hi", rank_hi))
        if not 0 <= rank_lo < rank_hi:
            raise GraphsysError(f"hard-negative band must satisfy 0 <= lo < hi, got "
                                f"[{rank_lo}, {rank_hi})")
        if rank_lo >= n - 1:
            raise GraphsysError(f"hard-negative band starts at rank {rank_lo} but only "
                                f"{n - 1} other nodes exist")
        self.fw, self.bw = fw, bw
        self.rank_lo, self.rank_hi = int(rank_lo), int(min(rank_hi, n - 1))
        width = self.rank_hi - self.rank_lo
        need = 8 * n * width + 8 * PPR_BATCH * (4 * n + fw.num_cols)
        if short := over_budget(need, memory_limit):
            raise GraphsysError(
                f"PPR hard negatives over {n:,} nodes with a band of {width:,} ranks (the band "
                f"of every node and a PPR batch) need {short}; narrow the band "
                f"(rank_hi - rank_lo) or raise memory_limit")
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
            for a in range(0, len(todo), PPR_BATCH):
                part = todo[a:a + PPR_BATCH]
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
        rng = np.random.default_rng(seed_entropy(rng_seed))
        pick = rng.integers(0, band.shape[1], (band.shape[0], self.num_negatives))
        return torch.from_numpy(np.take_along_axis(band, pick, axis=1))
