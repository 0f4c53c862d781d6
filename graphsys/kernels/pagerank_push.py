r"""PageRank after a change of edges by pushing residuals, in numba: the residual the
changed edges create (:func:`edge_change_residual`) and a forward push of it
(:func:`push`), as in incremental and dynamic PageRank (Ohsaka, Maehara and Kawarabayashi,
KDD 2015; Zhang, Lofgren and Goel, KDD 2016): Gauss-Southwell relaxation of the linear
system, applied only where the residual is.

Both work on the *unnormalised* rank equation

.. math::
    y = \alpha\, A^\top D^{-1} y + (1 - \alpha)\, q,
    \qquad r(y) = (1 - \alpha)\, q + \alpha\, A^\top D^{-1} y - y,

with :math:`q` the teleport weights (1 on every node for PageRank), :math:`D` the
(weighted) out-degrees and the mass of dangling nodes leaving the system. When dangling
mass is spread like the teleport (networkx's default), PageRank is :math:`y / \sum y`: the
two equations differ by a scalar on :math:`q`. So a new node only brings its own
:math:`(1 - \alpha) q_v` of residual, whatever the number of nodes, and no push is global.

Pushing node :math:`u` moves its residual into its value and :math:`\alpha r_u / d_u` along
each out-edge, so the L1 norm of the residual falls by at least :math:`(1 - \alpha)|r_u|`
(whatever the signs: removed edges give negative residual), and pushes only ever end.
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(inline="always")
def _weight(weights, e):
    return 1.0 if weights.shape[0] == 0 else weights[e]


@numba.njit(cache=True, nogil=True)
def edge_change_residual(indptr, indices, weights, y, inv_old, inv_new, changed, src, dst,
                         before, after, damping, r):
    """Add to ``r`` the change of the residual :math:`r(y)` when edges change.

    ``indptr``/``indices``/``weights`` are stored out-edges (CSR; ``weights`` empty:
    unweighted); ``inv_old``/``inv_new`` float64 (N,) the inverse (weighted) out-degree
    before and after the change (0 for a dangling node); ``changed`` int64 the nodes whose
    out-degree changed. ``src``/``dst`` list edges whose weight differs from the CSR's
    before or after the change, and ``before``/``after`` float64 what each adds to the
    CSR's weight of ``src -> dst`` then: an appended edge ``(0, w)``; a stored edge
    deleted by the change ``(0, -w)``, one deleted before it ``(-w, -w)``, one re-weighted
    from ``w`` to ``w'`` ``(0, w' - w)`` (so the CSR may hold the edges as first stored,
    and the graph before the change is the CSR plus ``before``). A node ``u`` sends
    ``y[u] * inv[u]`` per unit of weight: a node in ``changed`` sends ``y[u] * (inv_new[u]
    - inv_old[u])`` more along its CSR edges, and each listed edge ``y[u] * (inv_new[u] *
    after - inv_old[u] * before)`` more. The signs of the residual follow (removed
    weight: negative). Returns the L1 change added."""
    added = 0.0
    for k in range(changed.shape[0]):
        u = changed[k]
        f = damping * y[u] * (inv_new[u] - inv_old[u])
        if f == 0.0:
            continue
        for e in range(indptr[u], indptr[u + 1]):
            c = f * _weight(weights, e)
            r[indices[e]] += c
            added += abs(c)
    for k in range(src.shape[0]):
        u = src[k]
        c = damping * y[u] * (inv_new[u] * after[k] - inv_old[u] * before[k])
        r[dst[k]] += c
        added += abs(c)
    return added


@numba.njit(cache=True, nogil=True)
def _spread(indptr, indices, weights, u, c, r, touched, seen, count):
    """``r[v] += c * w(u, v)`` along ``u``'s out-edges in one CSR, listing every target
    not listed yet in ``touched``; returns the count listed."""
    for e in range(indptr[u], indptr[u + 1]):
        v = indices[e]
        r[v] += c * _weight(weights, e)
        if not seen[v]:
            seen[v] = True
            touched[count] = v
            count += 1
    return count


@numba.njit(cache=True, nogil=True)
def _deviation(r, q, mean, touched, count, uniform, big_q, size):
    """``||r - mean * q||_1`` for ``r`` zero outside ``touched[:count]`` (``size``:
    ``|mean| * sum(q)``)."""
    dev = 0.0
    held = 0.0
    for k in range(count):
        v = touched[k]
        qv = 1.0 if uniform else q[v]
        dev += abs(r[v] - mean * qv)
        held += qv
    return dev + size * max(0.0, 1.0 - held / big_q)


@numba.njit(cache=True, nogil=True)
def push(indptr, indices, weights, indptr2, indices2, weights2, inv_deg, damping, q, y, r,
         total, target, extra, max_work):
    """Push the residual ``r`` into ``y`` (both float64 (N,), updated in place) until
    ``||L(r)||_1 + extra < target * sum(y)``, with ``L(r) = r - sum(r) q / sum(q)``
    (``q``: the teleport weights, empty for 1 on every node; ``extra``: a residual known
    only by a bound, kept apart). ``L(r) / sum(y)`` is exactly the change the next
    power-iteration step would make to the normalised ranks ``y / sum(y)`` (see
    :mod:`graphsys.kernels.pagerank_push`), so they are then a PageRank iterate whose next
    step changes them by less than ``target`` in L1.

    The out-edges are two CSRs over the same nodes (a stored graph, and the edges added to
    it with the weight a change adds to its stored edges: negative for a deleted one; either
    may have no rows past its own); ``inv_deg`` the inverse (weighted) out-degree over
    both. Each round pushes, once each, the nodes whose ``|r|`` is at least the mean
    over the nodes with a residual (what they hold when their turn comes: Gauss-Southwell
    order by rounds), in id order within a round; the norm is then added up again exactly (where
    ``||r||_1 - |sum(r)|``, a lower bound of it, does not already say the push goes on).
    ``total`` is ``sum(y)`` on entry.

    The work counted is every edge a push scans and every node a round reads. The push
    stops unconverged once the work reaches ``max_work``, or where the rounds still to
    come would take it past ``max_work``: as many rounds as the norm needs to fall to
    the target at the rate ``damping`` a round (a round of pushes shrinks the residual of
    the nodes it pushes by that factor at least), each as much work as the last; and at
    once where ``extra`` is at least ``target`` times the most ``sum(y)`` can still reach
    (``sum(y) + ||r||_1 / (1 - damping)``; pushes of negative residuals lower the sum),
    a target no norm meets.

    Returns (rounds, pushes, work, ``||L(r)||_1``, sum of ``y``, converged): not
    converged when stopped by ``max_work`` (``y`` and ``r`` are then a consistent pair,
    the residual still to push)."""
    n = y.shape[0]
    touched = np.empty(n, np.int64)
    seen = np.zeros(n, np.bool_)
    queue = np.empty(n, np.int64)
    count = 0
    for v in range(n):
        if r[v] != 0.0:
            seen[v] = True
            touched[count] = v
            count += 1
    rounds = pushes = work = last = 0
    uniform = q.shape[0] == 0
    big_q = float(n) if uniform else q.sum()
    rate = np.log(1.0 / damping) if damping < 1.0 else 0.0
    while True:
        l1, s, top, count = _gather(r, touched, seen, count)
        work += count
        goal = target * total - extra
        norm = l1 + abs(s)  # an upper bound; exact below where it decides
        if target * (total + l1 / (1.0 - damping)) <= extra:
            # the target stays within ``extra`` even if every residual went into ``y``
            # (a residual r adds at most |r| / (1 - damping) to the sum): no push can meet
            # it, and one pushed to nothing would go on forever
            return rounds, pushes, work, norm, total, False
        if l1 - abs(s) < goal:
            norm = _deviation(r, q, s / big_q, touched, count, uniform, big_q, abs(s))
            work += count
            if norm < goal:
                return rounds, pushes, work, norm, total, True
        if work >= max_work or (rate > 0.0 and goal > 0.0 and norm > goal and work + (
                work - last) * np.log(norm / goal) / rate > max_work):
            return rounds, pushes, work, norm, total, False
        last = work
        theta = min(l1 / count, top)  # the mean, rounded, may exceed every value
        chosen = 0
        for k in range(count):
            v = touched[k]
            if abs(r[v]) >= theta:
                queue[chosen] = v
                chosen += 1
        work += count
        queue[:chosen].sort()  # in id order: neighbouring ids share cache lines
        for k in range(chosen):
            u = queue[k]
            ru = r[u]
            r[u] = 0.0
            y[u] += ru
            total += ru
            pushes += 1
            c = damping * ru * inv_deg[u]
            if c == 0.0:
                continue  # dangling: the mass leaves the unnormalised system
            count = _spread(indptr, indices, weights, u, c, r, touched, seen, count)
            count = _spread(indptr2, indices2, weights2, u, c, r, touched, seen, count)
            work += indptr[u + 1] - indptr[u] + indptr2[u + 1] - indptr2[u]
        rounds += 1


@numba.njit(cache=True, nogil=True, inline="always")
def _gather(r, touched, seen, count):
    """Drop the listed nodes whose residual is now 0 (rounds stay local); returns the L1
    norm, the sum and the largest ``|r|`` of the rest, and their count."""
    l1 = 0.0
    s = 0.0
    top = 0.0
    kept = 0
    for k in range(count):
        v = touched[k]
        if r[v] != 0.0:
            l1 += abs(r[v])
            s += r[v]
            top = max(top, abs(r[v]))
            touched[kept] = v
            kept += 1
        else:
            seen[v] = False
    return l1, s, top, kept


@numba.njit(cache=True, nogil=True)
def ball_sizes(indptr, indices, sources, depth, max_edges):
    """The nodes within ``h`` out-hops of ``sources`` (int64), for ``h = 0 .. depth``:
    int64 (depth + 1,), by a breadth-first search over the CSR that stops once it has read
    ``max_edges`` edges (the levels it did not reach are then -1): how fast a residual at
    ``sources`` could spread."""
    n = indptr.shape[0] - 1
    sizes = np.full(depth + 1, -1, np.int64)
    seen = np.zeros(n, np.bool_)
    queue = np.empty(n, np.int64)
    tail = 0
    for k in range(sources.shape[0]):
        if not seen[sources[k]]:
            seen[sources[k]] = True
            queue[tail] = sources[k]
            tail += 1
    sizes[0] = tail
    head = 0
    read = 0
    for h in range(1, depth + 1):
        end = tail
        while head < end:
            u = queue[head]
            head += 1
            read += indptr[u + 1] - indptr[u]
            if read > max_edges:
                return sizes
            for e in range(indptr[u], indptr[u + 1]):
                v = indices[e]
                if not seen[v]:
                    seen[v] = True
                    queue[tail] = v
                    tail += 1
        sizes[h] = tail
    return sizes
