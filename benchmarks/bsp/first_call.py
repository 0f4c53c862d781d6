#!/usr/bin/env python
"""First call of each builtin vertex algorithm in a fresh install, beside the warm call.

A "fresh install" is a copy of the ``graphsys`` and ``partitioners`` packages in a new
directory, made read-only (as a system site-packages is), imported by a new process whose
kernel cache (``XDG_CACHE_HOME``; ``NUMBA_CACHE_DIR`` is removed from its environment) is
an empty directory. Per algorithm (BFS, SSSP, WCC, k-core, PageRank, HITS, LPA, defaults,
in memory, on email-Enron from the dataset registry):

* ``cold``: a fresh install and an empty cache, one process per algorithm: the first call
  compiles every kernel it reaches;
* ``warmed``: a second fresh install (another directory) with the cache that ``graphsys
  warmup``, run once from the first install, filled: what a user gets on a machine where
  graphsys ran before, or after ``graphsys warmup`` (which ``graphsys demo`` runs);
* ``warm``: the call repeated in the same process (every kernel in memory), the peer of
  both: a first call within 2 s of it is the goal.

Each figure is the median over ``--turns`` processes, the cold and warmed processes of an
algorithm alternating; the JSON line carries per algorithm ``cold_s``, ``warmed_s``,
``warm_s`` (seconds of the call; imports and the graph's opening are apart, as
``import_s``), the excesses ``cold_excess_s`` / ``warmed_excess_s`` (first call minus warm
call) and the kernels each first call compiled and loaded, then the largest excess over the
algorithms and the warmup's own seconds. Usage::

    python benchmarks/bsp/first_call.py --work DIR [--turns 3] [--algorithms bfs,sssp]
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root

from benchmarks import harness

ALGORITHMS = ("bfs", "sssp", "wcc", "kcore", "pagerank", "hits", "lpa")

#: Run in the child: import, open, then the first call and two warm ones, timed apart.
CHILD = """
import json, sys, time
t0 = time.perf_counter()
import graphsys, graphsys.bsp as bsp
from graphsys import jit
g = graphsys.open_graph(sys.argv[2])
source = int(g.node_ids()[0])
call = {"bfs": lambda: bsp.bfs(g, source), "sssp": lambda: bsp.sssp(g, source),
        "wcc": lambda: bsp.wcc(g), "kcore": lambda: bsp.kcore(g),
        "pagerank": lambda: bsp.pagerank(g), "hits": lambda: bsp.hits(g),
        "lpa": lambda: bsp.label_propagation(g)}[sys.argv[1]]
t1 = time.perf_counter()
call()
t2 = time.perf_counter()
counts = jit.cache_counts()
warm = []
for _ in range(2):
    t = time.perf_counter()
    call()
    warm.append(time.perf_counter() - t)
print(json.dumps({"import_s": t1 - t0, "first_s": t2 - t1, "warm_s": min(warm),
                  "package": graphsys.__file__, "cache": jit.cache_location(), **counts}))
"""


def fresh_install(root: Path) -> Path:
    """A read-only copy of the packages (and the NetworkX backend's entry-point table) under
    ``root`` (its path is new: nothing cached by path applies), byte-compiled as pip
    compiles an install (a process then reads each module's bytecode instead of compiling
    its source)."""
    import compileall

    if root.exists():
        _writable(root)
        shutil.rmtree(root)
    for package in ("graphsys", "partitioners", "_nx_graphsys"):
        shutil.copytree(harness.REPO / package, root / package,
                        ignore=shutil.ignore_patterns("__pycache__", "*.nbi", "*.nbc"))
    compileall.compile_dir(root, quiet=1)
    for path in [root, *root.rglob("*")]:
        mode = path.stat().st_mode
        path.chmod(mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    return root


def _writable(root: Path) -> None:
    for path in [root, *root.rglob("*")]:
        path.chmod(path.stat().st_mode | stat.S_IWUSR)


def child_env(install: Path, cache: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "PYTHONPATH")}
    env.update(PYTHONPATH=str(install), XDG_CACHE_HOME=str(cache), PYTHONDONTWRITEBYTECODE="1")
    return env


def main(argv: list[str] | None = None) -> int:
    ap = harness.parser(__doc__)
    ap.add_argument("--work", type=Path, required=True, help="work directory")
    ap.add_argument("--turns", type=int, default=3,
                    help="processes per algorithm and side (default 3)")
    ap.add_argument("--algorithms", default=",".join(ALGORITHMS),
                    help=f"comma-separated (default {','.join(ALGORITHMS)})")
    args = ap.parse_args(argv)
    run = harness.Run("bsp/first_call", args.record, memory=False)
    work = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    graph = harness.dataset(run, "email-enron", work / "email-enron")
    if graph is None:
        run.emit(algorithms={})
        return 1
    graph_dir = str(graph.path)
    first, second = fresh_install(work / "install-a"), fresh_install(work / "install-b")
    shared = work / "cache-warmed"
    shutil.rmtree(shared, ignore_errors=True)
    harness.log("graphsys warmup (first install, empty cache)")
    warmed = harness.run_child([sys.executable, "-m", "graphsys", "warmup", "--json"],
                               env=child_env(first, shared), cwd=work)
    names = [a for a in args.algorithms.split(",") if a]
    rows = {}
    for name in names:
        turns: dict[str, list[dict]] = {"cold": [], "warmed": []}

        def cold(name=name) -> dict:
            cache = work / f"cache-cold-{name}"
            shutil.rmtree(cache, ignore_errors=True)
            child = harness.run_child([sys.executable, "-c", CHILD, name, graph_dir],
                                      env=child_env(first, cache), cwd=work)
            shutil.rmtree(cache, ignore_errors=True)
            return {**child.json, **child.peaks()}

        def after_warmup(name=name) -> dict:
            child = harness.run_child([sys.executable, "-c", CHILD, name, graph_dir],
                                      env=child_env(second, shared), cwd=work)
            return {**child.json, **child.peaks()}

        turns = harness.alternate({"cold": cold, "warmed": after_warmup}, args.turns)
        med = {side: harness.spread_by_key(t) for side, t in turns.items()}
        warm = harness.median([t["warm_s"] for side in turns.values() for t in side])
        row = {"cold_s": med["cold"]["first_s"], "warmed_s": med["warmed"]["first_s"],
               "warm_s": warm, "import_s": med["warmed"]["import_s"]["median"],
               "cold_excess_s": round(med["cold"]["first_s"]["median"] - warm, 3),
               "warmed_excess_s": round(med["warmed"]["first_s"]["median"] - warm, 3),
               "cold_compiled": turns["cold"][0]["compiled"],
               "warmed_compiled": turns["warmed"][0]["compiled"],
               "warmed_loaded": turns["warmed"][0]["loaded"],
               "peak_rss_bytes": max(t["peak_rss_bytes"] for s in turns.values() for t in s),
               "peak_rss_anon_bytes": max(t["peak_rss_anon_bytes"]
                                          for s in turns.values() for t in s)}
        harness.log(f"{name}: {json.dumps(row)}")
        rows[name] = row
    for install in (first, second):
        _writable(install)
        shutil.rmtree(install)
    run.emit(graph="email-enron", nodes=graph.num_nodes(), edges=graph.num_edges(),
             turns=args.turns, warmup=warmed.json, warmup_peak_rss_bytes=warmed.peak_rss_bytes,
             algorithms=rows,
             max_cold_excess_s=max(r["cold_excess_s"] for r in rows.values()),
             max_warmed_excess_s=max(r["warmed_excess_s"] for r in rows.values()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
