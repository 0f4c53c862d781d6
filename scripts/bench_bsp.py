#!/usr/bin/env python
"""Benchmark the BSP engine against scipy (and igraph when importable); prints one JSON line.

Graphs: R-MAT with 10M edges (100M with ``--big``; Graph500 a, b, c = 0.57, 0.19, 0.19,
directed, duplicates and self-loops kept) and the luxembourg-osm road graph from the dataset
mirror (undirected). Per graph:

* PageRank seconds per iteration and edges/s (edges / (seconds per iteration)), graphsys in
  memory and out of core (edge-phase + update time per superstep, setup excluded) vs a
  ``scipy.sparse`` CSR mat-vec loop of the same iteration (float64), and igraph's PRPACK
  PageRank (whole solve) when ``igraph`` is importable;
* igraph runs last: its OpenMP pool, spinning, would slow the numba kernels that follow;
* BFS from the highest out-degree vertex and WCC: graphsys in memory, synchronous supersteps
  and ``schedule="async"`` (solve seconds, best of 3 (2 above 20M edges), CSR/CSC build
  reported apart) vs ``scipy.sparse.csgraph.breadth_first_order`` / ``connected_components``
  on a prebuilt CSR (best of as many);
* peak RSS of an out-of-core PageRank in a fresh process (``ru_maxrss``).

Usage: ``python scripts/bench_bsp.py [--big] [--work DIR] [--iters N] [--skip-road]``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

# first: importing graphsys sets OMP_WAIT_POLICY before any OpenMP pool (numba's) starts
from graphsys import bsp

REPO = Path(__file__).resolve().parents[1]


def mirror_dir() -> Path | None:
    env = os.environ.get("GRAPHSYS_MIRROR")
    for c in ([Path(env)] if env else []) + [REPO.parent / "shared" / "datasets"]:
        if c.is_dir():
            return c
    return None


def rmat_chunks(num_nodes: int, num_edges: int, seed: int):
    """R-MAT edge chunks {src, dst} int64: graphsys.generators when present, else numpy."""
    try:
        from graphsys.generators.rmat import rmat_edges

        yield from rmat_edges(num_nodes, num_edges, seed=seed)
        return
    except ImportError:
        pass
    rng = np.random.default_rng(seed)
    levels = (num_nodes - 1).bit_length()
    perm = rng.permutation(num_nodes)
    done = 0
    while done < num_edges:
        k = min(1 << 22, num_edges - done)
        src = np.zeros(k, np.int64)
        dst = np.zeros(k, np.int64)
        for _ in range(levels):
            u = rng.random(k)
            sb = u >= 0.76
            db = ((u >= 0.57) & (u < 0.76)) | (u >= 0.95)
            src = (src << 1) | sb
            dst = (dst << 1) | db
        keep = (src < num_nodes) & (dst < num_nodes)
        yield {"src": perm[src[keep]], "dst": perm[dst[keep]]}
        done += int(keep.sum())


def build_rmat(work: Path, num_edges: int, num_nodes: int, partitions: int) -> tuple[Path, dict]:
    from graphsys.storage.ingest import EdgeSource, IngestOptions, ingest

    out = work / f"rmat-{num_edges}"
    if (out / "manifest.json").exists():
        return out, {}
    t0 = time.perf_counter()
    pqf = work / f"rmat-{num_edges}.parquet"
    schema = pa.schema([("src", pa.int64()), ("dst", pa.int64())])
    written = 0
    with pq.ParquetWriter(pqf, schema) as w:
        for ch in rmat_chunks(num_nodes, num_edges, seed=1):
            take = min(len(ch["src"]), num_edges - written)
            w.write_table(pa.table({"src": ch["src"][:take], "dst": ch["dst"][:take]}, schema))
            written += take
            if written >= num_edges:
                break
    t1 = time.perf_counter()
    ingest([EdgeSource([pqf])], out, IngestOptions(num_partitions=partitions))
    pqf.unlink()
    return out, {"generate_s": round(t1 - t0, 1), "ingest_s": round(time.perf_counter() - t1, 1)}


def build_road(work: Path, mirror: Path) -> Path:
    from graphsys.storage.ingest import EdgeSource, IngestOptions, ingest

    out = work / "luxembourg-osm"
    if not (out / "manifest.json").exists():
        ingest([EdgeSource([mirror / "luxembourg-osm" / "luxembourg_osm.txt.gz"],
                           delimiter=" ")], out,
               IngestOptions(num_partitions=4, undirected=True))
    return out


def scipy_pagerank_iter(at, outdeg, iters: int, damping: float = 0.85) -> float:
    """Seconds per iteration of the networkx-definition PageRank as a scipy CSR mat-vec."""
    n = at.shape[0]
    dangling = outdeg == 0
    inv = np.where(dangling, 0.0, 1.0 / np.maximum(outdeg, 1))
    x = np.full(n, 1.0 / n)
    p = np.full(n, 1.0 / n)
    at @ x  # warm
    t = time.perf_counter()
    for _ in range(iters):
        new = damping * (at @ (x * inv) + x[dangling].sum() * p) + (1 - damping) * p
        _ = np.abs(new - x).sum()
        x = new
    return (time.perf_counter() - t) / iters


def bsp_pagerank_iter(graph, mode: str, iters: int) -> tuple[float, float, dict]:
    res = bsp.pagerank(graph, tol=1e-30, max_iters=iters + 1, mode=mode)
    steps = res.stats.supersteps[1:]  # the first superstep pays numba/page-in warm-up
    per = [s.total_seconds for s in steps]
    edge = [s.seconds["edges"] for s in steps]
    return float(np.median(per)), float(np.median(edge)), {
        "setup_s": round(res.stats.setup_seconds, 3),
        "first_superstep_s": round(res.stats.supersteps[0].total_seconds, 3)}


def peak_rss_subprocess(graph_dir: Path, iters: int) -> int:
    # VmHWM of the exec'd child (ru_maxrss would carry the forked parent's peak over)
    code = ("import re, graphsys.bsp as bsp;"
            f"bsp.pagerank({str(graph_dir)!r}, tol=1e-30, max_iters={iters}, "
            "mode='out-of-core');"
            "print(int(re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read())"
            ".group(1)) * 1024)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    return int(out.stdout.strip().splitlines()[-1])


def bench_graph(name: str, graph_dir: Path, iters: int, rss: bool) -> dict:
    import scipy.sparse as sp
    from scipy.sparse import csgraph

    from graphsys import open_graph

    g = open_graph(graph_dir)
    n, m = g.num_nodes(), g.num_edges()
    row = {"graph": name, "nodes": n, "edges": m, "partitions": g.num_partitions}
    t = time.perf_counter()
    c = g.csr(weights=False)
    a = sp.csr_matrix((np.ones(m), c.indices.astype(np.int32), c.indptr), shape=(n, n))
    del c
    row["scipy_csr_build_s"] = round(time.perf_counter() - t, 3)
    outdeg = np.diff(a.indptr).astype(np.float64)
    at = a.T.tocsr()
    sp_iter = scipy_pagerank_iter(at, outdeg, iters)
    row["pagerank"] = {"scipy": {"s_per_iter": sp_iter, "edges_per_s": m / sp_iter}}
    del at
    for mode in ("memory", "out-of-core"):
        per, edge, extra = bsp_pagerank_iter(g, mode, iters)
        row["pagerank"][f"graphsys_{mode}"] = {
            "s_per_iter": per, "edges_per_s": m / per, "edge_phase_edges_per_s": m / edge,
            "vs_scipy": sp_iter / per, **extra}
    source = int(np.argmax(outdeg))
    src_id = int(g.node_ids()[source])
    repeats = 3 if m <= 20_000_000 else 2  # best of: these solves take milliseconds

    def best(fn) -> tuple[float, object]:
        runs = []
        for _ in range(repeats):
            t = time.perf_counter()
            out = fn()
            runs.append((time.perf_counter() - t, out))
        return min(runs, key=lambda r: r[0])

    def solve(res) -> float:
        return res.stats.seconds - res.stats.setup_seconds

    sp_bfs, _ = best(lambda: csgraph.breadth_first_order(a, source, directed=True,
                                                         return_predecessors=False))
    sp_cc, _ = best(lambda: csgraph.connected_components(a, directed=True, connection="weak"))
    for algo, sp_s, call in (("bfs", sp_bfs, lambda **kw: bsp.bfs(g, src_id, **kw)),
                             ("wcc", sp_cc, lambda **kw: bsp.wcc(g, **kw))):
        res = min((call() for _ in range(repeats)), key=solve)
        asy = min((call(schedule="async") for _ in range(repeats)), key=solve)
        row[algo] = {"scipy_s": sp_s, "graphsys_s": solve(res),
                     "graphsys_setup_s": res.stats.setup_seconds,
                     "supersteps": res.stats.num_supersteps, "vs_scipy": sp_s / solve(res),
                     "directions": "".join("s" if s.direction == "push" else "d"
                                           for s in res.stats.supersteps),
                     "graphsys_async_s": solve(asy), "vs_scipy_async": sp_s / solve(asy),
                     "async_edges_scanned": asy.stats.supersteps[0].edges_scanned}
    try:
        import igraph

        t = time.perf_counter()
        ig = igraph.Graph(n=n, edges=np.column_stack([a.tocoo().row, a.tocoo().col]),
                          directed=True)
        build = time.perf_counter() - t
        t = time.perf_counter()
        ig.pagerank(damping=0.85, implementation="prpack")
        row["pagerank"]["igraph_prpack"] = {"build_s": round(build, 2),
                                            "solve_s": round(time.perf_counter() - t, 3)}
        del ig
    except ImportError:
        row["pagerank"]["igraph_prpack"] = None
    if rss:
        row["out_of_core_peak_rss_bytes"] = peak_rss_subprocess(graph_dir, 3)
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--big", action="store_true", help="also R-MAT with 100M edges")
    ap.add_argument("--work", type=Path, help="where graphs are built (kept for reuse)")
    ap.add_argument("--iters", type=int, default=10, help="PageRank iterations timed")
    ap.add_argument("--skip-road", action="store_true")
    args = ap.parse_args()
    import numba

    work = args.work or Path(tempfile.mkdtemp(prefix="bench-bsp-"))
    work.mkdir(parents=True, exist_ok=True)
    report = {"date": datetime.date.today().isoformat(), "machine": platform.machine(),
              "cpus": os.cpu_count(), "numba_threads": numba.get_num_threads(),
              "loadavg_start": os.getloadavg()[0], "graphs": []}
    sizes = [(10_000_000, 1 << 20)] + ([(100_000_000, 1 << 23)] if args.big else [])
    for m, n in sizes:
        d, build = build_rmat(work, m, n, partitions=4 if m <= 10_000_000 else 8)
        row = bench_graph(f"rmat-{m // 1_000_000}M", d, args.iters, rss=True)
        row.update(build)
        report["graphs"].append(row)
    mirror = mirror_dir()
    if not args.skip_road and mirror and (mirror / "luxembourg-osm").is_dir():
        report["graphs"].append(bench_graph("luxembourg-osm", build_road(work, mirror),
                                            args.iters, rss=False))
    report["loadavg_end"] = os.getloadavg()[0]
    report["peak_rss_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps(report))
    if args.work is None:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
