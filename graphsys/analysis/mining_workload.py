"""The pattern-mining workload ``graphsys profile --workload mining`` measures
(:func:`profile_mining`): a triangle count, as ``graphsys mine triangles`` runs it, and how
its intersection work spreads over vertices and threads.

The profiled run is :func:`graphsys.mining.triangle_stats` itself (the orientation, the
in-lists where the middle-vertex kernel runs, the count; one step). After it, the work of
every vertex (:func:`graphsys.mining.triangle_work`: the entries the chosen kernel probes
on its behalf) tells the load-balance story the BSP profile tells for frontiers:

* ``per_vertex``: the spread of the work (max over mean, coefficient of variation, the
  share of the heaviest 1 % of vertices, the heaviest vertex's share);
* ``static_split``: per-thread work if the roots were cut into ``threads`` contiguous
  ranges of equal count (``prange``'s default static schedule), max over mean;
* ``task_split``: the kernel's own split, ranges of about equal work taken one at a time by
  the next free thread (:func:`graphsys.mining.parallel.tasks_by_work`, list scheduling in
  task order), max over mean; it cannot beat ``heaviest_share * threads`` when one vertex
  outweighs a thread's share.

The SIMT model is fed the per-vertex work as one kernel (a vertex-per-thread intersection
kernel on a GPU: its lanes idle while the heaviest vertex of their warp finishes).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from graphsys.analysis.kernels import StepMarker, profile_call
from graphsys.analysis.workloads import SimtRecorder, _chunks_of


def split_balance(work: np.ndarray, threads: int) -> dict[str, Any]:
    """The load-balance figures of per-vertex ``work`` (int64 (N,)) over ``threads``
    threads (see the module's notes)."""
    from graphsys.mining.parallel import TASKS_PER_THREAD, tasks_by_work

    work = np.asarray(work, np.int64)
    n, total = len(work), int(work.sum())
    threads = max(1, int(threads))
    if n == 0 or total == 0:
        return {"total": total, "per_vertex": {}, "static_split": {}, "task_split": {}}
    mean = total / n
    top = np.sort(work)[::-1]
    per_vertex = {"max": int(top[0]), "mean": mean,
                  "max_over_mean": float(top[0] / mean),
                  "cv": float(work.std() / mean),
                  "top_1pct_share": float(top[:max(1, n // 100)].sum() / total),
                  "heaviest_share": float(top[0] / total)}
    prefix = np.concatenate([[0], np.cumsum(work)])
    static = np.diff(prefix[np.linspace(0, n, threads + 1).astype(np.int64)])
    tasks = tasks_by_work(work, 0, n, TASKS_PER_THREAD * threads)
    loads = np.zeros(threads, np.int64)
    for w in np.diff(prefix[tasks]):  # the next task to the first free thread
        loads[int(np.argmin(loads))] += int(w)
    per_thread = total / threads
    return {"total": total, "per_vertex": per_vertex,
            "static_split": {"threads": threads, "work": static.tolist(),
                             "max_over_mean": float(static.max() / per_thread)},
            "task_split": {"threads": threads, "tasks": len(tasks) - 1,
                           "work": loads.tolist(),
                           "max_over_mean": float(loads.max() / per_thread),
                           "bound": float(max(1.0, per_vertex["heaviest_share"] * threads))}}


def profile_mining(graph, *, recorder: SimtRecorder, threads: int | None = None,
                   edge_set: str | None = None, trace=None) -> dict[str, Any]:
    """A triangle count (see the module docstring); ``trace`` as
    :func:`~graphsys.analysis.workloads.profile_bsp`."""
    import numba

    from graphsys import mining
    from graphsys.views import mapped_symmetric

    threads = numba.get_num_threads() if threads is None else threads  # 0: refused
    out: dict[str, Any] = {}

    def work(marker: StepMarker):
        marker.step()
        out["stats"] = mining.triangle_stats(graph, edge_set=edge_set, threads=threads)
        marker.finish()

    _, stats = profile_call(work, count_transfers=False, trace=trace)
    per_vertex, kernel = mining.triangle_work(graph, edge_set=edge_set)
    balance = split_balance(per_vertex.values, threads)
    stats.flops = float(balance["total"])
    recorder.step({"step": 0, "direction": "push", "active": graph.num_nodes()},
                  [_chunks_of(per_vertex.values, None)])
    source = "sym index" if mapped_symmetric(graph, edge_set) is not None else "buckets"
    tri = out["stats"]
    return {"stats": stats, "steps": 1, "flops": stats.flops,
            "workload": {"kind": "mining", "pattern": "triangles", "triangles": tri.count,
                         "transitivity": tri.transitivity, "kernel": kernel,
                         "threads": threads, "source": source, "device": "cpu",
                         "path": f"graphsys mine triangles: triangle_stats, counted from "
                                 f"the {kernel} vertex of each triangle, the undirected "
                                 f"view from the {source}",
                         "balance": balance,
                         "simt_source": "per-vertex intersection work (probes)"}}
