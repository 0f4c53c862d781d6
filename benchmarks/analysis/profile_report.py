#!/usr/bin/env python
"""``graphsys profile`` of PageRank on a large R-MAT graph, report included: wall time and
peak memory per phase, against the profiler's memory bound.

Builds (or reuses, under ``--work``) an R-MAT graph (default 100M edges over 2**23 node ids,
seed 1, 8 partitions; ``harness.rmat_graph``), then in a fresh process runs
``profile_graph`` (PageRank, every mapping, ``--max-iters`` supersteps, ``--mode``) and
``write_report``, measuring wall time per phase, the peak RSS and peak anonymous RSS of that
process (sampled from outside), and the peak RssAnon / RssFile / VmRSS of each phase
(:func:`graphsys.memory.current_memory` every 50 ms: RssFile is mostly the mapped bucket
pages the out-of-core run touches). Also times the SIMT model alone over the whole graph's
out-degrees for every mapping. Usage::

    python benchmarks/analysis/profile_report.py [--edges N] [--work DIR] [--max-iters K]
        [--mode out-of-core|memory]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root

from benchmarks import harness

CHILD = r"""
import json, sys, threading, time
t0 = time.perf_counter()
from graphsys.memory import current_memory
PHASE = ["imports"]
RSS = {}  # phase -> peak RssAnon / RssFile / VmRSS (MiB), sampled every 50 ms


def _sample():
    while True:
        now = current_memory()
        cur = {"RssAnon": now.anon / 2**20, "RssFile": now.file / 2**20,
               "VmRSS": now.total / 2**20}
        peak = RSS.setdefault(PHASE[0], {})
        for k, v in cur.items():
            peak[k] = max(peak.get(k, 0.0), v)
        time.sleep(0.05)


threading.Thread(target=_sample, daemon=True).start()
from graphsys.analysis import profile_graph, write_report, simt_model, MAPPINGS
from graphsys.storage.graph import open_graph
g = open_graph(sys.argv[1])
PHASE[0] = "degrees"
t = time.perf_counter()
deg = g.degrees(direction="out")
t_deg = time.perf_counter() - t
PHASE[0] = "static_simt"
static = {}
for m in MAPPINGS:
    t = time.perf_counter()
    r = simt_model(deg, m)
    static[m] = {"seconds": time.perf_counter() - t, "mean_utilization": r["mean_utilization"],
                 "warps_by_band": r["histogram"]["warps"],
                 "sm_max_over_mean": r["load_balance"]["sm"]["max_over_mean"],
                 "sm_cv": r["load_balance"]["sm"]["cv"], "warp_cv": r["load_balance"]["warp"]["cv"]}
del deg
PHASE[0] = "profile_graph"
t = time.perf_counter()
prof = profile_graph(g, algorithm="pagerank", max_iters=int(sys.argv[3]), mode=sys.argv[4])
t_prof = time.perf_counter() - t
PHASE[0] = "write_report"
t = time.perf_counter()
write_report(prof, sys.argv[2], overwrite=True)
t_report = time.perf_counter() - t
time.sleep(0.1)
from graphsys.analysis import key_figures
w = prof["workload"]
print(json.dumps({"degrees_seconds": t_deg, "static_simt": static,
                  "profile_seconds": t_prof, "workload_seconds": w["seconds"],
                  "frontier_record_seconds": w["frontier_record_seconds"],
                  "model_run_seconds": w["model_run_seconds"],
                  "simt_seconds": w["simt_seconds"],
                  "dense_reference_seconds": prof["dense_reference"]["kernels"]["seconds"],
                  "write_report_seconds": t_report,
                  "total_seconds": time.perf_counter() - t0,
                  "rss_peak_mib_by_phase": {k: {n: round(x, 1) for n, x in v.items()}
                                            for k, v in RSS.items()},
                  "key_figures": key_figures(prof), "advice": prof["advice"],
                  "kernels_per_step": prof["kernels"]["per_step"],
                  "dense_per_step": prof["dense_reference"]["kernels"]["per_step"]}))
"""


def main(argv: list[str] | None = None) -> int:
    ap = harness.parser(__doc__)
    ap.add_argument("--edges", type=harness.count, default=harness.count("100M"))
    ap.add_argument("--nodes", type=harness.count, default=harness.count("8Mi"))
    ap.add_argument("--work", type=Path, default=Path("/tmp/analysis_bench"))
    ap.add_argument("--max-iters", type=int, default=2)
    ap.add_argument("--mode", default="out-of-core")
    args = ap.parse_args(argv)
    run = harness.Run("analysis/profile_report", args.record, memory=False)
    args.work.mkdir(parents=True, exist_ok=True)
    t = time.perf_counter()
    graph, _ = harness.rmat_graph(args.work, args.edges, args.nodes, partitions=8, seed=1)
    build_s = time.perf_counter() - t
    child = harness.run_child([sys.executable, "-c", CHILD, graph, args.work / "report.html",
                               str(args.max_iters), args.mode])
    run.emit(edges=args.edges, nodes=args.nodes, mode=args.mode, max_iters=args.max_iters,
             graph_build_seconds=build_s, report=str(args.work / "report.html"),
             **child.json, **child.peaks())
    return 0


if __name__ == "__main__":
    sys.exit(main())
