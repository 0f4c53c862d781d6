"""Evaluation metrics of GNN training: ranking metrics of link prediction (MRR, Hits@K,
recall@K), and macro-F1 of node classification.

Ranks follow the one rule of :mod:`graphsys.ranking` (:func:`~graphsys.ranking.ranks`: ties
count half, a NaN score ranks worst; :func:`~graphsys.ranking.auc` pools positives against
negatives under the same order), as OGB's link-prediction evaluators: a positive edge's score
is compared with the scores of its negatives (sampled, or every candidate), negatives that
are known true edges having been removed ("filtered"). Every function takes torch tensors or
NumPy arrays and returns plain Python floats. :func:`~graphsys.ranking.mrr` and
:func:`~graphsys.ranking.hits_at_k` are :mod:`graphsys.ranking`'s (NaN for no ranks).
"""

from __future__ import annotations

import numpy as np
import torch

from graphsys.errors import ParameterError
from graphsys.ranking import hits_at_k, mrr, rank_metrics

__all__ = ["group_positions", "hits_at_k", "macro_f1", "mrr", "rank_metrics",
           "ranking_metrics", "recall_at_k"]


def _np(x) -> np.ndarray:
    return x.detach().cpu().numpy() if torch.is_tensor(x) else np.asarray(x)


def group_positions(ranks, scores, groups) -> np.ndarray:
    """Each positive's position in the ranked list of its group (its query node), where
    the group's other positives compete with it too.

    ``position = rank + #(same-group positives scored higher) + #(same-group positives
    scored equal, itself excluded) / 2``, ``rank`` being its rank among its (filtered)
    negatives (:func:`graphsys.ranking.ranks`, which leaves the other positives out); a NaN
    score ranks worst, as there.

    Examples
    --------
    >>> from graphsys.gnn.metrics import group_positions
    >>> group_positions([1.0, 1.0, 3.0], [0.9, 0.8, 0.1], [7, 7, 8]).tolist()
    [1.0, 2.0, 3.0]
    """
    ranks, scores = _np(ranks).astype(np.float64), _np(scores).astype(np.float64)
    groups = _np(groups).astype(np.int64)
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
    positives at ``positions`` (from :func:`group_positions`) at most ``k``; then the mean
    over the groups (NaN for none, the rule of :func:`~graphsys.ranking.mrr`).

    Examples
    --------
    >>> from graphsys.gnn.metrics import recall_at_k
    >>> recall_at_k([1, 2, 5], [7, 7, 8], 2)              # group 7: 2/2, group 8: 0/1
    0.5
    """
    if int(k) < 1:
        raise ParameterError("k", f"must be >= 1, got {k}")
    pos = _np(positions)
    groups = _np(groups).astype(np.int64)
    if len(pos) == 0:
        return float("nan")
    _, g, counts = np.unique(groups, return_inverse=True, return_counts=True)
    hit = np.bincount(g, weights=(pos <= k).astype(np.float64), minlength=len(counts))
    return float((hit / counts).mean())


def macro_f1(pred, labels) -> float:
    """Macro-averaged F1 of class predictions: the unweighted mean over classes of
    ``2 TP / (2 TP + FP + FN)``, over the classes present in ``labels`` or ``pred`` (as
    scikit-learn's ``f1_score(average="macro")``); 0.0 for no predictions.

    Parameters
    ----------
    pred, labels : int array (N,)
        Predicted and true class of each node.

    Examples
    --------
    >>> from graphsys.gnn.metrics import macro_f1
    >>> round(macro_f1([0, 0, 1, 2], [0, 1, 1, 2]), 4)    # F1 per class 2/3, 2/3, 1
    0.7778
    """
    pred, labels = _np(pred).astype(np.int64).ravel(), _np(labels).astype(np.int64).ravel()
    if pred.shape != labels.shape:
        raise ParameterError("pred", f"has {len(pred)} entries, labels {len(labels)}")
    if len(pred) == 0:
        return 0.0
    classes, inv = np.unique(np.concatenate([labels, pred]), return_inverse=True)
    y, p = inv[:len(labels)], inv[len(labels):]
    c = len(classes)
    tp = np.bincount(y[y == p], minlength=c).astype(np.float64)
    fp = np.bincount(p, minlength=c) - tp
    fn = np.bincount(y, minlength=c) - tp
    return float((2 * tp / (2 * tp + fp + fn)).mean())


def ranking_metrics(ranks, positions, groups, ks) -> dict[str, float]:
    """``mrr``, ``hits@k`` and ``recall@k`` for each ``k`` in ``ks`` (see :func:`mrr`,
    :func:`hits_at_k`, :func:`recall_at_k`).

    Examples
    --------
    >>> from graphsys.gnn.metrics import ranking_metrics
    >>> ranking_metrics([1, 3], [1, 4], [0, 0], [1, 3])
    {'mrr': 0.6666666666666666, 'hits@1': 0.5, 'hits@3': 1.0, 'recall@1': 0.5, 'recall@3': 0.5}
    """
    out = rank_metrics(ranks, ks)
    out.update({f"recall@{k}": recall_at_k(positions, groups, k) for k in ks})
    return out
