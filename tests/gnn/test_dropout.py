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


def _mix(z):
    """The SplitMix64 finaliser, in Python integers."""
    m64 = (1 << 64) - 1
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & m64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & m64
    return z ^ (z >> 31)


def _half(z, c):
    """The 32-bit half of ``z`` that decides column ``c``: lower for even, upper for odd."""
    return z & 0xFFFFFFFF if c % 2 == 0 else z >> 32


def _kept_reference(ids, width, key, p):
    """The row-keyed mask from its definition, in Python integers: one draw
    ``splitmix64(key + (id * ceil(F / 2) + c // 2) * golden)`` per column pair, its halves
    against ``round(p * 2**32)``."""
    m64, pairs = (1 << 64) - 1, (width + 1) // 2
    t = round(p * 2 ** 32)
    return torch.tensor([[_half(_mix((key + (int(v) * pairs + c // 2) * 0x9E3779B97F4A7C15)
                                     & m64), c) >= t for c in range(width)] for v in ids])


@pytest.mark.parametrize("kind", ["float32", "float16", "tensor"])
def test_feature_dropout_is_keyed_by_node_and_column(kind):
    """Gather + dropout in one pass: element (r, c) follows the draw of (ids[r], c) alone,
    whatever the other rows, for every column kind; kept values are scaled by 1/(1-p)."""
    import numpy as np

    from graphsys.gnn.dropout import feature_dropout

    rng = np.random.default_rng(0)
    table = (rng.random((50, 7)) + 0.5).astype(np.float16 if kind == "float16" else np.float32)
    column = torch.from_numpy(table) if kind == "tensor" else table
    ids = np.array([4, 17, 4, 49, 0])
    key, p = 123456789012345, 0.4
    got = feature_dropout(column, ids, p, key)
    want = torch.from_numpy(table[ids].astype(np.float32))
    kept = _kept_reference(ids, 7, key, p)
    torch.testing.assert_close(got.float(), torch.where(kept, want / (1 - p), 0.0))
    assert torch.equal(got[0], got[2])                     # one node, one mask
    other = feature_dropout(column, np.array([49, 3, 17]), p, key)   # other batch
    assert torch.equal(other[0], got[3]) and torch.equal(other[2], got[1])
    assert not torch.equal(feature_dropout(column, ids, p, key + 1), got)
    assert torch.equal(feature_dropout(column, ids, 0.0, key).float(), want)
    assert not feature_dropout(column, ids, 1.0, key).any()


def test_feature_dropout_rate_and_errors():
    import numpy as np

    from graphsys.errors import GraphsysError
    from graphsys.gnn.dropout import feature_dropout

    table = np.ones((1000, 300), np.float32)
    kept = feature_dropout(table, np.arange(1000), 0.3, 7) != 0
    n = kept.numel()
    assert abs(kept.sum().item() - 0.7 * n) < 6 * (n * 0.21) ** 0.5
    with pytest.raises(GraphsysError, match="outside"):
        feature_dropout(table, np.array([1000]), 0.3, 7)
    with pytest.raises(GraphsysError, match="probability"):
        feature_dropout(table, np.array([1]), 1.5, 7)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_relu_dropout_against_its_definition(dtype):
    """Element i of relu(x) kept by one half of the draw of pair i // 2 (the key is the
    generator's next draw); the gradient is upstream / (1 - p) where x > 0 and kept."""
    from graphsys.gnn.dropout import relu_dropout

    p = 0.35
    torch.manual_seed(6)
    x = torch.randn(13, 7, dtype=dtype, requires_grad=True)     # odd element count
    torch.manual_seed(7)
    key = int(torch.empty((), dtype=torch.int64).random_()) & ((1 << 64) - 1)
    torch.manual_seed(7)
    y = relu_dropout(x, p, True)
    t, m64 = round(p * 2 ** 32), (1 << 64) - 1
    kept = torch.tensor([_half(_mix((key + (i // 2) * 0x9E3779B97F4A7C15) & m64), i) >= t
                         for i in range(x.numel())]).view_as(x)
    want = torch.where(kept, torch.relu(x.detach()) / (1 - p), 0.0).to(dtype)
    torch.testing.assert_close(y.detach(), want)
    upstream = torch.randn_like(y)
    (y * upstream).sum().backward()
    torch.testing.assert_close(x.grad, torch.where(kept & (x.detach() > 0),
                                                   upstream / (1 - p), 0.0).to(dtype))
    assert torch.equal(relu_dropout(x, p, False), torch.relu(x))


def test_relu_dropout_rate_and_gradcheck():
    from graphsys.gnn.dropout import relu_dropout

    torch.manual_seed(8)
    y = relu_dropout(torch.rand(1000, 301) + 0.5, 0.3, True)
    n = y.numel()
    assert abs((y != 0).sum().item() - 0.7 * n) < 6 * (n * 0.21) ** 0.5
    agree = ((y.view(-1)[1:] != 0) == (y.view(-1)[:-1] != 0)).float().mean().item()
    assert abs(agree - (0.7 ** 2 + 0.3 ** 2)) < 0.005          # halves of one draw independent
    x = (torch.rand(6, 5, dtype=torch.float64) + 0.1) * torch.tensor([1.0, -1.0]).repeat(15)[:5]
    x.requires_grad_()

    def fixed(v):
        torch.manual_seed(9)                                     # one mask for every call
        return relu_dropout(v, 0.5, True)

    assert torch.autograd.gradcheck(fixed, (x,))
