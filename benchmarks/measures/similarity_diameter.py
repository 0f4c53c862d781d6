#!/usr/bin/env python
"""Link scores of 10,000 node pairs and the diameter, graphsys beside igraph and NetworKit
(and NetworkX where it finishes), on email-Enron, soc-Slashdot0902, luxembourg-osm and an
R-MAT graph.

Graphs: the three registry datasets (mirror or download; a missing one is listed under
``missing``) and a seeded R-MAT (``graphsys.generators``, Graph500 parameters, directed;
``--rmat-edges`` edges over ``--rmat-nodes`` ids), each stored once under ``--work`` with
parallel edges and self-loops dropped (the libraries count self-loops differently; without
them all compute the same numbers) and its adjacency indexes, as ``graphsys index``
builds them (CSR; for a directed graph also CSC and ``sym``, the undirected view).
Directed graphs (Slashdot, R-MAT) are measured in their undirected view, as NetworkX's
link predictors and igraph's ``similarity_jaccard`` read them; the peers get that view as
an undirected simple graph built from the stored one (builds excluded).

* ``similarity``: 10,000 pairs, the ends of random edges (degree-biased, seed 0). Jaccard:
  ``measures.link_scores(g, pairs, "jaccard", internal=True)`` with the per-graph degree
  memo cleared before every turn, igraph's ``similarity_jaccard(pairs=..., loops=False)``,
  NetworKit's ``JaccardIndex.runOn`` (its threads), NetworkX's ``jaccard_coefficient``
  (graphs of at most ``--networkx-max-edges`` edges); Adamic-Adar beside NetworKit's
  ``AdamicAdarIndex.runOn``. Sides alternated for ``--turns`` turns; seconds are medians;
  ``equal`` is the largest absolute difference of the scores against each peer.
* ``diameter``: ``measures.diameter(g, exact=True)`` (iFUB) and the default estimate
  (4-sweep), beside NetworKit's exact ``Diameter`` (alternated, ``--diameter-turns``) and
  igraph's ``diameter(unconn=True)`` (breadth-first searches from every node) in a child
  process stopped after ``--igraph-diameter-seconds`` (one turn). NetworkX's ``diameter``
  refuses disconnected graphs and searches from every node in Python: not run.
* ``ratio``: the fastest peer's seconds over graphsys's, turn by turn, and their median
  (> 1: graphsys faster; igraph's one diameter turn over graphsys's median).

Every library gets numba's thread count (``NUMBA_NUM_THREADS``; NetworKit's
``setNumberOfThreads``; igraph runs on one thread). Usage::

    NUMBA_NUM_THREADS=2 python benchmarks/measures/similarity_diameter.py --work DIR
        [--turns 5] [--diameter-turns 3] [--rmat-edges 20M] [--skip-rmat]
        [--only similarity|diameter] [--graphs email-enron,...]
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root

import numpy as np

# first: importing graphsys sets OMP_WAIT_POLICY before any OpenMP pool (numba's) starts
import graphsys
from benchmarks import harness
from graphsys import measures
from graphsys.measures.view import undirected_view

#: name -> (registry file role, delimiter, undirected)
DATASETS = {
    "email-enron": ("\t", True),
    "soc-slashdot0902": ("\t", False),
    "luxembourg-osm": (" ", True),
}
PAIRS = 10_000

IGRAPH_DIAMETER = """
import json, sys, time
import numpy as np, igraph as ig
e = np.load(sys.argv[1])
g = ig.Graph(n=int(sys.argv[2]), edges=e, directed=False)
t = time.perf_counter()
d = g.diameter(directed=False, unconn=True)
print(json.dumps({"seconds": time.perf_counter() - t, "diameter": d}))
"""


def stored(run, name: str, work: Path):
    """A registry dataset stored simple (no self-loops, no parallel edges) with its index."""
    out = work / name
    if (out / "manifest.json").is_file():
        return graphsys.open_graph(out)
    files = harness.dataset_files(run, name, work / "cache")
    if files is None:
        return None
    delimiter, undirected = DATASETS[name]
    return graphsys.ingest(files.path("edges"), out, delimiter=delimiter, undirected=undirected,
                           dedupe=True, drop_self_loops=True,
                           index=("csr",) if undirected else ("csr", "csc", "sym"))


def rmat(work: Path, edges: int, nodes: int):
    from graphsys.generators import rmat_edges, write_edges

    out = work / f"rmat-{edges}-{nodes}-simple"
    if (out / "manifest.json").is_file():
        return graphsys.open_graph(out)
    work.mkdir(parents=True, exist_ok=True)
    edge_file = work / f"{out.name}.parquet"
    harness.log(f"generating R-MAT: {edges:,} edges over {nodes:,} ids, seed 1")
    write_edges(rmat_edges(nodes, edges, seed=1), edge_file, overwrite=True)
    g = graphsys.ingest(edge_file, out, dedupe=True, drop_self_loops=True,
                        index=("csr", "csc", "sym"), memory_limit="4GB")
    edge_file.unlink()
    return g


def simple_edges(view) -> tuple[np.ndarray, np.ndarray]:
    """The undirected view as (u, v) with u < v, each pair once."""
    import scipy.sparse as sp

    n = view.num_nodes
    ones = np.ones(len(view.oidx), np.int8)
    a = sp.csr_matrix((ones, np.asarray(view.oidx), np.asarray(view.optr)), shape=(n, n))
    if not view.sym:
        a = a + a.T
    upper = sp.triu(a, k=1).tocoo()
    return upper.row.astype(np.int64), upper.col.astype(np.int64)


def degree_biased_pairs(u: np.ndarray, v: np.ndarray, count: int) -> np.ndarray:
    """``count`` pairs of distinct nodes, each end the end of a random edge (seed 0)."""
    rng = np.random.default_rng(0)
    ends = np.concatenate([u, v])
    pairs = ends[rng.integers(0, len(ends), (2 * count, 2))]
    pairs = pairs[pairs[:, 0] != pairs[:, 1]][:count]
    return np.ascontiguousarray(pairs)


def fastest(peers: dict[str, list[float]]) -> str | None:
    timed = {k: v for k, v in peers.items() if v}
    return min(timed, key=lambda k: harness.median(timed[k])) if timed else None


def compare(ours: list[float], peers: dict[str, list[float]]) -> dict:
    best = fastest(peers)
    if best is None:
        return {"fastest_peer": None, "ratio": None}
    return {"fastest_peer": best, "ratio": harness.pair_ratios(peers[best], ours)}


def similarity(g, name: str, u, v, args, nk, ig) -> dict:
    view = undirected_view(g)
    pairs = degree_biased_pairs(u, v, PAIRS)
    plist = [tuple(p) for p in pairs.tolist()]
    out: dict = {"pairs": len(pairs)}
    G_ig = ig.Graph(n=view.num_nodes, edges=np.column_stack([u, v]), directed=False) if ig \
        else None
    G_nk = None
    if nk is not None:
        G_nk = nk.graph.Graph(view.num_nodes, False, False)
        G_nk.addEdges((u.astype(np.uint64), v.astype(np.uint64)))
    for method, nk_name in (("jaccard", "JaccardIndex"), ("adamic_adar", "AdamicAdarIndex")):
        results: dict = {}

        def ours(method=method, results=results):
            view._memo = None  # every turn computes the degrees it needs
            seconds, scores = harness.timed(
                lambda: measures.link_scores(g, pairs, method, internal=True))
            results["graphsys"] = scores
            return seconds

        def networkit(nk_name=nk_name, results=results):
            index = getattr(nk.linkprediction, nk_name)(G_nk)
            seconds, scores = harness.timed(lambda: index.runOn(plist))
            got = dict(scores)
            results["networkit"] = np.array([got[p] if p in got else got[p[::-1]]
                                             for p in plist])
            return seconds

        def igraph_(results=results):
            seconds, scores = harness.timed(
                lambda: G_ig.similarity_jaccard(pairs=plist, loops=False))
            results["igraph"] = np.asarray(scores)
            return seconds

        ours()  # compiled, the view mapped, before the clock
        sides = {"graphsys": ours, "networkit": networkit if G_nk is not None else None,
                 "igraph": igraph_ if (G_ig is not None and method == "jaccard") else None}
        turns = harness.alternate(sides, args.turns)
        row = {k: harness.spread(t) for k, t in turns.items()}
        row.update(compare(turns["graphsys"], {k: t for k, t in turns.items()
                                               if k != "graphsys"}))
        if method == "jaccard" and len(u) <= args.networkx_max_edges:
            import networkx as nx

            H = nx.Graph()
            H.add_nodes_from(range(view.num_nodes))
            H.add_edges_from(zip(u.tolist(), v.tolist()))
            seconds, scores = harness.timed(lambda H=H: [s for _, _, s in
                                                         nx.jaccard_coefficient(H, plist)])
            row["networkx"] = {"median": seconds, "turns": 1}
            results["networkx"] = np.asarray(scores)
        row["max_abs_diff"] = {k: float(np.max(np.abs(results[k] - results["graphsys"])))
                               for k in results if k != "graphsys"}
        out[method] = row
        harness.log(f"{name} {method}: " + ", ".join(
            f"{k} {row[k]['median'] * 1e3:.2f} ms" for k in ("graphsys", "igraph", "networkit",
                                                            "networkx") if k in row))
    return out


def diameter(g, name: str, u, v, args, nk, work: Path) -> dict:
    view = undirected_view(g)
    found: dict = {}

    def exact():
        seconds, d = harness.timed(lambda: measures.diameter(g, exact=True))
        found["graphsys"] = d.value
        found["searches"] = d.searches
        return seconds

    def estimate():
        seconds, d = harness.timed(lambda: measures.diameter(g))
        found["estimate"] = [d.lower, d.upper]
        return seconds

    G_nk = None
    if nk is not None:
        G_nk = nk.graph.Graph(view.num_nodes, False, False)
        G_nk.addEdges((u.astype(np.uint64), v.astype(np.uint64)))

    def networkit():
        algo = nk.distance.Diameter(G_nk, nk.distance.DiameterAlgo.EXACT)
        seconds, _ = harness.timed(algo.run)
        found["networkit"] = int(algo.getDiameter()[0])
        return seconds

    exact()
    turns = harness.alternate({"graphsys": exact, "graphsys_estimate": estimate,
                               "networkit": networkit if G_nk is not None else None},
                              args.diameter_turns)
    row = {k: harness.spread(t) for k, t in turns.items()}
    row.update({"diameter": found.get("graphsys"), "searches": found.get("searches"),
                "estimate_bounds": found.get("estimate"),
                "networkit_diameter": found.get("networkit")})
    peers = {"networkit": turns.get("networkit", [])}
    if args.igraph_diameter_seconds > 0:
        edges = work / f"{name}-edges.npy"
        np.save(edges, np.column_stack([u, v]))
        child = harness.run_child([sys.executable, "-c", IGRAPH_DIAMETER, edges,
                                   str(view.num_nodes)], timeout=args.igraph_diameter_seconds,
                                  check=False)
        edges.unlink()
        if child.json is not None:
            row["igraph"] = {"median": child.json["seconds"], "turns": 1}
            row["igraph_diameter"] = child.json["diameter"]
            peers["igraph"] = [child.json["seconds"]]
        else:
            row["igraph"] = {"median": None, "did_not_finish_seconds":
                             args.igraph_diameter_seconds if child.timed_out else None,
                             "error": None if child.timed_out else child.stderr[-300:]}
    best = fastest(peers)
    row["fastest_peer"] = best
    if best == "networkit":  # alternated with graphsys: turn by turn
        row["ratio"] = harness.pair_ratios(peers[best], turns["graphsys"])
    elif best is not None:  # one turn: over graphsys's median
        row["ratio"] = {"median": round(peers[best][0] / row["graphsys"]["median"], 3)}
    row["networkx"] = "not run: nx.diameter needs a connected graph and searches from " \
                      "every node in Python"
    harness.log(f"{name} diameter {row['diameter']}: graphsys exact "
                f"{row['graphsys']['median']:.3f} s, estimate "
                f"{row['graphsys_estimate']['median']:.3f} s, networkit "
                f"{row.get('networkit', {}).get('median')}")
    return row


def main(argv: list[str] | None = None) -> int:
    ap = harness.parser(__doc__)
    ap.add_argument("--work", type=Path, required=True, help="where the graphs are kept")
    ap.add_argument("--turns", type=int, default=5, help="alternated turns per side")
    ap.add_argument("--diameter-turns", type=int, default=3)
    ap.add_argument("--rmat-edges", type=harness.count, default=harness.count("20M"))
    ap.add_argument("--rmat-nodes", type=harness.count, default=harness.count("2Mi"))
    ap.add_argument("--skip-rmat", action="store_true")
    ap.add_argument("--graphs", default=",".join(DATASETS),
                    help="comma-separated registry datasets (default: all three)")
    ap.add_argument("--only", choices=("similarity", "diameter"), default=None)
    ap.add_argument("--networkx-max-edges", type=harness.count,
                    default=harness.count("2M"))
    ap.add_argument("--igraph-diameter-seconds", type=float, default=600,
                    help="stop igraph's all-sources diameter after this long (0: skip)")
    harness.add_mirror_argument(ap)
    args = ap.parse_args(argv)
    run = harness.Run("measures/similarity_diameter", args.record)
    try:
        import networkit as nk

        nk.setNumberOfThreads(int(os.environ.get("NUMBA_NUM_THREADS", os.cpu_count())))
    except ImportError:
        nk = None
        run.missing("NetworKit columns", "networkit is not installed (the bench extra)")
    try:
        import igraph as ig
    except ImportError:
        ig = None
        run.missing("igraph columns", "igraph is not installed (the test extra)")
    args.work.mkdir(parents=True, exist_ok=True)
    graphs = [(name, lambda name=name: stored(run, name, args.work))
              for name in args.graphs.split(",") if name]
    if not args.skip_rmat:
        graphs.append((f"rmat-{args.rmat_edges}",
                       lambda: rmat(args.work, args.rmat_edges, args.rmat_nodes)))
    rows = {}
    for name, load in graphs:
        g = load()
        if g is None:
            continue
        t0 = time.perf_counter()
        u, v = simple_edges(undirected_view(g))
        row = {"nodes": g.num_nodes(), "undirected_edges": len(u),
               "view_seconds": round(time.perf_counter() - t0, 3)}
        if args.only in (None, "similarity"):
            row["similarity"] = similarity(g, name, u, v, args, nk, ig)
        if args.only in (None, "diameter"):
            row["diameter"] = diameter(g, name, u, v, args, nk, args.work)
        rows[name] = row
    run.emit(graphs=rows, threads=int(os.environ.get("NUMBA_NUM_THREADS", os.cpu_count())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
