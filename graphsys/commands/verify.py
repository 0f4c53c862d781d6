"""``graphsys verify``: check every checksum, count and offset of a stored graph.

``--quick`` checks the structure only (counts, schemas, offset ranges, sort order; no
sha256): what every engine also checks on first touch, minutes faster on a large graph."""

from __future__ import annotations

from graphsys.commands._common import emit_json, graph_arg
from graphsys.storage.verify import verify_graph


def register(subparsers) -> None:
    p = subparsers.add_parser("verify", help="check a graph directory's integrity",
                              description=__doc__)
    p.add_argument("graph", type=graph_arg, metavar="DIR|URI")
    p.add_argument("--quick", action="store_true",
                   help="structure only (counts, schemas, offset ranges, order): no hashes")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=run)


def run(args) -> int:
    result = verify_graph(args.graph, quick=args.quick)
    what = "structure verified (no hashes)" if args.quick else "verified"
    if args.json:
        emit_json({"ok": True, "quick": args.quick, **result})
    else:
        print(f"ok: {args.graph}: {result['files']} files, {result['bytes']:,} bytes, "
              f"{result['nodes']:,} nodes, {result['edges']:,} edges {what}")
    return 0
