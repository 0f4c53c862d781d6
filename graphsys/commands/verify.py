"""``graphsys verify``: check every checksum, count and offset of a stored graph."""

from __future__ import annotations

from pathlib import Path

from graphsys.commands._common import emit_json
from graphsys.storage.verify import verify_graph


def register(subparsers) -> None:
    p = subparsers.add_parser("verify", help="check a graph directory's integrity",
                              description=__doc__)
    p.add_argument("graph", type=Path, metavar="DIR")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=run)


def run(args) -> int:
    result = verify_graph(args.graph)
    if args.json:
        emit_json({"ok": True, **result})
    else:
        print(f"ok: {args.graph}: {result['files']} files, {result['bytes']:,} bytes, "
              f"{result['nodes']:,} nodes, {result['edges']:,} edges verified")
    return 0
