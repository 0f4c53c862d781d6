"""Every second attributed: the measured parts of a CPU run cover >= 95 % of its wall
time, for PageRank (from the process's start, through the CLI), embeddings and a GNN."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

import graphsys
from graphsys.analysis import profile_graph
from graphsys.analysis.timing import UNATTRIBUTED, attribute, process_age

REPO = Path(__file__).resolve().parents[2]


def _covered(tm: dict) -> None:
    assert tm["attributed_share"] >= 0.95, tm["parts"]
    named = sum(p["seconds"] for p in tm["parts"] if p["name"] != UNATTRIBUTED)
    assert named == pytest.approx(tm["attributed_seconds"])
    total = sum(p["seconds"] for p in tm["parts"])
    assert total == pytest.approx(tm["wall_seconds"], rel=1e-6)
    # the two views split the same wall time
    assert sum(p["seconds"] for p in tm["phases"]) == pytest.approx(total, rel=1e-6)


@pytest.fixture(scope="module")
def rmat(tmp_path_factory):
    rng = np.random.default_rng(1)
    n, m = 4_000, 48_000  # below the size PageRank solves as a linear system (a superstep a call)
    return graphsys.from_numpy(rng.integers(0, n, m), rng.integers(0, n, m),
                               tmp_path_factory.mktemp("g") / "g", num_nodes=n)


def test_process_age():
    age = process_age()
    assert age is None or 0 <= age < 24 * 3600


def test_pagerank_from_process_start(rmat):
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get(
        "PYTHONPATH", "")}
    out = subprocess.run([sys.executable, "-m", "graphsys", "profile", "pagerank",
                          str(rmat.path), "--mapping", "edge-balanced", "--json"],
                         capture_output=True, text=True, env=env, check=True).stdout
    doc = json.loads(out.strip().splitlines()[-1])
    tm = doc["time"]
    _covered(tm)
    assert tm["from"] == "process start"
    names = {p["name"]: p for p in tm["parts"]}
    start = next(n for n in names if n.startswith("start-up and imports"))
    assert names[start]["seconds"] > 0
    # numba kernels as named parts with their invocation counts: one call per superstep
    kernels = [p for p in tm["parts"] if p["kind"] == "kernel"]
    assert kernels and all(p["count"] >= 1 for p in kernels)
    assert any(p["count"] == doc["workload"]["supersteps"] for p in kernels)
    assert doc["kernels"]["numba_calls"] == sum(p["count"] for p in kernels)
    # the profiler's own work is listed apart, not in the run's wall time
    assert {p["name"] for p in tm["profiler"]} >= {"profiler start", "profiler stop"}
    assert doc["workload"]["backend"] == "numba"


def test_a_step_schedule_outside_the_gnn_workload_is_refused(rmat):
    from graphsys.errors import ParameterError

    with pytest.raises(ParameterError, match="step_schedule.*gnn workload"):
        profile_graph(rmat, workload="embed", step_schedule=None)


def test_embedding_epoch(rmat):
    prof = profile_graph(rmat, workload="embed", mappings=["edge-balanced"], dense=False)
    _covered(prof["time"])
    phases = {p["name"] for p in prof["time"]["phases"]}
    assert {"embedding buckets", "checkpoints"} <= phases
    ops = [p for p in prof["time"]["parts"] if p["kind"] == "operator"]
    assert ops and all(p["count"] >= 1 for p in ops)


def test_gnn_training_with_evaluation_and_checkpoints():
    from graphsys.generators import sbm

    m = sbm(600, 4000, blocks=3, features=8, train_per_class=60, num_val=60, num_test=120)
    nodes, edges = next(m.nodes()), next(m.edges())
    g = graphsys.from_numpy(edges["src"], edges["dst"], tempfile.mkdtemp() + "/sbm",
                            num_nodes=600, undirected=True,
                            node_columns={k: v for k, v in nodes.items() if k != "id"})
    prof = profile_graph(g, workload="gnn", mappings=["edge-balanced"], dense=False)
    w = prof["workload"]
    assert w["path"].startswith("graphsys.gnn.train") and w["epochs"] == 1
    assert 0 <= w["metrics"]["test_accuracy"] <= 1
    _covered(prof["time"])
    phases = {p["name"] for p in prof["time"]["phases"]}
    assert {"evaluation", "checkpoints", "reading features, labels and splits"} <= phases
    assert phases & {"sampling", "waiting for the sampler threads"}


class _Range:
    def __init__(self, start, end):
        self.start, self.end = start, end

    def elapsed_us(self):
        return self.end - self.start


class _Event:
    def __init__(self, name, start, end, parent=None):
        import torch

        self.name, self.time_range, self.cpu_parent = name, _Range(start, end), parent
        self.thread, self.device_type = 1, torch.autograd.DeviceType.CPU


def test_improperly_nested_ranges_are_counted_once():
    """A step marker opened inside one superstep and closed in the next: every instant
    belongs to one part (the interval started last), so nothing is counted twice."""
    s0 = _Event("bsp.superstep#0", 0, 100)
    s1 = _Event("bsp.superstep#1", 100, 200)
    step = _Event("graphsys.step#0", 90, 190)
    k = _Event("numba.kernel", 120, 150)
    op = _Event("aten::add", 20, 30, parent=s0)
    inner = _Event("aten::copy_", 22, 25, parent=op)
    parts = attribute([s0, s1, step, k, op, inner])
    assert sum(p["seconds"] for p in parts.values()) == pytest.approx(200e-6)
    assert parts["kernel kernel (numba)"] == {"seconds": pytest.approx(30e-6), "count": 1,
                                              "kind": "kernel"}
    assert parts["operator aten::add (torch)"]["count"] == 1  # aten::copy_ is inside it


def test_attribute_split_by_segments_adds_up_to_the_whole():
    """Cut at segment boundaries, each part's seconds over the segments (and outside them)
    add up to its seconds unsplit; each span is counted in the segment it starts in."""
    import random

    rng = random.Random(5)
    events, t = [], 0.0
    for k in range(30):
        start = t + rng.random() * 50
        end = start + 10 + rng.random() * 200
        name = "numba.kernel" if k % 3 else "graphsys.step"
        events.append(_Event(name, start, end))
        t = end if k % 2 else start + 5  # some nested, some overlapping
    segments = [(0.0, 1e-3, "a"), (1e-3, 2.5e-3, "b"), (4e-3, 9e-3, "a")]
    whole = attribute(events)
    split = attribute(events, segments=segments, outside="out")
    assert set(split) <= {"a", "b", "out"}
    for label, p in whole.items():
        assert sum(s.get(label, {}).get("seconds", 0.0) for s in split.values()) == \
            pytest.approx(p["seconds"])
        assert sum(s.get(label, {}).get("count", 0) for s in split.values()) == p["count"]
