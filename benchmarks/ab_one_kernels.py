"""A/B timing of the calls whose kernels were made one (BFS, components, core numbers,
MRR): two source trees, alternated run by run in fresh processes on email-Enron from the
mirror; the answers must be identical, the medians are printed with the load average.

    PYTHONPATH=<tree> python benchmarks/ab_one_kernels.py --a /work/main --b . --runs 5
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CALLS = {
    "bsp.bfs": "bsp.bfs(g, 0).values",
    "bsp.wcc": "bsp.wcc(g).values",
    "bsp.kcore": "bsp.kcore(g).values",
    "measures.diameter": "measures.diameter(g, exact=True).to_dict()",
    "measures.eccentricity": "measures.eccentricity(g)",
    "mining.clique_count(4)": "mining.clique_count(g, 4)",
    "ranking.mrr(1e6)": "mrr(ranks_)",
}


def child(path: str, repeats: int) -> None:
    import numpy as np

    import graphsys
    from graphsys import bsp, measures, mining  # noqa: F401
    from graphsys.gnn.metrics import mrr  # noqa: F401
    g = graphsys.open_graph(path)
    ranks_ = np.random.default_rng(0).integers(1, 1000, 10**6).astype(float)  # noqa: F841
    out = {}
    for name, expr in CALLS.items():
        value = eval(expr)  # first call compiles (numba)
        times = []
        for _ in range(repeats):
            t = time.perf_counter()
            value = eval(expr)
            times.append(time.perf_counter() - t)
        digest = hashlib.sha1(repr(np.asarray(value).tolist() if hasattr(value, "shape")
                                   else value).encode()).hexdigest()
        out[name] = (min(times), digest)
    print(json.dumps(out))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--a", required=True)
    ap.add_argument("--b", required=True)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--child")
    args = ap.parse_args()
    if args.child:
        return child(args.child, args.repeats)
    from graphsys.storage.ingest import EdgeSource, IngestOptions, ingest_sources
    mirror = Path(os.environ["GRAPHSYS_MIRROR"])
    path = Path(tempfile.mkdtemp()) / "enron"
    ingest_sources([EdgeSource([mirror / "snap/email-Enron.txt.gz"])], path,
                   IngestOptions(partitions=2, undirected=True, dedupe=True))
    res = {"A": [], "B": []}
    for run in range(args.runs):
        for side in ("AB" if run % 2 == 0 else "BA"):
            tree = os.path.abspath(args.a if side == "A" else args.b)
            env = dict(os.environ, PYTHONPATH=tree)
            p = subprocess.run([sys.executable, __file__, "--a", "-", "--b", "-",
                                "--repeats", str(args.repeats), "--child", str(path)],
                               env=env, capture_output=True, text=True, cwd=tree, check=True)
            res[side].append(json.loads(p.stdout.strip().splitlines()[-1]))
        print(f"run {run}: load average {os.getloadavg()}", flush=True)
    print(f"{'call':26} {'A median s':>11} {'B median s':>11} {'B/A':>6}")
    for name in CALLS:
        digests = {r[name][1] for side in res.values() for r in side}
        assert len(digests) == 1, f"{name}: answers differ between A and B"
        a = statistics.median(r[name][0] for r in res["A"])
        b = statistics.median(r[name][0] for r in res["B"])
        print(f"{name:26} {a:11.4f} {b:11.4f} {b / a:6.2f}")


if __name__ == "__main__":
    main()
