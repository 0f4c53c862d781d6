"""Graph convolution of Kipf & Welling with symmetric normalisation and self-loops."""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from graphsys.errors import GraphsysError
from graphsys.gnn.conv._base import (
    check_input,
    project_first,
    scatter_sum,
    segment_sum,
    segment_weights_sum,
)
from graphsys.gnn.conv.spec import ModelSpec, stacked
from graphsys.sampling.block import Block, PaddedBlock


class GCNConv(nn.Module):
    r"""The graph convolutional operator from Kipf & Welling, "Semi-supervised
    Classification with Graph Convolutional Networks", https://arxiv.org/abs/1609.02907.

    .. math::
        \mathbf{H}' = \hat{\mathbf{D}}_{dst}^{-1/2} \hat{\mathbf{A}}
        \hat{\mathbf{D}}_{src}^{-1/2} \mathbf{H} \mathbf{W} + \mathbf{b}

    node-wise, :math:`\mathbf{h}'_v = \mathbf{W}^\top \sum_{u \in \mathcal{N}(v) \cup \{v\}}
    \frac{1}{\sqrt{\hat d_u \hat d_v}} \mathbf{h}_u + \mathbf{b}`, with
    :math:`\hat{\mathbf{A}} = \mathbf{A} + \mathbf{I}` (a self-loop from every destination to
    itself, which replaces the block's own self-loop edges, as PyG's
    ``add_remaining_self_loops``: a node is its own neighbour once), :math:`\hat d_v` =
    in-degree of destination ``v`` in the block + 1 and :math:`\hat d_u` = out-degree of
    source ``u`` in the block, + 1 if ``u`` is also a destination, self-loop edges not
    counted. A sampled block (fixed fanout) is normalised by these in-block degrees, as
    PyG's ``gcn_norm`` on the sampled subgraph and DGL's ``GraphConv`` on a block. On a
    full neighbourhood (fanout -1, as layer-wise inference samples) the samplers fill the
    block's :attr:`~graphsys.sampling.Block.src_degree` and :math:`\hat d_u` is ``u``'s
    out-degree in the graph + 1, so a node's output does not depend on the other
    destinations of its block: a layer-wise inference in chunks, a full-neighbourhood
    minibatch and the full graph agree. On a full neighbourhood of a symmetric graph both
    are the node degree + 1, the formula of the paper.

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
    (or a :class:`~graphsys.sampling.PaddedBlock`: the same picks, degrees and sums, its
    padding rows' outputs read by no real row); output float (num_dst_nodes, F').
    :math:`\mathbf{W}` multiplies the rows before the sum or after it, whichever does less
    work on the block (:func:`~graphsys.gnn.conv._base.project_first`).

    References
    ----------
    .. [1] T. N. Kipf and M. Welling, "Semi-Supervised Classification with Graph
       Convolutional Networks", ICLR 2017, https://arxiv.org/abs/1609.02907.

    Examples
    --------
    Destination 0 with one neighbour, node 1, in the block: :math:`\hat d_v = 2` for
    ``v = 0`` (its edge and self-loop), :math:`\hat d_u = 1` for both sources ``u`` (the
    self-loop of 0, the edge of 1), so :math:`h'_0 = (h_0 + h_1) / \sqrt{2}`:

    >>> import torch
    >>> from graphsys.gnn import GCNConv
    >>> from graphsys.sampling import Block
    >>> block = Block(torch.tensor([0, 1]), 1, torch.tensor([1]), torch.tensor([0]))
    >>> conv = GCNConv(1, 1, bias=False)
    >>> with torch.no_grad():
    ...     _ = conv.lin.weight.fill_(1.0)
    ...     conv(torch.tensor([[2.0], [2.0]]), block)
    tensor([[2.8284]])
    """

    #: :meth:`forward` takes a :class:`~graphsys.sampling.PaddedBlock`
    takes_padded = True

    def __init__(self, in_dim: int, out_dim: int, bias: bool = True):
        super().__init__()
        self.in_dim, self.out_dim = in_dim, out_dim
        self.lin = nn.Linear(in_dim, out_dim, bias=False)
        self.bias = nn.Parameter(torch.zeros(out_dim)) if bias else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        nn.init.xavier_uniform_(self.lin.weight)
        if self.bias is not None:
            nn.init.zeros_(self.bias)

    def forward(self, x: torch.Tensor, block: Block | PaddedBlock) -> torch.Tensor:
        check_input(x, block, self.in_dim, "GCNConv", padded=True)
        sizes = ((block.num_src_nodes, block.num_dst_nodes, block.neighbours.numel())
                 if isinstance(block, PaddedBlock) else block)
        if type(self).message is not GCNConv.message or project_first(sizes, self.in_dim,
                                                                      self.out_dim):
            return self.forward_projected(self.lin(x), block)
        out = self.lin(self._propagate(x, block))   # the narrower product after the sum
        return out if self.bias is None else out + self.bias

    @property
    def projects_first(self) -> bool:
        """Moving :meth:`project`'s rows along the edges instead of the input's saves work
        (fewer output than input features); :meth:`forward_projected` of :meth:`project`
        equals :meth:`forward` whatever the widths."""
        return self.out_dim < self.in_dim

    def project(self, x: torch.Tensor) -> torch.Tensor:
        r""":math:`\mathbf{X} \mathbf{W}`, (n, F')."""
        return self.lin(x)

    def forward_projected(self, z: torch.Tensor, block: Block | PaddedBlock) -> torch.Tensor:
        """:meth:`forward` of the rows whose :meth:`project` is ``z`` (block.num_src_nodes,
        F')."""
        check_input(z, block, self.out_dim, "GCNConv", padded=True)
        out = self._propagate(z, block)
        return out if self.bias is None else out + self.bias

    def _propagate(self, h: torch.Tensor, block: Block | PaddedBlock) -> torch.Tensor:
        r""":math:`\hat{\mathbf{D}}_{dst}^{-1/2} \hat{\mathbf{A}}
        \hat{\mathbf{D}}_{src}^{-1/2} \mathbf{H}` of rows ``h`` (num_src_nodes, any width)."""
        n_dst, n_src = block.num_dst_nodes, block.num_src_nodes
        if isinstance(block, PaddedBlock):
            return self._propagate_padded(h, block)
        # a self-loop edge (destinations come first among the sources, so the same
        # position) weighs 0: the added loop of I stands for it
        w = (block.edge_src != block.edge_dst).to(h.dtype)
        deg_dst = segment_weights_sum(w, block.edge_dst, n_dst) + 1.0
        if block.src_degree is not None:        # the graph's: whatever shares the block
            deg_src = block.src_degree.to(h.dtype) + 1.0
        else:
            deg_src = segment_weights_sum(w, block.edge_src, n_src)
            deg_src[:n_dst] += 1.0
        h = h * deg_src.rsqrt().unsqueeze(1)
        if type(self).message is GCNConv.message:   # no per-edge tensor
            out = segment_sum(h, block, w) + h[:n_dst]
        else:
            out = scatter_sum(self.message(h, block) * w.unsqueeze(1), block.edge_dst,
                              n_dst) + h[:n_dst]
        return out * deg_dst.rsqrt().unsqueeze(1)

    def _propagate_padded(self, h: torch.Tensor, block: PaddedBlock) -> torch.Tensor:
        """:meth:`_propagate` on a padded block: the same degrees, counted over its picks
        (a self pick weighs 0) and its real destinations' loops, and each row's weighted
        sum of its picks. A source row no pick reads (the padding node's) gets degree 1,
        not 0: no real row reads it, and its gradient stays finite."""
        if type(self).message is not GCNConv.message:
            raise GraphsysError(f"{type(self).__name__}: a message of its own needs a Block "
                                f"(padded blocks hold no edge list)")
        n_dst = block.num_dst_nodes
        w = (block.picked & ~block.self_picks).to(h.dtype)                  # (D, k)
        deg_dst = w.sum(1) + 1.0
        deg_src = torch.zeros(block.num_src_nodes, dtype=h.dtype, device=h.device)
        deg_src = deg_src.index_add_(0, block.neighbours.view(-1), w.view(-1))
        deg_src[:n_dst] += block.real_dst.to(h.dtype)
        h = h * deg_src.clamp_(min=1.0).rsqrt().unsqueeze(1)
        return (block.aggregate(h, w) + h[:n_dst]) * deg_dst.rsqrt().unsqueeze(1)

    def message(self, h_src: torch.Tensor, block: Block) -> torch.Tensor:
        """Per-edge messages: the (source-normalised) source rows, (E, F'). The sum
        aggregation reduces the rows directly; a subclass that overrides this method gets
        its messages materialised and summed per destination."""
        return h_src.index_select(0, block.edge_src)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.in_dim}, {self.out_dim})"


GCN_MODEL = ModelSpec(stacked(GCNConv), F.relu)
