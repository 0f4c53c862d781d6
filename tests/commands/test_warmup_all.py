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


def test_every_kernel_module_is_warmed_or_left_to_training():
    modules = w.kernel_modules()
    packages = {m.split(".")[1] for m in modules}
    assert set(w.COVERED) <= packages  # every covered package has kernels
    assert packages - set(w.COVERED) == {"embed", "gnn"}  # model training's, on purpose
    assert "graphsys.sampling.temporal" in modules  # njit(...)(function) counts too
    for kernel in w.NOT_WARMED:
        module, _, name = f"graphsys.{kernel}".rpartition(".")
        assert module in modules and hasattr(importlib.import_module(module), name), kernel


def test_every_kernel_with_a_signature_budget_exists():
    for kernel, most in w.SIGNATURE_BUDGET.items():
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
    assert [k for k in missing if k.removeprefix("graphsys.") not in w.NOT_WARMED] == []


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
    over = {k: added.get(f"graphsys.{k}", 0) for k, most in w.SIGNATURE_BUDGET.items()
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
