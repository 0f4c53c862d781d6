#!/usr/bin/env python
"""Triangle counting, beside SuiteSparse:GraphBLAS, NetworKit and igraph on the same graphs.

Graphs: email-Enron and soc-Slashdot0902 (registry datasets through the mirror) and seeded
R-MAT graphs of ``--rmat-edges`` edges each (a comma list, e.g. ``2M,20M,100M``;
``graphsys.generators``, Graph500's a = 0.57, b = c = 0.19 over ``2**scale`` ids, the scale
``round(log2(edges / 16))`` as Graph500's edge factor 16 gives it, unless
``--rmat-nodes``); each with its undirected ``sym`` index (``graphsys index
--undirected``, built once and timed apart). Every side counts the triangles of the same
undirected simple graph, given as its edge list ``u < v`` (int64 arrays, from the index);
every count is checked equal to graphsys's (an assertion):

* graphsys (``mining.triangle_count(graph, threads=T)``), two ways: ``graphsys_cold``, the
  first count on a freshly opened graph (its index mapped before the clock starts: the
  degree order, the orientation and the count timed), and ``graphsys_warm``, a repeated
  count on the same opened graph (the oriented graph kept on it, the count alone);
* GraphBLAS (python-graphblas, ``nthreads = T``), LAGraph's ``LAGr_TriangleCount`` methods
  with ``L = tril(A, -1)`` and ``U = triu(A, 1)`` of the vertices renumbered by a presort
  (``desc``: descending degree, ``asc``: ascending, ``none``: the stored order): ``LL``
  (Sandia_LL, the masked saxpy ``C<L> = L plus_pair L``), ``LUT`` (Sandia_LUT, the masked
  dot ``C<L> = L plus_pair U'``) and ``UL`` (Sandia_ULT, ``C<U> = U plus_pair L'``);
  LAGraph's automatic presort sorts only a graph whose mean degree is over 4 times its
  median (ascending for LL and LUT, descending for UU and ULT); here each method runs with
  the presorts worth trying (``LL``: all three; ``LUT``: ascending and none; ``UL``:
  descending and none). Each variant is timed two ways: ``/prebuilt`` (L, U built outside
  the clock: the product and the reduction timed) and ``/built`` (the degrees, the
  renumbering and L (and U) from the edge list inside it);
* NetworKit (``setNumberOfThreads(T)``): ``TriangleEdgeScore`` (per-edge counts, summed)
  and ``LocalClusteringCoefficient(turbo=True)`` (its count from the coefficients);
* igraph (one thread: it has no threads setting): ``transitivity_undirected`` and
  ``transitivity_local_undirected`` (counts from the ratios and the degrees).

Per graph and peer, graphsys's two sides and the peer's variants take ``--turns`` turns
(graphsys cold, graphsys warm, variant 1, variant 2, ...); a figure is the median over
turns. Each variant's row gives its ratio against both graphsys sides (the variant's
median over graphsys's: above 1, graphsys is faster); the graph's row names the fastest
peer variant with L prebuilt (the stronger comparison) and the fastest with everything
built, and graphsys's ratio against each (warm against prebuilt, cold against built, and
cold against prebuilt). Peers are built one at a time and dropped after their turns (the
100M-edge graph holds one peer's copy at a time). ``--out-of-core DIR`` instead counts the
triangles of the stored graph ``DIR`` (its ``sym`` index built when missing) out of core
within ``--memory-limit``, once, with its peak anonymous RSS against that bound. Usage::

    NUMBA_NUM_THREADS=2 python benchmarks/mining/triangles.py --work DIR [--turns 5] \
        [--rmat-edges 2M,20M,100M]
    python benchmarks/mining/triangles.py --out-of-core DIR/g --memory-limit 4GB
"""

from __future__ import annotations

import gc
import math
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


#: The presorts each LAGraph method runs with (``--variants`` picks among them).
PRESORTS = {"LL": ("desc", "asc", "none"), "LUT": ("asc", "none"), "UL": ("desc", "none")}


def presorted(n, rows, cols, how: str):
    """The edge list with its vertices renumbered by degree: ``desc`` (the highest degree
    first), ``asc`` or ``none`` (as stored); ties by id."""
    import numpy as np

    if how == "none":
        return rows, cols
    degree = np.bincount(rows, minlength=n) + np.bincount(cols, minlength=n)
    order = np.argsort(-degree if how == "desc" else degree, kind="stable")
    rank = np.empty(n, np.int64)
    rank[order] = np.arange(n, dtype=np.int64)
    return rank[rows], rank[cols]


def triangular(n, rows, cols, lower: bool):
    """``tril(A, -1)`` (``lower``) or ``triu(A, 1)`` of the symmetric ``A`` of the edges,
    built from the edge list (each edge once)."""
    import graphblas as gb
    import numpy as np

    hi, lo = np.maximum(rows, cols), np.minimum(rows, cols)
    r, c = (hi, lo) if lower else (lo, hi)
    return gb.Matrix.from_coo(r, c, True, nrows=n, ncols=n, dtype=bool)


def graphblas_side(n, rows, cols, threads):
    import graphblas as gb

    gb.ss.config["nthreads"] = threads
    plus_pair = gb.semiring.plus_pair["INT64"]
    plus = gb.monoid.plus["INT64"]

    def count(method: str, L, U) -> int:
        if method == "LL":  # Sandia_LL: the masked saxpy
            C = L.mxm(L, plus_pair).new(mask=L.S)
        elif method == "LUT":  # Sandia_LUT: masked dot products
            C = L.mxm(U.T, plus_pair).new(mask=L.S)
        else:  # Sandia_ULT
            C = U.mxm(L.T, plus_pair).new(mask=U.S)
        return int(C.reduce_scalar(plus).new().value)

    def built(method: str, how: str) -> int:
        r, c = presorted(n, rows, cols, how)
        L = triangular(n, r, c, True)
        U = triangular(n, r, c, False) if method != "LL" else None
        return count(method, L, U)

    prebuilt: dict[str, tuple] = {}  # per presort: (L, U), built once, outside the clock

    def ready(how: str):
        if how not in prebuilt:
            r, c = presorted(n, rows, cols, how)
            prebuilt[how] = (triangular(n, r, c, True), triangular(n, r, c, False))
        return prebuilt[how]

    variants = {}
    for method, sorts in PRESORTS.items():
        for how in sorts:
            name = f"{method}/{how}"
            variants[f"{name}/prebuilt"] = (
                lambda m=method, h=how: count(m, *ready(h)), int, lambda h=how: ready(h))
            variants[f"{name}/built"] = (lambda m=method, h=how: built(m, h), int, None)
    return variants, prebuilt


def networkit_side(n, rows, cols, threads):
    import networkit as nk
    import numpy as np

    nk.setNumberOfThreads(threads)
    G = nk.Graph(n)
    G.addEdges((rows.astype(np.uint64), cols.astype(np.uint64)))
    G.indexEdges()
    pairs = node_pairs(n, rows, cols)

    def edge_score():
        s = nk.sparsification.TriangleEdgeScore(G)
        s.run()
        return s

    def local_clustering():
        c = nk.centrality.LocalClusteringCoefficient(G, turbo=True)
        c.run()
        return c

    return {"TriangleEdgeScore": (edge_score, lambda s: int(round(
                np.asarray(s.scores()).sum())) // 3, None),
            "LocalClusteringCoefficient": (local_clustering, lambda c: int(round(
                (np.asarray(c.scores()) * pairs).sum() / 3)), None)}, G


def node_pairs(n, rows, cols):
    """float64 (N,) ``d (d - 1) / 2`` per node: its connected triples."""
    import numpy as np

    d = (np.bincount(rows, minlength=n) + np.bincount(cols, minlength=n)).astype(np.float64)
    return d * (d - 1) / 2


def igraph_side(n, rows, cols, threads):
    import itertools

    import igraph as ig
    import numpy as np

    # streamed as pairs of ints, a chunk converted at a time: from a 2-D array igraph
    # iterates numpy rows (~180 bytes an edge at once, 18 GB at 100M edges, and slow), and
    # add_edges per chunk re-sorts the whole graph each call
    step = 1 << 20
    G = ig.Graph(n=n, edges=itertools.chain.from_iterable(
        zip(rows[lo:lo + step].tolist(), cols[lo:lo + step].tolist())
        for lo in range(0, len(rows), step)))
    pairs = node_pairs(n, rows, cols)
    return {"transitivity_undirected": (G.transitivity_undirected, lambda t: int(round(
                t * pairs.sum() / 3)), None),
            "transitivity_local_undirected": (
                lambda: G.transitivity_local_undirected(mode="zero"),
                lambda c: int(round((np.asarray(c) * pairs).sum() / 3)), None)}, G


PEERS = {"graphblas": graphblas_side, "networkit": networkit_side, "igraph": igraph_side}


def graphsys_sides(path: Path, threads: int) -> tuple[dict, int]:
    """graphsys's two sides (seconds per call) and the count: ``graphsys_cold``, the first
    count on a freshly opened graph (opened and its index mapped before the clock), and
    ``graphsys_warm``, a repeated count on one opened graph."""
    from graphsys import mining, open_graph
    from graphsys.views import cache as view_cache

    def fresh():
        g = open_graph(path)
        g.adjacency_index(None, "sym")
        return g

    warm = fresh()
    count = mining.triangle_count(warm, threads=threads)
    got = {"count": count}

    def cold() -> float:
        g = fresh()
        seconds, n = harness.timed(lambda: mining.triangle_count(g, threads=threads))
        got["count"] = n
        view_cache.forget(g)  # now, not when a collection reaches the Graph's cycles
        return seconds

    def again() -> float:
        seconds, n = harness.timed(lambda: mining.triangle_count(warm, threads=threads))
        got["count"] = n
        return seconds

    def checked(side):
        def run():
            seconds = side()
            assert got["count"] == count, f"graphsys counted {got['count']}, then {count}"
            return seconds
        return run

    return {"graphsys_cold": checked(cold), "graphsys_warm": checked(again)}, count


def timed_variant(name: str, run, count_of, want: int):
    """A side that times ``run()`` and asserts its count (taken outside the clock)."""
    def side() -> float:
        seconds, raw = harness.timed(run)
        got = count_of(raw)
        assert got == want, f"{name} counted {got} triangles, graphsys {want}"
        return seconds
    return side


def compare(run, name: str, path: Path, peers: list[str], threads: int, turns: int,
            only: set[str] = frozenset()) -> dict:
    from graphsys import open_graph

    g = open_graph(path)
    n, rows, cols = upper_edges(g)
    ours, count = graphsys_sides(path, threads)
    row = {"graph": name, "nodes": n, "edges": len(rows), "triangles": count, "peers": {}}
    for peer in peers:
        try:
            variants, keep = PEERS[peer](n, rows, cols, threads)
        except ImportError as exc:
            run.missing(f"{name} {peer}", str(exc))
            continue
        variants = {v: f for v, f in variants.items()
                    if not only or any(v == o or v.startswith(o + "/") for o in only)}
        if not variants:
            continue
        harness.log(f"{name}: graphsys beside {peer} ({len(variants)} variants)")
        for _, _, prepare in variants.values():
            if prepare is not None:
                prepare()  # prebuilt structures, outside the clock
        sides = dict(ours)
        sides.update({v: timed_variant(v, f, c, count) for v, (f, c, _) in variants.items()})
        for side in sides.values():
            side()  # warm, and the counts checked once
        got = harness.alternate(sides, turns)
        row["peers"][peer] = peer_row(got, list(variants))
        del variants, keep
        gc.collect()
    row.update(headline(row["peers"]))
    return row


def peer_row(got: dict, variants: list[str]) -> dict:
    """One peer's figures: graphsys's two sides and each variant's, with its ratios."""
    out = {side: harness.spread(got[side]) for side in ("graphsys_cold", "graphsys_warm")}
    out["variants_s"] = {}
    for v in variants:
        out["variants_s"][v] = {
            **harness.spread(got[v]),
            "ratio_vs_cold": harness.pair_ratios(got[v], got["graphsys_cold"])["median"],
            "ratio_vs_warm": harness.pair_ratios(got[v], got["graphsys_warm"])["median"]}
    return out


def headline(peers: dict) -> dict:
    """The fastest peer variant with its structure prebuilt (GraphBLAS's ``/prebuilt``,
    and every NetworKit and igraph variant: their graphs are built outside the clock) and
    the fastest with everything built, and graphsys's ratios against each."""
    prebuilt, built = [], []
    for peer, p in peers.items():
        for v, fig in p["variants_s"].items():
            entry = (fig["median"], f"{peer} {v}", p)
            (built if v.endswith("/built") else prebuilt).append(entry)
            if not v.endswith("/prebuilt") and not v.endswith("/built"):
                built.append(entry)
    out = {}
    for label, pool, ours in (("prebuilt", prebuilt, "graphsys_warm"),
                              ("built", built, "graphsys_cold")):
        if not pool:
            continue
        seconds, which, p = min(pool, key=lambda e: e[0])
        out[f"fastest_{label}"] = which
        out[f"fastest_{label}_s"] = seconds
        out[f"ratio_{label}"] = round(seconds / p[ours]["median"], 3)
        if label == "prebuilt":
            out["ratio_prebuilt_vs_cold"] = round(seconds / p["graphsys_cold"]["median"], 3)
    return out


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


def graph500_nodes(edges: int) -> int:
    """The id space of an R-MAT of ``edges`` edges at Graph500's edge factor 16:
    ``2**round(log2(edges / 16))``.

    >>> graph500_nodes(2_000_000), graph500_nodes(20_000_000), graph500_nodes(100_000_000)
    (131072, 1048576, 8388608)
    """
    return 1 << max(1, round(math.log2(max(edges, 32) / 16)))


def main(argv: list[str] | None = None) -> int:
    ap = harness.parser(__doc__)
    ap.add_argument("--work", type=Path, default=Path("/tmp/bench-mining"),
                    help="where graphs are stored (default /tmp/bench-mining)")
    ap.add_argument("--datasets", default=",".join(DATASETS),
                    help=f"comma-separated registry datasets (default {','.join(DATASETS)})")
    ap.add_argument("--rmat-edges", type=harness.counts, default=harness.counts("2M"),
                    help="edges of each R-MAT graph, comma-separated (default 2M; e.g. "
                         "2M,20M,100M; 0: none)")
    ap.add_argument("--rmat-nodes", type=harness.count, default=None,
                    help="their id space (default 2**scale, Graph500's edge factor 16: "
                         "128Ki ids at 2M edges, 1Mi at 20M, 8Mi at 100M)")
    ap.add_argument("--peers", default=",".join(PEERS),
                    help=f"comma-separated, of {', '.join(PEERS)}")
    ap.add_argument("--variants", default="",
                    help="comma-separated peer variants to run, or their prefixes, e.g. "
                         "LL/desc,LUT,transitivity_undirected (default: every variant)")
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
        _, built = sym_index(stored.path)
        rows.append({**compare(run, name, stored.path, peers, args.threads, args.turns,
                               only), **built})
    for edges in [e for e in args.rmat_edges if e]:
        nodes = args.rmat_nodes or graph500_nodes(edges)
        path, how = harness.rmat_graph(args.work, edges, nodes, partitions=8,
                                       memory_limit="4GB")
        _, built = sym_index(path)
        rows.append({**compare(run, f"rmat-{edges}", path, peers, args.threads, args.turns,
                               only), "rmat_ids": nodes,
                     "rmat_scale": round(math.log2(nodes), 2),
                     "rmat_edge_factor": round(edges / nodes, 2), **built, **how})
    run.emit(threads=args.threads, turns=args.turns, graphs=rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
