"""Relation parameters (:class:`graphsys.embed.relations.RelationModel`): the scores of
every relation for relation prediction, and the Adagrad step of the gathered rows."""

from __future__ import annotations

import pytest
import torch

from graphsys.embed.relations import ADAGRAD_EPS, RelationModel, _Leaf

D = 6


@pytest.mark.parametrize("operators", [
    ["complex_diagonal"] * 3,
    ["diagonal", "complex_diagonal", "diagonal", "complex_diagonal"],
    ["linear", "complex_diagonal", "translation", "linear", "none"],
], ids=["one group", "two groups", "default scores"])
def test_relation_logits_are_each_relations_score(operators):
    """Column ``r`` is ``<op_r^rhs(x), y>`` and column ``R + r`` ``<op_r^lhs(x), y>`` in the
    graph's relation order, also when the operator groups interleave and for operators
    scored one relation at a time; with ``leaves`` the whole tables are leaves that receive
    the gradient."""
    gen = torch.Generator().manual_seed(2)
    model = RelationModel(operators, D)
    for side in ("lhs", "rhs"):
        for ps in model.params[side]:
            for v in ps.values():
                v.add_(torch.randn(v.shape, generator=gen))
    x, y = torch.randn(5, D, generator=gen), torch.randn(5, D, generator=gen)
    big = len(operators)
    brute = torch.stack([(model.apply(side, x, torch.full((5,), r)) * y).sum(1)
                         for side in ("rhs", "lhs") for r in range(big)], dim=1)
    torch.testing.assert_close(model.relation_logits(x, y), brute)
    leaves: list = []
    model.relation_logits(x, y, leaves).sum().backward()
    assert len(leaves) == 2 * sum(len(ps) for ps in model.params["rhs"])
    assert all(lf.leaf.grad is not None and len(lf.rows) == len(lf.param) for lf in leaves)


def test_relation_step_sums_leaves_of_one_parameter():
    """A batch's operator rows and relation prediction's whole table are two leaves of one
    parameter: Adagrad takes one step per row with their summed gradient."""
    gen = torch.Generator().manual_seed(5)
    model = RelationModel(["diagonal"] * 3, D)
    param, state = model.params["rhs"][0]["diagonal"], model.state["rhs"][0]["diagonal"]
    state.copy_(torch.rand(state.shape, generator=gen))
    before, state_before = param.clone(), state.clone()
    partial, full = torch.randn(2, D, generator=gen), torch.randn(3, D, generator=gen)
    leaves = []
    for rows, grad in ((torch.tensor([0, 2]), partial), (torch.arange(3), full)):
        leaf = param[rows].clone().requires_grad_(True)
        leaf.grad = grad
        leaves.append(_Leaf(param, state, rows, leaf))
    RelationModel.step(leaves, 0.1)
    g = full.clone()
    g[[0, 2]] += partial
    s = state_before + g * g
    torch.testing.assert_close(state, s)
    torch.testing.assert_close(param, before - 0.1 * g / (s.sqrt() + ADAGRAD_EPS))
