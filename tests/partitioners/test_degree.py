"""Tests of the degree partitioner: greedy LPT balance of the edge load."""

from __future__ import annotations

import numpy as np
import pytest

from partitioners import DegreePartitioner, HashPartitioner


def power_law_ctx(make_ctx, num_nodes=20_000, num_edges=100_000, exponent=2.1, seed=0):
    """Chung-Lu graph with Pareto weights: a heavy-tailed degree sequence."""
    rng = np.random.default_rng(seed)
    weights = rng.pareto(exponent - 1.0, num_nodes) + 1.0
    prob = weights / weights.sum()
    src = rng.choice(num_nodes, num_edges, p=prob)
    dst = rng.choice(num_nodes, num_edges, p=prob)
    return make_ctx(num_nodes, src=src, dst=dst)


def test_balances_edge_load_on_power_law(make_ctx, check):
    ctx = power_law_ctx(make_ctx)
    degrees = ctx.degrees()
    num_partitions = 8
    parts = DegreePartitioner(num_partitions).assign(ctx)
    check(parts, ctx.num_nodes, num_partitions)
    loads = ctx.loads(parts, num_partitions)
    imbalance = loads.max() / loads.mean()
    hash_loads = ctx.loads(HashPartitioner(num_partitions).assign(ctx), num_partitions)
    hash_imbalance = hash_loads.max() / hash_loads.mean()
    assert degrees.max() > 20 * degrees.mean()  # the sequence really is heavy-tailed
    assert imbalance < 1.001
    assert hash_imbalance > 1.01
    assert loads.max() <= degrees.sum() / num_partitions + degrees.max()


def test_lpt_bound_with_dominant_hub(make_ctx):
    # One hub of degree 60 and 60 leaves: the hub's partition holds the hub alone.
    ctx = make_ctx(61, src=np.zeros(60, np.int64), dst=np.arange(1, 61))
    parts = DegreePartitioner(4).assign(ctx)
    assert np.sum(parts == parts[0]) == 1
    loads = ctx.loads(parts, 4)
    assert sorted(loads.tolist()) == [20, 20, 20, 60]


def test_exact_small_case(make_ctx):
    degrees = np.array([4, 3, 3, 2, 0, 0])
    ctx = make_ctx(6)
    ctx.degrees = lambda: degrees
    parts = DegreePartitioner(2).assign(ctx)
    # Loads after each step: 4 -> p0 (4,0); 3 -> p1 (4,3); 3 -> p1 (4,6); 2 -> p0 (6,6);
    # zero-degree nodes: counts (2,2) -> p0, then (3,2) -> p1.
    assert parts.tolist() == [0, 1, 1, 0, 0, 1]


def reference_lpt(degrees: np.ndarray, num_partitions: int) -> list[int]:
    """Plain-Python version of the documented rule."""
    loads = [0] * num_partitions
    counts = [0] * num_partitions
    parts = [-1] * len(degrees)
    for v in sorted(range(len(degrees)), key=lambda v: (-degrees[v], v)):
        if degrees[v] > 0:
            best = min(range(num_partitions), key=lambda p: (loads[p], counts[p], p))
        else:
            best = min(range(num_partitions), key=lambda p: (counts[p], p))
        parts[v] = best
        loads[best] += int(degrees[v])
        counts[best] += 1
    return parts


def test_equal_loads_go_to_fewer_nodes(make_ctx):
    degrees = np.array([11, 10, 8, 7, 6, 3, 1, 1])
    ctx = make_ctx(8)
    ctx.degrees = lambda: degrees
    parts = DegreePartitioner(3).assign(ctx)
    # Loads reach (15, 16, 15) with 3 nodes in p0 and 2 in p2: the last node goes to p2.
    assert parts.tolist() == [0, 1, 2, 2, 1, 0, 0, 2]


@pytest.mark.parametrize("seed", range(5))
def test_matches_reference(make_ctx, seed):
    # Few distinct small degrees: many ties in degree and in load.
    rng = np.random.default_rng(seed)
    degrees = rng.choice([0, 1, 2, 3, 5, 8], 300, p=[0.2, 0.3, 0.2, 0.15, 0.1, 0.05])
    ctx = make_ctx(300)
    ctx.degrees = lambda: degrees
    for num_partitions in (2, 3, 7):
        got = DegreePartitioner(num_partitions).assign(ctx)
        assert got.tolist() == reference_lpt(degrees, num_partitions)


def test_zero_degree_nodes_balance_node_counts(make_ctx):
    rng = np.random.default_rng(1)
    src = rng.integers(0, 100, 400)
    dst = rng.integers(0, 100, 400)
    ctx = make_ctx(1000, src=src, dst=dst)  # nodes 100.. have no edges
    parts = DegreePartitioner(4).assign(ctx)
    counts = np.bincount(parts, minlength=4)
    assert counts.max() - counts.min() <= 1
    loads = ctx.loads(parts, 4)
    assert loads.max() / loads.mean() < 1.02


def test_no_edges_is_round_robin(make_ctx):
    parts = DegreePartitioner(3).assign(make_ctx(7))
    assert parts.tolist() == [0, 1, 2, 0, 1, 2, 0]


def test_p1_deterministic_and_reads_only_degrees(make_ctx):
    ctx = power_law_ctx(make_ctx, num_nodes=2000, num_edges=8000)
    assert not DegreePartitioner(1).assign(ctx).any()
    a = DegreePartitioner(5, seed=1).assign(ctx)
    assert np.array_equal(a, DegreePartitioner(5, seed=2).assign(ctx))
    assert set(ctx.calls) == {"degrees"}
    assert DegreePartitioner(5).assign(make_ctx(0)).shape == (0,)


def test_bad_degrees(make_ctx):
    ctx = make_ctx(3)
    ctx.degrees = lambda: np.array([1, -1, 0])
    with pytest.raises(ValueError, match="negative"):
        DegreePartitioner(2).assign(ctx)
    ctx.degrees = lambda: np.array([1, 1])
    with pytest.raises(ValueError, match="shape"):
        DegreePartitioner(2).assign(ctx)
