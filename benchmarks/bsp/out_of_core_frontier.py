#!/usr/bin/env python
"""Out-of-core frontier programs (BFS, WCC) with and without active-edge supersteps.

A seeded R-MAT graph (Graph500 a, b, c = 0.57, 0.19, 0.19; default 10M edges over 1Mi ids,
4 partitions) with its stored CSR and CSC indexes runs ``mode="out-of-core"`` BFS from the
highest out-degree vertex and WCC, each on the numba backend (the CPU default) and the torch
backend, in two ways alternated turn by turn: graphsys as it runs by default (a frontier
superstep with few senders reads their index rows alone,
:mod:`graphsys.bsp.active_edges`) and the same run with that path switched off
(``active_edges.ACTIVE_EDGES = False``: every bucket of the senders' partitions streamed,
the engine's pass before it). Per program and backend: the median whole-run seconds of each
side (``stats.seconds``: the supersteps and their setup), their turn-by-turn ratio, the
bytes each read from the edge files and index over the run, and the supersteps' passes
(``a`` the senders' index rows, ``p`` the unreached targets' in-edges from the index, ``s``
streamed). Both sides return the same values (checked every turn).

Usage::

    NUMBA_NUM_THREADS=2 python benchmarks/bsp/out_of_core_frontier.py --work DIR
        [--edges 10M] [--nodes 1Mi] [--turns 5]
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root

import numpy as np

from benchmarks import harness

#: A superstep's pass, one letter: the senders' index rows, the unreached targets' index
#: rows, or the buckets streamed
LETTERS = {"active": "a", "active-pull": "p", "stream": "s"}


def main(argv: list[str] | None = None) -> int:
    ap = harness.parser(__doc__)
    ap.add_argument("--edges", type=harness.count, default=harness.count("10M"))
    ap.add_argument("--nodes", type=harness.count, default=harness.count("1Mi"))
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--turns", type=int, default=5, help="alternated turns per side")
    ap.add_argument("--work", type=Path, help="where the graph is built (kept for reuse)")
    args = ap.parse_args(argv)
    import numba

    import graphsys
    from graphsys import bsp
    from graphsys.bsp import active_edges
    from graphsys.storage.adjacency_index import build_index

    run = harness.Run("bsp/out_of_core_frontier", args.record)
    work = args.work or Path(tempfile.mkdtemp(prefix="bench-frontier-"))
    d, built = harness.rmat_graph(work, args.edges, args.nodes, partitions=args.partitions)
    g = graphsys.open_graph(d)
    if g.adjacency_index(None, "csr") is None or g.adjacency_index(None, "csc") is None:
        harness.log("building the CSR and CSC indexes")
        build_index(g, ("csr", "csc"))
        g = graphsys.open_graph(d)
    deg = g.degrees(None, "out")
    hub = int(g.node_ids()[int(np.argmax(deg))])
    programs = {"bfs": lambda backend: bsp.bfs(g, hub, mode="out-of-core", schedule="sync",
                                               backend=backend),
                "wcc": lambda backend: bsp.wcc(g, mode="out-of-core", backend=backend)}
    rows = []
    for name, call in programs.items():
        for backend in ("numba", "torch"):
            def side(on: bool, call=call, backend=backend):
                active_edges.ACTIVE_EDGES = on
                try:
                    return call(backend)
                finally:
                    active_edges.ACTIVE_EDGES = True

            side(True), side(False)  # warm: kernels loaded, buckets and index in page cache
            turns = harness.alternate({"active": lambda: side(True),
                                       "streamed": lambda: side(False)}, args.turns)
            for a, s in zip(turns["active"], turns["streamed"], strict=True):
                if not np.array_equal(a.values, s.values):
                    raise SystemExit(f"{name} {backend}: the two sides differ")
            secs = {k: [r.stats.seconds for r in v] for k, v in turns.items()}
            first = {k: v[0] for k, v in turns.items()}
            rows.append({
                "program": name, "backend": backend,
                "active_s": harness.spread(secs["active"]),
                "streamed_s": harness.spread(secs["streamed"]),
                "speedup": harness.pair_ratios(secs["streamed"], secs["active"]),
                "bytes_read": {k: int(sum(s.bytes_read for s in r.stats.supersteps))
                               for k, r in first.items()},
                "directions": {k: "".join(LETTERS.get(s.direction, "s")
                                          for s in r.stats.supersteps)
                               for k, r in first.items()},
                "supersteps": first["active"].stats.num_supersteps})
            harness.log(f"{name} {backend}: {rows[-1]['speedup']['median']}x")
    if args.work is None:
        shutil.rmtree(work, ignore_errors=True)
    run.emit(graph={"edges": g.num_edges(), "nodes": g.num_nodes(),
                    "partitions": args.partitions, **built},
             numba_threads=numba.get_num_threads(), rows=rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
