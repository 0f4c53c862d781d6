"""CPU kernels of the embedding trainer (numba, ``nogil``: HOGWILD worker threads run them
side by side).

:func:`sparse_adagrad` is the sparse update of one embedding partition after a batch: the
gradient rows of a row that the batch gathered more than once are summed (in batch order,
so the result does not depend on thread scheduling), then PBG's row-wise Adagrad (or the
element-wise one) is applied to each distinct row in one pass over memory, with no
``unique``, no temporaries of the batch's size and no second gather/scatter.
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, nogil=True)
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
    ``(m, d)`` (C-contiguous).
    """
    m, d = grad.shape
    per_row = state.shape[1] == 1
    order = np.argsort(idx, kind="mergesort")  # stable: equal rows keep batch order
    acc = np.empty(d, np.float32)
    lr32, eps32, inv_d = np.float32(lr), np.float32(eps), np.float32(1.0 / d)
    k = 0
    while k < m:
        r = idx[order[k]]
        acc[:] = 0
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
