"""Gradients of every operator, comparator and loss against autograd's numerical check."""

from __future__ import annotations

import pytest
import torch
from torch.autograd import gradcheck

from graphsys.embed.model import COMPARATORS, LOSSES, OPERATORS
from graphsys.registry import Registry

D = 6


@pytest.mark.parametrize("name", OPERATORS.names())
def test_operator_gradients(name):
    torch.manual_seed(0)
    op = OPERATORS.get_class(name)(D)
    params = {k: (v + 0.3 * torch.randn_like(v)).double().requires_grad_(True)
              for k, v in op.init_params(3).items()}
    x = torch.randn(5, D, dtype=torch.float64, requires_grad=True)
    idx = torch.tensor([0, 2, 1, 2, 0])
    keys = list(params)

    def f(x, *ps):
        return op.forward(x, dict(zip(keys, ps)), idx)

    assert f(x, *params.values()).shape == (5, D)
    assert gradcheck(f, (x, *params.values()))


def test_operator_identity_at_init():
    x = torch.randn(4, D)
    idx = torch.tensor([0, 1, 0, 1])
    for name in OPERATORS.names():
        op = OPERATORS.get_class(name)(D)
        assert torch.allclose(op.forward(x, op.init_params(2), idx), x), name


def test_complex_diagonal_is_complex_product():
    op = OPERATORS.get_class("complex_diagonal")(4)
    x = torch.randn(1, 4, dtype=torch.float64)
    p = {"real": torch.randn(1, 2, dtype=torch.float64),
         "imag": torch.randn(1, 2, dtype=torch.float64)}
    y = op.forward(x, p, torch.tensor([0]))
    z = torch.complex(x[0, :2], x[0, 2:]) * torch.complex(p["real"][0], p["imag"][0])
    assert torch.allclose(y[0], torch.cat([z.real, z.imag]))


@pytest.mark.parametrize("name", OPERATORS.names())
def test_relation_scores_are_every_relations_dot_score(name):
    """``relation_scores(x, y)[b, r] = <op_r(x_b), y_b>``, against ``forward`` row by row and
    relation by relation (the overrides' matmuls and the default's passes alike)."""
    op = OPERATORS.get_class(name)(D)
    gen = torch.Generator().manual_seed(1)
    params = {k: v + torch.randn(v.shape, generator=gen, dtype=v.dtype)
              for k, v in op.init_params(3).items()}
    x, y = torch.randn(5, D, generator=gen), torch.randn(5, D, generator=gen)
    brute = torch.tensor([[float(op.forward(x[b:b + 1], params, torch.tensor([r])) @ y[b])
                           for r in range(3)] for b in range(5)])
    torch.testing.assert_close(op.relation_scores(x, y, params, 3), brute)


@pytest.mark.parametrize("name", COMPARATORS.names())
def test_comparator_gradients_and_consistency(name):
    torch.manual_seed(1)
    cmp = COMPARATORS.get_class(name)()
    a = torch.randn(4, D, dtype=torch.float64, requires_grad=True)
    b = torch.randn(4, D, dtype=torch.float64, requires_grad=True)
    pool = torch.randn(7, D, dtype=torch.float64, requires_grad=True)
    assert gradcheck(lambda a, b: cmp.pos(cmp.prepare(a), cmp.prepare(b)), (a, b))
    assert gradcheck(lambda a, p: cmp.neg(cmp.prepare(a), cmp.prepare(p)), (a, pool))
    # batched (chunk) form: (C, n, d) x (C, m, d) -> (C, n, m)
    c1 = torch.randn(2, 3, D, dtype=torch.float64, requires_grad=True)
    c2 = torch.randn(2, 4, D, dtype=torch.float64, requires_grad=True)
    assert cmp.neg(c1, c2).shape == (2, 3, 4)
    assert gradcheck(lambda x, y: cmp.neg(cmp.prepare(x), cmp.prepare(y)), (c1, c2))
    # all-pairs scores agree with row-wise ones
    full = cmp.neg(cmp.prepare(a), cmp.prepare(b))
    assert torch.allclose(full.diagonal(), cmp.pos(cmp.prepare(a), cmp.prepare(b)), atol=1e-9)


@pytest.mark.parametrize("name", LOSSES.names())
def test_loss_gradients(name):
    torch.manual_seed(2)
    loss = LOSSES.get_class(name)(margin=0.5)
    pos = torch.randn(5, dtype=torch.float64, requires_grad=True)
    neg = torch.randn(5, 8, dtype=torch.float64, requires_grad=True)
    w = torch.rand(5, dtype=torch.float64) + 0.5
    assert gradcheck(lambda p, n: loss.forward(p, n, w), (pos, neg))
    # masked (-inf) negatives contribute neither loss nor gradient
    masked = neg.detach().clone()
    masked[:, -1] = float("-inf")
    p2 = pos.detach().clone().requires_grad_(True)
    n2 = masked.clone().requires_grad_(True)
    out = loss.forward(p2, n2, None)
    out.backward()
    assert torch.isfinite(out)
    assert torch.all(n2.grad[:, -1] == 0)
    # a list of blocks is the same loss (and gradient) as their concatenation
    blocks = [neg[:, :3], neg[:, 3:]]
    assert torch.allclose(loss.forward(pos, blocks, w), loss.forward(pos, neg, w))
    assert gradcheck(lambda p, a, b: loss.forward(p, [a, b], w),
                     (pos, neg[:, :3].detach().clone().requires_grad_(True),
                      neg[:, 3:].detach().clone().requires_grad_(True)))


def test_losses_reward_separation():
    pos, neg = torch.full((3,), 5.0), torch.full((3, 4), -5.0)
    for name in LOSSES.names():
        loss = LOSSES.get_class(name)(margin=0.1)
        good = loss.forward(pos, neg, None)
        bad = loss.forward(-pos, -neg, None)
        assert good < bad, name


def test_registry_rejects_duplicates_and_lists_known_names():
    reg: Registry[object] = Registry("thing")

    @reg.register_as("a")
    class A:
        pass

    with pytest.raises(ValueError, match="already registered"):
        @reg.register_as("a")
        class B:
            pass
    with pytest.raises(KeyError, match="known: a"):
        reg.get_class("zzz")
