"""The label propagation kernels of the backend's ``label_propagation_communities`` and
``asyn_lpa_communities`` (:mod:`graphsys.nx_backend.community`): NetworkX's
semi-synchronous loop, and its asynchronous loop with a Mersenne Twister
(MT19937) that draws as Python's ``random.Random`` draws. Imported on first call (they
import :mod:`graphsys.bsp`'s label counting)."""

from __future__ import annotations

import numba
import numpy as np

from graphsys.bsp.kernels_components import _count_labels


@numba.njit(cache=True)
def _frequent(u, indptr, indices, labels, count, touched):
    """Among ``u``'s neighbours' labels (a self-loop: its own once), those of highest
    frequency: (how many, the largest, whether ``u``'s own label is one). ``count`` is
    left all zero."""
    k = _count_labels(indptr, indices, u, labels, count, touched, 0)
    best, high, largest, own = 0, 0, -1, False
    for i in range(k):
        best = max(best, count[touched[i]])
    for i in range(k):
        c = touched[i]
        if count[c] == best:
            high += 1
            largest = max(largest, c)
            own = own or c == labels[u]
        count[c] = 0
    return high, largest, own


@numba.njit(cache=True)
def semi_synchronous(indptr, indices, order):
    """NetworkX's ``label_propagation_communities`` loop: every node its own label (its
    id); until each node with neighbours holds one of its most frequent neighbour labels,
    the nodes in ``order`` (by colour) take their most frequent neighbour label, on a tie
    keeping their own where it is one, else the largest (Prec-Max)."""
    n = indptr.shape[0] - 1
    labels = np.arange(n)
    count = np.zeros(n, np.int64)
    touched = np.empty(n, np.int64)
    while True:
        done = True
        for u in range(n):
            if indptr[u + 1] > indptr[u]:
                own = _frequent(u, indptr, indices, labels, count, touched)[2]
                if not own:
                    done = False
                    break
        if done:
            return labels
        for u in order:
            high, largest, own = _frequent(u, indptr, indices, labels, count, touched)
            if high == 1 or (high > 1 and not own):
                labels[u] = largest


#: Mersenne Twister MT19937's constants (the generator of Python's ``random.Random``)
MT_N, MT_M, MT_MATRIX = 624, 397, 0x9908B0DF


@numba.njit(cache=True)
def mt_uint32(mt, pos):
    """The next 32 random bits of the MT19937 state ``mt`` (624 words, int64) at
    ``pos[0]``, as CPython's ``genrand_uint32`` draws them (twisting the state first when
    it is used up)."""
    if pos[0] >= MT_N:
        for kk in range(MT_N):
            y = (mt[kk] & 0x80000000) | (mt[(kk + 1) % MT_N] & 0x7FFFFFFF)
            mt[kk] = mt[(kk + MT_M) % MT_N] ^ (y >> 1) ^ (MT_MATRIX if y & 1 else 0)
        pos[0] = 0
    y = mt[pos[0]]
    pos[0] += 1
    y ^= y >> 11
    y ^= (y << 7) & 0x9D2C5680
    y ^= (y << 15) & 0xEFC60000
    y ^= y >> 18
    return y


@numba.njit(cache=True)
def randbelow(n, mt, pos):
    """CPython's ``Random.randbelow(n)`` (n < 2**32): ``getrandbits(n.bit_length())``
    until it is below ``n``."""
    k = 0
    while (n >> k) > 0:
        k += 1
    r = mt_uint32(mt, pos) >> (32 - k)
    while r >= n:
        r = mt_uint32(mt, pos) >> (32 - k)
    return r


@numba.njit(cache=True)
def asynchronous(indptr, indices, w, mt, pos):
    """NetworkX's ``asyn_lpa_communities`` loop with ``random.Random``'s draws: rounds
    until no label changes, each over the nodes in ``G``'s order shuffled
    (``Random.shuffle``); a node with neighbours (``G[node]``, in ``indices``' order)
    sums its neighbours' labels' weights (``w``, empty: 1 each) and, unless its own
    label is one of the heaviest, takes ``Random.choice`` of them in first-seen order."""
    n = indptr.shape[0] - 1
    labels = np.arange(n)
    freq = np.zeros(n, np.float64)
    mark = np.full(n, -1, np.int64)
    touched = np.empty(n, np.int64)
    best = np.empty(n, np.int64)
    nodes = np.empty(n, np.int64)
    weighted = w.shape[0] > 0
    visit = 0
    changed = True
    while changed:
        changed = False
        for i in range(n):
            nodes[i] = i
        for i in range(n - 1, 0, -1):
            j = randbelow(i + 1, mt, pos)
            nodes[i], nodes[j] = nodes[j], nodes[i]
        for u in nodes:
            if indptr[u + 1] == indptr[u]:
                continue
            k = 0
            for e in range(indptr[u], indptr[u + 1]):
                c = labels[indices[e]]
                if mark[c] != visit:
                    mark[c] = visit
                    freq[c] = 0.0
                    touched[k] = c
                    k += 1
                freq[c] += w[e] if weighted else 1.0
            visit += 1
            top = freq[touched[0]]
            for i in range(1, k):
                top = max(top, freq[touched[i]])
            count, own = 0, False
            for i in range(k):
                if freq[touched[i]] == top:
                    best[count] = touched[i]
                    count += 1
                    own = own or touched[i] == labels[u]
            if not own:
                labels[u] = best[randbelow(count, mt, pos)]
                changed = True
    return labels
