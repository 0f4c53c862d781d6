"""``graphsys warmup --all`` reaches every kernel module of the analyses: into an empty
cache it caches every numba kernel of the packages it covers (but those of
``NOT_WARMED``, a budget), and afterwards the public calls on
another graph compile nothing."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from graphsys import from_numpy, jit
from graphsys.commands import warmup_all as w

REPO = Path(__file__).resolve().parents[2]

#: Kernels (``module.function`` under ``graphsys.``) that have no cache entry of their own
#: after ``warmup_all`` into an empty cache: helpers compiled only inside their callers,
#: and paths that no default call of ``CALLS`` on email-Enron takes either (other
#: options, larger or memory-bounded inputs: out-of-core mining blocks, searches from
#: ``graphsys.bsp.kernels.PARALLEL_MIN_ITEMS`` nodes, external-sort ingests,
#: merged-index rebuilds). Their first use compiles them; the list is a budget, to shrink.
NOT_WARMED: frozenset[str] = frozenset({
    "bsp.kernels_bfs._levels_to_float_parallel",
    "kernels.pagerank_push._deviation",
    "kernels.pagerank_push._spread",
    "kernels.repair._cost",
    "kernels.repair._dependants",
    "kernels.repair._heap_pop",
    "kernels.repair._heap_push",
    "kernels.repair._meet",
    "kernels.repair._offers",
    "kernels.repair._relax",
    "kernels.repair._root",
    "bsp.kernels.pull_copy_sum_rows",
    "bsp.kernels.relax_async",
    "bsp.kernels.stream_copy_sum_rows",
    "mining.kernels._clear_byte",
    "mining.kernels._clear_word",
    "mining.kernels._set_bit",
    "mining.kernels._set_byte",
    "mining.kernels.inlist_count",
    "mining.kernels.inlist_count_rows",
    "mining.kernels.inlist_fill",
    "mining.kernels.inlist_fill_rows",
    "mining.kernels.middle_work",
    "mining.kernels.tag_entries",
    "mining.kernels.tag_entries_rows",
    "mining.kernels.triangles_lowest",
    "mining.kernels.triangles_middle",
    "mining.kernels.triangles_middle_rows",
    "views.orient._count_higher_par",
    "views.orient._fill_higher_par",
    "views.orient._simple_degree_par",
    "mining.outofcore._counting_order",
    "mining.outofcore._ranked_rows",
    "sampling._kernels._hop_lanes",
    "sampling._kernels._mix",
    "sampling._kernels._stream",
    "sampling._kernels._uniform",
    "sampling._kernels._walk_topk",
    "storage.index_merge._changed_rows",
    "storage.index_merge._collapse",
    "storage.index_merge._kept_counts",
    "storage.index_merge._place",
    "storage.index_merge._remap",
    "storage.index_merge._unique_counts",
    "storage.kernels._route",
    "storage.kernels._scatter_payload",
    "storage.kernels.gather",
    "storage.kernels.gather_rows",
    "storage.kernels.gather_rows_at",
    "storage.kernels.route_keys",
    "storage.kernels.scatter_by_bucket",
    "storage.kernels.scatter_column",
    "storage.kernels.scatter_column_rows",
    "storage.structure._first_unsorted",
    "storage.temporal_index._row_problem",
})


#: Kernels whose signatures are a budget (``module.function`` under ``graphsys.`` -> the
#: most signatures they hold after ``warmup_all`` and the public calls of ``CALLS``
#: on another graph): their callers hand them read-only arrays of one dtype and run-time
#: (not literal) flags, so one signature serves stored (mapped) and built adjacencies, each
#: a parallel kernel's seconds of compiling.
SIGNATURE_BUDGET: dict[str, int] = {
    "bsp.kernels.frontier_degree": 1,
    "bsp.kernels.pull": 1,
    "bsp.kernels.pull_copy_sum": 1,
    "bsp.kernels.pull_rows": 1,
    "bsp.kernels.push": 1,
    "bsp.kernels.push_rows": 1,
    "bsp.kernels.relax_run": 1,
    "bsp.kernels.stream": 1,
    "bsp.kernels_centrality.brandes_hops": 1,
    "bsp.kernels_centrality.brandes_weighted": 1,
    "bsp.kernels_centrality.distance_sums_hops": 1,
    "bsp.kernels_centrality.distance_sums_weighted": 1,
    "bsp.kernels_community._symmetrised_fill": 1,
    "bsp.kernels_community._symmetrised_rows": 1,
    "bsp.kernels_components.greedy_coloring": 1,
    "bsp.kernels_components.lpa_semi_sync": 1,
    "bsp.kernels_pagerank.bfs_order": 1,
    "bsp.kernels_pagerank.ell_layout": 1,
    "bsp.kernels_pagerank.renumber": 1,
    "kernels.bfs.search": 2,  # int32 and int64 neighbour ids (a NetworkX graph's)
    "measures.kernels_similarity.pair_scores": 1,
    "measures.kernels_similarity.top_k": 1,
    "kernels.pagerank_push.edge_change_residual": 1,
    "kernels.pagerank_push.push": 1,
    "kernels.repair._anchor": 1,
    "kernels.repair._next_to": 1,
    "kernels.repair._race": 1,
    "kernels.repair.distance_repair": 1,
    "mining.match_kernels.full_directions": 1,
    "mining.match_kernels.match_resume": 1,
}


def test_every_kernel_module_is_warmed_or_left_to_training():
    modules = w.kernel_modules()
    packages = {m.split(".")[1] for m in modules}
    assert set(w.COVERED) <= packages  # every covered package has kernels
    assert packages - set(w.COVERED) == {"embed", "gnn"}  # model training's, on purpose
    assert "graphsys.sampling.temporal" in modules  # njit(...)(function) counts too
    for kernel in NOT_WARMED:
        module, _, name = f"graphsys.{kernel}".rpartition(".")
        assert module in modules and hasattr(importlib.import_module(module), name), kernel


def test_every_kernel_with_a_signature_budget_exists():
    for kernel, most in SIGNATURE_BUDGET.items():
        module, _, name = f"graphsys.{kernel}".rpartition(".")
        assert hasattr(importlib.import_module(module), name), kernel
        assert isinstance(most, int) and most >= 1, kernel


def test_every_call_area_is_listed():
    assert set(w.CALLS) == {"bsp", "mining", "measures", "nx_backend"}
    assert {"triangle_count", "motifs", "count"} <= set(w.CALLS["mining"]())
    assert {"link_scores_jaccard", "diameter"} <= set(w.CALLS["measures"]())
    # the streamed and directed matches, and the runs after a change (repairs, delta push)
    assert {"iter_matches", "matches_directed"} <= set(w.CALLS["mining"]())
    assert {"repair_indexed", "repair_built", "pagerank_delta"} <= set(w._changes_calls())


def test_all_takes_no_algorithm_names(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, "-m", "graphsys", "warmup", "--all", "bfs"],
                         capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert out.returncode != 0 and "Traceback" not in out.stderr
    assert out.stderr.strip().splitlines() == ["error: --all warms every algorithm: name none"]


def _signatures() -> dict[str, int]:
    return {f"{d.py_func.__module__}.{d.py_func.__name__}": len(d.signatures)
            for d in jit.kernels()}


#: Run in a process of its own with an empty cache: warmup --all, then every covered kernel
#: without an entry in the cache (a kernel called only from other kernels is compiled, and
#: cached, with its caller).
COLD = """
import importlib, json, os
from graphsys import jit
from graphsys.commands import warmup_all as w
w.warmup_all()
for name in w.kernel_modules():
    importlib.import_module(name)
print(json.dumps(sorted(
    f"{d.py_func.__module__}.{d.py_func.__name__}" for d in jit.kernels()
    if d.py_func.__module__.split(".")[1] in w.COVERED
    and not os.path.exists(d._cache._cache_file._index_path))))
"""


@pytest.mark.slow("full")  # compiles every kernel of the analyses into an empty cache
def test_warmup_all_caches_every_kernel_of_the_analyses(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO), "NUMBA_CACHE_DIR": str(tmp_path / "cache")}
    out = subprocess.run([sys.executable, "-c", COLD], capture_output=True, text=True,
                         env=env, cwd=tmp_path, timeout=3600)
    assert out.returncode == 0, out.stderr[-3000:]
    missing = json.loads(out.stdout.strip().splitlines()[-1])
    assert [k for k in missing if k.removeprefix("graphsys.") not in NOT_WARMED] == []


@pytest.mark.slow("ci")  # compiles the analyses' kernels where the cache lacks them
def test_public_calls_after_warmup_all_compile_nothing(tmp_path):
    # signatures this process held before (a kernel test in the same worker calls kernels
    # with its own arrays): the budget counts those the warm-up and the public calls add
    before = _signatures()
    report = w.warmup_all()
    assert {"bsp", "bsp-api", "mining", "measures", "sampling", "storage", "changes",
            "nx_backend"} <= set(report)
    after = _signatures()
    # another graph, of other sizes and degrees: the public calls find their kernels
    rng = np.random.default_rng(11)
    src, dst = rng.integers(0, 2000, 12_000), rng.integers(0, 2000, 12_000)
    g = from_numpy(src, dst, tmp_path / "g", undirected=True, partitions=3)
    s = int(g.node_ids()[0])
    for area in ("bsp", "mining", "measures"):
        for name, call in w.CALLS[area]().items():
            call(g, s)
            new = {k: n for k, n in _signatures().items() if n > after.get(k, 0)}
            assert not new, f"{area}.{name} compiled {sorted(new)} after warmup --all"
    held = _signatures()
    added = {k: n - before.get(k, 0) for k, n in held.items()}
    over = {k: added.get(f"graphsys.{k}", 0) for k, most in SIGNATURE_BUDGET.items()
            if added.get(f"graphsys.{k}", 0) > most}
    assert not over, f"kernels over their signature budget: {over}"


def test_jobs_warm_in_workers_and_a_workers_error_fails_the_command(tmp_path, monkeypatch,
                                                                      capsys):
    """``--jobs 2`` warms the areas in fresh processes, which inherit the environment and
    fill its cache; an area that fails in its worker fails the command in one line."""
    from graphsys.cli import main

    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(w, "AREAS", {"storage": 1})  # a small table: read by the parent
    assert main(["warmup", "--all", "--jobs", "2"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert [ln for ln in err if ln.startswith("storage: ")] != []
    assert any(tmp_path.rglob("*.nbc"))  # written by the worker
    monkeypatch.setattr(w, "AREAS", {"storage": 1, "nosuch": 1})
    assert main(["warmup", "--all", "--jobs", "2"]) != 0
    assert capsys.readouterr().err.splitlines()[-1] == (
        "error: warm-up of nosuch: KeyError: 'nosuch'")
