"""Vector programs (``width`` d: (N, d) rows per vertex): feature propagation against scipy
with each combiner, PageRank of width 1 against the scalar PageRank, HITS against networkx,
in memory, out of core, on both backends and on 2 gloo ranks."""

from __future__ import annotations

from pathlib import Path

import networkx as nx
import numpy as np
import pyarrow as pa
import pytest
import torch

from graphsys import bsp
from graphsys.bsp.algorithms.pagerank import PageRankRows
from graphsys.errors import GraphsysError

from .conftest import GRAPH_KEYS, MODES, torchrun
from .vector_programs import JOBS, Propagate, features, reference


@pytest.mark.parametrize("mode,backend", MODES)
@pytest.mark.parametrize("key", ["directed-p1", "directed-p3"])
@pytest.mark.parametrize("combiner,direction", [("sum", "in"), ("min", "out"),
                                                ("max", "in"), ("sum", "both")])
def test_propagate_matches_scipy(graphs, key, mode, backend, combiner, direction, device):
    tg = graphs[key]
    x = features(tg.n, 5)
    res = bsp.run(tg.graph, Propagate(x, 3, combiner, direction), mode=mode, backend=backend,
                  device=device)
    adj = tg.adj + tg.adj.T if direction == "both" else tg.adj
    want = reference(adj, x, 3, combiner, "in" if direction == "both" else direction)
    np.testing.assert_allclose(res.values, want, rtol=1e-12, atol=1e-12)
    assert res.values.shape == (tg.n, 5) and res.stats.num_supersteps == 3


@pytest.mark.parametrize("mode,backend", MODES)
@pytest.mark.parametrize("key", GRAPH_KEYS)
def test_pagerank_width_one_is_the_scalar_pagerank(graphs, key, mode, backend, device):
    tg = graphs[key]
    # the torch backend's own PageRank loop reads its L1 change every few supersteps: the
    # engine's scalar supersteps (fuse off) are what the rows are compared with there
    scalar = bsp.pagerank(tg.graph, tol=1e-12, mode=mode, backend=backend, weighted=False,
                          device=device, fuse=backend != "torch")
    rows = bsp.run(tg.graph, PageRankRows(tol=1e-12), mode=mode, backend=backend,
                   device=device)
    np.testing.assert_allclose(rows.values, scalar.values, rtol=1e-12, atol=1e-15)
    assert rows.stats.num_supersteps == scalar.stats.num_supersteps


@pytest.mark.parametrize("mode,backend", MODES)
@pytest.mark.parametrize("key", GRAPH_KEYS)
def test_hits_matches_networkx(graphs, key, mode, backend, device):
    tg = graphs[key]
    # the stored edges as networkx sees them (an undirected set stores both directions,
    # each with the weight of the input edge it came from)
    g = nx.from_scipy_sparse_array(tg.adj, create_using=nx.DiGraph)
    hubs, auths = nx.hits(g, max_iter=2000, tol=1e-12)  # networkx 3.7: 100 may not do
    res = bsp.hits(tg.graph, tol=1e-13, max_iters=2000, mode=mode, backend=backend,
                   device=device)
    assert res.stats.converged and res.values.shape == (tg.n, 2)
    np.testing.assert_allclose(res.values[:, 0], [hubs[v] for v in range(tg.n)], atol=1e-9)
    np.testing.assert_allclose(res.values[:, 1], [auths[v] for v in range(tg.n)], atol=1e-9)


@pytest.mark.parametrize("weighted", [False, True])
def test_hits_in_memory_pulls_with_the_shared_product(graphs, monkeypatch, weighted):
    """In memory, HITS' two pulls per iteration are the shared weighted product
    (graphsys.kernels.centrality.pull_product), one a superstep, with the supersteps'
    values (the edge weights read only on a weighted run)."""
    from graphsys.bsp import kernels_centrality

    tg = graphs["directed-p3"]
    sync = bsp.hits(tg.graph, tol=1e-12, schedule="sync", weighted=weighted)
    pulls = []

    def counted(indptr, indices, weight, x, y):
        pulls.append(len(weight))
        return pull_product(indptr, indices, weight, x, y)

    pull_product = kernels_centrality.pull_product
    monkeypatch.setattr(kernels_centrality, "pull_product", counted)
    res = bsp.hits(tg.graph, tol=1e-12, weighted=weighted)
    assert res.stats.method == "fused-hits" and len(pulls) == len(res.stats.supersteps)
    assert all((n > 0) == weighted for n in pulls)
    np.testing.assert_allclose(res.values, sync.values, rtol=1e-12, atol=1e-15)


def test_vector_result_table(graphs):
    tg = graphs["directed-p3"]
    res = bsp.run(tg.graph, Propagate(features(tg.n, 2), 1))
    col = res.to_table().column("value")
    assert col.type == pa.list_(pa.float64(), 2)
    np.testing.assert_array_equal(np.stack(col.to_pylist()), res.values)


def test_two_ranks(graphs, tmp_path):
    tg = graphs["directed-p3"]
    out = tmp_path / "vec"
    torchrun(Path(__file__).with_name("vector_programs.py"), tg.path, out)
    for name, make in JOBS:
        got = np.load(f"{out}.{name}.npy")
        want = bsp.run(tg.graph, make(tg.n)).values
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15, err_msg=name)


def test_hits_two_ranks(graphs):
    from graphsys.bsp.launch import spawn

    tg = graphs["directed-p3"]
    (values, stats), = spawn(tg.path, [("hits", (), {"tol": 1e-12})], world_size=2)
    np.testing.assert_allclose(values, bsp.hits(tg.graph, tol=1e-12).values, rtol=1e-12)
    assert stats["world_size"] == 2 and stats["totals"]["messages_exchanged"] > 0


class _Wrong(Propagate):
    def send(self, ctx, state):
        return state["x"][:, :1]


@pytest.mark.parametrize("width,match", [(0, "width must be None"), (2.0, "width must be"),
                                         (None, r"send\(\) returned the values as a float64 "
                                                r"tensor of shape")])
def test_bad_width_is_one_line(graphs, width, match):
    prog = _Wrong(features(graphs["directed-p1"].n, 2), 1)
    if width is not None:
        prog.width = width
    with pytest.raises(GraphsysError, match=match):
        bsp.run(graphs["directed-p1"].graph, prog)


def test_vector_program_refuses_custom_combiner(graphs):
    prog = Propagate(features(graphs["directed-p1"].n, 2), 1)
    prog.combiner = bsp.ModeCombiner()
    with pytest.raises(GraphsysError, match="builtin combiner"):
        bsp.run(graphs["directed-p1"].graph, prog)


def test_context_full_rows():
    ctx = bsp.Context(graph=None, num_nodes=5, lo=1, hi=4, device=torch.device("cpu"))
    assert ctx.full(2.0, width=3).shape == (3, 3) and ctx.full(1.0).shape == (3,)


class _FewSenders(Propagate):
    """Only vertices 3, 50 and 101 send (a sparse frontier: the push kernels)."""

    SENDERS = [3, 50, 101]

    def init(self, ctx):
        state, _ = super().init(ctx)
        self.active = torch.zeros(ctx.num_local, dtype=torch.bool, device=ctx.device)
        self.active[[s - ctx.lo for s in self.SENDERS if ctx.lo <= s < ctx.hi]] = True
        return state, self.active

    def update(self, ctx, state, combined, received):
        return self.active, super().update(ctx, state, combined, received)[1]


@pytest.mark.parametrize("mode,backend", MODES)
@pytest.mark.parametrize("combiner", ["sum", "max"])
def test_sparse_frontier_pushes_rows(graphs, mode, backend, combiner, device):
    tg = graphs["directed-p3"]
    x = features(tg.n, 3)
    res = bsp.run(tg.graph, _FewSenders(x, 2, combiner, "out"), mode=mode, backend=backend,
                  device=device)
    if mode == "memory":
        assert {s.direction for s in res.stats.supersteps} == {"push"}
    keep = np.zeros(tg.n)
    keep[_FewSenders.SENDERS] = 1.0
    senders_only = tg.adj.multiply(keep[:, None]).tocsr()  # rows = sources u of u -> v
    want = reference(senders_only, x, 2, combiner, "out")
    np.testing.assert_allclose(res.values, want, rtol=1e-12, atol=1e-12)
