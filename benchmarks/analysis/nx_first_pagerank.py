#!/usr/bin/env python
"""The first ``nx.pagerank(G, backend="graphsys")`` in a new process against NetworkX's own
first ``nx.pagerank(G)``, on email-Enron as a NetworkX graph.

Each turn starts one new process per side (alternating, so a change of the machine's speed
falls on both): it builds the NetworkX graph from the dataset's edges (not timed), then
times the first call (for graphsys: importing the backend, converting the graph, the
kernels loaded from the cache) and a second call in the same process (graphsys: on
NetworkX's cached conversion). One JSON line: each side's seconds (median, min, max over
the turns), NetworkX's first call over graphsys's turn by turn, and the largest difference
between the two answers. Run ``graphsys warmup`` beforehand so that no kernel is compiled
in the timed call. Usage::

    python benchmarks/analysis/nx_first_pagerank.py --work DIR [--turns 5]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root

from benchmarks import harness

#: Run in the child: ``side`` (networkx or graphsys), the graph directory, an output file
#: for the ranks.
CHILD = """
import json, sys, time
import numpy as np
import networkx as nx
import graphsys
side, path, ranks = sys.argv[1:4]
g = graphsys.open_graph(path)
G = nx.Graph()
G.add_nodes_from(g.node_ids().tolist())
for s, d, _, _ in g.iter_edges():
    G.add_edges_from(zip(g.to_original(s).tolist(), g.to_original(d).tolist()))
kw = {} if side == "networkx" else {"backend": "graphsys"}
nx.config.warnings_to_ignore.add("cache")
t = time.perf_counter()
first = nx.pagerank(G, **kw)
t1 = time.perf_counter() - t
t = time.perf_counter()
nx.pagerank(G, **kw)
t2 = time.perf_counter() - t
np.save(ranks, np.array([first[k] for k in sorted(first)]))
print(json.dumps({"first_s": t1, "second_s": t2, "torch": "torch" in sys.modules}))
"""


def main(argv: list[str] | None = None) -> int:
    ap = harness.parser(__doc__)
    ap.add_argument("--work", type=Path, required=True, help="work directory")
    ap.add_argument("--turns", type=harness.count, default=5,
                    help="new processes per side (default 5)")
    args = ap.parse_args(argv)
    run = harness.Run("analysis/nx_first_pagerank", args.record, memory=False)
    work, graph = harness.work_dataset(run, args.work, "email-enron")
    if graph is None:
        run.emit(rows={})
        return 1

    def side(name: str):
        def call() -> dict:
            child = harness.run_child([sys.executable, "-c", CHILD, name, str(graph.path),
                                       str(work / f"{name}.npy")], cwd=work)
            return child.json

        return call

    turns = harness.alternate({"networkx": side("networkx"), "graphsys": side("graphsys")},
                              args.turns)
    import numpy as np

    diff = float(np.abs(np.load(work / "networkx.npy") - np.load(work / "graphsys.npy")).max())
    out = {name: harness.spread_by_key(rows) for name, rows in turns.items()}
    ratio = harness.pair_ratios([r["first_s"] for r in turns["networkx"]],
                                [r["first_s"] for r in turns["graphsys"]])
    print(json.dumps({"networkx_over_graphsys_first": ratio}), flush=True)
    run.emit(graph="email-enron", turns=args.turns, sides=out,
             networkx_over_graphsys_first=ratio["median"], max_abs_diff=diff,
             graphsys_imported_torch=any(r["torch"] for r in turns["graphsys"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
