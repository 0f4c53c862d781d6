"""Run NetworkX's own tests of the functions the graphsys backend implements, in NetworkX's
backend test mode (``NETWORKX_TEST_BACKEND=graphsys``: every NetworkX graph a dispatched
function receives is converted to a graphsys graph and the result compared or converted
back), and print the outcome as one JSON line.

    python tests/nx_backend/networkx_suite.py [--strict] [--timeout=SECONDS] [pytest args...]

By default calls graphsys does not implement (or declines) run in NetworkX
(``NETWORKX_FALLBACK_TO_NX``), so every test runs; the plugin
:mod:`graphsys.nx_backend.testing` counts the tests that called graphsys and their
outcomes. ``--strict`` makes such calls expected failures instead (NetworkX's ``xfail``),
so a passing test ran every dispatched call through graphsys.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

#: NetworkX's test modules of the dispatched functions (relative to the networkx package).
MODULES = (
    "algorithms/link_analysis/tests/test_pagerank.py",
    "algorithms/link_analysis/tests/test_hits.py",
    "algorithms/shortest_paths/tests/test_unweighted.py",
    "algorithms/shortest_paths/tests/test_weighted.py",
    "algorithms/components/tests/test_connected.py",
    "algorithms/components/tests/test_weakly_connected.py",
    "algorithms/components/tests/test_strongly_connected.py",
    "algorithms/tests/test_core.py",
    "algorithms/tests/test_cluster.py",
    "algorithms/centrality/tests/test_betweenness_centrality.py",
    "algorithms/centrality/tests/test_closeness_centrality.py",
    "algorithms/centrality/tests/test_eigenvector_centrality.py",
    "algorithms/centrality/tests/test_katz_centrality.py",
    "algorithms/tests/test_link_prediction.py",
    "algorithms/tests/test_distance_measures.py",
    "algorithms/tests/test_reciprocity.py",
    "algorithms/assortativity/tests/test_correlation.py",
    "algorithms/assortativity/tests/test_connectivity.py",
    "algorithms/assortativity/tests/test_neighbor_degree.py",
    "algorithms/assortativity/tests/test_mixing.py",
    "algorithms/bipartite/tests/test_basic.py",
    "algorithms/centrality/tests/test_degree_centrality.py",
    "algorithms/centrality/tests/test_group.py",
    "algorithms/centrality/tests/test_harmonic_centrality.py",
    "algorithms/community/tests/test_quality.py",
    "algorithms/community/tests/test_louvain.py",
    "algorithms/community/tests/test_label_propagation.py",
    "algorithms/community/tests/test_utils.py",
    "algorithms/components/tests/test_attracting.py",
    "algorithms/components/tests/test_semiconnected.py",
    "algorithms/shortest_paths/tests/test_generic.py",
    "algorithms/traversal/tests/test_bfs.py",
    "algorithms/tree/tests/test_recognition.py",
    "algorithms/tests/test_boundary.py",
    "algorithms/tests/test_cuts.py",
    "algorithms/tests/test_dag.py",
    "algorithms/tests/test_efficiency.py",
    "algorithms/tests/test_hierarchy.py",
    "algorithms/tests/test_isolate.py",
    "algorithms/tests/test_regular.py",
    "algorithms/tests/test_smetric.py",
    "algorithms/tests/test_triads.py",
    "algorithms/tests/test_wiener.py",
    "classes/tests/test_function.py",
    "generators/tests/test_ego.py",
)


def run(fallback: bool = True, extra: list[str] | None = None, timeout: float = 900) -> dict:
    """Run the modules in a child process; returns pytest's counts (``passed``,
    ``failed``, ``xfailed``, ...), the plugin's ``graphsys`` summary, the exit code and the
    output's tail."""
    import networkx

    root = Path(networkx.__file__).parent
    env = dict(os.environ, NETWORKX_TEST_BACKEND="graphsys")
    if fallback:
        env["NETWORKX_FALLBACK_TO_NX"] = "True"
    # importlib mode leaves sys.path alone: the graphsys found is the one this process
    # imports (prepend mode would put site-packages first, before a source checkout)
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-W", "ignore",
           "--import-mode=importlib", "-p", "graphsys.nx_backend.testing",
           f"--rootdir={root}", *(str(root / m) for m in MODULES), *(extra or [])]
    proc = subprocess.run(cmd, env=env, cwd=root, capture_output=True, text=True,
                          timeout=timeout)
    lines = proc.stdout.strip().splitlines()
    tail = lines[-1] if lines else ""
    counts = {k: int(v) for v, k in re.findall(r"(\d+) (\w+)", tail)}
    mine = [ln for ln in lines if ln.startswith("graphsys-backend: ")]
    counts["graphsys"] = json.loads(mine[-1].split(": ", 1)[1]) if mine else None
    counts.update(returncode=proc.returncode, fallback=fallback)
    counts["output"] = proc.stdout[-20000:] + proc.stderr[-5000:]
    return counts


if __name__ == "__main__":
    args = sys.argv[1:]
    limit = next((float(a.split("=", 1)[1]) for a in args if a.startswith("--timeout=")), 900)
    result = run("--strict" not in args,
                 [a for a in args if a != "--strict" and not a.startswith("--timeout=")],
                 timeout=limit)
    print(result.pop("output"))
    print(json.dumps(result))
