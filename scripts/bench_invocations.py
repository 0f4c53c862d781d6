#!/usr/bin/env python
"""Kernel invocations of graph workloads beside a dense MLP step of equal FLOPs (Xu, Jeon &
Annavaram, IISWC 2014: "an order of magnitude more kernel invocations"), measured by
``graphsys profile`` on this machine; one JSON line per workload.

Each workload runs in a fresh process (``python -m graphsys profile ... --json``): the
invocations (numba calls and top-level torch operators; CUDA kernels on a CUDA device) per
superstep / training step and per edge, the dense reference's per step, their ratio, the
path the run took, its wall time and the share of it the named parts cover.

Usage::

    python scripts/bench_invocations.py --pagerank DIR [--gnn DIR] [--embed DIR]
        [--embed-edges train] [--device cpu] [--record docs/results/analysis.jsonl]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from render_results import add_record_argument, emit

REPO = Path(__file__).resolve().parents[1]


def profile(args: list[str]) -> dict:
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH",
                                                                               "")}
    out = subprocess.run([sys.executable, "-m", "graphsys", "profile", *args,
                          "--mapping", "edge-balanced", "--json", "--quiet"],
                         capture_output=True, text=True, env=env, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def figures(name: str, doc: dict) -> dict:
    k, w, tm = doc["kernels"], doc["workload"], doc["time"]
    return {"workload": name, "path": w.get("path"), "device": k["device"],
            "unit": k["unit"], "invocations": k["invocations"],
            "numba_calls": k.get("numba_calls"), "steps": k.get("steps"),
            "invocations_per_step": k["invocations_per_step"],
            "invocations_per_edge": k.get("invocations_per_edge"),
            "dense_invocations_per_step": k.get("dense_invocations_per_step"),
            "ratio_over_dense": k.get("invocations_per_step_over_dense"),
            "wall_seconds": round(tm["wall_seconds"], 3),
            "attributed_share": round(tm["attributed_share"], 4)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pagerank", type=Path, help="graph directory for PageRank")
    ap.add_argument("--gnn", type=Path, help="labelled graph directory for the GNN")
    ap.add_argument("--embed", type=Path, help="graph directory for the embedding")
    ap.add_argument("--embed-edges", help="training edge set of the embedding")
    ap.add_argument("--device", default="cpu")
    add_record_argument(ap)
    args = ap.parse_args()
    dev = ["--device", args.device]
    if args.pagerank:
        emit(figures("pagerank", profile(["pagerank", str(args.pagerank), *dev])),
             args.record)
        emit(figures("pagerank --backend torch",
                     profile(["pagerank", str(args.pagerank), "--backend", "torch", *dev])),
             args.record)
    if args.gnn:
        emit(figures("gnn", profile(["--workload", "gnn", str(args.gnn), *dev])), args.record)
    if args.embed:
        edges = ["--edges", args.embed_edges] if args.embed_edges else []
        emit(figures("embed", profile(["--workload", "embed", str(args.embed), *edges,
                                       *dev])), args.record)
    return 0


if __name__ == "__main__":
    sys.exit(main())
