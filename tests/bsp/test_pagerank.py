"""PageRank and personalized PageRank against scipy power iteration and networkx."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp

from graphsys import bsp
from graphsys.errors import GraphsysError, ParameterError

from .conftest import GRAPH_KEYS, MODES, to_global


def scipy_pagerank(count: sp.csr_matrix, damping=0.85, p=None, tol=1e-14, max_iter=10_000):
    """Power iteration of networkx's definition on the multi-edge count matrix (or the
    summed weights: weighted PageRank)."""
    n = count.shape[0]
    outdeg = np.asarray(count.sum(axis=1)).ravel()
    dangling = outdeg == 0
    inv = np.where(dangling, 0.0, 1.0 / np.where(dangling, 1.0, outdeg))
    p = np.full(n, 1.0 / n) if p is None else p / p.sum()
    at = count.T.tocsr()
    x = np.full(n, 1.0 / n)
    for _ in range(max_iter):
        new = damping * (at @ (x * inv) + x[dangling].sum() * p) + (1 - damping) * p
        if np.abs(new - x).sum() < tol:
            return new
        x = new
    raise AssertionError("reference did not converge")


@pytest.mark.parametrize("key", GRAPH_KEYS)
@pytest.mark.parametrize("mode,backend", MODES)
@pytest.mark.parametrize("weighted", [None, False])
def test_pagerank_matches_power_iteration(graphs, key, mode, backend, weighted, device):
    """The graphs are weighted: by default the walk follows the weights, weighted=False
    counts every edge once."""
    tg = graphs[key]
    res = bsp.pagerank(tg.graph, tol=1e-12, mode=mode, backend=backend, weighted=weighted,
                       device=device)
    ref = scipy_pagerank(tg.count if weighted is False else tg.adj)
    assert res.stats.weighted is (weighted is None)
    assert np.abs(res.values - ref).sum() < 1e-6
    assert res.values.sum() == pytest.approx(1.0, abs=1e-9)
    assert res.stats.converged
    # every superstep scans every edge once (dense: all vertices active)
    assert {s.edges_scanned for s in res.stats.supersteps} == {tg.graph.num_edges()}


@pytest.mark.parametrize("key", ["directed-p3", "undirected-p1"])
@pytest.mark.parametrize("weighted", [True, False])
def test_pagerank_matches_networkx(graphs, key, weighted):
    tg = graphs[key]
    res = bsp.pagerank(tg.graph, tol=1e-12, damping=0.9, weighted=weighted)
    G = nx.DiGraph()
    G.add_nodes_from(range(tg.n))
    r, c = tg.adj.nonzero()
    G.add_weighted_edges_from(zip(r.tolist(), c.tolist(), tg.adj[r, c].A1.tolist()))
    ref = nx.pagerank(G, alpha=0.9, tol=1e-15, max_iter=10_000,
                      weight="weight" if weighted else None)
    assert np.abs(res.values - np.array([ref[v] for v in range(tg.n)])).sum() < 1e-6


@pytest.mark.parametrize("mode,backend", MODES)
def test_personalized_pagerank(graphs, mode, backend, device):
    tg = graphs["directed-p3"]
    sources = [3, 17]
    p = np.zeros(tg.n)
    for s in sources:
        p[to_global(tg, s)] = 1.0
    for weighted, matrix in ((None, tg.adj), (False, tg.count)):
        res = bsp.personalized_pagerank(tg.graph, sources, tol=1e-12, mode=mode,
                                        backend=backend, weighted=weighted, device=device)
        assert np.abs(res.values - scipy_pagerank(matrix, p=p)).sum() < 1e-6
    assert res.stats.algorithm == "ppr"


def test_pagerank_stops_at_max_iters(graphs):
    res = bsp.pagerank(graphs["directed-p1"].graph, tol=1e-15, max_iters=3)
    assert res.stats.num_supersteps == 3 and not res.stats.converged


def test_pagerank_rejects_bad_parameters(graphs):
    g = graphs["directed-p1"].graph
    with pytest.raises(GraphsysError, match="damping"):
        bsp.pagerank(g, damping=1.5)
    with pytest.raises(GraphsysError, match="tol"):
        bsp.pagerank(g, tol=0)
    with pytest.raises(GraphsysError, match="not in the graph"):
        bsp.personalized_pagerank(g, [10_000])
    for kw in ({"damping": float("nan")}, {"damping": "0.5"}, {"tol": float("nan")},
               {"tol": float("inf")}, {"tol": 10**400}):  # 10**400: a raw OverflowError
        name = next(iter(kw))
        with pytest.raises(ParameterError, match=f"^{name} must be"):
            bsp.pagerank(g, **kw)
    with pytest.raises(ParameterError, match="^tol must be a finite number > 0, got nan"):
        bsp.hits(g, tol=float("nan"))


@pytest.mark.parametrize("mode,backend", MODES[:2])
def test_huge_source_weights_are_scaled_not_overflowed(graphs, mode, backend):
    """Weights whose sum overflows float64 teleport as their ratios do."""
    g = graphs["directed-p3"].graph
    want = bsp.personalized_pagerank(g, [3, 17, 5], weights=[1, 1, 0.5], tol=1e-12).values
    got = bsp.personalized_pagerank(g, [3, 17, 5], weights=[1e308, 1e308, 5e307], tol=1e-12,
                                    mode=mode, backend=backend)
    np.testing.assert_allclose(got.values, want, rtol=1e-12, atol=1e-15)
    assert got.stats.converged and abs(got.values.sum() - 1) < 1e-9
    # a repeated source adds its weights after scaling: no overflow either
    twice = bsp.personalized_pagerank(g, [3, 3], weights=[1e308, 1e308], tol=1e-12)
    np.testing.assert_allclose(twice.values, bsp.personalized_pagerank(g, [3], tol=1e-12).values,
                               rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("weights,match", [
    ([1, float("nan")], "got nan at position 1"), ([float("inf"), 1], "got inf at position 0"),
    ([1, -1], "got -1.0 at position 1"), ([0, 0], "got all zero"),
    (["a", 1], "must be numbers"), ([1], "one per source: 1 weights for 2 sources"),
])
def test_bad_source_weights_are_refused(graphs, weights, match):
    with pytest.raises(GraphsysError, match=f"^personalization weights .*{match}"):
        bsp.personalized_pagerank(graphs["directed-p1"].graph, [3, 17], weights=weights)


@pytest.mark.parametrize("sources,weights", [([3], None), ([3], [2.0]), ([3, 17], None)])
def test_unconverged_personalized_pagerank_warns(graphs, sources, weights):
    """Every form of the call warns where it stops at max_iters: several sources or
    weights (run outside the registered one-source path) returned converged=False
    without a warning."""
    from graphsys.errors import ConvergenceWarning

    with pytest.warns(ConvergenceWarning, match="^ppr did not converge within 2 supersteps"):
        res = bsp.personalized_pagerank(graphs["directed-p1"].graph, sources,
                                        weights=weights, max_iters=2)
    assert not res.stats.converged


def test_pagerank_program_checks_its_personalization(graphs):
    g = graphs["directed-p1"].graph
    p = np.zeros(g.num_nodes())
    p[4] = np.nan
    with pytest.raises(GraphsysError, match="^personalization must be finite"):
        bsp.PageRank(personalization=p)
    with pytest.raises(GraphsysError, match=r"^personalization has 3 weights for 240 nodes"):
        bsp.run(g, bsp.PageRank(personalization=np.ones(3)))


@pytest.mark.parametrize("key", ["directed-p3", "undirected-p1"])
def test_hub_sorted_pull_matches_the_plain_pull(graphs, key, monkeypatch):
    """Large graphs pull through sources renumbered by frequency (hub sorting); forcing
    it on a small graph gives the same ranks as the plain pull and the reference."""
    tg = graphs[key]
    plain = bsp.pagerank(tg.graph, tol=1e-12, weighted=False)
    monkeypatch.setattr(bsp.edges, "HUB_SORT_BYTES", 0)
    hub = bsp.pagerank(tg.graph, tol=1e-12, weighted=False)
    assert np.abs(hub.values - scipy_pagerank(tg.count)).sum() < 1e-6
    assert np.abs(hub.values - plain.values).sum() < 1e-12


@pytest.mark.parametrize("paging", [False, True])
def test_out_of_core_pagerank_is_bitwise_repeatable(graphs, paging, monkeypatch):
    """Out of core, each target partition sums its messages in a fixed bucket order
    whatever the thread timing or count, so runs agree bit for bit; with page advice on
    (read-ahead and release of consumed batches) the ranks stay the same."""
    tg = graphs["directed-p3"]
    if paging:
        monkeypatch.setattr(bsp.stream, "RESIDENT_EDGE_BYTES", 0)
    for weighted, matrix in ((False, tg.count), (True, tg.adj)):
        runs = [bsp.pagerank(tg.graph, tol=1e-12, mode="out-of-core", threads=t,
                             weighted=weighted).values for t in (2, 2, 2, 1)]
        assert all(np.array_equal(runs[0], r) for r in runs[1:])
        assert np.abs(runs[0] - scipy_pagerank(matrix)).sum() < 1e-6


@pytest.mark.parametrize("key", GRAPH_KEYS)
@pytest.mark.parametrize("mode", ["memory", "out-of-core"])
@pytest.mark.parametrize("hub_sort", [False, True])
def test_float32_sums_stay_within_their_bound(graphs, key, mode, hub_sort, monkeypatch):
    """``sum_dtype="float32"`` rounds the sent values (and, out of core, the sums) to
    float32: every iteration's pulled sum is within the documented relative bound
    ((in-degree + 1) * 2^-24), so the ranks stay within a small multiple of it of the
    float64 reference, and they differ from the float64 run (the option does something)."""
    tg = graphs[key]
    if hub_sort:
        monkeypatch.setattr(bsp.edges, "HUB_SORT_BYTES", 0)
    f64 = bsp.pagerank(tg.graph, tol=1e-10, mode=mode, max_iters=200, weighted=False)
    f32 = bsp.pagerank(tg.graph, tol=1e-10, mode=mode, max_iters=200, sum_dtype="float32",
                       weighted=False)
    ref = scipy_pagerank(tg.count)
    indeg = np.asarray(tg.count.sum(axis=0)).ravel()
    # a per-iteration relative error e on every sum moves the fixed point by at most
    # e * damping / (1 - damping) relative (a contraction of factor damping)
    bound = (indeg.max() + 1) * 2.0 ** -24 * 0.85 / 0.15
    assert np.abs(f32.values / ref - 1).max() < bound + 1e-9
    assert np.abs(f64.values - ref).sum() < 1e-8
    assert not np.array_equal(f32.values, f64.values)
    assert f32.values.sum() == pytest.approx(1.0, abs=1e-6)


def test_out_of_core_float32_sums_are_bitwise_repeatable(graphs):
    """Each target partition's float32 sums run in a fixed bucket order and join the
    float64 total once per partition, so thread counts give the same bits."""
    tg = graphs["directed-p3"]
    runs = [bsp.pagerank(tg.graph, tol=1e-10, mode="out-of-core", threads=t,
                         sum_dtype="float32", weighted=False).values for t in (2, 1)]
    assert np.array_equal(runs[0], runs[1])


def test_sum_dtype_is_checked(graphs):
    """A dtype outside float64/float32 is refused, and so is float32 on the torch backend
    (its sums are float64: the option would be silently ignored there)."""
    g = graphs["directed-p1"].graph
    with pytest.raises(GraphsysError, match="sum_dtype must be one of"):
        bsp.pagerank(g, sum_dtype="float16")
    for mode in ("memory", "out-of-core"):
        with pytest.raises(bsp.engine.ParameterError, match="^sum_dtype float32 sums run in "
                                                            "the numba CPU kernels"):
            bsp.pagerank(g, sum_dtype="float32", backend="torch", mode=mode, weighted=False)
    with pytest.raises(bsp.engine.ParameterError, match="^sum_dtype float32 sums apply to "
                                                        "unweighted runs"):
        bsp.pagerank(g, sum_dtype="float32")


def test_default_path_sends_float32_where_the_tolerance_allows(tmp_path):
    """The README's path (ingest, then ``bsp.pagerank(g)`` on its defaults; ``graphsys run
    pagerank`` alike) runs the fused in-memory loop with float32 sent values: within the
    documented bound of the float64 ranks, summing to 1. A tighter ``tol``, out of core,
    weighted runs and an explicit float64 keep float64."""

    import graphsys
    from graphsys.bsp.algorithms.pagerank import AUTO_FLOAT32_MIN_TOL
    from graphsys.generators import rmat_edges, write_edges

    write_edges(rmat_edges(1 << 12, 40_000, seed=3), tmp_path / "e.parquet")
    g = graphsys.ingest(tmp_path / "e.parquet", tmp_path / "g", partitions=2)
    assert not g.manifest.indexes  # the README's path stores no index
    auto = bsp.pagerank(g)
    assert auto.stats.method == "fused-pagerank, float32 sends"
    f64 = bsp.pagerank(g, sum_dtype="float64")
    assert f64.stats.method == "fused-pagerank"
    # the rounding moves the fixed point by at most damping * 2^-24 / (1 - damping) in L1,
    # far below what the stopping rule leaves (tol * damping / (1 - damping))
    assert np.abs(auto.values - f64.values).sum() < 0.85 * 2.0**-24 / 0.15 + 1e-12
    assert auto.values.sum() == pytest.approx(1.0, abs=1e-12)
    assert bsp.pagerank(g, tol=AUTO_FLOAT32_MIN_TOL / 10).stats.method == "fused-pagerank"
    assert bsp.pagerank(g, mode="out-of-core").stats.method == "supersteps"
    w = graphsys.from_numpy(np.array([0, 1, 2]), np.array([1, 2, 0]), tmp_path / "w",
                            weight=np.array([1.0, 2.0, 3.0]))
    assert "float32" not in bsp.pagerank(w).stats.method


def test_cli_default_names_the_float32_sends(tmp_path, capsys):
    import json

    import graphsys
    from graphsys.cli import main
    from graphsys.generators import rmat_edges, write_edges

    write_edges(rmat_edges(1 << 10, 8_000, seed=4), tmp_path / "e.parquet")
    graphsys.ingest(tmp_path / "e.parquet", tmp_path / "g")
    assert main(["run", "pagerank", str(tmp_path / "g"), "--json"]) == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert "float32 sends" in json.dumps(out)
    assert main(["run", "pagerank", str(tmp_path / "g"), "--sum-dtype", "float64",
                 "--json"]) == 0
    assert "float32 sends" not in capsys.readouterr().out


def test_default_path_stores_and_maps_the_push_index(tmp_path, monkeypatch):
    """The README's path on a graph in the push window: the first ``bsp.pagerank(g)`` stores
    the push index (and its CSC) and pushes over it from the first iteration; a later run on
    a fresh open maps it, with the same ranks, within the float32 bound of scipy's power
    iteration. Where it cannot be written (another writer holds the lock), the run pulls."""
    import importlib
    import shutil

    import graphsys
    from graphsys.generators import rmat_edges, write_edges
    from graphsys.storage.lock import writer_lock

    # the module (the package's ``pagerank`` name is the front-end function); the test
    # graph's rank vector fits any L2: the floor is lifted to put it in the window
    pagerank_module = importlib.import_module("graphsys.bsp.algorithms.pagerank")
    monkeypatch.setattr(pagerank_module, "PUSH_STORE_MIN_BYTES", 0)
    write_edges(rmat_edges(1 << 13, 80_000, seed=5), tmp_path / "e.parquet")
    g = graphsys.ingest(tmp_path / "e.parquet", tmp_path / "g", partitions=2)
    shutil.copytree(tmp_path / "g", tmp_path / "locked")
    assert not g.manifest.indexes
    first = bsp.pagerank(g)
    assert first.stats.method == ("fused-pagerank (push index, stored by this run, degree "
                                  "order), float32 sends")
    assert all(s.direction == "push" for s in first.stats.supersteps)
    assert set(g.manifest.indexes["default"]) == {"csc", "push"}
    again = bsp.pagerank(graphsys.open_graph(tmp_path / "g"))
    assert again.stats.method == "fused-pagerank (push index, degree order), float32 sends"
    np.testing.assert_array_equal(again.values, first.values)
    c = g.csr(weights=False)
    n = g.num_nodes()
    count = sp.csr_matrix((np.ones(len(c.indices)), c.indices, c.indptr), shape=(n, n))
    count.sum_duplicates()
    # the stopping rule leaves tol * a / (1 - a) in L1, the float32 sends a * 2^-24 / (1 - a)
    assert np.abs(first.values - scipy_pagerank(count)).sum() < (1e-6 + 2.0**-24) * 0.85 / 0.15
    with writer_lock(tmp_path / "locked"), pytest.warns(UserWarning,
                                                        match="another writer holds"):
        pulled = bsp.pagerank(graphsys.open_graph(tmp_path / "locked"))
    assert pulled.stats.method == "fused-pagerank, float32 sends"
    assert not graphsys.open_graph(tmp_path / "locked").manifest.indexes
    assert np.abs(pulled.values - first.values).sum() < 2e-6 * 0.85 / 0.15


def _directory_bytes(path):
    """Every file under ``path`` (relative name -> bytes)."""
    return {str(f.relative_to(path)): f.read_bytes() for f in sorted(path.rglob("*"))
            if f.is_file()}


def test_store_index_false_leaves_the_graph_directory_as_it_was(tmp_path, monkeypatch):
    """``store_index=False`` on a graph in the push window: no file of the graph directory
    (the manifest included) changes, and the ranks are the default run's (which stores the
    push index) to the stopping rule, for PageRank and personalized PageRank alike."""
    import importlib
    import shutil

    import graphsys
    from graphsys.generators import rmat_edges, write_edges

    pagerank_module = importlib.import_module("graphsys.bsp.algorithms.pagerank")
    monkeypatch.setattr(pagerank_module, "PUSH_STORE_MIN_BYTES", 0)
    write_edges(rmat_edges(1 << 13, 80_000, seed=5), tmp_path / "e.parquet")
    graphsys.ingest(tmp_path / "e.parquet", tmp_path / "g", partitions=2)
    shutil.copytree(tmp_path / "g", tmp_path / "stored")
    before = _directory_bytes(tmp_path / "g")
    kept = bsp.pagerank(graphsys.open_graph(tmp_path / "g"), tol=1e-10, store_index=False)
    ppr_kept = bsp.personalized_pagerank(tmp_path / "g", [0, 1], tol=1e-10, store_index=False)
    assert _directory_bytes(tmp_path / "g") == before
    assert "stored by this run" not in kept.stats.method
    default = bsp.pagerank(graphsys.open_graph(tmp_path / "stored"), tol=1e-10)
    assert "stored by this run" in default.stats.method  # the default does write
    assert _directory_bytes(tmp_path / "stored") != before
    ppr_default = bsp.personalized_pagerank(tmp_path / "stored", [0, 1], tol=1e-10)
    # both stop 1e-10 in L1 from their last step: within 2 * tol * a / (1 - a) of each other
    assert np.abs(kept.values - default.values).sum() < 2e-10 * 0.85 / 0.15
    assert np.abs(ppr_kept.values - ppr_default.values).sum() < 2e-10 * 0.85 / 0.15
    assert "store_index" not in kept.provenance["params"]  # not part of the answer
    from graphsys.bsp import incremental

    # graphsys run --init auto starts from a default run's output with the switch off
    assert incremental.same_run(default, "pagerank", {"tol": 1e-10, "store_index": False})


def test_a_failed_store_warns_once_and_is_not_tried_again(tmp_path, monkeypatch):
    """Where storing the push index fails (a full disk, simulated), the run warns in one
    line naming the cause and the ways to stop it, keeps its answer (scipy's power
    iteration's), and later runs on that graph in this process neither warn nor try the
    write again; ``store_index=False`` never tries it."""
    import importlib
    import warnings

    import graphsys
    from graphsys.generators import rmat_edges, write_edges

    pagerank_module = importlib.import_module("graphsys.bsp.algorithms.pagerank")
    monkeypatch.setattr(pagerank_module, "PUSH_STORE_MIN_BYTES", 0)
    monkeypatch.setattr(pagerank_module, "_STORE_FAILED", set())
    calls = []

    def full_disk(graph, kinds, **kwargs):
        calls.append(kinds)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(pagerank_module, "build_index", full_disk)
    write_edges(rmat_edges(1 << 13, 80_000, seed=5), tmp_path / "e.parquet")
    g = graphsys.ingest(tmp_path / "e.parquet", tmp_path / "g", partitions=2)
    with pytest.warns(UserWarning) as caught:
        first = bsp.pagerank(g, tol=1e-10)
    messages = [str(w.message) for w in caught]
    assert len(messages) == 1 and "\n" not in messages[0], messages
    assert "could not store the push index" in messages[0]
    assert "No space left on device" in messages[0]
    assert "store_index=False" in messages[0] and "graphsys index" in messages[0]
    assert len(calls) == 1 and "stored by this run" not in first.stats.method
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = bsp.pagerank(graphsys.open_graph(tmp_path / "g"), tol=1e-10)
        bsp.pagerank(tmp_path / "g", tol=1e-10, store_index=False)
    assert len(calls) == 1
    np.testing.assert_array_equal(again.values, first.values)
    c = g.csr(weights=False)
    n = g.num_nodes()
    count = sp.csr_matrix((np.ones(len(c.indices)), c.indices, c.indptr), shape=(n, n))
    count.sum_duplicates()
    assert np.abs(first.values - scipy_pagerank(count)).sum() < 1e-10 * 0.85 / 0.15
    assert not graphsys.open_graph(tmp_path / "g").manifest.indexes


def test_the_push_index_is_stored_within_the_available_ram(tmp_path, monkeypatch):
    """The first in-memory run stores the push index within the run's budget, the RAM
    available now: where that is below the build's least (64 MiB and up), the store is
    refused with a warning naming the cause, and the run pulls to scipy's ranks."""
    import importlib

    import graphsys
    from graphsys import memory
    from graphsys.generators import rmat_edges, write_edges

    pagerank_module = importlib.import_module("graphsys.bsp.algorithms.pagerank")
    monkeypatch.setattr(pagerank_module, "PUSH_STORE_MIN_BYTES", 0)
    monkeypatch.setattr(pagerank_module, "_STORE_FAILED", set())
    write_edges(rmat_edges(1 << 13, 80_000, seed=5), tmp_path / "e.parquet")
    g = graphsys.ingest(tmp_path / "e.parquet", tmp_path / "g", partitions=2)
    c = g.csr(weights=False)
    monkeypatch.setattr(memory, "available_memory", lambda: 32 << 20)  # rows: 0.4 MB
    with pytest.warns(UserWarning, match="could not store the push index.*too small"):
        result = bsp.pagerank(g, tol=1e-10)
    assert "stored" not in result.stats.method
    assert not graphsys.open_graph(tmp_path / "g").manifest.indexes
    n = g.num_nodes()
    count = sp.csr_matrix((np.ones(len(c.indices)), c.indices, c.indptr), shape=(n, n))
    count.sum_duplicates()
    assert np.abs(result.values - scipy_pagerank(count)).sum() < 1e-10 * 0.85 / 0.15
