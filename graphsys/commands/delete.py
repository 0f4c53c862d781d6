"""``graphsys delete``: delete edges (by their endpoints) or nodes' edges from a graph, as a
delete set beside its edge sets that every engine reads through (``graphsys compact``
folds it in)."""

from __future__ import annotations

from pathlib import Path

from graphsys.commands._common import emit_json


def register(subparsers) -> None:
    p = subparsers.add_parser("delete", help="delete edges or nodes' edges (a delete set)",
                              description=__doc__)
    p.add_argument("graph", type=Path, metavar="DIR")
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--edges", type=Path, metavar="FILE",
                      help="the pairs whose edges go: one 'src dst' per line (whitespace-"
                           "separated original ids; '#' comments); every parallel edge and "
                           "on an undirected graph both directions")
    what.add_argument("--node", action="append", dest="nodes", metavar="ID",
                      help="a node whose edges all go (repeatable); the node stays, isolated")
    add_change_args(p, "delete-N")
    p.set_defaults(func=run, fast_exit=True)


def add_change_args(p, default: str) -> None:
    """The options ``delete`` and ``update`` share."""
    p.add_argument("--edge-set", default=None,
                   help=f"name of the change set written (default {default}, the first "
                        f"free N)")
    p.add_argument("--allow-missing", action="store_true",
                   help="write the pairs the graph has and warn of the others (default: a "
                        "pair the graph lacks refuses the whole file, nothing written)")
    p.add_argument("--json", action="store_true", help="print one JSON line of results")


def run(args) -> int:
    from graphsys.commands._common import read_ids, typed_ids, warned
    from graphsys.storage.changes import delete_edges, delete_nodes
    from graphsys.storage.graph import open_graph

    graph = open_graph(args.graph.resolve())
    if args.nodes is not None:
        report = delete_nodes(graph, typed_ids(graph, args.nodes, "--node"),
                              edge_set=args.edge_set)
    else:
        pairs = read_ids(graph, args.edges, "--edges", per_line=2)
        report = warned(delete_edges, graph, [a for a, _ in pairs], [b for _, b in pairs],
                        edge_set=args.edge_set, allow_missing=args.allow_missing)
    return say(args, report, "deleted")


def say(args, report, verb: str) -> int:
    """Print what a change wrote (one line, or ``--json``)."""
    import dataclasses

    if args.json:
        emit_json(dataclasses.asdict(report))
    elif report.edge_set:
        print(f"{verb} {report.edges:,} edge(s) ({report.pairs:,} pair(s)) of {args.graph} "
              f"as edge set {report.edge_set!r}")
    else:
        print(f"{args.graph}: nothing to do (no edge matched)")
    return 0
