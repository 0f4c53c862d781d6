"""Operator counts against workloads with a known number of launches; transfers; balance."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from graphsys.analysis.balance import (
    RankWork,
    cv,
    max_over_mean,
    rank_split,
    storage_balance,
    work_by_range,
)
from graphsys.analysis.kernels import dense_reference, profile_call
from graphsys.errors import GraphsysError, ParameterError
from graphsys.storage.graph import open_graph
from graphsys.storage.ingest import EdgeSource, IngestOptions, ingest_sources


def test_known_number_of_operator_launches():
    a, b = torch.ones(100), torch.ones(100)

    def work(marker):
        for k in range(4):
            marker.step()
            for _ in range(k + 1):  # k+1 multiplications ...
                c = a * b
            c.add_(1.0)  # ... and one in-place add per step
            c.to(torch.float64)  # aten::to: one top-level op (its copy_ is nested)
        marker.finish()
        return float(c.sum())  # sum + item: 2 ops, 1 sync

    _, st = profile_call(work)
    d = st.to_dict()
    assert d["kernels"]["per_step"] == [3, 4, 5, 6]
    assert d["kernels"]["invocations"] == 3 + 4 + 5 + 6 + 2
    assert d["kernels"]["finish"] == 2
    assert d["kernels"]["syncs"] == 1
    assert d["transfers"]["count"] == 0


def test_cross_device_copies_are_counted_with_bytes():
    x = torch.ones(1000, dtype=torch.float32)  # 4000 bytes

    def work(marker):
        marker.step()
        x.to("meta")
        torch.empty(10, device="meta").copy_(torch.ones(10, dtype=torch.float64))
        x.to(torch.float64)  # same device: not a transfer

    _, st = profile_call(work)
    t = st.to_dict()["transfers"]
    assert t["count"] == 2 and t["bytes"] == 4000 + 80 and t["d2d"] == 0
    assert t["histogram"]["1KiB-64KiB"] == 1 and t["histogram"]["<1KiB"] == 1


def test_dense_reference_runs_requested_steps():
    ref = dense_reference(1e6, 3)
    assert ref["model"]["steps"] == 3 and len(ref["kernels"]["per_step"]) == 3
    assert ref["kernels"]["per_step"][0] > 0
    assert ref["kernels"]["flops_per_invocation"] > 0


def test_balance_helpers_hand_computed():
    assert max_over_mean([1, 1, 4]) == pytest.approx(2.0)
    assert cv([2, 4]) == pytest.approx(1 / 3)
    assert cv([0, 0]) == 0.0 and max_over_mean([]) == 1.0
    assert rank_split(5, 2) == [(0, 2), (2, 5)]
    with pytest.raises(ParameterError, match="^ranks must be a positive integer"):
        rank_split(4, 0)
    with pytest.raises(GraphsysError, match="at least one partition per rank"):
        rank_split(2, 3)


def test_rank_work_hand_computed():
    # ids 0..9, ranks own [0, 3), [3, 3) (no node), [3, 10); degrees 1..10, chunked 4 + 6
    bounds = np.array([0, 3, 3, 10])
    deg = np.arange(1, 11)
    sel = np.array([1, 0, 1, 1, 0, 0, 0, 1, 1, 0], bool)  # ids 0, 2, 3, 7, 8

    def chunks():
        yield 0, np.where(sel[:4], deg[:4], 0)
        yield 4, np.where(sel[4:], deg[4:], 0)

    w = work_by_range(chunks, bounds)
    assert w.tolist() == [1 + 3, 0, 4 + 8 + 9]
    rw = RankWork(bounds)
    rw.add(w)
    rw.add(np.array([6, 0, 0]))
    r = rw.result()
    assert r["work"] == [10, 0, 21] and r["per_step"] == [[4, 0, 21], [6, 0, 0]]
    assert r["max_over_mean"] == pytest.approx(21 / (31 / 3))
    # supersteps wait for their busiest rank: (21 + 6) / (25/3 + 6/3)
    assert r["superstep_max_over_mean"] == pytest.approx(27 / (31 / 3))


def test_storage_balance_matches_graph(tmp_path):
    f = tmp_path / "e.tsv"
    rng = np.random.default_rng(1)
    f.write_text("".join(f"{s}\t{d}\n" for s, d in rng.integers(0, 60, (400, 2))))
    ingest_sources([EdgeSource([f])], tmp_path / "g", IngestOptions(partitions=4))
    g = open_graph(tmp_path / "g")
    st = storage_balance(g, ranks=2)
    counts = g.bucket_counts()
    rows = counts.sum(1)
    assert st["partitions"]["edges"] == rows.tolist()
    assert st["partitions"]["edge_cv"] == pytest.approx(rows.std() / rows.mean())
    assert st["buckets"]["cv"] == pytest.approx(counts.std() / counts.mean())
    assert st["ranks"]["edges"] == [int(rows[:2].sum()), int(rows[2:].sum())]
    assert st["partitions"]["nodes"] == g.partition_sizes().tolist()


def test_scalar_reads_without_transfer_counter_match_the_counter():
    """A CPU-only run may leave the dispatch-mode counter out: syncs then come from the
    profiler's events and must be the same count (bool()/int()/.item(), not the scalar
    reads nested inside other operators such as nonzero or repeat_interleave)."""
    x = torch.arange(10)

    def work(marker):
        marker.step()
        n = int(x.sum()) + x.max().item()
        if bool((x > 3).any()):
            n += 1
        torch.repeat_interleave(x[:3], x[:3])  # sizes its output with a nested scalar read
        x[x > 5].nonzero()
        marker.finish()
        return n

    _, with_counter = profile_call(work)
    _, without = profile_call(work, count_transfers=False)
    assert with_counter.syncs == without.syncs == 3
    assert with_counter.per_step == without.per_step
    assert not without.transfers
    assert without.to_dict()["transfers"]["counted"].startswith("not instrumented")


class _Record:
    """A kineto record as :func:`graphsys.analysis.events.raw_events` reads it."""

    def __init__(self, name, start_us, dur_us, device, corr=0, linked=0):
        self._name, self._start, self._dur = name, start_us * 1000, dur_us * 1000
        self._device, self._corr, self._linked = device, corr, linked

    def name(self):
        return self._name

    def start_ns(self):
        return self._start

    def duration_ns(self):
        return self._dur

    def start_thread_id(self):
        return 1 if self._device == torch.autograd.DeviceType.CPU else 7

    def is_hidden_event(self):
        return False

    def is_async(self):
        return False

    def device_type(self):
        return self._device

    def correlation_id(self):
        return self._corr

    def linked_correlation_id(self):
        return self._linked


def test_a_cuda_kernel_counts_in_the_step_that_launched_it():
    """The device runs a kernel when its queue gets there, possibly after the launching step
    has ended on the host: it is charged to that step (its operator's start), not to the
    step running when it started; a device's copy of a step range is neither a range nor a
    kernel."""
    from types import SimpleNamespace

    from graphsys.analysis.events import raw_events
    from graphsys.analysis.kernels import STEP_PREFIX, _analyse

    cpu, gpu = torch.autograd.DeviceType.CPU, torch.autograd.DeviceType.CUDA
    records = [
        _Record(f"{STEP_PREFIX}0", 0, 100, cpu),
        _Record("aten::add", 10, 5, cpu, corr=41),
        _Record(f"{STEP_PREFIX}1", 100, 100, cpu),
        _Record(f"{STEP_PREFIX}0", 20, 150, gpu),   # the device's copy of step 0
        _Record("add_kernel", 150, 5, gpu, linked=41),  # launched in step 0, ran in step 1
        _Record("aten::mul", 120, 5, cpu, corr=42),
        _Record("mul_kernel", 160, 5, gpu, linked=42),
        _Record("raw_kernel", 170, 5, gpu),  # no operator named: its own start
    ]
    results = SimpleNamespace(trace_start_ns=lambda: 0, events=lambda: records)
    events = raw_events(SimpleNamespace(kineto_results=results), cuda=True)
    launch = {e.name: e.launch for e in events if e.device_type == gpu}
    assert launch == {f"{STEP_PREFIX}0": 20.0, "add_kernel": 10.0, "mul_kernel": 120.0,
                      "raw_kernel": 170.0}
    counts = _analyse(events, "cuda")[0]
    kernels = {k: v for k, v in counts.items() if k != "numba calls"}
    assert kernels == {f"{STEP_PREFIX}0": 1, f"{STEP_PREFIX}1": 2}
