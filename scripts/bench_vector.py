#!/usr/bin/env python
"""Benchmark vector vertex programs (``width`` d) against the scalar paths; one JSON line.

On R-MAT (10M edges over 2^20 ids by default, as ``bench_bsp.py``; P = 4), numba backend:

* PageRank as a width-1 vector program (:class:`~graphsys.bsp.algorithms.pagerank.
  PageRankRows`: (N, 1) rows through the ``*_rows`` kernels) beside the scalar PageRank, in
  memory and out of core: seconds per superstep, median over ``--iters`` timed supersteps
  (the first, with numba/page-in warm-up, excluded) and over ``--repeats`` interleaved runs;
  ``width1_vs_scalar`` = scalar s / width-1 s (1.0 = as fast);
* a width-``--dim`` sum propagation (X <- A^T X, all columns in one edge pass) in memory
  beside scipy's CSR ``A^T @ X`` (float64, prebuilt transpose): seconds per hop.

Usage: ``python scripts/bench_vector.py [--work DIR] [--edges M] [--iters N] [--dim D]``.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import resource
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from bench_bsp import build_rmat  # scripts/ is on sys.path when run as a script
from render_results import add_record_argument, emit

from graphsys import bsp, open_graph
from graphsys.bsp.algorithms.pagerank import PageRankRows


class SumHops(bsp.VertexProgram):
    """X <- A^T X over (N, d) rows (copy messages, sum combiner) every superstep."""

    name, message, combiner = "sum-hops", "copy", "sum"

    def __init__(self, dim: int):
        self.width = dim

    def init(self, ctx):
        x = torch.from_numpy(np.random.default_rng(0).random((ctx.num_local, self.width)))
        return {"x": x}, torch.ones(ctx.num_local, dtype=torch.bool)

    def send(self, ctx, state):
        return state["x"]

    def update(self, ctx, state, combined, received):
        state["x"] = combined
        return torch.ones_like(received), {}

    def result(self, ctx, state):
        return state["x"]


def per_superstep(res) -> float:
    """Median seconds of a run's supersteps after the first."""
    return float(np.median([s.total_seconds for s in res.stats.supersteps[1:]]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", type=Path, help="where the graph is built (kept for reuse)")
    ap.add_argument("--edges", type=int, default=10_000_000, help="R-MAT edges (10M)")
    ap.add_argument("--iters", type=int, default=10, help="supersteps timed per run")
    ap.add_argument("--repeats", type=int, default=3, help="interleaved runs per variant")
    ap.add_argument("--dim", type=int, default=8, help="propagation width")
    add_record_argument(ap)
    args = ap.parse_args()
    import numba
    import scipy.sparse as sp

    work = args.work or Path(tempfile.mkdtemp(prefix="bench-vector-"))
    work.mkdir(parents=True, exist_ok=True)
    report = {"date": datetime.datetime.now(datetime.UTC).isoformat(timespec="minutes"),
              "machine": platform.machine(), "cpus": os.cpu_count(),
              "numba_threads": numba.get_num_threads(), "loadavg_start": os.getloadavg()}
    graph_dir, _ = build_rmat(work, args.edges, 1 << 20, partitions=4)
    g = open_graph(graph_dir)
    n, m = g.num_nodes(), g.num_edges()
    report.update(graph=f"rmat-{args.edges // 1_000_000}M", nodes=n, edges=m)
    for mode in ("memory", "out-of-core"):
        times = {"scalar": [], "width1": []}
        for _ in range(args.repeats):
            for name, prog in (("scalar", bsp.PageRank(tol=1e-30)),
                               ("width1", PageRankRows(tol=1e-30))):
                res = bsp.run(g, prog, mode=mode, max_iters=args.iters + 1)
                times[name].append(per_superstep(res))
        s, w = float(np.median(times["scalar"])), float(np.median(times["width1"]))
        report[f"pagerank_{mode}"] = {"scalar_s_per_iter": s, "width1_s_per_iter": w,
                                      "width1_vs_scalar": s / w, "runs": times}
    c = g.csr(weights=False)
    at = sp.csr_matrix((np.ones(m), c.indices, c.indptr), shape=(n, n)).T.tocsr()
    del c
    x = np.random.default_rng(0).random((n, args.dim))
    at @ x  # warm
    t = time.perf_counter()
    for _ in range(args.iters):
        x = at @ x
    sp_hop = (time.perf_counter() - t) / args.iters
    del at, x
    hops = [per_superstep(bsp.run(g, SumHops(args.dim), max_iters=args.iters + 1))
            for _ in range(args.repeats)]
    gs_hop = float(np.median(hops))
    report["propagate"] = {"dim": args.dim, "scipy_s_per_hop": sp_hop,
                           "graphsys_memory_s_per_hop": gs_hop, "vs_scipy": sp_hop / gs_hop}
    report["loadavg_end"] = os.getloadavg()
    report["peak_rss_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    emit(report, args.record)
    if args.work is None:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
