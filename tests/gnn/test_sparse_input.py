"""Sparse raw features (CSR) on the full-graph path: converted only when mostly zero, the
input dropout keeps the dense masks exactly, SAGE's full-neighbourhood layer gives the dense
result, and a full-graph training run is the dense run's."""

from __future__ import annotations

import importlib

import numpy as np
import pytest
import torch

from graphsys.gnn import TrainConfig, train
from graphsys.gnn.conv.sage import SAGEConv
from graphsys.gnn.dropout import dropout
from graphsys.gnn.full_graph import full_graph_blocks
from graphsys.gnn.sparse_input import SPARSE_MAX_DENSITY, as_sparse_features
from graphsys.sampling.adjacency import from_coo

from .conftest import sbm_graph


def _bag_of_words(n: int, width: int, density: float, seed: int) -> torch.Tensor:
    rng = np.random.default_rng(seed)
    return torch.from_numpy((rng.random((n, width)) < density).astype(np.float32))


def test_converted_only_when_mostly_zero():
    sparse = _bag_of_words(200, 300, SPARSE_MAX_DENSITY / 3, 0)
    csr = as_sparse_features(sparse)
    assert csr is not None and csr.layout == torch.sparse_csr
    assert torch.equal(csr.to_dense(), sparse)
    assert as_sparse_features(_bag_of_words(200, 300, 3 * SPARSE_MAX_DENSITY, 0)) is None
    assert as_sparse_features(sparse.half()) is None
    assert as_sparse_features(sparse.clone().requires_grad_()) is None
    assert as_sparse_features(sparse[0]) is None


@pytest.mark.parametrize("p", [0.5, 0.1, 1.0])
def test_sparse_dropout_keeps_the_dense_masks(p):
    x = _bag_of_words(300, 200, 0.03, 1) * 3.0
    torch.manual_seed(7)
    dense = dropout(x, p, True)
    torch.manual_seed(7)
    sparse = dropout(as_sparse_features(x), p, True)
    assert sparse.layout == torch.sparse_csr
    assert torch.equal(sparse.to_dense(), dense)
    csr = as_sparse_features(x)
    assert dropout(csr, p, False) is csr


def test_sage_full_neighbourhood_layer_on_csr_input():
    rng = np.random.default_rng(2)
    n, width = 120, 64
    src, dst = rng.integers(0, n, 600), rng.integers(0, n, 600)
    block = full_graph_blocks(from_coo(dst, src, n, n), 1)[0]
    x = _bag_of_words(n, width, 0.04, 3)
    torch.manual_seed(0)
    conv = SAGEConv(width, 16)
    assert conv.sparse_input and not SAGEConv(16, 32).sparse_input
    want = conv(x, block)
    want.square().sum().backward()
    grads = [p.grad.clone() for p in conv.parameters()]
    conv.zero_grad()
    got = conv(as_sparse_features(x), block)
    got.square().sum().backward()
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    for p, g in zip(conv.parameters(), grads):
        torch.testing.assert_close(p.grad, g, rtol=1e-4, atol=1e-5)


def test_full_graph_training_with_sparse_features_is_the_dense_run(tmp_path, monkeypatch):
    train_module = importlib.import_module("graphsys.gnn.node_task")
    g = sbm_graph(tmp_path)
    n = g.num_nodes()
    y = np.asarray(g.node_column("label"))  # by the graph's node order, as features are
    rng = np.random.default_rng(5)
    words = (rng.random((n, 400)) < 0.01) | (  # each class has its own 40 frequent words
        (np.arange(400)[None, :] // 100 == y[:, None]) & (rng.random((n, 400)) < 0.03))
    feats = words.astype(np.float32)
    seen = []
    convert = train_module.as_sparse_features
    monkeypatch.setattr(train_module, "as_sparse_features",
                        lambda x: seen.append(convert(x)) or seen[-1])
    cfg = TrainConfig(model="sage", hidden=16, epochs=30, patience=100, seed=0,
                      full_graph=True)
    sparse_run = train(g, cfg, features=feats)
    assert seen and seen[-1] is not None  # the CSR path ran
    monkeypatch.setattr(train_module, "as_sparse_features", lambda x: None)
    dense_run = train(g, cfg, features=feats)
    for key, value in sparse_run.metrics.items():  # summation order may flip a near tie
        assert abs(value - dense_run.metrics[key]) <= 0.01, (key, value, dense_run.metrics)
    np.testing.assert_allclose([h["loss"] for h in sparse_run.history],
                               [h["loss"] for h in dense_run.history], rtol=1e-4)
    assert sparse_run.metrics["test_accuracy"] > 0.5  # it learned the class words
