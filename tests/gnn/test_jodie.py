"""JODIE (``task="temporal-link", model="jodie"``): its time projection against a hand
computation, its RNN memory fed by both ends of each event, shapes and determinism,
learning on a generated event stream, and its checkpoint (evaluated again, embedded,
refused when damaged)."""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pytest
import torch

import graphsys
from graphsys.errors import FormatError, ParameterError
from graphsys.gnn import TrainConfig, train
from graphsys.gnn.jodie import JODIE, time_shift_scale
from graphsys.gnn.temporal import TemporalMemory
from graphsys.gnn.temporal_task import TemporalTask
from graphsys.sampling.temporal import TemporalNeighborSampler

from .conftest import check_temporal_checkpoint, edit_config

#: The expected MRR of a random ranking among 21 candidates: H(21) / 21.
RANDOM_MRR = sum(1 / r for r in range(1, 22)) / 21


def _partners(path, n=100, m=2000, seed=0):
    """Each node has a partner (a random permutation); an event goes from a random node to
    its partner, or to a random node one time in ten."""
    rng = np.random.default_rng(seed)
    partner = rng.permutation(n)
    src = rng.integers(0, n, m)
    dst = np.where(rng.random(m) < 0.9, partner[src], rng.integers(0, n, m))
    return graphsys.from_arrow(pa.table({"src": src, "dst": dst, "timestamp": np.arange(m)}),
                               path, edge_columns=["timestamp"])


def _tiny(path, m=60):
    rng = np.random.default_rng(3)
    return graphsys.from_arrow(pa.table({"src": rng.integers(0, 12, m),
                                         "dst": rng.integers(0, 12, m),
                                         "timestamp": np.sort(rng.integers(0, 500, m)),
                                         "feature_0": rng.normal(size=m)}),
                               path, edge_columns=["timestamp", "feature_0"])


def test_the_projection_is_the_memory_scaled_by_the_standardised_gap():
    """emb(t) = (1 + (t - last - mu) / sigma * w) * memory, element by element by hand;
    and pairs() scores what score() scores on those projections."""
    torch.manual_seed(0)
    model = JODIE(5, 3, time_shift=(4.0, 2.0))
    with torch.no_grad():
        model.time_weight.copy_(torch.tensor([0.5, -1.0, 2.0]))
    mem = torch.tensor([[1.0, 2.0, 3.0], [-1.0, 0.5, 0.0], [0.2, 0.2, -0.4]])
    last = torch.tensor([0.0, 10.0, 3.0], dtype=torch.float64)
    t = torch.tensor([8.0, 11.0, 3.0], dtype=torch.float64)
    z = model.embed(mem, last, t).detach()
    w = [0.5, -1.0, 2.0]
    for i in range(3):
        gap = (float(t[i]) - float(last[i]) - 4.0) / 2.0     # 2.0, -1.5, -2.0
        for k in range(3):
            assert float(z[i, k]) == pytest.approx((1 + gap * w[k]) * float(mem[i, k]))
    assert float(z[0, 0]) == pytest.approx(2.0)               # (1 + 2 * 0.5) * 1
    src, dst = torch.tensor([0, 1]), torch.tensor([[2, 1], [0, 2]])
    got = model.pairs(mem, last, t[:2], src, dst)
    want = model.score(model.embed(mem[src], last[src], t[:2]).unsqueeze(1),
                       model.embed(mem[dst.reshape(-1)], last[dst.reshape(-1)],
                                   t[:2].repeat_interleave(2)).view(2, 2, 3))
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(model.pairs(mem, last, t[:2], src, dst[:, 0]), want[:, 0])


def test_time_shift_scale_by_brute_force():
    rng = np.random.default_rng(0)
    src, dst = rng.integers(0, 8, 50), rng.integers(0, 8, 50)
    t = np.sort(rng.random(50) * 100)
    gaps = []
    for node in range(8):
        times = sorted([t[i] for i in range(50) if src[i] == node]
                       + [t[i] for i in range(50) if dst[i] == node])
        gaps += [b - a for a, b in zip(times, times[1:])]
    mean, std = time_shift_scale(src, dst, t)
    assert mean == pytest.approx(np.mean(gaps)) and std == pytest.approx(np.std(gaps))
    assert time_shift_scale(np.array([1]), np.array([2]), np.array([5.0])) == (0.0, 1.0)
    assert time_shift_scale(np.array([1, 1]), np.array([2, 2]), np.array([0.0, 5.0])) == (
        5.0, 1.0)


@pytest.mark.parametrize("cell", ["gru", "rnn"])
def test_memory_cell_equals_torch_cell(cell):
    """The memory's split-input update is ``nn.GRUCell`` / ``nn.RNNCell`` over the
    concatenated message: same values, same parameter and time-encoding gradients."""
    torch.manual_seed(0)
    m = TemporalMemory(20, 8, 6, 2, cell=cell)
    hx, other, raw = torch.randn(5, 8), torch.randn(5, 8), torch.randn(5, 2)
    module = getattr(m, cell)
    outs = []
    for split in (True, False):
        m.zero_grad()
        enc = torch.randn(5, 6, generator=torch.Generator().manual_seed(1)).requires_grad_()
        h = (m._update(hx, other, enc, raw) if split
             else module(torch.cat([hx, other, enc, raw], 1), hx))
        h.pow(2).sum().backward()
        outs.append([h.detach(), enc.grad] + [p.grad.clone() for p in module.parameters()])
    for a, b in zip(*outs):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


def test_both_ends_of_an_event_update_their_memory_through_the_rnn(tmp_path):
    """After a batch, each end holds the event as its pending message; reading it applies
    ``nn.RNNCell`` to [own memory, other's memory, time encoding, features]; the model
    draws no neighbours."""
    g = _tiny(tmp_path / "g")
    torch.manual_seed(0)
    task = TemporalTask(g, TrainConfig(task="temporal-link", model="jodie", hidden=8),
                        torch.device("cpu"))
    model, stream, ev = task.model, task.stream, task.ev
    assert isinstance(model, JODIE) and not hasattr(model.memory, "gru")
    model.eval()
    called = []
    stream.sampler = type("NoSampler", (), {"__getattr__": lambda s, k: called.append(k)})()
    with torch.no_grad():
        stream.step(np.arange(20), np.zeros((20, 1), np.int64), grad=False)
        pos, neg = stream.step(np.arange(20, 40), np.zeros((20, 3), np.int64), grad=False)
    assert pos.shape == (20,) and neg.shape == (20, 3) and not called
    mem = model.memory
    i = 39                                     # the last event: both ends' latest message
    s, d = int(ev.src[i]), int(ev.dst[i])
    for node, other in ((s, d), (d, s)):
        assert bool(mem.has_msg[node]) and int(mem.msg_other[node]) == other
        want = model.memory.rnn(torch.cat([
            mem.memory[node], mem.memory[other],
            mem.time_enc((mem.msg_time[node] - mem.last_update[node]).float().view(1))[0],
            stream.raw_by_eid[int(ev.eid[i])]]).unsqueeze(0), mem.memory[node].unsqueeze(0))
        got, last = mem.read(torch.tensor([node]))
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
        assert float(last[0]) == float(ev.seconds(ev.time[i]))


def test_the_same_seed_trains_the_same_model(tmp_path):
    g = _tiny(tmp_path / "g")
    cfg = dict(task="temporal-link", model="jodie", hidden=8, epochs=2, batch_size=20,
               link_eval_negatives=5, seed=7)
    a, b = (train(g, TrainConfig(**cfg)) for _ in range(2))
    assert a.model.config() == {"model": "jodie", "num_nodes": 12, "dim": 8, "raw_dim": 1}
    for k, v in a.model.state_dict().items():
        assert torch.equal(v, b.model.state_dict()[k]), k
    assert all(a.metrics[k] == b.metrics[k] or math.isnan(a.metrics[k])
               for k in a.metrics)


def test_jodie_learns_who_meets_whom_and_its_checkpoint_serves(tmp_path, monkeypatch):
    """Far above a random ranking on the partners' stream, without drawing a neighbour;
    the checkpoint evaluates again to the run's metrics, embeds every node and scores new
    events."""
    from graphsys.gnn.temporal_checkpoint import evaluate_temporal
    from graphsys.gnn.temporal_score import TemporalScorer

    drawn = []
    real = TemporalNeighborSampler.sample_hop
    monkeypatch.setattr(TemporalNeighborSampler, "sample_hop",
                        lambda *a, **k: drawn.append(1) or real(*a, **k))
    g = _partners(tmp_path / "g")
    torch.manual_seed(0)
    res = train(g, TrainConfig(task="temporal-link", model="jodie", hidden=16, epochs=8,
                               lr=0.01, batch_size=100, link_eval_negatives=20,
                               link_val_fraction=0.15, link_test_fraction=0.15),
                out=tmp_path / "run")
    assert not drawn
    assert res.metrics["mrr"] > RANDOM_MRR + 0.08 and res.metrics["auc"] > 0.6, res.metrics
    check_temporal_checkpoint(tmp_path / "run", res.metrics, 100, 16)
    scorer = TemporalScorer(tmp_path / "run" / "checkpoint")
    assert scorer.score([1, 2], [3, 4], [2000, 2001], update=True).shape == (2,)
    assert scorer.time == 2001
    edit_config(tmp_path / "run" / "checkpoint", heads=2)
    with pytest.raises(FormatError, match="config.heads is not a field of a jodie model"):
        evaluate_temporal(tmp_path / "run" / "checkpoint")


def test_jodie_settings():
    assert TrainConfig(task="temporal-link", model="jodie").fanouts is None
    with pytest.raises(ParameterError, match="fanouts does not apply to model jodie"):
        TrainConfig(task="temporal-link", model="jodie", fanouts=[10])
    with pytest.raises(ParameterError, match="jodie is a model of task temporal-link"):
        TrainConfig(task="node", model="jodie")
    with pytest.raises(ParameterError, match="must be one of tgn, tgat or jodie, got 'gcn'"):
        TrainConfig(task="temporal-link", model="gcn")
