"""``graphsys index``: build persistent CSR/CSC adjacency indexes (PageRank's push layout,
the samplers' undirected adjacency) in a graph directory."""

from __future__ import annotations

import time
from pathlib import Path

from graphsys.commands._common import add_quiet_arg, emit_json, show_progress


def register(subparsers) -> None:
    p = subparsers.add_parser("index", help="build CSR/CSC adjacency indexes (memory-mapped)",
                              description=__doc__)
    p.add_argument("graph", type=Path, metavar="DIR")
    p.add_argument("--csr", action="store_true",
                   help="out-neighbour index (out of core, a superstep with few senders "
                        "reads only their rows; a GPU lays the graph out from it unsorted)")
    p.add_argument("--csc", action="store_true",
                   help="in-neighbour index (out of core, a BFS level with few unreached "
                        "vertices reads only their in-edges)")
    p.add_argument("--push", action="store_true",
                   help="in-edges in destination blocks, vertices in out-degree order: "
                        "in-memory PageRank pushes over it with no build (3 bytes per edge; "
                        "also builds --csc, its input)")
    p.add_argument("--undirected", action="store_true",
                   help="both directions of every edge, each neighbour once: the view "
                        "samplers walk by default (symmetric), memory-mapped instead of "
                        "built in RAM")
    p.add_argument("--temporal", action="store_true",
                   help="every node's events in time order, by the timestamp edge column "
                        "(neighbour, time, edge id; both directions): what the temporal "
                        "samplers draw from, memory-mapped instead of built in RAM")
    p.add_argument("--edge-set", action="append", dest="edge_sets",
                   help="edge set to index (repeatable; several joined by commas index "
                        "each; default: every edge set); an edge set keeps the indexes it "
                        "has, so after an append only the new one's are built")
    p.add_argument("--memory-limit", default="2GB",
                   help="anonymous memory budget, e.g. 1GB (default 2GB; the build needs "
                        "8 bytes per node + 64 MiB, --push 28 + 8 per thread)")
    p.add_argument("--force", action="store_true", help="rebuild indexes that are current")
    p.add_argument("--json", action="store_true", help="print one JSON line of results")
    add_quiet_arg(p)
    p.set_defaults(func=run)


def parse_kinds(csr: bool, csc: bool, push: bool, undirected: bool = False,
                temporal: bool = False) -> tuple[str, ...]:
    """The kinds named by the flags (``undirected``: ``sym``); none means csr and csc."""
    kinds = tuple(k for k, on in (("csr", csr), ("csc", csc), ("push", push),
                                  ("sym", undirected), ("temporal", temporal)) if on)
    return kinds or ("csr", "csc")


def run(args) -> int:
    from graphsys.memory import PeakMemory
    from graphsys.storage.adjacency_index import build_index
    from graphsys.storage.graph import open_graph
    from graphsys.units import parse_size

    t0 = time.perf_counter()
    with PeakMemory() as peak:  # the anonymous peak is what --memory-limit bounds
        built = build_index(open_graph(args.graph), parse_kinds(
            args.csr, args.csc, args.push, args.undirected, args.temporal),
            edge_sets=args.edge_sets,
            memory_limit=parse_size(args.memory_limit, field="--memory-limit"),
            force=args.force, progress=show_progress(args))
    seconds = time.perf_counter() - t0
    listed = [f"{name}/{kind}" for name, kinds in built.items() for kind in kinds]
    if args.json:
        emit_json({"graph": str(args.graph), "built": listed, "seconds": round(seconds, 3),
                   **peak.to_json()})
    else:
        print(f"indexed {args.graph}: {', '.join(listed) or 'nothing to do (indexes current)'}"
              f" in {seconds:.2f} s")
    return 0
