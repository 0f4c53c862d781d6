"""The torch-op neighbour sampler: the CPU sampler's blocks bit for bit (run on CPU
tensors), its random stream, the uniformity of its picks, its errors, and its host reads
per batch."""

from __future__ import annotations

import itertools
import shutil
import subprocess

import numpy as np
import pytest
import torch
from scipy import stats

from graphsys.errors import GraphsysError
from graphsys.sampling import NeighborSampler, from_coo
from graphsys.sampling import _kernels as K
from graphsys.sampling.device import (
    _DRAW_CODE,
    DeviceNeighborSampler,
    floyd_resolve,
    mix64,
    uva_view,
)

from .conftest import count_host_reads, random_graph_edges, write_homogeneous


def _graphs():
    """Adjacencies with isolated nodes, degrees below and above the fanouts, a hub,
    self-loops and repeated edges (merged by from_coo)."""
    rng = np.random.default_rng(7)
    out = {}
    n = 120
    s, d = rng.integers(0, 100, 900), rng.integers(0, 100, 900)   # 100..119 isolated
    out["random+isolated"] = from_coo(s, d, n, n)
    hub_s = np.concatenate([np.zeros(95, np.int64), rng.integers(0, 100, 300)])
    hub_d = np.concatenate([np.arange(5, 100), rng.integers(0, 100, 300)])
    out["hub"] = from_coo(np.concatenate([hub_s, hub_d]), np.concatenate([hub_d, hub_s]),
                          n, n)
    loops = np.arange(0, 100, 3)
    out["self-loops"] = from_coo(np.concatenate([s[:200], loops]),
                                 np.concatenate([d[:200], loops]), n, n)
    out["path"] = from_coo(np.arange(n - 1), np.arange(1, n), n, n)
    return out


GRAPHS = _graphs()
FANOUTS = [[2], [3, 5], [10, 2, 4], [-1, 3], [4, -1], [25, 25]]


def _same(a, b) -> bool:
    """Blocks equal in every tensor and in their edge groupings."""
    if a.num_dst_nodes != b.num_dst_nodes:
        return False
    tensors = [(a.src_nodes, b.src_nodes), (a.edge_src, b.edge_src),
               (a.edge_dst, b.edge_dst), (a.dst_offsets[0], b.dst_offsets[0]),
               (a.src_offsets[0], b.src_offsets[0]), (a.src_offsets[1], b.src_offsets[1])]
    if (a.src_degree is None) != (b.src_degree is None):      # only a full layer's has one
        return False
    if a.src_degree is not None:
        tensors.append((a.src_degree, b.src_degree))
    return all(x.dtype == y.dtype and torch.equal(x, y) for x, y in tensors) and \
        b.dst_offsets[1] is None


@pytest.mark.parametrize("name", sorted(GRAPHS))
@pytest.mark.parametrize("replace", [False, True])
@pytest.mark.parametrize("index_dtype", [torch.int32, torch.int64])
def test_blocks_identical_to_cpu_sampler(name, replace, index_dtype):
    adj = GRAPHS[name]
    rng = np.random.default_rng(3)
    for fanouts in FANOUTS:
        cpu = NeighborSampler(adj, fanouts, replace=replace)
        dev = DeviceNeighborSampler(adj, fanouts, replace=replace, device="cpu",
                                    index_dtype=index_dtype)
        for rng_seed in (0, 1, 2**62 + 12345):
            seeds = rng.choice(adj.num_rows, int(rng.integers(1, 40)), replace=False)
            want = cpu.sample_blocks(seeds, rng_seed)
            for given in (seeds, torch.from_numpy(seeds), seeds.tolist()):
                got = dev.sample_blocks(given, rng_seed)
                assert len(got) == len(want)
                assert all(_same(a, b) for a, b in zip(want, got)), (fanouts, rng_seed)


def test_stored_graph_and_from_sampler(tmp_path):
    g = write_homogeneous(tmp_path, random_graph_edges(), 60)
    cpu = NeighborSampler(g, [4, 3])
    for dev in (DeviceNeighborSampler(g, [4, 3], device="cpu"),
                DeviceNeighborSampler(cpu, device="cpu")):
        assert dev.entity_type == cpu.entity_type and dev.num_nodes == 60
        want, got = cpu.sample_blocks([1, 2, 30], 9), dev.sample_blocks([1, 2, 30], 9)
        assert all(_same(a, b) for a, b in zip(want, got))
    assert "csr=cpu int32" in repr(dev)


def test_stream_bits_match_the_numba_kernels():
    rng = np.random.default_rng(0)
    words = np.concatenate([rng.integers(0, 2**63, 500, dtype=np.uint64) * np.uint64(2)
                            + rng.integers(0, 2, 500, dtype=np.uint64),
                            np.array([0, 1, 2**63 - 1, 2**63, 2**64 - 1], np.uint64)])
    got = mix64(torch.from_numpy(words.view(np.int64))).numpy().view(np.uint64)
    assert (got == K._mix(words)).all()


@pytest.mark.parametrize("k", [1, 2, 3, 4, 5, 8, 15, 16, 17, 33])
def test_floyd_by_pointer_doubling_is_the_sequential_loop(k):
    """Every draw of Floyd's steps (degrees just above k: many collisions, long chains)
    resolved as the CPU kernel's loop resolves it, step by step."""
    rng = np.random.default_rng(k)
    deg = rng.integers(k + 1, 2 * k + 2, 3000)
    steps = torch.arange(k)
    top = torch.from_numpy(deg).unsqueeze(1) - k + steps
    r = (torch.from_numpy(rng.random((len(deg), k))) * (top + 1)).long()
    got = floyd_resolve(r, top, steps.unsqueeze(1) > steps, steps)
    for row, t, g in zip(r.tolist(), top.tolist(), got.tolist()):
        chosen = []
        for c in range(k):
            chosen.append(t[c] if row[c] in chosen else row[c])
        assert g == chosen


def test_errors_match_cpu_sampler():
    adj = GRAPHS["random+isolated"]
    dev = DeviceNeighborSampler(adj, [3, 3], device="cpu")
    for seeds in ([1, 2, 1], torch.tensor([5, 5])):
        with pytest.raises(GraphsysError, match="unique"):
            dev.sample_blocks(seeds)
    # num_nodes itself, on the device, read the padding row and was called a repeat
    for seeds in ([1, 500], torch.tensor([3, -1]), torch.tensor([adj.num_rows]),
                  torch.tensor([4, adj.num_rows], dtype=torch.int32)):
        with pytest.raises(GraphsysError, match="outside the graph"):
            dev.sample_blocks(seeds)
    with pytest.raises(GraphsysError, match="integers"):
        dev.sample_blocks(torch.tensor([1.0]))
    with pytest.raises(GraphsysError, match="fanouts"):
        DeviceNeighborSampler(adj, [0], device="cpu")
    with pytest.raises(GraphsysError, match="index_dtype"):
        DeviceNeighborSampler(adj, [2], device="cpu", index_dtype=torch.float32)
    # csr_bytes counted any other dtype as 8 bytes an edge
    with pytest.raises(GraphsysError, match="index_dtype"):
        dev.csr_bytes(torch.float32)
    assert dev.csr_bytes(torch.int64) - dev.csr_bytes(torch.int32) == 4 * (adj.nnz + 1)
    if not torch.cuda.is_available():
        with pytest.raises(GraphsysError, match="CUDA"):
            DeviceNeighborSampler(adj, [2], pin_memory=True)


def test_a_layer_too_large_for_memory_is_refused_in_one_line():
    # a fanout of 10**12 with replacement built its per-step constants (40 bytes a step) and
    # the process was killed for memory; a batch whose padded layer cannot fit the device
    # is refused before it is drawn, as the CPU sampler refuses it
    adj = from_coo(np.array([0, 1, 1]), np.array([1, 0, 2]), 3, 3)
    with pytest.raises(GraphsysError, match="^fanout 1000000000000 draws .* of available RAM"):
        DeviceNeighborSampler(adj, [10**12], replace=True, device="cpu")
    wide = from_coo(np.arange(4000), np.arange(4000) // 2, 4000, 4000)
    dev = DeviceNeighborSampler(wide, [2, 2**22], replace=True, device="cpu")
    with pytest.raises(GraphsysError, match=f"^fanout {2**22} draws 16777216000 neighbours"):
        dev.sample_blocks(np.arange(4000))
    # without replacement a layer draws at most the largest degree: nothing is refused
    assert DeviceNeighborSampler(adj, [10**12], device="cpu").sample_blocks([0, 1])


def test_empty_batch_and_edgeless_graph():
    empty = from_coo(np.zeros(0, np.int64), np.zeros(0, np.int64), 5, 5)
    for adj, seeds in ((empty, [0, 3]), (GRAPHS["hub"], [])):
        want = NeighborSampler(adj, [2, -1]).sample_blocks(seeds, 4)
        got = DeviceNeighborSampler(adj, [2, -1], device="cpu").sample_blocks(seeds, 4)
        assert all(_same(a, b) for a, b in zip(want, got))


def test_seeds_of_a_graph_without_nodes():
    empty = from_coo(np.zeros(0, np.int64), np.zeros(0, np.int64), 0, 0)
    dev = DeviceNeighborSampler(empty, [2, 2], device="cpu")
    assert [b.num_edges for b in dev.sample_blocks(torch.zeros(0, dtype=torch.int64))] == [0, 0]
    for seeds in ([0], torch.tensor([0])):
        with pytest.raises(GraphsysError, match="outside the graph .it has no nodes"):
            dev.sample_blocks(seeds)


def test_fanout_above_every_degree_takes_whole_rows():
    """Without replacement a fanout above the largest degree keeps every row whole, as
    the CPU sampler does; it once sized a (k, k) mask and (D, k) buffers by the fanout
    (10**5: 10 GB, 2**62: refused by NumPy)."""
    adj = GRAPHS["hub"]
    seeds = np.array([0, 3, 7, 110])
    for fanouts in ([10**5], [3, 2**62], [-1, 10**9]):
        want = NeighborSampler(adj, fanouts).sample_blocks(seeds, 8)
        got = DeviceNeighborSampler(adj, fanouts, device="cpu").sample_blocks(seeds, 8)
        assert all(_same(a, b) for a, b in zip(want, got))
        assert got[-1].num_edges == int(adj.degrees()[seeds].sum())


def _star_picks(replace: bool, rng_seeds) -> np.ndarray:
    """Picks of 2 among the 6 neighbours 0..5 of each of the nodes 6..2005, over
    ``rng_seeds``: rows of neighbour ids."""
    leaves = np.arange(6, 2006)
    src = np.repeat(leaves, 6)
    adj = from_coo(src, np.tile(np.arange(6), len(leaves)), 2006, 2006)
    dev = DeviceNeighborSampler(adj, [2], replace=replace, device="cpu")
    rows = []
    for s in rng_seeds:
        b = dev.sample_blocks(torch.from_numpy(leaves), s)[0]
        rows.append(b.src_nodes[b.edge_src].view(-1, 2).numpy())
    return np.concatenate(rows)


def test_uniform_subsets_without_replacement():
    picks = _star_picks(False, range(5))
    assert (picks[:, 0] != picks[:, 1]).all()
    pairs = {p: k for k, p in enumerate(itertools.combinations(range(6), 2))}
    counts = np.bincount([pairs[tuple(sorted(r))] for r in picks.tolist()], minlength=15)
    assert stats.chisquare(counts).pvalue > 1e-3          # 10,000 draws over 15 subsets


def test_uniform_draws_with_replacement():
    picks = _star_picks(True, range(5))
    counts = np.bincount(picks[:, 0] * 6 + picks[:, 1], minlength=36)   # ordered pairs
    assert stats.chisquare(counts).pvalue > 1e-3
    assert (picks[:, 0] == picks[:, 1]).any()


@pytest.mark.parametrize("fanouts,reads", [([15, 10], 1), ([5, 5, 5], 1), ([-1, 4], 2)])
def test_one_host_read_per_batch(fanouts, reads):
    """Seeds already on the sampling device: one read of the blocks' sizes per batch
    (plus one per fanout -1 layer), no boolean masks, no data-dependent shapes."""
    dev = DeviceNeighborSampler(GRAPHS["hub"], fanouts, device="cpu")
    seeds = torch.arange(0, 100, 3)
    dev.sample_blocks(seeds, 0)                       # warm
    with count_host_reads() as counts:
        for i in range(3):
            dev.sample_blocks(seeds, i)
    assert counts["n"] == 3 * reads


@pytest.mark.parametrize("replace,csr", [(False, "device"), (True, "device"), (False, "uva")])
def test_blocks_identical_on_the_test_device(device, replace, csr):
    """On the test device (CUDA in the GPU check, the picks fused into one kernel a layer;
    also with the neighbour ids read through UVA): the CPU sampler's blocks, seeds given
    on the device."""
    adj = GRAPHS["hub"]
    cpu = NeighborSampler(adj, [6, 4], replace=replace)
    dev = DeviceNeighborSampler(adj, [6, 4], replace=replace, device=device, csr=csr)
    seeds = np.arange(0, 120, 5)
    for rng_seed in (0, 3):
        got = dev.sample_blocks(torch.from_numpy(seeds).to(device), rng_seed)
        assert all(b.device.type == torch.device(device).type for b in got)   # cuda:0
        want = cpu.sample_blocks(seeds, rng_seed)
        assert all(_same(a, b.to("cpu")) for a, b in zip(want, got))


def test_cuda_graph_replays_give_the_same_blocks(device):
    """Batches replayed from a recorded graph (CUDA; elsewhere the draw rerun on the
    graph's buffers): the CPU sampler's blocks, for two batch sizes in turn, and a batch's
    blocks left intact by the replays after it."""
    adj = GRAPHS["hub"]
    cpu = NeighborSampler(adj, [6, 4])
    dev = DeviceNeighborSampler(adj, [6, 4], device=device, cuda_graphs=True)
    rng = np.random.default_rng(5)
    batches = [rng.choice(adj.num_rows, size, replace=False) for size in (30, 30, 7, 30, 7)]
    got = [dev.sample_blocks(s, i) for i, s in enumerate(batches)]
    assert sorted(dev._graphs) == [2 + 7, 2 + 30]          # keys and seeds, per size
    for i, (seeds, blocks) in enumerate(zip(batches, got)):
        want = cpu.sample_blocks(seeds, i)
        assert all(_same(a, b.to("cpu")) for a, b in zip(want, blocks))
    with pytest.raises(GraphsysError, match="unique"):
        dev.sample_blocks([1, 2, 1] + list(range(3, 30)), 0)
    with pytest.raises(GraphsysError, match="cuda_graphs"):
        DeviceNeighborSampler(adj, [-1, 3], device=device, cuda_graphs=True)


@pytest.mark.parametrize("csr", ["staged", "uva"])
def test_csr_read_from_host_memory_gives_the_same_blocks(csr):
    """The neighbour ids left in host memory (gathered there and staged to the device, or
    read through UVA, which off CUDA reads them where they are): the CPU sampler's
    blocks, every fanout kind, with and without replacement."""
    adj = GRAPHS["hub"]
    rng = np.random.default_rng(8)
    for fanouts, replace in itertools.product(FANOUTS, (False, True)):
        cpu = NeighborSampler(adj, fanouts, replace=replace)
        dev = DeviceNeighborSampler(adj, fanouts, replace=replace, device="cpu", csr=csr)
        assert dev.csr == csr and f"csr={csr} cpu" in repr(dev)
        seeds = rng.choice(adj.num_rows, 25, replace=False)
        for rng_seed in (0, 5):
            want = cpu.sample_blocks(seeds, rng_seed)
            got = dev.sample_blocks(torch.from_numpy(seeds), rng_seed)
            assert all(_same(a, b) for a, b in zip(want, got)), (fanouts, replace)


def test_csr_placement_follows_the_memory_budget():
    adj = GRAPHS["random+isolated"]
    need = DeviceNeighborSampler(adj, [4, 3], device="cpu").csr_bytes()
    assert need == 24 * (adj.num_rows + 1) + 4 * (adj.nnz + 1)
    fits = DeviceNeighborSampler(adj, [4, 3], device="cpu", device_budget=need)
    over = DeviceNeighborSampler(adj, [4, 3], device="cpu", device_budget=need - 1)
    assert (fits.csr, over.csr) == ("device", "staged")
    # the BSP engine's name of a device memory budget; the former one warns for a release
    with pytest.warns(DeprecationWarning, match="use device_budget"):
        old = DeviceNeighborSampler(adj, [4, 3], device="cpu", device_memory_budget=need - 1)
    assert old.csr == "staged"
    with pytest.raises(GraphsysError, match="^device_memory_budget is the former name"):
        DeviceNeighborSampler(adj, [4, 3], device="cpu", device_budget=1,
                              device_memory_budget=1)
    assert uva_view(torch.arange(3), torch.device("cpu")) is None
    with pytest.raises(GraphsysError, match="csr must be"):
        DeviceNeighborSampler(adj, [4, 3], device="cpu", csr="disk")
    with pytest.raises(GraphsysError, match="cuda_graphs"):
        DeviceNeighborSampler(adj, [4, 3], device="cpu", csr="staged", cuda_graphs=True)
    with pytest.raises(GraphsysError, match="fused needs CUDA"):
        DeviceNeighborSampler(adj, [4, 3], device="cpu", fused=True)
    assert not DeviceNeighborSampler(adj, [4, 3], device="cpu").fused


def _eager_picks(dev, info, key, k):
    """The torch operators' picks (positions, kept as 0/1) of ``dev``'s fanout ``k``."""
    eid, mask = dev._picks(info, key, k)
    return eid, mask.long()


def _check_batch(k):
    """Table rows (first position, degree, first stream word) with degrees around ``k``,
    and a stream key."""
    gen = torch.Generator().manual_seed(k)
    deg = torch.cat([torch.tensor([0, 1, k - 1, k, k + 1, 2 * k, 10**6, 2**40]),
                     torch.randint(0, 3 * k + 3, (200,), generator=gen)])
    return torch.stack([torch.randint(0, 2**40, deg.shape, generator=gen), deg,
                        torch.randint(-2**63, 2**63 - 1, deg.shape, generator=gen)], 1), \
        int(torch.randint(-2**63, 2**63 - 1, (), generator=gen))


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs a C++ compiler")
@pytest.mark.parametrize("k,replace", [(1, False), (2, False), (10, False), (15, False),
                                       (17, False), (10, True)])
def test_fused_kernel_source_draws_the_operators_picks(tmp_path, k, replace):
    """The fused kernel's source (compiled by jiterator on CUDA), compiled here as C++
    for int64: the positions and kept flags of the torch operators, bit for bit."""
    from torch.cuda.jiterator import _CodeParser

    adj = GRAPHS["hub"]
    dev = DeviceNeighborSampler(adj, [k], replace=replace, device="cpu")
    code = (_DRAW_CODE.replace("@K@", str(k)).replace("@REPL@", str(int(replace)))
            .replace("@PAD@", str(adj.nnz)))
    assert _CodeParser(code).function_name == "gs_neighbour_draw"
    main = code + """
#include <cstdio>
int main() {
  long long w0, key, deg, lo, step, pos, kept;
  while (std::scanf("%lld %lld %lld %lld %lld", &w0, &key, &deg, &lo, &step) == 5) {
    gs_neighbour_draw<long long>(w0, key, deg, lo, step, pos, kept);
    std::printf("%lld %lld\\n", pos, kept);
  }
}
"""
    (tmp_path / "draw.cpp").write_text(main)
    subprocess.run(["g++", "-O2", "-o", str(tmp_path / "draw"), str(tmp_path / "draw.cpp")],
                   check=True)
    info, key = _check_batch(k)
    rows = [f"{w} {key} {d} {lo} {c}" for lo, d, w in info.tolist() for c in range(k)]
    out = subprocess.run([str(tmp_path / "draw")], input="\n".join(rows), text=True,
                         capture_output=True, check=True).stdout.split()
    got = torch.tensor([int(v) for v in out]).view(len(info), k, 2)
    eid, kept = _eager_picks(dev, info, key, k)
    assert torch.equal(got[..., 0], eid) and torch.equal(got[..., 1], kept)


def test_loader_records_graphs_before_its_threads(device):
    """NodeLoader records the graphs of its batch sizes on the calling thread before its
    sampling threads start (a capture beside a training step's dropout breaks torch's CUDA
    generator); a sampling thread draws an unrecorded size without recording one."""
    import threading

    from graphsys.gnn import NodeLoader

    adj = GRAPHS["hub"]
    dev = DeviceNeighborSampler(adj, [6, 4], device=device, cuda_graphs=True)
    feats = np.ones((adj.num_rows, 3), np.float32)
    labels = torch.zeros(adj.num_rows, dtype=torch.int64)
    loader = NodeLoader(None, dev, np.arange(50), batch_size=16, features=feats,
                        labels=labels, device=device, num_workers=1)
    got = [b.blocks for b in loader]
    assert sorted(dev._graphs) == [2 + 2, 2 + 16]          # keys and seeds, per size
    plain = NodeLoader(None, DeviceNeighborSampler(adj, [6, 4], device=device), np.arange(50),
                       batch_size=16, features=feats, labels=labels, device=device)
    for want, have in zip(plain, got):
        assert all(_same(a.to("cpu"), b.to("cpu")) for a, b in zip(want.blocks, have))
    worker = threading.Thread(target=dev.sample_blocks, args=([1, 2, 3], 0))
    worker.start()
    worker.join()
    assert sorted(dev._graphs) == [2 + 2, 2 + 16]


def test_a_replay_is_copied_out_once(device):
    """A replayed batch's outputs are joined by its graph and copied out in one copy
    (a clone each was nine device copies a GraphSAGE batch): every block's tensors are
    views of one buffer."""
    if device == "lazy":
        pytest.skip("torch's lazy tensors have no data pointers")
    adj = GRAPHS["hub"]
    dev = DeviceNeighborSampler(adj, [6, 4], device=device, cuda_graphs=True)
    seeds = np.random.default_rng(6).choice(adj.num_rows, 30, replace=False)
    dev.sample_blocks(seeds, 0)
    blocks = dev.sample_blocks(seeds, 1)
    tensors = [t for b in blocks for t in (b.src_nodes, b.edge_src, b.edge_dst,
                                           b.dst_offsets[0])]
    assert len({t.untyped_storage().data_ptr() for t in tensors}) == 1
    want = NeighborSampler(adj, [6, 4]).sample_blocks(seeds, 1)
    assert all(_same(a, b.to("cpu")) for a, b in zip(want, blocks))


def test_recorded_graphs_keep_the_ranges_they_read(device):
    """A graph reads the kept ranges' memory as it was when recorded: recording a larger
    batch later grows them into new tensors, and the earlier entry still holds the old
    ones (freed, their memory would be reused under the replay)."""
    if device == "lazy":
        pytest.skip("torch's lazy tensors have no data pointers")
    rng = np.random.default_rng(3)
    adj = from_coo(rng.integers(0, 5000, 40000), rng.integers(0, 5000, 40000), 5000, 5000)
    dev = DeviceNeighborSampler(adj, [6, 4], device=device, cuda_graphs=True)
    dev.record_graphs([7])
    small = {t.data_ptr() for t in dev._ranges.values()}
    dev.record_graphs([400])
    assert {t.data_ptr() for t in dev._ranges.values()} != small      # grown
    assert {t.data_ptr() for t in dev._graphs[2 + 7][4]} == small
    cpu = NeighborSampler(adj, [6, 4])
    seeds = np.arange(0, 70, 10)
    assert all(_same(a, b.to("cpu")) for a, b in zip(cpu.sample_blocks(seeds, 2),
                                                     dev.sample_blocks(seeds, 2)))
