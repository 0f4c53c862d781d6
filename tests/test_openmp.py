"""The OpenMP wait policy is applied where the engines start, never at import: ``import
graphsys`` changes no variable and starts no thread; every engine entry point applies the
policy first; and with ``torch`` imported before it (its libgomp then started without the
policy), idle OpenMP workers still sleep instead of spinning once an entry point has run."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("torch")

#: CPU time over nominal sleep time of a loop of small parallel torch ops with sleeps between
#: them: workers that spin between regions burn CPU during the sleeps, sleeping ones do not.
#: ``sys.argv[1]``: modules imported first; ``sys.argv[2]``: "cli" to run the CLI's main
#: (an engine entry point) before the loop.
SPIN_PROBE = """
import resource, sys, time
for name in sys.argv[1].split(","):
    __import__(name)
if sys.argv[2] == "cli":
    from graphsys import cli
    cli.main(["info", "/nonexistent-graph"])
import torch
x = torch.ones(1 << 17)
x.add_(1)
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
c0, n, gap = cpu(), 200, 0.002
for _ in range(n):
    x.add_(1)
    time.sleep(gap)
print((cpu() - c0) / (n * gap))
"""
#: torch first, then graphsys imported (nothing held, nothing exported), then the policy
#: applied as an entry point applies it.
HELD_PROBE = """
import json, os, threading
import torch
before = sorted({l.split(None, 5)[-1].strip() for l in open("/proc/self/maps")
                 if "libgomp" in l})
import graphsys, graphsys.bsp, graphsys.embed, graphsys.gnn, graphsys.openmp as o
at_import = {"held": list(o.HELD), "threads": threading.active_count(),
             "env": [os.environ.get(k) for k in o.WAIT_POLICY]}
o.apply_wait_policy()
print(json.dumps({"before": before, "at_import": at_import, "held": o.HELD,
                  "env": [os.environ.get(k) for k in o.WAIT_POLICY]}))
"""


def _env(**given):
    return {k: v for k, v in os.environ.items()
            if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")} | given


def _run(code: str, *args: str, env: dict) -> str:
    out = subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True,
                         text=True, check=True)
    return out.stdout.strip().splitlines()[-1]


def test_import_changes_nothing_and_runtimes_loaded_before_the_policy_are_held():
    got = json.loads(_run(HELD_PROBE, env=_env()))
    assert got["before"], "torch loaded no libgomp: nothing to check"
    assert got["at_import"]["held"] == [] and got["at_import"]["env"] == [None, None]
    assert got["held"] == got["before"]
    assert got["env"] == ["PASSIVE", "3000"]


@pytest.mark.parametrize("env", [{"OMP_WAIT_POLICY": "ACTIVE"}, {"GOMP_SPINCOUNT": "10"}])
def test_an_exported_wait_policy_is_left_alone(env):
    got = json.loads(_run(HELD_PROBE, env=_env(**env)))
    assert got["held"] == []
    assert got["env"] == [env.get("OMP_WAIT_POLICY", "PASSIVE"), env.get("GOMP_SPINCOUNT",
                                                                          "3000")]


def test_nothing_is_held_when_the_policy_comes_before_torch():
    code = ("import graphsys.openmp as o; o.apply_wait_policy(); import torch; "
            "torch.ones(4).add_(1); print(len(o.HELD))")
    assert _run(code, env=_env()) == "0"


def test_every_engine_entry_point_applies_the_policy_first(tmp_path, monkeypatch):
    """Each entry point calls :func:`graphsys.openmp.apply_wait_policy` before anything else:
    counted here on calls that then fail on a missing graph or a bad argument."""
    import graphsys
    from graphsys import bsp, cli, embed, gnn, openmp
    from graphsys.storage.adjacency_index import build_index
    from graphsys.storage.append import append_edges
    from graphsys.storage.ingest import EdgeSource, ingest_sources

    calls: list[int] = []
    monkeypatch.setattr(openmp, "apply_wait_policy", lambda: calls.append(1))
    missing = tmp_path / "missing"
    entry_points = {
        "cli.main": lambda: cli.main(["info", str(missing)]),
        "bsp.run": lambda: bsp.run(missing, None),
        "bsp.pagerank": lambda: bsp.pagerank(missing),
        "embed.train": lambda: embed.train(missing),
        "gnn.train": lambda: gnn.train(missing),
        "graphsys.ingest": lambda: graphsys.ingest(missing / "e.tsv", tmp_path / "g"),
        "from_numpy": lambda: graphsys.from_numpy([0], [1], tmp_path / "g", partitions=0),
        "ingest_sources": lambda: ingest_sources([EdgeSource([missing])], tmp_path / "g"),
        "append_edges": lambda: append_edges(missing, []),
        "build_index": lambda: build_index(None),
    }
    for name, call in entry_points.items():
        calls.clear()
        try:
            call()
        except Exception:  # noqa: BLE001 (each fails on its missing input, after the policy)
            pass
        assert calls, f"{name} does not apply the OpenMP wait policy"


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="torch runs one thread: no workers")
def test_torch_workers_sleep_between_regions_once_an_entry_point_ran():
    spinning = float(_run(SPIN_PROBE, "torch", "-", env=_env()))
    if spinning < 0.5:
        pytest.skip(f"torch alone burns {spinning:.2f} of the sleep time: spinning not "
                    "visible on this machine")
    assert float(_run(SPIN_PROBE, "torch,graphsys", "cli", env=_env())) < 0.25
