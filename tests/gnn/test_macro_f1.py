"""The node task reports macro F1 beside accuracy, equal to a direct computation on the
model's predictions of the test seeds."""

from __future__ import annotations

import numpy as np
import torch

from graphsys.gnn import NodeLoader, TrainConfig, train
from graphsys.ranking import macro_f1
from graphsys.sampling import NeighborSampler

from .conftest import sbm_graph


def test_macro_f1_matches_the_predictions(tmp_path):
    g = sbm_graph(tmp_path)
    cfg = TrainConfig(fanouts=[-1, -1], eval_fanouts=[-1], hidden=16, epochs=3, seed=0)
    result = train(g, cfg)
    m = result.metrics
    assert 0.0 <= m["test_macro_f1"] <= 1.0 and 0.0 <= m["val_macro_f1"] <= 1.0
    # the same model on the test seeds' full neighbourhoods, gathered here independently
    test = np.flatnonzero(g.node_column("test_mask"))
    labels = g.node_column("label")[test]
    loader = NodeLoader(g, NeighborSampler(g, [-1, -1]), test, batch_size=len(test),
                        shuffle=False, features=None, labels=None)
    batch = next(iter(loader))
    model, inp = result.model.eval(), result.extra["input"].eval()
    with torch.no_grad():
        out = model(batch.blocks, inp(batch.blocks[0].src_nodes))
    pred = out.argmax(1).numpy()
    assert np.array_equal(batch.seeds.numpy(), test)
    assert abs(m["test_accuracy"] - float((pred == labels).mean())) < 1e-6
    assert abs(m["test_macro_f1"] - macro_f1(pred, labels)) < 1e-6
