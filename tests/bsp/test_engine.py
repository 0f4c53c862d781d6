"""The engine itself: user-defined programs, custom messages and combiners, device and
backend selection, statistics."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from scipy.sparse import csgraph, csr_matrix

import graphsys
from graphsys import bsp
from graphsys.bsp.edges import SPARSE_CSR_DEVICES
from graphsys.bsp.engine import resolve_backend
from graphsys.device import resolve_device
from graphsys.errors import ConvergenceWarning, GraphsysError, ParameterError

from .conftest import MODES


class InDegreeSum(bsp.VertexProgram):
    """One superstep: every vertex sums ``2 * id`` of its in-neighbours through a custom
    message function (torch path)."""

    name = "in-sum"
    message = staticmethod(lambda xs, w: 2.0 * xs)
    combiner = "sum"

    def init(self, ctx):
        return {"v": ctx.full(0.0)}, torch.ones(ctx.num_local, dtype=torch.bool, device=ctx.device)

    def send(self, ctx, state):
        return ctx.node_range().to(torch.float64)

    def update(self, ctx, state, combined, received):
        state["v"] = combined
        return torch.zeros_like(received), {}

    def result(self, ctx, state):
        return state["v"]


class MaxLabel(bsp.VertexProgram):
    """Max-label propagation with a custom combiner (components by largest id)."""

    name = "max-label"
    message = "copy"
    direction = "both"

    class _Max(bsp.Combiner):
        identity = float("-inf")

        def combine(self, index, values, num_targets):
            out = torch.full((num_targets,), self.identity, dtype=torch.float64,
                             device=values.device)
            return out.scatter_reduce_(0, index, values, "amax")

    combiner = _Max()

    def init(self, ctx):
        return {"l": ctx.node_range().to(torch.float64)}, ctx.full(True, dtype=torch.bool)

    def send(self, ctx, state):
        return state["l"]

    def update(self, ctx, state, combined, received):
        new = received & (combined > state["l"])
        state["l"] = torch.where(new, combined, state["l"])
        return new, {}

    def result(self, ctx, state):
        return state["l"]


@pytest.mark.parametrize("mode,backend", MODES)
def test_custom_message_function(graphs, mode, backend, device):
    tg = graphs["directed-p3"]
    res = bsp.run(tg.graph, InDegreeSum(), mode=mode, backend=backend, device=device)
    ids = np.arange(tg.n, dtype=np.float64)
    np.testing.assert_allclose(res.values, tg.count.T @ (2 * ids))
    assert res.stats.num_supersteps == 1 and res.stats.converged


@pytest.mark.parametrize("mode", ["memory", "out-of-core"])
def test_custom_combiner(graphs, mode, device):
    tg = graphs["directed-p3"]
    res = bsp.run(tg.graph, MaxLabel(), mode=mode, max_iters=1000, device=device)
    _, comp = csgraph.connected_components(tg.count, connection="weak")
    for c in np.unique(comp):
        members = np.flatnonzero(comp == c)
        assert (res.values[members] == members.max()).all()


def test_superstep_statistics(graphs):
    tg = graphs["undirected-p3"]
    res = bsp.wcc(tg.graph, mode="out-of-core")
    st = res.stats
    assert st.mode == "out-of-core" and st.backend == "numba" and st.world_size == 1
    s0 = st.supersteps[0]
    assert s0.active == tg.n and s0.direction == "stream"
    assert s0.edges_scanned == tg.graph.num_edges()
    assert s0.messages_sent == tg.graph.num_edges()
    assert 0 < s0.messages_combined <= tg.n
    assert s0.bytes_read == tg.graph.num_edges() * 8  # int32 src + dst, weights not read
    assert st.supersteps[-1].active > 0 and st.converged
    table = st.to_table()
    assert table.num_rows == st.num_supersteps
    assert {"active", "messages_sent", "edges_scanned", "bytes_read", "bytes_h2d",
            "seconds_edges", "seconds_communicate"} <= set(table.column_names)
    d = st.to_dict()
    assert d["totals"]["edges_scanned"] == sum(s.edges_scanned for s in st.supersteps)
    mem = bsp.wcc(tg.graph).stats
    assert mem.supersteps[0].bytes_read == 0 and mem.setup_seconds > 0


def test_device_selection():
    assert resolve_device("cpu") == torch.device("cpu")
    assert resolve_device("auto").type == ("cuda" if torch.cuda.is_available() else "cpu")
    assert resolve_backend("auto", torch.device("cpu")) == "numba"
    assert resolve_backend("auto", torch.device("cuda")) == "torch"
    with pytest.raises(GraphsysError, match="CPU only"):
        resolve_backend("numba", torch.device("cuda"))
    with pytest.raises(GraphsysError, match="unknown device"):
        resolve_device("tpu")
    for name in ("cuda:-1", "cuda:x", "cudax"):     # torch's RuntimeError where CUDA is
        with pytest.raises(ParameterError, match="not a CUDA device"):
            resolve_device(name)
    if not torch.cuda.is_available():
        with pytest.raises(GraphsysError, match="no CUDA device"):
            resolve_device("cuda")


@pytest.mark.parametrize("mode", ["memory", "out-of-core"])
def test_device_run_matches_cpu(graphs, mode, device):
    """A run on the test device gives the CPU's ranks (within 1e-9: the GPU sums with
    atomics, in no fixed order) and levels, and counts its host-to-device copies."""
    if device == "cpu":
        pytest.skip("compares a device run with the CPU run (--device cuda)")
    tg = graphs["directed-p3"]
    cpu = bsp.pagerank(tg.graph, tol=1e-12)
    gpu = bsp.pagerank(tg.graph, tol=1e-12, device=device, mode=mode)
    assert np.abs(cpu.values - gpu.values).sum() < 1e-9
    assert gpu.stats.device.startswith(device)
    if mode == "memory":  # the adjacency goes up once, while the degrees are counted
        assert gpu.stats.setup_bytes_h2d > 0 and gpu.stats.totals()["bytes_h2d"] == 0
    else:  # it fits the default budget: unweighted, the lean matrix built there from the
        # buckets (weighted, as here by default, the engine's supersteps run)
        lean = bsp.pagerank(tg.graph, tol=1e-12, device=device, mode=mode, weighted=False)
        if torch.device(device).type in SPARSE_CSR_DEVICES:  # lazy: the engine's supersteps
            assert lean.stats.method.startswith("fused-pagerank (device SpMV")
            assert lean.stats.setup_bytes_h2d > 0 and lean.stats.totals()["bytes_h2d"] == 0
            assert lean.stats.resident_bytes > 0
        assert np.abs(bsp.pagerank(tg.graph, tol=1e-12, weighted=False).values
                      - lean.values).sum() < 1e-9
        streamed = bsp.pagerank(tg.graph, tol=1e-12, device=device, mode=mode,
                                device_budget=0)  # every superstep copies every batch
        assert streamed.stats.method == "supersteps"
        assert all(s.bytes_h2d > 0 for s in streamed.stats.supersteps)
        assert np.abs(cpu.values - streamed.values).sum() < 1e-9
    np.testing.assert_array_equal(bsp.bfs(tg.graph, 0, device=device, mode=mode).values,
                                  bsp.bfs(tg.graph, 0).values)


def test_bad_options(graphs):
    g = graphs["directed-p1"].graph
    with pytest.raises(GraphsysError, match="mode must be one of auto, memory, out-of-core"):
        bsp.pagerank(g, mode="disk")
    with pytest.raises(ParameterError, match="max_iters must be a positive integer"):
        bsp.pagerank(g, max_iters=0)
    with pytest.raises(GraphsysError, match="backend must be one of auto, numba, torch"):
        bsp.pagerank(g, backend="cupy")
    with pytest.raises(GraphsysError, match="unknown edge set"):
        bsp.pagerank(g, edge_set="nope")
    # a string was read by its truth: fuse="no" fused BFS, store_index="no" stored an index
    with pytest.raises(ParameterError, match="^fuse must be True or False, got 'no'"):
        bsp.bfs(g, 0, fuse="no")
    with pytest.raises(ParameterError, match="^store_index must be True or False, got 'no'"):
        bsp.pagerank(g, store_index="no")
    # dense_divisor=0 raised ZeroDivisionError, -1 and NaN ran; readahead None a TypeError
    for bad in (0, -1.0, float("nan"), "20"):
        with pytest.raises(ParameterError, match="^dense_divisor must be a finite number > 0"):
            bsp.bfs(g, 0, dense_divisor=bad, fuse=False)
    for bad in (-1, 1.5, None):
        with pytest.raises(ParameterError, match="^readahead must be a non-negative integer"):
            bsp.pagerank(g, readahead=bad, mode="out-of-core")

    class Bad(InDegreeSum):
        combiner = "median"

    with pytest.raises(GraphsysError, match="unknown combiner 'median'"):
        bsp.run(g, Bad())


@pytest.mark.parametrize("algorithm", ["kcore", "label_propagation"])
def test_a_run_cut_by_max_iters_is_converged_only_with_the_full_values(tmp_path, algorithm):
    """Programs that act on an empty frontier (k-core raising k, label propagation's
    rounds) halt by their vote: stopped at max_iters with an empty frontier they said
    converged=True (k-core at max_iters 2 summed 1 core number where the run gives 268)."""
    import networkx as nx

    g = graphsys.from_networkx(nx.gnp_random_graph(60, 0.05, seed=1, directed=True),
                               tmp_path / "g")
    run = getattr(bsp, algorithm)
    full = run(g, schedule="sync")
    assert full.stats.converged
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for limit in range(1, full.stats.num_supersteps):
            cut = run(g, schedule="sync", max_iters=limit)
            assert not cut.stats.converged, limit
    assert run(g, schedule="sync", max_iters=full.stats.num_supersteps).stats.converged


@pytest.mark.parametrize("device", ["cpu", "auto", torch.device("cpu")])
def test_numpy_state_runs_however_the_cpu_is_named(tmp_path, device):
    """A builtin program's NumPy state (the torch-free CPU run) is taken whether the CPU is
    named ``"cpu"``, ``"auto"`` on a machine whose pick is the CPU, or a torch.device; a
    fast path that declines (``schedule="sync"``) hands the superstep loop tensors."""
    import graphsys

    if device == "auto" and torch.cuda.is_available():
        pytest.skip("auto picks the GPU here")
    g = graphsys.from_numpy(np.array([1, 2, 3, 1, 5]), np.array([2, 3, 4, 3, 1]),
                            tmp_path / "g")
    want = {1: 0.0, 2: 1.0, 3: 1.0, 4: 2.0, 5: np.inf}
    fast = bsp.bfs(g, 1, device=device)
    assert fast.to_dict() == want and fast.stats.method == "direction-optimizing-bfs"
    assert bsp.bfs(g, 1, device=device, schedule="sync").to_dict() == want
    assert len(set(bsp.wcc(g, device=device).to_dict().values())) == 1
    ranks = bsp.pagerank(g, device=device).values
    assert np.allclose(ranks, bsp.pagerank(g, device=device, backend="torch").values)


def test_an_adjacency_over_the_available_ram_is_refused_in_one_line(tmp_path, monkeypatch):
    """An in-memory run on a graph without an index sizes the rows it builds against the
    RAM available (the BSP engine's budget): over it, one line naming the ``graphsys
    index`` command, never a build the machine cannot hold; with the index stored the rows
    are mapped, no build, and the run's answer is scipy's. A run that needs both
    directions (a direction-optimizing BFS, Afforest on a directed edge set) names both
    indexes in its one refusal, not one per try."""
    from graphsys import memory
    from graphsys.storage.adjacency_index import build_index

    g = graphsys.from_numpy(np.arange(200) % 50, (np.arange(200) * 7 + 1) % 50,
                            tmp_path / "g", partitions=2)
    monkeypatch.setattr(memory, "available_memory", lambda: 1_000)  # of 1.4 KB of rows
    for run, kind in ((lambda: bsp.pagerank(g, store_index=False), "--csc"),
                      (lambda: bsp.bfs(g, 0), "--csr --csc"),
                      (lambda: bsp.wcc(g), "--csr --csc")):
        with pytest.raises(GraphsysError) as exc:
            run()
        message = str(exc.value)
        assert "\n" not in message and "more than the 1 KB of available RAM" in message
        assert message.endswith(f"graphsys index {g.path} {kind}")
    with pytest.raises(GraphsysError, match="available RAM"):
        g.csr()
    build_index(g, ("csr", "csc"), memory_limit=1 << 30)
    c = g.csr(weights=False)
    adj = csr_matrix((np.ones(len(c.indices)), c.indices, c.indptr), shape=(50, 50))
    expected = csgraph.shortest_path(adj, unweighted=True, indices=int(g.to_internal([0])[0]))
    np.testing.assert_array_equal(bsp.bfs(g, 0).values, expected)


@pytest.mark.parametrize("accept", [False, True], ids=["all-targets", "accepting"])
def test_in_memory_push_waits_only_for_its_counts(graphs, accept):
    """An in-memory push superstep on the torch path (the device emulated on the CPU):
    the frontier's ids and their out-edges' count are the host reads (its edge lists then
    made with their sizes known: the expansions' own two reads are gone); with targets to
    accept, the edges of the others go to the spare target, counted by one more read (two
    compactions' reads before). The same sums as the numba path's."""
    from graphsys.analysis.device_counts import DeviceWorkCounter
    from graphsys.bsp.algorithms.traversal import SSSP
    from graphsys.bsp.engine import open_edges

    g = graphs["directed-p3"].graph
    n = g.num_nodes()
    gen = torch.Generator().manual_seed(4)
    x = torch.rand(n, dtype=torch.float64, generator=gen)
    active = torch.zeros(n, dtype=torch.bool)
    active[:3] = True
    targets = torch.rand(n, generator=gen) < 0.5 if accept else None
    sums = {}
    for backend in ("torch", "numba"):
        edges = open_edges(g, g.edge_set(None).name, SSSP(0), torch.device("cpu"), backend)
        try:
            res = edges.run(x, active, 3, targets)  # the adjacency built
            if backend == "torch":
                with DeviceWorkCounter(device_tensors=[x, active] + [
                        t for t in [targets] if t is not None]) as c:
                    res = edges.run(x, active, 3, targets)
        finally:
            edges.close()
        assert res.direction == "push"
        sums[backend] = (np.asarray(res.acc), np.asarray(res.received, bool),
                         res.messages_sent)
    assert c.syncs == 2 + accept and "nonzero" in c.ops
    np.testing.assert_array_equal(sums["torch"][0], sums["numba"][0])
    np.testing.assert_array_equal(sums["torch"][1], sums["numba"][1])
    assert sums["torch"][2] == sums["numba"][2]
