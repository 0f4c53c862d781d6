"""Deprecated: re-exports :mod:`graphsys.ranking`'s metrics for one release."""

from __future__ import annotations

import warnings

from graphsys.ranking import group_positions, hits_at_k, macro_f1, mrr, rank_metrics, recall_at_k

__all__ = ["group_positions", "hits_at_k", "macro_f1", "mrr", "rank_metrics",
           "ranking_metrics", "recall_at_k"]

warnings.warn("graphsys.gnn.metrics is deprecated: import the metrics from graphsys.ranking",
              DeprecationWarning, stacklevel=2)


def ranking_metrics(ranks, positions, groups, ks) -> dict[str, float]:
    """Deprecated: ``graphsys.ranking``'s ``rank_metrics`` and ``recall_at_k``."""
    return {**rank_metrics(ranks, ks), **{f"recall@{k}": recall_at_k(positions, groups, k)
                                          for k in ks}}
