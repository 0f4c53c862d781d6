"""Samplers on the mapped graph: the ``sym`` index gives the same blocks as the in-RAM
symmetric build, PinSAGE walks the mapped CSR/CSC of a one-way relation with the same
result as its in-RAM build, and an in-RAM build over the memory budget is refused in one
line naming the command that builds the index."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from graphsys.errors import GraphsysError
from graphsys.sampling import NeighborSampler, PinSAGESampler, PPRHardNegativeSampler, from_coo
from graphsys.sampling.adjacency import homogeneous_adjacency, mapped_bipartite
from graphsys.storage.adjacency_index import build_index, min_build_memory
from graphsys.storage.graph import open_graph

from .conftest import write_bipartite, write_homogeneous


def _directed_graph(tmp_path, partitions=3, n=120, m=900, seed=0):
    rng = np.random.default_rng(seed)
    s, d = rng.integers(0, n, m), rng.integers(0, n, m)
    d[:20] = s[:20]  # self-loops
    edges = list(zip(s.tolist(), d.tolist()))
    edges += [(b, a) for a, b in edges[:200]] + edges[:100]  # reverse and parallel edges
    return write_homogeneous(tmp_path, edges, n, partitions=partitions)


def _same_blocks(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert torch.equal(x.src_nodes, y.src_nodes) and x.num_dst_nodes == y.num_dst_nodes
        assert torch.equal(x.edge_src, y.edge_src) and torch.equal(x.edge_dst, y.edge_dst)


@pytest.mark.parametrize("fanouts", [[10, 25], [-1, -1], [3]])
def test_neighbor_sampler_same_blocks_with_sym_index_as_in_ram(tmp_path, fanouts):
    g = _directed_graph(tmp_path)
    ram = NeighborSampler(g, fanouts)
    assert ram.adj.indices.dtype == np.int64  # built in RAM: no index yet
    build_index(g, ("sym",), memory_limit=min_build_memory(g.num_nodes()) + 2048)
    g2 = open_graph(g.path)
    mapped = NeighborSampler(g2, fanouts, memory_limit=0)  # nothing to build: no budget
    assert mapped.adj.indices.dtype == np.int32 and not mapped.adj.indices.flags.writeable
    np.testing.assert_array_equal(mapped.adj.indptr, ram.adj.indptr)
    np.testing.assert_array_equal(mapped.adj.indices, ram.adj.indices)
    seeds = torch.tensor([0, 5, 17, 42, 99, 119])
    for rng_seed in (0, 7):
        _same_blocks(mapped.sample_blocks(seeds, rng_seed), ram.sample_blocks(seeds, rng_seed))


@pytest.mark.parametrize("direction", ["in", "out"])
def test_directed_neighbor_sampler_same_blocks_with_csc_csr_index_as_in_ram(tmp_path,
                                                                          direction):
    """``symmetric=False``: the in-RAM build merged parallel edges (a node with two stored
    edges from 0 listed 0 once) while the CSC/CSR index keeps one entry per edge, so
    ``graphsys index`` changed the blocks; both now keep them (DGL's and PyG's sampling of
    a multigraph's edges)."""
    g = _directed_graph(tmp_path)
    ram = NeighborSampler(g, [-1, 4], symmetric=False, direction=direction)
    assert ram.adj.nnz == g.num_edges()
    build_index(g, ("csc", "csr"), memory_limit=min_build_memory(g.num_nodes()) + 2048)
    mapped = NeighborSampler(open_graph(g.path), [-1, 4], symmetric=False,
                             direction=direction, memory_limit=0)
    assert mapped.adj.indices.dtype == np.int32
    np.testing.assert_array_equal(mapped.adj.indptr, ram.adj.indptr)
    np.testing.assert_array_equal(mapped.adj.indices, ram.adj.indices)
    seeds = torch.tensor([0, 5, 17, 42, 99, 119])
    _same_blocks(mapped.sample_blocks(seeds, 3), ram.sample_blocks(seeds, 3))


def test_in_ram_build_over_budget_refused_naming_the_command(tmp_path):
    g = _directed_graph(tmp_path)
    with pytest.raises(GraphsysError) as err:
        NeighborSampler(g, [10, 25], memory_limit=1000)
    msg = str(err.value)
    assert "\n" not in msg and "symmetric adjacency" in msg
    assert f"graphsys index {g.path} --undirected" in msg
    with pytest.raises(GraphsysError, match=f"graphsys index {g.path} --csc"):
        homogeneous_adjacency(g, symmetric=False, direction="in", memory_limit=1000)
    # under the budget it builds, and with the index it maps whatever the budget
    NeighborSampler(g, [10, 25], memory_limit=10 << 20)
    build_index(g, ("sym", "csc"))
    g = open_graph(g.path)
    NeighborSampler(g, [10, 25], memory_limit=1000)
    NeighborSampler(g, [10, 25], symmetric=False, memory_limit=1000)


def test_pinsage_maps_csr_csc_of_one_way_relation_with_same_result(tmp_path):
    ram_graph = write_bipartite(tmp_path, partitions=2)
    with pytest.raises(GraphsysError, match=f"graphsys index {ram_graph.path} --csr --csc"):
        PinSAGESampler(ram_graph, "item", "user", 3, 0.5, 50, 3, memory_limit=100)
    pairs = (("item", "user"), ("user", "item"))  # fw from the CSC, then from the CSR
    ram = {p: PinSAGESampler(ram_graph, *p, 3, 0.5, 50, [3, 3]) for p in pairs}
    build_index(ram_graph, ("csr", "csc"))
    g = open_graph(ram_graph.path)
    for ntype, other in pairs:
        assert mapped_bipartite(g, ntype, other) is not None
        r = ram[(ntype, other)]
        m = PinSAGESampler(g, ntype, other, 3, 0.5, 50, [3, 3], memory_limit=0)
        assert m.fw.indices.dtype == np.int32  # the mapped index, over global ids
        assert m.num_nodes == r.num_nodes == g.num_nodes(ntype)
        s = torch.arange(g.num_nodes(ntype))
        for rng_seed in (1, 2, 4):
            a, b = m.sample_blocks(s, rng_seed=rng_seed), r.sample_blocks(s, rng_seed=rng_seed)
            assert a[-1].num_edges > 0
            _same_blocks(a, b)


def test_ppr_hard_negatives_refused_over_budget():
    items = np.arange(11)
    fw = from_coo(np.concatenate([items, items + 1]), np.concatenate([items, items]), 12, 11)
    bw = fw.transpose()
    PPRHardNegativeSampler(fw, bw, 3, 6, memory_limit=10 << 20)
    with pytest.raises(GraphsysError, match="PPR hard negatives over 12 nodes .*memory_limit"):
        PPRHardNegativeSampler(fw, bw, 3, 6, memory_limit=1000)
