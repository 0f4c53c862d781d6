"""Raw node features held as a CSR sparse tensor where most entries are zero.

Bag-of-words features are mostly zeros (Cora's and CiteSeer's about 1 % nonzero). A
full-graph epoch multiplies the whole feature matrix by the first layer's weights three
times (the forward pass, the weight gradient, the evaluation). As CSR each product costs
O(nnz x F') instead of O(N x F x F') (see docs/benchmarks.md for the timings).

The full-graph trainer (``TrainConfig(full_graph=True)``) uses it on CPU when the first
convolution declares ``sparse_input`` (:class:`~graphsys.gnn.conv.sage.SAGEConv` where it
projects before aggregating). The input dropout draws the same masks as on the dense tensor
(:func:`graphsys.gnn.dropout.dropout` is counter-based), so the two paths differ only in
the products' summation order.
"""

from __future__ import annotations

import warnings

import torch
import torch.nn.functional as F

#: Features are kept sparse when at most this share of their entries is nonzero: below it a
#: CSR product reads less than a tenth of the dense one's bytes (8 bytes per nonzero
#: against 4 per entry)
SPARSE_MAX_DENSITY = 0.05


def as_sparse_features(x: torch.Tensor) -> torch.Tensor | None:
    """``x`` (float32/float64 (N, F), CPU) as a CSR tensor when at most
    :data:`SPARSE_MAX_DENSITY` of its entries are nonzero; None otherwise (or for any other
    device, rank or dtype, or an ``x`` that takes gradients)."""
    if (x.device.type != "cpu" or x.dim() != 2 or x.dtype not in (torch.float32, torch.float64)
            or x.numel() == 0 or x.requires_grad):
        return None
    if int(torch.count_nonzero(x)) > SPARSE_MAX_DENSITY * x.numel():
        return None
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")
        return x.to_sparse_csr()


def is_sparse(x: torch.Tensor) -> bool:
    """Whether ``x`` is a CSR tensor (:func:`as_sparse_features`)."""
    return x.layout == torch.sparse_csr


def linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None
           ) -> torch.Tensor:
    """``F.linear`` for a dense or CSR ``x`` (N, F); ``weight`` (F', F): dense (N, F').
    Gradients flow to ``weight`` and ``bias``, not to a CSR ``x``."""
    if not is_sparse(x):
        return F.linear(x, weight, bias)
    out = torch.sparse.mm(x, weight.t())
    return out if bias is None else out + bias
