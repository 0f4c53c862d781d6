"""Scoring model pieces: relation operators, comparators and losses (small registered classes).

A triple scores ``comparator(op_r^rhs(h), t)`` for tail prediction and, with a second,
independent set of operator parameters (PBG's dynamic relations),
``comparator(op_r^lhs(t), h)`` for head prediction (the model: ``docs/embed.md``). The
operator transforms the query side, so ``B`` queries against ``N`` candidates is one
``(B, d) @ (d, N)`` matmul.

Shapes (``B`` edges, ``d`` dimension, ``R`` relations of an operator, ``K`` those of a
batch): embeddings ``(B, d)``; operator parameters ``(R, ...)``; an operator is called with
the gathered slices ``(K, ...)`` and ``idx`` int64 ``(B,)`` into them, so gradients are
formed only for the batch's relations. Operators read the slices with :func:`gather`, never
``param[idx]`` (whose backward is not deterministic on a multi-threaded CPU).
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import torch
import torch.nn.functional as F

from graphsys.registry import Registry

Tensor = torch.Tensor

# =============================================================================================
# Operators


def gather(param: Tensor, idx: Tensor) -> Tensor:
    """Rows ``param[idx]``: ``(K, ...)`` float, int64 ``(B,)`` -> ``(B, ...)``, with a
    deterministic backward.

    The gradient of ``param[idx]`` (advanced indexing) is an ``index_put_(accumulate=True)``,
    whose CPU kernel adds with atomic float adds from every intra-op thread once the gradient
    has ``>= 32768`` elements (``at::internal::GRAIN_SIZE``) and more than one thread runs: the
    order of the additions into a row that ``idx`` repeats, and so the rounding, then depends
    on thread scheduling (runs with the same seed differed in the last bits, ~1e-9 relative,
    from the first batch on). ``index_select``'s gradient is ``index_add_``, which the CPU
    kernel accumulates in ``idx`` order: bit-identical for any thread count, and faster.
    """
    return torch.index_select(param, 0, idx)


class Operator(ABC):
    """A per-relation transform of query embeddings.

    ``init_params(R, d)`` returns the parameter tensors, each ``(R, ...)`` float32, in a dict
    whose keys are the PBG parameter names; ``forward(x, params, idx)`` maps ``x`` ``(B, d)``
    to ``(B, d)`` using ``params[k][idx[b]]`` for row ``b``.
    """

    name: str = ""

    def __init__(self, dimension: int):
        self.dimension = dimension

    def init_params(self, num_relations: int) -> dict[str, Tensor]:
        return {}

    @abstractmethod
    def forward(self, x: Tensor, params: dict[str, Tensor], idx: Tensor) -> Tensor:
        """See the class docstring."""

    def forward_tables(self, x: Tensor, params: dict[str, Tensor], idx: Tensor) -> Tensor:
        """:meth:`forward` with ``params`` the whole ``(R, ...)`` tables (autograd leaves)
        and ``idx`` rows of them: the device loop's form, which an operator may give a
        backward of fewer launches than autograd's. This default is :meth:`forward`."""
        return self.forward(x, params, idx)

    #: ``closed_form(x, params, idx) -> (y, backward)``: :meth:`forward` of whole tables
    #: with ``backward(dy) -> (dx, {param: table gradient})`` computed without autograd;
    #: None where the operator has none (the device loop then uses autograd).
    closed_form = None

    def n3_rows(self, x: Tensor) -> Tensor:
        """``sum |x|^3`` over embeddings ``x`` ``(B, d)``: their N3 factors (0-d tensor)."""
        return x.abs().pow(3).sum()

    def n3_params(self, params: dict[str, Tensor], idx: Tensor) -> Tensor:
        """``sum_b sum |p_{idx[b]}|^3`` over every parameter of the operator: the relation
        factors of N3 for ``B`` edges, each relation counted once per edge (0-d tensor)."""
        return sum((gather(p, idx).abs().pow(3).sum() for p in params.values()),
                   torch.zeros(()))

    def relation_scores(self, x: Tensor, y: Tensor, params: dict[str, Tensor],
                        num_relations: int) -> Tensor:
        """``<op_r(x_b), y_b>`` for every relation ``r < num_relations`` of ``params``
        (``(R, ...)``) and every row ``b`` of ``x``, ``y`` ``(B, d)``: ``(B, R)``, the ``dot``
        comparator's scores of relation prediction
        (:meth:`graphsys.embed.relations.RelationModel.relation_logits`). This default runs
        :meth:`forward` once per relation; operators linear in their parameters
        (``diagonal``, ``complex_diagonal``) override it with one ``(B, d) @ (d, R)``
        matmul."""
        rel = torch.zeros(len(x), dtype=torch.long, device=x.device)
        return torch.stack([(self.forward(x, params, rel + r) * y).sum(-1)
                            for r in range(num_relations)], dim=1)


OPERATORS: Registry[Operator] = Registry("operator", "graphsys.embed.model:Operator")


@OPERATORS.register_as("none")
class IdentityOperator(Operator):
    """``x`` unchanged; no parameters."""

    def forward(self, x, params, idx):
        return x


@OPERATORS.register_as("translation")
class TranslationOperator(Operator):
    """``x + t_r``; ``translation`` ``(R, d)`` initialised to zero (TransE)."""

    def init_params(self, num_relations):
        return {"translation": torch.zeros(num_relations, self.dimension)}

    def forward(self, x, params, idx):
        return x + gather(params["translation"], idx)


@OPERATORS.register_as("diagonal")
class DiagonalOperator(Operator):
    """``x * w_r``; ``diagonal`` ``(R, d)`` initialised to one (DistMult)."""

    def init_params(self, num_relations):
        return {"diagonal": torch.ones(num_relations, self.dimension)}

    def forward(self, x, params, idx):
        return x * gather(params["diagonal"], idx)

    def relation_scores(self, x, y, params, num_relations):
        """``<x * w_r, y> = (x * y) @ w.T``."""
        return (x * y) @ params["diagonal"].T


@OPERATORS.register_as("complex_diagonal")
class ComplexDiagonalOperator(Operator):
    """Complex product ``x * w_r`` with ``x = [re | im]`` halves (ComplEx); ``d`` must be even.

    ``real`` and ``imag`` are ``(R, d/2)``, initialised to 1 and 0. With the ``dot`` comparator
    the score is ComplEx's ``Re(<h, w_r, conj(t)>)``.
    """

    def __init__(self, dimension):
        if dimension % 2:
            raise ValueError("complex_diagonal needs an even dimension")
        super().__init__(dimension)

    def init_params(self, num_relations):
        half = self.dimension // 2
        return {"real": torch.ones(num_relations, half), "imag": torch.zeros(num_relations, half)}

    def n3_rows(self, x):
        """Over the moduli ``|x_re + i x_im|`` (ComplEx's factors, Lacroix et al.); as
        ``(x_re^2 + x_im^2)^1.5``, whose gradient is 0, not NaN, at 0."""
        half = self.dimension // 2
        return (x[..., :half] ** 2 + x[..., half:] ** 2).pow(1.5).sum()

    def n3_params(self, params, idx):
        mod2 = gather(params["real"], idx) ** 2 + gather(params["imag"], idx) ** 2
        return mod2.pow(1.5).sum()

    def forward(self, x, params, idx):
        half = self.dimension // 2
        re, im = x[..., :half], x[..., half:]
        wr, wi = gather(params["real"], idx), gather(params["imag"], idx)
        return torch.cat([re * wr - im * wi, re * wi + im * wr], dim=-1)

    def forward_tables(self, x, params, idx):
        """:meth:`forward` by :class:`_ComplexProduct` (one function of its own forward
        and backward)."""
        return _ComplexProduct.apply(x, params["real"], params["imag"], idx)

    def closed_form(self, x, params, idx):
        """``(y, backward)``: :meth:`forward` of the whole tables ``params`` and ``dy ->
        (dx, {param: gradient of its table})``, without autograd."""
        y, saved = _complex_forward(x, params["real"], params["imag"], idx)

        def backward(dy):
            dx, dre, dim = _complex_backward(dy, saved)
            return dx, {"real": dre, "imag": dim}
        return y, backward

    def relation_scores(self, x, y, params, num_relations):
        """``Re(<x, w_r, conj(y)>) = (x_re y_re + x_im y_im) @ real.T + (x_re y_im - x_im
        y_re) @ imag.T``."""
        half = self.dimension // 2
        xr, xi, yr, yi = x[..., :half], x[..., half:], y[..., :half], y[..., half:]
        return (xr * yr + xi * yi) @ params["real"].T + (xr * yi - xi * yr) @ params["imag"].T


_SIGNS: dict[tuple[torch.device, torch.dtype], Tensor] = {}


def _sign(x: Tensor) -> Tensor:
    """``[[-1], [1]]`` ``(2, 1)`` on ``x``'s device and dtype (made once per device)."""
    key = (x.device, x.dtype)
    if key not in _SIGNS:
        _SIGNS[key] = torch.tensor([[-1.0], [1.0]], dtype=x.dtype, device=x.device)
    return _SIGNS[key]


def _complex_forward(x: Tensor, real: Tensor, imag: Tensor, idx: Tensor) -> tuple:
    """``y = x * w_idx`` in complex numbers, ``x = [re | im]`` ``(B, d)`` and ``w = real +
    i imag`` ``(R, d/2)`` tables, in 6 operators; halves as ``(B, 2, d/2)`` views: ``y = x *
    w_re + flip(x) * [-w_im, w_im]``. Returns ``(y, saved)``, ``saved`` what
    :func:`_complex_backward` reads."""
    x2 = x.unflatten(-1, (2, real.shape[1]))
    wr = real.index_select(0, idx).unsqueeze(-2)
    wi = imag.index_select(0, idx).unsqueeze(-2) * _sign(x)
    return (x2 * wr).addcmul_(x2.flip(-2), wi).flatten(-2), (x2, wr, wi, idx, real.shape)


def _complex_backward(dy: Tensor, saved: tuple) -> tuple[Tensor, Tensor, Tensor]:
    """``(dx, d real, d imag)`` of :func:`_complex_forward` in closed form, 10 operators:
    ``dx = dy * conj(w)``; ``dw_r`` the sum over the rows ``b`` with ``idx[b] = r`` of
    ``dy_b * conj(x_b)`` (autograd's graph of :meth:`ComplexDiagonalOperator.forward`
    takes about 27)."""
    x2, wr, wi, idx, shape = saved
    dy2 = dy.unflatten(-1, (2, shape[1]))
    dyf = dy2.flip(-2)
    dx = (dy2 * wr).addcmul_(dyf, wi, value=-1.0).flatten(-2)
    p = dy2 * x2                  # [dy_re x_re, dy_im x_im]
    q = dyf * x2                  # [dy_im x_re, dy_re x_im]
    dre = x2.new_zeros(shape).index_add_(0, idx, p[..., 0, :] + p[..., 1, :])
    return dx, dre, x2.new_zeros(shape).index_add_(0, idx, q[..., 0, :] - q[..., 1, :])


class _ComplexProduct(torch.autograd.Function):
    """:func:`_complex_forward` with :func:`_complex_backward` as its backward."""

    @staticmethod
    def forward(ctx, x, real, imag, idx):
        y, ctx.saved = _complex_forward(x, real, imag, idx)
        return y

    @staticmethod
    def backward(ctx, dy):
        return (*_complex_backward(dy, ctx.saved), None)


#: Largest ``B * d * d`` that a linear operator multiplies in one bmm; a larger batch takes
#: one matmul per relation, whose relations and counts are read on the host
BMM_MAX_ELEMENTS = 1 << 22


def _per_relation_matmul(x: Tensor, mats: Tensor, idx: Tensor) -> Tensor:
    """``out[b] = mats[idx[b]] @ x[b]``: one bmm when small, else one matmul per relation."""
    b, d = x.shape
    if b * d * d <= BMM_MAX_ELEMENTS:
        return torch.bmm(gather(mats, idx), x.unsqueeze(-1)).squeeze(-1)
    out = torch.empty_like(x)
    order = torch.argsort(idx, stable=True)
    uniq, counts = torch.unique_consecutive(idx[order], return_counts=True)
    parts, start = [], 0
    for r, c in zip(uniq.tolist(), counts.tolist()):
        rows = order[start:start + c]
        parts.append((rows, x[rows] @ mats[r].T))
        start += c
    rows = torch.cat([p[0] for p in parts])
    return out.index_copy(0, rows, torch.cat([p[1] for p in parts]))


@OPERATORS.register_as("linear")
class LinearOperator(Operator):
    """``A_r x``; ``linear_transformation`` ``(R, d, d)`` initialised to the identity."""

    def init_params(self, num_relations):
        return {"linear_transformation": torch.eye(self.dimension).repeat(num_relations, 1, 1)}

    def forward(self, x, params, idx):
        return _per_relation_matmul(x, params["linear_transformation"], idx)


@OPERATORS.register_as("affine")
class AffineOperator(Operator):
    """``A_r x + b_r``; ``linear_transformation`` ``(R, d, d)`` = I, ``translation``
    ``(R, d)`` = 0."""

    def init_params(self, num_relations):
        eye = torch.eye(self.dimension)
        return {"linear_transformation": eye.repeat(num_relations, 1, 1),
                "translation": torch.zeros(num_relations, self.dimension)}

    def forward(self, x, params, idx):
        return (_per_relation_matmul(x, params["linear_transformation"], idx)
                + gather(params["translation"], idx))


# =============================================================================================
# Comparators


class Comparator(ABC):
    """Similarity of queries and candidates; higher = more plausible.

    ``prepare(x)`` is applied once to every query and candidate ``(..., d)`` (``cos``
    normalises); ``pos(a, b)``: ``(B, d), (B, d) -> (B,)`` row-wise; ``neg(a, b)``:
    ``(..., n, d), (..., m, d) -> (..., n, m)`` all pairs, one (batched) matmul.
    """

    name: str = ""

    def prepare(self, x: Tensor) -> Tensor:
        return x

    @abstractmethod
    def pos(self, a: Tensor, b: Tensor) -> Tensor:
        """See the class docstring."""

    @abstractmethod
    def neg(self, a: Tensor, b: Tensor) -> Tensor:
        """See the class docstring."""


COMPARATORS: Registry[Comparator] = Registry("comparator", "graphsys.embed.model:Comparator")


@COMPARATORS.register_as("dot")
class DotComparator(Comparator):
    """``<a, b>``."""

    def pos(self, a, b):
        return (a * b).sum(-1)

    def neg(self, a, b):
        return a @ b.transpose(-1, -2)


@COMPARATORS.register_as("cos")
class CosComparator(DotComparator):
    """``<a/|a|, b/|b|>`` (PBG's default)."""

    def prepare(self, x):
        return F.normalize(x, dim=-1, eps=1e-12)


def _sq_dist(a: Tensor, b: Tensor) -> Tensor:
    """All-pairs squared distances ``(..., n, m)`` via ``|a|^2 + |b|^2 - 2ab``, clamped >= 0."""
    an = (a * a).sum(-1, keepdim=True)
    bn = (b * b).sum(-1).unsqueeze(-2)
    return (an + bn - 2 * (a @ b.transpose(-1, -2))).clamp_min(0)


@COMPARATORS.register_as("squared_l2")
class SquaredL2Comparator(Comparator):
    """``-|a - b|^2``."""

    def pos(self, a, b):
        return -((a - b) ** 2).sum(-1)

    def neg(self, a, b):
        return -_sq_dist(a, b)


@COMPARATORS.register_as("l2")
class L2Comparator(Comparator):
    """``-|a - b|`` (the distance is clamped at 1e-30 before the square root, as PBG)."""

    def pos(self, a, b):
        return -((a - b) ** 2).sum(-1).clamp_min(1e-30).sqrt()

    def neg(self, a, b):
        return -_sq_dist(a, b).clamp_min(1e-30).sqrt()


# =============================================================================================
# Losses


class Loss(ABC):
    """``forward(pos (B,), neg, weight (B,) or None) -> scalar``: summed over edges.

    ``neg`` is a ``(B, N)`` tensor or a list of ``(B, N_k)`` blocks (the pool and the in-batch
    negatives), treated as their concatenation along the last axis without making it. Masked
    negatives carry ``-inf`` and contribute neither loss nor gradient.
    """

    name: str = ""

    def __init__(self, margin: float = 0.1):
        self.margin = margin

    def forward(self, pos: Tensor, neg: Tensor | list[Tensor],
                weight: Tensor | None) -> Tensor:
        per_edge = self.per_edge(pos, [neg] if isinstance(neg, Tensor) else list(neg))
        if weight is not None:
            per_edge = per_edge * weight
        return per_edge.sum()

    @abstractmethod
    def per_edge(self, pos: Tensor, blocks: list[Tensor]) -> Tensor:
        """``(B,)`` loss of each edge; see the class docstring."""


LOSSES: Registry[Loss] = Registry("loss_fn", "graphsys.embed.model:Loss")


@LOSSES.register_as("ranking")
class RankingLoss(Loss):
    """``sum_n max(0, margin - pos + neg_n)`` (margin ranking)."""

    def per_edge(self, pos, blocks):
        shifted = self.margin - pos.unsqueeze(-1)
        return sum(F.relu(shifted + b).sum(-1) for b in blocks)


@LOSSES.register_as("logistic")
class LogisticLoss(Loss):
    """``softplus(-pos) + mean_n softplus(neg_n)`` (binary cross-entropy with logits)."""

    def per_edge(self, pos, blocks):
        n = max(sum(b.shape[-1] for b in blocks), 1)
        return F.softplus(-pos) + sum(F.softplus(b).sum(-1) for b in blocks) / n


@LOSSES.register_as("softmax")
class SoftmaxLoss(Loss):
    """``-log softmax([pos, neg])[0]`` (cross-entropy with the positive as the target).

    Computed as ``logsumexp([pos, lse(block_1), ...]) - pos``: one ``logsumexp`` per block,
    so the ``(B, 1 + N)`` logits matrix is never materialised.
    """

    def per_edge(self, pos, blocks):
        parts = [pos.unsqueeze(-1)] + [torch.logsumexp(b, dim=-1, keepdim=True) for b in blocks]
        return torch.logsumexp(torch.cat(parts, dim=-1), dim=-1) - pos


def init_embeddings(num_rows: int, dimension: int, scale: float,
                    generator: torch.Generator) -> Tensor:
    """``N(0, scale)`` float32 ``(num_rows, dimension)`` from ``generator`` (deterministic)."""
    out = torch.empty(num_rows, dimension)
    out.normal_(0.0, scale, generator=generator)
    return out


__all__ = [
    "COMPARATORS",
    "LOSSES",
    "OPERATORS",
    "Comparator",
    "Loss",
    "Operator",
    "gather",
    "init_embeddings",
]
