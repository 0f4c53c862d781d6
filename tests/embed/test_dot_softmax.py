"""The closed-form dot + softmax batch step against a brute-force reference, and the numba
row-Adagrad kernel against the torch update."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from graphsys.embed import dot_softmax
from graphsys.embed.kernels import sparse_adagrad


def _reference(xl, xr, pool_l, pool_r, nb, weight, op):
    """Row by row: the positive, the pool, and the other true candidates of the row's chunk
    of k = min(nb, B) rows (the last rows' chunk: the last k rows), softmax cross-entropy."""
    b = len(xl)
    k = min(nb, b)
    nfull = b // k * k
    total = 0.0
    for q_all, c_all, pool in ((op(xl, "rhs"), xr, pool_r), (op(xr, "lhs"), xl, pool_l)):
        for r in range(b):
            start = (r // k) * k if r < nfull else b - k
            chunk = [m for m in range(start, start + k) if m != r]
            q = q_all[r]
            logits = [q @ c_all[r]] + [q @ c_all[m] for m in chunk]
            if pool is not None:
                logits += list(pool @ q)
            z = torch.stack(logits)
            loss = torch.logsumexp(z, 0) - z[0]
            total = total + (loss if weight is None else loss * weight[r])
    return total


def _translation(t):
    return lambda x, side: x + (t[0] if side == "rhs" else t[1])


@pytest.mark.parametrize("b,nb,u,weighted,identity", [
    (12, 4, 5, False, True), (13, 4, 5, True, True), (13, 4, 0, False, True),
    (3, 5, 2, False, True), (13, 4, 5, True, False), (10, 10, 3, False, False)])
def test_closed_form_matches_brute_force(b, nb, u, weighted, identity):
    gen = torch.Generator().manual_seed(b * 100 + nb)
    d = 6
    xl = torch.randn(b + u, d, dtype=torch.float64, generator=gen)
    xr = torch.randn(b + u, d, dtype=torch.float64, generator=gen)
    w = torch.rand(b, dtype=torch.float64, generator=gen) + 0.5 if weighted else None
    t = torch.randn(2, d, dtype=torch.float64, generator=gen)
    op = (lambda x, side: x) if identity else _translation(t)

    ref_l, ref_r = xl.clone().requires_grad_(True), xr.clone().requires_grad_(True)
    ref = _reference(ref_l[:b], ref_r[:b], ref_l[b:] if u else None, ref_r[b:] if u else None,
                     nb, w, op)
    ref.backward()

    ql, qr = op(xl[:b], "rhs"), op(xr[:b], "lhs")  # translation: dq = dx
    loss, gl, gr, dxl, dxr = dot_softmax.both_sides(
        ql, qr, xl[:b], xr[:b], xl[b:] if u else None, xr[b:] if u else None, nb, w,
        identity)
    assert float(loss) == pytest.approx(float(ref.detach()), rel=1e-10)
    assert gl.shape == gr.shape == (b + u, d)
    if identity and b % min(nb, b) == 0:
        assert dxl is None and dxr is None  # nothing beyond the shared in-batch block
    torch.testing.assert_close(gl[:b] + (0 if dxl is None else dxl), ref_l.grad[:b])
    torch.testing.assert_close(gr[:b] + (0 if dxr is None else dxr), ref_r.grad[:b])
    torch.testing.assert_close(gl[b:], ref_l.grad[b:])
    torch.testing.assert_close(gr[b:], ref_r.grad[b:])


@pytest.mark.parametrize("b,nb,u,weighted,identity", [
    (12, 4, 5, False, True), (13, 4, 5, True, True), (13, 4, 0, False, True),
    (3, 5, 2, False, True), (13, 4, 5, True, False), (10, 10, 3, False, False),
    (1000, 50, 100, False, True)])
def test_fused_float32_kernel_matches_float64(b, nb, u, weighted, identity):
    """On CPU float32 each side's softmax is the numba kernel (its own ``exp``); it agrees
    with the torch ops in float64 (checked against brute force above) to float32 rounding."""
    gen = torch.Generator().manual_seed(b + 17 * nb + u)
    d = 8
    xl = torch.randn(b + u, d, dtype=torch.float64, generator=gen) * 2
    xr = torch.randn(b + u, d, dtype=torch.float64, generator=gen) * 2
    w = torch.rand(b, dtype=torch.float64, generator=gen) + 0.5 if weighted else None
    t = torch.randn(2, d, dtype=torch.float64, generator=gen)
    op = (lambda x, side: x) if identity else _translation(t)

    def run(dtype):
        xl_, xr_, t_ = xl.to(dtype), xr.to(dtype), None if w is None else w.to(dtype)
        return dot_softmax.both_sides(
            op(xl_[:b], "rhs").to(dtype), op(xr_[:b], "lhs").to(dtype), xl_[:b], xr_[:b],
            xl_[b:] if u else None, xr_[b:] if u else None, nb, t_, identity)

    got, ref = run(torch.float32), run(torch.float64)
    assert float(got[0]) == pytest.approx(float(ref[0]), rel=1e-5)
    for g, r in zip(got[1:], ref[1:], strict=True):
        assert (g is None) == (r is None)
        if r is not None:
            torch.testing.assert_close(g.double(), r, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_fused_kernel_reports_a_non_finite_score(bad):
    """A non-finite score anywhere in a row (not only at its positive) makes the loss NaN,
    so the trainer's divergence check stops the run."""
    gen = torch.Generator().manual_seed(3)
    xl, xr = torch.randn(12, 4, generator=gen), torch.randn(12, 4, generator=gen)
    xr[11, 0] = bad  # a pool row: only ever a negative
    loss = dot_softmax.both_sides(xl[:8], xr[:8], xl[:8], xr[:8], xl[8:], xr[8:], 4, None,
                                  True)[0]
    assert not np.isfinite(float(loss))


def test_fused_exp_matches_numpy():
    from graphsys.embed.kernels import _exp_shifted
    top = np.float32(2.5)
    x = top + np.concatenate([np.linspace(-90, 88, 100_001), [-1e-30, -86.99, -87.01, -1e4]]
                             ).astype(np.float32)
    out, bits = np.empty_like(x), np.empty(len(x), np.int32)
    over = _exp_shifted(x, top, out, bits)[1]
    ref = np.exp(x.astype(np.float64) - np.float64(top))
    kept = x - top >= -87
    np.testing.assert_allclose(out[kept], ref[kept], rtol=3e-7)
    assert not out[~kept].any() and over == 0
    low = x <= top  # the sum, where float32 holds it
    total = _exp_shifted(x[low], top, out[:low.sum()], bits[:low.sum()])[0]
    assert total == pytest.approx(ref[low].sum(), rel=1e-6)
    x[7] = top + 89  # beyond float32's exp: counted, for the caller to shift by more
    assert _exp_shifted(x, top, out, bits)[1] == 1


def test_fused_kernel_handles_a_negative_far_above_the_positive():
    """The kernel shifts the logits by the positive's score, and by the row's maximum only
    when a negative exceeds the positive by more than exp's range (a model going astray)."""
    gen = torch.Generator().manual_seed(5)
    xl, xr = torch.randn(12, 4, generator=gen), torch.randn(12, 4, generator=gen)
    xr[10] = xl[0] * 40  # pool row 2: scores ~ 40 |xl[0]|^2 >> the positive's
    args = (xl[:8], xr[:8], xl[:8], xr[:8], xl[8:], xr[8:], 4, None, True)
    got = dot_softmax.both_sides(*args)
    ref = dot_softmax.both_sides(*(a.double() if torch.is_tensor(a) else a for a in args))
    assert float(got[0]) > 88 and float(got[0]) == pytest.approx(float(ref[0]), rel=1e-5)
    torch.testing.assert_close(got[1].double(), ref[1], rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(got[2].double(), ref[2], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("max_norm", [0.0, 0.05])
def test_row_adagrad_kernel_matches_torch(max_norm):
    rng = np.random.default_rng(0)
    n, d, m = 50, 8, 200
    emb = rng.normal(size=(n, d)).astype(np.float32) * 0.1
    state = rng.random(n).astype(np.float32)
    idx = rng.integers(0, n // 2, m)  # many repeats
    grad = rng.normal(size=(m, d)).astype(np.float32)
    e, s = torch.from_numpy(emb.copy()), torch.from_numpy(state.copy())
    uniq, inv = torch.unique(torch.from_numpy(idx), return_inverse=True)
    g = torch.zeros(len(uniq), d).index_add_(0, inv, torch.from_numpy(grad))
    acc = s[uniq] + g.pow(2).mean(1)
    s[uniq] = acc
    e.index_add_(0, uniq, g * (-0.1 / (acc.sqrt() + 1e-10)).unsqueeze(1))
    if max_norm:
        e[uniq] = e[uniq].renorm(2, 0, max_norm)
    sparse_adagrad(emb, state[:, None], idx, grad, 0.1, 1e-10, max_norm)
    np.testing.assert_allclose(state, s.numpy(), rtol=1e-5)
    np.testing.assert_allclose(emb, e.numpy(), rtol=1e-5, atol=1e-7)
    untouched = np.setdiff1d(np.arange(n), idx)
    assert len(untouched) and np.array_equal(state[untouched], s.numpy()[untouched])


@pytest.mark.parametrize("max_norm", [0.0, 0.05])
def test_elementwise_adagrad_kernel_matches_torch_adagrad(max_norm):
    """State ``(n, d)``: two steps equal ``torch.optim.Adagrad`` on the dense gradient (the
    duplicate rows summed), rows outside the batch untouched."""
    rng = np.random.default_rng(1)
    n, d, m = 40, 6, 150
    emb = rng.normal(size=(n, d)).astype(np.float32) * 0.1
    state = np.zeros((n, d), np.float32)
    param = torch.nn.Parameter(torch.from_numpy(emb.copy()))
    opt = torch.optim.Adagrad([param], lr=0.1, eps=1e-10)
    touched = np.zeros(n, bool)
    for _ in range(2):
        idx = rng.integers(0, n // 2, m)
        grad = rng.normal(size=(m, d)).astype(np.float32)
        touched[idx] = True
        param.grad = torch.zeros(n, d).index_add_(0, torch.from_numpy(idx),
                                                  torch.from_numpy(grad))
        opt.step()
        if max_norm:
            with torch.no_grad():
                rows = torch.from_numpy(np.unique(idx))
                param[rows] = param[rows].renorm(2, 0, max_norm)
        sparse_adagrad(emb, state, idx, grad, 0.1, 1e-10, max_norm)
    np.testing.assert_allclose(state, opt.state[param]["sum"].numpy(), rtol=1e-5)
    np.testing.assert_allclose(emb, param.detach().numpy(), rtol=1e-5, atol=1e-7)
    assert not touched.all() and not state[~touched].any()


@pytest.mark.parametrize("weighted", [False, True])
def test_one_vs_all_matches_brute_force(weighted):
    gen = torch.Generator().manual_seed(7)
    b, n, d = 9, 13, 5
    q = torch.randn(b, d, dtype=torch.float64, generator=gen)
    cands = torch.randn(n, d, dtype=torch.float64, generator=gen)
    target = torch.randint(n, (b,), generator=gen)
    w = torch.rand(b, dtype=torch.float64, generator=gen) + 0.5 if weighted else None
    rq, rc = q.clone().requires_grad_(True), cands.clone().requires_grad_(True)
    ref = 0.0
    for r in range(b):  # cross-entropy over every candidate, the true one counted once
        z = torch.stack([rq[r] @ rc[c] for c in range(n)])
        loss = torch.logsumexp(z, 0) - z[target[r]]
        ref = ref + (loss if w is None else loss * w[r])
    ref.backward()
    loss, dq, dc = dot_softmax.one_vs_all(q, cands, target, w)
    assert float(loss) == pytest.approx(float(ref.detach()), rel=1e-12)
    torch.testing.assert_close(dq, rq.grad)
    torch.testing.assert_close(dc, rc.grad)


_KERNELS = """
import hashlib, sys
import numpy as np
from graphsys.embed.kernels import softmax_side_grads, sparse_adagrad
rng = np.random.default_rng(0)
B, U, k = 100, 50, 10
s1 = rng.standard_normal((B, U)).astype(np.float32) * 3
s1[7, 3] = 200.0  # beyond exp's range above the positive: the second, max-shifted pass
s2 = rng.standard_normal((B // k, k, k)).astype(np.float32) * 3
g1, g2 = np.zeros((B, U), np.float32), np.zeros_like(s2)
empty = np.empty((0, k), np.float32)
loss = softmax_side_grads(s1, s2, False, empty, np.empty(0, np.float32), g1, g2, empty.copy())
h = hashlib.sha256(np.float64(loss).tobytes() + g1.tobytes() + g2.tobytes())
for width in (1, 32):
    emb = rng.standard_normal((50, 32)).astype(np.float32)
    st = np.abs(rng.standard_normal((50, width))).astype(np.float32)
    idx = rng.integers(0, 50, 200).astype(np.int64)
    sparse_adagrad(emb, st, idx, rng.standard_normal((200, 32)).astype(np.float32), 0.1,
                   1e-10, 0.0)
    h.update(emb.tobytes() + st.tobytes())
print(h.hexdigest())
"""


def test_kernels_compiled_and_loaded_from_numba_cache_round_alike(tmp_path):
    """The first process compiles the fast-math kernels into an empty numba cache, the second
    loads them from it: their results are bit-for-bit equal (a resumed run is often not the
    process that compiled the kernels; numba had reassociated a call between two cached
    kernels in one of the two only)."""
    import os
    import subprocess
    import sys

    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "numba"), OMP_NUM_THREADS="1")
    out = [subprocess.run([sys.executable, "-c", _KERNELS], env=env, check=True, timeout=300,
                          capture_output=True, text=True).stdout for _ in range(2)]
    assert any((tmp_path / "numba").rglob("*.nbi")), "the kernels were not cached"
    assert out[0] == out[1] and len(out[0].strip()) == 64
