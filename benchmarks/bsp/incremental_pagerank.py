#!/usr/bin/env python
"""PageRank after a small append or deletion: the delta push from the result before it
(``init=``, :mod:`graphsys.bsp.incremental_pagerank`) beside a run from scratch and a warm
start, for each ``--appends`` share (0.1 % and 1 %).

The graph: ``--edges`` (2M) seeded R-MAT edges over ``--nodes`` (2**18) ids
(:func:`graphsys.generators.rmat_edges`, Graph500's a, b, c), ingested; PageRank to
``--tol`` is run on it and written as a Parquet result, and its CSR index stored
(``graphsys index --csr``, which the delta push maps). For each share a copy of the graph
gets that many more edges of the same R-MAT stream as edge set ``day2``; on it, in
alternated turns (``--turns``, medians quoted), in process, each call opening the graph
afresh: **scratch** ``bsp.pagerank(g, tol=)``, **delta** the same call with ``init=``
the result from before (reading it is part of the time; the run chooses the delta push or
the warm start by their estimated costs) and **warm** the same call with the delta push
turned off (the power iteration from the previous ranks, what the choice weighs the push
against). Figures: seconds of each side, ``ratio`` scratch / delta, ``ratio_warm`` warm /
delta, how the delta run started (``stats.start``; above
:data:`~graphsys.bsp.incremental_pagerank.DELTA_MAX_FRACTION` it takes the warm start), its
method (the push's rounds, or why it did not push), its residual bound, the work it
counted, the L1 difference of the delta and scratch rank vectors and the load average.

``--delete``: each share is deleted instead (that many distinct pairs drawn uniformly from
the graph's edges, every parallel edge with them: ``delete_edges``), and the push carries
the signed residual of the deletions; ``--pairs 10,100,1000`` deletes those counts of pairs
(instead of shares). ``--grid SIDE``: the graph is a SIDE x SIDE grid with edges both ways
(a slowly mixing graph, where a change stays local longer; appends are uniform shortcuts)
instead of the R-MAT. ``--suite``: both graphs in one command, the grid (``--grid``, 500
unless given) and then the R-MAT, each with ``--pairs`` (10, 100 and 1000 unless given)
deleted, one JSON line per graph and a table of the ratios at the end. Usage::

    NUMBA_NUM_THREADS=2 python benchmarks/bsp/incremental_pagerank.py --work DIR
        [--edges 20M --nodes 2M] [--appends 0.001,0.01] [--turns 3]
    NUMBA_NUM_THREADS=2 python benchmarks/bsp/incremental_pagerank.py --work DIR --delete
        [--grid 1000] [--appends 0.00001,0.0001,0.001 | --pairs 10,100,1000]
    NUMBA_NUM_THREADS=2 python benchmarks/bsp/incremental_pagerank.py --work DIR --suite
        [--turns 3]
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root

import numpy as np

from benchmarks import harness
from benchmarks.bsp.incremental import _split
from graphsys.openmp import apply_wait_policy

apply_wait_policy()


def main(argv: list[str] | None = None) -> int:
    ap = harness.parser(__doc__)
    ap.add_argument("--work", type=Path, default=Path("/tmp/bench-incremental-pagerank"))
    ap.add_argument("--edges", type=harness.count, default=2_000_000)
    ap.add_argument("--nodes", type=harness.count, default=1 << 18)
    ap.add_argument("--appends", default="0.001,0.01", help="shares of --edges, comma-separated")
    ap.add_argument("--delete", action="store_true",
                    help="delete the shares' pairs (drawn from the graph's) instead of "
                         "appending edges")
    ap.add_argument("--pairs", type=harness.counts, default=None,
                    help="delete these counts of pairs (comma-separated) instead of shares")
    ap.add_argument("--grid", type=int, default=0, metavar="SIDE",
                    help="a SIDE x SIDE grid (edges both ways) instead of the R-MAT")
    ap.add_argument("--suite", action="store_true",
                    help="the grid and the R-MAT, --pairs (10,100,1000) deleted on each")
    ap.add_argument("--tol", type=float, default=1e-6)
    ap.add_argument("--turns", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    if args.suite:
        args.delete, args.pairs = True, args.pairs or [10, 100, 1000]
        grids = [args.grid or 500, 0]
    else:
        args.delete = args.delete or args.pairs is not None
        grids = [args.grid]
    table = []
    for side in grids:
        args.grid = side
        table += _graph(args, args.work / (f"grid-{side}" if side else "rmat"))
    for line in table:
        harness.log(line)
    return 0


def _graph(args, work: Path) -> list[str]:
    """The runs on one graph (module docstring); emits its JSON line, returns its rows of
    the table of ratios."""
    import pyarrow.parquet as pq

    import graphsys
    from graphsys import bsp
    from graphsys.generators import write_edges
    from graphsys.storage.adjacency_index import build_index

    run = harness.Run("bsp/incremental_pagerank", args.record)
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    shares = [float(s) for s in args.appends.split(",")]
    first, rest = _edges(args, shares)
    if args.pairs:
        shares = [k / len(first["src"]) for k in args.pairs]
    write_edges([first], work / "day1.parquet", overwrite=True)
    g = graphsys.ingest(work / "day1.parquet", work / "base", seed=args.seed)
    build_index(g, ("csr",))  # the delta push maps the previous edges' CSR (no build)
    prev = work / "pagerank-before.parquet"
    pq.write_table(bsp.pagerank(g, tol=args.tol).to_table(), prev)
    kind = f"grid {args.grid}x{args.grid}" if args.grid else f"R-MAT {len(first['src']):,}"
    rows, table = {}, []
    for share in shares:
        graph = work / f"g-{share:g}"
        shutil.copytree(work / "base", graph)
        changed = _change(graph, args, share, first, rest)
        key = (f"delete_{changed['deleted_pairs']}_pairs" if args.pairs else
               f"{'delete' if args.delete else 'append'}_{share:g}")
        rows[key] = {**changed, **_sides(graph, prev, args.tol, args.turns)}
        row = rows[key]
        size = (f"{changed['deleted_pairs']:,} pairs deleted" if args.delete
                else f"{changed['appended_edges']:,} edges appended")
        table.append(f"{kind}, {size}: {row['start']}, {row['ratio']['median']}x scratch, "
                     f"{row['ratio_warm']['median']}x warm")
        harness.log(f"{key}: scratch {row['scratch_s']['median']:.3f} s, warm "
                    f"{row['warm_s']['median']:.3f} s, {row['start']} "
                    f"{row['delta_s']['median']:.3f} s ({row['method_delta']})")
    run.emit(graph={"edges": len(first["src"]), "nodes": g.num_nodes(), "seed": args.seed,
                    "kind": f"grid {args.grid}x{args.grid}" if args.grid else "rmat"},
             tol=args.tol, turns=args.turns, **rows)
    return table


def _sides(graph: Path, prev: Path, tol: float, turns: int) -> dict:
    """Scratch, warm and delta on the changed ``graph`` in alternated turns."""
    import graphsys
    from graphsys import bsp
    from graphsys.bsp import incremental_pagerank

    def scratch():
        return bsp.pagerank(graphsys.open_graph(graph), tol=tol)

    def delta():
        return bsp.pagerank(graphsys.open_graph(graph), tol=tol, init=prev)

    def warm():  # the delta push turned off: the run starts warm
        keep = incremental_pagerank.DELTA_MAX_FRACTION
        incremental_pagerank.DELTA_MAX_FRACTION = -1.0
        try:
            return delta()
        finally:
            incremental_pagerank.DELTA_MAX_FRACTION = keep

    delta(), warm()  # compiles the push kernels once, outside the turns
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    turns = harness.alternate({"scratch": lambda: harness.timed(scratch),
                               "warm": lambda: harness.timed(warm),
                               "delta": lambda: harness.timed(delta)}, turns)
    a, w, b = ([s for s, _ in turns[k]] for k in ("scratch", "warm", "delta"))
    ra, rb = turns["scratch"][-1][1], turns["delta"][-1][1]
    return {"scratch_s": harness.spread(a), "warm_s": harness.spread(w),
            "delta_s": harness.spread(b), "ratio": harness.pair_ratios(a, b),
            "ratio_warm": harness.pair_ratios(w, b), "start": rb.stats.start,
            "method_delta": rb.stats.method, "method_scratch": ra.stats.method,
            "method_warm": turns["warm"][-1][1].stats.method,
            "residual_bound": rb.stats.residual,
            "edges_scanned_delta": rb.stats.totals()["edges_scanned"],
            "edges_scanned_scratch": ra.stats.totals()["edges_scanned"],
            "l1_difference": float(np.abs(ra.values - rb.values).sum()),
            "load_average": [round(load, 2), round(os.getloadavg()[0], 2)],
            "turns_s": round(time.perf_counter() - t0, 1)}


def _edges(args, shares) -> tuple[dict, dict]:
    """The graph's edges and the stream of edges to append, as {"src", "dst"} arrays."""
    from graphsys.generators import rmat_edges

    edges = 4 * args.grid * (args.grid - 1) if args.grid else args.edges
    most = int(round(edges * max(shares)))
    if args.grid:
        ids = np.arange(args.grid ** 2).reshape(args.grid, args.grid)
        a, b = [ids[:, :-1], ids[:-1]], [ids[:, 1:], ids[1:]]
        first = {"src": np.concatenate([x.ravel() for x in a + b]),
                 "dst": np.concatenate([x.ravel() for x in b + a])}
        rng = np.random.default_rng(args.seed)  # appended: uniform shortcuts
        return first, {k: rng.integers(0, ids.size, most) for k in ("src", "dst")}
    first, rest = _split(rmat_edges(args.nodes, args.edges + most, seed=args.seed),
                         args.edges)
    return ({k: np.concatenate([c[k] for c in first]) for k in ("src", "dst")},
            {k: np.concatenate([c[k] for c in rest]) for k in ("src", "dst")})


def _change(graph: Path, args, share: float, first: dict, rest: dict) -> dict:
    """Append ``share`` of the edges as ``day2``, or (``--delete``) delete that many
    distinct pairs drawn uniformly from the graph's."""
    import graphsys
    from graphsys.generators import write_edges
    from graphsys.storage.changes import delete_edges

    k = int(round(len(first["src"]) * share))  # (--pairs: the count given)
    if args.delete:
        pairs = np.unique(np.stack([first["src"], first["dst"]], 1), axis=0)
        pick = pairs[np.random.default_rng(args.seed).choice(len(pairs), k, replace=False)]
        report = delete_edges(graph, pick[:, 0], pick[:, 1])
        return {"deleted_pairs": k, "deleted_edges": report.edges}
    write_edges([{key: v[:k] for key, v in rest.items()}], graph.parent / "day2.parquet",
                overwrite=True)
    graphsys.ingest(graph.parent / "day2.parquet", graph, append=True, edge_set="day2")
    return {"appended_edges": k}


if __name__ == "__main__":
    sys.exit(main())
