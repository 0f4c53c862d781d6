"""Shared checks and scatter helpers of the convolution layers (pure torch, index_add_)."""

from __future__ import annotations

import torch

from graphsys.errors import GraphsysError
from graphsys.sampling.block import Block


def check_input(x: torch.Tensor, block: Block, in_dim: int, name: str) -> None:
    """``x`` must be float (block.num_src_nodes, in_dim) on the block's device."""
    if x.dim() != 2 or x.shape[0] != block.num_src_nodes or x.shape[1] != in_dim:
        raise GraphsysError(f"{name}: input of shape {tuple(x.shape)}, expected "
                            f"({block.num_src_nodes}, {in_dim}) (block source nodes x in_dim)")


def scatter_sum(values: torch.Tensor, index: torch.Tensor, size: int) -> torch.Tensor:
    """``out[i] = sum of values[e] with index[e] == i``; values (E, F) -> (size, F)."""
    out = torch.zeros(size, values.shape[1], dtype=values.dtype, device=values.device)
    return out.index_add_(0, index, values)


def segment_weights_sum(weight: torch.Tensor, index: torch.Tensor, size: int) -> torch.Tensor:
    """``out[i] = sum of weight[e] with index[e] == i``; weight (E,) -> (size,)."""
    out = torch.zeros(size, dtype=weight.dtype, device=weight.device)
    return out.index_add_(0, index, weight)
