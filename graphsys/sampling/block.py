"""Message-flow graphs ("blocks"): the bipartite graph one GNN layer computes over.

A block maps ``num_src_nodes`` input nodes to ``num_dst_nodes`` output nodes. As in DGL,
the destination nodes come first among the source nodes (``src_nodes[:num_dst_nodes] ==
dst_nodes``), so a layer reads its own previous state ``h_src[:num_dst_nodes]``. Edges
point from a source to a destination (messages flow ``src -> dst``) in block-local ids.
Node ids in ``src_nodes`` are type-local ids of the sampled entity type.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from functools import cached_property

import torch

from graphsys.errors import GraphsysError


def group_offsets(index: torch.Tensor, size: int) -> torch.Tensor:
    """int64 (size + 1,): ``out[i]`` = the number of entries of ``index`` (ints in
    ``[0, size)``) below ``i``, the group boundaries of ``index`` sorted ascending."""
    out = torch.zeros(size + 1, dtype=torch.int64, device=index.device)
    torch.cumsum(torch.bincount(index, minlength=size), 0, out=out[1:])
    return out


@dataclass(frozen=True)
class Block:
    """One layer's message-flow graph.

    ``src_nodes``: int64 (num_src,) node ids, destinations first; ``edge_src`` int64 (E,)
    positions in ``src_nodes``; ``edge_dst`` int64 (E,) positions in ``dst_nodes``;
    ``edge_weight``: float32 (E,) importance weights (PinSage) or None (plain mean);
    ``src_degree``: float32 (num_src,) each source's out-degree in the graph the block was
    sampled from, self-loops left out (what GCN normalises a source by, so a node's output
    on a full neighbourhood does not depend on which other destinations share its block),
    or None: its out-degree in the block. The samplers fill it for layers that take every
    neighbour (fanout -1, as layer-wise inference does); a sampled layer (fixed fanout)
    leaves it None, so GCN normalises it by the sampled block's degrees, the convention of
    PyG (``gcn_norm`` on the sampled subgraph) and DGL (``GraphConv`` on a block). A
    full-graph block needs none: every out-neighbour is a destination.

    Examples
    --------
    Node 4 of a path 0 - 1 - ... - 9 with two sampled neighbours:

    >>> import tempfile, numpy as np, graphsys
    >>> from graphsys.sampling import NeighborSampler
    >>> g = graphsys.from_numpy(np.arange(9), np.arange(1, 10), tempfile.mkdtemp() + "/path")
    >>> block = NeighborSampler(g, [2]).sample_blocks([4], rng_seed=0)[0]
    >>> block.num_dst_nodes, block.src_nodes.tolist(), block.edge_index.tolist()
    (1, [4, 3, 5], [[1, 2], [0, 0]])
    >>> block.src_nodes[block.edge_src].tolist()  # positions back to node ids
    [3, 5]
    """

    src_nodes: torch.Tensor
    num_dst_nodes: int
    edge_src: torch.Tensor
    edge_dst: torch.Tensor
    edge_weight: torch.Tensor | None = None
    src_degree: torch.Tensor | None = field(default=None, kw_only=True)

    @property
    def num_src_nodes(self) -> int:
        return int(self.src_nodes.shape[0])

    @property
    def dst_nodes(self) -> torch.Tensor:
        """int64 (num_dst,): the first ``num_dst_nodes`` source nodes."""
        return self.src_nodes[: self.num_dst_nodes]

    @property
    def num_edges(self) -> int:
        return int(self.edge_src.shape[0])

    @property
    def device(self) -> torch.device:
        return self.src_nodes.device

    @cached_property
    def dst_offsets(self) -> tuple[torch.Tensor, torch.Tensor | None]:
        """``(offsets, order)``: the edges grouped by destination, computed once per block
        (a loader computes it in its worker thread; copies by :meth:`to` keep it).
        ``offsets`` int64 (num_dst + 1,); the edges of destination ``v`` are positions
        ``offsets[v]:offsets[v + 1]`` of the edge list, when ``order`` is None (the
        samplers' blocks list each destination's edges together, in destination order), else
        of the edge list permuted by ``order`` (int64 (E,), a stable sort by ``edge_dst``)."""
        dst = self.edge_dst
        offsets = group_offsets(dst, self.num_dst_nodes)
        grouped = dst.numel() < 2 or bool((dst[1:] >= dst[:-1]).all())
        return offsets, None if grouped else torch.argsort(dst, stable=True)

    @cached_property
    def src_offsets(self) -> tuple[torch.Tensor, torch.Tensor]:
        """``(offsets, order)``: the edges grouped by source (the transposed block, which
        a segment reduction's backward pass walks), computed once per block (a loader
        computes it in its worker thread for the layers whose input needs a gradient;
        copies by :meth:`to` keep it). ``order`` int64 (E,) is a stable sort of the edge
        list by ``edge_src``; ``offsets`` int64 (num_src + 1,): the edges of source ``u`` are
        ``order[offsets[u]:offsets[u + 1]]``."""
        src = self.edge_src
        return group_offsets(src, self.num_src_nodes), torch.argsort(src, stable=True)

    @property
    def edge_index(self) -> torch.Tensor:
        """int64 (2, E): row 0 positions in ``src_nodes``, row 1 positions in ``dst_nodes``:
        PyG's bipartite ``edge_index``, so a PyG conv runs on this block as
        ``conv((x, x[:block.num_dst_nodes]), block.edge_index)``."""
        return torch.stack([self.edge_src, self.edge_dst])

    @property
    def size(self) -> tuple[int, int]:
        """``(num_src_nodes, num_dst_nodes)``: PyG's ``size`` of a bipartite message pass."""
        return self.num_src_nodes, self.num_dst_nodes

    def to_pyg(self):
        """This block as a ``torch_geometric.data.Data``: ``edge_index`` (2, E) as
        :attr:`edge_index`, ``n_id`` = ``src_nodes``, ``num_nodes`` = num_src_nodes,
        ``num_dst_nodes``, and ``edge_weight`` when weighted; requires PyG."""
        try:
            from torch_geometric.data import Data  # optional extra
        except ImportError:
            raise GraphsysError("Block.to_pyg() needs PyG installed (pip install "
                                "torch_geometric)") from None
        data = Data(edge_index=self.edge_index, n_id=self.src_nodes,
                    num_nodes=self.num_src_nodes, num_dst_nodes=self.num_dst_nodes)
        if self.edge_weight is not None:
            data.edge_weight = self.edge_weight
        return data

    def _map(self, fn) -> Block:
        """A copy with ``fn`` applied to every tensor field (a subclass's too) and to
        :attr:`dst_offsets` and :attr:`src_offsets` when computed."""
        opt = (lambda t: None if t is None else fn(t))
        out = replace(self, **{f.name: fn(getattr(self, f.name)) for f in fields(self)
                               if torch.is_tensor(getattr(self, f.name))})
        for name in ("dst_offsets", "src_offsets"):
            if name in self.__dict__:
                offsets, order = self.__dict__[name]
                out.__dict__[name] = (fn(offsets), opt(order))
        return out

    def to(self, device: str | torch.device, non_blocking: bool = False) -> Block:
        """A copy with every tensor on ``device``."""
        return self._map(lambda t: t.to(device, non_blocking=non_blocking))

    def pin_memory(self) -> Block:
        """A copy with every tensor in pinned memory."""
        return self._map(lambda t: t.pin_memory())

    def to_dgl(self):
        """This block as a ``dgl.create_block`` graph (``edata['weight']`` when weighted);
        requires DGL (an optional dependency)."""
        try:
            import dgl  # optional extra: never imported by graphsys itself
        except ImportError:
            raise GraphsysError("Block.to_dgl() needs DGL installed (pip install dgl)") from None
        b = dgl.create_block((self.edge_src, self.edge_dst), num_src_nodes=self.num_src_nodes,
                             num_dst_nodes=self.num_dst_nodes, device=self.device)
        b.srcdata[dgl.NID] = self.src_nodes
        b.dstdata[dgl.NID] = self.dst_nodes
        if self.edge_weight is not None:
            b.edata["weight"] = self.edge_weight
        return b


@dataclass(frozen=True)
class PaddedBlock:
    """One sampled layer in shapes fixed by the batch size: what a training step captured
    as one CUDA graph runs on (:class:`graphsys.gnn.NodeStepGraph`), with no host read of
    the sample's sizes.

    ``src_nodes``: int64 (S,) node ids, the destinations first as in :class:`Block`, then
    the other sources, then the padding node ``num_nodes`` (a node without neighbours);
    ``neighbours``: int64 (D, k) per destination row its ``k`` picks, positions in
    ``src_nodes`` (0 where a row has fewer picks); ``weights``: float32 (D, k) the
    mean's weight of each pick, ``1 / picks`` of its row, 0 past them; ``real_dst``: bool
    (D,) the real destination rows, which come first. A real destination row ``i`` is row
    ``i`` of ``src_nodes``; the rows past them are padding, without picks, whose outputs no
    real row reads. A mean aggregation is
    ``(h[neighbours] * weights[..., None]).sum(1)``: the :class:`Block`'s segment mean
    of the same picks.

    Examples
    --------
    >>> import numpy as np, torch
    >>> from graphsys.sampling import DeviceNeighborSampler, from_coo
    >>> adj = from_coo(np.array([0, 0, 1]), np.array([1, 2, 0]), 3, 3)  # 0: 1, 2; 1: 0
    >>> dev = DeviceNeighborSampler(adj, [2], device="cpu")
    >>> block = dev.padded_blocks([0, 1], rng_seed=0)[0]
    >>> block.num_dst_nodes, block.fanout, block.src_nodes.tolist()
    (2, 2, [0, 1, 2])
    >>> block.src_nodes[block.neighbours].tolist(), block.weights.tolist()
    ([[1, 2], [0, 0]], [[0.5, 0.5], [1.0, 0.0]])
    """

    src_nodes: torch.Tensor
    neighbours: torch.Tensor
    weights: torch.Tensor
    real_dst: torch.Tensor

    @property
    def num_src_nodes(self) -> int:
        return int(self.src_nodes.shape[0])

    @property
    def num_dst_nodes(self) -> int:
        return int(self.neighbours.shape[0])

    @property
    def fanout(self) -> int:
        """Picks a row holds at most (``k``)."""
        return int(self.neighbours.shape[1])

    @property
    def dst_nodes(self) -> torch.Tensor:
        """int64 (D,): the first ``num_dst_nodes`` source nodes."""
        return self.src_nodes[: self.num_dst_nodes]

    @property
    def device(self) -> torch.device:
        return self.src_nodes.device

    @property
    def picked(self) -> torch.Tensor:
        """bool (D, k): which entries of :attr:`neighbours` are picks (the rest pad a row)."""
        return self.weights > 0

    @property
    def self_picks(self) -> torch.Tensor:
        """bool (D, k): the picks of a row's own node (its self-loop edges: a destination
        is the source of the same position)."""
        rows = torch.arange(self.num_dst_nodes, device=self.neighbours.device)
        return self.picked & (self.neighbours == rows.unsqueeze(1))

    def mean(self, h: torch.Tensor) -> torch.Tensor:
        """(D, F): each destination's mean of its picks' rows of ``h`` (S, F), 0 for a row
        without picks: one gather, one product, one sum."""
        return self.aggregate(h, self.weights)

    def aggregate(self, h: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
        """(D, F): each destination's sum of ``weights[i, j] * h[neighbours[i, j]]`` over
        its ``k`` entries (``weights`` (D, k), 0 where an entry is no pick): the
        :class:`Block`'s weighted segment sum of the same picks."""
        k = self.fanout
        rows = h.index_select(0, self.neighbours.view(-1)).view(-1, k, h.shape[1])
        return (rows * weights.to(h.dtype).unsqueeze(2)).sum(1)

    def to(self, device: str | torch.device, non_blocking: bool = False) -> PaddedBlock:
        """A copy with every tensor on ``device``."""
        return PaddedBlock(*(getattr(self, f.name).to(device, non_blocking=non_blocking)
                             for f in fields(self)))


@dataclass
class MiniBatch:
    """Everything one training step needs.

    ``seeds``: int64 (B,) the batch's nodes (or, for a pair task, every node the batch
    embeds); ``blocks``: input layer first, ``blocks[0].src_nodes`` are the
    :attr:`input_nodes` whose features are read, ``blocks[-1].dst_nodes`` are the
    ``seeds``; ``extra``: task tensors (positive/negative pair positions); ``x``: float32
    (len(input_nodes), F) input features and ``y``: the seeds' labels (B,), when the
    loader gathers them (:class:`graphsys.gnn.NodeLoader`), else None. :meth:`to` moves
    them all.

    Examples
    --------
    A batch of two seeds over two sampled layers (what a loader yields, here without
    features):

    >>> import tempfile, numpy as np, torch, graphsys
    >>> from graphsys.sampling import MiniBatch, NeighborSampler
    >>> g = graphsys.from_numpy(np.arange(9), np.arange(1, 10), tempfile.mkdtemp() + "/path")
    >>> seeds = torch.tensor([4, 7])
    >>> batch = MiniBatch(seeds, NeighborSampler(g, [2, 2]).sample_blocks(seeds, rng_seed=0))
    >>> batch.input_nodes.tolist(), batch.blocks[-1].dst_nodes.tolist()
    ([4, 7, 3, 5, 6, 8, 2, 9], [4, 7])
    """

    seeds: torch.Tensor
    blocks: list[Block]
    extra: dict[str, torch.Tensor] = field(default_factory=dict)
    x: torch.Tensor | None = None
    y: torch.Tensor | None = None

    @property
    def input_nodes(self) -> torch.Tensor:
        return self.blocks[0].src_nodes

    def _map(self, fn) -> MiniBatch:
        """A copy with ``fn`` applied to every tensor, blocks included."""
        opt = (lambda t: None if t is None else fn(t))
        return MiniBatch(fn(self.seeds), [b._map(fn) for b in self.blocks],
                         {k: fn(v) for k, v in self.extra.items()}, opt(self.x), opt(self.y))

    def to(self, device: str | torch.device, non_blocking: bool = False) -> MiniBatch:
        """A copy with every tensor (blocks included) on ``device``, in one call."""
        return self._map(lambda t: t.to(device, non_blocking=non_blocking))

    def pin_memory(self) -> MiniBatch:
        """A copy with every tensor in pinned memory (for a ``non_blocking`` copy)."""
        return self._map(lambda t: t.pin_memory())
