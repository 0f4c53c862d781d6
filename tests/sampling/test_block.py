"""Sampled blocks feeding training on the test device: a batch sampled on the CPU and moved
to the device (pinned and copied without blocking on CUDA, as the loader does) holds the
same tensors, and a layer run on the device over it equals the same layer on the CPU.
Float sums may run in another order on the GPU: layer outputs are compared at 1e-5."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from graphsys.gnn import PinSageConv, RGCNConv, SAGEConv
from graphsys.sampling import HeteroNeighborSampler, MiniBatch, NeighborSampler, PinSAGESampler

from .conftest import random_graph_edges, write_homogeneous
from .test_hetero import typed_graph


def to_device(blocks, device):
    """The loader's transfer: pinned host memory and a non-blocking copy on CUDA."""
    cuda = device.startswith("cuda")
    return [(b.pin_memory() if cuda else b).to(device, non_blocking=cuda) for b in blocks]


def same_block(moved, host, device):
    assert moved.device.type == torch.device(device).type
    assert moved.num_src_nodes == host.num_src_nodes
    assert moved.num_dst_nodes == host.num_dst_nodes
    for name in ("src_nodes", "edge_src", "edge_dst", "edge_weight"):
        a, b = getattr(moved, name), getattr(host, name)
        assert (a is None) == (b is None), name
        if a is not None:
            assert torch.equal(a.cpu(), b), name


def layer_pair(layer, x, blocks, device):
    """The layer over the host blocks on the CPU, and a copy of it (same weights) over the
    moved blocks on the device; both outputs on the CPU."""
    on_device = copy.deepcopy(layer).to(device)
    with torch.no_grad():
        want = layer(x, blocks[0])
        got = on_device(x.to(device), to_device(blocks, device)[0])
    return got.cpu(), want


@pytest.fixture
def graph(tmp_path):
    return write_homogeneous(tmp_path, random_graph_edges(), 60)


@pytest.mark.parametrize("fanouts", [[3, 2], [-1]])
@pytest.mark.parametrize("replace", [False, True])
def test_neighbour_blocks_on_the_device(graph, device, fanouts, replace):
    seeds = torch.tensor([0, 5, 7, 11, 59])
    blocks = NeighborSampler(graph, fanouts, replace=replace).sample_blocks(seeds, rng_seed=3)
    for b in blocks:  # what the loader's worker computes before the copy
        b.dst_offsets, b.src_offsets  # noqa: B018
    moved = to_device(blocks, device)
    for m, h in zip(moved, blocks):
        same_block(m, h, device)
        for name in ("dst_offsets", "src_offsets"):  # carried over by the copy
            assert name in m.__dict__
            for a, b in zip(getattr(m, name), getattr(h, name)):
                assert (a is None and b is None) or torch.equal(a.cpu(), b)
    x = torch.randn(blocks[0].num_src_nodes, 6, generator=torch.Generator().manual_seed(1))
    got, want = layer_pair(SAGEConv(6, 4), x, blocks, device)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


def test_offsets_computed_on_the_device_equal_the_hosts(graph, device):
    blocks = NeighborSampler(graph, [4]).sample_blocks(torch.arange(60), rng_seed=2)
    moved = to_device(blocks, device)  # no offsets computed yet: the device computes them
    for m, h in zip(moved, blocks):
        for name in ("dst_offsets", "src_offsets"):
            for a, b in zip(getattr(m, name), getattr(h, name)):
                assert (a is None and b is None) or torch.equal(a.cpu(), b)


def test_pinsage_blocks_keep_their_weights_on_the_device(bipartite_graph, device):
    s = PinSAGESampler(bipartite_graph, "item", "user", 3, 0.5, 50, [3, 2])
    blocks = s.sample_blocks(torch.tensor([4, 1, 0]), 7)
    moved = to_device(blocks, device)
    for m, h in zip(moved, blocks):
        same_block(m, h, device)
        assert m.edge_weight is not None
    x = torch.randn(blocks[0].num_src_nodes, 5, generator=torch.Generator().manual_seed(2))
    got, want = layer_pair(PinSageConv(5, 8, 4), x, blocks, device)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


def test_typed_blocks_feed_rgcn_on_the_device(tmp_path, device):
    graph = typed_graph(tmp_path)
    s = HeteroNeighborSampler(graph, [3, 3])
    seeds = s.global_ids({"item": [4, 1], "user": [7, 2]})
    blocks = s.sample_blocks(torch.from_numpy(seeds), 5)
    moved = to_device(blocks, device)
    for m, h in zip(moved, blocks):
        same_block(m, h, device)
        assert torch.equal(m.edge_type.cpu(), h.edge_type)
    hetero = [b.to(device) for b in s.sample_hetero_blocks({"item": [4, 1], "user": [7]}, 2)]
    for hb in hetero:
        for t, ids in hb.src_nodes.items():
            assert ids.device.type == torch.device(device).type, t
    if device == "lazy":
        pytest.skip("torch's lazy backend puts a bmm of a transposed view on the CPU (a bug "
                    "of that backend; the layer's block-diagonal product is one)")
    x = torch.randn(blocks[0].num_src_nodes, 8, generator=torch.Generator().manual_seed(3))
    layer = RGCNConv(8, 4, 2 * len(graph.relation_types), num_blocks=2)
    got, want = layer_pair(layer, x, blocks, device)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


def test_minibatch_moves_every_tensor(graph, device):
    blocks = NeighborSampler(graph, [2, 2]).sample_blocks(torch.tensor([1, 2, 3]), 0)
    batch = MiniBatch(torch.tensor([1, 2, 3]), blocks, {"pos": torch.tensor([0, 1])},
                      torch.ones(blocks[0].num_src_nodes, 3), torch.tensor([0, 1, 0]))
    moved = (batch.pin_memory() if device.startswith("cuda") else batch).to(device)
    kind = torch.device(device).type
    tensors = [moved.seeds, moved.x, moved.y, moved.extra["pos"], moved.input_nodes]
    assert all(t.device.type == kind for t in tensors)
    assert torch.equal(moved.x.cpu(), batch.x) and torch.equal(moved.seeds.cpu(), batch.seeds)
    np.testing.assert_array_equal(moved.blocks[-1].dst_nodes.cpu().numpy(), [1, 2, 3])
