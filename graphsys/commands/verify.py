"""``graphsys verify``: check every checksum, count and offset of a stored graph.

``--quick`` checks the structure only (counts, schemas, offset ranges, sort order, finite
weights and each edge set's ``undirected``/``dedupe``/``drop_self_loops`` rule; no sha256),
minutes faster on a large graph.

What an interrupted writer left (an index build directory, a temporary file, a staging
directory beside the graph) is not damage: the graph verifies, and one ``note:`` line on
stderr names the leftovers: safe to delete (the next ``graphsys index`` removes index build
directories, the next ingest or append to the same path staging directories)."""

from __future__ import annotations

import sys

from graphsys.commands._common import emit_json, graph_arg


def register(subparsers) -> None:
    p = subparsers.add_parser("verify", help="check a graph directory's integrity",
                              description=__doc__)
    p.add_argument("graph", type=graph_arg, metavar="DIR|URI")
    p.add_argument("--quick", action="store_true",
                   help="structure only (counts, schemas, offset ranges, order): no hashes")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=run)


def run(args) -> int:
    from graphsys.storage.verify import verify_graph

    result = verify_graph(args.graph, quick=args.quick)
    what = "structure verified (no hashes)" if args.quick else "verified"
    if args.json:
        emit_json({"ok": True, "quick": args.quick, **result})
    else:
        print(f"ok: {args.graph}: {result['files']} files, {result['bytes']:,} bytes, "
              f"{result['nodes']:,} nodes, {result['edges']:,} edges {what}")
    left = result["leftovers"]
    if left:
        more = f" (and {len(left) - 1} more)" if len(left) > 1 else ""
        print(f"note: {left[0]}{more}: left by an interrupted write, not part of the graph, "
              f"which is intact; safe to delete (the next graphsys index removes index build "
              f"directories, the next ingest or append staging directories)", file=sys.stderr)
    return 0
