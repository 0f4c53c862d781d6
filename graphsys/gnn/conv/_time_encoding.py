"""The edge input of a temporal attention layer, ``[e_j || cos(w * dt_j + b)]``, written
straight into a padded ``(slots, raw + dim)`` layout by one numba pass (CPU), where torch
takes four passes over a TGAT batch's largest tensor (and its slow ``cos`` path for large
arguments).

Each element is the same float32 argument ``x = float32(w_j * float32(dt)) + b_j`` as
:class:`~graphsys.gnn.conv.temporal_attention.TimeEncoder`'s, reduced in float64 by
:math:`2\\pi` in two parts (Cody and Waite's; ``k * HI`` exact for :math:`|k| < 2^{29}`,
arguments below :math:`3 \\cdot 10^9`) to :math:`[-\\pi, \\pi]`, where the Taylor series of
``cos`` to :math:`y^{22}` (error below :math:`2 \\cdot 10^{-12}`) is summed in float64 and
rounded once to float32: within one float32 unit of torch's value. A gap whose arguments
may reach :math:`3 \\cdot 10^9` goes to libm's ``cos`` in float64.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from numba import njit, prange

_INV_2PI = 1.0 / (2.0 * math.pi)
#: :math:`2\pi` in two parts: HI has 24 significant bits, so ``k * HI`` is exact
_2PI_HI = float(np.float32(2.0 * math.pi))
_2PI_LO = 2.0 * math.pi - _2PI_HI
#: the largest argument reduced in two parts (:math:`|k| < 2^{29}`); a row of gaps whose
#: arguments may exceed it is taken by libm's ``cos`` instead
_REDUCED_MAX = 3e9
#: Taylor coefficients of cos in :math:`y^2`, highest first (Horner)
_COS = np.array([(-1.0) ** n / math.factorial(2 * n) for n in range(12)][::-1])
#: the same coefficients as a tuple: numba freezes it, so each Horner step below reads a
#: literal (a loop over an array is an inner loop, which keeps the frequency loop scalar)
_C = tuple(float(c) for c in _COS)


@njit(parallel=True, cache=True)
def _encode_slots(slot, delta, raw, w, b, out):
    """``out[slot[i]] = [raw[i] || cos(w * delta[i] + b)]`` (float32 argument, see the
    module docstring); rows of ``out`` not in ``slot`` are left as they are."""
    r = raw.shape[1]
    dim = w.shape[0]
    wmax, bmax = np.abs(w).max(), np.abs(b).max()
    for i in prange(slot.shape[0]):
        p = slot[i]
        for c in range(r):
            out[p, c] = raw[i, c]
        d = np.float32(delta[i])
        if abs(d) * wmax + bmax >= _REDUCED_MAX:     # a rare long gap: libm's reduction
            for j in range(dim):
                out[p, r + j] = np.float32(math.cos(np.float64(np.float32(w[j] * d) + b[j])))
            continue
        row = out[p, r:]
        # Horner's steps written out (the order of a loop over _COS, so the same bits):
        # no inner loop, so the loop over the frequencies vectorises (float64 lanes)
        for j in range(dim):
            x = np.float64(np.float32(w[j] * d) + b[j])
            k = np.rint(x * _INV_2PI)
            y = (x - k * _2PI_HI) - k * _2PI_LO
            y2 = y * y
            acc = _C[0] * y2 + _C[1]
            acc = acc * y2 + _C[2]
            acc = acc * y2 + _C[3]
            acc = acc * y2 + _C[4]
            acc = acc * y2 + _C[5]
            acc = acc * y2 + _C[6]
            acc = acc * y2 + _C[7]
            acc = acc * y2 + _C[8]
            acc = acc * y2 + _C[9]
            acc = acc * y2 + _C[10]
            acc = acc * y2 + _C[11]
            row[j] = np.float32(acc)


def fused_ok(lin: torch.nn.Linear, delta: torch.Tensor) -> bool:
    """Whether :func:`slot_edges` takes the numba pass: a CPU float32 encoder whose
    parameters need no gradient (or none is being recorded), so the result is a constant."""
    return (delta.device.type == "cpu" and lin.weight.dtype == torch.float32
            and lin.weight.shape[1] == 1
            and not (torch.is_grad_enabled() and (lin.weight.requires_grad
                                                  or lin.bias.requires_grad)))


def slot_edges(lin: torch.nn.Linear, slot: torch.Tensor, num_slots: int, delta: torch.Tensor,
               raw: torch.Tensor | None) -> torch.Tensor:
    """float32 ``(num_slots, raw_dim + dim)``: row ``slot[i]`` holds ``[raw[i] ||
    cos(lin(delta[i]))]``, the other rows zeros; ``slot`` int64 (U,), ``delta`` (U,),
    ``raw`` (U, raw_dim) or None. Only where :func:`fused_ok`."""
    r = 0 if raw is None else raw.shape[1]
    out = np.zeros((num_slots, r + lin.weight.shape[0]), np.float32)
    raw_np = (np.zeros((len(slot), 0), np.float32) if raw is None
              else np.ascontiguousarray(raw.detach().numpy(), dtype=np.float32))
    _encode_slots(np.ascontiguousarray(slot.numpy(), dtype=np.int64),
                  np.ascontiguousarray(delta.detach().numpy(), dtype=np.float64), raw_np,
                  lin.weight.detach().reshape(-1).numpy(), lin.bias.detach().numpy(), out)
    return torch.from_numpy(out)
