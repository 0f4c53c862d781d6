#!/usr/bin/env python
"""Vector vertex programs (``width`` d) beside the scalar path and scipy.

On R-MAT (10M edges over 2^20 ids by default, as ``pagerank_bfs_wcc.py``; P = 4), numba
backend:

* PageRank as a width-1 vector program (:class:`~graphsys.bsp.algorithms.pagerank.
  PageRankRows`: (N, 1) rows through the ``*_rows`` kernels) beside the scalar PageRank, in
  memory and out of core: seconds per superstep, median over ``--iters`` timed supersteps
  (the first, with numba/page-in warm-up, excluded) and over ``--repeats`` interleaved runs;
  ``width1_vs_scalar`` = scalar s / width-1 s (1.0 = as fast);
* a width-``--dim`` sum propagation (X <- A^T X, all columns in one edge pass) in memory
  beside scipy's CSR ``A^T @ X`` (float64, prebuilt transpose): seconds per hop.

Usage::

    python benchmarks/bsp/vector_programs.py [--work DIR] [--edges M] [--iters N] [--dim D]
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root

import numpy as np
import torch

from benchmarks import harness
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


def timed_run(g, program, mode: str, iters: int):
    """A call running ``program(tol=1e-30)`` for ``iters`` timed supersteps; its median."""
    return lambda: per_superstep(bsp.run(g, program(tol=1e-30), mode=mode,
                                         max_iters=iters + 1))


def main(argv: list[str] | None = None) -> int:
    ap = harness.parser(__doc__)
    ap.add_argument("--work", type=Path, help="where the graph is built (kept for reuse)")
    ap.add_argument("--edges", type=harness.count, default=harness.count("10M"),
                    help="R-MAT edges (10M)")
    ap.add_argument("--nodes", type=harness.count, default=harness.count("1Mi"),
                    help="R-MAT id space (1Mi)")
    ap.add_argument("--iters", type=int, default=10, help="supersteps timed per run")
    ap.add_argument("--repeats", type=int, default=3, help="interleaved runs per variant")
    ap.add_argument("--dim", type=int, default=8, help="propagation width")
    args = ap.parse_args(argv)
    import numba
    import scipy.sparse as sp

    run = harness.Run("bsp/vector_programs", args.record)
    work = args.work or Path(tempfile.mkdtemp(prefix="bench-vector-"))
    work.mkdir(parents=True, exist_ok=True)
    graph_dir, _ = harness.rmat_graph(work, args.edges, args.nodes, partitions=4, seed=1,
                                      partition_seed=0)  # the graph of pagerank_bfs_wcc.py
    g = open_graph(graph_dir)
    n, m = g.num_nodes(), g.num_edges()
    report = {"numba_threads": numba.get_num_threads(), "graph": f"rmat-{args.edges:,}",
              "nodes": n, "edges": m}
    for mode in ("memory", "out-of-core"):
        turns = harness.alternate({
            "scalar": timed_run(g, bsp.PageRank, mode, args.iters),
            "width1": timed_run(g, PageRankRows, mode, args.iters)}, args.repeats)
        s, w = harness.median(turns["scalar"]), harness.median(turns["width1"])
        report[f"pagerank_{mode}"] = {"scalar_s_per_iter": s, "width1_s_per_iter": w,
                                      "width1_vs_scalar": s / w, "runs": turns}
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
    gs_hop = harness.median(hops)
    report["propagate"] = {"dim": args.dim, "scipy_s_per_hop": sp_hop,
                           "graphsys_memory_s_per_hop": gs_hop, "vs_scipy": sp_hop / gs_hop}
    if args.work is None:
        shutil.rmtree(work, ignore_errors=True)
    run.emit(**report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
