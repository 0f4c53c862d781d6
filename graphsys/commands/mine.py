"""``graphsys mine``: count triangles, cliques, motifs and your own patterns in a stored graph.

    graphsys mine triangles DIR [--mode auto|memory|out-of-core] [--out FILE.parquet]
        [--init PREV.parquet]
    graphsys mine clustering DIR [--out FILE.parquet]
    graphsys mine triads DIR
    graphsys mine cliques DIR -k K [--list N] [--out FILE.parquet]
    graphsys mine motifs DIR [--size 3|4|5] [--directed] [--samples N --seed S]
    graphsys mine pattern DIR PATTERN [--induced] [--labels COLUMN --pattern-labels L,L,...]
        [--edge-labels COLUMN --pattern-edge-labels L,L,...] [--anti-edges A-B,...]
        [--directed] [--list N] [--out FILE.parquet]
    graphsys mine fsm DIR --labels COLUMN --support N [--max-edges K] [--early-exit]
        [--edge-labels COLUMN]

Every count reads the edge set's undirected simple view (both directions of every edge,
each adjacent pair once, self-loops dropped), mapped from the graph's undirected index when
it has one (``graphsys index DIR --undirected``), else built in RAM within
``--memory-limit``; triangles run out of core over the index's row blocks when the graph
does not fit. Under torchrun (``torchrun --nproc-per-node W -m graphsys mine ...``) every
rank counts its share of the vertices and rank 0 prints the sums. See docs/mining.md.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from graphsys.commands._common import add_quiet_arg, emit_json, graph_arg, show_progress
from graphsys.errors import GraphsysError, check_count


def _common(p, *, mode: bool = False) -> None:
    p.add_argument("graph", type=graph_arg, metavar="DIR", help="the graph directory")
    p.add_argument("--edge-set", metavar="SET", help="edge set (default: the graph's default)")
    if mode:
        p.add_argument("--mode", default="auto",
                       help="auto (default: in RAM when the oriented graph fits "
                            "--memory-limit, else out of core), memory, or out-of-core (row "
                            "blocks of the undirected index, which it needs)")
    p.add_argument("--threads", type=int, help="numba threads (default: all)")
    p.add_argument("--memory-limit", metavar="SIZE",
                   help="anonymous memory budget, e.g. 4GB (default: the RAM available)")
    p.add_argument("--no-verify", action="store_true",
                   help="skip the sha256 check of each file as it is first read")
    p.add_argument("--json", action="store_true", help="print one JSON line of results")
    add_quiet_arg(p)


def _out(p, what: str) -> None:
    p.add_argument("--out", type=Path, metavar="FILE.parquet", help=what)
    p.add_argument("--overwrite", action="store_true", help="replace an existing --out file")


def _pattern_parser(sub) -> None:
    """``mine pattern``'s flags."""
    r = sub.add_parser("pattern", help="count (and list) the matches of a pattern")
    _common(r)
    r.add_argument("pattern", metavar="PATTERN",
                   help="a name (triangle, wedge, 4-cycle, diamond, 5-clique, ...) or an edge "
                        "list over nodes 0..k-1, e.g. 0-1,1-2,2-0")
    r.add_argument("--induced", action="store_true", help="induced matches only")
    r.add_argument("--labels", metavar="COLUMN", help="the graph's integer node column the "
                   "pattern's labels refer to")
    r.add_argument("--pattern-labels", metavar="L,L,...",
                   help="one label per pattern node, * for any (needs --labels)")
    r.add_argument("--edge-labels", metavar="COLUMN", help="the graph's integer edge column "
                   "the pattern's edge labels refer to")
    r.add_argument("--pattern-edge-labels", metavar="L,L,...",
                   help="one label per pattern edge, in PATTERN's order (a name's edges as "
                        "listed in graphsys.mining.pattern.NAMED), * for any (needs "
                        "--edge-labels)")
    r.add_argument("--anti-edges", metavar="A-B,...",
                   help="pattern node pairs whose graph nodes must not be adjacent")
    r.add_argument("--directed", action="store_true",
                   help="each pattern edge a-b needs a stored edge a -> b (a name's edges "
                        "as listed in graphsys.mining.pattern.NAMED, 4-cycle 0-1,1-2,2-3,3-0)")
    r.add_argument("--list", dest="limit", type=int, default=0, metavar="N",
                   help="also print the first N matches (original ids, pattern node order)")
    _out(r, "the first --list matches (all of them without --list): one column per "
            "pattern node")
    r.set_defaults(func=run_pattern)


def register(subparsers) -> None:
    p = subparsers.add_parser("mine", help="count triangles, cliques, motifs and patterns",
                              description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="mine_command", metavar="SUBCOMMAND", required=True)

    t = sub.add_parser("triangles", help="triangle count and transitivity (per node: --out)")
    _common(t, mode=True)
    _out(t, "per-node output: node (original id), triangles, clustering, degree (a later "
            "--init starts from it)")
    t.add_argument("--init", type=Path, metavar="PREV.parquet",
                   help="update the counts of a previous --out file by the edges appended "
                        "and deleted since (or count from scratch where that does not "
                        "apply or pay: the method printed says which)")
    t.set_defaults(func=run_triangles)

    c = sub.add_parser("clustering", help="local clustering coefficients, their average and "
                                          "the transitivity")
    _common(c, mode=True)
    _out(c, "per-node output: node (original id), clustering")
    c.set_defaults(func=run_triangles, clustering=True)

    d = sub.add_parser("triads", help="the 16-class directed triad census")
    _common(d)
    d.set_defaults(func=run_triads)

    q = sub.add_parser("cliques", help="k-clique count (per node: --out; listed: --list)")
    _common(q)
    q.add_argument("-k", type=int, required=True, help="clique size, 3 to 8")
    q.add_argument("--list", dest="limit", type=int, default=0, metavar="N",
                   help="also print the first N cliques (original ids)")
    _out(q, "per-node output: node (original id), K-cliques")
    q.set_defaults(func=run_cliques)

    m = sub.add_parser("motifs", help="induced counts of every connected 3-, 4- or 5-node "
                                            "pattern")
    _common(m)
    m.add_argument("--size", type=int, default=3,
                   help="nodes per pattern: 3 (default), 4 or 5 (the 21 classes)")
    m.add_argument("--directed", action="store_true",
                   help="directed 3-node classes (the connected triads)")
    m.add_argument("--samples", type=int, metavar="N",
                   help="4-node: estimate the 4-cycle and 4-clique sums from N random "
                        "wedges and N random edges (standard errors printed)")
    m.add_argument("--seed", type=int, default=0, help="the draws' seed (default 0)")
    m.set_defaults(func=run_motifs)

    _pattern_parser(sub)

    f = sub.add_parser("fsm", help="frequent labelled patterns by MNI support")
    _common(f)
    f.add_argument("--labels", metavar="COLUMN", required=True,
                   help="the graph's node column of non-negative integer labels")
    f.add_argument("--support", type=int, required=True, metavar="N",
                   help="MNI threshold: every pattern node mapped to at least N graph nodes")
    f.add_argument("--max-edges", type=int, default=3, metavar="K",
                   help="the largest patterns, in edges (default 3)")
    f.add_argument("--early-exit", action="store_true",
                   help="stop each pattern's search at the threshold (supports printed are "
                        "then lower bounds)")
    f.add_argument("--edge-labels", metavar="COLUMN",
                   help="the graph's edge column of non-negative integer labels: every "
                        "pattern edge then carries one")
    f.set_defaults(func=run_fsm)


def _setup(args):
    """``(graph, options for the mining call, distributed, rank 0?)``."""
    from graphsys import open_graph
    from graphsys.device import HOST
    from graphsys.distributed import init_from_env, this_rank
    from graphsys.units import parse_size

    distributed = init_from_env(HOST)
    graph = open_graph(args.graph)
    graph.verify_hashes = not args.no_verify
    limit = (parse_size(args.memory_limit, field="--memory-limit")
             if args.memory_limit is not None else None)
    options = {"edge_set": args.edge_set, "threads": args.threads, "memory_limit": limit,
               "distributed": distributed, "progress": show_progress(args)}
    return graph, options, distributed, not distributed or this_rank() == 0


def _run(args, body) -> int:
    """Set up, time ``body(graph, options)`` (its result dict), print on rank 0."""
    from graphsys.commands._common import parquet_out, write_parquet
    from graphsys.distributed import peer_failures
    from graphsys.memory import PeakMemory

    out = parquet_out(getattr(args, "out", None), getattr(args, "overwrite", False))
    graph, options, distributed, rank0 = _setup(args)
    t0 = time.perf_counter()
    try:
        with peer_failures(distributed), PeakMemory() as peak:
            result, lines, table = body(graph, options)
    finally:
        if distributed:
            from graphsys.distributed import destroy

            destroy()
    seconds = time.perf_counter() - t0
    if not rank0:
        return 0
    if out is not None and table is not None:
        write_parquet(out, table, args.overwrite)
    if args.json:
        emit_json({"ok": True, "command": args.mine_command, "graph": str(args.graph),
                   **result, "seconds": round(seconds, 6), "out": str(out) if out else None,
                   **peak.to_json()})
    else:
        for line in lines:
            print(line)
        print(f"{args.mine_command}: {seconds:.3f} s, peak RSS {peak.peak_total / 1e9:.2f} GB"
              f" (anonymous {peak.peak_anon / 1e9:.2f} GB)" + (f", wrote {out}" if out else ""))
    return 0


def run_triangles(args) -> int:
    from graphsys import mining

    clustering = getattr(args, "clustering", False)

    def body(graph, options):
        init = getattr(args, "init", None)
        stats = mining.triangle_stats(graph, per_node=clustering or args.out is not None,
                                      mode=args.mode, init=init, **options)
        lines = [f"triangles: {stats.count:,}", f"transitivity: {stats.transitivity:.6f}"]
        if stats.average_clustering is not None:
            lines.append(f"average clustering: {stats.average_clustering:.6f}")
        result = stats.to_dict()
        if init is not None:
            lines.append(f"method: {stats.method}")
            result["method"] = stats.method
        table = None
        if stats.triangles is not None:
            table = stats.to_table()
            if clustering:
                table = table.select(["node", "clustering"])
        return result, lines, table

    return _run(args, body)


def run_triads(args) -> int:
    from graphsys import mining

    def body(graph, options):
        census = mining.triad_census(graph, **options)
        return {"census": census}, [f"{k:>5}: {v:,}" for k, v in census.items()], None

    return _run(args, body)


def run_cliques(args) -> int:
    import pyarrow as pa

    from graphsys import mining

    check_count("limit", args.limit, minimum=0)

    def body(graph, options):
        table = None
        if args.out is not None:
            counts = mining.clique_counts(graph, args.k, **options)
            total = int(counts.values.sum()) // args.k
            table = pa.table({"node": pa.array(graph.node_ids()),
                              counts.name: pa.array(counts.values)})
        else:
            total = mining.clique_count(graph, args.k, **options)
        result = {"k": args.k, "cliques": total}
        lines = [f"{args.k}-cliques: {total:,}"]
        if args.limit:
            listed = mining.cliques(graph, args.k, limit=args.limit,
                                    edge_set=options["edge_set"],
                                    memory_limit=options["memory_limit"])
            result["listed"] = listed.tolist()
            lines += [" ".join(str(x) for x in row) for row in listed.tolist()]
        return result, lines, table

    return _run(args, body)


def run_motifs(args) -> int:
    from graphsys import mining

    if args.samples is not None and (args.size != 4 or args.directed):
        raise GraphsysError("--samples applies to undirected 4-node motifs (3-node censuses "
                            "are exact and cheap)")

    def body(graph, options):
        sampled = args.samples is not None
        census = mining.motifs(graph, args.size, directed=args.directed,
                               method="sampled" if sampled else "exact",
                               samples=args.samples if sampled else 100_000, seed=args.seed,
                               **options)
        lines = [f"{name:>16}: {value:,.1f} ± {census.stderr.get(name, 0.0):,.1f}" if sampled
                 else f"{name:>16}: {value:,}" for name, value in census.counts.items()]
        return census.to_dict(), lines, None

    return _run(args, body)


def _pairs(text: str, what: str) -> list[tuple]:
    """``0-1,1-2`` as pairs of node numbers."""
    try:
        edges = [tuple(int(x) for x in pair.split("-")) for pair in text.split(",")]
    except ValueError:
        raise GraphsysError(f"{what} {text!r}: an edge list is pairs a-b of node "
                            f"numbers, comma-separated (0-1,1-2,2-0)") from None
    if any(len(e) != 2 for e in edges):
        raise GraphsysError(f"{what} {text!r}: each edge is two node numbers, a-b")
    return edges


def _labels(text: str | None, flag: str, per: str) -> list | None:
    """``0,*,2`` as labels, None for ``*``."""
    if text is None:
        return None
    try:
        return [None if x.strip() in ("*", "") else int(x) for x in text.split(",")]
    except ValueError:
        raise GraphsysError(f"{flag} {text!r}: give integers or * per {per}, "
                            f"comma-separated") from None


def parse_pattern(text: str, labels: str | None, anti: str | None = None,
                  directed: bool = False, edge_labels: str | None = None):
    """The PATTERN argument (a name or ``0-1,1-2``), ``--pattern-labels``,
    ``--anti-edges`` and ``--pattern-edge-labels`` as a :class:`~graphsys.mining.Pattern`."""
    from graphsys.mining import Pattern
    from graphsys.mining.pattern import NAMED

    lab = _labels(labels, "--pattern-labels", "pattern node")
    elab = _labels(edge_labels, "--pattern-edge-labels", "pattern edge")
    if text not in NAMED and "-" in text and text[0].isdigit() \
            and not text.endswith("clique"):  # 0-1,1-2: an edge list, 4-cycle: a name
        edges = _pairs(text, "pattern")
    else:
        named = Pattern.named(text, lab)  # checks the name and the labels
        edges = NAMED.get(text, named.edges)  # as listed: --directed reads them as arcs
    return Pattern(edges, lab, _pairs(anti, "--anti-edges") if anti else None, directed,
                   elab)


def run_pattern(args) -> int:
    import pyarrow as pa

    from graphsys import mining

    if args.pattern_labels is not None and args.labels is None:
        raise GraphsysError("--pattern-labels needs --labels COLUMN (the graph's labels)")
    if args.pattern_edge_labels is not None and args.edge_labels is None:
        raise GraphsysError("--pattern-edge-labels needs --edge-labels COLUMN (the graph's "
                            "edge labels)")
    pattern = parse_pattern(args.pattern, args.pattern_labels, args.anti_edges,
                            args.directed, args.pattern_edge_labels)
    check_count("limit", args.limit, minimum=0)

    def body(graph, options):
        total = mining.count(graph, pattern, induced=args.induced, labels=args.labels,
                             edge_labels=args.edge_labels, **options)
        result = {"pattern": [list(e) for e in pattern.arcs or pattern.edges],
                  "induced": args.induced,
                  "anti_edges": [list(e) for e in pattern.anti_edges],
                  "directed": pattern.directed,
                  "edge_labels": list(pattern.edge_labels),
                  "matches": total}
        lines = [f"{pattern}: {total:,} {'induced ' if args.induced else ''}matches"]
        table = None
        if args.limit or args.out is not None:
            rows = mining.matches(graph, pattern, induced=args.induced, labels=args.labels,
                                  edge_labels=args.edge_labels, limit=args.limit or None,
                                  edge_set=options["edge_set"],
                                  memory_limit=options["memory_limit"])
            if args.limit:
                result["listed"] = rows.tolist()
                lines += [" ".join(str(x) for x in row) for row in rows.tolist()]
            ids = pa.array(graph.node_ids()).type  # typed when no row matched, too
            table = pa.table({f"node{i}": pa.array(rows[:, i].tolist(), ids)
                              for i in range(pattern.num_nodes)})
        return result, lines, table

    return _run(args, body)


def run_fsm(args) -> int:
    from graphsys import mining
    from graphsys.execution import Execution

    def body(graph, options):
        if options["distributed"]:
            raise GraphsysError("mine fsm runs in one process (not under torchrun)")
        found = mining.frequent_subgraphs(graph, args.labels, args.support,
                                          max_edges=args.max_edges,
                                          exact=not args.early_exit,
                                          edge_labels=args.edge_labels,
                                          edge_set=options["edge_set"],
                                          execution=Execution(
                                              threads=options["threads"],
                                              memory_limit=options["memory_limit"]))
        lines = [f"{len(found)} frequent patterns (MNI support >= {args.support:,})"]
        lines += [f"{f.support:>10,}  {f.pattern}" for f in found]
        return {"support": args.support, "max_edges": args.max_edges,
                "exact": not args.early_exit, "patterns": [f.to_dict() for f in found]}, \
            lines, None

    return _run(args, body)
