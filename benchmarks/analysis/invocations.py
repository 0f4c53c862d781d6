#!/usr/bin/env python
"""Kernel invocations of graph workloads beside a dense MLP step of equal FLOPs (Xu, Jeon &
Annavaram, IISWC 2014: "an order of magnitude more kernel invocations"), measured by
``graphsys profile`` on this machine; one JSON line per workload (each with the run's
machine, load and peaks of its ``profile`` process).

Each workload runs in a fresh process (``python -m graphsys profile ... --json``): the
invocations (numba calls and top-level torch operators; CUDA kernels on a CUDA device) per
superstep / training step and per edge, the dense reference's per step, their ratio, the
path the run took, its wall time and the share of it the named parts cover.

Usage::

    python benchmarks/analysis/invocations.py --pagerank DIR [--gnn DIR] [--embed DIR]
        [--embed-edges train] [--device cpu] [--record docs/results/analysis.jsonl]
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root

from benchmarks import harness


def profile(args: list[str]) -> tuple[dict, dict]:
    """``graphsys profile ARGS --json`` in a fresh process: its document and its peaks."""
    env = {**os.environ, "PYTHONPATH": str(harness.REPO) + os.pathsep
           + os.environ.get("PYTHONPATH", "")}
    child = harness.run_child([sys.executable, "-m", "graphsys", "profile", *args,
                               "--mapping", "edge-balanced", "--json", "--quiet"], env=env)
    return child.json, child.peaks()


def figures(name: str, profiled: tuple[dict, dict]) -> dict:
    doc, peaks = profiled
    k, w, tm = doc["kernels"], doc["workload"], doc["time"]
    return {**peaks, "workload": name, "path": w.get("path"), "device": k["device"],
            "unit": k["unit"], "invocations": k["invocations"],
            "numba_calls": k.get("numba_calls"), "steps": k.get("steps"),
            "invocations_per_step": k["invocations_per_step"],
            "invocations_per_edge": k.get("invocations_per_edge"),
            "dense_invocations_per_step": k.get("dense_invocations_per_step"),
            "ratio_over_dense": k.get("invocations_per_step_over_dense"),
            "wall_seconds": round(tm["wall_seconds"], 3),
            "attributed_share": round(tm["attributed_share"], 4)}


def main(argv: list[str] | None = None) -> int:
    ap = harness.parser(__doc__)
    ap.add_argument("--pagerank", type=Path, help="graph directory for PageRank")
    ap.add_argument("--gnn", type=Path, help="labelled graph directory for the GNN")
    ap.add_argument("--embed", type=Path, help="graph directory for the embedding")
    ap.add_argument("--embed-edges", help="training edge set of the embedding")
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args(argv)
    dev = ["--device", args.device]
    runs = []
    if args.pagerank:
        runs += [("pagerank", ["pagerank", str(args.pagerank), *dev]),
                 ("pagerank --backend torch",
                  ["pagerank", str(args.pagerank), "--backend", "torch", *dev])]
    if args.gnn:
        runs.append(("gnn", ["--workload", "gnn", str(args.gnn), *dev]))
    if args.embed:
        edges = ["--edges", args.embed_edges] if args.embed_edges else []
        runs.append(("embed", ["--workload", "embed", str(args.embed), *edges, *dev]))
    for name, profile_args in runs:
        run = harness.Run("analysis/invocations", args.record, memory=False)
        run.emit(**figures(name, profile(profile_args)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
