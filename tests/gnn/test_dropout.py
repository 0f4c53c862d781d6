"""The hash-mask dropout against its definition: keep rate, scaling, masks shared by the
forward and backward passes, seeds and thread counts."""

from __future__ import annotations

import numba
import pytest
import torch

from graphsys.gnn.dropout import dropout


@pytest.mark.parametrize("p", [0.1, 0.5, 0.9])
def test_keep_rate_and_scaling(p):
    torch.manual_seed(0)
    x = torch.rand(400, 500, dtype=torch.float64) + 0.5        # no zeros of its own
    y = dropout(x, p, True)
    kept = y != 0
    n = x.numel()
    # binomial: 6 standard deviations
    assert abs(kept.sum().item() - (1 - p) * n) < 6 * (n * p * (1 - p)) ** 0.5
    torch.testing.assert_close(y[kept], x[kept] / (1 - p))
    assert y.dtype == x.dtype and y.shape == x.shape


def test_mask_is_not_correlated_across_neighbouring_elements():
    torch.manual_seed(1)
    kept = (dropout(torch.ones(1_000_000), 0.5, True) != 0).float()
    agree = (kept[1:] == kept[:-1]).float().mean().item()
    assert abs(agree - 0.5) < 0.005


def test_backward_uses_the_forward_mask():
    torch.manual_seed(2)
    x = (torch.rand(300, 70) + 0.5).requires_grad_()
    y = dropout(x, 0.3, True)
    upstream = torch.randn_like(y)
    (y * upstream).sum().backward()
    torch.testing.assert_close(x.grad, torch.where(y != 0, upstream / 0.7, 0.0))


def test_non_contiguous_input():
    torch.manual_seed(3)
    x = (torch.rand(80, 60) + 0.5).t().requires_grad_()          # a transposed view
    y = dropout(x, 0.5, True)
    y.sum().backward()
    torch.testing.assert_close(x.grad, torch.where(y != 0, 2.0, 0.0))


def test_same_seed_same_mask_and_thread_count_does_not_matter():
    x = torch.rand(1000, 100) + 0.5
    torch.manual_seed(4)
    a = dropout(x, 0.5, True)
    torch.manual_seed(4)
    before = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        b = dropout(x, 0.5, True)
    finally:
        numba.set_num_threads(before)
    assert torch.equal(a, b)
    assert not torch.equal(a, dropout(x, 0.5, True))          # the next draw differs


def test_identity_when_not_training_or_p_zero():
    x = torch.rand(10, 3)
    assert dropout(x, 0.5, False) is x
    assert dropout(x, 0.0, True) is x


def test_other_dtypes_fall_back_to_torch():
    torch.manual_seed(5)
    x = torch.ones(1000, dtype=torch.bfloat16)
    y = dropout(x, 0.5, True)
    assert y.dtype == torch.bfloat16 and set(y.unique().tolist()) <= {0.0, 2.0}
