"""No import-order trap: with ``torch`` imported before ``graphsys`` (its libgomp then started
without graphsys's wait policy), idle OpenMP workers still sleep instead of spinning."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("torch")

#: CPU time over nominal sleep time of a loop of small parallel torch ops with sleeps between
#: them: workers that spin between regions burn CPU during the sleeps, sleeping ones do not.
SPIN_PROBE = """
import resource, sys, time
for name in sys.argv[1].split(","):
    __import__(name)
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
HELD_PROBE = """
import json
import torch
before = sorted({l.split(None, 5)[-1].strip() for l in open("/proc/self/maps")
                 if "libgomp" in l})
import graphsys, graphsys.openmp as o
print(json.dumps({"before": before, "held": o.HELD}))
"""


def _env(**given):
    return {k: v for k, v in os.environ.items()
            if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")} | given


def _run(code: str, *args: str, env: dict) -> str:
    out = subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True,
                         text=True, check=True)
    return out.stdout.strip().splitlines()[-1]


def test_runtimes_loaded_before_the_import_are_held():
    got = json.loads(_run(HELD_PROBE, env=_env()))
    assert got["before"], "torch loaded no libgomp: nothing to check"
    assert got["held"] == got["before"]


@pytest.mark.parametrize("env", [{"OMP_WAIT_POLICY": "ACTIVE"}, {"GOMP_SPINCOUNT": "10"}])
def test_an_exported_wait_policy_is_left_alone(env):
    assert json.loads(_run(HELD_PROBE, env=_env(**env)))["held"] == []


def test_nothing_is_held_when_graphsys_comes_first():
    code = "import graphsys, torch, graphsys.openmp as o; print(len(o.HELD))"
    assert _run(code, env=_env()) == "0"


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="torch runs one thread: no workers")
def test_torch_workers_sleep_between_regions_with_torch_imported_first():
    spinning = float(_run(SPIN_PROBE, "torch", env=_env()))
    if spinning < 0.5:
        pytest.skip(f"torch alone burns {spinning:.2f} of the sleep time: spinning not "
                    "visible on this machine")
    assert float(_run(SPIN_PROBE, "torch,graphsys", env=_env())) < 0.25
