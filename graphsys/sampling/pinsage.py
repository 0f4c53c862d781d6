"""PinSage importance sampling by random walks (Ying et al., 2018,
https://arxiv.org/abs/1806.01973), with the call signature of DGL's
``dgl.sampling.PinSAGESampler`` so users can switch.

Semantics (as DGL's ``RandomWalkNeighborSampler``): from each seed ``num_random_walks``
walks; a walk makes up to ``num_traversals`` meta-path hops ``ntype -> other_type ->
ntype`` choosing uniformly among neighbours, is terminated before every hop after the first
with probability ``termination_prob``, and ends early at a node without neighbours. The
``ntype`` node reached at the end of each hop is one *visit* (the seed itself can be
visited). The ``num_neighbors`` most visited nodes (ties: smaller id first) are the seed's
neighbours. Differences from DGL: the result is ``(src, dst, weight)`` tensors instead of a
DGLGraph, ``weight`` is the visit count normalised to sum to 1 over the selected
neighbours of each seed (the paper's importance weights; raw counts are in ``count``), and
ties are broken deterministically.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np
import torch

from graphsys.errors import GraphsysError
from graphsys.sampling import _kernels as K
from graphsys.sampling._util import as_seed_array, derive_seed, visit_counters
from graphsys.sampling.adjacency import Adjacency, bipartite_adjacency, mapped_bipartite
from graphsys.sampling.block import Block
from graphsys.sampling.neighbor import make_block
from graphsys.storage.graph import Graph


@dataclass(frozen=True)
class SampledNeighbors:
    """Importance neighbourhoods of a batch of seeds; unpacks as ``src, dst, weight``.

    ``src`` int64 (E,) neighbour ids; ``dst`` int64 (E,) the seed each edge points to
    (edges grouped by seed in input order, most visited first); ``weight`` float32 (E,)
    normalised visit counts (sum 1 per seed with any visit); ``count`` int64 (E,) raw
    visit counts.
    """

    src: torch.Tensor
    dst: torch.Tensor
    weight: torch.Tensor
    count: torch.Tensor

    def __iter__(self):
        return iter((self.src, self.dst, self.weight))

    def __len__(self) -> int:
        return 3


def _check(name: str, value, lo, hi=None, integer=True):
    ok = isinstance(value, (int, np.integer)) if integer else isinstance(
        value, (int, float, np.floating, np.integer))
    if not ok or value < lo or (hi is not None and value > hi):
        rng = f">= {lo}" if hi is None else f"in [{lo}, {hi}]"
        raise GraphsysError(f"{name} must be {'an integer' if integer else 'a number'} {rng}, "
                            f"got {value!r}")


class RandomWalkNeighborSampler:
    """The general algorithm over a meta-path given as two adjacencies.

    Args:
        fw: CSR from ``ntype`` nodes to ``other_type`` nodes (type-local ids).
        bw: CSR from ``other_type`` nodes back to ``ntype`` nodes.
        num_traversals: maximum meta-path hops per walk. Usually a hyperparameter.
        termination_prob: probability of stopping before each hop after the first.
        num_random_walks: walks per seed.
        num_neighbors: neighbours kept per seed (the top by visit count).
        seed: base seed; call ``k`` of this instance uses ``derive_seed(seed, k)`` unless
            an explicit ``rng_seed`` is given.
    """

    def __init__(self, fw: Adjacency, bw: Adjacency, num_traversals: int,
                 termination_prob: float, num_random_walks: int, num_neighbors: int, *,
                 seed: int = 0):
        _check("num_traversals", num_traversals, 1)
        _check("termination_prob", termination_prob, 0.0, 1.0, integer=False)
        _check("num_random_walks", num_random_walks, 1)
        _check("num_neighbors", num_neighbors, 1)
        if fw.num_cols != bw.num_rows or bw.num_cols != fw.num_rows:
            raise GraphsysError("fw and bw adjacencies do not form a meta-path")
        self.fw, self.bw = fw, bw
        self.num_traversals = int(num_traversals)
        self.termination_prob = float(termination_prob)
        self.num_random_walks = int(num_random_walks)
        self.num_neighbors = int(num_neighbors)
        self.seed = int(seed)
        self._calls = 0
        # fw/bw over global ids (mapped indexes): ntype node i is row _base + i
        self._base, self._num_nodes = 0, fw.num_rows

    @property
    def num_nodes(self) -> int:
        """Nodes of ``ntype``."""
        return self._num_nodes

    def sample(self, seed_nodes, rng_seed: int, *, parallel: bool = True
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """NumPy core: ``(neighbors int64 (E,), counts int64 (E,), per_seed int64 (S,))``."""
        seeds = as_seed_array(seed_nodes, self.num_nodes)
        k = self.num_neighbors
        nodes = np.empty((len(seeds), k), np.int64)
        counts = np.zeros((len(seeds), k), np.int64)
        num = np.zeros(len(seeds), np.int64)
        chunks = max(1, min(len(seeds), 2 * numba.get_num_threads() if parallel else 1))
        (K.walk_topk_par if parallel else K.walk_topk_ser)(
            self.fw.indptr, self.fw.indices, self.bw.indptr, self.bw.indices,
            seeds + self._base, self.num_traversals, self.termination_prob,
            self.num_random_walks, k, int(rng_seed), visit_counters(chunks, self.bw.num_cols),
            nodes, counts, num)
        keep = np.arange(k)[None, :] < num[:, None]
        return nodes[keep] - self._base, counts[keep], num

    def __call__(self, seed_nodes, rng_seed: int | None = None, *, parallel: bool = True
                 ) -> SampledNeighbors:
        """Sample the neighbourhoods of ``seed_nodes`` (int tensor/array of ``ntype`` ids)."""
        if rng_seed is None:
            rng_seed = derive_seed(self.seed, self._calls)
            self._calls += 1
        seeds = as_seed_array(seed_nodes, self.num_nodes)
        nbr, cnt, num = self.sample(seeds, rng_seed, parallel=parallel)
        dst = np.repeat(seeds, num)
        return SampledNeighbors(torch.from_numpy(nbr), torch.from_numpy(dst),
                                torch.from_numpy(normalise_counts(cnt, num)), torch.from_numpy(cnt))

    def sample_blocks(self, seed_nodes, num_layers: int, rng_seed: int = 0, *,
                      parallel: bool = True) -> list[Block]:
        """``num_layers`` importance-weighted :class:`Block` s (input layer first) for unique
        ``seed_nodes``; ``edge_weight`` holds the normalised visit counts."""
        seeds = as_seed_array(seed_nodes, self.num_nodes)
        blocks: list[Block] = []
        for layer in range(num_layers - 1, -1, -1):
            nbr, cnt, num = self.sample(seeds, derive_seed(rng_seed, layer), parallel=parallel)
            block = make_block(seeds, nbr, num, normalise_counts(cnt, num), self.num_nodes)
            blocks.insert(0, block)
            seeds = block.src_nodes.numpy()
        return blocks


def normalise_counts(counts: np.ndarray, per_seed: np.ndarray) -> np.ndarray:
    """Visit counts divided by their seed's total over the selected neighbours, float32."""
    seg = np.repeat(np.arange(len(per_seed)), per_seed)
    totals = np.bincount(seg, weights=counts, minlength=len(per_seed))
    return (counts / np.maximum(totals[seg], 1)).astype(np.float32)


class PinSAGESampler(RandomWalkNeighborSampler):
    """PinSage neighbour sampler over a stored bipartite graph (DGL's signature).

    Args:
        graph: a stored :class:`Graph` with entity types ``ntype`` and ``other_type`` (edges
            between them in either stored direction are walked both ways). With
            ``ntype == other_type`` a hop is two steps on the undirected graph.
        ntype: the node type whose neighbourhoods are sampled (e.g. ``"item"``).
        other_type: the type walked through (e.g. ``"user"``).
        num_traversals, termination_prob, num_random_walks, num_neighbors: see
            :class:`RandomWalkNeighborSampler`.
        edge_set: stored edge set to walk (default: the graph's default).
        seed: base seed of the per-call random streams.
        memory_limit: bytes the adjacency may take to build in RAM (None: the RAM
            available); above it the sampler is refused naming ``graphsys index``. With the
            graph's CSR and CSC indexes and edges between the two types stored one way,
            nothing is built: ``fw`` and ``bw`` map them over global ids
            (:func:`~graphsys.sampling.adjacency.mapped_bipartite`).

    Called on a tensor of ``ntype`` ids (type-local), returns :class:`SampledNeighbors`
    ``(src, dst, weight)``.

    >>> sampler = PinSAGESampler(g, "item", "user", 3, 0.5, 200, 10)   # doctest: +SKIP
    >>> src, dst, weight = sampler(torch.tensor([0, 1, 2]))             # doctest: +SKIP
    """

    def __init__(self, graph: Graph, ntype: str, other_type: str, num_traversals: int,
                 termination_prob: float, num_random_walks: int, num_neighbors: int, *,
                 edge_set: str | None = None, seed: int = 0, memory_limit: int | None = None):
        mapped = mapped_bipartite(graph, ntype, other_type, edge_set=edge_set)
        fw, bw = mapped[:2] if mapped is not None else bipartite_adjacency(
            graph, ntype, other_type, edge_set=edge_set, memory_limit=memory_limit)
        self.ntype, self.other_type = ntype, other_type
        super().__init__(fw, bw, num_traversals, termination_prob, num_random_walks,
                         num_neighbors, seed=seed)
        if mapped is not None:
            self._base, self._num_nodes = mapped[2], graph.num_nodes(ntype)

    def __repr__(self) -> str:
        return (f"PinSAGESampler(ntype={self.ntype!r}, other_type={self.other_type!r}, "
                f"num_traversals={self.num_traversals}, termination_prob="
                f"{self.termination_prob}, num_random_walks={self.num_random_walks}, "
                f"num_neighbors={self.num_neighbors})")
