"""The metrics of every engine (link prediction, knowledge-graph completion,
recommendation, temporal links, node classification), written once, with one rank rule and
one rule for no input.

**Rank rule.** A positive's rank among its candidates (the negatives, or every other item;
filtered ones left out) is ``1 + #(scored above it) + #(scored equal) / 2``: the mean of the
optimistic and pessimistic rank, so a model scoring everything the same gets the middle
rank, never rank 1 (OGB's and TGB's evaluators, Sun et al. 2020). A NaN score ranks worst:
a NaN candidate never outranks or ties a positive, a NaN positive ranks last, so a
diverged model never looks perfect. :func:`protocol` names the candidates a rank was taken
among (``full``, ``sampled@N``; ``filtered`` or ``raw``; ``both sides``).

**No input: NaN.** A metric averaged over nothing (no ranks, no query with a positive, no
(positive, negative) pair for the AUC, no positive for the average precision, no class
for the F1) is NaN, never 0.0 nor an error: the mean of nothing is undefined (NumPy's
``mean`` of an empty array), while 0.0 would pass for a measured score. Records report
the count beside the metric (``count``, ``users``, ``inductive_events``). Functions that
answered 0.0 before warn (``DeprecationWarning``) when they now answer NaN.
"""

from __future__ import annotations

import warnings

import numpy as np
import torch

from graphsys.errors import ParameterError, check_count


def _tensor(x) -> torch.Tensor:
    """``x`` as a CPU tensor (a NumPy array or a CPU tensor is not copied; a read-only
    array, e.g. a broadcast row or a memory map, is only read)."""
    if torch.is_tensor(x):
        return x.detach().cpu()
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*not writable.*", category=UserWarning)
        return torch.as_tensor(np.asarray(x))


def _flat(x) -> np.ndarray:
    """``x`` flattened to float64 NumPy."""
    return _tensor(x).to(torch.float64).reshape(-1).numpy()


def _was(name: str) -> float:
    """NaN, the answer for no input, with a warning that ``name`` answered 0.0 before."""
    warnings.warn(f"{name} of no input is NaN now (it was 0.0)", DeprecationWarning, 3)
    return float("nan")


def ranks(pos, scores, valid=None) -> np.ndarray:
    """The rank of each positive among its candidates, ties counted half, NaN worst.

    Parameters
    ----------
    pos : array or tensor (P,)
        Score of each positive.
    scores : array or tensor (P, M)
        Scores of the candidates each positive competes with (row ``i`` for ``pos[i]``);
        the positive itself is not one of them (or is marked False in ``valid``).
    valid : bool array or tensor (P, M), optional
        Which candidates compete (False: filtered out, e.g. a known true edge or the
        positive's own column); default all.

    Returns
    -------
    numpy.ndarray
        float64 (P,): ``1 + #(valid candidates above) + #(valid candidates tied) / 2``; a
        NaN candidate is neither above nor tied, a NaN positive gets ``1 + #(valid
        candidates)``.

    Raises
    ------
    ParameterError
        ``scores`` not (P, M), or ``valid`` not of its shape.

    References
    ----------
    .. [1] W. Hu et al., "Open Graph Benchmark: Datasets for Machine Learning on Graphs",
       NeurIPS 2020 (the evaluators' optimistic/pessimistic mean rank).
    .. [2] Z. Sun et al., "A Re-evaluation of Knowledge Graph Completion Methods", ACL 2020
       (why ties must not rank first).

    Examples
    --------
    >>> from graphsys.ranking import ranks
    >>> ranks([0.5, 0.9], [[0.7, 0.1, 0.5], [0.95, 0.99, 0.1]],
    ...       [[True, True, True], [True, False, True]]).tolist()
    [2.5, 2.0]
    >>> ranks([1.0, 1.0], [[1.0, 1.0, 1.0], [float("nan"), 0.0, 2.0]]).tolist()
    [2.5, 2.0]
    >>> ranks([float("nan")], [[0.0, -float("inf"), float("nan")]]).tolist()   # last
    [4.0]
    """
    p, s = _tensor(pos), _tensor(scores)
    if s.dim() != 2 or p.dim() != 1 or s.shape[0] != p.shape[0]:
        raise ParameterError("scores", f"must have shape (P, M) with P = len(pos) = "
                                       f"{p.shape[0] if p.dim() == 1 else tuple(p.shape)}, "
                                       f"got {tuple(s.shape)}")
    v = None
    if valid is not None:
        v = _tensor(valid).to(torch.bool)
        if v.shape != s.shape:
            raise ParameterError("valid", f"must have the shape of scores {tuple(s.shape)}, "
                                          f"got {tuple(v.shape)}")
    p = p[:, None]
    # NaN compares false: a NaN candidate is never above nor tied, and a NaN positive has
    # every candidate above it. One (P, M) mask at a time is held beside the scores.
    above = (s > p) | p.isnan()
    if v is not None:
        above &= v
    out = 1.0 + above.sum(1, dtype=torch.float64)
    del above
    tied = s == p
    if v is not None:
        tied &= v
    return (out + 0.5 * tied.sum(1, dtype=torch.float64)).numpy()


def auc(pos, neg) -> float:
    """ROC AUC of positive against negative scores under the rank rule of this module: the
    share of (positive, negative) pairs whose positive scores above the negative, ties
    counted half (the Mann-Whitney U statistic over ``len(pos) * len(neg)``); a NaN
    negative is below every positive with a number, a NaN positive below every negative.

    Parameters
    ----------
    pos, neg : array or tensor
        Scores of the positives and of the negatives (flattened).

    Returns
    -------
    float
        In [0, 1]: 1.0 when every positive scores above every negative, 0.5 when all tie;
        NaN when ``pos`` or ``neg`` is empty (no pair).

    Examples
    --------
    >>> from graphsys.ranking import auc
    >>> auc([0.9, 0.4], [0.5, 0.1, 0.4])
    0.75
    >>> auc([float("nan")], [0.1, 0.2])              # a NaN positive is below them
    0.0
    >>> auc([], [0.1])
    nan
    """
    p, n = _flat(pos), _flat(neg)
    if len(p) == 0 or len(n) == 0:
        return float("nan")
    n_nan = int(np.isnan(n).sum())
    srt = np.sort(n[~np.isnan(n)])
    num = p[~np.isnan(p)]                    # a NaN positive is above no negative
    left = np.searchsorted(srt, num, "left")
    above = left.sum() + n_nan * len(num)    # NaN negatives are below every number
    tied = (np.searchsorted(srt, num, "right") - left).sum()
    return float((above + 0.5 * tied) / (len(p) * len(n)))


def protocol(negatives: int | None = None, *, filtered: bool = True,
             both_sides: bool = False) -> str:
    """The name of a ranking protocol, as every metrics record and command output states it
    beside ``mrr`` / ``hits@k`` (the same figure means different things under different
    protocols: full ranking is the hardest, 1,000 sampled negatives far easier).

    Parameters
    ----------
    negatives : int, optional
        Candidates per positive when sampled (``sampled@N``); None: every candidate
        (``full``).
    filtered : bool, default True
        Known true answers other than the positive are left out of the candidates
        (``filtered``), or kept (``raw``).
    both_sides : bool, default False
        A triple is ranked twice, its tail among the tails and its head among the heads
        (``both sides``, the knowledge-graph protocol); else one side only.

    Returns
    -------
    str
        e.g. ``"full, filtered, both sides"``, ``"sampled@1000, filtered"``.

    Examples
    --------
    >>> from graphsys.ranking import protocol
    >>> protocol(), protocol(1000), protocol(filtered=False, both_sides=True)
    ('full, filtered', 'sampled@1000, filtered', 'full, raw, both sides')
    """
    parts = ["full" if negatives is None else f"sampled@{check_count('negatives', negatives)}",
             "filtered" if filtered else "raw"]
    return ", ".join(parts + (["both sides"] if both_sides else []))


def _cut_off(k) -> int:
    """``k`` of a hits@K or recall@K: an integer >= 1 (1.5 counted a tie at rank 1.5 as a
    hit, True was read as 1, NaN or "3" raised raw errors); ParameterError otherwise."""
    return check_count("k", k)


def mrr(ranks) -> float:
    """Mean reciprocal rank: the mean of ``1 / rank`` (NaN for no ranks, this module's rule).

    Parameters
    ----------
    ranks : array or tensor
        Ranks (:func:`ranks`; >= 1), flattened.

    Returns
    -------
    float
        In (0, 1]; NaN for no ranks.

    Examples
    --------
    >>> from graphsys.ranking import mrr
    >>> mrr([1, 2, 4])
    0.5833333333333334
    >>> mrr([])
    nan
    """
    r = _flat(ranks)
    return float((1.0 / r).mean()) if len(r) else float("nan")


def hits_at_k(ranks, k: int) -> float:
    """Hits@K: the share of ranks at most ``k`` (NaN for no ranks, as :func:`mrr`).

    Parameters
    ----------
    ranks : array or tensor
        Ranks (:func:`ranks`), flattened.
    k : int
        The cut-off, >= 1.

    Returns
    -------
    float
        In [0, 1]; NaN for no ranks.

    Raises
    ------
    ParameterError
        ``k`` below 1.

    Examples
    --------
    >>> from graphsys.ranking import hits_at_k
    >>> hits_at_k([1, 2.5, 4], 3)
    0.6666666666666666
    """
    k = _cut_off(k)
    r = _flat(ranks)
    return float((r <= k).mean()) if len(r) else float("nan")


def mean_rank(ranks) -> float:
    """The mean rank (NaN for no ranks, as :func:`mrr`)."""
    r = _flat(ranks)
    return float(np.mean(r)) if len(r) else float("nan")


def rank_metrics(ranks, ks, *, mean: bool = False) -> dict[str, float]:
    """``mrr`` and ``hits@k`` for each ``k`` in ``ks`` (:func:`mrr`, :func:`hits_at_k`),
    and with ``mean`` the ``mean_rank`` (:func:`mean_rank`); each NaN for no ranks.

    Examples
    --------
    >>> from graphsys.ranking import rank_metrics
    >>> rank_metrics([1, 3], [1, 3])
    {'mrr': 0.6666666666666666, 'hits@1': 0.5, 'hits@3': 1.0}
    >>> rank_metrics([1, 3], [1], mean=True)
    {'mrr': 0.6666666666666666, 'hits@1': 0.5, 'mean_rank': 2.0}
    """
    out = {"mrr": mrr(ranks), **{f"hits@{k}": hits_at_k(ranks, k) for k in ks}}
    return {**out, "mean_rank": mean_rank(ranks)} if mean else out


def _ints(x) -> np.ndarray:
    return _tensor(x).reshape(-1).numpy().astype(np.int64)


def group_positions(ranks, scores, groups) -> np.ndarray:
    """Each positive's position in the ranked list of its group (its query node), where
    the group's other positives compete with it too.

    ``position = rank + #(same-group positives scored higher) + #(same-group positives
    scored equal, itself excluded) / 2``, ``rank`` being its rank among its (filtered)
    negatives (:func:`ranks`, which leaves the other positives out); a NaN score ranks
    worst, as there.

    Examples
    --------
    >>> from graphsys.ranking import group_positions
    >>> group_positions([1.0, 1.0, 3.0], [0.9, 0.8, 0.1], [7, 7, 8]).tolist()
    [1.0, 2.0, 3.0]
    """
    ranks, scores, groups = _flat(ranks), _flat(scores), _ints(groups)
    if not (len(ranks) == len(scores) == len(groups)):
        raise ParameterError("groups", "ranks, scores and groups must have one entry per "
                                       "positive")
    if len(ranks) == 0:
        return ranks
    # dense score ranks (NaN below every number), then a key per (group, score) that sorts
    # by group, then score
    nan = np.isnan(scores)
    _, dense = np.unique(np.where(nan, 0.0, scores), return_inverse=True)
    dense = np.where(nan, 0, dense.reshape(-1) + 1)
    span = int(dense.max()) + 2
    _, g = np.unique(groups, return_inverse=True)
    key = g * span + dense
    srt = np.sort(key)
    right = np.searchsorted(srt, key, "right")
    left = np.searchsorted(srt, key, "left")
    end = np.searchsorted(srt, g * span + span, "left")
    out = ranks + (end - right) + 0.5 * (right - left - 1)
    # a NaN positive ranks after every other positive of its group (NaN ones too)
    size = np.bincount(g)[g]
    return np.where(nan, ranks + size - 1, out)


def recall_at_k(positions, groups, k: int) -> float:
    """Recall@K averaged over groups (query nodes): for each group, the share of its
    positives at ``positions`` (:func:`group_positions`) at most ``k``; then the mean over
    the groups (NaN for none).

    Examples
    --------
    >>> from graphsys.ranking import recall_at_k
    >>> recall_at_k([1, 2, 5], [7, 7, 8], 2)              # group 7: 2/2, group 8: 0/1
    0.5
    """
    k = _cut_off(k)
    pos, groups = _flat(positions), _ints(groups)
    if len(pos) == 0:
        return float("nan")
    _, g, counts = np.unique(groups, return_inverse=True, return_counts=True)
    hit = np.bincount(g, weights=(pos <= k).astype(np.float64), minlength=len(counts))
    return float((hit / counts).mean())


def average_precision(pos, neg) -> float:
    """Average precision of positives against negatives: the area under the step-wise
    precision-recall curve over the distinct score thresholds (scikit-learn's
    ``average_precision_score``; tied scores enter at one threshold, infinite ones too);
    NaN scores enter together at a last threshold, below every number (this module's
    NaN-worst rule); NaN for no positive.

    Examples
    --------
    >>> from graphsys.ranking import average_precision
    >>> average_precision([3.0, 1.0], [2.0, 0.0])
    0.8333333333333333
    """
    pos, neg = _flat(pos), _flat(neg)
    if len(pos) == 0:
        return _was("average_precision")
    scores = np.concatenate([pos, neg])
    labels = np.concatenate([np.ones(len(pos)), np.zeros(len(neg))])
    nan = np.isnan(scores)
    order = np.lexsort((-np.where(nan, 0.0, scores), nan))   # descending, NaN last
    s, y, nan = scores[order], labels[order], nan[order]
    # a threshold ends where the score changes; tied infinities (whose difference is NaN)
    # and the NaN scores (one bottom threshold, below every number) stay together, so a
    # tie never puts its positives first (scores all NaN or all inf used to give 1.0)
    change = (s[1:] != s[:-1]) & ~(nan[1:] & nan[:-1])
    last = np.r_[np.flatnonzero(change), len(s) - 1]          # end of each threshold
    tp = np.cumsum(y)[last]
    precision = tp / (last + 1)
    recall = tp / len(pos)
    return float(np.sum(np.diff(np.r_[0.0, recall]) * precision))


def class_f1(tp, predicted, actual) -> float:
    """Macro F1 from per-class counts: the mean of ``2 TP / (predicted + actual)`` over
    the classes predicted or present (NaN for none); :func:`macro_f1` of the counts.

    Examples
    --------
    >>> from graphsys.ranking import class_f1
    >>> class_f1([1, 0, 0], [1, 0, 1], [1, 0, 1])        # class 1 absent from both
    0.5
    """
    tp, both = _flat(tp), _flat(predicted) + _flat(actual)
    seen = both > 0
    return float((2 * tp[seen] / both[seen]).mean()) if seen.any() else float("nan")


def macro_f1(pred, labels) -> float:
    """Macro-averaged F1 of class predictions: the unweighted mean over classes of
    ``2 TP / (2 TP + FP + FN)``, over the classes present in ``labels`` or ``pred`` (as
    scikit-learn's ``f1_score(average="macro")``); NaN for no predictions.

    Parameters
    ----------
    pred, labels : int array (N,)
        Predicted and true class of each node.

    Examples
    --------
    >>> from graphsys.ranking import macro_f1
    >>> round(macro_f1([0, 0, 1, 2], [0, 1, 1, 2]), 4)    # F1 per class 2/3, 2/3, 1
    0.7778
    """
    pred, labels = _ints(pred), _ints(labels)
    if pred.shape != labels.shape:
        raise ParameterError("pred", f"has {len(pred)} entries, labels {len(labels)}")
    if len(pred) == 0:
        return _was("macro_f1")
    classes, inv = np.unique(np.concatenate([labels, pred]), return_inverse=True)
    y, p = inv[:len(labels)], inv[len(labels):]
    c = len(classes)
    return class_f1(np.bincount(y[y == p], minlength=c), np.bincount(p, minlength=c),
                    np.bincount(y, minlength=c))
