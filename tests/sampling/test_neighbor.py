"""Uniform neighbour sampler and blocks: fanouts, real neighbours, uniformity, errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy import stats

from graphsys.errors import GraphsysError, ParameterError
from graphsys.sampling import (
    NeighborSampler,
    from_coo,
    homogeneous_adjacency,
    sample_neighbors,
)
from graphsys.sampling.neighbor import parse_fanouts

from .conftest import random_graph_edges, write_homogeneous


@pytest.fixture
def graph(tmp_path):
    return write_homogeneous(tmp_path, random_graph_edges(), 60)


def _neighbour_sets(graph):
    nbrs = {v: set() for v in range(60)}
    for s, d, _, _ in graph.iter_edges():
        for a, b in zip(s.tolist(), d.tolist()):
            nbrs[a].add(b)
            nbrs[b].add(a)
    return nbrs


@pytest.mark.parametrize("replace", [False, True])
def test_fanouts_respected_and_only_real_neighbours(graph, replace):
    nbrs = _neighbour_sets(graph)
    sampler = NeighborSampler(graph, [3, 2], replace=replace)
    seeds = torch.tensor([0, 5, 7, 11, 59])
    blocks = sampler.sample_blocks(seeds, rng_seed=1)
    assert len(blocks) == 2
    assert torch.equal(blocks[-1].dst_nodes, seeds)
    assert torch.equal(blocks[0].dst_nodes, blocks[1].src_nodes)
    for block, fanout in zip(blocks, [3, 2]):
        src = block.src_nodes[block.edge_src]
        dst = block.dst_nodes[block.edge_dst]
        deg = torch.bincount(block.edge_dst, minlength=block.num_dst_nodes)
        for k, v in enumerate(block.dst_nodes.tolist()):
            real = len(nbrs[v])
            want = (fanout if real else 0) if replace else min(real, fanout)
            assert deg[k] == want
        for a, b in zip(src.tolist(), dst.tolist()):
            assert a in nbrs[b]
        if not replace:   # no neighbour twice for the same destination
            pairs = set(zip(src.tolist(), dst.tolist()))
            assert len(pairs) == block.num_edges
        assert len(set(block.src_nodes.tolist())) == block.num_src_nodes


def test_full_neighbourhood(graph):
    nbrs = _neighbour_sets(graph)
    blocks = NeighborSampler(graph, [-1]).sample_blocks(torch.arange(60))
    b = blocks[0]
    got = {v: set() for v in range(60)}
    for a, d in zip(b.src_nodes[b.edge_src].tolist(), b.dst_nodes[b.edge_dst].tolist()):
        got[d].add(a)
    assert got == nbrs


def test_without_replacement_is_uniform_over_subsets():
    # 5000 nodes, each with the same 5 neighbours, fanout 2: all 10 subsets equally likely
    n = 5000
    adj = from_coo(np.repeat(np.arange(n), 5), np.tile(np.arange(n, n + 5), n), n + 5, n + 5)
    seeds = np.arange(n, dtype=np.int64)      # every node draws its own stream
    nbr, per_seed, _ = sample_neighbors(adj, seeds, 2, rng_seed=4)
    assert (per_seed == 2).all()
    counts = {}
    for pair in nbr.reshape(-1, 2).tolist():
        key = tuple(sorted(pair))
        assert len(set(key)) == 2
        counts[key] = counts.get(key, 0) + 1
    assert len(counts) == 10
    assert stats.chisquare(list(counts.values())).pvalue > 1e-4


def test_deterministic_under_seed(graph):
    s = NeighborSampler(graph, [4, 4])
    seeds = torch.tensor([3, 1, 4, 15, 9])
    a = s.sample_blocks(seeds, 7)
    b = s.sample_blocks(seeds, 7, parallel=False)
    for x, y in zip(a, b):
        assert torch.equal(x.src_nodes, y.src_nodes)
        assert torch.equal(x.edge_src, y.edge_src)
        assert torch.equal(x.edge_dst, y.edge_dst)


@pytest.mark.parametrize("replace", [False, True])
def test_a_node_samples_the_same_whatever_its_batch(graph, replace):
    # streams keyed by node id: a node's picks do not depend on the other seeds, their
    # order, or the seed's position (what lets data-parallel ranks split a batch)
    s = NeighborSampler(graph, [3, 3], replace=replace)
    whole = s.sample_blocks(torch.tensor([3, 1, 4, 15, 9, 26]), 7)
    for part in ([9, 4], [26], [15, 3, 1]):
        split = s.sample_blocks(torch.tensor(part), 7, parallel=False)
        for bw, bp in zip(whole, split):
            for k, v in enumerate(bp.dst_nodes.tolist()):
                kw = bw.dst_nodes.tolist().index(v)   # the whole batch samples v too
                assert (bw.src_nodes[bw.edge_src[bw.edge_dst == kw]].tolist()
                        == bp.src_nodes[bp.edge_src[bp.edge_dst == k]].tolist())


def test_block_to_device_and_dgl(graph):
    b = NeighborSampler(graph, [2]).sample_blocks(torch.tensor([0, 1]))[0]
    moved = b.to("cpu")
    assert torch.equal(moved.edge_src, b.edge_src) and moved.device.type == "cpu"
    try:
        import dgl  # noqa: F401
    except ImportError:
        with pytest.raises(GraphsysError, match="DGL"):
            b.to_dgl()
    else:
        assert b.to_dgl().num_edges() == b.num_edges


def test_directed_view(tmp_path):
    g = write_homogeneous(tmp_path, [(0, 1), (2, 1), (1, 3)], 4, name="d")
    adj = homogeneous_adjacency(g, symmetric=False, direction="in")
    assert adj.indices[adj.indptr[1]:adj.indptr[2]].tolist() == [0, 2]
    assert adj.indices[adj.indptr[3]:adj.indptr[4]].tolist() == [1]


@pytest.mark.parametrize("text", ["", "10,x", "10,,25", "0", "-2", "1.5", [1.5], [True], ["a"],
                                  None, 5, [2**63]])
def test_malformed_fanouts(text):
    with pytest.raises(GraphsysError, match="fanouts"):
        parse_fanouts(text)


def test_bad_seeds(graph):
    s = NeighborSampler(graph, [2])
    with pytest.raises(GraphsysError, match="outside the graph"):
        s.sample_blocks(torch.tensor([60]))
    with pytest.raises(GraphsysError, match="unique"):
        s.sample_blocks(torch.tensor([1, 1]))
    assert parse_fanouts("10, 25") == [10, 25]
    assert parse_fanouts(np.array([10, -1])) == parse_fanouts(torch.tensor([10, -1])) == [10, -1]
    with pytest.raises(GraphsysError, match=r"seed id 9223372036854775809 is outside"):
        s.sample_blocks(np.array([1, 2**63 + 1], np.uint64))    # named as given, not wrapped
    with pytest.raises(GraphsysError, match="must be integers, got a bool"):
        s.sample_blocks([True, 2])  # np.asarray read it as [1, 2]: seed node 1


@pytest.mark.parametrize("bad", [[99], [-5], [0.5]])
def test_sample_neighbors_refuses_seeds_outside_the_rows(bad):
    """The one-layer function reads rows unchecked in its kernels: a seed outside the
    adjacency (or not an integer) is a one-line error, not a crash."""
    adj = from_coo(np.array([0, 0, 0, 1]), np.array([1, 2, 3, 0]), 4, 4)
    with pytest.raises(GraphsysError, match="outside the graph|must be integers"):
        sample_neighbors(adj, np.array(bad), 2)


@pytest.mark.parametrize("fanout", [-2, float("nan"), 1.5, 1.0, True])
def test_sample_neighbors_refuses_a_fanout_that_is_no_count(fanout):
    """The one-layer function passed its fanout to the kernels unchecked: -2 and NaN drew
    every neighbour (as -1), and 1.5 or True compiled another kernel that drew 1."""
    adj = from_coo(np.array([0, 0, 0, 1]), np.array([1, 2, 3, 0]), 4, 4)
    with pytest.raises(ParameterError, match="^fanout must be a positive integer"):
        sample_neighbors(adj, np.array([0, 1]), fanout)  # named the list's "fanouts"
    assert sample_neighbors(adj, np.array([0, 1]), 0)[1].tolist() == [0, 0]  # no picks


@pytest.mark.parametrize("rng_seed", [-1, 1.5, float("nan"), 2**63, 2**64])
def test_sample_neighbors_refuses_a_seed_outside_the_kernels(rng_seed):
    """A negative or float ``rng_seed`` reached the kernels (1.5 drew seed 1's picks) and
    2**63 gave numba's OverflowError traceback; each is now one line."""
    adj = from_coo(np.array([0, 0, 0, 1]), np.array([1, 2, 3, 0]), 4, 4)
    with pytest.raises(ParameterError, match="rng_seed"):
        sample_neighbors(adj, np.array([0, 1]), 2, rng_seed=rng_seed)


def test_source_degrees_and_block_src_degree_against_brute_force(monkeypatch):
    """``Adjacency.source_degrees``: how many other rows list each node (its out-degree
    without self-loops), read in chunks; a full layer's block (fanout -1) carries it for
    its sources, a sampled layer's carries none (GCN keeps its in-block degrees)."""
    import graphsys.sampling.adjacency as A

    rng = np.random.default_rng(5)
    for trial in range(30):
        n, m = int(rng.integers(1, 15)), int(rng.integers(0, 50))
        adj = from_coo(rng.integers(0, n, m), rng.integers(0, n, m), n, n,
                       merge=bool(trial % 2))
        monkeypatch.setattr(A, "DEGREE_CHUNK", int(rng.integers(1, 8)))
        want = np.zeros(n, np.float32)
        for v in range(n):
            for u in adj.indices[adj.indptr[v]:adj.indptr[v + 1]]:
                want[u] += u != v
        np.testing.assert_array_equal(adj.source_degrees, want)
        full, sampled = NeighborSampler(adj, [-1, 2]).sample_blocks(np.arange(n), trial)
        np.testing.assert_array_equal(full.src_degree.numpy(), want[full.src_nodes.numpy()])
        assert sampled.src_degree is None


def test_gcn_on_a_sampled_block_uses_the_block_degrees():
    """A sampled layer (fixed fanout) is normalised as PyG's ``gcn_norm`` on the sampled
    subgraph and DGL's ``GraphConv`` on a block: by its in-block degrees, on the CPU and
    the device sampler alike; a full layer (fanout -1) by the sources' graph degrees, so
    it equals the full-graph forward on its destinations."""
    import torch

    from graphsys.gnn import GCNConv
    from graphsys.gnn.full_graph import full_graph_blocks
    from graphsys.sampling.device import DeviceNeighborSampler

    rng = np.random.default_rng(8)
    n = 40
    s, d = rng.integers(0, n, 160), rng.integers(0, n, 160)
    s, d = s[s != d], d[s != d]                         # no self-loops (they weigh 0)
    adj = from_coo(np.r_[s, d], np.r_[d, s], n, n)
    torch.manual_seed(0)
    conv, x = GCNConv(4, 3), torch.randn(n, 4)
    seeds = np.array([3, 17, 29])
    for sampler in (NeighborSampler(adj, [2]),
                    DeviceNeighborSampler(adj, [2], device="cpu")):
        (block,) = sampler.sample_blocks(seeds, 1)
        assert block.src_degree is None and block.num_edges < adj.degrees()[seeds].sum()
        src, dst = block.src_nodes[block.edge_src], block.dst_nodes[block.edge_dst]
        # gcn_norm on the sampled subgraph, written out: edges u -> v of the block and a
        # self-loop per destination, degrees counted in that subgraph
        nodes = block.src_nodes.tolist()
        deg = {u: 0.0 for u in nodes}
        deg_in = {v: 1.0 for v in seeds.tolist()}
        for u, v in zip(src.tolist(), dst.tolist()):
            deg[u] += 1.0
            deg_in[v] += 1.0
        for v in seeds.tolist():
            deg[v] += 1.0
        h = conv.lin(x)
        want = torch.stack([
            sum(h[u] / float(np.sqrt(deg[u] * deg_in[v]))
                for u in src[dst == v].tolist() + [v]) for v in seeds.tolist()])
        if conv.bias is not None:
            want = want + conv.bias
        with torch.no_grad():
            torch.testing.assert_close(conv(x[block.src_nodes], block), want)
    (block,) = NeighborSampler(adj, [-1]).sample_blocks(seeds, 1)
    with torch.no_grad():
        torch.testing.assert_close(conv(x[block.src_nodes], block),
                                   conv(x, full_graph_blocks(adj, 1)[0])[seeds])


def test_graph_options_with_a_ready_adjacency_are_refused():
    """``edge_set``, ``symmetric``, ``direction`` and ``memory_limit`` choose a stored
    graph's adjacency; with an Adjacency (or, for the device sampler, a NeighborSampler)
    they were silently ignored: ``symmetric=False`` sampled the rows as given."""
    from graphsys.sampling.device import DeviceNeighborSampler

    adj = from_coo([0, 1], [1, 2], 3, 3)
    for kw in ({"symmetric": False}, {"direction": "out"}, {"edge_set": "x"},
               {"memory_limit": 10}):
        with pytest.raises(GraphsysError, match=f"^{next(iter(kw))} selects the adjacency"):
            NeighborSampler(adj, [2], **kw)
        with pytest.raises(GraphsysError, match=f"^{next(iter(kw))} selects the adjacency"):
            DeviceNeighborSampler(NeighborSampler(adj, [2]), device="cpu", **kw)
    assert NeighborSampler(adj, [2], entity_type="node").entity_type == "node"


def test_a_layer_too_large_for_memory_is_refused_in_one_line():
    # a fanout of 10**15 with replacement failed in NumPy's allocator (and 2**62 on three
    # seeds wrapped the int64 total): now one line naming the fanout and the RAM
    from graphsys.sampling.adjacency import from_coo
    adj = from_coo(np.array([0, 1, 1]), np.array([1, 0, 2]), 3, 3)
    for fanout in (10**15, 2**62):
        with pytest.raises(GraphsysError, match=f"fanout {fanout} draws .* of available RAM"):
            sample_neighbors(adj, np.array([0, 1, 2]), fanout, replace=True)


def test_replace_and_symmetric_are_flags(graph):
    """``replace="no"`` sampled with replacement (and reached the numba kernels as a
    string in sample_neighbors); ``symmetric="no"`` built the undirected view."""
    adj = from_coo(np.array([0, 0, 0, 1]), np.array([1, 2, 3, 0]), 4, 4)
    with pytest.raises(ParameterError, match="^replace must be True or False"):
        sample_neighbors(adj, np.array([0, 1]), 2, replace="no")
    with pytest.raises(ParameterError, match="^replace must be True or False"):
        NeighborSampler(graph, [2], replace="no")
    assert NeighborSampler(graph, [2], replace=np.True_).replace is True
    with pytest.raises(ParameterError, match="^symmetric must be True or False"):
        homogeneous_adjacency(graph, symmetric="no")
