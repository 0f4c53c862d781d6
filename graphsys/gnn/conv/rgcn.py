"""Relational graph convolution (R-GCN) with basis and block-diagonal decomposition."""

from __future__ import annotations

import math

import torch
from torch import nn

from graphsys.errors import ParameterError
from graphsys.gnn.conv._base import check_input
from graphsys.sampling.block import Block


def relation_of_edges(block: Block, edge_type: torch.Tensor | None) -> torch.Tensor:
    """The int64 (E,) relation of each block edge: ``edge_type`` if given, else the block's
    own (:class:`~graphsys.sampling.hetero.TypedBlock`)."""
    et = edge_type if edge_type is not None else getattr(block, "edge_type", None)
    if et is None:
        raise ParameterError("edge_type", "an R-GCN layer needs each edge's relation: pass a "
                             "TypedBlock or edge_type (int64, one per block edge)")
    if et.shape != block.edge_src.shape:
        raise ParameterError("edge_type", f"{tuple(et.shape)} relation ids for "
                             f"{block.num_edges} block edges")
    return et


#: The most floats of relation blocks one batched product of RGCNConv gathers (512 MiB):
#: a step's graph is one product, a whole graph's (an evaluation) a few
BLOCK_GATHER = 1 << 27

#: Device types on which RGCNConv's block-diagonal messages are multiplied one relation at
#: a time (edges sorted by relation, each relation's blocks applied to its chunk of
#: sources in one batched product, the chunks' sizes read on the host): on the CPU the
#: batched product of each edge's own gathered blocks costs more (tiny matrices, and a
#: scatter of (E, B, in/B, out/B) gradients). Other devices gather the blocks per edge,
#: with no host synchronisation.
BLOCKS_PER_RELATION = frozenset({"cpu"})


def relation_norm(dst: torch.Tensor, edge_type: torch.Tensor, num_relations: int
                  ) -> torch.Tensor:
    """The float32 (E,) factors :math:`1 / c_{i,r}` of R-GCN's ``aggr="mean"``: one over
    the number of edges of the same destination and relation. Counted by sorting the keys
    ``dst * R + r`` and searching each edge's key in them, so the work is of the edges (no
    table of destinations x relations) and the output's size is known beforehand (no host
    synchronisation on a GPU, as ``unique`` would need).

    Examples
    --------
    >>> import torch
    >>> from graphsys.gnn.conv.rgcn import relation_norm
    >>> relation_norm(torch.tensor([0, 0, 0, 1]), torch.tensor([1, 1, 0, 1]), 2)
    tensor([0.5000, 0.5000, 1.0000, 1.0000])
    """
    return _inverse_counts(dst * num_relations + edge_type)


def degree_norm(dst: torch.Tensor) -> torch.Tensor:
    """The float32 (E,) factors one over the in-degree of each edge's destination over
    every relation (:math:`c_{i,r} = |\\mathcal{N}_i|`, DGL's ``norm_by_dst``), counted
    as :func:`relation_norm` counts, with no host synchronisation.

    Examples
    --------
    >>> import torch
    >>> from graphsys.gnn.conv.rgcn import degree_norm
    >>> degree_norm(torch.tensor([0, 0, 0, 1]))
    tensor([0.3333, 0.3333, 0.3333, 1.0000])
    """
    return _inverse_counts(dst)


def _inverse_counts(key: torch.Tensor) -> torch.Tensor:
    """One over the number of entries of ``key`` equal to each entry (float32)."""
    keys = torch.sort(key).values
    cnt = torch.searchsorted(keys, key, right=True) - torch.searchsorted(keys, key)
    return 1.0 / cnt.to(torch.float32)


class RGCNConv(nn.Module):
    r"""The relational graph convolution of Schlichtkrull et al., "Modeling Relational Data
    with Graph Convolutional Networks", https://arxiv.org/abs/1703.06103.

    .. math::
        \mathbf{h}'_i = \mathbf{W}_0^\top \mathbf{h}_i + \sum_{r \in \mathcal{R}}
        \sum_{j \in \mathcal{N}_i^r} \frac{1}{c_{i,r}} \mathbf{W}_r^\top \mathbf{h}_j
        + \mathbf{b}

    where :math:`\mathcal{N}_i^r` are the block's sources of ``i`` along relation ``r``
    (a repeated edge counts again) and :math:`c_{i,r} = |\mathcal{N}_i^r|` with
    ``aggr="mean"`` (the paper's normalisation; PyG's ``RGCNConv`` default) or 1 with
    ``aggr="sum"``. The relation weights :math:`\mathbf{W}_r` (``in_dim x out_dim``) are

    * free (no decomposition): ``weight`` of shape (R, in_dim, out_dim);
    * *basis decomposition* (``num_bases`` = B): :math:`\mathbf{W}_r = \sum_{b=1}^B
      a_{rb} \mathbf{V}_b`, ``weight`` (B, in_dim, out_dim) holds the :math:`\mathbf{V}_b`
      and ``comp`` (R, B) the :math:`a_{rb}`;
    * *block-diagonal decomposition* (``num_blocks`` = B): :math:`\mathbf{W}_r =
      \operatorname{diag}(\mathbf{Q}_{r1}, \dots, \mathbf{Q}_{rB})`, ``weight`` of shape
      (R, B, in_dim/B, out_dim/B).

    :math:`\mathbf{W}_0` is ``root`` (in_dim, out_dim), the self-connection, and
    :math:`\mathbf{b}` ``bias``: the parameter layout of PyG's ``RGCNConv``, so a state
    copied from one gives the other's output.

    Parameters
    ----------
    in_dim : int
        Input features :math:`F`.
    out_dim : int
        Output features :math:`F'`.
    num_relations : int
        Relations :math:`|\mathcal{R}|` (edge types ``0..R-1``).
    num_bases : int, optional
        Basis decomposition with this many bases (default None).
    num_blocks : int, optional
        Block-diagonal decomposition with this many blocks; it must divide ``in_dim`` and
        ``out_dim`` (default None). At most one of ``num_bases`` and ``num_blocks``.
    aggr : {"mean", "sum"}, optional
        Per-relation normalisation :math:`c_{i,r}` (default ``"mean"``).
    root_weight : bool, optional
        Learn the self-connection :math:`\mathbf{W}_0` (default True).
    bias : bool, optional
        Learn :math:`\mathbf{b}` (default True).

    Notes
    -----
    Shapes: input ``x`` float (num_src_nodes, F) and a block whose edges carry relation ids
    (a :class:`~graphsys.sampling.hetero.TypedBlock`, or ``edge_type`` int64 (E,));
    output float (num_dst_nodes, F'). Memory: the gathered sources and the messages,
    (E, F) + (E, F') floats, plus for the basis decomposition (E, B, F') projected rows
    and for blocks off the CPU each edge's relation blocks, (E, F F' / B) floats gathered
    in edge chunks of at most ``BLOCK_GATHER`` floats; free weights, and blocks on the CPU
    (:data:`BLOCKS_PER_RELATION`), are never gathered per edge: one product per relation
    present, their counts read on the host. No other operator loops over the relations.

    References
    ----------
    .. [1] M. Schlichtkrull, T. N. Kipf, P. Bloem, R. van den Berg, I. Titov and
       M. Welling, "Modeling Relational Data with Graph Convolutional Networks", ESWC 2018,
       https://arxiv.org/abs/1703.06103.

    Examples
    --------
    >>> import torch
    >>> from graphsys.gnn import RGCNConv
    >>> from graphsys.sampling import TypedBlock
    >>> block = TypedBlock(torch.tensor([7, 8, 9]), 1, torch.tensor([1, 2, 2]),
    ...                    torch.tensor([0, 0, 0]), edge_type=torch.tensor([0, 1, 1]))
    >>> conv = RGCNConv(1, 1, num_relations=2, bias=False)
    >>> with torch.no_grad():                 # W_0 = 1, W of relation 0 = 10, of 1 = 100
    ...     _ = conv.root.fill_(1.0)
    ...     _ = conv.weight.copy_(torch.tensor([[[10.0]], [[100.0]]]))
    ...     conv(torch.tensor([[1.0], [2.0], [3.0]]), block)  # 1 + 10 * 2 + 100 * mean(3, 3)
    tensor([[321.]])
    """

    def __init__(self, in_dim: int, out_dim: int, num_relations: int, *,
                 num_bases: int | None = None, num_blocks: int | None = None,
                 aggr: str = "mean", root_weight: bool = True, bias: bool = True):
        super().__init__()
        if num_bases is not None and num_blocks is not None:
            raise ParameterError("num_blocks", "give num_bases or num_blocks, not both")
        if num_relations < 1:
            raise ParameterError("num_relations", f"must be at least 1, got {num_relations}")
        if aggr not in ("mean", "sum"):
            raise ParameterError("aggr", f"must be 'mean' or 'sum', got {aggr!r}")
        if num_bases is not None and num_bases < 1:
            raise ParameterError("num_bases", f"must be at least 1, got {num_bases}")
        if num_blocks is not None and (num_blocks < 1 or in_dim % num_blocks
                                       or out_dim % num_blocks):
            raise ParameterError("num_blocks", f"{num_blocks} blocks must divide in_dim "
                                 f"{in_dim} and out_dim {out_dim}")
        self.in_dim, self.out_dim, self.num_relations = in_dim, out_dim, num_relations
        self.num_bases, self.num_blocks, self.aggr = num_bases, num_blocks, aggr
        if num_bases is not None:
            self.weight = nn.Parameter(torch.empty(num_bases, in_dim, out_dim))
            self.comp = nn.Parameter(torch.empty(num_relations, num_bases))
        elif num_blocks is not None:
            self.weight = nn.Parameter(torch.empty(num_relations, num_blocks,
                                                   in_dim // num_blocks, out_dim // num_blocks))
            self.register_parameter("comp", None)
        else:
            self.weight = nn.Parameter(torch.empty(num_relations, in_dim, out_dim))
            self.register_parameter("comp", None)
        self.root = nn.Parameter(torch.empty(in_dim, out_dim)) if root_weight else None
        self.bias = nn.Parameter(torch.empty(out_dim)) if bias else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Glorot-uniform weights (per relation, basis or block), zero bias."""
        def glorot(t: torch.Tensor, fan_in: int, fan_out: int) -> None:
            a = math.sqrt(6.0 / (fan_in + fan_out))
            nn.init.uniform_(t, -a, a)
        if self.num_blocks is not None:
            b = self.num_blocks
            glorot(self.weight, self.in_dim // b, self.out_dim // b)
        else:
            glorot(self.weight, self.in_dim, self.out_dim)
        if self.comp is not None:
            glorot(self.comp, self.num_relations, self.num_bases)
        if self.root is not None:
            glorot(self.root, self.in_dim, self.out_dim)
        if self.bias is not None:
            nn.init.zeros_(self.bias)

    def relation_weight(self, r: int) -> torch.Tensor:
        """:math:`\\mathbf{W}_r` as a dense (in_dim, out_dim) matrix."""
        if self.num_bases is not None:
            return torch.einsum("b,bio->io", self.comp[r], self.weight)
        if self.num_blocks is not None:
            return torch.block_diag(*self.weight[r])
        return self.weight[r]

    def forward(self, x: torch.Tensor, block: Block, edge_type: torch.Tensor | None = None,
                *, edge_norm: torch.Tensor | None = None, validate: bool = True
                ) -> torch.Tensor:
        """The layer's output (num_dst_nodes, out_dim).

        ``edge_norm``: float (E,) per-edge factors used instead of ``aggr``'s
        :math:`1 / c_{i,r}` (:func:`relation_norm` computes those once for several layers);
        ``validate=False`` skips the range check of the relation ids, which reads them on
        the host (a synchronisation on a GPU): for blocks built correct by construction.
        """
        check_input(x, block, self.in_dim, "RGCNConv")
        et = relation_of_edges(block, edge_type)
        n_dst = block.num_dst_nodes
        out = (x[:n_dst] @ self.root if self.root is not None
               else x.new_zeros(n_dst, self.out_dim))
        if block.num_edges:
            if validate and (int(et.min()) < 0 or int(et.max()) >= self.num_relations):
                raise ParameterError("edge_type", f"relation ids must lie in 0.."
                                     f"{self.num_relations - 1}")
            if edge_norm is None and self.aggr == "mean":
                edge_norm = relation_norm(block.edge_dst, et, self.num_relations)
            out = out + self._propagate(x, block.edge_src, block.edge_dst, et, n_dst,
                                        edge_norm)
        if self.bias is not None:
            out = out + self.bias
        return out

    def _propagate(self, x, src, dst, et, n_dst, norm) -> torch.Tensor:
        """:math:`\\sum_r \\sum_j c_{i,r}^{-1} \\mathbf{W}_r^\\top \\mathbf{h}_j`
        for every relation at once: bases project every source once per basis and mix the
        bases per edge; blocks (off :data:`BLOCKS_PER_RELATION`) gather each edge's
        relation blocks (E, B, in/B, out/B) and multiply in one batched matmul; free
        weights (and blocks on :data:`BLOCKS_PER_RELATION`) sort the edges by relation and
        multiply one chunk per relation."""
        if self.num_bases is not None:
            xw = torch.einsum("ni,bio->nbo", x, self.weight).index_select(0, src)
            msg = torch.einsum("eb,ebo->eo", self.comp.index_select(0, et), xw)
        elif self.num_blocks is not None and x.device.type not in BLOCKS_PER_RELATION:
            # a chunk's gathered blocks hold at most BLOCK_GATHER floats
            step = max(1, BLOCK_GATHER // self.weight[0].numel())
            parts = [self._block_messages(x, src[i:i + step], et[i:i + step])
                     for i in range(0, src.shape[0], step)]
            msg = parts[0] if len(parts) == 1 else torch.cat(parts)
        else:
            msg, order = self._per_relation(x, src, et)
            dst = dst[order]
            norm = None if norm is None else norm[order]
        if norm is not None:
            msg = msg * norm.to(msg.dtype).unsqueeze(1)
        return x.new_zeros(n_dst, self.out_dim).index_add_(0, dst, msg)

    def _block_messages(self, x, src, et) -> torch.Tensor:
        """Block-diagonal messages (E, out_dim): each edge's relation blocks gathered and
        applied to its source in one batched matmul."""
        b, e = self.num_blocks, src.shape[0]
        h = x.index_select(0, src).view(e, b, 1, self.in_dim // b)
        return torch.matmul(h, self.weight.index_select(0, et)).view(e, self.out_dim)

    def _per_relation(self, x, src, et) -> tuple[torch.Tensor, torch.Tensor]:
        """Messages of free or block weights, edges sorted by relation (and that order):
        the sources gathered once and split into one chunk per relation (autograd joins
        the chunks' gradients once); a (E, in_dim, out_dim) weight gather would not fit."""
        order = torch.argsort(et, stable=True)
        src, et = src[order], et[order]
        counts = torch.bincount(et, minlength=self.num_relations).tolist()
        parts = torch.split(x.index_select(0, src), counts)
        weights = self.weight.unbind(0)
        return torch.cat([self._times(parts[r], weights[r])
                          for r, c in enumerate(counts) if c]), order

    def _times(self, h: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        """Rows ``h`` (n, in_dim) times one relation's weight: a full matrix, or its
        blocks (B, in/B, out/B) applied to each row's B slices in one batched product."""
        if self.num_blocks is None:
            return h @ w
        b = self.num_blocks
        return torch.bmm(h.view(-1, b, self.in_dim // b).transpose(0, 1), w
                         ).transpose(0, 1).reshape(-1, self.out_dim)

    def __repr__(self) -> str:
        dec = (f", num_bases={self.num_bases}" if self.num_bases is not None else
               f", num_blocks={self.num_blocks}" if self.num_blocks is not None else "")
        return (f"{type(self).__name__}({self.in_dim}, {self.out_dim}, "
                f"num_relations={self.num_relations}{dec}, aggr={self.aggr!r})")
