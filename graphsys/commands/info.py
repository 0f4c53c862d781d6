"""``graphsys info``: counts, partition balance and edge-cut of a stored graph."""

from __future__ import annotations

from graphsys.commands._common import emit_json, graph_arg
from graphsys.storage.graph import open_graph
from graphsys.storage.info import format_info, graph_info


def register(subparsers) -> None:
    p = subparsers.add_parser("info", help="describe a stored graph", description=__doc__)
    p.add_argument("graph", type=graph_arg, metavar="DIR|URI")
    p.add_argument("--json", action="store_true", help="print one JSON line")
    p.set_defaults(func=run)


def run(args) -> int:
    info = graph_info(open_graph(args.graph))
    if args.json:
        emit_json(info)
    else:
        print(format_info(info))
    return 0
