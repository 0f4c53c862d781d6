"""Full-graph training: the blocks are the whole graph, a GCN layer on them is the paper's
dense formula, and the trainer takes one step per epoch."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from graphsys.errors import ParameterError
from graphsys.gnn import TrainConfig, train
from graphsys.gnn.conv.gcn import GCNConv
from graphsys.gnn.full_graph import full_graph_blocks
from graphsys.sampling.adjacency import from_coo

from .conftest import sbm_graph


def test_gcn_on_the_full_graph_block_is_the_dense_formula():
    rng = np.random.default_rng(3)
    n = 30
    src, dst = rng.integers(0, n, 120), rng.integers(0, n, 120)
    keep = src != dst
    src, dst = np.concatenate([src[keep], dst[keep]]), np.concatenate([dst[keep], src[keep]])
    adj = from_coo(dst, src, n, n)       # row v lists the in-neighbours u of v
    dense = np.zeros((n, n))
    rows = np.repeat(np.arange(n), np.diff(adj.indptr))
    dense[rows, adj.indices] = 1.0      # A[v, u] = 1, parallel edges merged
    a_hat = dense + np.eye(n)
    d = a_hat.sum(1)
    norm = a_hat / np.sqrt(np.outer(d, d))
    x = torch.from_numpy(rng.standard_normal((n, 5)).astype(np.float32))
    conv = GCNConv(5, 4)
    blocks = full_graph_blocks(adj, 2)
    assert blocks[0] is blocks[1] and blocks[0].num_dst_nodes == n
    got = conv(x, blocks[0]).detach().numpy()
    want = norm @ conv.lin(x).detach().numpy() + conv.bias.detach().numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_full_graph_training_learns_the_blocks(tmp_path, device, deterministic):
    g = sbm_graph(tmp_path)
    cfg = TrainConfig(model="gcn", hidden=16, epochs=100, patience=100, seed=0,
                      full_graph=True)
    res = train(g, cfg, device=device)
    # features alone are right about half the time with noise 2; the graph makes it easy
    assert res.metrics["test_accuracy"] >= 0.85, res.metrics
    assert res.epochs == 100 and len(res.history) == 100
    assert train(g, cfg, device=device).metrics == res.metrics


@pytest.mark.parametrize("kwargs, message", [
    ({"model": "pinsage"}, "^full_graph needs full neighbourhoods"),
    ({"fanouts": [10, -1]}, r"^full_graph needs every neighbour in every layer .*\[10, -1\]"),
    ({"task": "link"}, "^full_graph applies to the node task only"),
])
def test_full_graph_refuses_what_it_cannot_do(kwargs, message):
    with pytest.raises(ParameterError, match=message):
        TrainConfig(full_graph=True, **kwargs)
