"""``graphsys compact``: fold a graph's default edge set, the edge sets appended to it and its
delete and update sets into one edge set of the edges they read (the same answers after;
deleted edges then leave the directory)."""

from __future__ import annotations

from pathlib import Path

from graphsys.commands._common import emit_json


def register(subparsers) -> None:
    p = subparsers.add_parser("compact", help="fold appended edge sets and changes into one",
                              description=__doc__)
    p.add_argument("graph", type=Path, metavar="DIR")
    p.add_argument("--edge-set", default=None,
                   help="the base edge set to compact with what is appended to it (default: "
                        "the default edge set)")
    p.add_argument("--json", action="store_true", help="print one JSON line of results")
    p.set_defaults(func=run, fast_exit=True)


def run(args) -> int:
    import dataclasses

    from graphsys.storage.compact import compact

    report = compact(args.graph.resolve(), edge_set=args.edge_set)
    if args.json:
        emit_json(dataclasses.asdict(report))
    elif report.edge_set:
        print(f"compacted {args.graph}: {report.pairs} edge sets into {report.edge_set!r} "
              f"({report.edges:,} edges); its indexes, if any, are built again by "
              f"graphsys index")
    else:
        print(f"{args.graph}: nothing to compact (nothing is appended to the edge set)")
    return 0
