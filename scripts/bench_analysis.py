#!/usr/bin/env python
"""Benchmark ``graphsys profile`` report generation on a large R-MAT graph; one JSON line.

Builds (or reuses, under ``--work``) an R-MAT graph (default 100M edges over 2**23 node ids,
seed 1, 8 partitions), then in a fresh process runs ``profile_graph`` (PageRank, every
mapping, ``--max-iters`` supersteps, ``--mode``) and ``write_report``, measuring wall time
per phase and the peak RSS (``ru_maxrss``) of that process, plus the peak RssAnon / RssFile /
VmRSS of each phase (``/proc/self/status`` sampled every 50 ms: RssFile is mostly the
mapped bucket pages the out-of-core run touches). Also times the SIMT model alone over the
whole graph's out-degrees for every mapping.

Usage: ``python scripts/bench_analysis.py [--edges N] [--work DIR] [--max-iters K]
[--mode out-of-core|memory]``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

from render_results import add_record_argument, emit

CHILD = r"""
import json, resource, sys, threading, time
t0 = time.perf_counter()
PHASE = ["imports"]
RSS = {}  # phase -> peak RssAnon / RssFile / VmRSS (MiB), sampled every 50 ms


def _sample():
    while True:
        cur = {}
        with open("/proc/self/status") as f:
            for line in f:
                k, _, v = line.partition(":")
                if k in ("RssAnon", "RssFile", "VmRSS"):
                    cur[k] = int(v.split()[0]) / 1024
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
                  "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
                  "rss_peak_mib_by_phase": {k: {n: round(x, 1) for n, x in v.items()}
                                            for k, v in RSS.items()},
                  "key_figures": key_figures(prof), "advice": prof["advice"],
                  "kernels_per_step": prof["kernels"]["per_step"],
                  "dense_per_step": prof["dense_reference"]["kernels"]["per_step"]}))
"""


def build(work: Path, edges: int, nodes: int) -> Path:
    from graphsys.generators import rmat_edges, write_edges
    from graphsys.storage.ingest import EdgeSource, IngestOptions, ingest_sources

    graph = work / "graph"
    if (graph / "manifest.json").is_file():
        return graph
    f = work / f"rmat{edges}.parquet"
    if not f.exists():
        write_edges(rmat_edges(nodes, edges, seed=1), f)
    ingest_sources([EdgeSource([f])], graph, IngestOptions(partitions=8, seed=1))
    return graph


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--edges", type=int, default=100_000_000)
    ap.add_argument("--nodes", type=int, default=1 << 23)
    ap.add_argument("--work", type=Path, default=Path("/tmp/analysis_bench"))
    ap.add_argument("--max-iters", type=int, default=2)
    ap.add_argument("--mode", default="out-of-core")
    add_record_argument(ap)
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    t = time.perf_counter()
    graph = build(args.work, args.edges, args.nodes)
    build_s = time.perf_counter() - t
    load = os.getloadavg()
    proc = subprocess.run([sys.executable, "-c", CHILD, str(graph),
                           str(args.work / "report.html"), str(args.max_iters), args.mode],
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        print(proc.stderr[-3000:], file=sys.stderr)
        return proc.returncode
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    emit({"bench": "analysis", "edges": args.edges, "nodes": args.nodes,
                      "mode": args.mode, "max_iters": args.max_iters,
                      "graph_build_seconds": build_s, "load_before": load,
                      "load_after": os.getloadavg(), "cpus": os.cpu_count(),
                      "machine": platform.platform(),
                      "date": datetime.datetime.now().isoformat(timespec="seconds"),
                      "report": str(args.work / "report.html"), **res}, args.record)
    return 0


if __name__ == "__main__":
    sys.exit(main())
