"""``graphsys ingest``: edge lists (TSV/CSV/Parquet/Arrow) to a partitioned graph directory."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

from graphsys.commands._common import add_quiet_arg, column_arg, emit_json, show_progress
from graphsys.errors import GraphsysError
from graphsys.outputs import check_output_directory
from graphsys.plugins import DEFAULT_PARTITIONER, INPUT_FORMATS, PARTITIONERS
from graphsys.storage.format import DEFAULT_EDGE_SET
from graphsys.units import parse_size

# the ingest itself (numba's kernels among its imports) is imported once the command runs,
# after the read of a Parquet input has begun (_start_read)


def register(subparsers) -> None:
    p = subparsers.add_parser("ingest", help="ingest edge lists into a partitioned graph",
                              description=__doc__)
    p.add_argument("inputs", nargs="+", metavar="INPUT", help="edge list files (.gz read directly)")
    target = p.add_mutually_exclusive_group(required=True)
    target.add_argument("--out", type=Path, help="graph directory to create")
    target.add_argument("--append-to", type=Path, metavar="DIR",
                        help="add the inputs to the existing graph DIR as a new edge set "
                        "(--edge-set, a new name); ids not in DIR become new nodes appended "
                        "to its partitions, old nodes keep their ids (see docs/format.md)")
    p.add_argument("--partitions", type=int, default=1,
                   help="P, number of partitions (default 1)")
    p.add_argument("--partitioner", default=DEFAULT_PARTITIONER,
                   help=f"one of {', '.join(PARTITIONERS.names())} "
                        f"(default {DEFAULT_PARTITIONER})")
    p.add_argument("--seed", type=int, default=0, help="seed of the partitioner (default 0)")
    p.add_argument("--format", choices=("auto", *INPUT_FORMATS.names()), default="auto",
                   help="input format (default auto: by the file name, else tsv; jodie: "
                        "JODIE's Wikipedia/Reddit/MOOC/LastFM interaction files as a "
                        "bipartite temporal graph, docs/growing.md)")
    p.add_argument("--src-col", help="source column: header name or 0-based index (default 0/src)")
    p.add_argument("--dst-col", help="destination column (default 1/dst)")
    p.add_argument("--rel-col", help="relation column (knowledge graphs)")
    p.add_argument("--weight-col", help="weight column (float)")
    p.add_argument("--edge-columns", default="", metavar="NAME[=COL],...",
                   help="numeric input columns to keep beside the edges, comma-separated "
                        "(e.g. timestamp,rating; NAME=COL reads NAME from column COL, a "
                        "header name or 0-based index); typed from the input")
    p.add_argument("--relation", help="relation name for every edge when there is no rel column")
    p.add_argument("--relation-type", action="append", dest="relation_types", default=None,
                   metavar="NAME:LHS:RHS",
                   help="a typed relation: edges of relation NAME join an entity of type LHS "
                        "to one of type RHS (repeatable; default: one entity type)")
    p.add_argument("--delimiter", help="text delimiter, one character; \\t for a tab "
                                       "(default: sniffed; tab, comma or spaces)")
    p.add_argument("--comment", default="#%",
                   help="characters that start a comment line in text inputs (default '#%%': "
                        "SNAP's # and MatrixMarket's %%); '' reads every line as data (ids "
                        "such as #tag)")
    header = p.add_mutually_exclusive_group()
    header.add_argument("--header", choices=("auto", "yes", "no"), default="auto",
                   help="text header line: auto (default: a header only when the first line "
                        "holds the named columns, or is non-numeric in every field while the "
                        "second line is numeric; said on stderr), yes or no")
    header.add_argument("--no-header", dest="header", action="store_const", const="no",
                        help="same as --header no")
    p.add_argument("--edge-set", default=DEFAULT_EDGE_SET,
                   help=f"name of the edge set (default {DEFAULT_EDGE_SET!r})")
    joining = p.add_mutually_exclusive_group()
    joining.add_argument("--join", metavar="SET",
                         help="with --append-to: the edge set whose view the new edges join "
                              "(default: the graph's default edge set, so every engine reads "
                              "old and new edges together unless told --edges)")
    joining.add_argument("--no-join", action="store_true",
                         help="with --append-to: keep the new edge set apart (read only by "
                              "naming it, e.g. --edges default,NAME)")
    p.add_argument("--nodes", type=Path,
                   help="node table (Parquet/Arrow) with column id and label/feature/mask columns")
    p.add_argument("--undirected", action="store_true",
                   help="store every edge in both directions")
    p.add_argument("--dedupe", action="store_true", help="drop duplicate (src, dst, rel) edges")
    p.add_argument("--drop-self-loops", action="store_true")
    p.add_argument("--memory-limit", default="2GB",
                   help="memory budget for edge buffers, e.g. 1GB, 512MiB (default 2GB; at "
                        "least 64KiB; below 16MiB its smallest buffers overrun it: warned)")
    p.add_argument("--on-bad-line", choices=("error", "skip"), default="error")
    p.add_argument("--index", default="",
                   help="indexes to build after ingest, comma-separated among csr, csc, "
                        "push, sym (the undirected index; as graphsys index; default none)")
    p.add_argument("--json", action="store_true", help="print one JSON line of results")
    add_quiet_arg(p)
    # its work is on disk when it returns: the program skips the interpreter's teardown
    p.set_defaults(func=run, fast_exit=True)


def run(args) -> int:
    # every flag is the keyword of graphsys.ingest with the flag's name (--partitions ->
    # partitions), so the library's parameter errors read as these flags
    appending = args.append_to is not None
    out = args.append_to if appending else check_output_directory(args.out)
    from graphsys.memory import PeakMemory
    from graphsys.storage import readers

    try:
        _start_read(args)
        from graphsys.storage.ingest_inputs import SmallBudgetWarning

        with warnings.catch_warnings(), PeakMemory() as peak:
            # said once, in one line, once the run has gone through (the library warns
            # from inside it; a run refused for another reason says only why)
            warnings.simplefilter("ignore", SmallBudgetWarning)
            graph, report = _ingest(args, out, appending)
    finally:
        readers.cancel_table_reads()  # a read begun early that the ingest did not take
    _say_small_budget(args.memory_limit)
    if args.json:
        emit_json({**report.to_json(), **peak.to_json()})  # the anonymous peak too
    else:
        edges = ", ".join(f"{k}: {v:,}" for k, v in report.edges.items())
        nodes_s = ", ".join(f"{k}: {v:,}" for k, v in report.nodes.items())
        verb = "appended to" if appending else "ingested"
        added = "new nodes" if appending else "nodes"
        print(f"{verb} {out}: {added} ({nodes_s}), edges ({edges}), "
              f"{report.num_partitions} partition(s) by {report.partitioner['name']}, "
              f"{report.seconds['total']:.2f} s"
              + (f", {report.skipped_lines} bad line(s) skipped" if report.skipped_lines else ""))
    return 0


def _start_read(args) -> None:
    """Begin decoding the first input while the ingest's modules import, where it is a
    Parquet file read with the command's columns (the ingest takes the read over:
    :func:`graphsys.storage.readers.start_table_read`, a quarter of the memory budget
    decoded ahead, as the ingest's own read)."""
    from graphsys.storage.formats import resolve_format
    from graphsys.storage.readers import start_table_read

    path = Path(args.inputs[0])
    try:
        limit = parse_size(args.memory_limit, field="memory_limit")
        name, _ = resolve_format(path, args.format)
    except GraphsysError:
        return  # the ingest says why
    if name != "parquet" or args.edge_columns.strip() or limit < 64 << 10:
        return
    roles = {"src": column_arg(args.src_col), "dst": column_arg(args.dst_col),
             "rel": column_arg(args.rel_col), "weight": column_arg(args.weight_col)}
    start_table_read(path, roles, limit // 4)


def _ingest(args, out, appending: bool):
    """The library's ingest (or append) with the command's arguments."""
    from graphsys.storage.ingest_files import ingest

    return ingest(
        [Path(x) for x in args.inputs], out, partitions=args.partitions,
        partitioner=args.partitioner, seed=args.seed, format=args.format,
        src_col=column_arg(args.src_col), dst_col=column_arg(args.dst_col),
        rel_col=column_arg(args.rel_col), weight_col=column_arg(args.weight_col),
        edge_columns=_edge_columns(args.edge_columns),
        relation=args.relation, delimiter=_escape(args.delimiter),
        header={"auto": None, "yes": True, "no": False}[args.header], comment=args.comment,
        edge_set=args.edge_set, nodes=args.nodes, undirected=args.undirected,
        dedupe=args.dedupe, drop_self_loops=args.drop_self_loops,
        memory_limit=args.memory_limit, on_bad_line=args.on_bad_line, index=args.index,
        append=appending, join=False if args.no_join else (args.join or True),
        progress=show_progress(args), relation_types=args.relation_types,
        return_report=True)


def _say_small_budget(memory_limit: str) -> None:
    """One line on stderr when ``--memory-limit`` is below the least an ingest keeps to
    (:func:`graphsys.storage.ingest_inputs.small_budget`); a size that does not parse is
    left to the ingest's own one-line error."""
    from graphsys.storage.ingest_inputs import small_budget

    try:
        message = small_budget(parse_size(memory_limit, field="memory_limit"))
    except GraphsysError:
        return
    if message is not None:
        print("graphsys ingest: warning: --memory-limit " + message.split(" ", 1)[1],
              file=sys.stderr)


def _edge_columns(spec: str) -> dict[str, str | int]:
    """``--edge-columns``: ``NAME`` or ``NAME=COL`` items, comma-separated."""
    out: dict[str, str | int] = {}
    for item in (x.strip() for x in spec.split(",")):
        if item:
            name, _, col = item.partition("=")
            out[name.strip()] = column_arg(col.strip()) if col.strip() else name.strip()
    return out


def _escape(delimiter: str | None) -> str | None:
    """``--delimiter``: a shell's ``\\t`` (backslash, t) is the tab it stands for."""
    return "\t" if delimiter == "\\t" else delimiter
