"""PinSage sampler: distribution vs exact enumeration, top-k, blocks, bad input."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy import stats

from graphsys.errors import GraphsysError
from graphsys.sampling import PinSAGESampler, RandomWalkNeighborSampler, Sampler, from_coo

from .conftest import BIPARTITE


def _hop_matrix(fw, bw):
    """Exact one-hop (ntype -> other -> ntype) transition matrix, uniform choices."""
    a = fw.to_scipy().toarray().astype(np.float64)
    b = bw.to_scipy().toarray().astype(np.float64)
    pa = a / np.maximum(a.sum(1, keepdims=True), 1)
    pb = b / np.maximum(b.sum(1, keepdims=True), 1)
    return pa @ pb


def _edges(s, seeds, rng_seed=0, **kw):
    """DGL's ``(src, dst, weight)`` edge list of a one-layer sampler's block."""
    b = s.sample_blocks(seeds, rng_seed, **kw)[-1]
    return b.src_nodes[b.edge_src], b.dst_nodes[b.edge_dst], b.edge_weight


def _visits(s, seeds, rng_seed, layer=0):
    """``(neighbors, visit counts, per seed)`` of the walk kernel, int64 NumPy."""
    return s._walk(np.asarray(seeds, dtype=np.int64), layer, rng_seed, True)


def _tiny():
    u = np.array([e[0] for e in BIPARTITE])
    i = np.array([e[1] for e in BIPARTITE])
    fw = from_coo(i, u, 5, 4)            # item -> user
    return fw, fw.transpose()


def test_one_traversal_matches_exact_distribution_chi_square():
    fw, bw = _tiny()
    p = _hop_matrix(fw, bw)
    walks = 20_000
    s = RandomWalkNeighborSampler(fw, bw, 1, 0.5, walks, 5)
    for seed_node in range(5):
        nbr, cnt, _ = _visits(s, [seed_node], 11 + seed_node)
        counts = np.zeros(5)
        counts[nbr] = cnt
        support = p[seed_node] > 0
        assert counts[~support].sum() == 0          # only reachable nodes are visited
        assert counts.sum() == walks                # one visit per walk, no dead ends here
        probs = p[seed_node][support] / p[seed_node][support].sum()
        chi = stats.chisquare(counts[support], walks * probs)
        assert chi.pvalue > 1e-4, (seed_node, counts, walks * p[seed_node])


def test_multi_traversal_expected_visits_match_enumeration():
    """E[visits to v] = R * sum_t (1-p)^(t-1) P^t[s, v]; compare with a z-test over
    independent repetitions of the same seed."""
    fw, bw = _tiny()
    p_hop = _hop_matrix(fw, bw)
    T, term, R, reps = 3, 0.5, 400, 300
    expected = np.zeros((5, 5))
    power = np.eye(5)
    for t in range(1, T + 1):
        power = power @ p_hop
        expected += (1 - term) ** (t - 1) * power
    expected *= R
    s = RandomWalkNeighborSampler(fw, bw, T, term, R, 5)
    seed_node = 1
    per = np.zeros((reps, 5))
    for r in range(reps):   # a node's walks are keyed by its id: one rng_seed per repetition
        nbr, cnt, _ = _visits(s, [seed_node], 5 + r)
        np.add.at(per[r], nbr, cnt)
    mean, se = per.mean(0), per.std(0, ddof=1) / np.sqrt(reps)
    z = np.abs(mean - expected[seed_node]) / np.maximum(se, 1e-9)
    assert (z < 5).all(), (mean, expected[seed_node], z)


def test_topk_weights_and_ordering(bipartite_graph):
    g = bipartite_graph
    s = PinSAGESampler(g, "item", "user", 3, 0.5, 200, 2)
    seeds = torch.arange(g.num_nodes("item"))
    src, dst, weight = _edges(s, seeds, 3)
    assert src.dtype == torch.int64 and weight.dtype == torch.float32
    for k in seeds.tolist():
        m = dst == k
        assert 1 <= int(m.sum()) <= 2
        assert torch.isclose(weight[m].sum(), torch.tensor(1.0))
        w = weight[m]
        assert (w[:-1] >= w[1:]).all()                # most visited first
    # compare with an unbounded sampler: the kept ones are the top counts
    full = RandomWalkNeighborSampler(s.fw, s.bw, 3, 0.5, 200, 10)
    a, b = _visits(s, seeds, 9), _visits(full, seeds, 9)
    for (_, ca, na), (_, cb, nb) in [(a, b)]:
        ends_a, ends_b = np.cumsum(na), np.cumsum(nb)
        for k in range(len(seeds)):
            got = sorted(ca[ends_a[k] - na[k]:ends_a[k]].tolist(), reverse=True)
            ref = sorted(cb[ends_b[k] - nb[k]:ends_b[k]].tolist(), reverse=True)
            assert got == ref[:len(got)]


def test_walks_stay_on_the_metapath(bipartite_graph):
    g = bipartite_graph
    s = PinSAGESampler(g, "item", "user", 2, 0.3, 100, 5)
    p = _hop_matrix(s.fw, s.bw)
    reach = (p + p @ p) > 0
    src, dst, _ = _edges(s, torch.arange(g.num_nodes("item")), 1)
    assert reach[dst.numpy(), src.numpy()].all()


def test_deterministic_and_independent_of_parallelism(bipartite_graph):
    s = PinSAGESampler(bipartite_graph, "item", "user", 3, 0.5, 50, 3)
    seeds = torch.tensor([4, 0, 2, 1])
    a = _edges(s, seeds, 42)
    b = _edges(s, seeds, 42, parallel=False)
    c = _edges(s, seeds, 43)
    assert all(torch.equal(x, y) for x, y in zip(a, b))
    assert not all(torch.equal(x, y) for x, y in zip(a, c)) or len(a[0]) == 0


def test_a_node_walks_the_same_whatever_its_batch(bipartite_graph):
    s = PinSAGESampler(bipartite_graph, "item", "user", 3, 0.5, 50, 3)
    nbr, cnt, num = _visits(s, [4, 0, 2, 1], 42)
    ends = np.cumsum(num)
    for k, v in enumerate([4, 0, 2, 1]):
        alone = _visits(s, [v], 42)
        assert nbr[ends[k] - num[k]:ends[k]].tolist() == alone[0].tolist()
        assert cnt[ends[k] - num[k]:ends[k]].tolist() == alone[1].tolist()


def test_blocks_per_layer_follow_the_sampler_protocol(bipartite_graph):
    s = PinSAGESampler(bipartite_graph, "item", "user", 3, 0.5, 50, [3, 2])
    assert isinstance(s, Sampler) and s.num_layers == 2 and s.num_nodes == 5
    seeds = torch.tensor([4, 1])
    blocks = s.sample_blocks(seeds, 7)
    assert len(blocks) == 2 and torch.equal(blocks[-1].dst_nodes, seeds)
    assert torch.equal(blocks[0].dst_nodes, blocks[1].src_nodes)
    for block, k in zip(blocks, (3, 2)):
        per = torch.bincount(block.edge_dst, minlength=block.num_dst_nodes)
        assert int(per.max()) <= k
    again = s.sample_blocks(seeds, 7)
    assert all(torch.equal(x.src_nodes, y.src_nodes) and torch.equal(x.edge_src, y.edge_src)
               for x, y in zip(blocks, again))
    assert not hasattr(s, "sample") and not callable(s)


def test_bad_input(bipartite_graph):
    g = bipartite_graph
    s = PinSAGESampler(g, "item", "user", 3, 0.5, 10, 3)
    with pytest.raises(GraphsysError, match="outside the graph"):
        s.sample_blocks(torch.tensor([0, g.num_nodes("item")]))
    with pytest.raises(GraphsysError, match="outside the graph"):
        s.sample_blocks(torch.tensor([-1]))
    with pytest.raises(GraphsysError, match="integers"):
        s.sample_blocks(torch.tensor([0.5]))
    with pytest.raises(GraphsysError, match="unique"):
        s.sample_blocks(torch.tensor([1, 1]))
    with pytest.raises(GraphsysError, match=r"^termination_prob must be a finite number in "
                                            r"\[0, 1\], got 1.5$"):
        PinSAGESampler(g, "item", "user", 3, 1.5, 10, 3)
    with pytest.raises(GraphsysError, match="termination_prob"):   # walked as 1
        PinSAGESampler(g, "item", "user", 3, float("nan"), 10, 3)
    with pytest.raises(GraphsysError, match="num_random_walks"):      # one walk
        PinSAGESampler(g, "item", "user", 3, 0.5, True, 3)
    with pytest.raises(GraphsysError, match="num_neighbors"):
        PinSAGESampler(g, "item", "user", 3, 0.5, 10, 0)
    with pytest.raises(GraphsysError, match="num_neighbors"):
        PinSAGESampler(g, "item", "user", 3, 0.5, 10, [2, 0])
    with pytest.raises(GraphsysError, match="unknown entity type"):
        PinSAGESampler(g, "pin", "user", 3, 0.5, 10, 3)


def test_parallel_edges_walk_the_same_with_or_without_the_indexes(tmp_path):
    """User 0 rated item 0 five times and item 1 once: the RAM build merged the parallel
    edges (from item 1, a walk went on to item 0 or item 1 at 1/2 each) while the walk
    mapped from ``graphsys index``'s CSR/CSC kept them (5/6 to item 0, as DGL's random
    walk over edges), so indexing the graph changed item 1's neighbours. Both keep them
    now: the same visits, exactly, and the expected ones."""
    import subprocess
    import sys

    from graphsys.storage.graph import open_graph

    from .conftest import write_bipartite

    g = write_bipartite(tmp_path, [(0, 0)] * 5 + [(0, 1), (1, 1), (1, 2)], partitions=1)
    s = PinSAGESampler(g, "item", "user", 1, 0.5, 6000, 3)
    assert s._base == 0                                  # built in RAM
    ram = _visits(s, [1], 3)
    subprocess.run([sys.executable, "-m", "graphsys", "index", str(g.path)], check=True,
                   capture_output=True)
    mapped = PinSAGESampler(open_graph(g.path), "item", "user", 1, 0.5, 6000, 3)
    assert mapped._base > 0                               # mapped from the indexes
    for a, b in zip(ram, _visits(mapped, [1], 3)):
        np.testing.assert_array_equal(a, b)
    # item 1 -> user 0 (1/2) -> item 0 (5/6) or item 1 (1/6); -> user 1 (1/2) -> item 1, 2
    want = np.array([5 / 12, 1 / 12 + 1 / 4, 1 / 4]) * 6000
    got = np.zeros(3)
    got[ram[0]] = ram[1]
    assert stats.chisquare(got, want).pvalue > 1e-4, got
