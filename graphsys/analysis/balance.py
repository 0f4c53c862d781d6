"""Storage-level balance: partitions, buckets and the ranks of a distributed run.

Partition and bucket balance (max/mean) and the edge-cut come from
:func:`graphsys.storage.info.graph_info`; this module adds the coefficient of variation of
the same counts and the per-rank split the BSP engine uses under ``torch.distributed``
(rank ``r`` of ``W`` owns partitions ``[r P // W, (r+1) P // W)``, i.e. the global ids
``[offsets[r P // W], offsets[(r+1) P // W])``).

The static split (nodes and edges per rank) is what an all-active superstep costs each
rank. A frontier program's supersteps touch only the active vertices, so
:class:`RankWork` also charges every superstep's work items (the active vertices' edges, as
the SIMT model sees them) to the rank that owns them: a BSP superstep ends when its slowest
rank does, so the run's rank imbalance is ``sum over supersteps of the max rank's work /
sum of the mean rank's work``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from graphsys.errors import ParameterError


def cv(values) -> float:
    """Coefficient of variation (population std / mean) of ``values``; 0 when the mean is 0."""
    v = np.asarray(values, dtype=np.float64)
    return 0.0 if v.size == 0 or v.mean() <= 0 else float(v.std() / v.mean())


def max_over_mean(values) -> float:
    """max / mean of ``values``; 1.0 when the mean is 0 (nothing to balance)."""
    v = np.asarray(values, dtype=np.float64)
    return 1.0 if v.size == 0 or v.mean() <= 0 else float(v.max() / v.mean())


def rank_split(num_partitions: int, ranks: int) -> list[tuple[int, int]]:
    """Partition range ``[a, b)`` of every rank, as the BSP engine assigns them
    (:func:`graphsys.bsp.distributed.rank_split`); a :class:`ParameterError` naming
    ``ranks`` when it is not a positive integer or exceeds ``num_partitions``."""
    from graphsys.bsp.distributed import rank_split as split

    try:
        return [(s.start, s.stop) for s in split(num_partitions, ranks)]
    except ParameterError as exc:
        raise ParameterError("ranks", exc.message) from None


def storage_balance(graph, edge_set: str | None = None, ranks: int = 1) -> dict[str, Any]:
    """Partition/bucket balance of ``graph`` (an opened Graph) for ``edge_set``.

    Returns ``partitions`` (nodes and edges per partition: lists, max/mean, CV), ``buckets``
    (max/mean and CV over all P x P buckets, non-empty count), ``edge_cut`` (fraction, 0..1)
    and, with ``ranks`` > 1, ``ranks`` (nodes and edges per rank, max/mean, CV).
    """
    from graphsys.storage.info import edge_set_stats, graph_info

    info = graph_info(graph)
    e = edge_set_stats(graph, edge_set)
    etypes = info["entity_types"]
    nodes = np.sum([np.asarray(t["nodes_per_partition"], np.int64) for t in etypes.values()],
                   axis=0)
    edges = np.asarray(e["edges_per_partition"], np.int64)
    buckets = np.asarray(e["buckets"], np.int64)
    out: dict[str, Any] = {
        "num_partitions": info["num_partitions"],
        "partitioner": info["partitioner"].get("name"),
        "partitions": {
            "nodes": nodes.tolist(), "edges": edges.tolist(),
            "node_max_over_mean": min(t["node_balance"] for t in etypes.values())
            if len(etypes) == 1 else max_over_mean(nodes),
            "edge_max_over_mean": e["edge_balance"],
            "node_cv": cv(nodes), "edge_cv": cv(edges),
        },
        "buckets": {"max_over_mean": e["bucket_balance"], "cv": cv(buckets.ravel()),
                    "nonempty": e["nonempty_buckets"], "count": int(buckets.size)},
        "edge_cut": e["edge_cut"],
    }
    if ranks > 1:
        split = rank_split(graph.num_partitions, ranks)
        rn = [int(nodes[a:b].sum()) for a, b in split]
        re = [int(edges[a:b].sum()) for a, b in split]
        out["ranks"] = {"world_size": ranks, "partitions": [list(s) for s in split],
                        "nodes": rn, "edges": re, "edge_max_over_mean": max_over_mean(re),
                        "edge_cv": cv(re), "node_max_over_mean": max_over_mean(rn),
                        "node_cv": cv(rn)}
    return out


def rank_bounds(graph, ranks: int) -> np.ndarray:
    """Global id boundaries of the ranks of a distributed BSP run, int64 (W+1,): rank ``r``
    owns ids ``[b[r], b[r+1])`` (its partitions' nodes, as the engine assigns them)."""
    from graphsys.bsp.distributed import rank_bounds as bounds

    try:
        return np.asarray(bounds(graph.partition_offsets(), ranks), np.int64)
    except ParameterError as exc:
        raise ParameterError("ranks", exc.message) from None


def work_by_range(chunks: Callable[[], Any], bounds: np.ndarray) -> np.ndarray:
    """Sum of the selected degrees in every id range ``[bounds[r], bounds[r+1])``, int64
    (W,). ``chunks()`` yields ``(lo, d)``: int64 degrees ``d`` of ids ``lo ..
    lo + len(d) - 1`` with the unselected ones zeroed, ascending and contiguous."""
    out = np.zeros(len(bounds) - 1, np.int64)
    for lo, d in chunks():
        csum = np.concatenate([[0], np.cumsum(d, dtype=np.int64)])
        b = np.clip(bounds - lo, 0, len(d))
        out += csum[b[1:]] - csum[b[:-1]]
    return out


class RankWork:
    """Per-rank work of every superstep: ``add(work)`` with int64 (W,) edges scanned by the
    active vertices each rank owns; :meth:`result` the totals and imbalance figures."""

    def __init__(self, bounds: np.ndarray) -> None:
        self.bounds = np.asarray(bounds, np.int64)
        self.per_step: list[list[int]] = []

    def add(self, work: np.ndarray) -> None:
        self.per_step.append([int(x) for x in work])

    def result(self) -> dict[str, Any]:
        """``work`` (per rank, summed over supersteps), its ``max_over_mean`` and ``cv``,
        ``superstep_max_over_mean`` (sum over supersteps of the busiest rank's work / of the
        mean rank's work: the BSP slowdown against perfect balance, 1 = balanced), and
        ``per_step`` (per superstep, per rank)."""
        w = np.asarray(self.per_step, np.int64).reshape(-1, len(self.bounds) - 1)
        mean = float(w.mean(axis=1).sum()) if w.size else 0.0
        return {"work": w.sum(axis=0).tolist(), "max_over_mean": max_over_mean(w.sum(axis=0)),
                "cv": cv(w.sum(axis=0)),
                "superstep_max_over_mean": float(w.max(axis=1).sum()) / mean if mean > 0
                else 1.0,
                "per_step": self.per_step}
