#!/usr/bin/env python
"""PageRank after a small append: the delta push from the result before it
(``init=``, :mod:`graphsys.bsp.incremental_pagerank`) beside a run from scratch, for each
``--appends`` share (0.1 % and 1 %).

The graph: ``--edges`` (2M) seeded R-MAT edges over ``--nodes`` (2**18) ids
(:func:`graphsys.generators.rmat_edges`, Graph500's a, b, c), ingested; PageRank to
``--tol`` is run on it and written as a Parquet result, and its CSR index stored
(``graphsys index --csr``, which the delta push maps). For each share a copy of the graph
gets that many more edges of the same R-MAT stream as edge set ``day2``; on it, in
alternated turns (``--turns``, medians quoted), in process, each call opening the graph
afresh: **scratch** ``bsp.pagerank(g, tol=)`` and **delta** the same call with ``init=``
the result from before (reading it is part of the time). Figures: seconds of each side,
``ratio`` scratch / delta, how the delta run started (``stats.start``; above
:data:`~graphsys.bsp.incremental_pagerank.DELTA_MAX_FRACTION` it takes the warm start), its
residual bound, the L1 difference of the two rank vectors and the load average. Usage::

    NUMBA_NUM_THREADS=2 python benchmarks/bsp/incremental_pagerank.py --work DIR
        [--edges 20M --nodes 2M] [--appends 0.001,0.01] [--turns 3]
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root

import numpy as np

from benchmarks import harness
from benchmarks.bsp.incremental import _split
from graphsys.openmp import apply_wait_policy

apply_wait_policy()


def main(argv: list[str] | None = None) -> int:
    ap = harness.parser(__doc__)
    ap.add_argument("--work", type=Path, default=Path("/tmp/bench-incremental-pagerank"))
    ap.add_argument("--edges", type=harness.count, default=2_000_000)
    ap.add_argument("--nodes", type=harness.count, default=1 << 18)
    ap.add_argument("--appends", default="0.001,0.01", help="shares of --edges, comma-separated")
    ap.add_argument("--tol", type=float, default=1e-6)
    ap.add_argument("--turns", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)

    import pyarrow.parquet as pq

    import graphsys
    from graphsys import bsp
    from graphsys.generators import rmat_edges, write_edges
    from graphsys.storage.adjacency_index import build_index

    run = harness.Run("bsp/incremental_pagerank", args.record)
    work = args.work
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    shares = [float(s) for s in args.appends.split(",")]
    most = int(round(args.edges * max(shares)))
    first, rest = _split(rmat_edges(args.nodes, args.edges + most, seed=args.seed), args.edges)
    write_edges(first, work / "day1.parquet", overwrite=True)
    rest = {k: np.concatenate([c[k] for c in rest]) for k in ("src", "dst")}
    g = graphsys.ingest(work / "day1.parquet", work / "base", seed=args.seed)
    build_index(g, ("csr",))  # the delta push maps the previous edges' CSR (no build)
    prev = work / "pagerank-before.parquet"
    pq.write_table(bsp.pagerank(g, tol=args.tol).to_table(), prev)
    rows = {}
    for share in shares:
        added = int(round(args.edges * share))
        graph = work / f"g-{share:g}"
        shutil.copytree(work / "base", graph)
        write_edges([{k: v[:added] for k, v in rest.items()}], work / "day2.parquet",
                    overwrite=True)
        graphsys.ingest(work / "day2.parquet", graph, append=True, edge_set="day2")

        def scratch(graph=graph):
            return bsp.pagerank(graphsys.open_graph(graph), tol=args.tol)

        def delta(graph=graph):
            return bsp.pagerank(graphsys.open_graph(graph), tol=args.tol, init=prev)

        delta()  # compiles the push kernels once, outside the turns
        load = os.getloadavg()[0]
        t0 = time.perf_counter()
        turns = harness.alternate({"scratch": lambda: harness.timed(scratch),
                                   "delta": lambda: harness.timed(delta)}, args.turns)
        a = [s for s, _ in turns["scratch"]]
        b = [s for s, _ in turns["delta"]]
        ra, rb = turns["scratch"][-1][1], turns["delta"][-1][1]
        rows[f"append_{share:g}"] = {
            "appended_edges": added, "scratch_s": harness.spread(a),
            "delta_s": harness.spread(b), "ratio": harness.pair_ratios(a, b),
            "start": rb.stats.start, "method_delta": rb.stats.method,
            "method_scratch": ra.stats.method, "residual_bound": rb.stats.residual,
            "edges_scanned_delta": rb.stats.totals()["edges_scanned"],
            "edges_scanned_scratch": ra.stats.totals()["edges_scanned"],
            "l1_difference": float(np.abs(ra.values - rb.values).sum()),
            "load_average": [round(load, 2), round(os.getloadavg()[0], 2)],
            "turns_s": round(time.perf_counter() - t0, 1)}
        harness.log(f"{share:g}: scratch {harness.median(a):.3f} s, delta "
                    f"{harness.median(b):.3f} s ({rows[f'append_{share:g}']['ratio']})")
    run.emit(graph={"edges": args.edges, "nodes": g.num_nodes(), "seed": args.seed},
             tol=args.tol, turns=args.turns, **rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
