"""``graphsys subgraph``: write the subgraph of a stored graph induced by a node set (ids
read from a file, one per line), by a predicate over a node column, or by the nodes within
``--radius`` hops of ``--ego`` nodes, as a new graph directory: isolated members, original
ids, node columns, weights, relations and edge columns kept (in Python: ``Graph.subgraph``,
``Graph.ego_graph``).
"""

from __future__ import annotations

import re
import time
from pathlib import Path

from graphsys.commands._common import emit_json, graph_arg, read_ids, typed_ids
from graphsys.errors import GraphsysError, ParameterError

#: The comparisons ``--where`` takes, as pyarrow compute functions; the first operator in
#: the text is the comparison, the longer of two at one place (``<=`` before ``<``).
COMPARISONS = {"==": "equal", "!=": "not_equal", "<=": "less_equal", ">=": "greater_equal",
               "<": "less", ">": "greater"}
WHERE = re.compile(r"\s*(.+?)\s*(==|!=|<=|>=|<|>)\s*(.*?)\s*", re.DOTALL)

def register(subparsers) -> None:
    p = subparsers.add_parser("subgraph", help="write an induced or ego subgraph as a new graph",
                              description=__doc__)
    p.add_argument("graph", type=graph_arg, metavar="DIR|URI")
    p.add_argument("out", type=Path, metavar="OUT", help="the graph directory to create")
    p.add_argument("--nodes", type=Path, metavar="FILE",
                   help="keep these nodes: original ids, one per line")
    p.add_argument("--where", metavar="'COLUMN OP VALUE'",
                   help="keep the nodes whose node column (or id) compares true, OP one of "
                        "== != < <= > >=, e.g. 'label == 3'; with --nodes or --ego: the "
                        "nodes of those that also satisfy it")
    p.add_argument("--ego", dest="center", metavar="ID", action="append",
                   help="keep the nodes within --radius hops of this node (repeatable: the "
                        "union)")
    p.add_argument("--radius", type=int, default=1, help="hops from --ego (default 1)")
    p.add_argument("--undirected", action="store_true",
                   help="--ego follows edges either way in a directed edge set (default: "
                        "out-edges, as networkx's ego_graph on a DiGraph)")
    p.add_argument("--edges", metavar="SET", dest="edge_set",
                   help="the edge set --ego's hops follow (default: the only/default one); "
                        "every edge set is kept, induced")
    p.add_argument("--json", action="store_true", help="print one JSON line of results")
    p.set_defaults(func=run)


def parse_where(text: str):
    """``'COLUMN OP VALUE'`` as a predicate over a table (a callable of it: one bool per
    row, False where the column is null). VALUE is read as the column's type: a string
    column's text (quotes optional), a mask's true or false, else a number (an integer,
    else a float)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    match = WHERE.fullmatch(text)
    if match is None or not match.group(3):
        raise ParameterError("where", f"must read 'COLUMN OP VALUE' with OP one of "
                                      f"{' '.join(COMPARISONS)}, got {text!r}")
    column, op, value = match.groups()

    def literal(kind):
        if pa.types.is_string(kind) or pa.types.is_large_string(kind):
            return value.strip("'\"")
        if pa.types.is_boolean(kind) and value.lower() in ("true", "false", "1", "0"):
            return value.lower() in ("true", "1")
        for cast in (int, float):
            try:
                return pa.scalar(cast(value))
            except OverflowError:  # an integer no Arrow integer holds
                raise ParameterError("where", f"{value} is out of the range of column "
                                              f"{column} ({kind})") from None
            except ValueError:
                continue
        raise ParameterError("where", f"{value!r} is not a value of column {column} ({kind})")

    def where(table):
        kind = table.schema.field(column).type
        return pc.fill_null(pc.call_function(COMPARISONS[op],
                                             [table[column], literal(kind)]), False)

    return where

def run(args) -> int:
    from graphsys.memory import PeakMemory
    from graphsys.outputs import check_output_directory
    from graphsys.storage.graph import open_graph

    check_output_directory(args.out)  # not inside a graph: its rewrites would drop it
    if args.nodes is None and args.where is None and args.center is None:
        raise GraphsysError("give --nodes, --where or --ego to choose the nodes")
    if args.nodes is not None and args.center is not None:
        raise ParameterError("nodes", "and --ego choose the nodes two ways: give one")
    t0 = time.perf_counter()
    with PeakMemory() as peak:
        graph = open_graph(args.graph)
        where = parse_where(args.where) if args.where is not None else None
        if args.center is not None:
            center = typed_ids(graph, args.center, "--ego")
            if where is not None:  # the ego nodes that satisfy the predicate
                from graphsys.storage import subgraph as sub

                keep = sub.ego_mask(graph, center, args.radius, undirected=args.undirected,
                                    edge_set=args.edge_set)
                h = graph.subgraph(keep, args.out, where=where)
            else:
                h = graph.ego_graph(center, args.radius, args.out, undirected=args.undirected,
                                    edge_set=args.edge_set)
        else:
            nodes = read_ids(graph, args.nodes, "--nodes") if args.nodes is not None else None
            h = graph.subgraph(nodes, args.out, where=where)
    seconds = time.perf_counter() - t0
    edges = {name: h.num_edges(name) for name in h.edge_sets}
    if args.json:
        emit_json({"out": str(args.out), "nodes": h.num_nodes(), "edges": edges,
                   "seconds": round(seconds, 3), **peak.to_json()})
    else:
        print(f"wrote {args.out}: {h.num_nodes():,} nodes, "
              + ", ".join(f"{n:,} edges in {name}" for name, n in edges.items())
              + f" in {seconds:.2f} s")
    return 0
