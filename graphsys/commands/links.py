"""``graphsys links``: link scores (common neighbours, Jaccard, Adamic-Adar, resource
allocation, preferential attachment, as networkx defines them) of the node pairs of a file,
or the ``--top`` best-scoring two-hop candidates of each node, over the undirected view of
an edge set; rows ``source, target, score`` (original ids) as TSV on stdout or into
``--out`` (Parquet or TSV) (in Python: ``graphsys.measures.link_scores``, ``top_links``).
"""

from __future__ import annotations

import time
from pathlib import Path

from graphsys.commands._common import (
    add_quiet_arg,
    emit_json,
    graph_arg,
    read_ids,
    show_progress,
)
from graphsys.errors import GraphsysError
from graphsys.measures.similarity import METHODS
from graphsys.storage.graph import open_graph


def register(subparsers) -> None:
    p = subparsers.add_parser("links", help="link scores of node pairs, or top-k candidates",
                              description=__doc__)
    p.add_argument("graph", type=graph_arg, metavar="DIR|URI")
    p.add_argument("--pairs", type=Path, metavar="FILE",
                   help="score these pairs: two original ids per line")
    p.add_argument("--top", type=int, dest="k", metavar="K",
                   help="instead: each node's K best candidates (two hops away, not yet "
                        "linked), best first")
    p.add_argument("--nodes", type=Path, metavar="FILE",
                   help="with --top: only these nodes (original ids, one per line; default "
                        "every node)")
    p.add_argument("--method", choices=list(METHODS), default="jaccard",
                   help="the score (default jaccard)")
    p.add_argument("--edges", metavar="SET", dest="edge_set",
                   help="edge set (default: the only/default one)")
    p.add_argument("--out", type=Path, metavar="FILE",
                   help="write the rows to FILE.parquet or FILE.tsv instead of stdout")
    p.add_argument("--overwrite", action="store_true", help="replace an existing --out")
    p.add_argument("--json", action="store_true",
                   help="print one JSON line (the rows too, without --out; an infinite "
                        "score as null)")
    add_quiet_arg(p)
    p.set_defaults(func=run)


def _write(table, out: Path, overwrite: bool) -> None:
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    from graphsys.outputs import check_output
    from graphsys.storage.atomic import atomic_path

    name = out.name.lower()
    if not name.endswith((".parquet", ".tsv")):
        raise GraphsysError(f"--out: {out} must end in .parquet or .tsv")
    check_output(out, overwrite=overwrite, name="out")
    with atomic_path(out, overwrite=overwrite) as tmp:
        if name.endswith(".parquet"):
            pq.write_table(table, tmp)
        else:  # the header as stdout's, unquoted (Arrow's CSV writer quotes the names)
            import pyarrow as pa

            with pa.OSFile(str(tmp), "wb") as sink:
                sink.write(("\t".join(table.column_names) + "\n").encode())
                pacsv.write_csv(table, sink, pacsv.WriteOptions(
                    include_header=False, delimiter="\t", quoting_style="none"))


def run(args) -> int:
    from graphsys import measures

    if (args.pairs is None) == (args.k is None):
        raise GraphsysError("give --pairs FILE or --top K (one of them)")
    if args.nodes is not None and args.k is None:
        raise GraphsysError("--nodes goes with --top (--pairs names its nodes)")
    t0 = time.perf_counter()
    graph = open_graph(args.graph)
    if args.pairs is not None:
        pairs = read_ids(graph, args.pairs, "--pairs", per_line=2)
        scores = measures.link_scores(graph, pairs, args.method, edge_set=args.edge_set)
        rows = [(u, v, s) for (u, v), s in zip(pairs, scores.tolist())]
    else:
        nodes = read_ids(graph, args.nodes, "--nodes") if args.nodes is not None else None
        rows = list(measures.top_links(graph, nodes, args.k, args.method,
                                       edge_set=args.edge_set,
                                       progress=show_progress(args)))
    seconds = time.perf_counter() - t0
    if args.out is not None:
        import pyarrow as pa

        cols = list(zip(*rows)) if rows else [[], [], []]
        _write(pa.table({"source": list(cols[0]), "target": list(cols[1]),
                         "score": pa.array(list(cols[2]), pa.float64())}),
               args.out, args.overwrite)
    if args.json:
        obj = {"method": args.method, "rows": len(rows), "seconds": round(seconds, 3)}
        emit_json({**obj, "out": str(args.out)} if args.out is not None
                  else {**obj, "links": rows})
    elif args.out is not None:
        print(f"wrote {len(rows):,} {args.method} scores to {args.out} in {seconds:.2f} s")
    else:
        print("source\ttarget\tscore")
        for u, v, s in rows:
            print(f"{u}\t{v}\t{s!r}")
    return 0
