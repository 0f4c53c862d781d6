#!/usr/bin/env python
"""PageRank, BFS and WCC of the BSP engine beside SuiteSparse:GraphBLAS, NetworKit, scipy and
igraph, in one run.

Graphs: R-MAT with 10M edges (100M with ``--big``; ``graphsys.generators``, Graph500 a, b,
c = 0.57, 0.19, 0.19, directed, duplicates and self-loops kept) and the luxembourg-osm road
graph from the dataset registry (undirected; without the dataset mirror or a download its
rows are listed under ``missing``). Every library gets numba's thread count (``NUMBA_NUM_THREADS``);
times are solve times (CSR/CSC builds, graph loads and conversions excluded), medians of
several repetitions. Per graph:

* PageRank seconds per iteration: graphsys in memory (its fused loop, in the layout a run of
  ``--iters`` iterations picks) and out of core; in memory also the destination-blocked push
  layout's iteration with its build treated as free (``graphsys_memory_push``: what runs long
  enough to pay for that build get; null where the graph is too
  sparse or small for it) and the default call end to end (``default_call``: tol 1e-6, setup
  included); the same iteration and default call on a hard-linked copy of the graph with
  stored indexes (CSR, CSC and PageRank's push layout: ``graphsys_push_index``,
  ``default_call_push_index``; the indexes' build seconds beside them: paid once per graph,
  not per run); a ``scipy.sparse`` mat-vec
  loop of the same iteration (float64), GraphBLAS's bare ``mxv`` (``A^T x``, plus_second;
  the floor of any GraphBLAS PageRank iteration), NetworKit's PageRank (``maxIterations``
  iterations), igraph's PRPACK (whole solve) when importable;
* BFS from the highest out-degree vertex and WCC: graphsys with the default
  ``schedule="auto"`` (direction-optimizing BFS; Afforest or union-find WCC, the method
  named), plus one ``sync`` and one ``async`` run, and the default on the indexed copy
  (``graphsys_indexed_s``: the CSR/CSC mapped, not built), vs ``scipy.sparse.csgraph``
  (medians of calls alternated with graphsys's, 21 on graphs up to 1M edges), a GraphBLAS
  level BFS pushing with a complement mask, NetworKit's BFS and WeaklyConnectedComponents;
* ``ratios``: peer seconds / graphsys seconds (> 1: graphsys faster); a peer that is not
  importable (the ``bench`` extra: ``pip install -e '.[bench]'``) reports null;
* peak RSS and peak anonymous RSS of an out-of-core PageRank in a fresh process.

The graphs without indexes keep none: PageRank's first in-memory run, which stores the push
index on such a graph by default, is told not to here.

Usage::

    NUMBA_NUM_THREADS=2 python benchmarks/bsp/pagerank_bfs_wcc.py --work DIR [--big]
        [--skip-10m] [--iters N] [--skip-road] [--no-rss]
"""

from __future__ import annotations

import importlib
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root

import numpy as np

from benchmarks import harness
from graphsys.openmp import apply_wait_policy

# first: graphsys's OpenMP wait policy, before any OpenMP pool (torch's, numba's, a peer's)
# starts
apply_wait_policy()

from graphsys import bsp  # noqa: E402


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


def bsp_pagerank_iter(graph, mode: str, iters: int, repeats: int,
                      sum_dtype: str = "float64") -> tuple[float, dict]:
    """Median seconds per iteration over ``repeats`` runs (the first superstep of each run
    pays numba/page-in warm-up and is left out)."""
    per, res = [], None
    for _ in range(repeats):
        res = bsp.pagerank(graph, tol=1e-30, max_iters=iters + 1, mode=mode,
                           sum_dtype=sum_dtype, store_index=False)
        per += [s.total_seconds for s in res.stats.supersteps[1:]]
    return float(np.median(per)), {
        "method": res.stats.method, "setup_s": round(res.stats.setup_seconds, 3),
        "first_superstep_s": round(res.stats.supersteps[0].total_seconds, 3)}


def bsp_pagerank_push_iter(graph, iters: int, repeats: int) -> tuple[float, dict] | None:
    """:func:`bsp_pagerank_iter` with the push layout's build treated as free (a break-even
    of one iteration), so the fused loop switches to it after its forecast; the median is
    over the pushed iterations. None when the graph does not get the push layout."""
    pagerank_module = importlib.import_module("graphsys.bsp.algorithms.pagerank")
    saved = pagerank_module.PUSH_BREAK_EVEN_ITERATIONS
    pagerank_module.PUSH_BREAK_EVEN_ITERATIONS = 1
    try:
        per, res = [], None
        for _ in range(repeats):
            res = bsp.pagerank(graph, tol=1e-30, max_iters=iters + 1, store_index=False)
            per += [s.total_seconds for s in res.stats.supersteps if s.direction == "push"]
    finally:
        pagerank_module.PUSH_BREAK_EVEN_ITERATIONS = saved
    if not per:
        return None
    return float(np.median(per)), {"method": res.stats.method,
                                   "setup_s": round(res.stats.setup_seconds, 3)}


def default_pagerank_call(graph, repeats: int) -> dict:
    """``bsp.pagerank(graph)`` on its defaults (tol 1e-6): median seconds of the whole call
    as the stats count it (setup, i.e. adjacency and layout builds, included)."""
    runs = [bsp.pagerank(graph, store_index=False) for _ in range(repeats)]
    return {"s": float(np.median([r.stats.seconds for r in runs])),
            "setup_s": float(np.median([r.stats.setup_seconds for r in runs])),
            "iterations": runs[0].stats.num_supersteps, "method": runs[0].stats.method}


def indexed_copy(graph_dir: Path) -> tuple[Path, float]:
    """A copy of ``graph_dir`` (hard links: every write of the format is a rename) with
    stored CSR, CSC and push indexes, and the seconds their build took (0 when current)."""
    from graphsys import open_graph
    from graphsys.storage.adjacency_index import build_index

    copy = graph_dir.with_name(graph_dir.name + "-indexed")
    if not copy.exists():
        shutil.copytree(graph_dir, copy, copy_function=os.link)
    t = time.perf_counter()
    built = build_index(open_graph(copy), ("csr", "csc", "push"))
    return copy, (time.perf_counter() - t) if built else 0.0


def out_of_core_peaks(graph_dir: Path, iters: int) -> dict[str, int]:
    """Peak RSS and peak anonymous RSS of an out-of-core PageRank in a fresh process."""
    code = ("import graphsys.bsp as bsp;"
            f"bsp.pagerank({str(graph_dir)!r}, tol=1e-30, max_iters={iters}, "
            "mode='out-of-core')")
    return harness.run_child([sys.executable, "-c", code]).peaks()


def graphblas_peer(a, source: int, iters: int, repeats: int, threads: int) -> dict | None:
    """SuiteSparse:GraphBLAS (python-graphblas): the bare pull mat-vec ``A^T x`` of a
    PageRank iteration (plus_second over a prebuilt transpose, median of ``iters``), and a
    level BFS pushing with a complement mask (``q<!v> = q any.pair A``). None when
    python-graphblas is not importable."""
    try:
        import graphblas as gb
    except ImportError:
        return None
    from graphblas import semiring

    gb.ss.config["nthreads"] = threads
    n = a.shape[0]
    t = time.perf_counter()
    A = gb.Matrix.ss.import_csr(nrows=n, ncols=n, indptr=a.indptr.astype(np.int64),
                                col_indices=a.indices.astype(np.int64),
                                values=np.ones(1), is_iso=True, sorted_cols=True)
    AT = A.T.new()
    build = time.perf_counter() - t
    x = gb.Vector.from_dense(np.full(n, 1.0 / n))
    y = gb.Vector(float, n)
    y << semiring.plus_second(AT @ x)  # warm
    times = []
    for _ in range(iters):
        t = time.perf_counter()
        y << semiring.plus_second(AT @ x)
        times.append(time.perf_counter() - t)
    mxv = float(np.median(times))

    def bfs():
        level = gb.Vector(int, n)
        q = gb.Vector(bool, n)
        q[source] << True
        depth = 0
        while q.nvals:
            level(q.S) << depth
            q(~level.S, replace=True) << semiring.any_pair(q @ A)
            depth += 1
        return level

    bfs_s, _ = harness.median_seconds(bfs, repeats)
    return {"version": gb.__version__, "build_s": round(build, 3), "mxv_s": mxv,
            "bfs_s": bfs_s}


def networkit_peer(a, source: int, iters: int, repeats: int, threads: int) -> dict | None:
    """NetworKit: PageRank seconds per iteration (``maxIterations`` = ``iters``), BFS from
    ``source``, weakly connected components, on a directed graph built from the CSR. None
    when networkit is not importable."""
    try:
        import networkit as nk
    except ImportError:
        return None
    nk.setNumberOfThreads(threads)
    n = a.shape[0]
    t = time.perf_counter()
    g = nk.Graph(n, directed=True)
    coo = a.tocoo()
    g.addEdges((coo.row.astype(np.uint64), coo.col.astype(np.uint64)))
    del coo
    build = time.perf_counter() - t
    pr = nk.centrality.PageRank(g, damp=0.85, tol=1e-30)
    pr.maxIterations = iters
    pr_s, _ = harness.median_seconds(pr.run, 3)
    bfs_s, _ = harness.median_seconds(
        lambda: nk.distance.BFS(g, source, storePaths=False).run(), repeats)
    wcc_s, _ = harness.median_seconds(lambda: nk.components.WeaklyConnectedComponents(g).run(),
                              repeats)
    return {"version": nk.__version__, "build_s": round(build, 2),
            "pagerank_s_per_iter": pr_s / max(pr.numberOfIterations(), 1),
            "bfs_s": bfs_s, "wcc_s": wcc_s}


def bench_graph(name: str, graph_dir: Path, iters: int, rss: bool, threads: int) -> dict:
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
    source = int(np.argmax(outdeg))
    src_id = int(g.node_ids()[source])
    repeats = 5 if m <= 20_000_000 else 3
    # BFS and WCC calls per peer: a road graph's take milliseconds, and vary by tens of %
    alternations = 21 if m <= 1_000_000 else repeats
    pr_runs = 3 if m <= 20_000_000 else 1
    at = a.T.tocsr()
    sp_iter = scipy_pagerank_iter(at, outdeg, iters)
    del at
    row["pagerank"] = {"scipy": {"s_per_iter": sp_iter, "edges_per_s": m / sp_iter}}
    for mode, dtype in (("memory", "float64"), ("memory", "float32"),
                        ("out-of-core", "float64"), ("out-of-core", "float32")):
        per, extra = bsp_pagerank_iter(g, mode, iters, pr_runs if mode == "memory" else 1,
                                       dtype)
        row["pagerank"][f"graphsys_{mode}" + ("_float32" if dtype == "float32" else "")] = {
            "s_per_iter": per, "edges_per_s": m / per, "vs_scipy": sp_iter / per, **extra}
    pushed = bsp_pagerank_push_iter(g, iters, pr_runs)
    row["pagerank"]["graphsys_memory_push"] = pushed and {
        "s_per_iter": pushed[0], "edges_per_s": m / pushed[0], "vs_scipy": sp_iter / pushed[0],
        **pushed[1]}
    row["pagerank"]["default_call"] = default_pagerank_call(g, pr_runs)
    indexed_dir, index_build = indexed_copy(graph_dir)
    gi = open_graph(indexed_dir)
    per, extra = bsp_pagerank_iter(gi, "memory", iters, pr_runs)
    row["pagerank"]["graphsys_push_index"] = {
        "s_per_iter": per, "edges_per_s": m / per, "vs_scipy": sp_iter / per,
        "index_build_s": round(index_build, 3), **extra}
    row["pagerank"]["default_call_push_index"] = default_pagerank_call(gi, pr_runs)

    def solve(res) -> float:
        return res.stats.seconds - res.stats.setup_seconds

    peers = {"bfs": lambda: csgraph.breadth_first_order(a, source, directed=True,
                                                         return_predecessors=False),
             "wcc": lambda: csgraph.connected_components(a, directed=True, connection="weak")}
    for algo, call in (("bfs", lambda h=g, **kw: bsp.bfs(h, src_id, **kw)),
                       ("wcc", lambda h=g, **kw: bsp.wcc(h, **kw))):
        call()  # warm: numba's compiled-code cache is loaded on the first call
        peers[algo]()
        # alternated call by call: each call finds the allocator as the other left it (a
        # block of scipy calls trims the heap, and the next block's fresh arrays fault in)
        times, auto, indexed = [], [], []
        for _ in range(alternations):
            t = time.perf_counter()
            peers[algo]()
            times.append(time.perf_counter() - t)
            auto.append(call())
            indexed.append(solve(call(gi)))
        sp_s = float(np.median(times))
        solves = [solve(r) for r in auto]
        res = call(schedule="sync")
        asy = call(schedule="async")
        row[algo] = {"scipy_s": sp_s, "graphsys_s": float(np.median(solves)),
                     "graphsys_min_max_s": [min(solves), max(solves)],
                     "graphsys_method": auto[0].stats.method,
                     "graphsys_setup_s": auto[0].stats.setup_seconds,
                     "levels" if algo == "bfs" else "supersteps": auto[0].stats.num_supersteps,
                     "directions": "".join("s" if s.direction == "push" else "d"
                                           for s in auto[0].stats.supersteps)
                     if algo == "bfs" else auto[0].stats.supersteps[0].direction,
                     "edges_scanned": auto[0].stats.totals()["edges_scanned"],
                     "vs_scipy": sp_s / float(np.median(solves)),
                     "graphsys_indexed_s": float(np.median(indexed)),
                     "indexed_vs_scipy": sp_s / float(np.median(indexed)),
                     "graphsys_sync_s": solve(res),
                     "sync_supersteps": res.stats.num_supersteps,
                     "graphsys_async_s": solve(asy)}
    gbp = graphblas_peer(a, source, iters, repeats, threads)
    nkp = networkit_peer(a, source, iters, repeats, threads)
    row["graphblas"], row["networkit"] = gbp, nkp
    gs_pr = row["pagerank"]["graphsys_memory"]["s_per_iter"]
    row["ratios"] = {
        "pagerank_vs_graphblas_mxv": gbp and gbp["mxv_s"] / gs_pr,
        "pagerank_float32_vs_graphblas_mxv": gbp and gbp["mxv_s"] / row["pagerank"][
            "graphsys_memory_float32"]["s_per_iter"],
        "pagerank_push_vs_graphblas_mxv": gbp and pushed and gbp["mxv_s"] / pushed[0],
        "pagerank_push_index_vs_graphblas_mxv": gbp and gbp["mxv_s"] / row["pagerank"][
            "graphsys_push_index"]["s_per_iter"],
        "pagerank_vs_networkit": nkp and nkp["pagerank_s_per_iter"] / gs_pr,
        "bfs_vs_graphblas": gbp and gbp["bfs_s"] / row["bfs"]["graphsys_s"],
        "bfs_vs_networkit": nkp and nkp["bfs_s"] / row["bfs"]["graphsys_s"],
        "bfs_vs_scipy": row["bfs"]["vs_scipy"],
        "bfs_indexed_vs_scipy": row["bfs"]["indexed_vs_scipy"],
        "wcc_vs_networkit": nkp and nkp["wcc_s"] / row["wcc"]["graphsys_s"],
        "wcc_vs_scipy": row["wcc"]["vs_scipy"]}
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
        row["out_of_core_peaks"] = out_of_core_peaks(graph_dir, 3)
    return row


def main(argv: list[str] | None = None) -> int:
    ap = harness.parser(__doc__)
    ap.add_argument("--edges", type=harness.count, default=harness.count("10M"),
                    help="edges of the first R-MAT graph (default 10M)")
    ap.add_argument("--nodes", type=harness.count, default=harness.count("1Mi"),
                    help="its id space (default 1Mi)")
    ap.add_argument("--big", action="store_true", help="also R-MAT with 100M edges")
    ap.add_argument("--work", type=Path, help="where graphs are built (kept for reuse)")
    ap.add_argument("--iters", type=int, default=10, help="PageRank iterations timed")
    ap.add_argument("--skip-road", action="store_true")
    ap.add_argument("--skip-10m", action="store_true",
                    help="only the 100M (--big) and road graphs")
    ap.add_argument("--no-rss", action="store_true",
                    help="skip the out-of-core peak-RSS subprocess")
    args = ap.parse_args(argv)
    import numba

    run = harness.Run("bsp/pagerank_bfs_wcc", args.record)
    work = args.work or Path(tempfile.mkdtemp(prefix="bench-bsp-"))
    work.mkdir(parents=True, exist_ok=True)
    threads = numba.get_num_threads()
    graphs = []
    sizes = ([] if args.skip_10m else [(args.edges, args.nodes)]) + (
        [(100_000_000, 1 << 23)] if args.big else [])
    for m, n in sizes:
        d, build = harness.rmat_graph(work, m, n, partitions=4 if m <= 10_000_000 else 8,
                                      seed=1, partition_seed=0)
        row = bench_graph(f"rmat-{m:,}", d, args.iters, rss=not args.no_rss,
                          threads=threads)
        row.update(build)
        graphs.append(row)
    if not args.skip_road:
        road = harness.dataset(run, "luxembourg-osm", work / "luxembourg-osm", partitions=4)
        if road is not None:
            graphs.append(bench_graph("luxembourg-osm", road.path, args.iters, rss=False,
                                      threads=threads))
    if args.work is None:
        shutil.rmtree(work, ignore_errors=True)
    run.emit(numba_threads=threads, graphs=graphs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
