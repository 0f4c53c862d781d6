"""CPU kernels of the embedding trainer (numba, ``nogil``: HOGWILD worker threads run them
side by side).

:func:`sparse_adagrad` updates one embedding partition after a batch: the gradient rows of a
row gathered more than once are summed in batch order (independent of thread scheduling),
then row-wise (or element-wise) Adagrad is applied to each distinct row in one pass, with no
temporaries of the batch's size. :func:`softmax_side_grads` is the softmax cross-entropy of
one side of a dot / softmax batch (:mod:`graphsys.embed.dot_softmax`) and its gradient in
one pass per row, with its own vectorized ``exp``. The fast-math helpers are inlined into
each kernel (:data:`_INLINE`), so a kernel gives the same bits whether compiled or loaded
from numba's cache.
"""

from __future__ import annotations

import numba
import numpy as np

from graphsys.prefetch import prefetch

#: Fast-math flags of these kernels: reassociation (vectorized sums), contraction (FMA),
#: reciprocals, signed zeros; not ``nnan`` / ``ninf``: a non-finite value must reach the
#: loss and the embeddings as it is (the divergence checks).
_FAST = {"reassoc", "contract", "arcp", "nsz"}


@numba.njit(cache=True, nogil=True, fastmath=_FAST, error_model="numpy")
def sparse_adagrad(emb: np.ndarray, state: np.ndarray, idx: np.ndarray, grad: np.ndarray,
                   lr: float, eps: float, max_norm: float) -> None:
    """In place, for each distinct row ``r`` of ``idx``: ``g`` = sum of ``grad[k]`` over
    ``idx[k] == r`` (in ``k`` order), then one Adagrad step of the row:

    * ``state`` float32 ``(n, 1)``, PBG's row-wise Adagrad: ``state[r] += mean(g**2)``;
      ``emb[r] -= lr * g / (sqrt(state[r]) + eps)``;
    * ``state`` float32 ``(n, d)``, element-wise Adagrad (``torch.optim.Adagrad``'s, on the
      row): ``state[r] += g**2``; ``emb[r] -= lr * g / (sqrt(state[r]) + eps)``;

    then, when ``max_norm > 0``, ``emb[r]`` is scaled to norm ``max_norm`` if above it
    (``torch.renorm``'s factor ``max_norm / (norm + 1e-7)``).

    ``emb`` float32 ``(n, d)``, ``idx`` int64 ``(m,)`` in ``[0, n)``, ``grad`` float32
    ``(m, d)`` (all C-contiguous). The rows are visited in sorted order, each one's
    embedding and state prefetched :data:`_ADAGRAD_AHEAD` entries early (a batch's rows are
    random rows of a partition much larger than the cache).
    """
    m, d = grad.shape
    per_row = state.shape[1] == 1
    order = _stable_order(idx)
    flat_emb, flat_state = emb.reshape(-1), state.reshape(-1)
    for k in range(min(_ADAGRAD_AHEAD, m)):
        _prefetch_row(flat_emb, flat_state, idx[order[k]], d, state.shape[1])
    acc = np.empty(d, np.float32)
    lr32, eps32, inv_d = np.float32(lr), np.float32(eps), np.float32(1.0 / d)
    k = 0
    while k < m:
        if k + _ADAGRAD_AHEAD < m:
            _prefetch_row(flat_emb, flat_state, idx[order[k + _ADAGRAD_AHEAD]], d,
                          state.shape[1])
        r = idx[order[k]]
        acc[:] = grad[order[k]]
        k += 1
        while k < m and idx[order[k]] == r:
            g = grad[order[k]]
            for c in range(d):
                acc[c] += g[c]
            k += 1
        row, st = emb[r], state[r]
        if per_row:
            sq = np.float32(0)
            for c in range(d):
                sq += acc[c] * acc[c]
            s = st[0] + sq * inv_d
            st[0] = s
            scale = -lr32 / (np.sqrt(s) + eps32)
            for c in range(d):
                row[c] += acc[c] * scale
        else:
            for c in range(d):
                s = st[c] + acc[c] * acc[c]
                st[c] = s
                row[c] -= lr32 * acc[c] / (np.sqrt(s) + eps32)
        if max_norm > 0:
            norm = np.float32(0)
            for c in range(d):
                norm += row[c] * row[c]
            norm = np.sqrt(norm)
            if norm > max_norm:
                f = np.float32(max_norm / (norm + 1e-7))
                for c in range(d):
                    row[c] *= f


@numba.njit(cache=True, nogil=True)
def gather_rows(emb: np.ndarray, idx: np.ndarray, out: np.ndarray) -> int:
    """``out[k] = emb[idx[k]]`` (``torch.index_select``), each row prefetched
    :data:`_ADAGRAD_AHEAD` rows early. ``emb`` float32 ``(n, d)``, ``idx`` int64 ``(m,)``,
    ``out`` float32 ``(m, d)``, C-contiguous. Returns -1, or the first ``k`` whose
    ``idx[k]`` is outside ``[0, n)`` (nothing is copied for it or after it)."""
    n, d = emb.shape
    flat = emb.reshape(-1)
    no_state = flat[:0]
    for k in range(min(_ADAGRAD_AHEAD, len(idx))):
        _prefetch_row(flat, no_state, idx[k], d, 0)
    for k in range(len(idx)):
        if k + _ADAGRAD_AHEAD < len(idx):
            _prefetch_row(flat, no_state, idx[k + _ADAGRAD_AHEAD], d, 0)
        r = idx[k]
        if r < 0 or r >= n:
            return k
        for c in range(d):
            out[k, c] = emb[r, c]
    return -1


@numba.njit(cache=True, nogil=True)
def _stable_order(idx: np.ndarray) -> np.ndarray:
    """The stable sorting permutation of ``idx`` (int64 ``(m,)``, non-negative, below
    ``2**(63 - ceil(log2 m))``): one sort of the distinct keys ``idx << bits | position``,
    which needs no stability, so it is an in-place quicksort of plain integers instead of
    a merge sort's ``argsort`` with its index indirection (timings: docs/benchmarks.md)."""
    m = len(idx)
    bits = 1
    while (1 << bits) < m:
        bits += 1
    keys = (idx << bits) | np.arange(m)
    keys.sort()
    return keys & ((1 << bits) - 1)


#: :func:`sparse_adagrad` and :func:`gather_rows` prefetch the rows this many entries ahead
_ADAGRAD_AHEAD = 8
_FLOATS_PER_LINE = 16  # float32 in a 64-byte cache line


@numba.njit(cache=True, nogil=True, inline="always")
def _prefetch_row(flat_emb, flat_state, r, d, state_width):
    """Prefetch row ``r`` of a C-contiguous ``(n, d)`` embedding (every cache line of it)
    and of its ``(n, state_width)`` Adagrad state, both given flattened."""
    base = r * d
    for c in range(0, d, _FLOATS_PER_LINE):
        prefetch(flat_emb, base + c)
    prefetch(flat_emb, base + d - 1)
    for c in range(0, state_width, _FLOATS_PER_LINE):
        prefetch(flat_state, r * state_width + c)


#: float32 ``exp`` on ``[-87, 88]``: ``2^n * p(r)`` with ``x = n ln 2 + r``, ``|r| <= ln 2 / 2``,
#: ``ln 2`` split in two (Cody-Waite) and Cephes's degree-7 polynomial ``expf``; relative error
#: <= 2e-7 (about one float32 ulp). Written so that LLVM vectorizes it: numba has no vector
#: ``exp`` without Intel's SVML, and a call of the scalar ``expf`` per value keeps the loop
#: from vectorizing (timings: docs/benchmarks.md).
_LOG2E = np.float32(1.4426950408889634)
_LN2_HI, _LN2_LO = np.float32(0.693359375), np.float32(-2.12194440e-4)
_EXPF_POLY = tuple(np.float32(c) for c in (1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3,
                                           4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1))
_EXP_FLOOR = np.float32(-87.0)  # exp(-87) ~ 1.6e-38, the smallest power kept as a normal
_EXP_CEIL = np.float32(88.0)  # exp(88) ~ 1.7e38, below float32's largest

#: The fast-math helpers that :func:`softmax_side_grads` calls are inlined into it by numba
#: (``inline="always"``), not left to LLVM: with a call between two ``cache=True`` functions,
#: the caller compiled in the running process and the caller loaded from numba's cache
#: rounded differently (``reassoc``), so a run resumed in a process that had compiled the
#: kernels was not bit-for-bit the run that had loaded them (or the other way round).
_INLINE = "always"


@numba.njit(cache=True, nogil=True, fastmath=_FAST, inline=_INLINE)
def _exp_shifted(x: np.ndarray, top: np.float32, out: np.ndarray, bits: np.ndarray
                 ) -> tuple[np.float32, np.float32]:
    """``out[i] = exp(x[i] - top)`` for float32 ``x[i] - top`` in ``[-87, 88]`` (``0``
    below). Returns ``(sum(out), over)``: ``over`` counts the ``x[i] - top > 88``, whose
    ``out[i]`` is not valid (the caller shifts by more), and is NaN if an ``x[i]`` is.
    ``bits`` int32 scratch of ``x``'s length."""
    c0, c1, c2, c3, c4, c5 = _EXPF_POLY
    over = np.float32(0.0)
    for i in range(len(x)):
        v = x[i] - top
        over += np.float32(1.0) if v > _EXP_CEIL else v * np.float32(0.0)
        v = min(max(v, _EXP_FLOOR), _EXP_CEIL)
        n = np.floor(v * _LOG2E + np.float32(0.5))
        r = v - n * _LN2_HI - n * _LN2_LO
        p = ((((c0 * r + c1) * r + c2) * r + c3) * r + c4) * r + c5
        out[i] = p * r * r + r + np.float32(1.0)
        bits[i] = (np.int32(n) + np.int32(127)) << 23
    scale = bits.view(np.float32)
    total = np.float32(0.0)
    for i in range(len(x)):
        e = out[i] * scale[i] if x[i] - top >= _EXP_FLOOR else np.float32(0.0)
        out[i] = e
        total += e
    return total, over


@numba.njit(cache=True, nogil=True, fastmath=_FAST | {"nnan"}, inline=_INLINE)
def _row_max(x: np.ndarray) -> np.float32:
    """``max(x)`` of a non-empty float32 row (``nnan``: a NaN in ``x`` gives any value;
    :func:`softmax_side_grads` checks the row's finiteness on its own)."""
    top = x[0]
    for i in range(len(x)):
        top = max(top, x[i])
    return top


@numba.njit(cache=True, nogil=True, fastmath=_FAST, error_model="numpy")
def softmax_side_grads(s1: np.ndarray, s2: np.ndarray, transposed: bool, sr: np.ndarray,
                       weight: np.ndarray, g1: np.ndarray, g2: np.ndarray,
                       gr: np.ndarray) -> float:
    """One side of :func:`graphsys.embed.dot_softmax.side_softmax` in one pass: the softmax
    cross-entropy of each row's logits and its gradient with respect to them.

    Row ``b`` (of ``B = nchunk * k + rem``) has the logits ``s1[b]`` (pool, ``(U,)``, ``U``
    may be 0) then its in-batch block: for ``b = j * k + r`` in a full chunk, ``s2[j, r]``
    (``s2[j, :, r]`` when ``transposed``), its positive at column ``r``; for the ``rem``
    last rows, ``sr[b - nchunk * k]``, the positive at column ``k - rem + (b - nchunk * k)``.
    ``weight`` ``(B,)`` scales each row (empty: 1). All float32.

    Writes ``g1`` ``(B, U)`` and ``gr`` ``(rem, k)``, and *adds* the full chunks' gradient
    to ``g2`` ``(nchunk, k, k)`` (at ``[j, :, r]`` when ``transposed``: both sides of an
    identity-operator batch share one block). Returns the weighted loss sum (float64), NaN
    when a logit is not finite.
    """
    B, U = s1.shape
    nchunk, k = s2.shape[0], s2.shape[2]
    nfull = nchunk * k
    rem = B - nfull
    n = U + k
    row = np.empty(n, np.float32)
    ex = np.empty(n, np.float32)
    bits = np.empty(n, np.int32)
    total = 0.0
    finite = np.float32(0.0)  # stays 0 unless a logit is NaN (or inf: inf - inf)
    for b in range(B):
        for c in range(U):
            row[c] = s1[b, c]
        if b < nfull:
            j, r = b // k, b % k
            if transposed:
                for c in range(k):
                    row[U + c] = s2[j, c, r]
            else:
                for c in range(k):
                    row[U + c] = s2[j, r, c]
            pos = U + r
        else:
            j, r = nchunk, b - nfull
            for c in range(k):
                row[U + c] = sr[r, c]
            pos = U + k - rem + r
        # Shifted by the positive's score: one pass unless a score exceeds it by > 88
        top = row[pos]
        total_ex, over = _exp_shifted(row, top, ex, bits)
        if over > 0:
            top = _row_max(row)
            total_ex, over = _exp_shifted(row, top, ex, bits)
        finite += over
        w = weight[b] if len(weight) else np.float32(1.0)
        total += w * (np.log(np.float64(total_ex)) - (row[pos] - top))
        scale = w / total_ex
        for c in range(U):
            g1[b, c] = ex[c] * scale
        if b < nfull:
            if transposed:
                for c in range(k):
                    g2[j, c, r] += ex[U + c] * scale
                g2[j, r, r] -= w
            else:
                for c in range(k):
                    g2[j, r, c] += ex[U + c] * scale
                g2[j, r, r] -= w
        else:
            for c in range(k):
                gr[r, c] = ex[U + c] * scale
            gr[r, pos - U] -= w
    return total + finite * np.float32(0.0)
