"""Streamed torch passes recorded once and replayed (graphsys.bsp.recorded_pass):
PageRank's all-active copy/sum pass and a frontier program's. On the CPU, with the device
list switched, each replay runs the pass again into the recorded outputs, so the control
flow, the answers and the counters are checked here; a CUDA run records a graph (the
device tests at the end)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

from graphsys import bsp
from graphsys.bsp import device_stream, recorded_pass
from graphsys.bsp.recorded_pass import record
from graphsys.errors import ConvergenceWarning

#: all streamed, some batches kept and some streamed
BUDGETS = {"streamed": 0, "mixed": 2500}


@pytest.fixture(autouse=True)
def batches_only(monkeypatch):
    """Batches, kept or streamed: no solver's layout built on the device from them."""
    monkeypatch.setattr(device_stream, "DEVICE_BUILDS", ())


def _pagerank(graph, budget, **kw):
    return bsp.pagerank(graph, tol=1e-12, mode="out-of-core", backend="torch",
                        weighted=False, device_budget=budget, **kw)


def _counters(res) -> list[tuple]:
    return [(s.edges_scanned, s.messages_sent, s.bytes_read, s.bytes_h2d, s.direction)
            for s in res.stats.supersteps]


@pytest.mark.parametrize("budget", list(BUDGETS.values()), ids=list(BUDGETS))
@pytest.mark.parametrize("key", ["directed-p3", "undirected-p1"])
def test_replays_give_the_passes_answers_and_counters(graphs, key, budget, monkeypatch):
    """Recorded after its first superstep, the pass replays every later one: the ranks
    and every superstep's counters are the batch-by-batch run's."""
    g = graphs[key].graph
    eager = _pagerank(g, budget)
    assert eager.stats.pass_replays == 0          # the CPU is not a device that records
    monkeypatch.setattr(device_stream, "RECORDED_PASS_DEVICES", ("cpu",))
    replayed = _pagerank(g, budget)
    assert replayed.stats.pass_replays == replayed.stats.num_supersteps - 1 > 1
    np.testing.assert_array_equal(replayed.values, eager.values)
    assert _counters(replayed) == _counters(eager)


@pytest.mark.parametrize("budget", list(BUDGETS.values()), ids=list(BUDGETS))
def test_a_replay_moves_the_streamed_batches_and_forgets_the_ring(graphs, budget,
                                                                  monkeypatch):
    """Each replay books the bytes of the batches it copies, as a batch-by-batch pass
    does; after it the ring's events are forgotten, so that an eager pass's next copy
    into a slot waits for all the queued compute (the replay's reads of that slot
    included), not only for the eager compute that last read it."""
    from tests.bsp.test_device_stream import _moved_per_pass

    g = graphs["directed-p3"].graph
    eager, _ = _moved_per_pass(g, budget, passes=4)
    monkeypatch.setattr(device_stream, "RECORDED_PASS_DEVICES", ("cpu",))
    moved, buckets = _moved_per_pass(g, budget, passes=4)
    assert moved == eager and moved[2] > 0
    assert not any(slot.used for slot in buckets.slots) and buckets._last is None


@pytest.mark.parametrize("algo", ["bfs", "sssp", "wcc"])
def test_frontier_passes_recur_and_replay(graphs, algo, monkeypatch):
    """A frontier program's streamed pass over the same buckets, with the same masking,
    is recorded the second time it runs and replayed after: the answer, every
    superstep's counters (messages of masked senders counted on the device) and the
    supersteps are the batch-by-batch run's."""
    g = graphs["undirected-p3"].graph
    kw = dict(mode="out-of-core", backend="torch", device_budget=0)

    def run():
        if algo == "wcc":
            return bsp.wcc(g, **kw)
        return getattr(bsp, algo)(g, 0, **kw)

    eager = run()
    monkeypatch.setattr(device_stream, "RECORDED_PASS_DEVICES", ("cpu",))
    replayed = run()
    assert replayed.stats.pass_replays > 0
    np.testing.assert_array_equal(replayed.values, eager.values)
    assert _counters(replayed) == _counters(eager)


def test_hits_records_each_direction(graphs, monkeypatch):
    """HITS alternates its passes' directions: each is recorded under its own key, and the
    scores are the batch-by-batch run's."""
    g = graphs["directed-p3"].graph
    kw = dict(mode="out-of-core", backend="torch")        # nothing kept on the CPU
    eager = bsp.hits(g, **kw)
    monkeypatch.setattr(device_stream, "RECORDED_PASS_DEVICES", ("cpu",))
    hits = bsp.hits(g, **kw)
    assert hits.stats.pass_replays >= hits.stats.num_supersteps - 4
    np.testing.assert_array_equal(hits.values, eager.values)


class _Doubled(bsp.VertexProgram):
    """Every vertex sends twice its id through a message function of its own, for three
    supersteps."""

    name = "doubled"
    message = staticmethod(lambda xs, w: 2.0 * xs)
    combiner = "max"

    def init(self, ctx):
        return {"v": ctx.full(0.0)}, torch.ones(ctx.num_local, dtype=torch.bool,
                                                device=ctx.device)

    def send(self, ctx, state):
        return ctx.node_range().to(torch.float64)

    def update(self, ctx, state, combined, received):
        state["v"] = torch.where(received, combined, state["v"])
        return torch.ones_like(received), {}

    def result(self, ctx, state):
        return state["v"]


@pytest.mark.parametrize("program", [_Doubled, "custom-combiner"])
def test_messages_of_ones_own_are_not_recorded(graphs, program, monkeypatch):
    """A message function of one's own (arbitrary code, run again by no replay) or a
    combiner of one's own (raw messages) keeps its passes batch by batch."""
    from tests.bsp.test_engine import MaxLabel

    g = graphs["directed-p3"].graph
    make = MaxLabel if program == "custom-combiner" else program
    kw = dict(mode="out-of-core", backend="torch", max_iters=4)
    with warnings.catch_warnings():   # the doubled ids never settle: max_iters ends it
        warnings.simplefilter("ignore", ConvergenceWarning)
        eager = bsp.run(g, make(), **kw).values
        monkeypatch.setattr(device_stream, "RECORDED_PASS_DEVICES", ("cpu",))
        res = bsp.run(g, make(), **kw)
    assert res.stats.num_supersteps >= 3 and res.stats.pass_replays == 0
    np.testing.assert_array_equal(res.values, eager)


def test_a_run_holds_few_recorded_passes(graphs, monkeypatch):
    """No recorded pass past MAX_RECORDED a run; a key seen once is not recorded."""
    from graphsys.bsp import recorded_pass as rp

    g = graphs["undirected-p3"].graph
    monkeypatch.setattr(device_stream, "RECORDED_PASS_DEVICES", ("cpu",))
    monkeypatch.setattr(rp, "MAX_RECORDED", 0)
    res = bsp.wcc(g, mode="out-of-core", backend="torch", device_budget=0)
    assert res.stats.pass_replays == 0
    monkeypatch.setattr(rp, "MAX_RECORDED", 8)
    monkeypatch.setattr(rp, "RECORD_AFTER", 10**6)
    assert bsp.wcc(g, mode="out-of-core", backend="torch",
                   device_budget=0).stats.pass_replays == 0


def test_a_pass_read_from_the_files_is_not_recorded(graphs, monkeypatch):
    """Without a host cache each streamed batch is staged from the mapped files every
    superstep (host work a graph cannot replay): the pass stays batch by batch."""
    monkeypatch.setattr(device_stream, "RECORDED_PASS_DEVICES", ("cpu",))
    monkeypatch.setattr(device_stream, "HOST_FRACTION", 0.0)
    res = _pagerank(graphs["directed-p3"].graph, 0)
    assert res.stats.pass_replays == 0


def test_a_pass_whose_temporaries_may_not_fit_is_not_recorded(monkeypatch):
    """On CUDA a pass is recorded only where its graph's pool (16 bytes an edge at most
    for a copy/sum pass, 64 for a frontier one) fits half the free memory."""
    from graphsys.bsp.recorded_pass import POOL_BYTES_PER_EDGE, fits_pool

    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device: (32 * 1000, 1 << 40))
    cuda = torch.device("cuda")
    assert POOL_BYTES_PER_EDGE == {"copy-sum": 16, "frontier": 64}
    assert fits_pool(1000, cuda, "copy-sum") and not fits_pool(1001, cuda, "copy-sum")
    assert fits_pool(250, cuda, "frontier") and not fits_pool(251, cuda, "frontier")
    assert fits_pool(0, cuda, "frontier", 16_000) and not fits_pool(0, cuda, "frontier",
                                                                     16_001)  # per vertex
    assert fits_pool(10**15, torch.device("cpu"), "frontier")


def test_a_recording_that_fails_warns_and_the_pass_runs_eagerly(graphs, monkeypatch):
    g = graphs["directed-p3"].graph
    eager = _pagerank(g, 0)
    monkeypatch.setattr(device_stream, "RECORDED_PASS_DEVICES", ("cpu",))

    def fails(*args, **kwargs):
        raise RuntimeError("operation not permitted when stream is capturing\nmore")

    monkeypatch.setattr(recorded_pass, "record", fails)
    with pytest.warns(RuntimeWarning, match=r"the streamed pass runs batch by batch, not as "
                                            r"one CUDA graph: recording it failed "
                                            r"\(operation not permitted when stream is "
                                            r"capturing\)$"):
        res = _pagerank(g, 0)
    assert res.stats.pass_replays == 0
    np.testing.assert_array_equal(res.values, eager.values)
    monkeypatch.setattr(recorded_pass, "record", lambda *args, **kwargs: None)
    with pytest.warns(RuntimeWarning, match="its first replay's sums differ from the pass's"):
        res = _pagerank(g, 0)
    assert res.stats.pass_replays == 0
    np.testing.assert_array_equal(res.values, eager.values)


def test_a_capture_voided_once_is_tried_again(graphs, monkeypatch):
    """A capture voided from outside the pass (a call it forbids, made elsewhere) is tried
    once more, on a fresh ring; one that fails every time leaves the pass eager."""
    g = graphs["directed-p3"].graph
    eager = _pagerank(g, 0)
    monkeypatch.setattr(device_stream, "RECORDED_PASS_DEVICES", ("cpu",))
    real, calls = recorded_pass.record, []

    def voided_once(*args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("operation failed due to a previous error during capture")
        return real(*args, **kwargs)

    monkeypatch.setattr(recorded_pass, "record", voided_once)
    res = _pagerank(g, 0)
    assert len(calls) == recorded_pass.CAPTURE_TRIES == 2 and res.stats.pass_replays > 0
    np.testing.assert_array_equal(res.values, eager.values)


def test_a_replay_that_differs_is_dropped():
    """The first replay is checked against the eager pass: outputs that differ leave no
    recorded pass; the same ones (sums within rounding unless exact) keep it."""
    x, act = torch.arange(5, dtype=torch.float64), torch.tensor([True, False] * 2 + [True])

    def body(xs, a):
        return xs * 2.0, xs > 1, a.sum()

    good = (x * 2.0, x > 1, act.sum())
    rec = record(body, (x, act), good, [], (1, 2, 3, 4, 5))
    assert rec is not None and rec.replays == 0 and rec.counts == (1, 2, 3, 4, 5)
    sums, received, count = rec.run(x + 1, ~act)
    assert torch.equal(sums, (x + 1) * 2.0) and int(count) == 2 and rec.replays == 1
    assert sums.data_ptr() != rec.out[0].data_ptr()      # a copy: the next replay rewrites
    assert record(body, (x, act), (x * 2.0 + 1e-6, x > 1, act.sum()), [], ()) is None
    assert record(body, (x, act), (x * 2.0, x > 2, act.sum()), [], ()) is None
    assert record(body, (x, act), (x * 2.0, x > 1, act.sum() + 1), [], ()) is None
    assert rec.takes(x, act) and not rec.takes(x.float(), act) and not rec.takes(x[:4], act)
    assert not rec.takes(x)
    near = (x * 2.0 * (1 + recorded_pass.CHECK_RTOL / 4), x > 1, act.sum())
    assert record(body, (x, act), near, [], ()) is not None
    assert record(body, (x, act), near, [], (), exact=True) is None


def test_a_replayed_superstep_is_four_launches_and_no_host_wait():
    """A replay (emulated: one launch reported) with its input copied in and its outputs
    copied out: 4 launches, nothing across the bus, no synchronisation."""
    from graphsys.analysis.device_counts import DeviceWorkCounter
    from graphsys.bsp.recorded_pass import RecordedPass
    from graphsys.device import note_launch

    x, out = torch.zeros(8, dtype=torch.float64), (torch.zeros(8, dtype=torch.float64),
                                                    torch.zeros(8, dtype=torch.bool))
    rec = RecordedPass(lambda: note_launch("cuda_graph"), (x.clone(),), out, [], ())
    with DeviceWorkCounter(device_tensors=[x, *rec.inputs, *out]) as c:
        rec.run(x)
    assert c.launches == 4 and c.ops["cuda_graph"] == 1, c.ops
    assert not c.records and not c.syncs


@pytest.mark.device
def test_streamed_pass_on_the_device(graphs, device):
    """On the test device, a streamed PageRank (every batch copied every superstep): on
    CUDA its pass is recorded and replayed from the second superstep, with the ranks of
    the numba out-of-core path within rounding and the same bytes copied a superstep."""
    g = graphs["directed-p3"].graph
    res = _pagerank(g, 0, device=device)
    numba = bsp.pagerank(g, tol=1e-12, mode="out-of-core", weighted=False).values
    assert np.abs(res.values - numba).sum() < 1e-9
    cuda = torch.device(device).type == "cuda"
    assert res.stats.pass_replays == (res.stats.num_supersteps - 1 if cuda else 0)
    moved = {s.bytes_h2d for s in res.stats.supersteps}
    assert len(moved) == 1 and (moved != {0}) == (torch.device(device).type != "cpu")


@pytest.mark.device
@pytest.mark.parametrize("algo", ["bfs", "wcc"])
def test_streamed_frontier_pass_on_the_device(graphs, algo, device):
    """On the test device, a streamed frontier program: on CUDA its recurring pass is
    recorded and replayed, with the answer of the numba out-of-core path."""
    g = graphs["undirected-p3"].graph
    kw = dict(mode="out-of-core", backend="torch", device_budget=0, device=device)
    if algo == "wcc":
        res, ref = bsp.wcc(g, **kw), bsp.wcc(g, mode="out-of-core")
    else:
        res, ref = bsp.bfs(g, 0, **kw), bsp.bfs(g, 0, mode="out-of-core")
    np.testing.assert_array_equal(res.values, ref.values)
    assert (res.stats.pass_replays > 0) == (torch.device(device).type == "cuda")
