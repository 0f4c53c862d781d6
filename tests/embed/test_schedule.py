from __future__ import annotations

import pytest

from graphsys.embed.schedule import bucket_order, min_swaps, plan_buffer

ORDERS = ["inside_out", "outside_in", "random", "affinity", "buffer"]


@pytest.mark.parametrize("name", ORDERS)
@pytest.mark.parametrize("p, c", [(1, 1), (2, 2), (4, 2), (5, 3), (8, 4), (9, 2)])
@pytest.mark.parametrize("seed", [0, 1])
def test_every_bucket_once_and_plan_respects_capacity(name, p, c, seed):
    order = bucket_order(name, p, seed=seed, buffer=c)
    assert sorted(order) == [(i, j) for i in range(p) for j in range(p)]
    plan = plan_buffer(order, c)
    resident: set[int] = set()
    for step in plan.steps:
        resident -= set(step.evict)
        resident |= set(step.load)
        assert len(resident) <= c
        assert set(step.bucket) <= resident
    assert plan.swaps == plan.evictions == plan.loads - min(p, c)


def test_layers():
    order = bucket_order("outside_in", 4, seed=0)
    layers = [min(b) for b in order]
    assert layers == sorted(layers)
    order = bucket_order("inside_out", 4, seed=0)
    assert [min(b) for b in order] == sorted((min(b) for b in order), reverse=True)


@pytest.mark.parametrize("p, c", [(4, 2), (8, 2), (8, 4), (16, 4)])
def test_buffer_order_near_lower_bound_and_beats_pbg_orders(p, c):
    swaps = {n: plan_buffer(bucket_order(n, p, seed=0, buffer=c), c).swaps for n in ORDERS}
    assert swaps["buffer"] >= min_swaps(p, c)
    assert swaps["buffer"] <= min_swaps(p, c) + max(1, min_swaps(p, c) // 5)
    assert swaps["buffer"] <= min(swaps[n] for n in ORDERS)
