#!/usr/bin/env python
"""Triangle counting, beside SuiteSparse:GraphBLAS, NetworKit and igraph on the same graphs.

Graphs: email-Enron and soc-Slashdot0902 (registry datasets through the mirror) and a
seeded R-MAT of ``--rmat-edges`` edges (``graphsys.generators``; Graph500 a, b, c); each
with its undirected ``sym`` index (``graphsys index --undirected``, built once and timed
apart). Every side counts the triangles of the same undirected simple graph, from its own
in-memory form built beforehand from the index's arrays (untimed):

* graphsys: ``mining.triangle_count(graph, threads=T)`` on the opened graph, everything
  after the index is mapped timed (degree order, orientation, the count);
* GraphBLAS (python-graphblas, ``nthreads = T``): LAGraph's masked formulations from the
  symmetric matrix ``A``, each timed whole: ``LL`` (``C<L> = L plus_pair L``), ``LUT``
  (``C<L> = L plus_pair U'``, dot products), and ``LUT`` after sorting the vertices by
  degree (LAGraph's presort), ``L = tril(A, -1)`` and the reduction included;
* NetworKit (``setNumberOfThreads(T)``): ``TriangleEdgeScore`` (per-edge counts, summed)
  and ``LocalClusteringCoefficient(turbo=True)``;
* igraph: ``transitivity_undirected`` (counts the triangles and triples) and
  ``transitivity_local_undirected``.

Per graph and peer, graphsys and the peer's variants take ``--turns`` turns (graphsys,
variant 1, variant 2, ...); a figure is the median over turns, a peer's figure its fastest
variant's, the ratio the median of the per-turn ratios of that variant's time over
graphsys's. Peers are built one at a time and dropped after their turns (the 100M-edge
graph holds one peer's copy at a time). ``--out-of-core DIR`` instead counts the triangles
of the stored graph ``DIR`` (its ``sym`` index built when missing) out of core within
``--memory-limit``, once, with its peak anonymous RSS against that bound. Usage::

    NUMBA_NUM_THREADS=2 python benchmarks/mining/triangles.py --work DIR [--turns 5]
    python benchmarks/mining/triangles.py --out-of-core DIR/g --memory-limit 4GB
"""

from __future__ import annotations

import gc
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root

from benchmarks import harness

DATASETS = ("email-enron", "soc-slashdot0902")


def sym_index(path: Path) -> tuple[object, dict]:
    """The graph at ``path`` reopened with its ``sym`` index (built when missing, timed)."""
    from graphsys import open_graph
    from graphsys.storage.adjacency_index import build_index

    g = open_graph(path)
    built = {}
    if g.adjacency_index(None, "sym") is None:
        seconds, _ = harness.timed(lambda: build_index(g, ("sym",), memory_limit=4 << 30))
        built = {"index_seconds": round(seconds, 2)}
        g = open_graph(path)
        g.adjacency_index(None, "sym")  # mapped and checked once, outside the turns
    return g, built


def upper_edges(g):
    """``(n, rows, cols)``: the undirected simple graph's edges ``u < v`` (int64), from the
    ``sym`` index."""
    import numpy as np

    sym = g.adjacency_index(None, "sym")
    n = g.num_nodes()
    indptr = np.asarray(sym.indptr)
    cols = np.asarray(sym.indices).astype(np.int64)
    rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(indptr))
    up = rows < cols
    return n, rows[up], cols[up]


def graphblas_side(n, rows, cols, threads):
    import graphblas as gb
    import numpy as np

    gb.ss.config["nthreads"] = threads
    both_r, both_c = np.concatenate([rows, cols]), np.concatenate([cols, rows])
    A = gb.Matrix.from_coo(both_r, both_c, True, nrows=n, ncols=n, dtype=bool)
    del both_r, both_c
    plus_pair = gb.semiring.plus_pair

    def ll():
        L = gb.select.tril(A, -1).new()
        return int(L.mxm(L, plus_pair).new(mask=L.S).reduce_scalar().new().value)

    def lut():
        L = gb.select.tril(A, -1).new()
        U = gb.select.triu(A, 1).new()
        return int(L.mxm(U.T, plus_pair).new(mask=L.S).reduce_scalar().new().value)

    def lut_sorted():
        deg = A.reduce_rowwise(gb.monoid.plus["INT64"]).new()
        d = np.zeros(n, np.int64)
        idx, vals = deg.to_coo()
        d[idx] = vals
        p = np.argsort(d, kind="stable")
        S = A[p, p].new()
        L = gb.select.tril(S, -1).new()
        U = gb.select.triu(S, 1).new()
        return int(L.mxm(U.T, plus_pair).new(mask=L.S).reduce_scalar().new().value)

    return {"LL": ll, "LUT": lut, "LUT_presort": lut_sorted}, A


def networkit_side(n, rows, cols, threads):
    import networkit as nk
    import numpy as np

    nk.setNumberOfThreads(threads)
    G = nk.Graph(n)
    G.addEdges((rows.astype(np.uint64), cols.astype(np.uint64)))
    G.indexEdges()

    def edge_score():
        s = nk.sparsification.TriangleEdgeScore(G)
        s.run()
        return int(round(sum(s.scores()))) // 3

    def local_clustering():
        c = nk.centrality.LocalClusteringCoefficient(G, turbo=True)
        c.run()
        return None

    return {"TriangleEdgeScore": edge_score, "LocalClusteringCoefficient": local_clustering}, G


def igraph_side(n, rows, cols, threads):
    import itertools

    import igraph as ig

    # streamed as pairs of ints, a chunk converted at a time: from a 2-D array igraph
    # iterates numpy rows (~180 bytes an edge at once, 18 GB at 100M edges, and slow), and
    # add_edges per chunk re-sorts the whole graph each call
    step = 1 << 20
    G = ig.Graph(n=n, edges=itertools.chain.from_iterable(
        zip(rows[lo:lo + step].tolist(), cols[lo:lo + step].tolist())
        for lo in range(0, len(rows), step)))
    return {"transitivity_undirected": G.transitivity_undirected,
            "transitivity_local_undirected":
                lambda: G.transitivity_local_undirected(mode="zero")}, G


PEERS = {"graphblas": graphblas_side, "networkit": networkit_side, "igraph": igraph_side}


def compare(run, name: str, g, peers: list[str], threads: int, turns: int,
            only: set[str] = frozenset()) -> dict:
    from graphsys import mining

    n, rows, cols = upper_edges(g)
    row = {"graph": name, "nodes": n, "edges": len(rows)}

    def ours():
        return mining.triangle_count(g, threads=threads)

    count = ours()
    row["triangles"] = count
    row["peers"] = {}
    for peer in peers:
        try:
            variants, keep = PEERS[peer](n, rows, cols, threads)
        except ImportError as exc:
            run.missing(f"{name} {peer}", str(exc))
            continue
        variants = {v: fn for v, fn in variants.items() if not only or v in only}
        if not variants:
            continue
        harness.log(f"{name}: graphsys beside {peer}")
        for fn in variants.values():
            fn()  # warm
        sides = {"graphsys": lambda: harness.timed(ours)[0]}
        sides.update({v: (lambda fn=fn: harness.timed(fn)[0]) for v, fn in variants.items()})
        got = harness.alternate(sides, turns)
        fastest = min(variants, key=lambda v: harness.median(got[v]))
        row["peers"][peer] = {
            "graphsys_s": harness.spread(got["graphsys"]),
            "variants_s": {v: harness.spread(got[v]) for v in variants},
            "fastest": fastest,
            "ratio": harness.pair_ratios(got[fastest], got["graphsys"])}
        del variants, keep
        gc.collect()
    if row["peers"]:
        best = min(row["peers"], key=lambda p: row["peers"][p]["variants_s"][
            row["peers"][p]["fastest"]]["median"])
        row["fastest_peer"] = best
        row["ratio_vs_fastest"] = row["peers"][best]["ratio"]["median"]
    return row


def out_of_core(run, path: Path, memory_limit: int, threads: int) -> dict:
    from graphsys import mining
    from graphsys.memory import PeakMemory

    g, built = sym_index(path)
    with PeakMemory() as peak:
        seconds, stats = harness.timed(lambda: mining.triangle_stats(
            g, mode="out-of-core", memory_limit=memory_limit, threads=threads,
            progress=True))
    return {"graph": str(path), "nodes": g.num_nodes(), "stored_edges": g.num_edges(),
            "triangles": stats.count, "transitivity": stats.transitivity,
            "seconds": round(seconds, 2), "memory_limit": memory_limit, **built,
            **{f"ooc_{k}": v for k, v in peak.to_json().items()},
            "within_budget": peak.peak_anon <= memory_limit}


def main(argv: list[str] | None = None) -> int:
    ap = harness.parser(__doc__)
    ap.add_argument("--work", type=Path, default=Path("/tmp/bench-mining"),
                    help="where graphs are stored (default /tmp/bench-mining)")
    ap.add_argument("--datasets", default=",".join(DATASETS),
                    help=f"comma-separated registry datasets (default {','.join(DATASETS)})")
    ap.add_argument("--rmat-edges", type=harness.count, default=harness.count("100M"),
                    help="edges of the R-MAT graph (default 100M; 0: none)")
    ap.add_argument("--rmat-nodes", type=harness.count, default=harness.count("8Mi"),
                    help="its id space (default 8Mi, as the BSP benchmark's 100M graph)")
    ap.add_argument("--peers", default=",".join(PEERS),
                    help=f"comma-separated, of {', '.join(PEERS)}")
    ap.add_argument("--variants", default="",
                    help="comma-separated peer variants to run, e.g. LL,transitivity_undirected "
                         "(default: every variant of every peer)")
    ap.add_argument("--threads", type=int, default=2, help="threads of every side (2)")
    ap.add_argument("--turns", type=int, default=5, help="alternated turns (5)")
    ap.add_argument("--out-of-core", type=Path, metavar="DIR",
                    help="count the stored graph DIR out of core instead")
    ap.add_argument("--memory-limit", type=harness.size, default=harness.size("4GB"),
                    help="budget of --out-of-core (default 4GB)")
    harness.add_mirror_argument(ap)
    args = ap.parse_args(argv)
    harness.use_mirror(args.mirror)
    run = harness.Run("mining/triangles", args.record)
    if args.out_of_core is not None:
        run.emit(out_of_core=out_of_core(run, args.out_of_core, args.memory_limit,
                                         args.threads))
        return 0
    peers = [p for p in args.peers.split(",") if p]
    only = {v for v in args.variants.split(",") if v}
    rows = []
    for name in [d for d in args.datasets.split(",") if d]:
        stored = harness.dataset(run, name, args.work / name, partitions=4)
        if stored is None:
            continue
        g, built = sym_index(stored.path)
        rows.append({**compare(run, name, g, peers, args.threads, args.turns, only), **built})
    if args.rmat_edges:
        path, how = harness.rmat_graph(args.work, args.rmat_edges, args.rmat_nodes,
                                       partitions=8, memory_limit="4GB")
        g, built = sym_index(path)
        rows.append({**compare(run, f"rmat-{args.rmat_edges}", g, peers, args.threads,
                               args.turns, only), **built, **how})
    run.emit(threads=args.threads, turns=args.turns, graphs=rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
