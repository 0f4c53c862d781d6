"""Numba kernels of the degree summaries (:mod:`graphsys.measures.degrees`): per-batch
counts over a stream of edges, and reciprocated pairs over sorted rows."""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, nogil=True)
def count_batch(src, dst, out_deg, in_deg, loops):
    """Add one batch of edges ``src -> dst`` (global ids) to the out-, in- and self-loop
    counts (int64 (N,) each)."""
    for e in range(src.shape[0]):
        s = src[e]
        d = dst[e]
        out_deg[s] += 1
        in_deg[d] += 1
        if s == d:
            loops[s] += 1


@numba.njit(cache=True, nogil=True)
def centred_products(src, dst, dx, dy, mx, my):
    """``sum((dx[s] - mx) * (dy[d] - my))`` over one batch of edges."""
    total = 0.0
    for e in range(src.shape[0]):
        total += (dx[src[e]] - mx) * (dy[dst[e]] - my)
    return total


@numba.njit(parallel=True, cache=True, nogil=True)
def reciprocal_counts(optr, oidx, iptr, iidx, uniq_out, uniq_in, overlap, loop):
    """Per node ``u``: distinct successors, distinct predecessors, nodes that are both
    (``u`` itself included when it has a self-loop), and whether it has a self-loop; by a
    merge of its sorted out- and in-rows."""
    for u in numba.prange(optr.shape[0] - 1):
        a = optr[u]
        ae = optr[u + 1]
        b = iptr[u]
        be = iptr[u + 1]
        no = 0
        ni = 0
        both = 0
        lp = 0
        lo = np.int64(-1)
        li = np.int64(-1)
        while a < ae or b < be:
            if b >= be or (a < ae and oidx[a] < iidx[b]):
                x = np.int64(oidx[a])
                a += 1
                if x != lo:
                    no += 1
                    lo = x
                    if x == u:
                        lp = 1
            elif a >= ae or iidx[b] < oidx[a]:
                x = np.int64(iidx[b])
                b += 1
                if x != li:
                    ni += 1
                    li = x
            else:  # equal heads: in both rows
                x = np.int64(oidx[a])
                a += 1
                b += 1
                if x != lo:
                    no += 1
                    lo = x
                    if x == u:
                        lp = 1
                if x != li:
                    ni += 1
                    li = x
                    both += 1
        uniq_out[u] = no
        uniq_in[u] = ni
        overlap[u] = both
        loop[u] = lp
