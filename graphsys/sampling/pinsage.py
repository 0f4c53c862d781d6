"""PinSage importance sampling by random walks (Ying et al., 2018,
https://arxiv.org/abs/1806.01973), with the arguments and semantics of DGL's
``dgl.sampling.PinSAGESampler`` and ``RandomWalkNeighborSampler``; the result is a list of
:class:`~graphsys.sampling.Block` (one per layer), ties broken by smaller id first.
"""

from __future__ import annotations

from collections.abc import Sequence

import numba
import numpy as np

from graphsys.errors import GraphsysError, check_count, check_real
from graphsys.sampling import _kernels as K
from graphsys.sampling._util import run_parallel, visit_counters
from graphsys.sampling.adjacency import Adjacency, bipartite_adjacency, mapped_bipartite
from graphsys.sampling.base import LayerwiseSampler
from graphsys.sampling.block import Block
from graphsys.sampling.neighbor import make_block
from graphsys.storage.graph import Graph


class RandomWalkNeighborSampler(LayerwiseSampler):
    """PinSage random-walk importance neighbourhoods over a meta-path, a :class:`Sampler`.

    From each destination node ``num_random_walks`` walks make up to ``num_traversals``
    meta-path hops ``ntype -> other_type -> ntype``, choosing uniformly among a row's
    entries (a neighbour held twice, by parallel edges, twice as likely, as DGL's);
    a walk stops before every hop after the first with probability ``termination_prob``,
    and at a node without neighbours. The ``ntype`` node reached by each hop is one visit
    (the start node itself can be visited). The most visited nodes (ties: smaller id
    first) are the node's neighbours in the block, and ``edge_weight`` holds their visit
    counts normalised to sum 1 per destination (the paper's importance weights), which
    :class:`~graphsys.gnn.PinSageConv` pools with.

    Parameters
    ----------
    fw : Adjacency
        CSR from ``ntype`` nodes to ``other_type`` nodes (type-local ids).
    bw : Adjacency
        CSR from ``other_type`` nodes back to ``ntype`` nodes. For a graph of one node
        type, ``fw`` and ``bw`` are the same (undirected) adjacency and a hop is two steps.
    num_traversals : int
        Maximum meta-path hops per walk (>= 1).
    termination_prob : float
        Probability of stopping before each hop after the first, in [0, 1].
    num_random_walks : int
        Walks per destination node (>= 1).
    num_neighbors : int or sequence of int
        Neighbours kept per destination (the top by visit count): one number for a
        one-layer sampler, or one per layer, input layer first (its length is
        :attr:`num_layers`).

    Raises
    ------
    GraphsysError
        A parameter out of range, or ``fw`` and ``bw`` that do not form a meta-path.

    See Also
    --------
    PinSAGESampler : the same over a stored graph's two entity types.

    References
    ----------
    .. [1] R. Ying, R. He, K. Chen, P. Eksombatchai, W. L. Hamilton and J. Leskovec,
       "Graph Convolutional Neural Networks for Web-Scale Recommender Systems", KDD 2018,
       https://arxiv.org/abs/1806.01973.

    Examples
    --------
    Items 0..3 rated by users 0..1 (user 0 rated items 0, 1, 2; user 1 items 2, 3):

    >>> import numpy as np
    >>> from graphsys.sampling import RandomWalkNeighborSampler, from_coo
    >>> fw = from_coo(np.array([0, 1, 2, 2, 3]), np.array([0, 0, 0, 1, 1]), 4, 2)
    >>> sampler = RandomWalkNeighborSampler(fw, fw.transpose(), 2, 0.5, 100, [2, 2])
    >>> blocks = sampler.sample_blocks([0], rng_seed=1)
    >>> b = blocks[-1]                                 # the output layer's block
    >>> b.src_nodes[b.edge_src].tolist()               # item 0's 2 most visited items
    [2, 0]
    >>> b.edge_weight.sum().item(), len(blocks[0].dst_nodes) == b.num_src_nodes
    (1.0, True)
    """

    def __init__(self, fw: Adjacency, bw: Adjacency, num_traversals: int,
                 termination_prob: float, num_random_walks: int,
                 num_neighbors: int | Sequence[int]):
        # not a bool (True walked once), nor NaN (termination_prob nan stopped every walk
        # after its first hop, as 1 does)
        self.num_traversals = check_count("num_traversals", num_traversals)
        self.termination_prob = check_real("termination_prob", termination_prob, low=0, high=1)
        self.num_random_walks = check_count("num_random_walks", num_random_walks)
        per_layer = ([num_neighbors] if isinstance(num_neighbors, (int, np.integer))
                     else list(num_neighbors))
        if not per_layer:
            raise GraphsysError("num_neighbors must name at least one layer")
        self.num_neighbors = [check_count("num_neighbors", k) for k in per_layer]
        if fw.num_cols != bw.num_rows or bw.num_cols != fw.num_rows:
            raise GraphsysError("fw and bw adjacencies do not form a meta-path")
        self.fw, self.bw = fw, bw
        # fw/bw over global ids (mapped indexes): ntype node i is row _base + i
        self._base, self._num_nodes = 0, fw.num_rows
        self.entity_type: str | None = None

    @property
    def num_nodes(self) -> int:
        """Nodes of ``ntype``."""
        return self._num_nodes

    @property
    def num_layers(self) -> int:
        return len(self.num_neighbors)

    def _walk(self, dst: np.ndarray, layer: int, rng_seed: int, parallel: bool
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """NumPy core: ``(neighbors int64 (E,), visit counts int64 (E,), per destination
        int64 (S,))`` of layer ``layer`` for the destinations ``dst`` (int64 (S,))."""
        k = self.num_neighbors[layer]
        nodes = np.empty((len(dst), k), np.int64)
        counts = np.zeros((len(dst), k), np.int64)
        num = np.zeros(len(dst), np.int64)
        chunks = max(1, min(len(dst), 2 * numba.get_num_threads() if parallel else 1))
        (K.walk_topk_par if parallel else K.walk_topk_ser)(
            self.fw.indptr, self.fw.indices, self.bw.indptr, self.bw.indices,
            dst + self._base, self.num_traversals, self.termination_prob,
            self.num_random_walks, k, int(rng_seed), self._base,
            visit_counters(chunks, self.bw.num_cols), nodes, counts, num)
        keep = np.arange(k)[None, :] < num[:, None]
        return nodes[keep] - self._base, counts[keep], num

    def _layer_block(self, dst: np.ndarray, layer: int, rng_seed: int, *,
                     parallel: bool | None = None, check: bool = True) -> Block:
        nbr, cnt, num = self._walk(dst, layer, rng_seed, run_parallel(parallel))
        return make_block(dst, nbr, num, normalise_counts(cnt, num), self.num_nodes,
                          check=check)


def normalise_counts(counts: np.ndarray, per_seed: np.ndarray) -> np.ndarray:
    """Visit counts divided by their seed's total over the selected neighbours, float32."""
    seg = np.repeat(np.arange(len(per_seed)), per_seed)
    totals = np.bincount(seg, weights=counts, minlength=len(per_seed))
    return (counts / np.maximum(totals[seg], 1)).astype(np.float32)


class PinSAGESampler(RandomWalkNeighborSampler):
    """PinSage neighbour sampling over a stored graph, a :class:`Sampler`; the arguments
    of DGL's ``dgl.sampling.PinSAGESampler``.

    :class:`RandomWalkNeighborSampler` over the meta-path ``ntype -> other_type ->
    ntype`` of ``graph`` (edges between the two types are walked both ways, whichever
    direction they are stored in; parallel edges kept, whether the adjacency is built in
    RAM or mapped from the indexes). Where DGL's sampler returns a DGLGraph of one layer,
    :meth:`sample_blocks` returns blocks; a block's ``(src, dst, weight)`` edge list is
    ``block.src_nodes[block.edge_src]``, ``block.dst_nodes[block.edge_dst]``,
    ``block.edge_weight``.

    Parameters
    ----------
    graph : Graph
        A stored graph with entity types ``ntype`` and ``other_type``; with ``ntype ==
        other_type`` a hop is two steps on the undirected graph.
    ntype : str
        The node type whose neighbourhoods are sampled (e.g. ``"item"``).
    other_type : str
        The node type walked through (e.g. ``"user"``).
    num_traversals, termination_prob, num_random_walks, num_neighbors
        As :class:`RandomWalkNeighborSampler`.
    edge_set : str, optional
        Stored edge set to walk (default: the graph's default).
    memory_limit : int, optional
        Bytes the adjacency may take to build in RAM (default: the RAM available); above it
        the sampler is refused naming ``graphsys index``. With the graph's CSR and CSC
        indexes and edges between the two types stored one way, nothing is built: the walk
        maps them over global ids (:func:`~graphsys.sampling.adjacency.mapped_bipartite`).

    References
    ----------
    .. [1] R. Ying, R. He, K. Chen, P. Eksombatchai, W. L. Hamilton and J. Leskovec,
       "Graph Convolutional Neural Networks for Web-Scale Recommender Systems", KDD 2018,
       https://arxiv.org/abs/1806.01973.

    Examples
    --------
    >>> import tempfile, numpy as np, graphsys
    >>> from graphsys.sampling import PinSAGESampler
    >>> g = graphsys.from_numpy(np.array([0, 1, 1, 2, 3, 3]), np.array([0, 1, 2, 3, 4, 5]),
    ...                         tempfile.mkdtemp() + "/g", undirected=True)
    >>> sampler = PinSAGESampler(g, g.entity_types[0], g.entity_types[0], 3, 0.5, 50, 2)
    >>> block = sampler.sample_blocks([1], rng_seed=0)[0]
    >>> block.dst_nodes.tolist(), block.num_edges, round(block.edge_weight.sum().item(), 3)
    ([1], 2, 1.0)
    """

    def __init__(self, graph: Graph, ntype: str, other_type: str, num_traversals: int,
                 termination_prob: float, num_random_walks: int,
                 num_neighbors: int | Sequence[int], *, edge_set: str | None = None,
                 memory_limit: int | None = None):
        mapped = mapped_bipartite(graph, ntype, other_type, edge_set=edge_set)
        fw, bw = mapped[:2] if mapped is not None else bipartite_adjacency(
            graph, ntype, other_type, edge_set=edge_set, memory_limit=memory_limit)
        self.ntype, self.other_type = ntype, other_type
        super().__init__(fw, bw, num_traversals, termination_prob, num_random_walks,
                         num_neighbors)
        if mapped is not None:
            self._base, self._num_nodes = mapped[2], graph.num_nodes(ntype)
        self.entity_type = ntype

    def __repr__(self) -> str:
        return (f"PinSAGESampler(ntype={self.ntype!r}, other_type={self.other_type!r}, "
                f"num_traversals={self.num_traversals}, termination_prob="
                f"{self.termination_prob}, num_random_walks={self.num_random_walks}, "
                f"num_neighbors={self.num_neighbors})")
