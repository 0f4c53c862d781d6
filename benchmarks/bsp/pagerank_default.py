#!/usr/bin/env python
"""PageRank on the path the README shows (ingest, then ``bsp.pagerank(g)``) beside
SuiteSparse:GraphBLAS's bare ``mxv``, per iteration, on a seeded R-MAT graph.

The graph: ``--edges`` R-MAT edges over ``--nodes`` ids (Graph500 a, b, c; seed
``--seed``; duplicates and self-loops kept), written to Parquet and ingested by
``graphsys.ingest(file, dir, partitions=--partitions)`` with every other option at its
default (no ``index``): what a user who follows the README has. Reused from ``--work`` when
already there, and copied afresh for each invocation, so the first call is the graph's first
PageRank (the one that stores the push index where the graph is in its window).

Sides, alternated for ``--turns`` turns, both on numba's thread count:

* ``graphsys``: ``bsp.pagerank(graph)`` on its defaults (tol 1e-6, float64 ranks), the
  seconds per iteration as its statistics record them (the median over the iterations after
  the first, which pays page-ins); the whole call's seconds and its setup (adjacency and
  layout builds) beside it. The first call (not timed per turn) is reported apart: its
  seconds, setup and method, and the bytes of the indexes it stored;
* ``pull``: the same call on the ingested graph with the push index's storing turned off
  (``store_index=False``): the in-memory pull over a CSC built per call, what the path
  ran before it stored the index, and what a graph that cannot be written still runs;
* ``graphblas``: ``y = A^T x`` (``plus_second`` over an iso-valued, pre-transposed matrix,
  python-graphblas), the median of ``--iters`` calls: the floor of any GraphBLAS PageRank
  iteration (no rank update, no convergence test).

``ratio``: per turn GraphBLAS's seconds over graphsys's, and their median (> 1: graphsys
faster); ``pull_ratio`` the same for the pull. The JSON line also names the method each
call ran and the indexes the graph has.
Usage::

    NUMBA_NUM_THREADS=2 python benchmarks/bsp/pagerank_default.py --work DIR [--turns 5]
"""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root

import numpy as np

from benchmarks import harness


def readme_graph(work: Path, edges: int, nodes: int, seed: int, partitions: int) -> Path:
    """The R-MAT graph ingested as the README ingests (every option at its default but
    ``partitions``); reused when its manifest is there."""
    import graphsys
    from graphsys.generators import rmat_edges, write_edges

    graph = work / f"rmat-{edges}-{nodes}-s{seed}-p{partitions}-readme"
    if (graph / "manifest.json").is_file():
        return graph
    work.mkdir(parents=True, exist_ok=True)
    edge_file = work / f"{graph.name}.parquet"
    harness.log(f"generating R-MAT: {edges:,} edges over {nodes:,} ids, seed {seed}")
    write_edges(rmat_edges(nodes, edges, seed=seed), edge_file, overwrite=True)
    harness.log(f"graphsys.ingest(..., partitions={partitions})")
    t0 = time.perf_counter()
    graphsys.ingest(edge_file, graph, partitions=partitions)
    harness.log(f"ingested in {time.perf_counter() - t0:.1f} s")
    edge_file.unlink()
    return graph


def graphblas_mxv(graph, threads: int):
    """A callable timing ``iters`` bare mat-vecs ``A^T x`` (median seconds), or None with
    the reason when python-graphblas is missing."""
    try:
        import graphblas as gb
        from graphblas import semiring
    except ImportError as exc:
        return None, str(exc)
    gb.ss.config["nthreads"] = threads
    n = graph.num_nodes()
    c = graph.csr(weights=False)
    a = gb.Matrix.ss.import_csr(nrows=n, ncols=n, indptr=c.indptr.astype(np.int64),
                                col_indices=c.indices.astype(np.int64), values=np.ones(1),
                                is_iso=True, sorted_cols=True)
    at = a.T.new()
    del a, c
    x = gb.Vector.from_dense(np.full(n, 1.0 / n))
    y = gb.Vector(float, n)

    def mxv(iters: int) -> float:
        times = []
        for _ in range(iters):
            t = time.perf_counter()
            y << semiring.plus_second(at @ x)
            times.append(time.perf_counter() - t)
        return harness.median(times)

    mxv(2)  # warm
    return mxv, gb.__version__


def main(argv: list[str] | None = None) -> int:
    ap = harness.parser(__doc__)
    ap.add_argument("--work", type=Path, required=True, help="work directory (graph reused)")
    ap.add_argument("--edges", type=harness.count, default=harness.count("10M"))
    ap.add_argument("--nodes", type=harness.count, default=harness.count("1Mi"))
    ap.add_argument("--seed", type=int, default=1, help="R-MAT seed (default 1)")
    ap.add_argument("--partitions", type=int, default=4, help="P of the ingest (default 4)")
    ap.add_argument("--turns", type=int, default=5, help="alternated turns (default 5)")
    ap.add_argument("--iters", type=int, default=20,
                    help="GraphBLAS mat-vecs per turn (default 20)")
    args = ap.parse_args(argv)
    import numba

    import graphsys
    from graphsys import bsp

    pristine = readme_graph(args.work, args.edges, args.nodes, args.seed, args.partitions)
    graph_dir = args.work / f"{pristine.name}-run"  # the first PageRank may store an index
    shutil.rmtree(graph_dir, ignore_errors=True)
    shutil.copytree(pristine, graph_dir)
    run = harness.Run("bsp/pagerank_default", args.record)
    g = graphsys.open_graph(graph_dir)
    indexes_before = sorted(g.manifest.indexes.get("default", {}))
    threads = numba.get_num_threads()
    peer, version = graphblas_mxv(g, threads)
    if peer is None:
        run.missing("GraphBLAS mxv", version)
    calls: list[dict] = []

    def ours(graph=g, into=calls, store_index=True) -> float:
        r = bsp.pagerank(graph, store_index=store_index)
        per = [s.total_seconds for s in r.stats.supersteps[1:]]
        into.append({"s": r.stats.seconds, "setup_s": r.stats.setup_seconds,
                     "iterations": r.stats.num_supersteps, "method": r.stats.method})
        return harness.median(per)

    pulls: list[dict] = []

    def pull() -> float:  # the pristine graph, which must stay without an index
        return ours(graphsys.open_graph(pristine), pulls, store_index=False)

    t0 = time.perf_counter()
    ours()  # the graph's first PageRank; then kernels are loaded, files in the page cache
    first = dict(calls.pop(), wall_s=time.perf_counter() - t0)
    index_bytes = sum(f["bytes"] for rel, f in g.manifest.files.items()
                      if rel.startswith("index/"))
    pull()  # warm
    pulls.clear()
    turns = harness.alternate({"graphsys": ours, "pull": pull,
                               "graphblas": (lambda: peer(args.iters)) if peer else None},
                              args.turns)
    run.emit(graph={"edges": g.num_edges(), "nodes": g.num_nodes(), "ids": args.nodes,
                    "seed": args.seed, "partitions": g.num_partitions,
                    "indexes_before": indexes_before,
                    "indexes": sorted(g.manifest.indexes.get("default", {})),
                    "index_bytes": index_bytes},
             first_call={"s": first["wall_s"], "setup_s": first["setup_s"],
                         "method": first["method"]},
             threads=threads, method=calls[-1]["method"],
             iterations=calls[-1]["iterations"],
             graphsys_s_per_iter=harness.spread(turns["graphsys"]),
             graphsys_call_s=harness.spread([c["s"] for c in calls]),
             graphsys_setup_s=harness.spread([c["setup_s"] for c in calls]),
             pull_method=pulls[-1]["method"],
             pull_s_per_iter=harness.spread(turns["pull"]),
             pull_call_s=harness.spread([c["s"] for c in pulls]),
             graphblas_version=version if peer else None,
             graphblas_mxv_s=harness.spread(turns["graphblas"]) if peer else None,
             ratio=harness.pair_ratios(turns["graphblas"], turns["graphsys"]) if peer
             else None,
             pull_ratio=harness.pair_ratios(turns["graphblas"], turns["pull"]) if peer
             else None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
