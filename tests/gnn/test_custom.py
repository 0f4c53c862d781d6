"""The open trainer: a user's nn.Module (PyG convs on graphsys blocks, or PyG
NeighborSampler-style ``adjs``), a user's loss and features, and --model module:Factory."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from torch import nn

from graphsys.errors import GraphsysError
from graphsys.gnn import TrainConfig, train

from .conftest import sbm_graph

pygnn = pytest.importorskip("torch_geometric.nn")


class PygSage(nn.Module):
    """Two PyG SAGEConv layers over graphsys blocks (the README example)."""

    def __init__(self, in_dim, hidden_dim, out_dim, num_layers=2, dropout=0.5):
        super().__init__()
        dims = [in_dim] + [hidden_dim] * (num_layers - 1) + [out_dim]
        self.convs = nn.ModuleList(pygnn.SAGEConv(a, b) for a, b in zip(dims, dims[1:]))
        self.dropout = dropout

    def forward(self, blocks, x):
        for i, (conv, b) in enumerate(zip(self.convs, blocks)):
            x = conv((x, x[:b.num_dst_nodes]), b.edge_index)
            if i < len(self.convs) - 1:
                x = nn.functional.dropout(x.relu(), self.dropout, self.training)
        return x


class PygSageAdjs(PygSage):
    """The same model in PyG NeighborSampler form: forward(x, adjs)."""

    def forward(self, x, adjs):
        for i, (edge_index, _, size) in enumerate(adjs):
            x = self.convs[i]((x, x[:size[1]]), edge_index)
            if i < len(self.convs) - 1:
                x = x.relu()
        return x


CFG = dict(fanouts=[5, 5], hidden=16, epochs=30, batch_size=16, patience=30, seed=1)


@pytest.mark.parametrize("model,inputs", [(PygSage, "blocks"), (PygSageAdjs, "adjs")])
def test_pyg_model_trains_on_graphsys_blocks(tmp_path, model, inputs, device):
    g = sbm_graph(tmp_path)
    res = train(g, TrainConfig(**CFG, inputs=inputs), model=model(8, 16, 4), device=device)
    assert res.metrics["test_accuracy"] >= 0.85, res.metrics
    assert res.model.__class__ is model


def test_user_loss_and_features_are_used(tmp_path, device):
    g = sbm_graph(tmp_path)
    calls = []

    def loss(logits, y):
        calls.append(logits.shape)
        return nn.functional.cross_entropy(logits, y)

    one_hot = np.eye(4, dtype=np.float32)[g.node_column("label")]    # features = the label
    res = train(g, TrainConfig(**CFG), model=PygSage(4, 16, 4), loss=loss, features=one_hot,
                device=device)
    assert calls and all(s[1] == 4 for s in calls)
    # the features are the labels: every node right, or all but one or two on CUDA, where
    # atomic sums make the training vary from run to run (0.992 seen on an H200)
    assert res.metrics["test_accuracy"] >= 0.98, res.metrics
    with pytest.raises(GraphsysError, match=r"features has shape \(3, 4\)"):
        train(g, TrainConfig(**CFG), model=PygSage(4, 16, 4), features=one_hot[:3], device=device)
    # a NaN (or a float64 beyond float32) row ended as "training diverged (lower lr?)"
    bad = one_hot.astype(np.float64)
    bad[5, 1] = 1e39
    with pytest.raises(GraphsysError, match="^features: row 5 holds NaN or infinity"):
        train(g, TrainConfig(**CFG), model=PygSage(4, 16, 4), features=bad, device=device)


def test_factory_spec_in_config_and_errors(tmp_path, monkeypatch):
    (tmp_path / "my_models.py").write_text(
        "from graphsys.gnn import GNN\n"
        "def Gin(**dims):\n    return GNN('gin', **dims)\n"
        "NotAModel = 3\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    g = sbm_graph(tmp_path)
    res = train(g, TrainConfig(**{**CFG, "model": "my_models:Gin"}))
    assert res.metrics["test_accuracy"] >= 0.85
    for spec, message in [("my_models:Nope", "has no 'Nope'"),
                          ("my_models:NotAModel", "is not callable"),
                          ("no_such_module_xyz:F", "cannot import"),
                          ("gatt", "one of gat, gcn, gin, pinsage, sage or module:Factory"),
                          ("torch.nn:Linear", r"cannot be called with in_dim, hidden_dim")]:
        with pytest.raises(GraphsysError, match=message):
            train(g, TrainConfig(**{**CFG, "model": spec}))
    sys.modules.pop("my_models", None)


def test_link_task_refuses_user_model(tmp_path):
    g = sbm_graph(tmp_path)
    with pytest.raises(GraphsysError, match="node task"):
        train(g, TrainConfig(task="link"), model=PygSage(8, 16, 4))


def test_a_user_model_with_the_wrong_number_of_classes_is_one_line(tmp_path):
    """A model returning 2 scores per node for 4 classes is refused at its first batch, in
    one line naming both shapes (not an IndexError from inside the loss)."""
    import torch

    from graphsys.errors import GraphsysError
    from graphsys.gnn import TrainConfig, train

    from .conftest import sbm_graph

    class TwoScores(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(8, 2)

        def forward(self, blocks, x):
            return self.lin(x[:blocks[-1].num_dst_nodes])

    g = sbm_graph(tmp_path)
    with pytest.raises(GraphsysError, match=r"outputs of shape \(\d+, 2\).*one score per class"):
        train(g, TrainConfig(fanouts=[5, 5], epochs=1), model=TwoScores())
