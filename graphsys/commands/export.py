"""``graphsys export``: write an edge set back with original ids (Parquet, TSV or CSV)."""

from __future__ import annotations

from pathlib import Path

from graphsys.commands._common import add_time_args, emit_json, graph_arg


def register(subparsers) -> None:
    p = subparsers.add_parser("export", help="export an edge set as Parquet, TSV or CSV",
                              description=__doc__)
    p.add_argument("graph", type=graph_arg, metavar="DIR|URI")
    p.add_argument("--edges", metavar="SET",
                   help="edge set; several read as one joined by commas (default,day2), "
                        "or all (default: the graph's default view, which includes the edge "
                        "sets appended to it)")
    add_time_args(p, "export", "the edge set")
    p.add_argument("--out", required=True, type=Path,
                   help="FILE.parquet, FILE.tsv or FILE.csv (text gzipped when the name ends "
                        "in .gz)")
    p.add_argument("--nodes-out", type=Path, metavar="FILE.parquet",
                   help="also write the node table (id and every node column, nodes without "
                        "an edge included), which 'graphsys ingest OUT --nodes FILE' reads "
                        "back")
    p.add_argument("--overwrite", action="store_true")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=run)


def run(args) -> int:
    from graphsys.storage.export import export_edges
    from graphsys.storage.graph import open_graph

    graph = open_graph(args.graph, until=args.until, since=args.since)
    rows = export_edges(graph, args.out, args.edges, overwrite=args.overwrite,
                        nodes_out=args.nodes_out)
    if args.json:
        emit_json({"out": str(args.out), "rows": rows})
    else:
        print(f"wrote {rows:,} edges to {args.out}")
    return 0
