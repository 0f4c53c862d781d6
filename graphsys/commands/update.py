"""``graphsys update``: set the weight of edges (by their endpoints), as an update set beside
the graph's edge sets that every engine reads through (``graphsys compact`` folds it in)."""

from __future__ import annotations

from pathlib import Path

from graphsys.commands._common import warned
from graphsys.commands.delete import add_change_args, say


def register(subparsers) -> None:
    p = subparsers.add_parser("update", help="set edge weights (an update set)",
                              description=__doc__)
    p.add_argument("graph", type=Path, metavar="DIR")
    p.add_argument("--weights", type=Path, metavar="FILE", required=True,
                   help="one 'src dst weight' per line (whitespace-separated; '#' "
                        "comments): every edge of the pair gets the weight (float32; the "
                        "last line of a pair wins)")
    add_change_args(p, "update-N")
    p.set_defaults(func=run, fast_exit=True)


def run(args) -> int:
    from graphsys.commands._common import read_rows, typed_ids
    from graphsys.errors import InputError
    from graphsys.storage.changes import update_weights
    from graphsys.storage.graph import open_graph

    graph = open_graph(args.graph.resolve())
    rows = read_rows(args.weights, "--weights", 3)
    ids = typed_ids(graph, [v for r in rows for v in r[:2]], f"--weights {args.weights}")
    try:
        weights = [float(r[2]) for r in rows]
    except ValueError:
        bad = next(r[2] for r in rows if not _is_float(r[2]))
        raise InputError(f"--weights {args.weights}: weight {bad!r} is not a number") from None
    report = warned(update_weights, graph, ids[0::2], ids[1::2], weights,
                    edge_set=args.edge_set, allow_missing=args.allow_missing)
    return say(args, report, "updated")


def _is_float(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
