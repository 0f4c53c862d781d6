"""Random graphs through the code that runs only on CUDA, on the CPU: the switches that
keep a path to CUDA (the bottom-up probe of the device BFS, the merged SpMV pass, the
layout built on the device out of core, the degree-ordered PageRank) are turned on for the
CPU, and every torch path's answer is checked against scipy's: BFS levels, SSSP distances,
weak components and PageRank, in memory and out of core (streamed every superstep, kept
resident, or half of each), on graphs with parallel edges, self-loops, hubs, long chains,
deleted edges and stored indexes (the active-edge supersteps); and the device sampler's
blocks, eager, replayed and padded, against the CPU sampler's, edge for edge."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from hypothesis import example, given
from hypothesis import strategies as st
from scipy.sparse import csgraph

import graphsys
from graphsys import bsp, open_graph
from graphsys.bsp import device_stream, stream
from graphsys.bsp.algorithms import bfs_device, pagerank_device
from graphsys.sampling import NeighborSampler, from_coo
from graphsys.sampling.device import DeviceNeighborSampler
from graphsys.storage.adjacency_index import build_index
from graphsys.storage.changes import delete_edges

from .conftest import FUZZ
from .test_fuzz_weights import pagerank_reference

#: (module, name) of each switch that keeps a torch path to CUDA
CUDA_ONLY = ((bfs_device, "PROBE_DEVICES"), (device_stream, "MERGED_SPMV_DEVICES"),
             (stream, "MERGED_SPMV_DEVICES"), (device_stream, "DEVICE_BUILDS"))
#: (mode, device_budget): in memory; out of core streamed every superstep, every edge kept
#: on the device (the layout built there), and a budget of 3 bytes an edge (-1, set per
#: graph: some buckets kept there, the others streamed)
RUNS = (("memory", None), ("out-of-core", 0), ("out-of-core", 1 << 40), ("out-of-core", -1))


@pytest.fixture
def cuda_paths(monkeypatch):
    for mod, name in CUDA_ONLY:
        monkeypatch.setattr(mod, name, ("cuda", "cpu"))


def edges(rng: np.random.Generator, n: int, m: int, shape: str):
    """``m`` edges on ``n`` vertices: uniform, hubs (Zipf ends), or a chain (a deep search)
    with uniform edges beside it; parallel edges and self-loops as they fall."""
    if shape == "uniform":
        return rng.integers(0, n, m), rng.integers(0, n, m)
    if shape == "hubs":
        hub, other = rng.zipf(1.6, m) % n, rng.integers(0, n, m)
        flip = rng.random(m) < 0.5
        return np.where(flip, hub, other), np.where(flip, other, hub)
    k = min(m, n - 1)
    return (np.concatenate([np.arange(k), rng.integers(0, n, m - k)]),
            np.concatenate([np.arange(1, k + 1), rng.integers(0, n, m - k)]))


@FUZZ
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 1500), per_node=st.integers(0, 12),
       partitions=st.integers(1, 5), shape=st.sampled_from(["uniform", "hubs", "chain"]),
       undirected=st.booleans(), deletes=st.booleans(), indexed=st.booleans())
@example(seed=1, n=1500, per_node=10, partitions=3, shape="hubs", undirected=False,
         deletes=True, indexed=True)
@example(seed=2, n=1200, per_node=3, partitions=4, shape="chain", undirected=True,
         deletes=False, indexed=False)
def test_device_traversals_match_scipy(cuda_paths, seed, n, per_node, partitions, shape,
                                       undirected, deletes, indexed):
    rng = np.random.default_rng(seed)
    m = per_node * n
    src, dst = (a.astype(np.int64) for a in edges(rng, n, m, shape))
    w = rng.integers(1, 10, m).astype(np.float64)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "g"
        graphsys.from_numpy(src, dst, path, num_nodes=n, partitions=min(partitions, n),
                            weight=w, **({"undirected": True} if undirected else {}))
        keep = np.ones(m, bool)
        if deletes and m:
            pick = rng.choice(m, int(rng.integers(1, m // 4 + 2)) if m > 1 else 1,
                              replace=False)
            pairs = sorted(set(zip(src[pick].tolist(), dst[pick].tolist())))
            delete_edges(path, [a for a, _ in pairs], [b for _, b in pairs])
            gone = set(pairs) | ({(b, a) for a, b in pairs} if undirected else set())
            keep = np.array([(a, b) not in gone for a, b in zip(src.tolist(), dst.tolist())],
                            bool)
        if indexed:
            build_index(open_graph(path), ("csr", "csc"))
        g = open_graph(path)
        ids = np.asarray(g.to_internal(np.arange(n)))
        s, d, ww = ids[src[keep]], ids[dst[keep]], w[keep]
        if undirected:  # both directions of an edge, a self-loop once
            back = s != d
            s, d, ww = (np.concatenate([s, d[back]]), np.concatenate([d, s[back]]),
                        np.concatenate([ww, ww[back]]))
        count = sp.csr_matrix((np.ones(len(s)), (s, d)), shape=(n, n))
        order = np.lexsort((ww, d, s))     # SSSP takes the lightest of parallel edges
        s, d, ww = s[order], d[order], ww[order]
        first = np.ones(len(s), bool)
        first[1:] = (s[1:] != s[:-1]) | (d[1:] != d[:-1])
        lightest = sp.csr_matrix((ww[first], (s[first], d[first])), shape=(n, n))
        source = int(rng.integers(0, n)) if m == 0 or rng.random() < 0.5 else \
            int(np.bincount(src, minlength=n).argmax())
        levels = csgraph.shortest_path(count, unweighted=True, indices=int(ids[source]))
        dist = csgraph.dijkstra(lightest, indices=int(ids[source]))
        ncomp, labels = csgraph.connected_components(count, connection="weak")
        ranks = pagerank_reference(count)
        for mode, budget in RUNS:   # no input here is refused: every run answers
            budget = 3 * len(s) if budget == -1 else budget
            kw = {"mode": mode, "backend": "torch", "device": "cpu", "device_budget": budget}
            res = bsp.bfs(g, source, schedule="sync", **kw)
            np.testing.assert_array_equal(np.asarray(res.values, float), levels)
            res = bsp.sssp(g, source, **kw)
            np.testing.assert_allclose(np.asarray(res.values, float), dist, rtol=1e-6)
            comp = np.asarray(bsp.wcc(g, **kw).values)
            assert len(set(zip(labels.tolist(), comp.tolist()))) == ncomp == len(set(comp))
            for ordered in (False, True):
                pagerank_device.DEGREE_ORDER = ordered
                try:
                    res = bsp.pagerank(g, tol=1e-12, max_iters=500, weighted=False, **kw)
                finally:
                    pagerank_device.DEGREE_ORDER = False
                np.testing.assert_allclose(res.values, ranks, atol=1e-9)
            res = bsp.pagerank(g, tol=1e-6, weighted=False, **kw)   # float32 ranks
            assert res.stats.converged, res.stats.method    # a float32 floor: float64 on
            np.testing.assert_allclose(res.values, ranks, atol=1e-5)


def same_blocks(want, got) -> bool:
    return len(want) == len(got) and all(
        torch.equal(a.dst_nodes, b.dst_nodes) and torch.equal(a.src_nodes, b.src_nodes)
        and torch.equal(a.edge_src, b.edge_src) and torch.equal(a.edge_dst, b.edge_dst)
        for a, b in zip(want, got))


def padded_holds(blocks, padded, n: int) -> bool:
    """Whether each padded layer holds its block's sources (then the padding node) and, in
    each real row, the block's picks with the mean's weights."""
    for block, pad in zip(blocks, padded, strict=True):
        ns, nd = block.num_src_nodes, block.num_dst_nodes
        if not (torch.equal(pad.src_nodes[:ns], block.src_nodes)
                and bool((pad.src_nodes[ns:] == n).all())
                and int(pad.real_dst.sum()) == nd and bool(pad.real_dst[:nd].all())):
            return False
        picked = pad.src_nodes[pad.neighbours]
        ids = block.src_nodes[block.edge_src]
        for row in range(nd):
            real = pad.weights[row] > 0
            mine = ids[block.edge_dst == row]
            if sorted(picked[row][real].tolist()) != sorted(mine.tolist()):
                return False
            if not torch.allclose(pad.weights[row][real],
                                  torch.full((len(mine),), 1.0 / max(len(mine), 1))):
                return False
    return True


@FUZZ
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 2000), per_node=st.integers(0, 15),
       hubs=st.booleans(),
       fanouts=st.lists(st.sampled_from([-1, 1, 2, 3, 5, 10, 25, 70]), min_size=1,
                        max_size=3),
       replace=st.booleans(), csr=st.sampled_from(["device", "staged", "uva"]),
       int32=st.booleans(), batches=st.lists(st.integers(1, 600), min_size=1, max_size=3))
@example(seed=1, n=2000, per_node=12, hubs=True, fanouts=[15, 10], replace=False, csr="device",
         int32=True, batches=[512, 37])
@example(seed=2, n=800, per_node=6, hubs=False, fanouts=[-1, 3, 70], replace=True, csr="uva",
         int32=False, batches=[300])
@example(seed=3, n=1500, per_node=4, hubs=True, fanouts=[5, 25], replace=True, csr="staged",
         int32=True, batches=[600])
def test_device_sampler_draws_the_cpu_samplers_blocks(seed, n, per_node, hubs, fanouts,
                                                      replace, csr, int32, batches):
    rng = np.random.default_rng(seed)
    m = per_node * n
    src, dst = edges(rng, n, m, "hubs" if hubs else "uniform")
    adj = from_coo(src, dst, n, n)
    cpu = NeighborSampler(adj, fanouts, replace=replace)
    dtype = torch.int32 if int32 else torch.int64
    recorded = -1 not in fanouts and csr != "staged"
    samplers = [DeviceNeighborSampler(cpu, device="cpu", csr=csr, index_dtype=dtype)]
    if recorded:   # off CUDA a recorded draw runs again on the same buffers
        samplers.append(DeviceNeighborSampler(cpu, device="cpu", csr=csr, index_dtype=dtype,
                                              cuda_graphs=True))
    for size in batches:
        seeds = rng.choice(n, min(size, n), replace=False)
        rng_seed = int(rng.integers(0, 2**31))
        want = cpu.sample_blocks(seeds, rng_seed)
        for dev in samplers:
            assert same_blocks(want, dev.sample_blocks(torch.as_tensor(seeds), rng_seed))
        if -1 not in fanouts:
            padded = samplers[0].padded_blocks(torch.as_tensor(seeds), rng_seed)
            assert padded_holds(want, padded, n)
