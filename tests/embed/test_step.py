"""One training batch (:class:`graphsys.embed.step.MinibatchStep`) with ``all_negs`` and N3
against a brute-force ComplEx objective written with complex numbers: 1-vs-all
cross-entropy over every entity in both directions (reciprocal relations), Lacroix et al.'s
weighted N3 on the moduli of each edge's factors, and Chen et al.'s relation prediction
(each edge's relation among all 2R from its two entities)."""

from __future__ import annotations

import pytest
import torch

from graphsys.embed.config import EmbedConfig
from graphsys.embed.model import COMPARATORS, LOSSES
from graphsys.embed.relations import RelationModel
from graphsys.embed.step import MinibatchStep

N, D, R, B, LAMBDA, W_REL = 11, 6, 3, 7, 0.05, 0.7


class _Step(MinibatchStep):
    """The batch half of the trainer with only what the gradient methods read."""

    def __init__(self, cfg: EmbedConfig):
        self.cfg = cfg
        self.comparator = COMPARATORS.get_class(cfg.comparator)()
        self.loss_fn = LOSSES.get_class(cfg.loss_fn)(margin=cfg.margin)
        self.relmodel = RelationModel(["complex_diagonal"] * R, D)


def _brute_force(emb, params, h, r, t, w, w_rel):
    """Loss and gradients (embeddings, {side: {real, imag}}) in float64, edge by edge."""
    emb = emb.double().requires_grad_(True)
    ps = {s: {k: v.double().requires_grad_(True) for k, v in p.items()}
          for s, p in params.items()}
    half = D // 2
    e = torch.complex(emb[:, :half], emb[:, half:])
    wr = {s: torch.complex(p["real"], p["imag"]) for s, p in ps.items()}
    total = torch.zeros((), dtype=torch.float64)
    for b in range(len(h)):
        for side, anchor, answer in (("rhs", h[b], t[b]), ("lhs", t[b], h[b])):
            q = e[anchor] * wr[side][r[b]]  # predict the tail of (anchor, r or r^-1, ?)
            scores = torch.stack([(q * e[c].conj()).sum().real for c in range(N)])
            ce = torch.logsumexp(scores, 0) - scores[answer]
            total = total + (ce if w is None else ce * w[b])
        total = total + LAMBDA * (2 * e[h[b]].abs().pow(3).sum() + 2 * e[t[b]].abs().pow(3).sum()
                                  + wr["rhs"][r[b]].abs().pow(3).sum()
                                  + wr["lhs"][r[b]].abs().pow(3).sum())
        # relation prediction: r among [rhs relations, lhs relations] from (h, t), and r^-1
        # (lhs relation r, column R + r) from (t, h)
        for x, y, target in ((h[b], t[b], r[b]), (t[b], h[b], R + r[b])):
            scores = torch.stack([(e[x] * wr[side][k] * e[y].conj()).sum().real
                                  for side in ("rhs", "lhs") for k in range(R)])
            ce = torch.logsumexp(scores, 0) - scores[target]
            total = total + w_rel * (ce if w is None else ce * w[b])
    total.backward()
    return float(total.detach()), emb.grad, {s: {k: v.grad for k, v in p.items()}
                                     for s, p in ps.items()}


@pytest.mark.parametrize("path", ["_closed_form_grads", "_autograd_grads"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("w_rel", [0.0, W_REL])
def test_all_negs_with_n3_matches_brute_force(path, weighted, w_rel):
    gen = torch.Generator().manual_seed(3)
    cfg = EmbedConfig(dimension=D, operator="complex_diagonal", comparator="dot",
                      loss_fn="softmax", all_negs=True, regularization_coef=LAMBDA,
                      relation_prediction_weight=w_rel)
    cfg.validate()
    step = _Step(cfg)
    for side in ("lhs", "rhs"):  # away from the (1, 0) init, so every term matters
        for v in step.relmodel.params[side][0].values():
            v.copy_(torch.randn(v.shape, generator=gen))
    params = {s: {k: v.clone() for k, v in step.relmodel.params[s][0].items()}
              for s in ("lhs", "rhs")}
    emb = torch.randn(N, D, generator=gen)
    h, r, t = (torch.randint(N, (B,), generator=gen), torch.randint(R, (B,), generator=gen),
               torch.randint(N, (B,), generator=gen))
    w = torch.rand(B, generator=gen) + 0.5 if weighted else None
    assert step._closed_form(B)
    idx_l = torch.cat([h, torch.arange(N)])
    idx_r = torch.cat([t, torch.arange(N)])
    leaves: list = []
    loss, gl, gr = getattr(step, path)(emb[idx_l].clone(), emb[idx_r].clone(), B, r, w,
                                       leaves, h, t)
    grad = torch.zeros(N, D).index_add_(0, idx_l, gl).index_add_(0, idx_r, gr)

    ref_loss, ref_grad, ref_params = _brute_force(emb, params, h, r, t, w, w_rel)
    assert loss == pytest.approx(ref_loss, rel=1e-5)
    torch.testing.assert_close(grad.double(), ref_grad, rtol=1e-4, atol=1e-5)
    by_param: dict = {}  # relation prediction's leaves hold every row, the operators' some
    for lf in leaves:
        for row, g in zip(lf.rows, lf.leaf.grad):
            key = (lf.param.data_ptr(), int(row))
            by_param[key] = by_param.get(key, 0) + g
    rows = range(R) if w_rel else r.unique().tolist()
    for side in ("lhs", "rhs"):
        for k, v in step.relmodel.params[side][0].items():
            for row in rows:
                torch.testing.assert_close(by_param[(v.data_ptr(), row)].double(),
                                           ref_params[side][k][row], rtol=1e-4, atol=1e-5)
    if not w_rel:  # relations outside the batch get no gradient
        assert not any(key[1] not in rows for key in by_param)



def test_gather_is_index_select_and_refuses_a_row_outside_the_partition():
    """The CPU gather kernel returns ``index_select``'s rows (repeats included) and raises
    IndexError naming the row for an offset outside the partition, reading nothing past it."""
    gen = torch.Generator().manual_seed(2)
    emb = torch.randn(50, 7, generator=gen)
    idx = torch.tensor([3, 49, 0, 3, 17], dtype=torch.long)
    assert torch.equal(MinibatchStep._gather(emb, idx), emb.index_select(0, idx))
    for bad in (50, -1):
        with pytest.raises(IndexError, match=f"row {bad} out of range .* 50 rows"):
            MinibatchStep._gather(emb, torch.tensor([1, bad, 2], dtype=torch.long))
