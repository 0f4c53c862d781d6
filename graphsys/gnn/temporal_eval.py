"""Evaluation protocols of temporal link prediction, for any model that scores candidate
destinations ``(src, dst, t)`` of held-out events: TGB's (Huang et al. 2023), and the
inductive (new-node) subset of the held-out events (the guide: docs/growing.md).

TGB's protocol (``eval_protocol="tgb"``), as its ``NegativeEdgeGenerator`` (strategy
``hist_rnd``) and ``Evaluator`` define it: each held-out event ``(s, d, t)`` gets ``M``
negative destinations drawn once from a seed (:func:`tgb_negatives`) and saved with the
model; up to ``M // 2`` (``hist_ratio``) *historical* (destinations ``s`` sent to in
training, without replacement), the rest *random* from the other candidate destinations
(every node that is a destination of some event), with replacement when too few are left
(TGB's rule). Negatives are *filtered*: a true destination of the same source at the same
time in the same split is never one; a source whose every candidate is true leaves slots
empty (``-1``), which compete with nothing. Ranks, ``mrr`` and ``hits@k`` follow
:mod:`graphsys.ranking` (ties half, as TGB's mean of optimistic and pessimistic ranks).

Inductive metrics (either protocol): the held-out events whose source or destination is in
no training event, reported as ``inductive_mrr``, ``inductive_ap`` and their count
``inductive_events``. :func:`held_out_metrics` computes every figure from the scores.
"""

from __future__ import annotations

import numpy as np

from graphsys.errors import ParameterError, check_real
from graphsys.ranking import auc, average_precision, mrr, rank_metrics, ranks
from graphsys.sampling._util import seed_entropy

#: Share of TGB's negatives drawn from the source's training destinations.
HIST_RATIO = 0.5
#: The checkpoint's tensors of the saved TGB negatives: ``tgb_negatives.valid``, ``.test``.
NEGATIVES = "tgb_negatives."


def tgb_protocol(negatives: int) -> str:
    """The protocol name of :func:`held_out_metrics` under TGB's negatives.

    Examples
    --------
    >>> tgb_protocol(20)
    'tgb@20 (hist_rnd), filtered'
    """
    return f"tgb@{int(negatives)} (hist_rnd), filtered"


def _rows(keys: np.ndarray, values: np.ndarray):
    """Sorted unique ``keys`` and, for each, the sorted unique ``values`` under it as a CSR
    (``uniq, ptr, vals``)."""
    pairs = np.unique(np.stack([keys, values], axis=1), axis=0) if len(keys) else \
        np.zeros((0, 2), np.int64)
    uniq, start = np.unique(pairs[:, 0], return_index=True)
    return uniq, np.r_[start, len(pairs)], pairs[:, 1]


def _row(uniq, ptr, vals, key) -> np.ndarray:
    i = np.searchsorted(uniq, key)
    return vals[ptr[i]:ptr[i + 1]] if i < len(uniq) and uniq[i] == key else vals[:0]


def _member(values: np.ndarray, sorted_set: np.ndarray) -> np.ndarray:
    """bool: which ``values`` are in ``sorted_set`` (sorted; ``np.isin`` by binary search,
    without its set-up cost on the few entries of one query)."""
    if not len(sorted_set):
        return np.zeros(len(values), bool)
    pos = np.minimum(np.searchsorted(sorted_set, values), len(sorted_set) - 1)
    return sorted_set[pos] == values


def tgb_negatives(src, dst, time, train, held_out, negatives: int, seed: int, *,
                  pool=None, hist_ratio: float = HIST_RATIO) -> np.ndarray:
    """TGB's fixed negative destinations of the events under ``held_out`` (see the module
    docstring).

    Parameters
    ----------
    src, dst, time : array_like
        Every event's source, destination (int64 node ids) and time.
    train, held_out : bool array_like
        The training events (their destinations are the historical negatives) and the
        events that get negatives (one split: validation or test).
    negatives : int
        Negatives per event, ``>= 1``.
    seed : int
        The draw's seed, an integer in [-2**63, 2**64) (None, which drew fresh negatives
        every call, is refused): the same seed gives the same negatives.
    pool : array_like, optional
        The candidate destinations (default: every destination of an event).
    hist_ratio : float, optional
        Share of historical negatives (default 0.5, TGB's).

    Returns
    -------
    numpy.ndarray
        int64 (H, M), H the held-out events in their order; historical negatives first,
        ``-1`` for an empty slot.

    Examples
    --------
    Node 0 sent to 1 and 2 in training; its held-out event to 3 gets one historical
    negative (1 or 2) and one random one (4: 1, 2 are historical, 3 the true answer).

    >>> neg = tgb_negatives([0, 0, 0], [1, 2, 3], [1, 2, 3], [1, 1, 0], [0, 0, 1], 2, 0,
    ...                     pool=[1, 2, 3, 4])
    >>> neg.shape, int(neg[0, 0]) in (1, 2), int(neg[0, 1])
    ((1, 2), True, 4)
    """
    if isinstance(negatives, bool) or int(negatives) < 1:
        raise ParameterError("negatives", f"must be a count >= 1, got {negatives}")
    check_real("hist_ratio", hist_ratio, low=0, high=1)
    src, dst = np.asarray(src, np.int64), np.asarray(dst, np.int64)
    time, train, held = np.asarray(time), np.asarray(train, bool), np.asarray(held_out, bool)
    pool = np.unique(dst if pool is None else np.asarray(pool, np.int64))
    m, n_hist = int(negatives), int(int(negatives) * hist_ratio)
    seen = _rows(src[train], dst[train])
    hs, hd, ht = src[held], dst[held], time[held]
    # the true answers of each (source, time) query of the split
    _, query = np.unique(np.stack([hs, np.unique(ht, return_inverse=True)[1].reshape(-1)],
                                  axis=1), axis=0, return_inverse=True)
    answers = _rows(query.reshape(-1), hd)
    rng = np.random.default_rng(seed_entropy(seed))
    out = np.full((len(hs), m), -1, np.int64)
    for i in range(len(hs)):
        same = _row(*answers, query.reshape(-1)[i])
        old = _row(*seen, hs[i])
        hist = old[~_member(old, same)]
        k = min(n_hist, len(hist))
        if k:
            out[i, :k] = rng.choice(hist, k, replace=False)
        out[i, k:] = _random_part(rng, pool, np.sort(np.concatenate([same, old])), m - k)
    return out


def _random_part(rng, pool: np.ndarray, invalid: np.ndarray, size: int) -> np.ndarray:
    """``size`` distinct nodes of ``pool`` not in ``invalid`` (sorted), uniform (with
    replacement when fewer are left, ``-1`` for none)."""
    need = size + len(invalid)
    if need <= len(pool):
        # the first `size` valid nodes of a uniform draw of `need` distinct ones: at most
        # len(invalid) of them are invalid, and they are a uniform subset of the valid ones
        cand = pool[rng.choice(len(pool), need, replace=False)]
        return cand[~_member(cand, invalid)][:size]
    allowed = pool[~_member(pool, invalid)]
    if len(allowed) == 0:
        return np.full(size, -1, np.int64)
    return rng.choice(allowed, size, replace=len(allowed) < size)


def new_node_events(src, dst, train, held_out) -> np.ndarray:
    """bool (H,): which events under ``held_out`` have a source or destination that is in no
    training event (either end).

    Examples
    --------
    >>> new_node_events([0, 1, 0, 5], [1, 2, 2, 0], [1, 1, 0, 0], [0, 0, 1, 1]).tolist()
    [False, True]
    """
    src, dst = np.asarray(src, np.int64), np.asarray(dst, np.int64)
    train, held = np.asarray(train, bool), np.asarray(held_out, bool)
    known = np.union1d(src[train], dst[train])
    return ~(np.isin(src[held], known) & np.isin(dst[held], known))


def held_out_metrics(pos, neg, extra, ks, *, inductive=None) -> dict[str, float]:
    """Every figure of a held-out split from the scores of its events.

    Parameters
    ----------
    pos : array (H,)
        Each event's score.
    neg : array (H, M)
        The scores of its negative candidates; NaN marks an empty slot (TGB's ``-1``).
    extra : array (H,)
        The score of one more uniform negative per event: ``ap`` and ``auc`` (TGN's and
        PyG's random-negative protocol).
    ks : sequence of int
        The k of ``hits@k``.
    inductive : bool array (H,), optional
        The new-node events (:func:`new_node_events`): ``inductive_events``, and when
        there is one, ``inductive_mrr`` and ``inductive_ap``.

    Returns
    -------
    dict
        ``mrr``, ``hits@k``, ``ap``, ``auc`` (and the inductive figures).

    Examples
    --------
    >>> m = held_out_metrics(np.array([2.0, 1.0]), np.array([[1.0, np.nan], [1.0, 3.0]]),
    ...                      np.array([0.0, 0.0]), [1], inductive=np.array([False, True]))
    >>> m["mrr"], m["hits@1"], m["inductive_mrr"], m["inductive_events"]
    (0.7, 0.5, 0.4, 1)
    """
    pos, neg, extra = (np.asarray(x, np.float64) for x in (pos, neg, extra))
    rank = ranks(pos, neg, ~np.isnan(neg))
    out = rank_metrics(rank, ks)
    out["ap"], out["auc"] = average_precision(pos, extra), auc(pos, extra)
    if inductive is not None:
        new = np.asarray(inductive, bool)
        out["inductive_events"] = int(new.sum())
        if new.any():
            out["inductive_mrr"] = mrr(rank[new])
            out["inductive_ap"] = average_precision(pos[new], extra[new])
    return out
