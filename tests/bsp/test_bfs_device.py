"""In-memory BFS on the torch backend (graphsys.bsp.algorithms.bfs_device): the lean
direction-optimizing supersteps give scipy's levels and the CPU search's directions, and
launch a pinned number of torch ops with one host read per superstep (counted on CPU
tensors with DeviceWorkCounter, the device emulated)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.sparse import csgraph

import graphsys
from graphsys import bsp
from graphsys.analysis.device_counts import DeviceWorkCounter
from graphsys.bsp.algorithms import bfs_device
from graphsys.bsp.algorithms.bfs_device import (
    FRONTIER_IDS_OPS,
    MARK_OPS,
    PROBE_OPS,
    PULL_OPS,
    PULL_UNREACHED_OPS,
    PUSH_OPS,
)

from .conftest import GRAPH_KEYS, to_global


@pytest.fixture(scope="module")
def skewed(tmp_path_factory):
    """A skewed random graph (3,000 vertices, 30,000 edges: some isolated, some dangling)
    whose BFS from 0 goes top-down, then bottom-up, then top-down again; its scipy matrix."""
    rng = np.random.default_rng(1)
    n = 3000
    src = rng.integers(0, n - 40, 30000)
    dst = (src * 7 + rng.integers(0, n, 30000) ** 2 // n) % (n - 10)
    g = graphsys.from_numpy(src, dst, tmp_path_factory.mktemp("skewed") / "g", num_nodes=n,
                            partitions=3)
    ids = g.to_internal(np.arange(n))
    ids = np.asarray(ids.to_numpy() if hasattr(ids, "to_numpy") else ids)
    from scipy.sparse import csr_matrix

    mat = csr_matrix((np.ones(len(src)), (ids[src], ids[dst])), shape=(n, n))
    return g, mat


def _phases(cpu) -> list[str]:
    """The CPU search's direction of every level (it records one superstep per phase)."""
    steps = cpu.stats.supersteps
    out = []
    for a, b in zip(steps, [*steps[1:], None]):
        end = b.superstep if b is not None else None
        out += [a.direction] * ((end if end is not None else a.superstep + 1) - a.superstep)
    return out


@pytest.mark.parametrize("key", GRAPH_KEYS)
def test_levels_match_scipy(graphs, key, device):
    tg = graphs[key]
    for source in (0, 5):
        res = bsp.bfs(tg.graph, source, mode="memory", backend="torch", device=device)
        ref = csgraph.shortest_path(tg.count, method="D", unweighted=True,
                                    indices=to_global(tg, source))
        np.testing.assert_array_equal(res.values, ref)
        assert res.stats.converged
        if device != "lazy":  # no sparse CSR product there: the engine's supersteps
            assert res.stats.method == "direction-optimizing-bfs (device, int32 ids)"
            assert len(res.stats.supersteps) == int(np.nanmax(ref[np.isfinite(ref)])) + 1


@pytest.mark.parametrize("source", [0, 5, 17])
def test_directions_and_levels_match_the_cpu_search(skewed, source):
    g, mat = skewed
    dev = bsp.bfs(g, source, backend="torch")
    cpu = bsp.bfs(g, source)
    np.testing.assert_array_equal(dev.values, cpu.values)
    ref = csgraph.shortest_path(mat, unweighted=True, indices=int(g.to_internal([source])[0]))
    np.testing.assert_array_equal(dev.values, ref)
    dirs = [s.direction for s in dev.stats.supersteps]
    assert dirs == _phases(cpu) and "pull" in dirs and dirs[0] == "push"
    # a pull scans every in-edge, or those of the unreached vertices alone where they are
    # few enough; a push the frontier's out-edges
    indeg = np.asarray(mat.sum(axis=0)).ravel()
    for s in dev.stats.supersteps:
        left = int(indeg[~(dev.values <= s.superstep)].sum())
        assert s.fused
        if s.direction == "pull":
            assert s.edges_scanned == (
                left if left * bfs_device.UNREACHED_PULL_COST < g.num_edges()
                else g.num_edges())
    assert any(s.direction == "pull" and s.edges_scanned < g.num_edges()
               for s in dev.stats.supersteps)
    # each superstep reached the next one's frontier
    reached = [s.messages_combined for s in dev.stats.supersteps]
    assert reached[:-1] == [s.active for s in dev.stats.supersteps[1:]] and reached[-1] == 0
    sync = bsp.bfs(g, source, backend="torch", schedule="sync")
    assert sync.stats.method == dev.stats.method
    loop = bsp.bfs(g, source, backend="torch", fuse=False)  # the engine's supersteps
    assert loop.stats.method == "supersteps"
    np.testing.assert_array_equal(loop.values, dev.values)


@pytest.mark.filterwarnings("ignore::graphsys.errors.ConvergenceWarning")
def test_max_iters_cuts_the_search_as_on_the_cpu(skewed):
    g, _ = skewed
    for k in (1, 3, 4):
        dev = bsp.bfs(g, 0, backend="torch", max_iters=k)
        cpu = bsp.bfs(g, 0, max_iters=k)
        np.testing.assert_array_equal(dev.values, cpu.values)
        assert len(dev.stats.supersteps) == k and not dev.stats.converged


def test_int64_ids_where_int32_cannot_hold_them(skewed, monkeypatch):
    from graphsys.bsp.algorithms import bfs_device

    g, _ = skewed
    narrow = bsp.bfs(g, 0, backend="torch")
    monkeypatch.setattr(bfs_device, "_INT32_MAX", 100)
    wide = bsp.bfs(g, 0, backend="torch")
    assert wide.stats.method == "direction-optimizing-bfs (device, int64 ids)"
    np.testing.assert_array_equal(wide.values, narrow.values)


def _counts(g, max_iters: int) -> tuple[int, int, int]:
    with DeviceWorkCounter() as c:
        bsp.bfs(g, 0, backend="torch", max_iters=max_iters)
    return c.launches, c.syncs, c.transfers


@pytest.mark.filterwarnings("ignore::graphsys.errors.ConvergenceWarning")
def test_superstep_launch_and_sync_budget(skewed):
    """A top-down superstep launches PUSH_OPS ops (FRONTIER_IDS_OPS more after a bottom-up
    one, whose frontier it compacts into ids), a bottom-up one PULL_OPS (MARK_OPS more after
    a top-down one) or PULL_UNREACHED_OPS, and each reads three numbers back to the host
    once (one sync, one transfer); differences of whole runs cut after k and k + 1
    supersteps, so that the setup cancels out. A top-down step's ops are over its frontier
    and their out-edges alone, none over every vertex."""
    g, _ = skewed
    steps = bsp.bfs(g, 0, backend="torch").stats.supersteps
    kinds = ["push" if s.direction == "push" else
             "pull" if s.edges_scanned == g.num_edges() else "pull-unreached" for s in steps]
    assert kinds == ["push", "push", "push", "pull", "pull-unreached", "push"]
    ops = {"push": PUSH_OPS, "pull": PULL_OPS, "pull-unreached": PULL_UNREACHED_OPS}
    counts = [_counts(g, k) for k in range(1, len(steps) + 1)]
    for k in range(1, len(steps)):
        launches, syncs, transfers = (a - b for a, b in zip(counts[k], counts[k - 1]))
        turned = kinds[k - 1].startswith("pull") != kinds[k].startswith("pull")
        extra = {"push": FRONTIER_IDS_OPS, "pull": MARK_OPS}.get(kinds[k], 0) if turned else 0
        assert launches == ops[kinds[k]] + extra
        assert syncs == transfers == 1
    assert (PUSH_OPS, PULL_OPS, PULL_UNREACHED_OPS, PROBE_OPS) == (28, 7, 16, 18)
    assert (FRONTIER_IDS_OPS, MARK_OPS) == (4, 1)


def test_top_down_step_works_on_the_frontier_alone(skewed):
    """push_step from a frontier of two vertices: every op but the in-place updates of the
    level and claim arrays (which touch the reached entries) makes an array of the
    frontier's or its out-edges' size, none of the vertex count; the next frontier is each
    newly reached vertex once, and the claims are all reset."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    g, _ = skewed
    lay = bfs_device.device_layout(g, g.edge_set(None).name, torch.device("cpu"))
    n = g.num_nodes()
    level = torch.full((n,), bfs_device.UNREACHED, dtype=torch.int32)
    frontier = torch.tensor([0, 5])
    level[frontier] = 0
    level[int(lay.out_idx[lay.out_ptr[0]])] = 0   # a target reached before the step
    fe = int(lay.out_deg[frontier].sum())
    empty = torch.iinfo(lay.out_deg.dtype).max
    owner = torch.full((n,), empty, dtype=lay.out_deg.dtype)
    sizes = []

    class Sizes(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            if not func._schema.name.endswith("_"):  # not an in-place update
                outs = out if isinstance(out, (tuple, list)) else [out]
                sizes.extend(t.numel() for t in outs if isinstance(t, torch.Tensor))
            return out

    before = level.clone()
    with Sizes():
        nxt, (nf, nfe, nfi) = bfs_device.push_step(lay, level, frontier, owner, 0, fe)
    assert sizes and max(sizes) <= 3 * fe < n // 10    # (3, fe): the counts of the targets
    targets = np.concatenate([lay.out_idx[lay.out_ptr[v]:lay.out_ptr[v + 1]].numpy()
                              for v in frontier.tolist()])
    new = np.unique(targets[before.numpy()[targets] == bfs_device.UNREACHED])
    assert sorted(nxt.tolist()) == new.tolist() and nf == len(new)
    assert nfe == int(lay.out_deg[new].sum()) and nfi == int(lay.in_deg[new].sum())
    assert (level[new] == 1).all() and int((level == 1).sum()) == len(new)
    assert bool((owner == empty).all())


@pytest.mark.filterwarnings("ignore::graphsys.errors.ConvergenceWarning")
def test_probe_launch_and_sync_budget(skewed, monkeypatch):
    """A bottom-up superstep that probes first launches PROBE_OPS more ops and reads the
    host once more (its two counts)."""
    g, _ = skewed
    monkeypatch.setattr(bfs_device, "PROBE_DEVICES", ("cpu",))
    steps = bsp.bfs(g, 0, backend="torch").stats.supersteps
    k = next(i for i, s in enumerate(steps) if s.edges_scanned > g.num_edges())  # + product
    launches, syncs, transfers = (a - b for a, b in zip(_counts(g, k + 1), _counts(g, k)))
    assert launches == PROBE_OPS + PULL_OPS + MARK_OPS and syncs == transfers == 2


@pytest.mark.parametrize("cost", [0.0, float("inf")])
def test_every_pull_whole_or_unreached_gives_the_same_levels(skewed, cost, monkeypatch):
    """Every bottom-up superstep over the unreached vertices' in-edges (cost 0), or none
    (cost inf): the levels of the default, and the CPU search's directions."""
    g, _ = skewed
    for source in (0, 5, 17):
        want = bsp.bfs(g, source, backend="torch")
        monkeypatch.setattr(bfs_device, "UNREACHED_PULL_COST", cost)
        got = bsp.bfs(g, source, backend="torch")
        monkeypatch.undo()
        np.testing.assert_array_equal(got.values, want.values)
        assert [s.direction for s in got.stats.supersteps] == [
            s.direction for s in want.stats.supersteps]
        pulls = [s.edges_scanned for s in got.stats.supersteps if s.direction == "pull"]
        assert pulls and (all(e < g.num_edges() for e in pulls) if cost == 0
                          else all(e == g.num_edges() for e in pulls))


@pytest.fixture(scope="module")
def rmat(tmp_path_factory):
    """A directed R-MAT (4,096 ids, 60,000 edges), whose BFS from its highest-degree vertex
    has a large bottom-up level, and that vertex."""
    from graphsys.generators import rmat_edges

    chunks = list(rmat_edges(1 << 12, 60_000, seed=3))
    src, dst = (np.concatenate([c[k] for c in chunks]) for k in ("src", "dst"))
    g = graphsys.from_numpy(src, dst, tmp_path_factory.mktemp("rmat") / "g", partitions=2)
    hub = g.to_original([int(g.degrees(direction="out").argmax())])
    return g, int(np.asarray(hub.to_pylist() if hasattr(hub, "to_pylist") else hub)[0])


def _probed_scans(g, levels: np.ndarray, steps, k: int) -> list[int]:
    """Each bottom-up superstep's in-edges read, as the probe reads them: where the
    unreached vertices' in-edges are too many to read alone, the first ``k`` of each
    unreached vertex's in-edges (build_adjacency's in-lists, the device's order), then the
    in-edges of those still unreached, alone or all of them by the product."""
    from graphsys.bsp.edges import build_adjacency

    ptr, idx, _ = build_adjacency(g, g.edge_set(None).name, "csc", False)
    indeg, m = np.diff(ptr), len(idx)
    rows = np.repeat(np.arange(len(indeg)), indeg)
    first = (np.arange(m) - ptr[rows]) < k
    cost = bfs_device.UNREACHED_PULL_COST
    out = []
    for s in steps:
        if s.direction != "pull":
            continue
        d = s.superstep
        unreached = ~(levels <= d)
        left = int(indeg[unreached].sum())
        if left * cost < m:
            out.append(left)
            continue
        found = np.zeros(len(indeg), bool)
        found[rows[first & (levels[idx] == d)]] = True
        found &= unreached
        rest = left - int(indeg[found].sum())
        out.append(int(np.minimum(indeg, k)[unreached].sum())
                   + (rest if rest * cost < m else m))
    return out


@pytest.mark.parametrize("k", [4, 1])
def test_probe_reads_the_first_in_edges_then_the_rest(rmat, skewed, k, monkeypatch):
    """With the probe (on the CPU here): the levels of the CPU search and the directions of
    the search without it, each bottom-up superstep reading the in-edges the early exit
    leaves (see _probed_scans); on the R-MAT's largest bottom-up level far fewer than the
    product's every in-edge."""
    monkeypatch.setattr(bfs_device, "PROBE_EDGES", k)
    for g, source in (rmat, (skewed[0], 0), (skewed[0], 17)):
        monkeypatch.setattr(bfs_device, "PROBE_DEVICES", ())
        whole = bsp.bfs(g, source, backend="torch").stats.supersteps
        monkeypatch.setattr(bfs_device, "PROBE_DEVICES", ("cpu",))
        got = bsp.bfs(g, source, backend="torch")
        np.testing.assert_array_equal(got.values, bsp.bfs(g, source).values)
        assert [s.direction for s in got.stats.supersteps] == [s.direction for s in whole]
        pulls = [s.edges_scanned for s in got.stats.supersteps if s.direction == "pull"]
        assert pulls == _probed_scans(g, got.values, got.stats.supersteps, k)
        if g is rmat[0]:
            biggest = max(s.edges_scanned for s in whole)
            assert biggest == g.num_edges()
            assert 4 * max(s.edges_scanned for s in got.stats.supersteps) < biggest


def test_probe_on_the_device(rmat, device, monkeypatch):
    """On the test device with the probe: scipy's levels."""
    import torch

    g, source = rmat
    monkeypatch.setattr(bfs_device, "PROBE_DEVICES", (torch.device(device).type,))
    res = bsp.bfs(g, source, mode="memory", backend="torch", device=device)
    np.testing.assert_array_equal(res.values, bsp.bfs(g, source).values)


@pytest.mark.parametrize("packed", ["packed", "wide-short", "int32-pairs"])
@pytest.mark.parametrize("key", ["directed-p3", "undirected-p3", "chain"])
def test_layout_built_on_the_device_equals_the_host_build(graphs, key, packed, monkeypatch):
    """The edge list uploaded through the staging ring and sorted on the device (a CUDA
    run's build, here on CPU tensors) gives build_adjacency's arrays exactly, and the same
    levels: blocks of 5 edges (the ring's 4 slots reused many times), batches packed into
    one word an edge, with a side stream of the offsets' higher bits, or not."""
    import torch

    from graphsys.bsp import device_stream
    from graphsys.bsp.edges import build_adjacency
    from tests.bsp.test_device_stream import PACK_MODES

    monkeypatch.setattr(device_stream, "BLOCK_ROWS", 5)
    low, hi = PACK_MODES[packed]
    monkeypatch.setattr(device_stream, "PACK_LOW", low)
    monkeypatch.setattr(device_stream, "HI_BITS", hi)
    g = graphs[key].graph
    es = g.edge_set(None).name
    adj, nbytes = device_stream.device_adjacency(g, es, torch.device("cpu"), ("csr", "csc"))
    sizes = np.diff(g.partition_offsets())
    blocks = [(len(eb), device_stream.packing(sizes[b.i], sizes[b.j]))
              for b in g.buckets("row-major", es)
              for eb in device_stream.blocks(list(b.batches()))]
    assert {pack is None for _, pack in blocks} == {packed == "int32-pairs"}
    assert nbytes == sum(4 * device_stream.words(k, pack, False) for k, pack in blocks)
    for kind, (ptr, idx) in zip(("csr", "csc"), adj):
        ref_ptr, ref_idx, _ = build_adjacency(g, es, kind, False)
        assert ptr.dtype == idx.dtype == torch.int32
        np.testing.assert_array_equal(ptr.numpy(), ref_ptr)
        np.testing.assert_array_equal(idx.numpy(), ref_idx)
    host = bsp.bfs(g, 0, backend="torch")
    monkeypatch.setattr(device_stream, "DEVICE_BUILDS", ("cpu",))
    built = bsp.bfs(g, 0, backend="torch")
    assert built.stats.method == host.stats.method
    np.testing.assert_array_equal(built.values, host.values)
