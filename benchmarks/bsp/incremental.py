#!/usr/bin/env python
"""Runs started from the result before an append (``init=``) beside runs from scratch on
the grown graph: PageRank, WCC and BFS after a 1 % append to an R-MAT graph.

The graph: ``--edges`` (20M) seeded R-MAT edges over ``--nodes`` (2**21) ids
(:func:`graphsys.generators.rmat_edges`, Graph500's a, b, c, directed, duplicates and
self-loops kept), ingested with ``--partitions`` partitions; PageRank (``--tol``), WCC and
BFS (from the highest out-degree vertex) are run on it and written as Parquet results.
Then ``--append`` (1 %) more edges of the same stream (the same R-MAT process, the next
independent draws; new nodes among them where the id space allows) are appended as edge set
``day2``, which joins the default view. On the grown graph, in alternated turns
(``--turns``, medians quoted):

* **scratch**: ``bsp.pagerank(g, tol=)``, ``bsp.wcc(g)``, ``bsp.bfs(g, s)``: every engine
  default (in memory, numba; WCC by Afforest, BFS direction-optimizing);
* **started**: the same calls with ``init=`` the Parquet result from before the append
  (reading and matching it by original id is part of the time): PageRank's power iteration
  from the old ranks (the engine's ``mode="auto"`` streams the edges when the old run
  took few supersteps: ``mode_started``), WCC by union-find over the new edges only, BFS
  repaired from the old levels;
* PageRank only, **scratch streamed**: the run from scratch told ``mode="out-of-core"``,
  what a run from scratch would cost had it chosen to stream (``ratio_streamed``: it /
  started), and ``streamed_vs_pulled_superstep``: a streamed superstep's seconds over an
  in-memory one's (medians of the last turn's supersteps after the first).

Each call opens the graph afresh (as ``graphsys run`` does), so neither side reuses what a
:class:`~graphsys.storage.graph.Graph` keeps between calls (the original ids it read).

Figures: wall seconds of each side (and the last turn's setup seconds, the engine's layout
build that both sides pay), ``ratio`` scratch / started (> 1: starting is faster),
PageRank's supersteps on each side and the L1 and max difference of the two rank vectors
(both stop when the L1 change is below ``--tol``); WCC and BFS: whether the two results are
identical.

With ``--changes``: WCC, BFS, PageRank (``--tol``) and k-core (``--algorithms``: those of
them to run) started from the result before a
change of *deletions and insertions* beside runs from scratch, on ``--rmat-edges`` (2M)
R-MAT edges over the power of two nearest ``--rmat-edges / 8`` ids, ingested with stored
CSR and CSC indexes (``graphsys index --csr --csc``), for each fraction of ``--fractions``
(0.1 % and 1 %): a copy of that graph loses half the fraction of its edges (distinct pairs
drawn uniformly from its edges, deleted with every parallel edge: ``delete_edges``) and
gains the other half (the next R-MAT draws, appended as ``day2``). ``--graph FILE``: the
edges of an edge list instead (ingested as listed, directed), which gains new pairs of its
nodes drawn uniformly. The repair reads the old
edges' mapped indexes through the deletions (:mod:`graphsys.bsp.incremental_changes`); a
run from scratch would read the changed view's adjacency from the same indexes through
the change sets (:func:`graphsys.storage.csr.merged_index`), but the appended ``day2`` has
none, so it builds the view from its buckets. Each side is timed in process
(``bsp.wcc(g, init=PREV)``, opening the graph afresh each call) and as a whole command
(``python -m graphsys run wcc DIR --out OUT --init PREV`` against ``--init none``, process
start and import included), alternated,
medians of ``--turns``; ``identical``: the two answers equal (PageRank's:
``l1_difference``, both to ``--tol``), ``start``: what the started run did (``repair`` or
``scratch``; PageRank's ``delta`` or ``warm``). k-core's update
(:mod:`graphsys.bsp.incremental_cores`) applies each deleted copy and each appended edge
by the order-based core maintenance over the old edges' mapped indexes, keeping the
k-order the result before the change stored; its scratch side peels the
changed view.

Usage::

    NUMBA_NUM_THREADS=2 python benchmarks/bsp/incremental.py --work DIR [--edges 20M]
        [--append 1%] [--turns 3]
    NUMBA_NUM_THREADS=2 python benchmarks/bsp/incremental.py --changes --work DIR
        [--rmat-edges 20M | --graph EDGE_LIST] [--fractions 0.001,0.01] [--turns 3]
        [--algorithms kcore]
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root

import numpy as np

from benchmarks import harness
from graphsys.openmp import apply_wait_policy

apply_wait_policy()


#: The algorithms ``--changes`` runs
CHANGED = ("wcc", "bfs", "pagerank", "kcore")


def _split(chunks, first: int):
    """(the first ``first`` edges of a chunk stream, the rest) as two chunk lists."""
    head, tail, seen = [], [], 0
    for c in chunks:
        k = max(0, min(len(c["src"]), first - seen))
        seen += len(c["src"])
        if k:
            head.append({key: v[:k] for key, v in c.items()})
        if k < len(c["src"]):
            tail.append({key: v[k:] for key, v in c.items()})
    return head, tail


def _superstep_s(result) -> float:
    """The median seconds of a run's supersteps after the first."""
    return harness.median(sum(s.seconds.values()) for s in result.stats.supersteps[1:])


def main(argv: list[str] | None = None) -> int:
    ap = harness.parser(__doc__)
    ap.add_argument("--work", type=Path, default=Path("/tmp/bench-incremental"))
    ap.add_argument("--edges", type=harness.count, default=20_000_000)
    ap.add_argument("--nodes", type=harness.count, default=1 << 21)
    ap.add_argument("--append", type=float, default=0.01, help="fraction of --edges (0.01)")
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--tol", type=float, default=1e-6)
    ap.add_argument("--turns", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--changes", action="store_true",
                    help="deletions and insertions, WCC and BFS (see above)")
    ap.add_argument("--rmat-edges", type=harness.count, default=2_000_000,
                    help="--changes: R-MAT edges (2M)")
    ap.add_argument("--fractions", default="0.001,0.01",
                    help="--changes: the changed fractions of the edges, half deleted and "
                         "half inserted (0.001,0.01)")
    ap.add_argument("--graph", type=Path, default=None,
                    help="--changes: an edge list (the dataset mirror's "
                         "snap/ca-GrQc.txt.gz) instead of R-MAT edges; new pairs of its "
                         "nodes are appended")
    ap.add_argument("--algorithms", default=",".join(CHANGED),
                    help=f"--changes: those of {','.join(CHANGED)} to run (all)")
    args = ap.parse_args(argv)
    if args.changes:
        return changes(args)

    import pyarrow.parquet as pq

    import graphsys
    from graphsys import bsp
    from graphsys.generators import rmat_edges, write_edges

    run = harness.Run("bsp/incremental", args.record)
    work = args.work
    graph = work / "g"
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    added = int(round(args.edges * args.append))
    harness.log(f"R-MAT {args.edges:,} edges over {args.nodes:,} ids, + {added:,}")
    t0 = time.perf_counter()
    # one stream of R-MAT edges (independent draws of one graph process): its last edges
    # are the day appended
    first, rest = _split(rmat_edges(args.nodes, args.edges + added, seed=args.seed),
                         args.edges)
    base, day2 = work / "day1.parquet", work / "day2.parquet"
    write_edges(first, base, overwrite=True)
    write_edges(rest, day2, overwrite=True)
    del first, rest
    g = graphsys.ingest(base, graph, partitions=args.partitions, seed=args.seed)
    ingest_s = time.perf_counter() - t0
    source = int(g.node_ids()[int(np.argmax(g.degrees(direction="out")))])
    prev = {}
    for name, fn in {"pagerank": lambda: bsp.pagerank(g, tol=args.tol),
                     "wcc": lambda: bsp.wcc(g), "bfs": lambda: bsp.bfs(g, source)}.items():
        prev[name] = work / f"{name}-before.parquet"
        pq.write_table(fn().to_table(), prev[name])
    t1 = time.perf_counter()
    g, report = graphsys.ingest(day2, graph, append=True, edge_set="day2",
                                return_report=True)
    append_s = time.perf_counter() - t1
    harness.log(f"appended {added:,} edges ({append_s:.1f} s); alternating {args.turns} turns")

    def fresh():  # each call opens the graph, as a command does: no per-Graph cache carries
        return graphsys.open_graph(graph)

    calls = {
        "pagerank": (lambda: bsp.pagerank(fresh(), tol=args.tol),
                     lambda: bsp.pagerank(fresh(), tol=args.tol, init=prev["pagerank"]),
                     lambda: bsp.pagerank(fresh(), tol=args.tol, mode="out-of-core")),
        "wcc": (lambda: bsp.wcc(fresh()), lambda: bsp.wcc(fresh(), init=prev["wcc"])),
        "bfs": (lambda: bsp.bfs(fresh(), source),
                lambda: bsp.bfs(fresh(), source, init=prev["bfs"])),
    }
    rows = {}
    for name, (scratch, started, *streamed) in calls.items():
        turns = harness.alternate({"scratch": lambda f=scratch: harness.timed(f),
                                   "started": lambda f=started: harness.timed(f),
                                   "scratch_streamed": (lambda f=streamed[0]: harness.timed(f))
                                   if streamed else None}, args.turns)
        a = [s for s, _ in turns["scratch"]]
        b = [s for s, _ in turns["started"]]
        ra, rb = turns["scratch"][-1][1], turns["started"][-1][1]
        row = {"scratch_s": harness.spread(a), "started_s": harness.spread(b),
               # the engine's layout build of the grown view (CSR/CSC, push), in both sides
               "setup_scratch_s": round(ra.stats.setup_seconds, 3),
               "setup_started_s": round(rb.stats.setup_seconds, 3),
               "ratio": harness.pair_ratios(a, b), "method_scratch": ra.stats.method,
               "method_started": rb.stats.method}
        if name == "pagerank":
            c = [s for s, _ in turns["scratch_streamed"]]
            row.update(scratch_streamed_s=harness.spread(c),
                       ratio_streamed=harness.pair_ratios(c, b),
                       mode_started=rb.stats.mode,
                       streamed_vs_pulled_superstep=round(
                           _superstep_s(turns["scratch_streamed"][-1][1])
                           / _superstep_s(ra), 2),supersteps_scratch=ra.stats.num_supersteps,
                       supersteps_started=rb.stats.num_supersteps,
                       l1_difference=float(np.abs(ra.values - rb.values).sum()),
                       max_difference=float(np.abs(ra.values - rb.values).max()))
        else:
            row["identical"] = bool(np.array_equal(ra.values, rb.values))
        rows[name] = row
        harness.log(f"{name}: scratch {row['scratch_s']['median']:.2f} s, started "
                    f"{row['started_s']['median']:.2f} s ({row['ratio']['median']}x)")
    run.emit(graph={"edges": args.edges, "nodes": g.num_nodes(), "appended_edges": added,
                    "new_nodes": report.nodes, "partitions": args.partitions,
                    "seed": args.seed, "bfs_source": source},
             ingest_s=round(ingest_s, 1), append_s=round(append_s, 1), tol=args.tol,
             turns=args.turns, **rows)
    return 0


def _command(args: list[str]) -> float:
    """Wall seconds of ``python -m graphsys ARGS`` (the repository first on its path)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(harness.REPO), *filter(None, [os.environ.get("PYTHONPATH")])]))
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "graphsys", *args], check=True, env=env,
                   stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def _change(graph: Path, rest: list, fraction: float, edges: int, seed: int,
            undirected: bool = False) -> dict:
    """Delete half of ``fraction`` of the graph's edges (distinct pairs) and append the
    other half from ``rest`` (the next R-MAT draws; ``undirected``: to an undirected edge
    set)."""
    import graphsys
    from graphsys.generators import write_edges
    from graphsys.storage.changes import delete_edges

    g = graphsys.open_graph(graph)
    n = g.num_nodes()
    # the distinct pairs as one int64 key each (a sort of E keys, not of E rows: 20M edges)
    pairs = np.unique(np.concatenate([s.astype(np.int64) * n + d
                                      for s, d, _, _ in g.iter_edges()]))
    k = max(1, int(round(fraction * edges / 2)))
    pick = pairs[np.random.default_rng(seed).choice(len(pairs), k, replace=False)]
    ids = g.node_ids()
    t0 = time.perf_counter()
    report = delete_edges(graph, ids[pick // n], ids[pick % n])
    day2, _ = _split(rest, k)
    write_edges(day2, graph.parent / "day2.parquet", overwrite=True)
    graphsys.ingest(graph.parent / "day2.parquet", graph, append=True, edge_set="day2",
                    undirected=undirected)
    return {"deleted_pairs": k, "deleted_edges": report.edges, "inserted": k,
            "change_s": round(time.perf_counter() - t0, 1)}


def _sides(name: str, graph: Path, prev: Path, source, turns: int, tol: float) -> dict:
    """One algorithm started from ``prev`` and from scratch, in process and as a command."""
    import graphsys
    from graphsys import bsp

    def call(init):
        g = graphsys.open_graph(graph)
        if name == "pagerank":
            return bsp.pagerank(g, tol=tol, init=init)
        if name == "kcore":
            return bsp.kcore(g, init=init)
        return bsp.wcc(g, init=init) if name == "wcc" else bsp.bfs(g, source, init=init)

    out = graph.parent / f"{name}-out.parquet"
    cmd = ["run", name, str(graph), *(["--source", str(source)] if name == "bfs" else []),
           *(["--tol", str(tol)] if name == "pagerank" else []),
           "--out", str(out), "--overwrite", "--quiet"]
    call(prev), call(None)  # compiles the kernels (once per install), maps the indexes
    turns_in = harness.alternate({"scratch": lambda: harness.timed(lambda: call(None)),
                                  "started": lambda: harness.timed(lambda: call(prev))}, turns)
    turns_cmd = harness.alternate({"scratch": lambda: _command([*cmd, "--init", "none"]),
                                   "started": lambda: _command([*cmd, "--init", str(prev)])},
                                  turns)
    a, b = [s for s, _ in turns_in["scratch"]], [s for s, _ in turns_in["started"]]
    ra, rb = turns_in["scratch"][-1][1], turns_in["started"][-1][1]
    return {"scratch_s": harness.spread(a), "started_s": harness.spread(b),
            "ratio": harness.pair_ratios(a, b),
            "command_scratch_s": harness.spread(turns_cmd["scratch"]),
            "command_started_s": harness.spread(turns_cmd["started"]),
            "command_ratio": harness.pair_ratios(turns_cmd["scratch"], turns_cmd["started"]),
            "start": rb.stats.start, "method_started": rb.stats.method,
            "method_scratch": ra.stats.method,
            "identical": bool(np.array_equal(ra.values, rb.values)),
            **({"l1_difference": float(np.abs(ra.values - rb.values).sum())}
               if name == "pagerank" else {})}


def _listed(path: Path, fraction: float, seed: int):
    """(the edges of the edge list ``path``, new pairs of its nodes to append: as many as
    ``fraction`` of its edges, drawn uniformly, none already an edge, its edge count)."""
    src, dst = np.loadtxt(path, dtype=np.int64, comments="#", unpack=True)
    nodes, have = np.unique(np.concatenate([src, dst])), set(zip(src.tolist(), dst.tolist()))
    rng, new = np.random.default_rng(seed), []
    while len(new) < int(fraction * len(src)) + 1:
        a, b = (int(x) for x in rng.choice(nodes, 2))
        if a != b and (a, b) not in have:
            have.add((a, b))
            new.append((a, b))
    return ([{"src": src, "dst": dst}],
            [{"src": np.array([a for a, _ in new]), "dst": np.array([b for _, b in new])}],
            len(src))


def changes(args) -> int:
    """The ``--changes`` runs (module docstring)."""
    import pyarrow.parquet as pq

    import graphsys
    from graphsys import bsp
    from graphsys.generators import rmat_edges, write_edges

    run = harness.Run("bsp/incremental", args.record)
    work, edges = args.work, args.rmat_edges
    fractions = [float(x) for x in args.fractions.split(",")]
    names = [x for x in args.algorithms.split(",") if x]
    if not names or any(x not in CHANGED for x in names):
        raise SystemExit(f"--algorithms: a list among {','.join(CHANGED)}, got "
                         f"{args.algorithms!r}")
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    if args.graph:
        first, rest, edges = _listed(args.graph, max(fractions), args.seed)
    else:
        extra = int(max(fractions) * edges) + 1
        ids = 1 << max(1, round(np.log2(edges / 8)))
        first, rest = _split(rmat_edges(ids, edges + extra, seed=args.seed), edges)
    write_edges(first, work / "day1.parquet", overwrite=True)
    del first
    base = work / "base" / "g"
    g = graphsys.ingest(work / "day1.parquet", base, partitions=args.partitions,
                        seed=args.seed, index=("csr", "csc"))
    source = g.node_ids()[int(np.argmax(g.degrees(direction="out")))].item()
    prev = {name: work / f"{name}-before.parquet" for name in names}
    first_runs = {"wcc": lambda: bsp.wcc(g), "bfs": lambda: bsp.bfs(g, source),
                  "pagerank": lambda: bsp.pagerank(g, tol=args.tol),
                  "kcore": lambda: bsp.kcore(g)}
    for name in names:
        pq.write_table(first_runs[name]().to_table(), prev[name])
    rows = {}
    for f in fractions:
        graph = work / f"changed-{f:g}" / "g"
        shutil.copytree(base, graph)
        row = _change(graph, rest, f, edges, args.seed)
        harness.log(f"{f:.2%}: deleted {row['deleted_pairs']:,} pairs "
                    f"({row['deleted_edges']:,} edges), appended {row['inserted']:,}")
        for name in names:
            row[name] = _sides(name, graph, prev[name], source, args.turns, args.tol)
            harness.log(f"{f:.2%} {name}: {row[name]['start']}, in process "
                        f"{row[name]['ratio']['median']}x, command "
                        f"{row[name]['command_ratio']['median']}x")
        rows[f"{f:g}"] = row
    run.emit(graph={"edges": edges, "nodes": g.num_nodes(), "partitions": args.partitions,
                    "seed": args.seed, "bfs_source": source,
                    "file": str(args.graph) if args.graph else "rmat"}, turns=args.turns,
             changes=rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
