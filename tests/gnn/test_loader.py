"""Prefetch loader: order, determinism with several workers, bounded read-ahead."""

from __future__ import annotations

import threading

import pytest
import torch

from graphsys.errors import GraphsysError
from graphsys.gnn.checkpoint import load_checkpoint, save_checkpoint
from graphsys.gnn.loader import PrefetchLoader
from graphsys.sampling import MiniBatch, NeighborSampler, from_coo
from graphsys.sampling._util import derive_seed


def _sampler():
    g = torch.Generator().manual_seed(0)
    s = torch.randint(0, 200, (2000,), generator=g)
    d = torch.randint(0, 200, (2000,), generator=g)
    adj = from_coo(torch.cat([s, d]).numpy(), torch.cat([d, s]).numpy(), 200, 200)
    return NeighborSampler(adj, [5, 3])


def _batches(num_workers):
    sampler = _sampler()

    def make(i):
        seeds = torch.arange(i * 20, i * 20 + 20)
        return MiniBatch(seeds, sampler.sample_blocks(seeds, derive_seed(9, i), parallel=False))

    return list(PrefetchLoader(10, make, num_workers=num_workers, prefetch=3))


def test_same_batches_with_any_number_of_workers():
    ref = _batches(0)
    for workers in (1, 3):
        got = _batches(workers)
        assert len(got) == len(ref) == 10
        for a, b in zip(ref, got):
            assert torch.equal(a.seeds, b.seeds)
            for x, y in zip(a.blocks, b.blocks):
                assert torch.equal(x.src_nodes, y.src_nodes)
                assert torch.equal(x.edge_src, y.edge_src)
                assert torch.equal(x.edge_dst, y.edge_dst)


def test_prefetch_is_bounded():
    made, consumed = [], []
    lock = threading.Lock()

    def make(i):
        with lock:
            made.append(i)
            assert len(made) - len(consumed) <= 3      # prefetch 2 + the one being handed over
        return MiniBatch(torch.tensor([i]), [])

    for b in PrefetchLoader(8, make, num_workers=2, prefetch=2):
        consumed.append(int(b.seeds[0]))
    assert consumed == list(range(8))


def test_bad_loader_options():
    with pytest.raises(GraphsysError):
        PrefetchLoader(3, lambda i: None, prefetch=0)


def test_checkpoint_roundtrip_without_pickle(tmp_path):
    state = {"a.weight": torch.randn(3, 4), "b": torch.arange(5)}
    config = {"model": "sage", "in_dim": 4, "hidden_dim": 8, "out_dim": 2, "num_layers": 2,
              "dropout": 0.5, "heads": 8}  # as GNN.config() writes it: checked on load
    save_checkpoint(tmp_path / "ck", state, config, {"note": 1})
    got, cfg, meta = load_checkpoint(tmp_path / "ck")
    assert cfg == config and meta == {"note": 1}
    for k in state:
        assert torch.equal(got[k], state[k])
    # files are plain .npy + JSON: no pickle opcodes in any file
    for f in (tmp_path / "ck").rglob("*"):
        if f.is_file():
            assert b"\x80\x04\x95" not in f.read_bytes()[:16]
    with pytest.raises(GraphsysError, match="not a GNN checkpoint"):
        load_checkpoint(tmp_path)
