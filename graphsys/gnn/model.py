"""Stacks of convolution layers: the models ``graphsys gnn`` trains.

A model is named in :data:`graphsys.plugins.GNN_MODELS`, whose
:class:`~graphsys.gnn.conv.spec.ModelSpec` (at the end of each convolution's file) builds
its layers. ``sage``, ``gcn`` and ``gin``: ``num_layers`` convolutions ``in -> hidden ->
... -> out`` with ReLU and dropout between them (the last layer gives the logits /
embeddings). ``gat``: as Veličković et al., hidden layers of ``heads`` heads of width
``hidden // heads`` concatenated, ELU between layers, an output layer of one head, attention
and feature dropout = ``dropout`` (as the authors' code). ``pinsage``: ``num_layers``
:class:`PinSageConv` of width ``hidden`` (each ends with ReLU and L2 normalisation) followed
by a linear head ``hidden -> out`` (Ying et al. apply a dense layer after the convolutions).
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from graphsys.errors import GraphsysError, ParameterError, check_count
from graphsys.gnn.config import _check_number
from graphsys.gnn.conv._base import project_first
from graphsys.gnn.dropout import dropout, relu_dropout
from graphsys.gnn.sparse_input import is_sparse
from graphsys.memory import over_budget
from graphsys.plugins import GNN_MODELS
from graphsys.sampling.block import Block


class GNN(nn.Module):
    """A ``num_layers``-layer GNN over a list of blocks (input layer first).

    The stack :func:`graphsys.gnn.train` builds from ``TrainConfig.model`` (see the module
    docstring for each model's layers, activations and head).

    Parameters
    ----------
    model : str
        A name in :data:`graphsys.plugins.GNN_MODELS`: ``"sage"``, ``"gcn"``, ``"gat"``,
        ``"gin"``, ``"pinsage"`` or a registered plugin.
    in_dim, hidden_dim, out_dim : int
        Input, hidden and output feature sizes.
    num_layers : int, optional
        Convolutions, one per block of a batch (default 2).
    dropout : float, optional
        Dropout probability on every layer's input, raw features included (default 0.5,
        as Kipf & Welling); for ``gat`` also the attention and feature dropout of
        :class:`~graphsys.gnn.GATConv`.
    heads : int, optional
        Attention heads of ``gat``'s hidden layers (``hidden_dim`` must be a multiple);
        ignored by the other models (default 8).

    Notes
    -----
    ``forward(blocks, x)`` maps ``x`` float (blocks[0].num_src_nodes, in_dim) to float
    (blocks[-1].num_dst_nodes, out_dim); :meth:`layer` runs one layer alone, as
    :func:`~graphsys.gnn.layerwise_inference` does. ``forward(blocks, x,
    input_dropout=False)`` skips the dropout of the first layer's input, for an ``x`` that
    had it where it was gathered (``NodeLoader(..., input_dropout=p)``, the same ``p``);
    the hidden layers' dropout stays in the model. In training, a ReLU between layers and
    the next layer's dropout run as one pass, :func:`~graphsys.gnn.dropout.relu_dropout`
    (its own masks, not those of ``dropout(relu(h))``); :meth:`layer` applies them apart.

    References
    ----------
    .. [1] W. L. Hamilton, R. Ying and J. Leskovec, "Inductive Representation Learning on
       Large Graphs", NeurIPS 2017, https://arxiv.org/abs/1706.02216.
    .. [2] T. N. Kipf and M. Welling, "Semi-Supervised Classification with Graph
       Convolutional Networks", ICLR 2017, https://arxiv.org/abs/1609.02907.
    .. [3] P. Veličković, G. Cucurull, A. Casanova, A. Romero, P. Liò and Y. Bengio,
       "Graph Attention Networks", ICLR 2018, https://arxiv.org/abs/1710.10903.
    .. [4] K. Xu, W. Hu, J. Leskovec and S. Jegelka, "How Powerful are Graph Neural
       Networks?", ICLR 2019, https://arxiv.org/abs/1810.00826.
    .. [5] R. Ying, R. He, K. Chen, P. Eksombatchai, W. L. Hamilton and J. Leskovec,
       "Graph Convolutional Neural Networks for Web-Scale Recommender Systems", KDD 2018,
       https://arxiv.org/abs/1806.01973.

    Examples
    --------
    >>> import numpy as np, torch
    >>> from graphsys.gnn import GNN
    >>> from graphsys.sampling import NeighborSampler, from_coo
    >>> src, dst = np.array([0, 1, 2, 3, 4]), np.array([1, 2, 3, 4, 0])    # a 5-cycle
    >>> adj = from_coo(np.r_[src, dst], np.r_[dst, src], 5, 5)
    >>> blocks = NeighborSampler(adj, [-1, -1]).sample_blocks([0, 2])
    >>> model = GNN("sage", in_dim=3, hidden_dim=8, out_dim=2).eval()
    >>> model(blocks, torch.randn(blocks[0].num_src_nodes, 3)).shape
    torch.Size([2, 2])
    >>> model
    GNN(
      (convs): ModuleList(
        (0): SAGEConv(3, 8, aggr='mean')
        (1): SAGEConv(8, 2, aggr='mean')
      )
    )
    """

    def __init__(self, model: str, in_dim: int, hidden_dim: int, out_dim: int,
                 num_layers: int = 2, dropout: float = 0.5, heads: int = 8):
        super().__init__()
        spec = GNN_MODELS.get(model)
        # num_layers too: True built one layer, 2.5 and None failed in arithmetic
        for name, size in (("in_dim", in_dim), ("hidden_dim", hidden_dim), ("out_dim", out_dim),
                           ("num_layers", num_layers)):
            check_count(name, size)  # 0 gave a ZeroDivisionError, -1 torch's RuntimeError
        _check_number("dropout", dropout)  # NaN and 1.5 failed only in training, in NumPy
        _check_number("heads", heads)
        # the weight matrices alone, a lower bound (hidden_dim 2**40 failed in the allocator);
        # a build on the meta device (shapes only: checkpoint checks) allocates nothing
        weights = (in_dim + out_dim + max(num_layers - 2, 0) * hidden_dim) * hidden_dim
        if torch.get_default_device().type != "meta" and (short := over_budget(4 * weights)):
            raise ParameterError("hidden_dim", f"{hidden_dim}: the weights of a "
                                               f"{num_layers}-layer {model} of {in_dim} inputs "
                                               f"need {short}")
        self.model, self.num_layers, self.dropout, self.heads = model, num_layers, dropout, heads
        self.in_dim, self.hidden_dim, self.out_dim = in_dim, hidden_dim, out_dim
        convs, self.head = spec.layers(in_dim, hidden_dim, out_dim, num_layers, dropout, heads)
        self.convs = nn.ModuleList(convs)
        self._activation = spec.activation

    def config(self) -> dict:
        """Constructor arguments (JSON-able), as stored in checkpoints."""
        return {"model": self.model, "in_dim": self.in_dim, "hidden_dim": self.hidden_dim,
                "out_dim": self.out_dim, "num_layers": self.num_layers,
                "dropout": self.dropout, "heads": self.heads}

    def layer(self, i: int, x: torch.Tensor, block: Block, *,
              input_dropout: bool = True, projected: bool = False) -> torch.Tensor:
        """Layer ``i`` alone (dropout unless ``input_dropout`` is False, convolution,
        activation; the head after the last layer): what layer-wise streaming inference
        calls. ``projected``: ``x`` is :meth:`project_input` of the input rows (no
        dropout then)."""
        return self._layer(i, x, block, input_dropout, True, projected)

    def projects_input(self, i: int, sizes: tuple[int, int, int] | None = None) -> bool:
        """Layer ``i`` can take its input already projected (:meth:`project_input`, then
        :meth:`layer` with ``projected=True``): its convolution multiplies by its weights
        before aggregating (``projects_first``), so a layer-wise inference projects each
        node's row once and moves the narrower projections along the edges. Never while
        training (the input dropout comes before the product). ``sizes``: the layer's
        ``(input rows, output rows, edges)`` where they differ from a whole graph's, the
        projection then only where it does less work
        (:func:`~graphsys.gnn.conv._base.project_first`)."""
        conv = self.convs[i]
        return (not self.training and getattr(conv, "projects_first", False)
                and hasattr(conv, "forward_projected")
                and (sizes is None or project_first(sizes, conv.in_dim, conv.out_dim)))

    def project_input(self, i: int, x: torch.Tensor) -> torch.Tensor:
        """Layer ``i``'s input rows ``x`` projected by its convolution (``conv.project``),
        where :meth:`projects_input` holds."""
        return self.convs[i].project(x)

    def reads_rows(self, i: int) -> bool:
        """Layer ``i`` can read its input rows from a whole layer's states
        (:meth:`layer_from_rows`) instead of a gathered copy: its convolution has
        ``forward_rows`` and ``reads_rows``. Never while training."""
        conv = self.convs[i]
        return (not self.training and getattr(conv, "reads_rows", False)
                and hasattr(conv, "forward_rows"))

    def layer_from_rows(self, i: int, states: torch.Tensor, index: torch.Tensor,
                        block: Block) -> torch.Tensor:
        """:meth:`layer` of ``x = states[index]`` without gathering ``x``, where
        :meth:`reads_rows` holds (evaluation: no dropout)."""
        return self._after(i, self.convs[i].forward_rows(states, index, block), True, states)

    def _layer(self, i: int, x: torch.Tensor, block: Block, input_dropout: bool,
               activation: bool, projected: bool = False) -> torch.Tensor:
        source = x
        if projected:
            h = self.convs[i].forward_projected(x, block)
            return self._after(i, h, activation, source)
        if input_dropout:
            x = dropout(x, self.dropout, self.training)
        h = self.convs[i](x, block)
        return self._after(i, h, activation, source)

    def _after(self, i: int, h: torch.Tensor, activation: bool, source: torch.Tensor
               ) -> torch.Tensor:
        """Activation (not after the last layer) and head (after it) of layer ``i``'s
        convolution output ``h``; ``source``: the layer's input."""
        last = i == self.num_layers - 1
        if activation and self._activation is not None and not last:
            # without autograd a layer's output that is a tensor of its own (not its input
            # or a view of it) is rectified in place
            h = (h.relu_() if self._activation is F.relu and not torch.is_grad_enabled()
                 and _owns_storage(h, source) else self._activation(h))
        if last and self.head is not None:
            h = self.head(h)
        return h

    def forward(self, blocks: list[Block], x: torch.Tensor, *,
                input_dropout: bool = True) -> torch.Tensor:
        if len(blocks) != self.num_layers:
            raise GraphsysError(f"{self.num_layers}-layer model given {len(blocks)} blocks")
        # ReLU followed by the next layer's dropout: one fused pass between the layers
        fuse = self.training and self._activation is F.relu and self.dropout > 0
        for i, block in enumerate(blocks):
            fused = fuse and i < self.num_layers - 1
            x = self._layer(i, x, block, input_dropout if i == 0 else not fuse, not fused)
            if fused:
                x = relu_dropout(x, self.dropout, True)
        return x


def _owns_storage(h: torch.Tensor, source: torch.Tensor) -> bool:
    """``h`` is no view and shares no storage with ``source`` (a dense or CSR input); False
    for tensors without a storage of their own (lazy or traced ones): not written in place."""
    if h._base is not None or h.is_sparse or h.layout != torch.strided:
        return False
    if is_sparse(source):
        return True
    try:
        return h.untyped_storage().data_ptr() != source.untyped_storage().data_ptr()
    except (RuntimeError, NotImplementedError):
        return False
