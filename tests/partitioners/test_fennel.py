"""Tests of the FENNEL streaming partitioner: low edge-cut on planted communities, capacity."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from partitioners import FennelPartitioner, HashPartitioner, get_partitioner


def sbm_ctx(make_ctx, blocks=4, block_size=300, p_in=0.1, p_out=0.002, seed=0):
    """Stochastic block model: ``blocks`` planted communities of ``block_size`` nodes.

    Nodes are interleaved (node i is in block i % blocks) so that neither id order nor
    range partitioning reveals the communities.
    """
    rng = np.random.default_rng(seed)
    n = blocks * block_size
    src, dst = np.triu_indices(n, k=1)
    same = (src % blocks) == (dst % blocks)
    keep = rng.random(len(src)) < np.where(same, p_in, p_out)
    return make_ctx(n, src=src[keep], dst=dst[keep])


def reference_fennel(ctx, fennel: FennelPartitioner) -> list[int]:
    """Plain-Python FENNEL, written from the docstring's formula."""
    n, num_partitions = ctx.num_nodes, fennel.num_partitions
    neighbors = [[] for _ in range(n)]
    for u, v in zip(ctx.src.tolist(), ctx.dst.tolist()):
        neighbors[u].append(v)
        neighbors[v].append(u)
    alpha = fennel.alpha if fennel.alpha is not None else \
        len(ctx.src) * num_partitions ** (fennel.gamma - 1) / n ** fennel.gamma
    capacity = max(math.ceil(n / num_partitions), math.floor(fennel.nu * n / num_partitions))
    if fennel.order == "natural":
        order = range(n)
    else:
        order = np.arange(n, dtype=np.int32)
        np.random.default_rng(fennel.seed).shuffle(order)
        order = order.tolist()
    parts = [-1] * n
    sizes = [0] * num_partitions
    for v in order:
        counts = [0] * num_partitions
        for u in neighbors[v]:
            if parts[u] >= 0:
                counts[parts[u]] += 1
        candidates = [(counts[p] - alpha * fennel.gamma * sizes[p] ** (fennel.gamma - 1),
                       -sizes[p], -p) for p in range(num_partitions) if sizes[p] < capacity]
        best = -max(candidates)[2]
        parts[v] = best
        sizes[best] += 1
    return parts


@pytest.mark.parametrize("params", [
    {}, {"order": "natural"}, {"seed": 5, "gamma": 2.0, "nu": 1.0}, {"alpha": 0.0},
    {"alpha": 3.0, "nu": 1.3},
])
def test_matches_reference(make_ctx, params):
    rng = np.random.default_rng(2)
    # Random graph with multi-edges, self-loops and isolated nodes.
    ctx = make_ctx(150, src=rng.integers(0, 120, 400), dst=rng.integers(0, 120, 400))
    fennel = FennelPartitioner(5, **params)
    assert fennel.assign(ctx).tolist() == reference_fennel(ctx, fennel)


def test_cuts_far_fewer_edges_than_hash_on_sbm(make_ctx, check):
    ctx = sbm_ctx(make_ctx)
    hash_cut = ctx.cut_fraction(HashPartitioner(4).assign(ctx))
    assert hash_cut > 0.7
    cuts = []
    for seed in range(5):
        fennel = FennelPartitioner(4, seed=seed)
        parts = fennel.assign(ctx)
        check(parts, ctx.num_nodes, 4)
        assert np.bincount(parts, minlength=4).max() <= fennel.capacity(ctx.num_nodes)
        cuts.append(ctx.cut_fraction(parts))
    assert max(cuts) < 0.6 * hash_cut
    assert np.mean(cuts) < 0.5 * hash_cut


@pytest.mark.parametrize("order", ["random", "natural"])
def test_respects_capacity(make_ctx, order):
    # Without a size penalty a clique pulls every node toward the first partition it
    # enters; only the capacity stops it.
    n = 103
    src, dst = np.triu_indices(n, k=1)
    ctx = make_ctx(n, src=src, dst=dst)
    for nu, num_partitions in [(1.0, 4), (1.1, 4), (1.5, 3), (1.0, 1)]:
        fennel = FennelPartitioner(num_partitions, nu=nu, alpha=0.0, order=order)
        counts = np.bincount(fennel.assign(ctx), minlength=num_partitions)
        capacity = max(math.ceil(n / num_partitions), math.floor(nu * n / num_partitions))
        assert fennel.capacity(n) == capacity
        assert counts.max() == capacity  # the clique fills partitions up to the cap
        assert counts.sum() == n


def test_deterministic_seeded_order(make_ctx):
    ctx = sbm_ctx(make_ctx, block_size=100, p_in=0.1)
    a = FennelPartitioner(4, seed=1).assign(ctx)
    assert np.array_equal(a, FennelPartitioner(4, seed=1).assign(ctx))
    assert not np.array_equal(a, FennelPartitioner(4, seed=2).assign(ctx))
    natural = FennelPartitioner(4, seed=1, order="natural").assign(ctx)
    assert np.array_equal(natural, FennelPartitioner(4, seed=2, order="natural").assign(ctx))
    assert set(ctx.calls) == {"adjacency"}


def test_natural_order_on_a_path(make_ctx):
    # Streaming a path in order, a small alpha keeps each node with its predecessor until
    # the partition is full. The default alpha (0.458 here) makes joining a partition of
    # 3 nodes cost 1.19 > 1 neighbor, so nodes 3 and 6 open empty partitions; node 9, with
    # every partition at 3 nodes, stays; nodes 10 and 11 find their predecessor's full.
    ctx = make_ctx(12, src=np.arange(11), dst=np.arange(1, 12))
    parts = FennelPartitioner(3, nu=1.0, alpha=0.1, order="natural").assign(ctx)
    assert parts.tolist() == [0] * 4 + [1] * 4 + [2] * 4
    parts = FennelPartitioner(3, order="natural").assign(ctx)
    assert parts.tolist() == [0, 0, 0, 1, 1, 1, 2, 2, 2, 2, 0, 1]


def test_no_edges_balances_and_p1(make_ctx):
    counts = np.bincount(FennelPartitioner(4).assign(make_ctx(10)), minlength=4)
    assert counts.max() - counts.min() <= 1
    ctx = sbm_ctx(make_ctx, block_size=50)
    assert not FennelPartitioner(1).assign(ctx).any()
    assert FennelPartitioner(3).assign(make_ctx(0)).shape == (0,)


def test_params_and_alpha():
    fennel = FennelPartitioner(4, seed=3)
    assert fennel.params() == {"seed": 3, "gamma": 1.5, "nu": 1.1, "alpha": None,
                               "order": "random"}
    json.dumps(fennel.params())
    # Default alpha: sqrt(P) * m / N**1.5 at gamma = 1.5.
    assert fennel.resolved_alpha(100, 500.0) == pytest.approx(2.0 * 500 / 1000)
    assert FennelPartitioner(4, alpha=0.25).resolved_alpha(100, 500.0) == 0.25
    again = get_partitioner("fennel", 4, **fennel.params())
    assert again.params() == fennel.params()


@pytest.mark.parametrize("params,name", [
    ({"gamma": 1.0}, "gamma"), ({"gamma": 0.5}, "gamma"), ({"gamma": "x"}, "gamma"),
    ({"nu": 0.9}, "nu"), ({"nu": float("nan")}, "nu"), ({"alpha": -1.0}, "alpha"),
    ({"order": "bfs"}, "order"), ({"beta": 1}, "beta"),
])
def test_bad_params(params, name):
    with pytest.raises(ValueError, match=name):
        get_partitioner("fennel", 4, **params)


def test_memmap_adjacency(make_ctx, tmp_path):
    ctx = sbm_ctx(make_ctx, block_size=50)
    indptr, indices = ctx.adjacency()
    mapped = []
    for name, array in (("indptr", indptr), ("indices", indices)):
        mm = np.memmap(tmp_path / name, dtype=np.int64, mode="w+", shape=array.shape)
        mm[:] = array
        mapped.append(mm)
    expected = FennelPartitioner(4).assign(ctx)
    ctx.adjacency = lambda: tuple(mapped)
    assert np.array_equal(FennelPartitioner(4).assign(ctx), expected)


@pytest.mark.parametrize("params", [{"nu": 1e30}, {"nu": 1e308}, {"gamma": 2000.0},
                                    {"gamma": 1e300}])
def test_extreme_finite_params_partition(make_ctx, params, check):
    # nu = 1e30 made a capacity past int64 (a numba TypingError traceback), nu = 1e308 an
    # infinite one and gamma = 2000 an overflowing default alpha (OverflowError): a capacity
    # past N is N, and alpha is the same quotient taken in logarithms
    ctx = make_ctx(6, src=[0, 1, 2, 3], dst=[1, 2, 3, 4])
    fennel = FennelPartitioner(2, **params)
    check(fennel.assign(ctx), 6, 2)
    if "nu" in params:
        assert fennel.capacity(6) == 6
        assert fennel.assign(ctx).tolist() == reference_fennel(ctx, FennelPartitioner(2, nu=2.0))
    else:
        assert fennel.resolved_alpha(6, 4.0) == 0.0  # 4 * 2**1999 / 6**2000 underflows
    assert FennelPartitioner(7, gamma=2000.0).resolved_alpha(5, 3.0) == pytest.approx(
        math.exp(math.log(3) + 1999 * math.log(7) - 2000 * math.log(5)))
