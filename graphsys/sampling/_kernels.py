"""Numba kernels of the samplers: counter-based RNG, random walks, neighbour picks, relabeling.

Every kernel is compiled twice from the same Python function: a ``parallel=True`` version
(``prange`` over seeds, for one caller using all cores) and a serial ``nogil=True`` version
(for several sampling worker threads running side by side). Random numbers come from a
counter-based generator keyed by ``(rng_seed, node id)``: a node's picks (or walks) depend
only on ``rng_seed`` (the samplers derive it per batch and layer) and the node, never on
which other nodes share its batch, its position there, the rank of a data-parallel run
that sampled it, the thread count, the worker that ran the batch, or the compiled variant.
So a global batch split between ranks samples every node as the whole batch would.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from graphsys.prefetch import prefetch_read

#: Seeds ahead of the current one whose CSR offsets a pick loop prefetches (their rows'
#: first entries half as far ahead): the rows of a large graph's random seeds are each a
#: cache miss, overlapped this way instead of taken one after another
PICK_AHEAD = 16

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31, _S11 = np.uint64(30), np.uint64(27), np.uint64(31), np.uint64(11)
_INV53 = 1.0 / 9007199254740992.0  # 2**-53


def _mix(z):
    """SplitMix64 finaliser: uint64 -> uint64."""
    z = (z ^ (z >> _S30)) * _M1
    z = (z ^ (z >> _S27)) * _M2
    return z ^ (z >> _S31)


#: The SplitMix64 finaliser compiled for other kernels (inlined): a counter-based hash that
#: turns distinct uint64 counters into independent-looking uint64 random words.
splitmix64 = njit(inline="always", cache=True)(_mix)


def _stream(rng_seed, node):
    """Initial state of the random stream of node id ``node`` (both int64)."""
    return splitmix64(np.uint64(rng_seed) * _GOLDEN ^ splitmix64(np.uint64(node) + _GOLDEN))


def _uniform(state):
    """Advance ``state``; return (new state, float64 uniform in [0, 1))."""
    state = state + _GOLDEN
    return state, float(splitmix64(state) >> _S11) * _INV53


_stream_j = njit(inline="always", cache=True)(_stream)
_uniform_j = njit(inline="always", cache=True)(_uniform)


# -- PinSage random walks ------------------------------------------------------------------------

#: Walks of one seed advanced together (memory-level parallelism; see ``_walk_topk``).
_LANES = 32


def _hop_lanes(indptr, indices, cur, lo, deg, live, n_live, state):
    """One hop of the lanes ``live[:n_live]`` over a CSR (``indptr``, ``indices``): each lane
    moves ``cur[lane]`` to a uniform neighbour (random numbers in lane order); lanes at a
    node without neighbours stop. Two passes, each one independent load per lane (``lo`` and
    ``deg`` are the lanes' scratch rows). Returns ``(lanes still live, compacted to the
    front of live, state)``."""
    for q in range(n_live):
        ln = live[q]
        lo[ln] = indptr[cur[ln]]
        deg[ln] = indptr[cur[ln] + 1] - lo[ln]
    j = 0
    for q in range(n_live):
        ln = live[q]
        if deg[ln] > 0:
            state, u = _uniform_j(state)
            cur[ln] = indices[lo[ln] + int(u * deg[ln])]
            live[j] = ln
            j += 1
    return j, state


_hop_lanes_j = njit(inline="always", cache=True)(_hop_lanes)


def _walk_topk(fw_indptr, fw_indices, bw_indptr, bw_indices, seeds, num_traversals,
               termination_prob, num_random_walks, num_neighbors, rng_seed, key_base, counts,
               out_nodes, out_counts, out_num):
    """For each seed ``i``: ``num_random_walks`` walks of up to ``num_traversals`` meta-path
    hops (fw then bw), stopping before every hop after the first with ``termination_prob``
    or at a node without neighbours; the ``num_neighbors`` most visited end-of-hop nodes
    (ties: smaller id first) go to ``out_nodes[i, :out_num[i]]`` with their visit counts.

    ``counts`` is an int32 (C, N) zero array: row ``c`` is the visit counter of chunk ``c``
    of the seeds (C chunks run in parallel); it is left zeroed.

    The walks of a seed advance in lockstep, ``_LANES`` at a time: each pass over the live
    lanes makes one independent memory load per lane (``indptr`` rows, then ``indices``
    picks), so the core keeps up to ``_LANES`` cache misses in flight instead of one
    pointer chase, which raises the walk rate on graphs much larger than the caches.
    Random numbers are drawn from the seed's stream (keyed by ``seeds[i] - key_base``,
    the node's type-local id) in lane order at every step.
    """
    n_seeds = seeds.shape[0]
    n_chunks = counts.shape[0]
    cap = num_random_walks * num_traversals
    k = num_neighbors
    for c in prange(n_chunks):
        cnt = counts[c]
        touched = np.empty(cap, np.int64)
        top_n = np.empty(k, np.int64)
        top_c = np.empty(k, np.int64)
        cur = np.empty(_LANES, np.int64)
        lo = np.empty(_LANES, np.int64)
        deg = np.empty(_LANES, np.int64)
        live = np.empty(_LANES, np.int64)     # positions of the lanes still walking
        for i in range(c * n_seeds // n_chunks, (c + 1) * n_seeds // n_chunks):
            s = seeds[i]
            state = _stream_j(rng_seed, s - key_base)
            m = 0
            for w0 in range(0, num_random_walks, _LANES):
                nl = min(_LANES, num_random_walks - w0)
                for ln in range(nl):
                    cur[ln] = s
                    live[ln] = ln
                n_live = nl
                for t in range(num_traversals):
                    if t > 0:
                        j = 0
                        for q in range(n_live):
                            state, u = _uniform_j(state)
                            if u >= termination_prob:
                                live[j] = live[q]
                                j += 1
                        n_live = j
                    n_live, state = _hop_lanes_j(fw_indptr, fw_indices, cur, lo, deg, live,
                                                 n_live, state)
                    n_live, state = _hop_lanes_j(bw_indptr, bw_indices, cur, lo, deg, live,
                                                 n_live, state)
                    for q in range(n_live):  # count the end-of-hop nodes
                        v = cur[live[q]]
                        if cnt[v] == 0:
                            touched[m] = v
                            m += 1
                        cnt[v] += 1
                    if n_live == 0:
                        break
            # top-k by (count desc, id asc): insertion into a sorted buffer
            size = 0
            for j in range(m):
                v = touched[j]
                cv = np.int64(cnt[v])
                cnt[v] = 0
                if size == k:
                    lc = top_c[k - 1]
                    if cv < lc or (cv == lc and v > top_n[k - 1]):
                        continue
                    pos = k - 1
                else:
                    pos = size
                    size += 1
                while pos > 0 and (top_c[pos - 1] < cv or (top_c[pos - 1] == cv
                                                            and top_n[pos - 1] > v)):
                    top_c[pos] = top_c[pos - 1]
                    top_n[pos] = top_n[pos - 1]
                    pos -= 1
                top_c[pos] = cv
                top_n[pos] = v
            for j in range(size):
                out_nodes[i, j] = top_n[j]
                out_counts[i, j] = top_c[j]
            out_num[i] = size


walk_topk_par = njit(parallel=True, cache=True)(_walk_topk)
walk_topk_ser = njit(nogil=True, cache=True)(_walk_topk)


# -- uniform neighbour sampling --------------------------------------------------------------------

def _count_picks(indptr, seeds, fanout, replace, out):
    n = seeds.shape[0]
    for i in prange(n):
        if i + PICK_AHEAD < n:
            prefetch_read(indptr, seeds[i + PICK_AHEAD])
        deg = indptr[seeds[i] + 1] - indptr[seeds[i]]
        if fanout < 0:
            out[i] = deg
        elif replace:
            out[i] = fanout if deg > 0 else 0
        else:
            out[i] = min(deg, fanout)


def _fill_picks(indptr, indices, seeds, fanout, replace, rng_seed, offsets, out_nbr, out_eid):
    """Write the picked neighbours of seed ``i`` to ``out_nbr[offsets[i]:offsets[i+1]]`` and
    their CSR positions to ``out_eid``. Without replacement: Floyd's algorithm (uniform
    subset of size ``fanout``; a seed with at most ``fanout`` neighbours keeps them all, in
    CSR order). Seed ``i`` draws from the stream of its node id ``seeds[i]``."""
    n = seeds.shape[0]
    for i in prange(n):
        if i + PICK_AHEAD < n:
            prefetch_read(indptr, seeds[i + PICK_AHEAD])
            ahead = seeds[i + PICK_AHEAD // 2]
            prefetch_read(indices, indptr[ahead])
        lo = indptr[seeds[i]]
        deg = indptr[seeds[i] + 1] - lo
        start = offsets[i]
        k = offsets[i + 1] - start
        if k == 0:
            continue
        if fanout < 0 or (not replace and deg <= fanout):
            for j in range(deg):
                out_eid[start + j] = lo + j
                out_nbr[start + j] = indices[lo + j]
            continue
        state = _stream_j(rng_seed, seeds[i])
        if replace:
            for j in range(k):
                state, u = _uniform_j(state)
                e = lo + int(u * deg)
                out_eid[start + j] = e
                out_nbr[start + j] = indices[e]
            continue
        chosen = out_eid[start:start + k]
        c = 0
        for t in range(deg - k, deg):
            state, u = _uniform_j(state)
            r = int(u * (t + 1))
            dup = False
            for q in range(c):  # no early exit: the scan vectorises
                dup |= chosen[q] == r
            chosen[c] = t if dup else r
            c += 1
        for j in range(k):
            chosen[j] += lo
            out_nbr[start + j] = indices[chosen[j]]


count_picks_par = njit(parallel=True, cache=True)(_count_picks)
count_picks_ser = njit(nogil=True, cache=True)(_count_picks)
fill_picks_par = njit(parallel=True, cache=True)(_fill_picks)
fill_picks_ser = njit(nogil=True, cache=True)(_fill_picks)


# -- relabeling -----------------------------------------------------------------------------------

@njit(nogil=True, cache=True)
def relabel(dst_nodes, src_candidates, scratch):
    """Block-local numbering: ``dst_nodes`` (unique) become ``0..n_dst-1``, then each new
    node of ``src_candidates`` the next number in order of first appearance.

    ``scratch`` is an int32 array over all node ids holding -1; it is restored before
    returning. Returns (src_nodes int64 (n_src,), local int64 (len(src_candidates),)).
    """
    n_dst = dst_nodes.shape[0]
    src_nodes = np.empty(n_dst + src_candidates.shape[0], np.int64)
    for k in range(n_dst):
        scratch[dst_nodes[k]] = np.int32(k)
        src_nodes[k] = dst_nodes[k]
    n = n_dst
    local = np.empty(src_candidates.shape[0], np.int64)
    for k in range(src_candidates.shape[0]):
        v = src_candidates[k]
        j = scratch[v]
        if j < 0:
            j = n
            scratch[v] = np.int32(n)
            src_nodes[n] = v
            n += 1
        local[k] = j
    for k in range(n):
        scratch[src_nodes[k]] = -1
    return src_nodes[:n], local


@njit(nogil=True, cache=True)
def has_duplicates(nodes, scratch):
    """True if the int64 ids ``nodes`` repeat; ``scratch`` as in :func:`relabel`."""
    dup = False
    k = 0
    for k in range(nodes.shape[0]):
        if scratch[nodes[k]] >= 0:
            dup = True
            break
        scratch[nodes[k]] = 1
    for j in range(nodes.shape[0]):
        scratch[nodes[j]] = -1
    return dup
