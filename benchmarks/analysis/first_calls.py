#!/usr/bin/env python
"""First call of every public analysis in a new process, after ``graphsys warmup --all``.

A fresh read-only install of graphsys (``benchmarks/bsp/first_call.py``'s) runs ``graphsys
warmup --all`` into an empty kernel cache (timed: ``warmup_all_cold_s``), then, one new
process per call, every call of :data:`graphsys.commands.warmup_all.CALLS` (the public
functions of ``graphsys.bsp``, ``graphsys.mining``, ``graphsys.measures`` and of the
NetworkX backend, with the arguments a first call takes) on email-Enron from the dataset
registry (the NetworkX rows: a NetworkX copy of its largest component, directed both ways
for the functions NetworkX takes directed graphs only, its :data:`BALL` nodes nearest the
first for the all-pairs functions :data:`ALL_SOURCES`, Katz at alpha 0.005), with that
cache (a second install, at another path, reads it). Each process
times the import, the first call, and the warm call (the call repeated in the same
process; the NetworkX rows convert the graph in their first call, which NetworkX caches:
``convert_s`` is one such conversion timed alone, before it), and counts the kernel
signatures the process compiled and loaded: after the warm-up it should compile none. One
JSON line per call (``area``, ``name``, ``first_s``, ``warm_s``, ``excess_s`` = first minus
warm, ``compiled``, ``loaded``, ``import_s``, ``torch``: whether the call imported
torch), then one line of the whole run (the largest
excess, the calls that compiled a kernel). The goal: every ``excess_s`` within 2 s,
``warmup_all_cold_s`` within 3 minutes on 2 cores. ``--cache ~/.cache`` measures against
the user's own kernel cache (``XDG_CACHE_HOME``'s). Usage::

    python benchmarks/analysis/first_calls.py --work DIR [--only bsp.bfs,mining]
        [--cache DIR (a warmed cache: skips the cold warm-up)]
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root

from benchmarks import harness
from benchmarks.bsp.first_call import _writable, child_env, fresh_install

#: Run in the child: the call table, the graph (a NetworkX copy for the backend's rows),
#: then the first call and the warm one, timed apart.
CHILD = """
import json, sys, time
t0 = time.perf_counter()
import graphsys
from graphsys import jit
from graphsys.commands.warmup_all import CALLS
area, name, path, shape = sys.argv[1:5]
g = graphsys.open_graph(path)
if area == "nx_backend":
    import networkx as nx
    from graphsys.commands import warmup_all
    # Katz's series converges for alpha below 1 / (the largest eigenvalue), 118 here
    warmup_all.NX_KEYWORDS.update({k: {"alpha": 0.005} for k in warmup_all.NX_KEYWORDS})
    G = nx.Graph()
    for s, d, _, _ in g.iter_edges():
        G.add_edges_from(zip(g.to_original(s).tolist(), g.to_original(d).tolist()))
    # the largest component (distances, eccentricities and paths are defined within it),
    # directed (both ways) for the functions NetworkX takes only directed graphs to
    big = max(nx.connected_components(G, backend="networkx"), key=len)
    if shape == "ball":  # the BALL nodes nearest to the first one
        near = nx.single_source_shortest_path_length(G, min(big), backend="networkx")
        big = sorted(near, key=lambda v: (near[v], v))[:BALL]
    G = (nx.DiGraph if shape == "directed" else nx.Graph)(G.subgraph(big))
    g, source = G, next(iter(G))
call = CALLS[area]()[name]
if area == "nx_backend":
    t = time.perf_counter()
    from graphsys.nx_backend import BackendInterface
    BackendInterface.convert_from_nx(G)  # what the first call's conversion costs alone
    extra = {"convert_s": time.perf_counter() - t}
else:
    source, extra = int(g.node_ids()[0]), {}
t1 = time.perf_counter()
call(g, source)
t2 = time.perf_counter()
counts = {**jit.cache_counts(), "torch": "torch" in sys.modules}
t = time.perf_counter()
call(g, source)
warm = time.perf_counter() - t
print(json.dumps({"import_s": t1 - t0, "first_s": t2 - t1, "warm_s": warm, **counts, **extra}))
"""


def calls(only: list[str]) -> list[tuple[str, str]]:
    """(area, name) of every call, or of those ``only`` names (``area`` or ``area.name``)."""
    from graphsys.commands.warmup_all import CALLS

    out = [(area, name) for area, build in CALLS.items() for name in build()]
    if only:
        out = [(a, n) for a, n in out if a in only or f"{a}.{n}" in only]
    return out


#: The NetworkX functions that search from every node and sum over every pair (their
#: results, or NetworkX's, hold or walk ``N**2`` distances): run on the :data:`BALL` nodes
#: of email-Enron nearest to its first node (connected), so that a first and a warm call
#: take seconds, not minutes. The others run on the largest component (33,696 nodes).
ALL_SOURCES = {"barycenter", "harmonic_diameter", "global_efficiency", "local_efficiency",
               "average_shortest_path_length", "wiener_index", "hyper_wiener_index",
               "schultz_index", "gutman_index", "closeness_centrality", "harmonic_centrality",
               "betweenness_centrality", "edge_betweenness_centrality"}
BALL = 2_000


def _directed_only(name: str) -> bool:
    """Whether NetworkX's function ``name`` refuses undirected graphs (asked of NetworkX's
    own implementation on a 4-node path: no graphsys kernel runs here)."""
    import networkx as nx

    from graphsys.commands.warmup_all import _nx_arguments, _nx_function

    f = _nx_function(nx, name)
    if not hasattr(f, "backends"):
        return False  # not dispatched: no call of it reaches graphsys
    P = nx.path_graph(4)
    try:
        value = f(P, *_nx_arguments(f)(P, 0), backend="networkx")
        list(value) if hasattr(value, "__next__") else value
    except (nx.NetworkXNotImplemented, nx.NetworkXError) as exc:
        return "undirected" in str(exc) or "digraph" in str(exc)  # flow_hierarchy's words
    except Exception:  # noqa: BLE001 - another refusal: the call's own row shows it
        pass
    return False


def main(argv: list[str] | None = None) -> int:
    ap = harness.parser(__doc__)
    ap.add_argument("--work", type=Path, required=True, help="work directory")
    ap.add_argument("--only", default="",
                    help="comma-separated areas (bsp, mining, measures, nx_backend) or "
                         "area.name calls (default: every call)")
    ap.add_argument("--cache", type=Path, default=None,
                    help="a kernel cache that warmup --all filled (default: fill an empty one "
                         "and time it)")
    ap.add_argument("--timeout", type=float, default=600, help="seconds per call (default 600)")
    args = ap.parse_args(argv)
    run = harness.Run("analysis/first_calls", args.record, memory=False)
    work = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    graph = harness.dataset(run, "email-enron", work / "email-enron")
    if graph is None:
        run.emit(calls={})
        return 1
    first, second = fresh_install(work / "install-a"), fresh_install(work / "install-b")
    warmup = None
    cache = args.cache.resolve() if args.cache else work / "cache-warmed"
    if args.cache is None:
        shutil.rmtree(cache, ignore_errors=True)
        harness.log("graphsys warmup --all (fresh install, empty cache)")
        child = harness.run_child([sys.executable, "-m", "graphsys", "warmup", "--all",
                                   "--json"], env=child_env(first, cache), cwd=work)
        warmup = {"seconds": child.seconds, "compiled": child.json["compiled"],
                  "loaded": child.json["loaded"], **child.peaks()}
    rows = []
    for area, name in calls([x for x in args.only.split(",") if x]):
        shape = "whole" if area != "nx_backend" else (
            "ball" if name in ALL_SOURCES else "directed" if _directed_only(name) else "whole")
        child = harness.run_child([sys.executable, "-c", f"BALL = {BALL}\n" + CHILD, area, name,
                                   str(graph.path), shape],
                                  env=child_env(second, cache), cwd=work, check=False,
                                  timeout=args.timeout)
        row = {"area": area, "name": name}
        if child.json is None:
            why = "timed out" if child.timed_out else (child.stderr.strip().splitlines()
                                                       or ["no output"])[-1]
            row["error"] = why[:300]
        else:
            row.update({k: round(v, 4) if isinstance(v, float) else v
                        for k, v in child.json.items()})
            row["excess_s"] = round(child.json["first_s"] - child.json["warm_s"], 4)
        print(json.dumps(row), flush=True)
        rows.append(row)
    for install in (first, second):
        _writable(install)
        shutil.rmtree(install)
    done = [r for r in rows if "excess_s" in r]
    run.emit(graph="email-enron", warmup_all_cold_s=warmup and round(warmup["seconds"], 1),
             warmup=warmup, calls=len(rows),
             max_excess_s=max((r["excess_s"] for r in done), default=None),
             over_2s=[f"{r['area']}.{r['name']}" for r in done if r["excess_s"] > 2],
             compiled_after_warmup=[f"{r['area']}.{r['name']}" for r in done if r["compiled"]],
             failed=[f"{r['area']}.{r['name']}" for r in rows if "error" in r])
    return 0


if __name__ == "__main__":
    sys.exit(main())
