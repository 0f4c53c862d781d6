"""Node-task evaluation on the validation and test seeds' neighbourhoods (``eval_fanouts``),
layer-wise over only the nodes they need, against the whole-graph evaluation
(``layerwise_inference``) and brute force."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from graphsys.errors import ParameterError
from graphsys.gnn import GNN, TrainConfig, layerwise_inference, train
from graphsys.gnn.conv import _base
from graphsys.gnn.inference import layerwise_inference_on
from graphsys.sampling import NeighborSampler, from_coo
from graphsys.trace import recording

from .conftest import sbm_graph


def _adj(n=60, m=200, seed=0):
    rng = np.random.default_rng(seed)
    s, d = rng.integers(0, n, m), rng.integers(0, n, m)
    return from_coo(np.r_[s, d], np.r_[d, s], n, n)


@pytest.mark.parametrize("model", ["sage", "gat", "gin", "gcn"])
def test_layerwise_on_seeds_equals_layerwise_on_all_nodes(model, device):
    """On the test device, the seeds' layer-wise outputs equal the CPU's whole-graph
    layer-wise pass and a forward over their own blocks (1e-5: GPU sums run in any order),
    and the whole-graph pass does not depend on its partitions and chunks and equals the
    full-graph forward. GCN normalised a source by its out-degree inside the block, which
    depends on the block's other destinations: 2 partitions in chunks of 7 moved its
    outputs by up to 1.4; the samplers' blocks now carry the sources' graph degrees."""
    from graphsys.gnn.full_graph import full_graph_blocks

    adj, x = _adj(), torch.randn(60, 5)
    net = GNN(model, 5, 8, 3, num_layers=3).eval()
    full = NeighborSampler(adj, [-1])
    block_fn = lambda dst, layer: full.sample_blocks(dst)[0]  # noqa: E731
    every = layerwise_inference(net, lambda ids: x[ids], 60, block_fn, [(0, 60)])
    parts = layerwise_inference(net, lambda ids: x[ids], 60, block_fn, [(0, 25), (25, 60)],
                                chunk_rows=7)
    torch.testing.assert_close(parts, every, atol=1e-5, rtol=1e-5)
    with torch.no_grad():
        torch.testing.assert_close(net(full_graph_blocks(adj, 3), x), every, atol=1e-5,
                                   rtol=1e-5)
    seeds = torch.tensor([17, 3, 42, 3 + 1, 59])
    on, xd = copy.deepcopy(net).to(device), x.to(device)
    mine = layerwise_inference_on(on, lambda ids: xd[ids.to(device)], seeds, block_fn,
                                  chunk_rows=2, device=device).cpu()
    torch.testing.assert_close(mine, every[seeds], atol=1e-5, rtol=1e-5)
    # and the brute-force forward on the seeds' own 3-hop blocks
    blocks = NeighborSampler(adj, [-1, -1, -1]).sample_blocks(seeds.numpy())
    torch.testing.assert_close(mine, net(blocks, x[blocks[0].src_nodes]), atol=1e-5,
                               rtol=1e-5)



@pytest.mark.parametrize("gather_cost", [0, 10**9])
@pytest.mark.parametrize("model,dims", [("sage", (12, 8, 3)), ("sage", (5, 16, 3)),
                                        ("gcn", (12, 4, 3))])
def test_projected_and_row_reading_layers_equal_the_plain_layers(model, dims, gather_cost,
                                                                 monkeypatch):
    """Layer-wise inference moves a layer's projections along the edges where the layer
    projects first (and, over the seeds' nodes, where that does less work: forced either
    way by the gather cost), and a layer that aggregates first reads the layer's rows in
    place of a gathered copy: the outputs equal those of the plain layers on gathered
    rows."""
    monkeypatch.setattr(_base, "GATHER_COST", gather_cost)
    adj, x = _adj(), torch.randn(60, dims[0])
    net = GNN(model, *dims, num_layers=3).eval()
    layers = range(3)
    assert any(net.projects_input(i) for i in layers)
    assert model == "gcn" or any(net.reads_rows(i) for i in layers)
    full = NeighborSampler(adj, [-1])
    block_fn = lambda dst, layer: full.sample_blocks(dst)[0]  # noqa: E731
    seeds = torch.tensor([17, 3, 42, 4, 59])
    fast = layerwise_inference_on(net, lambda ids: x[ids], seeds, block_fn, chunk_rows=4)
    every = layerwise_inference(net, lambda ids: x[ids], 60, block_fn, [(0, 30), (30, 60)],
                                chunk_rows=4)
    net.projects_input = net.reads_rows = lambda i, sizes=None: False
    plain = layerwise_inference_on(net, lambda ids: x[ids], seeds, block_fn, chunk_rows=4)
    torch.testing.assert_close(fast, plain, atol=1e-5, rtol=1e-5)
    plain_every = layerwise_inference(net, lambda ids: x[ids], 60, block_fn,
                                      [(0, 30), (30, 60)], chunk_rows=4)
    torch.testing.assert_close(every, plain_every, atol=1e-5, rtol=1e-5)


def test_row_reading_layer_refuses_mismatched_rows():
    from graphsys.errors import GraphsysError
    from graphsys.gnn import SAGEConv

    conv = SAGEConv(5, 16).eval()
    block = NeighborSampler(_adj(), [-1]).sample_blocks(np.array([1, 2]))[0]
    index = torch.arange(block.num_src_nodes)
    with pytest.raises(GraphsysError, match="expected"):
        conv.forward_rows(torch.randn(60, 4), index, block)
    with pytest.raises(GraphsysError, match="expected"):
        conv.forward_rows(torch.randn(60, 5), index[:-1], block)
    x = torch.randn(60, 5)
    torch.testing.assert_close(conv.forward_rows(x, index, block), conv(x[index], block))


def test_fixed_sample_outputs_do_not_depend_on_the_other_seeds_or_threads():
    """The final evaluation runs the test and validation seeds in one pass, on every
    thread: each seed's outputs on a fixed sample equal those of a separate serial pass."""
    from graphsys.gnn.batches import fixed_blocks
    from graphsys.sampling._util import serial_kernels

    adj, x = _adj(200, 900), torch.randn(200, 5)
    net = GNN("sage", 5, 8, 3, num_layers=2).eval()
    block_fn = fixed_blocks(NeighborSampler(adj, [3, 2]), seed=4)
    a, b = torch.arange(0, 200, 3), torch.arange(1, 200, 5)
    joint = layerwise_inference_on(net, lambda ids: x[ids], torch.cat([a, b]), block_fn,
                                   chunk_rows=16)
    with serial_kernels():
        apart = [layerwise_inference_on(net, lambda ids: x[ids], s, block_fn, chunk_rows=7)
                 for s in (a, b)]
    torch.testing.assert_close(joint, torch.cat(apart), atol=1e-6, rtol=1e-6)

class Plain(torch.nn.Module):
    """A model of one's own (no per-layer method): mean of neighbours, two layers."""

    def __init__(self, in_dim, out_dim):
        super().__init__()
        from graphsys.gnn import SAGEConv

        self.a, self.b = SAGEConv(in_dim, 16), SAGEConv(16, out_dim)

    def forward(self, blocks, x):
        return self.b(torch.relu(self.a(x, blocks[0])), blocks[1])


@pytest.mark.parametrize("own", [False, True])
def test_full_eval_fanouts_give_the_whole_graph_evaluation(tmp_path, own, device):
    g = sbm_graph(tmp_path)
    base = dict(fanouts=[4, 4], hidden=16, epochs=3, batch_size=16, seed=2, dropout=0.0)
    runs = []
    for kw in ({"eval_fanouts": [-1]}, {"layerwise_inference": True}):
        torch.manual_seed(0)
        runs.append(train(g, TrainConfig(**base, **kw), model=Plain(8, 4) if own else None,
                          device=device))
    a, b = runs
    assert a.metrics == pytest.approx(b.metrics)
    assert [h["val_accuracy"] for h in a.history] == [h["val_accuracy"] for h in b.history]
    assert [h["val_loss"] for h in a.history] == pytest.approx(
        [h["val_loss"] for h in b.history], rel=1e-5)


def test_sampled_evaluation_is_fixed_and_eval_every_skips(tmp_path, device, deterministic):
    g = sbm_graph(tmp_path)
    cfg = TrainConfig(fanouts=[3, 3], eval_fanouts=[2, 2], hidden=8, epochs=5, eval_every=2,
                      batch_size=16, seed=1)
    a, b = train(g, cfg, device=device), train(g, cfg, device=device)
    assert [h["epoch"] for h in a.history] == [2, 4, 5]
    assert a.metrics == b.metrics and a.history[-1]["val_loss"] == b.history[-1]["val_loss"]
    h = a.history[-1]
    assert 0 <= h["train_accuracy"] <= 1 and h["eval_seconds"] > 0 and h["train_seconds"] > 0


def test_evaluation_is_traced(tmp_path):
    g = sbm_graph(tmp_path)
    with recording(tmp_path / "t.json", "cpu"):
        train(g, TrainConfig(fanouts=[3, 3], hidden=8, epochs=2, batch_size=32))
    text = (tmp_path / "t.json").read_text()
    assert '"gnn.eval"' in text and '"gnn.step"' in text


@pytest.mark.parametrize("kw,param", [
    ({"eval_fanouts": [3]}, "eval_fanouts"),
    ({"eval_fanouts": [3, 0]}, "eval_fanouts"),
    ({"fanouts": [5, 5, 5], "eval_fanouts": [5, 5]}, "eval_fanouts"),
    ({"layerwise_inference": True, "eval_fanouts": [5, 5]}, "layerwise_inference"),
    ({"task": "link", "eval_fanouts": [-1]}, "eval_fanouts"),
    # these were cut ([1.5, 2.7] to [1, 2]) or raised raw TypeError / ValueError
    ({"eval_fanouts": [1.5, 2.7]}, "eval_fanouts"),
    ({"eval_fanouts": ["a", 2]}, "eval_fanouts"),
    ({"eval_fanouts": [float("nan"), 2]}, "eval_fanouts"),
    ({"eval_fanouts": 5}, "eval_fanouts"),
    ({"eval_fanouts": "5,5"}, "eval_fanouts"),
    ({"fanouts": []}, "fanouts"),
])
def test_eval_settings_are_checked(kw, param):
    with pytest.raises(ParameterError) as exc:
        TrainConfig(**kw)
    assert exc.value.parameter == param
