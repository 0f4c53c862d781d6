r"""Numba kernels of PageRank as a linear system (in memory, CPU): Chebyshev and BiCGSTAB
iterations, which reach the power iteration's accuracy in about a third of its products.

With the teleport :math:`p` (summing to 1) also taking the dangling mass, networkx's
PageRank is the normalised solution of

.. math::
    z = \alpha A z + p, \qquad x = z / \textstyle\sum_i z_i,

where :math:`A = W D^{-1}` is the column-substochastic walk matrix (``W_{vu}`` the edges
``u -> v``, :math:`D` the out-degrees, dangling columns zero). The fixed point satisfies
:math:`x = \alpha(Ax + (d^\top x)\, p) + (1 - \alpha) p`, so :math:`(I - \alpha A) x =
c\, p` with the scalar :math:`c = \alpha d^\top x + 1 - \alpha`: :math:`z` is :math:`x` up
to scale.

* :func:`chebyshev_step`: Chebyshev semi-iteration (weight 1: a Jacobi step) on a
  symmetric adjacency, where the eigenvalues of :math:`\alpha A` are real, in
  :math:`[-\alpha, \alpha]`: the recurrence
  :math:`z_{k+1} = \omega_{k+1} (\alpha A z_k + p - z_{k-1}) + z_{k-1}`
  (:func:`chebyshev_weights`) contracts the error by about
  :math:`\alpha / (1 + \sqrt{1 - \alpha^2})` per product (0.56 at 0.85); no inner
  products.
* :func:`bicgstab_iteration`: BiCGSTAB on :math:`(I - \alpha A) z = p` for any graph (two
  products an iteration).

Every product pulls over the ELL slots of
:func:`~graphsys.bsp.kernels_pagerank.ell_layout`, gathering the vector pre-divided by the
out-degrees (``inv_deg``), as the power iteration's pull does. Rows run in fixed chunks of
about equal work (:func:`chunk_bounds`), reductions sum the chunks in order: results do not
depend on the thread count.

What each step reports bounds the PageRank residual of its iterate: with the linear
residual :math:`\rho = \alpha A z + p - z` and :math:`\sigma = \sum z`, the normalised
:math:`x = z / \sigma` has :math:`T(x) - x = (\rho - (\textstyle\sum \rho)\, p) / \sigma`
(:math:`T`: one power iteration), so :math:`\|T(x) - x\|_1 \le (\|\rho\|_1 + |\sum \rho|)
/ \sigma`.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from graphsys.bsp.kernels_pagerank import (
    ELL_SLOTS,
    FUSED_CHUNKS,
    FUSED_PARALLEL_MIN_ROWS,
    ell_sum,
)


def chebyshev_weights(damping: float, steps: int) -> np.ndarray:
    """float64 (steps,): the weights :math:`\\omega_1 = 1`, :math:`\\omega_2 = 1 / (1 -
    \\rho^2 / 2)`, :math:`\\omega_{k+1} = 1 / (1 - \\rho^2 \\omega_k / 4)` of Chebyshev
    semi-iteration for an iteration matrix with real spectrum in :math:`[-\\rho, \\rho]`,
    :math:`\\rho` = ``damping``; they fall towards :math:`2 / (1 + \\sqrt{1 - \\rho^2})`."""
    w = np.ones(max(steps, 0))
    rho2 = damping * damping
    for k in range(1, len(w)):
        w[k] = 1.0 / (1.0 - rho2 / 2.0) if k == 1 else 1.0 / (1.0 - rho2 * w[k - 1] / 4.0)
    return w


def chunk_bounds(over_ptr: np.ndarray) -> np.ndarray:
    """int64 row bounds of the chunks the kernels split the rows of an ELL layout into
    (``over_ptr``: its overflow offsets, int64 (N+1,)):
    :data:`~graphsys.bsp.kernels_pagerank.FUSED_CHUNKS` runs of about equal work (the
    :data:`~graphsys.bsp.kernels_pagerank.ELL_SLOTS` slots of each row and its overflow)
    from :data:`~graphsys.bsp.kernels_pagerank.FUSED_PARALLEL_MIN_ROWS` rows, else one."""
    n = over_ptr.shape[0] - 1
    if n < FUSED_PARALLEL_MIN_ROWS:
        return np.array([0, n], np.int64)
    work = over_ptr - over_ptr[0] + ELL_SLOTS * np.arange(n + 1, dtype=np.int64)
    cuts = work[n] * np.arange(FUSED_CHUNKS + 1, dtype=np.int64) // FUSED_CHUNKS
    bounds = np.searchsorted(work, cuts).astype(np.int64)
    bounds[0], bounds[-1] = 0, n
    return np.maximum.accumulate(bounds)


@numba.njit(inline="always")
def _sum_parts(part, nc, width):
    """The first ``width`` (<= 4) columns of ``part[:nc]`` summed in row order."""
    t0 = 0.0
    t1 = 0.0
    t2 = 0.0
    t3 = 0.0
    for c in range(nc):
        t0 += part[c, 0]
        if width > 1:
            t1 += part[c, 1]
        if width > 2:
            t2 += part[c, 2]
        if width > 3:
            t3 += part[c, 3]
    return t0, t1, t2, t3


@numba.njit(inline="always")
def _cheb_rows(lo, hi, slots, over_ptr, overflow, send, new_send, cur, prev, inv_deg, p,
               damping, base, omega):
    """Rows ``lo:hi`` of :func:`chebyshev_step`; returns (sum of ``|residual|``, sum of
    the residual, sum of ``cur``) over them."""
    l1 = 0.0
    sr = 0.0
    sig = 0.0
    uniform = p.shape[0] == 0
    for r in range(lo, hi):
        v = np.uint64(r)
        t = damping * ell_sum(v, slots, over_ptr, overflow, send) + (
            base if uniform else p[v])
        c = cur[v]
        old = prev[v]
        new = old + omega * (t - old)
        prev[v] = new
        new_send[v] = new * inv_deg[v]
        l1 += abs(t - c)
        sr += t - c
        sig += c
    return l1, sr, sig


@numba.njit(parallel=True, cache=True, nogil=True)
def chebyshev_step(bounds, slots, over_ptr, overflow, send, new_send, cur, prev, inv_deg, p,
                   part, damping, base, omega):
    """One Chebyshev step pulled over the ELL slots of
    :func:`~graphsys.bsp.kernels_pagerank.ell_layout`: with ``t = damping * (pulled sum of
    send) + p`` (``base`` where ``p`` is empty: the uniform 1 / N), ``prev`` (the iterate
    before ``cur``) becomes the next iterate ``prev + omega (t - prev)`` and ``new_send``
    it times ``inv_deg``. ``send`` (``cur * inv_deg``) and ``new_send`` float64 (N+1,),
    the last 0 (the padding source); ``part`` float64 (chunks, 4) scratch; ``bounds``:
    :func:`chunk_bounds`. Returns (L1 norm and sum of the linear residual ``t - cur``,
    sum of ``cur``). With ``omega`` 1 the step is a Jacobi step, ``prev`` becoming ``t``
    whatever it held, on any graph."""
    nc = bounds.shape[0] - 1
    if nc == 1:
        return _cheb_rows(0, bounds[1], slots, over_ptr, overflow, send, new_send, cur, prev,
                          inv_deg, p, damping, base, omega)
    for c in numba.prange(nc):
        part[c, 0], part[c, 1], part[c, 2] = _cheb_rows(
            bounds[c], bounds[c + 1], slots, over_ptr, overflow, send, new_send, cur, prev,
            inv_deg, p, damping, base, omega)
    l1, sr, sig, _ = _sum_parts(part, nc, 3)
    return l1, sr, sig


@numba.njit(inline="always")
def _apply(lo, hi, slots, over_ptr, overflow, src, gathered, out, alpha, dot_with):
    """Rows ``lo:hi`` of ``out = src - alpha * (W @ gathered)`` over ELL slots. Returns
    (``out . dot_with``, ``out . out``) over them."""
    d1 = 0.0
    d2 = 0.0
    for r in range(lo, hi):
        i = np.uint64(r)
        o = src[i] - alpha * ell_sum(i, slots, over_ptr, overflow, gathered)
        out[i] = o
        d1 += o * dot_with[i]
        d2 += o * o
    return d1, d2


@numba.njit(parallel=True, cache=True, nogil=True)
def residual(bounds, slots, over_ptr, overflow, inv_deg, b, z, r, gathered, part, alpha):
    """``r = b - (I - alpha W diag(inv_deg)) z`` over ELL slots; ``gathered`` (N+1,)
    filled with ``inv_deg * z`` first (its last entry, the padding source's, 0; ``part``:
    scratch). Returns ``r . r``."""
    n = z.shape[0]
    for i in range(n):
        gathered[i] = inv_deg[i] * z[i]
    gathered[n] = 0.0
    nc = bounds.shape[0] - 1
    for c in numba.prange(nc):
        _apply(bounds[c], bounds[c + 1], slots, over_ptr, overflow, z, gathered, r, alpha, z)
    total = 0.0
    for i in range(n):
        r[i] = b[i] - r[i]
        total += r[i] * r[i]
    return total


@numba.njit(inline="always")
def _bicg_x(lo, hi, z, r, r0, p, s, t, a, omega):
    """Rows ``lo:hi`` of ``z += a p + omega s``, ``r = s - omega t``; returns (r0 . r,
    ``|r|`` summed, ``r`` summed, ``z`` summed)."""
    rho = 0.0
    l1 = 0.0
    sr = 0.0
    sig = 0.0
    for i in range(lo, hi):
        zi = z[i] + a * p[i] + omega * s[i]
        ri = s[i] - omega * t[i]
        z[i] = zi
        r[i] = ri
        rho += r0[i] * ri
        l1 += abs(ri)
        sr += ri
        sig += zi
    return rho, l1, sr, sig


@numba.njit(parallel=True, cache=True, nogil=True)
def bicgstab_iteration(bounds, slots, over_ptr, overflow, inv_deg, z, r, r0, p, gp, v, s,
                       gs, t, part, alpha, rho):
    """One BiCGSTAB iteration on :math:`(I - \\alpha A) z = p_{tele}`, its two products
    pulled over ELL slots (gathering ``gp = inv_deg * p`` and ``gs = inv_deg * s``, both
    (N+1,) with a last 0). ``rho``: ``r0 . r`` before the iteration; ``p`` / ``gp`` hold
    the search direction, advanced for the next iteration at the end. Returns (new
    ``rho``, L1 norm and sum of the new residual ``r``, ``sum z``, status): 0 when the
    iteration ran, 1 when it broke down before changing ``z`` (a zero or non-finite
    denominator), 2 when ``z`` moved but the next direction cannot be formed (``omega`` or
    the new ``rho`` zero)."""
    nc = bounds.shape[0] - 1
    for c in numba.prange(nc):
        part[c, 0], part[c, 1] = _apply(bounds[c], bounds[c + 1], slots, over_ptr, overflow,
                                        p, gp, v, alpha, r0)
    r0v = _sum_parts(part, nc, 1)[0]
    if r0v == 0.0 or not math.isfinite(r0v):
        return rho, math.inf, 0.0, 0.0, 1
    a = rho / r0v
    for c in numba.prange(nc):
        for i in range(bounds[c], bounds[c + 1]):
            si = r[i] - a * v[i]
            s[i] = si
            gs[i] = inv_deg[i] * si
    for c in numba.prange(nc):
        part[c, 0], part[c, 1] = _apply(bounds[c], bounds[c + 1], slots, over_ptr, overflow,
                                        s, gs, t, alpha, s)
    ts, tt, _, _ = _sum_parts(part, nc, 2)
    omega = ts / tt if tt > 0.0 else 0.0
    for c in numba.prange(nc):
        part[c, 0], part[c, 1], part[c, 2], part[c, 3] = _bicg_x(
            bounds[c], bounds[c + 1], z, r, r0, p, s, t, a, omega)
    new_rho, l1, sr, sig = _sum_parts(part, nc, 4)
    if omega == 0.0 or new_rho == 0.0 or not math.isfinite(new_rho):
        return new_rho, l1, sr, sig, 2
    beta = (new_rho / rho) * (a / omega)
    for c in numba.prange(nc):
        for i in range(bounds[c], bounds[c + 1]):
            pi = r[i] + beta * (p[i] - omega * v[i])
            p[i] = pi
            gp[i] = inv_deg[i] * pi
    return new_rho, l1, sr, sig, 0
