"""Benchmark ``verify --quick`` (structure only) against ``verify`` (structure + sha256).

    python scripts/bench_verify.py GRAPH_DIR [--repeat 5]

Runs both in this process, alternating, after one warm-up (page cache warm); prints one JSON
line: graph size, median seconds of each, their ratio, and the load average.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from render_results import add_record_argument, emit

from graphsys.storage.verify import verify_graph


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("graph")
    parser.add_argument("--repeat", type=int, default=5)
    add_record_argument(parser)
    args = parser.parse_args()
    info = verify_graph(args.graph, quick=True)  # warm-up: numba, page cache
    times: dict[bool, list[float]] = {True: [], False: []}
    for _ in range(args.repeat):
        for quick in (True, False):
            t0 = time.perf_counter()
            verify_graph(args.graph, quick=quick)
            times[quick].append(time.perf_counter() - t0)
    quick, full = statistics.median(times[True]), statistics.median(times[False])
    emit({"bench": "verify", "graph": args.graph, "edges": info["edges"],
                      "nodes": info["nodes"], "bytes": info["bytes"], "files": info["files"],
                      "repeat": args.repeat, "quick_s": round(quick, 3),
                      "full_s": round(full, 3), "full_over_quick": round(full / quick, 2),
                      "load_avg": [round(x, 2) for x in os.getloadavg()]}, args.record)


if __name__ == "__main__":
    main()
