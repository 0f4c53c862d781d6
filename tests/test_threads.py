"""graphsys's thread policy for numba and torch (graphsys.threads): the counts read back
from both libraries, the budget from GRAPHSYS_THREADS, and that a TemporalNeighborSampler
applies it (a custom loop's first graphsys call) as gnn.train does."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numba
import pytest
import torch

from graphsys.errors import ParameterError
from graphsys.threads import ENV, apply_thread_policy, available_cores, thread_budget


@pytest.fixture
def restore():
    before = numba.get_num_threads(), torch.get_num_threads()
    yield
    numba.set_num_threads(before[0])
    torch.set_num_threads(before[1])


def test_counts_read_back(restore):
    p = apply_thread_policy(1)
    assert (p.budget, p.numba, p.torch) == (1, 1, 1)
    assert (numba.get_num_threads(), torch.get_num_threads()) == (1, 1)
    p = apply_thread_policy(2)
    assert p.numba == numba.get_num_threads() == min(2, numba.config.NUMBA_NUM_THREADS)
    assert p.torch == torch.get_num_threads() == 2
    assert apply_thread_policy() == p                  # applied once: kept without a budget
    assert os.environ.get("OMP_WAIT_POLICY")            # the wait policy came with it


def test_zero_leaves_the_libraries_alone(restore):
    numba.set_num_threads(1)
    torch.set_num_threads(1)
    p = apply_thread_policy(0)
    assert (p.budget, p.numba, p.torch) == (0, 1, 1)


def test_budget_from_environment(monkeypatch):
    monkeypatch.setenv(ENV, "3")
    assert thread_budget() == 3 and thread_budget(5) == 5
    monkeypatch.delenv(ENV)
    assert thread_budget() == available_cores()
    for bad in ("two", "-1", "1.5"):
        monkeypatch.setenv(ENV, bad)
        with pytest.raises(ParameterError, match=f"{ENV} must be a non-negative integer"):
            thread_budget()
    with pytest.raises(ParameterError, match="threads"):
        thread_budget(-2)


CHILD = """
import json, numba, os, tempfile, torch, pyarrow as pa
from graphsys.storage.graph import open_graph
from graphsys.sampling import TemporalNeighborSampler
before = numba.get_num_threads(), torch.get_num_threads()
s = TemporalNeighborSampler(open_graph({graph!r}), 2)
print(json.dumps({{"before": before, "after": [numba.get_num_threads(),
                  torch.get_num_threads()], "policy": s.threads.budget,
                  "wait": os.environ.get("OMP_WAIT_POLICY")}}))
"""


def test_sampler_applies_the_policy(tmp_path):
    import pyarrow as pa

    import graphsys

    graphsys.from_arrow(pa.table({"src": [0, 1], "dst": [1, 2], "timestamp": [1, 2]}),
                        tmp_path / "g", edge_columns=["timestamp"])
    env = {**os.environ, ENV: "1", "PYTHONPATH": os.pathsep.join(sys.path)}
    env.pop("OMP_WAIT_POLICY", None)
    env.pop("GOMP_SPINCOUNT", None)
    done = subprocess.run([sys.executable, "-c", CHILD.format(graph=str(tmp_path / "g"))],
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["after"] == [1, 1] and out["policy"] == 1 and out["wait"] == "PASSIVE"


def test_small_hops_run_serial_with_the_same_picks(tmp_path, monkeypatch):
    import numpy as np
    import pyarrow as pa

    import graphsys
    from graphsys.sampling import temporal as tmod

    rng = np.random.default_rng(0)
    m = 3000
    g = graphsys.from_arrow(pa.table({"src": rng.integers(0, 50, m), "dst": rng.integers(0, 50, m),
                                      "timestamp": np.sort(rng.integers(0, 10**6, m))}),
                            tmp_path / "g", edge_columns=["timestamp"])
    sampler = tmod.TemporalNeighborSampler(g, 10, strategy="uniform")
    used = []
    for name in ("_pick_par", "_pick_ser"):
        real = getattr(tmod, name)
        monkeypatch.setattr(tmod, name, lambda *a, _r=real, _n=name: (used.append(_n), _r(*a)))
    nodes, times = rng.integers(0, 50, 2000), rng.integers(0, 10**6, 2000)
    small = sampler.sample_hop(nodes[:200], times[:200], 10)           # 2,000 picks
    forced = sampler.sample_hop(nodes[:200], times[:200], 10, parallel=True)
    big = sampler.sample_hop(nodes, times, 10)                          # 20,000 picks
    assert used == ["_pick_ser", "_pick_par", "_pick_par"]
    assert 200 * 10 < tmod.PARALLEL_MIN_PICKS <= 2000 * 10
    assert (small.nbr == forced.nbr).all() and (small.eid == forced.eid).all()
    assert (big.nbr[:200] == small.nbr).all()
