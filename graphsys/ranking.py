"""The one rank rule of every ranking metric (link prediction, knowledge-graph completion,
recommendation): ties count half, a NaN score ranks worst.

A positive competes with its candidates (the negatives, or every other item; filtered ones
left out). Its rank is ``1 + #(candidates scored above it) + #(candidates scored equal) / 2``:
the mean of the optimistic and the pessimistic rank, so a tie neither helps nor hurts, and a
model that scores everything the same gets the middle rank, never rank 1 (OGB's evaluators,
Sun et al. 2020 on KG evaluation protocols). A NaN score ranks worst: a NaN candidate is
below every number (``-inf`` included) and never outranks or ties a positive, and a NaN
positive ranks last, after every candidate (NaN ones included), so a diverged model never
looks perfect. :func:`auc` pools positives against negatives under the same rule, and
:func:`protocol` names the candidates a rank was taken among (``full``, ``sampled@N``;
``filtered`` or ``raw``; ``both sides``), which every metrics record states.
:func:`mrr`, :func:`hits_at_k` and :func:`rank_metrics` summarise ranks for every engine,
with one rule for no ranks: NaN.
"""

from __future__ import annotations

import warnings

import numpy as np
import torch

from graphsys.errors import ParameterError


def _tensor(x) -> torch.Tensor:
    """``x`` as a CPU tensor (a NumPy array or a CPU tensor is not copied; a read-only
    array, e.g. a broadcast row or a memory map, is only read)."""
    if torch.is_tensor(x):
        return x.detach().cpu()
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*not writable.*", category=UserWarning)
        return torch.as_tensor(np.asarray(x))


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
        Scores of the positives and of the negatives (flattened; both non-empty).

    Returns
    -------
    float
        In [0, 1]: 1.0 when every positive scores above every negative, 0.5 when all tie.

    Raises
    ------
    ParameterError
        ``pos`` or ``neg`` empty.

    Examples
    --------
    >>> from graphsys.ranking import auc
    >>> auc([0.9, 0.4], [0.5, 0.1, 0.4])
    0.75
    >>> auc([float("nan")], [0.1, 0.2])              # a NaN positive is below them
    0.0
    """
    p = _tensor(pos).to(torch.float64).reshape(-1).numpy()
    n = _tensor(neg).to(torch.float64).reshape(-1).numpy()
    if len(p) == 0 or len(n) == 0:
        raise ParameterError("pos", "and neg must both be non-empty for an AUC")
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
    if negatives is not None and (isinstance(negatives, bool) or int(negatives) < 1):
        raise ParameterError("negatives", f"must be a positive count or None (every "
                                          f"candidate), got {negatives!r}")
    parts = ["full" if negatives is None else f"sampled@{int(negatives)}",
             "filtered" if filtered else "raw"]
    return ", ".join(parts + (["both sides"] if both_sides else []))


def _ranks_array(ranks) -> np.ndarray:
    return _tensor(ranks).to(torch.float64).reshape(-1).numpy()


def mrr(ranks) -> float:
    """Mean reciprocal rank: the mean of ``1 / rank``.

    No ranks give NaN, not 0.0: the mean of nothing is undefined, as NumPy's and torch's
    ``mean`` of an empty array say (and so OGB's evaluators, whose per-positive
    reciprocal ranks a caller averages, and PyTorch-BigGraph's averaged ranks); 0.0 would
    read as a measured score, that of a model ranking every positive last, and an empty
    evaluation split would pass for one.

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
    r = _ranks_array(ranks)
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
    if int(k) < 1:
        raise ParameterError("k", f"must be >= 1, got {k}")
    r = _ranks_array(ranks)
    return float((r <= k).mean()) if len(r) else float("nan")


def rank_metrics(ranks, ks) -> dict[str, float]:
    """``mrr`` and ``hits@k`` for each ``k`` in ``ks`` (:func:`mrr`, :func:`hits_at_k`).

    Examples
    --------
    >>> from graphsys.ranking import rank_metrics
    >>> rank_metrics([1, 3], [1, 3])
    {'mrr': 0.6666666666666666, 'hits@1': 0.5, 'hits@3': 1.0}
    """
    return {"mrr": mrr(ranks), **{f"hits@{k}": hits_at_k(ranks, k) for k in ks}}
