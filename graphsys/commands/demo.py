"""``graphsys demo``: the main job on an embedded default, with no download.

Generates a seeded R-MAT graph, ingests it into P partitions, verifies the directory and
prints what was built. Each later subsystem adds its step here.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from graphsys.commands._common import emit_json, show_progress
from graphsys.errors import GraphsysError
from graphsys.generators import rmat_edges, write_edges
from graphsys.storage.graph import open_graph
from graphsys.storage.info import format_info, graph_info
from graphsys.storage.ingest import EdgeSource, IngestOptions, ingest
from graphsys.storage.verify import verify_graph


def register(subparsers) -> None:
    p = subparsers.add_parser("demo", help="generate, ingest and inspect a synthetic graph",
                              description=__doc__)
    p.add_argument("--out", type=Path,
                   help="working directory to create (default: a new temporary directory)")
    p.add_argument("--nodes", type=int, default=1 << 14, help="R-MAT nodes (default 16384)")
    p.add_argument("--edges", type=int, default=200_000, help="R-MAT edges (default 200000)")
    p.add_argument("--partitions", type=int, default=4, help="P (default 4)")
    p.add_argument("--seed", type=int, default=0, help="seed of every random choice (default 0)")
    p.add_argument("--json", action="store_true", help="print one JSON line of results")
    p.set_defaults(func=run)


def run(args) -> int:
    if args.out is not None:
        if args.out.exists():
            raise GraphsysError(f"{args.out}: already exists (choose a new --out)")
        args.out.mkdir(parents=True)
        work = args.out
    else:
        work = Path(tempfile.mkdtemp(prefix="graphsys-demo-"))
    say = (lambda *a: None) if args.json else print
    results: dict[str, object] = {"workdir": str(work)}

    t0 = time.perf_counter()
    edge_file = work / "rmat.parquet"
    write_edges(rmat_edges(args.nodes, args.edges, seed=args.seed), edge_file)
    results["generate"] = {"file": str(edge_file), "nodes": args.nodes, "edges": args.edges,
                           "seed": args.seed, "seconds": round(time.perf_counter() - t0, 3)}
    say(f"[1/3] generated R-MAT graph: {args.edges:,} edges over {args.nodes:,} node ids "
        f"(seed {args.seed}) -> {edge_file}")

    graph_dir = work / "graph"
    report = ingest([EdgeSource([edge_file])], graph_dir,
                    IngestOptions(num_partitions=args.partitions, seed=args.seed,
                                  progress=show_progress(args)))
    results["ingest"] = report.to_json()
    say(f"[2/3] ingested into {args.partitions} partitions in {report.seconds['total']:.2f} s "
        f"-> {graph_dir}")

    checked = verify_graph(graph_dir)
    info = graph_info(open_graph(graph_dir))
    results["verify"] = checked
    results["info"] = info
    say(f"[3/3] verified {checked['files']} files ({checked['bytes']:,} bytes)")
    say(format_info(info))
    if args.json:
        emit_json(results)
    return 0
