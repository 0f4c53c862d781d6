r"""Shared checks and aggregation helpers of the convolution layers (pure torch).

Two ways to sum over a destination's edges:

* :func:`scatter_sum` of a per-edge message tensor (E, F), for layers whose messages depend
  on the edge (attention, PinSage's importance weights, a subclass's own ``message``);
* :func:`segment_sum` / :func:`segment_mean`, a segment reduction of the source rows
  themselves, :math:`\mathbf{out}_v = \sum_{e = (u, v)} w_e \mathbf{h}_u`, that builds no
  per-edge tensor: the edges are grouped by destination (:attr:`Block.dst_offsets
  <graphsys.sampling.Block.dst_offsets>`) and each group's rows are summed by
  ``torch.nn.functional.embedding_bag``. Its backward is the same reduction over the
  transposed block, :math:`\nabla \mathbf{h}_u = \sum_{e = (u, v)} w_e \nabla
  \mathbf{out}_v` (edges grouped by source), again with no per-edge tensor.
"""

from __future__ import annotations

import torch
from torch.nn import functional as F

from graphsys.errors import GraphsysError
from graphsys.sampling.block import Block, PaddedBlock, group_offsets


def check_input(x: torch.Tensor, block: Block, in_dim: int, name: str,
                padded: bool = False) -> None:
    """``x`` must be float (block.num_src_nodes, in_dim) on the block's device; a
    :class:`~graphsys.sampling.PaddedBlock` is refused unless the layer takes it
    (``padded``)."""
    if not padded and isinstance(block, PaddedBlock):
        raise GraphsysError(f"{name} aggregates a Block; padded blocks (the fixed shapes of a "
                            f"step captured as one CUDA graph) are taken by the layers whose "
                            f"takes_padded holds: SAGEConv, GCNConv, GATConv, GINConv")
    if x.dim() != 2 or x.shape[0] != block.num_src_nodes or x.shape[1] != in_dim:
        raise GraphsysError(f"{name}: input of shape {tuple(x.shape)}, expected "
                            f"({block.num_src_nodes}, {in_dim}) (block source nodes x in_dim)")


#: What moving one float along an edge (a gather into a segment reduction) costs against one
#: multiply-add of a dense product, in :func:`project_first`'s rule
GATHER_COST = 2


def project_first(block: Block | tuple[int, int, int], in_dim: int, out_dim: int) -> bool:
    r"""Whether a layer that both aggregates over ``block`` (or sizes ``(num_src_nodes,
    num_dst_nodes, num_edges)``) and multiplies by an ``in_dim`` x ``out_dim`` matrix does
    less work projecting first:
    :math:`n_{src} F F' + g E F' < g E F + n_{dst} F F'` (:data:`GATHER_COST` ``g``), the
    product of every source row and the move of the narrower rows along the ``E`` edges,
    against the move of the input rows and the product of the destinations' means only. On
    a full-neighbourhood block (every source a destination) it is ``F' < F``; on a sampled
    block, whose sources outnumber its destinations by about the fanout, mostly False.

    Examples
    --------
    >>> import torch
    >>> from graphsys.sampling import Block
    >>> full = Block(torch.arange(3), 3, torch.tensor([0, 1, 2]), torch.tensor([1, 2, 0]))
    >>> project_first(full, 100, 64), project_first(full, 64, 100)
    (True, False)
    >>> fan = Block(torch.arange(11), 1, torch.arange(1, 11), torch.zeros(10, dtype=torch.long))
    >>> project_first(fan, 100, 64)
    False
    """
    n_src, n_dst, e = ((block.num_src_nodes, block.num_dst_nodes, block.num_edges)
                       if isinstance(block, Block) else block)
    return (n_src * in_dim * out_dim + GATHER_COST * e * out_dim
            < GATHER_COST * e * in_dim + n_dst * in_dim * out_dim)


def scatter_sum(values: torch.Tensor, index: torch.Tensor, size: int) -> torch.Tensor:
    """``out[i] = sum of values[e] with index[e] == i``; values (E, F) -> (size, F)."""
    out = torch.zeros(size, values.shape[1], dtype=values.dtype, device=values.device)
    return out.index_add_(0, index, values)


def segment_weights_sum(weight: torch.Tensor, index: torch.Tensor, size: int) -> torch.Tensor:
    """``out[i] = sum of weight[e] with index[e] == i``; weight (E,) -> (size,)."""
    out = torch.zeros(size, dtype=weight.dtype, device=weight.device)
    return out.index_add_(0, index, weight)


def _by_source(ctx, src: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(offsets, order)`` of a segment reduction's edges grouped by source: the block's
    cached :attr:`Block.src_offsets` when its edge list is the reduction's order, else a
    stable sort of ``src``."""
    if ctx.block is not None:
        return ctx.block.src_offsets
    return group_offsets(src, ctx.num_src), torch.argsort(src, stable=True)


class _SegmentSum(torch.autograd.Function):
    """``out[v] = sum over edges k in [offsets[v], offsets[v+1]) of w[k] * h[src[k]]``
    (``src``, ``dst``, ``w`` in destination order); ``w`` gets no gradient. ``block``: the
    block whose edge list is this order (its cached :attr:`Block.src_offsets` groups the
    edges by source for the backward pass), or None to sort ``src`` there."""

    @staticmethod
    def forward(ctx, h, src, dst, offsets, w, block):
        ctx.save_for_backward(src, dst, w)
        ctx.num_src, ctx.block = h.shape[0], block
        return F.embedding_bag(src, h, offsets, mode="sum", per_sample_weights=w,
                               include_last_offset=True)

    @staticmethod
    def backward(ctx, grad):
        if not ctx.needs_input_grad[0]:
            return None, None, None, None, None, None
        src, dst, w = ctx.saved_tensors
        by_src, order = _by_source(ctx, src)      # the transposed block
        grad_h = F.embedding_bag(dst.index_select(0, order), grad.contiguous(), by_src,
                                 mode="sum", per_sample_weights=w.index_select(0, order),
                                 include_last_offset=True)
        return grad_h, None, None, None, None, None


def segment_sum(h: torch.Tensor, block: Block, weight: torch.Tensor | None = None
                ) -> torch.Tensor:
    r"""``out[v] = sum over the block's edges (u, v) of weight[e] * h[u]``: (num_src, F) ->
    (num_dst, F), with no per-edge tensor (see the module docstring); ``weight`` (E,) in
    the block's edge order (default all ones) receives no gradient."""
    offsets, order = block.dst_offsets
    src = block.edge_src if order is None else block.edge_src[order]
    dst = block.edge_dst if order is None else block.edge_dst[order]
    w = (torch.ones(block.num_edges, dtype=h.dtype, device=h.device) if weight is None else
         (weight if order is None else weight[order]).to(h.dtype).detach())
    return _SegmentSum.apply(h, src, dst, offsets, w, block if order is None else None)


class _SegmentMean(torch.autograd.Function):
    """``out[v]`` = the mean of ``h[src[k]]`` over the edges k in ``[offsets[v],
    offsets[v+1])`` (0 for none), ``src`` and ``dst`` in destination order: one
    ``embedding_bag`` in mean mode, whose per-destination edge counts (a by-product of
    the bag reduction) the backward divides the gradient by before it sums it over each
    source's edges. ``block`` as :class:`_SegmentSum` takes it."""

    @staticmethod
    def forward(ctx, h, src, dst, offsets, block):
        out, _, count, _ = torch.embedding_bag(h, src, offsets, False, 1, False, None, True)
        ctx.save_for_backward(src, dst, count)
        ctx.num_src, ctx.block = h.shape[0], block
        return out

    @staticmethod
    def backward(ctx, grad):
        if not ctx.needs_input_grad[0]:
            return None, None, None, None, None
        return mean_backward(ctx, grad, *ctx.saved_tensors), None, None, None, None


def mean_backward(ctx, grad: torch.Tensor, src: torch.Tensor, dst: torch.Tensor,
                  count: torch.Tensor) -> torch.Tensor:
    """The gradient of a segment mean's input rows (``ctx.num_src``, F) from that of its
    output ``grad``: each destination's gradient divided by its edge count ``count`` (the
    bag reduction's), summed over each source's edges (``ctx.block`` as
    :class:`_SegmentSum` takes it)."""
    by_src, order = _by_source(ctx, src)
    # a destination without edges divides by 0, in a row that no edge reads
    scaled = grad / count[:grad.shape[0]].unsqueeze(1)
    return F.embedding_bag(dst.index_select(0, order), scaled, by_src, mode="sum",
                           include_last_offset=True)


def grouped_edges(block: Block) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor,
                                         Block | None]:
    """``(src, dst, offsets, block)``: the block's edges in destination order, their
    offsets, and the block when its own edge list is that order (else None)."""
    offsets, order = block.dst_offsets
    if order is None:
        return block.edge_src, block.edge_dst, offsets, block
    return block.edge_src[order], block.edge_dst[order], offsets, None


def segment_mean(h: torch.Tensor, block: Block) -> torch.Tensor:
    r"""``out[v]`` = the mean of ``h[u]`` over the block's edges (u, v) (repeated edges count
    again; 0 for a destination without edges): a segment reduction like
    :func:`segment_sum`, the mean taken by the reduction itself (no per-edge weights)."""
    return _SegmentMean.apply(h, *grouped_edges(block))
