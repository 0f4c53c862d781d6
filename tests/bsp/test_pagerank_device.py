"""In-memory PageRank on the torch backend (graphsys.bsp.algorithms.pagerank_device): the
lean supersteps give the CPU numba loop's ranks, and run in a pinned number of torch ops
with no host read between two convergence checks (counted on CPU tensors with
torch.profiler and counting wrappers around the host-reading Tensor methods)."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch
from torch.profiler import ProfilerActivity, profile

import graphsys
from graphsys import bsp
from graphsys.bsp.algorithms.pagerank_device import CHECK_EVERY, OPS_PER_SUPERSTEP

#: ops that launch no kernel: views, metadata, allocation, the scalar read (counted as a
#: host sync instead)
_NO_LAUNCH = {"aten::empty", "aten::empty_like", "aten::empty_strided", "aten::slice",
              "aten::select", "aten::as_strided", "aten::alias", "aten::view",
              "aten::_nnz", "aten::crow_indices", "aten::col_indices", "aten::values",
              "aten::detach", "aten::lift_fresh", "aten::resolve_conj", "aten::resolve_neg",
              "aten::_local_scalar_dense", "aten::item", "aten::unsqueeze", "aten::squeeze",
              "aten::expand", "aten::t", "aten::transpose", "aten::reshape",
              "aten::_reshape_alias", "aten::result_type", "aten::is_nonzero",
              "aten::numpy_T", "aten::to", "aten::_to_copy"}

#: Tensor methods that read a value back to the host (a device sync on CUDA)
_HOST_READS = ("item", "cpu", "tolist", "numpy", "__float__", "__int__", "__bool__",
               "__index__")


def _graph(tmp_path, name: str, src, dst, n: int):
    return graphsys.from_numpy(np.asarray(src), np.asarray(dst), tmp_path / name,
                               num_nodes=n, partitions=2)


@pytest.fixture(scope="module")
def small_graphs(tmp_path_factory):
    """Graphs with dangling and isolated vertices and self-loops (and multi-edges)."""
    tmp = tmp_path_factory.mktemp("lean")
    rng = np.random.default_rng(7)
    out = {}
    src, dst = rng.integers(0, 150, 900), rng.integers(0, 150, 900)
    keep = src != 3  # 3 has no out-edges; 150..159 are isolated
    out["random"] = (np.r_[src[keep], 5, 5, 9], np.r_[dst[keep], 5, 5, 9], 160)
    out["chain"] = (np.arange(40), np.arange(1, 41), 45)  # 40 dangling, 41..44 isolated
    star_src = np.r_[np.arange(1, 60), 0, 0]
    out["star"] = (star_src, np.r_[np.zeros(59, int), 0, 7], 64)  # a self-loop on the hub
    return {k: _graph(tmp, k, *v) for k, v in out.items()}


@pytest.mark.parametrize("key", ["random", "chain", "star"])
@pytest.mark.parametrize("tol", [1e-6, 1e-10])
def test_lean_ranks_match_cpu_loop(small_graphs, key, tol, device):
    """float32 ranks (tol 1e-6: auto) and float64 ones (tol 1e-10) equal the numba loop's
    within the stopping rule's bound, tol * damping / (1 - damping) each from the fixed
    point, so within twice that in L1 of each other."""
    g = small_graphs[key]
    cpu = bsp.pagerank(g, tol=tol)
    dev = bsp.pagerank(g, tol=tol, backend="torch", device=device)
    dtype = "float32" if tol >= 1e-6 else "float64"
    if device == "lazy":  # no sparse CSR product there: the engine's supersteps
        assert dev.stats.method == "supersteps"
        dtype = "float64"
    else:   # float32 may hand its last supersteps to float64 (widen)
        tail = r"(, float64 from superstep \d+)?" if dtype == "float32" else ""
        assert re.fullmatch(rf"fused-pagerank \(device SpMV, int32 ids, {dtype} ranks{tail}\)",
                            dev.stats.method), dev.stats.method
    assert dev.stats.converged
    bound = 2 * tol * 0.85 / 0.15 + (1e-6 if dtype == "float32" else 0.0)
    assert np.abs(dev.values - cpu.values).sum() <= bound
    np.testing.assert_allclose(dev.values, cpu.values, atol=bound)
    assert dev.values.sum() == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize("n", [1000, 5000])
def test_float32_stalls_hand_over_to_float64(tmp_path, n, device):
    """On an undirected star the hub's float32 sum of its n - 1 leaves rounds to a floor
    of about n * 2**-24 in L1 change (a float32 run stalled there, above tol = 1e-6, to
    max_iters): the run goes on in float64 once the change falls slower than the product
    allows, and converges by the check after the float64 run's (on the CPU one superstep
    after it: the float32 run's change certified by one float64 superstep), to its ranks
    within the stopping rule's bound."""
    if device == "lazy":
        pytest.skip("no sparse CSR product on torch's lazy backend")
    g = graphsys.from_numpy(np.zeros(n - 1, np.int64), np.arange(1, n), tmp_path / "star",
                            num_nodes=n, undirected=True)
    res = bsp.pagerank(g, backend="torch", device=device)    # tol 1e-6: float32 ranks
    wide = bsp.pagerank(g, backend="torch", device=device, sum_dtype="float64")
    assert re.fullmatch(r"fused-pagerank \(device SpMV, int32 ids, float32 ranks, float64 "
                        r"from superstep \d+\)", res.stats.method), res.stats.method
    assert res.stats.converged and wide.stats.converged
    assert len(res.stats.supersteps) <= len(wide.stats.supersteps) + CHECK_EVERY
    if device == "cpu":
        assert len(res.stats.supersteps) == len(wide.stats.supersteps) + 1
    assert np.abs(res.values - wide.values).sum() <= 2 * 1e-6 * 0.85 / 0.15


def test_widen_rule():
    """A float32 run goes on in float64 below FLOAT64_TAIL * tol, or when its change
    falls by less than STALL times the least contraction of a window (damping**8)."""
    from graphsys.bsp.algorithms.pagerank_device import CHECK_EVERY, FLOAT64_TAIL, STALL, widen

    tol, a = 1e-6, 0.85
    least = a ** CHECK_EVERY
    assert widen(FLOAT64_TAIL * tol * 0.99, None, tol, a)
    assert not widen(1e-3, None, tol, a)                        # the first check
    assert not widen(1e-3 * least, 1e-3, tol, a)                # as the product contracts
    assert widen(1e-3 * least * STALL * 1.01, 1e-3, tol, a)     # slower: the rounding
    assert not widen(0.99e-3, 1e-3, tol, 0.999)                 # damping near 1: any fall
    assert widen(1e-3, 1e-3, tol, 0.999)


def test_lean_float64_where_asked_and_personalized(small_graphs):
    """sum_dtype="float64" keeps float64 ranks at a loose tol; personalized PageRank takes
    the same supersteps with its teleport vector."""
    g = small_graphs["random"]
    res = bsp.pagerank(g, tol=1e-4, sum_dtype="float64", backend="torch")
    assert res.stats.method.endswith("float64 ranks)")
    ppr_cpu = bsp.personalized_pagerank(g, [3, 5], tol=1e-10)
    ppr_dev = bsp.personalized_pagerank(g, [3, 5], tol=1e-10, backend="torch")
    assert ppr_dev.stats.method.startswith("fused-pagerank (device SpMV")
    assert np.abs(ppr_dev.values - ppr_cpu.values).sum() <= 2e-10 * 0.85 / 0.15


def test_int64_ids_where_int32_cannot_hold_them(small_graphs, monkeypatch):
    """A matrix whose size or entries outgrow int32 (here: a lowered limit) takes int64 ids
    and gives the same ranks."""
    from graphsys.bsp.algorithms import pagerank_device

    g = small_graphs["random"]
    narrow = bsp.pagerank(g, tol=1e-10, backend="torch")
    monkeypatch.setattr(pagerank_device, "_INT32_MAX", 100)
    wide = bsp.pagerank(g, tol=1e-10, backend="torch")
    assert wide.stats.method == "fused-pagerank (device SpMV, int64 ids, float64 ranks)"
    np.testing.assert_array_equal(wide.values, narrow.values)


@pytest.mark.filterwarnings("ignore::graphsys.errors.ConvergenceWarning")  # chain's ppr
@pytest.mark.parametrize("key", ["random", "chain", "star"])
def test_degree_order_gives_the_same_ranks(small_graphs, key, monkeypatch, device):
    """With the vertices relabelled by out-degree (DEGREE_ORDER, the chunks of a few edges
    each), PageRank and personalized PageRank come back in the graph's order: the ranks of
    the graph's order within float64 rounding, in as many supersteps."""
    from graphsys.bsp.algorithms import pagerank_device

    g = small_graphs[key]
    if device == "lazy":
        pytest.skip("no sparse CSR product on torch's lazy backend")
    plain = bsp.pagerank(g, tol=1e-10, backend="torch", device=device)
    ppr = bsp.personalized_pagerank(g, [1, 5], tol=1e-10, backend="torch", device=device)
    monkeypatch.setattr(pagerank_device, "DEGREE_ORDER", True)
    monkeypatch.setattr(pagerank_device, "ORDER_CHUNK", 64)
    ordered = bsp.pagerank(g, tol=1e-10, backend="torch", device=device)
    assert ordered.stats.method == ("fused-pagerank (device SpMV, int32 ids, float64 ranks, "
                                    "degree-ordered)")
    assert len(ordered.stats.supersteps) == len(plain.stats.supersteps)
    np.testing.assert_allclose(ordered.values, plain.values, rtol=1e-12, atol=1e-15)
    ppr_ordered = bsp.personalized_pagerank(g, [1, 5], tol=1e-10, backend="torch",
                                            device=device)
    np.testing.assert_allclose(ppr_ordered.values, ppr.values, rtol=1e-12, atol=1e-15)


def test_degree_order_relabels_by_out_degree(monkeypatch):
    """Against a plain-Python relabelling: rows are the old rows in the new order, their
    sources renamed; out-degrees decrease along the new ids; chunk sizes do not matter."""
    from graphsys.bsp.algorithms import pagerank_device

    rng = np.random.default_rng(3)
    n = 300
    src, dst = rng.integers(0, n, 4000) ** 2 // n, rng.integers(0, n, 4000)   # skewed
    order_dst = np.argsort(dst, kind="stable")
    ptr = torch.from_numpy(np.r_[0, np.cumsum(np.bincount(dst, minlength=n))])
    idx = torch.from_numpy(src[order_dst])
    out_deg = np.bincount(src, minlength=n)
    for chunk in (7, 1000, 1 << 24):
        monkeypatch.setattr(pagerank_device, "ORDER_CHUNK", chunk)
        p, i, order = pagerank_device.degree_order(ptr, idx)
        order = order.numpy()
        assert np.all(np.diff(out_deg[order]) <= 0)
        pos = np.empty(n, np.int64)
        pos[order] = np.arange(n)
        for r, old in enumerate(order):
            want = pos[idx[ptr[old]:ptr[old + 1]].numpy()]
            assert i[p[r]:p[r + 1]].tolist() == want.tolist()


@pytest.mark.filterwarnings("ignore::graphsys.errors.ConvergenceWarning")
def test_checks_every_few_supersteps(small_graphs):
    """The run stops on a checked superstep (a multiple of CHECK_EVERY or the last one) and
    at most CHECK_EVERY - 1 supersteps after the CPU loop; out of iterations it reports not
    converged."""
    g = small_graphs["random"]
    cpu = bsp.pagerank(g, tol=1e-10, sum_dtype="float64")
    dev = bsp.pagerank(g, tol=1e-10, backend="torch")
    n_cpu, n_dev = len(cpu.stats.supersteps), len(dev.stats.supersteps)
    assert n_dev % CHECK_EVERY == 0 and n_cpu <= n_dev < n_cpu + CHECK_EVERY
    short = bsp.pagerank(g, tol=1e-30, max_iters=CHECK_EVERY + 3, backend="torch")
    assert len(short.stats.supersteps) == CHECK_EVERY + 3 and not short.stats.converged
    # every superstep carries its share of its chunk's time (read at the chunk's check)
    assert all(s.seconds["edges"] > 0 for s in short.stats.supersteps)


def _count_run(g, max_iters: int, monkeypatch, fuse: bool = True) -> tuple[int, int]:
    """(kernel ops, host reads) of one torch-backend PageRank run of ``max_iters``
    supersteps (it never converges: tol 1e-30)."""
    reads = [0]

    def counting(name):
        original = getattr(torch.Tensor, name)

        def wrapper(self, *args, **kwargs):
            reads[0] += 1
            return original(self, *args, **kwargs)
        return wrapper

    with monkeypatch.context() as m:
        for name in _HOST_READS:
            m.setattr(torch.Tensor, name, counting(name))
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            bsp.pagerank(g, tol=1e-30, max_iters=max_iters, backend="torch", fuse=fuse)
    return _launches(prof.events()), reads[0]


def _launches(events) -> int:
    """aten ops that compute (not in :data:`_NO_LAUNCH`) with no computing op below them:
    the kernels a CUDA run would launch for them."""
    def computes(e):
        return e.name.startswith("aten::") and e.name not in _NO_LAUNCH

    def below(e):  # whether an op below e computes
        return any(computes(c) or below(c) for c in e.cpu_children)
    return sum(1 for e in events if computes(e) and not below(e))


@pytest.mark.filterwarnings("ignore::graphsys.errors.ConvergenceWarning")
def test_superstep_op_and_sync_budget(small_graphs, monkeypatch):
    """Between two convergence checks a superstep launches OPS_PER_SUPERSTEP ops and reads
    nothing back to the host; a check adds the L1 change (two ops) and one host read. The
    counts are differences of whole runs, so the setup cancels out."""
    g = small_graphs["random"]
    k = CHECK_EVERY
    ops_a, reads_a = _count_run(g, 2 * k - 1, monkeypatch)  # checks after k and 2k - 1
    ops_b, reads_b = _count_run(g, 2 * k, monkeypatch)  # checks after k and 2k
    ops_c, reads_c = _count_run(g, k, monkeypatch)  # one check, after k
    assert reads_b == reads_a and ops_b - ops_a == OPS_PER_SUPERSTEP == 3
    per_check = ops_b - ops_c - k * OPS_PER_SUPERSTEP
    assert reads_b - reads_c == 1 and per_check == 2


@pytest.mark.filterwarnings("ignore::graphsys.errors.ConvergenceWarning")
def test_first_call_costs_fall_in_the_setup(small_graphs, monkeypatch):
    """A one-time cost of the first superstep (here: a 0.3 s sleep on the first call, as a
    kernel loaded on first use) is paid by the setup's warm-up, not by the first window,
    whose supersteps carry their window's time split evenly; the ranks are unchanged."""
    import time

    from graphsys.bsp.algorithms import pagerank_device

    g = small_graphs["random"]
    plain = bsp.pagerank(g, tol=1e-30, max_iters=CHECK_EVERY + 3, backend="torch")
    calls, original = [], pagerank_device.lean_superstep

    def slow_once(*args):
        if not calls:
            time.sleep(0.3)
        calls.append(1)
        original(*args)

    monkeypatch.setattr(pagerank_device, "lean_superstep", slow_once)
    res = bsp.pagerank(g, tol=1e-30, max_iters=CHECK_EVERY + 3, backend="torch")
    assert len(calls) == CHECK_EVERY + 4  # the warm-up and every superstep
    assert res.stats.setup_seconds >= 0.3
    # the sleep is inside the setup's interval (a lower bound: no timing race); the first
    # window's supersteps carry its time split evenly
    first = [s.seconds["edges"] for s in res.stats.supersteps[:CHECK_EVERY]]
    assert len(set(first)) == 1
    np.testing.assert_array_equal(res.values, plain.values)


def test_degree_order_applies_in_memory_only(small_graphs, monkeypatch):
    """Out of core, the layout built on the device (a device of DEVICE_BUILDS: CUDA, here
    the CPU) keeps to the run's budget: DEGREE_ORDER leaves it in the graph's order."""
    from graphsys.bsp import device_stream
    from graphsys.bsp.algorithms import pagerank_device

    g = small_graphs["random"]
    monkeypatch.setattr(device_stream, "DEVICE_BUILDS", ("cpu",))
    monkeypatch.setattr(pagerank_device, "DEGREE_ORDER", True)
    res = bsp.pagerank(g, tol=1e-10, backend="torch", mode="out-of-core",
                       device_budget=device_stream.DEVICE_BUILD_BYTES * g.num_edges())
    assert res.stats.method == "fused-pagerank (device SpMV, int32 ids, float64 ranks)"
    memory = bsp.pagerank(g, tol=1e-10, backend="torch")
    assert memory.stats.method.endswith("degree-ordered)")
    np.testing.assert_allclose(res.values, memory.values, rtol=1e-12, atol=1e-15)
