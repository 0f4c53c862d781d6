"""Padded blocks (DeviceNeighborSampler.padded_blocks, SAGEConv on them) against the exact
blocks of the same batch, and NodeStepGraph's steps against a NodeLoader loop on the same
batches; its step's transfers, synchronisations and launches counted on the CPU."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from graphsys.analysis.device_counts import DeviceWorkCounter
from graphsys.errors import GraphsysError
from graphsys.gnn import GNN, NodeLoader, NodeStepGraph, PinSageConv
from graphsys.gnn.optim import fused_adam
from graphsys.sampling import DeviceNeighborSampler, NeighborSampler, from_coo
from graphsys.sampling._util import derive_seed
from graphsys.sampling.block import Block

N = 3000


@pytest.fixture(scope="module")
def adj():
    rng = np.random.default_rng(11)
    src, dst = rng.integers(0, N, 30000), rng.integers(0, N, 30000)
    return from_coo(np.r_[src, dst], np.r_[dst, src], N, N)


def _rows(block: Block) -> list[list[int]]:
    """Each destination's picks (node ids, in the block's edge order)."""
    ids = block.src_nodes[block.edge_src]
    return [ids[block.edge_dst == i].tolist() for i in range(block.num_dst_nodes)]


@pytest.mark.parametrize("fanouts,replace", [([15, 10], False), ([4, 3], True), ([5], False),
                                             ([3, 2, 2], False)])
def test_padded_blocks_hold_the_blocks_picks(adj, fanouts, replace):
    """Every real row of every layer: the same node, the same picks in the same order,
    weights 1/picks; the padding rows pick nothing; the seeds lead the output layer."""
    dev = DeviceNeighborSampler(adj, fanouts, replace=replace, device="cpu")
    seeds = np.random.default_rng(3).choice(N, 300, replace=False)
    exact = dev.sample_blocks(seeds, 9)
    padded = dev.padded_blocks(seeds, 9, size=512)
    assert padded[-1].num_dst_nodes == 512
    assert padded[-1].src_nodes[:300].tolist() == seeds.tolist()
    for k, (e, p) in enumerate(zip(exact, padded)):
        assert p.fanout == fanouts[k]
        assert torch.equal(p.src_nodes[:e.num_src_nodes], e.src_nodes)
        assert (p.src_nodes[e.num_src_nodes:] == N).all()
        if k + 1 < len(padded):
            assert p.num_dst_nodes == padded[k + 1].num_src_nodes
        picked = p.src_nodes[p.neighbours]
        kept = p.weights > 0
        assert [picked[i][kept[i]].tolist() for i in range(e.num_dst_nodes)] == _rows(e)
        assert not kept[e.num_dst_nodes:].any()
        sums = p.weights.sum(1)
        has = kept.any(1)
        assert torch.allclose(sums[has], torch.ones(int(has.sum())))


def test_padded_blocks_wherever_the_ids_are_read(adj):
    """Neighbour ids staged from host memory: the same padded blocks."""
    seeds = np.arange(0, 600, 3)
    a, b = (DeviceNeighborSampler(adj, [5, 4], device="cpu", csr=csr).padded_blocks(
        seeds, 4, size=256) for csr in ("device", "staged"))
    assert all(torch.equal(x.src_nodes, y.src_nodes) and torch.equal(x.neighbours, y.neighbours)
               and torch.equal(x.weights, y.weights) for x, y in zip(a, b))


@pytest.fixture(scope="module")
def looped():
    """The random graph plus a self-loop on every 7th node: rows that pick themselves."""
    rng = np.random.default_rng(11)
    src, dst = rng.integers(0, N, 30000), rng.integers(0, N, 30000)
    loops = np.arange(0, N, 7)
    return from_coo(np.r_[src, dst, loops], np.r_[dst, src, loops], N, N)


@pytest.mark.parametrize("model,heads", [("sage", 8), ("gcn", 8), ("gat", 2), ("gin", 8)])
@pytest.mark.parametrize("hidden", [32, 8])
@pytest.mark.parametrize("replace", [False, True])
def test_padded_forward_and_gradients_equal_the_blocks(looped, model, heads, hidden, replace):
    """Each builtin model that takes padded blocks (two layers; hidden 32 and 8 make
    SAGE's and GCN's layers aggregate first or project first) gives the seeds the same
    outputs and its parameters the same finite gradients, self picks included."""
    dev = DeviceNeighborSampler(looped, [10, 5], replace=replace, device="cpu")
    seeds = np.random.default_rng(4).choice(N, 200, replace=False)
    feat = torch.randn(N + 1, 16, generator=torch.Generator().manual_seed(1))
    torch.manual_seed(0)
    net = GNN(model, 16, hidden, 4, num_layers=2, dropout=0.0, heads=heads)
    exact, padded = dev.sample_blocks(seeds, 2), dev.padded_blocks(seeds, 2, size=256)
    assert any(bool(b.self_picks.any()) for b in padded)
    outs, grads = [], []
    for blocks in (exact, padded):
        out = net(blocks, feat[blocks[0].src_nodes])[:200]
        outs.append(out)
        grads.append(torch.autograd.grad(out.square().sum(), list(net.parameters())))
    assert torch.allclose(outs[0], outs[1], rtol=1e-5, atol=1e-5)
    for a, b in zip(*grads):
        assert torch.isfinite(b).all()
        assert torch.allclose(a, b, rtol=1e-4, atol=1e-4 * a.abs().max())


def test_padded_rows_are_marked(adj):
    """``real_dst``: the real destinations of every layer, first; the padding rows pick
    nothing."""
    dev = DeviceNeighborSampler(adj, [4, 3], device="cpu")
    seeds = np.arange(0, 300, 3)
    exact, padded = dev.sample_blocks(seeds, 1), dev.padded_blocks(seeds, 1, size=128)
    for e, p in zip(exact, padded):
        want = torch.arange(p.num_dst_nodes) < e.num_dst_nodes
        assert torch.equal(p.real_dst, want)
        assert not p.picked[~want].any()


def test_graph_sampler_models_take_padded_blocks():
    """TrainConfig's list of the models ``sampler="graph"`` trains is the builtin models
    whose every layer takes padded blocks."""
    from graphsys.gnn.config import GRAPH_SAMPLER_MODELS
    from graphsys.plugins import GNN_MODELS

    takes = [name for name in ("sage", "gcn", "gat", "gin", "pinsage")
             if name in GNN_MODELS.names() and all(
                 getattr(c, "takes_padded", False)
                 for c in GNN(name, 8, 8, 2, num_layers=2, heads=2).convs)]
    assert tuple(takes) == GRAPH_SAMPLER_MODELS


def _data(seed=5):
    rng = np.random.default_rng(seed)
    feat = torch.from_numpy(rng.standard_normal((N, 12)).astype(np.float32))
    label = torch.from_numpy((rng.random(N) * 3).astype(np.int64))
    return feat, label


@pytest.mark.parametrize("name", ["sage", "gcn", "gat", "gin"])
def test_steps_are_the_loaders_batches(adj, name):
    """Two epochs of NodeStepGraph (no dropout; 4 batches an epoch, the last one partial)
    leave the parameters a loop over NodeLoader's batches of the same seed leaves."""
    feat, label = _data()
    ids = np.random.default_rng(6).choice(N, 900, replace=False)
    params = []
    for use_graph in (True, False):
        torch.manual_seed(0)
        model = GNN(name, 12, 16, 3, num_layers=2, dropout=0.0, heads=2)
        opt = torch.optim.Adam(model.parameters(), lr=0.01)
        if use_graph:
            steps = NodeStepGraph(model, opt, NeighborSampler(adj, [6, 4]), feat, label,
                                  batch_size=256, seed=7)
            res = [steps.epoch(ids, e) for e in range(2)]
            assert [r["steps"] for r in res] == [4, 4] and res[0]["seeds"] == 900
            assert not res[0]["captured"] and steps.steps == 8
        else:
            loader = NodeLoader(None, NeighborSampler(adj, [6, 4]), ids, batch_size=256,
                                seed=7, features=feat, labels=label, num_workers=0)
            for _ in range(2):
                for batch in loader:
                    loss = F.cross_entropy(model(batch.blocks, batch.x), batch.y)
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
        params.append([p.detach().clone() for p in model.parameters()])
    for a, b in zip(*params):
        assert torch.allclose(a, b, rtol=1e-4, atol=1e-5)


def test_epoch_reports_the_loss_and_accuracy_of_its_steps(adj):
    """One batch an epoch: the reported loss and accuracy are those of the model before
    the update, on that batch."""
    feat, label = _data()
    ids = np.arange(0, N, 10)
    torch.manual_seed(0)
    model = GNN("sage", 12, 8, 3, num_layers=1, dropout=0.0)
    opt = torch.optim.SGD(model.parameters(), lr=0.0)            # nothing moves
    steps = NodeStepGraph(model, opt, NeighborSampler(adj, [5]), feat, label, batch_size=1000)
    res = steps.epoch(ids, 0)
    gen = torch.Generator().manual_seed(derive_seed(0, 0))
    order = ids[torch.randperm(len(ids), generator=gen).numpy()]
    blocks = steps.sampler.sample_blocks(order, derive_seed(0, 0, 0))
    out = model(blocks, feat[blocks[0].src_nodes])
    y = label[blocks[-1].dst_nodes]
    assert res["loss"] == pytest.approx(float(F.cross_entropy(out, y).detach()), rel=1e-5)
    assert res["accuracy"] == pytest.approx(float((out.argmax(1) == y).float().mean()))


def _on_device(steps: NodeStepGraph) -> list[torch.Tensor]:
    opt = steps.optimizer
    return [steps.features, steps.labels, steps.sampler.table, steps.sampler.indices,
            steps._totals, steps._input, *steps.model.parameters(),
            *[t for s in opt.state.values() for t in s.values() if torch.is_tensor(t)],
            *[p.grad for p in steps.model.parameters() if p.grad is not None]]


def test_a_step_reads_nothing_back(adj):
    """An eager step (what the graph records) on the emulated device: no transfer, no
    host synchronisation; its operators pinned."""
    feat, label = _data()
    torch.manual_seed(0)
    model = GNN("sage", 12, 16, 3, num_layers=2, dropout=0.0)
    steps = NodeStepGraph(model, fused_adam(model.parameters(), lr=0.01),
                          NeighborSampler(adj, [15, 10]), feat, label, batch_size=512)
    rows = torch.from_numpy(steps.batches(np.arange(N), 0))
    steps.step(rows[0])
    with DeviceWorkCounter(device_tensors=[*_on_device(steps), rows]) as c:
        steps.step(rows[1])
    assert c.transfers == 0 and c.syncs == 0, (c.records, c.sync_reasons)
    assert c.launches <= 400, c.ops.most_common(8)


def test_a_recorded_step_is_a_copy_and_a_replay(adj, monkeypatch):
    """With the graph recorded (its replay emulated: the eager step run unseen, reported as
    one launch), a step is 2 launches and an epoch one upload and one read."""
    from torch.utils._python_dispatch import _get_current_dispatch_mode_stack

    from graphsys.device import note_launch

    def replay(self):
        counters = [m for m in _get_current_dispatch_mode_stack()
                    if isinstance(m, DeviceWorkCounter)]
        for m in counters:
            m._quiet = True
        try:
            self.optimizer.zero_grad(set_to_none=True)
            self._compute(self._input)
        finally:
            for m in counters:
                m._quiet = False
        note_launch("cuda_graph")

    monkeypatch.setattr(NodeStepGraph, "_replay", replay)
    feat, label = _data()
    torch.manual_seed(0)
    model = GNN("sage", 12, 16, 3, num_layers=2, dropout=0.0)
    steps = NodeStepGraph(model, fused_adam(model.parameters(), lr=0.01),
                          NeighborSampler(adj, [15, 10]), feat, label, batch_size=512)
    steps.epoch(np.arange(N), 0)
    steps._graph = "recorded"
    rows = torch.from_numpy(steps.batches(np.arange(N), 1))
    with DeviceWorkCounter(device_tensors=[*_on_device(steps), rows]) as c:
        steps.step(rows[0])
    assert c.launches == 2 and c.ops["cuda_graph"] == 1 and not c.records and not c.syncs
    plan = steps.batches(np.arange(N), 1)      # host work (a CPU permutation, emulated
    steps.batches = lambda seeds, epoch: plan  # here as the device's: made outside)
    with DeviceWorkCounter(device_tensors=_on_device(steps)) as c:
        res = steps.epoch(np.arange(N), 1)
    assert [k for k, _ in c.records] == ["h2d", "d2h"] and c.syncs == 1, c.records
    assert c.ops["cuda_graph"] == res["steps"] == 6 and res["captured"]
    assert c.launches <= 2 * 6 + 4, c.ops


def test_refusals(adj):
    from graphsys.errors import ParameterError

    feat, label = _data()
    sage = GNN("sage", 12, 8, 3, num_layers=2)
    opt = torch.optim.Adam(sage.parameters())
    s = NeighborSampler(adj, [4, 3])
    with pytest.raises(GraphsysError, match=r"layers take padded blocks.*got GNN\('pinsage'\)"):
        NodeStepGraph(GNN("pinsage", 12, 8, 3), opt, s, feat, label, 64)
    with pytest.raises(GraphsysError, match=r"layers take padded blocks.*got Linear"):
        NodeStepGraph(torch.nn.Linear(2, 2), opt, s, feat, label, 64)
    with pytest.raises(GraphsysError, match="2-layer model given a sampler of 1 fanouts"):
        NodeStepGraph(sage, opt, NeighborSampler(adj, [4]), feat, label, 64)
    with pytest.raises(GraphsysError, match="fanouts of fixed size"):
        NodeStepGraph(sage, opt, NeighborSampler(adj, [-1, 3]), feat, label, 64)
    with pytest.raises(GraphsysError, match="fanouts of fixed size"):
        NodeStepGraph(sage, opt, DeviceNeighborSampler(s, device="cpu", csr="staged"), feat,
                      label, 64)
    with pytest.raises(ParameterError, match="seed"):
        NodeStepGraph(sage, opt, s, feat, label, 64, seed=1.5)
    with pytest.raises(GraphsysError, match="cuda_graph needs the model on CUDA"):
        NodeStepGraph(sage, opt, s, feat, label, 64, cuda_graph=True)
    with pytest.raises(GraphsysError, match=r"features of shape \(10, 12\), expected \(3000, F\)"):
        NodeStepGraph(sage, opt, s, feat[:10], label, 64)
    with pytest.raises(GraphsysError, match="labels must be integers"):
        NodeStepGraph(sage, opt, s, feat, label.float(), 64)
    steps = NodeStepGraph(sage, opt, s, feat, torch.where(torch.arange(N) == 5, 3, label), 64)
    with pytest.raises(GraphsysError,
                       match=r"seed 5 has label 3, outside the model's classes 0\.\.2"):
        steps.epoch([1, 5, 7], 0)
    with pytest.raises(GraphsysError, match="seed ids must be unique"):
        steps.epoch([1, 1, 7], 0)
    with pytest.raises(GraphsysError, match="seed id 3000 is outside the graph"):
        steps.epoch([1, 3000], 0)
    dev = DeviceNeighborSampler(s, device="cpu")
    with pytest.raises(GraphsysError, match="size 2: a padded batch holds its 3 seeds"):
        dev.padded_blocks([1, 2, 3], size=2)
    with pytest.raises(GraphsysError, match="seed ids must be unique within a batch"):
        dev.padded_blocks([1, 2, 2])
    with pytest.raises(GraphsysError, match="padded blocks need fanouts of fixed size"):
        DeviceNeighborSampler(adj, [-1], device="cpu").padded_blocks([1])
    block = dev.padded_blocks([1, 2])[1]
    with pytest.raises(GraphsysError, match="PinSageConv aggregates a Block; padded blocks"):
        PinSageConv(12, 8, 4)(torch.zeros(block.num_src_nodes, 12), block)


def test_train_with_the_graph_sampler(tmp_path):
    """``TrainConfig(sampler="graph")``: without dropout, the epochs' losses and the kept
    model's metrics of the device sampler's run (same batches, same model); a resumed run
    continues as one."""
    from graphsys.gnn import TrainConfig, train

    from .conftest import write_sbm

    g = write_sbm(tmp_path / "sbm")
    base = dict(model="sage", fanouts=[4, 3], hidden=8, batch_size=16, seed=2, dropout=0.0)
    a = train(g, TrainConfig(**base, epochs=2, sampler="device"))
    b = train(g, TrainConfig(**base, epochs=2, sampler="graph"))
    assert np.allclose([h["loss"] for h in a.history], [h["loss"] for h in b.history],
                       rtol=1e-4)
    assert [h["train_accuracy"] for h in a.history] == pytest.approx(
        [h["train_accuracy"] for h in b.history])
    assert b.metrics["test_accuracy"] == pytest.approx(a.metrics["test_accuracy"], abs=0.02)
    run = tmp_path / "run"
    train(g, TrainConfig(**base, epochs=1, sampler="graph"), out=run)
    c = train(g, TrainConfig(**base, epochs=2, sampler="graph"), out=run)
    assert [h["epoch"] for h in c.history] == [1, 2]
    assert np.allclose([h["loss"] for h in c.history], [h["loss"] for h in b.history],
                       rtol=1e-5)


@pytest.mark.parametrize("model", ["gcn", "gat", "gin"])
def test_train_other_models_with_the_graph_sampler(tmp_path, model):
    """The other models that take padded blocks train as with the device sampler."""
    from graphsys.gnn import TrainConfig, train

    from .conftest import write_sbm

    g = write_sbm(tmp_path / "sbm")
    base = dict(model=model, fanouts=[4, 3], hidden=8, batch_size=16, seed=2, dropout=0.0,
                epochs=2, **({"heads": 2} if model == "gat" else {}))
    a = train(g, TrainConfig(**base, sampler="device"))
    b = train(g, TrainConfig(**base, sampler="graph"))
    assert np.allclose([h["loss"] for h in a.history], [h["loss"] for h in b.history],
                       rtol=1e-4)


def test_train_refuses_what_the_graph_sampler_cannot_record(tmp_path):
    from graphsys.errors import ParameterError
    from graphsys.gnn import TrainConfig, train

    from .conftest import write_sbm

    with pytest.raises(ParameterError, match="'graph' trains the builtin models sage, gcn, "
                                             "gat, gin .* not 'pinsage'"):
        TrainConfig(model="pinsage", sampler="graph")
    for fanouts in ([-1, 3], None):   # None: every neighbour in the node task
        with pytest.raises(ParameterError, match=r"'graph' needs a fixed number of neighbours "
                                                 r"a layer: give fanouts such as \[10, 5\]"):
            TrainConfig(model="sage", fanouts=fanouts, sampler="graph")
    g = write_sbm(tmp_path / "sbm")
    for option in ({"num_workers": 4}, {"prefetch": 4}):   # no loader threads to use them
        with pytest.raises(ParameterError, match=f"{next(iter(option))}.*with sampler 'graph'"):
            train(g, TrainConfig(model="sage", fanouts=[4, 3], epochs=1, sampler="graph",
                                 **option))
    with pytest.raises(GraphsysError, match="sampler 'graph' records the builtin model's step "
                                            r"on stored features .* a model of one's own"):
        train(g, TrainConfig(fanouts=[4, 3], epochs=1, sampler="graph"),
              model=torch.nn.Linear(2, 2))


def test_graph_sampler_refuses_a_loss_of_ones_own(tmp_path):
    """The recorded step's loss is the cross-entropy: a loss given with ``sampler="graph"``
    is refused in one line, where it was dropped unread."""
    from graphsys.gnn import TrainConfig, train

    from .conftest import write_sbm

    g = write_sbm(tmp_path / "sbm")
    with pytest.raises(GraphsysError, match="this run has a loss of one's own \\(use sampler "
                                            "'device'\\)"):
        train(g, TrainConfig(fanouts=[4, 3], epochs=1, sampler="graph"),
              loss=torch.nn.functional.cross_entropy)


def test_auto_chooses_the_step_graph_where_a_cuda_run_allows_it():
    """``sampler="auto"``: the step graph on CUDA for the four models with fixed fanouts
    and no reason against it; the device sampler for any other CUDA run; the CPU sampler
    off CUDA; a sampler chosen is kept."""
    from graphsys.gnn import TrainConfig
    from graphsys.gnn.config import GRAPH_SAMPLER_MODELS
    from graphsys.gnn.node_task import train_sampler

    cuda, cpu = torch.device("cuda"), torch.device("cpu")
    for model in GRAPH_SAMPLER_MODELS:
        assert train_sampler(TrainConfig(model=model, fanouts=[5, 5]), cuda, None) == "graph"
        assert train_sampler(TrainConfig(model=model, fanouts=[5, 5]), cpu, None) == "cpu"
    for cfg, why in ((dict(fanouts=[5, -1]), None), (dict(fanouts=None), None),
                     (dict(model="pinsage", fanouts=[5, 5]), None),
                     (dict(fanouts=[5, 5], num_workers=0), None),
                     (dict(fanouts=[5, 5], prefetch=4), None),
                     (dict(fanouts=[5, 5]), "a data-parallel run")):
        assert train_sampler(TrainConfig(**cfg), cuda, why) == "device", cfg
    for chosen in ("cpu", "device", "graph"):
        assert train_sampler(TrainConfig(fanouts=[5, 5], sampler=chosen), cpu, None) == chosen


def test_the_reasons_a_run_is_not_recorded(tmp_path, monkeypatch):
    """What keeps ``auto`` off the step graph, one reason each: a loss of one's own, a model
    of one's own, learned embeddings, more than one process, tables beyond the device's
    free memory; a run without one reports ``train_sampler`` as it trained."""
    from graphsys.gnn import TrainConfig, train
    from graphsys.gnn import step_graph as sg
    from graphsys.gnn.loop import Ranks
    from graphsys.gnn.node_task import NodeTask
    from graphsys.storage.graph import open_graph

    from .conftest import write_sbm

    g = open_graph(write_sbm(tmp_path / "sbm"))
    cfg, cpu = TrainConfig(fanouts=[4, 3], epochs=1), torch.device("cpu")
    task = NodeTask(g, cfg, Ranks(False, cpu), cpu)
    assert task._unrecordable(False) is None and task.train_sampler == "cpu"
    assert task._unrecordable(True) == "a loss of one's own"
    own = NodeTask(g, cfg, Ranks(False, cpu), cpu, model=torch.nn.Linear(8, 4))
    assert own._unrecordable(False) == "a model of one's own"
    from graphsys.gnn import GNN

    pinsage = NodeTask(g, cfg, Ranks(False, cpu), cpu, model=GNN("pinsage", 8, 8, 4))
    assert pinsage._unrecordable(False) == "a model whose layers take no padded blocks " \
                                           "('pinsage')"
    task.cfg = TrainConfig(fanouts=[4, 3], inputs="adjs")
    assert task._unrecordable(False) == "a model of one's own"
    task.cfg, task.ranks.world_size = cfg, 2
    assert task._unrecordable(False) == "a data-parallel run"
    task.ranks.world_size = 1
    x, task.data["x"] = task.data["x"], None
    assert task._unrecordable(False) == "learned node embeddings (no stored features)"
    task.data["x"] = x
    monkeypatch.setattr(sg.torch.cuda, "mem_get_info", lambda device: (1000, 1 << 40))
    task.device = torch.device("cuda")
    assert task._unrecordable(False) == "features and labels beyond 50% of cuda's free memory"
    task.cfg = TrainConfig(fanouts=[4, 3], sampler="graph")  # chosen: all of it
    assert task._unrecordable(False) == "features and labels beyond 100% of cuda's free " \
                                        "memory"
    need = sg.table_bytes(tuple(task.data["x"].shape), task.data["num_nodes"])
    monkeypatch.setattr(sg.torch.cuda, "mem_get_info", lambda device: (need + 8, 1 << 40))
    assert task._unrecordable(False) is None            # all of it, chosen
    task.cfg = cfg                                      # auto: half
    assert task._unrecordable(False) == "features and labels beyond 50% of cuda's free memory"
    assert train(g, TrainConfig(full_graph=True, epochs=1)).extra["train_sampler"] is None


@pytest.mark.device
def test_gnn_train_defaults_to_the_step_graph_on_cuda(tmp_path, device):
    """``gnn.train`` on the test device: on CUDA the default trains with the step graph,
    whose losses (no dropout) are the device sampler's; elsewhere the CPU sampler."""
    from graphsys.gnn import TrainConfig, train

    from .conftest import write_sbm

    g = write_sbm(tmp_path / "sbm")
    base = dict(model="sage", fanouts=[4, 3], hidden=8, batch_size=16, seed=2, dropout=0.0,
                epochs=2)
    auto = train(g, TrainConfig(**base), device=device)
    on_cuda = torch.device(device).type == "cuda"
    assert auto.extra["train_sampler"] == ("graph" if on_cuda else "cpu")
    ref = train(g, TrainConfig(**base, sampler="device" if on_cuda else "cpu"), device=device)
    assert np.allclose([h["loss"] for h in auto.history], [h["loss"] for h in ref.history],
                       rtol=1e-4)


class _FakeStream:
    def wait_stream(self, other):
        pass


def _fake_cuda(monkeypatch, capture):
    """CUDA's stream calls as no-ops and NodeStepGraph's recording as ``capture(steps)``:
    the control flow of a CUDA run on the CPU."""
    import contextlib

    monkeypatch.setattr(torch.cuda, "Stream", lambda device=None: _FakeStream())
    monkeypatch.setattr(torch.cuda, "current_stream", lambda device=None: _FakeStream())
    monkeypatch.setattr(torch.cuda, "stream", lambda s: contextlib.nullcontext())
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: None)
    monkeypatch.setattr(NodeStepGraph, "_capture", capture)


def _graphed_pair(adj, **kw):
    """Two NodeStepGraphs of the same model and data: one run as on CUDA, one eager."""
    feat, label = _data()
    out = []
    for _ in range(2):
        torch.manual_seed(0)
        model = GNN("sage", 12, 16, 3, num_layers=2, dropout=0.0)
        out.append(NodeStepGraph(model, torch.optim.Adam(model.parameters(), lr=0.01),
                                 NeighborSampler(adj, [6, 4]), feat, label, batch_size=256,
                                 **kw))
    out[0].cuda_graph = True                # as a CUDA run (the device is the CPU here)
    return out


def _same_params(a: NodeStepGraph, b: NodeStepGraph) -> bool:
    return all(torch.allclose(p, q, rtol=1e-5, atol=1e-6)
               for p, q in zip(a.model.parameters(), b.model.parameters()))


def test_recorded_steps_warm_up_record_once_and_replay(adj, monkeypatch):
    """As on CUDA: three eager steps, then one recording (not run) and a replay a step
    from then on, the recorded batch included: the parameters of the eager run. A batch
    of another size (a smaller seed set) and :meth:`reset` warm up and record again."""
    log = []

    class Graph:
        def __init__(self, steps):
            self.steps = steps

        def replay(self):
            log.append("replay")
            self.steps.optimizer.zero_grad(set_to_none=True)
            self.steps._compute(self.steps._input)

    def capture(self):
        log.append("record")
        groups = self.optimizer.param_groups
        assert all(g["capturable"] for g in groups)     # as recorded on CUDA; the CPU
        for g in groups:                                # steps without it
            g["capturable"] = False
        return Graph(self)

    _fake_cuda(monkeypatch, capture)
    graphed, eager = _graphed_pair(adj)
    ids = np.arange(0, N, 2)                     # 1500 seeds: 6 batches of 256
    for e in range(2):
        for s in (graphed, eager):
            s.epoch(ids, e)
    assert log == ["record"] + ["replay"] * 9 and graphed.captured
    assert _same_params(graphed, eager)
    log.clear()
    graphed.epoch(ids[:200], 2)                 # one batch of 200 seeds: warm-up again
    eager.epoch(ids[:200], 2)
    assert log == [] and not graphed.captured
    graphed.reset()
    for e in (3, 4):
        graphed.epoch(ids, e)
        eager.epoch(ids, e)
    assert log == ["record"] + ["replay"] * 9
    assert _same_params(graphed, eager)


def test_a_recording_that_fails_warns_once_and_steps_eagerly(adj, monkeypatch):
    def capture(self):
        raise RuntimeError("operation not permitted when stream is capturing\nmore")

    _fake_cuda(monkeypatch, capture)
    graphed, eager = _graphed_pair(adj)
    ids = np.arange(0, N, 2)
    with pytest.warns(RuntimeWarning, match=r"recording the step as a CUDA graph failed "
                                            r"\(operation not permitted when stream is "
                                            r"capturing\); its steps run eagerly") as caught:
        for e in range(2):
            res = graphed.epoch(ids, e)
            eager.epoch(ids, e)
    assert len(caught) == 1 and not res["captured"] and not graphed.cuda_graph
    assert not graphed.optimizer.param_groups[0]["capturable"]     # as before the attempt
    assert _same_params(graphed, eager)


def test_padded_blocks_on_the_device(adj, device):
    """The test device's padded blocks are the CPU's."""
    seeds = np.arange(0, 900, 5)
    want = DeviceNeighborSampler(adj, [6, 4], device="cpu").padded_blocks(seeds, 3, size=256)
    got = DeviceNeighborSampler(adj, [6, 4], device=device).padded_blocks(seeds, 3, size=256)
    assert all(g.device.type == torch.device(device).type for g in got)
    assert all(torch.equal(a.src_nodes, b.src_nodes.cpu())
               and torch.equal(a.neighbours, b.neighbours.cpu())
               and torch.allclose(a.weights, b.weights.cpu()) for a, b in zip(want, got))


@pytest.mark.parametrize("name", ["sage", "gat"])
def test_recorded_steps_train_as_eager_steps(adj, device, name):
    """On the test device, the default steps (on CUDA: warmed up, recorded once as a CUDA
    graph and replayed) leave the parameters the same steps run eagerly leave."""
    feat, label = _data()
    ids = np.arange(0, N, 2)
    runs = []
    for graph in (None, False):
        torch.manual_seed(0)
        model = GNN(name, 12, 16, 3, num_layers=2, dropout=0.0, heads=2).to(device)
        steps = NodeStepGraph(model, fused_adam(model.parameters(), lr=0.01),
                              DeviceNeighborSampler(adj, [6, 4], device=device), feat, label,
                              batch_size=256, cuda_graph=graph)
        res = [steps.epoch(ids, e) for e in range(3)]
        runs.append((steps, res))
    (graphed, res_g), (eager, res_e) = runs
    assert graphed.captured == (torch.device(device).type == "cuda")
    assert not eager.captured and res_g[-1]["seeds"] == len(ids)
    for p, q in zip(graphed.model.parameters(), eager.model.parameters()):
        assert torch.allclose(p.cpu(), q.cpu(), rtol=1e-4, atol=1e-5)
    assert [r["loss"] for r in res_g] == pytest.approx([r["loss"] for r in res_e], rel=1e-4)
