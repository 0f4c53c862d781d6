"""GraphSAGE convolution with the mean aggregator."""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from graphsys.errors import GraphsysError
from graphsys.gnn.conv._base import (
    check_input,
    grouped_edges,
    mean_backward,
    project_first,
    scatter_sum,
    segment_mean,
    segment_weights_sum,
)
from graphsys.gnn.conv.spec import ModelSpec, stacked
from graphsys.gnn.sparse_input import linear
from graphsys.sampling.block import Block, PaddedBlock


class SAGEConv(nn.Module):
    r"""The GraphSAGE operator (mean aggregator) from Hamilton et al., "Inductive
    Representation Learning on Large Graphs", https://arxiv.org/abs/1706.02216.

    .. math::
        \mathbf{H}' = \mathbf{H}_{dst} \mathbf{W}_1 + \mathbf{D}^{-1} \mathbf{A}
        \mathbf{H}_{src} \mathbf{W}_2 + \mathbf{b}

    node-wise, :math:`\mathbf{h}'_v = \mathbf{W}_1^\top \mathbf{h}_v + \mathbf{W}_2^\top
    \frac{1}{|\mathcal{N}(v)|} \sum_{u \in \mathcal{N}(v)} \mathbf{h}_u + \mathbf{b}`, where
    :math:`\mathcal{N}(v)` are the block's sources of ``v`` (repeated edges count again) and
    the mean over no neighbours is 0. :math:`\mathbf{A}` is the (num_dst x num_src) block
    adjacency, :math:`\mathbf{D}` its row degrees.

    Parameters
    ----------
    in_dim : int
        Input features :math:`F`.
    out_dim : int
        Output features :math:`F'`.
    bias : bool, optional
        Learn :math:`\mathbf{b}` (default True).

    Notes
    -----
    Shapes: input ``x`` float (num_src_nodes, F) and a :class:`~graphsys.sampling.Block`
    (or a :class:`~graphsys.sampling.PaddedBlock`, whose padding rows give outputs that no
    real row reads); output float (num_dst_nodes, F'). ``x`` may be a CSR tensor (sparse
    raw features) where :attr:`sparse_input` holds and the block has every source as a
    destination (a full-neighbourhood layer). :math:`\mathbf{W}_2` multiplies the sources'
    rows before the mean or the destinations' means after it, whichever does less work on
    the block (:func:`~graphsys.gnn.conv._base.project_first`): mostly after it on a
    sampled block.

    References
    ----------
    .. [1] W. L. Hamilton, R. Ying and J. Leskovec, "Inductive Representation Learning on
       Large Graphs", NeurIPS 2017, https://arxiv.org/abs/1706.02216.

    Examples
    --------
    >>> import torch
    >>> from graphsys.gnn import SAGEConv
    >>> from graphsys.sampling import Block
    >>> block = Block(torch.tensor([7, 8, 9]), 1, torch.tensor([1, 2]), torch.tensor([0, 0]))
    >>> conv = SAGEConv(2, 1, bias=False)    # node 7: 1 * (1 + 0) + 10 * mean(2 + 2, 4 + 0)
    >>> with torch.no_grad():
    ...     _ = conv.lin_self.weight.fill_(1.0)
    ...     _ = conv.lin_neigh.weight.fill_(10.0)
    ...     conv(torch.tensor([[1., 0.], [2., 2.], [4., 0.]]), block)
    tensor([[41.]])
    """

    #: :meth:`forward` takes a :class:`~graphsys.sampling.PaddedBlock`
    takes_padded = True

    def __init__(self, in_dim: int, out_dim: int, bias: bool = True):
        super().__init__()
        self.in_dim, self.out_dim = in_dim, out_dim
        #: takes a CSR ``x`` (:mod:`graphsys.gnn.sparse_input`) in full-neighbourhood
        #: blocks: it projects before aggregating, so ``x`` only meets one product
        self.sparse_input = out_dim < in_dim
        self.lin_self = nn.Linear(in_dim, out_dim, bias=bias)
        self.lin_neigh = nn.Linear(in_dim, out_dim, bias=False)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        self.lin_self.reset_parameters()
        self.lin_neigh.reset_parameters()

    def forward(self, x: torch.Tensor, block: Block | PaddedBlock) -> torch.Tensor:
        check_input(x, block, self.in_dim, "SAGEConv", padded=True)
        if isinstance(block, PaddedBlock):
            return self._forward_padded(x, block)
        n_dst = block.num_dst_nodes
        first = project_first(block, self.in_dim, self.out_dim)
        if first and n_dst == block.num_src_nodes:
            # full-neighbourhood layer: both projections in one matmul, reading x once
            both = linear(x, torch.cat([self.lin_neigh.weight, self.lin_self.weight]))
            h, self_part = both[:, :self.out_dim], both[:, self.out_dim:]
            mean = self._mean(h, block)
            if self.lin_self.bias is not None:
                self_part = self_part + self.lin_self.bias
            return self_part + mean
        if first and type(self).message is SAGEConv.message:
            return _ProjectedSage.apply(x, self.lin_self.weight, self.lin_neigh.weight,
                                        self.lin_self.bias, *grouped_edges(block))
        if first:
            return self.lin_self(x[:n_dst]) + self._mean(self.lin_neigh(x), block)
        # x_dst W_self^T + b, then mean(x) W_neigh^T accumulated into it in place: no sum
        # pass, the bias fused into the first product
        bias = self.lin_self.bias
        out = (x[:n_dst] @ self.lin_self.weight.t() if bias is None else
               torch.addmm(bias, x[:n_dst], self.lin_self.weight.t()))
        return out.addmm_(self._mean(x, block), self.lin_neigh.weight.t())

    def _forward_padded(self, x: torch.Tensor, block: PaddedBlock) -> torch.Tensor:
        """:meth:`forward` on a padded block: the mean of each row's weighted picks
        (:meth:`PaddedBlock.mean`), of the projected rows where that does less work."""
        if type(self).message is not SAGEConv.message:
            raise GraphsysError(f"{type(self).__name__}: a message of its own needs a Block "
                                f"(padded blocks hold no edge list)")
        n_dst, bias = block.num_dst_nodes, self.lin_self.bias
        out = (x[:n_dst] @ self.lin_self.weight.t() if bias is None else
               torch.addmm(bias, x[:n_dst], self.lin_self.weight.t()))
        if project_first((block.num_src_nodes, n_dst, n_dst * block.fanout), self.in_dim,
                         self.out_dim):
            return out + block.mean(x @ self.lin_neigh.weight.t())
        return out.addmm_(block.mean(x), self.lin_neigh.weight.t())

    @property
    def projects_first(self) -> bool:
        """The layer multiplies its input by its weights before aggregating (it has fewer
        output than input features): then :meth:`forward_projected` of :meth:`project`
        equals :meth:`forward`, and a layer-wise inference can project each node's row
        once and move the narrower projections along the edges."""
        return self.out_dim < self.in_dim

    def project(self, x: torch.Tensor) -> torch.Tensor:
        r""":math:`[\mathbf{X} \mathbf{W}_2 \; \mathbf{X} \mathbf{W}_1]`: each row's two
        products side by side, (n, 2 F')."""
        return linear(x, torch.cat([self.lin_neigh.weight, self.lin_self.weight]))

    def forward_projected(self, z: torch.Tensor, block: Block) -> torch.Tensor:
        """:meth:`forward` of the rows whose :meth:`project` is ``z`` (block.num_src_nodes,
        2 F')."""
        check_input(z, block, 2 * self.out_dim, "SAGEConv")
        out = z[:block.num_dst_nodes, self.out_dim:]
        if self.lin_self.bias is not None:
            out = out + self.lin_self.bias
        return out + self._mean(z[:, :self.out_dim].contiguous(), block)

    def forward_rows(self, states: torch.Tensor, index: torch.Tensor, block: Block
                     ) -> torch.Tensor:
        """:meth:`forward` of ``x = states[index]`` without gathering ``x``: the
        destinations' rows are gathered and the neighbour mean reads ``states`` directly
        (a layer-wise inference's rows of the whole layer, ``index`` (block.num_src_nodes,)
        their positions). Without gradients; no subclass ``message`` may be defined."""
        if states.dim() != 2 or states.shape[1] != self.in_dim or index.shape != (
                block.num_src_nodes,):
            raise GraphsysError(f"SAGEConv: states of shape {tuple(states.shape)} and index of "
                                f"shape {tuple(index.shape)}, expected (n, {self.in_dim}) and "
                                f"({block.num_src_nodes},) (block source nodes)")
        offsets, order = block.dst_offsets
        src = block.edge_src if order is None else block.edge_src.index_select(0, order)
        mean = F.embedding_bag(index.index_select(0, src), states, offsets, mode="mean",
                               include_last_offset=True)
        x_dst = states.index_select(0, index[:block.num_dst_nodes])
        bias = self.lin_self.bias
        out = (x_dst @ self.lin_self.weight.t() if bias is None else
               torch.addmm(bias, x_dst, self.lin_self.weight.t()))
        return out.addmm_(mean, self.lin_neigh.weight.t())

    @property
    def reads_rows(self) -> bool:
        """:meth:`forward_rows` applies (the mean of :meth:`forward`, no subclass
        ``message``); it aggregates the input rows before the product."""
        return type(self).message is SAGEConv.message

    def _mean(self, h: torch.Tensor, block: Block) -> torch.Tensor:
        """Mean of ``h``'s rows over each destination's block sources; (num_dst, F): a
        segment reduction of the rows (no per-edge tensor) unless a subclass defines its
        own :meth:`message`."""
        if type(self).message is SAGEConv.message:
            return segment_mean(h, block)
        n_dst = block.num_dst_nodes
        summed = scatter_sum(self.message(h, block), block.edge_dst, n_dst)
        deg = segment_weights_sum(torch.ones_like(block.edge_dst, dtype=h.dtype),
                                  block.edge_dst, n_dst).clamp_(min=1.0)
        return summed / deg.unsqueeze(1)

    def message(self, h_src: torch.Tensor, block: Block) -> torch.Tensor:
        """Per-edge messages: the source rows, (E, F). The mean aggregation reduces the
        source rows directly; a subclass that overrides this method gets its messages
        materialised and averaged per destination."""
        return h_src.index_select(0, block.edge_src)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.in_dim}, {self.out_dim}, aggr='mean')"


class _ProjectedSage(torch.autograd.Function):
    """``x[:n_dst] W_self^T + b + mean(x W_neigh^T)`` (the operators of
    :meth:`SAGEConv.forward` projecting first), its backward written out: the gradient of
    ``x`` is the neighbour part's product, the self part's accumulated into its destination
    rows in place (autograd expands the slice's gradient to ``x``'s shape, then adds)."""

    @staticmethod
    def forward(ctx, x, w_self, w_neigh, bias, src, dst, offsets, block):
        x_dst = x[:len(offsets) - 1]
        out = x_dst.mm(w_self.t()) if bias is None else torch.addmm(bias, x_dst, w_self.t())
        mean, _, count, _ = torch.embedding_bag(x.mm(w_neigh.t()), src, offsets, False, 1,
                                                False, None, True)
        ctx.save_for_backward(src, dst, count, x, w_self, w_neigh)
        ctx.num_src, ctx.block = x.shape[0], block
        return out.add_(mean)

    @staticmethod
    def backward(ctx, grad):
        src, dst, count, x, w_self, w_neigh = ctx.saved_tensors
        need = ctx.needs_input_grad
        g_y = mean_backward(ctx, grad, src, dst, count) if need[0] or need[2] else None
        g_x = None
        if need[0]:
            g_x = g_y.mm(w_neigh)
            g_x[:grad.shape[0]].addmm_(grad, w_self)
        return (g_x, grad.t().mm(x[:grad.shape[0]]) if need[1] else None,
                g_y.t().mm(x) if need[2] else None, grad.sum(0) if need[3] else None,
                None, None, None, None)


SAGE_MODEL = ModelSpec(stacked(SAGEConv), F.relu)
