"""``graphsys datasets``: list the dataset registry, fetch a dataset, ingest it as a graph.

Files come from the cache (``--cache`` / ``GRAPHSYS_DATA``, default
``~/.cache/graphsys/datasets``), else from a local mirror (``--mirror`` / ``GRAPHSYS_MIRROR``),
else from the original publisher over HTTP(S); every file is verified by sha256.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

from graphsys.commands._common import add_quiet_arg, emit_json, show_progress
from graphsys.outputs import check_output_directory
from graphsys.plugins import DEFAULT_PARTITIONER, PARTITIONERS

if TYPE_CHECKING:
    from graphsys.datasets.fetch import FetchResult
    from graphsys.datasets.registry import Dataset


def register(subparsers) -> None:
    p = subparsers.add_parser("datasets", help="list, fetch and ingest registry datasets",
                              description=__doc__)
    sub = p.add_subparsers(dest="datasets_command", metavar="SUBCOMMAND", required=True)

    ls = sub.add_parser("list", help="list the registry's datasets")
    ls.add_argument("--json", action="store_true", help="print one JSON line")
    ls.set_defaults(func=run)

    fe = sub.add_parser("fetch", help="get a dataset's files into the cache, verified")
    fe.add_argument("name", metavar="NAME")
    _source_args(fe)
    fe.add_argument("--json", action="store_true", help="print one JSON line")
    fe.set_defaults(func=run)

    ing = sub.add_parser("ingest", help="fetch a dataset and ingest it as a graph directory")
    ing.add_argument("name", metavar="NAME")
    ing.add_argument("--out", required=True, type=Path, help="graph directory to create")
    ing.add_argument("--partitions", dest="num_partitions", type=int, default=1,
                     help="P, number of partitions (default 1)")
    ing.add_argument("--partitioner", default=DEFAULT_PARTITIONER,
                     help=f"one of {', '.join(PARTITIONERS.names())} "
                          f"(default {DEFAULT_PARTITIONER})")
    _source_args(ing)
    ing.add_argument("--split", choices=("public", "random", "temporal"), default=None,
                     help="the standard public split (default where the dataset has one, "
                          "e.g. Planetoid for Cora/CiteSeer), the seeded random split, or "
                          "(MovieLens) the leave-last-out split by timestamp: edge sets "
                          "train, valid, test")
    ing.add_argument("--memory-limit", default="2GB",
                     help="memory budget of the ingest, e.g. 1GB, 512MiB (default 2GB; at least "
                          "64KiB)")
    ing.add_argument("--json", action="store_true", help="print one JSON line")
    add_quiet_arg(ing)
    ing.set_defaults(func=run)


def _source_args(p) -> None:
    p.add_argument("--mirror", type=Path, metavar="DIR",
                   help="copy files from this local mirror instead of downloading "
                        "(default: $GRAPHSYS_MIRROR)")
    p.add_argument("--cache", type=Path, metavar="DIR",
                   help="cache directory (default: $GRAPHSYS_DATA or ~/.cache/graphsys/datasets)")


def run(args) -> int:
    from graphsys.datasets.fetch import fetch
    from graphsys.datasets.loaders import ingest_dataset
    from graphsys.datasets.registry import get_dataset
    from graphsys.storage.ingest import IngestOptions
    from graphsys.units import parse_size

    if args.datasets_command == "list":
        return _list(args)
    dataset = get_dataset(args.name)
    if not dataset.licence.redistribute:
        print(f"note: {dataset.name} may not be redistributed ({dataset.licence.name}); "
              f"keep it out of packages and repositories", file=sys.stderr)
    if args.datasets_command == "ingest":
        check_output_directory(args.out)
    log = None if args.json else (lambda line: print(line, file=sys.stderr))
    fetched = fetch(dataset, cache=args.cache, mirror=args.mirror, log=log)
    if args.datasets_command == "fetch":
        return _fetched(args, fetched)
    opts = IngestOptions(partitions=args.num_partitions, partitioner=args.partitioner,
                         memory_limit=parse_size(args.memory_limit, field="--memory-limit"),
                         progress=show_progress(args))
    report, metadata = ingest_dataset(fetched, args.out, opts, args.split)
    if args.json:
        emit_json({"dataset": dataset.name, "fetch": fetched.to_json(),
                   "ingest": report.to_json(), "metadata": metadata})
    else:
        nodes = ", ".join(f"{k}: {v:,}" for k, v in report.nodes.items())
        edges = ", ".join(f"{k}: {v:,}" for k, v in report.edges.items())
        print(f"ingested {dataset.name} into {args.out}: nodes ({nodes}), edges ({edges}), "
              f"{report.num_partitions} partition(s) by {report.partitioner['name']}, "
              f"{report.seconds['total']:.2f} s")
        print(f"cite: {dataset.citation[0]}")
    return 0


def _list(args) -> int:
    from graphsys.datasets.registry import load_registry

    datasets = load_registry()
    if args.json:
        emit_json([d.summary() for d in datasets.values()])
        return 0
    rows = [("NAME", "KIND", "NODES", "EDGES", "LICENCE")]
    rows += [(d.name, d.kind, _count(d, "nodes"), _count(d, "edges"), _licence(d))
             for d in datasets.values()]
    widths = [max(len(r[k]) for r in rows) for k in range(4)]
    for r in rows:
        print("  ".join(c.ljust(w) if k != 2 and k != 3 else c.rjust(w)
                        for k, (c, w) in enumerate(zip(r, widths))) + "  " + r[4])
    return 0


def _count(d: Dataset, key: str) -> str:
    return f"{d.stats[key]:,}" if key in d.stats else "-"


def _licence(d: Dataset) -> str:
    return d.licence.name + ("" if d.licence.redistribute else " [no redistribution]")


def _fetched(args, fetched: FetchResult) -> int:
    if args.json:
        emit_json(fetched.to_json())
        return 0
    for name, f in fetched.files.items():
        print(f"{name}: {f.path} ({f.bytes:,} bytes, {f.source}, sha256 {f.sha256[:12]}... ok)")
    return 0
