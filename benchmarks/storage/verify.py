#!/usr/bin/env python
"""``verify --quick`` (structure: metadata, id bounds and order) beside ``verify`` (the same
plus the sha256 of every file) on one graph directory.

Both run in this process, taking turns ``--repeat`` times after one warm-up (page cache
warm, numba compiled); the JSON line holds the graph's size, the median seconds of each,
the ratio of the medians and the per-turn ratios. Usage::

    python benchmarks/storage/verify.py GRAPH_DIR [--repeat 5]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root

from benchmarks import harness


def main(argv: list[str] | None = None) -> int:
    ap = harness.parser(__doc__)
    ap.add_argument("graph", type=Path)
    ap.add_argument("--repeat", type=int, default=5, help="turns of each (default 5)")
    args = ap.parse_args(argv)
    from graphsys.storage.verify import verify_graph

    run = harness.Run("storage/verify", args.record)
    info = verify_graph(args.graph, quick=True)  # warm-up: numba, page cache

    def seconds(quick: bool):
        return lambda: harness.timed(lambda: verify_graph(args.graph, quick=quick))[0]

    turns = harness.alternate({"quick": seconds(True), "full": seconds(False)}, args.repeat)
    quick, full = harness.median(turns["quick"]), harness.median(turns["full"])
    run.emit(graph=str(args.graph), edges=info["edges"], nodes=info["nodes"],
             bytes=info["bytes"], files=info["files"], repeat=args.repeat,
             quick_s=round(quick, 3), full_s=round(full, 3),
             full_over_quick=round(full / quick, 2),
             per_turn=harness.pair_ratios(turns["full"], turns["quick"], 2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
