"""Uniform neighbour sampling with per-layer fanouts (GraphSAGE, Hamilton et al. 2017).

Layers are listed input side first, as in DGL's ``NeighborSampler([10, 25])``: sampling
starts from the seeds with the *last* fanout (the output layer) and walks outwards, each
layer's source nodes becoming the next layer's seeds.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from graphsys.errors import GraphsysError
from graphsys.sampling import _kernels as K
from graphsys.sampling._util import as_seed_array, derive_seed, scratch
from graphsys.sampling.adjacency import Adjacency, homogeneous_adjacency
from graphsys.sampling.block import Block
from graphsys.storage.graph import Graph


def parse_fanouts(text: str | Sequence[int]) -> list[int]:
    """``"10,25"`` or ``[10, 25]`` to a list of positive ints (-1 = all neighbours)."""
    if isinstance(text, str):
        parts = [p.strip() for p in text.split(",")]
        try:
            values = [int(p) for p in parts]
        except ValueError:
            raise GraphsysError(f"fanouts must be comma-separated integers like 10,25; got "
                                f"{text!r}") from None
    else:
        values = [int(v) for v in text]
    if not values or any(v == 0 or v < -1 for v in values):
        raise GraphsysError(f"fanouts must be positive integers or -1 (all neighbours), one "
                            f"per layer; got {text!r}")
    return values


def sample_neighbors(adj: Adjacency, seeds: np.ndarray, fanout: int, *, replace: bool = False,
                     rng_seed: int = 0, parallel: bool = True
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pick up to ``fanout`` neighbours of every seed uniformly (``-1``: all of them).

    Args:
        adj: rows are the seeds' node type; a row lists the neighbours to sample from.
        seeds: int64 (S,) row ids.
        fanout: neighbours per seed. Without ``replace`` a seed with fewer neighbours keeps
            all of them; with ``replace`` every seed that has a neighbour gets exactly
            ``fanout`` draws.
    Returns:
        ``(neighbors, counts, edge_pos)``: int64 (E,) picked neighbour ids grouped by seed,
        int64 (S,) picks per seed, int64 (E,) positions in ``adj.indices``.
    """
    counts = np.empty(len(seeds), np.int64)
    (K.count_picks_par if parallel else K.count_picks_ser)(adj.indptr, seeds, fanout, replace,
                                                           counts)
    offsets = np.zeros(len(seeds) + 1, np.int64)
    np.cumsum(counts, out=offsets[1:])
    nbr = np.empty(offsets[-1], np.int64)
    eid = np.empty(offsets[-1], np.int64)
    (K.fill_picks_par if parallel else K.fill_picks_ser)(
        adj.indptr, adj.indices, seeds, fanout, replace, rng_seed, offsets, nbr, eid)
    return nbr, counts, eid


def make_block(dst: np.ndarray, nbr: np.ndarray, counts: np.ndarray,
               weight: np.ndarray | None, num_nodes: int, *, check: bool = True) -> Block:
    """A :class:`Block` whose destinations are ``dst`` (unique int64; checked unless
    ``check`` is False) and whose edges come from ``nbr`` (int64 (E,), grouped by
    destination, ``counts[i]`` for ``dst[i]``)."""
    sc = scratch(num_nodes)
    if check and K.has_duplicates(dst, sc):
        raise GraphsysError("seed ids must be unique within a batch")
    src_nodes, local = K.relabel(dst, nbr, sc)
    edge_dst = np.repeat(np.arange(len(dst), dtype=np.int64), counts)
    return Block(torch.from_numpy(src_nodes), len(dst), torch.from_numpy(local),
                 torch.from_numpy(edge_dst),
                 None if weight is None else torch.from_numpy(weight))


class NeighborSampler:
    """Multi-layer uniform neighbour sampler producing :class:`Block` lists.

    Args:
        graph: a stored :class:`Graph` (its ``entity_type`` nodes, undirected view when
            ``symmetric``, else ``direction`` ``in``-neighbours (default) or
            ``out``-neighbours; mapped from the graph's adjacency index when it has one, see
            :func:`~graphsys.sampling.adjacency.mapped_adjacency`) or a ready
            :class:`Adjacency` whose rows list the in-neighbours of each node.
        fanouts: per layer, input layer first; ``-1`` = all neighbours (full-neighbour
            blocks, e.g. for evaluation).
        replace: sample with replacement.
        memory_limit: bytes the adjacency may take to build in RAM when no stored index
            serves it (None: the RAM available); above it the sampler is refused naming the
            ``graphsys index`` command that builds the index
            (:func:`~graphsys.sampling.adjacency.check_ram_build`).

    Call :meth:`sample_blocks` with the batch's seeds and an ``rng_seed``; the result
    depends only on those (not on threads or workers). The sampler holds only read-only
    arrays, so worker threads share one instance.
    """

    def __init__(self, graph: Graph | Adjacency, fanouts: Sequence[int] | str, *,
                 replace: bool = False, entity_type: str | None = None,
                 edge_set: str | None = None, symmetric: bool = True,
                 direction: str = "in", memory_limit: int | None = None):
        self.fanouts = parse_fanouts(fanouts)
        self.replace = bool(replace)
        if isinstance(graph, Adjacency):
            self.adj = graph
        else:
            self.adj = homogeneous_adjacency(graph, entity_type, edge_set=edge_set,
                                             symmetric=symmetric, direction=direction,
                                             memory_limit=memory_limit)
        if self.adj.num_rows != self.adj.num_cols:
            raise GraphsysError("neighbour sampling needs a square adjacency (one node type)")

    @property
    def num_nodes(self) -> int:
        return self.adj.num_rows

    @property
    def num_layers(self) -> int:
        return len(self.fanouts)

    def sample_blocks(self, seed_nodes, rng_seed: int = 0, *, parallel: bool = True
                      ) -> list[Block]:
        """Blocks for ``seed_nodes`` (unique type-local ids), input layer first."""
        seeds = as_seed_array(seed_nodes, self.num_nodes)
        blocks: list[Block] = []
        for layer in range(self.num_layers - 1, -1, -1):
            nbr, counts, _ = sample_neighbors(
                self.adj, seeds, self.fanouts[layer], replace=self.replace,
                rng_seed=derive_seed(rng_seed, layer), parallel=parallel)
            block = make_block(seeds, nbr, counts, None, self.num_nodes,
                               check=layer == self.num_layers - 1)
            blocks.insert(0, block)
            seeds = block.src_nodes.numpy()
        return blocks

    def __repr__(self) -> str:
        return (f"NeighborSampler(fanouts={self.fanouts}, replace={self.replace}, "
                f"nodes={self.num_nodes}, edges={self.adj.nnz})")
