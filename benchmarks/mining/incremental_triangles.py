#!/usr/bin/env python
"""Triangle counts started from the result before a change of deletions and insertions
(``mining.triangle_stats(g, per_node=True, init=PREV)``, :mod:`graphsys.mining.incremental`)
beside counts from scratch, on an R-MAT graph and on email-Enron.

The graphs: ``--rmat-edges`` (2M) R-MAT edges over the power of two nearest
``--rmat-edges / 8`` ids (:func:`graphsys.generators.rmat_edges`, seeded; self-loops and
duplicates kept) and email-Enron (a registry dataset through the mirror), each ingested
with stored CSR and CSC indexes (``graphsys index --csr --csc``) and counted once per node
(the result written as Parquet: PREV). For each fraction of ``--fractions`` (0.1 % and
1 %), a copy of the graph loses half the fraction of its edges (distinct pairs drawn
uniformly from its edges, deleted with every parallel edge) and gains the other half
(R-MAT: the next draws of the same stream; email-Enron: uniform pairs of its node ids),
appended as ``day2`` (:func:`benchmarks.bsp.incremental._change`). On the changed graph,
in alternated turns (``--turns``, medians quoted), each call opening the graph afresh:

* **scratch**: ``triangle_stats(g, per_node=True)``: the changed view's symmetric rows
  built from its buckets through the change sets, oriented and counted;
* **started**: the same call with ``init=`` PREV's Parquet file (reading and matching it
  by original id is part of the time): each changed pair's common neighbours over the old
  edges' mapped indexes, read through the deletions.

One JSON line per graph and fraction: both sides' seconds, ``ratio`` scratch / started
(> 1: the update is faster), the started side's ``method`` (``updated (...)``, or why it
counted from scratch), and ``identical``: the two per-node counts equal.

Usage::

    NUMBA_NUM_THREADS=1 python benchmarks/mining/incremental_triangles.py --work DIR
        [--rmat-edges 2M] [--fractions 0.001,0.01] [--turns 5] [--graphs rmat,email-enron]
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root

import numpy as np

from benchmarks import harness
from benchmarks.bsp.incremental import _change, _split


def _sides(graph: Path, prev: Path, turns: int) -> dict:
    """The count started from ``prev`` and from scratch, alternated."""
    import graphsys
    from graphsys import mining

    def call(init):
        return mining.triangle_stats(graphsys.open_graph(graph), per_node=True, init=init)

    call(prev), call(None)  # compiles the kernels (once per install), maps the indexes
    got = harness.alternate({"scratch": lambda: harness.timed(lambda: call(None)),
                             "started": lambda: harness.timed(lambda: call(prev))}, turns)
    a, b = [s for s, _ in got["scratch"]], [s for s, _ in got["started"]]
    ra, rb = got["scratch"][-1][1], got["started"][-1][1]
    return {"scratch_s": harness.spread(a), "started_s": harness.spread(b),
            "ratio": harness.pair_ratios(a, b), "method": rb.method, "triangles": rb.count,
            "identical": bool(np.array_equal(ra.triangles.values, rb.triangles.values))}


def _base(args, name: str, work: Path):
    """(the stored graph with CSR and CSC indexes, its edge count, the edges an append
    draws from) of ``name``: ``rmat`` or a registry dataset."""
    import graphsys
    from graphsys.generators import rmat_edges, write_edges

    base = work / name / "base" / "g"
    extra = int(max(args.fractions) * args.rmat_edges) + 1
    if name == "rmat":
        (work / name).mkdir(parents=True)
        edges = args.rmat_edges
        ids = 1 << max(1, round(np.log2(edges / 8)))
        first, rest = _split(rmat_edges(ids, edges + extra, seed=args.seed), edges)
        write_edges(first, work / name / "day1.parquet", overwrite=True)
        g = graphsys.ingest(work / name / "day1.parquet", base, partitions=4,
                            seed=args.seed, index=("csr", "csc"))
        return g, edges, rest
    stored = harness.dataset(None, name, work / name / "stored", partitions=4)
    shutil.copytree(stored.path, base)
    from graphsys.storage.adjacency_index import build_index

    g = graphsys.open_graph(base)
    build_index(g, ("csr", "csc"))
    ids = g.node_ids()
    rng = np.random.default_rng(args.seed)
    k = int(max(args.fractions) * g.num_edges()) + 1
    return graphsys.open_graph(base), g.num_edges(), [
        {"src": ids[rng.integers(0, len(ids), k)], "dst": ids[rng.integers(0, len(ids), k)]}]


def main(argv: list[str] | None = None) -> int:
    ap = harness.parser(__doc__)
    ap.add_argument("--work", type=Path, default=Path("/tmp/bench-incremental-triangles"))
    ap.add_argument("--rmat-edges", type=harness.count, default=harness.count("2M"))
    ap.add_argument("--fractions", type=lambda s: [float(x) for x in s.split(",")],
                    default=[0.001, 0.01], help="changed shares (default 0.001,0.01)")
    ap.add_argument("--graphs", default="rmat,email-enron",
                    help="rmat and registry datasets, comma-separated")
    ap.add_argument("--turns", type=int, default=5, help="alternated turns (5)")
    ap.add_argument("--seed", type=int, default=1)
    harness.add_mirror_argument(ap)
    args = ap.parse_args(argv)
    harness.use_mirror(args.mirror)
    import pyarrow.parquet as pq

    from graphsys import mining

    if args.work.exists():
        shutil.rmtree(args.work)
    for name in [x for x in args.graphs.split(",") if x]:
        g, edges, rest = _base(args, name, args.work)
        prev = args.work / name / "triangles-before.parquet"
        pq.write_table(mining.triangle_stats(g, per_node=True).to_table(), prev)
        for f in args.fractions:
            run = harness.Run("mining/incremental_triangles", args.record)
            graph = args.work / name / f"changed-{f:g}" / "g"
            shutil.copytree(g.path, graph)
            row = _change(graph, rest, f, edges, args.seed, g.edge_set().undirected)
            row.update(_sides(graph, prev, args.turns))
            harness.log(f"{name} {f:.2%}: {row['method']}, {row['ratio']['median']}x")
            run.emit(graph=name, edges=edges, nodes=g.num_nodes(), fraction=f,
                     turns=args.turns, **row)
    return 0


if __name__ == "__main__":
    sys.exit(main())
