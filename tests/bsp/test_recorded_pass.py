"""The streamed all-active copy/sum pass recorded once and replayed
(graphsys.bsp.recorded_pass): on the CPU, with the device list switched, each replay runs
the pass again into the recorded outputs, so the control flow, the answers and the
counters are checked here; a CUDA run records a graph (the device test at the end)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from graphsys import bsp
from graphsys.bsp import device_stream, recorded_pass
from graphsys.bsp.recorded_pass import record

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


def test_only_the_all_active_copy_sum_pass_is_recorded(graphs, monkeypatch):
    """A frontier program's passes (BFS: its active senders change every superstep) and
    HITS's (two values a vertex) run batch by batch, with their answers unchanged."""
    g = graphs["directed-p3"].graph
    kw = dict(mode="out-of-core", backend="torch")        # nothing kept on the CPU
    eager = bsp.bfs(g, 0, **kw).values, bsp.hits(g, **kw).values
    monkeypatch.setattr(device_stream, "RECORDED_PASS_DEVICES", ("cpu",))
    bfs, hits = bsp.bfs(g, 0, **kw), bsp.hits(g, **kw)
    assert bfs.stats.pass_replays == hits.stats.pass_replays == 0
    np.testing.assert_array_equal(bfs.values, eager[0])
    np.testing.assert_array_equal(hits.values, eager[1])


def test_a_pass_read_from_the_files_is_not_recorded(graphs, monkeypatch):
    """Without a host cache each streamed batch is staged from the mapped files every
    superstep (host work a graph cannot replay): the pass stays batch by batch."""
    monkeypatch.setattr(device_stream, "RECORDED_PASS_DEVICES", ("cpu",))
    monkeypatch.setattr(device_stream, "HOST_FRACTION", 0.0)
    res = _pagerank(graphs["directed-p3"].graph, 0)
    assert res.stats.pass_replays == 0


def test_a_pass_whose_temporaries_may_not_fit_is_not_recorded(monkeypatch):
    """On CUDA the pass is recorded only where its graph's pool (16 bytes an edge at
    most) fits half the free memory."""
    from graphsys.bsp.recorded_pass import POOL_BYTES_PER_EDGE, fits_pool

    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device: (32 * 1000, 1 << 40))
    cuda = torch.device("cuda")
    assert POOL_BYTES_PER_EDGE == 16
    assert fits_pool(1000, cuda) and not fits_pool(1001, cuda)
    assert fits_pool(10**15, torch.device("cpu"))


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


def test_a_replay_that_differs_is_dropped():
    """The first replay is checked against the eager pass: sums or receivers that differ
    leave no recorded pass; the same ones (within rounding) keep it."""
    x = torch.arange(5, dtype=torch.float64)
    calls = []

    def body(xs):
        calls.append(1)
        return xs * 2.0, xs > 1

    good = (x * 2.0, x > 1)
    rec = record(body, x, good, [], (1, 2, 3, 4), [[(0, 0, False)]])
    assert rec is not None and rec.replays == 0 and rec.counts == (1, 2, 3, 4)
    sums, received = rec.run(x + 1)
    assert torch.equal(sums, (x + 1) * 2.0) and rec.replays == 1
    assert sums.data_ptr() != rec.out[0].data_ptr()      # a copy: the next replay rewrites
    assert record(body, x, (x * 2.0 + 1e-6, x > 1), [], (), []) is None
    assert record(body, x, (x * 2.0, x > 2), [], (), []) is None
    near = (x * 2.0 * (1 + recorded_pass.CHECK_RTOL / 4), x > 1)
    assert record(body, x, near, [], (), []) is not None


def test_a_replayed_superstep_is_four_launches_and_no_host_wait():
    """A replay (emulated: one launch reported) with its input copied in and its outputs
    copied out: 4 launches, nothing across the bus, no synchronisation."""
    from graphsys.analysis.device_counts import DeviceWorkCounter
    from graphsys.bsp.recorded_pass import RecordedPass
    from graphsys.device import note_launch

    x, out = torch.zeros(8, dtype=torch.float64), (torch.zeros(8, dtype=torch.float64),
                                                    torch.zeros(8, dtype=torch.bool))
    rec = RecordedPass(lambda: note_launch("cuda_graph"), x.clone(), out, [], (), [])
    with DeviceWorkCounter(device_tensors=[x, rec.x, *out]) as c:
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
