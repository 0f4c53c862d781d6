"""The device feature cache: the table's rows whatever is cached (against a plain gather),
its hit counts and host traffic, the pre-sampled hot nodes (against a brute-force count),
its errors, and NodeLoader batches read through it."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from graphsys.analysis.device_counts import DeviceWorkCounter
from graphsys.errors import GraphsysError
from graphsys.gnn import NodeLoader
from graphsys.sampling import NeighborSampler, from_coo
from graphsys.sampling._util import derive_seed
from graphsys.sampling.feature_cache import DeviceFeatureCache, presample_hot_nodes

N = 400


@pytest.fixture(scope="module")
def adj():
    rng = np.random.default_rng(8)
    hubs = rng.integers(0, 10, 3000)                 # nodes 0..9 are hubs
    others = rng.integers(0, N, 3000)
    return from_coo(np.r_[hubs, others], np.r_[others, hubs], N, N)


@pytest.fixture(scope="module")
def table():
    return np.random.default_rng(9).standard_normal((N, 6)).astype(np.float32)


@pytest.mark.parametrize("capacity", [0, 1, 50, N])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_rows_equal_a_plain_gather(table, capacity, dtype):
    t = table.astype(dtype)
    hot = np.random.default_rng(1).permutation(N)
    cache = DeviceFeatureCache(t, hot, capacity, device="cpu")
    ids = np.random.default_rng(2).integers(0, N, 700)          # repeats included
    for given in (torch.from_numpy(ids), ids, ids.tolist(), torch.from_numpy(ids[:0])):
        got = cache.rows(given)
        want = torch.from_numpy(t[np.asarray(given, np.int64)].astype(np.float32))
        assert got.dtype == torch.float32 and torch.equal(got, want)
    cached = np.isin(ids, hot[:capacity]).sum()
    assert cache.hits == 3 * cached and cache.misses == 3 * (len(ids) - cached)


def test_one_sync_a_batch_and_traffic_only_for_misses(table):
    cache = DeviceFeatureCache(table, np.arange(100), device="cpu")
    hit_ids = torch.arange(0, 100, 3).to("cpu", copy=True)
    with DeviceWorkCounter() as c:
        ids = hit_ids.to("cpu", copy=True)              # ids made on the device
        cache.rows(ids)
    assert c.syncs == 1 and [k for k, _ in c.records] == ["h2d"]     # the ids' upload only
    with DeviceWorkCounter() as c:
        ids = torch.arange(90, 130).to("cpu", copy=True)
        cache.rows(ids)
    assert c.syncs == 2 and [k for k, _ in c.records] == ["h2d", "d2h", "h2d"]


def test_presampled_hot_nodes_are_the_most_read(adj):
    sampler = NeighborSampler(adj, [5, 3])
    seeds = np.arange(N)
    hot = presample_hot_nodes(sampler, seeds, batch_size=64, num_batches=4, rng_seed=3)
    order = np.random.default_rng(3).permutation(seeds)
    counts = np.zeros(N, np.int64)
    for i in range(4):
        b = sampler.sample_blocks(order[64 * i:64 * (i + 1)], derive_seed(3, i))
        counts[b[0].src_nodes.numpy()] += 1
    seen = np.flatnonzero(counts)
    assert hot.tolist() == sorted(seen.tolist(), key=lambda v: (-counts[v], v))
    assert set(hot[:10].tolist()) == set(range(10))          # the hubs, read every batch


def test_errors(table):
    with pytest.raises(GraphsysError, match="float16/float32"):
        DeviceFeatureCache(table.astype(np.int64), [0], device="cpu")
    with pytest.raises(GraphsysError, match="unique"):
        DeviceFeatureCache(table, [1, 1], device="cpu")
    with pytest.raises(GraphsysError, match="outside"):
        DeviceFeatureCache(table, [N], device="cpu")
    with pytest.raises(GraphsysError, match="capacity"):
        DeviceFeatureCache(table, [1], -1, device="cpu")
    for bad in (1.5, True, float("nan")):              # cut to 1, read as 1, raw error
        with pytest.raises(GraphsysError, match="capacity"):
            DeviceFeatureCache(table, [1], bad, device="cpu")
    cache = DeviceFeatureCache(table, [1, 2], device="cpu")
    for bad in ([3, N], torch.tensor([-1, 2])):
        with pytest.raises(GraphsysError, match="outside"):
            cache.rows(bad)
    for bad in (torch.tensor([1.7]), [1.5, 2.0], torch.tensor([True])):  # were truncated
        with pytest.raises(GraphsysError, match="integers"):
            cache.rows(bad)
    empty = DeviceFeatureCache(table[:0], [], device="cpu")   # torch's IndexError before
    assert empty.rows(torch.zeros(0, dtype=torch.int64)).shape == (0, table.shape[1])
    with pytest.raises(GraphsysError, match="outside the column's 0 rows"):
        empty.rows([0])
    for bad in ({"batch_size": 0}, {"batch_size": 2.5}, {"num_batches": True}):
        with pytest.raises(GraphsysError, match="must be a positive integer"):
            presample_hot_nodes(NeighborSampler(from_coo([0], [1], 2, 2), [1]), [0], **bad)


@pytest.mark.parametrize("device_sampling", [False, True])
def test_node_loader_reads_features_through_the_cache(adj, table, device_sampling):
    sampler = NeighborSampler(adj, [4, 3])
    cache = DeviceFeatureCache.from_presampling(table, sampler, np.arange(N), 40,
                                                device="cpu", batch_size=64)
    kw = dict(batch_size=64, num_workers=1, labels=None, device_sampling=device_sampling)
    plain = list(NodeLoader(None, sampler, np.arange(N), features=table, **kw))
    cached = list(NodeLoader(None, sampler, np.arange(N), features=cache, **kw))
    assert len(plain) == len(cached) == 7
    assert all(torch.equal(a.x, b.x) for a, b in zip(plain, cached))
    # the 40 rows of 400 read most in pre-sampling serve more than their share of reads
    assert cache.hits / (cache.hits + cache.misses) > 1.5 * 40 / N    # a random 40: 0.1
