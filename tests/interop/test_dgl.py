"""DGL round trip where a working DGL imports (its wheels need torch <= 2.2: see the
``dgl`` extra); elsewhere the one-line refusal is what is tested."""

from __future__ import annotations

import sys

import numpy as np
import pytest
import torch

import graphsys
from graphsys.errors import GraphsysError
from graphsys.interop.dgl import import_dgl


def _dgl_or_reason():
    try:
        return import_dgl(), None
    except GraphsysError as exc:
        return None, str(exc)


DGL, WHY = _dgl_or_reason()


def test_to_dgl_without_dgl_is_one_line(tmp_path, monkeypatch):
    g = graphsys.from_numpy([0, 1], [1, 2], tmp_path / "g", num_nodes=3)
    monkeypatch.setitem(sys.modules, "dgl", None)            # import dgl -> ImportError
    with pytest.raises(GraphsysError, match="needs a working dgl") as info:
        graphsys.to_dgl(g)
    assert "\n" not in str(info.value)


@pytest.mark.skipif(DGL is None, reason=f"dgl does not import here: {WHY}")
def test_dgl_round_trip(tmp_path):
    dg = DGL.graph((torch.tensor([0, 1, 2, 2]), torch.tensor([1, 2, 0, 3])), num_nodes=5)
    dg.ndata["feat"] = torch.randn(5, 3)
    dg.ndata["label"] = torch.tensor([0, 1, 0, 1, 1])
    dg.edata["weight"] = torch.rand(4)
    g = graphsys.from_dgl(dg, tmp_path / "g", num_partitions=2)
    back = graphsys.to_dgl(g)
    assert back.num_nodes() == 5 and back.num_edges() == 4
    assert torch.equal(back.ndata["feat"], dg.ndata["feat"])
    s, d = back.edges()
    got = sorted(zip(s.tolist(), d.tolist(), np.round(back.edata["weight"].numpy(), 5)))
    s0, d0 = dg.edges()
    assert got == sorted(zip(s0.tolist(), d0.tolist(), np.round(dg.edata["weight"].numpy(), 5)))
