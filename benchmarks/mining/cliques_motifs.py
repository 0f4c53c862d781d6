#!/usr/bin/env python
"""4-cliques and 3/4/5-node motif censuses, beside igraph (``cliques``, ``motifs_randesu``)
and networkx on the same graphs.

Graphs: email-Enron, ca-GrQc, CiteSeer and email-Eu-core (registry datasets through the
mirror; CiteSeer
for Peregrine's published 3-motif figure on its 3,264-vertex CiteSeer), each with its
undirected ``sym`` index (built once, untimed). Peers get their graph object built
beforehand from the index's arrays (untimed). Per graph and workload, graphsys and each
peer take ``--turns`` alternated turns; a figure is the median over turns, the ratio the
median of the per-turn ratios (peer time over graphsys time):

* ``4-cliques``: ``mining.clique_count(g, 4)`` against igraph's ``cliques(4, 4)`` (which
  lists them) and networkx's ``enumerate_all_cliques`` stopped after size 4 (only where it
  takes under ``--nx-cap`` seconds once; else the row names it missing);
* ``3-motifs``: ``mining.motifs(g, 3)`` (induced wedges and triangles) against igraph's
  ``motifs_randesu(size=3)`` and networkx's ``triangles`` plus degrees (the wedges
  ``sum C(d, 2) - 3 T``: networkx has no motif census);
* ``4-motifs``: ``mining.motifs(g, 4)`` against ``motifs_randesu(size=4)``, and the sampled
  estimate ``method="sampled"`` (``--samples`` draws) beside the exact census, with its
  largest relative error;
* ``5-motifs`` (graphs in ``--motifs5``): ``mining.motifs(g, 5)`` (the 21 connected
  classes) against ``motifs_randesu(size=5)`` where the graph is also in ``--igraph5``
  (igraph's disconnected classes, NaN, left out).

Every count is checked against the peers' (exact rows must agree). ``--threads`` threads
for graphsys (igraph and networkx run one). Usage::

    NUMBA_NUM_THREADS=2 python benchmarks/mining/cliques_motifs.py --work DIR [--turns 3]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root

from benchmarks import harness
from benchmarks.mining.triangles import sym_index, upper_edges

DATASETS = ("email-enron", "ca-grqc", "citeseer", "email-eu-core")


def isoclasses(size: int) -> dict[str, int]:
    """igraph's isoclass of each of graphsys's connected undirected classes."""
    import igraph as ig

    from graphsys.mining.motif import UNDIRECTED_3, UNDIRECTED_4, UNDIRECTED_5
    from graphsys.mining.pattern import Pattern

    names = {3: UNDIRECTED_3, 4: UNDIRECTED_4, 5: UNDIRECTED_5}[size]
    return {name: ig.Graph(n=size, edges=Pattern.named(name).edges).isoclass()
            for name in names}


def compare(run, name: str, g, args) -> dict:
    import networkx as nx
    import numpy as np

    from graphsys import mining

    n, rows, cols = upper_edges(g)
    row = {"graph": name, "nodes": n, "edges": len(rows)}
    try:
        import igraph as ig

        G = ig.Graph(n=n, edges=np.stack([rows, cols], 1))
    except ImportError as exc:
        run.missing(f"{name} igraph", str(exc))
        G = None
    X = nx.Graph()
    X.add_nodes_from(range(n))
    X.add_edges_from(zip(rows.tolist(), cols.tolist()))
    t = args.threads

    def side(fn):
        return lambda: harness.timed(fn)

    def record(label: str, sides: dict, check) -> None:
        harness.log(f"{name}: {label}")
        sides["graphsys"]()  # compiled kernels loaded (the peers need no warm-up)
        got = harness.alternate({k: side(f) for k, f in sides.items() if f is not None},
                                args.turns)
        times = {k: [s for s, _ in v] for k, v in got.items()}
        answers = {k: v[-1][1] for k, v in got.items()}
        entry = {"seconds": {k: harness.spread(v) for k, v in times.items()},
                 "answer": answers["graphsys"]}
        for peer in times:
            if peer != "graphsys":
                entry[f"ratio_{peer}"] = harness.pair_ratios(times[peer], times["graphsys"])
                entry[f"agrees_{peer}"] = check(answers["graphsys"], answers[peer])
        row[label] = entry

    # 4-cliques
    nx_cliques = None
    seconds, _ = harness.timed(lambda: _nx_cliques(X, args.nx_cap))
    if seconds <= args.nx_cap:
        nx_cliques = (lambda: _nx_cliques(X, None))
    else:
        run.missing(f"{name} networkx 4-cliques", f"over --nx-cap {args.nx_cap} s")
    record("4-cliques", {"graphsys": lambda: mining.clique_count(g, 4, threads=t),
                         "igraph": (lambda: len(G.cliques(4, 4))) if G is not None else None,
                         "networkx": nx_cliques},
           lambda a, b: a == b)

    # 3-motifs
    cls3 = isoclasses(3)

    def ig3():
        m = G.motifs_randesu(size=3)
        return {k: int(m[c]) for k, c in cls3.items()}

    def nx3():
        tri = sum(nx.triangles(X).values()) // 3
        deg = np.fromiter((d for _, d in X.degree), np.int64, n)
        return {"wedge": int((deg * (deg - 1) // 2).sum()) - 3 * tri, "triangle": tri}

    record("3-motifs", {"graphsys": lambda: mining.motifs(g, 3, threads=t).counts,
                        "igraph": ig3 if G is not None else None, "networkx": nx3},
           lambda a, b: a == b)

    # 4-motifs, exact and sampled
    cls4 = isoclasses(4)

    def ig4():
        m = G.motifs_randesu(size=4)
        return {k: int(m[c]) for k, c in cls4.items()}

    if G is not None and name in args.igraph4.split(","):
        record("4-motifs", {"graphsys": lambda: mining.motifs(g, 4, threads=t).counts,
                            "igraph": ig4}, lambda a, b: a == b)
    else:
        record("4-motifs", {"graphsys": lambda: mining.motifs(g, 4, threads=t).counts},
               lambda a, b: a == b)
        run.missing(f"{name} igraph 4-motifs", "not in --igraph4")
    exact = row["4-motifs"]["answer"]
    row["4-motifs sampled"] = {**_sampled(g, exact, args), "exact_seconds":
                               row["4-motifs"]["seconds"]["graphsys"]["median"]}
    if name in args.motifs5.split(","):
        cls5 = isoclasses(5)

        def ig5():
            m = G.motifs_randesu(size=5)
            return {k: int(m[c]) for k, c in cls5.items()}

        peer = ig5 if G is not None and name in args.igraph5.split(",") else None
        if peer is None:
            run.missing(f"{name} igraph 5-motifs", "not in --igraph5")
        record("5-motifs", {"graphsys": lambda: mining.motifs(g, 5, threads=t).counts,
                            "igraph": peer}, lambda a, b: a == b)
    else:
        run.missing(f"{name} 5-motifs", "not in --motifs5")
    return row


def _sampled(g, exact: dict, args) -> dict:
    """The sampled 4-node census beside the exact one: its median seconds and errors."""
    from graphsys import mining

    t = args.threads

    def sampled():
        return mining.motifs(g, 4, method="sampled", samples=args.samples, seed=0, threads=t)

    sampled()
    seconds, est = harness.median_seconds(sampled, args.turns)
    return {
        "seconds": round(seconds, 4), "samples": args.samples,
        "relative_error": {k: round(abs(est.counts[k] - v) / v, 5) if v else None
                           for k, v in exact.items()},
        "relative_stderr": {k: round(est.stderr[k] / v, 5) if v else None
                            for k, v in exact.items()},
        "within_3_stderr": all(abs(est.counts[k] - v) <= 3 * est.stderr[k] + 1
                               for k, v in exact.items())}


def _nx_cliques(X, cap: float | None) -> int:
    """networkx's 4-cliques: ``enumerate_all_cliques`` (by increasing size) stopped after
    size 4, or at ``cap`` seconds."""
    import time

    import networkx as nx

    t0, count = time.perf_counter(), 0
    for c in nx.enumerate_all_cliques(X):
        if len(c) > 4 or (cap is not None and time.perf_counter() - t0 > cap):
            break
        count += len(c) == 4
    return count


def main(argv: list[str] | None = None) -> int:
    ap = harness.parser(__doc__)
    ap.add_argument("--work", type=Path, default=Path("/tmp/bench-mining"),
                    help="where graphs are stored (default /tmp/bench-mining)")
    ap.add_argument("--datasets", default=",".join(DATASETS),
                    help=f"comma-separated registry datasets (default {','.join(DATASETS)})")
    ap.add_argument("--threads", type=int, default=2, help="graphsys's threads (2)")
    ap.add_argument("--turns", type=int, default=3, help="alternated turns (3)")
    ap.add_argument("--samples", type=harness.count, default=harness.count("100k"),
                    help="draws of the sampled 4-motif census (100k)")
    ap.add_argument("--nx-cap", type=float, default=60.0,
                    help="seconds networkx's clique listing may take once (60)")
    ap.add_argument("--igraph4", default="ca-grqc,citeseer",
                    help="graphs on which igraph's 4-node census runs (default "
                         "ca-grqc,citeseer: on email-Enron it takes minutes per turn)")
    ap.add_argument("--motifs5", default="email-eu-core,citeseer",
                    help="graphs on which the 5-node census runs (default "
                         "email-eu-core,citeseer: email-Enron has about 1e12 connected "
                         "5-node subsets, beyond an enumeration)")
    ap.add_argument("--igraph5", default="email-eu-core,citeseer",
                    help="of those, where igraph's 5-node census runs beside it (default "
                         "email-eu-core,citeseer)")
    harness.add_mirror_argument(ap)
    args = ap.parse_args(argv)
    harness.use_mirror(args.mirror)
    run = harness.Run("mining/cliques_motifs", args.record)
    rows = []
    for name in [d for d in args.datasets.split(",") if d]:
        stored = harness.dataset(run, name, args.work / name, partitions=4)
        if stored is None:
            continue
        g, built = sym_index(stored.path)
        rows.append({**compare(run, name, g, args), **built})
    run.emit(threads=args.threads, turns=args.turns, graphs=rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
