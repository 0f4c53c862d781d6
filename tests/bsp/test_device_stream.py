"""Out-of-core batches on the torch path (graphsys.bsp.device_stream): a staging ring
allocated once per run, batches kept on the device within a budget, the same answers
whatever the budget."""

from __future__ import annotations

import shutil
import subprocess
from collections import Counter

import numpy as np
import pytest
import torch

from graphsys import bsp
from graphsys.analysis.device_counts import DeviceWorkCounter
from graphsys.bsp import VertexProgram, device_stream, stream
from graphsys.bsp.algorithms.components import WCC
from graphsys.bsp.algorithms.pagerank import PageRank
from graphsys.bsp.algorithms.traversal import BFS, SSSP
from graphsys.bsp.device_stream import RING, DeviceBuckets, resident_budget
from graphsys.bsp.engine import open_edges
from graphsys.errors import ConvergenceWarning, ParameterError
from tests.bsp.test_pagerank import scipy_pagerank

#: all streamed, some batches kept and some streamed, all kept
BUDGETS = {"streamed": 0, "mixed": 2500, "resident": 1 << 30}


def edge_bytes(weighted: bool, packed: bool) -> int:
    """Bytes an edge on the bus and on the device: int32 src and dst, or one word for both
    (packed), plus a float32 weight."""
    return (4 if packed else 8) + (4 if weighted else 0)


#: How the test graphs' batches travel (the ``packed`` fixture): PACK_LOW and HI_BITS set
#: so that their partitions of at most 80 vertices (7 bits) need a side stream of one byte
#: an edge (``wide-byte``: 3 + 4 bits) or two (``wide-short``: 1 + 6 bits), or none
#: (``packed``: the default) or cannot pack (``int32-pairs``)
PACK_MODES = {"packed": (16, 16), "wide-byte": (3, 16), "wide-short": (1, 16),
              "int32-pairs": (0, 0)}
#: Side-stream bytes an edge of each mode
SIDE_BYTES = {"packed": 0, "wide-byte": 1, "wide-short": 2, "int32-pairs": 0}
#: torch ops that split a batch of each mode: (word >> low) & mask, word & mask; the side
#: stream widened (and a two-byte one's sign masked off), and each offset's higher bits
#: shifted into place and or-ed in
SPLIT_OPS = {"packed": 3, "int32-pairs": 0, "wide-byte": 3 + 1 + 3 + 3,
             "wide-short": 3 + 2 + 3 + 3}


def batch_bytes(graph, weighted: bool, mode: str) -> int:
    """Bytes every batch of ``graph`` takes on the bus and on the device in ``mode``: a
    word an edge (two unpacked), its side stream rounded up to whole words, a float32
    weight an edge."""
    if mode in ("packed", "int32-pairs"):
        return edge_bytes(weighted, mode == "packed") * graph.num_edges()
    total = 0
    for b in graph.buckets("row-major", graph.edge_set(None).name):
        for eb in b.batches():
            n = len(eb)
            total += 4 * n * (1 + weighted) + 4 * -(-n * SIDE_BYTES[mode] // 4)
    return total


@pytest.fixture(autouse=True)
def batches_only(monkeypatch):
    """The runs here read batches, kept or streamed: no solver's layout is built on the
    device from the buckets (on CUDA, PageRank's and BFS's would be where they fit; tested
    apart, by setting DEVICE_BUILDS again)."""
    monkeypatch.setattr(device_stream, "DEVICE_BUILDS", ())


@pytest.fixture(params=list(PACK_MODES))
def packed(request, monkeypatch) -> str:
    """How batches travel (:data:`PACK_MODES`): one word an edge (the test graphs'
    partitions are small enough), that word and a side stream of the offsets' higher bits,
    or two int32 offsets (packing switched off)."""
    low, hi = PACK_MODES[request.param]
    monkeypatch.setattr(device_stream, "PACK_LOW", low)
    monkeypatch.setattr(device_stream, "HI_BITS", hi)
    return request.param


@pytest.mark.parametrize("key", ["directed-p3", "undirected-p3"])
@pytest.mark.parametrize("weighted", [False, None])
def test_pagerank_same_whatever_the_budget(graphs, key, weighted, device, packed):
    """All-streamed, mixed and all-resident runs give the same ranks: bit for bit on the
    CPU (the scatters run in the same order), within rounding on CUDA (its scatter-adds are
    atomics, summed in no fixed order); scipy's within the tolerance, and the numba
    out-of-core path's within rounding."""
    tg = graphs[key]
    runs = {name: bsp.pagerank(tg.graph, tol=1e-12, mode="out-of-core", backend="torch",
                               weighted=weighted, device=device, device_budget=b)
            for name, b in BUDGETS.items()}
    with pytest.MonkeyPatch.context() as m:  # no host cache: staged every superstep
        m.setattr(device_stream, "HOST_FRACTION", 0.0)
        runs["ring"] = bsp.pagerank(tg.graph, tol=1e-12, mode="out-of-core",
                                    backend="torch", weighted=weighted, device=device,
                                    device_budget=0)
    ref = scipy_pagerank(tg.count if weighted is False else tg.adj)
    numba = bsp.pagerank(tg.graph, tol=1e-12, mode="out-of-core", weighted=weighted).values
    for r in runs.values():
        if torch.device(device).type == "cpu":
            np.testing.assert_array_equal(r.values, runs["streamed"].values)
        else:
            np.testing.assert_allclose(r.values, runs["streamed"].values, rtol=1e-12)
        assert np.abs(r.values - ref).sum() < 1e-6
        assert np.abs(r.values - numba).sum() < 1e-9
    total = batch_bytes(tg.graph, weighted is None, packed)
    assert runs["streamed"].stats.resident_bytes == 0
    assert 0 < runs["mixed"].stats.resident_bytes <= BUDGETS["mixed"]
    assert runs["mixed"].stats.resident_bytes < total
    assert runs["resident"].stats.resident_bytes == total


def test_bfs_same_whatever_the_budget(graphs, device, packed):
    """A frontier program (active sources only) reads kept and streamed batches alike."""
    tg = graphs["directed-p3"]
    ref = bsp.bfs(tg.graph, 0).values
    for b in BUDGETS.values():
        res = bsp.bfs(tg.graph, 0, mode="out-of-core", backend="torch", device=device,
                      device_budget=b)
        np.testing.assert_array_equal(res.values, ref)


def _moved_per_pass(graph, budget: int, passes: int = 3) -> tuple[list[int], DeviceBuckets]:
    """Bytes the torch path's provider moves through its ring in each of ``passes``
    all-active PageRank edge phases (on the CPU: what a GPU run copies host -> device)."""
    edges = open_edges(graph, graph.edge_set(None).name, PageRank(weighted=False),
                       torch.device("cpu"), "torch", mode="out-of-core", device_budget=budget)
    n = graph.num_nodes()
    x, active = torch.rand(n, dtype=torch.float64), torch.ones(n, dtype=torch.bool)
    moved = []
    try:
        for _ in range(passes):
            before = edges.device_buckets.moved_bytes if edges.device_buckets else 0
            edges.run(x, active, n, None)
            moved.append(edges.device_buckets.moved_bytes - before)
        return moved, edges.device_buckets
    finally:
        buckets = edges.device_buckets
        edges.close()
        edges.device_buckets = buckets


def test_resident_batches_move_once(graphs, packed):
    """The first pass moves every batch; later passes move only the batches over the
    budget: none when all fit, all when the budget is 0, the rest in between."""
    g = graphs["directed-p3"].graph
    total = batch_bytes(g, False, packed)  # no values: an unweighted program
    assert _moved_per_pass(g, 0)[0] == [total] * 3
    moved, buckets = _moved_per_pass(g, BUDGETS["mixed"])
    assert moved[0] == total and moved[1] == moved[2] == total - buckets.resident_bytes
    assert 0 < buckets.resident_bytes <= BUDGETS["mixed"]
    assert _moved_per_pass(g, BUDGETS["resident"])[0] == [total, 0, 0]


@pytest.mark.parametrize("budget", BUDGETS.values(), ids=BUDGETS.keys())
def test_transfers_a_superstep_are_the_streamed_batches(graphs, budget, packed):
    """Counted with DeviceWorkCounter (the device emulated on the CPU): after the first
    pass, a pass makes one host -> device copy per streamed batch (its src and dst in one
    copy), of the bytes the provider books, and none for a kept batch; no host sync."""
    g = graphs["directed-p3"].graph
    edges = open_edges(g, g.edge_set(None).name, PageRank(weighted=False),
                       torch.device("cpu"), "torch", mode="out-of-core", device_budget=budget)
    n = g.num_nodes()
    x, active = torch.rand(n, dtype=torch.float64), torch.ones(n, dtype=torch.bool)
    try:
        edges.run(x, active, n, None)
        buckets = edges.device_buckets
        before = buckets.moved_bytes
        with DeviceWorkCounter(device_tensors=[x, active]) as c:
            edges.run(x, active, n, None)
    finally:
        edges.close()
    h2d = [b for kind, b in c.records if kind == "h2d"]
    assert len(h2d) == c.transfers == len(buckets.streamed)
    assert sum(h2d) == buckets.moved_bytes - before == (
        batch_bytes(g, False, packed) - buckets.resident_bytes)
    assert c.syncs == 0
    assert len(buckets.resident) + len(buckets.streamed) > 3  # several batches


@pytest.mark.parametrize("key", ["directed-p1", "directed-p3"])
@pytest.mark.parametrize("cache", [True, False], ids=["host-cache", "ring"])
def test_staging_buffers_allocated_once_a_run(graphs, key, cache, monkeypatch):
    """A run allocates its host buffers once, however many buckets (1 or 9) and
    supersteps: one host cache holding every streamed batch, or (no room for a cache)
    RING staging buffers; none per bucket or per superstep."""
    calls = []
    real = device_stream.host_buffer
    monkeypatch.setattr(device_stream, "host_buffer",
                        lambda n, pin: calls.append(n) or real(n, pin))
    if not cache:
        monkeypatch.setattr(device_stream, "HOST_FRACTION", 0.0)
    want = 1 if cache else RING
    g = graphs[key].graph
    res = bsp.pagerank(g, tol=1e-12, mode="out-of-core", backend="torch", device_budget=0)
    assert res.stats.num_supersteps > 5
    assert len(calls) == want
    moved, buckets = _moved_per_pass(g, 0, passes=4)
    assert buckets.staging_allocations == want and len(calls) == 2 * want
    assert buckets.cached_bytes == (edge_bytes(False, True) * g.num_edges() if cache else 0)


@pytest.mark.parametrize("cache", [True, False], ids=["host-cache", "ring"])
def test_streamed_batches_are_written_on_the_host_once(graphs, cache, monkeypatch):
    """With the host cache, a streamed batch is written from its mapped file into host
    memory (the CPU copy a GPU run makes into pinned memory) in the first pass only:
    later passes copy it to the device straight from the cache. Without one, every pass
    stages every streamed batch again."""
    staged = []
    real = device_stream._stage
    monkeypatch.setattr(device_stream, "_stage",
                        lambda *a: staged.append(len(a[1])) or real(*a))
    if not cache:
        monkeypatch.setattr(device_stream, "HOST_FRACTION", 0.0)
    g = graphs["directed-p3"].graph
    moved, buckets = _moved_per_pass(g, 0, passes=3)
    batches = len(buckets.streamed)
    assert batches > 3 and sum(staged) == g.num_edges() * (1 if cache else 3)
    assert len(staged) == batches * (1 if cache else 3)
    assert moved == [moved[0]] * 3


def test_long_batches_travel_in_blocks(graphs, monkeypatch):
    """The torch path reads a record batch longer than BLOCK_ROWS as blocks of that many
    edges: one copy a block, a ring sized to a block, the same bytes moved, and the same
    ranks bit for bit on the CPU (the blocks are added in the batch's order)."""
    g = graphs["directed-p3"].graph
    whole = bsp.pagerank(g, tol=1e-12, mode="out-of-core", backend="torch", device_budget=0)
    moved, buckets = _moved_per_pass(g, 0)
    assert buckets._capacity > 16
    monkeypatch.setattr(device_stream, "BLOCK_ROWS", 16)
    cut = bsp.pagerank(g, tol=1e-12, mode="out-of-core", backend="torch", device_budget=0)
    np.testing.assert_array_equal(cut.values, whole.values)
    moved_cut, blocks = _moved_per_pass(g, 0)
    assert moved_cut == moved and blocks._capacity == 16
    assert len(blocks.streamed) >= g.num_edges() // 16 > len(buckets.streamed)


def _pass_counts(graph, budget: int) -> tuple[DeviceWorkCounter, DeviceBuckets, torch.Tensor]:
    """DeviceWorkCounter of the third all-active PageRank edge phase (the device emulated
    on the CPU), the run's buckets, and the phase's sums."""
    edges = open_edges(graph, graph.edge_set(None).name, PageRank(weighted=False),
                       torch.device("cpu"), "torch", mode="out-of-core", device_budget=budget)
    n = graph.num_nodes()
    x, active = torch.rand(n, dtype=torch.float64, generator=torch.Generator().manual_seed(
        1)), torch.ones(n, dtype=torch.bool)
    try:
        edges.run(x, active, n, None)
        edges.run(x, active, n, None)
        kept = [*edges.device_buckets.resident.values(), *edges._received.values()]
        merged = [getattr(m, name) for m in edges._merged.values() if m
                  for name in ("mat", "src", "dst") if hasattr(m, name)]
        with DeviceWorkCounter(device_tensors=[x, active, *kept, *merged]) as c:
            res = edges.run(x, active, n, None)
        return c, edges.device_buckets, res.acc
    finally:
        edges.close()


def test_ops_a_streamed_pass(graphs, packed):
    """An all-active copy/sum pass (PageRank's) streamed from the host cache: per batch one
    host -> device copy and two device ops (a gather of the sources' values, an
    ``index_add_`` into the targets: int32 offsets into views, nothing widened); per pass
    the zeroed sums and a copy of the receiving targets (marked in the first pass only,
    more ops a batch that split a packed word: 3, and 7 more with a side stream of one
    byte an edge, 8 with two); no host sync."""
    c, buckets, _ = _pass_counts(graphs["directed-p3"].graph, 0)
    batches = len(buckets.streamed)
    split = SPLIT_OPS[packed]
    assert c.transfers == batches and c.syncs == 0
    assert c.launches == (2 + split) * batches + 2
    assert c.ops["index_select"] == c.ops["index_add_"] == batches
    assert "index_put_" not in c.ops
    assert c.ops.get("_to_copy", 0) == (batches if SIDE_BYTES[packed] else 0)


def _emulate_fused_split(monkeypatch) -> None:
    """A stand-in for the fused split kernel (:func:`device_stream.fused_split`, CUDA's
    jiterator) on the CPU: :func:`device_stream.split_words`'s operators, unseen by the
    counters and reported as one launch, their outputs on the (emulated) device."""
    from torch.utils._python_dispatch import _get_current_dispatch_mode_stack

    def checked(pack, device):
        def fused(word, side=None):
            counters = [m for m in _get_current_dispatch_mode_stack()
                        if isinstance(m, DeviceWorkCounter)]
            for m in counters:
                m._quiet = True
            try:
                out = device_stream.split_words(word, side, pack)
            finally:
                for m in counters:
                    m._quiet = False
                    m._on_device.update({t: True for t in out})
            return out
        return fused

    monkeypatch.setattr(device_stream, "FUSED_SPLIT_DEVICES", ("cpu",))
    monkeypatch.setattr(device_stream, "_FUSED", {})
    monkeypatch.setattr(device_stream, "_checked_split", checked)


def test_fused_split_is_one_launch_a_batch(graphs, packed, monkeypatch):
    """With a packed batch's split one kernel (CUDA's jiterator; emulated here) a streamed
    batch of an all-active copy/sum pass is three launches whatever its packing (the
    split, the gather, the ``index_add_``; the split was 3 to 11 torch operators before),
    two unpacked (no split), the same sums bit for bit."""
    _, _, want = _pass_counts(graphs["directed-p3"].graph, 0)
    _emulate_fused_split(monkeypatch)
    c, buckets, acc = _pass_counts(graphs["directed-p3"].graph, 0)
    batches = len(buckets.streamed)
    split = 0 if packed == "int32-pairs" else 1
    assert c.transfers == batches and c.syncs == 0
    assert c.launches == (2 + split) * batches + 2
    assert c.ops.get("jiterator", 0) == split * batches
    np.testing.assert_array_equal(acc.numpy(), want.numpy())


def test_upload_splits_with_operators(graphs, packed, monkeypatch):
    """A one-time upload of every edge (the device builds' :func:`upload_edges`) splits its
    batches with torch operators, not the fused kernel (its compilation would outlast the
    upload's ops): the same edges either way."""
    g = graphs["directed-p3"].graph
    cpu = torch.device("cpu")
    want = device_stream.upload_edges(g, g.edge_set(None).name, cpu)
    _emulate_fused_split(monkeypatch)
    with DeviceWorkCounter() as c:
        got = device_stream.upload_edges(g, g.edge_set(None).name, cpu)
    assert "jiterator" not in c.ops and device_stream._FUSED == {}
    assert all(torch.equal(a, b) for a, b in zip(want[:2], got[:2])) and want[2] == got[2]


#: Packings the fused split's source is compiled for here: one word; a side byte of
#: source bits, target bits or both; two side bytes (the widest each way and shared)
SPLIT_PACKS = [(0, 0), (4, 0), (0, 8), (4, 4), (8, 8), (16, 0), (0, 16), (3, 9)]


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs a C++ compiler")
def test_fused_split_source_splits_as_the_operators(tmp_path):
    """The fused split's source (compiled by jiterator on CUDA), compiled here as C++ for
    int32 with the side entry widened as jiterator widens it: the offsets of
    :func:`device_stream.split_words`, bit for bit, over random words (the extremes
    included) and every side entry each packing allows."""
    from torch.cuda.jiterator import _CodeParser

    rng = np.random.default_rng(5)
    for pack in SPLIT_PACKS:
        side = device_stream._side_bytes(pack) > 0
        code = device_stream.split_code(pack)
        assert _CodeParser(code).function_name == "gs_split_offsets"
        args = "w, s, src, dst" if side else "w, src, dst"
        main = code + f"""
#include <cstdio>
int main() {{
  int w, s, src, dst;
  while (std::scanf("%d %d", &w, &s) == 2) {{
    gs_split_offsets<int>({args});
    std::printf("%d %d\\n", src, dst);
  }}
}}
"""
        cpp = tmp_path / f"split{pack[0]}_{pack[1]}.cpp"
        cpp.write_text(main)
        exe = cpp.with_suffix("")
        subprocess.run(["g++", "-O2", "-o", str(exe), str(cpp)], check=True)
        top = 1 << (pack[0] + pack[1])
        n = top + 2000
        word = rng.integers(-2**31, 2**31, n, dtype=np.int64).astype(np.int32)
        word[:4] = 0, -1, -2**31, 2**31 - 1
        entries = np.concatenate([np.arange(top), rng.integers(0, top, n - top)])
        size = device_stream._side_bytes(pack)
        sides = (None if not size else torch.from_numpy(
            entries.astype(np.uint8) if size == 1 else entries.astype(np.uint16).view(np.int16)))
        widened = sides.to(torch.int32).tolist() if side else [0] * n
        out = subprocess.run([str(exe)], input="\n".join(
            f"{a} {b}" for a, b in zip(word.tolist(), widened)), text=True,
            capture_output=True, check=True).stdout.split()
        got = np.array([int(v) for v in out], np.int64).reshape(n, 2)
        want = device_stream.split_words(torch.from_numpy(word), sides, pack)
        np.testing.assert_array_equal(got[:, 0], want[0].numpy(), err_msg=str(pack))
        np.testing.assert_array_equal(got[:, 1], want[1].numpy(), err_msg=str(pack))


def test_fused_split_only_where_listed_and_checked(monkeypatch):
    """No fused split off :data:`device_stream.FUSED_SPLIT_DEVICES`; where listed, a kernel
    is used once it splits the check batch as the torch operators do, and a kernel that
    splits otherwise, or cannot run, is not (the operators split the batches)."""
    import torch.cuda.jiterator as jiterator

    cpu = torch.device("cpu")
    assert "cpu" not in device_stream.FUSED_SPLIT_DEVICES
    assert device_stream.fused_split((4, 4), cpu) is None
    assert device_stream._checked_split((4, 4), cpu) is None      # jiterator needs CUDA
    made = {}

    def make(code, num_outputs):
        made[code] = num_outputs
        return lambda word, side=None: device_stream.split_words(word, side, pack)

    monkeypatch.setattr(jiterator, "_create_multi_output_jit_fn", make)
    monkeypatch.setattr(device_stream, "FUSED_SPLIT_DEVICES", ("cpu",))
    monkeypatch.setattr(device_stream, "_FUSED", {})
    pack = (4, 4)
    fn = device_stream.fused_split(pack, cpu)
    assert fn is not None and made == {device_stream.split_code(pack): 2}
    assert device_stream.fused_split(pack, cpu) is fn                  # made once
    pack = (3, 5)                                          # splits as (4, 4): refused
    monkeypatch.setattr(device_stream, "_FUSED", {})
    assert device_stream.fused_split((4, 4), cpu) is None
    # another PACK_LOW is another source: made (and checked) again, not the cached kernel
    # (a kernel made for one PACK_LOW split another's batches wrongly on CUDA)
    pack = (4, 4)
    monkeypatch.setattr(device_stream, "PACK_LOW", 3)
    again = device_stream.fused_split(pack, cpu)
    assert again is not None and again is not fn and len(made) == 2


@pytest.mark.parametrize("spmv", [False, True], ids=["gather-add", "spmv"])
def test_kept_pass_is_merged(graphs, spmv, packed, monkeypatch):
    """Once every batch of the pass is kept on the device, the pass is merged into one
    layout: a superstep's edge phase is one CSR product (on CUDA; here forced on the CPU)
    or one gather and one ``index_add_`` (the CPU's default, in the batches' order: the
    same sums bit for bit as the streamed pass), plus a copy of the receiving targets;
    nothing moves, no host sync."""
    if spmv:
        monkeypatch.setattr(device_stream, "MERGED_SPMV_DEVICES", ("cpu", "cuda"))
    g = graphs["directed-p3"].graph
    c, buckets, acc = _pass_counts(g, BUDGETS["resident"])
    _, _, streamed = _pass_counts(g, 0)
    assert c.transfers == c.syncs == 0
    want = {"mv": 1, "clone": 1} if spmv else {"zeros": 1, "index_select": 1,
                                               "index_add_": 1, "clone": 1}
    assert c.launches == sum(want.values()) and dict(c.ops) == want
    if spmv:
        np.testing.assert_allclose(acc.numpy(), streamed.numpy(), rtol=1e-12)
    else:
        np.testing.assert_array_equal(acc.numpy(), streamed.numpy())


def test_merged_pass_same_ranks_on_spmv(graphs, monkeypatch):
    """The merged pass as a CSR product (the CUDA default) gives the streamed run's ranks
    within rounding."""
    monkeypatch.setattr(device_stream, "MERGED_SPMV_DEVICES", ("cpu", "cuda"))
    g = graphs["undirected-p3"].graph
    kept, streamed = (bsp.pagerank(g, tol=1e-12, mode="out-of-core", backend="torch",
                                   device_budget=b).values for b in (1 << 30, 0))
    np.testing.assert_allclose(kept, streamed, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("cache", ["none", "some", "all"])
def test_ring_batches_arrive_intact(device, cache):
    """Batches of varying length cross through the RING device buffers of the ring, from
    the host cache (``some``: the batches it has room for) or through the RING staging
    slots, each slot written again while the copy or compute of its previous batch may be
    queued: every batch's columns arrive as they were (copies made on the compute stream
    right after each fetch, compared at the end), kept ones as well as streamed ones, and
    the host buffers are allocated in the first round only."""
    rng = np.random.default_rng(0)
    batches = [(rng.integers(0, 2**31 - 1, m, dtype=np.int32),
                rng.integers(0, 2**31 - 1, m, dtype=np.int32),
                rng.random(m, dtype=np.float32))
               for m in rng.integers(1, 1 << 15, 24)]
    dev = torch.device(device)
    longest = max(len(b[0]) for b in batches)
    total = 4 * sum(len(b[0]) for b in batches)  # edges: the batches, 4 layouts
    host = {"none": 0, "some": 12 * total // 3, "all": 1 << 30}[cache]
    for budget in (0, 12 * sum(len(b[0]) for b in batches[:5])):
        ring = DeviceBuckets(dev, budget, (longest + 1) // 2, weights=True,  # grows once
                             total=total, host_budget=host)
        allocated = []
        for _ in range(2):  # the second round reads the kept and cached batches
            got = [tuple(t.clone() for t in ring.fetch(k, *b)) for k, b in enumerate(batches)]
            # 16-bit offsets packed in one word, then 20- and 22-bit ones with a side stream
            # of one byte and of two (4 + 4 and 6 + 6 higher bits)
            small = {shift: [(b[0] >> shift, b[1] >> shift, b[2]) for b in batches]
                     for shift in (15, 11, 9)}
            for shift, pack in ((15, (0, 0)), (11, (4, 4)), (9, (6, 6))):
                got += [tuple(t.clone() for t in ring.fetch((shift, k), *b, pack=pack))
                        for k, b in enumerate(small[shift])]
            for b, g in zip(batches + sum(small.values(), []), got, strict=True):
                for want, have in zip(b, g, strict=True):
                    assert have.device.type == dev.type
                    np.testing.assert_array_equal(have.cpu().numpy(), want)
            allocated.append(ring.staging_allocations)
        assert allocated[0] == allocated[1] <= 2 * RING + 1
        assert (ring.cache is not None) == (cache != "none")
        assert 0 < len(ring.cached) < len(ring.streamed) if cache == "some" else (
            len(ring.cached) == (len(ring.streamed) if cache == "all" else 0))
        assert len(ring.resident) == (5 if budget else 0)  # the packed ones come later
        ring.finish()


def test_budget_option():
    cpu = torch.device("cpu")
    assert resident_budget(cpu, None) == 0 and resident_budget(cpu, 0.5) == 0
    assert resident_budget(cpu, 1000) == 1000
    for bad in (-1, 1.5, "all", True, float("nan")):
        with pytest.raises(ParameterError, match="device_budget"):
            resident_budget(cpu, bad)


@pytest.mark.parametrize("mode", ["memory", "out-of-core"])
def test_bad_budget_is_one_line(graphs, mode):
    with pytest.raises(ParameterError, match="device_budget must be bytes"):
        bsp.pagerank(graphs["directed-p1"].graph, mode=mode, backend="torch",
                     device_budget=-5)


@pytest.mark.parametrize("why", ["budget", "out-of-memory"])
def test_kept_pass_not_merged(graphs, why, monkeypatch):
    """Where the merged layout does not fit the budget beside the kept batches, or the
    device runs out of memory building it, the pass stays batch by batch: same sums bit
    for bit, two ops a batch."""
    g = graphs["directed-p3"].graph
    if why == "out-of-memory":
        def no_memory(*args):
            raise torch.OutOfMemoryError("no memory")
        monkeypatch.setattr(stream, "MergedPass", no_memory)
        budget = BUDGETS["resident"]
    else:
        budget = edge_bytes(False, True) * g.num_edges()  # the batches, packed: no more
    c, buckets, acc = _pass_counts(g, budget)
    _, _, streamed = _pass_counts(g, 0)
    assert buckets.resident_bytes == edge_bytes(False, True) * g.num_edges()
    assert not buckets.streamed and c.transfers == 0 and c.ops.get("mv", 0) == 0
    assert c.ops["index_add_"] == len(buckets.resident) > 3
    np.testing.assert_array_equal(acc.numpy(), streamed.numpy())


#: (pack, bits of the source and target offsets, int32 words an edge with the side stream)
STAGED = {"int32-pairs": (None, (31, 31), 2), "packed": ((0, 0), (16, 16), 1),
          "wide-byte": ((5, 3), (21, 19), 1.25), "wide-short": ((9, 7), (25, 23), 1.5)}


@pytest.mark.parametrize("layout", STAGED)
@pytest.mark.parametrize("weights", [False, True], ids=["ids", "weighted"])
def test_long_batches_staged_in_row_ranges(layout, weights, monkeypatch):
    """A batch long enough is written into host memory by several threads, row ranges of
    every column: the same words as one thread writes, as many as the layout takes, which
    the device splits back into the offsets and weights (the largest offsets included)."""
    monkeypatch.setattr(device_stream, "PARALLEL_STAGE_ROWS", 1000)
    monkeypatch.setattr(device_stream, "stage_threads", lambda: 3)
    pack, bits, per_edge = STAGED[layout]
    rng = np.random.default_rng(3)
    for n in (999, 1000, 4097):
        src, dst = (rng.integers(0, 1 << b, n).astype(np.int32) for b in bits)
        src[0], dst[1] = (1 << bits[0]) - 1, (1 << bits[1]) - 1
        w = rng.random(n, dtype=np.float32) if weights else None
        many, one = np.zeros(3 * n, np.int32), np.zeros(3 * n, np.int32)
        size = device_stream._stage(many, src, dst, w, pack)
        assert size == int(np.ceil(n * per_edge)) + n * weights
        device_stream._stage_rows(one, src, dst, w, pack, 0, n)
        np.testing.assert_array_equal(many, one)
        ring = DeviceBuckets(torch.device("cpu"), 0, n, weights=weights, host_budget=0)
        got = ring._split(torch.from_numpy(many[:size]), n, pack)
        np.testing.assert_array_equal(got[0].numpy(), src)
        np.testing.assert_array_equal(got[1].numpy(), dst)
        if weights:
            np.testing.assert_array_equal(got[2].numpy(), w)


def test_packing_of_partition_sizes():
    """A bucket packs into one word where both partitions hold at most 2**16 vertices,
    adds a side stream of one byte or two an edge for their higher bits, and travels as
    two offsets past 16 higher bits."""
    assert device_stream.packing(1 << 16, 1 << 16) == (0, 0)
    assert device_stream.packing((1 << 16) + 1, 1) == (1, 0)
    assert device_stream.packing(1 << 20, 1 << 20) == (4, 4)
    assert device_stream.packing(1 << 24, 1 << 24) == (8, 8)
    assert device_stream.packing((1 << 24) + 1, 1 << 24) is None
    assert [device_stream.words(10, p, False) for p in (None, (0, 0), (4, 4), (8, 8))] == [
        20, 10, 13, 15]
    assert device_stream.words(10, (4, 4), True) == 23


class _FrontierSum(VertexProgram):
    """A frontier program that sums: the vertices with an odd id send their value times
    the edge weight for three supersteps (a sum's order shows in its last bits)."""

    name = "frontier-sum"
    message, combiner, direction = "mul_weight", "sum", "out"
    uses_weights = True

    def init(self, ctx):
        ids = ctx.node_range()
        return {"v": 1.0 / (ids.to(torch.float64) + 3.0)}, ids % 2 == 1

    def send(self, ctx, state):
        return state["v"]

    def update(self, ctx, state, combined, received):
        state["v"] = torch.where(received, state["v"] + combined / 7.0, state["v"])
        return received & (ctx.node_range() % 2 == 1), {}

    def result(self, ctx, state):
        return state["v"]


#: builtin scalar programs whose passes are not all-active copy/sum ones
FRONTIER_PROGRAMS = {"bfs": lambda: BFS(0), "sssp": lambda: SSSP(0),
                     "wcc": lambda: WCC(), "frontier-sum": lambda: _FrontierSum()}


@pytest.mark.parametrize("key", ["directed-p3", "undirected-p3"])
@pytest.mark.parametrize("name", FRONTIER_PROGRAMS)
def test_frontier_pass_merged_same_answer(graphs, key, name, packed, device):
    """Every batch kept (``resident``): the pass merged, its answer the batch-by-batch
    pass's (all streamed, some kept): bit for bit on the CPU, within rounding on CUDA
    (atomic sums); only the edge counters differ (every edge of the merged pass is read)."""
    g = graphs[key].graph
    runs = {b: bsp.run(g, FRONTIER_PROGRAMS[name](), mode="out-of-core", backend="torch",
                       max_iters=3 if name == "frontier-sum" else 100, device_budget=v,
                       device=device)
            for b, v in BUDGETS.items()}
    for r in runs.values():
        np.testing.assert_allclose(r.values, runs["streamed"].values,
                                   rtol=0 if device == "cpu" else 1e-12)
    merged, streamed = runs["resident"].stats, runs["streamed"].stats
    assert [s.messages_sent for s in merged.supersteps] == [
        s.messages_sent for s in streamed.supersteps]
    assert {s.edges_scanned for s in merged.supersteps} == {
        g.num_edges() * (2 if name == "wcc" else 1)}


def _frontier_counts(graph, budget: int, program=None) -> tuple[DeviceWorkCounter, object]:
    """DeviceWorkCounter of a BFS edge phase with about half the vertices on the frontier
    after two such phases (the device emulated on the CPU), and the run's provider."""
    program = program or BFS(0)
    edges = open_edges(graph, graph.edge_set(None).name, program, torch.device("cpu"),
                       "torch", mode="out-of-core", device_budget=budget)
    n = graph.num_nodes()
    gen = torch.Generator().manual_seed(3)
    x, active = torch.rand(n, dtype=torch.float64, generator=gen), torch.zeros(n, dtype=bool)
    active[torch.randperm(n, generator=gen)[:n // 2]] = True
    try:
        edges.run(x, active, n // 2, None)
        edges.run(x, active, n // 2, None)
        kept = [t for m in edges._frontier.values() if m for t in (m.src, m.dst)]
        with DeviceWorkCounter(device_tensors=[x, active, *kept]) as c:
            edges.run(x, active, n // 2, None)
        return c, edges
    finally:
        buckets = edges.device_buckets
        edges.close()
        edges.device_buckets = buckets


def test_frontier_pass_ops(graphs, packed):
    """A merged frontier pass: the accumulators (2), the frontier's and the values' gathers
    (2), the spare target for senders off it (1), one scatter-reduce and one index fill,
    and the count of messages sent (a sum and its read: the one host synchronisation);
    nothing moved. Batch by batch, the same phase sends the edges of senders off the
    frontier to the spare target too (it compacted them out before: two synchronisations
    a batch): per batch its copy, the split, the ids widened and offset, the frontier's
    gather, the spare target, the count, the values' gather, one scatter-reduce and one
    index fill, no synchronisation; per pass the accumulators, a read of the frontier and
    one of the count."""
    g = graphs["directed-p3"].graph
    c, edges = _frontier_counts(g, BUDGETS["resident"])
    assert edges._frontier["out"] and not edges.device_buckets.streamed
    assert dict(c.ops) == {"full": 1, "zeros": 1, "index_select": 2, "where": 1, "sum": 1,
                           "scatter_reduce_": 1, "index_fill_": 1}
    assert c.syncs == 1 and [k for k, _ in c.records] == ["d2h"]
    c, edges = _frontier_counts(g, 0)
    batches = len(edges.device_buckets.streamed)
    assert edges._frontier["out"] is False
    assert c.syncs == 2 and c.transfers == batches + 2
    assert [k for k, _ in c.records][-1] == "d2h"
    # the count's running sum starts at the first batch's count
    assert c.launches == 2 + (11 + SPLIT_OPS[packed]) * batches - 1
    assert c.ops["where"] == c.ops["scatter_reduce_"] == c.ops["index_fill_"] == batches
    assert "nonzero" not in c.ops and "index_put_" not in c.ops


@pytest.mark.parametrize("why", ["budget", "streamed", "out-of-memory"])
def test_frontier_pass_not_merged(graphs, why, monkeypatch):
    """Not merged, the pass stays batch by batch: where the layout does not fit the
    budget beside the kept batches, where a batch of the pass is already streamed (an
    earlier pass over it did not fit), or where the device runs out of memory."""
    g = graphs["directed-p3"].graph
    kept = edge_bytes(False, True) * g.num_edges()
    budget = {"budget": kept, "streamed": BUDGETS["mixed"]}.get(why, BUDGETS["resident"])
    if why == "out-of-memory":
        def no_memory(*args):
            raise torch.OutOfMemoryError("no memory")
        monkeypatch.setattr(stream.MergedFrontier, "__init__", no_memory)
    program = BFS(0)
    if why == "streamed":  # the out-direction pass fills the budget; "in" then finds the rest
        c, edges = _frontier_counts(g, budget, program)
        program.direction = "in"
    c, edges = _frontier_counts(g, budget, program)
    assert edges._frontier[program.direction] is False
    assert c.ops["scatter_reduce_"] > 3
    ref = bsp.run(g, BFS(0)).values
    res = bsp.run(g, BFS(0), mode="out-of-core", backend="torch", device_budget=budget)
    np.testing.assert_array_equal(res.values, ref)


def test_merged_pagerank_superstep_ops(graphs, monkeypatch):
    """A whole PageRank superstep once its pass is merged (the CSR product, as on CUDA):
    9 ops (the product, a copy of the receivers, the update's 6, the next values sent)
    and 4 host reads (the change and the dangling mass the program votes and aggregates,
    the counts of receivers and of the frontier), none of them a data-dependent size: the
    dangling mass is a dot product, not a masked sum."""
    monkeypatch.setattr(device_stream, "MERGED_SPMV_DEVICES", ("cpu", "cuda"))
    monkeypatch.setattr(stream, "MERGED_SPMV_DEVICES", ("cpu", "cuda"))
    g = graphs["directed-p3"].graph
    counts = []
    for iters in (6, 12):
        with DeviceWorkCounter() as c, pytest.warns(ConvergenceWarning):
            bsp.pagerank(g, mode="out-of-core", backend="torch", device_budget=1 << 30,
                         max_iters=iters, tol=1e-300, weighted=False)
        counts.append(c)
    ops = counts[1].ops - counts[0].ops
    assert dict(ops) == {op: 6 for op in ("mv", "clone", "mul_", "add_", "sub", "abs_",
                                          "sum", "dot", "mul")}
    assert counts[1].syncs - counts[0].syncs == 4 * 6
    assert counts[1].sync_reasons - counts[0].sync_reasons == Counter(
        {"host read (__dlpack__)": 6 * 2, "scalar read": 6 * 2})


@pytest.mark.parametrize("key", ["directed-p3", "undirected-p3"])
def test_solver_layout_built_on_the_device_out_of_core(graphs, key, monkeypatch):
    """Out of core on a device of DEVICE_BUILDS (CUDA; here the CPU), where the build fits
    the budget: PageRank's lean supersteps and the direction-optimizing BFS run as in memory,
    their layouts sorted on the device from the buckets; the same answers bit for bit as in
    memory, the layout counted as kept. Below the budget, the engine's supersteps."""
    monkeypatch.setattr(device_stream, "DEVICE_BUILDS", ("cpu",))
    g = graphs[key].graph
    fits = device_stream.DEVICE_BUILD_BYTES * g.num_edges()
    for run in (lambda **kw: bsp.pagerank(g, tol=1e-12, weighted=False, **kw),
                lambda **kw: bsp.bfs(g, 0, **kw)):
        memory = run(mode="memory", backend="torch")
        built = run(mode="out-of-core", backend="torch", device_budget=fits)
        assert built.stats.method == memory.stats.method != "supersteps"
        np.testing.assert_array_equal(built.values, memory.values)
        assert built.stats.resident_bytes > 0 and built.stats.totals()["bytes_h2d"] == 0
        below = run(mode="out-of-core", backend="torch", device_budget=fits - 1)
        assert below.stats.method == "supersteps"
        np.testing.assert_allclose(below.values, memory.values, rtol=1e-9)


def test_solver_build_releases_each_batch(graphs, monkeypatch):
    """The out-of-core build reads each batch once and drops its pages from the resident
    set as it goes (the in-memory build keeps them)."""
    from graphsys.storage import pages

    monkeypatch.setattr(device_stream, "DEVICE_BUILDS", ("cpu",))
    released = []
    monkeypatch.setattr(pages, "release", lambda region, *arrays: released.append(region))
    g = graphs["directed-p3"].graph
    batches = sum(len(list(b.batches())) for b in g.buckets("row-major", None) if b.num_edges)
    bsp.bfs(g, 0, mode="memory", backend="torch")
    assert released == []
    bsp.bfs(g, 0, mode="out-of-core", backend="torch", device_budget=1 << 30)
    assert len(released) == batches > 3 and all(r != (0, 0) for r in released)


@pytest.mark.parametrize("cache", [True, False], ids=["host-cache", "no-cache"])
def test_page_advice_only_for_batches_read_from_the_files(graphs, monkeypatch, cache):
    """Paging on, every batch streamed (budget 0): the first superstep reads each batch
    from the mapped files, reading it ahead and releasing it; later supersteps copy every
    batch from the host cache and advise none of them. Without a host cache every
    superstep reads, and advises, every batch."""
    from graphsys.storage import pages

    monkeypatch.setattr(stream, "RESIDENT_EDGE_BYTES", 0)
    if not cache:
        monkeypatch.setattr(device_stream, "HOST_FRACTION", 0.0)
    calls = Counter()
    for name in ("will_need", "release"):
        monkeypatch.setattr(pages, name, lambda region, *a, name=name: calls.update([name]))
    g = graphs["directed-p3"].graph
    batches = sum(len(list(b.batches())) for b in g.buckets("row-major", None) if b.num_edges)
    with pytest.warns(ConvergenceWarning):
        res = bsp.pagerank(g, tol=1e-30, max_iters=4, mode="out-of-core", backend="torch",
                           device_budget=0)
    steps = len(res.stats.supersteps)
    assert steps == 4 and batches > 3
    reads = batches if cache else steps * batches
    # each batch read ahead and released where read; twice more in any case, outside the
    # supersteps: when its bucket is opened (its bounds check touched its pages) and when
    # the out-degrees are counted
    assert calls == {"will_need": reads, "release": reads + 2 * batches}, calls


@pytest.mark.parametrize("n", [0, 3, 5, 12])
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_words_uploaded_in_blocks(n, dtype, monkeypatch):
    """:func:`upload_words` through its two staging buffers, blocks of 5 words: the same
    values, int32, each block's pages released once staged where asked."""
    from graphsys.storage import pages

    monkeypatch.setattr(device_stream, "BLOCK_ROWS", 5)
    released = []
    monkeypatch.setattr(pages, "release", lambda region, *a: released.append(len(a[0])))
    arr = (np.arange(n, dtype=dtype) * 7) % 11
    out = device_stream.upload_words(arr, torch.device("cpu"), release=True)
    assert out.dtype == torch.int32 and out.tolist() == arr.tolist()
    assert released == [min(5, n - a) for a in range(0, n, 5)]
    monkeypatch.setattr(device_stream, "PARALLEL_STAGE_ROWS", 2)  # row ranges on threads
    assert device_stream.upload_words(arr, torch.device("cpu")).tolist() == arr.tolist()


@pytest.mark.parametrize("key", ["directed-p3", "undirected-p3"])
def test_stored_index_uploaded_not_sorted(graphs, indexed, key, monkeypatch):
    """Where the edge set stores its CSR and CSC indexes the device build uploads them (no
    edge list, no sort): the arrays of the sort from the buckets, bit for bit, the bytes
    of the index, and a smaller peak an edge."""
    monkeypatch.setattr(device_stream, "BLOCK_ROWS", 7)
    g, plain = indexed[key], graphs[key].graph
    es, n, m = g.edge_set(None).name, g.num_nodes(), g.num_edges()
    monkeypatch.setattr(device_stream, "upload_edges", None)  # never called
    got, nbytes = device_stream.device_adjacency(g, es, torch.device("cpu"), ("csr", "csc"))
    monkeypatch.undo()
    want, _ = device_stream.device_adjacency(plain, es, torch.device("cpu"), ("csr", "csc"))
    for (gp, gi), (wp, wi) in zip(got, want, strict=True):
        assert gp.dtype == gi.dtype == torch.int32
        assert torch.equal(gp, wp) and torch.equal(gi, wi)
    assert nbytes == 2 * 4 * (n + 1 + m)
    assert device_stream.build_bytes(g, es) == device_stream.DEVICE_INDEX_BUILD_BYTES
    assert device_stream.build_bytes(plain, es) == device_stream.DEVICE_BUILD_BYTES


def test_index_build_fits_a_smaller_budget(graphs, indexed, monkeypatch):
    """Out of core with a budget of the index build's bytes: the indexed graph is laid
    out on the device and solved as in memory; the same graph without indexes, whose build
    sorts, streams its supersteps. The answers agree bit for bit."""
    monkeypatch.setattr(device_stream, "DEVICE_BUILDS", ("cpu",))
    g, plain = indexed["directed-p3"], graphs["directed-p3"].graph
    budget = device_stream.DEVICE_INDEX_BUILD_BYTES * g.num_edges()
    for run in (lambda h, **kw: bsp.pagerank(h, tol=1e-12, weighted=False, **kw),
                lambda h, **kw: bsp.bfs(h, 0, **kw)):
        memory = run(g, mode="memory", backend="torch")
        built = run(g, mode="out-of-core", backend="torch", device_budget=budget)
        streamed = run(plain, mode="out-of-core", backend="torch", device_budget=budget)
        assert built.stats.method == memory.stats.method != "supersteps"
        assert streamed.stats.method == "supersteps"
        np.testing.assert_array_equal(built.values, memory.values)
        np.testing.assert_allclose(streamed.values, memory.values, rtol=1e-9)


def test_index_build_on_the_test_device(indexed, device, monkeypatch):
    """The stored indexes laid out on the test device (on CUDA through page-locked staging
    on a side stream): BFS and PageRank out of core give the in-memory answers."""
    monkeypatch.setattr(device_stream, "DEVICE_BUILDS", (torch.device(device).type,))
    g = indexed["directed-p3"]
    for run in (lambda **kw: bsp.pagerank(g, tol=1e-12, weighted=False, **kw),
                lambda **kw: bsp.bfs(g, 0, **kw)):
        memory = run(mode="memory", backend="torch", device=device)
        built = run(mode="out-of-core", backend="torch", device=device, device_budget=1 << 30)
        assert built.stats.method == memory.stats.method
        np.testing.assert_allclose(built.values, memory.values, rtol=1e-12)


def test_index_read_into_memory_keeps_its_pages(tmp_path, monkeypatch):
    """An index built before an append that grew the partitions is renumbered into memory
    when read: the out-of-core build uploads it without page advice (on heap memory the
    advice would drop its contents), and gives the in-memory answer."""
    import pyarrow as pa

    import graphsys
    from graphsys.storage import pages
    from graphsys.storage.adjacency_index import build_index
    from graphsys.storage.append import append_edges
    from graphsys.storage.csr import index_state
    from graphsys.storage.ingest import EdgeSource

    rng = np.random.default_rng(5)
    g = graphsys.from_numpy(rng.integers(0, 300, 3000), rng.integers(0, 300, 3000),
                            tmp_path / "g", partitions=2)
    build_index(g, ("csr", "csc"))
    append_edges(g.path, [EdgeSource(table=pa.table({"src": [500, 501], "dst": [501, 0]}),
                                     edge_set="day2")])
    g = graphsys.open_graph(g.path)
    assert index_state(g.manifest, "default", "csr") == "grown"
    monkeypatch.setattr(device_stream, "DEVICE_BUILDS", ("cpu",))
    released = []
    monkeypatch.setattr(pages, "release", lambda region, *a: released.extend(a))
    source = int(g.node_ids()[0])
    built = bsp.bfs(g, source, edge_set="default", mode="out-of-core", backend="torch",
                    device_budget=1 << 30)
    memory = bsp.bfs(g, source, edge_set="default", mode="memory", backend="torch")
    assert built.stats.method == memory.stats.method != "supersteps"
    np.testing.assert_array_equal(built.values, memory.values)
    heap = [a for k in ("csr", "csc") for a in (g.adjacency_index("default", k).indptr,
                                                g.adjacency_index("default", k).indices)]
    assert not any(np.shares_memory(a, h) for a in released if a is not None for h in heap)
